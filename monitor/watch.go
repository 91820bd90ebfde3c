package monitor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Watch samples every interval and calls fn with what changed since the
// previous sample, until ctx ends (then it returns nil) or count intervals
// have been reported (count 0: no limit; negative is an error, not
// "forever"). A failed sample is an error: the caller decides whether to go
// on.
func Watch(ctx context.Context, s Sampler, interval time.Duration, count int, fn func(Interval) error) error {
	if interval <= 0 {
		return fmt.Errorf("monitor: interval must be positive, got %v", interval)
	}
	if count < 0 {
		return fmt.Errorf("monitor: count must be 0 (no limit) or more, got %d", count)
	}
	prev, err := s.Sample(ctx)
	if err != nil {
		return fmt.Errorf("monitor: first sample: %w", err)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 0; count == 0 || n < count; n++ {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil
			}
			return ctx.Err()
		case <-t.C:
		}
		cur, err := s.Sample(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("monitor: sample: %w", err)
		}
		if err := fn(Diff(prev, cur)); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}
