// SPDX-License-Identifier: BSD-2-Clause
// The history's JSON Lines: see docs/chaos.md.
#include "history.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

using json = nlohmann::json;

namespace dschaos {

const char *fn_name(fn f)
{
	switch (f) {
	case fn::put:
		return "put";
	case fn::get:
		return "get";
	case fn::del:
		return "del";
	case fn::exist:
		return "exist";
	}
	return "?";
}

const char *outcome_name(outcome o)
{
	switch (o) {
	case outcome::ok:
		return "ok";
	case outcome::fail:
		return "fail";
	case outcome::info:
		return "info";
	}
	return "?";
}

history_error::history_error(size_t line, const std::string &what)
	: std::runtime_error(line ? "line " + std::to_string(line) + ": " + what : what), line_(line)
{
}

namespace {

class line_reader {
public:
	line_reader(const json &j, size_t ln) : j_(j), ln_(ln) {}

	[[noreturn]] void fail(const std::string &what) const { throw history_error(ln_, what); }

	bool has(const char *name) const
	{
		auto it = j_.find(name);
		return it != j_.end() && !it->is_null();
	}

	const json &need(const char *name) const
	{
		auto it = j_.find(name);
		if (it == j_.end() || it->is_null())
			fail(std::string("no \"") + name + "\"");
		return *it;
	}

	std::string str(const char *name) const
	{
		const json &v = need(name);
		if (!v.is_string())
			fail(std::string("\"") + name + "\" is not a string");
		return v.get<std::string>();
	}

	int64_t i64(const char *name) const
	{
		const json &v = need(name);
		if (v.is_number_unsigned()) {
			if (v.get<uint64_t>() > static_cast<uint64_t>(never) - 1)
				fail(std::string("\"") + name + "\" is too large");
			return static_cast<int64_t>(v.get<uint64_t>());
		}
		if (!v.is_number_integer())
			fail(std::string("\"") + name + "\" is not an integer");
		return v.get<int64_t>();
	}

	uint64_t u64(const char *name) const
	{
		const json &v = need(name);
		if (!v.is_number_unsigned())	// nlohmann: any integer >= 0
			fail(std::string("\"") + name + "\" is not an integer >= 0");
		return v.get<uint64_t>();
	}

	bool boolean(const char *name) const
	{
		const json &v = need(name);
		if (!v.is_boolean())
			fail(std::string("\"") + name + "\" is not true or false");
		return v.get<bool>();
	}

	bool opt_bool(const char *name, bool dflt) const { return has(name) ? boolean(name) : dflt; }

private:
	const json &j_;
	size_t ln_;
};

fn parse_fn(const line_reader &r, const std::string &f)
{
	if (f == "put")
		return fn::put;
	if (f == "get")
		return fn::get;
	if (f == "del")
		return fn::del;
	if (f == "exist")
		return fn::exist;
	r.fail("\"f\" is \"" + f + "\", not put, get, del or exist");
}

std::string brief(const std::string &what)
{
	// nlohmann's "[json.exception.parse_error.101] parse error at line 1,
	// column 5: ..." -- the line is ours to give
	auto p = what.find("column");
	return p == std::string::npos ? what : what.substr(p);
}

struct process_state {
	size_t open = SIZE_MAX;		// the op it has invoked, not completed
	int64_t last = std::numeric_limits<int64_t>::min();
	size_t last_line = 0;
};

}  // namespace

history read_history(std::istream &in)
{
	history h;
	std::unordered_map<uint64_t, process_state> procs;
	std::vector<size_t> running;	// faults started, not stopped
	std::string text;
	size_t ln = 0;
	bool any = false;

	while (std::getline(in, text)) {
		ln++;
		if (text.find_first_not_of(" \t\r") == std::string::npos)
			continue;
		json j;
		try {
			j = json::parse(text);
		} catch (const json::parse_error &e) {
			throw history_error(ln, "not JSON (" + brief(e.what()) + ")");
		}
		if (!j.is_object())
			throw history_error(ln, "not a JSON object");
		line_reader r(j, ln);
		const std::string type = r.str("type");
		const int64_t t = r.i64("time");
		if (!any || t < h.t0)
			h.t0 = t;
		any = true;

		if (type == "nemesis") {
			const std::string f = r.str("f");
			const std::string name = r.str("fault");
			if (f == "start") {
				fault x;
				x.name = name;
				x.detail = r.has("detail") ? r.str("detail") : "";
				x.start = t;
				x.line = ln;
				h.faults.push_back(x);
				running.push_back(h.faults.size() - 1);
			} else if (f == "stop") {
				auto it = std::find_if(running.rbegin(), running.rend(),
						       [&](size_t i) { return h.faults[i].name == name; });
				if (it == running.rend())
					r.fail("stop of fault \"" + name + "\", which is not running");
				fault &x = h.faults[*it];
				if (t < x.start)
					r.fail("fault \"" + name + "\" stops before it started (line " +
					       std::to_string(x.line) + ")");
				x.stop = t;
				running.erase(std::next(it).base());
			} else {
				r.fail("nemesis \"f\" is \"" + f + "\", not start or stop");
			}
			continue;
		}

		const uint64_t p = r.u64("process");
		process_state &ps = procs[p];
		if (t < ps.last)
			r.fail("time goes backwards for process " + std::to_string(p) + " (" +
			       std::to_string(t) + " after " + std::to_string(ps.last) + " on line " +
			       std::to_string(ps.last_line) + ")");
		ps.last = t;
		ps.last_line = ln;
		const fn f = parse_fn(r, r.str("f"));

		if (type == "invoke") {
			if (ps.open != SIZE_MAX) {
				const op &o = h.ops[ps.open];
				r.fail("process " + std::to_string(p) + " invokes again while its " +
				       fn_name(o.f) + " of line " + std::to_string(o.line) + " is open");
			}
			op o;
			o.f = f;
			o.process = p;
			o.key = r.str("key");
			o.call = t;
			o.line = ln;
			if (f == fn::put)
				o.value = r.u64("value");
			o.final = r.opt_bool("final", false);
			h.ops.push_back(std::move(o));
			ps.open = h.ops.size() - 1;
			continue;
		}

		outcome res;
		if (type == "ok")
			res = outcome::ok;
		else if (type == "fail")
			res = outcome::fail;
		else if (type == "info")
			res = outcome::info;
		else
			r.fail("\"type\" is \"" + type + "\", not invoke, ok, fail, info or nemesis");
		if (ps.open == SIZE_MAX)
			r.fail("process " + std::to_string(p) + " completes a " + fn_name(f) +
			       " it did not invoke");
		op &o = h.ops[ps.open];
		if (o.f != f)
			r.fail(std::string("process ") + std::to_string(p) + " completes a " + fn_name(f) +
			       " but invoked a " + fn_name(o.f) + " (line " + std::to_string(o.line) + ")");
		if (r.has("key") && r.str("key") != o.key)
			r.fail("the completion's key is not its invocation's (line " +
			       std::to_string(o.line) + ")");
		ps.open = SIZE_MAX;
		o.type = res;
		o.done_line = ln;
		o.ret = res == outcome::info ? never : t;
		if (r.has("error"))
			o.error = r.str("error");
		if (res != outcome::ok)
			continue;
		switch (f) {
		case fn::put:
			if (r.has("version")) {
				o.has_version = true;
				o.version = r.i64("version");
			}
			break;
		case fn::get:
		case fn::exist:
			o.found = r.boolean("found");
			if (!o.found)
				break;
			if (f == fn::get) {
				o.value = r.u64("value");
				o.checksum_ok = r.opt_bool("checksum_ok", true);
			}
			if (r.has("version")) {
				o.has_version = true;
				o.version = r.i64("version");
			}
			break;
		case fn::del:
			o.found = r.boolean("found");
			break;
		}
	}
	for (auto &[p, ps] : procs)
		if (ps.open != SIZE_MAX) {
			h.ops[ps.open].type = outcome::info;
			h.ops[ps.open].error = "no completion in the history";
			h.open_at_end++;
		}
	std::stable_sort(h.ops.begin(), h.ops.end(),
			 [](const op &a, const op &b) { return a.call < b.call; });
	std::stable_sort(h.faults.begin(), h.faults.end(),
			 [](const fault &a, const fault &b) { return a.start < b.start; });
	return h;
}

history parse_history(const std::string &text)
{
	std::istringstream in(text);
	return read_history(in);
}

}  // namespace dschaos
