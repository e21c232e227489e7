// SPDX-License-Identifier: BSD-2-Clause
// libdsuser's netlink codec: requests it builds, replies it accepts and
// the malformed replies it refuses; a node's device list as ds_node_add
// takes it.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <linux/dsmem_netlink.h>

#include "ds_internal.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::detail;

namespace {

constexpr int kFamily = 0x21;

struct nl_msg *reply(uint8_t cmd)
{
	struct nl_msg *m = nlmsg_alloc();
	assert_non_null(m);
	assert_non_null(genlmsg_put(m, 0, 1, kFamily, 0, 0, cmd, DSMEM_GENL_VERSION));
	return m;
}

void put_port(struct nl_msg *m, uint32_t idx, const char *netdev)
{
	struct nlattr *p = nla_nest_start(m, DSMEM_ATTR_PORT);
	nla_put_u32(m, DSMEM_PORT_ATTR_INDEX, idx);
	nla_put_u8(m, DSMEM_PORT_ATTR_STATE, 4);
	nla_put_u32(m, DSMEM_PORT_ATTR_ACTIVE_MTU, 1024);
	nla_put_u8(m, DSMEM_PORT_ATTR_LINK_LAYER, 2);
	if (netdev)
		nla_put_string(m, DSMEM_PORT_ATTR_NETDEV, netdev);
	nla_nest_end(m, p);
}

// A DEV_GET reply as dsmem_nl_fill_dev() writes it.
struct nl_msg *dev_reply(int nports = 1)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 7);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	nla_put_u64(m, DSMEM_ATTR_DEV_NODE_GUID, 0x505400fffe123456ULL);
	nla_put_u8(m, DSMEM_ATTR_DEV_NODE_TYPE, 1);
	nla_put_string(m, DSMEM_ATTR_DEV_FW_VERSION, "6.1.0");
	nla_put_u32(m, DSMEM_ATTR_DEV_PORT_COUNT, nports);
	nla_put_u32(m, DSMEM_ATTR_DEV_MAX_QP, 1000);
	nla_put_u32(m, DSMEM_ATTR_DEV_MAX_CQE, 2000);
	nla_put_u32(m, DSMEM_ATTR_DEV_MAX_MR, 3000);
	nla_put_u32(m, DSMEM_ATTR_DEV_MAX_QP_WR, 4000);
	nla_put_u8(m, DSMEM_ATTR_DEV_ATOMIC_CAP, 1);
	struct nlattr *ports = nla_nest_start(m, DSMEM_ATTR_DEV_PORTS);
	for (int i = 1; i <= nports; i++)
		put_port(m, i, "veth0");
	nla_nest_end(m, ports);
	return m;
}

void test_build_request_do_and_dump(void **)
{
	struct nl_msg *m = build_request(kFamily, DSMEM_CMD_DEV_GET, false);
	struct nlmsghdr *h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, kFamily);
	assert_true(h->nlmsg_flags & NLM_F_ACK);
	assert_false(h->nlmsg_flags & NLM_F_DUMP);
	auto *g = static_cast<struct genlmsghdr *>(nlmsg_data(h));
	assert_int_equal(g->cmd, DSMEM_CMD_DEV_GET);
	assert_int_equal(g->version, DSMEM_GENL_VERSION);
	assert_int_equal(g->reserved, 0);	// the kernel refuses anything else
	nlmsg_free(m);

	m = build_request(kFamily, DSMEM_CMD_DEV_GET, true);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_flags & NLM_F_DUMP, NLM_F_DUMP);
	assert_false(h->nlmsg_flags & NLM_F_ACK);
	nlmsg_free(m);
}

void test_dev_selector(void **)
{
	struct nl_msg *m = build_request(kFamily, DSMEM_CMD_DEV_GET, false);
	assert_int_equal(put_dev_selector(m, "rxe1", 0), 0);
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	assert_int_equal(genlmsg_parse(nlmsg_hdr(m), 0, tb, DSMEM_ATTR_MAX, nullptr), 0);
	assert_non_null(tb[DSMEM_ATTR_DEV_NAME]);
	assert_null(tb[DSMEM_ATTR_DEV_INDEX]);
	assert_string_equal(nla_get_string(tb[DSMEM_ATTR_DEV_NAME]), "rxe1");
	nlmsg_free(m);

	m = build_request(kFamily, DSMEM_CMD_DEV_GET, false);
	assert_int_equal(put_dev_selector(m, nullptr, 5), 0);
	assert_int_equal(genlmsg_parse(nlmsg_hdr(m), 0, tb, DSMEM_ATTR_MAX, nullptr), 0);
	assert_int_equal(nla_get_u32(tb[DSMEM_ATTR_DEV_INDEX]), 5);
	nlmsg_free(m);
}

// ---- a node's device list (ds_node_add's dev) ----

// list split into names (and numas); the error's text when it is refused
std::vector<int> last_numas;
int split(const char *list, std::vector<std::string> &names, std::string &err)
{
	err.clear();
	return split_dev_list(list, names, last_numas, err);
}

// The NODE_NEW attributes put_node_devs() writes for names, parsed back.
struct nl_msg *node_devs_request(const std::vector<std::string> &names,
				 struct nlattr **tb,
				 const std::vector<int> &numas = {})
{
	struct nl_msg *m = build_request(kFamily, DSMEM_CMD_NODE_NEW, false);
	attrs a{m};
	put_node_devs(a, names, numas);
	assert_false(a.full);
	assert_int_equal(genlmsg_parse(nlmsg_hdr(m), 0, tb, DSMEM_ATTR_MAX, nullptr), 0);
	return m;
}

void test_dev_list_one(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0", names, err), 0);
	assert_int_equal(names.size(), 1);
	assert_string_equal(names[0].c_str(), "rxe0");

	// sent as dev-name, as before node-devs, so that any module takes it
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	struct nl_msg *m = node_devs_request(names, tb);
	assert_non_null(tb[DSMEM_ATTR_DEV_NAME]);
	assert_string_equal(nla_get_string(tb[DSMEM_ATTR_DEV_NAME]), "rxe0");
	assert_null(tb[DSMEM_ATTR_DEV_INDEX]);
	assert_null(tb[DSMEM_ATTR_NODE_DEVS]);
	nlmsg_free(m);
}

void test_dev_list_two(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0,rxe1", names, err), 0);
	assert_int_equal(names.size(), 2);
	assert_string_equal(names[0].c_str(), "rxe0");
	assert_string_equal(names[1].c_str(), "rxe1");

	// a node-devs nest, a node-dev with a name (and no index) each, in order
	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	struct nl_msg *m = node_devs_request(names, tb);
	assert_null(tb[DSMEM_ATTR_DEV_NAME]);
	assert_null(tb[DSMEM_ATTR_DEV_INDEX]);
	assert_non_null(tb[DSMEM_ATTR_NODE_DEVS]);
	std::vector<std::string> sent;
	struct nlattr *one;
	int rem;
	nla_for_each_nested(one, tb[DSMEM_ATTR_NODE_DEVS], rem) {
		struct nlattr *dt[DSMEM_NODE_DEV_ATTR_MAX + 1];
		assert_int_equal(nla_type(one), DSMEM_ATTR_NODE_DEV);
		assert_int_equal(nla_parse_nested(dt, DSMEM_NODE_DEV_ATTR_MAX, one, nullptr), 0);
		assert_null(dt[DSMEM_NODE_DEV_ATTR_INDEX]);
		assert_null(dt[DSMEM_NODE_DEV_ATTR_NUMA]);
		assert_non_null(dt[DSMEM_NODE_DEV_ATTR_NAME]);
		sent.emplace_back(nla_get_string(dt[DSMEM_NODE_DEV_ATTR_NAME]));
	}
	assert_int_equal(rem, 0);
	assert_true(sent == names);
	nlmsg_free(m);

	// DS_NODE_DEVS_MAX is a list's limit, not beyond it
	assert_int_equal(split("mlx5_0,mlx5_1,rxe0,rxe1", names, err), 0);
	assert_int_equal(names.size(), DS_NODE_DEVS_MAX);
	assert_string_equal(names[3].c_str(), "rxe1");
	assert_true(last_numas == std::vector<int>(DS_NODE_DEVS_MAX, kNumaAsk));
}

// NAME@NUMA: the NUMA node the admin says the device is on, sent with it
void test_dev_list_numa(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0@0,rxe1,rxe2@-1", names, err), 0);
	assert_true(names == (std::vector<std::string>{"rxe0", "rxe1", "rxe2"}));
	assert_true(last_numas == (std::vector<int>{0, kNumaAsk, -1}));

	struct nlattr *tb[DSMEM_ATTR_MAX + 1];
	struct nl_msg *m = node_devs_request(names, tb, last_numas);
	std::vector<int> sent;
	struct nlattr *one;
	int rem;
	nla_for_each_nested(one, tb[DSMEM_ATTR_NODE_DEVS], rem) {
		struct nlattr *dt[DSMEM_NODE_DEV_ATTR_MAX + 1];
		assert_int_equal(nla_parse_nested(dt, DSMEM_NODE_DEV_ATTR_MAX, one, nullptr), 0);
		sent.push_back(dt[DSMEM_NODE_DEV_ATTR_NUMA] ?
			       nla_get_s32(dt[DSMEM_NODE_DEV_ATTR_NUMA]) : kNumaAsk);
	}
	assert_true(sent == last_numas);
	nlmsg_free(m);

	// one device with a NUMA node needs the nest: dev-name has no room
	assert_int_equal(split("rxe1@1", names, err), 0);
	m = node_devs_request(names, tb, last_numas);
	assert_null(tb[DSMEM_ATTR_DEV_NAME]);
	assert_non_null(tb[DSMEM_ATTR_NODE_DEVS]);
	nlmsg_free(m);

	for (const char *bad : {"rxe0@-2", "rxe0@99999999999", "@1"}) {
		assert_int_equal(split(bad, names, err), -EINVAL);
		assert_false(err.empty());
	}
	assert_int_equal(split("rxe0@-2", names, err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "NAME[@NUMA]"));
	// an "@" not followed by a number alone is the name's, as the RDMA
	// core allows; the last "@" and a number is the NUMA node
	for (const char *name : {"rxe0@", "rxe0@x", "rxe0@1x", "rxe0@+1"}) {
		assert_int_equal(split(name, names, err), 0);
		assert_string_equal(names[0].c_str(), name);
		assert_int_equal(last_numas[0], kNumaAsk);
	}
	assert_int_equal(split("a@b@1", names, err), 0);
	assert_string_equal(names[0].c_str(), "a@b");
	assert_int_equal(last_numas[0], 1);
	// a name is not its NUMA node: rxe0@0 and rxe0@1 are one device twice
	assert_int_equal(split("rxe0@0,rxe0@1", names, err), -EINVAL);
}

void test_dev_list_empty_name(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0,,rxe1", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "an empty device name in \"rxe0,,rxe1\"");
	assert_int_equal(split(",rxe1", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "an empty device name in \",rxe1\"");
	assert_int_equal(split("", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "an empty device name in \"\"");
	assert_int_equal(split(",", names, err), -EINVAL);
	assert_int_equal(split(nullptr, names, err), -EINVAL);
	assert_string_equal(err.c_str(), "no device name");
}

void test_dev_list_trailing_comma(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0,", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "an empty device name in \"rxe0,\"");
	assert_int_equal(split("rxe0,rxe1,", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "an empty device name in \"rxe0,rxe1,\"");
}

void test_dev_list_too_many(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0,rxe1,rxe2,rxe3,rxe4", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "a node has at most 4 devices");
}

void test_dev_list_duplicate(void **)
{
	std::vector<std::string> names;
	std::string err;
	assert_int_equal(split("rxe0,rxe1,rxe0", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "device \"rxe0\" is named twice");
	assert_int_equal(split("rxe1,rxe1", names, err), -EINVAL);
	assert_string_equal(err.c_str(), "device \"rxe1\" is named twice");
	// names are compared whole: one a prefix of another is not the same
	assert_int_equal(split("rxe1,rxe10", names, err), 0);
}

void test_dev_list_overlong_name(void **)
{
	std::vector<std::string> names;
	std::string err;
	const std::string longest(DS_NAME_MAX - 1, 'x');	// IB_DEVICE_NAME_MAX - 1
	const std::string over(DS_NAME_MAX, 'y');

	assert_int_equal(split(longest.c_str(), names, err), 0);
	assert_string_equal(names[0].c_str(), longest.c_str());
	assert_int_equal(split(("rxe0," + over).c_str(), names, err), -EINVAL);
	assert_string_equal(err.c_str(), ("device name \"" + over +
					  "\" is longer than 63 bytes").c_str());
	assert_int_equal(split(over.c_str(), names, err), -EINVAL);
}

// ds_node_add refuses a bad list itself, with its reason, before it
// sends anything.
void test_node_add_refuses_bad_list(void **)
{
	ds_ctx ctx;	// never connected: nothing here may reach a socket

	assert_int_equal(ds_node_add_keyed(&ctx, 1, "rxe0,,rxe1", 7471, nullptr), -EINVAL);
	assert_string_equal(ds_ctx_errmsg(&ctx), "an empty device name in \"rxe0,,rxe1\"");
	assert_int_equal(ds_node_add(&ctx, 1, "rxe0,rxe1,rxe2,rxe3,rxe4", 7471), -EINVAL);
	assert_string_equal(ds_ctx_errmsg(&ctx), "a node has at most 4 devices");
	assert_int_equal(ds_node_add(&ctx, 1, "rxe0,rxe0", 7471), -EINVAL);
	assert_string_equal(ds_ctx_errmsg(&ctx), "device \"rxe0\" is named twice");
	assert_int_equal(ds_node_add(&ctx, 1, nullptr, 7471), -EINVAL);
	assert_string_equal(ds_ctx_errmsg(&ctx), "no device name");
	// and ds_node_devs an array it cannot fill
	assert_int_equal(ds_node_devs(&ctx, 1, nullptr, 1), -EINVAL);
}

void test_parse_dev(void **)
{
	struct nl_msg *m = dev_reply();
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), 0);
	assert_int_equal(d.index, 7);
	assert_string_equal(d.name, "rxe0");
	assert_string_equal(d.fw_version, "6.1.0");
	assert_true(d.node_guid == 0x505400fffe123456ULL);
	assert_int_equal(d.port_count, 1);
	assert_int_equal(d.nports, 1);
	assert_int_equal(d.ports[0].index, 1);
	assert_int_equal(d.ports[0].state, 4);
	assert_int_equal(d.ports[0].active_mtu, 1024);
	assert_string_equal(d.ports[0].netdev, "veth0");
	assert_int_equal(d.max_qp_wr, 4000);
	nlmsg_free(m);
}

void test_parse_dev_many_ports_capped(void **)
{
	struct nl_msg *m = dev_reply(DS_DEV_PORTS_MAX + 3);
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), 0);
	assert_int_equal(d.nports, DS_DEV_PORTS_MAX);
	assert_int_equal(d.port_count, DS_DEV_PORTS_MAX + 3);
	nlmsg_free(m);
}

void test_parse_dev_del_event_minimal(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_DEL);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 3);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe1");
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), 0);
	assert_string_equal(d.name, "rxe1");
	assert_int_equal(d.port_count, 0);
	nlmsg_free(m);
}

void test_reject_short_u32(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	uint16_t half = 7;
	nla_put(m, DSMEM_ATTR_DEV_INDEX, sizeof(half), &half);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_long_u32(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	uint64_t wide = 7;
	nla_put(m, DSMEM_ATTR_DEV_INDEX, sizeof(wide), &wide);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_unterminated_string(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 1);
	nla_put(m, DSMEM_ATTR_DEV_NAME, 4, "rxe0");
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_overlong_name(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	std::string name(DS_NAME_MAX, 'x');
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 1);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, name.c_str());
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_missing_name(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 1);
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_foreign_attr_in_ports(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 1);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	struct nlattr *ports = nla_nest_start(m, DSMEM_ATTR_DEV_PORTS);
	nla_put_u32(m, DSMEM_ATTR_STAT, 1);
	nla_nest_end(m, ports);
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_port_without_index(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_DEV_GET);
	nla_put_u32(m, DSMEM_ATTR_DEV_INDEX, 1);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	struct nlattr *ports = nla_nest_start(m, DSMEM_ATTR_DEV_PORTS);
	struct nlattr *p = nla_nest_start(m, DSMEM_ATTR_PORT);
	nla_put_u8(m, DSMEM_PORT_ATTR_STATE, 4);
	nla_nest_end(m, p);
	nla_nest_end(m, ports);
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_truncated_message(void **)
{
	struct nl_msg *m = dev_reply();
	// cut the last attribute in half, as a short read would
	nlmsg_hdr(m)->nlmsg_len -= 6;
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_reject_no_genl_header(void **)
{
	struct nl_msg *m = nlmsg_alloc_simple(kFamily, 0);
	ds_dev_info d;
	assert_int_equal(parse_dev(m, &d), -EBADMSG);
	nlmsg_free(m);
}

void test_parse_version(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_VERSION_GET);
	nla_put_string(m, DSMEM_ATTR_MODULE_VERSION, "0.1.0");
	nla_put_u32(m, DSMEM_ATTR_ABI_VERSION, 1);
	nla_put_u32(m, DSMEM_ATTR_FAMILY_VERSION, 1);
	nla_put_u64(m, DSMEM_ATTR_FEATURES, 3);
	ds_version v;
	assert_int_equal(parse_version(m, &v), 0);
	assert_string_equal(v.module_version, "0.1.0");
	assert_int_equal(v.abi_version, 1);
	assert_int_equal(v.features, 3);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_VERSION_GET);	// features missing
	nla_put_string(m, DSMEM_ATTR_MODULE_VERSION, "0.1.0");
	nla_put_u32(m, DSMEM_ATTR_ABI_VERSION, 1);
	nla_put_u32(m, DSMEM_ATTR_FAMILY_VERSION, 1);
	assert_int_equal(parse_version(m, &v), -EBADMSG);
	nlmsg_free(m);

	m = reply(DSMEM_CMD_VERSION_GET);	// features too narrow
	nla_put_string(m, DSMEM_ATTR_MODULE_VERSION, "0.1.0");
	nla_put_u32(m, DSMEM_ATTR_ABI_VERSION, 1);
	nla_put_u32(m, DSMEM_ATTR_FAMILY_VERSION, 1);
	nla_put_u32(m, DSMEM_ATTR_FEATURES, 3);
	assert_int_equal(parse_version(m, &v), -EBADMSG);
	nlmsg_free(m);
}

void put_stat(struct nl_msg *m, const char *name, uint64_t v, bool with_value = true)
{
	struct nlattr *s = nla_nest_start(m, DSMEM_ATTR_STAT);
	nla_put_string(m, DSMEM_STAT_ATTR_NAME, name);
	if (with_value)
		nla_put_u64(m, DSMEM_STAT_ATTR_VALUE, v);
	nla_nest_end(m, s);
}

void test_parse_stats(void **)
{
	struct nl_msg *m = reply(DSMEM_CMD_STATS_GET);
	struct nlattr *n = nla_nest_start(m, DSMEM_ATTR_STATS);
	put_stat(m, "dev_added", 2);
	put_stat(m, "ioctl_calls", 1ULL << 40);
	nla_nest_end(m, n);
	std::vector<ds_stat> out;
	assert_int_equal(parse_stats(m, out), 0);
	assert_int_equal(out.size(), 2);
	assert_string_equal(out[1].name, "ioctl_calls");
	assert_true(out[1].value == (1ULL << 40));
	nlmsg_free(m);

	m = reply(DSMEM_CMD_STATS_GET);
	n = nla_nest_start(m, DSMEM_ATTR_STATS);
	put_stat(m, "dev_added", 0, false);
	nla_nest_end(m, n);
	out.clear();
	assert_int_equal(parse_stats(m, out), -EBADMSG);
	nlmsg_free(m);
}

// An NLMSG_ERROR as the kernel sends it with NETLINK_EXT_ACK set.
// An NLMSGERR_ATTR_MSG of text at buf[at]: the bytes it takes.
size_t put_msg_tlv(std::vector<uint8_t> &buf, size_t at, const char *text)
{
	auto *a = reinterpret_cast<struct nlattr *>(buf.data() + at);

	a->nla_type = NLMSGERR_ATTR_MSG;
	a->nla_len = NLA_HDRLEN + strlen(text) + 1;
	memcpy(reinterpret_cast<char *>(a) + NLA_HDRLEN, text, strlen(text) + 1);
	return NLA_ALIGN(a->nla_len);
}

std::vector<uint8_t> error_msg(int error, bool capped, const char *text,
			       size_t echoed_payload = 0, bool corrupt = false)
{
	std::vector<uint8_t> buf(512, 0);
	auto *nlh = reinterpret_cast<struct nlmsghdr *>(buf.data());
	auto *e = static_cast<struct nlmsgerr *>(NLMSG_DATA(nlh));
	size_t len = NLMSG_HDRLEN + sizeof(*e);

	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = (text ? NLM_F_ACK_TLVS : 0) | (capped ? NLM_F_CAPPED : 0);
	e->error = error;
	e->msg.nlmsg_len = NLMSG_HDRLEN + echoed_payload;
	e->msg.nlmsg_type = kFamily;
	if (!capped)
		len += NLMSG_ALIGN(echoed_payload);
	if (text) {
		len += put_msg_tlv(buf, len, text);
		auto *a = reinterpret_cast<struct nlattr *>(buf.data() + len);
		a->nla_type = NLMSGERR_ATTR_OFFS;
		a->nla_len = NLA_HDRLEN + 4;
		uint32_t off = 20;
		memcpy(reinterpret_cast<char *>(a) + NLA_HDRLEN, &off, 4);
		if (corrupt)
			a->nla_len = 200;	// claims more than the message holds
		len += NLA_ALIGN(NLA_HDRLEN + 4);
	}
	nlh->nlmsg_len = len;
	buf.resize(len);
	return buf;
}

void test_extack_capped(void **)
{
	auto buf = error_msg(-EINVAL, true, "give exactly one of device index and device name");
	extack ea = parse_extack(reinterpret_cast<struct nlmsghdr *>(buf.data()));
	assert_int_equal(ea.error, -EINVAL);
	assert_string_equal(ea.msg.c_str(), "give exactly one of device index and device name");
	assert_int_equal(ea.offset, 20);
}

void test_extack_uncapped(void **)
{
	auto buf = error_msg(-ENODEV, false, "no such RDMA device", 12);
	extack ea = parse_extack(reinterpret_cast<struct nlmsghdr *>(buf.data()));
	assert_int_equal(ea.error, -ENODEV);
	assert_string_equal(ea.msg.c_str(), "no such RDMA device");
}

void test_extack_absent_and_corrupt(void **)
{
	auto buf = error_msg(-EPERM, true, nullptr);
	extack ea = parse_extack(reinterpret_cast<struct nlmsghdr *>(buf.data()));
	assert_int_equal(ea.error, -EPERM);
	assert_true(ea.msg.empty());

	buf = error_msg(-EINVAL, true, "msg", 0, true);
	ea = parse_extack(reinterpret_cast<struct nlmsghdr *>(buf.data()));
	assert_string_equal(ea.msg.c_str(), "msg");	// read up to the bad TLV
	assert_int_equal(ea.offset, -1);

	struct nlmsghdr tiny = {};
	tiny.nlmsg_len = NLMSG_HDRLEN;
	ea = parse_extack(&tiny);
	assert_int_equal(ea.error, 0);
}

// NLMSG_DONE of a dump refused in its first part: the error, then TLVs.
std::vector<uint8_t> done_msg(int error, const char *text)
{
	std::vector<uint8_t> buf(256, 0);
	auto *nlh = reinterpret_cast<struct nlmsghdr *>(buf.data());
	size_t len = NLMSG_HDRLEN + sizeof(int);

	nlh->nlmsg_type = NLMSG_DONE;
	nlh->nlmsg_flags = NLM_F_MULTI | (text ? NLM_F_ACK_TLVS : 0);
	memcpy(NLMSG_DATA(nlh), &error, sizeof(int));
	if (text)
		len += put_msg_tlv(buf, len, text);
	nlh->nlmsg_len = len;
	buf.resize(len);
	return buf;
}

void test_dump_done_error(void **)
{
	auto buf = done_msg(-ENOENT, "no network namespace has this id here");
	extack ea = parse_dump_done(reinterpret_cast<struct nlmsghdr *>(buf.data()));
	assert_int_equal(ea.error, -ENOENT);
	assert_string_equal(ea.msg.c_str(), "no network namespace has this id here");

	buf = done_msg(0, nullptr);	// a whole dump
	ea = parse_dump_done(reinterpret_cast<struct nlmsghdr *>(buf.data()));
	assert_int_equal(ea.error, 0);
	assert_true(ea.msg.empty());

	struct nlmsghdr tiny = {};	// an old kernel's bare DONE
	tiny.nlmsg_len = NLMSG_HDRLEN;
	tiny.nlmsg_type = NLMSG_DONE;
	ea = parse_dump_done(&tiny);
	assert_int_equal(ea.error, 0);
}

void test_nlerr_mapping(void **)
{
	assert_int_equal(nlerr_to_errno(-NLE_PERM), -EPERM);
	assert_int_equal(nlerr_to_errno(-NLE_OBJ_NOTFOUND), -ENOENT);
	assert_int_equal(nlerr_to_errno(-NLE_NOMEM), -ENOMEM);
	assert_int_equal(nlerr_to_errno(0), 0);
	assert_int_equal(nlerr_to_errno(-9999), -EIO);
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_request_do_and_dump),
		cmocka_unit_test(test_dev_selector),
		cmocka_unit_test(test_dev_list_one),
		cmocka_unit_test(test_dev_list_two),
		cmocka_unit_test(test_dev_list_numa),
		cmocka_unit_test(test_dev_list_empty_name),
		cmocka_unit_test(test_dev_list_trailing_comma),
		cmocka_unit_test(test_dev_list_too_many),
		cmocka_unit_test(test_dev_list_duplicate),
		cmocka_unit_test(test_dev_list_overlong_name),
		cmocka_unit_test(test_node_add_refuses_bad_list),
		cmocka_unit_test(test_parse_dev),
		cmocka_unit_test(test_parse_dev_many_ports_capped),
		cmocka_unit_test(test_parse_dev_del_event_minimal),
		cmocka_unit_test(test_reject_short_u32),
		cmocka_unit_test(test_reject_long_u32),
		cmocka_unit_test(test_reject_unterminated_string),
		cmocka_unit_test(test_reject_overlong_name),
		cmocka_unit_test(test_reject_missing_name),
		cmocka_unit_test(test_reject_foreign_attr_in_ports),
		cmocka_unit_test(test_reject_port_without_index),
		cmocka_unit_test(test_reject_truncated_message),
		cmocka_unit_test(test_reject_no_genl_header),
		cmocka_unit_test(test_parse_version),
		cmocka_unit_test(test_parse_stats),
		cmocka_unit_test(test_extack_capped),
		cmocka_unit_test(test_extack_uncapped),
		cmocka_unit_test(test_extack_absent_and_corrupt),
		cmocka_unit_test(test_dump_done_error),
		cmocka_unit_test(test_nlerr_mapping),
	};
	return cmocka_run_group_tests_name("dsuser_codec", tests, nullptr, nullptr);
}
