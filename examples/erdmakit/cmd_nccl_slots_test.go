package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/nccl"
)

// TestNCCLRunHostSlotsWin: --hosts localhost:2 without --ranks-per-host
// built -np 8 -npernode 8 -H localhost:2 and the real mpirun refused it
// ("not enough slots"); the slots given per host win over the default.
func TestNCCLRunHostSlotsWin(t *testing.T) {
	requireMPIRun(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "all_reduce_perf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/erdmakit/erdmakit/nccl/internal/fakenccltests").CombinedOutput()
	require.NoError(t, err, "%s", out)
	sample, err := filepath.Abs("../../nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")
	require.NoError(t, err)
	args := []string{"nccl", "run", "--hosts", "localhost:2", "--socket-ifname", "", "--binary", bin, "-x", "FAKE_NCCL_SAMPLE=" + sample}
	if os.Geteuid() != 0 {
		args = append(args, "--no-allow-run-as-root")
	}
	code, stdout, stderr := runCLI(args...)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.NotContains(t, stdout, "not enough slots")

	code, stdout, _ = runCLI(append(args, "--dry-run")...)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, stdout, " -np 2 -npernode 2 -H localhost:2 ")
	code, stdout, _ = runCLI(append(args, "--dry-run", "--ranks-per-host", "1")...)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, stdout, " -np 1 -npernode 1 -H localhost:2 ")
}

func TestCommandSlotsPerHost(t *testing.T) {
	c := nccl.DefaultCommand()
	c.Hosts = []nccl.Host{{Name: "a", Slots: 4}, {Name: "b", Slots: 2}}
	c.UseHostSlots()
	assert.Equal(t, 0, c.RanksPerHost)
	assert.Equal(t, 6, c.Ranks())
	assert.Equal(t, "a", c.HostOfRank(3))
	assert.Equal(t, "b", c.HostOfRank(4))
	assert.Equal(t, "", c.HostOfRank(6))
	argv, err := c.Argv()
	require.NoError(t, err)
	assert.Contains(t, argv, "-np")
	assert.NotContains(t, argv, "-npernode")
}
