// SPDX-License-Identifier: BSD-2-Clause
// dsctl node [show [id N] [netnsid NSID]]
//      | node add id N dev DEV[@NUMA][,DEV[@NUMA]...] port P [key NAME | insecure]
//      | node set id N accept peers|keyed | node del id N [netnsid NSID]
#include <linux/dsmem.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <vector>

#include "dsctl.hpp"

namespace dsctl {

namespace {

uint32_t node_id(const keywords &kw)
{
	return need_id(kw, "id", DSMEM_NODE_ID_MAX, "node id", "node");
}

// All of node id's devices (DS_NODE_DEVS_MAX at most); -ENOENT when the
// node is gone.
int node_devs(const dsmem::context &ctx, uint32_t id, std::vector<ds_node_dev> &devs)
{
	devs.resize(DS_NODE_DEVS_MAX);
	int ret = ds_node_devs(ctx.get(), id, devs.data(), DS_NODE_DEVS_MAX);
	if (ret >= 0)
		devs.resize(std::min<size_t>(static_cast<size_t>(ret), DS_NODE_DEVS_MAX));
	return ret < 0 ? ret : 0;
}

// The namespace netnsid names (ip netns list-id), or -1 for the caller's.
int32_t netnsid_arg(const keywords &kw)
{
	if (!kw.has("netnsid"))
		return -1;
	return static_cast<int32_t>(u64_arg(kw, "netnsid", 0, 0, INT32_MAX, true));
}

// Nodes of another namespace: described as far as node-get tells (the
// first device; the device list is asked of the caller's namespace).
int node_show_netns(env &e, int32_t netnsid, bool one, uint32_t id)
{
	dsmem::context ctx = open_context();
	const std::string in = " in namespace " + std::to_string(netnsid);

	e.out.begin_list();
	if (!one) {
		c_array<ds_node_info> nodes;
		check(ds_node_list_netns(ctx.get(), netnsid, &nodes.data, &nodes.count), ctx,
		      "cannot list nodes" + in);
		for (const auto &n : nodes)
			e.out.add(node_record(n, {}));
		return 0;
	}
	ds_node_info n{};
	check(ds_node_get_netns(ctx.get(), netnsid, id, &n), ctx,
	      "cannot show node " + std::to_string(id) + in);
	e.out.add(node_record(n, {}));
	return 0;
}

int node_show(env &e)
{
	keywords kw = take_keywords(e, { "id", "netnsid" });
	uint32_t id;
	bool one = id_arg(kw, "id", DSMEM_NODE_ID_MAX, "node id", id);
	int32_t netnsid = netnsid_arg(kw);
	if (netnsid >= 0)
		return node_show_netns(e, netnsid, one, id);
	dsmem::context ctx = open_context();
	std::vector<ds_node_dev> devs;

	e.out.begin_list();
	if (!one) {
		c_array<ds_node_info> nodes;
		check(ds_node_list(ctx.get(), &nodes.data, &nodes.count), ctx,
		      "cannot list nodes");
		for (const auto &n : nodes) {
			int ret = node_devs(ctx, n.id, devs);
			if (ret == -ENOENT)
				continue;	// deleted since the listing
			check(ret, ctx, "cannot list the devices of node " + std::to_string(n.id));
			e.out.add(node_record(n, devs));
		}
		return 0;
	}
	ds_node_info n{};
	const std::string doing = "cannot show node " + std::to_string(id);
	check(ds_node_get(ctx.get(), id, &n), ctx, doing);
	check(node_devs(ctx, id, devs), ctx, doing);
	e.out.add(node_record(n, devs));
	return 0;
}

int node_add(env &e)
{
	keywords kw = take_keywords(e, { "id", "dev", "port", "key" }, { "insecure" });
	uint32_t id = node_id(kw);
	const std::string *key = kw.get("key");
	if (key && kw.has("insecure"))
		fail("a node is keyed or insecure, not both");
	const std::string &dev = need(kw, "dev", "node");
	unsigned int port;
	if (!parse_u32(need(kw, "port", "node"), port) || !port || port > 65535)
		fail("port needs a port number from 1 to 65535");

	dsmem::context ctx = open_context();
	const char *name = key ? key->c_str() : kw.has("insecure") ? nullptr : DS_KEY_DEFAULT;
	int ret = ds_node_add_keyed(ctx.get(), id, dev.c_str(), static_cast<uint16_t>(port), name);
	if (ret == -ENOKEY)
		fail("cannot add node " + std::to_string(id) + ": no key \"" + name +
		     "\" (add it: dsctl key add name " + name +
		     " file FILE; or add the node insecure)");
	check(ret, ctx, "cannot add node " + std::to_string(id));
	if (!name)
		fprintf(stderr, "Warning: node %u is insecure: any host that reaches port %u "
			"can connect to it as any node id\n", id, port);
	return 0;
}

int node_set(env &e)
{
	keywords kw = take_keywords(e, { "id", "accept" });
	uint32_t id = node_id(kw);
	const std::string &accept = need(kw, "accept", "node");
	int policy;
	if (accept == "peers")
		policy = DS_ACCEPT_PEERS;
	else if (accept == "keyed")
		policy = DS_ACCEPT_KEYED;
	else
		fail("accept needs peers or keyed, not \"" + accept + "\"");

	dsmem::context ctx = open_context();
	check(ds_node_set_accept(ctx.get(), id, policy), ctx,
	      "cannot change node " + std::to_string(id));
	return 0;
}

int node_del(env &e)
{
	keywords kw = take_keywords(e, { "id", "netnsid" });
	uint32_t id = node_id(kw);
	int32_t netnsid = netnsid_arg(kw);

	dsmem::context ctx = open_context();
	if (netnsid >= 0)
		check(ds_node_del_netns(ctx.get(), netnsid, id), ctx,
		      "cannot delete node " + std::to_string(id) + " in namespace " +
		      std::to_string(netnsid));
	else
		check(ds_node_del(ctx.get(), id), ctx, "cannot delete node " + std::to_string(id));
	return 0;
}

const command node_cmds[] = {
	{ "show", node_show },
	{ "list", node_show },
	{ "add", node_add },
	{ "set", node_set },
	{ "del", node_del },
};

}  // namespace

const object node_object = {
	"node", node_cmds, sizeof(node_cmds) / sizeof(node_cmds[0]),
	"Usage: dsctl node [show [id N] [netnsid NSID]]\n"
	"       dsctl node add id N dev DEV[@NUMA][,DEV[@NUMA]...] port PORT [ key NAME | insecure ]\n"
	"       dsctl node set id N accept { peers | keyed }\n"
	"       dsctl node del id N [netnsid NSID]\n",
	false,
};

}  // namespace dsctl
