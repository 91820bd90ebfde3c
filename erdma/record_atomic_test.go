package erdma_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// TestRecordFileNeverRemovesWhatWasThere: issue 12 item 2. A failed
// recording leaves --out as it was (it used to be deleted), and a device
// node, fifo or directory given as --out is refused, not replaced.
func TestRecordFileNeverRemovesWhatWasThere(t *testing.T) {
	h := erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy"))
	dir := t.TempDir()
	out := filepath.Join(dir, "host.tar.gz")
	require.NoError(t, os.WriteFile(out, []byte("OLD"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := erdma.RecordFile(ctx, h, out, erdma.RecordOptions{})
	require.ErrorIs(t, err, context.Canceled)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "OLD", string(b), "a failed recording keeps the old file")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, left, 1, "no temporary file left behind")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, p := range []string{fifo, dir} {
		_, err = erdma.RecordFile(context.Background(), h, p, erdma.RecordOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a regular file")
	}
	fi, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the fifo is still there")

	inv, err := erdma.RecordFile(context.Background(), h, out, erdma.RecordOptions{})
	require.NoError(t, err)
	assert.Len(t, inv.Devices, 2)
	rh, c, err := erdma.OpenHost(t.Context(), out)
	require.NoError(t, err)
	defer c.Close()
	got, err := erdma.ReadInventory(context.Background(), rh, erdma.InventoryOptions{})
	require.NoError(t, err)
	assert.Len(t, got.Devices, 2)
	fi, err = os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the replaced file's mode is kept (issue 27 item 6: it became 0644)")
}

// TestRecordAbsoluteLinksReplay: issue 12 item 2. A recorded directory
// whose sysfs links are absolute (/sys/devices/...) records them relative,
// so the replay (which refuses absolute links) reads the same devices.
func TestRecordAbsoluteLinksReplay(t *testing.T) {
	root := filepath.Join(t.TempDir(), "host")
	require.NoError(t, os.CopyFS(root, os.DirFS(fixture.Host(t, "ebmgn8is-healthy"))))
	class := filepath.Join(root, "sys/class/infiniband")
	ents, err := os.ReadDir(class)
	require.NoError(t, err)
	for _, e := range ents {
		p := filepath.Join(class, e.Name())
		target, err := os.Readlink(p)
		require.NoError(t, err)
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Symlink(filepath.Join("/sys/class/infiniband", target), p))
	}
	orig, got, _ := replay(t, erdma.RecordedHost(root), erdma.RecordOptions{})
	require.Len(t, got.Devices, 2)
	assert.Empty(t, got.Errors)
	assert.Equal(t, orig.Devices[0].FWVer, got.Devices[0].FWVer)
	assert.Equal(t, orig.Devices[1].Ports, got.Devices[1].Ports)
}

// TestRecordRedactGPUsRegionRandomMACs: issue 12 item 2. GPU UUIDs in
// nvml.json, the region and every byte of a locally administered MAC are
// redacted too.
func TestRecordRedactGPUsRegionRandomMACs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "host")
	require.NoError(t, os.CopyFS(root, os.DirFS(fixture.Host(t, "ebmgn8is-healthy"))))
	nds := filepath.Join(root, erdma.RecordedNetdevsFile)
	b, err := os.ReadFile(nds)
	require.NoError(t, err)
	b = []byte(strings.ReplaceAll(string(b), "00:16:3e:2f:37:70", "a6:5b:c1:2f:37:70"))
	require.NoError(t, os.WriteFile(nds, b, 0o644))
	const uuid = "GPU-5f3e2a1b-9c8d-4e7f-a6b5-0123456789ab"
	opt := erdma.RecordOptions{Redact: true, Files: map[string][]byte{"erdmakit/nvml.json": []byte(`{"gpus":[{"uuid":"` + uuid + `"}]}`)}}
	_, got, archive := replay(t, erdma.RecordedHost(root), opt)
	plain := gunzip(t, archive)
	for _, secret := range []string{uuid, "5f3e2a1b", "cn-hangzhou", "a6:5b:c1"} {
		assert.NotContains(t, plain, secret)
	}
	assert.Contains(t, plain, "GPU-00000000-0000-0000-0000-000000000001")
	assert.Contains(t, plain, erdma.RedactedRegion)
	assert.Equal(t, "02:00:00:00:00:01", netdev(got, "eth0").MAC)
}

func gunzip(t *testing.T, archive string) string {
	t.Helper()
	raw, err := os.ReadFile(archive)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	return string(plain)
}
