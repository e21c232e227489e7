// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the generic netlink family "dsmem".
 *
 * Documentation/netlink/specs/dsmem.yaml describes every command and
 * attribute; scripts/nlgen.py generates the policies, the op table and the
 * family from it (dsmem_nl_gen.c).  Here are the family's own handlers and
 * the helpers every handler uses.
 */
#include <linux/module.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>

#include "dsmem_priv.h"
#include "dsmem_netlink.h"
#include "dsmem_wire.h"

/* the policy's limit is the one a wire message carries */
static_assert(DSMEM_RDM_DATA_MAX == DSMEM_WIRE_MAX_DATA);

static int dsmem_nl_fill_port(struct sk_buff *skb, struct ib_device *ibdev,
			      u32 port)
{
	const struct ib_gid_attr *gid_attr;
	struct ib_port_attr attr;
	struct nlattr *nest;
	int mtu, ret;

	ret = ib_query_port(ibdev, port, &attr);
	if (ret)
		return ret;

	nest = nla_nest_start(skb, DSMEM_ATTR_PORT);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, DSMEM_PORT_ATTR_INDEX, port) ||
	    nla_put_u8(skb, DSMEM_PORT_ATTR_STATE, attr.state) ||
	    nla_put_u8(skb, DSMEM_PORT_ATTR_LINK_LAYER,
		       rdma_port_get_link_layer(ibdev, port)))
		goto err_cancel_nest;
	/* a port that is not up may have no valid MTU: then say nothing */
	mtu = ib_mtu_enum_to_int(attr.active_mtu);
	if (mtu > 0 && nla_put_u32(skb, DSMEM_PORT_ATTR_ACTIVE_MTU, mtu))
		goto err_cancel_nest;

	/* RoCE and iWARP ports name their netdev through GID 0 */
	gid_attr = rdma_get_gid_attr(ibdev, port, 0);
	if (!IS_ERR(gid_attr)) {
		struct net_device *ndev;
		int put = 0;

		rcu_read_lock();
		ndev = rdma_read_gid_attr_ndev_rcu(gid_attr);
		if (!IS_ERR(ndev))
			put = nla_put_string(skb, DSMEM_PORT_ATTR_NETDEV,
					     ndev->name);
		rcu_read_unlock();
		rdma_put_gid_attr(gid_attr);
		if (put)
			goto err_cancel_nest;
	}

	nla_nest_end(skb, nest);
	return 0;

err_cancel_nest:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

/* Caller holds dsmem_devs_lock. */
static int dsmem_nl_fill_dev(struct sk_buff *skb, struct dsmem_device *sdev,
			     u32 portid, u32 seq, int flags, u8 cmd)
{
	struct ib_device *ibdev = sdev->ibdev;
	const struct ib_device_attr *da = &ibdev->attrs;
	char fw[IB_FW_VERSION_NAME_MAX];
	struct nlattr *ports;
	void *hdr;
	u32 port;
	int ret = -EMSGSIZE;

	lockdep_assert_held(&dsmem_devs_lock);

	hdr = genlmsg_put(skb, portid, seq, &dsmem_nl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;

	if (nla_put_u32(skb, DSMEM_ATTR_DEV_INDEX, ibdev->index) ||
	    nla_put_string(skb, DSMEM_ATTR_DEV_NAME, sdev->name))
		goto err_cancel_msg;
	/* a departing device is named, not described */
	if (cmd == DSMEM_CMD_DEV_DEL)
		goto out;

	ib_get_device_fw_str(ibdev, fw);
	if (nla_put_u64_64bit(skb, DSMEM_ATTR_DEV_NODE_GUID,
			      be64_to_cpu(ibdev->node_guid), DSMEM_ATTR_PAD) ||
	    nla_put_u8(skb, DSMEM_ATTR_DEV_NODE_TYPE, ibdev->node_type) ||
	    nla_put_string(skb, DSMEM_ATTR_DEV_FW_VERSION, fw) ||
	    nla_put_u32(skb, DSMEM_ATTR_DEV_PORT_COUNT, rdma_end_port(ibdev)) ||
	    nla_put_u32(skb, DSMEM_ATTR_DEV_MAX_QP, da->max_qp) ||
	    nla_put_u32(skb, DSMEM_ATTR_DEV_MAX_CQE, da->max_cqe) ||
	    nla_put_u32(skb, DSMEM_ATTR_DEV_MAX_MR, da->max_mr) ||
	    nla_put_u32(skb, DSMEM_ATTR_DEV_MAX_QP_WR, da->max_qp_wr) ||
	    nla_put_u8(skb, DSMEM_ATTR_DEV_ATOMIC_CAP, da->atomic_cap))
		goto err_cancel_msg;

	ports = nla_nest_start(skb, DSMEM_ATTR_DEV_PORTS);
	if (!ports)
		goto err_cancel_msg;
	rdma_for_each_port(ibdev, port) {
		if (port > DSMEM_DEV_PORTS_MAX)
			break;
		ret = dsmem_nl_fill_port(skb, ibdev, port);
		if (ret)
			goto err_cancel_msg;
	}
	nla_nest_end(skb, ports);
out:
	genlmsg_end(skb, hdr);
	return 0;

err_cancel_msg:
	genlmsg_cancel(skb, hdr);
	return ret;
}

/*
 * Announce a device event to every network namespace that may use the
 * device (all of them in the RDMA core's shared mode, its own in exclusive
 * mode) and has listeners.  Called with dsmem_devs_lock held.  The message
 * is built before net_rwsem is taken: filling it queries the ports, and
 * drivers take locks there that nest outside net_rwsem (rxe: usdev_lock ->
 * rtnl_mutex -> net_rwsem).  net_rwsem rather than RCU, because the
 * copies are sent with GFP_KERNEL.
 */
void dsmem_nl_notify_dev(struct dsmem_device *sdev, u8 cmd)
{
	struct sk_buff *skb, *copy;
	struct net *net;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		goto err_count;
	if (dsmem_nl_fill_dev(skb, sdev, 0, 0, 0, cmd))
		goto err_free_skb;

	down_read(&net_rwsem);
	for_each_net(net) {
		if (!rdma_dev_access_netns(sdev->ibdev, net) ||
		    !genl_has_listeners(&dsmem_nl_family, net,
					DSMEM_NL_MCGRP_EVENTS))
			continue;
		copy = skb_clone(skb, GFP_KERNEL);
		if (copy)
			dsmem_nl_multicast(net, copy);
		else
			dsmem_stat_inc(net, DSMEM_STAT_NL_EVENTS_DROPPED);
	}
	up_read(&net_rwsem);
	nlmsg_free(skb);
	return;

err_free_skb:
	nlmsg_free(skb);
err_count:
	dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_NL_EVENTS_DROPPED);
}

struct genl_family *dsmem_nl_family_get(void)
{
	return &dsmem_nl_family;
}

/* An event for one namespace; consumes skb. */
void dsmem_nl_multicast(struct net *net, struct sk_buff *skb)
{
	int ret = genlmsg_multicast_netns(&dsmem_nl_family, net, skb, 0,
					  DSMEM_NL_MCGRP_EVENTS, GFP_KERNEL);

	/* -ESRCH only says that the last listener just left */
	dsmem_stat_inc(net, ret && ret != -ESRCH ?
		       DSMEM_STAT_NL_EVENTS_DROPPED : DSMEM_STAT_NL_EVENTS);
}

/* A reply to a do request, with its header; NULL when out of memory. */
struct sk_buff *dsmem_nl_reply_new(struct genl_info *info, u8 cmd,
				   void **hdr)
{
	struct sk_buff *msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);

	if (!msg)
		return NULL;
	*hdr = genlmsg_put_reply(msg, info, &dsmem_nl_family, 0, cmd);
	if (!*hdr) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* Sends a reply its filler built, or frees it when the filler failed. */
int dsmem_nl_reply_send(struct genl_info *info, struct sk_buff *msg, int ret)
{
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/*
 * The namespace a request is about, counted (put_net() when done): the
 * requesting socket's own, or, with @netnsid, the one that namespace
 * knows by that id -- for a caller with CAP_NET_ADMIN over it, as
 * rtnetlink's IFLA_TARGET_NETNSID asks.  @sk is the requester's own
 * socket: NETLINK_CB(skb).sk in a do, the reply's skb->sk in a dump (not
 * cb->skb->sk, the family's kernel socket, which has no file to check).
 */
struct net *dsmem_nl_target_net(struct sock *sk, struct nlattr *netnsid,
				struct netlink_ext_ack *extack)
{
	struct net *net;

	if (!netnsid)
		return get_net(sock_net(sk));
	/* NULL for a namespace on its way out too */
	net = get_net_ns_by_id(sock_net(sk), nla_get_s32(netnsid));
	if (!net) {
		NL_SET_ERR_MSG_ATTR(extack, netnsid,
				    "no network namespace has this id here");
		return ERR_PTR(-ENOENT);
	}
	if (!sk_ns_capable(sk, net->user_ns, CAP_NET_ADMIN)) {
		put_net(net);
		NL_SET_ERR_MSG_ATTR(extack, netnsid,
				    "needs CAP_NET_ADMIN over the target namespace");
		return ERR_PTR(-EPERM);
	}
	return net;
}

int dsmem_nl_version_get(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;

	msg = dsmem_nl_reply_new(info, DSMEM_CMD_VERSION_GET, &hdr);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, DSMEM_ATTR_MODULE_VERSION, DSMEM_MODULE_VERSION) ||
	    nla_put_u32(msg, DSMEM_ATTR_ABI_VERSION, DSMEM_ABI_VERSION) ||
	    nla_put_u32(msg, DSMEM_ATTR_FAMILY_VERSION, DSMEM_GENL_VERSION) ||
	    nla_put_u64_64bit(msg, DSMEM_ATTR_FEATURES, dsmem_features(),
			      DSMEM_ATTR_PAD))
		goto err_free_msg;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free_msg:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* Look up by index or by name; exactly one of the two. */
struct dsmem_device *dsmem_nl_find_dev_by(struct net *net, struct nlattr *idx,
					  struct nlattr *name,
					  struct netlink_ext_ack *extack)
{
	struct dsmem_device *sdev;
	unsigned long i;

	lockdep_assert_held(&dsmem_devs_lock);

	if (!idx == !name) {
		NL_SET_ERR_MSG(extack,
			       "give exactly one of device index and device name");
		return ERR_PTR(-EINVAL);
	}
	if (idx) {
		sdev = xa_load(&dsmem_devs, nla_get_u32(idx));
		if (sdev && rdma_dev_access_netns(sdev->ibdev, net))
			return sdev;
		NL_SET_ERR_MSG_ATTR(extack, idx, "no such RDMA device");
		return ERR_PTR(-ENODEV);
	}
	xa_for_each(&dsmem_devs, i, sdev)
		if (!nla_strcmp(name, sdev->name) &&
		    rdma_dev_access_netns(sdev->ibdev, net))
			return sdev;
	NL_SET_ERR_MSG_ATTR(extack, name, "no such RDMA device");
	return ERR_PTR(-ENODEV);
}

struct dsmem_device *dsmem_nl_find_dev(struct genl_info *info)
{
	return dsmem_nl_find_dev_by(genl_info_net(info),
				    info->attrs[DSMEM_ATTR_DEV_INDEX],
				    info->attrs[DSMEM_ATTR_DEV_NAME],
				    info->extack);
}

int dsmem_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_device *sdev;
	struct sk_buff *msg;
	int ret;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&dsmem_devs_lock);
	sdev = dsmem_nl_find_dev(info);
	ret = IS_ERR(sdev) ? PTR_ERR(sdev) :
	      dsmem_nl_fill_dev(msg, sdev, info->snd_portid, info->snd_seq, 0,
				DSMEM_CMD_DEV_GET);
	mutex_unlock(&dsmem_devs_lock);
	return dsmem_nl_reply_send(info, msg, ret);
}

/*
 * A dump lists every device; selectors belong to the do request.  Checked
 * in the first dumpit call rather than in .start: in 6.1 only dumpit has
 * cb->extack, and the error then reaches userspace in NLMSG_DONE with
 * its message.
 */
static int dsmem_nl_dev_get_dump_check(struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	struct nlattr *sel = info->attrs[DSMEM_ATTR_DEV_INDEX];

	if (!sel)
		sel = info->attrs[DSMEM_ATTR_DEV_NAME];
	if (sel) {
		NL_SET_ERR_MSG_ATTR(cb->extack, sel,
				    "a device dump takes no device selector");
		return -EINVAL;
	}
	return 0;
}

/*
 * cb->args[0] is the first device index not yet dumped, so a dump that
 * spans several messages survives devices coming and going in between;
 * cb->args[1] says the request was checked.
 */
int dsmem_nl_dev_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct net *net = sock_net(cb->skb->sk);
	unsigned long next = cb->args[0];
	struct dsmem_device *sdev;
	unsigned long index;
	int ret = 0;

	if (!cb->args[1]) {	/* first call of this dump */
		ret = dsmem_nl_dev_get_dump_check(cb);
		if (ret)
			return ret;
		cb->args[1] = 1;
	}

	mutex_lock(&dsmem_devs_lock);
	xa_for_each_start(&dsmem_devs, index, sdev, next) {
		/* a device this namespace may not use does not exist for it */
		if (!rdma_dev_access_netns(sdev->ibdev, net)) {
			next = index + 1;
			continue;
		}
		ret = dsmem_nl_fill_dev(skb, sdev, NETLINK_CB(cb->skb).portid,
					cb->nlh->nlmsg_seq, NLM_F_MULTI,
					DSMEM_CMD_DEV_GET);
		if (ret)
			break;
		next = index + 1;
	}
	mutex_unlock(&dsmem_devs_lock);
	cb->args[0] = next;

	/* a device too large for an empty skb would loop forever */
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

int dsmem_nl_stats_get(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *stats, *stat;
	struct sk_buff *msg;
	void *hdr;
	int s;

	msg = dsmem_nl_reply_new(info, DSMEM_CMD_STATS_GET, &hdr);
	if (!msg)
		return -ENOMEM;
	stats = nla_nest_start(msg, DSMEM_ATTR_STATS);
	if (!stats)
		goto err_free_msg;
	for (s = 0; s < DSMEM_STAT_NR; s++) {
		stat = nla_nest_start(msg, DSMEM_ATTR_STAT);
		if (!stat ||
		    nla_put_string(msg, DSMEM_STAT_ATTR_NAME, dsmem_stat_name(s)) ||
		    nla_put_u64_64bit(msg, DSMEM_STAT_ATTR_VALUE,
				      dsmem_stat_read(genl_info_net(info), s),
				      DSMEM_STAT_ATTR_PAD))
			goto err_free_msg;
		nla_nest_end(msg, stat);
	}
	nla_nest_end(msg, stats);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free_msg:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

int dsmem_nl_stats_reset(struct sk_buff *skb, struct genl_info *info)
{
	dsmem_stats_reset(genl_info_net(info));
	return 0;
}

int dsmem_nl_init(void)
{
	return genl_register_family(&dsmem_nl_family);
}

void dsmem_nl_exit(void)
{
	genl_unregister_family(&dsmem_nl_family);
}
