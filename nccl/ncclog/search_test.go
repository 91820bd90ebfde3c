package ncclog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkFindNCCL requires findNCCL (vectorised where the CPU allows) to find
// what findNCCLGeneric finds, from every offset of b.
func checkFindNCCL(t *testing.T, b []byte) {
	t.Helper()
	for off := range len(b) + 1 {
		at, eol := findNCCL(b[off:])
		wantAt, wantEOL := findNCCLGeneric(b[off:], 0)
		if at != wantAt || eol != wantEOL {
			t.Fatalf("findNCCL(b[%d:]) of %d bytes = %d, %d; want %d, %d", off, len(b), at, eol, wantAt, wantEOL)
		}
	}
}

func TestFindNCCLMatchesGeneric(t *testing.T) {
	t.Logf("vectorised: %v", findNCCLVectorised)
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(t, err)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		checkFindNCCL(t, b[:min(len(b), 8<<10)])
	}
	// Every pattern at every place around a 32-byte step and the end of
	// the input, with and without a line end after it, and the near
	// misses the vector search must pass over.
	for _, pat := range []string{"NCCL ", "NET/", "NCxL", "NExL/", "N/A", "NVIDIA", "NCC", "NE/", "NNCCL", "NNET/"} {
		for pad := range 70 {
			for _, tail := range []string{"", "\n", "x\n", strings.Repeat("y", 40) + "\n", strings.Repeat("z", 70)} {
				checkFindNCCL(t, []byte(strings.Repeat("a", pad)+pat+tail))
			}
		}
	}
}

func FuzzFindNCCL(f *testing.F) {
	addSamples(f)
	f.Add([]byte(strings.Repeat("x", 31) + "NCCL INFO a\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4<<10 {
			in = in[:4<<10] // every offset is tried: keep it quadratic in little
		}
		checkFindNCCL(t, in)
	})
}

// BenchmarkFindNCCL is the search alone over 1 MiB of the samples in the
// CPU's cache, where the pipeline runs it (a chunk just copied out of the
// page cache), stopping at every candidate: vectorised and the generic
// search.
func BenchmarkFindNCCL(b *testing.B) {
	data := benchLog(b, 1<<20)[:1<<20]
	for _, bc := range []struct {
		name string
		find func([]byte) (int, int)
	}{{"findNCCL", findNCCL}, {"generic", func(b []byte) (int, int) { return findNCCLGeneric(b, 0) }}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for i := 0; i < len(data); {
					at, eol := bc.find(data[i:])
					if at < 0 || eol < 0 {
						break
					}
					i += eol + 1
				}
			}
		})
	}
}
