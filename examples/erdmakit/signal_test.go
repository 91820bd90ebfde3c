package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// signalRun starts bin with args, waits until ready returns true (polled;
// at most a minute), sends sigs and returns how long the process took to
// exit after the last, its exit code and stderr; it fails the test when
// the process outlives limit after it (then it is killed).
type signalRun struct {
	bin    string
	args   []string
	stdout *os.File // nil: a buffer
	ready  func() bool
	sigs   []syscall.Signal // sent 200 ms apart
	limit  time.Duration
}

func (r signalRun) run(t *testing.T) (time.Duration, int, string) {
	t.Helper()
	cmd := exec.Command(r.bin, r.args...)
	var stderr bytesBuffer
	cmd.Stderr = &stderr
	if r.stdout != nil {
		cmd.Stdout = r.stdout
	} else {
		cmd.Stdout = &bytesBuffer{}
	}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	for deadline := time.Now().Add(time.Minute); r.ready != nil && !r.ready(); {
		select {
		case <-exited:
			t.Fatalf("%v exited before the signal: %s", r.args, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "%v never became ready: %s", r.args, stderr.String())
	}
	select {
	case <-exited:
		t.Fatalf("%v exited before the signal: %s", r.args, stderr.String())
	default:
	}
	var start time.Time
	for i, s := range r.sigs {
		if i > 0 {
			select {
			case <-exited:
				t.Fatalf("%v exited after signal %d of %d", r.args, i, len(r.sigs))
			case <-time.After(200 * time.Millisecond):
			}
		}
		start = time.Now()
		require.NoError(t, cmd.Process.Signal(s))
	}
	select {
	case <-exited:
		took := time.Since(start)
		t.Logf("%v: exit %d %v after %v", r.args[:2], cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), r.sigs[len(r.sigs)-1])
		return took, cmd.ProcessState.ExitCode(), stderr.String()
	case <-time.After(r.limit):
		t.Fatalf("%v: still running %v after %v; stderr:\n%s", r.args, r.limit, r.sigs[len(r.sigs)-1], stderr.String())
	}
	return 0, 0, ""
}

func after(d time.Duration) func() bool {
	at := time.Now().Add(d)
	return func() bool { return time.Now().After(at) }
}

// TestSignalsEndCommandsAtOnce: issue 27 items 1, 3 and 27, on the built
// binary, signals sent to it alone. The README promises a second; the
// bounds here are generous for a loaded 2-core machine, and every case
// used to take longer or never end.
func TestSignalsEndCommandsAtOnce(t *testing.T) {
	bin := buildCLI(t)

	// A second signal ends the process whatever it is blocked in: here a
	// write to a pipe nobody reads (a stopped pager), which the first one
	// cannot interrupt. Before: it never exited.
	t.Run("second signal while blocked writing", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		require.NoError(t, err)
		defer pr.Close()
		_, err = unix.FcntlInt(pw.Fd(), unix.F_SETPIPE_SZ, 4096)
		require.NoError(t, err)
		for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			took, code, stderr := signalRun{bin: bin, args: []string{"completion", "bash"}, stdout: pw,
				ready: after(time.Second), sigs: []syscall.Signal{s, s}, limit: 5 * time.Second}.run(t)
			assert.Equal(t, ExitUnknown, code)
			assert.Contains(t, stderr, "again: exiting at once")
			assert.Less(t, took, 2*time.Second)
		}
		pw.Close()
	})

	// parse topo opened its FILE with a plain open: on a FIFO with no
	// writer SIGINT was ignored.
	t.Run("parse topo on a FIFO", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "topo")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			took, code, stderr := signalRun{bin: bin, args: []string{"parse", "topo", fifo},
				ready: after(500 * time.Millisecond), sigs: []syscall.Signal{s}, limit: 5 * time.Second}.run(t)
			assert.Equal(t, ExitUnknown, code)
			assert.Contains(t, stderr, "interrupted")
			assert.Less(t, took, 2*time.Second)
		}
	})

	// A --root FIFO named like an archive: the open blocked and SIGINT was
	// ignored.
	t.Run("a root archive that is a FIFO", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "host.tar.gz")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		took, code, stderr := signalRun{bin: bin, args: []string{"devices", "--root", fifo},
			ready: after(500 * time.Millisecond), sigs: []syscall.Signal{syscall.SIGINT}, limit: 5 * time.Second}.run(t)
		assert.Equal(t, ExitUnknown, code)
		assert.Contains(t, stderr, "interrupted")
		assert.Less(t, took, 2*time.Second)
	})

	// Unpacking a 100,000-entry root: TERM took 2.4-9.7 s, INT 3-16 s
	// (the unpacking ran to the entry limit, then cleaned up).
	t.Run("unpacking a 100k-entry root", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "100k.tar.gz")
		writeManyEntries(t, archive, 100000)
		tmp := t.TempDir()
		for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			r := signalRun{bin: bin, args: []string{"devices", "--root", archive},
				ready: after(300 * time.Millisecond), sigs: []syscall.Signal{s}, limit: 20 * time.Second}
			t.Setenv("TMPDIR", tmp)
			took, code, stderr := r.run(t)
			assert.Equal(t, ExitUnknown, code, stderr)
			assert.Contains(t, stderr, "interrupted")
			assert.Less(t, took, 2*time.Second, "signal to exit")
			left, _ := os.ReadDir(tmp)
			assert.Empty(t, left, "the unpacked files are removed")
		}
	})

	// nccl run with hanging ranks: 1.03-2.03 s after the signal (mpirun's
	// own 1 s pause before it SIGKILLs the ranks); ranks ignoring SIGTERM
	// 2.1 s.
	t.Run("nccl run with hanging ranks", func(t *testing.T) {
		if _, err := exec.LookPath("mpirun"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("mpirun is required under CI (Debian openmpi-bin): %v", err)
			}
			t.Skip("mpirun not installed")
		}
		dir := t.TempDir()
		fake := filepath.Join(dir, "all_reduce_perf")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", fake, "github.com/erdmakit/erdmakit/nccl/internal/fakenccltests").CombinedOutput()
		require.NoError(t, err, "%s", out)
		sample, err := filepath.Abs("../../nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")
		require.NoError(t, err)
		for i, mode := range []string{"ignore-term", "1", "ignore-term"} {
			s := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
			log := filepath.Join(dir, "raw"+strconv.Itoa(i)+".log")
			args := []string{"nccl", "run", "--hosts", "localhost:2", "--ranks-per-host", "2", "--oversubscribe", "--socket-ifname", "",
				"--binary", fake, "-x", "FAKE_NCCL_SAMPLE=" + sample, "-x", "FAKE_NCCL_HANG=" + mode, "--log", log}
			if os.Geteuid() != 0 {
				args = append(args, "--no-allow-run-as-root")
			}
			ready := func() bool { // every rank says it hangs (in the log, at its temporary name until the run ends)
				m, _ := filepath.Glob(filepath.Join(dir, ".raw"+strconv.Itoa(i)+".log.tmp-*"))
				if len(m) != 1 {
					return false
				}
				b, _ := os.ReadFile(m[0])
				return bytes.Count(b, []byte("hanging")) >= 2
			}
			took, code, stderr := signalRun{bin: bin, args: args, ready: ready, sigs: []syscall.Signal{s}, limit: 10 * time.Second}.run(t)
			assert.Equal(t, ExitUnknown, code, stderr)
			assert.Less(t, took, time.Second, "mode %s, %v", mode, s)
			b, err := os.ReadFile(log)
			assert.NoError(t, err, "an interrupted run's log is kept")
			assert.Contains(t, string(b), "hanging")
		}
	})
}

// writeManyEntries writes a .tar.gz of n one-byte files, 1,000 a directory.
func writeManyEntries(t *testing.T, p string, n int) {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	tw := tar.NewWriter(zw)
	for i := 0; i < n; i++ {
		name := "d" + strconv.Itoa(i/1000) + "/f" + strconv.Itoa(i)
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: 1}))
		_, err := tw.Write([]byte("x"))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
}
