//go:build linux && cgo

package ibverbs

/*
#include "stream.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// WriteStream runs an RDMA WRITE loop in C: one Run call posts every free
// send-queue slot of every QP (as lists) and busy-polls the CQs until the time
// asked for has passed, as perftest's loop does, where a Go loop makes a cgo
// call per post list and per poll and passes through the Go scheduler
// between them. Each signalled completion stands for the writes on its QP
// since the previous one: its work request id carries the QP index and
// their count, so a list is built once and posted unchanged, as perftest's.
// It allocates nothing per write or per Run.
//
// A stream is used from one goroutine at a time, except Stop; Close it
// before the QPs, MR and CQ it drives.
type WriteStream struct {
	s    *C.ek_stream
	cfg  StreamConfig
	cqs  []*CQ // each QP's
	ctx  *Context
	stop *int32     // s.stop, for Stop from another goroutine
	mu   sync.Mutex // Stop against Close
}

// NewWriteStream checks cfg and makes the stream.
func NewWriteStream(cfg StreamConfig) (*WriteStream, error) {
	n := len(cfg.QPs)
	cqs, mrs, err := cfg.perQP()
	if err != nil {
		return nil, err
	}
	switch {
	case n == 0 || len(cfg.Remote) != n:
		return nil, fmt.Errorf("ibverbs: NewWriteStream: %d QPs and %d remote buffers", n, len(cfg.Remote))
	case cfg.PostList < 0 || cfg.LowWater < 0 || cfg.Iterations < 0:
		return nil, errors.New("ibverbs: NewWriteStream: negative post list, low water mark or iterations")
	}
	for i, qp := range cfg.QPs {
		if qp == nil || qp.q == nil {
			return nil, fmt.Errorf("ibverbs: NewWriteStream: QP %d is closed", i)
		}
		if cfg.Depth <= 0 || cfg.Depth > int(qp.q.cap) {
			return nil, fmt.Errorf("ibverbs: NewWriteStream: depth %d outside 1..%d (QP %d's MaxSendWR)", cfg.Depth, int(qp.q.cap), i)
		}
		if cfg.Size == 0 || uint64(cfg.Size) > uint64(mrs[i].buf.size) {
			return nil, fmt.Errorf("ibverbs: NewWriteStream: size %d outside 1..%d (QP %d's MR)", cfg.Size, mrs[i].buf.size, i)
		}
	}
	s := C.ek_stream_new(C.int(n))
	if s == nil {
		return nil, fmt.Errorf("ibverbs: NewWriteStream: %w", syscall.ENOMEM)
	}
	qps := unsafe.Slice(s.qps, n)
	raddr := unsafe.Slice(s.raddr, n)
	rkey := unsafe.Slice(s.rkey, n)
	laddr := unsafe.Slice(s.laddr, n)
	lkey := unsafe.Slice(s.lkey, n)
	remaining := unsafe.Slice(s.remaining, n)
	distinct := unsafe.Slice(s.cqs, n)
	for i, qp := range cfg.QPs {
		qps[i] = qp.q
		raddr[i] = C.uint64_t(cfg.Remote[i].Addr)
		rkey[i] = C.uint32_t(cfg.Remote[i].RKey)
		laddr[i] = C.uint64_t(mrs[i].addr)
		lkey[i] = C.uint32_t(mrs[i].lkey)
		remaining[i] = C.int64_t(cfg.Iterations)
		if !slices.Contains(cqs[:i], cqs[i]) { // poll each CQ once a turn
			distinct[s.ncq] = cqs[i].cq
			s.ncq++
		}
	}
	s.size = C.uint32_t(cfg.Size)
	s.depth = C.int(cfg.Depth)
	s.post_list = C.int(min(cfg.PostList, cfg.Depth))
	s.low_water = C.int(cfg.LowWater)
	s.every = C.int(max(cfg.SignalEvery, 1))
	if cfg.Inline {
		s.inl = 1
	}
	if cfg.Iterations > 0 {
		s.iter_mode = 1
	}
	s.peak_window_ns = C.int64_t(max(cfg.PeakWindow, time.Millisecond))
	s.slack_ns = C.int64_t(max(cfg.Slack, 0))
	return &WriteStream{s: s, cfg: cfg, cqs: cqs, ctx: cqs[0].ctx, stop: (*int32)(unsafe.Pointer(&s.stop))}, nil
}

// perQP is each QP's CQ and MR: CQ and MR for all, or CQs and MRs.
func (cfg StreamConfig) perQP() ([]*CQ, []*MR, error) {
	n := len(cfg.QPs)
	cqs, mrs := cfg.CQs, cfg.MRs
	switch {
	case cfg.CQ != nil && cqs != nil, cfg.MR != nil && mrs != nil:
		return nil, nil, errors.New("ibverbs: NewWriteStream: a CQ and CQs, or an MR and MRs: one or the other")
	case cqs == nil && cfg.CQ == nil, mrs == nil && cfg.MR == nil:
		return nil, nil, errors.New("ibverbs: NewWriteStream: a CQ and an MR are needed")
	case cqs != nil && len(cqs) != n, mrs != nil && len(mrs) != n:
		return nil, nil, fmt.Errorf("ibverbs: NewWriteStream: %d QPs, %d CQs and %d MRs", n, len(cqs), len(mrs))
	}
	if cqs == nil {
		cqs = slices.Repeat([]*CQ{cfg.CQ}, n)
	}
	if mrs == nil {
		mrs = slices.Repeat([]*MR{cfg.MR}, n)
	}
	for i := range n {
		if cqs[i] == nil || cqs[i].cq == nil || mrs[i] == nil || mrs[i].mr == nil {
			return nil, nil, fmt.Errorf("ibverbs: NewWriteStream: QP %d's CQ or MR is missing or closed", i)
		}
	}
	return cqs, mrs, nil
}

// Run posts and polls for at most d (at least one round of posts and polls),
// returning sooner when every write is done (Iterations), when nothing is
// in flight after StopPosting, or after Stop. A failed post, poll or
// completion is an error (*Error, *WCError); the stream is then unusable.
func (w *WriteStream) Run(d time.Duration) (StreamStatus, error) {
	if w.s == nil {
		return StreamStatus{}, ErrClosed
	}
	state := C.ek_stream_run(w.s, C.int64_t(d))
	st := w.status(time.Duration(w.s.poll_ns))
	if state == C.EK_RUN_ERROR {
		return st, w.err()
	}
	st.State = RunState(state)
	return st, nil
}

func (w *WriteStream) status(poll time.Duration) StreamStatus {
	s := w.s
	return StreamStatus{Posted: uint64(s.posted), Completed: uint64(s.completed), InFlight: int(s.in_flight),
		PollTime: poll, PeakPerSec: float64(s.peak), Posts: uint64(s.posts), Polls: uint64(s.polls), Yields: uint64(s.yields)}
}

func (w *WriteStream) err() error {
	s := w.s
	switch s.err_kind {
	case C.EK_STREAM_ERR_POST:
		e := w.ctx.fail("ibv_post_send", s.err_rc).(*Error)
		e.Hint = fmt.Sprintf("QP %d: %d of %d WRITEs posted; the send queue may be full", int(s.err_qp), int(s.err_wrid), int(s.err_status))
		return e
	case C.EK_STREAM_ERR_POLL:
		return w.ctx.fail("ibv_poll_cq", s.err_rc)
	case C.EK_STREAM_ERR_WC:
		wc := WC{WRID: uint64(s.err_wrid), Status: WCStatus(s.err_status), VendorErr: uint32(s.err_vendor)}
		cq := w.cqs[0]
		if q := int(s.err_qp); q >= 0 && q < len(w.cfg.QPs) {
			wc.QPN, cq = w.cfg.QPs[q].qpn, w.cqs[q]
		}
		return cq.wcError(&wc)
	default:
		return fmt.Errorf("ibverbs: write stream: completion wr_id %#x matches no write posted on QP %d", uint64(s.err_wrid), int(s.err_qp))
	}
}

// StopPosting ends posting: the next Runs only poll, until nothing is in flight.
func (w *WriteStream) StopPosting() {
	if w.s != nil {
		w.s.posting = 0
	}
}

// StartPeak starts measuring the peak rate (PeakWindow windows) from now.
func (w *WriteStream) StartPeak() {
	if w.s != nil {
		C.ek_stream_peak_start(w.s)
	}
}

// StopPeak ends the peak measurement; StreamStatus.PeakPerSec keeps the best.
func (w *WriteStream) StopPeak() {
	if w.s != nil {
		w.s.peak_on = 0
	}
}

// Stop makes the Run in progress, or the next, return at once with
// RunStopped. It may be called from any goroutine, until Close.
func (w *WriteStream) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.s != nil {
		atomic.StoreInt32(w.stop, 1)
	}
}

// Close frees the stream (not its QPs, MR or CQ); it is idempotent. It
// must not run alongside Run.
func (w *WriteStream) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.s != nil {
		C.ek_stream_free(w.s)
		w.s = nil
	}
	return nil
}
