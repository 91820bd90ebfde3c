package monitor

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Handler returns an http.Handler serving c in Prometheus' exposition
// formats, from a registry of its own (nothing global). It answers GET and
// HEAD only (405 otherwise, before anything is read). It reads the host for
// one scrape at a time: requests that arrive while a read runs share its
// result; a request whose client goes away stops waiting, and the read is
// cancelled once no request waits for it.
func Handler(c *Collector) http.Handler {
	return &scrapeHandler{c: c, running: make(chan struct{}, 1)}
}

// scrapeHandler runs one gather (flight) at a time and shares it.
type scrapeHandler struct {
	c *Collector
	// running is held while a gather reads the host: a flight whose waiters
	// all left is cancelled, and the next one waits for it to unwind.
	running chan struct{}

	mu  sync.Mutex
	cur *flight // the flight new requests join; nil when none
}

// flight is one read of the host and the requests waiting for it.
type flight struct {
	done    chan struct{}
	mfs     []*dto.MetricFamily
	err     error
	cancel  context.CancelFunc
	waiters int // under scrapeHandler.mu
}

func (h *scrapeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.Header().Set("Connection", "close") // its body is not read
		http.Error(w, "method not allowed: the exporter serves GET /metrics", http.StatusMethodNotAllowed)
		return
	}
	f := h.join()
	select {
	case <-f.done:
		h.leave(f)
	case <-r.Context().Done(): // the client went away or was evicted
		h.leave(f)
		return
	}
	promhttp.HandlerFor(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return f.mfs, f.err }),
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// join returns the flight in progress, or starts one.
func (h *scrapeHandler) join() *flight {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		ctx, cancel := context.WithTimeout(context.Background(), h.c.timeout)
		f := &flight{done: make(chan struct{}), cancel: cancel}
		h.cur = f
		go h.gather(ctx, f)
	}
	h.cur.waiters++
	return h.cur
}

// leave drops a waiter; the last one to leave an unfinished flight cancels
// it, and later requests start a new one.
func (h *scrapeHandler) leave(f *flight) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.waiters--
	if f.waiters > 0 {
		return
	}
	select {
	case <-f.done:
	default:
		f.cancel()
		if h.cur == f {
			h.cur = nil
		}
	}
}

func (h *scrapeHandler) gather(ctx context.Context, f *flight) {
	defer func() {
		h.mu.Lock()
		if h.cur == f {
			h.cur = nil
		}
		h.mu.Unlock()
		f.cancel()
		close(f.done)
	}()
	select {
	case h.running <- struct{}{}:
	case <-ctx.Done():
		f.err = ctx.Err()
		return
	}
	defer func() { <-h.running }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.c.bound(ctx))
	f.mfs, f.err = reg.Gather()
}

// Limits bound what clients can hold of the exporter. A zero field takes
// its default (DefaultLimits).
type Limits struct {
	// ReadHeader, Read: time to send the request's headers, and the whole
	// request (a slow body is cut off here).
	ReadHeader, Read time.Duration
	// Write: time to answer, from the end of the request's headers (a
	// scrape's own timeout is 10 s).
	Write time.Duration
	// Idle: how long a keep-alive connection may wait for its next request.
	Idle time.Duration
	// MaxConns: connections held at once. One more closes an idle
	// keep-alive connection, else the oldest one still sending its request;
	// a connection whose request is being answered (a scrape in progress)
	// is never closed for a newcomer: while all are, new connections wait
	// in the kernel's accept queue.
	MaxConns int
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
}

// DefaultLimits are what Serve applies.
func DefaultLimits() Limits {
	return Limits{
		ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: 30 * time.Second,
		MaxConns: 256, MaxHeaderBytes: 16 << 10,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	l.ReadHeader, l.Read, l.Write, l.Idle = pick(l.ReadHeader, d.ReadHeader), pick(l.Read, d.Read), pick(l.Write, d.Write), pick(l.Idle, d.Idle)
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	return l
}

// shutdownGrace is how long a scrape in progress may finish once Serve's
// context ends; every other connection is closed at once (the README's
// promise: a signal ends a command within a second).
const shutdownGrace = 300 * time.Millisecond

// Serve serves /metrics on l until ctx is cancelled, then shuts down, with
// DefaultLimits.
func Serve(ctx context.Context, l net.Listener, c *Collector) error {
	return ServeLimits(ctx, l, c, Limits{})
}

type connKey struct{}

// ServeLimits is Serve with explicit limits.
func ServeLimits(ctx context.Context, l net.Listener, c *Collector, lim Limits) error {
	lim = lim.withDefaults()
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(c))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("erdmakit exporter: metrics at /metrics\n"))
	})
	cl := newCapListener(l, lim.MaxConns, c.logger())
	srv := &http.Server{
		// A GET being answered holds its connection against eviction until
		// the connection is idle again; a refused method does not (its
		// connection lingers closing).
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if cc, ok := r.Context().Value(connKey{}).(*capConn); ok {
				if r.Method == http.MethodGet || r.Method == http.MethodHead {
					cl.setState(cc, connBusy)
				} else {
					cl.setState(cc, connReading)
				}
			}
			mux.ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, s http.ConnState) {
			if cc, ok := c.(*capConn); ok && s == http.StateIdle {
				cl.setState(cc, connIdle)
			}
		},
		ReadHeaderTimeout: lim.ReadHeader,
		ReadTimeout:       lim.Read,
		WriteTimeout:      lim.Write,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(c.logger().Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(cl) }()
	select {
	case <-ctx.Done():
		// Stop accepting, close every connection that is not a scrape in
		// progress (slow or idle clients would hold Shutdown for their
		// timeouts), give the scrapes a moment, then close the rest.
		_ = cl.Close()
		cl.closeIdleAndReading()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		cl.closeAll()
		<-done
		return nil
	case err := <-done:
		cl.closeAll()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// connState is what a connection is doing, for eviction.
type connState uint8

const (
	connReading connState = iota // accepted, or sending a request's headers
	connBusy                     // a request is being answered
	connIdle                     // keep-alive, between requests
)

// capListener holds at most max connections: accepting one more closes an
// idle one, else the oldest one still sending its request; never one whose
// request is being answered. While every one is, it accepts nothing (new
// connections wait in the kernel's backlog, in order) until one is done.
type capListener struct {
	net.Listener
	max int
	log *slog.Logger
	// freed is signalled when a connection stops being answered or closes;
	// done is closed with the listener.
	freed     chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	seq     uint64
	conns   map[*capConn]uint64 // conn -> accept order
	evicted int
	refused int
	waits   int
}

func newCapListener(l net.Listener, max int, log *slog.Logger) *capListener {
	return &capListener{Listener: l, max: max, log: log, conns: map[*capConn]uint64{},
		freed: make(chan struct{}, 1), done: make(chan struct{})}
}

// Close closes the listener and wakes an Accept waiting for room.
func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		if err := l.waitRoom(); err != nil {
			return nil, err
		}
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &capConn{Conn: c, l: l, accepted: time.Now()}
		if l.admit(cc) {
			return cc, nil
		}
	}
}

// waitRoom returns once a newcomer can be held: below the limit, or some
// held connection is not being answered.
func (l *capListener) waitRoom() error {
	for counted := false; ; counted = true {
		l.mu.Lock()
		room := len(l.conns) < l.max || l.victimLocked() != nil
		if !room && !counted {
			l.waits++
		}
		waits := l.waits
		l.mu.Unlock()
		if room {
			return nil
		}
		if !counted && (waits == 1 || waits%1000 == 0) {
			l.log.Warn("exporter: every connection is being answered; new ones wait", "max_conns", l.max, "waits_so_far", waits)
		}
		t := time.NewTimer(silentGrace) // a silent connection may come of age
		select {
		case <-l.freed:
		case <-t.C:
		case <-l.done:
			t.Stop()
			return net.ErrClosed
		}
		t.Stop()
	}
}

// silentGrace: a connection that has sent nothing is not closed for a
// newcomer before this age, so that its reader gets to run (under a flood
// a scrape just accepted is such a connection).
const silentGrace = 50 * time.Millisecond

// free wakes an Accept waiting for room.
func (l *capListener) free() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// admit makes room for cc and holds it, or closes it when every held
// connection is answering a request.
func (l *capListener) admit(cc *capConn) bool {
	l.mu.Lock()
	var victim *capConn
	full := len(l.conns) >= l.max
	if full {
		victim = l.victimLocked()
		if victim != nil {
			delete(l.conns, victim)
			l.evicted++
		} else {
			l.refused++
		}
	}
	if !full || victim != nil {
		l.seq++
		l.conns[cc] = l.seq
	}
	evicted, refused := l.evicted, l.refused
	l.mu.Unlock()
	switch {
	case victim != nil:
		_ = victim.Conn.Close()
		// Under a flood the accept loop never blocks, and the goroutines
		// reading the connections it accepted (a scrape's among them) would
		// wait behind it until their connection is the oldest and goes:
		// let them run.
		runtime.Gosched()
		if evicted == 1 || evicted%1000 == 0 {
			l.log.Warn("exporter: connection limit reached, closing idle or slow ones", "max_conns", l.max, "closed_so_far", evicted)
		}
		return true
	case full:
		_ = cc.Conn.Close()
		if refused == 1 || refused%1000 == 0 {
			l.log.Warn("exporter: connection limit reached with every connection being answered, refusing new ones", "max_conns", l.max, "refused_so_far", refused)
		}
		return false
	}
	return true
}

// victimLocked picks the connection to close for a newcomer: the oldest
// idle one, else the oldest that sent part of a request and stopped, else
// the oldest that sent nothing for silentGrace (or whose reader has not run:
// under a flood that is where a scrape just accepted waits), else none.
func (l *capListener) victimLocked() *capConn {
	rank := func(c *capConn) int {
		switch {
		case c.state == connIdle:
			return 0
		case c.progress:
			return 1
		}
		return 2
	}
	var best *capConn
	var bestSeq uint64
	bestRank := 3
	young := time.Now().Add(-silentGrace)
	for c, s := range l.conns {
		if c.state == connBusy || (c.state == connReading && !c.progress && c.accepted.After(young)) {
			continue
		}
		if r := rank(c); r < bestRank || (r == bestRank && s < bestSeq) {
			best, bestSeq, bestRank = c, s, r
		}
	}
	return best
}

func (l *capListener) setState(c *capConn, s connState) {
	l.mu.Lock()
	was := c.state
	c.state = s
	if s == connIdle {
		c.progress, c.tail = false, [3]byte{}
	}
	l.mu.Unlock()
	if was == connBusy && s != connBusy {
		l.free()
	}
}

// closeIdleAndReading closes every connection but those answering a request.
func (l *capListener) closeIdleAndReading() {
	l.mu.Lock()
	var victims []*capConn
	for c := range l.conns {
		if c.state != connBusy {
			victims = append(victims, c)
			delete(l.conns, c)
		}
	}
	l.mu.Unlock()
	for _, c := range victims {
		_ = c.Conn.Close()
	}
}

func (l *capListener) closeAll() {
	l.mu.Lock()
	conns := l.conns
	l.conns = map[*capConn]uint64{}
	l.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
}

type capConn struct {
	net.Conn
	l *capListener
	// Under l.mu: state; progress, some of the current request was read;
	// tail, its last three bytes (to see the end of its headers).
	state    connState
	accepted time.Time
	progress bool
	tail     [3]byte
	once     sync.Once
}

var headerEnd = []byte("\r\n\r\n")

// Read notes a request's progress: once its headers are complete it is
// about to be answered and no longer evictable (the handler confirms or
// undoes that).
func (c *capConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.l.mu.Lock()
		if c.state != connBusy {
			c.state, c.progress = connReading, true
			var edge [6]byte
			m := copy(edge[:], c.tail[:])
			m += copy(edge[m:], b[:min(n, 3)])
			if bytes.Contains(edge[:m], headerEnd) || bytes.Contains(b[:n], headerEnd) {
				c.state = connBusy
			}
			if n >= 3 {
				copy(c.tail[:], b[n-3:n])
			} else {
				c.tail = [3]byte(append(c.tail[n:], b[:n]...))
			}
		}
		c.l.mu.Unlock()
	}
	return n, err
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.free()
	})
	return err
}
