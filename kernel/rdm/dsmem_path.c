// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: a peer's other paths.  Two nodes on several devices each get a
 * connection per device pair, not one: once a peer's first connection is
 * up, the end that dialled it asks the other for its other devices'
 * addresses (PATHS) and dials each with DSMEM_WIRE_CM_F_PATH.  A path is
 * a whole connection, with its own PD, CQ, QP, credits, handshake and
 * grants (the segment service pushes them on every path), which only the
 * data path's unordered requests use (dsmem_xfer.c); everything else
 * still speaks over the first connection.  Paths close with it.
 *
 * The addresses are the RoCE GIDs of the devices' ports that are
 * IPv4-mapped, in the node's network namespace: what rdma_cm can dial.
 */
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>

#include "dsmem_rdm.h"

bool dsmem_multipath = true;
module_param_named(multipath, dsmem_multipath, bool, 0644);
MODULE_PARM_DESC(multipath,
		 "Connect peers over every pair of their nodes' devices, and answer a peer's request to (default: Y)");

/* An IPv4-mapped RoCE v2 GID of ibdev in net, up: its address. */
static bool dsmem_path_dev_addr(struct ib_device *ibdev, struct net *net,
				u8 addr[DSMEM_WIRE_PATH_ADDR_LEN])
{
	const struct ib_port_immutable *im;
	u32 port;

	rdma_for_each_port(ibdev, port) {
		unsigned int i;

		if (!rdma_protocol_roce(ibdev, port))
			continue;
		im = ib_port_immutable_read(ibdev, port);
		for (i = 0; i < im->gid_tbl_len; i++) {
			const struct ib_gid_attr *attr;
			struct net_device *ndev;
			bool ok;

			attr = rdma_get_gid_attr(ibdev, port, i);
			if (IS_ERR(attr))
				continue;
			rcu_read_lock();
			ndev = rdma_read_gid_attr_ndev_rcu(attr);
			ok = !IS_ERR(ndev) && net_eq(dev_net(ndev), net) &&
			     (ndev->flags & IFF_UP) &&
			     attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
			     ipv6_addr_v4mapped((const struct in6_addr *)
						attr->gid.raw);
			rcu_read_unlock();
			if (ok)
				memcpy(addr, attr->gid.raw,
				       DSMEM_WIRE_PATH_ADDR_LEN);
			rdma_put_gid_attr(attr);
			if (ok)
				return true;
		}
	}
	return false;
}

/*
 * PATHS, on a keyed peer's first connection: the addresses of this node's
 * devices other than the one it arrived on.  An insecure node answers
 * none: a path is admitted by its proof of the key alone (its address is
 * not the peer's), and an insecure node has no proof to go by.
 */
static int dsmem_path_on_paths(struct dsmem_conn *conn, void *priv,
			       const struct dsmem_wire_msg *m,
			       struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_node *node = conn->peer->node;
	u8 (*addrs)[DSMEM_WIRE_PATH_ADDR_LEN];
	unsigned int i, n = 0;

	if (conn->path)
		return -EINVAL;
	if (!READ_ONCE(dsmem_multipath) || !node->key[0])
		return -EOPNOTSUPP;
	addrs = kcalloc(DSMEM_NODE_DEVS_MAX, sizeof(*addrs), GFP_KERNEL);
	if (!addrs)
		return -ENOMEM;
	/* node->lock orders the devices' gone flags: none is freed under it */
	mutex_lock(&node->lock);
	for (i = 0; i < node->ndevs; i++)
		if (i != conn->ldev && !node->devs[i].gone &&
		    dsmem_path_dev_addr(node->devs[i].ibdev, node->net,
					addrs[n]))
			n++;
	mutex_unlock(&node->lock);
	reply->len = n * sizeof(*addrs);
	reply->data = addrs;
	*data = addrs;
	return 0;
}

static void dsmem_path_addr(struct sockaddr_storage *ss, const u8 *raw,
			    u16 port)
{
	const struct in6_addr *a6 = (const struct in6_addr *)raw;

	memset(ss, 0, sizeof(*ss));
	if (ipv6_addr_v4mapped(a6)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = a6->s6_addr32[3];
		sin->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = *a6;
		sin6->sin6_port = htons(port);
	}
}

/*
 * The peer's first connection is up (or a path went): ask for the other
 * end's addresses and dial a path to each, unless one is up already.
 * The connection's release closes the paths, and the peer's stop cancels
 * this; a path that fails is asked for again, backing off.
 */
void dsmem_path_work(struct work_struct *work)
{
	struct dsmem_peer *peer = container_of(to_delayed_work(work),
					       struct dsmem_peer, paths_work);
	u8 addrs[DSMEM_NODE_DEVS_MAX][DSMEM_WIRE_PATH_ADDR_LEN];
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_PATHS }, reply;
	u16 port = dsmem_sockaddr_port(&peer->addr);
	struct sockaddr_storage ss;
	struct dsmem_conn *conn;
	unsigned int i, n;
	int ret;

	if (!READ_ONCE(dsmem_multipath))
		return;
	spin_lock_bh(&peer->lock);
	conn = peer->conn;
	if (conn && READ_ONCE(conn->state) == DSMEM_CONN_UP)
		kref_get(&conn->ref);
	else
		conn = NULL;
	spin_unlock_bh(&peer->lock);
	if (!conn)
		return;
	ret = dsmem_msg_call(conn, &req, &reply, addrs, sizeof(addrs));
	dsmem_conn_put(conn);
	/* an older or insecure peer: one path; otherwise, ask again */
	if (ret == -EOPNOTSUPP)
		return;
	if (ret) {
		dsmem_peer_paths_retry(peer);
		return;
	}
	if (reply.len % DSMEM_WIRE_PATH_ADDR_LEN || reply.len > sizeof(addrs)) {
		dsmem_stat_inc(peer->node->net, DSMEM_STAT_MSG_BAD);
		return;
	}
	n = reply.len / DSMEM_WIRE_PATH_ADDR_LEN;
	for (i = 0; i < n; i++) {
		dsmem_path_addr(&ss, addrs[i], port);
		ret = dsmem_peer_path_dial(peer, &ss);
		if (ret == -ENOTCONN)
			break;		/* the first connection went */
		if (ret && ret != -EALREADY) {
			/* no slot yet (a path still releasing), no memory */
			dsmem_peer_paths_retry(peer);
			break;
		}
	}
}

/* Only the first connection of a peer this end dialled asks for paths. */
static void dsmem_path_conn_up(struct dsmem_conn *conn, void *priv)
{
	struct dsmem_peer *peer = conn->peer;

	/* an insecure node has no paths, nor asks for them */
	if (conn->path || conn->passive || !dsmem_sockaddr_port(&peer->addr) ||
	    !peer->node->key[0])
		return;
	spin_lock_bh(&peer->lock);
	peer->paths_backoff_ms = DSMEM_BACKOFF_MIN_MS;
	if (!peer->deleted && peer->conn == conn)
		mod_delayed_work(dsmem_wq, &peer->paths_work, 0);
	spin_unlock_bh(&peer->lock);
}

static const struct dsmem_msg_op dsmem_path_ops[] = {
	{ DSMEM_WIRE_PATHS, DSMEM_WIRE_REPLY_PATHS, 0, dsmem_path_on_paths },
};

static struct dsmem_service dsmem_path_service = {
	.name		= "paths",
	.conn_up	= dsmem_path_conn_up,
	.ops		= dsmem_path_ops,
	.nops		= ARRAY_SIZE(dsmem_path_ops),
};

int dsmem_path_service_init(void)
{
	return dsmem_service_register(&dsmem_path_service);
}

void dsmem_path_service_exit(void)
{
	dsmem_service_unregister(&dsmem_path_service);
}
