//go:build linux && cgo

#include "stream.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

// The QP index sits above a 40-bit per-QP write sequence in a work request
// id (as package perf's Go loop numbers them).
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
	s->seq = calloc(nqp, sizeof(*s->seq));
	s->done = calloc(nqp, sizeof(*s->done));
	if (!s->qps || !s->raddr || !s->rkey || !s->laddr || !s->lkey || !s->cqs || !s->outstanding || !s->remaining || !s->seq || !s->done) {
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
	free(s->seq);
	free(s->done);
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

// post fills every QP's free send-queue slots, a list at a time; it returns
// how many writes it posted, or -1 on an error (recorded in s).
static int64_t post(ek_stream *s)
{
	int64_t total = 0;
	for (int qp = 0; qp < s->nqp; qp++) {
		for (;;) {
			int free_slots = s->depth - s->outstanding[qp];
			int n = s->post_list ? s->post_list : free_slots;
			int last = 0; // the tail of iterations mode, may be short
			if (s->iter_mode && s->remaining[qp] <= n) {
				n = (int)s->remaining[qp];
				last = 1;
			}
			if (n <= 0 || n > free_slots || (n < s->low_water && !last))
				break;
			uint64_t wrid = ((uint64_t)qp << WRID_SHIFT) | s->seq[qp];
			int rc = ek_post_writes(s->qps[qp], s->laddr[qp], s->lkey[qp], s->raddr[qp], s->rkey[qp], s->size, n,
						s->every, wrid, s->inl);
			s->posts++;
			if (rc) {
				s->err_kind = EK_STREAM_ERR_POST;
				s->err_rc = rc;
				s->err_qp = qp;
				s->err_status = n;                      // writes in the list
				s->err_wrid = s->qps[qp]->last_posted; // of which posted
				return -1;
			}
			s->seq[qp] += n;
			s->outstanding[qp] += n;
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
			uint64_t seq = (wc[i].wr_id & WRID_MASK) + 1;
			if (qp >= (uint64_t)s->nqp || seq <= s->done[qp] ||
			    seq - s->done[qp] > (uint64_t)s->outstanding[qp]) {
				s->err_kind = EK_STREAM_ERR_MISMATCH;
				s->err_wrid = wc[i].wr_id;
				s->err_qp = (int)qp;
				return -1;
			}
			int w = (int)(seq - s->done[qp]);
			s->done[qp] = seq;
			s->outstanding[qp] -= w;
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
