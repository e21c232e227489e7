// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: the source's side of a migration.  Its set-up (the pages,
 * the BEGIN and the destination's keys), the prefill rounds while the
 * application runs, the freeze and the HANDOVER at MIG_STOP, giving up
 * before the handover with the object left where it was, and letting the
 * pages go at the destination's DONE.
 */
#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "dsmem_slope_mig.h"

/* Units' first pages, in order of the extents; the pages are present. */
int dsmem_slope_mig_pages(struct dsmem_slope_mig *mig)
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
int dsmem_slope_mig_send_abort(struct dsmem_slope_mig *mig)
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
void dsmem_slope_mig_fail_source(struct dsmem_slope_mig *mig, int err,
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
void dsmem_slope_mig_prefill(struct dsmem_slope_mig *mig)
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

/* Source, after the handover: the destination has the object. */
void dsmem_slope_mig_free_source(struct dsmem_slope_mig *mig)
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
				     dsmem_msg_timeout_ms() +
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

int dsmem_slope_mig_begin(struct dsmem_slope_mig *mig)
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
int dsmem_slope_mig_check_huge(struct dsmem_slope_mig *mig)
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

/* Setting up failed: nothing of it stays, and nobody saw its id. */
void dsmem_slope_mig_setup_failed(struct dsmem_slope_mig *mig, int err,
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

/*
 * The application stopped touching the object: from now on a touch is a
 * SIGBUS, not a lost write.  Faults in flight hold their page locked
 * until their PTE is in, so after the marks, a pass over the page locks,
 * then the unmap, no PTE of the object is left.
 */
void dsmem_slope_mig_freeze(struct dsmem_slope_mig *mig)
{
	struct dsmem_slope *s = mig->s;

	dsmem_slope_mark_extents(s, mig->ext, mig->nextents, DSMEM_SLOPE_GONE,
				 true);
	dsmem_slope_barrier(s, mig->ext, mig->nextents);
	dsmem_slope_unmap(s, mig->ext, mig->nextents);
}

/*
 * The units the destination touches first (the object's root, its
 * header), written now if dirty rather than pulled after the handover:
 * its first touch then finds them in place instead of waiting a round
 * trip for each (the seed's proactive transfer).  Written before the
 * HANDOVER goes, so the destination never maps a unit still in flight.
 * One that cannot be written stays in the set: pulled as before.
 */
static void dsmem_slope_mig_push(struct dsmem_slope_mig *mig,
				 unsigned long *dirty, u64 *ndirty)
{
	bool posted[ARRAY_SIZE(mig->push)] = {};
	int err = 0, ret = 0;
	u32 i;

	for (i = 0; i < mig->npush; i++) {
		if (!test_bit(mig->push[i], dirty))
			continue;
		ret = dsmem_slope_mig_post(mig, mig->push[i], 1, &err);
		if (ret)
			break;
		posted[i] = true;
	}
	if (dsmem_slope_mig_drain(mig) || err || ret)
		return;
	for (i = 0; i < mig->npush; i++) {
		if (!posted[i])
			continue;
		clear_bit(mig->push[i], dirty);
		(*ndirty)--;
		dsmem_stat_inc(mig->s->node->net, DSMEM_STAT_SLOPE_ROOT_PUSHED);
	}
}

/* The last epoch's set and our keys, in a HANDOVER. */
int dsmem_slope_mig_handover(struct dsmem_slope_mig *mig, u64 *ndirty)
{
	unsigned long *dirty = dsmem_slope_track_switch(mig->track, ndirty);
	size_t len = dsmem_slope_handover_size(mig->nmrs, mig->units);
	u32 *rkeys;
	void *buf;
	int ret;

	dsmem_slope_mig_push(mig, dirty, ndirty);
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
