package doctor_test

import (
	"context"
	"testing"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ebmgn8is = &erdma.Profile{Family: "ebmgn8is", ERIs: 2, GPUs: 8, Source: "test"}

func healthyNICs() []nvml.NIC {
	return []nvml.NIC{{Name: "erdma_0", PCIAddress: "0000:00:05.0"}, {Name: "erdma_1", PCIAddress: "0000:80:05.0"}}
}

// inspect reads a fixture host's GPUs from its recorded NVML snapshot.
func inspect(t *testing.T, host string, nics []nvml.NIC) *nvml.Report {
	t.Helper()
	root := fixture.Host(t, host)
	lib, err := nvml.ForRoot(t.Context(), root)
	require.NoError(t, err)
	rep, err := nvml.Inspect(context.Background(), lib, root, nics)
	require.NoError(t, err)
	return rep
}

func gpuFindings(r *nvml.Report, p *erdma.Profile) map[string]health.Finding {
	out := map[string]health.Finding{}
	for _, f := range []health.Finding{doctor.GPUCountFinding(r, p), doctor.GPUDistanceFinding(r)} {
		out[f.ID] = f
	}
	return out
}

func TestGPUChecksHealthy(t *testing.T) {
	rep := inspect(t, "ebmgn8is-healthy", healthyNICs())
	info := doctor.GPUInfo(rep)
	assert.Equal(t, 8, info.Count)
	assert.Equal(t, "535.161.08", info.DriverVersion)
	assert.Equal(t, "nvidia_peermem", info.GDRPath)
	require.Len(t, info.Nearest, 8)
	assert.Equal(t, erdma.GPUNIC{GPU: 5, Device: "erdma_1", Distance: "NODE"}, info.Nearest[5])

	fs := []health.Finding{doctor.GPUCountFinding(rep, ebmgn8is), doctor.GPUDistanceFinding(rep)}
	assert.Equal(t, []string{nvml.FindingGPUCount, nvml.FindingGPUDistance}, []string{fs[0].ID, fs[1].ID}, "stable ids")
	for _, f := range fs {
		assert.Equal(t, health.OK, f.Severity, "%s: %s", f.ID, f.Summary)
		assert.NotEmpty(t, f.Evidence, f.ID)
	}
	d := fs[1]
	assert.Contains(t, d.Summary, "NODE")
	assert.Equal(t, "to use GPUDirect RDMA over eRDMA: export NCCL_NET_GDR_LEVEL=PHB", d.Remediation)
	assert.Contains(t, d.Evidence, "GPU0 0000:19:00.0 -> erdma_0 0000:00:05.0: NODE")
}

func TestGPUChecksNoPeermem(t *testing.T) {
	rep := inspect(t, "no-peermem", healthyNICs())
	assert.Contains(t, gpuFindings(rep, ebmgn8is)[nvml.FindingGPUDistance].Remediation, "load nvidia_peermem first")
	assert.Empty(t, doctor.GPUInfo(rep).GDRPath)
}

func TestGPUChecksNVMLUnavailable(t *testing.T) {
	rep := &nvml.Report{Reason: "no NVIDIA driver", Error: "ERROR_DRIVER_NOT_LOADED",
		GDR: nvml.GDR{DMABUF: nvml.DMABUF{Supported: nvml.SupportNo}}}
	assert.Equal(t, erdma.GPUInfo{Available: false, Reason: "no NVIDIA driver", DMABUF: "no"}, doctor.GPUInfo(rep))
	f := gpuFindings(rep, ebmgn8is)
	assert.Equal(t, health.Fail, f[nvml.FindingGPUCount].Severity)
	assert.Equal(t, "cannot count GPUs (no NVIDIA driver); ebmgn8is has 8", f[nvml.FindingGPUCount].Summary)
	assert.Equal(t, health.Skip, f[nvml.FindingGPUDistance].Severity)
	// Without a profile a host without GPUs is not a failure of the count.
	assert.Equal(t, health.Skip, gpuFindings(rep, nil)[nvml.FindingGPUCount].Severity)
}

func TestGPUCountFindingWrongCount(t *testing.T) {
	rep := &nvml.Report{Available: true, GPUs: &nvml.GPUs{GPUs: make([]nvml.GPU, 7)}}
	f := gpuFindings(rep, ebmgn8is)
	assert.Equal(t, health.Fail, f[nvml.FindingGPUCount].Severity)
	assert.Equal(t, "7 GPUs, ebmgn8is has 8", f[nvml.FindingGPUCount].Summary)
	assert.Equal(t, health.Skip, f[nvml.FindingGPUDistance].Severity, "nothing placed")
	assert.Equal(t, health.OK, gpuFindings(rep, nil)[nvml.FindingGPUCount].Severity)
}

func TestGPUDistanceFindingVMPHB(t *testing.T) {
	d := gpuFindings(inspect(t, "gn8is-single", healthyNICs()[:1]), nil)[nvml.FindingGPUDistance]
	assert.Equal(t, health.OK, d.Severity)
	assert.Contains(t, d.Summary, "PHB")
}

func TestGPUDistanceFindingUnplacedNIC(t *testing.T) {
	nics := append(healthyNICs(), nvml.NIC{Name: "erdma_2", PCIAddress: "0000:00:09.0"})
	d := gpuFindings(inspect(t, "ebmgn8is-healthy", nics), nil)[nvml.FindingGPUDistance]
	assert.Equal(t, health.Warn, d.Severity)
	assert.Equal(t, "1 devices not found in the PCI tree; 8 of 8 GPUs placed", d.Summary)
	assert.Contains(t, d.Evidence[0], "erdma_2")
}

func TestNICsOf(t *testing.T) {
	devs := []erdma.Device{
		{Name: "rxe0"},
		{Name: "mlx5_0", PCIAddress: "0000:17:00.0"},
		{Name: "erdma_0", PCIAddress: "0000:00:05.0", ERDMA: true},
	}
	nics, note := doctor.NICsOf(devs)
	assert.Equal(t, []nvml.NIC{{Name: "erdma_0", PCIAddress: "0000:00:05.0"}}, nics)
	assert.Empty(t, note)
	nics, note = doctor.NICsOf(devs[:2])
	assert.Equal(t, []nvml.NIC{{Name: "mlx5_0", PCIAddress: "0000:17:00.0"}}, nics)
	assert.Contains(t, note, "no eRDMA devices")
	nics, note = doctor.NICsOf(devs[:1])
	assert.Empty(t, nics)
	assert.Contains(t, note, "cannot be computed")
}
