// SPDX-License-Identifier: BSD-2-Clause
// dsctl peer [show [node N [peer P]]]
//      | peer add node N addr IP { port PORT [remote M] | remote M listen }
//      | peer del node N peer P
#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/dsmem.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

uint32_t node_of(const keywords &kw)
{
	return need_id(kw, "node", DSMEM_NODE_ID_MAX, "node id", "peer");
}

std::string peer_name(uint32_t node, uint32_t peer)
{
	return "peer " + std::to_string(peer) + " of node " + std::to_string(node);
}

int peer_show(env &e)
{
	keywords kw = take_keywords(e, { "node", "peer" });
	uint32_t node = 0, peer = 0;
	id_arg(kw, "node", DSMEM_NODE_ID_MAX, "node id", node);
	bool one = id_arg(kw, "peer", UINT32_MAX, "peer id", peer);
	if (one && !node)
		fail("a peer is named by its node: peer show node N peer P");
	dsmem::context ctx = open_context();

	e.out.begin_list();
	if (!one) {
		c_array<ds_peer_info> peers;
		check(ds_peer_list(ctx.get(), node, &peers.data, &peers.count), ctx,
		      node ? "cannot list the peers of node " + std::to_string(node)
			   : std::string("cannot list peers"));
		for (const auto &p : peers)
			e.out.add(peer_record(p));
		return 0;
	}
	ds_peer_info p{};
	check(ds_peer_get(ctx.get(), node, peer, &p), ctx,
	      "cannot show " + peer_name(node, peer));
	e.out.add(peer_record(p));
	return 0;
}

int peer_add(env &e)
{
	keywords kw = take_keywords(e, { "node", "addr", "port", "remote" }, { "listen" });
	uint32_t node = node_of(kw);
	const std::string &addr = need(kw, "addr", "peer");
	unsigned char buf[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, addr.c_str(), buf) != 1 &&
	    inet_pton(AF_INET6, addr.c_str(), buf) != 1)
		fail("addr needs a numeric IPv4 or IPv6 address");
	bool listen = kw.has("listen");
	uint32_t remote = 0;
	id_arg(kw, "remote", DSMEM_NODE_ID_MAX, "node id", remote);
	unsigned int port = 0;
	if (listen) {
		if (kw.get("port"))
			fail("a listen peer connects to this node: it takes no port");
		if (!remote)
			fail("a listen peer is admitted as one node: it needs remote M");
	} else if (!parse_u32(need(kw, "port", "peer"), port) || !port || port > 65535) {
		fail("port needs a port number from 1 to 65535");
	}

	dsmem::context ctx = open_context();
	uint32_t peer = 0;
	check(ds_peer_add_id(ctx.get(), node, addr.c_str(), static_cast<uint16_t>(port), remote,
			     listen ? DS_PEER_LISTEN : 0, &peer),
	      ctx, "cannot add a peer to node " + std::to_string(node));
	ds_peer_info p{};
	check(ds_peer_get(ctx.get(), node, peer, &p), ctx,
	      "cannot show the new " + peer_name(node, peer));
	e.out.begin_list();
	e.out.add(peer_record(p));
	return 0;
}

int peer_del(env &e)
{
	keywords kw = take_keywords(e, { "node", "peer" });
	uint32_t node = node_of(kw);
	uint32_t peer = need_id(kw, "peer", UINT32_MAX, "peer id", "peer");

	dsmem::context ctx = open_context();
	check(ds_peer_del(ctx.get(), node, peer), ctx, "cannot delete " + peer_name(node, peer));
	return 0;
}

const command peer_cmds[] = {
	{ "show", peer_show },
	{ "list", peer_show },
	{ "add", peer_add },
	{ "del", peer_del },
};

}  // namespace

const object peer_object = {
	"peer", peer_cmds, sizeof(peer_cmds) / sizeof(peer_cmds[0]),
	"Usage: dsctl peer [show [node N [peer P]]]\n"
	"       dsctl peer add node N addr IP { port PORT [ remote M ] | remote M listen }\n"
	"       dsctl peer del node N peer P\n",
	false,
};

}  // namespace dsctl
