// SPDX-License-Identifier: BSD-2-Clause
/*
 * The B+tree on disaggregated memory (ds_btree_*), in one guest: compute
 * nodes 1 and 2 and memory nodes 3 and 4 on the one rxe device, each
 * memory node with a segment granted read-write to both compute nodes, and
 * peers from each compute node to each memory node.
 *
 *   model_*      random operations checked against a sequential model: one
 *                thread exactly, and 4 threads on each of 2 compute nodes
 *                (two processes) by a linearizability check per key
 *   structure_*  splits at every level, merges down to an empty tree, a
 *                scan across concurrent splits
 *   crash        a compute node killed (SIGKILL) while it writes; its locks
 *                are taken over after their lease
 *   corrupt_*    node images damaged in remote memory: detected, retried,
 *                reported as -EIO; their pointers never followed blindly
 *   bad_input    refusals of the API
 *   values_out_of_line, seed_layout: the other value and layout modes
 *   str_*        byte-string keys: the model and structure tests again
 *                (their integer ids encoded as strings in the same order),
 *                and str_keys_api (order, lengths, refusals, one READ per
 *                warm lookup, the formats)
 *   replica_*    (fixture btr: a third memory node, 5) trees with 2 or 3
 *                copies of every node: the model checks and ds_btree_verify
 *                on them, the refusals, and a memory node deleted under
 *                both compute nodes' load (a backup, a primary, group 0's
 *                first member): no operation fails, no put is lost
 *
 * The corrupt tests write node images raw: the offsets below are those of
 * struct node_header in user/lib/btree/layout.hpp (the kselftests use the
 * public API only, so they are repeated here).
 *
 * Randomness comes from one seed per run, which each test prints
 * ("seed N"); BTREE_SEED=N replays it.  BTREE_OPS (operations per thread,
 * default 800) scales the concurrent model check.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <dsmem/ds.h>
#include <xxhash.h>

#include "kselftest_harness.h"
#include "util.h"

#define PORT_BASE	7480		/* node n listens on PORT_BASE + n */
#define SEG_SIZE	(20ull << 20)	/* >= DS_BTREE_SEED_SEG_MIN */
#define SMALL_NODE	256		/* 12 entries: splits and merges often */

/* struct node_header (user/lib/btree/layout.hpp): 64 bytes, then entries
 * of 16 (key, value); the sum is XXH64 (seed 0) of the bytes from 16 to
 * the end of the last entry in use. */
#define NH_LOCK		0
#define NH_SUM		8
#define NH_VERSION	16
#define NH_LEVEL	24
#define NH_FLAGS	25
#define NH_COUNT	26
#define NH_MAGIC	28
#define NH_LOW		32
#define NH_HIGH		40
#define NH_SIBLING	48
#define NH_LEFTMOST	56
#define NH_SIZE		64
#define NH_SUM_FROM	16
#define NODE_MAGIC	0x4e425344u
#define NF_LOW_INF	0x02
#define NF_HIGH_INF	0x04

/* ---- randomness, time ---- */

static uint64_t seed_base;

static uint64_t rnd(uint64_t *s)	/* xorshift64* */
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* one seed for the whole program (each test runs in a child of main) */
static void __attribute__((constructor)) seed_init(void)
{
	const char *env = getenv("BTREE_SEED");

	seed_base = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
}

static uint64_t seed_for(uint64_t salt)
{
	uint64_t s = (seed_base + 1) * 0x9e3779b97f4a7c15ull ^ (salt * 0xbf58476d1ce4e5b9ull);

	return s ? s : 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void shuffle(uint64_t *a, size_t n, uint64_t *s)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd(s) % i;
		uint64_t t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- the fixtures: nodes 1, 2 (compute) and 3, 4 (bt) or 3, 4, 5 (btr,
 * memory) ---- */

#define MEM_MAX		3	/* memory nodes 3 .. 2 + MEM_MAX */

FIXTURE(bt) {
	struct ds_ctx *ctx;
	unsigned int nmem;	/* memory nodes 3 .. 2 + nmem */
	uint64_t seg[MEM_MAX];	/* each memory node's segment */
	uint32_t seg_id[MEM_MAX];
	uint32_t peer[2][MEM_MAX];	/* [compute 1, 2][memory 3 ...] */
	uint32_t rsegs[2][MEM_MAX];	/* segments each peer grants */
};

static int grant_both(struct ds_ctx *ctx, uint32_t mnode, uint32_t seg_id)
{
	int ret = ds_seg_grant(ctx, mnode, seg_id, 1, DS_PERM_ALL);

	return ret ? ret : ds_seg_grant(ctx, mnode, seg_id, 2, DS_PERM_ALL);
}

/* Compute nodes 1 and 2, memory nodes 3 .. 2 + nmem with a segment each,
 * granted to both compute nodes, and a peer from each compute node to
 * each memory node. */
static void cluster_up(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self,
		       unsigned int nmem)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct ds_seg_info s;

	TH_LOG("seed %" PRIu64 " (BTREE_SEED=%" PRIu64 " replays it)", seed_base, seed_base);
	self->nmem = nmem;
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	for (uint32_t id = 1; id <= 2 + nmem; id++) {
		ASSERT_EQ(0, test_node_add(self->ctx, id, "rxe0", PORT_BASE + id))
			TH_LOG("node %u: %s", id, ds_ctx_errmsg(self->ctx));
	}
	for (unsigned int m = 0; m < nmem; m++) {
		ASSERT_EQ(0, ds_seg_add(self->ctx, 3 + m, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
		self->seg[m] = s.addr;
		self->seg_id[m] = s.id;
		ASSERT_EQ(0, grant_both(self->ctx, 3 + m, s.id));
	}
	for (int c = 0; c < 2; c++)
		for (unsigned int m = 0; m < nmem; m++) {
			ASSERT_EQ(0, test_peer_add(self->ctx, 1 + c, addr, PORT_BASE + 3 + m,
						   3 + m, &self->peer[c][m]))
				TH_LOG("%s", ds_ctx_errmsg(self->ctx));
			self->rsegs[c][m] = 1;
		}
	for (int c = 0; c < 2; c++)
		for (unsigned int m = 0; m < nmem; m++) {
			ASSERT_EQ(0, wait_rsegs(self->ctx, 1 + c, self->peer[c][m], 1));
		}
}

/* (a node a test deleted already is not there to delete: no matter) */
static void cluster_down(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self)
{
	for (uint32_t n = 1; n <= 2 + self->nmem; n++)
		ds_node_del(self->ctx, n);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

FIXTURE_SETUP(bt)
{
	cluster_up(_metadata, self, 2);
}

FIXTURE_TEARDOWN(bt)
{
	cluster_down(_metadata, self);
}

/* A segment of size on memory node m (3 .. 2 + nmem), granted to nodes 1
 * and 2 when grant; waits until both compute nodes see it (or not). */
static int extra_seg(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self,
		     uint32_t mnode, uint64_t size, bool grant, uint64_t *addr)
{
	struct ds_seg_info s;
	int ret = ds_seg_add(self->ctx, mnode, size, -1, DS_TRANSLATE_SEGMENT, &s);

	if (ret)
		return ret;
	*addr = s.addr;
	if (!grant)
		return 0;
	ret = grant_both(self->ctx, mnode, s.id);
	for (int c = 0; c < 2 && !ret; c++) {
		uint32_t n = ++self->rsegs[c][mnode - 3];

		ret = wait_rsegs(self->ctx, 1 + c, self->peer[c][mnode - 3], n);
	}
	(void)_metadata;
	return ret;
}

/* What the compute nodes see of the memory nodes, for a failure's log. */
static void log_peers(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self)
{
	for (uint32_t c = 1; c <= 2; c++) {
		struct ds_peer_info *peers;
		size_t np;

		if (ds_peer_list(self->ctx, c, &peers, &np)) {
			TH_LOG("node %u: no peer list", c);
			continue;
		}
		for (size_t i = 0; i < np; i++) {
			TH_LOG("node %u peer %u: node %u, state %u, %u connects, errno %u, "
			       "%u/%u segments", c, peers[i].id, peers[i].remote_node,
			       peers[i].state, peers[i].connects, peers[i].last_errno,
			       peers[i].nrsegs, peers[i].rseg_total);
			for (uint32_t k = 0; k < peers[i].nrsegs; k++)
				TH_LOG("  %#" PRIx64 ": %" PRIu64 " bytes, perm %u, %u keys",
				       peers[i].rsegs[k].addr, peers[i].rsegs[k].size,
				       peers[i].rsegs[k].perm, peers[i].rsegs[k].keys);
		}
		free(peers);
	}
}

/*
 * The key format the model and structure tests run with: 0, integer keys
 * (ds_btree_get ...); 1, byte strings (ds_btree_kget ...), each integer
 * id encoded as a string of 19 to 61 bytes in the same order: a group
 * digit (the id's top 4 bits) and a prefix whose length depends on it,
 * the id in 16 hex digits, and a tail whose length depends on the id
 * (after the unique digits, so it never decides an order).  Long shared
 * prefixes, keys of every length, separators cut short.
 */
static int key_fmt;
#define STR_NODE	512	/* the smallest node for key_max 64 */
#define STR_KEY_MAX	64

static size_t kenc(uint64_t id, uint8_t *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned g = id >> 60, tail = (id * 0x9e3779b97f4a7c15ull) >> 60;
	size_t n = 0;

	out[n++] = hex[g];
	out[n++] = '/';
	for (unsigned i = 0; i < 2 * g; i++)
		out[n++] = 'p';
	for (int i = 15; i >= 0; i--)
		out[n++] = hex[(id >> (4 * i)) & 15];
	for (unsigned i = 0; i < tail % 14; i++)
		out[n++] = (uint8_t)(0x80 + i);
	return n;
}

static uint64_t kdec(const uint8_t *p, size_t len)
{
	unsigned g = p[0] <= '9' ? p[0] - '0' : p[0] - 'a' + 10;
	uint64_t id = 0;

	if (len < 2 + 2 * g + 16)
		return UINT64_MAX;
	for (size_t i = 2 + 2 * g; i < 2 + 2 * g + 16; i++)
		id = id << 4 | (uint64_t)(p[i] <= '9' ? p[i] - '0' : p[i] - 'a' + 10);
	return id;
}

static int bt_get(struct ds_btree *t, uint64_t key, void *val, size_t len, size_t *vlen)
{
	uint8_t k[STR_KEY_MAX];

	if (!key_fmt)
		return ds_btree_get(t, key, val, len, vlen);
	return ds_btree_kget(t, k, kenc(key, k), val, len, vlen);
}

static int bt_put(struct ds_btree *t, uint64_t key, const void *val, size_t len)
{
	uint8_t k[STR_KEY_MAX];

	if (!key_fmt)
		return ds_btree_put(t, key, val, len);
	return ds_btree_kput(t, k, kenc(key, k), val, len);
}

static int bt_del(struct ds_btree *t, uint64_t key)
{
	uint8_t k[STR_KEY_MAX];

	if (!key_fmt)
		return ds_btree_del(t, key);
	return ds_btree_kdel(t, k, kenc(key, k));
}

static int bt_scan(struct ds_btree *t, uint64_t start, size_t limit, uint64_t *keys,
		   void *vals, size_t *n)
{
	uint8_t k[STR_KEY_MAX];
	struct ds_btree_key *ks;
	int ret;

	if (!key_fmt)
		return ds_btree_scan(t, start, limit, keys, vals, n);
	ks = calloc(limit ? limit : 1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	ret = ds_btree_kscan(t, k, kenc(start, k), limit, ks, vals, n);
	for (size_t i = 0; !ret && i < *n; i++)
		keys[i] = kdec(ks[i].bytes, ks[i].len);
	free(ks);
	return ret;
}

/* A tree of the current key format (key_fmt) over segs, replicas copies
 * of each node (0: one). */
static int create_tree_(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self,
			uint32_t node_size, const uint64_t *segs, size_t nsegs,
			uint32_t replicas, uint64_t *addr)
{
	struct ds_btree_create_opts o = { .layout = DS_BTREE_GENERAL, .node_size = node_size,
					  .replicas = replicas };
	int ret;

	if (key_fmt) {
		o.node_size = STR_NODE;
		o.key_max = STR_KEY_MAX;
	}
	ret = ds_btree_create(1, segs, nsegs, &o, addr);

	if (ret) {
		TH_LOG("create over %zu segments, %u replicas: %d", nsegs, replicas, ret);
		for (size_t i = 0; i < nsegs; i++)
			TH_LOG("  %#" PRIx64, segs[i]);
		log_peers(_metadata, self);
	}
	return ret;
}
#define create_small(self, node_size, nsegs, addr) \
	create_tree_(_metadata, self, node_size, (self)->seg, nsegs, 0, addr)

static uint64_t val_of(uint64_t key)
{
	return key * 0x9e3779b97f4a7c15ull + 1;
}

static int get64(struct ds_btree *t, uint64_t key, uint64_t *v)
{
	size_t vlen = 0;
	int ret;

	*v = 0;
	ret = bt_get(t, key, v, sizeof(*v), &vlen);
	if (!ret && vlen != 8)
		return -EBADMSG;
	return ret;
}

static int put64(struct ds_btree *t, uint64_t key, uint64_t v)
{
	return bt_put(t, key, &v, sizeof(v));
}

/* ======================================================================
 * Linearizability of one key's history: a register with put, del, get.
 * Wing & Gong's search with Lowe's memoization of (linearized set, state):
 * walk the calls and returns in time order; a call may be linearized when
 * the register allows its result; reaching the return of an operation not
 * yet linearized means backtracking.  The map is a set of independent
 * registers, so the whole history is linearizable iff every key's is.
 * ====================================================================== */

enum { H_PUT, H_GET, H_DEL_OK, H_DEL_MISS };

struct hop {
	uint64_t t0, t1;	/* invoked, returned */
	uint64_t arg;		/* put: the value; get: the value seen, 0 absent */
	uint8_t kind;
	uint8_t who;		/* process * 4 + thread; 8: checker */
	uint8_t scan;		/* a get that was part of a scan */
};

struct hev {
	uint64_t t;
	uint32_t op;
	bool call;
	struct hev *match, *prev, *next;
};

static int hev_cmp(const void *a, const void *b)
{
	const struct hev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->call != y->call)		/* ties: calls first (concurrent) */
		return x->call ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

struct lcache {
	size_t nw, cap, n;
	uint64_t *slots;	/* cap * (nw + 2): used, state, bits */
};

static uint64_t lc_hash(const uint64_t *bits, size_t nw, uint64_t state)
{
	uint64_t h = state * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;

	for (size_t i = 0; i < nw; i++)
		h = (h ^ bits[i]) * 0x100000001b3ull + (h >> 31);
	return h ^ (h >> 29);
}

static bool lc_insert_raw(struct lcache *c, const uint64_t *bits, uint64_t state)
{
	size_t w = c->nw + 2;
	size_t i = lc_hash(bits, c->nw, state) % c->cap;

	for (;; i = (i + 1) % c->cap) {
		uint64_t *s = c->slots + i * w;

		if (!s[0]) {
			s[0] = 1;
			s[1] = state;
			memcpy(s + 2, bits, c->nw * 8);
			c->n++;
			return true;
		}
		if (s[1] == state && !memcmp(s + 2, bits, c->nw * 8))
			return false;
	}
}

/* true when (bits, state) was new; -1 on no memory */
static int lc_add(struct lcache *c, const uint64_t *bits, uint64_t state)
{
	if ((c->n + 1) * 2 > c->cap) {
		struct lcache nc = { .nw = c->nw, .cap = c->cap ? c->cap * 2 : 1024 };
		size_t w = c->nw + 2;

		nc.slots = calloc(nc.cap, w * 8);
		if (!nc.slots)
			return -1;
		for (size_t i = 0; i < c->cap; i++)
			if (c->slots[i * w])
				lc_insert_raw(&nc, c->slots + i * w + 2, c->slots[i * w + 1]);
		free(c->slots);
		*c = nc;
	}
	return lc_insert_raw(c, bits, state);
}

static bool reg_step(uint64_t s, const struct hop *o, uint64_t *ns)
{
	*ns = s;
	switch (o->kind) {
	case H_PUT:
		*ns = o->arg;
		return true;
	case H_GET:
		return s == o->arg;
	case H_DEL_OK:
		*ns = 0;
		return s != 0;
	default:
		return s == 0;
	}
}

static void lift(struct hev *e)
{
	struct hev *m = e->match;

	e->prev->next = e->next;
	if (e->next)
		e->next->prev = e->prev;
	m->prev->next = m->next;
	if (m->next)
		m->next->prev = m->prev;
}

static void unlift(struct hev *e)
{
	struct hev *m = e->match;

	m->prev->next = m;
	if (m->next)
		m->next->prev = m;
	e->prev->next = e;
	if (e->next)
		e->next->prev = e;
}

/* 1: linearizable, 0: not, -1: out of memory.  The register starts absent. */
static int linearizable(const struct hop *ops, size_t n)
{
	struct hev *ev = calloc(2 * n + 1, sizeof(*ev)), *head, *e;
	size_t nw = (n + 63) / 64 ? (n + 63) / 64 : 1, sp = 0;
	uint64_t *bits = calloc(nw, 8), *sstate = calloc(n + 1, 8), state = 0;
	struct hev **sev = calloc(n + 1, sizeof(*sev));
	struct lcache c = { .nw = nw };
	int ret = -1;

	if (!ev || !bits || !sstate || !sev)
		goto out;
	for (size_t i = 0; i < n; i++) {
		ev[2 * i] = (struct hev){ .t = ops[i].t0, .op = i, .call = true };
		ev[2 * i + 1] = (struct hev){ .t = ops[i].t1, .op = i, .call = false };
	}
	qsort(ev, 2 * n, sizeof(*ev), hev_cmp);
	{
		/* calls find their returns after the sort */
		struct hev **call_of = calloc(n, sizeof(*call_of));

		if (!call_of)
			goto out;
		for (size_t i = 0; i < 2 * n; i++)
			if (ev[i].call)
				call_of[ev[i].op] = &ev[i];
		for (size_t i = 0; i < 2 * n; i++)
			if (!ev[i].call)
				call_of[ev[i].op]->match = &ev[i];
		free(call_of);
	}
	head = &ev[2 * n];
	head->prev = NULL;
	head->next = n ? &ev[0] : NULL;
	for (size_t i = 0; i < 2 * n; i++) {
		ev[i].prev = i ? &ev[i - 1] : head;
		ev[i].next = i + 1 < 2 * n ? &ev[i + 1] : NULL;
	}
	e = head->next;
	while (head->next) {
		if (e->call) {
			uint64_t ns;

			if (reg_step(state, &ops[e->op], &ns)) {
				int added;

				bits[e->op / 64] |= 1ull << (e->op % 64);
				added = lc_add(&c, bits, ns);
				if (added < 0)
					goto out;
				if (added) {
					sev[sp] = e;
					sstate[sp++] = state;
					state = ns;
					lift(e);
					e = head->next;
					continue;
				}
				bits[e->op / 64] &= ~(1ull << (e->op % 64));
			}
			e = e->next;
		} else {
			struct hev *top;

			if (!sp) {
				ret = 0;
				goto out;
			}
			top = sev[--sp];
			state = sstate[sp];
			bits[top->op / 64] &= ~(1ull << (top->op % 64));
			unlift(top);
			e = top->next;
		}
	}
	ret = 1;
out:
	free(c.slots);
	free(ev);
	free(bits);
	free(sstate);
	free(sev);
	return ret;
}

/* ---- recorded operations ---- */

enum { R_PUT, R_GET, R_DEL, R_SCAN };

struct rec {
	uint64_t t0, t1;
	uint64_t key;		/* scan: start */
	uint64_t val;		/* put: written; get: read */
	int32_t ret;
	uint8_t op;
	uint8_t who;
	uint16_t limit;		/* scan */
	uint32_t n;		/* scan: entries returned, at pool[pos] */
	uint32_t pos;
};

#define MC_PROCS	2
#define MC_THREADS	4
#define MC_KEYS		64
#define MC_PHASE	40	/* ops a thread spends growing, then shrinking */
#define MC_SCAN_LIMIT	16

static uint64_t mc_key(unsigned i)
{
	return 1000 + 16 * (uint64_t)i;
}

struct mc_shared {
	uint64_t addr;		/* the tree, published by the parent */
	int published;		/* addr is set */
	int ready;		/* processes with the tree open */
	int go;
	int child_err;
	uint32_t ops;		/* per thread */
	uint64_t t_start;
	struct ds_btree_stats child_st;
};

struct mc_thread {
	struct ds_btree *t;
	struct mc_shared *sh;
	struct rec *recs;
	uint64_t *pool_k, *pool_v;
	unsigned who;
	uint32_t ops;
	uint64_t seed;
};

static void *mc_worker(void *arg)
{
	struct mc_thread *w = arg;
	uint64_t s = w->seed;
	uint32_t pos = 0;

	while (!__atomic_load_n(&w->sh->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	for (uint32_t i = 0; i < w->ops; i++) {
		struct rec *r = &w->recs[i];
		unsigned dice = rnd(&s) % 100;
		bool grow = i / MC_PHASE % 2 == 0;
		size_t n = 0, vlen = 8;

		/* growing: 55% put, 10% del; shrinking: the other way round;
		 * 20% get and 15% scan throughout */
		r->who = w->who;
		r->key = mc_key(rnd(&s) % MC_KEYS);
		if (dice < 65 && (dice < 10) == !grow) {
			r->op = R_PUT;
			r->val = ((uint64_t)(w->who + 1) << 40) | (i + 1);	/* unique */
			r->t0 = now_ns();
			r->ret = bt_put(w->t, r->key, &r->val, 8);
			r->t1 = now_ns();
		} else if (dice < 65) {
			r->op = R_DEL;
			r->t0 = now_ns();
			r->ret = bt_del(w->t, r->key);
			r->t1 = now_ns();
		} else if (dice < 85) {
			r->op = R_GET;
			r->t0 = now_ns();
			r->ret = bt_get(w->t, r->key, &r->val, 8, &vlen);
			r->t1 = now_ns();
			if (!r->ret && vlen != 8)
				r->ret = -EBADMSG;
		} else {
			r->op = R_SCAN;
			r->key = mc_key(0) - 8 + rnd(&s) % (16 * MC_KEYS + 8);
			r->limit = 1 + rnd(&s) % MC_SCAN_LIMIT;
			r->pos = pos;
			r->t0 = now_ns();
			r->ret = bt_scan(w->t, r->key, r->limit, w->pool_k + pos,
					       w->pool_v + pos, &n);
			r->t1 = now_ns();
			r->n = n;
			if (!r->ret)
				pos += n <= r->limit ? n : 0;
		}
	}
	return NULL;
}

/* Run 4 workers on an open tree; returns when they are done. */
static int mc_run_threads(struct ds_btree *t, struct mc_shared *sh, struct rec *recs,
			  uint64_t *pool_k, uint64_t *pool_v, unsigned proc)
{
	pthread_t th[MC_THREADS];
	struct mc_thread w[MC_THREADS];
	int ret = 0;

	for (unsigned i = 0; i < MC_THREADS; i++) {
		unsigned who = proc * MC_THREADS + i;

		w[i] = (struct mc_thread){
			.t = t, .sh = sh, .who = who, .ops = sh->ops,
			.recs = recs + (size_t)who * sh->ops,
			.pool_k = pool_k + (size_t)who * sh->ops * MC_SCAN_LIMIT,
			.pool_v = pool_v + (size_t)who * sh->ops * MC_SCAN_LIMIT,
			.seed = seed_for(100 + who),
		};
		if (pthread_create(&th[i], NULL, mc_worker, &w[i]))
			ret = -EAGAIN;
	}
	for (unsigned i = 0; i < MC_THREADS; i++)
		pthread_join(th[i], NULL);
	return ret;
}

static bool wait_flag(int *p, int want, int seconds)
{
	for (int i = 0; i < seconds * 100; i++) {
		if (__atomic_load_n(p, __ATOMIC_ACQUIRE) >= want)
			return true;
		usleep(10000);
	}
	return false;
}

static const char *hop_name(const struct hop *o)
{
	static const char *const names[] = { "put", "get", "del", "del(absent)" };

	return o->scan ? "scan" : names[o->kind];
}

static int hop_cmp_t0(const void *a, const void *b)
{
	const struct hop *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/*
 * Is each key's history linearizable?  recs[0 .. nrec-1] are every
 * operation of the run (scans' entries at pool_k/pool_v, stride entries
 * for each thread: NULL when no scan ran); finals[i] is a read of keys[i]
 * after them all (kind H_GET).  A scan counts as a get of each key of the
 * range it covered: from start to the last key returned, or to the end
 * when it returned fewer than its limit (scans are not snapshots: ds.h).
 * An operation that failed tells nothing of the key: a get is left out;
 * a put or del may have landed, at any time after it was invoked, or
 * never (it returns at infinity, so that it may be placed after all).
 * Logs the whole history of the first key that is not; returns how many
 * are not.
 */
static int check_keys(struct __test_metadata *_metadata, const struct rec *recs, size_t nrec,
		      const uint64_t *pool_k, const uint64_t *pool_v, size_t stride,
		      const uint64_t *keys, const struct hop *finals, size_t nkeys,
		      uint64_t t_start)
{
	struct hop *h = calloc(nrec + 1, sizeof(*h));
	int bad = 0;
	size_t nh;

	ASSERT_NE(NULL, h);
	for (size_t k = 0; k < nkeys; k++) {
		uint64_t key = keys[k];
		int lin;

		nh = 0;
		for (size_t i = 0; i < nrec; i++) {
			const struct rec *r = &recs[i];
			struct hop o = { .t0 = r->t0, .t1 = r->t1, .who = r->who };

			if (r->op == R_SCAN) {
				const uint64_t *pk = pool_k + (size_t)r->who * stride + r->pos;
				const uint64_t *pv = pool_v + (size_t)r->who * stride + r->pos;
				uint64_t hi = r->n == r->limit ? pk[r->n - 1] : UINT64_MAX;

				if (key < r->key || key > hi)
					continue;
				o.kind = H_GET;
				o.scan = 1;
				for (uint32_t j = 0; j < r->n; j++)
					if (pk[j] == key)
						o.arg = pv[j];
			} else if (r->key != key) {
				continue;
			} else if (r->op == R_PUT) {
				o.kind = H_PUT;
				o.arg = r->val;
				if (r->ret)
					o.t1 = UINT64_MAX;
			} else if (r->op == R_GET) {
				if (r->ret && r->ret != -ENOENT)
					continue;
				o.kind = H_GET;
				o.arg = r->ret ? 0 : r->val;
			} else if (r->ret && r->ret != -ENOENT) {
				o.kind = H_PUT;		/* absent after, if at all */
				o.t1 = UINT64_MAX;
			} else {
				o.kind = r->ret ? H_DEL_MISS : H_DEL_OK;
			}
			h[nh++] = o;
		}
		h[nh++] = finals[k];
		lin = linearizable(h, nh);
		ASSERT_LE(0, lin) TH_LOG("out of memory checking key %" PRIu64, key);
		if (!lin) {
			/* the whole history of the first such key (thread 8:
			 * the check's own final read) */
			TH_LOG("key %" PRIu64 ": %zu operations, not linearizable%s", key, nh,
			       bad ? "" : ":");
			qsort(h, nh, sizeof(*h), hop_cmp_t0);
			for (size_t i = 0; !bad && i < nh; i++)
				TH_LOG("  [%9.3f, %9.3f] ms  thread %u  %-11s %#" PRIx64,
				       ((int64_t)(h[i].t0 - t_start)) / 1e6,
				       h[i].t1 == UINT64_MAX ? INFINITY :
				       ((int64_t)(h[i].t1 - t_start)) / 1e6, h[i].who,
				       hop_name(&h[i]), h[i].arg);
			bad++;
		}
	}
	free(h);
	return bad;
}

/*
 * 8 threads over 2 compute nodes, random get/put/del/scan on 64 keys
 * (so they collide) with unique put values, in the tree at addr (256-byte
 * nodes): every result must fit a linearizable history.  The threads fill
 * the tree and empty it again every 40 operations, so that leaves split
 * and merge all along.
 */
static void model_concurrent_on(struct __test_metadata *_metadata, uint64_t addr)
{
	const char *env = getenv("BTREE_OPS");
	uint32_t ops = env ? strtoul(env, NULL, 0) : 800;
	size_t nrec = (size_t)MC_PROCS * MC_THREADS * ops;
	size_t npool = nrec * MC_SCAN_LIMIT;
	size_t bytes = sizeof(struct mc_shared) + nrec * sizeof(struct rec) + 2 * npool * 8;
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct mc_shared *sh = m;
	struct rec *recs = (struct rec *)(sh + 1);
	uint64_t *pool_k = (uint64_t *)(recs + nrec), *pool_v = pool_k + npool;
	uint64_t keys[MC_KEYS];
	struct hop finals[MC_KEYS];
	struct ds_btree_stats st;
	struct ds_btree_info info;
	struct ds_btree *t;
	uint64_t t_end;
	int status, bad = 0;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, m);
	sh->ops = ops;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* the second compute node: node 2, its own process */
		struct ds_btree *ct;
		int ret;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!wait_flag(&sh->published, 1, 120))
			_exit(3);
		ret = ds_btree_open(2, sh->addr, NULL, &ct);
		if (ret) {
			sh->child_err = ret;
			_exit(4);
		}
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_RELEASE);
		ret = mc_run_threads(ct, sh, recs, pool_k, pool_v, 1);
		ds_btree_stats_get(ct, &sh->child_st);
		ds_btree_close(ct);
		_exit(ret ? 5 : 0);
	}
	sh->addr = addr;
	__atomic_store_n(&sh->published, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_RELEASE);
	if (!wait_flag(&sh->ready, 2, 120)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ASSERT_TRUE(false) TH_LOG("the child never opened the tree: %d", sh->child_err);
	}
	sh->t_start = now_ns();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, mc_run_threads(t, sh, recs, pool_k, pool_v, 0));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child: status %#x, error %d", status, sh->child_err);
	t_end = now_ns();
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	TH_LOG("%zu operations in %.1f s; height %u; both nodes: %" PRIu64 " splits, "
	       "%" PRIu64 " merges, %" PRIu64 " redistributions, %" PRIu64 " lock retries, "
	       "%" PRIu64 " restarts", nrec, (t_end - sh->t_start) / 1e9, info.height,
	       st.splits + sh->child_st.splits, st.merges + sh->child_st.merges,
	       st.redistributions + sh->child_st.redistributions,
	       st.lock_retries + sh->child_st.lock_retries, st.restarts + sh->child_st.restarts);

	/* every result is one the API may give */
	for (size_t i = 0; i < nrec; i++) {
		struct rec *r = &recs[i];
		bool ok;

		switch (r->op) {
		case R_PUT:
			ok = r->ret == 0;
			break;
		case R_GET:	/* values put are never 0 */
			ok = (r->ret == 0 && r->val) || r->ret == -ENOENT;
			break;
		case R_DEL:
			ok = r->ret == 0 || r->ret == -ENOENT;
			break;
		default:
			ok = r->ret == 0 && r->n <= r->limit;
			for (uint32_t j = 0; ok && j < r->n; j++) {
				uint64_t k = pool_k[(size_t)r->who * ops * MC_SCAN_LIMIT + r->pos + j];

				ok = k >= r->key && (k - mc_key(0)) % 16 == 0 &&
				     pool_v[(size_t)r->who * ops * MC_SCAN_LIMIT + r->pos + j] &&
				     k <= mc_key(MC_KEYS - 1) &&
				     (!j || k > pool_k[(size_t)r->who * ops * MC_SCAN_LIMIT + r->pos + j - 1]);
			}
		}
		if (!ok && bad++ < 10)
			TH_LOG("thread %u op %u (%u) key %" PRIu64 ": returned %d (n %u, limit %u)",
			       r->who, (unsigned)(i % ops), r->op, r->key, r->ret, r->n, r->limit);
	}
	ASSERT_EQ(0, bad);

	/* per key: its operations, the scans' reads of it, and a final get */
	for (unsigned int k = 0; k < MC_KEYS; k++) {
		uint64_t v = 0, t0 = now_ns();
		int ret = get64(t, mc_key(k), &v);

		ASSERT_TRUE(ret == 0 || ret == -ENOENT) TH_LOG("final get: %d", ret);
		keys[k] = mc_key(k);
		finals[k] = (struct hop){ .t0 = t0, .t1 = now_ns(), .kind = H_GET,
					  .arg = ret ? 0 : v, .who = 8 };
	}
	bad = check_keys(_metadata, recs, nrec, pool_k, pool_v, (size_t)ops * MC_SCAN_LIMIT,
			 keys, finals, MC_KEYS, sh->t_start);
	EXPECT_EQ(0, bad) TH_LOG("%d key(s) with a history no sequential order explains", bad);
	ds_btree_close(t);
	munmap(m, bytes);
}

static void model_concurrent_body(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self)
{
	uint64_t addr;

	ASSERT_EQ(0, create_small(self, SMALL_NODE, 2, &addr));
	model_concurrent_on(_metadata, addr);
}

TEST_F_TIMEOUT(bt, model_concurrent, 600)
{
	model_concurrent_body(_metadata, self);
}

/* The same with byte-string keys (kenc: 19 to 61 bytes, long shared
 * prefixes) in 512-byte nodes. */
TEST_F_TIMEOUT(bt, str_model_concurrent, 600)
{
	key_fmt = 1;
	model_concurrent_body(_metadata, self);
}

/* One thread, many keys, in the tree at addr (256-byte nodes): each
 * result exactly the model's. */
static void model_sequential_on(struct __test_metadata *_metadata, uint64_t addr)
{
	enum { NK = 300, OPS = 3000 };
	static uint64_t model[NK];	/* 0: absent */
	uint64_t keys[64], vals[64], s = seed_for(1), v;
	struct ds_btree_stats st;
	struct ds_btree *t;
	size_t n, vlen;
	int ret;

	memset(model, 0, sizeof(model));	/* a test may run it twice */
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	for (int i = 0; i < OPS; i++) {
		unsigned k = rnd(&s) % NK, dice = rnd(&s) % 100;
		uint64_t key = 7 + 5 * (uint64_t)k;

		if (dice < 40) {
			v = rnd(&s) | 1;
			ASSERT_EQ(0, put64(t, key, v)) TH_LOG("op %d", i);
			model[k] = v;
		} else if (dice < 60) {
			ret = bt_del(t, key);
			ASSERT_EQ(model[k] ? 0 : -ENOENT, ret) TH_LOG("op %d: del %" PRIu64, i, key);
			model[k] = 0;
		} else if (dice < 90) {
			v = 0;
			vlen = 0;
			ret = bt_get(t, key, &v, 8, &vlen);
			ASSERT_EQ(model[k] ? 0 : -ENOENT, ret) TH_LOG("op %d: get %" PRIu64, i, key);
			if (!ret) {
				ASSERT_EQ(model[k], v);
				ASSERT_EQ(8, vlen);
			}
		} else {
			uint64_t start = rnd(&s) % (5 * NK + 20);
			size_t limit = 1 + rnd(&s) % 64, j = 0;

			ASSERT_EQ(0, bt_scan(t, start, limit, keys, vals, &n));
			for (unsigned m = 0; m < NK && j < limit; m++) {
				uint64_t mk = 7 + 5 * (uint64_t)m;

				if (mk < start || !model[m])
					continue;
				ASSERT_LT(j, n) TH_LOG("op %d: scan from %" PRIu64 " ends early", i, start);
				ASSERT_EQ(mk, keys[j]) TH_LOG("op %d: scan from %" PRIu64 " entry %zu",
							      i, start, j);
				ASSERT_EQ(model[m], vals[j]);
				j++;
			}
			ASSERT_EQ(j, n) TH_LOG("op %d: scan from %" PRIu64 " limit %zu", i, start, limit);
		}
	}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	EXPECT_LT(0, st.splits);
	/* a scan with vals NULL gives the keys alone */
	ASSERT_EQ(0, bt_scan(t, 0, 64, keys, NULL, &n));
	ds_btree_close(t);
}

static void model_sequential_body(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self)
{
	uint64_t addr;

	ASSERT_EQ(0, create_small(self, SMALL_NODE, 2, &addr));
	model_sequential_on(_metadata, addr);
}

TEST_F_TIMEOUT(bt, model_sequential, 300)
{
	model_sequential_body(_metadata, self);
}

/* The same with byte-string keys (kenc: 19 to 61 bytes, long shared
 * prefixes) in 512-byte nodes. */
TEST_F_TIMEOUT(bt, str_model_sequential, 300)
{
	key_fmt = 1;
	model_sequential_body(_metadata, self);
}

/* ---- structure ---- */

/* The whole tree in pages of 1000: at most max entries (-E2BIG past it). */
static int full_scan(struct ds_btree *t, uint64_t *keys, uint64_t *vals, size_t max, size_t *n)
{
	static uint64_t pk[1000], pv[1000];
	uint64_t start = 0;
	size_t got;
	int ret;

	*n = 0;
	for (;;) {
		ret = bt_scan(t, start, 1000, pk, pv, &got);
		if (ret)
			return ret;
		if (*n + got > max)
			return -E2BIG;
		memcpy(keys + *n, pk, got * 8);
		if (vals)
			memcpy(vals + *n, pv, got * 8);
		*n += got;
		if (got < 1000 || pk[got - 1] == UINT64_MAX)
			return 0;
		start = pk[got - 1] + 1;
	}
}

/*
 * Splits at every level: random keys into 256-byte nodes until the tree
 * is at least 4 levels high, every key checked; then every key deleted in
 * random order, merging down to an empty tree of height 1.  A second
 * compute node, its index cache warm from the tall tree, reads through it
 * all.
 */
static void structure_split_merge_body(struct __test_metadata *_metadata, FIXTURE_DATA(bt) *self)
{
	enum { MAX = 12000 };
	uint64_t *keys = calloc(MAX, 8), *sorted = calloc(MAX, 8), *got = calloc(MAX, 8);
	uint64_t *gv = calloc(MAX, 8), s = seed_for(2), addr, v;
	struct ds_btree_open_opts small_cache = { .cache_bytes = 16 * SMALL_NODE };
	struct ds_btree_info info, info2;
	struct ds_btree_stats st;
	struct ds_btree *t, *t2;
	size_t n = 0, cnt;

	ASSERT_NE(NULL, keys);
	ASSERT_NE(NULL, gv);
	ASSERT_EQ(0, create_small(self, SMALL_NODE, 2, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	/* node 2's cache: 16 nodes at most */
	ASSERT_EQ(0, ds_btree_open(2, addr, &small_cache, &t2));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	ASSERT_EQ(1, info.height);
	ASSERT_EQ(key_fmt ? STR_NODE : SMALL_NODE, info.node_size);
	ASSERT_EQ(key_fmt ? STR_KEY_MAX : 0, info.key_max);
	ASSERT_EQ(2, info.nsegs);
	ASSERT_EQ(2, info.clients);

	/* distinct random keys, 0 and UINT64_MAX among them */
	keys[n++] = 0;
	keys[n++] = UINT64_MAX;
	ASSERT_EQ(0, put64(t, 0, val_of(0)));
	ASSERT_EQ(0, put64(t, UINT64_MAX, val_of(UINT64_MAX)));
	do {
		for (int b = 0; b < 500; b++) {
			uint64_t k = rnd(&s) >> (rnd(&s) % 40);	/* dense and sparse */
			bool dup = false;

			for (size_t i = n > 600 ? n - 600 : 0; i < n && !dup; i++)
				dup = keys[i] == k;
			if (dup)
				continue;
			int ret = put64(t, k, val_of(k));

			ASSERT_EQ(0, ret) TH_LOG("put %zu", n);
			keys[n++] = k;
		}
		ASSERT_EQ(0, ds_btree_describe(t, &info));
	} while (info.height < 4 && n + 500 < MAX);
	ASSERT_LE(4, info.height) TH_LOG("%zu keys", n);
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("%zu keys: height %u, %" PRIu64 " nodes, %" PRIu64 " splits, %" PRIu64
	       " root changes", n, info.height, info.nodes, st.splits, st.root_changes);
	EXPECT_LE(info.height - 1, st.root_changes);
	/* 12 entries a node (byte strings: 28 slots at most): one split at
	 * least for each that many keys past the first */
	EXPECT_LE(n / (key_fmt ? 28 : 12) - 1, st.splits);
	/* each split allocated a node, each new root one more, all through
	 * this handle: "allocated so far" (ds.h) counts them */
	EXPECT_LE(1 + st.splits + st.root_changes, info.nodes);

	/* the random keys may repeat beyond the window: dedupe the list */
	memcpy(sorted, keys, n * 8);
	qsort(sorted, n, 8, cmp_u64);
	cnt = 0;
	for (size_t i = 0; i < n; i++)
		if (!cnt || sorted[cnt - 1] != sorted[i])
			sorted[cnt++] = sorted[i];
	memcpy(keys, sorted, cnt * 8);
	n = cnt;
	shuffle(keys, n, &s);

	/* every key, from both compute nodes; the whole tree in order */
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(0, get64(i % 2 ? t2 : t, keys[i], &v)) TH_LOG("key %" PRIu64, keys[i]);
		ASSERT_EQ(val_of(keys[i]), v);
	}
	ASSERT_EQ(0, full_scan(t2, got, gv, MAX, &cnt));
	ASSERT_EQ(n, cnt);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(sorted[i], got[i]) TH_LOG("entry %zu", i);
		ASSERT_EQ(val_of(sorted[i]), gv[i]);
	}
	ASSERT_EQ(0, ds_btree_describe(t2, &info2));
	EXPECT_LT(0, info2.cache_entries);
	EXPECT_EQ(16 * SMALL_NODE, info2.cache_limit);
	EXPECT_GE(info2.cache_limit, info2.cache_bytes);

	/* delete in random order; check now and then */
	ds_btree_stats_reset(t);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(0, bt_del(t, keys[i])) TH_LOG("del %zu: %" PRIu64, i, keys[i]);
		if (i % 500 == 250 || i + 1 == n) {
			for (size_t j = i + 1 - (i < 20 ? i : 20); j <= i; j++) {
				ASSERT_EQ(-ENOENT, get64(t2, keys[j], &v));
			}
			for (size_t j = i + 1; j < n && j < i + 40; j++) {
				ASSERT_EQ(0, get64(t2, keys[j], &v)) TH_LOG("key %" PRIu64, keys[j]);
				ASSERT_EQ(val_of(keys[j]), v);
			}
			ASSERT_EQ(0, full_scan(t, got, NULL, MAX, &cnt));
			ASSERT_EQ(n - i - 1, cnt);
		}
	}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	TH_LOG("deleted: height %u, %" PRIu64 " merges, %" PRIu64 " redistributions, %" PRIu64
	       " root changes", info.height, st.merges, st.redistributions, st.root_changes);
	EXPECT_LT(0, st.merges);
	EXPECT_LT(0, st.redistributions);
	EXPECT_EQ(1, info.height);
	ASSERT_EQ(0, bt_scan(t, 0, 10, got, gv, &cnt));
	EXPECT_EQ(0, cnt);
	ASSERT_EQ(0, bt_scan(t2, 0, 10, got, gv, &cnt));
	EXPECT_EQ(0, cnt);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(-ENOENT, get64(i % 2 ? t2 : t, keys[i], &v)) TH_LOG("key %" PRIu64, keys[i]);
	}
	EXPECT_EQ(-ENOENT, bt_del(t2, keys[0]));

	/* and it grows again, from the other node */
	for (uint64_t k = 0; k < 200; k++) {
		ASSERT_EQ(0, put64(t2, k * 3, val_of(k)));
	}
	for (uint64_t k = 0; k < 200; k++) {
		ASSERT_EQ(0, get64(t, k * 3, &v));
		ASSERT_EQ(val_of(k), v);
	}
	ds_btree_close(t2);
	ds_btree_close(t);
	free(keys);
	free(sorted);
	free(got);
	free(gv);
}

TEST_F_TIMEOUT(bt, structure_split_merge, 600)
{
	structure_split_merge_body(_metadata, self);
}

/* The same with byte-string keys (kenc: 19 to 61 bytes, long shared
 * prefixes) in 512-byte nodes. */
TEST_F_TIMEOUT(bt, str_structure_split_merge, 600)
{
	key_fmt = 1;
	structure_split_merge_body(_metadata, self);
}

/* keys 3, 6, 9 ...: index i is key 3 (i + 1) */
#define SC_KEYS	3000

struct sc_shared {
	struct ds_btree *t;
	const uint64_t *order;		/* key indexes in insertion order */
	size_t done;			/* puts returned */
	int scans;			/* scans begun */
	int stop;
	int err;
};

static void *sc_inserter(void *arg)
{
	struct sc_shared *sc = arg;

	for (size_t i = 0; i < SC_KEYS; i++) {
		uint64_t k = 3 * (sc->order[i] + 1);
		int ret = put64(sc->t, k, val_of(k));

		if (ret) {
			__atomic_store_n(&sc->err, ret, __ATOMIC_RELEASE);
			break;
		}
		__atomic_store_n(&sc->done, i + 1, __ATOMIC_RELEASE);
		/* every 150 keys, wait for a scan to begin: scans overlap the
		 * splits of the next keys */
		if (i % 150 == 149) {
			int seen = __atomic_load_n(&sc->scans, __ATOMIC_ACQUIRE);

			for (int w = 0; w < 60000 && __atomic_load_n(&sc->scans, __ATOMIC_ACQUIRE) == seen &&
			     !__atomic_load_n(&sc->err, __ATOMIC_ACQUIRE); w++)
				usleep(500);
		}
	}
	__atomic_store_n(&sc->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * One thread of node 1 inserts 3000 keys in random order into 256-byte
 * nodes while node 2 scans the whole key range again and again, in one
 * call or in pages of 7: each scan ascending, without duplicates, with
 * the right values, and holding every key whose put returned before the
 * scan began.
 */
TEST_F_TIMEOUT(bt, structure_scan_during_splits, 600)
{
	uint64_t *order = calloc(SC_KEYS, 8), *keys = calloc(SC_KEYS + 1, 8);
	uint64_t *vals = calloc(SC_KEYS + 1, 8), s = seed_for(3), addr;
	char *seen = calloc(SC_KEYS, 1);
	struct sc_shared sc = { 0 };
	struct ds_btree_stats st;
	struct ds_btree *t, *t2;
	int scans = 0, paged = 0;
	pthread_t th;
	bool last = false;

	ASSERT_NE(NULL, seen);
	for (size_t i = 0; i < SC_KEYS; i++)
		order[i] = i;
	shuffle(order, SC_KEYS, &s);
	ASSERT_EQ(0, create_small(self, SMALL_NODE, 2, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_open(2, addr, NULL, &t2));
	sc.t = t;
	sc.order = order;
	ASSERT_EQ(0, pthread_create(&th, NULL, sc_inserter, &sc));
	while (!last) {
		size_t before, n = 0, got;
		uint64_t start = 0;
		int ret = 0;

		last = __atomic_load_n(&sc.stop, __ATOMIC_ACQUIRE);
		before = __atomic_load_n(&sc.done, __ATOMIC_ACQUIRE);
		__atomic_add_fetch(&sc.scans, 1, __ATOMIC_RELEASE);
		memset(seen, 0, SC_KEYS);
		if (scans % 2 == 0) {
			ret = ds_btree_scan(t2, 0, DS_BTREE_SCAN_MAX, keys, vals, &n);
		} else {
			/* pages of 7, each from one past the last key */
			paged++;
			do {
				ret = ds_btree_scan(t2, start, 7, keys + n, vals + n, &got);
				if (ret || n + got > SC_KEYS)
					break;
				n += got;
				if (got)
					start = keys[n - 1] + 1;
			} while (got == 7);
		}
		scans++;
		if (ret || n > SC_KEYS) {
			__atomic_store_n(&sc.err, ret ? ret : -E2BIG, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
			ASSERT_EQ(0, ret) TH_LOG("scan %d", scans);
			ASSERT_GE(SC_KEYS, n);
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t k = keys[i];

			if (i && k <= keys[i - 1])
				__atomic_store_n(&sc.err, -EILSEQ, __ATOMIC_RELEASE);
			if (k % 3 || k < 3 || k > 3 * SC_KEYS || vals[i] != val_of(k)) {
				__atomic_store_n(&sc.err, -EBADMSG, __ATOMIC_RELEASE);
				continue;
			}
			seen[k / 3 - 1] = 1;
		}
		if (__atomic_load_n(&sc.err, __ATOMIC_ACQUIRE)) {
			pthread_join(th, NULL);
			for (size_t i = 0; i < n && i < 40; i++)
				TH_LOG("scan %d entry %zu: %" PRIu64 " = %#" PRIx64, scans, i, keys[i], vals[i]);
			ASSERT_EQ(0, sc.err) TH_LOG("scan %d of %zu entries (%s)", scans, n,
						    scans % 2 ? "one call" : "pages of 7");
		}
		for (size_t i = 0; i < before; i++) {
			if (seen[order[i]])
				continue;
			__atomic_store_n(&sc.err, -ENOENT, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
			ASSERT_TRUE(seen[order[i]])
				TH_LOG("scan %d (%s): key %" PRIu64 ", put #%zu of the %zu done before "
				       "it began, is missing (%zu entries)", scans,
				       scans % 2 ? "one call" : "pages of 7", 3 * (order[i] + 1), i,
				       before, n);
		}
		if (last) {
			ASSERT_EQ(SC_KEYS, n);
		}
	}
	pthread_join(th, NULL);
	ASSERT_EQ(0, sc.err);
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("%d scans (%d paged) across %" PRIu64 " splits", scans, paged, st.splits);
	EXPECT_LT(0, st.splits);
	ds_btree_close(t2);
	ds_btree_close(t);
	free(order);
	free(keys);
	free(vals);
	free(seen);
}

/* ---- crashes ---- */

#define CR_HOT		8
#define CR_ROUNDS	20	/* kills */
#define CR_KILLS_MAX	60	/* kills while no lock was taken over */
#define CR_GROWN_MAX	(1 << 12)	/* growing keys a round may record */
#define CR_LEASE_MS	200	/* the child's lease: what the parent waits out */
#define CR_PARENT_LEASE_MS 2000	/* the parent's: see the test */
#define CR_SPREAD	40	/* the child's puts before a kill: 1 .. this */
#define CR_EXTRA	26	/* parent's keys after the child's: >= 2 splits */

struct cr_shared {
	uint64_t ops;		/* puts returned */
	uint64_t grown;		/* growing keys whose put returned */
	uint64_t inflight;	/* the key of the put under way */
	int err;
};

static uint64_t cr_hot(unsigned j)
{
	return 100 + 10 * (uint64_t)j;
}

static uint64_t cr_grow(unsigned round, uint64_t j)
{
	return (1ull << 40) + ((uint64_t)round << 24) + j;
}

static uint64_t cr_parent_val(unsigned round, unsigned j)
{
	return 0xfeed000000000000ull | (uint64_t)round << 16 | j;
}

static void __attribute__((noreturn)) cr_child(uint64_t addr, struct cr_shared *sh,
					       unsigned round)
{
	struct ds_btree_open_opts o = { .lock_lease_ms = CR_LEASE_MS };
	struct ds_btree *t;
	int ret;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ret = ds_btree_open(2, addr, &o, &t);
	if (ret) {
		sh->err = ret;
		_exit(3);
	}
	for (uint64_t i = 0;; i++) {
		uint64_t key = i % 2 ? cr_hot(i / 2 % CR_HOT) : cr_grow(round, i / 2);
		uint64_t v = i % 2 ? i : val_of(key);

		__atomic_store_n(&sh->inflight, key, __ATOMIC_RELEASE);
		ret = put64(t, key, v);
		if (ret) {
			sh->err = ret;
			_exit(4);
		}
		if (i % 2 == 0)
			__atomic_store_n(&sh->grown, i / 2 + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&sh->ops, i + 1, __ATOMIC_RELEASE);
	}
}

/*
 * A compute node (a child process, lock lease 200 ms) puts in a tight loop
 * on 8 hot keys and on keys that keep splitting the rightmost leaf; it is
 * killed (SIGKILL) after a random number of puts (1 to 40), at a random
 * point of one of the next few, 20 times.  After each kill, the
 * parent's puts and gets on those keys, and on keys next to the child's,
 * must succeed: a lock the child held is taken over once its lease ran
 * out.  Every key the child saw stored must be there.
 *
 * A put holds a leaf lock for about half of its round trips (lock+read,
 * then write+unlock), so about half of the kills leave a lock behind (a
 * quarter to a half in the runs): lock_steals > 0 is required, and while
 * the parent has taken over no lock the kills go on past 20, up to 60, so
 * that a run without a single steal has a chance near (3/4)^60, 3e-8,
 * when the locks are recovered.
 *
 * The child's short lease is the point, but a live client with a short
 * lease races it: a child whose heartbeat thread is starved for four
 * leases has its put refused with -ESTALE (its writes wait for a fresh
 * heartbeat, then give up) and ends by itself.  That is legal: such a
 * round counts as no kill and is checked alike (every key it saw stored
 * there, its last put there or not), and another round is run (twice
 * as many rounds as kills at most).  The parent, which must not fail, has a lease of 2 s: its writes
 * wait for a heartbeat only after 1.5 s without one and fail after 8 s.
 * Nobody contends for its locks, so that lease decides nothing else.
 */
TEST_F_TIMEOUT(bt, crash, 600)
{
	struct cr_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct ds_btree_open_opts o = { .lock_lease_ms = CR_PARENT_LEASE_MS };
	uint64_t *present = calloc(2 * CR_KILLS_MAX * (CR_GROWN_MAX + CR_EXTRA) + CR_HOT, 8);
	uint64_t s = seed_for(4), addr, v;
	size_t npresent = 0, n;
	struct ds_btree_stats st;
	struct ds_btree *t;
	unsigned int kills = 0, fenced = 0;
	uint64_t *all;

	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_NE(NULL, present);
	ASSERT_EQ(0, create_small(self, SMALL_NODE, 2, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, &o, &t));
	for (unsigned j = 0; j < CR_HOT; j++) {
		ASSERT_EQ(0, put64(t, cr_hot(j), 1));
	}

	st.lock_steals = 0;
	for (unsigned round = 0;
	     kills < CR_ROUNDS || (!st.lock_steals && kills < CR_KILLS_MAX); round++) {
		uint64_t grown, inflight, target = 1 + rnd(&s) % CR_SPREAD;
		bool ended = false;
		int status, ret;
		pid_t pid;

		ASSERT_GT(2 * CR_KILLS_MAX, round)
			TH_LOG("%u of %u rounds had the child's heartbeat starved", fenced, round);
		memset(sh, 0, sizeof(*sh));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			cr_child(addr, sh, round);
		/* the child is at work: let it do target puts (polled; 300000
		 * polls, a minute at least, are a hang) */
		for (int w = 0; w < 300000 && __atomic_load_n(&sh->ops, __ATOMIC_ACQUIRE) < target;
		     w++) {
			if (waitpid(pid, &status, WNOHANG) == pid) {
				ended = true;
				break;
			}
			usleep(200);
		}
		if (!ended) {
			ASSERT_LE(target, sh->ops)
				TH_LOG("round %u: the child did %" PRIu64 " of %" PRIu64 " puts: a hang",
				       round, sh->ops, target);
			/* somewhere in the next few puts: the kill's place in a
			 * put, and so whether it leaves a lock, at random (the
			 * count of puts alone would set it soon after a put
			 * returned, before the next one locks) */
			usleep(rnd(&s) % 2000);
			ASSERT_EQ(0, kill(pid, SIGKILL));
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 4 && sh->err == -ESTALE) {
			fenced++;
			TH_LOG("round %u: the child's heartbeat was starved: -ESTALE after %" PRIu64
			       " puts", round, sh->ops);
		} else {
			ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
				TH_LOG("round %u: the child ended by itself (%#x, error %d)", round,
				       status, sh->err);
			kills++;
		}
		grown = __atomic_load_n(&sh->grown, __ATOMIC_ACQUIRE);
		inflight = __atomic_load_n(&sh->inflight, __ATOMIC_ACQUIRE);

		/* the hot keys' leaf, the rightmost leaf and its parent */
		for (unsigned j = 0; j < CR_HOT; j++) {
			ret = put64(t, cr_hot(j), cr_parent_val(round, j));
			ASSERT_EQ(0, ret) TH_LOG("round %u: put of hot key %u", round, j);
		}
		for (unsigned e = 0; e < CR_EXTRA; e++) {
			uint64_t k = cr_grow(round, (1 << 20) + e);

			ASSERT_EQ(0, put64(t, k, val_of(k))) TH_LOG("round %u", round);
			present[npresent++] = k;
		}
		for (unsigned j = 0; j < CR_HOT; j++) {
			ASSERT_EQ(0, get64(t, cr_hot(j), &v));
			ASSERT_EQ(cr_parent_val(round, j), v);
		}
		ASSERT_GT(CR_GROWN_MAX, grown);
		for (uint64_t j = 0; j <= grown; j++) {
			uint64_t k = cr_grow(round, j);
			int r = get64(t, k, &v);

			/* the put killed under way may or may not have landed */
			if (j == grown && k == inflight && r == -ENOENT)
				continue;
			if (j == grown && k != inflight) {
				ASSERT_EQ(-ENOENT, r) TH_LOG("round %u: a key never put", round);
				continue;
			}
			ASSERT_EQ(0, r) TH_LOG("round %u: grown key %" PRIu64 " of %" PRIu64, round, j, grown);
			ASSERT_EQ(val_of(k), v);
			present[npresent++] = k;
		}
		ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("%u kills (%u rounds fenced): %" PRIu64 " lock steals, %" PRIu64
	       " lock retries, %zu keys", kills, fenced, st.lock_steals, st.lock_retries,
	       npresent + CR_HOT);
	EXPECT_LT(0, st.lock_steals);

	/* the whole tree: exactly the keys known to be there */
	for (unsigned j = 0; j < CR_HOT; j++)
		present[npresent++] = cr_hot(j);
	qsort(present, npresent, 8, cmp_u64);
	all = calloc(npresent + 1, 8);
	ASSERT_NE(NULL, all);
	ASSERT_EQ(0, full_scan(t, all, NULL, npresent + 1, &n));
	ASSERT_EQ(npresent, n);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(present[i], all[i]);
		ASSERT_EQ(0, get64(t, all[i], &v));
	}
	ds_btree_close(t);
	free(all);
	free(present);
	munmap(sh, sizeof(*sh));
}

/* ---- corrupt images ---- */

static uint16_t rd16(const uint8_t *p, size_t off)
{
	uint16_t v;

	memcpy(&v, p + off, 2);
	return v;
}

static uint32_t rd32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, 8);
	return v;
}

static void wr64(uint8_t *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, 8);
}

static size_t sealed_bytes(const uint8_t *img, uint32_t size)
{
	size_t n = NH_SIZE - NH_SUM_FROM + 16 * (size_t)rd16(img, NH_COUNT);

	return n < size - NH_SUM_FROM ? n : size - NH_SUM_FROM;
}

static uint64_t image_sum(const uint8_t *img, uint32_t size)
{
	return XXH64(img + NH_SUM_FROM, sealed_bytes(img, size), 0);
}

/* A valid sum (over the image's bytes only, for a count too big) */
static void reseal(uint8_t *img, uint32_t size)
{
	wr64(img, NH_SUM, image_sum(img, size));
}

/* Write an image back, all but its lock word. */
static int put_image(struct ds_xfer *x, uint64_t node, const uint8_t *img, uint32_t size)
{
	return ds_write(x, node + NH_SUM, img + NH_SUM, size - NH_SUM);
}

/* get, put, scan and del of key all fail with want: not a crash, a hang
 * or a value. */
static void expect_all_fail(struct __test_metadata *_metadata, struct ds_btree *t,
			    uint64_t key, int want, const char *what)
{
	uint64_t k[4], v;
	size_t n;

	EXPECT_EQ(want, get64(t, key, &v)) TH_LOG("%s: get", what);
	EXPECT_EQ(want, put64(t, key, 5)) TH_LOG("%s: put", what);
	EXPECT_EQ(want, ds_btree_scan(t, key, 4, k, NULL, &n)) TH_LOG("%s: scan", what);
	EXPECT_EQ(want, ds_btree_del(t, key)) TH_LOG("%s: del", what);
}

static void expect_intact(struct __test_metadata *_metadata, struct ds_btree *t,
			  uint64_t nkeys, const char *what)
{
	uint64_t v;

	for (uint64_t k = 1; k <= nkeys; k++) {
		int ret = get64(t, k, &v);

		EXPECT_EQ(0, ret) TH_LOG("%s: key %" PRIu64, what, k);
		if (!ret) {
			EXPECT_EQ(val_of(k), v) TH_LOG("%s: key %" PRIu64, what, k);
		}
	}
}

/*
 * A root leaf damaged in remote memory: a flipped bit in an entry or in
 * the version (a bad sum) makes every operation on it fail with -EIO
 * after retries, counted in the stats, and leaves no lock behind: mended,
 * the tree works again.  A count over the capacity, and images with a
 * valid sum but impossible contents (inverted fences, no magic), are
 * refused too.
 */
TEST_F_TIMEOUT(bt, corrupt_leaf, 300)
{
	const uint32_t ns = 512;
	struct ds_btree_open_opts o = { .flags = DS_BTREE_NO_CACHE };
	uint8_t orig[512], img[512];
	struct ds_btree_stats st;
	struct ds_btree_info info;
	struct ds_btree *t;
	struct ds_xfer *x;
	uint64_t addr, root;

	ASSERT_EQ(0, create_small(self, ns, 2, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, &o, &t));
	for (uint64_t k = 1; k <= 5; k++) {
		ASSERT_EQ(0, put64(t, k, val_of(k)));
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	ASSERT_EQ(1, info.height);
	ASSERT_EQ(ns, info.node_size);
	root = info.root;
	ASSERT_EQ(0, ds_xfer_open(1, &x));
	ASSERT_EQ(0, ds_read(x, root, orig, ns));
	/* the layout this test hard-codes (layout.hpp) */
	ASSERT_EQ(NODE_MAGIC, rd32(orig, NH_MAGIC));
	ASSERT_EQ(5, rd16(orig, NH_COUNT));
	ASSERT_EQ(0, orig[NH_LEVEL]);
	ASSERT_EQ(image_sum(orig, ns), rd64(orig, NH_SUM));

	/* a bit of entry 2's value (key 3): the sum */
	memcpy(img, orig, ns);
	img[NH_SIZE + 2 * 16 + 8] ^= 0x04;
	ASSERT_EQ(0, put_image(x, root, img, ns));
	ds_btree_stats_reset(t);
	expect_all_fail(_metadata, t, 3, -EIO, "flipped value bit");
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	EXPECT_LT(0, st.corrupt);
	EXPECT_LT(0, st.read_retries);
	TH_LOG("%" PRIu64 " corrupt, %" PRIu64 " read retries", st.corrupt, st.read_retries);
	/* mended: every key, and puts take the lock again */
	ASSERT_EQ(0, put_image(x, root, orig, ns));
	expect_intact(_metadata, t, 5, "mended");
	ASSERT_EQ(0, put64(t, 6, val_of(6)));
	expect_intact(_metadata, t, 6, "after a put");

	/* the version: covered by the sum */
	ASSERT_EQ(0, ds_read(x, root, orig, ns));
	memcpy(img, orig, ns);
	img[NH_VERSION] ^= 0x01;
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 2, -EIO, "bad version");
	ASSERT_EQ(0, put_image(x, root, orig, ns));
	expect_intact(_metadata, t, 6, "mended version");

	/* a count past the capacity */
	memcpy(img, orig, ns);
	img[NH_COUNT] = 0xff;
	img[NH_COUNT + 1] = 0x7f;
	reseal(img, ns);
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 4, -EIO, "count over capacity");
	/* a valid sum over inverted fences */
	memcpy(img, orig, ns);
	img[NH_FLAGS] &= ~(NF_LOW_INF | NF_HIGH_INF);
	wr64(img, NH_LOW, 10);
	wr64(img, NH_HIGH, 5);
	reseal(img, ns);
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 1, -EIO, "fences inverted");
	/* magic gone (memory that never held a node) */
	memcpy(img, orig, ns);
	memset(img + NH_MAGIC, 0, 4);
	reseal(img, ns);
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 1, -EIO, "no magic");

	ASSERT_EQ(0, put_image(x, root, orig, ns));
	expect_intact(_metadata, t, 6, "mended at last");
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	EXPECT_LE(5, st.corrupt);
	ds_xfer_close(x);
	ds_btree_close(t);
}

/* get(key) in a child process, bounded: 0 or the error, -ETIMEDOUT when
 * it did not end within `seconds` (a loop), -ECHILD when it crashed. */
static int get_bounded(uint64_t addr, const struct ds_btree_open_opts *o, uint64_t key,
		       int seconds, int *sig)
{
	int *res = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status, ret = -ETIMEDOUT;
	pid_t pid;

	if (res == MAP_FAILED)
		return -ENOMEM;
	*sig = 0;
	*res = 1;
	pid = fork();
	if (pid == 0) {
		struct ds_btree *t;
		uint64_t v;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		*res = ds_btree_open(1, addr, o, &t);
		if (!*res) {
			*res = get64(t, key, &v);
			ds_btree_close(t);
		}
		_exit(0);
	}
	for (int i = 0; i < seconds * 20; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (WIFSIGNALED(status)) {
				*sig = WTERMSIG(status);
				ret = -ECHILD;
			} else {
				ret = *res;
			}
			pid = 0;
			break;
		}
		usleep(50000);
	}
	if (pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	munmap(res, sizeof(int));
	return ret;
}

/*
 * Pointers in damaged images are never followed blindly: an internal
 * root whose child pointer names the superblock, or the root leaf's
 * sibling naming a node nobody serves or looping back to itself (images
 * with valid sums), end in an error; nothing crashes or spins.
 */
TEST_F_TIMEOUT(bt, corrupt_pointers, 600)
{
	const uint32_t ns = 512;	/* 28 entries */
	struct ds_btree_open_opts o = { .flags = DS_BTREE_NO_CACHE };
	uint8_t orig[512], img[512];
	struct ds_btree_info info;
	struct ds_btree *t;
	struct ds_xfer *x;
	uint64_t addr, root, leaf0, v, t0;
	int ret, sig;

	ASSERT_EQ(0, create_small(self, ns, 2, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, &o, &t));
	ASSERT_EQ(0, ds_xfer_open(1, &x));

	/* a root leaf: its sibling pointer, with a high fence below key 4 */
	for (uint64_t k = 1; k <= 5; k++) {
		ASSERT_EQ(0, put64(t, k, val_of(k)));
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	root = info.root;
	ASSERT_EQ(0, ds_read(x, root, orig, ns));
	ASSERT_EQ(NODE_MAGIC, rd32(orig, NH_MAGIC));
	const uint64_t wild[] = {
		DSMEM_GADDR(9, 1, 4096),	/* a node no one is connected to */
		self->seg[0],			/* the superblock: not a node */
		self->seg[1] + 5,		/* misaligned, inside a segment */
		root,				/* itself: a loop */
	};
	for (size_t i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
		memcpy(img, orig, ns);
		img[NH_COUNT] = 3;		/* keys 1, 2, 3 below high = 4 */
		img[NH_COUNT + 1] = 0;
		memset(img + NH_SIZE + 3 * 16, 0, 2 * 16);
		img[NH_FLAGS] &= ~NF_HIGH_INF;
		wr64(img, NH_HIGH, 4);
		wr64(img, NH_SIBLING, wild[i]);
		reseal(img, ns);
		ASSERT_EQ(0, put_image(x, root, img, ns));
		t0 = now_ns();
		ret = get_bounded(addr, &o, 5, 240, &sig);
		TH_LOG("sibling %#" PRIx64 ": %d after %.1f s", wild[i], ret, (now_ns() - t0) / 1e9);
		EXPECT_NE(-ETIMEDOUT, ret) TH_LOG("sibling %#" PRIx64 ": get spun for 240 s", wild[i]);
		EXPECT_NE(-ECHILD, ret) TH_LOG("sibling %#" PRIx64 ": get died of signal %d",
					       wild[i], sig);
		EXPECT_GT(0, ret) TH_LOG("sibling %#" PRIx64 ": get returned %d", wild[i], ret);
		/* keys the node covers are still there */
		EXPECT_EQ(0, get_bounded(addr, &o, 2, 240, &sig)) TH_LOG("sibling %#" PRIx64, wild[i]);
	}
	ASSERT_EQ(0, put_image(x, root, orig, ns));
	expect_intact(_metadata, t, 5, "leaf mended");

	/* an internal root: its child pointers */
	for (uint64_t k = 6; k <= 100; k++) {
		ASSERT_EQ(0, put64(t, k, val_of(k)));
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	ASSERT_EQ(2, info.height);
	root = info.root;
	ASSERT_EQ(0, ds_read(x, root, orig, ns));
	ASSERT_EQ(1, orig[NH_LEVEL]);
	ASSERT_LT(0, rd16(orig, NH_COUNT));
	memcpy(&leaf0, orig + NH_LEFTMOST, 8);
	ASSERT_NE(0, leaf0);

	/* a flipped bit of the leftmost pointer: the sum */
	memcpy(img, orig, ns);
	img[NH_LEFTMOST + 2] ^= 0x10;
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 1, -EIO, "leftmost pointer flipped");
	/* a valid sum over separators out of order, or a null child */
	ASSERT_LE(2, rd16(orig, NH_COUNT));
	memcpy(img, orig, ns);
	memcpy(img + NH_SIZE, orig + NH_SIZE + 16, 16);
	memcpy(img + NH_SIZE + 16, orig + NH_SIZE, 16);
	reseal(img, ns);
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 1, -EIO, "separators out of order");
	memcpy(img, orig, ns);
	wr64(img, NH_SIZE + 8, 0);
	reseal(img, ns);
	ASSERT_EQ(0, put_image(x, root, img, ns));
	expect_all_fail(_metadata, t, 1, -EIO, "null child");
	/* a valid sum, and the leftmost child somewhere no node is */
	const struct {
		uint64_t child;
		const char *what;
	} wild_child[] = {
		{ self->seg[0], "the superblock" },
		{ self->seg[1] + SEG_SIZE + 4096, "past the segment's end" },
		{ root, "the root itself: a cycle" },
	};
	for (size_t i = 0; i < sizeof(wild_child) / sizeof(wild_child[0]); i++) {
		memcpy(img, orig, ns);
		wr64(img, NH_LEFTMOST, wild_child[i].child);
		reseal(img, ns);
		ASSERT_EQ(0, put_image(x, root, img, ns));
		t0 = now_ns();
		ret = get_bounded(addr, &o, 1, 240, &sig);
		TH_LOG("leftmost %s: %d after %.1f s", wild_child[i].what, ret,
		       (now_ns() - t0) / 1e9);
		/* refused as corrupt, never followed, never a hang */
		EXPECT_EQ(-EIO, ret) TH_LOG("leftmost child %s: signal %d", wild_child[i].what, sig);
	}

	ASSERT_EQ(0, put_image(x, root, orig, ns));
	expect_intact(_metadata, t, 100, "root mended");
	ASSERT_EQ(0, get64(t, 100, &v));
	ds_xfer_close(x);
	ds_btree_close(t);
}

/* ---- bad input ---- */

TEST_F_TIMEOUT(bt, bad_input, 300)
{
	struct ds_btree_create_opts co = { 0 };
	uint64_t tiny, mid, fresh, hidden, addr, a2, segs[DS_BTREE_SEGS_MAX + 1], v, k[2];
	uint8_t big[DS_BTREE_VALUE_MAX + 1] = { 0 };
	uint8_t four[8] = { 0, 0, 0, 0, 0xaa, 0xaa, 0xaa, 0xaa };
	uint64_t *many = calloc(DS_BTREE_SCAN_MAX, 8);
	struct ds_btree *t;
	size_t n, vlen;
	int ret;

	ASSERT_EQ(0, extra_seg(_metadata, self, 3, 64 << 10, true, &tiny));
	ASSERT_EQ(0, extra_seg(_metadata, self, 4, 8 << 20, true, &mid));
	ASSERT_EQ(0, extra_seg(_metadata, self, 3, 1 << 20, true, &fresh));
	ASSERT_EQ(0, extra_seg(_metadata, self, 4, 1 << 20, false, &hidden));

	/* too small for any node; too small for a seed region */
	EXPECT_EQ(-ENOSPC, ds_btree_create(1, &tiny, 1, &co, &addr));
	co.layout = DS_BTREE_SEED;
	EXPECT_EQ(-ENOSPC, ds_btree_create(1, &mid, 1, &co, &addr));
	segs[0] = self->seg[0];
	segs[1] = mid;
	EXPECT_EQ(-ENOSPC, ds_btree_create(1, segs, 2, &co, &addr));
	co.layout = DS_BTREE_GENERAL;

	/* options */
	for (uint32_t bad_ns = 0, i = 0; i < 5; i++) {
		const uint32_t sizes[] = { 100, 128, 300, 1000, 8192 };

		bad_ns = sizes[i];
		co.node_size = bad_ns;
		EXPECT_EQ(-EINVAL, ds_btree_create(1, self->seg, 2, &co, &addr))
			TH_LOG("node size %u", bad_ns);
	}
	co.node_size = 0;
	co.value_size = DS_BTREE_VALUE_MAX + 1;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, self->seg, 2, &co, &addr));
	co.value_size = 0;
	co.layout = 7;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, self->seg, 2, &co, &addr));
	co.layout = DS_BTREE_GENERAL;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, self->seg, 0, &co, &addr));
	for (int i = 0; i <= DS_BTREE_SEGS_MAX; i++)
		segs[i] = self->seg[i % 2];
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, DS_BTREE_SEGS_MAX + 1, &co, &addr));

	/* a segment node 1 was not granted: an error, not a hang */
	ret = ds_btree_create(1, &hidden, 1, &co, &addr);
	EXPECT_GT(0, ret);
	TH_LOG("create over a segment not granted: %d (%s)", ret, strerror(-ret));
	segs[0] = self->seg[0];
	segs[1] = hidden;
	ret = ds_btree_create(1, segs, 2, &co, &addr);
	EXPECT_GT(0, ret) TH_LOG("one of two segments not granted");
	/* (a create that failed leaves no tree behind: seg[0] is used below) */
	ret = ds_btree_open(1, hidden, NULL, &t);
	EXPECT_GT(0, ret);
	/* a node that does not exist, a memory node nobody connects to */
	EXPECT_GT(0, ds_btree_create(9, self->seg, 2, &co, &addr));
	segs[1] = DSMEM_GADDR(9, 1, 0);
	EXPECT_GT(0, ds_btree_create(1, segs, 2, &co, &addr));

	/* open options out of range, refused before anything is read */
	struct ds_btree_open_opts bad = { .lock_lease_ms = 19 };
	EXPECT_EQ(-EINVAL, ds_btree_open(1, self->seg[0], &bad, &t));
	bad.lock_lease_ms = 600001;
	EXPECT_EQ(-EINVAL, ds_btree_open(1, self->seg[0], &bad, &t));
	bad = (struct ds_btree_open_opts){ .flags = 0x80 };
	EXPECT_EQ(-EINVAL, ds_btree_open(1, self->seg[0], &bad, &t));
	bad = (struct ds_btree_open_opts){ .reserved = { 1 } };
	EXPECT_EQ(-EINVAL, ds_btree_open(1, self->seg[0], &bad, &t));
	/* a tree is named by a segment's start, not a place inside it */
	EXPECT_EQ(-EINVAL, ds_btree_open(1, self->seg[0] + 4096, NULL, &t));
	EXPECT_EQ(-EINVAL, ds_btree_drop(1, self->seg[0] + 4096));

	/* nothing there; then a tree, once */
	EXPECT_EQ(-ENOENT, ds_btree_open(1, fresh, NULL, &t));
	ASSERT_EQ(0, ds_btree_create(1, self->seg, 2, &co, &addr))
		TH_LOG("after creates over these segments failed");
	EXPECT_EQ(addr, self->seg[0]);
	EXPECT_EQ(-EEXIST, ds_btree_create(1, self->seg, 2, &co, &a2));
	EXPECT_EQ(-EEXIST, ds_btree_create(2, self->seg, 1, &co, &a2));

	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	EXPECT_EQ(-EINVAL, ds_btree_put(t, 1, big, 9));
	EXPECT_EQ(-EINVAL, ds_btree_put(t, 1, big, sizeof(big)));
	EXPECT_EQ(-ENOENT, get64(t, 1, &v));
	EXPECT_EQ(-ENOENT, ds_btree_del(t, 1));
	EXPECT_EQ(-EINVAL, ds_btree_scan(t, 0, 0, k, NULL, &n));
	EXPECT_EQ(-EINVAL, ds_btree_scan(t, 0, DS_BTREE_SCAN_MAX + 1, k, NULL, &n));
	ASSERT_NE(NULL, many);
	EXPECT_EQ(0, ds_btree_scan(t, 0, DS_BTREE_SCAN_MAX, many, NULL, &n));
	EXPECT_EQ(0, n);
	/* get copies what fits and says how much there was */
	ASSERT_EQ(0, put64(t, 1, 0x1122334455667788ull));
	vlen = 0;
	ASSERT_EQ(0, ds_btree_get(t, 1, four, 4, &vlen));
	EXPECT_EQ(8, vlen);
	EXPECT_EQ(0x55667788u, rd32(four, 0));
	EXPECT_EQ(0xaaaaaaaau, rd32(four, 4));
	EXPECT_EQ(0, ds_btree_get(t, 1, four, 4, NULL));
	/* open here, its heartbeat moving: not to be dropped */
	EXPECT_EQ(-EBUSY, ds_btree_drop(2, addr));
	ds_btree_close(t);

	/* dropped: gone for opens */
	EXPECT_EQ(0, ds_btree_drop(1, addr));
	EXPECT_EQ(-ENOENT, ds_btree_open(1, addr, NULL, &t));
	EXPECT_EQ(-ENOENT, ds_btree_open(2, addr, NULL, &t));
	free(many);
}

/* ---- out-of-line values, the seed layout ---- */

static void fill_val(uint8_t *p, size_t n, uint64_t key, unsigned gen)
{
	uint64_t s = key * 31 + gen + 1;

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd(&s) >> 56);
}

/*
 * Values of 0 to 100 bytes out of line: each read back whole, from the
 * other compute node, truncated to the buffer with its size told, after
 * updates that change its size, and through a scan.
 */
TEST_F_TIMEOUT(bt, values_out_of_line, 300)
{
	enum { VS = 100, NK = 300 };
	struct ds_btree_create_opts co = { .node_size = SMALL_NODE, .value_size = VS };
	static uint8_t vals[NK * VS];
	uint8_t buf[VS + 8], want[VS];
	struct ds_btree_info info;
	uint64_t addr, keys[NK];
	struct ds_btree *t, *t2;
	unsigned gen[NK] = { 0 };
	size_t n, vlen;

	ASSERT_EQ(0, ds_btree_create(1, self->seg, 2, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_open(2, addr, NULL, &t2));
	ASSERT_EQ(0, ds_btree_describe(t2, &info));
	EXPECT_EQ(VS, info.value_size);
	for (uint64_t k = 0; k < NK; k++) {
		fill_val(want, k % (VS + 1), k, 0);
		ASSERT_EQ(0, ds_btree_put(t, k, want, k % (VS + 1))) TH_LOG("key %" PRIu64, k);
	}
	EXPECT_EQ(-EINVAL, ds_btree_put(t, 1, want, VS + 1));
	/* half of them again, with other sizes */
	for (uint64_t k = 0; k < NK; k += 2) {
		gen[k] = 1;
		fill_val(want, (k * 7) % (VS + 1), k, 1);
		ASSERT_EQ(0, ds_btree_put(t2, k, want, (k * 7) % (VS + 1)));
	}
	for (uint64_t k = 0; k < NK; k++) {
		size_t len = gen[k] ? (k * 7) % (VS + 1) : k % (VS + 1);

		fill_val(want, len, k, gen[k]);
		memset(buf, 0xee, sizeof(buf));
		vlen = 12345;
		ASSERT_EQ(0, ds_btree_get(k % 2 ? t : t2, k, buf, VS, &vlen)) TH_LOG("key %" PRIu64, k);
		ASSERT_EQ(len, vlen) TH_LOG("key %" PRIu64, k);
		ASSERT_EQ(0, memcmp(buf, want, len)) TH_LOG("key %" PRIu64, k);
		/* a short buffer: what fits, nothing past it */
		memset(buf, 0xee, sizeof(buf));
		ASSERT_EQ(0, ds_btree_get(t, k, buf, 10, &vlen));
		ASSERT_EQ(len, vlen);
		ASSERT_EQ(0, memcmp(buf, want, len < 10 ? len : 10));
		for (size_t i = len < 10 ? len : 10; i < sizeof(buf); i++) {
			ASSERT_EQ(0xee, buf[i]) TH_LOG("key %" PRIu64 " byte %zu", k, i);
		}
	}
	ASSERT_EQ(0, ds_btree_scan(t2, 0, NK, keys, vals, &n));
	ASSERT_EQ(NK, n);
	for (uint64_t k = 0; k < NK; k++) {
		size_t len = gen[k] ? (k * 7) % (VS + 1) : k % (VS + 1);

		ASSERT_EQ(k, keys[k]);
		fill_val(want, len, k, gen[k]);
		ASSERT_EQ(0, memcmp(vals + k * VS, want, len)) TH_LOG("key %" PRIu64, k);
	}
	for (uint64_t k = 0; k < NK; k += 3) {
		ASSERT_EQ(0, ds_btree_del(t, k));
	}
	for (uint64_t k = 0; k < NK; k++) {
		int ret = ds_btree_get(t2, k, buf, VS, &vlen);

		ASSERT_EQ(k % 3 ? 0 : -ENOENT, ret) TH_LOG("key %" PRIu64, k);
	}
	ds_btree_close(t2);
	ds_btree_close(t);
}

/* Where a tree's nodes are, by reading them in remote memory. */
struct placement {
	uint64_t nodes[2];	/* reachable nodes in segment 0, 1 */
	uint64_t leaves[2];
	uint64_t stray;		/* outside the segments' node space */
};

static int walk_nodes(struct ds_xfer *x, uint64_t node, uint32_t ns,
		      const struct ds_btree_info *info, int depth, struct placement *w)
{
	uint8_t img[4096];
	int s, ret;

	if (ns > sizeof(img) || depth < 0)
		return -EINVAL;
	for (s = 0; s < 2; s++)
		if (node >= info->segs[s] + (64 << 10) &&
		    node + ns <= info->segs[s] + info->seg_size[s])
			break;
	if (s == 2) {
		w->stray++;
		return 0;
	}
	ret = ds_read(x, node, img, ns);
	if (ret)
		return ret;
	if (rd32(img, NH_MAGIC) != NODE_MAGIC || rd64(img, NH_SUM) != image_sum(img, ns))
		return -EIO;
	w->nodes[s]++;
	if (!img[NH_LEVEL]) {
		w->leaves[s]++;
		return 0;
	}
	ret = walk_nodes(x, rd64(img, NH_LEFTMOST), ns, info, depth - 1, w);
	for (uint16_t i = 0; !ret && i < rd16(img, NH_COUNT); i++)
		ret = walk_nodes(x, rd64(img, NH_SIZE + 16 * (size_t)i + 8), ns, info,
				 depth - 1, w);
	return ret;
}

/* The seed's layout: per-server regions, nodes by node_id % 2. */
TEST_F_TIMEOUT(bt, seed_layout, 300)
{
	struct ds_btree_create_opts co = { .layout = DS_BTREE_SEED, .node_size = SMALL_NODE };
	uint64_t addr, v, s = seed_for(5), *keys = calloc(2000, 8), got[2000];
	struct ds_btree_info info;
	struct ds_btree *t, *t2;
	struct placement w = {};
	struct ds_xfer *x;
	size_t n;

	ASSERT_NE(NULL, keys);
	ASSERT_EQ(0, ds_btree_create(1, self->seg, 2, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_open(2, addr, NULL, &t2));
	for (int i = 0; i < 2000; i++)
		keys[i] = 2 * (uint64_t)i + 1;
	shuffle(keys, 2000, &s);
	for (int i = 0; i < 2000; i++) {
		ASSERT_EQ(0, put64(i % 2 ? t : t2, keys[i], val_of(keys[i])));
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_EQ(DS_BTREE_SEED, info.layout);
	EXPECT_LE(3, info.height);
	/* both servers hold nodes: walk the tree in remote memory */
	ASSERT_EQ(2, info.nsegs);
	ASSERT_EQ(0, ds_xfer_open(1, &x));
	ASSERT_EQ(0, walk_nodes(x, info.root & ~63ULL, info.node_size, &info, 8, &w));
	ds_xfer_close(x);
	TH_LOG("nodes %" PRIu64 " + %" PRIu64 ", leaves %" PRIu64 " + %" PRIu64
	       ", %" PRIu64 " misplaced", w.nodes[0], w.nodes[1], w.leaves[0],
	       w.leaves[1], w.stray);
	EXPECT_EQ(0, w.stray);
	EXPECT_LE(info.height, w.nodes[0] + w.nodes[1]);
	/* nodes by node_id % 2: about half each, leaves too */
	EXPECT_LE(w.nodes[0] + w.nodes[1], 4 * w.nodes[0]);
	EXPECT_LE(w.nodes[0] + w.nodes[1], 4 * w.nodes[1]);
	EXPECT_LE(w.leaves[0] + w.leaves[1], 4 * w.leaves[0]);
	EXPECT_LE(w.leaves[0] + w.leaves[1], 4 * w.leaves[1]);
	for (int i = 0; i < 2000; i++) {
		ASSERT_EQ(0, get64(i % 2 ? t2 : t, keys[i], &v));
		ASSERT_EQ(val_of(keys[i]), v);
	}
	ASSERT_EQ(0, ds_btree_scan(t, 0, 2000, got, NULL, &n));
	ASSERT_EQ(2000, n);
	for (int i = 0; i < 2000; i++) {
		ASSERT_EQ(2 * (uint64_t)i + 1, got[i]);
	}
	ds_btree_close(t2);
	ds_btree_close(t);
	free(keys);
}



/*
 * Byte-string keys through the API: their order (a prefix first, NUL and
 * 0xff bytes compared as bytes), keys of 1 and key_max bytes, the
 * refusals, one READ per warm lookup whatever the key's length, and the
 * formats: a byte-string tree is format 2, an integer-key tree still 1,
 * and the byte-string calls take 8-byte big-endian keys on it.
 */
TEST_F_TIMEOUT(bt, str_keys_api, 300)
{
	static const char *const order[] = { "\x00", "a", "a\x00", "a\x00\x00", "ab", "abc",
					     "b", "\xff", "\xff\xff" };
	static const size_t order_len[] = { 1, 1, 2, 3, 2, 3, 1, 1, 2 };
	struct ds_btree_create_opts o = { .node_size = STR_NODE, .key_max = STR_KEY_MAX };
	uint8_t longest[STR_KEY_MAX + 1], be[8];
	struct ds_btree_key ks[16];
	struct ds_btree_stats st;
	struct ds_btree_info info;
	uint64_t addr, addr64, seg64, v, vals[16], fmt;
	struct ds_btree *t, *t64;
	struct ds_xfer *x;
	size_t n, vlen;

	/* a node must hold four of the longest keys */
	EXPECT_EQ(512u, ds_btree_node_size_min(64));
	EXPECT_EQ(2048u, ds_btree_node_size_min(255));
	EXPECT_EQ(0u, ds_btree_node_size_min(256));
	o.node_size = 256;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, self->seg, 1, &o, &addr));
	o.node_size = 4096;
	o.key_max = 256;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, self->seg, 1, &o, &addr));
	o.node_size = STR_NODE;
	o.key_max = STR_KEY_MAX;
	ASSERT_EQ(0, ds_btree_create(1, self->seg, 1, &o, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	EXPECT_EQ(STR_KEY_MAX, ds_btree_key_max(t));

	/* refusals: nothing is written */
	v = 1;
	EXPECT_EQ(-EINVAL, ds_btree_kput(t, "", 0, &v, 8));
	EXPECT_EQ(-EINVAL, ds_btree_kput(t, NULL, 3, &v, 8));
	memset(longest, 'k', sizeof(longest));
	EXPECT_EQ(-EMSGSIZE, ds_btree_kput(t, longest, STR_KEY_MAX + 1, &v, 8));
	EXPECT_EQ(-EMSGSIZE, ds_btree_kget(t, longest, STR_KEY_MAX + 1, &v, 8, NULL));
	EXPECT_EQ(-EINVAL, ds_btree_put(t, 1, &v, 8));
	EXPECT_EQ(-EINVAL, ds_btree_get(t, 1, &v, 8, NULL));
	EXPECT_EQ(-EINVAL, ds_btree_del(t, 1));
	EXPECT_EQ(-EINVAL, ds_btree_scan(t, 0, 4, vals, NULL, &n));
	EXPECT_EQ(-EINVAL, ds_btree_kscan(t, NULL, 0, 0, ks, NULL, &n));

	/* order: put in reverse, scanned ascending */
	for (int e = 8; e >= 0; e--) {
		v = 100 + (uint64_t)e;
		ASSERT_EQ(0, ds_btree_kput(t, order[e], order_len[e], &v, 8)) TH_LOG("key %d", e);
	}
	ASSERT_EQ(0, ds_btree_kput(t, longest, STR_KEY_MAX, &v, 8));
	ASSERT_EQ(0, ds_btree_kscan(t, NULL, 0, 16, ks, vals, &n));
	ASSERT_EQ(10u, n);
	for (int e = 0, j = 0; e < 10; e++) {
		if (e == 7) {	/* "kkk...k" sorts between "b" and "\xff" */
			EXPECT_EQ(STR_KEY_MAX, ks[e].len);
			continue;
		}
		EXPECT_EQ(order_len[j], ks[e].len) TH_LOG("entry %d", e);
		EXPECT_EQ(0, memcmp(order[j], ks[e].bytes, order_len[j])) TH_LOG("entry %d", e);
		EXPECT_EQ(100 + (uint64_t)j, vals[e]) TH_LOG("entry %d", e);
		j++;
	}
	/* from a start that is no key; a prefix is not its extension */
	ASSERT_EQ(0, ds_btree_kscan(t, "a\x00\x01", 3, 2, ks, NULL, &n));
	ASSERT_EQ(2u, n);
	EXPECT_EQ(0, memcmp("ab", ks[0].bytes, 2));
	EXPECT_EQ(-ENOENT, ds_btree_kget(t, "ab\x00", 3, &v, 8, NULL));
	EXPECT_EQ(0, ds_btree_kget(t, "a\x00", 2, &v, 8, &vlen));
	EXPECT_EQ(102u, v);
	EXPECT_EQ(0, ds_btree_kdel(t, "a\x00", 2));
	EXPECT_EQ(-ENOENT, ds_btree_kdel(t, "a\x00", 2));
	EXPECT_EQ(0, ds_btree_kget(t, "a\x00\x00", 3, &v, 8, NULL));

	/* warm lookups of keys of every length: one READ each */
	key_fmt = 1;
	for (uint64_t k = 0; k < 600; k++) {
		ASSERT_EQ(0, put64(t, k * 7919, k + 1));
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_LE(2u, info.height);
	for (uint64_t k = 0; k < 600; k++) {	/* the index cache warms */
		ASSERT_EQ(0, get64(t, k * 7919, &v));
	}
	ds_btree_stats_reset(t);
	for (uint64_t k = 0; k < 600; k++) {
		ASSERT_EQ(0, get64(t, k * 7919, &v));
		ASSERT_EQ(k + 1, v);
	}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("600 warm lookups, height %u: %" PRIu64 " READs, %" PRIu64 " bytes",
	       info.height, st.rtt_read, st.bytes_read);
	EXPECT_EQ(600u, st.lookups);
	EXPECT_EQ(600u, st.rtt_read);
	ds_btree_close(t);

	/* an integer-key tree keeps format 1; the byte calls take BE keys */
	key_fmt = 0;
	ASSERT_EQ(0, extra_seg(_metadata, self, 4, 4 << 20, true, &seg64));
	o = (struct ds_btree_create_opts){ .node_size = SMALL_NODE };
	ASSERT_EQ(0, ds_btree_create(1, &seg64, 1, &o, &addr64));
	ASSERT_EQ(0, ds_xfer_open(1, &x));
	ASSERT_EQ(0, ds_read(x, addr64 + 8, &fmt, 8));
	EXPECT_EQ(1u, (uint32_t)fmt);
	ds_xfer_close(x);
	ASSERT_EQ(0, ds_btree_open(1, addr64, NULL, &t64));
	EXPECT_EQ(0u, ds_btree_key_max(t64));
	ASSERT_EQ(0, put64(t64, 0x0102030405060708ull, 5));
	for (unsigned b = 0; b < 8; b++)
		be[b] = (uint8_t)(b + 1);
	EXPECT_EQ(0, ds_btree_kget(t64, be, 8, &v, 8, NULL));
	EXPECT_EQ(5u, v);
	EXPECT_EQ(-EINVAL, ds_btree_kget(t64, be, 7, &v, 8, NULL));
	ASSERT_EQ(0, ds_btree_kscan(t64, NULL, 0, 4, ks, NULL, &n));
	ASSERT_EQ(1u, n);
	EXPECT_EQ(8, ks[0].len);
	EXPECT_EQ(0, memcmp(be, ks[0].bytes, 8));
	ds_btree_close(t64);

	/* the smallest nodes (256 B, keys of 16 bytes at most) merge too:
	 * emptied, the tree is one leaf again */
	ASSERT_EQ(0, extra_seg(_metadata, self, 4, 4 << 20, true, &seg64));
	o = (struct ds_btree_create_opts){ .node_size = 256, .key_max = 16 };
	ASSERT_EQ(0, ds_btree_create(1, &seg64, 1, &o, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	for (unsigned k = 0; k < 400; k++) {
		char kb[16];
		int kl = snprintf(kb, sizeof(kb), "k%u", k * 7 % 400);

		v = k + 1;
		ASSERT_EQ(0, ds_btree_kput(t, kb, (size_t)kl, &v, 8));
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_LE(3u, info.height);
	ds_btree_stats_reset(t);
	for (unsigned k = 0; k < 400; k++) {
		char kb[16];
		int kl = snprintf(kb, sizeof(kb), "k%u", k);

		ASSERT_EQ(0, ds_btree_kdel(t, kb, (size_t)kl));
	}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	TH_LOG("256-byte nodes emptied: %" PRIu64 " merges, height %u", st.merges, info.height);
	EXPECT_LT(0u, st.merges);
	EXPECT_EQ(1u, info.height);
	ds_btree_close(t);
}

/* dsctl's output of a command into out; its exit status. */
static int dsctl_out(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int dsctl_out(char *out, size_t len, const char *fmt, ...)
{
	char args[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	st = run("%s %s >/tmp/btree-dsctl.out 2>&1", dsctl_path(), args);
	out[0] = 0;
	read_file("/tmp/btree-dsctl.out", out, len);
	return st;
}

/* dsctl btree on a byte-string tree: text, text: and hex: keys, key_hex
 * output, the refusals that need the tree's key_max. */
TEST_F_TIMEOUT(bt, str_dsctl, 300)
{
	char out[4096], segs[64];
	uint64_t addr;

	snprintf(segs, sizeof(segs), "%#" PRIx64, self->seg[0]);
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "-j btree create node 1 segs %s key-max 32", segs))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "\"tree\""));
	addr = self->seg[0];
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "btree put node 1 tree %#" PRIx64
			       " key user:0042 value 7", addr)) TH_LOG("%s", out);
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "btree put node 1 tree %#" PRIx64
			       " key hex:00ff01 value 8", addr)) TH_LOG("%s", out);
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "btree put node 1 tree %#" PRIx64
			       " key text:hex:x value 9", addr)) TH_LOG("%s", out);
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "-j btree scan node 1 tree %#" PRIx64, addr))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"key_hex\":\"00ff01\",\"value\":8}")) TH_LOG("%s", out);
	/* a key that reads back as another word is printed in hex */
	EXPECT_NE(NULL, strstr(out, "{\"key_hex\":\"6865783a78\",\"value\":9}")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"key\":\"user:0042\",\"value\":7}")) TH_LOG("%s", out);
	/* byte order: 00ff01 < "hex:x" < "user:0042" */
	EXPECT_LT(strstr(out, "00ff01"), strstr(out, "6865783a78"));
	EXPECT_LT(strstr(out, "6865783a78"), strstr(out, "user:0042"));
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "-j btree get node 1 tree %#" PRIx64
			       " key user:0042", addr)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"value\":7"));
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "-j btree show node 1 tree %#" PRIx64, addr));
	EXPECT_NE(NULL, strstr(out, "\"keys\":\"bytes\"")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"key_max\":32")) TH_LOG("%s", out);
	/* what only the tree can refuse */
	EXPECT_EQ(1, dsctl_out(out, sizeof(out), "btree get node 1 tree %#" PRIx64
			       " key 0123456789012345678901234567890123", addr));
	EXPECT_STREQ("Error: key is 34 bytes: this tree's keys have 32 at most\n", out);
	EXPECT_EQ(1, dsctl_out(out, sizeof(out), "btree del node 1 tree %#" PRIx64
			       " key user:0043", addr));
	EXPECT_EQ(0, strncmp("Error: key user:0043 is not in tree 0x", out, 38)) TH_LOG("%s", out);
	ASSERT_EQ(0, dsctl_out(out, sizeof(out), "btree del node 1 tree %#" PRIx64
			       " key hex:00ff01", addr)) TH_LOG("%s", out);
	EXPECT_EQ(1, dsctl_out(out, sizeof(out), "btree get node 1 tree %#" PRIx64
			       " key hex:00ff01", addr));
}

/* ======================================================================
 * Replicated trees (ds_btree_create_opts.replicas): the same cluster with
 * a third memory node, 5.  Segments are given group after group, the R
 * members of a group on R different memory nodes.
 * ====================================================================== */

#define RSEG_SIZE	(8ull << 20)	/* a replica test's extra segments */

FIXTURE(btr) {
	FIXTURE_DATA(bt) c;	/* its cluster, with nmem 3 */
	unsigned int used;	/* bit m: c.seg[m] is some tree's already */
};

FIXTURE_SETUP(btr)
{
	cluster_up(_metadata, &self->c, 3);
}

FIXTURE_TEARDOWN(btr)
{
	cluster_down(_metadata, &self->c);
}

/* A segment on each of memory nodes nodes[0 .. n-1] into segs: the
 * fixture's own the first time a node is named, a fresh one after (every
 * tree needs segments of its own). */
static void rep_segs(struct __test_metadata *_metadata, FIXTURE_DATA(btr) *self,
		     const uint32_t *nodes, size_t n, uint64_t *segs)
{
	for (size_t i = 0; i < n; i++) {
		unsigned int m = nodes[i] - 3;

		ASSERT_GT(self->c.nmem, m);
		if (!(self->used & 1u << m)) {
			self->used |= 1u << m;
			segs[i] = self->c.seg[m];
			continue;
		}
		ASSERT_EQ(0, extra_seg(_metadata, &self->c, nodes[i], RSEG_SIZE, true, &segs[i]));
	}
}

/* Every member of t into m (up to max): their count. */
static size_t members_of(struct __test_metadata *_metadata, struct ds_btree *t,
			 struct ds_btree_member *m, size_t max)
{
	size_t count = 0;

	ASSERT_EQ(0, ds_btree_members(t, m, max, &count));
	ASSERT_GE(max, count);
	return count;
}

static void log_members(struct __test_metadata *_metadata, const struct ds_btree_member *m,
			size_t n)
{
	for (size_t i = 0; i < n; i++)
		TH_LOG("  group %u member %u: %#" PRIx64 " (node %u) %s%s", m[i].group, m[i].index,
		       m[i].seg, DSMEM_GADDR_NODE(m[i].seg),
		       m[i].state == DS_BTREE_MEMBER_LIVE ? "live" :
		       m[i].state == DS_BTREE_MEMBER_DEAD ? "dead" : "state?",
		       m[i].primary ? ", primary" : "");
}

/*
 * The members as created: segs[i] is member i % replicas of group
 * i / replicas; each group has exactly one primary, and it is live.
 * How many primaries are on memory node p (p 0 .. MEM_MAX-1, node 3 + p)
 * into prim_on.
 */
static void check_members(struct __test_metadata *_metadata, const struct ds_btree_member *m,
			  size_t n, const uint64_t *segs, uint32_t replicas,
			  unsigned int *prim_on)
{
	memset(prim_on, 0, MEM_MAX * sizeof(*prim_on));
	for (size_t i = 0; i < n; i += replicas) {
		unsigned int prim = 0;

		for (size_t j = i; j < i + replicas; j++) {
			EXPECT_EQ(segs[j], m[j].seg) TH_LOG("member %zu", j);
			EXPECT_EQ(i / replicas, m[j].group) TH_LOG("member %zu", j);
			EXPECT_EQ(j - i, m[j].index) TH_LOG("member %zu", j);
			if (!m[j].primary)
				continue;
			prim++;
			EXPECT_EQ(DS_BTREE_MEMBER_LIVE, m[j].state)
				TH_LOG("group %zu: its primary is dead", i / replicas);
			if (DSMEM_GADDR_NODE(m[j].seg) - 3 < MEM_MAX)
				prim_on[DSMEM_GADDR_NODE(m[j].seg) - 3]++;
		}
		EXPECT_EQ(1, prim) TH_LOG("group %zu: %u primaries", i / replicas, prim);
	}
}

/*
 * A replicated tree at rest, through a new handle of node 2: every
 * member live, one primary a group, spread over more than one memory node
 * when there are two groups or more; the root's image on every member of
 * its group (read raw); verify reads every node from every member, finds
 * them alike and in order, with as many keys as a full scan gives and the
 * tree's height.
 */
static void check_at_rest(struct __test_metadata *_metadata, uint64_t addr,
			  const uint64_t *segs, size_t n, uint32_t replicas)
{
	enum { MAX = 4096 };
	struct ds_btree_member m[DS_BTREE_SEGS_MAX * DS_BTREE_REPLICAS_MAX];
	struct ds_btree_verify_report vr;
	unsigned int prim_on[MEM_MAX], nodes_with = 0;
	uint64_t *keys = calloc(MAX, 8), root;
	static uint8_t img[DS_BTREE_REPLICAS_MAX][1024];
	struct ds_btree_info info;
	struct ds_btree *t;
	struct ds_xfer *x;
	size_t count, nk, g;
	int ret;

	ASSERT_NE(NULL, keys);
	ASSERT_EQ(0, ds_btree_open(2, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_EQ(replicas, info.replicas);
	EXPECT_EQ(0, info.members_dead);
	count = members_of(_metadata, t, m, sizeof(m) / sizeof(m[0]));
	ASSERT_EQ(n, count);
	for (size_t i = 0; i < count; i++) {
		EXPECT_EQ(DS_BTREE_MEMBER_LIVE, m[i].state) TH_LOG("member %zu", i);
	}
	check_members(_metadata, m, count, segs, replicas, prim_on);
	for (int p = 0; p < MEM_MAX; p++)
		nodes_with += prim_on[p] != 0;
	if (n / replicas >= 2) {
		EXPECT_LE(2, nodes_with) TH_LOG("every group's primary on one memory node");
	}
	if (!_metadata->passed)
		log_members(_metadata, m, count);

	/* the root on every member of its group, read raw: the same image
	 * but for the lock word (the group is named by its member 0) */
	ASSERT_EQ(0, ds_xfer_open(2, &x));
	root = info.root & ~63ull;
	for (g = 0; g < count; g++)
		if (m[g].index == 0 && m[g].seg == (root & ~DSMEM_GADDR_OFF_MASK))
			break;
	ASSERT_GT(count, g) TH_LOG("root %#" PRIx64 " in no group", root);
	ASSERT_GE(sizeof(img[0]), info.node_size);
	for (uint32_t j = 0; j < replicas; j++) {
		ASSERT_EQ(0, ds_read(x, m[g + j].seg + (root & DSMEM_GADDR_OFF_MASK), img[j],
				     info.node_size));
		EXPECT_NE(0, rd32(img[j], NH_MAGIC)) TH_LOG("member %u: no node", j);
		EXPECT_EQ(0, memcmp(img[0] + 8, img[j] + 8, info.node_size - 8))
			TH_LOG("the root's image on member %u", j);
	}
	ds_xfer_close(x);

	ASSERT_EQ(0, full_scan(t, keys, NULL, MAX, &nk));
	memset(&vr, 0xa5, sizeof(vr));
	ret = ds_btree_verify(t, &vr);
	TH_LOG("R=%u, %zu groups: verify %d: %" PRIu64 " nodes, %" PRIu64 " keys (scan: %zu), "
	       "height %u, %" PRIu64 " mismatches, %" PRIu64 " order errors", replicas,
	       n / replicas, ret, vr.nodes, vr.keys, nk, vr.height, vr.replica_mismatches,
	       vr.order_errors);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, vr.replica_mismatches);
	EXPECT_EQ(0, vr.order_errors);
	EXPECT_EQ(nk, vr.keys);
	EXPECT_EQ(info.height, vr.height);
	EXPECT_LE(info.height, vr.nodes);
	ds_btree_close(t);
	free(keys);
}

/*
 * The model checks on replicated trees of 256-byte nodes: R=2 in two
 * groups over memory nodes (3, 4) and (4, 5), and R=3 in one group over
 * 3, 4, 5, each with one thread (every result the model's) and with 8
 * threads on both compute nodes (linearizable per key); then a
 * byte-string tree with R=2.  Each tree then at rest: check_at_rest().
 */
TEST_F_TIMEOUT(btr, replica_model, 300)
{
	static const uint32_t r2[] = { 3, 4, 4, 5 }, r3[] = { 3, 4, 5 };
	static const struct {
		const uint32_t *nodes;
		size_t n;
		uint32_t replicas;
		int concurrent, bytes;
	} runs[] = {
		{ r2, 4, 2, 0, 0 }, { r2, 4, 2, 1, 0 },
		{ r3, 3, 3, 0, 0 }, { r3, 3, 3, 1, 0 },
		{ r2, 4, 2, 0, 1 },
	};
	uint64_t segs[DS_BTREE_SEGS_MAX], addr, t0;

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		t0 = now_ns();
		key_fmt = runs[i].bytes;
		rep_segs(_metadata, self, runs[i].nodes, runs[i].n, segs);
		ASSERT_EQ(0, create_tree_(_metadata, &self->c, SMALL_NODE, segs, runs[i].n,
					  runs[i].replicas, &addr));
		EXPECT_EQ(segs[0], addr);
		if (runs[i].concurrent)
			model_concurrent_on(_metadata, addr);
		else
			model_sequential_on(_metadata, addr);
		check_at_rest(_metadata, addr, segs, runs[i].n, runs[i].replicas);
		TH_LOG("R=%u %s%s: %.1f s", runs[i].replicas,
		       runs[i].concurrent ? "concurrent" : "sequential",
		       runs[i].bytes ? ", byte-string keys" : "", (now_ns() - t0) / 1e9);
	}
	key_fmt = 0;
}

/*
 * Creates a replicated tree refuses, leaving nothing behind; members of a
 * tree into too small an array; the members of a tree of one replica.
 */
TEST_F_TIMEOUT(btr, replica_bad_input, 300)
{
	FIXTURE_DATA(bt) *c = &self->c;
	struct ds_btree_create_opts co = { .node_size = SMALL_NODE, .replicas = 2 };
	struct ds_btree_member m[8];
	uint64_t x3, x4, x5, segs[8], addr;
	unsigned int prim_on[MEM_MAX];
	struct ds_btree_info info;
	struct ds_btree *t;
	size_t count;

	ASSERT_EQ(0, extra_seg(_metadata, c, 3, RSEG_SIZE, true, &x3));
	ASSERT_EQ(0, extra_seg(_metadata, c, 4, RSEG_SIZE, true, &x4));
	ASSERT_EQ(0, extra_seg(_metadata, c, 5, RSEG_SIZE, true, &x5));

	/* n not a multiple of R */
	segs[0] = c->seg[0];
	segs[1] = c->seg[1];
	segs[2] = c->seg[2];
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 3, &co, &addr));
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 1, &co, &addr));
	co.replicas = 3;
	segs[3] = x3;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 4, &co, &addr));
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 2, &co, &addr));
	/* two members of one group on one memory node: in the first group,
	 * in the second, the same segment twice */
	co.replicas = 2;
	segs[0] = c->seg[0];
	segs[1] = x3;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 2, &co, &addr));
	segs[0] = c->seg[1];
	segs[1] = c->seg[2];
	segs[2] = c->seg[0];
	segs[3] = x3;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 4, &co, &addr));
	segs[1] = c->seg[1];
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 2, &co, &addr));
	co.replicas = 3;
	segs[0] = c->seg[0];
	segs[1] = c->seg[1];
	segs[2] = x4;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 3, &co, &addr));
	/* more copies than DS_BTREE_REPLICAS_MAX */
	co.replicas = DS_BTREE_REPLICAS_MAX + 1;
	segs[2] = c->seg[2];
	segs[3] = x3;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 4, &co, &addr));
	co.replicas = UINT32_MAX;
	EXPECT_EQ(-EINVAL, ds_btree_create(1, segs, 3, &co, &addr));
	/* the seed layout keeps one copy (segments big enough for it) */
	co = (struct ds_btree_create_opts){ .layout = DS_BTREE_SEED, .replicas = 2 };
	EXPECT_EQ(-EINVAL, ds_btree_create(1, c->seg, 2, &co, &addr));

	/* none of those wrote a tree: (3, 4), (5, 3) over the same segments */
	co = (struct ds_btree_create_opts){ .node_size = SMALL_NODE, .replicas = 2 };
	segs[0] = c->seg[0];
	segs[1] = c->seg[1];
	segs[2] = c->seg[2];
	segs[3] = x3;
	ASSERT_EQ(0, ds_btree_create(1, segs, 4, &co, &addr));
	EXPECT_EQ(c->seg[0], addr);
	EXPECT_EQ(-EEXIST, ds_btree_create(1, segs, 4, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_EQ(2, info.replicas);
	EXPECT_EQ(0, info.members_dead);
	count = 0;
	EXPECT_EQ(-ENOSPC, ds_btree_members(t, m, 3, &count));
	EXPECT_EQ(4, count);
	count = 0;
	EXPECT_EQ(-ENOSPC, ds_btree_members(t, m, 1, &count));
	EXPECT_EQ(4, count);
	count = 0;
	ASSERT_EQ(0, ds_btree_members(t, m, 4, &count));
	ASSERT_EQ(4, count);
	check_members(_metadata, m, count, segs, 2, prim_on);
	ds_btree_close(t);

	/* one replica (1 as 0): a member per segment, each its group's
	 * primary */
	co.replicas = 1;
	segs[0] = x4;
	segs[1] = x5;
	ASSERT_EQ(0, ds_btree_create(1, segs, 2, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(2, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_EQ(1, info.replicas);
	EXPECT_EQ(0, info.members_dead);
	ASSERT_EQ(2, members_of(_metadata, t, m, 8));
	check_members(_metadata, m, 2, segs, 1, prim_on);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(DS_BTREE_MEMBER_LIVE, m[i].state);
	}
	ds_btree_close(t);
}

/* ---- a memory node lost under load ---- */

#define RK_PROCS	2
#define RK_THREADS	2
#define RK_WORKERS	(RK_PROCS * RK_THREADS)
#define RK_KEYS		300
#define RK_BEFORE	150	/* operations every thread has done when the
				 * delete begins */
#define RK_AFTER	300	/* operations each thread begins after it */
#define RK_CAP		20000	/* operations a worker may record */
#define RK_HANG_S	150	/* a phase not over by then is a hang */
#define RK_LEASE_MS	5000	/* see replica_kill_body */
#define RK_READ_TIMEOUT_MS 1000
#define RK_VALUE_SIZE	1000	/* out of line, as YCSB's 1 KB records */

enum rk_role {
	RK_BACKUP,	/* a node that is no group's primary */
	RK_PRIMARY,	/* a group's primary, not holding the tree's name */
	RK_GROUP0,	/* the node of the tree's first segment (superblock) */
};

struct rk_shared {
	uint64_t addr;
	int published, ready, go, stop, full;
	int deleted;			/* ds_node_del returned */
	int done;			/* workers that ended */
	int child_err;
	uint32_t n[RK_WORKERS + 1];	/* records kept; [RK_WORKERS]: preload */
	uint32_t first_after[RK_WORKERS];	/* the first record begun after
						 * the delete returned */
	struct ds_btree_stats child_st;
	struct ds_btree_info child_info;
	struct rec recs[];		/* RK_CAP per worker, then the preload */
};

struct rk_thread {
	struct ds_btree *t;
	struct rk_shared *sh;
	unsigned int who;
	uint64_t seed;
};

static uint64_t rk_key(unsigned int i)
{
	return 11 + 7 * (uint64_t)i;
}

/*
 * YCSB-A's mix: half gets, half puts of a unique value, uniform keys.  A
 * worker ends by itself once it has begun RK_AFTER operations after the
 * delete (sh->deleted), so that how much each does across the loss is a
 * count, whatever the host's speed; one that gets far ahead before the
 * delete waits for it, so that its records always fit.  sh->stop ends it
 * early: the parent's bound on a hang.
 */
static void *rk_worker(void *arg)
{
	struct rk_thread *w = arg;
	struct rk_shared *sh = w->sh;
	struct rec *recs = sh->recs + (size_t)w->who * RK_CAP;
	uint64_t s = w->seed;
	uint32_t first_after = UINT32_MAX;

	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	for (uint32_t i = 0; !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); i++) {
		struct rec *r = &recs[i];
		size_t vlen = 8;

		if (first_after == UINT32_MAX) {
			while (i >= RK_CAP - RK_AFTER && !__atomic_load_n(&sh->deleted, __ATOMIC_ACQUIRE) &&
			       !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE))
				usleep(1000);
			if (__atomic_load_n(&sh->deleted, __ATOMIC_ACQUIRE)) {
				first_after = i;
				__atomic_store_n(&sh->first_after[w->who], i, __ATOMIC_RELEASE);
			}
		}
		if (first_after != UINT32_MAX && i - first_after == RK_AFTER)
			break;
		if (i == RK_CAP) {
			__atomic_store_n(&sh->full, 1, __ATOMIC_RELEASE);
			break;
		}
		r->who = w->who;
		r->key = rk_key(rnd(&s) % RK_KEYS);
		if (rnd(&s) % 2) {
			r->op = R_PUT;
			r->val = ((uint64_t)(w->who + 1) << 40) | (i + 1);
			r->t0 = now_ns();
			r->ret = put64(w->t, r->key, r->val);
			r->t1 = now_ns();
		} else {
			r->op = R_GET;
			r->t0 = now_ns();
			r->ret = bt_get(w->t, r->key, &r->val, 8, &vlen);
			r->t1 = now_ns();
			if (!r->ret && vlen != 8)
				r->ret = -EBADMSG;
		}
		__atomic_store_n(&sh->n[w->who], i + 1, __ATOMIC_RELEASE);
	}
	__atomic_add_fetch(&sh->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Polls until every worker has recorded at least n operations (n 0: until
 * every worker has ended); false when that took RK_HANG_S, a hang. */
static bool rk_wait(struct rk_shared *sh, uint32_t n)
{
	for (int i = 0; i < RK_HANG_S * 100; i++) {
		unsigned int ok = 0;

		for (unsigned int wk = 0; n && wk < RK_WORKERS; wk++)
			ok += __atomic_load_n(&sh->n[wk], __ATOMIC_ACQUIRE) >= n;
		if (!n)
			ok = (unsigned int)__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE);
		if (ok == RK_WORKERS)
			return true;
		usleep(10000);
	}
	return false;
}

static int rk_run_threads(struct ds_btree *t, struct rk_shared *sh, unsigned int proc,
			  pthread_t *th, struct rk_thread *w)
{
	int ret = 0;

	for (unsigned int i = 0; i < RK_THREADS; i++) {
		w[i] = (struct rk_thread){ .t = t, .sh = sh, .who = proc * RK_THREADS + i,
					   .seed = seed_for(200 + proc * RK_THREADS + i) };
		if (pthread_create(&th[i], NULL, rk_worker, &w[i])) {
			th[i] = 0;
			ret = -EAGAIN;
		}
	}
	return ret;
}

static void rk_join(pthread_t *th)
{
	for (unsigned int i = 0; i < RK_THREADS; i++)
		if (th[i])
			pthread_join(th[i], NULL);
}

/* The memory node to delete for role: 0 when the members have none. */
static uint32_t rk_victim(const struct ds_btree_member *m, size_t n, enum rk_role role)
{
	uint32_t first = DSMEM_GADDR_NODE(m[0].seg), pick = 0;

	if (role == RK_GROUP0)
		return first;
	for (uint32_t node = 3; node < 3 + MEM_MAX; node++) {
		bool held = false, prim = false, backup = false;

		for (size_t i = 0; i < n; i++) {
			if (DSMEM_GADDR_NODE(m[i].seg) != node)
				continue;
			held = true;
			if (m[i].primary)
				prim = true;
			else
				backup = true;
		}
		if (!held || node == first)
			continue;
		if (role == RK_BACKUP && !prim)
			return node;
		/* a primary: best one that is another group's backup too */
		if (role == RK_PRIMARY && prim && (!pick || backup))
			pick = node;
	}
	return pick;
}

/*
 * An R=2 tree of 256-byte nodes in two groups over memory nodes (3, 4)
 * and (5, 4), 300 keys with values out of line: every put takes a blob,
 * and a client takes its memory in chunks round-robin over the groups, so
 * both groups are read and written all along (with 8-byte values inline,
 * a few hundred keys' nodes all fit in a client's first 256 KiB chunk, of
 * group 0, and a loss of group 1 would go unseen).  Two compute nodes
 * (processes) with two threads each run YCSB-A on it; once every thread
 * has done RK_BEFORE operations, one memory node is deleted (its node,
 * its segments, its connections) under their load, chosen by its role in
 * the members' list, and each thread goes on for RK_AFTER operations
 * begun after the delete returned, then stops.  With group g's primary
 * its member g mod R (the first live one from there), node 3 is group 0's
 * primary and holds the tree's name, 4 is group 0's backup and group 1's
 * primary, 5 group 1's backup only.  Each group keeps a live member, so
 *   - every operation succeeds (the keys are all there: no -ENOENT
 *     either, which the history check below would refuse), before, across
 *     and after the loss: a get or put under way when the node went fails
 *     over inside the call;
 *   - reads go on across the loss rather than stall: every thread
 *     completes its RK_AFTER operations after the delete, a fair share of
 *     them gets, and the failover needs no more than a few reads sent
 *     again (replica_fallbacks): a get finds the survivor at once after
 *     it, not by failing at the lost member each time.  Only a hang is
 *     timed: a phase not over after RK_HANG_S;
 *   - every key's history, closed by a full scan after the run, is
 *     linearizable: no acknowledged put lost, no get of a value never put;
 *   - the members show exactly the deleted node's members dead, for both
 *     compute nodes (so the failover happened in both), and each group a
 *     live primary;
 *   - verify finds the survivors alike and in order;
 *   - a new handle of the other compute node opens the tree by its name
 *     and reads every key.  The name is the tree's first segment (ds.h);
 *     when that is what was lost, open finds the superblock's copy on
 *     another member of group 0 among the segments granted to the compute
 *     node.
 * The product's timers are set wide of a slow host: a READ of a live
 * member that is late is given up after 1 s (not 0.25), and the member's
 * probe after 4 s, so a starved guest does not exclude a live member; and
 * a client is presumed dead after 5 s of silence (not 1), so a heartbeat
 * thread starved under the load does not have a live client's locks taken
 * over.  The test waits out neither: no client dies, and the lost
 * member's connections are refused rather than silent (no READ timed out
 * in the runs so far), so the failover does not take a timeout either.
 */
static void replica_kill_body(struct __test_metadata *_metadata, FIXTURE_DATA(btr) *self,
			      enum rk_role role)
{
	static const uint32_t layout[] = { 3, 4, 5, 4 };
	const struct ds_btree_open_opts oo = { .lock_lease_ms = RK_LEASE_MS,
					       .read_timeout_ms = RK_READ_TIMEOUT_MS };
	size_t nrec = (size_t)(RK_WORKERS + 1) * RK_CAP;
	size_t bytes = sizeof(struct rk_shared) + nrec * sizeof(struct rec);
	struct rk_shared *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct ds_btree_create_opts co = { .node_size = SMALL_NODE, .value_size = RK_VALUE_SIZE,
					   .replicas = 2 };
	struct ds_btree_member m[8];
	struct ds_btree_verify_report vr;
	struct ds_btree_stats st;
	struct ds_btree_info info;
	struct rk_thread w[RK_THREADS];
	pthread_t th[RK_THREADS];
	uint64_t segs[4], keys[RK_KEYS], skeys[RK_KEYS + 1], svals[RK_KEYS + 1], addr, v;
	uint64_t t_start, t_kill, t_killed, t_stop, t0, t1, lat = 0, fallbacks;
	static uint8_t sbuf[(RK_KEYS + 1) * RK_VALUE_SIZE];
	struct hop finals[RK_KEYS];
	size_t count, nall = 0, nk, dead = 0, across = 0;
	uint32_t victim, after[RK_WORKERS] = { 0 }, gets_after[RK_WORKERS] = { 0 };
	struct ds_btree *t, *t2;
	struct rec *all;
	int status, del_ret, run_ret, bad = 0, ret;
	bool before_ok, after_ok;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, sh);
	/* before any handle is open here: nothing registered is shared */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* the second compute node: node 2, its own process */
		struct ds_btree *ct;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!wait_flag(&sh->published, 1, 120))
			_exit(3);
		ret = ds_btree_open(2, sh->addr, &oo, &ct);
		if (ret) {
			sh->child_err = ret;
			_exit(4);
		}
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_RELEASE);
		ret = rk_run_threads(ct, sh, 1, th, w);
		rk_join(th);
		ds_btree_stats_get(ct, &sh->child_st);
		sh->child_err = ds_btree_describe(ct, &sh->child_info);
		ds_btree_close(ct);
		_exit(ret ? 5 : 0);
	}
	rep_segs(_metadata, self, layout, 4, segs);
	ASSERT_EQ(0, ds_btree_create(1, segs, 4, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, &oo, &t));

	/* every key there before the run (recorded: the histories' first
	 * puts), their values in both groups */
	for (unsigned int k = 0; k < RK_KEYS; k++) {
		struct rec *r = &sh->recs[(size_t)RK_WORKERS * RK_CAP + k];

		*r = (struct rec){ .key = rk_key(k), .val = val_of(rk_key(k)), .op = R_PUT,
				   .who = RK_WORKERS, .t0 = now_ns() };
		r->ret = put64(t, r->key, r->val);
		r->t1 = now_ns();
		ASSERT_EQ(0, r->ret) TH_LOG("preload of key %" PRIu64, r->key);
		keys[k] = rk_key(k);
	}
	sh->n[RK_WORKERS] = RK_KEYS;
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	ASSERT_EQ(2, info.nsegs);
	for (uint32_t g = 0; g < 2; g++) {
		/* past the segment's first 64 KiB (headers) */
		ASSERT_LT(64 << 10, info.seg_used[g])
			TH_LOG("group %u holds nothing: its members' loss would go unseen", g);
	}
	count = members_of(_metadata, t, m, 8);
	ASSERT_EQ(4, count);
	victim = rk_victim(m, count, role);
	TH_LOG("height %u; members before:", info.height);
	log_members(_metadata, m, count);
	ASSERT_NE(0, victim) TH_LOG("no memory node has that role here");
	for (size_t i = 0; i < count; i++)
		dead += DSMEM_GADDR_NODE(m[i].seg) == victim;
	TH_LOG("deleting memory node %u (%zu members) once every thread has done %d "
	       "operations", victim, dead, RK_BEFORE);

	sh->addr = addr;
	for (unsigned int wk = 0; wk < RK_WORKERS; wk++)
		sh->first_after[wk] = UINT32_MAX;
	__atomic_store_n(&sh->published, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_RELEASE);
	if (!wait_flag(&sh->ready, 2, 120)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ASSERT_TRUE(false) TH_LOG("the child never opened the tree: %d", sh->child_err);
	}

	/* no ASSERT from here until the threads are joined */
	ds_btree_stats_reset(t);
	t_start = now_ns();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	run_ret = rk_run_threads(t, sh, 0, th, w);
	before_ok = rk_wait(sh, RK_BEFORE);
	t_kill = now_ns();
	del_ret = ds_node_del(self->c.ctx, victim);
	t_killed = now_ns();
	__atomic_store_n(&sh->deleted, 1, __ATOMIC_RELEASE);
	after_ok = rk_wait(sh, 0);
	t_stop = now_ns();
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	rk_join(th);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child: status %#x, error %d", status, sh->child_err);
	ASSERT_EQ(0, run_ret);
	ASSERT_TRUE(before_ok) TH_LOG("the threads had not done %d operations each after %d s "
				      "(a hang): %u %u %u %u", RK_BEFORE, RK_HANG_S, sh->n[0],
				      sh->n[1], sh->n[2], sh->n[3]);
	ASSERT_EQ(0, del_ret) TH_LOG("ds_node_del(%u): %s", victim, ds_ctx_errmsg(self->c.ctx));
	ASSERT_EQ(0, sh->full) TH_LOG("a worker filled its %d records", RK_CAP);

	/* the run, its records in one array */
	all = calloc(nrec, sizeof(*all));
	ASSERT_NE(NULL, all);
	for (unsigned int wk = 0; wk <= RK_WORKERS; wk++)
		for (uint32_t i = 0; i < sh->n[wk]; i++) {
			const struct rec *r = &sh->recs[(size_t)wk * RK_CAP + i];

			all[nall++] = *r;
			if (wk == RK_WORKERS)
				continue;
			if (r->t1 - r->t0 > lat)
				lat = r->t1 - r->t0;
			/* under way while the node was deleted */
			if (r->t0 < t_killed && r->t1 > t_kill)
				across++;
			if (sh->deleted && i >= sh->first_after[wk]) {
				after[wk]++;
				gets_after[wk] += r->op == R_GET && !r->ret;
			}
			/* every key is there all along: a get finds a value */
			if (r->ret == 0 && (r->op == R_PUT || r->val))
				continue;
			if (bad++ < 10)
				TH_LOG("thread %u %s of key %" PRIu64 " at [%.3f, %.3f] s from the "
				       "delete: %d (%s)", wk, r->op == R_PUT ? "put" : "get",
				       r->key, ((int64_t)(r->t0 - t_kill)) / 1e9,
				       ((int64_t)(r->t1 - t_kill)) / 1e9, r->ret,
				       strerror(-r->ret));
		}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	fallbacks = st.replica_fallbacks + sh->child_st.replica_fallbacks;
	TH_LOG("%zu operations in %.1f s, %zu under way across the delete, which took "
	       "%.3f s; the longest operation %.3f s", nall - RK_KEYS,
	       (t_stop - t_start) / 1e9, across, (t_killed - t_kill) / 1e9, lat / 1e9);
	TH_LOG("operations (gets) begun after the delete, per thread: %u (%u) %u (%u) %u (%u) "
	       "%u (%u)", after[0], gets_after[0], after[1], gets_after[1], after[2],
	       gets_after[2], after[3], gets_after[3]);
	TH_LOG("node 1: %" PRIu64 " members excluded, %" PRIu64 " replica fallbacks, %" PRIu64
	       " read timeouts, %" PRIu64 " read retries, %" PRIu64 " lock steals, %" PRIu64
	       " corrupt; node 2: %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64
	       ", %" PRIu64, st.members_excluded, st.replica_fallbacks, st.read_timeouts,
	       st.read_retries, st.lock_steals, st.corrupt, sh->child_st.members_excluded,
	       sh->child_st.replica_fallbacks, sh->child_st.read_timeouts,
	       sh->child_st.read_retries, sh->child_st.lock_steals, sh->child_st.corrupt);
	EXPECT_EQ(0, bad) TH_LOG("%d operations failed", bad);
	/* reads went on across the loss: every thread did its share after
	 * it, gets among them (half of its operations are; fewer than a
	 * quarter of 300 has a chance near 1e-18) */
	EXPECT_TRUE(after_ok) TH_LOG("the threads had not done %d operations each after the "
				     "delete in %d s: a hang", RK_AFTER, RK_HANG_S);
	for (unsigned int wk = 0; wk < RK_WORKERS; wk++) {
		EXPECT_EQ(RK_AFTER, after[wk]) TH_LOG("thread %u: operations after the delete", wk);
		EXPECT_LE(RK_AFTER / 4, gets_after[wk]) TH_LOG("thread %u: gets after the delete",
							       wk);
	}
	/* someone found the loss out (a put writes every live member) */
	EXPECT_LE(1, st.members_excluded + sh->child_st.members_excluded);
	/* and after it, reads went to a survivor first: a read is sent again
	 * only when it met the lost member, which takes a thread's reads under
	 * way when it went and those begun before its handle knew (a handle
	 * learns from its first failure, or group 0's dead word), nowhere
	 * near the RK_AFTER / 4 gets each thread did after it */
	EXPECT_GT(RK_WORKERS * RK_AFTER / 8, fallbacks)
		TH_LOG("%" PRIu64 " reads sent again: the failover did not hold", fallbacks);
	/* exactly the deleted node's members dead, seen alike by both */
	count = members_of(_metadata, t, m, 8);
	ASSERT_EQ(4, count);
	TH_LOG("members after:");
	log_members(_metadata, m, count);
	for (size_t i = 0; i < count; i++) {
		uint8_t want = DSMEM_GADDR_NODE(m[i].seg) == victim ? DS_BTREE_MEMBER_DEAD :
								       DS_BTREE_MEMBER_LIVE;

		EXPECT_EQ(want, m[i].state) TH_LOG("member %zu", i);
	}
	{
		unsigned int prim_on[MEM_MAX];

		check_members(_metadata, m, count, segs, 2, prim_on);
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	EXPECT_EQ(dead, info.members_dead);
	EXPECT_EQ(0, sh->child_err);
	EXPECT_EQ(dead, sh->child_info.members_dead);

	/* the whole tree after the run closes every key's history */
	t0 = now_ns();
	ASSERT_EQ(0, ds_btree_scan(t, 0, RK_KEYS + 1, skeys, sbuf, &nk));
	t1 = now_ns();
	EXPECT_EQ(RK_KEYS, nk);
	for (size_t i = 0; i < nk; i++)
		memcpy(&svals[i], sbuf + i * RK_VALUE_SIZE, 8);
	for (size_t i = 0, j = 0; i < RK_KEYS; i++) {
		while (j < nk && skeys[j] < keys[i])
			j++;
		finals[i] = (struct hop){ .t0 = t0, .t1 = t1, .kind = H_GET, .who = 8,
					  .arg = j < nk && skeys[j] == keys[i] ? svals[j] : 0 };
	}
	bad = check_keys(_metadata, all, nall, NULL, NULL, 0, keys, finals, RK_KEYS, t_start);
	EXPECT_EQ(0, bad) TH_LOG("%d key(s) with a history no sequential order explains "
				 "(thread %d: the preload)", bad, RK_WORKERS);

	memset(&vr, 0xa5, sizeof(vr));
	ret = ds_btree_verify(t, &vr);
	TH_LOG("verify %d: %" PRIu64 " nodes, %" PRIu64 " keys, height %u, %" PRIu64
	       " mismatches, %" PRIu64 " order errors", ret, vr.nodes, vr.keys, vr.height,
	       vr.replica_mismatches, vr.order_errors);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, vr.replica_mismatches);
	EXPECT_EQ(0, vr.order_errors);
	EXPECT_EQ(RK_KEYS, vr.keys);

	/* a new handle, of the other compute node, by the tree's name */
	t0 = now_ns();
	ret = ds_btree_open(2, addr, &oo, &t2);
	t1 = now_ns();
	TH_LOG("open after the loss%s: %d after %.3f s",
	       DSMEM_GADDR_NODE(addr) == victim ? " (of the segment naming the tree)" : "",
	       ret, (t1 - t0) / 1e9);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, ds_btree_describe(t2, &info));
	EXPECT_EQ(addr, info.addr);
	EXPECT_EQ(dead, info.members_dead);
	for (size_t i = 0; i < nk; i++) {
		ASSERT_EQ(0, get64(t2, skeys[i], &v)) TH_LOG("key %" PRIu64, skeys[i]);
		ASSERT_EQ(svals[i], v) TH_LOG("key %" PRIu64, skeys[i]);
	}
	ds_btree_close(t2);
	ds_btree_close(t);
	free(all);
	munmap(sh, bytes);
}

/* The deleted node (5 above) is a backup only: reads never went there,
 * every write did. */
TEST_F_TIMEOUT(btr, replica_kill_backup, 400)
{
	replica_kill_body(_metadata, self, RK_BACKUP);
}

/* The deleted node (4 above) is group 1's primary, where its reads and
 * locks went, and group 0's backup, a copy of the superblock. */
TEST_F_TIMEOUT(btr, replica_kill_primary, 400)
{
	replica_kill_body(_metadata, self, RK_PRIMARY);
}

/* The deleted node (3 above) is group 0's first member, its primary: the
 * superblock everyone reads and writes (root word, client table, dead
 * members) goes on at its backup, and the tree's name is a lost segment. */
TEST_F_TIMEOUT(btr, replica_kill_group0, 400)
{
	replica_kill_body(_metadata, self, RK_GROUP0);
}

/*
 * Re-replication: an R=2 tree over memory nodes 3 and 4 with a spare on
 * 5 loses node 3 (group 0's primary, the tree's first segment) under puts
 * from compute node 1; the spare is filled in its place in the background
 * and turns live, verify finds the members identical, another client
 * opens the tree (its first segment gone) and reads it, and after node 4
 * goes too every key is still there, on the spare alone.
 */
TEST_F_TIMEOUT(btr, replica_rereplicate, 300)
{
	static const uint32_t nodes[] = { 3, 4 };
	struct ds_btree_create_opts co = { .node_size = SMALL_NODE, .replicas = 2 };
	struct ds_btree_verify_report vr;
	struct ds_btree_member m[4];
	struct ds_btree_stats st;
	struct ds_btree_open_opts bad = { .read_timeout_ms = 60001 };
	/* a live member's READ given up after 1 s, its probe after 4 s: a
	 * starved guest does not exclude a live member (exactly one is) */
	const struct ds_btree_open_opts oo = { .read_timeout_ms = 1000 };
	struct ds_btree_create_opts one = { .node_size = SMALL_NODE };
	struct ds_btree *t, *t1, *t2;
	uint64_t segs[2], spare, addr, v, t0, small, lone, laddr, live_at = 0;
	const uint64_t keys = 3000;
	size_t n;
	int ret;
	bool live = false;

	rep_segs(_metadata, self, nodes, 2, segs);
	ASSERT_EQ(0, extra_seg(_metadata, &self->c, 5, SEG_SIZE, true, &spare));
	ASSERT_EQ(0, ds_btree_create(1, segs, 2, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(1, addr, &oo, &t));
	/* refusals: a spare smaller than the groups, a tree of one copy,
	 * open options out of range */
	ASSERT_EQ(0, extra_seg(_metadata, &self->c, 5, RSEG_SIZE / 2, true, &small));
	EXPECT_EQ(-ENOSPC, ds_btree_spare_add(t, small));
	EXPECT_EQ(-EINVAL, ds_btree_open(1, addr, &bad, &t1));
	bad = (struct ds_btree_open_opts){ .reserved0 = 1 };
	EXPECT_EQ(-EINVAL, ds_btree_open(1, addr, &bad, &t1));
	ASSERT_EQ(0, extra_seg(_metadata, &self->c, 4, RSEG_SIZE, true, &lone));
	ASSERT_EQ(0, ds_btree_create(1, &lone, 1, &one, &laddr));
	ASSERT_EQ(0, ds_btree_open(1, laddr, NULL, &t1));
	EXPECT_EQ(-EOPNOTSUPP, ds_btree_spare_add(t1, small));
	ds_btree_close(t1);
	ASSERT_EQ(0, ds_btree_spare_add(t, spare));
	EXPECT_EQ(-EEXIST, ds_btree_spare_add(t, spare));
	EXPECT_EQ(-EEXIST, ds_btree_spare_add(t, segs[1]));
	for (uint64_t k = 0; k < keys; k++) {
		if (k == keys / 2)
			ASSERT_EQ(0, ds_node_del(self->c.ctx, 3));
		v = k * 7 + 1;
		ret = ds_btree_put(t, k, &v, 8);
		ASSERT_EQ(0, ret) TH_LOG("put %" PRIu64 ": %d", k, ret);
		/* where in the puts the spare turned live, to tell a
		 * failure's place in the repair */
		if (k > keys / 2 && k % 100 == 0 && !live_at) {
			ASSERT_EQ(0, ds_btree_members(t, m, 4, &n));
			if (m[0].seg == spare && m[0].state == DS_BTREE_MEMBER_LIVE)
				live_at = k;
		}
	}
	if (live_at)
		TH_LOG("the spare live by put %" PRIu64, live_at);
	/* the repair runs in the background: polled until it is done, a
	 * hang after 120 s */
	t0 = now_ns();
	for (int i = 0; i < 2400 && !live; i++) {
		ASSERT_EQ(0, ds_btree_members(t, m, 4, &n));
		ASSERT_EQ(2, n);
		live = m[0].seg == spare && m[0].state == DS_BTREE_MEMBER_LIVE;
		if (!live)
			usleep(50000);
	}
	ASSERT_TRUE(live) TH_LOG("member 0: %#" PRIx64 " state %u", m[0].seg, m[0].state);
	TH_LOG("the spare live %.1f s after the last put", (now_ns() - t0) / 1e9);
	ASSERT_EQ(0, ds_btree_verify(t, &vr)) TH_LOG("%" PRIu64 " mismatches", vr.replica_mismatches);
	EXPECT_EQ(keys, vr.keys);
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("%" PRIu64 " read timeouts, %" PRIu64 " replica fallbacks, %" PRIu64
	       " lock retries, %" PRIu64 " steals, %" PRIu64 " splits",
	       (uint64_t)st.read_timeouts, (uint64_t)st.replica_fallbacks,
	       (uint64_t)st.lock_retries, (uint64_t)st.lock_steals, (uint64_t)st.splits);
	EXPECT_EQ(1, st.members_excluded);
	EXPECT_EQ(1, st.members_repaired);

	/* named by a segment that is gone: opened from its copy */
	ASSERT_EQ(0, ds_btree_open(2, addr, &oo, &t2));
	for (uint64_t k = 0; k < keys; k += 7) {
		ASSERT_EQ(0, ds_btree_get(t2, k, &v, 8, NULL));
		ASSERT_EQ(k * 7 + 1, v);
	}
	ds_btree_close(t2);

	/* the other original member too: the spare holds it all */
	ASSERT_EQ(0, ds_node_del(self->c.ctx, 4));
	for (uint64_t k = 0; k < keys; k++) {
		ret = ds_btree_get(t, k, &v, 8, NULL);
		ASSERT_EQ(0, ret) TH_LOG("get %" PRIu64 ": %d", k, ret);
		ASSERT_EQ(k * 7 + 1, v);
	}
	ds_btree_close(t);
}

TEST_HARNESS_MAIN
