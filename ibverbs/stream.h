#ifndef EK_STREAM_H
#define EK_STREAM_H

#include "shim.h"

// ek_stream is a write loop over RC QPs, driven from C: one call
// (ek_stream_run) posts and busy-polls for as long as the caller asks, as
// perftest's loop does, instead of one cgo call per post list and per poll.
// The QPs share one CQ and source buffer, or (rdma_cm connections) each has
// its own.
typedef struct {
	int nqp;
	ek_qp **qps;
	uint64_t *raddr;
	uint32_t *rkey;
	uint64_t *laddr; // per QP: the source buffer
	uint32_t *lkey;
	int ncq;
	struct ibv_cq **cqs; // the distinct CQs of the QPs, ncq of them
	uint32_t size;
	int depth;     // send queue slots per QP
	int post_list; // writes per post; 0: every free slot as one list
	int low_water; // fewest free slots worth a list (post_list 0)
	int every;     // signal one write in every (CQ moderation)
	int inl;       // IBV_SEND_INLINE
	int iter_mode; // remaining[] counts writes still to post
	// per QP
	int *outstanding;
	int64_t *remaining;
	uint64_t *gen; // the QP's built.gen after this stream's last build there (0: none)
	// control, between runs
	int posting;  // 0: only poll (drain)
	int stop;     // set (atomically) from any thread: the run returns
	int peak_on;  // measure the best window of peak_window_ns
	int64_t peak_window_ns, slack_ns;
	// cumulative counts
	uint64_t posted, completed;
	int64_t in_flight;
	// peak window state; peak in writes per second
	int64_t win_start;
	uint64_t win_from;
	double peak;
	// the first error
	int err_kind; // EK_STREAM_ERR_*
	int err_rc, err_qp, err_status;
	uint32_t err_vendor;
	uint64_t err_wrid;
	int64_t poll_ns; // how long the last run's last poll took
	int empty;       // consecutive empty polls
	uint64_t posts, polls, yields; // calls made, for the record
} ek_stream;

enum { EK_RUN_DEADLINE = 0, EK_RUN_DONE = 1, EK_RUN_DRAINED = 2, EK_RUN_STOPPED = 3, EK_RUN_ERROR = 4 };
enum { EK_STREAM_ERR_POST = 1, EK_STREAM_ERR_POLL = 2, EK_STREAM_ERR_WC = 3, EK_STREAM_ERR_MISMATCH = 4 };

ek_stream *ek_stream_new(int nqp);
void ek_stream_free(ek_stream *s);
int64_t ek_now_ns(void);
// ek_deadline is now + for_ns, or INT64_MAX where that would overflow.
int64_t ek_deadline(int64_t now, int64_t for_ns);
void ek_stream_peak_start(ek_stream *s);
// ek_stream_run runs for at most for_ns nanoseconds; s->poll_ns is how long
// its last poll of the CQ (every ready completion) took to return. (No
// out-pointer: a Go pointer passed to C escapes to the heap.)
int ek_stream_run(ek_stream *s, int64_t for_ns);

#endif
