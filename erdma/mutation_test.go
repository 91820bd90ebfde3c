package erdma

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyTree copies a host tree, symlinks kept (hostgen.CopyTree cannot be
// imported here: hostgen imports erdma).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
	})
	require.NoError(t, err)
}

var garbles = []struct {
	name    string
	content []byte
}{
	{"binary", []byte{0x00, 0xff, 0x13, 0x37, 0x80, '\n'}},
	{"empty", nil},
	{"huge-number", []byte("184467440737095516150000000000000000000\n")},
	{"negative", []byte("-1\n")},
	{"oversized", []byte(strings.Repeat("9", maxAttrSize+10))},
}

// TestMutateHealthyFixture removes, then garbles (binary, empty, huge number,
// negative, oversized; files it never opens: binary only) each file of the
// healthy fixture in turn: ReadInventory must return (never panic, never
// hang), and a file it reads that now holds binary garbage must be named in
// Inventory.Errors (or the error).
func TestMutateHealthyFixture(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, fixture.Host(t, "ebmgn8is-healthy"), dir)
	h := RecordedHost(dir)

	// Which files does a read touch (resolved through symlinks)?
	th := h
	th.tr = newTracer()
	base, err := ReadInventory(context.Background(), th, InventoryOptions{})
	require.NoError(t, err)
	require.Empty(t, base.Errors)
	read := map[string]bool{}
	for rel := range th.tr.files {
		if real, err := filepath.EvalSymlinks(h.Path(rel)); err == nil {
			read[real] = true
		}
	}

	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	}))
	require.Greater(t, len(files), 200)
	ctx := context.Background()
	named := 0
	for _, f := range files {
		orig, err := os.ReadFile(f)
		require.NoError(t, err)
		real, _ := filepath.EvalSymlinks(f)
		rel, _ := filepath.Rel(dir, f)

		require.NoError(t, os.Remove(f))
		inv, err := ReadInventory(ctx, h, InventoryOptions{})
		assert.NoError(t, err, "removed %s", rel)
		assert.NotNil(t, inv, "removed %s", rel)

		for _, g := range garbles {
			// A file the inventory never opens (the GPU tree the nvml
			// fixture adds, sys_image_guid, ...) gets one garble, not five.
			if g.name != "binary" && !read[real] {
				continue
			}
			require.NoError(t, os.WriteFile(f, g.content, 0o644))
			inv, err := ReadInventory(ctx, h, InventoryOptions{})
			require.NoError(t, err, "%s %s", g.name, rel)
			if g.name != "binary" || !read[real] || strings.HasPrefix(rel, "dev/") {
				continue
			}
			if assert.True(t, namesFile(inv.Errors, real), "binary %s: errors %q do not name it", rel, inv.Errors) {
				named++
			}
		}
		require.NoError(t, os.WriteFile(f, orig, 0o644))
	}
	assert.Greater(t, named, 100)
}

// namesFile reports whether one of errs begins with a path that resolves to
// real.
func namesFile(errs []string, real string) bool {
	for _, e := range errs {
		for _, part := range strings.Split(e, "\n") {
			p, _, _ := strings.Cut(part, ": ")
			if r, err := filepath.EvalSymlinks(p); err == nil && r == real {
				return true
			}
		}
	}
	return false
}

// TestMutateSymlinks: device links pointing nowhere or in a loop.
func TestMutateSymlinks(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, fixture.Host(t, "ebmgn8is-healthy"), dir)
	h := RecordedHost(dir)
	for _, l := range []string{
		"sys/class/infiniband/erdma_0",
		"sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/device",
		"sys/devices/pci0000:00/0000:00:05.0/driver",
		"sys/class/infiniband_verbs/uverbs0",
	} {
		for _, target := range []string{"nowhere", "../../../../../../../../../../etc", filepath.Base(l)} {
			p := filepath.Join(dir, l)
			old, err := os.Readlink(p)
			require.NoError(t, err)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(target, p))
			inv, err := ReadInventory(context.Background(), h, InventoryOptions{})
			assert.NoError(t, err, "%s -> %s", l, target)
			assert.NotNil(t, inv)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(old, p))
		}
	}
}
