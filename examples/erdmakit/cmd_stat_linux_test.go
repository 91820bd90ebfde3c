package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// readOnce returns a channel closed when the file at p has been opened for
// reading and closed (inotify IN_CLOSE_NOWRITE): stat's first sample has
// read it, so a change made after that is the interval's.
func readOnce(t *testing.T, p string) <-chan struct{} {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "inotify") // pollable: Close ends a Read
	t.Cleanup(func() { f.Close() })
	_, err = syscall.InotifyAddWatch(fd, p, syscall.IN_CLOSE_NOWRITE)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		var buf [4096]byte
		if n, err := f.Read(buf[:]); err == nil && n > 0 {
			close(done)
		}
	}()
	return done
}

// TestStatExitsOnAProblem: the health check (stat without -l) exits 1 and
// names the problem on stderr for each of monitor.Interval.Problems' kinds
// the recorded host can show between two samples: a meter drop, a port
// going down, a driver reload (counters reset; it used to exit 0). With -l
// the exit is the same and the lines are the record: no stderr.
func TestStatExitsOnAProblem(t *testing.T) {
	const port = "sys/class/infiniband/erdma_0/ports/1/"
	const drops, txBytes, state = port + "hw_counters/hw_bps_limit_drop_cnt", port + "hw_counters/hw_tx_bytes_cnt", port + "state"
	tests := []struct {
		name          string
		args          []string
		before, after map[string]string // file -> content; after's first file is written once the first sample read it
		wantOut       string
		wantStderr    string
	}{
		{name: "meter drop",
			before: map[string]string{drops: "7\n"}, after: map[string]string{drops: "19\n"},
			wantOut: "hw_bps_limit_drop_cnt +12", wantStderr: "problem: erdma_0/1: hw_bps_limit_drop_cnt +12\n"},
		{name: "port down",
			after:   map[string]string{state: "1: DOWN\n"},
			wantOut: "state ACTIVE -> DOWN", wantStderr: "problem: erdma_0/1: state ACTIVE -> DOWN\n"},
		{name: "driver reload",
			before: map[string]string{txBytes: "5000000000000\n"}, after: map[string]string{txBytes: "1000\n"},
			wantOut:    "reset: hw_tx_bytes_cnt",
			wantStderr: "problem: erdma_0/1: counters reset (driver reload or device reset): hw_tx_bytes_cnt\n"},
		{name: "meter drop with -l", args: []string{"-l", "-c", "1"},
			before: map[string]string{drops: "7\n"}, after: map[string]string{drops: "19\n"},
			wantOut: "hw_bps_limit_drop_cnt +12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fixture.Host(t, "ebmgn8is-healthy")
			for f, v := range tc.before {
				require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte(v), 0o644))
			}
			require.Len(t, tc.after, 1)
			var file, content string
			for f, v := range tc.after {
				file, content = filepath.Join(root, f), v
			}
			read := readOnce(t, file)
			go func() {
				select {
				case <-read:
					_ = os.WriteFile(file, []byte(content), 0o644)
				case <-time.After(10 * time.Second):
				}
			}()
			// 1 s: the change is made microseconds after the first sample
			// read the file, well before the second.
			code, out, stderr := runWithin(t, 30*time.Second,
				append([]string{"stat", "-i", "1s", "--root", root}, tc.args...)...)
			assert.Equal(t, ExitWarn, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
			assert.Contains(t, out, tc.wantOut)
			assert.Equal(t, tc.wantStderr, stderr)
		})
	}

	t.Run("nothing changed", func(t *testing.T) {
		code, out, stderr := runCLI("stat", "-i", "10ms", "--root", hostDir("ebmgn8is-healthy"))
		assert.Equal(t, ExitOK, code, stderr)
		assert.Contains(t, out, "erdma_1/1")
		assert.Empty(t, stderr)
	})
}
