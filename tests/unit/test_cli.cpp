// SPDX-License-Identifier: BSD-2-Clause
// dsctl argument handling.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>

#include <string>
#include <vector>

#include "cli.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsctl;

namespace {

int parse(std::vector<std::string> words, global_opts &o, std::string &err)
{
	std::vector<char *> argv;
	static std::vector<std::string> keep;
	keep = std::move(words);
	for (auto &w : keep)
		argv.push_back(w.data());
	argv.push_back(nullptr);
	return parse_global(static_cast<int>(keep.size()), argv.data(), o, err);
}

void test_matches_prefixes(void **)
{
	assert_true(matches("d", "dev"));
	assert_true(matches("dev", "dev"));
	assert_true(matches("stat", "statistic"));
	assert_false(matches("", "dev"));
	assert_false(matches("devs", "dev"));
	assert_false(matches("x", "dev"));
}

void test_global_json_pretty(void **)
{
	global_opts o;
	std::string err;
	int idx = parse({ "dsctl", "-j", "-p", "dev", "show" }, o, err);
	assert_int_equal(idx, 3);
	assert_true(o.json);
	assert_true(o.pretty);
}

void test_global_stops_at_object(void **)
{
	global_opts o;
	std::string err;
	// "-j" after OBJECT belongs to the command, not to dsctl
	int idx = parse({ "dsctl", "dev", "-j" }, o, err);
	assert_int_equal(idx, 1);
	assert_false(o.json);
}

void test_global_pretty_alone_is_accepted(void **)
{
	global_opts o;
	std::string err;
	// iproute2 accepts it; it only matters together with -j
	assert_int_equal(parse({ "dsctl", "-p", "dev" }, o, err), 2);
	assert_true(o.pretty);
	assert_false(o.json);
}

void test_global_iproute2_single_dash_words(void **)
{
	global_opts o;
	std::string err;
	assert_int_equal(parse({ "dsctl", "-json", "-pretty", "dev" }, o, err), 3);
	assert_true(o.json && o.pretty);
}

void test_global_unknown_option(void **)
{
	global_opts o;
	std::string err;
	assert_int_equal(parse({ "dsctl", "-z", "dev" }, o, err), -1);
	assert_string_equal(err.c_str(), "unknown option \"-z\"");
	assert_int_equal(parse({ "dsctl", "-jz", "dev" }, o, err), -1);
	assert_string_equal(err.c_str(), "unknown option \"-z\"");
	assert_int_equal(parse({ "dsctl", "--bogus", "dev" }, o, err), -1);
	assert_string_equal(err.c_str(), "unknown option \"--bogus\"");
}

void test_global_long_options(void **)
{
	global_opts o;
	std::string err;
	assert_int_equal(parse({ "dsctl", "--json", "--pretty", "version" }, o, err), 3);
	assert_true(o.json && o.pretty);
}

void test_parse_u32(void **)
{
	unsigned int v = 0;
	assert_true(parse_u32("42", v));
	assert_int_equal(v, 42);
	assert_true(parse_u32("0x10", v));
	assert_int_equal(v, 16);
	assert_true(parse_u32("4294967295", v));
	assert_false(parse_u32("4294967296", v));
	assert_false(parse_u32("-1", v));
	assert_false(parse_u32("12abc", v));
	assert_false(parse_u32("", v));
	assert_true(parse_u32("010", v));	// never octal
	assert_int_equal(v, 10);
	assert_false(parse_u32("0x", v));
	assert_false(parse_u32("0xg", v));
	assert_false(parse_u32(" 1", v));
}

void test_args_consume(void **)
{
	args a({ "show", "rxe0" });
	assert_int_equal(a.left(), 2);
	assert_string_equal(a.next().c_str(), "show");
	assert_string_equal(a.peek().c_str(), "rxe0");
	a.next();
	assert_true(a.empty());
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_prefixes),
		cmocka_unit_test(test_global_json_pretty),
		cmocka_unit_test(test_global_stops_at_object),
		cmocka_unit_test(test_global_pretty_alone_is_accepted),
		cmocka_unit_test(test_global_iproute2_single_dash_words),
		cmocka_unit_test(test_global_unknown_option),
		cmocka_unit_test(test_global_long_options),
		cmocka_unit_test(test_parse_u32),
		cmocka_unit_test(test_args_consume),
	};
	return cmocka_run_group_tests_name("dsctl_cli", tests, nullptr, nullptr);
}
