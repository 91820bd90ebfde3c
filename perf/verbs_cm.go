package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/erdmakit/erdmakit/ibverbs"
)

// cmSession connects its QPs through librdmacm (iWARP-mode eRDMA needs it;
// RoCE devices can use it too). Each QP is a "lane" with its own rdma_cm
// connection and PD, CQ and buffer on that connection's context: the
// out-of-band exchange only carries the test's parameters, the buffers
// travel in rdma_cm's private data.
type cmSession struct {
	link     *VerbsLink
	cfg      OpenConfig
	listener *ibverbs.CMListener // server side
	lanes    []*cmLane
	local    []Endpoint
	seq      []uint64
	done     []uint64
	wcs      []ibverbs.WC
	next     int // lane Poll starts with
	empty    int
}

type cmLane struct {
	conn   *ibverbs.CMConn
	pd     *ibverbs.PD
	cq     *ibverbs.CQ
	buf    *ibverbs.Buffer
	mr     *ibverbs.MR
	qp     *ibverbs.QP
	remote ibverbs.Endpoint
}

func (l *VerbsLink) openCM(ctx context.Context, cfg OpenConfig) (Session, error) {
	s := &cmSession{link: l, cfg: cfg, local: make([]Endpoint, cfg.QPs),
		seq: make([]uint64, cfg.QPs), done: make([]uint64, cfg.QPs), wcs: make([]ibverbs.WC, 64)}
	for i := range s.local { // placeholders: the QPs exist only once connected
		s.local[i] = Endpoint{QPN: uint32(i + 1), RKey: 1}
	}
	if cfg.Server {
		ip, err := l.ipv4()
		if err != nil {
			return nil, err
		}
		s.listener, err = ibverbs.ListenCM(ctx, net.JoinHostPort(ip, "0"), ibverbs.CMConfig{Backlog: max(cfg.QPs, 16)})
		if err != nil {
			return nil, fmt.Errorf("%s: rdma_cm listen: %w", l.Device(), err)
		}
	}
	return s, nil
}

// ipv4 is the IPv4 address in the device's GID table (rdma_cm binds it).
func (l *VerbsLink) ipv4() (string, error) {
	gids, err := l.ctx.GIDs(l.opts.IBPort)
	if err != nil {
		return "", err
	}
	for _, g := range gids {
		if ip, ok := g.GID.IPv4(); ok {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("%s has no IPv4 address in its GID table (rdma_cm needs one)", l.Device())
}

func (s *cmSession) Local() []Endpoint { return s.local }

func (s *cmSession) CMAddr() string {
	if s.listener == nil {
		return ""
	}
	a := s.listener.Addr()
	return net.JoinHostPort(a.Addr().String(), strconv.Itoa(int(a.Port())))
}

// Connect accepts (server) or makes (client) one rdma_cm connection per QP.
func (s *cmSession) Connect(ctx context.Context, _ []Endpoint) error {
	for i := range s.cfg.QPs {
		var (
			conn *ibverbs.CMConn
			err  error
		)
		if s.cfg.Server {
			conn, err = s.listener.Accept(ctx)
		} else {
			conn, err = ibverbs.DialCM(ctx, s.cfg.CMAddr, ibverbs.CMConfig{})
		}
		if err != nil {
			return fmt.Errorf("rdma_cm connection %d of %d: %w", i+1, s.cfg.QPs, err)
		}
		lane := &cmLane{conn: conn}
		s.lanes = append(s.lanes, lane)
		if err := s.setup(ctx, lane); err != nil {
			return fmt.Errorf("rdma_cm connection %d of %d: %w", i+1, s.cfg.QPs, err)
		}
	}
	return nil
}

func (s *cmSession) setup(ctx context.Context, lane *cmLane) error {
	dev := lane.conn.Context()
	var err error
	if lane.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	depth := max(s.cfg.TxDepth, 1)
	if lane.cq, err = dev.CreateCQ(max(depth, 16)); err != nil {
		return err
	}
	if lane.buf, err = ibverbs.NewBuffer(s.cfg.BufSize); err != nil {
		return err
	}
	if lane.mr, err = lane.pd.RegMR(lane.buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite); err != nil {
		return err
	}
	if lane.qp, err = lane.conn.CreateQP(lane.pd, lane.cq, ibverbs.QPConfig{MaxSendWR: depth, MaxInlineData: s.cfg.MaxInline}); err != nil {
		return err
	}
	ep, err := lane.qp.Endpoint()
	if err != nil {
		return err
	}
	ep = ep.WithMR(lane.mr)
	if s.cfg.Server {
		// The client's buffer came with its request (the latency test's
		// server writes back into it).
		lane.remote = lane.conn.Remote()
		return lane.conn.Accept(ctx, ep)
	}
	lane.remote, err = lane.conn.Connect(ctx, ep)
	if err == nil && (lane.remote.Addr == 0 || lane.remote.Len < uint64(s.cfg.BufSize)) {
		err = fmt.Errorf("the server's buffer (%d bytes at %#x) cannot take %d-byte writes", lane.remote.Len, lane.remote.Addr, s.cfg.BufSize)
	}
	return err
}

func (s *cmSession) PostWrites(qp, n, size, every int) error {
	if qp >= len(s.lanes) {
		return errors.New("post before connect")
	}
	lane := s.lanes[qp]
	w := ibverbs.Writes{MR: lane.mr, RemoteAddr: lane.remote.Addr, RKey: lane.remote.RKey, Size: uint32(size), Count: n,
		SignalEvery: every, WRID: uint64(qp)<<wridShift | s.seq[qp], Inline: size <= s.cfg.MaxInline}
	if err := lane.qp.PostWrites(w); err != nil {
		return err
	}
	s.seq[qp] += uint64(n)
	return nil
}

// Poll polls every lane's CQ once, starting with a different lane each
// call, until c is full.
func (s *cmSession) Poll(c []Completion) (int, error) {
	total := 0
	for k := 0; k < len(s.lanes) && total < len(c); k++ {
		i := (s.next + k) % len(s.lanes)
		wcs := s.wcs[:min(len(c)-total, len(s.wcs))]
		n, err := s.lanes[i].cq.Poll(wcs)
		if err != nil {
			var we *ibverbs.WCError
			if errors.As(err, &we) {
				return 0, &CompletionError{Device: s.link.Device(), QP: int(we.WRID >> wridShift), Status: int(we.Status), Text: we.StatusStr}
			}
			return 0, err
		}
		for j := range n {
			wc := &wcs[j]
			qp := int(wc.WRID >> wridShift)
			if qp >= len(s.lanes) {
				return 0, fmt.Errorf("completion with work request id %#x names no QP", wc.WRID)
			}
			seq := wc.WRID&(1<<wridShift-1) + 1
			c[total] = Completion{QP: int32(qp), Writes: int32(seq - s.done[qp]), Status: int32(wc.Status)}
			s.done[qp] = seq
			total++
		}
	}
	if len(s.lanes) > 0 {
		s.next = (s.next + 1) % len(s.lanes)
	}
	if total == 0 {
		if s.empty++; s.empty%yieldEvery == 0 {
			osYield()
		}
	} else {
		s.empty = 0
	}
	return total, nil
}

// Close releases every lane (QP, MR, buffer, CQ, PD, then the connection)
// and the listener.
func (s *cmSession) Close() error {
	var errs []error
	for _, l := range s.lanes {
		if l.qp != nil {
			errs = append(errs, l.qp.Close())
		}
		if l.mr != nil {
			errs = append(errs, l.mr.Close())
		}
		if l.buf != nil {
			errs = append(errs, l.buf.Close())
		}
		if l.cq != nil {
			errs = append(errs, l.cq.Close())
		}
		if l.pd != nil {
			errs = append(errs, l.pd.Close())
		}
		errs = append(errs, l.conn.Close())
	}
	s.lanes = nil
	if s.listener != nil {
		errs = append(errs, s.listener.Close())
		s.listener = nil
	}
	return errors.Join(errs...)
}

// Buffer implements PingSession: the first lane's buffer (nil before
// Connect).
func (s *cmSession) Buffer() []byte {
	if len(s.lanes) == 0 || s.lanes[0].buf == nil {
		return nil
	}
	return s.lanes[0].buf.Bytes()
}

// PostWrite implements PingSession on the first lane.
func (s *cmSession) PostWrite(src, size int) error {
	if len(s.lanes) == 0 {
		return errors.New("post before connect")
	}
	lane := s.lanes[0]
	w := ibverbs.Writes{MR: lane.mr, Offset: uint64(src), RemoteAddr: lane.remote.Addr, RKey: lane.remote.RKey, Size: uint32(size),
		Count: 1, SignalEvery: 1, WRID: s.seq[0], Inline: size <= s.cfg.MaxInline}
	if err := lane.qp.PostWrites(w); err != nil {
		return err
	}
	s.seq[0]++
	return nil
}

// pingPong implements nativePinger: the ping-pong in C on the first lane.
func (s *cmSession) pingPong(device string, size int, answer bool, stall time.Duration) (pingRunner, error) {
	if len(s.lanes) == 0 {
		return nil, errors.New("post before connect")
	}
	l := s.lanes[0]
	// Where the peer runs is not known here: on one CPU, yield as if it
	// were this host.
	return verbsPingPong(device, l.cq, l.qp, l.mr, Endpoint{Addr: l.remote.Addr, RKey: l.remote.RKey}, size, s.cfg.MaxInline, answer, stall, pingYieldAfter(true))
}

// stream implements streamer: the write loop in C over every lane, each
// QP with its own CQ and MR.
func (s *cmSession) stream(cfg Config) (writeStream, error) {
	if len(s.lanes) == 0 {
		return nil, errors.New("post before connect")
	}
	sc := streamConfig(cfg)
	sc.Inline = cfg.Size <= s.cfg.MaxInline
	for _, l := range s.lanes {
		sc.QPs = append(sc.QPs, l.qp)
		sc.CQs = append(sc.CQs, l.cq)
		sc.MRs = append(sc.MRs, l.mr)
		sc.Remote = append(sc.Remote, ibverbs.RemoteBuffer{Addr: l.remote.Addr, RKey: l.remote.RKey})
	}
	return ibverbs.NewWriteStream(sc)
}
