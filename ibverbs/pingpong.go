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
	"os"
	"runtime"
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
// per post and per poll of the CQ. Between seeing the peer's byte and the
// next post each side does nothing else: the clock read, the bookkeeping
// and (through the work request API) the building of the next write come
// after a post, while the peer works. The writing side times each round
// trip from one post's return to the next's, one clock read per round
// trip. It allocates nothing per round trip or per Run. Each Run spins on
// a thread of its own, started for it with every signal blocked, while the
// calling goroutine waits parked: the Go runtime stays out of the loop's
// way.
//
// A ping-pong is used from one goroutine at a time, except Stop; Close it
// before the QP, MR and CQ it drives.
type PingPong struct {
	p    *C.ek_ping
	cfg  PingConfig
	stop *int32     // p.stop, for Stop from another goroutine
	mu   sync.Mutex // Stop against Close

	// Each Run spins on a thread of its own (ek_ping_start) while Run's
	// goroutine waits for done, parked. Spun in a cgo call instead, the
	// goroutine's P stays "in a system call", and the runtime's sysmon
	// wakes some 60 times in the first 20 ms of every Run (every 20 µs in
	// the first millisecond) to look at it: each a context switch on a CPU
	// that a spinner may need. In the lab that more than doubled ours' p99
	// at 2 B (docs/bw.md); with every P idle, sysmon sleeps. The thread
	// takes a file table of its own (pingpong.c, own_files): with rxe each
	// post is a write(2), cheaper where the table is not shared.
	call  *C.ek_ping_call // C memory: the thread holds it
	done  *os.File        // the read end of a pipe; the thread writes one byte per Run
	doneW int             // its write end
	pin   runtime.Pinner  // Run's rtts while the thread holds them (kept: a Pinner's first Pin allocates)
	b     [1]byte         // run's read of done
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
	pp := &PingPong{p: p, cfg: cfg, stop: (*int32)(unsafe.Pointer(&p.stop))}
	if err := pp.openCall(); err != nil {
		pp.Close()
		return nil, fmt.Errorf("ibverbs: NewPingPong: %w", err)
	}
	return pp, nil
}

func (pp *PingPong) openCall() error {
	pp.call = (*C.ek_ping_call)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ek_ping_call{}))))
	if pp.call == nil {
		return syscall.ENOMEM
	}
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		return fmt.Errorf("pipe2: %w", err)
	}
	pp.done, pp.doneW = os.NewFile(uintptr(fds[0]), "ping-pong done"), fds[1]
	return nil
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
		pp.pin.Pin(&rtts[0]) // the run's thread holds it
	}
	state := pp.run(rp, rounds, d)
	pp.pin.Unpin()
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

// run makes one ek_ping_run on a thread of its own and waits for it,
// parked; where no thread can be started, in a cgo call instead. The
// caller has pinned rtt.
func (pp *PingPong) run(rtt *C.int64_t, rounds int, d time.Duration) C.int {
	c := pp.call
	*c = C.ek_ping_call{p: pp.p, rtt: rtt, rounds: C.int64_t(rounds), for_ns: C.int64_t(d), done_fd: C.int(pp.doneW)}
	if C.ek_ping_start(c) != 0 {
		return C.ek_ping_run(pp.p, rtt, C.int64_t(rounds), C.int64_t(d))
	}
	for {
		n, err := pp.done.Read(pp.b[:])
		if n == 1 {
			return c.state
		}
		if err != nil {
			// Not expected (the pipe stays open until Close); the
			// thread still runs on p and rtt: stop it and wait.
			atomic.StoreInt32(pp.stop, 1)
			waitByte(pp.done)
			return c.state
		}
	}
}

// waitByte reads one byte from f's descriptor without the poller.
func waitByte(f *os.File) {
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		for {
			n, err := syscall.Read(int(fd), b[:])
			if n == 1 || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
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
	if pp.call != nil {
		C.free(unsafe.Pointer(pp.call))
		pp.call = nil
	}
	if pp.done != nil {
		pp.done.Close()
		syscall.Close(pp.doneW)
		pp.done = nil
	}
	return nil
}
