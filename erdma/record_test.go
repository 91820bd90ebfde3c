package erdma_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replay records h, writes the archive to a file, opens it and reads it.
func replay(t *testing.T, h erdma.Host, opt erdma.RecordOptions) (*erdma.Inventory, *erdma.Inventory, string) {
	t.Helper()
	var buf bytes.Buffer
	orig, err := erdma.Record(context.Background(), h, &buf, opt)
	require.NoError(t, err)
	archive := filepath.Join(t.TempDir(), "host.tar.gz")
	require.NoError(t, os.WriteFile(archive, buf.Bytes(), 0o644))
	rh, closer, err := erdma.OpenHost(t.Context(), archive)
	require.NoError(t, err)
	t.Cleanup(func() { closer.Close() })
	got, err := erdma.ReadInventory(context.Background(), rh, opt.Inventory)
	require.NoError(t, err)
	dir := rh.Root()
	require.NoError(t, closer.Close())
	require.NoError(t, closer.Close(), "Close is idempotent")
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "Close removes the unpacked tree")
	return orig, got, archive
}

// TestRecordReplay: every fixture recorded and replayed reads the same.
func TestRecordReplay(t *testing.T) {
	for _, s := range hostgen.Fixtures() {
		t.Run(s.Name, func(t *testing.T) {
			orig, got, _ := replay(t, erdma.RecordedHost(fixture.Host(t, s.Name)), erdma.RecordOptions{})
			orig.Root, got.Root = "", ""
			assert.Equal(t, orig, got)
		})
	}
}

// TestRecordCapturesOnlyWhatIsRead: the archive holds the read files and
// symlinks, not the whole tree (no sys_image_guid, lid, initstate, README).
func TestRecordCapturesOnlyWhatIsRead(t *testing.T) {
	var buf bytes.Buffer
	_, err := erdma.Record(context.Background(), erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy")), &buf, erdma.RecordOptions{})
	require.NoError(t, err)
	entries := untar(t, buf.Bytes())
	assert.Equal(t, "../../devices/pci0000:00/0000:00:05.0/infiniband/erdma_0", entries["sys/class/infiniband/erdma_0"].Linkname)
	assert.Equal(t, byte(tar.TypeSymlink), entries["sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/device"].Typeflag)
	assert.Equal(t, byte(tar.TypeSymlink), entries["sys/devices/pci0000:00/0000:00:05.0/driver"].Typeflag)
	assert.Contains(t, entries, "sys/devices/pci0000:80/0000:80:05.0/infiniband/erdma_1/ports/1/hw_counters/hw_tx_bytes_cnt")
	assert.Contains(t, entries, "sys/devices/pci0000:80/0000:80:05.0/infiniband/erdma_1/ports/1/gids/15")
	assert.Contains(t, entries, "dev/infiniband/uverbs1")
	assert.Contains(t, entries, "sys/module/erdma/parameters/compat_mode")
	assert.Contains(t, entries, erdma.RecordedNetdevsFile)
	assert.Contains(t, entries, erdma.RecordedInstanceFile)
	assert.Contains(t, entries, erdma.RecordingFile)
	for _, absent := range []string{"README.md", "erdmakit/hostgen-files.txt", "sys/module/erdma/initstate",
		"sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/sys_image_guid"} {
		assert.NotContains(t, entries, absent)
	}
}

func untar(t *testing.T, b []byte) map[string]*tar.Header {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	m := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return m
		}
		require.NoError(t, err)
		m[strings.TrimSuffix(h.Name, "/")] = h
	}
}

// TestRecordRedact: redacted replay keeps pairing and GID choice while no
// MAC, IPv4, GUID, host name or instance id of the original survives.
func TestRecordRedact(t *testing.T) {
	orig, got, archive := replay(t, erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy")), erdma.RecordOptions{Redact: true})
	require.Len(t, got.Devices, 2)
	for i, d := range got.Devices {
		o := orig.Devices[i]
		assert.Equal(t, o.Netdev, d.Netdev)
		assert.Equal(t, o.Ports[0].RecommendedGIDIndex, d.Ports[0].RecommendedGIDIndex)
		assert.NotEqual(t, o.NodeGUID, d.NodeGUID)
		// node_guid is still the EUI-64 of the (redacted) netdev MAC.
		g, err := gid.ParseGUID(d.NodeGUID)
		require.NoError(t, err)
		mac, ok := g.MAC()
		require.True(t, ok)
		assert.Equal(t, netdev(got, d.Netdev).MAC, mac.String())
	}
	assert.Equal(t, "host-1", got.Hostname)
	raw, err := os.ReadFile(archive)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	for _, secret := range []string{"2f:37:75", "2f:37:76", "192.168.10.11", "3eff:fe2f:3775", "c0a8:0a0b", "gpu-node-a", "i-bp1erdmakit"} {
		assert.NotContains(t, string(plain), secret)
	}
	// With the live-pairing rule alone (no gid_attrs), the redacted GUID
	// still finds its netdev: iwarp-mode pairs by MAC.
	_, giw, _ := replay(t, erdma.RecordedHost(fixture.Host(t, "iwarp-mode")), erdma.RecordOptions{Redact: true})
	assert.Equal(t, "eth1", giw.Devices[0].Netdev)
	assert.Equal(t, "mac", giw.Devices[0].NetdevBy)
}

func TestRedactorConsistent(t *testing.T) {
	r := erdma.NewRedactor()
	a := r.MAC("00:16:3e:2f:37:75")
	assert.Equal(t, a, r.MAC("00:16:3E:2F:37:75"), "same MAC, same output")
	assert.NotEqual(t, a, r.MAC("00:16:3e:2f:37:76"))
	assert.Equal(t, "00:16:3e:00:00:01", a)
	assert.Equal(t, "0216:3eff:fe00:0001", r.GUID("0216:3eff:fe2f:3775"))
	ip := r.IPv4("192.168.10.11/24")
	assert.Equal(t, "10.0.1.11/24", ip)
	assert.Equal(t, "10.0.1.12", r.IPv4("192.168.10.12"), "same /24 stays together")
	assert.Equal(t, "0000:0000:0000:0000:0000:ffff:0a00:010b", r.GID("0000:0000:0000:0000:0000:ffff:c0a8:0a0b"))
	assert.Equal(t, "fe80:0000:0000:0000:0216:3eff:fe00:0001", r.GID("fe80:0000:0000:0000:0216:3eff:fe2f:3775"))
	assert.Equal(t, "garbage", r.GID("garbage"))
	assert.Equal(t, "host-1", r.Hostname("gpu-node-a"))
	assert.Equal(t, "host-1", r.Hostname("gpu-node-a"))
}

// TestRecordLiveHost records this machine (with or without RDMA devices) and
// replays it.
func TestRecordLiveHost(t *testing.T) {
	opt := erdma.RecordOptions{Inventory: erdma.InventoryOptions{SkipTools: true}}
	orig, got, _ := replay(t, erdma.LiveHost(), opt)
	assert.Equal(t, orig.Devices, got.Devices)
	assert.Equal(t, orig.Modules, got.Modules)
	assert.Equal(t, orig.Memlock, got.Memlock)
	assert.Equal(t, orig.Kernel, got.Kernel)
	require.Equal(t, len(orig.Netdevs), len(got.Netdevs))
	for i := range orig.Netdevs {
		assert.Equal(t, orig.Netdevs[i].Name, got.Netdevs[i].Name)
		assert.Equal(t, orig.Netdevs[i].MTU, got.Netdevs[i].MTU)
	}
}

func writeTarGz(t *testing.T, hdrs []*tar.Header, bodies []string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(bodies[i]))
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(bodies[i]))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "x.tar.gz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

// TestOpenHostRejectsHostileArchives: no writes outside the temp dir.
func TestOpenHostRejectsHostileArchives(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name   string
		hdrs   []*tar.Header
		bodies []string
		want   string
	}{
		{"dotdot", []*tar.Header{{Typeflag: tar.TypeReg, Name: "../evil", Mode: 0o644}}, []string{"x"}, "leaves the archive root"},
		{"absolute", []*tar.Header{{Typeflag: tar.TypeReg, Name: "/etc/evil", Mode: 0o644}}, []string{"x"}, "leaves the archive root"},
		{"through symlink", []*tar.Header{
			{Typeflag: tar.TypeSymlink, Name: "sys", Linkname: outside},
			{Typeflag: tar.TypeReg, Name: "sys/evil", Mode: 0o644},
		}, []string{"", "x"}, "leaves the archive root"},
		{"symlink climbing out", []*tar.Header{
			{Typeflag: tar.TypeSymlink, Name: "sys/class/infiniband/x", Linkname: "../../../../etc"},
		}, []string{""}, "leaves the archive root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTarGz(t, tc.hdrs, tc.bodies)
			_, c, err := erdma.OpenHost(t.Context(), p)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorIs(t, err, erdma.ErrMalformed)
			assert.NoError(t, c.Close())
			_, err = os.Stat(filepath.Join(outside, "evil"))
			assert.ErrorIs(t, err, os.ErrNotExist)
		})
	}
	garbage := filepath.Join(t.TempDir(), "g.tar.gz")
	require.NoError(t, os.WriteFile(garbage, []byte("not gzip at all"), 0o644))
	_, _, err := erdma.OpenHost(t.Context(), garbage)
	assert.ErrorIs(t, err, erdma.ErrMalformed)
}

// TestReplayBuildVM replays the redacted recording of the build machine (a
// Debian VM without RDMA), made with `erdmakit record --redact`.
func TestReplayBuildVM(t *testing.T) {
	p := filepath.Join("..", "testdata", "recorded", "build-vm-no-rdma.tar.gz")
	h, c, err := erdma.OpenHost(t.Context(), p)
	require.NoError(t, err)
	defer c.Close()
	inv, err := erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{})
	require.NoError(t, err)
	assert.Equal(t, p, inv.Root)
	assert.Empty(t, inv.Devices)
	assert.Empty(t, inv.Errors)
	assert.Equal(t, "host-1", inv.Hostname)
	assert.NotEmpty(t, inv.Kernel)
	require.NotEmpty(t, inv.Netdevs)
	assert.Equal(t, "10.0.1.2/24", netdev(inv, "eth0").IPv4[0])
	assert.False(t, module(inv, "erdma").Loaded)
	require.NotNil(t, inv.Memlock)
	assert.Equal(t, uint64(8<<20), inv.Memlock.Soft)
}

func ExampleRecord() {
	// Record a host (here a fixture; erdma.LiveHost() for this machine),
	// redacted, and replay the archive.
	src, srcCloser, err := erdma.OpenHost(context.Background(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srcCloser.Close()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "host.tar.gz")
	f, _ := os.Create(archive)
	_, err = erdma.Record(context.Background(), src, f, erdma.RecordOptions{Redact: true})
	f.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	h, closer, _ := erdma.OpenHost(context.Background(), archive)
	defer closer.Close()
	inv, _ := erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{SkipTools: true})
	for _, d := range inv.Devices {
		fmt.Println(d.Name, d.NodeGUID, d.Netdev, d.Ports[0].RecommendedGIDIndex)
	}
	// Output:
	// erdma_0 0216:3eff:fe00:0002 eth1 1
	// erdma_1 0216:3eff:fe00:0003 eth2 2
}

// TestRecordReadersAndPaths: other packages' reads through the Host, and
// extra paths, land in the recording.
func TestRecordReadersAndPaths(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, hostgen.CopyTree(fixture.Host(t, "gn8is-single"), dir))
	gpu := filepath.Join(dir, "sys/devices/pci0000:16/0000:16:00.0")
	require.NoError(t, os.MkdirAll(gpu, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gpu, "vendor"), []byte("0x10de\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(gpu, "class"), []byte("0x030200\n"), 0o644))
	require.NoError(t, os.Symlink("../../../devices/pci0000:16/0000:16:00.0", filepath.Join(dir, "sys/bus/pci/devices/0000:16:00.0")))
	var buf bytes.Buffer
	_, err := erdma.Record(context.Background(), erdma.RecordedHost(dir), &buf, erdma.RecordOptions{
		Readers: []func(context.Context, erdma.Host) error{func(_ context.Context, h erdma.Host) error {
			_, err := h.ReadFile(t.Context(), "sys/bus/pci/devices/0000:16:00.0/vendor")
			return err
		}},
		Paths: []string{"/sys/bus/pci/devices/0000:16:00.0"},
		Files: map[string][]byte{"erdmakit/nvml.json": []byte("{}\n")},
	})
	require.NoError(t, err)
	e := untar(t, buf.Bytes())
	assert.Equal(t, "../../../devices/pci0000:16/0000:16:00.0", e["sys/bus/pci/devices/0000:16:00.0"].Linkname)
	assert.Contains(t, e, "sys/devices/pci0000:16/0000:16:00.0/vendor")
	assert.Contains(t, e, "sys/devices/pci0000:16/0000:16:00.0/class")
	assert.Contains(t, e, "erdmakit/nvml.json")
}

// FuzzOpenHostArchive: any bytes given as a recording open cleanly or fail
// with an error; what opens reads without panicking, and Close cleans up.
func FuzzOpenHostArchive(f *testing.F) {
	var buf bytes.Buffer
	if _, err := erdma.Record(context.Background(), erdma.RecordedHost(fixture.Host(f, "gn8is-single")), &buf,
		erdma.RecordOptions{Inventory: erdma.InventoryOptions{SkipTools: true}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	if b, err := os.ReadFile(filepath.Join("..", "testdata", "recorded", "build-vm-no-rdma.tar.gz")); err == nil {
		f.Add(b)
	}
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "x.tar.gz")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		h, c, err := erdma.OpenHost(context.Background(), p)
		if err == nil {
			_, err = erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{})
			assert.NoError(t, err)
			dir := h.Root()
			require.NoError(t, c.Close())
			_, err = os.Stat(dir)
			assert.ErrorIs(t, err, os.ErrNotExist)
		}
	})
}
