package smitopo

import (
	"context"
	"io"
	"testing"

	"github.com/erdmakit/erdmakit/internal/ctxio/ctxiotest"
)

// TestParseStopsOnCancel: Parse returns promptly with
// context.Canceled once its context ends, on a reader that blocks forever
// and on output that never ends.
func TestParseStopsOnCancel(t *testing.T) {
	ctxiotest.StopsOnCancel(t, "some other tool's output\n", func(ctx context.Context, r io.Reader) error {
		_, err := Parse(ctx, r)
		return err
	})
}
