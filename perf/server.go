package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/connect"
)

// Server is the passive side of `erdmakit bw`: it accepts out-of-band
// connections, opens queue pairs and a buffer on the requested device for
// each test, and reports its device's counter deltas. A client that speaks
// garbage, stalls or disappears only ends its own connection: every message
// has a deadline, every test's resources are closed, and the server goes on.
type Server struct {
	// Links are the devices this server offers; a Hello names one, or gets
	// the first.
	Links []Link
	// StepTimeout bounds every message (default 10 s).
	StepTimeout time.Duration
	// MaxTest caps how long a test's write phase may take (default 1 h).
	MaxTest time.Duration
	// MaxTests caps the tests running at once (default DefaultMaxTests); a
	// client asking for one more is refused with ErrBusy's message. Each
	// test holds queue pairs, a buffer and a share of the device.
	MaxTests int
	// MaxConns caps the connections held at once (default 4 x MaxTests);
	// one more is told the server is busy and closed.
	MaxConns int
	// Logger receives one line per test and per failed connection (default:
	// slog.Default()).
	Logger *slog.Logger
	// OnTest, when set, is called after every test, failed or not.
	OnTest func(ServerTest)

	once         sync.Once
	tests, conns chan struct{} // slots: a value held per running test / open connection
}

// DefaultMaxTests is Server.MaxTests' default: a test per eRDMA device of
// the largest instances, twice.
const DefaultMaxTests = 16

// ErrBusy is what a client is told when the server already runs MaxTests
// tests (or holds MaxConns connections); the client sees it as a PeerError.
var ErrBusy = errors.New("bw server busy")

// ServerTest is one test as the server saw it.
type ServerTest struct {
	Peer   string
	Device string
	// Hello is a bandwidth test's request; Latency, when set, a latency
	// test's instead.
	Hello   HelloMsg
	Latency *LatencyHelloMsg
	// Client is what the client reported; Counters the server device's
	// counter deltas over the write phase.
	Client   DoneMsg
	Counters map[string]uint64
	Err      error
}

// limits sizes the test and connection slots once.
func (s *Server) limits() (tests, conns chan struct{}) {
	s.once.Do(func() {
		n := s.MaxTests
		if n <= 0 {
			n = DefaultMaxTests
		}
		m := s.MaxConns
		if m <= 0 {
			m = 4 * n
		}
		s.tests, s.conns = make(chan struct{}, n), make(chan struct{}, m)
	})
	return s.tests, s.conns
}

func (s *Server) step() time.Duration {
	if s.StepTimeout > 0 {
		return s.StepTimeout
	}
	return DefaultStepTimeout
}

func (s *Server) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Serve accepts connections on ln until ctx is cancelled (then it closes
// ln, ends every connection and returns nil) or ln fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.Links) == 0 {
		return errors.New("bw server: no devices")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("bw server: accept: %w", err)
		}
		_, conns := s.limits()
		select {
		case conns <- struct{}{}:
		default:
			// Refuse cheaply: one frame, a short deadline, closed.
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			oc := &conn{c: c, step: time.Second}
			_ = oc.send(&PeerError{Message: fmt.Sprintf("%v: %d connections already open (--max-conns); try again later", ErrBusy, cap(conns))})
			_ = c.Close()
			s.log().Warn("bw server: connection refused, busy", "peer", c.RemoteAddr().String(), "max_conns", cap(conns))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-conns }()
			if err := s.ServeConn(ctx, c); err != nil {
				s.log().Warn("bw client failed", "peer", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// ServeConn runs the tests one client connection asks for, then closes it.
// It returns nil when the client closed the connection between tests.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		nc.Close()
	}()
	c := &conn{c: nc, step: s.step()}
	for first := true; ; first = false {
		m, err := c.recv(c.step)
		if err != nil {
			if ctx.Err() != nil || (!first && errors.Is(err, io.EOF)) {
				return nil
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				_ = c.send(&PeerError{Message: err.Error()})
			}
			return fmt.Errorf("waiting for hello: %w", err)
		}
		t := ServerTest{Peer: nc.RemoteAddr().String()}
		switch h := m.(type) {
		case *HelloMsg:
			t.Hello = *h
			t.Err = s.test(ctx, c, h, &t)
		case *LatencyHelloMsg:
			t.Latency = h
			t.Err = s.latencyTest(ctx, c, h, &t)
		default:
			err := fmt.Errorf("expected hello, got %s: %w", m.msgType(), ErrProtocol)
			_ = c.send(&PeerError{Message: err.Error()})
			return err
		}
		if s.OnTest != nil {
			s.OnTest(t)
		}
		if t.Err != nil {
			if ctx.Err() != nil { // the server is shutting down
				return nil
			}
			var pe *PeerError
			if !errors.As(t.Err, &pe) {
				_ = c.send(&PeerError{Message: t.Err.Error()})
			}
			return t.Err
		}
		if h := t.Latency; h != nil {
			s.log().Info("bw latency test", "peer", t.Peer, "device", t.Device, "size", h.Size,
				"round_trips", t.Client.Messages, "elapsed", t.Client.Elapsed)
			continue
		}
		h := t.Hello
		s.log().Info("bw test", "peer", t.Peer, "device", t.Device, "size", h.Size, "qps", h.QPs,
			"client_bytes", t.Client.Bytes, "client_gbps", gbps(t.Client.Messages, int(h.Size), t.Client.Elapsed))
	}
}

func (s *Server) link(name string) (Link, error) {
	if name == "" {
		return s.Links[0], nil
	}
	for _, l := range s.Links {
		if l.Device() == name {
			return l, nil
		}
	}
	names := make([]string, len(s.Links))
	for i, l := range s.Links {
		names[i] = l.Device()
	}
	return nil, fmt.Errorf("device %q is not served here (serving %v)", name, names)
}

// slot takes a test slot; release gives it back (once, however often it
// is called).
func (s *Server) slot() (release func(), err error) {
	tests, _ := s.limits()
	select {
	case tests <- struct{}{}:
		return sync.OnceFunc(func() { <-tests }), nil
	default:
		return nil, fmt.Errorf("%w: %d tests already running (--max-tests %d); try again later", ErrBusy, cap(tests), cap(tests))
	}
}

// begin starts a test (bandwidth or latency): it takes a test slot and
// returns the link the test asked for, the method to connect it, and the
// slot's release.
func (s *Server) begin(dev string, m connect.Method, t *ServerTest) (Link, connect.Method, func(), error) {
	release, err := s.slot()
	if err != nil {
		return nil, 0, nil, err
	}
	l, err := s.link(dev)
	if err != nil {
		release()
		return nil, 0, nil, err
	}
	method := m.Resolve(l.Transport())
	if l.Transport() == connect.IWARP && method != connect.RDMACM {
		release()
		return nil, 0, nil, fmt.Errorf("%s is iWARP (rdma_cm only) but the client asked for %s: both peers must be in the same mode", l.Device(), m)
	}
	t.Device = l.Device()
	return l, method, release, nil
}

// waitLimit is how long the server waits for a test's active phase: what
// the client asked for, capped by MaxTest.
func (s *Server) waitLimit(asked time.Duration) time.Duration {
	maxTest := s.MaxTest
	if maxTest <= 0 {
		maxTest = time.Hour
	}
	wait := min(asked, maxTest)
	if wait <= 0 {
		wait = maxTest
	}
	return wait
}

func (s *Server) test(ctx context.Context, c *conn, h *HelloMsg, t *ServerTest) error {
	l, method, release, err := s.begin(h.Device, h.Method, t)
	if err != nil {
		return err
	}
	defer release()
	sess, err := l.Open(ctx, OpenConfig{QPs: int(h.QPs), BufSize: int(h.Size), Method: method, Server: true})
	if err != nil {
		return fmt.Errorf("%s: opening %d QPs: %w", l.Device(), h.QPs, err)
	}
	closeSess := s.closer(l, sess)
	defer closeSess()
	if err := c.send(&acceptMsg{Device: l.Device(), Transport: string(l.Transport()), CMAddr: sess.CMAddr()}); err != nil {
		return err
	}
	if err := c.exchange(ctx, sess, int(h.QPs), true); err != nil {
		return fmt.Errorf("%s: %w", l.Device(), err)
	}
	if _, err := expect[*startMsg](c, c.step, "start"); err != nil {
		return err
	}
	before, cerr := l.Counters(ctx)
	if cerr != nil {
		s.log().Warn("bw server: counters", "device", l.Device(), "err", cerr)
	}
	if err := c.send(&startMsg{}); err != nil {
		return err
	}
	done, err := expect[*DoneMsg](c, s.waitLimit(h.Limit)+c.step, "the client's done")
	if err != nil {
		return err
	}
	t.Client = *done
	after, aerr := l.Counters(ctx)
	if aerr != nil {
		s.log().Warn("bw server: counters", "device", l.Device(), "err", aerr)
	}
	t.Counters = CounterDelta(before, after)
	reply := &DoneMsg{Counters: t.Counters}
	if p := proveRX(t.Counters, 0, 0); p != nil && p.Unit == "bytes" {
		reply.Bytes = p.Delta
	}
	// Resources and slot go back before the last reply: a client that has
	// its result may start its next test at once (it was told "busy").
	closeSess()
	release()
	return c.send(reply)
}

// closer returns a test's session Close, logged and run once, however
// often it is called.
func (s *Server) closer(l Link, sess Session) func() {
	return sync.OnceFunc(func() {
		if err := sess.Close(); err != nil {
			s.log().Warn("bw server: releasing the test's resources", "device", l.Device(), "err", err)
		}
	})
}

// exchange swaps endpoints with the peer and brings sess's qps QPs to RTS
// against the peer's. The client sends its endpoints first, the server
// answers with its own.
func (c *conn) exchange(ctx context.Context, sess Session, qps int, server bool) error {
	peer := "server"
	if server {
		peer = "client"
	}
	local := endpointsMsg(sess.Local())
	if !server {
		if err := c.send(&local); err != nil {
			return err
		}
	}
	remote, err := expect[*endpointsMsg](c, c.step, "the "+peer+"'s endpoints")
	if err != nil {
		return err
	}
	if len(*remote) != qps {
		return fmt.Errorf("%s sent %d endpoints for %d QPs: %w", peer, len(*remote), qps, ErrProtocol)
	}
	if server {
		if err := c.send(&local); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, c.step)
	err = sess.Connect(cctx, *remote)
	cancel()
	if err != nil {
		return fmt.Errorf("connecting QPs: %w", err)
	}
	return nil
}
