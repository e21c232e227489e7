// SPDX-License-Identifier: BSD-2-Clause
// The simulator's runner and `dsctl sim` end to end: the latency model,
// the one-pass LRU curve against per-size runs, SHARDS, the shared
// token-cache vector replayed by the seed policy, and the JSON that
// dsctl prints for the sample traces and for bad input.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "run.hpp"
#include "sim.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

#include "sim_test_util.hpp"

using dssim::trace;

namespace {

using namespace simtest;

const std::string traces = DS_TRACES;
const std::string vectors = std::string(DS_SOURCE_DIR) + "/tests/vectors";

bool exists(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0;
}

dssim::run_spec spec(const std::string &policy, uint64_t entries)
{
	dssim::run_spec s;
	s.policy = policy;
	s.size_text = std::to_string(entries);
	s.o.cap.value = entries;
	return s;
}

void tier_costs(void **)
{
	const uint64_t cost[3] = { 5, 200, 800 };

	assert_int_equal(dssim::tier_cost(cost, 0, false), 5);
	assert_int_equal(dssim::tier_cost(cost, 2, false), 805);	// no L2 to try
	assert_int_equal(dssim::tier_cost(cost, 1, true), 205);
	assert_int_equal(dssim::tier_cost(cost, 2, true), 1005);
}

// A B C A B D A: distances -, -, -, 3, 3, -, 3 (by hand)
void lru_mrc_by_hand(void **)
{
	trace t = trace_of({ 1, 2, 3, 1, 2, 4, 1 });
	auto m = dssim::lru_mrc(t, { 1, 2, 3, 4 });

	assert_int_equal(m[0], 7);
	assert_int_equal(m[1], 7);
	assert_int_equal(m[2], 4);
	assert_int_equal(m[3], 4);
}

// The one pass agrees with a run per size, to the request: misses,
// evictions, bytes and every window.
void lru_one_pass_matches_runs(void **)
{
	trace t = dssim::generate("zipf:alpha=0.8,objects=5000,requests=200k,seed=9,size=100");
	std::vector<uint64_t> sizes = { 1, 10, 100, 1000, 4999, 5000, 6000 };
	std::vector<dssim::run_spec> specs;

	for (uint64_t s : sizes)
		specs.push_back(spec("lru", s));
	auto pass = dssim::run_all(t, specs, 2, 3000, nullptr);
	auto m = dssim::lru_mrc(t, sizes);
	for (size_t k = 0; k < sizes.size(); k++) {
		// alone, a size is a run of its own
		auto run = dssim::run_all(t, { specs[k] }, 1, 3000, nullptr)[0];
		assert_true(pass[k].one_pass);
		assert_false(run.one_pass);
		assert_int_equal(m[k], run.c.requests - run.c.hits[0]);
		assert_int_equal(pass[k].c.hits[0], run.c.hits[0]);
		assert_int_equal(pass[k].c.hits[2], run.c.hits[2]);
		assert_int_equal(pass[k].c.evictions, run.c.evictions);
		assert_int_equal(pass[k].c.miss_bytes, run.c.miss_bytes);
		assert_int_equal(pass[k].total_ns, run.total_ns);
		assert_int_equal(pass[k].p99_ns, run.p99_ns);
		assert_true(pass[k].windows == run.windows);
	}
}

void windows_and_p99(void **)
{
	// each of 10 objects twice in a row: a miss then a hit, window 4
	std::vector<uint64_t> keys;
	for (uint64_t k = 0; k < 10; k++)
		keys.insert(keys.end(), { k, k });
	trace t = trace_of(keys);
	auto r = dssim::run_all(t, { spec("lru", 1) }, 1, 4, nullptr)[0];

	assert_int_equal(r.windows.size(), 5);
	for (double w : r.windows)
		assert_true(w == 0.5);
	assert_int_equal(r.c.hits[0], 10);
	assert_int_equal(r.total_ns, 10 * 5 + 10 * 805);
	assert_int_equal(r.p99_ns, 805);
}

void shards_sampling(void **)
{
	trace t = dssim::generate("uniform:objects=20000,requests=100k,seed=4");
	trace all = dssim::shards_sample(t, 1.0);
	trace some = dssim::shards_sample(t, 0.1);
	trace again = dssim::shards_sample(t, 0.1);

	assert_int_equal(all.size(), t.size());
	assert_true(some.ids == again.ids);	// a hash, not a coin
	assert_true(some.size() > 8000 && some.size() < 12000);
	// sampling is by object: an object's requests all stay or all go
	std::vector<int> kept(t.nobjects(), 0), total(t.nobjects(), 0);
	for (uint32_t id : some.ids)
		kept[id]++;
	for (uint32_t id : t.ids)
		total[id]++;
	for (uint32_t id = 0; id < t.nobjects(); id++)
		assert_true(kept[id] == 0 || kept[id] == total[id]);
}

struct expect_file {
	std::vector<std::pair<std::string, std::string>> params;
	uint64_t maint_ns = 0;
	std::vector<std::string> moves;	// "EID FROM TO"
};

expect_file read_expect(const std::string &path)
{
	std::ifstream f(path);
	expect_file e;
	std::string line;

	while (std::getline(f, line)) {
		std::istringstream ls(line);
		std::string w, a, b, c;
		ls >> w;
		if (w == "param" && ls >> a >> b)
			e.params.push_back({ a, b });
		else if (w == "maint_ns")
			ls >> e.maint_ns;
		else if (w == "move" && ls >> a >> b >> c)
			e.moves.push_back(a + " " + b + " " + c);
	}
	return e;
}

// The shared vectors (fixed mode's and adaptive mode's): the simulator
// makes the very moves the core test and the kernel's CACHE_REPLAY make.
static void replay_vector(const std::string &name)
{
	std::string vec = vectors + "/" + name + ".dsmtrace", exp = vectors + "/" + name + ".expect";
	expect_file e = read_expect(exp);
	std::string params, l1;
	char moves[] = "/tmp/dssim-moves-XXXXXX";

	assert_true(exists(vec));
	assert_false(e.moves.empty());
	for (const auto &[k, v] : e.params) {
		// dsctl names the modes where the vector has their numbers
		std::string val = k != "mode" ? v : v == "1" ? "adaptive" : "fixed";
		params += (params.empty() ? "" : ",") + k + "=" + val;
		if (k == "l1_capacity")
			l1 = v;
	}
	close(mkstemp(moves));
	std::vector<std::string> w = { "-j", "sim", "run", "trace", vec, "policy", "seed",
				       "size", l1.empty() ? "64" : l1, "threads", "1", "moves", moves };
	if (!params.empty())
		w.insert(w.end(), { "params", params });
	if (e.maint_ns)
		w.insert(w.end(), { "maint", std::to_string(e.maint_ns) });
	result r = dsctl(w);
	if (r.status)
		fprintf(stderr, "dsctl: %s", r.err.c_str());
	assert_int_equal(r.status, 0);

	std::vector<std::string> got;
	std::ifstream f(moves);
	std::string line;
	while (std::getline(f, line))
		if (line.rfind("move ", 0) == 0)
			got.push_back(line.substr(5));
	unlink(moves);
	assert_int_equal(got.size(), e.moves.size());
	for (size_t k = 0; k < got.size(); k++)
		if (got[k] != e.moves[k]) {
			fprintf(stderr, "%s move %zu: simulator \"%s\", vector \"%s\"\n", name.c_str(), k,
				got[k].c_str(), e.moves[k].c_str());
			fail();
		}
}

void seed_replays_vector(void **)
{
	replay_vector("tc_policy");
	replay_vector("tc_adaptive");
}

// dsctl on the sample trace: exact LRU and FIFO, Belady below both.
void dsctl_sample_json(void **)
{
	std::string file = traces + "/cloudPhysicsIO.oracleGeneral.bin";
	if (!exists(file))
		skip();
	result r = dsctl({ "-j", "sim", "run", "trace", file, "policy", "lru,fifo,belady,seed",
			   "size", "100,1000", "shards", "0.1" });
	assert_int_equal(r.status, 0);
	auto doc = nlohmann::json::parse(r.out);

	assert_int_equal(doc["trace"]["requests"].get<uint64_t>(), 113872);
	assert_string_equal(doc["trace"]["format"].get<std::string>().c_str(), "oracleGeneral");
	assert_int_equal(doc["runs"].size(), 8);

	trace t = dssim::read_trace(file, {});
	auto lru = dssim::lru_mrc(t, { 100, 1000 });
	std::vector<uint64_t> miss(8);
	for (size_t k = 0; k < 8; k++) {
		const auto &run = doc["runs"][k];
		miss[k] = run["misses"].get<uint64_t>();
		assert_int_equal(run["requests"].get<uint64_t>(), 113872);
		assert_int_equal(run["hits"].get<uint64_t>() + miss[k], 113872);
		uint64_t served = 0;
		for (const auto &tier : run["tiers"])
			served += tier["served"].get<uint64_t>();
		assert_int_equal(served, 113872);
		assert_true(run["mreqs_per_s"].get<double>() > 0);
		uint64_t w = doc["window"].get<uint64_t>();
		assert_int_equal(run["windows"].size(), (113872 + w - 1) / w);
	}
	// runs are policy-major: lru@100, lru@1000, fifo@100, ...
	assert_int_equal(miss[0], lru[0]);
	assert_int_equal(miss[1], lru[1]);
	assert_true(miss[4] <= miss[0] && miss[4] <= miss[2]);
	assert_true(miss[5] <= miss[1] && miss[5] <= miss[3]);
	assert_true(miss[1] < miss[0]);
	assert_int_equal(doc["shards"]["points"].size(), 8);
	assert_true(doc["shards"]["mean_abs_error"].get<double>() < 1.0);
	assert_true(doc["peak_rss_mib"].get<double>() > 0);
}

void dsctl_text_trace_and_csv(void **)
{
	std::string file = traces + "/lirs-loop.trace.gz";
	if (!exists(file))
		skip();
	result r = dsctl({ "sim", "run", "--trace", file, "--policy", "lru,arc", "--size", "100",
			   "--output", "csv" });
	assert_int_equal(r.status, 0);
	assert_true(r.out.rfind("policy,size,unit,requests,miss_ratio", 0) == 0);
	assert_non_null(strstr(r.out.c_str(), "\nlru,100,entries,505500,"));
	assert_non_null(strstr(r.out.c_str(), "\narc,100,entries,505500,"));
}

void dsctl_sweep(void **)
{
	result r = dsctl({ "-j", "sim", "run", "gen", "sweep:qps=64|4096,ops=20k,seed=2",
			   "policy", "lru", "size", "1024" });
	assert_int_equal(r.status, 0);
	auto doc = nlohmann::json::parse(r.out);
	assert_int_equal(doc["sweep"].size(), 2);
	// 88 entries fit in 1024, 5632 do not: the rate falls
	assert_true(doc["sweep"][0]["mops"].get<double>() > doc["sweep"][1]["mops"].get<double>());
	assert_true(doc["sweep"][0]["miss_ratio"].get<double>() < 0.01);
}

// The README's calibration: a cache of 620 entries collapses near the
// ~450 connections published for older RNICs, one of 4096 near the few
// thousand of newer ones (1.375 entries per QP: its QP, CQ and MR).
void sweep_calibration(void **)
{
	result r = dsctl({ "-j", "sim", "run", "gen", "sweep:qps=256..8192/4,ops=50k,seed=5",
			   "policy", "lru,random", "size", "620,4096" });
	assert_int_equal(r.status, 0);
	auto doc = nlohmann::json::parse(r.out);
	assert_int_equal(doc["sweep_knees"].size(), 4);
	for (const auto &k : doc["sweep_knees"]) {
		uint64_t knee = k["knee_qps"].get<uint64_t>();
		bool small = k["size"].get<uint64_t>() == 620;
		fprintf(stderr, "# %s size %s: knee %lu QPs\n", k["policy"].get<std::string>().c_str(),
			k["size"].dump().c_str(), (unsigned long)knee);
		assert_in_range(knee, small ? 405 : 2700, small ? 495 : 3300);
	}
}

// sim gen writes what libCacheSim writes: next access as logical time
// counted from 1, -1 for none; and reads back as the same trace.
void dsctl_gen_oracle(void **)
{
	char file[] = "/tmp/dssim-gen-XXXXXX.oracleGeneral";
	close(mkstemps(file, 14));
	result r = dsctl({ "sim", "gen", "zipf:objects=50,requests=500,seed=3", "file", file });
	assert_int_equal(r.status, 0);

	trace g = dssim::generate("zipf:objects=50,requests=500,seed=3");
	dssim::compute_next(g);
	std::string raw = slurp(file);
	assert_int_equal(raw.size(), 500 * 24);
	for (size_t i = 0; i < 500; i++) {
		int64_t next;
		uint64_t key;
		memcpy(&key, raw.data() + i * 24 + 4, 8);
		memcpy(&next, raw.data() + i * 24 + 16, 8);
		assert_int_equal(key, g.keys[g.ids[i]]);
		assert_int_equal(next, g.next[i] < 0 ? -1 : g.next[i] + 1);
	}
	trace back = dssim::read_trace(file, {});
	assert_true(back.ids == g.ids);
	assert_true(back.next == g.next);
	unlink(file);
}

void expect_error(const std::vector<std::string> &words, const char *needle)
{
	result r = dsctl(words);
	assert_int_equal(r.status, 1);
	assert_true(r.out.empty());
	assert_true(r.err.rfind("Error: ", 0) == 0);
	if (!strstr(r.err.c_str(), needle)) {
		fprintf(stderr, "wanted \"%s\" in: %s", needle, r.err.c_str());
		fail();
	}
}

void dsctl_bad_input(void **)
{
	char empty[] = "/tmp/dssim-empty-XXXXXX.oracleGeneral";
	char trunc[] = "/tmp/dssim-trunc-XXXXXX.oracleGeneral";
	int fe = mkstemps(empty, 14), ft = mkstemps(trunc, 14);
	unsigned char rec[30] = { 0 };

	assert_int_equal(write(ft, rec, sizeof(rec)), (ssize_t)sizeof(rec));
	close(fe);
	close(ft);
	expect_error({ "sim", "run", "trace", empty, "policy", "lru", "size", "10" }, empty);
	expect_error({ "sim", "run", "trace", trunc, "policy", "lru", "size", "10" }, "offset 24");
	expect_error({ "sim", "run", "gen", "zipf:objects=100,requests=1000", "size", "0" }, "size");
	expect_error({ "sim", "run", "gen", "zipf:objects=100", "policy", "nope" }, "nope");
	expect_error({ "sim", "run", "gen", "bogus:x=1" }, "bogus");
	expect_error({ "sim", "run", "policy", "lru" }, "trace FILE or gen SPEC");
	expect_error({ "sim", "run", "trace", "/nonexistent/t.bin" }, "/nonexistent/t.bin");
	expect_error({ "sim", "run", "gen", "zipf:objects=100", "threads", "0" }, "threads");
	expect_error({ "sim", "gen", "zipf:objects=100", "file", "/nonexistent/dir/t.bin" },
		     "/nonexistent/dir/t.bin: cannot write");
	// refused up front, saying what it would need
	expect_error({ "sim", "run", "gen", "zipf:objects=100k,requests=1m", "policy", "belady",
		       "mem", "1M" }, "would need");
	// a small need is not "0 MiB"
	expect_error({ "sim", "run", "gen", "zipf:objects=1000,requests=20k", "policy", "belady",
		       "mem", "1K" }, "need 0.");
	unlink(empty);
	unlink(trunc);
}

// Values that were taken as something else, or ignored, are refused.
void dsctl_malformed_values(void **)
{
	const std::string g = "zipf:objects=1000,requests=20k";
	const std::string sw = "sweep:qps=64|128,ops=2k";

	// an empty item is not dropped: "lru," is not "lru", "" is not nothing
	expect_error({ "sim", "run", "gen", g, "policy", "lru," }, "unknown policy \"\"");
	expect_error({ "sim", "run", "gen", g, "size", "10," }, "size \"\"");
	expect_error({ "sim", "run", "gen", g, "latency", "" }, "latency");
	expect_error({ "sim", "run", "gen", g, "latency", "L1:5," }, "latency");
	expect_error({ "sim", "run", "gen", g, "policy", "seed", "tiers", "" }, "tiers");
	expect_error({ "sim", "run", "gen", g, "policy", "seed", "tiers", "L1:" }, "tiers");
	expect_error({ "sim", "run", "gen", g, "policy", "seed", "params", "" }, "params");
	// a warm-up of the whole trace leaves nothing to count (all zeros)
	expect_error({ "sim", "run", "gen", g, "warmup", "20000" }, "warmup");
	// limit 0 is not "no limit"; trace options on a generated workload
	expect_error({ "sim", "run", "trace", traces + "/lirs-loop.trace.gz", "limit", "0" },
		     "limit");
	expect_error({ "sim", "run", "gen", g, "format", "text" }, "format");
	expect_error({ "sim", "run", "gen", g, "limit", "5" }, "limit");
	// what a sweep would silently ignore
	expect_error({ "sim", "run", "gen", sw, "shards", "0.1" }, "shards");
	expect_error({ "sim", "run", "gen", sw, "window", "5" }, "window");
	// a bad rate is refused before the runs, not after
	expect_error({ "sim", "run", "gen", g, "shards", "0" }, "shards");
	// the seed's parameters: named, with the value and the limit
	expect_error({ "sim", "run", "gen", g, "policy", "seed", "size", "5000000" },
		     "seed: l1_capacity 5000000 is above its limit 4194304 entries");
	expect_error({ "sim", "run", "gen", g, "policy", "seed", "params", "promote_l1=4" },
		     "seed: promote_l1 4 is below promote_l2 16");
	expect_error({ "sim", "run", "gen", g, "policy", "seed", "params", "batch_max=8" },
		     "seed: batch_max 8 is below batch_threshold 32");
}

// The seed policies' migration figures, named as dsctl cache show names
// them: rates over the trace's clock (100 ns a request here), the DMA
// of every promotion 64 bytes; a baseline has none.
void seed_migration_figures(void **)
{
	result r = dsctl({ "-j", "sim", "run", "gen", "zipf:alpha=0.9,objects=20000,requests=100k,seed=7",
			   "policy", "lru,seed,seed-adaptive", "size", "500", "warmup", "0" });
	assert_int_equal(r.status, 0);
	auto doc = nlohmann::json::parse(r.out);
	const double span_s = 99999 * 100e-9;

	assert_int_equal(doc["runs"].size(), 3);
	assert_false(doc["runs"][0].contains("migration"));
	for (int k = 1; k < 3; k++) {
		const auto &run = doc["runs"][k];
		const auto &m = run["migration"];
		assert_int_equal(m.size(), 5);
		uint64_t per_sec = m["per_sec"].get<uint64_t>();
		uint64_t mean = m["latency_mean_ns"].get<uint64_t>();
		uint64_t p99 = m["latency_p99_ns"].get<uint64_t>();
		uint64_t dma = m["dma_bytes_per_sec"].get<uint64_t>();
		uint64_t pf = m["dma_prefetch_bytes_per_sec"].get<uint64_t>();
		uint64_t moved = run["promotions"].get<uint64_t>();
		assert_true(per_sec > 0);
		assert_true(mean >= 200);	// at least an L2 copy
		assert_true(p99 >= mean);
		assert_true(dma > 0);
		// a promotion or a prefetch moves one 64-byte line
		double want = double(moved) * 64 / span_s;
		assert_true(std::fabs(double(dma + pf) - want) <= 2 + want * 1e-9);
		// migrations move at least what was promoted
		assert_true(double(per_sec) + 1 >= double(moved) / span_s);
	}
	r = dsctl({ "sim", "run", "gen", "zipf:alpha=0.9,objects=20000,requests=100k,seed=7",
		    "policy", "lru,seed", "size", "500" });
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.c_str(), "\nmigration seed 500 per_sec "));
	assert_null(strstr(r.out.c_str(), "\nmigration lru"));
}

// The simulator's seed is no NIC: its L1 may hold more than the module's
// 16384 slots.  A loop over 18000 objects, with every other limit out of
// the way, thrashes an L1 of 16384 and fits one of 20000.
//
// The loop's first pass comes from L3 and its second from L2, which
// promotes; from the third on, an L1 that holds the loop serves all of it.
// The thrashing run ends with that third pass: in fixed mode each eviction
// scans the whole L1 for the LFU victim, and its 200k requests took a
// minute and a half.  The fitting run, which evicts nothing, keeps the
// 200k it needs to pass 0.8.  The thrashing run's bound is tightened in
// step, so that it allows no larger share of the requests an L1 could
// serve than before: 0.05 of 200k allowed 10000 L1 hits in the 164000 such
// requests (6.1%), 0.02 of 54k allows 1080 in the 18000 of the third pass
// (6%).  An L1 that held the loop would serve 0.33 of the 54k.
void seed_l1_beyond_the_nic(void **)
{
	static const struct {
		const char *size, *requests;
	} runs[] = { { "16384", "54k" }, { "20000", "200k" } };
	double l1[2];
	int i = 0;

	for (const auto &spec : runs) {
		result r = dsctl({ "-j", "sim", "run", "gen",
				   std::string("loop:objects=18000,requests=") + spec.requests,
				   "policy", "seed", "size", spec.size, "params",
				   "promote_l1=2,promote_l2=1,l1_idle=60s,l2_idle=60s,window=60s,"
				   "aging=60s,migrate_budget=1000000" });
		assert_int_equal(r.status, 0);
		auto run = nlohmann::json::parse(r.out)["runs"][0];
		assert_string_equal(run["tiers"][0]["tier"].get<std::string>().c_str(), "l1");
		l1[i++] = run["tiers"][0]["ratio"].get<double>();
	}
	assert_true(l1[0] < 0.02);
	assert_true(l1[1] > 0.8);
}

// plot into what exists but is no directory: one line, ours, not gnuplot's
void dsctl_plot_errors(void **)
{
	char file[] = "/tmp/dssim-plot-XXXXXX";
	close(mkstemp(file));
	const std::string g = "zipf:objects=100,requests=1000";

	expect_error({ "sim", "run", "gen", g, "plot", file }, "cannot write");
	expect_error({ "sim", "run", "gen", g, "plot", std::string(file) + "/sub" }, "cannot create");
	unlink(file);
}

// A trace named with a quote and a line break draws (the break ended the
// title's string mid-command, and gnuplot failed on the script); a DIR
// with a line break is refused.
void dsctl_plot_quoting(void **)
{
	if (system("command -v gnuplot >/dev/null 2>&1"))
		skip();
	std::string file = "/tmp/dssim-it's\nname.trace";
	char dir[] = "/tmp/dssim-plotdir-XXXXXX";
	std::ofstream(file) << "1\n2\n1\n3\n1\n";
	assert_non_null(mkdtemp(dir));

	result r = dsctl({ "sim", "run", "trace", file, "size", "1,2", "plot", dir });
	if (r.status)
		fprintf(stderr, "dsctl: %s", r.err.c_str());
	assert_int_equal(r.status, 0);
	assert_true(exists(std::string(dir) + "/mrc.svg"));
	expect_error({ "sim", "run", "trace", file, "plot", std::string(dir) + "/a\nb" },
		     "control characters");
	unlink(file.c_str());
	system((std::string("rm -rf ") + dir).c_str());
}

// A list of QP counts in any order gives the sorted list's knee.
void sweep_list_order(void **)
{
	auto knee = [](const char *qps) {
		result r = dsctl({ "-j", "sim", "run", "gen",
				   std::string("sweep:ops=20k,seed=3,qps=") + qps, "policy", "lru",
				   "size", "620" });
		assert_int_equal(r.status, 0);
		auto doc = nlohmann::json::parse(r.out);
		assert_int_equal(doc["sweep"][0]["qps"].get<uint64_t>(), 256);
		return doc["sweep_knees"][0]["knee_qps"].get<uint64_t>();
	};
	assert_int_equal(knee("4096|256|1024|512|2048"), knee("256|512|1024|2048|4096"));
}

// SHARDS with a warm-up: the sample's warm-up is the same stretch of the
// trace, and its misses are taken over the requests counted after it
// (it reported 0 for every run: the full warm-up ate the sample).
void shards_with_warmup(void **)
{
	result r = dsctl({ "-j", "sim", "run", "gen", "zipf:objects=10000,requests=200k,seed=2",
			   "policy", "lru,fifo", "size", "1000", "warmup", "100000", "shards",
			   "0.1" });
	assert_int_equal(r.status, 0);
	auto doc = nlohmann::json::parse(r.out);
	for (const auto &p : doc["shards"]["points"]) {
		assert_true(p["sampled"].get<double>() > 0);
		assert_true(p["abs_error"].get<double>() < 0.1);
	}
}

}  // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tier_costs),
		cmocka_unit_test(lru_mrc_by_hand),
		cmocka_unit_test(lru_one_pass_matches_runs),
		cmocka_unit_test(windows_and_p99),
		cmocka_unit_test(shards_sampling),
		cmocka_unit_test(seed_replays_vector),
		cmocka_unit_test(seed_l1_beyond_the_nic),
		cmocka_unit_test(seed_migration_figures),
		cmocka_unit_test(dsctl_sample_json),
		cmocka_unit_test(dsctl_text_trace_and_csv),
		cmocka_unit_test(dsctl_sweep),
		cmocka_unit_test(sweep_calibration),
		cmocka_unit_test(dsctl_gen_oracle),
		cmocka_unit_test(dsctl_bad_input),
		cmocka_unit_test(dsctl_malformed_values),
		cmocka_unit_test(dsctl_plot_errors),
		cmocka_unit_test(dsctl_plot_quoting),
		cmocka_unit_test(sweep_list_order),
		cmocka_unit_test(shards_with_warmup),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
