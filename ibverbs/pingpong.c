//go:build linux && cgo

#ifndef _GNU_SOURCE
#define _GNU_SOURCE // unshare, CLONE_FILES
#endif
#include "pingpong.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

// Polls between looks at the clock (stall, stop, yield): a poll of the
// receive byte is a memory read of a few ns, a poll of the CQ not much more.
#define SPIN_CHECK 256
// Without the clock read of the writing side, the answering side looks at
// its deadline once in this many round trips.
#define DEADLINE_EVERY 64

// check runs every SPIN_CHECK polls of a wait; *begin is 0 at its first.
static int check(ek_ping *p, int64_t *begin, int what)
{
	int64_t now = ek_now_ns();
	if (*begin == 0)
		*begin = now;
	if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED))
		return EK_RUN_STOPPED;
	if (now - *begin > p->stall_ns) {
		p->stalled = what;
		return EK_RUN_STALLED;
	}
	// Where there are fewer CPUs than spinners (both ends on one vCPU,
	// software RDMA's kernel work) the peer runs now instead of at the end
	// of this thread's time slice.
	if (now - *begin > p->yield_after_ns) {
		sched_yield();
		p->yields++;
	}
	return 0;
}

// ping is one Run's loop state, in locals of ek_ping_run: with software
// RDMA the next write may land while a post's system call still runs, so
// every instruction between seeing the peer's byte and the next post is
// part of the round trip (ib_write_lat's loop is as lean). What can wait,
// waits: the clock read, the bookkeeping and, through the work request
// API, the building of the next write happen after a post, while the peer
// works; seeing the byte only publishes the write already built.
typedef struct {
	ek_ping *p;
	volatile uint8_t *recv;
	uint8_t *send;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; // set: post through ibv_wr_* (ek_qp.qpx)
	struct ibv_cq *cq;
	struct ibv_sge sge;
	struct ibv_send_wr wr; // built once per Run; only wr_id changes
	int built;             // the next write is built in an open ibv_wr_* batch (build)
} ping;

static int await_byte(ping *g, uint8_t v)
{
	int64_t begin = 0;
	volatile uint8_t *recv = g->recv;
	for (unsigned spins = SPIN_CHECK; __atomic_load_n(recv, __ATOMIC_ACQUIRE) != v;) {
		if (--spins == 0) {
			spins = SPIN_CHECK;
			int rc = check(g->p, &begin, EK_PING_WAIT_PEER);
			if (rc)
				return rc;
		}
	}
	return 0;
}

// build makes the write of byte v (wr_id wrid) in an open ibv_wr_* batch,
// ready for post to publish: ibv_wr_complete then only stores the queue's
// producer index and rings the doorbell. The byte is stored first, so that
// inline data carries it. A batch left open is aborted (unbuild).
static void build(ping *g, uint8_t v, uint64_t wrid)
{
	*g->send = v;
	g->wr.wr_id = wrid;
	ek_wr_build(g->qpx, &g->wr);
	g->built = 1;
}

// unbuild discards a write built and not posted (a Run that ends between).
static void unbuild(ping *g)
{
	if (g->built) {
		ibv_wr_abort(g->qpx);
		g->built = 0;
	}
}

// post posts the write of byte v (wr_id wrid): the one build made for it,
// or, where none is, built now.
static int post(ping *g, uint8_t v, uint64_t wrid)
{
	int rc;
	if (g->qpx) {
		if (!g->built)
			build(g, v, wrid);
		g->built = 0;
		rc = ibv_wr_complete(g->qpx);
	} else {
		*g->send = v;
		g->wr.wr_id = wrid;
		struct ibv_send_wr *bad;
		rc = ibv_post_send(g->qp, &g->wr, &bad);
	}
	if (rc) {
		g->p->err_kind = EK_STREAM_ERR_POST;
		g->p->err_rc = rc;
		return EK_RUN_ERROR;
	}
	return 0;
}

// reap waits for the completion of the write posted last (wr_id wrid): one
// write outstanding, as ib_write_lat.
static int reap(ping *g, uint64_t wrid)
{
	struct ibv_wc wc;
	int64_t begin = 0;
	int n;
	for (unsigned spins = SPIN_CHECK; (n = ibv_poll_cq(g->cq, 1, &wc)) == 0;) {
		if (--spins == 0) {
			spins = SPIN_CHECK;
			int rc = check(g->p, &begin, EK_PING_WAIT_COMPLETION);
			if (rc)
				return rc;
		}
	}
	ek_ping *p = g->p;
	if (n < 0) {
		p->err_kind = EK_STREAM_ERR_POLL;
		p->err_rc = EIO;
		return EK_RUN_ERROR;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		p->err_kind = EK_STREAM_ERR_WC;
		p->err_status = wc.status;
		p->err_vendor = wc.vendor_err;
		p->err_wrid = wc.wr_id;
		return EK_RUN_ERROR;
	}
	if (wc.wr_id != wrid) {
		p->err_kind = EK_STREAM_ERR_MISMATCH;
		p->err_wrid = wc.wr_id;
		return EK_RUN_ERROR;
	}
	return 0;
}

int ek_ping_run(ek_ping *p, int64_t *rtt, int64_t rounds, int64_t for_ns)
{
	ping g = {.p = p, .recv = p->recv, .send = p->send, .qp = p->qp->qp, .qpx = p->qp->qpx, .cq = p->cq,
		  .sge = {.addr = p->laddr, .length = p->size, .lkey = p->lkey}};
	g.wr.sg_list = &g.sge;
	g.wr.num_sge = 1;
	g.wr.opcode = IBV_WR_RDMA_WRITE;
	g.wr.send_flags = IBV_SEND_SIGNALED | (p->inl ? IBV_SEND_INLINE : 0);
	g.wr.wr.rdma.remote_addr = p->raddr;
	g.wr.wr.rdma.rkey = p->rkey;
	int64_t start = ek_now_ns();
	int64_t deadline = ek_deadline(start, for_ns);
	// Round trips made and the last one's time, written back on return.
	uint64_t n = p->rounds;
	int64_t last = p->last_ns;
	// The writing side times a round trip from one post's return to the
	// next's (the clock read waits with the rest until the write is out):
	// round trip i-1 is stored after post i. The Run's last round trip has
	// no post after it: it is stored at the end, from its post's return to
	// its answer plus the Run's first post (start to its return), so that
	// the Run's round trips add up to its time.
	int64_t posted = start, first = 0;
	int64_t done = 0, stored = 0; // round trips made and stored in this Run
	int state = EK_RUN_DONE, rc;
	for (int64_t i = 0; i < rounds; i++) {
		uint8_t v = (uint8_t)(n + 1);
		// The state the Run ends in after this round trip, decided
		// after its post; -1: it goes on.
		int end = -1;
		if (p->answer) {
			if ((rc = await_byte(&g, v)) || (rc = post(&g, v, n)) || (rc = reap(&g, n))) {
				state = rc;
				break;
			}
			if (i + 1 < rounds && (i + 1) % DEADLINE_EVERY == 0 && ek_now_ns() >= deadline)
				end = EK_RUN_DEADLINE;
		} else {
			// As ib_write_lat (run_iter_lat_write): post, reap the
			// write's completion (its ACK comes back about when the
			// peer sees the write, before the answer), wait for the
			// answer.
			if ((rc = post(&g, v, n))) {
				state = rc;
				break;
			}
			int64_t now = ek_now_ns();
			if (i == 0) {
				first = now - start;
			} else {
				last = now - posted;
				if (rtt)
					rtt[i - 1] = last;
				stored = i;
			}
			posted = now;
			if (i + 1 < rounds && now >= deadline)
				end = EK_RUN_DEADLINE;
			if ((rc = reap(&g, n))) {
				state = rc;
				break;
			}
		}
		if (i + 1 < rounds && end < 0 && __atomic_load_n(&p->stop, __ATOMIC_RELAXED))
			end = EK_RUN_STOPPED;
		if (i + 1 < rounds && end < 0 && g.qpx)
			build(&g, (uint8_t)(v + 1), n + 1);
		if (!p->answer && (rc = await_byte(&g, v))) {
			state = rc;
			break;
		}
		n++;
		done++;
		if (end >= 0) {
			state = end;
			break;
		}
		// Between round trips, as before a post: only the stop flag.
		if (i + 1 < rounds && __atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
			state = EK_RUN_STOPPED;
			break;
		}
	}
	unbuild(&g);
	// The Run's last round trip, where no post came after it to store it.
	if (!p->answer && done > stored) {
		last = ek_now_ns() - posted + first;
		if (rtt)
			rtt[done - 1] = last;
	}
	p->rounds = n;
	p->last_ns = last;
	return state;
}

// close_fds closes fds lo..hi of this thread's table.
static void close_fds(unsigned lo, unsigned hi)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, lo, hi, 0U) == 0)
		return;
#endif
	// No close_range (Linux < 5.9): one by one, up to a bound.
	for (unsigned fd = lo; fd <= hi && fd < 4096; fd++)
		close((int)fd);
}

// own_files gives this thread a file table of its own holding only the
// standard streams and fds a and b. On software RDMA (rxe) every post is a
// write(2) to the device's command fd, and in a process whose threads share
// one table (every Go process) the kernel takes and drops a reference on
// the file for each: in the lab's VM a write cost 860-910 ns against
// 700-730 in a single-threaded process, 765-800 with the table unshared,
// and ours' 2 B round trip 1.3% less (docs/bw.md). eRDMA's doorbell is a
// store, no system call: there it changes nothing. Only these fds are kept
// so that no other file the process closes meanwhile stays open until this
// thread ends. Where the kernel refuses, the shared table stays: slower
// posts, nothing else.
static void own_files(int a, int b)
{
	if (unshare(CLONE_FILES) != 0)
		return;
	int keep[] = {0, 1, 2, a < b ? a : b, a < b ? b : a}; // ascending
	unsigned lo = 0;                                       // the lowest fd not yet kept or closed
	for (int i = 0; i < 5; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			close_fds(lo, (unsigned)keep[i] - 1);
		lo = (unsigned)keep[i] + 1;
	}
	close_fds(lo, ~0U);
}

// The call's thread: every signal blocked (the process's signals go to the
// Go runtime's threads), the run, then one byte on done_fd.
static void *ping_call_main(void *arg)
{
	ek_ping_call *c = arg;
	own_files(c->p->qp->qp->context->cmd_fd, c->done_fd);
	c->state = ek_ping_run(c->p, c->rtt, c->rounds, c->for_ns);
	char b = 1;
	while (write(c->done_fd, &b, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

int ek_ping_start(ek_ping_call *c)
{
	pthread_attr_t a;
	int rc = pthread_attr_init(&a);
	if (rc)
		return rc;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); // inherited by the new thread
	pthread_t t;
	rc = pthread_create(&t, &a, ping_call_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return rc;
}
