// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: remote-memory segments (seed 002).
 *
 * A segment is memory the module owns, in chunks of up to 2 MiB, mapped
 * once for the node's device.  Peers reach it in two ways:
 *  - one-sided verbs, through memory regions registered per connection
 *    (so per peer: each connection has its own PD) whose iova is the
 *    segment's global address, and which are deregistered -- their rkeys
 *    dead -- when the grant ends or the segment goes;
 *  - the seed's messages (ALLOC/FREE/READ/WRITE), translated here either
 *    by the segment table (base/limit) or by a hashed page table with
 *    per-page permissions.
 */
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "../tokencache/dsmem_tc.h"
#include "dsmem_rdm.h"

struct dsmem_seg_pte {
	struct hlist_node link;
	unsigned long va_page;
	unsigned long pa_page;
	u32 perm;
};

static struct page *dsmem_seg_page(struct dsmem_seg *seg, unsigned long pg)
{
	return nth_page(seg->chunks[pg >> seg->chunk_order],
			pg & ((1UL << seg->chunk_order) - 1));
}

static void dsmem_seg_free_chunks(struct dsmem_seg *seg)
{
	unsigned long i;

	for (i = 0; i < seg->nchunks; i++)
		if (seg->chunks[i])
			__free_pages(seg->chunks[i], seg->chunk_order);
	kvfree(seg->chunks);
	seg->chunks = NULL;
	seg->nchunks = 0;
}

/* All chunks of one order: the largest that divides the size and fits. */
static int dsmem_seg_alloc_chunks(struct dsmem_seg *seg)
{
	unsigned long npages = seg->size >> PAGE_SHIFT;
	unsigned int order = min_t(unsigned int, DSMEM_SEG_CHUNK_ORDER_MAX,
				   __ffs(npages));
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;
	unsigned long i;
	gfp_t try;

	for (;;) {
		seg->chunk_order = order;
		/* nchunks counts the array's entries: none until it exists */
		seg->chunks = kvcalloc(npages >> order, sizeof(*seg->chunks),
				       GFP_KERNEL_ACCOUNT);
		if (!seg->chunks)
			return -ENOMEM;
		seg->nchunks = npages >> order;
		/*
		 * A large order may fail fast; no order calls the OOM killer,
		 * the memory cgroup's either: over its limit, the segment is
		 * refused.
		 */
		try = gfp | (order ? __GFP_NORETRY : __GFP_RETRY_MAYFAIL);
		for (i = 0; i < seg->nchunks; i++) {
			seg->chunks[i] = alloc_pages_node(seg->numa, try, order);
			if (!seg->chunks[i])
				break;
		}
		if (i == seg->nchunks)
			return 0;
		dsmem_seg_free_chunks(seg);
		if (!order)
			return -ENOMEM;
		order = 0;	/* fragmented: fall back to single pages */
	}
}

/* One scatterlist entry per chunk, mapped once for one device. */
static int dsmem_seg_map_dev(struct dsmem_seg *seg, unsigned int slot)
{
	struct ib_device *ibdev = seg->node->devs[slot].ibdev;
	struct sg_table *sgt = &seg->sgt[slot];
	struct scatterlist *sg;
	unsigned long i;
	int ret;

	ret = sg_alloc_table(sgt, seg->nchunks, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sg(sgt->sgl, sg, seg->nchunks, i)
		sg_set_page(sg, seg->chunks[i], PAGE_SIZE << seg->chunk_order, 0);
	ret = ib_dma_map_sgtable_attrs(ibdev, sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_free_table;
	/* memory regions are cut at chunk boundaries: keep them 1:1 */
	if (sgt->nents != seg->nchunks) {
		ret = -EIO;
		goto err_unmap;
	}
	return 0;

err_unmap:
	ib_dma_unmap_sgtable_attrs(ibdev, sgt, DMA_BIDIRECTIONAL, 0);
err_free_table:
	sg_free_table(sgt);
	return ret;
}

static void dsmem_seg_unmap_dev(struct dsmem_seg *seg, unsigned int slot)
{
	if (!__test_and_clear_bit(slot, &seg->mapped))
		return;
	ib_dma_unmap_sgtable_attrs(seg->node->devs[slot].ibdev,
				   &seg->sgt[slot], DMA_BIDIRECTIONAL, 0);
	sg_free_table(&seg->sgt[slot]);
}

static void dsmem_seg_unmap(struct dsmem_seg *seg)
{
	unsigned int i;

	lockdep_assert_held(&seg->node->lock);
	for (i = 0; i < seg->node->ndevs; i++)
		dsmem_seg_unmap_dev(seg, i);
	list_del_init(&seg->mapped_link);
}

/*
 * For each of the node's devices still there: grants go out on any of
 * them.  Listed on the node's segs_mapped until unmapped, so that a
 * device going finds it (dsmem_segs_dev_gone).
 */
static int dsmem_seg_map(struct dsmem_seg *seg)
{
	struct dsmem_node *node = seg->node;
	unsigned int i;
	int ret;

	BUILD_BUG_ON(DSMEM_NODE_DEVS_MAX > BITS_PER_LONG);
	lockdep_assert_held(&node->lock);
	for (i = 0; i < node->ndevs; i++) {
		if (node->devs[i].gone)
			continue;
		ret = dsmem_seg_map_dev(seg, i);
		if (ret) {
			dsmem_seg_unmap(seg);
			return ret;
		}
		__set_bit(i, &seg->mapped);
	}
	list_add_tail(&seg->mapped_link, &node->segs_mapped);
	return 0;
}

/*
 * A device of the node is gone, its connections with it: its mappings of
 * the segments go, of those being destroyed too.
 */
void dsmem_segs_dev_gone(struct dsmem_node *node, unsigned int slot)
{
	struct dsmem_seg *seg;

	lockdep_assert_held(&node->lock);
	list_for_each_entry(seg, &node->segs_mapped, mapped_link)
		dsmem_seg_unmap_dev(seg, slot);
}

static int dsmem_seg_init_ptab(struct dsmem_seg *seg)
{
	unsigned long i;

	seg->ptab_bits = max_t(unsigned int, 4,
			       ilog2(roundup_pow_of_two(seg->npages)));
	seg->ptab = kvcalloc(1UL << seg->ptab_bits, sizeof(*seg->ptab),
			     GFP_KERNEL_ACCOUNT);
	seg->free_stack = kvmalloc_array(seg->npages, sizeof(long),
					 GFP_KERNEL_ACCOUNT);
	if (!seg->ptab || !seg->free_stack)
		return -ENOMEM;
	/* popped from the top: virtual page 0 lands on the last frame */
	for (i = 0; i < seg->npages; i++)
		seg->free_stack[i] = i;
	seg->nfree = seg->npages;
	return 0;
}

static void dsmem_seg_release(struct kref *ref)
{
	struct dsmem_seg *seg = container_of(ref, struct dsmem_seg, ref);
	struct dsmem_seg_pte *pte;
	struct hlist_node *tmp;
	unsigned long b;

	if (seg->ptab)
		for (b = 0; b < (1UL << seg->ptab_bits); b++)
			hlist_for_each_entry_safe(pte, tmp, &seg->ptab[b], link)
				kfree(pte);
	kvfree(seg->ptab);
	kvfree(seg->free_stack);
	kvfree(seg->va_map);
	xa_destroy(&seg->allocs);
	xa_destroy(&seg->grants);
	dsmem_seg_free_chunks(seg);
	dsmem_node_put(seg->node);
	kfree_rcu(seg, rcu);
}

void dsmem_seg_put(struct dsmem_seg *seg)
{
	kref_put(&seg->ref, dsmem_seg_release);
}

/*
 * The segment's memory and what maps it, charged (GFP_KERNEL_ACCOUNT) to
 * the memory cgroup of whoever asks for the segment: a node's owner makes
 * segments within its own limits, not within those of the admin who made
 * the node.
 */
static int dsmem_seg_alloc_memory(struct dsmem_seg *seg)
{
	int ret;

	ret = dsmem_seg_alloc_chunks(seg);
	if (ret)
		return ret;
	seg->va_map = kvcalloc(BITS_TO_LONGS(seg->npages), sizeof(long),
			       GFP_KERNEL_ACCOUNT);
	if (!seg->va_map)
		return -ENOMEM;
	if (seg->translate == DSMEM_TRANSLATE_PAGES)
		return dsmem_seg_init_ptab(seg);
	return 0;
}

/*
 * Make a segment on a counted node.  Its memory (up to DSMEM_SEG_SIZE_MAX,
 * zeroed) is allocated before node->lock is taken: that long under the
 * lock would hold up every netlink request, grant and connection release
 * of the node.  Only the id and the device mappings, which must agree
 * with the table and with the devices' gone flags, are made under it.
 * On success node->lock is held, so that the caller reports the segment
 * before anyone can delete it; on failure it is not.
 */
int dsmem_seg_create(struct dsmem_node *node, u64 size, int numa,
		     u8 translate, struct dsmem_seg **segp,
		     struct netlink_ext_ack *extack)
{
	struct dsmem_seg *seg;
	u32 id;
	int ret;

	if (!size || size > DSMEM_SEG_SIZE_MAX || !PAGE_ALIGNED(size)) {
		NL_SET_ERR_MSG(extack,
			       "size must be a non-zero multiple of the page size, at most 64 GiB");
		return -EINVAL;
	}
	if (numa != NUMA_NO_NODE &&
	    (numa < 0 || numa >= MAX_NUMNODES || !node_online(numa))) {
		NL_SET_ERR_MSG(extack, "no such NUMA node");
		return -EINVAL;
	}
	/* module memory is unswappable: leave the host half of it */
	if (size >> PAGE_SHIFT > totalram_pages() / 2) {
		NL_SET_ERR_MSG(extack, "a segment may take at most half the memory");
		return -ENOMEM;
	}

	seg = kzalloc(sizeof(*seg), GFP_KERNEL);
	if (!seg)
		return -ENOMEM;
	kref_init(&seg->ref);
	kref_get(&node->ref);
	seg->node = node;
	seg->size = size;
	seg->numa = numa;
	seg->translate = translate;
	seg->npages = size >> PAGE_SHIFT;
	mutex_init(&seg->lock);
	init_rwsem(&seg->copy_sem);
	xa_init(&seg->grants);
	xa_init(&seg->allocs);
	INIT_LIST_HEAD(&seg->gmrs);
	INIT_LIST_HEAD(&seg->mapped_link);

	ret = dsmem_seg_alloc_memory(seg);
	if (ret) {
		dsmem_stat_inc(node->net, DSMEM_STAT_SEG_NOMEM);
		NL_SET_ERR_MSG(extack, "not enough memory for the segment");
		goto err_put_seg;
	}

	if (!dsmem_node_lock_live(node)) {
		NL_SET_ERR_MSG(extack, "the node went away");
		ret = -ENOENT;
		goto err_put_seg;
	}
	ret = xa_alloc(&node->segs, &id, NULL, XA_LIMIT(1, DSMEM_SEG_ID_MAX),
		       GFP_KERNEL);
	if (ret) {
		NL_SET_ERR_MSG(extack, "the node has all the segments it may have");
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_unlock_node;
	}
	seg->id = id;
	seg->base = DSMEM_GADDR(node->id, id, 0);
	ret = dsmem_seg_map(seg);
	if (ret) {
		NL_SET_ERR_MSG(extack, "cannot map the segment for the device");
		goto err_release_id;
	}

	xa_store(&node->segs, id, seg, GFP_KERNEL);	/* replaces the NULL */
	dsmem_stat_inc(node->net, DSMEM_STAT_SEG_ADDED);
	*segp = seg;
	return 0;

err_release_id:
	xa_erase(&node->segs, id);
err_unlock_node:
	mutex_unlock(&node->lock);
err_put_seg:
	dsmem_seg_put(seg);
	return ret;
}

/* Segments by global address, counted; NULL if there is none. */
struct dsmem_seg *dsmem_seg_by_addr(struct dsmem_node *node, u64 gaddr)
{
	struct dsmem_seg *seg;

	rcu_read_lock();
	seg = xa_load(&node->segs, DSMEM_GADDR_SEG(gaddr));
	if (seg && !kref_get_unless_zero(&seg->ref))
		seg = NULL;
	rcu_read_unlock();
	return seg;
}

u32 dsmem_seg_perm(struct dsmem_seg *seg, u32 remote)
{
	void *e = xa_load(&seg->grants, remote);

	return e ? xa_to_value(e) : 0;
}

/* The allocator: page-granular first fit over the virtual range. */

static struct dsmem_seg_pte *dsmem_seg_pte(struct dsmem_seg *seg,
					   unsigned long va_page)
{
	struct dsmem_seg_pte *pte;

	hlist_for_each_entry(pte, &seg->ptab[hash_long(va_page, seg->ptab_bits)],
			     link)
		if (pte->va_page == va_page)
			return pte;
	return NULL;
}

static void dsmem_seg_zero_page(struct dsmem_seg *seg, unsigned long pg)
{
	clear_highpage(dsmem_seg_page(seg, pg));
}

/* Unmap pages [start, start + npg) of a page-translated segment. */
static void dsmem_seg_unmap_pages(struct dsmem_seg *seg, unsigned long start,
				  unsigned long npg)
{
	struct dsmem_seg_pte *pte;
	unsigned long i;

	lockdep_assert_held(&seg->lock);
	for (i = start; i < start + npg; i++) {
		pte = dsmem_seg_pte(seg, i);
		if (WARN_ON_ONCE(!pte))
			continue;
		hlist_del(&pte->link);
		seg->free_stack[seg->nfree++] = pte->pa_page;
		kfree(pte);
	}
}

/*
 * A peer may ask for anything up to the segment's size: the space is
 * checked before a page table entry is allocated, so a request the
 * segment cannot hold costs nothing, and one it can costs an entry per
 * page it gets.
 */
int dsmem_seg_alloc(struct dsmem_seg *seg, u64 len, u64 *va, u64 *pa)
{
	bool paged = seg->translate == DSMEM_TRANSLATE_PAGES;
	struct dsmem_seg_pte *pte;
	unsigned long npg, start, i;
	int ret;

	if (!len || len > seg->size)
		return len ? -ENOMEM : -EINVAL;
	npg = DIV_ROUND_UP(len, PAGE_SIZE);

	mutex_lock(&seg->lock);
	start = bitmap_find_next_zero_area(seg->va_map, seg->npages, 0, npg, 0);
	if (start >= seg->npages || (paged && seg->nfree < npg)) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	/*
	 * pa = va - va_base + pa_base, or the first frame's when paged; and
	 * memory a previous owner freed is not readable by the next one
	 */
	*pa = (u64)start << PAGE_SHIFT;
	for (i = 0; paged && i < npg; i++) {
		pte = kmalloc(sizeof(*pte), GFP_KERNEL);
		if (!pte) {
			ret = -ENOMEM;
			goto out_unmap;
		}
		pte->va_page = start + i;
		pte->pa_page = seg->free_stack[--seg->nfree];
		pte->perm = DSMEM_PERM_ALL;
		hlist_add_head(&pte->link,
			       &seg->ptab[hash_long(start + i, seg->ptab_bits)]);
		dsmem_seg_zero_page(seg, pte->pa_page);
		if (!i)
			*pa = (u64)pte->pa_page << PAGE_SHIFT;
		/* a mutex: a large allocation lets others run */
		if (!((i + 1) % DSMEM_SEG_ZERO_BATCH))
			cond_resched();
	}
	ret = xa_err(xa_store(&seg->allocs, start, xa_mk_value(npg),
			      GFP_KERNEL));
	if (ret)
		goto out_unmap;
	bitmap_set(seg->va_map, start, npg);
	seg->used += (u64)npg << PAGE_SHIFT;
	mutex_unlock(&seg->lock);
	/*
	 * The range is ours and its address not yet given to anyone: it is
	 * zeroed without the lock, so that the segment's other allocations
	 * and frees go on meanwhile, and with a chance to reschedule.
	 */
	for (i = 0; !paged && i < npg; i++) {
		dsmem_seg_zero_page(seg, start + i);
		if (!((i + 1) % DSMEM_SEG_ZERO_BATCH))
			cond_resched();
	}
	*va = seg->base + ((u64)start << PAGE_SHIFT);
	return 0;

out_unmap:
	if (paged)
		dsmem_seg_unmap_pages(seg, start, i);
out_unlock:
	mutex_unlock(&seg->lock);
	return ret;
}

int dsmem_seg_free(struct dsmem_seg *seg, u64 va)
{
	u64 off = va - seg->base;
	unsigned long start, npg;
	void *e;

	if (off >= seg->size || !PAGE_ALIGNED(off))
		return -EINVAL;
	start = off >> PAGE_SHIFT;

	mutex_lock(&seg->lock);
	e = xa_erase(&seg->allocs, start);
	if (!e) {
		mutex_unlock(&seg->lock);
		return -EINVAL;		/* not the start of an allocation */
	}
	npg = xa_to_value(e);
	bitmap_clear(seg->va_map, start, npg);
	seg->used -= (u64)npg << PAGE_SHIFT;
	if (seg->translate == DSMEM_TRANSLATE_PAGES)
		dsmem_seg_unmap_pages(seg, start, npg);
	mutex_unlock(&seg->lock);
	return 0;
}

/*
 * Copy between buf and [va, va + len).  Segment table: anywhere within
 * the segment.  Page table: mapped pages only, writes to writable ones.
 */
int dsmem_seg_access(struct dsmem_seg *seg, u64 va, void *buf, u64 len,
		     bool write)
{
	bool paged = seg->translate == DSMEM_TRANSLATE_PAGES;
	u64 off = va - seg->base;
	struct dsmem_seg_pte *pte;
	u8 *p = buf;
	int ret = 0;

	if (va < seg->base || off >= seg->size || len > seg->size - off) {
		dsmem_stat_inc(seg->node->net, DSMEM_STAT_MSG_RANGE);
		return -ERANGE;
	}
	if (paged)
		mutex_lock(&seg->lock);	/* no FREE under our feet */
	while (len) {
		unsigned long pg = off >> PAGE_SHIFT;
		size_t in = offset_in_page(off);
		size_t n = min_t(u64, len, PAGE_SIZE - in);
		void *kaddr;

		if (paged) {
			pte = dsmem_seg_pte(seg, pg);
			if (!pte) {
				ret = -EFAULT;
				break;
			}
			if (write && !(pte->perm & DSMEM_PERM_WRITE)) {
				ret = -EACCES;
				break;
			}
			pg = pte->pa_page;
		}
		kaddr = kmap_local_page(dsmem_seg_page(seg, pg));
		if (write)
			memcpy(kaddr + in, p, n);
		else
			memcpy(p, kaddr + in, n);
		kunmap_local(kaddr);
		p += n;
		off += n;
		len -= n;
	}
	if (paged)
		mutex_unlock(&seg->lock);
	if (ret)
		dsmem_stat_inc(seg->node->net, ret == -EACCES ?
			       DSMEM_STAT_MSG_DENIED : DSMEM_STAT_MSG_RANGE);
	return ret;
}

/* Grants: memory regions per connection, announced with GRANT. */

struct dsmem_reg_wait {
	struct ib_cqe cqe;
	struct completion done;
	struct dsmem_conn *conn;
	int status;
};

static void dsmem_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dsmem_reg_wait *w = container_of(wc->wr_cqe,
						struct dsmem_reg_wait, cqe);

	w->status = wc->status == IB_WC_SUCCESS ? 0 : -EIO;
	if (unlikely(w->status))
		dsmem_conn_wc_error(w->conn, wc);
	dsmem_conn_put_credit(w->conn, &w->conn->sq_free);
	complete(&w->done);
}

int dsmem_reg_post(struct dsmem_conn *conn, struct ib_mr *mr, int access)
{
	struct dsmem_reg_wait w = { .conn = conn };
	struct ib_reg_wr wr = {
		.wr = {
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
			.wr_cqe = &w.cqe,
		},
		.mr = mr,
		.key = mr->rkey,
		.access = access,
	};
	int ret;

	w.cqe.done = dsmem_reg_done;
	init_completion(&w.done);
	ret = dsmem_conn_wait_credit(conn, &conn->sq_free, NULL);
	if (ret)
		return ret;
	ret = dsmem_conn_post(conn, &wr.wr, &conn->sq_free, DSMEM_CONN_UP,
			      NULL, NULL);
	if (ret)
		return ret;
	dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MR_REG_POSTED);
	/*
	 * The registration completes in order behind the connection's
	 * sends, which a peer that takes no message leaves retrying
	 * (receiver not ready) until the I/O watchdog gives up: bounded as
	 * a message's answer is instead, and then the connection goes.
	 * Closing it flushes the queue, which ends this wait (the release
	 * drains the QP before it takes any lock of ours).  No caller holds
	 * a node's lock here.
	 */
	if (!wait_for_completion_timeout(&w.done,
					 msecs_to_jiffies(dsmem_msg_timeout_ms()))) {
		pr_warn_ratelimited("node %u: a memory registration for node %u did not complete in %u ms, closing the connection\n",
				    conn->peer->node->id, conn->remote_node,
				    dsmem_msg_timeout_ms());
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_REG_TIMEOUT);
		dsmem_conn_close(conn, -ETIMEDOUT);
		wait_for_completion(&w.done);
		return -ETIMEDOUT;
	}
	return w.status;
}

static void dsmem_gmr_free(struct dsmem_gmr *gmr)
{
	unsigned int i;

	/* deregistration kills the rkeys: late accesses fail at the NIC */
	for (i = 0; i < gmr->nmrs; i++) {
		dsmem_tc_del(gmr->tc_mrs[i]);
		ib_dereg_mr(gmr->mrs[i]);
	}
	kfree(gmr->tc_mrs);
	kfree(gmr);
}

static struct dsmem_gmr *dsmem_gmr_register(struct dsmem_seg *seg,
					    struct dsmem_conn *conn, u32 perm)
{
	unsigned long chunk = PAGE_SIZE << seg->chunk_order;
	u32 maxpl = conn->ibdev->attrs.max_fast_reg_page_list_len;
	unsigned int per_mr, nmrs, i, k;
	struct scatterlist *sg;
	struct dsmem_gmr *gmr;
	int access, ret;

	if (seg->translate == DSMEM_TRANSLATE_PAGES) {
		/* page permissions are the module's to enforce: no rkeys */
		nmrs = 0;
		per_mr = 0;
	} else {
		per_mr = min_t(unsigned long, maxpl ? maxpl : 1, seg->nchunks);
		nmrs = DIV_ROUND_UP(seg->nchunks, per_mr);
		if (nmrs > DSMEM_WIRE_GRANT_MAX_KEYS)
			return ERR_PTR(-E2BIG);
	}
	gmr = kzalloc(struct_size(gmr, mrs, nmrs), GFP_KERNEL);
	if (!gmr)
		return ERR_PTR(-ENOMEM);
	gmr->tc_mrs = kcalloc(max(nmrs, 1U), sizeof(*gmr->tc_mrs), GFP_KERNEL);
	if (!gmr->tc_mrs) {
		kfree(gmr);
		return ERR_PTR(-ENOMEM);
	}
	gmr->seg = seg;
	gmr->conn = conn;
	gmr->perm = perm;
	gmr->span = (u64)per_mr * chunk;

	access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ;
	if (perm & DSMEM_PERM_WRITE)
		access |= IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC;

	/* a device marked gone, its connections not closed yet */
	if (!test_bit(conn->ldev, &seg->mapped)) {
		ret = -ENODEV;
		goto err_free_gmr;
	}
	sg = seg->sgt[conn->ldev].sgl;
	for (i = 0; i < nmrs; i++) {
		unsigned int n = min_t(unsigned long, per_mr,
				       seg->nchunks - (unsigned long)i * per_mr);
		struct ib_mr *mr;

		mr = ib_alloc_mr(conn->pd, IB_MR_TYPE_MEM_REG, n);
		if (IS_ERR(mr)) {
			ret = PTR_ERR(mr);
			goto err_free_gmr;
		}
		gmr->mrs[gmr->nmrs++] = mr;
		ret = ib_map_mr_sg(mr, sg, n, NULL, chunk);
		if (ret != n) {
			ret = ret < 0 ? ret : -EINVAL;
			goto err_free_gmr;
		}
		/* remote addresses are global addresses */
		mr->iova = seg->base + (u64)i * gmr->span;
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		ret = dsmem_reg_post(conn, mr, access);
		if (ret)
			goto err_free_gmr;
		/* the key the registration settled on */
		ret = dsmem_tc_add_mr(mr->lkey, access, (u64)n << seg->chunk_order,
				      seg->node->net, seg->node->id,
				      DSMEM_TC_GRANT_MR,
				      seg->id << 16 | (conn->remote_node & 0xffff),
				      i, &gmr->tc_mrs[i]);
		if (ret)
			goto err_free_gmr;
		for (k = 0; k < n; k++)
			sg = sg_next(sg);
	}
	return gmr;

err_free_gmr:
	dsmem_gmr_free(gmr);
	return ERR_PTR(ret);
}

/*
 * Grants and the peers' answers.  A GRANT or REVOKE is sent under the
 * segment's node's lock, so each peer receives them in the order they
 * were decided; a GRANT's memory registration is made, and every answer
 * awaited, without the lock: a peer that takes no message or does not
 * answer delays only whoever asked it, and is disconnected after
 * msg_timeout_ms (3 s by default).  A segment, its grants and the
 * connections they go on are one node's: one node's lock covers them.
 *
 * A gmr linked on its segment and connection is the grant's (answered or
 * on its way); whoever unlinks it frees it.  One taken off to be revoked
 * counts in both its segment's and its connection's gmrs_out until it is
 * freed: the segment's memory stays mapped, and the connection's PD
 * stays, until then.
 */
static DECLARE_WAIT_QUEUE_HEAD(dsmem_gmrs_wait);

/* A GRANT of gmr: req points into the returned buffer, kfree'd after. */
static void *dsmem_gmr_grant(struct dsmem_gmr *gmr, struct dsmem_wire_msg *req)
{
	struct dsmem_seg *seg = gmr->seg;
	struct dsmem_wire_grant_info g = {
		.base = seg->base,
		.size = seg->size,
		.span = gmr->span,
		.perm = gmr->perm,
		.nkeys = gmr->nmrs,
	};
	size_t len = dsmem_wire_grant_size(gmr->nmrs);
	u32 *rkeys;
	void *data;
	unsigned int i;
	int ret;

	data = kmalloc(len, GFP_KERNEL);
	rkeys = kcalloc(max(gmr->nmrs, 1U), sizeof(*rkeys), GFP_KERNEL);
	if (!data || !rkeys) {
		ret = -ENOMEM;
		goto err_free;
	}
	for (i = 0; i < gmr->nmrs; i++)
		rkeys[i] = gmr->mrs[i]->rkey;
	ret = dsmem_wire_grant_encode(data, len, &g, rkeys);
	if (ret < 0)
		goto err_free;
	kfree(rkeys);
	*req = (struct dsmem_wire_msg){
		.opcode = DSMEM_WIRE_GRANT,
		.addr = seg->base,
		.len = len,
		.data = data,
	};
	return data;

err_free:
	kfree(rkeys);
	kfree(data);
	return ERR_PTR(ret);
}

static void dsmem_gmr_unlink(struct dsmem_gmr *gmr)
{
	list_del(&gmr->seg_link);
	list_del(&gmr->conn_link);
}

/*
 * Under the lock: take gmr off its segment and connection and send its
 * REVOKE -- the peer first, so it stops using the keys cleanly -- onto
 * out, for dsmem_gmrs_revoke to finish without the lock.
 */
static void dsmem_gmr_take(struct dsmem_gmr *gmr, struct list_head *out)
{
	lockdep_assert_held(&gmr->seg->node->lock);
	dsmem_gmr_unlink(gmr);
	INIT_LIST_HEAD(&gmr->conn_link);
	list_add_tail(&gmr->seg_link, out);
	gmr->seg->gmrs_out++;
	gmr->conn->gmrs_out++;
	gmr->revoke_req = (struct dsmem_wire_msg){
		.opcode = DSMEM_WIRE_REVOKE,
		.addr = gmr->seg->base,
	};
	gmr->revoke_ret = dsmem_msg_start(gmr->conn, &gmr->revoke,
					  &gmr->revoke_req,
					  &gmr->revoke_reply, NULL, 0);
}

/*
 * Without the lock: the taken gmrs' answers, then their MRs go.  The
 * caller holds the node: a segment or connection, and its reference to
 * the node, may go as soon as its waiter is woken.
 */
static void dsmem_gmrs_revoke(struct list_head *out)
{
	struct dsmem_gmr *gmr, *tmp;

	list_for_each_entry_safe(gmr, tmp, out, seg_link) {
		struct dsmem_seg *seg = gmr->seg;
		struct dsmem_node *node = seg->node;
		struct dsmem_conn *conn = gmr->conn;
		int ret = gmr->revoke_ret;

		if (!ret)
			ret = dsmem_msg_finish(conn, &gmr->revoke,
					       dsmem_msg_timeout_ms());
		if (!ret)
			dsmem_stat_inc(node->net, DSMEM_STAT_REVOKES_SENT);
		else if (ret != -ENOENT)
			/* the peer may still list the grant, whose keys die
			 * below: start the connection over, which tells it
			 * only the grants that remain
			 */
			dsmem_conn_close(conn, ret);
		list_del(&gmr->seg_link);
		dsmem_gmr_free(gmr);
		/* the last touch of seg and conn: their waiters free them */
		mutex_lock(&node->lock);
		seg->gmrs_out--;
		conn->gmrs_out--;
		wake_up_all(&dsmem_gmrs_wait);
		mutex_unlock(&node->lock);
	}
}

/*
 * Register and announce seg on conn, under the lock, which is dropped
 * while the registration completes and while the peer answers: seg and
 * conn are the caller's to hold.  A previous grant there is replaced once
 * the peer took the new one.
 */
/*
 * The connection's registrations of seg sent before gen go (their rkeys
 * die at the NIC), all but keep; true if one sent after gen remains.
 */
static bool dsmem_seg_drop_older(struct dsmem_seg *seg, struct dsmem_conn *conn,
				 struct dsmem_gmr *keep, u64 gen)
{
	struct dsmem_gmr *it, *tmp;
	bool newer = false;

	list_for_each_entry_safe(it, tmp, &seg->gmrs, seg_link) {
		if (it->conn != conn || it == keep)
			continue;
		if (it->gen > gen) {
			newer = true;
		} else {
			dsmem_gmr_unlink(it);
			dsmem_gmr_free(it);
		}
	}
	return newer;
}

static int dsmem_seg_push(struct dsmem_seg *seg, struct dsmem_conn *conn,
			  u32 perm)
{
	struct dsmem_node *node = seg->node;
	struct dsmem_wire_msg req, reply;
	struct dsmem_gmr *gmr, *it;
	struct dsmem_msg_wait w;
	void *data;
	u64 gen;
	int ret;

	lockdep_assert_held(&node->lock);
	if (seg->dead || conn->gmrs_closed)
		return -ENOTCONN;
	/*
	 * The registration completes behind the connection's sends, which
	 * a peer that takes no message holds up: it is made without the
	 * lock, so that the node's other work does not wait on this peer.
	 * Meanwhile it counts in both gmrs_out, as a revoke under way does:
	 * the segment stays mapped and the connection's PD stays.  It is
	 * sent only if the grant is still the one decided; a grant changed
	 * meanwhile is the later caller's to send.
	 */
	seg->gmrs_out++;
	conn->gmrs_out++;
	mutex_unlock(&node->lock);
	gmr = dsmem_gmr_register(seg, conn, perm);
	mutex_lock(&node->lock);
	if (!IS_ERR(gmr) && (seg->dead || conn->gmrs_closed ||
			     dsmem_seg_perm(seg, conn->remote_node) != perm)) {
		ret = seg->dead || conn->gmrs_closed ? -ENOTCONN : 0;
		dsmem_gmr_free(gmr);
		gmr = ERR_PTR(ret);
	}
	seg->gmrs_out--;
	conn->gmrs_out--;
	wake_up_all(&dsmem_gmrs_wait);
	if (IS_ERR(gmr))
		return PTR_ERR(gmr);
	data = dsmem_gmr_grant(gmr, &req);
	if (IS_ERR(data)) {
		dsmem_gmr_free(gmr);
		return PTR_ERR(data);
	}
	gen = ++node->gmr_gen;
	gmr->gen = gen;
	list_add_tail(&gmr->seg_link, &seg->gmrs);
	list_add_tail(&gmr->conn_link, &conn->gmrs);
	ret = dsmem_msg_start(conn, &w, &req, &reply, NULL, 0);
	if (!ret) {
		mutex_unlock(&node->lock);
		ret = dsmem_msg_finish(conn, &w, dsmem_msg_timeout_ms());
		mutex_lock(&node->lock);
	}
	kfree(data);

	/* a revoke, or the end of the segment or connection, took it */
	gmr = NULL;
	list_for_each_entry(it, &seg->gmrs, seg_link)
		if (it->gen == gen)
			gmr = it;
	if (!gmr)
		return ret;
	if (ret) {
		dsmem_gmr_unlink(gmr);
		dsmem_gmr_free(gmr);
		/*
		 * The grant changed, so what the peer held before goes too:
		 * a narrowing from rw to r that it refused must not leave it
		 * the rw rkeys.  A peer that does not answer starts over; one
		 * that refuses (it is out of memory, say) keeps its
		 * connection, without the grant, rather than reconnect to be
		 * refused again.
		 */
		dsmem_seg_drop_older(seg, conn, NULL, gen);
		if (ret == -ETIMEDOUT)
			dsmem_conn_close(conn, ret);
		return ret;
	}
	dsmem_stat_inc(seg->node->net, DSMEM_STAT_GRANTS_SENT);
	/*
	 * The peer keeps the grant it received last, the newest sent: the
	 * older ones go, and this one too if a newer one was sent.
	 */
	if (dsmem_seg_drop_older(seg, conn, gmr, gen)) {
		dsmem_gmr_unlink(gmr);
		dsmem_gmr_free(gmr);
	}
	return 0;
}

/*
 * The node's grant to itself changed: once no copy of the local path is
 * inside a MiB, none reaches the segment beyond the new grant (each MiB
 * reads it again).  As a remote grant's change returns after the peer's
 * MRs are gone.
 */
static void dsmem_seg_self_grant_changed(struct dsmem_seg *seg, u32 remote)
{
	if (remote != seg->node->id)
		return;
	down_write(&seg->copy_sem);
	up_write(&seg->copy_sem);
}

/* Under the lock, which is dropped while each peer answers. */
int dsmem_seg_grant(struct dsmem_seg *seg, u32 remote, u32 perm)
{
	struct dsmem_conn *conns[1 + DSMEM_PATHS_MAX];
	struct dsmem_node *node = seg->node;
	struct dsmem_peer *peer;
	unsigned int n, c;
	unsigned long i;
	int ret, first = 0;

	lockdep_assert_held(&node->lock);

	ret = xa_err(xa_store(&seg->grants, remote, xa_mk_value(perm),
			      GFP_KERNEL));
	if (ret)
		return ret;
	dsmem_seg_self_grant_changed(seg, remote);
	kref_get(&seg->ref);
	/* connections (paths too) up now; later ones get it when they are */
	xa_for_each(&node->peers, i, peer) {
		if (READ_ONCE(peer->remote_node) != remote)
			continue;
		n = dsmem_peer_conns_up(peer, conns);
		for (c = 0; c < n; c++) {
			/* a grant changed meanwhile is the later caller's */
			ret = 0;
			if (xa_load(&seg->grants, remote) == xa_mk_value(perm))
				ret = dsmem_seg_push(seg, conns[c], perm);
			if (ret && !first)
				first = ret;
			dsmem_conn_put(conns[c]);
		}
	}
	dsmem_seg_put(seg);
	return first;
}

/* Under the lock, which is dropped while the peers answer. */
int dsmem_seg_revoke(struct dsmem_seg *seg, u32 remote)
{
	struct dsmem_node *node = seg->node;
	struct dsmem_gmr *gmr, *tmp;
	LIST_HEAD(out);

	lockdep_assert_held(&node->lock);

	if (!xa_erase(&seg->grants, remote))
		return -ENOENT;
	dsmem_seg_self_grant_changed(seg, remote);
	list_for_each_entry_safe(gmr, tmp, &seg->gmrs, seg_link)
		if (gmr->conn->remote_node == remote)
			dsmem_gmr_take(gmr, &out);
	if (list_empty(&out))
		return 0;
	mutex_unlock(&node->lock);
	dsmem_gmrs_revoke(&out);
	mutex_lock(&node->lock);
	return 0;
}

/*
 * Unlinked from the node's table already; under the lock, which is
 * dropped while the peers answer the revokes.  The memory goes with the
 * last reference, which a message handler may still hold for a moment.
 */
void dsmem_seg_destroy(struct dsmem_seg *seg)
{
	struct dsmem_node *node = seg->node;
	struct dsmem_gmr *gmr, *tmp;
	LIST_HEAD(out);

	lockdep_assert_held(&node->lock);

	seg->dead = true;
	list_for_each_entry_safe(gmr, tmp, &seg->gmrs, seg_link)
		dsmem_gmr_take(gmr, &out);
	mutex_unlock(&node->lock);
	dsmem_gmrs_revoke(&out);
	/* and the revokes of others (dsmem_seg_revoke) */
	wait_event(dsmem_gmrs_wait, !READ_ONCE(seg->gmrs_out));
	mutex_lock(&node->lock);
	dsmem_seg_unmap(seg);
	dsmem_stat_inc(seg->node->net, DSMEM_STAT_SEG_REMOVED);
	dsmem_nl_notify_seg(seg, DSMEM_CMD_SEG_DEL);
	dsmem_seg_put(seg);
}

void dsmem_seg_conn_up(struct dsmem_conn *conn)
{
	struct dsmem_node *node = conn->peer->node;
	struct dsmem_seg *seg;
	unsigned long i;
	u32 perm;
	int ret;

	mutex_lock(&node->lock);
	xa_for_each(&node->segs, i, seg) {
		perm = dsmem_seg_perm(seg, conn->remote_node);
		if (!perm)
			continue;
		kref_get(&seg->ref);
		ret = dsmem_seg_push(seg, conn, perm);
		dsmem_seg_put(seg);
		if (ret)
			break;	/* the connection failed; it will be back */
	}
	mutex_unlock(&node->lock);
}

void dsmem_seg_conn_down(struct dsmem_conn *conn)
{
	struct dsmem_node *node = conn->peer->node;
	struct dsmem_gmr *gmr, *tmp;

	mutex_lock(&node->lock);
	conn->gmrs_closed = true;
	list_for_each_entry_safe(gmr, tmp, &conn->gmrs, conn_link) {
		dsmem_gmr_unlink(gmr);
		dsmem_gmr_free(gmr);
	}
	mutex_unlock(&node->lock);
	/* revokes under way (their waits ended with the pending requests) */
	wait_event(dsmem_gmrs_wait, !READ_ONCE(conn->gmrs_out));
}
