// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the data path behind /dev/dsmem -- one-sided READ, WRITE, CAS
 * and FAA in batches (AsyncBatchTransfer), zero-copy from pinned user
 * memory.
 *
 * A batch is one ioctl.  Each transfer is cut into slices that fit one
 * work request (the SGE limit, DSMEM_SLICE_BYTES, the remote region's
 * span) and the slices are posted back to back, as far as the send queue
 * has room: large transfers pipeline.  Completions (softirq) count the
 * slices down; the last one finishes the task and wakes poll().
 */
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "../tokencache/dsmem_tc.h"
#include "dsmem_rdm.h"
#include "dsmem_xfer.h"

/*
 * One work request in flight.  A connection owns one per send credit, so
 * taking a credit guarantees a free slice: the data path allocates
 * nothing per operation.
 */
struct dsmem_slice {
	struct ib_cqe cqe;
	struct llist_node free;
	struct dsmem_task *task;
	struct dsmem_conn *conn;
	u32 req;
	u32 len;
};

/* The map of one device's slot, if it has one: its addresses stay. */
static void dsmem_umr_unmap_slot(struct dsmem_umr *umr, unsigned int slot)
{
	struct dsmem_umr_map *map = &umr->maps[slot];

	if (!umr->mapped || slot >= umr->nmaps || !map->ibdev)
		return;
	ib_dma_unmap_sgtable_attrs(map->ibdev, &map->sgt, DMA_BIDIRECTIONAL, 0);
	map->ibdev = NULL;
}

static void dsmem_umr_unmap(struct dsmem_umr *umr)
{
	unsigned int i;

	if (!umr->mapped)
		return;
	for (i = 0; i < umr->nmaps; i++)
		dsmem_umr_unmap_slot(umr, i);
	umr->mapped = false;
}

static void dsmem_umr_free(struct dsmem_umr *umr)
{
	unsigned int i;

	dsmem_tc_del(umr->tc_mr);
	dsmem_umr_unmap(umr);
	for (i = 0; i < DSMEM_NODE_DEVS_MAX; i++) {
		if (umr->maps[i].sgt.sgl)
			sg_free_table(&umr->maps[i].sgt);
		kvfree(umr->maps[i].dma);
	}
	if (umr->npinned)
		unpin_user_pages_dirty_lock(umr->pages, umr->npinned,
					    umr->writable);
	if (umr->mm) {
		atomic64_sub(umr->npages, &umr->mm->pinned_vm);
		mmdrop(umr->mm);
	}
	kvfree(umr->pages);
	kfree(umr);
}

/* Map the pinned pages for ibdev, with per-page addresses. */
static int dsmem_umr_map(struct dsmem_umr *umr, struct dsmem_umr_map *map,
			 struct ib_device *ibdev)
{
	struct scatterlist *sg;
	unsigned long i = 0;
	u64 dma;
	int ret, n;

	map->dma = kvcalloc(umr->npages, sizeof(*map->dma), GFP_KERNEL_ACCOUNT);
	if (!map->dma)
		return -ENOMEM;
	ret = sg_alloc_table_from_pages(&map->sgt, umr->pages, umr->npages, 0,
					umr->npages << PAGE_SHIFT,
					GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	ret = ib_dma_map_sgtable_attrs(ibdev, &map->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		return ret;
	map->ibdev = ibdev;
	/* per-page addresses make slicing at any offset a lookup */
	for_each_sgtable_dma_sg(&map->sgt, sg, n) {
		for (dma = sg_dma_address(sg);
		     dma < sg_dma_address(sg) + sg_dma_len(sg) &&
		     i < umr->npages; dma += PAGE_SIZE)
			map->dma[i++] = dma;
	}
	return i == umr->npages ? 0 : -EIO;
}

/*
 * Pin [addr, addr + len) and map it.  Every pin is long-term and charged
 * to RLIMIT_MEMLOCK as ib_umem does, a task's as much as a registration's:
 * a task keeps its pins until it is released, which may be never.
 */
static struct dsmem_umr *dsmem_umr_get(struct dsmem_node *node, u64 addr,
				       u64 len, bool writable)
{
	unsigned int gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	unsigned long first = addr >> PAGE_SHIFT, limit;
	struct dsmem_umr *umr;
	int ret, n;

	if (!len || addr + len < addr)
		return ERR_PTR(-EINVAL);
	umr = kzalloc(sizeof(*umr), GFP_KERNEL_ACCOUNT);
	if (!umr)
		return ERR_PTR(-ENOMEM);
	umr->addr = addr;
	umr->len = len;
	umr->writable = writable;
	umr->npages = ((addr + len - 1) >> PAGE_SHIFT) - first + 1;
	atomic_set(&umr->users, 0);

	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	umr->mm = current->mm;
	mmgrab(umr->mm);
	if (atomic64_add_return(umr->npages, &umr->mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		ret = -ENOMEM;
		goto err_free;
	}

	umr->pages = kvcalloc(umr->npages, sizeof(*umr->pages),
			      GFP_KERNEL_ACCOUNT);
	if (!umr->pages) {
		ret = -ENOMEM;
		goto err_free;
	}
	while (umr->npinned < umr->npages) {
		n = pin_user_pages_fast((first + umr->npinned) << PAGE_SHIFT,
					min_t(unsigned long,
					      umr->npages - umr->npinned,
					      INT_MAX >> PAGE_SHIFT),
					gup, umr->pages + umr->npinned);
		if (n <= 0) {
			ret = n ? n : -EFAULT;
			goto err_free;
		}
		umr->npinned += n;
	}

	/*
	 * The node's devices are fixed when it is made, and one gone has no
	 * connection left to use its map.  Under the file's lock, which
	 * orders this against dsmem_xfer_node_dev_gone().
	 */
	umr->mapped = true;
	for (; umr->nmaps < node->ndevs; umr->nmaps++) {
		struct dsmem_umr_map *map = &umr->maps[umr->nmaps];

		if (READ_ONCE(node->devs[umr->nmaps].gone))
			continue;
		ret = dsmem_umr_map(umr, map, node->devs[umr->nmaps].ibdev);
		if (ret) {
			/* mapped or not, dsmem_umr_free() unmaps what is */
			if (map->ibdev)
				umr->nmaps++;
			goto err_free;
		}
	}
	return umr;

err_free:
	dsmem_umr_free(umr);
	return ERR_PTR(ret);
}

static void dsmem_task_release(struct kref *ref)
{
	struct dsmem_task *task = container_of(ref, struct dsmem_task, ref);
	u32 i;

	for (i = 0; i < task->nr; i++) {
		struct dsmem_task_req *tr = &task->reqs[i];

		if (!tr->umr)
			continue;
		if (tr->own_umr)
			dsmem_umr_free(tr->umr);
		else
			atomic_dec(&tr->umr->users);
	}
	kvfree(task);
}

static void dsmem_task_put(struct dsmem_task *task)
{
	kref_put(&task->ref, dsmem_task_release);
}

/*
 * Unmap a done task's own pins, under file->lock: that lock orders it
 * against dsmem_xfer_node_dead(), after which the device may be gone.
 * The last put, wherever it happens, then only unpins.
 */
static void dsmem_task_unmap(struct dsmem_task *task)
{
	u32 i;

	lockdep_assert_held(&task->file->lock);
	for (i = 0; i < task->nr; i++)
		if (task->reqs[i].own_umr)
			dsmem_umr_unmap(task->reqs[i].umr);
}

static void dsmem_file_put(struct dsmem_xfer_file *file);

static void dsmem_task_finish(struct dsmem_task *task)
{
	struct dsmem_xfer_file *file = task->file;

	WRITE_ONCE(task->is_done, true);
	atomic_inc(&file->ndone);
	/*
	 * Once complete, a waiter may release the task and close the file:
	 * a reference, taken while the close still waits for this task,
	 * keeps the file for the wake-up.  Waking after completing means a
	 * poller that is woken finds its task done.
	 */
	kref_get(&file->ref);
	complete_all(&task->done);
	wake_up_interruptible(&file->poll_wq);
	dsmem_file_put(file);
}

static void dsmem_task_req_done(struct dsmem_task *task, u32 req)
{
	if (task->reqs[req].looped)
		atomic_dec(&task->file->looped);
	if (task->ring) {
		dsmem_ring_req_done(task->ring, req);
		return;
	}
	atomic_inc(&task->done_reqs);
	if (atomic_dec_and_test(&task->pending))
		dsmem_task_finish(task);
}

static void dsmem_req_failover(struct dsmem_task *task, u32 req);

/*
 * One less of request req in flight: the last one ends it, or sends it
 * to run again when a path under it went down and nothing else failed.
 * The decrement orders every slice's failover mark before the test.
 */
static void dsmem_req_put(struct dsmem_task *task, u32 req)
{
	struct dsmem_task_req *tr = &task->reqs[req];

	if (!atomic_dec_and_test(&tr->slices))
		return;
	if (tr->failover && !READ_ONCE(tr->status))
		dsmem_req_failover(task, req);
	else
		dsmem_task_req_done(task, req);
}

/*
 * Whether a failed slice may go again on another path: it was on a path
 * (the first connection takes the paths down with it), of a request that
 * may take any path, and it was lost with the path -- flushed by its
 * close, or out of transport retries -- not refused by the peer.
 */
static bool dsmem_slice_lost_with_path(const struct dsmem_slice *s,
				       const struct dsmem_task_req *tr,
				       const struct ib_wc *wc)
{
	return s->conn->path && tr->req.flags & DSMEM_XFER_F_UNORDERED &&
	       tr->failovers < DSMEM_FAILOVER_MAX &&
	       (wc->status == IB_WC_WR_FLUSH_ERR ||
		wc->status == IB_WC_RETRY_EXC_ERR);
}

static void dsmem_slice_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dsmem_slice *s = container_of(wc->wr_cqe, struct dsmem_slice,
					     cqe);
	struct dsmem_task *task = s->task;
	struct dsmem_task_req *tr = &task->reqs[s->req];
	struct dsmem_conn *conn = s->conn;
	u32 req = s->req;

	/* the completion is written through the CQ's context */
	dsmem_tc_resolve(conn->tc_cq, DSMEM_TRACE_READ, NULL);
	if (likely(wc->status == IB_WC_SUCCESS)) {
		/* an unordered request's slices end on several CQs */
		atomic64_add(s->len, &tr->bytes);
		dsmem_stat_add(dsmem_conn_net(conn), DSMEM_STAT_XFER_BYTES, s->len);
	} else {
		if (dsmem_slice_lost_with_path(s, tr, wc))
			WRITE_ONCE(tr->failover, true);
		else
			cmpxchg(&tr->status, 0, dsmem_wc_errno(wc->status));
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_XFER_ERRORS);
		dsmem_conn_wc_error(conn, wc);
	}
	llist_add(&s->free, &conn->slice_free);
	dsmem_conn_put_credit(conn, &conn->sq_free);
	dsmem_req_put(task, req);
}

int dsmem_xfer_conn_init(struct dsmem_conn *conn)
{
	struct dsmem_slice *s;
	int i;

	conn->slices = kcalloc(DSMEM_SQ_DEPTH, sizeof(*s), GFP_KERNEL);
	if (!conn->slices)
		return -ENOMEM;
	spin_lock_init(&conn->slice_lock);
	init_llist_head(&conn->slice_free);
	for (i = 0, s = conn->slices; i < DSMEM_SQ_DEPTH; i++, s++) {
		s->cqe.done = dsmem_slice_done;
		s->conn = conn;
		llist_add(&s->free, &conn->slice_free);
	}
	return 0;
}

/* Let go of the snapshot of file->conn's peer's paths; under lock. */
static void dsmem_file_paths_drop(struct dsmem_xfer_file *file)
{
	while (file->npaths)
		dsmem_conn_put(file->paths[--file->npaths]);
	file->paths_gen = -1;
}

/*
 * The other paths of conn (file->conn) to its peer that are up, counted,
 * looked up again when the peer's paths changed: no lock per transfer.
 */
static void dsmem_file_paths(struct dsmem_xfer_file *file,
			     struct dsmem_conn *conn)
{
	struct dsmem_conn *conns[1 + DSMEM_PATHS_MAX];
	int gen = atomic_read(&conn->peer->paths_gen);
	unsigned int n, i;

	lockdep_assert_held(&file->lock);
	if (file->paths_gen == gen)
		return;
	dsmem_file_paths_drop(file);
	n = dsmem_peer_conns_up(conn->peer, conns);
	for (i = 0; i < n; i++) {
		if (conns[i] != conn && file->npaths < DSMEM_PATHS_MAX)
			file->paths[file->npaths++] = conns[i];
		else
			dsmem_conn_put(conns[i]);
	}
	file->paths_gen = gen;
}

/* Whether conn's device is on NUMA node nid (NUMA_NO_NODE: no wish). */
static bool dsmem_conn_near(const struct dsmem_conn *conn, int nid)
{
	return nid != NUMA_NO_NODE &&
	       conn->peer->node->devs[conn->ldev].numa == nid;
}

/*
 * The path for the next slice of an unordered transfer: of those up and
 * with the grant of its target, one whose device is on nid, the buffer's
 * NUMA node, and has a credit free, if any is; of those, the one with the
 * most send credits free (the least in flight), the first connection on
 * a tie.  Counted.
 */
static struct dsmem_conn *dsmem_file_pick(struct dsmem_xfer_file *file,
					  struct dsmem_conn *first, u64 remote,
					  int nid)
{
	struct dsmem_conn *best = first, *c;
	int most = atomic_read(&first->sq_free), free;
	/* a near path with no credit free is no nearer than a far idle one */
	bool best_near = most > 0 && dsmem_conn_near(first, nid), near;
	unsigned int i;

	for (i = 0; i < file->npaths; i++) {
		c = file->paths[i];
		free = atomic_read(&c->sq_free);
		near = free > 0 && dsmem_conn_near(c, nid);
		if (near < best_near || (near == best_near && free <= most) ||
		    READ_ONCE(c->state) != DSMEM_CONN_UP)
			continue;
		rcu_read_lock();
		if (dsmem_rseg_lookup(c, remote)) {
			best = c;
			most = free;
			best_near = near;
		}
		rcu_read_unlock();
	}
	kref_get(&best->ref);
	return best;
}

/*
 * Where a request's buffer starts, in bytes from the first page of its
 * pinned memory: a task's own pins start at the buffer, a registration's
 * r->local bytes before it.
 */
static u64 dsmem_req_buf_pos(const struct dsmem_task_req *tr)
{
	const struct dsmem_umr *umr = tr->umr;

	return (umr->addr & ~PAGE_MASK) + tr->req.local -
	       (tr->own_umr ? umr->addr : 0);
}

/*
 * The NUMA node of a request's buffer, for a request of one slice: a
 * small transfer goes to a device near its memory.  A larger one is
 * striped over every path, near or not: the bandwidth of all of them is
 * worth more than the distance.
 */
static int dsmem_req_nid(const struct dsmem_task_req *tr)
{
	if (tr->req.len > DSMEM_SLICE_BYTES)
		return NUMA_NO_NODE;
	return page_to_nid(tr->umr->pages[dsmem_req_buf_pos(tr) >> PAGE_SHIFT]);
}

/* The up connection to the addressed node, cached per descriptor. */
static struct dsmem_conn *dsmem_file_conn(struct dsmem_xfer_file *file, u32 remote)
{
	struct dsmem_conn *conn = file->conn;

	if (conn && conn->remote_node == remote &&
	    READ_ONCE(conn->state) == DSMEM_CONN_UP) {
		kref_get(&conn->ref);
		return conn;
	}
	if (conn) {
		dsmem_file_paths_drop(file);
		file->conn = NULL;
		dsmem_conn_put(conn);
	}
	conn = dsmem_conn_lookup(file->node, remote);
	if (conn) {
		kref_get(&conn->ref);
		file->conn = conn;
	}
	return conn;
}

/*
 * SGEs for len bytes of the pinned memory from pos (dsmem_req_buf_pos);
 * returns the bytes covered.
 */
static u32 dsmem_umr_sges(struct dsmem_umr *umr, unsigned int ldev, u64 pos,
			  u32 len, struct ib_sge *sge, u32 max_sge, u32 lkey,
			  u32 *nsge)
{
	const u64 *pdma = umr->maps[ldev].dma;
	u32 done = 0, n = 0;

	while (done < len) {
		unsigned long pg = pos >> PAGE_SHIFT;
		u32 in = offset_in_page(pos);
		u32 chunk = min_t(u32, len - done, PAGE_SIZE - in);
		u64 dma = pdma[pg] + in;

		if (n && sge[n - 1].addr + sge[n - 1].length == dma) {
			sge[n - 1].length += chunk;
		} else {
			if (n == max_sge)
				break;
			sge[n].addr = dma;
			sge[n].length = chunk;
			sge[n].lkey = lkey;
			n++;
		}
		done += chunk;
		pos += chunk;
	}
	*nsge = n;
	return done;
}

/* A slice that was not posted: its request waits for one less. */
static void dsmem_slice_unpost(struct dsmem_conn *conn, struct ib_send_wr *wr)
{
	struct dsmem_slice *s = container_of(wr->wr_cqe, struct dsmem_slice,
					     cqe);

	/* the caller holds the request's posting count: never the last */
	atomic_dec(&s->task->reqs[s->req].slices);
	llist_add(&s->free, &s->conn->slice_free);
}

/*
 * A send-queue credit, the descriptor's lock let go while waiting for one
 * (its ioctls and its other submitters go on), and now and then without
 * a wait: a batch the peer keeps up with holds the lock no longer than
 * DSMEM_SLICES_PER_HOLD posts.  The node may die meanwhile;
 * dsmem_xfer_node_dead() unmapped our buffers then, and nothing more may
 * be posted from them.
 */
static int dsmem_xfer_credit(struct dsmem_xfer_file *file,
			     struct dsmem_conn *conn)
{
	int ret;

	lockdep_assert_held(&file->lock);
	if (++file->held_slices >= DSMEM_SLICES_PER_HOLD) {
		file->held_slices = 0;
		mutex_unlock(&file->lock);
		cond_resched();
		mutex_lock(&file->lock);
	}
	ret = dsmem_conn_wait_credit(conn, &conn->sq_free, &file->lock);
	if (!ret && file->dead) {
		dsmem_conn_put_credit(conn, &conn->sq_free);
		ret = -ENODEV;
	}
	return ret;
}

/*
 * Whether the caller's instant for tr has passed: then no more of it may
 * start (struct dsmem_ioc_submit.not_after_ns).  Once a slice is posted
 * it lands or fails within the connection's io_timeout_ms, so the caller
 * knows how long after that instant a write of its can still land.
 */
static bool dsmem_req_late(struct dsmem_xfer_file *file,
			   const struct dsmem_task_req *tr)
{
	if (!tr->not_after || ktime_get_boottime_ns() < tr->not_after)
		return false;
	dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_LATE);
	return true;
}

static int dsmem_xfer_post_slice(struct dsmem_task *task, u32 req,
				 struct dsmem_conn *conn, u64 off, u32 *lenp)
{
	struct dsmem_task_req *tr = &task->reqs[req];
	struct dsmem_xfer_req *r = &tr->req;
	u64 remote = r->remote + off;
	struct ib_sge sge[32];
	union dsmem_token qpt;
	struct dsmem_rseg *rs;
	struct dsmem_slice *s;
	union {
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} wr = {};
	u32 need, rkey, len, nsge, max_sge;
	u64 roff, span_end;
	int ret;

	need = r->opcode == DSMEM_XFER_READ ? DSMEM_PERM_READ : DSMEM_PERM_WRITE;

	/* first: the grant is looked up after any wait, never before */
	ret = dsmem_xfer_credit(task->file, conn);
	if (ret)
		return ret;
	/* and the clock read after it too: the wait may have been long */
	if (dsmem_req_late(task->file, tr)) {
		ret = -ETIMEDOUT;
		goto err_put_credit;
	}

	/*
	 * The QP's context, as a NIC fetches it per work request; and the
	 * buffer's map for the device, which has none once the device was
	 * marked gone (its connections close next).
	 */
	ret = dsmem_tc_resolve(conn->tc_qp, DSMEM_TRACE_MODIFY, &qpt);
	if (ret || qpt.qp.state != IB_QPS_RTS ||
	    !tr->umr->maps[conn->ldev].ibdev) {
		dsmem_stat_inc(dsmem_file_net(task->file), DSMEM_STAT_XFER_NOCONN);
		ret = -ENOTCONN;
		goto err_put_credit;
	}

	rcu_read_lock();
	rs = dsmem_rseg_lookup(conn, r->remote);
	if (!rs) {
		rcu_read_unlock();
		/* a closing connection's grants go before it does */
		if (READ_ONCE(conn->state) != DSMEM_CONN_UP) {
			dsmem_stat_inc(dsmem_file_net(task->file), DSMEM_STAT_XFER_NOCONN);
			ret = -ECONNRESET;
			goto err_put_credit;
		}
		dsmem_stat_inc(dsmem_file_net(task->file), DSMEM_STAT_XFER_DENIED);
		ret = -EACCES;
		goto err_put_credit;
	}
	roff = r->remote - rs->base;
	if (roff >= rs->size || r->len > rs->size - roff) {
		rcu_read_unlock();
		dsmem_stat_inc(dsmem_file_net(task->file), DSMEM_STAT_XFER_RANGE);
		ret = -ERANGE;
		goto err_put_credit;
	}
	if ((rs->perm & need) != need) {
		rcu_read_unlock();
		dsmem_stat_inc(dsmem_file_net(task->file), DSMEM_STAT_XFER_DENIED);
		ret = -EACCES;
		goto err_put_credit;
	}
	if (!rs->nkeys) {
		/* page-table segments are reached by messages only */
		rcu_read_unlock();
		ret = -EOPNOTSUPP;
		goto err_put_credit;
	}
	roff += off;
	rkey = rs->rkeys[roff / rs->span];
	span_end = (roff / rs->span + 1) * rs->span;
	rcu_read_unlock();

	len = min_t(u64, r->len - off, DSMEM_SLICE_BYTES);
	len = min_t(u64, len, span_end - roff);
	max_sge = min_t(u32, ARRAY_SIZE(sge),
			dsmem_conn_max_sge(conn, r->opcode == DSMEM_XFER_READ));
	len = dsmem_umr_sges(tr->umr, conn->ldev, dsmem_req_buf_pos(tr) + off,
			     len, sge, max_sge, conn->lkey, &nsge);

	/* consumers serialise; completions push back without the lock */
	spin_lock(&conn->slice_lock);
	s = llist_entry(llist_del_first(&conn->slice_free), struct dsmem_slice,
			free);
	spin_unlock(&conn->slice_lock);
	s->task = task;
	s->req = req;
	s->len = len;

	switch (r->opcode) {
	case DSMEM_XFER_READ:
	case DSMEM_XFER_WRITE:
		wr.rdma.wr.opcode = r->opcode == DSMEM_XFER_READ ?
				    IB_WR_RDMA_READ : IB_WR_RDMA_WRITE;
		wr.rdma.remote_addr = remote;
		wr.rdma.rkey = rkey;
		break;
	case DSMEM_XFER_CAS:
		wr.atomic.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
		wr.atomic.remote_addr = remote;
		wr.atomic.rkey = rkey;
		wr.atomic.compare_add = r->compare_add;
		wr.atomic.swap = r->swap;
		break;
	default:
		wr.atomic.wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
		wr.atomic.remote_addr = remote;
		wr.atomic.rkey = rkey;
		wr.atomic.compare_add = r->compare_add;
		break;
	}
	wr.rdma.wr.wr_cqe = &s->cqe;
	wr.rdma.wr.sg_list = sge;
	wr.rdma.wr.num_sge = nsge;
	wr.rdma.wr.send_flags = IB_SEND_SIGNALED;

	atomic_inc(&tr->slices);
	ret = dsmem_conn_post(conn, &wr.rdma.wr, &conn->sq_free, DSMEM_CONN_UP,
			      NULL, dsmem_slice_unpost);
	if (ret)
		return ret;	/* the post gave the credit back */
	dsmem_stat_inc(dsmem_file_net(task->file), DSMEM_STAT_XFER_SLICES);
	*lenp = len;
	return 0;

err_put_credit:
	dsmem_conn_put_credit(conn, &conn->sq_free);
	return ret;
}

static int dsmem_xfer_check(struct dsmem_xfer_file *file, struct dsmem_task_req *tr)
{
	struct dsmem_xfer_req *r = &tr->req;
	bool atomic = r->opcode == DSMEM_XFER_CAS || r->opcode == DSMEM_XFER_FAA;
	bool into_local = r->opcode != DSMEM_XFER_WRITE;
	union dsmem_token mrt;
	struct dsmem_umr *umr;

	if (r->opcode > DSMEM_XFER_OP_MAX || r->flags & ~DSMEM_XFER_F_ALL ||
	    r->__pad)
		return -EINVAL;
	if (!r->len || r->len > DSMEM_MR_LEN_MAX ||
	    r->remote + r->len < r->remote)
		return -EINVAL;
	if (atomic && (r->len != 8 || r->remote % 8 || r->local % 8))
		return -EINVAL;
	if (!r->mr) {
		umr = dsmem_umr_get(file->node, r->local, r->len,
				    into_local);
		if (IS_ERR(umr))
			return PTR_ERR(umr);
		tr->umr = umr;
		tr->own_umr = true;
		return 0;
	}
	umr = xa_load(&file->mrs, r->mr);
	if (!umr)
		return -ENOENT;
	if (r->local >= umr->len || r->len > umr->len - r->local)
		return -ERANGE;
	/* the registration's access flags, from its token */
	if (dsmem_tc_resolve(umr->tc_mr, DSMEM_TRACE_READ, &mrt))
		return -ENOENT;
	if (into_local && !(mrt.mr.access_flags & IB_ACCESS_LOCAL_WRITE))
		return -EACCES;
	atomic_inc(&umr->users);
	tr->umr = umr;
	return 0;
}

static bool local_path = true;
module_param(local_path, bool, 0644);
MODULE_PARM_DESC(local_path,
		 "Copy reads and writes of this node's own segments rather than loop them back through the device (default: Y)");

/*
 * A read or write of one of our own segments is a copy, as the segment's
 * grant to this node allows: an RDMA loopback would cost the device's
 * whole path for the same bytes.  The checks are the remote path's, in
 * its order, on the segment instead of its grant's announcement.
 */
static int dsmem_xfer_local(struct dsmem_xfer_file *file,
			    struct dsmem_task_req *tr)
{
	struct dsmem_xfer_req *r = &tr->req;
	bool to_seg = r->opcode == DSMEM_XFER_WRITE;
	u32 need = to_seg ? DSMEM_PERM_WRITE : DSMEM_PERM_READ;
	struct dsmem_node *node = file->node;
	u64 pos, off, done = 0;
	struct dsmem_seg *seg;
	u32 perm = 0;
	int ret = 0;

	lockdep_assert_held(&file->lock);
	seg = dsmem_seg_by_addr(node, r->remote);
	if (seg)
		perm = dsmem_seg_perm(seg, node->id);
	/* no segment and no grant look alike, as they do from afar */
	if (!perm) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_DENIED);
		ret = -EACCES;
		goto out_put_seg;
	}
	off = r->remote - seg->base;
	if (r->remote < seg->base || off >= seg->size ||
	    r->len > seg->size - off) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_RANGE);
		ret = -ERANGE;
		goto out_put_seg;
	}
	if ((perm & need) != need) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_DENIED);
		ret = -EACCES;
		goto out_put_seg;
	}
	/* page-table segments are reached by messages only, here too */
	if (seg->translate == DSMEM_TRANSLATE_PAGES) {
		ret = -EOPNOTSUPP;
		goto out_put_seg;
	}

	/*
	 * The copy needs neither the descriptor's lock nor the buffer's DMA
	 * mapping: the pages are pinned for the task, or kept by the
	 * registration's users count, and the segment by our reference.  So
	 * a long copy holds up no other call of the descriptor, nor the
	 * node's teardown.  It goes a MiB at a time under the segment's
	 * copy_sem, the grant checked again for each: a revoke or a narrower
	 * grant waits for the MiB under way, and the next one sees it.
	 */
	mutex_unlock(&file->lock);
	pos = dsmem_req_buf_pos(tr);
	while (done < r->len && !ret) {
		down_read(&seg->copy_sem);
		if ((dsmem_seg_perm(seg, node->id) & need) != need) {
			up_read(&seg->copy_sem);
			dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_DENIED);
			ret = -EACCES;
			break;
		}
		/* a copy lands as it goes: each MiB starts in time or not */
		if (dsmem_req_late(file, tr)) {
			up_read(&seg->copy_sem);
			ret = -ETIMEDOUT;
			break;
		}
		do {
			struct page *page = tr->umr->pages[pos >> PAGE_SHIFT];
			u32 in = offset_in_page(pos);
			u32 n = min_t(u64, r->len - done, PAGE_SIZE - in);
			void *kaddr = kmap_local_page(page);

			/* in range, checked above: it cannot fail */
			ret = dsmem_seg_access(seg, r->remote + done, kaddr + in,
					       n, to_seg);
			kunmap_local(kaddr);
			if (ret)
				break;
			if (!to_seg)
				flush_dcache_page(page);
			done += n;
			pos += n;
		} while (done < r->len && (pos & (SZ_1M - 1)));
		up_read(&seg->copy_sem);
		if (done < r->len) {
			if (fatal_signal_pending(current))
				ret = -EINTR;
			cond_resched();
		}
	}
	mutex_lock(&file->lock);
	atomic64_set(&tr->bytes, done);
	dsmem_stat_add(dsmem_file_net(file), DSMEM_STAT_XFER_BYTES, done);
	dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_LOCAL);
out_put_seg:
	if (seg)
		dsmem_seg_put(seg);
	return ret;
}

/*
 * Whether a request to our own node may be a copy.  Atomics keep the
 * loopback: the device's are atomic against each other only
 * (IB_ATOMIC_HCA), not against the CPU's.  And while any request of the
 * descriptor is on the loopback, the next ones follow it there: they
 * would pass it as copies, and the device keeps one QP's requests in
 * order (a CAS that takes a lock, then a READ of what it guards, in one
 * batch: the B+tree's).
 */
static bool dsmem_xfer_is_local(struct dsmem_xfer_file *file,
				struct dsmem_task_req *tr)
{
	if (DSMEM_GADDR_NODE(tr->req.remote) != file->node->id)
		return false;
	if (READ_ONCE(local_path) && !atomic_read(&file->looped) &&
	    (tr->req.opcode == DSMEM_XFER_READ ||
	     tr->req.opcode == DSMEM_XFER_WRITE))
		return true;
	tr->looped = true;
	atomic_inc(&file->looped);
	return false;
}

/*
 * Post a checked remote request's slices: all on the first connection to
 * its node, or, unordered, each on the path with the most room.  A path
 * found closing as a slice is posted leaves the rest to the first
 * connection, whose close would take the paths with it.
 */
static int dsmem_xfer_post_req(struct dsmem_xfer_file *file,
			       struct dsmem_task *task, u32 i)
{
	struct dsmem_task_req *tr = &task->reqs[i];
	struct dsmem_conn *conn, *path;
	bool unordered;
	u64 off = 0;
	u32 len;
	int ret = 0, nid = NUMA_NO_NODE;

	conn = dsmem_file_conn(file, DSMEM_GADDR_NODE(tr->req.remote));
	if (!conn) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_NOCONN);
		return -ENOTCONN;
	}
	/*
	 * Atomics keep to the first connection: a device's atomics are
	 * atomic only against its own (IB_ATOMIC_HCA), and one 8-byte slice
	 * gains nothing from another path.
	 */
	unordered = tr->req.flags & DSMEM_XFER_F_UNORDERED &&
		    (tr->req.opcode == DSMEM_XFER_READ ||
		     tr->req.opcode == DSMEM_XFER_WRITE);
	if (unordered) {
		dsmem_file_paths(file, conn);
		if (file->npaths)
			nid = dsmem_req_nid(tr);
	}
	while (off < tr->req.len) {
		/* counted: the wait for a credit lets the file's lock go */
		path = unordered && file->npaths ?
		       dsmem_file_pick(file, conn, tr->req.remote + off, nid) :
		       NULL;
		ret = dsmem_xfer_post_slice(task, i, path ?: conn, off, &len);
		if (path && path != conn) {
			if (!ret)
				dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_PATH_SLICES);
			if (ret == -ENOTCONN || ret == -ECONNRESET) {
				unordered = false;
				ret = 0;
				len = 0;
			}
		}
		if (path)
			dsmem_conn_put(path);
		if (ret)
			break;
		off += len;
	}
	dsmem_conn_put(conn);
	return ret;
}

/* Start one transfer; its status says why it could not. */
void dsmem_xfer_start(struct dsmem_xfer_file *file, struct dsmem_task *task,
		      u32 i)
{
	struct dsmem_task_req *tr = &task->reqs[i];
	int ret;

	dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_REQS);
	atomic_set(&tr->slices, 1);
	/* an earlier request's wait for credits may have seen the node die */
	ret = dsmem_file_usable(file);
	if (ret)
		goto out;
	ret = dsmem_xfer_check(file, tr);
	if (ret) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_BAD);
		goto out;
	}
	if (dsmem_xfer_is_local(file, tr))
		ret = dsmem_xfer_local(file, tr);
	else
		ret = dsmem_xfer_post_req(file, task, i);
out:
	if (ret)
		cmpxchg(&tr->status, 0, ret);
	dsmem_req_put(task, i);
}

/*
 * Run a request again whose slices on a path were lost with it.  READ
 * and WRITE may be repeated: the request has not completed, so nobody
 * could have relied on what its first run did.  Its buffer is still
 * pinned and mapped for its task, unless the node died (file->dead).
 */
static void dsmem_xfer_failover_one(struct dsmem_xfer_file *file,
				    struct dsmem_task *task, u32 i)
{
	struct dsmem_task_req *tr = &task->reqs[i];
	int ret;

	dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_XFER_FAILOVER);
	tr->failover = false;
	tr->failovers++;
	atomic64_set(&tr->bytes, 0);
	atomic_set(&tr->slices, 1);
	mutex_lock(&file->lock);
	ret = dsmem_file_usable(file);
	if (!ret)
		ret = dsmem_xfer_post_req(file, task, i);
	mutex_unlock(&file->lock);
	if (ret)
		cmpxchg(&tr->status, 0, ret);
	dsmem_req_put(task, i);
}

static void dsmem_xfer_failover_work(struct work_struct *work)
{
	struct dsmem_xfer_file *file = container_of(work, struct dsmem_xfer_file,
						    failover_work);
	struct llist_node *list = llist_reverse_order(llist_del_all(&file->failover));
	struct dsmem_task_req *tr, *next;

	llist_for_each_entry_safe(tr, next, list, failover_link) {
		struct dsmem_task *task = tr->task;

		/* the task may be gone once the request is done */
		tr->task = NULL;
		dsmem_xfer_failover_one(file, task, tr - task->reqs);
		/* the entry's: the next one, if any, still holds another */
		dsmem_file_put(file);
	}
}

/*
 * Its own queue: the worker waits for file->lock and for send credits,
 * which only a connection's keepalive (a dsmem_wq work) may end.
 */
static struct workqueue_struct *dsmem_failover_wq;

/*
 * From the last slice's completion (softirq) or a submitter: posting
 * again may wait for credits, so a worker does it.  The request is not
 * done meanwhile, so its task is neither forgotten nor freed (a batch's
 * stays in file->tasks, a ring's lives as long as its ring), and the
 * descriptor's release waits for it, then for the work itself.  The
 * file's reference keeps the worker's file past the request's end.
 */
static void dsmem_req_failover(struct dsmem_task *task, u32 req)
{
	struct dsmem_task_req *tr = &task->reqs[req];
	struct dsmem_xfer_file *file = task->file;

	tr->task = task;
	kref_get(&file->ref);
	llist_add(&tr->failover_link, &file->failover);
	queue_work(dsmem_failover_wq, &file->failover_work);
}

int dsmem_xfer_init(void)
{
	dsmem_failover_wq = alloc_workqueue("dsmem_failover",
					    WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return dsmem_failover_wq ? 0 : -ENOMEM;
}

/* After the last descriptor's release, which flushed its work. */
void dsmem_xfer_exit(void)
{
	destroy_workqueue(dsmem_failover_wq);
}

int dsmem_xfer_open(struct dsmem_xfer_file **filep)
{
	struct dsmem_xfer_file *file = kzalloc(sizeof(*file), GFP_KERNEL);

	if (!file)
		return -ENOMEM;
	kref_init(&file->ref);
	mutex_init(&file->lock);
	INIT_LIST_HEAD(&file->node_link);
	xa_init_flags(&file->mrs, XA_FLAGS_ALLOC1);
	xa_init_flags(&file->tasks, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&file->poll_wq);
	file->paths_gen = -1;	/* no snapshot of paths yet */
	init_llist_head(&file->failover);
	INIT_WORK(&file->failover_work, dsmem_xfer_failover_work);
	*filep = file;
	return 0;
}

static void dsmem_file_free(struct kref *ref)
{
	struct dsmem_xfer_file *file = container_of(ref, struct dsmem_xfer_file, ref);

	/*
	 * Emptied by dsmem_xfer_release(), so an empty xarray has no node to
	 * free, and no xa_destroy(): the last put may be a completion's, in
	 * softirq, where its xa_lock must not be taken (the ioctls take it
	 * with softirqs on).
	 */
	WARN_ON_ONCE(!xa_empty(&file->tasks) || !xa_empty(&file->mrs));
	kfree(file);
}

static void dsmem_file_put(struct dsmem_xfer_file *file)
{
	kref_put(&file->ref, dsmem_file_free);
}

/* Forget a done task; under file->lock. */
static void dsmem_task_forget(struct dsmem_xfer_file *file, struct dsmem_task *task)
{
	lockdep_assert_held(&file->lock);
	/* two callers may race to forget one task: one wins, one put */
	if (xa_erase(&file->tasks, task->id) != task)
		return;
	atomic_dec(&file->ntasks);
	atomic_dec(&file->ndone);
	dsmem_task_unmap(task);
	dsmem_task_put(task);
}

/* Under file->lock. */
static void dsmem_file_detach(struct dsmem_xfer_file *file)
{
	struct dsmem_node *node = file->node;

	spin_lock(&node->file_lock);
	list_del_init(&file->node_link);
	spin_unlock(&node->file_lock);
	if (file->conn) {
		dsmem_file_paths_drop(file);
		dsmem_conn_put(file->conn);
		file->conn = NULL;
	}
}

void dsmem_xfer_release(struct dsmem_xfer_file *file)
{
	struct dsmem_task *task;
	struct dsmem_umr *umr;
	unsigned long i;

	/*
	 * In-flight transfers end: completed, or flushed by a close.  No
	 * ioctl runs any more and dsmem_xfer_node_dead() removes no task, so
	 * the table holds still while we wait without the lock.
	 */
	xa_for_each(&file->tasks, i, task)
		wait_for_completion(&task->done);
	/* no mapping is left: the release comes after the last munmap */
	if (file->ring)
		dsmem_ring_destroy(file->ring);
	/*
	 * Every request is done, so none is queued to run again; but the
	 * work that ran the last may still be queued or running.
	 */
	flush_work(&file->failover_work);

	mutex_lock(&file->lock);
	xa_for_each(&file->tasks, i, task)
		dsmem_task_forget(file, task);
	xa_for_each(&file->mrs, i, umr) {
		xa_erase(&file->mrs, i);
		dsmem_umr_free(umr);
		atomic_dec(&file->node->user_mrs);
	}
	if (file->node)
		dsmem_file_detach(file);
	mutex_unlock(&file->lock);

	if (file->node)
		dsmem_node_put(file->node);
	dsmem_file_put(file);
}

/*
 * The node is going, and its device may go right after: unmap every pin
 * of its files now, registered and tasks' own alike, so that nothing
 * touches the device later.  Its connections are drained, so no transfer
 * is in flight.
 */
void dsmem_xfer_node_dead(struct dsmem_node *node)
{
	struct dsmem_xfer_file *file;
	struct dsmem_task *task;
	struct dsmem_umr *umr;
	unsigned long i;

	for (;;) {
		spin_lock(&node->file_lock);
		file = list_first_entry_or_null(&node->files, struct dsmem_xfer_file,
						node_link);
		/* the descriptor may be closed once we unlock */
		if (file)
			kref_get(&file->ref);
		spin_unlock(&node->file_lock);
		if (!file)
			return;
		mutex_lock(&file->lock);
		file->dead = true;
		xa_for_each(&file->mrs, i, umr)
			dsmem_umr_unmap(umr);
		/*
		 * A task may be incomplete only in its submitter or the
		 * failover worker, which wait for this lock to start the
		 * rest; they see ->dead and post no more.
		 */
		xa_for_each(&file->tasks, i, task)
			dsmem_task_unmap(task);
		if (file->conn) {
			dsmem_file_paths_drop(file);
			dsmem_conn_put(file->conn);
			file->conn = NULL;
		}
		/*
		 * Listed until unmapped: one of the node's devices going
		 * meanwhile finds it, and waits for this lock
		 * (dsmem_xfer_node_dev_gone).
		 */
		spin_lock(&node->file_lock);
		list_del_init(&file->node_link);
		spin_unlock(&node->file_lock);
		mutex_unlock(&file->lock);
		dsmem_file_put(file);
	}
}

/*
 * One of the node's devices is gone, and its connections with it: every
 * file's pins, registered and tasks' own, lose their map for its slot.
 * Each file is done once (devs_gone), under its lock, the lock buffers
 * are mapped under: one mapped before is unmapped here, one mapped after
 * sees the slot gone.
 */
void dsmem_xfer_node_dev_gone(struct dsmem_node *node, unsigned int slot)
{
	struct dsmem_xfer_file *file, *found;
	struct dsmem_task *task;
	struct dsmem_umr *umr;
	unsigned long i;
	u32 r;

	do {
		found = NULL;
		spin_lock(&node->file_lock);
		list_for_each_entry(file, &node->files, node_link) {
			if (!test_bit(slot, &file->devs_gone)) {
				kref_get(&file->ref);
				found = file;
				break;
			}
		}
		spin_unlock(&node->file_lock);
		if (!found)
			break;
		mutex_lock(&found->lock);
		xa_for_each(&found->mrs, i, umr)
			dsmem_umr_unmap_slot(umr, slot);
		xa_for_each(&found->tasks, i, task)
			for (r = 0; r < task->nr; r++)
				if (task->reqs[r].own_umr)
					dsmem_umr_unmap_slot(task->reqs[r].umr,
							     slot);
		set_bit(slot, &found->devs_gone);
		mutex_unlock(&found->lock);
		dsmem_file_put(found);
	} while (found);
}

__poll_t dsmem_xfer_poll(struct dsmem_xfer_file *file, struct file *filp,
			 poll_table *wait)
{
	poll_wait(filp, &file->poll_wq, wait);
	/*
	 * Our entry on poll_wq before the loads below: a ring completion
	 * wakes only when wq_has_sleeper() sees a sleeper.
	 */
	smp_mb();
	if (atomic_read(&file->ndone) || dsmem_ring_pollin(file))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

/* Under file->lock: attached to a node that is still there. */
int dsmem_file_usable(struct dsmem_xfer_file *file)
{
	if (!file->node)
		return -ENOTCONN;
	if (file->dead)
		return -ENODEV;
	return 0;
}

int dsmem_xfer_attach(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_attach *a = arg;
	struct dsmem_node *node;
	int ret = 0;

	if (a->flags)
		return -EINVAL;
	node = dsmem_node_get(a->node_id, current->nsproxy->net_ns);
	if (!node)
		return -ENOENT;
	/* before file->lock: it takes the node's lock */
	ret = dsmem_node_may_attach(node);
	if (ret) {
		dsmem_node_put(node);
		return ret;
	}
	mutex_lock(&file->lock);
	if (file->node) {
		dsmem_node_put(node);
		ret = -EBUSY;
		goto out;
	}
	spin_lock(&node->file_lock);
	if (node->dead) {
		spin_unlock(&node->file_lock);
		dsmem_node_put(node);
		ret = -ENOENT;
		goto out;
	}
	list_add_tail(&file->node_link, &node->files);
	spin_unlock(&node->file_lock);
	WRITE_ONCE(file->node, node);
out:
	mutex_unlock(&file->lock);
	return ret;
}

static unsigned int node_mrs = DSMEM_NODE_MRS;
module_param(node_mrs, uint, 0644);
MODULE_PARM_DESC(node_mrs,
		 "Registrations the descriptors of one node may hold together (default: 8192)");

/*
 * Take one of the node's registrations: false, counted, when it has all it
 * may have.  The token cache's indexes are the host's, shared by every
 * tenant; this is each node's share.
 */
static bool dsmem_xfer_mr_charge(struct dsmem_node *node)
{
	if (atomic_inc_return(&node->user_mrs) <= READ_ONCE(node_mrs))
		return true;
	atomic_dec(&node->user_mrs);
	dsmem_stat_inc(node->net, DSMEM_STAT_MR_NODE_FULL);
	return false;
}

int dsmem_xfer_mr_reg(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_mr_reg *a = arg;
	struct dsmem_umr *umr;
	u32 handle;
	int ret;

	if (a->flags & ~DSMEM_MR_FLAGS_ALL || a->handle)
		return -EINVAL;
	if (!a->len || a->len > DSMEM_MR_LEN_MAX)
		return -EINVAL;
	mutex_lock(&file->lock);
	ret = dsmem_file_usable(file);
	if (ret)
		goto out;
	if (!dsmem_xfer_mr_charge(file->node)) {
		ret = -ENOSPC;
		goto out;
	}
	umr = dsmem_umr_get(file->node, a->addr, a->len,
			    a->flags & DSMEM_MR_WRITABLE);
	if (IS_ERR(umr)) {
		ret = PTR_ERR(umr);
		goto err_uncharge;
	}
	ret = xa_alloc(&file->mrs, &handle, umr, xa_limit_31b,
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		dsmem_umr_free(umr);
		goto err_uncharge;
	}
	ret = dsmem_tc_add_mr(0, umr->writable ? IB_ACCESS_LOCAL_WRITE : 0,
			      umr->npages, file->node->net, file->node->id,
			      DSMEM_TC_USER_MR, handle, 0, &umr->tc_mr);
	if (ret) {
		dsmem_umr_free(xa_erase(&file->mrs, handle));
		goto err_uncharge;
	}
	a->handle = handle;
	mutex_unlock(&file->lock);
	return 0;

err_uncharge:
	atomic_dec(&file->node->user_mrs);
out:
	mutex_unlock(&file->lock);
	return ret;
}

int dsmem_xfer_mr_dereg(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_mr_dereg *a = arg;
	struct dsmem_umr *umr;
	int ret = 0;

	if (a->__pad)
		return -EINVAL;
	mutex_lock(&file->lock);
	umr = xa_load(&file->mrs, a->handle);
	if (!umr) {
		ret = -ENOENT;
	} else if (atomic_read(&umr->users)) {
		ret = -EBUSY;
	} else {
		dsmem_umr_free(xa_erase(&file->mrs, a->handle));
		/* registered only while attached; the node stays with us */
		atomic_dec(&file->node->user_mrs);
	}
	mutex_unlock(&file->lock);
	return ret;
}

static int dsmem_task_first_error(struct dsmem_task *task)
{
	u32 i;

	for (i = 0; i < task->nr; i++)
		if (READ_ONCE(task->reqs[i].status))
			return READ_ONCE(task->reqs[i].status);
	return 0;
}

/*
 * A small synchronous batch completes within microseconds: wait for it the
 * way a user-space verbs program does, by polling, and run the softirqs
 * it needs (a software device's tasklets, the CQ's irq_poll) here rather
 * than paying for a sleep and a wake-up.  Bounded, and by the caller's
 * deadline too; then we sleep.
 */
static void dsmem_task_spin(struct dsmem_task *task, u64 deadline)
{
	u64 end = min(ktime_get_ns() + DSMEM_SPIN_NS, deadline);
	unsigned int turn = 0;

	/* the clock every 16 turns: a device clocksource's read is dear */
	while (!READ_ONCE(task->is_done) && !need_resched() &&
	       !signal_pending(current) &&
	       (++turn % 16 || ktime_get_ns() < end)) {
		local_bh_disable();
		local_bh_enable();	/* runs pending softirqs */
		cpu_relax();
	}
}

/*
 * Wait for a task until deadline (ktime_get_ns(); U64_MAX: no bound):
 * whether it is done.  Uninterruptible either way: a transfer always
 * ends, by completion or by a flush, and a caller that gave up on it
 * still has its buffers in the task until then.
 */
static bool dsmem_task_wait(struct dsmem_task *task, u64 deadline)
{
	u64 now;

	if (deadline == U64_MAX) {
		wait_for_completion(&task->done);
		return true;
	}
	while (!completion_done(&task->done)) {
		now = ktime_get_ns();
		if (now >= deadline)
			return false;
		/* a tick more, so that it never ends before the deadline */
		wait_for_completion_timeout(&task->done,
					    min_t(u64, MAX_JIFFY_OFFSET,
						  nsecs_to_jiffies64(deadline - now) + 1));
	}
	return true;
}

int dsmem_xfer_submit(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_submit *a = arg;
	u64 __user *ureqs = u64_to_user_ptr(a->reqs);
	u64 deadline = U64_MAX;
	struct dsmem_task *task;
	u32 i, id;
	int ret;

	if (a->flags & ~DSMEM_SUBMIT_FLAGS_ALL || a->result || a->task)
		return -EINVAL;
	if ((a->flags & DSMEM_SUBMIT_RELEASE) && !(a->flags & DSMEM_SUBMIT_WAIT))
		return -EINVAL;
	if (a->timeout_ns && !(a->flags & DSMEM_SUBMIT_WAIT))
		return -EINVAL;
	/* counted from here: pinning the batch's buffers is part of it */
	if (a->timeout_ns &&
	    check_add_overflow(ktime_get_ns(), a->timeout_ns, &deadline))
		deadline = U64_MAX;
	if (!a->nr || a->nr > DSMEM_SUBMIT_REQS_MAX)
		return -EINVAL;
	if (a->req_size < sizeof(struct dsmem_xfer_req) ||
	    a->req_size > PAGE_SIZE)
		return -EINVAL;

	task = kvzalloc(struct_size(task, reqs, a->nr), GFP_KERNEL_ACCOUNT);
	if (!task)
		return -ENOMEM;
	kref_init(&task->ref);
	task->file = file;
	task->nr = a->nr;
	init_completion(&task->done);
	atomic_set(&task->pending, a->nr + 1);
	for (i = 0; i < a->nr; i++) {
		ret = copy_struct_from_user(&task->reqs[i].req,
					    sizeof(task->reqs[i].req),
					    (u8 __user *)ureqs +
					    (size_t)i * a->req_size,
					    a->req_size);
		if (ret)
			goto err_free_task;
		task->reqs[i].not_after = a->not_after_ns;
	}

	mutex_lock(&file->lock);
	ret = dsmem_file_usable(file);
	if (ret)
		goto err_unlock;
	if (atomic_inc_return(&file->ntasks) > DSMEM_TASKS_MAX) {
		atomic_dec(&file->ntasks);
		ret = -EAGAIN;
		goto err_unlock;
	}
	ret = xa_alloc_cyclic(&file->tasks, &id, task, xa_limit_31b,
			      &file->next_task, GFP_KERNEL);
	if (ret < 0) {
		atomic_dec(&file->ntasks);
		goto err_unlock;
	}
	task->id = id;
	dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_TASKS);
	for (i = 0; i < task->nr; i++)
		dsmem_xfer_start(file, task, i);
	if (atomic_dec_and_test(&task->pending))
		dsmem_task_finish(task);
	a->task = id;

	if (a->flags & DSMEM_SUBMIT_WAIT) {
		/*
		 * Ours while we wait: the id is out, and a TASK call with
		 * RELEASE on it may forget the task as soon as it is done.
		 */
		kref_get(&task->ref);
		mutex_unlock(&file->lock);
		/* transfers always end: by completion or by a flush */
		if (task->nr <= DSMEM_SPIN_REQS_MAX)
			dsmem_task_spin(task, deadline);
		if (!dsmem_task_wait(task, deadline)) {
			/*
			 * Given up on, not forgotten: its transfers still
			 * use their buffers, and the caller releases it by
			 * its id once it is done.
			 */
			a->result = -ETIME;
			dsmem_task_put(task);
			return 0;
		}
		a->result = dsmem_task_first_error(task);
		if (a->flags & DSMEM_SUBMIT_RELEASE) {
			mutex_lock(&file->lock);
			dsmem_task_forget(file, task);
			mutex_unlock(&file->lock);
			a->task = 0;
		}
		dsmem_task_put(task);
		return 0;
	}
	mutex_unlock(&file->lock);
	return 0;

err_unlock:
	mutex_unlock(&file->lock);
err_free_task:
	kvfree(task);
	return ret;
}

int dsmem_xfer_task(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_task *a = arg;
	struct dsmem_xfer_status __user *ust = u64_to_user_ptr(a->status);
	struct dsmem_task *task;
	u32 i, n;
	int ret = 0;

	if (a->flags & ~DSMEM_TASK_FLAGS_ALL || a->state || a->done || a->bytes)
		return -EINVAL;
	if (a->task > U32_MAX)
		return -ENOENT;

	mutex_lock(&file->lock);
	task = xa_load(&file->tasks, a->task);
	if (task)
		kref_get(&task->ref);
	mutex_unlock(&file->lock);
	if (!task)
		return -ENOENT;
	if (a->nr > task->nr) {
		ret = -EINVAL;
		goto out;
	}

	if ((a->flags & DSMEM_TASK_WAIT) &&
	    wait_for_completion_interruptible(&task->done)) {
		ret = -EINTR;
		goto out;
	}
	a->done = atomic_read(&task->done_reqs);
	for (i = 0; i < task->nr; i++)
		a->bytes += atomic64_read(&task->reqs[i].bytes);
	/*
	 * Under the completion's lock: a task seen done here is no longer
	 * touched by its finisher, so it may be released below.
	 */
	if (!completion_done(&task->done)) {
		a->state = DSMEM_TASK_PENDING;
		goto out;
	}
	a->state = dsmem_task_first_error(task) ? DSMEM_TASK_FAILED :
						  DSMEM_TASK_COMPLETE;
	n = ust ? a->nr : 0;
	for (i = 0; i < n; i++) {
		struct dsmem_xfer_status st = {
			.status = READ_ONCE(task->reqs[i].status),
			.bytes = atomic64_read(&task->reqs[i].bytes),
		};

		if (copy_to_user(&ust[i], &st, sizeof(st))) {
			ret = -EFAULT;
			goto out;
		}
	}
	if (a->flags & DSMEM_TASK_RELEASE) {
		mutex_lock(&file->lock);
		dsmem_task_forget(file, task);
		mutex_unlock(&file->lock);
	}
out:
	dsmem_task_put(task);
	return ret;
}

/* The attached node, counted: for calls that must not hold file->lock. */
struct dsmem_node *dsmem_xfer_node_get(struct dsmem_xfer_file *file)
{
	struct dsmem_node *node = NULL;

	mutex_lock(&file->lock);
	if (!dsmem_file_usable(file)) {
		node = file->node;
		kref_get(&node->ref);
	}
	mutex_unlock(&file->lock);
	return node;
}
