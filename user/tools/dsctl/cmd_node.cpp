// SPDX-License-Identifier: BSD-2-Clause
// dsctl node [show [id N] [netnsid NSID]]
//      | node add id N dev DEV[@NUMA][,DEV[@NUMA]...] port P [key NAME | insecure]
//                 [owner USER] [group GROUP] [mode MODE]
//      | node set id N [accept peers|keyed] [owner USER] [group GROUP] [mode MODE]
//      | node del id N [netnsid NSID]
#include <grp.h>
#include <linux/dsmem.h>
#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
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

// A user or group by name, or a number.
uint32_t id_of(const std::string &v, bool group)
{
	unsigned int n;

	if (parse_u32(v, n))
		return n;
	if (group) {
		if (const struct group *g = getgrnam(v.c_str()))
			return g->gr_gid;
		fail("group needs a group name or a gid, not \"" + v + "\"");
	}
	if (const struct passwd *p = getpwnam(v.c_str()))
		return p->pw_uid;
	fail("owner needs a user name or a uid, not \"" + v + "\"");
}

// The owner, group and mode a command gives, checked before anything is
// asked of the module; what it does not give stays as it is.
struct owner_words {
	std::optional<uint32_t> uid, gid, mode;

	bool any() const { return uid || gid || mode; }
	void apply(ds_node_owner &o) const
	{
		o.uid = uid.value_or(o.uid);
		o.gid = gid.value_or(o.gid);
		o.mode = mode.value_or(o.mode);
	}
};

owner_words owner_args(const keywords &kw)
{
	const std::string *owner = kw.get("owner"), *group = kw.get("group");
	const std::string *mode = kw.get("mode");
	owner_words w;

	if (owner)
		w.uid = id_of(*owner, false);
	if (group)
		w.gid = id_of(*group, true);
	if (mode) {
		char *end = nullptr;
		unsigned long m = strtoul(mode->c_str(), &end, 8);
		if (mode->empty() || *end || m > 0777)
			fail("mode needs octal permission bits from 0 to 0777, not \"" + *mode + "\"");
		w.mode = static_cast<uint32_t>(m);
	}
	return w;
}

// The node's owner, group and mode into r; nothing from a module without.
void add_owner(record &r, const dsmem::context &ctx, uint32_t id)
{
	ds_node_owner o{};
	int ret = ds_node_get_owner(ctx.get(), id, &o);

	if (ret == -EOPNOTSUPP || ret == -ENOENT)
		return;
	check(ret, ctx, "cannot read the owner of node " + std::to_string(id));
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", o.mode);
	r["owner"] = o.uid;
	r["group"] = o.gid;
	r["mode"] = mode;
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
			devs.clear();
			int ret = n.flags & DS_NODE_F_NOT_YOURS ? 0 : node_devs(ctx, n.id, devs);
			if (ret == -ENOENT)
				continue;	// deleted since the listing
			check(ret, ctx, "cannot list the devices of node " + std::to_string(n.id));
			record r = node_record(n, devs);
			add_owner(r, ctx, n.id);
			e.out.add(r);
		}
		return 0;
	}
	ds_node_info n{};
	const std::string doing = "cannot show node " + std::to_string(id);
	check(ds_node_get(ctx.get(), id, &n), ctx, doing);
	if (!(n.flags & DS_NODE_F_NOT_YOURS))
		check(node_devs(ctx, id, devs), ctx, doing);
	record r = node_record(n, devs);
	add_owner(r, ctx, id);
	e.out.add(r);
	return 0;
}

int node_add(env &e)
{
	keywords kw = take_keywords(e, { "id", "dev", "port", "key", "owner", "group", "mode" },
				    { "insecure" });
	uint32_t id = node_id(kw);
	const std::string *key = kw.get("key");
	if (key && kw.has("insecure"))
		fail("a node is keyed or insecure, not both");
	const std::string &dev = need(kw, "dev", "node");
	unsigned int port;
	if (!parse_u32(need(kw, "port", "node"), port) || !port || port > 65535)
		fail("port needs a port number from 1 to 65535");

	owner_words owner = owner_args(kw);

	dsmem::context ctx = open_context();
	const char *name = key ? key->c_str() : kw.has("insecure") ? nullptr : DS_KEY_DEFAULT;
	int ret = ds_node_add_keyed(ctx.get(), id, dev.c_str(), static_cast<uint16_t>(port), name);
	if (ret == -ENOKEY)
		fail("cannot add node " + std::to_string(id) + ": no key \"" + name +
		     "\" (add it: dsctl key add name " + name +
		     " file FILE; or add the node insecure)");
	check(ret, ctx, "cannot add node " + std::to_string(id));
	ds_node_owner o{};
	if (owner.any()) {
		// what is not given stays the kernel's default: the creator's, 0600
		ret = ds_node_get_owner(ctx.get(), id, &o);
		if (!ret) {
			owner.apply(o);
			ret = ds_node_set_owner(ctx.get(), id, &o);
		}
		if (ret) {
			// a node its admin meant for another stays nobody's
			ds_node_del(ctx.get(), id);
			check(ret, ctx, "cannot give node " + std::to_string(id) + " its owner");
		}
	}
	if (!name)
		fprintf(stderr, "Warning: node %u is insecure: any host that reaches port %u "
			"can connect to it as any node id\n", id, port);
	return 0;
}

int node_set(env &e)
{
	keywords kw = take_keywords(e, { "id", "accept", "owner", "group", "mode" });
	uint32_t id = node_id(kw);
	const std::string *accept = kw.get("accept");
	int policy = DS_ACCEPT_PEERS;
	if (accept && *accept == "keyed")
		policy = DS_ACCEPT_KEYED;
	else if (accept && *accept != "peers")
		fail("accept needs peers or keyed, not \"" + *accept + "\"");
	owner_words owner = owner_args(kw);
	if (!accept && !owner.any())
		fail("nothing to change: give accept, owner, group or mode");

	dsmem::context ctx = open_context();
	const std::string doing = "cannot change node " + std::to_string(id);
	if (accept)
		check(ds_node_set_accept(ctx.get(), id, policy), ctx, doing);
	ds_node_owner o{};
	if (owner.any()) {
		check(ds_node_get_owner(ctx.get(), id, &o), ctx, doing);
		owner.apply(o);
		check(ds_node_set_owner(ctx.get(), id, &o), ctx, doing);
	}
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
	"                      [ owner USER ] [ group GROUP ] [ mode MODE ]\n"
	"       dsctl node set id N [ accept { peers | keyed } ] [ owner USER ] [ group GROUP ]\n"
	"                      [ mode MODE ]\n"
	"       dsctl node del id N [netnsid NSID]\n",
	false,
};

}  // namespace dsctl
