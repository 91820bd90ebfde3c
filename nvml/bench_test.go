package nvml

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkParseTopo(b *testing.B) {
	in, err := os.ReadFile(filepath.Join("testdata", "topo-E01-tab-8gpu-10nic.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTopo(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkComputeTopology(b *testing.B) {
	root := hostRoot(b, "ebmgn8is-healthy")
	lib, err := ForRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	g, err := ReadGPUs(b.Context(), lib, root)
	if err != nil {
		b.Fatal(err)
	}
	nics := healthyNICs()
	b.ReportAllocs()
	for b.Loop() {
		if t := ComputeTopology(root, g.GPUs, nics); len(t.Errors) > 0 {
			b.Fatal(t.Errors)
		}
	}
}
