// SPDX-License-Identifier: BSD-2-Clause
// dsctl argument handling.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>

#include <string>
#include <vector>

#include <linux/dsmem_netlink.h>

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

void test_parse_u64(void **)
{
	uint64_t v = 0;
	assert_true(parse_u64("18446744073709551615", v));
	assert_true(v == UINT64_MAX);
	assert_false(parse_u64("18446744073709551616", v));
	assert_true(parse_u64("0xffffffffffffffff", v));
	assert_true(v == UINT64_MAX);
	assert_false(parse_u64("0x10000000000000000", v));
	assert_true(parse_u64("010", v));
	assert_true(v == 10);
	assert_false(parse_u64("-1", v));
	assert_false(parse_u64("1 ", v));
	assert_false(parse_u64("", v));
}

void test_parse_size_suffixes(void **)
{
	uint64_t v = 0;
	assert_true(parse_size("4096", v));
	assert_true(v == 4096);
	assert_true(parse_size("4K", v));
	assert_true(v == 4096);
	assert_true(parse_size("4k", v));
	assert_true(v == 4096);
	assert_true(parse_size("256M", v));
	assert_true(v == 256ULL << 20);
	assert_true(parse_size("2G", v));
	assert_true(v == 2ULL << 30);
	assert_true(parse_size("1T", v));
	assert_true(v == 1ULL << 40);
	assert_true(parse_size("0x10M", v));	// 0x10 is 16: no suffix is a hex digit
	assert_true(v == 16ULL << 20);
	assert_true(parse_size("0", v));	// zero is a size; commands refuse it
	assert_true(v == 0);
}

void test_parse_size_overflow_and_junk(void **)
{
	uint64_t v = 7;
	assert_true(parse_size("16777215T", v));	// 2^64 - 2^40
	assert_false(parse_size("16777216T", v));	// 2^64: one too many
	assert_false(parse_size("17179869184G", v));
	assert_false(parse_size("18446744073709551615K", v));
	assert_false(parse_size("K", v));
	assert_false(parse_size("", v));
	assert_false(parse_size("1KB", v));
	assert_false(parse_size("1KK", v));
	assert_false(parse_size("1.5G", v));
	assert_false(parse_size("1 G", v));
	assert_false(parse_size("-1K", v));
	assert_false(parse_size("1E", v));
	assert_false(parse_size("1Ki", v));
	assert_true(v == (16777215ULL << 40));	// failures leave it alone
}

void test_parse_addr_is_hex(void **)
{
	uint64_t v = 0;
	assert_true(parse_addr("0x1000200000000", v));
	assert_true(v == 0x1000200000000ULL);
	assert_true(parse_addr("0XFFFFFFFFFFFFFFFF", v));
	assert_true(v == UINT64_MAX);
	assert_false(parse_addr("0x10000000000000000", v));	// 65 bits
	assert_false(parse_addr("1000200000000", v));	// decimal is refused
	assert_false(parse_addr("0x", v));
	assert_false(parse_addr("0x12g", v));
	assert_false(parse_addr("0x-1", v));
	assert_false(parse_addr("", v));
}

void test_parse_perm(void **)
{
	uint8_t p = 0;
	assert_true(parse_perm("r", p));
	assert_int_equal(p, DSMEM_PERM_READ);
	assert_true(parse_perm("rw", p));
	assert_int_equal(p, DSMEM_PERM_READ | DSMEM_PERM_WRITE);
	assert_false(parse_perm("w", p));
	assert_false(parse_perm("wr", p));
	assert_false(parse_perm("R", p));
	assert_false(parse_perm("", p));
	assert_false(parse_perm("rwx", p));
}

void test_parse_translate(void **)
{
	int t = -1;
	assert_true(parse_translate("segment", t));
	assert_int_equal(t, DSMEM_TRANSLATE_SEGMENT);
	assert_true(parse_translate("pages", t));
	assert_int_equal(t, DSMEM_TRANSLATE_PAGES);
	assert_true(parse_translate("s", t));	// keywords abbreviate
	assert_int_equal(t, DSMEM_TRANSLATE_SEGMENT);
	assert_true(parse_translate("pa", t));
	assert_int_equal(t, DSMEM_TRANSLATE_PAGES);
	assert_false(parse_translate("segments", t));
	assert_false(parse_translate("", t));
	assert_false(parse_translate("base", t));
}

void test_parse_hex_data(void **)
{
	std::vector<uint8_t> d;
	assert_true(parse_hex_data("deadBEEF", d));
	assert_int_equal(d.size(), 4);
	assert_int_equal(d[0], 0xde);
	assert_int_equal(d[3], 0xef);
	assert_true(parse_hex_data("0x0001", d));
	assert_int_equal(d.size(), 2);
	assert_int_equal(d[1], 1);
	assert_true(parse_hex_data("48 65\n6c", d));	// as xxd -p splits it
	assert_int_equal(d.size(), 3);
	assert_int_equal(d[2], 0x6c);
	d = { 9 };
	assert_false(parse_hex_data("abc", d));	// odd
	assert_false(parse_hex_data("4 8", d));	// a byte split in two
	assert_false(parse_hex_data("zz", d));
	assert_false(parse_hex_data("", d));
	assert_false(parse_hex_data("0x", d));
	assert_false(parse_hex_data("  ", d));
	assert_false(parse_hex_data("-1", d));
	assert_int_equal(d.size(), 1);	// failures leave it alone
	assert_int_equal(d[0], 9);
}

void test_keywords(void **)
{
	args a({ "n", "1", "s", "256M", "nu", "0" });
	keywords kw;
	std::string err;
	// "n" fits node and numa: the first in order wins
	assert_true(kw.parse(a, { "node", "size", "numa", "translate" }, err));
	assert_true(a.empty());
	assert_string_equal(kw.get("node")->c_str(), "1");
	assert_string_equal(kw.get("size")->c_str(), "256M");
	assert_string_equal(kw.get("numa")->c_str(), "0");
	assert_false(kw.has("translate"));
	assert_null(kw.get("bogus"));
}

void test_keywords_errors(void **)
{
	std::string err;
	{
		args a({ "node", "1", "bogus", "2" });
		keywords kw;
		assert_false(kw.parse(a, { "node" }, err));
		assert_string_equal(err.c_str(), "unexpected \"bogus\"");
	}
	{
		args a({ "node", "1", "no", "2" });
		keywords kw;
		assert_false(kw.parse(a, { "node" }, err));
		assert_string_equal(err.c_str(), "node is given twice");
	}
	{
		args a({ "node" });
		keywords kw;
		assert_false(kw.parse(a, { "node" }, err));
		assert_string_equal(err.c_str(), "node needs a value");
	}
	{
		args a({ "nodes", "1" });
		keywords kw;
		assert_false(kw.parse(a, { "node" }, err));
		assert_string_equal(err.c_str(), "unexpected \"nodes\"");
	}
	{
		args a({});
		keywords kw;
		assert_true(kw.parse(a, { "node" }, err));
		assert_false(kw.has("node"));
	}
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
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_parse_size_suffixes),
		cmocka_unit_test(test_parse_size_overflow_and_junk),
		cmocka_unit_test(test_parse_addr_is_hex),
		cmocka_unit_test(test_parse_perm),
		cmocka_unit_test(test_parse_translate),
		cmocka_unit_test(test_parse_hex_data),
		cmocka_unit_test(test_keywords),
		cmocka_unit_test(test_keywords_errors),
	};
	return cmocka_run_group_tests_name("dsctl_cli", tests, nullptr, nullptr);
}
