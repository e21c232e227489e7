// SPDX-License-Identifier: BSD-2-Clause
// dsctl records and their text and JSON rendering.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <string>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>

#include "dsctl.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsctl;

namespace {

ds_dev_info sample_dev()
{
	ds_dev_info d{};
	d.index = 2;
	strcpy(d.name, "rxe0");
	strcpy(d.fw_version, "6.1.0");
	d.node_guid = 0x505400fffe123456ULL;
	d.node_type = 1;
	d.atomic_cap = 1;
	d.port_count = 1;
	d.max_qp = 1048560;
	d.max_cqe = 32767;
	d.max_mr = 524287;
	d.max_qp_wr = 1048576;
	d.nports = 1;
	d.ports[0].index = 1;
	d.ports[0].state = 4;
	d.ports[0].link_layer = 2;
	d.ports[0].active_mtu = 1024;
	strcpy(d.ports[0].netdev, "veth0");
	return d;
}

std::string capture(output::mode m, const record &r, bool stream)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	{
		output out(m, f);
		if (stream)
			out.stream(r);
		else
			out.add(r);
		out.finish();
	}
	fclose(f);
	std::string s(buf, len);
	free(buf);
	return s;
}

void test_dev_text(void **)
{
	std::string t = output::text(dev_record(sample_dev()));
	assert_string_equal(t.c_str(),
		"2: rxe0: node_type ca fw 6.1.0 node_guid 5054:00ff:fe12:3456 ports 1 "
		"max_qp 1048560 max_cqe 32767 max_mr 524287 max_qp_wr 1048576 atomic hca\n"
		"    port 1 state ACTIVE mtu 1024 link_layer Ethernet netdev veth0");
}

void test_dev_json(void **)
{
	std::string j = capture(output::mode::json, dev_record(sample_dev()), false);
	auto v = nlohmann::json::parse(j);
	assert_true(v.is_array());
	assert_int_equal(v.size(), 1);
	assert_string_equal(v[0]["ifname"].get<std::string>().c_str(), "rxe0");
	assert_int_equal(v[0]["ifindex"].get<int>(), 2);
	assert_string_equal(v[0]["port_list"][0]["netdev"].get<std::string>().c_str(), "veth0");
	assert_string_equal(v[0]["port_list"][0]["state"].get<std::string>().c_str(), "ACTIVE");
	// compact JSON is one line
	assert_int_equal(std::count(j.begin(), j.end(), '\n'), 1);
}

void test_pretty_json_is_same_data(void **)
{
	record r = dev_record(sample_dev());
	auto a = nlohmann::json::parse(capture(output::mode::json, r, false));
	auto b = nlohmann::json::parse(capture(output::mode::pretty_json, r, false));
	assert_true(a == b);
}

void test_empty_list_prints_nothing_in_text(void **)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	{
		output out(output::mode::text, f);
	}
	fclose(f);
	assert_int_equal(len, 0);
	free(buf);
}

void test_event_text_and_json(void **)
{
	ds_event ev{};
	ev.type = DS_EVENT_DEV_DEL;
	ev.dev.index = 3;
	strcpy(ev.dev.name, "rxe1");
	assert_string_equal(output::text(event_record(ev)).c_str(), "[DEV DEL] 3: rxe1:");

	std::string j = capture(output::mode::json, event_record(ev), true);
	auto v = nlohmann::json::parse(j);
	assert_true(v.is_object());	// a stream is one object per line
	assert_string_equal(v["event"].get<std::string>().c_str(), "dev_del");

	ev.type = DS_EVENT_MODULE_UNLOADED;
	assert_string_equal(output::text(event_record(ev)).c_str(), "[MODULE UNLOADED]");
}

void test_dev_omits_what_it_does_not_know(void **)
{
	ds_dev_info d = sample_dev();
	d.fw_version[0] = '\0';
	d.ports[0].active_mtu = 0;
	d.ports[0].link_layer = 0;
	std::string t = output::text(dev_record(d));
	assert_true(t.find(" fw ") == std::string::npos);
	assert_true(t.find(" mtu ") == std::string::npos);
	assert_true(t.find("link_layer unspecified") != std::string::npos);
	assert_true(t.find("  ") == std::string::npos || t.find("\n    ") != std::string::npos);
}

void test_empty_json_list_is_brackets(void **)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	{
		output out(output::mode::json, f);
		out.begin_list();
		out.finish();
	}
	fclose(f);
	assert_string_equal(buf, "[]\n");
	free(buf);
}

void test_unfinished_output_prints_nothing(void **)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	{
		// a command that fails after collecting records
		output out(output::mode::json, f);
		out.begin_list();
		out.add(dev_record(sample_dev()));
	}
	fclose(f);
	assert_int_equal(len, 0);
	free(buf);
}

void test_features(void **)
{
	record f = features_record(DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS |
				   DSMEM_FEAT_RDM | (1ULL << 40));
	assert_int_equal(f.size(), 4);
	assert_string_equal(f[0].get<std::string>().c_str(), "dev_events");
	assert_string_equal(f[1].get<std::string>().c_str(), "stats");
	assert_string_equal(f[2].get<std::string>().c_str(), "rdm");
	assert_string_equal(f[3].get<std::string>().c_str(), "bit40");
	assert_int_equal(features_record(0).size(), 0);
}

void test_names(void **)
{
	assert_string_equal(port_state_name(1).c_str(), "DOWN");
	assert_string_equal(port_state_name(4).c_str(), "ACTIVE");
	assert_string_equal(port_state_name(200).c_str(), "UNKNOWN(200)");
	assert_string_equal(node_type_name(4).c_str(), "rnic");
	assert_string_equal(guid_string(0x0123456789abcdefULL).c_str(), "0123:4567:89ab:cdef");
}

void test_text_scalars_and_lists(void **)
{
	record r;
	r["module"] = nullptr;
	r["features"] = record::array();
	r["on"] = true;
	r["list"] = { 1, 2 };
	assert_string_equal(output::text(r).c_str(), "module - features - on yes list 1,2");
}

ds_node_info sample_node()
{
	ds_node_info n{};
	n.id = 1;
	n.dev_index = 2;
	strcpy(n.dev_name, "rxe0");
	n.port = 7471;
	n.peer_count = 2;
	n.seg_count = 1;
	return n;
}

ds_peer_info sample_peer()
{
	ds_peer_info p{};
	p.node_id = 1;
	p.id = 3;
	p.remote_node = 2;
	p.state = DSMEM_PEER_UP;
	p.port = 7471;
	strcpy(p.addr, "10.99.0.1");
	p.connects = 1;
	p.rseg_total = 1;
	p.nrsegs = 1;
	p.rsegs[0].addr = DSMEM_GADDR(2, 1, 0);
	p.rsegs[0].size = 256ULL << 20;
	p.rsegs[0].perm = DSMEM_PERM_ALL;
	p.rsegs[0].keys = 1;
	return p;
}

ds_seg_info sample_seg()
{
	ds_seg_info s{};
	s.node_id = 1;
	s.id = 2;
	s.size = 256ULL << 20;
	s.addr = DSMEM_GADDR(1, 2, 0);
	s.used = 0;
	s.numa = -1;
	s.page_size = 2U << 20;
	s.translate = DSMEM_TRANSLATE_SEGMENT;
	s.ngrants = 1;
	s.grant_total = 1;
	s.grants[0].remote_node = 2;
	s.grants[0].perm = DSMEM_PERM_ALL;
	return s;
}

void test_size_string(void **)
{
	assert_string_equal(size_string(0).c_str(), "0");
	assert_string_equal(size_string(1).c_str(), "1");
	assert_string_equal(size_string(1023).c_str(), "1023");
	assert_string_equal(size_string(1024).c_str(), "1K");
	assert_string_equal(size_string(4097).c_str(), "4097");
	assert_string_equal(size_string(1536).c_str(), "1536");
	assert_string_equal(size_string(256ULL << 20).c_str(), "256M");
	assert_string_equal(size_string(3ULL << 30).c_str(), "3G");
	assert_string_equal(size_string((1ULL << 30) + (1ULL << 20)).c_str(), "1025M");
	assert_string_equal(size_string(1ULL << 50).c_str(), "1024T");	// T is the largest
	assert_string_equal(size_string(UINT64_MAX).c_str(), "18446744073709551615");
}

void test_hexdump_like_hexdump_c(void **)
{
	// the bytes of: printf '0123456789abcdefXYZ\n\001' | hexdump -C
	const char in[] = "0123456789abcdefXYZ\n\001";
	std::string h = hexdump(reinterpret_cast<const uint8_t *>(in), sizeof(in) - 1);
	assert_string_equal(h.c_str(),
		"00000000  30 31 32 33 34 35 36 37  38 39 61 62 63 64 65 66  |0123456789abcdef|\n"
		"00000010  58 59 5a 0a 01                                    |XYZ..|");
	const uint8_t eight[8] = { 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37 };
	assert_string_equal(hexdump(eight, 8).c_str(),
		"00000000  30 31 32 33 34 35 36 37                           |01234567|");
	const uint8_t high[2] = { 0x7f, 0xff };
	assert_string_equal(hexdump(high, 2).c_str(),
		"00000000  7f ff                                             |..|");
	assert_string_equal(hexdump(nullptr, 0).c_str(), "");
}

void test_rdm_read_text_and_json(void **)
{
	const uint8_t data[20] = { 'H', 'e', 'l', 'l', 'o', 0, 0, 0, 0xde, 0xad, 0xbe, 0xef };
	record r = rdm_data_record(DSMEM_GADDR(2, 1, 0x40), data, sizeof(data));
	assert_string_equal(output::text(r).c_str(),
		"addr 0x2001000000040 len 20\n"
		"00000000  48 65 6c 6c 6f 00 00 00  de ad be ef 00 00 00 00  |Hello...........|\n"
		"00000010  00 00 00 00                                       |....|");

	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_true(v.is_array());
	assert_string_equal(v[0]["addr"].get<std::string>().c_str(), "0x2001000000040");
	assert_int_equal(v[0]["len"].get<int>(), 20);
	assert_string_equal(v[0]["data"].get<std::string>().c_str(),
			    "48656c6c6f000000deadbeef0000000000000000");
}

void test_node_record(void **)
{
	record r = node_record(sample_node());
	assert_string_equal(output::text(r).c_str(),
		"node 1 dev rxe0 port 7471 peers 2 segments 1");
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_int_equal(v[0]["node"].get<int>(), 1);
	assert_string_equal(v[0]["dev"].get<std::string>().c_str(), "rxe0");
	assert_int_equal(v[0]["segments"].get<int>(), 1);
}

void test_peer_record(void **)
{
	ds_peer_info p = sample_peer();
	assert_string_equal(output::text(peer_record(p)).c_str(),
		"node 1 peer 3 addr 10.99.0.1 port 7471 remote_node 2 state up connects 1\n"
		"    remote_seg node 2 seg 1 addr 0x2001000000000 size 256M perm rw keys 1");

	// a passive peer that failed, knows nobody yet, and has no segments
	p.passive = 1;
	p.state = DSMEM_PEER_ERROR;
	p.last_errno = 111;
	p.remote_node = 0;
	p.nrsegs = p.rseg_total = 0;
	record r = peer_record(p);
	assert_string_equal(output::text(r).c_str(),
		"node 1 peer 3 addr 10.99.0.1 port 7471 remote_node - state error passive yes "
		"connects 1 errno 111");
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_true(v[0]["remote_node"].is_null());
	assert_true(v[0]["passive"].get<bool>());
	assert_int_equal(v[0]["errno"].get<int>(), 111);
	assert_true(v[0]["remote_segs"].is_array() && v[0]["remote_segs"].empty());

	p.state = 77;
	assert_string_equal(peer_state_name(p.state).c_str(), "unknown(77)");
	assert_string_equal(peer_state_name(DSMEM_PEER_CONNECTING).c_str(), "connecting");
	assert_string_equal(peer_state_name(DSMEM_PEER_DOWN).c_str(), "down");
}

void test_seg_record(void **)
{
	ds_seg_info s = sample_seg();
	record r = seg_record(s);
	assert_string_equal(output::text(r).c_str(),
		"node 1 seg 2 size 256M addr 0x1002000000000 used 0 page_size 2M numa any "
		"translate segment\n"
		"    grant node 2 perm rw");

	// JSON: sizes in bytes, the address a hex string, numa -1
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_true(v[0]["size"].get<uint64_t>() == 256ULL << 20);
	assert_true(v[0]["page_size"].get<uint64_t>() == 2ULL << 20);
	assert_string_equal(v[0]["addr"].get<std::string>().c_str(), "0x1002000000000");
	assert_int_equal(v[0]["numa"].get<int>(), -1);
	assert_string_equal(v[0]["grants"][0]["perm"].get<std::string>().c_str(), "rw");

	// an inexact size stays in bytes; more grants than listed say so
	s.size = 4097;
	s.used = 1536;
	s.numa = 1;
	s.translate = DSMEM_TRANSLATE_PAGES;
	s.grants[0].perm = DSMEM_PERM_READ;
	s.grant_total = 20;
	assert_string_equal(output::text(seg_record(s)).c_str(),
		"node 1 seg 2 size 4097 addr 0x1002000000000 used 1536 page_size 2M numa 1 "
		"translate pages grants_total 20\n"
		"    grant node 2 perm r");
	s.ngrants = s.grant_total = 0;
	assert_string_equal(output::text(seg_record(s)).c_str(),
		"node 1 seg 2 size 4097 addr 0x1002000000000 used 1536 page_size 2M numa 1 "
		"translate pages");
}

void test_rdm_alloc_record(void **)
{
	record r = rdm_alloc_record(1, 2, 4096, DSMEM_GADDR(2, 1, 0x1000), 0x1000);
	assert_string_equal(output::text(r).c_str(),
		"node 1 remote_node 2 va 0x2001000001000 pa 0x1000 size 4K");
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_string_equal(v[0]["va"].get<std::string>().c_str(), "0x2001000001000");
	assert_int_equal(v[0]["size"].get<int>(), 4096);
}

void test_perm_and_translate_names(void **)
{
	assert_string_equal(perm_string(DSMEM_PERM_READ).c_str(), "r");
	assert_string_equal(perm_string(DSMEM_PERM_WRITE).c_str(), "w");
	assert_string_equal(perm_string(DSMEM_PERM_ALL).c_str(), "rw");
	assert_string_equal(perm_string(0).c_str(), "none");
	assert_string_equal(perm_string(0x13).c_str(), "0x13");
	assert_string_equal(translate_name(DSMEM_TRANSLATE_PAGES).c_str(), "pages");
	assert_string_equal(translate_name(9).c_str(), "unknown(9)");
	assert_string_equal(addr_string(0).c_str(), "0x0");
}

void test_object_events(void **)
{
	ds_event ev{};
	ev.type = DS_EVENT_NODE_NEW;
	ev.node = sample_node();
	assert_string_equal(output::text(event_record(ev)).c_str(),
		"[NODE NEW] node 1 dev rxe0 port 7471 peers 2 segments 1");
	ev.type = DS_EVENT_NODE_DEL;
	assert_string_equal(output::text(event_record(ev)).c_str(), "[NODE DEL] node 1");

	ev.type = DS_EVENT_PEER_STATE;
	ev.peer = sample_peer();
	ev.peer.state = DSMEM_PEER_DOWN;
	ev.peer.nrsegs = 0;
	ev.peer.rseg_total = 0;
	assert_string_equal(output::text(event_record(ev)).c_str(),
		"[PEER STATE] node 1 peer 3 addr 10.99.0.1 port 7471 remote_node 2 state down "
		"connects 1");
	ev.type = DS_EVENT_PEER_NEW;
	assert_true(output::text(event_record(ev)).rfind("[PEER NEW] node 1 peer 3 ", 0) == 0);
	ev.type = DS_EVENT_PEER_DEL;
	assert_string_equal(output::text(event_record(ev)).c_str(), "[PEER DEL] node 1 peer 3");

	ev.type = DS_EVENT_SEG_NEW;
	ev.seg = sample_seg();
	assert_true(output::text(event_record(ev)).rfind("[SEG NEW] node 1 seg 2 size 256M ", 0) == 0);
	ev.type = DS_EVENT_SEG_DEL;
	std::string j = capture(output::mode::json, event_record(ev), true);
	auto v = nlohmann::json::parse(j);
	assert_string_equal(v["event"].get<std::string>().c_str(), "seg_del");
	assert_int_equal(v["node"].get<int>(), 1);
	assert_int_equal(v["seg"].get<int>(), 2);
	assert_int_equal(v.size(), 3);
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dev_text),
		cmocka_unit_test(test_dev_json),
		cmocka_unit_test(test_pretty_json_is_same_data),
		cmocka_unit_test(test_empty_list_prints_nothing_in_text),
		cmocka_unit_test(test_event_text_and_json),
		cmocka_unit_test(test_dev_omits_what_it_does_not_know),
		cmocka_unit_test(test_empty_json_list_is_brackets),
		cmocka_unit_test(test_unfinished_output_prints_nothing),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_text_scalars_and_lists),
		cmocka_unit_test(test_size_string),
		cmocka_unit_test(test_hexdump_like_hexdump_c),
		cmocka_unit_test(test_rdm_read_text_and_json),
		cmocka_unit_test(test_node_record),
		cmocka_unit_test(test_peer_record),
		cmocka_unit_test(test_seg_record),
		cmocka_unit_test(test_rdm_alloc_record),
		cmocka_unit_test(test_perm_and_translate_names),
		cmocka_unit_test(test_object_events),
	};
	return cmocka_run_group_tests_name("dsctl_output", tests, nullptr, nullptr);
}
