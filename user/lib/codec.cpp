// SPDX-License-Identifier: BSD-2-Clause
// Encoding of requests to and decoding of replies from the "dsmem" family.
// Decoding checks every attribute's length: a short or oversized attribute
// is -EBADMSG, never a read past the message.
#include <cerrno>
#include <cstring>

#include <linux/dsmem_netlink.h>

#include "ds_internal.hpp"

namespace dsmem::detail {

namespace {

struct nla_policy top_policy[DSMEM_ATTR_MAX + 1];
struct nla_policy port_policy[DSMEM_PORT_ATTR_MAX + 1];
struct nla_policy stat_policy[DSMEM_STAT_ATTR_MAX + 1];

// libnl checks minimum lengths; exact widths are checked here.
const bool policies_ready = [] {
	auto fixed = [](struct nla_policy &p, uint16_t type, uint16_t len) {
		p.type = type;
		p.minlen = len;
		p.maxlen = len;
	};
	fixed(top_policy[DSMEM_ATTR_ABI_VERSION], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_FAMILY_VERSION], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_FEATURES], NLA_U64, 8);
	fixed(top_policy[DSMEM_ATTR_DEV_INDEX], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_DEV_NODE_GUID], NLA_U64, 8);
	fixed(top_policy[DSMEM_ATTR_DEV_NODE_TYPE], NLA_U8, 1);
	fixed(top_policy[DSMEM_ATTR_DEV_PORT_COUNT], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_DEV_MAX_QP], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_DEV_MAX_CQE], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_DEV_MAX_MR], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_DEV_MAX_QP_WR], NLA_U32, 4);
	fixed(top_policy[DSMEM_ATTR_DEV_ATOMIC_CAP], NLA_U8, 1);
	top_policy[DSMEM_ATTR_MODULE_VERSION].type = NLA_STRING;
	top_policy[DSMEM_ATTR_DEV_NAME].type = NLA_STRING;
	top_policy[DSMEM_ATTR_DEV_FW_VERSION].type = NLA_STRING;
	top_policy[DSMEM_ATTR_DEV_PORTS].type = NLA_NESTED;
	top_policy[DSMEM_ATTR_STATS].type = NLA_NESTED;

	fixed(port_policy[DSMEM_PORT_ATTR_INDEX], NLA_U32, 4);
	fixed(port_policy[DSMEM_PORT_ATTR_STATE], NLA_U8, 1);
	fixed(port_policy[DSMEM_PORT_ATTR_ACTIVE_MTU], NLA_U32, 4);
	fixed(port_policy[DSMEM_PORT_ATTR_LINK_LAYER], NLA_U8, 1);
	port_policy[DSMEM_PORT_ATTR_NETDEV].type = NLA_STRING;

	stat_policy[DSMEM_STAT_ATTR_NAME].type = NLA_STRING;
	fixed(stat_policy[DSMEM_STAT_ATTR_VALUE], NLA_U64, 8);
	return true;
}();

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
	(void)policies_ready;

	if (!genlmsg_valid_hdr(nlh, 0))
		return -EBADMSG;
	if (genlmsg_parse(nlh, 0, tb, DSMEM_ATTR_MAX, top_policy) < 0)
		return -EBADMSG;
	// libnl ignores a truncated trailing attribute; a reply must not have one
	struct nlattr *a;
	int rem;
	nla_for_each_attr(a, genlmsg_attrdata(static_cast<struct genlmsghdr *>(nlmsg_data(nlh)), 0),
			  genlmsg_attrlen(static_cast<struct genlmsghdr *>(nlmsg_data(nlh)), 0), rem) {
	}
	if (rem != 0)
		return -EBADMSG;
	return check_widths(tb, DSMEM_ATTR_MAX, top_policy);
}

int parse_port(struct nlattr *nest, ds_port_info *p)
{
	struct nlattr *tb[DSMEM_PORT_ATTR_MAX + 1];

	if (nla_parse_nested(tb, DSMEM_PORT_ATTR_MAX, nest, port_policy) < 0 ||
	    check_widths(tb, DSMEM_PORT_ATTR_MAX, port_policy))
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

}  // namespace

struct nl_msg *build_request(int family, uint8_t cmd, bool dump)
{
	struct nl_msg *msg = nlmsg_alloc();
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
		struct nlattr *st[DSMEM_STAT_ATTR_MAX + 1];
		ds_stat s{};

		if (nla_type(a) != DSMEM_ATTR_STAT ||
		    nla_parse_nested(st, DSMEM_STAT_ATTR_MAX, a, stat_policy) < 0 ||
		    check_widths(st, DSMEM_STAT_ATTR_MAX, stat_policy) ||
		    !st[DSMEM_STAT_ATTR_NAME] || !st[DSMEM_STAT_ATTR_VALUE])
			return -EBADMSG;
		ret = copy_string(s.name, sizeof(s.name), st[DSMEM_STAT_ATTR_NAME]);
		if (ret)
			return ret;
		s.value = nla_get_u64(st[DSMEM_STAT_ATTR_VALUE]);
		out.push_back(s);
	}
	if (rem > 0)
		return -EBADMSG;
	return 0;
}

}  // namespace dsmem::detail
