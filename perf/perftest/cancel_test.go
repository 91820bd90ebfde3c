package perftest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestParseStopsOnCancel: Parse returns promptly with context.Canceled once
// its context ends, on a reader that blocks forever (a FIFO nobody writes)
// and on one that never reaches EOF.
func TestParseStopsOnCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	row := " 65536      5000           11.52              11.50              0.021937\n"
	for name, r := range map[string]io.Reader{"blocked": pr, "endless": &endless{line: []byte(row)}} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := Parse(ctx, r); done <- err }()
			time.Sleep(20 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled)
			case <-time.After(5 * time.Second):
				t.Fatal("still reading 5 s after the cancel")
			}
		})
	}
}
