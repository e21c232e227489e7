// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: CACHE_BENCH, the connection sweep behind `make bench B=cache`.
 *
 * A private cache with the live parameters (or the caller's) serves N
 * synthetic queue pairs; each operation picks a QP uniformly, as
 * all-to-all traffic does, and resolves its QP (updating it inline), its
 * CQ and its MR -- the three context lookups a NIC makes per work
 * request.  Time is virtual (one operation per 100 ns, a NIC's rate), so
 * the hit ratios depend on the policy alone and not on how fast the
 * emulated guest runs; each resolve is also timed for real, to report
 * what the code itself costs.
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "../dsmem_priv.h"

#define DSMEM_BENCH_OP_NS	100
#define DSMEM_BENCH_MAINT_OPS	1000	/* maintenance every 100 us */
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
	u64 now = NSEC_PER_SEC, t0, t1, clk, d;
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
			t0 = ktime_get_ns();
			ret = dstc_access(&b->in.c, &b->st, eids[j], gens[j],
					  j == 0, now, &res);
			t1 = ktime_get_ns();
			if (ret)
				goto out_destroy;
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
			if (res.kick)
				dstc_run(&b->in.c, &b->st, now, false, NULL);
		}
		now += DSMEM_BENCH_OP_NS;
		if (i % DSMEM_BENCH_MAINT_OPS == DSMEM_BENCH_MAINT_OPS - 1)
			dstc_run(&b->in.c, &b->st, now, true, &b->st);
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
