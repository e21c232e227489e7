// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: peers and their connections.
 *
 * A peer is the configuration (an address to connect to, or the node that
 * connected to us) and outlives its connections.  A connection is one
 * rdma_cm id with its PD, CQ and RC QP.  One PD per connection scopes
 * remote access per peer: an rkey registered for one peer is useless on
 * any other peer's QP.  A lost connection is released whole and, for the
 * side that connected, replaced after a backoff.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <net/addrconf.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>

#include "../tokencache/dsmem_tc.h"
#include "dsmem_rdm.h"

#define DSMEM_SGE_MAX		32
#define DSMEM_SEND_WR	(DSMEM_SQ_DEPTH + DSMEM_MSG_DEPTH + 1)
#define DSMEM_RECV_WR	(DSMEM_RQ_DEPTH + 1)

static void dsmem_peer_release(struct kref *ref)
{
	struct dsmem_peer *peer = container_of(ref, struct dsmem_peer, ref);

	dsmem_node_put(peer->node);
	kfree_rcu(peer, rcu);
}

void dsmem_peer_put(struct dsmem_peer *peer)
{
	kref_put(&peer->ref, dsmem_peer_release);
}

/*
 * Every xarray a file initialises shares one lock class: pending's lock is
 * taken in softirq (with _bh in process context), the remote segments' only
 * in process context.
 */
static struct lock_class_key dsmem_rsegs_lock_key;

static void dsmem_conn_release(struct kref *ref)
{
	struct dsmem_conn *conn = container_of(ref, struct dsmem_conn, ref);

	WARN_ON(!list_empty(&conn->gmrs));
	xa_destroy(&conn->pending);
	xa_destroy(&conn->rsegs);
	dsmem_peer_put(conn->peer);
	kfree(conn->slices);
	kfree(conn);
}

void dsmem_conn_put(struct dsmem_conn *conn)
{
	kref_put(&conn->ref, dsmem_conn_release);
}

static void dsmem_conn_up_work(struct work_struct *work);
static bool dsmem_peer_dev_claim(struct dsmem_peer *peer,
				 struct ib_device *ibdev, struct dsmem_conn *self);
static bool dsmem_sockaddr_same_host(const struct sockaddr_storage *a,
				     const struct sockaddr_storage *b);
/* An address of this host, as seen from the node's namespace. */
static bool dsmem_sockaddr_local(struct net *net,
				 const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)a;

		return inet_addr_type(net, in->sin_addr.s_addr) == RTN_LOCAL;
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a;

		return ipv6_chk_addr(net, &in6->sin6_addr, NULL, 0);
	}
#endif
	return false;
}

/*
 * The other end refused the connect: rejected, or reset before it came
 * up (the flush of a rejected QP may close it before the rejection does).
 */
static bool dsmem_conn_refused(const struct dsmem_conn *conn)
{
	return !conn->was_up && (conn->close_err == -ECONNREFUSED ||
				 conn->close_err == -ECONNRESET);
}

static void dsmem_conn_release_work(struct work_struct *work);
static void dsmem_conn_keepalive_work(struct work_struct *work);
static void dsmem_peer_connect_work(struct work_struct *work);
static void dsmem_conn_deadline_work(struct work_struct *work);
static void dsmem_conn_reap_work(struct work_struct *work);

/* Released connections whose QPs wait out their timewait; -> conn->lock */
static LIST_HEAD(dsmem_conns_reaping);
static DEFINE_SPINLOCK(dsmem_reap_lock);

static struct dsmem_conn *dsmem_conn_alloc(struct dsmem_peer *peer)
{
	struct dsmem_conn *conn = kzalloc(sizeof(*conn), GFP_KERNEL);

	if (!conn || dsmem_xfer_conn_init(conn)) {
		kfree(conn);
		return NULL;
	}
	conn->cm_ctx = DSMEM_CM_CONN;
	kref_init(&conn->ref);
	kref_get(&peer->ref);
	conn->peer = peer;
	spin_lock_init(&conn->lock);
	conn->state = DSMEM_CONN_CONNECTING;
	init_rwsem(&conn->post_sem);
	atomic_set(&conn->sq_free, DSMEM_SQ_DEPTH);
	atomic_set(&conn->msg_free, DSMEM_MSG_DEPTH);
	atomic_set(&conn->req_free, DSMEM_WIRE_REQ_WINDOW);
	spin_lock_init(&conn->sends_lock);
	INIT_LIST_HEAD(&conn->sends);
	init_waitqueue_head(&conn->sq_wait);
	INIT_LIST_HEAD(&conn->reap_link);
	INIT_LIST_HEAD(&conn->rx_list);
	init_llist_head(&conn->sends_flushed);
	INIT_LIST_HEAD(&conn->gmrs);
	INIT_WORK(&conn->rx_work, dsmem_msg_rx_work);
	INIT_WORK(&conn->up_work, dsmem_conn_up_work);
	INIT_WORK(&conn->release_work, dsmem_conn_release_work);
	INIT_DELAYED_WORK(&conn->keepalive_work, dsmem_conn_keepalive_work);
	INIT_DELAYED_WORK(&conn->deadline_work, dsmem_conn_deadline_work);
	INIT_DELAYED_WORK(&conn->reap_work, dsmem_conn_reap_work);
	get_random_bytes(conn->nonce, sizeof(conn->nonce));
	xa_init_flags(&conn->pending, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	xa_init(&conn->rsegs);
	/* not the class of pending's lock, which the CQ handler takes */
	lockdep_set_class(&conn->rsegs.xa_lock, &dsmem_rsegs_lock_key);
	atomic_set(&conn->seq, 0);
	return conn;
}

/*
 * Tokens of the connection's PD, CQ and QP, and of the QP's send side as a
 * NIC holds it: the doorbell record each post rings and the format each
 * work request is built from.  The data path resolves them.
 */
static int dsmem_conn_tokens_add(struct dsmem_conn *conn, u32 sq_depth)
{
	struct dsmem_node *node = conn->peer->node;
	u32 peer = conn->peer->id;
	union dsmem_token t;
	int ret;

	ret = dsmem_tc_add_pd(conn->pd, node->net, node->id, peer, &conn->tc_pd);
	if (ret)
		return ret;
	ret = dsmem_tc_add_cq(conn->cq, node->net, node->id, peer, &conn->tc_cq);
	if (ret)
		goto err_del_pd;
	ret = dsmem_tc_add_qp(conn->qp, conn->tc_pd, conn->tc_cq, node->net,
			      node->id, peer, &conn->tc_qp);
	if (ret)
		goto err_del_cq;

	dstc_token_init(&t, DSMEM_TOKEN_DB, 0);
	t.db.qpn = conn->qp->qp_num;
	t.db.sq_depth = min_t(u32, sq_depth, U16_MAX);
	t.db.qp_index = DSMEM_HANDLE_INDEX(conn->tc_qp);
	ret = dsmem_tc_add(&t, node->net, node->id, DSMEM_TC_CONN, peer, 0,
			   &conn->tc_db);
	if (ret)
		goto err_del_qp;

	dstc_token_init(&t, DSMEM_TOKEN_WQE, 0);
	t.wqe.lkey = conn->lkey;
	t.wqe.max_sge = min_t(u32, conn->max_sge, U8_MAX);
	t.wqe.max_read_sge = min_t(u32, conn->max_read_sge, U8_MAX);
	t.wqe.qp_index = DSMEM_HANDLE_INDEX(conn->tc_qp);
	ret = dsmem_tc_add(&t, node->net, node->id, DSMEM_TC_CONN, peer, 0,
			   &conn->tc_wqe);
	if (ret)
		goto err_del_db;
	return 0;

err_del_db:
	dsmem_tc_del(conn->tc_db);
	conn->tc_db = 0;
err_del_qp:
	dsmem_tc_del(conn->tc_qp);
	conn->tc_qp = 0;
err_del_cq:
	dsmem_tc_del(conn->tc_cq);
	conn->tc_cq = 0;
err_del_pd:
	dsmem_tc_del(conn->tc_pd);
	conn->tc_pd = 0;
	return ret;
}

static void dsmem_conn_tokens_del(struct dsmem_conn *conn)
{
	dsmem_tc_del(conn->tc_wqe);
	dsmem_tc_del(conn->tc_db);
	dsmem_tc_del(conn->tc_qp);
	dsmem_tc_del(conn->tc_cq);
	dsmem_tc_del(conn->tc_pd);
	conn->tc_wqe = 0;
	conn->tc_db = 0;
	conn->tc_qp = 0;
	conn->tc_cq = 0;
	conn->tc_pd = 0;
}

/* False when ib_core's cache says the port is not ACTIVE: a cable out. */
static bool dsmem_port_active(struct ib_device *ibdev, u32 port)
{
	enum ib_port_state state;

	if (ib_get_cached_port_state(ibdev, port, &state))
		return true;	/* unknown: the connection finds out */
	return state == IB_PORT_ACTIVE;
}

/* The PD goes, with the QP, CQ and MRs in it (the cm_id goes after). */
static void dsmem_conn_dealloc_pd(struct dsmem_conn *conn)
{
	struct dsmem_node *node = conn->peer->node;

	ib_dealloc_pd(conn->pd);
	conn->pd = NULL;
	if (atomic_dec_and_test(&node->devs[conn->ldev].pds))
		wake_up_all(&node->pds_wait);
}

/*
 * ib_free_cq() waits for a scheduled poll to clear its bit, but
 * ib_poll_handler() clears it (irq_poll_complete) before it re-arms the
 * CQ, and the re-arm takes the CQ's lock: a free on another CPU in that
 * window frees the CQ under the handler.  The CQ's QP is gone, so no new
 * completion schedules a poll; we hold the poll off as ib_free_cq() does,
 * and wait out a handler past its irq_poll_complete() -- it runs in
 * softirq, an RCU read-side section -- before letting ib_free_cq() have
 * the bit.
 */
static void dsmem_conn_free_cq(struct dsmem_conn *conn)
{
	irq_poll_disable(&conn->cq->iop);
	synchronize_rcu();
	irq_poll_enable(&conn->cq->iop);
	ib_free_cq(conn->cq);
	conn->cq = NULL;
}

static int dsmem_conn_create_qp(struct dsmem_conn *conn)
{
	struct ib_device *ibdev = conn->cm_id->device;
	struct dsmem_node *node = conn->peer->node;
	struct ib_qp_init_attr attr = {};
	int ret;

	/*
	 * The slot, or gone: once a device is marked gone, every connection
	 * on it is found by its ibdev (dsmem_conns_dev_gone), or fails here.
	 */
	spin_lock(&node->dev_lock);
	ret = dsmem_node_dev_slot(node, ibdev);
	if (ret >= 0) {
		conn->ldev = ret;
		conn->port = conn->cm_id->port_num;
		/* the port first: dsmem_conn_port_change reads them the other way */
		smp_store_release(&conn->ibdev, ibdev);
	}
	spin_unlock(&node->dev_lock);
	if (ret < 0)
		return ret;
	conn->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(conn->pd)) {
		ret = PTR_ERR(conn->pd);
		goto err_clear_pd;
	}
	conn->lkey = conn->pd->local_dma_lkey;
	atomic_inc(&node->devs[conn->ldev].pds);
	conn->cq = ib_alloc_cq(ibdev, conn, DSMEM_SEND_WR + DSMEM_RECV_WR, 0,
			       IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		goto err_dealloc_pd;
	}

	conn->max_sge = min_t(u32, ibdev->attrs.max_send_sge, DSMEM_SGE_MAX);
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.cap.max_send_wr = DSMEM_SEND_WR;
	attr.cap.max_recv_wr = DSMEM_RECV_WR;
	attr.cap.max_send_sge = conn->max_sge;
	attr.cap.max_recv_sge = 1;
	ret = rdma_create_qp(conn->cm_id, conn->pd, &attr);
	if (ret)
		goto err_free_cq;
	conn->qp = conn->cm_id->qp;
	conn->max_read_sge = conn->qp->max_read_sge;

	ret = dsmem_conn_tokens_add(conn, attr.cap.max_send_wr);
	if (ret)
		goto err_destroy_qp;
	ret = dsmem_msg_recv_init(conn);
	if (ret)
		goto err_del_tokens;
	return 0;

err_del_tokens:
	dsmem_conn_tokens_del(conn);
err_destroy_qp:
	rdma_destroy_qp(conn->cm_id);
	conn->qp = NULL;
	/* the receives' flushes may still be queued: see destroy_qp */
	dsmem_conn_free_cq(conn);
	dsmem_msg_recv_free(conn);
	dsmem_msg_send_free(conn);
	goto err_dealloc_pd;
err_free_cq:
	dsmem_conn_free_cq(conn);
err_dealloc_pd:
	dsmem_conn_dealloc_pd(conn);
	return ret;
err_clear_pd:
	conn->pd = NULL;
	return ret;
}

/*
 * A drained QP has nothing left to complete, but one that never reached
 * RTS is not drained: moving it to error flushes its posted receives, and
 * those completions may still wait in the CQ for a softirq poll.  Freeing
 * the CQ stops its polling, so the receive buffers go only after it, and
 * so do the sends flushed in error, which rxe may read until its QP is
 * destroyed.
 */
static void dsmem_conn_destroy_qp(struct dsmem_conn *conn)
{
	rdma_destroy_qp(conn->cm_id);
	conn->qp = NULL;
	dsmem_conn_free_cq(conn);
	dsmem_msg_recv_free(conn);
	dsmem_msg_send_free(conn);
	dsmem_conn_dealloc_pd(conn);
}

static bool dsmem_conn_keyed(const struct dsmem_conn *conn)
{
	return conn->peer->node->key[0];
}

/*
 * Whether the other end's rdma_cm private data asks for what the node
 * asks: a keyed node and an insecure one never talk, so that neither
 * end can talk the other down to no authentication.
 */
static int dsmem_node_check_flags(const struct dsmem_node *node,
				  const struct dsmem_wire_cm_info *info)
{
	bool keyed = node->key[0];

	if (keyed == !!(info->flags & DSMEM_WIRE_CM_F_AUTH))
		return 0;
	dsmem_stat_inc(node->net, DSMEM_STAT_AUTH_MISMATCH);
	pr_notice_ratelimited("node %u: node %u %s, refusing the connection\n",
			      node->id, info->src_node,
			      keyed ? "does not authenticate" :
			      "wants to authenticate and this node is insecure");
	return -EKEYREJECTED;
}

/*
 * Whether the node at the other end is the one the peer was added for:
 * a peer that answers with another id is refused, as a node that is not
 * the one the administrator meant.
 */
static int dsmem_conn_check_node(struct dsmem_peer *peer, u32 remote)
{
	if (!peer->expect_node || peer->expect_node == remote)
		return 0;
	dsmem_stat_inc(peer->node->net, DSMEM_STAT_CONN_WRONG_NODE);
	pr_notice_ratelimited("node %u: peer %u answered as node %u, not node %u\n",
			      peer->node->id, peer->id, remote,
			      peer->expect_node);
	return -EPROTO;
}

static void dsmem_conn_param(struct dsmem_conn *conn,
			     struct rdma_conn_param *p, struct dsmem_wire_cm *cm,
			     u32 dst_node)
{
	const struct ib_device_attr *a = &conn->ibdev->attrs;
	struct dsmem_wire_cm_info info = {
		.src_node = conn->peer->node->id,
		.dst_node = dst_node,
		.flags = (dsmem_conn_keyed(conn) ? DSMEM_WIRE_CM_F_AUTH : 0) |
			 (conn->path ? DSMEM_WIRE_CM_F_PATH : 0),
	};

	memcpy(info.nonce, conn->nonce, sizeof(info.nonce));
	dsmem_wire_cm_encode(cm, &info);
	memset(p, 0, sizeof(*p));
	p->private_data = cm;
	p->private_data_len = sizeof(*cm);
	/* READ and atomics need outstanding-read resources at both ends */
	p->responder_resources = min_t(u32, a->max_qp_rd_atom, 16);
	p->initiator_depth = min_t(u32, a->max_qp_init_rd_atom, 16);
	/*
	 * rxe retries forever at 7 (as IB does for RNR only), so a dead link
	 * would never fail a request; 6 lets the transport give up.
	 */
	p->retry_count = 6;
	/*
	 * Bounded (7 would be for ever): a peer that keeps the buffers its
	 * window promises never NAKs for long, and one that trickles them
	 * loses the connection after six NAKs, a few seconds at most.
	 */
	p->rnr_retry_count = 6;
}

/*
 * Begin closing: no new posts, waiters woken, the release queued.  Process
 * or softirq context, any number of times; the first error is the one reported.
 */
void dsmem_conn_close(struct dsmem_conn *conn, int err)
{
	bool was_up;

	spin_lock_bh(&conn->lock);
	if (conn->state == DSMEM_CONN_CLOSING) {
		spin_unlock_bh(&conn->lock);
		return;
	}
	was_up = conn->state == DSMEM_CONN_UP;
	conn->state = DSMEM_CONN_CLOSING;
	conn->close_err = err;
	spin_unlock_bh(&conn->lock);

	/* the first reason, here: the release may find the peer deleted */
	if (was_up && err != -ECONNABORTED)
		pr_notice_ratelimited("node %u: connection to node %u lost (%pe)\n",
				      conn->peer->node->id, conn->remote_node,
				      ERR_PTR(err));

	wake_up_all(&conn->sq_wait);
	kref_get(&conn->ref);
	if (!queue_work(dsmem_wq, &conn->release_work))
		dsmem_conn_put(conn);
}

/* What a failed work request tells its issuer. */
int dsmem_wc_errno(enum ib_wc_status s)
{
	switch (s) {
	case IB_WC_REM_ACCESS_ERR:
	case IB_WC_LOC_PROT_ERR:
		return -EACCES;
	case IB_WC_WR_FLUSH_ERR:
		return -ECONNRESET;
	case IB_WC_RETRY_EXC_ERR:
	case IB_WC_RNR_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	case IB_WC_REM_INV_REQ_ERR:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/*
 * A work request completed in error.  An RC error leaves the QP unusable,
 * and a flush we did not cause (the QP went to error under another work
 * request, or under the provider) means the same: start over.  Closing is
 * idempotent, so the flushes of our own close cost nothing.
 */
void dsmem_conn_wc_error(struct dsmem_conn *conn, const struct ib_wc *wc)
{
	if (wc->status == IB_WC_RNR_RETRY_EXC_ERR &&
	    READ_ONCE(conn->state) != DSMEM_CONN_CLOSING) {
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_RNR_EXCEEDED);
		pr_notice_ratelimited("node %u: node %u posts no receive buffer for our messages, closing the connection\n",
				      conn->peer->node->id, conn->remote_node);
	}
	dsmem_conn_close(conn, dsmem_wc_errno(wc->status));
}

/*
 * The one way work goes on a connection's send queue.  The caller took a
 * credit of @credits (dsmem_conn_wait_credit) and then prepared @wr and
 * what its completion needs.  It is posted only while the connection is
 * in @state (UP; CONNECTING for the handshake), under post_sem, so that
 * a closing connection has seen every post before it drains.  @prep (may
 * be NULL) runs there too, once the state is checked: what needs the
 * device (a DMA mapping) is made only while the device is certainly the
 * connection's, which it stays until the release has taken post_sem.  On
 * failure @undo (may be NULL) gives back what the caller and @prep
 * prepared for @wr, still under post_sem, then the credit goes back -- in
 * that order, so that whoever the credit wakes finds what it implies --
 * and a post the provider refused closes the connection: its queue is in
 * a state we cannot know.
 */
int dsmem_conn_post(struct dsmem_conn *conn, struct ib_send_wr *wr,
		    atomic_t *credits, enum dsmem_conn_state state,
		    int (*prep)(struct dsmem_conn *conn, struct ib_send_wr *wr),
		    void (*undo)(struct dsmem_conn *conn, struct ib_send_wr *wr))
{
	bool refused = false;
	int ret = -ECONNRESET;

	down_read(&conn->post_sem);
	if (READ_ONCE(conn->state) != state)
		goto err_undo;
	if (prep) {
		ret = prep(conn, wr);
		if (ret)
			goto err_undo;
	}
	ret = ib_post_send(conn->qp, wr, NULL);
	if (unlikely(ret)) {
		refused = true;
		goto err_undo;
	}
	/*
	 * What the NIC touches per post: the doorbell record, whose
	 * producer index moves (an inline update), then the format it
	 * builds the WQE by.  Accounting only: a miss changes nothing
	 * posted.  Under post_sem, which the tokens' removal waits for, so
	 * the handles read are not being deleted.
	 */
	dsmem_tc_resolve(conn->tc_db, DSMEM_TRACE_MODIFY, NULL);
	dsmem_tc_resolve(conn->tc_wqe, DSMEM_TRACE_READ, NULL);
	up_read(&conn->post_sem);
	return 0;

err_undo:
	if (undo)
		undo(conn, wr);
	up_read(&conn->post_sem);
	if (refused)
		dsmem_conn_close(conn, ret);
	dsmem_conn_put_credit(conn, credits);
	return ret;
}

/* SGEs one work request may carry: a READ may take fewer (iWARP: one). */
u32 dsmem_conn_max_sge(struct dsmem_conn *conn, bool read)
{
	return max_t(u32, read ? conn->max_read_sge : conn->max_sge, 1);
}

/*
 * Take one credit, sleeping while there is none, for @timeout jiffies at
 * most (MAX_SCHEDULE_TIMEOUT: for as long as it takes); fails once
 * closing, and with -ETIMEDOUT once the time is up.  @drop, if given, is
 * a mutex the caller holds: it is let go for the sleep (a wait for
 * credits is a wait for the peer) and taken again before the credit is,
 * so no credit is held while waiting for it.
 */
int dsmem_conn_wait_credit_timeout(struct dsmem_conn *conn, atomic_t *credits,
				   struct mutex *drop, long timeout)
{
	long left = timeout;

	for (;;) {
		if (READ_ONCE(conn->state) != DSMEM_CONN_UP)
			return -ECONNRESET;
		if (atomic_add_unless(credits, -1, 0))
			return 0;
		if (!left)
			return -ETIMEDOUT;
		if (drop)
			mutex_unlock(drop);
		left = wait_event_killable_timeout(conn->sq_wait,
						   atomic_read(credits) > 0 ||
						   READ_ONCE(conn->state) != DSMEM_CONN_UP,
						   left);
		if (drop)
			mutex_lock(drop);
		if (left < 0)
			return -EINTR;
	}
}

int dsmem_conn_wait_credit(struct dsmem_conn *conn, atomic_t *credits,
			   struct mutex *drop)
{
	return dsmem_conn_wait_credit_timeout(conn, credits, drop,
					      MAX_SCHEDULE_TIMEOUT);
}

void dsmem_conn_put_credits(struct dsmem_conn *conn, atomic_t *credits,
			    unsigned int n)
{
	atomic_add(n, &conn->credits_back);	/* progress, for the watchdog */
	if (credits == &conn->sq_free)
		atomic_add(n, &conn->sq_back);
	atomic_add(n, credits);
	if (wq_has_sleeper(&conn->sq_wait))
		wake_up(&conn->sq_wait);
}

void dsmem_conn_put_credit(struct dsmem_conn *conn, atomic_t *credits)
{
	dsmem_conn_put_credits(conn, credits, 1);
}

static void dsmem_peer_set_state(struct dsmem_peer *peer, u8 state, int err)
{
	spin_lock_bh(&peer->lock);
	peer->state = state;
	if (err)
		peer->last_err = err;
	spin_unlock_bh(&peer->lock);
	dsmem_nl_notify_peer(peer, DSMEM_CMD_PEER_STATE);
}

/* Counted out of the node's unauthenticated pool, once. */
static void dsmem_conn_unauth_done(struct dsmem_conn *conn)
{
	if (test_and_clear_bit(DSMEM_CONN_F_UNAUTH, &conn->flags))
		atomic_dec(&conn->peer->node->unauth);
}

/*
 * What the proof of one end covers (struct dsmem_wire_cm).  The GIDs are
 * those of the path this end's QP was moved to RTR with -- its own source
 * GID and the destination its packets go to -- so each end names the
 * pair it really talks over, whatever the other end's CM messages said:
 * a proof made for another pair, relayed or turned back at its maker,
 * does not check.  @gids is the storage they point into.
 */
static void dsmem_conn_auth_info(const struct dsmem_conn *conn, u8 role,
				 struct dsmem_wire_auth_info *a,
				 union ib_gid gids[2])
{
	const struct sa_path_rec *path = conn->cm_id->route.path_rec;
	bool passive = conn->passive;
	u32 self = conn->peer->node->id, qpn = conn->qp->qp_num;

	BUILD_BUG_ON(sizeof(gids[0]) != DSMEM_WIRE_GID_LEN);
	/*
	 * ib_cm turns a request's path around: sgid is this end's.  iWARP
	 * has no path record; its GIDs come from the id's own addresses.
	 */
	if (path && conn->cm_id->route.num_pri_alt_paths) {
		gids[0] = path->sgid;
		gids[1] = path->dgid;
	} else {
		rdma_read_gids(conn->cm_id, &gids[0], &gids[1]);
	}
	a->role = role;
	a->nonce_c = passive ? conn->peer_nonce : conn->nonce;
	a->nonce_a = passive ? conn->nonce : conn->peer_nonce;
	/* gids[0] is this end's, gids[1] the other end's */
	a->gid_c = passive ? gids[1].raw : gids[0].raw;
	a->gid_a = passive ? gids[0].raw : gids[1].raw;
	a->node_c = passive ? conn->remote_node : self;
	a->node_a = passive ? self : conn->remote_node;
	a->qpn_c = passive ? conn->remote_qpn : qpn;
	a->qpn_a = passive ? qpn : conn->remote_qpn;
}

/*
 * Send our proof (once) and check the peer's: 0 when it holds the key,
 * -EAGAIN while its proof has not arrived (its arrival queues us again).
 */
static int dsmem_conn_authenticate(struct dsmem_conn *conn)
{
	struct dsmem_node *node = conn->peer->node;
	u8 proof[DSMEM_WIRE_AUTH_LEN];
	struct dsmem_wire_auth_info a;
	union ib_gid gids[2];
	bool got;
	int ret;

	if (!conn->auth_sent) {
		dsmem_conn_auth_info(conn, conn->passive, &a, gids);
		ret = dsmem_auth_proof(node->net, node->key, &a, proof);
		if (!ret)
			ret = dsmem_msg_send_auth(conn, proof);
		if (ret)
			return ret;
		conn->auth_sent = true;
	}
	spin_lock_bh(&conn->lock);
	got = conn->auth_got;
	spin_unlock_bh(&conn->lock);
	if (!got)
		return -EAGAIN;
	dsmem_conn_auth_info(conn, !conn->passive, &a, gids);
	ret = dsmem_auth_proof(node->net, node->key, &a, proof);
	if (ret)
		return ret;
	ret = crypto_memneq(proof, conn->peer_proof, sizeof(proof)) ?
	      -EKEYREJECTED : 0;
	memzero_explicit(proof, sizeof(proof));
	return ret;
}

static void dsmem_conn_up_work(struct work_struct *work)
{
	struct dsmem_conn *conn = container_of(work, struct dsmem_conn,
					       up_work);
	struct dsmem_peer *peer = conn->peer;
	int ret;

	/* a proof may arrive before rdma_cm announces the connection */
	if (!smp_load_acquire(&conn->established))
		return;
	if (READ_ONCE(conn->state) != DSMEM_CONN_CONNECTING)
		return;
	if (dsmem_conn_keyed(conn)) {
		ret = dsmem_conn_authenticate(conn);
		if (ret == -EAGAIN)
			return;
		if (ret) {
			dsmem_stat_inc(dsmem_conn_net(conn),
				       ret == -ENOKEY ? DSMEM_STAT_AUTH_NOKEY :
				       ret == -EKEYREJECTED ?
				       DSMEM_STAT_AUTH_FAILED :
				       DSMEM_STAT_CONN_FAILED);
			pr_notice_ratelimited("node %u: node %u not authenticated (%s), closing the connection\n",
					      peer->node->id, conn->remote_node,
					      ret == -ENOKEY ? "this node's key is gone" :
					      ret == -EKEYREJECTED ? "wrong proof" :
					      "cannot send the proof");
			dsmem_conn_close(conn, ret);
			return;
		}
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_AUTH_OK);
	}
	dsmem_conn_unauth_done(conn);

	spin_lock_bh(&conn->lock);
	if (conn->state != DSMEM_CONN_CONNECTING) {
		spin_unlock_bh(&conn->lock);
		return;
	}
	conn->state = DSMEM_CONN_UP;
	conn->was_up = true;
	spin_unlock_bh(&conn->lock);
	/* rdma_cm moved the QP to RTS before announcing the connection */
	dsmem_tc_qp_state(conn->tc_qp, IB_QPS_RTS);

	if (conn->path) {
		/* the peer's state is its first connection's */
		spin_lock_bh(&peer->lock);
		peer->paths_backoff_ms = DSMEM_BACKOFF_MIN_MS;
		spin_unlock_bh(&peer->lock);
		atomic_inc(&peer->paths_gen);
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_PATH_UP);
	} else {
		spin_lock_bh(&peer->lock);
		peer->remote_node = conn->remote_node;
		peer->connects++;
		peer->backoff_ms = DSMEM_BACKOFF_MIN_MS;
		peer->last_err = 0;
		spin_unlock_bh(&peer->lock);
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_ESTABLISHED);
		dsmem_peer_set_state(peer, DSMEM_PEER_UP, 0);
	}

	/* requests that arrived before we were up */
	queue_work(dsmem_wq, &conn->rx_work);
	conn->wd_since = jiffies;
	conn->wd_sq_since = jiffies;
	queue_delayed_work(dsmem_wq, &conn->keepalive_work,
			   msecs_to_jiffies(DSMEM_KEEPALIVE_MS));
	dsmem_services_conn_up(conn);
}

static unsigned int io_timeout_ms = 8000;
module_param(io_timeout_ms, uint, 0644);
MODULE_PARM_DESC(io_timeout_ms,
		 "a connection with work requests outstanding and none completing for this long, a message of it not completed this long after it was sent, or requests of it unhandled by the peer this long, is closed (ms, >= 1000)");

/*
 * True when the send queue has had work outstanding and no completion for
 * io_timeout_ms, or a message was sent longer ago than that and has not
 * completed.  The transport's own retries need not end (a peer's link
 * down, a stuck responder), and a peer may dole out receive buffers just
 * fast enough for each send's RNR retries: this bounds every wait on the
 * connection.  (A request waiting for the peer's window is bounded so
 * too: dsmem_msg_window_take.)
 */
static bool dsmem_conn_stalled(struct dsmem_conn *conn)
{
	unsigned int back = atomic_read(&conn->credits_back);
	unsigned int sq_back = atomic_read(&conn->sq_back);
	bool busy = atomic_read(&conn->sq_free) < DSMEM_SQ_DEPTH ||
		    atomic_read(&conn->msg_free) < DSMEM_MSG_DEPTH;
	unsigned long timeout = msecs_to_jiffies(dsmem_io_timeout_ms());

	/*
	 * A message completes now and then, each long after it was sent: no
	 * progress -- unless one-sided work, which shares the send queue
	 * and which a peer cannot make us post, completes meanwhile: a
	 * message may wait behind a queue full of it, on a slow device,
	 * for longer than io_timeout_ms.  So a message's age counts from
	 * its sending or the one-sided work's last completion, whichever
	 * is later.
	 */
	if (sq_back != conn->wd_sq_back) {
		conn->wd_sq_back = sq_back;
		conn->wd_sq_since = jiffies;
	}
	if (dsmem_msg_sends_overdue(conn, conn->wd_sq_since, timeout))
		return true;

	if (!busy || back != conn->wd_back) {
		conn->wd_back = back;
		conn->wd_since = jiffies;
		return false;
	}
	return time_after(jiffies, conn->wd_since + timeout);
}

unsigned int dsmem_io_timeout_ms(void)
{
	return max(READ_ONCE(io_timeout_ms), 1000U);
}

/*
 * The RC transport acknowledges the ping; a dead peer fails the send or,
 * if the transport keeps retrying, leaves it outstanding: the watchdog.
 */
static void dsmem_conn_keepalive_work(struct work_struct *work)
{
	struct dsmem_conn *conn = container_of(to_delayed_work(work),
					       struct dsmem_conn,
					       keepalive_work);
	struct dsmem_wire_msg ping = { .opcode = DSMEM_WIRE_PING };

	if (READ_ONCE(conn->state) != DSMEM_CONN_UP)
		return;
	if (dsmem_conn_stalled(conn)) {
		pr_warn_ratelimited("node %u: no progress from node %u for %u ms, closing the connection\n",
				    conn->peer->node->id, conn->remote_node,
				    io_timeout_ms);
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_IO_TIMEOUT);
		dsmem_conn_close(conn, -ETIMEDOUT);
		return;
	}
	/* a busy connection proves itself; skip rather than queue behind */
	if (atomic_read(&conn->msg_free) > 0)
		dsmem_msg_send(conn, &ping);
	queue_delayed_work(dsmem_wq, &conn->keepalive_work,
			   msecs_to_jiffies(DSMEM_KEEPALIVE_MS));
}

/* A connection that did not authenticate in time goes. */
static void dsmem_conn_deadline_work(struct work_struct *work)
{
	struct dsmem_conn *conn = container_of(to_delayed_work(work),
					       struct dsmem_conn,
					       deadline_work);

	if (READ_ONCE(conn->state) != DSMEM_CONN_CONNECTING)
		return;
	pr_notice_ratelimited("node %u: node %u did not authenticate within %u ms, closing the connection\n",
			      conn->peer->node->id, conn->remote_node,
			      DSMEM_AUTH_TIMEOUT_MS);
	dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_AUTH_TIMEOUT);
	dsmem_conn_close(conn, -ETIMEDOUT);
}

/*
 * Never for a closing connection: the rdma_cm handler may still run while
 * the release tears it down, and the release cancels the deadline only
 * once, after the id is destroyed.
 */
static void dsmem_conn_deadline_start(struct dsmem_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (conn->state != DSMEM_CONN_CLOSING)
		queue_delayed_work(dsmem_wq, &conn->deadline_work,
				   msecs_to_jiffies(DSMEM_AUTH_TIMEOUT_MS));
	spin_unlock_bh(&conn->lock);
}

/* Take the peer out of its node's table; true for the one who did. */
static bool dsmem_peer_unlink(struct dsmem_peer *peer)
{
	struct dsmem_node *node = peer->node;
	bool owned = false;

	mutex_lock(&node->lock);
	if (xa_load(&node->peers, peer->id) == peer) {
		xa_erase(&node->peers, peer->id);
		owned = true;
	}
	mutex_unlock(&node->lock);
	return owned;
}

/* The QP, its CQ and PD, and the id go; the handler has run its last. */
static void dsmem_conn_reap(struct dsmem_conn *conn)
{
	if (conn->qp)
		dsmem_conn_destroy_qp(conn);
	rdma_destroy_id(conn->cm_id);
	conn->cm_id = NULL;
	/* its handler, which may start the deadline, has run its last */
	cancel_delayed_work_sync(&conn->deadline_work);
}

static void dsmem_conn_reap_work(struct work_struct *work)
{
	struct dsmem_conn *conn = container_of(to_delayed_work(work),
					       struct dsmem_conn, reap_work);

	spin_lock_bh(&conn->lock);
	/*
	 * The handler queues it no more, so this run may wait for the
	 * handler; and a queueing it did after the run started goes.
	 */
	if (!conn->timewait_exit)
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_TIMEWAIT_TIMEOUT);
	conn->reaping = false;
	cancel_delayed_work(&conn->reap_work);
	spin_unlock_bh(&conn->lock);

	dsmem_conn_reap(conn);
	/* listed until done: dsmem_conns_reap_now waits for this run */
	spin_lock(&dsmem_reap_lock);
	list_del_init(&conn->reap_link);
	spin_unlock(&dsmem_reap_lock);
	dsmem_conn_put(conn);
}

/*
 * A drained QP goes after rdma_cm's timewait, as the CM's QP reuse rule
 * asks, or after DSMEM_TIMEWAIT_MAX_MS if that is first: a peer that never
 * answers our DREQ keeps the CM retrying for minutes, and rxe's timewait
 * runs for seconds.  Meanwhile a peer's packet that arrived before the QP
 * left RTS finishes in the device: rxe in 6.1 still writes to a QP for a
 * moment after dropping its last reference to it.  Nobody waits for this
 * but module exit and device removal (dsmem_conns_reap_now).
 */
static void dsmem_conn_reap_later(struct dsmem_conn *conn)
{
	unsigned long delay = msecs_to_jiffies(DSMEM_TIMEWAIT_MAX_MS);

	kref_get(&conn->ref);
	/* listed and queued at once: dsmem_conns_reap_now flushes it */
	spin_lock(&dsmem_reap_lock);
	list_add_tail(&conn->reap_link, &dsmem_conns_reaping);
	spin_lock_bh(&conn->lock);
	conn->reaping = true;
	queue_delayed_work(dsmem_wq, &conn->reap_work,
			   conn->timewait_exit ? 0 : delay);
	spin_unlock_bh(&conn->lock);
	spin_unlock(&dsmem_reap_lock);
}

/*
 * Reap now what waits, on one device or (NULL) all: before the device
 * goes, or the module.
 */
void dsmem_conns_reap_now(struct ib_device *ibdev)
{
	struct dsmem_conn *conn, *found;

	do {
		found = NULL;
		spin_lock(&dsmem_reap_lock);
		list_for_each_entry(conn, &dsmem_conns_reaping, reap_link) {
			if (!ibdev || conn->ibdev == ibdev) {
				kref_get(&conn->ref);
				found = conn;
				break;
			}
		}
		spin_unlock(&dsmem_reap_lock);
		if (found) {
			/* runs it now, if still pending, and waits for it */
			flush_delayed_work(&found->reap_work);
			dsmem_conn_put(found);
		}
	} while (found);
}

/*
 * A peer that connected to us is gone with its connections, once the last
 * of them, its first or a path, is released: until then a node's teardown
 * still finds it, and waits for them (dsmem_peer_delete).  Whoever sees
 * it idle unlinks it; one of them owns the unlinking.
 */
static void dsmem_peer_passive_gone(struct dsmem_peer *peer)
{
	unsigned int i;
	bool idle;

	if (!peer->passive)
		return;
	spin_lock_bh(&peer->lock);
	idle = !peer->conn;
	for (i = 0; i < DSMEM_PATHS_MAX; i++)
		idle &= !peer->paths[i];
	spin_unlock_bh(&peer->lock);
	if (idle && dsmem_peer_unlink(peer)) {
		dsmem_nl_notify_peer(peer, DSMEM_CMD_PEER_DEL);
		dsmem_peer_put(peer);
	}
}

/*
 * Close the peer's paths: each is then closing, and, with @closed, given
 * to the caller counted (DSMEM_PATHS_MAX of them) to wait for.
 */
static void dsmem_peer_paths_close(struct dsmem_peer *peer,
				   struct dsmem_conn **closed)
{
	struct dsmem_conn *paths[DSMEM_PATHS_MAX] = {};
	unsigned int i;

	spin_lock_bh(&peer->lock);
	for (i = 0; i < DSMEM_PATHS_MAX; i++) {
		paths[i] = peer->paths[i];
		if (paths[i])
			kref_get(&paths[i]->ref);
	}
	spin_unlock_bh(&peer->lock);
	for (i = 0; i < DSMEM_PATHS_MAX; i++) {
		if (!paths[i])
			continue;
		dsmem_conn_close(paths[i], -ECONNABORTED);
		if (closed)
			closed[i] = paths[i];
		else
			dsmem_conn_put(paths[i]);
	}
}

/*
 * Ask for paths again after a backoff, if the peer's first connection is
 * up and the peer not deleted (dsmem_peer_stop cancels the work after it
 * set deleted).
 */
void dsmem_peer_paths_retry(struct dsmem_peer *peer)
{
	struct dsmem_conn *first;

	spin_lock_bh(&peer->lock);
	first = peer->conn;
	if (!peer->deleted && first &&
	    READ_ONCE(first->state) == DSMEM_CONN_UP) {
		queue_delayed_work(dsmem_wq, &peer->paths_work,
				   msecs_to_jiffies(peer->paths_backoff_ms));
		peer->paths_backoff_ms = min(peer->paths_backoff_ms * 2,
					     (unsigned int)DSMEM_BACKOFF_MAX_MS);
	}
	spin_unlock_bh(&peer->lock);
}

/*
 * A path is released: it leaves the peer, whose state is its first
 * connection's.  The end that dialled it asks for paths again, backing
 * off, while that connection is up -- unless the path was one too many,
 * or its route is through a device this node is not on.
 */
static void dsmem_conn_path_gone(struct dsmem_conn *conn)
{
	struct dsmem_peer *peer = conn->peer;
	bool owned = false;

	dsmem_stat_inc(dsmem_conn_net(conn),
		       conn->was_up ? DSMEM_STAT_PATH_DOWN :
		       dsmem_conn_refused(conn) ? DSMEM_STAT_PATH_REFUSED :
		       DSMEM_STAT_CONN_FAILED);
	spin_lock_bh(&peer->lock);
	if (peer->paths[conn->path - 1] == conn) {
		peer->paths[conn->path - 1] = NULL;
		owned = true;
	}
	spin_unlock_bh(&peer->lock);
	/*
	 * A path the first connection took along may have kept a device
	 * claimed from a new first connection's paths: asked again now.
	 */
	if (!conn->passive && conn->close_err != -EALREADY &&
	    conn->close_err != -ENXIO)
		dsmem_peer_paths_retry(peer);
	atomic_inc(&peer->paths_gen);
	dsmem_peer_passive_gone(peer);
	if (owned)
		dsmem_conn_put(conn);
}

static void dsmem_conn_release_work(struct work_struct *work)
{
	struct dsmem_conn *conn = container_of(work, struct dsmem_conn,
					       release_work);
	struct dsmem_peer *peer = conn->peer;
	bool reconnect = false, drop_peer_ref = false;
	unsigned int delay = 0;
	u8 state;

	/* a peer's paths go with its first connection, closed at once */
	if (!conn->path)
		dsmem_peer_paths_close(peer, NULL);

	/*
	 * Posters, and the handler making the QP, hold post_sem for read:
	 * after this nobody posts, and conn->qp does not change any more.
	 */
	down_write(&conn->post_sem);
	up_write(&conn->post_sem);

	dsmem_msg_fail_pending(conn, -ECONNRESET);
	dsmem_tc_qp_state(conn->tc_qp, IB_QPS_ERR);
	if (conn->qp) {
		rdma_disconnect(conn->cm_id);
		/* every posted request completes, with a flush error */
		if (READ_ONCE(conn->qp_live))
			ib_drain_qp(conn->qp);
	}
	/*
	 * Only then the up work: its grants may wait for a REG_MR that
	 * completes behind sends the peer never acknowledged (a pulled
	 * cable), that is for the flush above.
	 */
	cancel_work_sync(&conn->up_work);
	/* an up work that ran meanwhile wrote RTS over the ERR above */
	dsmem_tc_qp_state(conn->tc_qp, IB_QPS_ERR);
	cancel_delayed_work_sync(&conn->keepalive_work);
	dsmem_conn_unauth_done(conn);
	cancel_work_sync(&conn->rx_work);
	dsmem_msg_fail_pending(conn, -ECONNRESET);
	dsmem_services_conn_down(conn);

	/*
	 * Nothing uses the connection any more.  Its QP goes, or is queued
	 * to go, before peer->conn is cleared: whoever then finds the peer
	 * without a connection (a node's teardown, device removal) finds
	 * this one on the reap list, or gone.
	 */
	if (conn->qp)
		dsmem_conn_tokens_del(conn);
	if (conn->qp && READ_ONCE(conn->qp_live)) {
		dsmem_conn_reap_later(conn);
	} else {
		dsmem_conn_reap(conn);
		/*
		 * A QP that never went live was not drained: a completion
		 * polled before its CQ went may have queued the receive or
		 * up work after they were cancelled above.  Nothing queues
		 * them now.
		 */
		cancel_work_sync(&conn->up_work);
		cancel_work_sync(&conn->rx_work);
	}

	if (conn->path) {
		dsmem_conn_path_gone(conn);
		dsmem_conn_put(conn);	/* dsmem_conn_close's */
		return;
	}

	/* the peer learns now, without waiting for the QP's timewait */
	dsmem_stat_inc(dsmem_conn_net(conn), conn->was_up ?
		       DSMEM_STAT_CONN_LOST : DSMEM_STAT_CONN_FAILED);
	state = conn->was_up ? DSMEM_PEER_DOWN : DSMEM_PEER_ERROR;

	spin_lock_bh(&peer->lock);
	if (peer->conn == conn) {
		peer->conn = NULL;
		drop_peer_ref = true;
	}
	if (!peer->passive && !peer->listen && !peer->deleted) {
		reconnect = true;
		delay = peer->backoff_ms;
		peer->backoff_ms = min(peer->backoff_ms * 2,
				       dsmem_conn_refused(conn) ?
				       (unsigned int)DSMEM_BACKOFF_REFUSED_MAX_MS :
				       (unsigned int)DSMEM_BACKOFF_MAX_MS);
		delay = min(delay, peer->backoff_ms);
	}
	spin_unlock_bh(&peer->lock);

	if (!peer->deleted)
		dsmem_peer_set_state(peer, state, conn->close_err);
	if (reconnect) {
		/*
		 * Under the lock, as dsmem_peer_delete sets deleted before it
		 * cancels: a reconnect is either cancelled there or not queued.
		 */
		spin_lock_bh(&peer->lock);
		reconnect = !peer->deleted;
		if (reconnect)
			queue_delayed_work(dsmem_wq, &peer->connect_work,
					   msecs_to_jiffies(delay));
		spin_unlock_bh(&peer->lock);
		if (reconnect)
			dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_RECONNECTS);
	}
	dsmem_peer_passive_gone(peer);

	if (drop_peer_ref)
		dsmem_conn_put(conn);
	dsmem_conn_put(conn);	/* dsmem_conn_close's */
}

/*
 * The route is resolved: make the QP and connect.  The release work looks
 * at conn->qp once, after taking post_sem for write, and the handler may
 * still run until the release destroys the id: so the QP is made under
 * post_sem, and never for a connection that is already closing -- or its
 * PD, CQ, QP and their tokens would outlive the connection.
 */
static int dsmem_conn_connect(struct dsmem_conn *conn)
{
	struct rdma_conn_param param;
	struct dsmem_wire_cm cm;
	int ret;

	down_read(&conn->post_sem);
	if (READ_ONCE(conn->state) == DSMEM_CONN_CLOSING) {
		ret = -ECONNABORTED;
		goto out;
	}
	ret = dsmem_conn_create_qp(conn);
	if (ret)
		goto out;
	/*
	 * Not through a port that is down: rxe would loop a local connection
	 * back past a pulled cable.  Checked once ibdev is set, so that a
	 * port event can find us from here on: either this read sees the
	 * port down, or the event's walk sees this connection.
	 */
	smp_mb();
	if (!dsmem_port_active(conn->ibdev, conn->port)) {
		ret = -ENETDOWN;
		goto out;
	}
	/* a path is to the node its first connection reached */
	dsmem_conn_param(conn, &param, &cm, conn->remote_node);
	ret = rdma_connect_locked(conn->cm_id, &param);
out:
	up_read(&conn->post_sem);
	return ret;
}

int dsmem_conn_cm_event(struct dsmem_conn *conn, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = conn->cm_id;
	struct dsmem_wire_cm_info info;
	int ret = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		/* a node speaks through its own devices only */
		if (dsmem_node_dev_slot(conn->peer->node, id->device) < 0) {
			ret = -ENXIO;
			break;
		}
		/* a path is through a device no other connection uses */
		if (conn->path && !dsmem_peer_dev_claim(conn->peer, id->device,
							conn)) {
			ret = -EALREADY;
			break;
		}
		ret = rdma_resolve_route(id, DSMEM_RESOLVE_TIMEOUT_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = dsmem_conn_connect(conn);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!conn->passive) {
			ret = dsmem_wire_cm_decode(ev->param.conn.private_data,
						   ev->param.conn.private_data_len,
						   &info);
			if (!ret && info.dst_node != conn->peer->node->id)
				ret = -EPROTO;
			if (!ret)
				ret = dsmem_conn_check_node(conn->peer,
							    info.src_node);
			if (!ret)
				ret = dsmem_node_check_flags(conn->peer->node,
							     &info);
			/* a path: to the node the first connection reached */
			if (!ret && (!(info.flags & DSMEM_WIRE_CM_F_PATH) !=
				     !conn->path ||
				     (conn->path && info.src_node !=
				      READ_ONCE(conn->peer->remote_node))))
				ret = -EPROTO;
			if (ret)
				break;
			conn->remote_node = info.src_node;
			memcpy(conn->peer_nonce, info.nonce,
			       sizeof(conn->peer_nonce));
			conn->remote_qpn = ev->param.conn.qp_num;
			if (dsmem_conn_keyed(conn))
				dsmem_conn_deadline_start(conn);
		}
		WRITE_ONCE(conn->qp_live, true);
		/* what up_work reads, before it may run */
		smp_store_release(&conn->established, true);
		/* the release cancels the up work once: none after that */
		spin_lock_bh(&conn->lock);
		if (conn->state == DSMEM_CONN_CONNECTING)
			queue_work(dsmem_wq, &conn->up_work);
		spin_unlock_bh(&conn->lock);
		break;
	case RDMA_CM_EVENT_REJECTED:
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_REJECTED);
		ret = -ECONNREFUSED;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ret = ev->status < 0 ? ev->status : -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		ret = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		ret = -ENODEV;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		spin_lock_bh(&conn->lock);
		conn->timewait_exit = true;
		if (conn->reaping)
			mod_delayed_work(dsmem_wq, &conn->reap_work, 0);
		spin_unlock_bh(&conn->lock);
		break;
	default:
		break;
	}
	if (ret)
		dsmem_conn_close(conn, ret);
	/* the release work destroys the id; rdma_cm must not */
	return 0;
}

struct dsmem_peer *dsmem_peer_create(struct dsmem_node *node,
				     const struct sockaddr_storage *addr,
				     bool passive)
{
	struct dsmem_peer *peer;
	int ret;

	lockdep_assert_held(&node->lock);

	peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	if (!peer)
		return ERR_PTR(-ENOMEM);
	kref_init(&peer->ref);	/* the node's table holds it */
	kref_get(&node->ref);
	peer->node = node;
	peer->passive = passive;
	peer->addr = *addr;
	spin_lock_init(&peer->lock);
	peer->state = DSMEM_PEER_CONNECTING;
	peer->backoff_ms = DSMEM_BACKOFF_MIN_MS;
	INIT_DELAYED_WORK(&peer->connect_work, dsmem_peer_connect_work);
	INIT_DELAYED_WORK(&peer->paths_work, dsmem_path_work);
	peer->paths_backoff_ms = DSMEM_BACKOFF_MIN_MS;
	atomic_set(&peer->paths_gen, 0);

	ret = xa_alloc_cyclic(&node->peers, &peer->id, peer,
			      XA_LIMIT(1, DSMEM_NODE_PEERS_MAX),
			      &node->next_peer, GFP_KERNEL);
	if (ret < 0) {
		dsmem_peer_put(peer);
		return ERR_PTR(ret == -EBUSY ? -ENOSPC : ret);
	}
	return peer;
}

void dsmem_peer_start(struct dsmem_peer *peer)
{
	/*
	 * A listen peer waits for its connection.  Under the lock, as
	 * dsmem_peer_stop sets deleted before it cancels: a peer deleted
	 * since it was made is not started.
	 */
	spin_lock_bh(&peer->lock);
	if (!peer->listen && !peer->deleted)
		queue_delayed_work(dsmem_wq, &peer->connect_work, 0);
	spin_unlock_bh(&peer->lock);
}

/* A connection of the peer's to dial, with its id. */
static struct dsmem_conn *dsmem_conn_dial_new(struct dsmem_peer *peer)
{
	struct dsmem_conn *conn = dsmem_conn_alloc(peer);
	struct rdma_cm_id *id;

	if (!conn)
		return ERR_PTR(-ENOMEM);
	id = rdma_create_id(peer->node->net, dsmem_cm_handler, &conn->cm_ctx,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		dsmem_conn_put(conn);
		return ERR_CAST(id);
	}
	conn->cm_id = id;
	return conn;
}

static void dsmem_peer_connect_work(struct work_struct *work)
{
	struct dsmem_peer *peer = container_of(to_delayed_work(work),
					       struct dsmem_peer, connect_work);
	struct dsmem_conn *conn;
	struct rdma_cm_id *id;
	int ret;

	conn = dsmem_conn_dial_new(peer);
	if (IS_ERR(conn)) {
		ret = PTR_ERR(conn);
		goto err_retry;
	}
	id = conn->cm_id;

	/* published, it may close at once: its release waits for the dial */
	down_read(&conn->post_sem);
	spin_lock_bh(&peer->lock);
	if (peer->deleted || peer->conn) {
		spin_unlock_bh(&peer->lock);
		up_read(&conn->post_sem);
		rdma_destroy_id(id);
		dsmem_conn_put(conn);
		return;
	}
	kref_get(&conn->ref);
	peer->conn = conn;
	spin_unlock_bh(&peer->lock);
	dsmem_peer_set_state(peer, DSMEM_PEER_CONNECTING, 0);

	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&peer->addr,
				DSMEM_RESOLVE_TIMEOUT_MS);
	up_read(&conn->post_sem);
	if (ret)
		dsmem_conn_close(conn, ret);
	dsmem_conn_put(conn);
	return;

err_retry:
	spin_lock_bh(&peer->lock);
	if (!peer->deleted)
		queue_delayed_work(dsmem_wq, &peer->connect_work,
				   msecs_to_jiffies(peer->backoff_ms));
	spin_unlock_bh(&peer->lock);
	dsmem_peer_set_state(peer, DSMEM_PEER_ERROR, ret);
}

/*
 * Claim ibdev for the path @self, whose route was resolved through it:
 * false if another of the peer's connections is on it, or claimed it
 * (a path's dev is set here, in the same section as the check, before
 * its ibdev is).
 */
static bool dsmem_peer_dev_claim(struct dsmem_peer *peer,
				 struct ib_device *ibdev, struct dsmem_conn *self)
{
	struct ib_device *dev;
	struct dsmem_conn *c;
	bool used = false;
	unsigned int i;

	spin_lock_bh(&peer->lock);
	for (i = 0; i <= DSMEM_PATHS_MAX && !used; i++) {
		c = i ? peer->paths[i - 1] : peer->conn;
		if (!c || c == self)
			continue;
		/* pairs with the release in dsmem_conn_create_qp */
		dev = c->path ? c->path_dev : smp_load_acquire(&c->ibdev);
		used = dev == ibdev;
	}
	if (!used)
		self->path_dev = ibdev;
	spin_unlock_bh(&peer->lock);
	return !used;
}

/*
 * The peer's connections that are up, its first one first, counted in
 * conns (1 + DSMEM_PATHS_MAX of them); returns how many.
 */
unsigned int dsmem_peer_conns_up(struct dsmem_peer *peer,
				 struct dsmem_conn **conns)
{
	struct dsmem_conn *c;
	unsigned int i, n = 0;

	spin_lock_bh(&peer->lock);
	for (i = 0; i <= DSMEM_PATHS_MAX; i++) {
		c = i ? peer->paths[i - 1] : peer->conn;
		if (c && READ_ONCE(c->state) == DSMEM_CONN_UP) {
			kref_get(&c->ref);
			conns[n++] = c;
		}
	}
	spin_unlock_bh(&peer->lock);
	return n;
}

/*
 * Dial another path to the peer, at addr (dsmem_path.c): while its first
 * connection is up, in a free slot.  -EALREADY if the address is the
 * first connection's; the route then picks the device (a device another
 * connection of the peer uses is refused then, with -EALREADY too).
 */
int dsmem_peer_path_dial(struct dsmem_peer *peer,
			 const struct sockaddr_storage *addr)
{
	struct dsmem_conn *conn, *first;
	struct rdma_cm_id *id;
	unsigned int i;
	int ret;

	if (dsmem_sockaddr_same_host(addr, &peer->addr))
		return -EALREADY;
	conn = dsmem_conn_dial_new(peer);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	id = conn->cm_id;

	/*
	 * Published, the path may close at once (its first connection's
	 * release closes it): its release destroys the id only after it took
	 * post_sem for write, so after the dial below is done with the id.
	 */
	down_read(&conn->post_sem);
	spin_lock_bh(&peer->lock);
	first = peer->conn;
	ret = -ENOTCONN;
	if (peer->deleted || !first ||
	    READ_ONCE(first->state) != DSMEM_CONN_UP)
		goto err_unlock;
	ret = -EBUSY;
	for (i = 0; i < DSMEM_PATHS_MAX; i++)
		if (!peer->paths[i])
			break;
	if (i == DSMEM_PATHS_MAX)
		goto err_unlock;
	conn->path = i + 1;
	conn->remote_node = peer->remote_node;
	kref_get(&conn->ref);
	peer->paths[i] = conn;
	spin_unlock_bh(&peer->lock);

	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)addr,
				DSMEM_RESOLVE_TIMEOUT_MS);
	up_read(&conn->post_sem);
	if (ret)
		dsmem_conn_close(conn, ret);
	dsmem_conn_put(conn);
	return 0;

err_unlock:
	spin_unlock_bh(&peer->lock);
	up_read(&conn->post_sem);
	rdma_destroy_id(id);
	dsmem_conn_put(conn);
	return ret;
}

/*
 * Stop a peer: it connects no more, and its connection, if it has one, is
 * closing.  Returns that connection, counted, or NULL.  Deleted is set
 * before the connect work is cancelled: a run that already started either
 * saw it, or made the connection this then closes.
 */
static struct dsmem_conn *dsmem_peer_stop(struct dsmem_peer *peer,
					  struct dsmem_conn **paths)
{
	struct dsmem_conn *conn;

	spin_lock_bh(&peer->lock);
	peer->deleted = true;
	spin_unlock_bh(&peer->lock);
	cancel_delayed_work_sync(&peer->connect_work);

	spin_lock_bh(&peer->lock);
	conn = peer->conn;
	if (conn)
		kref_get(&conn->ref);
	spin_unlock_bh(&peer->lock);
	if (conn)
		dsmem_conn_close(conn, -ECONNABORTED);
	dsmem_peer_paths_close(peer, paths);
	/* after the close: a request for paths under way fails with it */
	cancel_delayed_work_sync(&peer->paths_work);
	return conn;
}

/* Stop a peer and let its connections' releases run without waiting. */
void dsmem_peer_close(struct dsmem_peer *peer)
{
	struct dsmem_conn *conn = dsmem_peer_stop(peer, NULL);

	if (conn)
		dsmem_conn_put(conn);
}

/* Delete a peer: unlink it, stop reconnecting, release its connections. */
void dsmem_peer_delete(struct dsmem_peer *peer)
{
	struct dsmem_conn *paths[DSMEM_PATHS_MAX] = {};
	struct dsmem_conn *conn;
	unsigned int i;

	if (!dsmem_peer_unlink(peer))
		return;

	conn = dsmem_peer_stop(peer, paths);
	if (conn) {
		flush_work(&conn->release_work);
		dsmem_conn_put(conn);
	}
	for (i = 0; i < DSMEM_PATHS_MAX; i++) {
		if (!paths[i])
			continue;
		flush_work(&paths[i]->release_work);
		dsmem_conn_put(paths[i]);
	}
	dsmem_nl_notify_peer(peer, DSMEM_CMD_PEER_DEL);
	dsmem_peer_put(peer);
}

u16 dsmem_sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static bool dsmem_sockaddr_v4(const struct sockaddr_storage *ss, __be32 *v4)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;

	if (ss->ss_family == AF_INET) {
		*v4 = ((const struct sockaddr_in *)ss)->sin_addr.s_addr;
		return true;
	}
	if (ss->ss_family == AF_INET6 && ipv6_addr_v4mapped(&s6->sin6_addr)) {
		*v4 = s6->sin6_addr.s6_addr32[3];
		return true;
	}
	return false;
}

/* The same host, whatever the ports (an IPv4-mapped IPv6 address is IPv4). */
static bool dsmem_sockaddr_same_host(const struct sockaddr_storage *a,
				     const struct sockaddr_storage *b)
{
	__be32 a4, b4;
	bool v4a = dsmem_sockaddr_v4(a, &a4), v4b = dsmem_sockaddr_v4(b, &b4);

	if (v4a || v4b)
		return v4a && v4b && a4 == b4;
	return a->ss_family == AF_INET6 && b->ss_family == AF_INET6 &&
	       ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/*
 * Admission, at connect time and before anything is made for it: a node
 * admits the peers it was told about (their address, and their id when
 * it was given), or anyone when it accepts keyed connections -- who then
 * still has to prove the key; never an id that is up from another
 * address.  Returns the listen peer waiting for this connection, NULL
 * when a passive peer is to be made for it, or an error.
 */
static struct dsmem_peer *dsmem_conn_admit(struct dsmem_node *node,
					   const struct sockaddr_storage *addr,
					   u32 src)
{
	struct dsmem_peer *peer, *waiting = NULL;
	bool known = false, in_use, idle;
	unsigned long i;
	u32 remote;

	lockdep_assert_held(&node->lock);

	xa_for_each(&node->peers, i, peer) {
		bool here = dsmem_sockaddr_same_host(&peer->addr, addr);

		spin_lock_bh(&peer->lock);
		remote = peer->remote_node;
		idle = !peer->conn;
		in_use = peer->conn && remote == src &&
			 READ_ONCE(peer->conn->state) == DSMEM_CONN_UP;
		spin_unlock_bh(&peer->lock);
		if (in_use && !here) {
			dsmem_stat_inc(node->net, DSMEM_STAT_CONN_ID_IN_USE);
			pr_notice_ratelimited("node %u: node %u is connected from another address, refusing %pISc\n",
					      node->id, src, addr);
			return ERR_PTR(-EADDRINUSE);
		}
		if (peer->passive || !here)
			continue;
		if (peer->expect_node ? peer->expect_node != src :
		    remote && remote != src)
			continue;
		known = true;
		if (peer->listen && idle && !waiting)
			waiting = peer;
	}
	if (waiting || known || node->accept == DSMEM_ACCEPT_KEYED)
		return waiting;
	dsmem_stat_inc(node->net, DSMEM_STAT_CONN_UNKNOWN_PEER);
	pr_notice_ratelimited("node %u: node %u at %pISc is no peer of this node, refusing it\n",
			      node->id, src, addr);
	return ERR_PTR(-EACCES);
}

/*
 * Admission of a path (DSMEM_WIRE_CM_F_PATH): beside a first connection
 * from src that the other end dialled and that is up, in a free slot,
 * which only admissions (under node->lock) fill for such a peer.  Only
 * keyed nodes have paths: a path comes from another address than its
 * peer's, and is admitted on its proof of the key alone.
 */
static struct dsmem_peer *dsmem_conn_admit_path(struct dsmem_node *node,
						u32 src, unsigned int *slot)
{
	struct dsmem_conn *first;
	struct dsmem_peer *peer;
	unsigned long i;
	unsigned int s;
	bool ok;

	lockdep_assert_held(&node->lock);
	if (!node->key[0] || !READ_ONCE(dsmem_multipath))
		return ERR_PTR(-EACCES);
	xa_for_each(&node->peers, i, peer) {
		spin_lock_bh(&peer->lock);
		first = peer->conn;
		ok = first && first->passive && peer->remote_node == src &&
		     READ_ONCE(first->state) == DSMEM_CONN_UP;
		for (s = 0; ok && s < DSMEM_PATHS_MAX; s++)
			if (!peer->paths[s])
				break;
		spin_unlock_bh(&peer->lock);
		if (!ok)
			continue;
		if (s == DSMEM_PATHS_MAX)
			return ERR_PTR(-EBUSY);
		*slot = s;
		return peer;
	}
	return ERR_PTR(-EACCES);
}

/*
 * A CONNECT_REQUEST on a node's listener.  Runs under the new id's handler
 * lock; a non-zero return makes rdma_cm reject and destroy the id, so
 * everything made here is unwound first.
 */
int dsmem_conn_listen_request(struct dsmem_node *node, struct rdma_cm_id *id,
			      struct rdma_cm_event *ev)
{
	struct sockaddr_storage addr = {};
	struct dsmem_wire_cm_info info;
	struct rdma_conn_param param;
	struct dsmem_conn *conn = NULL;
	struct dsmem_wire_cm cm;
	struct dsmem_peer *peer;
	unsigned int slot = 0;
	int ret, stale = 0;
	bool path;

	ret = dsmem_wire_cm_decode(ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &info);
	if (!ret && info.dst_node && info.dst_node != node->id)
		ret = -EHOSTUNREACH;
	memcpy(&addr, &id->route.addr.dst_addr,
	       min(sizeof(addr), sizeof(id->route.addr.dst_addr)));
	/*
	 * This node's own id comes only from this host: from anywhere else
	 * it is a reflection of our own connect, or a lie.
	 */
	if (!ret && info.src_node == node->id &&
	    !dsmem_sockaddr_local(node->net, &addr)) {
		dsmem_stat_inc(node->net, DSMEM_STAT_CONN_OWN_ID);
		pr_notice_ratelimited("node %u: %pISc claims this node's own id, refusing it\n",
				      node->id, &addr);
		ret = -EACCES;
	}
	if (!ret && dsmem_node_dev_slot(node, id->device) < 0)
		ret = -ENXIO;
	if (ret)
		goto err_count;
	/* a connection to refuse costs nothing more than this */
	ret = dsmem_node_check_flags(node, &info);
	if (ret)
		goto err_count;
	if (atomic_inc_return(&node->unauth) > DSMEM_UNAUTH_MAX) {
		atomic_dec(&node->unauth);
		dsmem_stat_inc(node->net, DSMEM_STAT_CONN_POOL_FULL);
		pr_notice_ratelimited("node %u: %u connections are authenticating, refusing another\n",
				      node->id, DSMEM_UNAUTH_MAX);
		ret = -EBUSY;
		goto err_count;
	}

	/*
	 * The node's lock only: requests to other nodes, and their segments'
	 * registrations, go on meanwhile.  The node may be going: its
	 * teardown destroys this listener, which waits for us, before it
	 * empties the peer table.
	 */
	path = info.flags & DSMEM_WIRE_CM_F_PATH;
	mutex_lock(&node->lock);
	if (READ_ONCE(node->dead)) {
		ret = -ENODEV;
		goto err_unlock;
	}
	if (path) {
		peer = dsmem_conn_admit_path(node, info.src_node, &slot);
		if (IS_ERR(peer))
			dsmem_stat_inc(node->net, DSMEM_STAT_PATH_REFUSED);
	} else {
		peer = dsmem_conn_admit(node, &addr, info.src_node);
		if (!peer)
			peer = dsmem_peer_create(node, &addr, true);
	}
	if (IS_ERR(peer)) {
		ret = PTR_ERR(peer);
		goto err_unlock;
	}
	conn = dsmem_conn_alloc(peer);
	if (!conn) {
		ret = -ENOMEM;
		goto err_unlink_peer;
	}
	conn->passive = true;
	conn->cm_id = id;
	conn->remote_node = info.src_node;
	if (path) {
		conn->path = slot + 1;
	} else {
		spin_lock_bh(&peer->lock);
		peer->remote_node = info.src_node;
		spin_unlock_bh(&peer->lock);
	}
	memcpy(conn->peer_nonce, info.nonce, sizeof(conn->peer_nonce));
	conn->remote_qpn = ev->param.conn.qp_num;
	/* its pool slot: given back when it is up, or by its release */
	set_bit(DSMEM_CONN_F_UNAUTH, &conn->flags);
	id->context = &conn->cm_ctx;

	/*
	 * Closing until it has its QP: a set-up that fails part way flushes
	 * the receives it posted, and their completions must queue no
	 * release, which would destroy the id that rdma_cm destroys when we
	 * fail.
	 */
	conn->state = DSMEM_CONN_CLOSING;
	ret = dsmem_conn_create_qp(conn);
	if (ret)
		goto err_put_conn;
	spin_lock_bh(&conn->lock);
	conn->state = DSMEM_CONN_CONNECTING;
	spin_unlock_bh(&conn->lock);
	dsmem_conn_param(conn, &param, &cm, info.src_node);
	/*
	 * No more READs in flight to the peer than it has resources to
	 * answer, nor more accepted than it says it sends: a peer that
	 * offers fewer would otherwise see its responder overrun.
	 */
	param.initiator_depth = min_t(u8, param.initiator_depth,
				      ev->param.conn.responder_resources);
	param.responder_resources = min_t(u8, param.responder_resources,
					  ev->param.conn.initiator_depth);
	spin_lock_bh(&peer->lock);
	/* the allocation's reference */
	if (path) {
		peer->paths[slot] = conn;
		/* its first connection may have closed, and swept, since */
		if (!peer->conn ||
		    READ_ONCE(peer->conn->state) != DSMEM_CONN_UP)
			stale = -ECONNABORTED;
	} else {
		peer->conn = conn;
		peer->state = DSMEM_PEER_CONNECTING;
	}
	spin_unlock_bh(&peer->lock);
	if (stale)
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	ret = stale ?: rdma_accept(id, &param);
	if (!ret) {
		/* at RTS now: the peer may send before it says ESTABLISHED */
		WRITE_ONCE(conn->qp_live, true);
		dsmem_conn_deadline_start(conn);
	}
	mutex_unlock(&node->lock);
	if (!path)
		dsmem_nl_notify_peer(peer, peer->passive ? DSMEM_CMD_PEER_NEW :
					   DSMEM_CMD_PEER_STATE);
	/*
	 * A failed accept moves the QP to error, whose flushed receives
	 * close the connection: from here on the release owns the QP and
	 * the id, as for any connection, so rdma_cm must not destroy it.
	 */
	if (ret) {
		dsmem_stat_inc(node->net, DSMEM_STAT_CONN_REJECTED);
		dsmem_conn_close(conn, ret);
	}
	return 0;

err_put_conn:
	id->context = &node->cm_ctx;
	conn->cm_id = NULL;
	clear_bit(DSMEM_CONN_F_UNAUTH, &conn->flags);
	dsmem_conn_put(conn);
err_unlink_peer:
	if (peer->passive && !path) {
		xa_erase(&node->peers, peer->id);
		dsmem_peer_put(peer);
	}
err_unlock:
	mutex_unlock(&node->lock);
	atomic_dec(&node->unauth);
err_count:
	dsmem_stat_inc(node->net, DSMEM_STAT_CONN_REJECTED);
	return ret;
}

/*
 * The first connection of node, paths included, that match() takes,
 * counted; or NULL.  match() runs under the peer's lock.
 */
static struct dsmem_conn *
dsmem_conn_find(struct dsmem_node *node,
		bool (*match)(struct dsmem_peer *peer, struct dsmem_conn *conn,
			      const void *arg),
		const void *arg)
{
	struct dsmem_conn *found = NULL, *c;
	struct dsmem_peer *peer;
	unsigned long i;
	unsigned int p;

	rcu_read_lock();
	xa_for_each(&node->peers, i, peer) {
		spin_lock_bh(&peer->lock);
		for (p = 0; p <= DSMEM_PATHS_MAX && !found; p++) {
			c = p ? peer->paths[p - 1] : peer->conn;
			if (c && match(peer, c, arg) &&
			    kref_get_unless_zero(&c->ref))
				found = c;
		}
		spin_unlock_bh(&peer->lock);
		if (found)
			break;
	}
	rcu_read_unlock();
	return found;
}

struct dsmem_ports_down {
	struct ib_device *ibdev;
	unsigned long down;		/* bit p: port p */
};

static bool dsmem_conn_on_down_port(struct dsmem_peer *peer,
				    struct dsmem_conn *conn, const void *arg)
{
	const struct dsmem_ports_down *pd = arg;

	/* pairs with the release in dsmem_conn_create_qp: port set */
	return smp_load_acquire(&conn->ibdev) == pd->ibdev &&
	       conn->port < BITS_PER_LONG && test_bit(conn->port, &pd->down) &&
	       READ_ONCE(conn->state) != DSMEM_CONN_CLOSING;
}

/*
 * A port of ibdev, node's device, went down or up.  The node's
 * connections through a port that is down close now (-ENETDOWN): on a
 * real link their requests would fail only after the transport's
 * retries, and rxe, which loops local traffic back past the netdev,
 * would carry on as if the cable were in.
 * With a port up, peers waiting out a backoff to reconnect dial at once.
 */
void dsmem_conn_port_change(struct dsmem_node *node, struct ib_device *ibdev)
{
	struct dsmem_ports_down pd = { .ibdev = ibdev };
	struct dsmem_conn *conn;
	struct dsmem_peer *peer;
	bool any_up = false;
	unsigned long i;
	u32 port;

	/* (devices with more ports than a long has bits do not exist) */
	rdma_for_each_port(ibdev, port) {
		if (dsmem_port_active(ibdev, port))
			any_up = true;
		else if (port < BITS_PER_LONG)
			__set_bit(port, &pd.down);
	}
	/* the ports read before the connections: dsmem_conn_connect */
	smp_mb();
	while (pd.down &&
	       (conn = dsmem_conn_find(node, dsmem_conn_on_down_port, &pd))) {
		dsmem_stat_inc(node->net, DSMEM_STAT_CONN_PORT_DOWN);
		dsmem_conn_close(conn, -ENETDOWN);
		dsmem_conn_put(conn);
	}
	if (!any_up)
		return;
	rcu_read_lock();
	xa_for_each(&node->peers, i, peer) {
		/* under the lock, as dsmem_peer_stop sets deleted */
		spin_lock_bh(&peer->lock);
		if (!peer->conn && !peer->deleted &&
		    delayed_work_pending(&peer->connect_work))
			mod_delayed_work(dsmem_wq, &peer->connect_work, 0);
		spin_unlock_bh(&peer->lock);
	}
	rcu_read_unlock();
}

static bool dsmem_conn_on_dev(struct dsmem_peer *peer, struct dsmem_conn *conn,
			      const void *ibdev)
{
	/* pairs with the release in dsmem_conn_create_qp */
	return smp_load_acquire(&conn->ibdev) == ibdev;
}

/*
 * The device of node's slot is gone (marked so): each of the node's
 * connections on it closes (-ENODEV), and is waited for until released,
 * which unlinks it from its peer, and reaped.  A peer whose first connection it was
 * dials again, through whichever device its route takes now.
 */
void dsmem_conns_dev_gone(struct dsmem_node *node, unsigned int slot)
{
	struct ib_device *ibdev = node->devs[slot].ibdev;
	struct dsmem_conn *conn;

	while ((conn = dsmem_conn_find(node, dsmem_conn_on_dev, ibdev))) {
		dsmem_conn_close(conn, -ENODEV);
		flush_work(&conn->release_work);
		dsmem_conn_put(conn);
	}
	/*
	 * A deleted peer's connections are no longer found, but are being
	 * released: they are done once the last PD on the device is gone
	 * (reaped now, rather than after their timewait).
	 */
	for (;;) {
		dsmem_conns_reap_now(ibdev);
		if (wait_event_timeout(node->pds_wait,
				       !atomic_read(&node->devs[slot].pds),
				       msecs_to_jiffies(100)))
			break;
	}
}

static bool dsmem_conn_up_to(struct dsmem_peer *peer, struct dsmem_conn *conn,
			     const void *arg)
{
	return !conn->path && peer->remote_node == *(const u32 *)arg &&
	       READ_ONCE(conn->state) == DSMEM_CONN_UP;
}

/*
 * An up connection from node to the remote node, counted; or NULL.  A
 * peer's first connection: its paths serve the data path only.
 */
struct dsmem_conn *dsmem_conn_lookup(struct dsmem_node *node, u32 remote)
{
	return dsmem_conn_find(node, dsmem_conn_up_to, &remote);
}
