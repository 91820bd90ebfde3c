package ncclog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassifyLaunchSamples(t *testing.T) {
	tests := []struct {
		file     string
		kind     FailureKind
		rank     int
		host     string
		exit     int
		signal   int
		summary  string
		fixWords string
	}{
		{"F01_openmpi4_mpirun_process_exited_nonzero_status.txt", FailRankExit, 6, "", 3, 0, "rank 6 exited with code 3", "NCCL_DEBUG=INFO"},
		{"F02_openmpi4_run_as_root_refusal_env_var_wording.txt", FailRunAsRoot, -1, "", 0, 0, "refused to run as root", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"},
		{"F05_openmpi4_not_enough_slots_available.txt", FailSlots, -1, "", 0, 0, "not enough slots for the 2 ranks", "--oversubscribe"},
		{"F06_openmpi4_orte_unable_to_reliably_start_daemons.txt", FailDaemons, -1, "", 0, 0, "daemons", "passwordless ssh"},
		{"G01_openmpi4.1.4_rank_killed_by_signal.txt", FailRankSignal, 1, "vm", 0, 9, "rank 1 on vm was killed by signal 9", "erdmakit doctor"},
		{"G02_openmpi4.1.4_executable_not_found.txt", FailExecutable, -1, "vm", 0, 0, "./build/all_reduce_perf", "make MPI=1"},
		{"G03_openmpi4.1.4_ssh_could_not_resolve_daemons.txt", FailDaemons, -1, "", 0, 0, "daemons", "does not resolve"},
		{"G04_openmpi4.1.4_rank_exit_code_3.txt", FailRankExit, 1, "", 3, 0, "rank 1 exited with code 3", "NCCL WARN"},
		{"H02_slurm23_srun_execve_not_found.txt", FailExecutable, -1, "localhost", 0, 0,
			"srun could not execute /opt/nccl-tests/build/all_reduce_perf: No such file or directory", "--binary"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			defer f.Close()
			got, err := ClassifyLaunch(context.Background(), f)
			require.NoError(t, err)
			require.Len(t, got, 1, "%+v", got)
			g := got[0]
			assert.Equal(t, tt.kind, g.Kind)
			assert.Equal(t, tt.rank, g.Rank)
			assert.Equal(t, tt.host, g.Host)
			assert.Equal(t, tt.exit, g.ExitCode)
			assert.Equal(t, tt.signal, g.Signal)
			assert.Contains(t, g.Summary, tt.summary)
			assert.Contains(t, g.Fix, tt.fixWords)
			assert.NotEmpty(t, g.Evidence)
			fd := g.Finding()
			assert.Equal(t, "launch-"+string(tt.kind), fd.ID)
		})
	}
}

// TestClassifySrunExecveEitherOrder: srun's task exit and slurmstepd's
// execve error come on two streams, in either order; both orders are the one
// executable failure (the real output of TestNCCLRunSrunExecutableNotFound,
// recorded in H02, showed both).
func TestClassifySrunExecveEitherOrder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "H02_slurm23_srun_execve_not_found.txt"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	for _, order := range [][]string{lines, {lines[1], lines[0]}} {
		got, err := ClassifyLaunch(context.Background(), strings.NewReader(strings.Join(order, "\n")))
		require.NoError(t, err)
		require.Len(t, got, 1, "%+v", got)
		assert.Equal(t, FailExecutable, got[0].Kind)
		assert.Equal(t, "localhost", got[0].Host)
		assert.Len(t, got[0].Evidence, 2)
	}
}

func TestClassifyLaunchNamesTheHost(t *testing.T) {
	log := strings.Join([]string{
		"#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3",
		"#  Rank  6 Group  0 Pid   6905 on ztan-mig-gq73 device  6 [0000:8b:00] NVIDIA H100 80GB HBM3",
		"mpirun detected that one or more processes exited with non-zero status, thus causing",
		"  Process name: [[56171,1],6]",
		"  Exit code:    3",
	}, "\n")
	got, err := ClassifyLaunch(context.Background(), strings.NewReader(log))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "ztan-mig-gq73", got[0].Host)
	assert.Equal(t, "rank 6 on ztan-mig-gq73 exited with code 3", got[0].Summary)

	// Without the header the command's layout names it (nccl.Command's
	// HostOfRank: 8 ranks per host).
	hostOfRank := func(rank int) string { return fmt.Sprintf("host%d", rank/8+1) }
	c := LaunchClassifier{HostOfRank: hostOfRank}
	for _, l := range strings.Split(log, "\n")[2:] {
		c.Line(l)
	}
	assert.Equal(t, "host1", c.Failures()[0].Host)

	// The header read after the rank's block (stdout and stderr are read
	// apart) still names the host.
	c = LaunchClassifier{HostOfRank: hostOfRank}
	lines := strings.Split(log, "\n")
	for _, l := range append(lines[2:], lines[:2]...) {
		c.Line(l)
	}
	assert.Equal(t, "rank 6 on ztan-mig-gq73 exited with code 3", c.Failures()[0].Summary)
}

// mpirun (4.1.4) sometimes prints only the abort banner, not the block
// naming the rank (when the other ranks had already exited 0): still a
// rank-exited failure, without a rank; with the block, one failure only.
func TestClassifyLaunchAbortBannerOnly(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "G04_openmpi4.1.4_rank_exit_code_3.txt"))
	require.NoError(t, err)
	lines := strings.Split(string(raw), "\n")
	banner := strings.Join(lines[:5], "\n") // source, dashes, the two banner lines, dashes
	require.Contains(t, banner, "Primary job  terminated normally")
	got, err := ClassifyLaunch(context.Background(), strings.NewReader(banner))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, FailRankExit, got[0].Kind)
	assert.Equal(t, -1, got[0].Rank)
	assert.Contains(t, got[0].Summary, "mpirun did not say which")
	assert.Equal(t, "launch-rank-exited", got[0].Finding().ID)

	got, err = ClassifyLaunch(context.Background(), strings.NewReader(string(raw)))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].Rank)
}

func TestClassifyLaunchSrunAndSSH(t *testing.T) {
	tests := []struct {
		line string
		kind FailureKind
		rank int
		host string
		fix  string
	}{
		{"srun: error: gpu-7: task 3: Exited with exit code 2", FailRankExit, 3, "gpu-7", "NCCL WARN"},
		{"srun: error: gpu-7: tasks 8-15: Killed", FailRankSignal, 8, "gpu-7", "doctor"},
		{"srun: error: Unable to allocate resources: Invalid node name specified", FailAllocation, -1, "", "sinfo"},
		{"Host key verification failed.", FailDaemons, -1, "", "ssh-keyscan"},
		{"prterun noticed that process rank 5 with PID 77 on node gpu-2 exited on signal 11 (Segmentation fault).", FailRankSignal, 5, "gpu-2", "doctor"},
		{"prterun has detected an attempt to run as root.", FailRunAsRoot, -1, "", "--allow-run-as-root"},
		{"root@10.0.0.2: Permission denied (publickey,password).", FailDaemons, -1, "", "ssh-copy-id"},
		{"bash: orted: command not found", FailDaemons, -1, "", "--prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, err := ClassifyLaunch(context.Background(), strings.NewReader(tt.line+"\n"))
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tt.kind, got[0].Kind)
			assert.Equal(t, tt.rank, got[0].Rank)
			assert.Equal(t, tt.host, got[0].Host)
			assert.Contains(t, got[0].Fix, tt.fix)
		})
	}
}

func TestClassifyLaunchCleanRun(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt"))
	require.NoError(t, err)
	defer f.Close()
	got, err := ClassifyLaunch(context.Background(), f)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func FuzzClassifyLaunch(f *testing.F) {
	files, _ := filepath.Glob("testdata/[FG]*.txt")
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("Process name: [[1,1],-5]\nmpirun detected that one or more processes exited with non-zero status\nProcess name: [[\nExit code: x\nsrun: error: a: task : Exited with exit code\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ClassifyLaunch(context.Background(), strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for _, g := range got {
			if g.Kind == "" || g.Summary == "" || g.Fix == "" || len(g.Evidence) > maxEvidence {
				t.Fatalf("bad failure %+v", g)
			}
		}
	})
}

// TestClassifierWantsEveryLineItActsOn: skipping the lines wants rejects
// changes nothing on the samples.
func TestClassifierWantsEveryLineItActsOn(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var all, filtered LaunchClassifier
		for _, l := range strings.Split(string(b), "\n") {
			all.Line(l)
			if filtered.Wants([]byte(l)) {
				filtered.Line(l)
			}
		}
		assert.Equal(t, all.Failures(), filtered.Failures(), p)
	}
}
