package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"
)

// LatencyClient is the active side of a latency test: it connects to a
// Server (`bw serve`) and plays ib_write_lat's ping-pong from one local
// device.
type LatencyClient struct {
	Link Link
	// Addr is the server's out-of-band address, "host:port".
	Addr string
	// ServerDevice is the server device to test against; "" for its first.
	ServerDevice string
	Config       LatencyConfig
}

// latencyLimit is what a client asks the server to wait for the ping-pong:
// no rate is known in advance (the server caps it, and a stalled peer ends
// it after a step timeout anyway).
const latencyLimit = time.Hour

// Run connects to the server and runs one test per size (Config.Size when
// sizes is empty), in order, on one out-of-band connection. It returns the
// results of the tests that finished and the first error.
func (c *LatencyClient) Run(ctx context.Context, sizes []int) ([]LatencyResult, error) {
	nc, err := dialServer(ctx, c.Config.Validate(), c.Addr, c.Link.Device(), c.Config.withDefaults(0).StepTimeout)
	if err != nil {
		return nil, err
	}
	return c.RunConn(ctx, nc, sizes)
}

// RunConn is Run over a connection the caller made (Addr is not used); it
// closes nc.
func (c *LatencyClient) RunConn(ctx context.Context, nc net.Conn, sizes []int) ([]LatencyResult, error) {
	return runSizes(ctx, nc, c.Config.Validate(), c.Config.withDefaults(0).StepTimeout, sizes, c.Config.Size, func(oc *conn, size int) (LatencyResult, error) {
		return c.test(ctx, oc, c.Config.withDefaults(size))
	})
}

func (c *LatencyClient) test(ctx context.Context, oc *conn, cfg LatencyConfig) (res LatencyResult, err error) {
	l := c.Link
	dev := l.Device()
	fail := func(err error) error {
		var pe *PeerError
		if !errors.As(err, &pe) && !errors.Is(err, net.ErrClosed) {
			_ = oc.send(&PeerError{Message: err.Error()})
		}
		return fmt.Errorf("%s latency size %d: %w", dev, cfg.Size, err)
	}
	method := cfg.Method.Resolve(l.Transport())
	inline := cfg.inlineFor(dev)
	h := &LatencyHelloMsg{Device: c.ServerDevice, ClientDevice: dev, Transport: string(l.Transport()), Method: method,
		Size: uint64(cfg.Size), Iterations: uint32(cfg.Iterations), Warmup: uint32(cfg.Warmup), Inline: uint32(inline),
		Limit: latencyLimit}
	if err := oc.send(h); err != nil {
		return res, fail(err)
	}
	acc, err := expect[*acceptMsg](oc, oc.step, "accept")
	if err != nil {
		return res, fail(err)
	}
	_, bufSize := pingLayout(cfg.Size)
	sess, err := l.Open(ctx, OpenConfig{QPs: 1, TxDepth: 1, MaxInline: inline, BufSize: bufSize, Method: method, CMAddr: acc.CMAddr})
	if err != nil {
		return res, fail(fmt.Errorf("opening a QP: %w", err))
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s: closing: %w", dev, cerr)
		}
	}()
	ps, ok := sess.(PingSession)
	if !ok {
		return res, fail(fmt.Errorf("%s's sessions (%T) cannot run a latency test", dev, sess))
	}
	if err := oc.exchange(ctx, sess, 1, false); err != nil {
		return res, fail(err)
	}
	r, err := newPingRunner(ps, dev, cfg.Size, false, oc.step)
	if err != nil {
		return res, fail(err)
	}
	defer r.Close()
	defer context.AfterFunc(ctx, r.Stop)()
	samples := make([]time.Duration, cfg.Iterations)
	if err := oc.send(&startMsg{}); err != nil {
		return res, fail(err)
	}
	if _, err := expect[*startMsg](oc, oc.step, "the server's start"); err != nil {
		return res, fail(err)
	}
	start := time.Now()
	if err := pingLoop(ctx, r, dev, cfg, samples); err != nil {
		return res, fail(err)
	}
	trips := uint64(cfg.Warmup + cfg.Iterations)
	if err := oc.send(&DoneMsg{Messages: trips, Elapsed: time.Since(start)}); err != nil {
		return res, fail(err)
	}
	sd, err := expect[*DoneMsg](oc, oc.step, "the server's done")
	if err != nil {
		return res, fail(err)
	}
	if sd.Messages != trips {
		return res, fail(fmt.Errorf("the server answered %d pings, the client made %d: %w", sd.Messages, trips, ErrProtocol))
	}
	return LatencyResult{Device: dev, ServerDevice: acc.Device, Method: method, Size: cfg.Size,
		Inline: inline, Warmup: cfg.Warmup, LatencyStats: NewLatencyStats(samples), Samples: samples}, nil
}

// latencyTest is the server's side of a LatencyHello.
func (s *Server) latencyTest(ctx context.Context, c *conn, h *LatencyHelloMsg, t *ServerTest) error {
	l, method, release, err := s.begin(h.Device, h.Method, t)
	if err != nil {
		return err
	}
	defer release()
	size := int(h.Size)
	_, bufSize := pingLayout(size)
	sess, err := l.Open(ctx, OpenConfig{QPs: 1, TxDepth: 1, MaxInline: int(h.Inline), BufSize: bufSize, Method: method, Server: true})
	if err != nil {
		return fmt.Errorf("%s: opening a QP: %w", l.Device(), err)
	}
	closeSess := s.closer(l, sess)
	defer closeSess()
	ps, ok := sess.(PingSession)
	if !ok {
		return fmt.Errorf("%s's sessions (%T) cannot run a latency test", l.Device(), sess)
	}
	if err := c.send(&acceptMsg{Device: l.Device(), Transport: string(l.Transport()), CMAddr: sess.CMAddr()}); err != nil {
		return err
	}
	if err := c.exchange(ctx, sess, 1, true); err != nil {
		return fmt.Errorf("%s: %w", l.Device(), err)
	}
	r, err := newPingRunner(ps, l.Device(), size, true, c.step)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := expect[*startMsg](c, c.step, "start"); err != nil {
		return err
	}
	if err := c.send(&startMsg{}); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, s.waitLimit(h.Limit))
	stopPong := context.AfterFunc(pctx, r.Stop)
	n, err := pongLoop(pctx, r, l.Device(), int(h.Warmup)+int(h.Iterations))
	stopPong()
	cancel()
	if err != nil {
		return fmt.Errorf("after %d answers: %w", n, err)
	}
	done, err := expect[*DoneMsg](c, c.step, "the client's done")
	if err != nil {
		return err
	}
	t.Client = *done
	r.Close()
	closeSess() // before the last reply, as the bandwidth test does
	release()
	return c.send(&DoneMsg{Messages: uint64(n)})
}

// LatencyLoopback runs a server and, one device after the other (latency
// tests in parallel would measure each other), a client per link on this
// host: each device pings itself, one test per size. It returns every
// result and every error.
func LatencyLoopback(ctx context.Context, links []Link, cfg LatencyConfig, sizes []int) ([]LatencyResult, []error) {
	if len(links) == 0 {
		return nil, []error{errors.New("bw lat loopback: no devices")}
	}
	if err := cfg.Validate(); err != nil {
		return nil, []error{err}
	}
	addr, stop, err := serveLoopback(ctx, links, cfg.StepTimeout)
	if err != nil {
		return nil, []error{fmt.Errorf("bw lat loopback: %w", err)}
	}
	results, errs := runLatencyClients(ctx, links, addr, func(l Link) string { return l.Device() }, cfg, sizes)
	if err := stop(); err != nil {
		errs = append(errs, err)
	}
	return results, errs
}

// RunLatencyClients runs a latency client per link against the server at
// addr, one after the other (not in parallel: they would measure each
// other), each against serverDev; "": as Clients, with one link the
// server's first device, with several each link's namesake.
func RunLatencyClients(ctx context.Context, links []Link, addr, serverDev string, cfg LatencyConfig, sizes []int) ([]LatencyResult, []error) {
	if err := cfg.Validate(); err != nil {
		return nil, []error{err}
	}
	return runLatencyClients(ctx, links, addr, Clients{Links: links, ServerDevice: serverDev}.serverDevice, cfg, sizes)
}

func runLatencyClients(ctx context.Context, links []Link, addr string, serverDev func(Link) string, cfg LatencyConfig, sizes []int) ([]LatencyResult, []error) {
	var (
		results []LatencyResult
		errs    []error
	)
	for _, l := range links {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.Device(), ctx.Err()))
			continue
		}
		c := &LatencyClient{Link: l, Addr: addr, ServerDevice: serverDev(l), Config: cfg}
		rs, err := c.Run(ctx, sizes)
		results = append(results, rs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Size != results[j].Size {
			return results[i].Size < results[j].Size
		}
		return results[i].Device < results[j].Device
	})
	return results, errs
}
