// cping: erdmakit's C ping-pong (ibverbs/pingpong.c, shim.c) in a C process
// of its own, no Go, to tell the loop from the process (docs/bw.md, "Looking
// for the 2-4%"; run by ../twovcpu.sh). An experiment, not a tool: one QP,
// fixed settings, errors end it.
//   cping server PORT SIZE N     |   cping client HOST PORT SIZE N
// env: DEV (rxe0), GIDX (1), SEND_OFF (64: ours' layout; 4096: a page apart);
// PLAIN=1: ib_write_lat's own loop (run_iter_lat_write) instead of ours, with
// PLAIN_CHECK (a clock read every 256 polls, as ours), PLAIN_ROLE (the
// measuring side posts first, as ours) or PLAIN_EKPOST (posts through
// ek_post_writes, as ours), PLAIN_UNSIG=K (every K-th write signalled, the
// others not reaped). THREADS=n starts n threads that sleep (waking
// every WAKE_US µs if set), so the process is multi-threaded; DUMP=FILE
// writes the client's every one-way sample (µs) there. Prints "cping size S n N median_us U p99_us P" (one way).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "pingpong.h"
#include "shim.h"

struct info { uint32_t qpn, psn, rkey, mtu; uint64_t addr; uint8_t gid[16]; };

static int die(const char *m, int rc) { fprintf(stderr, "cping: %s: %d\n", m, rc); exit(1); }
// idle: a thread that only sleeps, waking every wake_us (0: never), so
// the process is multi-threaded as a Go process is.
static void *idle(void *arg)
{
	long us = (long)(intptr_t)arg;
	for (;;) {
		if (us == 0) { pause(); continue; }
		struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int cmp(const void *a, const void *b) { int64_t x = *(int64_t *)a, y = *(int64_t *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv)
{
	int server = argc > 1 && !strcmp(argv[1], "server");
	if ((server && argc != 5) || (!server && argc != 6))
		die("usage", 0);
	const char *host = server ? NULL : argv[2];
	int port = atoi(argv[server ? 2 : 3]);
	uint32_t size = atoi(argv[server ? 3 : 4]);
	int64_t n = atoll(argv[server ? 4 : 5]);
	const char *dev = getenv("DEV") ? getenv("DEV") : "rxe0";
	int gidx = getenv("GIDX") ? atoi(getenv("GIDX")) : 1;
	uint64_t send_off = getenv("SEND_OFF") ? atoi(getenv("SEND_OFF")) : 64;
	for (int i = getenv("THREADS") ? atoi(getenv("THREADS")) : 0; i > 0; i--) {
		pthread_t t;
		long us = getenv("WAKE_US") ? atol(getenv("WAKE_US")) : 0;
		if (pthread_create(&t, NULL, idle, (void *)(intptr_t)us)) die("thread", 0);
	}
	char err[256];
	ek_lib *lib;
	int rc;
	if ((rc = ek_load("libibverbs.so.1", "librdmacm.so.1", &lib, err, sizeof err)))
		die(err, rc);
	struct ibv_context *ctx;
	ek_devinfo di;
	if ((rc = ek_open(lib, dev, &ctx, &di))) die("open", rc);
	struct ibv_port_attr pa;
	if ((rc = ek_query_port(lib, ctx, 1, &pa))) die("query_port", rc);
	struct ibv_pd *pd;
	if ((rc = ek_alloc_pd(lib, ctx, &pd))) die("pd", rc);
	void *buf;
	size_t bufsize = 2 * 4096 + send_off + size;
	if ((rc = ek_buf_alloc(bufsize, &buf))) die("buf", rc);
	struct ibv_mr *mr;
	if ((rc = ek_reg_mr(lib, pd, buf, bufsize, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr))) die("mr", rc);
	struct ibv_cq *cq;
	if ((rc = ek_create_cq(lib, ctx, 16, &cq))) die("cq", rc);
	int unsig = getenv("PLAIN_UNSIG") ? atoi(getenv("PLAIN_UNSIG")) : 1; // signal every unsig-th write
	if (unsig < 1)
		unsig = 1;
	ek_qp_caps caps = {.max_send_wr = unsig, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1, .max_inline = 0};
	ek_qp *qp;
	if ((rc = ek_create_qp(lib, pd, cq, cq, &caps, &qp))) die("qp", rc);
	struct info me = {.qpn = qp->qp->qp_num, .psn = (uint32_t)getpid() & 0xffffff, .rkey = mr->rkey,
			  .mtu = pa.active_mtu, .addr = (uint64_t)(uintptr_t)buf};
	if ((rc = ek_query_gid(lib, ctx, 1, gidx, me.gid))) die("gid", rc);
	int s = socket(AF_INET, SOCK_STREAM, 0), c;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (server) {
		sa.sin_addr.s_addr = INADDR_ANY;
		if (bind(s, (void *)&sa, sizeof sa) || listen(s, 1)) die("listen", 0);
		c = accept(s, NULL, NULL);
	} else {
		inet_pton(AF_INET, host, &sa.sin_addr);
		while (connect(s, (void *)&sa, sizeof sa)) { usleep(200000); close(s); s = socket(AF_INET, SOCK_STREAM, 0); }
		c = s;
	}
	struct info peer;
	if (write(c, &me, sizeof me) != sizeof me || read(c, &peer, sizeof peer) != sizeof peer) die("exchange", 0);
	ek_conn cn = {.port = 1, .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, .dest_qpn = peer.qpn,
		      .rq_psn = peer.psn, .sq_psn = me.psn, .is_global = 1, .sgid_index = gidx, .hop_limit = 64,
		      .mtu = peer.mtu < me.mtu ? peer.mtu : me.mtu, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		      .min_rnr_timer = 12, .max_rd_atomic = 1, .max_dest_rd_atomic = 1};
	memcpy(cn.dgid, peer.gid, 16);
	int stage;
	if ((rc = ek_connect(qp, &cn, &stage))) die("connect", stage);
	char b = 0;
	if (write(c, &b, 1) != 1 || read(c, &b, 1) != 1) die("sync", 0); // both at RTS
	ek_ping p = {.qp = qp, .cq = cq, .laddr = me.addr + send_off, .lkey = mr->lkey, .raddr = peer.addr,
		     .rkey = peer.rkey, .size = size, .answer = server, .recv = (uint8_t *)buf + size - 1,
		     .send = (uint8_t *)buf + send_off + size - 1, .stall_ns = 10000000000LL,
		     .yield_after_ns = INT64_MAX};
	int64_t *rtt = server ? NULL : calloc(n, sizeof *rtt);
	if (getenv("PLAIN")) {
		// ib_write_lat's run_iter_lat_write, as it is: the measuring side
		// (here the client) waits first, the other posts first; one WR built
		// once; rdtsc before each post; no checks.
		struct ibv_sge sge = {.addr = p.laddr, .length = size, .lkey = p.lkey};
		struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED}, *bad;
		wr.wr.rdma.remote_addr = p.raddr;
		wr.wr.rdma.rkey = p.rkey;
		volatile uint8_t *poll = p.recv, *post = p.send;
		int role = getenv("PLAIN_ROLE") != NULL, chk = getenv("PLAIN_CHECK") != NULL, ekp = getenv("PLAIN_EKPOST") != NULL;
		int64_t sink = 0;
		uint64_t scnt = 0, rcnt = 0, ccnt = 0, *tp = calloc(n + 1, sizeof *tp);
		int64_t t0 = ek_now_ns();
		uint64_t c0 = __builtin_ia32_rdtsc();
		while (scnt < (uint64_t)n || ccnt < (uint64_t)n || rcnt < (uint64_t)n) {
			if (rcnt < (uint64_t)n && !(scnt < 1 && (role ? !server : server))) {
				rcnt++;
				for (unsigned spins = 1; *poll != (uint8_t)rcnt; spins++)
					if (chk && spins % 256 == 0)
						sink += ek_now_ns();
			}
			if (scnt < (uint64_t)n) {
				tp[scnt] = __builtin_ia32_rdtsc();
				*post = (uint8_t)++scnt;
				wr.send_flags = ekp || scnt % unsig == 0 || scnt == (uint64_t)n ? IBV_SEND_SIGNALED : 0; // ek_post_writes signals each
				if (ekp ? ek_post_writes(qp, p.laddr, p.lkey, p.raddr, p.rkey, size, 1, 1, scnt, EK_WRID_SEQ, 0)
					: ibv_post_send(qp->qp, &wr, &bad))
					die("post", 0);
			}
			if (!(wr.send_flags & IBV_SEND_SIGNALED))
				ccnt++; // nothing to reap
			else if (ccnt < (uint64_t)n) {
				struct ibv_wc wc;
				int ne;
				unsigned spins = 0;
				do {
					ne = ibv_poll_cq(cq, 1, &wc);
					if (chk && ++spins % 256 == 0)
						sink += ek_now_ns();
				} while (ne == 0);
				if (ne < 0 || wc.status != IBV_WC_SUCCESS)
					die("wc", wc.status);
				ccnt++;
			}
		}
		double ns = (double)(ek_now_ns() - t0) / (double)(__builtin_ia32_rdtsc() - c0);
		for (int64_t i = 0; !server && i + 1 < n; i++)
			rtt[i] = (int64_t)((double)(tp[i + 1] - tp[i]) * ns);
		n--;
		if (sink == 42)
			printf("#");
	} else {
		rc = ek_ping_run(&p, rtt, n, INT64_MAX);
		if (rc != EK_RUN_DONE) die("run", rc);
	}
	if (!server && getenv("DUMP")) { // every one-way sample, µs, in order
		FILE *f = fopen(getenv("DUMP"), "w");
		for (int64_t i = 0; f && i < n; i++)
			fprintf(f, "%.3f\n", rtt[i] / 2000.0);
		if (f)
			fclose(f);
	}
	if (!server) {
		qsort(rtt, n, sizeof *rtt, cmp);
		double med = n % 2 ? rtt[n / 2] : (rtt[n / 2 - 1] + rtt[n / 2]) / 2.0;
		int64_t p99 = rtt[(n * 99 + 99) / 100 - 1]; // ceil(0.99 n)-th
		printf("cping size %u n %lld median_us %.3f p99_us %.3f\n", size, (long long)n, med / 2000.0, p99 / 2000.0);
	}
	write(c, &b, 1);
	read(c, &b, 1);
	return 0;
}
