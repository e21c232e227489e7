// SPDX-License-Identifier: BSD-2-Clause
/*
 * The local fast path: a node's reads and writes of its own segments are
 * copies in the module, with no connection to itself, checked as a
 * remote node's would be.  Atomics still need the loopback connection.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define SEG_SIZE	(8u << 20)
#define PORT_A		7481
#define NODE		1

FIXTURE(local) {
	uint64_t ring_threads, local_path;	/* the parameters as they were */
	struct ds_ctx *ctx;
	struct ds_xfer *x;
	uint64_t seg;		/* granted to its own node, rw */
	uint64_t seg_ro;	/* granted read-only */
	uint64_t seg_none;	/* not granted */
	uint64_t seg_paged;	/* a page-table segment, granted rw */
	uint32_t seg_id;
};

TEST_XFER_PATHS(local);

FIXTURE_SETUP(local)
{
	struct ds_seg_info s;

	ASSERT_EQ(0, param_get("ring_threads", &self->ring_threads));
	ASSERT_EQ(0, param_get("local_path", &self->local_path));
	ASSERT_EQ(1, self->local_path) TH_LOG("the local path is on by default");
	ASSERT_EQ(0, param_set("ring_threads", 16));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, NODE, "rxe0", PORT_A))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, ds_seg_add(self->ctx, NODE, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	self->seg = s.addr;
	self->seg_id = s.id;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE, s.id, NODE, DS_PERM_ALL));
	ASSERT_EQ(0, ds_seg_add(self->ctx, NODE, 1 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
	self->seg_ro = s.addr;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE, s.id, NODE, DS_PERM_READ));
	ASSERT_EQ(0, ds_seg_add(self->ctx, NODE, 1 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
	self->seg_none = s.addr;
	ASSERT_EQ(0, ds_seg_add(self->ctx, NODE, 1 << 20, -1, DS_TRANSLATE_PAGES, &s));
	self->seg_paged = s.addr;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE, s.id, NODE, DS_PERM_ALL));
	ASSERT_EQ(0, test_xfer_open(NODE, variant->xfer_flags, &self->x));
	ASSERT_EQ(!variant->xfer_flags, ds_xfer_rings(self->x));
}

FIXTURE_TEARDOWN(local)
{
	if (self->x)
		ds_xfer_close(self->x);
	ds_node_del(self->ctx, NODE);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, param_set("ring_threads", self->ring_threads));
	EXPECT_EQ(0, param_set("local_path", self->local_path));
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

/* The node dials itself: the loopback connection atomics need. */
static int loopback_up(struct ds_ctx *ctx)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	uint32_t peer;
	int ret = ds_peer_add(ctx, NODE, addr, PORT_A, &peer);

	/* three segments granted to the node: rw, read-only, paged */
	return ret ? ret : wait_rsegs(ctx, NODE, peer, 3);
}

/*
 * Random patterns, 1 B to 4 MiB, at unaligned offsets, both ways, with no
 * connection at all: every byte is a copy, none a work request.
 */
TEST_F_TIMEOUT(local, roundtrip_sizes, 300)
{
	uint64_t local0 = stat_value(self->ctx, "xfer_local");
	uint64_t slices0 = stat_value(self->ctx, "xfer_slices");
	int err;

	ASSERT_EQ(0, test_roundtrip_sizes(self->x, self->seg, SEG_SIZE, &err))
		TH_LOG("error %d", err);
	EXPECT_EQ(local0 + 2 * TEST_ROUNDTRIPS, stat_value(self->ctx, "xfer_local"));
	EXPECT_EQ(slices0, stat_value(self->ctx, "xfer_slices"));
}

/* Registered buffers in batches, reads and writes mixed, every status. */
TEST_F(local, registered_batch)
{
	enum { N = 128, SZ = 4096 + 17 };
	static uint8_t src[N * SZ], dst[N * SZ];
	struct ds_transfer_request r[N];
	struct ds_transfer_status st[N];
	uint32_t msrc, mdst;
	uint64_t task;
	int state;

	test_fill(src, sizeof(src), 11);
	ASSERT_EQ(0, ds_mr_reg(self->x, src, sizeof(src), &msrc));
	ASSERT_EQ(0, ds_mr_reg(self->x, dst, sizeof(dst), &mdst));
	test_reversed_writes(r, N, SZ, self->seg, 3, msrc);
	ASSERT_EQ(0, ds_batch_submit(self->x, r, N, &task));
	ASSERT_EQ(0, ds_task_query(self->x, task, 1, 1, &state, st, N));
	EXPECT_EQ(DS_TASK_COMPLETE, state);
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, st[i].status);
		EXPECT_EQ(SZ, st[i].bytes);
		r[i].opcode = DS_OP_READ;
		r[i].mr = mdst;
	}
	/* one bad request among good ones fails alone */
	r[5].target_id = self->seg_none;
	ASSERT_EQ(0, ds_batch_submit(self->x, r, N, &task));
	ASSERT_EQ(0, ds_task_query(self->x, task, 1, 1, &state, st, N));
	EXPECT_EQ(DS_TASK_FAILED, state);
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(i == 5 ? -EACCES : 0, st[i].status) TH_LOG("request %d", i);
		if (i != 5)
			EXPECT_EQ(0, memcmp(src + i * SZ, dst + i * SZ, SZ)) TH_LOG("request %d", i);
	}
	EXPECT_EQ(0, ds_mr_dereg(self->x, msrc));
	EXPECT_EQ(0, ds_mr_dereg(self->x, mdst));
}

/* The grant decides, as from a remote node; a refused read changes nothing. */
TEST_F(local, grants_and_bounds)
{
	uint8_t buf[64], keep[64];
	uint64_t denied0 = stat_value(self->ctx, "xfer_denied");
	uint64_t range0 = stat_value(self->ctx, "xfer_range");

	test_fill(buf, sizeof(buf), 3);
	memcpy(keep, buf, sizeof(buf));
	EXPECT_EQ(-EACCES, ds_read(self->x, self->seg_none, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(keep, buf, sizeof(buf)));
	EXPECT_EQ(-EACCES, ds_write(self->x, self->seg_ro + 8, buf, 8));
	EXPECT_EQ(0, ds_read(self->x, self->seg_ro + 8, buf, 8));
	/* a segment that does not exist looks like one not granted */
	EXPECT_EQ(-EACCES, ds_read(self->x, DSMEM_GADDR(NODE, 999, 0), buf, 8));
	EXPECT_EQ(3, stat_value(self->ctx, "xfer_denied") - denied0);

	memcpy(buf, keep, sizeof(buf));
	EXPECT_EQ(-ERANGE, ds_read(self->x, self->seg + SEG_SIZE, buf, 1));
	EXPECT_EQ(-ERANGE, ds_read(self->x, self->seg + SEG_SIZE - 8, buf, 9));
	EXPECT_EQ(-ERANGE, ds_write(self->x, self->seg + SEG_SIZE - 1, buf, 2));
	EXPECT_EQ(0, memcmp(keep, buf, sizeof(buf)));
	EXPECT_EQ(3, stat_value(self->ctx, "xfer_range") - range0);
	EXPECT_EQ(0, ds_write(self->x, self->seg + SEG_SIZE - 1, buf, 1));

	/* page-table segments are for messages, near or far */
	EXPECT_EQ(-EOPNOTSUPP, ds_read(self->x, self->seg_paged, buf, 8));
}

/* A revoked grant and a deleted segment refuse the next transfer. */
TEST_F_TIMEOUT(local, revoke_and_delete, 120)
{
	uint8_t buf[16] = { 1 };

	ASSERT_EQ(0, ds_write(self->x, self->seg, buf, sizeof(buf)));
	ASSERT_EQ(0, ds_seg_revoke(self->ctx, NODE, self->seg_id, NODE));
	EXPECT_EQ(-EACCES, ds_write(self->x, self->seg, buf, sizeof(buf)));
	EXPECT_EQ(-EACCES, ds_read(self->x, self->seg, buf, sizeof(buf)));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE, self->seg_id, NODE, DS_PERM_READ));
	EXPECT_EQ(0, ds_read(self->x, self->seg, buf, sizeof(buf)));
	EXPECT_EQ(-EACCES, ds_write(self->x, self->seg, buf, sizeof(buf)));
	ASSERT_EQ(0, ds_seg_del(self->ctx, NODE, self->seg_id));
	EXPECT_EQ(-EACCES, ds_read(self->x, self->seg, buf, sizeof(buf)));
}

struct copier {
	struct ds_xfer *x;
	uint64_t seg;
	uint8_t *buf;
	size_t len;
	volatile int stop;
	int err;		/* other than -EACCES */
	unsigned int rounds;
};

/* 4 MiB writes of the segment, a new byte each round, until told. */
static void *copier_run(void *arg)
{
	struct copier *c = arg;

	for (unsigned int k = 1; !c->stop; k++) {
		int ret;

		memset(c->buf, k, c->len);
		ret = ds_write(c->x, c->seg, c->buf, c->len);
		if (ret == -EACCES) {
			usleep(1000);
		} else if (ret) {
			c->err = ret;
			break;
		}
		c->rounds++;
	}
	return NULL;
}

/*
 * A revoke of the node's grant to itself returns only once no copy can
 * touch the segment: a 4 MiB write under way stops within its MiB.  A
 * second node watches the segment's last bytes (what a write reaches
 * last) through the device: after the revoke they no longer change.
 */
TEST_F_TIMEOUT(local, revoke_stops_a_copy_under_way, 120)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct copier c = { .x = self->x, .seg = self->seg, .len = 4 << 20 };
	uint64_t tail = self->seg + c.len - 8, v1, v2;
	struct ds_xfer *watch = NULL;
	int changed = 0, denied0;
	uint32_t peer;
	pthread_t t;

	c.buf = malloc(c.len);
	ASSERT_NE(NULL, c.buf);
	ASSERT_EQ(0, test_node_add(self->ctx, NODE + 1, "rxe0", PORT_A + 1));
	/* admits whoever proves the key, as rdm_test's node 2 does */
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, NODE, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE, self->seg_id, NODE + 1, DS_PERM_READ));
	ASSERT_EQ(0, ds_peer_add(self->ctx, NODE + 1, addr, PORT_A, &peer));
	ASSERT_EQ(0, wait_rsegs(self->ctx, NODE + 1, peer, 1));
	ASSERT_EQ(0, test_xfer_open(NODE + 1, DS_XFER_NO_RINGS, &watch));
	denied0 = (int)stat_value(self->ctx, "xfer_denied");
	ASSERT_EQ(0, pthread_create(&t, NULL, copier_run, &c));
	for (int i = 0; i < 8; i++) {
		usleep(20000 + i * 3000);
		ASSERT_EQ(0, ds_seg_revoke(self->ctx, NODE, self->seg_id, NODE));
		ASSERT_EQ(0, ds_read(watch, tail, &v1, sizeof(v1)));
		usleep(30000);
		ASSERT_EQ(0, ds_read(watch, tail, &v2, sizeof(v2)));
		if (v1 != v2)
			changed++;
		ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE, self->seg_id, NODE, DS_PERM_ALL));
	}
	c.stop = 1;
	pthread_join(t, NULL);
	EXPECT_EQ(0, c.err);
	EXPECT_EQ(0, changed) TH_LOG("written after the revoke returned, %d times of 8",
				     changed);
	/* the copier met the revokes */
	EXPECT_LT(denied0, (int)stat_value(self->ctx, "xfer_denied"));
	TH_LOG("%u writes of 4 MiB", c.rounds);
	ds_xfer_close(watch);
	ds_node_del(self->ctx, NODE + 1);
	free(c.buf);
}

/*
 * Atomics go through the device, so they need the loopback connection,
 * and they see what copies wrote, and the other way round.
 */
TEST_F(local, atomics_take_the_loopback)
{
	uint64_t v = 41, old = 0, local0, slices0;

	ASSERT_EQ(0, ds_write(self->x, self->seg + 64, &v, 8));
	EXPECT_EQ(-ENOTCONN, ds_faa(self->x, self->seg + 64, 1, &old));
	ASSERT_EQ(0, loopback_up(self->ctx)) TH_LOG("%s", ds_ctx_errmsg(self->ctx));

	local0 = stat_value(self->ctx, "xfer_local");
	slices0 = stat_value(self->ctx, "xfer_slices");
	ASSERT_EQ(0, ds_faa(self->x, self->seg + 64, 1, &old));
	EXPECT_EQ(41, old);
	ASSERT_EQ(0, ds_cas(self->x, self->seg + 64, 42, 100, &old));
	EXPECT_EQ(42, old);
	EXPECT_EQ(local0, stat_value(self->ctx, "xfer_local"));
	EXPECT_EQ(slices0 + 2, stat_value(self->ctx, "xfer_slices"));
	ASSERT_EQ(0, ds_read(self->x, self->seg + 64, &v, 8));
	EXPECT_EQ(100, v);
	EXPECT_EQ(local0 + 1, stat_value(self->ctx, "xfer_local"));
}

/*
 * A batch keeps its order to its own node as the device keeps one QP's:
 * a READ behind an FAA sees the FAA's sum, so it follows the FAA onto
 * the loopback rather than pass it as a copy.  Copies resume once the
 * loopback is idle.
 */
TEST_F(local, order_behind_an_atomic)
{
	static uint64_t buf[2];
	uint64_t v = 0, task, local0;
	struct ds_transfer_request r[2];
	struct ds_transfer_status st[2];
	uint32_t mr;
	int state;

	ASSERT_EQ(0, loopback_up(self->ctx)) TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, ds_write(self->x, self->seg + 128, &v, 8));
	ASSERT_EQ(0, ds_mr_reg(self->x, buf, sizeof(buf), &mr));
	r[0] = (struct ds_transfer_request){ .source_offset = 0,
		.target_id = self->seg, .target_offset = 128, .length = 8,
		.opcode = DS_OP_FAA, .mr = mr, .compare_add = 1 };
	r[1] = (struct ds_transfer_request){ .source_offset = 8,
		.target_id = self->seg, .target_offset = 128, .length = 8,
		.opcode = DS_OP_READ, .mr = mr };
	for (uint64_t i = 0; i < 50; i++) {
		ASSERT_EQ(0, ds_batch_submit(self->x, r, 2, &task));
		ASSERT_EQ(0, ds_task_query(self->x, task, 1, 1, &state, st, 2));
		ASSERT_EQ(DS_TASK_COMPLETE, state);
		ASSERT_EQ(i, buf[0]);
		ASSERT_EQ(i + 1, buf[1]) TH_LOG("round %llu: the READ passed the FAA",
						(unsigned long long)i);
	}
	local0 = stat_value(self->ctx, "xfer_local");
	ASSERT_EQ(0, ds_read(self->x, self->seg + 128, &v, 8));
	EXPECT_EQ(50, v);
	EXPECT_EQ(local0 + 1, stat_value(self->ctx, "xfer_local"));
	EXPECT_EQ(0, ds_mr_dereg(self->x, mr));
}

/*
 * With the parameter off, the same transfers loop back through the
 * device, and both paths see the same bytes.
 */
TEST_F_TIMEOUT(local, loopback_when_off, 120)
{
	enum { SZ = 200000 };
	static uint8_t out[SZ], in[SZ];
	uint64_t local0, slices0;

	ASSERT_EQ(0, loopback_up(self->ctx)) TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	test_fill(out, SZ, 21);
	ASSERT_EQ(0, ds_write(self->x, self->seg + 5, out, SZ));	/* copied */
	ASSERT_EQ(0, param_set("local_path", 0));
	local0 = stat_value(self->ctx, "xfer_local");
	slices0 = stat_value(self->ctx, "xfer_slices");
	ASSERT_EQ(0, ds_read(self->x, self->seg + 5, in, SZ));	/* by RDMA READ */
	EXPECT_EQ(0, memcmp(out, in, SZ));
	test_fill(out, SZ, 22);
	ASSERT_EQ(0, ds_write(self->x, self->seg + 5, out, SZ));	/* by RDMA WRITE */
	EXPECT_EQ(local0, stat_value(self->ctx, "xfer_local"));
	EXPECT_LT(slices0, stat_value(self->ctx, "xfer_slices"));
	ASSERT_EQ(0, param_set("local_path", 1));
	memset(in, 0, SZ);
	ASSERT_EQ(0, ds_read(self->x, self->seg + 5, in, SZ));	/* copied */
	EXPECT_EQ(0, memcmp(out, in, SZ));
	EXPECT_EQ(local0 + 1, stat_value(self->ctx, "xfer_local"));
}

struct worker {
	struct ds_xfer *x;
	uint64_t base;
	unsigned int seed;
	int err;
};

static void *worker_run(void *arg)
{
	enum { MAX = 300000 };
	struct worker *w = arg;
	uint8_t *out = malloc(MAX), *in = malloc(MAX);

	if (!out || !in)
		w->err = -ENOMEM;
	for (int i = 0; i < 100 && !w->err; i++) {
		size_t n = 1 + (w->seed * 7919u + i * 104729u) % MAX;
		uint64_t at = w->base + (i * 4093u) % (SEG_SIZE / 4 - n);

		test_fill(out, n, w->seed + i);
		if (ds_write(w->x, at, out, n) || ds_read(w->x, at, in, n))
			w->err = -EIO;
		else if (memcmp(out, in, n))
			w->err = -EILSEQ;
	}
	free(out);
	free(in);
	return NULL;
}

/* Four threads, a handle each, on their own quarters of the segment. */
TEST_F_TIMEOUT(local, four_threads, 300)
{
	struct worker w[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .base = self->seg + i * (SEG_SIZE / 4),
					.seed = 100 + i };
		ASSERT_EQ(0, test_xfer_open(NODE, variant->xfer_flags, &w[i].x));
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_run, &w[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].err) TH_LOG("thread %d", i);
		ds_xfer_close(w[i].x);
	}
}

TEST_HARNESS_MAIN
