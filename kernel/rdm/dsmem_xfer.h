/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: what the data path's two front doors share -- the ioctl batches
 * (dsmem_xfer.c) and the shared rings (dsmem_ring.c).
 */
#ifndef _DSMEM_XFER_H
#define _DSMEM_XFER_H

#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <uapi/linux/dsmem.h>
#include <uapi/linux/dsmem_netlink.h>

#include "../dsmem_limits.h"

struct dsmem_ring;

/* Pinned user memory mapped for one device. */
struct dsmem_umr_map {
	struct ib_device *ibdev;
	struct sg_table sgt;
	u64 *dma;		/* per page */
};

/* Pinned user memory, mapped for each of the node's devices. */
struct dsmem_umr {
	u64 addr;		/* first byte the caller named */
	u64 len;
	unsigned long npages;
	struct page **pages;
	/* a connection uses the map of its device's slot (conn->ldev) */
	struct dsmem_umr_map maps[DSMEM_NODE_DEVS_MAX];
	unsigned int nmaps;
	bool writable;
	bool mapped;		/* under the owning file's lock */
	unsigned long npinned;
	struct mm_struct *mm;	/* npages are charged to its pinned_vm */
	atomic_t users;		/* tasks using it */
	u32 tc_mr;		/* token of a registration; 0 for a task's */
};

/*
 * The data path's part of one open /dev/dsmem (struct dsmem_file,
 * dsmem_chrdev.h).  Lock order: file->lock ->
 * node->file_lock, and file->lock -> dsmem_nodes_lock (dsmem_rdm.h).
 * file->lock is never held while waiting for a transfer, nor for a
 * send-queue credit (dsmem_xfer_credit() lets it go).
 *
 * Counted: the descriptor holds one reference, dsmem_xfer_node_dead()
 * one while it works on it, as the descriptor may be closed meanwhile, and
 * a task's finisher one across its wake-up (dsmem_task_finish).
 */
struct dsmem_xfer_file {
	struct kref ref;
	struct mutex lock;	/* node, dead, mrs, tasks, conn, every DMA unmap */
	struct dsmem_node *node;	/* counted; NULL until attached */
	bool dead;		/* the node went away */
	/* slots of the node's devices gone, unmapped (set under lock) */
	unsigned long devs_gone;
	struct list_head node_link;	/* node->files, node->file_lock */
	struct xarray mrs;	/* handle -> dsmem_umr */
	struct xarray tasks;	/* id -> dsmem_task */
	u32 next_task;
	u32 held_slices;	/* posted since the lock was let go */
	atomic_t ntasks;
	atomic_t ndone;		/* done, not yet released */
	atomic_t looped;	/* to our own node through the device, in flight */
	wait_queue_head_t poll_wq;
	struct dsmem_conn *conn;	/* last used, counted */
	/* conn's peer's paths, counted, as of its paths_gen (under lock) */
	struct dsmem_conn *paths[DSMEM_PATHS_MAX];
	unsigned int npaths;
	int paths_gen;
	struct dsmem_ring *ring;	/* set once, under lock; dsmem_ring.c */
	/* requests to run again, each counting a reference to the file */
	struct llist_head failover;
	struct work_struct failover_work;
};

struct dsmem_task_req {
	struct dsmem_xfer_req req;
	struct dsmem_umr *umr;	/* registered, or pinned for this task */
	bool own_umr;		/* unmapped under file->lock, once done */
	bool looped;		/* to our own node, through the device */
	atomic_t slices;	/* in flight, plus one while posting */
	/* the first error (cmpxchg), and bytes done: slices of one request
	 * may complete on several paths' CQs at once
	 */
	int status;
	atomic64_t bytes;
	u64 user_data;		/* a ring entry's */
	u64 not_after;		/* CLOCK_BOOTTIME; nothing starts after; 0 */
	/*
	 * A slice was lost with its path (flushed, or out of retries): the
	 * request runs again on the paths left, at most DSMEM_FAILOVER_MAX
	 * times, through file->failover.
	 */
	bool failover;
	u8 failovers;
	struct llist_node failover_link;
	struct dsmem_task *task;	/* while on file->failover */
};

struct dsmem_task {
	struct kref ref;
	struct dsmem_xfer_file *file;
	u32 id;
	u32 nr;
	atomic_t pending;	/* requests not done, plus one while posting */
	atomic_t done_reqs;
	struct completion done;	/* whoever saw it done may free the task */
	bool is_done;		/* a hint for spinners; done is the truth */
	struct dsmem_ring *ring;	/* a ring's slots, not a batch */
	struct dsmem_task_req reqs[];
};

/* dsmem_xfer.c */
int dsmem_file_usable(struct dsmem_xfer_file *file);

/*
 * Where a descriptor's counts go: its node's namespace, once attached
 * (the node is set once and kept until the descriptor goes); before,
 * the host's.
 */
static inline struct net *dsmem_file_net(const struct dsmem_xfer_file *file)
{
	struct dsmem_node *node = READ_ONCE(file->node);

	return node ? node->net : dsmem_host_net();
}

void dsmem_xfer_start(struct dsmem_xfer_file *file, struct dsmem_task *task,
		      u32 i);

/* dsmem_ring.c */
void dsmem_ring_req_done(struct dsmem_ring *ring, u32 slot);
void dsmem_ring_destroy(struct dsmem_ring *ring);
bool dsmem_ring_pollin(struct dsmem_xfer_file *file);

#endif /* _DSMEM_XFER_H */
