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
		{"NODE on the ebmgn8is fixture", near("NODE", "NODE", "PXB"), "NODE", true},
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
		})
	}
}
