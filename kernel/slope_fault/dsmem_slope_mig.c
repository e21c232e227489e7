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
 *
 * This file holds a migration's life: allocation and references, the
 * node's list of migrations (with a bounded tail of ended ones), changes
 * of state and their wake-ups, the expiry of migrations handed over here
 * that no process receives, and the end of every migration over a
 * connection that went.  Beside it: the DMA mappings and memory regions
 * (_dma.c), the one-sided work (_wr.c), the source's and the
 * destination's steps (_src.c, _dst.c) and the ioctls (_ioctl.c).
 */
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "dsmem_slope_mig.h"

static unsigned int slope_unreceived_ms = DSMEM_SLOPE_UNRECEIVED_MS;
module_param(slope_unreceived_ms, uint, 0644);
MODULE_PARM_DESC(slope_unreceived_ms,
		 "a Slope migration handed over here that no process receives is dropped, its pages freed, this long after the handover (ms, >= 100)");

static unsigned int slope_incoming_ms = DSMEM_SLOPE_INCOMING_MS;
module_param(slope_incoming_ms, uint, 0644);
MODULE_PARM_DESC(slope_incoming_ms,
		 "a peer whose Slope migration here is not handed over this long after it began has its connection closed, which ends the migration and frees what it holds (ms, >= 100)");

static void dsmem_slope_mig_release(struct kref *ref)
{
	struct dsmem_slope_mig *mig = container_of(ref, struct dsmem_slope_mig,
						   ref);

	WARN_ON(mig->nmrs || mig->mapped || mig->held || mig->track);
	if (mig->conn)
		dsmem_conn_put(mig->conn);
	kvfree(mig->kept);
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

void dsmem_slope_mig_put(struct dsmem_slope_mig *mig)
{
	kref_put(&mig->ref, dsmem_slope_mig_release);
}

struct dsmem_slope_mig *dsmem_slope_mig_alloc(struct dsmem_slope *s,
					      struct dsmem_conn *conn,
					      bool incoming)
{
	struct dsmem_slope_mig *mig;
	unsigned int i;

	mig = kzalloc(sizeof(*mig), GFP_KERNEL_ACCOUNT);
	if (!mig)
		return NULL;
	mig->wrs = kcalloc(DSMEM_SLOPE_WRS, sizeof(*mig->wrs),
			   GFP_KERNEL_ACCOUNT);
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

bool dsmem_slope_mig_ended(const struct dsmem_slope_mig *mig)
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
bool dsmem_slope_mig_holds(const struct dsmem_slope_mig *mig)
{
	return mig->incoming &&
	       (!dsmem_slope_mig_ended(mig) || dsmem_slope_mig_unreceived(mig));
}

/* Under mig_lock: the staged data is consumed, or no longer wanted. */
void dsmem_slope_mig_unstage(struct dsmem_slope_mig *mig)
{
	lockdep_assert_held(&mig->s->mig_lock);
	kvfree(mig->stage);
	mig->stage = NULL;
	mig->staged = 0;
	mig->stage_cap = 0;
}

/* Under mig_lock: forget it; waiters on it see it gone. */
void dsmem_slope_mig_unlink(struct dsmem_slope_mig *mig)
{
	lockdep_assert_held(&mig->s->mig_lock);
	if (dsmem_slope_mig_unreceived(mig))
		mig->s->unreceived--;
	list_del_init(&mig->link);
	wake_up_all(&mig->s->mig_wait);
	dsmem_slope_mig_put(mig);
}

/* Under mig_lock: publish, keeping a bounded number of ended ones. */
void dsmem_slope_mig_link(struct dsmem_slope_mig *mig)
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

void dsmem_slope_mig_set_state(struct dsmem_slope_mig *mig, u32 state,
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

/*
 * Look for unreceived migrations past their time now; the work arms
 * itself again for the next one.
 */
void dsmem_slope_expire_kick(struct dsmem_slope *s)
{
	if (!READ_ONCE(s->node->dead))
		mod_delayed_work(dsmem_slope_wq, &s->expire_work, 0);
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

/*
 * Under mig_lock: keep e for the end of mig's pull; -ENOMEM.  The array
 * doubles as it fills, so that a FREE of many extents copies it a
 * logarithmic number of times, not once per extent.
 */
static int dsmem_slope_mig_keep(struct dsmem_slope_mig *mig,
				const struct dsmem_slope_extent *e)
{
	struct dsmem_slope_extent *k;
	u32 cap;

	if (mig->nkept == mig->kept_cap) {
		cap = max(2 * mig->kept_cap, 16U);
		k = kvrealloc(mig->kept, mig->kept_cap * sizeof(*k),
			      (size_t)cap * sizeof(*k), GFP_KERNEL);
		if (!k)
			return -ENOMEM;
		mig->kept = k;
		mig->kept_cap = cap;
	}
	mig->kept[mig->nkept++] = *e;
	return 0;
}

/*
 * Under alloc_lock: a FREE of a received object (or part of it) whose
 * pull is still under way.  The pull's last marks land on its pages'
 * indexes -- arrived, or lost -- so its addresses are given back only
 * once those are made: were they handed out again meanwhile, to an
 * object migrating in, the pull would mark that object's pages.  Each
 * extent that overlaps such a pull moves to the migration, and is zeroed
 * in e so that the caller gives back the rest at once.  (Kept extents
 * that cannot be stored are given back at once, as before.)
 */
void dsmem_slope_mig_defer_free(struct dsmem_slope *s,
				struct dsmem_slope_extent *e, u32 n)
{
	struct dsmem_slope_mig *it;
	u32 i, j;

	lockdep_assert_held(&s->alloc_lock);
	mutex_lock(&s->mig_lock);
	list_for_each_entry(it, &s->migs, link) {
		if (!it->incoming || !it->t_handover || it->pull_over ||
		    !it->nextents)
			continue;
		/* both sorted: one merge finds every overlap */
		for (i = 0, j = 0; i < n && j < it->nextents;) {
			if (!e[i].len || e[i].addr + e[i].len <= it->ext[j].addr) {
				i++;
			} else if (it->ext[j].addr + it->ext[j].len <= e[i].addr) {
				j++;
			} else {
				if (!dsmem_slope_mig_keep(it, &e[i]))
					e[i].len = 0;
				i++;
			}
		}
	}
	mutex_unlock(&s->mig_lock);
}

/*
 * Destination: the pull made its last marks.  What the application freed
 * of the object meanwhile goes back now (dsmem_slope_mig_defer_free).
 */
void dsmem_slope_mig_pull_over(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;
	struct dsmem_slope_outbox *o = NULL;
	struct dsmem_slope_extent *kept;
	u32 n;

	mutex_lock(&s->alloc_lock);
	mutex_lock(&s->mig_lock);
	mig->pull_over = true;
	kept = mig->kept;
	n = mig->nkept;
	mig->kept = NULL;
	mig->nkept = 0;
	mig->kept_cap = 0;
	mutex_unlock(&s->mig_lock);
	if (n)
		o = dsmem_slope_lease_release(s, kept, n);
	mutex_unlock(&s->alloc_lock);
	dsmem_slope_outbox_send(s, o);
	kvfree(kept);
}

struct dsmem_slope_mig *dsmem_slope_mig_find(struct dsmem_slope *s,
					     u64 id)
{
	struct dsmem_slope_mig *mig;

	lockdep_assert_held(&s->mig_lock);
	list_for_each_entry(mig, &s->migs, link)
		if (mig->id == id)
			return mig;
	return NULL;
}

/*
 * Whether ms have passed since @since; if not, *wait (-1: nothing due)
 * is lowered to what is left.
 */
static bool dsmem_slope_due(ktime_t since, s64 ms, ktime_t now, s64 *wait)
{
	s64 left = ms - ktime_ms_delta(now, since);

	if (left <= 0)
		return true;
	if (*wait < 0 || left < *wait)
		*wait = left;
	return false;
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
		if (!dsmem_slope_mig_unreceived(mig) ||
		    !dsmem_slope_due(mig->t_handover, ms, now, wait))
			continue;
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
static struct dsmem_slope_outbox *
dsmem_slope_mig_expire(struct dsmem_slope_mig *mig)
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
	return dsmem_slope_lease_release(s, mig->ext, mig->nextents);
}

/*
 * A migration a peer began here and has not handed over within
 * slope_incoming_ms: its connection, counted, marked so that it is
 * closed once; NULL when there is none (*wait then lowered to when the
 * next one is due).  Closing is the one way to end it: the connection's
 * handlers alone touch an unfinished incoming migration, and its release
 * ends every migration over it (dsmem_slope_mig_conn_down).
 */
static struct dsmem_conn *dsmem_slope_mig_stale_conn(struct dsmem_slope *s,
						     s64 ms, s64 *wait)
{
	struct dsmem_slope_mig *mig;
	ktime_t now = ktime_get();

	lockdep_assert_held(&s->mig_lock);
	list_for_each_entry(mig, &s->migs, link) {
		if (!mig->incoming || mig->state != DSMEM_SLOPE_MIG_INCOMING ||
		    mig->t_handover || !mig->conn || mig->cut ||
		    !dsmem_slope_due(mig->t_start, ms, now, wait))
			continue;
		mig->cut = true;
		kref_get(&mig->conn->ref);
		return mig->conn;
	}
	return NULL;
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
	struct dsmem_slope_outbox *o;
	struct dsmem_slope_mig *mig;
	s64 wait;

	for (;;) {
		o = NULL;
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
			o = dsmem_slope_mig_expire(mig);
		mutex_unlock(&s->alloc_lock);
		if (!mig)
			break;
		dsmem_slope_outbox_send(s, o);
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_EXPIRED);
		pr_info_ratelimited("slope: node %u: migration %llu from node %u not received in %lld ms: %llu pages freed\n",
				    s->node->id, mig->id, mig->peer, ms,
				    mig->units << (mig->unit_shift - PAGE_SHIFT));
		wake_up_all(&s->page_wait);
		dsmem_slope_notify_mig(mig);
		dsmem_slope_mig_put(mig);
		cond_resched();
	}
	for (;;) {
		s64 in_ms = max_t(u32, READ_ONCE(slope_incoming_ms),
				  DSMEM_SLOPE_UNRECEIVED_MS_MIN);
		struct dsmem_conn *conn;

		mutex_lock(&s->mig_lock);
		conn = dsmem_slope_mig_stale_conn(s, in_ms, &wait);
		mutex_unlock(&s->mig_lock);
		if (!conn)
			break;
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_INCOMING_CUT);
		pr_notice_ratelimited("slope: node %u: node %u began a migration here and did not hand it over in %lld ms, closing the connection\n",
				      s->node->id, conn->remote_node, in_ms);
		dsmem_conn_close(conn, -ETIMEDOUT);
		dsmem_conn_put(conn);
	}
	/* not mod_delayed_work: a kick queued meanwhile must keep its 0 */
	if (wait >= 0 && !READ_ONCE(s->node->dead))
		queue_delayed_work(dsmem_slope_wq, &s->expire_work,
				   msecs_to_jiffies(wait));
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
