//go:build linux && cgo

#include "pingpong.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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

static int await_byte(ek_ping *p, uint8_t v)
{
	int64_t begin = 0;
	for (unsigned spins = 1; __atomic_load_n(p->recv, __ATOMIC_ACQUIRE) != v; spins++) {
		if (spins % SPIN_CHECK == 0) {
			int rc = check(p, &begin, EK_PING_WAIT_PEER);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int post(ek_ping *p, uint8_t v)
{
	*p->send = v;
	int rc = ek_post_writes(p->qp, p->laddr, p->lkey, p->raddr, p->rkey, p->size, 1, 1, p->rounds, EK_WRID_SEQ,
				 p->inl);
	if (rc) {
		p->err_kind = EK_STREAM_ERR_POST;
		p->err_rc = rc;
		return EK_RUN_ERROR;
	}
	return 0;
}

// reap waits for the completion of the write posted last: one write
// outstanding, as ib_write_lat.
static int reap(ek_ping *p)
{
	struct ibv_wc wc;
	int64_t begin = 0;
	for (unsigned spins = 1;; spins++) {
		int n = ibv_poll_cq(p->cq, 1, &wc);
		if (n < 0) {
			p->err_kind = EK_STREAM_ERR_POLL;
			p->err_rc = EIO;
			return EK_RUN_ERROR;
		}
		if (n > 0) {
			if (wc.status != IBV_WC_SUCCESS) {
				p->err_kind = EK_STREAM_ERR_WC;
				p->err_status = wc.status;
				p->err_vendor = wc.vendor_err;
				p->err_wrid = wc.wr_id;
				return EK_RUN_ERROR;
			}
			if (wc.wr_id != p->rounds) {
				p->err_kind = EK_STREAM_ERR_MISMATCH;
				p->err_wrid = wc.wr_id;
				return EK_RUN_ERROR;
			}
			return 0;
		}
		if (spins % SPIN_CHECK == 0) {
			int rc = check(p, &begin, EK_PING_WAIT_COMPLETION);
			if (rc)
				return rc;
		}
	}
}

int ek_ping_run(ek_ping *p, int64_t *rtt, int64_t rounds, int64_t for_ns)
{
	int64_t t = ek_now_ns();
	int64_t deadline = ek_deadline(t, for_ns);
	for (int64_t i = 0; i < rounds; i++) {
		uint8_t v = (uint8_t)(p->rounds + 1);
		int rc;
		if (p->answer) {
			if ((rc = await_byte(p, v)) || (rc = post(p, v)) || (rc = reap(p)))
				return rc;
			p->rounds++;
			if (i + 1 < rounds && (i + 1) % DEADLINE_EVERY == 0 && ek_now_ns() >= deadline)
				return EK_RUN_DEADLINE;
		} else {
			// As ib_write_lat (run_iter_lat_write): post, reap the
			// write's completion (its ACK comes back about when the
			// peer sees the write, before the answer), wait for the
			// answer; one clock read per round trip, the time from one
			// post to the next.
			if ((rc = post(p, v)) || (rc = reap(p)) || (rc = await_byte(p, v)))
				return rc;
			p->rounds++;
			int64_t now = ek_now_ns();
			p->last_ns = now - t;
			if (rtt)
				rtt[i] = now - t;
			t = now;
			if (i + 1 < rounds && now >= deadline)
				return EK_RUN_DEADLINE;
		}
		if (i + 1 < rounds && __atomic_load_n(&p->stop, __ATOMIC_RELAXED))
			return EK_RUN_STOPPED;
	}
	return EK_RUN_DONE;
}

// The call's thread: every signal blocked (the process's signals go to the
// Go runtime's threads), the run, then one byte on done_fd.
static void *ping_call_main(void *arg)
{
	ek_ping_call *c = arg;
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
