package erdma

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureSeeds returns the content of every regular file of every fixture
// (the real values the parsers see), plus a few hand-written edge cases.
func fixtureSeeds(f *testing.F) [][]byte {
	f.Helper()
	seen := map[string]bool{}
	var seeds [][]byte
	root := f.TempDir()
	archives, err := filepath.Glob(filepath.Join("..", "testdata", "hosts", "*.tar.gz"))
	if err != nil || len(archives) == 0 {
		f.Fatalf("no fixture archives: %v", err)
	}
	for _, a := range archives {
		if err := fixture.Unpack(a, filepath.Join(root, filepath.Base(a))); err != nil {
			f.Fatal(err)
		}
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			seeds = append(seeds, b)
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "\n", "4:", ": ACTIVE", "-1", "18446744073709551616", "0x", "0xffffffff",
		"fe80::1", "0000:0000:0000:0000:0000:ffff:c0a8:0a0b\n", "Version: 6.06\n", "mpirun (Open MPI) 4.1.4\n",
		"MLNX_OFED_LINUX-5.4-3.6.8.1:\n", "\x00\xff"} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

func FuzzParseEnumAttr(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, name, err := ParseEnumAttr(s)
		if err == nil {
			assert.GreaterOrEqual(t, n, 0)
			assert.NotEmpty(t, name)
		}
	})
}

func FuzzParseGUID(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := parseGUID(s)
		if err == nil {
			g2, err := parseGUID(g.String())
			require.NoError(t, err)
			assert.Equal(t, g, g2, "round trip")
			if mac, ok := g.MAC(); ok {
				back, ok := gid.GUIDFromMAC(mac)
				assert.True(t, ok)
				assert.Equal(t, g, back)
			}
		}
	})
}

func FuzzParseGID(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		ip, err := parseGID(s)
		if err != nil {
			return
		}
		require.Len(t, ip, 16)
		assert.Equal(t, strings.ToLower(strings.TrimSpace(s)), formatGID(ip))
		_ = gidIPv4(ip)
		// Redaction keeps a GID a GID.
		_, err = parseGID(NewRedactor().GID(s))
		assert.NoError(t, err)
	})
}

// FuzzParseCounter: the allocation-free hot-path parser agrees with the
// plain one on every input both accept, and never accepts more.
func FuzzParseCounter(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := parseCounterBytes(b)
		slow, err := ParseCounter(b)
		if ok {
			require.NoError(t, err, "%q", b)
			assert.Equal(t, slow, fast)
		}
	})
}

func FuzzParseNUMANodeAndPCIID(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseNUMANode(s); err == nil {
			assert.GreaterOrEqual(t, n, -1)
		} else {
			assert.ErrorIs(t, err, ErrMalformed)
		}
		if id, err := ParsePCIID(s); err == nil {
			assert.Len(t, id, 4)
		}
		_ = isPCIAddress(s)
	})
}

func FuzzToolVersions(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []func([]byte) string{parseEadmVersion, parseOFEDVersion, parsePerftestVersion, parseMPIRunVersion, firstLine} {
			v := p(b)
			assert.LessOrEqual(t, len(v), maxVersionLen+3)
			assert.True(t, printable(v))
		}
	})
}

// FuzzRecordedFiles feeds arbitrary content to the recorded-host JSON files
// and a sysfs attribute of a minimal tree: ReadInventory must return.
func FuzzRecordedFiles(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(s, uint8(0))
	}
	targets := []string{RecordedNetdevsFile, RecordedLimitsFile, RecordedToolsFile, RecordedInstanceFile,
		"sys/class/infiniband/x/ports/1/state", "sys/class/infiniband/x/ports/1/gids/0",
		"sys/class/infiniband/x/node_guid", "sys/class/infiniband/x/ports/1/hw_counters/c"}
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		dir := t.TempDir()
		rel := targets[int(which)%len(targets)]
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), b, 0o644))
		h := RecordedHost(dir)
		inv, err := ReadInventory(context.Background(), h, InventoryOptions{})
		require.NoError(t, err)
		require.NotNil(t, inv)
		_, _ = h.RecordedInstance(context.Background())
	})
}

func TestParsers(t *testing.T) {
	n, name, err := ParseEnumAttr("4: ACTIVE\n")
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.Equal(t, "ACTIVE", name)
	_, _, err = ParseEnumAttr("ACTIVE")
	assert.ErrorIs(t, err, ErrMalformed)

	g, err := parseGUID("0216:3eff:fe2f:3775")
	require.NoError(t, err)
	mac, ok := g.MAC()
	require.True(t, ok)
	assert.Equal(t, "00:16:3e:2f:37:75", mac.String()) // domain doc section 2
	_, err = parseGUID("0216:3eff:fe2f")
	assert.ErrorIs(t, err, ErrMalformed)

	ip, err := parseGID("0000:0000:0000:0000:0000:ffff:c0a8:0a0b")
	require.NoError(t, err)
	assert.Equal(t, "192.168.10.11", gidIPv4(ip))

	v, err := ParseCounter([]byte("7340032000\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(7340032000), v)
	_, err = ParseCounter([]byte("-1"))
	assert.ErrorIs(t, err, ErrMalformed)
	_, ok = parseCounterBytes([]byte("18446744073709551616"))
	assert.False(t, ok, "overflow")
	v, ok = parseCounterBytes([]byte("18446744073709551615\n"))
	assert.True(t, ok)
	assert.Equal(t, ^uint64(0), v)

	assert.Equal(t, "6.06", parsePerftestVersion([]byte("Version: 6.06\n")))
	assert.Equal(t, "4.1.4", parseMPIRunVersion([]byte("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n")))
	assert.Equal(t, "MLNX_OFED_LINUX-5.4-3.6.8.1", parseOFEDVersion([]byte("MLNX_OFED_LINUX-5.4-3.6.8.1:\n")))
	assert.Equal(t, "r0.2.37", parseEadmVersion([]byte("version: r0.2.37\n")))

	n2, err := ParseNUMANode("-1\n")
	require.NoError(t, err)
	assert.Equal(t, -1, n2)
	_, err = ParseNUMANode("-2")
	assert.ErrorIs(t, err, ErrMalformed)
	id, err := ParsePCIID("0x1ded\n")
	require.NoError(t, err)
	assert.Equal(t, "1ded", id)
}

// TestUnpopulatedGIDAttrs: empty gid_attrs files (or EINVAL) are "no
// attribute", not errors.
func TestUnpopulatedGIDAttrs(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, fixture.Host(t, "gn8is-single"), dir)
	p := filepath.Join(dir, "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/ports/1/gid_attrs/types/5")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	inv, err := ReadInventory(context.Background(), RecordedHost(dir), InventoryOptions{})
	require.NoError(t, err)
	assert.Empty(t, inv.Errors)
	assert.Equal(t, 1, inv.Devices[0].Ports[0].RecommendedGIDIndex)
}

// TestERDMAByPCIIDNotName: a device bound to no driver but with PCI id
// 1ded:107f is eRDMA; a device named erdma_x that is rxe is not.
func TestERDMAByPCIIDNotName(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, fixture.Host(t, "gn8is-single"), dir)
	require.NoError(t, os.Remove(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:05.0/driver")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sys/devices/virtual/infiniband/erdma_fake/ports/1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys/devices/virtual/infiniband/erdma_fake/node_type"), []byte("1: CA\n"), 0o644))
	require.NoError(t, os.Symlink("../../devices/virtual/infiniband/erdma_fake", filepath.Join(dir, "sys/class/infiniband/erdma_fake")))
	inv, err := ReadInventory(context.Background(), RecordedHost(dir), InventoryOptions{})
	require.NoError(t, err)
	require.Len(t, inv.Devices, 2)
	assert.True(t, inv.Devices[0].ERDMA)
	assert.Equal(t, "", inv.Devices[0].Driver)
	assert.Equal(t, "erdma_fake", inv.Devices[1].Name)
	assert.False(t, inv.Devices[1].ERDMA)
	assert.Equal(t, -1, inv.Devices[1].NUMANode)
}
