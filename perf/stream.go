package perf

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/erdmakit/erdmakit/ibverbs"
)

// streamer is a Session whose write loop runs natively: a verbs session
// posts and polls in C (ibverbs.WriteStream), one cgo call per phase of the
// test instead of one per post list and per poll.
type streamer interface {
	Session
	stream(cfg Config) (writeStream, error)
}

// writeStream is ibverbs.WriteStream as the engine drives it.
type writeStream interface {
	Run(d time.Duration) (ibverbs.StreamStatus, error)
	StopPosting()
	StartPeak()
	StopPeak()
	Stop()
	Close() error
}

// A native run goes on to the next phase boundary or progress report, not
// less: each cgo call that starts one wakes the Go runtime's sysmon, which
// then looks at the spinning thread every 20 µs, then less often, until it
// hands the thread's P off 10 ms later: some 60 wake-ups, each a context
// switch on a CPU that rxe's kernel work needs (docs/bw.md, "Fewer runs, fewer completions").
// Stop ends a run at once, so nothing waits on it.
const untilStopped = time.Duration(math.MaxInt64)

// streamConfig is the ibverbs stream of cfg on these QPs.
func streamConfig(cfg Config) ibverbs.StreamConfig {
	return ibverbs.StreamConfig{Size: uint32(cfg.Size), Depth: cfg.TxDepth, PostList: cfg.PostList,
		LowWater: lowWaterMark(cfg), SignalEvery: cfg.CQMod, Iterations: cfg.Iterations,
		PeakWindow: cfg.PeakWindow, Slack: max(snapSlack, cfg.Duration/1000)}
}

// streamLoop is writeLoop for a session that runs its loop natively: the
// same phases, snapshots and results, with the posting and polling in
// each Run between them. A run ends at the next phase boundary (or
// progress report), where the engine takes its snapshot if the run's last
// poll was quick (exact, as writeLoop's rule).
func streamLoop(ctx context.Context, sess streamer, device string, cfg Config) (m Measure, err error) {
	ws, err := sess.stream(cfg)
	if err != nil {
		return m, fmt.Errorf("%s: write loop: %w", device, err)
	}
	defer ws.Close()
	defer context.AfterFunc(ctx, ws.Stop)()
	var (
		size       = cfg.Size
		slack      = max(snapSlack, cfg.Duration/1000)
		iterMode   = cfg.Iterations > 0
		start      = time.Now()
		warmEnd    = start.Add(cfg.Warmup)
		measEnd    = warmEnd.Add(cfg.Duration)
		stopAt     = measEnd.Add(cfg.Cooldown)
		measuring  = iterMode || cfg.Warmup == 0
		measured   = false
		posting    = true
		measStart  = start
		measFrom   uint64
		progStart  = start
		progFrom   uint64
		drainUntil time.Time
		st         ibverbs.StreamStatus
	)
	if measuring {
		ws.StartPeak()
	}
	for {
		now := time.Now()
		var next time.Time // zero: until the writes are done, or Stop
		switch {
		case iterMode:
		case !posting:
			next = drainUntil
		case !measuring:
			next = warmEnd
		case !measured:
			next = measEnd
		default:
			next = stopAt
		}
		if cfg.Progress != nil {
			if p := progStart.Add(cfg.ProgressInterval); next.IsZero() || p.Before(next) {
				next = p
			}
		}
		d := untilStopped
		if !next.IsZero() {
			d = max(next.Sub(now), 0)
		}
		st, err = ws.Run(d)
		if err != nil {
			return m, streamError(device, err)
		}
		now = time.Now()
		if st.State == ibverbs.RunStopped {
			return m, fmt.Errorf("%s: write loop: %w", device, context.Cause(ctx))
		}
		completed := st.Completed
		exact := st.PollTime < slack
		if !measuring && exact && !now.Before(warmEnd) {
			measuring, measStart, measFrom = true, now, completed
			ws.StartPeak()
		}
		if cfg.Progress != nil {
			if d := now.Sub(progStart); d >= cfg.ProgressInterval {
				cfg.Progress(Progress{Device: device, Size: size, Elapsed: now.Sub(start), Gbps: gbps(completed-progFrom, size, d)})
				progStart, progFrom = now, completed
			}
		}
		if iterMode {
			if st.State == ibverbs.RunDone {
				m.Messages = completed
				m.Elapsed = now.Sub(measStart)
				break
			}
			continue
		}
		if measuring && !measured && exact && !now.Before(measEnd) && now.Sub(measStart) >= cfg.Duration/2 {
			measured = true
			m.Messages = completed - measFrom
			m.Elapsed = now.Sub(measStart)
			ws.StopPeak()
		}
		if posting && !now.Before(stopAt) {
			if !measured { // as writeLoop: a phase never closed exactly is the whole run
				if !measuring || now.Sub(measStart) < cfg.Duration/2 {
					measStart, measFrom = start, 0
				}
				measured = true
				m.Messages = completed - measFrom
				m.Elapsed = now.Sub(measStart)
				ws.StopPeak()
			}
			posting = false
			ws.StopPosting()
			drainUntil = now.Add(drainTimeout)
		}
		if !posting {
			if st.InFlight == 0 {
				break
			}
			if now.After(drainUntil) {
				return m, fmt.Errorf("%s: %d writes: %w within %s", device, st.InFlight, ErrDrain, drainTimeout)
			}
		}
	}
	if m.Elapsed <= 0 {
		return m, fmt.Errorf("%s: write loop: no measured time (%d writes completed)", device, st.Posted)
	}
	m.TotalMessages = st.Posted
	m.Bytes = m.Messages * uint64(size)
	m.TotalBytes = m.TotalMessages * uint64(size)
	m.PeakGbps = st.PeakPerSec * float64(size) * 8 / 1e9
	if avg := m.AvgGbps(); m.PeakGbps < avg {
		m.PeakGbps = avg
	}
	return m, nil
}

// streamError names the device, and a failed completion's QP as
// writeLoop's CompletionError does.
func streamError(device string, err error) error {
	var we *ibverbs.WCError
	if errors.As(err, &we) {
		return &CompletionError{Device: device, QP: int(we.WRID >> wridShift), Status: int(we.Status), Text: we.StatusStr}
	}
	return fmt.Errorf("%s: write loop: %w", device, err)
}
