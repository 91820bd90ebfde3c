package smitopo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDefaultGDRLevelPerNCCLVersion: issue 54 item 7. NCCL's default
// NCCL_NET_GDR_LEVEL is PATH_PXB before 2.29.2; from 2.29.2 it is PATH_P2C
// while NCCL_NET_GDR_C2C=1 ("int netGdrLevel = ncclParamNetGdrC2c() ?
// PATH_P2C : PATH_PXB;", src/graph/paths.cc line 511 at NVIDIA/nccl
// 5067397, NCCL_PARAM(NetGdrC2c, "NET_GDR_C2C", 1) at line 465). On a PCIe
// host both take PIX and PXB and leave NODE (PHB) and SYS out, so the
// advice (PHB/SYS on eRDMA hosts) stands; the text says both.
func TestDefaultGDRLevelPerNCCLVersion(t *testing.T) {
	tests := []struct {
		version string
		c2c     bool
		want    string
	}{
		{"2.21.5", true, "PXB"},
		{"2.29.1", true, "PXB"},
		{"2.29.2", true, "P2C"},
		{"2.30.7+cuda12.9", true, "P2C"},
		{"2.30.7", false, "PXB"}, // NCCL_NET_GDR_C2C=0
		{"", true, "P2C"},        // unknown: current
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, DefaultGDRLevel(tt.version, tt.c2c), "NCCL %q c2c %v", tt.version, tt.c2c)
	}
	// P2C (PATH 6) lies between PXB (5) and PHB (8) in src/include/graph.h:
	// the links a PCIe host has fall on the same side of either default.
	for _, l := range []Link{LinkPIX, LinkPXB} {
		assert.True(t, l.GDRByDefault(), l)
	}
	for _, l := range []Link{LinkPHB, LinkNODE, LinkSYS} {
		assert.False(t, l.GDRByDefault(), l)
		assert.Contains(t, l.NCCLMeaning(), "PXB; P2C from NCCL 2.29.2 with NCCL_NET_GDR_C2C=1")
	}
}
