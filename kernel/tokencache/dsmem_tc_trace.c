// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: capture of every token access into a file (dsctl cache trace).
 *
 * The format is struct dsmem_trace_hdr then struct dsmem_trace_rec, little
 * endian (uapi/linux/dsmem_token.h).  Accesses go into per-CPU rings
 * allocated when the capture starts, so the access path allocates nothing
 * and never sleeps; a worker drains the rings into the file the caller
 * opened and handed over by descriptor.  A full ring drops the record and
 * counts it.
 */
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dsmem_tc.h"

/* struct dsmem_trace_rec as it is written */
struct dsmem_trace_le {
	__le64 time_ns;
	__le32 handle;
	__le32 node;
	u8 type;
	u8 op;
	u8 tier;
	u8 pad;
	__le32 reserved;
};

/* struct dsmem_trace_hdr as it is written */
struct dsmem_trace_hdr_le {
	char magic[8];
	__le32 version;
	__le32 rec_size;
};

struct dsmem_trace_ring {
	spinlock_t lock;	/* taken with interrupts off: any context */
	u32 head;		/* oldest record */
	u32 len;
	u64 dropped;
	struct dsmem_trace_le *recs;
};

struct dsmem_trace {
	struct file *file;
	loff_t pos;
	struct dsmem_trace_ring __percpu *rings;
	struct dsmem_trace_le *bounce;
	struct delayed_work drain_work;
	u64 written;
	int err;		/* the first write error; capture stops */
	bool failed;
};

struct dsmem_trace __rcu *dsmem_trace_cur;
/* start/stop; taken before dsmem_tc.admin_lock is irrelevant: separate */
static DEFINE_MUTEX(dsmem_trace_lock);

void dsmem_tc_trace(u32 handle, u32 node, u8 op, u8 tier)
{
	struct dsmem_trace_ring *ring;
	struct dsmem_trace_le *r;
	struct dsmem_trace *tr;
	unsigned long flags;

	rcu_read_lock();
	tr = rcu_dereference(dsmem_trace_cur);
	if (!tr || READ_ONCE(tr->failed))
		goto out;
	local_irq_save(flags);
	ring = this_cpu_ptr(tr->rings);
	spin_lock(&ring->lock);
	if (ring->len == DSMEM_TRACE_RING) {
		ring->dropped++;
	} else {
		r = &ring->recs[(ring->head + ring->len) % DSMEM_TRACE_RING];
		r->time_ns = cpu_to_le64(ktime_get_ns());
		r->handle = cpu_to_le32(handle);
		r->node = cpu_to_le32(node);
		r->type = DSMEM_HANDLE_TYPE(handle);
		r->op = op;
		r->tier = tier;
		r->pad = 0;
		r->reserved = 0;
		ring->len++;
	}
	spin_unlock(&ring->lock);
	local_irq_restore(flags);
out:
	rcu_read_unlock();
}

static int dsmem_trace_write(struct dsmem_trace *tr, const void *buf,
			     size_t len)
{
	ssize_t n;

	while (len) {
		n = kernel_write(tr->file, buf, len, &tr->pos);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

/* Move what the rings hold into the file. */
static void dsmem_trace_drain(struct dsmem_trace *tr)
{
	unsigned long flags;
	int cpu, ret;

	for_each_possible_cpu(cpu) {
		struct dsmem_trace_ring *ring = per_cpu_ptr(tr->rings, cpu);

		for (;;) {
			u32 n, i;

			spin_lock_irqsave(&ring->lock, flags);
			n = min_t(u32, ring->len, DSMEM_TRACE_BOUNCE);
			for (i = 0; i < n; i++)
				tr->bounce[i] = ring->recs[(ring->head + i) %
							   DSMEM_TRACE_RING];
			ring->head = (ring->head + n) % DSMEM_TRACE_RING;
			ring->len -= n;
			spin_unlock_irqrestore(&ring->lock, flags);
			if (!n || tr->failed)
				break;
			ret = dsmem_trace_write(tr, tr->bounce,
						n * sizeof(*tr->bounce));
			if (ret) {
				tr->err = ret;
				WRITE_ONCE(tr->failed, true);
				dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_TC_TRACE_FAILED);
				break;
			}
			tr->written += n;
		}
	}
}

static void dsmem_trace_drain_work(struct work_struct *work)
{
	struct dsmem_trace *tr = container_of(to_delayed_work(work),
					      struct dsmem_trace, drain_work);

	dsmem_trace_drain(tr);
	if (!tr->failed)
		queue_delayed_work(dsmem_wq, &tr->drain_work,
				   msecs_to_jiffies(DSMEM_TRACE_DRAIN_MS));
}

static u64 dsmem_trace_dropped(struct dsmem_trace *tr)
{
	u64 dropped = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		dropped += READ_ONCE(per_cpu_ptr(tr->rings, cpu)->dropped);
	return dropped;
}

static void dsmem_trace_free(struct dsmem_trace *tr)
{
	int cpu;

	for_each_possible_cpu(cpu)
		vfree(per_cpu_ptr(tr->rings, cpu)->recs);
	free_percpu(tr->rings);
	kvfree(tr->bounce);
	if (tr->file)
		fput(tr->file);
	kfree(tr);
}

int dsmem_tc_trace_start(int fd, struct netlink_ext_ack *extack)
{
	struct dsmem_trace_hdr_le hdr;
	struct dsmem_trace *tr;
	struct file *file;
	int cpu, ret;

	file = fget(fd);
	if (!file) {
		NL_SET_ERR_MSG(extack, "trace fd is not an open file");
		return -EBADF;
	}
	if (!S_ISREG(file_inode(file)->i_mode) || !(file->f_mode & FMODE_WRITE)) {
		NL_SET_ERR_MSG(extack, "trace fd must be a regular file open for writing");
		fput(file);
		return -EINVAL;
	}
	mutex_lock(&dsmem_trace_lock);
	if (rcu_access_pointer(dsmem_trace_cur)) {
		NL_SET_ERR_MSG(extack, "a trace capture is already running");
		ret = -EBUSY;
		goto err_unlock;
	}
	tr = kzalloc(sizeof(*tr), GFP_KERNEL);
	if (!tr) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	tr->file = file;
	file = NULL;
	INIT_DELAYED_WORK(&tr->drain_work, dsmem_trace_drain_work);
	tr->rings = alloc_percpu(struct dsmem_trace_ring);
	tr->bounce = kvmalloc_array(DSMEM_TRACE_BOUNCE, sizeof(*tr->bounce),
				    GFP_KERNEL);
	if (!tr->rings || !tr->bounce) {
		ret = -ENOMEM;
		goto err_free_trace;
	}
	for_each_possible_cpu(cpu) {
		struct dsmem_trace_ring *ring = per_cpu_ptr(tr->rings, cpu);

		spin_lock_init(&ring->lock);
		ring->recs = vmalloc_array(DSMEM_TRACE_RING, sizeof(*ring->recs));
		if (!ring->recs) {
			ret = -ENOMEM;
			goto err_free_trace;
		}
	}
	BUILD_BUG_ON(sizeof(hdr) != DSMEM_TRACE_HDR_SIZE ||
		     sizeof(struct dsmem_trace_le) != DSMEM_TRACE_REC_SIZE);
	memcpy(hdr.magic, DSMEM_TRACE_MAGIC, sizeof(hdr.magic));
	hdr.version = cpu_to_le32(DSMEM_TRACE_VERSION);
	hdr.rec_size = cpu_to_le32(sizeof(struct dsmem_trace_le));
	ret = dsmem_trace_write(tr, &hdr, sizeof(hdr));
	if (ret) {
		NL_SET_ERR_MSG(extack, "cannot write the trace file");
		goto err_free_trace;
	}
	rcu_assign_pointer(dsmem_trace_cur, tr);
	queue_delayed_work(dsmem_wq, &tr->drain_work,
			   msecs_to_jiffies(DSMEM_TRACE_DRAIN_MS));
	mutex_unlock(&dsmem_trace_lock);
	return 0;

err_free_trace:
	dsmem_trace_free(tr);
err_unlock:
	mutex_unlock(&dsmem_trace_lock);
	if (file)
		fput(file);
	return ret;
}

static void dsmem_trace_end(struct dsmem_trace *tr, u64 *records,
			    u64 *dropped, int *err)
{
	/* no producer holds it after the grace period */
	synchronize_rcu();
	cancel_delayed_work_sync(&tr->drain_work);
	dsmem_trace_drain(tr);
	if (!tr->err)
		tr->err = vfs_fsync(tr->file, 0);
	*records = tr->written;
	*dropped = dsmem_trace_dropped(tr);
	*err = tr->err;
	dsmem_trace_free(tr);
}

int dsmem_tc_trace_stop(u64 *records, u64 *dropped, int *err)
{
	struct dsmem_trace *tr;

	mutex_lock(&dsmem_trace_lock);
	tr = rcu_dereference_protected(dsmem_trace_cur,
				       lockdep_is_held(&dsmem_trace_lock));
	if (!tr) {
		mutex_unlock(&dsmem_trace_lock);
		return -ENOENT;
	}
	RCU_INIT_POINTER(dsmem_trace_cur, NULL);
	dsmem_trace_end(tr, records, dropped, err);
	mutex_unlock(&dsmem_trace_lock);
	return 0;
}

void dsmem_tc_trace_state(bool *active, u64 *records, u64 *dropped)
{
	struct dsmem_trace *tr;

	mutex_lock(&dsmem_trace_lock);
	tr = rcu_dereference_protected(dsmem_trace_cur,
				       lockdep_is_held(&dsmem_trace_lock));
	*active = tr && !tr->failed;
	*records = tr ? READ_ONCE(tr->written) : 0;
	*dropped = tr ? dsmem_trace_dropped(tr) : 0;
	mutex_unlock(&dsmem_trace_lock);
}

void dsmem_tc_trace_exit(void)
{
	u64 records, dropped;
	int err;

	dsmem_tc_trace_stop(&records, &dropped, &err);
}
