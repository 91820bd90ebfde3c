package smitopo

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNCCLPath pins the translation from nvidia-smi's words to NCCL's path
// types. NCCL's list is topoPathTypeStr in src/graph/topo.cc
// ({"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS",
// "NET", "DIS"}, PATH_* in src/include/graph.h); ncclGetLevel in
// src/graph/paths.cc compares NCCL_NET_GDR_LEVEL against entries 0..PATH_SYS
// only, then an old-style number, and ignores anything else (default PXB).
// Every word we translate to must be one of those.
func TestNCCLPath(t *testing.T) {
	assert.Equal(t, []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"}, NCCLPathTypes())
	for _, c := range []struct {
		smi  Link
		nccl string
	}{
		{LinkSelf, "LOC"},
		{"NV18", "NVL"},
		{LinkPIX, "PIX"},
		{LinkPXB, "PXB"},
		{LinkPHB, "PHB"},  // one host bridge (the CPU): PATH_PHB
		{LinkNODE, "PHB"}, // host bridges within one NUMA node: one CPU node in NCCL's graph, PATH_PHB
		{LinkSYS, "SYS"},  // across NUMA nodes: PATH_SYS
		{"SOC", "SYS"},    // nvidia-smi's old word for SYS
		{"C2C?", "SYS"},   // unknown: the farthest
	} {
		got := c.smi.NCCLPath()
		assert.Equal(t, c.nccl, got, "%s", c.smi)
		assert.True(t, slices.Contains(NCCLPathTypes(), got), "%s -> %s is not a word NCCL accepts", c.smi, got)
	}
	// NODE is nvidia-smi's word, not NCCL's: it must never be advised.
	assert.False(t, slices.Contains(NCCLPathTypes(), "NODE"))
	assert.Contains(t, LinkNODE.NCCLMeaning(), "NODE (NCCL's PHB)")
	assert.Contains(t, LinkNODE.NCCLMeaning(), "NCCL_NET_GDR_LEVEL=PHB")
	assert.NotContains(t, LinkNODE.NCCLMeaning(), "=NODE")
	assert.Contains(t, Link("SOC").NCCLMeaning(), "NCCL_NET_GDR_LEVEL=SYS")
}
