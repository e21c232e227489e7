// SPDX-License-Identifier: BSD-2-Clause
// dsctl segment [show [node N [seg S]]]
//      | segment add node N size SIZE [numa NUMA] [translate segment|pages]
//      | segment del node N seg S
//      | segment grant node N seg S to NODE [perm r|rw]
//      | segment revoke node N seg S to NODE
//      | segment show pool [master ADDRS] [node N]    (cmd_master.cpp)
//      | segment add pool traddr IP [trsvcid N] subnqn NQN size SIZE [base OFF]
#include <climits>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>

#include "dsctl.hpp"

namespace dsctl {

// The object store's pool of segments (cmd_master.cpp).
int segment_pool_show(env &e);
int segment_pool_add(env &e);

namespace {

// "pool" first: the store's view (the word is taken)
bool pool_word(env &e)
{
	if (e.words.empty() || !matches(e.words.peek(), "pool"))
		return false;
	e.words.next();
	return true;
}

uint32_t node_of(const keywords &kw)
{
	return need_id(kw, "node", DSMEM_NODE_ID_MAX, "node id", "segment");
}

uint32_t seg_of(const keywords &kw)
{
	return need_id(kw, "seg", DSMEM_SEG_ID_MAX, "segment id", "segment");
}

uint32_t to_of(const keywords &kw)
{
	return need_id(kw, "to", DSMEM_NODE_ID_MAX, "node id", "segment");
}

std::string seg_name(uint32_t node, uint32_t seg)
{
	return "segment " + std::to_string(seg) + " of node " + std::to_string(node);
}

int seg_show(env &e)
{
	if (pool_word(e))
		return segment_pool_show(e);
	keywords kw = take_keywords(e, { "node", "seg" });
	uint32_t node = 0, seg = 0;
	id_arg(kw, "node", DSMEM_NODE_ID_MAX, "node id", node);
	bool one = id_arg(kw, "seg", DSMEM_SEG_ID_MAX, "segment id", seg);
	if (one && !node)
		fail("a segment is named by its node: segment show node N seg S");
	dsmem::context ctx = open_context();

	e.out.begin_list();
	if (!one) {
		c_array<ds_seg_info> segs;
		check(ds_seg_list(ctx.get(), node, &segs.data, &segs.count), ctx,
		      node ? "cannot list the segments of node " + std::to_string(node)
			   : std::string("cannot list segments"));
		for (const auto &s : segs)
			e.out.add(seg_record(s));
		return 0;
	}
	ds_seg_info s{};
	check(ds_seg_get(ctx.get(), node, seg, &s), ctx, "cannot show " + seg_name(node, seg));
	e.out.add(seg_record(s));
	return 0;
}

int seg_add(env &e)
{
	if (pool_word(e))
		return segment_pool_add(e);
	keywords kw = take_keywords(e, { "node", "size", "numa", "translate" });
	uint32_t node = node_of(kw);
	uint64_t size;
	if (!parse_size(need(kw, "size", "segment"), size) || !size)
		fail("size needs a positive number of bytes (suffixes K, M, G, T)");
	int32_t numa = -1;
	if (const std::string *v = kw.get("numa"); v && *v != "any") {
		unsigned int n;
		if (!parse_u32(*v, n) || n > INT_MAX)
			fail("numa needs a NUMA node number or \"any\"");
		numa = static_cast<int32_t>(n);
	}
	int translate = DSMEM_TRANSLATE_SEGMENT;
	if (const std::string *v = kw.get("translate"); v && !parse_translate(*v, translate))
		fail("translate needs \"segment\" or \"pages\"");

	dsmem::context ctx = open_context();
	ds_seg_info s{};
	check(ds_seg_add(ctx.get(), node, size, numa, translate, &s), ctx,
	      "cannot add a segment to node " + std::to_string(node));
	e.out.begin_list();
	e.out.add(seg_record(s));
	return 0;
}

int seg_del(env &e)
{
	keywords kw = take_keywords(e, { "node", "seg" });
	uint32_t node = node_of(kw);
	uint32_t seg = seg_of(kw);

	dsmem::context ctx = open_context();
	check(ds_seg_del(ctx.get(), node, seg), ctx, "cannot delete " + seg_name(node, seg));
	return 0;
}

int seg_grant(env &e)
{
	keywords kw = take_keywords(e, { "node", "seg", "to", "perm" });
	uint32_t node = node_of(kw);
	uint32_t seg = seg_of(kw);
	uint32_t to = to_of(kw);
	uint8_t perm = DSMEM_PERM_READ | DSMEM_PERM_WRITE;
	if (const std::string *v = kw.get("perm"); v && !parse_perm(*v, perm))
		fail("perm needs \"r\" or \"rw\"");

	dsmem::context ctx = open_context();
	check(ds_seg_grant(ctx.get(), node, seg, to, perm), ctx,
	      "cannot grant " + seg_name(node, seg) + " to node " + std::to_string(to));
	return 0;
}

int seg_revoke(env &e)
{
	keywords kw = take_keywords(e, { "node", "seg", "to" });
	uint32_t node = node_of(kw);
	uint32_t seg = seg_of(kw);
	uint32_t to = to_of(kw);

	dsmem::context ctx = open_context();
	check(ds_seg_revoke(ctx.get(), node, seg, to), ctx,
	      "cannot revoke the grant of " + seg_name(node, seg) + " to node " +
		      std::to_string(to));
	return 0;
}

const command seg_cmds[] = {
	{ "show", seg_show },
	{ "list", seg_show },
	{ "add", seg_add },
	{ "del", seg_del },
	{ "grant", seg_grant },
	{ "revoke", seg_revoke },
};

}  // namespace

const object segment_object = {
	"segment", seg_cmds, sizeof(seg_cmds) / sizeof(seg_cmds[0]),
	"Usage: dsctl segment [show [node N [seg S]]]\n"
	"       dsctl segment add node N size SIZE [numa { NUMA | any }]\n"
	"                         [translate { segment | pages }]\n"
	"       dsctl segment del node N seg S\n"
	"       dsctl segment grant node N seg S to NODE [perm { r | rw }]\n"
	"       dsctl segment revoke node N seg S to NODE\n"
	"       dsctl segment show pool [master HOST:PORT[,HOST:PORT...]] [node N]\n"
	"       dsctl segment add pool traddr IP [trsvcid PORT] subnqn NQN size SIZE\n"
	"                              [base OFFSET] [master HOST:PORT[,HOST:PORT...]]\n"
	"where  SIZE := NUMBER[K|M|G|T]\n",
	false,
};

}  // namespace dsctl
