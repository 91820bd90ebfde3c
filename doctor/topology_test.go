package doctor_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopologyFindings(t *testing.T) {
	topo := &nvml.Topology{Matrix: nvml.Matrix{Endpoints: []nvml.Endpoint{{Label: "GPU0"}, {Label: "NIC0", Name: "erdma_0"}}}}
	t.Run("NVML unavailable", func(t *testing.T) {
		fs := doctor.TopologyFindings(&nvml.Report{Reason: "libnvidia-ml not found", Error: "ERROR_LIBRARY_NOT_FOUND", Remediation: "install the driver"}, nil)
		require.Len(t, fs, 1)
		assert.Equal(t, doctor.FindingTopoNVML, fs[0].ID)
		assert.Equal(t, health.Fail, fs[0].Severity)
		assert.Equal(t, []string{"ERROR_LIBRARY_NOT_FOUND"}, fs[0].Evidence)
		assert.Equal(t, "install the driver", fs[0].Remediation)
		assert.Equal(t, 2, health.Status(fs).Exit())
	})
	t.Run("the doctor's gpu-nic-distance, nothing compared", func(t *testing.T) {
		for _, rep := range []*nvml.Report{
			inspect(t, "ebmgn8is-healthy", healthyNICs()),
			{Available: true}, // no GPUs: no topology
		} {
			fs := doctor.TopologyFindings(rep, nil)
			require.Len(t, fs, 1)
			assert.Equal(t, doctor.GPUDistanceFinding(rep), fs[0], "one fact, one finding")
			assert.Equal(t, 0, health.Status(fs).Exit())
		}
	})
	t.Run("devices not placed", func(t *testing.T) {
		bad := inspect(t, "ebmgn8is-healthy", healthyNICs())
		bad.Topology.Errors = []string{"GPU1: 0000:55:00.0: PCI device not found"}
		fs := doctor.TopologyFindings(bad, nil)
		assert.Equal(t, nvml.FindingGPUDistance, fs[0].ID)
		assert.Equal(t, health.Warn, fs[0].Severity)
		assert.Contains(t, fs[0].Evidence, bad.Topology.Errors[0])
		assert.Equal(t, 1, health.Status(fs).Exit())
	})
	t.Run("nvidia-smi agrees; lists more NICs", func(t *testing.T) {
		fs := doctor.TopologyFindings(inspect(t, "ebmgn8is-healthy", healthyNICs()), &nvml.Comparison{OnlyTheirs: []string{"mlx5_0"}})
		require.Len(t, fs, 2)
		assert.Equal(t, doctor.FindingTopoNvidiaSMI, fs[1].ID)
		assert.Equal(t, health.OK, fs[1].Severity)
		assert.Equal(t, []string{"only nvidia-smi lists [mlx5_0] (the matrix holds eRDMA devices only)"}, fs[1].Evidence)
	})
	t.Run("nvidia-smi disagrees, evidence bounded", func(t *testing.T) {
		var cmp nvml.Comparison
		for i := range doctor.MaxTopologyDifference + 5 {
			cmp.Differences = append(cmp.Differences, nvml.Difference{A: fmt.Sprintf("GPU%d", i), B: "erdma_0", Ours: smitopo.LinkNODE, Their: smitopo.LinkSYS})
		}
		fs := doctor.TopologyFindings(&nvml.Report{Available: true, Topology: topo}, &cmp) // a report made by hand: no GPUs list
		smi := fs[1]
		assert.Equal(t, health.Warn, smi.Severity)
		assert.Equal(t, "nvidia-smi disagrees with the PCI tree on 37 cell(s)", smi.Summary)
		require.Len(t, smi.Evidence, doctor.MaxTopologyDifference+1)
		assert.Equal(t, "GPU0 <-> erdma_0: sysfs NODE, nvidia-smi SYS", smi.Evidence[0])
		assert.Equal(t, "... and 5 more", smi.Evidence[doctor.MaxTopologyDifference])
		assert.NotEmpty(t, smi.Remediation)
	})
}

// Topology's gpu-nic-distance is the one CheckGPUs (and so the doctor)
// reports, on every recorded host; where NVML is unusable its only finding
// is topo-nvml, and nothing is compared.
func TestTopologyAgreesWithCheckGPUs(t *testing.T) {
	hosts, err := filepath.Glob("../testdata/hosts/*.tar.gz")
	require.NoError(t, err)
	require.NotEmpty(t, hosts)
	ctx := context.Background()
	smi := &nvml.Matrix{Source: "nvidia-smi", Endpoints: []nvml.Endpoint{{Label: "GPU0"}}, Links: [][]nvml.Link{{smitopo.LinkSelf}}}
	for _, p := range hosts {
		t.Run(filepath.Base(p), func(t *testing.T) {
			h, closer, err := erdma.OpenHost(ctx, p)
			require.NoError(t, err)
			defer closer.Close()
			topo, err := doctor.Topology(ctx, h, smi)
			require.NoError(t, err)
			require.Equal(t, health.Status(topo.Findings), topo.Status)
			if !topo.GPUs.Available {
				require.Len(t, topo.Findings, 1)
				assert.Equal(t, doctor.FindingTopoNVML, topo.Findings[0].ID)
				assert.Equal(t, health.Fail, topo.Status)
				assert.Nil(t, topo.Comparison)
				return
			}
			checks, _, err := doctor.CheckGPUs(ctx, h, doctor.Options{})
			require.NoError(t, err)
			i := slices.IndexFunc(checks.Findings, func(f health.Finding) bool { return f.ID == nvml.FindingGPUDistance })
			require.GreaterOrEqual(t, i, 0)
			assert.Equal(t, checks.Findings[i], topo.Findings[0])
			require.Len(t, topo.Findings, 2)
			assert.Equal(t, doctor.FindingTopoNvidiaSMI, topo.Findings[1].ID)
		})
	}
}
