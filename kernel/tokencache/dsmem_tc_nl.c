// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: netlink commands of tokens and of the token cache.  Policies and
 * the ops table are in dsmem_netlink.c.
 */
#include <linux/slab.h>
#include <net/genetlink.h>

#include "../dsmem_netlink.h"
#include "dsmem_tc.h"

/* The core's messages are static text: extack may keep the pointer. */
static void dsmem_nl_set_err(struct netlink_ext_ack *extack,
			     const struct nlattr *bad, const char *msg)
{
	if (!extack)
		return;
	extack->_msg = msg;
	extack->bad_attr = bad;
}

/*
 * An MR token's lkey is its rkey too on most devices (rxe among them),
 * and a WQE token's is the PD's local_dma_lkey, which reaches all of
 * memory on a device that has one: as RDMA's own netlink does, only
 * CAP_NET_ADMIN sees keys (secrets).
 */
static int dsmem_nl_fill_token(struct sk_buff *skb, u32 eid, u32 portid,
			       u32 seq, int flags, u8 cmd, bool secrets)
{
	struct dstc_cache *c = &dsmem_tc.live.c;
	struct dstc_entry *e = dstc_entry(c, eid);
	union dsmem_token t;
	char what[64];
	u64 ctl;
	u32 off;
	void *hdr;
	u8 type = eid >> 16;

	if (!e || dstc_peek(c, eid, &ctl, &off, &t))
		return -ENOENT;
	if (type == DSMEM_TOKEN_MR && !secrets)
		t.mr.lkey = 0;
	if (type == DSMEM_TOKEN_WQE && !secrets)
		t.wqe.lkey = 0;
	hdr = genlmsg_put(skb, portid, seq, dsmem_nl_family_get(), flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	dsmem_tc_describe(eid, what, sizeof(what));
	if (nla_put_u32(skb, DSMEM_ATTR_TOKEN_HANDLE,
			DSMEM_HANDLE(type, DSTC_CTL_GEN(ctl), eid & 0xffff)) ||
	    nla_put_u8(skb, DSMEM_ATTR_TOKEN_TYPE, type) ||
	    nla_put(skb, DSMEM_ATTR_TOKEN_DATA, dstc_token_size(type), &t) ||
	    nla_put_u8(skb, DSMEM_ATTR_TOKEN_LAYER, DSTC_CTL_LAYER(ctl)) ||
	    nla_put_u8(skb, DSMEM_ATTR_TOKEN_FLAGS, DSTC_CTL_FLAGS(ctl)) ||
	    nla_put_u32(skb, DSMEM_ATTR_TOKEN_VERSION, DSTC_CTL_VER(ctl)) ||
	    nla_put_u32(skb, DSMEM_ATTR_TOKEN_OFFSET, off) ||
	    (e->node && nla_put_u32(skb, DSMEM_ATTR_NODE_ID, e->node)) ||
	    nla_put_string(skb, DSMEM_ATTR_TOKEN_OBJECT, what) ||
	    nla_put_u32(skb, DSMEM_ATTR_TOKEN_HITS,
			dstc_window_hits(c, e, ktime_get_ns())) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_TOKEN_ACCESSES,
			      dstc_relaxed(c, eid), DSMEM_ATTR_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* The handle names a live token in the caller's namespace. */
static int dsmem_nl_token_check(struct genl_info *info, u32 *eid)
{
	struct nlattr *a = info->attrs[DSMEM_ATTR_TOKEN_HANDLE];
	struct dstc_entry *e;
	u32 handle;
	int ret;

	if (!a) {
		NL_SET_ERR_MSG(info->extack, "a token handle is required");
		return -EINVAL;
	}
	handle = nla_get_u32(a);
	*eid = dsmem_tc_eid(handle);
	e = dstc_entry(&dsmem_tc.live.c, *eid);
	ret = e ? dstc_ctl_check(READ_ONCE(e->ctl), DSMEM_HANDLE_GEN(handle)) :
		  -ENOENT;
	if (ret == -ESTALE) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "stale handle: its object is gone");
		return ret;
	}
	if (ret || !dsmem_tc_visible(*eid, genl_info_net(info))) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "no such token");
		return -ENOENT;
	}
	return 0;
}

static int dsmem_nl_token_reply(struct genl_info *info, u32 eid, u8 cmd,
				bool secrets)
{
	struct sk_buff *msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);

	if (!msg)
		return -ENOMEM;
	return dsmem_nl_reply_send(info, msg,
				   dsmem_nl_fill_token(msg, eid, info->snd_portid,
						       info->snd_seq, 0, cmd,
						       secrets));
}

int dsmem_nl_token_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	u32 eid;
	int ret = dsmem_nl_token_check(info, &eid);

	return ret ? ret : dsmem_nl_token_reply(info, eid, DSMEM_CMD_TOKEN_GET,
					       netlink_capable(skb,
							       CAP_NET_ADMIN));
}

int dsmem_nl_token_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	bool secrets = netlink_capable(cb->skb, CAP_NET_ADMIN);
	struct net *net = sock_net(cb->skb->sk);
	unsigned long eid = cb->args[0];
	struct dstc_entry *e;
	void *obj;
	int ret = 0;

	if (!cb->args[2]) {
		if (info->attrs[DSMEM_ATTR_TOKEN_HANDLE]) {
			NL_SET_ERR_MSG_ATTR(cb->extack,
					    info->attrs[DSMEM_ATTR_TOKEN_HANDLE],
					    "a token dump filters by type and node, not handle");
			return -EINVAL;
		}
		/* args[3]: type + 1; args[4]: node */
		if (info->attrs[DSMEM_ATTR_TOKEN_TYPE])
			cb->args[3] = nla_get_u8(info->attrs[DSMEM_ATTR_TOKEN_TYPE]) + 1;
		if (info->attrs[DSMEM_ATTR_NODE_ID])
			cb->args[4] = nla_get_u32(info->attrs[DSMEM_ATTR_NODE_ID]);
		cb->args[2] = 1;
	}
	xa_for_each_start(&dsmem_tc.objs, eid, obj, eid) {
		if (cb->args[3] && (eid >> 16) != cb->args[3] - 1)
			continue;
		e = dstc_entry(&dsmem_tc.live.c, eid);
		if (!e || !dsmem_tc_visible(eid, net) ||
		    (cb->args[4] && READ_ONCE(e->node) != cb->args[4]))
			continue;
		ret = dsmem_nl_fill_token(skb, eid, NETLINK_CB(cb->skb).portid,
					  cb->nlh->nlmsg_seq, NLM_F_MULTI,
					  DSMEM_CMD_TOKEN_GET, secrets);
		if (ret == -ENOENT) {
			ret = 0;	/* went away meanwhile */
			continue;
		}
		if (ret)
			break;
	}
	/* resume at the entry that did not fit; past the end when done */
	cb->args[0] = ret ? eid : (unsigned long)DSTC_ENTRIES_MAX;
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

int dsmem_nl_token_set(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	struct nlattr *pin = info->attrs[DSMEM_ATTR_TOKEN_PINNED];
	struct nlattr *layer = info->attrs[DSMEM_ATTR_TOKEN_LAYER];
	struct nlattr *ver = info->attrs[DSMEM_ATTR_TOKEN_VERSION];
	struct dstc_entry *e;
	struct dstc_stats *st;
	u64 now = ktime_get_ns();
	struct sk_buff *msg;
	u16 gen;
	u32 eid;
	int ret;

	ret = dsmem_nl_token_check(info, &eid);
	if (ret)
		return ret;
	if (!pin && !layer) {
		NL_SET_ERR_MSG(info->extack, "nothing to change: give pinned or layer");
		return -EINVAL;
	}
	if (pin && nla_get_u8(pin) && layer && nla_get_u8(layer) != DSMEM_TIER_L1) {
		NL_SET_ERR_MSG(info->extack, "pinned tokens live in L1");
		return -EINVAL;
	}
	gen = DSMEM_HANDLE_GEN(nla_get_u32(info->attrs[DSMEM_ATTR_TOKEN_HANDLE]));
	e = dstc_entry(&in->c, eid);
	/* made first: a change is not made unless it can be answered */
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&dsmem_tc.admin_lock);
	spin_lock_bh(&in->lock);
	st = this_cpu_ptr(in->stats);
	if (ver && DSTC_CTL_VER(e->ctl) != nla_get_u32(ver)) {
		NL_SET_ERR_MSG_ATTR(info->extack, ver,
				    "the entry changed since that version");
		ret = -ESTALE;
		goto out_unlock;
	}
	/* it may have gone since the check */
	ret = dstc_ctl_check(e->ctl, gen);
	if (ret)
		goto out_unlock;
	/* unpin before a move, pin after it */
	if (pin && !nla_get_u8(pin)) {
		ret = dstc_pin_locked(&in->c, st, eid, gen, false, now);
		if (ret)
			goto out_unlock;
	}
	if (layer) {
		ret = dstc_migrate_locked(&in->c, st, eid, nla_get_u8(layer), now);
		if (ret == -EBUSY) {
			NL_SET_ERR_MSG(info->extack, "a pinned token does not move");
			goto out_unlock;
		}
		if (ret) {
			NL_SET_ERR_MSG(info->extack, "no room in that tier");
			goto out_unlock;
		}
	}
	if (pin && nla_get_u8(pin)) {
		ret = dstc_pin_locked(&in->c, st, eid, gen, true, now);
		if (ret == -ENOSPC)
			NL_SET_ERR_MSG(info->extack, "L1 is full of pinned tokens");
	}
out_unlock:
	spin_unlock_bh(&in->lock);
	mutex_unlock(&dsmem_tc.admin_lock);
	if (!ret)
		ret = dsmem_nl_fill_token(msg, eid, info->snd_portid,
					  info->snd_seq, 0, DSMEM_CMD_TOKEN_SET,
					  true);
	return dsmem_nl_reply_send(info, msg, ret);
}

/* ---- the cache --------------------------------------------------------- */

static int dsmem_nl_put_stats(struct sk_buff *skb, const struct dstc_stats *s)
{
	struct nlattr *nest, *one;
	unsigned int i;

	nest = nla_nest_start(skb, DSMEM_ATTR_CACHE_STATS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < DSTC_S_NR; i++) {
		one = nla_nest_start(skb, DSMEM_ATTR_STAT);
		if (!one ||
		    nla_put_string(skb, DSMEM_STAT_ATTR_NAME, dstc_stat_names[i]) ||
		    nla_put_u64_64bit(skb, DSMEM_STAT_ATTR_VALUE, s->v[i],
				      DSMEM_STAT_ATTR_PAD))
			return -EMSGSIZE;
		nla_nest_end(skb, one);
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int dsmem_nl_put_tier(struct sk_buff *skb, const struct dstc_stats *s,
			     u8 tier, u32 entries, u32 cap, u64 bytes, s32 numa)
{
	static const u8 promote[] = { DSTC_S_PROMOTE_L1, DSTC_S_PROMOTE_L2, 0 };
	static const u8 demote[] = { DSTC_S_DEMOTE_L1, DSTC_S_DEMOTE_L2, 0 };
	static const u8 evict[] = { DSTC_S_EVICT_L1, DSTC_S_EVICT_L2, 0 };
	unsigned int t = tier - 1, k;
	u64 hits = s->v[DSTC_S_HITS_L1 + t], misses = 0;
	struct nlattr *nest;

	for (k = t + 1; k < 3; k++)
		misses += s->v[DSTC_S_HITS_L1 + k];
	nest = nla_nest_start(skb, DSMEM_ATTR_CACHE_TIER);
	if (!nest ||
	    nla_put_u8(skb, DSMEM_TIER_ATTR_ID, tier) ||
	    nla_put_u32(skb, DSMEM_TIER_ATTR_ENTRIES, entries) ||
	    nla_put_u32(skb, DSMEM_TIER_ATTR_CAPACITY, cap) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_BYTES, bytes,
			      DSMEM_TIER_ATTR_PAD) ||
	    nla_put_s32(skb, DSMEM_TIER_ATTR_NUMA, numa) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_HITS, hits, DSMEM_TIER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_MISSES, misses,
			      DSMEM_TIER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_PROMOTIONS,
			      t < 2 ? s->v[promote[t]] : 0, DSMEM_TIER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_DEMOTIONS,
			      t < 2 ? s->v[demote[t]] : 0, DSMEM_TIER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_EVICTIONS,
			      t < 2 ? s->v[evict[t]] : 0, DSMEM_TIER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_COST_MEAN_NS,
			      hits ? div64_u64(s->v[DSTC_S_COST_L1_NS + t], hits) : 0,
			      DSMEM_TIER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_TIER_ATTR_COST_P99_NS,
			      dstc_hist_quantile(s->hist[t], DSTC_HIST_BUCKETS, 990),
			      DSMEM_TIER_ATTR_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int dsmem_nl_fill_cache(struct sk_buff *skb)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	struct dstc_cache *c = &in->c;
	struct nlattr *params, *tiers;
	struct dstc_stats *s;
	u64 p[DSTC_P_NR], records, dropped;
	u32 l1, l2, live, pinned, queued;
	bool active;
	int i, ret = -EMSGSIZE;

	s = kvmalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	dsmem_tc_inst_stats(in, s);
	spin_lock_bh(&in->lock);
	memcpy(p, c->p, sizeof(p));
	l1 = c->l1_used;
	l2 = c->l2_used;
	live = c->nlive;
	pinned = c->l1_pinned;
	queued = c->q[0].len + c->q[1].len;
	spin_unlock_bh(&in->lock);
	dsmem_tc_trace_state(&active, &records, &dropped);

	params = nla_nest_start(skb, DSMEM_ATTR_CACHE_PARAMS);
	if (!params)
		goto out;
	for (i = 0; i < DSTC_P_NR; i++)
		if (nla_put_u64_64bit(skb, i + 1, p[i], DSMEM_ATTR_UNSPEC))
			goto out;
	nla_nest_end(skb, params);
	tiers = nla_nest_start(skb, DSMEM_ATTR_CACHE_TIERS);
	if (!tiers ||
	    dsmem_nl_put_tier(skb, s, DSMEM_TIER_L1, l1, (u32)p[DSTC_P_L1_CAPACITY],
			      (u64)l1 * sizeof(struct dstc_l1), NUMA_NO_NODE) ||
	    dsmem_nl_put_tier(skb, s, DSMEM_TIER_L2, l2, (u32)p[DSTC_P_L2_CAPACITY],
			      (u64)atomic_read(&in->l2_pages) * PAGE_SIZE, in->nid) ||
	    dsmem_nl_put_tier(skb, s, DSMEM_TIER_L3, live, 0,
			      (u64)live * sizeof(struct dstc_entry), NUMA_NO_NODE))
		goto out;
	nla_nest_end(skb, tiers);
	if (dsmem_nl_put_stats(skb, s) ||
	    nla_put_u32(skb, DSMEM_ATTR_CACHE_PROMOTE_L1,
			READ_ONCE(c->eff_promote_l1)) ||
	    nla_put_u32(skb, DSMEM_ATTR_CACHE_PROMOTE_L2,
			READ_ONCE(c->eff_promote_l2)) ||
	    nla_put_u32(skb, DSMEM_ATTR_CACHE_ENTRIES, live) ||
	    nla_put_u32(skb, DSMEM_ATTR_CACHE_PINNED, pinned) ||
	    nla_put_u32(skb, DSMEM_ATTR_CACHE_QUEUED, queued) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_CACHE_MIGRATE_RATE,
			      READ_ONCE(dsmem_tc.migrate_rate), DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_CACHE_MIGRATE_LAT_MEAN,
			      s->v[DSTC_S_MIGRATIONS] ?
			      div64_u64(s->v[DSTC_S_MIGRATE_NS],
					s->v[DSTC_S_MIGRATIONS]) : 0,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_CACHE_MIGRATE_LAT_P99,
			      dstc_hist_quantile(s->mig_hist, DSTC_HIST_BUCKETS, 990),
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_CACHE_DMA_RATE,
			      READ_ONCE(dsmem_tc.dma_rate[0]), DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_CACHE_DMA_PREFETCH_RATE,
			      READ_ONCE(dsmem_tc.dma_rate[1]), DSMEM_ATTR_PAD) ||
	    nla_put_u8(skb, DSMEM_ATTR_TRACE_ACTIVE, active) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_TRACE_RECORDS, records,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DSMEM_ATTR_TRACE_DROPPED, dropped,
			      DSMEM_ATTR_PAD))
		goto out;
	ret = 0;
out:
	kvfree(s);
	return ret;
}

/* A cache message (reply or event); NULL on failure. */
/* A cache message with its header, to fill by dsmem_nl_cache_end(). */
static struct sk_buff *dsmem_nl_cache_new(struct genl_info *info, u8 cmd,
					  bool event, void **hdr)
{
	struct sk_buff *msg = genlmsg_new(2 * NLMSG_GOODSIZE, GFP_KERNEL);

	if (!msg)
		return NULL;
	*hdr = event ? genlmsg_put(msg, 0, 0, dsmem_nl_family_get(), 0, cmd) :
		       genlmsg_put_reply(msg, info, dsmem_nl_family_get(), 0, cmd);
	if (!*hdr) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* The cache as it is now: 0, or -EMSGSIZE (msg is freed then). */
static int dsmem_nl_cache_end(struct sk_buff *msg, void *hdr)
{
	if (dsmem_nl_fill_cache(msg)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return 0;
}

int dsmem_nl_cache_get(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = dsmem_nl_cache_new(info, DSMEM_CMD_CACHE_GET, false, &hdr);
	if (!msg)
		return -ENOMEM;
	ret = dsmem_nl_cache_end(msg, hdr);
	return ret ? ret : genlmsg_reply(msg, info);
}

/*
 * Parameters from a CACHE_PARAMS nest over base; the nest's policy (from
 * the spec) takes the types, the ranges are the core's.
 */
int dsmem_nl_cache_params(struct nlattr *nest, u64 *p,
			  struct netlink_ext_ack *extack)
{
	struct nlattr *tb[DSMEM_CACHE_P_NR + 1];
	const char *why;
	int i, ret;

	if (!nest)
		return 0;
	ret = nla_parse_nested(tb, DSMEM_CACHE_P_NR, nest,
			       dsmem_cache_param_nl_policy, extack);
	if (ret)
		return ret;
	for (i = 0; i < DSTC_P_NR; i++)
		if (tb[i + 1])
			p[i] = nla_get_u64(tb[i + 1]);
	ret = dstc_params_check(p, &why);
	if (ret) {
		struct nlattr *bad = NULL;

		for (i = 0; i < DSTC_P_NR; i++)
			if (tb[i + 1] && why == dstc_params[i].range_msg)
				bad = tb[i + 1];
		dsmem_nl_set_err(extack, bad, why);
	}
	return ret;
}

int dsmem_nl_cache_set(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_tc_inst *in = &dsmem_tc.live;
	struct nlattr *nest = info->attrs[DSMEM_ATTR_CACHE_PARAMS];
	bool reset = nla_get_flag(info->attrs[DSMEM_ATTR_CACHE_RESET]);
	struct sk_buff *msg, *ev;
	void *hdr, *ev_hdr;
	u64 p[DSTC_P_NR];
	const char *why;
	int ret;

	if (!nest && !reset) {
		NL_SET_ERR_MSG(info->extack, "nothing to set: give parameters or reset");
		return -EINVAL;
	}
	/* made first: a change is not made unless it can be answered; an
	 * event that cannot be made is dropped, as dsmem_nl_notify() does
	 */
	msg = dsmem_nl_cache_new(info, DSMEM_CMD_CACHE_SET, false, &hdr);
	if (!msg)
		return -ENOMEM;
	ev = dsmem_nl_cache_new(info, DSMEM_CMD_CACHE_SET, true, &ev_hdr);
	mutex_lock(&dsmem_tc.admin_lock);
	memcpy(p, in->c.p, sizeof(p));
	ret = dsmem_nl_cache_params(nest, p, info->extack);
	if (ret)
		goto err_unlock;
	if (nest) {
		spin_lock_bh(&in->lock);
		ret = dstc_set_params_locked(&in->c, this_cpu_ptr(in->stats), p,
					     ktime_get_ns(), &why);
		spin_unlock_bh(&in->lock);
		if (ret) {
			dsmem_nl_set_err(info->extack, NULL, why);
			goto err_unlock;
		}
	}
	if (reset)
		dsmem_tc_inst_stats_reset(in);
	mutex_unlock(&dsmem_tc.admin_lock);
	if (!ev || dsmem_nl_cache_end(ev, ev_hdr))
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_NL_EVENTS_DROPPED);
	else
		dsmem_nl_multicast(genl_info_net(info), ev);
	ret = dsmem_nl_cache_end(msg, hdr);
	return ret ? ret : genlmsg_reply(msg, info);

err_unlock:
	mutex_unlock(&dsmem_tc.admin_lock);
	nlmsg_free(ev);
	nlmsg_free(msg);
	return ret;
}

/* ---- trace ------------------------------------------------------------- */

/* A trace message, to fill by dsmem_nl_trace_end(). */
static struct sk_buff *dsmem_nl_trace_new(struct genl_info *info, u8 cmd,
					  bool event, void **hdr)
{
	struct sk_buff *msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);

	if (!msg)
		return NULL;
	*hdr = event ? genlmsg_put(msg, 0, 0, dsmem_nl_family_get(), 0, cmd) :
		       genlmsg_put_reply(msg, info, dsmem_nl_family_get(), 0, cmd);
	if (!*hdr) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* 0, or -EMSGSIZE (msg is freed then) */
static int dsmem_nl_trace_end(struct sk_buff *msg, void *hdr, u8 cmd,
			      u64 records, u64 dropped, int err)
{
	if (nla_put_u8(msg, DSMEM_ATTR_TRACE_ACTIVE, cmd == DSMEM_CMD_TRACE_START) ||
	    nla_put_u64_64bit(msg, DSMEM_ATTR_TRACE_RECORDS, records,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u64_64bit(msg, DSMEM_ATTR_TRACE_DROPPED, dropped,
			      DSMEM_ATTR_PAD) ||
	    nla_put_u32(msg, DSMEM_ATTR_TRACE_ERRNO, -err)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return 0;
}

/* A private cache's parameters: the live ones, with the request's over them. */
static int dsmem_nl_private_params(struct genl_info *info, u64 *p)
{
	memcpy(p, dsmem_tc.live.c.p, sizeof(dsmem_tc.live.c.p));
	return dsmem_nl_cache_params(info->attrs[DSMEM_ATTR_CACHE_PARAMS], p,
				     info->extack);
}

/* The reply and the event of a start or a stop, made before either. */
struct dsmem_nl_trace_msgs {
	struct sk_buff *reply, *event;
	void *reply_hdr, *event_hdr;
};

static int dsmem_nl_trace_prepare(struct genl_info *info, u8 cmd,
				  struct dsmem_nl_trace_msgs *m)
{
	m->reply = dsmem_nl_trace_new(info, cmd, false, &m->reply_hdr);
	if (!m->reply)
		return -ENOMEM;
	/* without it the event is dropped, as dsmem_nl_notify() does */
	m->event = dsmem_nl_trace_new(info, cmd, true, &m->event_hdr);
	return 0;
}

static void dsmem_nl_trace_discard(struct dsmem_nl_trace_msgs *m)
{
	nlmsg_free(m->event);
	nlmsg_free(m->reply);
}

static int dsmem_nl_trace_done(struct genl_info *info, u8 cmd,
			       struct dsmem_nl_trace_msgs *m, u64 records,
			       u64 dropped, int err)
{
	int ret;

	if (!m->event || dsmem_nl_trace_end(m->event, m->event_hdr, cmd,
					    records, dropped, err))
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_NL_EVENTS_DROPPED);
	else
		dsmem_nl_multicast(genl_info_net(info), m->event);
	ret = dsmem_nl_trace_end(m->reply, m->reply_hdr, cmd, records, dropped,
				 err);
	return ret ? ret : genlmsg_reply(m->reply, info);
}

int dsmem_nl_trace_start(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *fd = info->attrs[DSMEM_ATTR_TRACE_FD];
	struct dsmem_nl_trace_msgs m;
	int ret;

	if (!fd) {
		NL_SET_ERR_MSG(info->extack, "a trace file descriptor is required");
		return -EINVAL;
	}
	ret = dsmem_nl_trace_prepare(info, DSMEM_CMD_TRACE_START, &m);
	if (ret)
		return ret;
	/* a doit runs in the sender's context: the descriptor is theirs */
	ret = dsmem_tc_trace_start(nla_get_u32(fd), info->extack);
	if (ret) {
		dsmem_nl_trace_discard(&m);
		return ret;
	}
	return dsmem_nl_trace_done(info, DSMEM_CMD_TRACE_START, &m, 0, 0, 0);
}

int dsmem_nl_trace_stop(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_nl_trace_msgs m;
	u64 records, dropped;
	int err, ret;

	ret = dsmem_nl_trace_prepare(info, DSMEM_CMD_TRACE_STOP, &m);
	if (ret)
		return ret;
	ret = dsmem_tc_trace_stop(&records, &dropped, &err);
	if (ret) {
		dsmem_nl_trace_discard(&m);
		NL_SET_ERR_MSG(info->extack, "no trace capture is running");
		return ret;
	}
	return dsmem_nl_trace_done(info, DSMEM_CMD_TRACE_STOP, &m, records,
				   dropped, err);
}

/* ---- bench ------------------------------------------------------------- */

int dsmem_nl_cache_bench(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *qps = info->attrs[DSMEM_ATTR_BENCH_QPS];
	struct nlattr *ops = info->attrs[DSMEM_ATTR_BENCH_OPS];
	struct nlattr *seed = info->attrs[DSMEM_ATTR_BENCH_SEED];
	struct dsmem_tc_bench_res r = {};
	const struct {
		int attr;
		const u64 *value;
	} out[] = {
		{ DSMEM_BENCH_ATTR_ACCESSES, &r.accesses },
		{ DSMEM_BENCH_ATTR_HITS_L1, &r.hits[0] },
		{ DSMEM_BENCH_ATTR_HITS_L2, &r.hits[1] },
		{ DSMEM_BENCH_ATTR_HITS_L3, &r.hits[2] },
		{ DSMEM_BENCH_ATTR_MODELED_NS, &r.modeled_ns },
		{ DSMEM_BENCH_ATTR_L1_HIT_MEAN_NS, &r.l1_mean_ns },
		{ DSMEM_BENCH_ATTR_L1_HIT_P99_NS, &r.l1_p99_ns },
		{ DSMEM_BENCH_ATTR_MISS_MEAN_NS, &r.miss_mean_ns },
		{ DSMEM_BENCH_ATTR_MISS_P99_NS, &r.miss_p99_ns },
		{ DSMEM_BENCH_ATTR_MIGRATIONS, &r.migrations },
	};
	struct sk_buff *msg;
	struct nlattr *nest;
	u64 p[DSTC_P_NR];
	unsigned int i;
	void *hdr;
	int ret;

	if (!qps || !ops) {
		NL_SET_ERR_MSG(info->extack, "a bench needs qps and ops");
		return -EINVAL;
	}
	ret = dsmem_nl_private_params(info, p);
	if (ret)
		return ret;
	ret = dsmem_tc_bench(nla_get_u32(qps), nla_get_u32(ops),
			     seed ? nla_get_u32(seed) : 1, p, &r);
	if (ret)
		return ret;

	msg = dsmem_nl_reply_new(info, DSMEM_CMD_CACHE_BENCH, &hdr);
	if (!msg)
		return -ENOMEM;
	nest = nla_nest_start(msg, DSMEM_ATTR_BENCH_RESULT);
	if (!nest)
		goto err_free_msg;
	for (i = 0; i < ARRAY_SIZE(out); i++)
		if (nla_put_u64_64bit(msg, out[i].attr, *out[i].value,
				      DSMEM_BENCH_ATTR_PAD))
			goto err_free_msg;
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free_msg:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* ---- replay ------------------------------------------------------------ */

int dsmem_nl_cache_replay(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *recs = info->attrs[DSMEM_ATTR_REPLAY_RECS];
	struct nlattr *maint = info->attrs[DSMEM_ATTR_REPLAY_MAINT_NS];
	struct dsmem_tc_replay_res r = {};
	struct sk_buff *msg;
	u64 p[DSTC_P_NR];
	const char *why;
	size_t len;
	void *hdr;
	int ret;

	/* each array is one attribute, whose length is 16 bits */
	BUILD_BUG_ON(DSMEM_REPLAY_RECS_MAX * sizeof(struct dsmem_trace_rec) >
		     U16_MAX - NLA_HDRLEN);
	BUILD_BUG_ON(DSMEM_REPLAY_MOVES_MAX * sizeof(struct dsmem_cache_move) >
		     U16_MAX - NLA_HDRLEN);
	BUILD_BUG_ON(sizeof(struct dsmem_cache_move) != DSMEM_CACHE_MOVE_SIZE);

	if (!recs) {
		NL_SET_ERR_MSG(info->extack, "a replay needs trace records");
		return -EINVAL;
	}
	/* the policy bounds the length; whole records are checked here */
	if (nla_len(recs) % sizeof(struct dsmem_trace_rec)) {
		NL_SET_ERR_MSG_ATTR(info->extack, recs,
				    "replay records must be whole struct dsmem_trace_rec");
		return -EINVAL;
	}
	ret = dsmem_nl_private_params(info, p);
	if (ret)
		return ret;

	r.st = kvzalloc(sizeof(*r.st), GFP_KERNEL);
	r.moves = kvmalloc_array(DSMEM_REPLAY_MOVES_MAX, sizeof(*r.moves),
				 GFP_KERNEL);
	if (!r.st || !r.moves) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = dsmem_tc_replay(nla_data(recs),
			      nla_len(recs) / sizeof(struct dsmem_trace_rec),
			      maint ? nla_get_u64(maint) : 0, p, &r, &why);
	if (ret) {
		if (why)
			dsmem_nl_set_err(info->extack, recs, why);
		goto out_free;
	}

	len = (size_t)r.nmoves * sizeof(*r.moves);
	msg = genlmsg_new(nla_total_size(len) + NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out_free;
	}
	hdr = genlmsg_put_reply(msg, info, dsmem_nl_family_get(), 0,
				DSMEM_CMD_CACHE_REPLAY);
	if (!hdr || dsmem_nl_put_stats(msg, r.st) ||
	    nla_put(msg, DSMEM_ATTR_REPLAY_MOVES, len, r.moves) ||
	    (r.truncated && nla_put_flag(msg, DSMEM_ATTR_REPLAY_TRUNCATED))) {
		ret = -EMSGSIZE;
		goto err_free_msg;
	}
	genlmsg_end(msg, hdr);
	ret = genlmsg_reply(msg, info);
	goto out_free;

err_free_msg:
	nlmsg_free(msg);
out_free:
	kvfree(r.moves);
	kvfree(r.st);
	return ret;
}
