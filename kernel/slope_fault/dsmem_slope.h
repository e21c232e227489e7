/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem Slope: state shared by the files of kernel/slope_fault.
 *
 * A node's Slope pages live in s->pages, indexed by page of the Slope
 * range.  An entry is a struct page (the node owns the address and the
 * page is there) or DSMEM_SLOPE_RESERVED (owned, not touched yet: the
 * first fault allocates a zero page).  No entry: not this node's, SIGBUS.
 *
 * Lock order:
 *   s->alloc_lock -> s->lease_lock -> s->share_lock
 *   s->grow_lock -> s->lease_lock (never under alloc_lock: it is held
 *	across a request to a peer, dsmem_slope_lease_grow)
 *   s->alloc_lock -> mmap_lock (unmap_mapping_range) -> page lock
 *	-> s->pages' xa_lock -> track->lock
 *   s->mig_lock nests inside s->alloc_lock and is a leaf otherwise
 *	(the expiry of unreceived migrations takes both: alloc_lock ->
 *	mig_lock, so that neither a FREE nor a RECV slips in between)
 * The fault path takes only the page lock, the xa_lock and track->lock.
 * Message handlers (a connection's rx work) take share_lock, lease_lock
 * and alloc_lock (a BEGIN placing its pages), and nobody waits for a
 * reply holding any of those: an allocation asks a peer for a lease
 * under grow_lock only, and a release tells the addresses' holders with
 * no lock held (dsmem_slope_outbox_send), so that a slow or silent peer
 * holds up no other peer's migration and no other process's free.
 */
#ifndef _DSMEM_SLOPE_H
#define _DSMEM_SLOPE_H

#include <linux/fs.h>
#include <linux/rculist.h>
#include <linux/xarray.h>

#include "../rdm/dsmem_rdm.h"
#include "dsmem_slope_core.h"

/*
 * What the rest of the module calls: the Slope range of each node, its
 * dirty tracking and the migration of objects.  From outside, only the
 * ioctl and message entry points below are called, with no lock of ours
 * held.
 */
struct dsmem_slope;
int dsmem_slope_init(void);
void dsmem_slope_exit(void);
void dsmem_slope_attach(struct file *filp, struct dsmem_node *node);
int dsmem_slope_mmap(struct file *filp, struct vm_area_struct *vma);
int dsmem_slope_ioc_alloc(struct dsmem_node *node, void *arg);
int dsmem_slope_ioc_free(struct dsmem_node *node, void *arg);
int dsmem_slope_ioc_migrate(struct dsmem_node *node, void *arg);
int dsmem_slope_ioc_mig_get(struct dsmem_node *node, void *arg);
int dsmem_slope_ioc_mig_stop(struct dsmem_node *node, void *arg);
int dsmem_slope_ioc_recv(struct dsmem_node *node, void *arg);
int dsmem_slope_ioc_dirty(struct list_head *owned, struct dsmem_node *node,
			  void *arg);
void dsmem_slope_file_release(struct list_head *owned);

#define DSMEM_SLOPE_RESERVED	xa_mk_value(0)
/* s->pages marks */
#define DSMEM_SLOPE_WAIT	XA_MARK_0	/* content not here yet */
#define DSMEM_SLOPE_TRACKED	XA_MARK_1	/* a tracker records writes */
#define DSMEM_SLOPE_GONE	XA_MARK_2	/* handed over, or lost: SIGBUS */

#define DSMEM_SLOPE_LEASES	(DSMEM_SLOPE_NODES_MAX * DSMEM_SLOPE_LEASES_PER_NODE)
#define DSMEM_SLOPE_LEASE_PAGES	(DSMEM_SLOPE_LEASE_SIZE >> PAGE_SHIFT)
#define DSMEM_SLOPE_HUGE_ORDER	(DSMEM_SLOPE_HUGE_SHIFT - PAGE_SHIFT)

static inline pgoff_t dsmem_slope_idx(u64 addr)
{
	return (addr - DSMEM_SLOPE_BASE) >> PAGE_SHIFT;
}

/* an object's address: a page of the range */
static inline bool dsmem_slope_obj_addr_ok(u64 a)
{
	return a && !(a & ~PAGE_MASK) && a >= DSMEM_SLOPE_BASE &&
	       a - DSMEM_SLOPE_BASE < DSMEM_SLOPE_SIZE;
}

static inline u64 dsmem_slope_addr(pgoff_t idx)
{
	return DSMEM_SLOPE_BASE + ((u64)idx << PAGE_SHIFT);
}

/* A lease this node holds: which of its pages are allocated. */
struct dsmem_slope_lease {
	unsigned long *used;	/* DSMEM_SLOPE_LEASE_PAGES bits */
	u64 nused;
	bool returning;		/* empty, on its way back: not for allocation */
};

/* An object the node holds pages of (see DSMEM_IOC_SLOPE_ALLOC.object). */
struct dsmem_slope_obj {
	u64 addr;
	u64 pages;
	u32 runs;
};

/* A run of an object's pages; in s->runs, an interval tree of pages. */
struct dsmem_slope_run {
	struct rb_node rb;
	pgoff_t start, last;		/* inclusive */
	pgoff_t subtree_last;
	struct dsmem_slope_obj *obj;
};

/* Write tracking of one set of extents, by epoch. */
struct dsmem_slope_track {
	struct list_head link;		/* s->trackers, RCU */
	struct rcu_head rcu;
	struct dsmem_slope *s;
	u32 id;
	bool harvest;			/* CPU dirty bits, no write faults */
	unsigned int unit_shift;
	u32 nextents;
	struct dsmem_slope_extent *ext;
	u64 *first;			/* extents' first units */
	u64 units;
	spinlock_t lock;		/* cur and the bits of dirty[cur] */
	unsigned int cur;
	unsigned long *dirty[2];	/* the epoch running, the one before */
	unsigned long *harvested;	/* pages, for harvest */
};

struct dsmem_slope_wr;

struct dsmem_slope_mig {
	struct kref ref;
	struct dsmem_slope *s;
	struct list_head link;		/* s->migs, under s->mig_lock */
	u64 id;				/* ours; see dsmem_slope.mig_ids */
	u64 wire_id;			/* the source's id */
	bool incoming;
	bool received;			/* RECV reported it */
	u32 peer;
	/*
	 * counted; NULL once the connection went (dsmem_slope_mig_conn_down,
	 * under mig_lock), after which nothing of the migration uses it
	 */
	struct dsmem_conn *conn;
	/*
	 * Held by whoever drives the source through a step that must not
	 * meet a failure half way: MIGRATE's set-up, MIG_STOP, and the
	 * connection's end.  Outside mig_lock and alloc_lock.
	 */
	struct mutex op_lock;
	u64 cookie;
	unsigned int unit_shift;
	u32 nextents;
	struct dsmem_slope_extent *ext;
	u64 *first;
	u64 units;
	struct page **pages;		/* each unit's first page */
	u64 placed;			/* destination: pages we inserted */
	/*
	 * Pages of the units, in unit order, that the migration holds a
	 * reference on: its DMA mappings and memory regions cover them, so
	 * a SLOPE_FREE that drops them from s->pages meanwhile must not
	 * free them.  Let go after the regions and the mappings are gone
	 * (dsmem_slope_mig_unpin).
	 */
	u64 held;
	u64 *dma;			/* each unit, mapped for the device */
	bool mapped;
	struct ib_mr **mrs;		/* ours, over the units in order */
	u32 nmrs;
	u64 span;			/* bytes per MR */
	u32 *rkeys;			/* the other side's */
	u32 nrkeys;
	u64 rspan;
	struct dsmem_slope_track *track;	/* source */
	unsigned int max_rounds;
	u64 stop_units;
	/* source: units written with the handover when dirty (root, cookie) */
	u64 push[2];
	u32 npush;
	/* progress, under s->mig_lock; waiters on s->mig_wait */
	u32 state;			/* enum dsmem_slope_mig_state */
	int error;
	u32 rounds;
	u64 sent_units;
	u64 dirty_units;
	u64 pulled_units;
	u64 failed_units;
	u64 fault_waits;
	ktime_t t_start, t_stopping, t_stop, t_handover, t_done;
	u64 first_round_ns;
	/* the one-sided work of either side */
	struct work_struct work;
	struct dsmem_slope_wr *wrs;
	struct llist_head wr_free;
	struct llist_head wr_done;
	atomic_t inflight;
	wait_queue_head_t wr_wait;
	/* destination: units still to pull, and those faults wait for */
	unsigned long *pending;
	u64 pull_next;
	spinlock_t urgent_lock;		/* urgent[], nurgent */
	u64 urgent[16];
	unsigned int nurgent;
	bool abort;			/* the connection went */
	/*
	 * destination, under mig_lock: its connection closed for taking
	 * longer than slope_incoming_ms to hand it over
	 */
	bool cut;
	/*
	 * destination, under mig_lock: the pull's last marks are made
	 * (pull_over), and what the application freed of the object
	 * before that, given back only then (dsmem_slope_mig_defer_free)
	 */
	bool pull_over;
	struct dsmem_slope_extent *kept;
	u32 nkept, kept_cap;
	bool begun;			/* destination: BEGIN taken; mig_lock */
	bool stop_taken;		/* a MIG_STOP runs or ran */
	struct completion handover;	/* that MIG_STOP finished */
	/*
	 * destination: the object's bytes, charged to its peer's quota at
	 * the BEGIN (see dsmem_slope_peer_held); under mig_lock
	 */
	u64 charged;
	/* destination: BEGIN or HANDOVER data, as the PUTs bring it */
	void *stage;
	size_t staged;
	size_t stage_cap;
};

struct dsmem_slope {
	struct dsmem_node *node;	/* owns us; not counted */
	struct inode *inode;		/* its i_mapping: every VMA of ours */
	struct xarray pages;
	wait_queue_head_t page_wait;	/* WAIT marks cleared */
	struct mutex alloc_lock;	/* pages' ownership */
	struct mutex grow_lock;		/* one lease asked for at a time */
	struct mutex lease_lock;	/* held and its leases' bitmaps */
	struct xarray held;		/* lease index -> dsmem_slope_lease */
	struct mutex share_lock;	/* holder[], the leases we give out */
	u32 holder[DSMEM_SLOPE_LEASES_PER_NODE];
	u32 peer_free[DSMEM_SLOPE_NODES_MAX + 1];	/* last announced */
	struct delayed_work announce_work;
	spinlock_t track_lock;		/* writers of trackers */
	struct list_head trackers;
	u32 next_track;
	struct mutex mig_lock;		/* migs and their progress fields */
	struct list_head migs;
	u64 next_mig;
	u32 unreceived;			/* handed over to us, not yet RECV'd */
	/* drops those not received in time (dsmem_slope_expire_work) */
	struct delayed_work expire_work;
	wait_queue_head_t mig_wait;	/* any migration's state changed */
	u64 pages_owned;		/* under alloc_lock: pages the node owns */
	/* under alloc_lock: objects by page of their address, their runs */
	struct xarray objs;
	struct rb_root_cached runs;
};

/* dsmem_slope.c */
/* dsmem_slope.c: migrations' workers; see there why not dsmem_wq */
extern struct workqueue_struct *dsmem_slope_wq;

void dsmem_slope_page_drop(struct dsmem_slope *s, pgoff_t idx);
int dsmem_slope_populate(struct dsmem_slope *s, pgoff_t idx,
			 unsigned int unit_shift, struct page **unit);
void dsmem_slope_unmap(struct dsmem_slope *s, const struct dsmem_slope_extent *e,
		       u32 n);
void dsmem_slope_mark(struct dsmem_slope *s, pgoff_t idx, unsigned long n,
		      xa_mark_t mark, bool set);
void dsmem_slope_mark_extents(struct dsmem_slope *s,
			      const struct dsmem_slope_extent *e, u32 n,
			      xa_mark_t mark, bool set);
void dsmem_slope_barrier(struct dsmem_slope *s,
			 const struct dsmem_slope_extent *e, u32 n);
struct dsmem_slope_extent *dsmem_slope_extents_get(u64 uptr, u32 n,
						   unsigned int unit_shift,
						   u64 max_units, u64 *units);
int dsmem_slope_extents_owned(struct dsmem_slope *s,
			      const struct dsmem_slope_extent *e, u32 n);

/* dsmem_slope_obj.c, under alloc_lock */
int dsmem_slope_runs_add(struct dsmem_slope *s, u64 obj_addr, pgoff_t start,
			 unsigned long n);
void dsmem_slope_runs_remove(struct dsmem_slope *s, pgoff_t start,
			     unsigned long n);
void dsmem_slope_runs_fini(struct dsmem_slope *s);

/* dsmem_slope.c */
struct dsmem_slope *dsmem_slope_of(const struct dsmem_node *node);

/* dsmem_slope_lease.c */
int dsmem_slope_lease_grow(struct dsmem_slope *s, u64 npages, bool huge);
int dsmem_slope_lease_alloc(struct dsmem_slope *s, u64 npages, bool huge,
			    u64 *addr);
struct dsmem_slope_outbox;
struct dsmem_slope_outbox *
dsmem_slope_lease_release(struct dsmem_slope *s,
			  const struct dsmem_slope_extent *e, u32 n);
void dsmem_slope_outbox_send(struct dsmem_slope *s, struct dsmem_slope_outbox *o);
void dsmem_slope_outbox_free(struct dsmem_slope_outbox *o);
/* request handlers (struct dsmem_msg_op): @priv is the node's dsmem_slope */
int dsmem_slope_on_lease_req(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_lease_ret(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_lease_count(struct dsmem_conn *conn, void *priv,
			       const struct dsmem_wire_msg *m,
			       struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_free(struct dsmem_conn *conn, void *priv,
			const struct dsmem_wire_msg *m,
			struct dsmem_wire_msg *reply, void **data);
bool dsmem_slope_extents_in_use(struct dsmem_slope *s,
				const struct dsmem_slope_extent *e, u32 n);
bool dsmem_slope_extents_given_out(struct dsmem_slope *s,
				   const struct dsmem_slope_extent *e, u32 n);
void dsmem_slope_lease_init(struct dsmem_slope *s);
void dsmem_slope_lease_fini(struct dsmem_slope *s);
void dsmem_slope_announce_work(struct work_struct *work);

/* dsmem_slope_track.c */
struct dsmem_slope_track *dsmem_slope_track_new(struct dsmem_slope *s,
						const struct dsmem_slope_extent *e,
						u32 n, unsigned int unit_shift,
						bool harvest);
void dsmem_slope_track_free(struct dsmem_slope_track *t);
void dsmem_slope_track_stop(struct dsmem_slope_track *t);
void dsmem_slope_track_mark(struct dsmem_slope *s, pgoff_t idx);
unsigned long *dsmem_slope_track_switch(struct dsmem_slope_track *t,
					u64 *ndirty);

/* dsmem_slope_mig*.c; what only they share is in dsmem_slope_mig.h */
/* request handlers (struct dsmem_msg_op), as the lease ones */
int dsmem_slope_on_mig_put(struct dsmem_conn *conn, void *priv,
			   const struct dsmem_wire_msg *m,
			   struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_mig_begin(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_mig_handover(struct dsmem_conn *conn, void *priv,
				const struct dsmem_wire_msg *m,
				struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_mig_abort(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data);
int dsmem_slope_on_mig_done(struct dsmem_conn *conn, void *priv,
			    const struct dsmem_wire_msg *m,
			    struct dsmem_wire_msg *reply, void **data);
vm_fault_t dsmem_slope_fault_wait(struct vm_fault *vmf, struct dsmem_slope *s,
				  pgoff_t idx);
void dsmem_slope_mig_conn_down(struct dsmem_slope *s, struct dsmem_conn *conn);
void dsmem_slope_mig_fini(struct dsmem_slope *s);
void dsmem_slope_mig_fill(struct dsmem_slope_mig *mig,
			  struct dsmem_ioc_slope_mig *a);
void dsmem_slope_mig_defer_free(struct dsmem_slope *s,
				struct dsmem_slope_extent *e, u32 n);
void dsmem_slope_mig_pull_over(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_arriving(struct dsmem_slope *s,
			     const struct dsmem_slope_extent *e, u32 n,
			     bool pulling);
void dsmem_slope_expire_work(struct work_struct *work);

/* dsmem_slope_nl.c */
int dsmem_slope_fill_mig(struct sk_buff *skb, struct dsmem_slope_mig *mig,
			 bool secrets);
void dsmem_slope_notify_mig(struct dsmem_slope_mig *mig);

#endif /* _DSMEM_SLOPE_H */
