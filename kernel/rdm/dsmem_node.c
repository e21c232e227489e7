// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: nodes.  A node is a dsmem endpoint: an id, an RDMA device and
 * an rdma_cm port it listens on.  Several nodes may share a device, so a
 * multi-node cluster fits in one host.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "dsmem_rdm.h"

/*
 * The node table's lock: never held with a node's lock, nor while waiting
 * for anything of a node (see the lock order in dsmem_rdm.h).
 */
DEFINE_MUTEX(dsmem_nodes_lock);
/*
 * Every node on the host, by node->index, under dsmem_nodes_lock: what a
 * device's removal, a port's change and module unload walk, whatever
 * namespace the nodes are in.
 */
static DEFINE_XARRAY_ALLOC(dsmem_nodes);

/*
 * A namespace's nodes by id, under dsmem_nodes_lock: ids are the
 * namespace's own, as its addresses are, so that two containers may each
 * run a node 1.  What names a node (netlink, an attach) looks here.
 */
struct dsmem_node_net {
	struct xarray ids;
};

static unsigned int dsmem_node_net_id;

static struct xarray *dsmem_node_ids(struct net *net)
{
	struct dsmem_node_net *nn = net_generic(net, dsmem_node_net_id);

	return &nn->ids;
}

/* nodes unlinked and being torn down (dying_link), dsmem_nodes_lock */
static LIST_HEAD(dsmem_nodes_dying);
/* set by module unload, under dsmem_nodes_lock: no new nodes */
static bool dsmem_rdm_closing;

static void dsmem_node_release(struct kref *ref)
{
	struct dsmem_node *node = container_of(ref, struct dsmem_node, ref);

	WARN_ON(!xa_empty(&node->peers) || !xa_empty(&node->segs));
	dsmem_services_node_fini(node);
	xa_destroy(&node->peers);
	xa_destroy(&node->segs);
	mutex_destroy(&node->lock);
	mem_cgroup_put(node->memcg);
	put_net(node->net);
	kfree(node);
}

void dsmem_node_put(struct dsmem_node *node)
{
	kref_put(&node->ref, dsmem_node_release);
}

/* dead in the table: still being made (dsmem_node_create) */
static bool dsmem_node_live(struct dsmem_node *node)
{
	lockdep_assert_held(&dsmem_nodes_lock);
	return !node->dead;
}

/* A counted reference to a live node, or NULL. */
struct dsmem_node *dsmem_node_get(u32 id, struct net *net)
{
	struct dsmem_node *node;

	mutex_lock(&dsmem_nodes_lock);
	node = xa_load(dsmem_node_ids(net), id);
	if (node && dsmem_node_live(node))
		kref_get(&node->ref);
	else
		node = NULL;
	mutex_unlock(&dsmem_nodes_lock);
	return node;
}

/*
 * The first live node of the namespace with an id in [*id, max], counted,
 * its id in *id; NULL when there is none.  Dumps walk the table with it
 * and take each node's lock in turn, with the table's dropped.
 */
struct dsmem_node *dsmem_node_next(unsigned long *id, unsigned long max,
				   struct net *net)
{
	struct dsmem_node *node;
	unsigned long i;

	mutex_lock(&dsmem_nodes_lock);
	xa_for_each_range(dsmem_node_ids(net), i, node, *id, max) {
		if (!dsmem_node_live(node))
			continue;
		kref_get(&node->ref);
		*id = i;
		break;
	}
	mutex_unlock(&dsmem_nodes_lock);
	return node;
}

/*
 * Whether the caller may use node, as its owner, a member of its group, or
 * one of the others, under node->lock (which guards the access bits).  It
 * is checked as opening a file of the node's owner, group and mode for
 * reading and writing is: everything a user does on a node -- a
 * descriptor's transfers, segments and grants, reading its peers -- both
 * reads and changes what the node holds.  CAP_NET_ADMIN over the node's
 * namespace overrides, as it does for everything of the node; @audit is
 * false for a listing, which asks about every node and refuses nobody.
 */
bool dsmem_node_may_use_locked(struct dsmem_node *node, bool audit)
{
	const struct cred *cred = current_cred();
	unsigned int mode;

	lockdep_assert_held(&node->lock);
	mode = node->access.mode;
	if (uid_eq(cred->fsuid, node->access.owner))
		mode >>= 6;
	else if (in_group_p(node->access.group))
		mode >>= 3;
	if ((mode & 06) == 06)
		return true;
	return audit ? ns_capable(node->net->user_ns, CAP_NET_ADMIN) :
		       ns_capable_noaudit(node->net->user_ns, CAP_NET_ADMIN);
}

/* The same, taking node->lock. */
bool dsmem_node_may_use(struct dsmem_node *node, bool audit)
{
	bool ok;

	mutex_lock(&node->lock);
	ok = dsmem_node_may_use_locked(node, audit);
	mutex_unlock(&node->lock);
	return ok;
}

/* 0 when the caller may attach a descriptor to node, else -EACCES. */
int dsmem_node_may_attach(struct dsmem_node *node)
{
	return dsmem_node_may_use(node, true) ? 0 : -EACCES;
}

/*
 * Lock a counted node to add to its tables: false, with the lock dropped,
 * once it is unlinked -- its teardown empties them after setting dead.
 */
bool dsmem_node_lock_live(struct dsmem_node *node)
{
	mutex_lock(&node->lock);
	if (!READ_ONCE(node->dead))
		return true;
	mutex_unlock(&node->lock);
	return false;
}

/*
 * Listen on the port for IPv4 and IPv6 alike.  On failure node->listen_id
 * may hold the id, for the caller to destroy without our locks: an
 * rdma_listen() that failed part way may have run the handler already,
 * and the handler takes node->lock.
 */
static int dsmem_node_listen(struct dsmem_node *node)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(node->port),
	};
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(node->net, dsmem_cm_handler, &node->cm_ctx,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	node->listen_id = id;
	ret = rdma_set_afonly(id, 0);
	if (ret)
		return ret;
	ret = rdma_bind_addr(id, (struct sockaddr *)&sin6);
	if (ret)
		return ret;
	return rdma_listen(id, DSMEM_NODE_PEERS_MAX);
}

/*
 * The slot of ibdev among the node's devices; -ENXIO if it is none, or
 * has gone.
 */
int dsmem_node_dev_slot(const struct dsmem_node *node,
			const struct ib_device *ibdev)
{
	unsigned int i;

	for (i = 0; i < node->ndevs; i++)
		if (node->devs[i].ibdev == ibdev)
			return READ_ONCE(node->devs[i].gone) ? -ENXIO : i;
	return -ENXIO;
}

/*
 * Its first device still there, under node->lock: a live node has one
 * (the last to go takes the node along).
 */
struct ib_device *dsmem_node_first_dev(const struct dsmem_node *node)
{
	unsigned int i;

	for (i = 0; i < node->ndevs - 1; i++)
		if (!node->devs[i].gone)
			break;
	return node->devs[i].ibdev;
}

static unsigned int dsmem_node_devs_live(const struct dsmem_node *node)
{
	unsigned int i, n = 0;

	for (i = 0; i < node->ndevs; i++)
		n += !node->devs[i].gone;
	return n;
}

/* Whether each of the node's devices is still the one it was made on. */
static bool dsmem_node_devs_gone(const struct dsmem_node *node,
				 const u32 *index)
{
	bool gone = false;
	unsigned int i;

	mutex_lock(&dsmem_devs_lock);
	for (i = 0; i < node->ndevs; i++)
		gone |= xa_load(&dsmem_devs, index[i]) != node->devs[i].sdev;
	mutex_unlock(&dsmem_devs_lock);
	return gone;
}

/*
 * @sdevs: ndevs distinct devices (1 to DSMEM_NODE_DEVS_MAX), looked up
 * under dsmem_nodes_lock, which the caller holds.
 * @numas: the NUMA node the admin says each is on, or DSMEM_NUMA_ASK.
 */
int dsmem_node_create(u32 id, struct dsmem_device **sdevs, const int *numas,
		      unsigned int ndevs, u16 port, const char *key, u8 accept,
		      const struct dsmem_node_access *access,
		      struct net *net, struct netlink_ext_ack *extack)
{
	struct xarray *ids = dsmem_node_ids(net);
	u32 index[DSMEM_NODE_DEVS_MAX];
	struct dsmem_node *node;
	unsigned long i;
	int ret;

	lockdep_assert_held(&dsmem_nodes_lock);

	if (dsmem_rdm_closing)
		return -ESHUTDOWN;
	if (xa_load(ids, id)) {
		NL_SET_ERR_MSG(extack, "a node with this id exists in this namespace");
		return -EEXIST;
	}
	xa_for_each(ids, i, node)
		if (node->port == port) {
			NL_SET_ERR_MSG(extack, "another node listens on this port");
			return -EADDRINUSE;
		}

	node = kzalloc(sizeof(*node), GFP_KERNEL);
	if (!node)
		return -ENOMEM;
	node->cm_ctx = DSMEM_CM_LISTENER;
	node->id = id;
	node->port = port;
	for (i = 0; i < ndevs; i++) {
		struct ib_device *ibdev = sdevs[i]->ibdev;

		node->devs[i].sdev = sdevs[i];
		node->devs[i].ibdev = ibdev;
		if (numas[i] != DSMEM_NUMA_ASK)
			node->devs[i].numa = numas[i];
		else if (ibdev->dev.parent)
			node->devs[i].numa = dev_to_node(ibdev->dev.parent);
		else
			node->devs[i].numa = NUMA_NO_NODE;
		index[i] = ibdev->index;
	}
	node->ndevs = ndevs;
	spin_lock_init(&node->dev_lock);
	init_waitqueue_head(&node->pds_wait);
	INIT_LIST_HEAD(&node->dying_link);
	init_completion(&node->torn_down);
	INIT_LIST_HEAD(&node->segs_mapped);
	if (key)
		strscpy(node->key, key, sizeof(node->key));
	node->accept = accept;
	node->access = *access;
	atomic_set(&node->unauth, 0);
	node->net = get_net(net);
	node->memcg = get_mem_cgroup_from_mm(current->mm);
	kref_init(&node->ref);
	mutex_init(&node->lock);
	xa_init_flags(&node->peers, XA_FLAGS_ALLOC1);
	xa_init_flags(&node->segs, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&node->files);
	spin_lock_init(&node->file_lock);

	/* until it is published, its listener turns requests away */
	node->dead = true;

	ret = dsmem_services_node_init(node);
	if (ret)
		goto err_put_node;
	/* the id and the port are taken; lookups do not see a dead node */
	ret = xa_insert(ids, id, node, GFP_KERNEL);
	if (ret)
		goto err_services_dead;
	ret = xa_alloc(&dsmem_nodes, &node->index, node, xa_limit_32b, GFP_KERNEL);
	if (ret)
		goto err_erase_id;
	/*
	 * rdma_cm runs the listener's handler under its handler lock;
	 * listening destroys the per device listeners when it fails, which
	 * takes their handler locks: listen, and unwind it, without the
	 * table's lock, as dsmem_node_teardown() does, and so that node
	 * changes elsewhere do not wait for it.  The device may go meanwhile
	 * (dsmem_rdm_dev_remove() leaves a dead node alone): it is looked up
	 * again afterwards.
	 */
	mutex_unlock(&dsmem_nodes_lock);
	ret = dsmem_node_listen(node);
	if (ret && node->listen_id)
		rdma_destroy_id(node->listen_id);
	mutex_lock(&dsmem_nodes_lock);
	if (ret) {
		NL_SET_ERR_MSG(extack, "cannot listen on this port");
		goto err_erase_node;
	}
	if (dsmem_node_devs_gone(node, index) || dsmem_rdm_closing) {
		NL_SET_ERR_MSG(extack, "the device went away");
		ret = -ENODEV;
		goto err_destroy_listener;
	}
	/* its listener's handler reads it under node->lock */
	WRITE_ONCE(node->dead, false);
	if (!node->key[0])
		pr_warn_ratelimited("node %u is insecure: any host that reaches port %u can connect as any node id\n",
				    id, port);
	dsmem_stat_inc(node->net, DSMEM_STAT_NODE_ADDED);
	dsmem_nl_notify_node(node, DSMEM_CMD_NODE_NEW);
	return 0;

err_destroy_listener:
	mutex_unlock(&dsmem_nodes_lock);
	rdma_destroy_id(node->listen_id);
	mutex_lock(&dsmem_nodes_lock);
err_erase_node:
	xa_erase(&dsmem_nodes, node->index);
err_erase_id:
	xa_erase(ids, id);
err_services_dead:
	dsmem_services_node_dead(node);
err_put_node:
	dsmem_node_put(node);
	return ret;
}

/*
 * Tear down a node that was unlinked, and marked dead, under
 * dsmem_nodes_lock: called without our locks, because destroying the
 * listener waits for its handler, and closing a connection waits for its
 * release.  It takes node->lock only after dead was set: nothing is added
 * to the node's tables once it has emptied them.
 */
/*
 * The first peer at *index or above, counted, or NULL.  The table only
 * shrinks now, as the node is unlinked; but a passive peer's release may
 * unlink and free a peer meanwhile, so each is taken under the table's lock.
 */
static struct dsmem_peer *dsmem_node_peer_from(struct dsmem_node *node,
					       unsigned long *index)
{
	struct dsmem_peer *peer;

	mutex_lock(&node->lock);
	peer = xa_find(&node->peers, index, ULONG_MAX, XA_PRESENT);
	if (peer)
		kref_get(&peer->ref);
	mutex_unlock(&node->lock);
	return peer;
}

/*
 * Take a live node out of the table, under dsmem_nodes_lock, for
 * dsmem_node_teardown(): dead to lookups, listed for devices going.
 */
static void dsmem_node_unlink(struct dsmem_node *node)
{
	lockdep_assert_held(&dsmem_nodes_lock);
	xa_erase(dsmem_node_ids(node->net), node->id);
	xa_erase(&dsmem_nodes, node->index);
	WRITE_ONCE(node->dead, true);
	list_add_tail(&node->dying_link, &dsmem_nodes_dying);
}

static void dsmem_node_teardown(struct dsmem_node *node)
{
	struct dsmem_peer *peer;
	struct dsmem_seg *seg;
	unsigned long i;

	rdma_destroy_id(node->listen_id);

	/*
	 * Close every connection first: their releases then run together,
	 * and deleting the peers one by one below waits for the slowest of
	 * them rather than for each in turn.
	 */
	for (i = 0; (peer = dsmem_node_peer_from(node, &i)); i++) {
		dsmem_peer_close(peer);
		dsmem_peer_put(peer);
	}
	for (i = 0; (peer = dsmem_node_peer_from(node, &i)); i++) {
		dsmem_peer_delete(peer);
		dsmem_peer_put(peer);
	}

	mutex_lock(&node->lock);
	xa_for_each(&node->segs, i, seg) {
		xa_erase(&node->segs, i);
		dsmem_seg_destroy(seg);
	}
	/*
	 * A delete under way took its segment out of the table and dropped
	 * the lock while its revokes drain; it unmaps once it has the lock
	 * again, which may be after the last device has gone.  Its mappings
	 * go now, with the devices they were made for.
	 */
	for (i = 0; i < node->ndevs; i++)
		dsmem_segs_dev_gone(node, i);
	mutex_unlock(&node->lock);

	dsmem_xfer_node_dead(node);
	dsmem_services_node_dead(node);
	dsmem_stat_inc(node->net, DSMEM_STAT_NODE_REMOVED);
	dsmem_nl_notify_node(node, DSMEM_CMD_NODE_DEL);

	mutex_lock(&dsmem_nodes_lock);
	list_del(&node->dying_link);
	mutex_unlock(&dsmem_nodes_lock);
	complete_all(&node->torn_down);
	dsmem_node_put(node);
}

int dsmem_node_destroy(u32 id, struct net *net, struct netlink_ext_ack *extack)
{
	struct dsmem_node *node;

	mutex_lock(&dsmem_nodes_lock);
	node = xa_load(dsmem_node_ids(net), id);
	if (!node || !dsmem_node_live(node)) {
		mutex_unlock(&dsmem_nodes_lock);
		NL_SET_ERR_MSG(extack, "no such node");
		return -ENOENT;
	}
	dsmem_node_unlink(node);
	mutex_unlock(&dsmem_nodes_lock);

	dsmem_node_teardown(node);
	return 0;
}

/*
 * One of a node's devices is going, and the node carries on with the
 * others: dsmem_rdm_dev_remove() marked the slot gone.  Everything of the
 * node on the device goes before the device does: its connections (their
 * QPs, PDs and the segments' grant MRs), then the segments' and the user
 * buffers' DMA mappings.  Nothing maps anew for the slot: a connection
 * takes its slot under dev_lock, segments map under node->lock and user
 * buffers under their file's lock, each after reading the slot's flag.
 */
static void dsmem_node_dev_lost(struct dsmem_node *node, unsigned int slot)
{
	struct ib_device *ibdev = node->devs[slot].ibdev;

	dsmem_conns_dev_gone(node, slot);

	mutex_lock(&node->lock);
	dsmem_segs_dev_gone(node, slot);
	mutex_unlock(&node->lock);
	dsmem_xfer_node_dev_gone(node, slot);

	pr_warn("node %u: device %s is gone; the node carries on with the others\n",
		node->id, dev_name(&ibdev->dev));
	dsmem_stat_inc(node->net, DSMEM_STAT_NODE_DEV_LOST);
	/*
	 * Unless it is going too: its other devices may be gone by now.  A
	 * teardown sets dead before it takes the lock, and its device waits
	 * for it.
	 */
	mutex_lock(&node->lock);
	if (!READ_ONCE(node->dead))
		dsmem_nl_notify_node(node, DSMEM_CMD_NODE_NEW);
	mutex_unlock(&node->lock);
}

/* The last device of node went: the node goes, unless it is going. */
static void dsmem_node_dev_last(struct dsmem_node *node)
{
	bool mine = false;

	mutex_lock(&dsmem_nodes_lock);
	/* found live: dead now only if someone else unlinked it */
	if (!node->dead) {
		dsmem_node_unlink(node);
		mine = true;
	}
	mutex_unlock(&dsmem_nodes_lock);
	if (mine)
		dsmem_node_teardown(node);
	else
		wait_for_completion(&node->torn_down);
}

/*
 * Nodes on ibdev being torn down by others (node-del, another device's
 * removal): the device stays until they are done with it.
 */
static void dsmem_nodes_dying_wait(struct ib_device *ibdev)
{
	struct dsmem_node *node, *found;

	do {
		found = NULL;
		mutex_lock(&dsmem_nodes_lock);
		list_for_each_entry(node, &dsmem_nodes_dying, dying_link) {
			/* a slot this removal marked gone is done with already */
			if (dsmem_node_dev_slot(node, ibdev) >= 0) {
				kref_get(&node->ref);
				found = node;
				break;
			}
		}
		mutex_unlock(&dsmem_nodes_lock);
		if (found) {
			/* off the list once done: not found again */
			wait_for_completion(&found->torn_down);
			dsmem_node_put(found);
		}
	} while (found);
}

/*
 * Every node on a departing device, whichever of its devices it is: one
 * with others carries on without it, one without goes.  Called before the
 * device goes.  The choice is made, and the slot marked, under the node's
 * lock: of two of its devices going at once, the second takes the node.
 */
void dsmem_rdm_dev_remove(struct dsmem_device *sdev)
{
	struct dsmem_node *node;
	unsigned long index = 0;
	bool last;
	int slot;

	for (;; index++) {
		mutex_lock(&dsmem_nodes_lock);
		/* one being made checks its devices when it is done */
		xa_for_each_start(&dsmem_nodes, index, node, index)
			if (dsmem_node_dev_slot(node, sdev->ibdev) >= 0 &&
			    !node->dead) {
				kref_get(&node->ref);
				break;
			}
		mutex_unlock(&dsmem_nodes_lock);
		if (!node)
			break;

		mutex_lock(&node->lock);
		slot = dsmem_node_dev_slot(node, sdev->ibdev);
		last = slot >= 0 && dsmem_node_devs_live(node) == 1;
		if (slot >= 0 && !last) {
			spin_lock(&node->dev_lock);
			WRITE_ONCE(node->devs[slot].gone, true);
			spin_unlock(&node->dev_lock);
		}
		mutex_unlock(&node->lock);

		if (last)
			dsmem_node_dev_last(node);
		else if (slot >= 0)
			dsmem_node_dev_lost(node, slot);
		dsmem_node_put(node);
	}
	dsmem_nodes_dying_wait(sdev->ibdev);
	dsmem_conns_reap_now(sdev->ibdev);
}

/*
 * A port of sdev went down or up: the connections of every node on it
 * learn (dsmem_conn_port_change).  The nodes are picked as device removal
 * picks them, under the table's lock: live (a node being made checks its
 * device when it is done) and on sdev, by pointer, since another device's
 * dsmem_device may be freed as soon as the lock is dropped.  Each is taken
 * counted, the lock dropped before it is worked on.
 */
void dsmem_rdm_port_change(struct dsmem_device *sdev)
{
	struct dsmem_node *node;
	unsigned long index = 0;

	for (;;) {
		mutex_lock(&dsmem_nodes_lock);
		xa_for_each_start(&dsmem_nodes, index, node, index)
			if (dsmem_node_dev_slot(node, sdev->ibdev) >= 0 && !node->dead) {
				kref_get(&node->ref);
				break;
			}
		mutex_unlock(&dsmem_nodes_lock);
		if (!node)
			break;
		dsmem_conn_port_change(node, sdev->ibdev);
		dsmem_node_put(node);
		index++;
	}
}

int dsmem_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	enum dsmem_cm_ctx *ctx = id->context;

	if (*ctx == DSMEM_CM_LISTENER) {
		struct dsmem_node *node =
			container_of(ctx, struct dsmem_node, cm_ctx);

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return dsmem_conn_listen_request(node, id, ev);
		/* a wildcard listener has no device to lose */
		return 0;
	}
	return dsmem_conn_cm_event(container_of(ctx, struct dsmem_conn,
						cm_ctx), ev);
}

static int __net_init dsmem_node_net_init(struct net *net)
{
	xa_init(dsmem_node_ids(net));
	return 0;
}

/*
 * A namespace goes only once its nodes have: each holds it, as its
 * rdma_cm ids do (an NFS server's RDMA listener holds its namespace the
 * same way), until it is deleted, its last device goes or the module is
 * unloaded -- docs/rdm.md, "Namespaces".
 */
static __net_exit void dsmem_node_net_exit(struct net *net)
{
	WARN_ON_ONCE(!xa_empty(dsmem_node_ids(net)));
	xa_destroy(dsmem_node_ids(net));
}

static struct pernet_operations dsmem_node_net_ops = {
	.init = dsmem_node_net_init,
	.exit = dsmem_node_net_exit,
	.id = &dsmem_node_net_id,
	.size = sizeof(struct dsmem_node_net),
};

int dsmem_rdm_init(void)
{
	int ret;

	ret = register_pernet_subsys(&dsmem_node_net_ops);
	if (ret)
		return ret;
	ret = dsmem_auth_init();
	if (ret)
		goto err_node_net_exit;
	ret = dsmem_seg_service_init();
	if (ret)
		goto err_auth_exit;
	ret = dsmem_path_service_init();
	if (ret)
		goto err_seg_service_exit;
	ret = dsmem_xfer_init();
	if (ret)
		goto err_path_service_exit;
	return 0;

err_path_service_exit:
	dsmem_path_service_exit();
err_seg_service_exit:
	dsmem_seg_service_exit();
err_auth_exit:
	dsmem_auth_exit();
err_node_net_exit:
	unregister_pernet_subsys(&dsmem_node_net_ops);
	return ret;
}

/* Module unload: every node goes, connections first; no new one comes. */
void dsmem_rdm_stop(void)
{
	struct dsmem_node *node;
	unsigned long i;

	for (;;) {
		i = 0;
		mutex_lock(&dsmem_nodes_lock);
		dsmem_rdm_closing = true;
		node = xa_find(&dsmem_nodes, &i, ULONG_MAX, XA_PRESENT);
		if (node && node->dead) {
			/* being made: it sees dsmem_rdm_closing and goes */
			mutex_unlock(&dsmem_nodes_lock);
			msleep(20);
			continue;
		}
		if (node)
			dsmem_node_unlink(node);
		mutex_unlock(&dsmem_nodes_lock);
		if (!node)
			break;
		dsmem_node_teardown(node);
	}
	/* peers' reconnect works were cancelled by their deletion */
	flush_workqueue(dsmem_wq);
	/* no release runs now, to queue a QP to reap after this */
	dsmem_conns_reap_now(NULL);
}

void dsmem_rdm_exit(void)
{
	dsmem_xfer_exit();
	dsmem_path_service_exit();
	dsmem_seg_service_exit();
	dsmem_auth_exit();
	unregister_pernet_subsys(&dsmem_node_net_ops);
	xa_destroy(&dsmem_nodes);
}
