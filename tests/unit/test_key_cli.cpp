// SPDX-License-Identifier: BSD-2-Clause
// dsctl key and node add's key words: each bad one refused with its own
// message and exit status 1 before any module is asked (these run on the
// host, where none is loaded) -- a key file others can read, a key of the
// wrong size, a node both keyed and insecure, admission words that do not
// fit -- and nothing on stdout.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sim.hpp"	// before cmocka.h, whose fail() macro iostream's would meet

extern "C" {
#include <cmocka.h>
}

#include "sim_test_util.hpp"

using namespace simtest;

namespace {

std::string dir;

// a key file of n bytes with the given mode
std::string key_file(const char *name, size_t n, mode_t mode)
{
	std::string p = dir + "/" + name;
	FILE *f = fopen(p.c_str(), "w");
	for (size_t i = 0; i < n; i++)
		fputc(int(i * 37 + 11), f);
	fclose(f);
	chmod(p.c_str(), mode);
	return p;
}

void refused(const std::vector<std::string> &words, const std::string &error)
{
	result res = dsctl(words);
	std::string want = "Error: " + error + "\n";
	std::string cmd;
	for (const std::string &w : words)
		cmd += " " + w;

	if (res.status != 1 || res.err != want)
		print_error("dsctl%s: status %d, stderr %s", cmd.c_str(), res.status, res.err.c_str());
	assert_int_equal(res.status, 1);
	assert_string_equal(res.err.c_str(), want.c_str());
	assert_string_equal(res.out.c_str(), "");
}

void key_files_are_checked(void **)
{
	std::string open = key_file("open.key", 32, 0644);
	std::string group = key_file("group.key", 32, 0640);
	std::string small = key_file("small.key", 15, 0600);
	std::string big = key_file("big.key", 65, 0600);

	refused({ "key", "add", "name", "c", "file", open },
		open + " is readable by others: chmod 600 it (it holds a key)");
	refused({ "key", "add", "name", "c", "file", group },
		group + " is readable by others: chmod 600 it (it holds a key)");
	refused({ "key", "add", "name", "c", "file", small },
		"a key is 16 to 64 bytes; " + small +
		" has 15 (make one with: head -c 32 /dev/urandom > FILE)");
	refused({ "key", "add", "name", "c", "file", big },
		"a key is 16 to 64 bytes; " + big +
		" has more (make one with: head -c 32 /dev/urandom > FILE)");
	refused({ "key", "add", "name", "c", "file", dir + "/none" },
		"cannot read " + dir + "/none: No such file or directory");
	refused({ "key", "add", "file", small }, "missing name, try \"dsctl key help\"");
	refused({ "key", "add", "name", "c" }, "missing file, try \"dsctl key help\"");
	refused({ "key", "add", "name", "c", "file", big, "replace", "x" }, "unexpected \"x\"");
	refused({ "key", "del" }, "missing name, try \"dsctl key help\"");
	refused({ "key", "show", "secret" }, "unexpected \"secret\"");
}

void a_node_is_keyed_or_insecure(void **)
{
	refused({ "node", "add", "id", "1", "dev", "rxe0", "port", "7471", "key", "c", "insecure" },
		"a node is keyed or insecure, not both");
	refused({ "node", "add", "id", "1", "dev", "rxe0", "port", "7471", "insecure", "yes" },
		"unexpected \"yes\"");
	refused({ "node", "add", "id", "1", "dev", "rxe0", "port", "7471", "key" }, "key needs a value");
}

// admission words: node set's policy, and a peer that is dialled or listens
void admission_words_are_checked(void **)
{
	refused({ "node", "set", "id", "1", "accept", "anyone" },
		"accept needs peers or keyed, not \"anyone\"");
	refused({ "node", "set", "id", "1" },
		"nothing to change: give accept, owner, group or mode");
	refused({ "node", "set", "id", "1", "mode", "0999" },
		"mode needs octal permission bits from 0 to 0777, not \"0999\"");
	refused({ "node", "set", "id", "1", "mode", "1000" },
		"mode needs octal permission bits from 0 to 0777, not \"1000\"");
	refused({ "node", "set", "id", "1", "owner", "no-such-user-here" },
		"owner needs a user name or a uid, not \"no-such-user-here\"");
	refused({ "node", "add", "id", "1", "dev", "rxe0", "port", "7471", "group", "no-such-group" },
		"group needs a group name or a gid, not \"no-such-group\"");
	refused({ "node", "show", "netnsid", "-1" },
		"netnsid needs a number from 0 to 2147483647, not \"-1\"");
	refused({ "node", "del", "id", "1", "netnsid", "2147483648" },
		"netnsid needs a number from 0 to 2147483647, not \"2147483648\"");
	refused({ "peer", "add", "node", "1", "addr", "10.0.0.1", "port", "7471", "listen" },
		"a listen peer connects to this node: it takes no port");
	refused({ "peer", "add", "node", "1", "addr", "10.0.0.1", "listen" },
		"a listen peer is admitted as one node: it needs remote M");
	refused({ "peer", "add", "node", "1", "addr", "10.0.0.1", "remote", "2" },
		"missing port, try \"dsctl peer help\"");
	refused({ "peer", "add", "node", "1", "addr", "10.0.0.1", "port", "1", "remote", "0" },
		"remote needs a node id from 1 to 65535");
}

void help_is_usage(void **)
{
	result res = dsctl({ "key", "help" });
	assert_int_equal(res.status, 0);
	assert_string_equal(res.out.c_str(),
		"Usage: dsctl key [show [name NAME]]\n"
		"       dsctl key add name NAME file FILE [replace]\n"
		"       dsctl key del name NAME\n"
		"FILE holds the key's 16 to 64 bytes (\"-\": standard input), e.g. from\n"
		"       head -c 32 /dev/urandom > FILE; chmod 600 FILE\n");
}

int setup(void **)
{
	char t[] = "/tmp/test_key_cli.XXXXXX";
	if (!mkdtemp(t))
		return -1;
	dir = t;
	return 0;
}

int teardown(void **)
{
	return system(("rm -rf " + dir).c_str()) ? -1 : 0;
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_files_are_checked),
		cmocka_unit_test(a_node_is_keyed_or_insecure),
		cmocka_unit_test(admission_words_are_checked),
		cmocka_unit_test(help_is_usage),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
