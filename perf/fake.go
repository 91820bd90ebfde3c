package perf

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/connect"
)

// fakeLink is an in-process emulated RDMA device: one wire of a known rate
// shared by all its queue pairs. A write completes when the wire has carried
// its bytes (writes queue behind each other), so a loop that keeps the wire
// busy measures exactly Gbps. Writes go nowhere; its transmit counters
// (tx_bytes_cnt, tx_pkts_cnt) move by what crossed the wire. It has no
// receive counters: a fake server cannot see what another fake link sent.
//
// fakeLink is safe for concurrent use. Use newFakeLink; importers and the
// CLI get one through NewEmulatedLink, perf's tests set its failure knobs.
type fakeLink struct {
	name string
	gbps float64
	// FailAfter, when > 0, makes the write that brings the link's total to
	// FailAfter complete with an error status (to test failure handling).
	FailAfter uint64
	// Latency is added to every write's time on the wire: the one-way
	// latency a ping-pong over this link measures (at least).
	Latency time.Duration
	// CloseDelay is added to every session's Close: a device slow to tear
	// its QPs down.
	CloseDelay time.Duration

	mu       sync.Mutex
	base     time.Time
	wireFree int64 // ns since base when the wire is next free
	nsPerB   float64
	txBytes  uint64
	txPkts   uint64
	written  uint64
	open     int
	nextQPN  uint32
	// bufs are the sessions' buffers by rkey, for the latency ping-pong
	// (a write into one delivers its last byte, which is what the pong
	// watches); a session's buffer exists once it asked for it.
	bufs map[uint32][]byte
}

// newFakeLink returns a fake device called name whose wire carries gbps
// Gbit/s (10^9 bit/s).
func newFakeLink(name string, gbps float64) *fakeLink {
	return &fakeLink{name: name, gbps: gbps, base: time.Now(), nsPerB: 8 / gbps, nextQPN: 0x100, bufs: map[uint32][]byte{}}
}

// NewEmulatedLink returns an in-process emulated device called name, for
// trying the protocol, a Server and the reports without RDMA hardware (the
// CLI's bw --emulate-gbps): one wire of gbps Gbit/s (10^9 bit/s, > 0) shared
// by its queue pairs, a write completing once the wire has carried its bytes
// plus latency (the one-way latency a ping-pong measures at least). Writes
// go nowhere; its transmit counters (tx_bytes_cnt, tx_pkts_cnt) move by what
// crossed the wire, and it has no receive counters.
func NewEmulatedLink(name string, gbps float64, latency time.Duration) Link {
	l := newFakeLink(name, gbps)
	l.Latency = latency
	return l
}

// Device implements Link.
func (l *fakeLink) Device() string { return l.name }

// Transport implements Link: "fake", connected like RoCE (out of band).
func (l *fakeLink) Transport() connect.Transport { return "fake" }

// OpenSessions is how many sessions are open: 0 after every test, failed or
// not, proves that everything was released.
func (l *fakeLink) OpenSessions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Counters implements Link.
func (l *fakeLink) Counters(context.Context) (map[string]uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return map[string]uint64{"tx_bytes_cnt": l.txBytes, "tx_pkts_cnt": l.txPkts}, nil
}

// Open implements Link.
func (l *fakeLink) Open(ctx context.Context, cfg OpenConfig) (Session, error) {
	if cfg.QPs <= 0 || cfg.BufSize <= 0 || (!cfg.Server && cfg.TxDepth <= 0) {
		return nil, fmt.Errorf("fake %s: open: qps %d, buffer %d, depth %d", l.name, cfg.QPs, cfg.BufSize, cfg.TxDepth)
	}
	if !(l.gbps > 0) || math.IsInf(l.gbps, 0) || l.Latency < 0 {
		return nil, fmt.Errorf("emulated %s: open: rate %v Gbit/s, latency %v: want a rate > 0 and a latency >= 0", l.name, l.gbps, l.Latency)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &fakeSession{link: l, cfg: cfg, local: make([]Endpoint, cfg.QPs)}
	for i := range s.local {
		l.nextQPN++
		s.local[i] = Endpoint{QPN: l.nextQPN, PSN: l.nextQPN * 7 & 0xffffff, MTU: 5, Addr: 0x7f0000000000, RKey: 0x1000 + l.nextQPN}
	}
	if !cfg.Server {
		s.ring = make([]fakeCompletion, cfg.QPs*cfg.TxDepth+1)
	}
	l.open++
	return s, nil
}

type fakeCompletion struct {
	done int64 // ns since base
	c    Completion
	size int
}

type fakeSession struct {
	link       *fakeLink
	cfg        OpenConfig
	local      []Endpoint
	remote     []Endpoint
	ring       []fakeCompletion
	head, tail int
	closed     bool
	buf        []byte // PingSession's buffer, made on first use
}

var errFakeClosed = errors.New("fake session closed")

func (s *fakeSession) Local() []Endpoint { return s.local }
func (s *fakeSession) CMAddr() string    { return "" }

func (s *fakeSession) Connect(ctx context.Context, remote []Endpoint) error {
	if s.closed {
		return errFakeClosed
	}
	if len(remote) != len(s.local) {
		return fmt.Errorf("fake %s: %d remote endpoints for %d QPs", s.link.name, len(remote), len(s.local))
	}
	for i, e := range remote {
		if e.QPN == 0 || e.RKey == 0 {
			return fmt.Errorf("fake %s: remote endpoint %d has QPN %#x rkey %#x", s.link.name, i, e.QPN, e.RKey)
		}
	}
	s.remote = remote
	return nil
}

func (s *fakeSession) PostWrites(qp, n, size, every int) error {
	switch {
	case s.closed:
		return errFakeClosed
	case s.cfg.Server:
		return errors.New("fake: the server side does not post")
	case s.remote == nil:
		return errors.New("fake: post before connect")
	case qp < 0 || qp >= len(s.local):
		return fmt.Errorf("fake: qp %d of %d", qp, len(s.local))
	case n <= 0 || n > s.cfg.TxDepth:
		return fmt.Errorf("fake: list of %d writes (send queue depth %d)", n, s.cfg.TxDepth)
	case size > s.cfg.BufSize:
		return fmt.Errorf("fake: write of %d bytes into a %d-byte buffer", size, s.cfg.BufSize)
	}
	every = max(every, 1)
	l := s.link
	l.mu.Lock()
	now := int64(time.Since(l.base))
	start := max(now, l.wireFree)
	l.wireFree = start + int64(float64(n*size)*l.nsPerB)
	failAt := -1
	if l.FailAfter > 0 && l.written < l.FailAfter && l.written+uint64(n) >= l.FailAfter {
		failAt = int(l.FailAfter - l.written - 1)
	}
	l.written += uint64(n)
	l.mu.Unlock()
	prev := -1
	for i := 0; i < n; i++ {
		if (i+1)%every != 0 && i != n-1 && i != failAt {
			continue
		}
		next := (s.tail + 1) % len(s.ring)
		if next == s.head {
			return fmt.Errorf("fake: send queue overrun on qp %d", qp)
		}
		c := Completion{QP: int32(qp), Writes: int32(i - prev)}
		if i == failAt {
			c.Status = 12 // IBV_WC_RETRY_EXC_ERR
		}
		done := start + int64(float64((i+1)*size)*l.nsPerB)
		s.ring[s.tail] = fakeCompletion{done: done, c: c, size: size}
		s.tail = next
		prev = i
	}
	return nil
}

func (s *fakeSession) Poll(c []Completion) (int, error) {
	if s.closed {
		return 0, errFakeClosed
	}
	if s.head == s.tail {
		return 0, nil
	}
	l := s.link
	now := int64(time.Since(l.base))
	n := 0
	var bytes, pkts uint64
	for n < len(c) && s.head != s.tail && s.ring[s.head].done <= now {
		fc := s.ring[s.head]
		c[n] = fc.c
		n++
		bytes += uint64(fc.c.Writes) * uint64(fc.size)
		pkts += uint64(fc.c.Writes)
		s.head = (s.head + 1) % len(s.ring)
	}
	if n > 0 {
		l.mu.Lock()
		l.txBytes += bytes
		l.txPkts += pkts
		l.mu.Unlock()
	}
	return n, nil
}

func (s *fakeSession) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	time.Sleep(s.link.CloseDelay)
	s.link.mu.Lock()
	if s.buf != nil {
		delete(s.link.bufs, s.local[0].RKey)
	}
	s.link.open--
	s.link.mu.Unlock()
	return nil
}

// Buffer implements PingSession.
func (s *fakeSession) Buffer() []byte {
	if s.buf == nil && !s.closed {
		s.buf = make([]byte, s.cfg.BufSize)
		s.link.mu.Lock()
		s.link.bufs[s.local[0].RKey] = s.buf
		s.link.mu.Unlock()
	}
	return s.buf
}

// PostWrite implements PingSession. The fake does the device's work inline
// in the post, as Soft-RoCE does: the call returns once the wire time and
// Latency have passed, with the write's last byte (what the ping-pong
// watches; the rest is not copied) in the peer's buffer on this link and
// its completion ready.
func (s *fakeSession) PostWrite(src, size int) error {
	switch {
	case s.closed:
		return errFakeClosed
	case s.remote == nil:
		return errors.New("fake: post before connect")
	case s.buf == nil || src < 0 || size <= 0 || src+size > len(s.buf):
		return fmt.Errorf("fake: write of %d bytes from offset %d of a %d-byte buffer", size, src, len(s.buf))
	}
	if s.ring == nil {
		s.ring = make([]fakeCompletion, 4)
	}
	next := (s.tail + 1) % len(s.ring)
	if next == s.head {
		return errors.New("fake: send queue overrun on qp 0")
	}
	l := s.link
	l.mu.Lock()
	now := int64(time.Since(l.base))
	start := max(now, l.wireFree)
	l.wireFree = start + int64(float64(size)*l.nsPerB)
	done := l.wireFree + int64(l.Latency)
	dst := l.bufs[s.remote[0].RKey]
	l.mu.Unlock()
	for int64(time.Since(l.base)) < done {
		runtime.Gosched()
	}
	// Only another session's buffer: links number their keys alike, so a
	// client writing to a peer on another link may find its own key here.
	if len(dst) >= size && &dst[0] != &s.buf[0] {
		storeByte(dst, size-1, s.buf[src+size-1])
	}
	s.ring[s.tail] = fakeCompletion{done: done, c: Completion{Writes: 1}, size: size}
	s.tail = next
	return nil
}
