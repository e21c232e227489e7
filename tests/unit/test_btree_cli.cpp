// SPDX-License-Identifier: BSD-2-Clause
// dsctl btree's argument checks: each bad word is refused with its own
// message and exit status 1, before any module is asked (these run on the
// host, where none is loaded).
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <string>
#include <vector>

#include "sim.hpp"	// before cmocka.h, whose fail() macro iostream's would meet

extern "C" {
#include <cmocka.h>
}

#include "sim_test_util.hpp"

using namespace simtest;

namespace {

const std::string tree = "0x2001000000000";

// n segment addresses: group after group of r, the members of a group
// on memory nodes 1 .. r, segment g + 1 of each for group g
std::string segs(int n, int r)
{
	std::string s;
	for (int i = 0; i < n; i++) {
		char a[40];
		snprintf(a, sizeof(a), "%s0x%x%03x000000000", i ? "," : "", i % r + 1, i / r + 1);
		s += a;
	}
	return s;
}

struct refusal {
	std::vector<std::string> words;
	const char *error;
};

const refusal refusals[] = {
	{ { "create", "node", "1", "segs", "xyz" },
	  "segs needs segment addresses in hexadecimal, separated by commas" },
	{ { "create", "node", "1", "segs", tree, "node-size", "3000" },
	  "node-size needs a power of two from 256 to 4096" },
	{ { "create", "node", "1", "segs", tree, "layout", "other" },
	  "layout needs \"general\" or \"seed\"" },
	{ { "create", "node", "1", "segs", tree, "value-size", "5000" },
	  "value-size needs a number of bytes from 8 (inline) to 4096" },
	{ { "get", "node", "1", "tree", "zz", "key", "1" },
	  "tree needs the tree's address in hexadecimal, such as 0x2001000000000" },
	{ { "get", "node", "1", "tree", tree, "key", "hex:0g" },
	  "key hex:... needs pairs of hexadecimal digits" },
	{ { "put", "node", "1", "tree", tree, "key", "hex:", "value", "1" }, "key needs 1 to 255 bytes" },
	{ { "scan", "node", "1", "tree", tree, "start", std::string(256, 'k') },
	  "start needs 1 to 255 bytes" },
	{ { "create", "node", "1", "segs", tree, "key-max", "256" },
	  "key-max needs a number from 1 to 255" },
	{ { "create", "node", "1", "segs", tree, "key-max", "64", "node-size", "256" },
	  "node-size 256 holds fewer than four keys of 64 bytes: it needs 512 at least" },
	{ { "scan", "node", "1", "tree", tree, "limit", "0" }, "limit needs a number from 1 to 65536" },
	{ { "load", "node", "1", "tree", tree, "count", "0" },
	  "count needs a number of keys from 1 to 4294967296" },
	{ { "load", "node", "1", "tree", tree, "count", "10", "order", "up" },
	  "order needs \"sorted\" or \"random\"" },
	{ { "bench", "node", "1", "tree", tree, "workload", "g" },
	  "workload needs a YCSB workload: a, b, c, d, e or f" },
	{ { "bench", "node", "1", "tree", tree, "workload", "c", "dist", "uniform", "theta", "0.5" },
	  "theta is for dist zipf only" },
	{ { "bench", "node", "1,1", "tree", tree, "workload", "c" },
	  "node 1 is given twice: each compute node needs a node id of its own" },
	{ { "bench", "node", "1", "tree", tree, "workload", "c", "ops", "10", "time", "1" },
	  "give ops or time, not both" },
	{ { "bench", "node", "1", "tree", tree, "workload", "c", "load", "maybe" },
	  "load needs \"yes\" or \"no\"" },
	{ { "create", "node", "1", "segs", tree, "replicas", "0" },
	  "replicas needs a number from 1 to 3" },
	{ { "create", "node", "1", "segs", tree, "replicas", "4" },
	  "replicas needs a number from 1 to 3" },
	{ { "create", "node", "1", "segs", tree + ",0x3001000000000,0x4001000000000", "replicas",
	    "2" },
	  "replicas 2 needs the segments in groups of 2: segs gives 3" },
	{ { "create", "node", "1", "segs", tree + ",0x3001000000000", "replicas", "3" },
	  "replicas 3 needs the segments in groups of 3: segs gives 2" },
	{ { "create", "node", "1", "segs", segs(17, 1) }, "segs takes at most 16 segments" },
	{ { "create", "node", "1", "segs", segs(34, 2), "replicas", "2" },
	  "segs takes at most 16 groups of 2 segments" },
	// the second group's two members on one memory node (node 2)
	{ { "create", "node", "1", "segs",
	    tree + ",0x3001000000000,0x2002000000000,0x2003000000000", "replicas", "2" },
	  "group 1 has two segments on memory node 2: each replica needs a memory node of its own" },
	{ { "create", "node", "1", "segs", tree + ",0x3001000000000", "replicas", "2", "layout",
	    "seed" },
	  "replicas is for layout general only" },
	{ { "members", "node", "1", "tree", "zz" },
	  "tree needs the tree's address in hexadecimal, such as 0x2001000000000" },
	{ { "verify", "node", "1" }, "missing tree, try \"dsctl btree help\"" },
	{ { "spare", "node", "1", "tree", tree }, "missing segs, try \"dsctl btree help\"" },
	{ { "spare", "node", "1", "tree", tree, "segs", "0x3001000000000,spare" },
	  "segs needs segment addresses in hexadecimal, separated by commas" },
	{ { "bench", "node", "1", "tree", tree, "workload", "a", "tolerate", "often" },
	  "tolerate needs \"yes\" or \"no\"" },
	{ { "bench", "node", "1", "tree", tree, "workload", "c", "verify", "yes" },
	  "verify is for workloads that update: a, b or f" },
	{ { "bench", "node", "1", "tree", tree, "workload", "d", "verify", "yes" },
	  "verify is for workloads that update: a, b or f" },
	{ { "bench", "node", "1,2", "tree", tree, "workload", "a", "threads", "4", "keys", "7",
	    "verify", "yes" },
	  "verify gives each thread keys of its own: keys needs 8 at least (the threads of all "
	  "compute nodes)" },
};

void bad_words_refused(void **)
{
	for (const refusal &r : refusals) {
		std::vector<std::string> w = { "btree" };
		w.insert(w.end(), r.words.begin(), r.words.end());
		result res = dsctl(w);
		std::string want = std::string("Error: ") + r.error + "\n";

		if (res.status != 1 || res.err != want)
			print_error("btree %s: status %d, stderr %s", r.words[0].c_str(),
				    res.status, res.err.c_str());
		assert_int_equal(res.status, 1);
		assert_string_equal(res.err.c_str(), want.c_str());
		assert_string_equal(res.out.c_str(), "");
	}
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_words_refused),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
