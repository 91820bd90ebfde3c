package nccl

import (
	"context"
	"io"
	"testing"

	"github.com/erdmakit/erdmakit/internal/ctxio/ctxiotest"
)

// TestParseGraphStopsOnCancel: ParseGraph returns promptly with
// context.Canceled once its context ends, on a reader that blocks forever.
func TestParseGraphStopsOnCancel(t *testing.T) {
	ctxiotest.StopsOnCancel(t, "", func(ctx context.Context, r io.Reader) error {
		_, err := ParseGraph(ctx, r)
		return err
	})
}
