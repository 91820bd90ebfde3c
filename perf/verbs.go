package perf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/ibverbs"
)

// VerbsOptions configures a VerbsLink.
type VerbsOptions struct {
	// Root is the host root under which sys/class/infiniband's counters are
	// read ("/" when empty).
	Root string
	// IBPort is the device port (default 1).
	IBPort int
	// GIDIndex is the source GID index; < 0 picks the RoCE v2 entry holding
	// an IPv4-mapped address (what the eRDMA guide and NCCL use).
	GIDIndex int
}

// VerbsLink is a real RDMA device driven through package ibverbs.
type VerbsLink struct {
	ctx       *ibverbs.Context
	opts      VerbsOptions
	transport connect.Transport
}

// OpenVerbsLink opens device name. Close it when done (after every Session).
func OpenVerbsLink(name string, o VerbsOptions) (*VerbsLink, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.IBPort <= 0 {
		o.IBPort = 1
	}
	c, err := ibverbs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	l := &VerbsLink{ctx: c, opts: o}
	pa, err := c.QueryPort(o.IBPort)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s port %d: %w", name, o.IBPort, err)
	}
	switch {
	case c.Transport() == ibverbs.TransportIWARP:
		l.transport = connect.IWARP
	case pa.LinkLayer == ibverbs.LinkLayerEthernet:
		l.transport = connect.RoCE
	default:
		l.transport = connect.IB
	}
	if pa.State != ibverbs.PortActive {
		c.Close()
		return nil, fmt.Errorf("%s port %d is %s, not ACTIVE (check the netdev's IP address)", name, o.IBPort, pa.State)
	}
	return l, nil
}

// Device implements Link.
func (l *VerbsLink) Device() string { return l.ctx.Name() }

// Transport implements Link: "roce", "iwarp" or "ib".
func (l *VerbsLink) Transport() connect.Transport { return l.transport }

// Counters implements Link (sysfs hw_counters of the link's port).
func (l *VerbsLink) Counters(ctx context.Context) (map[string]uint64, error) {
	return erdma.ReadCounters(ctx, hostAt(l.opts.Root), l.ctx.Name(), l.opts.IBPort)
}

// Close closes the device; an error wrapping EBUSY while a Session is open.
func (l *VerbsLink) Close() error { return l.ctx.Close() }

// wridShift puts the QP index above a 40-bit per-QP write sequence in a
// work request id.
const wridShift = 40

// Open implements Link: one PD, one CQ for every QP, one buffer registered
// for local and remote write, cfg.QPs RC QPs.
func (l *VerbsLink) Open(ctx context.Context, cfg OpenConfig) (_ Session, err error) {
	if cfg.QPs <= 0 || cfg.BufSize <= 0 {
		return nil, fmt.Errorf("%s: open: %d QPs, %d-byte buffer", l.Device(), cfg.QPs, cfg.BufSize)
	}
	if cfg.Method == connect.RDMACM {
		return l.openCM(ctx, cfg)
	}
	depth := max(cfg.TxDepth, 1)
	s := &verbsSession{link: l, cfg: cfg}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.pd, err = l.ctx.AllocPD(); err != nil {
		return nil, err
	}
	if s.cq, err = l.ctx.CreateCQ(max(cfg.QPs*depth, 16)); err != nil {
		return nil, err
	}
	if s.buf, err = ibverbs.NewBuffer(cfg.BufSize); err != nil {
		return nil, err
	}
	if s.mr, err = s.pd.RegMR(s.buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite); err != nil {
		return nil, err
	}
	qc := ibverbs.QPConfig{MaxSendWR: depth, MaxInlineData: cfg.MaxInline, Port: l.opts.IBPort, OldPostSend: cfg.OldPostSend}
	if l.opts.GIDIndex >= 0 {
		qc.GIDIndex, qc.GIDIndexSet = l.opts.GIDIndex, true
	}
	s.local = make([]Endpoint, cfg.QPs)
	for i := range cfg.QPs {
		qp, err := s.pd.CreateQP(s.cq, qc)
		if err != nil {
			return nil, fmt.Errorf("QP %d of %d: %w", i+1, cfg.QPs, err)
		}
		s.qps = append(s.qps, qp)
		ep, err := qp.Endpoint()
		if err != nil {
			return nil, err
		}
		ep = ep.WithMR(s.mr)
		s.local[i] = Endpoint{QPN: ep.QPN, PSN: ep.PSN, GID: ep.GID, LID: ep.LID, MTU: uint8(ep.MTU), Addr: ep.Addr, RKey: ep.RKey}
	}
	s.seq = make([]uint64, cfg.QPs)
	s.done = make([]uint64, cfg.QPs)
	s.wcs = make([]ibverbs.WC, 64)
	return s, nil
}

type verbsSession struct {
	link   *VerbsLink
	cfg    OpenConfig
	pd     *ibverbs.PD
	cq     *ibverbs.CQ
	buf    *ibverbs.Buffer
	mr     *ibverbs.MR
	qps    []*ibverbs.QP
	local  []Endpoint
	remote []Endpoint
	seq    []uint64 // writes posted per QP
	done   []uint64 // writes completed per QP
	wcs    []ibverbs.WC
	empty  int // consecutive empty polls
}

// yieldEvery: after this many empty polls in a row, Poll yields the CPU
// once (see osYield); an idle hardware CQ costs one short syscall per
// yieldEvery polls.
const yieldEvery = 4

func (s *verbsSession) Local() []Endpoint { return s.local }
func (s *verbsSession) CMAddr() string    { return "" }

func (s *verbsSession) Connect(ctx context.Context, remote []Endpoint) error {
	if len(remote) != len(s.qps) {
		return fmt.Errorf("%d remote endpoints for %d QPs", len(remote), len(s.qps))
	}
	for i, r := range remote {
		if uint64(r.Addr) == 0 && !s.cfg.Server {
			return fmt.Errorf("remote endpoint %d has no buffer", i)
		}
		ep := ibverbs.Endpoint{QPN: r.QPN, PSN: r.PSN, GID: gid.GID(r.GID), LID: r.LID, MTU: ibverbs.MTU(r.MTU), Addr: r.Addr, RKey: r.RKey}
		if err := s.qps[i].Connect(ep); err != nil {
			return fmt.Errorf("QP %d: %w", i, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	s.remote = remote
	return nil
}

func (s *verbsSession) PostWrites(qp, n, size, every int) error {
	if s.remote == nil {
		return errors.New("post before connect")
	}
	r := &s.remote[qp]
	w := ibverbs.Writes{MR: s.mr, RemoteAddr: r.Addr, RKey: r.RKey, Size: uint32(size), Count: n,
		SignalEvery: every, WRID: uint64(qp)<<wridShift | s.seq[qp], Inline: size <= s.cfg.MaxInline}
	if err := s.qps[qp].PostWrites(w); err != nil {
		return err
	}
	s.seq[qp] += uint64(n)
	return nil
}

func (s *verbsSession) Poll(c []Completion) (int, error) {
	wcs := s.wcs[:min(len(c), len(s.wcs))]
	n, err := s.cq.Poll(wcs)
	if n == 0 && err == nil {
		if s.empty++; s.empty%yieldEvery == 0 {
			osYield()
		}
		return 0, nil
	}
	s.empty = 0
	for i := range n {
		wc := &wcs[i]
		qp := int(wc.WRID >> wridShift)
		if qp >= len(s.qps) {
			return 0, fmt.Errorf("completion with work request id %#x names no QP", wc.WRID)
		}
		seq := wc.WRID&(1<<wridShift-1) + 1
		c[i] = Completion{QP: int32(qp), Writes: int32(seq - s.done[qp]), Status: int32(wc.Status)}
		s.done[qp] = seq
	}
	if err != nil {
		var we *ibverbs.WCError
		if errors.As(err, &we) {
			return 0, &CompletionError{Device: s.link.Device(), QP: int(we.WRID >> wridShift), Status: int(we.Status), Text: we.StatusStr}
		}
		return 0, err
	}
	return n, nil
}

// Close releases the QPs, MR, buffer, CQ and PD, in that order.
func (s *verbsSession) Close() error {
	var errs []error
	for _, qp := range s.qps {
		errs = append(errs, qp.Close())
	}
	if s.mr != nil {
		errs = append(errs, s.mr.Close())
	}
	if s.buf != nil {
		errs = append(errs, s.buf.Close())
	}
	if s.cq != nil {
		errs = append(errs, s.cq.Close())
	}
	if s.pd != nil {
		errs = append(errs, s.pd.Close())
	}
	return errors.Join(errs...)
}

// Buffer implements PingSession.
func (s *verbsSession) Buffer() []byte { return s.buf.Bytes() }

// PostWrite implements PingSession.
func (s *verbsSession) PostWrite(src, size int) error {
	if s.remote == nil {
		return errors.New("post before connect")
	}
	r := &s.remote[0]
	w := ibverbs.Writes{MR: s.mr, Offset: uint64(src), RemoteAddr: r.Addr, RKey: r.RKey, Size: uint32(size), Count: 1,
		SignalEvery: 1, WRID: s.seq[0], Inline: size <= s.cfg.MaxInline}
	if err := s.qps[0].PostWrites(w); err != nil {
		return err
	}
	s.seq[0]++
	return nil
}

// stream implements streamer: the write loop in C on this session's QPs.
func (s *verbsSession) stream(cfg Config) (writeStream, error) {
	if s.remote == nil {
		return nil, errors.New("post before connect")
	}
	sc := streamConfig(cfg)
	sc.CQ, sc.QPs, sc.MR, sc.Inline = s.cq, s.qps, s.mr, cfg.Size <= s.cfg.MaxInline
	sc.Remote = make([]ibverbs.RemoteBuffer, len(s.remote))
	for i, r := range s.remote {
		sc.Remote[i] = ibverbs.RemoteBuffer{Addr: r.Addr, RKey: r.RKey}
	}
	return ibverbs.NewWriteStream(sc)
}

// pingPong implements nativePinger: the ping-pong in C on QP 0.
func (s *verbsSession) pingPong(device string, size int, answer bool, stall time.Duration) (pingRunner, error) {
	if s.remote == nil {
		return nil, errors.New("post before connect")
	}
	// The same GID: both ends on this device, so on this host's CPUs.
	sameHost := len(s.local) > 0 && s.local[0].GID == s.remote[0].GID
	return verbsPingPong(device, s.cq, s.qps[0], s.mr, s.remote[0], size, s.cfg.MaxInline, answer, stall, pingYieldAfter(sameHost))
}
