package nvml

import (
	"context"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	topo := ComputeTopology(t.Context(), hostRoot(t, "ebmgn8is-healthy"), fixtureGPUs(t, "ebmgn8is-healthy")[:2], healthyNICs())
	// What NCCL users report on eRDMA hosts: SYS everywhere, plus a NIC we
	// do not list.
	theirs, err := smitopo.Parse(context.Background(), strings.NewReader("\tGPU0\tGPU1\tNIC0\tNIC1\tNIC2\n"+
		"GPU0\t X \tNV18\tSYS\tSYS\tSYS\n"+
		"GPU1\tNV18\t X \tSYS\tSYS\tSYS\n"+
		"NIC0\tSYS\tSYS\t X \tSYS\tSYS\n"+
		"NIC1\tSYS\tSYS\tSYS\t X \tSYS\n"+
		"NIC2\tSYS\tSYS\tSYS\tSYS\t X \n"+
		"\nNIC Legend:\n\n  NIC0: erdma_0\n  NIC1: erdma_1\n  NIC2: mlx5_0\n"))
	require.NoError(t, err)
	c := Compare(&topo.Matrix, theirs)
	assert.Equal(t, []Difference{
		{A: "GPU0", B: "erdma_0", Ours: smitopo.LinkNODE, Their: smitopo.LinkSYS},
		{A: "GPU1", B: "erdma_0", Ours: smitopo.LinkNODE, Their: smitopo.LinkSYS},
	}, c.Differences, "GPU0-GPU1 NV18 is not compared with PIX; GPU-erdma_1 agree")
	assert.Empty(t, c.OnlyOurs)
	assert.Equal(t, []string{"mlx5_0"}, c.OnlyTheirs)

	same := Compare(&topo.Matrix, &topo.Matrix)
	assert.Empty(t, same.Differences)
}
