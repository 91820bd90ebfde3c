//go:build linux && cgo

#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

struct ek_lib {
	void *vh, *ch;
	// libibverbs
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	__be64 (*get_device_guid)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	// The exported ibv_query_port (a macro in the header) fills the compat
	// prefix of struct ibv_port_attr.
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	int (*query_gid_ex)(struct ibv_context *, uint32_t, uint32_t, struct ibv_gid_entry *, uint32_t, size_t);
	// rdma-core >= 32; NULL before. The number of entries, or -errno.
	ssize_t (*query_gid_table)(struct ibv_context *, struct ibv_gid_entry *, size_t, uint32_t, size_t);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	// rdma-core >= 34 (IBVERBS_1.12); NULL before.
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	// rdma-core >= 24 (IBVERBS_1.6); NULL before: no work request API.
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *);
	int (*destroy_qp)(struct ibv_qp *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*query_qp)(struct ibv_qp *, struct ibv_qp_attr *, int, struct ibv_qp_init_attr *);
	const char *(*wc_status_str)(enum ibv_wc_status);
	// librdmacm (optional)
	int cm_ok;
	char cm_err[256];
	struct rdma_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct rdma_event_channel *);
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *, enum rdma_port_space);
	int (*destroy_id)(struct rdma_cm_id *);
	int (*migrate_id)(struct rdma_cm_id *, struct rdma_event_channel *);
	int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *);
	int (*listen)(struct rdma_cm_id *, int);
	int (*resolve_addr)(struct rdma_cm_id *, struct sockaddr *, struct sockaddr *, int);
	int (*resolve_route)(struct rdma_cm_id *, int);
	int (*get_cm_event)(struct rdma_event_channel *, struct rdma_cm_event **);
	int (*ack_cm_event)(struct rdma_cm_event *);
	int (*cm_create_qp)(struct rdma_cm_id *, struct ibv_pd *, struct ibv_qp_init_attr *);
	void (*cm_destroy_qp)(struct rdma_cm_id *);
	int (*connect)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*accept)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*reject)(struct rdma_cm_id *, const void *, uint8_t);
	int (*disconnect)(struct rdma_cm_id *);
	const char *(*event_str)(enum rdma_cm_event_type);
};

#define SYM(h, field, name, required)                                              \
	do {                                                                       \
		*(void **)(&lib->field) = dlsym(h, name);                          \
		if (!lib->field && required) {                                     \
			snprintf(err, errlen, "%s: symbol %s not found", libname, name); \
			goto nosym;                                                \
		}                                                                  \
	} while (0)

int ek_load(const char *verbs, const char *cm, ek_lib **out, char *err, int errlen)
{
	ek_lib *lib = calloc(1, sizeof(*lib));
	const char *libname = verbs;
	if (!lib) {
		snprintf(err, errlen, "out of memory");
		return EK_LOAD_NOSYM;
	}
	lib->vh = dlopen(verbs, RTLD_NOW | RTLD_LOCAL);
	if (!lib->vh) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : verbs);
		free(lib);
		return EK_LOAD_NOLIB;
	}
	SYM(lib->vh, get_device_list, "ibv_get_device_list", 1);
	SYM(lib->vh, free_device_list, "ibv_free_device_list", 1);
	SYM(lib->vh, get_device_guid, "ibv_get_device_guid", 1);
	SYM(lib->vh, open_device, "ibv_open_device", 1);
	SYM(lib->vh, close_device, "ibv_close_device", 1);
	SYM(lib->vh, query_device, "ibv_query_device", 1);
	SYM(lib->vh, query_port, "ibv_query_port", 1);
	SYM(lib->vh, query_gid, "ibv_query_gid", 1);
	SYM(lib->vh, query_gid_ex, "_ibv_query_gid_ex", 0);
	SYM(lib->vh, query_gid_table, "_ibv_query_gid_table", 0);
	SYM(lib->vh, alloc_pd, "ibv_alloc_pd", 1);
	SYM(lib->vh, dealloc_pd, "ibv_dealloc_pd", 1);
	SYM(lib->vh, reg_mr, "ibv_reg_mr", 1);
	SYM(lib->vh, reg_dmabuf_mr, "ibv_reg_dmabuf_mr", 0);
	SYM(lib->vh, dereg_mr, "ibv_dereg_mr", 1);
	SYM(lib->vh, create_cq, "ibv_create_cq", 1);
	SYM(lib->vh, destroy_cq, "ibv_destroy_cq", 1);
	SYM(lib->vh, create_qp, "ibv_create_qp", 1);
	SYM(lib->vh, qp_to_qp_ex, "ibv_qp_to_qp_ex", 0);
	SYM(lib->vh, destroy_qp, "ibv_destroy_qp", 1);
	SYM(lib->vh, modify_qp, "ibv_modify_qp", 1);
	SYM(lib->vh, query_qp, "ibv_query_qp", 1);
	SYM(lib->vh, wc_status_str, "ibv_wc_status_str", 1);

	lib->ch = dlopen(cm, RTLD_NOW | RTLD_LOCAL);
	if (!lib->ch) {
		const char *e = dlerror();
		snprintf(lib->cm_err, sizeof(lib->cm_err), "%s", e ? e : cm);
	} else {
		char *saved = err;
		int savedlen = errlen;
		err = lib->cm_err;
		errlen = sizeof(lib->cm_err);
		libname = cm;
		SYM(lib->ch, create_event_channel, "rdma_create_event_channel", 1);
		SYM(lib->ch, destroy_event_channel, "rdma_destroy_event_channel", 1);
		SYM(lib->ch, create_id, "rdma_create_id", 1);
		SYM(lib->ch, destroy_id, "rdma_destroy_id", 1);
		SYM(lib->ch, migrate_id, "rdma_migrate_id", 1);
		SYM(lib->ch, bind_addr, "rdma_bind_addr", 1);
		SYM(lib->ch, listen, "rdma_listen", 1);
		SYM(lib->ch, resolve_addr, "rdma_resolve_addr", 1);
		SYM(lib->ch, resolve_route, "rdma_resolve_route", 1);
		SYM(lib->ch, get_cm_event, "rdma_get_cm_event", 1);
		SYM(lib->ch, ack_cm_event, "rdma_ack_cm_event", 1);
		SYM(lib->ch, cm_create_qp, "rdma_create_qp", 1);
		SYM(lib->ch, cm_destroy_qp, "rdma_destroy_qp", 1);
		SYM(lib->ch, connect, "rdma_connect", 1);
		SYM(lib->ch, accept, "rdma_accept", 1);
		SYM(lib->ch, reject, "rdma_reject", 1);
		SYM(lib->ch, disconnect, "rdma_disconnect", 1);
		SYM(lib->ch, event_str, "rdma_event_str", 1);
		lib->cm_ok = 1;
		err = saved;
		errlen = savedlen;
	}
	*out = lib;
	return EK_LOAD_OK;

nosym:
	if (lib->ch && libname == cm) {
		// librdmacm lacks a symbol: verbs still usable, cm_err says why.
		lib->cm_ok = 0;
		*out = lib;
		return EK_LOAD_OK;
	}
	dlclose(lib->vh);
	free(lib);
	return EK_LOAD_NOSYM;
}

int ek_cm_loaded(ek_lib *lib, char *err, int errlen)
{
	if (!lib->cm_ok)
		snprintf(err, errlen, "%s", lib->cm_err);
	return lib->cm_ok;
}

int ek_has_gid_ex(ek_lib *lib) { return lib->query_gid_ex != NULL; }
int ek_has_gid_table(ek_lib *lib) { return lib->query_gid_table != NULL; }

static int errno_or(int def) { return errno ? errno : def; }

int ek_devices(ek_lib *lib, ek_devinfo *out, int max, int *n)
{
	int num = 0;
	errno = 0;
	struct ibv_device **list = lib->get_device_list(&num);
	if (!list) {
		// ENOSYS: no kernel RDMA support (ib_uverbs): zero devices.
		if (errno == ENOSYS) {
			*n = 0;
			return 0;
		}
		return errno_or(EIO);
	}
	int i;
	for (i = 0; i < num && i < max; i++) {
		snprintf(out[i].name, sizeof(out[i].name), "%s", list[i]->name);
		out[i].guid = be64toh(lib->get_device_guid(list[i]));
		out[i].node_type = list[i]->node_type;
		out[i].transport = list[i]->transport_type;
	}
	*n = num;
	lib->free_device_list(list);
	return 0;
}

int ek_open(ek_lib *lib, const char *name, struct ibv_context **out, ek_devinfo *info)
{
	int num = 0, rc = ENODEV;
	errno = 0;
	struct ibv_device **list = lib->get_device_list(&num);
	if (!list)
		return errno == ENOSYS ? ENODEV : errno_or(EIO);
	for (int i = 0; i < num; i++) {
		if (strcmp(list[i]->name, name) != 0)
			continue;
		snprintf(info->name, sizeof(info->name), "%s", list[i]->name);
		info->guid = be64toh(lib->get_device_guid(list[i]));
		info->node_type = list[i]->node_type;
		info->transport = list[i]->transport_type;
		errno = 0;
		*out = lib->open_device(list[i]);
		rc = *out ? 0 : errno_or(EIO);
		break;
	}
	lib->free_device_list(list);
	return rc;
}

int ek_close_device(ek_lib *lib, struct ibv_context *ctx)
{
	errno = 0;
	int rc = lib->close_device(ctx);
	return rc ? errno_or(EIO) : 0;
}

int ek_query_device(ek_lib *lib, struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	errno = 0;
	int rc = lib->query_device(ctx, attr);
	return rc ? (rc > 0 ? rc : errno_or(EIO)) : 0;
}

int ek_query_port(ek_lib *lib, struct ibv_context *ctx, int port, struct ibv_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	errno = 0;
	int rc = lib->query_port(ctx, (uint8_t)port, attr);
	return rc ? (rc > 0 ? rc : errno_or(EIO)) : 0;
}

int ek_query_gid(ek_lib *lib, struct ibv_context *ctx, int port, int index, uint8_t *gid)
{
	union ibv_gid g;
	errno = 0;
	int rc = lib->query_gid(ctx, (uint8_t)port, index, &g);
	if (rc)
		return rc > 0 ? rc : errno_or(EINVAL);
	memcpy(gid, g.raw, 16);
	return 0;
}

int ek_query_gid_ex(ek_lib *lib, struct ibv_context *ctx, int port, int index, struct ibv_gid_entry *e)
{
	if (!lib->query_gid_ex)
		return ENOSYS;
	memset(e, 0, sizeof(*e));
	errno = 0;
	int rc = lib->query_gid_ex(ctx, port, index, e, 0, sizeof(*e));
	return rc ? (rc > 0 ? rc : errno_or(EINVAL)) : 0;
}

int ek_query_gid_table(ek_lib *lib, struct ibv_context *ctx, struct ibv_gid_entry *entries, int max, int *n)
{
	*n = 0;
	if (!lib->query_gid_table)
		return ENOSYS;
	if (max <= 0)
		return EINVAL;
	errno = 0;
	ssize_t r = lib->query_gid_table(ctx, entries, (size_t)max, 0, sizeof(*entries));
	if (r < 0)
		return (int)-r;
	if (r > max)
		return EOVERFLOW;
	*n = (int)r;
	return 0;
}

const char *ek_wc_status_str(ek_lib *lib, int status)
{
	return lib->wc_status_str((enum ibv_wc_status)status);
}

int ek_buf_alloc(size_t size, void **out)
{
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	size_t rounded = (size + page - 1) / page * page;
	int rc = posix_memalign(out, (size_t)page, rounded ? rounded : (size_t)page);
	if (rc)
		return rc;
	memset(*out, 0, rounded);
	return 0;
}

void ek_buf_free(void *p) { free(p); }

int ek_alloc_pd(ek_lib *lib, struct ibv_context *ctx, struct ibv_pd **out)
{
	errno = 0;
	*out = lib->alloc_pd(ctx);
	return *out ? 0 : errno_or(ENOMEM);
}

int ek_dealloc_pd(ek_lib *lib, struct ibv_pd *pd) { return lib->dealloc_pd(pd); }

int ek_reg_mr(ek_lib *lib, struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **out)
{
	errno = 0;
	*out = lib->reg_mr(pd, addr, len, access);
	return *out ? 0 : errno_or(ENOMEM);
}

int ek_dereg_mr(ek_lib *lib, struct ibv_mr *mr) { return lib->dereg_mr(mr); }

int ek_probe_dmabuf(ek_lib *lib, struct ibv_pd *pd)
{
	if (!lib->reg_dmabuf_mr)
		return EK_PROBE_NOSYM;
	errno = 0;
	// NCCL's probe (src/transport/net_ib/gdr.cc ibDmaBufSupportInitOnce):
	// offset 0, length 0, iova 0, fd -1, no access flags.
	struct ibv_mr *mr = lib->reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
	if (mr) {
		lib->dereg_mr(mr);
		return 0;
	}
	return errno;
}

int ek_create_cq(ek_lib *lib, struct ibv_context *ctx, int cqe, struct ibv_cq **out)
{
	errno = 0;
	*out = lib->create_cq(ctx, cqe, NULL, NULL, 0);
	return *out ? 0 : errno_or(ENOMEM);
}

int ek_destroy_cq(ek_lib *lib, struct ibv_cq *cq) { return lib->destroy_cq(cq); }

static int qp_scratch(ek_qp *q)
{
	q->cap = q->caps.max_send_wr > 0 ? q->caps.max_send_wr : 1;
	q->wrs = calloc(q->cap, sizeof(*q->wrs));
	q->sges = calloc(q->cap, sizeof(*q->sges));
	if (!q->wrs || !q->sges) {
		free(q->wrs);
		free(q->sges);
		return ENOMEM;
	}
	return 0;
}

static void init_attr(struct ibv_qp_init_attr *ia, struct ibv_cq *scq, struct ibv_cq *rcq, ek_qp_caps *caps)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = scq;
	ia->recv_cq = rcq;
	ia->qp_type = IBV_QPT_RC;
	ia->sq_sig_all = 0;
	ia->cap.max_send_wr = caps->max_send_wr;
	ia->cap.max_recv_wr = caps->max_recv_wr;
	ia->cap.max_send_sge = caps->max_send_sge;
	ia->cap.max_recv_sge = caps->max_recv_sge;
	ia->cap.max_inline_data = caps->max_inline;
}

static void granted(ek_qp *q, struct ibv_qp_init_attr *ia, ek_qp_caps *asked)
{
	q->caps = *asked;
	// Providers may round up; never use more than asked for the scratch list.
	if ((int)ia->cap.max_inline_data > asked->max_inline)
		q->caps.max_inline = ia->cap.max_inline_data;
}

// create_qp_wr creates the QP through ibv_create_qp_ex with the work
// request API for RDMA writes (as perftest does where it can), setting
// *qpx and ia->cap to what was granted; NULL, ia untouched, where the
// provider has no such QPs (eRDMA's has none) or refuses this one, and the
// caller creates it from ia as before.
static struct ibv_qp *create_qp_wr(ek_lib *lib, struct ibv_pd *pd, struct ibv_qp_init_attr *ia, struct ibv_qp_ex **qpx)
{
	if (!lib->qp_to_qp_ex)
		return NULL;
	struct verbs_context *vctx = verbs_get_ctx_op(pd->context, create_qp_ex);
	if (!vctx)
		return NULL;
	struct ibv_qp_init_attr_ex ax;
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = ia->send_cq;
	ax.recv_cq = ia->recv_cq;
	ax.cap = ia->cap;
	ax.qp_type = ia->qp_type;
	ax.sq_sig_all = ia->sq_sig_all;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.pd = pd;
	ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	struct ibv_qp *qp = vctx->create_qp_ex(pd->context, &ax);
	if (!qp)
		return NULL;
	struct ibv_qp_ex *x = lib->qp_to_qp_ex(qp);
	if (!x || !x->wr_start || !x->wr_complete || !x->wr_abort || !x->wr_rdma_write || !x->wr_set_sge ||
	    !x->wr_set_inline_data) {
		lib->destroy_qp(qp);
		return NULL;
	}
	ia->cap = ax.cap; // as granted
	*qpx = x;
	return qp;
}

int ek_create_qp(ek_lib *lib, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, ek_qp_caps *caps, int wr_api,
		 ek_qp **out)
{
	struct ibv_qp_init_attr ia;
	init_attr(&ia, scq, rcq, caps);
	ek_qp *q = calloc(1, sizeof(*q));
	if (!q)
		return ENOMEM;
	q->lib = lib;
	if (wr_api)
		q->qp = create_qp_wr(lib, pd, &ia, &q->qpx);
	if (!q->qp) {
		errno = 0;
		q->qp = lib->create_qp(pd, &ia);
	}
	if (!q->qp) {
		int rc = errno_or(ENOMEM);
		free(q);
		return rc;
	}
	granted(q, &ia, caps);
	int rc = qp_scratch(q);
	if (rc) {
		lib->destroy_qp(q->qp);
		free(q);
		return rc;
	}
	*out = q;
	return 0;
}

int ek_destroy_qp(ek_qp *q)
{
	int rc = 0;
	if (q->cmid) {
		q->lib->cm_destroy_qp(q->cmid);
	} else {
		rc = q->lib->destroy_qp(q->qp);
		if (rc)
			return rc;
	}
	free(q->wrs);
	free(q->sges);
	free(q);
	return 0;
}

int ek_modify_init(ek_qp *q, ek_conn *c)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = c->pkey_index;
	a.port_num = c->port;
	a.qp_access_flags = c->access;
	return q->lib->modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int ek_qp_state(ek_qp *q, int *state)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc = q->lib->query_qp(q->qp, &a, IBV_QP_STATE, &ia);
	if (rc)
		return rc;
	*state = a.qp_state;
	return 0;
}

int ek_connect(ek_qp *q, ek_conn *c, int *stage)
{
	struct ibv_qp_attr a;
	int rc, st = 0;
	*stage = EK_STAGE_INIT;
	rc = ek_qp_state(q, &st);
	if (rc)
		return rc;
	if (st == IBV_QPS_RESET) {
		rc = ek_modify_init(q, c);
		if (rc)
			return rc;
	}

	*stage = EK_STAGE_RTR;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)c->mtu;
	a.dest_qp_num = c->dest_qpn;
	a.rq_psn = c->rq_psn;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.port_num = c->port;
	a.ah_attr.dlid = c->dlid;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	if (c->is_global) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, c->dgid, 16);
		a.ah_attr.grh.sgid_index = c->sgid_index;
		a.ah_attr.grh.hop_limit = c->hop_limit;
		a.ah_attr.grh.flow_label = 0;
		a.ah_attr.grh.traffic_class = 0;
	}
	rc = q->lib->modify_qp(q->qp, &a,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;

	*stage = EK_STAGE_RTS;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.sq_psn = c->sq_psn;
	a.max_rd_atomic = c->max_rd_atomic;
	return q->lib->modify_qp(q->qp, &a,
				 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int ek_post_writes(ek_qp *q, uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		   uint32_t size, int n, int every, uint64_t wrid, int ids, int inl)
{
	q->last_posted = 0;
	if (n <= 0)
		return 0;
	if (n > q->cap)
		return EINVAL;
	if (every <= 0)
		every = 1;
	if (q->built.valid && q->built.n == n && q->built.laddr == laddr && q->built.lkey == lkey &&
	    q->built.raddr == raddr && q->built.rkey == rkey && q->built.size == size && q->built.every == every &&
	    q->built.inl == inl && q->built.ids == ids) {
		if (ids == EK_WRID_COUNT && q->built.wrid == wrid)
			return ek_post_built(q);
		if (ids == EK_WRID_SEQ) {
			for (int i = 0; i < n; i++)
				q->wrs[i].wr_id = wrid + (uint64_t)i;
			q->built.wrid = wrid;
			q->built.gen++;
			return ek_post_built(q);
		}
	}
	for (int i = 0; i < n; i++) {
		struct ibv_sge *s = &q->sges[i];
		struct ibv_send_wr *w = &q->wrs[i];
		int since = (i + 1) % every; // writes since the last signalled one
		int signalled = since == 0 || i == n - 1;
		s->addr = laddr;
		s->length = size;
		s->lkey = lkey;
		if (ids == EK_WRID_SEQ)
			w->wr_id = wrid + (uint64_t)i;
		else if (!signalled)
			w->wr_id = wrid;
		else
			w->wr_id = wrid | (uint64_t)(since ? since : every);
		w->next = i + 1 < n ? &q->wrs[i + 1] : NULL;
		w->sg_list = s;
		w->num_sge = 1;
		w->opcode = IBV_WR_RDMA_WRITE;
		w->send_flags = signalled ? IBV_SEND_SIGNALED : 0;
		if (inl)
			w->send_flags |= IBV_SEND_INLINE;
		w->wr.rdma.remote_addr = raddr;
		w->wr.rdma.rkey = rkey;
	}
	q->built.laddr = laddr, q->built.lkey = lkey, q->built.raddr = raddr, q->built.rkey = rkey;
	q->built.size = size, q->built.n = n, q->built.every = every, q->built.inl = inl, q->built.valid = 1;
	q->built.ids = ids, q->built.wrid = wrid;
	q->built.gen++;
	return ek_post_built(q);
}

int ek_post_send(ek_qp *q, uint64_t laddr, uint32_t lkey, uint32_t size, uint64_t wrid)
{
	struct ibv_sge s = {.addr = laddr, .length = size, .lkey = lkey};
	struct ibv_send_wr w, *bad = NULL;
	memset(&w, 0, sizeof(w));
	w.wr_id = wrid;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(q->qp, &w, &bad);
}

int ek_post_recv(ek_qp *q, uint64_t laddr, uint32_t lkey, uint32_t size, uint64_t wrid)
{
	struct ibv_sge s = {.addr = laddr, .length = size, .lkey = lkey};
	struct ibv_recv_wr w, *bad = NULL;
	memset(&w, 0, sizeof(w));
	w.wr_id = wrid;
	w.sg_list = &s;
	w.num_sge = 1;
	return ibv_post_recv(q->qp, &w, &bad);
}

int ek_poll(struct ibv_cq *cq, ek_wc *out, int max)
{
	struct ibv_wc wc[32];
	int total = 0;
	while (total < max) {
		int want = max - total;
		if (want > 32)
			want = 32;
		int n = ibv_poll_cq(cq, want, wc);
		if (n < 0)
			return total ? total : -EIO;
		for (int i = 0; i < n; i++) {
			ek_wc *o = &out[total + i];
			o->wr_id = wc[i].wr_id;
			o->status = wc[i].status;
			o->opcode = wc[i].opcode;
			o->vendor_err = wc[i].vendor_err;
			o->byte_len = wc[i].byte_len;
			o->qp_num = wc[i].qp_num;
			o->src_qp = wc[i].src_qp;
			o->imm_data = wc[i].imm_data;
			o->wc_flags = wc[i].wc_flags;
		}
		total += n;
		if (n < want)
			break;
	}
	return total;
}

// rdma_cm

int ek_cm_channel(ek_lib *lib, struct rdma_event_channel **out)
{
	errno = 0;
	*out = lib->create_event_channel();
	if (!*out)
		return errno_or(ENODEV);
	int fl = fcntl((*out)->fd, F_GETFL);
	if (fl < 0 || fcntl((*out)->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int rc = errno_or(EIO);
		lib->destroy_event_channel(*out);
		*out = NULL;
		return rc;
	}
	return 0;
}

void ek_cm_destroy_channel(ek_lib *lib, struct rdma_event_channel *ch) { lib->destroy_event_channel(ch); }

int ek_cm_create_id(ek_lib *lib, struct rdma_event_channel *ch, struct rdma_cm_id **out)
{
	errno = 0;
	int rc = lib->create_id(ch, out, NULL, RDMA_PS_TCP);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_destroy_id(ek_lib *lib, struct rdma_cm_id *id)
{
	errno = 0;
	int rc = lib->destroy_id(id);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_migrate(ek_lib *lib, struct rdma_cm_id *id, struct rdma_event_channel *ch)
{
	errno = 0;
	int rc = lib->migrate_id(id, ch);
	return rc ? errno_or(EIO) : 0;
}

static socklen_t mkaddr(struct sockaddr_storage *ss, const uint8_t *ip, int iplen, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (iplen == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons((uint16_t)port);
		memcpy(&s->sin_addr, ip, 4);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
	s->sin6_family = AF_INET6;
	s->sin6_port = htons((uint16_t)port);
	memcpy(&s->sin6_addr, ip, 16);
	return sizeof(*s);
}

int ek_cm_bind_listen(ek_lib *lib, struct rdma_cm_id *id, const uint8_t *ip, int iplen, int port, int backlog, int *bound_port)
{
	struct sockaddr_storage ss;
	mkaddr(&ss, ip, iplen, port);
	errno = 0;
	if (lib->bind_addr(id, (struct sockaddr *)&ss))
		return errno_or(EADDRNOTAVAIL);
	errno = 0;
	if (lib->listen(id, backlog))
		return errno_or(EIO);
	struct sockaddr *sa = &id->route.addr.src_addr;
	if (sa->sa_family == AF_INET)
		*bound_port = ntohs(((struct sockaddr_in *)sa)->sin_port);
	else
		*bound_port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

int ek_cm_resolve_addr(ek_lib *lib, struct rdma_cm_id *id, const uint8_t *ip, int iplen, int port, int timeout_ms)
{
	struct sockaddr_storage ss;
	mkaddr(&ss, ip, iplen, port);
	errno = 0;
	int rc = lib->resolve_addr(id, NULL, (struct sockaddr *)&ss, timeout_ms);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_resolve_route(ek_lib *lib, struct rdma_cm_id *id, int timeout_ms)
{
	errno = 0;
	int rc = lib->resolve_route(id, timeout_ms);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_wait(ek_lib *lib, struct rdma_event_channel *ch, int timeout_ms, ek_cm_event *ev)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	int rc = poll(&p, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? EAGAIN : errno_or(EIO);
	if (rc == 0)
		return EAGAIN;
	struct rdma_cm_event *e = NULL;
	errno = 0;
	if (lib->get_cm_event(ch, &e))
		return errno == EAGAIN || errno == EWOULDBLOCK ? EAGAIN : errno_or(EIO);
	memset(ev, 0, sizeof(*ev));
	ev->event = e->event;
	ev->status = e->status;
	ev->id = e->id;
	ev->listen_id = e->listen_id;
	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST || e->event == RDMA_CM_EVENT_ESTABLISHED ||
	    e->event == RDMA_CM_EVENT_CONNECT_RESPONSE || e->event == RDMA_CM_EVENT_REJECTED) {
		int n = e->param.conn.private_data_len;
		if (n > (int)sizeof(ev->private_data))
			n = sizeof(ev->private_data);
		if (e->param.conn.private_data && n > 0)
			memcpy(ev->private_data, e->param.conn.private_data, n);
		else
			n = 0;
		ev->private_len = n;
	}
	lib->ack_cm_event(e);
	return 0;
}

int ek_cm_create_qp(ek_lib *lib, struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, ek_qp_caps *caps, ek_qp **out)
{
	struct ibv_qp_init_attr ia;
	init_attr(&ia, scq, rcq, caps);
	ek_qp *q = calloc(1, sizeof(*q));
	if (!q)
		return ENOMEM;
	q->lib = lib;
	errno = 0;
	if (lib->cm_create_qp(id, pd, &ia)) {
		int rc = errno_or(ENOMEM);
		free(q);
		return rc;
	}
	q->qp = id->qp;
	q->cmid = id;
	granted(q, &ia, caps);
	int rc = qp_scratch(q);
	if (rc) {
		lib->cm_destroy_qp(id);
		free(q);
		return rc;
	}
	*out = q;
	return 0;
}

int ek_cm_connect(ek_lib *lib, struct rdma_cm_id *id, const void *pd, int pdlen, int retry, int rnr, int rd)
{
	struct rdma_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = (uint8_t)pdlen;
	p.responder_resources = (uint8_t)rd;
	p.initiator_depth = (uint8_t)rd;
	p.retry_count = (uint8_t)retry;
	p.rnr_retry_count = (uint8_t)rnr;
	errno = 0;
	int rc = lib->connect(id, &p);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_accept(ek_lib *lib, struct rdma_cm_id *id, const void *pd, int pdlen, int rnr, int rd)
{
	struct rdma_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = (uint8_t)pdlen;
	p.responder_resources = (uint8_t)rd;
	p.initiator_depth = (uint8_t)rd;
	p.rnr_retry_count = (uint8_t)rnr;
	errno = 0;
	int rc = lib->accept(id, &p);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_reject(ek_lib *lib, struct rdma_cm_id *id)
{
	errno = 0;
	int rc = lib->reject(id, NULL, 0);
	return rc ? errno_or(EIO) : 0;
}

int ek_cm_disconnect(ek_lib *lib, struct rdma_cm_id *id)
{
	errno = 0;
	int rc = lib->disconnect(id);
	return rc ? errno_or(EIO) : 0;
}

const char *ek_cm_event_str(ek_lib *lib, int event) { return lib->event_str((enum rdma_cm_event_type)event); }

struct ibv_context *ek_cm_verbs(struct rdma_cm_id *id) { return id->verbs; }

const char *ek_cm_dev_name(struct rdma_cm_id *id)
{
	return id->verbs && id->verbs->device ? id->verbs->device->name : "";
}
