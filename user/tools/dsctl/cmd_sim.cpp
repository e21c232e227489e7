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
#include "exec.hpp"

namespace dsctl {

namespace {

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

// The table: one line per run, the columns a reader compares.
std::string table_text(const record &doc)
{
	std::string text;

	const record &tr = doc["trace"];
	// a sweep has no one number of objects (null in JSON): "-"
	text += strprintf("trace %s format %s requests %s objects %s\n", tr["name"].get<std::string>().c_str(),
			  tr["format"].get<std::string>().c_str(), tr["requests"].dump().c_str(),
			  tr["objects"].is_null() ? "-" : tr["objects"].dump().c_str());
	if (doc.contains("runs")) {
		text += strprintf("%-14s %12s %8s %8s %8s %8s %10s %10s %10s %9s %8s %9s\n", "POLICY", "SIZE",
				  "MISS", "L1", "L2", "L3", "PROMOTE", "DEMOTE", "EVICT", "MEAN_NS", "P99_NS",
				  "MREQ/S");
		for (const auto &r : doc["runs"]) {
			std::string size = r["size"].dump() + (r["unit"] == "bytes" ? "B" : "");
			text += strprintf("%-14s %12s %8.4f %8.4f %8.4f %8.4f %10s %10s %10s %9.1f %8s %9.2f\n",
					  r["policy"].get<std::string>().c_str(), size.c_str(),
					  r["miss_ratio"].get<double>(), r["tiers"][0]["ratio"].get<double>(),
					  r["tiers"][1]["ratio"].get<double>(), r["tiers"][2]["ratio"].get<double>(),
					  r["promotions"].dump().c_str(), r["demotions"].dump().c_str(),
					  r["evictions"].dump().c_str(), r["mean_ns"].get<double>(),
					  r["p99_ns"].dump().c_str(), r["mreqs_per_s"].get<double>());
		}
		// the seed policies' migrations, as `dsctl cache show` has them
		for (const auto &r : doc["runs"]) {
			if (!r.contains("migration"))
				continue;
			const record &m = r["migration"];
			std::string size = r["size"].dump() + (r["unit"] == "bytes" ? "B" : "");
			text += strprintf("migration %s %s per_sec %s latency_mean_ns %s latency_p99_ns %s "
					  "dma_bytes_per_sec %s dma_prefetch_bytes_per_sec %s\n",
					  r["policy"].get<std::string>().c_str(), size.c_str(),
					  m["per_sec"].dump().c_str(), m["latency_mean_ns"].dump().c_str(),
					  m["latency_p99_ns"].dump().c_str(),
					  m["dma_bytes_per_sec"].dump().c_str(),
					  m["dma_prefetch_bytes_per_sec"].dump().c_str());
		}
	}
	if (doc.contains("shards")) {
		const record &sh = doc["shards"];
		text += strprintf("shards rate %g requests %s: miss ratio error mean %.4f max %.4f\n",
				  sh["rate"].get<double>(), sh["requests"].dump().c_str(),
				  sh["mean_abs_error"].get<double>(), sh["max_abs_error"].get<double>());
		for (const auto &p : sh["points"])
			text += strprintf("  %-14s %12s exact %.4f sampled %.4f\n",
					  p["policy"].get<std::string>().c_str(), p["size"].dump().c_str(),
					  p["exact"].get<double>(), p["sampled"].get<double>());
	}
	if (doc.contains("sweep")) {
		text += strprintf("%-8s %-14s %12s %10s %10s %8s\n", "QPS", "POLICY", "SIZE", "OP_NS", "MOPS",
				  "MISS");
		for (const auto &p : doc["sweep"])
			text += strprintf("%-8s %-14s %12s %10.1f %10.2f %8.4f\n", p["qps"].dump().c_str(),
					  p["policy"].get<std::string>().c_str(), p["size"].dump().c_str(),
					  p["op_ns"].get<double>(), p["mops"].get<double>(),
					  p["miss_ratio"].get<double>());
		for (const auto &k : doc["sweep_knees"])
			text += strprintf("knee %s size %s: %s QPs\n", k["policy"].get<std::string>().c_str(),
					  k["size"].dump().c_str(),
					  k["knee_qps"].is_null() ? "-" : k["knee_qps"].dump().c_str());
	}
	text += strprintf("simulated %s requests in %.3f s, peak memory %s MiB\n",
			  doc["simulated_requests"].dump().c_str(), doc["seconds"].get<double>(),
			  doc["peak_rss_mib"].dump().c_str());
	return text;
}

// CSV: one row per run (or per sweep point), the table's columns.
std::string csv_text(const record &doc)
{
	std::string text;

	if (doc.contains("sweep")) {
		text += strprintf("qps,policy,size,op_ns,mops,miss_ratio\n");
		for (const auto &p : doc["sweep"])
			text += strprintf("%s,%s,%s,%.2f,%.4f,%.6f\n", p["qps"].dump().c_str(),
					  p["policy"].get<std::string>().c_str(), p["size"].dump().c_str(),
					  p["op_ns"].get<double>(), p["mops"].get<double>(),
					  p["miss_ratio"].get<double>());
		return text;
	}
	text += strprintf("policy,size,unit,requests,miss_ratio,byte_miss_ratio,l1,l2,l3,promotions,"
			  "demotions,evictions,writebacks,mean_ns,p99_ns,mreqs_per_s\n");
	for (const auto &r : doc["runs"])
		text += strprintf("%s,%s,%s,%s,%.6f,%.6f,%s,%s,%s,%s,%s,%s,%s,%.2f,%s,%.3f\n",
				  r["policy"].get<std::string>().c_str(), r["size"].dump().c_str(),
				  r["unit"].get<std::string>().c_str(), r["requests"].dump().c_str(),
				  r["miss_ratio"].get<double>(), r["byte_miss_ratio"].get<double>(),
				  r["tiers"][0]["served"].dump().c_str(), r["tiers"][1]["served"].dump().c_str(),
				  r["tiers"][2]["served"].dump().c_str(), r["promotions"].dump().c_str(),
				  r["demotions"].dump().c_str(), r["evictions"].dump().c_str(),
				  r["writebacks"].dump().c_str(), r["mean_ns"].get<double>(),
				  r["p99_ns"].dump().c_str(), r["mreqs_per_s"].get<double>());
	return text;
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
		for (const auto &l : split_list(said, '\n'))
			if (l.find_first_not_of(" \t^") != std::string::npos)
				last = l;
		fail("gnuplot failed on " + dir + "/plot.gp" + (last.empty() ? "" : ": " + last));
	}
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

int sim_run_command(env &e)
{
	bool json = e.opts.json, pretty = e.opts.pretty;
	args words(normalise(e, json, pretty));
	keywords kw;
	std::string err;

	if (!kw.parse(words, sim_run_words, err))
		fail(err + ", try \"dsctl sim help\"");
	std::string outfmt = kw.get("output") ? *kw.get("output") : (json ? "json" : "table");
	if (outfmt != "table" && outfmt != "json" && outfmt != "csv")
		fail("output takes table, json or csv");
	// the script names DIR in gnuplot strings (see gp_quote): refused
	// before the runs, not after them
	if (kw.has("plot"))
		for (unsigned char ch : *kw.get("plot"))
			if (ch < 0x20)
				fail("plot: the directory's name cannot hold control characters");

	record doc;
	{
		dssim::progress prog;
		progress_bar bar(prog);
		doc = sim_execute(kw, &prog);
	}
	if (kw.has("plot"))
		plot(*kw.get("plot"), doc);
	// through dsctl's output, in the mode the words after the command chose
	if (outfmt == "json") {
		e.out.set_mode(pretty ? output::mode::pretty_json : output::mode::json);
		e.out.stream(doc);
	} else {
		e.out.set_mode(output::mode::text);
		e.out.text_block(outfmt == "csv" ? csv_text(doc) : table_text(doc));
	}
	return 0;
}

// The simulator's refusals become dsctl's "Error: ..." and exit 1.
int sim_run(env &e)
{
	try {
		return sim_run_command(e);
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
	r["formats"] = dssim::trace_formats();
	r["compression"] = dssim::trace_compressions();
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
	"where  FORMAT := { oracleGeneral | csv | text | txt | dsmem | twitter | arc | lirs |\n"
	"                  cache2k | scarab | cloud-physics | vscsi } (default: detected)\n"
	"       MAP    := id=N[,time=N][,size=N][,op=N][,header][,sep=C]\n"
	"       P      := { lru | fifo | lfu | arc | s3fifo | sieve | wtinylfu | wtinylfu-dk |\n"
	"                   random | belady | lirs | 2q | clock | slru | lru2 | gdsf |\n"
	"                   hyperbolic | lecar | cacheus | lhd | clockpro | seed |\n"
	"                   seed-adaptive }\n"
	"                 a baseline (not seed) takes admission filters: P[+tinylfu][+size:MAX]\n"
	"       S      := entries, bytes with a K/M/G suffix, or N% of the trace's objects\n"
	"       SPEC   := KIND[:KEY=V,...][+KIND[:KEY=V,...]]... with KIND := { zipf | uniform |\n"
	"                 scan | loop }, or sweep:qps=A..B|A|B...,ops=N,reuse=P,payload=BYTES\n"
	"Keywords may be written --keyword too.\n",
	false,
};

}  // namespace dsctl
