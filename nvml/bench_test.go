package nvml

import (
	"context"
	"testing"
)

func BenchmarkComputeTopology(b *testing.B) {
	root := hostRoot(b, "ebmgn8is-healthy")
	lib, err := ForRoot(context.Background(), root)
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
		if t := ComputeTopology(context.Background(), root, g.GPUs, nics); len(t.Errors) > 0 {
			b.Fatal(t.Errors)
		}
	}
}
