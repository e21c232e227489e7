// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope over netlink: SLOPE_GET (a node's range; the dump adds its
 * leases and migrations, one message each) and the SLOPE_MIG event.
 */
#include <net/genetlink.h>

#include "../dsmem_netlink.h"
#include "dsmem_slope.h"

/* dump cursor: cb->args[0] node, [1] phase, [2] position in the phase */
enum dsmem_slope_dump_phase {
	DSMEM_SLOPE_DUMP_SUMMARY,
	DSMEM_SLOPE_DUMP_HELD,
	DSMEM_SLOPE_DUMP_GIVEN,
	DSMEM_SLOPE_DUMP_OBJS,
	DSMEM_SLOPE_DUMP_MIGS,
	DSMEM_SLOPE_DUMP_NEXT_NODE,
};

static int dsmem_slope_fill_summary(struct sk_buff *skb, struct dsmem_slope *s)
{
	struct dsmem_slope_lease *l;
	unsigned long i;
	u32 held = 0, free = 0;
	u64 pages;

	mutex_lock(&s->lease_lock);
	xa_for_each(&s->held, i, l)
		held++;
	mutex_unlock(&s->lease_lock);
	mutex_lock(&s->alloc_lock);
	pages = s->pages_owned;
	mutex_unlock(&s->alloc_lock);
	if (s->node->id <= DSMEM_SLOPE_NODES_MAX) {
		mutex_lock(&s->share_lock);
		for (i = 0; i < DSMEM_SLOPE_LEASES_PER_NODE; i++)
			free += !s->holder[i];
		mutex_unlock(&s->share_lock);
	}
	if (nla_put_u64_64bit(skb, DSMEM_ATTR_SLOPE_BASE, DSMEM_SLOPE_BASE,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_SLOPE_SIZE, DSMEM_SLOPE_SIZE,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_SLOPE_PAGES, pages,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u32(skb, DSMEM_ATTR_SLOPE_LEASES_HELD, held) ||
	    nla_put_u32(skb, DSMEM_ATTR_SLOPE_LEASES_FREE, free))
		return -EMSGSIZE;
	return 0;
}

static int dsmem_slope_fill_lease(struct sk_buff *skb, u32 lease, u32 holder,
				  const u64 *used)
{
	u64 base = DSMEM_SLOPE_BASE + ((u64)lease << DSMEM_SLOPE_LEASE_SHIFT);
	struct nlattr *nest = nla_nest_start(skb, DSMEM_ATTR_SLOPE_LEASE);

	if (!nest ||
	    nla_put_u64_64bit(skb, DSMEM_SLOPE_LEASE_ATTR_BASE, base,
			      DSMEM_SLOPE_LEASE_ATTR_PAD) ||
	    nla_put_u32(skb, DSMEM_SLOPE_LEASE_ATTR_HOLDER, holder) ||
	    nla_put_u32(skb, DSMEM_SLOPE_LEASE_ATTR_RESPONSIBLE,
			DSMEM_SLOPE_ADDR_NODE(base)) ||
	    (used && nla_put_u64_64bit(skb, DSMEM_SLOPE_LEASE_ATTR_USED, *used,
				       DSMEM_SLOPE_LEASE_ATTR_PAD)))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int dsmem_slope_fill_obj(struct sk_buff *skb,
				const struct dsmem_slope_obj *obj)
{
	struct nlattr *nest = nla_nest_start(skb, DSMEM_ATTR_SLOPE_OBJ);

	if (!nest ||
	    nla_put_u64_64bit(skb, DSMEM_SLOPE_OBJ_ATTR_ADDR, obj->addr,
			      DSMEM_SLOPE_OBJ_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_SLOPE_OBJ_ATTR_PAGES, obj->pages,
			      DSMEM_SLOPE_OBJ_ATTR_PAD) ||
	    nla_put_u32(skb, DSMEM_SLOPE_OBJ_ATTR_RUNS, obj->runs))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * Under s->mig_lock.  The cookie is the object's address in its owner's
 * address space: CAP_NET_ADMIN's only (secrets), as the owner has it from
 * its own ioctl; the "events" group, open to any listener, never has it.
 */
int dsmem_slope_fill_mig(struct sk_buff *skb, struct dsmem_slope_mig *mig,
			 bool secrets)
{
	struct dsmem_ioc_slope_mig a = {};
	struct nlattr *nest;
	const struct {
		int attr;
		u64 v;
	} u64s[] = {
		{ DSMEM_SLOPE_MIG_ATTR_ID, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_COOKIE, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_PAGES, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_SENT, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_DIRTY, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_PULLED, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_FAILED, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_FAULT_WAITS, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_PREFILL_NS, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_STOP_NS, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_NO_OWNER_NS, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_PULL_NS, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_TOTAL_NS, 0 },
		{ DSMEM_SLOPE_MIG_ATTR_FIRST_ROUND_NS, 0 },
	};
	u64 vals[ARRAY_SIZE(u64s)];
	unsigned int i;

	dsmem_slope_mig_fill(mig, &a);
	vals[0] = a.id;
	vals[1] = a.cookie;
	vals[2] = a.pages;
	vals[3] = a.sent_units;
	vals[4] = a.dirty_units;
	vals[5] = a.pulled_units;
	vals[6] = a.failed_units;
	vals[7] = a.fault_waits;
	vals[8] = a.prefill_ns;
	vals[9] = a.stop_ns;
	vals[10] = a.no_owner_ns;
	vals[11] = a.pull_ns;
	vals[12] = a.total_ns;
	vals[13] = a.first_round_ns;

	nest = nla_nest_start(skb, DSMEM_ATTR_SLOPE_MIG);
	if (!nest ||
	    nla_put_u8(skb, DSMEM_SLOPE_MIG_ATTR_STATE, a.state) ||
	    nla_put_u32(skb, DSMEM_SLOPE_MIG_ATTR_ERRNO, -a.error) ||
	    nla_put_u32(skb, DSMEM_SLOPE_MIG_ATTR_PEER, a.peer) ||
	    nla_put_u8(skb, DSMEM_SLOPE_MIG_ATTR_INCOMING, mig->incoming) ||
	    nla_put_u8(skb, DSMEM_SLOPE_MIG_ATTR_UNIT_SHIFT, a.unit_shift) ||
	    nla_put_u32(skb, DSMEM_SLOPE_MIG_ATTR_ROUNDS, a.rounds))
		return -EMSGSIZE;
	for (i = 0; i < ARRAY_SIZE(u64s); i++) {
		if (u64s[i].attr == DSMEM_SLOPE_MIG_ATTR_COOKIE && !secrets)
			continue;
		if (nla_put_u64_64bit(skb, u64s[i].attr, vals[i],
				      DSMEM_SLOPE_MIG_ATTR_PAD))
			return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static void *dsmem_slope_msg_start(struct sk_buff *skb, struct dsmem_node *node,
				   u32 portid, u32 seq, int flags, u8 cmd)
{
	void *hdr = genlmsg_put(skb, portid, seq, dsmem_nl_family_get(), flags,
				cmd);

	if (hdr && nla_put_u32(skb, DSMEM_ATTR_NODE_ID, node->id)) {
		genlmsg_cancel(skb, hdr);
		return NULL;
	}
	return hdr;
}

/* One message: the summary, a lease or a migration (by phase). */
static int dsmem_slope_dump_one(struct sk_buff *skb, struct netlink_callback *cb,
				struct dsmem_node *node, unsigned long phase,
				unsigned long *pos, bool secrets)
{
	struct dsmem_slope *s = dsmem_slope_of(node);
	struct dsmem_slope_lease *l;
	struct dsmem_slope_mig *mig;
	unsigned long i;
	void *hdr;
	int ret = -ENOENT;

	hdr = dsmem_slope_msg_start(skb, node, NETLINK_CB(cb->skb).portid,
				    cb->nlh->nlmsg_seq, NLM_F_MULTI,
				    DSMEM_CMD_SLOPE_GET);
	if (!hdr)
		return -EMSGSIZE;
	switch (phase) {
	case DSMEM_SLOPE_DUMP_SUMMARY:
		ret = *pos ? -ENOENT : dsmem_slope_fill_summary(skb, s);
		*pos = 1;
		break;
	case DSMEM_SLOPE_DUMP_HELD:
		mutex_lock(&s->lease_lock);
		i = *pos;
		l = xa_find(&s->held, &i, ULONG_MAX, XA_PRESENT);
		if (l) {
			ret = dsmem_slope_fill_lease(skb, i, node->id, &l->nused);
			*pos = i + 1;
		}
		mutex_unlock(&s->lease_lock);
		break;
	case DSMEM_SLOPE_DUMP_GIVEN:
		if (node->id > DSMEM_SLOPE_NODES_MAX)
			break;
		mutex_lock(&s->share_lock);
		for (i = *pos; i < DSMEM_SLOPE_LEASES_PER_NODE; i++)
			if (s->holder[i] && s->holder[i] != node->id)
				break;
		if (i < DSMEM_SLOPE_LEASES_PER_NODE) {
			u32 lease = (node->id - 1) * DSMEM_SLOPE_LEASES_PER_NODE + i;

			ret = dsmem_slope_fill_lease(skb, lease, s->holder[i],
						     NULL);
			*pos = i + 1;
		}
		mutex_unlock(&s->share_lock);
		break;
	case DSMEM_SLOPE_DUMP_OBJS: {
		struct dsmem_slope_obj *obj;

		/* where other processes keep their objects: secrets */
		if (!secrets)
			break;
		mutex_lock(&s->alloc_lock);
		i = *pos;
		obj = xa_find(&s->objs, &i, ULONG_MAX, XA_PRESENT);
		if (obj) {
			ret = dsmem_slope_fill_obj(skb, obj);
			*pos = i + 1;
		}
		mutex_unlock(&s->alloc_lock);
		break;
	}
	case DSMEM_SLOPE_DUMP_MIGS:
		/* ids only grow along the list */
		mutex_lock(&s->mig_lock);
		list_for_each_entry(mig, &s->migs, link) {
			if (mig->id <= *pos)
				continue;
			ret = dsmem_slope_fill_mig(skb, mig, secrets);
			*pos = mig->id;
			break;
		}
		mutex_unlock(&s->mig_lock);
		break;
	}
	if (ret) {
		genlmsg_cancel(skb, hdr);
		return ret;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

int dsmem_nl_slope_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	bool secrets = netlink_capable(cb->skb, CAP_NET_ADMIN);
	struct net *net = sock_net(cb->skb->sk);
	unsigned long nid = max_t(unsigned long, cb->args[0], 1);
	unsigned long phase = cb->args[1];
	unsigned long pos = cb->args[2], last = DSMEM_NODE_ID_MAX, want;
	struct dsmem_node *node;
	bool named;
	int ret = 0;

	if (info->attrs[DSMEM_ATTR_NODE_ID] &&
	    nla_get_u32(info->attrs[DSMEM_ATTR_NODE_ID])) {
		last = nla_get_u32(info->attrs[DSMEM_ATTR_NODE_ID]);
		nid = max(nid, last);
	}
	for (; nid <= last; nid++, phase = 0, pos = 0) {
		want = nid;
		node = dsmem_node_next(&nid, last, net);
		if (!node) {
			nid = last + 1;
			break;
		}
		if (nid != want) {
			/* the node the last part stopped in is gone */
			phase = 0;
			pos = 0;
		}
		/*
		 * What others' nodes hold, and where, is theirs: left out of
		 * a dump of all, refused to one that names the node.  Asked
		 * again of each part: the id may be another node's by now.
		 */
		named = last != DSMEM_NODE_ID_MAX;
		if (!dsmem_node_may_use(node, named && !phase && !pos)) {
			dsmem_node_put(node);
			if (!named)
				continue;
			NL_SET_ERR_MSG(cb->extack, DSMEM_NODE_NOT_YOURS_MSG);
			ret = -EACCES;
			break;
		}
		while (phase < DSMEM_SLOPE_DUMP_NEXT_NODE) {
			unsigned long was = pos;

			ret = dsmem_slope_dump_one(skb, cb, node, phase, &pos,
						   secrets);
			if (ret == -ENOENT) {
				/* this phase is over: the next one */
				phase++;
				pos = 0;
				ret = 0;
				continue;
			}
			if (ret) {
				pos = was;	/* the skb is full: again later */
				break;
			}
		}
		dsmem_node_put(node);
		if (ret)
			break;
	}
	cb->args[0] = nid;
	cb->args[1] = phase;
	cb->args[2] = pos;
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

int dsmem_nl_slope_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *a = info->attrs[DSMEM_ATTR_NODE_ID];
	struct dsmem_node *node;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_NODE_ID))
		return -EINVAL;
	node = dsmem_node_get(nla_get_u32(a), genl_info_net(info));
	if (!node) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "no such node");
		return -ENOENT;
	}
	if (!dsmem_node_may_use(node, true)) {
		dsmem_node_put(node);
		NL_SET_ERR_MSG_ATTR(info->extack, a, DSMEM_NODE_NOT_YOURS_MSG);
		return -EACCES;
	}
	msg = dsmem_nl_reply_new(info, DSMEM_CMD_SLOPE_GET, &hdr);
	if (!msg) {
		dsmem_node_put(node);
		return -ENOMEM;
	}
	ret = nla_put_u32(msg, DSMEM_ATTR_NODE_ID, node->id) ?:
	      dsmem_slope_fill_summary(msg, dsmem_slope_of(node));
	dsmem_node_put(node);
	if (!ret)
		genlmsg_end(msg, hdr);
	return dsmem_nl_reply_send(info, msg, ret);
}

/* A migration changed state: tell the "events" group. */
void dsmem_slope_notify_mig(struct dsmem_slope_mig *mig)
{
	struct dsmem_node *node = mig->s->node;
	struct sk_buff *skb;
	void *hdr;
	int ret;

	if (!genl_has_listeners(dsmem_nl_family_get(), node->net, 0))
		return;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb) {
		dsmem_stat_inc(node->net, DSMEM_STAT_NL_EVENTS_DROPPED);
		return;
	}
	hdr = dsmem_slope_msg_start(skb, node, 0, 0, 0, DSMEM_CMD_SLOPE_MIG);
	if (!hdr) {
		nlmsg_free(skb);
		dsmem_stat_inc(node->net, DSMEM_STAT_NL_EVENTS_DROPPED);
		return;
	}
	mutex_lock(&mig->s->mig_lock);
	ret = dsmem_slope_fill_mig(skb, mig, false);
	mutex_unlock(&mig->s->mig_lock);
	if (ret) {
		nlmsg_free(skb);
		dsmem_stat_inc(node->net, DSMEM_STAT_NL_EVENTS_DROPPED);
		return;
	}
	genlmsg_end(skb, hdr);
	dsmem_nl_multicast(node->net, skb);
}
