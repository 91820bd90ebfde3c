package ncclog

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endless is a log that never ends: its line, again and again.
type endless struct {
	line []byte
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], e.line[e.off:])
		n += c
		e.off = (e.off + c) % len(e.line)
	}
	return n, nil
}

// TestReadersStopOnCancel: every reader in the package returns promptly
// with context.Canceled once its context ends, on a reader that blocks
// forever (a FIFO nobody writes) and on one that never reaches EOF.
func TestReadersStopOnCancel(t *testing.T) {
	row := "     4194304       1048576     float     sum      -1    80.10   52.36   98.18      0    79.90   52.49   98.43      0\n"
	info := "host1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n"
	launch := "mpirun noticed that process rank 1 with PID 0 on node host1 exited on signal 9 (Killed).\n"
	for _, tc := range []struct {
		name, line string
		read       func(context.Context, io.Reader) error
	}{
		{"ParseTests", row, func(ctx context.Context, r io.Reader) error { _, err := ParseTests(ctx, r); return err }},
		{"Analyze", info, func(ctx context.Context, r io.Reader) error { _, err := Analyze(ctx, r); return err }},
		{"ClassifyLaunch", launch, func(ctx context.Context, r io.Reader) error { _, err := ClassifyLaunch(ctx, r); return err }},
	} {
		t.Run(tc.name+"/blocked", func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			assertStops(t, tc.read, pr)
		})
		t.Run(tc.name+"/endless", func(t *testing.T) {
			assertStops(t, tc.read, &endless{line: []byte(tc.line)})
		})
	}
}

func assertStops(t *testing.T, read func(context.Context, io.Reader) error, r io.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- read(ctx, r) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("still reading 5 s after the cancel")
	}
}

// TestAnalyzeMappedStopsOnCancel: a log file large enough to be mapped
// (logmap.go) is not read on once the context has ended.
func TestAnalyzeMappedStopsOnCancel(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "nccl-*.log")
	require.NoError(t, err)
	defer f.Close()
	line := []byte("host1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n")
	for written := 0; written < 2*mapMin; written += len(line) {
		_, err := f.Write(line)
		require.NoError(t, err)
	}
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Analyze(ctx, f)
	assert.ErrorIs(t, err, context.Canceled)
}
