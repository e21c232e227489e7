// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: the migratable range of a node -- its mapping into
 * processes, its pages, and the ioctls that allocate and free them.
 *
 * The range is mapped MAP_SHARED at the same address on every node, and
 * the pages are the module's: .fault hands them out, .page_mkwrite sees
 * the first write of each tracking epoch.  The pages are ordinary pages
 * in ordinary PTEs (not VM_IO, not VM_PFNMAP), so the range can itself
 * be an RDMA buffer.  Each node has an inode of our own pseudo
 * filesystem, whose i_mapping links every VMA of the node's range: that
 * is what write-protection (wp_shared_mapping_range) and unmapping walk.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "dsmem_slope.h"

#define DSMEM_SLOPE_FS_MAGIC	0x64736d73	/* "dsms" */

static struct vfsmount *dsmem_slope_mnt;

static int dsmem_slope_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, DSMEM_SLOPE_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: our own mount would then pin the module for ever; the
 * module unmounts it on exit, after the last node.
 */
static struct file_system_type dsmem_slope_fs_type = {
	.name		 = "dsmem_slope",
	.init_fs_context = dsmem_slope_init_fs_context,
	.kill_sb	 = kill_anon_super,
};

/*
 * A connection's release, a dsmem_wq work, flushes the workers of its
 * migrations: they are not dsmem_wq works too, or under memory pressure
 * that queue's rescuer alone would wait for itself.
 */
struct workqueue_struct *dsmem_slope_wq;

static struct dsmem_service dsmem_slope_service;

/* The node's Slope state, made by dsmem_slope_node_init. */
struct dsmem_slope *dsmem_slope_of(const struct dsmem_node *node)
{
	return dsmem_node_priv(node, &dsmem_slope_service);
}

int dsmem_slope_init(void)
{
	int ret;

	dsmem_slope_wq = alloc_workqueue("dsmem_slope",
					 WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!dsmem_slope_wq)
		return -ENOMEM;
	dsmem_slope_mnt = kern_mount(&dsmem_slope_fs_type);
	if (IS_ERR(dsmem_slope_mnt)) {
		ret = PTR_ERR(dsmem_slope_mnt);
		goto err_destroy_wq;
	}
	ret = dsmem_service_register(&dsmem_slope_service);
	if (ret)
		goto err_unmount;
	return 0;

err_unmount:
	kern_unmount(dsmem_slope_mnt);
err_destroy_wq:
	destroy_workqueue(dsmem_slope_wq);
	return ret;
}

void dsmem_slope_exit(void)
{
	dsmem_service_unregister(&dsmem_slope_service);
	kern_unmount(dsmem_slope_mnt);
	destroy_workqueue(dsmem_slope_wq);
}

static int dsmem_slope_node_init(struct dsmem_node *node, void **priv)
{
	struct dsmem_slope *s;
	int ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->inode = alloc_anon_inode(dsmem_slope_mnt->mnt_sb);
	if (IS_ERR(s->inode)) {
		ret = PTR_ERR(s->inode);
		goto err_free_slope;
	}
	s->node = node;
	s->inode->i_private = s;
	/*
	 * Its entries are the pages' bookkeeping: charged where the pages
	 * are, to the caller's cgroup or, for a peer's migration, the node's.
	 */
	xa_init_flags(&s->pages, XA_FLAGS_ACCOUNT);
	init_waitqueue_head(&s->page_wait);
	mutex_init(&s->alloc_lock);
	mutex_init(&s->grow_lock);
	mutex_init(&s->lease_lock);
	xa_init(&s->held);
	mutex_init(&s->share_lock);
	spin_lock_init(&s->track_lock);
	INIT_LIST_HEAD(&s->trackers);
	mutex_init(&s->mig_lock);
	INIT_LIST_HEAD(&s->migs);
	xa_init(&s->objs);
	s->runs = RB_ROOT_CACHED;
	init_waitqueue_head(&s->mig_wait);
	INIT_DELAYED_WORK(&s->announce_work, dsmem_slope_announce_work);
	INIT_DELAYED_WORK(&s->expire_work, dsmem_slope_expire_work);
	dsmem_slope_lease_init(s);
	*priv = s;
	return 0;

err_free_slope:
	kfree(s);
	return ret;
}

/*
 * The node is going: no more announcements, nor expiries (what is left
 * goes with the node).  Its migrations end with its connections
 * (dsmem_slope_conn_down).
 */
static void dsmem_slope_node_dead(struct dsmem_node *node, void *priv)
{
	struct dsmem_slope *s = priv;

	cancel_delayed_work_sync(&s->announce_work);
	cancel_delayed_work_sync(&s->expire_work);
}

/* The last reference to the node: no VMA maps the range any more. */
static void dsmem_slope_node_fini(struct dsmem_node *node, void *priv)
{
	struct dsmem_slope *s = priv;
	unsigned long i;
	void *entry;

	cancel_delayed_work_sync(&s->announce_work);
	/* a pull that ended after dsmem_slope_node_dead may have queued it */
	cancel_delayed_work_sync(&s->expire_work);
	dsmem_slope_mig_fini(s);
	/* descriptors hold the node while their trackers live */
	WARN_ON(!list_empty(&s->trackers));
	xa_for_each(&s->pages, i, entry)
		if (!xa_is_value(entry))
			put_page(entry);
	xa_destroy(&s->pages);
	dsmem_slope_runs_fini(s);
	dsmem_slope_lease_fini(s);
	iput(s->inode);
	kfree(s);
}

void dsmem_slope_attach(struct file *filp, struct dsmem_node *node)
{
	/* before any mmap: the VMAs link into the node's mapping */
	filp->f_mapping = dsmem_slope_of(node)->inode->i_mapping;
}

/*
 * Allocate the pages of the unit holding idx, owned and not yet touched.
 * A 2 MiB unit is one physically contiguous run, split into pages so
 * that each is mapped and counted on its own.
 */
int dsmem_slope_populate(struct dsmem_slope *s, pgoff_t idx,
			 unsigned int unit_shift, struct page **unit)
{
	unsigned int order = unit_shift - PAGE_SHIFT, i;
	unsigned long n = 1UL << order;
	pgoff_t first = idx & ~(n - 1);
	struct page *page;

	page = alloc_pages(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT |
			   __GFP_NOWARN | (order ? __GFP_NORETRY : 0), order);
	if (!page)
		return -ENOMEM;
	if (order)
		split_page(page, order);
	xa_lock(&s->pages);
	for (i = 0; i < n; i++) {
		void *old = __xa_cmpxchg(&s->pages, first + i,
					 DSMEM_SLOPE_RESERVED, page + i,
					 GFP_NOWAIT);

		/* someone populated it first: theirs stays, ours goes */
		if (old != DSMEM_SLOPE_RESERVED)
			put_page(page + i);
	}
	xa_unlock(&s->pages);
	if (unit)
		*unit = xa_load(&s->pages, first);
	return 0;
}

/*
 * Forget the page at idx: the caller owns the address (alloc_lock) and
 * no one may map it again.  Locking the page waits for a fault that is
 * about to map it, so the unmap below catches that mapping too.
 */
void dsmem_slope_page_drop(struct dsmem_slope *s, pgoff_t idx)
{
	void *entry = xa_erase(&s->pages, idx);

	if (!entry || xa_is_value(entry))
		return;
	lock_page(entry);
	unmap_mapping_pages(s->inode->i_mapping, idx, 1, false);
	unlock_page(entry);
	put_page(entry);
}

/* Set or clear a mark on every present page of [idx, idx + n). */
void dsmem_slope_mark(struct dsmem_slope *s, pgoff_t idx, unsigned long n,
		      xa_mark_t mark, bool set)
{
	XA_STATE(xas, &s->pages, idx);
	unsigned int batch = 0;
	void *entry;

	xas_lock(&xas);
	xas_for_each(&xas, entry, idx + n - 1) {
		if (set)
			xas_set_mark(&xas, mark);
		else
			xas_clear_mark(&xas, mark);
		/* a huge object has millions: let others in now and then */
		if (++batch % 1024 == 0) {
			xas_pause(&xas);
			xas_unlock(&xas);
			cond_resched();
			xas_lock(&xas);
		}
	}
	xas_unlock(&xas);
}

void dsmem_slope_mark_extents(struct dsmem_slope *s,
			      const struct dsmem_slope_extent *e, u32 n,
			      xa_mark_t mark, bool set)
{
	u32 i;

	for (i = 0; i < n; i++)
		dsmem_slope_mark(s, dsmem_slope_idx(e[i].addr),
				 e[i].len >> PAGE_SHIFT, mark, set);
}

/*
 * Wait out faults that may be mapping pages of the extents: each holds
 * its page locked until its PTE is in place (see dsmem_slope_fault).
 */
void dsmem_slope_barrier(struct dsmem_slope *s,
			 const struct dsmem_slope_extent *e, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		pgoff_t first = dsmem_slope_idx(e[i].addr);
		XA_STATE(xas, &s->pages, first);
		struct page *page;
		void *entry;

		rcu_read_lock();
		xas_for_each(&xas, entry, first + (e[i].len >> PAGE_SHIFT) - 1) {
			if (xas_retry(&xas, entry) || xa_is_value(entry))
				continue;
			page = entry;
			if (!get_page_unless_zero(page))
				continue;
			xas_pause(&xas);
			rcu_read_unlock();
			lock_page(page);
			unlock_page(page);
			put_page(page);
			cond_resched();
			rcu_read_lock();
		}
		rcu_read_unlock();
	}
}

void dsmem_slope_unmap(struct dsmem_slope *s, const struct dsmem_slope_extent *e,
		       u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		unmap_mapping_pages(s->inode->i_mapping,
				    dsmem_slope_idx(e[i].addr),
				    e[i].len >> PAGE_SHIFT, false);
}

static struct dsmem_slope *dsmem_slope_of_vmf(struct vm_fault *vmf)
{
	return vmf->vma->vm_private_data;
}

static vm_fault_t dsmem_slope_fault(struct vm_fault *vmf)
{
	struct dsmem_slope *s = dsmem_slope_of_vmf(vmf);
	pgoff_t idx = vmf->pgoff;
	struct page *page;
	void *entry;

again:
	xa_lock(&s->pages);
	entry = xa_load(&s->pages, idx);
	if (!entry || xa_get_mark(&s->pages, idx, DSMEM_SLOPE_GONE)) {
		xa_unlock(&s->pages);
		return VM_FAULT_SIGBUS;
	}
	if (xa_get_mark(&s->pages, idx, DSMEM_SLOPE_WAIT)) {
		xa_unlock(&s->pages);
		return dsmem_slope_fault_wait(vmf, s, idx);
	}
	if (xa_is_value(entry)) {
		xa_unlock(&s->pages);
		if (dsmem_slope_populate(s, idx, PAGE_SHIFT, NULL))
			return VM_FAULT_OOM;
		goto again;
	}
	page = entry;
	get_page(page);
	xa_unlock(&s->pages);

	/*
	 * The page lock orders us against dsmem_slope_page_drop and
	 * dsmem_slope_barrier: whoever changed the entry or its marks before
	 * we took it is seen here, whoever changes them after waits for the
	 * PTE we are about to install, and removes it.
	 */
	lock_page(page);
	if (xa_load(&s->pages, idx) != page ||
	    xa_get_mark(&s->pages, idx, DSMEM_SLOPE_WAIT) ||
	    xa_get_mark(&s->pages, idx, DSMEM_SLOPE_GONE)) {
		unlock_page(page);
		put_page(page);
		return VM_FAULT_NOPAGE;
	}
	vmf->page = page;
	return VM_FAULT_LOCKED;
}

/*
 * The first write to a page since it was mapped or write-protected.  The
 * page stays locked until its PTE is writable (VM_FAULT_LOCKED), which is
 * what lets an epoch switch wait for a mark it might otherwise miss.
 */
static vm_fault_t dsmem_slope_mkwrite(struct vm_fault *vmf)
{
	struct dsmem_slope *s = dsmem_slope_of_vmf(vmf);
	struct page *page = vmf->page;
	pgoff_t idx = vmf->pgoff;

	lock_page(page);
	if (xa_get_mark(&s->pages, idx, DSMEM_SLOPE_GONE)) {
		unlock_page(page);
		return VM_FAULT_SIGBUS;
	}
	/* dropped or not usable yet: the fault is taken again from .fault */
	if (xa_load(&s->pages, idx) != page ||
	    xa_get_mark(&s->pages, idx, DSMEM_SLOPE_WAIT)) {
		unlock_page(page);
		return VM_FAULT_NOPAGE;
	}
	if (xa_get_mark(&s->pages, idx, DSMEM_SLOPE_TRACKED))
		dsmem_slope_track_mark(s, idx);
	return VM_FAULT_LOCKED;
}

/* Moving the range would move the addresses that name its objects. */
static int dsmem_slope_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

static const struct vm_operations_struct dsmem_slope_vm_ops = {
	.fault		= dsmem_slope_fault,
	.page_mkwrite	= dsmem_slope_mkwrite,
	.mremap		= dsmem_slope_mremap,
};

/*
 * Called with mmap_lock held: the node comes from the mapping attach
 * pointed the file at, not from the file's state and its lock (which
 * ioctls hold while copying from user memory).  The file keeps the node.
 */
int dsmem_slope_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct inode *host = filp->f_mapping->host;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct dsmem_slope *s;

	if (!host || host->i_sb != dsmem_slope_mnt->mnt_sb)
		return -ENOTCONN;
	s = host->i_private;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	/* the same address on every node, or objects do not survive a move */
	if (off >= DSMEM_SLOPE_SIZE ||
	    vma->vm_start != DSMEM_SLOPE_BASE + off ||
	    vma->vm_end - vma->vm_start > DSMEM_SLOPE_SIZE - off)
		return -EINVAL;
	vma->vm_flags |= VM_DONTEXPAND;
	vma->vm_ops = &dsmem_slope_vm_ops;
	vma->vm_private_data = s;
	return 0;
}

int dsmem_slope_ioc_alloc(struct dsmem_node *node, void *arg)
{
	struct dsmem_ioc_slope_alloc *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	bool huge = a->flags & DSMEM_SLOPE_HUGE;
	u64 unit = huge ? DSMEM_SLOPE_HUGE_SIZE : PAGE_SIZE;
	struct dsmem_slope_outbox *o = NULL;
	u64 npages, addr, i;
	pgoff_t idx;
	int ret;

	if (a->flags & ~DSMEM_SLOPE_ALLOC_FLAGS_ALL || a->__pad || a->addr)
		return -EINVAL;
	if (a->object && !dsmem_slope_obj_addr_ok(a->object))
		return -ERANGE;
	if (a->object && a->flags & DSMEM_SLOPE_NEW_OBJECT)
		return -EINVAL;
	if (!a->len || a->len & (unit - 1) || a->len > DSMEM_SLOPE_LEASE_SIZE)
		return -EINVAL;
	npages = a->len >> PAGE_SHIFT;

	for (;;) {
		mutex_lock(&s->alloc_lock);
		ret = dsmem_slope_lease_alloc(s, npages, huge, &addr);
		if (ret != -EAGAIN)
			break;
		/* a lease more, asked for without alloc_lock */
		mutex_unlock(&s->alloc_lock);
		ret = dsmem_slope_lease_grow(s, npages, huge);
		if (ret)
			return ret;
	}
	if (ret)
		goto out;
	idx = dsmem_slope_idx(addr);
	for (i = 0; i < npages; i++) {
		/* the lease said free: an entry here would be a bug or a lie */
		ret = xa_insert(&s->pages, idx + i, DSMEM_SLOPE_RESERVED,
				GFP_KERNEL);
		if (ret) {
			npages = i;	/* what to undo */
			break;
		}
	}
	/* huge units are populated now: a fault maps 4 KiB of them */
	for (i = 0; !ret && huge && i < npages; i += 1UL << DSMEM_SLOPE_HUGE_ORDER)
		ret = dsmem_slope_populate(s, idx + i, DSMEM_SLOPE_HUGE_SHIFT,
					   NULL);
	if (!ret && (a->object || a->flags & DSMEM_SLOPE_NEW_OBJECT))
		ret = dsmem_slope_runs_add(s, a->object ?: addr, idx, npages);
	if (ret) {
		struct dsmem_slope_extent e = { .addr = addr, .len = a->len };

		for (i = 0; i < npages; i++)
			dsmem_slope_page_drop(s, idx + i);
		o = dsmem_slope_lease_release(s, &e, 1);
		goto out;
	}
	s->pages_owned += npages;
	a->addr = addr;
out:
	mutex_unlock(&s->alloc_lock);
	dsmem_slope_outbox_send(s, o);
	return ret;
}

/* Copy in and check a caller's extents (page units). */
struct dsmem_slope_extent *dsmem_slope_extents_get(u64 uptr, u32 n,
						   unsigned int unit_shift,
						   u64 max_units, u64 *units)
{
	struct dsmem_slope_extent *e;
	int ret;

	if (!n || n > DSMEM_SLOPE_EXTENTS_MAX)
		return ERR_PTR(-EINVAL);
	e = kvmalloc_array(n, sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(e, u64_to_user_ptr(uptr), n * sizeof(*e))) {
		ret = -EFAULT;
		goto err_free;
	}
	ret = dsmem_slope_extents_check(e, n, unit_shift, max_units, units);
	if (ret)
		goto err_free;
	return e;

err_free:
	kvfree(e);
	return ERR_PTR(ret);
}

/*
 * Every page of the extents is this node's and free to change hands:
 * present, not arriving, not handed over, not tracked.  Under alloc_lock.
 */
int dsmem_slope_extents_owned(struct dsmem_slope *s,
			      const struct dsmem_slope_extent *e, u32 n)
{
	XA_STATE(xas, &s->pages, 0);
	u32 i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		pgoff_t first = dsmem_slope_idx(e[i].addr);
		pgoff_t last = first + (e[i].len >> PAGE_SHIFT) - 1;
		unsigned long seen = 0;
		void *entry;

		rcu_read_lock();
		xas_set(&xas, first);
		xas_for_each(&xas, entry, last) {
			if (xas_retry(&xas, entry))
				continue;
			if (xas_get_mark(&xas, DSMEM_SLOPE_WAIT) ||
			    xas_get_mark(&xas, DSMEM_SLOPE_GONE) ||
			    xas_get_mark(&xas, DSMEM_SLOPE_TRACKED)) {
				ret = -EBUSY;
				break;
			}
			seen++;
		}
		rcu_read_unlock();
		if (!ret && seen != last - first + 1)
			ret = -EFAULT;
	}
	return ret;
}

int dsmem_slope_ioc_free(struct dsmem_node *node, void *arg)
{
	struct dsmem_ioc_slope_free *a = arg;
	struct dsmem_slope *s = dsmem_slope_of(node);
	struct dsmem_slope_outbox *o = NULL;
	struct dsmem_slope_extent *e;
	u64 pages, i;
	u32 k;
	int ret;

	if (a->__pad || a->freed)
		return -EINVAL;
	e = dsmem_slope_extents_get(a->extents, a->nr, PAGE_SHIFT,
				    DSMEM_SLOPE_SIZE >> PAGE_SHIFT, &pages);
	if (IS_ERR(e))
		return PTR_ERR(e);
	mutex_lock(&s->alloc_lock);
	/*
	 * An object handed over here is not the application's until it
	 * received it: until then its expiry may free it (and give its
	 * addresses back) at any time.
	 */
	ret = dsmem_slope_extents_owned(s, e, a->nr) ?:
	      dsmem_slope_mig_arriving(s, e, a->nr, false);
	if (ret)
		goto out;
	for (k = 0; k < a->nr; k++) {
		pgoff_t first = dsmem_slope_idx(e[k].addr);

		for (i = 0; i < e[k].len >> PAGE_SHIFT; i++)
			dsmem_slope_page_drop(s, first + i);
		dsmem_slope_runs_remove(s, first, e[k].len >> PAGE_SHIFT);
	}
	s->pages_owned -= min(s->pages_owned, pages);
	/* what a pull under way still marks goes back at its end */
	dsmem_slope_mig_defer_free(s, e, a->nr);
	o = dsmem_slope_lease_release(s, e, a->nr);
	a->freed = pages << PAGE_SHIFT;
out:
	mutex_unlock(&s->alloc_lock);
	/* the addresses' holders are told without alloc_lock */
	dsmem_slope_outbox_send(s, o);
	kvfree(e);
	return ret;
}

/* A Slope request from a peer; 1: no reply to send (none, or sent). */
static void dsmem_slope_conn_up(struct dsmem_conn *conn, void *priv)
{
	struct dsmem_slope *s = priv;

	/* a new peer learns our free leases at once */
	if (!READ_ONCE(s->node->dead))
		mod_delayed_work(dsmem_wq, &s->announce_work, 0);
}

static void dsmem_slope_conn_down(struct dsmem_conn *conn, void *priv)
{
	dsmem_slope_mig_conn_down(priv, conn);
}

/* What Slope serves; every answer is REPLY_SLOPE (BEGIN's may carry keys) */
static const struct dsmem_msg_op dsmem_slope_ops[] = {
	{ DSMEM_WIRE_SLOPE_LEASE_REQ, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_lease_req },
	{ DSMEM_WIRE_SLOPE_LEASE_RET, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_lease_ret },
	{ DSMEM_WIRE_SLOPE_LEASE_COUNT, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_lease_count },
	{ DSMEM_WIRE_SLOPE_FREE, DSMEM_WIRE_REPLY_SLOPE, 0, dsmem_slope_on_free },
	{ DSMEM_WIRE_SLOPE_MIG_PUT, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_mig_put },
	{ DSMEM_WIRE_SLOPE_MIG_BEGIN, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_mig_begin },
	{ DSMEM_WIRE_SLOPE_MIG_HANDOVER, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_mig_handover },
	{ DSMEM_WIRE_SLOPE_MIG_DONE, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_mig_done },
	{ DSMEM_WIRE_SLOPE_MIG_ABORT, DSMEM_WIRE_REPLY_SLOPE, 0,
	  dsmem_slope_on_mig_abort },
};

static struct dsmem_service dsmem_slope_service = {
	.name		= "slope",
	.node_init	= dsmem_slope_node_init,
	.node_dead	= dsmem_slope_node_dead,
	.node_fini	= dsmem_slope_node_fini,
	.conn_up	= dsmem_slope_conn_up,
	.conn_down	= dsmem_slope_conn_down,
	.ops		= dsmem_slope_ops,
	.nops		= ARRAY_SIZE(dsmem_slope_ops),
};
