// The C side of package ibverbs: libibverbs and librdmacm opened with
// dlopen, every exported function called through a dlsym pointer.
// rdma_abi.h declares the types and the inline dispatchers (ibv_post_send,
// ibv_poll_cq go through context->ops) from rdma-core's headers, so no -dev
// package is needed to build; no libibverbs or librdmacm symbol is
// referenced, so neither library is linked.
#ifndef ERDMAKIT_SHIM_H
#define ERDMAKIT_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include "rdma_abi.h"

typedef struct ek_lib ek_lib;

// ek_load results.
enum { EK_LOAD_OK = 0, EK_LOAD_NOLIB = 1, EK_LOAD_NOSYM = 2 };

int ek_load(const char *verbs, const char *cm, ek_lib **out, char *err, int errlen);
int ek_cm_loaded(ek_lib *lib, char *err, int errlen);
int ek_has_gid_ex(ek_lib *lib);
int ek_has_gid_table(ek_lib *lib);

typedef struct {
	char name[IBV_SYSFS_NAME_MAX];
	uint64_t guid;
	int node_type;
	int transport;
} ek_devinfo;

int ek_devices(ek_lib *lib, ek_devinfo *out, int max, int *n);
int ek_open(ek_lib *lib, const char *name, struct ibv_context **out, ek_devinfo *info);
int ek_close_device(ek_lib *lib, struct ibv_context *ctx);
int ek_query_device(ek_lib *lib, struct ibv_context *ctx, struct ibv_device_attr *attr);
int ek_query_port(ek_lib *lib, struct ibv_context *ctx, int port, struct ibv_port_attr *attr);
int ek_query_gid(ek_lib *lib, struct ibv_context *ctx, int port, int index, uint8_t *gid);
int ek_query_gid_ex(ek_lib *lib, struct ibv_context *ctx, int port, int index, struct ibv_gid_entry *e);
// ek_query_gid_table reads every port's populated GID entries with one
// ibv_query_gid_table (at most max of them, *n filled); 0 or an errno
// (ENOSYS: the library has none).
int ek_query_gid_table(ek_lib *lib, struct ibv_context *ctx, struct ibv_gid_entry *entries, int max, int *n);
const char *ek_wc_status_str(ek_lib *lib, int status);

int ek_buf_alloc(size_t size, void **out);
void ek_buf_free(void *p);

int ek_alloc_pd(ek_lib *lib, struct ibv_context *ctx, struct ibv_pd **out);
int ek_dealloc_pd(ek_lib *lib, struct ibv_pd *pd);
int ek_reg_mr(ek_lib *lib, struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **out);
int ek_dereg_mr(ek_lib *lib, struct ibv_mr *mr);

// ek_probe_dmabuf calls ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) as NCCL does
// and returns the errno it left (0 if it registered, which fd -1 should
// never do), or EK_PROBE_NOSYM when libibverbs has no ibv_reg_dmabuf_mr.
enum { EK_PROBE_NOSYM = -1 };
int ek_probe_dmabuf(ek_lib *lib, struct ibv_pd *pd);
int ek_create_cq(ek_lib *lib, struct ibv_context *ctx, int cqe, struct ibv_cq **out);
int ek_destroy_cq(ek_lib *lib, struct ibv_cq *cq);

typedef struct {
	int max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
} ek_qp_caps;

typedef struct ek_qp {
	ek_lib *lib;
	struct ibv_qp *qp;
	// qpx is set when the QP's writes are posted with the work request API
	// (ibv_wr_*; the provider has it and the QP was made for it): rxe's
	// costs about 12% fewer instructions a list of 8 than ibv_post_send.
	struct ibv_qp_ex *qpx;
	struct rdma_cm_id *cmid; // set when rdma_create_qp made the QP
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	int cap;
	int last_posted; // WRs of the last failed post list that were posted
	ek_qp_caps caps; // as granted
	// The list in wrs/sges as last built: a post with the same arguments
	// (a write loop's every post) reuses it, renumbering only sequence
	// wr_ids. gen changes whenever wrs or sges do, so that a caller that
	// built the list can post it again unchecked (ek_post_built).
	struct {
		uint64_t laddr, raddr, wrid;
		uint32_t lkey, rkey, size;
		int n, every, inl, ids, valid;
		uint64_t gen;
	} built;
} ek_qp;

// ek_create_qp creates an RC QP; with wr_api, one whose writes take the
// work request API where the provider has it (q->qpx), else as without.
int ek_create_qp(ek_lib *lib, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, ek_qp_caps *caps, int wr_api,
		 ek_qp **out);
int ek_destroy_qp(ek_qp *q);

typedef struct {
	int port, access, pkey_index;
	uint32_t dest_qpn, rq_psn, sq_psn;
	uint8_t dgid[16];
	uint16_t dlid;
	int is_global, sgid_index, hop_limit;
	int mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
} ek_conn;

// ek_connect stages, reported in *stage on failure.
enum { EK_STAGE_INIT = 1, EK_STAGE_RTR = 2, EK_STAGE_RTS = 3 };

int ek_modify_init(ek_qp *q, ek_conn *c);
int ek_connect(ek_qp *q, ek_conn *c, int *stage);
int ek_qp_state(ek_qp *q, int *state);

// How a list's work requests are numbered: EK_WRID_SEQ gives WR i of the
// list wrid + i; EK_WRID_COUNT gives it wrid | the writes its completion
// stands for (those since the previous signalled WR of the list; 0 when
// unsignalled), the same from post to post, so a repeated post rewrites
// nothing.
enum { EK_WRID_SEQ = 0, EK_WRID_COUNT = 1 };

// ek_post_writes posts n RDMA writes of size bytes from laddr to raddr as
// one list, one in every `every` signalled and the last; ids is EK_WRID_*.
// It returns 0 or an errno; on failure q->last_posted says how many WRs of
// the list were posted. (No out-pointer: a Go pointer passed to C escapes to
// the heap, and the data path must not allocate.)
int ek_post_writes(ek_qp *q, uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		   uint32_t size, int n, int every, uint64_t wrid, int ids, int inl);
// ek_wr_build opens a batch of the work request API (ibv_wr_start) and
// builds in it a list of RDMA writes (one SGE each, as ek_post_writes
// builds them), what ibv_post_send would post; ibv_wr_complete posts the
// batch, ibv_wr_abort discards it. Inline data is copied now.
// IBV_SEND_INLINE stays in wr_flags: rxe's kernel reads it from the WQE,
// and its wr_set_inline_data does not set it.
static inline void ek_wr_build(struct ibv_qp_ex *x, const struct ibv_send_wr *list)
{
	ibv_wr_start(x);
	for (const struct ibv_send_wr *w = list; w; w = w->next) {
		x->wr_id = w->wr_id;
		x->wr_flags = w->send_flags;
		ibv_wr_rdma_write(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
		if (w->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(x, (void *)(uintptr_t)w->sg_list->addr, w->sg_list->length);
		else
			ibv_wr_set_sge(x, w->sg_list->lkey, w->sg_list->addr, w->sg_list->length);
	}
}

// ek_wr_post posts a list through the work request API (ek_wr_build, then
// ibv_wr_complete): a failure posts none of the list.
static inline int ek_wr_post(struct ibv_qp_ex *x, struct ibv_send_wr *list)
{
	ek_wr_build(x, list);
	return ibv_wr_complete(x);
}

// ek_post_built posts q's list as last built, unchanged: for a caller that
// built it (ek_post_writes with EK_WRID_COUNT) and finds q->built.gen as it
// left it. The same returns as ek_post_writes. Inline: it is a write loop's
// every post.
static inline int ek_post_built(ek_qp *q)
{
	if (q->qpx) {
		q->last_posted = 0;
		return ek_wr_post(q->qpx, q->wrs);
	}
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(q->qp, q->wrs, &bad);
	q->last_posted = rc && bad ? (int)(bad - q->wrs) : 0;
	return rc;
}
int ek_post_send(ek_qp *q, uint64_t laddr, uint32_t lkey, uint32_t size, uint64_t wrid);
int ek_post_recv(ek_qp *q, uint64_t laddr, uint32_t lkey, uint32_t size, uint64_t wrid);

typedef struct {
	uint64_t wr_id;
	uint32_t status, opcode, vendor_err, byte_len, qp_num, src_qp, imm_data, wc_flags;
} ek_wc;

int ek_poll(struct ibv_cq *cq, ek_wc *out, int max);

// rdma_cm.
typedef struct {
	int event;  // enum rdma_cm_event_type
	int status; // event status (negative errno or reject reason)
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	int private_len;
	uint8_t private_data[256];
} ek_cm_event;

int ek_cm_channel(ek_lib *lib, struct rdma_event_channel **out);
void ek_cm_destroy_channel(ek_lib *lib, struct rdma_event_channel *ch);
int ek_cm_create_id(ek_lib *lib, struct rdma_event_channel *ch, struct rdma_cm_id **out);
int ek_cm_destroy_id(ek_lib *lib, struct rdma_cm_id *id);
int ek_cm_migrate(ek_lib *lib, struct rdma_cm_id *id, struct rdma_event_channel *ch);
int ek_cm_bind_listen(ek_lib *lib, struct rdma_cm_id *id, const uint8_t *ip, int iplen, int port, int backlog, int *bound_port);
int ek_cm_resolve_addr(ek_lib *lib, struct rdma_cm_id *id, const uint8_t *ip, int iplen, int port, int timeout_ms);
int ek_cm_resolve_route(ek_lib *lib, struct rdma_cm_id *id, int timeout_ms);
int ek_cm_wait(ek_lib *lib, struct rdma_event_channel *ch, int timeout_ms, ek_cm_event *ev);
int ek_cm_create_qp(ek_lib *lib, struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, ek_qp_caps *caps, ek_qp **out);
int ek_cm_connect(ek_lib *lib, struct rdma_cm_id *id, const void *pd, int pdlen, int retry, int rnr, int rd);
int ek_cm_accept(ek_lib *lib, struct rdma_cm_id *id, const void *pd, int pdlen, int rnr, int rd);
int ek_cm_reject(ek_lib *lib, struct rdma_cm_id *id);
int ek_cm_disconnect(ek_lib *lib, struct rdma_cm_id *id);
const char *ek_cm_event_str(ek_lib *lib, int event);
struct ibv_context *ek_cm_verbs(struct rdma_cm_id *id);
const char *ek_cm_dev_name(struct rdma_cm_id *id);

#endif
