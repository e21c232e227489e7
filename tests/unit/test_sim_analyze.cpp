// SPDX-License-Identifier: BSD-2-Clause
// dssim's trace processing: writing every format and reading it back,
// filtering by request range and operation, and the analysis (top keys,
// reuse distances checked against brute force and an LRU run, working
// set per window).
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "analyze.hpp"
#include "run.hpp"
#include "sim.hpp"
#include "stack_distance.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

#include "sim_test_util.hpp"

namespace {

using namespace simtest;

// ---- files and helpers -----------------------------------------------------------


bool exists(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0;
}

dssim::trace read(const std::string &path, const char *format, const char *csv = nullptr)
{
	dssim::read_opts o;
	o.format = format;
	try {
		if (csv)
			o.csv = dssim::parse_csv_map(csv);
		return dssim::read_trace(path, o);
	} catch (const dssim::sim_error &e) {
		fail_msg("%s", e.what());
	}
	return {};
}

void write(const dssim::trace &t, const std::string &path, const char *format)
{
	try {
		dssim::write_trace(t, path, format);
	} catch (const dssim::sim_error &e) {
		fail_msg("%s", e.what());
	}
}

dssim::trace filter(const dssim::trace &t, uint64_t from, uint64_t to, int op)
{
	try {
		return dssim::filter_trace(t, from, to, op);
	} catch (const dssim::sim_error &e) {
		fail_msg("%s", e.what());
	}
	return {};
}

template <typename T, typename W>
void assert_vec(const std::vector<T> &got, std::initializer_list<W> want)
{
	assert_int_equal(got.size(), want.size());
	size_t i = 0;
	for (W w : want) {
		if (got[i] != static_cast<T>(w))
			fail_msg("element %zu: %lld, want %lld", i, static_cast<long long>(got[i]),
				 static_cast<long long>(w));
		i++;
	}
}

std::vector<uint64_t> key_sequence(const dssim::trace &t)
{
	std::vector<uint64_t> out;
	for (uint32_t id : t.ids)
		out.push_back(t.keys[id]);
	return out;
}

// keys 5 6 5 7 6 8 5 9 with writes, sizes, times, eids and types
dssim::trace mixed_trace()
{
	dssim::trace t = trace_of({ 5, 6, 5, 7, 6, 8, 5, 9 });
	t.writes = { 0, 1, 1, 0, 1, 0, 0, 1 };
	t.sizes = { 10, 20, 30, 40, 50, 60, 70, 80 };
	t.times_ns = { 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000 };
	t.eids = { 105, 106, 107, 108, 109 };
	t.types = { 1, 2, 3, 1, 2 };
	return t;
}

// ---- write_trace -------------------------------------------------------------------

void test_csv_exact(void **)
{
	dssim::trace t = mixed_trace();
	std::string path = tmp_path("mixed.csv");
	write(t, path, "csv");
	assert_string_equal(slurp(path).c_str(), "time_ns,key,size,op\n"
						 "1000,5,10,read\n"
						 "2000,6,20,write\n"
						 "3000,5,30,write\n"
						 "4000,7,40,read\n"
						 "5000,6,50,write\n"
						 "6000,8,60,read\n"
						 "7000,5,70,read\n"
						 "8000,9,80,write\n");

	// no times, sizes or writes: 0, 1 and read
	dssim::trace bare = trace_of({ 3, 18446744073709551615ULL, 3 });
	std::string bare_path = tmp_path("bare.csv");
	write(bare, bare_path, "CSV");
	assert_string_equal(slurp(bare_path).c_str(), "time_ns,key,size,op\n"
						      "0,3,1,read\n"
						      "0,18446744073709551615,1,read\n"
						      "0,3,1,read\n");
}

void test_csv_round_trip(void **)
{
	dssim::trace t = gen("zipf:requests=20000,objects=3000,write=0.3,size=4096,seed=7");
	assert_false(t.writes.empty());
	t.times_ns.resize(t.size());
	for (size_t i = 0; i < t.size(); i++)
		t.times_ns[i] = 1000000007ULL * i + 13;
	t.sizes.resize(t.size());
	for (size_t i = 0; i < t.size(); i++)
		t.sizes[i] = uint32_t(i % 5000 + 1);

	std::string path = tmp_path("zipf.csv");
	write(t, path, "csv");
	dssim::trace r = read(path, "csv", "time=1,id=2,size=3,op=4,header");
	assert_true(key_sequence(r) == key_sequence(t));
	assert_true(r.ids == t.ids);	// same first-seen order: same dense ids
	assert_true(r.times_ns == t.times_ns);
	assert_true(r.sizes == t.sizes);
	assert_true(r.writes == t.writes);
}

void test_text_round_trip(void **)
{
	dssim::trace t = gen("zipf:requests=20000,objects=3000,seed=3+scan:objects=100");
	std::string path = tmp_path("zipf.txt");
	write(t, path, "text");
	dssim::trace r = read(path, "text");
	assert_int_equal(r.size(), t.size());
	assert_true(key_sequence(r) == key_sequence(t));

	std::string small = tmp_path("small.txt");
	write(trace_of({ 0, 42, 0, 7 }), small, "text");
	assert_string_equal(slurp(small).c_str(), "0\n42\n0\n7\n");
}

void test_oracle_round_trip(void **)
{
	// read from oracleGeneral: next is there and is written as is
	dssim::trace t = gen("zipf:requests=10000,objects=2000,size=512,seed=5");
	dssim::compute_next(t);
	std::string path = tmp_path("a.oracleGeneral.bin");
	write(t, path, "oracleGeneral");
	dssim::trace r = read(path, "oracleGeneral");
	assert_true(key_sequence(r) == key_sequence(t));
	assert_true(r.sizes == t.sizes);
	assert_true(r.next == t.next);

	// a filtered trace has no next: write_trace computes it
	dssim::trace f = filter(mixed_trace(), 1, 100, -1);
	assert_true(f.next.empty());
	std::string fpath = tmp_path("f.oracleGeneral.bin");
	write(f, fpath, "oraclegeneral");
	dssim::trace fr = read(fpath, "oracleGeneral");
	assert_vec(key_sequence(fr), { 6, 5, 7, 6, 8, 5, 9 });
	assert_vec(fr.sizes, { 20, 30, 40, 50, 60, 70, 80 });
	assert_vec(fr.next, { 3, 5, -1, -1, -1, -1, -1 });
	assert_int_equal(slurp(fpath).size(), 7 * 24);
}

void test_write_errors(void **)
{
	dssim::trace t = mixed_trace();
	std::string path = tmp_dir + "/never.out";
	assert_has(error_of([&] { dssim::write_trace(t, path, "parquet"); }),
		   { "never.out", "unknown output format", "parquet" });
	assert_has(error_of([&] { dssim::write_trace(t, path, ""); }),
		   { "never.out", "unknown output format" });
	assert_false(exists(path));

	for (const char *format : { "csv", "text", "oracleGeneral" }) {
		std::string missing = tmp_dir + "/no/such/dir/x";
		assert_has(error_of([&] { dssim::write_trace(t, missing, format); }),
			   { "/no/such/dir/x", "cannot write" });
		// the disk fills up: the data never reaches the file
		assert_has(error_of([&] { dssim::write_trace(t, "/dev/full", format); }),
			   { "/dev/full", "cannot write" });
	}
}

// ---- filter_trace ------------------------------------------------------------------

void test_filter_range_op(void **)
{
	dssim::trace t = mixed_trace();

	// writes among requests 1..6: 1 (6), 2 (5), 4 (6)
	dssim::trace w = filter(t, 1, 7, 1);
	assert_vec(w.ids, { 0, 1, 0 });
	assert_vec(w.keys, { 6, 5 });
	assert_vec(w.sizes, { 20, 30, 50 });
	assert_vec(w.times_ns, { 2000, 3000, 5000 });
	assert_vec(w.writes, { 1, 1, 1 });
	assert_vec(w.eids, { 106, 105 });
	assert_vec(w.types, { 2, 1 });
	assert_true(w.next.empty());
	assert_string_equal(w.name.c_str(), "hand");

	// reads from 2 on, to clamped: 3 (7), 5 (8), 6 (5)
	dssim::trace r = filter(t, 2, 1000, 0);
	assert_vec(r.ids, { 0, 1, 2 });
	assert_vec(r.keys, { 7, 8, 5 });
	assert_vec(r.sizes, { 40, 60, 70 });
	assert_vec(r.times_ns, { 4000, 6000, 7000 });
	assert_vec(r.writes, { 0, 0, 0 });
	assert_vec(r.eids, { 107, 108, 105 });
	assert_vec(r.types, { 3, 1, 1 });

	// everything in 0..2
	dssim::trace a = filter(t, 0, 3, -1);
	assert_vec(a.ids, { 0, 1, 0 });
	assert_vec(a.keys, { 5, 6 });
	assert_vec(a.writes, { 0, 1, 1 });

	// the whole trace, unchanged but for next
	dssim::trace all = filter(t, 0, UINT64_MAX, -1);
	assert_true(all.ids == t.ids && all.keys == t.keys && all.sizes == t.sizes &&
		    all.times_ns == t.times_ns && all.writes == t.writes && all.eids == t.eids &&
		    all.types == t.types);

	// a trace without writes is all reads; optional fields stay empty
	dssim::trace bare = trace_of({ 1, 2, 3, 2 });
	dssim::trace br = filter(bare, 1, 4, 0);
	assert_vec(br.ids, { 0, 1, 0 });
	assert_vec(br.keys, { 2, 3 });
	assert_true(br.sizes.empty() && br.times_ns.empty() && br.writes.empty() &&
		    br.eids.empty() && br.types.empty());

	// a generated trace: the split by op partitions it
	dssim::trace g = gen("zipf:requests=5000,objects=400,write=0.25,seed=11");
	dssim::trace gr = filter(g, 0, g.size(), 0), gw = filter(g, 0, g.size(), 1);
	assert_int_equal(gr.size() + gw.size(), g.size());
	size_t ri = 0, wi = 0;
	for (size_t i = 0; i < g.size(); i++) {
		const dssim::trace &part = g.is_write(i) ? gw : gr;
		size_t &j = g.is_write(i) ? wi : ri;
		assert_int_equal(part.keys[part.ids[j]], g.keys[g.ids[i]]);
		j++;
	}
	// ids are dense in first-seen order
	for (const dssim::trace *p : { &gr, &gw }) {
		uint32_t seen = 0;
		for (uint32_t id : p->ids) {
			assert_true(id <= seen);
			seen += id == seen;
		}
		assert_int_equal(seen, p->nobjects());
	}
}

void test_filter_empty(void **)
{
	dssim::trace t = mixed_trace();
	auto keeps_none = [&](uint64_t from, uint64_t to, int op) {
		assert_has(error_of([&] { dssim::filter_trace(t, from, to, op); }),
			   { "filter keeps no request of hand" });
	};
	keeps_none(8, 100, -1);	// past the end
	keeps_none(5, 3, -1);	// from after to
	keeps_none(3, 3, -1);
	keeps_none(3, 4, 1);	// request 3 is a read
	keeps_none(5, 7, 1);
	dssim::trace reads = trace_of({ 1, 2 });
	reads.name = "reads.txt";
	assert_has(error_of([&] { dssim::filter_trace(reads, 0, 2, 1); }),
		   { "filter keeps no request of reads.txt" });
	assert_has(error_of([&] { dssim::filter_trace(t, 0, 8, 2); }), { "op 2" });
	assert_has(error_of([&] { dssim::filter_trace(t, 0, 8, -2); }), { "op -2" });
}

// ---- reuse distances ----------------------------------------------------------------

// Distinct objects in (previous request to the same object, i], brute force
std::vector<uint64_t> brute_distances(const dssim::trace &t)
{
	std::vector<uint64_t> out;
	for (size_t i = 0; i < t.size(); i++) {
		size_t p = i;
		while (p-- > 0 && t.ids[p] != t.ids[i])
			;
		if (p == size_t(-1)) {
			out.push_back(0);
			continue;
		}
		std::set<uint32_t> seen(t.ids.begin() + ptrdiff_t(p) + 1,
					t.ids.begin() + ptrdiff_t(i) + 1);
		out.push_back(seen.size());
	}
	return out;
}

void test_distance_convention(void **)
{
	// A A B A C B A: 0 1 0 2 0 3 3
	dssim::trace t = trace_of({ 1, 1, 2, 1, 3, 2, 1 });
	dssim::stack_distance sd(t);
	std::vector<uint64_t> d;
	for (size_t i = 0; i < t.size(); i++)
		d.push_back(sd.next(i, t.ids[i]));
	assert_vec(d, { 0, 1, 0, 2, 0, 3, 3 });
	assert_true(d == brute_distances(t));
}

dssim::trace random_trace(size_t n, uint32_t objects, uint64_t seed)
{
	dssim::trace t;
	std::vector<uint32_t> id_of(objects, UINT32_MAX);
	uint64_t s = seed;
	for (size_t i = 0; i < n; i++) {
		// xorshift64*: half the requests to a hot tenth, to spread the
		// distances over many buckets
		s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
		uint64_t r = s * 0x2545f4914f6cdd1dULL;
		uint32_t o = uint32_t((r >> 33) % ((r & 1) ? objects : objects / 10));
		if (id_of[o] == UINT32_MAX) {
			id_of[o] = t.nobjects();
			t.keys.push_back(1000 + o * 7ULL);
		}
		t.ids.push_back(id_of[o]);
	}
	t.name = "random";
	return t;
}

void test_distance_brute_force(void **)
{
	dssim::trace t = random_trace(5000, 1500, 0x1234567);
	std::vector<uint64_t> want = brute_distances(t);
	dssim::stack_distance sd(t);
	uint64_t cold = 0, top = 0;
	std::vector<uint64_t> hist(64, 0);
	for (size_t i = 0; i < t.size(); i++) {
		uint64_t d = sd.next(i, t.ids[i]);
		if (d != want[i])
			fail_msg("request %zu: distance %llu, brute force %llu", i,
				 (unsigned long long)d, (unsigned long long)want[i]);
		if (!want[i]) {
			cold++;
			continue;
		}
		size_t b = 0;
		while ((uint64_t(1) << b) < want[i])
			b++;
		hist[b]++;
		top = std::max<uint64_t>(top, b);
	}
	assert_true(top >= 8);	// the test spans many buckets

	// analyze's histogram is the brute-force one, bucketed
	dssim::analysis a = dssim::analyze(t, 10, 0);
	assert_int_equal(a.cold, cold);
	assert_int_equal(a.objects, t.nobjects());
	assert_int_equal(a.reuse.size(), top + 1);
	for (size_t b = 0; b <= top; b++) {
		assert_int_equal(a.reuse[b].first, uint64_t(1) << b);
		assert_int_equal(a.reuse[b].second, hist[b]);
	}
}

// LRU of size 2^k misses the cold requests and those with distance > 2^k:
// the histogram against the policy itself
void test_reuse_matches_lru(void **)
{
	dssim::trace t = gen("zipf:requests=30000,objects=5000,alpha=0.8,seed=9");
	dssim::analysis a = dssim::analyze(t, 0, 0);
	assert_true(a.top.empty());
	for (size_t k = 0; k < a.reuse.size(); k += 2) {
		dssim::policy_opts o;
		o.cap.value = a.reuse[k].first;
		auto p = dssim::make_policy("lru", t, o);
		uint64_t misses = 0;
		for (size_t i = 0; i < t.size(); i++)
			misses += p->access(t, i) != 0;
		uint64_t want = a.cold;
		for (size_t j = k + 1; j < a.reuse.size(); j++)
			want += a.reuse[j].second;
		if (misses != want)
			fail_msg("LRU %llu: %llu misses, histogram %llu",
				 (unsigned long long)a.reuse[k].first,
				 (unsigned long long)misses, (unsigned long long)want);
	}
}

// ---- analyze -------------------------------------------------------------------------

void test_analyze_by_hand(void **)
{
	//        0    1    2    3    4    5    6    7    8    9
	// key    10   20   10   30   20   10   40   10   10   20
	// dist   -    -    2    -    3    3    -    2    1    3
	dssim::trace t = trace_of({ 10, 20, 10, 30, 20, 10, 40, 10, 10, 20 });
	t.sizes = { 100, 200, 110, 300, 200, 120, 400, 130, 140, 210 };
	dssim::analysis a = dssim::analyze(t, 3, 4);

	assert_int_equal(a.requests, 10);
	assert_int_equal(a.objects, 4);
	assert_int_equal(a.bytes, 1910);
	assert_int_equal(a.top.size(), 3);
	const uint64_t top[3][3] = { { 10, 5, 600 }, { 20, 3, 610 }, { 30, 1, 300 } };
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(a.top[i].key, top[i][0]);
		assert_int_equal(a.top[i].count, top[i][1]);
		assert_int_equal(a.top[i].bytes, top[i][2]);
	}
	assert_int_equal(a.cold, 4);
	const std::pair<uint64_t, uint64_t> reuse[] = { { 1, 1 }, { 2, 2 }, { 4, 3 } };
	assert_int_equal(a.reuse.size(), 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(a.reuse[i] == reuse[i]);

	// windows of 4: {10,20,30} at their last sizes, {20,10,40}, {10,20}
	assert_int_equal(a.window, 4);
	const uint64_t wss[3][3] = { { 0, 3, 610 }, { 4, 3, 730 }, { 8, 2, 350 } };
	assert_int_equal(a.wss.size(), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(a.wss[i].start, wss[i][0]);
		assert_int_equal(a.wss[i].objects, wss[i][1]);
		assert_int_equal(a.wss[i].bytes, wss[i][2]);
	}

	// more entries asked than objects: all of them, ties by key
	dssim::analysis all = dssim::analyze(t, 100, 10);
	assert_int_equal(all.top.size(), 4);
	assert_int_equal(all.top[2].key, 30);
	assert_int_equal(all.top[3].key, 40);
	assert_int_equal(all.top[3].bytes, 400);
	assert_int_equal(all.wss.size(), 1);
	assert_int_equal(all.wss[0].objects, 4);
	assert_int_equal(all.wss[0].bytes, 210 + 140 + 300 + 400);
}

void test_analyze_gaps_and_defaults(void **)
{
	// A B C D E A A: distance 5 (bucket 8), then 1; buckets 2 and 4 empty
	dssim::trace t = trace_of({ 1, 2, 3, 4, 5, 1, 1 });
	dssim::analysis a = dssim::analyze(t, 2, 0);
	const std::pair<uint64_t, uint64_t> reuse[] = { { 1, 1 }, { 2, 0 }, { 4, 0 }, { 8, 1 } };
	assert_int_equal(a.reuse.size(), 4);
	for (size_t i = 0; i < 4; i++)
		assert_true(a.reuse[i] == reuse[i]);
	assert_int_equal(a.cold, 5);
	assert_int_equal(a.bytes, 7);	// no sizes: 1 each
	assert_int_equal(a.top[0].key, 1);
	assert_int_equal(a.top[0].count, 3);
	assert_int_equal(a.top[1].key, 2);	// ties: the smallest key
	// fewer than 100 requests: windows of one
	assert_int_equal(a.window, 1);
	assert_int_equal(a.wss.size(), 7);
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(a.wss[i].start, i);
		assert_int_equal(a.wss[i].objects, 1);
		assert_int_equal(a.wss[i].bytes, 1);
	}

	// no reuse at all: no buckets
	dssim::analysis cold = dssim::analyze(trace_of({ 1, 2, 3 }), 1, 0);
	assert_true(cold.reuse.empty());
	assert_int_equal(cold.cold, 3);

	// a hundredth of the requests per window, the last one shorter
	dssim::trace loop = gen("loop:requests=1050,objects=7");
	dssim::analysis l = dssim::analyze(loop, 1, 0);
	assert_int_equal(l.window, 10);
	assert_int_equal(l.wss.size(), 105);
	assert_int_equal(l.wss[104].start, 1040);
	assert_int_equal(l.wss[0].objects, 7);
	assert_int_equal(l.wss[104].objects, 7);
	assert_int_equal(l.objects, 7);
	// a loop over 7 objects re-requests each at distance 7
	assert_int_equal(l.cold, 7);
	assert_int_equal(l.reuse.size(), 4);
	assert_int_equal(l.reuse[3].second, 1050 - 7);

	// a SHARDS sample keeps every key: objects counts the requested ones
	dssim::trace s = dssim::shards_sample(gen("uniform:requests=20000,objects=1000"), 0.1);
	dssim::analysis sa = dssim::analyze(s, 5, 0);
	std::set<uint32_t> requested(s.ids.begin(), s.ids.end());
	assert_int_equal(sa.objects, requested.size());
	assert_true(sa.objects < s.nobjects());

	// nothing at all
	dssim::analysis none = dssim::analyze(dssim::trace{}, 5, 0);
	assert_int_equal(none.requests, 0);
	assert_true(none.top.empty() && none.reuse.empty() && none.wss.empty());
}

}  // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_exact),
		cmocka_unit_test(test_csv_round_trip),
		cmocka_unit_test(test_text_round_trip),
		cmocka_unit_test(test_oracle_round_trip),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_filter_range_op),
		cmocka_unit_test(test_filter_empty),
		cmocka_unit_test(test_distance_convention),
		cmocka_unit_test(test_distance_brute_force),
		cmocka_unit_test(test_reuse_matches_lru),
		cmocka_unit_test(test_analyze_by_hand),
		cmocka_unit_test(test_analyze_gaps_and_defaults),
	};
	return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
