package nvml

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Recording the healthy fixture's GPU files into a fresh tree (regular files
// only, no sys/bus/pci/devices links) replays the same report.
func TestRecordFilesReplay(t *testing.T) {
	src := hostRoot(t, "ebmgn8is-healthy")
	lib, err := ForRoot(t.Context(), src)
	require.NoError(t, err)
	files, err := RecordFiles(context.Background(), lib, src, "test")
	require.NoError(t, err)
	assert.Contains(t, files, SnapshotPath)
	assert.Contains(t, files, "sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0/0000:18:00.0/0000:19:00.0/numa_node")
	assert.Contains(t, files, "sys/module/nvidia_peermem/version")
	assert.Contains(t, files, "sys/devices/system/node/node1/cpulist")

	dst := t.TempDir()
	for rel, b := range files {
		p := filepath.Join(dst, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	// The eRDMA functions come from the erdma inventory's own recording.
	for _, d := range []string{"sys/devices/pci0000:00/0000:00:05.0", "sys/devices/pci0000:80/0000:80:05.0"} {
		b, err := os.ReadFile(filepath.Join(src, d, "numa_node"))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, d), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dst, d, "numa_node"), b, 0o644))
	}
	// So do the devices' driver links (the RDMA provider, for DMA-BUF).
	for _, dev := range []string{"erdma_0", "erdma_1"} {
		rel := filepath.Join("sys/class/infiniband", dev, "device", "driver")
		target, err := os.Readlink(filepath.Join(src, rel))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755))
		require.NoError(t, os.Symlink(target, filepath.Join(dst, rel)))
	}
	want, err := Inspect(context.Background(), lib, src, healthyNICs())
	require.NoError(t, err)
	lib2, err := ForRoot(t.Context(), dst)
	require.NoError(t, err)
	got, err := Inspect(context.Background(), lib2, dst, healthyNICs())
	require.NoError(t, err)
	got.Root, want.Root = "", ""
	assert.Equal(t, want, got)
}

// erdma.Record with RecordPaths (symlinks kept) and the snapshot in Files
// replays the same report from the archive.
func TestRecordPathsThroughErdmaRecord(t *testing.T) {
	src := hostRoot(t, "ebmgn8is-healthy")
	lib, err := ForRoot(t.Context(), src)
	require.NoError(t, err)
	s, err := Capture(context.Background(), lib, "test")
	require.NoError(t, err)
	var snap bytes.Buffer
	require.NoError(t, s.Write(&snap))
	paths := RecordPaths(t.Context(), src, s)
	assert.Contains(t, paths, "sys/bus/pci/devices/0000:9e:00.0/numa_node")
	assert.Contains(t, paths, "sys/bus/pci/devices/0000:9b:00.0/vendor")
	assert.Contains(t, paths, "sys/module/nvidia_peermem/version")

	archive := filepath.Join(t.TempDir(), "host.tar.gz")
	f, err := os.Create(archive)
	require.NoError(t, err)
	_, err = erdma.Record(context.Background(), erdma.RecordedHost(src), f, erdma.RecordOptions{
		Files: map[string][]byte{SnapshotPath: snap.Bytes()},
		Paths: paths,
	})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	h, closer, err := erdma.OpenHost(t.Context(), archive)
	require.NoError(t, err)
	defer closer.Close()
	lib2, err := ForRoot(t.Context(), h.Root())
	require.NoError(t, err)
	got, err := Inspect(context.Background(), lib2, h.Root(), healthyNICs())
	require.NoError(t, err)
	want, err := Inspect(context.Background(), lib, src, healthyNICs())
	require.NoError(t, err)
	got.Root, want.Root = "", ""
	assert.Equal(t, want, got)
}
