// The C write loop (stream.c) and ping-pong (pingpong.c) against a fake
// device, built with AddressSanitizer and UndefinedBehaviorSanitizer by
// TestCLoopsUnderSanitizers. The fake is what libibverbs' inline dispatchers
// call through context->ops: its post_send performs each RDMA write as a
// copy between this process's buffers and queues a completion for every
// signalled one; its poll_cq hands them out. So the loops' bookkeeping
// (lists reused or rebuilt, completions that stand for several writes,
// errors) is checked write by write, with no device and no kernel.
//
// Prints one line per case; exits 1 at the first failure.

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pingpong.h"

#define CQ_SLOTS 4096
#define LOG_MAX 100000
// Runs end long before these; they are generous for a loaded CI machine.
#define RUN_NS 60000000000LL
#define STALL_NS 10000000000LL
// Round trips per ping-pong: the round's byte wraps at 256 three times.
#define PING_ROUNDS 1000

typedef struct fake_qp fake_qp;

typedef struct {
	struct ibv_cq cq; // first: the loops pass &cq
	pthread_mutex_t mu;
	struct ibv_wc wc[CQ_SLOTS];
	struct {
		fake_qp *qp;
		int wrs; // the send-queue slots its reaping frees
	} frees[CQ_SLOTS];
	int head, n;
	int overflowed;
	int per_poll; // > 0: at most this many completions a poll (a slow device)
} fake_cq;

// A write as the fake device saw it.
typedef struct {
	uint64_t laddr, raddr;
	uint32_t len, lkey, rkey;
} rec;

struct fake_qp {
	struct ibv_qp qp; // first: ek_qp points at it
	fake_cq *cq;
	// The send queue as a provider keeps it: a WR holds its slot until the
	// completion of its signalled WR (or a later one) is polled.
	int depth, used, unsignalled;
	rec *log;             // the first LOG_MAX writes
	int nlog;
	long writes;          // every write
	int fail_at;          // > 0: the fail_at-th WR from now is refused (EINVAL)
	int complete_with;    // the status every completion carries
	int override;         // completions carry wr_id instead of the WR's
	uint64_t wr_id;
	int posts;            // post_send calls
	// The work request API (ibv_wr_*), when the case runs with it
	// (wr_api): WRs gather in pend between wr_start and wr_complete,
	// which posts them as one list or refuses them all.
	struct ibv_qp_ex qpx;
	struct ibv_send_wr pend[64];
	struct ibv_sge pend_sge[64];
	int npend, in_batch, wr_err, batches;
};

// wr_api: the cases run with the QPs' writes posted through
// ibv_wr_* (ek_qp.qpx) when set, through ibv_post_send when not.
static int wr_api;

// CHECK ends the program at the first failure: _exit, so that the leak
// check does not bury the message under what the failed case left.
#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                              \
			fprintf(stderr, "\n");                                     \
			fflush(NULL);                                              \
			_exit(1);                                                  \
		}                                                                  \
	} while (0)

static void cq_push(fake_cq *c, struct ibv_wc wc, fake_qp *qp, int wrs)
{
	pthread_mutex_lock(&c->mu);
	if (c->n == CQ_SLOTS) {
		c->overflowed = 1;
	} else {
		int k = (c->head + c->n++) % CQ_SLOTS;
		c->wc[k] = wc;
		c->frees[k].qp = qp;
		c->frees[k].wrs = wrs;
	}
	pthread_mutex_unlock(&c->mu);
}

static int fake_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	fake_cq *c = (fake_cq *)cq;
	pthread_mutex_lock(&c->mu);
	if (c->per_poll > 0 && num > c->per_poll)
		num = c->per_poll;
	int n = 0;
	for (; n < num && c->n > 0; n++, c->n--) {
		wc[n] = c->wc[c->head];
		__atomic_sub_fetch(&c->frees[c->head].qp->used, c->frees[c->head].wrs, __ATOMIC_RELAXED);
		c->head = (c->head + 1) % CQ_SLOTS;
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

// fake_post_send performs each write of the list: the bytes before the last
// copied, then the last stored with release order, as a NIC's DMA lands
// the last byte that a ping-pong polls for last.
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	fake_qp *f = (fake_qp *)qp;
	f->posts++;
	// rxe's doorbell: a write to the command fd (0 bytes: /dev/null takes them)
	if (qp->context->cmd_fd > 0 && write(qp->context->cmd_fd, "", 0) < 0) {
		*bad = wr;
		return errno;
	}
	for (; wr; wr = wr->next) {
		if (f->fail_at > 0 && --f->fail_at == 0) {
			*bad = wr;
			return EINVAL;
		}
		if (wr->opcode != IBV_WR_RDMA_WRITE || wr->num_sge != 1) {
			*bad = wr;
			return EINVAL;
		}
		if (__atomic_load_n(&f->used, __ATOMIC_RELAXED) == f->depth) {
			*bad = wr;
			return ENOMEM; // as mlx5 and rxe answer a full send queue
		}
		__atomic_add_fetch(&f->used, 1, __ATOMIC_RELAXED);
		f->unsignalled++;
		const struct ibv_sge *s = wr->sg_list;
		uint8_t *dst = (uint8_t *)(uintptr_t)wr->wr.rdma.remote_addr;
		const uint8_t *src = (const uint8_t *)(uintptr_t)s->addr;
		if (s->length > 0) {
			memcpy(dst, src, s->length - 1);
			__atomic_store_n(&dst[s->length - 1], src[s->length - 1], __ATOMIC_RELEASE);
		}
		f->writes++;
		if (f->nlog < LOG_MAX)
			f->log[f->nlog++] = (rec){.laddr = s->addr, .raddr = wr->wr.rdma.remote_addr, .len = s->length,
						  .lkey = s->lkey, .rkey = wr->wr.rdma.rkey};
		if (wr->send_flags & IBV_SEND_SIGNALED) {
			cq_push(f->cq,
				(struct ibv_wc){.wr_id = f->override ? f->wr_id : wr->wr_id, .status = f->complete_with,
						.opcode = IBV_WC_RDMA_WRITE, .vendor_err = f->complete_with ? 0x42 : 0},
				f, f->unsignalled);
			f->unsignalled = 0;
		}
	}
	return 0;
}

static fake_qp *of_qpx(struct ibv_qp_ex *x) { return (fake_qp *)((char *)x - offsetof(fake_qp, qpx)); }

static void fake_wr_start(struct ibv_qp_ex *x)
{
	fake_qp *f = of_qpx(x);
	CHECK(!f->in_batch, "ibv_wr_start inside a batch");
	f->in_batch = 1;
	f->npend = 0;
	f->wr_err = 0;
}

static void fake_wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	fake_qp *f = of_qpx(x);
	CHECK(f->in_batch, "ibv_wr_rdma_write outside a batch");
	if (f->npend == (int)(sizeof(f->pend) / sizeof(f->pend[0]))) {
		f->wr_err = ENOMEM;
		return;
	}
	struct ibv_send_wr *w = &f->pend[f->npend];
	memset(w, 0, sizeof(*w));
	w->wr_id = x->wr_id;
	w->send_flags = x->wr_flags;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = raddr;
	w->sg_list = &f->pend_sge[f->npend];
	f->npend++;
}

static void fake_wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	fake_qp *f = of_qpx(x);
	CHECK(f->in_batch && f->npend > 0, "ibv_wr_set_sge before a WR");
	f->pend_sge[f->npend - 1] = (struct ibv_sge){.addr = addr, .length = length, .lkey = lkey};
	f->pend[f->npend - 1].num_sge = 1;
}

static void fake_wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	fake_qp *f = of_qpx(x);
	CHECK(f->in_batch && f->npend > 0, "ibv_wr_set_inline_data before a WR");
	CHECK(f->pend[f->npend - 1].send_flags & IBV_SEND_INLINE, "inline data on a WR without IBV_SEND_INLINE");
	f->pend_sge[f->npend - 1] = (struct ibv_sge){.addr = (uint64_t)(uintptr_t)addr, .length = (uint32_t)length};
	f->pend[f->npend - 1].num_sge = 1;
}

// fake_wr_complete posts the batch as one list, or none of it (what the
// API promises): a full queue, a bad WR or fail_at within it refuse all.
static int fake_wr_complete(struct ibv_qp_ex *x)
{
	fake_qp *f = of_qpx(x);
	CHECK(f->in_batch, "ibv_wr_complete outside a batch");
	f->in_batch = 0;
	if (f->wr_err)
		return f->wr_err;
	if (f->npend == 0)
		return 0;
	if (__atomic_load_n(&f->used, __ATOMIC_RELAXED) + f->npend > f->depth)
		return ENOMEM;
	for (int i = 0; i < f->npend; i++)
		if (f->pend[i].num_sge != 1)
			return EINVAL;
	if (f->fail_at > 0 && f->fail_at <= f->npend) {
		f->fail_at = 0;
		return EINVAL;
	}
	for (int i = 0; i < f->npend; i++)
		f->pend[i].next = i + 1 < f->npend ? &f->pend[i + 1] : NULL;
	struct ibv_send_wr *bad = NULL;
	int rc = fake_post_send(&f->qp, f->pend, &bad);
	CHECK(rc == 0, "a checked batch failed: %d", rc);
	f->batches++;
	return 0;
}

static void fake_wr_abort(struct ibv_qp_ex *x)
{
	fake_qp *f = of_qpx(x);
	f->in_batch = 0;
	f->npend = 0;
}

static struct ibv_context fake_ctx = {.ops = {.poll_cq = fake_poll_cq, .post_send = fake_post_send}};

static fake_cq *new_cq(void)
{
	fake_cq *c = calloc(1, sizeof(*c));
	c->cq.context = &fake_ctx;
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

// new_qp is what ek_create_qp leaves: depth send slots of scratch list.
static ek_qp *new_qp(fake_cq *cq, int depth)
{
	fake_qp *f = calloc(1, sizeof(*f));
	f->qp.context = &fake_ctx;
	f->cq = cq;
	f->depth = depth;
	f->log = calloc(LOG_MAX, sizeof(rec));
	ek_qp *q = calloc(1, sizeof(*q));
	q->qp = &f->qp;
	q->cap = depth;
	q->caps.max_send_wr = depth;
	q->wrs = calloc(depth, sizeof(*q->wrs));
	q->sges = calloc(depth, sizeof(*q->sges));
	if (wr_api) {
		f->qpx.qp_base = f->qp;
		f->qpx.wr_start = fake_wr_start;
		f->qpx.wr_rdma_write = fake_wr_rdma_write;
		f->qpx.wr_set_sge = fake_wr_set_sge;
		f->qpx.wr_set_inline_data = fake_wr_set_inline_data;
		f->qpx.wr_complete = fake_wr_complete;
		f->qpx.wr_abort = fake_wr_abort;
		q->qpx = &f->qpx;
	}
	return q;
}

static fake_qp *fake(ek_qp *q) { return (fake_qp *)q->qp; }

static void free_qp(ek_qp *q)
{
	free(fake(q)->log);
	free(fake(q));
	free(q->wrs);
	free(q->sges);
	free(q);
}

static void free_cq(fake_cq *c)
{
	pthread_mutex_destroy(&c->mu);
	free(c);
}

enum { SIZE = 64, LKEY = 0x11, RKEY = 0x22 };

typedef struct {
	ek_stream *s;
	fake_cq *cq;
	ek_qp *qp[2];
	uint8_t *src, *dst[2];
} rig;

// new_rig is NewWriteStream's setup: nqp QPs on one CQ, one source buffer,
// a destination per QP, iterations writes per QP.
static rig new_rig(int nqp, int depth, int post_list, int every, int64_t iterations)
{
	rig r = {.s = ek_stream_new(nqp), .cq = new_cq(), .src = malloc(SIZE)};
	for (int i = 0; i < SIZE; i++)
		r.src[i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < nqp; i++) {
		r.qp[i] = new_qp(r.cq, depth);
		r.dst[i] = calloc(1, SIZE);
		r.s->qps[i] = r.qp[i];
		r.s->raddr[i] = (uint64_t)(uintptr_t)r.dst[i];
		r.s->rkey[i] = RKEY + i;
		r.s->laddr[i] = (uint64_t)(uintptr_t)r.src;
		r.s->lkey[i] = LKEY;
		r.s->remaining[i] = iterations;
	}
	r.s->cqs[0] = &r.cq->cq;
	r.s->ncq = 1;
	r.s->size = SIZE;
	r.s->depth = depth;
	r.s->post_list = post_list;
	r.s->low_water = 1;
	r.s->every = every;
	r.s->iter_mode = iterations > 0;
	return r;
}

static void free_rig(rig *r)
{
	for (int i = 0; i < r->s->nqp; i++) {
		free_qp(r->qp[i]);
		free(r->dst[i]);
	}
	free_cq(r->cq);
	free(r->src);
	ek_stream_free(r->s);
}

// writes_to counts the logged writes from index from on that went where
// QP i of the stream sends them, or returns -1 when any went elsewhere.
static int writes_to(rig *r, int i, int from)
{
	fake_qp *f = fake(r->qp[i]);
	for (int k = from; k < f->nlog; k++) {
		rec w = f->log[k];
		if (w.raddr != r->s->raddr[i] || w.rkey != r->s->rkey[i] || w.laddr != r->s->laddr[i] || w.len != SIZE ||
		    w.lkey != LKEY) {
			fprintf(stderr, "QP %d write %d: raddr %#llx rkey %#x laddr %#llx len %u lkey %#x: not the stream's\n", i,
				k, (unsigned long long)w.raddr, w.rkey, (unsigned long long)w.laddr, w.len, w.lkey);
			return -1;
		}
	}
	return f->nlog - from;
}

static void stream_iterations(void)
{
	struct {
		int depth, post_list, every;
		int64_t iterations;
		int per_poll;
	} cfgs[] = {
		// Lists of every free slot, one completion in 3 writes:
		// completions that stand for 1, 2 or 3 writes.
		{16, 0, 3, 1000, 0},
		// perftest's -t 8 -l 8 with 61 writes: the last list is 5 long.
		{8, 8, 8, 61, 0},
		// A device that hands out one completion a poll: the send queue
		// stays partly full, and a post into a full one is refused.
		{16, 0, 2, 1000, 1},
	};
	for (int c = 0; c < 3; c++) {
		int64_t n = cfgs[c].iterations;
		rig r = new_rig(2, cfgs[c].depth, cfgs[c].post_list, cfgs[c].every, n);
		r.cq->per_poll = cfgs[c].per_poll;
		int rc = ek_stream_run(r.s, RUN_NS);
		CHECK(rc == EK_RUN_DONE, "config %d: run %d (err kind %d)", c, rc, r.s->err_kind);
		CHECK(r.s->posted == (uint64_t)(2 * n) && r.s->completed == (uint64_t)(2 * n) && r.s->in_flight == 0,
		      "config %d: posted %llu completed %llu in flight %lld", c, (unsigned long long)r.s->posted,
		      (unsigned long long)r.s->completed, (long long)r.s->in_flight);
		for (int i = 0; i < 2; i++) {
			CHECK(writes_to(&r, i, 0) == n, "config %d, QP %d: the writes went elsewhere", c, i);
			CHECK(memcmp(r.dst[i], r.src, SIZE) == 0, "QP %d: the destination does not hold the source", i);
			CHECK(r.s->outstanding[i] == 0 && r.s->remaining[i] == 0, "QP %d: %d outstanding, %lld to post", i,
			      r.s->outstanding[i], (long long)r.s->remaining[i]);
		}
		CHECK(!r.cq->overflowed, "the CQ overflowed");
		free_rig(&r);
	}
}

// stream_list_replaced: another user of the QP posts its own list between
// two runs of the stream. The stream must notice (built.gen) and build its
// list again instead of posting the other's: the other's wr_ids would not
// count writes, and its writes would go to the other's buffer.
static void stream_list_replaced(void)
{
	for (int ids = EK_WRID_SEQ; ids <= EK_WRID_COUNT; ids++) {
		rig r = new_rig(1, 8, 8, 4, 64);
		int rc = ek_stream_run(r.s, RUN_NS);
		CHECK(rc == EK_RUN_DONE, "first run: %d", rc);
		uint8_t other[SIZE];
		fake_qp *f = fake(r.qp[0]);
		int before = f->nlog;
		// The same list length and signalling, another destination.
		rc = ek_post_writes(r.qp[0], (uint64_t)(uintptr_t)r.src, LKEY, (uint64_t)(uintptr_t)other, 0x99, SIZE, 8,
				    4, 0, ids, 0);
		CHECK(rc == 0, "the other post: %d", rc);
		struct ibv_wc wc[8];
		int got = ibv_poll_cq(&r.cq->cq, 8, wc); // the other reaps its own
		CHECK(got == 2, "the other's completions: %d", got);
		int mine = f->nlog;
		r.s->remaining[0] = 64;
		rc = ek_stream_run(r.s, RUN_NS);
		CHECK(rc == EK_RUN_DONE, "second run (ids %d): %d, err kind %d wr_id %#llx", ids, rc, r.s->err_kind,
		      (unsigned long long)r.s->err_wrid);
		CHECK(mine - before == 8, "the other's writes: %d", mine - before);
		CHECK(writes_to(&r, 0, mine) == 64, "second run (ids %d): the writes went elsewhere", ids);
		CHECK(r.s->completed == 128, "completed %llu", (unsigned long long)r.s->completed);
		free_rig(&r);
	}
}

// stream_list_reused: with nobody else on the QP, every post after the
// first posts the list as built (the same WR memory, no rewrite).
static void stream_list_reused(void)
{
	rig r = new_rig(1, 8, 8, 8, 800);
	uint64_t gen0 = r.qp[0]->built.gen;
	int rc = ek_stream_run(r.s, RUN_NS);
	CHECK(rc == EK_RUN_DONE, "run: %d", rc);
	CHECK(r.qp[0]->built.gen == gen0 + 1, "the list was built %llu times, want once",
	      (unsigned long long)(r.qp[0]->built.gen - gen0));
	CHECK(fake(r.qp[0])->posts == 100, "%d posts of lists of 8, want 100", fake(r.qp[0])->posts);
	CHECK(fake(r.qp[0])->batches == (wr_api ? 100 : 0), "%d ibv_wr_* batches", fake(r.qp[0])->batches);
	free_rig(&r);
}

static void stream_post_refused(void)
{
	rig r = new_rig(1, 8, 8, 1, 64);
	fake(r.qp[0])->fail_at = 8 + 4; // the second list's fourth WR
	int rc = ek_stream_run(r.s, RUN_NS);
	CHECK(rc == EK_RUN_ERROR && r.s->err_kind == EK_STREAM_ERR_POST, "run: %d, err kind %d", rc, r.s->err_kind);
	// ibv_post_send posts the list up to the refused WR; ibv_wr_complete
	// posts none of it.
	uint64_t posted = wr_api ? 0 : 3;
	CHECK(r.s->err_rc == EINVAL && r.s->err_status == 8 && r.s->err_wrid == posted,
	      "err rc %d, list of %d, %llu posted; want EINVAL, 8, %llu", r.s->err_rc, r.s->err_status,
	      (unsigned long long)r.s->err_wrid, (unsigned long long)posted);
	CHECK(fake(r.qp[0])->writes == (wr_api ? 8 : 11), "%ld writes performed", fake(r.qp[0])->writes);
	free_rig(&r);
}

// stream_inline: writes posted with IBV_SEND_INLINE (the data goes in the
// WR; ibv_wr_set_inline_data with the work request API) land as the others.
static void stream_inline(void)
{
	rig r = new_rig(2, 8, 0, 4, 100);
	r.s->inl = 1;
	int rc = ek_stream_run(r.s, RUN_NS);
	CHECK(rc == EK_RUN_DONE, "run: %d (err kind %d)", rc, r.s->err_kind);
	for (int i = 0; i < 2; i++) {
		fake_qp *f = fake(r.qp[i]);
		CHECK(f->writes == 100 && memcmp(r.dst[i], r.src, SIZE) == 0, "QP %d: %ld writes", i, f->writes);
		for (int k = 0; k < f->nlog; k++)
			CHECK(f->log[k].raddr == r.s->raddr[i] && f->log[k].laddr == r.s->laddr[i] && f->log[k].len == SIZE,
			      "QP %d write %d: not the stream's", i, k);
	}
	free_rig(&r);
}

static void stream_completion_error(void)
{
	rig r = new_rig(1, 8, 8, 1, 64);
	fake(r.qp[0])->complete_with = IBV_WC_REM_ACCESS_ERR;
	int rc = ek_stream_run(r.s, RUN_NS);
	CHECK(rc == EK_RUN_ERROR && r.s->err_kind == EK_STREAM_ERR_WC, "run: %d, err kind %d", rc, r.s->err_kind);
	CHECK(r.s->err_status == IBV_WC_REM_ACCESS_ERR && r.s->err_vendor == 0x42 && r.s->err_qp == 0,
	      "status %d vendor %#x qp %d", r.s->err_status, r.s->err_vendor, r.s->err_qp);
	free_rig(&r);
}

// stream_foreign_completion: a completion no list of the stream carries
// (another QP index, or one that counts no writes) is an error, not a count.
static void stream_foreign_completion(void)
{
	uint64_t foreign[] = {
		(uint64_t)5 << 40 | 1, // QP 5 of a stream of 1
		0,                     // QP 0, standing for no write
		(uint64_t)1 << 39,     // more writes than are outstanding
	};
	for (int i = 0; i < 3; i++) {
		rig r = new_rig(1, 8, 8, 1, 64);
		fake(r.qp[0])->override = 1;
		fake(r.qp[0])->wr_id = foreign[i];
		int rc = ek_stream_run(r.s, RUN_NS);
		CHECK(rc == EK_RUN_ERROR && r.s->err_kind == EK_STREAM_ERR_MISMATCH && r.s->err_wrid == foreign[i],
		      "wr_id %#llx: run %d, err kind %d", (unsigned long long)foreign[i], rc, r.s->err_kind);
		CHECK(r.s->completed == 0, "wr_id %#llx counted", (unsigned long long)foreign[i]);
		free_rig(&r);
	}
}

static void stream_deadline_and_drain(void)
{
	rig r = new_rig(1, 8, 8, 2, 0); // duration mode
	int rc = ek_stream_run(r.s, 20000000LL);
	CHECK(rc == EK_RUN_DEADLINE, "run: %d, err kind %d rc %d", rc, r.s->err_kind, r.s->err_rc);
	CHECK(r.s->posted > 0, "nothing posted in 20 ms");
	r.s->posting = 0;
	rc = ek_stream_run(r.s, RUN_NS);
	CHECK(rc == EK_RUN_DRAINED && r.s->in_flight == 0 && r.s->completed == r.s->posted, "drain: %d, %lld in flight", rc,
	      (long long)r.s->in_flight);
	CHECK(fake(r.qp[0])->writes == (long)r.s->posted, "%ld writes, %llu posted", fake(r.qp[0])->writes,
	      (unsigned long long)r.s->posted);
	CHECK(writes_to(&r, 0, 0) == fake(r.qp[0])->nlog, "the writes went elsewhere");
	free_rig(&r);
}

// A ping-pong pair: a's send area is written into b's receive area and
// back, each side on its own thread.
typedef struct {
	ek_ping p;
	ek_qp *qp;
	fake_cq *cq;
	uint8_t buf[2 * 4096]; // send area, then receive area
	int64_t *rtt;
	int64_t rounds;
	int rc;
	int64_t for_ns;  // the Run's duration (0: RUN_NS)
	int64_t wall_ns; // the last ek_ping_run call, as run_side timed it
} side;

static void new_side(side *s, uint32_t size, int answer)
{
	memset(s, 0, sizeof(*s));
	s->cq = new_cq();
	s->qp = new_qp(s->cq, 1);
	s->p.qp = s->qp;
	s->p.cq = &s->cq->cq;
	s->p.laddr = (uint64_t)(uintptr_t)s->buf;
	s->p.lkey = LKEY;
	s->p.size = size;
	s->p.answer = answer;
	s->p.send = &s->buf[size - 1];
	s->p.recv = &s->buf[4096 + size - 1];
	s->p.stall_ns = STALL_NS;
	s->p.yield_after_ns = 50000; // two spinners on however many CPUs
}

// new_pair makes a (the writing side) and b (the answering side), each
// writing into the other's receive area.
static void new_pair(side *a, side *b, uint32_t size)
{
	new_side(a, size, 0);
	new_side(b, size, 1);
	a->p.raddr = (uint64_t)(uintptr_t)&b->buf[4096];
	a->p.rkey = RKEY;
	b->p.raddr = (uint64_t)(uintptr_t)&a->buf[4096];
	b->p.rkey = RKEY;
}

static void free_side(side *s)
{
	free_qp(s->qp);
	free_cq(s->cq);
}

static void *run_side(void *arg)
{
	side *s = arg;
	int64_t t = ek_now_ns();
	s->rc = ek_ping_run(&s->p, s->rtt, s->rounds, s->for_ns ? s->for_ns : RUN_NS);
	s->wall_ns = ek_now_ns() - t;
	return NULL;
}

// check_rtts: the writing side's n round trips each took some time, and
// together no longer than the call that made them.
static void check_rtts(const side *a, const int64_t *rtt, int n)
{
	int64_t sum = 0;
	for (int i = 0; i < n; i++) {
		CHECK(rtt[i] > 0 && rtt[i] <= STALL_NS, "size %u: round trip %d took %lld ns", a->p.size, i, (long long)rtt[i]);
		sum += rtt[i];
	}
	CHECK(sum <= a->wall_ns, "%d round trips add up to %lld ns, the run took %lld", n, (long long)sum,
	      (long long)a->wall_ns);
	CHECK(a->p.last_ns == rtt[n - 1], "last_ns %lld, the last round trip %lld", (long long)a->p.last_ns,
	      (long long)rtt[n - 1]);
}

// no_batch: neither side left an ibv_wr_* batch open (a write built for a
// round trip that did not come is aborted).
static void no_batch(side *a, side *b)
{
	CHECK(!fake(a->qp)->in_batch && !fake(b->qp)->in_batch, "a batch left open: %d, %d", fake(a->qp)->in_batch,
	      fake(b->qp)->in_batch);
}

static void ping_pong(void)
{
	uint32_t sizes[] = {1, 2, 4096};
	for (int k = 0; k < 6; k++) {
		static side a, b;
		new_pair(&a, &b, sizes[k % 3]);
		a.p.inl = b.p.inl = k >= 3; // the data in the WR: the whole send area, not only its last byte
		int64_t rtt[PING_ROUNDS];
		a.rtt = rtt, a.rounds = PING_ROUNDS;
		b.rounds = PING_ROUNDS;
		pthread_t ta, tb;
		pthread_create(&tb, NULL, run_side, &b);
		pthread_create(&ta, NULL, run_side, &a);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		CHECK(a.rc == EK_RUN_DONE && b.rc == EK_RUN_DONE, "size %u inline %d: runs %d and %d (errors %d, %d)", sizes[k % 3],
		      a.p.inl, a.rc, b.rc, a.p.err_kind, b.p.err_kind);
		CHECK(a.p.rounds == PING_ROUNDS && b.p.rounds == PING_ROUNDS, "rounds %llu and %llu", (unsigned long long)a.p.rounds,
		      (unsigned long long)b.p.rounds);
		check_rtts(&a, rtt, PING_ROUNDS);
		no_batch(&a, &b);
		CHECK(fake(a.qp)->nlog == PING_ROUNDS && fake(b.qp)->nlog == PING_ROUNDS, "writes %d and %d", fake(a.qp)->nlog,
		      fake(b.qp)->nlog);
		free_side(&a);
		free_side(&b);
	}
}

// run_until_writer_done runs both sides, each on a thread, until the
// writing side's Run returns; then it stops the answering side's (and
// clears stop for the next).
static void run_until_writer_done(side *a, side *b)
{
	pthread_t ta, tb;
	pthread_create(&tb, NULL, run_side, b);
	pthread_create(&ta, NULL, run_side, a);
	pthread_join(ta, NULL);
	__atomic_store_n(&b->p.stop, 1, __ATOMIC_RELAXED);
	pthread_join(tb, NULL);
	b->p.stop = 0;
}

// ping_resume: the writing side runs 10 round trips at a time; the
// answering side, asked for more, has built its next write when the writer
// stops, and is stopped waiting: the write is discarded, not posted, and
// the next Runs of both go on from there.
static void ping_resume(void)
{
	static side a, b;
	new_pair(&a, &b, 2);
	for (int k = 1; k <= 3; k++) {
		int64_t rtt[10];
		a.rtt = rtt, a.rounds = 10;
		b.rounds = 100;
		run_until_writer_done(&a, &b);
		CHECK(a.rc == EK_RUN_DONE && b.rc == EK_RUN_STOPPED, "run %d: %d and %d (errors %d, %d)", k, a.rc, b.rc,
		      a.p.err_kind, b.p.err_kind);
		CHECK(a.p.rounds == 10u * k && b.p.rounds == 10u * k, "run %d: rounds %llu and %llu", k,
		      (unsigned long long)a.p.rounds, (unsigned long long)b.p.rounds);
		CHECK(fake(a.qp)->nlog == 10 * k && fake(b.qp)->nlog == 10 * k, "run %d: writes %d and %d", k,
		      fake(a.qp)->nlog, fake(b.qp)->nlog);
		check_rtts(&a, rtt, 10);
		no_batch(&a, &b);
	}
	free_side(&a);
	free_side(&b);
}

// ping_deadline: the writing side's Run ends at its deadline, after a
// whole round trip; the answering side, stopped then, has answered every
// write.
static void ping_deadline(void)
{
	static side a, b;
	new_pair(&a, &b, 2);
	static int64_t rtt[1 << 20];
	a.rtt = rtt, a.rounds = 1 << 20, a.for_ns = 20000000LL;
	b.rounds = 1 << 30;
	run_until_writer_done(&a, &b);
	CHECK(a.rc == EK_RUN_DEADLINE && b.rc == EK_RUN_STOPPED, "runs %d and %d", a.rc, b.rc);
	CHECK(a.p.rounds > 0 && a.p.rounds < (1u << 20) && b.p.rounds == a.p.rounds, "rounds %llu and %llu",
	      (unsigned long long)a.p.rounds, (unsigned long long)b.p.rounds);
	check_rtts(&a, rtt, (int)a.p.rounds);
	no_batch(&a, &b);
	free_side(&a);
	free_side(&b);
}

// ping_stall: nobody answers; the wait for the peer gives up at stall_ns.
static void ping_stall(void)
{
	static side a, b;
	new_pair(&a, &b, 2);
	a.p.stall_ns = 30000000LL;
	int64_t rtt[4];
	int rc = ek_ping_run(&a.p, rtt, 4, RUN_NS);
	CHECK(rc == EK_RUN_STALLED && a.p.stalled == EK_PING_WAIT_PEER, "run: %d, stalled %d", rc, a.p.stalled);
	CHECK(a.p.rounds == 0, "rounds %llu", (unsigned long long)a.p.rounds);
	no_batch(&a, &b);
	free_side(&a);
	free_side(&b);
}

static void *stop_later(void *arg)
{
	struct timespec d = {0, 20000000};
	nanosleep(&d, NULL);
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELAXED);
	return NULL;
}

// ping_stop: the answering side waits for a peer that never writes until
// another thread sets stop.
static void ping_stop(void)
{
	static side b;
	new_side(&b, 2, 1);
	b.p.raddr = (uint64_t)(uintptr_t)&b.buf[4096];
	pthread_t t;
	pthread_create(&t, NULL, stop_later, &b.p.stop);
	int rc = ek_ping_run(&b.p, NULL, 10, RUN_NS);
	pthread_join(t, NULL);
	CHECK(rc == EK_RUN_STOPPED, "run: %d", rc);
	free_side(&b);
}

static void ping_completion_error(void)
{
	static side a, b;
	new_pair(&a, &b, 2);
	fake(a.qp)->complete_with = IBV_WC_REM_ACCESS_ERR;
	int rc = ek_ping_run(&a.p, NULL, 4, RUN_NS);
	CHECK(rc == EK_RUN_ERROR && a.p.err_kind == EK_STREAM_ERR_WC && a.p.err_status == IBV_WC_REM_ACCESS_ERR,
	      "run: %d, err kind %d, status %d", rc, a.p.err_kind, a.p.err_status);
	no_batch(&a, &b);
	free_side(&a);
	free_side(&b);
}

// ping_own_thread: the writing side on ek_ping_start's thread, which keeps
// a file table of its own: its posts still reach the command fd, the byte
// reaches done_fd, and the process's other files stay open.
static void ping_own_thread(void)
{
	static side a, b;
	new_pair(&a, &b, 2);
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC), done[2], other[2];
	CHECK(devnull > 2 && pipe(done) == 0 && pipe(other) == 0, "open: %s", strerror(errno));
	fake_ctx.cmd_fd = devnull;
	int64_t rtt[PING_ROUNDS];
	b.rounds = PING_ROUNDS;
	pthread_t tb;
	pthread_create(&tb, NULL, run_side, &b);
	ek_ping_call c = {.p = &a.p, .rtt = rtt, .rounds = PING_ROUNDS, .for_ns = RUN_NS, .done_fd = done[1]};
	CHECK(ek_ping_start(&c) == 0, "ek_ping_start");
	char x;
	struct pollfd pfd = {.fd = done[0], .events = POLLIN};
	CHECK(poll(&pfd, 1, 30000) == 1 && read(done[0], &x, 1) == 1, "no byte on done_fd in 30 s: %s", strerror(errno));
	pthread_join(tb, NULL);
	CHECK(c.state == EK_RUN_DONE && b.rc == EK_RUN_DONE, "runs %d and %d (errors %d/%d, %d)", c.state, b.rc,
	      a.p.err_kind, a.p.err_rc, b.p.err_kind);
	CHECK(a.p.rounds == PING_ROUNDS && fake(a.qp)->nlog == PING_ROUNDS, "rounds %llu, writes %d",
	      (unsigned long long)a.p.rounds, fake(a.qp)->nlog);
	CHECK(write(other[1], "y", 1) == 1 && read(other[0], &x, 1) == 1 && fcntl(devnull, F_GETFD) >= 0,
	      "the process's files after the run: %s", strerror(errno));
	fake_ctx.cmd_fd = 0;
	close(devnull), close(done[0]), close(done[1]), close(other[0]), close(other[1]);
	free_side(&a);
	free_side(&b);
}

int main(void)
{
	struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
		{"stream_iterations", stream_iterations},
		{"stream_list_replaced", stream_list_replaced},
		{"stream_list_reused", stream_list_reused},
		{"stream_post_refused", stream_post_refused},
		{"stream_inline", stream_inline},
		{"stream_completion_error", stream_completion_error},
		{"stream_foreign_completion", stream_foreign_completion},
		{"stream_deadline_and_drain", stream_deadline_and_drain},
		{"ping_pong", ping_pong},
		{"ping_resume", ping_resume},
		{"ping_deadline", ping_deadline},
		{"ping_stall", ping_stall},
		{"ping_stop", ping_stop},
		{"ping_completion_error", ping_completion_error},
		{"ping_own_thread", ping_own_thread},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cases[i].fn();
		printf("ok %s\n", cases[i].name);
	}
	// Every case again, the writes posted with ibv_wr_*.
	wr_api = 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cases[i].fn();
		printf("ok %s (ibv_wr_*)\n", cases[i].name);
	}
	return 0;
}
