package perf

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/ibverbs"
)

// goStream is the test double of ibverbs.WriteStream: the same posting,
// polling and run rules, in Go, over any Session, so that streamLoop (the
// engine of native write loops) is tested on the emulated link. The lab
// tests the C stream (TestLabBwLoopbackMatchesCounters and the others run
// through it on rxe0).
type goStream struct {
	s           Session
	cfg         ibverbs.StreamConfig
	qps         int
	outstanding []int
	remaining   []int
	comps       []Completion
	posting     bool
	peakOn      bool
	winStart    time.Time
	winFrom     uint64
	st          ibverbs.StreamStatus
	stop        atomic.Bool
}

func (g *goStream) Run(d time.Duration) (ibverbs.StreamStatus, error) {
	deadline := time.Now().Add(d)
	for {
		posted := 0
		for qp := 0; g.posting && qp < g.qps; qp++ {
			for {
				free := g.cfg.Depth - g.outstanding[qp]
				n := g.cfg.PostList
				if n == 0 {
					n = free
				}
				last := false
				if g.cfg.Iterations > 0 && g.remaining[qp] <= n {
					n, last = g.remaining[qp], true
				}
				if n <= 0 || n > free || (n < g.cfg.LowWater && !last) {
					break
				}
				if err := g.s.PostWrites(qp, n, int(g.cfg.Size), g.cfg.SignalEvery); err != nil {
					return g.st, err
				}
				g.st.Posts++
				g.outstanding[qp] += n
				g.st.InFlight += n
				g.st.Posted += uint64(n)
				g.remaining[qp] -= n
				posted += n
			}
		}
		polled := time.Now()
		got := 0
		for {
			n, err := g.s.Poll(g.comps)
			g.st.Polls++
			if err != nil {
				return g.st, err
			}
			for _, c := range g.comps[:n] {
				if c.Status != 0 {
					return g.st, &ibverbs.WCError{Status: ibverbs.WCStatus(c.Status), WRID: uint64(c.QP) << wridShift, StatusStr: "fake"}
				}
				g.outstanding[c.QP] -= int(c.Writes)
				g.st.InFlight -= int(c.Writes)
				g.st.Completed += uint64(c.Writes)
				got += int(c.Writes)
			}
			if n < len(g.comps) {
				break
			}
		}
		now := time.Now()
		g.st.PollTime = now.Sub(polled)
		if g.peakOn && g.st.PollTime < g.cfg.Slack && now.Sub(g.winStart) >= g.cfg.PeakWindow {
			g.st.PeakPerSec = max(g.st.PeakPerSec, float64(g.st.Completed-g.winFrom)/now.Sub(g.winStart).Seconds())
			g.winStart, g.winFrom = now, g.st.Completed
		}
		switch {
		case g.cfg.Iterations > 0 && g.st.InFlight == 0 && allZero(g.remaining):
			g.st.State = ibverbs.RunDone
		case !g.posting && g.st.InFlight == 0:
			g.st.State = ibverbs.RunDrained
		case g.stop.Load():
			g.st.State = ibverbs.RunStopped
		case !now.Before(deadline):
			g.st.State = ibverbs.RunDeadline
		default:
			if got == 0 && posted == 0 {
				runtime.Gosched()
			}
			continue
		}
		return g.st, nil
	}
}

func (g *goStream) StopPosting() { g.posting = false }
func (g *goStream) StartPeak()   { g.peakOn, g.winStart, g.winFrom = true, time.Now(), g.st.Completed }
func (g *goStream) StopPeak()    { g.peakOn = false }
func (g *goStream) Stop()        { g.stop.Store(true) }
func (g *goStream) Close() error { return nil }

// streamLink is a fake link whose sessions run their write loops as
// streams (goStream), as verbs sessions do in C.
type streamLink struct{ *fakeLink }

type streamSession struct{ Session }

func (l streamLink) Open(ctx context.Context, cfg OpenConfig) (Session, error) {
	s, err := l.fakeLink.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return streamSession{s}, nil
}

func (s streamSession) stream(cfg Config) (writeStream, error) {
	sc := streamConfig(cfg)
	rem := make([]int, cfg.QPs)
	for i := range rem {
		rem[i] = cfg.Iterations
	}
	return &goStream{s: s.Session, cfg: sc, qps: cfg.QPs, outstanding: make([]int, cfg.QPs), remaining: rem,
		comps: make([]Completion, 64), posting: true}, nil
}

// The native loop's engine (streamLoop) measures the emulated wire as the
// Go loop does: within 1% in duration mode, every write in iterations mode,
// the counters moved by exactly what was written.
func TestStreamLoopMeasuresTheEmulatedRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		gbps float64
		cfg  Config
	}{
		{"duration 64KiB 4 QPs", 1, Config{Size: 65536, QPs: 4, Duration: 400 * time.Millisecond,
			Warmup: 100 * time.Millisecond, Cooldown: 100 * time.Millisecond}},
		{"duration 4KiB post list 64 cq mod 16", 0.5, Config{Size: 4096, QPs: 2, Duration: 400 * time.Millisecond,
			Warmup: 50 * time.Millisecond, Cooldown: 50 * time.Millisecond, PostList: 64, CQMod: 16, TxDepth: 2048}},
		{"iterations 64KiB 1 QP", 1, Config{Size: 65536, QPs: 1, Iterations: 2000, TxDepth: 512}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := 0.01
			if tc.cfg.Iterations > 0 {
				eps = 0.10
			}
			var r Result
			var link *fakeLink
			for attempt := 1; ; attempt++ { // a busy host may move a boundary: one of three exact
				link = newFakeLink("fake0", tc.gbps)
				results, errs := Loopback(context.Background(), []Link{streamLink{link}}, tc.cfg, nil)
				require.Empty(t, errs)
				require.Len(t, results, 1)
				r = results[0]
				rateOK := math.Abs(r.AvgGbps-tc.gbps) <= eps*tc.gbps
				// The window too: a run descheduled at its end overran
				// 0.4 s by 150 ms once, under `make test`'s load.
				windowOK := tc.cfg.Iterations > 0 || math.Abs(r.DurationS-tc.cfg.Duration.Seconds()) <= 0.1
				if rateOK && windowOK || attempt == 3 {
					break
				}
			}
			assert.InEpsilon(t, tc.gbps, r.AvgGbps, eps)
			assert.Equal(t, r.Messages*uint64(r.Size), r.Bytes)
			assert.GreaterOrEqual(t, r.PeakGbps, r.AvgGbps)
			if tc.cfg.Iterations > 0 {
				assert.Equal(t, uint64(tc.cfg.Iterations*tc.cfg.QPs), r.Messages)
				assert.Equal(t, r.Bytes, r.TotalBytes)
			} else {
				assert.InDelta(t, tc.cfg.Duration.Seconds(), r.DurationS, 0.1)
				assert.Greater(t, r.TotalBytes, r.Bytes)
				assert.LessOrEqual(t, r.PeakGbps, 1.5*tc.gbps, "the peak is a window's rate, not a burst's")
			}
			require.NotNil(t, r.TX)
			assert.True(t, r.TX.OK)
			assert.Equal(t, r.TotalBytes, r.TX.Delta)
			assert.Equal(t, 0, link.OpenSessions())
		})
	}
}

// A failed completion is a CompletionError naming its QP; a cancelled
// context ends the loop with the context's error; progress is reported
// from the loop's goroutine between runs.
func TestStreamLoopErrorsCancelAndProgress(t *testing.T) {
	link := newFakeLink("fake0", 5)
	link.FailAfter = 300
	_, errs := Loopback(context.Background(), []Link{streamLink{link}}, Config{Size: 8192, QPs: 4, Iterations: 1000}, nil)
	require.Len(t, errs, 1)
	var ce *CompletionError
	require.ErrorAs(t, errs[0], &ce)
	assert.Equal(t, 12, ce.Status)
	assert.Equal(t, 0, link.OpenSessions())

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	link = newFakeLink("fake0", 1)
	_, errs = Loopback(ctx, []Link{streamLink{link}}, Config{Size: 65536, QPs: 2, Duration: time.Hour}, nil)
	require.Len(t, errs, 1)
	assert.True(t, errors.Is(errs[0], context.DeadlineExceeded), "%v", errs[0])

	var got []Progress
	cfg := Config{Size: 65536, QPs: 4, Duration: 300 * time.Millisecond, Warmup: -1, Cooldown: -1,
		ProgressInterval: 50 * time.Millisecond, Progress: func(p Progress) { got = append(got, p) }}
	_, errs = Loopback(context.Background(), []Link{streamLink{newFakeLink("fake0", 1)}}, cfg, nil)
	require.Empty(t, errs)
	// About six reports in 300 ms; a loaded host may delay a run's return.
	assert.GreaterOrEqual(t, len(got), 2)
}
