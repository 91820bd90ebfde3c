package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// dmabufHost is the healthy recorded host without nvidia_peermem but with
// what DMA-BUF needs: a 6.8 kernel, the open NVIDIA module, rdma-core 50.
// open=false makes the module the proprietary one.
func dmabufHost(t *testing.T, open bool) string {
	root := fixture.Host(t, "ebmgn8is-healthy")
	require.NoError(t, os.RemoveAll(filepath.Join(root, "sys/module/nvidia_peermem")))
	version := "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 20:53:44 UTC 2025\n"
	taint := "O\n"
	if !open {
		version = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Fri Mar 14 20:53:44 UTC 2025\n"
		taint = "PO\n"
	}
	for rel, content := range map[string]string{
		"proc/sys/kernel/osrelease":                        "6.8.0-45-generic\n",
		"proc/driver/nvidia/version":                       version,
		"sys/module/nvidia/taint":                          taint,
		"usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0": "",
	} {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

// relinkDriver makes root's two RDMA functions bound to driver (their
// sys/devices/.../driver links): the same host with another RDMA provider.
func relinkDriver(t *testing.T, root, driver string) {
	for _, fn := range []string{"sys/devices/pci0000:00/0000:00:05.0/driver", "sys/devices/pci0000:80/0000:80:05.0/driver"} {
		p := filepath.Join(root, fn)
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Symlink("../../../bus/pci/drivers/"+driver, p))
	}
}

// TestDoctorGDRThroughDMABUF: without nvidia_peermem, GPUDirect RDMA through
// DMA-BUF needs an RDMA provider that registers dma-bufs. On eRDMA it does
// not (rdma-core's providers/erdma has no reg_dmabuf_mr; NCCL's probe gets
// EOPNOTSUPP), so a host with every other DMA-BUF precondition still fails
// gdr-peermem with nvidia_peermem as the only fix; the same host with a
// provider that does (mlx5), or whose recorded probe answered EBADF, passes
// through DMA-BUF; and nccl env agrees.
func TestDoctorGDRThroughDMABUF(t *testing.T) {
	find := func(root string) health.Finding {
		_, out, stderr := runCLI("doctor", "--root", root, "--json")
		var rep struct {
			Findings []health.Finding `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), stderr)
		for _, f := range rep.Findings {
			if f.ID == "gdr-peermem" {
				return f
			}
		}
		t.Fatal("no gdr-peermem finding")
		return health.Finding{}
	}

	// eRDMA with kernel 6.8, the open module, rdma-core 50: peermem required.
	root := dmabufHost(t, true)
	f := find(root)
	assert.Equal(t, health.Fail, f.Severity, f.Summary)
	assert.Contains(t, f.Summary, "DMA-BUF is not supported by the RDMA provider erdma")
	assert.Contains(t, f.Remediation, "modprobe nvidia_peermem")
	assert.Contains(t, f.Remediation, "DMA-BUF is no alternative here: the erdma provider registers no dma-buf")
	assert.NotContains(t, f.Remediation, "or GPUDirect RDMA through DMA-BUF")
	assert.Contains(t, f.Evidence, "GPUDirect RDMA through DMA-BUF (kernel >= 5.12, open NVIDIA module, rdma-core >= 34, an RDMA provider with reg_dmabuf_mr): no")
	code, out, _ := runCLI("nccl", "env", "--root", root)
	assert.Equal(t, ExitWarn, code)
	assert.Contains(t, out, "GPUDirect RDMA is not ready")
	assert.Contains(t, out, "DMA-BUF is no alternative: the erdma provider registers no dma-buf")
	assert.NotContains(t, out, "export NCCL_NET_GDR_LEVEL")
	_, out, _ = runCLI("gpus", "--root", root, "--json")
	assert.Contains(t, out, `"provider": "erdma"`)
	assert.Contains(t, out, `"dmabuf": "no"`)

	// The same host, a provider with reg_dmabuf_mr: DMA-BUF accepted.
	mlx := dmabufHost(t, true)
	relinkDriver(t, mlx, "mlx5_core")
	f = find(mlx)
	assert.Equal(t, health.OK, f.Severity, f.Summary)
	assert.Contains(t, f.Summary, "DMA-BUF")
	assert.Contains(t, f.Evidence, "GPUDirect RDMA through DMA-BUF (kernel >= 5.12, open NVIDIA module, rdma-core >= 34, an RDMA provider with reg_dmabuf_mr): yes")
	code, out, stderr := runCLI("nccl", "env", "--root", mlx, "--gdr", "on")
	assert.Contains(t, []int{ExitOK, ExitWarn}, code, stderr)
	assert.Contains(t, out, "export NCCL_NET_GDR_LEVEL=SYS")
	assert.NotContains(t, out, "without a GPUDirect RDMA path")

	// eRDMA whose recorded probe (erdmakit/dmabuf-probe.json) answered
	// EBADF: the probe, not the provider table, decides.
	probed := dmabufHost(t, true)
	require.NoError(t, os.WriteFile(filepath.Join(probed, "erdmakit/dmabuf-probe.json"),
		[]byte(`[{"device": "erdma_0", "supported": true, "result": "EBADF"}, {"device": "erdma_1", "supported": true, "result": "EBADF"}]`), 0o644))
	f = find(probed)
	assert.Equal(t, health.OK, f.Severity, f.Summary)
	assert.Contains(t, f.Summary, "DMA-BUF")

	// The proprietary module on eRDMA: fails the same way.
	f = find(dmabufHost(t, false))
	assert.Equal(t, health.Fail, f.Severity, f.Summary)
	assert.Contains(t, f.Remediation, "modprobe nvidia_peermem")
}
