// Package ctxiotest checks that a reader of ours stops when its context
// ends: on input that blocks forever (a FIFO nobody writes) and on input
// that never ends. Tests only.
package ctxiotest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Endless returns a reader that repeats line forever.
func Endless(line string) io.Reader { return &endless{line: []byte(line)} }

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

// StopsOnCancel runs read under a context cancelled 20 ms in, and fails
// unless it returns context.Canceled within 5 s: on a pipe nobody writes
// ("blocked") and, when line is not empty, on line repeated forever
// ("endless").
func StopsOnCancel(t *testing.T, line string, read func(ctx context.Context, r io.Reader) error) {
	t.Helper()
	t.Run("blocked", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		stops(t, pr, read)
	})
	if line != "" {
		t.Run("endless", func(t *testing.T) { stops(t, Endless(line), read) })
	}
}

func stops(t *testing.T, r io.Reader, read func(ctx context.Context, r io.Reader) error) {
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
