package ncclog

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/erdmakit/erdmakit/internal/ctxio/ctxiotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadersStopOnCancel: each reader returns promptly with
// context.Canceled once its context ends, on a pipe nobody writes and on
// input that never ends.
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
		t.Run(tc.name, func(t *testing.T) { ctxiotest.StopsOnCancel(t, tc.line, tc.read) })
	}
}

// TestAnalyzeFileStopsOnCancel: a log file, read at the workers' own
// offsets (logfile.go), is not read on once the context has ended.
func TestAnalyzeFileStopsOnCancel(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "nccl-*.log")
	require.NoError(t, err)
	defer f.Close()
	line := []byte("host1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n")
	for written := 0; written < 8*chunkSize; written += len(line) {
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
