// SPDX-License-Identifier: BSD-2-Clause
// libdsuser's codec for nodes, peers, segments, the RDM service and their
// events: replies as the module writes them (u64s padded the way
// nla_put_u64_64bit pads them where alignment matters), and the malformed
// ones it refuses.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <string>

#include <arpa/inet.h>
#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <linux/dsmem_wire.h>

#include "ds_internal.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::detail;

namespace {

constexpr int kFamily = 0x21;

struct nl_msg *reply(uint8_t cmd, size_t size = 0)
{
	struct nl_msg *m = size ? nlmsg_alloc_size(size) : nlmsg_alloc();
	assert_non_null(m);
	assert_non_null(genlmsg_put(m, 0, 1, kFamily, 0, 0, cmd, DSMEM_GENL_VERSION));
	return m;
}

// nla_put_u64_64bit(): a PAD attribute first when the value would
// otherwise not be 8-byte aligned (as on architectures that need it).
void put_u64(struct nl_msg *m, int type, uint64_t v, int pad)
{
	if (nlmsg_hdr(m)->nlmsg_len % 8 == 0)
		assert_int_equal(nla_put(m, pad, 0, nullptr), 0);
	assert_int_equal(nla_put_u64(m, type, v), 0);
}

void put_node(struct nl_msg *m)
{
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 7);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	nla_put_u16(m, DSMEM_ATTR_NODE_PORT, 18515);
	nla_put_u32(m, DSMEM_ATTR_NODE_PEER_COUNT, 2);
	nla_put_u32(m, DSMEM_ATTR_NODE_SEG_COUNT, 1);
}

void put_rseg(struct nl_msg *m, uint64_t addr)
{
	struct nlattr *r = nla_nest_start(m, DSMEM_ATTR_REMOTE_SEG);
	put_u64(m, DSMEM_RSEG_ATTR_ADDR, addr, DSMEM_RSEG_ATTR_PAD);
	put_u64(m, DSMEM_RSEG_ATTR_SIZE, 1 << 20, DSMEM_RSEG_ATTR_PAD);
	nla_put_u8(m, DSMEM_RSEG_ATTR_PERM, DSMEM_PERM_ALL);
	nla_put_u32(m, DSMEM_RSEG_ATTR_KEYS, 2);
	nla_nest_end(m, r);
}

// A PEER_GET reply as the module writes it; addr in network order.
struct nl_msg *peer_reply(uint8_t cmd, const void *addr, int addr_len, int nrsegs)
{
	struct nl_msg *m = reply(cmd);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_PEER_ID, 9);
	nla_put(m, DSMEM_ATTR_PEER_ADDR, addr_len, addr);
	nla_put_u16(m, DSMEM_ATTR_PEER_PORT, 18515);
	nla_put_u8(m, DSMEM_ATTR_PEER_STATE, DSMEM_PEER_UP);
	nla_put_u32(m, DSMEM_ATTR_PEER_REMOTE_NODE, 4);
	nla_put_u8(m, DSMEM_ATTR_PEER_PASSIVE, 1);
	nla_put_u32(m, DSMEM_ATTR_PEER_CONNECTS, 5);
	nla_put_u32(m, DSMEM_ATTR_PEER_ERRNO, 110);
	if (nrsegs >= 0) {
		struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_PEER_REMOTE_SEGS);
		for (int i = 0; i < nrsegs; i++)
			put_rseg(m, DSMEM_GADDR(4, i + 1, 0));
		nla_nest_end(m, l);
	}
	return m;
}

struct nl_msg *peer4_reply(uint8_t cmd = DSMEM_CMD_PEER_GET, int nrsegs = 2)
{
	const uint8_t a[4] = { 192, 168, 7, 2 };
	return peer_reply(cmd, a, sizeof(a), nrsegs);
}

void put_grant(struct nl_msg *m, uint32_t node, uint8_t perm)
{
	struct nlattr *g = nla_nest_start(m, DSMEM_ATTR_GRANT);
	nla_put_u32(m, DSMEM_GRANT_ATTR_REMOTE_NODE, node);
	nla_put_u8(m, DSMEM_GRANT_ATTR_PERM, perm);
	nla_nest_end(m, g);
}

// A SEG_GET reply as the module writes it.
struct nl_msg *seg_reply(uint8_t cmd = DSMEM_CMD_SEG_GET, int ngrants = 2, bool numa = true)
{
	struct nl_msg *m = reply(cmd);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, 1);
	put_u64(m, DSMEM_ATTR_SEG_SIZE, 64ULL << 20, DSMEM_ATTR_PAD);
	if (numa)
		nla_put_s32(m, DSMEM_ATTR_SEG_NUMA, 0);
	nla_put_u8(m, DSMEM_ATTR_SEG_TRANSLATE, DSMEM_TRANSLATE_PAGES);
	put_u64(m, DSMEM_ATTR_SEG_ADDR, DSMEM_GADDR(3, 1, 0), DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_SEG_USED, 8192, DSMEM_ATTR_PAD);
	nla_put_u32(m, DSMEM_ATTR_SEG_PAGE_SIZE, 4096);
	if (ngrants >= 0) {
		struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_SEG_GRANTS);
		for (int i = 0; i < ngrants; i++)
			put_grant(m, 4 + i, i % 2 ? DSMEM_PERM_READ : DSMEM_PERM_ALL);
		nla_nest_end(m, l);
	}
	return m;
}

// ---- nodes ----

void test_parse_node(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	ds_node_info n;
	assert_int_equal(parse_node(m, &n, true), 0);
	assert_int_equal(n.id, 3);
	assert_int_equal(n.dev_index, 7);
	assert_string_equal(n.dev_name, "rxe0");
	assert_int_equal(n.port, 18515);
	assert_int_equal(n.peer_count, 2);
	assert_int_equal(n.seg_count, 1);
	nlmsg_free(m);
}

void test_node_ids_only(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_NODE_DEL);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 5);
	ds_node_info n;
	assert_int_equal(parse_node(m, &n, false), 0);
	assert_int_equal(n.id, 5);
	assert_string_equal(n.dev_name, "");
	// a GET reply must say more than the id
	assert_int_equal(parse_node(m, &n, true), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_NODE_DEL);	// not even the id
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 7);
	assert_int_equal(parse_node(m, &n, false), -EBADMSG);
	nlmsg_free(m);
}

void test_node_reject_wrong_widths(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_NODE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 7);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	nla_put_u32(m, DSMEM_ATTR_NODE_PORT, 18515);	// u16 sent as u32
	ds_node_info n;
	assert_int_equal(parse_node(m, &n, true), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_NODE_GET);
	nla_put_u16(m, DSMEM_ATTR_NODE_ID, 3);	// u32 sent as u16
	assert_int_equal(parse_node(m, &n, false), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_NODE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 7);
	nla_put(m, DSMEM_ATTR_DEV_NAME, 4, "rxe0");	// unterminated
	nla_put_u16(m, DSMEM_ATTR_NODE_PORT, 1);
	assert_int_equal(parse_node(m, &n, true), -EBADMSG);
	nlmsg_free(m);
}

void test_node_unknown_attr_ignored(void **)
{
	// a newer module's attribute: skipped, as for devices
	struct nl_msg *m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	nla_put_u32(m, DSMEM_ATTR_MAX + 3, 1);
	ds_node_info n;
	assert_int_equal(parse_node(m, &n, true), 0);
	assert_int_equal(n.id, 3);
	nlmsg_free(m);
}

void test_node_reject_truncated(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	nlmsg_hdr(m)->nlmsg_len -= 6;
	ds_node_info n;
	assert_int_equal(parse_node(m, &n, true), -EBADMSG);
	nlmsg_free(m);
}

// ---- peers ----

void test_parse_peer_ipv4(void **)
{
	struct nl_msg *m = peer4_reply();
	ds_peer_info p;
	assert_int_equal(parse_peer(m, &p, true), 0);
	assert_int_equal(p.node_id, 3);
	assert_int_equal(p.id, 9);
	assert_string_equal(p.addr, "192.168.7.2");
	assert_int_equal(p.port, 18515);
	assert_int_equal(p.state, DS_PEER_UP);
	assert_int_equal(p.remote_node, 4);
	assert_int_equal(p.passive, 1);
	assert_int_equal(p.connects, 5);
	assert_int_equal(p.last_errno, 110);
	assert_int_equal(p.rseg_total, 2);
	assert_int_equal(p.nrsegs, 2);
	assert_true(p.rsegs[1].addr == DSMEM_GADDR(4, 2, 0));
	assert_int_equal(p.rsegs[1].size, 1 << 20);
	assert_int_equal(p.rsegs[1].perm, DSMEM_PERM_ALL);
	assert_int_equal(p.rsegs[1].keys, 2);
	nlmsg_free(m);
}

void test_parse_peer_ipv6(void **)
{
	uint8_t a[16];
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::5", a), 1);
	struct nl_msg *m = peer_reply(DSMEM_CMD_PEER_GET, a, sizeof(a), 0);
	ds_peer_info p;
	assert_int_equal(parse_peer(m, &p, true), 0);
	assert_string_equal(p.addr, "2001:db8::5");
	assert_int_equal(p.nrsegs, 0);	// an empty nest is fine
	assert_int_equal(p.rseg_total, 0);
	nlmsg_free(m);

	// the longest text forms still fit
	const char *longest[] = { "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
				  "::ffff:255.255.255.255" };
	for (const char *text : longest) {
		assert_int_equal(inet_pton(AF_INET6, text, a), 1);
		m = peer_reply(DSMEM_CMD_PEER_GET, a, sizeof(a), -1);
		assert_int_equal(parse_peer(m, &p, true), 0);
		assert_string_equal(p.addr, text);
		nlmsg_free(m);
	}
}

void test_peer_not_yet_known(void **)
{
	// remote node absent until the connection says who is there
	struct nl_msg *m = reply(DSMEM_CMD_PEER_GET);
	const uint8_t a[4] = { 10, 0, 0, 1 };
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_PEER_ID, 1);
	nla_put(m, DSMEM_ATTR_PEER_ADDR, 4, a);
	nla_put_u16(m, DSMEM_ATTR_PEER_PORT, 1);
	nla_put_u8(m, DSMEM_ATTR_PEER_STATE, DSMEM_PEER_CONNECTING);
	ds_peer_info p;
	assert_int_equal(parse_peer(m, &p, true), 0);
	assert_int_equal(p.remote_node, 0);
	assert_int_equal(p.state, DS_PEER_CONNECTING);
	assert_int_equal(p.nrsegs, 0);
	nlmsg_free(m);
}

void test_peer_rsegs_capped(void **)
{
	struct nl_msg *m = peer4_reply(DSMEM_CMD_PEER_GET, DS_PEER_RSEGS_MAX + 4);
	ds_peer_info p;
	assert_int_equal(parse_peer(m, &p, true), 0);
	assert_int_equal(p.nrsegs, DS_PEER_RSEGS_MAX);
	assert_int_equal(p.rseg_total, DS_PEER_RSEGS_MAX + 4);
	assert_true(p.rsegs[DS_PEER_RSEGS_MAX - 1].addr == DSMEM_GADDR(4, DS_PEER_RSEGS_MAX, 0));
	nlmsg_free(m);
}

void test_peer_reject_bad_addr(void **)
{
	const uint8_t a[6] = { 1, 2, 3, 4, 5, 6 };
	struct nl_msg *m = peer_reply(DSMEM_CMD_PEER_GET, a, 5, 0);
	ds_peer_info p;
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);
	nlmsg_free(m);

	m = peer_reply(DSMEM_CMD_PEER_GET, a, 0, 0);
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);
	nlmsg_free(m);
}

void test_peer_reject_missing(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_PEER_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_PEER_ID, 1);
	ds_peer_info p;
	assert_int_equal(parse_peer(m, &p, false), 0);	// a DEL event
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);	// no address
	nlmsg_free(m);

	m = reply(DSMEM_CMD_PEER_DEL);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	assert_int_equal(parse_peer(m, &p, false), -EBADMSG);	// no peer id
	nlmsg_free(m);
}

void test_peer_reject_bad_rsegs(void **)
{
	const uint8_t a[4] = { 10, 0, 0, 1 };
	ds_peer_info p;

	// a grant where a remote segment belongs
	struct nl_msg *m = peer_reply(DSMEM_CMD_PEER_GET, a, 4, -1);
	struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_PEER_REMOTE_SEGS);
	put_rseg(m, DSMEM_GADDR(4, 1, 0));
	put_grant(m, 4, DSMEM_PERM_READ);
	nla_nest_end(m, l);
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);
	nlmsg_free(m);

	// a remote segment without its address
	m = peer_reply(DSMEM_CMD_PEER_GET, a, 4, -1);
	l = nla_nest_start(m, DSMEM_ATTR_PEER_REMOTE_SEGS);
	struct nlattr *r = nla_nest_start(m, DSMEM_ATTR_REMOTE_SEG);
	nla_put_u64(m, DSMEM_RSEG_ATTR_SIZE, 4096);
	nla_nest_end(m, r);
	nla_nest_end(m, l);
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);
	nlmsg_free(m);

	// a u64 sent as u32 inside the nest, past the kept entries
	m = peer_reply(DSMEM_CMD_PEER_GET, a, 4, -1);
	l = nla_nest_start(m, DSMEM_ATTR_PEER_REMOTE_SEGS);
	for (int i = 0; i < DS_PEER_RSEGS_MAX; i++)
		put_rseg(m, DSMEM_GADDR(4, i + 1, 0));
	r = nla_nest_start(m, DSMEM_ATTR_REMOTE_SEG);
	nla_put_u64(m, DSMEM_RSEG_ATTR_ADDR, DSMEM_GADDR(4, 99, 0));
	nla_put_u32(m, DSMEM_RSEG_ATTR_SIZE, 4096);
	nla_nest_end(m, r);
	nla_nest_end(m, l);
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);
	nlmsg_free(m);

	// a perm of two bytes
	m = peer_reply(DSMEM_CMD_PEER_GET, a, 4, -1);
	l = nla_nest_start(m, DSMEM_ATTR_PEER_REMOTE_SEGS);
	r = nla_nest_start(m, DSMEM_ATTR_REMOTE_SEG);
	nla_put_u64(m, DSMEM_RSEG_ATTR_ADDR, DSMEM_GADDR(4, 1, 0));
	nla_put_u64(m, DSMEM_RSEG_ATTR_SIZE, 4096);
	nla_put_u16(m, DSMEM_RSEG_ATTR_PERM, 3);
	nla_nest_end(m, r);
	nla_nest_end(m, l);
	assert_int_equal(parse_peer(m, &p, true), -EBADMSG);
	nlmsg_free(m);
}

// ---- segments ----

void test_parse_seg(void **)
{
	struct nl_msg *m = seg_reply();
	ds_seg_info s;
	assert_int_equal(parse_seg(m, &s, true), 0);
	assert_int_equal(s.node_id, 3);
	assert_int_equal(s.id, 1);
	assert_true(s.size == 64ULL << 20);
	assert_true(s.addr == DSMEM_GADDR(3, 1, 0));
	assert_int_equal(s.used, 8192);
	assert_int_equal(s.numa, 0);
	assert_int_equal(s.page_size, 4096);
	assert_int_equal(s.translate, DS_TRANSLATE_PAGES);
	assert_int_equal(s.ngrants, 2);
	assert_int_equal(s.grant_total, 2);
	assert_int_equal(s.grants[0].remote_node, 4);
	assert_int_equal(s.grants[0].perm, DSMEM_PERM_ALL);
	assert_int_equal(s.grants[1].remote_node, 5);
	assert_int_equal(s.grants[1].perm, DSMEM_PERM_READ);
	nlmsg_free(m);
}

void test_seg_numa(void **)
{
	struct nl_msg *m = seg_reply(DSMEM_CMD_SEG_GET, 0, false);
	ds_seg_info s;
	assert_int_equal(parse_seg(m, &s, true), 0);
	assert_int_equal(s.numa, -1);	// absent: any node
	assert_int_equal(s.ngrants, 0);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SEG_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, 2);
	nla_put_u64(m, DSMEM_ATTR_SEG_SIZE, 4096);
	nla_put_u64(m, DSMEM_ATTR_SEG_ADDR, DSMEM_GADDR(3, 2, 0));
	nla_put_s32(m, DSMEM_ATTR_SEG_NUMA, -1);
	assert_int_equal(parse_seg(m, &s, true), 0);
	assert_int_equal(s.numa, -1);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SEG_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, 2);
	nla_put_u8(m, DSMEM_ATTR_SEG_NUMA, 1);	// s32 sent as u8
	assert_int_equal(parse_seg(m, &s, false), -EBADMSG);
	nlmsg_free(m);
}

void test_seg_grants_capped(void **)
{
	struct nl_msg *m = seg_reply(DSMEM_CMD_SEG_GET, DS_SEG_GRANTS_MAX + 2);
	ds_seg_info s;
	assert_int_equal(parse_seg(m, &s, true), 0);
	assert_int_equal(s.ngrants, DS_SEG_GRANTS_MAX);
	assert_int_equal(s.grant_total, DS_SEG_GRANTS_MAX + 2);
	nlmsg_free(m);
}

void test_seg_reject(void **)
{
	ds_seg_info s;

	struct nl_msg *m = reply(DSMEM_CMD_SEG_GET);	// size as u32
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, 1);
	nla_put_u32(m, DSMEM_ATTR_SEG_SIZE, 4096);
	nla_put_u64(m, DSMEM_ATTR_SEG_ADDR, DSMEM_GADDR(3, 1, 0));
	assert_int_equal(parse_seg(m, &s, true), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SEG_GET);	// no address
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, 1);
	nla_put_u64(m, DSMEM_ATTR_SEG_SIZE, 4096);
	assert_int_equal(parse_seg(m, &s, true), -EBADMSG);
	assert_int_equal(parse_seg(m, &s, false), 0);	// enough for a DEL
	nlmsg_free(m);

	m = seg_reply(DSMEM_CMD_SEG_GET, -1);	// a grant without its perm
	struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_SEG_GRANTS);
	struct nlattr *g = nla_nest_start(m, DSMEM_ATTR_GRANT);
	nla_put_u32(m, DSMEM_GRANT_ATTR_REMOTE_NODE, 4);
	nla_nest_end(m, g);
	nla_nest_end(m, l);
	assert_int_equal(parse_seg(m, &s, true), -EBADMSG);
	nlmsg_free(m);

	m = seg_reply(DSMEM_CMD_SEG_GET, -1);	// a remote segment among grants
	l = nla_nest_start(m, DSMEM_ATTR_SEG_GRANTS);
	put_grant(m, 4, DSMEM_PERM_READ);
	put_rseg(m, DSMEM_GADDR(4, 1, 0));
	nla_nest_end(m, l);
	assert_int_equal(parse_seg(m, &s, true), -EBADMSG);
	nlmsg_free(m);

	m = seg_reply(DSMEM_CMD_SEG_GET, -1);	// garbage after the last grant
	l = nla_nest_start(m, DSMEM_ATTR_SEG_GRANTS);
	put_grant(m, 4, DSMEM_PERM_READ);
	nla_nest_end(m, l);
	l->nla_len += 2;	// claims two bytes that are no attribute
	nlmsg_hdr(m)->nlmsg_len += 4;
	assert_int_equal(parse_seg(m, &s, true), -EBADMSG);
	nlmsg_free(m);
}

// ---- the RDM service ----

void test_rdm_alloc(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_RDM_ALLOC);
	put_u64(m, DSMEM_ATTR_RDM_ADDR, DSMEM_GADDR(4, 1, 4096), DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_RDM_PA, 4096, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_RDM_LEN, 100, DSMEM_ATTR_PAD);
	uint64_t va = 0, pa = 0;
	assert_int_equal(parse_rdm_alloc(m, &va, &pa), 0);
	assert_true(va == DSMEM_GADDR(4, 1, 4096));
	assert_int_equal(pa, 4096);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_RDM_ALLOC);	// no pa
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, 1);
	assert_int_equal(parse_rdm_alloc(m, &va, &pa), -EBADMSG);
	nlmsg_free(m);
}

void test_rdm_read(void **)
{
	const uint64_t va = DSMEM_GADDR(4, 1, 64);
	std::string data(DSMEM_WIRE_MAX_DATA, 'd');
	char buf[DSMEM_WIRE_MAX_DATA + 8] = {};

	// the largest reply: more than a default (page-sized) message
	struct nl_msg *m = reply(DSMEM_CMD_RDM_READ, 2 * DSMEM_WIRE_MAX_DATA);
	put_u64(m, DSMEM_ATTR_RDM_ADDR, va, DSMEM_ATTR_PAD);
	assert_int_equal(nla_put(m, DSMEM_ATTR_RDM_DATA, data.size(), data.data()), 0);
	assert_int_equal(parse_rdm_read(m, va, buf, data.size()), 0);
	assert_memory_equal(buf, data.data(), data.size());
	// fewer or more bytes than asked for, or another address
	assert_int_equal(parse_rdm_read(m, va, buf, data.size() - 1), -EBADMSG);
	assert_int_equal(parse_rdm_read(m, va, buf, data.size() + 1), -EBADMSG);
	assert_int_equal(parse_rdm_read(m, va + 8, buf, data.size()), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_RDM_READ, 2 * DSMEM_WIRE_MAX_DATA + 64);	// too much
	assert_int_equal(nla_put(m, DSMEM_ATTR_RDM_DATA, DSMEM_WIRE_MAX_DATA + 8, buf), 0);
	assert_int_equal(parse_rdm_read(m, va, buf, DSMEM_WIRE_MAX_DATA + 8), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_RDM_READ);	// no data at all
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, va);
	assert_int_equal(parse_rdm_read(m, va, buf, 0), -EBADMSG);
	nlmsg_free(m);
}

void test_request_room_for_rdm_write(void **)
{
	std::string data(DSMEM_WIRE_MAX_DATA, 'w');

	// a page-sized message cannot carry a full write...
	struct nl_msg *m = build_request(kFamily, DSMEM_CMD_RDM_WRITE, false);
	assert_non_null(m);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, 1);
	assert_true(nla_put(m, DSMEM_ATTR_RDM_DATA, data.size(), data.data()) < 0);
	nlmsg_free(m);

	// ...one sized for it can
	m = build_request(kFamily, DSMEM_CMD_RDM_WRITE, false,
			  256 + nla_total_size(data.size()));
	assert_non_null(m);
	assert_int_equal(nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3), 0);
	assert_int_equal(nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, 1), 0);
	assert_int_equal(nla_put(m, DSMEM_ATTR_RDM_DATA, data.size(), data.data()), 0);
	assert_true(nlmsg_hdr(m)->nlmsg_flags & NLM_F_ACK);
	nlmsg_free(m);
}

// ---- events ----

void test_event_node(void **)
{
	ds_event ev;
	struct nl_msg *m = reply(DSMEM_CMD_NODE_NEW);
	put_node(m);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_NODE_NEW);
	assert_int_equal(ev.node.id, 3);
	assert_string_equal(ev.node.dev_name, "rxe0");
	nlmsg_free(m);

	m = reply(DSMEM_CMD_NODE_DEL);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_NODE_DEL);
	assert_int_equal(ev.node.id, 3);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_NODE_NEW);	// NEW needs the whole node
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	assert_int_equal(parse_event(m, &ev), -EBADMSG);
	nlmsg_free(m);
}

void test_event_peer(void **)
{
	ds_event ev;
	struct nl_msg *m = peer4_reply(DSMEM_CMD_PEER_NEW, 0);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_PEER_NEW);
	assert_int_equal(ev.peer.id, 9);
	assert_string_equal(ev.peer.addr, "192.168.7.2");
	nlmsg_free(m);

	m = peer4_reply(DSMEM_CMD_PEER_STATE, 1);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_PEER_STATE);
	assert_int_equal(ev.peer.state, DS_PEER_UP);
	assert_int_equal(ev.peer.nrsegs, 1);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_PEER_DEL);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_PEER_ID, 9);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_PEER_DEL);
	assert_int_equal(ev.peer.node_id, 3);
	assert_int_equal(ev.peer.id, 9);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_PEER_STATE);	// a state change names the state
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_PEER_ID, 9);
	assert_int_equal(parse_event(m, &ev), -EBADMSG);
	nlmsg_free(m);
}

void test_event_seg(void **)
{
	ds_event ev;
	struct nl_msg *m = seg_reply(DSMEM_CMD_SEG_NEW, 1);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_SEG_NEW);
	assert_int_equal(ev.seg.id, 1);
	assert_int_equal(ev.seg.ngrants, 1);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SEG_DEL);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, 1);
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_SEG_DEL);
	assert_int_equal(ev.seg.node_id, 3);
	assert_int_equal(ev.seg.numa, -1);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SEG_DEL);	// without the segment id
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	assert_int_equal(parse_event(m, &ev), -EBADMSG);
	nlmsg_free(m);
}

void test_event_dev_and_unknown(void **)
{
	ds_event ev;
	struct nl_msg *m = reply(DSMEM_CMD_DEV_RENAME);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 2);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe9");
	assert_int_equal(parse_event(m, &ev), 0);
	assert_int_equal(ev.type, DS_EVENT_DEV_RENAME);
	assert_string_equal(ev.dev.name, "rxe9");
	nlmsg_free(m);

	// commands that are no event here, and a newer module's: skipped
	const uint8_t skipped[] = { DSMEM_CMD_SEG_GRANT, DSMEM_CMD_RDM_READ,
				    DSMEM_CMD_MAX + 1, 200 };
	for (uint8_t cmd : skipped) {
		m = reply(cmd);
		nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
		assert_int_equal(parse_event(m, &ev), -ENOMSG);
		nlmsg_free(m);
	}

	m = nlmsg_alloc_simple(kFamily, 0);	// no genl header
	assert_int_equal(parse_event(m, &ev), -EBADMSG);
	nlmsg_free(m);
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_node),
		cmocka_unit_test(test_node_ids_only),
		cmocka_unit_test(test_node_reject_wrong_widths),
		cmocka_unit_test(test_node_unknown_attr_ignored),
		cmocka_unit_test(test_node_reject_truncated),
		cmocka_unit_test(test_parse_peer_ipv4),
		cmocka_unit_test(test_parse_peer_ipv6),
		cmocka_unit_test(test_peer_not_yet_known),
		cmocka_unit_test(test_peer_rsegs_capped),
		cmocka_unit_test(test_peer_reject_bad_addr),
		cmocka_unit_test(test_peer_reject_missing),
		cmocka_unit_test(test_peer_reject_bad_rsegs),
		cmocka_unit_test(test_parse_seg),
		cmocka_unit_test(test_seg_numa),
		cmocka_unit_test(test_seg_grants_capped),
		cmocka_unit_test(test_seg_reject),
		cmocka_unit_test(test_rdm_alloc),
		cmocka_unit_test(test_rdm_read),
		cmocka_unit_test(test_request_room_for_rdm_write),
		cmocka_unit_test(test_event_node),
		cmocka_unit_test(test_event_peer),
		cmocka_unit_test(test_event_seg),
		cmocka_unit_test(test_event_dev_and_unknown),
	};
	return cmocka_run_group_tests_name("dsuser_objects", tests, nullptr, nullptr);
}
