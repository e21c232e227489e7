// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tokens and the three-tier token cache on the module's real objects: two
 * nodes on the one rxe device of a single guest, node 1 reading node 2's
 * segment, every work request resolving its QP through the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <linux/dsmem_token.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define SEG_SIZE	(1u << 20)
#define PORT_A		7481
#define PORT_B		7482
#define THREADS		8
#define OPS_PER_THREAD	200

/* The handle of node's QP token: the one its data path uses. */
static int node_qp(struct ds_ctx *ctx, uint32_t node, struct ds_token_info *qp)
{
	struct ds_token_info *t;
	size_t n;
	int ret = ds_token_list(ctx, DS_TOKEN_QP, node, &t, &n);

	if (ret)
		return ret;
	ret = n == 1 ? 0 : -ENOENT;
	if (!ret)
		*qp = t[0];
	ds_token_list_free(t);
	return ret;
}

static uint64_t stat_of(const struct ds_cache_info *c, const char *name)
{
	uint64_t v = 0;

	ds_cache_stat(c, name, &v);
	return v;
}

static int set_param(struct ds_ctx *ctx, unsigned int p, uint64_t v)
{
	uint64_t params[DS_CACHE_P_NR] = {};

	params[p] = v;
	return ds_cache_set(ctx, params, 1ULL << p, 0, NULL);
}

FIXTURE(tc) {
	struct ds_ctx *ctx;
	struct ds_xfer *x;
	uint32_t peer;
	uint64_t seg;
	uint64_t saved[DS_CACHE_P_NR];
};

FIXTURE_SETUP(tc)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct ds_cache_info c;
	struct ds_seg_info s;

	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c));
	memcpy(self->saved, c.params, sizeof(self->saved));
	ASSERT_EQ(0, test_node_add(self->ctx, 1, "rxe0", PORT_A))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 2, "rxe0", PORT_B));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 2, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	self->seg = s.addr;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 2, 1, 1, DSMEM_PERM_ALL));
	ASSERT_EQ(0, test_peer_add(self->ctx, 1, addr, PORT_B, 2, &self->peer));
	ASSERT_EQ(0, wait_rsegs(self->ctx, 1, self->peer, 1));
	ASSERT_EQ(0, ds_xfer_open(1, &self->x));
}

FIXTURE_TEARDOWN(tc)
{
	if (self->x)
		ds_xfer_close(self->x);
	ds_node_del(self->ctx, 1);
	ds_node_del(self->ctx, 2);
	/* the defaults back, for the next test */
	ds_cache_set(self->ctx, self->saved, (1ULL << DS_CACHE_P_NR) - 1, 1, NULL);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

/* Every PD, CQ, QP and MR of both nodes has a token that decodes. */
TEST_F(tc, real_objects_have_tokens)
{
	struct ds_token_info *t, one, qp;
	size_t n, count[DSMEM_TOKEN_TYPES] = {};
	uint32_t v, mr;
	char buf[4096] __attribute__((aligned(4096)));

	ASSERT_EQ(0, ds_token_list(self->ctx, -1, 0, &t, &n));
	for (size_t i = 0; i < n; i++) {
		ASSERT_LT(t[i].type, DSMEM_TOKEN_TYPES);
		count[t[i].type]++;
		EXPECT_EQ(t[i].type, DSMEM_HANDLE_TYPE(t[i].handle));
		EXPECT_EQ(t[i].index, DSMEM_HANDLE_INDEX(t[i].handle));
		EXPECT_GE(t[i].layer, DS_TIER_L1);
		EXPECT_LE(t[i].layer, DS_TIER_L3);
		EXPECT_GT(ds_token_field_count(&t[i]), 0);
		EXPECT_NE(0, t[i].object[0]);
		ASSERT_EQ(0, ds_token_get(self->ctx, t[i].handle, &one));
		EXPECT_EQ(0, memcmp(t[i].data, one.data, t[i].data_len));
	}
	ds_token_list_free(t);
	/* a connection each way: its PD, CQ and QP on both nodes */
	EXPECT_EQ(2, count[DS_TOKEN_PD]);
	EXPECT_EQ(2, count[DS_TOKEN_CQ]);
	EXPECT_EQ(2, count[DS_TOKEN_QP]);
	EXPECT_EQ(2, count[DS_TOKEN_DB]);
	EXPECT_EQ(2, count[DS_TOKEN_WQE]);
	/* node 2's segment, registered for node 1 */
	EXPECT_GE(count[DS_TOKEN_MR], 1);

	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));
	ASSERT_EQ(0, ds_token_field_get(&qp, "state", &v));
	EXPECT_EQ(3, v);	/* IB_QPS_RTS */
	ASSERT_EQ(0, ds_token_field_get(&qp, "qp_type", &v));
	EXPECT_EQ(2, v);	/* IB_QPT_RC */
	ASSERT_EQ(0, ds_token_field_get(&qp, "qpn", &v));
	EXPECT_NE(0, v);

	/* a registered buffer gets an MR token, gone with the registration */
	ASSERT_EQ(0, ds_mr_reg(self->x, buf, sizeof(buf), &mr));
	ASSERT_EQ(0, ds_token_list(self->ctx, DS_TOKEN_MR, 1, &t, &n));
	ASSERT_EQ(1, n);
	one = t[0];
	ds_token_list_free(t);
	ASSERT_EQ(0, ds_token_field_get(&one, "n_pages", &v));
	EXPECT_EQ(1, v);
	ASSERT_EQ(0, ds_token_field_get(&one, "access_flags", &v));
	EXPECT_EQ(1, v);	/* IB_ACCESS_LOCAL_WRITE */
	ASSERT_EQ(0, ds_mr_dereg(self->x, mr));
	EXPECT_EQ(-ESTALE, ds_token_get(self->ctx, one.handle, &one));
}

/* The counters move with the data path, one QP update per request. */
TEST_F(tc, stats_move_with_workload)
{
	struct ds_cache_info before, after;
	struct ds_token_info q0, q1;
	uint64_t hits0, hits1;
	char buf[64];

	ASSERT_EQ(0, node_qp(self->ctx, 1, &q0));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &before));
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(0, ds_read(self->x, self->seg + i * 64, buf, sizeof(buf)));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &after));
	ASSERT_EQ(0, node_qp(self->ctx, 1, &q1));
	EXPECT_EQ(q0.handle, q1.handle);
	EXPECT_EQ(q0.accesses + 100, q1.accesses);
	hits0 = stat_of(&before, "hits_l1") + stat_of(&before, "hits_l2") +
		stat_of(&before, "hits_l3");
	hits1 = stat_of(&after, "hits_l1") + stat_of(&after, "hits_l2") +
		stat_of(&after, "hits_l3");
	/* a QP and a CQ resolve per request at least */
	EXPECT_GE(hits1 - hits0, 200);
	EXPECT_GT(after.tiers[2].entries, 0);
	EXPECT_GT(after.tiers[2].cost_mean_ns, 0);
}

/* A capture writes the documented format, and what it says is there. */
TEST_F(tc, trace_roundtrip)
{
	char path[512], buf[64];
	struct dsmem_trace_hdr hdr;
	struct dsmem_trace_rec rec;
	struct ds_trace_info ti;
	struct ds_token_info qp;
	uint64_t nrec = 0, qp_modify = 0;
	int fd, ro;
	FILE *f;

	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));
	snprintf(path, sizeof(path), "/tmp/dsmem-trace-%d", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ds_trace_start(self->ctx, fd));
	EXPECT_EQ(-EBUSY, ds_trace_start(self->ctx, fd));
	close(fd);	/* the module holds its own reference */
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(0, ds_read(self->x, self->seg, buf, sizeof(buf)));
	ASSERT_EQ(0, ds_trace_stop(self->ctx, &ti));
	EXPECT_EQ(0, ti.error);
	EXPECT_EQ(0, ti.dropped);
	EXPECT_EQ(-ENOENT, ds_trace_stop(self->ctx, &ti));

	f = fopen(path, "rb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fread(&hdr, sizeof(hdr), 1, f));
	EXPECT_EQ(0, memcmp(hdr.magic, DSMEM_TRACE_MAGIC, 8));
	EXPECT_EQ(DSMEM_TRACE_VERSION, hdr.version);
	EXPECT_EQ(sizeof(rec), hdr.rec_size);
	while (fread(&rec, sizeof(rec), 1, f) == 1) {
		nrec++;
		EXPECT_EQ(DSMEM_HANDLE_TYPE(rec.handle), rec.type);
		EXPECT_LE(rec.op, DSMEM_TRACE_DESTROY);
		if (rec.handle == qp.handle && rec.op == DSMEM_TRACE_MODIFY) {
			qp_modify++;
			EXPECT_EQ(1, rec.node);
			EXPECT_GE(rec.tier, DSMEM_TIER_L1);
		}
	}
	fclose(f);
	EXPECT_EQ(ti.records, nrec);
	EXPECT_EQ(50, qp_modify);
	unlink(path);

	/* what cannot be a trace file is refused, and nothing starts */
	ro = open("/proc/version", O_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EINVAL, ds_trace_start(self->ctx, ro));
	close(ro);
	ro = open("/tmp", O_RDONLY | O_DIRECTORY);
	EXPECT_EQ(-EINVAL, ds_trace_start(self->ctx, ro));
	close(ro);
	EXPECT_EQ(-EBADF, ds_trace_start(self->ctx, 1000));
	EXPECT_EQ(-ENOENT, ds_trace_stop(self->ctx, &ti));
}

struct hammer {
	uint64_t seg;
	int err;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	struct ds_xfer *x;
	char buf[8];

	h->err = ds_xfer_open(1, &x);
	if (h->err)
		return NULL;
	for (int i = 0; i < OPS_PER_THREAD && !h->err; i++)
		h->err = ds_read(x, h->seg + i * 8, buf, sizeof(buf));
	ds_xfer_close(x);
	return NULL;
}

/*
 * 8 threads update the one hot QP token while its entry is moved between
 * the tiers and L1 is resized under them: no update is lost, the token
 * comes out whole; blocking readers (the default) or optimistic ones.
 */
static void hammer(struct __test_metadata *_metadata, FIXTURE_DATA(tc) *self,
		   int optimistic)
{
	uint64_t params[DS_CACHE_P_NR] = {}, mask = 0;
	struct hammer h[THREADS];
	pthread_t th[THREADS];
	struct ds_token_info q0, q1;
	struct ds_token_update up = { .mask = DS_TOKEN_SET_LAYER };
	struct ds_cache_info c0, c1;
	int moves = 0;

	/* promote at once, demote at once: the entry never rests */
	params[DS_CACHE_P_PROMOTE_L2] = 1;
	params[DS_CACHE_P_PROMOTE_L1] = 2;
	params[DS_CACHE_P_WINDOW_NS] = 10000000;
	params[DS_CACHE_P_L1_IDLE_NS] = 1000;
	params[DS_CACHE_P_L2_IDLE_NS] = 2000;
	params[DS_CACHE_P_BATCH_THRESHOLD] = 1;
	params[DS_CACHE_P_CAS_RETRIES] = 1;
	params[DS_CACHE_P_OPTIMISTIC] = optimistic;
	for (int p = DS_CACHE_P_PROMOTE_L2; p <= DS_CACHE_P_L2_IDLE_NS; p++)
		mask |= 1ULL << p;
	mask |= 1ULL << DS_CACHE_P_BATCH_THRESHOLD | 1ULL << DS_CACHE_P_CAS_RETRIES |
		1ULL << DS_CACHE_P_OPTIMISTIC;
	ASSERT_EQ(0, ds_cache_set(self->ctx, params, mask, 1, NULL))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, node_qp(self->ctx, 1, &q0));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c0));

	for (int i = 0; i < THREADS; i++) {
		h[i].seg = self->seg + i * 4096;
		h[i].err = 0;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, hammer_thread, &h[i]));
	}
	/* move the entry around and resize L1 while they run */
	for (int round = 0; round < 200; round++) {
		up.layer = DS_TIER_L1 + round % 3;
		if (!ds_token_set(self->ctx, q0.handle, &up, NULL))
			moves++;
		EXPECT_EQ(0, set_param(self->ctx, DS_CACHE_P_L1_CAPACITY,
				       1 + round % 4));
		usleep(1000);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, h[i].err) TH_LOG("thread %d", i);
	}
	ASSERT_EQ(0, node_qp(self->ctx, 1, &q1));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c1));
	EXPECT_EQ(q0.accesses + THREADS * OPS_PER_THREAD, q1.accesses);
	/* the token itself came through every move whole */
	EXPECT_EQ(q0.data_len, q1.data_len);
	EXPECT_EQ(0, memcmp(q0.data, q1.data, q0.data_len));
	EXPECT_GT(moves, 0);
	EXPECT_GT(stat_of(&c1, "migrations"), stat_of(&c0, "migrations") + 100);
	EXPECT_EQ(optimistic, c1.params[DS_CACHE_P_OPTIMISTIC]);
	/* blocking readers never take the old copy */
	if (!optimistic)
		EXPECT_EQ(stat_of(&c0, "optimistic_reads"), stat_of(&c1, "optimistic_reads"));
	EXPECT_GE(stat_of(&c1, "optimistic_reads"), stat_of(&c1, "optimistic_reconciles"));
	TH_LOG("%s: moves %d migrations %llu cas_retries %llu fallbacks %llu read_retries %llu "
	       "optimistic_reads %llu optimistic_reconciles %llu",
	       optimistic ? "optimistic" : "blocking",
	       moves, (unsigned long long)stat_of(&c1, "migrations"),
	       (unsigned long long)stat_of(&c1, "cas_retries"),
	       (unsigned long long)stat_of(&c1, "cas_fallbacks"),
	       (unsigned long long)stat_of(&c1, "read_retries"),
	       (unsigned long long)(stat_of(&c1, "optimistic_reads") -
				    stat_of(&c0, "optimistic_reads")),
	       (unsigned long long)(stat_of(&c1, "optimistic_reconciles") -
				    stat_of(&c0, "optimistic_reconciles")));
}

TEST_F_TIMEOUT(tc, hammer_while_migrating, 600)
{
	hammer(_metadata, self, 0);
}

TEST_F_TIMEOUT(tc, hammer_while_migrating_optimistic, 600)
{
	hammer(_metadata, self, 1);
}

/*
 * The live migration figures: latency since the reset, rates over the
 * last second, after moves made by hand.
 */
TEST_F(tc, migration_stats)
{
	struct ds_token_update up = { .mask = DS_TOKEN_SET_LAYER };
	struct ds_token_info qp;
	struct ds_cache_info c;
	uint64_t params[DS_CACHE_P_NR] = {};
	int i;

	ASSERT_EQ(0, ds_cache_set(self->ctx, params, 0, 1, NULL));	/* reset */
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c));
	EXPECT_EQ(0, c.migrate_lat_mean_ns);
	EXPECT_EQ(0, c.migrate_lat_p99_ns);
	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));
	for (i = 0; i < 30; i++) {
		up.layer = DS_TIER_L3 - i % 3;	/* L3, L2, L1: promotions */
		EXPECT_EQ(0, ds_token_set(self->ctx, qp.handle, &up, NULL))
			TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	}
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c));
	EXPECT_GE(stat_of(&c, "migrations"), 20);
	EXPECT_GE(stat_of(&c, "dma_bytes"), 20 * 64);
	EXPECT_EQ(0, stat_of(&c, "dma_bytes") % 64);
	/* copies at the modelled cost of L2 (200 ns) or L3 (800 ns) at least */
	EXPECT_GE(c.migrate_lat_mean_ns, c.params[DS_CACHE_P_COST_L2_NS]);
	EXPECT_GE(c.migrate_lat_p99_ns, c.migrate_lat_mean_ns);
	/*
	 * The rates come from the maintenance worker, over the second or
	 * more before it last looked: a figure that shows moves only while
	 * the moves are recent.  So the moves go on until both rates show
	 * them -- every window the worker looks at has some -- and a slow
	 * host only takes more rounds; the bound is a count of rounds, each
	 * three moves and a tenth of a second, generous for a worker that
	 * looks once a second.
	 */
	for (i = 0; i < 600 && !(c.dma_rate && c.migrate_rate); i++) {
		for (int k = 0; k < 3; k++) {
			up.layer = DS_TIER_L3 - k;
			EXPECT_EQ(0, ds_token_set(self->ctx, qp.handle, &up, NULL))
				TH_LOG("%s", ds_ctx_errmsg(self->ctx));
		}
		usleep(100000);
		ASSERT_EQ(0, ds_cache_get(self->ctx, &c));
	}
	TH_LOG("the rates showed the moves after %d rounds of them", i);
	EXPECT_GT(c.migrate_rate, 0);
	EXPECT_GT(c.dma_rate, 0);
	TH_LOG("migrate_rate %llu lat mean %llu p99 %llu dma %llu prefetch %llu",
	       (unsigned long long)c.migrate_rate,
	       (unsigned long long)c.migrate_lat_mean_ns,
	       (unsigned long long)c.migrate_lat_p99_ns,
	       (unsigned long long)c.dma_rate, (unsigned long long)c.dma_prefetch_rate);
}

/* L2 lives on the memory-only NUMA node the guest has, as CXL would. */
TEST_F(tc, l2_on_cpuless_node)
{
	struct ds_token_update up = { .mask = DS_TOKEN_SET_LAYER,
				      .layer = DS_TIER_L2 };
	struct ds_token_info qp;
	struct ds_cache_info c;
	struct ds_stat *st;
	char path[128], cpus[256];
	int cpuless = -1;
	size_t n;

	for (int nid = 0; nid < 64 && cpuless < 0; nid++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/cpulist", nid);
		if (read_file(path, cpus, sizeof(cpus)) == 0 &&
		    (cpus[0] == '\n' || cpus[0] == 0))
			cpuless = nid;
	}
	if (cpuless < 0)
		SKIP(return, "no CPU-less NUMA node (scripts/guest --numa-memnode)");
	/* it must stay in L2 while we look */
	ASSERT_EQ(0, set_param(self->ctx, DS_CACHE_P_L2_IDLE_NS, 60000000000ULL));
	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));
	ASSERT_EQ(0, ds_token_set(self->ctx, qp.handle, &up, &qp))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	EXPECT_EQ(DS_TIER_L2, qp.layer);
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c));
	EXPECT_EQ(cpuless, c.tiers[1].numa);
	EXPECT_GE(c.tiers[1].entries, 1);
	EXPECT_GE(c.tiers[1].bytes, 4096);
	/* the pages really are there */
	ASSERT_EQ(0, ds_stats_get(self->ctx, &st, &n));
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(st[i].name, "tc_page_misplaced"))
			EXPECT_EQ(0, st[i].value);
		if (!strcmp(st[i].name, "tc_page_failed"))
			EXPECT_EQ(0, st[i].value);
	}
	free(st);
}

/* Bad input: a clear error and no change. */
TEST_F(tc, bad_input)
{
	struct ds_token_update up = { .mask = DS_TOKEN_SET_PINNED, .pinned = 1 };
	struct ds_cache_info c0, c1;
	struct ds_token_info info, *t;
	uint64_t params[DS_CACHE_P_NR] = {};
	size_t n;

	/* an index never issued; then a stale version */
	EXPECT_EQ(-ENOENT, ds_token_get(self->ctx,
					DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 60000), &info));
	ASSERT_EQ(0, ds_token_list(self->ctx, DS_TOKEN_PD, 1, &t, &n));
	ASSERT_EQ(1, n);
	info = t[0];
	ds_token_list_free(t);
	EXPECT_EQ(-ESTALE, ds_token_get(self->ctx, info.handle ^ (1u << 16), &info));
	up.mask = DS_TOKEN_SET_LAYER | DS_TOKEN_SET_VERSION;
	up.layer = DS_TIER_L2;
	up.version = info.version + 7;
	EXPECT_EQ(-ESTALE, ds_token_set(self->ctx, info.handle, &up, NULL));
	ASSERT_EQ(0, ds_token_get(self->ctx, info.handle, &info));
	EXPECT_EQ(DS_TIER_L3, info.layer);

	/* ranges, including 0, and rules between parameters */
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c0));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_L1_CAPACITY, 0));
	EXPECT_NE(NULL, strstr(ds_ctx_errmsg(self->ctx), "l1_capacity"));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_L1_CAPACITY, 1u << 30));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_PROMOTE_L2, 0));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_PROMOTE_L1, 2));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_MODE, 2));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_SAMPLE, 0));
	EXPECT_NE(NULL, strstr(ds_ctx_errmsg(self->ctx), "sample"));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_SAMPLE, 1025));
	EXPECT_EQ(-ERANGE, set_param(self->ctx, DS_CACHE_P_OPTIMISTIC, 2));
	EXPECT_NE(NULL, strstr(ds_ctx_errmsg(self->ctx), "optimistic"));
	params[DS_CACHE_P_BATCH_THRESHOLD] = 64;
	params[DS_CACHE_P_BATCH_MAX] = 32;
	EXPECT_EQ(-ERANGE, ds_cache_set(self->ctx, params,
					1ULL << DS_CACHE_P_BATCH_THRESHOLD |
					1ULL << DS_CACHE_P_BATCH_MAX, 0, NULL));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c1));
	EXPECT_EQ(0, memcmp(c0.params, c1.params, sizeof(c0.params)));

	/* L1 cannot shrink below what is pinned there */
	up.mask = DS_TOKEN_SET_PINNED;
	up.pinned = 1;
	ASSERT_EQ(0, ds_token_set(self->ctx, info.handle, &up, &info));
	EXPECT_EQ(DS_TIER_L1, info.layer);
	EXPECT_EQ(DS_TOKEN_PINNED, info.flags & DS_TOKEN_PINNED);
	ASSERT_EQ(0, node_qp(self->ctx, 1, &info));
	ASSERT_EQ(0, ds_token_set(self->ctx, info.handle, &up, &info));
	EXPECT_EQ(-EBUSY, set_param(self->ctx, DS_CACHE_P_L1_CAPACITY, 1));
	up.mask = DS_TOKEN_SET_LAYER;
	up.layer = DS_TIER_L3;
	EXPECT_EQ(-EBUSY, ds_token_set(self->ctx, info.handle, &up, NULL));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c1));
	EXPECT_EQ(c0.params[DS_CACHE_P_L1_CAPACITY], c1.params[DS_CACHE_P_L1_CAPACITY]);
	EXPECT_EQ(2, c1.pinned);
	up.mask = DS_TOKEN_SET_PINNED;
	up.pinned = 0;
	ASSERT_EQ(0, ds_token_set(self->ctx, info.handle, &up, NULL));
	EXPECT_EQ(0, set_param(self->ctx, DS_CACHE_P_L1_CAPACITY, 1));
}

static struct nl_msg *raw_msg(struct raw_nl *r, uint8_t cmd)
{
	struct nl_msg *m = nlmsg_alloc();

	genlmsg_put(m, 0, 1, r->family, 0, NLM_F_REQUEST | NLM_F_ACK, cmd,
		    DSMEM_GENL_VERSION);
	return m;
}

static struct nl_msg *raw_params(struct raw_nl *r, uint8_t cmd, int p,
				 uint64_t v)
{
	struct nl_msg *m = raw_msg(r, cmd);
	struct nlattr *nest = nla_nest_start(m, DSMEM_ATTR_CACHE_PARAMS);

	nla_put_u64(m, p + 1, v);
	nla_nest_end(m, nest);
	return m;
}

/*
 * What the library refuses before sending, the module refuses on its
 * own, with its message, and changes nothing.
 */
TEST_F(tc, module_refuses_bad_requests)
{
	struct ds_cache_info c0, c1;
	struct ds_token_info qp, after;
	struct raw_nl r;
	char text[256];
	struct nl_msg *m;

	ASSERT_EQ(0, raw_open(&r));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c0));
	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));

	m = raw_params(&r, DSMEM_CMD_CACHE_SET, DSMEM_CACHE_P_L1_CAPACITY, 0);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	EXPECT_STREQ("l1_capacity out of range", text);
	m = raw_params(&r, DSMEM_CMD_CACHE_SET, DSMEM_CACHE_P_PROMOTE_L1, 4);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	EXPECT_STREQ("promote_l1 below promote_l2", text);
	m = raw_params(&r, DSMEM_CMD_CACHE_BENCH, DSMEM_CACHE_P_CAS_RETRIES, 0);
	nla_put_u32(m, DSMEM_ATTR_BENCH_QPS, 16);
	nla_put_u32(m, DSMEM_ATTR_BENCH_OPS, 16);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	EXPECT_STREQ("cas_retries out of range", text);
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_msg(&r, DSMEM_CMD_CACHE_SET),
				    text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "nothing to set"));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c1));
	EXPECT_EQ(0, memcmp(c0.params, c1.params, sizeof(c0.params)));

	m = raw_msg(&r, DSMEM_CMD_TOKEN_SET);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, qp.handle);
	EXPECT_EQ(-EINVAL, raw_send(&r, m, text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "nothing to change"));
	m = raw_msg(&r, DSMEM_CMD_TOKEN_SET);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, qp.handle);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_PINNED, 1);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_LAYER, DSMEM_TIER_L2);
	EXPECT_EQ(-EINVAL, raw_send(&r, m, text, sizeof(text)));
	EXPECT_STREQ("pinned tokens live in L1", text);
	ASSERT_EQ(0, ds_token_get(self->ctx, qp.handle, &after));
	EXPECT_EQ(0, after.flags & DS_TOKEN_PINNED);
	EXPECT_NE(DS_TIER_L2, after.layer);
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_msg(&r, DSMEM_CMD_TOKEN_GET),
				    text, sizeof(text)));
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_msg(&r, DSMEM_CMD_TRACE_START),
				    text, sizeof(text)));
	m = raw_msg(&r, DSMEM_CMD_CACHE_BENCH);
	nla_put_u32(m, DSMEM_ATTR_BENCH_QPS, 16);
	EXPECT_EQ(-EINVAL, raw_send(&r, m, text, sizeof(text)));
	close(r.fd);
}

/* The cache's mutating commands need CAP_NET_ADMIN; reading does not. */
TEST_F(tc, mutations_need_cap_net_admin)
{
	struct ds_token_update up = { .mask = DS_TOKEN_SET_LAYER,
				      .layer = DS_TIER_L2 };
	struct ds_token_info qp;
	pid_t pid;

	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));
	pid = fork_nobody();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		uint64_t params[DS_CACHE_P_NR] = { [DS_CACHE_P_L1_CAPACITY] = 64 };
		struct ds_cache_bench_result r;
		struct ds_trace_info ti;
		struct ds_cache_info c;
		struct ds_token_info t;
		struct ds_ctx *ctx;
		int fd = open("/dev/null", O_WRONLY);

		if (ds_ctx_open(&ctx))
			_exit(11);
		if (ds_cache_set(ctx, params, 1ULL << DS_CACHE_P_L1_CAPACITY, 0,
				 NULL) != -EPERM)
			_exit(12);
		if (ds_token_set(ctx, qp.handle, &up, NULL) != -EPERM)
			_exit(13);
		if (ds_trace_start(ctx, fd) != -EPERM ||
		    ds_trace_stop(ctx, &ti) != -EPERM)
			_exit(14);
		if (ds_cache_bench(ctx, 16, 16, 1, NULL, 0, &r) != -EPERM)
			_exit(15);
		if (ds_cache_get(ctx, &c) || ds_token_get(ctx, qp.handle, &t))
			_exit(16);
		ds_ctx_close(ctx);
		_exit(0);
	}
	EXPECT_EQ(0, child_step(pid)) TH_LOG("the unprivileged child's failing step");
}

/*
 * A token's key: an MR token's lkey (an rkey on rxe), or a WQE token's
 * lkey (the PD's local DMA lkey).  Readable only by CAP_NET_ADMIN.
 */
static uint32_t mr_lkey(const struct ds_token_info *t)
{
	struct dsmem_mr_token mr;
	struct dsmem_wqe_token wqe;

	if (t->type == DS_TOKEN_WQE) {
		memcpy(&wqe, t->data, sizeof(wqe));
		return wqe.lkey;
	}
	memcpy(&mr, t->data, sizeof(mr));
	return mr.lkey;
}

static void keys_need_cap_net_admin_of(struct __test_metadata *_metadata,
				       struct ds_ctx *sctx, enum ds_token_type type)
{
	struct ds_token_info *all, one;
	size_t n, keyed = 0;
	uint32_t handle = 0;
	pid_t pid;

	/*
	 * node 2's grant to node 1 registered MRs with remote access; its
	 * connection's WQE token carries its PD's local DMA lkey
	 */
	ASSERT_EQ(0, ds_token_list(sctx, type, 2, &all, &n));
	for (size_t i = 0; i < n; i++)
		if (mr_lkey(&all[i])) {
			keyed++;
			handle = all[i].handle;
		}
	ds_token_list_free(all);
	ASSERT_LT(0, keyed) TH_LOG("no token of type %d of node 2 has a key", type);

	pid = fork_nobody();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct ds_ctx *ctx;
		size_t m, listed = 0;

		if (ds_ctx_open(&ctx))
			_exit(11);
		/* the tokens are listed, their keys are not */
		if (ds_token_list(ctx, type, 2, &all, &m))
			_exit(12);
		for (size_t i = 0; i < m; i++) {
			if (mr_lkey(&all[i]))
				_exit(13);
			listed++;
		}
		ds_token_list_free(all);
		if (listed < keyed)
			_exit(14);
		if (ds_token_get(ctx, handle, &one) || mr_lkey(&one))
			_exit(15);
		ds_ctx_close(ctx);
		_exit(0);
	}
	EXPECT_EQ(0, child_step(pid)) TH_LOG("the unprivileged child's failing step");
	/* and CAP_NET_ADMIN still reads it */
	ASSERT_EQ(0, ds_token_get(sctx, handle, &one));
	EXPECT_NE(0, mr_lkey(&one));
}

TEST_F(tc, keys_need_cap_net_admin)
{
	keys_need_cap_net_admin_of(_metadata, self->ctx, DS_TOKEN_MR);
	keys_need_cap_net_admin_of(_metadata, self->ctx, DS_TOKEN_WQE);
}

/* The synthetic sweep runs on a private cache and adds up. */
TEST_F(tc, bench_adds_up)
{
	struct ds_cache_bench_result r;
	struct ds_cache_info c0, c1;
	int ret;

	ASSERT_EQ(0, ds_cache_get(self->ctx, &c0));
	ASSERT_EQ(0, ds_cache_bench(self->ctx, 64, 20000, 7, NULL, 0, &r))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	EXPECT_EQ(60000, r.accesses);
	EXPECT_EQ(r.accesses, r.hits_l1 + r.hits_l2 + r.hits_l3);
	/* 64 QPs at 10 M ops/s are hot: most of it ends up in L1 */
	EXPECT_GT(r.hits_l1, r.accesses / 2);
	EXPECT_GT(r.migrations, 0);
	ret = ds_cache_bench(self->ctx, 0, 10, 1, NULL, 0, &r);
	EXPECT_TRUE(ret == -EINVAL || ret == -ERANGE) TH_LOG("qps 0: %d", ret);
	/* the live cache did not see it */
	ASSERT_EQ(0, ds_cache_get(self->ctx, &c1));
	EXPECT_EQ(c0.entries, c1.entries);
}

/* ---- CACHE_REPLAY: the shared vector and what the module refuses ------- */

/*
 * tests/vectors of the tree it was built from (CMake's DS_VECTORS_DIR:
 * the guest sees the host's tree at the same paths); DSMEM_VECTORS
 * overrides it.  Not __FILE__, which ccache makes relative.
 */
static const char *vectors_dir(void)
{
	const char *env = getenv("DSMEM_VECTORS");

	return env && *env ? env : DS_VECTORS_DIR;
}

struct vec {
	uint64_t params[DS_CACHE_P_NR];
	uint64_t maint_ns;
	struct ds_trace_rec *recs;
	size_t nrecs;
	struct ds_cache_move *moves;
	size_t nmoves;
	char stat_name[DS_CACHE_STATS_MAX][DS_NAME_MAX];
	uint64_t stat_value[DS_CACHE_STATS_MAX];
	size_t nstats;
};

static uint64_t le(const unsigned char *b, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | b[n];
	return v;
}

static void vec_free(struct vec *v)
{
	free(v->recs);
	free(v->moves);
}

/* The trace (little-endian on disk) into host-order records. */
static int vec_read_trace(struct vec *v, const char *path)
{
	unsigned char b[DSMEM_TRACE_REC_SIZE];
	FILE *f = fopen(path, "rb");
	size_t cap = 0;
	int ret = -EINVAL;

	if (!f)
		return -errno;
	if (fread(b, 1, DSMEM_TRACE_HDR_SIZE, f) != DSMEM_TRACE_HDR_SIZE ||
	    memcmp(b, DSMEM_TRACE_MAGIC, 8) || le(b + 8, 4) != DSMEM_TRACE_VERSION ||
	    le(b + 12, 4) != DSMEM_TRACE_REC_SIZE)
		goto out;
	while (fread(b, 1, sizeof(b), f) == sizeof(b)) {
		struct ds_trace_rec *r;

		if (v->nrecs == cap) {
			cap = cap ? 2 * cap : 1024;
			r = realloc(v->recs, cap * sizeof(*r));
			if (!r) {
				ret = -ENOMEM;
				goto out;
			}
			v->recs = r;
		}
		r = &v->recs[v->nrecs++];
		memset(r, 0, sizeof(*r));
		r->time_ns = le(b, 8);
		r->handle = le(b + 8, 4);
		r->node = le(b + 12, 4);
		r->type = b[16];
		r->op = b[17];
		r->tier = b[18];
		r->reserved0 = b[19];
		r->reserved1 = le(b + 20, 4);
	}
	ret = v->nrecs ? 0 : -EINVAL;
out:
	fclose(f);
	return ret;
}

/* params, maint_ns, moves and counters; the defaults for the rest */
static int vec_read_expect(struct vec *v, const char *path)
{
	struct ds_cache_param_desc d;
	unsigned long long a, b, c;
	char line[256], name[64];
	size_t cap = 0;
	FILE *f = fopen(path, "r");
	int i, ret = 0;

	if (!f)
		return -errno;
	for (i = 0; i < DS_CACHE_P_NR; i++) {
		if (ds_cache_param_describe(i, &d))
			return -EINVAL;
		v->params[i] = d.def;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[strspn(line, " \t\n")] == '\0')
			continue;
		if (sscanf(line, "param %63s %llu", name, &a) == 2) {
			i = ds_cache_param_lookup(name);
			if (i < 0)
				ret = -EINVAL;
			else
				v->params[i] = a;
		} else if (sscanf(line, "maint_ns %llu", &a) == 1) {
			v->maint_ns = a;
		} else if (sscanf(line, "move %llu %llu %llu", &a, &b, &c) == 3) {
			if (v->nmoves == cap) {
				struct ds_cache_move *m;

				cap = cap ? 2 * cap : 256;
				m = realloc(v->moves, cap * sizeof(*m));
				if (!m) {
					ret = -ENOMEM;
					break;
				}
				v->moves = m;
			}
			v->moves[v->nmoves++] = (struct ds_cache_move){
				.eid = a, .from = b, .to = c };
		} else if (sscanf(line, "stat %63s %llu", name, &a) == 2 &&
			   v->nstats < DS_CACHE_STATS_MAX) {
			snprintf(v->stat_name[v->nstats], DS_NAME_MAX, "%s", name);
			v->stat_value[v->nstats++] = a;
		} else {
			ret = -EINVAL;
		}
	}
	fclose(f);
	return ret;
}

static uint64_t replay_stat(const struct ds_cache_replay_result *r, const char *name)
{
	for (uint32_t i = 0; i < r->nstats; i++)
		if (!strcmp(r->stats[i].name, name))
			return r->stats[i].value;
	return ~0ULL;
}

/* a record of a generation-1 handle, op and time as given */
static struct ds_trace_rec rec_of(uint8_t type, uint16_t index, uint8_t op,
				  uint64_t ns)
{
	return (struct ds_trace_rec){
		.time_ns = ns,
		.handle = DSMEM_HANDLE(type, 1, index),
		.type = type,
		.op = op,
	};
}

FIXTURE(replay) {
	struct ds_ctx *ctx;
	struct ds_cache_info before;
};

FIXTURE_SETUP(replay)
{
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, ds_cache_get(self->ctx, &self->before));
}

/* replays never touch the live cache */
FIXTURE_TEARDOWN(replay)
{
	struct ds_cache_info after;

	EXPECT_EQ(0, ds_cache_get(self->ctx, &after));
	EXPECT_EQ(0, memcmp(self->before.params, after.params, sizeof(after.params)));
	EXPECT_EQ(self->before.entries, after.entries);
	EXPECT_EQ(self->before.tiers[0].entries, after.tiers[0].entries);
	EXPECT_EQ(self->before.tiers[1].entries, after.tiers[1].entries);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

/*
 * tests/vectors/NAME: the module's replay makes exactly the moves and ends
 * with exactly the counters the policy core's unit test checks.
 */
static void replay_vector(struct __test_metadata *_metadata, FIXTURE_DATA(replay) *self,
			  const char *name)
{
	struct ds_cache_replay_result r;
	struct vec v = {};
	char path[PATH_MAX];
	size_t k;

	snprintf(path, sizeof(path), "%s/%s.dsmtrace", vectors_dir(), name);
	ASSERT_EQ(0, vec_read_trace(&v, path)) TH_LOG("%s", path);
	snprintf(path, sizeof(path), "%s/%s.expect", vectors_dir(), name);
	ASSERT_EQ(0, vec_read_expect(&v, path)) TH_LOG("%s", path);
	ASSERT_GT(v.nmoves, 0);
	ASSERT_GT(v.nstats, 0);

	/* every parameter given: the live ones must not leak in */
	ASSERT_EQ(0, ds_cache_replay(self->ctx, v.recs, v.nrecs, v.maint_ns, v.params,
				     (1ULL << DS_CACHE_P_NR) - 1, &r))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	EXPECT_EQ(0, r.truncated);
	for (k = 0; k < r.nmoves && k < v.nmoves; k++)
		if (r.moves[k].eid != v.moves[k].eid || r.moves[k].from != v.moves[k].from ||
		    r.moves[k].to != v.moves[k].to)
			break;
	EXPECT_EQ(v.nmoves, k) TH_LOG("%s: first difference at move %zu: %u %u->%u", name, k,
				     k < r.nmoves ? r.moves[k].eid : 0,
				     k < r.nmoves ? r.moves[k].from : 0,
				     k < r.nmoves ? r.moves[k].to : 0);
	EXPECT_EQ(v.nmoves, r.nmoves);
	for (k = 0; k < v.nstats; k++)
		EXPECT_EQ(v.stat_value[k], replay_stat(&r, v.stat_name[k]))
			TH_LOG("counter %s", v.stat_name[k]);
	ds_cache_replay_free(&r);
	EXPECT_EQ(NULL, r.moves);

	/* the same again: nothing of the first run remains */
	ASSERT_EQ(0, ds_cache_replay(self->ctx, v.recs, v.nrecs, v.maint_ns, v.params,
				     (1ULL << DS_CACHE_P_NR) - 1, &r));
	EXPECT_EQ(v.nmoves, r.nmoves);
	EXPECT_EQ(0, memcmp(r.moves, v.moves, v.nmoves * sizeof(*r.moves)));
	ds_cache_replay_free(&r);
	vec_free(&v);
}

/* fixed mode's vector */
TEST_F(replay, shared_vector)
{
	replay_vector(_metadata, self, "tc_policy");
}

/* adaptive mode's: its window, duels and thresholds, move for move */
TEST_F(replay, shared_vector_adaptive)
{
	replay_vector(_metadata, self, "tc_adaptive");
}

/*
 * More moves than a reply lists: the first DS_CACHE_REPLAY_MOVES_MAX, the
 * flag, and "migrations" counting all of them.  Each access of a bucket's
 * QP prefetches its recently used neighbours to L2; maintenance every
 * microsecond demotes them again.
 */
TEST_F(replay, truncated_moves)
{
	uint64_t params[DS_CACHE_P_NR] = {}, mask = 0;
	struct ds_cache_replay_result r;
	struct ds_trace_rec recs[256];
	const struct { int p; uint64_t v; } set[] = {
		{ DS_CACHE_P_PROMOTE_L2, 1 }, { DS_CACHE_P_PROMOTE_L1, 1 },
		{ DS_CACHE_P_PREFETCH, 127 }, { DS_CACHE_P_WINDOW_NS, 60000000000ULL },
		{ DS_CACHE_P_L1_IDLE_NS, 1000 }, { DS_CACHE_P_L2_IDLE_NS, 1000 },
		{ DS_CACHE_P_L2_CAPACITY, 65536 }, { DS_CACHE_P_BATCH_THRESHOLD, 1 },
		{ DS_CACHE_P_MIGRATE_BUDGET, 1000000 }, { DS_CACHE_P_MODE, DS_CACHE_FIXED },
	};

	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		params[set[i].p] = set[i].v;
		mask |= 1ULL << set[i].p;
	}
	for (int i = 0; i < 256; i++)
		recs[i] = rec_of(DS_TOKEN_QP, i % 128, DS_TRACE_MODIFY,
				 1000000000ULL + 2000ULL * i);
	ASSERT_EQ(0, ds_cache_replay(self->ctx, recs, 256, 1000, params, mask, &r))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	EXPECT_EQ(1, r.truncated);
	EXPECT_EQ(DS_CACHE_REPLAY_MOVES_MAX, r.nmoves);
	EXPECT_GT(replay_stat(&r, "migrations"), DS_CACHE_REPLAY_MOVES_MAX);
	EXPECT_EQ(256, replay_stat(&r, "hits_l1") + replay_stat(&r, "hits_l2") +
		       replay_stat(&r, "hits_l3"));
	ds_cache_replay_free(&r);
}

static struct nl_msg *raw_replay(struct raw_nl *r, const void *recs, size_t len)
{
	struct nl_msg *m = nlmsg_alloc_size(len + 1024);

	genlmsg_put(m, 0, 1, r->family, 0, NLM_F_REQUEST | NLM_F_ACK,
		    DSMEM_CMD_CACHE_REPLAY, DSMEM_GENL_VERSION);
	if (recs)
		nla_put(m, DSMEM_ATTR_REPLAY_RECS, len, recs);
	return m;
}

/* Each bad request gets its errno and message; the module carries on. */
TEST_F(replay, refuses_bad_records)
{
	const size_t max = DS_CACHE_REPLAY_RECS_MAX;
	struct ds_cache_replay_result res;
	struct ds_trace_rec *recs = calloc(max + 1, sizeof(*recs));
	struct ds_trace_rec bad[3];
	struct nlattr *nest;
	struct raw_nl r;
	char text[256];
	struct nl_msg *m;

	ASSERT_NE(NULL, recs);
	for (size_t i = 0; i <= max; i++)
		recs[i] = rec_of(DS_TOKEN_CQ, i % 64, DS_TRACE_READ, 1000000 + i);
	ASSERT_EQ(0, raw_open(&r));

	/* the attribute: absent, empty, not whole records, too long */
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, NULL, 0), text, sizeof(text)));
	EXPECT_STREQ("a replay needs trace records", text);
	m = raw_replay(&r, NULL, 0);
	nla_put(m, DSMEM_ATTR_REPLAY_RECS, 0, NULL);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, recs, sizeof(*recs) + 1),
				    text, sizeof(text)));
	EXPECT_STREQ("replay records must be whole struct dsmem_trace_rec", text);
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, recs, 2 * sizeof(*recs) - 8),
				    text, sizeof(text)));
	EXPECT_EQ(-ERANGE, raw_send(&r, raw_replay(&r, recs, (max + 1) * sizeof(*recs)),
				    text, sizeof(text)));
	/* the largest is fine */
	EXPECT_EQ(0, raw_send(&r, raw_replay(&r, recs, max * sizeof(*recs)),
			      text, sizeof(text))) TH_LOG("%s", text);

	/* records: each rule, in the middle of good ones */
	bad[0] = rec_of(DS_TOKEN_QP, 1, DS_TRACE_READ, 1000);
	bad[2] = rec_of(DS_TOKEN_QP, 3, DS_TRACE_READ, 3000);
	bad[1] = rec_of(DS_TOKEN_QP, 2, DS_TRACE_READ, 2000);
	bad[1].type = DSMEM_TOKEN_TYPES;
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, bad, sizeof(bad)), text, sizeof(text)));
	EXPECT_STREQ("replay record of an unknown token type", text);
	bad[1].type = DS_TOKEN_CQ;
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, bad, sizeof(bad)), text, sizeof(text)));
	EXPECT_STREQ("replay record whose type is not its handle's", text);
	bad[1] = rec_of(DS_TOKEN_QP, 2, DSMEM_TRACE_DESTROY + 1, 2000);
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, bad, sizeof(bad)), text, sizeof(text)));
	EXPECT_STREQ("replay record of an unknown trace op", text);
	bad[1] = rec_of(DS_TOKEN_QP, 2, DS_TRACE_READ, 2000);
	bad[1].reserved1 = 1;
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, bad, sizeof(bad)), text, sizeof(text)));
	EXPECT_STREQ("replay record with reserved fields set", text);
	bad[1] = rec_of(DS_TOKEN_QP, 2, DS_TRACE_READ, 999);
	EXPECT_EQ(-EINVAL, raw_send(&r, raw_replay(&r, bad, sizeof(bad)), text, sizeof(text)));
	EXPECT_STREQ("replay records must not go back in time", text);
	/* equal times are fine, and so are CREATE, WRITE and DESTROY */
	bad[1] = rec_of(DS_TOKEN_QP, 2, DS_TRACE_CREATE, 1000);
	bad[2].op = DS_TRACE_WRITE;
	EXPECT_EQ(0, raw_send(&r, raw_replay(&r, bad, sizeof(bad)), text, sizeof(text)))
		TH_LOG("%s", text);

	/* maintenance period and parameters: ranges; attributes: the policy */
	m = raw_replay(&r, recs, sizeof(*recs));
	nla_put_u64(m, DSMEM_ATTR_REPLAY_MAINT_NS, 999);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	m = raw_replay(&r, recs, sizeof(*recs));
	nla_put_u64(m, DSMEM_ATTR_REPLAY_MAINT_NS, 0);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	m = raw_replay(&r, recs, sizeof(*recs));
	nest = nla_nest_start(m, DSMEM_ATTR_CACHE_PARAMS);
	nla_put_u64(m, DSMEM_CACHE_P_CAS_RETRIES + 1, 0);
	nla_nest_end(m, nest);
	EXPECT_EQ(-ERANGE, raw_send(&r, m, text, sizeof(text)));
	EXPECT_STREQ("cas_retries out of range", text);
	m = raw_replay(&r, recs, sizeof(*recs));
	nla_put_u32(m, DSMEM_ATTR_BENCH_QPS, 16);
	EXPECT_EQ(-EINVAL, raw_send(&r, m, text, sizeof(text)));
	m = raw_replay(&r, recs, sizeof(*recs));
	nla_put(m, DSMEM_ATTR_REPLAY_MOVES, 8, recs);
	EXPECT_EQ(-EINVAL, raw_send(&r, m, text, sizeof(text)));
	close(r.fd);

	/* the library checks the count itself */
	EXPECT_EQ(-ERANGE, ds_cache_replay(self->ctx, recs, 0, 0, NULL, 0, &res));
	EXPECT_EQ(-ERANGE, ds_cache_replay(self->ctx, recs, max + 1, 0, NULL, 0, &res));
	EXPECT_EQ(-ERANGE, ds_cache_replay(self->ctx, recs, 1, 5, NULL, 0, &res));
	/* the module refuses what the library passes on */
	bad[1] = rec_of(DS_TOKEN_QP, 2, DS_TRACE_READ, 999);
	EXPECT_EQ(-EINVAL, ds_cache_replay(self->ctx, bad, 3, 0, NULL, 0, &res));
	EXPECT_STREQ("replay records must not go back in time", ds_ctx_errmsg(self->ctx));

	/* and still replays: 64 CQs each read 32 times, 1 us apart */
	ASSERT_EQ(0, ds_cache_replay(self->ctx, recs, max, 0, NULL, 0, &res))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	EXPECT_EQ(max, replay_stat(&res, "hits_l1") + replay_stat(&res, "hits_l2") +
		       replay_stat(&res, "hits_l3"));
	EXPECT_EQ(replay_stat(&res, "migrations"), res.nmoves);
	ds_cache_replay_free(&res);
	free(recs);
}

/* A replay costs the module work and memory: CAP_NET_ADMIN only. */
TEST_F(replay, needs_cap_net_admin)
{
	pid_t pid;

	pid = fork_nobody();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct ds_trace_rec rec = rec_of(DS_TOKEN_QP, 0, DS_TRACE_READ, 1000);
		struct ds_cache_replay_result r;
		struct ds_ctx *ctx;

		if (ds_ctx_open(&ctx))
			_exit(11);
		if (ds_cache_replay(ctx, &rec, 1, 0, NULL, 0, &r) != -EPERM)
			_exit(12);
		ds_ctx_close(ctx);
		_exit(0);
	}
	EXPECT_EQ(0, child_step(pid)) TH_LOG("the unprivileged child's failing step");
}

/* node's token of type whose qp_index names its QP token qp */
static int node_qp_side(struct ds_ctx *ctx, uint32_t node, int type,
			const struct ds_token_info *qp, struct ds_token_info *out)
{
	struct ds_token_info *t;
	uint32_t v;
	size_t n;
	int ret = ds_token_list(ctx, type, node, &t, &n);

	if (ret)
		return ret;
	ret = -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (!ds_token_field_get(&t[i], "qp_index", &v) && v == qp->index) {
			*out = t[i];
			ret = 0;
		}
	ds_token_list_free(t);
	return ret;
}

/*
 * Every post rings its QP's doorbell record (a modify: the producer index
 * is its access count) and reads its WQE format, through the cache and
 * into the trace, as tokens of the uAPI's sizes.
 */
TEST_F(tc, post_path_doorbell_and_wqe)
{
	struct ds_token_info qp, db0, db1, wqe0, wqe1;
	uint64_t db_mod = 0, wqe_read = 0, other = 0;
	struct dsmem_trace_rec rec;
	struct dsmem_trace_hdr hdr;
	struct ds_trace_info ti;
	char path[512], buf[64];
	uint32_t v, qpn;
	int fd;
	FILE *f;

	ASSERT_EQ(0, node_qp(self->ctx, 1, &qp));
	ASSERT_EQ(0, node_qp_side(self->ctx, 1, DS_TOKEN_DB, &qp, &db0));
	ASSERT_EQ(0, node_qp_side(self->ctx, 1, DS_TOKEN_WQE, &qp, &wqe0));
	EXPECT_EQ(DSMEM_DB_TOKEN_SIZE, db0.data_len);
	EXPECT_EQ(DSMEM_WQE_TOKEN_SIZE, wqe0.data_len);
	EXPECT_EQ(DS_TOKEN_DB, DSMEM_HANDLE_TYPE(db0.handle));
	EXPECT_EQ(DS_TOKEN_WQE, DSMEM_HANDLE_TYPE(wqe0.handle));
	ASSERT_EQ(0, ds_token_field_get(&qp, "qpn", &qpn));
	ASSERT_EQ(0, ds_token_field_get(&db0, "qpn", &v));
	EXPECT_EQ(qpn, v);
	ASSERT_EQ(0, ds_token_field_get(&db0, "sq_depth", &v));
	EXPECT_GT(v, 256);	/* the one-sided credits and the messages' */
	ASSERT_EQ(0, ds_token_field_get(&wqe0, "max_sge", &v));
	EXPECT_GE(v, 1);
	ASSERT_EQ(0, ds_token_field_get(&wqe0, "max_read_sge", &v));
	EXPECT_GE(v, 1);

	snprintf(path, sizeof(path), "/tmp/dsmem-post-%d", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ds_trace_start(self->ctx, fd));
	close(fd);
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(0, ds_read(self->x, self->seg + i * 64, buf, sizeof(buf)));
	ASSERT_EQ(0, ds_trace_stop(self->ctx, &ti));
	EXPECT_EQ(0, ti.dropped);

	/* the producer index moved once a post; the format was only read */
	ASSERT_EQ(0, ds_token_get(self->ctx, db0.handle, &db1));
	ASSERT_EQ(0, ds_token_get(self->ctx, wqe0.handle, &wqe1));
	EXPECT_GE(db1.accesses, db0.accesses + 50);
	EXPECT_EQ(wqe0.accesses, wqe1.accesses);
	EXPECT_EQ(0, memcmp(db0.data, db1.data, db0.data_len));

	f = fopen(path, "rb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fread(&hdr, sizeof(hdr), 1, f));
	while (fread(&rec, sizeof(rec), 1, f) == 1) {
		EXPECT_EQ(DSMEM_HANDLE_TYPE(rec.handle), rec.type);
		/* node 2's posts (a keepalive) are its own tokens' */
		if (rec.handle != db0.handle && rec.handle != wqe0.handle)
			continue;
		EXPECT_EQ(1, rec.node);
		EXPECT_GE(rec.tier, DSMEM_TIER_L1);
		EXPECT_LE(rec.tier, DSMEM_TIER_L3);
		if (rec.handle == db0.handle && rec.op == DSMEM_TRACE_MODIFY)
			db_mod++;
		else if (rec.handle == wqe0.handle && rec.op == DSMEM_TRACE_READ)
			wqe_read++;
		else
			other++;
	}
	fclose(f);
	unlink(path);
	/* one of each per post: the 50 reads, and any keepalive */
	EXPECT_GE(db_mod, 50);
	EXPECT_LE(db_mod, wqe_read + 1);
	EXPECT_LE(wqe_read, db_mod + 1);
	EXPECT_EQ(0, other);
}

TEST_HARNESS_MAIN
