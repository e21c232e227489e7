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
