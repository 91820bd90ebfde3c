//go:build cgo

package nvml

import (
	"context"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func inspectFixture(t *testing.T, host string, nics []NIC) *Report {
	t.Helper()
	lib, err := ForRoot(hostRoot(t, host))
	require.NoError(t, err)
	rep, err := Inspect(context.Background(), lib, hostRoot(t, host), nics)
	require.NoError(t, err)
	return rep
}

func byID(fs []erdma.Finding) map[string]erdma.Finding {
	out := map[string]erdma.Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

// findings are the checks this package owns.
func findings(r *Report, p *erdma.Profile) []erdma.Finding {
	return []erdma.Finding{r.CountFinding(p), r.DistanceFinding()}
}

var ebmgn8is = &erdma.Profile{Family: "ebmgn8is", ERIs: 2, GPUs: 8, Source: "test"}

func TestInspectHealthy(t *testing.T) {
	rep := inspectFixture(t, "ebmgn8is-healthy", healthyNICs())
	require.True(t, rep.Available)
	info := rep.GPUInfo()
	assert.Equal(t, 8, info.Count)
	assert.Equal(t, "535.161.08", info.DriverVersion)
	assert.Equal(t, "nvidia_peermem", info.GDRPath)
	require.Len(t, info.Nearest, 8)
	assert.Equal(t, erdma.GPUNIC{GPU: 5, Device: "erdma_1", Distance: "NODE"}, info.Nearest[5])

	fs := findings(rep, ebmgn8is)
	require.Len(t, fs, 2)
	assert.Equal(t, []string{FindingGPUCount, FindingGPUDistance}, []string{fs[0].ID, fs[1].ID}, "stable ids")
	for _, f := range fs {
		assert.Equal(t, erdma.SeverityOK, f.Severity, "%s: %s", f.ID, f.Summary)
		assert.NotEmpty(t, f.Evidence, f.ID)
	}
	d := byID(fs)[FindingGPUDistance]
	assert.Contains(t, d.Summary, "NODE")
	assert.Equal(t, "to use GPUDirect RDMA over eRDMA: export NCCL_NET_GDR_LEVEL=NODE", d.Remediation)
	assert.Contains(t, d.Evidence, "GPU0 0000:19:00.0 -> erdma_0 0000:00:05.0: NODE")
}

func TestInspectNoPeermem(t *testing.T) {
	rep := inspectFixture(t, "no-peermem", healthyNICs())
	f := byID(findings(rep, ebmgn8is))
	assert.False(t, rep.GDR.Ready)
	assert.Contains(t, rep.GDR.Missing, "driver 535 >= 470 bundles nvidia_peermem but it is not loaded; DMA-BUF: kernel 5.10.134")
	assert.Contains(t, rep.GDR.Remediation, "modprobe nvidia_peermem")
	assert.Contains(t, rep.GDR.Remediation, "/etc/modules-load.d/")
	assert.Contains(t, f[FindingGPUDistance].Remediation, "load nvidia_peermem first")
	assert.Empty(t, rep.GPUInfo().GDRPath)
}

func TestInspectInitFailure(t *testing.T) {
	lib := mockNVML(true)
	lib.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	rep, err := Inspect(context.Background(), lib, hostRoot(t, "no-peermem"), healthyNICs())
	require.NoError(t, err, "an NVML failure is a finding, not an error")
	assert.False(t, rep.Available)
	assert.Equal(t, "no NVIDIA driver", rep.Reason)
	info := rep.GPUInfo()
	assert.Equal(t, erdma.GPUInfo{Available: false, Reason: "no NVIDIA driver", DMABUF: "no"}, info)
	f := byID(findings(rep, ebmgn8is))
	assert.Equal(t, erdma.SeverityFail, f[FindingGPUCount].Severity)
	assert.Equal(t, "cannot count GPUs (no NVIDIA driver); ebmgn8is has 8", f[FindingGPUCount].Summary)
	assert.Equal(t, erdma.SeveritySkip, f[FindingGPUDistance].Severity)
	// Without a profile a host without GPUs is not a failure of the count.
	assert.Equal(t, erdma.SeveritySkip, byID(findings(rep, nil))[FindingGPUCount].Severity)
}

func TestFindingsCountAndDriver(t *testing.T) {
	lib := mockNVML(true)
	lib.DeviceGetCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	lib.SystemGetDriverVersionFunc = func() (string, gonvml.Return) { return "460.106.00", gonvml.SUCCESS }
	rep, err := Inspect(context.Background(), lib, hostRoot(t, "ebmgn8is-healthy"), nil)
	require.NoError(t, err)
	f := byID(findings(rep, ebmgn8is))
	assert.Equal(t, erdma.SeverityFail, f[FindingGPUCount].Severity)
	assert.Equal(t, "7 GPUs, ebmgn8is has 8", f[FindingGPUCount].Summary)
	assert.Equal(t, erdma.SeveritySkip, f[FindingGPUDistance].Severity, "no eRDMA devices given")
	assert.Equal(t, erdma.SeverityOK, byID(findings(rep, nil))[FindingGPUCount].Severity)
}

func TestFindingsVMPHB(t *testing.T) {
	rep := inspectFixture(t, "gn8is-single", healthyNICs()[:1])
	d := byID(findings(rep, nil))[FindingGPUDistance]
	assert.Equal(t, erdma.SeverityOK, d.Severity)
	assert.Contains(t, d.Summary, "PHB")
	assert.Equal(t, "sysfs", rep.GPUs.GPUs[0].NUMASource, "this snapshot has no NVML NUMA ids")
}

func TestFindingsDistanceUnplacedNIC(t *testing.T) {
	nics := append(healthyNICs(), NIC{Name: "erdma_2", PCIAddress: "0000:00:09.0"})
	rep := inspectFixture(t, "ebmgn8is-healthy", nics)
	d := byID(findings(rep, nil))[FindingGPUDistance]
	assert.Equal(t, erdma.SeverityWarn, d.Severity)
	assert.Equal(t, "1 devices not found in the PCI tree; 8 of 8 GPUs placed", d.Summary)
	assert.Contains(t, d.Evidence[0], "erdma_2")
}
