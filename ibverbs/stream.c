//go:build linux && cgo

#include "stream.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

// A work request id holds the QP index above 40 bits that count the writes
// its completion stands for (EK_WRID_COUNT); package perf's Go loop keeps
// the QP index there too.
#define WRID_SHIFT 40
#define WRID_MASK ((1ULL << WRID_SHIFT) - 1)
// After this many empty polls in a row the loop yields the CPU once: on
// software RDMA (rxe) the device's work runs in kernel threads and softirqs
// that a spinning poller would otherwise starve (package perf's yieldEvery).
#define YIELD_EVERY 4

ek_stream *ek_stream_new(int nqp)
{
	ek_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->nqp = nqp;
	s->qps = calloc(nqp, sizeof(*s->qps));
	s->raddr = calloc(nqp, sizeof(*s->raddr));
	s->rkey = calloc(nqp, sizeof(*s->rkey));
	s->laddr = calloc(nqp, sizeof(*s->laddr));
	s->lkey = calloc(nqp, sizeof(*s->lkey));
	s->cqs = calloc(nqp, sizeof(*s->cqs));
	s->outstanding = calloc(nqp, sizeof(*s->outstanding));
	s->remaining = calloc(nqp, sizeof(*s->remaining));
	s->gen = calloc(nqp, sizeof(*s->gen));
	if (!s->qps || !s->raddr || !s->rkey || !s->laddr || !s->lkey || !s->cqs || !s->outstanding || !s->remaining || !s->gen) {
		ek_stream_free(s);
		return NULL;
	}
	s->posting = 1;
	return s;
}

void ek_stream_free(ek_stream *s)
{
	if (!s)
		return;
	free(s->qps);
	free(s->raddr);
	free(s->rkey);
	free(s->laddr);
	free(s->lkey);
	free(s->cqs);
	free(s->outstanding);
	free(s->remaining);
	free(s->gen);
	free(s);
}

int64_t ek_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int64_t ek_deadline(int64_t now, int64_t for_ns)
{
	return for_ns > INT64_MAX - now ? INT64_MAX : now + for_ns;
}

void ek_stream_peak_start(ek_stream *s)
{
	s->peak_on = 1;
	s->win_start = ek_now_ns();
	s->win_from = s->completed;
}

// post_list posts a list of n writes on QP qp: the list as this stream last
// built it when it is still there, as perftest posts its lists built once;
// otherwise built anew.
static int post_list(ek_stream *s, int qp, int n)
{
	ek_qp *q = s->qps[qp];
	if (q->built.gen == s->gen[qp] && q->built.n == n)
		return ek_post_built(q);
	int rc = ek_post_writes(q, s->laddr[qp], s->lkey[qp], s->raddr[qp], s->rkey[qp], s->size, n, s->every,
				(uint64_t)qp << WRID_SHIFT, EK_WRID_COUNT, s->inl);
	if (rc == 0) // the list there is the one asked for
		s->gen[qp] = q->built.gen;
	return rc;
}

// post fills every QP's free send-queue slots, a list at a time; it returns
// how many writes it posted, or -1 on an error (recorded in s).
static int64_t post(ek_stream *s)
{
	int64_t total = 0;
	for (int qp = 0; qp < s->nqp; qp++) {
		// A full queue is left at once: with lists of the whole depth (as
		// perftest's -t 8 -l 8) every post fills it.
		int free_slots = s->depth - s->outstanding[qp];
		while (free_slots > 0) {
			int n = s->post_list ? s->post_list : free_slots;
			int last = 0; // the tail of iterations mode, may be short
			if (s->iter_mode && s->remaining[qp] <= n) {
				n = (int)s->remaining[qp];
				last = 1;
			}
			if (n <= 0 || n > free_slots || (n < s->low_water && !last))
				break;
			int rc = post_list(s, qp, n);
			s->posts++;
			if (rc) {
				s->err_kind = EK_STREAM_ERR_POST;
				s->err_rc = rc;
				s->err_qp = qp;
				s->err_status = n;                      // writes in the list
				s->err_wrid = s->qps[qp]->last_posted; // of which posted
				return -1;
			}
			s->outstanding[qp] += n;
			free_slots -= n;
			s->in_flight += n;
			s->posted += n;
			if (s->iter_mode)
				s->remaining[qp] -= n;
			total += n;
		}
	}
	return total;
}

// poll_cq takes every ready completion of one CQ; it returns how many
// writes they stand for, or -1 on an error (recorded in s).
static int64_t poll_cq(ek_stream *s, struct ibv_cq *cq)
{
	struct ibv_wc wc[64];
	int64_t writes = 0;
	for (;;) {
		int n = ibv_poll_cq(cq, 64, wc);
		s->polls++;
		if (n < 0) {
			s->err_kind = EK_STREAM_ERR_POLL;
			s->err_rc = EIO;
			return -1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t qp = wc[i].wr_id >> WRID_SHIFT;
			if (wc[i].status != IBV_WC_SUCCESS) {
				s->err_kind = EK_STREAM_ERR_WC;
				s->err_status = wc[i].status;
				s->err_vendor = wc[i].vendor_err;
				s->err_wrid = wc[i].wr_id;
				s->err_qp = (int)qp;
				return -1;
			}
			int64_t w = (int64_t)(wc[i].wr_id & WRID_MASK); // the writes it stands for
			if (qp >= (uint64_t)s->nqp || w == 0 || w > s->outstanding[qp]) {
				s->err_kind = EK_STREAM_ERR_MISMATCH;
				s->err_wrid = wc[i].wr_id;
				s->err_qp = (int)qp;
				return -1;
			}
			s->outstanding[qp] -= (int)w;
			s->in_flight -= w;
			s->completed += w;
			writes += w;
		}
		if (n < 64)
			return writes;
	}
}

// poll_all takes every ready completion of every CQ.
static int64_t poll_all(ek_stream *s)
{
	int64_t writes = 0;
	for (int i = 0; i < s->ncq; i++) {
		int64_t n = poll_cq(s, s->cqs[i]);
		if (n < 0)
			return -1;
		writes += n;
	}
	return writes;
}

static int all_posted(ek_stream *s)
{
	for (int i = 0; i < s->nqp; i++)
		if (s->remaining[i] != 0)
			return 0;
	return 1;
}

int ek_stream_run(ek_stream *s, int64_t for_ns)
{
	int64_t deadline = ek_deadline(ek_now_ns(), for_ns);
	for (;;) {
		int64_t posted = 0;
		if (s->posting) {
			posted = post(s);
			if (posted < 0)
				return EK_RUN_ERROR;
		}
		int64_t polled = ek_now_ns();
		int64_t got = poll_all(s);
		if (got < 0)
			return EK_RUN_ERROR;
		int64_t now = ek_now_ns();
		s->poll_ns = now - polled;
		if (s->peak_on && now - polled < s->slack_ns && now - s->win_start >= s->peak_window_ns) {
			double rate = (double)(s->completed - s->win_from) * 1e9 / (double)(now - s->win_start);
			if (rate > s->peak)
				s->peak = rate;
			s->win_start = now;
			s->win_from = s->completed;
		}
		if (s->iter_mode && s->in_flight == 0 && all_posted(s))
			return EK_RUN_DONE;
		if (!s->posting && s->in_flight == 0)
			return EK_RUN_DRAINED;
		if (__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
			return EK_RUN_STOPPED;
		if (now >= deadline)
			return EK_RUN_DEADLINE;
		if (got == 0 && posted == 0) {
			if (++s->empty % YIELD_EVERY == 0) {
				sched_yield();
				s->yields++;
			}
		} else {
			s->empty = 0;
		}
	}
}
