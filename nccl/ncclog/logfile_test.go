package ncclog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// bigLog is a generated log of several chunks.
func bigLog(t *testing.T) []byte {
	t.Helper()
	in := genLog(11, 20000)
	for len(in) <= 4*chunkSize+chunkSize/3 {
		in = append(in, in...)
	}
	return in
}

// A file read at the workers' own offsets gives what reading it in turn
// gives, for any chunk size and any number of workers, also from the
// middle of the file, and leaves the file's offset at its end.
func TestFileChunksEqualsRead(t *testing.T) {
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
				src, ok := newFileChunks(f, size)
				require.True(t, ok)
				got, err := analyzeSource(context.Background(), src, size, workers)
				require.NoError(t, err)
				require.Equal(t, want.Summary(), got.Summary(), "skip %d, chunk %d, %d workers", skip, size, workers)
				n, err := f.Read(make([]byte, 1))
				require.Equal(t, 0, n)
				require.ErrorIs(t, err, io.EOF)
				require.NoError(t, f.Close())
			}
		}
	}
}

// Lines around and past the chunk size are cut where the sequential reader
// cuts them, wherever they fall against the chunks, with and without a
// newline at the end of the file: NCCL lines of random lengths, some longer
// than a chunk, in files read in chunks of 16 to 100 bytes.
func TestFileChunksCutLongLinesAsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	msgs := []string{"NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>",
		"NCCL WARN Call to ibv_create_qp failed", "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0/GDRDMA",
		"NCCL INFO NCCL_IB_HCA set to erdma", "NET/Socket : Using [0]eth0:10.0.0.1<0>", "noise"}
	for i := range 300 {
		size := 16 + rng.IntN(85)
		var b bytes.Buffer
		for range 1 + rng.IntN(30) {
			fmt.Fprintf(&b, "h:%d:%d [0] %s", rng.IntN(9), i, msgs[rng.IntN(len(msgs))])
			switch rng.IntN(4) {
			case 0: // long: around one to three chunks
				b.Write(bytes.Repeat([]byte{'x'}, rng.IntN(3*size)))
			case 1: // the length where a line is cut
				for b.Len()%size != size-1-rng.IntN(3) {
					b.WriteByte('y')
				}
			}
			if rng.IntN(5) == 0 {
				b.WriteByte('\r')
			}
			b.WriteByte('\n')
		}
		in := b.Bytes()
		if rng.IntN(2) == 0 {
			in = in[:len(in)-1-rng.IntN(min(len(in)-1, 2*size))] // no newline at the end
		}
		want, err := analyzeChunks(bytes.NewReader(in), size, 1)
		require.NoError(t, err)
		path := filepath.Join(dir, fmt.Sprint(i))
		require.NoError(t, os.WriteFile(path, in, 0o600))
		f, err := os.Open(path)
		require.NoError(t, err)
		src, ok := newFileChunks(f, size)
		require.True(t, ok)
		got, err := analyzeSource(context.Background(), src, size, 1+i%3)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, want.Summary(), got.Summary(), "input %d (%d bytes, chunk %d): %q", i, len(in), size, in)
	}
}

// A chunk's read takes readAfter bytes past the chunk; a last line longer
// than that is read on in doubling steps up to the size at which it is cut:
// lines of every length around those steps, in chunks larger than
// readAfter, give what reading the file in turn gives.
func TestFileChunksReadOnPastReadAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dir := t.TempDir()
	size := 4 * readAfter
	for i := range 40 {
		var b bytes.Buffer
		for b.Len() < 6*size {
			fmt.Fprintf(&b, "h:1:%d [0] NCCL INFO NCCL_IB_HCA set to erdma_%d ", i, rng.IntN(4))
			// a line's inside, read as a line of its own, would add networks
			for end := b.Len() + rng.IntN(2*size); b.Len() < end; {
				fmt.Fprintf(&b, " NCCL INFO Using network P%d", rng.IntN(1000))
			}
			b.WriteByte('\n')
			b.WriteString("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0/GDRDMA\n")
		}
		in := b.Bytes()
		if i%2 == 1 {
			in = in[:len(in)-1-rng.IntN(size)]
		}
		want, err := analyzeChunks(bytes.NewReader(in), size, 1)
		require.NoError(t, err)
		path := filepath.Join(dir, fmt.Sprint(i))
		require.NoError(t, os.WriteFile(path, in, 0o600))
		f, err := os.Open(path)
		require.NoError(t, err)
		src, ok := newFileChunks(f, size)
		require.True(t, ok)
		got, err := analyzeSource(context.Background(), src, size, 1+i%2)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, want.Summary(), got.Summary(), "input %d (%d bytes)", i, len(in))
	}
}

// A pipe is read in turn, not at offsets.
func TestFileChunksPipeIsRead(t *testing.T) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	pw.Close()
	_, ok := newFileChunks(pr, chunkSize)
	require.False(t, ok, "a pipe is read")
}

// A log truncated while it is analysed (log rotation) fails with
// ErrLogShrank.
func TestFileChunksShrinkIsAnError(t *testing.T) {
	in := bigLog(t)
	path := filepath.Join(t.TempDir(), "nccl.log")
	require.NoError(t, os.WriteFile(path, in, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	src, ok := newFileChunks(f, chunkSize)
	require.True(t, ok)
	require.NoError(t, os.Truncate(path, 4096))
	_, err = analyzeSource(context.Background(), src, chunkSize, 2)
	require.ErrorIs(t, err, ErrLogShrank)
}

// Issue 27 item 29: a file of one line without a newline is not held
// whole to find the line's end. The line's first chunk is kept, the rest
// read a chunk at a time into the workers' buffers: what the scan
// allocates is a few chunks, not the line.
func TestFileChunksLongLineStaysSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nccl.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
	require.NoError(t, err)
	line := bytes.Repeat([]byte("x"), 1<<20)
	for range 96 {
		_, err = f.Write(line)
		require.NoError(t, err)
	}
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := Analyze(context.Background(), f)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, "eth0", s.BootstrapInterface)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB for a 96 MiB line", alloc>>10)
	require.Less(t, alloc, uint64(16<<20), "the long line was held whole")
}
