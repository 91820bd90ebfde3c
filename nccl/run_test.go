package nccl

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunCancelSweepsRanksInOtherGroups: a rank that left the launcher's
// process group (as Open MPI's local ranks do) and a launcher that dies
// without ending it must still leave nothing behind after cancel.
func TestRunCancelSweepsRanksInOtherGroups(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) not installed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var rank int
	// The "launcher" starts a "rank" in a new session (its own process
	// group), prints its pid, then is killed at once by SIGTERM.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := RunArgv(ctx, []string{"sh", "-c", "setsid sleep 300 & sleep 0.5; echo $!; wait"}, RunOptions{OnLine: func(l string) {
			if n, err := strconv.Atoi(l); err == nil {
				rank = n
				cancel()
			}
		}})
		assert.ErrorIs(t, err, ErrCancelled)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("run did not end after cancel")
	}
	require.NotZero(t, rank)
	t.Cleanup(func() { _ = syscall.Kill(rank, syscall.SIGKILL) })
	// The sweep SIGTERMs at once; give the kernel a moment.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, _, _, ok := procStat(rank); !ok || isZombie(rank) {
			t.Logf("rank %d gone after %v", rank, time.Since(deadline.Add(-5*time.Second)))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("rank %d in its own session survived the cancel", rank)
}

func isZombie(pid int) bool {
	state, _, _, ok := procStat(pid)
	return !ok || state == "Z"
}

func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var d []procID
	for i := 0; i < 100 && len(d) < 2; i++ {
		time.Sleep(20 * time.Millisecond)
		d = descendants(cmd.Process.Pid)
	}
	require.Len(t, d, 2)
	for _, p := range d {
		_, _, st, ok := procStat(p.pid)
		assert.True(t, ok)
		assert.Equal(t, p.start, st)
		assert.True(t, alive(p))
	}
	assert.Empty(t, descendants(1<<30))
}

// TestStreamSplitsLines: output arrives in arbitrary chunks; lines are
// rebuilt, CRs dropped, overlong lines cut, and a last line without a
// newline still counted.
func TestStreamSplitsLines(t *testing.T) {
	var got []string
	s := newStream(RunOptions{OnLine: func(l string) { got = append(got, l) }})
	in := "a\r\nbb\n\nccc" + string(make([]byte, maxLine+10)) + "\nlast"
	for i := 0; i < len(in); i += 7 {
		_, _ = s.Write([]byte(in[i:min(i+7, len(in))]))
	}
	s.flush()
	require.Len(t, got, 5)
	assert.Equal(t, []string{"a", "bb", ""}, got[:3])
	assert.Len(t, got[3], maxLine)
	assert.Equal(t, "last", got[4])
	assert.Equal(t, int64(5), s.lines)
}

// TestStreamRejoinsRanksLines replays real mpirun --tag-output output in
// which mpirun cut rank 0's 64 KiB row with rank 1's lines (it forwards 4 KiB
// pieces, not lines; the cause of the flaky cmd_nccl_test): every row comes
// back whole, no tag reaches a consumer, rank 1's failure is classified.
func TestStreamRejoinsRanksLines(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "mpirun_4.1.4_tag_output_row_cut_by_other_rank.txt"))
	require.NoError(t, err)
	require.Contains(t, string(raw), "0 [1,1]<stdout>:fakenccltests", "the sample holds a cut row")
	for _, chunk := range []int{1, 7, 4096, len(raw)} {
		var lines []string
		var log bytes.Buffer
		s := newStream(RunOptions{OnLine: func(l string) { lines = append(lines, l) }, Log: &log})
		for i := 0; i < len(raw); i += chunk {
			_, _ = s.Write(raw[i:min(i+chunk, len(raw))])
		}
		s.flush()
		res := s.parser.Result()
		require.NotNil(t, res, "chunk %d", chunk)
		require.Len(t, res.Rows, 31, "chunk %d", chunk)
		assert.Equal(t, int64(65536), res.Rows[13].Size, "chunk %d", chunk)
		assert.InDelta(t, 157.6, res.Rows[13].InPlace.TimeUS, 0.01, "chunk %d: the row's second piece is joined back", chunk)
		for _, l := range lines {
			assert.NotContains(t, l, "<stdout>:", "chunk %d", chunk)
		}
		assert.Contains(t, lines, "vm: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details)'")
		assert.Equal(t, strings.Join(lines, "\n")+"\n", log.String(), "the log holds the same lines")
		assert.Equal(t, int64(len(lines)), s.lines)
	}
}

// mpirun 4.1.4 sometimes prints only its abort banner on stderr, not the
// block naming the rank: the one rank whose tagged output holds an
// nccl-tests failure, with mpirun's exit status, is the rank that exited.
func TestStreamNamesTheRankBehindTheAbortBanner(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "mpirun_4.1.4_tag_output_row_cut_by_other_rank.txt"))
	require.NoError(t, err)
	g04, err := os.ReadFile(filepath.Join("testdata", "G04_openmpi4.1.4_rank_exit_code_3.txt"))
	require.NoError(t, err)
	banner := strings.Join(strings.Split(string(g04), "\n")[1:5], "\n") + "\n"
	s := newStream(RunOptions{})
	_, _ = s.out.Write(out)
	_, _ = s.err.Write([]byte(banner))
	s.flush()
	s.classifier.LauncherExit = 3
	got := s.classifier.Failures()
	require.Len(t, got, 1, "%+v", got)
	assert.Equal(t, "rank 1 on ztan-mig-235z exited with code 3", got[0].Summary)
	assert.Equal(t, "launch-rank-exited", got[0].Finding().ID)

	// Without the exit status nothing says which rank.
	s.classifier.LauncherExit = 0
	assert.Contains(t, s.classifier.Failures()[0].Summary, "mpirun did not say which")
}

// Pieces of several ranks and untagged text on one pipe line; a rank whose
// line never ends is flushed at the end.
func TestPipePieces(t *testing.T) {
	var lines []string
	s := newStream(RunOptions{OnLine: func(l string) { lines = append(lines, l) }})
	_, _ = s.Write([]byte("[1,0]<stdout>:a1[1,12]<stdout>:b1[1,0]<stdout>:a2\n" +
		"[1,12]<stdout>:b2\n" +
		"mpirun: own message with [x] and ]<stdout>: in it\n" +
		"[prterun-h-1@1,3]<stderr>:c\n" +
		"[1,5]<stdout>:never ended"))
	s.flush()
	assert.Equal(t, []string{"a1a2", "b1b2", "mpirun: own message with [x] and ]<stdout>: in it", "c", "never ended"}, lines)
}

func FuzzStream(f *testing.F) {
	f.Add([]byte("#  Rank  0 Group  0 Pid 1 on h device 0 [0x00] GPU\n     4194304       1048576     float     sum      -1    364.6   11.50   21.57      0    356.6   11.76   22.05      0\n"), 3)
	f.Add([]byte("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\r\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, chunk int) {
		if chunk <= 0 {
			chunk = 1
		}
		s := newStream(RunOptions{OnRow: func(Row) {}})
		for i := 0; i < len(b); i += chunk {
			n, err := s.Write(b[i:min(i+chunk, len(b))])
			if err != nil || n != min(chunk, len(b)-i) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		s.flush()
		_ = s.parser.Result()
		_ = s.classifier.Failures()
	})
}

// BenchmarkStream measures the runner's output path (line split, nccl-tests
// parser, NCCL log analyser, launch classifier) on a recorded run with NCCL
// INFO lines, against a peer in the same run: splitting lines alone.
func BenchmarkStream(b *testing.B) {
	var log []byte
	for _, f := range []string{"B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt",
		"C06_nccl_info_ofi_plugin_fallback_to_internal_NET_IB_RoCE_8nics_Using_network_IB_v2.27.5.txt"} {
		d, err := os.ReadFile(filepath.Join("testdata", f))
		require.NoError(b, err)
		log = append(log, d...)
	}
	b.Run("runner", func(b *testing.B) {
		b.SetBytes(int64(len(log)))
		b.ReportAllocs()
		for b.Loop() {
			s := newStream(RunOptions{})
			_, _ = s.Write(log)
			s.flush()
		}
	})
	b.Run("lines-only", func(b *testing.B) {
		b.SetBytes(int64(len(log)))
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for p := log; len(p) > 0; {
				i := bytes.IndexByte(p, '\n')
				if i < 0 {
					break
				}
				n++
				p = p[i+1:]
			}
		}
		_ = n
	})
}

// TestRunSrunStandIn runs the srun argv through a stand-in srun (a shell
// script): the comma-holding variable reaches it through its environment,
// the others through --export, and its error lines are classified.
func TestRunSrunStandIn(t *testing.T) {
	dir := t.TempDir()
	srun := filepath.Join(dir, "srun")
	script := `#!/bin/sh
echo "args: $*"
echo "NCCL_IB_HCA=$NCCL_IB_HCA"
echo "srun: error: gpu-2: task 9: Exited with exit code 2"
exit 2
`
	require.NoError(t, os.WriteFile(srun, []byte(script), 0o755))
	c := DefaultCommand()
	c.Launcher = LauncherSrun
	c.Program = srun
	c.Env = append(c.Env, Var{Name: "NCCL_IB_HCA", Value: "erdma_0,erdma_1"})
	var lines []string
	res, err := Run(context.Background(), c, RunOptions{OnLine: func(l string) { lines = append(lines, l) }})
	require.NoError(t, err)
	assert.Equal(t, 2, res.ExitCode)
	require.Len(t, lines, 3)
	assert.Equal(t, "args: --nodes 2 --ntasks-per-node 8 --mpi=pmix --nodelist host1,host2 --export=ALL,NCCL_SOCKET_IFNAME=eth0,NCCL_DEBUG=INFO ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20", lines[0])
	assert.Equal(t, "NCCL_IB_HCA=erdma_0,erdma_1", lines[1])
	require.Len(t, res.Failures, 1)
	assert.Equal(t, "rank 9 on gpu-2 exited with code 2", res.Failures[0].Summary)
}
