package perf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"time"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/health"
)

// Result is one device's test at one message size: the public schema of a
// `bw --json` result.
type Result struct {
	Device       string         `json:"device"`
	ServerDevice string         `json:"server_device"`
	Method       connect.Method `json:"method"` // "oob" | "rdma_cm" (resolved, never auto)
	QPs          int            `json:"qps"`
	Size         int            `json:"size"` // bytes per write
	// Messages and Bytes are the writes completed in the measured phase,
	// DurationS its length in seconds.
	Messages  uint64  `json:"messages"`
	Bytes     uint64  `json:"bytes"`
	DurationS float64 `json:"duration_s"`
	AvgGbps   float64 `json:"bw_avg_gbps"`  // Bytes*8/DurationS/1e9
	PeakGbps  float64 `json:"bw_peak_gbps"` // best PeakWindow
	Mpps      float64 `json:"msg_rate_mpps"`
	// TotalBytes/TotalMessages include the warm-up and cool-down margins:
	// what the device counters are compared with.
	TotalBytes    uint64 `json:"total_bytes"`
	TotalMessages uint64 `json:"total_messages"`
	// TX and RX prove the traffic went over RDMA: the client device's
	// transmit counter and the server device's receive counter against
	// TotalBytes (or TotalMessages for packet counters). Absent where the
	// device has no counters.
	TX *CounterProof `json:"tx_proof,omitempty"`
	RX *CounterProof `json:"rx_proof,omitempty"`
	// Counters and ServerCounters are the raw deltas (name -> delta).
	Counters       map[string]uint64 `json:"counters,omitempty"`
	ServerCounters map[string]uint64 `json:"server_counters,omitempty"`
}

func newResult(dev string, acc *acceptMsg, method connect.Method, cfg Config, m Measure) Result {
	return Result{
		Device: dev, ServerDevice: acc.Device, Method: method, QPs: cfg.QPs, Size: cfg.Size,
		Messages: m.Messages, Bytes: m.Bytes, DurationS: m.Elapsed.Seconds(),
		AvgGbps: m.AvgGbps(), PeakGbps: m.PeakGbps, Mpps: m.Mpps(),
		TotalBytes: m.TotalBytes, TotalMessages: m.TotalMessages,
	}
}

// Client is the active side: it connects to a Server and runs tests from
// one local device.
type Client struct {
	Link Link
	// Addr is the server's out-of-band address, "host:port".
	Addr string
	// ServerDevice is the server device to test against; "" for its first.
	ServerDevice string
	Config       Config
}

// Run connects to the server and runs one test per size (Config.Size when
// sizes is empty), in order, on one out-of-band connection. It returns the
// results of the tests that finished and the first error.
func (c *Client) Run(ctx context.Context, sizes []int) ([]Result, error) {
	nc, err := dialServer(ctx, c.Config.Validate(), c.Addr, c.Link.Device(), c.Config.withDefaults(0).StepTimeout)
	if err != nil {
		return nil, err
	}
	return c.RunConn(ctx, nc, sizes)
}

// RunConn is Run over a connection the caller made (Addr is not used); it
// closes nc.
func (c *Client) RunConn(ctx context.Context, nc net.Conn, sizes []int) ([]Result, error) {
	return runSizes(ctx, nc, c.Config.Validate(), c.Config.withDefaults(0).StepTimeout, sizes, c.Config.Size, func(oc *conn, size int) (Result, error) {
		return c.test(ctx, oc, c.Config.withDefaults(size))
	})
}

// dialServer opens the out-of-band connection to the bw server at addr for
// device dev's tests, unless the test's configuration is invalid.
func dialServer(ctx context.Context, invalid error, addr, dev string, step time.Duration) (net.Conn, error) {
	if invalid != nil {
		return nil, invalid
	}
	d := net.Dialer{Timeout: step}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: connecting to the bw server: %w", dev, err)
	}
	return nc, nil
}

// runSizes runs test once per size (def when sizes is empty), in order, on
// one out-of-band connection, which it closes (also when ctx ends, to
// unblock a test waiting on the peer); invalid (the configuration's
// error) runs none. It returns the results of the tests that finished and
// the first error.
func runSizes[R any](ctx context.Context, nc net.Conn, invalid error, step time.Duration, sizes []int, def int, test func(oc *conn, size int) (R, error)) ([]R, error) {
	defer nc.Close()
	if invalid != nil {
		return nil, invalid
	}
	if len(sizes) == 0 {
		sizes = []int{def}
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	oc := &conn{c: nc, step: step}
	var out []R
	for _, size := range sizes {
		r, err := test(oc, size)
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *Client) test(ctx context.Context, oc *conn, cfg Config) (res Result, err error) {
	l := c.Link
	dev := l.Device()
	fail := func(err error) error {
		var pe *PeerError
		if !errors.As(err, &pe) && !errors.Is(err, net.ErrClosed) {
			_ = oc.send(&PeerError{Message: err.Error()})
		}
		return fmt.Errorf("%s size %d: %w", dev, cfg.Size, err)
	}
	method := cfg.Method.Resolve(l.Transport())
	h := &HelloMsg{Device: c.ServerDevice, ClientDevice: dev, Transport: string(l.Transport()), Method: method,
		QPs: uint32(cfg.QPs), Size: uint64(cfg.Size), Iterations: uint64(cfg.Iterations),
		Duration: cfg.Duration, Warmup: cfg.Warmup, Cooldown: cfg.Cooldown, Limit: cfg.limit()}
	if err := oc.send(h); err != nil {
		return res, fail(err)
	}
	acc, err := expect[*acceptMsg](oc, oc.step, "accept")
	if err != nil {
		return res, fail(err)
	}
	sess, err := l.Open(ctx, OpenConfig{QPs: cfg.QPs, TxDepth: cfg.TxDepth, MaxInline: cfg.Inline,
		BufSize: cfg.Size, Method: method, CMAddr: acc.CMAddr, OldPostSend: cfg.OldPostSend})
	if err != nil {
		return res, fail(fmt.Errorf("opening %d QPs: %w", cfg.QPs, err))
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s: closing: %w", dev, cerr)
		}
	}()
	if err := oc.exchange(ctx, sess, cfg.QPs, false); err != nil {
		return res, fail(err)
	}
	before, cerr := l.Counters(ctx)
	if cerr != nil {
		slog.Warn("bw: reading counters", "device", dev, "err", cerr)
	}
	if err := oc.send(&startMsg{}); err != nil {
		return res, fail(err)
	}
	if _, err := expect[*startMsg](oc, oc.step, "the server's start"); err != nil {
		return res, fail(err)
	}
	m, err := WriteLoop(ctx, sess, dev, cfg)
	if err != nil {
		return res, fail(err)
	}
	after, cerr := l.Counters(ctx)
	if cerr != nil {
		slog.Warn("bw: reading counters", "device", dev, "err", cerr)
	}
	delta := CounterDelta(before, after)
	if err := oc.send(&DoneMsg{Bytes: m.Bytes, Messages: m.Messages, Elapsed: m.Elapsed, Counters: delta}); err != nil {
		return res, fail(err)
	}
	sd, err := expect[*DoneMsg](oc, oc.step, "the server's done")
	if err != nil {
		return res, fail(err)
	}
	res = newResult(dev, acc, method, cfg, m)
	res.Counters = delta
	res.ServerCounters = sd.Counters
	res.TX = proveTX(delta, m.TotalBytes, m.TotalMessages)
	res.RX = proveRX(sd.Counters, m.TotalBytes, m.TotalMessages)
	return res, nil
}

// Total is every device's result at one size added up (they ran at the
// same time).
type Total struct {
	Size     int    `json:"size"`
	Devices  int    `json:"devices"`
	Bytes    uint64 `json:"bytes"`
	Messages uint64 `json:"messages"`
	// DurationS is the longest device's measured phase.
	DurationS float64 `json:"duration_s"`
	AvgGbps   float64 `json:"bw_avg_gbps"`
	PeakGbps  float64 `json:"bw_peak_gbps"`
	Mpps      float64 `json:"msg_rate_mpps"`
}

// Report is a whole `bw` run: the public schema of `bw --json`.
type Report struct {
	// Status is ok, warn (below ExpectGbps) or fail (an error, or a
	// counter that did not move by what was written).
	Status     health.Severity `json:"status"`
	ExpectGbps float64         `json:"expect_gbps,omitempty"`
	Results    []Result        `json:"results"`
	Totals     []Total         `json:"totals"`
	Errors     []string        `json:"errors,omitempty"`
}

// NewReport adds up results per size and judges them against expectGbps
// (the aggregate at the largest size; 0 for no threshold).
func NewReport(results []Result, errs []error, expectGbps float64) *Report {
	r := &Report{Results: results, ExpectGbps: expectGbps, Status: health.OK}
	if r.Results == nil {
		r.Results = []Result{}
	}
	bySize := map[int]*Total{}
	for _, res := range results {
		t := bySize[res.Size]
		if t == nil {
			t = &Total{Size: res.Size}
			bySize[res.Size] = t
		}
		t.Devices++
		t.Bytes += res.Bytes
		t.Messages += res.Messages
		t.DurationS = max(t.DurationS, res.DurationS)
		t.AvgGbps += res.AvgGbps
		t.PeakGbps += res.PeakGbps
		t.Mpps += res.Mpps
		if (res.TX != nil && !res.TX.OK) || (res.RX != nil && !res.RX.OK) {
			r.Status = health.Fail
			r.Errors = append(r.Errors, fmt.Sprintf("%s size %d: device counters moved less than the bytes written", res.Device, res.Size))
		}
	}
	r.Totals = make([]Total, 0, len(bySize))
	for _, t := range bySize {
		r.Totals = append(r.Totals, *t)
	}
	sort.Slice(r.Totals, func(i, j int) bool { return r.Totals[i].Size < r.Totals[j].Size })
	for _, e := range errs {
		if e != nil {
			r.Status = health.Fail
			r.Errors = append(r.Errors, e.Error())
		}
	}
	if r.Status == health.OK && expectGbps > 0 {
		if len(r.Totals) == 0 || r.Totals[len(r.Totals)-1].AvgGbps < expectGbps {
			r.Status = health.Warn
		}
	}
	return r
}

// Loopback runs a server and one client per link on this host, the clients
// in parallel (each device writes into itself, as the field's per-NIC health
// checks do), one test per size. It returns every result and every error.
func Loopback(ctx context.Context, links []Link, cfg Config, sizes []int) ([]Result, []error) {
	if len(links) == 0 {
		return nil, []error{errors.New("bw loopback: no devices")}
	}
	if err := cfg.Validate(); err != nil {
		return nil, []error{err}
	}
	addr, stop, err := serveLoopback(ctx, links, cfg.StepTimeout)
	if err != nil {
		return nil, []error{fmt.Errorf("bw loopback: %w", err)}
	}
	results, cerrs := Clients{Links: links, Addr: addr, SameDevice: true, Config: cfg}.Run(ctx, sizes)
	var errs []error
	for _, err := range cerrs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := stop(); err != nil {
		errs = append(errs, err)
	}
	return results, errs
}

// serveLoopback starts a Server for links on a loopback port, for the
// loopback tests' clients on this host. stop ends it and returns what
// Serve returned.
func serveLoopback(ctx context.Context, links []Link, stepTimeout time.Duration) (addr string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	srv := &Server{Links: links, StepTimeout: stepTimeout}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	return ln.Addr().String(), func() error { cancel(); return <-served }, nil
}

// Sweep returns perftest -a's sizes: 2 B to 8 MiB, powers of two.
func Sweep() []int {
	var s []int
	for n := 2; n <= 8<<20; n <<= 1 {
		s = append(s, n)
	}
	return s
}
