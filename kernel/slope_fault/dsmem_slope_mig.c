// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: moving an object's pages to another node.
 *
 * Source                                  Destination
 *  MIGRATE: track writes, register the
 *  pages for READ, PUT + BEGIN  ------->  allocate the pages (WAIT: not
 *                               <-------  usable yet), register them for
 *                                         WRITE, answer with the keys
 *  prefill rounds: RDMA WRITE of every
 *  unit, then of each epoch's dirty set,
 *  while the application runs on; once
 *  the set stops shrinking: STOPPING
 *  MIG_STOP (the application stopped):
 *  unmap (SIGBUS from now on), last
 *  epoch's set, PUT + HANDOVER  ------->  clean units usable at once; the
 *                               <-------  dirty ones pulled by RDMA READ in
 *                                         the background, a faulting
 *                                         thread's unit first
 *                               <-------  DONE
 *  free the pages
 *
 * Ownership moves with the HANDOVER's reply: before it the source owns
 * the object and any failure leaves it there, intact; after it the
 * destination does, and a source lost while pages are still to be pulled
 * costs those pages only (SIGBUS when touched, counted as failed).
 */
#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "dsmem_slope.h"

/* one-sided work requests of a migration in flight */
#define DSMEM_SLOPE_WRS		32
/* units per work request at most (the connection's SGE limit applies) */
#define DSMEM_SLOPE_SGE_MAX	32
/* migrations that ended and were not released, per node, at most */
#define DSMEM_SLOPE_ENDED_MAX	64
/* staged BEGIN or HANDOVER data at most */
#define DSMEM_SLOPE_STAGE_MAX						\
	(sizeof(struct dsmem_wire_slope_begin) +			\
	 DSMEM_SLOPE_EXTENTS_MAX * sizeof(struct dsmem_wire_slope_extent))

/*
 * What one peer's incoming migrations may hold here, whatever its
 * connections: a peer that starts migrations and never hands them over,
 * or hands over objects no process here receives, takes this much and
 * no more.  Limits and defaults in dsmem_limits.h.
 */
static unsigned int slope_peer_migs = DSMEM_SLOPE_PEER_MIGS;
module_param(slope_peer_migs, uint, 0644);
MODULE_PARM_DESC(slope_peer_migs,
		 "incoming Slope migrations one peer may have holding memory here: unfinished, or handed over and not received (0: none)");

static unsigned long slope_peer_bytes;
module_param(slope_peer_bytes, ulong, 0644);
MODULE_PARM_DESC(slope_peer_bytes,
		 "bytes one peer's incoming Slope migrations may hold here: pages and staged data (0: half of RAM)");

static unsigned int slope_unreceived_ms = DSMEM_SLOPE_UNRECEIVED_MS;
module_param(slope_unreceived_ms, uint, 0644);
MODULE_PARM_DESC(slope_unreceived_ms,
		 "a Slope migration handed over here that no process receives is dropped, its pages freed, this long after the handover (ms, >= 100)");

struct dsmem_slope_wr {
	struct ib_cqe cqe;
	struct llist_node node;
	struct dsmem_slope_mig *mig;
	u64 unit;
	u32 n;
	int status;
};

static u64 dsmem_slope_unit_bytes(const struct dsmem_slope_mig *mig)
{
	return 1ULL << mig->unit_shift;
}

static void dsmem_slope_mig_release(struct kref *ref)
{
	struct dsmem_slope_mig *mig = container_of(ref, struct dsmem_slope_mig,
						   ref);

	WARN_ON(mig->nmrs || mig->mapped || mig->held || mig->track);
	if (mig->conn)
		dsmem_conn_put(mig->conn);
	kvfree(mig->stage);
	kvfree(mig->pending);
	kfree(mig->wrs);
	kfree(mig->rkeys);
	kvfree(mig->dma);
	kvfree(mig->pages);
	kvfree(mig->first);
	kvfree(mig->ext);
	kfree(mig);
}

static void dsmem_slope_mig_put(struct dsmem_slope_mig *mig)
{
	kref_put(&mig->ref, dsmem_slope_mig_release);
}

static void dsmem_slope_mig_work(struct work_struct *work);

static struct dsmem_slope_mig *dsmem_slope_mig_alloc(struct dsmem_slope *s,
						     struct dsmem_conn *conn,
						     bool incoming)
{
	struct dsmem_slope_mig *mig;
	unsigned int i;

	mig = kzalloc(sizeof(*mig), GFP_KERNEL);
	if (!mig)
		return NULL;
	mig->wrs = kcalloc(DSMEM_SLOPE_WRS, sizeof(*mig->wrs), GFP_KERNEL);
	if (!mig->wrs) {
		kfree(mig);
		return NULL;
	}
	kref_init(&mig->ref);
	mig->s = s;
	mig->incoming = incoming;
	kref_get(&conn->ref);
	mig->conn = conn;
	mig->peer = conn->remote_node;
	INIT_LIST_HEAD(&mig->link);
	INIT_WORK(&mig->work, dsmem_slope_mig_work);
	init_llist_head(&mig->wr_free);
	init_llist_head(&mig->wr_done);
	init_waitqueue_head(&mig->wr_wait);
	spin_lock_init(&mig->urgent_lock);
	mutex_init(&mig->op_lock);
	init_completion(&mig->handover);
	for (i = 0; i < DSMEM_SLOPE_WRS; i++) {
		mig->wrs[i].mig = mig;
		llist_add(&mig->wrs[i].node, &mig->wr_free);
	}
	mig->t_start = ktime_get();
	return mig;
}

static bool dsmem_slope_mig_ended(const struct dsmem_slope_mig *mig)
{
	return mig->state == DSMEM_SLOPE_MIG_DONE ||
	       mig->state == DSMEM_SLOPE_MIG_FAILED;
}

static bool dsmem_slope_mig_unreceived(const struct dsmem_slope_mig *mig)
{
	return mig->incoming && mig->t_handover && !mig->received;
}

/*
 * Destination: it holds memory on its peer's behalf -- pages, memory
 * regions or staged data -- until it ends and, if it was handed over, a
 * process received it (or it expired).
 */
static bool dsmem_slope_mig_holds(const struct dsmem_slope_mig *mig)
{
	return mig->incoming &&
	       (!dsmem_slope_mig_ended(mig) || dsmem_slope_mig_unreceived(mig));
}

/* Under mig_lock: how many of peer's migrations hold memory here, and how much. */
static unsigned int dsmem_slope_peer_held(struct dsmem_slope *s, u32 peer,
					  u64 *bytes)
{
	struct dsmem_slope_mig *it;
	unsigned int n = 0;

	lockdep_assert_held(&s->mig_lock);
	*bytes = 0;
	list_for_each_entry(it, &s->migs, link) {
		if (it->peer != peer || !dsmem_slope_mig_holds(it))
			continue;
		n++;
		*bytes += it->charged + it->stage_cap;
	}
	return n;
}

static u64 dsmem_slope_peer_bytes_max(void)
{
	u64 max = READ_ONCE(slope_peer_bytes);

	return max ?: ((u64)totalram_pages() << PAGE_SHIFT) /
		      DSMEM_SLOPE_PEER_RAM_DIV;
}

/* A peer's migration refused before anything was allocated for it. */
static int dsmem_slope_refuse(struct dsmem_slope *s, u32 peer, int err,
			      const char *why)
{
	dsmem_stat_inc(err == -EBUSY ? DSMEM_STAT_SLOPE_QUOTA_MIGS :
				       DSMEM_STAT_SLOPE_QUOTA_BYTES);
	pr_info_ratelimited("slope: node %u: migration from node %u refused: %s\n",
			    s->node->id, peer, why);
	return err;
}

/* Under mig_lock: the staged data is consumed, or no longer wanted. */
static void dsmem_slope_mig_unstage(struct dsmem_slope_mig *mig)
{
	lockdep_assert_held(&mig->s->mig_lock);
	kvfree(mig->stage);
	mig->stage = NULL;
	mig->staged = 0;
	mig->stage_cap = 0;
}

/* Under mig_lock: forget it; waiters on it see it gone. */
static void dsmem_slope_mig_unlink(struct dsmem_slope_mig *mig)
{
	lockdep_assert_held(&mig->s->mig_lock);
	if (dsmem_slope_mig_unreceived(mig))
		mig->s->unreceived--;
	list_del_init(&mig->link);
	wake_up_all(&mig->s->mig_wait);
	dsmem_slope_mig_put(mig);
}

/* Under mig_lock: publish, keeping a bounded number of ended ones. */
static void dsmem_slope_mig_link(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	struct dsmem_slope_mig *it, *oldest = NULL;
	unsigned int ended = 0;

	lockdep_assert_held(&s->mig_lock);
	mig->id = ++s->next_mig;
	list_add_tail(&mig->link, &s->migs);
	list_for_each_entry(it, &s->migs, link) {
		if ((it->state != DSMEM_SLOPE_MIG_DONE &&
		     it->state != DSMEM_SLOPE_MIG_FAILED) ||
		    dsmem_slope_mig_unreceived(it))
			continue;
		if (!oldest)
			oldest = it;
		ended++;
	}
	if (ended > DSMEM_SLOPE_ENDED_MAX)
		dsmem_slope_mig_unlink(oldest);
}

static void dsmem_slope_mig_set_state(struct dsmem_slope_mig *mig, u32 state,
				      int error)
{
	struct dsmem_slope *s = mig->s;

	mutex_lock(&s->mig_lock);
	mig->state = state;
	if (error && !mig->error)
		mig->error = error;
	/* an ended one keeps its statistics, not its peer's data */
	if (dsmem_slope_mig_ended(mig))
		dsmem_slope_mig_unstage(mig);
	mutex_unlock(&s->mig_lock);
	wake_up_all(&s->mig_wait);
	dsmem_slope_notify_mig(mig);
}

/* Units' first pages, in order of the extents; the pages are present. */
static int dsmem_slope_mig_pages(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	u64 k = 0, per = dsmem_slope_unit_bytes(mig) >> PAGE_SHIFT, j;
	u32 i;

	mig->pages = kvcalloc(mig->units, sizeof(*mig->pages), GFP_KERNEL);
	if (!mig->pages)
		return -ENOMEM;
	for (i = 0; i < mig->nextents; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		for (j = 0; j < mig->ext[i].len >> PAGE_SHIFT; j += per) {
			void *entry = xa_load(&s->pages, idx + j);

			if (!entry || xa_is_value(entry))
				return -EFAULT;
			mig->pages[k++] = entry;
		}
	}
	return 0;
}

static void dsmem_slope_mig_unmap_dma(struct dsmem_slope_mig *mig)
{
	struct ib_device *ibdev;
	u64 k;

	if (!mig->mapped)
		return;
	ibdev = mig->conn->ibdev;
	for (k = 0; k < mig->units; k++)
		ib_dma_unmap_page(ibdev, mig->dma[k], dsmem_slope_unit_bytes(mig),
				  DMA_BIDIRECTIONAL);
	mig->mapped = false;
}

static int dsmem_slope_mig_map_dma(struct dsmem_slope_mig *mig)
{
	struct ib_device *ibdev = mig->conn->ibdev;
	u64 k;

	mig->dma = kvcalloc(mig->units, sizeof(*mig->dma), GFP_KERNEL);
	if (!mig->dma)
		return -ENOMEM;
	for (k = 0; k < mig->units; k++) {
		mig->dma[k] = ib_dma_map_page(ibdev, mig->pages[k], 0,
					      dsmem_slope_unit_bytes(mig),
					      DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(ibdev, mig->dma[k])) {
			while (k--)
				ib_dma_unmap_page(ibdev, mig->dma[k],
						  dsmem_slope_unit_bytes(mig),
						  DMA_BIDIRECTIONAL);
			return -ENOMEM;
		}
	}
	mig->mapped = true;
	return 0;
}

static void dsmem_slope_mig_dereg(struct dsmem_slope_mig *mig)
{
	u32 i;

	/* deregistration kills the keys: the peer's late accesses fail */
	for (i = 0; i < mig->nmrs; i++)
		ib_dereg_mr(mig->mrs[i]);
	kfree(mig->mrs);
	mig->mrs = NULL;
	mig->nmrs = 0;
}

static struct page *dsmem_slope_mig_page(struct dsmem_slope_mig *mig, u64 i)
{
	unsigned int order = mig->unit_shift - PAGE_SHIFT;

	return mig->pages[i >> order] + (i & ((1ULL << order) - 1));
}

/*
 * Source: a reference on every page of the units, before they are
 * mapped for the device.  Under alloc_lock, after a 2 MiB unit was
 * found contiguous, so that page + i is what s->pages holds.
 */
static void dsmem_slope_mig_hold(struct dsmem_slope_mig *mig)
{
	u64 i, n = mig->units << (mig->unit_shift - PAGE_SHIFT);

	for (i = 0; i < n; i++)
		get_page(dsmem_slope_mig_page(mig, i));
	mig->held = n;
}

/*
 * Nothing reaches the pages through us any more: the peer's keys are
 * dead, the device mappings gone; only then are the pages let go, which
 * frees those a SLOPE_FREE dropped meanwhile.
 */
static void dsmem_slope_mig_unpin(struct dsmem_slope_mig *mig)
{
	u64 i;

	dsmem_slope_mig_dereg(mig);
	dsmem_slope_mig_unmap_dma(mig);
	for (i = 0; i < mig->held; i++)
		put_page(dsmem_slope_mig_page(mig, i));
	mig->held = 0;
}

/*
 * Memory regions over the units in order, each at iova i * span, for the
 * peer of this migration only.
 */
static int dsmem_slope_mig_reg(struct dsmem_slope_mig *mig, int access)
{
	struct dsmem_conn *conn = mig->conn;
	u32 maxpl = conn->ibdev->attrs.max_fast_reg_page_list_len;
	u64 unit = dsmem_slope_unit_bytes(mig), per, k;
	/*
	 * An entry to spare in each region: rxe (6.1) reads the map after
	 * the last full one when a transfer ends at the region's end.
	 */
	u32 spare = maxpl > 1;
	struct scatterlist *sgl;
	u32 nmrs, i;
	int ret;

	per = min_t(u64, maxpl ? maxpl - spare : 1, mig->units);
	nmrs = DIV_ROUND_UP_ULL(mig->units, per);
	if (nmrs > DSMEM_WIRE_SLOPE_KEYS_MAX)
		return -E2BIG;
	mig->mrs = kcalloc(nmrs, sizeof(*mig->mrs), GFP_KERNEL);
	sgl = kvcalloc(per, sizeof(*sgl), GFP_KERNEL);
	if (!mig->mrs || !sgl) {
		ret = -ENOMEM;
		goto out;
	}
	mig->span = per * unit;
	for (i = 0; i < nmrs; i++) {
		u64 n = min_t(u64, per, mig->units - i * per);
		struct ib_mr *mr;

		sg_init_table(sgl, n);
		for (k = 0; k < n; k++) {
			sg_set_page(&sgl[k], mig->pages[i * per + k], unit, 0);
			sg_dma_address(&sgl[k]) = mig->dma[i * per + k];
			sg_dma_len(&sgl[k]) = unit;
		}
		mr = ib_alloc_mr(conn->pd, IB_MR_TYPE_MEM_REG, n + spare);
		if (IS_ERR(mr)) {
			ret = PTR_ERR(mr);
			goto out;
		}
		mig->mrs[mig->nmrs++] = mr;
		ret = ib_map_mr_sg(mr, sgl, n, NULL, unit);
		if (ret != n) {
			ret = ret < 0 ? ret : -EINVAL;
			goto out;
		}
		mr->iova = (u64)i * mig->span;
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		ret = dsmem_reg_post(conn, mr, access);
		if (ret)
			goto out;
	}
	ret = 0;
out:
	kvfree(sgl);
	if (ret)
		dsmem_slope_mig_dereg(mig);
	return ret;
}

static int dsmem_slope_mig_keys(struct dsmem_slope_mig *mig, u32 *rkeys)
{
	u32 i;

	for (i = 0; i < mig->nmrs; i++)
		rkeys[i] = mig->mrs[i]->rkey;
	return mig->nmrs;
}

/* One-sided work: completions (softirq) only hand the request back. */
static void dsmem_slope_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dsmem_slope_wr *wr = container_of(wc->wr_cqe,
						 struct dsmem_slope_wr, cqe);
	struct dsmem_slope_mig *mig = wr->mig;
	unsigned long flags;

	wr->status = wc->status == IB_WC_SUCCESS ? 0 : -EIO;
	if (unlikely(wr->status))
		dsmem_conn_wc_error(mig->conn, wc);
	dsmem_conn_put_credit(mig->conn, &mig->conn->sq_free);
	llist_add(&wr->node, &mig->wr_done);
	/*
	 * Under the wait queue's lock: once the last request is counted
	 * out, dsmem_slope_mig_drain returns and the migration may go, so
	 * nothing of it is touched after this lock is dropped.
	 */
	spin_lock_irqsave(&mig->wr_wait.lock, flags);
	atomic_dec(&mig->inflight);
	wake_up_locked(&mig->wr_wait);
	spin_unlock_irqrestore(&mig->wr_wait.lock, flags);
}

/* Units k .. k + n - 1 usable now (ok) or lost for good (SIGBUS). */
static void dsmem_slope_mig_mark(struct dsmem_slope_mig *mig, u64 unit, u64 n,
				 bool ok)
{
	struct dsmem_slope *s = mig->s;
	unsigned int shift = mig->unit_shift - PAGE_SHIFT;
	u64 k = unit, end = unit + n;
	u32 i = 0;

	while (k < end) {
		u64 last, run;
		pgoff_t idx;

		while (i + 1 < mig->nextents && mig->first[i + 1] <= k)
			i++;
		/* the rest of this extent, or of the range */
		last = mig->first[i] + (mig->ext[i].len >> mig->unit_shift);
		run = min(end, last) - k;
		idx = dsmem_slope_idx(mig->ext[i].addr) +
		      ((k - mig->first[i]) << shift);
		if (!ok)
			dsmem_slope_mark(s, idx, run << shift, DSMEM_SLOPE_GONE,
					 true);
		dsmem_slope_mark(s, idx, run << shift, DSMEM_SLOPE_WAIT, false);
		k += run;
	}
}

/* Arrival of pulled units: usable now, or lost. */
static void dsmem_slope_mig_arrived(struct dsmem_slope_mig *mig, u64 unit,
				    u32 n, bool ok)
{
	struct dsmem_slope *s = mig->s;

	dsmem_slope_mig_mark(mig, unit, n, ok);
	mutex_lock(&s->mig_lock);
	if (ok)
		mig->pulled_units += n;
	else
		mig->failed_units += n;
	mutex_unlock(&s->mig_lock);
	wake_up_all(&s->page_wait);
}

/* Take back finished requests; the first error, or 0. */
static int dsmem_slope_mig_reap(struct dsmem_slope_mig *mig)
{
	struct llist_node *done = llist_del_all(&mig->wr_done);
	struct dsmem_slope_wr *wr, *tmp;
	int ret = 0;

	llist_for_each_entry_safe(wr, tmp, done, node) {
		u32 j;

		if (wr->status && !ret)
			ret = wr->status;
		for (j = 0; mig->incoming && !wr->status && j < wr->n; j++)
			ib_dma_sync_single_for_cpu(mig->conn->ibdev,
						   mig->dma[wr->unit + j],
						   dsmem_slope_unit_bytes(mig),
						   DMA_BIDIRECTIONAL);
		if (mig->incoming)
			dsmem_slope_mig_arrived(mig, wr->unit, wr->n, !wr->status);
		llist_add(&wr->node, &mig->wr_free);
	}
	return ret;
}

static struct dsmem_slope_wr *dsmem_slope_wr_get(struct dsmem_slope_mig *mig,
						 int *err)
{
	struct llist_node *n;

	for (;;) {
		n = llist_del_first(&mig->wr_free);
		if (n)
			return llist_entry(n, struct dsmem_slope_wr, node);
		*err = dsmem_slope_mig_reap(mig) ?: *err;
		if (!llist_empty(&mig->wr_free))
			continue;
		wait_event(mig->wr_wait, !llist_empty(&mig->wr_done));
	}
}

/* Wait for every request in flight; the first error, or 0. */
static int dsmem_slope_mig_drain(struct dsmem_slope_mig *mig)
{
	wait_event(mig->wr_wait, !atomic_read(&mig->inflight));
	/* the last completion has left the lock: see dsmem_slope_wr_done */
	spin_lock_irq(&mig->wr_wait.lock);
	spin_unlock_irq(&mig->wr_wait.lock);
	return dsmem_slope_mig_reap(mig);
}

/*
 * Move n consecutive units from k on: WRITE ours to theirs (source) or
 * READ theirs into ours (destination).  They lie in one of the peer's
 * regions and n is at most the connection's SGE limit.
 */
/* A request that was not posted: nothing of it will complete. */
static void dsmem_slope_wr_unpost(struct ib_send_wr *w)
{
	struct dsmem_slope_wr *wr = container_of(w->wr_cqe,
						 struct dsmem_slope_wr, cqe);

	atomic_dec(&wr->mig->inflight);
	llist_add(&wr->node, &wr->mig->wr_free);
}

static int dsmem_slope_mig_post(struct dsmem_slope_mig *mig, u64 k, u32 n,
				int *err)
{
	struct dsmem_conn *conn = mig->conn;
	u64 unit = dsmem_slope_unit_bytes(mig), rper = mig->rspan / unit;
	struct ib_sge sge[DSMEM_SLOPE_SGE_MAX];
	struct ib_rdma_wr w = {};
	struct dsmem_slope_wr *wr;
	u32 j;
	int ret;

	ret = dsmem_conn_wait_credit(conn, &conn->sq_free);
	if (ret)
		return ret;
	wr = dsmem_slope_wr_get(mig, err);
	wr->unit = k;
	wr->n = n;
	wr->cqe.done = dsmem_slope_wr_done;
	for (j = 0; j < n; j++) {
		sge[j].addr = mig->dma[k + j];
		sge[j].length = unit;
		sge[j].lkey = conn->pd->local_dma_lkey;
		/* what the CPU wrote, visible to the device (bounce buffers) */
		if (!mig->incoming)
			ib_dma_sync_single_for_device(conn->ibdev, mig->dma[k + j],
						      unit, DMA_BIDIRECTIONAL);
	}
	w.wr.opcode = mig->incoming ? IB_WR_RDMA_READ : IB_WR_RDMA_WRITE;
	w.wr.send_flags = IB_SEND_SIGNALED;
	w.wr.wr_cqe = &wr->cqe;
	w.wr.sg_list = sge;
	w.wr.num_sge = n;
	w.remote_addr = (k / rper) * mig->rspan + (k % rper) * unit;
	w.rkey = mig->rkeys[k / rper];

	atomic_inc(&mig->inflight);
	return dsmem_conn_post(conn, &w.wr, &conn->sq_free, DSMEM_CONN_UP,
			       dsmem_slope_wr_unpost);
}

/* The longest run of set bits from k that one request can carry. */
static u32 dsmem_slope_run(struct dsmem_slope_mig *mig,
			   const unsigned long *set, u64 k)
{
	u64 rper = mig->rspan >> mig->unit_shift;
	u64 stop = min(mig->units, (k / rper + 1) * rper);
	u32 n = 1, max = min_t(u32, DSMEM_SLOPE_SGE_MAX,
			       dsmem_conn_max_sge(mig->conn, mig->incoming));

	while (n < max && k + n < stop && test_bit(k + n, set))
		n++;
	return n;
}

/* Source: write every unit of set to the destination. */
static int dsmem_slope_mig_send(struct dsmem_slope_mig *mig,
				const unsigned long *set)
{
	int err = 0, ret = 0;
	u64 k = 0;
	u32 n;

	for (k = find_next_bit(set, mig->units, 0); k < mig->units;
	     k = find_next_bit(set, mig->units, k + n)) {
		n = dsmem_slope_run(mig, set, k);
		ret = dsmem_slope_mig_post(mig, k, n, &err);
		if (ret || err || READ_ONCE(mig->abort))
			break;
		mig->sent_units += n;
	}
	err = dsmem_slope_mig_drain(mig) ?: err;
	if (!ret && READ_ONCE(mig->abort))
		ret = -ECONNRESET;
	return ret ?: err;
}

/* -EALREADY: the destination owns the object already. */
static int dsmem_slope_mig_send_abort(struct dsmem_slope_mig *mig)
{
	struct dsmem_wire_msg req = {
		.opcode = DSMEM_WIRE_SLOPE_MIG_ABORT,
		.aux = mig->id,
	};
	struct dsmem_wire_msg reply;

	return dsmem_msg_call(mig->conn, &req, &reply, NULL, 0);
}

/*
 * Source, before the handover: give up, leaving the object where it was
 * and as it was.  The caller made sure nothing is in flight, and holds
 * op_lock unless the prefill work itself fails.
 */
static void dsmem_slope_mig_fail_source(struct dsmem_slope_mig *mig, int err,
					bool tell_peer)
{
	struct dsmem_slope *s = mig->s;

	if (tell_peer && !READ_ONCE(mig->abort))
		dsmem_slope_mig_send_abort(mig);
	/*
	 * The peer's keys die first: once the tracker stops and the marks
	 * go, the application may free the pages.
	 */
	dsmem_slope_mig_unpin(mig);
	if (mig->track) {
		dsmem_slope_track_stop(mig->track);
		mig->track = NULL;
	}
	/* a failed MIG_STOP froze the pages: theirs again */
	dsmem_slope_mark_extents(s, mig->ext, mig->nextents, DSMEM_SLOPE_GONE,
				 false);
	mig->t_done = ktime_get();
	dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_FAILED, err);
}

/* Source: prefill rounds until the dirty set stops shrinking. */
static void dsmem_slope_mig_prefill(struct dsmem_slope_mig *mig)
{
	unsigned long *all, *set;
	u64 ndirty, last = U64_MAX;
	ktime_t t;
	int ret;

	all = bitmap_zalloc(mig->units, GFP_KERNEL);
	if (!all) {
		dsmem_slope_mig_fail_source(mig, -ENOMEM, true);
		return;
	}
	bitmap_fill(all, mig->units);
	t = ktime_get();
	ret = dsmem_slope_mig_send(mig, all);
	mig->first_round_ns = ktime_to_ns(ktime_sub(ktime_get(), t));
	bitmap_free(all);
	mig->rounds = 1;
	while (!ret && mig->rounds < mig->max_rounds) {
		set = dsmem_slope_track_switch(mig->track, &ndirty);
		ret = dsmem_slope_mig_send(mig, set);
		mig->rounds++;
		if (ndirty <= mig->stop_units ||
		    (!mig->stop_units && ndirty >= last))
			break;
		last = ndirty;
	}
	if (ret) {
		/* unless the connection's end is doing it (conn_down) */
		if (!READ_ONCE(mig->abort))
			dsmem_slope_mig_fail_source(mig, ret, true);
		return;
	}
	mig->t_stopping = ktime_get();
	dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_STOPPING, 0);
}

/*
 * Look for unreceived migrations past their time now; the work arms
 * itself again for the next one.
 */
static void dsmem_slope_expire_kick(struct dsmem_slope *s)
{
	if (!READ_ONCE(s->node->dead))
		mod_delayed_work(dsmem_slope_wq, &s->expire_work, 0);
}

/* Destination: pull the units left dirty at the handover. */
static void dsmem_slope_mig_pull(struct dsmem_slope_mig *mig)
{
	struct dsmem_wire_msg req = {
		.opcode = DSMEM_WIRE_SLOPE_MIG_DONE,
		.aux = mig->wire_id,
	};
	struct dsmem_slope *s = mig->s;
	struct dsmem_wire_msg reply;
	int err = 0, ret = 0;
	u64 k;
	u32 n;

	for (;;) {
		k = mig->units;
		spin_lock(&mig->urgent_lock);
		while (mig->nurgent && k == mig->units) {
			u64 u = mig->urgent[--mig->nurgent];

			if (test_bit(u, mig->pending))
				k = u;
		}
		spin_unlock(&mig->urgent_lock);
		if (k == mig->units) {
			k = find_next_bit(mig->pending, mig->units, mig->pull_next);
			if (k == mig->units)
				k = find_first_bit(mig->pending, mig->units);
		}
		if (k == mig->units || ret || READ_ONCE(mig->abort))
			break;
		n = dsmem_slope_run(mig, mig->pending, k);
		bitmap_clear(mig->pending, k, n);
		mig->pull_next = k + n;
		ret = dsmem_slope_mig_post(mig, k, n, &err);
		if (ret) {
			/* never posted: lost with the rest below */
			bitmap_set(mig->pending, k, n);
			break;
		}
		/* finished ones unblock faults now, not at the end */
		dsmem_slope_mig_reap(mig);
	}
	dsmem_slope_mig_drain(mig);
	/* what could not be pulled is lost: SIGBUS instead of a hang */
	for_each_set_bit(k, mig->pending, mig->units)
		dsmem_slope_mig_arrived(mig, k, 1, false);
	bitmap_zero(mig->pending, mig->units);
	dsmem_slope_mig_unpin(mig);

	req.addr = mig->pulled_units;
	req.len = mig->failed_units;
	if (!READ_ONCE(mig->abort))
		dsmem_msg_call(mig->conn, &req, &reply, NULL, 0);
	mig->t_done = ktime_get();
	if (mig->failed_units)
		dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_FAILED,
					  -ECONNRESET);
	else
		dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_DONE, 0);
	wake_up_all(&s->page_wait);
	/* its pages are let go: it may expire now, if nobody received it */
	dsmem_slope_expire_kick(s);
}

static void dsmem_slope_mig_work(struct work_struct *work)
{
	struct dsmem_slope_mig *mig = container_of(work, struct dsmem_slope_mig,
						   work);

	if (mig->incoming)
		dsmem_slope_mig_pull(mig);
	else
		dsmem_slope_mig_prefill(mig);
	dsmem_slope_mig_put(mig);	/* the reference queue_work took */
}

/* Source, after the handover: the destination has the object. */
static void dsmem_slope_mig_free_source(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	u64 j;
	u32 i;

	dsmem_slope_mig_unpin(mig);
	mutex_lock(&s->alloc_lock);
	for (i = 0; i < mig->nextents; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		for (j = 0; j < mig->ext[i].len >> PAGE_SHIFT; j++)
			dsmem_slope_page_drop(s, idx + j);
		dsmem_slope_runs_remove(s, idx, mig->ext[i].len >> PAGE_SHIFT);
	}
	mutex_unlock(&s->alloc_lock);
}

/*
 * Send data staged in PUTs, then the request that consumes it; the
 * reply's data, rlen bytes of it, lands in rdata.
 */
static int dsmem_slope_mig_call(struct dsmem_slope_mig *mig, u8 opcode,
				const void *data, size_t len,
				void *rdata, size_t rmax, size_t *rlen)
{
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_SLOPE_MIG_PUT,
				      .aux = mig->id };
	struct dsmem_wire_msg reply;
	size_t off;
	int ret;

	for (off = 0; off < len; off += req.len) {
		req.addr = off;
		req.len = min_t(size_t, len - off, DSMEM_WIRE_MAX_DATA);
		req.data = data + off;
		ret = dsmem_msg_call(mig->conn, &req, &reply, NULL, 0);
		if (ret)
			return ret;
	}
	memset(&req, 0, sizeof(req));
	req.opcode = opcode;
	req.aux = mig->id;
	req.len = len;
	ret = dsmem_msg_call_timeout(mig->conn, &req, &reply, rdata, rmax,
				     DSMEM_MSG_TIMEOUT_MS +
				     DSMEM_SLOPE_BEGIN_MS_PER_1K *
				     (u32)DIV_ROUND_UP_ULL(mig->units, 1024));
	if (!ret && rlen)
		*rlen = reply.len;
	return ret;
}

/* The object's extents in a BEGIN; the destination's keys into keys. */
static int dsmem_slope_mig_send_begin(struct dsmem_slope_mig *mig, void *keys,
				      size_t *klen)
{
	struct dsmem_slope_begin_info b = {
		.cookie = mig->cookie,
		.units = mig->units,
		.nextents = mig->nextents,
		.unit_shift = mig->unit_shift,
	};
	size_t len = dsmem_slope_begin_size(mig->nextents);
	void *buf;
	int ret;

	buf = kvmalloc(len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	ret = dsmem_slope_begin_encode(buf, len, &b, mig->ext);
	if (ret >= 0) {
		memset(keys, 0, DSMEM_WIRE_MAX_DATA);
		ret = dsmem_slope_mig_call(mig, DSMEM_WIRE_SLOPE_MIG_BEGIN, buf,
					   len, keys, DSMEM_WIRE_MAX_DATA, klen);
	}
	kvfree(buf);
	return ret;
}

static int dsmem_slope_mig_begin(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope_keys_info k;
	size_t klen;
	void *keys;
	u32 i;
	int ret;

	keys = kmalloc(DSMEM_WIRE_MAX_DATA, GFP_KERNEL);
	if (!keys)
		return -ENOMEM;
	ret = dsmem_slope_mig_send_begin(mig, keys, &klen);
	if (ret)
		goto out;
	/* the keys are what the peer sent, not what its count claims */
	ret = dsmem_slope_keys_decode(keys, klen, mig->units, mig->unit_shift,
				      &k);
	if (ret)
		goto out;
	mig->rkeys = kcalloc(k.nkeys, sizeof(u32), GFP_KERNEL);
	if (!mig->rkeys) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < k.nkeys; i++)
		mig->rkeys[i] = dsmem_slope_rkey(k.rkeys, i);
	mig->nrkeys = k.nkeys;
	mig->rspan = k.span;
out:
	kfree(keys);
	return ret;
}

/* A 2 MiB unit is one physically contiguous run of pages, or nothing. */
static int dsmem_slope_mig_check_huge(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	u64 per = 1ULL << DSMEM_SLOPE_HUGE_ORDER, k = 0, j, p;
	u32 i;

	for (i = 0; i < mig->nextents; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		for (j = 0; j < mig->ext[i].len >> PAGE_SHIFT; j += per, k++) {
			unsigned long pfn = page_to_pfn(mig->pages[k]);

			for (p = 1; p < per; p++) {
				void *entry = xa_load(&s->pages, idx + j + p);

				if (xa_is_value(entry) || !entry ||
				    page_to_pfn((struct page *)entry) != pfn + p)
					return -EINVAL;
			}
		}
	}
	return 0;
}

/*
 * -EBUSY when a migration arriving here still has any of these addresses:
 * one not handed over, or not received yet, or (pulling) still pulling.
 */
int dsmem_slope_mig_arriving(struct dsmem_slope *s,
			     const struct dsmem_slope_extent *e, u32 n,
			     bool pulling)
{
	struct dsmem_slope_mig *it;
	int ret = 0;
	u32 i;

	mutex_lock(&s->mig_lock);
	list_for_each_entry(it, &s->migs, link) {
		u32 j = 0;

		if (!it->units || !(dsmem_slope_mig_unreceived(it) ||
				    (pulling && dsmem_slope_mig_holds(it))))
			continue;
		/* both sorted: one merge finds any overlap */
		for (i = 0; i < n && j < it->nextents && !ret;) {
			if (e[i].addr + e[i].len <= it->ext[j].addr)
				i++;
			else if (it->ext[j].addr + it->ext[j].len <= e[i].addr)
				j++;
			else
				ret = -EBUSY;
		}
	}
	mutex_unlock(&s->mig_lock);
	return ret;
}

/* Setting up failed: nothing of it stays, and nobody saw its id. */
static void dsmem_slope_mig_setup_failed(struct dsmem_slope_mig *mig, int err,
					 bool tell_peer)
{
	struct dsmem_slope *s = mig->s;

	if (tell_peer)
		dsmem_slope_mig_send_abort(mig);
	if (mig->track) {
		dsmem_slope_track_stop(mig->track);
		mig->track = NULL;
	}
	dsmem_slope_mig_unpin(mig);
	mutex_lock(&s->mig_lock);
	mig->state = DSMEM_SLOPE_MIG_FAILED;
	mig->error = err;
	dsmem_slope_mig_unlink(mig);
	mutex_unlock(&s->mig_lock);
}

int dsmem_slope_ioc_migrate(struct dsmem_node *node, void *arg)
{
	struct dsmem_ioc_slope_migrate *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	unsigned int shift = a->flags & DSMEM_SLOPE_HUGE ?
			     DSMEM_SLOPE_HUGE_SHIFT : PAGE_SHIFT;
	struct dsmem_slope_mig *mig;
	struct dsmem_slope_extent *e;
	struct dsmem_conn *conn;
	u64 units, j, per;
	u32 i;
	int ret;

	if (a->flags & ~DSMEM_SLOPE_MIGRATE_FLAGS_ALL || a->id ||
	    a->max_rounds > DSMEM_SLOPE_ROUNDS_MAX)
		return -EINVAL;
	if (!a->dst_node || a->dst_node == node->id)
		return -EINVAL;
	e = dsmem_slope_extents_get(a->extents, a->nr, shift,
				    DSMEM_SLOPE_MIG_UNITS_MAX, &units);
	if (IS_ERR(e))
		return PTR_ERR(e);
	conn = dsmem_conn_lookup(node, a->dst_node);
	if (!conn) {
		kvfree(e);
		return -ENOTCONN;
	}
	mig = dsmem_slope_mig_alloc(s, conn, false);
	dsmem_conn_put(conn);
	if (!mig) {
		kvfree(e);
		return -ENOMEM;
	}
	mig->ext = e;
	mig->nextents = a->nr;
	mig->unit_shift = shift;
	mig->units = units;
	mig->cookie = a->cookie;
	mig->max_rounds = a->max_rounds ?: DSMEM_SLOPE_ROUNDS_DEFAULT;
	mig->stop_units = a->stop_pages;
	mig->first = kvmalloc_array(a->nr, sizeof(u64), GFP_KERNEL);
	if (!mig->first) {
		dsmem_slope_mig_put(mig);
		return -ENOMEM;
	}
	dsmem_slope_extents_index(e, a->nr, shift, mig->first);

	/*
	 * Linked first, under op_lock: a connection that goes from now on
	 * finds it and waits for us (dsmem_slope_mig_conn_down); one that
	 * went before cannot be UP any more.
	 */
	mutex_lock(&mig->op_lock);
	mutex_lock(&s->mig_lock);
	dsmem_slope_mig_link(mig);
	mutex_unlock(&s->mig_lock);
	kref_get(&mig->ref);		/* the list's; ours goes at the end */
	if (READ_ONCE(mig->conn->state) != DSMEM_CONN_UP) {
		ret = -ENOTCONN;
		goto err_setup;
	}

	/* every unit gets its pages now: they are what is sent */
	mutex_lock(&s->alloc_lock);
	ret = dsmem_slope_extents_owned(s, e, a->nr) ?:
	      dsmem_slope_mig_arriving(s, e, a->nr, true);
	per = 1ULL << (shift - PAGE_SHIFT);
	for (i = 0; !ret && i < a->nr; i++) {
		pgoff_t idx = dsmem_slope_idx(e[i].addr);

		for (j = 0; !ret && j < e[i].len >> PAGE_SHIFT; j += per)
			if (xa_is_value(xa_load(&s->pages, idx + j)))
				ret = dsmem_slope_populate(s, idx + j, shift,
							   NULL);
	}
	if (!ret)
		ret = dsmem_slope_mig_pages(mig);
	if (!ret && shift == DSMEM_SLOPE_HUGE_SHIFT)
		ret = dsmem_slope_mig_check_huge(mig);
	if (!ret)
		dsmem_slope_mig_hold(mig);
	if (!ret) {
		mig->track = dsmem_slope_track_new(s, e, a->nr, shift, false);
		if (IS_ERR(mig->track)) {
			ret = PTR_ERR(mig->track);
			mig->track = NULL;
		}
	}
	mutex_unlock(&s->alloc_lock);
	if (ret)
		goto err_setup;
	ret = dsmem_slope_mig_map_dma(mig) ?:
	      dsmem_slope_mig_reg(mig, IB_ACCESS_REMOTE_READ);
	if (ret)
		goto err_setup;
	ret = dsmem_slope_mig_begin(mig);
	if (ret) {
		/* the destination may have started: tell it to let go */
		dsmem_slope_mig_setup_failed(mig, ret, true);
		goto out;
	}
	a->id = mig->id;
	kref_get(&mig->ref);
	if (!queue_work(dsmem_slope_wq, &mig->work))
		dsmem_slope_mig_put(mig);
	goto out;

err_setup:
	dsmem_slope_mig_setup_failed(mig, ret, false);
out:
	mutex_unlock(&mig->op_lock);
	dsmem_slope_mig_put(mig);
	return ret;
}

static struct dsmem_slope_mig *dsmem_slope_mig_find(struct dsmem_slope *s,
						    u64 id)
{
	struct dsmem_slope_mig *mig;

	lockdep_assert_held(&s->mig_lock);
	list_for_each_entry(mig, &s->migs, link)
		if (mig->id == id)
			return mig;
	return NULL;
}

void dsmem_slope_mig_fill(struct dsmem_slope_mig *mig,
			  struct dsmem_ioc_slope_mig *a)
{
	ktime_t end = mig->t_done ?: ktime_get();

	a->id = mig->id;
	a->state = mig->state;
	a->error = mig->error;
	a->peer = mig->peer;
	a->cookie = mig->cookie;
	a->pages = mig->units << (mig->unit_shift - PAGE_SHIFT);
	a->unit_shift = mig->unit_shift;
	a->rounds = mig->rounds;
	a->sent_units = mig->sent_units;
	a->dirty_units = mig->dirty_units;
	a->pulled_units = mig->pulled_units;
	a->failed_units = mig->failed_units;
	a->fault_waits = mig->fault_waits;
	a->prefill_ns = mig->t_stopping ?
			ktime_to_ns(ktime_sub(mig->t_stopping, mig->t_start)) : 0;
	a->stop_ns = mig->t_stop && mig->t_stopping ?
		     ktime_to_ns(ktime_sub(mig->t_stop, mig->t_stopping)) : 0;
	a->no_owner_ns = mig->t_handover && mig->t_stop ?
			 ktime_to_ns(ktime_sub(mig->t_handover, mig->t_stop)) : 0;
	a->pull_ns = mig->t_handover && mig->t_done ?
		     ktime_to_ns(ktime_sub(mig->t_done, mig->t_handover)) : 0;
	a->total_ns = ktime_to_ns(ktime_sub(end, mig->t_start));
	a->first_round_ns = mig->first_round_ns;
}

static int dsmem_slope_wait_result(long t)
{
	if (t < 0)
		return -EINTR;
	return t ? 0 : -ETIMEDOUT;
}

static long dsmem_slope_timeout(const struct dsmem_ioc_slope_mig *a)
{
	return a->timeout_ms ? msecs_to_jiffies(a->timeout_ms) :
			       MAX_SCHEDULE_TIMEOUT;
}

/* Until the migration's state is not a->state (or it was released). */
static int dsmem_slope_mig_wait(struct dsmem_slope *s,
				struct dsmem_ioc_slope_mig *a)
{
	struct dsmem_slope_mig *mig;
	long t;

	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_find(s, a->id);
	if (mig)
		kref_get(&mig->ref);
	mutex_unlock(&s->mig_lock);
	if (!mig)
		return -ENOENT;
	t = wait_event_interruptible_timeout(s->mig_wait,
					     READ_ONCE(mig->state) != a->state ||
					     list_empty(&mig->link),
					     dsmem_slope_timeout(a));
	dsmem_slope_mig_put(mig);
	return dsmem_slope_wait_result(t);
}

int dsmem_slope_ioc_mig_get(struct dsmem_node *node, void *arg)
{
	struct dsmem_ioc_slope_mig *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	struct dsmem_slope_mig *mig;
	int ret = 0;

	if (a->flags & ~DSMEM_SLOPE_MIG_FLAGS_ALL)
		return -EINVAL;
	if (a->flags & DSMEM_SLOPE_MIG_WAIT) {
		ret = dsmem_slope_mig_wait(s, a);
		if (ret)
			return ret;
	}
	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_find(s, a->id);
	if (!mig) {
		ret = -ENOENT;
	} else {
		dsmem_slope_mig_fill(mig, a);
		if (a->flags & DSMEM_SLOPE_MIG_RELEASE) {
			if (!dsmem_slope_mig_ended(mig))
				ret = -EBUSY;
			else
				dsmem_slope_mig_unlink(mig);
		}
	}
	mutex_unlock(&s->mig_lock);
	return ret;
}

int dsmem_slope_ioc_recv(struct dsmem_node *node, void *arg)
{
	struct dsmem_ioc_slope_mig *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	struct dsmem_slope_mig *mig;
	int ret;

	if (a->flags & ~DSMEM_SLOPE_MIG_WAIT || a->id)
		return -EINVAL;
	if (a->flags & DSMEM_SLOPE_MIG_WAIT) {
		long t = wait_event_interruptible_timeout(s->mig_wait,
							  READ_ONCE(s->unreceived),
							  dsmem_slope_timeout(a));

		ret = dsmem_slope_wait_result(t);
		if (ret)
			return ret;
	}
	mutex_lock(&s->mig_lock);
	ret = -EAGAIN;
	list_for_each_entry(mig, &s->migs, link) {
		if (!mig->incoming || mig->received || !mig->t_handover)
			continue;
		mig->received = true;
		s->unreceived--;
		dsmem_slope_mig_fill(mig, a);
		ret = 0;
		break;
	}
	mutex_unlock(&s->mig_lock);
	return ret;
}

/*
 * Under mig_lock: an unreceived migration whose time is up and whose pull
 * ended (until then the pull holds its pages, and its end kicks us), or
 * NULL.  *wait: ms until the next one's time is up, or -1 for none.
 */
static struct dsmem_slope_mig *dsmem_slope_mig_overdue(struct dsmem_slope *s,
						       s64 ms, s64 *wait)
{
	struct dsmem_slope_mig *mig;
	ktime_t now = ktime_get();

	lockdep_assert_held(&s->mig_lock);
	*wait = -1;
	list_for_each_entry(mig, &s->migs, link) {
		s64 left;

		if (!dsmem_slope_mig_unreceived(mig))
			continue;
		left = ms - ktime_ms_delta(now, mig->t_handover);
		if (left > 0) {
			if (*wait < 0 || left < *wait)
				*wait = left;
			continue;
		}
		if (dsmem_slope_mig_ended(mig))
			return mig;
	}
	return NULL;
}

/*
 * Under alloc_lock, unlinked: drop the object's pages as a FREE of them
 * would.  Its pull ended, so nothing of the migration reaches them; it
 * was not received, so no process has it, and FREE and MIGRATE left it
 * alone (dsmem_slope_mig_arriving).  The source let go of the addresses
 * at its DONE (or when it was lost): they go back to their lease.
 */
static void dsmem_slope_mig_expire(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	u64 n, j;
	u32 i;

	lockdep_assert_held(&s->alloc_lock);
	for (i = 0; i < mig->nextents; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		n = mig->ext[i].len >> PAGE_SHIFT;
		for (j = 0; j < n; j++)
			dsmem_slope_page_drop(s, idx + j);
		dsmem_slope_runs_remove(s, idx, n);
	}
	n = mig->units << (mig->unit_shift - PAGE_SHIFT);
	s->pages_owned -= min(s->pages_owned, n);
	dsmem_slope_lease_release(s, mig->ext, mig->nextents);
}

/*
 * A migration handed over here that no process received within
 * slope_unreceived_ms goes, pages and all, as if it had failed: its peer
 * cannot fill our memory with objects nobody takes.  A RECV meets us on
 * mig_lock: it has the whole object, or (we unlinked it first) nothing --
 * EAGAIN, or ETIMEDOUT when it waits.  alloc_lock, taken first, keeps a
 * FREE of the same addresses out until the pages are gone.
 */
void dsmem_slope_expire_work(struct work_struct *work)
{
	struct dsmem_slope *s = container_of(to_delayed_work(work),
					     struct dsmem_slope, expire_work);
	s64 ms = max_t(u32, READ_ONCE(slope_unreceived_ms),
		       DSMEM_SLOPE_UNRECEIVED_MS_MIN);
	struct dsmem_slope_mig *mig;
	s64 wait;

	for (;;) {
		mutex_lock(&s->alloc_lock);
		mutex_lock(&s->mig_lock);
		mig = dsmem_slope_mig_overdue(s, ms, &wait);
		if (mig) {
			kref_get(&mig->ref);
			mig->state = DSMEM_SLOPE_MIG_FAILED;
			mig->error = -ETIMEDOUT;
			dsmem_slope_mig_unlink(mig);
		}
		mutex_unlock(&s->mig_lock);
		if (mig)
			dsmem_slope_mig_expire(mig);
		mutex_unlock(&s->alloc_lock);
		if (!mig)
			break;
		dsmem_stat_inc(DSMEM_STAT_SLOPE_EXPIRED);
		pr_info_ratelimited("slope: node %u: migration %llu from node %u not received in %lld ms: %llu pages freed\n",
				    s->node->id, mig->id, mig->peer, ms,
				    mig->units << (mig->unit_shift - PAGE_SHIFT));
		wake_up_all(&s->page_wait);
		dsmem_slope_notify_mig(mig);
		dsmem_slope_mig_put(mig);
		cond_resched();
	}
	/* not mod_delayed_work: a kick queued meanwhile must keep its 0 */
	if (wait >= 0 && !READ_ONCE(s->node->dead))
		queue_delayed_work(dsmem_slope_wq, &s->expire_work,
				   msecs_to_jiffies(wait));
}

/*
 * The application stopped touching the object: from now on a touch is a
 * SIGBUS, not a lost write.  Faults in flight hold their page locked
 * until their PTE is in, so after the marks, a pass over the page locks,
 * then the unmap, no PTE of the object is left.
 */
static void dsmem_slope_mig_freeze(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;

	dsmem_slope_mark_extents(s, mig->ext, mig->nextents, DSMEM_SLOPE_GONE,
				 true);
	dsmem_slope_barrier(s, mig->ext, mig->nextents);
	dsmem_slope_unmap(s, mig->ext, mig->nextents);
}

/* The last epoch's set and our keys, in a HANDOVER. */
static int dsmem_slope_mig_handover(struct dsmem_slope_mig *mig, u64 *ndirty)
{
	unsigned long *dirty = dsmem_slope_track_switch(mig->track, ndirty);
	size_t len = dsmem_slope_handover_size(mig->nmrs, mig->units);
	u32 *rkeys;
	void *buf;
	int ret;

	buf = kvmalloc(len, GFP_KERNEL);
	rkeys = kcalloc(mig->nmrs, sizeof(*rkeys), GFP_KERNEL);
	if (!buf || !rkeys) {
		ret = -ENOMEM;
		goto out;
	}
	dsmem_slope_mig_keys(mig, rkeys);
	ret = dsmem_slope_handover_encode(buf, len, mig->units, mig->span,
					  mig->nmrs, rkeys, dirty);
	if (ret >= 0)
		ret = dsmem_slope_mig_call(mig, DSMEM_WIRE_SLOPE_MIG_HANDOVER,
					   buf, len, NULL, 0, NULL);
out:
	kfree(rkeys);
	kvfree(buf);
	return ret;
}

int dsmem_slope_ioc_mig_stop(struct dsmem_node *node, void *arg)
{
	struct dsmem_ioc_slope_mig *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	struct dsmem_slope_mig *mig;
	u64 ndirty = 0;
	int ret;

	if (a->flags)
		return -EINVAL;
	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_find(s, a->id);
	if (mig && !mig->incoming && mig->state == DSMEM_SLOPE_MIG_STOPPING &&
	    !mig->stop_taken) {
		kref_get(&mig->ref);
		mig->stop_taken = true;
	} else {
		ret = !mig ? -ENOENT : mig->incoming ? -EINVAL : -EBUSY;
		mig = NULL;
	}
	mutex_unlock(&s->mig_lock);
	if (!mig)
		return ret;

	mutex_lock(&mig->op_lock);
	/* the connection went while we waited: it failed the migration */
	if (READ_ONCE(mig->state) != DSMEM_SLOPE_MIG_STOPPING) {
		ret = mig->error ?: -ECONNRESET;
		goto out;
	}
	mig->t_stop = ktime_get();
	dsmem_slope_mig_freeze(mig);
	ret = dsmem_slope_mig_handover(mig, &ndirty);
	/*
	 * No answer (timeout, connection lost) leaves it open whether the
	 * destination took over: ask.  It did if it says so; otherwise it
	 * dropped what it had, or is gone, and the object is ours again.
	 */
	if (ret == -ETIMEDOUT || ret == -ECONNRESET || ret == -ENOTCONN) {
		if (dsmem_slope_mig_send_abort(mig) == -EALREADY)
			ret = 0;
	} else if (ret) {
		dsmem_slope_mig_send_abort(mig);
	}
	if (ret) {
		dsmem_slope_mig_fail_source(mig, ret, false);
		goto out;
	}
	mig->t_handover = ktime_get();
	mig->dirty_units = ndirty;
	dsmem_slope_track_stop(mig->track);
	mig->track = NULL;
	dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_HANDED_OVER, 0);
	mutex_lock(&s->alloc_lock);
	s->pages_owned -= min(s->pages_owned,
				 mig->units << (mig->unit_shift - PAGE_SHIFT));
	mutex_unlock(&s->alloc_lock);
	mutex_lock(&s->mig_lock);
	dsmem_slope_mig_fill(mig, a);
	mutex_unlock(&s->mig_lock);
out:
	complete_all(&mig->handover);
	mutex_unlock(&mig->op_lock);
	dsmem_slope_mig_put(mig);
	return ret;
}

/* Destination: the migration a peer's message is about. */
static struct dsmem_slope_mig *dsmem_slope_mig_incoming(struct dsmem_slope *s,
							struct dsmem_conn *conn,
							u64 wire_id)
{
	struct dsmem_slope_mig *mig;

	lockdep_assert_held(&s->mig_lock);
	list_for_each_entry(mig, &s->migs, link)
		if (mig->incoming && mig->conn == conn && mig->wire_id == wire_id)
			return mig;
	return NULL;
}

int dsmem_slope_on_mig_put(struct dsmem_conn *conn, void *priv,
			   const struct dsmem_wire_msg *m,
			   struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	size_t end = m->addr + m->len, cap, had;
	struct dsmem_slope_mig *mig;
	unsigned int held;
	u64 bytes;
	int ret = 0;

	if (end > DSMEM_SLOPE_STAGE_MAX)
		return -EMSGSIZE;
	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_incoming(s, conn, m->aux);
	if ((mig && dsmem_slope_mig_ended(mig)) ||
	    m->addr != (mig ? mig->staged : 0)) {
		ret = -EPROTO;
		goto out;
	}
	/*
	 * A peer gets a bounded share of us, counted over all its
	 * connections, and checked before anything is allocated for it.
	 */
	held = dsmem_slope_peer_held(s, conn->remote_node, &bytes);
	if (!mig && held >= READ_ONCE(slope_peer_migs)) {
		ret = dsmem_slope_refuse(s, conn->remote_node, -EBUSY,
					 "its migrations here are at slope_peer_migs");
		goto out;
	}
	had = mig ? mig->stage_cap : 0;
	cap = end > had ? min_t(size_t, max(end, 2 * had),
				DSMEM_SLOPE_STAGE_MAX) : had;
	if (bytes + cap - had > dsmem_slope_peer_bytes_max()) {
		ret = dsmem_slope_refuse(s, conn->remote_node, -EDQUOT,
					 "its migrations' data here would pass slope_peer_bytes");
		goto out;
	}
	if (!mig) {
		/* the first part of a BEGIN: the migration starts here */
		mig = dsmem_slope_mig_alloc(s, conn, true);
		if (!mig) {
			ret = -ENOMEM;
			goto out;
		}
		mig->wire_id = m->aux;
		mig->state = DSMEM_SLOPE_MIG_INCOMING;
		dsmem_slope_mig_link(mig);
	}
	if (cap > mig->stage_cap) {
		void *p = kvrealloc(mig->stage, mig->stage_cap, cap, GFP_KERNEL);

		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		mig->stage = p;
		mig->stage_cap = cap;
	}
	memcpy(mig->stage + m->addr, m->data, m->len);
	mig->staged = end;
out:
	mutex_unlock(&s->mig_lock);
	return ret;
}

/*
 * Destination: drop what arrived of a migration that ends early -- the
 * pages we placed, in the order we placed them, and nothing else.
 */
static void dsmem_slope_mig_discard(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	u64 left = mig->placed, j;
	u32 i;

	dsmem_slope_mig_unpin(mig);
	mutex_lock(&s->alloc_lock);
	for (i = 0; i < mig->nextents && left; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		for (j = 0; j < mig->ext[i].len >> PAGE_SHIFT && left; j++, left--)
			dsmem_slope_page_drop(s, idx + j);
	}
	mutex_unlock(&s->alloc_lock);
	mig->placed = 0;
	wake_up_all(&s->page_wait);
}

/*
 * Destination: room for the object at its addresses, none of them ours.
 * Each page goes in already marked WAIT, under the lock the fault path
 * reads entries with, so no fault can map it before its content is here;
 * and it is zero, so that even a source that sends nothing leaks nothing.
 */
static int dsmem_slope_mig_place(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	unsigned int order = mig->unit_shift - PAGE_SHIFT;
	u64 per = 1ULL << order, k = 0, j;
	u32 i;
	int ret = 0;

	mig->pages = kvcalloc(mig->units, sizeof(*mig->pages), GFP_KERNEL);
	if (!mig->pages)
		return -ENOMEM;
	mutex_lock(&s->alloc_lock);
	for (i = 0; i < mig->nextents && !ret; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		for (j = 0; j < mig->ext[i].len >> PAGE_SHIFT && !ret; j += per) {
			struct page *page;
			u64 p;

			page = alloc_pages(GFP_HIGHUSER | __GFP_ZERO |
					   __GFP_NOWARN |
					   (order ? __GFP_NORETRY : 0), order);
			if (!page) {
				ret = -ENOMEM;
				break;
			}
			if (order)
				split_page(page, order);
			mig->pages[k++] = page;
			for (p = 0; p < per; p++) {
				xa_lock(&s->pages);
				ret = __xa_insert(&s->pages, idx + j + p,
						  page + p, GFP_KERNEL);
				if (!ret)
					__xa_set_mark(&s->pages, idx + j + p,
						      DSMEM_SLOPE_WAIT);
				xa_unlock(&s->pages);
				if (ret) {
					/* the rest of the unit was not placed */
					for (; p < per; p++)
						put_page(page + p);
					ret = ret == -EBUSY ? -EEXIST : ret;
					break;
				}
				/* the migration's, until unpinned */
				get_page(page + p);
				mig->held++;
				mig->placed++;
			}
		}
	}
	mutex_unlock(&s->alloc_lock);
	return ret;
}

int dsmem_slope_on_mig_begin(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	struct dsmem_slope_begin_info b;
	struct dsmem_slope_mig *mig;
	u64 bytes, held;
	u32 *rkeys, i;
	void *buf;
	int ret;

	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_incoming(s, conn, m->aux);
	/*
	 * One BEGIN per migration: a second one (a peer's retry, or a lie)
	 * is refused and touches nothing -- the migration may be pulling
	 * into its pages, or be the application's already.
	 */
	if (mig && (mig->begun || mig->state != DSMEM_SLOPE_MIG_INCOMING)) {
		mutex_unlock(&s->mig_lock);
		return -EALREADY;
	}
	if (mig) {
		mig->begun = true;
		kref_get(&mig->ref);
	}
	mutex_unlock(&s->mig_lock);
	if (!mig)
		return -ENOENT;
	ret = -EPROTO;
	if (m->len != mig->staged)
		goto err_fail;
	ret = dsmem_slope_begin_decode(mig->stage, mig->staged, &b);
	if (ret)
		goto err_fail;
	/* no peer takes more than half of our memory in one object */
	if ((b.units << (b.unit_shift - PAGE_SHIFT)) > totalram_pages() / 2) {
		ret = dsmem_slope_refuse(s, mig->peer, -ENOMEM,
					 "the object is over half of RAM");
		goto err_fail;
	}
	/*
	 * nor more than its quota with everything its migrations hold here:
	 * checked and charged in one go, before any page is allocated
	 */
	bytes = b.units << b.unit_shift;
	mutex_lock(&s->mig_lock);
	dsmem_slope_peer_held(s, mig->peer, &held);
	if (held + bytes > dsmem_slope_peer_bytes_max())
		ret = dsmem_slope_refuse(s, mig->peer, -EDQUOT,
					 "its migrations here would pass slope_peer_bytes");
	else
		mig->charged = bytes;
	mutex_unlock(&s->mig_lock);
	if (ret)
		goto err_fail;
	mig->ext = kvmalloc_array(b.nextents, sizeof(*mig->ext), GFP_KERNEL);
	mig->first = kvmalloc_array(b.nextents, sizeof(u64), GFP_KERNEL);
	mig->pending = kvcalloc(BITS_TO_LONGS(b.units), sizeof(long),
				GFP_KERNEL);
	if (!mig->ext || !mig->first || !mig->pending) {
		ret = -ENOMEM;
		goto err_fail;
	}
	for (i = 0; i < b.nextents; i++)
		dsmem_slope_begin_extent(&b, i, &mig->ext[i]);
	mig->nextents = b.nextents;
	mig->unit_shift = b.unit_shift;
	mig->units = b.units;
	mig->cookie = b.cookie;
	dsmem_slope_extents_index(mig->ext, mig->nextents, mig->unit_shift,
				  mig->first);
	/* the extents are copied: the BEGIN's data goes */
	mutex_lock(&s->mig_lock);
	dsmem_slope_mig_unstage(mig);
	mutex_unlock(&s->mig_lock);

	ret = dsmem_slope_mig_place(mig);
	if (ret)
		goto err_fail;
	ret = dsmem_slope_mig_map_dma(mig);
	if (ret)
		goto err_fail;
	ret = dsmem_slope_mig_reg(mig, IB_ACCESS_LOCAL_WRITE |
				  IB_ACCESS_REMOTE_WRITE);
	if (ret)
		goto err_fail;
	buf = kmalloc(DSMEM_WIRE_MAX_DATA, GFP_KERNEL);
	rkeys = kcalloc(mig->nmrs, sizeof(*rkeys), GFP_KERNEL);
	if (!buf || !rkeys) {
		kfree(rkeys);
		kfree(buf);
		ret = -ENOMEM;
		goto err_fail;
	}
	dsmem_slope_mig_keys(mig, rkeys);
	ret = dsmem_slope_keys_encode(buf, DSMEM_WIRE_MAX_DATA, mig->span,
				      mig->nmrs, rkeys);
	kfree(rkeys);
	if (ret < 0) {
		kfree(buf);
		goto err_fail;
	}
	reply->opcode = DSMEM_WIRE_REPLY_SLOPE_KEYS;
	reply->len = ret;
	reply->data = buf;
	*data = buf;
	dsmem_slope_mig_put(mig);
	return 0;

err_fail:
	dsmem_slope_mig_discard(mig);
	mig->t_done = ktime_get();
	dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_FAILED, ret);
	dsmem_slope_mig_put(mig);
	return ret;
}

/*
 * The reply goes out before the first pull: on the send queue it would
 * otherwise wait behind the READs, and the no-owner window with it.
 * Returns DSMEM_MSG_NO_REPLY when it answered.
 */
int dsmem_slope_on_mig_handover(struct dsmem_conn *conn, void *priv,
				const struct dsmem_wire_msg *m,
				struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	struct dsmem_slope_handover_info h;
	struct dsmem_slope_mig *mig;
	u64 k, end;
	u32 i;
	int ret;

	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_incoming(s, conn, m->aux);
	if (mig && (mig->state != DSMEM_SLOPE_MIG_INCOMING || !mig->units ||
		    m->len != mig->staged))
		mig = NULL;
	if (mig)
		kref_get(&mig->ref);
	mutex_unlock(&s->mig_lock);
	if (!mig)
		return -EPROTO;
	ret = dsmem_slope_handover_decode(mig->stage, mig->staged, mig->units,
					  mig->unit_shift, &h);
	if (ret)
		goto out;
	mig->rkeys = kcalloc(h.keys.nkeys, sizeof(u32), GFP_KERNEL);
	if (!mig->rkeys) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < h.keys.nkeys; i++)
		mig->rkeys[i] = dsmem_slope_rkey(h.keys.rkeys, i);
	mig->nrkeys = h.keys.nkeys;
	mig->rspan = h.keys.span;
	/*
	 * The source wrote its last before it sent this: its keys die
	 * before any unit is the application's, which may free it.
	 */
	dsmem_slope_mig_dereg(mig);
	for (k = 0; k < mig->units; k++)
		if (dsmem_slope_handover_dirty(&h, k))
			__set_bit(k, mig->pending);
	mig->dirty_units = h.dirty_units;
	/* clean units are usable now, in runs */
	for (k = find_first_zero_bit(mig->pending, mig->units); k < mig->units;
	     k = find_next_zero_bit(mig->pending, mig->units, end)) {
		end = find_next_bit(mig->pending, mig->units, k);
		dsmem_slope_mig_mark(mig, k, end - k, true);
	}
	wake_up_all(&s->page_wait);
	mutex_lock(&s->mig_lock);
	/* h pointed into it: read to the end above */
	dsmem_slope_mig_unstage(mig);
	mig->pulled_units = 0;
	mig->t_handover = ktime_get();
	mig->state = DSMEM_SLOPE_MIG_HANDED_OVER;
	s->unreceived++;
	mutex_unlock(&s->mig_lock);
	mutex_lock(&s->alloc_lock);
	s->pages_owned += mig->units << (mig->unit_shift - PAGE_SHIFT);
	/* the object is listed here now, a run per extent, if it names one */
	for (i = 0; dsmem_slope_obj_addr_ok(mig->cookie) && i < mig->nextents;
	     i++)
		if (dsmem_slope_runs_add(s, mig->cookie,
					 dsmem_slope_idx(mig->ext[i].addr),
					 mig->ext[i].len >> PAGE_SHIFT))
			break;
	mutex_unlock(&s->alloc_lock);
	wake_up_all(&s->mig_wait);
	dsmem_slope_notify_mig(mig);
	dsmem_msg_send(conn, reply);
	kref_get(&mig->ref);
	if (!queue_work(dsmem_slope_wq, &mig->work))
		dsmem_slope_mig_put(mig);
	/* its time to be received runs from now */
	dsmem_slope_expire_kick(s);
	ret = DSMEM_MSG_NO_REPLY;
out:
	dsmem_slope_mig_put(mig);
	return ret;
}

int dsmem_slope_on_mig_abort(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	struct dsmem_slope_mig *mig;

	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_incoming(s, conn, m->aux);
	/* taken over already: the source must not take it back */
	if (mig && mig->t_handover) {
		mutex_unlock(&s->mig_lock);
		return -EALREADY;
	}
	if (mig && mig->state == DSMEM_SLOPE_MIG_INCOMING)
		kref_get(&mig->ref);
	else
		mig = NULL;
	mutex_unlock(&s->mig_lock);
	if (!mig)
		return 0;	/* nothing arrived, or it ended */
	dsmem_slope_mig_discard(mig);
	mig->t_done = ktime_get();
	dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_FAILED, -ECANCELED);
	dsmem_slope_mig_put(mig);
	return 0;
}

int dsmem_slope_on_mig_done(struct dsmem_conn *conn, void *priv,
			    const struct dsmem_wire_msg *m,
			    struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	struct dsmem_slope_mig *mig;

	mutex_lock(&s->mig_lock);
	mig = dsmem_slope_mig_find(s, m->aux);
	if (mig && !mig->incoming && mig->conn == conn && mig->stop_taken)
		kref_get(&mig->ref);
	else
		mig = NULL;
	mutex_unlock(&s->mig_lock);
	if (!mig)
		return -ENOENT;
	/*
	 * The destination may finish before our MIG_STOP has seen
	 * the handover's reply; that needs no receive work, so
	 * waiting for it here is safe.
	 */
	wait_for_completion(&mig->handover);
	if (READ_ONCE(mig->state) != DSMEM_SLOPE_MIG_HANDED_OVER) {
		dsmem_slope_mig_put(mig);
		return -ENOENT;
	}
	dsmem_slope_mig_free_source(mig);
	mig->pulled_units = m->addr;
	mig->failed_units = m->len;
	mig->t_done = ktime_get();
	dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_DONE, 0);
	dsmem_slope_mig_put(mig);
	return 0;
}

/*
 * A destination thread touched a unit that has not arrived: put it first
 * in line and sleep until it is there (or lost), as handle_userfault
 * does: without mmap_lock when the fault may be retried.
 */
vm_fault_t dsmem_slope_fault_wait(struct vm_fault *vmf, struct dsmem_slope *s,
				  pgoff_t idx)
{
	u64 a = dsmem_slope_addr(idx);
	struct dsmem_slope_mig *mig;
	struct file *fpin;

	mutex_lock(&s->mig_lock);
	list_for_each_entry(mig, &s->migs, link) {
		s64 k;

		if (!mig->incoming || mig->state != DSMEM_SLOPE_MIG_HANDED_OVER)
			continue;
		k = dsmem_slope_unit_of(mig->ext, mig->first, mig->nextents,
					mig->unit_shift, a);
		if (k < 0)
			continue;
		mig->fault_waits++;
		spin_lock(&mig->urgent_lock);
		if (mig->nurgent < ARRAY_SIZE(mig->urgent))
			mig->urgent[mig->nurgent++] = k;
		spin_unlock(&mig->urgent_lock);
		break;
	}
	mutex_unlock(&s->mig_lock);

	if ((vmf->flags & (FAULT_FLAG_ALLOW_RETRY | FAULT_FLAG_RETRY_NOWAIT)) ==
	    (FAULT_FLAG_ALLOW_RETRY | FAULT_FLAG_RETRY_NOWAIT))
		return VM_FAULT_RETRY;
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY)) {
		/*
		 * GUP without retry (ptrace, long-term pins): wait holding
		 * mmap_lock, which the pull does not need, then have the
		 * fault taken again
		 */
		wait_event_killable(s->page_wait,
				    !xa_get_mark(&s->pages, idx, DSMEM_SLOPE_WAIT));
		return VM_FAULT_NOPAGE;
	}
	/* the file keeps the node, and so s, alive once the VMA may go */
	fpin = get_file(vmf->vma->vm_file);
	mmap_read_unlock(vmf->vma->vm_mm);
	wait_event_killable(s->page_wait,
			    !xa_get_mark(&s->pages, idx, DSMEM_SLOPE_WAIT));
	fput(fpin);
	return VM_FAULT_RETRY;
}

/*
 * A connection went: every migration over it ends, and lets go of it.
 * Called from the connection's release, after its queue pair drained and
 * its receive work stopped, before its PD goes: so no completion and no
 * message handler runs for these migrations any more.
 */
void dsmem_slope_mig_conn_down(struct dsmem_slope *s, struct dsmem_conn *conn)
{
	struct dsmem_slope_mig *mig;

	for (;;) {
		bool found = false;

		mutex_lock(&s->mig_lock);
		list_for_each_entry(mig, &s->migs, link) {
			if (mig->conn != conn)
				continue;
			WRITE_ONCE(mig->abort, true);
			kref_get(&mig->ref);
			found = true;
			break;
		}
		mutex_unlock(&s->mig_lock);
		if (!found)
			return;
		wake_up_all(&mig->wr_wait);
		/* its sends fail now: the worker finishes */
		flush_work(&mig->work);
		/* and so do MIGRATE's set-up and MIG_STOP */
		mutex_lock(&mig->op_lock);
		if (mig->incoming) {
			if (mig->state == DSMEM_SLOPE_MIG_INCOMING) {
				dsmem_slope_mig_discard(mig);
				mig->t_done = ktime_get();
				dsmem_slope_mig_set_state(mig,
							  DSMEM_SLOPE_MIG_FAILED,
							  -ECONNRESET);
			}
		} else if (mig->state == DSMEM_SLOPE_MIG_HANDED_OVER) {
			/* the destination owns it; what it lacks is lost */
			dsmem_slope_mig_free_source(mig);
			mig->t_done = ktime_get();
			dsmem_slope_mig_set_state(mig, DSMEM_SLOPE_MIG_FAILED,
						  -ECONNRESET);
		} else if (!dsmem_slope_mig_ended(mig)) {
			dsmem_slope_mig_fail_source(mig, -ECONNRESET, false);
		}
		dsmem_slope_mig_unpin(mig);
		mutex_lock(&s->mig_lock);
		mig->conn = NULL;
		mutex_unlock(&s->mig_lock);
		mutex_unlock(&mig->op_lock);
		dsmem_conn_put(conn);
		dsmem_slope_mig_put(mig);
	}
}

/* The node's last reference: every connection is gone already. */
void dsmem_slope_mig_fini(struct dsmem_slope *s)
{
	struct dsmem_slope_mig *mig, *tmp;

	list_for_each_entry_safe(mig, tmp, &s->migs, link) {
		list_del(&mig->link);
		WARN_ON(mig->nmrs || mig->mapped || mig->held);
		if (mig->track) {
			dsmem_slope_track_stop(mig->track);
			mig->track = NULL;
		}
		dsmem_slope_mig_put(mig);
	}
}
