// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: private caches driven by virtual time.
 *
 * CACHE_BENCH, the connection sweep behind `make bench B=cache`: a private
 * cache with the live parameters (or the caller's) serves N synthetic
 * queue pairs; each operation picks a QP uniformly, as all-to-all traffic
 * does, and resolves its QP (updating it inline), its CQ and its MR -- the
 * three context lookups a NIC makes per work request.  Time is virtual
 * (one operation per 100 ns, a NIC's rate), so the hit ratios depend on
 * the policy alone and not on how fast the emulated guest runs; each
 * resolve is also timed for real, to report what the code itself costs.
 *
 * CACHE_REPLAY: the accesses of a trace through a private cache, reporting
 * every move between tiers.  Both step through the core's replay driver
 * (dstc_replay_step), as the simulator and the unit tests do, so that one
 * trace makes the same moves everywhere.
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dsmem_tc.h"

#define DSMEM_BENCH_OP_NS	100
/* every 1000 ops, before the first access of the op that starts a period */
#define DSMEM_BENCH_MAINT_NS	(100 * NSEC_PER_USEC)
#define DSMEM_BENCH_QPS_PER_CQ	4
#define DSMEM_BENCH_QPS_PER_MR	8

struct dsmem_bench {
	struct dsmem_tc_inst in;
	struct dstc_stats st;
	u32 hist_l1[DSTC_HIST_BUCKETS];
	u32 hist_miss[DSTC_HIST_BUCKETS];
	u64 sum_l1, n_l1, sum_miss, n_miss;
	u16 gen[DSMEM_TOKEN_TYPES][DSMEM_BENCH_QPS_MAX];
};

static u32 dsmem_bench_rand(u32 *s)
{
	/* xorshift32: reproducible from the seed */
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static int dsmem_bench_populate(struct dsmem_bench *b, u32 qps)
{
	u32 n[DSMEM_TOKEN_TYPES] = {
		[DSMEM_TOKEN_PD] = 1,
		[DSMEM_TOKEN_MR] = max(1U, qps / DSMEM_BENCH_QPS_PER_MR),
		[DSMEM_TOKEN_CQ] = max(1U, qps / DSMEM_BENCH_QPS_PER_CQ),
		[DSMEM_TOKEN_QP] = qps,
	};
	union dsmem_token t;
	u32 type, i, eid;
	int ret;

	for (type = 0; type < DSMEM_TOKEN_TYPES; type++) {
		for (i = 0; i < n[type]; i++) {
			eid = type << 16 | i;
			ret = dsmem_tc_chunk_prepare(&b->in, eid);
			if (ret)
				return ret;
			dstc_token_init(&t, type, i);
			/* plausible contexts: numbers in creation order */
			t.qp.qpn = 0x100 + i;
			if (type == DSMEM_TOKEN_QP) {
				t.qp.qp_type = IB_QPT_RC;
				t.qp.state = IB_QPS_RTS;
				t.qp.scq_index = (u8)(i / DSMEM_BENCH_QPS_PER_CQ);
				t.qp.rcq_index = t.qp.scq_index;
			}
			spin_lock_bh(&b->in.lock);
			ret = dstc_insert_locked(&b->in.c, eid, 0, &t,
						 &b->gen[type][i]);
			spin_unlock_bh(&b->in.lock);
			if (ret)
				return ret;
		}
		cond_resched();
	}
	return 0;
}

/* What an empty timing pair costs, to take it out of each sample. */
static u64 dsmem_bench_clock_cost(void)
{
	u64 best = U64_MAX, t0, t1;
	int i;

	for (i = 0; i < 1000; i++) {
		t0 = ktime_get_ns();
		t1 = ktime_get_ns();
		best = min(best, t1 - t0);
	}
	return best;
}

int dsmem_tc_bench(u32 qps, u32 ops, u32 seed, const u64 *p,
		   struct dsmem_tc_bench_res *r)
{
	u32 eids[3], gens[3], rnd = seed ? seed : 1, i, k, j;
	u64 now = NSEC_PER_SEC, t0, t1, clk, d, next;
	struct dstc_replay rp;
	struct dstc_result res;
	struct dsmem_bench *b;
	int ret;

	if (!qps || qps > DSMEM_BENCH_QPS_MAX || !ops)
		return -ERANGE;
	b = kvzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	ret = dsmem_tc_inst_init(&b->in, DSMEM_TOKEN_TYPES << 16, p);
	if (ret)
		goto out_free;
	ret = dsmem_bench_populate(b, qps);
	if (ret)
		goto out_destroy;
	clk = dsmem_bench_clock_cost();
	dstc_replay_init(&rp, DSMEM_BENCH_MAINT_NS);

	for (i = 0; i < ops; i++) {
		k = dsmem_bench_rand(&rnd) % qps;
		eids[0] = DSMEM_TOKEN_QP << 16 | k;
		gens[0] = b->gen[DSMEM_TOKEN_QP][k];
		k = k / DSMEM_BENCH_QPS_PER_CQ;
		eids[1] = DSMEM_TOKEN_CQ << 16 | k;
		gens[1] = b->gen[DSMEM_TOKEN_CQ][k];
		k = (eids[0] & 0xffff) / DSMEM_BENCH_QPS_PER_MR;
		eids[2] = DSMEM_TOKEN_MR << 16 | k;
		gens[2] = b->gen[DSMEM_TOKEN_MR][k];
		for (j = 0; j < 3; j++) {
			/*
			 * Timed: the whole dstc_replay_step() call, as the
			 * driver has no seam around its dstc_access().  It
			 * runs maintenance before the access when its time
			 * has come, and the batch the access kicked after it:
			 * such a sample times the policy's work rather than a
			 * resolve, and is left out.
			 */
			next = rp.next_maint;
			t0 = ktime_get_ns();
			ret = dstc_replay_step(&b->in.c, &b->st, &rp, eids[j],
					       gens[j], j == 0, now, &res);
			t1 = ktime_get_ns();
			if (ret)
				goto out_destroy;
			if (res.kick || (next && rp.next_maint != next))
				continue;
			d = t1 - t0 > clk ? t1 - t0 - clk : 0;
			if (res.tier == DSMEM_TIER_L1) {
				b->sum_l1 += d;
				b->n_l1++;
				b->hist_l1[dstc_hist_bucket(d)]++;
			} else {
				b->sum_miss += d;
				b->n_miss++;
				b->hist_miss[dstc_hist_bucket(d)]++;
			}
		}
		now += DSMEM_BENCH_OP_NS;
		if (!(i & 4095)) {
			cond_resched();
			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				goto out_destroy;
			}
		}
	}

	r->accesses = b->st.v[DSTC_S_HITS_L1] + b->st.v[DSTC_S_HITS_L2] +
		      b->st.v[DSTC_S_HITS_L3];
	for (j = 0; j < 3; j++) {
		r->hits[j] = b->st.v[DSTC_S_HITS_L1 + j];
		r->modeled_ns += b->st.v[DSTC_S_COST_L1_NS + j];
	}
	r->migrations = b->st.v[DSTC_S_MIGRATIONS];
	r->l1_mean_ns = b->n_l1 ? div64_u64(b->sum_l1, b->n_l1) : 0;
	r->l1_p99_ns = dstc_hist_quantile(b->hist_l1, DSTC_HIST_BUCKETS, 990);
	r->miss_mean_ns = b->n_miss ? div64_u64(b->sum_miss, b->n_miss) : 0;
	r->miss_p99_ns = dstc_hist_quantile(b->hist_miss, DSTC_HIST_BUCKETS, 990);
	ret = 0;
out_destroy:
	dsmem_tc_inst_destroy(&b->in);
out_free:
	kvfree(b);
	return ret;
}

/* ---- replay ------------------------------------------------------------ */

struct dsmem_replay {
	struct dsmem_tc_inst in;
	struct dsmem_tc_replay_res *res;
};

/* Under the instance's lock, from the core's migrations. */
static void dsmem_replay_move(struct dstc_cache *c, u32 eid, u8 from, u8 to)
{
	struct dsmem_replay *rp = container_of(c, struct dsmem_replay, in.c);
	struct dsmem_tc_replay_res *r = rp->res;

	if (r->nmoves == DSMEM_REPLAY_MOVES_MAX) {
		r->truncated = true;
		return;
	}
	r->moves[r->nmoves++] = (struct dsmem_cache_move){
		.eid = eid,
		.from = from,
		.to = to,
	};
}

static void dsmem_replay_rec(const void *recs, u32 i, struct dsmem_trace_rec *rec)
{
	/* netlink aligns the array to 4 bytes only */
	memcpy(rec, (const u8 *)recs + (size_t)i * sizeof(*rec), sizeof(*rec));
}

static bool dsmem_replay_access(const struct dsmem_trace_rec *rec)
{
	/* a write-through resolves the entry too; creation and removal do not */
	return rec->op <= DSMEM_TRACE_WRITE;
}

static u32 dsmem_replay_eid(const struct dsmem_trace_rec *rec)
{
	return (u32)rec->type << 16 | DSMEM_HANDLE_INDEX(rec->handle);
}

/* Every record, before anything is allocated: 0 or -EINVAL and why. */
static int dsmem_replay_check(const void *recs, u32 n, const char **why)
{
	struct dsmem_trace_rec rec;
	u64 last = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		dsmem_replay_rec(recs, i, &rec);
		if (rec.type >= DSMEM_TOKEN_TYPES)
			*why = "replay record of an unknown token type";
		else if (rec.type != DSMEM_HANDLE_TYPE(rec.handle))
			*why = "replay record whose type is not its handle's";
		else if (rec.op > DSMEM_TRACE_DESTROY)
			*why = "replay record of an unknown trace op";
		else if (rec.__pad || rec.__reserved)
			*why = "replay record with reserved fields set";
		else if (rec.time_ns < last)
			*why = "replay records must not go back in time";
		else
			*why = NULL;
		if (*why)
			return -EINVAL;
		last = rec.time_ns;
	}
	return 0;
}

/* Each entry the trace resolves, in L3, in order of first appearance. */
static int dsmem_replay_populate(struct dsmem_replay *rp, const void *recs,
				 u32 n)
{
	struct dsmem_trace_rec rec;
	union dsmem_token t;
	struct dstc_entry *e;
	u32 i, eid;
	u16 gen;
	int ret;

	for (i = 0; i < n; i++) {
		dsmem_replay_rec(recs, i, &rec);
		if (!dsmem_replay_access(&rec))
			continue;
		eid = dsmem_replay_eid(&rec);
		ret = dsmem_tc_chunk_prepare(&rp->in, eid);
		if (ret)
			return ret;
		dstc_token_init(&t, rec.type, eid & 0xffff);
		if (rec.type == DSMEM_TOKEN_QP)
			t.qp.state = IB_QPS_RTS;
		spin_lock_bh(&rp->in.lock);
		e = dstc_entry(&rp->in.c, eid);
		ret = DSTC_CTL_LAYER(e->ctl) ? 0 :
		      dstc_insert_locked(&rp->in.c, eid, 0, &t, &gen);
		spin_unlock_bh(&rp->in.lock);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The accesses of n trace records (READ, MODIFY: one update of the relaxed
 * fields, WRITE: a resolve; CREATE and DESTROY are skipped) through a
 * private cache with parameters p, maintenance every maint_ns of trace
 * time (0: the driver's default).  Every entry is created before the first
 * access; a handle's generation is not looked at, so an index reused in
 * the trace is one entry here.  -EINVAL with *why for a bad record.
 */
int dsmem_tc_replay(const void *recs, u32 n, u64 maint_ns, const u64 *p,
		    struct dsmem_tc_replay_res *r, const char **why)
{
	struct dsmem_trace_rec rec;
	struct dstc_replay drv;
	struct dstc_result res;
	struct dsmem_replay *rp;
	u32 i, eid;
	u16 gen;
	int ret;

	*why = NULL;
	ret = dsmem_replay_check(recs, n, why);
	if (ret)
		return ret;
	rp = kvzalloc(sizeof(*rp), GFP_KERNEL);
	if (!rp)
		return -ENOMEM;
	rp->res = r;
	ret = dsmem_tc_inst_init(&rp->in, DSMEM_TOKEN_TYPES << 16, p);
	if (ret)
		goto out_free;
	ret = dsmem_replay_populate(rp, recs, n);
	if (ret)
		goto out_destroy;

	rp->in.c.move_hook = dsmem_replay_move;
	dstc_replay_init(&drv, maint_ns);
	for (i = 0; i < n; i++) {
		dsmem_replay_rec(recs, i, &rec);
		if (!dsmem_replay_access(&rec))
			continue;
		eid = dsmem_replay_eid(&rec);
		gen = DSTC_CTL_GEN(READ_ONCE(dstc_entry(&rp->in.c, eid)->ctl));
		ret = dstc_replay_step(&rp->in.c, r->st, &drv, eid, gen,
				       rec.op == DSMEM_TRACE_MODIFY, rec.time_ns,
				       &res);
		if (ret)
			goto out_destroy;
		if (!(i & 255)) {
			cond_resched();
			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				goto out_destroy;
			}
		}
	}
	ret = 0;
out_destroy:
	dsmem_tc_inst_destroy(&rp->in);
out_free:
	kvfree(rp);
	return ret;
}
