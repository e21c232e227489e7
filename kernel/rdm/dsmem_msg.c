// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the control protocol over RDMA SEND/RECV.  Requests are decoded
 * once here and handed to the service that registered their opcode
 * (dsmem_service.h); replies wake the caller that waits for them.
 *
 * Replies are matched to their requests in the receive completion
 * (softirq), so a caller wakes without a context switch in between.
 * Requests are served from a work item, one connection at a time, in
 * arrival order.
 */
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "dsmem_rdm.h"

static unsigned int msg_timeout_ms = DSMEM_MSG_TIMEOUT_MS;
module_param(msg_timeout_ms, uint, 0644);
MODULE_PARM_DESC(msg_timeout_ms,
		 "a request message waits this long for its reply (ms, >= 100; services may add for large requests)");

unsigned int dsmem_msg_timeout_ms(void)
{
	return max_t(unsigned int, READ_ONCE(msg_timeout_ms), DSMEM_MSG_TIMEOUT_MS_MIN);
}

#define DSMEM_MSG_MAX	(DSMEM_WIRE_MAX_UNITS * DSMEM_WIRE_UNIT)

struct dsmem_recv {
	struct ib_cqe cqe;
	struct dsmem_conn *conn;
	struct list_head link;
	u64 dma;
	u32 len;
	u8 buf[DSMEM_MSG_MAX] __aligned(8);
};

struct dsmem_send {
	struct ib_cqe cqe;
	struct dsmem_conn *conn;
	struct llist_node flushed;	/* on conn->sends_flushed */
	struct list_head link;		/* on conn->sends, while posted */
	unsigned long posted;		/* jiffies */
	u64 dma;
	u32 len;
	bool mapped;			/* dma is the buffer's mapping */
	u8 buf[] __aligned(8);
};

static void dsmem_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc);

static int dsmem_msg_post_recv(struct dsmem_conn *conn, struct dsmem_recv *r)
{
	struct ib_sge sge = {
		.addr = r->dma,
		.length = DSMEM_MSG_MAX,
		.lkey = conn->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &r->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(conn->ibdev, r->dma, DSMEM_MSG_MAX,
				      DMA_FROM_DEVICE);
	return ib_post_recv(conn->qp, &wr, NULL);
}

/*
 * Put a consumed buffer back, unless the connection is going away.  Runs
 * in softirq (the CQ polls there), where post_sem must not sleep: only
 * the release work takes it for write, after the state went CLOSING, so
 * a failed trylock means the connection is closing anyway.
 */
static void dsmem_msg_repost(struct dsmem_conn *conn, struct dsmem_recv *r)
{
	int ret;

	if (!down_read_trylock(&conn->post_sem))
		return;
	if (READ_ONCE(conn->state) == DSMEM_CONN_CLOSING) {
		up_read(&conn->post_sem);
		return;
	}
	ret = dsmem_msg_post_recv(conn, r);
	up_read(&conn->post_sem);
	if (ret)
		dsmem_conn_close(conn, ret);
}

int dsmem_msg_recv_init(struct dsmem_conn *conn)
{
	struct dsmem_recv *r;
	int i, ret;

	/*
	 * A peer's unhandled requests (its window) and the other messages
	 * it has in flight (its sends) fit in our buffers together: it
	 * never waits for one, and so a few RNR retries are all it needs.
	 */
	BUILD_BUG_ON(DSMEM_WIRE_REQ_WINDOW + DSMEM_MSG_DEPTH > DSMEM_RQ_DEPTH);
	conn->recvs = kcalloc(DSMEM_RQ_DEPTH, sizeof(*conn->recvs), GFP_KERNEL);
	if (!conn->recvs)
		return -ENOMEM;
	for (i = 0; i < DSMEM_RQ_DEPTH; i++) {
		r = kzalloc(sizeof(*r), GFP_KERNEL);
		if (!r) {
			ret = -ENOMEM;
			goto err_free;
		}
		conn->recvs[i] = r;
		r->conn = conn;
		r->cqe.done = dsmem_msg_recv_done;
		r->dma = ib_dma_map_single(conn->ibdev, r->buf, DSMEM_MSG_MAX,
					   DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(conn->ibdev, r->dma)) {
			r->dma = 0;
			ret = -EIO;
			goto err_free;
		}
	}
	/*
	 * Posted buffers belong to the QP until it is destroyed: on failure
	 * the caller destroys it and its CQ, then frees them
	 * (dsmem_msg_recv_free).
	 */
	for (i = 0; i < DSMEM_RQ_DEPTH; i++) {
		ret = dsmem_msg_post_recv(conn, conn->recvs[i]);
		if (ret)
			return ret;
	}
	return 0;

err_free:
	dsmem_msg_recv_free(conn);
	return ret;
}

void dsmem_msg_recv_free(struct dsmem_conn *conn)
{
	struct dsmem_recv *r;
	int i;

	if (!conn->recvs)
		return;
	for (i = 0; i < DSMEM_RQ_DEPTH; i++) {
		r = conn->recvs[i];
		if (!r)
			continue;
		if (r->dma)
			ib_dma_unmap_single(conn->ibdev, r->dma, DSMEM_MSG_MAX,
					    DMA_FROM_DEVICE);
		kfree(r);
	}
	kfree(conn->recvs);
	conn->recvs = NULL;
}

/* Softirq: hand a reply to the caller waiting for it. */
static void dsmem_msg_complete(struct dsmem_conn *conn,
			       const struct dsmem_wire_msg *m)
{
	struct dsmem_msg_wait *w = xa_erase(&conn->pending, m->tag);

	if (!w) {
		/* late (its caller timed out) or forged */
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
		return;
	}
	/*
	 * A reply that does not answer its request, or brings more data
	 * than was asked for, is a lying or broken peer: its caller must not
	 * take the reply for an answer (a REPLY_ALLOC to a READ would hand
	 * back a buffer nothing wrote), and the connection goes.
	 */
	if (dsmem_wire_reply_check(w->req, m) ||
	    (m->data && (!w->data || m->len > w->data_max))) {
		pr_warn_ratelimited("node %u: reply %u from node %u does not answer request %u, closing the connection\n",
				    conn->peer->node->id, m->opcode,
				    conn->remote_node, w->req->opcode);
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
		w->status = -EPROTO;
		complete(&w->done);
		dsmem_conn_close(conn, -EPROTO);
		return;
	}
	if (m->status) {
		w->status = m->status <= MAX_ERRNO ? -(int)m->status : -EIO;
	} else {
		*w->reply = *m;
		w->reply->data = NULL;
		if (m->data)
			memcpy(w->data, m->data, m->len);
	}
	complete(&w->done);
}

/*
 * Softirq: the peer's proof, kept for the up work to check.  One per
 * connection, of its length, before the connection is up, on a node that
 * asked for one: anything else is a broken or lying peer.
 */
static void dsmem_msg_recv_auth(struct dsmem_conn *conn,
				const struct dsmem_wire_msg *m)
{
	bool bad;

	spin_lock(&conn->lock);
	bad = conn->state != DSMEM_CONN_CONNECTING || conn->auth_got ||
	      !conn->peer->node->key[0] || m->len != DSMEM_WIRE_AUTH_LEN;
	if (!bad) {
		memcpy(conn->peer_proof, m->data, DSMEM_WIRE_AUTH_LEN);
		conn->auth_got = true;
	}
	spin_unlock(&conn->lock);
	if (bad) {
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
		dsmem_conn_close(conn, -EPROTO);
		return;
	}
	queue_work(dsmem_wq, &conn->up_work);
}

/*
 * What a message says of our requests the peer handled: their window
 * slots back.  Only the receive completions call it, one at a time (one
 * CQ per connection).  A peer that says it handled more than we sent
 * lies: false, and its connection goes.
 */
static bool dsmem_msg_peer_handled(struct dsmem_conn *conn, u32 handled)
{
	u32 more = handled - conn->peer_handled;
	int out = DSMEM_WIRE_REQ_WINDOW - atomic_read(&conn->req_free);

	if ((s32)more <= 0)
		return true;
	if (more > out) {
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
		pr_notice_ratelimited("node %u: node %u says it handled %u requests, %d were sent: closing the connection\n",
				      conn->peer->node->id, conn->remote_node,
				      more, out);
		dsmem_conn_close(conn, -EPROTO);
		return false;
	}
	conn->peer_handled = handled;
	dsmem_conn_put_credits(conn, &conn->req_free, more);
	return true;
}

static void dsmem_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dsmem_recv *r = container_of(wc->wr_cqe, struct dsmem_recv, cqe);
	struct dsmem_conn *conn = r->conn;
	struct dsmem_wire_msg m;
	int ret;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		dsmem_conn_wc_error(conn, wc);
		return;
	}
	ib_dma_sync_single_for_cpu(conn->ibdev, r->dma, DSMEM_MSG_MAX,
				   DMA_FROM_DEVICE);
	r->len = wc->byte_len;
	dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_RECV);

	ret = dsmem_wire_decode(r->buf, r->len, &m);
	if (!ret && !dsmem_msg_peer_handled(conn, m.handled)) {
		dsmem_msg_repost(conn, r);
		return;
	}
	if (!ret && dsmem_wire_is_reply(m.opcode)) {
		dsmem_msg_complete(conn, &m);
		dsmem_msg_repost(conn, r);
		return;
	}
	if (!ret && m.opcode == DSMEM_WIRE_PING) {
		dsmem_msg_repost(conn, r);
		return;
	}
	if (!ret && m.opcode == DSMEM_WIRE_AUTH) {
		dsmem_msg_recv_auth(conn, &m);
		dsmem_msg_repost(conn, r);
		return;
	}
	/* requests, and garbage to be answered with an error */
	spin_lock(&conn->lock);
	list_add_tail(&r->link, &conn->rx_list);
	spin_unlock(&conn->lock);
	queue_work(dsmem_wq, &conn->rx_work);
}

static void dsmem_msg_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dsmem_send *s = container_of(wc->wr_cqe, struct dsmem_send, cqe);
	struct dsmem_conn *conn = s->conn;

	spin_lock(&conn->sends_lock);
	list_del(&s->link);
	spin_unlock(&conn->sends_lock);

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		dsmem_conn_wc_error(conn, wc);
		/*
		 * rxe flushes the send queue as the QP goes to error without
		 * waiting for its requester, which may still be copying this
		 * buffer into a packet: it is freed once the QP is destroyed,
		 * when no requester runs any more (dsmem_msg_send_free).
		 */
		llist_add(&s->flushed, &conn->sends_flushed);
		dsmem_conn_put_credit(conn, &conn->msg_free);
		return;
	}
	ib_dma_unmap_single(conn->ibdev, s->dma, s->len, DMA_TO_DEVICE);
	dsmem_conn_put_credit(conn, &conn->msg_free);
	kfree(s);
}

/*
 * Whether a message has been in flight for longer than @timeout
 * (jiffies), counted from when it was sent or from @since, whichever is
 * later: a peer that posts a receive buffer now and then, just before
 * each of our sends runs out of RNR retries, completes them all, each
 * long after it was posted.
 */
bool dsmem_msg_sends_overdue(struct dsmem_conn *conn, unsigned long since,
			     unsigned long timeout)
{
	struct dsmem_send *s;
	bool overdue = false;

	spin_lock_bh(&conn->sends_lock);
	s = list_first_entry_or_null(&conn->sends, struct dsmem_send, link);
	if (s)
		overdue = time_after(jiffies, (time_after(since, s->posted) ?
					       since : s->posted) + timeout);
	spin_unlock_bh(&conn->sends_lock);
	return overdue;
}

/* After the QP and its CQ are destroyed: the sends that completed in error. */
void dsmem_msg_send_free(struct dsmem_conn *conn)
{
	struct llist_node *list = llist_del_all(&conn->sends_flushed);
	struct dsmem_send *s, *next;

	llist_for_each_entry_safe(s, next, list, flushed) {
		ib_dma_unmap_single(conn->ibdev, s->dma, s->len, DMA_TO_DEVICE);
		kfree(s);
	}
}

/*
 * Under post_sem, the connection still in the state the post needs: its
 * device is the one to map for (dsmem_conn_post).
 */
static int dsmem_msg_send_map(struct dsmem_conn *conn, struct ib_send_wr *wr)
{
	struct dsmem_send *s = container_of(wr->wr_cqe, struct dsmem_send, cqe);

	s->dma = ib_dma_map_single(conn->ibdev, s->buf, s->len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, s->dma))
		return -EIO;
	s->mapped = true;
	wr->sg_list[0].addr = s->dma;
	/* in flight from now: its completion takes it off */
	spin_lock_bh(&conn->sends_lock);
	s->posted = jiffies;
	list_add_tail(&s->link, &conn->sends);
	spin_unlock_bh(&conn->sends_lock);
	return 0;
}

static void dsmem_msg_send_unmap(struct dsmem_conn *conn, struct ib_send_wr *wr)
{
	struct dsmem_send *s = container_of(wr->wr_cqe, struct dsmem_send, cqe);

	if (s->mapped) {
		spin_lock_bh(&conn->sends_lock);
		list_del(&s->link);
		spin_unlock_bh(&conn->sends_lock);
		ib_dma_unmap_single(conn->ibdev, s->dma, s->len, DMA_TO_DEVICE);
	}
	s->mapped = false;
}

/*
 * A slot of the request window, waiting while the peer handles none of
 * ours -- for io_timeout_ms at most: a peer that leaves them unhandled
 * that long is stalled, and its connection goes.
 */
static int dsmem_msg_window_take(struct dsmem_conn *conn)
{
	int ret;

	if (atomic_add_unless(&conn->req_free, -1, 0))
		return 0;
	dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_WINDOW_WAITS);
	ret = dsmem_conn_wait_credit_timeout(conn, &conn->req_free, NULL,
					     msecs_to_jiffies(dsmem_io_timeout_ms()));
	if (ret != -ETIMEDOUT)
		return ret;
	dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_CONN_IO_TIMEOUT);
	pr_warn_ratelimited("node %u: node %u handled none of our requests for %u ms, closing the connection\n",
			    conn->peer->node->id, conn->remote_node,
			    dsmem_io_timeout_ms());
	dsmem_conn_close(conn, -ETIMEDOUT);
	return -ETIMEDOUT;
}

/*
 * Post one message.  The handshake's proof goes out before the connection
 * is up, when nothing else may: with one of the credits, all free then.
 * The buffer is mapped only once the post is sure to find the connection
 * in its state (dsmem_msg_send_map), never for a device a closing
 * connection may outlive.
 */
static int __dsmem_msg_send(struct dsmem_conn *conn,
			    const struct dsmem_wire_msg *m, bool handshake)
{
	size_t size = dsmem_wire_size(m->opcode, m->len);
	bool request = dsmem_wire_is_request(m->opcode);
	struct dsmem_wire_msg told = *m;
	struct ib_send_wr wr = {};
	struct dsmem_send *s;
	struct ib_sge sge;
	int ret;

	if (!size)
		return -EINVAL;
	/* a closing connection takes nothing: not even the allocation */
	if (READ_ONCE(conn->state) == DSMEM_CONN_CLOSING)
		return -ENOTCONN;
	s = kmalloc(sizeof(*s) + size, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->conn = conn;
	s->len = size;
	s->mapped = false;
	s->cqe.done = dsmem_msg_send_done;

	/* the handshake sends no request: AUTH is taken at once */
	if (request) {
		ret = dsmem_msg_window_take(conn);
		if (ret)
			goto err_free;
	}
	if (handshake)
		ret = atomic_add_unless(&conn->msg_free, -1, 0) ? 0 : -EBUSY;
	else
		ret = dsmem_conn_wait_credit(conn, &conn->msg_free, NULL);
	if (ret)
		goto err_put_req;
	/* as late as can be: the freshest count */
	told.handled = atomic_read(&conn->rx_handled);
	WRITE_ONCE(conn->handled_told, told.handled);
	ret = dsmem_wire_encode(s->buf, size, &told);
	if (ret < 0) {
		dsmem_conn_put_credit(conn, &conn->msg_free);
		goto err_put_req;
	}
	sge.length = size;
	sge.lkey = conn->lkey;
	wr.wr_cqe = &s->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	ret = dsmem_conn_post(conn, &wr, &conn->msg_free,
			      handshake ? DSMEM_CONN_CONNECTING : DSMEM_CONN_UP,
			      dsmem_msg_send_map, dsmem_msg_send_unmap);
	if (ret)
		goto err_put_req;
	dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_SENT);
	return 0;

err_put_req:
	/* never sent: the peer will not count it */
	if (request)
		dsmem_conn_put_credit(conn, &conn->req_free);
err_free:
	kfree(s);
	return ret;
}

int dsmem_msg_send(struct dsmem_conn *conn, const struct dsmem_wire_msg *m)
{
	return __dsmem_msg_send(conn, m, false);
}

int dsmem_msg_send_auth(struct dsmem_conn *conn, const u8 *proof)
{
	struct dsmem_wire_msg m = {
		.opcode = DSMEM_WIRE_AUTH,
		.len = DSMEM_WIRE_AUTH_LEN,
		.data = proof,
	};

	return __dsmem_msg_send(conn, &m, true);
}

/*
 * Send a request and wait for its reply.  Every way out leaves nothing
 * behind: the reply is matched by tag, and a caller that stops waiting
 * (timeout) removes its tag first, or else waits for whoever took it.
 */
int dsmem_msg_call(struct dsmem_conn *conn, struct dsmem_wire_msg *req,
		   struct dsmem_wire_msg *reply, void *data, size_t data_max)
{
	return dsmem_msg_call_timeout(conn, req, reply, data, data_max,
				      dsmem_msg_timeout_ms());
}

/*
 * Send a request and return: its reply completes w, which the caller
 * waits for with dsmem_msg_finish, with no lock held if the caller took one
 * to send in order (a grant, then the revoke that follows it).
 */
int dsmem_msg_start(struct dsmem_conn *conn, struct dsmem_msg_wait *w,
		    struct dsmem_wire_msg *req, struct dsmem_wire_msg *reply,
		    void *data, size_t data_max)
{
	bool closing;
	int ret;

	*w = (struct dsmem_msg_wait){
		.req = req,
		.reply = reply,
		.data = data,
		.data_max = data_max,
	};
	init_completion(&w->done);
	ret = xa_alloc_cyclic_bh(&conn->pending, &w->tag, w, xa_limit_32b,
				 &conn->next_tag, GFP_KERNEL);
	if (ret < 0)
		return ret;

	/* dsmem_msg_fail_pending runs after the state changes */
	spin_lock_bh(&conn->lock);
	closing = conn->state != DSMEM_CONN_UP;
	spin_unlock_bh(&conn->lock);
	if (closing) {
		ret = -ENOTCONN;
		goto err_unpend;
	}

	req->tag = w->tag;
	req->seq = atomic_inc_return(&conn->seq);
	ret = dsmem_msg_send(conn, req);
	if (ret)
		goto err_unpend;
	return 0;

err_unpend:
	if (xa_erase_bh(&conn->pending, w->tag) != w)
		wait_for_completion(&w->done);
	return ret;
}

/* The reply to a started request, or why there is none. */
int dsmem_msg_finish(struct dsmem_conn *conn, struct dsmem_msg_wait *w,
		     unsigned int timeout_ms)
{
	if (!wait_for_completion_timeout(&w->done,
					 msecs_to_jiffies(timeout_ms))) {
		if (xa_erase_bh(&conn->pending, w->tag) == w) {
			dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_TIMEOUT);
			return -ETIMEDOUT;
		}
		wait_for_completion(&w->done);
	}
	return w->status;
}

/* For a request whose handling takes longer, in proportion to its size. */
int dsmem_msg_call_timeout(struct dsmem_conn *conn, struct dsmem_wire_msg *req,
			   struct dsmem_wire_msg *reply, void *data,
			   size_t data_max, unsigned int timeout_ms)
{
	struct dsmem_msg_wait w;
	int ret;

	ret = dsmem_msg_start(conn, &w, req, reply, data, data_max);
	return ret ? ret : dsmem_msg_finish(conn, &w, timeout_ms);
}

void dsmem_msg_fail_pending(struct dsmem_conn *conn, int err)
{
	struct dsmem_msg_wait *w;
	unsigned long tag;

	xa_for_each(&conn->pending, tag, w) {
		if (xa_erase_bh(&conn->pending, tag) != w)
			continue;
		w->status = err;
		complete(&w->done);
	}
}

static void dsmem_msg_handle(struct dsmem_conn *conn, struct dsmem_recv *r)
{
	const struct dsmem_wire_hdr *h = (const void *)r->buf;
	struct dsmem_wire_msg m, reply = {};
	const struct dsmem_msg_op *op;
	void *buf = NULL, *priv;
	int ret;

	ret = dsmem_wire_decode(r->buf, r->len, &m);
	if (ret) {
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
		/* answer what names its sender's tag; drop the rest */
		if (r->len < sizeof(*h) || h->magic != DSMEM_WIRE_MAGIC)
			return;
		reply.opcode = DSMEM_WIRE_REPLY_ERROR;
		reply.tag = le32_to_cpu(h->tag);
		reply.status = -ret;
		dsmem_msg_send(conn, &reply);
		return;
	}
	reply.tag = m.tag;

	op = dsmem_services_op(m.opcode, &priv, conn);
	if (!op) {
		/* a reply nobody asked for, or a request we do not serve */
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
		reply.opcode = DSMEM_WIRE_REPLY_ERROR;
		ret = -EOPNOTSUPP;
	} else {
		struct mem_cgroup *memcg;

		reply.opcode = op->reply;
		/*
		 * What a peer's request makes the node allocate (what the
		 * handler marks __GFP_ACCOUNT) is charged to the node's
		 * memory cgroup: this work belongs to no process.
		 */
		memcg = set_active_memcg(conn->peer->node->memcg);
		ret = op->handle(conn, priv, &m, &reply, &buf);
		set_active_memcg(memcg);
		if (ret == DSMEM_MSG_NO_REPLY) {
			kfree(buf);
			return;
		}
		if (ret)
			reply.opcode = op->reply_err ?: op->reply;
	}
	if (ret) {
		reply.status = -ret;
		reply.addr = 0;
		reply.len = 0;
		reply.aux = 0;
		reply.data = NULL;
	}
	dsmem_msg_send(conn, &reply);
	kfree(buf);
}

/*
 * A request of the peer's handled and its buffer posted again.  Every
 * message we send says how many; when half a window of them is unsaid
 * (the peer may be waiting for it, with nothing else coming back), a
 * PING says it.
 */
static void dsmem_msg_handled(struct dsmem_conn *conn)
{
	struct dsmem_wire_msg ping = { .opcode = DSMEM_WIRE_PING };
	u32 handled = atomic_inc_return(&conn->rx_handled);

	if (handled - READ_ONCE(conn->handled_told) >= DSMEM_WIRE_REQ_WINDOW / 2)
		dsmem_msg_send(conn, &ping);
}

void dsmem_msg_rx_work(struct work_struct *work)
{
	struct dsmem_conn *conn = container_of(work, struct dsmem_conn,
					       rx_work);
	struct dsmem_recv *r;

	for (;;) {
		spin_lock_bh(&conn->lock);
		/* before up: the up work kicks us; closing: dropped */
		if (conn->state != DSMEM_CONN_UP) {
			spin_unlock_bh(&conn->lock);
			return;
		}
		r = list_first_entry_or_null(&conn->rx_list, struct dsmem_recv,
					     link);
		if (r)
			list_del(&r->link);
		spin_unlock_bh(&conn->lock);
		if (!r)
			return;
		dsmem_msg_handle(conn, r);
		dsmem_msg_repost(conn, r);
		dsmem_msg_handled(conn);
	}
}
