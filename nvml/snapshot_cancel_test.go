package nvml

import (
	"context"
	"io"
	"testing"

	"github.com/erdmakit/erdmakit/internal/ctxio/ctxiotest"
)

// TestReadSnapshotStopsOnCancel: ReadSnapshot returns promptly with
// context.Canceled once its context ends, on a reader that blocks forever.
func TestReadSnapshotStopsOnCancel(t *testing.T) {
	ctxiotest.StopsOnCancel(t, "", func(ctx context.Context, r io.Reader) error {
		_, err := ReadSnapshot(ctx, r)
		return err
	})
}
