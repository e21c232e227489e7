// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rogue peer (rogue.h).  One RC QP, a ring of receive buffers and one
 * send buffer in one memory region; sends complete before the next one is
 * posted, receives are polled, nothing runs in the background.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sodium.h>

#include "rogue.h"
#include "util.h"

#define ROGUE_RECVS	32
#define ROGUE_MSG_MAX	(DSMEM_WIRE_MAX_UNITS * DSMEM_WIRE_UNIT)
/* larger than the node takes, for messages that must not fit */
#define ROGUE_SEND_MAX	(2 * ROGUE_MSG_MAX)
#define ROGUE_SEND_ID	UINT64_MAX
#define ROGUE_WRITE_ID	(UINT64_MAX - 1)
#define ROGUE_GRANTS	4		/* the last GRANTs kept */

struct rogue {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;		/* ROGUE_RECVS receives, then the send */
	enum rogue_mode mode;
	/* receives completed and not yet looked at, in order */
	uint32_t ready[ROGUE_RECVS], ready_len[ROGUE_RECVS];
	unsigned int nready;
	/* messages a call passed over, for rogue_recv (their data dropped) */
	struct dsmem_wire_msg backlog[8];
	unsigned int nbacklog;
	uint32_t seq, tag;
	unsigned int grants;
	unsigned int revokes;
	struct rogue_grant granted[ROGUE_GRANTS];	/* by grants % ROGUE_GRANTS */
	bool sent;
	bool written;
	enum ibv_wc_status write_status;
	/* receive buffers consumed and not posted again (rogue_hold_recvs) */
	bool hold;
	uint32_t held[ROGUE_RECVS];
	unsigned int nheld;
	/*
	 * The node's requests in each buffer, and those handled (their
	 * buffer posted again) ever: what every message says (handled), and
	 * what the last one said; or, muted, nothing ever.
	 */
	bool is_request[ROGUE_RECVS];
	uint32_t handled, handled_told;
	bool mute;
	unsigned int requests;		/* the node's, received ever */
	bool closed;
	/* the ACCEPT's private data and the node's QPN, once established */
	uint8_t accept_pd[64];
	uint8_t accept_pd_len;
	uint32_t remote_qpn;
	uint8_t proof[DSMEM_WIRE_AUTH_LEN];
	bool proved;
	/* what the connect asks, kept from rogue_prepare to rogue_established */
	struct dsmem_wire_cm_info info;
	struct rogue_auth auth;
	bool has_auth;
};

static uint8_t *recv_buf(struct rogue *r, unsigned int i)
{
	return r->buf + (size_t)i * ROGUE_MSG_MAX;
}

static uint8_t *send_buf(struct rogue *r)
{
	return recv_buf(r, ROGUE_RECVS);
}

/* The next CM event, until want; the ends of a connection say so. */
static int cm_wait(struct rogue *r, enum rdma_cm_event_type want, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	struct pollfd p = { .fd = r->ch->fd, .events = POLLIN };

	for (;;) {
		struct rdma_cm_event *ev;
		enum rdma_cm_event_type type;
		int left = (int)(end - now_ms());

		if (left < 0 || poll(&p, 1, left) == 0)
			return -ETIMEDOUT;
		if (rdma_get_cm_event(r->ch, &ev)) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		type = ev->event;
		if (type == RDMA_CM_EVENT_ESTABLISHED) {
			size_t n = ev->param.conn.private_data_len;

			if (n > sizeof(r->accept_pd))
				n = sizeof(r->accept_pd);
			if (ev->param.conn.private_data)
				memcpy(r->accept_pd, ev->param.conn.private_data, n);
			r->accept_pd_len = (uint8_t)n;
			r->remote_qpn = ev->param.conn.qp_num;
		}
		rdma_ack_cm_event(ev);
		if (type == want)
			return 0;
		switch (type) {
		case RDMA_CM_EVENT_REJECTED:
			return -ECONNREFUSED;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			r->closed = true;
			return -ECONNRESET;
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
			return -EHOSTUNREACH;
		default:
			break;
		}
	}
}

static int post_recv_now(struct rogue *r, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)recv_buf(r, i),
		.length = ROGUE_MSG_MAX,
		.lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad) ? -EIO : 0;
}

/* A consumed buffer back to the device: the request in it, if any, handled. */
static int repost(struct rogue *r, unsigned int i)
{
	int ret = post_recv_now(r, i);

	if (!ret && r->is_request[i])
		r->handled++;
	r->is_request[i] = false;
	return ret;
}

/* A consumed buffer back to the device, or kept while holding. */
static int post_recv(struct rogue *r, unsigned int i)
{
	if (r->hold) {
		r->held[r->nheld++] = i;
		return 0;
	}
	return repost(r, i);
}

void rogue_hold_recvs(struct rogue *r)
{
	r->hold = true;
}

int rogue_release_held(struct rogue *r, unsigned int n)
{
	while (n-- && r->nheld) {
		uint32_t i = r->held[0];
		int ret;

		memmove(r->held, r->held + 1, --r->nheld * sizeof(r->held[0]));
		ret = repost(r, i);
		if (ret)
			return ret;
	}
	return 0;
}

void rogue_mute_handled(struct rogue *r)
{
	r->mute = true;
}

unsigned int rogue_requests(const struct rogue *r)
{
	return r->requests;
}

unsigned int rogue_held(const struct rogue *r)
{
	return r->nheld;
}

/* Poll one completion into r's state; 0 if there was none. */
static int poll_one(struct rogue *r)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(r->cq, 1, &wc);

	if (n <= 0)
		return n < 0 ? -EIO : 0;
	if (wc.wr_id == ROGUE_WRITE_ID) {
		r->written = true;
		r->write_status = wc.status;
		/* refused: the QP is in error, the connection over */
		if (wc.status != IBV_WC_SUCCESS)
			r->closed = true;
		return 1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		/* the QP is in error: the node went, or refused us */
		r->closed = true;
		return 1;
	}
	if (wc.wr_id == ROGUE_SEND_ID) {
		r->sent = true;
	} else if (r->nready < ROGUE_RECVS) {
		r->ready[r->nready] = (uint32_t)wc.wr_id;
		r->ready_len[r->nready++] = wc.byte_len;
	}
	return 1;
}

/* Poll until cond(r) or the deadline; the node closing ends it too. */
static int poll_until(struct rogue *r, bool (*cond)(const struct rogue *), int64_t end)
{
	struct pollfd p = { .fd = r->ch->fd, .events = POLLIN };

	while (!cond(r)) {
		int ret = poll_one(r);

		if (ret < 0)
			return ret;
		if (r->closed)
			return -ECONNRESET;
		if (ret)
			continue;
		/* a DISCONNECTED event, without blocking */
		if (poll(&p, 1, 0) == 1 && cm_wait(r, RDMA_CM_EVENT_ESTABLISHED, 0) == -ECONNRESET)
			return -ECONNRESET;
		if (now_ms() >= end)
			return -ETIMEDOUT;
		usleep(200);
	}
	return 0;
}

static bool has_sent(const struct rogue *r)
{
	return r->sent;
}

static bool has_ready(const struct rogue *r)
{
	return r->nready > 0;
}

static bool has_written(const struct rogue *r)
{
	return r->written;
}

/*
 * Post len bytes of buf from the send buffer as one work request (a SEND,
 * or a WRITE to addr under rkey) and poll until its completion sets
 * *done; sends complete before the next one is posted.
 */
static int post_buf(struct rogue *r, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t addr,
		    uint32_t rkey, const void *buf, size_t len, bool *done)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_buf(r),
		.length = (uint32_t)len,
		.lkey = r->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	}, *bad;

	if (len > ROGUE_SEND_MAX)
		return -EMSGSIZE;
	if (r->closed)
		return -ECONNRESET;
	memcpy(send_buf(r), buf, len);
	*done = false;
	if (ibv_post_send(r->id->qp, &wr, &bad))
		return -EIO;
	return poll_until(r, op == IBV_WR_SEND ? has_sent : has_written, now_ms() + 10000);
}

int rogue_write(struct rogue *r, uint64_t addr, uint32_t rkey, const void *buf, size_t len)
{
	int ret;

	r->written = false;	/* a post refused before it went out says nothing */
	ret = post_buf(r, IBV_WR_RDMA_WRITE, ROGUE_WRITE_ID, addr, rkey, buf, len, &r->written);

	/* a refused write puts the QP in error: the completion says why */
	if (r->written)
		return r->write_status == IBV_WC_SUCCESS ? 0 :
		       r->write_status == IBV_WC_REM_ACCESS_ERR ? -EACCES : -EIO;
	return ret;
}

int rogue_send_raw(struct rogue *r, const void *buf, size_t len)
{
	return post_buf(r, IBV_WR_SEND, ROGUE_SEND_ID, 0, 0, buf, len, &r->sent);
}

int rogue_send(struct rogue *r, struct dsmem_wire_msg *m)
{
	uint8_t out[ROGUE_MSG_MAX];
	int n;

	m->seq = ++r->seq;
	m->handled = r->mute ? 0 : r->handled;
	r->handled_told = m->handled;
	n = dsmem_wire_encode(out, sizeof(out), m);
	if (n < 0)
		return n;
	return rogue_send_raw(r, out, (size_t)n);
}

/* As the node does: half a window of requests handled and unsaid, a PING. */
static void say_handled(struct rogue *r)
{
	struct dsmem_wire_msg ping = { .opcode = DSMEM_WIRE_PING };

	if (!r->mute && r->handled - r->handled_told >= DSMEM_WIRE_REQ_WINDOW / 2)
		rogue_send(r, &ping);
}

/* The node's own requests that the mode answers (or swallows). */
static bool handled(struct rogue *r, const struct dsmem_wire_msg *m)
{
	struct dsmem_wire_msg reply = { .tag = m->tag };

	/* announcements, answered by nobody */
	if (m->opcode == DSMEM_WIRE_PING || m->opcode == DSMEM_WIRE_SLOPE_LEASE_COUNT)
		return true;
	if (m->opcode != DSMEM_WIRE_GRANT && m->opcode != DSMEM_WIRE_REVOKE)
		return false;
	if (m->opcode == DSMEM_WIRE_GRANT) {
		struct rogue_grant *g = &r->granted[r->grants % ROGUE_GRANTS];
		struct dsmem_wire_grant_info gi;

		memset(g, 0, sizeof(*g));
		if (m->data && !dsmem_wire_grant_decode(m->data, m->len, &gi)) {
			*g = (struct rogue_grant){ .base = gi.base, .size = gi.size,
						   .span = gi.span, .perm = gi.perm,
						   .nkeys = gi.nkeys };
			if (gi.nkeys)
				g->rkey0 = dsmem_wire_grant_rkey(&gi, 0);
		}
		r->grants++;
	} else {
		r->revokes++;
	}
	if (r->mode == ROGUE_ANSWER || r->mode == ROGUE_REFUSE) {
		reply.opcode = m->opcode == DSMEM_WIRE_GRANT ? DSMEM_WIRE_REPLY_GRANT :
							       DSMEM_WIRE_REPLY_REVOKE;
		if (r->mode == ROGUE_REFUSE && m->opcode == DSMEM_WIRE_GRANT)
			reply.status = ENOMEM;
		rogue_send(r, &reply);
	}
	return true;
}

int rogue_recv(struct rogue *r, struct dsmem_wire_msg *m, void *data, size_t max,
	       int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	if (r->nbacklog) {
		*m = r->backlog[0];
		memmove(r->backlog, r->backlog + 1, --r->nbacklog * sizeof(r->backlog[0]));
		return 0;
	}
	for (;;) {
		uint32_t i, len;
		bool mine;
		int ret;

		ret = poll_until(r, has_ready, end);
		if (ret)
			return ret;
		i = r->ready[0];
		len = r->ready_len[0];
		memmove(r->ready, r->ready + 1, --r->nready * sizeof(r->ready[0]));
		memmove(r->ready_len, r->ready_len + 1, r->nready * sizeof(r->ready_len[0]));
		ret = dsmem_wire_decode(recv_buf(r, i), len, m);
		if (ret) {
			post_recv(r, i);
			return -EBADMSG;
		}
		r->is_request[i] = dsmem_wire_is_request(m->opcode);
		r->requests += r->is_request[i];
		mine = !handled(r, m);
		if (mine && m->data) {
			if (data)
				memcpy(data, m->data, m->len < max ? m->len : max);
			m->data = data;
		}
		post_recv(r, i);
		say_handled(r);
		if (mine)
			return 0;
	}
}

int rogue_call(struct rogue *r, struct dsmem_wire_msg *req, struct dsmem_wire_msg *reply,
	       void *data, size_t max, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	int ret;

	req->tag = ++r->tag;
	ret = rogue_send(r, req);
	if (ret)
		return ret;
	for (;;) {
		ret = rogue_recv(r, reply, data, max, (int)(end - now_ms()));
		if (ret || (reply->tag == req->tag && dsmem_wire_is_reply(reply->opcode)))
			return ret;
		/* the node's own request, meanwhile: kept for rogue_recv */
		if (r->nbacklog < sizeof(r->backlog) / sizeof(r->backlog[0])) {
			reply->data = NULL;
			r->backlog[r->nbacklog++] = *reply;
		}
	}
}

int rogue_wait_closed(struct rogue *r, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	struct dsmem_wire_msg m;

	while (!r->closed && now_ms() < end) {
		int ret = rogue_recv(r, &m, NULL, 0, (int)(end - now_ms()));

		if (ret == -ECONNRESET)
			break;
	}
	return r->closed ? 0 : -ETIMEDOUT;
}

unsigned int rogue_grants(const struct rogue *r)
{
	return r->grants;
}

unsigned int rogue_revokes(const struct rogue *r)
{
	return r->revokes;
}

void rogue_set_mode(struct rogue *r, enum rogue_mode mode)
{
	r->mode = mode;
}

int rogue_grant(const struct rogue *r, unsigned int back, struct rogue_grant *g)
{
	if (back >= ROGUE_GRANTS || back >= r->grants)
		return -ENOENT;
	*g = r->granted[(r->grants - 1 - back) % ROGUE_GRANTS];
	return 0;
}

const uint8_t *rogue_proof(const struct rogue *r)
{
	return r->proved ? r->proof : NULL;
}

static void rogue_hmac(const void *key, size_t key_len, const struct dsmem_wire_auth_info *a,
		       uint8_t out[DSMEM_WIRE_AUTH_LEN])
{
	uint8_t in[DSMEM_WIRE_AUTH_INPUT_LEN];
	crypto_auth_hmacsha256_state st;

	dsmem_wire_auth_input(in, a);
	crypto_auth_hmacsha256_init(&st, key, key_len);
	crypto_auth_hmacsha256_update(&st, in, sizeof(in));
	crypto_auth_hmacsha256_final(&st, out);
}

/*
 * gid: the address's GID as RoCE makes it (an IPv4-mapped IPv6 address),
 * the one the proof names instead of the path's.  0, or -EINVAL.
 */
static int rogue_claimed_gid(const char *addr, uint8_t gid[DSMEM_WIRE_GID_LEN])
{
	char mapped[INET6_ADDRSTRLEN];

	if (strchr(addr, ':') ||
	    snprintf(mapped, sizeof(mapped), "::ffff:%s", addr) >= (int)sizeof(mapped))
		return -EINVAL;
	return inet_pton(AF_INET6, mapped, gid) == 1 ? 0 : -EINVAL;
}

/* The connector's half of the handshake, once established. */
static int rogue_authenticate(struct rogue *r, const uint8_t *my_nonce, uint32_t src,
			      const struct rogue_auth *auth)
{
	struct dsmem_wire_cm_info acc;
	struct dsmem_wire_auth_info a = { .nonce_c = my_nonce, .node_c = src };
	struct dsmem_wire_msg m = { .opcode = DSMEM_WIRE_AUTH, .len = DSMEM_WIRE_AUTH_LEN };
	uint8_t want[DSMEM_WIRE_AUTH_LEN], got[DSMEM_WIRE_AUTH_LEN];
	uint8_t gid_c[DSMEM_WIRE_GID_LEN], gid_a[DSMEM_WIRE_GID_LEN];
	const struct ibv_sa_path_rec *path = r->id->route.path_rec;
	int ret;

	if (dsmem_wire_cm_decode(r->accept_pd, r->accept_pd_len, &acc))
		return -EBADMSG;
	/* what the node reads off its own QP: the path both QPs were set up for */
	if (!path || r->id->route.num_paths < 1)
		return -EHOSTUNREACH;
	memcpy(gid_c, path->sgid.raw, sizeof(gid_c));
	memcpy(gid_a, path->dgid.raw, sizeof(gid_a));
	if ((auth->proof_from && rogue_claimed_gid(auth->proof_from, gid_c)) ||
	    (auth->proof_to && rogue_claimed_gid(auth->proof_to, gid_a)))
		return -EINVAL;
	a.gid_c = gid_c;
	a.gid_a = gid_a;
	a.nonce_a = acc.nonce;
	a.node_a = acc.src_node;
	a.qpn_c = r->id->qp->qp_num;
	a.qpn_a = r->remote_qpn;
	if (auth->proof)
		memcpy(r->proof, auth->proof, sizeof(r->proof));
	else if (auth->key)
		rogue_hmac(auth->key, auth->key_len, &a, r->proof);
	else
		return 0;	/* asks for the handshake, never proves anything */
	m.data = r->proof;
	ret = rogue_send(r, &m);
	/*
	 * A node that reads a wrong proof closes at once, and its
	 * disconnect may be seen before our send's completion: the proof
	 * was delivered all the same, and what follows is the caller's to
	 * judge (the connection is closed, nothing was served).
	 */
	if (ret == -ECONNRESET && auth->no_check)
		ret = 0;
	if (ret)
		return ret;
	r->proved = true;
	if (!auth->key || auth->no_check)
		return 0;
	/* the node's proof comes first: nothing is served before it */
	ret = rogue_recv(r, &m, got, sizeof(got), 10000);
	if (ret)
		return ret;
	a.role = 1;
	rogue_hmac(auth->key, auth->key_len, &a, want);
	if (m.opcode != DSMEM_WIRE_AUTH || m.len != sizeof(got) || memcmp(got, want, sizeof(got)))
		return -EKEYREJECTED;
	return 0;
}

int rogue_connect(struct rogue **rp, const char *addr, uint16_t port, uint32_t src,
		  uint32_t dst, enum rogue_mode mode)
{
	return rogue_connect_auth(rp, addr, port, src, dst, mode, NULL);
}

int rogue_prepare(struct rogue **rp, const char *addr, uint16_t port, uint32_t src,
		  uint32_t dst, enum rogue_mode mode, const struct rogue_auth *auth)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t size = (size_t)ROGUE_RECVS * ROGUE_MSG_MAX + ROGUE_SEND_MAX;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	struct rogue *r;
	int ret;

	*rp = NULL;
	if (sodium_init() < 0)
		return -EIO;
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->mode = mode;
	r->info.src_node = src;
	r->info.dst_node = dst;
	if (auth) {
		r->auth = *auth;
		r->has_auth = true;
	}
	r->ch = rdma_create_event_channel();
	if (!r->ch) {
		free(r);
		return -errno;
	}
	fcntl(r->ch->fd, F_SETFL, fcntl(r->ch->fd, F_GETFL) | O_NONBLOCK);
	ret = -EIO;
	if (rdma_create_id(r->ch, &r->id, r, RDMA_PS_TCP))
		goto err;
	if (auth && auth->from) {
		struct sockaddr_in from = { .sin_family = AF_INET };

		if (inet_pton(AF_INET, auth->from, &from.sin_addr) != 1) {
			ret = -EINVAL;
			goto err;
		}
		if (rdma_resolve_addr(r->id, (struct sockaddr *)&from, (struct sockaddr *)&sin,
				      2000))
			goto err;
	} else if (rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&sin, 2000)) {
		goto err;
	}
	ret = cm_wait(r, RDMA_CM_EVENT_ADDR_RESOLVED, 5000);
	if (ret)
		goto err;
	ret = -EIO;
	if (rdma_resolve_route(r->id, 2000))
		goto err;
	ret = cm_wait(r, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000);
	if (ret)
		goto err;

	ret = -ENOMEM;
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 2 * ROGUE_RECVS, NULL, NULL, 0) : NULL;
	r->buf = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	if (!r->cq || !r->buf)
		goto err;
	r->mr = ibv_reg_mr(r->pd, r->buf, size, IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		goto err;
	qa.send_cq = r->cq;
	qa.recv_cq = r->cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = ROGUE_RECVS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(r->id, r->pd, &qa)) {
		ret = -errno;
		goto err;
	}
	for (unsigned int i = 0; i < ROGUE_RECVS; i++)
		if (post_recv(r, i))
			goto err;
	*rp = r;
	return 0;
err:
	rogue_close(r);
	return ret;
}

int rogue_dial(struct rogue *r)
{
	struct rdma_conn_param cp = {};
	struct dsmem_wire_cm cm;

	if (r->has_auth && r->auth.flag)
		r->info.flags = DSMEM_WIRE_CM_F_AUTH;
	if (r->has_auth && r->auth.path)
		r->info.flags |= DSMEM_WIRE_CM_F_PATH;
	randombytes_buf(r->info.nonce, sizeof(r->info.nonce));
	dsmem_wire_cm_encode(&cm, &r->info);
	cp.private_data = &cm;
	cp.private_data_len = sizeof(cm);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 6;
	cp.rnr_retry_count = 7;
	return rdma_connect(r->id, &cp) ? -EIO : 0;
}

int rogue_established(struct rogue *r, int timeout_ms)
{
	int ret = cm_wait(r, RDMA_CM_EVENT_ESTABLISHED, timeout_ms);

	if (!ret && r->has_auth && r->auth.flag)
		ret = rogue_authenticate(r, r->info.nonce, r->info.src_node, &r->auth);
	return ret;
}

int rogue_connect_auth(struct rogue **rp, const char *addr, uint16_t port, uint32_t src,
		       uint32_t dst, enum rogue_mode mode, const struct rogue_auth *auth)
{
	struct rogue *r;
	int ret = rogue_prepare(&r, addr, port, src, dst, mode, auth);

	if (ret)
		return ret;
	ret = rogue_dial(r);
	if (!ret)
		ret = rogue_established(r, 10000);
	if (ret) {
		rogue_close(r);
		return ret;
	}
	*rp = r;
	return 0;
}

void rogue_close(struct rogue *r)
{
	if (!r)
		return;
	if (r->id && r->id->qp) {
		rdma_disconnect(r->id);
		rdma_destroy_qp(r->id);
	}
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	rdma_destroy_event_channel(r->ch);
	free(r->buf);
	free(r);
}
