// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: netlink commands of nodes, peers, segments and the remote-memory
 * service.  The policies and the ops table are in dsmem_netlink.c; the
 * policies have checked types and ranges before a handler runs, so the
 * handlers check presence and relations between attributes.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/ipv6.h>

#include "../dsmem_netlink.h"
#include "dsmem_rdm.h"

static int dsmem_nl_put_addr(struct sk_buff *skb, int type,
			     const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;

	if (ss->ss_family == AF_INET)
		return nla_put_in_addr(skb, type, s4->sin_addr.s_addr);
	if (ipv6_addr_v4mapped(&s6->sin6_addr))
		return nla_put_in_addr(skb, type, s6->sin6_addr.s6_addr32[3]);
	return nla_put_in6_addr(skb, type, &s6->sin6_addr);
}

static int dsmem_nl_fill_node_devs(struct sk_buff *skb,
				   const struct dsmem_node *node)
{
	struct nlattr *nest, *one;
	unsigned int i;

	nest = nla_nest_start(skb, DSMEM_ATTR_NODE_DEVS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < node->ndevs; i++) {
		struct ib_device *ibdev = node->devs[i].ibdev;

		if (node->devs[i].gone)
			continue;
		one = nla_nest_start(skb, DSMEM_ATTR_NODE_DEV);
		if (!one ||
		    nla_put_u32(skb, DSMEM_NODE_DEV_ATTR_INDEX, ibdev->index) ||
		    nla_put_string(skb, DSMEM_NODE_DEV_ATTR_NAME,
				   dev_name(&ibdev->dev)) ||
		    nla_put_s32(skb, DSMEM_NODE_DEV_ATTR_NUMA,
				node->devs[i].numa)) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
		nla_nest_end(skb, one);
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * A node as its users see it, or, for one who may not use it (@full
 * false), as anyone may: its id and who may use it, as stat(2) shows
 * anyone a file's owner and mode.
 */
static int dsmem_nl_fill_node(struct sk_buff *skb, struct dsmem_node *node,
			      u32 portid, u32 seq, int flags, u8 cmd,
			      bool full)
{
	struct dsmem_peer *peer;
	struct dsmem_seg *seg;
	u32 npeers = 0, nsegs = 0;
	unsigned long i;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, dsmem_nl_family_get(), flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, DSMEM_ATTR_NODE_ID, node->id))
		goto err_cancel;
	if (cmd == DSMEM_CMD_NODE_DEL)
		goto out;
	/* ids as the namespace's owner sees them, for every reader */
	if (nla_put_u32(skb, DSMEM_ATTR_NODE_OWNER,
			from_kuid_munged(node->net->user_ns,
					 node->access.owner)) ||
	    nla_put_u32(skb, DSMEM_ATTR_NODE_GROUP,
			from_kgid_munged(node->net->user_ns,
					 node->access.group)) ||
	    nla_put_u16(skb, DSMEM_ATTR_NODE_MODE, node->access.mode))
		goto err_cancel;
	if (full) {
		xa_for_each(&node->peers, i, peer)
			npeers++;
		xa_for_each(&node->segs, i, seg)
			nsegs++;
		/* the first device, for readers of one */
		if (nla_put_u32(skb, DSMEM_ATTR_DEV_INDEX,
				dsmem_node_first_dev(node)->index) ||
		    nla_put_string(skb, DSMEM_ATTR_DEV_NAME,
				   dev_name(&dsmem_node_first_dev(node)->dev)) ||
		    dsmem_nl_fill_node_devs(skb, node) ||
		    nla_put_u16(skb, DSMEM_ATTR_NODE_PORT, node->port) ||
		    nla_put_u32(skb, DSMEM_ATTR_NODE_PEER_COUNT, npeers) ||
		    nla_put_u32(skb, DSMEM_ATTR_NODE_SEG_COUNT, nsegs))
			goto err_cancel;
		if (node->key[0] ?
		    nla_put_string(skb, DSMEM_ATTR_NODE_KEY, node->key) :
		    nla_put_flag(skb, DSMEM_ATTR_NODE_INSECURE))
			goto err_cancel;
		if (nla_put_u8(skb, DSMEM_ATTR_NODE_ACCEPT, node->accept))
			goto err_cancel;
	}
out:
	genlmsg_end(skb, hdr);
	return 0;

err_cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

static int dsmem_nl_fill_rsegs(struct sk_buff *skb, struct dsmem_conn *conn)
{
	struct nlattr *nest, *one;
	struct dsmem_rseg *rs;
	unsigned long i;
	int ret = 0;

	nest = nla_nest_start(skb, DSMEM_ATTR_PEER_REMOTE_SEGS);
	if (!nest)
		return -EMSGSIZE;
	rcu_read_lock();
	xa_for_each(&conn->rsegs, i, rs) {
		one = nla_nest_start(skb, DSMEM_ATTR_REMOTE_SEG);
		if (!one ||
		    nla_put_u64_64bit(skb, DSMEM_RSEG_ATTR_ADDR, rs->base,
				      DSMEM_RSEG_ATTR_PAD) ||
		    nla_put_u64_64bit(skb, DSMEM_RSEG_ATTR_SIZE, rs->size,
				      DSMEM_RSEG_ATTR_PAD) ||
		    nla_put_u8(skb, DSMEM_RSEG_ATTR_PERM, rs->perm) ||
		    nla_put_u32(skb, DSMEM_RSEG_ATTR_KEYS, rs->nkeys)) {
			ret = -EMSGSIZE;
			break;
		}
		nla_nest_end(skb, one);
	}
	rcu_read_unlock();
	if (ret) {
		nla_nest_cancel(skb, nest);
		return ret;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int dsmem_nl_fill_peer(struct sk_buff *skb, struct dsmem_peer *peer,
			      u32 portid, u32 seq, int flags, u8 cmd)
{
	struct dsmem_conn *conn = NULL;
	u32 remote, connects, err, paths = 0;
	void *hdr;
	unsigned int i;
	u8 state;

	hdr = genlmsg_put(skb, portid, seq, dsmem_nl_family_get(), flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, DSMEM_ATTR_NODE_ID, peer->node->id) ||
	    nla_put_u32(skb, DSMEM_ATTR_PEER_ID, peer->id))
		goto err_cancel;
	if (cmd == DSMEM_CMD_PEER_DEL)
		goto out;

	spin_lock_bh(&peer->lock);
	state = peer->state;
	remote = peer->remote_node;
	connects = peer->connects;
	err = -peer->last_err;
	if (peer->conn && READ_ONCE(peer->conn->state) == DSMEM_CONN_UP) {
		conn = peer->conn;
		kref_get(&conn->ref);
		paths++;
	}
	for (i = 0; conn && i < DSMEM_PATHS_MAX; i++)
		if (peer->paths[i] &&
		    READ_ONCE(peer->paths[i]->state) == DSMEM_CONN_UP)
			paths++;
	spin_unlock_bh(&peer->lock);

	if (dsmem_nl_put_addr(skb, DSMEM_ATTR_PEER_ADDR, &peer->addr) ||
	    nla_put_u16(skb, DSMEM_ATTR_PEER_PORT,
			dsmem_sockaddr_port(&peer->addr)) ||
	    nla_put_u8(skb, DSMEM_ATTR_PEER_STATE, state) ||
	    nla_put_u8(skb, DSMEM_ATTR_PEER_PASSIVE, peer->passive) ||
	    (peer->listen && nla_put_flag(skb, DSMEM_ATTR_PEER_LISTEN)) ||
	    nla_put_u32(skb, DSMEM_ATTR_PEER_CONNECTS, connects) ||
	    nla_put_u32(skb, DSMEM_ATTR_PEER_ERRNO, err) ||
	    nla_put_u32(skb, DSMEM_ATTR_PEER_PATHS, paths) ||
	    (remote && nla_put_u32(skb, DSMEM_ATTR_PEER_REMOTE_NODE, remote)) ||
	    (conn && dsmem_nl_fill_rsegs(skb, conn)))
		goto err_put_conn;
	if (conn)
		dsmem_conn_put(conn);
out:
	genlmsg_end(skb, hdr);
	return 0;

err_put_conn:
	if (conn)
		dsmem_conn_put(conn);
err_cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

static int dsmem_nl_fill_seg(struct sk_buff *skb, struct dsmem_seg *seg,
			     u32 portid, u32 seq, int flags, u8 cmd)
{
	struct nlattr *grants, *g;
	unsigned long remote;
	void *hdr, *e;
	u64 used;

	hdr = genlmsg_put(skb, portid, seq, dsmem_nl_family_get(), flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, DSMEM_ATTR_NODE_ID, seg->node->id) ||
	    nla_put_u32(skb, DSMEM_ATTR_SEG_ID, seg->id))
		goto err_cancel;
	if (cmd == DSMEM_CMD_SEG_DEL)
		goto out;

	mutex_lock(&seg->lock);
	used = seg->used;
	mutex_unlock(&seg->lock);
	if (nla_put_u64_64bit(skb, DSMEM_ATTR_SEG_SIZE, seg->size,
			      DSMEM_ATTR_PAD) ||
	    nla_put_s32(skb, DSMEM_ATTR_SEG_NUMA, seg->numa) ||
	    nla_put_u8(skb, DSMEM_ATTR_SEG_TRANSLATE, seg->translate) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_SEG_ADDR, seg->base,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_SEG_USED, used, DSMEM_ATTR_PAD) ||
	    nla_put_u32(skb, DSMEM_ATTR_SEG_PAGE_SIZE,
			PAGE_SIZE << seg->chunk_order))
		goto err_cancel;
	grants = nla_nest_start(skb, DSMEM_ATTR_SEG_GRANTS);
	if (!grants)
		goto err_cancel;
	xa_for_each(&seg->grants, remote, e) {
		g = nla_nest_start(skb, DSMEM_ATTR_GRANT);
		if (!g ||
		    nla_put_u32(skb, DSMEM_GRANT_ATTR_REMOTE_NODE, remote) ||
		    nla_put_u8(skb, DSMEM_GRANT_ATTR_PERM, xa_to_value(e)))
			goto err_cancel;
		nla_nest_end(skb, g);
	}
	nla_nest_end(skb, grants);
out:
	genlmsg_end(skb, hdr);
	return 0;

err_cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* The three kinds of object this file describes, for shared plumbing. */
enum dsmem_nl_obj {
	DSMEM_NL_NODE,
	DSMEM_NL_PEER,
	DSMEM_NL_SEG,
};

static int dsmem_nl_fill_obj(struct sk_buff *skb, enum dsmem_nl_obj kind,
			     void *obj, u32 portid, u32 seq, int flags, u8 cmd)
{
	switch (kind) {
	case DSMEM_NL_NODE:
		return dsmem_nl_fill_node(skb, obj, portid, seq, flags, cmd,
					  true);
	case DSMEM_NL_PEER:
		return dsmem_nl_fill_peer(skb, obj, portid, seq, flags, cmd);
	default:
		return dsmem_nl_fill_seg(skb, obj, portid, seq, flags, cmd);
	}
}

/* Events go to the node's namespace, where its users are. */
static void dsmem_nl_notify(struct net *net, enum dsmem_nl_obj kind, void *obj,
			    u8 cmd)
{
	struct sk_buff *skb;

	if (!genl_has_listeners(dsmem_nl_family_get(), net, 0))
		return;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb || dsmem_nl_fill_obj(skb, kind, obj, 0, 0, 0, cmd)) {
		nlmsg_free(skb);
		dsmem_stat_inc(net, DSMEM_STAT_NL_EVENTS_DROPPED);
		return;
	}
	dsmem_nl_multicast(net, skb);
}

void dsmem_nl_notify_node(struct dsmem_node *node, u8 cmd)
{
	dsmem_nl_notify(node->net, DSMEM_NL_NODE, node, cmd);
}

void dsmem_nl_notify_peer(struct dsmem_peer *peer, u8 cmd)
{
	dsmem_nl_notify(peer->node->net, DSMEM_NL_PEER, peer, cmd);
}

void dsmem_nl_notify_seg(struct dsmem_seg *seg, u8 cmd)
{
	dsmem_nl_notify(seg->node->net, DSMEM_NL_SEG, seg, cmd);
}

/*
 * The node the request names, counted and, with @lock, locked while it is
 * live (dsmem_nl_node_unlock); with @use, only if the caller may use it
 * (dsmem_node_may_use), else -EACCES.  A request passes the generic
 * netlink's own CAP_NET_ADMIN check first where its operation is an
 * admin's, which also makes it a user of every node.
 */
static struct dsmem_node *dsmem_nl_node_in(struct genl_info *info,
					   struct net *net, bool lock,
					   bool use)
{
	struct nlattr *a = info->attrs[DSMEM_ATTR_NODE_ID];
	struct dsmem_node *node;
	bool ok = true;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_NODE_ID))
		return ERR_PTR(-EINVAL);
	node = dsmem_node_get(nla_get_u32(a), net);
	if (node && lock && !dsmem_node_lock_live(node)) {
		dsmem_node_put(node);
		node = NULL;
	}
	if (!node) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "no such node");
		return ERR_PTR(-ENOENT);
	}
	if (!use)
		return node;
	ok = lock ? dsmem_node_may_use_locked(node, true) :
		    dsmem_node_may_use(node, true);
	if (ok)
		return node;
	if (lock)
		mutex_unlock(&node->lock);
	dsmem_node_put(node);
	NL_SET_ERR_MSG_ATTR(info->extack, a, DSMEM_NODE_NOT_YOURS_MSG);
	return ERR_PTR(-EACCES);
}

/* A node the caller uses, in the caller's own namespace. */
static struct dsmem_node *dsmem_nl_node(struct genl_info *info, bool lock)
{
	return dsmem_nl_node_in(info, genl_info_net(info), lock, true);
}

static void dsmem_nl_node_unlock(struct dsmem_node *node)
{
	mutex_unlock(&node->lock);
	dsmem_node_put(node);
}

/*
 * The node, peer or segment the request names in net, found under its
 * node's lock, which is held, with the node counted in *nodep, on success.
 */
static void *dsmem_nl_lookup(struct genl_info *info, struct net *net,
			     enum dsmem_nl_obj kind, struct dsmem_node **nodep)
{
	int attr = kind == DSMEM_NL_PEER ? DSMEM_ATTR_PEER_ID : DSMEM_ATTR_SEG_ID;
	struct dsmem_node *node = dsmem_nl_node_in(info, net, true,
						   kind != DSMEM_NL_NODE);
	struct nlattr *a;
	void *obj;

	*nodep = node;
	if (IS_ERR(node) || kind == DSMEM_NL_NODE)
		return node;
	/* only now: a node command's attribute table may end before attr */
	if (GENL_REQ_ATTR_CHECK(info, attr)) {
		obj = ERR_PTR(-EINVAL);
		goto err_unlock_node;
	}
	a = info->attrs[attr];
	obj = xa_load(kind == DSMEM_NL_PEER ? &node->peers : &node->segs,
		      nla_get_u32(a));
	if (obj)
		return obj;
	if (kind == DSMEM_NL_PEER)
		NL_SET_ERR_MSG_ATTR(info->extack, a, "no such peer");
	else
		NL_SET_ERR_MSG_ATTR(info->extack, a, "no such segment");
	obj = ERR_PTR(-ENOENT);
err_unlock_node:
	dsmem_nl_node_unlock(node);
	return obj;
}

/* NODE_ACCEPT, checked against the node's key (insecure: "") */
static int dsmem_nl_accept(struct genl_info *info, const char *key, u8 *accept)
{
	struct nlattr *a = info->attrs[DSMEM_ATTR_NODE_ACCEPT];

	if (!a)
		return 0;
	*accept = nla_get_u8(a);
	if (*accept == DSMEM_ACCEPT_KEYED && !key[0]) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "an insecure node accepts only its peers: keyed acceptance needs a key");
		return -EINVAL;
	}
	return 0;
}

/* A NUMA node the admin says a device is on: online, or NUMA_NO_NODE. */
static int dsmem_nl_dev_numa(struct nlattr *attr, int *numa,
			     struct netlink_ext_ack *extack)
{
	int n = nla_get_s32(attr);

	if (n != NUMA_NO_NODE &&
	    (n < 0 || n >= MAX_NUMNODES || !node_online(n))) {
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "a device's NUMA node is an online node, or -1 for none");
		return -EINVAL;
	}
	*numa = n;
	return 0;
}

/*
 * The node's devices: dev-index or dev-name, or a node-devs list of
 * distinct ones, each with the NUMA node the admin says it is on
 * (DSMEM_NUMA_ASK: the device's own word).  Under dsmem_devs_lock;
 * returns how many, or an error.
 */
static int dsmem_nl_node_devs(struct genl_info *info,
			      struct dsmem_device **sdevs, int *numas)
{
	struct nlattr *devs = info->attrs[DSMEM_ATTR_NODE_DEVS];
	struct nlattr *tb[DSMEM_NODE_DEV_ATTR_MAX + 1];
	struct net *net = genl_info_net(info);
	struct nlattr *one;
	int n = 0, rem, ret, i;

	if (!devs) {
		numas[0] = DSMEM_NUMA_ASK;
		sdevs[0] = dsmem_nl_find_dev(info);
		return IS_ERR(sdevs[0]) ? PTR_ERR(sdevs[0]) : 1;
	}
	if (info->attrs[DSMEM_ATTR_DEV_INDEX] ||
	    info->attrs[DSMEM_ATTR_DEV_NAME]) {
		NL_SET_ERR_MSG_ATTR(info->extack, devs,
				    "name the devices in node-devs, or one with dev-index or dev-name, not both");
		return -EINVAL;
	}
	/* the policy refused other types inside */
	nla_for_each_nested(one, devs, rem)
		n++;
	if (n > DSMEM_NODE_DEVS_MAX) {
		NL_SET_ERR_MSG_ATTR(info->extack, devs,
				    "a node has at most DSMEM_NODE_DEVS_MAX (4) devices");
		return -EINVAL;
	}
	n = 0;
	nla_for_each_nested(one, devs, rem) {
		ret = nla_parse_nested(tb, DSMEM_NODE_DEV_ATTR_MAX, one,
				       dsmem_node_dev_nl_policy, info->extack);
		if (ret)
			return ret;
		numas[n] = DSMEM_NUMA_ASK;
		if (tb[DSMEM_NODE_DEV_ATTR_NUMA]) {
			ret = dsmem_nl_dev_numa(tb[DSMEM_NODE_DEV_ATTR_NUMA],
						&numas[n], info->extack);
			if (ret)
				return ret;
		}
		sdevs[n] = dsmem_nl_find_dev_by(net, tb[DSMEM_NODE_DEV_ATTR_INDEX],
						tb[DSMEM_NODE_DEV_ATTR_NAME],
						info->extack);
		if (IS_ERR(sdevs[n]))
			return PTR_ERR(sdevs[n]);
		for (i = 0; i < n; i++)
			if (sdevs[i] == sdevs[n]) {
				NL_SET_ERR_MSG_ATTR(info->extack, one,
						    "a device is named twice");
				return -EINVAL;
			}
		n++;
	}
	if (!n) {
		NL_SET_ERR_MSG_ATTR(info->extack, devs,
				    "node-devs names no device");
		return -EINVAL;
	}
	return n;
}

/*
 * The owner, group and mode the request gives, over what *acc holds: ids
 * read in the user namespace that owns net, as node-get reports them.
 */
static int dsmem_nl_node_access(struct genl_info *info, struct net *net,
				struct dsmem_node_access *acc)
{
	struct nlattr *owner = info->attrs[DSMEM_ATTR_NODE_OWNER];
	struct nlattr *group = info->attrs[DSMEM_ATTR_NODE_GROUP];
	struct nlattr *mode = info->attrs[DSMEM_ATTR_NODE_MODE];
	struct dsmem_node_access a = *acc;

	if (owner) {
		a.owner = make_kuid(net->user_ns, nla_get_u32(owner));
		if (!uid_valid(a.owner)) {
			NL_SET_ERR_MSG_ATTR(info->extack, owner,
					    "this uid has no mapping in the namespace's user namespace");
			return -EINVAL;
		}
	}
	if (group) {
		a.group = make_kgid(net->user_ns, nla_get_u32(group));
		if (!gid_valid(a.group)) {
			NL_SET_ERR_MSG_ATTR(info->extack, group,
					    "this gid has no mapping in the namespace's user namespace");
			return -EINVAL;
		}
	}
	if (mode)
		a.mode = nla_get_u16(mode);
	*acc = a;
	return 0;
}

int dsmem_nl_node_new(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_device *sdevs[DSMEM_NODE_DEVS_MAX];
	struct dsmem_node_access access;
	int numas[DSMEM_NODE_DEVS_MAX];
	u8 accept = DSMEM_ACCEPT_PEERS;
	const char *key = NULL;
	int ndevs, ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_NODE_ID) ||
	    GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_NODE_PORT))
		return -EINVAL;
	/* insecure is a choice to be made out loud, never a default */
	if (!info->attrs[DSMEM_ATTR_NODE_KEY] == !info->attrs[DSMEM_ATTR_NODE_INSECURE]) {
		NL_SET_ERR_MSG(info->extack,
			       "a node names the key its peers prove (node-key), or is insecure (node-insecure)");
		return -EINVAL;
	}
	if (info->attrs[DSMEM_ATTR_NODE_KEY]) {
		key = nla_data(info->attrs[DSMEM_ATTR_NODE_KEY]);
		/* checked now for a clear error; looked up at each handshake */
		if (!dsmem_key_exists(genl_info_net(info), key)) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    info->attrs[DSMEM_ATTR_NODE_KEY],
					    "no key of this name in this network namespace (dsctl key add)");
			return -ENOKEY;
		}
	}
	ret = dsmem_nl_accept(info, key ? key : "", &accept);
	if (ret)
		return ret;
	/* by default the creator's alone, as a file it makes with 0600 */
	access.owner = current_fsuid();
	access.group = current_fsgid();
	access.mode = 0600;
	ret = dsmem_nl_node_access(info, genl_info_net(info), &access);
	if (ret)
		return ret;

	mutex_lock(&dsmem_nodes_lock);
	mutex_lock(&dsmem_devs_lock);
	ndevs = dsmem_nl_node_devs(info, sdevs, numas);
	mutex_unlock(&dsmem_devs_lock);
	/* a device leaves dsmem_devs before its nodes are torn down, and
	 * the teardown takes dsmem_nodes_lock: sdevs stay valid while held
	 * (dsmem_node_create() looks again after it drops it to listen)
	 */
	if (ndevs < 0) {
		ret = ndevs;
		goto out;
	}
	ret = dsmem_node_create(nla_get_u32(info->attrs[DSMEM_ATTR_NODE_ID]),
				sdevs, numas, ndevs,
				nla_get_u16(info->attrs[DSMEM_ATTR_NODE_PORT]),
				key, accept, &access, genl_info_net(info),
				info->extack);
out:
	mutex_unlock(&dsmem_nodes_lock);
	return ret;
}

/*
 * Admission changes apply to the next connect, connections stay; owner
 * changes to the next attach, descriptors attached stay.  All or nothing.
 */
int dsmem_nl_node_set(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_node_access access;
	struct dsmem_node *node;
	u8 accept;
	int ret;

	if (!info->attrs[DSMEM_ATTR_NODE_ACCEPT] &&
	    !info->attrs[DSMEM_ATTR_NODE_OWNER] &&
	    !info->attrs[DSMEM_ATTR_NODE_GROUP] &&
	    !info->attrs[DSMEM_ATTR_NODE_MODE]) {
		NL_SET_ERR_MSG(info->extack,
			       "nothing to change: give node-accept, node-owner, node-group or node-mode");
		return -EINVAL;
	}
	node = dsmem_nl_node(info, true);
	if (IS_ERR(node))
		return PTR_ERR(node);
	accept = node->accept;
	ret = dsmem_nl_accept(info, node->key, &accept);
	access = node->access;
	if (!ret)
		ret = dsmem_nl_node_access(info, node->net, &access);
	if (ret)
		goto out_unlock;
	if (node->accept != accept) {
		node->accept = accept;
		pr_info("node %u: accepts %s\n", node->id,
			accept == DSMEM_ACCEPT_KEYED ?
			"any address that proves its key" : "its peers only");
	}
	node->access = access;
out_unlock:
	dsmem_nl_node_unlock(node);
	return ret;
}

int dsmem_nl_node_del(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_NODE_ID))
		return -EINVAL;
	net = dsmem_nl_target_net(NETLINK_CB(skb).sk,
				  info->attrs[DSMEM_ATTR_TARGET_NETNSID],
				  info->extack);
	if (IS_ERR(net))
		return PTR_ERR(net);
	ret = dsmem_node_destroy(nla_get_u32(info->attrs[DSMEM_ATTR_NODE_ID]),
				 net, info->extack);
	put_net(net);
	return ret;
}

/* A "do" request for one object: looked up and described under the lock. */
static int dsmem_nl_get_doit(struct genl_info *info, struct net *net,
			     enum dsmem_nl_obj kind)
{
	static const u8 cmds[] = {
		[DSMEM_NL_NODE] = DSMEM_CMD_NODE_GET,
		[DSMEM_NL_PEER] = DSMEM_CMD_PEER_GET,
		[DSMEM_NL_SEG] = DSMEM_CMD_SEG_GET,
	};
	struct dsmem_node *node;
	struct sk_buff *msg;
	void *obj;
	int ret;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	obj = dsmem_nl_lookup(info, net, kind, &node);
	if (IS_ERR(obj))
		return dsmem_nl_reply_send(info, msg, PTR_ERR(obj));
	if (kind == DSMEM_NL_NODE)
		ret = dsmem_nl_fill_node(msg, node, info->snd_portid,
					 info->snd_seq, 0, cmds[kind],
					 dsmem_node_may_use_locked(node, false));
	else
		ret = dsmem_nl_fill_obj(msg, kind, obj, info->snd_portid,
					info->snd_seq, 0, cmds[kind]);
	dsmem_nl_node_unlock(node);
	return dsmem_nl_reply_send(info, msg, ret);
}

int dsmem_nl_node_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net;
	int ret;

	net = dsmem_nl_target_net(NETLINK_CB(skb).sk,
				  info->attrs[DSMEM_ATTR_TARGET_NETNSID],
				  info->extack);
	if (IS_ERR(net))
		return PTR_ERR(net);
	ret = dsmem_nl_get_doit(info, net, DSMEM_NL_NODE);
	put_net(net);
	return ret;
}

/*
 * cb->args[0]: next node id; [1]: next peer or segment id; [2]: checked.
 * Each node is described under its own lock, taken in turn.
 */
int dsmem_nl_node_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	unsigned long id = cb->args[0];
	struct dsmem_node *node;
	struct net *net;
	int ret = 0;

	if (!cb->args[2]) {
		if (info->attrs[DSMEM_ATTR_NODE_ID]) {
			NL_SET_ERR_MSG_ATTR(cb->extack,
					    info->attrs[DSMEM_ATTR_NODE_ID],
					    "a node dump takes no node selector");
			return -EINVAL;
		}
		cb->args[2] = 1;
	}
	/* looked up, and checked, again for each part of the dump */
	net = dsmem_nl_target_net(skb->sk,
				  info->attrs[DSMEM_ATTR_TARGET_NETNSID],
				  cb->extack);
	if (IS_ERR(net))
		return PTR_ERR(net);
	for (; (node = dsmem_node_next(&id, DSMEM_NODE_ID_MAX, net)); id++) {
		/* one going away may have lost its device already */
		if (!dsmem_node_lock_live(node)) {
			dsmem_node_put(node);
			continue;
		}
		ret = dsmem_nl_fill_node(skb, node, NETLINK_CB(cb->skb).portid,
					 cb->nlh->nlmsg_seq, NLM_F_MULTI,
					 DSMEM_CMD_NODE_GET,
					 dsmem_node_may_use_locked(node, false));
		mutex_unlock(&node->lock);
		dsmem_node_put(node);
		if (ret)
			break;
	}
	put_net(net);
	cb->args[0] = id;
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

static int dsmem_nl_sockaddr(struct genl_info *info,
			     struct sockaddr_storage *ss, u16 port)
{
	struct nlattr *a = info->attrs[DSMEM_ATTR_PEER_ADDR];
	struct sockaddr_in6 *s6 = (void *)ss;
	struct sockaddr_in *s4 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	if (nla_len(a) == sizeof(struct in_addr)) {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = nla_get_in_addr(a);
		s4->sin_port = htons(port);
		return 0;
	}
	if (nla_len(a) == sizeof(struct in6_addr)) {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = nla_get_in6_addr(a);
		s6->sin6_port = htons(port);
		return 0;
	}
	NL_SET_ERR_MSG_ATTR(info->extack, a,
			    "an address is 4 (IPv4) or 16 (IPv6) bytes");
	return -EINVAL;
}

int dsmem_nl_peer_new(struct sk_buff *skb, struct genl_info *info)
{
	struct sockaddr_storage ss;
	struct dsmem_node *node;
	struct dsmem_peer *peer;
	struct sk_buff *msg;
	u32 expect = 0;
	bool listen;
	u16 port;
	int ret;

	listen = nla_get_flag(info->attrs[DSMEM_ATTR_PEER_LISTEN]);
	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_PEER_ADDR))
		return -EINVAL;
	/* one that connects to us is known by its id, and has no port */
	if (listen) {
		if (!info->attrs[DSMEM_ATTR_PEER_REMOTE_NODE]) {
			NL_SET_ERR_ATTR_MISS(info->extack, NULL,
					     DSMEM_ATTR_PEER_REMOTE_NODE);
			NL_SET_ERR_MSG(info->extack,
				       "a listen peer names the node it admits (peer-remote-node)");
			return -EINVAL;
		}
		if (info->attrs[DSMEM_ATTR_PEER_PORT]) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    info->attrs[DSMEM_ATTR_PEER_PORT],
					    "a listen peer is not dialled: it has no port");
			return -EINVAL;
		}
	} else if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_PEER_PORT)) {
		return -EINVAL;
	}
	if (info->attrs[DSMEM_ATTR_PEER_REMOTE_NODE])
		expect = nla_get_u32(info->attrs[DSMEM_ATTR_PEER_REMOTE_NODE]);
	port = listen ? 0 : nla_get_u16(info->attrs[DSMEM_ATTR_PEER_PORT]);
	ret = dsmem_nl_sockaddr(info, &ss, port);
	if (ret)
		return ret;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	node = dsmem_nl_node(info, true);
	if (IS_ERR(node)) {
		ret = PTR_ERR(node);
		goto err_free_msg;
	}
	peer = dsmem_peer_create(node, &ss, false);
	if (IS_ERR(peer)) {
		ret = PTR_ERR(peer);
		NL_SET_ERR_MSG(info->extack, "the node has all the peers it may have");
		goto err_unlock_node;
	}
	/* nobody sees it before the lock is dropped */
	peer->listen = listen;
	peer->expect_node = expect;
	peer->remote_node = expect;
	if (listen)
		peer->state = DSMEM_PEER_DOWN;
	kref_get(&peer->ref);
	dsmem_nl_node_unlock(node);

	dsmem_nl_notify_peer(peer, DSMEM_CMD_PEER_NEW);
	dsmem_peer_start(peer);
	ret = dsmem_nl_fill_peer(msg, peer, info->snd_portid, info->snd_seq, 0,
				 DSMEM_CMD_PEER_NEW);
	dsmem_peer_put(peer);
	return dsmem_nl_reply_send(info, msg, ret);

err_unlock_node:
	dsmem_nl_node_unlock(node);
err_free_msg:
	nlmsg_free(msg);
	return ret;
}

int dsmem_nl_peer_del(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_node *node;
	struct dsmem_peer *peer;

	peer = dsmem_nl_lookup(info, genl_info_net(info), DSMEM_NL_PEER,
			       &node);
	if (IS_ERR(peer))
		return PTR_ERR(peer);
	kref_get(&peer->ref);
	dsmem_nl_node_unlock(node);
	/* waits for the connection's release, which takes node->lock */
	dsmem_peer_delete(peer);
	dsmem_peer_put(peer);
	return 0;
}

int dsmem_nl_peer_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return dsmem_nl_get_doit(info, genl_info_net(info), DSMEM_NL_PEER);
}

/*
 * Peer and segment dumps: every node's, or one node's (NODE_ID is a
 * filter here); a PEER_ID or SEG_ID selector belongs to "do".
 */
static int dsmem_nl_dump_check(struct netlink_callback *cb, int selector)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);

	if (cb->args[2])
		return 0;
	if (info->attrs[selector]) {
		NL_SET_ERR_MSG_ATTR(cb->extack, info->attrs[selector],
				    "a dump takes a node filter, not an id");
		return -EINVAL;
	}
	if (info->attrs[DSMEM_ATTR_NODE_ID])
		cb->args[3] = nla_get_u32(info->attrs[DSMEM_ATTR_NODE_ID]);
	cb->args[2] = 1;
	return 0;
}

static int dsmem_nl_dump_objs(struct sk_buff *skb, struct netlink_callback *cb,
			      bool peers)
{
	struct net *net = sock_net(cb->skb->sk);
	unsigned long nid = cb->args[0], oid = cb->args[1];
	unsigned long filter = cb->args[3], want;
	struct dsmem_node *node;
	void *obj;
	int ret;

	ret = dsmem_nl_dump_check(cb, peers ? DSMEM_ATTR_PEER_ID :
					      DSMEM_ATTR_SEG_ID);
	if (ret)
		return ret;
	filter = cb->args[3];
	if (filter && nid < filter)
		nid = filter;

	/* each node's objects under its lock, the nodes in turn */
	for (;; nid++, oid = 0) {
		want = nid;
		node = dsmem_node_next(&nid, filter ? filter : DSMEM_NODE_ID_MAX,
				       net);
		if (!node)
			break;
		/* the node the last part stopped in is gone: start the next's */
		if (nid != want)
			oid = 0;
		if (!dsmem_node_lock_live(node)) {
			dsmem_node_put(node);
			continue;
		}
		/*
		 * Others' nodes are left out of a dump of all; one that
		 * names a node is refused as its "do" would be.
		 */
		if (!dsmem_node_may_use_locked(node, filter)) {
			dsmem_nl_node_unlock(node);
			if (!filter)
				continue;
			NL_SET_ERR_MSG(cb->extack, DSMEM_NODE_NOT_YOURS_MSG);
			ret = -EACCES;
			break;
		}
		xa_for_each_start(peers ? &node->peers : &node->segs, oid, obj,
				  oid) {
			ret = dsmem_nl_fill_obj(skb,
						peers ? DSMEM_NL_PEER : DSMEM_NL_SEG,
						obj, NETLINK_CB(cb->skb).portid,
						cb->nlh->nlmsg_seq, NLM_F_MULTI,
						peers ? DSMEM_CMD_PEER_GET :
							DSMEM_CMD_SEG_GET);
			if (ret)
				break;
		}
		mutex_unlock(&node->lock);
		dsmem_node_put(node);
		if (ret)
			break;
	}
	cb->args[0] = nid;
	cb->args[1] = oid;
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

int dsmem_nl_peer_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dsmem_nl_dump_objs(skb, cb, true);
}

int dsmem_nl_seg_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dsmem_nl_dump_objs(skb, cb, false);
}

int dsmem_nl_seg_new(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *numa = info->attrs[DSMEM_ATTR_SEG_NUMA];
	struct nlattr *tr = info->attrs[DSMEM_ATTR_SEG_TRANSLATE];
	struct dsmem_node *node;
	struct dsmem_seg *seg;
	struct sk_buff *msg;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_SEG_SIZE))
		return -EINVAL;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	/* counted, not locked: the segment's memory is allocated first */
	node = dsmem_nl_node(info, false);
	if (IS_ERR(node))
		return dsmem_nl_reply_send(info, msg, PTR_ERR(node));
	ret = dsmem_seg_create(node,
			       nla_get_u64(info->attrs[DSMEM_ATTR_SEG_SIZE]),
			       numa ? nla_get_s32(numa) : NUMA_NO_NODE,
			       tr ? nla_get_u8(tr) : DSMEM_TRANSLATE_SEGMENT,
			       &seg, info->extack);
	if (ret) {
		dsmem_node_put(node);
		return dsmem_nl_reply_send(info, msg, ret);
	}
	/* made with node->lock taken, which is held until it is said */
	dsmem_nl_notify_seg(seg, DSMEM_CMD_SEG_NEW);
	ret = dsmem_nl_fill_seg(msg, seg, info->snd_portid, info->snd_seq, 0,
				DSMEM_CMD_SEG_NEW);
	dsmem_nl_node_unlock(node);
	return dsmem_nl_reply_send(info, msg, ret);
}

int dsmem_nl_seg_del(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_node *node;
	struct dsmem_seg *seg;

	seg = dsmem_nl_lookup(info, genl_info_net(info), DSMEM_NL_SEG,
			      &node);
	if (IS_ERR(seg))
		return PTR_ERR(seg);
	xa_erase(&node->segs, seg->id);
	dsmem_seg_destroy(seg);
	dsmem_nl_node_unlock(node);
	return 0;
}

int dsmem_nl_seg_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return dsmem_nl_get_doit(info, genl_info_net(info), DSMEM_NL_SEG);
}

int dsmem_nl_seg_grant(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *perm = info->attrs[DSMEM_ATTR_SEG_PERM];
	struct dsmem_node *node;
	struct dsmem_seg *seg;
	u32 remote;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_PEER_REMOTE_NODE))
		return -EINVAL;
	seg = dsmem_nl_lookup(info, genl_info_net(info), DSMEM_NL_SEG,
			      &node);
	if (IS_ERR(seg))
		return PTR_ERR(seg);
	remote = nla_get_u32(info->attrs[DSMEM_ATTR_PEER_REMOTE_NODE]);
	ret = dsmem_seg_grant(seg, remote,
			      perm ? nla_get_u8(perm) : DSMEM_PERM_ALL);
	if (ret)
		NL_SET_ERR_MSG(info->extack,
			       "granted, but a connected peer did not take the grant");
	dsmem_nl_node_unlock(node);
	return ret;
}

int dsmem_nl_seg_revoke(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_node *node;
	struct dsmem_seg *seg;
	u32 remote;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_PEER_REMOTE_NODE))
		return -EINVAL;
	seg = dsmem_nl_lookup(info, genl_info_net(info), DSMEM_NL_SEG,
			      &node);
	if (IS_ERR(seg))
		return PTR_ERR(seg);
	remote = nla_get_u32(info->attrs[DSMEM_ATTR_PEER_REMOTE_NODE]);
	ret = dsmem_seg_revoke(seg, remote);
	if (ret)
		NL_SET_ERR_MSG(info->extack, "the node has no grant on this segment");
	dsmem_nl_node_unlock(node);
	return ret;
}

/* The remote-memory service, by message: the sender's connection. */
static struct dsmem_conn *dsmem_nl_conn(struct genl_info *info, u32 remote)
{
	struct dsmem_node *node;
	struct dsmem_conn *conn;

	/* the peers are looked up in RCU: no lock */
	node = dsmem_nl_node(info, false);
	if (IS_ERR(node))
		return ERR_CAST(node);
	conn = dsmem_conn_lookup(node, remote);
	dsmem_node_put(node);
	if (!conn) {
		NL_SET_ERR_MSG(info->extack, "no peer is up to that node");
		return ERR_PTR(-ENOTCONN);
	}
	return conn;
}

/* Fills a reply from dsmem_nl_reply_new(): 0, or -EMSGSIZE */
static int dsmem_nl_rdm_fill(struct sk_buff *msg, void *hdr, u8 cmd,
			     const struct dsmem_wire_msg *r, const void *data)
{
	if (nla_put_u64_64bit(msg, DSMEM_ATTR_RDM_ADDR, r->addr,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(msg, DSMEM_ATTR_RDM_LEN, r->len, DSMEM_ATTR_PAD) ||
	    (cmd == DSMEM_CMD_RDM_ALLOC &&
	     nla_put_u64_64bit(msg, DSMEM_ATTR_RDM_PA, r->aux,
			       DSMEM_ATTR_PAD)) ||
	    (data && nla_put(msg, DSMEM_ATTR_RDM_DATA, r->len, data)))
		return -EMSGSIZE;
	genlmsg_end(msg, hdr);
	return 0;
}

static int dsmem_nl_rdm_reply(struct genl_info *info, u8 cmd,
			      const struct dsmem_wire_msg *r, const void *data)
{
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = dsmem_nl_reply_new(info, cmd, &hdr);
	if (!msg)
		return -ENOMEM;
	ret = dsmem_nl_rdm_fill(msg, hdr, cmd, r, data);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

static void dsmem_nl_rdm_err(struct genl_info *info, int ret)
{
	switch (ret) {
	case -EACCES:
		NL_SET_ERR_MSG(info->extack, "the remote node did not grant that");
		break;
	case -ERANGE:
	case -EFAULT:
		NL_SET_ERR_MSG(info->extack,
			       "the address is outside the remote segment or not mapped");
		break;
	case -ETIMEDOUT:
		NL_SET_ERR_MSG(info->extack, "the remote node did not answer");
		break;
	case -ENOMEM:
		NL_SET_ERR_MSG(info->extack, "the remote node has no room");
		break;
	default:
		break;
	}
}

/*
 * The reply is made before the remote allocation, and an allocation whose
 * address cannot reach the caller is given back: a failed request leaves
 * nothing allocated.
 */
int dsmem_nl_rdm_alloc(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *segid = info->attrs[DSMEM_ATTR_SEG_ID];
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_ALLOC }, reply;
	struct dsmem_wire_msg undo = { .opcode = DSMEM_WIRE_FREE };
	struct dsmem_conn *conn;
	struct sk_buff *msg;
	u32 remote;
	void *hdr;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_PEER_REMOTE_NODE) ||
	    GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_RDM_LEN))
		return -EINVAL;
	req.len = nla_get_u64(info->attrs[DSMEM_ATTR_RDM_LEN]);
	req.aux = segid ? nla_get_u32(segid) : 0;
	remote = nla_get_u32(info->attrs[DSMEM_ATTR_PEER_REMOTE_NODE]);
	msg = dsmem_nl_reply_new(info, DSMEM_CMD_RDM_ALLOC, &hdr);
	if (!msg)
		return -ENOMEM;
	conn = dsmem_nl_conn(info, remote);
	if (IS_ERR(conn)) {
		ret = PTR_ERR(conn);
		goto err_free_msg;
	}
	ret = dsmem_msg_call(conn, &req, &reply, NULL, 0);
	if (ret) {
		dsmem_nl_rdm_err(info, ret);
		goto err_put_conn;
	}
	ret = dsmem_nl_rdm_fill(msg, hdr, DSMEM_CMD_RDM_ALLOC, &reply, NULL);
	if (ret)
		goto err_free_remote;
	/* consumes msg, also when it fails */
	ret = genlmsg_reply(msg, info);
	msg = NULL;
	if (ret)
		goto err_free_remote;
	dsmem_conn_put(conn);
	return 0;

err_free_remote:
	undo.addr = reply.addr;
	dsmem_msg_call(conn, &undo, &reply, NULL, 0);
err_put_conn:
	dsmem_conn_put(conn);
err_free_msg:
	nlmsg_free(msg);
	return ret;
}

int dsmem_nl_rdm_free(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_FREE }, reply;
	struct dsmem_conn *conn;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_RDM_ADDR))
		return -EINVAL;
	req.addr = nla_get_u64(info->attrs[DSMEM_ATTR_RDM_ADDR]);
	conn = dsmem_nl_conn(info, DSMEM_GADDR_NODE(req.addr));
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	ret = dsmem_msg_call(conn, &req, &reply, NULL, 0);
	dsmem_conn_put(conn);
	if (ret == -EINVAL)
		NL_SET_ERR_MSG(info->extack, "no allocation starts at that address");
	else
		dsmem_nl_rdm_err(info, ret);
	return ret;
}

int dsmem_nl_rdm_read(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_READ }, reply;
	struct dsmem_conn *conn;
	void *buf;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_RDM_ADDR) ||
	    GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_RDM_LEN))
		return -EINVAL;
	req.addr = nla_get_u64(info->attrs[DSMEM_ATTR_RDM_ADDR]);
	req.len = nla_get_u64(info->attrs[DSMEM_ATTR_RDM_LEN]);
	if (req.len > DSMEM_WIRE_MAX_DATA) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DSMEM_ATTR_RDM_LEN],
				    "a message moves at most 4096 bytes");
		return -EMSGSIZE;
	}
	buf = kmalloc(req.len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	conn = dsmem_nl_conn(info, DSMEM_GADDR_NODE(req.addr));
	if (IS_ERR(conn)) {
		ret = PTR_ERR(conn);
		goto out;
	}
	/* a reply that is not the range asked for is -EPROTO there */
	ret = dsmem_msg_call(conn, &req, &reply, buf, req.len);
	dsmem_conn_put(conn);
	if (ret) {
		dsmem_nl_rdm_err(info, ret);
		goto out;
	}
	ret = dsmem_nl_rdm_reply(info, DSMEM_CMD_RDM_READ, &reply, buf);
out:
	kfree(buf);
	return ret;
}

int dsmem_nl_rdm_write(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_wire_msg req = {
		.opcode = DSMEM_WIRE_WRITE,
		.flags = DSMEM_WIRE_F_ACK,	/* the caller wants to know */
	}, reply;
	struct dsmem_conn *conn;
	struct nlattr *data;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_RDM_ADDR) ||
	    GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_RDM_DATA))
		return -EINVAL;
	data = info->attrs[DSMEM_ATTR_RDM_DATA];
	if (!nla_len(data)) {
		NL_SET_ERR_MSG_ATTR(info->extack, data, "no data to write");
		return -EINVAL;
	}
	req.addr = nla_get_u64(info->attrs[DSMEM_ATTR_RDM_ADDR]);
	req.len = nla_len(data);
	req.data = nla_data(data);
	conn = dsmem_nl_conn(info, DSMEM_GADDR_NODE(req.addr));
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	ret = dsmem_msg_call(conn, &req, &reply, NULL, 0);
	dsmem_conn_put(conn);
	dsmem_nl_rdm_err(info, ret);
	return ret;
}
