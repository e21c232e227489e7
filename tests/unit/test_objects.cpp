// SPDX-License-Identifier: BSD-2-Clause
// libdsuser's codec for nodes, peers, segments, the RDM service, tokens,
// the token cache, the Slope range and their events: replies as the
// module writes them (u64s padded the way nla_put_u64_64bit pads them
// where alignment matters), and the malformed ones it refuses.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <linux/dsmem_token.h>

#include "ds_internal.hpp"
#include "tc_core.hpp"

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

void put_node_dev(struct nl_msg *m, uint32_t index, const char *name, int32_t numa)
{
	struct nlattr *d = nla_nest_start(m, DSMEM_ATTR_NODE_DEV);
	nla_put_u32(m, DSMEM_NODE_DEV_ATTR_INDEX, index);
	nla_put_string(m, DSMEM_NODE_DEV_ATTR_NAME, name);
	nla_put_s32(m, DSMEM_NODE_DEV_ATTR_NUMA, numa);
	nla_nest_end(m, d);
}

// A NODE_GET reply of a node on rxe0 (NUMA node 1) and rxe1 (none known).
struct nl_msg *node_devs_reply()
{
	struct nl_msg *m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_NODE_DEVS);
	put_node_dev(m, 7, "rxe0", 1);
	put_node_dev(m, 8, "rxe1", -1);
	nla_nest_end(m, l);
	return m;
}

void test_parse_node_devs(void **)
{
	struct nl_msg *m = node_devs_reply();
	std::vector<ds_node_dev> d;
	assert_int_equal(parse_node_devs(m, d), 0);
	assert_int_equal(d.size(), 2);
	assert_int_equal(d[0].index, 7);
	assert_string_equal(d[0].name, "rxe0");
	assert_int_equal(d[0].numa, 1);
	assert_int_equal(d[1].index, 8);
	assert_string_equal(d[1].name, "rxe1");
	assert_int_equal(d[1].numa, -1);
	// the node itself, as before: its first device
	ds_node_info n;
	assert_int_equal(parse_node(m, &n, true), 0);
	assert_string_equal(n.dev_name, "rxe0");
	nlmsg_free(m);

	// a module from before node-devs: the one device, NUMA node unknown
	m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	assert_int_equal(parse_node_devs(m, d), 0);
	assert_int_equal(d.size(), 1);
	assert_int_equal(d[0].index, 7);
	assert_string_equal(d[0].name, "rxe0");
	assert_int_equal(d[0].numa, -1);
	nlmsg_free(m);

	// numa absent: unknown
	m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_NODE_DEVS);
	struct nlattr *one = nla_nest_start(m, DSMEM_ATTR_NODE_DEV);
	nla_put_u32(m, DSMEM_NODE_DEV_ATTR_INDEX, 9);
	nla_put_string(m, DSMEM_NODE_DEV_ATTR_NAME, "mlx5_0");
	nla_nest_end(m, one);
	nla_nest_end(m, l);
	assert_int_equal(parse_node_devs(m, d), 0);
	assert_int_equal(d.size(), 1);
	assert_int_equal(d[0].numa, -1);
	nlmsg_free(m);
}

void test_parse_node_devs_refused(void **)
{
	std::vector<ds_node_dev> d;

	// a device without its name
	struct nl_msg *m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	struct nlattr *l = nla_nest_start(m, DSMEM_ATTR_NODE_DEVS);
	struct nlattr *one = nla_nest_start(m, DSMEM_ATTR_NODE_DEV);
	nla_put_u32(m, DSMEM_NODE_DEV_ATTR_INDEX, 9);
	nla_nest_end(m, one);
	nla_nest_end(m, l);
	assert_int_equal(parse_node_devs(m, d), -EBADMSG);
	nlmsg_free(m);

	// an index of the wrong width
	m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	l = nla_nest_start(m, DSMEM_ATTR_NODE_DEVS);
	one = nla_nest_start(m, DSMEM_ATTR_NODE_DEV);
	nla_put_u16(m, DSMEM_NODE_DEV_ATTR_INDEX, 9);
	nla_put_string(m, DSMEM_NODE_DEV_ATTR_NAME, "rxe0");
	nla_nest_end(m, one);
	nla_nest_end(m, l);
	assert_int_equal(parse_node_devs(m, d), -EBADMSG);
	nlmsg_free(m);

	// something else in the list
	m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	l = nla_nest_start(m, DSMEM_ATTR_NODE_DEVS);
	put_node_dev(m, 7, "rxe0", 0);
	nla_put_u32(m, DSMEM_ATTR_STAT, 1);
	nla_nest_end(m, l);
	assert_int_equal(parse_node_devs(m, d), -EBADMSG);
	nlmsg_free(m);

	// a list of no device (by hand: libnl's nla_nest_end drops an empty nest)
	m = reply(DSMEM_CMD_NODE_GET);
	put_node(m);
	assert_int_equal(nla_put(m, DSMEM_ATTR_NODE_DEVS, 0, nullptr), 0);
	assert_int_equal(parse_node_devs(m, d), -EBADMSG);
	nlmsg_free(m);

	// neither a list nor a device
	m = reply(DSMEM_CMD_NODE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 3);
	assert_int_equal(parse_node_devs(m, d), -EBADMSG);
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
	assert_int_equal(p.paths, 0);	// an older module says nothing
	nlmsg_free(m);

	// paths, as the module counts them, and clamped to the byte
	m = peer4_reply();
	nla_put_u32(m, DSMEM_ATTR_PEER_PATHS, 2);
	assert_int_equal(parse_peer(m, &p, true), 0);
	assert_int_equal(p.paths, 2);
	nlmsg_free(m);
	m = peer4_reply();
	nla_put_u32(m, DSMEM_ATTR_PEER_PATHS, 1000);
	assert_int_equal(parse_peer(m, &p, true), 0);
	assert_int_equal(p.paths, 255);
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
	std::string data(DSMEM_RDM_DATA_MAX, 'd');
	char buf[DSMEM_RDM_DATA_MAX + 8] = {};

	// the largest reply: more than a default (page-sized) message
	struct nl_msg *m = reply(DSMEM_CMD_RDM_READ, 2 * DSMEM_RDM_DATA_MAX);
	put_u64(m, DSMEM_ATTR_RDM_ADDR, va, DSMEM_ATTR_PAD);
	assert_int_equal(nla_put(m, DSMEM_ATTR_RDM_DATA, data.size(), data.data()), 0);
	assert_int_equal(parse_rdm_read(m, va, buf, data.size()), 0);
	assert_memory_equal(buf, data.data(), data.size());
	// fewer or more bytes than asked for, or another address
	assert_int_equal(parse_rdm_read(m, va, buf, data.size() - 1), -EBADMSG);
	assert_int_equal(parse_rdm_read(m, va, buf, data.size() + 1), -EBADMSG);
	assert_int_equal(parse_rdm_read(m, va + 8, buf, data.size()), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_RDM_READ, 2 * DSMEM_RDM_DATA_MAX + 64);	// too much
	assert_int_equal(nla_put(m, DSMEM_ATTR_RDM_DATA, DSMEM_RDM_DATA_MAX + 8, buf), 0);
	assert_int_equal(parse_rdm_read(m, va, buf, DSMEM_RDM_DATA_MAX + 8), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_RDM_READ);	// no data at all
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, va);
	assert_int_equal(parse_rdm_read(m, va, buf, 0), -EBADMSG);
	nlmsg_free(m);
}

void test_request_room_for_rdm_write(void **)
{
	std::string data(DSMEM_RDM_DATA_MAX, 'w');

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

// ---- tokens ----

// A QP token as the module packs it.
union dsmem_token qp_token(uint16_t index)
{
	union dsmem_token t = {};
	t.qp.hdr.type = DSMEM_TOKEN_QP;
	t.qp.hdr.version = DSMEM_TOKEN_VERSION;
	t.qp.hdr.index = index;
	t.qp.qpn = 17;
	t.qp.qp_type = 2;
	t.qp.state = 3;
	t.qp.pd_index = 1;
	t.qp.scq_index = 1;
	t.qp.rcq_index = 1;
	t.qp.access_flags = 7;
	return t;
}

const uint32_t kQpHandle = DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 2);	// 0xc0010002

// A TOKEN_GET reply as the module writes it; len: bytes of the token sent.
struct nl_msg *token_reply(const union dsmem_token &t, uint32_t handle = kQpHandle,
			   int len = DSMEM_QP_TOKEN_SIZE, bool node = true)
{
	struct nl_msg *m = reply(DSMEM_CMD_TOKEN_GET);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, handle);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_TYPE, t.hdr.type);
	nla_put(m, DSMEM_ATTR_TOKEN_DATA, len, &t);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_LAYER, DSMEM_TIER_L1);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_FLAGS, DSMEM_TOKEN_PINNED | DSMEM_TOKEN_DIRTY);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_VERSION, 7);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_OFFSET, 5);
	if (node)
		nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_string(m, DSMEM_ATTR_TOKEN_OBJECT, "node 1 peer 1 qp");
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HITS, 12);
	put_u64(m, DSMEM_ATTR_TOKEN_ACCESSES, 40, DSMEM_ATTR_PAD);
	return m;
}

void test_parse_token(void **)
{
	struct nl_msg *m = token_reply(qp_token(2));
	ds_token_info t;
	assert_int_equal(parse_token(m, &t), 0);
	assert_int_equal(t.handle, 0xc0010002U);
	assert_int_equal(t.type, DS_TOKEN_QP);
	assert_int_equal(t.index, 2);
	assert_int_equal(t.layer, DS_TIER_L1);
	assert_int_equal(t.flags, DS_TOKEN_PINNED | DS_TOKEN_DIRTY);
	assert_int_equal(t.version, 7);
	assert_int_equal(t.offset, 5);
	assert_int_equal(t.node, 1);
	assert_string_equal(t.object, "node 1 peer 1 qp");
	assert_int_equal(t.hits, 12);
	assert_int_equal(t.accesses, 40);
	assert_int_equal(t.data_len, DSMEM_QP_TOKEN_SIZE);
	union dsmem_token q = qp_token(2);
	assert_memory_equal(t.data, &q, DSMEM_QP_TOKEN_SIZE);
	nlmsg_free(m);

	m = token_reply(qp_token(2), kQpHandle, DSMEM_QP_TOKEN_SIZE, false);
	assert_int_equal(parse_token(m, &t), 0);
	assert_int_equal(t.node, 0);	// no owner
	nlmsg_free(m);
}

void test_token_fields(void **)
{
	struct nl_msg *m = token_reply(qp_token(2));
	ds_token_info t;
	assert_int_equal(parse_token(m, &t), 0);
	nlmsg_free(m);

	// the core's table, in layout order
	const char *want[] = { "qpn", "qp_type", "state", "pd_index", "scq_index",
			       "rcq_index", "access_flags" };
	const uint32_t values[] = { 17, 2, 3, 1, 1, 1, 7 };
	assert_int_equal(ds_token_field_count(&t), 7);
	for (unsigned int i = 0; i < 7; i++) {
		const char *name = nullptr;
		uint32_t v = 0;
		assert_int_equal(ds_token_field(&t, i, &name, &v), 0);
		assert_string_equal(name, want[i]);
		assert_int_equal(v, values[i]);
	}
	assert_int_equal(ds_token_field(&t, 7, nullptr, nullptr), -ENOENT);
	uint32_t v = 0;
	assert_int_equal(ds_token_field_get(&t, "state", &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(ds_token_field_get(&t, "lkey", &v), -ENOENT);	// an MR's

	// an MR: other fields, by the same calls
	union dsmem_token mr = {};
	dstc_token_init(&mr, DSMEM_TOKEN_MR, 9);
	mr.mr.lkey = 0x1234;
	mr.mr.n_pages = 0xffff;
	ds_token_info i{};
	i.type = DS_TOKEN_MR;
	i.data_len = DSMEM_MR_TOKEN_SIZE;
	memcpy(i.data, &mr, DSMEM_MR_TOKEN_SIZE);
	assert_int_equal(ds_token_field_count(&i), 4);
	assert_int_equal(ds_token_field_get(&i, "lkey", &v), 0);
	assert_int_equal(v, 0x1234);
	assert_int_equal(ds_token_field_get(&i, "n_pages", &v), 0);
	assert_int_equal(v, 0xffff);

	// no valid token: a zeroed info, a wrong size, a type that disagrees
	ds_token_info z{};
	assert_int_equal(ds_token_field_count(&z), -EINVAL);
	assert_int_equal(ds_token_field_count(nullptr), -EINVAL);
	i.data_len = DSMEM_MR_TOKEN_SIZE + 1;
	assert_int_equal(ds_token_field_count(&i), -EINVAL);
	i.data_len = DSMEM_MR_TOKEN_SIZE;
	i.type = DS_TOKEN_CQ;
	assert_int_equal(ds_token_field(&i, 0, nullptr, &v), -EINVAL);
	assert_int_equal(ds_token_field_get(&i, "lkey", &v), -EINVAL);
}

void test_token_type_names(void **)
{
	const char *names[] = { "pd", "mr", "cq", "qp", "db", "wqe" };
	for (int type = 0; type < 6; type++) {
		assert_string_equal(ds_token_type_name(type), names[type]);
		assert_int_equal(ds_token_type_lookup(names[type]), type);
	}
	assert_null(ds_token_type_name(6));
	assert_null(ds_token_type_name(-1));
	assert_int_equal(ds_token_type_lookup("QP"), -ENOENT);
	assert_int_equal(ds_token_type_lookup("q"), -ENOENT);
	assert_int_equal(ds_token_type_lookup(nullptr), -ENOENT);
}

void test_token_reject(void **)
{
	ds_token_info t;
	union dsmem_token q = qp_token(2);

	// a token cut short, or with a byte too many
	struct nl_msg *m = token_reply(q, kQpHandle, DSMEM_QP_TOKEN_SIZE - 1);
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);
	m = token_reply(q, kQpHandle, DSMEM_QP_TOKEN_SIZE + 1);
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);

	// another layout version
	q.hdr.version = DSMEM_TOKEN_VERSION + 1;
	m = token_reply(q);
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);

	// the handle names another type, or another index
	m = token_reply(qp_token(2), DSMEM_HANDLE(DSMEM_TOKEN_CQ, 1, 2));
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);
	m = token_reply(qp_token(2), DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 3));
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);

	// TOKEN_TYPE disagrees with the token's header
	m = reply(DSMEM_CMD_TOKEN_GET);
	q = qp_token(2);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, DSMEM_HANDLE(DSMEM_TOKEN_CQ, 1, 2));
	nla_put_u8(m, DSMEM_ATTR_TOKEN_TYPE, DSMEM_TOKEN_CQ);
	nla_put(m, DSMEM_ATTR_TOKEN_DATA, DSMEM_CQ_TOKEN_SIZE, &q);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_LAYER, DSMEM_TIER_L3);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_VERSION, 1);
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);

	// no data; a type of four bytes
	m = reply(DSMEM_CMD_TOKEN_GET);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, kQpHandle);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_TYPE, DSMEM_TOKEN_QP);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_LAYER, DSMEM_TIER_L3);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_VERSION, 1);
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);
	m = reply(DSMEM_CMD_TOKEN_GET);
	q = qp_token(2);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, kQpHandle);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_TYPE, DSMEM_TOKEN_QP);
	nla_put(m, DSMEM_ATTR_TOKEN_DATA, DSMEM_QP_TOKEN_SIZE, &q);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_LAYER, DSMEM_TIER_L3);
	nla_put_u32(m, DSMEM_ATTR_TOKEN_VERSION, 1);
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);

	// an object name that does not fit
	m = token_reply(qp_token(2));
	nla_put_string(m, DSMEM_ATTR_TOKEN_OBJECT, std::string(DS_NAME_MAX, 'o').c_str());
	assert_int_equal(parse_token(m, &t), -EBADMSG);
	nlmsg_free(m);
}

// ---- the token cache ----

void put_tier(struct nl_msg *m, uint8_t id, bool numa = true)
{
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_CACHE_TIER);
	nla_put_u8(m, DSMEM_TIER_ATTR_ID, id);
	nla_put_u32(m, DSMEM_TIER_ATTR_ENTRIES, id * 100U);
	nla_put_u32(m, DSMEM_TIER_ATTR_CAPACITY, id == DSMEM_TIER_L3 ? 0 : id * 1000U);
	put_u64(m, DSMEM_TIER_ATTR_BYTES, id * 4096ULL, DSMEM_TIER_ATTR_PAD);
	if (numa)
		nla_put_s32(m, DSMEM_TIER_ATTR_NUMA, 0);
	put_u64(m, DSMEM_TIER_ATTR_HITS, id * 10ULL, DSMEM_TIER_ATTR_PAD);
	put_u64(m, DSMEM_TIER_ATTR_MISSES, id, DSMEM_TIER_ATTR_PAD);
	put_u64(m, DSMEM_TIER_ATTR_PROMOTIONS, 3, DSMEM_TIER_ATTR_PAD);
	put_u64(m, DSMEM_TIER_ATTR_DEMOTIONS, 4, DSMEM_TIER_ATTR_PAD);
	put_u64(m, DSMEM_TIER_ATTR_EVICTIONS, 5, DSMEM_TIER_ATTR_PAD);
	put_u64(m, DSMEM_TIER_ATTR_COST_MEAN_NS, id * 7ULL, DSMEM_TIER_ATTR_PAD);
	put_u64(m, DSMEM_TIER_ATTR_COST_P99_NS, id * 9ULL, DSMEM_TIER_ATTR_PAD);
	nla_nest_end(m, n);
}

void put_stat(struct nl_msg *m, const char *name, uint64_t v)
{
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_STAT);
	nla_put_string(m, DSMEM_STAT_ATTR_NAME, name);
	put_u64(m, DSMEM_STAT_ATTR_VALUE, v, DSMEM_STAT_ATTR_PAD);
	nla_nest_end(m, n);
}

struct cache_opts {
	int skip_param = -1;	// a parameter left out
	bool param_u32 = false;	// window sent as a u32
	bool newer_param = false;	// one past what this library knows
	uint8_t skip_tier = 0;
	uint8_t dup_tier = 0;
	uint8_t extra_tier = 0;	// an id of a later module, or 0
	int nstats = DSTC_S_NR;
	bool scalars = true;
};

// A CACHE_GET reply as the module writes it: tiers L3, L1, L2 (any
// order), the core's counters.
struct nl_msg *cache_reply(uint8_t cmd = DSMEM_CMD_CACHE_GET, const cache_opts &o = {})
{
	struct nl_msg *m = reply(cmd, 65536);
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_CACHE_PARAMS);
	for (int i = 0; i < DSMEM_CACHE_P_NR; i++) {
		if (i == o.skip_param)
			continue;
		if (o.param_u32 && i == DSMEM_CACHE_P_WINDOW_NS)
			nla_put_u32(m, i + 1, 5);
		else
			nla_put_u64(m, i + 1, dstc_params[i].def);
	}
	if (o.newer_param)
		nla_put_u64(m, DSMEM_CACHE_P_NR + 1, 77);
	nla_nest_end(m, n);

	n = nla_nest_start(m, DSMEM_ATTR_CACHE_TIERS);
	for (uint8_t id : { DSMEM_TIER_L3, DSMEM_TIER_L1, DSMEM_TIER_L2 }) {
		if (id == o.skip_tier)
			continue;
		put_tier(m, id, id != DSMEM_TIER_L2);
		if (id == o.dup_tier)
			put_tier(m, id);
	}
	if (o.extra_tier)
		put_tier(m, o.extra_tier);
	nla_nest_end(m, n);

	n = nla_nest_start(m, DSMEM_ATTR_CACHE_STATS);
	for (int i = 0; i < o.nstats; i++) {
		std::string name = i < DSTC_S_NR ? dstc_stat_names[i] : "later_" + std::to_string(i);
		put_stat(m, name.c_str(), 1000 + i);
	}
	nla_nest_end(m, n);

	if (o.scalars) {
		nla_put_u32(m, DSMEM_ATTR_CACHE_PROMOTE_L1, 96);
		nla_put_u32(m, DSMEM_ATTR_CACHE_PROMOTE_L2, 12);
		nla_put_u32(m, DSMEM_ATTR_CACHE_ENTRIES, 5000);
	}
	nla_put_u32(m, DSMEM_ATTR_CACHE_PINNED, 2);
	nla_put_u32(m, DSMEM_ATTR_CACHE_QUEUED, 3);
	put_u64(m, DSMEM_ATTR_CACHE_MIGRATE_RATE, 120, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_CACHE_MIGRATE_LAT_MEAN, 950, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_CACHE_MIGRATE_LAT_P99, 4100, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_CACHE_DMA_RATE, 7680, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_CACHE_DMA_PREFETCH_RATE, 640, DSMEM_ATTR_PAD);
	nla_put_u8(m, DSMEM_ATTR_TRACE_ACTIVE, 1);
	put_u64(m, DSMEM_ATTR_TRACE_RECORDS, 100, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_TRACE_DROPPED, 5, DSMEM_ATTR_PAD);
	return m;
}

void test_parse_cache(void **)
{
	struct nl_msg *m = cache_reply();
	auto *c = new ds_cache_info;
	assert_int_equal(parse_cache(m, c), 0);
	nlmsg_free(m);

	assert_int_equal(c->nparams, DS_CACHE_P_NR);
	for (int i = 0; i < DS_CACHE_P_NR; i++)
		assert_true(c->params[i] == dstc_params[i].def);
	assert_true(c->params[DS_CACHE_P_WINDOW_NS] == 100000000ULL);
	for (int i = 0; i < DS_CACHE_TIERS; i++) {
		const ds_cache_tier &t = c->tiers[i];
		assert_int_equal(t.id, i + 1);	// in order, whatever the order sent
		assert_int_equal(t.entries, (i + 1) * 100);
		assert_int_equal(t.bytes, (i + 1) * 4096);
		assert_int_equal(t.hits, (i + 1) * 10);
		assert_int_equal(t.misses, i + 1);
		assert_int_equal(t.promotions, 3);
		assert_int_equal(t.demotions, 4);
		assert_int_equal(t.evictions, 5);
		assert_int_equal(t.cost_mean_ns, (i + 1) * 7);
		assert_int_equal(t.cost_p99_ns, (i + 1) * 9);
	}
	assert_int_equal(c->tiers[0].capacity, 1000);
	assert_int_equal(c->tiers[2].capacity, 0);	// L3: unbounded
	assert_int_equal(c->tiers[0].numa, 0);
	assert_int_equal(c->tiers[1].numa, -1);	// absent: any
	assert_int_equal(c->nstats, DSTC_S_NR);
	assert_int_equal(c->stat_total, DSTC_S_NR);
	assert_string_equal(c->stats[0].name, "hits_l1");
	assert_int_equal(c->stats[0].value, 1000);
	assert_int_equal(c->promote_l1, 96);
	assert_int_equal(c->promote_l2, 12);
	assert_int_equal(c->entries, 5000);
	assert_int_equal(c->pinned, 2);
	assert_int_equal(c->queued, 3);
	assert_int_equal(c->migrate_rate, 120);
	assert_int_equal(c->migrate_lat_mean_ns, 950);
	assert_int_equal(c->migrate_lat_p99_ns, 4100);
	assert_int_equal(c->dma_rate, 7680);
	assert_int_equal(c->dma_prefetch_rate, 640);
	assert_int_equal(c->trace_active, 1);
	assert_int_equal(c->trace_records, 100);
	assert_int_equal(c->trace_dropped, 5);

	uint64_t v = 0;
	assert_int_equal(ds_cache_stat(c, "cas_fallbacks", &v), 0);
	assert_int_equal(v, 1000 + DSTC_S_CAS_FALLBACKS);
	assert_int_equal(ds_cache_stat(c, "bogus", &v), -ENOENT);
	assert_int_equal(ds_cache_stat(nullptr, "hits_l1", &v), -EINVAL);
	delete c;
}

void test_cache_newer_module(void **)
{
	// a parameter, a tier and counters this library does not know
	cache_opts o;
	o.newer_param = true;
	o.extra_tier = DSMEM_TIER_L3 + 1;
	o.nstats = DS_CACHE_STATS_MAX + 3;
	struct nl_msg *m = cache_reply(DSMEM_CMD_CACHE_GET, o);
	auto *c = new ds_cache_info;
	assert_int_equal(parse_cache(m, c), 0);
	assert_int_equal(c->nparams, DS_CACHE_P_NR);
	assert_int_equal(c->params[DS_CACHE_P_NR], 0);
	assert_int_equal(c->tiers[2].id, DSMEM_TIER_L3);
	assert_int_equal(c->nstats, DS_CACHE_STATS_MAX);
	assert_int_equal(c->stat_total, DS_CACHE_STATS_MAX + 3);
	nlmsg_free(m);
	delete c;
}

void test_cache_reject(void **)
{
	auto *c = new ds_cache_info;
	auto refused = [c](const cache_opts &o) {
		struct nl_msg *m = cache_reply(DSMEM_CMD_CACHE_GET, o);
		int ret = parse_cache(m, c);
		nlmsg_free(m);
		return ret == -EBADMSG;
	};
	cache_opts o;

	o.skip_param = DSMEM_CACHE_P_AGING_NS;	// every parameter is reported
	assert_true(refused(o));
	o = {};
	o.param_u32 = true;
	assert_true(refused(o));
	o = {};
	o.skip_tier = DSMEM_TIER_L2;
	assert_true(refused(o));
	o = {};
	o.dup_tier = DSMEM_TIER_L1;
	assert_true(refused(o));
	o = {};
	o.extra_tier = 0xff;	// still past what is known: skipped, not refused
	assert_false(refused(o));
	o = {};
	o.scalars = false;
	assert_true(refused(o));

	// a tier without an id, a counter without a value
	struct nl_msg *m = cache_reply();
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_CACHE_TIERS);
	struct nlattr *t = nla_nest_start(m, DSMEM_ATTR_CACHE_TIER);
	nla_put_u32(m, DSMEM_TIER_ATTR_ENTRIES, 1);
	nla_put_u32(m, DSMEM_TIER_ATTR_CAPACITY, 1);
	nla_nest_end(m, t);
	nla_nest_end(m, n);	// the later CACHE_TIERS is the one parsed
	assert_int_equal(parse_cache(m, c), -EBADMSG);
	nlmsg_free(m);

	m = cache_reply();
	n = nla_nest_start(m, DSMEM_ATTR_CACHE_STATS);
	t = nla_nest_start(m, DSMEM_ATTR_STAT);
	nla_put_string(m, DSMEM_STAT_ATTR_NAME, "hits_l1");
	nla_nest_end(m, t);
	nla_nest_end(m, n);
	assert_int_equal(parse_cache(m, c), -EBADMSG);
	nlmsg_free(m);
	delete c;
}

void test_parse_trace_and_bench(void **)
{
	ds_trace_info t;
	struct nl_msg *m = reply(DSMEM_CMD_TRACE_STOP);
	put_u64(m, DSMEM_ATTR_TRACE_RECORDS, 1234, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_TRACE_DROPPED, 5, DSMEM_ATTR_PAD);
	nla_put_u32(m, DSMEM_ATTR_TRACE_ERRNO, ENOSPC);
	assert_int_equal(parse_trace(m, &t, true), 0);
	assert_int_equal(t.records, 1234);
	assert_int_equal(t.dropped, 5);
	assert_int_equal(t.error, ENOSPC);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_TRACE_STOP);	// no dropped count
	put_u64(m, DSMEM_ATTR_TRACE_RECORDS, 1, DSMEM_ATTR_PAD);
	assert_int_equal(parse_trace(m, &t, true), -EBADMSG);
	assert_int_equal(parse_trace(m, &t, false), 0);	// enough for a START event
	nlmsg_free(m);

	ds_cache_bench_result b;
	m = reply(DSMEM_CMD_CACHE_BENCH);
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_BENCH_RESULT);
	for (int a = DSMEM_BENCH_ATTR_ACCESSES; a <= DSMEM_BENCH_ATTR_MAX; a++)
		put_u64(m, a, 100 + a, DSMEM_BENCH_ATTR_PAD);
	nla_nest_end(m, n);
	assert_int_equal(parse_bench(m, &b), 0);
	assert_int_equal(b.accesses, 100 + DSMEM_BENCH_ATTR_ACCESSES);
	assert_int_equal(b.hits_l1, 100 + DSMEM_BENCH_ATTR_HITS_L1);
	assert_int_equal(b.hits_l3, 100 + DSMEM_BENCH_ATTR_HITS_L3);
	assert_int_equal(b.modeled_ns, 100 + DSMEM_BENCH_ATTR_MODELED_NS);
	assert_int_equal(b.miss_p99_ns, 100 + DSMEM_BENCH_ATTR_MISS_P99_NS);
	assert_int_equal(b.migrations, 100 + DSMEM_BENCH_ATTR_MIGRATIONS);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_CACHE_BENCH);	// a u64 sent as a u32
	n = nla_nest_start(m, DSMEM_ATTR_BENCH_RESULT);
	nla_put_u64(m, DSMEM_BENCH_ATTR_ACCESSES, 1);
	nla_put_u32(m, DSMEM_BENCH_ATTR_HITS_L2, 1);
	nla_nest_end(m, n);
	assert_int_equal(parse_bench(m, &b), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_CACHE_BENCH);	// no result at all
	assert_int_equal(parse_bench(m, &b), -EBADMSG);
	nlmsg_free(m);
}

void test_cache_param_table(void **)
{
	assert_int_equal(ds_cache_param_count(), DS_CACHE_P_NR);
	for (unsigned int i = 0; i < DS_CACHE_P_NR; i++) {
		ds_cache_param_desc d;
		assert_int_equal(ds_cache_param_describe(i, &d), 0);
		// the module's table, not a copy
		assert_ptr_equal(d.name, dstc_params[i].name);
		assert_ptr_equal(ds_cache_param_name(i), dstc_params[i].name);
		assert_true(d.min == dstc_params[i].min && d.max == dstc_params[i].max &&
			    d.def == dstc_params[i].def);
		assert_string_equal(d.unit, dstc_params[i].unit);
		assert_int_equal(ds_cache_param_lookup(d.name), i);
	}
	ds_cache_param_desc d;
	assert_int_equal(ds_cache_param_describe(DS_CACHE_P_NR, &d), -ENOENT);
	assert_int_equal(ds_cache_param_describe(0, nullptr), -EINVAL);
	assert_null(ds_cache_param_name(DS_CACHE_P_NR));
	assert_int_equal(ds_cache_param_lookup("window"), DS_CACHE_P_WINDOW_NS);
	assert_int_equal(ds_cache_param_lookup("window_ns"), -ENOENT);
	assert_int_equal(ds_cache_param_lookup(nullptr), -ENOENT);
}

// What the library refuses before it sends anything.
void test_token_cache_requests_refused(void **)
{
	ds_ctx ctx;	// never connected: nothing here may reach a socket
	uint64_t params[DS_CACHE_PARAMS_MAX] = {};
	ds_token_info *list = nullptr;
	size_t n = 0;

	assert_int_equal(ds_token_list(&ctx, DS_TOKEN_WQE + 1, 0, &list, &n), -EINVAL);
	assert_int_equal(ds_token_list(&ctx, -2, 0, &list, &n), -EINVAL);
	assert_string_equal(ds_ctx_errmsg(&ctx), "unknown token type");

	ds_token_update u{};
	u.mask = DS_TOKEN_SET_LAYER;
	u.layer = 4;
	assert_int_equal(ds_token_set(&ctx, kQpHandle, &u, nullptr), -EINVAL);
	u.mask = DS_TOKEN_SET_PINNED;
	u.pinned = 2;
	assert_int_equal(ds_token_set(&ctx, kQpHandle, &u, nullptr), -EINVAL);
	u.mask = 0x80;
	assert_int_equal(ds_token_set(&ctx, kQpHandle, &u, nullptr), -EINVAL);
	assert_int_equal(ds_token_set(&ctx, kQpHandle, nullptr, nullptr), -EINVAL);

	// ranges of the core's table, named
	params[DS_CACHE_P_L1_CAPACITY] = DSTC_L1_MAX + 1;
	assert_int_equal(ds_cache_set(&ctx, params, 1ULL << DS_CACHE_P_L1_CAPACITY, 0, nullptr),
			 -ERANGE);
	assert_string_equal(ds_ctx_errmsg(&ctx), "l1_capacity out of range: 1 to 16384 entries");
	params[DS_CACHE_P_WINDOW_NS] = 999;
	assert_int_equal(ds_cache_bench(&ctx, 8, 100, 1, params, 1ULL << DS_CACHE_P_WINDOW_NS,
					nullptr), -ERANGE);
	assert_string_equal(ds_ctx_errmsg(&ctx), "window out of range: 1000 to 60000000000 ns");
	assert_int_equal(ds_cache_set(&ctx, params, 1ULL << DS_CACHE_P_NR, 0, nullptr), -EINVAL);
	assert_int_equal(ds_cache_set(&ctx, nullptr, 1, 0, nullptr), -EINVAL);
	assert_int_equal(ds_cache_bench(&ctx, 0, 100, 1, nullptr, 0, nullptr), -EINVAL);
	assert_int_equal(ds_cache_bench(&ctx, DS_CACHE_BENCH_QPS_MAX + 1, 100, 1, nullptr, 0,
					nullptr), -EINVAL);
	assert_int_equal(ds_trace_start(&ctx, -1), -EBADF);
}

void test_event_cache(void **)
{
	auto *ev = new ds_event;
	struct nl_msg *m = cache_reply(DSMEM_CMD_CACHE_SET);
	assert_int_equal(parse_event(m, ev), 0);
	assert_int_equal(ev->type, DS_EVENT_CACHE_SET);
	assert_int_equal(ev->cache.entries, 5000);
	assert_int_equal(ev->cache.tiers[0].id, DS_TIER_L1);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_TRACE_START);	// may say nothing more
	assert_int_equal(parse_event(m, ev), 0);
	assert_int_equal(ev->type, DS_EVENT_TRACE_START);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_TRACE_STOP);
	put_u64(m, DSMEM_ATTR_TRACE_RECORDS, 10, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_TRACE_DROPPED, 0, DSMEM_ATTR_PAD);
	nla_put_u32(m, DSMEM_ATTR_TRACE_ERRNO, EIO);
	assert_int_equal(parse_event(m, ev), 0);
	assert_int_equal(ev->type, DS_EVENT_TRACE_STOP);
	assert_int_equal(ev->trace.records, 10);
	assert_int_equal(ev->trace.error, EIO);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_TRACE_STOP);	// a stop says how it went
	assert_int_equal(parse_event(m, ev), -EBADMSG);
	nlmsg_free(m);

	// requests that are no events
	for (uint8_t cmd : { DSMEM_CMD_TOKEN_GET, DSMEM_CMD_TOKEN_SET, DSMEM_CMD_CACHE_GET,
			     DSMEM_CMD_CACHE_BENCH }) {
		m = reply(cmd);
		assert_int_equal(parse_event(m, ev), -ENOMSG);
		nlmsg_free(m);
	}
	delete ev;
}

// ---- the Slope range ----

// A SLOPE_GET summary as the module writes it (do reply, first dump message).
struct nl_msg *slope_summary_reply(uint32_t node = 1)
{
	struct nl_msg *m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, node);
	put_u64(m, DSMEM_ATTR_SLOPE_BASE, DSMEM_SLOPE_BASE, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_SLOPE_SIZE, DSMEM_SLOPE_SIZE, DSMEM_ATTR_PAD);
	put_u64(m, DSMEM_ATTR_SLOPE_PAGES, 1536, DSMEM_ATTR_PAD);
	nla_put_u32(m, DSMEM_ATTR_SLOPE_LEASES_HELD, 2);
	nla_put_u32(m, DSMEM_ATTR_SLOPE_LEASES_FREE, 63);
	return m;
}

// A dump message with one lease; used < 0: one given to another node.
struct nl_msg *slope_lease_reply(uint64_t base, uint32_t holder, int64_t used)
{
	struct nl_msg *m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_SLOPE_LEASE);
	put_u64(m, DSMEM_SLOPE_LEASE_ATTR_BASE, base, DSMEM_SLOPE_LEASE_ATTR_PAD);
	nla_put_u32(m, DSMEM_SLOPE_LEASE_ATTR_HOLDER, holder);
	nla_put_u32(m, DSMEM_SLOPE_LEASE_ATTR_RESPONSIBLE, DSMEM_SLOPE_ADDR_NODE(base));
	if (used >= 0)
		put_u64(m, DSMEM_SLOPE_LEASE_ATTR_USED, static_cast<uint64_t>(used),
			DSMEM_SLOPE_LEASE_ATTR_PAD);
	nla_nest_end(m, n);
	return m;
}

// A migration nest as dsmem_slope_fill_mig() writes it.
void put_slope_mig(struct nl_msg *m, uint64_t id, uint8_t state)
{
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_SLOPE_MIG);
	nla_put_u8(m, DSMEM_SLOPE_MIG_ATTR_STATE, state);
	nla_put_u32(m, DSMEM_SLOPE_MIG_ATTR_ERRNO, state == DSMEM_SLOPE_MIG_FAILED ? ECONNRESET : 0);
	nla_put_u32(m, DSMEM_SLOPE_MIG_ATTR_PEER, 2);
	nla_put_u8(m, DSMEM_SLOPE_MIG_ATTR_INCOMING, 0);
	nla_put_u8(m, DSMEM_SLOPE_MIG_ATTR_UNIT_SHIFT, 12);
	nla_put_u32(m, DSMEM_SLOPE_MIG_ATTR_ROUNDS, 3);
	const uint64_t vals[] = { id, DSMEM_SLOPE_BASE + 0x1000, 10240, 12000, 600, 120, 0, 7,
				  1500000000, 20000000, 3000000, 0, 1600000000, 900000000 };
	const int attrs[] = { DSMEM_SLOPE_MIG_ATTR_ID, DSMEM_SLOPE_MIG_ATTR_COOKIE,
			      DSMEM_SLOPE_MIG_ATTR_PAGES, DSMEM_SLOPE_MIG_ATTR_SENT,
			      DSMEM_SLOPE_MIG_ATTR_DIRTY, DSMEM_SLOPE_MIG_ATTR_PULLED,
			      DSMEM_SLOPE_MIG_ATTR_FAILED, DSMEM_SLOPE_MIG_ATTR_FAULT_WAITS,
			      DSMEM_SLOPE_MIG_ATTR_PREFILL_NS, DSMEM_SLOPE_MIG_ATTR_STOP_NS,
			      DSMEM_SLOPE_MIG_ATTR_NO_OWNER_NS, DSMEM_SLOPE_MIG_ATTR_PULL_NS,
			      DSMEM_SLOPE_MIG_ATTR_TOTAL_NS, DSMEM_SLOPE_MIG_ATTR_FIRST_ROUND_NS };
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		put_u64(m, attrs[i], vals[i], DSMEM_SLOPE_MIG_ATTR_PAD);
	nla_nest_end(m, n);
}

struct nl_msg *slope_mig_reply(uint8_t cmd, uint64_t id, uint8_t state)
{
	struct nl_msg *m = reply(cmd);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	put_slope_mig(m, id, state);
	return m;
}

void test_slope_summary(void **)
{
	struct nl_msg *m = slope_summary_reply();
	ds_slope_range_info r;
	assert_int_equal(parse_slope_range(m, &r), 0);
	assert_int_equal(r.node_id, 1);
	assert_true(r.base == DSMEM_SLOPE_BASE);
	assert_true(r.size == DSMEM_SLOPE_SIZE);
	assert_int_equal(r.pages, 1536);
	assert_int_equal(r.leases_held, 2);
	assert_int_equal(r.leases_free, 63);
	nlmsg_free(m);

	// a newer module's attribute is skipped; what is missing is 0
	m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 4);
	nla_put_u32(m, DSMEM_ATTR_SLOPE_LEASES_HELD, 1);
	nla_put_u32(m, DSMEM_ATTR_MAX + 5, 9);
	assert_int_equal(parse_slope_range(m, &r), 0);
	assert_int_equal(r.node_id, 4);
	assert_int_equal(r.leases_held, 1);
	assert_true(r.base == 0 && r.pages == 0 && r.leases_free == 0);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_GET);	// without its node
	put_u64(m, DSMEM_ATTR_SLOPE_PAGES, 1, DSMEM_ATTR_PAD);
	assert_int_equal(parse_slope_range(m, &r), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_GET);	// pages as a u32
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_u32(m, DSMEM_ATTR_SLOPE_PAGES, 1);
	assert_int_equal(parse_slope_range(m, &r), -EBADMSG);
	nlmsg_free(m);
}

void test_slope_dump(void **)
{
	slope_dump d;
	const uint64_t lease1 = DSMEM_SLOPE_BASE + DSMEM_SLOPE_LEASE_SIZE;
	struct nl_msg *msgs[] = {
		slope_summary_reply(),
		slope_lease_reply(DSMEM_SLOPE_BASE, 1, 1536),
		slope_lease_reply(lease1, 2, -1),
		slope_mig_reply(DSMEM_CMD_SLOPE_GET, 3, DSMEM_SLOPE_MIG_HANDED_OVER),
		slope_mig_reply(DSMEM_CMD_SLOPE_GET, 4, DSMEM_SLOPE_MIG_FAILED),
	};
	for (struct nl_msg *m : msgs) {
		assert_int_equal(parse_slope_dump(m, d), 0);
		nlmsg_free(m);
	}
	assert_int_equal(d.ranges.size(), 1);
	assert_int_equal(d.ranges[0].leases_free, 63);
	assert_int_equal(d.leases.size(), 2);
	assert_int_equal(d.leases[0].node_id, 1);
	assert_true(d.leases[0].base == DSMEM_SLOPE_BASE);
	assert_int_equal(d.leases[0].held, 1);
	assert_int_equal(d.leases[0].used, 1536);
	assert_int_equal(d.leases[0].responsible, 1);
	assert_true(d.leases[1].base == lease1);
	assert_int_equal(d.leases[1].held, 0);	// given to node 2
	assert_int_equal(d.leases[1].holder, 2);
	assert_int_equal(d.migs.size(), 2);
	const ds_slope_mig_info &g = d.migs[0];
	assert_int_equal(g.node_id, 1);
	assert_int_equal(g.id, 3);
	assert_int_equal(g.state, DSMEM_SLOPE_MIG_HANDED_OVER);
	assert_int_equal(g.peer, 2);
	assert_int_equal(g.incoming, 0);
	assert_int_equal(g.unit_shift, 12);
	assert_int_equal(g.rounds, 3);
	assert_true(g.cookie == DSMEM_SLOPE_BASE + 0x1000);
	assert_int_equal(g.pages, 10240);
	assert_int_equal(g.sent_units, 12000);
	assert_int_equal(g.dirty_units, 600);
	assert_int_equal(g.pulled_units, 120);
	assert_int_equal(g.fault_waits, 7);
	assert_int_equal(g.prefill_ns, 1500000000);
	assert_int_equal(g.pull_ns, 0);
	assert_int_equal(g.first_round_ns, 900000000);
	assert_int_equal(g.error, 0);
	assert_int_equal(d.migs[1].error, ECONNRESET);
}

void test_slope_dump_robust(void **)
{
	slope_dump d;

	// a message of none of the three kinds (a newer module's) is skipped
	struct nl_msg *m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_MAX + 2);
	nla_put_u32(m, 1, 5);
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), 0);
	assert_true(d.ranges.empty() && d.leases.empty() && d.migs.empty());
	nlmsg_free(m);

	// a lease of nothing but its base; a migration of its id and state,
	// with an attribute of a newer module's
	m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	n = nla_nest_start(m, DSMEM_ATTR_SLOPE_LEASE);
	nla_put_u64(m, DSMEM_SLOPE_LEASE_ATTR_BASE, DSMEM_SLOPE_BASE);
	nla_put_u32(m, DSMEM_SLOPE_LEASE_ATTR_MAX + 1, 7);
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), 0);
	nlmsg_free(m);
	assert_int_equal(d.leases.size(), 1);
	assert_int_equal(d.leases[0].holder, 0);
	assert_int_equal(d.leases[0].held, 0);

	m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	n = nla_nest_start(m, DSMEM_ATTR_SLOPE_MIG);
	nla_put_u64(m, DSMEM_SLOPE_MIG_ATTR_ID, 9);
	nla_put_u8(m, DSMEM_SLOPE_MIG_ATTR_STATE, DSMEM_SLOPE_MIG_INCOMING);
	nla_put_u64(m, DSMEM_SLOPE_MIG_ATTR_MAX + 1, 1);
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), 0);
	nlmsg_free(m);
	assert_int_equal(d.migs.size(), 1);
	assert_int_equal(d.migs[0].id, 9);
	assert_int_equal(d.migs[0].state, DSMEM_SLOPE_MIG_INCOMING);
	assert_int_equal(d.migs[0].unit_shift, 0);
	assert_int_equal(d.migs[0].total_ns, 0);

	// refused: a lease without its base, a migration without its state,
	// a lease without a node, a field of the wrong width
	m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	n = nla_nest_start(m, DSMEM_ATTR_SLOPE_LEASE);
	nla_put_u32(m, DSMEM_SLOPE_LEASE_ATTR_HOLDER, 1);
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	n = nla_nest_start(m, DSMEM_ATTR_SLOPE_MIG);
	nla_put_u64(m, DSMEM_SLOPE_MIG_ATTR_ID, 9);
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_GET);
	n = nla_nest_start(m, DSMEM_ATTR_SLOPE_LEASE);
	nla_put_u64(m, DSMEM_SLOPE_LEASE_ATTR_BASE, DSMEM_SLOPE_BASE);
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_GET);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	n = nla_nest_start(m, DSMEM_ATTR_SLOPE_MIG);
	nla_put_u64(m, DSMEM_SLOPE_MIG_ATTR_ID, 9);
	nla_put_u32(m, DSMEM_SLOPE_MIG_ATTR_STATE, DSMEM_SLOPE_MIG_DONE);	// a u8
	nla_nest_end(m, n);
	assert_int_equal(parse_slope_dump(m, d), -EBADMSG);
	nlmsg_free(m);

	// nothing was added by the refused ones
	assert_int_equal(d.leases.size(), 1);
	assert_int_equal(d.migs.size(), 1);
}

void test_event_slope_mig(void **)
{
	auto *ev = new ds_event;
	struct nl_msg *m = slope_mig_reply(DSMEM_CMD_SLOPE_MIG, 3, DSMEM_SLOPE_MIG_DONE);
	assert_int_equal(parse_event(m, ev), 0);
	assert_int_equal(ev->type, DS_EVENT_SLOPE_MIG);
	assert_int_equal(ev->slope_mig.node_id, 1);
	assert_int_equal(ev->slope_mig.id, 3);
	assert_int_equal(ev->slope_mig.state, DSMEM_SLOPE_MIG_DONE);
	assert_int_equal(ev->slope_mig.total_ns, 1600000000);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_MIG);	// an event names its migration
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	assert_int_equal(parse_event(m, ev), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_SLOPE_GET);	// a reply is no event
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	assert_int_equal(parse_event(m, ev), -ENOMSG);
	nlmsg_free(m);
	delete ev;
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
		cmocka_unit_test(test_parse_node_devs),
		cmocka_unit_test(test_parse_node_devs_refused),
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
		cmocka_unit_test(test_parse_token),
		cmocka_unit_test(test_token_fields),
		cmocka_unit_test(test_token_type_names),
		cmocka_unit_test(test_token_reject),
		cmocka_unit_test(test_parse_cache),
		cmocka_unit_test(test_cache_newer_module),
		cmocka_unit_test(test_cache_reject),
		cmocka_unit_test(test_parse_trace_and_bench),
		cmocka_unit_test(test_cache_param_table),
		cmocka_unit_test(test_token_cache_requests_refused),
		cmocka_unit_test(test_event_cache),
		cmocka_unit_test(test_slope_summary),
		cmocka_unit_test(test_slope_dump),
		cmocka_unit_test(test_slope_dump_robust),
		cmocka_unit_test(test_event_slope_mig),
	};
	return cmocka_run_group_tests_name("dsuser_objects", tests, nullptr, nullptr);
}
