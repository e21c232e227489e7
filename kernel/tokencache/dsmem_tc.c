// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the token directory and the three-tier metadata cache on the
 * module's real RDMA objects.
 *
 * Every PD, CQ, QP and MR dsmem creates gets a token and a compact handle
 * here; the data path resolves them through the cache (dsmem_tc_resolve),
 * so the tiers see the real access stream.  The policy is the portable
 * core (dsmem_tc_core.c); this file supplies memory (L2 pages on a
 * CPU-less NUMA node when the host has one, as CXL expanders appear), the
 * lock, the clock, per-CPU counters and the workers that run batches and
 * maintenance.
 */
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>

#include "dsmem_tc.h"

struct dsmem_tc dsmem_tc;

/* What a token stands for, for `dsctl token show`. */
struct dsmem_tc_obj {
	struct net *net;	/* its node's; compared, never dereferenced */
	u8 kind;		/* enum dsmem_tc_kind */
	u32 node;
	u32 owner;		/* peer, segment or user MR id */
	u32 sub;		/* the MR's position in a grant */
};

static struct dsmem_tc_inst *dsmem_tc_of(struct dstc_cache *c)
{
	return container_of(c, struct dsmem_tc_inst, c);
}

static void *dsmem_tc_page_alloc(struct dstc_cache *c)
{
	struct dsmem_tc_inst *in = dsmem_tc_of(c);
	gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct page *page;

	/* called under the cache's spinlock: never sleep, never reclaim */
	if (in->nid != NUMA_NO_NODE)
		gfp |= __GFP_THISNODE;
	page = alloc_pages_node(in->nid, gfp, 0);
	if (!page) {
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_TC_PAGE_FAILED);
		return NULL;
	}
	atomic_inc(&in->l2_pages);
	if (in->nid != NUMA_NO_NODE && page_to_nid(page) != in->nid)
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_TC_PAGE_MISPLACED);
	return page_address(page);
}

static void dsmem_tc_page_rcu(struct rcu_head *head)
{
	__free_page(container_of(head, struct page, rcu_head));
}

static void dsmem_tc_page_free(struct dstc_cache *c, void *p)
{
	struct dsmem_tc_inst *in = dsmem_tc_of(c);

	atomic_dec(&in->l2_pages);
	/* lock-free readers may still decode it */
	call_rcu(&virt_to_page(p)->rcu_head, dsmem_tc_page_rcu);
}

static void *dsmem_tc_chunk_alloc(struct dstc_cache *c, size_t size)
{
	/* tables at init, directory chunks before the lock is taken */
	might_sleep();
	return kvzalloc(size, GFP_KERNEL);
}

static void dsmem_tc_chunk_free(struct dstc_cache *c, void *p)
{
	kvfree(p);
}

static void dsmem_tc_lock(struct dstc_cache *c)
	__acquires(&dsmem_tc_of(c)->lock)
{
	/* completions resolve CQ tokens in softirq */
	spin_lock_bh(&dsmem_tc_of(c)->lock);
}

static void dsmem_tc_unlock(struct dstc_cache *c)
	__releases(&dsmem_tc_of(c)->lock)
{
	spin_unlock_bh(&dsmem_tc_of(c)->lock);
}

static const struct dstc_ops dsmem_tc_ops = {
	.page_alloc = dsmem_tc_page_alloc,
	.page_free = dsmem_tc_page_free,
	.chunk_alloc = dsmem_tc_chunk_alloc,
	.lock = dsmem_tc_lock,
	.unlock = dsmem_tc_unlock,
};

/* The first node with memory and no CPU: how CXL expanders appear. */
static int dsmem_tc_cxl_node(void)
{
	int nid;

	for_each_node_state(nid, N_MEMORY)
		if (!node_state(nid, N_CPU))
			return nid;
	return NUMA_NO_NODE;
}

int dsmem_tc_inst_init(struct dsmem_tc_inst *in, u32 nentries, const u64 *p)
{
	int ret;

	spin_lock_init(&in->lock);
	in->nid = dsmem_tc_cxl_node();
	atomic_set(&in->l2_pages, 0);
	in->stats = alloc_percpu(struct dstc_stats);
	if (!in->stats)
		return -ENOMEM;
	ret = dstc_cache_init(&in->c, &dsmem_tc_ops, NULL, nentries, p);
	if (ret)
		goto err_destroy_cache;
	return 0;

err_destroy_cache:
	dstc_cache_destroy(&in->c, dsmem_tc_chunk_free);
	free_percpu(in->stats);
	in->stats = NULL;
	return ret;
}

void dsmem_tc_inst_destroy(struct dsmem_tc_inst *in)
{
	dstc_cache_destroy(&in->c, dsmem_tc_chunk_free);
	free_percpu(in->stats);
	in->stats = NULL;
}

void dsmem_tc_inst_stats(struct dsmem_tc_inst *in, struct dstc_stats *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu)
		dstc_stats_add(sum, per_cpu_ptr(in->stats, cpu));
}

void dsmem_tc_inst_stats_reset(struct dsmem_tc_inst *in)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(in->stats, cpu), 0, sizeof(struct dstc_stats));
}

/* Install the directory chunk an entry needs, outside the spinlock. */
int dsmem_tc_chunk_prepare(struct dsmem_tc_inst *in, u32 eid)
{
	void *mem;
	int ret;

	if (dstc_chunk_present(&in->c, eid))
		return 0;
	mem = kvzalloc(DSTC_CHUNK_BYTES, GFP_KERNEL);
	if (!mem)
		return -ENOMEM;
	spin_lock_bh(&in->lock);
	ret = dstc_chunk_install_locked(&in->c, eid, mem);
	spin_unlock_bh(&in->lock);
	if (ret)
		kvfree(mem);
	return ret < 0 ? ret : 0;
}

static void dsmem_tc_run_work(struct work_struct *work)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	struct dstc_stats *st;

	st = get_cpu_ptr(in->stats);
	dstc_run(&in->c, st, ktime_get_ns(), false, NULL);
	put_cpu_ptr(in->stats);
}

static void dsmem_tc_maint_work(struct work_struct *work)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	struct dstc_stats *total = dsmem_tc.maint_total;
	struct dstc_stats *st;
	u64 now = ktime_get_ns();

	dsmem_tc_inst_stats(in, total);
	st = get_cpu_ptr(in->stats);
	dstc_run(&in->c, st, now, true, total);
	put_cpu_ptr(in->stats);

	/* migrations and modelled DMA per second, over the last second or more */
	if (now - dsmem_tc.rate_ns >= NSEC_PER_SEC) {
		u64 m = total->v[DSTC_S_MIGRATIONS], dt = now - dsmem_tc.rate_ns;
		u64 b[2] = { total->v[DSTC_S_DMA_BYTES],
			     total->v[DSTC_S_DMA_PREFETCH_BYTES] };
		int i;

		/* a counter reset in between reads as no traffic, not as 2^64 */
		WRITE_ONCE(dsmem_tc.migrate_rate, m < dsmem_tc.rate_migrations ? 0 :
			   div64_u64((m - dsmem_tc.rate_migrations) * NSEC_PER_SEC, dt));
		for (i = 0; i < 2; i++) {
			WRITE_ONCE(dsmem_tc.dma_rate[i], b[i] < dsmem_tc.rate_dma[i] ? 0 :
				   div64_u64((b[i] - dsmem_tc.rate_dma[i]) * NSEC_PER_SEC, dt));
			dsmem_tc.rate_dma[i] = b[i];
		}
		dsmem_tc.rate_migrations = m;
		dsmem_tc.rate_ns = now;
	}
	queue_delayed_work(dsmem_wq, &dsmem_tc.maint_work, DSMEM_TC_MAINT_JIFFIES);
}

int dsmem_tc_add(const union dsmem_token *tok, struct net *net, u32 node,
		 u8 kind, u32 owner, u32 sub, u32 *handle)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	u8 type = tok->hdr.type;
	union dsmem_token t = *tok;
	struct dsmem_tc_obj *obj;
	int idx, ret;
	u32 eid;
	u16 gen;

	if (type >= DSMEM_TOKEN_TYPES)
		return -EINVAL;
	idx = ida_alloc_max(&dsmem_tc.ida[type], DSMEM_HANDLE_INDEX_MAX,
			    GFP_KERNEL);
	if (idx < 0)
		return idx;
	eid = (u32)type << 16 | idx;
	t.hdr.index = idx;
	t.hdr.version = DSMEM_TOKEN_VERSION;

	obj = kmalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj) {
		ret = -ENOMEM;
		goto err_free_index;
	}
	obj->net = net;
	obj->kind = kind;
	obj->node = node;
	obj->owner = owner;
	obj->sub = sub;
	ret = dsmem_tc_chunk_prepare(in, eid);
	if (ret)
		goto err_free_obj;
	ret = xa_err(xa_store(&dsmem_tc.objs, eid, obj, GFP_KERNEL));
	if (ret)
		goto err_free_obj;

	spin_lock_bh(&in->lock);
	ret = dstc_insert_locked(&in->c, eid, node, &t, &gen);
	spin_unlock_bh(&in->lock);
	if (ret)
		goto err_erase_obj;
	*handle = DSMEM_HANDLE(type, gen, idx);
	dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_TC_TOKENS);
	dsmem_tc_trace(*handle, node, DSMEM_TRACE_CREATE, DSMEM_TIER_L3);
	return 0;

err_erase_obj:
	xa_erase(&dsmem_tc.objs, eid);
err_free_obj:
	kfree(obj);
err_free_index:
	ida_free(&dsmem_tc.ida[type], idx);
	return ret;
}

void dsmem_tc_del(u32 handle)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	u32 eid = dsmem_tc_eid(handle);
	u32 node = 0;
	int ret;

	if (!handle)
		return;
	spin_lock_bh(&in->lock);
	if (dstc_entry(&in->c, eid))
		node = dstc_entry(&in->c, eid)->node;
	ret = dstc_remove_locked(&in->c, this_cpu_ptr(in->stats), eid,
				 DSMEM_HANDLE_GEN(handle));
	spin_unlock_bh(&in->lock);
	if (WARN_ON_ONCE(ret))
		return;
	dsmem_tc_trace(handle, node, DSMEM_TRACE_DESTROY, 0);
	kfree(xa_erase(&dsmem_tc.objs, eid));
	ida_free(&dsmem_tc.ida[DSMEM_HANDLE_TYPE(handle)],
		 DSMEM_HANDLE_INDEX(handle));
}

int dsmem_tc_resolve(u32 handle, u8 op, union dsmem_token *tok)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	u32 eid = dsmem_tc_eid(handle);
	struct dstc_result res;
	struct dstc_stats *st;
	int ret;

	rcu_read_lock();	/* L2 pages are freed after a grace period */
	st = get_cpu_ptr(in->stats);
	ret = dstc_access(&in->c, st, eid, DSMEM_HANDLE_GEN(handle),
			  op == DSMEM_TRACE_MODIFY, ktime_get_ns(), &res);
	put_cpu_ptr(in->stats);
	rcu_read_unlock();
	if (ret) {
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_TC_RESOLVE_FAILED);
		return ret;
	}
	if (tok)
		*tok = res.token;
	if (dsmem_tc_tracing())
		dsmem_tc_trace(handle, READ_ONCE(dstc_entry(&in->c, eid)->node),
			       op, res.tier);
	if (res.kick)
		queue_work(dsmem_wq, &dsmem_tc.run_work);
	return 0;
}

int dsmem_tc_write(u32 handle, const union dsmem_token *tok)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	struct dstc_stats *st;
	int ret;

	u32 node = 0;

	spin_lock_bh(&in->lock);
	st = this_cpu_ptr(in->stats);
	ret = dstc_update_locked(&in->c, st, dsmem_tc_eid(handle),
				 DSMEM_HANDLE_GEN(handle), tok);
	if (!ret)
		node = dstc_entry(&in->c, dsmem_tc_eid(handle))->node;
	spin_unlock_bh(&in->lock);
	if (!ret)
		dsmem_tc_trace(handle, node, DSMEM_TRACE_WRITE, 0);
	return ret;
}

/* ---- tokens of the module's objects ---------------------------------- */

int dsmem_tc_add_pd(struct ib_pd *pd, struct net *net, u32 node, u32 peer,
		    u32 *handle)
{
	union dsmem_token t;

	dstc_token_init(&t, DSMEM_TOKEN_PD, 0);
	t.pd.pdn = pd->res.id;
	return dsmem_tc_add(&t, net, node, DSMEM_TC_CONN, peer, 0, handle);
}

int dsmem_tc_add_cq(struct ib_cq *cq, struct net *net, u32 node, u32 peer,
		    u32 *handle)
{
	union dsmem_token t;

	dstc_token_init(&t, DSMEM_TOKEN_CQ, 0);
	t.cq.cqn = cq->res.id;
	t.cq.cqe = min_t(u32, cq->cqe, U16_MAX);
	t.cq.comp_vec = cq->comp_vector;
	t.cq.flags = cq->poll_ctx;
	return dsmem_tc_add(&t, net, node, DSMEM_TC_CONN, peer, 0, handle);
}

int dsmem_tc_add_qp(struct ib_qp *qp, u32 pd, u32 cq, struct net *net,
		    u32 node, u32 peer, u32 *handle)
{
	union dsmem_token t;

	dstc_token_init(&t, DSMEM_TOKEN_QP, 0);
	t.qp.qpn = qp->qp_num;
	t.qp.qp_type = qp->qp_type;
	t.qp.state = IB_QPS_INIT;
	t.qp.pd_index = (u8)DSMEM_HANDLE_INDEX(pd);
	t.qp.scq_index = (u8)DSMEM_HANDLE_INDEX(cq);
	t.qp.rcq_index = (u8)DSMEM_HANDLE_INDEX(cq);
	t.qp.access_flags = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			    IB_ACCESS_REMOTE_ATOMIC;
	return dsmem_tc_add(&t, net, node, DSMEM_TC_CONN, peer, 0, handle);
}

int dsmem_tc_add_mr(u32 lkey, int access, unsigned long npages,
		    struct net *net, u32 node, u8 kind, u32 owner, u32 sub,
		    u32 *handle)
{
	union dsmem_token t;

	dstc_token_init(&t, DSMEM_TOKEN_MR, 0);
	t.mr.lkey = lkey;
	t.mr.access_flags = (u8)access;
	t.mr.page_bits = PAGE_SHIFT;
	t.mr.n_pages = min_t(unsigned long, npages, U16_MAX);
	return dsmem_tc_add(&t, net, node, kind, owner, sub, handle);
}

/* A QP changed state: a strict field, written through. */
void dsmem_tc_qp_state(u32 handle, u8 state)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	union dsmem_token t;
	u64 ctl;
	u32 off;

	if (!handle ||
	    dstc_peek(&in->c, dsmem_tc_eid(handle), &ctl, &off, &t))
		return;
	t.qp.state = state;
	dsmem_tc_write(handle, &t);
}

int dsmem_tc_describe(u32 eid, char *buf, size_t len)
{
	struct dsmem_tc_obj *obj = xa_load(&dsmem_tc.objs, eid);
	const char *type = dstc_token_type_name(eid >> 16);

	if (!obj)
		return -ENOENT;
	switch (obj->kind) {
	case DSMEM_TC_CONN:
		return snprintf(buf, len, "node %u peer %u %s", obj->node,
				obj->owner, type);
	case DSMEM_TC_GRANT_MR:
		return snprintf(buf, len, "node %u segment %u grant to %u mr %u",
				obj->node, obj->owner >> 16,
				obj->owner & 0xffff, obj->sub);
	default:
		return snprintf(buf, len, "node %u user mr %u", obj->node,
				obj->owner);
	}
}

bool dsmem_tc_visible(u32 eid, struct net *net)
{
	struct dsmem_tc_obj *obj = xa_load(&dsmem_tc.objs, eid);

	return obj && net_eq(obj->net, net);
}

/* ---- module init/exit -------------------------------------------------- */

int dsmem_tc_init(void)
{
	u64 p[DSTC_P_NR];
	int i, ret;

	BUILD_BUG_ON(DSTC_P_NR != DSMEM_CACHE_P_NR);
	BUILD_BUG_ON(DSMEM_TOKEN_TYPES << 16 > DSTC_ENTRIES_MAX);

	xa_init(&dsmem_tc.objs);
	for (i = 0; i < DSMEM_TOKEN_TYPES; i++)
		ida_init(&dsmem_tc.ida[i]);
	mutex_init(&dsmem_tc.admin_lock);
	INIT_WORK(&dsmem_tc.run_work, dsmem_tc_run_work);
	INIT_DELAYED_WORK(&dsmem_tc.maint_work, dsmem_tc_maint_work);
	dsmem_tc.maint_total = kzalloc(sizeof(*dsmem_tc.maint_total), GFP_KERNEL);
	if (!dsmem_tc.maint_total)
		return -ENOMEM;
	dstc_params_default(p);
	ret = dsmem_tc_inst_init(&dsmem_tc.live, DSMEM_TOKEN_TYPES << 16, p);
	if (ret)
		goto err_free_total;
	dsmem_tc.rate_ns = ktime_get_ns();
	/* dsmem_wq exists (dsmem_main.c); no object has a token yet */
	queue_delayed_work(dsmem_wq, &dsmem_tc.maint_work, DSMEM_TC_MAINT_JIFFIES);
	return 0;

err_free_total:
	kfree(dsmem_tc.maint_total);
	return ret;
}

/* Name what was left behind, so that a leak says whose it is. */
static void dsmem_tc_report_leaks(void)
{
	struct dsmem_tc_obj *obj;
	unsigned long eid;
	char what[96];

	xa_for_each(&dsmem_tc.objs, eid, obj) {
		dsmem_tc_describe(eid, what, sizeof(what));
		pr_warn("dsmem: token %#lx left behind: %s\n", eid, what);
		kfree(obj);
	}
}

/* Every object is gone (nodes were torn down) before this runs. */
void dsmem_tc_exit(void)
{
	int i;

	dsmem_tc_trace_exit();
	cancel_delayed_work_sync(&dsmem_tc.maint_work);
	cancel_work_sync(&dsmem_tc.run_work);
	if (WARN_ON(!xa_empty(&dsmem_tc.objs)))
		dsmem_tc_report_leaks();
	xa_destroy(&dsmem_tc.objs);
	dsmem_tc_inst_destroy(&dsmem_tc.live);
	/* pages wait for a grace period: the callbacks are this module's */
	rcu_barrier();
	for (i = 0; i < DSMEM_TOKEN_TYPES; i++)
		ida_destroy(&dsmem_tc.ida[i]);
	kfree(dsmem_tc.maint_total);
}
