// SPDX-License-Identifier: BSD-2-Clause
// dssim's runner: see run.hpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include <sys/resource.h>

#include "run.hpp"
#include "stack_distance.hpp"

namespace dssim {

uint64_t tier_cost(const uint64_t cost_ns[3], int tier, bool tiered)
{
	uint64_t ns = cost_ns[0];

	if (tier >= 1 && (tier == 1 || tiered))
		ns += cost_ns[1];
	if (tier == 2)
		ns += cost_ns[2];
	return ns;
}

namespace {

// "0.4 MiB", "512 MiB": a small trace's need is not "0 MiB"
std::string mib(uint64_t bytes)
{
	char buf[32];

	snprintf(buf, sizeof(buf), bytes < (10 << 20) ? "%.1f MiB" : "%.0f MiB",
		 double(bytes) / double(1 << 20));
	return buf;
}

// Progress is published in steps, so the hot loop touches no shared line.
constexpr uint64_t progress_step = 1 << 16;
// From this many LRU sizes on, one stack pass beats a run per size.
constexpr size_t one_pass_min = 3;

counters minus(const counters &a, const counters &b)
{
	counters d;

	d.requests = a.requests - b.requests;
	for (int k = 0; k < 3; k++)
		d.hits[k] = a.hits[k] - b.hits[k];
	d.bytes = a.bytes - b.bytes;
	d.miss_bytes = a.miss_bytes - b.miss_bytes;
	d.promotions = a.promotions - b.promotions;
	d.demotions = a.demotions - b.demotions;
	d.evictions = a.evictions - b.evictions;
	d.writebacks = a.writebacks - b.writebacks;
	d.admissions_refused = a.admissions_refused - b.admissions_refused;
	d.has_migration = a.has_migration;
	d.migrations = a.migrations - b.migrations;
	d.migrate_ns = a.migrate_ns - b.migrate_ns;
	d.dma_bytes = a.dma_bytes - b.dma_bytes;
	d.dma_prefetch_bytes = a.dma_prefetch_bytes - b.dma_prefetch_bytes;
	d.span_ns = a.span_ns - b.span_ns;
	d.mig_hist = a.mig_hist;
	for (size_t k = 0; k < d.mig_hist.size() && k < b.mig_hist.size(); k++)
		d.mig_hist[k] -= b.mig_hist[k];
	return d;
}

// The model's cost is fixed per tier, so its quantiles follow from the
// tier counts.
void model_cost(run_result &r, bool tiered)
{
	uint64_t cost[3], below = 0, rank = r.c.requests - r.c.requests / 100;

	for (int k = 0; k < 3; k++) {
		cost[k] = tier_cost(r.spec.o.cost_ns, k, tiered);
		r.total_ns += cost[k] * r.c.hits[k];
	}
	for (int k = 0; k < 3; k++) {
		if (!r.c.hits[k])
			continue;
		below += r.c.hits[k];
		r.p99_ns = cost[k];
		if (below >= rank)
			break;
	}
}

// LRU at every size of specs (entries) in one pass over the trace.
std::vector<run_result> lru_pass(const trace &t, const std::vector<run_spec> &specs,
				 uint64_t window, progress *prog)
{
	std::vector<uint64_t> sizes;
	for (const auto &s : specs)
		sizes.push_back(s.o.cap.value);
	std::sort(sizes.begin(), sizes.end());
	sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

	size_t ns = sizes.size(), n = t.size();
	// A request at distance d misses at every size below d: it is counted
	// once, in at[k] with k the number of such sizes (cold: all of them),
	// and the misses at size j are the sum of at[] above j.
	std::vector<uint64_t> at(ns + 1, 0), bytes_at(ns + 1, 0), win_at(ns + 1, 0);
	std::vector<std::vector<double>> windows;
	windows.resize(sizes.size());
	stack_distance sd(t);
	uint64_t bytes = 0;

	auto t0 = std::chrono::steady_clock::now();
	for (size_t i = 0; i < n; i++) {
		uint64_t d = sd.next(i, t.ids[i]);
		size_t k = d ? size_t(std::lower_bound(sizes.begin(), sizes.end(), d) - sizes.begin()) : ns;

		at[k]++;
		bytes_at[k] += t.size_of(i);
		bytes += t.size_of(i);
		if (window) {
			win_at[k]++;
			if ((i + 1) % window == 0 || i + 1 == n) {
				uint64_t len = (i + 1) % window ? (i + 1) % window : window, miss = 0;
				for (size_t j = ns; j-- > 0;) {
					miss += win_at[j + 1];
					windows[j].push_back(double(miss) / double(len));
				}
				std::fill(win_at.begin(), win_at.end(), 0);
			}
		}
		if (prog && (i + 1) % progress_step == 0)
			progress_step_done(prog, progress_step * specs.size());
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	std::vector<run_result> out;
	for (const auto &s : specs) {
		size_t j = size_t(std::lower_bound(sizes.begin(), sizes.end(), s.o.cap.value) - sizes.begin());
		uint64_t miss = 0, miss_bytes = 0;
		for (size_t k = j + 1; k <= ns; k++) {
			miss += at[k];
			miss_bytes += bytes_at[k];
		}
		run_result r;
		r.spec = s;
		r.c.requests = n;
		r.served = n;
		r.c.hits[0] = n - miss;
		r.c.hits[2] = miss;
		r.c.bytes = bytes;
		r.c.miss_bytes = miss_bytes;
		// LRU only ever removes to make room: each insert past the
		// capacity evicts one
		r.c.evictions = miss > s.o.cap.value ? miss - s.o.cap.value : 0;
		r.seconds = secs;	// the pass served them all at once
		r.one_pass = true;
		if (window)
			r.windows = windows[j];
		model_cost(r, false);
		out.push_back(std::move(r));
	}
	return out;
}

run_result run_one(const trace &t, const run_spec &s, uint64_t window, progress *prog)
{
	run_result r;
	policy_opts o = s.o;
	std::vector<move_event> moves;

	o.moves = s.record_moves ? &moves : nullptr;
	r.spec = s;
	auto p = make_policy(s.policy, t, o);
	uint64_t win_miss = 0, n = t.size(), warm = std::min<uint64_t>(s.warmup, n);
	counters base;

	if (window)
		r.windows.reserve(n / window + 1);
	auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < n; i++) {
		int tier = p->access(t, i);

		if (i + 1 == warm) {
			// counting starts from a warm cache
			p->finish();
			base = p->c;
		}
		if (!window && !prog)
			continue;
		win_miss += tier != 0;
		if (window && (i + 1) % window == 0) {
			r.windows.push_back(double(win_miss) / double(window));
			win_miss = 0;
		}
		if (prog && (i + 1) % progress_step == 0)
			progress_step_done(prog, progress_step);
	}
	auto t1 = std::chrono::steady_clock::now();
	p->finish();
	if (window && n % window)
		r.windows.push_back(double(win_miss) / double(n % window));
	r.seconds = std::chrono::duration<double>(t1 - t0).count();
	r.c = minus(p->c, base);
	r.served = n;
	r.moves = std::move(moves);

	model_cost(r, p->tiered);
	return r;
}

}  // namespace

void progress_step_done(progress *prog, uint64_t n)
{
	prog->done.fetch_add(n, std::memory_order_relaxed);
	if (prog->cancel.load(std::memory_order_relaxed))
		throw sim_error("canceled");
}

std::vector<run_result> run_all(trace &t, const std::vector<run_spec> &specs,
				unsigned int threads, uint64_t window, progress *prog,
				uint64_t mem_limit)
{
	std::vector<run_result> out(specs.size());
	unsigned int nbelady = 0;

	for (const auto &s : specs)
		nbelady += s.policy == "belady";
	if (nbelady) {
		// every Belady run needs its own state: refuse what cannot fit
		uint64_t each = belady_bytes_needed(t);
		uint64_t conc = std::min<uint64_t>(nbelady, threads ? threads : 1);
		uint64_t need = each * conc + (t.next.empty() ? t.size() * sizeof(int64_t) : 0);
		uint64_t avail = mem_limit ? mem_limit : memory_available();

		if (avail && need > avail)
			throw sim_error("belady: " + std::to_string(conc) + " run(s) would need " +
					mib(need) + ", and " + mib(avail) +
					" are available (fewer threads or a shorter trace)");
		if (t.next.empty())
			compute_next(t);
	}
	if (prog)
		prog->total.store(t.size() * specs.size(), std::memory_order_relaxed);

	// jobs: LRU at several sizes (entries, cold start) is one stack pass;
	// every other spec is a run of its own
	std::vector<std::vector<size_t>> jobs;
	std::vector<size_t> lru;
	for (size_t k = 0; k < specs.size(); k++) {
		const run_spec &s = specs[k];
		if (s.policy == "lru" && !s.o.cap.bytes && !s.warmup && !s.record_moves)
			lru.push_back(k);
		else
			jobs.push_back({ k });
	}
	if (lru.size() >= one_pass_min)
		jobs.insert(jobs.begin(), lru);
	else
		for (size_t k : lru)
			jobs.push_back({ k });

	std::atomic<size_t> next{ 0 };
	std::exception_ptr failed;
	std::mutex failed_lock;
	auto worker = [&] {
		for (size_t k; (k = next.fetch_add(1)) < jobs.size();) {
			try {
				if (jobs[k].size() == 1) {
					out[jobs[k][0]] = run_one(t, specs[jobs[k][0]], window, prog);
					continue;
				}
				std::vector<run_spec> group;
				for (size_t i : jobs[k])
					group.push_back(specs[i]);
				auto res = lru_pass(t, group, window, prog);
				for (size_t i = 0; i < res.size(); i++)
					out[jobs[k][i]] = std::move(res[i]);
			} catch (...) {
				std::lock_guard<std::mutex> g(failed_lock);
				if (!failed)
					failed = std::current_exception();
				next = jobs.size();
			}
		}
	};
	unsigned int n = std::max(1u, std::min<unsigned int>(threads, unsigned(jobs.size())));
	std::vector<std::thread> pool;
	for (unsigned int i = 1; i < n; i++) {
		try {
			pool.emplace_back(worker);
		} catch (const std::system_error &) {
			// no more threads to be had: the ones there are (this one
			// at least) take the rest of the jobs
			break;
		}
	}
	worker();
	for (auto &th : pool)
		th.join();
	if (failed)
		std::rethrow_exception(failed);
	return out;
}

std::vector<uint64_t> lru_mrc(const trace &t, const std::vector<uint64_t> &sizes)
{
	std::vector<run_spec> specs;
	std::vector<uint64_t> misses;

	for (uint64_t size : sizes) {
		run_spec s;
		s.policy = "lru";
		s.o.cap.value = size;
		specs.push_back(s);
	}
	for (const auto &r : lru_pass(t, specs, 0, nullptr))
		misses.push_back(r.c.requests - r.c.hits[0]);
	return misses;
}

trace shards_sample(const trace &t, double rate)
{
	// the sampling threshold over a 24-bit hash space, as SHARDS has it
	const uint64_t modulus = 1ULL << 24;
	uint64_t threshold = uint64_t(rate * double(modulus));
	std::vector<char> keep(t.nobjects());
	trace s;

	for (uint32_t id = 0; id < t.nobjects(); id++) {
		uint64_t h = t.keys[id] + 0x9e3779b97f4a7c15ULL;	// splitmix64

		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
		h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
		h ^= h >> 31;
		keep[id] = (h % modulus) < threshold;
	}
	s.name = t.name;
	s.format = t.format;
	s.keys = t.keys;
	s.eids = t.eids;
	s.types = t.types;
	for (size_t i = 0; i < t.size(); i++) {
		if (!keep[t.ids[i]])
			continue;
		s.ids.push_back(t.ids[i]);
		if (!t.sizes.empty())
			s.sizes.push_back(t.sizes[i]);
		if (!t.times_ns.empty())
			s.times_ns.push_back(t.times_ns[i]);
		if (!t.writes.empty())
			s.writes.push_back(t.writes[i]);
	}
	return s;
}

uint64_t memory_available()
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

uint64_t peak_rss()
{
	struct rusage ru {};

	getrusage(RUSAGE_SELF, &ru);
	return uint64_t(ru.ru_maxrss) << 10;
}

}  // namespace dssim
