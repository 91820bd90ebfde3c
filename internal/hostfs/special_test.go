package hostfs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specialFiles puts, under dir/sys/x, a FIFO with no writer and (as root) a
// character device (/dev/null's numbers) and a block device (loop2's), the
// layouts of issue 27 items 1 and 23, and returns their names relative to
// dir. Without root a test under CI fails: the device cases are the point.
func specialFiles(t *testing.T, dir string) []string {
	t.Helper()
	d := filepath.Join(dir, "sys/x")
	require.NoError(t, os.MkdirAll(d, 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644))
	names := []string{"sys/x/fifo"}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("device nodes need root (mknod): run the tests as root under CI")
		}
		t.Log("not root: device nodes not tested")
		return names
	}
	require.NoError(t, syscall.Mknod(filepath.Join(d, "chr"), syscall.S_IFCHR|0o644, int(mkdev(1, 3))))
	require.NoError(t, syscall.Mknod(filepath.Join(d, "blk"), syscall.S_IFBLK|0o644, int(mkdev(7, 2))))
	return append(names, "sys/x/chr", "sys/x/blk")
}

func mkdev(major, minor uint64) uint64 { return major<<8 | minor&0xff | (minor&^0xff)<<12 }

// within runs fn and fails the test if it has not returned after d (an
// open blocked on a FIFO never returns: the test must not hang with it).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// TestOnlyRegularFilesAndDirectoriesAreOpened: issue 27 items 1 and 23. A
// FIFO under a root blocked every read in open() (only SIGKILL ended the
// command) and a device node's contents were read as an attribute. Now
// every way of reading refuses both at once, naming the file, for a
// recorded root (openat2 and os.Root) and the live one.
func TestOnlyRegularFilesAndDirectoriesAreOpened(t *testing.T) {
	dir := t.TempDir()
	names := specialFiles(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys/x/fw_ver"), []byte("1.0\n"), 0o644))
	type variant struct {
		name   string
		root   string
		prefix string
		osRoot bool
	}
	for _, v := range []variant{{"openat2", dir, "", false}, {"os.Root", dir, "", true}, {"live", "/", dir, false}} {
		t.Run(v.name, func(t *testing.T) {
			r, err := Open(v.root)
			require.NoError(t, err)
			defer r.Close()
			if v.osRoot {
				forceOSRoot(r)
			}
			for _, n := range names {
				n := filepath.Join(v.prefix, n)
				within(t, 5*time.Second, n, func() {
					_, err := r.ReadFile(n, 64)
					assert.ErrorIs(t, err, ErrNotRegular, n)
					assert.ErrorContains(t, err, n)
					f, err := r.Open(n)
					if err == nil {
						f.Close()
					}
					assert.ErrorIs(t, err, ErrNotRegular, n)
					_, err = r.ReadDir(n)
					assert.ErrorIs(t, err, ErrNotRegular, n)
					_, err = fs.ReadFile(r.FS(), strings.TrimPrefix(n, "/"))
					assert.Error(t, err)
				})
			}
			within(t, 5*time.Second, "glob", func() {
				m, err := r.Glob(strings.TrimPrefix(filepath.Join(v.prefix, "sys/x/*/y"), "/"))
				assert.NoError(t, err)
				assert.Empty(t, m)
			})
			b, err := r.ReadFile(filepath.Join(v.prefix, "sys/x/fw_ver"), 64)
			require.NoError(t, err, "a regular file beside them still reads")
			assert.Equal(t, "1.0\n", string(b))
			ents, err := r.ReadDir(filepath.Join(v.prefix, "sys/x"))
			require.NoError(t, err)
			assert.Len(t, ents, len(names)+1)
		})
	}
}

// TestFSInterfaces: FS is what os.Root's FS was (stat, readdir, readlink),
// with Open's rules.
func TestFSInterfaces(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "l")))
	r, err := Open(dir)
	require.NoError(t, err)
	defer r.Close()
	fsys := r.FS()
	target, err := fs.ReadLink(fsys, "l")
	require.NoError(t, err)
	assert.Equal(t, "f", target)
	fi, err := fs.Lstat(fsys, "l")
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&fs.ModeSymlink)
	b, err := fs.ReadFile(fsys, "l")
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
	_, err = fsys.Open("../f")
	assert.ErrorIs(t, err, fs.ErrInvalid)
}

// TestOpenContextEndsEveryRead: a Root bound to a context that has ended
// refuses every read with ctx's error, naming the file; a FIFO is still
// refused at once while it lives.
func TestOpenContextEndsEveryRead(t *testing.T) {
	dir := t.TempDir()
	names := specialFiles(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys/x/fw_ver"), []byte("1.0\n"), 0o644))
	ctx, cancel := context.WithCancel(t.Context())
	r, err := OpenContext(ctx, dir)
	require.NoError(t, err)
	defer r.Close()
	b, err := r.ReadFile("sys/x/fw_ver", 64)
	require.NoError(t, err)
	assert.Equal(t, "1.0\n", string(b))
	within(t, 5*time.Second, "FIFO", func() {
		_, err := r.ReadFile(names[0], 64)
		assert.ErrorIs(t, err, ErrNotRegular)
	})
	cancel()
	fw := filepath.Join(dir, "sys/x/fw_ver")
	_, err = r.ReadFile("sys/x/fw_ver", 64)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, fw)
	_, err = r.ReadDir("sys/x")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = r.Stat("sys/x/fw_ver")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = r.Lstat("sys/x/fw_ver")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = r.Readlink("sys/x/fw_ver")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = OpenContext(ctx, dir)
	assert.ErrorIs(t, err, context.Canceled)
}
