// SPDX-License-Identifier: BSD-2-Clause
// libdsuser control path for what dsmem keeps: nodes, peers, segments,
// their grants, the message-based remote-memory service (RDM_*) and the
// Slope range's leases and migrations (SLOPE_GET).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <arpa/inet.h>

#include <linux/dsmem_netlink.h>

#include "ds_internal.hpp"

using namespace dsmem::detail;

#define DS_EXPORT extern "C" __attribute__((visibility("default")))
#define DS_STR_(x) #x
#define DS_STR(x) DS_STR_(x)

static_assert(DS_PERM_READ == DSMEM_PERM_READ && DS_PERM_WRITE == DSMEM_PERM_WRITE);
static_assert(DS_RDM_DATA_MAX == DSMEM_RDM_DATA_MAX);
static_assert(DS_NODE_DEVS_MAX == DSMEM_NODE_DEVS_MAX);

namespace {

// The caller's namespace (netnsid -1), or the one it knows by netnsid.
void put_target(attrs &a, int32_t netnsid)
{
	if (netnsid >= 0)
		a.s32(DSMEM_ATTR_TARGET_NETNSID, netnsid);
}

// A dump into a malloc'd array; node_id 0 leaves out the node filter,
// a netnsid below 0 the target namespace (the caller's own).
template <typename T>
int dump(ds_ctx *ctx, uint8_t cmd, uint32_t node_id,
	 int (*parse)(struct nl_msg *, T *, bool), T **arr, size_t *count,
	 int32_t netnsid = -1)
{
	std::vector<T> out;
	int ret = request(ctx, cmd, true, [node_id, netnsid](attrs &a) {
		if (node_id)
			a.u32(DSMEM_ATTR_NODE_ID, node_id);
		put_target(a, netnsid);
	}, [&out, parse](struct nl_msg *m) {
		T item;
		int r = parse(m, &item, true);
		if (!r)
			out.push_back(item);
		return r;
	});
	return ret ? ret : to_c_array(ctx, out, arr, count);
}

}  // namespace

DS_EXPORT int ds_node_add(struct ds_ctx *ctx, uint32_t id, const char *dev,
			  uint16_t port)
{
	return ds_node_add_keyed(ctx, id, dev, port, DS_KEY_DEFAULT);
}

DS_EXPORT int ds_node_add_keyed(struct ds_ctx *ctx, uint32_t id, const char *dev,
				uint16_t port, const char *key)
{
	std::vector<std::string> devs;
	std::vector<int> numas;
	std::string err;

	if (split_dev_list(dev, devs, numas, err))
		return fail(ctx, -EINVAL, err.c_str());
	if (std::any_of(numas.begin(), numas.end(), [](int n) { return n != kNumaAsk; })) {
		ds_version v;
		int ret = ds_version_get(ctx, &v);

		if (ret)
			return ret;
		if (!(v.features & DSMEM_FEAT_NUMA))
			return fail(ctx, -EOPNOTSUPP,
				    "this dsmem module takes no NUMA node for a device (NAME@NUMA)");
	}
	return request(ctx, DSMEM_CMD_NODE_NEW, false, [&](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
		put_node_devs(a, devs, numas);
		a.u16(DSMEM_ATTR_NODE_PORT, port);
		if (key)
			a.str(DSMEM_ATTR_NODE_KEY, key);
		else
			a.flag(DSMEM_ATTR_NODE_INSECURE);
	}, ignore_replies);
}

DS_EXPORT int ds_key_add(struct ds_ctx *ctx, const char *name, const void *key,
			 size_t len, int replace)
{
	if (!name || !*name || strlen(name) >= DS_KEY_NAME_MAX)
		return fail(ctx, -EINVAL, ("a key name is 1 to " +
					   std::to_string(DS_KEY_NAME_MAX - 1) + " bytes").c_str());
	if (!key || len < DS_KEY_MIN || len > DS_KEY_MAX)
		return fail(ctx, -EINVAL, ("a key is " + std::to_string(DS_KEY_MIN) + " to " +
					   std::to_string(DS_KEY_MAX) + " bytes, not " +
					   std::to_string(len)).c_str());
	return request(ctx, DSMEM_CMD_KEY_NEW, false, [&](attrs &a) {
		a.str(DSMEM_ATTR_KEY_NAME, name);
		a.bin(DSMEM_ATTR_KEY_DATA, key, len);
		if (replace)
			a.flag(DSMEM_ATTR_KEY_REPLACE);
	}, ignore_replies);
}

DS_EXPORT int ds_key_del(struct ds_ctx *ctx, const char *name)
{
	if (!name)
		return fail(ctx, -EINVAL, "no key name");
	return request(ctx, DSMEM_CMD_KEY_DEL, false, [&](attrs &a) {
		a.str(DSMEM_ATTR_KEY_NAME, name);
	}, ignore_replies);
}

DS_EXPORT int ds_key_list(struct ds_ctx *ctx, struct ds_key_info **keys, size_t *count)
{
	return dump(ctx, DSMEM_CMD_KEY_GET, 0, parse_key, keys, count);
}

namespace {

int node_del(ds_ctx *ctx, int32_t netnsid, uint32_t id)
{
	return request(ctx, DSMEM_CMD_NODE_DEL, false, [id, netnsid](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
		put_target(a, netnsid);
	}, ignore_replies);
}

int node_get(ds_ctx *ctx, int32_t netnsid, uint32_t id, ds_node_info *node)
{
	return request_one(ctx, DSMEM_CMD_NODE_GET, [id, netnsid](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
		put_target(a, netnsid);
	}, [node](struct nl_msg *m) { return parse_node(m, node, true); });
}

// A netnsid the caller gave: -EINVAL, said, when negative (which would
// otherwise mean its own namespace).
int check_netnsid(ds_ctx *ctx, int32_t netnsid)
{
	return netnsid < 0 ? fail(ctx, -EINVAL, "a namespace id is not negative") : 0;
}

}  // namespace

DS_EXPORT int ds_node_del(struct ds_ctx *ctx, uint32_t id)
{
	return node_del(ctx, -1, id);
}

DS_EXPORT int ds_node_get(struct ds_ctx *ctx, uint32_t id,
			  struct ds_node_info *node)
{
	return node_get(ctx, -1, id, node);
}

DS_EXPORT int ds_node_list(struct ds_ctx *ctx, struct ds_node_info **nodes,
			   size_t *count)
{
	return dump(ctx, DSMEM_CMD_NODE_GET, 0, parse_node, nodes, count);
}

DS_EXPORT int ds_node_del_netns(struct ds_ctx *ctx, int32_t netnsid, uint32_t id)
{
	int ret = check_netnsid(ctx, netnsid);

	return ret ? ret : node_del(ctx, netnsid, id);
}

DS_EXPORT int ds_node_get_netns(struct ds_ctx *ctx, int32_t netnsid, uint32_t id,
				struct ds_node_info *node)
{
	int ret = check_netnsid(ctx, netnsid);

	return ret ? ret : node_get(ctx, netnsid, id, node);
}

DS_EXPORT int ds_node_list_netns(struct ds_ctx *ctx, int32_t netnsid,
				 struct ds_node_info **nodes, size_t *count)
{
	int ret = check_netnsid(ctx, netnsid);

	return ret ? ret : dump(ctx, DSMEM_CMD_NODE_GET, 0, parse_node, nodes, count, netnsid);
}

DS_EXPORT int ds_node_devs(struct ds_ctx *ctx, uint32_t id, struct ds_node_dev *devs,
			   unsigned int max)
{
	std::vector<ds_node_dev> out;

	if (!devs && max)
		return fail(ctx, -EINVAL, "no array to fill");
	int ret = request_one(ctx, DSMEM_CMD_NODE_GET, [id](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
	}, [&out](struct nl_msg *m) {
		ds_node_info node;
		int r = parse_node(m, &node, true);
		if (!r && (node.flags & DS_NODE_F_NOT_YOURS))
			r = -EACCES;
		return r ? r : parse_node_devs(m, out);
	});
	if (ret == -EACCES)
		return fail(ctx, ret, "the node's owner, group and mode do not let you see its devices");
	if (ret)
		return ret;
	for (size_t i = 0; i < out.size() && i < max; i++)
		devs[i] = out[i];
	return static_cast<int>(out.size());
}

DS_EXPORT int ds_node_set_accept(struct ds_ctx *ctx, uint32_t id, int accept)
{
	if (accept != DS_ACCEPT_PEERS && accept != DS_ACCEPT_KEYED)
		return fail(ctx, -EINVAL, "admission is DS_ACCEPT_PEERS or DS_ACCEPT_KEYED");
	return request(ctx, DSMEM_CMD_NODE_SET, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
		a.u8(DSMEM_ATTR_NODE_ACCEPT, static_cast<uint8_t>(accept));
	}, ignore_replies);
}

namespace {

// -EOPNOTSUPP, said, when the module has no node owners.
int need_node_owner(struct ds_ctx *ctx)
{
	ds_version v;
	int ret = ds_version_get(ctx, &v);

	if (ret)
		return ret;
	if (!(v.features & DSMEM_FEAT_NODE_OWNER))
		return fail(ctx, -EOPNOTSUPP, "this dsmem module has no node owners");
	return 0;
}

}  // namespace

DS_EXPORT int ds_node_get_owner(struct ds_ctx *ctx, uint32_t id, struct ds_node_owner *owner)
{
	if (!owner)
		return fail(ctx, -EINVAL, "no owner to fill");
	int ret = need_node_owner(ctx);
	if (ret)
		return ret;
	return request_one(ctx, DSMEM_CMD_NODE_GET, [id](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
	}, [owner](struct nl_msg *m) { return parse_node_owner(m, owner); });
}

DS_EXPORT int ds_node_set_owner(struct ds_ctx *ctx, uint32_t id, const struct ds_node_owner *owner)
{
	if (!owner || owner->reserved)
		return fail(ctx, -EINVAL, "an owner with its reserved word 0");
	if (owner->mode > 0777)
		return fail(ctx, -EINVAL, "a node's mode is from 0 to 0777");
	int ret = need_node_owner(ctx);
	if (ret)
		return ret;
	return request(ctx, DSMEM_CMD_NODE_SET, false, [id, owner](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, id);
		a.u32(DSMEM_ATTR_NODE_OWNER, owner->uid);
		a.u32(DSMEM_ATTR_NODE_GROUP, owner->gid);
		a.u16(DSMEM_ATTR_NODE_MODE, static_cast<uint16_t>(owner->mode));
	}, ignore_replies);
}

DS_EXPORT int ds_peer_add(struct ds_ctx *ctx, uint32_t node_id, const char *addr,
			  uint16_t port, uint32_t *peer_id)
{
	return ds_peer_add_id(ctx, node_id, addr, port, 0, 0, peer_id);
}

DS_EXPORT int ds_peer_add_id(struct ds_ctx *ctx, uint32_t node_id, const char *addr,
			     uint16_t port, uint32_t remote_node, unsigned int flags,
			     uint32_t *peer_id)
{
	bool listen = flags & DS_PEER_LISTEN;
	unsigned char bin[16];
	size_t len;

	if (flags & ~DS_PEER_LISTEN)
		return fail(ctx, -EINVAL, "unknown peer flags");
	if (listen && (!remote_node || port))
		return fail(ctx, -EINVAL, "a listen peer has a node id and no port");

	if (addr && inet_pton(AF_INET, addr, bin) == 1)
		len = 4;
	else if (addr && inet_pton(AF_INET6, addr, bin) == 1)
		len = 16;
	else
		return fail(ctx, -EINVAL, "not a numeric IPv4 or IPv6 address");

	ds_peer_info peer;
	int ret = request_one(ctx, DSMEM_CMD_PEER_NEW, [&](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.bin(DSMEM_ATTR_PEER_ADDR, bin, len);
		if (!listen)
			a.u16(DSMEM_ATTR_PEER_PORT, port);
		if (remote_node)
			a.u32(DSMEM_ATTR_PEER_REMOTE_NODE, remote_node);
		if (listen)
			a.flag(DSMEM_ATTR_PEER_LISTEN);
	}, [&peer](struct nl_msg *m) { return parse_peer(m, &peer, true); },
	peer_id != nullptr);
	if (!ret && peer_id)
		*peer_id = peer.id;
	return ret;
}

DS_EXPORT int ds_peer_del(struct ds_ctx *ctx, uint32_t node_id, uint32_t peer_id)
{
	return request(ctx, DSMEM_CMD_PEER_DEL, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_PEER_ID, peer_id);
	}, ignore_replies);
}

DS_EXPORT int ds_peer_get(struct ds_ctx *ctx, uint32_t node_id, uint32_t peer_id,
			  struct ds_peer_info *peer)
{
	return request_one(ctx, DSMEM_CMD_PEER_GET, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_PEER_ID, peer_id);
	}, [peer](struct nl_msg *m) { return parse_peer(m, peer, true); });
}

DS_EXPORT int ds_peer_list(struct ds_ctx *ctx, uint32_t node_id,
			   struct ds_peer_info **peers, size_t *count)
{
	return dump(ctx, DSMEM_CMD_PEER_GET, node_id, parse_peer, peers, count);
}

DS_EXPORT int ds_seg_add(struct ds_ctx *ctx, uint32_t node_id, uint64_t size,
			 int32_t numa, int translate, struct ds_seg_info *seg)
{
	if (translate < 0 || translate > UINT8_MAX)
		return fail(ctx, -EINVAL, "unknown translation scheme");

	ds_seg_info info;
	int ret = request_one(ctx, DSMEM_CMD_SEG_NEW, [&](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u64(DSMEM_ATTR_SEG_SIZE, size);
		if (numa != -1)
			a.s32(DSMEM_ATTR_SEG_NUMA, numa);
		a.u8(DSMEM_ATTR_SEG_TRANSLATE, static_cast<uint8_t>(translate));
	}, [&info](struct nl_msg *m) { return parse_seg(m, &info, true); },
	seg != nullptr);
	if (!ret && seg)
		*seg = info;
	return ret;
}

DS_EXPORT int ds_seg_del(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id)
{
	return request(ctx, DSMEM_CMD_SEG_DEL, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_SEG_ID, seg_id);
	}, ignore_replies);
}

DS_EXPORT int ds_seg_get(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id,
			 struct ds_seg_info *seg)
{
	return request_one(ctx, DSMEM_CMD_SEG_GET, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_SEG_ID, seg_id);
	}, [seg](struct nl_msg *m) { return parse_seg(m, seg, true); });
}

DS_EXPORT int ds_seg_list(struct ds_ctx *ctx, uint32_t node_id,
			  struct ds_seg_info **segs, size_t *count)
{
	return dump(ctx, DSMEM_CMD_SEG_GET, node_id, parse_seg, segs, count);
}

DS_EXPORT int ds_seg_grant(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id,
			   uint32_t remote_node, uint8_t perm)
{
	return request(ctx, DSMEM_CMD_SEG_GRANT, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_SEG_ID, seg_id);
		a.u32(DSMEM_ATTR_PEER_REMOTE_NODE, remote_node);
		a.u8(DSMEM_ATTR_SEG_PERM, perm);
	}, ignore_replies);
}

DS_EXPORT int ds_seg_revoke(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id,
			    uint32_t remote_node)
{
	return request(ctx, DSMEM_CMD_SEG_REVOKE, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_SEG_ID, seg_id);
		a.u32(DSMEM_ATTR_PEER_REMOTE_NODE, remote_node);
	}, ignore_replies);
}

DS_EXPORT int ds_rdm_alloc(struct ds_ctx *ctx, uint32_t node_id,
			   uint32_t remote_node, uint32_t seg_id, uint64_t size,
			   uint64_t *va, uint64_t *pa)
{
	uint64_t v = 0, p = 0;
	int ret = request_one(ctx, DSMEM_CMD_RDM_ALLOC, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u32(DSMEM_ATTR_PEER_REMOTE_NODE, remote_node);
		a.u64(DSMEM_ATTR_RDM_LEN, size);
		if (seg_id)
			a.u32(DSMEM_ATTR_SEG_ID, seg_id);
	}, [&](struct nl_msg *m) { return parse_rdm_alloc(m, &v, &p); },
	va || pa);
	if (ret)
		return ret;
	if (va)
		*va = v;
	if (pa)
		*pa = p;
	return 0;
}

DS_EXPORT int ds_rdm_free(struct ds_ctx *ctx, uint32_t node_id, uint64_t va)
{
	return request(ctx, DSMEM_CMD_RDM_FREE, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u64(DSMEM_ATTR_RDM_ADDR, va);
	}, ignore_replies);
}

DS_EXPORT int ds_rdm_read(struct ds_ctx *ctx, uint32_t node_id, uint64_t va,
			  void *buf, size_t len)
{
	if (len > DS_RDM_DATA_MAX)
		return fail(ctx, -EMSGSIZE, "at most " DS_STR(DS_RDM_DATA_MAX) " bytes per read");
	if (!buf && len)
		return fail(ctx, -EINVAL, "no buffer");
	return request_one(ctx, DSMEM_CMD_RDM_READ, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u64(DSMEM_ATTR_RDM_ADDR, va);
		a.u64(DSMEM_ATTR_RDM_LEN, len);
	}, [=](struct nl_msg *m) { return parse_rdm_read(m, va, buf, len); });
}

DS_EXPORT int ds_rdm_write(struct ds_ctx *ctx, uint32_t node_id, uint64_t va,
			   const void *buf, size_t len)
{
	if (len > DS_RDM_DATA_MAX)
		return fail(ctx, -EMSGSIZE, "at most " DS_STR(DS_RDM_DATA_MAX) " bytes per write");
	if (!buf && len)
		return fail(ctx, -EINVAL, "no buffer");
	return request(ctx, DSMEM_CMD_RDM_WRITE, false, [=](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
		a.u64(DSMEM_ATTR_RDM_ADDR, va);
		a.bin(DSMEM_ATTR_RDM_DATA, buf, len);
	}, ignore_replies, 256 + nla_total_size(static_cast<int>(len)));
}

DS_EXPORT int ds_slope_range_get(struct ds_ctx *ctx, uint32_t node_id,
				 struct ds_slope_range_info *info)
{
	return request_one(ctx, DSMEM_CMD_SLOPE_GET, [node_id](attrs &a) {
		a.u32(DSMEM_ATTR_NODE_ID, node_id);
	}, [info](struct nl_msg *m) { return parse_slope_range(m, info); });
}

DS_EXPORT int ds_slope_range_list(struct ds_ctx *ctx, uint32_t node_id,
				  struct ds_slope_ranges *list)
{
	slope_dump out;

	if (!list)
		return fail(ctx, -EINVAL, "no list to fill");
	memset(list, 0, sizeof(*list));
	int ret = request(ctx, DSMEM_CMD_SLOPE_GET, true, [node_id](attrs &a) {
		if (node_id)
			a.u32(DSMEM_ATTR_NODE_ID, node_id);
	}, [&out](struct nl_msg *m) { return parse_slope_dump(m, out); });
	if (ret)
		return ret;
	ds_slope_ranges l{};
	ret = to_c_array(ctx, out.ranges, &l.ranges, &l.nranges);
	if (!ret)
		ret = to_c_array(ctx, out.leases, &l.leases, &l.nleases);
	if (!ret)
		ret = to_c_array(ctx, out.migs, &l.migs, &l.nmigs);
	if (!ret)
		ret = to_c_array(ctx, out.objects, &l.objects, &l.nobjects);
	if (ret) {
		ds_slope_range_list_free(&l);
		return ret;
	}
	*list = l;
	return 0;
}

DS_EXPORT void ds_slope_range_list_free(struct ds_slope_ranges *list)
{
	if (!list)
		return;
	free(list->ranges);
	free(list->leases);
	free(list->migs);
	free(list->objects);
	memset(list, 0, sizeof(*list));
}
