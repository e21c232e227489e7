// SPDX-License-Identifier: BSD-2-Clause
// dssim: the RDMA metadata-cache simulator behind `dsctl sim`.
//
// A trace is read (or generated) once into memory with its object ids made
// dense (0..nobjects-1), so that every policy keeps its state in flat
// arrays indexed by object and no policy hashes per request.  Policies
// then replay it, each on its own thread when several run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dssim {

// Bad input or a refused run: what() names the file and the offset (or
// the option) and says what is wrong.  dsctl prints it as "Error: ...".
struct sim_error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

enum class op : uint8_t { read, write };

// A trace held in memory.  Per-request arrays are indexed by request
// number; per-object arrays by dense id.  Optional arrays are empty when
// the source has no such field.
struct trace {
	std::string name;		// file name or generator spec
	std::string format;		// a read_opts format (lirs as text), or gen
	std::vector<uint32_t> ids;	// per request: dense object id
	std::vector<uint64_t> keys;	// per object: the id the source gave
	std::vector<uint32_t> sizes;	// per request: bytes (empty: all 1)
	std::vector<uint64_t> times_ns;	// per request (empty: none given)
	std::vector<uint8_t> writes;	// per request: 1 = write (empty: reads)
	std::vector<int64_t> next;	// per request: index of the next request
					// to the same object, -1 none (empty:
					// not given; compute_next() fills it)
	// dsmem traces and the connection sweep: the module's entry id
	// (type << 16 | index) and token type per object, so that the seed
	// policy lays entries out as the kernel does.  Empty otherwise.
	std::vector<uint32_t> eids;
	std::vector<uint8_t> types;

	size_t size() const { return ids.size(); }
	uint32_t nobjects() const { return static_cast<uint32_t>(keys.size()); }
	uint32_t size_of(size_t i) const { return sizes.empty() ? 1 : sizes[i]; }
	bool is_write(size_t i) const { return !writes.empty() && writes[i]; }
};

// s with A-Z lowered (format and file names; no locale)
std::string ascii_lower(std::string_view s);

// Fill t.next from t.ids (Belady needs it when the source has none).
void compute_next(trace &t);

// ---- input -------------------------------------------------------------

// Column mapping for CSV traces, from "id=2,time=1,size=3,op=4,header,sep=;"
// (columns count from 1; id is required; "header" skips the first line),
// or libCacheSim's -t names: obj-id-col, time-col, obj-size-col, op-col,
// delimiter, has-header=true|false, obj-id-is-num (accepted, no effect).
struct csv_map {
	int id = 0, time = 0, size = 0, op = 0;	// 0: absent
	char sep = ',';
	bool header = false;
};
csv_map parse_csv_map(std::string_view spec);	// throws sim_error

struct read_opts {
	// "" (detect), oracleGeneral, csv, text, txt, dsmem, twitter, arc,
	// lirs (= text), cache2k, scarab, cloud-physics, vscsi
	std::string format;
	csv_map csv;
	uint64_t limit = 0;	// at most this many requests (0: all)
	// Fields a caller can do without, to hold a large trace in less
	// memory: next-access (only Belady reads it), times (only the seed
	// policy's clock).
	bool want_next = true;
	bool want_times = true;
};

// Read a trace: gzip, zstd and xz are detected by their magic bytes and
// decompressed as a stream (bzip2, lz4, zip... are named and refused); the
// format is then taken from read_opts, or the file's name, or its content.
// Throws sim_error naming the file and the byte offset (or line) for a
// truncated record, an unknown format, a field that does not parse, and
// an empty trace.
trace read_trace(const std::string &path, const read_opts &o);

// What read_opts::format takes, and the compressions read_trace undoes:
// for listings (dsctl sim show, the console) and uploads' checks.
const std::vector<std::string> &trace_formats();
const std::vector<std::string> &trace_compressions();

// Write t as oracleGeneral (its next fields filled, see compute_next),
// what other simulators read.  Throws sim_error naming the file.
void write_oracle(const trace &t, const std::string &path);

// ---- synthetic workloads -------------------------------------------------

// Generate from a spec; throws sim_error on a bad spec.  Grammar:
//   SPEC := COMPONENT [ "+" COMPONENT ]...
//   COMPONENT := KIND [ ":" KEY=VALUE [ "," KEY=VALUE ]... ]
//   KIND := zipf | uniform | scan | loop | sweep
// Keys: requests (total, any component), seed (any component),
// objects, alpha (zipf), weight (share in a mixture, default 1),
// write (fraction of writes, default 0), size (bytes per object).
// Numbers take k/m/g suffixes (decimal) and 1e6 notation.
// sweep: qps=N, ops=N, reuse=P (probability an operation reuses the
// previous operation's QP), payload=BYTES, qp_per_cq=4, qp_per_mr=8;
// three requests per operation (QP write, CQ, MR), with eids/types set.
trace generate(std::string_view spec);
// The requests a spec would generate (a sweep: over all its QP counts),
// without generating them; throws sim_error on a bad spec as generate does.
uint64_t generate_requests(std::string_view spec);

// The connection sweep's parameters, for the operation-rate model.
struct sweep_spec {
	std::vector<uint32_t> qps;	// one run each: "qps=16..4096" doubles,
					// "qps=100|450|3000" lists
	uint64_t ops = 1000000;
	double reuse = 0;
	uint32_t payload = 64;
	uint32_t qp_per_cq = 4, qp_per_mr = 8;
	uint64_t seed = 1;
};
// true and the spec when s is a sweep (qps may list several counts)
bool parse_sweep(std::string_view s, sweep_spec &out);
trace generate_sweep(const sweep_spec &s, uint32_t qps);

// ---- policies ------------------------------------------------------------

// A capacity in entries or in bytes.
struct capacity {
	uint64_t value = 0;
	bool bytes = false;
};
// "1000" entries, "64KiB"/"64K"/"1MB" bytes, "10%" of the trace's objects
// (of its footprint in bytes when the trace has sizes).  Throws on 0.
capacity parse_capacity(std::string_view s, const trace &t);

// Tiers: 0 = L1 (for a single-tier cache: a hit), 1 = L2, 2 = L3 (a
// single-tier cache's miss, served from host memory).
struct counters {
	uint64_t requests = 0;
	uint64_t hits[3] = {};		// served by tier
	uint64_t bytes = 0, miss_bytes = 0;
	uint64_t promotions = 0, demotions = 0, evictions = 0;
	uint64_t writebacks = 0;	// dirty entries written back on eviction
	uint64_t admissions_refused = 0;	// larger than the cache
	// seed policies: migrations, their latency (queue wait + modelled
	// copy) and modelled DMA bytes, over span_ns of the policy's clock
	bool has_migration = false;
	uint64_t migrations = 0, migrate_ns = 0;
	uint64_t dma_bytes = 0, dma_prefetch_bytes = 0;
	uint64_t span_ns = 0;
	std::vector<uint32_t> mig_hist;	// DSTC_HIST_BUCKETS, the core's
};

class policy {
public:
	virtual ~policy() = default;
	// Serve request i of t; returns the tier that served it.
	virtual int access(const trace &t, size_t i) = 0;
	// After the last request: bring c up to date (tiered policies).
	virtual void finish() {}
	counters c;
	// Has an L2: its L3 accesses cost L1 + L2 + L3, not L1 + L3.
	bool tiered = false;
};

// A move between tiers of the seed policy (tiers 1..3, as the module's).
struct move_event {
	uint32_t eid;
	uint8_t from, to;
};

struct policy_opts {
	capacity cap;
	// the seed policy's tiers: L1 is cap (entries), L2 this (0: its default)
	uint64_t l2_entries = 0;
	bool adaptive = false;	// seed policy: adaptive thresholds
	uint64_t seed = 1;	// random replacement
	uint64_t interval_ns = 100;	// clock for traces without times
	uint64_t params[32] = {};	// seed policy: DSTC_P_* overrides
	uint64_t params_mask = 0;
	uint64_t cost_ns[3] = { 5, 200, 800 };	// latency model
	uint64_t maint_ns = 0;	// seed policy: maintenance period (0: module's)
	std::vector<move_event> *moves = nullptr;	// seed policy: record moves
};

// The names make_policy takes, in the order reports list them: the
// baselines, then "seed" and "seed-adaptive" (the token cache's policy
// core, fixed and adaptive thresholds).
const std::vector<std::string> &policy_names();
// Throws sim_error for an unknown name or a capacity it cannot take.
std::unique_ptr<policy> make_policy(std::string_view name, const trace &t,
				    const policy_opts &o);

// policies.cpp: the single-tier baselines -- lru, fifo, lfu, arc, s3fifo,
// sieve, wtinylfu, wtinylfu-dk, random (write-back), belady, lirs, 2q,
// clock, slru, lru2, gdsf, hyperbolic, lecar, cacheus, lhd, clockpro,
// each with optional admission filters (+tinylfu, +size:MAX).  nullptr
// for another name;
// throws sim_error for a capacity it cannot take.  Belady calls
// compute_next() on a copy when t.next is empty, so callers that run it
// should fill t.next first (see belady_bytes_needed).
const std::vector<std::string> &baseline_names();
// two_tier.cpp: NAME/lru, the single-tier policy NAME as L1 (at o's
// capacity, in entries) over an LRU L2 of l2_entries, which sees L1's
// misses.  Throws sim_error for another L2, a size in bytes or an unknown
// L1.
std::unique_ptr<policy> make_two_tier(std::string_view name, const trace &t,
				      const policy_opts &o, uint64_t l2_entries);
std::unique_ptr<policy> make_baseline(std::string_view name, const trace &t,
				      const policy_opts &o);
// Memory a Belady run needs beyond the trace, to refuse it up front.
uint64_t belady_bytes_needed(const trace &t);
// What a baseline holds now, in entries or in bytes as its capacity
// counts (tests check it never overflows); 0 for another policy.
uint64_t baseline_held(const policy &p);
// Whether a baseline holds object id now (tests recount held() with it).
bool baseline_holds(const policy &p, uint32_t id);
// LeCaR's weight of its LRU expert now, in [0, 1] (tests check it
// learns); -1 for another policy.
double lecar_lru_weight(const policy &p);
// CACHEUS's weight of its SR-LRU expert, in [0, 1], and its learning rate
// now (tests check they move as the paper has them); -1 for another policy.
double cacheus_sr_weight(const policy &p);
double cacheus_learning_rate(const policy &p);
// wtinylfu's window maximum now, in entries or bytes (tests check its
// hill climber moves it); -1 for another policy.
int64_t wtinylfu_window(const policy &p);

// splitmix64's output function (Steele, Lea and Flood): the simulator's
// PRNG steps, its hashes and scatter below all finish with it.
inline constexpr uint64_t splitmix_gamma = 0x9e3779b97f4a7c15ULL;
inline uint64_t mix64_finish(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// A fixed bijection of [0, n): a 4-round Feistel network on the smallest
// even number of bits that holds n, walking the cycle until it lands
// inside.  It scatters zipf ranks so that popular objects are not
// neighbours.
class scatter {
public:
	explicit scatter(uint64_t n) : n_(n)
	{
		int bits = 2;
		while (bits < 64 && (1ULL << bits) < n)
			bits += 2;
		half_ = bits / 2;
		mask_ = (1ULL << half_) - 1;
	}

	uint64_t operator()(uint64_t x) const
	{
		do
			x = round_trip(x);
		while (x >= n_);
		return x;
	}

private:
	uint64_t round_trip(uint64_t x) const
	{
		static const uint64_t round_keys[] = { 0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
						       0xa4093822299f31d0ULL,
						       0x082efa98ec4e6c89ULL };
		uint64_t left = x >> half_, right = x & mask_;
		for (uint64_t k : round_keys) {
			uint64_t f = mix64_finish((right ^ k) + splitmix_gamma) & mask_;
			uint64_t next_right = left ^ f;
			left = right;
			right = next_right;
		}
		return left << half_ | right;
	}

	uint64_t n_;
	int half_;
	uint64_t mask_;
};

}  // namespace dssim
