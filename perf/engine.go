package perf

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/erdmakit/erdmakit/connect"
)

// Config is a write-bandwidth test, with perftest's knobs and defaults.
type Config struct {
	// Size is the bytes of one RDMA write (perftest -s; default 65536).
	Size int
	// QPs per device (-q; default 1, the eRDMA guide uses 16).
	QPs int
	// Iterations per QP (-n). 0 selects duration mode.
	Iterations int
	// Duration of the measured phase (-D) in duration mode; Warmup and
	// Cooldown are the unmeasured margins before and after it (perftest: 2 s
	// each). Warmup/Cooldown < 0 mean none.
	Duration, Warmup, Cooldown time.Duration
	// TxDepth is the send queue depth per QP (-t; default 128).
	TxDepth int
	// CQMod signals one write in CQMod (-Q; default 100, and 1 above 8 KiB
	// as perftest does, unless the send queue is shallow: see shallowQueue;
	// never more than TxDepth).
	CQMod int
	// PostList posts lists of this many writes (-l). 0, the default, posts
	// the free send-queue slots as one list once there are enough of them
	// (see lowWaterMark; perftest posts one write per call unless -l).
	PostList int
	// Inline is the max inline size in bytes (-I; default 0).
	Inline int
	// OldPostSend posts the writes with ibv_post_send even where the
	// device's provider has the work request API (ibv_wr_*), which the
	// write loop otherwise takes: perftest's --use_old_post_send.
	OldPostSend bool
	// Method connects the QPs; connect.Auto follows the device's transport.
	Method connect.Method
	// StepTimeout bounds each out-of-band message (default 10 s).
	StepTimeout time.Duration
	// Progress, when set, is called from the write loop every
	// ProgressInterval (default 1 s) with the rate of the last interval. It
	// runs on the loop's goroutine: keep it short.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// PeakWindow is the window over which the peak rate is measured
	// (default 100 ms).
	PeakWindow time.Duration
}

// Defaults the engine applies to zero fields.
const (
	DefaultSize        = 65536
	DefaultIterations  = 5000
	DefaultTxDepth     = 128
	DefaultCQMod       = 100
	DefaultMargin      = 2 * time.Second
	DefaultStepTimeout = 10 * time.Second
)

// shallowQueue is the deepest send queue (TxDepth) on which writes above
// 8 KiB are still signalled once per queue, not one by one: the loop posts
// such a queue whole (the guide's 16 QPs share 128 writes, 8 each), as
// perftest's -l 8 does with one completion per list. A completion per write
// cost 0.02% of the writes at 16 QPs of 8 and 64 KiB in the lab, where
// perftest -l 8 made one per list (docs/bw.md, "Fewer runs, fewer completions").
const shallowQueue = 16

// withDefaults fills zero fields; size is the size of this run.
func (c Config) withDefaults(size int) Config {
	c.Size = size
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.QPs == 0 {
		c.QPs = 1
	}
	if c.Iterations == 0 && c.Duration == 0 {
		c.Iterations = DefaultIterations
	}
	if c.Duration > 0 {
		c.Iterations = 0
		if c.Warmup == 0 {
			c.Warmup = DefaultMargin
		}
		if c.Cooldown == 0 {
			c.Cooldown = DefaultMargin
		}
	}
	c.Warmup = max(c.Warmup, 0)
	c.Cooldown = max(c.Cooldown, 0)
	if c.TxDepth == 0 {
		c.TxDepth = DefaultTxDepth
	}
	if c.CQMod == 0 {
		c.CQMod = DefaultCQMod
		if c.Size > 8192 && c.TxDepth > shallowQueue {
			c.CQMod = 1
		}
	}
	c.CQMod = min(c.CQMod, c.TxDepth)
	c.PostList = min(c.PostList, c.TxDepth)
	if c.StepTimeout == 0 {
		c.StepTimeout = DefaultStepTimeout
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = time.Second
	}
	if c.PeakWindow == 0 {
		c.PeakWindow = 100 * time.Millisecond
	}
	return c
}

// Validate reports the first knob that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Size < 0 || c.Size > MaxSize:
		return fmt.Errorf("size %d: want 1..%d bytes", c.Size, MaxSize)
	case c.QPs < 0 || c.QPs > MaxQPs:
		return fmt.Errorf("qps %d: want 1..%d", c.QPs, MaxQPs)
	case c.Iterations < 0:
		return fmt.Errorf("iterations %d: want >= 0", c.Iterations)
	case c.Duration < 0:
		return fmt.Errorf("duration %s: want >= 0", c.Duration)
	case c.TxDepth < 0 || c.TxDepth > 1<<15:
		return fmt.Errorf("tx depth %d: want 1..32768", c.TxDepth)
	case c.CQMod < 0:
		return fmt.Errorf("cq moderation %d: want >= 1", c.CQMod)
	case c.PostList < 0:
		return fmt.Errorf("post list %d: want >= 1", c.PostList)
	case c.Inline < 0:
		return fmt.Errorf("inline %d: want >= 0", c.Inline)
	}
	return nil
}

// limit is how long the write phase may take before the server gives up.
func (c Config) limit() time.Duration {
	if c.Iterations > 0 {
		// No rate is known in advance: allow an hour (the server caps it).
		return time.Hour
	}
	return c.Warmup + c.Duration + c.Cooldown + drainTimeout
}

// Progress is one live progress sample.
type Progress struct {
	Device  string
	Size    int
	Elapsed time.Duration // since the write loop started
	Gbps    float64       // over the last interval
}

// Measure is what one write loop measured.
type Measure struct {
	// Bytes and Messages are the writes completed in the measured phase,
	// Elapsed its length.
	Bytes    uint64
	Messages uint64
	Elapsed  time.Duration
	// PeakGbps is the best PeakWindow of the measured phase (the average when
	// the phase is shorter than one window).
	PeakGbps float64
	// TotalBytes and TotalMessages include the warm-up and cool-down margins:
	// what the device counters must show.
	TotalBytes    uint64
	TotalMessages uint64
}

// AvgGbps is Bytes over Elapsed in 10^9 bit/s.
func (m Measure) AvgGbps() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.Bytes) * 8 / m.Elapsed.Seconds() / 1e9
}

// Mpps is Messages over Elapsed in 10^6 per second.
func (m Measure) Mpps() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.Messages) / m.Elapsed.Seconds() / 1e6
}

// snapSlack is how long the poll before a snapshot may take for the
// snapshot to count as exact; with long phases a thousandth of the phase is
// allowed too (an error of at most 0.1%).
const snapSlack = 100 * time.Microsecond

// schedYield is how often the write loop passes through the Go scheduler.
// A goroutine that runs (or sits in cgo calls) for 10 ms without being
// rescheduled looks stuck to the runtime's sysmon, which then signals its
// thread, takes its P and polls every 20 µs: on a one-CPU host that was
// thousands of context switches a second, taken from the writes.
const schedYield = time.Millisecond

// drainTimeout bounds waiting for the outstanding writes at the end.
const drainTimeout = 5 * time.Second

// ErrDrain: writes posted at the end of a test never completed.
var ErrDrain = errors.New("outstanding writes did not complete")

// loopState is the write loop's per-QP bookkeeping, allocated once per test
// so that the loop itself allocates nothing.
type loopState struct {
	outstanding []int // writes posted and not yet completed
	remaining   []int // iterations mode: writes still to post
	comps       []Completion
}

func newLoopState(qps int) *loopState {
	return &loopState{
		outstanding: make([]int, qps),
		remaining:   make([]int, qps),
		comps:       make([]Completion, 64),
	}
}

// WriteLoop posts RDMA writes on every QP of s and polls their completions
// until the iterations are done or the duration (with its margins) has
// passed, then waits for the outstanding writes. cfg must have its defaults
// applied (the Client does). device names the device in errors and progress.
//
// A session that can run the loop natively (a verbs session: the posting and
// polling in C, see streamLoop) does so; others run it here in Go.
func WriteLoop(ctx context.Context, s Session, device string, cfg Config) (Measure, error) {
	cfg = cfg.withDefaults(cfg.Size)
	if ns, ok := s.(streamer); ok {
		return streamLoop(ctx, ns, device, cfg)
	}
	st := newLoopState(cfg.QPs)
	return writeLoop(ctx, s, device, cfg, st)
}

func writeLoop(ctx context.Context, s Session, device string, cfg Config, st *loopState) (Measure, error) {
	var (
		m          Measure
		size       = cfg.Size
		qps        = cfg.QPs
		depth      = cfg.TxDepth
		batch      = cfg.PostList
		lowWater   = lowWaterMark(cfg)
		slack      = max(snapSlack, cfg.Duration/1000)
		mod        = cfg.CQMod
		iterMode   = cfg.Iterations > 0
		posting    = true
		completed  uint64 // messages completed since the start
		inFlight   int
		start      = time.Now()
		warmEnd    = start.Add(cfg.Warmup)
		measEnd    = warmEnd.Add(cfg.Duration)
		stopAt     = measEnd.Add(cfg.Cooldown)
		measuring  = iterMode || cfg.Warmup == 0
		measured   = false
		measStart  = start
		measFrom   uint64 // completed at measStart
		winStart   = start
		winFrom    uint64
		progStart  = start
		progFrom   uint64
		drainUntil time.Time
		spins      int
		yielded    = start
	)
	for i := range qps {
		st.outstanding[i] = 0
		st.remaining[i] = cfg.Iterations
	}
	for {
		if posting {
			for qp := 0; qp < qps; qp++ {
				for {
					free := depth - st.outstanding[qp]
					n := batch
					if n == 0 { // auto: every free slot as one list
						n = free
					}
					last := false // the tail of iterations mode, may be short
					if rem := st.remaining[qp]; iterMode && rem <= n {
						n, last = rem, true
					}
					if n <= 0 || n > free || (n < lowWater && !last) {
						break
					}
					if err := s.PostWrites(qp, n, size, mod); err != nil {
						return m, fmt.Errorf("%s: posting %d writes on qp %d: %w", device, n, qp, err)
					}
					st.outstanding[qp] += n
					inFlight += n
					m.TotalMessages += uint64(n)
					if iterMode {
						st.remaining[qp] -= n
					}
				}
			}
		}
		// Take every completion that is ready (not only one batch), so that
		// the counts at the phase boundaries below are exact; polled is
		// when that began.
		polled := time.Now()
		for {
			n, err := s.Poll(st.comps)
			if err != nil {
				return m, fmt.Errorf("%s: polling the completion queue: %w", device, err)
			}
			for _, c := range st.comps[:n] {
				if c.Status != 0 {
					return m, &CompletionError{Device: device, QP: int(c.QP), Status: int(c.Status)}
				}
				w := int(c.Writes)
				if int(c.QP) < 0 || int(c.QP) >= qps || w <= 0 || w > st.outstanding[c.QP] {
					return m, fmt.Errorf("%s: completion for qp %d covering %d writes does not match what was posted", device, c.QP, w)
				}
				st.outstanding[c.QP] -= w
				inFlight -= w
				completed += uint64(w)
			}
			if n < len(st.comps) {
				break
			}
		}
		now := time.Now()
		// A snapshot (phase boundary, peak window) pairs a count with a
		// time: only take one when the poll above was not interrupted
		// (a descheduled thread would pair an old count with a late time).
		exact := now.Sub(polled) < slack
		if !measuring && exact && !now.Before(warmEnd) {
			measuring, measStart, measFrom = true, now, completed
			winStart, winFrom = now, completed
		}
		if measuring && !measured && exact {
			if d := now.Sub(winStart); d >= cfg.PeakWindow {
				if g := gbps(completed-winFrom, size, d); g > m.PeakGbps {
					m.PeakGbps = g
				}
				winStart, winFrom = now, completed
			}
		}
		if cfg.Progress != nil {
			if d := now.Sub(progStart); d >= cfg.ProgressInterval {
				cfg.Progress(Progress{Device: device, Size: size, Elapsed: now.Sub(start), Gbps: gbps(completed-progFrom, size, d)})
				progStart, progFrom = now, completed
			}
		}
		if iterMode {
			if inFlight == 0 && allZero(st.remaining) {
				m.Messages = completed
				m.Elapsed = now.Sub(measStart)
				break
			}
		} else {
			// A phase that opened late (every poll until near its end was
			// interrupted) is no measurement: at stopAt the whole run is
			// taken instead, as below. Closing it here measured ~0 s.
			if measuring && !measured && exact && !now.Before(measEnd) && now.Sub(measStart) >= cfg.Duration/2 {
				measured = true
				m.Messages = completed - measFrom
				m.Elapsed = now.Sub(measStart)
			}
			if posting && !now.Before(stopAt) {
				if !measured { // no exact snapshot closed the phase: take what there is
					// A phase that only just opened (every poll of the phase
					// was interrupted, as under heavy emulation) would measure
					// nothing: take the whole run instead.
					if !measuring || now.Sub(measStart) < cfg.Duration/2 {
						measStart, measFrom = start, 0
					}
					measured = true
					m.Messages = completed - measFrom
					m.Elapsed = now.Sub(measStart)
				}
				posting = false
				drainUntil = now.Add(drainTimeout)
			}
			if !posting {
				if inFlight == 0 {
					break
				}
				if now.After(drainUntil) {
					return m, fmt.Errorf("%s: %d writes: %w within %s", device, inFlight, ErrDrain, drainTimeout)
				}
			}
		}
		if now.Sub(yielded) >= schedYield {
			runtime.Gosched()
			yielded = now
		}
		if spins++; spins&1023 == 0 {
			select {
			case <-ctx.Done():
				return m, fmt.Errorf("%s: write loop: %w", device, ctx.Err())
			default:
			}
		}
	}
	if m.Elapsed <= 0 {
		return m, fmt.Errorf("%s: write loop: no measured time (%d writes completed)", device, m.TotalMessages)
	}
	m.Bytes = m.Messages * uint64(size)
	m.TotalBytes = m.TotalMessages * uint64(size)
	if avg := m.AvgGbps(); m.PeakGbps < avg {
		m.PeakGbps = avg
	}
	return m, nil
}

// lowWaterMark is the fewest free send-queue slots worth a post list in
// auto mode: a quarter of the queue or one moderation unit, whichever is
// less, so that the queue never drains while the loop waits to fill a whole
// unit (perftest posts one write at a time for the same reason).
func lowWaterMark(cfg Config) int {
	if cfg.PostList > 0 {
		return cfg.PostList
	}
	return max(1, min(cfg.CQMod, cfg.TxDepth/4))
}

func allZero(v []int) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func gbps(msgs uint64, size int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(msgs) * float64(size) * 8 / d.Seconds() / 1e9
}
