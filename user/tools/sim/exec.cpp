// SPDX-License-Identifier: BSD-2-Clause
// The simulator's runs as "dsctl sim run" and the web console make them:
// keywords in, one record out.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include <linux/dsmem_token.h>

#include "dsctl.hpp"
#include "exec.hpp"
#include "../../lib/tc_core.hpp"

namespace dsctl {

const std::vector<std::string_view> sim_run_words = {
	"trace", "gen", "policy", "size", "format", "csv", "limit", "tiers",
	"latency", "threads", "window", "shards", "plot", "output", "interval",
	"maint", "params", "moves", "seed", "link", "mem", "warmup",
};

namespace {

double fraction(const keywords &kw, std::string_view word, double def, double min, double max)
{
	const std::string *v = kw.get(word);
	char *end = nullptr;

	if (!v)
		return def;
	errno = 0;
	double d = strtod(v->c_str(), &end);
	if (v->empty() || *end || errno || !(d >= min && d <= max))
		fail(std::string(word) + " needs a number from " + std::to_string(min) + " to " +
		     std::to_string(max) + ", not \"" + *v + "\"");
	return d;
}

// "L1:5,L2:200,L3:800" (times as parse_duration takes them)
void parse_latency(const std::string &s, uint64_t cost[3])
{
	for (const auto &part : split_list(s, ',')) {
		auto colon = part.find(':');
		uint64_t ns;
		int tier = -1;

		if (colon != std::string::npos) {
			std::string name = part.substr(0, colon);
			for (int k = 0; k < 3; k++)
				if (name == "L" + std::to_string(k + 1) || name == "l" + std::to_string(k + 1))
					tier = k;
		}
		if (tier < 0 || !parse_duration(part.substr(colon + 1), ns) || ns > 1000000000)
			fail("latency takes L1:NS,L2:NS,L3:NS (up to 1s each), not \"" + part + "\"");
		cost[tier] = ns;
	}
}

// "L1:N,L2:N": the seed policy's tiers, in entries
void parse_tiers(const std::string &s, std::string &l1, uint64_t &l2)
{
	for (const auto &part : split_list(s, ',')) {
		auto colon = part.find(':');
		std::string name = colon == std::string::npos ? "" : part.substr(0, colon);
		std::string val = colon == std::string::npos ? "" : part.substr(colon + 1);

		if ((name == "L1" || name == "l1") && !val.empty())
			l1 = val;
		else if ((name == "L2" || name == "l2") && parse_u64(val, l2) && l2)
			continue;
		else
			fail("tiers takes L1:N,L2:N (entries), not \"" + part + "\"");
	}
}

// "promote_l1=64,window_ns=1ms": the seed policy's parameters by name
void parse_params(const std::string &s, dssim::policy_opts &o)
{
	for (const auto &part : split_list(s, ',')) {
		auto eq = part.find('=');
		std::string name = part.substr(0, eq), err;
		int k = ds_cache_param_lookup(name.c_str());

		if (eq == std::string::npos || k < 0 || k >= 32)
			fail("params takes NAME=VALUE pairs of the token cache's parameters, not \"" +
			     part + "\"");
		uint64_t v;
		if (!parse_cache_value(unsigned(k), part.substr(eq + 1), v, err))
			fail(err);
		o.params[k] = v;
		o.params_mask |= 1ULL << k;
	}
}


std::string tier_label(int k)
{
	return "l" + std::to_string(k + 1);
}

double ratio(uint64_t part, uint64_t whole)
{
	return whole ? double(part) / double(whole) : 0;
}

record run_record(const dssim::run_result &r, bool windows)
{
	record rec;
	const dssim::counters &c = r.c;

	rec["policy"] = r.spec.policy;
	rec["size"] = r.spec.o.cap.value;
	rec["unit"] = r.spec.o.cap.bytes ? "bytes" : "entries";
	rec["requests"] = c.requests;
	rec["hits"] = c.hits[0];
	rec["misses"] = c.requests - c.hits[0];
	rec["hit_ratio"] = round_to(ratio(c.hits[0], c.requests), 4);
	rec["miss_ratio"] = round_to(r.miss_ratio(), 4);
	rec["byte_miss_ratio"] = round_to(ratio(c.miss_bytes, c.bytes), 4);
	record tiers = record::array();
	for (int k = 0; k < 3; k++)
		tiers.push_back({ { "tier", tier_label(k) }, { "served", c.hits[k] },
				  { "ratio", round_to(ratio(c.hits[k], c.requests), 4) } });
	rec["tiers"] = tiers;
	rec["promotions"] = c.promotions;
	rec["demotions"] = c.demotions;
	rec["evictions"] = c.evictions;
	rec["writebacks"] = c.writebacks;
	rec["refused"] = c.admissions_refused;
	if (c.has_migration) {
		// as `dsctl cache show` names them; rates over the trace's time
		auto per_sec = [&](uint64_t n) -> uint64_t {
			return c.span_ns ? uint64_t(double(n) * 1e9 / double(c.span_ns)) : 0;
		};
		rec["migration"] = {
			{ "per_sec", per_sec(c.migrations) },
			{ "latency_mean_ns", c.migrations ? c.migrate_ns / c.migrations : 0 },
			{ "latency_p99_ns", c.mig_hist.size() == DSTC_HIST_BUCKETS ?
				dstc_hist_quantile(c.mig_hist.data(), DSTC_HIST_BUCKETS, 990) : 0 },
			{ "dma_bytes_per_sec", per_sec(c.dma_bytes) },
			{ "dma_prefetch_bytes_per_sec", per_sec(c.dma_prefetch_bytes) },
		};
	}
	rec["mean_ns"] = round_to(r.mean_ns(), 1);
	rec["p99_ns"] = r.p99_ns;
	rec["seconds"] = round_to(r.seconds, 4);
	rec["mreqs_per_s"] = round_to(r.mreqs_per_s(), 2);
	rec["one_pass"] = r.one_pass;	// seconds and speed are the pass's
	if (windows) {
		record w = record::array();
		for (double v : r.windows)
			w.push_back(round_to(v, 4));
		rec["windows"] = w;
	}
	return rec;
}

struct sim_setup {
	std::vector<std::string> policies;
	std::vector<std::string> sizes;
	dssim::policy_opts o;
	unsigned int threads;
	uint64_t mem_limit = 0;	// 0: what the machine has free
	uint64_t warmup = 0;	// requests (sweep: operations) not counted
	uint64_t window = 0;
	bool warmup_given = false;
	double link_gbps = 100;
	double shards = 0;	// 0: no SHARDS runs
};

std::vector<dssim::run_spec> make_specs(const sim_setup &su, const dssim::trace &t)
{
	std::vector<dssim::run_spec> specs;

	for (const auto &p : su.policies)
		for (const auto &s : su.sizes) {
			dssim::run_spec rs;
			rs.policy = p;
			rs.size_text = s;
			rs.o = su.o;
			rs.o.cap = dssim::parse_capacity(s, t);
			rs.warmup = su.warmup;
			specs.push_back(rs);
		}
	return specs;
}

uint64_t default_window(uint64_t n)
{
	return std::max<uint64_t>(1, n / 100);
}

record trace_record(const dssim::trace &t)
{
	return { { "name", t.name }, { "format", t.format }, { "requests", t.size() },
		 { "objects", t.nobjects() } };
}

// The connection sweep: every policy and size at each QP count.
void run_sweep(std::string_view sw_spec, const dssim::sweep_spec &sw, sim_setup &su,
	       record &doc, double link_gbps, uint64_t &simulated, dssim::progress *prog)
{
	record pts = record::array(), knees = record::array();
	std::map<std::pair<std::string, uint64_t>, std::vector<std::pair<uint32_t, double>>> rates;
	double payload_ns = double(sw.payload) * 8 / link_gbps;

	// the rate of a warm NIC: the first quarter of the operations (by
	// default) fills the cache and is not counted
	uint64_t warm_ops = su.warmup_given ? su.warmup : sw.ops / 4;
	if (warm_ops >= sw.ops)
		fail("warmup must leave some of the sweep's " + std::to_string(sw.ops) + " operations");
	su.warmup = warm_ops * 3;
	for (uint32_t qps : sw.qps) {
		dssim::trace t = dssim::generate_sweep(sw, qps);
		auto specs = make_specs(su, t);
		auto res = dssim::run_all(t, specs, su.threads, 0, prog, su.mem_limit);
		simulated += t.size() * specs.size();
		if (doc["trace"].is_null()) {
			// one trace per QP count: name the sweep, not the first
			doc["trace"] = trace_record(t);
			doc["trace"]["name"] = std::string(sw_spec);
			doc["trace"]["requests"] = t.size() * sw.qps.size();
			doc["trace"]["objects"] = nullptr;
		}
		for (const auto &r : res) {
			// three lookups per operation, then the payload on the wire
			double op_ns = double(r.total_ns) / double(sw.ops - warm_ops) + payload_ns;
			pts.push_back({ { "qps", qps }, { "policy", r.spec.policy },
					{ "size", r.spec.o.cap.value },
					{ "op_ns", round_to(op_ns, 2) },
					{ "mops", std::round(1000 / op_ns * 1000) / 1000 },
					{ "miss_ratio", round_to(r.miss_ratio(), 4) } });
			rates[{ r.spec.policy, r.spec.o.cap.value }].push_back({ qps, 1000 / op_ns });
		}
	}
	// the knee: the first QP count at which the rate falls below 80% of
	// its peak, interpolated between swept counts on a log scale (the
	// counts rise: parse_sweep sorts them)
	for (auto &[key, pts_] : rates) {
		double peak = 0, knee = 0;
		size_t at_peak = 0;
		for (size_t k = 0; k < pts_.size(); k++)
			if (pts_[k].second > peak) {
				peak = pts_[k].second;
				at_peak = k;
			}
		// after the peak: a rate still rising at the first counts has
		// no knee there
		for (size_t k = at_peak + 1; k < pts_.size() && !knee; k++)
			if (pts_[k].second < 0.8 * peak) {
				double x0 = std::log2(pts_[k - 1].first), x1 = std::log2(pts_[k].first);
				double y0 = pts_[k - 1].second, y1 = pts_[k].second;
				double f = y0 > y1 ? (y0 - 0.8 * peak) / (y0 - y1) : 1;
				knee = std::round(std::exp2(x0 + f * (x1 - x0)));
			}
		knees.push_back({ { "policy", key.first }, { "size", key.second },
				  { "peak_mops", std::round(peak * 1000) / 1000 },
				  { "knee_qps", knee > 0 ? record(uint64_t(knee)) : record(nullptr) } });
	}
	doc["sweep"] = pts;
	doc["sweep_knees"] = knees;
	doc["payload_ns"] = payload_ns;
}

// SHARDS: each policy and size again on a sample, at the scaled size.
void run_shards(const dssim::trace &t, const std::vector<dssim::run_result> &exact,
		double rate, sim_setup &su, record &doc, uint64_t &simulated,
		dssim::progress *prog)
{
	dssim::trace s = dssim::shards_sample(t, rate);
	std::vector<dssim::run_spec> specs;
	record pts = record::array();
	double sum = 0, max = 0;

	if (s.ids.empty())
		fail("shards rate " + std::to_string(rate) + " samples no request of this trace");
	// the warm-up is the sample's requests among the trace's first
	// warmup ones (the sample keeps every request to its objects): a
	// share of the sample's length would not be the same stretch of time
	uint64_t warm = 0;
	if (su.warmup) {
		std::vector<char> sampled(t.nobjects(), 0);
		for (uint32_t id : s.ids)
			sampled[id] = 1;
		for (size_t i = 0; i < su.warmup && i < t.size(); i++)
			warm += sampled[t.ids[i]];
	}
	for (const auto &r : exact) {
		dssim::run_spec rs = r.spec;
		auto scale = [rate](uint64_t v) {
			return std::max<uint64_t>(1, uint64_t(std::llround(double(v) * rate)));
		};
		rs.o.cap.value = scale(rs.o.cap.value);
		if (rs.o.l2_entries)
			rs.o.l2_entries = scale(rs.o.l2_entries);
		// the sample spans the trace's time: its requests come 1/rate
		// times further apart (the seed policy's windows are in time)
		rs.o.interval_ns = uint64_t(std::llround(double(rs.o.interval_ns) / rate));
		rs.record_moves = false;
		rs.warmup = warm;
		specs.push_back(rs);
	}
	std::vector<dssim::run_result> res;
	try {
		res = dssim::run_all(s, specs, su.threads, 0, prog, su.mem_limit);
	} catch (const dssim::sim_error &err) {
		// a scaled size the policy cannot take (seed: 1K x 0.01 is no token)
		fail("shards " + std::to_string(rate) + ", on the sample at the scaled sizes: " +
		     err.what());
	}
	simulated += s.size() * specs.size();
	// SHARDS-adj: the sample should hold rate x N requests (N: those the
	// exact run counted, after its warm-up); the hot objects that make it
	// fall short (or run over) are hits, so the misses are taken over the
	// expected count, not the drawn one
	for (size_t k = 0; k < res.size(); k++) {
		double expected = rate * double(exact[k].c.requests);
		double raw = res[k].miss_ratio();
		double m = std::min(1.0, double(res[k].c.requests - res[k].c.hits[0]) / expected);
		double e = exact[k].miss_ratio(), err = std::fabs(e - m);
		sum += err;
		max = std::max(max, err);
		pts.push_back({ { "policy", exact[k].spec.policy }, { "size", exact[k].spec.o.cap.value },
				{ "exact", round_to(e, 4) }, { "sampled", round_to(m, 4) }, { "sampled_raw", round_to(raw, 4) },
				{ "abs_error", round_to(err, 4) } });
	}
	doc["shards"] = { { "rate", rate }, { "requests", s.size() },
			  { "mean_abs_error", round_to(sum / double(res.size()), 4) },
			  { "max_abs_error", round_to(max, 4) }, { "points", pts } };
}

void write_moves(const std::string &file, const std::vector<dssim::run_result> &res)
{
	std::ofstream f(file);

	if (!f)
		fail("cannot write " + file + ": " + strerror(errno));
	for (const auto &r : res) {
		if (!r.spec.record_moves)
			continue;
		f << "# " << r.spec.policy << " size " << r.spec.o.cap.value << "\n";
		for (const auto &m : r.moves)
			f << "move " << m.eid << ' ' << int(m.from) << ' ' << int(m.to) << '\n';
	}
	if (!f.flush())
		fail("cannot write " + file + ": " + strerror(errno));
}

// Every check of kw that needs no trace, and the runs' settings.
sim_setup make_setup(const keywords &kw)
{
	if (kw.has("trace") == kw.has("gen"))
		fail("give one of trace FILE or gen SPEC, try \"dsctl sim help\"");
	if (kw.has("gen"))
		for (const char *w : { "format", "csv", "limit" })
			if (kw.has(w))
				fail(std::string(w) + " is for trace FILE, not gen SPEC");

	sim_setup su;
	su.policies = split_list(kw.get("policy") ? *kw.get("policy") : "lru", ',');
	su.sizes = split_list(kw.get("size") ? *kw.get("size") : "10%", ',');
	for (const auto &p : su.policies) {
		if (std::find(dssim::policy_names().begin(), dssim::policy_names().end(), p) !=
		    dssim::policy_names().end())
			continue;
		// POLICY+tinylfu, POLICY+size:MAX: a baseline with admission
		// filters; building it on an empty trace checks the filters
		dssim::policy_opts vo = su.o;
		vo.cap = dssim::capacity{ 1, true };
		if (p.find('/') != std::string::npos) {
			// POLICY/lru: two tiers, in entries
			vo.cap.bytes = false;
			dssim::make_policy(p, dssim::trace{}, vo);	// throws: bad
			continue;
		}
		if (p.find('+') == std::string::npos || !dssim::make_baseline(p, dssim::trace{}, vo))
			dssim::make_policy(p, dssim::trace{}, su.o);	// throws: unknown
	}
	if (su.sizes.empty() || su.policies.empty())
		fail("policy and size take comma-separated lists");
	su.threads = unsigned(u64_arg(kw, "threads", std::max(1u, std::thread::hardware_concurrency()),
				      1, 1024, true));
	su.o.interval_ns = u64_arg(kw, "interval", 100, 1, 1000000000, true);
	su.o.maint_ns = u64_arg(kw, "maint", 0, 0, 1000000000000ULL, true);
	su.o.seed = u64_arg(kw, "seed", 1, 0, UINT64_MAX, true);
	if (kw.has("latency"))
		parse_latency(*kw.get("latency"), su.o.cost_ns);
	if (kw.has("tiers")) {
		std::string l1;
		parse_tiers(*kw.get("tiers"), l1, su.o.l2_entries);
		if (!l1.empty() && !kw.has("size"))
			su.sizes = { l1 };
	}
	if (kw.has("params"))
		parse_params(*kw.get("params"), su.o);
	su.link_gbps = fraction(kw, "link", 100, 0.001, 100000);
	su.warmup_given = kw.has("warmup");
	su.warmup = u64_arg(kw, "warmup", 0, 0, UINT64_MAX, true);
	// checked before the runs, not after them
	su.shards = kw.has("shards") ? fraction(kw, "shards", 0.01, 1e-6, 1) : 0;
	if (kw.has("mem") && (!parse_size(*kw.get("mem"), su.mem_limit) || !su.mem_limit))
		fail("mem takes a number of bytes with an optional K, M, G or T suffix");

	return su;
}

}  // namespace

void sim_validate(const keywords &kw, uint64_t max_requests)
{
	sim_setup su = make_setup(kw);

	// sizes in entries or bytes; a share of the trace waits for the trace
	for (const auto &s : su.sizes)
		if (s.empty() || s.back() != '%')
			(void)dssim::parse_capacity(s, dssim::trace{});
	if (kw.has("gen")) {
		uint64_t n = dssim::generate_requests(*kw.get("gen"));
		if (max_requests && n > max_requests)
			fail("gen " + *kw.get("gen") + " makes " + std::to_string(n) +
			     " requests; at most " + std::to_string(max_requests) + " here");
	}
}

// The runs "dsctl sim run" makes of its keywords, as the record -j prints.
record sim_execute(const keywords &kw, dssim::progress *prog)
{
	sim_setup su = make_setup(kw);
	double link = su.link_gbps, shards = su.shards;

	record doc;
	doc["trace"] = nullptr;
	uint64_t simulated = 0;
	auto t0 = std::chrono::steady_clock::now();
	dssim::sweep_spec sw;

	if (kw.has("gen") && dssim::parse_sweep(*kw.get("gen"), sw)) {
		// a sweep reports rates per QP count: nothing to sample, no
		// single run to take moves or windows from
		for (const char *w : { "shards", "moves", "window" })
			if (kw.has(w))
				fail(std::string(w) + " does not apply to a connection sweep");
		run_sweep(*kw.get("gen"), sw, su, doc, link, simulated, prog);
	} else {
		dssim::trace t;
		if (kw.has("trace")) {
			dssim::read_opts ro;
			ro.format = kw.get("format") ? *kw.get("format") : "";
			if (kw.has("csv"))
				ro.csv = dssim::parse_csv_map(*kw.get("csv"));
			ro.limit = u64_arg(kw, "limit", 0, 1, UINT64_MAX, true);
			// hold only what the policies read: a 20M-request trace
			// is 480 MiB with both, 160 MiB without
			auto wants = [&](const char *prefix) {
				for (const auto &p : su.policies)
					if (p.rfind(prefix, 0) == 0)
						return true;
				return false;
			};
			ro.want_next = wants("belady");
			ro.want_times = wants("seed");
			t = dssim::read_trace(*kw.get("trace"), ro);
		} else {
			t = dssim::generate(*kw.get("gen"));
		}
		doc["trace"] = trace_record(t);
		if (su.warmup >= t.size())
			fail("warmup must leave some of the trace's " + std::to_string(t.size()) +
			     " requests");
		su.window = u64_arg(kw, "window", default_window(t.size()), 1, UINT64_MAX, true);
		auto specs = make_specs(su, t);
		// moves FILE: the first seed run's, recorded by it alone
		auto first_seed = std::find_if(specs.begin(), specs.end(), [](const auto &s) {
			return s.policy.rfind("seed", 0) == 0;
		});
		if (kw.has("moves") && first_seed != specs.end())
			first_seed->record_moves = true;
		auto res = dssim::run_all(t, specs, su.threads, su.window, prog, su.mem_limit);
		simulated += t.size() * specs.size();
		doc["window"] = su.window;
		record runs = record::array();
		for (const auto &r : res)
			runs.push_back(run_record(r, true));
		doc["runs"] = runs;
		if (shards > 0)
			run_shards(t, res, shards, su, doc, simulated, prog);
		if (kw.has("moves"))
			write_moves(*kw.get("moves"), res);
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	doc["simulated_requests"] = simulated;
	doc["seconds"] = std::round(secs * 1000) / 1000;
	doc["mreqs_per_s"] = std::round(double(simulated) / secs / 1e4) / 100;
	doc["threads"] = su.threads;
	doc["peak_rss_mib"] = round_to(double(dssim::peak_rss()) / (1 << 20), 1);

	return doc;
}

}  // namespace dsctl
