package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/slurmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNCCLRunSrunMPIType: `nccl run --launcher srun` (a real single-node
// slurmctld/slurmd with munge) with an MPI plugin srun cannot use fails; the
// CLI names launch-srun-mpi-type and its fix, and --srun-mpi pmi2 runs.
// srun's default --mpi=pmix is such a plugin on a stock Debian Slurm
// (libpmix2 without libpmix-dev) and runs where the machine has PMIx: the
// test asks srun which this machine is; pmix_v99 fails everywhere.
func TestNCCLRunSrunMPIType(t *testing.T) {
	slurmtest.Start(t)
	pmix, srunSaid := slurmtest.SrunMPIWorks(t, "pmix")
	t.Logf("srun --mpi=pmix works on this machine: %v %s", pmix, srunSaid)
	bin := filepath.Join(t.TempDir(), "all_reduce_perf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/erdmakit/erdmakit/nccl/internal/fakenccltests").CombinedOutput()
	require.NoError(t, err, "%s", out)
	sample, err := filepath.Abs("../../nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")
	require.NoError(t, err)
	base := []string{"nccl", "run", "--launcher", "srun", "--hosts", "localhost", "--ranks-per-host", "1",
		"--socket-ifname", "", "--binary", bin, "-x", "FAKE_NCCL_SAMPLE=" + sample, "--timeout", "1m", "--json"}

	fails := func(args ...string) {
		t.Helper()
		code, stdout, errs := runCLI(append(base, args...)...)
		require.Equal(t, ExitFail, code, "%v stdout:\n%s\nstderr:\n%s", args, stdout, errs)
		var rep struct {
			Findings []struct {
				ID          string `json:"id"`
				Remediation string `json:"remediation"`
			} `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
		var ids []string
		for _, f := range rep.Findings {
			ids = append(ids, f.ID)
			if f.ID == "launch-srun-mpi-type" {
				assert.Contains(t, f.Remediation, "srun --mpi=list")
				assert.Contains(t, f.Remediation, "--srun-mpi pmi2")
			}
		}
		require.Contains(t, ids, "launch-srun-mpi-type", stdout)
	}
	runs := func(args ...string) {
		t.Helper()
		code, stdout, errs := runCLI(append(base, args...)...)
		assert.Less(t, code, ExitFail, "%v stdout:\n%s\nstderr:\n%s", args, stdout, errs)
		assert.NotContains(t, stdout, "launch-srun-mpi-type")
	}

	fails("--srun-mpi", "pmix_v99")
	if pmix {
		runs()
	} else {
		fails()
	}
	runs("--srun-mpi", "pmi2")
}

// TestNCCLRunSrunExecutableNotFound: with nccl-tests missing, slurmstepd
// says `execve(): PATH: No such file or directory` and srun reports the task
// exited with code 2. That is launch-executable-not-found, as mpirun's same
// case is, not a rank that failed (hardening-3 item 18).
func TestNCCLRunSrunExecutableNotFound(t *testing.T) {
	slurmtest.Start(t)
	missing := filepath.Join(t.TempDir(), "build", "all_reduce_perf")
	code, stdout, errs := runCLI("nccl", "run", "--launcher", "srun", "--srun-mpi", "pmi2", "--hosts", "localhost",
		"--ranks-per-host", "1", "--socket-ifname", "", "--binary", missing, "--timeout", "1m", "--json")
	require.Equal(t, ExitFail, code, "stdout:\n%s\nstderr:\n%s", stdout, errs)
	var rep struct {
		Findings []struct {
			ID          string   `json:"id"`
			Summary     string   `json:"summary"`
			Evidence    []string `json:"evidence"`
			Remediation string   `json:"remediation"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	var ids []string
	for _, f := range rep.Findings {
		ids = append(ids, f.ID)
		if f.ID == "launch-executable-not-found" {
			assert.Contains(t, f.Summary, missing)
			assert.Contains(t, f.Remediation, "--binary")
			assert.Contains(t, strings.Join(f.Evidence, "\n"), "execve()")
		}
	}
	assert.Contains(t, ids, "launch-executable-not-found", stdout)
	assert.NotContains(t, ids, "launch-rank-exited", "the task's exit is the missing executable's consequence")
}
