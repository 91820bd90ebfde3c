//go:build linux

package ncclog

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// rssFile is the process's resident file-backed memory (RssFile in
// /proc/self/status), in bytes.
// mappedScanGrowth maps f from its offset as parse nccl-log does, scans
// it with two workers, and returns how much the file-backed resident set
// grew and how many bytes were mapped.
func mappedScanGrowth(t *testing.T, f *os.File) (grew, mapped int) {
	t.Helper()
	whole, data, unmap, ok := mapRest(f, mapMin)
	require.True(t, ok)
	defer unmap()
	before := rssFile(t)
	_, err := analyzeSource(context.Background(), &mappedLog{whole: whole, data: data, size: chunkSize}, chunkSize, 2)
	require.NoError(t, err)
	return rssFile(t) - before, len(data)
}

func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The scanned chunks of a mapped log leave the resident set: scanning 64
// MiB in 1 MiB chunks maps a few chunks at a time, not the file. (Chunk
// ends are line ends, not page ends: releasing the page the next chunk
// starts in let its scan fault the whole large folio back in, and the
// resident set grew by a chunk per chunk.)
func TestMappedLogResidentSetStaysSmall(t *testing.T) {
	in := bigLog(t)
	for len(in) < 64<<20 {
		in = append(in, in...)
	}
	path := filepath.Join(t.TempDir(), "nccl.log")
	require.NoError(t, os.WriteFile(path, in, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	// As a log that was read before (the usual case): drop the pages
	// the write cached and read it, so that the page cache holds what
	// readahead makes (large folios).
	require.NoError(t, f.Sync())
	const fadvDontNeed = 4
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
	require.Zero(t, errno)
	_, err = io.Copy(io.Discard, f)
	require.NoError(t, err)
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	grew, _ := mappedScanGrowth(t, f)
	t.Logf("resident set grew by %d KiB scanning %d MiB", grew>>10, len(in)>>20)
	require.Less(t, grew, 1<<20, "the scanned chunks stay mapped")
}

// TestMappedLogLongLineStaysSmall: issue 27 item 29. `parse nccl-log` on a
// file of one line without a newline mapped all of it in to find the
// line's end (RssFile 2 GB for 2 GB). The line's first chunk is held, the
// rest scanned a chunk at a time and released.
func TestMappedLogLongLineStaysSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nccl.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
	require.NoError(t, err)
	line := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 96; i++ {
		_, err = f.Write(line)
		require.NoError(t, err)
	}
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	grew, mapped := mappedScanGrowth(t, f)
	t.Logf("resident set grew by %d KiB for a %d MiB line", grew>>10, mapped>>20)
	require.Less(t, grew, 8<<20, "the long line was mapped in whole")
}
