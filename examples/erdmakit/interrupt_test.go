package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseHonoursSIGINT: issue 12 items 5 and 6. `parse` on a FIFO with no
// writer, and on one whose writer stays silent, used to ignore SIGINT (only
// SIGKILL ended it); now it returns at once with the interrupted rule's
// exit 3 and says so.
func TestParseHonoursSIGINT(t *testing.T) {
	// Keep SIGINT from killing the test binary should it arrive after run
	// has stopped listening.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, os.Interrupt)
	defer signal.Stop(guard)

	for _, writer := range []bool{false, true} {
		fifo := filepath.Join(t.TempDir(), "log")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		if writer { // a writer that never writes: open succeeds, read blocks
			w, err := os.OpenFile(fifo, os.O_RDWR, 0)
			require.NoError(t, err)
			defer w.Close()
		}
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errb := runCLI("parse", "perftest", fifo)
			done <- result{code, out, errb}
		}()
		select {
		case r := <-done:
			t.Fatalf("parse returned before any input: %+v", r)
		case <-time.After(500 * time.Millisecond):
		}
		start := time.Now()
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
		select {
		case r := <-done:
			assert.Equal(t, ExitUnknown, r.code, "writer %v", writer)
			assert.Contains(t, r.stderr, "interrupted")
			assert.Less(t, time.Since(start), 3*time.Second)
		case <-time.After(10 * time.Second):
			t.Fatalf("parse ignored SIGINT (writer %v)", writer)
		}
	}
}

// TestStatRefusesNegativeCount: issue 12 item 6, `stat -l -c -5` ran
// forever; now bad flags exit 3 at once.
func TestStatRefusesNegativeCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{{"-l", "-c", "-5"}, {"-i", "0s"}, {"-i", "-1s"}} {
		done := make(chan int, 1)
		go func() {
			code, _, _ := runCLI(append([]string{"stat", "--root", filepath.Join("..", "..", "testdata", "hosts", "ebmgn8is-healthy.tar.gz")}, args...)...)
			done <- code
		}()
		select {
		case code := <-done:
			assert.Equal(t, ExitUnknown, code, "%v", args)
		case <-ctx.Done():
			t.Fatalf("stat %v did not return", args)
		}
	}
}
