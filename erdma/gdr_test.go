package erdma

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecideGDRLevel(t *testing.T) {
	near := func(ds ...string) *GPUInfo {
		g := &GPUInfo{Available: true, Count: len(ds), GDRPath: "nvidia_peermem"}
		for i, d := range ds {
			g.Nearest = append(g.Nearest, GPUNIC{GPU: i, Device: "erdma_0", Distance: d})
		}
		return g
	}
	for _, tc := range []struct {
		name     string
		g        *GPUInfo
		level    string
		measured bool
	}{
		{"no GPU facts: SYS, not measured", nil, "SYS", false},
		{"NVML unavailable", &GPUInfo{Reason: "no NVIDIA driver"}, "SYS", false},
		{"GPUs not placed", &GPUInfo{Available: true, Count: 8}, "SYS", false},
		{"within PXB: nothing to set", near("PIX", "PXB"), "", true},
		// nvidia-smi's NODE is NCCL's PHB (smitopo.Link.NCCLPath): NODE
		// is no word ncclGetLevel (src/graph/paths.cc) accepts.
		{"NODE on the ebmgn8is fixture is NCCL's PHB", near("NODE", "NODE", "PXB"), "PHB", true},
		{"PHB and NODE are both PHB", near("PHB", "NODE"), "PHB", true},
		{"the farthest wins", near("PHB", "SYS", "NODE"), "SYS", true},
		{"PHB on a VM", near("PHB"), "PHB", true},
		{"SOC is SYS", near("SOC"), "SYS", true},
		{"an unknown word is treated as SYS", near("FAR"), "SYS", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := DecideGDRLevel(tc.g)
			assert.Equal(t, tc.level, l.Level)
			assert.Equal(t, tc.measured, l.Measured)
			assert.NotEmpty(t, l.Reason)
			assert.NotContains(t, l.Reason, "NCCL_NET_GDR_LEVEL=NODE")
			g := l.WithGraph()
			assert.Equal(t, "SYS", g.Level, "a graph file spans both NUMA nodes")
			assert.Contains(t, g.Reason, "SYS")
		})
	}
	l := DecideGDRLevel(near("NODE"))
	assert.Contains(t, l.Reason, "NODE in nvidia-smi's words, PHB in NCCL's")
	assert.Contains(t, l.Reason, "NCCL_NET_GDR_LEVEL=PHB")
}
