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
	record f = features_record(DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS | (1ULL << 40));
	assert_int_equal(f.size(), 3);
	assert_string_equal(f[0].get<std::string>().c_str(), "dev_events");
	assert_string_equal(f[1].get<std::string>().c_str(), "stats");
	assert_string_equal(f[2].get<std::string>().c_str(), "bit40");
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
	};
	return cmocka_run_group_tests_name("dsctl_output", tests, nullptr, nullptr);
}
