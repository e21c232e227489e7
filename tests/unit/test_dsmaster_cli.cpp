// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's option checks, through the built dsmaster: each bad
// combination refused with its own message and exit status 2 before
// anything is opened (these run on the host, where no module is loaded).
// The ones that guard security above all: plaintext only on loopback, and
// etcd's TLS given whole or not at all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

using words = std::vector<std::string>;

// what every run below needs, so that only the words under test are wrong
words base(const words &more)
{
	words w = { "--listen", "127.0.0.1:7700", "--node", "1", "--addr", "10.0.0.1" };
	w.insert(w.end(), more.begin(), more.end());
	return w;
}

void refused(const words &w, const std::string &error)
{
	result res = run_prog(DS_DSMASTER, w);
	std::string want = "dsmaster: " + error + "\n";
	std::string cmd;
	for (const std::string &s : w)
		cmd += " " + s;

	if (res.status != 2 || res.err.compare(0, want.size(), want))
		print_error("dsmaster%s: status %d, stderr %s", cmd.c_str(), res.status, res.err.c_str());
	assert_int_equal(res.status, 2);
	assert_string_equal(res.err.substr(0, want.size()).c_str(), want.c_str());
	assert_string_equal(res.out.c_str(), "");
}

void plaintext_only_on_loopback(void **)
{
	refused({ "--listen", "10.0.0.1:7700", "--node", "1", "--addr", "10.0.0.1", "--insecure" },
		"--insecure listens on loopback only (127.0.0.1:PORT or [::1]:PORT), not on "
		"10.0.0.1:7700");
	refused({ "--listen", "0.0.0.0:7700", "--node", "1", "--addr", "10.0.0.1", "--insecure" },
		"--insecure listens on loopback only (127.0.0.1:PORT or [::1]:PORT), not on "
		"0.0.0.0:7700");
	refused(base({ "--insecure", "--tls-ca", "/etc/ssl/certs/ca-certificates.crt" }),
		"--insecure and --tls-* exclude each other");
}

void etcd_tls_whole_or_not_at_all(void **)
{
	const std::string ca = write_file("ca.crt", "not a certificate\n");

	refused(base({ "--etcd", "127.0.0.1:2379", "--etcd-cacert", ca, "--etcd-cert", ca }),
		"--etcd-cert and --etcd-key go together");
	refused(base({ "--etcd", "127.0.0.1:2379", "--etcd-cacert", ca, "--etcd-key", ca }),
		"--etcd-cert and --etcd-key go together");
	refused(base({ "--etcd", "127.0.0.1:2379", "--etcd-cert", ca, "--etcd-key", ca }),
		"--etcd-cert and --etcd-key need --etcd-cacert (etcd over TLS)");
	refused(base({ "--etcd-cacert", ca }), "--etcd-cacert is for --etcd");
	const std::string none = tmp_path("none.crt");
	refused(base({ "--etcd", "127.0.0.1:2379", "--etcd-cacert", none }),
		"etcd TLS: cannot read the CA certificate " + none + ": No such file or directory");
}

void the_rest(void **)
{
	refused({ "--node", "1", "--addr", "10.0.0.1" }, "--listen HOST:PORT is needed");
	refused({ "--listen", "127.0.0.1:7700", "--addr", "10.0.0.1" },
		"--node ID (the master's dsmem node, 1 or more) is needed");
	refused(base({ "--data-dir", "/tmp", "--etcd", "127.0.0.1:2379" }),
		"--data-dir and --etcd exclude each other (with etcd the metadata lives there)");
	refused(base({ "--etcd", "127.0.0.1:2379", "--etcd-ttl", "0" }),
		"--etcd-ttl needs 1 second or more");
	refused(base({ "stray" }), "unexpected argument 'stray'");
}

void eviction_options(void **)
{
	refused(base({ "--evict", "maybe" }), "--evict is on or off, not 'maybe'");
	refused(base({ "--write-grace-ms", "soon" }), "--write-grace-ms needs a number, not 'soon'");
	refused(base({ "--write-grace-ms", "-5" }), "--write-grace-ms needs a number, not '-5'");
	refused(base({ "--high-watermark", "0" }),
		"--high-watermark is a percentage of a tier, 1 to 100 (100: evict only when a put "
		"finds no room)");
	refused(base({ "--high-watermark", "101" }),
		"--high-watermark is a percentage of a tier, 1 to 100 (100: evict only when a put "
		"finds no room)");
	refused(base({ "--high-watermark", "80", "--low-watermark", "80" }),
		"--low-watermark must be 1 or more and below --high-watermark (80)");
	// the default high watermark (95) is the bound
	refused(base({ "--low-watermark", "96" }),
		"--low-watermark must be 1 or more and below --high-watermark (95)");
	refused(base({ "--low-watermark", "0" }),
		"--low-watermark must be 1 or more and below --high-watermark (95)");
	refused(base({ "--high-watermark", "x" }), "--high-watermark needs a number, not 'x'");
}

void metrics_listen(void **)
{
	const std::string why = "--metrics-listen is HOST:PORT (PORT 0 to 65535; [V6ADDR]:PORT) or none, not '";
	for (const char *bad : { "9470", "127.0.0.1", "127.0.0.1:", ":9470", "127.0.0.1:65536",
				 "127.0.0.1:http", "::1:9470", "[::1:9470", "" })
		refused(base({ "--metrics-listen", bad }), why + bad + "'");
}

// A loopback port this process listens on: "127.0.0.1:PORT", *fd its
// socket, for a master to find taken.
std::string taken_port(int *fd)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {};
	socklen_t len = sizeof(a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(s >= 0);
	assert_int_equal(bind(s, reinterpret_cast<struct sockaddr *>(&a), sizeof(a)), 0);
	assert_int_equal(listen(s, 1), 0);
	assert_int_equal(getsockname(s, reinterpret_cast<struct sockaddr *>(&a), &len), 0);
	*fd = s;
	return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// A metrics port another listener holds: exit status 1 at startup, with
// the address and why (a second master on a host must be given its own).
void metrics_port_taken(void **)
{
	int s;
	const std::string where = taken_port(&s);

	// (timeout: a master that did start would serve for ever)
	result res = run_prog("/usr/bin/timeout",
			      { "30", DS_DSMASTER, "--listen", "127.0.0.1:0", "--node", "1", "--addr",
				"127.0.0.1", "--port", "7001", "--insecure", "--slow-tier", "none",
				"--data-dir", tmp_path("m"), "--metrics-listen", where });
	close(s);
	std::string want = "dsmaster: --metrics-listen " + where + ": Address already in use\n";
	if (res.status != 1 || res.err.find(want) == std::string::npos)
		print_error("status %d, stderr %s", res.status, res.err.c_str());
	assert_int_equal(res.status, 1);
	assert_true(res.err.find(want) != std::string::npos);
}

// Plaintext etcd is allowed, loudly: the line comes at start, before
// anything is reached (here the master then stops on a taken metrics
// port, exit status 1, without having run).  With etcd's TLS, no such
// line.
void plaintext_etcd_is_loud(void **)
{
	int s;
	const std::string where = taken_port(&s);
	const std::string loud = "dsmaster: INSECURE: --etcd 127.0.0.1:1 without --etcd-cacert";
	words w = { "30", DS_DSMASTER, "--listen", "127.0.0.1:0", "--node", "1", "--addr",
		    "127.0.0.1", "--port", "7001", "--insecure", "--slow-tier", "none",
		    "--etcd", "127.0.0.1:1", "--metrics-listen", where };

	result res = run_prog("/usr/bin/timeout", w);
	if (res.status != 1 || res.err.find(loud) == std::string::npos)
		print_error("status %d, stderr %s", res.status, res.err.c_str());
	assert_int_equal(res.status, 1);
	assert_true(res.err.find(loud) != std::string::npos);
	assert_true(res.err.find("rewrite the metadata log") != std::string::npos);

	// etcd over TLS: not a word of it
	const std::string ca = write_file("etcd-ca.crt",
					  "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
	w.insert(w.end(), { "--etcd-cacert", ca });
	res = run_prog("/usr/bin/timeout", w);
	close(s);
	assert_int_equal(res.status, 1);
	assert_true(res.err.find("INSECURE: --etcd") == std::string::npos);
}

}  // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plaintext_only_on_loopback),
		cmocka_unit_test(etcd_tls_whole_or_not_at_all),
		cmocka_unit_test(the_rest),
		cmocka_unit_test(eviction_options),
		cmocka_unit_test(metrics_listen),
		cmocka_unit_test(metrics_port_taken),
		cmocka_unit_test(plaintext_etcd_is_loud),
	};
	return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
