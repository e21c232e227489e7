// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: a migration's one-sided work.  Requests come from a fixed
 * pool and go out on the connection's credits; their completions
 * (softirq) only hand them back, and the migration's worker reaps them,
 * on the destination marking the units that arrived usable, or lost.
 * The worker runs the source's prefill or the destination's pull.
 */
#include <linux/bitmap.h>
#include <linux/llist.h>

#include "dsmem_slope_mig.h"

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
void dsmem_slope_mig_mark(struct dsmem_slope_mig *mig, u64 unit, u64 n,
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
void dsmem_slope_mig_arrived(struct dsmem_slope_mig *mig, u64 unit,
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
int dsmem_slope_mig_reap(struct dsmem_slope_mig *mig)
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
int dsmem_slope_mig_drain(struct dsmem_slope_mig *mig)
{
	wait_event(mig->wr_wait, !atomic_read(&mig->inflight));
	/* the last completion has left the lock: see dsmem_slope_wr_done */
	spin_lock_irq(&mig->wr_wait.lock);
	spin_unlock_irq(&mig->wr_wait.lock);
	return dsmem_slope_mig_reap(mig);
}

/* A request that was not posted: nothing of it will complete. */
static void dsmem_slope_wr_unpost(struct dsmem_conn *conn,
				  struct ib_send_wr *w)
{
	struct dsmem_slope_wr *wr = container_of(w->wr_cqe,
						 struct dsmem_slope_wr, cqe);

	atomic_dec(&wr->mig->inflight);
	llist_add(&wr->node, &wr->mig->wr_free);
}

/*
 * Move n consecutive units from k on: WRITE ours to theirs (source) or
 * READ theirs into ours (destination).  They lie in one of the peer's
 * regions and n is at most the connection's SGE limit.
 */
int dsmem_slope_mig_post(struct dsmem_slope_mig *mig, u64 k, u32 n,
			 int *err)
{
	struct dsmem_conn *conn = mig->conn;
	u64 unit = dsmem_slope_unit_bytes(mig), rper = mig->rspan / unit;
	struct ib_sge sge[DSMEM_SLOPE_SGE_MAX];
	struct ib_rdma_wr w = {};
	struct dsmem_slope_wr *wr;
	u32 j;
	int ret;

	ret = dsmem_conn_wait_credit(conn, &conn->sq_free, NULL);
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
			       NULL, dsmem_slope_wr_unpost);
}

/* The longest run of set bits from k that one request can carry. */
u32 dsmem_slope_run(struct dsmem_slope_mig *mig,
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

void dsmem_slope_mig_work(struct work_struct *work)
{
	struct dsmem_slope_mig *mig = container_of(work, struct dsmem_slope_mig,
						   work);

	if (mig->incoming)
		dsmem_slope_mig_pull(mig);
	else
		dsmem_slope_mig_prefill(mig);
	dsmem_slope_mig_put(mig);	/* the reference queue_work took */
}
