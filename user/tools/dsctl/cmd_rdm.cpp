// SPDX-License-Identifier: BSD-2-Clause
// dsctl rdm { alloc | free | read | write }: the remote-memory service, by
// message, from a local node to the node an address names.
#include <cstdio>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

const char rdm_usage[] =
	"Usage: dsctl rdm alloc node N remote NODE size SIZE [seg S]\n"
	"       dsctl rdm free node N addr VA\n"
	"       dsctl rdm read node N addr VA len LEN\n"
	"       dsctl rdm write node N addr VA { data HEX | value U64 }\n"
	"where  SIZE, LEN := NUMBER[K|M|G|T]   VA := 0xHEX\n";

uint32_t node_of(const keywords &kw)
{
	return need_id(kw, "node", DSMEM_NODE_ID_MAX, "node id", "rdm");
}

uint64_t addr_of(const keywords &kw)
{
	uint64_t va;
	if (!parse_addr(need(kw, "addr", "rdm"), va))
		fail("addr needs an address in hexadecimal, such as 0x2001000000000");
	return va;
}

// No command: as "dsctl rdm help", since no rdm command is harmless.
int rdm_help(env &)
{
	fputs(rdm_usage, stdout);
	return 0;
}

int rdm_alloc(env &e)
{
	keywords kw = take_keywords(e, { "node", "remote", "size", "seg" });
	uint32_t node = node_of(kw);
	uint32_t remote = need_id(kw, "remote", DSMEM_NODE_ID_MAX, "node id", "rdm");
	uint64_t size;
	if (!parse_size(need(kw, "size", "rdm"), size) || !size)
		fail("size needs a positive number of bytes (suffixes K, M, G, T)");
	uint32_t seg = 0;
	id_arg(kw, "seg", DSMEM_SEG_ID_MAX, "segment id", seg);

	dsmem::context ctx = open_context();
	uint64_t va = 0, pa = 0;
	check(ds_rdm_alloc(ctx.get(), node, remote, seg, size, &va, &pa), ctx,
	      "cannot allocate on node " + std::to_string(remote));
	e.out.begin_list();
	e.out.add(rdm_alloc_record(node, remote, size, va, pa));
	return 0;
}

int rdm_free(env &e)
{
	keywords kw = take_keywords(e, { "node", "addr" });
	uint32_t node = node_of(kw);
	uint64_t va = addr_of(kw);

	dsmem::context ctx = open_context();
	check(ds_rdm_free(ctx.get(), node, va), ctx, "cannot free " + addr_string(va));
	return 0;
}

int rdm_read(env &e)
{
	keywords kw = take_keywords(e, { "node", "addr", "len" });
	uint32_t node = node_of(kw);
	uint64_t va = addr_of(kw);
	uint64_t len;
	if (!parse_size(need(kw, "len", "rdm"), len) || !len || len > DSMEM_RDM_DATA_MAX)
		fail("len needs a number of bytes from 1 to " +
		     std::to_string(DSMEM_RDM_DATA_MAX));

	dsmem::context ctx = open_context();
	std::vector<uint8_t> buf(len);
	check(ds_rdm_read(ctx.get(), node, va, buf.data(), buf.size()), ctx,
	      "cannot read " + addr_string(va));
	e.out.begin_list();
	e.out.add(rdm_data_record(va, buf.data(), buf.size()));
	return 0;
}

int rdm_write(env &e)
{
	keywords kw = take_keywords(e, { "node", "addr", "data", "value" });
	uint32_t node = node_of(kw);
	uint64_t va = addr_of(kw);
	std::vector<uint8_t> bytes;

	if (kw.has("data") == kw.has("value"))
		fail("give exactly one of data and value, try \"dsctl rdm help\"");
	if (const std::string *v = kw.get("data")) {
		if (!parse_hex_data(*v, bytes) || bytes.size() > DSMEM_RDM_DATA_MAX)
			fail("data needs from 1 to " + std::to_string(DSMEM_RDM_DATA_MAX) +
			     " bytes in hexadecimal, two digits each");
	} else {
		uint64_t value;
		if (!parse_u64(*kw.get("value"), value))
			fail("value needs an unsigned 64-bit number");
		for (int i = 0; i < 8; i++)	// little-endian, whatever the host
			bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
	}

	dsmem::context ctx = open_context();
	check(ds_rdm_write(ctx.get(), node, va, bytes.data(), bytes.size()), ctx,
	      "cannot write " + addr_string(va));
	return 0;
}

const command rdm_cmds[] = {
	{ "help", rdm_help },	// the default; "help" itself never gets here
	{ "alloc", rdm_alloc },
	{ "free", rdm_free },
	{ "read", rdm_read },
	{ "write", rdm_write },
};

}  // namespace

const object rdm_object = {
	"rdm", rdm_cmds, sizeof(rdm_cmds) / sizeof(rdm_cmds[0]),
	rdm_usage,
	false,
};

}  // namespace dsctl
