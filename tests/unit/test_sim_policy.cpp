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

// Deliberately naive: a slot array searched linearly for the key, and for
// the oldest stamp (last use for LRU, insertion for FIFO) to evict.
uint64_t naive_misses(const std::vector<uint64_t> &raw, size_t cap, bool lru)
{
	std::vector<uint64_t> keys, stamps;
	uint64_t misses = 0;
	for (size_t i = 0; i < raw.size(); i++) {
		const auto it = std::find(keys.begin(), keys.end(), raw[i]);
		if (it != keys.end()) {
			if (lru)
				stamps[it - keys.begin()] = i;
			continue;
		}
		misses++;
		if (keys.size() < cap) {
			keys.push_back(raw[i]);
			stamps.push_back(i);
			continue;
		}
		const size_t v = std::min_element(stamps.begin(), stamps.end()) - stamps.begin();
		keys[v] = raw[i];
		stamps[v] = i;
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

void test_names_and_refusals(void **)
{
	const std::vector<std::string> want = { "lru",	  "fifo",     "lfu",	"arc",	 "s3fifo",
						"sieve", "wtinylfu", "random", "belady" };
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
// fill main.  One-off x enters the window; y pushes it out as a candidate
// against main's victim, estimated 4 against x's 1: x is refused and
// misses again, where LRU of the same size would hit it.  The hot 99 keep
// hitting.
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

// ---- capacity --------------------------------------------------------------

dssim::capacity cap_of(const char *s, const dssim::trace &t)
{
	return dssim::parse_capacity(s, t);
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
		cmocka_unit_test(test_names_and_refusals),
		cmocka_unit_test(test_lfu),
		cmocka_unit_test(test_arc),
		cmocka_unit_test(test_s3fifo),
		cmocka_unit_test(test_sieve),
		cmocka_unit_test(test_wtinylfu),
		cmocka_unit_test(test_random_writeback),
		cmocka_unit_test(test_parse_capacity),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
