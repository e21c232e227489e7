// SPDX-License-Identifier: BSD-2-Clause
// Simulation runs: a request becomes the keywords of "dsctl sim run"
// and runs through the same function, so the console's results are the
// command's record.  One run at a time (each uses every core); queued
// runs wait in the database and survive a restart.
#include <filesystem>

#include "dsctl.hpp"
#include "exec.hpp"
#include "ui.hpp"

namespace dsui {

namespace {

// What a request may set: the keywords that write no file of the
// server's (moves, plot) and take no resource limit from the client.
const std::vector<std::pair<const char *, const char *>> request_keys = {
	{ "tiers", "tiers" }, { "latency", "latency" }, { "params", "params" },
	{ "warmup", "warmup" }, { "window", "window" }, { "interval", "interval" },
	{ "seed", "seed" }, { "shards", "shards" }, { "limit", "limit" },
};

std::string as_word(const json &v, const char *name)
{
	if (v.is_string())
		return v.get<std::string>();
	if (v.is_number_unsigned() || v.is_number_integer())
		return std::to_string(v.get<int64_t>());
	if (v.is_number_float())
		return json_text(v);
	raise(400, std::string(name) + " must be a string or a number");
}

std::string joined(const json &v, const char *name)
{
	if (v.is_string())
		return v.get<std::string>();
	if (!v.is_array() || v.empty())
		raise(400, std::string(name) + " must be a non-empty list");
	std::string s;
	for (const auto &x : v) {
		if (!x.is_string() && !x.is_number())
			raise(400, std::string(name) + " holds strings only");
		s += (s.empty() ? "" : ",") + as_word(x, name);
	}
	return s;
}

// A server-side trace's name: a plain file name in the traces directory.
std::string server_trace(const config &c, const std::string &name)
{
	if (c.traces_dir.empty())
		raise(400, "this console has no server-side traces (start it with traces DIR)");
	if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos)
		raise(400, "no server-side trace \"" + name + "\"");
	std::string p = c.traces_dir + "/" + name;
	if (!std::filesystem::is_regular_file(p))
		raise(400, "no server-side trace \"" + name + "\"");
	return p;
}

// The words of "dsctl sim run" for a request, checked as the command
// checks them.
dsctl::keywords request_words(db &d, const config &c, const json &req)
{
	std::vector<std::string> w;
	uint64_t known_requests = 0;	// of a stored file; a generator's is computed

	if (!req.is_object())
		raise(400, "a run is a JSON object");
	if (!req.contains("trace") || !req["trace"].is_object() || req["trace"].size() != 1)
		raise(400, "trace must be one of {\"file\": ID}, {\"server\": NAME} or {\"gen\": SPEC}");
	auto first = req["trace"].begin();
	const std::string kind = first.key();
	const json &v = first.value();
	if (kind == "gen") {
		w = { "gen", as_word(v, "gen") };
		dssim::sweep_spec sw;
		// its record is rates per QP count, which the pages do not chart
		if (dssim::parse_sweep(w[1], sw))
			raise(400, "the console does not run connection sweeps: use \"dsctl sim run gen " +
			      w[1] + "\"");
	} else if (kind == "file") {
		if (!v.is_number_integer())
			raise(400, "trace file must be a file id");
		json f;
		try {
			f = file_get(d, v.get<int64_t>());
		} catch (const http_error &e) {
			raise(400, e.what);	// the run is what is bad, not the URL
		}
		w = { "trace", file_path(d, c, v.get<int64_t>()), "format", f["format"] };
		known_requests = f["requests"].get<uint64_t>();
		if (f.contains("csv") && f["csv"].is_string())
			w.insert(w.end(), { "csv", f["csv"].get<std::string>() });
	} else if (kind == "server") {
		w = { "trace", server_trace(c, as_word(v, "server")) };
	} else {
		raise(400, "trace must be one of {\"file\": ID}, {\"server\": NAME} or {\"gen\": SPEC}");
	}
	if (req.contains("policies"))
		w.insert(w.end(), { "policy", joined(req["policies"], "policies") });
	if (req.contains("sizes"))
		w.insert(w.end(), { "size", joined(req["sizes"], "sizes") });
	for (const auto &[key, word] : request_keys)
		if (req.contains(key) && !req[key].is_null() &&
		    !(req[key].is_string() && req[key].get<std::string>().empty()))
			w.insert(w.end(), { word, as_word(req[key], key) });
	for (const auto &[key, val] : req.items()) {
		bool known = key == "trace" || key == "policies" || key == "sizes" || key == "name";
		for (const auto &rk : request_keys)
			known |= key == rk.first;
		if (!known)
			raise(400, "unknown field \"" + key + "\"");
	}

	dsctl::args a(w);
	dsctl::keywords kw;
	std::string err;
	if (!kw.parse(a, dsctl::sim_run_words, err))
		raise(400, err);
	try {
		dsctl::sim_validate(kw, gen_requests_max);
		// what a run may hold: its specs, and windows of the trace
		size_t specs = dsctl::split_list(kw.get("policy") ? *kw.get("policy") : "lru", ',').size() *
			       dsctl::split_list(kw.get("size") ? *kw.get("size") : "10%", ',').size();
		if (specs > run_specs_max)
			raise(400, "a run has at most " + std::to_string(run_specs_max) +
			      " policy and size pairs, not " + std::to_string(specs));
		uint64_t window = 0, requests = kw.has("gen") ? dssim::generate_requests(*kw.get("gen")) : known_requests;
		if (kw.has("window") && dsctl::parse_u64(*kw.get("window"), window) && window && requests &&
		    requests / window > run_windows_max)
			raise(400, "window " + std::to_string(window) + " makes more than " +
			      std::to_string(run_windows_max) + " windows of " + std::to_string(requests) +
			      " requests: at least " + std::to_string((requests + run_windows_max - 1) / run_windows_max));
		// a server-side trace's length is not known before it is read
		if (kw.has("window") && !requests && window < 1000)
			raise(400, "window on a server-side trace is at least 1000 requests");
	} catch (const dsctl::failure &f) {
		raise(400, f.what);
	} catch (const dssim::sim_error &e) {
		raise(400, e.what());
	}
	return kw;
}

json run_json(const stmt &q, bool with_result)
{
	json r = { { "id", q.i64(0) }, { "name", q.text(1) }, { "user", q.text(2) },
		   { "state", q.text(3) }, { "progress", q.text(3) == "done" ? 1.0 : 0.0 },
		   { "created", q.f64(4) }, { "finished", q.null(5) ? json(nullptr) : json(q.f64(5)) },
		   { "error", q.null(6) ? json(nullptr) : json(q.text(6)) },
		   { "request", json::parse(q.text(7), nullptr, false) } };
	if (with_result)
		r["result"] = q.null(8) ? json(nullptr) : json::parse(q.text(8), nullptr, false);
	return r;
}

const char *const run_cols = "id, name, user, state, created, finished, error, request, result";

}  // namespace

jobs::jobs(db &d, const config &c) : d_(d), c_(c)
{
	// a run the last console was making is lost with it; queued ones wait
	d_.prepare("UPDATE runs SET state = 'failed', finished = ?, error = ? WHERE state = 'running'")
		.bind(now_s()).bind(std::string("the console stopped during the run")).run();
	th_ = std::thread([this] { loop(); });
}

jobs::~jobs()
{
	{
		std::lock_guard<std::mutex> g(lock_);
		stop_ = true;
		if (prog_)
			prog_->cancel = true;
	}
	wake_.notify_all();
	th_.join();
}

int64_t jobs::submit(const session &s, const json &req)
{
	request_words(d_, c_, req);	// refused now, not when it runs
	std::string text = json_text(req);
	if (text.size() > run_request_max)
		raise(413, "a run's request has at most " + std::to_string(run_request_max) + " bytes");
	std::string name = req.contains("name") && req["name"].is_string() ? req["name"].get<std::string>() : "";
	if (name.size() > 200)
		raise(400, "a run's name has at most 200 characters");
	int64_t id;
	{
		std::lock_guard<std::recursive_mutex> g(d_.lock_);
		stmt n = d_.prepare("SELECT count(*) FROM runs");
		n.step();
		if (uint64_t(n.i64(0)) >= runs_kept_max)
			raise(409, "the console keeps " + std::to_string(runs_kept_max) +
			      " runs: delete some first");
		stmt q = d_.prepare("INSERT INTO runs (name, user, state, created, request)"
				    " VALUES (?, ?, 'queued', ?, ?) RETURNING id");
		q.bind(name).bind(s.user).bind(now_s()).bind(text);
		q.step();
		id = q.i64(0);
		q.run();
		if (name.empty())
			d_.prepare("UPDATE runs SET name = ? WHERE id = ?")
				.bind("run " + std::to_string(id)).bind(id).run();
	}
	audit(d_, s, "started simulation run " + std::to_string(id), req);
	{
		// the worker is either before its look at the queue or waiting
		std::lock_guard<std::mutex> g(lock_);
	}
	wake_.notify_all();
	return id;
}

json jobs::list()
{
	json out = json::array();
	stmt q = d_.prepare(std::string("SELECT ") + run_cols + " FROM runs ORDER BY id DESC");
	std::lock_guard<std::mutex> g(lock_);

	while (q.step()) {
		json r = run_json(q, false);
		if (r["id"] == running_ && prog_ && prog_->total)
			r["progress"] = std::min(1.0, double(prog_->done) / double(prog_->total));
		out.push_back(r);
	}
	return out;
}

json jobs::get(int64_t id)
{
	stmt q = d_.prepare(std::string("SELECT ") + run_cols + " FROM runs WHERE id = ?");
	if (!q.bind(id).step())
		raise(404, "no run " + std::to_string(id));
	json r = run_json(q, true);
	std::lock_guard<std::mutex> g(lock_);
	if (id == running_ && prog_ && prog_->total)
		r["progress"] = std::min(1.0, double(prog_->done) / double(prog_->total));
	return r;
}

void jobs::cancel(const session &s, int64_t id)
{
	json r = get(id);
	if (r["user"] != s.user && !s.admin())
		raise(403, "run " + std::to_string(id) + " is " + r["user"].get<std::string>() + "'s");
	std::lock_guard<std::mutex> g(lock_);
	if (id == running_ && prog_) {
		prog_->cancel = true;
	} else {
		stmt q = d_.prepare("UPDATE runs SET state = 'canceled', finished = ?"
				    " WHERE id = ? AND state = 'queued' RETURNING id");
		bool canceled = q.bind(now_s()).bind(id).step();
		q.run();
		if (!canceled)
			raise(409, "run " + std::to_string(id) + " is " + r["state"].get<std::string>() +
			      ": only a queued or running run can be canceled");
	}
	audit(d_, s, "canceled simulation run " + std::to_string(id));
}

void jobs::remove(const session &s, int64_t id)
{
	json r = get(id);
	if (r["user"] != s.user && !s.admin())
		raise(403, "run " + std::to_string(id) + " is " + r["user"].get<std::string>() + "'s");
	std::lock_guard<std::mutex> g(lock_);
	if (id == running_)
		raise(409, "run " + std::to_string(id) + " is running: cancel it first");
	d_.prepare("DELETE FROM runs WHERE id = ?").bind(id).run();
	audit(d_, s, "deleted simulation run " + std::to_string(id));
}

// The worker.  The database can fail it (locked past its timeout, a
// full disk): a queue it cannot read is tried again a second later; a
// result it cannot write, up to ten times; the console goes on.
void jobs::loop()
{
	std::unique_lock<std::mutex> g(lock_);

	while (!stop_) {
		int64_t id = 0;
		json req;
		try {
			stmt q = d_.prepare("SELECT id, request FROM runs WHERE state = 'queued' ORDER BY id LIMIT 1");
			if (q.step()) {
				id = q.i64(0);
				req = json::parse(q.text(1), nullptr, false);
			}
			if (id)
				d_.prepare("UPDATE runs SET state = 'running' WHERE id = ?").bind(id).run();
		} catch (...) {
			wake_.wait_for(g, std::chrono::seconds(1));
			continue;
		}
		if (!id) {
			wake_.wait_for(g, std::chrono::seconds(5));
			continue;
		}
		running_ = id;
		prog_ = std::make_shared<dssim::progress>();
		auto prog = prog_;
		g.unlock();

		std::string state = "done", error;
		json result;
		try {
			dsctl::keywords kw = request_words(d_, c_, req);
			result = dsctl::sim_execute(kw, prog.get());
		} catch (const dssim::sim_error &e) {
			error = e.what();
		} catch (const dsctl::failure &f) {
			error = f.what;
		} catch (const http_error &h) {
			error = h.what;
		} catch (const std::bad_alloc &) {
			error = "out of memory (a shorter trace or smaller sizes)";
		} catch (const std::exception &e) {
			error = e.what();
		}
		if (!error.empty())
			state = "failed";
		// a cancel stops the runs wherever they were (SHARDS included)
		if (prog->cancel) {
			state = "canceled";
			error = "canceled";
			result = nullptr;
		}

		g.lock();
		running_ = 0;
		prog_.reset();
		for (int tries = 0; tries < 10 && !finish(id, state, error, result); tries++)
			wake_.wait_for(g, std::chrono::seconds(1));
	}
}

bool jobs::finish(int64_t id, const std::string &state, const std::string &error, const json &result)
{
	try {
		stmt u = d_.prepare("UPDATE runs SET state = ?, finished = ?, error = ?, result = ? WHERE id = ?");
		u.bind(state).bind(now_s()).bind_or_null(error)
			.bind_or_null(result.is_null() ? std::string() : json_text(result)).bind(id).run();
	} catch (...) {
		return false;
	}
	try {
		log_event(d_, state == "failed" ? "warning" : "info", "console", -1,
			  "simulation run " + std::to_string(id) + " " + state +
			  (error.empty() || state == "canceled" ? "" : ": " + error));
	} catch (...) {
		// the run's state is written; its line in the log is lost
	}
	return true;
}

}  // namespace dsui
