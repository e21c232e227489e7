// SPDX-License-Identifier: BSD-2-Clause
// dsctl obj, master and segment show/add pool without a store: their words
// (store_cli.cpp, in this process), the records they print, in text and
// JSON, and the refusals of the built dsctl -- each bad word refused with
// its own message and exit status 1 before any store is asked, nothing on
// stdout.
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim.hpp"	// before cmocka.h, whose fail() macro iostream's would meet
#include "store_cli.hpp"

extern "C" {
#include <cmocka.h>
}

#include "sim_test_util.hpp"

using simtest::result;
using simtest::write_file;
using dsctl::record;

namespace {
result run_dsctl(const std::vector<std::string> &words)
{
	return simtest::dsctl(words);
}
}  // namespace

namespace {

const std::string m = "127.0.0.1:7700";

struct refusal {
	std::vector<std::string> words;
	std::string error;
};

const std::string key1025(1025, 'k');

const std::vector<refusal> refusals = {
	// obj put
	{ { "obj", "put" }, "missing KEY, try \"dsctl obj help\" (obj put KEY ...)" },
	{ { "obj", "put", "" }, "KEY needs 1 to 1024 bytes" },
	{ { "obj", "put", key1025 }, "KEY needs 1 to 1024 bytes" },
	{ { "obj", "put", "k", "replicas", "65" },
	  "replicas needs a number of DRAM replicas from 0 to 64" },
	{ { "obj", "put", "k", "replicas", "x" },
	  "replicas needs a number of DRAM replicas from 0 to 64" },
	{ { "obj", "put", "k", "nvmeof", "-1" },
	  "nvmeof needs a number of NVMe-oF replicas from 0 to 64" },
	{ { "obj", "put", "k", "replicas", "0" },
	  "an object needs at least one replica: replicas or nvmeof above 0" },
	{ { "obj", "put", "k", "flush", "sometimes" }, "flush needs \"eager\", \"lazy\" or \"none\"" },
	{ { "obj", "put", "k", "local", "local" }, "local is given twice" },
	{ { "obj", "put", "k", "file" }, "file needs a value" },
	{ { "obj", "put", "k", "copies", "2" }, "unexpected \"copies\"" },
	{ { "obj", "put", "k" },
	  "missing master: give master HOST:PORT[,HOST:PORT...] or set DSMEM_MASTERS" },
	{ { "obj", "put", "k", "master", "nohost" }, "master needs HOST:PORT[,HOST:PORT...]" },
	{ { "obj", "put", "k", "master", "h:0" }, "master needs HOST:PORT[,HOST:PORT...]" },
	{ { "obj", "put", "k", "master", "h:1,:2" }, "master needs HOST:PORT[,HOST:PORT...]" },
	{ { "obj", "put", "k", "master", "::1:7700" }, "master needs HOST:PORT[,HOST:PORT...]" },
	{ { "obj", "put", "k", "master", m },
	  "missing node: give node ID (a local dsmem node) or set DSMEM_NODE" },
	{ { "obj", "put", "k", "master", m, "node", "0" }, "node needs a node id from 1 to 65535" },
	{ { "obj", "put", "k", "master", m, "node", "65536" },
	  "node needs a node id from 1 to 65535" },
	{ { "obj", "put", "k", "m", m, "no", "1", "file", "/nonexistent/x" },
	  "cannot open /nonexistent/x: No such file or directory" },
	// obj get
	{ { "obj", "get" }, "missing KEY, try \"dsctl obj help\" (obj get KEY ...)" },
	{ { "obj", "get", "k", "version", "-1" },
	  "version needs a version number (the least one to read)" },
	{ { "obj", "get", "k", "offset", "1X" },
	  "offset needs a number of bytes (suffixes K, M, G, T)" },
	{ { "obj", "get", "k", "length", "0" },
	  "length needs a positive number of bytes (suffixes K, M, G, T)" },
	{ { "obj", "get", "k", "replicas", "1" }, "unexpected \"replicas\"" },
	// del, sync, stat, replicate, list
	{ { "obj", "del" }, "missing KEY, try \"dsctl obj help\" (obj del KEY ...)" },
	{ { "obj", "del", "k", "extra" }, "unexpected \"extra\"" },
	{ { "obj", "sync", "k", "node", "1", "node", "2" }, "node is given twice" },
	{ { "obj", "stat", "" }, "KEY needs 1 to 1024 bytes" },
	{ { "obj", "replicate", "k" }, "missing replicas, try \"dsctl obj help\"" },
	{ { "obj", "replicate", "k", "replicas", "0" },
	  "an object needs at least one replica: replicas or nvmeof above 0" },
	{ { "obj", "replicate", "k", "replicas", "1", "local" }, "unexpected \"local\"" },
	{ { "obj", "list", "prefix", "a", "prefix", "b" }, "prefix is given twice" },
	{ { "obj", "list", "prefix", key1025 }, "prefix needs at most 1024 bytes" },
	{ { "obj" }, "missing master: give master HOST:PORT[,HOST:PORT...] or set DSMEM_MASTERS" },
	{ { "obj", "frob" }, "unknown command \"frob\" for object \"obj\", try \"dsctl obj help\"" },
	// obj bench
	{ { "obj", "bench", "size", "8K" }, "size needs a number of bytes from 16K to 64M" },
	{ { "obj", "bench", "size", "65M" }, "size needs a number of bytes from 16K to 64M" },
	{ { "obj", "bench", "count", "0" }, "count needs a number of objects from 1 to 1000000" },
	{ { "obj", "bench", "threads", "65" }, "threads needs a number of threads from 1 to 64" },
	{ { "obj", "bench", "mix", "50-50" }, "mix needs READS:WRITES, such as 50:50 or 100:0" },
	{ { "obj", "bench", "mix", "0:0" }, "mix needs READS:WRITES, such as 50:50 or 100:0" },
	{ { "obj", "bench", "mix", "1:-1" }, "mix needs READS:WRITES, such as 50:50 or 100:0" },
	{ { "obj", "bench", "replicas", "0" },
	  "replicas needs a number of DRAM replicas from 1 to 64" },
	{ { "obj", "bench", "time", "3601" }, "time needs a number of seconds from 0 to 3600" },
	{ { "obj", "bench", "ops", "10" }, "unexpected \"ops\"" },
	// removing resources, and the pool's events
	{ { "master", "drain" }, "missing segment, try \"dsctl master help\"" },
	{ { "master", "drain", "segment", "0" }, "segment needs a segment id from 1 to 18446744073709551615" },
	{ { "master", "drain", "segment", "x" }, "segment needs a segment id from 1 to 18446744073709551615" },
	{ { "master", "drain", "segment", "3", "deadline", "0" },
	  "deadline needs a number of seconds from 1 to 604800" },
	{ { "master", "monitor", "count", "0" }, "count needs a number of events from 1 to 4294967295" },
	{ { "master", "monitor", "time", "0" }, "time needs a number of seconds from 1 to 604800" },
	{ { "master", "monitor", "for", "3" }, "unexpected \"for\"" },
	// soft pins and TTLs
	{ { "obj", "put", "k", "ttl", "5x" },
	  "ttl needs NUMBER[ms|s|m|h|d] (plain: ms) up to 3660d, or none" },
	{ { "obj", "put", "k", "ttl", "3661d" },
	  "ttl needs NUMBER[ms|s|m|h|d] (plain: ms) up to 3660d, or none" },
	{ { "obj", "put", "k", "ttl" }, "ttl needs a value" },
	{ { "obj", "put", "k", "pin", "pin" }, "pin is given twice" },
	{ { "obj", "put", "k", "pin", "yes" }, "unexpected \"yes\"" },
	{ { "obj", "pin" }, "missing KEY, try \"dsctl obj help\" (obj pin KEY ...)" },
	{ { "obj", "unpin" }, "missing KEY, try \"dsctl obj help\" (obj unpin KEY ...)" },
	{ { "obj", "unpin", "" }, "KEY needs 1 to 1024 bytes" },
	{ { "obj", "pin", "k", "ttl", "1s" }, "unexpected \"ttl\"" },
	{ { "obj", "unpin", "k" },
	  "missing master: give master HOST:PORT[,HOST:PORT...] or set DSMEM_MASTERS" },
	{ { "obj", "ttl" }, "missing KEY, try \"dsctl obj help\" (obj ttl KEY ...)" },
	{ { "obj", "ttl", "k" },
	  "missing DURATION, try \"dsctl obj help\" (obj ttl KEY { DURATION | none })" },
	{ { "obj", "ttl", "k", "soon" },
	  "DURATION needs NUMBER[ms|s|m|h|d] (plain: ms) up to 3660d, or none" },
	{ { "obj", "ttl", "k", "-1s" },
	  "DURATION needs NUMBER[ms|s|m|h|d] (plain: ms) up to 3660d, or none" },
	{ { "obj", "ttl", "k", "1s", "2s" }, "unexpected \"2s\"" },
	{ { "obj", "ttl", "k", "none", "master", m },
	  "missing node: give node ID (a local dsmem node) or set DSMEM_NODE" },
	{ { "obj", "bench", "master", m }, 
	  "missing node: give node ID (a local dsmem node) or set DSMEM_NODE" },
	// abbreviated object, command and keywords
	{ { "o", "p", "k", "r", "99" }, "replicas needs a number of DRAM replicas from 0 to 64" },
	{ { "-j", "obj", "bench", "th", "0" }, "threads needs a number of threads from 1 to 64" },
	// master
	{ { "master" }, "missing master: give master HOST:PORT[,HOST:PORT...] or set DSMEM_MASTERS" },
	{ { "master", "show", "master", "x" }, "master needs HOST:PORT[,HOST:PORT...]" },
	{ { "master", "show", "node", "1" }, "unexpected \"node\"" },
	{ { "master", "frob" },
	  "unknown command \"frob\" for object \"master\", try \"dsctl master help\"" },
	// segment show pool, segment add pool
	{ { "segment", "show", "pool" },
	  "missing master: give master HOST:PORT[,HOST:PORT...] or set DSMEM_MASTERS" },
	{ { "segment", "show", "pool", "node", "0" }, "node needs a node id from 1 to 65535" },
	{ { "segment", "show", "pool", "seg", "1" }, "unexpected \"seg\"" },
	{ { "seg", "sh", "p", "m", "x:" }, "master needs HOST:PORT[,HOST:PORT...]" },
	{ { "segment", "add", "pool", "traddr", "10.0.0.1" },
	  "missing subnqn, try \"dsctl segment help\"" },
	{ { "segment", "add", "pool", "subnqn", "nqn.x", "size", "1G" },
	  "missing traddr, try \"dsctl segment help\"" },
	{ { "segment", "add", "pool", "traddr", "10.0.0.1", "subnqn", "nqn.x", "size", "1000" },
	  "size needs a number of bytes from 16K, a multiple of 4K (suffixes K, M, G, T)" },
	{ { "segment", "add", "pool", "traddr", "10.0.0.1", "subnqn", "nqn.x", "size", "1G",
	    "trsvcid", "0" }, "trsvcid needs a port from 1 to 65535" },
	{ { "segment", "add", "pool", "traddr", "10.0.0.1", "subnqn", "nqn.x", "size", "1G",
	    "base", "100" }, "base needs a byte offset into the namespace, a multiple of 4K" },
};

std::string joined(const std::vector<std::string> &words)
{
	std::string cmd;
	for (const std::string &w : words)
		cmd += " " + (w.size() > 40 ? w.substr(0, 40) + "..." : w);
	return cmd;
}

void expect_refusal(const std::vector<std::string> &words, const std::string &error)
{
	result res = run_dsctl(words);
	std::string want = "Error: " + error + "\n";

	if (res.status != 1 || res.err != want)
		print_error("dsctl%s: status %d, stderr %s", joined(words).c_str(), res.status,
			    res.err.c_str());
	assert_int_equal(res.status, 1);
	assert_string_equal(res.err.c_str(), want.c_str());
	assert_string_equal(res.out.c_str(), "");
}

void bad_words_refused(void **)
{
	for (const refusal &r : refusals)
		expect_refusal(r.words, r.error);
}

// The environment stands in for master and node, and is checked as they are.
void environment_refused(void **)
{
	setenv("DSMEM_MASTERS", "nohost", 1);
	expect_refusal({ "obj", "stat", "k" }, "DSMEM_MASTERS needs HOST:PORT[,HOST:PORT...]");
	expect_refusal({ "master", "show" }, "DSMEM_MASTERS needs HOST:PORT[,HOST:PORT...]");
	setenv("DSMEM_MASTERS", m.c_str(), 1);
	expect_refusal({ "obj", "stat", "k" },
		       "missing node: give node ID (a local dsmem node) or set DSMEM_NODE");
	setenv("DSMEM_NODE", "x", 1);
	expect_refusal({ "obj", "stat", "k" }, "DSMEM_NODE needs a node id from 1 to 65535");
	setenv("DSMEM_NODE", "1", 1);
	// a given word wins over the environment
	expect_refusal({ "obj", "stat", "k", "node", "0" }, "node needs a node id from 1 to 65535");
	expect_refusal({ "obj", "stat", "k", "master", "a" }, "master needs HOST:PORT[,HOST:PORT...]");
	// with both, an empty input is refused before the store is asked
	std::string empty = write_file("empty", "");
	expect_refusal({ "obj", "put", "k", "file", empty },
		       "cannot put an empty object: " + empty + " has no bytes");
	unsetenv("DSMEM_MASTERS");
	unsetenv("DSMEM_NODE");
}

void help_is_usage(void **)
{
	result res = run_dsctl({ "obj", "help" });
	assert_int_equal(res.status, 0);
	assert_true(res.out.rfind("Usage: dsctl obj [{ list | show } [prefix P]]\n", 0) == 0);
	assert_true(res.out.find("dsctl obj bench [size SIZE]") != std::string::npos);
	assert_true(res.out.find("[local] [pin] [ttl DURATION]") != std::string::npos);
	assert_true(res.out.find("dsctl obj ttl KEY { DURATION | none }") != std::string::npos);
	assert_string_equal(res.err.c_str(), "");

	res = run_dsctl({ "master", "help" });
	assert_int_equal(res.status, 0);
	assert_string_equal(res.out.c_str(),
			    "Usage: dsctl master [{ show | list } [master HOST:PORT[,HOST:PORT...]]]\n"
			    "       dsctl master drain segment ID [deadline SECONDS] [master HOST:PORT[,...]]\n"
			    "       dsctl master monitor [count N] [time SECONDS] [master HOST:PORT[,...]]\n"
			    "where  master defaults to $DSMEM_MASTERS\n");

	res = run_dsctl({ "segment", "help" });
	assert_int_equal(res.status, 0);
	assert_true(res.out.find("dsctl segment show pool [master") != std::string::npos);

	res = run_dsctl({ "help" });
	assert_int_equal(res.status, 0);
	assert_true(res.out.find("obj | master") != std::string::npos);
}

// ---- the words, in this process ----------------------------------------------

void masters_words(void **)
{
	for (const char *ok : { "h:1", "127.0.0.1:7700", "a:1,b:2", "[::1]:7700",
				"[fe80::1]:1,host.example:65535" })
		assert_true(dsctl::valid_masters(ok));
	for (const char *bad : { "", "h", "h:", ":1", "h:0", "h:65536", "h:1,", ",h:1", "::1:7",
				 "[::1]", "[::1]7700", "[]:1", "h:1x", "h:+1", "a b:1" })
		assert_false(dsctl::valid_masters(bad));
}

void small_words(void **)
{
	uint32_t f = 99, r = 0, w = 0;
	assert_true(dsctl::parse_flush("e", f));
	assert_int_equal(f, DS_STORE_FLUSH_EAGER);
	assert_true(dsctl::parse_flush("lazy", f));
	assert_int_equal(f, DS_STORE_FLUSH_LAZY);
	assert_true(dsctl::parse_flush("no", f));
	assert_int_equal(f, DS_STORE_FLUSH_NONE);
	assert_false(dsctl::parse_flush("eagerly", f));
	assert_false(dsctl::parse_flush("", f));
	assert_string_equal(dsctl::flush_name(2).c_str(), "eager");
	assert_string_equal(dsctl::flush_name(7).c_str(), "unknown(7)");

	assert_true(dsctl::parse_mix("100:0", r, w));
	assert_int_equal(r, 100);
	assert_int_equal(w, 0);
	assert_true(dsctl::parse_mix("3:1", r, w));
	assert_int_equal(r, 3);
	assert_int_equal(w, 1);
	for (const char *bad : { "0:0", "50", ":50", "50:", "a:b", "1:2:3", "100001:1", "0x1:1" })
		assert_false(dsctl::parse_mix(bad, r, w));

	std::string err;
	assert_true(dsctl::check_key("k", err));
	assert_true(dsctl::check_key(std::string(1024, 'x'), err));
	assert_false(dsctl::check_key("", err));
	assert_string_equal(err.c_str(), "KEY needs 1 to 1024 bytes");

	// UTF-8 stays, other bytes become \xHH
	assert_string_equal(dsctl::key_string("plain/key 1").c_str(), "plain/key 1");
	assert_string_equal(dsctl::key_string("gr\xc3\xbc\xc3\x9f").c_str(), "gr\xc3\xbc\xc3\x9f");
	assert_string_equal(dsctl::key_string("a\xff" "b").c_str(), "a\\xffb");
	assert_string_equal(dsctl::key_string("\xc0\xaf").c_str(), "\\xc0\\xaf");	// overlong
	assert_string_equal(dsctl::key_string("\xed\xa0\x80").c_str(), "\\xed\\xa0\\x80");
	assert_string_equal(dsctl::key_string("\xe2\x82").c_str(), "\\xe2\\x82");	// cut short
}

dsctl::args words(std::vector<std::string> w)
{
	return dsctl::args(std::move(w));
}

void put_words(void **)
{
	unsetenv("DSMEM_MASTERS");
	unsetenv("DSMEM_NODE");
	dsctl::put_args p;
	std::string err;
	auto a = words({ "my/key", "f", "-", "rep", "3", "nv", "1", "fl", "lazy", "l", "m", m,
			 "no", "7" });
	assert_true(dsctl::parse_put(a, p, err));
	assert_string_equal(p.key.c_str(), "my/key");
	assert_string_equal(p.file.c_str(), "");
	assert_int_equal(p.config.dram_replicas, 3);
	assert_int_equal(p.config.nvmeof_replicas, 1);
	assert_int_equal(p.config.flush, DS_STORE_FLUSH_LAZY);
	assert_int_equal(p.config.prefer_local, 1);
	assert_string_equal(p.target.masters.c_str(), m.c_str());
	assert_int_equal(p.target.node, 7);

	// defaults: one DRAM replica, no flush, from the environment
	setenv("DSMEM_MASTERS", "a:1,b:2", 1);
	setenv("DSMEM_NODE", "0x10", 1);
	dsctl::put_args q;
	auto b = words({ "k", "file", "/tmp/x" });
	assert_true(dsctl::parse_put(b, q, err));
	assert_string_equal(q.file.c_str(), "/tmp/x");
	assert_int_equal(q.config.dram_replicas, 1);
	assert_int_equal(q.config.nvmeof_replicas, 0);
	assert_int_equal(q.config.flush, DS_STORE_FLUSH_NONE);
	assert_int_equal(q.config.prefer_local, 0);
	assert_string_equal(q.target.masters.c_str(), "a:1,b:2");
	assert_int_equal(q.target.node, 16);

	dsctl::get_args g;
	auto c = words({ "k", "version", "5", "offset", "1K", "length", "4K" });
	assert_true(dsctl::parse_get(c, g, err));
	assert_int_equal(g.min_version, 5);
	assert_int_equal(g.offset, 1024);
	assert_int_equal(g.length, 4096);
	dsctl::get_args g2;
	auto d = words({ "k" });
	assert_true(dsctl::parse_get(d, g2, err));
	assert_int_equal(g2.min_version, -1);
	assert_int_equal(g2.offset, 0);
	assert_true(g2.length == UINT64_MAX);

	dsctl::bench_args bn;
	auto e = words({ "size", "16M", "count", "10", "threads", "4", "mix", "90:10", "time", "0" });
	assert_true(dsctl::parse_bench(e, bn, err));
	assert_int_equal(bn.size, 16u << 20);
	assert_int_equal(bn.count, 10);
	assert_int_equal(bn.threads, 4);
	assert_int_equal(bn.reads, 90);
	assert_int_equal(bn.writes, 10);
	assert_int_equal(bn.replicas, 1);
	assert_int_equal(bn.seconds, 0);

	dsctl::pool_add_args pa;
	auto f = words({ "traddr", "10.99.0.2", "subnqn", "nqn.2026-11.dsmem:nvme1", "size", "1G",
			 "base", "1M" });
	assert_true(dsctl::parse_pool_add(f, pa, err));
	assert_int_equal(pa.trsvcid, 4420);
	assert_int_equal(pa.base, 1u << 20);
	assert_int_equal(pa.size, 1u << 30);
	assert_string_equal(pa.masters.c_str(), "a:1,b:2");
	unsetenv("DSMEM_MASTERS");
	unsetenv("DSMEM_NODE");
}

// ttl's DURATION: ms by default, up to ten years (the master's limit).
void ttl_words(void **)
{
	struct {
		const char *s;
		uint64_t ms;
	} good[] = {
		{ "500ms", 500 }, { "10s", 10000 }, { "5m", 300000 }, { "2h", 7200000 },
		{ "1d", 86400000 }, { "1500", 1500 }, { "0", 0 }, { "none", 0 },
		{ "3660d", DS_STORE_TTL_MAX_MS }, { "316224000000", DS_STORE_TTL_MAX_MS },
	};
	for (const auto &g : good) {
		uint64_t ms = 12345;
		if (!dsctl::parse_ttl(g.s, ms))
			print_error("refused %s\n", g.s);
		assert_true(dsctl::parse_ttl(g.s, ms));
		assert_int_equal(ms, g.ms);
	}
	for (const char *bad : { "", "ms", "s", "d", "1x", "1 s", "-1", "+1", "1.5s", "0x10",
				 "1e3", "3661d", "316224000001", "18446744073709551616", "1ns",
				 "1us", "Nonesuch", "1S", "1sm" }) {
		uint64_t ms = 0;
		if (dsctl::parse_ttl(bad, ms))
			print_error("took %s\n", bad);
		assert_false(dsctl::parse_ttl(bad, ms));
	}
}

void attr_words(void **)
{
	unsetenv("DSMEM_MASTERS");
	unsetenv("DSMEM_NODE");
	std::string err;

	// put's pin and ttl, abbreviated
	dsctl::put_args p;
	auto a = words({ "k", "p", "t", "2h", "m", m, "no", "1" });
	assert_true(dsctl::parse_put(a, p, err));
	assert_true(p.soft_pin);
	assert_int_equal(p.ttl_ms, 7200000);
	dsctl::put_args q;
	auto b = words({ "k", "m", m, "no", "1" });
	assert_true(dsctl::parse_put(b, q, err));
	assert_false(q.soft_pin);
	assert_int_equal(q.ttl_ms, 0);

	dsctl::attr_args pin;
	auto c = words({ "k", "master", m, "node", "2" });
	assert_true(dsctl::parse_attr(c, "pin", pin, err));
	assert_string_equal(pin.key.c_str(), "k");
	assert_int_equal(pin.mask, DS_STORE_ATTR_SOFT_PIN);
	assert_true(pin.soft_pin);
	assert_int_equal(pin.target.node, 2);

	dsctl::attr_args unpin;
	auto d = words({ "k", "m", m, "n", "2" });
	assert_true(dsctl::parse_attr(d, "unpin", unpin, err));
	assert_int_equal(unpin.mask, DS_STORE_ATTR_SOFT_PIN);
	assert_false(unpin.soft_pin);

	dsctl::attr_args ttl;
	auto e = words({ "k", "90s", "m", m, "n", "2" });
	assert_true(dsctl::parse_attr(e, "ttl", ttl, err));
	assert_int_equal(ttl.mask, DS_STORE_ATTR_TTL);
	assert_int_equal(ttl.ttl_ms, 90000);
	dsctl::attr_args none;
	none.ttl_ms = 5;
	auto f = words({ "k", "none", "m", m, "n", "2" });
	assert_true(dsctl::parse_attr(f, "ttl", none, err));
	assert_int_equal(none.mask, DS_STORE_ATTR_TTL);
	assert_int_equal(none.ttl_ms, 0);

	// KEY is taken as it is, even when it looks like a duration
	dsctl::attr_args odd;
	auto g = words({ "10s", "10s", "m", m, "n", "2" });
	assert_true(dsctl::parse_attr(g, "ttl", odd, err));
	assert_string_equal(odd.key.c_str(), "10s");
	assert_int_equal(odd.ttl_ms, 10000);
}

// ---- records -------------------------------------------------------------------

void expect_text(const record &r, const char *text)
{
	std::string got = dsctl::output::text(r);
	if (got != text)
		print_error("text: %s\n", got.c_str());
	assert_string_equal(got.c_str(), text);
}

void expect_json(const record &r, const char *json)
{
	std::string got = r.dump();
	if (got != json)
		print_error("json: %s\n", got.c_str());
	assert_string_equal(got.c_str(), json);
}

void put_records(void **)
{
	ds_store_replicate_config cfg{ 2, 0, DS_STORE_FLUSH_EAGER, 0 };
	ds_store_task_status st{};
	st.state = DS_STORE_COMPLETE;
	st.kind = DS_STORE_TASK_PUT;
	st.dram_replicas = 1;	// one segment only: fewer than asked
	st.flushed = 1;
	st.version = 7;
	st.largest_version = -1;
	st.bytes = 1 << 20;
	record r = dsctl::put_record("a key", cfg, st);
	expect_text(r, "key \"a key\" version 7 size 1M replicas 1 replicas_wanted 2 nvmeof 0 "
		       "nvmeof_wanted 0 flush eager flushed yes");
	expect_json(r, "{\"key\":\"a key\",\"version\":7,\"size\":1048576,\"replicas\":1,"
		       "\"replicas_wanted\":2,\"nvmeof\":0,\"nvmeof_wanted\":0,\"flush\":\"eager\","
		       "\"flushed\":true}");

	// EAGER with the slow tier's disk full: complete, not flushed, and why
	st.flushed = 0;
	st.err = -ENOSPC;
	st.dram_replicas = 2;
	expect_text(dsctl::put_record("k", cfg, st),
		    "key k version 7 size 1M replicas 2 replicas_wanted 2 nvmeof 0 nvmeof_wanted 0 "
		    "flush eager flushed no flush_error \"No space left on device\"");

	st.err = 0;
	st.version = 9;
	cfg.nvmeof_replicas = 1;
	st.nvmeof_replicas = 1;
	expect_text(dsctl::replicate_record("k", cfg, st),
		    "key k version 9 replicas 2 replicas_wanted 2 nvmeof 1 nvmeof_wanted 1 flush eager "
		    "flushed no");

	st.version = 3;
	st.bytes = 100;
	expect_text(dsctl::get_record("k", st, 4096, "/tmp/out"),
		    "key k version 3 offset 4096 bytes 100 file /tmp/out");
	st.version = -1;
	expect_json(dsctl::sync_record("k", st), "{\"key\":\"k\",\"version\":null}");
}

void object_records(void **)
{
	ds_store_object_info o{};
	snprintf(o.key, sizeof(o.key), "bench/1");
	o.version = 42;
	o.size = 64 << 10;
	o.config = { 2, 1, DS_STORE_FLUSH_LAZY, 1 };
	o.dram_replicas = 2;
	o.nvmeof_replicas = 1;
	o.flushed = 0;
	o.flushed_version = 40;
	o.ctime_ns = 1795000000123456789LL;
	record r = dsctl::object_record(o);
	// not pinned, no TTL, an older master's (no atime): text says nothing more
	expect_text(r, "key bench/1 version 42 size 64K replicas 2 replicas_wanted 2 nvmeof 1 "
		       "nvmeof_wanted 1 flush lazy flushed no flushed_version 40 local yes "
		       "ctime 2026-11-18T11:06:40.123456789Z atime -");
	o.flushed_version = 0;
	o.ctime_ns = 0;
	o.key[0] = '\xff';
	expect_json(dsctl::object_record(o),
		    "{\"key\":\"\\\\xffench/1\",\"version\":42,\"size\":65536,\"replicas\":2,"
		    "\"replicas_wanted\":2,\"nvmeof\":1,\"nvmeof_wanted\":1,\"flush\":\"lazy\","
		    "\"flushed\":false,\"flushed_version\":null,\"local\":true,\"ctime\":null,"
		    "\"atime\":null,\"soft_pin\":false,\"expires_ns\":0}");
	// pinned, with a TTL: text names both, JSON has the instant in ns
	o.key[0] = 'b';
	o.ctime_ns = 1795000000123456789LL;
	o.atime_ns = 1795000060000000000LL;
	o.expires_ns = 1795003600123456789LL;
	o.flags = DS_STORE_OBJ_SOFT_PIN;
	r = dsctl::object_record(o);
	expect_text(r, "key bench/1 version 42 size 64K replicas 2 replicas_wanted 2 nvmeof 1 "
		       "nvmeof_wanted 1 flush lazy flushed no flushed_version - local yes "
		       "ctime 2026-11-18T11:06:40.123456789Z atime 2026-11-18T11:07:40.000000000Z "
		       "pinned expires 2026-11-18T12:06:40.123456789Z");
	assert_true(r["soft_pin"] == true);
	assert_true(r["expires_ns"] == 1795003600123456789LL);
	assert_string_equal(r["atime"].get<std::string>().c_str(), "2026-11-18T11:07:40.000000000Z");
	// a TTL without a pin
	o.flags = 0;
	assert_true(dsctl::output::text(dsctl::object_record(o)).find(
			    "000000000Z expires 2026-11-18T12:06:40.123456789Z") != std::string::npos);
	assert_true(dsctl::output::text(dsctl::object_record(o)).find("pinned") == std::string::npos);
	assert_string_equal(dsctl::utc_string(0).c_str(), "1970-01-01T00:00:00.000000000Z");
}

void master_records(void **)
{
	struct ds_store_master_info mi{};
	snprintf(mi.leader, sizeof(mi.leader), "10.99.0.1:7700");
	snprintf(mi.standbys, sizeof(mi.standbys), "10.99.0.2:7700,10.99.0.3:7700");
	snprintf(mi.persistence, sizeof(mi.persistence), "etcd:127.0.0.1:2379");
	snprintf(mi.slow_tier, sizeof(mi.slow_tier), "dir:/var/lib/dsmem/slow");
	mi.term = 3;
	mi.objects = 10;
	mi.versions = 12;
	mi.metadata_bytes = 4096;
	mi.log_records = 25;
	mi.global_version = 57;
	mi.members = 4;
	mi.ops = 1000;
	mi.evictions = 5;
	mi.expiries = 2;
	mi.evicted_bytes = 7 << 20;
	mi.high_watermark_pct = 95;
	mi.low_watermark_pct = 85;
	record r = dsctl::master_record(mi);
	expect_text(r, "leader 10.99.0.1:7700 standbys 10.99.0.2:7700,10.99.0.3:7700 term 3 "
		       "objects 10 versions 12 metadata_bytes 4096 log_records 25 "
		       "persistence etcd:127.0.0.1:2379 slow_tier dir:/var/lib/dsmem/slow "
		       "global_version 57 members 4 ops 1000 evictions 5 expiries 2 "
		       "evicted_bytes 7340032 high_watermark_pct 95 low_watermark_pct 85");
	mi.standbys[0] = '\0';
	mi.slow_tier[0] = '\0';
	// an older master's: no watermarks
	mi.evictions = mi.expiries = mi.evicted_bytes = 0;
	mi.high_watermark_pct = mi.low_watermark_pct = 0;
	expect_json(dsctl::master_record(mi),
		    "{\"leader\":\"10.99.0.1:7700\",\"standbys\":[],\"term\":3,\"objects\":10,"
		    "\"versions\":12,\"metadata_bytes\":4096,\"log_records\":25,"
		    "\"persistence\":\"etcd:127.0.0.1:2379\",\"slow_tier\":null,"
		    "\"global_version\":57,\"members\":4,\"ops\":1000,\"evictions\":0,"
		    "\"expiries\":0,\"evicted_bytes\":0,\"high_watermark_pct\":null,"
		    "\"low_watermark_pct\":null}");
	expect_text(dsctl::master_record(mi),
		    "leader 10.99.0.1:7700 standbys - term 3 objects 10 versions 12 "
		    "metadata_bytes 4096 log_records 25 persistence etcd:127.0.0.1:2379 slow_tier - "
		    "global_version 57 members 4 ops 1000 evictions 0 expiries 0 evicted_bytes 0 "
		    "high_watermark_pct - low_watermark_pct -");
}

void segment_records(void **)
{
	ds_store_segment_info s{};
	s.id = 3;
	s.type = 0;
	s.state = 0;
	s.size = 256 << 20;
	s.used = 64 << 20;
	s.owner = 2;
	s.node_id = 1;
	s.gaddr = 0x1002000000000ULL;
	expect_text(dsctl::pool_segment_record(s),
		    "segment 3 dram state alive size 256M used 64M use 0.25 owner 2 node 1 "
		    "addr 0x1002000000000");

	ds_store_segment_info n{};
	n.id = 4;
	n.type = 1;
	n.state = 2;
	n.size = 1ULL << 30;
	n.used = 0;
	n.trsvcid = 4420;
	n.base = 0x100000;
	snprintf(n.traddr, sizeof(n.traddr), "10.99.0.2");
	snprintf(n.subnqn, sizeof(n.subnqn), "nqn.2026-11.dsmem:nvme1");
	expect_json(dsctl::pool_segment_record(n),
		    "{\"segment\":4,\"type\":\"nvmeof\",\"state\":\"dead\",\"size\":1073741824,"
		    "\"used\":0,\"use\":0.0,\"owner\":null,\"traddr\":\"10.99.0.2\",\"trsvcid\":4420,"
		    "\"subnqn\":\"nqn.2026-11.dsmem:nvme1\",\"base\":\"0x100000\"}");

	dsctl::pool_add_args pa;
	pa.traddr = "10.99.0.2";
	pa.subnqn = "nqn.x";
	pa.size = 1ULL << 30;
	expect_text(dsctl::pool_added_record(pa, 5),
		    "segment 5 nvmeof size 1G traddr 10.99.0.2 trsvcid 4420 subnqn nqn.x base 0x0");

	expect_text(dsctl::drained_record(3, 118), "segment 3 moved 118");
	ds_store_event ev{};
	ev.type = DS_STORE_EV_SEGMENT_DRAINING;
	ev.segment = s;
	ev.segment.state = 1;
	expect_text(dsctl::store_event_record(ev),
		    "[SEGMENT DRAINING] segment 3 dram state draining size 256M used 64M use 0.25 "
		    "owner 2 node 1 addr 0x1002000000000");
	ds_store_event mem{};
	mem.type = DS_STORE_EV_MEMBER_LEFT;
	mem.client_id = 7;
	mem.node_id = 2;
	mem.port = 7471;
	snprintf(mem.addr, sizeof(mem.addr), "10.99.0.2");
	expect_json(dsctl::store_event_record(mem),
		    "{\"event\":\"member_left\",\"client\":7,\"node\":2,\"addr\":\"10.99.0.2\","
		    "\"port\":7471}");
}

void bench_records(void **)
{
	dsctl::latencies l;
	assert_true(l.quantile_us(0.5).is_null());
	for (uint64_t i = 100; i >= 1; i--)
		l.add(i * 1000, 10);
	assert_true(l.quantile_us(0.50) == record(50.0));
	assert_true(l.quantile_us(0.99) == record(99.0));
	assert_true(l.quantile_us(1.0) == record(100.0));
	assert_int_equal(l.bytes, 1000);

	dsctl::bench_args a;
	a.size = 1 << 20;
	a.count = 4;
	a.threads = 2;
	a.reads = 3;
	a.writes = 1;
	a.seconds = 2;
	dsctl::bench_result r;
	for (int i = 0; i < 4; i++)
		r.fill.add(2000000, 1 << 20);		// 2 ms each
	r.fill_ns = 4000000;				// 4 puts in 4 ms
	for (int i = 0; i < 2; i++)
		r.put.add(1500, 1 << 20);
	for (int i = 0; i < 6; i++)
		r.get.add(1000 + 100 * i, 1 << 20);
	r.mixed_ns = 2000000000;
	expect_text(dsctl::bench_record(a, r),
		    "size 1M count 4 threads 2 mix 3:1 replicas 1 time 2s fill_ops 4 "
		    "fill_ops_per_s 1000.0 fill_mb_per_s 1048.58 fill_p50_us 2000.0 fill_p99_us 2000.0 "
		    "put_ops 2 put_ops_per_s 1.0 put_mb_per_s 1.05 put_p50_us 1.5 put_p99_us 1.5 "
		    "get_ops 6 get_ops_per_s 3.0 get_mb_per_s 3.15 get_p50_us 1.2 get_p99_us 1.5 "
		    "errors 0");
	a.seconds = 0;
	dsctl::bench_result none;
	none.errors = 1;
	none.first_error = "put \"k\": No space left on device";
	record j = dsctl::bench_record(a, none);
	assert_true(j["put_ops_per_s"].is_null());
	assert_true(j["fill_p99_us"].is_null());
	assert_true(j["time_ns"] == record(0));
	assert_string_equal(j["first_error"].get<std::string>().c_str(),
			    "put \"k\": No space left on device");
}

}  // namespace

int main(void)
{
	unsetenv("DSMEM_MASTERS");
	unsetenv("DSMEM_NODE");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_words_refused),
		cmocka_unit_test(environment_refused),
		cmocka_unit_test(help_is_usage),
		cmocka_unit_test(masters_words),
		cmocka_unit_test(small_words),
		cmocka_unit_test(put_words),
		cmocka_unit_test(ttl_words),
		cmocka_unit_test(attr_words),
		cmocka_unit_test(put_records),
		cmocka_unit_test(object_records),
		cmocka_unit_test(master_records),
		cmocka_unit_test(segment_records),
		cmocka_unit_test(bench_records),
	};
	return cmocka_run_group_tests(tests, simtest::make_tmp_dir, simtest::remove_tmp_dir);
}
