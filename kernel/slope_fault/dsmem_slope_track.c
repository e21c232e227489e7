// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: dirty tracking by epoch, in the kernel.
 *
 * An epoch starts with the tracked pages write-protected in every process
 * that maps them (wp_shared_mapping_range over the node's mapping; no VMA
 * is split and nothing reaches userspace).  The first write to a page in
 * the epoch faults into .page_mkwrite, which sets the unit's bit.  The
 * harvest mode takes no faults at all: the CPU's dirty bits are read and
 * cleaned when the epoch ends (clean_record_shared_mapping_range), which
 * is cheaper when most pages get written anyway.
 */
#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "dsmem_slope.h"

static void dsmem_slope_track_marks(struct dsmem_slope_track *t, bool set)
{
	struct dsmem_slope *s = t->s;
	u32 i;

	for (i = 0; i < t->nextents; i++) {
		pgoff_t first = dsmem_slope_idx(t->ext[i].addr);
		pgoff_t last = first + (t->ext[i].len >> PAGE_SHIFT) - 1;
		XA_STATE(xas, &s->pages, first);
		void *entry;

		xas_lock(&xas);
		xas_for_each(&xas, entry, last) {
			if (set)
				xas_set_mark(&xas, DSMEM_SLOPE_TRACKED);
			else
				xas_clear_mark(&xas, DSMEM_SLOPE_TRACKED);
			if (need_resched()) {
				xas_pause(&xas);
				xas_unlock(&xas);
				cond_resched();
				xas_lock(&xas);
			}
		}
		xas_unlock(&xas);
	}
}

/* Start of an epoch: every tracked page read-only again. */
static void dsmem_slope_track_protect(struct dsmem_slope_track *t)
{
	struct address_space *mapping = t->s->inode->i_mapping;
	u32 i;

	for (i = 0; i < t->nextents; i++)
		wp_shared_mapping_range(mapping, dsmem_slope_idx(t->ext[i].addr),
					t->ext[i].len >> PAGE_SHIFT);
}

/* Harvest: the pages the CPU wrote since the last look, into dirty. */
static void dsmem_slope_track_harvest(struct dsmem_slope_track *t,
				      unsigned long *dirty)
{
	struct address_space *mapping = t->s->inode->i_mapping;
	unsigned int per_unit = t->unit_shift - PAGE_SHIFT;
	unsigned long bit;
	u32 i;

	for (i = 0; i < t->nextents; i++) {
		pgoff_t first = dsmem_slope_idx(t->ext[i].addr);
		pgoff_t nr = t->ext[i].len >> PAGE_SHIFT;
		pgoff_t start = 0, end = 0;

		bitmap_zero(t->harvested, nr);
		clean_record_shared_mapping_range(mapping, first, nr, first,
						  t->harvested, &start, &end);
		if (!dirty)
			continue;
		for_each_set_bit(bit, t->harvested, nr)
			__set_bit(t->first[i] + (bit >> per_unit), dirty);
	}
}

struct dsmem_slope_track *dsmem_slope_track_new(struct dsmem_slope *s,
						const struct dsmem_slope_extent *e,
						u32 n, unsigned int unit_shift,
						bool harvest)
{
	struct dsmem_slope_track *t;
	u64 longest = 0, units;
	u32 i;
	int ret;

	ret = dsmem_slope_extents_check(e, n, unit_shift,
					DSMEM_SLOPE_MIG_UNITS_MAX, &units);
	if (ret)
		return ERR_PTR(ret);
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return ERR_PTR(-ENOMEM);
	t->s = s;
	t->harvest = harvest;
	t->unit_shift = unit_shift;
	t->nextents = n;
	t->units = units;
	spin_lock_init(&t->lock);
	/* the caller's, or the node's for a peer's migration */
	t->ext = kvmalloc_array(n, sizeof(*e), GFP_KERNEL_ACCOUNT);
	t->first = kvmalloc_array(n, sizeof(u64), GFP_KERNEL_ACCOUNT);
	t->dirty[0] = kvcalloc(BITS_TO_LONGS(units), sizeof(long),
			       GFP_KERNEL_ACCOUNT);
	t->dirty[1] = kvcalloc(BITS_TO_LONGS(units), sizeof(long),
			       GFP_KERNEL_ACCOUNT);
	for (i = 0; i < n; i++)
		longest = max(longest, e[i].len >> PAGE_SHIFT);
	if (harvest)
		t->harvested = kvcalloc(BITS_TO_LONGS(longest), sizeof(long),
					GFP_KERNEL_ACCOUNT);
	if (!t->ext || !t->first || !t->dirty[0] || !t->dirty[1] ||
	    (harvest && !t->harvested)) {
		dsmem_slope_track_free(t);
		return ERR_PTR(-ENOMEM);
	}
	memcpy(t->ext, e, n * sizeof(*e));
	dsmem_slope_extents_index(e, n, unit_shift, t->first);

	/* listed before marked: a marked page always finds its tracker */
	spin_lock(&s->track_lock);
	t->id = ++s->next_track;
	list_add_rcu(&t->link, &s->trackers);
	spin_unlock(&s->track_lock);
	dsmem_slope_track_marks(t, true);
	/*
	 * The first epoch starts now.  A first write that began before the
	 * marks may still be making its PTE writable, unrecorded: the same
	 * wait and second protection as at every switch.
	 */
	if (harvest) {
		dsmem_slope_track_harvest(t, NULL);
	} else {
		dsmem_slope_track_protect(t);
		dsmem_slope_barrier(s, t->ext, t->nextents);
		dsmem_slope_track_protect(t);
	}
	return t;
}

/* Stop tracking and free; t must be off the list or never on it. */
void dsmem_slope_track_free(struct dsmem_slope_track *t)
{
	if (t->ext && t->first)
		dsmem_slope_track_marks(t, false);
	kvfree(t->harvested);
	kvfree(t->dirty[1]);
	kvfree(t->dirty[0]);
	kvfree(t->first);
	kvfree(t->ext);
	kfree(t);
}

static void dsmem_slope_track_unlink(struct dsmem_slope_track *t)
{
	struct dsmem_slope *s = t->s;

	spin_lock(&s->track_lock);
	list_del_rcu(&t->link);
	spin_unlock(&s->track_lock);
	/* .page_mkwrite may be looking at it */
	synchronize_rcu();
}

void dsmem_slope_track_stop(struct dsmem_slope_track *t)
{
	dsmem_slope_track_unlink(t);
	dsmem_slope_track_free(t);
}

/* .page_mkwrite, under the page lock: record the write in this epoch. */
void dsmem_slope_track_mark(struct dsmem_slope *s, pgoff_t idx)
{
	u64 a = dsmem_slope_addr(idx);
	struct dsmem_slope_track *t;

	rcu_read_lock();
	list_for_each_entry_rcu(t, &s->trackers, link) {
		s64 k = dsmem_slope_unit_of(t->ext, t->first, t->nextents,
					    t->unit_shift, a);

		if (k < 0)
			continue;
		spin_lock(&t->lock);
		__set_bit(k, t->dirty[t->cur]);
		spin_unlock(&t->lock);
		break;
	}
	rcu_read_unlock();
}

/*
 * End the epoch and start the next; returns the units written in the one
 * that ended (valid until the next switch), their number in *ndirty.
 *
 * A first write that marked the old epoch holds its page locked until
 * its PTE is writable, which may be after the write-protection below: it
 * would then write on, unrecorded.  Locking every page of the old set
 * waits those out, and protecting a second time takes their write
 * permission back.
 */
unsigned long *dsmem_slope_track_switch(struct dsmem_slope_track *t,
					u64 *ndirty)
{
	struct dsmem_slope *s = t->s;
	unsigned int per_unit = 1U << (t->unit_shift - PAGE_SHIFT);
	unsigned int old = t->cur, next = old ^ 1, j;
	unsigned long k;
	u32 i;

	bitmap_zero(t->dirty[next], t->units);
	spin_lock(&t->lock);
	t->cur = next;
	spin_unlock(&t->lock);

	if (t->harvest) {
		dsmem_slope_track_harvest(t, t->dirty[old]);
		*ndirty = bitmap_weight(t->dirty[old], t->units);
		return t->dirty[old];
	}
	dsmem_slope_track_protect(t);
	i = 0;
	for_each_set_bit(k, t->dirty[old], t->units) {
		u64 a;

		while (i + 1 < t->nextents && t->first[i + 1] <= k)
			i++;
		a = t->ext[i].addr + ((k - t->first[i]) << t->unit_shift);
		for (j = 0; j < per_unit; j++) {
			struct page *page;
			void *entry;

			rcu_read_lock();
			entry = xa_load(&s->pages, dsmem_slope_idx(a) + j);
			page = entry && !xa_is_value(entry) &&
			       get_page_unless_zero(entry) ? entry : NULL;
			rcu_read_unlock();
			if (!page)
				continue;
			lock_page(page);
			unlock_page(page);
			put_page(page);
		}
		cond_resched();
	}
	dsmem_slope_track_protect(t);
	*ndirty = bitmap_weight(t->dirty[old], t->units);
	return t->dirty[old];
}

/* The DSMEM_IOC_SLOPE_DIRTY trackers of one open file. */
struct dsmem_slope_utrack {
	struct list_head link;
	struct dsmem_slope_track *t;
	struct dsmem_node *node;	/* counted */
};

int dsmem_slope_ioc_dirty(struct list_head *owned, struct dsmem_node *node,
			  void *arg)
{
	struct dsmem_ioc_slope_dirty *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	struct dsmem_slope_utrack *u = NULL, *it;
	unsigned int shift = a->flags & DSMEM_SLOPE_HUGE ?
			     DSMEM_SLOPE_HUGE_SHIFT : PAGE_SHIFT;
	struct dsmem_slope_extent *e;
	unsigned long *dirty, k;
	u64 units, ndirty, bytes;
	u8 *buf;
	int ret;

	if (a->__pad || a->flags & ~DSMEM_SLOPE_DIRTY_FLAGS_ALL)
		return -EINVAL;
	if (a->op != DSMEM_SLOPE_DIRTY_START) {
		if (a->flags || a->extents || a->nr)
			return -EINVAL;
		list_for_each_entry(it, owned, link)
			if (it->t->id == a->id && it->node == node)
				u = it;
		if (!u)
			return -ENOENT;
	}

	switch (a->op) {
	case DSMEM_SLOPE_DIRTY_START:
		if (a->id || a->bitmap || a->bitmap_len)
			return -EINVAL;
		e = dsmem_slope_extents_get(a->extents, a->nr, shift,
					    DSMEM_SLOPE_MIG_UNITS_MAX, &units);
		if (IS_ERR(e))
			return PTR_ERR(e);
		u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
		if (!u) {
			kvfree(e);
			return -ENOMEM;
		}
		mutex_lock(&s->alloc_lock);
		ret = dsmem_slope_extents_owned(s, e, a->nr);
		if (!ret) {
			u->t = dsmem_slope_track_new(s, e, a->nr, shift,
						     a->flags & DSMEM_SLOPE_DIRTY_HARVEST);
			ret = PTR_ERR_OR_ZERO(u->t);
		}
		mutex_unlock(&s->alloc_lock);
		kvfree(e);
		if (ret) {
			kfree(u);
			return ret;
		}
		kref_get(&node->ref);
		u->node = node;
		list_add_tail(&u->link, owned);
		a->id = u->t->id;
		a->units = units;
		return 0;
	case DSMEM_SLOPE_DIRTY_COLLECT:
		dirty = dsmem_slope_track_switch(u->t, &ndirty);
		a->dirty = ndirty;
		a->units = u->t->units;
		if (!a->bitmap)
			return 0;
		bytes = min_t(u64, a->bitmap_len, DIV_ROUND_UP(u->t->units, 8));
		buf = kvzalloc(bytes, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		/* bit i of byte i / 8, whatever the host's word order */
		for_each_set_bit(k, dirty, min_t(u64, u->t->units, bytes * 8))
			buf[k / 8] |= 1U << (k % 8);
		ret = copy_to_user(u64_to_user_ptr(a->bitmap), buf, bytes) ?
		      -EFAULT : 0;
		kvfree(buf);
		return ret;
	case DSMEM_SLOPE_DIRTY_STOP:
		list_del(&u->link);
		dsmem_slope_track_stop(u->t);
		dsmem_node_put(u->node);
		kfree(u);
		return 0;
	}
	return -EINVAL;
}

void dsmem_slope_file_release(struct list_head *owned)
{
	struct dsmem_slope_utrack *u, *tmp;

	list_for_each_entry_safe(u, tmp, owned, link) {
		list_del(&u->link);
		dsmem_slope_track_stop(u->t);
		dsmem_node_put(u->node);
		kfree(u);
	}
}
