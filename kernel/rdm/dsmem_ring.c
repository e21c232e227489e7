// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the data path's shared rings -- submissions and completions in
 * memory the program maps, so that steady-state transfers cost it no
 * system call (include/uapi/linux/dsmem.h has the protocol).
 *
 * A kernel thread per ring consumes the submission ring, polling while
 * there is work and for idle_us after, then sleeping until
 * DSMEM_IOC_RING_ENTER wakes it, as io_uring's SQPOLL does.  Each entry
 * becomes one transfer of a long-lived task whose requests are the ring's
 * slots; a slot's last completion writes the completion entry from the
 * CQ handler and frees the slot.  An entry is taken only with a slot and
 * room for its completion, so nothing is allocated per operation and the
 * completion ring cannot overflow.
 *
 * Everything in the rings is the program's and may change under us: an
 * index is read once and clamped, an entry is copied once and only the
 * copy is checked and used.
 */
#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dsmem_rdm.h"
#include "dsmem_xfer.h"

/*
 * How many rings may be live at once, machine-wide.  An active ring keeps
 * two CPUs busy, its thread polling the SQ and its program spinning on
 * the CQ, and on a software device the transfers' own work needs CPU
 * too; a ring beyond this is refused and its program keeps the ioctl
 * path, which waits in the kernel doing that work.  Default: a quarter of
 * the online CPUs, so none below four (measured, docs/data-path.md).
 */
static int ring_threads = -1;
module_param(ring_threads, int, 0644);
MODULE_PARM_DESC(ring_threads,
		 "shared rings (each with a polling thread) live at once; -1: a quarter of the online CPUs");

/*
 * And how many of those one node's descriptors may hold, so that on a
 * host whose nodes are tenants' one tenant's programs leave the others
 * theirs.  Default: all of the host's -- a program refused a ring keeps
 * the ioctl path, slower, not stopped -- for an admin with tenants to
 * narrow.
 */
static int node_rings = -1;
module_param(node_rings, int, 0644);
MODULE_PARM_DESC(node_rings,
		 "shared rings one node's descriptors may hold at once; -1: as many as ring_threads");

static atomic_t dsmem_rings_live = ATOMIC_INIT(0);

static int dsmem_ring_threads_max(void)
{
	int n = READ_ONCE(ring_threads);

	return n >= 0 ? n : num_online_cpus() / 4;
}

static int dsmem_ring_node_max(void)
{
	int n = READ_ONCE(node_rings);

	return n >= 0 ? n : dsmem_ring_threads_max();
}

struct dsmem_ring {
	struct dsmem_xfer_file *file;	/* not counted: the file owns us */
	struct dsmem_task *task;	/* its requests are the slots */
	struct task_struct *thread;
	/* the shared regions, each a control block and its entries */
	void *sq_mem;
	void *cq_mem;
	size_t sq_bytes;
	size_t cq_bytes;
	struct dsmem_ring_ctl *sq_ctl;
	struct dsmem_ring_ctl *cq_ctl;
	struct dsmem_sqe *sqes;
	struct dsmem_cqe *cqes;
	u32 sq_entries;
	u32 cq_entries;
	u32 sq_head;			/* the thread's own copy */
	u64 idle_ns;
	/*
	 * cq_lock (a leaf, taken in the CQ's softirq) covers the CQ's tail,
	 * and the free slots (those taken are in flight).
	 */
	spinlock_t cq_lock;
	u32 cq_tail;
	u32 nfree;
	u32 *free;
	wait_queue_head_t cq_wait;	/* GETEVENTS waiters; teardown */
	wait_queue_head_t sq_wait;	/* the thread, asleep */
	bool wake;			/* under sq_wait.lock */
};

static u32 dsmem_ring_size(u32 want, u32 min)
{
	return roundup_pow_of_two(max(want, min));
}

/*
 * Completion entries written and not yet consumed, as the program's head
 * says; a head the program moved past our tail counts as a full ring, so
 * a bad head stalls that program's ring only.  Under cq_lock.
 */
static u32 dsmem_ring_cq_used(struct dsmem_ring *ring)
{
	u32 used = ring->cq_tail - READ_ONCE(ring->cq_ctl->head);

	return used > ring->cq_entries ? ring->cq_entries : used;
}

/* Slots taken are transfers in flight.  Under cq_lock. */
static u32 dsmem_ring_inflight(struct dsmem_ring *ring)
{
	return ring->cq_entries - ring->nfree;
}

/*
 * Room for one more entry: its completion and those of the transfers in
 * flight fit in the CQ (so a slot is free too).  Under cq_lock.
 */
static bool dsmem_ring_room(struct dsmem_ring *ring)
{
	return dsmem_ring_cq_used(ring) + dsmem_ring_inflight(ring) <
	       ring->cq_entries;
}

/* A slot for one more entry, if its completion will have room; or -1. */
static int dsmem_ring_take_slot(struct dsmem_ring *ring)
{
	int slot = -1;

	spin_lock_bh(&ring->cq_lock);
	if (dsmem_ring_room(ring))
		slot = ring->free[--ring->nfree];
	spin_unlock_bh(&ring->cq_lock);
	return slot;
}

/* The last completion of a slot's transfer: CQ handler or the thread. */
void dsmem_ring_req_done(struct dsmem_ring *ring, u32 slot)
{
	struct dsmem_task_req *tr = &ring->task->reqs[slot];
	struct dsmem_cqe *cqe;

	if (tr->umr)
		atomic_dec(&tr->umr->users);
	tr->umr = NULL;

	spin_lock_bh(&ring->cq_lock);
	cqe = &ring->cqes[ring->cq_tail & (ring->cq_entries - 1)];
	WRITE_ONCE(cqe->user_data, tr->user_data);
	WRITE_ONCE(cqe->bytes, atomic64_read(&tr->bytes));
	WRITE_ONCE(cqe->status, READ_ONCE(tr->status));
	WRITE_ONCE(cqe->flags, 0);
	WRITE_ONCE(cqe->__rsvd, 0);
	ring->cq_tail++;
	/* the entry before the tail that publishes it */
	smp_store_release(&ring->cq_ctl->tail, ring->cq_tail);
	ring->free[ring->nfree++] = slot;
	/*
	 * Still under cq_lock: the teardown frees the ring once it sees
	 * nothing in flight under this lock, so nothing here may touch the
	 * ring after the unlock.  wq_has_sleeper() pairs with the waiters'
	 * barrier in prepare_to_wait and poll_wait.
	 */
	if (wq_has_sleeper(&ring->cq_wait))
		wake_up(&ring->cq_wait);
	if (wq_has_sleeper(&ring->file->poll_wq))
		wake_up_interruptible(&ring->file->poll_wq);
	spin_unlock_bh(&ring->cq_lock);
}

/* Take one entry: copied once, checked, started or failed. */
static void dsmem_ring_take(struct dsmem_ring *ring, u32 slot, int usable)
{
	struct dsmem_task_req *tr = &ring->task->reqs[slot];
	const struct dsmem_sqe *src;
	struct dsmem_sqe sqe;

	src = &ring->sqes[ring->sq_head & (ring->sq_entries - 1)];
	memcpy(&sqe, src, sizeof(sqe));
	ring->sq_head++;

	memset(tr, 0, sizeof(*tr));
	tr->req = sqe.req;
	tr->user_data = sqe.user_data;
	tr->not_after = sqe.not_after_ns;
	if (!sqe.req.mr)
		tr->status = -EINVAL;	/* registered buffers only */
	else if (usable)
		tr->status = usable;
	if (tr->status) {
		dsmem_stat_inc(dsmem_file_net(ring->file), DSMEM_STAT_XFER_BAD);
		dsmem_ring_req_done(ring, slot);
		return;
	}
	dsmem_xfer_start(ring->file, ring->task, slot);
}

/* Consume what the SQ holds, as far as slots go; how many were taken. */
static u32 dsmem_ring_consume(struct dsmem_ring *ring)
{
	struct dsmem_xfer_file *file = ring->file;
	u32 avail, n = 0;
	int usable, slot;

	/* pairs with the program's release of the tail: entries first */
	avail = smp_load_acquire(&ring->sq_ctl->tail) - ring->sq_head;
	if (!avail)
		return 0;
	/* a tail beyond a full ring: take a full ring's worth */
	avail = min(avail, ring->sq_entries);

	mutex_lock(&file->lock);
	usable = dsmem_file_usable(file);
	while (n < avail) {
		slot = dsmem_ring_take_slot(ring);
		if (slot < 0)
			break;
		dsmem_ring_take(ring, slot, usable);
		n++;
	}
	mutex_unlock(&file->lock);
	if (n) {
		/* the entries were copied before the program may reuse them */
		smp_store_release(&ring->sq_ctl->head, ring->sq_head);
	}
	return n;
}

/*
 * Work the thread could do now: an entry, and room for its completion.
 * A full CQ is the program's to empty, so the thread sleeps on it too,
 * and the program wakes it with the head it advanced.
 */
static bool dsmem_ring_has_work(struct dsmem_ring *ring)
{
	bool room;

	if (READ_ONCE(ring->sq_ctl->tail) == ring->sq_head)
		return false;
	spin_lock_bh(&ring->cq_lock);
	room = dsmem_ring_room(ring);
	spin_unlock_bh(&ring->cq_lock);
	return room;
}

static bool dsmem_ring_woken(struct dsmem_ring *ring)
{
	bool woken;

	spin_lock(&ring->sq_wait.lock);
	woken = ring->wake;
	ring->wake = false;
	spin_unlock(&ring->sq_wait.lock);
	return woken || kthread_should_stop();
}

static int dsmem_ring_thread(void *arg)
{
	struct dsmem_ring *ring = arg;
	/*
	 * Jiffies, as io_uring's SQPOLL counts its idle: the loop reads the
	 * time each turn, and where the clocksource is a device (hpet under
	 * QEMU) a ktime read costs more than the turn.  At least idle_ns:
	 * rounded up to whole ticks, plus the tick under way.
	 */
	unsigned long idle = usecs_to_jiffies(div_u64(ring->idle_ns, NSEC_PER_USEC)) + 1;
	unsigned long idle_end = jiffies + idle;

	while (!kthread_should_stop()) {
		/*
		 * Run the softirqs our posts raised (a software device's
		 * tasklets, the CQ's irq_poll) here, as the ioctl path's
		 * spin does, not in ksoftirqd after a wake-up.
		 */
		local_bh_disable();
		local_bh_enable();
		if (dsmem_ring_consume(ring)) {
			idle_end = jiffies + idle;
			cond_resched();
			continue;
		}
		if (time_before(jiffies, idle_end)) {
			cond_resched();
			cpu_relax();
			continue;
		}
		/*
		 * Going to sleep: say so, then look at the tail and the CQ's
		 * head once more.  The program stores them, then reads the
		 * flags; one of the two sees the other's store.
		 */
		WRITE_ONCE(ring->sq_ctl->flags, DSMEM_RING_NEED_WAKEUP);
		/* the flag's store before the loads of the tail and head */
		smp_mb();
		if (!dsmem_ring_has_work(ring))
			wait_event_idle(ring->sq_wait, dsmem_ring_woken(ring));
		WRITE_ONCE(ring->sq_ctl->flags, 0);
		idle_end = jiffies + idle;
	}
	return 0;
}

static bool dsmem_ring_drained(struct dsmem_ring *ring)
{
	bool drained;

	spin_lock_bh(&ring->cq_lock);
	drained = !dsmem_ring_inflight(ring);
	spin_unlock_bh(&ring->cq_lock);
	return drained;
}

/* The descriptor's release: no mapping is left, no ioctl runs. */
void dsmem_ring_destroy(struct dsmem_ring *ring)
{
	kthread_stop(ring->thread);
	/* transfers always end: by completion or by a flush */
	wait_event(ring->cq_wait, dsmem_ring_drained(ring));
	kvfree(ring->task);
	kfree(ring->free);
	vfree(ring->sq_mem);
	vfree(ring->cq_mem);
	atomic_dec(&ring->file->node->rings);
	kfree(ring);
	atomic_dec(&dsmem_rings_live);
}

static struct dsmem_ring *dsmem_ring_alloc(u32 sq_entries, u32 cq_entries)
{
	struct dsmem_ring *ring = kzalloc(sizeof(*ring), GFP_KERNEL);
	u32 i;

	if (!ring)
		return NULL;
	ring->sq_entries = sq_entries;
	ring->cq_entries = cq_entries;
	ring->sq_bytes = PAGE_ALIGN(DSMEM_RING_ENTRIES_OFFSET +
				    (size_t)sq_entries * sizeof(struct dsmem_sqe));
	ring->cq_bytes = PAGE_ALIGN(DSMEM_RING_ENTRIES_OFFSET +
				    (size_t)cq_entries * sizeof(struct dsmem_cqe));
	ring->sq_mem = vmalloc_user(ring->sq_bytes);
	ring->cq_mem = vmalloc_user(ring->cq_bytes);
	ring->free = kcalloc(cq_entries, sizeof(*ring->free), GFP_KERNEL);
	ring->task = kvzalloc(struct_size(ring->task, reqs, cq_entries),
			      GFP_KERNEL);
	if (!ring->sq_mem || !ring->cq_mem || !ring->free || !ring->task) {
		kvfree(ring->task);
		kfree(ring->free);
		vfree(ring->sq_mem);
		vfree(ring->cq_mem);
		kfree(ring);
		return NULL;
	}
	ring->sq_ctl = ring->sq_mem;
	ring->cq_ctl = ring->cq_mem;
	ring->sqes = ring->sq_mem + DSMEM_RING_ENTRIES_OFFSET;
	ring->cqes = ring->cq_mem + DSMEM_RING_ENTRIES_OFFSET;
	for (i = 0; i < cq_entries; i++)
		ring->free[i] = cq_entries - 1 - i;
	ring->nfree = cq_entries;
	spin_lock_init(&ring->cq_lock);
	init_waitqueue_head(&ring->cq_wait);
	init_waitqueue_head(&ring->sq_wait);
	return ring;
}

int dsmem_ring_setup(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_ring_setup *a = arg;
	struct dsmem_ring *ring;
	u32 sq, cq;
	int ret;

	if (a->flags & ~DSMEM_RING_SETUP_FLAGS_ALL || a->sq_bytes ||
	    a->cq_bytes || a->sq_off || a->cq_off)
		return -EINVAL;
	if (!a->sq_entries || a->sq_entries > DSMEM_RING_ENTRIES_MAX ||
	    a->idle_us > DSMEM_RING_IDLE_US_MAX)
		return -EINVAL;
	sq = dsmem_ring_size(a->sq_entries, 1);
	if (a->cq_entries && (a->cq_entries < a->sq_entries ||
			      a->cq_entries > 2 * DSMEM_RING_ENTRIES_MAX))
		return -EINVAL;
	cq = dsmem_ring_size(a->cq_entries ?: 2 * sq, sq);

	mutex_lock(&file->lock);
	ret = dsmem_file_usable(file);
	if (ret)
		goto out_unlock;
	if (file->ring) {
		ret = -EBUSY;
		goto out_unlock;
	}
	if (atomic_inc_return(&file->node->rings) > dsmem_ring_node_max()) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_RINGS_REFUSED);
		ret = -EAGAIN;
		goto err_uncount_node;
	}
	if (atomic_inc_return(&dsmem_rings_live) > dsmem_ring_threads_max()) {
		dsmem_stat_inc(dsmem_file_net(file), DSMEM_STAT_RINGS_REFUSED);
		ret = -EAGAIN;
		goto err_uncount;
	}
	ring = dsmem_ring_alloc(sq, cq);
	if (!ring) {
		ret = -ENOMEM;
		goto err_uncount;
	}
	ring->file = file;
	kref_init(&ring->task->ref);
	ring->task->file = file;
	ring->task->nr = cq;
	ring->task->ring = ring;
	init_completion(&ring->task->done);
	ring->idle_ns = (a->idle_us ?: DSMEM_RING_IDLE_US) * NSEC_PER_USEC;
	ring->thread = kthread_create(dsmem_ring_thread, ring, "dsmem-sq/%d",
				      task_pid_nr(current));
	if (IS_ERR(ring->thread)) {
		ret = PTR_ERR(ring->thread);
		ring->thread = NULL;
		goto err_free_ring;
	}
	/*
	 * The thread polls for its program: its CPU time is charged where
	 * the program's is, in the caller's cgroups, as vhost's workers are.
	 */
	ret = cgroup_attach_task_all(current, ring->thread);
	if (ret) {
		kthread_stop(ring->thread);
		ring->thread = NULL;
		goto err_free_ring;
	}
	wake_up_process(ring->thread);
	/* set up before it is seen */
	smp_store_release(&file->ring, ring);
	mutex_unlock(&file->lock);

	a->sq_entries = sq;
	a->cq_entries = cq;
	a->sq_bytes = ring->sq_bytes;
	a->cq_bytes = ring->cq_bytes;
	a->sq_off = DSMEM_RING_OFF_SQ;
	a->cq_off = DSMEM_RING_OFF_CQ;
	return 0;

err_free_ring:
	kvfree(ring->task);
	kfree(ring->free);
	vfree(ring->sq_mem);
	vfree(ring->cq_mem);
	kfree(ring);
err_uncount:
	atomic_dec(&dsmem_rings_live);
err_uncount_node:
	atomic_dec(&file->node->rings);
out_unlock:
	mutex_unlock(&file->lock);
	return ret;
}

/*
 * Set once and gone only with the descriptor, so read without file->lock:
 * mmap holds mmap_lock, which file->lock nests (pinning a registration).
 */
static struct dsmem_ring *dsmem_file_ring(struct dsmem_xfer_file *file)
{
	/* pairs with the release in dsmem_ring_setup: the ring is whole */
	return smp_load_acquire(&file->ring);
}

static bool dsmem_ring_cq_ready(struct dsmem_ring *ring, u32 min)
{
	/* pairs with the release of the tail in dsmem_ring_req_done */
	return smp_load_acquire(&ring->cq_ctl->tail) -
	       READ_ONCE(ring->cq_ctl->head) >= min;
}

/* poll(): completions wait in the CQ */
bool dsmem_ring_pollin(struct dsmem_xfer_file *file)
{
	struct dsmem_ring *ring = dsmem_file_ring(file);

	return ring && dsmem_ring_cq_ready(ring, 1);
}

int dsmem_ring_enter(struct dsmem_xfer_file *file, void *arg)
{
	struct dsmem_ioc_ring_enter *a = arg;
	struct dsmem_ring *ring = dsmem_file_ring(file);
	long ret;

	if (!ring)
		return -ENXIO;
	if (!a->flags || a->flags & ~DSMEM_ENTER_FLAGS_ALL)
		return -EINVAL;
	if (a->flags & DSMEM_ENTER_GETEVENTS &&
	    (!a->min_complete || a->min_complete > ring->cq_entries))
		return -EINVAL;
	if (!(a->flags & DSMEM_ENTER_GETEVENTS) && (a->min_complete ||
						    a->timeout_ns))
		return -EINVAL;

	if (a->flags & DSMEM_ENTER_SQ_WAKEUP) {
		spin_lock(&ring->sq_wait.lock);
		ring->wake = true;
		wake_up_locked(&ring->sq_wait);
		spin_unlock(&ring->sq_wait.lock);
	}
	if (!(a->flags & DSMEM_ENTER_GETEVENTS))
		return 0;
	if (a->timeout_ns)
		ret = wait_event_interruptible_hrtimeout(ring->cq_wait,
							 dsmem_ring_cq_ready(ring, a->min_complete),
							 ns_to_ktime(min_t(u64, a->timeout_ns,
									   KTIME_MAX)));
	else
		ret = wait_event_interruptible(ring->cq_wait,
					       dsmem_ring_cq_ready(ring, a->min_complete));
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

/* mmap of DSMEM_RING_OFF_SQ or _CQ: shared, not executable, in bounds. */
int dsmem_ring_mmap(struct dsmem_xfer_file *file, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct dsmem_ring *ring = dsmem_file_ring(file);
	void *mem;

	if (!ring)
		return -ENXIO;
	if (!(vma->vm_flags & VM_SHARED) || vma->vm_flags & VM_EXEC)
		return -EINVAL;
	if (off == DSMEM_RING_OFF_SQ)
		mem = ring->sq_mem;
	else if (off == DSMEM_RING_OFF_CQ)
		mem = ring->cq_mem;
	else
		return -EINVAL;
	vma->vm_flags &= ~VM_MAYEXEC;
	return remap_vmalloc_range(vma, mem, 0);
}
