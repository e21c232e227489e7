// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: the destination's side of a migration.  A peer's PUTs,
 * BEGIN, HANDOVER and ABORT, held to the share of this node a peer's
 * migrations may take (slope_peer_migs, slope_peer_bytes); the object's
 * pages, placed marked WAIT until their content is here; the pull of the
 * units left dirty at the handover; and a fault on such a unit, which
 * puts it first in line.
 *
 * What a peer's migration takes here -- its staged data, its pages and
 * what keeps track of them -- is charged to the node's memory cgroup
 * (struct dsmem_node.memcg), which the message dispatch makes active
 * around every handler (dsmem_msg_handle).  A charge over the cgroup's
 * limit fails the migration; it never calls the OOM killer into the
 * cgroup for a peer.
 */
#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "dsmem_slope_mig.h"

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

static unsigned long slope_node_bytes;
module_param(slope_node_bytes, ulong, 0644);
MODULE_PARM_DESC(slope_node_bytes,
		 "bytes every peer's incoming Slope migrations together may hold here: pages and staged data (0: half of RAM)");

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

/* A byte limit's value: as set, or (0) this share of RAM. */
static u64 dsmem_slope_bytes_max(u64 set, unsigned int ram_div)
{
	return set ?: ((u64)totalram_pages() << PAGE_SHIFT) / ram_div;
}

static u64 dsmem_slope_peer_bytes_max(void)
{
	return dsmem_slope_bytes_max(READ_ONCE(slope_peer_bytes),
				     DSMEM_SLOPE_PEER_RAM_DIV);
}

/* Under mig_lock: what every peer's migrations hold here, together. */
static u64 dsmem_slope_node_held(struct dsmem_slope *s)
{
	struct dsmem_slope_mig *it;
	u64 bytes = 0;

	lockdep_assert_held(&s->mig_lock);
	list_for_each_entry(it, &s->migs, link)
		if (dsmem_slope_mig_holds(it))
			bytes += it->charged + it->stage_cap;
	return bytes;
}

/*
 * Under mig_lock: whether more bytes fit beside what the node's incoming
 * migrations hold.  Each peer is bounded on its own (slope_peer_bytes),
 * and all of them together too, so that many peers, or one under many
 * ids, cannot together take what one may not.
 */
static bool dsmem_slope_node_fits(struct dsmem_slope *s, u64 more)
{
	return dsmem_slope_node_held(s) + more <=
	       dsmem_slope_bytes_max(READ_ONCE(slope_node_bytes),
				     DSMEM_SLOPE_NODE_RAM_DIV);
}

/* A peer's migration refused before anything was allocated for it. */
static int dsmem_slope_refuse(struct dsmem_slope *s, u32 peer, int err,
			      const char *why)
{
	dsmem_stat_inc(s->node->net, err == -EBUSY ?
		       DSMEM_STAT_SLOPE_QUOTA_MIGS : DSMEM_STAT_SLOPE_QUOTA_BYTES);
	pr_info_ratelimited("slope: node %u: migration from node %u refused: %s\n",
			    s->node->id, peer, why);
	return err;
}

/* Destination: pull the units left dirty at the handover. */
void dsmem_slope_mig_pull(struct dsmem_slope_mig *mig)
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
	/* every mark made: what was freed meanwhile may go back */
	dsmem_slope_mig_pull_over(mig);

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
	if (!dsmem_slope_node_fits(s, cap - had)) {
		ret = dsmem_slope_refuse(s, conn->remote_node, -EDQUOT,
					 "the node's incoming migrations would pass slope_node_bytes");
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
		/* its time to be handed over runs from now */
		dsmem_slope_expire_kick(s);
	}
	if (cap > mig->stage_cap) {
		void *p = kvrealloc(mig->stage, mig->stage_cap, cap,
				    GFP_KERNEL_ACCOUNT);

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
void dsmem_slope_mig_discard(struct dsmem_slope_mig *mig)
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

	mig->pages = kvcalloc(mig->units, sizeof(*mig->pages),
			      GFP_KERNEL_ACCOUNT);
	if (!mig->pages)
		return -ENOMEM;
	mutex_lock(&s->alloc_lock);
	/*
	 * An object lives where its source allocated it: in no lease of our
	 * share that is not given out, and in a lease we hold only at
	 * addresses allocated there (one of ours, coming back).  Anywhere
	 * else our allocator would hand its addresses out again.
	 */
	if (!dsmem_slope_extents_given_out(s, mig->ext, mig->nextents) ||
	    !dsmem_slope_extents_in_use(s, mig->ext, mig->nextents)) {
		mutex_unlock(&s->alloc_lock);
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_BEGIN_DENIED);
		pr_notice_ratelimited("slope: node %u: migration from node %u refused: its object lies at addresses this node has not given out\n",
				      s->node->id, mig->peer);
		return -EACCES;
	}
	for (i = 0; i < mig->nextents && !ret; i++) {
		pgoff_t idx = dsmem_slope_idx(mig->ext[i].addr);

		for (j = 0; j < mig->ext[i].len >> PAGE_SHIFT && !ret; j += per) {
			struct page *page;
			u64 p;

			page = alloc_pages(GFP_HIGHUSER | __GFP_ZERO |
					   __GFP_ACCOUNT | __GFP_NOWARN |
					   (order ? __GFP_NORETRY :
						    __GFP_RETRY_MAYFAIL),
					   order);
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
	else if (!dsmem_slope_node_fits(s, bytes))
		ret = dsmem_slope_refuse(s, mig->peer, -EDQUOT,
					 "the node's incoming migrations would pass slope_node_bytes");
	else
		mig->charged = bytes;
	mutex_unlock(&s->mig_lock);
	if (ret)
		goto err_fail;
	mig->ext = kvmalloc_array(b.nextents, sizeof(*mig->ext),
				  GFP_KERNEL_ACCOUNT);
	mig->first = kvmalloc_array(b.nextents, sizeof(u64),
				    GFP_KERNEL_ACCOUNT);
	mig->pending = kvcalloc(BITS_TO_LONGS(b.units), sizeof(long),
				GFP_KERNEL_ACCOUNT);
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
	if (ret == -ENOMEM) {
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_BEGIN_NOMEM);
		pr_info_ratelimited("slope: node %u: migration from node %u refused: no memory for its pages (the node's memory cgroup is at its limit, or the host is short)\n",
				    s->node->id, mig->peer);
	}
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
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_FAULT_WAITS);
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
