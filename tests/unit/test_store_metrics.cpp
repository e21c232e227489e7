// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's Prometheus metrics (user/tools/dsmaster/metrics.cpp): the
// exposition of a MasterService whose Leader runs over an in-memory log
// (no dsmem module: no data moves here), parsed as a scraper would parse
// it -- HELP and TYPE for every metric, samples `name{labels} value`,
// histogram buckets cumulative up to +Inf = _count -- and its numbers
// moving with puts, gets and deletes; a standby's; and GET /metrics over
// HTTP on loopback with cpp-httplib's client.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>

#include "etcd.hpp"
#include "metrics.hpp"
#include "mover.hpp"
#include "persist.hpp"
#include "service.hpp"
#include "store_leader_fx.hpp"

// cmocka last: its macros do not mix with the C++ headers
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::store;
using namespace dsmem::store::leaderfx;

namespace {

// The metadata log in memory.
class MemLog : public MetaLog {
public:
	int load(std::string *snapshot, std::vector<std::string> *records, std::string *) override
	{
		snapshot->clear();
		records->clear();
		return 0;
	}
	int append(const std::string &, std::string *) override
	{
		n_++;
		return 0;
	}
	int compact(std::string_view, std::string *) override { return 0; }
	uint64_t records_since_snapshot() const override { return n_; }
	uint64_t bytes() const override { return 0; }
	std::string describe() const override { return "memory"; }

private:
	uint64_t n_ = 0;
};

// ---- the exposition, parsed

struct Sample {
	std::string name;
	std::map<std::string, std::string> labels;
	double value = 0;
};

struct Exposition {
	std::map<std::string, std::string> type, help;	// by family
	std::vector<Sample> samples;

	// the sample of name whose labels include these; fails unless one
	const Sample &one(const std::string &name, const std::map<std::string, std::string> &want = {}) const
	{
		const Sample *found = nullptr;
		for (const Sample &s : samples) {
			if (s.name != name)
				continue;
			bool match = true;
			for (const auto &[k, v] : want) {
				auto it = s.labels.find(k);
				match = match && it != s.labels.end() && it->second == v;
			}
			if (!match)
				continue;
			if (found)
				fail_msg("more than one sample %s", name.c_str());
			found = &s;
		}
		if (!found)
			fail_msg("no sample %s", name.c_str());
		return *found;
	}
	double value(const std::string &name, const std::map<std::string, std::string> &want = {}) const
	{
		return one(name, want).value;
	}
	bool has(const std::string &name) const
	{
		for (const Sample &s : samples)
			if (s.name == name)
				return true;
		return false;
	}
};

bool name_char(char c, bool first)
{
	return isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
	       (!first && isdigit(static_cast<unsigned char>(c)));
}

// The family a sample belongs to: a histogram's _bucket, _sum, _count
// are its own.
std::string family_of(const Exposition &e, const std::string &name)
{
	for (const char *suffix : { "_bucket", "_sum", "_count" }) {
		size_t n = strlen(suffix);
		if (name.size() > n && !name.compare(name.size() - n, n, suffix)) {
			std::string base = name.substr(0, name.size() - n);
			auto it = e.type.find(base);
			if (it != e.type.end() && it->second == "histogram")
				return base;
		}
	}
	return name;
}

// Parses text format 0.0.4 strictly (what this exporter writes of it);
// fails the test on anything malformed.
Exposition parse(const std::string &text)
{
	Exposition e;
	std::set<std::string> seen;	// name{labels}, once each
	std::istringstream in(text);
	std::string line;
	int n = 0;

	assert_false(text.empty());
	assert_int_equal(text.back(), '\n');
	while (std::getline(in, line)) {
		n++;
		if (line.empty())
			fail_msg("line %d: empty", n);
		if (line[0] == '#') {
			std::istringstream ls(line);
			std::string hash, kind, name, rest;
			ls >> hash >> kind >> name;
			std::getline(ls, rest);
			if (kind != "HELP" && kind != "TYPE")
				fail_msg("line %d: a comment: %s", n, line.c_str());
			if (name.rfind("dsmem_store_", 0))
				fail_msg("line %d: not dsmem_store_: %s", n, line.c_str());
			if (rest.size() < 2 || rest[0] != ' ')
				fail_msg("line %d: %s without text", n, kind.c_str());
			auto &m = kind == "HELP" ? e.help : e.type;
			if (m.count(name))
				fail_msg("line %d: second %s of %s", n, kind.c_str(), name.c_str());
			m[name] = rest.substr(1);
			if (kind == "TYPE" && !std::set<std::string>{ "gauge", "counter", "histogram" }.count(rest.substr(1)))
				fail_msg("line %d: type %s", n, rest.c_str());
			if (kind == "TYPE" && rest.substr(1) == "counter" &&
			    (name.size() < 6 || name.compare(name.size() - 6, 6, "_total")))
				fail_msg("line %d: a counter not named _total: %s", n, name.c_str());
			continue;
		}
		Sample s;
		size_t i = 0;
		while (i < line.size() && name_char(line[i], i == 0))
			i++;
		if (!i)
			fail_msg("line %d: no metric name: %s", n, line.c_str());
		s.name = line.substr(0, i);
		std::string key = s.name;
		if (i < line.size() && line[i] == '{') {
			i++;
			for (;;) {
				size_t k0 = i;
				while (i < line.size() && name_char(line[i], i == k0))
					i++;
				if (i == k0 || line.compare(i, 2, "=\""))
					fail_msg("line %d: a label: %s", n, line.c_str());
				std::string lname = line.substr(k0, i - k0), lval;
				i += 2;
				while (i < line.size() && line[i] != '"') {
					if (line[i] == '\\' && i + 1 < line.size())
						i++;
					lval += line[i++];
				}
				if (i >= line.size())
					fail_msg("line %d: an unterminated label value", n);
				i++;
				if (s.labels.count(lname))
					fail_msg("line %d: label %s twice", n, lname.c_str());
				s.labels[lname] = lval;
				if (i < line.size() && line[i] == ',') {
					i++;
					continue;
				}
				if (i < line.size() && line[i] == '}') {
					i++;
					break;
				}
				fail_msg("line %d: after a label: %s", n, line.c_str());
			}
			key = line.substr(0, i);
		}
		if (i >= line.size() || line[i] != ' ')
			fail_msg("line %d: no value: %s", n, line.c_str());
		std::string v = line.substr(i + 1);
		char *end = nullptr;
		s.value = strtod(v.c_str(), &end);
		if (v.empty() || *end || std::isnan(s.value))
			fail_msg("line %d: value '%s'", n, v.c_str());
		std::string fam = family_of(e, s.name);
		if (!e.help.count(fam) || !e.type.count(fam))
			fail_msg("line %d: %s without HELP and TYPE before it", n, s.name.c_str());
		if (!seen.insert(key).second)
			fail_msg("line %d: %s twice", n, key.c_str());
		e.samples.push_back(std::move(s));
	}
	// every histogram: per label set, buckets cumulative, +Inf = _count
	for (const auto &[fam, type] : e.type) {
		if (type != "histogram")
			continue;
		std::map<std::string, std::vector<const Sample *>> by;	// method -> buckets
		for (const Sample &s : e.samples)
			if (s.name == fam + "_bucket")
				by[s.labels.at("method")].push_back(&s);
		for (const auto &[method, buckets] : by) {
			double last = 0, le_last = -1;
			for (const Sample *b : buckets) {
				const std::string &le = b->labels.at("le");
				double bound = le == "+Inf" ? INFINITY : strtod(le.c_str(), nullptr);
				if (bound <= le_last)
					fail_msg("%s{method=%s}: le %s not ascending", fam.c_str(), method.c_str(),
						 le.c_str());
				if (b->value < last)
					fail_msg("%s{method=%s}: not cumulative at le %s", fam.c_str(),
						 method.c_str(), le.c_str());
				le_last = bound;
				last = b->value;
			}
			if (buckets.back()->labels.at("le") != "+Inf")
				fail_msg("%s{method=%s}: the last bucket is not +Inf", fam.c_str(), method.c_str());
			assert_true(last == e.value(fam + "_count", { { "method", method } }));
			assert_true(e.value(fam + "_sum", { { "method", method } }) >= 0);
		}
	}
	return e;
}

// ---- a master with a leader

struct Fx {
	Options opts;
	Mover mover{ kNode };
	std::unique_ptr<MasterService> svc;
	std::shared_ptr<Leader> leader;
	uint64_t client = 0, segment = 0;

	explicit Fx(bool lead = true)
	{
		master_options(&opts);
		opts.tls.insecure = true;	// callers are admins, no certificate looked at
		svc = std::make_unique<MasterService>(opts);
		if (!lead)
			return;
		leader = std::make_shared<Leader>(opts, nullptr, &mover);
		leader->set_metrics(svc->metrics());
		leader->set_quiesced([](uint64_t) { return true; });
		std::string err;
		if (leader->start(std::make_unique<MemLog>(), [](const std::string &) {}, &err))
			fail_msg("start: %s", err.c_str());
		svc->set_leader_addr(opts.advertise);
		svc->set_leader(leader);

		grpc::ServerContext ctx;
		v1::RegisterClientRequest rq = client_request();
		v1::RegisterClientResponse ra;
		assert_true(svc->RegisterClient(&ctx, &rq, &ra).ok());
		client = ra.client_id();
		v1::RegisterSegmentRequest sq = segment_request(client);
		v1::RegisterSegmentResponse sa;
		assert_true(svc->RegisterSegment(&ctx, &sq, &sa).ok());
		segment = sa.segment_id();
	}
	~Fx()
	{
		if (leader) {
			svc->set_leader(nullptr);
			leader->stop();
		}
	}

	Exposition scrape_now() { return parse(scrape(*svc, opts)); }

	uint64_t put(const std::string &key, uint64_t size)
	{
		grpc::ServerContext c1, c2;
		v1::PutStartRequest q = put_start_request(client, key, size);
		v1::PutStartResponse a;
		grpc::Status s = svc->PutStart(&c1, &q, &a);
		if (!s.ok())
			fail_msg("put start %s: %s", key.c_str(), s.error_message().c_str());
		v1::PutCommitRequest cq = put_commit_request(client, key, a.version(), size);
		v1::PutCommitResponse ca;
		s = svc->PutCommit(&c2, &cq, &ca);
		if (!s.ok())
			fail_msg("put commit %s: %s", key.c_str(), s.error_message().c_str());
		return a.version();
	}
	grpc::StatusCode get(const std::string &key)
	{
		grpc::ServerContext ctx;
		v1::GetRequest q = get_request(key);
		v1::GetResponse a;
		return svc->Get(&ctx, &q, &a).error_code();
	}
	grpc::StatusCode del(const std::string &key)
	{
		grpc::ServerContext ctx;
		v1::DelRequest q;
		v1::DelResponse a;
		q.set_key(key);
		return svc->Del(&ctx, &q, &a).error_code();
	}
};

std::map<std::string, std::string> seg_labels(const Fx &f)
{
	return { { "segment", std::to_string(f.segment) }, { "type", "dram" }, { "state", "alive" },
		 { "node", std::to_string(kNode) } };
}

// Puts, gets and deletes move the gauges and counters they should.
void test_numbers_move(void **)
{
	Fx f;
	Exposition e0 = f.scrape_now();

	assert_true(e0.value("dsmem_store_leader") == 1);
	assert_true(e0.value("dsmem_store_term") >= 1);
	assert_true(e0.value("dsmem_store_objects") == 0);
	assert_true(e0.value("dsmem_store_object_bytes") == 0);
	assert_true(e0.value("dsmem_store_puts_total") == 0);
	assert_true(e0.value("dsmem_store_clients") == 1);
	assert_true(e0.value("dsmem_store_leader_terms_total") == 1);
	assert_true(e0.value("dsmem_store_retried_requests_total") == 0);
	assert_true(e0.value("dsmem_store_segment_size_bytes", seg_labels(f)) == kSegment);
	assert_true(e0.value("dsmem_store_segment_used_bytes", seg_labels(f)) == 0);
	assert_true(e0.value("dsmem_store_tier_size_bytes", { { "tier", "dram" } }) == kSegment);
	assert_true(e0.value("dsmem_store_tier_used_bytes", { { "tier", "dram" } }) == 0);
	assert_true(e0.value("dsmem_store_tier_size_bytes", { { "tier", "nvmeof" } }) == 0);
	assert_true(e0.value("dsmem_store_rpc_total", { { "method", "RegisterSegment" }, { "code", "OK" } }) == 1);
	assert_true(e0.value("dsmem_store_high_watermark_ratio") == 0.95);
	assert_true(e0.value("dsmem_store_low_watermark_ratio") == 0.85);
	assert_true(e0.value("dsmem_store_evict_enabled") == 1);
	assert_true(e0.value("dsmem_store_rpc_duration_seconds_count", { { "method", "RegisterClient" } }) == 1);

	f.put("m/a", 1000);
	f.put("m/b", 100000);
	f.put("m/c", 3 << 20);
	f.put("m/a", 2000);	// a new version of a
	assert_int_equal(f.get("m/a"), grpc::StatusCode::OK);
	assert_int_equal(f.get("m/b"), grpc::StatusCode::OK);
	assert_int_equal(f.get("m/none"), grpc::StatusCode::NOT_FOUND);
	assert_int_equal(f.del("m/c"), grpc::StatusCode::OK);

	Exposition e1 = f.scrape_now();
	assert_true(e1.value("dsmem_store_objects") == 2);
	assert_true(e1.value("dsmem_store_object_bytes") == 2000 + 100000);
	assert_true(e1.value("dsmem_store_versions") >= 2);
	assert_true(e1.value("dsmem_store_puts_total") == 4);
	assert_true(e1.value("dsmem_store_gets_total") == 2);
	assert_true(e1.value("dsmem_store_dels_total") == 1);
	assert_true(e1.value("dsmem_store_rpc_total", { { "method", "PutCommit" }, { "code", "OK" } }) == 4);
	assert_true(e1.value("dsmem_store_rpc_total", { { "method", "PutStart" }, { "code", "OK" } }) == 4);
	assert_true(e1.value("dsmem_store_rpc_total", { { "method", "Get" }, { "code", "OK" } }) == 2);
	assert_true(e1.value("dsmem_store_rpc_total", { { "method", "Get" }, { "code", "NOT_FOUND" } }) == 1);
	assert_true(e1.value("dsmem_store_rpc_total", { { "method", "Del" }, { "code", "OK" } }) == 1);
	assert_true(e1.value("dsmem_store_rpc_duration_seconds_count", { { "method", "Get" } }) == 3);
	assert_true(e1.value("dsmem_store_rpc_duration_seconds_bucket", { { "method", "Get" }, { "le", "+Inf" } }) == 3);
	assert_true(e1.value("dsmem_store_rpc_duration_seconds_sum", { { "method", "PutCommit" } }) > 0);
	// the pool holds what is still there (the superseded version of a
	// may still be held until the GC: at least the newest ones)
	double used = e1.value("dsmem_store_tier_used_bytes", { { "tier", "dram" } });
	assert_true(used >= 2000 + 100000);
	assert_true(used <= kSegment);
	assert_true(used == e1.value("dsmem_store_segment_used_bytes", seg_labels(f)));
	assert_true(e1.value("dsmem_store_log_records_since_snapshot") >
		    e0.value("dsmem_store_log_records_since_snapshot"));
	// the counters that survive failover are there, not moved
	assert_true(e1.value("dsmem_store_evictions_total") == 0);
	assert_true(e1.value("dsmem_store_expiries_total") == 0);
	assert_true(e1.value("dsmem_store_evicted_bytes_total") == 0);
	assert_true(e1.value("dsmem_store_repairs_total") == 0);

	// no address of the pool's memory
	std::string text = scrape(*f.svc, f.opts);
	char hex[32];
	snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(kGaddr));
	assert_null(strstr(text.c_str(), std::to_string(kGaddr).c_str()));
	assert_null(strcasestr(text.c_str(), hex));
	assert_null(strstr(text.c_str(), "gaddr"));
	assert_null(strstr(text.c_str(), "rkey"));
}

// The leader's lease on leadership, as its renewals extend it: absent for
// a lone master (no etcd, no end), then what is left of the last
// extension, never below 0 once it has run out.
void test_lease_left(void **)
{
	Fx f;

	assert_false(f.scrape_now().has("dsmem_store_lease_left_seconds"));
	f.leader->extend_lease(Election::clock_ns() + 7000000000LL);
	double left = f.scrape_now().value("dsmem_store_lease_left_seconds");
	assert_true(left > 0 && left <= 7);
	assert_string_equal(f.scrape_now().type.at("dsmem_store_lease_left_seconds").c_str(), "gauge");
	f.leader->extend_lease(Election::clock_ns() - 1);
	assert_true(f.scrape_now().value("dsmem_store_lease_left_seconds") == 0);
}

// A standby knows its RPCs (answered "not the leader"), its options and
// that it does not lead; nothing of the state.
void test_standby(void **)
{
	Fx f(false);
	grpc::ServerContext ctx;
	v1::GetRequest q;
	v1::GetResponse a;
	q.set_key("k");
	assert_int_equal(f.svc->Get(&ctx, &q, &a).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

	Exposition e = f.scrape_now();
	assert_true(e.value("dsmem_store_leader") == 0);
	assert_false(e.has("dsmem_store_objects"));
	assert_false(e.has("dsmem_store_tier_used_bytes"));
	assert_false(e.has("dsmem_store_evictions_total"));
	assert_true(e.value("dsmem_store_leader_terms_total") == 0);
	assert_true(e.value("dsmem_store_puts_total") == 0);
	assert_true(e.value("dsmem_store_rpc_total", { { "method", "Get" }, { "code", "FAILED_PRECONDITION" } }) == 1);
	assert_true(e.value("dsmem_store_rpc_duration_seconds_count", { { "method", "Get" } }) == 1);
}

// The counters on their own: codes by name, buckets by bound.
void test_histogram_buckets(void **)
{
	Metrics m;
	m.observe_rpc("X", 0, 0.00005);	// first bucket
	m.observe_rpc("X", 0, 0.0001);	// le is inclusive
	m.observe_rpc("X", 14, 0.3);	// le 1
	m.observe_rpc("X", 99, 60);	// +Inf only; an unknown code is UNKNOWN
	Options o;
	Exposition e = parse(render_metrics(m, o, nullptr));
	assert_true(e.value("dsmem_store_rpc_duration_seconds_bucket", { { "method", "X" }, { "le", "0.0001" } }) == 2);
	assert_true(e.value("dsmem_store_rpc_duration_seconds_bucket", { { "method", "X" }, { "le", "0.25" } }) == 2);
	assert_true(e.value("dsmem_store_rpc_duration_seconds_bucket", { { "method", "X" }, { "le", "1" } }) == 3);
	assert_true(e.value("dsmem_store_rpc_duration_seconds_bucket", { { "method", "X" }, { "le", "10" } }) == 3);
	assert_true(e.value("dsmem_store_rpc_duration_seconds_bucket", { { "method", "X" }, { "le", "+Inf" } }) == 4);
	assert_true(std::fabs(e.value("dsmem_store_rpc_duration_seconds_sum", { { "method", "X" } }) - 60.30015) < 1e-6);
	assert_true(e.value("dsmem_store_rpc_total", { { "method", "X" }, { "code", "OK" } }) == 2);
	assert_true(e.value("dsmem_store_rpc_total", { { "method", "X" }, { "code", "UNAVAILABLE" } }) == 1);
	assert_true(e.value("dsmem_store_rpc_total", { { "method", "X" }, { "code", "UNKNOWN" } }) == 1);
}

void test_parse_host_port(void **)
{
	std::string h;
	int p = -1;
	assert_true(parse_host_port("127.0.0.1:9470", &h, &p));
	assert_string_equal(h.c_str(), "127.0.0.1");
	assert_int_equal(p, 9470);
	assert_true(parse_host_port("[::1]:0", &h, &p));
	assert_string_equal(h.c_str(), "::1");
	assert_int_equal(p, 0);
	assert_true(parse_host_port("localhost:65535", &h, &p));
	for (const char *bad : { "", "9470", ":9470", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x",
				 "::1:9470", "[::1:9470", "[]:9470", "127.0.0.1:-1", "127.0.0.1:123456" })
		if (parse_host_port(bad, &h, &p))
			fail_msg("'%s' taken", bad);
}

// GET /metrics over HTTP on loopback; anything else 404; a port taken
// is an error that says so.
void test_http(void **)
{
	Fx f;
	f.put("h/a", 5000);
	MetricsServer srv;
	std::string err;
	assert_int_equal(srv.start("127.0.0.1:0", [&f] { return scrape(*f.svc, f.opts); }, &err), 0);
	assert_true(srv.port() > 0);

	httplib::Client cli("127.0.0.1", srv.port());
	cli.set_connection_timeout(5);
	cli.set_read_timeout(5);
	auto res = cli.Get("/metrics");
	assert_true(res);
	assert_int_equal(res->status, 200);
	assert_string_equal(res->get_header_value("Content-Type").c_str(),
			    "text/plain; version=0.0.4; charset=utf-8");
	Exposition e = parse(res->body);
	assert_true(e.value("dsmem_store_objects") == 1);
	assert_true(e.value("dsmem_store_puts_total") == 1);

	// the numbers move between scrapes
	f.put("h/b", 7000);
	res = cli.Get("/metrics");
	assert_true(res);
	e = parse(res->body);
	assert_true(e.value("dsmem_store_objects") == 2);
	assert_true(e.value("dsmem_store_puts_total") == 2);
	assert_true(e.value("dsmem_store_object_bytes") == 12000);

	for (const char *path : { "/", "/metrics/x", "/api" }) {
		res = cli.Get(path);
		assert_true(res);
		assert_int_equal(res->status, 404);
	}
	res = cli.Post("/metrics", "x", "text/plain");
	assert_true(res);
	assert_int_not_equal(res->status, 200);

	// a second server on the same port: refused (no SO_REUSEPORT)
	MetricsServer again;
	std::string aerr;
	int ret = again.start("127.0.0.1:" + std::to_string(srv.port()), [] { return std::string(); }, &aerr);
	assert_int_equal(ret, -EADDRINUSE);
	assert_string_equal(aerr.c_str(), strerror(EADDRINUSE));
	assert_int_equal(again.start("127.0.0.1", [] { return std::string(); }, &aerr), -EINVAL);

	// stopped: the port is free again
	int port = srv.port();
	srv.stop();
	MetricsServer third;
	assert_int_equal(third.start("127.0.0.1:" + std::to_string(port), [] { return std::string("x"); }, &err), 0);
	third.stop();
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers_move),
		cmocka_unit_test(test_lease_left),
		cmocka_unit_test(test_standby),
		cmocka_unit_test(test_histogram_buckets),
		cmocka_unit_test(test_parse_host_port),
		cmocka_unit_test(test_http),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
