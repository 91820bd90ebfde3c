package perf

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/ibverbs"
)

// LatencyConfig is a write-latency test: ib_write_lat's ping-pong, with its
// knobs and defaults.
type LatencyConfig struct {
	// Size is the bytes of one RDMA write (ib_write_lat -s; default 2).
	Size int
	// Iterations are the measured round trips (-n; default 1000), at most
	// MaxLatencyIterations: one sample each is kept.
	Iterations int
	// Warmup round trips run first and are not measured (default
	// DefaultLatencyWarmup; < 0 for none). ib_write_lat has no warm-up; it
	// drops its two largest samples instead.
	Warmup int
	// Inline is the largest write sent inline (-I). InlineAuto (the zero
	// value's default) does what ib_write_lat does: 96 bytes on eRDMA, none
	// on a device perftest does not recognise (rxe, the fake); < -1 is
	// invalid.
	Inline int
	// Method connects the QP; connect.Auto follows the device's transport.
	Method connect.Method
	// StepTimeout bounds each out-of-band message and, during the ping-pong,
	// the wait for any one answer (default 10 s).
	StepTimeout time.Duration
	// Progress, when set, is called from the ping loop every
	// ProgressInterval (default 1 s). It runs on the loop's goroutine.
	Progress         func(LatencyProgress)
	ProgressInterval time.Duration
}

// Defaults and bounds of a latency test.
const (
	DefaultLatencySize       = 2    // ib_write_lat's default -s
	DefaultLatencyIterations = 1000 // ib_write_lat's default -n
	DefaultLatencyWarmup     = 16
	// MaxLatencyIterations bounds a test's samples (8 bytes each).
	MaxLatencyIterations = 1 << 22
	// MaxInline bounds the inline size a client may ask for.
	MaxInline = 1024
	// InlineAuto selects ib_write_lat's inline size for the device.
	InlineAuto = -1
	// erdmaInline is perftest's inline size for eRDMA (ctx_set_max_inline).
	erdmaInline = 96
)

// LatencyProgress is one live progress sample of a latency test.
type LatencyProgress struct {
	Device     string
	Size       int
	Done       int // measured round trips so far
	Iterations int
	Elapsed    time.Duration
	// LastUS is the last round trip's one-way latency.
	LastUS float64
}

func (c LatencyConfig) withDefaults(size int) LatencyConfig {
	c.Size = size
	if c.Size == 0 {
		c.Size = DefaultLatencySize
	}
	if c.Iterations == 0 {
		c.Iterations = DefaultLatencyIterations
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultLatencyWarmup
	}
	c.Warmup = max(c.Warmup, 0)
	if c.StepTimeout == 0 {
		c.StepTimeout = DefaultStepTimeout
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = time.Second
	}
	return c
}

// Validate reports the first knob that is out of range.
func (c LatencyConfig) Validate() error {
	switch {
	case c.Size < 0 || c.Size > MaxSize:
		return fmt.Errorf("size %d: want 1..%d bytes", c.Size, MaxSize)
	case c.Iterations < 0 || c.Iterations > MaxLatencyIterations:
		return fmt.Errorf("iterations %d: want 1..%d", c.Iterations, MaxLatencyIterations)
	case c.Warmup > MaxLatencyIterations:
		return fmt.Errorf("warm-up %d: want at most %d", c.Warmup, MaxLatencyIterations)
	case c.Inline < InlineAuto || c.Inline > MaxInline:
		return fmt.Errorf("inline %d: want 0..%d, or %d for the device's default", c.Inline, MaxInline, InlineAuto)
	case c.StepTimeout < 0:
		return fmt.Errorf("step timeout %s: want >= 0", c.StepTimeout)
	}
	return nil
}

// inlineFor is the inline size a test of c uses on device dev: what
// ib_write_lat would (eRDMA 96 bytes; perftest disables inline on devices it
// does not recognise, among them rxe and siw).
func (c LatencyConfig) inlineFor(dev string) int {
	if c.Inline != InlineAuto {
		return c.Inline
	}
	if strings.HasPrefix(dev, "erdma") {
		return erdmaInline
	}
	return 0
}

// PingSession is a Session that can play the latency ping-pong: each side
// watches the last byte of its own buffer's first half (the peer writes
// there) and writes from its second half. Every Session of this package's
// links is one.
type PingSession interface {
	Session
	// Buffer is this side's registered buffer (of OpenConfig.BufSize
	// bytes) as memory the loop reads and writes directly.
	Buffer() []byte
	// PostWrite posts one signalled RDMA write of size bytes on QP 0 from
	// offset src of this side's buffer to the start of the peer's, inline
	// when size is at most OpenConfig.MaxInline.
	PostWrite(src, size int) error
}

// pingLayout is where a ping-pong of size bytes keeps its halves: the
// receive area at 0, the send area at send (cache-line aligned, so that the
// peer's writes and ours never share a line), bufSize in all.
func pingLayout(size int) (send, bufSize int) {
	send = (size + 63) &^ 63
	return send, 2 * send
}

// lastByte watches the byte at index i of a buffer the peer writes into by
// DMA (or, for the fake, from another goroutine): an atomic load of the
// aligned 32-bit word holding it, so that the poll is a plain memory read,
// never a cgo call.
type lastByte struct {
	word  *uint32
	shift int // index of the byte in the word
}

func newLastByte(buf []byte, i int) lastByte {
	return lastByte{word: (*uint32)(unsafe.Pointer(&buf[i&^3])), shift: i & 3}
}

func (b lastByte) load() byte {
	w := atomic.LoadUint32(b.word)
	return (*[4]byte)(unsafe.Pointer(&w))[b.shift]
}

// storeByte sets buf[i] with an atomic update of its word (the fake's
// delivery, read by lastByte from another goroutine).
func storeByte(buf []byte, i int, v byte) {
	w := (*uint32)(unsafe.Pointer(&buf[i&^3]))
	for {
		old := atomic.LoadUint32(w)
		nw := old
		(*[4]byte)(unsafe.Pointer(&nw))[i&3] = v
		if atomic.CompareAndSwapUint32(w, old, nw) {
			return
		}
	}
}

// ErrStalled: the peer stopped answering during a latency test.
var ErrStalled = errors.New("peer stopped answering")

// pingRunner plays one side of the ping-pong: ibverbs.PingPong's contract
// (round k, from 1, writes byte k; Run makes at most rounds round trips, the
// writing side storing each one's time in rtts; Run(nil, 0, 0) only reports
// the status; Stop ends a Run from any goroutine). A verbs session's runs
// in C (nativePinger); any other PingSession's in Go (pinger).
type pingRunner interface {
	Run(rtts []time.Duration, rounds int, d time.Duration) (ibverbs.PingStatus, error)
	Stop()
	Close() error
}

// nativePinger is a PingSession whose ping-pong runs natively.
type nativePinger interface {
	pingPong(device string, size int, answer bool, stall time.Duration) (pingRunner, error)
}

// newPingRunner is s's side of a ping-pong of size bytes: answer for the
// server's, which waits for each write and writes back. stall bounds any
// one wait. Close it before s.
func newPingRunner(s PingSession, device string, size int, answer bool, stall time.Duration) (pingRunner, error) {
	if n, ok := s.(nativePinger); ok {
		return n.pingPong(device, size, answer, stall)
	}
	return newPinger(s, device, size, answer, stall)
}

// verbsPing is an ibverbs.PingPong whose errors name the device.
type verbsPing struct {
	*ibverbs.PingPong
	device string
}

func (v verbsPing) Run(rtts []time.Duration, rounds int, d time.Duration) (ibverbs.PingStatus, error) {
	st, err := v.PingPong.Run(rtts, rounds, d)
	if err != nil {
		var we *ibverbs.WCError
		if errors.As(err, &we) {
			return st, &CompletionError{Device: v.device, Status: int(we.Status), Text: we.StatusStr}
		}
		return st, fmt.Errorf("%s: ping-pong after %d round trips: %w", v.device, st.Rounds, err)
	}
	return st, nil
}

// verbsPingPong is the C ping-pong on one QP, its CQ and MR, the peer's
// buffer at remote: this side's half of pingLayout.
func verbsPingPong(device string, cq *ibverbs.CQ, qp *ibverbs.QP, mr *ibverbs.MR, remote Endpoint, size, maxInline int, answer bool, stall, yieldAfter time.Duration) (pingRunner, error) {
	send, _ := pingLayout(size)
	pp, err := ibverbs.NewPingPong(ibverbs.PingConfig{CQ: cq, QP: qp, MR: mr, Remote: ibverbs.RemoteBuffer{Addr: remote.Addr, RKey: remote.RKey},
		Size: uint32(size), Send: uint64(send), Recv: 0, Inline: size <= maxInline, Answer: answer, Stall: stall, YieldAfter: yieldAfter})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", device, err)
	}
	return verbsPing{pp, device}, nil
}

// pinger is the ping-pong in Go over any PingSession (the fake and
// emulated links), one post and poll call per step; set up once so that
// the loop itself allocates nothing.
type pinger struct {
	s       PingSession
	device  string
	size    int
	src     int
	answer  bool
	recv    lastByte
	send    *byte
	comps   []Completion
	stall   time.Duration
	yielded time.Time
	st      ibverbs.PingStatus
	stop    atomic.Bool
	// waitStart is when the current wait began (check's first call of it).
	waitStart time.Time
}

func newPinger(s PingSession, device string, size int, answer bool, stall time.Duration) (*pinger, error) {
	send, bufSize := pingLayout(size)
	buf := s.Buffer()
	if len(buf) < bufSize {
		return nil, fmt.Errorf("%s: ping buffer of %d bytes, want %d", device, len(buf), bufSize)
	}
	return &pinger{s: s, device: device, size: size, src: send, answer: answer, recv: newLastByte(buf, size-1),
		send: &buf[send+size-1], comps: make([]Completion, 1), stall: stall, yielded: time.Now()}, nil
}

// spinCheck is how many polls pass between looks at the clock (stall,
// stop, the scheduler yield): a poll is a memory read of a few ns.
const spinCheck = 256

// Run implements pingRunner: each round trip is a post, the wait for the
// answer, then the reaping of the write's completion (on the writing side;
// the answering side waits first). The completion comes after the wait
// here, unlike ib_write_lat and the C loop: by the time the answer landed
// it is there, so the one poll (a cgo call on a device) is off the
// critical path.
func (p *pinger) Run(rtts []time.Duration, rounds int, d time.Duration) (ibverbs.PingStatus, error) {
	t := time.Now()
	deadline := t.Add(d)
	for i := range rounds {
		v := byte(p.st.Rounds + 1)
		if p.answer {
			if state := p.await(v); state != ibverbs.RunDone {
				return p.status(state), nil
			}
		}
		if err := p.post(v); err != nil {
			return p.status(ibverbs.RunDone), err
		}
		if !p.answer {
			if state := p.await(v); state != ibverbs.RunDone {
				return p.status(state), nil
			}
		}
		if state, err := p.reap(v); err != nil || state != ibverbs.RunDone {
			return p.status(state), err
		}
		p.st.Rounds++
		now := time.Now()
		if !p.answer {
			p.st.Last = now.Sub(t)
			if rtts != nil {
				rtts[i] = p.st.Last
			}
			t = now
		}
		p.yield(now)
		if i+1 < rounds {
			if p.stop.Load() {
				return p.status(ibverbs.RunStopped), nil
			}
			if !now.Before(deadline) {
				return p.status(ibverbs.RunDeadline), nil
			}
		}
	}
	return p.status(ibverbs.RunDone), nil
}

func (p *pinger) status(s ibverbs.RunState) ibverbs.PingStatus {
	st := p.st
	st.State = s
	if s != ibverbs.RunStalled {
		st.WaitingForCompletion = false
	}
	return st
}

// Stop implements pingRunner.
func (p *pinger) Stop() { p.stop.Store(true) }

// Close implements pingRunner.
func (p *pinger) Close() error { return nil }

// post sends value v: it becomes the last byte of the write.
func (p *pinger) post(v byte) error {
	*p.send = v
	if err := p.s.PostWrite(p.src, p.size); err != nil {
		return fmt.Errorf("%s: posting write #%d: %w", p.device, v, err)
	}
	return nil
}

// reap waits for the completion of the write posted last: one write
// outstanding, as ib_write_lat.
func (p *pinger) reap(v byte) (ibverbs.RunState, error) {
	for spins := 1; ; spins++ {
		n, err := p.s.Poll(p.comps)
		if err != nil {
			return ibverbs.RunDone, fmt.Errorf("%s: polling the completion queue: %w", p.device, err)
		}
		if n > 0 {
			if c := p.comps[0]; c.Status != 0 {
				return ibverbs.RunDone, &CompletionError{Device: p.device, QP: int(c.QP), Status: int(c.Status)}
			}
			return ibverbs.RunDone, nil
		}
		if spins%spinCheck == 0 {
			if state := p.check(spins); state != ibverbs.RunDone {
				p.st.WaitingForCompletion = true
				return state, nil
			}
		}
	}
}

// await spins until the peer's write of v has landed.
func (p *pinger) await(v byte) ibverbs.RunState {
	for spins := 1; p.recv.load() != v; spins++ {
		if spins%spinCheck == 0 {
			if state := p.check(spins); state != ibverbs.RunDone {
				return state
			}
		}
	}
	return ibverbs.RunDone
}

// check runs every spinCheck spins of a wait: Stop, the stall bound, the
// scheduler yield. RunDone: wait on.
func (p *pinger) check(spins int) ibverbs.RunState {
	now := time.Now()
	if spins == spinCheck {
		p.waitStart = now
	}
	if p.stop.Load() {
		return ibverbs.RunStopped
	}
	if now.Sub(p.waitStart) > p.stall {
		return ibverbs.RunStalled
	}
	if now.Sub(p.waitStart) > spinYieldAfter {
		runtime.Gosched()
		osYield()
		p.yielded = now
		return ibverbs.RunDone
	}
	p.yield(now)
	return ibverbs.RunDone
}

// spinYieldAfter: a wait longer than this gives the CPU away at every
// check, to the other goroutines of this P (Gosched) and to other threads
// (sched_yield). A healthy eRDMA round trip (about 2 x 16 µs) never gets
// there; where there are fewer CPUs (or Ps) than spinners (a one-vCPU VM
// running both ends, both ends in one process with GOMAXPROCS 1, software
// RDMA whose work runs in kernel threads) the peer and the device's work
// run at once instead of at the end of a time slice. The C loop
// (ibverbs.PingPong) yields the same way where pingYieldAfter says so.
const spinYieldAfter = ibverbs.DefaultPingYieldAfter

// pingYieldAfter is when the C ping-pong's waits start giving the CPU away:
// only where both ends spin on this host (sameHost) and it has fewer CPUs
// than those two spinners. Anywhere else a yield only hands the CPU to
// whatever else is runnable just as the peer's write lands: across the lab's
// two VMs (one vCPU each) the median round trip with yields was 1.05-1.2 x
// ib_write_lat's, without them 0.97-1.01 x (ib_write_lat never yields).
func pingYieldAfter(sameHost bool) time.Duration {
	if sameHost && runtime.NumCPU() < 2 {
		return spinYieldAfter
	}
	return -1 // never
}

// yield passes through the Go scheduler once a millisecond, as the Go
// write loop does (schedYield): otherwise sysmon takes the spinning
// goroutine's P.
func (p *pinger) yield(now time.Time) {
	if now.Sub(p.yielded) >= schedYield {
		runtime.Gosched()
		p.yielded = now
	}
}

// maxPingRun bounds one Run of a ping-pong between the loop's looks at
// progress; Stop (ctx) ends a Run at once.
const maxPingRun = time.Second

// pingEnd is the error of a Run that ended before its round trips: stopped
// (the cause of ctx) or stalled. v is the number of the round in progress.
func pingEnd(ctx context.Context, device string, st ibverbs.PingStatus, v byte) error {
	what := "the peer's write"
	if st.WaitingForCompletion {
		what = "the completion of write"
	}
	if st.State == ibverbs.RunStalled {
		return fmt.Errorf("%s: waiting for %s #%d: %w", device, what, v, ErrStalled)
	}
	cause := context.Cause(ctx)
	if cause == nil {
		cause = errors.New("stopped")
	}
	return fmt.Errorf("%s: waiting for %s #%d: %w", device, what, v, cause)
}

// pingLoop is the client's side: Warmup+Iterations round trips, each timed
// from the post of its write to the post of the next (ib_write_lat's
// interval: the post, the completion, the wait for the answer); samples
// get each measured round trip's half, as ib_write_lat reports. The caller
// stops r when ctx ends (context.AfterFunc).
func pingLoop(ctx context.Context, r pingRunner, device string, cfg LatencyConfig, samples []time.Duration) error {
	total := cfg.Warmup + cfg.Iterations
	st, err := r.Run(nil, 0, 0)
	if err != nil {
		return err
	}
	base := st.Rounds
	start := time.Now()
	progAt := start
	for done := 0; done < total; {
		n, rtts := total-done, samples[max(done-cfg.Warmup, 0):]
		if done < cfg.Warmup {
			n, rtts = cfg.Warmup-done, nil
		}
		d := maxPingRun
		if cfg.Progress != nil {
			d = min(d, max(cfg.ProgressInterval-time.Since(progAt), 0))
		}
		st, err = r.Run(rtts, n, d)
		done = int(st.Rounds - base)
		if err != nil {
			return err
		}
		if st.State == ibverbs.RunStopped || st.State == ibverbs.RunStalled {
			return pingEnd(ctx, device, st, byte(st.Rounds+1))
		}
		if now := time.Now(); cfg.Progress != nil && now.Sub(progAt) >= cfg.ProgressInterval {
			cfg.Progress(LatencyProgress{Device: device, Size: cfg.Size, Done: max(done-cfg.Warmup, 0),
				Iterations: cfg.Iterations, Elapsed: now.Sub(start), LastUS: us(st.Last / 2)})
			progAt = now
		}
	}
	for i := range samples {
		samples[i] /= 2
	}
	return nil
}

// pongLoop is the server's side: it answers total pings, each as soon as it
// lands, and returns how many it answered. The caller stops r when ctx
// ends.
func pongLoop(ctx context.Context, r pingRunner, device string, total int) (int, error) {
	st, err := r.Run(nil, 0, 0)
	if err != nil {
		return 0, err
	}
	base := st.Rounds
	for done := 0; done < total; {
		st, err = r.Run(nil, total-done, maxPingRun)
		done = int(st.Rounds - base)
		if err != nil {
			return done, err
		}
		if st.State == ibverbs.RunStopped || st.State == ibverbs.RunStalled {
			return done, pingEnd(ctx, device, st, byte(st.Rounds+1))
		}
	}
	return total, nil
}

// LatencyStats summarises one-way latencies. Times are in microseconds.
type LatencyStats struct {
	Iterations int     `json:"iterations"`
	MinUS      float64 `json:"min_us"`
	MedianUS   float64 `json:"median_us"` // ib_write_lat's t_typical
	AvgUS      float64 `json:"avg_us"`
	StdevUS    float64 `json:"stdev_us"` // population standard deviation
	P99US      float64 `json:"p99_us"`
	P999US     float64 `json:"p99_9_us"`
	MaxUS      float64 `json:"max_us"`
}

// NewLatencyStats computes the statistics of samples (not changed). The
// percentiles use ib_write_lat's rule, the sorted sample at index
// ceil(n*q) (the last one when that is past the end); the median is the
// middle sample, or the mean of the middle two. Unlike ib_write_lat, which
// drops its two largest samples before all of them, every sample counts.
func NewLatencyStats(samples []time.Duration) LatencyStats {
	n := len(samples)
	st := LatencyStats{Iterations: n}
	if n == 0 {
		return st
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, d := range s {
		sum += us(d)
	}
	st.AvgUS = sum / float64(n)
	var sq float64
	for _, d := range s {
		x := us(d) - st.AvgUS
		sq += x * x
	}
	st.StdevUS = math.Sqrt(sq / float64(n))
	st.MinUS, st.MaxUS = us(s[0]), us(s[n-1])
	if n%2 == 1 {
		st.MedianUS = us(s[n/2])
	} else {
		st.MedianUS = (us(s[n/2-1]) + us(s[n/2])) / 2
	}
	rank := func(q float64) float64 { return us(s[min(int(math.Ceil(float64(n)*q)), n-1)]) }
	st.P99US, st.P999US = rank(0.99), rank(0.999)
	return st
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// LatencyResult is one device's latency test at one size: the public schema
// of a `bw lat --json` result.
type LatencyResult struct {
	Device       string         `json:"device"`
	ServerDevice string         `json:"server_device"`
	Method       connect.Method `json:"method"` // "oob" | "rdma_cm" (resolved, never auto)
	Size         int            `json:"size"`   // bytes per write
	// Inline is the largest write sent inline (0: none); Warmup the
	// unmeasured round trips before the measured ones.
	Inline int `json:"inline"`
	Warmup int `json:"warmup"`
	LatencyStats
	// Samples are the measured one-way latencies (round trip / 2), in the
	// order measured; not in the JSON (the histogram plot draws them).
	Samples []time.Duration `json:"-"`
}

// LatencyReport is a whole `bw lat` run: the public schema of
// `bw lat --json`.
type LatencyReport struct {
	// Status is ok, warn (a median above ExpectUS) or fail (an error).
	Status   health.Severity `json:"status"`
	ExpectUS float64         `json:"expect_us,omitempty"`
	Results  []LatencyResult `json:"results"`
	Errors   []string        `json:"errors,omitempty"`
}

// NewLatencyReport judges results against expectUS (every result's median
// must be at most that; 0 for no threshold): the bandwidth rule inverted,
// lower is better.
func NewLatencyReport(results []LatencyResult, errs []error, expectUS float64) *LatencyReport {
	r := &LatencyReport{Status: health.OK, ExpectUS: expectUS, Results: results}
	if r.Results == nil {
		r.Results = []LatencyResult{}
	}
	for _, e := range errs {
		if e != nil {
			r.Status = health.Fail
			r.Errors = append(r.Errors, e.Error())
		}
	}
	if r.Status == health.OK && expectUS > 0 {
		if len(results) == 0 {
			r.Status = health.Warn
		}
		for _, res := range results {
			if res.MedianUS > expectUS {
				r.Status = health.Warn
			}
		}
	}
	return r
}
