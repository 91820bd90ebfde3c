package nccl

import (
	"cmp"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/slurmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWithSrunDefaultPMIxOnDebianSlurm: srun's default --mpi=pmix fails
// on a stock Debian Slurm (libpmix2 without libpmix-dev's libpmix.so) and
// works where the machine has PMIx: the test asks srun which this machine
// is. Where it fails, and always for a plugin no Slurm has (pmix_v99), the
// run's report names it, with the fix; --srun-mpi pmi2 or none runs. A real
// slurmctld/slurmd with munge.
func TestRunWithSrunDefaultPMIxOnDebianSlurm(t *testing.T) {
	slurmtest.Start(t)
	pmix, srunSaid := slurmtest.SrunMPIWorks(t, "pmix")
	t.Logf("srun --mpi=pmix works on this machine: %v %s", pmix, srunSaid)
	bin := fakeNCCLTests(t)
	c := Command{
		Launcher:     LauncherSrun,
		Hosts:        []Host{{Name: "localhost"}},
		RanksPerHost: 1,
		Binary:       bin,
		TestArgs:     []string{"-b", "4M", "-e", "4M", "-f", "2", "-g", "1"},
		Env: []Var{{Name: "FAKE_NCCL_SAMPLE",
			Value: sample(t, "B09_nccl_tests_alltoall_single_gpu_step_bytes_inplace_wrong_NA_avg_busbw_0.txt")}},
	}
	run := func(mpi string) (*RunResult, *RunReport) {
		t.Helper()
		c.SrunMPI = mpi
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := Run(ctx, c, RunOptions{})
		require.NoError(t, err)
		return res, NewRunReport(res, Expectation{})
	}
	fails := func(mpi string) {
		t.Helper()
		res, rep := run(mpi)
		assert.Contains(t, res.Argv, "--mpi="+cmp.Or(mpi, "pmix"))
		assert.NotEqual(t, 0, res.ExitCode)
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.ID)
			if f.ID == "launch-srun-mpi-type" {
				assert.Contains(t, f.Remediation, "srun --mpi=list")
				assert.Contains(t, f.Remediation, "--srun-mpi pmi2")
			}
		}
		require.Contains(t, got, "launch-srun-mpi-type", "%s: %+v", mpi, rep.Findings)
		assert.NotContains(t, got, "launch-exit-status")
	}

	works := []string{"pmi2", "none"}
	fails("pmix_v99")
	if pmix {
		works = append(works, "")
	} else {
		fails("") // srun's default here: pmix
	}
	for _, mpi := range works {
		res, rep := run(mpi)
		assert.Equal(t, 0, res.ExitCode, mpi)
		assert.Contains(t, res.Argv, "--mpi="+cmp.Or(mpi, "pmix"))
		assert.Empty(t, res.Failures, mpi)
		require.NotNil(t, res.Result, mpi)
		assert.NotEmpty(t, res.Result.Rows, mpi)
		for _, f := range rep.Findings {
			assert.NotEqual(t, "launch-srun-mpi-type", f.ID, mpi)
		}
	}
}

// TestSrunGivesErdmakitsValuesOverTheCallersEnv: issue 54 item 5. With
// --export=ALL,NAME=VAL a variable already set in srun's own environment
// wins (srun(1), --export): a stale NCCL_IB_HCA in the user's shell
// silently replaced erdmakit's. The values are now also put in srun's own
// environment, so they arrive; the caller's conflicting value is warned
// about. A real slurmctld/slurmd with munge.
func TestSrunGivesErdmakitsValuesOverTheCallersEnv(t *testing.T) {
	slurmtest.Start(t)
	t.Setenv("NCCL_IB_HCA", "mlx5_stale")
	t.Setenv("NCCL_DEBUG", "WARN")
	bin := fakeNCCLTests(t)
	c := Command{
		Launcher:     LauncherSrun,
		SrunMPI:      "none",
		Hosts:        []Host{{Name: "localhost"}},
		RanksPerHost: 1,
		Binary:       bin,
		TestArgs:     []string{"-b", "4M", "-e", "4M", "-f", "2", "-g", "1"},
		Env: []Var{{Name: "FAKE_NCCL_SAMPLE", Value: sample(t, "B09_nccl_tests_alltoall_single_gpu_step_bytes_inplace_wrong_NA_avg_busbw_0.txt")},
			{Name: "NCCL_IB_HCA", Value: "=erdma_0:1"}, {Name: "NCCL_DEBUG", Value: "INFO"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lines []string
	res, err := Run(ctx, c, RunOptions{OnLine: func(l string) { lines = append(lines, l) }})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", strings.Join(lines, "\n"))
	out := strings.Join(lines, "\n")
	assert.Contains(t, out, "env NCCL_IB_HCA==erdma_0:1", "erdmakit's value arrives")
	assert.NotContains(t, out, "mlx5_stale")
	assert.Contains(t, out, "env NCCL_DEBUG=INFO")
	w := c.EnvConflicts(os.Environ())
	require.Len(t, w, 2, "%q", w)
	assert.Contains(t, w[0], "NCCL_IB_HCA=mlx5_stale")
	assert.Contains(t, w[0], "=erdma_0:1")
	assert.Contains(t, w[1], "NCCL_DEBUG=WARN")
	assert.Equal(t, w, res.Warnings)
	assert.Equal(t, w, NewRunReport(res, Expectation{}).EnvWarnings, "nccl run --json and fleet prove's NCCL stage carry them")
}
