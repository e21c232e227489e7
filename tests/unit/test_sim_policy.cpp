// SPDX-License-Identifier: BSD-2-Clause
// The simulator's single-tier baselines: exact LRU and FIFO miss counts
// by hand and on a public trace (cross-checked by a naive simulator),
// Belady against a brute-force optimum, the invariants every policy keeps,
// one defining case per policy, and the capacity parser.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

namespace {

// ---- helpers ---------------------------------------------------------------

// A trace of the given dense ids (sizes, writes optional).
dssim::trace make_trace(const std::vector<uint32_t> &ids, const std::vector<uint32_t> &sizes = {},
			const std::vector<uint8_t> &writes = {})
{
	dssim::trace t;
	t.name = "hand";
	t.format = "gen";
	t.ids = ids;
	uint32_t n = 0;
	for (uint32_t id : ids)
		n = std::max(n, id + 1);
	for (uint32_t k = 0; k < n; k++)
		t.keys.push_back(k);
	t.sizes = sizes;
	t.writes = writes;
	return t;
}

dssim::trace with_next(dssim::trace t)
{
	dssim::compute_next(t);
	return t;
}

std::unique_ptr<dssim::policy> make(const char *name, const dssim::trace &t, uint64_t cap,
				    bool bytes = false, uint64_t seed = 1)
{
	dssim::policy_opts o;
	o.cap.value = cap;
	o.cap.bytes = bytes;
	o.seed = seed;
	auto p = dssim::make_baseline(name, t, o);
	assert_non_null(p.get());
	return p;
}

// Replay t; the tier of each request ('h' hit, 'm' miss), checking after
// every request that the policy holds no more than its capacity.
std::string replay(dssim::policy &p, const dssim::trace &t, uint64_t cap)
{
	std::string tiers;
	for (size_t i = 0; i < t.size(); i++) {
		const int tier = p.access(t, i);
		assert_true(tier == 0 || tier == 2);
		tiers += tier == 0 ? 'h' : 'm';
		assert_true(dssim::baseline_held(p) <= cap);
	}
	return tiers;
}

std::string tiers_of(const char *name, const dssim::trace &t, uint64_t cap, bool bytes = false)
{
	auto p = make(name, t, cap, bytes);
	return replay(*p, t, cap);
}

uint64_t misses_of(const char *name, const dssim::trace &t, uint64_t cap)
{
	auto p = make(name, t, cap);
	replay(*p, t, cap);
	return p->c.hits[2];
}

// a small deterministic PRNG for the random traces
struct prng {
	uint64_t s;
	uint64_t next()
	{
		s += 0x9e3779b97f4a7c15ull;
		uint64_t z = s;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		return z ^ (z >> 31);
	}
	uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
};

// A random trace: n requests over k objects, some locality.
dssim::trace random_trace(prng &r, size_t n, uint32_t k)
{
	std::vector<uint32_t> ids;
	for (size_t i = 0; i < n; i++) {
		uint32_t id = r.below(k);
		if (r.below(2))
			id = r.below(std::max<uint32_t>(1, k / 4));	// a hot quarter
		ids.push_back(id);
	}
	return make_trace(ids);
}

// ---- LRU and FIFO by hand --------------------------------------------------

// The classic reference string 1 2 3 4 1 2 5 1 2 3 4 5 (objects 0..4 for
// 1..5).  Cache contents after each request, newest first:
//
// LRU, 3 entries:                       LRU, 4 entries:
//  1 m [1]        1 h [1 5 2]            1-4 m [4 3 2 1]    1 h [1 5 2 4]
//  2 m [2 1]      2 h [2 1 5]            1 h [1 4 3 2]      2 h [2 1 5 4]
//  3 m [3 2 1]    3 m [3 2 1] (-5)       2 h [2 1 4 3]      3 m [3 2 1 5] (-4)
//  4 m [4 3 2]    4 m [4 3 2] (-1)       5 m [5 2 1 4] (-3) 4 m [4 3 2 1] (-5)
//  1 m [1 4 3]    5 m [5 4 3] (-2)                          5 m [5 4 3 2] (-1)
//  2 m [2 1 4]
//  5 m [5 2 1]                           8 misses
//  10 misses
//
// FIFO, 3 entries (insertion order,      FIFO, 4 entries:
// oldest first):                          1-4 m [1 2 3 4]    1 m [3 4 5 1] (-2)
//  1-3 m [1 2 3]  1 h                     1 h, 2 h           2 m [4 5 1 2] (-3)
//  4 m [2 3 4]    2 h                     5 m [2 3 4 5] (-1) 3 m [5 1 2 3] (-4)
//  1 m [3 4 1]    3 m [2 5 3] (-1)                           4 m [1 2 3 4] (-5)
//  2 m [4 1 2]    4 m [5 3 4] (-2)                           5 m [2 3 4 5] (-1)
//  5 m [1 2 5]    5 h                     10 misses: more room, more misses
//  9 misses                               (Belady's anomaly)
void test_lru_fifo_by_hand(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 2, 3, 0, 1, 4, 0, 1, 2, 3, 4 });
	assert_string_equal(tiers_of("lru", t, 3).c_str(), "mmmmmmmhhmmm");
	assert_string_equal(tiers_of("lru", t, 4).c_str(), "mmmmhhmhhmmm");
	assert_string_equal(tiers_of("fifo", t, 3).c_str(), "mmmmmmmhhmmh");
	assert_string_equal(tiers_of("fifo", t, 4).c_str(), "mmmmhhmmmmmm");
	assert_int_equal(misses_of("lru", t, 3), 10);
	assert_int_equal(misses_of("lru", t, 4), 8);
	assert_int_equal(misses_of("fifo", t, 3), 9);
	assert_int_equal(misses_of("fifo", t, 4), 10);

	// a b a c a, 2 entries: LRU keeps a, the hit refreshed it
	//  LRU:  a m [a]  b m [b a]  a h [a b]  c m [c a] (-b)  a h   3 misses
	//  FIFO: a m [a]  b m [b a]  a h [b a]  c m [c b] (-a)  a m   4 misses
	//  (newest first)
	const dssim::trace u = make_trace({ 0, 1, 0, 2, 0 });
	assert_string_equal(tiers_of("lru", u, 2).c_str(), "mmhmh");
	assert_string_equal(tiers_of("fifo", u, 2).c_str(), "mmhmm");
	auto p = make("lru", u, 2);
	replay(*p, u, 2);
	assert_int_equal(p->c.evictions, 1);
	assert_int_equal(p->c.requests, 5);
}

// Bytes: 10 bytes of room.
//  a4 m [a]            b4 m [b a] 8B       a4 h [a b]
//  c4 m [c a] (-b) 8B  d11: larger than the cache, refused, a miss
//  a8 h, a grew: [a c] 12B > 10, evict c: [a] 8B
//  c4 m [c] (-a)
void test_lru_bytes_by_hand(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 0, 2, 3, 0, 2 }, { 4, 4, 4, 4, 11, 8, 4 });
	auto p = make("lru", t, 10, true);
	assert_string_equal(replay(*p, t, 10).c_str(), "mmhmmhm");
	assert_int_equal(p->c.admissions_refused, 1);
	assert_int_equal(p->c.evictions, 3);
	assert_int_equal(p->c.bytes, 39);
	assert_int_equal(p->c.miss_bytes, 4 + 4 + 4 + 11 + 4);
	assert_int_equal(dssim::baseline_held(*p), 4);
}

// ---- LRU and FIFO on a public trace ----------------------------------------

// The CloudPhysics sample as 24-byte little-endian records {u32 time,
// u64 id, u32 size, i64 next}; ids made dense here, sizes ignored.
bool read_cloudphysics(dssim::trace &t, std::vector<uint64_t> &raw)
{
	const std::string path = std::string(DS_TRACES) + "/cloudPhysicsIO.oracleGeneral.bin";
	FILE *f = fopen(path.c_str(), "rb");
	if (!f)
		return false;
	std::unordered_map<uint64_t, uint32_t> dense;
	unsigned char rec[24];
	while (fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint64_t id = 0;
		for (int b = 7; b >= 0; b--)
			id = id << 8 | rec[4 + b];
		auto [it, fresh] = dense.try_emplace(id, t.nobjects());
		if (fresh)
			t.keys.push_back(id);
		t.ids.push_back(it->second);
		raw.push_back(id);
	}
	fclose(f);
	return !t.ids.empty();
}

// Deliberately naive, and built unlike the policies (no lists, no dense
// ids): the held raw keys with their stamps (last use for LRU, insertion
// for FIFO), and the same keys ordered by stamp, whose oldest is evicted.
// The oldest was found by a linear search of 10000 slots for each miss,
// which took most of the program's time and chose the same victim.
uint64_t naive_misses(const std::vector<uint64_t> &raw, size_t cap, bool lru)
{
	std::unordered_map<uint64_t, size_t> stamp_of;
	std::map<size_t, uint64_t> by_stamp;
	uint64_t misses = 0;
	for (size_t i = 0; i < raw.size(); i++) {
		const auto it = stamp_of.find(raw[i]);
		if (it != stamp_of.end()) {
			if (lru) {
				by_stamp.erase(it->second);
				by_stamp.emplace(i, raw[i]);
				it->second = i;
			}
			continue;
		}
		misses++;
		if (stamp_of.size() == cap) {
			const auto oldest = by_stamp.begin();
			stamp_of.erase(oldest->second);
			by_stamp.erase(oldest);
		}
		stamp_of.emplace(raw[i], i);
		by_stamp.emplace(i, raw[i]);
	}
	return misses;
}

void test_cloudphysics_lru_fifo(void **)
{
	dssim::trace t;
	std::vector<uint64_t> raw;
	if (!read_cloudphysics(t, raw)) {
		skip();
		return;
	}
	assert_int_equal(t.size(), 113872);
	// pinned; each also equals the naive simulator's count below
	static const struct {
		uint64_t cap, lru, fifo;
	} pins[] = {
		{ 100, 100215, 101495 },
		{ 1000, 94823, 95520 },
		{ 10000, 79438, 79210 },
	};
	for (const auto &pin : pins) {
		const uint64_t lru = misses_of("lru", t, pin.cap);
		const uint64_t fifo = misses_of("fifo", t, pin.cap);
		assert_int_equal(lru, naive_misses(raw, pin.cap, true));
		assert_int_equal(fifo, naive_misses(raw, pin.cap, false));
		assert_int_equal(lru, pin.lru);
		assert_int_equal(fifo, pin.fifo);
	}
}

// ---- Belady ----------------------------------------------------------------

// The optimum with bypass by exhaustion: every set of cached objects that
// can be reached, the fewest misses to reach it; a miss may leave the
// cache as it is, fill a free entry, or replace any cached object.
uint64_t brute_force_opt(const std::vector<uint32_t> &ids, uint32_t k, uint32_t cap)
{
	const uint64_t inf = ~0ull;
	std::vector<uint64_t> best(1u << k, inf), next(1u << k);
	best[0] = 0;
	for (uint32_t id : ids) {
		std::fill(next.begin(), next.end(), inf);
		const uint32_t bit = 1u << id;
		for (uint32_t s = 0; s < best.size(); s++) {
			if (best[s] == inf)
				continue;
			auto relax = [&](uint32_t to, uint64_t v) { next[to] = std::min(next[to], v); };
			if (s & bit) {
				relax(s, best[s]);
				continue;
			}
			const uint64_t m = best[s] + 1;
			relax(s, m);
			if (static_cast<uint32_t>(__builtin_popcount(s)) < cap)
				relax(s | bit, m);
			for (uint32_t v = 0; v < k; v++)
				if (s & (1u << v))
					relax((s & ~(1u << v)) | bit, m);
		}
		best.swap(next);
	}
	return *std::min_element(best.begin(), best.end());
}

void test_belady_is_optimal(void **)
{
	prng r{ 42 };
	for (int n = 0; n < 300; n++) {
		const uint32_t k = 1 + r.below(7);
		const size_t len = 1 + r.below(14);
		const uint32_t cap = 1 + r.below(4);
		std::vector<uint32_t> ids;
		for (size_t i = 0; i < len; i++)
			ids.push_back(r.below(k));
		const dssim::trace t = with_next(make_trace(ids));
		const uint64_t opt = brute_force_opt(ids, t.nobjects(), cap);
		assert_int_equal(misses_of("belady", t, cap), opt);
		for (const auto &name : dssim::baseline_names())
			assert_true(misses_of(name.c_str(), t, cap) >= opt);
	}
}

void test_belady_below_every_policy(void **)
{
	prng r{ 7 };
	for (int n = 0; n < 40; n++) {
		const dssim::trace t = with_next(random_trace(r, 2000, 10 + r.below(60)));
		for (uint64_t cap : { 1, 3, 8, 20 }) {
			const uint64_t opt = misses_of("belady", t, cap);
			for (const auto &name : dssim::baseline_names())
				assert_true(misses_of(name.c_str(), t, cap) >= opt);
		}
	}
}

// a b c a b, 2 entries: c is never used again, so OPT does not cache it
// (bypass) and both a and b hit: 3 misses.  LRU: 5.
// Without a next array Belady computes one: same result.
void test_belady_bypass(void **)
{
	const dssim::trace t = with_next(make_trace({ 0, 1, 2, 0, 1 }));
	assert_string_equal(tiers_of("belady", t, 2).c_str(), "mmmhh");
	assert_string_equal(tiers_of("lru", t, 2).c_str(), "mmmmm");
	const dssim::trace bare = make_trace({ 0, 1, 2, 0, 1 });
	assert_true(bare.next.empty());
	assert_string_equal(tiers_of("belady", bare, 2).c_str(), "mmmhh");
	// what it needs: the per-object heap, plus the next array when absent
	assert_true(dssim::belady_bytes_needed(bare) > dssim::belady_bytes_needed(t));
	assert_true(dssim::belady_bytes_needed(bare) >= bare.size() * sizeof(int64_t));
}

// ---- every policy ----------------------------------------------------------

bool same(const dssim::counters &a, const dssim::counters &b)
{
	return a.requests == b.requests && a.hits[0] == b.hits[0] && a.hits[1] == b.hits[1] &&
	       a.hits[2] == b.hits[2] && a.bytes == b.bytes && a.miss_bytes == b.miss_bytes &&
	       a.evictions == b.evictions && a.writebacks == b.writebacks &&
	       a.admissions_refused == b.admissions_refused;
}

// Entries and bytes, sizes that change between requests and some larger
// than the cache: never over capacity (checked after every request by
// replay), every request a hit or a miss, the byte counts add up, and the
// same run twice gives the same answer.
void test_every_policy_invariants(void **)
{
	prng r{ 2024 };
	for (int n = 0; n < 12; n++) {
		dssim::trace t = random_trace(r, 3000, 5 + r.below(200));
		std::vector<uint32_t> size_of(t.nobjects());
		for (auto &s : size_of)
			s = 1 + r.below(40);
		for (size_t i = 0; i < t.size(); i++) {
			if (r.below(20) == 0)	// the object changed size
				size_of[t.ids[i]] = 1 + r.below(r.below(10) == 0 ? 400 : 40);
			t.sizes.push_back(size_of[t.ids[i]]);
			t.writes.push_back(r.below(4) == 0);
		}
		t = with_next(t);
		uint64_t total = 0;
		for (uint32_t s : t.sizes)
			total += s;
		for (const auto &name : dssim::baseline_names()) {
			for (bool bytes : { false, true }) {
				const uint64_t cap = bytes ? 50 + r.below(300) : 1 + r.below(30);
				auto p = make(name.c_str(), t, cap, bytes, 9);
				const std::string a = replay(*p, t, cap);
				const dssim::counters &c = p->c;
				// what it says it holds is what it holds, each object
				// at its last request's size (no drift either way)
				std::vector<uint32_t> last(t.nobjects());
				for (size_t i = 0; i < t.size(); i++)
					last[t.ids[i]] = t.sizes[i];
				uint64_t recount = 0;
				for (uint32_t id = 0; id < t.nobjects(); id++)
					if (dssim::baseline_holds(*p, id))
						recount += bytes ? last[id] : 1;
				assert_int_equal(recount, dssim::baseline_held(*p));
				assert_int_equal(c.requests, t.size());
				assert_int_equal(c.hits[0] + c.hits[2], c.requests);
				assert_int_equal(c.hits[1], 0);
				assert_int_equal(c.bytes, total);
				assert_true(c.miss_bytes <= c.bytes);
				assert_true(c.writebacks <= c.evictions);
				if (!bytes)
					assert_int_equal(c.admissions_refused, 0);
				auto q = make(name.c_str(), t, cap, bytes, 9);
				assert_string_equal(replay(*q, t, cap).c_str(), a.c_str());
				assert_true(same(c, q->c));
			}
		}
	}
}

// Objects larger than the cache: refused by every policy, counted, and
// never held.
void test_every_policy_refuses_oversized(void **)
{
	const dssim::trace t = with_next(make_trace({ 0, 1, 0, 1, 2, 2 }, { 5, 30, 5, 30, 9, 9 }));
	for (const auto &name : dssim::baseline_names()) {
		auto p = make(name.c_str(), t, 20, true);
		const std::string tiers = replay(*p, t, 20);
		assert_int_equal(p->c.admissions_refused, 2);
		assert_int_equal(tiers[1], 'm');
		assert_int_equal(tiers[3], 'm');
	}
}

// Every object one byte: the bytes build makes the same choices as the
// entries build of the same capacity.
void test_every_policy_unit_bytes(void **)
{
	prng r{ 77 };
	for (int n = 0; n < 6; n++) {
		dssim::trace t = random_trace(r, 3000, 10 + r.below(100));
		t.sizes.assign(t.size(), 1);
		t = with_next(t);
		for (const auto &name : dssim::baseline_names()) {
			const uint64_t cap = 1 + r.below(40);
			const std::string e = tiers_of(name.c_str(), t, cap, false);
			const std::string b = tiers_of(name.c_str(), t, cap, true);
			if (e != b)
				fail_msg("%s at %llu: bytes differ from entries", name.c_str(),
					 (unsigned long long)cap);
		}
	}
}

// Behind each admission filter, and both: still never over capacity
// (replay checks), and what the filter reports holding is what the policy
// holds.
void test_every_policy_filtered(void **)
{
	prng r{ 4242 };
	dssim::trace t = random_trace(r, 3000, 150);
	for (size_t i = 0; i < t.size(); i++)
		t.sizes.push_back(1 + r.below(r.below(10) == 0 ? 400 : 40));
	t = with_next(t);
	for (const auto &name : dssim::baseline_names()) {
		for (const char *f : { "+tinylfu", "+size:30", "+tinylfu+size:30" }) {
			for (bool bytes : { false, true }) {
				const uint64_t cap = bytes ? 300 : 20;
				auto p = make((name + f).c_str(), t, cap, bytes, 9);
				replay(*p, t, cap);
				std::vector<uint32_t> last(t.nobjects());
				for (size_t i = 0; i < t.size(); i++)
					last[t.ids[i]] = t.sizes[i];
				uint64_t recount = 0;
				for (uint32_t id = 0; id < t.nobjects(); id++)
					if (dssim::baseline_holds(*p, id))
						recount += bytes ? last[id] : 1;
				assert_int_equal(recount, dssim::baseline_held(*p));
				assert_int_equal(p->c.hits[0] + p->c.hits[2], t.size());
			}
		}
	}
}

void test_names_and_refusals(void **)
{
	const std::vector<std::string> want = { "lru",	  "fifo",     "lfu",	"arc",	 "s3fifo",
						"sieve", "wtinylfu", "wtinylfu-dk", "random", "belady", "lirs",
						"2q",	  "clock",    "slru",	"lru2",	 "gdsf",
						"hyperbolic", "lecar", "cacheus", "lhd", "clockpro" };
	assert_true(dssim::baseline_names() == want);
	const dssim::trace t = make_trace({ 0, 1 });
	dssim::policy_opts o;
	o.cap.value = 4;
	assert_null(dssim::make_baseline("seed", t, o).get());
	assert_null(dssim::make_baseline("LRU", t, o).get());
	o.cap.value = 0;
	for (const auto &name : want) {
		bool threw = false;
		try {
			dssim::make_baseline(name, t, o);
		} catch (const dssim::sim_error &e) {
			threw = strstr(e.what(), "at least one entry") != nullptr;
		}
		assert_true(threw);
	}
}

// ---- each policy's defining behaviour --------------------------------------

// LFU evicts the least frequent, ties to the least recently used, and
// forgets an evicted object's count.  2 entries:
//  a a a b: a3 b1      c: evicts b (1 < 3)     a: hit, a4
//  b: evicts c (1 < 4); LRU evicted a at c and misses it after
// a b c b a, 2 entries: both at 1 when c comes: evicts a (the least
// recently used); b hit (b2); a evicts c (1 < 2).
// Forgetting: a a a b b c d b e a, 2 entries: a3 b2; c evicts b; d evicts
// c; b comes back at 1, not 3; e evicts b (1 < 3), so a still hits.  Had b
// kept its count it would tie a at 3 and a, less recent, would go.
void test_lfu(void **)
{
	const dssim::trace t = make_trace({ 0, 0, 0, 1, 2, 0, 1 });
	assert_string_equal(tiers_of("lfu", t, 2).c_str(), "mhhmmhm");
	assert_string_equal(tiers_of("lru", t, 2).c_str(), "mhhmmmm");
	const dssim::trace ties = make_trace({ 0, 1, 2, 1, 0 });
	assert_string_equal(tiers_of("lfu", ties, 2).c_str(), "mmmhm");
	const dssim::trace forget = make_trace({ 0, 0, 0, 1, 1, 2, 3, 1, 4, 0 });
	assert_string_equal(tiers_of("lfu", forget, 2).c_str(), "mhhmhmmmmh");
}

// ARC, 4 entries.  Scan resistance: a hot pair seen twice lives in T2;
// a scan of one-time objects only cycles through T1 (p stays 0: no ghost
// hits), so the pair survives it, where LRU loses it.
// Adaptation: the pair seen ten times each, then a loop 10 11 12:
//  10 m T1 [10]   11 m T1 [11 10]: full with T2 [1 0]
//  12 m: T1 (2) > p (0): 10 goes to B1
//  10 m: B1 hit, p = 1; T1 (2) > p: 11 goes to B1; 10 into T2 [10 1 0]
//  11 m: B1 hit, p = 2; T1 (1) <= p: T2's LRU 0 goes to B2; 11 into T2
//  12 h: into T2 [12 11 10 1], and the loop hits from then on
// LFU, frequency only, keeps the stale pair and never hits the loop.
void test_arc(void **)
{
	std::vector<uint32_t> ids = { 0, 1, 0, 1 };
	for (uint32_t s = 10; s < 40; s++)
		ids.push_back(s);
	ids.push_back(0);
	ids.push_back(1);
	const dssim::trace scan = make_trace(ids);
	const std::string arc = tiers_of("arc", scan, 4);
	assert_string_equal(arc.substr(arc.size() - 2).c_str(), "hh");
	const std::string lru = tiers_of("lru", scan, 4);
	assert_string_equal(lru.substr(lru.size() - 2).c_str(), "mm");

	std::vector<uint32_t> phases;
	for (int round = 0; round < 10; round++) {
		phases.push_back(0);
		phases.push_back(1);
	}
	for (int round = 0; round < 10; round++)
		for (uint32_t k = 10; k < 13; k++)
			phases.push_back(k);
	const dssim::trace t = make_trace(phases);
	const std::string a = tiers_of("arc", t, 4);
	assert_string_equal(a.substr(0, 20).c_str(), "mmhhhhhhhhhhhhhhhhhh");
	assert_string_equal(a.substr(20).c_str(), ("mmmmm" + std::string(25, 'h')).c_str());
	const std::string f = tiers_of("lfu", t, 4);
	assert_string_equal(f.substr(20).c_str(), std::string(30, 'm').c_str());
}

// S3-FIFO, 10 entries (S: 1, M: 9): five hot objects seen three times
// are in S when the cache first fills; evicting S moves them to M (freq
// > 1) and sends the one-time u1 to the ghost queue.  A flood of 100 more
// one-time objects then passes through S and the ghost queue only; M is
// never touched, so the hot five all hit afterwards.  LRU and FIFO of the
// same size lose them.
void test_s3fifo(void **)
{
	std::vector<uint32_t> ids;
	for (int round = 0; round < 3; round++)
		for (uint32_t k = 0; k < 5; k++)
			ids.push_back(k);
	for (uint32_t u = 100; u < 200; u++)
		ids.push_back(u);
	for (uint32_t k = 0; k < 5; k++)
		ids.push_back(k);
	const dssim::trace t = make_trace(ids);
	const std::string s3 = tiers_of("s3fifo", t, 10);
	assert_string_equal(s3.substr(s3.size() - 5).c_str(), "hhhhh");
	assert_int_equal(std::count(s3.begin(), s3.end(), 'm'), 105);
	for (const char *other : { "lru", "fifo" }) {
		const std::string o = tiers_of(other, t, 10);
		assert_string_equal(o.substr(o.size() - 5).c_str(), "mmmmm");
	}
	// seen once, evicted from S, seen again while in the ghost queue:
	// straight to M, where the next flood cannot reach it
	std::vector<uint32_t> g = { 0 };
	for (uint32_t u = 100; u < 110; u++)
		g.push_back(u);	// 0 is evicted to the ghost queue
	g.push_back(0);		// ghost hit: a miss, into M
	for (uint32_t u = 200; u < 300; u++)
		g.push_back(u);
	g.push_back(0);
	const dssim::trace gt = make_trace(g);
	const std::string gs = tiers_of("s3fifo", gt, 10);
	assert_int_equal(gs[11], 'm');
	assert_int_equal(gs.back(), 'h');
}

// SIEVE, 3 entries (queue newest first; * = visited):
//  a b c m [c b a]      a h [c b a*]
//  d m: the hand starts at the tail, a* -> a, then b: unvisited, evicted;
//       the hand stays at c: [d c a]
//  b m: c unvisited, evicted; hand at d: [b d a]
//  e m: d evicted (a, behind the hand, is not looked at): [e b a]
//  a h (FIFO evicted it at d; a hand restarting at the tail would at e)
// FIFO: a b c m, a h, d m (-a) [b c d], b h, e m (-b), a m
void test_sieve(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 2, 0, 3, 1, 4, 0 });
	assert_string_equal(tiers_of("sieve", t, 3).c_str(), "mmmhmmmh");
	assert_string_equal(tiers_of("fifo", t, 3).c_str(), "mmmhmhmm");
}

// W-TinyLFU, 100 entries (window 1, main 99): 99 objects seen four times
// fill main (the sketch starts at the 50th, half full: estimates 3 or 4),
// probation holding those protected's 79 entries leave.  One-off x enters
// the window; y pushes it out as a candidate against probation's LRU
// victim, estimated 3 or more against x's 1: x is refused (a one-hit
// wonder against a hot victim) and misses again, where LRU of the same
// size would hit it.  The hot 99 keep hitting.  The doorkeeper variant
// decides the same.
void test_wtinylfu(void **)
{
	std::vector<uint32_t> ids;
	for (int round = 0; round < 4; round++)
		for (uint32_t k = 0; k < 99; k++)
			ids.push_back(k);
	const uint32_t x = 500, y = 501;
	ids.push_back(x);
	ids.push_back(y);
	ids.push_back(x);
	for (uint32_t k = 0; k < 99; k++)
		ids.push_back(k);
	const dssim::trace t = make_trace(ids);
	auto p = make("wtinylfu", t, 100);
	const std::string w = replay(*p, t, 100);
	const size_t at = 4 * 99;
	assert_string_equal(w.substr(at, 3).c_str(), "mmm");
	assert_int_equal(std::count(w.begin() + at + 3, w.end(), 'h'), 99);
	const std::string l = tiers_of("lru", t, 100);
	assert_string_equal(l.substr(at, 3).c_str(), "mmh");
	const std::string dk = tiers_of("wtinylfu-dk", t, 100);
	assert_string_equal(dk.substr(at, 3).c_str(), "mmm");
	assert_int_equal(std::count(dk.begin() + at + 3, dk.end(), 'h'), 99);
}

// W-TinyLFU's hill climber, 100 entries (window 1 to start; a sample is
// 10 x 100 = 1000 requests once the sketch starts).  Three phases:
//  A, frequency: 60 hot objects drawn at random, half the requests, the
//    other half one-off objects: a high hit rate.
//  B, recency: at tick k, new object k, then k-10 and k-20: each object
//    three times about 30 requests apart, then never.  A window of 1
//    refuses them (estimate 1 or 2 against stale victims): the hit rate
//    falls, so the climber turns from its first (shrinking) direction and
//    grows the window, and keeps growing it while the rate holds or rises.
//  C, frequency again, as A: one-offs now fill the large window and the
//    hot set no longer fits main: the window shrinks back.
std::vector<uint32_t> climber_phase_freq(prng &r, uint32_t &once, size_t n)
{
	std::vector<uint32_t> ids;
	for (size_t k = 0; k < n; k++)
		ids.push_back(k % 2 ? r.below(60) : once++);
	return ids;
}

void test_wtinylfu_climber(void **)
{
	prng r{ 11 };
	uint32_t once = 1000000;
	std::vector<uint32_t> ids = climber_phase_freq(r, once, 8000);
	const size_t a_end = ids.size();
	for (uint32_t k = 0; k < 12000; k++) {
		ids.push_back(100000 + k);
		if (k >= 10)
			ids.push_back(100000 + k - 10);
		if (k >= 20)
			ids.push_back(100000 + k - 20);
	}
	const size_t b_end = ids.size();
	const std::vector<uint32_t> c = climber_phase_freq(r, once, 30000);
	ids.insert(ids.end(), c.begin(), c.end());
	std::vector<uint32_t> dense(ids.size());
	std::unordered_map<uint32_t, uint32_t> map;
	for (size_t k = 0; k < ids.size(); k++)
		dense[k] = map.emplace(ids[k], static_cast<uint32_t>(map.size())).first->second;
	const dssim::trace t = make_trace(dense);
	for (bool bytes : { false, true }) {
		dssim::trace tb = t;
		if (bytes)
			tb.sizes.assign(t.size(), 1);
		auto p = make("wtinylfu", tb, 100, bytes);
		assert_int_equal(dssim::wtinylfu_window(*p), 1);
		int64_t after_a = 0, after_b = 0;
		for (size_t i = 0; i < tb.size(); i++) {
			p->access(tb, i);
			assert_true(dssim::baseline_held(*p) <= 100);
			const int64_t w = dssim::wtinylfu_window(*p);
			if (i + 1 == a_end)
				after_a = w;
			if (i + 1 == b_end)
				after_b = w;
		}
		const int64_t end = dssim::wtinylfu_window(*p);
		assert_true(after_b > after_a + 25);
		assert_true(end < after_b - 25);
	}
	assert_int_equal(dssim::wtinylfu_window(*make("wtinylfu-dk", t, 100)), -1);
}

// Admission filters.  lru+tinylfu, 2 entries, on a hot pair and a scan:
// rounds "a b x_r", r = 1..10, each x_r a new object.  LRU: x_r evicts a,
// a evicts b, b evicts x_r: all 30 miss.  The filter admits a miss whose
// sketch estimate (this request counted) is at least 2: round 1, all
// first requests, none admitted (mmm); round 2, a and b estimated 2, both
// admitted, x_2 refused (mmm); rounds 3-10, a and b hit, the x refused
// (hhm): 3 + 3 + 8 = 14 misses, 16 fewer than LRU.
void test_filters(void **)
{
	std::vector<uint32_t> ids;
	for (uint32_t r = 0; r < 10; r++) {
		ids.push_back(0);
		ids.push_back(1);
		ids.push_back(2 + r);
	}
	const dssim::trace t = make_trace(ids);
	assert_int_equal(misses_of("lru", t, 2), 30);
	std::string want = "mmmmmm";
	for (int r = 2; r < 10; r++)
		want += "hhm";
	assert_string_equal(tiers_of("lru+tinylfu", t, 2).c_str(), want.c_str());
	assert_int_equal(misses_of("lru+tinylfu", t, 2), 14);

	// lru+size:10, 60 bytes, objects of 1..30 bytes: a request for an
	// object over 10 bytes always misses, and the rest see exactly what
	// LRU sees on the trace without those requests: nothing over 10 bytes
	// was ever cached.  In entries the filter is left out.
	prng r{ 31 };
	dssim::trace st = random_trace(r, 4000, 80);
	std::vector<uint32_t> size_of(st.nobjects());
	for (auto &sz : size_of)
		sz = 1 + r.below(30);
	std::vector<uint32_t> small_ids, small_sizes;
	for (size_t i = 0; i < st.size(); i++) {
		st.sizes.push_back(size_of[st.ids[i]]);
		if (st.sizes.back() <= 10) {
			small_ids.push_back(st.ids[i]);
			small_sizes.push_back(st.sizes.back());
		}
	}
	const std::string f = tiers_of("lru+size:10", st, 60, true);
	std::string small_tiers;
	for (size_t i = 0; i < st.size(); i++) {
		if (st.sizes[i] > 10)
			assert_int_equal(f[i], 'm');
		else
			small_tiers += f[i];
	}
	const dssim::trace sub = make_trace(small_ids, small_sizes);
	assert_string_equal(small_tiers.c_str(), tiers_of("lru", sub, 60, true).c_str());
	assert_int_equal(std::count(small_tiers.begin(), small_tiers.end(), 'h'), 963);
	assert_string_equal(tiers_of("lru+size:10", st, 7).c_str(), tiers_of("lru", st, 7).c_str());
	assert_string_equal(tiers_of("s3fifo+size:4K", st, 60, true).c_str(),
			    tiers_of("s3fifo", st, 60, true).c_str());

	// every baseline takes both filters and keeps its capacity
	for (const auto &name : dssim::baseline_names()) {
		for (const char *flt : { "+tinylfu", "+size:12", "+size:12+tinylfu" }) {
			const std::string n = name + flt;
			for (bool bytes : { false, true }) {
				const uint64_t cap = bytes ? 100 : 10;
				auto p = make(n.c_str(), with_next(st), cap, bytes, 3);
				replay(*p, with_next(st), cap);
				assert_int_equal(p->c.requests, st.size());
			}
		}
	}

	dssim::policy_opts o;
	o.cap.value = 4;
	assert_null(dssim::make_baseline("nope+tinylfu", t, o).get());
	for (const char *bad : { "lru+", "lru+bogus", "lru+size:", "lru+size:10%", "lru+size:x" }) {
		bool threw = false;
		try {
			dssim::make_baseline(bad, t, o);
		} catch (const dssim::sim_error &) {
			threw = true;
		}
		if (!threw)
			fail_msg("%s was accepted", bad);
	}
}

// Random replacement, write-back, 1 entry (the victim is forced):
//  W a m        R b m: evicts dirty a, 1 writeback   R c m: evicts clean b
//  W c h: dirty R d m: evicts dirty c, 2 writebacks  R a m: evicts clean d
// And at 4 entries on a random trace: reads only, no writebacks; the same
// seed gives the same victims, another seed (almost surely) others.
void test_random_writeback(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 2, 2, 3, 0 }, {}, { 1, 0, 0, 1, 0, 0 });
	auto p = make("random", t, 1);
	assert_string_equal(replay(*p, t, 1).c_str(), "mmmhmm");
	assert_int_equal(p->c.writebacks, 2);
	assert_int_equal(p->c.evictions, 4);

	prng r{ 5 };
	const dssim::trace rt = random_trace(r, 5000, 40);
	auto a = make("random", rt, 4, false, 1);
	const std::string sa = replay(*a, rt, 4);
	assert_int_equal(a->c.writebacks, 0);
	auto b = make("random", rt, 4, false, 1);
	assert_string_equal(replay(*b, rt, 4).c_str(), sa.c_str());
	auto d = make("random", rt, 4, false, 2);
	assert_string_not_equal(replay(*d, rt, 4).c_str(), sa.c_str());
}

// LIRS, 4 entries: the LIR set is 3, the resident HIR part 1.
// A loop over 5 objects, one more than the cache, ten times.  LRU misses
// every request.  LIRS (S top first, g non-resident; Q holds the HIR):
//  0 1 2 m: LIR (cold start)              S [2 1 0]
//  3 m: HIR                               S [3 2 1 0]      Q [3]
//  4 m: evicts 3, non-resident in S       S [4 3g 2 1 0]   Q [4]
//  0 h, 1 h: LIR at the bottom, to the top, prune
//  2 h: to the top; prune drops 3g (gone) and 4 (S only; stays in Q)
//                                         S [2 1 0]        Q [4]
//  3 m: evicts 4 (not in S: gone), 3 HIR  S [3 2 1 0]      Q [3]
//  4 m: as before: the loop's 0 1 2 stay LIR and hit, 3 and 4 share the
//  HIR slot and miss.  5 misses, then 3 hits and 2 misses a round: 27 hits.
// And a non-resident HIR object seen again becomes LIR:
//  0 1 2 m, 3 m (HIR), 4 m (evicts 3: 3g)   S [4 3g 2 1 0]  Q [4]
//  3 m: evicts 4 (4g); 3 becomes LIR, the LIR set is 4 > 3: the bottom
//       LIR 0 is demoted, resident, to Q; prune  S [3 4g 2 1]  Q [0]
//  1 h 2 h (prune drops 4g) 3 h, and 0 h: the resident HIR
//  LRU: 4 evicts 0, so 3 1 2 3 hit and 0 misses.
void test_lirs(void **)
{
	std::vector<uint32_t> loop;
	for (int round = 0; round < 10; round++)
		for (uint32_t k = 0; k < 5; k++)
			loop.push_back(k);
	const dssim::trace t = make_trace(loop);
	std::string want = "mmmmm";
	for (int round = 1; round < 10; round++)
		want += "hhhmm";
	const std::string l = tiers_of("lirs", t, 4);
	assert_string_equal(l.c_str(), want.c_str());
	assert_int_equal(std::count(l.begin(), l.end(), 'h'), 27);
	assert_int_equal(misses_of("lru", t, 4), 50);
	// the same in bytes, every object 2 bytes, 8 bytes of room
	dssim::trace b = t;
	b.sizes.assign(b.size(), 2);
	assert_string_equal(tiers_of("lirs", b, 8, true).c_str(), want.c_str());

	const dssim::trace u = make_trace({ 0, 1, 2, 3, 4, 3, 1, 2, 3, 0 });
	assert_string_equal(tiers_of("lirs", u, 4).c_str(), "mmmmmmhhhh");
	assert_string_equal(tiers_of("lru", u, 4).c_str(), "mmmmmhhhhm");
}

// 2Q, 4 entries: Kin 1, Kout 2 (A1in and A1out newest first).
//  0 1 2 3 m: A1in [3 2 1 0]   0 h 1 h: in A1in, nothing moves
//  4 m: A1in is over Kin: its tail 0 goes to A1out [0]
//  5 m: 1 goes: A1out [1 0]      A1in [5 4 3 2]
//  0 m: in A1out: out of it, 2 goes to A1out [2 1]; 0 into Am [0]
//  1 m: likewise, 3 goes: A1out [3 2]; Am [1 0]; A1in [5 4]
//  a scan of 20 one-time objects: every one misses and is room made in
//  A1in (over Kin), never in Am
//  0 h 1 h: Am survived the scan.
// LRU: 0 1 hit at 9 and 10 (4 and 5 evicted 2 and 3), then the scan
// evicts them.
void test_2q(void **)
{
	std::vector<uint32_t> ids = { 0, 1, 2, 3, 0, 1, 4, 5, 0, 1 };
	for (uint32_t s = 100; s < 120; s++)
		ids.push_back(s);
	ids.push_back(0);
	ids.push_back(1);
	const dssim::trace t = make_trace(ids);
	const std::string scan(20, 'm');
	assert_string_equal(tiers_of("2q", t, 4).c_str(), ("mmmmhhmmmm" + scan + "hh").c_str());
	assert_string_equal(tiers_of("lru", t, 4).c_str(), ("mmmmhhmmhh" + scan + "mm").c_str());
	auto p = make("2q", t, 4);
	replay(*p, t, 4);
	assert_int_equal(p->c.hits[0], 4);
	assert_int_equal(p->c.evictions, 28 - 4);
}

// CLOCK, 3 entries (queue newest first, the hand at the back; * = bit set):
//  a b c m [c b a]   a h [c b a*]
//  d m: a* gets its second chance: bit cleared, to the front [a c b];
//       b, clear, is evicted: [d a c]
//  a h [d a* c]
//  b m: c, clear, is evicted: [b d a*]
// FIFO evicts a at d and misses it next.
void test_clock(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 2, 0, 3, 0, 1 });
	assert_string_equal(tiers_of("clock", t, 3).c_str(), "mmmhmhm");
	assert_string_equal(tiers_of("fifo", t, 3).c_str(), "mmmhmmm");
	// and then a: still there, c went instead
	const dssim::trace u = make_trace({ 0, 1, 2, 0, 3, 0, 1, 0, 2 });
	assert_string_equal(tiers_of("clock", u, 3).c_str(), "mmmhmhmhm");
}

// SLRU, 5 entries: protected at most 4.  0 1 2 3 miss into probationary;
// seen again they are promoted to protected (4, full).  A scan of 20
// one-time objects goes through probationary's one free entry, each
// evicting the one before; protected is never touched, so 0 1 2 3 hit
// after it.  LRU: the scan evicts them.
// Demotion: 0 1 2 3 4 m, then hits promote 0 1 2 3 and 4: protected is 5
// > 4, so its LRU object 0 goes back to probationary; 5 m evicts it
// (probationary's only object), and 0 misses.
void test_slru(void **)
{
	std::vector<uint32_t> ids = { 0, 1, 2, 3, 0, 1, 2, 3 };
	for (uint32_t s = 100; s < 120; s++)
		ids.push_back(s);
	for (uint32_t k = 0; k < 4; k++)
		ids.push_back(k);
	const dssim::trace t = make_trace(ids);
	const std::string scan(20, 'm');
	assert_string_equal(tiers_of("slru", t, 5).c_str(), ("mmmmhhhh" + scan + "hhhh").c_str());
	assert_string_equal(tiers_of("lru", t, 5).c_str(), ("mmmmhhhh" + scan + "mmmm").c_str());

	const dssim::trace d = make_trace({ 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 1, 0 });
	assert_string_equal(tiers_of("slru", d, 5).c_str(), "mmmmmhhhhhmhm");
}

// LRU-2, 2 entries (time: HIST(1), HIST(2)):
//  t1 0 m: seen once         t2 0 h: 0 (2, 1)
//  t3 1 m: seen once (3)     t4 2 m: 1, seen once, goes before 0, seen
//                            twice, though 1 is more recent; 1 to the
//                            history
//  t5 0 h: 0 (5, 2)
//  t6 1 m: evicts 2 (seen once); 1 is remembered: (6, 3), seen twice
//  t7 2 m: remembered too: (7, 4); evicts the oldest HIST(2): 0 (2)
//  t8 0 m: remembered: (8, 5); evicts 1 (HIST(2) 3 < 2's 4)
// LRU evicts 0 at t4 and misses it at t5.
void test_lru2(void **)
{
	const dssim::trace t = make_trace({ 0, 0, 1, 2, 0, 1, 2, 0 });
	assert_string_equal(tiers_of("lru2", t, 2).c_str(), "mhmmhmmm");
	assert_string_equal(tiers_of("lru", t, 2).c_str(), "mhmmmmmm");
	// then 2 hits (1 was the victim) and 1 misses
	const dssim::trace u = make_trace({ 0, 0, 1, 2, 0, 1, 2, 0, 2, 1 });
	assert_string_equal(tiers_of("lru2", u, 2).c_str(), "mhmmhmmmhm");
}

// GDSF, 10 bytes: b (2 bytes), c (2) and a (5), each requested twice,
// in that order, then d (1) fills the cache: H = L + freq / size with
// L = 0: a 2/5 = 0.4, b 2/2 = 1, c 1, d 1/1 = 1.  e (1) needs a byte: a,
// as frequent as b and c but larger, is evicted (L = 0.4), though LRU
// would evict b, the least recent.  b and c then hit.
// LRU: e evicts b; b evicts c (11 > 10); c evicts a.
void test_gdsf(void **)
{
	//                                 b  c  a  b  c  a  d  e  b  c
	const dssim::trace t = make_trace({ 1, 2, 0, 1, 2, 0, 3, 4, 1, 2 },
					  { 2, 2, 5, 2, 2, 5, 1, 1, 2, 2 });
	auto p = make("gdsf", t, 10, true);
	assert_string_equal(replay(*p, t, 10).c_str(), "mmmhhhmmhh");
	assert_int_equal(p->c.evictions, 1);
	assert_int_equal(dssim::baseline_held(*p), 6);
	assert_string_equal(tiers_of("lru", t, 10, true).c_str(), "mmmhhhmmmm");
	// In entries every object weighs 1: LFU with dynamic aging, which lets
	// an old favourite go.  2 entries, 0 0 0 1 2 3 4 0:
	//  0 thrice: H 3       1 m: H 1
	//  2 m: evicts 1 (L = 1), H 2        3 m: evicts 2 (L = 2), H 3
	//  4 m: 0 and 3 tie at 3; 0, less recent, goes; 0 then misses
	// LFU keeps 0 (count 3) for good and hits it.
	const dssim::trace u = make_trace({ 0, 0, 0, 1, 2, 3, 4, 0 });
	assert_string_equal(tiers_of("gdsf", u, 2).c_str(), "mhhmmmmm");
	assert_string_equal(tiers_of("lfu", u, 2).c_str(), "mhhmmmmh");
}

// Hyperbolic, 3 entries (fewer than 64: every object is looked at), time
// counting requests from 1; priority n / t, n its requests since it came,
// t the time since:
//  0 five times (t1..t5), 1 m (t6), 2 m (t7)
//  3 m (t8): 0 5/7 = 0.71, 1 1/2 = 0.5, 2 1/1 = 1: 1 goes, not the old 0
//  0 h (t9).  LRU evicts 0 at t8 and misses it.
// A frequent object that stops being requested loses out in the end:
// then 4 (t10): 0 6/9 = 0.67, 2 1/3 = 0.33, 3 1/2 = 0.5: 2 goes;
// 5 (t11): 0 6/10, 3 1/3, 4 1/1: 3 goes; 2 m (t12): 0 6/11 = 0.55,
// 4 1/2, 5 1/1: 4 goes; 6 (t13): 0 6/12 = 0.5, 5 1/2 = 0.5 (tie: the
// older, 0), 2 1/1: 0 goes, and misses at t14.
void test_hyperbolic(void **)
{
	const dssim::trace t = make_trace({ 0, 0, 0, 0, 0, 1, 2, 3, 0 });
	assert_string_equal(tiers_of("hyperbolic", t, 3).c_str(), "mhhhhmmmh");
	assert_string_equal(tiers_of("lru", t, 3).c_str(), "mhhhhmmmm");
	const dssim::trace u = make_trace({ 0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 2, 6, 0 });
	assert_string_equal(tiers_of("hyperbolic", u, 3).c_str(), "mhhhhmmmhmmmmm");
	// past 64 cached objects it samples: the same seed, the same victims
	prng r{ 11 };
	const dssim::trace rt = random_trace(r, 20000, 600);
	auto a = make("hyperbolic", rt, 200, false, 1);
	const std::string sa = replay(*a, rt, 200);
	auto b = make("hyperbolic", rt, 200, false, 1);
	assert_string_equal(replay(*b, rt, 200).c_str(), sa.c_str());
	auto d = make("hyperbolic", rt, 200, false, 2);
	assert_string_not_equal(replay(*d, rt, 200).c_str(), sa.c_str());
}

// A regret-weighted policy's draw between its two experts over 32 seeds,
// at 2 entries: evicting by the first expert gives the hits first_hits
// and moves its weight to moved; by the second, second_hits and 0.5
// kept.  Both draws must occur.
static void expert_draws(const char *name, const dssim::trace &t,
			 double (*weight)(const dssim::policy &), const char *first_hits,
			 double moved, const char *second_hits)
{
	int by_first = 0, by_second = 0;
	for (uint64_t seed = 1; seed <= 32; seed++) {
		auto p = make(name, t, 2, false, seed);
		const std::string s = replay(*p, t, 2);
		const double w = weight(*p);
		if (s == first_hits) {
			by_first++;
			assert_true(std::fabs(w - moved) < 1e-12);
		} else {
			by_second++;
			assert_string_equal(s.c_str(), second_hits);
			assert_true(w == 0.5);
		}
	}
	assert_true(by_first > 0 && by_second > 0);
}

// LeCaR, 2 entries (N = 2: histories of 1, d = 0.005^(1/2)): 0 0 0 1 2 0.
// At 2 (t5) the experts disagree: LRU's victim is 0 (last seen at t3),
// LFU's is 1 (count 1 against 3).  Evicting by LRU (probability 0.5) puts
// 0 in H_LRU, and 0's miss at t6, one request later, is LRU's regret:
// w_LFU = 0.5 e^(0.45 d), so w_LRU = 1 / (1 + e^(0.45 d)) = 0.49205.
// Evicting by LFU puts 1 in H_LFU, 0 hits, the weights stay at 0.5.
// Over 32 seeds both happen, each exactly so.
// Then a trace LFU wins: 100 entries, rounds of 50 hot objects and 60
// one-time ones.  Every request is 110 distinct objects from its
// object's previous one, so LRU never hits.  Each hot object LRU's choice
// evicts comes back 10 or so requests later, a regret of 0.005^(10/100)
// = 0.59 that multiplies w_LFU by e^(0.45 * 0.59) = 1.3, while LFU's
// victims (one-time objects) never come back: w_LRU falls to almost 0
// (about 0.01 after 40 rounds) and LeCaR keeps the hot objects: of
// 1950 requests to them after the first round about 1880 hits (random
// choices: the bound is 1800).
void test_lecar(void **)
{
	const dssim::trace t = make_trace({ 0, 0, 0, 1, 2, 0 });
	const double moved = 1 / (1 + std::exp(0.45 * std::sqrt(0.005)));
	assert_true(std::fabs(moved - 0.49205) < 1e-5);
	expert_draws("lecar", t, dssim::lecar_lru_weight, "mhhmmm", moved, "mhhmmh");
	assert_true(dssim::lecar_lru_weight(*make("lru", t, 2)) < 0);

	std::vector<uint32_t> ids;
	uint32_t once = 1000;
	for (int round = 0; round < 40; round++) {
		for (uint32_t k = 0; k < 50; k++)
			ids.push_back(k);
		for (int k = 0; k < 60; k++)
			ids.push_back(once++);
	}
	const dssim::trace lf = make_trace(ids);
	assert_int_equal(misses_of("lru", lf, 100), lf.size());
	for (uint64_t seed = 1; seed <= 4; seed++) {
		auto p = make("lecar", lf, 100, false, seed);
		replay(*p, lf, 100);
		assert_true(dssim::lecar_lru_weight(*p) < 0.05);
		assert_true(p->c.hits[0] > 1800);
	}
}

// CACHEUS, 2 entries (N = 2: histories of 1, d = 0.005^(1/2), windows of
// 2 requests, SR's target 1): 0 1 2 0.  At 2 (t3) the experts disagree:
// SR-LRU's victim is SR's LRU end, 0; CR-LFU's, among the least frequent
// (0 and 1, once each), the most recently used, 1 (LeCaR's LFU would
// name 0 too).  The first window (t1, t2: no hits) moved lambda from 0.45:
// the hit rate did not rise (0 - 0) while lambda had (0.45 - 0), so it
// falls by |0.45 * 0.45| to 0.2475.  Evicting by SR-LRU (probability 0.5)
// puts 0 in H_SR, and its miss at t4 one request later is SR-LRU's
// regret at that lambda: w_SR = 1 / (1 + e^(0.2475 d)) = 0.49562 (LeCaR's
// fixed 0.45 would give 0.49205); by CR-LFU, 0 hits and w_SR stays 0.5.
// Then lambda by hand, 4 entries (windows of 4): 0-3 all miss (hit rate
// 0, lambda 0.45 -> 0.2475 as above); 0-3 again all hit (the hit rate
// rose by 1 while lambda fell by 0.2025: opposite signs, it falls on,
// by |0.2475 * 0.2025|); 4-7 all miss (the hit rate fell by 1 and lambda
// had fallen: same signs, it rises by |lambda * its last change|).
void test_cacheus(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 2, 0 });
	const double d = std::sqrt(0.005);
	const double moved = 1 / (1 + std::exp(0.2475 * d));
	assert_true(std::fabs(moved - 0.49562) < 1e-5);
	expert_draws("cacheus", t, dssim::cacheus_sr_weight, "mmmm", moved, "mmmh");
	assert_true(dssim::cacheus_sr_weight(*make("lecar", t, 2)) < 0);
	assert_true(dssim::cacheus_learning_rate(*make("lru", t, 2)) < 0);

	const dssim::trace u = make_trace({ 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7 });
	auto p = make("cacheus", u, 4);
	std::string s;
	std::vector<double> lr;
	for (size_t i = 0; i < u.size(); i++) {
		s += p->access(u, i) == 0 ? 'h' : 'm';
		if (i % 4 == 3)
			lr.push_back(dssim::cacheus_learning_rate(*p));
	}
	assert_string_equal(s.c_str(), "mmmmhhhhmmmm");
	const double l1 = 0.45 - 0.45 * 0.45, l2 = l1 - l1 * (0.45 - l1);
	const double l3 = l2 + l2 * (l1 - l2);
	assert_true(std::fabs(lr[0] - 0.2475) < 1e-12 && std::fabs(lr[0] - l1) < 1e-12);
	assert_true(std::fabs(lr[1] - 0.19738125) < 1e-12 && std::fabs(lr[1] - l2) < 1e-12);
	assert_true(std::fabs(lr[2] - l3) < 1e-12 && lr[2] > lr[1]);
}

// LHD, 4 entries (fewer than 64: every object is looked at; ages are not
// coarsened; reconfigured every 64 requests).  Rounds of 0 and three
// objects seen once, 0 a b c, 0 d e f, ...: 0 hits at age 4 each round.
// Before the first reconfiguration the density 1 / (age + 1) evicts the
// oldest, a one-time object (0 is at most 3 old at a miss).  At it (t64)
// 0 has had 15 hits, one in each class 0..14, at age 4, and is in class
// 15, which has no events yet and takes class 14's densities: 1 / (5 -
// age) up to age 4; class 0 has that hit against ~45 evictions: a
// one-time object's density is below 1 / 45.  From then on class 15's
// only events are 0's hits at age 4: its density there is 1.  After
// 100 rounds (the last 0 a b c), one more, d, and 0: at d 0 is 4 old,
// LRU's victim, but of the highest density: LHD evicts a one-time object
// and 0 hits; LRU misses it.  (At 5 old it would go: no hit of class 15
// ever came later than age 4, its density there is 0.)
// Bytes, before any reconfiguration (density 1 / (age + 1) / size), 12
// bytes: 0 (2 bytes), 1 (8), 2 (2), then 3 (2) at t4: 0 is 3 old, 1/8;
// 1 is 2 old, 1/24; 2, 1/4: the larger, younger 1 goes, and 0 hits.
void test_lhd(void **)
{
	std::vector<uint32_t> ids;
	std::string want;
	uint32_t once = 1;
	for (int round = 0; round < 100; round++) {
		ids.push_back(0);
		for (int k = 0; k < 3; k++)
			ids.push_back(once++);
		want += round ? "hmmm" : "mmmm";
	}
	ids.push_back(once++);
	ids.push_back(0);
	const dssim::trace t = make_trace(ids);
	assert_string_equal(tiers_of("lhd", t, 4).c_str(), (want + "mh").c_str());
	assert_string_equal(tiers_of("lru", t, 4).c_str(), (want + "mm").c_str());
	ids.back() = once++;
	ids.push_back(0);
	const dssim::trace late = make_trace(ids);
	assert_string_equal(tiers_of("lhd", late, 4).c_str(), (want + "mmm").c_str());
	const dssim::trace b = make_trace({ 0, 1, 2, 3, 0 }, { 2, 8, 2, 2, 2 });
	assert_string_equal(tiers_of("lhd", b, 12, true).c_str(), "mmmmh");
	assert_string_equal(tiers_of("lru", b, 12, true).c_str(), "mmmmm");
}

// CLOCK-Pro, 4 entries: m_c = 1 (1% of 4, at least 1), hot at most 3.
//  0 1 2 enter hot (the cold start), 3 cold in its test period.
//  4: HAND_cold finds 3 (bit clear): evicted, a test entry.  4 enters cold.
//  3 (t6): a miss on a test entry; room first: 4 is evicted (a test
//     entry).  3 turns hot at the head and m_c becomes 2: hot at most 2,
//     so HAND_hot, from the tail, turns 0 and 1 (bits clear) cold.
//  A scan 5..11 evicts only cold objects (0, 1, then each newcomer);
//  test periods that end unrequested take m_c back to 1, but no cold
//  object is requested again: 2 and 3 stay hot through it and hit, and 0,
//  turned cold, was evicted.  LRU hits 3 at t6 (its cold part is all 4)
//  but the scan flushes it.
void test_clockpro(void **)
{
	const dssim::trace t = make_trace({ 0, 1, 2, 3, 4, 3, 5, 6, 7, 8, 9, 10, 11, 3, 2, 0 });
	assert_string_equal(tiers_of("clockpro", t, 4).c_str(), "mmmmmmmmmmmmmhhm");
	assert_string_equal(tiers_of("lru", t, 4).c_str(), "mmmmmhmmmmmmmmmm");
	// a test entry requested again turns hot: 3, evicted cold (t5), back
	// at t6 and hot, outlives the scan; 4, which was not requested, does
	// not
	const dssim::trace u = make_trace({ 0, 1, 2, 3, 4, 3, 5, 6, 7, 8, 9, 10, 11, 3, 4 });
	assert_string_equal(tiers_of("clockpro", u, 4).c_str(), "mmmmmmmmmmmmmhm");
}

// ---- capacity --------------------------------------------------------------

dssim::capacity cap_of(const char *s, const dssim::trace &t)
{
	return dssim::parse_capacity(s, t);
}

// POLICY/lru: L1 is POLICY exactly, and L2 an LRU of L1's misses: the
// composition's tiers equal POLICY alone on the trace, then LRU alone on
// the requests POLICY missed.  Sizes in bytes and other L2s are refused.
// what the sim_error that f throws says contains needle
template <typename F> void expect_sim_error(F f, const char *needle)
{
	try {
		f();
		fail_msg("no error; expected one with \"%s\"", needle);
	} catch (const dssim::sim_error &e) {
		if (!strstr(e.what(), needle))
			fail_msg("\"%s\" does not say \"%s\"", e.what(), needle);
	}
}

void test_two_tier(void **)
{
	const dssim::trace t = dssim::generate("zipf:alpha=0.8,objects=3000,requests=60k,seed=5");
	for (const char *l1 : { "s3fifo", "arc", "lirs+tinylfu" }) {
		dssim::policy_opts o;
		o.cap = dssim::capacity{ 150, false };
		o.l2_entries = 600;
		auto both = dssim::make_policy(std::string(l1) + "/lru", t, o);
		auto alone = make(l1, t, 150);
		dssim::trace missed = t;
		missed.ids.clear();
		std::string tiers, l1_both, l1_alone;

		assert_true(both->tiered);
		for (size_t i = 0; i < t.size(); i++) {
			const int tier = both->access(t, i);
			const bool hit = alone->access(t, i) == 0;

			tiers += char('0' + tier);
			l1_both += tier == 0 ? 'h' : 'm';
			l1_alone += hit ? 'h' : 'm';
			if (!hit)
				missed.ids.push_back(t.ids[i]);
		}
		// the same L1 hits, request by request
		assert_true(l1_both == l1_alone);
		both->finish();
		auto l2 = make("lru", missed, 600);
		std::string l2_tiers;
		for (size_t i = 0; i < missed.size(); i++)
			l2_tiers += l2->access(missed, i) == 0 ? '1' : '2';
		tiers.erase(std::remove(tiers.begin(), tiers.end(), '0'), tiers.end());
		assert_string_equal(tiers.c_str(), l2_tiers.c_str());
		assert_int_equal(both->c.requests, t.size());
		assert_int_equal(both->c.hits[0], t.size() - missed.size());
		assert_true(both->c.hits[1] > 0 && both->c.hits[2] > 0);
		assert_int_equal(both->c.promotions, both->c.hits[1]);
	}
	dssim::policy_opts o;
	o.cap = dssim::capacity{ 100, false };
	expect_sim_error([&] { dssim::make_policy("s3fifo/fifo", t, o); }, "L2 of a two-tier policy is lru");
	expect_sim_error([&] { dssim::make_policy("nope/lru", t, o); }, "no single-tier policy");
	o.cap.bytes = true;
	expect_sim_error([&] { dssim::make_policy("s3fifo/lru", t, o); }, "counts entries");
}

void assert_refused(const char *s, const dssim::trace &t, const char *why)
{
	bool threw = false;
	try {
		dssim::parse_capacity(s, t);
	} catch (const dssim::sim_error &e) {
		threw = true;
		if (!strstr(e.what(), why))
			fail_msg("\"%s\": \"%s\" does not say \"%s\"", s, e.what(), why);
	}
	if (!threw)
		fail_msg("\"%s\" was accepted", s);
}

void test_parse_capacity(void **)
{
	std::vector<uint32_t> ids;
	for (uint32_t k = 0; k < 200; k++)
		ids.push_back(k);
	const dssim::trace t = make_trace(ids);

	struct {
		const char *s;
		uint64_t value;
		bool bytes;
	} ok[] = {
		{ "1000", 1000, false },   { " 12 ", 12, false },	{ "1", 1, false },
		{ "4096B", 4096, true },   { "64K", 65536, true },	{ "64k", 65536, true },
		{ "64KB", 65536, true },   { "64KiB", 65536, true },	{ "1MB", 1048576, true },
		{ "1m", 1048576, true },   { "1.5M", 1572864, true },	{ "2G", 2147483648ull, true },
		{ "2GiB", 2147483648ull, true }, { "1T", 1ull << 40, true }, { "10%", 20, false },
		{ "0.5%", 1, false },	   { "100%", 200, false },	{ "2.5%", 5, false },
	};
	for (const auto &e : ok) {
		const dssim::capacity c = cap_of(e.s, t);
		if (c.value != e.value || c.bytes != e.bytes)
			fail_msg("\"%s\": %llu %s", e.s, (unsigned long long)c.value,
				 c.bytes ? "bytes" : "entries");
	}

	// with sizes, a share is of the footprint: each object's first size
	dssim::trace s = make_trace({ 0, 1, 0, 2 }, { 100, 200, 900, 700 });
	const dssim::capacity c = cap_of("50%", s);
	assert_true(c.bytes);
	assert_int_equal(c.value, 500);

	assert_refused("0", t, "size 0: a cache needs room for at least one entry");
	assert_refused("0K", t, "at least one entry");
	assert_refused("0.0001K", t, "at least one entry");
	assert_refused("0%", t, "at least one entry");
	assert_refused("0.1%", t, "is 0");
	assert_refused("", t, "empty");
	assert_refused("   ", t, "empty");
	assert_refused("abc", t, "not a size");
	assert_refused("K", t, "not a size");
	assert_refused(".", t, "not a size");
	assert_refused("-5", t, "negative");
	assert_refused("10X", t, "unknown unit");
	assert_refused("10 K", t, "unknown unit");
	assert_refused("10KK", t, "unknown unit");
	assert_refused("1.5", t, "whole");
	assert_refused("101%", t, "at most 100%");
	assert_refused("99999999999999999999999", t, "too large");
	assert_refused("99999999999G", t, "too large");
	const dssim::trace empty{};
	assert_refused("10%", empty, "is 0");
}

}  // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_fifo_by_hand),
		cmocka_unit_test(test_lru_bytes_by_hand),
		cmocka_unit_test(test_cloudphysics_lru_fifo),
		cmocka_unit_test(test_belady_is_optimal),
		cmocka_unit_test(test_belady_below_every_policy),
		cmocka_unit_test(test_belady_bypass),
		cmocka_unit_test(test_every_policy_invariants),
		cmocka_unit_test(test_every_policy_refuses_oversized),
		cmocka_unit_test(test_every_policy_unit_bytes),
		cmocka_unit_test(test_every_policy_filtered),
		cmocka_unit_test(test_names_and_refusals),
		cmocka_unit_test(test_lfu),
		cmocka_unit_test(test_arc),
		cmocka_unit_test(test_s3fifo),
		cmocka_unit_test(test_sieve),
		cmocka_unit_test(test_wtinylfu),
		cmocka_unit_test(test_wtinylfu_climber),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_random_writeback),
		cmocka_unit_test(test_lirs),
		cmocka_unit_test(test_2q),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_slru),
		cmocka_unit_test(test_lru2),
		cmocka_unit_test(test_gdsf),
		cmocka_unit_test(test_hyperbolic),
		cmocka_unit_test(test_lecar),
		cmocka_unit_test(test_cacheus),
		cmocka_unit_test(test_lhd),
		cmocka_unit_test(test_clockpro),
		cmocka_unit_test(test_two_tier),
		cmocka_unit_test(test_parse_capacity),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
