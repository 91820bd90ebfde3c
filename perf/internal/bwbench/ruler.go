package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erdmakit/erdmakit/erdma"
)

// rulerCounters are the rxe counters the ruler reads: the packets received,
// and the two kinds of retransmission its responder drops.
func rulerCounters() [3]string {
	return [3]string{"rcvd_pkts", "duplicate_request", "out_of_seq_request"}
}

const (
	rulerEvery = 50 * time.Millisecond // between samples
	rulerSlow  = time.Millisecond      // a sample whose reads took longer is dropped
	// rulerGuard is cut from both ends of the measured phase the ruler
	// infers, for where the traffic's first and last packets fall between
	// samples.
	rulerGuard = 250 * time.Millisecond
	maxSamples = 1 << 16 // bounds a run's samples (an hour at rulerEvery)
)

// rulerResult is the ruler's reading of one run.
type rulerResult struct {
	PPS     float64 // good packets per second over the window
	Samples int     // in the window
	Dropped int     // whole run, reads slower than rulerSlow
	Window  time.Duration
	Err     error
}

// ruler measures every tool the same way, from outside: one rxe device's
// packet counters, sampled through the run. Each tool's figure is its
// own count over its own window, and those windows are placed differently:
// in the lab, `ib_write_bw -l` at 64 KiB reports more than its packets show
// against ours (about 1.5% on the real-time guest, 6-10% under qemu -icount;
// docs/bw.md). The ruler's ratios are the fair comparison.
//
// A rxe device counts every packet it receives (rcvd_pkts) and, among them,
// the retransmitted ones its responder drops (duplicate_request,
// out_of_seq_request). In loopback the received packets are the writes'
// packets and their acknowledgements, so the good packets (goodPackets)
// move in proportion to the writes delivered, for every tool alike:
// ceil(size / MTU) + 1 per write.
type ruler struct {
	host erdma.Host
	dev  string
	port int
}

func newRuler(ctx context.Context, device string, port int) (ruler, error) {
	r := ruler{host: erdma.LiveHost(), dev: device, port: port}
	c, err := erdma.OpenCounters(ctx, r.host, device, port)
	if err != nil {
		return ruler{}, fmt.Errorf("ruler: %w", err)
	}
	defer c.Close()
	for _, n := range rulerCounters() {
		if !slices.Contains(c.Names(), n) {
			return ruler{}, fmt.Errorf("ruler: %s port %d has no %s counter (a rxe device has)", device, port, n)
		}
	}
	return r, nil
}

// goodPackets is the packets received less the retransmissions and what
// they cost: rxe's responder answers every duplicate WRITE packet with an
// ACK of its own ("Ack again", IBA C9-105), which the requester's side
// counts as received too, so each duplicate is taken off twice. In the lab
// (iterations mode, -n 2048, 1 QP 64 KiB) that leaves 65.00 packets per
// write for every tool, where taking each off once left 65.07 for ours,
// 65.53 for ib_write_bw -l 32 and 67.33 for plain ib_write_bw, whose
// retransmission timeouts are the most frequent (docs/bw.md).
func goodPackets(rcvd, duplicate, outOfSeq int64) int64 {
	return rcvd - 2*duplicate - outOfSeq
}

type rulerPoint struct {
	t    time.Duration // since the first sample
	good int64
}

// start samples until stop is closed or ctx ends, then sends its reading:
// the slope of the good packets over the measured phase, taken as the
// traffic's span (from the first sample that moved to the last) less margin
// and rulerGuard at each end. The sampling goroutine's thread runs at
// SCHED_FIFO where it may (root), so that a busy-polling tool on a one-CPU
// guest does not delay its samples; a sample is a clock read on each side of
// the counter reads, and dropped when they took longer than rulerSlow.
func (r ruler) start(ctx context.Context, margin time.Duration, stop <-chan struct{}) <-chan rulerResult {
	out := make(chan rulerResult, 1)
	go func() {
		// The thread ends with the goroutine (still locked), so its
		// priority does not leak to the rest of the process.
		runtime.LockOSThread()
		_ = unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 50}, 0)
		out <- r.sample(ctx, margin, stop)
	}()
	return out
}

func (r ruler) sample(ctx context.Context, margin time.Duration, stop <-chan struct{}) rulerResult {
	// erdma's reader keeps every counter of the port open and reads each
	// with one pread, without allocating.
	c, err := erdma.OpenCounters(ctx, r.host, r.dev, r.port)
	if err != nil {
		return rulerResult{Err: fmt.Errorf("ruler: %w", err)}
	}
	defer c.Close()
	var (
		pts     []rulerPoint
		dropped int
		begin   = time.Now()
		m       = map[string]uint64{}
		names   = rulerCounters()
	)
	read := func() (int64, error) {
		if err := c.Read(ctx, m); err != nil {
			return 0, fmt.Errorf("ruler: %w", err)
		}
		var v [len(names)]int64
		for i, n := range names {
			x, ok := m[n]
			if !ok {
				return 0, fmt.Errorf("ruler: %s port %d: no %s counter", r.dev, r.port, n)
			}
			v[i] = int64(x)
		}
		return goodPackets(v[0], v[1], v[2]), nil
	}
	for len(pts) < maxSamples {
		a := time.Now()
		good, err := read()
		b := time.Now()
		if err != nil {
			return rulerResult{Err: err}
		}
		if b.Sub(a) <= rulerSlow {
			pts = append(pts, rulerPoint{t: a.Sub(begin) + b.Sub(a)/2, good: good})
		} else {
			dropped++
		}
		select {
		case <-stop:
			return reading(pts, margin, dropped)
		case <-ctx.Done():
			return rulerResult{Err: ctx.Err()}
		default:
		}
		// A plain nanosleep: the thread sleeps in the kernel and wakes at
		// its own priority, not through the Go scheduler's timers.
		ts := unix.NsecToTimespec(rulerEvery.Nanoseconds())
		_ = unix.Nanosleep(&ts, nil)
	}
	return reading(pts, margin, dropped)
}

// reading is the least-squares slope of the good packets over the run's
// measured phase, inferred from pts.
func reading(pts []rulerPoint, margin time.Duration, dropped int) rulerResult {
	first, last := -1, -1
	for i := 1; i < len(pts); i++ {
		if pts[i].good != pts[i-1].good {
			if first < 0 {
				first = i - 1
			}
			last = i
		}
	}
	if first < 0 {
		return rulerResult{Dropped: dropped, Err: fmt.Errorf("ruler: no packets in %d samples", len(pts))}
	}
	from, to := pts[first].t+margin+rulerGuard, pts[last].t-margin-rulerGuard
	var xs, ys []float64
	for _, p := range pts {
		if p.t >= from && p.t <= to {
			xs, ys = append(xs, p.t.Seconds()), append(ys, float64(p.good))
		}
	}
	if len(xs) < 3 {
		return rulerResult{Dropped: dropped, Err: fmt.Errorf("ruler: %d samples in the measured phase (%s of traffic)", len(xs), pts[last].t-pts[first].t)}
	}
	return rulerResult{PPS: slope(xs, ys), Samples: len(xs), Dropped: dropped, Window: to - from}
}

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}
