// SPDX-License-Identifier: BSD-2-Clause
// dssim's trace processing for the console and dsctl: convert a trace to
// another format, cut it down (request range, reads or writes) and
// characterise it (top keys, reuse distances, working set over time).
// SHARDS sampling is shards_sample() in run.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim.hpp"

namespace dssim {

// Write t in format (case as read_trace takes it):
//   "oracleGeneral"  write_oracle(); next is computed when t has none.
//                    The format has no operation and whole seconds.
//   "csv"            a "time_ns,key,size,op" header, then one line per
//                    request: time (0 when t has none), key, size (1 when
//                    t has none), "read" or "write".  It reads back with
//                    csv "time=1,id=2,size=3,op=4,header".
//   "text"           one key per line, in decimal (format text).
// Every format keeps the sequence of keys exactly.  Throws sim_error
// naming the file for an unknown format (before creating the file) and
// on any I/O failure.
void write_trace(const trace &t, const std::string &path, const std::string &format);

// The requests from <= i < to (to clamped to t's size) that are reads
// (op 0), writes (op 1) or either (op -1).  Ids are made dense again in
// order of first appearance; keys, sizes, times, writes, eids and types
// are carried over; next is left empty (compute_next() fills it).
// Throws sim_error when nothing is left ("filter keeps no request of
// NAME") or for another op.
trace filter_trace(const trace &t, uint64_t from, uint64_t to, int op);

struct key_count {
	uint64_t key = 0, count = 0;
	uint64_t bytes = 0;	// sum of its requests' sizes
};

// One window of requests: the distinct objects it touches and their
// bytes (each at the size of its last access in the window).
struct wss_point {
	uint64_t start = 0;	// its first request
	uint64_t objects = 0, bytes = 0;
};

struct analysis {
	uint64_t requests = 0;
	uint64_t objects = 0;	// distinct objects requested
	uint64_t bytes = 0;	// sum of request sizes
	// most requested keys: count descending, key ascending on ties
	std::vector<key_count> top;
	// Reuse (LRU stack) distance histogram: the distinct objects touched
	// since the previous request to the same object, itself included (an
	// immediate re-access is 1; LRU of size S hits exactly distances
	// 1..S).  Pairs (le, count): the requests with le/2 < d <= le, le =
	// 1, 2, 4, ... up to the largest bucket seen, empty buckets included.
	std::vector<std::pair<uint64_t, uint64_t>> reuse;
	uint64_t cold = 0;	// first accesses (no reuse distance)
	uint64_t window = 0;	// requests per wss window
	std::vector<wss_point> wss;	// the last window may be shorter
};

// top_n: entries in top (fewer when t has fewer objects); window: requests
// per wss window, 0 for max(1, requests / 100).
analysis analyze(const trace &t, size_t top_n, uint64_t window);

}  // namespace dssim
