/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the transport's declarations, shared by the files of kernel/rdm
 * and by the services and the front that use it.
 */
#ifndef _DSMEM_RDM_H
#define _DSMEM_RDM_H

#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rwsem.h>
#include <linux/socket.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <uapi/linux/dsmem_netlink.h>

#include "../dsmem_priv.h"
#include "../dsmem_wire.h"
#include "dsmem_service.h"

/*
 * kernel/rdm: nodes, their connections to peers, segments and the data
 * path.
 *
 * Lock order:
 *   dsmem_nodes_lock -> dsmem_devs_lock -> net_rwsem
 *   dsmem_node.lock -> dsmem_node.dev_lock (a leaf)
 *   rdma_cm's handler lock -> dsmem_node.lock -> seg->lock (a leaf),
 *	peer->lock, conn->lock (spinlocks, leaves), dsmem_tc_inst.lock,
 *	conn->post_sem (read: a GRANT sent), dsmem_key_net.lock
 *   dsmem_reap_lock (dsmem_conn.c) -> conn->lock
 *   conn->post_sem (read: a post's doorbell and WQE token lookups) ->
 *	dsmem_tc_inst.lock
 *   conn->post_sem (read: a dial, until rdma_resolve_addr returned) ->
 *	peer->lock, rdma_cm's address resolution
 *   file->lock -> dsmem_nodes_lock
 * dsmem_nodes_lock (dsmem_node.c) protects the node tables (the host's,
 * and each namespace's by id), each node's dead flag and the module's
 * stopping flag.  A node's lock protects its
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

/* One of a node's RDMA devices: there while the node is, unless gone. */
struct dsmem_node_dev {
	struct dsmem_device *sdev;
	/*
	 * Compared, never dereferenced, by dsmem_node_dev_slot(): a node
	 * still being made may outlive a device removed meanwhile, until it
	 * sees so and fails.
	 */
	struct ib_device *ibdev;
	int numa;			/* where it is attached; NUMA_NO_NODE */
	/*
	 * The device went and the node carries on with the others
	 * (dsmem_node_dev_lost): set once, under node->lock and
	 * node->dev_lock, so that either orders a reader against it; ibdev
	 * is not dereferenced after.
	 */
	bool gone;
	/* PDs of the node's connections on it, which hold its MRs and QPs */
	atomic_t pds;
};

/* node-new names no NUMA node for a device: it says where it is */
#define DSMEM_NUMA_ASK		(NUMA_NO_NODE - 1)

/*
 * Who may use a node -- attach a descriptor, make segments and grant them,
 * read its peers -- checked as opening a file with this owner, group and
 * mode is (dsmem_node_may_use_locked).
 */
struct dsmem_node_access {
	kuid_t owner;
	kgid_t group;
	u16 mode;			/* 0 to 0777 */
};

struct dsmem_node {
	enum dsmem_cm_ctx cm_ctx;	/* DSMEM_CM_LISTENER */
	u32 id;				/* unique within its namespace */
	u32 index;			/* unique on the host: the walks' key */
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
	/*
	 * Set at creation.  Connections arrive and leave on any of them;
	 * segments and user buffers are mapped for each.
	 */
	struct dsmem_node_dev devs[DSMEM_NODE_DEVS_MAX];
	unsigned int ndevs;
	/* a connection takes its device's slot, or sees it gone, under it */
	spinlock_t dev_lock;
	wait_queue_head_t pds_wait;	/* a devs[].pds fell to 0 */
	/*
	 * Unlinked to be torn down: on dsmem_nodes_dying (dsmem_nodes_lock),
	 * where a device going finds it, to wait for torn_down.
	 */
	struct list_head dying_link;
	struct completion torn_down;
	struct net *net;
	/*
	 * The memory cgroup of the process that made the node: what the node
	 * allocates for its peers, with no process of its own asking (Slope's
	 * incoming migrations), is charged there, as a socket's buffers are
	 * charged to its maker's.  An admin making a node for a tenant makes
	 * it from the tenant's cgroup (docs/security.md).  Segments are not
	 * charged here but to whoever makes them.  NULL when the controller
	 * is off.
	 */
	struct mem_cgroup *memcg;
	/* registrations its descriptors hold (the node_mrs parameter) */
	atomic_t user_mrs;
	/* shared rings its descriptors hold (the node_rings parameter) */
	atomic_t rings;
	struct rdma_cm_id *listen_id;
	/* under lock; the data path looks them up in RCU */
	struct xarray peers;		/* peer id -> dsmem_peer */
	struct xarray segs;		/* segment id -> dsmem_seg */
	/* lock: segments mapped for a device, those being destroyed too */
	struct list_head segs_mapped;
	u32 next_peer;			/* lock */
	u64 gmr_gen;			/* lock: the last GRANT's, dsmem_gmr */
	/* the key its peers prove; "": insecure (set at creation) */
	char key[DSMEM_KEY_NAME_MAX];
	u8 accept;			/* enum dsmem_accept, lock */
	struct dsmem_node_access access;	/* lock */
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
	/*
	 * Other paths to the peer, through other device pairs, while conn
	 * is up (dsmem_path.c): counted, closed with it.  paths_gen changes
	 * whenever one comes or goes (the data path's cue to look again).
	 */
	struct dsmem_conn *paths[DSMEM_PATHS_MAX];
	unsigned int paths_backoff_ms;
	atomic_t paths_gen;
	struct delayed_work connect_work;
	struct delayed_work paths_work;	/* ask for paths, dial them */
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
	struct ib_device *ibdev;	/* set with the QP */
	u32 port;			/* ibdev's port it uses */
	unsigned int ldev;		/* ibdev's slot in node->devs */
	/* 0: the peer's first connection (peer->conn); i: peer->paths[i - 1] */
	unsigned int path;
	struct ib_device *path_dev;	/* a path's, claimed; peer->lock */
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u32 max_sge;
	/* set with the QP, kept after it: a poster may read them late */
	u32 max_read_sge;
	u32 lkey;			/* the PD's local_dma_lkey */
	u32 remote_node;		/* known once connected */
	bool passive;			/* the other end connected to us */
	bool established;		/* rdma_cm said ESTABLISHED */
	bool qp_live;			/* the QP reached RTS: drain it */
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
	spinlock_t lock;		/* state, rx_list, reap flags; softirq */
	enum dsmem_conn_state state;
	int close_err;
	/* posting happens under read; the close path takes write once */
	struct rw_semaphore post_sem;
	atomic_t sq_free;		/* one-sided credits */
	void *slices;			/* one per credit; dsmem_xfer.c */
	struct llist_head slice_free;
	spinlock_t slice_lock;		/* taking a slice, not returning one */
	atomic_t msg_free;		/* message credits */
	/* messages posted and not completed, oldest first (dsmem_msg.c) */
	spinlock_t sends_lock;		/* softirq */
	struct list_head sends;
	/*
	 * The request window (DSMEM_WIRE_REQ_WINDOW, dsmem_proto.h): the
	 * requests we may still send before the peer says it handled some
	 * (req_free); the peer's last word on that, kept by the receive
	 * completions, which the CQ runs one at a time (peer_handled); the
	 * peer's requests we handled (rx_handled) and what we last told it
	 * (handled_told).
	 */
	atomic_t req_free;
	u32 peer_handled;
	atomic_t rx_handled;
	u32 handled_told;
	atomic_t credits_back;		/* credits returned, ever */
	unsigned int wd_back;		/* the watchdog's last look at it */
	unsigned long wd_since;		/* jiffies: no progress since */
	atomic_t sq_back;		/* one-sided credits returned, ever */
	unsigned int wd_sq_back;	/* the watchdog's last look at it */
	unsigned long wd_sq_since;	/* jiffies: no one-sided progress since */
	wait_queue_head_t sq_wait;
	struct dsmem_recv **recvs;
	/* sends flushed in error, freed with the QP: dsmem_msg.c */
	struct llist_head sends_flushed;
	struct list_head rx_list;	/* received requests, under lock */
	struct work_struct rx_work;
	struct work_struct up_work;
	struct work_struct release_work;
	struct delayed_work keepalive_work;
	/*
	 * Released, its QP, CQ, PD and id wait out rdma_cm's timewait,
	 * bounded (dsmem_conn_reap_later): whether that wait is queued, and
	 * whether TIMEWAIT_EXIT came, under lock.
	 */
	struct delayed_work reap_work;
	struct list_head reap_link;	/* dsmem_conns_reaping */
	bool reaping;
	bool timewait_exit;
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
	u32 tc_db;			/* the QP's send doorbell record */
	u32 tc_wqe;			/* ... and its work-request format */
};

/* where a connection's counts go: its node's namespace */
static inline struct net *dsmem_conn_net(const struct dsmem_conn *conn)
{
	return conn->peer->node->net;
}

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
	/* its chunks, mapped for each of the node's devices (node->devs) */
	struct sg_table sgt[DSMEM_NODE_DEVS_MAX];
	/* under the node's lock: the slots mapped; on node->segs_mapped */
	unsigned long mapped;
	struct list_head mapped_link;
	struct xarray grants;		/* remote node -> xa_mk_value(perm) */
	/* under the node's lock: as the connection's, and whether destroyed */
	struct list_head gmrs;
	unsigned int gmrs_out;
	bool dead;
	struct kref ref;		/* message handlers hold it */
	struct rcu_head rcu;
	struct mutex lock;		/* allocator and page table */
	/*
	 * The local path's copies hold it for reading, a MiB at a time; a
	 * change of the node's grant to itself, for writing (after the
	 * node's lock), to wait for the MiB under way.
	 */
	struct rw_semaphore copy_sem;
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
void dsmem_rdm_port_change(struct dsmem_device *sdev);
struct dsmem_node *dsmem_node_get(u32 id, struct net *net);
struct dsmem_node *dsmem_node_next(unsigned long *id, unsigned long max,
				   struct net *net);
bool dsmem_node_lock_live(struct dsmem_node *node);
void dsmem_node_put(struct dsmem_node *node);
int dsmem_node_create(u32 id, struct dsmem_device **sdevs, const int *numas,
		      unsigned int ndevs, u16 port, const char *key, u8 accept,
		      const struct dsmem_node_access *access,
		      struct net *net, struct netlink_ext_ack *extack);
bool dsmem_node_may_use_locked(struct dsmem_node *node, bool audit);
bool dsmem_node_may_use(struct dsmem_node *node, bool audit);
/* the extended-ack message of a request refused by dsmem_node_may_use() */
#define DSMEM_NODE_NOT_YOURS_MSG \
	"the node's owner, group and mode do not let you use it"
int dsmem_node_may_attach(struct dsmem_node *node);
int dsmem_node_dev_slot(const struct dsmem_node *node,
			const struct ib_device *ibdev);
struct ib_device *dsmem_node_first_dev(const struct dsmem_node *node);
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
void dsmem_peer_close(struct dsmem_peer *peer);
void dsmem_peer_start(struct dsmem_peer *peer);
int dsmem_conn_listen_request(struct dsmem_node *node, struct rdma_cm_id *id,
			      struct rdma_cm_event *ev);
int dsmem_conn_cm_event(struct dsmem_conn *conn, struct rdma_cm_event *ev);
struct dsmem_conn *dsmem_conn_lookup(struct dsmem_node *node, u32 remote);
unsigned int dsmem_peer_conns_up(struct dsmem_peer *peer,
				 struct dsmem_conn **conns);
int dsmem_peer_path_dial(struct dsmem_peer *peer,
			 const struct sockaddr_storage *addr);
void dsmem_peer_paths_retry(struct dsmem_peer *peer);
void dsmem_conn_put(struct dsmem_conn *conn);
void dsmem_conn_close(struct dsmem_conn *conn, int err);
void dsmem_conns_reap_now(struct ib_device *ibdev);
void dsmem_conns_dev_gone(struct dsmem_node *node, unsigned int slot);
void dsmem_conn_port_change(struct dsmem_node *node, struct ib_device *ibdev);
int dsmem_wc_errno(enum ib_wc_status s);
void dsmem_conn_wc_error(struct dsmem_conn *conn, const struct ib_wc *wc);
int dsmem_conn_post(struct dsmem_conn *conn, struct ib_send_wr *wr,
		    atomic_t *credits, enum dsmem_conn_state state,
		    int (*prep)(struct dsmem_conn *conn, struct ib_send_wr *wr),
		    void (*undo)(struct dsmem_conn *conn, struct ib_send_wr *wr));
u32 dsmem_conn_max_sge(struct dsmem_conn *conn, bool read);
/* @drop: a mutex the caller holds, let go while waiting (or NULL) */
int dsmem_conn_wait_credit(struct dsmem_conn *conn, atomic_t *credits, struct mutex *drop);
int dsmem_conn_wait_credit_timeout(struct dsmem_conn *conn, atomic_t *credits,
				   struct mutex *drop, long timeout);
void dsmem_conn_put_credit(struct dsmem_conn *conn, atomic_t *credits);
void dsmem_conn_put_credits(struct dsmem_conn *conn, atomic_t *credits,
			    unsigned int n);

/* rdm/dsmem_path.c: a peer's other paths */
extern bool dsmem_multipath;
int dsmem_path_service_init(void);
void dsmem_path_service_exit(void);
void dsmem_path_work(struct work_struct *work);

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
void dsmem_msg_send_free(struct dsmem_conn *conn);
void dsmem_msg_rx_work(struct work_struct *work);
void dsmem_msg_fail_pending(struct dsmem_conn *conn, int err);
/* how long a request waits for its reply: the msg_timeout_ms parameter */
unsigned int dsmem_msg_timeout_ms(void);
unsigned int dsmem_io_timeout_ms(void);
bool dsmem_msg_sends_overdue(struct dsmem_conn *conn, unsigned long since,
			     unsigned long timeout);
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
void dsmem_segs_dev_gone(struct dsmem_node *node, unsigned int slot);
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
void dsmem_xfer_node_dev_gone(struct dsmem_node *node, unsigned int slot);
struct dsmem_node *dsmem_xfer_node_get(struct dsmem_xfer_file *file);
int dsmem_xfer_init(void);
void dsmem_xfer_exit(void);

/* rdm/dsmem_ring.c: the data path's shared rings */
int dsmem_ring_setup(struct dsmem_xfer_file *file, void *arg);
int dsmem_ring_enter(struct dsmem_xfer_file *file, void *arg);
int dsmem_ring_mmap(struct dsmem_xfer_file *file, struct vm_area_struct *vma);

/* rdm/dsmem_rdm_nl.c: notifications of nodes, peers, segments */
void dsmem_nl_notify_node(struct dsmem_node *node, u8 cmd);
void dsmem_nl_notify_peer(struct dsmem_peer *peer, u8 cmd);
void dsmem_nl_notify_seg(struct dsmem_seg *seg, u8 cmd);

/* rdm/dsmem_seg.c, for slope_fault/ too */
int dsmem_reg_post(struct dsmem_conn *conn, struct ib_mr *mr, int access);

#endif /* _DSMEM_RDM_H */
