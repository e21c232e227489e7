// SPDX-License-Identifier: BSD-2-Clause
// dsmaster: the pooled object store's master (issue #8).  The command
// line is the one docs/store.md and dsmaster(8) describe; D's scripts and
// tests use it as is.
#include <getopt.h>

#include <dsmem/ds.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "service.hpp"

using dsmem::store::Options;

namespace {

const char usage_text[] =
	"usage: dsmaster --listen HOST:PORT --node ID --addr IP [--port N]\n"
	"                [--data-dir DIR | --etcd ENDPOINTS [--etcd-prefix P] [--etcd-ttl S]]\n"
	"                [--advertise HOST:PORT] [--slow-tier dir:PATH|none]\n"
	"                [--shard-size BYTES] [--max-object-size BYTES]\n"
	"                [--heartbeat-ms N] [--heartbeat-timeout-ms N] [--drain-timeout-ms N]\n"
	"                [--fence-grace-ms N]\n"
	"                [--put-timeout-ms N] [--write-grace-ms N] [--get-lease-ms N]\n"
	"                [--gc-ms N] [--flush-ms N]\n"
	"                [--snapshot-every N] [--evict on|off]\n"
	"                [--high-watermark PCT] [--low-watermark PCT] [-v]\n"
	"                [--tls-ca FILE --tls-cert FILE --tls-key FILE | --insecure]\n"
	"                [--admin NAME]... [--etcd-cacert FILE [--etcd-cert FILE --etcd-key FILE]]\n"
	"                [--metrics-listen HOST:PORT|none]\n"
	"                [--quota-puts N] [--quota-bytes BYTES] [--quota-watches N]\n";

[[noreturn]] void die(const std::string &msg)
{
	fprintf(stderr, "dsmaster: %s\n", msg.c_str());
	exit(2);
}

// A count, with an optional K, M or G (binary) suffix for sizes.
uint64_t number(const char *opt, const char *s, bool size_suffix)
{
	char *end = nullptr;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		die(std::string("--") + opt + " needs a number, not '" + s + "'");
	uint64_t mul = 1;
	if (size_suffix && *end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ULL << 10; break;
		case 'm': case 'M': mul = 1ULL << 20; break;
		case 'g': case 'G': mul = 1ULL << 30; break;
		default: die(std::string("--") + opt + ": unknown suffix in '" + s + "'");
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (*end)
		die(std::string("--") + opt + " needs a number, not '" + s + "'");
	return v * mul;
}

}  // namespace

int main(int argc, char **argv)
{
	enum {
		o_listen = 256, o_node, o_addr, o_port, o_data_dir, o_etcd, o_etcd_prefix, o_etcd_ttl,
		o_advertise, o_slow_tier, o_shard, o_max_obj, o_hb, o_hb_timeout, o_put_timeout,
		o_lease, o_gc, o_flush, o_snapshot, o_help, o_tls_ca, o_tls_cert, o_tls_key, o_insecure,
		o_admin, o_etcd_ca, o_etcd_cert, o_etcd_key, o_evict, o_high_wm, o_low_wm,
		o_metrics, o_drain_timeout, o_fence_grace, o_write_grace,
		o_quota_puts, o_quota_bytes, o_quota_watches,
	};
	static const struct option longopts[] = {
		{ "listen", required_argument, nullptr, o_listen },
		{ "node", required_argument, nullptr, o_node },
		{ "addr", required_argument, nullptr, o_addr },
		{ "port", required_argument, nullptr, o_port },
		{ "data-dir", required_argument, nullptr, o_data_dir },
		{ "etcd", required_argument, nullptr, o_etcd },
		{ "etcd-prefix", required_argument, nullptr, o_etcd_prefix },
		{ "etcd-ttl", required_argument, nullptr, o_etcd_ttl },
		{ "advertise", required_argument, nullptr, o_advertise },
		{ "slow-tier", required_argument, nullptr, o_slow_tier },
		{ "shard-size", required_argument, nullptr, o_shard },
		{ "max-object-size", required_argument, nullptr, o_max_obj },
		{ "quota-puts", required_argument, nullptr, o_quota_puts },
		{ "quota-bytes", required_argument, nullptr, o_quota_bytes },
		{ "quota-watches", required_argument, nullptr, o_quota_watches },
		{ "heartbeat-ms", required_argument, nullptr, o_hb },
		{ "heartbeat-timeout-ms", required_argument, nullptr, o_hb_timeout },
		{ "drain-timeout-ms", required_argument, nullptr, o_drain_timeout },
		{ "fence-grace-ms", required_argument, nullptr, o_fence_grace },
		{ "write-grace-ms", required_argument, nullptr, o_write_grace },
		{ "put-timeout-ms", required_argument, nullptr, o_put_timeout },
		{ "get-lease-ms", required_argument, nullptr, o_lease },
		{ "gc-ms", required_argument, nullptr, o_gc },
		{ "flush-ms", required_argument, nullptr, o_flush },
		{ "snapshot-every", required_argument, nullptr, o_snapshot },
		{ "tls-ca", required_argument, nullptr, o_tls_ca },
		{ "tls-cert", required_argument, nullptr, o_tls_cert },
		{ "tls-key", required_argument, nullptr, o_tls_key },
		{ "insecure", no_argument, nullptr, o_insecure },
		{ "admin", required_argument, nullptr, o_admin },
		{ "etcd-cacert", required_argument, nullptr, o_etcd_ca },
		{ "etcd-cert", required_argument, nullptr, o_etcd_cert },
		{ "etcd-key", required_argument, nullptr, o_etcd_key },
		{ "evict", required_argument, nullptr, o_evict },
		{ "high-watermark", required_argument, nullptr, o_high_wm },
		{ "low-watermark", required_argument, nullptr, o_low_wm },
		{ "metrics-listen", required_argument, nullptr, o_metrics },
		{ "verbose", no_argument, nullptr, 'v' },
		{ "help", no_argument, nullptr, o_help },
		{ nullptr, 0, nullptr, 0 },
	};
	Options o;
	bool data_dir_given = false, listen_given = false, tls_given = false, admin_given = false;
	int c;

	while ((c = getopt_long(argc, argv, "vh", longopts, nullptr)) != -1) {
		switch (c) {
		case o_listen: o.listen = optarg; listen_given = true; break;
		case o_node: o.node = static_cast<uint32_t>(number("node", optarg, false)); break;
		case o_addr: o.addr = optarg; break;
		case o_port: o.port = static_cast<uint32_t>(number("port", optarg, false)); break;
		case o_data_dir: o.data_dir = optarg; data_dir_given = true; break;
		case o_etcd: o.etcd = optarg; break;
		case o_etcd_prefix: o.etcd_prefix = optarg; break;
		case o_etcd_ttl: o.etcd_ttl_s = static_cast<int64_t>(number("etcd-ttl", optarg, false)); break;
		case o_advertise: o.advertise = optarg; break;
		case o_slow_tier: o.slow_tier = optarg; break;
		case o_shard: o.limits.shard_size = number("shard-size", optarg, true); break;
		case o_max_obj: o.limits.max_object_size = number("max-object-size", optarg, true); break;
		case o_quota_puts:
			o.limits.identity_pending_puts =
				static_cast<uint32_t>(std::min<uint64_t>(number("quota-puts", optarg, false), UINT32_MAX));
			break;
		case o_quota_bytes: o.limits.identity_pending_bytes = number("quota-bytes", optarg, true); break;
		case o_quota_watches:
			o.watch_quota =
				static_cast<uint32_t>(std::min<uint64_t>(number("quota-watches", optarg, false), UINT32_MAX));
			break;
		case o_hb: o.heartbeat_ms = number("heartbeat-ms", optarg, false); break;
		case o_hb_timeout: o.heartbeat_timeout_ms = number("heartbeat-timeout-ms", optarg, false); break;
		case o_drain_timeout: o.drain_timeout_ms = number("drain-timeout-ms", optarg, false); break;
		case o_fence_grace: o.fence_grace_ms = number("fence-grace-ms", optarg, false); break;
		case o_put_timeout:
			o.limits.put_timeout_ns = static_cast<int64_t>(number("put-timeout-ms", optarg, false)) * 1000000;
			break;
		case o_write_grace:
			o.limits.write_grace_ns = static_cast<int64_t>(number("write-grace-ms", optarg, false)) * 1000000;
			break;
		case o_lease:
			o.limits.get_lease_ns = static_cast<int64_t>(number("get-lease-ms", optarg, false)) * 1000000;
			break;
		case o_gc: o.gc_ms = number("gc-ms", optarg, false); break;
		case o_flush: o.flush_ms = number("flush-ms", optarg, false); break;
		case o_snapshot: o.snapshot_every = number("snapshot-every", optarg, false); break;
		case o_tls_ca: o.tls.ca = optarg; tls_given = true; break;
		case o_tls_cert: o.tls.cert = optarg; tls_given = true; break;
		case o_tls_key: o.tls.key = optarg; tls_given = true; break;
		case o_insecure: o.tls.insecure = true; break;
		case o_admin:
			if (!admin_given)
				o.admins.clear();
			admin_given = true;
			if (!*optarg)
				die("--admin needs a certificate common name");
			o.admins.insert(optarg);
			break;
		case o_etcd_ca: o.etcd_tls.ca = optarg; break;
		case o_etcd_cert: o.etcd_tls.cert = optarg; break;
		case o_etcd_key: o.etcd_tls.key = optarg; break;
		case o_evict:
			if (!strcmp(optarg, "on"))
				o.evict = true;
			else if (!strcmp(optarg, "off"))
				o.evict = false;
			else
				die(std::string("--evict is on or off, not '") + optarg + "'");
			break;
		case o_high_wm:
			o.high_watermark_pct = static_cast<uint32_t>(number("high-watermark", optarg, false));
			break;
		case o_low_wm:
			o.low_watermark_pct = static_cast<uint32_t>(number("low-watermark", optarg, false));
			break;
		case o_metrics: {
			std::string host;
			int mport;
			o.metrics_listen = optarg;
			if (o.metrics_listen != "none" &&
			    !dsmem::store::parse_host_port(o.metrics_listen, &host, &mport))
				die(std::string("--metrics-listen is HOST:PORT (PORT 0 to 65535; [V6ADDR]:PORT) "
						"or none, not '") + optarg + "'");
			break;
		}
		case 'v': o.verbose = true; break;
		case 'h':
		case o_help: fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (optind < argc)
		die(std::string("unexpected argument '") + argv[optind] + "'\n" + usage_text);
	if (!listen_given)
		die("--listen HOST:PORT is needed");
	if (!o.node)
		die("--node ID (the master's dsmem node, 1 or more) is needed");
	if (o.addr.empty())
		die("--addr IP (the RDMA address of the master's node) is needed");
	if (!o.etcd.empty() && data_dir_given)
		die("--data-dir and --etcd exclude each other (with etcd the metadata lives there)");
	if (o.etcd_ttl_s < 1)
		die("--etcd-ttl needs 1 second or more");
	if (o.limits.shard_size < dsmem::store::kAllocUnit || o.limits.shard_size % dsmem::store::kAllocUnit)
		die("--shard-size must be a multiple of 16 KiB");
	if (!o.limits.max_object_size)
		die("--max-object-size must be 1 byte or more");
	if (o.heartbeat_timeout_ms <= o.heartbeat_ms)
		die("--heartbeat-timeout-ms must exceed --heartbeat-ms");
	if (!o.drain_timeout_ms)
		die("--drain-timeout-ms must be 1 ms or more");
	if (!o.snapshot_every)
		die("--snapshot-every must be 1 or more");
	if (o.high_watermark_pct < 1 || o.high_watermark_pct > 100)
		die("--high-watermark is a percentage of a tier, 1 to 100 (100: evict only "
		    "when a put finds no room)");
	if (o.low_watermark_pct < 1 || o.low_watermark_pct >= o.high_watermark_pct)
		die("--low-watermark must be 1 or more and below --high-watermark (" +
		    std::to_string(o.high_watermark_pct) + ")");
	if (!o.evict)
		fprintf(stderr, "dsmaster: --evict off: a full pool fails puts with ENOSPC\n");
	if (o.port > 65535)
		die("--port must be 1 to 65535");
	if (o.tls.insecure && tls_given)
		die("--insecure and --tls-* exclude each other");
	if (o.tls.insecure && !dsmem::store::loopback_only(o.listen))
		die("--insecure listens on loopback only (127.0.0.1:PORT or [::1]:PORT), not on " + o.listen);
	if (!o.etcd_tls.ca.empty() && o.etcd_tls.cert.empty() != o.etcd_tls.key.empty())
		die("--etcd-cert and --etcd-key go together");
	if (o.etcd_tls.ca.empty() && !(o.etcd_tls.cert.empty() && o.etcd_tls.key.empty()))
		die("--etcd-cert and --etcd-key need --etcd-cacert (etcd over TLS)");
	// Loud, not refused: a test bed or a single host may want it, but
	// etcd holds everything the leader knows and decides who leads.
	if (!o.etcd.empty() && o.etcd_tls.ca.empty())
		fprintf(stderr, "dsmaster: INSECURE: --etcd %s without --etcd-cacert: plaintext etcd, "
			"no one proves who they are.  Whoever reaches it reads every object's name "
			"and placement, and can take the leader key or rewrite the metadata log "
			"(objects lost, or pointed at other memory).  Give --etcd-cacert, "
			"--etcd-cert and --etcd-key, and run etcd with --client-cert-auth "
			"(docs/store.md)\n", o.etcd.c_str());
	if (!o.etcd_tls.ca.empty()) {
		if (o.etcd.empty())
			die("--etcd-cacert is for --etcd");
		std::shared_ptr<grpc::ChannelCredentials> creds;
		std::string err;
		if (dsmem::store::channel_credentials(o.etcd_tls, &creds, &err))
			die("etcd TLS: " + err);
	}

	// the node's port, and a word now if the data mover will not work
	struct ds_ctx *ctx = nullptr;
	int ret = ds_ctx_open(&ctx);
	struct ds_node_info ni = {};
	if (!ret) {
		ret = ds_node_get(ctx, o.node, &ni);
		if (ret)
			fprintf(stderr, "dsmaster: dsmem node %u: %s %s\n", o.node, strerror(-ret),
				ds_ctx_errmsg(ctx));
		// someone else's: what it is was not told, and it is not ours
		if (!ret && (ni.flags & DS_NODE_F_NOT_YOURS)) {
			fprintf(stderr, "dsmaster: dsmem node %u: its owner, group and mode do not "
					"let this user use it\n", o.node);
			ret = -EACCES;
		}
		ds_ctx_close(ctx);
	} else {
		fprintf(stderr, "dsmaster: dsmem is not available (%s)\n", strerror(-ret));
	}
	if (ret) {
		if (!o.port)
			die("--port not given and node " + std::to_string(o.node) +
			    " cannot be asked for it; add the node (dsctl node add) or give --port");
		fprintf(stderr, "dsmaster: without node %u the control plane runs, but data moves "
				"(re-replication, flush, drain) fail until it exists\n", o.node);
	} else if (!o.port) {
		o.port = ni.port;
	}

	if (o.advertise.empty()) {
		o.advertise = o.listen;
		size_t colon = o.listen.rfind(':');
		std::string host = colon == std::string::npos ? "" : o.listen.substr(0, colon);
		if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::")
			o.advertise = o.addr + o.listen.substr(colon == std::string::npos ? o.listen.size() : colon);
	}
	return dsmem::store::run_master(o);
}
