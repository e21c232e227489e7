// SPDX-License-Identifier: BSD-2-Clause
// dsctl argument handling.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>

#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/dsmem_netlink.h>

#include "cli.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsctl;

namespace {

int parse(std::vector<std::string> words, global_opts &o, std::string &err,
	  bool words_follow = false)
{
	std::vector<char *> argv;
	static std::vector<std::string> keep;
	keep = std::move(words);
	for (auto &w : keep)
		argv.push_back(w.data());
	argv.push_back(nullptr);
	return parse_global(static_cast<int>(keep.size()), argv.data(), o, err, words_follow);
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

void test_global_words_follow(void **)
{
	// dsmem-console: the first word that is no option starts its
	// keywords, which may be written --keyword
	global_opts o;
	std::string err;
	assert_int_equal(parse({ "c", "-j", "--listen", "x" }, o, err, true), 2);
	assert_true(o.json);
	o = {};
	assert_int_equal(parse({ "c", "-p", "-jlisten", "x" }, o, err, true), 2);
	assert_true(o.pretty);
	assert_false(o.json);
	o = {};
	assert_int_equal(parse({ "c", "--db", "x", "-j" }, o, err, true), 1);
	assert_false(o.json);
	assert_int_equal(parse({ "c", "-V" }, o, err, true), 2);
	assert_true(o.show_version);
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
	assert_false(parse_u32("+1", v));
	assert_true(parse_u32("0xffffffff", v));
	assert_int_equal(v, 4294967295U);
	assert_false(parse_u32("0x100000000", v));
	assert_false(parse_u32("18446744073709551616", v));
	assert_int_equal(v, 4294967295U);	// a failure leaves v alone
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

void test_parse_duration(void **)
{
	uint64_t v = 0;
	assert_true(parse_duration("1500", v));	// bare: ns
	assert_true(v == 1500);
	assert_true(parse_duration("1500ns", v));
	assert_true(v == 1500);
	assert_true(parse_duration("5us", v));
	assert_true(v == 5000);
	assert_true(parse_duration("100ms", v));
	assert_true(v == 100000000ULL);
	assert_true(parse_duration("60s", v));
	assert_true(v == 60000000000ULL);
	assert_true(parse_duration("0x10us", v));	// no suffix is a hex digit
	assert_true(v == 16000);
	assert_true(parse_duration("18446744073s", v));
	assert_true(v == 18446744073000000000ULL);
	assert_false(parse_duration("18446744074s", v));	// past 2^64 ns
	assert_false(parse_duration("18446744073709552ms", v));
	assert_false(parse_duration("ms", v));
	assert_false(parse_duration("s", v));
	assert_false(parse_duration("", v));
	assert_false(parse_duration("1.5ms", v));
	assert_false(parse_duration("1m", v));
	assert_false(parse_duration("1h", v));
	assert_false(parse_duration("1 ms", v));
	assert_false(parse_duration("-1s", v));
	assert_false(parse_duration("1msec", v));
	assert_false(parse_duration("1sms", v));
	assert_true(v == 18446744073000000000ULL);	// failures leave it alone
}

void test_parse_handle_type_tier(void **)
{
	uint32_t h = 0;
	assert_true(parse_handle("0xc0010002", h));
	assert_int_equal(h, 0xc0010002U);
	assert_true(parse_handle("3221291010", h));	// the same, in decimal
	assert_int_equal(h, 0xc0010002U);
	assert_false(parse_handle("0x100000000", h));
	assert_false(parse_handle("0x", h));
	assert_false(parse_handle("qp", h));
	assert_false(parse_handle("-1", h));

	int type = -1;
	const char *types[] = { "pd", "mr", "cq", "qp", "db", "wqe" };
	for (int i = 0; i < 6; i++) {
		assert_true(parse_token_type(types[i], type));
		assert_int_equal(type, i);
	}
	assert_false(parse_token_type("QP", type));
	assert_false(parse_token_type("q", type));	// exact: p would be pd or qp...
	assert_false(parse_token_type("srq", type));
	assert_false(parse_token_type("", type));
	assert_int_equal(type, 5);

	uint8_t tier = 0;
	assert_true(parse_tier("l1", tier));
	assert_int_equal(tier, DS_TIER_L1);
	assert_true(parse_tier("L2", tier));
	assert_int_equal(tier, DS_TIER_L2);
	assert_true(parse_tier("l3", tier));
	assert_int_equal(tier, DS_TIER_L3);
	assert_false(parse_tier("l0", tier));
	assert_false(parse_tier("l4", tier));
	assert_false(parse_tier("3", tier));
	assert_false(parse_tier("l12", tier));
	assert_false(parse_tier("", tier));
	assert_int_equal(tier, DS_TIER_L3);
}

void test_parse_cache_value(void **)
{
	uint64_t v = 0;
	std::string err;

	assert_true(parse_cache_value(DS_CACHE_P_L1_CAPACITY, "4096", v, err));
	assert_true(v == 4096);
	assert_true(parse_cache_value(DS_CACHE_P_WINDOW_NS, "100ms", v, err));
	assert_true(v == 100000000ULL);
	assert_true(parse_cache_value(DS_CACHE_P_COST_L1_NS, "5", v, err));	// ns
	assert_true(v == 5);
	assert_true(parse_cache_value(DS_CACHE_P_MODE, "adaptive", v, err));
	assert_true(v == DS_CACHE_ADAPTIVE);
	assert_true(parse_cache_value(DS_CACHE_P_MODE, "f", v, err));
	assert_true(v == DS_CACHE_FIXED);
	assert_true(parse_cache_value(DS_CACHE_P_PREFETCH, "0", v, err));	// min 0
	assert_true(v == 0);

	assert_false(parse_cache_value(DS_CACHE_P_L1_CAPACITY, "0", v, err));
	assert_string_equal(err.c_str(), "l1_capacity needs a number of entries from 1 to 16384");
	assert_false(parse_cache_value(DS_CACHE_P_L1_CAPACITY, "4K", v, err));
	assert_false(parse_cache_value(DS_CACHE_P_WINDOW_NS, "100", v, err));	// 100ns
	assert_string_equal(err.c_str(),
			    "window needs a time from 1us to 60s (suffixes ns, us, ms, s)");
	assert_false(parse_cache_value(DS_CACHE_P_WINDOW_NS, "61s", v, err));
	assert_false(parse_cache_value(DS_CACHE_P_WINDOW_NS, "1m", v, err));
	assert_false(parse_cache_value(DS_CACHE_P_MODE, "1", v, err));
	assert_string_equal(err.c_str(), "mode needs \"fixed\" or \"adaptive\"");
	assert_false(parse_cache_value(DS_CACHE_P_NR, "1", v, err));
	assert_true(v == 0);	// failures leave it alone
}

// Every parameter of the module's table: its bounds are in, one past them out.
void test_parse_cache_value_bounds(void **)
{
	for (unsigned int i = 0; i < ds_cache_param_count(); i++) {
		ds_cache_param_desc d;
		uint64_t v = 0;
		std::string err;

		assert_int_equal(ds_cache_param_describe(i, &d), 0);
		if (i == DS_CACHE_P_MODE)
			continue;
		assert_true(parse_cache_value(i, std::to_string(d.min), v, err));
		assert_true(v == d.min);
		assert_true(parse_cache_value(i, std::to_string(d.max), v, err));
		assert_true(v == d.max);
		assert_true(parse_cache_value(i, std::to_string(d.def), v, err));
		assert_false(parse_cache_value(i, std::to_string(d.max + 1), v, err));
		assert_true(err.rfind(std::string(d.name) + " needs ", 0) == 0);
		if (d.min)
			assert_false(parse_cache_value(i, std::to_string(d.min - 1), v, err));
	}
}

void test_parse_cache_words(void **)
{
	std::string err;
	{
		args a({ "window", "100ms", "l1_capacity", "1024", "r", "mode", "adaptive" });
		keywords kw;
		cache_settings cs;
		assert_true(parse_cache_words(a, {}, { "reset" }, kw, cs, err));
		assert_true(a.empty());
		assert_true(cs.mask == ((1ULL << DS_CACHE_P_WINDOW_NS) |
					(1ULL << DS_CACHE_P_L1_CAPACITY) | (1ULL << DS_CACHE_P_MODE)));
		assert_true(cs.params[DS_CACHE_P_WINDOW_NS] == 100000000ULL);
		assert_true(cs.params[DS_CACHE_P_L1_CAPACITY] == 1024);
		assert_true(cs.params[DS_CACHE_P_MODE] == DS_CACHE_ADAPTIVE);
		assert_true(kw.has("reset"));
	}
	{
		// bench: keywords among the parameters; "q" is qps, queue_max exact
		args a({ "q", "8", "queue_max", "64", "ops", "100" });
		keywords kw;
		cache_settings cs;
		assert_true(parse_cache_words(a, { "qps", "ops", "seed" }, {}, kw, cs, err));
		assert_string_equal(kw.get("qps")->c_str(), "8");
		assert_string_equal(kw.get("ops")->c_str(), "100");
		assert_false(kw.has("seed"));
		assert_true(cs.mask == (1ULL << DS_CACHE_P_QUEUE_MAX));
		assert_true(cs.params[DS_CACHE_P_QUEUE_MAX] == 64);
	}
	struct {
		std::vector<std::string> words;
		const char *err;
	} bad[] = {
		{ { "bogus", "1" }, "unknown parameter \"bogus\"" },
		{ { "l1", "5" }, "unknown parameter \"l1\"" },	// names are exact
		{ { "window_ns", "5" }, "unknown parameter \"window_ns\"" },
		{ { "window", "1ms", "window", "2ms" }, "window is given twice" },
		{ { "window" }, "window needs a value" },
		{ { "reset", "reset" }, "reset is given twice" },
		{ { "window", "1h" }, "window needs a time from 1us to 60s (suffixes ns, us, ms, s)" },
		{ { "mode", "lru" }, "mode needs \"fixed\" or \"adaptive\"" },
	};
	for (const auto &b : bad) {
		args a(b.words);
		keywords kw;
		cache_settings cs;
		err.clear();
		assert_false(parse_cache_words(a, {}, { "reset" }, kw, cs, err));
		assert_string_equal(err.c_str(), b.err);
	}
}

void test_keywords_flags(void **)
{
	std::string err;
	{
		args a({ "handle", "0x1", "p", "layer", "l2" });
		keywords kw;
		assert_true(kw.parse(a, { "handle", "layer", "version" }, err, { "pin", "unpin" }));
		assert_true(kw.has("pin"));
		assert_string_equal(kw.get("pin")->c_str(), "");	// a flag takes no value
		assert_false(kw.has("unpin"));
		assert_string_equal(kw.get("layer")->c_str(), "l2");
	}
	{
		args a({ "u", "handle", "1" });
		keywords kw;
		assert_true(kw.parse(a, { "handle" }, err, { "pin", "unpin" }));
		assert_true(kw.has("unpin"));
		assert_string_equal(kw.get("handle")->c_str(), "1");
	}
	{
		args a({ "pin", "pin" });
		keywords kw;
		assert_false(kw.parse(a, { "handle" }, err, { "pin", "unpin" }));
		assert_string_equal(err.c_str(), "pin is given twice");
	}
	{
		// without flags a flag word is unknown
		args a({ "pin" });
		keywords kw;
		assert_false(kw.parse(a, { "handle" }, err));
		assert_string_equal(err.c_str(), "unexpected \"pin\"");
	}
}

// dsctl ui's lookup of the console: beside dsctl, then PATH, then the
// installed sbin; only executable regular files count.
std::string make_dir(const std::string &base, const char *name)
{
	std::string d = base + "/" + name;
	assert_int_equal(mkdir(d.c_str(), 0700), 0);
	return d;
}

void make_file(const std::string &path, mode_t mode)
{
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
	assert_true(fd >= 0);
	close(fd);
}

void test_find_program(void **)
{
	char tmpl[] = "/tmp/test_cli.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	std::string base = tmpl;
	std::string self = make_dir(base, "self"), p1 = make_dir(base, "p1"),
		    p2 = make_dir(base, "p2"), sbin = make_dir(base, "sbin");
	std::string path = p1 + ":" + p2;

	assert_string_equal(find_program("prog", self, path.c_str(), sbin).c_str(), "");
	make_file(sbin + "/prog", 0755);
	assert_string_equal(find_program("prog", self, path.c_str(), sbin).c_str(),
			    (sbin + "/prog").c_str());
	make_file(p2 + "/prog", 0755);
	assert_string_equal(find_program("prog", self, path.c_str(), sbin).c_str(),
			    (p2 + "/prog").c_str());
	// not executable, or a directory: passed over
	make_file(p1 + "/prog", 0644);
	make_dir(self, "prog");
	assert_string_equal(find_program("prog", self, path.c_str(), sbin).c_str(),
			    (p2 + "/prog").c_str());
	assert_string_equal(find_program("prog", self, nullptr, sbin).c_str(),
			    (sbin + "/prog").c_str());
	rmdir((self + "/prog").c_str());
	make_file(self + "/prog", 0755);
	assert_string_equal(find_program("prog", self, path.c_str(), sbin).c_str(),
			    (self + "/prog").c_str());

	for (const std::string &f : { self + "/prog", p1 + "/prog", p2 + "/prog", sbin + "/prog" })
		unlink(f.c_str());
	for (const std::string &d : { self, p1, p2, sbin, base })
		rmdir(d.c_str());
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_prefixes),
		cmocka_unit_test(test_find_program),
		cmocka_unit_test(test_global_json_pretty),
		cmocka_unit_test(test_global_stops_at_object),
		cmocka_unit_test(test_global_pretty_alone_is_accepted),
		cmocka_unit_test(test_global_iproute2_single_dash_words),
		cmocka_unit_test(test_global_unknown_option),
		cmocka_unit_test(test_global_long_options),
		cmocka_unit_test(test_global_words_follow),
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
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_handle_type_tier),
		cmocka_unit_test(test_parse_cache_value),
		cmocka_unit_test(test_parse_cache_value_bounds),
		cmocka_unit_test(test_parse_cache_words),
		cmocka_unit_test(test_keywords_flags),
	};
	return cmocka_run_group_tests_name("dsctl_cli", tests, nullptr, nullptr);
}
