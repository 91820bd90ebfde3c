#ifndef EK_PINGPONG_H
#define EK_PINGPONG_H

#include "stream.h"

// ek_ping is one side of ib_write_lat's RDMA WRITE ping-pong on one RC QP,
// driven from C: one call (ek_ping_run) makes many round trips, each a
// post, a spin on the last byte the peer writes, and the reaping of the
// write's completion, with no cgo crossing between them.
typedef struct {
	ek_qp *qp;
	struct ibv_cq *cq;
	uint64_t laddr, raddr; // the send area; the peer's receive area
	uint32_t lkey, rkey, size;
	int inl;
	int answer;                 // the server's side: wait for the peer's write, then write back
	volatile uint8_t *recv;     // the last byte of the receive area
	uint8_t *send;              // the last byte of the send area
	int64_t stall_ns;           // the longest any one wait may take
	int64_t yield_after_ns;     // a wait longer than this yields the CPU at every check
	int stop;                   // set (atomically) from any thread: the run returns
	uint64_t rounds;            // round trips made, cumulative
	int64_t last_ns;            // the last round trip (the writing side)
	uint64_t yields;            // sched_yield calls, for the record
	int stalled;                // EK_PING_WAIT_*: the wait that stalled
	// the first error, as ek_stream's
	int err_kind, err_rc, err_status;
	uint32_t err_vendor;
	uint64_t err_wrid;
} ek_ping;

enum { EK_RUN_STALLED = 5 };
enum { EK_PING_WAIT_PEER = 1, EK_PING_WAIT_COMPLETION = 2 };

// ek_ping_run makes at most rounds round trips, returning EK_RUN_DONE when
// made, EK_RUN_DEADLINE when for_ns passed (checked between round trips),
// EK_RUN_STOPPED after stop (checked between round trips and during
// waits), EK_RUN_STALLED when a wait passed stall_ns, EK_RUN_ERROR. The
// writing side stores its i-th round trip of the call, in ns, in rtt[i]
// when rtt is not NULL (it must hold rounds entries).
int ek_ping_run(ek_ping *p, int64_t *rtt, int64_t rounds, int64_t for_ns);

// ek_ping_call is one ek_ping_run on a thread of its own (ek_ping_start):
// the caller waits for the byte the thread writes to done_fd when the run
// returns, then reads state.
typedef struct {
	ek_ping *p;
	int64_t *rtt;
	int64_t rounds, for_ns;
	int done_fd;
	int state; // ek_ping_run's answer, once the byte is written
} ek_ping_call;

// ek_ping_start starts c's run on a new detached thread that blocks every
// signal; 0, or pthread_create's error (the run did not start).
int ek_ping_start(ek_ping_call *c);

#endif
