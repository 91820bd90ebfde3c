package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

func TestNCCLRunDryRunIsTheGuideLine(t *testing.T) {
	code, out, _ := runCLI("nccl", "run", "--hosts", "host1:8,host2:8", "--dry-run")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "mpirun --allow-run-as-root -np 16 -npernode 8 -H host1:8,host2:8 --bind-to none --tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 "+
		"-x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20\n", out)

	code, out, _ = runCLI("nccl", "run", "--launcher", "srun", "--hosts", "a,b", "-x", "NCCL_IB_HCA=erdma_0,erdma_1", "--dry-run", "--", "-b", "1G", "-e", "1G")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "srun --nodes 2 --ntasks-per-node 8 --mpi=pmix --nodelist a,b --export=ALL,NCCL_SOCKET_IFNAME=eth0,NCCL_DEBUG=INFO ./build/all_reduce_perf -b 1G -e 1G\n")
	assert.Contains(t, out, "NCCL_IB_HCA=erdma_0,erdma_1")

	code, _, errs := runCLI("nccl", "run", "--dry-run")
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, errs, "needs hosts or a hostfile")
}

func TestNCCLRunLauncherMissing(t *testing.T) {
	code, _, errs := runCLI("nccl", "run", "--launcher", "srun", "--hosts", "a")
	if _, err := exec.LookPath("srun"); err == nil {
		t.Skip("srun is installed here")
	}
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, errs, "srun")
}

// TestNCCLRunWithMPIRun runs the CLI end to end with the real mpirun and the
// stand-in all_reduce_perf.
func TestNCCLRunWithMPIRun(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mpirun is required under CI (Debian openmpi-bin): %v", err)
		}
		t.Skip("mpirun not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "all_reduce_perf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/erdmakit/erdmakit/nccl/internal/fakenccltests").CombinedOutput()
	require.NoError(t, err, "%s", out)
	sample, err := filepath.Abs("../../nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")
	require.NoError(t, err)
	base := []string{"nccl", "run", "--hosts", "localhost:2", "--ranks-per-host", "2", "--oversubscribe", "--socket-ifname", "",
		"--binary", bin, "-x", "FAKE_NCCL_SAMPLE=" + sample}
	if os.Geteuid() != 0 {
		base = append(base, "--no-allow-run-as-root")
	}

	t.Run("below the expectation: exit 1, JSON, plot, log", func(t *testing.T) {
		svg, raw := filepath.Join(dir, "busbw.svg"), filepath.Join(dir, "raw.log")
		code, out, errs := runCLI(append(base, "--json", "--expect-busbw", "400", "--plot", svg, "--log", raw)...)
		require.Equal(t, ExitWarn, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		var rep struct {
			Collective string           `json:"collective"`
			Rows       []any            `json:"rows"`
			OK         bool             `json:"ok"`
			Argv       []string         `json:"argv"`
			Status     string           `json:"status"`
			Findings   []health.Finding `json:"findings"`
			NCCL       *struct {
				Network string `json:"network"`
			} `json:"nccl"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		assert.Len(t, rep.Rows, 31)
		assert.True(t, rep.OK)
		assert.Equal(t, "warn", rep.Status)
		assert.Equal(t, "mpirun", filepath.Base(rep.Argv[0]))
		var busbw *health.Finding
		for i := range rep.Findings {
			if rep.Findings[i].ID == "nccl-busbw" {
				busbw = &rep.Findings[i]
			}
		}
		require.NotNil(t, busbw, "%+v", rep.Findings)
		assert.Contains(t, busbw.Summary, "338.82 GB/s at 8 GiB is below the expected 400.00 GB/s")
		b, err := os.ReadFile(svg)
		require.NoError(t, err)
		assert.Contains(t, string(b), "<svg")
		b, err = os.ReadFile(raw)
		require.NoError(t, err)
		assert.Contains(t, string(b), "# Avg bus bandwidth")
	})

	t.Run("meets the expectation: exit 0, table", func(t *testing.T) {
		code, out, errs := runCLI(append(base, "--expect-busbw", "300")...)
		require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		assert.Contains(t, out, "BUSBW")
		assert.Contains(t, out, "338.82")
		assert.Contains(t, out, "nccl-busbw")
		assert.Contains(t, out, "status: ok")
	})

	t.Run("without --expect-busbw the instance type's: half its RDMA write rate", func(t *testing.T) {
		root, err := filepath.Abs("../../testdata/hosts/gn8is-single.tar.gz") // ecs.gn8is-2x.8xlarge: 25 Gbit/s
		require.NoError(t, err)
		code, out, errs := runCLI(append(base, "--root", root, "--json")...)
		require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		var rep struct {
			ExpectBusBWGBs float64          `json:"expect_busbw_gbs"`
			Findings       []health.Finding `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		assert.Equal(t, 25.0/8/2, rep.ExpectBusBWGBs)
		var busbw *health.Finding
		for i := range rep.Findings {
			if rep.Findings[i].ID == "nccl-busbw" {
				busbw = &rep.Findings[i]
			}
		}
		require.NotNil(t, busbw, "%+v", rep.Findings)
		assert.Equal(t, health.OK, busbw.Severity)
		assert.Contains(t, busbw.Summary, "meets the expected 1.56 GB/s")
		assert.Contains(t, strings.Join(busbw.Evidence, "\n"), "half the gn8is-2x profile's RDMA write rate (25 Gbit/s")
	})

	t.Run("a failing rank: exit 2", func(t *testing.T) {
		code, out, errs := runCLI(append(base, "-x", "FAKE_NCCL_FAIL_RANK=1")...)
		require.Equal(t, ExitFail, code, "stdout:\n%s\nstderr:\n%s", out, errs)
		assert.Contains(t, out, "launch-rank-exited")
		// The findings print as the doctor's do (one printer, report.WriteFindingsTable).
		assert.Contains(t, out, "RESULT  CHECK")
		assert.Regexp(t, `\nfail launch-rank-exited: .*\n    read: `, out)
		// The replayed header says rank 1 ran on the recorded host.
		assert.Contains(t, out, "rank 1 on ztan-mig-235z exited with code 3")
	})

	t.Run("timeout ends every rank: exit 3", func(t *testing.T) {
		start := time.Now()
		code, _, errs := runCLI(append(base, "-x", "FAKE_NCCL_HANG=1", "--timeout", "3s")...)
		assert.Equal(t, ExitUnknown, code, errs)
		assert.Contains(t, errs, "cancelled")
		assert.Less(t, time.Since(start), 30*time.Second)
	})
}

func TestNCCLEnvFromInventoryFile(t *testing.T) {
	inv := erdma.Inventory{
		Devices: []erdma.Device{{Name: "erdma_0", ERDMA: true, Transport: erdma.TransportRoCE, Netdev: "eth1",
			Ports: []erdma.Port{{Number: 1, State: "ACTIVE", StateCode: 4, RecommendedGIDIndex: 1}}}},
		Netdevs: []erdma.Netdev{{Name: "eth0", OperState: "up", IPv4: []string{"10.0.0.2/24"}},
			{Name: "eth1", OperState: "up", IPv4: []string{"10.0.1.2/24"}}},
		Modules: []erdma.Module{{Name: "nvidia_peermem", Loaded: true}},
		Memlock: &erdma.Limit{Unlimited: true},
	}
	b, err := json.Marshal(inv)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "inv.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	root := t.TempDir()

	code, out, errs := runCLI("--root", root, "nccl", "env", "--inventory", p)
	require.Equal(t, ExitOK, code, errs)
	assert.Contains(t, out, "export NCCL_SOCKET_IFNAME=eth0\n")
	assert.Contains(t, out, "export NCCL_IB_HCA==erdma_0:1\n")
	assert.Contains(t, out, "export NCCL_IB_GID_INDEX=1\n")
	assert.Contains(t, out, "export NCCL_NET_GDR_LEVEL=SYS\n")

	code, out, _ = runCLI("--root", root, "nccl", "env", "--inventory", p, "--format", "mpirun", "--gdr", "off")
	require.Equal(t, ExitOK, code)
	assert.Equal(t, "-x NCCL_SOCKET_IFNAME=eth0 -x NCCL_IB_HCA==erdma_0:1 -x NCCL_IB_GID_INDEX=1\n", out)

	code, out, _ = runCLI("--root", root, "nccl", "env", "--inventory", p, "--json", "--nccl-version", "2.28.7")
	require.Equal(t, ExitWarn, code)
	var a struct {
		Vars     []struct{ Name, Value, Reason string } `json:"vars"`
		Warnings []string                               `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	assert.Len(t, a.Vars, 4)
	require.Len(t, a.Warnings, 1)
	assert.True(t, strings.Contains(a.Warnings[0], "2.28.7"))

	code, _, errs = runCLI("nccl", "env", "--inventory", filepath.Join(root, "missing.json"))
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, errs, "missing.json")
	code, _, _ = runCLI("nccl", "env", "--inventory", p, "--gdr", "maybe")
	assert.Equal(t, ExitUnknown, code)
}

// TestNCCLEnvFromRecordedHosts reads recorded hosts through --root.
func TestNCCLEnvFromRecordedHosts(t *testing.T) {
	tests := []struct {
		host    string
		code    int
		want    []string
		warning string
	}{
		{"ebmgn8is-healthy", ExitOK, []string{"export NCCL_IB_HCA=", "export NCCL_SOCKET_IFNAME=eth0"}, ""},
		{"memlock-64k", ExitWarn, []string{"export NCCL_IB_HCA="}, "locked-memory limit"},
		{"no-erdma-driver", ExitWarn, []string{"export NCCL_SOCKET_IFNAME="}, "no eRDMA device"},
		{"iwarp-mode", ExitWarn, nil, "iWARP"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			code, out, errs := runCLI("--root", hostDir(tt.host), "nccl", "env")
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
			if tt.warning != "" {
				assert.Contains(t, out, "# WARNING: ")
				assert.Contains(t, out, tt.warning)
			}
		})
	}
}
