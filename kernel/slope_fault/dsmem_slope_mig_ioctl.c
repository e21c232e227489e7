// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: the migration ioctls of /dev/dsmem.  SLOPE_MIGRATE starts
 * one from this node, SLOPE_MIG_GET reports one (waits for its next state,
 * releases it once ended), SLOPE_RECV takes one handed over here, and
 * SLOPE_MIG_STOP hands one over once the application stopped.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "dsmem_slope_mig.h"

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
	if (a->root) {
		s64 r = dsmem_slope_unit_of(e, mig->first, a->nr, shift, a->root);
		s64 c = dsmem_slope_unit_of(e, mig->first, a->nr, shift,
					    a->cookie);

		if (r < 0) {
			dsmem_slope_mig_put(mig);
			return -EINVAL;
		}
		mig->push[mig->npush++] = r;
		if (c >= 0 && c != r)
			mig->push[mig->npush++] = c;
	}

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
