package ncclog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchLog repeats every sample log until it is at least size bytes.
func benchLog(b *testing.B, size int) []byte {
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(b, err)
	var one []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(b, err)
		one = append(one, data...)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			one = append(one, '\n')
		}
	}
	var buf bytes.Buffer
	for buf.Len() < size {
		buf.Write(one)
	}
	return buf.Bytes()
}

// BenchmarkAnalyzeLog reports the analyser's throughput on the samples
// repeated to 16 MiB (MB/s) and its allocations (none per line once warm).
func BenchmarkAnalyzeLog(b *testing.B) {
	data := benchLog(b, 16<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLogAnalyzerFeed measures one line through Feed: it must not allocate.
func BenchmarkLogAnalyzerFeed(b *testing.B) {
	lines := bytes.Split(benchLog(b, 1), []byte("\n"))
	a := NewAnalyzer()
	for _, l := range lines {
		a.Feed(l)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		a.Feed(lines[i])
		i++
		if i == len(lines) {
			i = 0
		}
	}
}

func BenchmarkParseTests(b *testing.B) {
	data := benchLog(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTests(context.Background(), bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLogAnalyzerFeedAllocatesNothing(t *testing.T) {
	lines := bytes.Split(benchLog(&testing.B{}, 1), []byte("\n"))
	a := NewAnalyzer()
	for _, l := range lines {
		a.Feed(l)
	}
	allocs := testing.AllocsPerRun(20, func() {
		for _, l := range lines {
			a.Feed(l)
		}
	})
	require.Zero(t, allocs, "Feed allocates once its lists are full of what the log repeats")
}

// BenchmarkAnalyzeChunks compares chunk sizes and worker counts of the
// parallel scan on the samples repeated to 64 MiB.
func BenchmarkAnalyzeChunks(b *testing.B) {
	data := benchLog(b, 64<<20)
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("chunk=%dKiB/workers=%d", size>>10, workers), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := analyzeChunks(bytes.NewReader(data), size, workers); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// onlyReader hides a reader's type, so that Analyze cannot tell it never
// blocks: it is read through ctxio's goroutine, as a pipe or stdin is.
type onlyReader struct{ r *bytes.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// BenchmarkAnalyzeContext is the cost of honouring a cancellable context,
// against Analyze under context.Background in the same run: bytes (checked
// before each read) and an opaque reader (read through ctxio's goroutine,
// as a FIFO or stdin is). Compare the sub-benchmarks' MB/s.
func BenchmarkAnalyzeContext(b *testing.B) {
	data := benchLog(b, 16<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bc := range []struct {
		name string
		ctx  context.Context
		r    func() io.Reader
	}{
		{"bytes/background", context.Background(), func() io.Reader { return bytes.NewReader(data) }},
		{"bytes/cancellable", ctx, func() io.Reader { return bytes.NewReader(data) }},
		{"opaque/background", context.Background(), func() io.Reader { return onlyReader{bytes.NewReader(data)} }},
		{"opaque/cancellable", ctx, func() io.Reader { return onlyReader{bytes.NewReader(data)} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Analyze(bc.ctx, bc.r()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnalyzeBlock is the scan alone, what one worker does with
// lines already in its buffer: the samples repeated to 64 MiB in 1 MiB
// chunks of whole lines, as logbench builds them (samples) and with every
// line tagged as mpirun --tag-output does (mpirun); no reads, no copies.
func BenchmarkAnalyzeBlock(b *testing.B) {
	plain := benchLog(b, 64<<20)
	var tagged bytes.Buffer
	for i, line := range bytes.SplitAfter(benchLog(b, 1), []byte("\n")) {
		if len(line) > 0 {
			fmt.Fprintf(&tagged, "[1,%d]<stdout>:", i%64)
			tagged.Write(line)
		}
	}
	one := tagged.Bytes()
	for tagged.Len() < 64<<20 {
		tagged.Write(one)
	}
	for _, bc := range []struct {
		name string
		data []byte
	}{{"samples", plain}, {"mpirun", tagged.Bytes()}} {
		var chunks [][]byte
		for rest := bc.data; len(rest) > 0; {
			n := min(len(rest), chunkSize)
			if i := bytes.LastIndexByte(rest[:n], '\n'); i >= 0 && n < len(rest) {
				n = i + 1
			}
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			defer reportCPU(b, len(bc.data))()
			for b.Loop() {
				total := NewAnalyzer()
				seenIB, seenSocket := map[string]struct{}{}, map[string]struct{}{}
				memo := new(lineMemo)
				for _, c := range chunks {
					a := NewAnalyzer()
					a.chunk, a.seenIB, a.seenSocket, a.memo = true, seenIB, seenSocket, memo
					a.block(c)
					total.merge(a)
				}
			}
		})
	}
}

// reportCPU starts counting the process's CPU time; the function it returns
// reports it per GiB of the n bytes each iteration scans (cpu-s/GiB), the
// figure docs/parse.md compares, steadier than MB/s on a loaded machine.
func reportCPU(b *testing.B, n int) func() {
	start := processCPU()
	return func() {
		if cpu := processCPU() - start; cpu > 0 && b.N > 0 {
			b.ReportMetric(cpu.Seconds()/(float64(n)*float64(b.N)/(1<<30)), "cpu-s/GiB")
		}
	}
}

// BenchmarkAnalyzeFile is the scan of a page-cached file read at the
// workers' own offsets (the samples repeated to 256 MiB), on one worker and
// on two: the CPU the second worker adds (cpu-s/GiB) is the cost of
// running in parallel.
func BenchmarkAnalyzeFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "nccl.log")
	data := benchLog(b, 256<<20)
	require.NoError(b, os.WriteFile(path, data, 0o600))
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			defer reportCPU(b, len(data))()
			for b.Loop() {
				f, err := os.Open(path)
				require.NoError(b, err)
				src, ok := newFileChunks(f, chunkSize)
				require.True(b, ok)
				if _, err := analyzeSource(context.Background(), src, chunkSize, workers); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
