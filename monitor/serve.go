package monitor

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns an http.Handler serving c in Prometheus' exposition
// formats, from a registry of its own (nothing global).
func Handler(c *Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
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
	// MaxConns: connections held at once; a new one beyond it closes the
	// oldest, so a flood of idle or slow clients cannot lock out a scrape
	// (Prometheus' scrape is the newest connection, and brief).
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

// Serve serves /metrics on l until ctx is cancelled, then shuts down, with
// DefaultLimits.
func Serve(ctx context.Context, l net.Listener, c *Collector) error {
	return ServeLimits(ctx, l, c, Limits{})
}

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
		Handler:           mux,
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
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
		cl.closeAll()
		return nil
	case err := <-done:
		cl.closeAll()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// capListener holds at most max connections: accepting one more closes the
// oldest (which unblocks the server's goroutine serving it).
type capListener struct {
	net.Listener
	max int
	log *slog.Logger

	mu      sync.Mutex
	seq     uint64
	conns   map[*capConn]uint64 // conn -> accept order
	evicted int
}

func newCapListener(l net.Listener, max int, log *slog.Logger) *capListener {
	return &capListener{Listener: l, max: max, log: log, conns: map[*capConn]uint64{}}
}

func (l *capListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &capConn{Conn: c, l: l}
	var victim *capConn
	l.mu.Lock()
	if len(l.conns) >= l.max {
		var oldest uint64
		for k, s := range l.conns {
			if victim == nil || s < oldest {
				victim, oldest = k, s
			}
		}
		delete(l.conns, victim)
		l.evicted++
	}
	l.seq++
	l.conns[cc] = l.seq
	evicted := l.evicted
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close()
		if evicted == 1 || evicted%1000 == 0 {
			l.log.Warn("exporter: connection limit reached, closing the oldest", "max_conns", l.max, "closed_so_far", evicted)
		}
	}
	return cc, nil
}

// open is the number of connections held.
func (l *capListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
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
	l    *capListener
	once sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return err
}
