package erdma

import (
	"context"
	"io"
	"testing"

	"github.com/erdmakit/erdmakit/internal/ctxio/ctxiotest"
)

// TestParseInstanceStopsOnCancel: ParseInstance returns promptly with
// context.Canceled once its context ends, on a reader that blocks forever.
func TestParseInstanceStopsOnCancel(t *testing.T) {
	ctxiotest.StopsOnCancel(t, "", func(ctx context.Context, r io.Reader) error {
		_, err := ParseInstance(ctx, r)
		return err
	})
}
