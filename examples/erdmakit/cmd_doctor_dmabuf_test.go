package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
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

// TestDoctorGDRThroughDMABUF: without nvidia_peermem, the doctor passes
// GPUDirect RDMA through DMA-BUF when the host supports it, fails it when
// neither path is there, and nccl env agrees.
func TestDoctorGDRThroughDMABUF(t *testing.T) {
	find := func(root string) erdma.Finding {
		_, out, stderr := runCLI("doctor", "--root", root, "--json")
		var rep struct {
			Findings []erdma.Finding `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), stderr)
		for _, f := range rep.Findings {
			if f.ID == "gdr-peermem" {
				return f
			}
		}
		t.Fatal("no gdr-peermem finding")
		return erdma.Finding{}
	}
	root := dmabufHost(t, true)
	f := find(root)
	assert.Equal(t, erdma.SeverityOK, f.Severity, f.Summary)
	assert.Contains(t, f.Summary, "DMA-BUF")
	assert.Contains(t, f.Evidence, "GPUDirect RDMA through DMA-BUF (kernel >= 5.12, open NVIDIA module, rdma-core >= 34): yes")

	code, out, stderr := runCLI("nccl", "env", "--root", root, "--gdr", "on")
	assert.Contains(t, []int{ExitOK, ExitWarn}, code, stderr)
	assert.Contains(t, out, "export NCCL_NET_GDR_LEVEL=SYS")
	assert.NotContains(t, out, "without a GPUDirect RDMA path")

	f = find(dmabufHost(t, false))
	assert.Equal(t, erdma.SeverityFail, f.Severity, f.Summary)
	assert.Contains(t, f.Remediation, "modprobe nvidia_peermem")
	assert.Contains(t, f.Remediation, "DMA-BUF")
}
