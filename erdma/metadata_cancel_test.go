package erdma

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestParseInstanceStopsOnCancel: ParseInstance returns promptly with context.Canceled
// once its context ends, on a reader that blocks forever (a FIFO nobody
// writes).
func TestParseInstanceStopsOnCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := ParseInstance(ctx, pr); done <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("still reading 5 s after the cancel")
	}
}
