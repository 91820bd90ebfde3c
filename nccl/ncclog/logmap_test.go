//go:build linux

package ncclog

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// bigLog is a generated log of more than mapMin bytes, so that a file of
// it is mapped.
func bigLog(t *testing.T) []byte {
	t.Helper()
	in := genLog(11, 20000)
	for len(in) <= mapMin+chunkSize/3 {
		in = append(in, in...)
	}
	return in
}

// A mapped file gives what reading it gives, for any chunk size and any
// number of workers, also from the middle of the file (an offset that is
// not page aligned), and leaves the file's offset at its end.
func TestMappedLogEqualsRead(t *testing.T) {
	in := bigLog(t)
	path := filepath.Join(t.TempDir(), "nccl.log")
	require.NoError(t, os.WriteFile(path, in, 0o600))
	for _, skip := range []int{0, 4097} {
		for _, size := range []int{61, 4096, chunkSize} {
			want, err := analyzeChunks(bytes.NewReader(in[skip:]), size, 1)
			require.NoError(t, err)
			for _, workers := range []int{1, 2, 3} {
				f, err := os.Open(path)
				require.NoError(t, err)
				_, err = f.Seek(int64(skip), io.SeekStart)
				require.NoError(t, err)
				got, mapped, err := analyzeMapped(context.Background(), f, size, workers)
				require.NoError(t, err)
				require.True(t, mapped)
				require.Equal(t, want.Summary(), got.Summary(), "skip %d, chunk %d, %d workers", skip, size, workers)
				n, err := f.Read(make([]byte, 1))
				require.Equal(t, 0, n)
				require.ErrorIs(t, err, io.EOF)
				require.NoError(t, f.Close())
			}
		}
	}
}

// A small file, a pipe and a file that shrinks are read, not mapped, or
// fail with ErrLogShrank: never a crash.
func TestMappedLogFallbacks(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.log")
	require.NoError(t, os.WriteFile(small, genLog(3, 100), 0o600))
	f, err := os.Open(small)
	require.NoError(t, err)
	defer f.Close()
	_, mapped, err := analyzeMapped(context.Background(), f, chunkSize, 2)
	require.NoError(t, err)
	require.False(t, mapped, "a small file is read")

	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	pw.Close()
	_, mapped, _ = analyzeMapped(context.Background(), pr, chunkSize, 2)
	require.False(t, mapped, "a pipe is read")
}

// A log truncated after it was mapped (log rotation) faults on the pages
// past its new end: the analysis fails with ErrLogShrank instead of the
// process dying of SIGBUS.
func TestMappedLogShrinkIsAnError(t *testing.T) {
	in := bigLog(t)
	path := filepath.Join(t.TempDir(), "nccl.log")
	require.NoError(t, os.WriteFile(path, in, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	whole, data, unmap, ok := mapRest(f, mapMin)
	require.True(t, ok)
	defer unmap()
	require.NoError(t, os.Truncate(path, 4096))
	_, err = analyzeSource(context.Background(), &mappedLog{whole: whole, data: data, size: chunkSize}, chunkSize, 2)
	require.ErrorIs(t, err, ErrLogShrank)
}
