package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGPUsTable(t *testing.T) {
	code, out, stderr := runCLI("gpus", "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "Driver 535.161.08, CUDA 12.2, 8 GPUs")
	assert.Contains(t, out, "7    NVIDIA H20  0000:bc:00.0  1     97871 MiB")
	assert.Contains(t, out, "GPUDirect RDMA: ready (nvidia_peermem 535.161.08)")

	assert.Contains(t, out, "ok      gdr-peermem       nvidia_peermem loaded")
	assert.Contains(t, out, "status: ok")

	// The doctor calls GPUDirect RDMA not ready a failure, and so does gpus.
	code, out, _ = runCLI("gpus", "--root", hostDir("no-peermem"))
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "GPUDirect RDMA: NOT ready: driver 535 >= 470 bundles nvidia_peermem but it is not loaded")
	assert.Contains(t, out, "fix: modprobe nvidia_peermem")
	assert.Contains(t, out, "fail gdr-peermem: GPUDirect RDMA not ready")
	assert.Contains(t, out, "status: fail")
}

// gpus exits as the doctor's GPU checks decide, on every recorded host, and
// its findings are the doctor's.
func TestGPUsExitsAsTheDoctor(t *testing.T) {
	for _, name := range fixtureHosts(t) {
		t.Run(name, func(t *testing.T) {
			h := hostDir(name)
			code, out, stderr := runCLI("doctor", "--json", "--root", h)
			require.Contains(t, []int{ExitOK, ExitWarn, ExitFail}, code, stderr)
			var doc struct {
				Findings []health.Finding `json:"findings"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			code, out, stderr = runCLI("gpus", "--json", "--root", h)
			var gp struct {
				Available bool             `json:"available"`
				Status    health.Severity  `json:"status"`
				Findings  []health.Finding `json:"findings"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &gp), stderr)
			want := health.OK
			var fs []health.Finding
			for _, f := range doc.Findings {
				if slices.Contains(doctor.GPUCheckIDs(), f.ID) {
					fs = append(fs, f)
					want = health.Worst(want, f.Severity)
				}
			}
			assert.Equal(t, fs, gp.Findings)
			if !gp.Available {
				want = health.Fail
			}
			assert.Equal(t, want, gp.Status)
			assert.Equal(t, want.Exit(), code)
		})
	}
}

func TestGPUsJSON(t *testing.T) {
	code, out, stderr := runCLI("gpus", "--json", "--root", hostDir("gn8is-single"))
	require.Equal(t, ExitOK, code, stderr)
	var rep nvml.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.True(t, rep.Available)
	require.Len(t, rep.GPUs.GPUs, 2)
	assert.Equal(t, "0000:00:08.0", rep.GPUs.GPUs[1].PCIAddress)
	assert.Equal(t, "sysfs", rep.GPUs.GPUs[1].NUMASource)
	assert.Nil(t, rep.Topology, "gpus --json leaves the topology to topo --json")
}

func TestGPUsWithoutSnapshot(t *testing.T) {
	root := t.TempDir()
	code, out, _ := runCLI("gpus", "--root", root)
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "NVML unavailable: libnvidia-ml not found")
	assert.Contains(t, out, "recorded host has no erdmakit/nvml.json")
}

func TestTopoTable(t *testing.T) {
	code, out, stderr := runCLI("topo", "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "GPU0  X     PIX   NODE  NODE  SYS   SYS   SYS   SYS   NODE  SYS   0-31,64-95    0")
	assert.Contains(t, out, "  NIC1: erdma_1")
	assert.Contains(t, out, "4    0000:9d:00.0  erdma_1      0000:80:05.0  NODE      no")
	assert.Contains(t, out, "NODE (NCCL's PHB) is beyond NCCL's default GDR level (PXB; P2C from NCCL 2.29.2 with NCCL_NET_GDR_C2C=1, the same on a PCIe host): GPUDirect RDMA is off unless NCCL_NET_GDR_LEVEL=PHB")
	assert.Contains(t, out, "ok      gpu-nic-distance  nearest eRDMA device is up to NODE away")
	assert.Contains(t, out, "\nstatus: ok\n")
}

func TestTopoJSONAndCompare(t *testing.T) {
	smi := filepath.Join(t.TempDir(), "topo.txt")
	require.NoError(t, os.WriteFile(smi, []byte("\tGPU0\tNIC0\tNIC1\n"+
		"GPU0\t X \tSYS\tSYS\nNIC0\tSYS\t X \tSYS\nNIC1\tSYS\tSYS\t X \n\nNIC Legend:\n\n  NIC0: erdma_0\n  NIC1: erdma_1\n"), 0o644))
	code, out, stderr := runCLI("topo", "--json", "--compare", smi, "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitWarn, code, stderr)
	var got struct {
		nvml.Topology
		GDRReady   bool             `json:"gdr_ready"`
		Comparison *nvml.Comparison `json:"comparison"`
		Status     health.Severity  `json:"status"`
		Findings   []health.Finding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	// The exit code is the library's verdict, doctor.TopologyFindings.
	assert.Equal(t, health.Warn, got.Status)
	require.Len(t, got.Findings, 2)
	assert.Equal(t, doctor.FindingTopoNvidiaSMI, got.Findings[1].ID)
	assert.Equal(t, []string{"GPU0 <-> erdma_0: sysfs NODE, nvidia-smi SYS", "only the PCI tree lists [GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7]"}, got.Findings[1].Evidence)
	assert.True(t, got.GDRReady)
	require.Len(t, got.Nearest, 8)
	assert.Equal(t, smitopo.LinkNODE, got.Nearest[0].Distance)
	require.NotNil(t, got.Comparison)
	assert.Equal(t, []nvml.Difference{{A: "GPU0", B: "erdma_0", Ours: smitopo.LinkNODE, Their: smitopo.LinkSYS}}, got.Comparison.Differences)

	code, _, stderr = runCLI("topo", "--compare", "/nonexistent", "--root", hostDir("ebmgn8is-healthy"))
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "/nonexistent")
}

func TestTopoNoGPUs(t *testing.T) {
	code, _, stderr := runCLI("topo", "--root", hostDir("ebmgn8is-healthy")+"/../no-such-host")
	assert.Equal(t, ExitUnknown, code, stderr)
}

func TestParseTopo(t *testing.T) {
	code, out, stderr := runCLI("parse", "topo", filepath.Join("testdata", "topo-E01-tab-8gpu-10nic.txt"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "GPU0  X     NV12  NV12")
	assert.Contains(t, out, "  NIC9: mlx5_9")
	assert.Contains(t, out, "0    mlx5_0       PXB       yes")

	code, out, stderr = runCLI("parse", "topo", "--json", filepath.Join("testdata", "topo-E01-tab-8gpu-10nic.txt"))
	require.Equal(t, ExitOK, code, stderr)
	var m nvml.Matrix
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Len(t, m.Endpoints, 18)
	assert.Equal(t, nvml.Link("NV12"), m.Links[0][1])

	bad := filepath.Join(t.TempDir(), "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("Failed to initialize NVML: Driver/library version mismatch\n"), 0o644))
	code, _, stderr = runCLI("parse", "topo", bad)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "no nvidia-smi topo -m matrix found")
}
