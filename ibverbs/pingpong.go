//go:build linux && cgo

package ibverbs

/*
#include <stdlib.h>
#include "pingpong.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// PingPong runs one side of ib_write_lat's RDMA WRITE ping-pong in C
// (perftest's run_iter_lat_write): one Run call makes many round trips,
// each, as ib_write_lat's, a post, a spin on the CQ for the write's
// completion and a spin on the last byte of the receive area (a memory
// read; the answering side waits first), where a Go loop makes a cgo call
// per post and per poll of the CQ. The writing side times each round trip
// from one post to the next, one clock read per round trip. It allocates
// nothing per round trip or per Run.
//
// A ping-pong is used from one goroutine at a time, except Stop; Close it
// before the QP, MR and CQ it drives.
type PingPong struct {
	p    *C.ek_ping
	cfg  PingConfig
	stop *int32     // p.stop, for Stop from another goroutine
	mu   sync.Mutex // Stop against Close
}

// NewPingPong checks cfg and makes the ping-pong.
func NewPingPong(cfg PingConfig) (*PingPong, error) {
	switch {
	case cfg.CQ == nil || cfg.CQ.cq == nil || cfg.MR == nil || cfg.MR.mr == nil || cfg.QP == nil || cfg.QP.q == nil:
		return nil, errors.New("ibverbs: NewPingPong: a QP, its CQ and an MR are needed")
	case cfg.Size == 0:
		return nil, errors.New("ibverbs: NewPingPong: size 0")
	case cfg.Send+uint64(cfg.Size) > uint64(cfg.MR.buf.size) || cfg.Recv+uint64(cfg.Size) > uint64(cfg.MR.buf.size):
		return nil, fmt.Errorf("ibverbs: NewPingPong: %d bytes at %d (send) and %d (receive) do not fit the MR's %d", cfg.Size, cfg.Send, cfg.Recv, cfg.MR.buf.size)
	case cfg.Stall < 0:
		return nil, fmt.Errorf("ibverbs: NewPingPong: stall %s: want >= 0", cfg.Stall)
	}
	if cfg.Stall == 0 {
		cfg.Stall = 10 * time.Second
	}
	switch {
	case cfg.YieldAfter == 0:
		cfg.YieldAfter = DefaultPingYieldAfter
	case cfg.YieldAfter < 0:
		cfg.YieldAfter = 1<<63 - 1
	}
	p := (*C.ek_ping)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ek_ping{}))))
	if p == nil {
		return nil, fmt.Errorf("ibverbs: NewPingPong: %w", syscall.ENOMEM)
	}
	p.qp = cfg.QP.q
	p.cq = cfg.CQ.cq
	p.laddr = C.uint64_t(cfg.MR.addr + cfg.Send)
	p.lkey = C.uint32_t(cfg.MR.lkey)
	p.raddr = C.uint64_t(cfg.Remote.Addr)
	p.rkey = C.uint32_t(cfg.Remote.RKey)
	p.size = C.uint32_t(cfg.Size)
	if cfg.Inline {
		p.inl = 1
	}
	if cfg.Answer {
		p.answer = 1
	}
	// The buffer is C memory (NewBuffer): C may keep pointers into it.
	p.recv = (*C.uint8_t)(unsafe.Add(cfg.MR.buf.p, cfg.Recv+uint64(cfg.Size)-1))
	p.send = (*C.uint8_t)(unsafe.Add(cfg.MR.buf.p, cfg.Send+uint64(cfg.Size)-1))
	p.stall_ns = C.int64_t(cfg.Stall)
	p.yield_after_ns = C.int64_t(cfg.YieldAfter)
	return &PingPong{p: p, cfg: cfg, stop: (*int32)(unsafe.Pointer(&p.stop))}, nil
}

// Run makes at most rounds round trips (at least one unless stopped),
// returning sooner when d has passed (looked at between round trips),
// after Stop (between round trips and during waits) or when a wait took
// longer than PingConfig.Stall. The writing side stores the i-th round
// trip of this Run in rtts[i] when rtts is not nil (it must have rounds
// entries). A failed post or completion is an error (*Error, *WCError);
// the ping-pong is then unusable.
func (pp *PingPong) Run(rtts []time.Duration, rounds int, d time.Duration) (PingStatus, error) {
	if pp.p == nil {
		return PingStatus{}, ErrClosed
	}
	if rounds <= 0 {
		return pp.status(RunDone), nil
	}
	var rp *C.int64_t
	if rtts != nil {
		if len(rtts) < rounds {
			return PingStatus{}, fmt.Errorf("ibverbs: PingPong.Run: %d round trips and room for %d", rounds, len(rtts))
		}
		if pp.cfg.Answer {
			return PingStatus{}, errors.New("ibverbs: PingPong.Run: the answering side times nothing")
		}
		rp = (*C.int64_t)(unsafe.Pointer(&rtts[0]))
	}
	state := C.ek_ping_run(pp.p, rp, C.int64_t(rounds), C.int64_t(d))
	if state == C.EK_RUN_ERROR {
		return pp.status(RunDone), pp.err()
	}
	var rs RunState
	switch state {
	case C.EK_RUN_DONE:
		rs = RunDone
	case C.EK_RUN_DEADLINE:
		rs = RunDeadline
	case C.EK_RUN_STOPPED:
		rs = RunStopped
	default:
		rs = RunStalled
	}
	return pp.status(rs), nil
}

func (pp *PingPong) status(s RunState) PingStatus {
	p := pp.p
	return PingStatus{State: s, Rounds: uint64(p.rounds), Last: time.Duration(p.last_ns), Yields: uint64(p.yields),
		WaitingForCompletion: s == RunStalled && p.stalled == C.EK_PING_WAIT_COMPLETION}
}

func (pp *PingPong) err() error {
	p := pp.p
	ctx := pp.cfg.CQ.ctx
	switch p.err_kind {
	case C.EK_STREAM_ERR_POST:
		return ctx.fail("ibv_post_send", p.err_rc)
	case C.EK_STREAM_ERR_POLL:
		return ctx.fail("ibv_poll_cq", p.err_rc)
	case C.EK_STREAM_ERR_WC:
		wc := WC{WRID: uint64(p.err_wrid), Status: WCStatus(p.err_status), VendorErr: uint32(p.err_vendor), QPN: pp.cfg.QP.qpn}
		return pp.cfg.CQ.wcError(&wc)
	default:
		return fmt.Errorf("ibverbs: ping-pong: completion wr_id %d, want %d (the write posted last)", uint64(p.err_wrid), uint64(p.rounds))
	}
}

// Stop makes the Run in progress, or the next, return at once with
// RunStopped. It may be called from any goroutine, until Close.
func (pp *PingPong) Stop() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.p != nil {
		atomic.StoreInt32(pp.stop, 1)
	}
}

// Close frees the ping-pong (not its QP, MR or CQ); it is idempotent. It
// must not run alongside Run.
func (pp *PingPong) Close() error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.p != nil {
		C.free(unsafe.Pointer(pp.p))
		pp.p = nil
	}
	return nil
}
