// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the segment service's messages, registered with the transport
 * (dsmem_service.h).  A peer's requests on our node's memory -- the
 * seed-002 remote-memory service: ALLOC, FREE, READ, WRITE -- and the
 * GRANT and REVOKE that install or remove a peer's segment on the
 * connection, which the one-sided data path (dsmem_xfer.c) then reaches.
 */
#include <linux/slab.h>

#include "dsmem_rdm.h"

/* Remote segments: what peers granted to this connection. */

struct dsmem_rseg *dsmem_rseg_lookup(struct dsmem_conn *conn, u64 gaddr)
{
	return xa_load(&conn->rsegs, gaddr >> DSMEM_GADDR_SEG_SHIFT);
}

static int dsmem_rseg_install(struct dsmem_conn *conn,
			      const struct dsmem_wire_msg *m)
{
	struct dsmem_wire_grant_info g;
	struct dsmem_rseg *rs, *old;
	u32 i;
	int ret;

	ret = dsmem_wire_grant_decode(m->data, m->len, &g);
	if (ret)
		return ret;
	/* a peer grants its own memory, whole segments, and nothing else */
	if (g.base != m->addr || DSMEM_GADDR_OFF(g.base) ||
	    !DSMEM_GADDR_SEG(g.base) || g.size > DSMEM_SEG_SIZE_MAX)
		return -EINVAL;
	if (DSMEM_GADDR_NODE(g.base) != conn->remote_node)
		return -EACCES;

	rs = kzalloc(struct_size(rs, rkeys, g.nkeys), GFP_KERNEL);
	if (!rs)
		return -ENOMEM;
	rs->base = g.base;
	rs->size = g.size;
	rs->span = g.span;
	rs->perm = g.perm;
	rs->nkeys = g.nkeys;
	for (i = 0; i < g.nkeys; i++)
		rs->rkeys[i] = dsmem_wire_grant_rkey(&g, i);

	old = xa_store(&conn->rsegs, g.base >> DSMEM_GADDR_SEG_SHIFT, rs,
		       GFP_KERNEL);
	if (xa_is_err(old)) {
		kfree(rs);
		return xa_err(old);
	}
	if (old)
		kfree_rcu(old, rcu);
	return 0;
}

static int dsmem_rseg_remove(struct dsmem_conn *conn, u64 base)
{
	struct dsmem_rseg *old;

	old = xa_erase(&conn->rsegs, base >> DSMEM_GADDR_SEG_SHIFT);
	if (!old)
		return -ENOENT;
	kfree_rcu(old, rcu);
	return 0;
}

static void dsmem_rsegs_free(struct dsmem_conn *conn)
{
	struct dsmem_rseg *rs;
	unsigned long i;

	xa_for_each(&conn->rsegs, i, rs) {
		xa_erase(&conn->rsegs, i);
		kfree_rcu(rs, rcu);
	}
}

/* The segment of ours @addr names, if the peer may do @need in it. */
static struct dsmem_seg *dsmem_msg_seg(struct dsmem_conn *conn, u64 addr,
				       u32 need, int *err)
{
	struct dsmem_seg *seg;

	if (DSMEM_GADDR_NODE(addr) != conn->peer->node->id) {
		*err = -EFAULT;
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_RANGE);
		return NULL;
	}
	seg = dsmem_seg_by_addr(conn->peer->node, addr);
	if (!seg) {
		*err = -EFAULT;
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_RANGE);
		return NULL;
	}
	if ((dsmem_seg_perm(seg, conn->remote_node) & need) != need) {
		dsmem_seg_put(seg);
		*err = -EACCES;
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_DENIED);
		return NULL;
	}
	return seg;
}

static int dsmem_seg_on_alloc(struct dsmem_conn *conn, void *priv,
			      const struct dsmem_wire_msg *m,
			      struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_node *node = conn->peer->node;
	struct dsmem_seg *seg;
	unsigned long i;
	int ret = -ENOMEM;

	reply->len = m->len;
	if (m->aux) {
		if (m->aux > DSMEM_SEG_ID_MAX)
			return -EINVAL;
		seg = dsmem_msg_seg(conn, DSMEM_GADDR(node->id, m->aux, 0),
				    DSMEM_PERM_WRITE, &ret);
		if (!seg)
			return ret;
		ret = dsmem_seg_alloc(seg, m->len, &reply->addr, &reply->aux);
		dsmem_seg_put(seg);
		return ret;
	}
	/* any segment we may allocate in, first fit */
	for (i = 1; i <= DSMEM_SEG_ID_MAX; i++) {
		rcu_read_lock();
		seg = xa_find(&node->segs, &i, DSMEM_SEG_ID_MAX, XA_PRESENT);
		if (seg && !kref_get_unless_zero(&seg->ref))
			seg = NULL;
		rcu_read_unlock();
		if (!seg)
			break;
		if (dsmem_seg_perm(seg, conn->remote_node) & DSMEM_PERM_WRITE)
			ret = dsmem_seg_alloc(seg, m->len, &reply->addr,
					      &reply->aux);
		dsmem_seg_put(seg);
		if (!ret)
			return 0;
	}
	if (ret == -EACCES)
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_DENIED);
	return ret;
}

static int dsmem_seg_on_free(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_seg *seg;
	int ret;

	seg = dsmem_msg_seg(conn, m->addr, DSMEM_PERM_WRITE, &ret);
	if (!seg)
		return ret;
	ret = dsmem_seg_free(seg, m->addr);
	dsmem_seg_put(seg);
	return ret;
}

static int dsmem_seg_on_read(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_seg *seg;
	void *buf;
	int ret;

	seg = dsmem_msg_seg(conn, m->addr, DSMEM_PERM_READ, &ret);
	if (!seg)
		return ret;
	buf = kmalloc(m->len, GFP_KERNEL);
	ret = buf ? dsmem_seg_access(seg, m->addr, buf, m->len, false) :
		    -ENOMEM;
	dsmem_seg_put(seg);
	*data = buf;
	reply->addr = m->addr;
	reply->len = m->len;
	reply->data = buf;
	return ret;
}

static int dsmem_seg_on_write(struct dsmem_conn *conn, void *priv,
			      const struct dsmem_wire_msg *m,
			      struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_seg *seg;
	int ret;

	seg = dsmem_msg_seg(conn, m->addr, DSMEM_PERM_WRITE, &ret);
	if (seg) {
		ret = dsmem_seg_access(seg, m->addr, (void *)m->data, m->len,
				       true);
		dsmem_seg_put(seg);
	}
	/* a write is answered only when asked to be */
	if (!(m->flags & DSMEM_WIRE_F_ACK))
		return DSMEM_MSG_NO_REPLY;
	return ret;
}

static int dsmem_seg_on_grant(struct dsmem_conn *conn, void *priv,
			      const struct dsmem_wire_msg *m,
			      struct dsmem_wire_msg *reply, void **data)
{
	int ret = dsmem_rseg_install(conn, m);

	if (ret)
		dsmem_stat_inc(dsmem_conn_net(conn), DSMEM_STAT_MSG_BAD);
	return ret;
}

static int dsmem_seg_on_revoke(struct dsmem_conn *conn, void *priv,
			       const struct dsmem_wire_msg *m,
			       struct dsmem_wire_msg *reply, void **data)
{
	return dsmem_rseg_remove(conn, m->addr);
}

static void dsmem_seg_svc_conn_up(struct dsmem_conn *conn, void *priv)
{
	dsmem_seg_conn_up(conn);
}

static void dsmem_seg_svc_conn_down(struct dsmem_conn *conn, void *priv)
{
	dsmem_seg_conn_down(conn);
	dsmem_rsegs_free(conn);
}

static const struct dsmem_msg_op dsmem_seg_ops[] = {
	{ DSMEM_WIRE_ALLOC, DSMEM_WIRE_REPLY_ALLOC, 0, dsmem_seg_on_alloc },
	{ DSMEM_WIRE_FREE, DSMEM_WIRE_REPLY_FREE, 0, dsmem_seg_on_free },
	{ DSMEM_WIRE_READ, DSMEM_WIRE_REPLY_READ, DSMEM_WIRE_REPLY_READ_ERROR,
	  dsmem_seg_on_read },
	{ DSMEM_WIRE_WRITE, DSMEM_WIRE_REPLY_WRITE, 0, dsmem_seg_on_write },
	{ DSMEM_WIRE_GRANT, DSMEM_WIRE_REPLY_GRANT, 0, dsmem_seg_on_grant },
	{ DSMEM_WIRE_REVOKE, DSMEM_WIRE_REPLY_REVOKE, 0, dsmem_seg_on_revoke },
};

static struct dsmem_service dsmem_seg_service = {
	.name		= "segments",
	.conn_up	= dsmem_seg_svc_conn_up,
	.conn_down	= dsmem_seg_svc_conn_down,
	.ops		= dsmem_seg_ops,
	.nops		= ARRAY_SIZE(dsmem_seg_ops),
	/* each path has its own grants (its PD's rkeys) */
	.paths		= true,
};

int dsmem_seg_service_init(void)
{
	return dsmem_service_register(&dsmem_seg_service);
}

void dsmem_seg_service_exit(void)
{
	dsmem_service_unregister(&dsmem_seg_service);
}
