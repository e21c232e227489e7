/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: disaggregated memory over RDMA -- private cross-file declarations.
 */
#ifndef _DSMEM_PRIV_H
#define _DSMEM_PRIV_H

#include <linux/types.h>
#include <linux/percpu.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/socket.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <uapi/linux/dsmem.h>
#include <uapi/linux/dsmem_netlink.h>
/* the netlink handlers, declared with the op table that names them */
#include "dsmem_nl_gen.h"

#include "dsmem_wire.h"
#include "rdm/dsmem_service.h"
#include "tokencache/dsmem_tc_core.h"

#define DSMEM_MODULE_VERSION	"0.1.0"

/*
 * Limits, all in one place.
 */
/* largest ioctl argument the dispatcher copies in; checked per entry */
#define DSMEM_IOCTL_ARG_MAX	256
/* ports reported per device; more are summarised by the port count */
#define DSMEM_DEV_PORTS_MAX	64
/* peers per node, segments per node (the global address has 12 bits) */
#define DSMEM_NODE_PEERS_MAX	256
#define DSMEM_NODE_SEGS_MAX	DSMEM_SEG_ID_MAX
/* one-sided work requests in flight per connection */
#define DSMEM_SQ_DEPTH		256
/* receive buffers per connection, each one whole wire message */
#define DSMEM_RQ_DEPTH		64
/* control messages (sends) in flight per connection */
#define DSMEM_MSG_DEPTH		32
/* bytes per one-sided work request: large transfers are cut and pipelined */
#define DSMEM_SLICE_BYTES	(256 * 1024)
/* a synchronous batch this small polls for its completion first ... */
#define DSMEM_SPIN_REQS_MAX	4
/* ... for at most this long */
#define DSMEM_SPIN_NS		(200 * NSEC_PER_USEC)
/* a request message waits this long for its reply */
#define DSMEM_MSG_TIMEOUT_MS	3000
/*
 * ... and a Slope BEGIN, which allocates and registers the object's pages
 * at the destination, this much longer per 1024 units (4 MiB of pages)
 */
#define DSMEM_SLOPE_BEGIN_MS_PER_1K	500
/*
 * Slope, per peer: incoming migrations that may hold memory here at once
 * (unfinished, or handed over and not received yet), and the share of
 * RAM they may hold together -- the defaults of the module parameters
 * slope_peer_migs and slope_peer_bytes.  A migration handed over here
 * that no process receives is dropped after slope_unreceived_ms (this by
 * default, never sooner than the minimum).
 */
#define DSMEM_SLOPE_PEER_MIGS		8
#define DSMEM_SLOPE_PEER_RAM_DIV	2
#define DSMEM_SLOPE_UNRECEIVED_MS	60000
#define DSMEM_SLOPE_UNRECEIVED_MS_MIN	100
/* rdma_cm address and route resolution */
#define DSMEM_RESOLVE_TIMEOUT_MS	2000
/* keepalive: an idle connection is probed this often */
#define DSMEM_KEEPALIVE_MS	1000
/* services registered with the transport (segments, Slope) */
#define DSMEM_SERVICES_MAX	4
/* keys per network namespace */
#define DSMEM_KEYS_MAX		16
/*
 * connections accepted and not yet authenticated, per node: a flood of
 * connects takes these, not the peer slots of authenticated peers; and
 * how long one may stay unauthenticated
 */
#define DSMEM_UNAUTH_MAX	16
#define DSMEM_AUTH_TIMEOUT_MS	5000
/*
 * reconnect backoff, doubling from min to max; to at most REFUSED_MAX
 * while the other end refuses the connect: it is most likely being told
 * about this node right now, and a refusal costs it nothing
 */
#define DSMEM_BACKOFF_MIN_MS	100
#define DSMEM_BACKOFF_MAX_MS	5000
#define DSMEM_BACKOFF_REFUSED_MAX_MS	1000
/* largest memory chunk of a segment: order 9 is 2 MiB with 4 KiB pages */
#define DSMEM_SEG_CHUNK_ORDER_MAX	9
/* token cache: maintenance (idle demotion, aging, adaptation) period */
#define DSMEM_TC_MAINT_JIFFIES	1
/* trace capture: records per CPU ring, per write, and the drain period */
#define DSMEM_TRACE_RING	16384
#define DSMEM_TRACE_BOUNCE	2048
#define DSMEM_TRACE_DRAIN_MS	50
/* CACHE_BENCH: synthetic queue pairs at most */
#define DSMEM_BENCH_QPS_MAX	16384
/*
 * CACHE_REPLAY: trace records per request and moves per reply, each array
 * one attribute (whose length is 16 bits); maintenance period of the
 * replay, as the cache's other times
 */
#define DSMEM_REPLAY_RECS_MAX	2048
#define DSMEM_REPLAY_MOVES_MAX	8191
#define DSMEM_REPLAY_MAINT_NS_MIN	NSEC_PER_USEC
#define DSMEM_REPLAY_MAINT_NS_MAX	(60ULL * NSEC_PER_SEC)

/* One RDMA device as dsmem sees it; created by ib_client .add. */
struct dsmem_device {
	struct ib_device *ibdev;	/* ibdev->index keys dsmem_devs */
	char name[IB_DEVICE_NAME_MAX];	/* under dsmem_devs_lock */
};

/*
 * Counters: one enum, one name table (dsmem_stats.c), per-CPU storage.
 * The names are the ABI seen over netlink; the values of the enum are not.
 */
enum dsmem_stat {
	DSMEM_STAT_DEV_ADDED,
	DSMEM_STAT_DEV_REMOVED,
	DSMEM_STAT_DEV_ADD_FAILED,
	DSMEM_STAT_IOCTL_CALLS,
	DSMEM_STAT_IOCTL_UNKNOWN,
	DSMEM_STAT_IOCTL_SHORT,
	DSMEM_STAT_IOCTL_NONZERO_TAIL,
	DSMEM_STAT_IOCTL_DENIED,
	DSMEM_STAT_IOCTL_FAULT,
	DSMEM_STAT_NL_EVENTS,
	DSMEM_STAT_NL_EVENTS_DROPPED,
	DSMEM_STAT_NODE_ADDED,
	DSMEM_STAT_NODE_REMOVED,
	DSMEM_STAT_CONN_ESTABLISHED,
	DSMEM_STAT_CONN_FAILED,
	DSMEM_STAT_CONN_LOST,
	DSMEM_STAT_CONN_REJECTED,
	DSMEM_STAT_CONN_IO_TIMEOUT,
	DSMEM_STAT_CONN_POOL_FULL,
	DSMEM_STAT_CONN_UNKNOWN_PEER,
	DSMEM_STAT_CONN_ID_IN_USE,
	DSMEM_STAT_CONN_WRONG_NODE,
	DSMEM_STAT_AUTH_OK,
	DSMEM_STAT_AUTH_FAILED,
	DSMEM_STAT_AUTH_MISMATCH,
	DSMEM_STAT_AUTH_TIMEOUT,
	DSMEM_STAT_AUTH_NOKEY,
	DSMEM_STAT_RECONNECTS,
	DSMEM_STAT_SEG_ADDED,
	DSMEM_STAT_SEG_REMOVED,
	DSMEM_STAT_SEG_NOMEM,
	DSMEM_STAT_GRANTS_SENT,
	DSMEM_STAT_REVOKES_SENT,
	DSMEM_STAT_MSG_SENT,
	DSMEM_STAT_MSG_RECV,
	DSMEM_STAT_MSG_BAD,
	DSMEM_STAT_MSG_TIMEOUT,
	DSMEM_STAT_MSG_DENIED,
	DSMEM_STAT_MSG_RANGE,
	DSMEM_STAT_XFER_REQS,
	DSMEM_STAT_XFER_SLICES,
	DSMEM_STAT_XFER_BYTES,
	DSMEM_STAT_XFER_ERRORS,
	DSMEM_STAT_XFER_DENIED,
	DSMEM_STAT_XFER_RANGE,
	DSMEM_STAT_XFER_NOCONN,
	DSMEM_STAT_XFER_BAD,
	DSMEM_STAT_TASKS,
	DSMEM_STAT_TC_TOKENS,
	DSMEM_STAT_TC_RESOLVE_FAILED,
	DSMEM_STAT_TC_PAGE_FAILED,
	DSMEM_STAT_TC_PAGE_MISPLACED,
	DSMEM_STAT_TC_TRACE_FAILED,
	DSMEM_STAT_SLOPE_LEASE_DENIED,
	DSMEM_STAT_SLOPE_FREE_DENIED,
	DSMEM_STAT_SLOPE_QUOTA_MIGS,
	DSMEM_STAT_SLOPE_QUOTA_BYTES,
	DSMEM_STAT_SLOPE_EXPIRED,
	DSMEM_STAT_NR
};

struct dsmem_stats {
	u64 v[DSMEM_STAT_NR];
};

DECLARE_PER_CPU(struct dsmem_stats, dsmem_stats);

static inline void dsmem_stat_inc(enum dsmem_stat s)
{
	this_cpu_inc(dsmem_stats.v[s]);
}

static inline void dsmem_stat_add(enum dsmem_stat s, u64 n)
{
	this_cpu_add(dsmem_stats.v[s], n);
}

const char *dsmem_stat_name(enum dsmem_stat s);
u64 dsmem_stat_read(enum dsmem_stat s);
void dsmem_stats_reset(void);

/* dsmem_wq.c: the module's workqueue, first up and last down */
extern struct workqueue_struct *dsmem_wq;
int dsmem_wq_init(void);
void dsmem_wq_exit(void);

/* rdm/dsmem_dev.c: the ib_client and the device table */
extern struct ib_client dsmem_ib_client;
/*
 * Lock order: ib_core's device and client locks (held around .add/.remove)
 *   -> dsmem_devs_lock -> net_rwsem (read, to announce events per netns)
 *   and -> the device's GID table lock (rdma_get_gid_attr)
 *   and -> the driver's own locks (query_port); never those under
 *   net_rwsem, which they may nest outside (rxe: usdev_lock -> rtnl_mutex
 *   -> net_rwsem).
 * dsmem_devs_lock protects dsmem_devs and every dsmem_device's name; a
 * device found in dsmem_devs under the lock has a live ibdev.
 */
extern struct mutex dsmem_devs_lock;
extern struct xarray dsmem_devs;
void dsmem_devs_check_empty(void);

/*
 * kernel/rdm: nodes, their connections to peers, segments and the data
 * path.
 *
 * Lock order:
 *   dsmem_nodes_lock -> dsmem_devs_lock -> net_rwsem
 *   rdma_cm's handler lock -> dsmem_node.lock -> seg->lock (a leaf),
 *	peer->lock, conn->lock (spinlocks, leaves), dsmem_tc_inst.lock
 *   file->lock -> dsmem_nodes_lock
 * dsmem_nodes_lock (dsmem_node.c) protects the node table, each node's
 * dead flag and the module's stopping flag.  A node's lock protects its
 * peer and segment tables, its admission, its segments' grants and the
 * grant MRs of its segments and connections.  The two never nest: a node
 * is looked up counted under dsmem_nodes_lock, which is dropped before
 * node->lock is taken.  No path takes two nodes' locks: nodes talk to
 * each other, on one host too, only through their connections.
 * Neither lock is held while waiting for rdma_cm (rdma_destroy_id waits
 * for the id's handler, and the handlers take node->lock), while a
 * connection drains, nor while a peer answers a GRANT or REVOKE: those
 * are sent under node->lock, in the order decided, and awaited without
 * it (dsmem_seg.c).
 */
extern struct mutex dsmem_nodes_lock;

struct dsmem_conn;

/* The first member of every rdma_cm_id context. */
enum dsmem_cm_ctx {
	DSMEM_CM_LISTENER,
	DSMEM_CM_CONN,
};

struct dsmem_node {
	enum dsmem_cm_ctx cm_ctx;	/* DSMEM_CM_LISTENER */
	u32 id;
	u16 port;
	/*
	 * Unlinked, or not published yet: under dsmem_nodes_lock.  Read
	 * under lock too: the teardown sets it before it takes lock to empty
	 * the tables, so whatever adds to them under lock sees it, or is
	 * emptied (dsmem_node_lock_live).
	 */
	bool dead;
	struct kref ref;
	struct mutex lock;		/* see the lock order above */
	struct dsmem_device *sdev;	/* its ibdev outlives the node */
	struct net *net;
	struct rdma_cm_id *listen_id;
	/* under lock; the data path looks them up in RCU */
	struct xarray peers;		/* peer id -> dsmem_peer */
	struct xarray segs;		/* segment id -> dsmem_seg */
	u32 next_peer;			/* lock */
	u64 gmr_gen;			/* lock: the last GRANT's, dsmem_gmr */
	/* the key its peers prove; "": insecure (set at creation) */
	char key[DSMEM_KEY_NAME_MAX];
	u8 accept;			/* enum dsmem_accept, lock */
	atomic_t unauth;		/* connections not yet authenticated */
	struct list_head files;		/* attached dsmem_xfer_file, file_lock */
	spinlock_t file_lock;
	/* each service's state of the node (dsmem_service.c) */
	void *svc_priv[DSMEM_SERVICES_MAX];
	unsigned int svc_ready;		/* services whose node_init ran */
};

struct dsmem_peer {
	struct rcu_head rcu;		/* the data path looks peers up in RCU */
	struct dsmem_node *node;	/* counted */
	u32 id;
	bool passive;			/* made by a connection, gone with it */
	bool listen;			/* admitted when it connects, not dialled */
	u32 expect_node;		/* the id it must have; 0: any */
	struct kref ref;
	struct sockaddr_storage addr;	/* with the port (0 for listen) */
	spinlock_t lock;		/* the fields below */
	u8 state;			/* enum dsmem_peer_state */
	bool deleted;
	u32 remote_node;
	u32 connects;
	int last_err;			/* negative errno */
	unsigned int backoff_ms;
	struct dsmem_conn *conn;	/* counted; NULL when none */
	struct delayed_work connect_work;
};

/* A segment some peer granted us: what the data path checks and uses. */
struct dsmem_rseg {
	struct rcu_head rcu;
	u64 base;
	u64 size;
	u64 span;
	u32 perm;			/* DSMEM_PERM_* */
	u32 nkeys;
	u32 rkeys[];
};

/* A control message we sent and whose reply we wait for. */
struct dsmem_msg_wait {
	struct completion done;
	u32 tag;
	int status;			/* negative errno */
	const struct dsmem_wire_msg *req;	/* what the reply must answer */
	struct dsmem_wire_msg *reply;	/* filled on success */
	void *data;			/* reply data copied here */
	size_t data_max;
};

enum dsmem_conn_state {
	DSMEM_CONN_CONNECTING,
	DSMEM_CONN_UP,
	DSMEM_CONN_CLOSING,
};

struct dsmem_conn {
	enum dsmem_cm_ctx cm_ctx;	/* DSMEM_CM_CONN */
	struct kref ref;
	struct dsmem_peer *peer;	/* counted; its node is ours */
	struct rdma_cm_id *cm_id;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u32 max_sge;
	u32 remote_node;		/* known once connected */
	bool passive;			/* the other end connected to us */
	bool established;		/* the QP reached RTS: drain it */
	bool was_up;
	/*
	 * The handshake (dsmem_auth.c): both nonces and QPNs, the peer's
	 * proof once it arrived (under lock), whether ours went out, and
	 * whether the connection counts in its node's unauthenticated pool.
	 */
	u8 nonce[DSMEM_WIRE_NONCE_LEN];
	u8 peer_nonce[DSMEM_WIRE_NONCE_LEN];
	u32 remote_qpn;
	u8 peer_proof[DSMEM_WIRE_AUTH_LEN];
	bool auth_got;
	bool auth_sent;
	unsigned long flags;		/* DSMEM_CONN_F_* bits */
	struct delayed_work deadline_work;
	spinlock_t lock;		/* state, rx_list; taken in softirq */
	enum dsmem_conn_state state;
	int close_err;
	/* posting happens under read; the close path takes write once */
	struct rw_semaphore post_sem;
	atomic_t sq_free;		/* one-sided credits */
	void *slices;			/* one per credit; dsmem_xfer.c */
	struct llist_head slice_free;
	spinlock_t slice_lock;		/* taking a slice, not returning one */
	atomic_t msg_free;		/* message credits */
	atomic_t credits_back;		/* credits returned, ever */
	unsigned int wd_back;		/* the watchdog's last look at it */
	unsigned long wd_since;		/* jiffies: no progress since */
	wait_queue_head_t sq_wait;
	struct dsmem_recv **recvs;
	struct list_head rx_list;	/* received requests, under lock */
	struct work_struct rx_work;
	struct work_struct up_work;
	struct work_struct release_work;
	struct delayed_work keepalive_work;
	struct xarray pending;		/* tag -> dsmem_msg_wait */
	u32 next_tag;
	atomic_t seq;
	struct xarray rsegs;		/* segment base >> 36 -> dsmem_rseg */
	/*
	 * Our segments' MRs in this PD (dsmem_gmr), and those taken off to
	 * be revoked, which the PD outlives; under the node's lock.  Closed:
	 * the connection went down, no grant is pushed on it any more.
	 */
	struct list_head gmrs;
	unsigned int gmrs_out;
	bool gmrs_closed;
	u32 tc_pd;			/* token handles; 0: none */
	u32 tc_cq;
	u32 tc_qp;
};

/* struct dsmem_conn.flags bits */
enum {
	DSMEM_CONN_F_UNAUTH,		/* counted in node->unauth */
};

struct dsmem_seg_pte;

struct dsmem_seg {
	struct dsmem_node *node;
	u32 id;
	u8 translate;			/* enum dsmem_translate */
	int numa;
	u64 size;
	u64 base;			/* global address of byte 0 */
	unsigned int chunk_order;
	unsigned long nchunks;
	struct page **chunks;
	struct sg_table sgt;		/* chunks, mapped for the node's device */
	struct xarray grants;		/* remote node -> xa_mk_value(perm) */
	/* under the node's lock: as the connection's, and whether destroyed */
	struct list_head gmrs;
	unsigned int gmrs_out;
	bool dead;
	struct kref ref;		/* message handlers hold it */
	struct rcu_head rcu;
	struct mutex lock;		/* allocator and page table */
	unsigned long npages;
	unsigned long *va_map;		/* allocated pages of the va space */
	struct xarray allocs;		/* first va page -> xa_mk_value(npages) */
	u64 used;
	/* DSMEM_TRANSLATE_PAGES only */
	struct hlist_head *ptab;
	unsigned int ptab_bits;
	unsigned long *free_stack;	/* backing pages not mapped */
	unsigned long nfree;
};

/* Our segment registered in one connection's PD, for one remote node. */
struct dsmem_gmr {
	struct dsmem_seg *seg;
	struct dsmem_conn *conn;
	struct list_head seg_link;	/* or a list of gmrs being revoked */
	struct list_head conn_link;
	u64 gen;			/* order of the GRANTs sent */
	/* its REVOKE, sent under the node's lock and awaited without it */
	struct dsmem_msg_wait revoke;
	struct dsmem_wire_msg revoke_req;
	struct dsmem_wire_msg revoke_reply;
	int revoke_ret;
	u64 span;
	u32 perm;
	unsigned int nmrs;
	u32 *tc_mrs;			/* a token handle per MR */
	struct ib_mr *mrs[];
};

/* rdm/dsmem_node.c */
int dsmem_rdm_init(void);
void dsmem_rdm_stop(void);
void dsmem_rdm_exit(void);
void dsmem_rdm_dev_remove(struct dsmem_device *sdev);
struct dsmem_node *dsmem_node_get(u32 id, struct net *net);
struct dsmem_node *dsmem_node_next(unsigned long *id, unsigned long max,
				   struct net *net);
bool dsmem_node_lock_live(struct dsmem_node *node);
void dsmem_node_put(struct dsmem_node *node);
int dsmem_node_create(u32 id, struct dsmem_device *sdev, u16 port,
		      const char *key, u8 accept, struct net *net,
		      struct netlink_ext_ack *extack);
int dsmem_node_destroy(u32 id, struct net *net,
		       struct netlink_ext_ack *extack);
int dsmem_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

/* rdm/dsmem_conn.c */
struct dsmem_peer *dsmem_peer_create(struct dsmem_node *node,
				     const struct sockaddr_storage *addr,
				     bool passive);
u16 dsmem_sockaddr_port(const struct sockaddr_storage *ss);
void dsmem_peer_put(struct dsmem_peer *peer);
void dsmem_peer_delete(struct dsmem_peer *peer);
void dsmem_peer_start(struct dsmem_peer *peer);
int dsmem_conn_listen_request(struct dsmem_node *node, struct rdma_cm_id *id,
			      struct rdma_cm_event *ev);
int dsmem_conn_cm_event(struct dsmem_conn *conn, struct rdma_cm_event *ev);
struct dsmem_conn *dsmem_conn_lookup(struct dsmem_node *node, u32 remote);
void dsmem_conn_put(struct dsmem_conn *conn);
void dsmem_conn_close(struct dsmem_conn *conn, int err);
int dsmem_wc_errno(enum ib_wc_status s);
void dsmem_conn_wc_error(struct dsmem_conn *conn, const struct ib_wc *wc);
int dsmem_conn_post(struct dsmem_conn *conn, struct ib_send_wr *wr,
		    atomic_t *credits, enum dsmem_conn_state state,
		    void (*undo)(struct ib_send_wr *wr));
u32 dsmem_conn_max_sge(struct dsmem_conn *conn, bool read);
int dsmem_conn_wait_credit(struct dsmem_conn *conn, atomic_t *credits);
void dsmem_conn_put_credit(struct dsmem_conn *conn, atomic_t *credits);

/* rdm/dsmem_auth.c */
int dsmem_auth_init(void);
void dsmem_auth_exit(void);
bool dsmem_key_exists(struct net *net, const char *name);
int dsmem_auth_proof(struct net *net, const char *name,
		     const struct dsmem_wire_auth_info *a,
		     u8 proof[DSMEM_WIRE_AUTH_LEN]);

/* rdm/dsmem_msg.c */
int dsmem_msg_recv_init(struct dsmem_conn *conn);
void dsmem_msg_recv_free(struct dsmem_conn *conn);
void dsmem_msg_rx_work(struct work_struct *work);
void dsmem_msg_fail_pending(struct dsmem_conn *conn, int err);
int dsmem_msg_call(struct dsmem_conn *conn, struct dsmem_wire_msg *req,
		   struct dsmem_wire_msg *reply, void *data, size_t data_max);
int dsmem_msg_call_timeout(struct dsmem_conn *conn, struct dsmem_wire_msg *req,
			   struct dsmem_wire_msg *reply, void *data,
			   size_t data_max, unsigned int timeout_ms);
int dsmem_msg_start(struct dsmem_conn *conn, struct dsmem_msg_wait *w,
		    struct dsmem_wire_msg *req, struct dsmem_wire_msg *reply,
		    void *data, size_t data_max);
int dsmem_msg_finish(struct dsmem_conn *conn, struct dsmem_msg_wait *w,
		     unsigned int timeout_ms);
int dsmem_msg_send(struct dsmem_conn *conn, const struct dsmem_wire_msg *m);
int dsmem_msg_send_auth(struct dsmem_conn *conn, const u8 *proof);

/* rdm/dsmem_seg_msg.c: the segment service */
int dsmem_seg_service_init(void);
void dsmem_seg_service_exit(void);
struct dsmem_rseg *dsmem_rseg_lookup(struct dsmem_conn *conn, u64 gaddr);

/* rdm/dsmem_seg.c */
void dsmem_seg_put(struct dsmem_seg *seg);
int dsmem_seg_create(struct dsmem_node *node, u64 size, int numa,
		     u8 translate, struct dsmem_seg **segp,
		     struct netlink_ext_ack *extack);
void dsmem_seg_destroy(struct dsmem_seg *seg);
int dsmem_seg_grant(struct dsmem_seg *seg, u32 remote, u32 perm);
int dsmem_seg_revoke(struct dsmem_seg *seg, u32 remote);
void dsmem_seg_conn_up(struct dsmem_conn *conn);
void dsmem_seg_conn_down(struct dsmem_conn *conn);
u32 dsmem_seg_perm(struct dsmem_seg *seg, u32 remote);
struct dsmem_seg *dsmem_seg_by_addr(struct dsmem_node *node, u64 gaddr);
int dsmem_seg_alloc(struct dsmem_seg *seg, u64 len, u64 *va,
		    u64 *pa);
int dsmem_seg_free(struct dsmem_seg *seg, u64 va);
int dsmem_seg_access(struct dsmem_seg *seg, u64 va, void *buf, u64 len,
		     bool write);

/* rdm/dsmem_xfer.c: the data path behind /dev/dsmem */
struct dsmem_xfer_file;
int dsmem_xfer_conn_init(struct dsmem_conn *conn);
int dsmem_xfer_open(struct dsmem_xfer_file **filep);
void dsmem_xfer_release(struct dsmem_xfer_file *file);
__poll_t dsmem_xfer_poll(struct dsmem_xfer_file *file, struct file *filp,
			 poll_table *wait);
int dsmem_xfer_attach(struct dsmem_xfer_file *file, void *arg);
int dsmem_xfer_mr_reg(struct dsmem_xfer_file *file, void *arg);
int dsmem_xfer_mr_dereg(struct dsmem_xfer_file *file, void *arg);
int dsmem_xfer_submit(struct dsmem_xfer_file *file, void *arg);
int dsmem_xfer_task(struct dsmem_xfer_file *file, void *arg);
void dsmem_xfer_node_dead(struct dsmem_node *node);
struct dsmem_node *dsmem_xfer_node_get(struct dsmem_xfer_file *file);

/* rdm/dsmem_rdm_nl.c: notifications of nodes, peers, segments */
void dsmem_nl_notify_node(struct dsmem_node *node, u8 cmd);
void dsmem_nl_notify_peer(struct dsmem_peer *peer, u8 cmd);
void dsmem_nl_notify_seg(struct dsmem_seg *seg, u8 cmd);

/*
 * tokencache/: tokens and handles of the module's RDMA objects and the
 * three-tier cache they are resolved through.
 *
 * Lock order: dsmem_node.lock (grant MRs' tokens) and dsmem_tc.admin_lock,
 * never nested, -> dsmem_tc_inst.lock (a spinlock, taken _bh: completions
 * resolve tokens in softirq; a leaf but for the page allocator).
 * dsmem_trace_lock (dsmem_tc_trace.c) only nests inside nothing of ours.
 * Resolving takes no lock but an L2 entry's LRU move and a promotion's
 * queueing.
 */
enum dsmem_tc_kind {
	DSMEM_TC_CONN,		/* a connection's PD, CQ or QP */
	DSMEM_TC_GRANT_MR,	/* an MR of a segment granted to a peer */
	DSMEM_TC_USER_MR,	/* a buffer registered on /dev/dsmem */
};

struct dsmem_tc_inst {
	struct dstc_cache c;
	spinlock_t lock;		/* the core's structural lock */
	int nid;			/* L2 pages' node; NUMA_NO_NODE: local */
	atomic_t l2_pages;
	struct dstc_stats __percpu *stats;
};

struct dsmem_tc {
	struct dsmem_tc_inst live;
	struct mutex admin_lock;	/* netlink changes, one at a time */
	struct xarray objs;		/* entry id -> what it stands for */
	struct ida ida[DSMEM_TOKEN_TYPES];	/* token indexes per type */
	struct work_struct run_work;	/* a promotion batch is ready */
	struct delayed_work maint_work;
	struct dstc_stats *maint_total;	/* the maintenance worker's sum */
	u64 rate_ns;
	u64 rate_migrations;
	u64 migrate_rate;		/* per second */
};

struct dsmem_tc_bench_res {
	u64 accesses;
	u64 hits[3];
	u64 modeled_ns;
	u64 migrations;
	u64 l1_mean_ns, l1_p99_ns;
	u64 miss_mean_ns, miss_p99_ns;
};

/* What a replay did; the caller supplies the memory. */
struct dsmem_tc_replay_res {
	struct dstc_stats *st;
	struct dsmem_cache_move *moves;	/* DSMEM_REPLAY_MOVES_MAX of them */
	u32 nmoves;
	bool truncated;			/* more moves were made */
};

extern struct dsmem_tc dsmem_tc;

/* A handle's directory entry: one id space, types side by side. */
static inline u32 dsmem_tc_eid(u32 handle)
{
	return DSMEM_HANDLE_TYPE(handle) << 16 | DSMEM_HANDLE_INDEX(handle);
}

extern struct dsmem_trace __rcu *dsmem_trace_cur;

/* tokencache/dsmem_tc.c */
int dsmem_tc_init(void);
void dsmem_tc_exit(void);
int dsmem_tc_inst_init(struct dsmem_tc_inst *in, u32 nentries, const u64 *p);
void dsmem_tc_inst_destroy(struct dsmem_tc_inst *in);
void dsmem_tc_inst_stats(struct dsmem_tc_inst *in, struct dstc_stats *sum);
void dsmem_tc_inst_stats_reset(struct dsmem_tc_inst *in);
int dsmem_tc_chunk_prepare(struct dsmem_tc_inst *in, u32 eid);
int dsmem_tc_add(const union dsmem_token *tok, struct net *net, u32 node,
		 u8 kind, u32 owner, u32 sub, u32 *handle);
void dsmem_tc_del(u32 handle);
int dsmem_tc_resolve(u32 handle, u8 op, union dsmem_token *tok);
int dsmem_tc_write(u32 handle, const union dsmem_token *tok);
int dsmem_tc_add_pd(struct ib_pd *pd, struct net *net, u32 node, u32 peer,
		    u32 *handle);
int dsmem_tc_add_cq(struct ib_cq *cq, struct net *net, u32 node, u32 peer,
		    u32 *handle);
int dsmem_tc_add_qp(struct ib_qp *qp, u32 pd, u32 cq, struct net *net,
		    u32 node, u32 peer, u32 *handle);
int dsmem_tc_add_mr(u32 lkey, int access, unsigned long npages,
		    struct net *net, u32 node, u8 kind, u32 owner, u32 sub,
		    u32 *handle);
void dsmem_tc_qp_state(u32 handle, u8 state);
int dsmem_tc_describe(u32 eid, char *buf, size_t len);
bool dsmem_tc_visible(u32 eid, struct net *net);

/* tokencache/dsmem_tc_trace.c */
static inline bool dsmem_tc_tracing(void)
{
	return rcu_access_pointer(dsmem_trace_cur);
}

void dsmem_tc_trace(u32 handle, u32 node, u8 op, u8 tier);
int dsmem_tc_trace_start(int fd, struct netlink_ext_ack *extack);
int dsmem_tc_trace_stop(u64 *records, u64 *dropped, int *err);
void dsmem_tc_trace_state(bool *active, u64 *records, u64 *dropped);
void dsmem_tc_trace_exit(void);

/* tokencache/dsmem_tc_bench.c */
int dsmem_tc_bench(u32 qps, u32 ops, u32 seed, const u64 *p,
		   struct dsmem_tc_bench_res *r);
int dsmem_tc_replay(const void *recs, u32 n, u64 maint_ns, const u64 *p,
		    struct dsmem_tc_replay_res *r, const char **why);

/* tokencache/dsmem_tc_nl.c */
int dsmem_nl_cache_params(struct nlattr *nest, u64 *p,
			  struct netlink_ext_ack *extack);

/*
 * slope_fault/: the Slope range of each node, its dirty tracking and the
 * migration of objects.  Its locks are documented in
 * slope_fault/dsmem_slope.h; from outside, only the ioctl and message
 * entry points below are called, with no lock of ours held.
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
/* rdm/dsmem_seg.c, for slope_fault/ too */
int dsmem_reg_post(struct dsmem_conn *conn, struct ib_mr *mr, int access);

/* dsmem_netlink.c */
int dsmem_nl_init(void);
void dsmem_nl_exit(void);
void dsmem_nl_notify_dev(struct dsmem_device *sdev, u8 cmd);
struct genl_family *dsmem_nl_family_get(void);
struct sk_buff *dsmem_nl_reply_new(struct genl_info *info, u8 cmd,
				   void **hdr);
int dsmem_nl_reply_send(struct genl_info *info, struct sk_buff *msg, int ret);
struct dsmem_device *dsmem_nl_find_dev(struct genl_info *info);
void dsmem_nl_multicast(struct net *net, struct sk_buff *skb);

/* dsmem_chrdev.c */
int dsmem_chrdev_init(void);
void dsmem_chrdev_exit(void);

/* what this module offers (DSMEM_FEAT_*): the version ioctl and netlink */
static inline u64 dsmem_features(void)
{
	return DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS | DSMEM_FEAT_RDM |
	       DSMEM_FEAT_TOKENCACHE | DSMEM_FEAT_SLOPE;
}

#endif /* _DSMEM_PRIV_H */
