package nccl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needMPIRun returns mpirun's path; under CI=true a missing mpirun fails
// the test, elsewhere it skips it.
func needMPIRun(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mpirun is required under CI (Debian openmpi-bin): %v", err)
		}
		t.Skip("mpirun not installed (Debian openmpi-bin)")
	}
	return p
}

// fakeNCCLTests builds the stand-in all_reduce_perf into a fresh directory.
func fakeNCCLTests(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "all_reduce_perf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/fakenccltests").CombinedOutput()
	require.NoError(t, err, "building the stand-in: %s", out)
	return bin
}

func sample(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	return p
}

// localCommand runs ranks stand-in ranks on this host, as root.
func localCommand(bin string, ranks int) Command {
	return Command{
		Launcher:       LauncherMPIRun,
		Hosts:          []Host{{Name: "localhost", Slots: ranks}},
		RanksPerHost:   ranks,
		AllowRunAsRoot: os.Geteuid() == 0,
		Oversubscribe:  true,
		Binary:         bin,
		TestArgs:       []string{"-b", "4M", "-e", "4M", "-f", "2", "-g", "1"},
	}
}

func TestRunWithMPIRunStreamsRowsAndPropagatesEnv(t *testing.T) {
	needMPIRun(t)
	bin := fakeNCCLTests(t)
	c := localCommand(bin, 3)
	c.Env = []Var{
		{Name: "NCCL_IB_HCA", Value: "erdma_0,erdma_1"},
		{Name: "NCCL_DEBUG", Value: "INFO"},
		{Name: "FAKE_NCCL_SAMPLE", Value: sample(t, "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")},
		{Name: "FAKE_NCCL_ROW_DELAY", Value: "15ms"},
	}
	c.Forward = []string{"FAKE_FORWARDED"}

	var mu sync.Mutex
	var rowTimes []time.Time
	var rows []Row
	var lines []string
	logPath := filepath.Join(t.TempDir(), "raw.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, c, RunOptions{
		Env: []string{"FAKE_FORWARDED=from-the-launcher"},
		Log: logFile,
		OnRow: func(r Row) {
			mu.Lock()
			defer mu.Unlock()
			rows = append(rows, r)
			rowTimes = append(rowTimes, time.Now())
		},
		OnLine: func(l string) { lines = append(lines, l) },
	})
	require.NoError(t, err)
	end := time.Now()
	all := strings.Join(lines, "\n")
	require.Equal(t, 0, res.ExitCode, "output:\n%s", all)
	assert.Empty(t, res.Failures)

	for r := 0; r < 3; r++ {
		for _, kv := range []string{"NCCL_IB_HCA=erdma_0,erdma_1", "NCCL_DEBUG=INFO", "FAKE_FORWARDED=from-the-launcher"} {
			assert.Contains(t, all, "fakenccltests: rank "+string(rune('0'+r))+" env "+kv)
		}
	}
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Equal(t, int64(strings.Count(string(raw), "\n")), res.Lines)

	require.NotNil(t, res.Result)
	assert.Len(t, res.Result.Rows, 31)
	require.Len(t, rows, 31, "rows seen live")
	assert.Equal(t, int64(8589934592), rows[30].Size)
	// Rows arrived as they were printed, not at the end: 31 rows 15 ms
	// apart span ~450 ms.
	assert.Greater(t, end.Sub(rowTimes[0]), 200*time.Millisecond, "first row only seen at the end")
	assert.True(t, res.Result.OK)
}

func TestRunWithMPIRunFailingRankIsClassified(t *testing.T) {
	needMPIRun(t)
	bin := fakeNCCLTests(t)
	c := localCommand(bin, 2)
	// mpirun 4.1 names the rank in a block after its abort banner, but
	// not always (under load it printed only the banner: rank -1, "mpirun
	// did not say which"). With --tag-output, DefaultCommand's, the rank
	// whose output holds the failure is named either way
	// (TestStreamNamesTheRankBehindTheAbortBanner feeds the banner alone).
	c.TagOutput = true
	c.Env = []Var{
		{Name: "FAKE_NCCL_SAMPLE", Value: sample(t, "B09_nccl_tests_alltoall_single_gpu_step_bytes_inplace_wrong_NA_avg_busbw_0.txt")},
		{Name: "FAKE_NCCL_FAIL_RANK", Value: "1"},
		{Name: "FAKE_NCCL_FAIL_CODE", Value: "3"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, c, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
	var got *LaunchFailure
	for i := range res.Failures {
		if res.Failures[i].Kind == ncclog.FailRankExit {
			got = &res.Failures[i]
		}
	}
	require.NotNil(t, got, "%+v", res.Failures)
	assert.Equal(t, 1, got.Rank)
	assert.Equal(t, "localhost", got.Host)
	assert.Equal(t, 3, got.ExitCode)
	assert.Equal(t, "rank 1 on localhost exited with code 3", got.Summary)
	require.NotNil(t, res.Result)
	assert.False(t, res.Result.OK)
	assert.NotEmpty(t, res.Result.Failures, "the Test NCCL failure line")
}

func TestRunWithMPIRunSlotsAndOversubscribe(t *testing.T) {
	needMPIRun(t)
	bin := fakeNCCLTests(t)
	c := localCommand(bin, 1)
	c.NP = 3
	c.RanksPerHost = 0
	c.Oversubscribe = false
	c.Env = []Var{{Name: "FAKE_NCCL_SAMPLE", Value: sample(t, "B09_nccl_tests_alltoall_single_gpu_step_bytes_inplace_wrong_NA_avg_busbw_0.txt")}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, err := Run(ctx, c, RunOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode)
	require.NotEmpty(t, res.Failures)
	assert.Equal(t, ncclog.FailSlots, res.Failures[0].Kind)
	assert.Contains(t, res.Failures[0].Fix, "--oversubscribe")

	c.Oversubscribe = true
	res, err = Run(ctx, c, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "%+v", res.Failures)
	assert.Empty(t, res.Failures)
}

func TestRunWithMPIRunAsRootRefusalIsClassified(t *testing.T) {
	needMPIRun(t)
	if os.Geteuid() != 0 {
		t.Skip("the refusal only happens as root")
	}
	c := localCommand("/bin/true", 1)
	c.AllowRunAsRoot = false
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, c, RunOptions{Env: []string{"OMPI_ALLOW_RUN_AS_ROOT=", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="}})
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode)
	require.Len(t, res.Failures, 1)
	assert.Equal(t, ncclog.FailRunAsRoot, res.Failures[0].Kind)
}

func TestRunWithMPIRunCancelLeavesNoProcess(t *testing.T) {
	needMPIRun(t)
	bin := fakeNCCLTests(t)
	for _, hang := range []string{"1", "ignore-term"} {
		t.Run("FAKE_NCCL_HANG="+hang, func(t *testing.T) {
			c := localCommand(bin, 3)
			c.Env = []Var{{Name: "FAKE_NCCL_HANG", Value: hang}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			hanging := 0
			start := time.Now()
			res, err := Run(ctx, c, RunOptions{OnLine: func(l string) {
				if strings.Contains(l, " hanging") {
					if hanging++; hanging == 3 {
						assert.Len(t, helperProcesses(t, bin), 3, "all ranks started")
						cancel()
					}
				}
			}})
			require.ErrorIs(t, err, ErrCancelled)
			require.ErrorIs(t, err, context.Canceled)
			assert.True(t, res.Cancelled)
			assert.Less(t, time.Since(start), time.Minute)
			assert.Equal(t, 3, hanging)
			assert.Empty(t, helperProcesses(t, bin), "ranks left behind after cancel")
		})
	}
}

// helperProcesses lists the pids whose executable is bin.
func helperProcesses(t *testing.T, bin string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && exe == bin {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestRunArgvLauncherMissing(t *testing.T) {
	_, err := RunArgv(context.Background(), []string{"/nonexistent/mpirun", "-np", "1"}, RunOptions{})
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = RunArgv(context.Background(), nil, RunOptions{})
	assert.ErrorIs(t, err, ErrBadCommand)
}
