// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's Prometheus metrics: counting, the exposition, the HTTP server.
#include "metrics.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <httplib.h>

#include "etcd.hpp"
#include "service.hpp"

namespace dsmem::store {

// ---- counting

void Metrics::observe_rpc(std::string_view method, int code, double seconds)
{
	std::lock_guard<std::mutex> g(m_);
	auto it = rpc_.find(method);
	if (it == rpc_.end())
		it = rpc_.emplace(std::string(method), Rpc{}).first;
	Rpc &r = it->second;
	r.codes[code >= 0 && code < kCodes ? code : 2 /* UNKNOWN */]++;
	size_t b = 0;
	while (b < kBuckets.size() && seconds > kBuckets[b])
		b++;
	if (b < kBuckets.size())
		r.buckets[b]++;
	r.count++;
	r.sum += seconds;
}

std::map<std::string, Metrics::Rpc, std::less<>> Metrics::rpcs() const
{
	std::lock_guard<std::mutex> g(m_);
	return rpc_;
}

const char *status_code_name(int code)
{
	static const char *const names[Metrics::kCodes] = {
		"OK",
		"CANCELLED",
		"UNKNOWN",
		"INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED",
		"NOT_FOUND",
		"ALREADY_EXISTS",
		"PERMISSION_DENIED",
		"RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION",
		"ABORTED",
		"OUT_OF_RANGE",
		"UNIMPLEMENTED",
		"INTERNAL",
		"UNAVAILABLE",
		"DATA_LOSS",
		"UNAUTHENTICATED",
	};
	return code >= 0 && code < Metrics::kCodes ? names[code] : "UNKNOWN";
}

// ---- what the leader knows, under its mutex

void Leader::gauges(LeaderGauges *g)
{
	std::lock_guard<std::mutex> l(mu_);
	*g = LeaderGauges{};
	g->term = st_.term();
	g->versions = st_.version_count();
	g->objects = st_.object_count();
	g->object_bytes = st_.object_bytes();
	if (journal_) {
		g->metadata_bytes = journal_->bytes();
		g->log_records_since_snapshot = journal_->records_since_snapshot();
	}
	g->clients = st_.clients().size();
	g->evictions = st_.evictions();
	g->expiries = st_.expiries();
	g->evicted_bytes = st_.evicted_bytes();
	for (const auto &[id, s] : st_.segments()) {
		v1::SegmentDesc d;
		st_.segment_desc(s, &d);
		// ids, not addresses: no gaddr, no NVMe-oF target
		g->segments.push_back({ d.id(), d.type(), d.state(), d.node_id(), d.size(), d.used() });
	}
	st_.tier_usage(v1::SEGMENT_DRAM, &g->tier_size[0], &g->tier_used[0]);
	st_.tier_usage(v1::SEGMENT_NVMEOF, &g->tier_size[1], &g->tier_used[1]);
	int64_t until = lease_until_ns_.load();
	if (until != INT64_MAX)
		g->lease_left_ns = std::max<int64_t>(0, until - Election::clock_ns());
}

// ---- the exposition

namespace {

constexpr const char *kPrefix = "dsmem_store_";

std::string label_value(const std::string &v)
{
	std::string out;
	for (char c : v) {
		if (c == '\\' || c == '"')
			out += '\\';
		if (c == '\n') {
			out += "\\n";
			continue;
		}
		out += c;
	}
	return out;
}

std::string num(uint64_t v)
{
	return std::to_string(v);
}

std::string num(double v)
{
	char b[40];
	snprintf(b, sizeof(b), "%.9g", v);
	return b;
}

struct Writer {
	std::string out;

	void family(const char *name, const char *type, const char *help)
	{
		out += "# HELP ";
		out += kPrefix;
		out += name;
		out += ' ';
		out += help;
		out += "\n# TYPE ";
		out += kPrefix;
		out += name;
		out += ' ';
		out += type;
		out += '\n';
	}
	// labels: already label="value",...
	void sample(const char *name, const std::string &labels, const std::string &value)
	{
		out += kPrefix;
		out += name;
		if (!labels.empty())
			out += "{" + labels + "}";
		out += ' ';
		out += value;
		out += '\n';
	}
	void one(const char *name, const char *type, const char *help, const std::string &value)
	{
		family(name, type, help);
		sample(name, "", value);
	}
};

const char *tier_name(v1::SegmentType t)
{
	return t == v1::SEGMENT_NVMEOF ? "nvmeof" : "dram";
}

std::string segment_labels(const LeaderGauges::Segment &s)
{
	return "segment=\"" + num(s.id) + "\",type=\"" + tier_name(s.type) + "\",state=\"" +
	       segment_state_name(s.state) + "\",node=\"" + std::to_string(s.node) + "\"";
}

}  // namespace

std::string render_metrics(const Metrics &m, const Options &opts, const LeaderGauges *g)
{
	Writer w;

	w.one("leader", "gauge", "1 if this master leads (serves), else 0.", g ? "1" : "0");
	if (g) {
		w.one("term", "gauge", "The term of leadership this master serves.", num(g->term));
		w.one("objects", "gauge", "Keys with a complete version.", num(g->objects));
		w.one("versions", "gauge", "Versions the metadata holds (pending, superseded included).",
		      num(g->versions));
		w.one("object_bytes", "gauge", "Sum of the sizes of the newest complete versions.",
		      num(g->object_bytes));
		w.one("metadata_bytes", "gauge", "Size of the metadata log and snapshot.",
		      num(g->metadata_bytes));
		w.one("log_records_since_snapshot", "gauge",
		      "Metadata log records appended since the last snapshot.",
		      num(g->log_records_since_snapshot));
		w.one("clients", "gauge", "Registered clients.", num(g->clients));
		if (g->lease_left_ns >= 0)
			w.one("lease_left_seconds", "gauge",
			      "How long the leader's etcd lease holds from now, counted from when it "
			      "sent the last renewal etcd granted.",
			      num(static_cast<double>(g->lease_left_ns) / 1e9));
		w.family("segment_size_bytes", "gauge", "A segment's size.");
		for (const auto &s : g->segments)
			w.sample("segment_size_bytes", segment_labels(s), num(s.size));
		w.family("segment_used_bytes", "gauge", "Bytes allocated in a segment.");
		for (const auto &s : g->segments)
			w.sample("segment_used_bytes", segment_labels(s), num(s.used));
		w.family("tier_size_bytes", "gauge", "Size of a tier's ALIVE segments.");
		w.sample("tier_size_bytes", "tier=\"dram\"", num(g->tier_size[0]));
		w.sample("tier_size_bytes", "tier=\"nvmeof\"", num(g->tier_size[1]));
		w.family("tier_used_bytes", "gauge", "Bytes allocated in a tier's ALIVE segments.");
		w.sample("tier_used_bytes", "tier=\"dram\"", num(g->tier_used[0]));
		w.sample("tier_used_bytes", "tier=\"nvmeof\"", num(g->tier_used[1]));
	}
	w.one("high_watermark_ratio", "gauge",
	      "A tier used above this fraction is evicted in the background (--high-watermark).",
	      num(opts.high_watermark_pct / 100.0));
	w.one("low_watermark_ratio", "gauge",
	      "Background eviction brings a tier down to this fraction (--low-watermark).",
	      num(opts.low_watermark_pct / 100.0));
	w.one("evict_enabled", "gauge", "1 if a full pool evicts (--evict on), else 0.",
	      opts.evict ? "1" : "0");

	if (g) {
		w.one("evictions_total", "counter",
		      "Objects evicted (the store's count: it survives a failover).", num(g->evictions));
		w.one("expiries_total", "counter",
		      "Objects removed at the end of their TTL (survives a failover).", num(g->expiries));
		w.one("evicted_bytes_total", "counter",
		      "Bytes of pool replicas freed by evictions (survives a failover).",
		      num(g->evicted_bytes));
	}
	w.one("puts_total", "counter", "Puts this process committed (PutCommit that succeeded).",
	      num(m.puts.load()));
	w.one("gets_total", "counter", "Gets this process answered.", num(m.gets.load()));
	w.one("dels_total", "counter", "Deletes this process carried out.", num(m.dels.load()));
	w.one("repairs_total", "counter", "Replicas added by re-replication (repair).",
	      num(m.repairs.load()));
	w.one("leader_terms_total", "counter", "Times this process became the leader.",
	      num(m.leader_terms.load()));
	w.one("retried_requests_total", "counter",
	      "PutStart, PutCommit and Del retries of requests already carried out: answered "
	      "again, not acted on twice.",
	      num(m.retries.load()));

	auto rpcs = m.rpcs();
	w.family("rpc_total", "counter", "RPCs answered, by method and gRPC status code.");
	for (const auto &[method, r] : rpcs)
		for (int c = 0; c < Metrics::kCodes; c++)
			if (r.codes[c])
				w.sample("rpc_total",
					 "method=\"" + label_value(method) + "\",code=\"" +
						 status_code_name(c) + "\"",
					 num(r.codes[c]));
	w.family("rpc_duration_seconds", "histogram",
		 "Time to answer an RPC, by method (Watch: the stream's life).");
	for (const auto &[method, r] : rpcs) {
		std::string ml = "method=\"" + label_value(method) + "\"";
		uint64_t cum = 0;
		for (size_t b = 0; b < Metrics::kBuckets.size(); b++) {
			cum += r.buckets[b];
			w.sample("rpc_duration_seconds_bucket",
				 ml + ",le=\"" + num(Metrics::kBuckets[b]) + "\"", num(cum));
		}
		w.sample("rpc_duration_seconds_bucket", ml + ",le=\"+Inf\"", num(r.count));
		w.sample("rpc_duration_seconds_sum", ml, num(r.sum));
		w.sample("rpc_duration_seconds_count", ml, num(r.count));
	}
	return w.out;
}

std::string scrape(MasterService &svc, const Options &opts)
{
	std::shared_ptr<Leader> l = svc.leader();
	if (!l)
		return render_metrics(*svc.metrics(), opts, nullptr);
	LeaderGauges g;
	l->gauges(&g);
	return render_metrics(*svc.metrics(), opts, &g);
}

// ---- HTTP

bool parse_host_port(const std::string &s, std::string *host, int *port)
{
	size_t colon = s.rfind(':');
	if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
		return false;
	std::string h = s.substr(0, colon), p = s.substr(colon + 1);
	if (h.front() == '[') {
		if (h.size() < 3 || h.back() != ']')
			return false;
		h = h.substr(1, h.size() - 2);
	} else if (h.find(':') != std::string::npos) {
		return false;	// a bare IPv6 address: [ADDR]:PORT
	}
	if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
		return false;
	int n = std::stoi(p);
	if (n > 65535)
		return false;
	*host = h;
	*port = n;
	return true;
}

MetricsServer::MetricsServer() = default;

MetricsServer::~MetricsServer()
{
	stop();
}

int MetricsServer::start(const std::string &listen, std::function<std::string()> body,
			 std::string *err)
{
	std::string host;
	int port = 0;
	if (!parse_host_port(listen, &host, &port)) {
		*err = "not HOST:PORT";
		return -EINVAL;
	}
	svr_ = std::make_unique<httplib::Server>();
	// a scrape now and then: two threads are plenty
	svr_->new_task_queue = [] { return new httplib::ThreadPool(2); };
	// httplib's default sets SO_REUSEPORT: a second master on the same
	// port would bind too, and take half of the scrapes
	svr_->set_socket_options([](socket_t sock) {
		int yes = 1;
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
	});
	svr_->set_payload_max_length(1 << 16);
	svr_->Get("/metrics", [body = std::move(body)](const httplib::Request &, httplib::Response &res) {
		res.set_content(body(), "text/plain; version=0.0.4; charset=utf-8");
	});
	svr_->set_error_handler([](const httplib::Request &, httplib::Response &res) {
		if (res.body.empty())
			res.set_content(res.status == 404 ? "not found: the metrics are at /metrics\n"
							  : "HTTP status " + std::to_string(res.status) + "\n",
					"text/plain; charset=utf-8");
	});
	errno = 0;
	if (port)
		port_ = svr_->bind_to_port(host, port) ? port : -1;
	else
		port_ = svr_->bind_to_any_port(host);
	if (port_ < 0) {
		int e = errno ? errno : EADDRNOTAVAIL;
		*err = errno ? strerror(e) : "cannot bind there (an address of this host?)";
		svr_.reset();
		port_ = 0;
		return -e;
	}
	done_ = false;
	thread_ = std::thread([this] {
		svr_->listen_after_bind();
		done_ = true;
	});
	return 0;
}

void MetricsServer::stop()
{
	if (!thread_.joinable())
		return;
	// stop() before the server runs would be lost: wait until it does
	// (or it already ended)
	while (!svr_->is_running() && !done_)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	svr_->stop();
	thread_.join();
	svr_.reset();
}

}  // namespace dsmem::store
