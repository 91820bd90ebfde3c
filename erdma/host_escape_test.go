package erdma

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

const escapeCanary = "CANARY-host-file-outside-the-root"

// hostileDevice is the real directory of erdma_0 (class/infiniband/erdma_0
// links to it, as in sysfs); its fw_ver becomes the hostile link.
const hostileDevice = "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0"

// writeHostileHost writes a one-device host whose fw_ver is e's link.
func writeHostileHost(t *testing.T, root string, e hostfs.Escape) {
	t.Helper()
	dev := filepath.Join(root, hostileDevice)
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "ports/1"), 0o755))
	for name, v := range map[string]string{
		"node_type": "1: CA\n", "node_guid": "0216:3eff:fe2f:3775\n", "fw_ver": "0.2.0\n",
		"ports/1/state": "4: ACTIVE\n", "ports/1/link_layer": "Ethernet\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dev, name), []byte(v), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, ClassInfiniband), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:00/0000:00:05.0/infiniband/erdma_0", filepath.Join(root, ClassInfiniband, "erdma_0")))
	require.NoError(t, e.Materialize(root))
	b, err := os.ReadFile(filepath.Join(root, ClassInfiniband, "erdma_0/fw_ver"))
	require.NoError(t, err, "the layout must escape for the kernel")
	require.Equal(t, escapeCanary, string(b))
}

// tarGz packs dir (symlinks kept) as a recording.
func tarGz(t *testing.T, dir, out string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
			return tw.WriteHeader(hdr)
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	}))
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
}

// assertNothingOutsideRead opens root as --root does and reads it the ways
// the CLI does; no canary byte may appear.
func assertNothingOutsideRead(t *testing.T, root string, mustOpen bool) {
	t.Helper()
	h, c, err := OpenHost(t.Context(), root)
	if !mustOpen && err != nil {
		assert.ErrorIs(t, err, ErrMalformed, "refused up front")
		assert.NotContains(t, err.Error(), escapeCanary)
		return
	}
	require.NoError(t, err)
	defer c.Close()
	inv, err := ReadInventory(context.Background(), h, InventoryOptions{SkipTools: true})
	require.NoError(t, err)
	b, err := json.Marshal(inv)
	require.NoError(t, err)
	assert.NotContains(t, string(b), escapeCanary)
	require.Len(t, inv.Devices, 1)
	assert.Empty(t, inv.Devices[0].FWVer)

	fw := ClassInfiniband + "/erdma_0/fw_ver"
	got, err := h.ReadFile(t.Context(), fw)
	assert.Error(t, err)
	assert.NotContains(t, string(got), escapeCanary)

	var rec bytes.Buffer
	_, err = Record(context.Background(), h, &rec, RecordOptions{Inventory: InventoryOptions{SkipTools: true}})
	require.NoError(t, err)
	zr, err := gzip.NewReader(&rec)
	require.NoError(t, err)
	all, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.NotContains(t, string(all), escapeCanary, "the recording carries no outside byte")
}

// TestHostRootNeverReadsOutside: issue 12 item 1. Links that leave the
// root (absolute, dotdot, chains of directory links of several depths, a
// dot loop, a directory link read through, multiple hops) give no byte of
// the file they reach, for a directory root and for a .tar.gz recording.
func TestHostRootNeverReadsOutside(t *testing.T) {
	base, err := hostfs.PlantCanaries(t.TempDir(), 16, []byte(escapeCanary))
	require.NoError(t, err)
	t.Setenv("TMPDIR", base) // archives unpack among the canaries too
	for _, e := range hostfs.EscapeLayouts(hostileDevice+"/fw_ver", filepath.Join(base, hostfs.CanaryName)) {
		t.Run(e.Name, func(t *testing.T) {
			root, err := os.MkdirTemp(base, "root-")
			require.NoError(t, err)
			writeHostileHost(t, root, e)
			t.Run("directory", func(t *testing.T) { assertNothingOutsideRead(t, root, true) })
			t.Run("tar.gz", func(t *testing.T) {
				archive := filepath.Join(t.TempDir(), "host.tar.gz")
				tarGz(t, root, archive)
				assertNothingOutsideRead(t, archive, e.TextInside)
			})
		})
	}
}

// TestArchiveDirectoriesAreBudgeted: issue 12 item 6. 100,000 directory
// entries (explicit, or implied by a file's path) used to unpack for 20 s
// and 390 MB of disk; now directories count in the budget and are refused
// early, the temporary directory removed.
func TestArchiveDirectoriesAreBudgeted(t *testing.T) {
	for _, implied := range []bool{false, true} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for i := 0; i < 100000; i++ {
			name := "d/" + strconv.Itoa(i) + "/"
			if implied {
				require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name + "f", Mode: 0o644}))
				continue
			}
			require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}))
		}
		require.NoError(t, tw.Close())
		require.NoError(t, zw.Close())
		archive := filepath.Join(t.TempDir(), "dirs.tar.gz")
		require.NoError(t, os.WriteFile(archive, buf.Bytes(), 0o644))
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		_, c, err := OpenHost(t.Context(), archive)
		require.Error(t, err)
		c.Close()
		assert.ErrorIs(t, err, ErrMalformed)
		assert.Contains(t, err.Error(), "directories")
		left, _ := os.ReadDir(tmp)
		assert.Empty(t, left, "the temporary directory is removed")
	}
}
