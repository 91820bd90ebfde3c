//go:build linux && (amd64 || arm64)

package ncclog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A page-cached file is copied by readCached (the raw preadv2) alone; a
// file whose pages the kernel dropped is read past readCached's EAGAIN by
// ReadAt, with the same result.
func TestFileChunksReadCached(t *testing.T) {
	in := bigLog(t)
	path := filepath.Join(t.TempDir(), "nccl.log")
	require.NoError(t, os.WriteFile(path, in, 0o600))
	want, err := analyzeChunks(bytes.NewReader(in), chunkSize, 1)
	require.NoError(t, err)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	src, ok := newFileChunks(f, chunkSize)
	require.True(t, ok)
	p := make([]byte, 64<<10)
	require.Equal(t, len(p), src.readCached(p, 4096), "a cached span is read by readCached")
	require.Equal(t, in[4096:4096+len(p)], p)
	require.False(t, src.noNowait.Load())
	require.Less(t, src.readCached(p, int64(len(in)-100)), 101, "readCached reads no further than the end")

	// Drop the file's pages (posix_fadvise DONTNEED on a clean file).
	require.NoError(t, f.Sync())
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(path, &st))
	// DONTNEED is advice: a page still in another CPU's LRU batch stays
	// cached (seen once on a loaded 2-core machine), so it is asked again
	// a few times before the raw read is judged.
	n := len(p)
	for try := 0; try < 20 && n == len(p); try++ {
		_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4 /* POSIX_FADV_DONTNEED */, 0, 0)
		require.Zero(t, errno)
		n = src.readCached(p, 4096)
		if n == len(p) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("after DONTNEED (file system 0x%x): readCached read %d of %d bytes", st.Type, n, len(p))
	const tmpfs = 0x01021994
	if st.Type != tmpfs { // tmpfs has no backing store to drop its pages to
		require.Less(t, n, len(p), "pages not in the cache were copied by the raw call")
	}
	got, err := analyzeSource(context.Background(), src, chunkSize, 2)
	require.NoError(t, err)
	require.Equal(t, want.Summary(), got.Summary())
}
