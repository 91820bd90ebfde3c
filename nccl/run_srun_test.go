package nccl

import (
	"context"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/slurmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWithSrunDefaultPMIxOnDebianSlurm: srun's default --mpi=pmix fails
// on a stock Debian Slurm (no libpmix); the run's report names it, with the
// fix, and --srun-mpi pmi2 or none runs. A real slurmctld/slurmd with munge.
func TestRunWithSrunDefaultPMIxOnDebianSlurm(t *testing.T) {
	slurmtest.Start(t)
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

	res, rep := run("")
	assert.Contains(t, res.Argv, "--mpi=pmix")
	assert.NotEqual(t, 0, res.ExitCode)
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.ID)
		if f.ID == "launch-srun-mpi-type" {
			assert.Contains(t, f.Remediation, "srun --mpi=list")
			assert.Contains(t, f.Remediation, "--srun-mpi pmi2")
		}
	}
	require.Contains(t, got, "launch-srun-mpi-type", "%+v", rep.Findings)
	assert.NotContains(t, got, "launch-exit-status")

	for _, mpi := range []string{"pmi2", "none"} {
		res, rep := run(mpi)
		assert.Equal(t, 0, res.ExitCode, mpi)
		assert.Contains(t, res.Argv, "--mpi="+mpi)
		assert.Empty(t, res.Failures, mpi)
		require.NotNil(t, res.Result, mpi)
		assert.NotEmpty(t, res.Result.Rows, mpi)
		for _, f := range rep.Findings {
			assert.NotEqual(t, "launch-srun-mpi-type", f.ID, mpi)
		}
	}
}
