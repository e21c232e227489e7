/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the token cache's declarations, shared by the files of
 * kernel/tokencache and by the layers above that register their RDMA
 * objects in it.
 */
#ifndef _DSMEM_TC_H
#define _DSMEM_TC_H

#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/idr.h>
#include <rdma/ib_verbs.h>

#include "../dsmem_priv.h"
#include "dsmem_tc_core.h"

/*
 * tokencache/: tokens and handles of the module's RDMA objects and the
 * three-tier cache they are resolved through.
 *
 * Lock order: dsmem_node.lock (grant MRs' tokens) and dsmem_tc.admin_lock,
 * never nested, -> dsmem_tc_inst.lock (a spinlock, taken _bh: completions
 * resolve tokens in softirq; a leaf but for the page allocator).
 * dsmem_trace_lock (dsmem_tc_trace.c) only nests inside nothing of ours.
 * Resolving takes no lock but an L2 entry's LRU move and a promotion's
 * queueing.
 */
enum dsmem_tc_kind {
	DSMEM_TC_CONN,		/* a connection's PD, CQ or QP */
	DSMEM_TC_GRANT_MR,	/* an MR of a segment granted to a peer */
	DSMEM_TC_USER_MR,	/* a buffer registered on /dev/dsmem */
};

struct dsmem_tc_inst {
	struct dstc_cache c;
	spinlock_t lock;		/* the core's structural lock */
	int nid;			/* L2 pages' node; NUMA_NO_NODE: local */
	atomic_t l2_pages;
	struct dstc_stats __percpu *stats;
};

struct dsmem_tc {
	struct dsmem_tc_inst live;
	struct mutex admin_lock;	/* netlink changes, one at a time */
	struct xarray objs;		/* entry id -> what it stands for */
	struct ida ida[DSMEM_TOKEN_TYPES];	/* token indexes per type */
	struct work_struct run_work;	/* a promotion batch is ready */
	struct delayed_work maint_work;
	struct dstc_stats *maint_total;	/* the maintenance worker's sum */
	u64 rate_ns;
	u64 rate_migrations;
	u64 rate_dma[2];		/* promotions', prefetches' bytes then */
	u64 migrate_rate;		/* per second */
	u64 dma_rate[2];		/* modelled bytes per second */
};

struct dsmem_tc_bench_res {
	u64 accesses;
	u64 hits[3];
	u64 modeled_ns;
	u64 migrations;
	u64 l1_mean_ns, l1_p99_ns;
	u64 miss_mean_ns, miss_p99_ns;
};

/* What a replay did; the caller supplies the memory. */
struct dsmem_tc_replay_res {
	struct dstc_stats *st;
	struct dsmem_cache_move *moves;	/* DSMEM_REPLAY_MOVES_MAX of them */
	u32 nmoves;
	bool truncated;			/* more moves were made */
};

extern struct dsmem_tc dsmem_tc;

/* A handle's directory entry: one id space, types side by side. */
static inline u32 dsmem_tc_eid(u32 handle)
{
	return DSMEM_HANDLE_TYPE(handle) << 16 | DSMEM_HANDLE_INDEX(handle);
}

extern struct dsmem_trace __rcu *dsmem_trace_cur;

/* tokencache/dsmem_tc.c */
int dsmem_tc_init(void);
void dsmem_tc_exit(void);
int dsmem_tc_inst_init(struct dsmem_tc_inst *in, u32 nentries, const u64 *p);
void dsmem_tc_inst_destroy(struct dsmem_tc_inst *in);
void dsmem_tc_inst_stats(struct dsmem_tc_inst *in, struct dstc_stats *sum);
void dsmem_tc_inst_stats_reset(struct dsmem_tc_inst *in);
int dsmem_tc_chunk_prepare(struct dsmem_tc_inst *in, u32 eid);
int dsmem_tc_add(const union dsmem_token *tok, struct net *net, u32 node,
		 u8 kind, u32 owner, u32 sub, u32 *handle);
void dsmem_tc_del(u32 handle);
int dsmem_tc_resolve(u32 handle, u8 op, union dsmem_token *tok);
int dsmem_tc_write(u32 handle, const union dsmem_token *tok);
int dsmem_tc_add_pd(struct ib_pd *pd, struct net *net, u32 node, u32 peer,
		    u32 *handle);
int dsmem_tc_add_cq(struct ib_cq *cq, struct net *net, u32 node, u32 peer,
		    u32 *handle);
int dsmem_tc_add_qp(struct ib_qp *qp, u32 pd, u32 cq, struct net *net,
		    u32 node, u32 peer, u32 *handle);
int dsmem_tc_add_mr(u32 lkey, int access, unsigned long npages,
		    struct net *net, u32 node, u8 kind, u32 owner, u32 sub,
		    u32 *handle);
void dsmem_tc_qp_state(u32 handle, u8 state);
int dsmem_tc_describe(u32 eid, char *buf, size_t len);
bool dsmem_tc_visible(u32 eid, struct net *net);

/* tokencache/dsmem_tc_trace.c */
static inline bool dsmem_tc_tracing(void)
{
	return rcu_access_pointer(dsmem_trace_cur);
}

void dsmem_tc_trace(u32 handle, u32 node, u8 op, u8 tier);
int dsmem_tc_trace_start(int fd, struct netlink_ext_ack *extack);
int dsmem_tc_trace_stop(u64 *records, u64 *dropped, int *err);
void dsmem_tc_trace_state(bool *active, u64 *records, u64 *dropped);
void dsmem_tc_trace_exit(void);

/* tokencache/dsmem_tc_bench.c */
int dsmem_tc_bench(u32 qps, u32 ops, u32 seed, const u64 *p,
		   struct dsmem_tc_bench_res *r);
int dsmem_tc_replay(const void *recs, u32 n, u64 maint_ns, const u64 *p,
		    struct dsmem_tc_replay_res *r, const char **why);

/* tokencache/dsmem_tc_nl.c */
int dsmem_nl_cache_params(struct nlattr *nest, u64 *p,
			  struct netlink_ext_ack *extack);

#endif /* _DSMEM_TC_H */
