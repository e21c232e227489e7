// SPDX-License-Identifier: BSD-2-Clause
// dsctl slope's argument checks: each bad word is refused with its own
// message and exit status 1, before any module is asked (these run on the
// host, where none is loaded), and nothing is printed on stdout, not even
// an empty JSON list.
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

struct refusal {
	std::vector<std::string> words;
	const char *error;
};

const refusal refusals[] = {
	{ { "slope", "show", "node", "0" }, "node needs a node id from 1 to 65535" },
	{ { "slope", "show", "node", "x" }, "node needs a node id from 1 to 65535" },
	{ { "slope", "show", "node", "65536" }, "node needs a node id from 1 to 65535" },
	{ { "slope", "show", "node", "-1" }, "node needs a node id from 1 to 65535" },
	{ { "slope", "show", "node" }, "node needs a value" },
	{ { "slope", "show", "node", "1", "node", "2" }, "node is given twice" },
	{ { "slope", "show", "seg", "1" }, "unexpected \"seg\"" },
	{ { "slope", "show", "1" }, "unexpected \"1\"" },
	{ { "slope", "list", "peer", "1" }, "unexpected \"peer\"" },
	{ { "slope", "frob" }, "unknown command \"frob\" for object \"slope\", try \"dsctl slope help\"" },
	{ { "slope", "node", "1" }, "unknown command \"node\" for object \"slope\", try \"dsctl slope help\"" },
	// abbreviated: the object, the command and the keyword
	{ { "sl", "sh", "n", "0" }, "node needs a node id from 1 to 65535" },
	{ { "-j", "slope", "show", "node", "0" }, "node needs a node id from 1 to 65535" },
};

void bad_words_refused(void **)
{
	for (const refusal &r : refusals) {
		result res = dsctl(r.words);
		std::string want = std::string("Error: ") + r.error + "\n";
		std::string cmd;
		for (const std::string &w : r.words)
			cmd += " " + w;

		if (res.status != 1 || res.err != want)
			print_error("dsctl%s: status %d, stderr %s", cmd.c_str(), res.status,
				    res.err.c_str());
		assert_int_equal(res.status, 1);
		assert_string_equal(res.err.c_str(), want.c_str());
		assert_string_equal(res.out.c_str(), "");
	}
}

void help_is_usage(void **)
{
	result res = dsctl({ "slope", "help" });
	assert_int_equal(res.status, 0);
	assert_string_equal(res.out.c_str(), "Usage: dsctl slope [show [node N]]\n");
	assert_string_equal(res.err.c_str(), "");
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_words_refused),
		cmocka_unit_test(help_is_usage),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
