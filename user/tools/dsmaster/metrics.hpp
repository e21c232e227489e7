// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's Prometheus metrics (docs/store.md "Metrics"): the counters
// that outlive a term of leadership (RPCs, their latency, puts, gets,
// deletes, repairs, terms led), what a Leader knows of its state
// (LeaderGauges, filled under its mutex), the text exposition format
// 0.0.4, and the HTTP server that serves it at GET /metrics.
//
// Nothing exported is a secret: segment ids, types, states and node ids,
// never a segment's global address, an rkey or a client's address.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/support/status.h>

#include "dsstore.pb.h"

namespace httplib {
class Server;
}

namespace dsmem::store {

struct Options;
class MasterService;

// Process-wide counters: one per dsmaster (MasterService owns it), shared
// with each Leader it serves with.
class Metrics {
public:
	// rpc_duration_seconds' upper bounds (+Inf aside): from a fast host's
	// lookup to a TCG guest's slow put
	static constexpr std::array<double, 13> kBuckets = {
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
		0.025, 0.1, 0.25, 1, 2.5, 10,
	};
	static constexpr int kCodes = 17;	// gRPC status codes 0..16

	struct Rpc {
		std::array<uint64_t, kCodes> codes{};		// by status code
		std::array<uint64_t, kBuckets.size()> buckets{};	// not cumulative
		uint64_t count = 0;
		double sum = 0;			// seconds
	};

	std::atomic<uint64_t> puts{ 0 };	// PutCommits that committed
	std::atomic<uint64_t> gets{ 0 };	// Gets answered
	std::atomic<uint64_t> dels{ 0 };	// Dels carried out
	std::atomic<uint64_t> repairs{ 0 };	// replicas re-replication added
	std::atomic<uint64_t> leader_terms{ 0 };	// times this process led
	// PutStarts, PutCommits and Dels found to be retries of requests
	// already carried out (their first answer lost): answered again
	std::atomic<uint64_t> retries{ 0 };

	void observe_rpc(std::string_view method, int code, double seconds);
	std::map<std::string, Rpc, std::less<>> rpcs() const;

	// Runs f (an RPC's body), recording its method, status and duration.
	template <class F>
	grpc::Status time_rpc(std::string_view method, F &&f)
	{
		auto t0 = std::chrono::steady_clock::now();
		grpc::Status s = f();
		observe_rpc(method, static_cast<int>(s.error_code()),
			    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
		return s;
	}

private:
	mutable std::mutex m_;
	std::map<std::string, Rpc, std::less<>> rpc_;
};

// What the leader knows of its state (Leader::gauges).
struct LeaderGauges {
	struct Segment {
		uint64_t id = 0;
		v1::SegmentType type = v1::SEGMENT_DRAM;
		v1::SegmentState state = v1::SEGMENT_ALIVE;
		uint32_t node = 0;
		uint64_t size = 0, used = 0;
	};
	uint64_t term = 0, objects = 0, versions = 0, object_bytes = 0;
	uint64_t metadata_bytes = 0, log_records_since_snapshot = 0, clients = 0;
	// the persisted counters (they survive a failover)
	uint64_t evictions = 0, expiries = 0, evicted_bytes = 0;
	std::vector<Segment> segments;
	// ALIVE segments only; [0] DRAM, [1] NVMe-oF
	uint64_t tier_size[2] = { 0, 0 }, tier_used[2] = { 0, 0 };
	// how long its etcd lease on leadership holds from now, by its own
	// reckoning; -1 without etcd (a lone master's lease never ends)
	int64_t lease_left_ns = -1;
};

const char *status_code_name(int code);

// The exposition (text format 0.0.4); g nullptr: not leading (a standby,
// or between terms): only what this process knows.
std::string render_metrics(const Metrics &m, const Options &opts, const LeaderGauges *g);
// render_metrics with svc's metrics and its leader's gauges, if it leads.
std::string scrape(MasterService &svc, const Options &opts);

// "HOST:PORT" or "[V6]:PORT", PORT 0..65535: false if not one.
bool parse_host_port(const std::string &s, std::string *host, int *port);

// GET /metrics on its own thread (anything else: 404).
class MetricsServer {
public:
	MetricsServer();
	~MetricsServer();
	MetricsServer(const MetricsServer &) = delete;
	MetricsServer &operator=(const MetricsServer &) = delete;

	// Binds listen (HOST:PORT; port 0: any) and serves body() at
	// /metrics: 0, or -errno with *err saying why.
	int start(const std::string &listen, std::function<std::string()> body, std::string *err);
	void stop();
	int port() const { return port_; }

private:
	std::unique_ptr<httplib::Server> svr_;
	std::thread thread_;
	std::atomic<bool> done_{ false };
	int port_ = 0;
};

}  // namespace dsmem::store
