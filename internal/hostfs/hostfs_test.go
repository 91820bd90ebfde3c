package hostfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const canary = "CANARY-outside-the-root"

// TestReadsNeverLeaveTheRoot: every layout does reach a canary when the
// kernel follows it from the root directory (so the layout is a real
// escape), and no read through Root returns it.
func TestReadsNeverLeaveTheRoot(t *testing.T) {
	base, err := PlantCanaries(t.TempDir(), 16, []byte(canary))
	require.NoError(t, err)
	abs := filepath.Join(base, CanaryName)
	for _, e := range EscapeLayouts("sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/fw_ver", abs) {
		t.Run(e.Name, func(t *testing.T) {
			root, err := os.MkdirTemp(base, "root-")
			require.NoError(t, err)
			require.NoError(t, e.Materialize(root))
			b, err := os.ReadFile(filepath.Join(root, e.Read))
			require.NoError(t, err, "the layout must escape for the kernel")
			require.Equal(t, canary, string(b))

			for _, osRoot := range []bool{false, true} {
				r, err := Open(root)
				require.NoError(t, err)
				defer r.Close()
				if osRoot {
					forceOSRoot(r)
				}
				assertRefused(t, r, e)
			}
		})
	}
}

// forceOSRoot makes r use os.Root alone (as where openat2 is missing).
func forceOSRoot(r *Root) {
	closeDirFD(r.fd)
	r.fd = -1
}

func assertRefused(t *testing.T, r *Root, e Escape) {
	t.Helper()
	_, err := r.ReadFile(e.Read, 1<<20)
	assert.Error(t, err)
	_, err = r.Stat(e.Read)
	assert.Error(t, err)
	f, err := r.Open(e.Read)
	if err == nil {
		f.Close()
	}
	assert.Error(t, err)
	_, err = fs.ReadFile(r.FS(), e.Read)
	assert.Error(t, err)
	// The link itself is still visible as a link.
	fi, err := r.Lstat(e.Read)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&fs.ModeSymlink)
}

// TestRelativeLinksInsideStillResolve: sysfs is made of relative links
// (class/infiniband/X -> ../../devices/...); those keep working.
func TestRelativeLinksInsideStillResolve(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0")
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "fw_ver"), []byte("0.2.0\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:00/0000:00:05.0/infiniband/erdma_0", filepath.Join(root, "sys/class/infiniband/erdma_0")))

	r, err := Open(root)
	require.NoError(t, err)
	defer r.Close()
	b, err := r.ReadFile("sys/class/infiniband/erdma_0/fw_ver", 64)
	require.NoError(t, err)
	assert.Equal(t, "0.2.0\n", string(b))
	b, err = r.ReadFile("/sys/class/infiniband/../infiniband/erdma_0/fw_ver", 64)
	require.NoError(t, err, "a leading slash and an inner dotdot stay in the root")
	assert.Equal(t, "0.2.0\n", string(b))
	ents, err := r.ReadDir("sys/class/infiniband/erdma_0")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	target, err := r.Readlink("sys/class/infiniband/erdma_0")
	require.NoError(t, err)
	assert.Equal(t, "../../devices/pci0000:00/0000:00:05.0/infiniband/erdma_0", target)
	m, err := r.Glob("sys/class/infiniband/*/fw_ver")
	require.NoError(t, err)
	assert.Equal(t, []string{"sys/class/infiniband/erdma_0/fw_ver"}, m)

	_, err = r.ReadFile("sys/class/infiniband/erdma_0/fw_ver", 3)
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = r.ReadFile("../../etc/passwd", 1<<20)
	assert.Error(t, err, "a name climbing out is refused")
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close is idempotent")
}

func ExampleOpen() {
	r, err := Open("/")
	if err != nil {
		return
	}
	defer r.Close()
	// Names are relative to the root; under any root but "/", no link or
	// ".." leads out of it.
	_, _ = r.ReadFile("sys/class/infiniband/erdma_0/fw_ver", 64<<10)
	// Output:
}

// TestAbsoluteLinksReadInTheRoot: an absolute link of a recorded host names
// the recording's own file (as chroot reads it), and ".." above the root
// stays at the root; neither reaches this machine.
func TestAbsoluteLinksReadInTheRoot(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0")
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "fw_ver"), []byte("0.2.0\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755))
	require.NoError(t, os.Symlink("/sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0", filepath.Join(root, "sys/class/infiniband/erdma_0")))
	require.NoError(t, os.Symlink("../../../../../../sys/class/infiniband/erdma_0/fw_ver", filepath.Join(root, "sys/class/infiniband/fw")))

	r, err := Open(root)
	require.NoError(t, err)
	defer r.Close()
	r2, err := Open(root)
	require.NoError(t, err)
	defer r2.Close()
	forceOSRoot(r2)
	for _, name := range []string{"sys/class/infiniband/erdma_0/fw_ver", "sys/class/infiniband/fw"} {
		b, err := r2.ReadFile(name, 64)
		require.NoError(t, err, "os.Root: %s", name)
		assert.Equal(t, "0.2.0\n", string(b))
		b, err = r.ReadFile(name, 64)
		require.NoError(t, err, name)
		assert.Equal(t, "0.2.0\n", string(b))
		fi, err := r.Stat(name)
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular())
	}
	fi, err := r.Lstat("sys/class/infiniband/erdma_0/fw_ver")
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	_, err = r.ReadFile("etc/passwd", 1<<20)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
