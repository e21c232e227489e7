// SPDX-License-Identifier: BSD-2-Clause
// dssim's runner: policies over a trace on all cores, the latency model,
// miss ratio over time, miss-ratio curves (exact and SHARDS-sampled) and
// the connection sweep's operation rate.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "sim.hpp"

namespace dssim {

struct run_spec {
	std::string policy;
	std::string size_text;	// as given, for reports
	policy_opts o;
	uint64_t warmup = 0;	// requests served before counting starts
	bool record_moves = false;	// seed policies: keep every move
};

struct run_result {
	run_spec spec;
	counters c;
	uint64_t total_ns = 0;	// modelled access time of all requests
	uint64_t p99_ns = 0;
	double seconds = 0;	// the simulator's own time for this run
	uint64_t served = 0;	// requests it took, warm-up included
	std::vector<double> windows;	// miss ratio per window of requests
	std::vector<move_event> moves;	// seed policy, when asked for
	bool one_pass = false;	// served with other sizes by one stack pass

	double miss_ratio() const
	{
		return c.requests ? double(c.requests - c.hits[0]) / double(c.requests) : 0;
	}
	double mean_ns() const { return c.requests ? double(total_ns) / double(c.requests) : 0; }
	double mreqs_per_s() const { return seconds > 0 ? double(served) / seconds / 1e6 : 0; }
};

// What a run costs per request in the latency model: L1 for an L1 hit,
// the tiers tried in turn otherwise (a single-tier cache has no L2).
uint64_t tier_cost(const uint64_t cost_ns[3], int tier, bool tiered);

// Requests done over all runs, for a progress bar.
struct progress {
	std::atomic<uint64_t> done{ 0 };
	std::atomic<uint64_t> total{ 0 };	// set by run_all while a bar reads it
	// set by another thread to stop the runs: run_all throws
	// sim_error("canceled") within one progress step of every run
	std::atomic<bool> cancel{ false };
};

// Count n more requests done; throws sim_error when the runs were canceled.
void progress_step_done(progress *prog, uint64_t n);

// Run every spec over t, up to threads at a time (LRU at three or more
// sizes in entries takes one stack pass for all); window: requests per
// miss-ratio window (0: none).  Belady runs are refused up front, with the
// memory they would need, when that exceeds mem_limit (0: what the
// machine has free).  Throws sim_error from the first spec that fails.
std::vector<run_result> run_all(trace &t, const std::vector<run_spec> &specs,
				unsigned int threads, uint64_t window, progress *prog,
				uint64_t mem_limit = 0);

// Exact LRU misses at each size (entries), all in one pass over the trace
// (Mattson's stack distances, counted with a Fenwick tree).
std::vector<uint64_t> lru_mrc(const trace &t, const std::vector<uint64_t> &sizes);

// SHARDS (Waldspurger et al., FAST'15), fixed rate: the requests to
// objects whose hashed key falls under rate; a policy run on it at
// rate x size estimates the full run's miss ratio ("miniature
// simulation", ATC'17).
trace shards_sample(const trace &t, double rate);

// Memory the machine has free for a run (MemAvailable), in bytes.
uint64_t memory_available();
// This process's peak resident memory, in bytes.
uint64_t peak_rss();

}  // namespace dssim
