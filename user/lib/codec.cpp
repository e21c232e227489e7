// SPDX-License-Identifier: BSD-2-Clause
// Encoding of requests to and decoding of replies from the "dsmem" family.
// Decoding checks every attribute's length: a short or oversized attribute
// is -EBADMSG, never a read past the message.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include <arpa/inet.h>
#include <linux/dsmem_netlink.h>

#include "ds_internal.hpp"
#include "nl_gen.h"
#include "tc_core.hpp"

namespace dsmem::detail {

namespace {

// Fixed-width attributes must be exactly their width (libnl only checks
// the minimum); strings must be terminated and fit the destination.
int check_widths(struct nlattr **tb, int max, const struct nla_policy *pol)
{
	for (int i = 1; i <= max; i++) {
		if (!tb[i])
			continue;
		if (pol[i].maxlen && nla_len(tb[i]) != pol[i].maxlen)
			return -EBADMSG;
		if (pol[i].type == NLA_STRING) {
			auto *s = static_cast<const char *>(nla_data(tb[i]));
			int len = nla_len(tb[i]);
			if (len < 1 || s[len - 1] != '\0')
				return -EBADMSG;
		}
	}
	return 0;
}

int copy_string(char *dst, size_t size, struct nlattr *a)
{
	if (!a) {
		dst[0] = '\0';
		return 0;
	}
	size_t len = strnlen(static_cast<const char *>(nla_data(a)), nla_len(a));
	if (len >= size)
		return -EBADMSG;
	memcpy(dst, nla_data(a), len);
	dst[len] = '\0';
	return 0;
}

int parse_top(struct nl_msg *msg, struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (!genlmsg_valid_hdr(nlh, 0))
		return -EBADMSG;
	if (genlmsg_parse(nlh, 0, tb, DSMEM_ATTR_MAX, ds_nl_dsmem_policy) < 0)
		return -EBADMSG;
	// libnl ignores a truncated trailing attribute; a reply must not have one
	struct nlattr *a;
	int rem;
	nla_for_each_attr(a, genlmsg_attrdata(static_cast<struct genlmsghdr *>(nlmsg_data(nlh)), 0),
			  genlmsg_attrlen(static_cast<struct genlmsghdr *>(nlmsg_data(nlh)), 0), rem) {
	}
	if (rem != 0)
		return -EBADMSG;
	return check_widths(tb, DSMEM_ATTR_MAX, ds_nl_dsmem_policy);
}

int parse_port(struct nlattr *nest, ds_port_info *p)
{
	struct nlattr *tb[DSMEM_PORT_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_PORT_ATTR_MAX, nest, ds_nl_port_policy) < 0 ||
	    check_widths(tb, DSMEM_PORT_ATTR_MAX, ds_nl_port_policy))
		return -EBADMSG;
	if (!tb[DSMEM_PORT_ATTR_INDEX])
		return -EBADMSG;
	memset(p, 0, sizeof(*p));
	p->index = nla_get_u32(tb[DSMEM_PORT_ATTR_INDEX]);
	if (tb[DSMEM_PORT_ATTR_STATE])
		p->state = nla_get_u8(tb[DSMEM_PORT_ATTR_STATE]);
	if (tb[DSMEM_PORT_ATTR_LINK_LAYER])
		p->link_layer = nla_get_u8(tb[DSMEM_PORT_ATTR_LINK_LAYER]);
	if (tb[DSMEM_PORT_ATTR_ACTIVE_MTU])
		p->active_mtu = nla_get_u32(tb[DSMEM_PORT_ATTR_ACTIVE_MTU]);
	return copy_string(p->netdev, sizeof(p->netdev), tb[DSMEM_PORT_ATTR_NETDEV]);
}

uint32_t get_u32(struct nlattr *a) { return a ? nla_get_u32(a) : 0; }
uint8_t get_u8(struct nlattr *a) { return a ? nla_get_u8(a) : 0; }
uint16_t get_u16(struct nlattr *a) { return a ? nla_get_u16(a) : 0; }
uint64_t get_u64(struct nlattr *a) { return a ? nla_get_u64(a) : 0; }

// A list nest: every entry must be an `entry` nest that parse() accepts,
// with nothing left over.  parse() sees every entry, also those past
// what the caller keeps, so a bad one anywhere is refused.
template <typename F>
int for_each_entry(struct nlattr *list, int entry, F &&parse)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, list, rem) {
		if (nla_type(a) != entry)
			return -EBADMSG;
		int ret = parse(a);
		if (ret)
			return ret;
	}
	return rem > 0 ? -EBADMSG : 0;	// trailing garbage in the nest
}

int parse_rseg(struct nlattr *nest, ds_remote_seg *r)
{
	struct nlattr *tb[DSMEM_RSEG_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_RSEG_ATTR_MAX, nest, ds_nl_rseg_policy) < 0 ||
	    check_widths(tb, DSMEM_RSEG_ATTR_MAX, ds_nl_rseg_policy) ||
	    !tb[DSMEM_RSEG_ATTR_ADDR] || !tb[DSMEM_RSEG_ATTR_SIZE])
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	r->addr = nla_get_u64(tb[DSMEM_RSEG_ATTR_ADDR]);
	r->size = nla_get_u64(tb[DSMEM_RSEG_ATTR_SIZE]);
	r->perm = get_u8(tb[DSMEM_RSEG_ATTR_PERM]);
	r->keys = get_u32(tb[DSMEM_RSEG_ATTR_KEYS]);
	return 0;
}

int parse_grant(struct nlattr *nest, ds_grant_info *g)
{
	struct nlattr *tb[DSMEM_GRANT_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_GRANT_ATTR_MAX, nest, ds_nl_grant_policy) < 0 ||
	    check_widths(tb, DSMEM_GRANT_ATTR_MAX, ds_nl_grant_policy) ||
	    !tb[DSMEM_GRANT_ATTR_REMOTE_NODE] || !tb[DSMEM_GRANT_ATTR_PERM])
		return -EBADMSG;
	memset(g, 0, sizeof(*g));
	g->remote_node = nla_get_u32(tb[DSMEM_GRANT_ATTR_REMOTE_NODE]);
	g->perm = nla_get_u8(tb[DSMEM_GRANT_ATTR_PERM]);
	return 0;
}

// One DSMEM_ATTR_STAT entry: a name and a value.
int parse_stat(struct nlattr *nest, ds_stat *s)
{
	struct nlattr *st[DSMEM_STAT_ATTR_MAX + 1];

	if (nla_parse_nested(st, DSMEM_STAT_ATTR_MAX, nest, ds_nl_stat_policy) < 0 ||
	    check_widths(st, DSMEM_STAT_ATTR_MAX, ds_nl_stat_policy) ||
	    !st[DSMEM_STAT_ATTR_NAME] || !st[DSMEM_STAT_ATTR_VALUE])
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	s->value = nla_get_u64(st[DSMEM_STAT_ATTR_VALUE]);
	return copy_string(s->name, sizeof(s->name), st[DSMEM_STAT_ATTR_NAME]);
}

// One CACHE_TIER nest; tiers this library does not know (a newer
// module's) are left to the caller to skip.
int parse_tier(struct nlattr *nest, ds_cache_tier *t)
{
	struct nlattr *tb[DSMEM_TIER_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_TIER_ATTR_MAX, nest, ds_nl_tier_policy) < 0 ||
	    check_widths(tb, DSMEM_TIER_ATTR_MAX, ds_nl_tier_policy) ||
	    !tb[DSMEM_TIER_ATTR_ID] || !tb[DSMEM_TIER_ATTR_ENTRIES] ||
	    !tb[DSMEM_TIER_ATTR_CAPACITY])
		return -EBADMSG;
	memset(t, 0, sizeof(*t));
	t->id = nla_get_u8(tb[DSMEM_TIER_ATTR_ID]);
	t->entries = nla_get_u32(tb[DSMEM_TIER_ATTR_ENTRIES]);
	t->capacity = nla_get_u32(tb[DSMEM_TIER_ATTR_CAPACITY]);
	t->numa = tb[DSMEM_TIER_ATTR_NUMA] ? nla_get_s32(tb[DSMEM_TIER_ATTR_NUMA]) : -1;
	t->bytes = get_u64(tb[DSMEM_TIER_ATTR_BYTES]);
	t->hits = get_u64(tb[DSMEM_TIER_ATTR_HITS]);
	t->misses = get_u64(tb[DSMEM_TIER_ATTR_MISSES]);
	t->promotions = get_u64(tb[DSMEM_TIER_ATTR_PROMOTIONS]);
	t->demotions = get_u64(tb[DSMEM_TIER_ATTR_DEMOTIONS]);
	t->evictions = get_u64(tb[DSMEM_TIER_ATTR_EVICTIONS]);
	t->cost_mean_ns = get_u64(tb[DSMEM_TIER_ATTR_COST_MEAN_NS]);
	t->cost_p99_ns = get_u64(tb[DSMEM_TIER_ATTR_COST_P99_NS]);
	return t->id ? 0 : -EBADMSG;
}

// A SLOPE_LEASE nest: its base is what names it; the rest may be absent
// (used is, in a lease of the node's share held by another node).
int parse_slope_lease(struct nlattr *nest, ds_slope_lease_info *l)
{
	struct nlattr *tb[DSMEM_SLOPE_LEASE_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_SLOPE_LEASE_ATTR_MAX, nest, ds_nl_slope_lease_policy) < 0 ||
	    check_widths(tb, DSMEM_SLOPE_LEASE_ATTR_MAX, ds_nl_slope_lease_policy) ||
	    !tb[DSMEM_SLOPE_LEASE_ATTR_BASE])
		return -EBADMSG;
	l->base = nla_get_u64(tb[DSMEM_SLOPE_LEASE_ATTR_BASE]);
	l->holder = get_u32(tb[DSMEM_SLOPE_LEASE_ATTR_HOLDER]);
	l->responsible = get_u32(tb[DSMEM_SLOPE_LEASE_ATTR_RESPONSIBLE]);
	l->held = tb[DSMEM_SLOPE_LEASE_ATTR_USED] != nullptr;
	l->used = get_u64(tb[DSMEM_SLOPE_LEASE_ATTR_USED]);
	return 0;
}

// A SLOPE_OBJ nest: its address names it; the rest may be absent.
int parse_slope_obj(struct nlattr *nest, ds_slope_object_info *o)
{
	struct nlattr *tb[DSMEM_SLOPE_OBJ_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_SLOPE_OBJ_ATTR_MAX, nest, ds_nl_slope_obj_policy) < 0 ||
	    check_widths(tb, DSMEM_SLOPE_OBJ_ATTR_MAX, ds_nl_slope_obj_policy) ||
	    !tb[DSMEM_SLOPE_OBJ_ATTR_ADDR])
		return -EBADMSG;
	o->addr = nla_get_u64(tb[DSMEM_SLOPE_OBJ_ATTR_ADDR]);
	o->pages = get_u64(tb[DSMEM_SLOPE_OBJ_ATTR_PAGES]);
	o->runs = get_u32(tb[DSMEM_SLOPE_OBJ_ATTR_RUNS]);
	return 0;
}

// A SLOPE_MIG nest: its id and state are required, the rest may be absent.
int parse_slope_mig_nest(struct nlattr *nest, ds_slope_mig_info *m)
{
	struct nlattr *tb[DSMEM_SLOPE_MIG_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_SLOPE_MIG_ATTR_MAX, nest, ds_nl_slope_mig_policy) < 0 ||
	    check_widths(tb, DSMEM_SLOPE_MIG_ATTR_MAX, ds_nl_slope_mig_policy) ||
	    !tb[DSMEM_SLOPE_MIG_ATTR_ID] || !tb[DSMEM_SLOPE_MIG_ATTR_STATE])
		return -EBADMSG;
	m->id = nla_get_u64(tb[DSMEM_SLOPE_MIG_ATTR_ID]);
	m->state = nla_get_u8(tb[DSMEM_SLOPE_MIG_ATTR_STATE]);
	m->error = get_u32(tb[DSMEM_SLOPE_MIG_ATTR_ERRNO]);
	m->peer = get_u32(tb[DSMEM_SLOPE_MIG_ATTR_PEER]);
	m->incoming = get_u8(tb[DSMEM_SLOPE_MIG_ATTR_INCOMING]);
	m->cookie = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_COOKIE]);
	m->pages = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_PAGES]);
	m->unit_shift = get_u8(tb[DSMEM_SLOPE_MIG_ATTR_UNIT_SHIFT]);
	m->rounds = get_u32(tb[DSMEM_SLOPE_MIG_ATTR_ROUNDS]);
	m->sent_units = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_SENT]);
	m->dirty_units = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_DIRTY]);
	m->pulled_units = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_PULLED]);
	m->failed_units = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_FAILED]);
	m->fault_waits = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_FAULT_WAITS]);
	m->prefill_ns = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_PREFILL_NS]);
	m->stop_ns = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_STOP_NS]);
	m->no_owner_ns = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_NO_OWNER_NS]);
	m->pull_ns = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_PULL_NS]);
	m->total_ns = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_TOTAL_NS]);
	m->first_round_ns = get_u64(tb[DSMEM_SLOPE_MIG_ATTR_FIRST_ROUND_NS]);
	return 0;
}

// The summary attributes of a SLOPE_GET message, if it has any.
bool has_slope_summary(struct nlattr **tb)
{
	return tb[DSMEM_ATTR_SLOPE_BASE] || tb[DSMEM_ATTR_SLOPE_SIZE] ||
	       tb[DSMEM_ATTR_SLOPE_PAGES] || tb[DSMEM_ATTR_SLOPE_LEASES_HELD] ||
	       tb[DSMEM_ATTR_SLOPE_LEASES_FREE];
}

void slope_summary(struct nlattr **tb, ds_slope_range_info *r)
{
	memset(r, 0, sizeof(*r));
	r->node_id = nla_get_u32(tb[DSMEM_ATTR_NODE_ID]);
	r->base = get_u64(tb[DSMEM_ATTR_SLOPE_BASE]);
	r->size = get_u64(tb[DSMEM_ATTR_SLOPE_SIZE]);
	r->pages = get_u64(tb[DSMEM_ATTR_SLOPE_PAGES]);
	r->leases_held = get_u32(tb[DSMEM_ATTR_SLOPE_LEASES_HELD]);
	r->leases_free = get_u32(tb[DSMEM_ATTR_SLOPE_LEASES_FREE]);
}

// A binary IPv4 or IPv6 address, in network byte order, as text.
int addr_to_string(struct nlattr *a, char *dst, size_t size)
{
	int af;

	switch (nla_len(a)) {
	case 4: af = AF_INET; break;
	case 16: af = AF_INET6; break;
	default: return -EBADMSG;
	}
	return inet_ntop(af, nla_data(a), dst, size) ? 0 : -EBADMSG;
}

}  // namespace

struct nl_msg *build_request(int family, uint8_t cmd, bool dump,
			     size_t attr_space)
{
	struct nl_msg *msg = attr_space ?
		nlmsg_alloc_size(NLMSG_HDRLEN + GENL_HDRLEN + attr_space) :
		nlmsg_alloc();
	if (!msg)
		return nullptr;
	int flags = dump ? NLM_F_DUMP : NLM_F_ACK;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
			 DSMEM_GENL_VERSION)) {
		nlmsg_free(msg);
		return nullptr;
	}
	return msg;
}

int put_dev_selector(struct nl_msg *msg, const char *name, uint32_t index)
{
	int ret = name ? nla_put_string(msg, DSMEM_ATTR_DEV_NAME, name)
		       : nla_put_u32(msg, DSMEM_ATTR_DEV_INDEX, index);
	return ret < 0 ? -EMSGSIZE : 0;
}

int parse_version(struct nl_msg *msg, ds_version *v)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_MODULE_VERSION] || !tb[DSMEM_ATTR_ABI_VERSION] ||
	    !tb[DSMEM_ATTR_FAMILY_VERSION] || !tb[DSMEM_ATTR_FEATURES])
		return -EBADMSG;
	memset(v, 0, sizeof(*v));
	v->abi_version = nla_get_u32(tb[DSMEM_ATTR_ABI_VERSION]);
	v->family_version = nla_get_u32(tb[DSMEM_ATTR_FAMILY_VERSION]);
	v->features = nla_get_u64(tb[DSMEM_ATTR_FEATURES]);
	return copy_string(v->module_version, sizeof(v->module_version),
			   tb[DSMEM_ATTR_MODULE_VERSION]);
}

int parse_dev(struct nl_msg *msg, ds_dev_info *dev)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_DEV_INDEX] || !tb[DSMEM_ATTR_DEV_NAME])
		return -EBADMSG;
	memset(dev, 0, sizeof(*dev));
	dev->index = nla_get_u32(tb[DSMEM_ATTR_DEV_INDEX]);
	ret = copy_string(dev->name, sizeof(dev->name), tb[DSMEM_ATTR_DEV_NAME]);
	if (!ret)
		ret = copy_string(dev->fw_version, sizeof(dev->fw_version),
				  tb[DSMEM_ATTR_DEV_FW_VERSION]);
	if (ret)
		return ret;
	if (tb[DSMEM_ATTR_DEV_NODE_GUID])
		dev->node_guid = nla_get_u64(tb[DSMEM_ATTR_DEV_NODE_GUID]);
	dev->node_type = get_u8(tb[DSMEM_ATTR_DEV_NODE_TYPE]);
	dev->atomic_cap = get_u8(tb[DSMEM_ATTR_DEV_ATOMIC_CAP]);
	dev->port_count = get_u32(tb[DSMEM_ATTR_DEV_PORT_COUNT]);
	dev->max_qp = get_u32(tb[DSMEM_ATTR_DEV_MAX_QP]);
	dev->max_cqe = get_u32(tb[DSMEM_ATTR_DEV_MAX_CQE]);
	dev->max_mr = get_u32(tb[DSMEM_ATTR_DEV_MAX_MR]);
	dev->max_qp_wr = get_u32(tb[DSMEM_ATTR_DEV_MAX_QP_WR]);

	if (tb[DSMEM_ATTR_DEV_PORTS]) {
		struct nlattr *a;
		int rem;

		nla_for_each_nested(a, tb[DSMEM_ATTR_DEV_PORTS], rem) {
			if (nla_type(a) != DSMEM_ATTR_PORT)
				return -EBADMSG;
			if (dev->nports == DS_DEV_PORTS_MAX)
				break;	// port_count still tells the total
			ret = parse_port(a, &dev->ports[dev->nports]);
			if (ret)
				return ret;
			dev->nports++;
		}
		if (rem > 0 && dev->nports < DS_DEV_PORTS_MAX)
			return -EBADMSG;	// trailing garbage in the nest
	}
	return 0;
}

int parse_stats(struct nl_msg *msg, std::vector<ds_stat> &out)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	struct nlattr *a;
	int rem, ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_STATS])
		return -EBADMSG;
	nla_for_each_nested(a, tb[DSMEM_ATTR_STATS], rem) {
		ds_stat s{};

		if (nla_type(a) != DSMEM_ATTR_STAT)
			return -EBADMSG;
		ret = parse_stat(a, &s);
		if (ret)
			return ret;
		out.push_back(s);
	}
	if (rem > 0)
		return -EBADMSG;
	return 0;
}

int parse_node(struct nl_msg *msg, ds_node_info *node, bool full)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_NODE_ID])
		return -EBADMSG;
	memset(node, 0, sizeof(*node));
	node->id = nla_get_u32(tb[DSMEM_ATTR_NODE_ID]);
	// Someone else's node is told as who owns it, and nothing more.
	if (full && !tb[DSMEM_ATTR_DEV_INDEX] && tb[DSMEM_ATTR_NODE_OWNER]) {
		node->flags = DS_NODE_F_NOT_YOURS;
		return 0;
	}
	if (full && (!tb[DSMEM_ATTR_DEV_INDEX] || !tb[DSMEM_ATTR_DEV_NAME] ||
		     !tb[DSMEM_ATTR_NODE_PORT]))
		return -EBADMSG;
	node->dev_index = get_u32(tb[DSMEM_ATTR_DEV_INDEX]);
	node->port = get_u16(tb[DSMEM_ATTR_NODE_PORT]);
	node->peer_count = get_u32(tb[DSMEM_ATTR_NODE_PEER_COUNT]);
	node->seg_count = get_u32(tb[DSMEM_ATTR_NODE_SEG_COUNT]);
	node->accept = get_u8(tb[DSMEM_ATTR_NODE_ACCEPT]);
	if (tb[DSMEM_ATTR_NODE_KEY] &&
	    (ret = copy_string(node->key, sizeof(node->key), tb[DSMEM_ATTR_NODE_KEY])))
		return ret;
	return copy_string(node->dev_name, sizeof(node->dev_name),
			   tb[DSMEM_ATTR_DEV_NAME]);
}

int parse_node_owner(struct nl_msg *msg, ds_node_owner *owner)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_NODE_OWNER] || !tb[DSMEM_ATTR_NODE_GROUP] ||
	    !tb[DSMEM_ATTR_NODE_MODE])
		return -EBADMSG;
	memset(owner, 0, sizeof(*owner));
	owner->uid = nla_get_u32(tb[DSMEM_ATTR_NODE_OWNER]);
	owner->gid = nla_get_u32(tb[DSMEM_ATTR_NODE_GROUP]);
	owner->mode = nla_get_u16(tb[DSMEM_ATTR_NODE_MODE]);
	return 0;
}

int split_dev_list(const char *list, std::vector<std::string> &names,
		   std::vector<int> &numas, std::string &err)
{
	names.clear();
	numas.clear();
	if (!list) {
		err = "no device name";
		return -EINVAL;
	}
	std::string_view rest(list);
	for (;;) {
		size_t comma = rest.find(',');
		std::string_view name = rest.substr(0, comma);
		size_t at = name.rfind('@');
		int numa = kNumaAsk;

		// "@" and a number end it: a device name may hold an "@" too
		if (at != std::string_view::npos) {
			std::string_view n = name.substr(at + 1);
			int v;
			auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);

			if (!n.empty() && end == n.data() + n.size()) {
				if (ec != std::errc() || v < -1) {
					err = "the NUMA node in \"" + std::string(name) +
					      "\" is neither -1 nor a node number (NAME[@NUMA])";
					return -EINVAL;
				}
				numa = v;
				name = name.substr(0, at);
			}
		}

		if (name.empty()) {
			err = "an empty device name in \"" + std::string(list) + "\"";
			return -EINVAL;
		}
		if (name.size() >= DS_NAME_MAX) {
			err = "device name \"" + std::string(name) + "\" is longer than " +
			      std::to_string(DS_NAME_MAX - 1) + " bytes";
			return -EINVAL;
		}
		for (const auto &seen : names)
			if (seen == name) {
				err = "device \"" + seen + "\" is named twice";
				return -EINVAL;
			}
		if (names.size() == DS_NODE_DEVS_MAX) {
			err = "a node has at most " + std::to_string(DS_NODE_DEVS_MAX) + " devices";
			return -EINVAL;
		}
		names.emplace_back(name);
		numas.push_back(numa);
		if (comma == std::string_view::npos)
			return 0;
		rest.remove_prefix(comma + 1);
	}
}

void put_node_devs(attrs &a, const std::vector<std::string> &names,
		   const std::vector<int> &numas)
{
	auto numa = [&numas](size_t i) { return i < numas.size() ? numas[i] : kNumaAsk; };

	if (names.size() == 1 && numa(0) == kNumaAsk) {
		a.str(DSMEM_ATTR_DEV_NAME, names[0].c_str());
		return;
	}
	struct nlattr *list = a.begin(DSMEM_ATTR_NODE_DEVS);
	for (size_t i = 0; i < names.size(); i++) {
		struct nlattr *one = a.begin(DSMEM_ATTR_NODE_DEV);
		a.str(DSMEM_NODE_DEV_ATTR_NAME, names[i].c_str());
		if (numa(i) != kNumaAsk)
			a.s32(DSMEM_NODE_DEV_ATTR_NUMA, numa(i));
		a.end(one);
	}
	a.end(list);
}

int parse_node_devs(struct nl_msg *msg, std::vector<ds_node_dev> &out)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	out.clear();
	if (!tb[DSMEM_ATTR_NODE_DEVS]) {
		// a module from before node-devs: its one device
		ds_node_dev d{};

		if (!tb[DSMEM_ATTR_DEV_INDEX] || !tb[DSMEM_ATTR_DEV_NAME])
			return -EBADMSG;
		d.index = nla_get_u32(tb[DSMEM_ATTR_DEV_INDEX]);
		d.numa = -1;
		ret = copy_string(d.name, sizeof(d.name), tb[DSMEM_ATTR_DEV_NAME]);
		if (ret)
			return ret;
		out.push_back(d);
		return 0;
	}
	ret = for_each_entry(tb[DSMEM_ATTR_NODE_DEVS], DSMEM_ATTR_NODE_DEV,
			     [&out](struct nlattr *a) {
		struct nlattr *dt[DSMEM_NODE_DEV_ATTR_MAX + 1];
		ds_node_dev d{};

		if (nla_parse_nested(dt, DSMEM_NODE_DEV_ATTR_MAX, a, ds_nl_node_dev_policy) < 0 ||
		    check_widths(dt, DSMEM_NODE_DEV_ATTR_MAX, ds_nl_node_dev_policy) ||
		    !dt[DSMEM_NODE_DEV_ATTR_INDEX] || !dt[DSMEM_NODE_DEV_ATTR_NAME])
			return -EBADMSG;
		d.index = nla_get_u32(dt[DSMEM_NODE_DEV_ATTR_INDEX]);
		d.numa = dt[DSMEM_NODE_DEV_ATTR_NUMA] ?
			 nla_get_s32(dt[DSMEM_NODE_DEV_ATTR_NUMA]) : -1;
		int err = copy_string(d.name, sizeof(d.name), dt[DSMEM_NODE_DEV_ATTR_NAME]);
		if (err)
			return err;
		out.push_back(d);
		return 0;
	});
	if (ret)
		return ret;
	return out.empty() ? -EBADMSG : 0;	// a node has a device
}

int parse_key(struct nl_msg *msg, ds_key_info *key, bool)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_KEY_NAME] || !tb[DSMEM_ATTR_KEY_LEN])
		return -EBADMSG;
	memset(key, 0, sizeof(*key));
	key->len = nla_get_u32(tb[DSMEM_ATTR_KEY_LEN]);
	return copy_string(key->name, sizeof(key->name), tb[DSMEM_ATTR_KEY_NAME]);
}

int parse_peer(struct nl_msg *msg, ds_peer_info *peer, bool full)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_NODE_ID] || !tb[DSMEM_ATTR_PEER_ID])
		return -EBADMSG;
	if (full && (!tb[DSMEM_ATTR_PEER_ADDR] || !tb[DSMEM_ATTR_PEER_PORT] ||
		     !tb[DSMEM_ATTR_PEER_STATE]))
		return -EBADMSG;
	memset(peer, 0, sizeof(*peer));
	peer->node_id = nla_get_u32(tb[DSMEM_ATTR_NODE_ID]);
	peer->id = nla_get_u32(tb[DSMEM_ATTR_PEER_ID]);
	peer->remote_node = get_u32(tb[DSMEM_ATTR_PEER_REMOTE_NODE]);
	peer->state = get_u8(tb[DSMEM_ATTR_PEER_STATE]);
	peer->passive = get_u8(tb[DSMEM_ATTR_PEER_PASSIVE]);
	peer->listen = tb[DSMEM_ATTR_PEER_LISTEN] != nullptr;
	if (tb[DSMEM_ATTR_PEER_PATHS])
		peer->paths = static_cast<uint8_t>(std::min<uint32_t>(
			nla_get_u32(tb[DSMEM_ATTR_PEER_PATHS]), UINT8_MAX));
	peer->port = get_u16(tb[DSMEM_ATTR_PEER_PORT]);
	peer->connects = get_u32(tb[DSMEM_ATTR_PEER_CONNECTS]);
	peer->last_errno = get_u32(tb[DSMEM_ATTR_PEER_ERRNO]);
	if (tb[DSMEM_ATTR_PEER_ADDR]) {
		ret = addr_to_string(tb[DSMEM_ATTR_PEER_ADDR], peer->addr,
				     sizeof(peer->addr));
		if (ret)
			return ret;
	}
	if (!tb[DSMEM_ATTR_PEER_REMOTE_SEGS])
		return 0;
	return for_each_entry(tb[DSMEM_ATTR_PEER_REMOTE_SEGS], DSMEM_ATTR_REMOTE_SEG,
			      [peer](struct nlattr *a) {
		ds_remote_seg r;
		int err = parse_rseg(a, &r);

		if (err)
			return err;
		if (peer->nrsegs < DS_PEER_RSEGS_MAX)
			peer->rsegs[peer->nrsegs++] = r;
		peer->rseg_total++;	// all of them, also those not kept
		return 0;
	});
}

int parse_seg(struct nl_msg *msg, ds_seg_info *seg, bool full)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_NODE_ID] || !tb[DSMEM_ATTR_SEG_ID])
		return -EBADMSG;
	if (full && (!tb[DSMEM_ATTR_SEG_SIZE] || !tb[DSMEM_ATTR_SEG_ADDR]))
		return -EBADMSG;
	memset(seg, 0, sizeof(*seg));
	seg->node_id = nla_get_u32(tb[DSMEM_ATTR_NODE_ID]);
	seg->id = nla_get_u32(tb[DSMEM_ATTR_SEG_ID]);
	seg->size = get_u64(tb[DSMEM_ATTR_SEG_SIZE]);
	seg->addr = get_u64(tb[DSMEM_ATTR_SEG_ADDR]);
	seg->used = get_u64(tb[DSMEM_ATTR_SEG_USED]);
	seg->numa = tb[DSMEM_ATTR_SEG_NUMA] ? nla_get_s32(tb[DSMEM_ATTR_SEG_NUMA]) : -1;
	seg->page_size = get_u32(tb[DSMEM_ATTR_SEG_PAGE_SIZE]);
	seg->translate = get_u8(tb[DSMEM_ATTR_SEG_TRANSLATE]);
	if (!tb[DSMEM_ATTR_SEG_GRANTS])
		return 0;
	return for_each_entry(tb[DSMEM_ATTR_SEG_GRANTS], DSMEM_ATTR_GRANT,
			      [seg](struct nlattr *a) {
		ds_grant_info g;
		int err = parse_grant(a, &g);

		if (err)
			return err;
		if (seg->ngrants < DS_SEG_GRANTS_MAX)
			seg->grants[seg->ngrants++] = g;
		seg->grant_total++;
		return 0;
	});
}

int parse_rdm_alloc(struct nl_msg *msg, uint64_t *va, uint64_t *pa)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_RDM_ADDR] || !tb[DSMEM_ATTR_RDM_PA])
		return -EBADMSG;
	*va = nla_get_u64(tb[DSMEM_ATTR_RDM_ADDR]);
	*pa = nla_get_u64(tb[DSMEM_ATTR_RDM_PA]);
	return 0;
}

int parse_rdm_read(struct nl_msg *msg, uint64_t va, void *buf, size_t len)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	struct nlattr *data = tb[DSMEM_ATTR_RDM_DATA];
	if (!data || static_cast<size_t>(nla_len(data)) != len ||
	    len > DSMEM_RDM_DATA_MAX)
		return -EBADMSG;
	if (tb[DSMEM_ATTR_RDM_ADDR] && nla_get_u64(tb[DSMEM_ATTR_RDM_ADDR]) != va)
		return -EBADMSG;	// the answer to another question
	if (len)
		memcpy(buf, nla_data(data), len);
	return 0;
}

int parse_token(struct nl_msg *msg, ds_token_info *t)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	union dsmem_token tok = {};
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	struct nlattr *data = tb[DSMEM_ATTR_TOKEN_DATA];
	if (!tb[DSMEM_ATTR_TOKEN_HANDLE] || !tb[DSMEM_ATTR_TOKEN_TYPE] || !data ||
	    !tb[DSMEM_ATTR_TOKEN_LAYER] || !tb[DSMEM_ATTR_TOKEN_VERSION])
		return -EBADMSG;
	memset(t, 0, sizeof(*t));
	t->handle = nla_get_u32(tb[DSMEM_ATTR_TOKEN_HANDLE]);
	t->type = nla_get_u8(tb[DSMEM_ATTR_TOKEN_TYPE]);
	// the token must be whole, of its layout version, and the one the
	// handle names (type and index)
	size_t len = static_cast<size_t>(nla_len(data));
	if (len > sizeof(tok))
		return -EBADMSG;
	memcpy(&tok, nla_data(data), len);
	if (dstc_token_check(&tok, static_cast<unsigned int>(len)) ||
	    tok.hdr.type != t->type || DSMEM_HANDLE_TYPE(t->handle) != t->type ||
	    DSMEM_HANDLE_INDEX(t->handle) != tok.hdr.index)
		return -EBADMSG;
	memcpy(t->data, &tok, len);
	t->data_len = static_cast<uint8_t>(len);
	t->index = tok.hdr.index;
	t->layer = nla_get_u8(tb[DSMEM_ATTR_TOKEN_LAYER]);
	t->flags = get_u8(tb[DSMEM_ATTR_TOKEN_FLAGS]);
	t->version = nla_get_u32(tb[DSMEM_ATTR_TOKEN_VERSION]);
	t->offset = get_u32(tb[DSMEM_ATTR_TOKEN_OFFSET]);
	t->node = get_u32(tb[DSMEM_ATTR_NODE_ID]);
	t->hits = get_u32(tb[DSMEM_ATTR_TOKEN_HITS]);
	t->accesses = get_u64(tb[DSMEM_ATTR_TOKEN_ACCESSES]);
	return copy_string(t->object, sizeof(t->object), tb[DSMEM_ATTR_TOKEN_OBJECT]);
}

int parse_cache(struct nl_msg *msg, ds_cache_info *c)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	struct nlattr *pt[DSMEM_CACHE_P_NR + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_CACHE_PARAMS] || !tb[DSMEM_ATTR_CACHE_TIERS] ||
	    !tb[DSMEM_ATTR_CACHE_STATS] || !tb[DSMEM_ATTR_CACHE_PROMOTE_L1] ||
	    !tb[DSMEM_ATTR_CACHE_PROMOTE_L2] || !tb[DSMEM_ATTR_CACHE_ENTRIES])
		return -EBADMSG;
	memset(c, 0, sizeof(*c));

	// every parameter this library knows; a newer module's are skipped
	if (nla_parse_nested(pt, DSMEM_CACHE_P_NR, tb[DSMEM_ATTR_CACHE_PARAMS],
			     ds_nl_cache_param_policy) < 0 ||
	    check_widths(pt, DSMEM_CACHE_P_NR, ds_nl_cache_param_policy))
		return -EBADMSG;
	for (int i = 0; i < DSMEM_CACHE_P_NR; i++) {
		if (!pt[i + 1])
			return -EBADMSG;
		c->params[i] = nla_get_u64(pt[i + 1]);
	}
	c->nparams = DSMEM_CACHE_P_NR;

	// L1, L2 and L3, once each, in any order
	bool seen[DS_CACHE_TIERS] = {};
	ret = for_each_entry(tb[DSMEM_ATTR_CACHE_TIERS], DSMEM_ATTR_CACHE_TIER,
			     [c, &seen](struct nlattr *a) {
		ds_cache_tier t;
		int err = parse_tier(a, &t);

		if (err)
			return err;
		if (t.id > DS_CACHE_TIERS)
			return 0;	// a tier of a newer module
		if (seen[t.id - 1])
			return -EBADMSG;
		seen[t.id - 1] = true;
		c->tiers[t.id - 1] = t;
		return 0;
	});
	if (ret)
		return ret;
	for (bool s : seen)
		if (!s)
			return -EBADMSG;

	ret = for_each_entry(tb[DSMEM_ATTR_CACHE_STATS], DSMEM_ATTR_STAT,
			     [c](struct nlattr *a) {
		ds_stat s;
		int err = parse_stat(a, &s);

		if (err)
			return err;
		if (c->nstats < DS_CACHE_STATS_MAX)
			c->stats[c->nstats++] = s;
		c->stat_total++;	// all of them, also those not kept
		return 0;
	});
	if (ret)
		return ret;

	c->promote_l1 = nla_get_u32(tb[DSMEM_ATTR_CACHE_PROMOTE_L1]);
	c->promote_l2 = nla_get_u32(tb[DSMEM_ATTR_CACHE_PROMOTE_L2]);
	c->entries = nla_get_u32(tb[DSMEM_ATTR_CACHE_ENTRIES]);
	c->pinned = get_u32(tb[DSMEM_ATTR_CACHE_PINNED]);
	c->queued = get_u32(tb[DSMEM_ATTR_CACHE_QUEUED]);
	c->migrate_rate = get_u64(tb[DSMEM_ATTR_CACHE_MIGRATE_RATE]);
	c->migrate_lat_mean_ns = get_u64(tb[DSMEM_ATTR_CACHE_MIGRATE_LAT_MEAN]);
	c->migrate_lat_p99_ns = get_u64(tb[DSMEM_ATTR_CACHE_MIGRATE_LAT_P99]);
	c->dma_rate = get_u64(tb[DSMEM_ATTR_CACHE_DMA_RATE]);
	c->dma_prefetch_rate = get_u64(tb[DSMEM_ATTR_CACHE_DMA_PREFETCH_RATE]);
	c->trace_active = get_u8(tb[DSMEM_ATTR_TRACE_ACTIVE]);
	c->trace_records = get_u64(tb[DSMEM_ATTR_TRACE_RECORDS]);
	c->trace_dropped = get_u64(tb[DSMEM_ATTR_TRACE_DROPPED]);
	return 0;
}

int parse_trace(struct nl_msg *msg, ds_trace_info *t, bool full)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (full && (!tb[DSMEM_ATTR_TRACE_RECORDS] || !tb[DSMEM_ATTR_TRACE_DROPPED]))
		return -EBADMSG;
	memset(t, 0, sizeof(*t));
	t->records = get_u64(tb[DSMEM_ATTR_TRACE_RECORDS]);
	t->dropped = get_u64(tb[DSMEM_ATTR_TRACE_DROPPED]);
	t->error = get_u32(tb[DSMEM_ATTR_TRACE_ERRNO]);
	return 0;
}

int parse_bench(struct nl_msg *msg, ds_cache_bench_result *r)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	struct nlattr *bt[DSMEM_BENCH_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_BENCH_RESULT] ||
	    nla_parse_nested(bt, DSMEM_BENCH_ATTR_MAX, tb[DSMEM_ATTR_BENCH_RESULT],
			     ds_nl_bench_policy) < 0 ||
	    check_widths(bt, DSMEM_BENCH_ATTR_MAX, ds_nl_bench_policy) ||
	    !bt[DSMEM_BENCH_ATTR_ACCESSES])
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	r->accesses = nla_get_u64(bt[DSMEM_BENCH_ATTR_ACCESSES]);
	r->hits_l1 = get_u64(bt[DSMEM_BENCH_ATTR_HITS_L1]);
	r->hits_l2 = get_u64(bt[DSMEM_BENCH_ATTR_HITS_L2]);
	r->hits_l3 = get_u64(bt[DSMEM_BENCH_ATTR_HITS_L3]);
	r->modeled_ns = get_u64(bt[DSMEM_BENCH_ATTR_MODELED_NS]);
	r->l1_hit_mean_ns = get_u64(bt[DSMEM_BENCH_ATTR_L1_HIT_MEAN_NS]);
	r->l1_hit_p99_ns = get_u64(bt[DSMEM_BENCH_ATTR_L1_HIT_P99_NS]);
	r->miss_mean_ns = get_u64(bt[DSMEM_BENCH_ATTR_MISS_MEAN_NS]);
	r->miss_p99_ns = get_u64(bt[DSMEM_BENCH_ATTR_MISS_P99_NS]);
	r->migrations = get_u64(bt[DSMEM_BENCH_ATTR_MIGRATIONS]);
	return 0;
}

int parse_replay(struct nl_msg *msg, ds_cache_replay_result *r,
		 std::vector<ds_cache_move> &moves)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	struct nlattr *m = tb[DSMEM_ATTR_REPLAY_MOVES];
	if (!tb[DSMEM_ATTR_CACHE_STATS] || !m ||
	    nla_len(m) % sizeof(struct dsmem_cache_move))
		return -EBADMSG;
	r->truncated = tb[DSMEM_ATTR_REPLAY_TRUNCATED] != nullptr;
	r->nstats = 0;
	r->stat_total = 0;
	ret = for_each_entry(tb[DSMEM_ATTR_CACHE_STATS], DSMEM_ATTR_STAT,
			     [r](struct nlattr *a) {
		ds_stat s;
		int err = parse_stat(a, &s);

		if (err)
			return err;
		if (r->nstats < DS_CACHE_STATS_MAX)
			r->stats[r->nstats++] = s;
		r->stat_total++;	// all of them, also those not kept
		return 0;
	});
	if (ret)
		return ret;

	size_t n = nla_len(m) / sizeof(struct dsmem_cache_move);
	auto *p = static_cast<const char *>(nla_data(m));
	moves.clear();
	moves.reserve(n);
	for (size_t i = 0; i < n; i++) {
		struct dsmem_cache_move mv;

		memcpy(&mv, p + i * sizeof(mv), sizeof(mv));
		if (mv.from < DS_TIER_L1 || mv.from > DS_TIER_L3 ||
		    mv.to < DS_TIER_L1 || mv.to > DS_TIER_L3)
			return -EBADMSG;
		moves.push_back(ds_cache_move{mv.eid, mv.from, mv.to, 0});
	}
	return 0;
}

int parse_slope_range(struct nl_msg *msg, ds_slope_range_info *r)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_NODE_ID])
		return -EBADMSG;
	slope_summary(tb, r);
	return 0;
}

int parse_slope_dump(struct nl_msg *msg, slope_dump &out)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	bool summary = has_slope_summary(tb);
	struct nlattr *lease = tb[DSMEM_ATTR_SLOPE_LEASE];
	struct nlattr *mig = tb[DSMEM_ATTR_SLOPE_MIG];
	struct nlattr *obj = tb[DSMEM_ATTR_SLOPE_OBJ];
	if (!summary && !lease && !mig && !obj)
		return 0;	// a kind of message of a newer module's
	if (!tb[DSMEM_ATTR_NODE_ID])
		return -EBADMSG;
	uint32_t node = nla_get_u32(tb[DSMEM_ATTR_NODE_ID]);

	ds_slope_lease_info l{};
	ds_slope_mig_info m{};
	ds_slope_object_info o{};
	if (lease && (ret = parse_slope_lease(lease, &l)))
		return ret;
	if (obj && (ret = parse_slope_obj(obj, &o)))
		return ret;
	if (mig && (ret = parse_slope_mig_nest(mig, &m)))
		return ret;
	if (summary) {
		ds_slope_range_info r;
		slope_summary(tb, &r);
		out.ranges.push_back(r);
	}
	if (lease) {
		l.node_id = node;
		out.leases.push_back(l);
	}
	if (mig) {
		m.node_id = node;
		out.migs.push_back(m);
	}
	if (obj) {
		o.node_id = node;
		out.objects.push_back(o);
	}
	return 0;
}

int parse_slope_mig(struct nl_msg *msg, ds_slope_mig_info *m)
{
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	int ret = parse_top(msg, tb);

	if (ret)
		return ret;
	if (!tb[DSMEM_ATTR_NODE_ID] || !tb[DSMEM_ATTR_SLOPE_MIG])
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	ret = parse_slope_mig_nest(tb[DSMEM_ATTR_SLOPE_MIG], m);
	if (ret)
		return ret;
	m->node_id = nla_get_u32(tb[DSMEM_ATTR_NODE_ID]);
	return 0;
}

}  // namespace dsmem::detail
