// SPDX-License-Identifier: BSD-2-Clause
/*
 * The token cache's policy core (kernel/tokencache/dsmem_tc_core.c, the
 * very file the module links): token and L2 page codecs, promotion,
 * demotion, eviction, pinning, the inline-update race, write-back and
 * write-through, parameters, handles, batches, adaptation, the histogram.
 *
 * Every call takes "now" from the test: a clock edge is a number here,
 * not a sleep, so nothing depends on timing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dsmem_tc_core.h"

#define US	1000ULL
#define MS	1000000ULL
#define T0	(1000 * MS)	/* the clock starts past every window */
#define NE	1024U		/* directory entries: eight buckets */
#define L1	DSMEM_TIER_L1
#define L2	DSMEM_TIER_L2
#define L3	DSMEM_TIER_L3
#define P(x)	DSTC_P_##x
#define ST(x)	DSTC_S_##x
#define S(t, x)	((t)->st.v[DSTC_S_##x])
#define OK(x)	assert_int_equal(x, 0)
#define TEST(f)	static void f(void **state __attribute__((unused)))

struct tenv {
	struct dstc_cache c;
	struct dstc_stats st;	/* one "CPU": also the summed total */
	u16 gen[NE];
	int locked;
	int pages;		/* live L2 pages: a leak or double free shows */
	bool fail_pages;	/* page_alloc fails: the out-of-memory paths */
};

/* the test's cache, freed by the teardown even when an assert fails */
static struct tenv *cur;

static void *t_page_alloc(struct dstc_cache *c)
{
	struct tenv *t = c->priv;
	void *p;

	if (t->fail_pages)
		return NULL;
	p = aligned_alloc(4096, DSTC_PAGE_SIZE);
	assert_non_null(p);
	memset(p, 0, DSTC_PAGE_SIZE);
	t->pages++;
	return p;
}

/* no concurrent readers here, so the deferral the contract asks for is moot */
static void t_page_free(struct dstc_cache *c, void *page)
{
	((struct tenv *)c->priv)->pages--;
	free(page);
}

static void *t_chunk_alloc(struct dstc_cache *c, size_t size)
{
	(void)c;
	return calloc(1, size);
}

static void t_chunk_free(struct dstc_cache *c, void *p)
{
	(void)c;
	free(p);
}

/* The structural lock is a flag: taking it twice would self-deadlock the
 * module, so here it fails the test. */
static void t_lock(struct dstc_cache *c)
{
	assert_int_equal(((struct tenv *)c->priv)->locked++, 0);
}

static void t_unlock(struct dstc_cache *c)
{
	assert_int_equal(((struct tenv *)c->priv)->locked--, 1);
}

static const struct dstc_ops t_ops = {
	.page_alloc = t_page_alloc,
	.page_free = t_page_free,
	.chunk_alloc = t_chunk_alloc,
	.lock = t_lock,
	.unlock = t_unlock,
};

static int teardown(void **state)
{
	(void)state;
	if (cur) {
		dstc_cache_destroy(&cur->c, t_chunk_free);
		free(cur);
		cur = NULL;
	}
	return 0;
}

static void tenv_free(struct tenv *t)
{
	assert_int_equal(t->locked, 0);
	dstc_cache_destroy(&t->c, t_chunk_free);
	assert_int_equal(t->pages, 0);	/* every page came back */
	free(t);
	cur = NULL;
}

/*
 * A cache on the defaults with everything that happens on its own pushed
 * out of reach (promotion, idling, aging, adaptation, prefetch), then the
 * test's overrides: ENV({ P(X), v }, ...) turns on only what it looks at.
 */
struct pv {
	unsigned int i;
	u64 v;
};

#define ENV(...)	env((const struct pv[]){ __VA_ARGS__, { DSTC_P_NR, 0 } })

static struct tenv *env(const struct pv *pv)
{
	u64 p[DSTC_P_NR];

	dstc_params_default(p);
	/* the fixed mode's mechanisms, one at a time; the adaptive mode's own tests turn it on */
	p[P(MODE)] = DSMEM_CACHE_FIXED;
	p[P(PROMOTE_L2)] = p[P(PROMOTE_L1)] = 65535;
	p[P(L1_IDLE_NS)] = p[P(L2_IDLE_NS)] = 60000 * MS;
	p[P(AGING_NS)] = p[P(ADAPT_NS)] = 60000 * MS;
	p[P(PREFETCH)] = 0;
	for (; pv->i < DSTC_P_NR; pv++)
		p[pv->i] = pv->v;
	cur = calloc(1, sizeof(*cur));
	assert_non_null(cur);
	OK(dstc_cache_init(&cur->c, &t_ops, cur, NE, p));
	return cur;
}

/* Entry eid's QP token; k shifts its hardware number.  Neighbours differ
 * in the QP number only, as consecutively created QPs do. */
static union dsmem_token qp_tok(u32 eid, u32 k)
{
	union dsmem_token t;

	dstc_token_init(&t, DSMEM_TOKEN_QP, (u16)eid);
	t.qp.qpn = 0x5000 + eid + k;
	t.qp.qp_type = 2;
	t.qp.state = 3;
	t.qp.pd_index = t.qp.scq_index = t.qp.rcq_index = 1;
	t.qp.access_flags = 7;
	return t;
}

/* every field of qp_tok(eid, 0) changed, far: the longest L2 record */
static union dsmem_token far_tok(u32 eid)
{
	union dsmem_token t = qp_tok(eid, 0);

	t.qp.qpn = ~t.qp.qpn;
	t.qp.qp_type = 0xff;
	t.qp.state = 0x80;
	t.qp.pd_index = 0xff;
	t.qp.scq_index = 0x90;
	t.qp.rcq_index = 0xa0;
	t.qp.access_flags = 0xc0;
	return t;
}

static void tok_eq(const union dsmem_token *a, const union dsmem_token *b)
{
	assert_int_equal(a->hdr.type, b->hdr.type);
	assert_memory_equal(a, b, dstc_token_size(b->hdr.type));
}

/* a *_locked call, with the lock held as the contract asks */
static int lret;
#define LOCKED(t, call)	(t_lock(&(t)->c), lret = (call), t_unlock(&(t)->c), lret)
#define mig(t, eid, tier, now)	\
	LOCKED(t, dstc_migrate_locked(&(t)->c, &(t)->st, eid, tier, now))
#define pin(t, eid, on, now)	\
	LOCKED(t, dstc_pin_locked(&(t)->c, &(t)->st, eid, (t)->gen[eid], on, now))
#define upd(t, eid, gen, tok)	\
	LOCKED(t, dstc_update_locked(&(t)->c, &(t)->st, eid, gen, tok))
#define setp(t, p, now, why)	\
	LOCKED(t, dstc_set_params_locked(&(t)->c, &(t)->st, p, now, why))
#define rm(t, eid, gen)		\
	LOCKED(t, dstc_remove_locked(&(t)->c, &(t)->st, eid, gen))

/* entries first .. first + n - 1, in L3 */
static void ins(struct tenv *t, u32 first, u32 n)
{
	union dsmem_token tok;
	u32 eid;

	for (eid = first; eid < first + n; eid++) {
		tok = qp_tok(eid, 0);
		OK(LOCKED(t, dstc_insert_locked(&t->c, eid, 1, &tok, &t->gen[eid])));
		assert_int_not_equal(t->gen[eid], 0);
	}
}

/* one access that must succeed, and leave the lock free */
static struct dstc_result acc(struct tenv *t, u32 eid, u64 delta, u64 now)
{
	struct dstc_result r;

	OK(dstc_access(&t->c, &t->st, eid, t->gen[eid], delta, now, &r));
	assert_int_equal(t->locked, 0);
	return r;
}

static void hits(struct tenv *t, u32 eid, unsigned int n, u64 now)
{
	while (n--)
		acc(t, eid, 0, now);
}

/* userspace has one stats struct: it is also the total */
static void run(struct tenv *t, u64 now, bool maint)
{
	dstc_run(&t->c, &t->st, now, maint, &t->st);
	assert_int_equal(t->locked, 0);
}

static u64 ctl(struct tenv *t, u32 eid)
{
	union dsmem_token tok;
	u32 off;
	u64 c;

	return dstc_peek(&t->c, eid, &c, &off, &tok) ? 0 : c;
}

#define layer(t, eid)	DSTC_CTL_LAYER(ctl(t, eid))
#define flags(t, eid)	DSTC_CTL_FLAGS(ctl(t, eid))

static struct dstc_l1 *slot(struct tenv *t, u32 eid)
{
	assert_int_equal(layer(t, eid), L1);
	return &t->c.l1[dstc_entry(&t->c, eid)->token_offset];
}

/* TIERS(t, eid, tier, ...), STATS(t, ST(x), value, ...): checked in
 * pairs, a failure reported at the caller's line */
#define TIERS(t, ...)	pairs_at(t, 0, __FILE__, __LINE__, __VA_ARGS__, -1)
#define STATS(t, ...)	pairs_at(t, 1, __FILE__, __LINE__, __VA_ARGS__, -1)

static void pairs_at(struct tenv *t, int stats, const char *file, int line, ...)
{
	va_list ap;
	int k, want;

	va_start(ap, line);
	while ((k = va_arg(ap, int)) >= 0) {
		want = va_arg(ap, int);
		_assert_int_equal(stats ? t->st.v[k] : layer(t, (u32)k),
				  (unsigned int)want, file, line);
	}
	va_end(ap);
}

/* ---- 1. token codec ---------------------------------------------------- */

/* a value with every byte set, different for each field, cut to size */
static u32 fval(unsigned int i, unsigned int size, u32 v)
{
	v += i * 0x01010101U;
	return size == 4 ? v : v & ((1U << (8 * size)) - 1);
}

TEST(test_token_codec)
{
	static const struct {
		const char *name;
		unsigned int size;
		const char *fields[8];
	} want[DSMEM_TOKEN_TYPES] = {
		[DSMEM_TOKEN_PD] = { "pd", 8, { "pdn" } },
		[DSMEM_TOKEN_MR] = { "mr", 12, { "lkey", "access_flags", "page_bits",
						 "n_pages" } },
		[DSMEM_TOKEN_CQ] = { "cq", 12, { "cqn", "cqe", "comp_vec", "flags" } },
		[DSMEM_TOKEN_QP] = { "qp", 14, { "qpn", "qp_type", "state", "pd_index",
						 "scq_index", "rcq_index",
						 "access_flags" } },
		[DSMEM_TOKEN_DB] = { "db", 12, { "qpn", "sq_depth", "qp_index" } },
		[DSMEM_TOKEN_WQE] = { "wqe", 12, { "lkey", "max_sge", "max_read_sge",
						   "qp_index" } },
	};
	const u32 V = 0x81828384U, W = 0xa5a5a5a5U;
	unsigned int ty, i, j, nr, off, size;
	union dsmem_token t, u;

	assert_int_equal(sizeof(struct dsmem_token_hdr), 4);
	assert_int_equal(sizeof(struct dsmem_pd_token), 8);
	assert_int_equal(sizeof(struct dsmem_mr_token), 12);
	assert_int_equal(sizeof(struct dsmem_cq_token), 12);
	assert_int_equal(sizeof(struct dsmem_qp_token), 14);
	assert_int_equal(sizeof(struct dsmem_db_token), 12);
	assert_int_equal(sizeof(struct dsmem_wqe_token), 12);
	assert_int_equal(DSMEM_TOKEN_TYPES, 6);
	for (ty = 0; ty < DSMEM_TOKEN_TYPES; ty++) {
		const struct dstc_field *f = dstc_token_fields(ty, &nr);

		size = want[ty].size;
		assert_non_null(f);
		assert_string_equal(dstc_token_type_name(ty), want[ty].name);
		assert_int_equal(dstc_token_size(ty), size);
		/* the fields tile the token after the header, in order */
		for (i = 0, off = 4; i < nr; off += f[i++].size) {
			assert_string_equal(f[i].name, want[ty].fields[i]);
			assert_int_equal(f[i].offset, off);
		}
		assert_int_equal(off, size);
		assert_null(want[ty].fields[nr]);

		dstc_token_init(&t, ty, 0xbeef);
		for (i = 0; i < nr; i++)
			dstc_field_set(&t, &f[i], fval(i, f[i].size, V));
		for (i = 0; i < nr; i++)
			assert_int_equal(dstc_field_get(&t, &f[i]), fval(i, f[i].size, V));
		assert_true(t.hdr.type == ty && t.hdr.index == 0xbeef &&
			    t.hdr.version == DSMEM_TOKEN_VERSION);
		OK(dstc_token_check(&t, size));
		/* the table names what the structs name */
		assert_int_equal(ty == DSMEM_TOKEN_PD ? t.pd.pdn :
				 ty == DSMEM_TOKEN_MR ? t.mr.n_pages :
				 ty == DSMEM_TOKEN_CQ ? t.cq.flags :
				 ty == DSMEM_TOKEN_QP ? t.qp.access_flags :
				 ty == DSMEM_TOKEN_DB ? t.db.qp_index : t.wqe.qp_index,
				 fval(nr - 1, f[nr - 1].size, V));
		/* a wide value is cut to the field, never spilled next door */
		for (i = 0; i < nr; i++) {
			u = t;
			dstc_field_set(&u, &f[i], W);
			assert_int_equal(dstc_field_get(&u, &f[i]), fval(0, f[i].size, W));
			for (j = 0; j < nr; j++)
				if (j != i)
					assert_int_equal(dstc_field_get(&u, &f[j]),
							 fval(j, f[j].size, V));
			assert_memory_equal(&u, &t, sizeof(t.hdr));
			assert_memory_equal(u.bytes + size, t.bytes + size, 16 - size);
		}
		/* wrong length, version, type */
		assert_int_equal(dstc_token_check(&t, size - 1), -EINVAL);
		assert_int_equal(dstc_token_check(&t, size + 1), -EINVAL);
		assert_int_equal(dstc_token_check(&t, 3), -EINVAL);
		u = t;
		u.hdr.version = 0;
		assert_int_equal(dstc_token_check(&u, size), -EINVAL);
		u.hdr.version = DSMEM_TOKEN_VERSION + 1;
		assert_int_equal(dstc_token_check(&u, size), -EINVAL);
		u = t;
		u.hdr.type = DSMEM_TOKEN_TYPES;
		assert_int_equal(dstc_token_check(&u, size), -EINVAL);
		u.hdr.type = 0xff;
		assert_int_equal(dstc_token_check(&u, 16), -EINVAL);
	}
	assert_null(dstc_token_type_name(DSMEM_TOKEN_TYPES));
	assert_null(dstc_token_type_name(0xff));
	assert_int_equal(dstc_token_size(DSMEM_TOKEN_TYPES), 0);
	assert_null(dstc_token_fields(DSMEM_TOKEN_TYPES, &nr));
}

/*
 * Handles: every type round-trips with any generation and index, the
 * doorbell and WQE types use type bit 2 (bit 29), and a handle of the
 * first four types reads as in the two-bit layout below generation 8192.
 */
TEST(test_handle_layout)
{
	static const u16 gens[] = { 1, 2, 0x0fff, 0x1000, 0x1fff };
	static const u16 idx[] = { 0, 1, 0x7fff, 0xffff };
	unsigned int ty, g, i;
	u32 h;

	assert_true(DSMEM_TOKEN_TYPES <= 8);
	for (ty = 0; ty < DSMEM_TOKEN_TYPES; ty++)
		for (g = 0; g < sizeof(gens) / sizeof(gens[0]); g++)
			for (i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
				h = DSMEM_HANDLE(ty, gens[g], idx[i]);
				assert_int_equal(DSMEM_HANDLE_TYPE(h), ty);
				assert_int_equal(DSMEM_HANDLE_GEN(h), gens[g]);
				assert_int_equal(DSMEM_HANDLE_INDEX(h), idx[i]);
				if (ty < 4)
					assert_int_equal(h, (u32)ty << 30 |
							 (u32)gens[g] << 16 | idx[i]);
			}
	assert_int_equal(DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 2), 0xc0010002U);
	assert_int_equal(DSMEM_HANDLE(DSMEM_TOKEN_DB, 1, 2), 0x20010002U);
	assert_int_equal(DSMEM_HANDLE(DSMEM_TOKEN_WQE, 1, 2), 0x60010002U);
	/* the generation is cut to its 13 bits, never into the type */
	assert_int_equal(DSMEM_HANDLE_TYPE(DSMEM_HANDLE(DSMEM_TOKEN_PD, 0xffff, 0)),
			 DSMEM_TOKEN_PD);
	assert_int_equal(DSMEM_HANDLE_GEN_MASK, 0x1fff);
}

/* ---- 2. L2 page codec -------------------------------------------------- */

/* slot s of bucket b: neighbours, with a few far from the base (slot 0) */
static union dsmem_token page_tok(u32 b, unsigned int s)
{
	union dsmem_token t = qp_tok(b * DSTC_BUCKET_SLOTS + s, 0);
	u32 base = 0x5000 + b * DSTC_BUCKET_SLOTS;

	switch (s % 16) {
	case 5:
		t.qp.qpn = base + 0x7fffffffU;	/* the largest positive delta */
		break;
	case 6:
		t.qp.qpn = base + 0x80000000U;	/* ... and negative */
		break;
	case 7:
		t.qp.qpn = base - 1;
		t.qp.state = 0xff;
		t.qp.access_flags = 0;
		break;
	case 8:
		t.hdr.version = DSMEM_TOKEN_VERSION + 5;
		break;
	case 9:
		t = far_tok(b * DSTC_BUCKET_SLOTS + s);
		t.hdr.version = 0;
		break;
	}
	return t;
}

static void page_eq(const void *pg, const union dsmem_token *want)
{
	union dsmem_token out;
	unsigned int s;

	for (s = 0; s < DSTC_BUCKET_SLOTS; s++) {
		OK(dstc_page_get(pg, s, &out));
		tok_eq(&out, &want[s]);
	}
}

TEST(test_page_codec)
{
	const u32 b = 3, first = b * DSTC_BUCKET_SLOTS;
	union dsmem_token want[DSTC_BUCKET_SLOTS], out, sh, lg;
	void *pg = aligned_alloc(4096, DSTC_PAGE_SIZE);
	void *fresh = aligned_alloc(4096, DSTC_PAGE_SIZE);
	struct dstc_page_hdr *h = pg;
	unsigned int s, i, end;
	int ret = 0;

	assert_true(pg && fresh);
	dstc_page_init(pg, b);
	for (s = 0; s < DSTC_BUCKET_SLOTS; s++) {
		want[s] = page_tok(b, s);
		OK(dstc_page_put(pg, s, &want[s]));
	}
	assert_int_equal(h->used_slots, DSTC_BUCKET_SLOTS);
	assert_true(h->slot_bitmap[0] == ~0ULL && h->slot_bitmap[1] == ~0ULL);
	page_eq(pg, want);

	/* the base codes as its mask byte, neighbours as a small QP delta,
	 * a full 32-bit delta as a 5-byte varint, everything in under 20 */
	assert_int_equal(dstc_page_slot_bytes(pg, 0), 1);
	for (s = 1; s < DSTC_BUCKET_SLOTS; s++)
		if (s % 16 < 5 || s % 16 > 9)
			assert_in_range(dstc_page_slot_bytes(pg, s), 2, 3);
	assert_int_equal(dstc_page_slot_bytes(pg, 5), 6);
	assert_int_equal(dstc_page_slot_bytes(pg, 6), 6);
	assert_in_range(dstc_page_slot_bytes(pg, 9), 8, 19);
	assert_int_equal(dstc_page_slot_bytes(pg, DSTC_BUCKET_SLOTS), 0);

	/* rewritten shorter: in place, the stream does not grow */
	end = h->stream_end;
	want[9] = page_tok(b, 0);
	want[9].hdr.index = first + 9;
	OK(dstc_page_put(pg, 9, &want[9]));
	assert_int_equal(h->stream_end, end);
	assert_int_equal(dstc_page_slot_bytes(pg, 9), 1);
	/* longer: appended, the old record a hole */
	want[9] = page_tok(b, 9);
	OK(dstc_page_put(pg, 9, &want[9]));
	assert_int_equal(h->stream_end, end + dstc_page_slot_bytes(pg, 9));
	assert_int_equal(h->used_slots, DSTC_BUCKET_SLOTS);
	page_eq(pg, want);

	dstc_page_del(pg, 20);
	assert_int_equal(dstc_page_get(pg, 20, &out), -ENOENT);
	assert_int_equal(dstc_page_slot_bytes(pg, 20), 0);
	assert_false(h->slot_bitmap[0] & (1ULL << 20));
	dstc_page_del(pg, 20);	/* twice: no underflow */
	assert_int_equal(h->used_slots, DSTC_BUCKET_SLOTS - 1);
	OK(dstc_page_put(pg, 20, &want[20]));
	assert_int_equal(h->used_slots, DSTC_BUCKET_SLOTS);

	/* short/long rewrites of two slots, each appending behind the other,
	 * fill the stream with holes until a put is refused */
	for (i = 0; i < 1000; i++) {
		s = i & 1 ? 9 : 11;
		sh = page_tok(b, 0);
		sh.hdr.index = first + s;
		lg = far_tok(first + s);
		OK(dstc_page_put(pg, s, &sh));	/* in place */
		want[s] = sh;
		ret = dstc_page_put(pg, s, &lg);
		if (ret)
			break;
		want[s] = lg;
	}
	assert_int_equal(ret, -ENOSPC);
	page_eq(pg, want);	/* a refused put changes nothing */
	/* compacted into a fresh page it fits, and nothing else moved */
	dstc_page_compact(fresh, pg);
	assert_true(((struct dstc_page_hdr *)fresh)->stream_end < h->stream_end);
	page_eq(fresh, want);
	OK(dstc_page_put(fresh, s, &lg));
	want[s] = lg;
	page_eq(fresh, want);

	/* one bucket, one type; slots in range */
	dstc_token_init(&lg, DSMEM_TOKEN_MR, (u16)first);
	assert_int_equal(dstc_page_put(pg, 0, &lg), -EINVAL);
	assert_int_equal(dstc_page_put(pg, DSTC_BUCKET_SLOTS, &want[0]), -EINVAL);
	assert_int_equal(dstc_page_get(pg, DSTC_BUCKET_SLOTS, &out), -EINVAL);
	free(pg);
	free(fresh);
}

/* ---- 3. promotion ------------------------------------------------------ */

TEST(test_promotion)
{
	struct tenv *t = ENV({ P(PROMOTE_L2), 4 }, { P(PROMOTE_L1), 8 },
			     { P(WINDOW_NS), MS }, { P(BATCH_THRESHOLD), 4 });
	struct dstc_entry *e, *e11;
	union dsmem_token tok = qp_tok(10, 0);
	struct dstc_result r;
	u64 p[DSTC_P_NR];
	const char *why;
	unsigned int i;

	ins(t, 10, 2);
	e = dstc_entry(&t->c, 10);
	e11 = dstc_entry(&t->c, 11);
	TIERS(t, 10, L3);
	/* promote_l2 - 1 hits: counted, not queued */
	for (i = 1; i < 4; i++) {
		r = acc(t, 10, 0, T0 + i);
		assert_int_equal(r.tier, L3);
		tok_eq(&r.token, &tok);
		assert_false(r.kick);
	}
	assert_int_equal(dstc_window_hits(&t->c, e, T0 + 3), 3);
	assert_int_equal(e->queued, DSTC_Q_NONE);
	/* the promote_l2-th: queued in the background, below the batch size */
	assert_false(acc(t, 10, 0, T0 + 4).kick);
	assert_int_equal(e->queued, DSTC_Q_BACKGROUND);
	assert_int_equal(e->target, L2);
	acc(t, 10, 0, T0 + 5);	/* already queued: once */
	STATS(t, ST(QUEUED), 1);
	TIERS(t, 10, L3);	/* nothing moves before a batch */
	run(t, T0 + 6, false);
	TIERS(t, 10, L2);
	assert_int_equal(e->queued, DSTC_Q_NONE);
	STATS(t, ST(BATCHES), 1, ST(PROMOTE_L2), 1, ST(PROMOTE_L1), 0,
	      ST(EXPAND_BACKGROUND), 1, ST(EXPAND_URGENT), 0);

	/* hits 6 and 7 in L2: below promote_l1 */
	for (i = 6; i < 8; i++) {
		r = acc(t, 10, 0, T0 + i);
		assert_int_equal(r.tier, L2);
		tok_eq(&r.token, &tok);
	}
	STATS(t, ST(QUEUED), 1);
	/* the promote_l1-th; served from L2, nobody waits: background */
	assert_false(acc(t, 10, 0, T0 + 8).kick);
	assert_int_equal(e->queued, DSTC_Q_BACKGROUND);
	assert_int_equal(e->target, L1);
	run(t, T0 + 9, false);
	TIERS(t, 10, L1);
	/* an L2 -> L1 move fetches nothing from L3 */
	STATS(t, ST(QUEUED), 2, ST(PROMOTE_L1), 1, ST(BATCHES), 2,
	      ST(EXPAND_BACKGROUND), 1);
	r = acc(t, 10, 0, T0 + 10);
	assert_int_equal(r.tier, L1);
	tok_eq(&r.token, &tok);
	/* the modelled cost: each tier adds its own, the histogram agrees */
	assert_int_equal(r.cost_ns, 5);
	STATS(t, ST(HITS_L1), 1, ST(HITS_L2), 3, ST(HITS_L3), 5,
	      ST(COST_L3_NS), 5 * (5 + 200 + 800));
	assert_int_equal(t->st.hist[0][dstc_hist_bucket(5)], 1);
	assert_int_equal(t->st.hist[1][dstc_hist_bucket(205)], 3);
	assert_int_equal(t->st.hist[2][dstc_hist_bucket(1005)], 5);

	/* an L3 entry whose hits reach promote_l1 has a requester waiting:
	 * the urgent queue, and a kick even for a batch of one */
	memcpy(p, t->c.p, sizeof(p));
	p[P(PROMOTE_L1)] = 4;
	OK(setp(t, p, T0 + 20, &why));
	for (i = 1; i < 4; i++)
		assert_false(acc(t, 11, 0, T0 + 20 + i).kick);
	assert_int_equal(e11->queued, DSTC_Q_NONE);
	assert_true(acc(t, 11, 0, T0 + 24).kick);
	assert_int_equal(e11->queued, DSTC_Q_URGENT);
	assert_int_equal(e11->target, L1);
	run(t, T0 + 25, false);
	TIERS(t, 11, L1);
	STATS(t, ST(QUEUED), 3, ST(EXPAND_URGENT), 1, ST(EXPAND_BACKGROUND), 1,
	      ST(PROMOTE_L1), 2, ST(PROMOTE_L2), 1, ST(BATCHES), 3);
	tenv_free(t);
}

TEST(test_window_slides)
{
	struct tenv *t = ENV({ P(PROMOTE_L2), 4 }, { P(WINDOW_NS), MS });
	struct dstc_entry *e;
	u64 now = T0;
	unsigned int i;

	ins(t, 0, 1);
	e = dstc_entry(&t->c, 0);
	/* twenty hits 0.6 windows apart: a plain counter would promote,
	 * but no window ever holds four */
	for (i = 0; i < 20; i++) {
		now = T0 + i * 600 * US;
		acc(t, 0, 0, now);
		assert_in_range(dstc_window_hits(&t->c, e, now), 1, 3);
	}
	STATS(t, ST(QUEUED), 0, ST(HITS_L3), 20);
	/* two idle windows and it is forgotten */
	assert_int_equal(dstc_window_hits(&t->c, e, now + 2 * MS), 0);
	/* the control: four in one window do promote */
	hits(t, 0, 4, now + 3 * MS);
	STATS(t, ST(QUEUED), 1);
	tenv_free(t);
}

/* ---- 4. demotion ------------------------------------------------------- */

TEST(test_demotion)
{
	struct tenv *t = ENV({ P(L1_IDLE_NS), 10 * US }, { P(L2_IDLE_NS), 50 * US });
	u64 t1 = T0 + MS;

	ins(t, 0, 2);
	OK(mig(t, 0, L1, T0));
	OK(mig(t, 1, L2, T0));
	acc(t, 0, 0, T0);	/* both last used at T0 */
	acc(t, 1, 0, T0);
	run(t, T0 + 10 * US, true);	/* idle exactly l1_idle: stays */
	TIERS(t, 0, L1);
	STATS(t, ST(DEMOTE_L1), 0);
	run(t, T0 + 10 * US + 1, true);
	TIERS(t, 0, L2, 1, L2);		/* one tier down, not two */
	STATS(t, ST(DEMOTE_L1), 1);
	run(t, T0 + 50 * US, true);	/* exactly l2_idle: stays */
	TIERS(t, 0, L2, 1, L2);
	STATS(t, ST(DEMOTE_L2), 0);
	run(t, T0 + 50 * US + 1, true);
	TIERS(t, 0, L3, 1, L3);
	STATS(t, ST(DEMOTE_L2), 2);

	/* a use restarts the idle clock */
	OK(mig(t, 0, L1, t1));
	acc(t, 0, 0, t1 + 8 * US);
	run(t, t1 + 12 * US, true);
	TIERS(t, 0, L1);
	run(t, t1 + 18 * US + 1, true);
	TIERS(t, 0, L2);
	STATS(t, ST(DEMOTE_L1), 2);
	tenv_free(t);
}

/*
 * An entry moved up before it was ever used idles from its arrival, not
 * from the epoch: it used to fall straight back down (the guest test of
 * L2 placement failed once the guest had been up for l2_idle).
 */
TEST(test_idle_from_arrival)
{
	struct tenv *t = ENV({ P(L1_IDLE_NS), 10 * US }, { P(L2_IDLE_NS), 50 * US });

	ins(t, 0, 2);
	OK(mig(t, 0, L1, T0));
	OK(mig(t, 1, L2, T0));
	run(t, T0 + 10 * US, true);
	TIERS(t, 0, L1, 1, L2);
	run(t, T0 + 10 * US + 1, true);
	TIERS(t, 0, L2, 1, L2);
	STATS(t, ST(DEMOTE_L1), 1, ST(DEMOTE_L2), 0);
	tenv_free(t);
}

/* ---- 5. eviction ------------------------------------------------------- */

TEST(test_l1_lfu)
{
	struct tenv *t = ENV({ P(L1_CAPACITY), 4 }, { P(AGING_NS), MS });
	unsigned int i;

	ins(t, 0, 5);
	run(t, T0, true);	/* the aging clock starts here */
	for (i = 0; i < 4; i++)
		OK(mig(t, i, L1, T0));
	/* frequencies 3, 2, 2, 8, least recent first; entry 4 earns 8 in L3 */
	hits(t, 0, 3, T0 + 1);
	hits(t, 1, 2, T0 + 2);
	hits(t, 2, 2, T0 + 3);
	hits(t, 3, 8, T0 + 4);
	hits(t, 4, 8, T0 + 5);
	assert_int_equal(slot(t, 0)->freq, 3);
	assert_int_equal(slot(t, 1)->freq, 2);
	STATS(t, ST(EVICT_L1), 0);
	/* the least frequent goes, the least recent among equals: entry 1,
	 * not entry 2 (as rare, more recent) nor entry 0 (older, more hits) */
	OK(mig(t, 4, L1, T0 + 6));
	STATS(t, ST(EVICT_L1), 1);
	TIERS(t, 1, L2, 0, L1, 2, L1, 3, L1, 4, L1);
	assert_int_equal(slot(t, 4)->freq, 8);	/* it brings its window hits */

	run(t, T0 + MS - 1, true);	/* not yet aging_ns since the last */
	assert_int_equal(slot(t, 0)->freq, 3);
	assert_int_equal(slot(t, 2)->freq, 2);
	/* aging halves: 3 and 2 both become 1, and now recency decides */
	run(t, T0 + MS, true);
	assert_int_equal(slot(t, 0)->freq, 1);
	assert_int_equal(slot(t, 2)->freq, 1);
	assert_int_equal(slot(t, 3)->freq, 4);
	OK(mig(t, 1, L1, T0 + MS + 1));
	STATS(t, ST(EVICT_L1), 2);
	TIERS(t, 0, L2, 2, L1);
	tenv_free(t);
}

TEST(test_l2_lru)
{
	struct tenv *t = ENV({ P(L2_CAPACITY), 3 });
	unsigned int i;

	ins(t, 200, 4);
	for (i = 200; i < 203; i++)
		OK(mig(t, i, L2, T0));
	/* a hit makes 200, the oldest arrival, the most recent */
	assert_int_equal(acc(t, 200, 0, T0 + 1).tier, L2);
	OK(mig(t, 203, L2, T0 + 2));
	STATS(t, ST(EVICT_L2), 1);
	TIERS(t, 201, L3, 200, L2, 202, L2, 203, L2);
	assert_int_equal(t->c.l2_used, 3);
	/* and without hits, the order of arrival: 202 is next */
	OK(mig(t, 201, L2, T0 + 3));
	TIERS(t, 202, L3, 200, L2);
	STATS(t, ST(EVICT_L2), 2);
	tenv_free(t);
}

/* ---- 6. the inline update race ----------------------------------------- */

static struct {
	struct tenv *t;
	unsigned int left;	/* races still to lose */
	u64 foreign;		/* units "another CPU" added */
} hk;

/* another CPU's inline update lands between our read and our CAS */
static void hook_conflict(struct dstc_cache *c, u32 eid)
{
	if (!hk.left)
		return;
	hk.left--;
	__atomic_fetch_add(&c->l1[dstc_entry(c, eid)->token_offset].upd, 1,
			   __ATOMIC_SEQ_CST);
	hk.foreign++;
}

/* a migration takes the entry out of L1 between our read and our CAS */
static void hook_migrate(struct dstc_cache *c, u32 eid)
{
	(void)c;
	if (!hk.left)
		return;
	hk.left--;
	OK(mig(hk.t, eid, L2, T0));
}

TEST(test_cas_conflict)
{
	static const unsigned int conflicts[] = { 0, 1, 3, 4, 7 };
	const unsigned int R = 4;
	struct tenv *t = ENV({ P(CAS_RETRIES), R });
	u64 sum = 0, retries, fallbacks;
	unsigned int i, n, lost;
	struct dstc_result r;

	ins(t, 5, 1);
	OK(mig(t, 5, L1, T0));
	memset(&hk, 0, sizeof(hk));
	hk.t = t;
	t->c.apply_hook = hook_conflict;
	for (i = 0; i < sizeof(conflicts) / sizeof(conflicts[0]); i++) {
		n = conflicts[i];
		lost = n < R ? n : R;	/* the hook runs once per attempt */
		retries = S(t, CAS_RETRIES);
		fallbacks = S(t, CAS_FALLBACKS);
		hk.left = n;
		r = acc(t, 5, 10, T0 + 1 + i);
		hk.left = 0;
		assert_int_equal(r.tier, L1);
		assert_int_equal(r.retries, lost);
		assert_int_equal(S(t, CAS_RETRIES) - retries, lost);
		assert_int_equal(S(t, CAS_FALLBACKS) - fallbacks, n >= R);
		/* ours once, theirs once each: no update lost or doubled */
		sum += 10 + lost;
		assert_int_equal(hk.foreign + 10 * (i + 1), sum);
		assert_int_equal(dstc_relaxed(&t->c, 5), sum);
	}
	/* the two fallbacks went to the L3 copy, the rest is in the slot */
	STATS(t, ST(CAS_FALLBACKS), 2);
	assert_int_equal(dstc_entry(&t->c, 5)->relaxed, 20);
	OK(mig(t, 5, L3, T0 + 10));
	STATS(t, ST(WRITEBACKS), 1);
	assert_int_equal(dstc_entry(&t->c, 5)->relaxed, sum);
	assert_int_equal(dstc_relaxed(&t->c, 5), sum);

	/* the slot closes under the CAS: the update lands in the new tier */
	OK(mig(t, 5, L1, T0 + 11));
	t->c.apply_hook = hook_migrate;
	hk.left = 1;
	r = acc(t, 5, 10, T0 + 12);
	assert_int_equal(hk.left, 0);
	t->c.apply_hook = NULL;
	assert_int_equal(r.tier, L2);
	assert_true(S(t, READ_RETRIES) >= 1);
	STATS(t, ST(CAS_FALLBACKS), 2);
	assert_int_equal(dstc_relaxed(&t->c, 5), sum + 10);
	tenv_free(t);
}

/* ---- 7. pinning -------------------------------------------------------- */

TEST(test_pinned)
{
	struct tenv *t = ENV({ P(L1_CAPACITY), 3 }, { P(L1_IDLE_NS), 10 * US });
	u64 p[DSTC_P_NR], before[DSTC_P_NR], now = T0 + MS;
	const char *why = NULL;

	ins(t, 0, 4);
	OK(pin(t, 0, true, T0));
	TIERS(t, 0, L1);
	assert_true(flags(t, 0) & DSMEM_TOKEN_PINNED);
	OK(pin(t, 1, true, T0));
	assert_int_equal(t->c.l1_pinned, 2);
	OK(mig(t, 2, L1, T0));
	/* shrinking L1 to the pinned count evicts the unpinned one only */
	memcpy(p, t->c.p, sizeof(p));
	p[P(L1_CAPACITY)] = 2;
	OK(setp(t, p, T0, &why));
	TIERS(t, 2, L3, 0, L1, 1, L1);
	STATS(t, ST(EVICT_L1), 1);
	/* below the pinned count: refused, nothing applied */
	memcpy(before, t->c.p, sizeof(before));
	p[P(L1_CAPACITY)] = 1;
	p[P(CAS_RETRIES)] = 99;
	assert_int_equal(setp(t, p, T0, &why), -EBUSY);
	assert_non_null(strstr(why, "pinned"));
	assert_memory_equal(t->c.p, before, sizeof(before));

	/* L1 full of pinned entries: no more pins, no room, no moving them */
	assert_int_equal(pin(t, 3, true, T0), -ENOSPC);
	assert_int_equal(mig(t, 3, L1, T0), -ENOSPC);
	STATS(t, ST(MIGRATE_FAILED), 1);
	assert_int_equal(mig(t, 0, L2, T0), -EBUSY);
	assert_int_equal(mig(t, 0, L3, T0), -EBUSY);
	TIERS(t, 3, L3, 0, L1);
	/* nor idling them out */
	run(t, now, true);
	TIERS(t, 0, L1, 1, L1);
	STATS(t, ST(DEMOTE_L1), 0);
	assert_true(acc(t, 0, 0, now).flags & DSMEM_TOKEN_PINNED);

	/* unpinned (twice is once), it idles out like any other */
	OK(pin(t, 0, false, now));
	OK(pin(t, 0, false, now));
	assert_int_equal(t->c.l1_pinned, 1);
	assert_false(flags(t, 0) & DSMEM_TOKEN_PINNED);
	run(t, now + 10 * US + 1, true);
	TIERS(t, 0, L2, 1, L1);
	STATS(t, ST(DEMOTE_L1), 1);
	/* removing a pinned entry gives its pin back */
	OK(rm(t, 1, t->gen[1]));
	assert_int_equal(t->c.l1_pinned, 0);
	tenv_free(t);
}

/* ---- 8. write-back and write-through ----------------------------------- */

TEST(test_write_back_through)
{
	struct tenv *t = ENV({ P(L1_IDLE_NS), 10 * US });
	struct dstc_entry *e0, *e1;
	union dsmem_token nt;
	struct dstc_result r;
	u64 now = T0 + MS;
	u32 ver;
	u8 tier;

	ins(t, 0, 2);
	e0 = dstc_entry(&t->c, 0);
	e1 = dstc_entry(&t->c, 1);
	/* relaxed fields in L1 stay in the slot, dirty, until demotion */
	OK(mig(t, 0, L1, T0));
	acc(t, 0, 3, T0 + 1);
	acc(t, 0, 3, T0 + 2);
	assert_int_equal(dstc_relaxed(&t->c, 0), 6);
	assert_int_equal(e0->relaxed, 0);
	assert_true(flags(t, 0) & DSMEM_TOKEN_DIRTY);
	STATS(t, ST(WRITEBACKS), 0);
	run(t, T0 + 2 + 10 * US + 1, true);
	TIERS(t, 0, L2);
	STATS(t, ST(WRITEBACKS), 1);
	assert_int_equal(e0->relaxed, 6);
	assert_false(flags(t, 0) & DSMEM_TOKEN_DIRTY);
	/* below L1 there is no slot: straight to the L3 copy */
	acc(t, 0, 4, T0 + 3);
	assert_int_equal(e0->relaxed, 10);
	STATS(t, ST(WRITEBACKS), 1);

	/* strict fields: through to L3 and to the tier's copy at once */
	for (tier = L3; tier >= L1; tier--) {
		nt = qp_tok(1, 100 * tier);
		nt.qp.state = 5 + tier;
		if (tier != L3)
			OK(mig(t, 1, tier, now));
		ver = DSTC_CTL_VER(ctl(t, 1));
		OK(upd(t, 1, t->gen[1], &nt));
		assert_int_equal(DSTC_CTL_VER(ctl(t, 1)), ver + 1);
		TIERS(t, 1, tier);
		tok_eq(&e1->token, &nt);
		r = acc(t, 1, 0, now);
		assert_int_equal(r.tier, tier);
		tok_eq(&r.token, &nt);
	}
	STATS(t, ST(WRITETHROUGHS), 3);
	/* in L1 it leaves the pending relaxed delta alone */
	acc(t, 1, 2, now);
	nt = qp_tok(1, 7);
	OK(upd(t, 1, t->gen[1], &nt));
	assert_int_equal(dstc_relaxed(&t->c, 1), 2);
	assert_true(flags(t, 1) & DSMEM_TOKEN_DIRTY);
	r = acc(t, 1, 0, now);
	tok_eq(&r.token, &nt);
	/* another object's token, or a stale handle: refused */
	nt.hdr.index = 2;
	assert_int_equal(upd(t, 1, t->gen[1], &nt), -EINVAL);
	dstc_token_init(&nt, DSMEM_TOKEN_MR, 1);
	assert_int_equal(upd(t, 1, t->gen[1], &nt), -EINVAL);
	nt = qp_tok(1, 9);
	assert_int_equal(upd(t, 1, t->gen[1] ^ 1, &nt), -ESTALE);
	STATS(t, ST(WRITETHROUGHS), 4);
	tenv_free(t);
}

/* ---- 9. parameters ----------------------------------------------------- */

/* -ERANGE, and *why starts with the name of the parameter at fault */
#define BAD(p, name)	bad_at(p, name, __FILE__, __LINE__)
static void bad_at(const u64 *p, const char *name, const char *file, int line)
{
	const char *why = NULL;
	size_t n = strlen(name);

	_assert_int_equal(dstc_params_check(p, &why), -ERANGE, file, line);
	_assert_true(why && !strncmp(why, name, n) && (why[n] == ' ' || !why[n]),
		     "why names it", file, line);
}

TEST(test_params)
{
	u64 p[DSTC_P_NR], q[DSTC_P_NR], cp[DSTC_P_NR];
	struct dstc_cache c;
	const char *why;
	struct tenv *t;
	unsigned int i, j;

	dstc_params_default(p);
	OK(dstc_params_check(p, &why));
	for (i = 0; i < DSTC_P_NR; i++) {
		const struct dstc_param_desc *d = &dstc_params[i];

		assert_true(d->min <= d->def && d->def <= d->max);
		for (j = 0; j < i; j++)
			assert_string_not_equal(d->name, dstc_params[j].name);
		/* a base where the cross rules hold whatever q[i] is */
		memcpy(q, p, sizeof(q));
		q[P(PROMOTE_L2)] = q[P(BATCH_THRESHOLD)] = 1;
		q[P(PROMOTE_L1)] = 65535;
		q[P(BATCH_MAX)] = 4096;
		q[P(QUEUE_MAX)] = 16384;
		q[i] = d->min;
		OK(dstc_params_check(q, &why));
		q[i] = d->max;
		OK(dstc_params_check(q, &why));
		q[i] = d->max + 1;
		BAD(q, d->name);
		if (d->min) {
			q[i] = d->min - 1;
			BAD(q, d->name);
		}
	}
	memcpy(q, p, sizeof(q));
	q[P(L1_CAPACITY)] = 0;
	BAD(q, "l1_capacity");
	memcpy(q, p, sizeof(q));
	q[P(L2_CAPACITY)] = 0;
	BAD(q, "l2_capacity");
	memcpy(q, p, sizeof(q));
	q[P(PROMOTE_L1)] = q[P(PROMOTE_L2)] - 1;
	BAD(q, "promote_l1");
	q[P(PROMOTE_L1)] = q[P(PROMOTE_L2)];	/* equal is fine */
	OK(dstc_params_check(q, &why));
	q[P(BATCH_MAX)] = q[P(BATCH_THRESHOLD)] - 1;
	BAD(q, "batch_max");
	q[P(BATCH_MAX)] = q[P(BATCH_THRESHOLD)];
	OK(dstc_params_check(q, &why));
	q[P(QUEUE_MAX)] = q[P(BATCH_THRESHOLD)] - 1;
	BAD(q, "queue_max");
	/* init refuses what the check refuses, and absurd sizes */
	assert_int_equal(dstc_cache_init(&c, &t_ops, NULL, NE, q), -EINVAL);
	assert_int_equal(dstc_cache_init(&c, &t_ops, NULL, 0, p), -EINVAL);
	assert_int_equal(dstc_cache_init(&c, &t_ops, NULL, DSTC_ENTRIES_MAX + 1, p),
			 -EINVAL);

	/* a refused set leaves the cache as it was */
	t = ENV({ P(PROMOTE_L2), 16 });
	memcpy(cp, t->c.p, sizeof(cp));
	memcpy(q, cp, sizeof(q));
	q[P(L1_CAPACITY)] = 10;
	q[P(PROMOTE_L1)] = 1;
	assert_int_equal(setp(t, q, T0, &why), -ERANGE);
	q[P(PROMOTE_L1)] = 64;
	q[P(CAS_RETRIES)] = 0;
	assert_int_equal(setp(t, q, T0, &why), -ERANGE);
	assert_memory_equal(t->c.p, cp, sizeof(cp));
	assert_int_equal(t->c.eff_promote_l1, 65535);
	assert_int_equal(t->c.eff_promote_l2, 16);
	/* a good one applies, thresholds in effect included */
	q[P(CAS_RETRIES)] = 3;
	OK(setp(t, q, T0, &why));
	assert_memory_equal(t->c.p, q, sizeof(q));
	assert_int_equal(t->c.eff_promote_l1, 64);
	tenv_free(t);
}

/*
 * A cache's L1 slots bound its l1_capacity: DSTC_L1_MAX in the module, any
 * number in the simulator (dstc_cache_init_l1); here 8.  What the check
 * refuses, it names (bad), and the table never overflows.
 */
TEST(test_l1_slots)
{
	u64 p[DSTC_P_NR], q[DSTC_P_NR];
	struct dstc_cache c;
	unsigned int bad, i;
	const char *why;
	struct tenv *t;

	dstc_params_default(p);
	p[P(PROMOTE_L2)] = p[P(PROMOTE_L1)] = 65535;
	p[P(L1_IDLE_NS)] = p[P(L2_IDLE_NS)] = 60000 * MS;
	p[P(AGING_NS)] = p[P(ADAPT_NS)] = 60000 * MS;
	p[P(PREFETCH)] = 0;
	/* the module's bound, and one beyond it for a simulator */
	p[P(L1_CAPACITY)] = DSTC_L1_MAX + 1;
	BAD(p, "l1_capacity");
	assert_int_equal(dstc_cache_init(&c, &t_ops, NULL, NE, p), -EINVAL);
	OK(dstc_params_check_l1(p, DSTC_L1_MAX + 1, &bad, &why));
	assert_int_equal(bad, DSTC_P_NR);
	/* bad says which; a rule between two says none */
	assert_int_equal(dstc_params_check_l1(p, DSTC_L1_MAX, &bad, &why), -ERANGE);
	assert_int_equal(bad, P(L1_CAPACITY));
	p[P(L1_CAPACITY)] = 8;
	memcpy(q, p, sizeof(q));
	q[P(CAS_RETRIES)] = 0;
	assert_int_equal(dstc_params_check_l1(q, 8, &bad, &why), -ERANGE);
	assert_int_equal(bad, P(CAS_RETRIES));
	memcpy(q, p, sizeof(q));
	q[P(BATCH_MAX)] = q[P(BATCH_THRESHOLD)] - 1;
	assert_int_equal(dstc_params_check_l1(q, 8, &bad, &why), -ERANGE);
	assert_int_equal(bad, DSTC_P_NR);
	assert_string_equal(why, "batch_max below batch_threshold");
	/* no slots, too many, or a capacity beyond them: refused */
	assert_int_equal(dstc_cache_init_l1(&c, &t_ops, NULL, NE, p, 0), -EINVAL);
	assert_int_equal(dstc_cache_init_l1(&c, &t_ops, NULL, NE, p, DSTC_ENTRIES_MAX + 1),
			 -EINVAL);
	assert_int_equal(dstc_cache_init_l1(&c, &t_ops, NULL, NE, p, 7), -EINVAL);

	cur = calloc(1, sizeof(*cur));
	assert_non_null(cur);
	t = cur;
	OK(dstc_cache_init_l1(&t->c, &t_ops, t, NE, p, 8));
	assert_int_equal(t->c.l1_slots, 8);
	ins(t, 0, 9);
	for (i = 0; i < 9; i++)
		OK(mig(t, i, L1, T0 + i));
	STATS(t, ST(EVICT_L1), 1);
	assert_int_equal(t->c.l1_used, 8);
	/* a set may not outgrow the table, and a refused one changes nothing */
	memcpy(q, t->c.p, sizeof(q));
	q[P(L1_CAPACITY)] = 9;
	assert_int_equal(setp(t, q, T0 + 9, &why), -ERANGE);
	assert_string_equal(why, "l1_capacity out of range");
	assert_int_equal(t->c.p[P(L1_CAPACITY)], 8);
	q[P(L1_CAPACITY)] = 4;
	OK(setp(t, q, T0 + 9, &why));
	assert_int_equal(t->c.l1_used, 4);
	tenv_free(t);
}

/* ---- 10. handles and generations --------------------------------------- */

TEST(test_handles)
{
	struct tenv *t = ENV({ P(NR), 0 });
	union dsmem_token tok = qp_tok(5, 0);
	struct dstc_result r;
	u16 g1, prev, g;
	bool wrapped = false;
	unsigned int i;

#define ACCESS(eid, gen)	dstc_access(&t->c, &t->st, eid, gen, 0, T0, &r)
	ins(t, 5, 1);
	g1 = t->gen[5];
	assert_int_equal(ACCESS(5, g1 ^ 1), -ESTALE);
	assert_int_equal(ACCESS(5, (g1 + 1) & DSMEM_HANDLE_GEN_MASK), -ESTALE);
	/* never inserted: in a chunk, in no chunk, out of range */
	assert_int_equal(ACCESS(6, 1), -ENOENT);
	assert_int_equal(ACCESS(300, 1), -ENOENT);
	assert_int_equal(ACCESS(NE, 1), -ENOENT);
	assert_int_equal(rm(t, 6, 1), -ENOENT);
	assert_int_equal(upd(t, 6, 1, &tok), -ENOENT);
	t->gen[6] = 1;
	assert_int_equal(pin(t, 6, true, T0), -ENOENT);
	/* live: no second insert; out of range: none at all */
	assert_int_equal(LOCKED(t, dstc_insert_locked(&t->c, 5, 1, &tok, &g)), -EEXIST);
	assert_int_equal(LOCKED(t, dstc_insert_locked(&t->c, NE, 1, &tok, &g)), -EINVAL);

	assert_int_equal(rm(t, 5, g1 ^ 1), -ESTALE);
	TIERS(t, 5, L3);
	OK(mig(t, 5, L2, T0));	/* removal empties the tiers too */
	OK(rm(t, 5, g1));
	assert_int_equal(t->pages, 0);
	assert_int_equal(t->c.nlive, 0);
	assert_int_equal(ACCESS(5, g1), -ESTALE);
	assert_int_equal(rm(t, 5, g1), -ESTALE);
	assert_int_equal(ctl(t, 5), 0);
	ins(t, 5, 1);
	assert_int_not_equal(t->gen[5], g1);
	assert_int_equal(acc(t, 5, 0, T0).tier, L3);
	assert_int_equal(ACCESS(5, g1), -ESTALE);
#undef ACCESS
	/* generations cycle through every non-zero value, never 0 */
	for (i = 0; i < DSMEM_HANDLE_GEN_MASK + 2; i++) {
		prev = t->gen[5];
		OK(rm(t, 5, prev));
		ins(t, 5, 1);
		assert_int_not_equal(t->gen[5], prev);
		assert_true(t->gen[5] <= DSMEM_HANDLE_GEN_MASK);
		wrapped |= t->gen[5] < prev;
	}
	assert_true(wrapped);
	tenv_free(t);
}

/* ---- 11. batches, prefetch, budget ------------------------------------- */

TEST(test_batch_queue)
{
	static const bool kick[6] = { false, false, true, true, true, false };
	struct tenv *t = ENV({ P(PROMOTE_L2), 2 }, { P(BATCH_THRESHOLD), 3 },
			     { P(BATCH_MAX), 4 }, { P(QUEUE_MAX), 5 });
	unsigned int i;

	ins(t, 0, 6);
	for (i = 0; i < 6; i++) {
		assert_false(acc(t, i, 0, T0).kick);
		/* kicks from batch_threshold queued on; the sixth finds it full */
		assert_int_equal(acc(t, i, 0, T0).kick, kick[i]);
	}
	STATS(t, ST(QUEUED), 5, ST(BACKPRESSURE), 1);
	assert_int_equal(dstc_entry(&t->c, 5)->queued, DSTC_Q_NONE);
	run(t, T0 + 1, false);	/* batch_max of them, first come first */
	STATS(t, ST(BATCHES), 1);
	TIERS(t, 0, L2, 1, L2, 2, L2, 3, L2, 4, L3);
	assert_int_equal(dstc_entry(&t->c, 4)->queued, DSTC_Q_BACKGROUND);
	/* with room again, the refused one gets in on its next hit */
	assert_false(acc(t, 5, 0, T0 + 2).kick);
	STATS(t, ST(QUEUED), 6);
	run(t, T0 + 3, false);
	TIERS(t, 4, L2, 5, L2);
	run(t, T0 + 4, false);	/* an empty queue is no batch */
	STATS(t, ST(BATCHES), 2);
	tenv_free(t);
}

TEST(test_prefetch)
{
	struct tenv *t = ENV({ P(PROMOTE_L2), 4 }, { P(WINDOW_NS), MS },
			     { P(PREFETCH), 2 });
	u64 t1 = T0 + 3 * MS;

	ins(t, 127, 7);		/* 127: the bucket before */
	acc(t, 129, 0, T0);	/* out of the window by t1 */
	acc(t, 130, 0, t1);
	acc(t, 131, 0, t1);
	acc(t, 132, 0, t1);
	acc(t, 127, 0, t1);
	hits(t, 128, 4, t1);
	STATS(t, ST(QUEUED), 1);
	run(t, t1 + 1, false);
	/* 128 and, up to prefetch, its recently used neighbours: not 132
	 * (over prefetch), 129 (out of the window), 133 (never used), nor
	 * 127 (another bucket) */
	TIERS(t, 128, L2, 130, L2, 131, L2, 132, L3, 129, L3, 133, L3, 127, L3);
	STATS(t, ST(PREFETCHED), 2, ST(PROMOTE_L2), 3, ST(EXPAND_BACKGROUND), 1);
	tenv_free(t);
}

TEST(test_migrate_budget)
{
	struct tenv *t = ENV({ P(PROMOTE_L2), 1 }, { P(BATCH_THRESHOLD), 8 },
			     { P(BATCH_MAX), 8 }, { P(MIGRATE_BUDGET), 3 },
			     { P(ADAPT_NS), MS });
	unsigned int i;

	ins(t, 0, 5);
	for (i = 0; i < 5; i++)
		acc(t, i, 0, T0);
	STATS(t, ST(QUEUED), 5);
	run(t, T0 + 1, false);
	STATS(t, ST(MIGRATIONS), 3);
	TIERS(t, 2, L2, 3, L3);
	run(t, T0 + 2, false);	/* spent: the rest wait */
	STATS(t, ST(MIGRATIONS), 3, ST(BATCHES), 1);
	/* moves outside batches count too, even past the budget */
	OK(mig(t, 0, L3, T0 + 2));
	run(t, T0 + 2, false);
	TIERS(t, 3, L3, 4, L3);
	/* the interval ends: maintenance (after this run's batch) refills it */
	run(t, T0 + 3, true);
	TIERS(t, 3, L3);
	run(t, T0 + 4, false);
	TIERS(t, 3, L2, 4, L2);
	STATS(t, ST(MIGRATIONS), 6, ST(BATCHES), 2);
	tenv_free(t);
}

/* ---- 12. adaptation ---------------------------------------------------- */

#define A_NS	MS

/* n single hits on distinct L3 entries from first on: all served by L3 */
static void l3_hits_from(struct tenv *t, u32 first, unsigned int n, u64 now)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_int_equal(acc(t, first + i, 0, now).tier, L3);
}

#define l3_hits(t, n, now)	l3_hits_from(t, 0, n, now)

/* a window far shorter than an interval: hits do not carry across */
static struct tenv *adapt_env(u64 mode, u64 budget)
{
	struct tenv *t = ENV({ P(MODE), mode }, { P(PROMOTE_L1), 64 },
			     { P(PROMOTE_L2), 8 }, { P(WINDOW_NS), 10 * US },
			     { P(ADAPT_NS), A_NS }, { P(MIGRATE_BUDGET), budget });

	ins(t, 0, 100);
	ins(t, 200, 5);
	ins(t, 300, 1);
	return t;
}

/* Six runs over five intervals (L3-bound, early, L3-bound, L1-bound, too
 * few accesses, migration-bound with L2 missing); eff after each run. */
static void adapt_script(struct tenv *t, u32 eff[6][2])
{
	unsigned int i, k = 0;

#define SNAP()	(eff[k][0] = t->c.eff_promote_l1, eff[k++][1] = t->c.eff_promote_l2)
	l3_hits(t, 100, T0);
	run(t, T0, true);
	SNAP();
	l3_hits(t, 100, T0 + A_NS / 2);
	run(t, T0 + A_NS - 1, true);	/* the interval is not over */
	SNAP();
	run(t, T0 + A_NS, true);
	SNAP();
	OK(mig(t, 300, L1, T0 + A_NS + 1));
	hits(t, 300, 100, T0 + A_NS + 2);
	run(t, T0 + 2 * A_NS, true);
	SNAP();
	l3_hits(t, 63, T0 + 2 * A_NS + 1);
	run(t, T0 + 3 * A_NS, true);
	SNAP();
	for (i = 200; i < 205; i++) {	/* 10 migrations of a budget of 10 */
		OK(mig(t, i, L2, T0 + 3 * A_NS + 1));
		OK(mig(t, i, L3, T0 + 3 * A_NS + 1));
	}
	l3_hits(t, 100, T0 + 3 * A_NS + 2);
	run(t, T0 + 4 * A_NS, true);
	SNAP();
#undef SNAP
}

/*
 * Adaptive mode's thresholds: they start at 1 whatever is set (every miss
 * is queued for L1, where the window and the duel decide), double while
 * an interval spends the migration budget, up to the set ones, and halve
 * back while one does not; too few accesses change nothing.
 */
TEST(test_adaptive)
{
	static const u32 want[7][2] = {
		{ 2, 1 },	/* 10 moved of 10: spent */
		{ 4, 2 },
		{ 8, 4 },
		{ 8, 4 },	/* the set promote_l1 is the ceiling */
		{ 8, 4 },	/* no accesses: too few to judge */
		{ 4, 2 },	/* nothing moved */
		{ 2, 1 },
	};
	struct tenv *t = ENV({ P(MODE), DSMEM_CACHE_ADAPTIVE }, { P(PROMOTE_L1), 8 },
			     { P(PROMOTE_L2), 4 }, { P(ADAPT_NS), A_NS },
			     { P(MIGRATE_BUDGET), 10 });
	u32 eff[7][2];
	unsigned int i, k = 0;
	u64 p[DSTC_P_NR];
	const char *why;

	assert_int_equal(t->c.eff_promote_l1, 1);
	assert_int_equal(t->c.eff_promote_l2, 1);
	ins(t, 0, 400);
#define SNAP()	(eff[k][0] = t->c.eff_promote_l1, eff[k++][1] = t->c.eff_promote_l2)
	/* four intervals of 64 misses each, of which the budget moves 10 */
	for (i = 0; i < 4; i++) {
		l3_hits_from(t, 64 * i, 64, T0 + i * A_NS);
		run(t, T0 + i * A_NS, true);
		SNAP();
	}
	STATS(t, ST(PROMOTE_L1), 40, ST(ADAPT_UP), 3);
	/* the rest of the queue drains, 10 an interval, nobody asking */
	for (i = 4; t->c.q[0].len + t->c.q[1].len; i++)
		run(t, T0 + i * A_NS, true);
	SNAP();
	run(t, T0 + i++ * A_NS, true);	/* an interval with nothing moved ... */
	hits(t, 0, 64, T0 + i * A_NS);	/* ... but 64 L1 hits */
	run(t, T0 + i++ * A_NS, true);
	SNAP();
	hits(t, 0, 64, T0 + i * A_NS);
	run(t, T0 + i * A_NS, true);
	SNAP();
#undef SNAP
	assert_memory_equal(eff, want, sizeof(want));
	STATS(t, ST(ADAPT_UP), 3, ST(ADAPT_DOWN), 2);
	/* setting the parameters starts again from 1 */
	memcpy(p, t->c.p, sizeof(p));
	OK(setp(t, p, T0 + (i + 1) * A_NS, &why));
	assert_int_equal(t->c.eff_promote_l1, 1);
	assert_int_equal(t->c.eff_promote_l2, 1);
	tenv_free(t);
}

/*
 * Adaptive mode's L1: every entrant joins the window (1% of L1, at least
 * one entry); the window's oldest moves to main while L1 has room, and
 * once it is full duels main's least asked-for entry: the one asked for
 * more stays, the loser goes to L2, and a tie keeps main's.
 */
TEST(test_adaptive_duel)
{
	struct tenv *t = ENV({ P(MODE), DSMEM_CACHE_ADAPTIVE }, { P(L1_CAPACITY), 4 },
			     { P(L2_CAPACITY), 16 }, { P(WINDOW_NS), 60000 * MS });
	u64 now = T0;
	u32 e;

	ins(t, 0, 10);
	assert_int_equal(t->c.w_target, 1);
	for (e = 0; e < 3; e++) {	/* 0, 1, 2 asked for 5 times each */
		hits(t, e, 5, ++now);
		run(t, ++now, false);
	}
	TIERS(t, 0, L1, 1, L1, 2, L1);
	assert_int_equal(t->c.w_used, 1);
	assert_int_equal(t->c.w_head, dstc_entry(&t->c, 2)->token_offset);
	hits(t, 3, 1, ++now);		/* 2 leaves the window; L1 is full */
	run(t, ++now, false);
	TIERS(t, 3, L1);
	STATS(t, ST(EVICT_L1), 0, ST(PROMOTE_L1), 4);
	hits(t, 4, 1, ++now);		/* 3, asked for once, loses to 5 */
	run(t, ++now, false);
	TIERS(t, 3, L2, 4, L1, 0, L1, 1, L1, 2, L1);
	STATS(t, ST(EVICT_L1), 1);
	hits(t, 5, 5, ++now);		/* 4 loses too; 5 comes in, 5 hits */
	run(t, ++now, false);
	TIERS(t, 4, L2, 5, L1);
	hits(t, 6, 1, ++now);		/* 5 ties with main's 5: main keeps its own */
	run(t, ++now, false);
	TIERS(t, 5, L2, 6, L1, 0, L1, 1, L1, 2, L1);
	hits(t, 7, 9, ++now);		/* 6 loses; 7 comes in with 9 */
	run(t, ++now, false);
	hits(t, 8, 1, ++now);		/* 7 beats 0, the least recent of main's 5s */
	run(t, ++now, false);
	TIERS(t, 6, L2, 7, L1, 0, L2, 1, L1, 2, L1, 8, L1);
	STATS(t, ST(EVICT_L1), 5, ST(PROMOTE_L1), 9);
	assert_int_equal(t->c.l1_used, 4);
	assert_int_equal(t->c.w_used, 1);
	/* leaving adaptive mode: the window's entry stays, as a plain one */
	{
		u64 p[DSTC_P_NR];
		const char *why;

		memcpy(p, t->c.p, sizeof(p));
		p[P(MODE)] = DSMEM_CACHE_FIXED;
		OK(setp(t, p, ++now, &why));
		assert_int_equal(t->c.w_used, 0);
		assert_int_equal(t->c.w_head, DSTC_NONE);
		TIERS(t, 8, L1);
	}
	tenv_free(t);
}

/* 640 accesses, l1 of them L1 hits (entry 0), the rest L3 hits, which
 * nothing promotes: the budget is spent */
static void sample(struct tenv *t, u32 l1, u32 *miss, u64 *now)
{
	u32 i;

	for (i = 0; i < 640; i++) {
		*now += US;
		if (i < l1)
			assert_int_equal(acc(t, 0, 0, *now).tier, L1);
		else
			assert_int_equal(acc(t, 1 + (*miss)++ % (NE - 1), 0, *now).tier, L3);
	}
	run(t, *now, true);
}

/*
 * Caffeine's hill climber on the window: a sample is ten L1s of accesses
 * (640 here); a step that raised the L1 hit rate is taken again, one that
 * lowered it is reversed; a change of 5 points restarts the step at 1/16
 * of L1 (4), a smaller one shrinks it by 2%.  The frequency window
 * follows the rate: 20 L1s of accesses at one a microsecond.
 */
TEST(test_adaptive_climb)
{
	struct tenv *t = ENV({ P(MODE), DSMEM_CACHE_ADAPTIVE }, { P(L1_CAPACITY), 64 },
			     { P(MIGRATE_BUDGET), 1 }, { P(WINDOW_NS), 60000 * MS },
			     { P(QUEUE_MAX), 1 }, { P(BATCH_THRESHOLD), 1 });
	u64 now = T0;
	u32 miss = 0;

	ins(t, 0, NE);
	/* the budget of 1 spent here: no batch moves anything after it */
	OK(mig(t, 0, L1, now));
	run(t, now, true);		/* the first sample starts */
	assert_int_equal(t->c.w_target, 1);
	sample(t, 320, &miss, &now);	/* 50%: the first rate, no step */
	assert_int_equal(t->c.w_target, 1);
	assert_int_equal(t->c.eff_window, 1280 * US);
	sample(t, 480, &miss, &now);	/* 75%: up by 4, the step restarts */
	assert_int_equal(t->c.w_target, 5);
	assert_int_equal(t->c.climb_step, 4);
	sample(t, 486, &miss, &now);	/* up a little: again, the step 3 */
	assert_int_equal(t->c.w_target, 9);
	assert_int_equal(t->c.climb_step, 3);
	sample(t, 490, &miss, &now);
	assert_int_equal(t->c.w_target, 12);
	assert_int_equal(t->c.climb_step, 2);
	sample(t, 320, &miss, &now);	/* down 26 points: back, restart */
	assert_int_equal(t->c.w_target, 10);
	assert_int_equal(t->c.climb_step, -4);
	sample(t, 320, &miss, &now);	/* no worse: on down */
	assert_int_equal(t->c.w_target, 6);
	assert_int_equal(t->c.climb_step, -3);
	STATS(t, ST(PROMOTE_L1), 1, ST(MIGRATIONS), 1);
	/* a sample takes its length from the accesses, whatever the clock */
	now += 100 * MS;
	run(t, now, true);
	assert_int_equal(t->c.w_target, 6);
	tenv_free(t);
}

/*
 * Adaptive prefetch: neighbours that nobody asks for in L2 halve it,
 * ones that half are asked for double it, up to the set number; once
 * off, it tries one again every 16 intervals.  A queue of one keeps the
 * neighbours out of the queue, so that they are prefetched.
 */
static void prefetch_round(struct tenv *t, u32 off, u32 n, u64 now)
{
	u32 b, i;

	for (b = 0; b < NE / DSTC_BUCKET_SLOTS; b++) {
		u32 base = b * DSTC_BUCKET_SLOTS + off;

		assert_int_equal(acc(t, base, 0, now).tier, L3);
		for (i = 1; i <= n; i++)
			acc(t, base + i, 0, now);
		run(t, now, false);
		/* to L1, or L2 once the refusals have raised the thresholds */
		assert_int_not_equal(layer(t, base), L3);
	}
}

TEST(test_adaptive_prefetch)
{
	struct tenv *t = ENV({ P(MODE), DSMEM_CACHE_ADAPTIVE }, { P(PREFETCH), 8 },
			     { P(WINDOW_NS), 60000 * MS }, { P(ADAPT_NS), A_NS },
			     { P(QUEUE_MAX), 1 }, { P(BATCH_THRESHOLD), 1 });
	u32 b, i;

	ins(t, 0, NE);
	run(t, T0, true);			/* the first interval starts */
	prefetch_round(t, 0, 8, T0 + 1);	/* 8 buckets x 8 neighbours */
	STATS(t, ST(PREFETCHED), 64);
	run(t, T0 + A_NS, true);		/* none asked for: halved */
	assert_int_equal(t->c.eff_prefetch, 4);
	/* the 64 asked for in L2, and 64 more prefetched, 4 at a time */
	for (b = 0; b < NE / DSTC_BUCKET_SLOTS; b++)
		for (i = 1; i <= 8; i++)
			assert_int_equal(acc(t, b * DSTC_BUCKET_SLOTS + i, 0,
					     T0 + A_NS + 1).tier, L2);
	run(t, T0 + A_NS + 1, false);		/* the one the queue took */
	prefetch_round(t, 40, 4, T0 + A_NS + 2);
	prefetch_round(t, 60, 4, T0 + A_NS + 3);
	STATS(t, ST(PREFETCHED), 128, ST(PREFETCH_HITS), 64);
	run(t, T0 + 2 * A_NS, true);		/* all asked for: doubled */
	assert_int_equal(t->c.eff_prefetch, 8);
	/* off: a probe of one after 16 intervals (each with 64 accesses) */
	t->c.eff_prefetch = 0;
	for (i = 3; i < 3 + 16; i++) {
		assert_int_equal(t->c.eff_prefetch, 0);
		hits(t, 0, 64, T0 + i * A_NS - 1);
		run(t, T0 + i * A_NS, true);
	}
	assert_int_equal(t->c.eff_prefetch, 1);
	tenv_free(t);
}

TEST(test_fixed_mode)
{
	static const u32 want[6][2] = {
		{ 64, 8 }, { 64, 8 }, { 64, 8 }, { 64, 8 }, { 64, 8 }, { 64, 8 },
	};
	struct tenv *t = adapt_env(DSMEM_CACHE_FIXED, 10);
	u32 eff[6][2];

	adapt_script(t, eff);
	assert_memory_equal(eff, want, sizeof(want));
	STATS(t, ST(ADAPT_DOWN), 0, ST(ADAPT_UP), 0);
	tenv_free(t);
}

/* ---- 13. histogram ----------------------------------------------------- */

TEST(test_histogram)
{
	static u32 hist[DSTC_HIST_BUCKETS];
	static struct dstc_stats a, b;
	unsigned int bk, prev = 0, i;
	u64 ns, q;

	for (ns = 0; ns < 32; ns++) {
		assert_int_equal(dstc_hist_bucket(ns), ns);
		assert_int_equal(dstc_hist_value(ns), ns);
	}
	for (bk = 1; bk < DSTC_HIST_BUCKETS; bk++)
		assert_true(dstc_hist_value(bk) > dstc_hist_value(bk - 1));
	/* each value in the bucket whose bounds hold it, 1/16 wide at most */
	for (ns = 0; ns < (1ULL << 27); ns += 1 + ns / 61) {
		bk = dstc_hist_bucket(ns);
		assert_true(bk >= prev);
		prev = bk;
		assert_true(dstc_hist_value(bk) <= ns);
		if (bk + 1 == DSTC_HIST_BUCKETS)
			continue;	/* the last takes everything above */
		assert_true(ns < dstc_hist_value(bk + 1));
		if (ns >= 32)
			assert_true((dstc_hist_value(bk + 1) - dstc_hist_value(bk)) * 16 <=
				    dstc_hist_value(bk));
	}
	assert_int_equal(dstc_hist_bucket(~0ULL), DSTC_HIST_BUCKETS - 1);

	assert_int_equal(dstc_hist_quantile(hist, DSTC_HIST_BUCKETS, 990), 0);
	hist[dstc_hist_bucket(5)] = 99;
	hist[dstc_hist_bucket(1005)] = 1;
	assert_int_equal(dstc_hist_quantile(hist, DSTC_HIST_BUCKETS, 990), 5);
	assert_int_equal(dstc_hist_quantile(hist, DSTC_HIST_BUCKETS, 500), 5);
	q = dstc_hist_quantile(hist, DSTC_HIST_BUCKETS, 1000);
	assert_true(q * 100 >= 1005 * 93 && q * 100 <= 1005 * 107);
	hist[dstc_hist_bucket(5)] = 98;
	hist[dstc_hist_bucket(1005)] = 2;
	q = dstc_hist_quantile(hist, DSTC_HIST_BUCKETS, 990);
	assert_true(q * 100 >= 1005 * 93 && q * 100 <= 1005 * 107);

	/* per-CPU stats sum field by field */
	for (i = 0; i < DSTC_S_NR; i++) {
		assert_non_null(dstc_stat_names[i]);
		a.v[i] = i;
		b.v[i] = 100 * i;
	}
	a.hist[2][7] = 1;
	b.hist[2][7] = 2;
	dstc_stats_add(&a, &b);
	for (i = 0; i < DSTC_S_NR; i++)
		assert_int_equal(a.v[i], 101 * i);
	assert_int_equal(a.hist[2][7], 3);
}

/* ---- 14. the shared vector -------------------------------------------- */

/*
 * tests/vectors/tc_policy.dsmtrace (fixed mode) and tc_adaptive.dsmtrace
 * replayed through dstc_replay_step(), as the module's CACHE_REPLAY and
 * the simulator replay them, must make exactly the moves of their .expect
 * files and end with their counters.  With
 * DSMEM_REGEN_VECTOR=1 the test writes those lines instead (the file's
 * hand-written head, its comments and parameters, is kept): check the new
 * moves by hand before committing them.
 */
#ifndef DS_VECTORS
#define DS_VECTORS "tests/vectors"
#endif
/* the fixed mode's vector and the adaptive mode's */
#define VEC_FIXED	DS_VECTORS "/tc_policy"
#define VEC_ADAPTIVE	DS_VECTORS "/tc_adaptive"
#define VEC_MARK	"# ---- generated by test_tc_core (DSMEM_REGEN_VECTOR=1) ----"

struct vmove {
	u32 eid;
	u8 from;
	u8 to;
};

struct vec {
	u64 p[DSTC_P_NR];
	u64 maint_ns;
	struct dsmem_trace_rec *recs;
	size_t nrecs;
	struct vmove *moves;		/* expected */
	size_t nmoves;
	u64 stat[DSTC_S_NR];
	bool has_stat[DSTC_S_NR];
	char *head;			/* the lines before the generated ones */
};

/* what the replay did: its moves, and for each, the record that made it */
static struct {
	struct vmove *m;
	size_t *rec;
	size_t n, cap, cur_rec;
} got;

static void vec_free(struct vec *v)
{
	free(v->recs);
	free(v->moves);
	free(v->head);
	free(got.m);
	free(got.rec);
	memset(&got, 0, sizeof(got));
}

static u64 le(const unsigned char *b, unsigned int n)
{
	u64 v = 0;

	while (n--)
		v = v << 8 | b[n];
	return v;
}

/* the module's trace format, little-endian whatever the host */
static void vec_read_trace(struct vec *v, const char *path)
{
	unsigned char b[DSMEM_TRACE_REC_SIZE];
	FILE *f = fopen(path, "rb");
	size_t cap = 0;

	if (!f)
		fail_msg("%s: cannot open", path);
	assert_int_equal(fread(b, 1, DSMEM_TRACE_HDR_SIZE, f), DSMEM_TRACE_HDR_SIZE);
	assert_memory_equal(b, DSMEM_TRACE_MAGIC, 8);
	assert_int_equal(le(b + 8, 4), DSMEM_TRACE_VERSION);
	assert_int_equal(le(b + 12, 4), DSMEM_TRACE_REC_SIZE);
	while (fread(b, 1, sizeof(b), f) == sizeof(b)) {
		struct dsmem_trace_rec *r;

		if (v->nrecs == cap) {
			cap = cap ? 2 * cap : 1024;
			v->recs = realloc(v->recs, cap * sizeof(*v->recs));
			assert_non_null(v->recs);
		}
		r = &v->recs[v->nrecs++];
		memset(r, 0, sizeof(*r));
		r->time_ns = le(b, 8);
		r->handle = (u32)le(b + 8, 4);
		r->node = (u32)le(b + 12, 4);
		r->type = b[16];
		r->op = b[17];
		r->tier = b[18];
		/* what the vector may hold: accesses of generation 1 */
		assert_int_equal(r->type, DSMEM_HANDLE_TYPE(r->handle));
		assert_int_equal(DSMEM_HANDLE_GEN(r->handle), 1);
		assert_true(r->op == DSMEM_TRACE_READ || r->op == DSMEM_TRACE_MODIFY);
		assert_true(v->nrecs == 1 || r->time_ns >= r[-1].time_ns);
	}
	assert_true(feof(f));
	fclose(f);
	assert_true(v->nrecs > 0);
}

static int vec_param(const char *name)
{
	int i;

	for (i = 0; i < DSTC_P_NR; i++)
		if (!strcmp(dstc_params[i].name, name))
			return i;
	fail_msg("unknown parameter %s", name);
	return -1;
}

static int vec_stat(const char *name)
{
	int i;

	for (i = 0; i < DSTC_S_NR; i++)
		if (!strcmp(dstc_stat_names[i], name))
			return i;
	fail_msg("unknown counter %s", name);
	return -1;
}

static void vec_read_expect(struct vec *v, const char *path)
{
	char line[256], name[64];
	unsigned long long a, b, c;
	size_t cap = 0, hlen = 0;
	bool gen = false;
	FILE *f = fopen(path, "r");
	int i;

	if (!f)
		fail_msg("%s: cannot open", path);
	dstc_params_default(v->p);
	v->head = calloc(1, 1);
	while (fgets(line, sizeof(line), f)) {
		assert_non_null(strchr(line, '\n'));	/* not cut */
		if (!strncmp(line, VEC_MARK, strlen(VEC_MARK)))
			gen = true;
		if (!strncmp(line, "move ", 5) || !strncmp(line, "stat ", 5))
			gen = true;
		if (!gen) {
			v->head = realloc(v->head, hlen + strlen(line) + 1);
			assert_non_null(v->head);
			strcpy(v->head + hlen, line);
			hlen += strlen(line);
		}
		if (line[0] == '#' || line[strspn(line, " \t\n")] == '\0')
			continue;
		if (sscanf(line, "param %63s %llu", name, &a) == 2) {
			v->p[vec_param(name)] = a;
		} else if (sscanf(line, "maint_ns %llu", &a) == 1) {
			v->maint_ns = a;
		} else if (sscanf(line, "move %llu %llu %llu", &a, &b, &c) == 3) {
			if (v->nmoves == cap) {
				cap = cap ? 2 * cap : 256;
				v->moves = realloc(v->moves, cap * sizeof(*v->moves));
				assert_non_null(v->moves);
			}
			assert_true(b >= L1 && b <= L3 && c >= L1 && c <= L3 && b != c);
			v->moves[v->nmoves++] = (struct vmove){ (u32)a, (u8)b, (u8)c };
		} else if (sscanf(line, "stat %63s %llu", name, &a) == 2) {
			i = vec_stat(name);
			v->stat[i] = a;
			v->has_stat[i] = true;
		} else {
			fail_msg("%s: cannot parse: %s", path, line);
		}
	}
	fclose(f);
}

static void vec_move(struct dstc_cache *c, u32 eid, u8 from, u8 to)
{
	(void)c;
	if (got.n == got.cap) {
		got.cap = got.cap ? 2 * got.cap : 256;
		got.m = realloc(got.m, got.cap * sizeof(*got.m));
		got.rec = realloc(got.rec, got.cap * sizeof(*got.rec));
		assert_true(got.m && got.rec);
	}
	got.rec[got.n] = got.cur_rec;
	got.m[got.n++] = (struct vmove){ eid, from, to };
}

static u32 vec_eid(const struct dsmem_trace_rec *r)
{
	return (u32)r->type << 16 | DSMEM_HANDLE_INDEX(r->handle);
}

/*
 * As every consumer replays: a private cache of every type's entries,
 * each entry of the trace inserted in order of first appearance (QPs in
 * state RTS), then every record through the driver.  maint[] says which
 * records' steps ran maintenance.
 */
static struct tenv *vec_replay(const struct vec *v, bool *maint)
{
	const u32 ne = DSMEM_TOKEN_TYPES << 16;
	struct dstc_replay r;
	struct dstc_result res;
	u16 *gen = calloc(ne, sizeof(*gen));
	union dsmem_token tok;
	size_t i;
	u32 eid;

	assert_non_null(gen);
	cur = calloc(1, sizeof(*cur));
	assert_non_null(cur);
	OK(dstc_cache_init(&cur->c, &t_ops, cur, ne, v->p));
	for (i = 0; i < v->nrecs; i++) {
		eid = vec_eid(&v->recs[i]);
		if (gen[eid])
			continue;
		dstc_token_init(&tok, v->recs[i].type, (u16)eid);
		if (v->recs[i].type == DSMEM_TOKEN_QP)
			tok.qp.state = 3;	/* IB_QPS_RTS */
		OK(LOCKED(cur, dstc_insert_locked(&cur->c, eid, 0, &tok, &gen[eid])));
	}
	cur->c.move_hook = vec_move;
	dstc_replay_init(&r, v->maint_ns);
	for (i = 0; i < v->nrecs; i++) {
		u64 next = r.next_maint;

		eid = vec_eid(&v->recs[i]);
		got.cur_rec = i;
		OK(dstc_replay_step(&cur->c, &cur->st, &r, eid, gen[eid],
				    v->recs[i].op == DSMEM_TRACE_MODIFY ? 1 : 0,
				    v->recs[i].time_ns, &res));
		assert_int_equal(cur->locked, 0);
		maint[i] = next && v->recs[i].time_ns >= next;
	}
	free(gen);
	return cur;
}

static void vec_regen(const struct vec *v, const struct tenv *t, const bool *maint,
		      const char *path)
{
	static const char *const tn[DSMEM_TOKEN_TYPES] = { "pd", "mr", "cq", "qp" };
	static const char *const op[] = { "read", "modify" };
	FILE *f = fopen(path, "w");
	size_t k, last = (size_t)-1;
	unsigned int i;

	assert_non_null(f);
	fputs(v->head, f);
	fprintf(f, "%s\n# each record that moved entries, then its moves: EID FROM TO,\n"
		"# EID = type << 16 | index (mr 65536, cq 131072, qp 196608 + index)\n",
		VEC_MARK);
	for (k = 0; k < got.n; k++) {
		const struct dsmem_trace_rec *r = &v->recs[got.rec[k]];

		if (got.rec[k] != last) {
			last = got.rec[k];
			fprintf(f, "# rec %zu at %.2f us: %s%s%u %s\n", last,
				(double)(r->time_ns - v->recs[0].time_ns) / 1000,
				maint[last] ? "maintenance, then " : "",
				tn[r->type], DSMEM_HANDLE_INDEX(r->handle), op[r->op]);
		}
		fprintf(f, "move %u %u %u\n", got.m[k].eid, got.m[k].from, got.m[k].to);
	}
	fprintf(f, "# the counters at the end\n");
	for (i = 0; i < DSTC_S_NR; i++)
		fprintf(f, "stat %s %llu\n", dstc_stat_names[i],
			(unsigned long long)t->st.v[i]);
	assert_int_equal(fclose(f), 0);
}

/* BASE.dsmtrace replayed must make the moves of BASE.expect */
static void vector_check(const char *base)
{
	const char *regen = getenv("DSMEM_REGEN_VECTOR");
	char trace[PATH_MAX], expect[PATH_MAX];
	struct vec v = { 0 };
	struct tenv *t;
	bool *maint;
	size_t k, n;
	unsigned int i, nstat = 0;

	snprintf(trace, sizeof(trace), "%s.dsmtrace", base);
	snprintf(expect, sizeof(expect), "%s.expect", base);
	vec_read_trace(&v, trace);
	vec_read_expect(&v, expect);
	maint = calloc(v.nrecs, sizeof(*maint));
	assert_non_null(maint);
	t = vec_replay(&v, maint);
	if (regen && strcmp(regen, "0")) {
		vec_regen(&v, t, maint, expect);
		print_message("# wrote %s: %zu moves; check them by hand\n",
			      expect, got.n);
		free(maint);
		vec_free(&v);
		tenv_free(t);
		return;
	}
	/* the first difference, with the record that made it */
	n = got.n < v.nmoves ? got.n : v.nmoves;
	for (k = 0; k < n; k++)
		if (memcmp(&got.m[k], &v.moves[k], sizeof(got.m[k])))
			fail_msg("move %zu (record %zu): got %u %u->%u, expected %u %u->%u",
				 k, got.rec[k], got.m[k].eid, got.m[k].from, got.m[k].to,
				 v.moves[k].eid, v.moves[k].from, v.moves[k].to);
	assert_int_equal(got.n, v.nmoves);
	for (i = 0; i < DSTC_S_NR; i++) {
		if (!v.has_stat[i])
			continue;
		nstat++;
		if (t->st.v[i] != v.stat[i])
			fail_msg("stat %s: got %llu, expected %llu", dstc_stat_names[i],
				 (unsigned long long)t->st.v[i],
				 (unsigned long long)v.stat[i]);
	}
	assert_true(v.nmoves > 0 && nstat > 0);
	/* every move is counted once */
	assert_int_equal(t->st.v[ST(MIGRATIONS)], got.n);
	free(maint);
	vec_free(&v);
	tenv_free(t);
}

TEST(test_vector)
{
	vector_check(VEC_FIXED);
}

TEST(test_vector_adaptive)
{
	vector_check(VEC_ADAPTIVE);
}

/* ---- regressions: each failed against the core before its fix -------- */

/*
 * dstc_update_locked() of an L2 entry whose page is full, with no fresh
 * page to compact into, drops the entry to L3 (dstc_l2_fallback) and then
 * republishes the layer it read before, L2: readers decode an empty slot
 * and get a zeroed token; l2_used and the LRU disagree with the directory.
 */
TEST(test_fixed_l2_update_nomem)
{
	struct tenv *t = ENV({ P(NR), 0 });
	union dsmem_token sh[2], lg[2];
	struct dstc_result r;
	unsigned int i, x;
	void *page;

	ins(t, 0, 2);
	for (x = 0; x < 2; x++) {
		OK(mig(t, x, L2, T0));
		sh[x] = qp_tok(x, 0);
		lg[x] = far_tok(x);
	}
	/* long/short rewrites leave holes until the page is compacted */
	page = t->c.pages[0];
	for (i = 0; i < 1000 && t->c.pages[0] == page; i++) {
		x = i & 1;
		OK(upd(t, x, t->gen[x], &lg[x]));
		OK(upd(t, x, t->gen[x], &sh[x]));
	}
	assert_ptr_not_equal(t->c.pages[0], page);
	/* again, with no page to compact into: the entry must go to L3 */
	t->fail_pages = true;
	for (i = 0, x = 0; i < 1000; i++) {
		x = i & 1;
		OK(upd(t, x, t->gen[x], &lg[x]));
		if (t->c.l2_used < 2)
			break;
		OK(upd(t, x, t->gen[x], &sh[x]));
	}
	assert_int_equal(t->c.l2_used, 1);
	TIERS(t, x, L3, !x, L2);
	r = acc(t, x, 0, T0 + 2);
	assert_int_equal(r.tier, L3);
	tok_eq(&r.token, &lg[x]);
	r = acc(t, !x, 0, T0 + 2);
	tok_eq(&r.token, &sh[!x]);
	tenv_free(t);
}

/*
 * dstc_migrate() reads the source tier before making room.  Promoting an
 * L2 entry into a full L1 demotes the L1 victim into a full L2, whose LRU
 * victim is the entry being promoted; that then leaves L2 a second time:
 * l2_used goes one low, and with the two in different buckets the page is
 * already freed and dstc_page_del() dereferences NULL.
 */
TEST(test_fixed_promote_l2_tail)
{
	struct tenv *t = ENV({ P(L1_CAPACITY), 1 }, { P(L2_CAPACITY), 1 });

	ins(t, 0, 2);	/* one bucket: the wrong count, not the crash */
	OK(mig(t, 0, L1, T0));
	OK(mig(t, 1, L2, T0));
	OK(mig(t, 1, L1, T0 + 1));
	TIERS(t, 1, L1, 0, L2);
	assert_int_equal(t->c.l2_used, 1);
	assert_int_equal(t->c.lru_tail, 0);
	assert_int_equal(acc(t, 0, 0, T0 + 2).tier, L2);
	tenv_free(t);
}

/*
 * An entry removed while queued, then reinserted: dstc_insert_locked()
 * clears e->queued, but the ring still holds the eid and e->target is the
 * old incarnation's, so the next batch promotes the new object unasked.
 */
TEST(test_fixed_reinsert_queued)
{
	struct tenv *t = ENV({ P(PROMOTE_L2), 2 });

	ins(t, 7, 1);
	hits(t, 7, 2, T0);
	STATS(t, ST(QUEUED), 1);
	OK(rm(t, 7, t->gen[7]));
	ins(t, 7, 1);
	run(t, T0 + 1, false);
	TIERS(t, 7, L3);
	STATS(t, ST(PROMOTE_L2), 0);
	tenv_free(t);
}

/*
 * dstc_adapt() takes 90% of the budget as budget * 9 / 10, rounded down:
 * for a migrate_budget of 1 that was 0, so an interval with nothing moved
 * counted as saturated and the thresholds never came down.  Now 1 of 1
 * is spent and 0 of 1 is not.
 */
TEST(test_fixed_adapt_small_budget)
{
	struct tenv *t = adapt_env(DSMEM_CACHE_ADAPTIVE, 1);

	OK(mig(t, 300, L1, T0));
	hits(t, 300, 100, T0);
	run(t, T0, true);		/* 1 of 1 moved: spent */
	STATS(t, ST(ADAPT_UP), 1, ST(ADAPT_DOWN), 0);
	assert_int_equal(t->c.eff_promote_l1, 2);
	hits(t, 300, 100, T0 + A_NS);
	run(t, T0 + A_NS, true);	/* nothing moved: not saturated */
	STATS(t, ST(ADAPT_UP), 1, ST(ADAPT_DOWN), 1);
	assert_int_equal(t->c.eff_promote_l1, 1);
	tenv_free(t);
}

/* ---- sampling --------------------------------------------------------- */

static u32 heat(struct tenv *t, u32 eid, u64 now)
{
	return dstc_window_hits(&t->c, dstc_entry(&t->c, eid), now);
}

/*
 * sample = 4: the first access of this "CPU" and every fourth after it
 * count, as 4; the others leave the entry alone.  The default counts all.
 */
TEST(test_sample)
{
	struct tenv *t;
	unsigned int i;

	assert_int_equal(dstc_params[P(SAMPLE)].def, 1);
	t = ENV({ P(PROMOTE_L2), 8 });
	ins(t, 7, 1);
	for (i = 1; i <= 5; i++) {
		acc(t, 7, 0, T0 + i);
		assert_int_equal(heat(t, 7, T0 + i), i);
	}
	tenv_free(t);

	t = ENV({ P(SAMPLE), 4 }, { P(PROMOTE_L2), 8 }, { P(BATCH_THRESHOLD), 1 });
	ins(t, 7, 2);
	static const u32 want[] = { 4, 4, 4, 4, 8 };
	for (i = 0; i < 5; i++) {
		u64 last = dstc_entry(&t->c, 7)->last_ns;

		acc(t, 7, 0, T0 + 1 + i);
		assert_int_equal(heat(t, 7, T0 + 1 + i), want[i]);
		/* an access not counted writes nothing of the entry */
		if (i % 4)
			assert_int_equal(dstc_entry(&t->c, 7)->last_ns, last);
		/* promotion only once the scaled count reaches promote_l2 */
		if (i < 4)
			STATS(t, ST(QUEUED), 0);
	}
	STATS(t, ST(QUEUED), 1);
	/* the countdown is the stats block's, not the entry's: the next
	 * three accesses, of another entry, are not counted */
	for (i = 0; i < 3; i++)
		acc(t, 8, 0, T0 + 10);
	assert_int_equal(heat(t, 8, T0 + 10), 0);
	acc(t, 8, 0, T0 + 11);
	assert_int_equal(heat(t, 8, T0 + 11), 4);

	/* in L1 the LFU count grows by N on counted accesses only */
	run(t, T0 + 12, false);
	OK(mig(t, 7, L1, T0 + 12));
	u32 f0 = slot(t, 7)->freq;
	for (i = 0; i < 4; i++)
		acc(t, 7, 0, T0 + 13);
	assert_int_equal(slot(t, 7)->freq, f0 + 4);
	tenv_free(t);
}

/* ---- optimistic reads of a moving entry ------------------------------- */

static struct {
	struct tenv *t;
	u32 eid;
	int mode;	/* 1: publish the move; 2: ... and start another */
	int calls;
} om;

/* a move of om.eid half done, as dstc_migrate leaves it at the copy */
static void fake_move_start(struct tenv *t, u32 eid)
{
	struct dstc_entry *e = dstc_entry(&t->c, eid);

	e->move_ver = DSTC_CTL_VER(e->ctl) + 1;
	e->ctl |= (u64)DSMEM_TOKEN_MIGRATING << 8;
}

static void fake_move_publish(struct tenv *t, u32 eid)
{
	struct dstc_entry *e = dstc_entry(&t->c, eid);
	u64 c = e->ctl;

	e->ctl = DSTC_CTL(DSTC_CTL_VER(c) + 1, DSTC_CTL_GEN(c),
			  DSTC_CTL_FLAGS(c) & ~DSMEM_TOKEN_MIGRATING,
			  DSTC_CTL_LAYER(c));
	e->move_ver = 0;
}

static void hook_publish(struct dstc_cache *c, u32 eid)
{
	(void)c;
	om.calls++;
	if (!om.mode || eid != om.eid)
		return;
	fake_move_publish(om.t, eid);
	if (om.mode == 2)	/* a rewrite right after: the copy may be old */
		fake_move_start(om.t, eid), dstc_entry(&om.t->c, eid)->move_ver = 0;
	om.mode = om.mode == 2 ? 3 : 0;
}

/* blocking mode's reader waits on the lock: that is where the move ends */
static void t_lock_publish(struct dstc_cache *c)
{
	t_lock(c);
	if (om.mode == 3 || om.mode == 4) {
		fake_move_publish(om.t, om.eid);
		om.mode = 0;
	}
}

static const struct dstc_ops t_ops_publish = {
	.page_alloc = t_page_alloc,
	.page_free = t_page_free,
	.chunk_alloc = t_chunk_alloc,
	.lock = t_lock_publish,
	.unlock = t_unlock,
};

TEST(test_optimistic)
{
	struct tenv *t = ENV({ P(OPTIMISTIC), 1 }, { P(CAS_RETRIES), 2 });
	union dsmem_token want;
	struct dstc_result r;

	t->c.ops = &t_ops_publish;
	ins(t, 9, 1);
	want = qp_tok(9, 0);
	memset(&om, 0, sizeof(om));
	om.t = t;
	om.eid = 9;
	t->c.apply_hook = hook_publish;

	/* mid-move: the old copy (L3's), validated against the same word */
	fake_move_start(t, 9);
	r = acc(t, 9, 3, T0);
	tok_eq(&r.token, &want);
	assert_int_equal(r.tier, L3);
	assert_int_equal(r.retries, 0);
	assert_false(r.flags & DSMEM_TOKEN_MIGRATING);
	STATS(t, ST(OPTIMISTIC_READS), 1, ST(OPTIMISTIC_RECONCILES), 0,
	      ST(READ_RETRIES), 0);
	/* (dstc_relaxed would wait for the move: the word itself) */
	assert_int_equal(dstc_entry(&t->c, 9)->relaxed, 3);

	/* the move publishes between the read and the check: reconciled */
	om.mode = 1;
	r = acc(t, 9, 3, T0 + 1);
	tok_eq(&r.token, &want);
	STATS(t, ST(OPTIMISTIC_READS), 2, ST(OPTIMISTIC_RECONCILES), 1,
	      ST(READ_RETRIES), 0);
	assert_false(DSTC_CTL_FLAGS(dstc_entry(&t->c, 9)->ctl) & DSMEM_TOKEN_MIGRATING);
	assert_int_equal(dstc_relaxed(&t->c, 9), 6);	/* applied once */

	/* published, then rewritten (not a move): the copy is refused and
	 * the reader waits for the rewrite like a blocking one */
	fake_move_start(t, 9);
	om.mode = 2;
	r = acc(t, 9, 0, T0 + 2);
	tok_eq(&r.token, &want);
	assert_true(r.retries >= 1);
	STATS(t, ST(OPTIMISTIC_READS), 2, ST(OPTIMISTIC_RECONCILES), 1);
	assert_true(S(t, READ_RETRIES) >= 1);

	/* from L1: the slot it leaves, while the slot is still tagged its */
	OK(mig(t, 9, L1, T0 + 3));
	fake_move_start(t, 9);
	r = acc(t, 9, 0, T0 + 4);
	assert_int_equal(r.tier, L1);
	tok_eq(&r.token, &want);
	STATS(t, ST(OPTIMISTIC_READS), 3);
	/* ... retagged for another entry: the home copy instead */
	slot(t, 9)->upd = DSTC_UPD_CLOSED | DSTC_UPD_TAG(10);
	slot(t, 9)->token = far_tok(10);
	r = acc(t, 9, 0, T0 + 5);
	assert_int_equal(r.tier, L3);
	tok_eq(&r.token, &want);
	STATS(t, ST(OPTIMISTIC_READS), 4);
	slot(t, 9)->upd = DSTC_UPD_TAG(9);
	slot(t, 9)->token = want;
	/*
	 * ... the move's new offset already written, naming a slot the
	 * entry left long ago: its tag is still the entry's, its token old,
	 * its eid cleared.  The home copy, not that token.
	 */
	u32 was = dstc_entry(&t->c, 9)->token_offset, gone = was ? 0 : 1;

	t->c.l1[gone].upd = DSTC_UPD_CLOSED | DSTC_UPD_TAG(9);
	t->c.l1[gone].token = far_tok(10);
	t->c.l1[gone].eid = DSTC_NONE;
	dstc_entry(&t->c, 9)->token_offset = gone;
	r = acc(t, 9, 0, T0 + 5);
	assert_int_equal(r.tier, L3);
	tok_eq(&r.token, &want);
	STATS(t, ST(OPTIMISTIC_READS), 5);
	dstc_entry(&t->c, 9)->token_offset = was;
	t->c.l1[gone].upd = DSTC_UPD_CLOSED;
	fake_move_publish(t, 9);

	/* blocking (the default): no old copy, the reader waits */
	u64 p[DSTC_P_NR];
	const char *why;

	memcpy(p, t->c.p, sizeof(p));
	p[P(OPTIMISTIC)] = 0;
	OK(setp(t, p, T0 + 6, &why));
	fake_move_start(t, 9);
	om.mode = 4;
	u64 rr = S(t, READ_RETRIES);
	r = acc(t, 9, 0, T0 + 7);
	assert_int_equal(om.mode, 0);	/* it went for the lock */
	tok_eq(&r.token, &want);
	assert_int_equal(S(t, READ_RETRIES) - rr, r.retries);
	assert_true(r.retries > 2);
	STATS(t, ST(OPTIMISTIC_READS), 5);
	t->c.apply_hook = NULL;
	tenv_free(t);
}

/*
 * Real threads: a mover and a rewriter under a real lock against readers
 * that check every token they get is one whole token -- its fields all
 * derive from one rewrite count -- and that no update is lost, in both
 * modes.
 */
#include <pthread.h>
#include <time.h>

#define MT_N	8U

struct mt {
	struct dstc_cache c;
	pthread_mutex_t lock;
	void **graveyard;	/* pages freed only at the end: readers race them */
	unsigned int ngrave;
	volatile int stop;
	u64 bad, deltas[4];
	struct dstc_stats st[4];
};

static void *mt_page_alloc(struct dstc_cache *c)
{
	(void)c;
	return calloc(1, DSTC_PAGE_SIZE);
}

static void mt_page_free(struct dstc_cache *c, void *page)
{
	struct mt *m = c->priv;

	m->graveyard[m->ngrave++] = page;
}

static void mt_lock(struct dstc_cache *c)
{
	pthread_mutex_lock(&((struct mt *)c->priv)->lock);
}

static void mt_unlock(struct dstc_cache *c)
{
	pthread_mutex_unlock(&((struct mt *)c->priv)->lock);
}

static const struct dstc_ops mt_ops = {
	.page_alloc = mt_page_alloc,
	.page_free = mt_page_free,
	.chunk_alloc = t_chunk_alloc,
	.lock = mt_lock,
	.unlock = mt_unlock,
};

static union dsmem_token mt_tok(u32 eid, u32 k)
{
	union dsmem_token t = qp_tok(eid, k);

	t.qp.pd_index = t.qp.scq_index = t.qp.rcq_index = (u8)k;
	t.qp.access_flags = (u8)(k * 7);
	return t;
}

static bool mt_whole(const union dsmem_token *t, u32 eid)
{
	u8 k = t->qp.pd_index;

	return t->hdr.type == DSMEM_TOKEN_QP && t->hdr.index == eid &&
	       t->qp.scq_index == k && t->qp.rcq_index == k &&
	       t->qp.access_flags == (u8)(k * 7) &&
	       (u8)(t->qp.qpn - 0x5000 - eid) == k;
}

static u16 mt_gen[MT_N];

static void *mt_writer(void *arg)
{
	struct mt *m = arg;
	u32 x = 1, k[MT_N] = { 0 };

	while (!m->stop) {
		u32 eid, op;

		x = x * 1103515245 + 12345;
		eid = (x >> 8) % MT_N;
		op = (x >> 16) % 8;
		mt_lock(&m->c);
		if (op == 0) {
			union dsmem_token t = mt_tok(eid, ++k[eid]);

			OK(dstc_update_locked(&m->c, &m->st[3], eid, mt_gen[eid], &t));
		} else {
			dstc_migrate_locked(&m->c, &m->st[3], eid, 1 + op % 3, T0);
		}
		mt_unlock(&m->c);
	}
	return NULL;
}

struct mt_reader {
	struct mt *m;
	int id;
};

static void *mt_reader(void *arg)
{
	struct mt_reader *r = arg;
	struct mt *m = r->m;
	u32 x = 7 + r->id;
	u64 n = 0;

	while (!m->stop) {
		struct dstc_result res;
		u32 eid;

		x = x * 1103515245 + 12345;
		eid = (x >> 8) % MT_N;
		if (dstc_access(&m->c, &m->st[r->id], eid, mt_gen[eid], 1, T0 + ++n,
				&res))
			__atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
		else if (!mt_whole(&res.token, eid))
			__atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
		else
			m->deltas[r->id]++;
	}
	return NULL;
}

static double mt_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void mt_run(bool optimistic, u64 *reads, u64 *reconciles, u64 *retries)
{
	struct mt *m = calloc(1, sizeof(*m));
	struct mt_reader rd[3];
	pthread_t th[4];
	u64 p[DSTC_P_NR], sum = 0, rel = 0;
	double t0 = mt_secs();
	unsigned int i;

	assert_non_null(m);
	m->graveyard = calloc(1 << 20, sizeof(void *));
	pthread_mutex_init(&m->lock, NULL);
	dstc_params_default(p);
	p[P(MODE)] = DSMEM_CACHE_FIXED;
	p[P(PROMOTE_L2)] = p[P(PROMOTE_L1)] = 65535;
	p[P(PREFETCH)] = 0;
	p[P(CAS_RETRIES)] = 2;
	p[P(OPTIMISTIC)] = optimistic;
	OK(dstc_cache_init(&m->c, &mt_ops, m, NE, p));
	for (i = 0; i < MT_N; i++) {
		union dsmem_token t = mt_tok(i, 0);

		OK(dstc_insert_locked(&m->c, i, 1, &t, &mt_gen[i]));
	}
	assert_int_equal(pthread_create(&th[3], NULL, mt_writer, m), 0);
	for (i = 0; i < 3; i++) {
		rd[i].m = m;
		rd[i].id = (int)i;
		assert_int_equal(pthread_create(&th[i], NULL, mt_reader, &rd[i]), 0);
	}
	/* long enough that readers meet moves; optimistic: that one reconciles */
	for (;;) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		double el;
		u64 rc = 0, rr = 0;

		nanosleep(&ts, NULL);
		el = mt_secs() - t0;
		for (i = 0; i < 3; i++) {
			rc += __atomic_load_n(&m->st[i].v[ST(OPTIMISTIC_RECONCILES)], __ATOMIC_RELAXED);
			rr += __atomic_load_n(&m->st[i].v[ST(READ_RETRIES)], __ATOMIC_RELAXED);
		}
		if (el > 10 || (el > 0.5 && (optimistic ? rc : rr)))
			break;
	}
	m->stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	*reads = *reconciles = *retries = 0;
	for (i = 0; i < 3; i++) {
		*reads += m->st[i].v[ST(OPTIMISTIC_READS)];
		*reconciles += m->st[i].v[ST(OPTIMISTIC_RECONCILES)];
		*retries += m->st[i].v[ST(READ_RETRIES)];
		sum += m->deltas[i];
	}
	for (i = 0; i < MT_N; i++)
		rel += dstc_relaxed(&m->c, i);
	print_message("# %s: reads %llu optimistic %llu reconciled %llu retries %llu\n",
		      optimistic ? "optimistic" : "blocking", (unsigned long long)sum,
		      (unsigned long long)*reads, (unsigned long long)*reconciles,
		      (unsigned long long)*retries);
	assert_int_equal(m->bad, 0);	/* never a half-moved token */
	assert_int_equal(rel, sum);	/* nor a lost or doubled update */
	dstc_cache_destroy(&m->c, t_chunk_free);
	for (i = 0; i < m->ngrave; i++)
		free(m->graveyard[i]);
	free(m->graveyard);
	free(m);
}

TEST(test_optimistic_threads)
{
	u64 reads, rec, retries;

	mt_run(false, &reads, &rec, &retries);
	assert_int_equal(reads, 0);
	assert_true(retries > 0);
	mt_run(true, &reads, &rec, &retries);
	assert_true(reads > 0);
	assert_true(rec > 0);
}

/* ---- migration latency and modelled DMA -------------------------------- */

TEST(test_migration_stats)
{
	struct tenv *t = ENV({ P(PROMOTE_L2), 2 }, { P(BATCH_THRESHOLD), 4 },
			     { P(PREFETCH), 1 });
	u64 want_ns;

	/* a direct move: the copy at the slower tier's cost, no wait */
	ins(t, 0, 2);
	OK(mig(t, 0, L2, T0));
	STATS(t, ST(MIGRATIONS), 1, ST(MIGRATE_NS), 800, ST(DMA_BYTES), 64,
	      ST(DMA_PREFETCH_BYTES), 0);
	OK(mig(t, 0, L1, T0));	/* L2 -> L1: cost_l2 */
	OK(mig(t, 0, L2, T0));	/* a demotion moves no promotion's DMA */
	STATS(t, ST(MIGRATIONS), 3, ST(MIGRATE_NS), 800 + 200 + 200,
	      ST(DMA_BYTES), 128);
	assert_int_equal(dstc_hist_quantile(t->st.mig_hist, DSTC_HIST_BUCKETS, 990),
			 816);	/* 800's bucket, its middle */

	/* queued: the wait in the queue counts, and a neighbour prefetched */
	ins(t, 2, 3);
	hits(t, 3, 2, T0 + 10 * US);	/* queued at 10 us */
	hits(t, 2, 2, T0 + 10 * US);
	hits(t, 4, 2, T0 + 10 * US);	/* three queued, below the batch */
	run(t, T0 + 50 * US, false);	/* waited 40 us */
	/*
	 * By id: 2 comes first and takes its neighbour 3 along as a
	 * prefetch (no wait: it was not waiting for this), 3 is then there
	 * already, 4 follows.
	 */
	want_ns = 800 + 200 + 200 + 2 * (40 * US + 800) + 800;
	STATS(t, ST(MIGRATIONS), 3 + 2 + 1, ST(PREFETCHED), 1,
	      ST(MIGRATE_NS), want_ns, ST(DMA_BYTES), 128 + 2 * 64,
	      ST(DMA_PREFETCH_BYTES), 64);
	assert_int_equal(layer(t, 3), L2);
	tenv_free(t);
}

#define T(f)	cmocka_unit_test_teardown(f, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_token_codec),
		T(test_handle_layout),
		T(test_page_codec),
		T(test_promotion),
		T(test_window_slides),
		T(test_demotion),
		T(test_idle_from_arrival),
		T(test_l1_lfu),
		T(test_l2_lru),
		T(test_cas_conflict),
		T(test_pinned),
		T(test_write_back_through),
		T(test_params),
		T(test_l1_slots),
		T(test_handles),
		T(test_batch_queue),
		T(test_prefetch),
		T(test_migrate_budget),
		T(test_adaptive),
		T(test_adaptive_duel),
		T(test_adaptive_climb),
		T(test_adaptive_prefetch),
		T(test_fixed_mode),
		T(test_histogram),
		T(test_vector),
		T(test_vector_adaptive),
		T(test_sample),
		T(test_optimistic),
		T(test_optimistic_threads),
		T(test_migration_stats),
		/* regressions of bugs these tests found in the core */
		T(test_fixed_l2_update_nomem),
		T(test_fixed_promote_l2_tail),
		T(test_fixed_reinsert_queued),
		T(test_fixed_adapt_small_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
