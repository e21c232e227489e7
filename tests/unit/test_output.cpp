// SPDX-License-Identifier: BSD-2-Clause
// dsctl records and their text and JSON rendering.
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <memory>
#include <span>
#include <string>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <linux/dsmem_token.h>

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
	f = features_record(DSMEM_FEAT_RINGS | DSMEM_FEAT_MULTIPATH | DSMEM_FEAT_NUMA);
	assert_int_equal(f.size(), 3);
	assert_string_equal(f[0].get<std::string>().c_str(), "rings");
	assert_string_equal(f[1].get<std::string>().c_str(), "multipath");
	assert_string_equal(f[2].get<std::string>().c_str(), "numa");
	f = features_record(DSMEM_FEAT_SUBMIT_TIMEOUT | DSMEM_FEAT_NOT_AFTER);
	assert_int_equal(f.size(), 2);
	assert_string_equal(f[0].get<std::string>().c_str(), "submit_timeout");
	assert_string_equal(f[1].get<std::string>().c_str(), "not_after");
	f = features_record(DSMEM_FEAT_NODE_OWNER | DSMEM_FEAT_NODE_USERS | (1ULL << 40));
	assert_int_equal(f.size(), 3);
	assert_string_equal(f[0].get<std::string>().c_str(), "node_owner");
	assert_string_equal(f[1].get<std::string>().c_str(), "node_users");
	assert_string_equal(f[2].get<std::string>().c_str(), "bit40");
}

void test_token_flags(void **)
{
	record f = token_flags_record(DS_TOKEN_PINNED | DS_TOKEN_MIGRATING | 0x80);
	assert_int_equal(f.size(), 3);
	assert_string_equal(f[0].get<std::string>().c_str(), "pinned");
	assert_string_equal(f[1].get<std::string>().c_str(), "migrating");
	assert_string_equal(f[2].get<std::string>().c_str(), "bit7");
	assert_int_equal(token_flags_record(0).size(), 0);
	assert_true(ratio_record(2, 3).get<double>() == 0.6667);
	assert_true(ratio_record(1, 0).is_null());
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
		"node 1 dev rxe0 port 7471 peers 2 segments 1 insecure yes accept peers");
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_int_equal(v[0]["node"].get<int>(), 1);
	assert_string_equal(v[0]["dev"].get<std::string>().c_str(), "rxe0");
	assert_int_equal(v[0]["segments"].get<int>(), 1);
	assert_true(v[0]["insecure"].get<bool>());
	assert_false(v[0].contains("key"));
	assert_string_equal(v[0]["accept"].get<std::string>().c_str(), "peers");

	// a keyed node names its key, and is not insecure
	ds_node_info n = sample_node();
	strcpy(n.key, "cluster");
	n.accept = DS_ACCEPT_KEYED;
	r = node_record(n);
	assert_string_equal(output::text(r).c_str(),
		"node 1 dev rxe0 port 7471 peers 2 segments 1 key cluster accept keyed");
	v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_string_equal(v[0]["key"].get<std::string>().c_str(), "cluster");
	assert_false(v[0].contains("insecure"));
}

void test_node_record_devs(void **)
{
	const ds_node_dev devs[] = { { 7, 0, "rxe0" }, { 8, -1, "rxe1" } };

	// text: every device after "dev", where one stood before, with its
	// NUMA node where one is known, as "node add ... dev" takes them
	record r = node_record(sample_node(), devs);
	assert_string_equal(output::text(r).c_str(),
		"node 1 dev rxe0@0,rxe1 port 7471 peers 2 segments 1 insecure yes accept peers");
	// JSON: "dev" is still the first; "devs" all of them
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_string_equal(v[0]["dev"].get<std::string>().c_str(), "rxe0");
	assert_true(v[0]["devs"].is_array());
	assert_int_equal(v[0]["devs"].size(), 2);
	assert_int_equal(v[0]["devs"][0]["index"].get<int>(), 7);
	assert_string_equal(v[0]["devs"][0]["name"].get<std::string>().c_str(), "rxe0");
	assert_int_equal(v[0]["devs"][0]["numa"].get<int>(), 0);
	assert_int_equal(v[0]["devs"][1]["index"].get<int>(), 8);
	assert_string_equal(v[0]["devs"][1]["name"].get<std::string>().c_str(), "rxe1");
	assert_int_equal(v[0]["devs"][1]["numa"].get<int>(), -1);

	// one device: as before, and its "devs" of one
	r = node_record(sample_node(), std::span(devs + 1, 1));
	assert_string_equal(output::text(r).c_str(),
		"node 1 dev rxe1 port 7471 peers 2 segments 1 insecure yes accept peers");
	r = node_record(sample_node(), std::span(devs, 1));
	assert_string_equal(output::text(r).c_str(),
		"node 1 dev rxe0@0 port 7471 peers 2 segments 1 insecure yes accept peers");
	v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_int_equal(v[0]["devs"].size(), 1);
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

	// a listen peer: admitted as node 2, never dialled (no port)
	p = sample_peer();
	p.listen = 1;
	p.port = 0;
	p.nrsegs = p.rseg_total = 0;
	r = peer_record(p);
	assert_string_equal(output::text(r).c_str(),
		"node 1 peer 3 addr 10.99.0.1 port 0 remote_node 2 state up listen yes connects 1");
	v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_true(v[0]["listen"].get<bool>());

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
		"[NODE NEW] node 1 dev rxe0 port 7471 peers 2 segments 1 insecure yes accept peers");
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

// ---- tokens and the token cache ----

// The QP token of "dsctl token show": node 1's first peer's queue pair.
ds_token_info sample_token()
{
	union dsmem_token t = {};
	t.qp.hdr.type = DSMEM_TOKEN_QP;
	t.qp.hdr.version = DSMEM_TOKEN_VERSION;
	t.qp.hdr.index = 2;
	t.qp.qpn = 17;
	t.qp.qp_type = 2;
	t.qp.state = 3;
	t.qp.pd_index = 1;
	t.qp.scq_index = 1;
	t.qp.rcq_index = 1;
	t.qp.access_flags = 7;

	ds_token_info i{};
	i.handle = DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 2);
	i.type = DS_TOKEN_QP;
	i.index = 2;
	i.layer = DS_TIER_L1;
	i.flags = DS_TOKEN_PINNED | DS_TOKEN_DIRTY;
	i.version = 7;
	i.offset = 5;
	i.node = 1;
	strcpy(i.object, "node 1 peer 1 qp");
	i.hits = 12;
	i.accesses = 40;
	i.data_len = DSMEM_QP_TOKEN_SIZE;
	memcpy(i.data, &t, DSMEM_QP_TOKEN_SIZE);
	return i;
}

void test_token_text(void **)
{
	assert_string_equal(output::text(token_record(sample_token())).c_str(),
		"handle 0xc0010002 qp index 2 layer l1 flags pinned,dirty version 7 node 1 "
		"object \"node 1 peer 1 qp\" hits 12 accesses 40 qpn 17 qp_type 2 state 3 "
		"pd_index 1 scq_index 1 rcq_index 1 access_flags 7");
}

void test_token_json(void **)
{
	// ordered: the fields keep the layout's order
	auto v = record::parse(capture(output::mode::json, token_record(sample_token()), false));
	assert_true(v.is_array());
	const auto &t = v[0];
	assert_string_equal(t["handle"].get<std::string>().c_str(), "0xc0010002");
	assert_string_equal(t["type"].get<std::string>().c_str(), "qp");
	assert_int_equal(t["index"].get<int>(), 2);
	assert_string_equal(t["layer"].get<std::string>().c_str(), "l1");
	assert_true(t["flags"] == nlohmann::json({ "pinned", "dirty" }));
	assert_int_equal(t["version"].get<int>(), 7);
	assert_int_equal(t["node"].get<int>(), 1);
	assert_string_equal(t["object"].get<std::string>().c_str(), "node 1 peer 1 qp");
	assert_int_equal(t["hits"].get<int>(), 12);
	assert_int_equal(t["accesses"].get<int>(), 40);
	// the decoded fields, nested and in layout order; none at the top
	const auto &f = t["fields"];
	assert_true(f.is_object());
	assert_int_equal(f.size(), 7);
	assert_int_equal(f["qpn"].get<int>(), 17);
	assert_int_equal(f["access_flags"].get<int>(), 7);
	assert_string_equal(f.begin().key().c_str(), "qpn");
	assert_false(t.contains("qpn"));
}

void test_token_without_owner_or_flags(void **)
{
	union dsmem_token t = {};
	t.mr.hdr.type = DSMEM_TOKEN_MR;
	t.mr.hdr.version = DSMEM_TOKEN_VERSION;
	t.mr.hdr.index = 0x1234;
	t.mr.lkey = 0xabcd;
	t.mr.access_flags = 0x0f;
	t.mr.page_bits = 12;
	t.mr.n_pages = 256;

	ds_token_info i{};
	i.handle = DSMEM_HANDLE(DSMEM_TOKEN_MR, DSMEM_HANDLE_GEN_MASK, 0x1234);
	i.type = DS_TOKEN_MR;
	i.index = 0x1234;
	i.layer = DS_TIER_L3;
	i.flags = DS_TOKEN_MIGRATING | 0x80;
	i.version = 1;
	i.data_len = DSMEM_MR_TOKEN_SIZE;
	memcpy(i.data, &t, DSMEM_MR_TOKEN_SIZE);
	assert_string_equal(output::text(token_record(i)).c_str(),
		"handle 0x5fff1234 mr index 4660 layer l3 flags migrating,bit7 version 1 node - "
		"object  hits 0 accesses 0 lkey 43981 access_flags 15 page_bits 12 n_pages 256");

	i.flags = 0;
	i.data_len = DSMEM_MR_TOKEN_SIZE - 1;	// no valid token: no fields
	strcpy(i.object, "mr");
	record r = token_record(i);
	assert_string_equal(output::text(r).c_str(),
		"handle 0x5fff1234 mr index 4660 layer l3 flags - version 1 node - "
		"object mr hits 0 accesses 0");
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_true(v[0]["node"].is_null());
	assert_true(v[0]["flags"].is_array() && v[0]["flags"].empty());
	assert_true(v[0]["fields"].is_object() && v[0]["fields"].empty());

	assert_string_equal(tier_name(0).c_str(), "unknown(0)");
	assert_string_equal(token_type_name(9).c_str(), "unknown(9)");
	assert_string_equal(handle_string(1).c_str(), "0x00000001");
}

// A cache as CACHE_GET describes it: defaults from the module's table,
// adaptive mode, thresholds moved off their settings.
std::unique_ptr<ds_cache_info> sample_cache()
{
	auto c = std::make_unique<ds_cache_info>();
	ds_cache_param_desc d;

	*c = {};
	for (unsigned int i = 0; ds_cache_param_describe(i, &d) == 0; i++)
		c->params[c->nparams++] = d.def;
	c->params[DS_CACHE_P_MODE] = DS_CACHE_ADAPTIVE;
	c->promote_l1 = 96;
	c->promote_l2 = 12;
	c->entries = 5000;
	c->pinned = 2;
	c->queued = 3;
	c->migrate_rate = 120;
	c->migrate_lat_mean_ns = 950;
	c->migrate_lat_p99_ns = 4100;
	c->dma_rate = 7680;
	c->dma_prefetch_rate = 640;
	c->trace_active = 1;
	c->trace_records = 1000;
	c->trace_dropped = 4;
	const ds_cache_tier tiers[3] = {
		{ DS_TIER_L1, {}, 0, 4000, 4096, 64000, 900, 100, 50, 10, 5, 5, 9, {} },
		{ DS_TIER_L2, {}, -1, 900, 65536, 8192, 90, 10, 20, 30, 0, 200, 350, {} },
		{ DS_TIER_L3, {}, 1, 5000, 0, 80000, 10, 0, 0, 0, 0, 800, 1200, {} },
	};
	memcpy(c->tiers, tiers, sizeof(tiers));
	const ds_stat stats[] = {
		{ "hits_l1", 900 }, { "cost_l1_ns", 4500 }, { "cas_retries", 7 },
		{ "cas_fallbacks", 1 }, { "read_retries", 3 },
	};
	memcpy(c->stats, stats, sizeof(stats));
	c->nstats = c->stat_total = 5;
	return c;
}

void test_cache_text(void **)
{
	std::string t = output::text(cache_record(*sample_cache()));
	assert_string_equal(t.c_str(),
		"entries 5000 pinned 2 queued 3 migrations_per_sec 120\n"
		"    migration per_sec 120 latency_mean 950ns latency_p99 4100ns "
		"dma_bytes_per_sec 7680 dma_prefetch_bytes_per_sec 640\n"
		"    param l1_capacity 4096 entries\n"
		"    param l2_capacity 65536 entries\n"
		"    param promote_l2 16 hits in_effect 12\n"
		"    param promote_l1 128 hits in_effect 96\n"
		"    param window 100ms\n"
		"    param l1_idle 1ms\n"
		"    param l2_idle 10ms\n"
		"    param aging 100ms\n"
		"    param batch_threshold 32 entries\n"
		"    param batch_max 256 entries\n"
		"    param queue_max 1024 entries\n"
		"    param cas_retries 8 tries\n"
		"    param prefetch 8 entries\n"
		"    param cost_l1 5ns\n"
		"    param cost_l2 200ns\n"
		"    param cost_l3 800ns\n"
		"    param mode adaptive\n"
		"    param migrate_budget 32768 entries\n"
		"    param adapt_interval 10ms\n"
		"    param sample 1 accesses\n"
		"    param optimistic 0\n"
		"    tier l1 entries 4000 capacity 4096 bytes 64000 numa 0 hits 900 misses 100 "
		"hit_ratio 0.9 promotions 50 demotions 10 evictions 5 cost_mean 5ns cost_p99 9ns\n"
		"    tier l2 entries 900 capacity 65536 bytes 8K numa any hits 90 misses 10 "
		"hit_ratio 0.9 promotions 20 demotions 30 evictions 0 cost_mean 200ns "
		"cost_p99 350ns\n"
		"    tier l3 entries 5000 capacity - bytes 80000 numa 1 hits 10 misses 0 "
		"hit_ratio 1.0 promotions 0 demotions 0 evictions 0 cost_mean 800ns "
		"cost_p99 1200ns\n"
		"    counters hits_l1 900 cost_l1 4500ns cas_retries 7 cas_fallbacks 1 "
		"read_retries 3\n"
		"    trace active yes records 1000 dropped 4");
}

void test_cache_json(void **)
{
	auto c = sample_cache();
	c->tiers[1].hits = c->tiers[1].misses = 0;	// nothing to divide
	c->tiers[0].misses = 200;			// 900 / 1100
	auto v = nlohmann::json::parse(capture(output::mode::json, cache_record(*c), false));
	const auto &r = v[0];
	assert_int_equal(r["entries"].get<int>(), 5000);
	assert_int_equal(r["migrations_per_sec"].get<int>(), 120);
	// the names the console charts
	const auto &m = r["migration"];
	assert_int_equal(m.size(), 5);
	assert_int_equal(m["per_sec"].get<int>(), 120);
	assert_int_equal(m["latency_mean_ns"].get<int>(), 950);
	assert_int_equal(m["latency_p99_ns"].get<int>(), 4100);
	assert_int_equal(m["dma_bytes_per_sec"].get<int>(), 7680);
	assert_int_equal(m["dma_prefetch_bytes_per_sec"].get<int>(), 640);

	// parameters in the table's order, values in their unit (times in ns)
	const auto &p = r["params"];
	assert_int_equal(p.size(), DS_CACHE_P_NR);
	assert_string_equal(p[DS_CACHE_P_WINDOW_NS]["name"].get<std::string>().c_str(), "window");
	assert_true(p[DS_CACHE_P_WINDOW_NS]["value"].get<uint64_t>() == 100000000ULL);
	assert_string_equal(p[DS_CACHE_P_WINDOW_NS]["unit"].get<std::string>().c_str(), "ns");
	assert_string_equal(p[DS_CACHE_P_MODE]["value"].get<std::string>().c_str(), "adaptive");
	assert_false(p[DS_CACHE_P_MODE].contains("unit"));
	assert_int_equal(p[DS_CACHE_P_PROMOTE_L1]["value"].get<int>(), 128);
	assert_int_equal(p[DS_CACHE_P_PROMOTE_L1]["in_effect"].get<int>(), 96);
	assert_int_equal(p[DS_CACHE_P_PROMOTE_L2]["in_effect"].get<int>(), 12);
	assert_false(p[DS_CACHE_P_L1_CAPACITY].contains("in_effect"));

	const auto &t = r["tiers"];
	assert_int_equal(t.size(), 3);
	assert_string_equal(t[0]["tier"].get<std::string>().c_str(), "l1");
	assert_true(t[0]["hit_ratio"].get<double>() == 0.8182);
	assert_true(t[1]["hit_ratio"].is_null());
	assert_int_equal(t[1]["numa"].get<int>(), -1);
	assert_true(t[2]["capacity"].is_null());	// unbounded
	assert_int_equal(t[2]["cost_p99_ns"].get<int>(), 1200);
	assert_int_equal(r["counters"]["cas_retries"].get<int>(), 7);
	assert_int_equal(r["counters"]["read_retries"].get<int>(), 3);
	assert_false(r.contains("counters_total"));
	assert_true(r["trace"]["active"].get<bool>());
	assert_int_equal(r["trace"]["dropped"].get<int>(), 4);

	// more counters than fit: the total says so
	c->stat_total = 70;
	v = nlohmann::json::parse(capture(output::mode::json, cache_record(*c), false));
	assert_int_equal(v[0]["counters_total"].get<int>(), 70);
}

void test_trace_and_bench_records(void **)
{
	ds_trace_info t{};
	t.records = 100;
	t.dropped = 5;
	assert_string_equal(output::text(trace_stop_record(t)).c_str(), "records 100 dropped 5");
	t.error = ENOSPC;
	assert_string_equal(output::text(trace_stop_record(t)).c_str(),
		"records 100 dropped 5 errno 28 error \"No space left on device\"");

	auto c = sample_cache();
	c->trace_active = 0;
	assert_string_equal(output::text(trace_state_record(*c)).c_str(),
		"active no records 1000 dropped 4");

	ds_cache_bench_result b{};
	b.accesses = 3000;
	b.hits_l1 = 2400;
	b.hits_l2 = 500;
	b.hits_l3 = 100;
	b.modeled_ns = 3000000;
	b.l1_hit_mean_ns = 40;
	b.l1_hit_p99_ns = 120;
	b.miss_mean_ns = 350;
	b.miss_p99_ns = 2000;
	b.migrations = 17;
	record r = bench_record(1024, 1000, 7, b);
	assert_string_equal(output::text(r).c_str(),
		"qps 1024 ops 1000 seed 7 accesses 3000 hits_l1 2400 hits_l2 500 hits_l3 100 "
		"hit_ratio_l1 0.8 modeled 3ms modeled_mean 1us l1_hit_mean 40ns l1_hit_p99 120ns "
		"miss_mean 350ns miss_p99 2us migrations 17");
	auto v = nlohmann::json::parse(capture(output::mode::json, r, false));
	assert_true(v[0]["modeled_ns"].get<uint64_t>() == 3000000);
	assert_int_equal(v[0]["modeled_mean_ns"].get<int>(), 1000);
	assert_true(v[0]["hit_ratio_l1"].get<double>() == 0.8);

	b = {};	// nothing ran
	v = nlohmann::json::parse(capture(output::mode::json, bench_record(1, 1, 1, b), false));
	assert_true(v[0]["modeled_mean_ns"].is_null());
	assert_true(v[0]["hit_ratio_l1"].is_null());
	assert_true(output::text(bench_record(1, 1, 1, b)).find("modeled_mean - ") !=
		    std::string::npos);
}

void test_cache_events(void **)
{
	auto ev = std::make_unique<ds_event>();
	*ev = {};
	ev->type = DS_EVENT_TRACE_START;
	assert_string_equal(output::text(event_record(*ev)).c_str(), "[TRACE START]");
	ev->type = DS_EVENT_TRACE_STOP;
	ev->trace.records = 9;
	assert_string_equal(output::text(event_record(*ev)).c_str(),
			    "[TRACE STOP] records 9 dropped 0");
	ev->type = DS_EVENT_CACHE_SET;
	ev->cache = *sample_cache();
	std::string t = output::text(event_record(*ev));
	assert_true(t.rfind("[CACHE SET] entries 5000 pinned 2 ", 0) == 0);
	assert_true(t.find("\n    param mode adaptive\n") != std::string::npos);
	auto v = nlohmann::json::parse(capture(output::mode::json, event_record(*ev), true));
	assert_string_equal(v["event"].get<std::string>().c_str(), "cache_set");
	assert_int_equal(v["params"].size(), DS_CACHE_P_NR);
}

// ---- the Slope range ----

ds_slope_mig_info sample_mig()
{
	ds_slope_mig_info m{};
	m.node_id = 1;
	m.peer = 2;
	m.id = 3;
	m.state = DSMEM_SLOPE_MIG_HANDED_OVER;
	m.unit_shift = 12;
	m.cookie = DSMEM_SLOPE_BASE + 0x1000;
	m.pages = 10240;
	m.rounds = 3;
	m.sent_units = 12000;
	m.dirty_units = 600;
	m.pulled_units = 120;
	m.fault_waits = 7;
	m.prefill_ns = 1500000000;
	m.stop_ns = 20000000;
	m.no_owner_ns = 3000000;
	m.total_ns = 1600000000;
	m.first_round_ns = 900000000;
	return m;
}

void test_slope_records(void **)
{
	const uint64_t lease1 = DSMEM_SLOPE_BASE + DSMEM_SLOPE_LEASE_SIZE;
	ds_slope_range_info ranges[2] = {};
	ds_slope_lease_info leases[3] = {};
	ds_slope_mig_info migs[2] = { sample_mig(), sample_mig() };
	for (int i = 0; i < 2; i++) {
		ranges[i].node_id = i + 1;
		ranges[i].base = DSMEM_SLOPE_BASE;
		ranges[i].size = DSMEM_SLOPE_SIZE;
		ranges[i].leases_held = 1;
		ranges[i].leases_free = 62 + 2 * i;
	}
	ranges[0].pages = 1536;
	ranges[1].pages = 10240;
	// node 1 holds its first lease and gave its second to node 2
	leases[0] = { 1, 1, 1, 1, {}, DSMEM_SLOPE_BASE, 1536, {} };
	leases[1] = { 1, 2, 1, 0, {}, lease1, 0, {} };
	leases[2] = { 2, 2, 1, 1, {}, lease1, 10240, {} };
	// node 2 receives what node 1 sends
	migs[1].node_id = 2;
	migs[1].peer = 1;
	migs[1].id = 1;
	migs[1].incoming = 1;
	migs[1].stop_ns = migs[1].prefill_ns = 0;
	// node 1 holds the pages of one object, of two runs
	ds_slope_object_info objs[1] = { { 1, 2, DSMEM_SLOPE_BASE, 1536, {} } };
	ds_slope_ranges l{ ranges, 2, leases, 3, migs, 2, objs, 1, {} };

	std::vector<record> recs = slope_records(l);
	assert_int_equal(recs.size(), 2);
	assert_string_equal(output::text(recs[0]).c_str(),
		"node 1 base 0x300000000000 size 4T pages 1536 leases_held 1 leases_free 62\n"
		"    lease base 0x300000000000 holder 1 responsible 1 pages 1536\n"
		"    lease base 0x300040000000 holder 2 responsible 1 pages -\n"
		"    object addr 0x300000000000 pages 1536 runs 2\n"
		"    mig id 3 direction out peer 2 state handed_over cookie 0x300000001000 "
		"pages 10240 unit 4K rounds 3 sent 12000 dirty 600 pulled 120 failed 0 "
		"fault_waits 7 prefill 1500ms stop 20ms no_owner 3ms pull - total 1600ms "
		"first_round 900ms");
	assert_string_equal(output::text(recs[1]).c_str(),
		"node 2 base 0x300000000000 size 4T pages 10240 leases_held 1 leases_free 64\n"
		"    lease base 0x300040000000 holder 2 responsible 1 pages 10240\n"
		"    mig id 1 direction in peer 1 state handed_over cookie 0x300000001000 "
		"pages 10240 unit 4K rounds 3 sent 12000 dirty 600 pulled 120 failed 0 "
		"fault_waits 7 prefill - stop - no_owner 3ms pull - total 1600ms "
		"first_round 900ms");

	// JSON: one object per node, its leases and migrations as arrays;
	// addresses are strings, sizes bytes, times ns, unknowns null
	auto v = nlohmann::json::parse(capture(output::mode::json, recs[0], false));
	const auto &n = v[0];
	assert_int_equal(n["node"].get<int>(), 1);
	assert_string_equal(n["base"].get<std::string>().c_str(), "0x300000000000");
	assert_true(n["size"].get<uint64_t>() == DSMEM_SLOPE_SIZE);
	assert_int_equal(n["leases"].size(), 2);
	assert_true(n["leases"][1]["pages"].is_null());
	assert_int_equal(n["leases"][1]["holder"].get<int>(), 2);
	assert_int_equal(n["objects"].size(), 1);
	assert_string_equal(n["objects"][0]["addr"].get<std::string>().c_str(), "0x300000000000");
	assert_int_equal(n["objects"][0]["runs"].get<int>(), 2);
	assert_int_equal(n["migrations"].size(), 1);
	const auto &m = n["migrations"][0];
	assert_int_equal(m["id"].get<int>(), 3);
	assert_string_equal(m["direction"].get<std::string>().c_str(), "out");
	assert_string_equal(m["state"].get<std::string>().c_str(), "handed_over");
	assert_int_equal(m["unit"].get<int>(), 4096);
	assert_true(m["pull_ns"].is_null());
	assert_true(m["prefill_ns"].get<uint64_t>() == 1500000000);
	assert_false(m.contains("errno"));

	// a node with nothing to list; a failed migration says why
	ds_slope_ranges bare{ ranges, 1, nullptr, 0, nullptr, 0, nullptr, 0, {} };
	recs = slope_records(bare);
	assert_string_equal(output::text(recs[0]).c_str(),
		"node 1 base 0x300000000000 size 4T pages 1536 leases_held 1 leases_free 62");
	v = nlohmann::json::parse(capture(output::mode::json, recs[0], false));
	assert_true(v[0]["leases"].is_array() && v[0]["leases"].empty());
	assert_true(v[0]["migrations"].is_array() && v[0]["migrations"].empty());

	ds_slope_mig_info f = sample_mig();
	f.state = DSMEM_SLOPE_MIG_FAILED;
	f.error = ECONNRESET;
	f.unit_shift = 21;
	record fr = slope_mig_record(f);
	assert_string_equal(fr["state"].get<std::string>().c_str(), "failed");
	assert_int_equal(fr["errno"].get<int>(), ECONNRESET);
	assert_true(output::text(fr).find(" unit 2M ") != std::string::npos);
	assert_true(output::text(fr).find("errno 104 error \"") != std::string::npos);

	// leases or migrations of a node whose summary did not come
	ds_slope_ranges orphan{ nullptr, 0, leases + 2, 1, nullptr, 0, nullptr, 0, {} };
	recs = slope_records(orphan);
	assert_string_equal(output::text(recs[0]).c_str(),
		"node 2 base - size - pages - leases_held - leases_free -\n"
		"    lease base 0x300040000000 holder 2 responsible 1 pages 10240");
}

void test_slope_names_and_event(void **)
{
	assert_string_equal(slope_mig_state_name(DSMEM_SLOPE_MIG_PREFILL).c_str(), "prefill");
	assert_string_equal(slope_mig_state_name(DSMEM_SLOPE_MIG_STOPPING).c_str(), "stopping");
	assert_string_equal(slope_mig_state_name(DSMEM_SLOPE_MIG_DONE).c_str(), "done");
	assert_string_equal(slope_mig_state_name(DSMEM_SLOPE_MIG_INCOMING).c_str(), "incoming");
	assert_string_equal(slope_mig_state_name(40).c_str(), "unknown(40)");

	auto ev = std::make_unique<ds_event>();
	*ev = {};
	ev->type = DS_EVENT_SLOPE_MIG;
	ev->slope_mig = sample_mig();
	ev->slope_mig.state = DSMEM_SLOPE_MIG_DONE;
	ev->slope_mig.unit_shift = 0;	// not reported
	assert_string_equal(output::text(event_record(*ev)).c_str(),
		"[SLOPE MIG] node 1 id 3 direction out peer 2 state done cookie 0x300000001000 "
		"pages 10240 unit - rounds 3 sent 12000 dirty 600 pulled 120 failed 0 "
		"fault_waits 7 prefill 1500ms stop 20ms no_owner 3ms pull - total 1600ms "
		"first_round 900ms");
	auto v = nlohmann::json::parse(capture(output::mode::json, event_record(*ev), true));
	assert_string_equal(v["event"].get<std::string>().c_str(), "slope_mig");
	assert_int_equal(v["node"].get<int>(), 1);
	assert_true(v["unit"].is_null());
}

void test_text_rules_for_tokens(void **)
{
	assert_string_equal(duration_string(0).c_str(), "0ns");
	assert_string_equal(duration_string(999).c_str(), "999ns");
	assert_string_equal(duration_string(1000).c_str(), "1us");
	assert_string_equal(duration_string(1500).c_str(), "1500ns");
	assert_string_equal(duration_string(1500000).c_str(), "1500us");
	assert_string_equal(duration_string(100000000).c_str(), "100ms");
	assert_string_equal(duration_string(60000000000ULL).c_str(), "60s");

	record r;
	r["type"] = "cq";	// a bare word
	r["object"] = "two words";	// quoted
	r["tab"] = "a\tb";
	r["plain"] = "one";
	r["wait_ns"] = uint64_t{2000};	// a time: unit from the key
	r["none_ns"] = nullptr;
	r["neg_ns"] = -1;	// not a time: as it is
	r["bytes"] = uint64_t{2048};
	assert_string_equal(output::text(r).c_str(),
		"cq object \"two words\" tab \"a\tb\" plain one wait 2us none - neg_ns -1 bytes 2K");
	assert_string_equal(features_record(DSMEM_FEAT_TOKENCACHE)[0].get<std::string>().c_str(),
			    "tokencache");
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
		cmocka_unit_test(test_token_flags),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_text_scalars_and_lists),
		cmocka_unit_test(test_size_string),
		cmocka_unit_test(test_hexdump_like_hexdump_c),
		cmocka_unit_test(test_rdm_read_text_and_json),
		cmocka_unit_test(test_node_record),
		cmocka_unit_test(test_node_record_devs),
		cmocka_unit_test(test_peer_record),
		cmocka_unit_test(test_seg_record),
		cmocka_unit_test(test_rdm_alloc_record),
		cmocka_unit_test(test_perm_and_translate_names),
		cmocka_unit_test(test_object_events),
		cmocka_unit_test(test_token_text),
		cmocka_unit_test(test_token_json),
		cmocka_unit_test(test_token_without_owner_or_flags),
		cmocka_unit_test(test_cache_text),
		cmocka_unit_test(test_cache_json),
		cmocka_unit_test(test_trace_and_bench_records),
		cmocka_unit_test(test_cache_events),
		cmocka_unit_test(test_text_rules_for_tokens),
		cmocka_unit_test(test_slope_records),
		cmocka_unit_test(test_slope_names_and_event),
	};
	return cmocka_run_group_tests_name("dsctl_output", tests, nullptr, nullptr);
}
