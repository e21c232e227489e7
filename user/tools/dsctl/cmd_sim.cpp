// SPDX-License-Identifier: BSD-2-Clause
// dsctl sim [show]
//      | sim run { trace FILE [format F] [csv MAP] [limit N] | gen SPEC }
//                [policy P[,P]...] [size S[,S]...] [tiers L1:N,L2:N]
//                [latency L1:NS,L2:NS,L3:NS] [threads N] [window N]
//                [shards RATE] [plot DIR] [output table|json|csv]
//                [interval NS] [maint NS] [params NAME=V[,NAME=V]...]
//                [moves FILE] [seed N] [link GBPS]
//      | sim gen SPEC file FILE
// Keywords may also be spelt --keyword, and -j/-p may follow the command.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dsmem_token.h>

#include "dsctl.hpp"
#include "run.hpp"

namespace dsctl {

namespace {

const std::vector<std::string_view> run_words = {
	"trace", "gen", "policy", "size", "format", "csv", "limit", "tiers",
	"latency", "threads", "window", "shards", "plot", "output", "interval",
	"maint", "params", "moves", "seed", "link", "mem", "warmup",
};

// Every item, empty ones included: "lru," and "" are refused by whoever
// reads the items, not taken as "lru" or as nothing.
std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	size_t start = 0;

	for (size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + 1)
		out.push_back(s.substr(start, at - start));
	out.push_back(s.substr(start));
	return out;
}

uint64_t number(const keywords &kw, std::string_view word, uint64_t def, uint64_t min, uint64_t max)
{
	const std::string *v = kw.get(word);
	uint64_t n;

	if (!v)
		return def;
	if (!parse_u64(*v, n) || n < min || n > max)
		fail(std::string(word) + " needs a number from " + std::to_string(min) + " to " +
		     std::to_string(max) + ", not \"" + *v + "\"");
	return n;
}

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
	for (const auto &part : split(s, ',')) {
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
	for (const auto &part : split(s, ',')) {
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
	for (const auto &part : split(s, ',')) {
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

// A bar on stderr while long runs go on (a second or more), only when
// stderr is a terminal; wiped when the runs end.
class progress_bar {
public:
	explicit progress_bar(dssim::progress &p) : p_(p)
	{
		try {
			if (isatty(STDERR_FILENO))
				th_ = std::thread([this] { loop(); });
		} catch (const std::system_error &) {
			// no thread, no bar: the runs go on without it
		}
	}
	~progress_bar()
	{
		stop_ = true;
		if (th_.joinable())
			th_.join();
		if (drawn_)
			fprintf(stderr, "\r%60s\r", "");
	}

private:
	void loop()
	{
		auto start = std::chrono::steady_clock::now();

		while (!stop_) {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			uint64_t total = p_.total.load(std::memory_order_relaxed);
			if (!total || stop_ ||
			    std::chrono::steady_clock::now() - start < std::chrono::seconds(1))
				continue;
			double f = std::min(1.0, double(p_.done.load()) / double(total));
			int w = int(f * 40);
			fprintf(stderr, "\r[%s%s] %3d%%", std::string(size_t(w), '#').c_str(),
				std::string(size_t(40 - w), ' ').c_str(), int(f * 100));
			drawn_ = true;
		}
	}

	dssim::progress &p_;
	std::atomic<bool> stop_{ false };
	bool drawn_ = false;	// written by the thread, read after join
	std::thread th_;
};

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
	rec["hit_ratio"] = round4(ratio(c.hits[0], c.requests));
	rec["miss_ratio"] = round4(r.miss_ratio());
	rec["byte_miss_ratio"] = round4(ratio(c.miss_bytes, c.bytes));
	record tiers = record::array();
	for (int k = 0; k < 3; k++)
		tiers.push_back({ { "tier", tier_label(k) }, { "served", c.hits[k] },
				  { "ratio", round4(ratio(c.hits[k], c.requests)) } });
	rec["tiers"] = tiers;
	rec["promotions"] = c.promotions;
	rec["demotions"] = c.demotions;
	rec["evictions"] = c.evictions;
	rec["writebacks"] = c.writebacks;
	rec["refused"] = c.admissions_refused;
	rec["mean_ns"] = std::round(r.mean_ns() * 10) / 10;
	rec["p99_ns"] = r.p99_ns;
	rec["seconds"] = std::round(r.seconds * 1e4) / 1e4;
	rec["mreqs_per_s"] = std::round(r.mreqs_per_s() * 100) / 100;
	rec["one_pass"] = r.one_pass;	// seconds and speed are the pass's
	if (windows) {
		record w = record::array();
		for (double v : r.windows)
			w.push_back(round4(v));
		rec["windows"] = w;
	}
	return rec;
}

// The table: one line per run, the columns a reader compares.
void print_table(const record &doc)
{
	const record &tr = doc["trace"];
	// a sweep has no one number of objects (null in JSON): "-"
	printf("trace %s format %s requests %s objects %s\n", tr["name"].get<std::string>().c_str(),
	       tr["format"].get<std::string>().c_str(), tr["requests"].dump().c_str(),
	       tr["objects"].is_null() ? "-" : tr["objects"].dump().c_str());
	if (doc.contains("runs")) {
		printf("%-14s %12s %8s %8s %8s %8s %10s %10s %10s %9s %8s %9s\n", "POLICY", "SIZE",
		       "MISS", "L1", "L2", "L3", "PROMOTE", "DEMOTE", "EVICT", "MEAN_NS", "P99_NS",
		       "MREQ/S");
		for (const auto &r : doc["runs"]) {
			std::string size = r["size"].dump() + (r["unit"] == "bytes" ? "B" : "");
			printf("%-14s %12s %8.4f %8.4f %8.4f %8.4f %10s %10s %10s %9.1f %8s %9.2f\n",
			       r["policy"].get<std::string>().c_str(), size.c_str(),
			       r["miss_ratio"].get<double>(), r["tiers"][0]["ratio"].get<double>(),
			       r["tiers"][1]["ratio"].get<double>(), r["tiers"][2]["ratio"].get<double>(),
			       r["promotions"].dump().c_str(), r["demotions"].dump().c_str(),
			       r["evictions"].dump().c_str(), r["mean_ns"].get<double>(),
			       r["p99_ns"].dump().c_str(), r["mreqs_per_s"].get<double>());
		}
	}
	if (doc.contains("shards")) {
		const record &s = doc["shards"];
		printf("shards rate %g requests %s: miss ratio error mean %.4f max %.4f\n",
		       s["rate"].get<double>(), s["requests"].dump().c_str(),
		       s["mean_abs_error"].get<double>(), s["max_abs_error"].get<double>());
		for (const auto &p : s["points"])
			printf("  %-14s %12s exact %.4f sampled %.4f\n",
			       p["policy"].get<std::string>().c_str(), p["size"].dump().c_str(),
			       p["exact"].get<double>(), p["sampled"].get<double>());
	}
	if (doc.contains("sweep")) {
		printf("%-8s %-14s %12s %10s %10s %8s\n", "QPS", "POLICY", "SIZE", "OP_NS", "MOPS",
		       "MISS");
		for (const auto &p : doc["sweep"])
			printf("%-8s %-14s %12s %10.1f %10.2f %8.4f\n", p["qps"].dump().c_str(),
			       p["policy"].get<std::string>().c_str(), p["size"].dump().c_str(),
			       p["op_ns"].get<double>(), p["mops"].get<double>(),
			       p["miss_ratio"].get<double>());
		for (const auto &k : doc["sweep_knees"])
			printf("knee %s size %s: %s QPs\n", k["policy"].get<std::string>().c_str(),
			       k["size"].dump().c_str(),
			       k["knee_qps"].is_null() ? "-" : k["knee_qps"].dump().c_str());
	}
	printf("simulated %s requests in %.3f s, peak memory %s MiB\n",
	       doc["simulated_requests"].dump().c_str(), doc["seconds"].get<double>(),
	       doc["peak_rss_mib"].dump().c_str());
}

// CSV: one row per run (or per sweep point), the table's columns.
void print_csv(const record &doc)
{
	if (doc.contains("sweep")) {
		printf("qps,policy,size,op_ns,mops,miss_ratio\n");
		for (const auto &p : doc["sweep"])
			printf("%s,%s,%s,%.2f,%.4f,%.6f\n", p["qps"].dump().c_str(),
			       p["policy"].get<std::string>().c_str(), p["size"].dump().c_str(),
			       p["op_ns"].get<double>(), p["mops"].get<double>(),
			       p["miss_ratio"].get<double>());
		return;
	}
	printf("policy,size,unit,requests,miss_ratio,byte_miss_ratio,l1,l2,l3,promotions,"
	       "demotions,evictions,writebacks,mean_ns,p99_ns,mreqs_per_s\n");
	for (const auto &r : doc["runs"])
		printf("%s,%s,%s,%s,%.6f,%.6f,%s,%s,%s,%s,%s,%s,%s,%.2f,%s,%.3f\n",
		       r["policy"].get<std::string>().c_str(), r["size"].dump().c_str(),
		       r["unit"].get<std::string>().c_str(), r["requests"].dump().c_str(),
		       r["miss_ratio"].get<double>(), r["byte_miss_ratio"].get<double>(),
		       r["tiers"][0]["served"].dump().c_str(), r["tiers"][1]["served"].dump().c_str(),
		       r["tiers"][2]["served"].dump().c_str(), r["promotions"].dump().c_str(),
		       r["demotions"].dump().c_str(), r["evictions"].dump().c_str(),
		       r["writebacks"].dump().c_str(), r["mean_ns"].get<double>(),
		       r["p99_ns"].dump().c_str(), r["mreqs_per_s"].get<double>());
}

// A gnuplot single-quoted string: '' is a quote; a line break would end
// the command mid-string (a trace named "a\nsystem('...')"), so control
// characters become '?' (DIR, where they would matter, may hold none)
std::string gp_quote(const std::string &s)
{
	std::string q = "'";
	for (char ch : s)
		q += ch == '\'' ? std::string("''")
		     : static_cast<unsigned char>(ch) < 0x20 ? std::string("?")
							: std::string(1, ch);
	return q + "'";
}

// Plots through gnuplot: data files and a script in DIR, each figure as
// SVG and as PNG.
void plot(const std::string &dir, const record &doc)
{
	if (mkdir(dir.c_str(), 0755) && errno != EEXIST)
		fail("cannot create " + dir + ": " + strerror(errno));
	std::ofstream gp(dir + "/plot.gp");
	std::vector<std::string> figs;

	// DIR may exist and not be a writable directory (a file, /proc)
	if (!gp)
		fail("cannot write " + dir + "/plot.gp: " + strerror(errno));

	gp << "# made by dsctl sim run; gnuplot plot.gp redraws the figures\n"
	   << "set datafile separator ','\nset key outside right top\nset grid\n";
	auto figure = [&](const std::string &name, const std::string &body) {
		// noenhanced: names like "lru@4096" are text, not markup
		for (const char *term : { "svg size 900,520 dynamic noenhanced background rgb 'white'",
					  "pngcairo noenhanced size 900,520" }) {
			bool svg = term[0] == 's';
			gp << "set terminal " << term << "\nset output "
			   << gp_quote(dir + "/" + name + (svg ? ".svg" : ".png")) << "\n"
			   << body << "unset output\n";
		}
		figs.push_back(name);
	};

	if (doc.contains("runs") && !doc["runs"].empty()) {
		// miss ratio versus size, one line per policy (Belady dashed)
		std::map<std::string, std::vector<std::pair<uint64_t, double>>> curves;
		for (const auto &r : doc["runs"])
			curves[r["policy"].get<std::string>()].push_back(
				{ r["size"].get<uint64_t>(), r["miss_ratio"].get<double>() });
		std::string cmds;
		for (auto &[pol, pts] : curves) {
			std::sort(pts.begin(), pts.end());
			std::ofstream d(dir + "/mrc-" + pol + ".csv");
			for (auto &[s, m] : pts)
				d << s << ',' << m << '\n';
			cmds += (cmds.empty() ? "plot " : ", ") + gp_quote(dir + "/mrc-" + pol + ".csv") +
				" using 1:2 with linespoints title " + gp_quote(pol) +
				(pol == "belady" ? " dashtype 2 lw 2 lc rgb 'black'" : " lw 2");
		}
		bool multi = false;
		for (auto &[pol, pts] : curves)
			multi |= pts.size() > 1;
		std::string unit = doc["runs"][0]["unit"].get<std::string>();
		figure("mrc", "set title " +
				      gp_quote("Miss ratio versus cache size: " +
					       doc["trace"]["name"].get<std::string>()) + "\n" +
				      "set xlabel 'cache size (" + unit + ")'\nset ylabel 'miss ratio'\n" +
				      (multi ? "set logscale x\n" : "unset logscale x\n") +
				      "set yrange [0:*]\nset style data linespoints\n" +
				      (multi ? cmds : std::string(cmds).replace(0, 4, "plot")) + "\n" +
				      "unset logscale x\n");

		// miss ratio over time: the largest size of each policy
		std::string tcmds;
		std::map<std::string, size_t> pick;
		for (size_t k = 0; k < doc["runs"].size(); k++) {
			const auto &r = doc["runs"][k];
			std::string pol = r["policy"].get<std::string>();
			if (!r.contains("windows"))
				continue;
			if (!pick.count(pol) ||
			    doc["runs"][pick[pol]]["size"].get<uint64_t>() < r["size"].get<uint64_t>())
				pick[pol] = k;
		}
		uint64_t win = doc["window"].get<uint64_t>();
		for (auto &[pol, k] : pick) {
			std::ofstream d(dir + "/time-" + pol + ".csv");
			uint64_t i = 0;
			for (const auto &v : doc["runs"][k]["windows"])
				d << ++i * win << ',' << v.get<double>() << '\n';
			tcmds += (tcmds.empty() ? "plot " : ", ") + gp_quote(dir + "/time-" + pol + ".csv") +
				 " using 1:2 with lines lw 2 title " +
				 gp_quote(pol + " @ " + doc["runs"][k]["size"].dump());
		}
		if (!tcmds.empty())
			figure("time", "set title 'Miss ratio over time (windows of " +
					       std::to_string(win) + " requests)'\n" +
					       "set xlabel 'requests'\nset ylabel 'miss ratio'\n"
					       "set yrange [0:*]\n" + tcmds + "\n");

		// where requests were served: stacked bars per run
		std::ofstream d(dir + "/tiers.csv");
		for (const auto &r : doc["runs"])
			d << r["policy"].get<std::string>() << '@' << r["size"].dump() << ','
			  << r["tiers"][0]["ratio"].get<double>() << ','
			  << r["tiers"][1]["ratio"].get<double>() << ','
			  << r["tiers"][2]["ratio"].get<double>() << '\n';
		std::string f = gp_quote(dir + "/tiers.csv");
		figure("tiers", "set title 'Where requests were served'\nset ylabel 'share of requests'\n"
				"set style data histograms\nset style histogram rowstacked\n"
				"set style fill solid 0.8 border -1\nset boxwidth 0.7\nset yrange [0:1]\n"
				"set xtics rotate by -35 noenhanced\nunset xlabel\n"
				"plot " + f + " using 2:xtic(1) title 'L1', " + f +
				" using 3 title 'L2', " + f + " using 4 title 'L3'\n"
				"set xtics norotate\nset style data linespoints\n");
	}
	if (doc.contains("sweep")) {
		std::map<std::string, std::string> series;
		for (const auto &p : doc["sweep"])
			series[p["policy"].get<std::string>() + "@" + p["size"].dump()] +=
				p["qps"].dump() + "," + std::to_string(p["mops"].get<double>()) + "\n";
		std::string cmds;
		int n = 0;
		for (auto &[name, data] : series) {
			std::string file = dir + "/sweep-" + std::to_string(n++) + ".csv";
			std::ofstream(file) << data;
			cmds += (cmds.empty() ? "plot " : ", ") + gp_quote(file) +
				" using 1:2 with linespoints lw 2 title " + gp_quote(name);
		}
		figure("sweep", "set title 'Modelled operation rate versus active QPs'\n"
				"set xlabel 'active QPs'\nset ylabel 'Mops (modelled)'\nset logscale x 2\n"
				"set yrange [0:*]\n" + cmds + "\nunset logscale x\n");
	}
	gp.close();
	if (!gp)
		fail("cannot write " + dir + "/plot.gp: " + strerror(errno));

	// gnuplot's messages go into ours: a failure is one "Error:" line, and
	// its warnings (a single size's empty x range) are no noise on success
	int err[2];
	if (pipe2(err, O_CLOEXEC))
		fail(std::string("cannot run gnuplot: ") + strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(err[1], STDERR_FILENO);
		execlp("gnuplot", "gnuplot", (dir + "/plot.gp").c_str(), (char *)nullptr);
		_exit(127);
	}
	close(err[1]);
	std::string said;
	char buf[4096];
	for (ssize_t n; (n = read(err[0], buf, sizeof(buf))) != 0;)
		if (n > 0)
			said.append(buf, size_t(n));
		else if (errno != EINTR)
			break;
	close(err[0]);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		fail(std::string("cannot run gnuplot: ") + strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		fail("plot needs gnuplot (Debian package gnuplot-nox)");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		// its last message, on our one line
		std::string last;
		for (const auto &l : split(said, '\n'))
			if (l.find_first_not_of(" \t^") != std::string::npos)
				last = l;
		fail("gnuplot failed on " + dir + "/plot.gp" + (last.empty() ? "" : ": " + last));
	}
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
	       record &doc, double link_gbps, uint64_t &simulated)
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
		auto res = dssim::run_all(t, specs, su.threads, 0, nullptr, su.mem_limit);
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
					{ "op_ns", std::round(op_ns * 100) / 100 },
					{ "mops", std::round(1000 / op_ns * 1000) / 1000 },
					{ "miss_ratio", round4(r.miss_ratio()) } });
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
		double rate, sim_setup &su, record &doc, uint64_t &simulated)
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
		res = dssim::run_all(s, specs, su.threads, 0, nullptr, su.mem_limit);
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
				{ "exact", round4(e) }, { "sampled", round4(m) }, { "sampled_raw", round4(raw) },
				{ "abs_error", round4(err) } });
	}
	doc["shards"] = { { "rate", rate }, { "requests", s.size() },
			  { "mean_abs_error", round4(sum / double(res.size())) },
			  { "max_abs_error", round4(max) }, { "points", pts } };
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

// -j, -p and --word forms among the words after the command
std::vector<std::string> normalise(env &e, bool &json, bool &pretty)
{
	std::vector<std::string> w;

	while (!e.words.empty()) {
		std::string s = e.words.next();
		if (s == "-j" || s == "-json" || s == "--json")
			json = true;
		else if (s == "-p" || s == "-pretty" || s == "--pretty")
			pretty = true;
		else
			w.push_back(s.rfind("--", 0) == 0 ? s.substr(2) : s);
	}
	return w;
}

int sim_run_words(env &e)
{
	bool json = e.opts.json, pretty = e.opts.pretty;
	args words(normalise(e, json, pretty));
	keywords kw;
	std::string err;

	if (!kw.parse(words, run_words, err))
		fail(err + ", try \"dsctl sim help\"");
	if (kw.has("trace") == kw.has("gen"))
		fail("give one of trace FILE or gen SPEC, try \"dsctl sim help\"");
	if (kw.has("gen"))
		for (const char *w : { "format", "csv", "limit" })
			if (kw.has(w))
				fail(std::string(w) + " is for trace FILE, not gen SPEC");

	sim_setup su;
	su.policies = split(kw.get("policy") ? *kw.get("policy") : "lru", ',');
	su.sizes = split(kw.get("size") ? *kw.get("size") : "10%", ',');
	for (const auto &p : su.policies)
		if (std::find(dssim::policy_names().begin(), dssim::policy_names().end(), p) ==
		    dssim::policy_names().end())
			dssim::make_policy(p, dssim::trace{}, su.o);	// throws: unknown
	if (su.sizes.empty() || su.policies.empty())
		fail("policy and size take comma-separated lists");
	su.threads = unsigned(number(kw, "threads", std::max(1u, std::thread::hardware_concurrency()), 1, 1024));
	su.o.interval_ns = number(kw, "interval", 100, 1, 1000000000);
	su.o.maint_ns = number(kw, "maint", 0, 0, 1000000000000ULL);
	su.o.seed = number(kw, "seed", 1, 0, UINT64_MAX);
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
	std::string outfmt = kw.get("output") ? *kw.get("output") : (json ? "json" : "table");
	if (outfmt != "table" && outfmt != "json" && outfmt != "csv")
		fail("output takes table, json or csv");
	// the script names DIR in gnuplot strings (see gp_quote): refused
	// before the runs, not after them
	if (kw.has("plot"))
		for (unsigned char ch : *kw.get("plot"))
			if (ch < 0x20)
				fail("plot: the directory's name cannot hold control characters");
	double link = fraction(kw, "link", 100, 0.001, 100000);
	su.warmup_given = kw.has("warmup");
	su.warmup = number(kw, "warmup", 0, 0, UINT64_MAX);
	// checked before the runs, not after them
	double shards = kw.has("shards") ? fraction(kw, "shards", 0.01, 1e-6, 1) : 0;
	if (kw.has("mem") && (!parse_size(*kw.get("mem"), su.mem_limit) || !su.mem_limit))
		fail("mem takes a number of bytes with an optional K, M, G or T suffix");

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
		run_sweep(*kw.get("gen"), sw, su, doc, link, simulated);
	} else {
		dssim::trace t;
		if (kw.has("trace")) {
			dssim::read_opts ro;
			ro.format = kw.get("format") ? *kw.get("format") : "";
			if (kw.has("csv"))
				ro.csv = dssim::parse_csv_map(*kw.get("csv"));
			ro.limit = number(kw, "limit", 0, 1, UINT64_MAX);
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
		su.window = number(kw, "window", default_window(t.size()), 1, UINT64_MAX);
		auto specs = make_specs(su, t);
		// moves FILE: the first seed run's, recorded by it alone
		auto first_seed = std::find_if(specs.begin(), specs.end(), [](const auto &s) {
			return s.policy.rfind("seed", 0) == 0;
		});
		if (kw.has("moves") && first_seed != specs.end())
			first_seed->record_moves = true;
		dssim::progress prog;
		std::vector<dssim::run_result> res;
		{
			progress_bar bar(prog);
			res = dssim::run_all(t, specs, su.threads, su.window, &prog, su.mem_limit);
		}
		simulated += t.size() * specs.size();
		doc["window"] = su.window;
		record runs = record::array();
		for (const auto &r : res)
			runs.push_back(run_record(r, true));
		doc["runs"] = runs;
		if (shards > 0)
			run_shards(t, res, shards, su, doc, simulated);
		if (kw.has("moves"))
			write_moves(*kw.get("moves"), res);
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	doc["simulated_requests"] = simulated;
	doc["seconds"] = std::round(secs * 1000) / 1000;
	doc["mreqs_per_s"] = std::round(double(simulated) / secs / 1e4) / 100;
	doc["threads"] = su.threads;
	doc["peak_rss_mib"] = std::round(double(dssim::peak_rss()) / (1 << 20) * 10) / 10;

	if (kw.has("plot"))
		plot(*kw.get("plot"), doc);
	if (outfmt == "json") {
		fputs(doc.dump(pretty ? 4 : -1).c_str(), stdout);
		fputc('\n', stdout);
	} else if (outfmt == "csv") {
		print_csv(doc);
	} else {
		print_table(doc);
	}
	return 0;
}

// The simulator's refusals become dsctl's "Error: ..." and exit 1.
int sim_run(env &e)
{
	try {
		return sim_run_words(e);
	} catch (const dssim::sim_error &err) {
		fail(err.what());
	} catch (const std::bad_alloc &) {
		fail("out of memory (a shorter trace, fewer threads, or smaller sizes)");
	} catch (const std::exception &other) {
		// whatever else the library throws is an error line, not an abort
		fail(std::string("sim run: ") + other.what());
	}
}

// A trace written as oracleGeneral: what other simulators read.
int sim_gen(env &e)
{
	bool json = false, pretty = false;
	args words(normalise(e, json, pretty));

	if (words.empty())
		fail("missing SPEC, try \"dsctl sim help\"");
	std::string spec = words.next();
	keywords kw;
	std::string err;
	if (!kw.parse(words, { "file" }, err))
		fail(err + ", try \"dsctl sim help\"");
	const std::string &file = need(kw, "file", "sim");
	try {
		dssim::trace t = dssim::generate(spec);
		if (t.next.empty())
			dssim::compute_next(t);
		dssim::write_oracle(t, file);
	} catch (const dssim::sim_error &bad) {
		fail(bad.what());
	} catch (const std::bad_alloc &) {
		fail("out of memory for " + spec + " (fewer requests)");
	}
	return 0;
}

int sim_show(env &e)
{
	record r;
	record pols = record::array();

	if (!e.words.empty())
		fail("unexpected \"" + e.words.peek() + "\"");
	for (const auto &p : dssim::policy_names())
		pols.push_back(p);
	r["policies"] = pols;
	r["formats"] = { "oracleGeneral", "csv", "text", "dsmem" };
	r["compression"] = { "gzip", "zstd" };
	r["generators"] = { "zipf", "uniform", "scan", "loop", "sweep" };
	e.out.add(r);
	return 0;
}

const command sim_cmds[] = {
	{ "show", sim_show },
	{ "run", sim_run },
	{ "gen", sim_gen },
};

}  // namespace

extern const object sim_object = {
	"sim", sim_cmds, sizeof(sim_cmds) / sizeof(sim_cmds[0]),
	"Usage: dsctl sim [ show ]\n"
	"       dsctl [ -j [ -p ] ] sim run { trace FILE [ format FORMAT ] [ csv MAP ] [ limit N ] |\n"
	"                                   gen SPEC }\n"
	"                               [ policy P[,P]... ] [ size S[,S]... ] [ tiers L1:N,L2:N ]\n"
	"                               [ latency L1:NS,L2:NS,L3:NS ] [ threads N ] [ window N ]\n"
	"                               [ shards RATE ] [ plot DIR ] [ output { table | json | csv } ]\n"
	"                               [ interval NS ] [ maint NS ] [ params NAME=V[,NAME=V]... ]\n"
	"                               [ moves FILE ] [ seed N ] [ link GBPS ] [ mem BYTES ]\n"
	"                               [ warmup N ]\n"
	"       dsctl sim gen SPEC file FILE\n"
	"where  FORMAT := { oracleGeneral | csv | text | dsmem } (default: detected)\n"
	"       MAP    := id=N[,time=N][,size=N][,op=N][,header][,sep=C]\n"
	"       P      := { lru | fifo | lfu | arc | s3fifo | sieve | wtinylfu | random |\n"
	"                   belady | seed | seed-adaptive }\n"
	"       S      := entries, bytes with a K/M/G suffix, or N% of the trace's objects\n"
	"       SPEC   := KIND[:KEY=V,...][+KIND[:KEY=V,...]]... with KIND := { zipf | uniform |\n"
	"                 scan | loop }, or sweep:qps=A..B|A|B...,ops=N,reuse=P,payload=BYTES\n"
	"Keywords may be written --keyword too.\n",
	false,
};

}  // namespace dsctl
