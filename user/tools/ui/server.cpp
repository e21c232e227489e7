// SPDX-License-Identifier: BSD-2-Clause
// The console's HTTP server (cpp-httplib): the JSON API under /api/ and
// the front end's files, embedded in the binary.  Every route goes
// through route(), which checks the session, the CSRF token of requests
// that change state, and the role, and turns errors into JSON.
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <arpa/inet.h>
#include <sys/stat.h>
#include <sodium.h>

#include <httplib.h>

#include "dsctl.hpp"
#include "sim.hpp"
#include "ui.hpp"
#include "www_assets.hpp"

namespace dsui {

namespace {

const char *const cookie_name = "dsui_session";
// the login form's CSRF token, sent to /api/login only
const char *const login_cookie_name = "dsui_login";

enum class needs { open, user, admin };

struct server_state {
	const config &c;
	db &d;
	jobs &j;
	store &s;
	bool tls;
	std::atomic<int> streams{ 0 };	// live tails open, up to log_streams_max
};

void send(httplib::Response &res, int status, const json &body)
{
	res.status = status;
	res.set_content(json_text(body), "application/json");
}

std::string cookie_value(const httplib::Request &req, const char *name)
{
	std::string all = req.get_header_value("Cookie");
	std::string key = std::string(name) + "=";
	size_t at = 0;

	while (at < all.size()) {
		size_t end = all.find(';', at);
		std::string part = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
		size_t b = part.find_first_not_of(' ');
		if (b != std::string::npos && part.compare(b, key.size(), key) == 0)
			return part.substr(b + key.size());
		if (end == std::string::npos)
			break;
		at = end + 1;
	}
	return "";
}

std::string cookie_token(const httplib::Request &req)
{
	return cookie_value(req, cookie_name);
}

// The header equals the cookie, both present: compared in constant time.
bool csrf_matches(const std::string &header, const std::string &expected)
{
	return !expected.empty() && header.size() == expected.size() &&
	       sodium_memcmp(header.data(), expected.data(), header.size()) == 0;
}

bool changes_state(const httplib::Request &req)
{
	return req.method != "GET" && req.method != "HEAD";
}

json body_json(const httplib::Request &req)
{
	if (req.body.empty())
		return json::object();
	json b = json::parse(req.body, nullptr, false);
	if (b.is_discarded())
		raise(400, "the request body is not valid JSON");
	return b;
}

int64_t path_id(const httplib::Request &req, size_t k = 1)
{
	uint64_t v;
	if (req.matches.size() <= k || !dsctl::parse_u64(req.matches[k].str(), v) || !v ||
	    v > uint64_t(INT64_MAX))
		raise(404, "no such object");
	return int64_t(v);
}

using handler = std::function<void(const httplib::Request &, httplib::Response &, const session &)>;

void route(server_state &st, httplib::Server &svr, const char *method, const char *pattern,
	   needs acc, handler h)
{
	auto wrapped = [&st, acc, h](const httplib::Request &req, httplib::Response &res) {
		try {
			session s;
			if (acc != needs::open) {
				auto found = session_get(st.d, cookie_token(req), st.c.session_ttl);
				if (!found)
					raise(401, "not logged in, or the session expired");
				s = *found;
				if (changes_state(req) &&
				    !csrf_matches(req.get_header_value("X-CSRF-Token"), s.csrf))
					raise(403, "missing or wrong CSRF token (header X-CSRF-Token)");
				if (acc == needs::admin && !s.admin())
					raise(403, "this needs the admin role");
			}
			h(req, res, s);
		} catch (const http_error &e) {
			send(res, e.status, { { "error", e.what } });
		} catch (const dsctl::failure &f) {
			send(res, 400, { { "error", f.what } });
		} catch (const dssim::sim_error &e) {
			send(res, 400, { { "error", e.what() } });
		} catch (const json::exception &e) {
			send(res, 400, { { "error", std::string("bad request: ") + e.what() } });
		} catch (const std::bad_alloc &) {
			send(res, 503, { { "error", "out of memory" } });
		} catch (const std::exception &e) {
			send(res, 500, { { "error", e.what() } });
		}
	};
	std::string m = method;
	if (m == "GET")
		svr.Get(pattern, wrapped);
	else if (m == "POST")
		svr.Post(pattern, wrapped);
	else if (m == "DELETE")
		svr.Delete(pattern, wrapped);
	else if (m == "PUT")
		svr.Put(pattern, wrapped);
	else if (m == "PATCH")
		svr.Patch(pattern, wrapped);
}

// "2026-11-22T05:30:00Z", "2026-11-22T05:30" (UTC), or Unix seconds.
std::optional<double> parse_time(const std::string &s, const char *name)
{
	if (s.empty())
		return std::nullopt;
	char *end = nullptr;
	double v = strtod(s.c_str(), &end);
	if (*end == '\0' && end != s.c_str())
		return v;
	struct tm tm = {};
	const char *rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M", &tm);
	if (rest && *rest == ':') {
		const char *r2 = strptime(rest, ":%S", &tm);
		rest = r2 ? r2 : nullptr;
	}
	if (rest && *rest == '.')
		while (isdigit(static_cast<unsigned char>(*++rest)))
			;
	if (!rest || (*rest && strcmp(rest, "Z") != 0))
		raise(400, std::string(name) + " is ISO 8601 (2026-11-22T05:30:00Z) or Unix seconds, not \"" +
		      s + "\"");
	return double(timegm(&tm));
}

log_query parse_log_query(const httplib::Request &req)
{
	log_query q;
	auto get = [&](const char *k) { return req.has_param(k) ? req.get_param_value(k) : std::string(); };
	auto id = [&](const char *k) -> std::optional<int64_t> {
		std::string v = get(k);
		uint64_t n;
		if (v.empty())
			return std::nullopt;
		if (!dsctl::parse_u64(v, n) || n > uint64_t(INT64_MAX))
			raise(400, std::string(k) + " is an event id, not \"" + v + "\"");
		return int64_t(n);
	};

	q.from = parse_time(get("from"), "from");
	q.to = parse_time(get("to"), "to");
	q.level = get("level");
	if (!q.level.empty() && !valid_level(q.level))
		raise(400, "level is debug, info, warning or error, not \"" + q.level + "\"");
	q.component = get("component");
	if (!q.component.empty() && !valid_component(q.component))
		raise(400, "no component \"" + q.component + "\"");
	q.q = get("q");
	if (q.q.size() > 200)
		raise(400, "the search text has at most 200 characters");
	q.node = id("node");
	q.before = id("before");
	q.after = id("after");
	std::string lim = get("limit");
	if (!lim.empty()) {
		unsigned int n;
		if (!dsctl::parse_u32(lim, n) || n < 1 || n > unsigned(log_page_max))
			raise(400, "limit is from 1 to " + std::to_string(log_page_max));
		q.limit = int(n);
	}
	return q;
}

// A CSV cell: quoted, and a leading = + - @ defused for spreadsheets.
std::string csv_cell(const std::string &v)
{
	std::string s = v;
	if (!s.empty() && strchr("=+-@\t\r", s[0]))
		s = "'" + s;
	std::string out = "\"";
	for (char ch : s)
		out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
	return out + "\"";
}

std::string csv_value(const json &v)
{
	return v.is_string() ? csv_cell(v.get<std::string>()) : v.is_null() ? "" : json_text(v);
}

std::string iso_time(double ts)
{
	time_t t = time_t(ts);
	struct tm tm;
	char buf[40];
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03dZ", int((ts - double(t)) * 1000));
	return buf;
}

void attachment(httplib::Response &res, const std::string &name)
{
	res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
}

std::string csv_header(const std::vector<std::string> &cols)
{
	std::string out;
	for (size_t k = 0; k < cols.size(); k++)
		out += (k ? "," : "") + cols[k];
	return out + "\n";
}

std::string csv_row(const json &r, const std::vector<std::string> &cols)
{
	std::string out;
	for (size_t k = 0; k < cols.size(); k++)
		out += (k ? "," : "") + csv_value(r.value(cols[k], json(nullptr)));
	return out + "\n";
}

std::string csv_of(const json &rows, const std::vector<std::string> &cols)
{
	std::string out = csv_header(cols);
	for (const auto &r : rows)
		out += csv_row(r, cols);
	return out;
}

void routes(server_state &st, httplib::Server &svr)
{
	db &d = st.d;
	const config &c = st.c;

	// ---- sessions
	// The login form takes a CSRF token as every other form does, though
	// there is no session yet: else another site could log a visitor's
	// browser in as the attacker (login CSRF), and what the visitor then
	// uploads or starts would be the attacker's to read.
	route(st, svr, "GET", "/api/login", needs::open, [&](auto &, auto &res, auto &) {
		bool any = user_count(d) > 0;
		std::string csrf = login_csrf_new();
		res.set_header("Set-Cookie", std::string(login_cookie_name) + "=" + csrf +
			       "; HttpOnly; SameSite=Strict; Path=/api/login" +
			       (st.tls ? "; Secure" : ""));
		send(res, 200, { { "users", any },
				 { "csrf", csrf },
				 { "hint", any ? "" : "no users yet: create one on the server with "
						      "\"dsctl ui user add NAME role admin\"" } });
	});
	route(st, svr, "POST", "/api/login", needs::open, [&](auto &req, auto &res, auto &) {
		if (!csrf_matches(req.get_header_value("X-CSRF-Token"),
				  cookie_value(req, login_cookie_name)))
			raise(403, "missing or wrong CSRF token (header X-CSRF-Token, with the "
			      "cookie GET /api/login gives)");
		json b = body_json(req);
		if (!b.contains("user") || !b["user"].is_string() || !b.contains("password") ||
		    !b["password"].is_string())
			raise(400, "give user and password");
		std::string name = b["user"];
		if (name.size() > name_max)
			raise(401, "wrong user name or password");
		if (!user_count(d))
			raise(401, "no users yet: create one on the server with "
			      "\"dsctl ui user add NAME role admin\"");
		login_result r = login(d, name, b["password"], req.remote_addr, c.session_ttl);
		if (r.status == 429) {
			res.set_header("Retry-After", std::to_string(r.retry_after));
			if (r.log_refusal)
				log_event(d, "warning", "audit", -1, "login of " + name + " from " +
					  req.remote_addr + " refused: too many failures");
			raise(429, "too many failed logins: try again in " + std::to_string(r.retry_after) + " s");
		}
		if (r.status != 200) {
			log_event(d, "warning", "audit", -1, "failed login of " + name + " from " + req.remote_addr);
			raise(401, "wrong user name or password");
		}
		res.set_header("Set-Cookie", std::string(cookie_name) + "=" + r.token +
			       "; HttpOnly; SameSite=Strict; Path=/" + (st.tls ? "; Secure" : ""));
		audit(d, r.s, "logged in from " + req.remote_addr);
		send(res, 200, { { "user", r.s.user }, { "role", r.s.role }, { "csrf", r.s.csrf },
				 { "expires", r.s.expires } });
	});
	route(st, svr, "GET", "/api/session", needs::user, [&](auto &, auto &res, const session &s) {
		send(res, 200, { { "user", s.user }, { "role", s.role }, { "csrf", s.csrf },
				 { "expires", s.expires } });
	});
	route(st, svr, "POST", "/api/logout", needs::user, [&](auto &req, auto &res, const session &s) {
		session_end(d, cookie_token(req));
		audit(d, s, "logged out");
		res.set_header("Set-Cookie", std::string(cookie_name) +
			       "=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
		send(res, 200, { { "user", s.user } });
	});

	// ---- simulation
	route(st, svr, "GET", "/api/sim/options", needs::user, [&](auto &, auto &res, auto &) {
		json traces = json::array();
		for (const auto &f : files_list(d))
			traces.push_back({ { "id", f["id"] }, { "name", f["name"] }, { "size", f["size"] },
					   { "requests", f["requests"] }, { "source", "upload" } });
		std::error_code ec;
		if (!c.traces_dir.empty())
			for (const auto &e : std::filesystem::directory_iterator(c.traces_dir, ec))
				if (e.is_regular_file() && e.path().filename().string()[0] != '.')
					traces.push_back({ { "id", e.path().filename().string() },
							   { "name", e.path().filename().string() },
							   { "size", e.file_size() }, { "source", "server" } });
		json pols = json::array();
		for (const auto &p : dssim::policy_names())
			pols.push_back(p);
		send(res, 200, { { "policies", pols },
				 { "formats", dssim::trace_formats() },
				 { "generators", { "zipf", "uniform", "scan", "loop", "sweep" } },
				 { "traces", traces } });
	});
	route(st, svr, "POST", "/api/sim/runs", needs::user, [&](auto &req, auto &res, const session &s) {
		send(res, 202, { { "id", st.j.submit(s, body_json(req)) } });
	});
	route(st, svr, "GET", "/api/sim/runs", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, { { "runs", st.j.list() } });
	});
	route(st, svr, "GET", R"(/api/sim/runs/(\d+))", needs::user, [&](auto &req, auto &res, auto &) {
		send(res, 200, st.j.get(path_id(req)));
	});
	route(st, svr, "POST", R"(/api/sim/runs/(\d+)/cancel)", needs::user,
	      [&](auto &req, auto &res, const session &s) {
		      st.j.cancel(s, path_id(req));
		      send(res, 200, st.j.get(path_id(req)));
	      });
	route(st, svr, "DELETE", R"(/api/sim/runs/(\d+))", needs::user,
	      [&](auto &req, auto &res, const session &s) {
		      st.j.remove(s, path_id(req));
		      send(res, 200, { { "id", path_id(req) } });
	      });

	// ---- logs
	route(st, svr, "GET", "/api/logs", needs::user, [&](auto &req, auto &res, auto &) {
		log_query q = parse_log_query(req);
		std::string fmt = req.has_param("format") ? req.get_param_value("format") : "json";
		if (fmt == "json" && !req.has_param("format")) {
			send(res, 200, logs_query(d, q));
			return;
		}
		std::string out;
		if (fmt == "csv") {
			out = csv_header({ "id", "ts", "level", "node", "component", "message" });
			logs_each(d, q, [&](const stmt &row) {
				out += std::to_string(row.i64(0)) + "," + iso_time(row.f64(1)) + "," +
				       csv_cell(row.text(2)) + "," +
				       (row.null(3) ? "" : std::to_string(row.i64(3))) + "," +
				       csv_cell(row.text(4)) + "," + csv_cell(row.text(5)) + "\n";
			});
			attachment(res, "dsmem-logs.csv");
			res.set_content(out, "text/csv");
		} else if (fmt == "json") {
			out = "[";
			logs_each(d, q, [&](const stmt &row) {
				out += (out.size() > 1 ? ",\n" : "\n") + json_text(event_json(row));
			});
			out += "\n]\n";
			attachment(res, "dsmem-logs.json");
			res.set_content(out, "application/json");
		} else {
			raise(400, "format is json or csv");
		}
	});

	// ---- the live tail: Server-Sent Events, each event once, in order.
	// An EventSource reconnecting sends the last id it had (Last-Event-ID)
	// and gets what came after it; a new one starts at "after", else now.
	route(st, svr, "GET", "/api/logs/stream", needs::user, [&](auto &req, auto &res, auto &) {
		log_query q = parse_log_query(req);
		if (q.from || q.to || q.before)
			raise(400, "the live tail takes level, component, node, q and after");
		std::string resume = req.get_header_value("Last-Event-ID");
		uint64_t from = 0;
		if (!resume.empty() && (!dsctl::parse_u64(resume, from) || from > uint64_t(INT64_MAX)))
			raise(400, "Last-Event-ID is an event id, not \"" + resume + "\"");
		int64_t last = !resume.empty() ? int64_t(from) : q.after ? *q.after : log_newest(d);
		if (++st.streams > log_streams_max) {
			--st.streams;
			res.set_header("Retry-After", "5");
			raise(503, "too many live tails open (" + std::to_string(log_streams_max) +
			      "): close one, or try again later");
		}
		// the count is given back when the response, and so this, goes
		struct tail {
			tail(std::atomic<int> &o, const log_query &lq, std::string tok, int64_t from)
				: open(o), q(lq), token(std::move(tok)), last(from) {}
			tail(const tail &) = delete;
			~tail() { --open; }
			std::atomic<int> &open;
			log_query q;
			std::string token;
			int64_t last;
			bool more = true;	// look before waiting: the first time, a full page
			double beat = 0, check = 0;
		};
		auto t = std::make_shared<tail>(st.streams, q, cookie_token(req), last);
		t->q.after.reset();
		t->q.oldest_first = true;
		t->q.limit = log_page_max;
		t->beat = t->check = now_s() + log_stream_heartbeat_s;
		res.set_header("Cache-Control", "no-cache");
		res.set_chunked_content_provider("text/event-stream", [&st, t](size_t, httplib::DataSink &sink) {
			try {
				if (!t->more &&
				    !log_feed::get().wait(t->last, std::chrono::milliseconds(log_stream_poll_ms)))
					return false;
				if (log_feed::get().closing())
					return false;
				double now = now_s();
				// logged out, expired or removed: the stream ends with the session
				if (now >= t->check) {
					if (!session_get(st.d, t->token, st.c.session_ttl, false))
						return false;
					t->check = now + log_stream_heartbeat_s;
				}
				std::string out;
				int64_t upto = log_newest(st.d);
				t->more = false;
				if (upto > t->last) {
					log_query page = t->q;
					page.after = t->last;
					page.before = upto + 1;
					json r = logs_query(st.d, page);
					for (const auto &e : r["events"])
						out += "id: " + std::to_string(e["id"].get<int64_t>()) + "\ndata: " +
						       json_text(e) + "\n\n";
					t->more = !r["next"].is_null();
					t->last = t->more ? r["next"].get<int64_t>() : upto;
				}
				if (out.empty() && now >= t->beat)
					out = ": still here\n\n";	// a comment: finds a client gone
				if (out.empty())
					return true;
				t->beat = now + log_stream_heartbeat_s;
				return sink.write(out.data(), out.size());
			} catch (...) {
				return false;	// a database error ends this stream; the page reconnects
			}
		});
	});

	// ---- users (admins): the rules of "dsctl ui user", the same calls
	route(st, svr, "GET", "/api/users", needs::admin, [&](auto &, auto &res, auto &) {
		send(res, 200, { { "users", user_list(d) } });
	});
	auto text_field = [](const json &b, const char *k) {
		if (!b.is_object() || !b.contains(k) || !b[k].is_string())
			raise(400, std::string("give ") + k + " as a string");
		return b[k].get<std::string>();
	};
	route(st, svr, "POST", "/api/users", needs::admin, [&, text_field](auto &req, auto &res, const session &s) {
		json b = body_json(req);
		std::string name = text_field(b, "name");
		std::string role = b.contains("role") ? text_field(b, "role") : "viewer";
		user_add(d, name, text_field(b, "password"), role);
		audit(d, s, "added user " + name + " as " + role, { { "user", name }, { "role", role } });
		send(res, 201, { { "name", name }, { "role", role } });
	});
	const char *user_path = R"(/api/users/([A-Za-z0-9._-]{1,64}))";
	route(st, svr, "PATCH", user_path, needs::admin, [&, text_field](auto &req, auto &res, const session &s) {
		std::string name = req.matches[1].str();
		std::string role = text_field(body_json(req), "role");
		std::string was = user_set_role(d, name, role);
		audit(d, s, "made " + name + " " + role + " (was " + was + ")",
		      { { "user", name }, { "role", { { "from", was }, { "to", role } } } });
		send(res, 200, { { "name", name }, { "role", role } });
	});
	route(st, svr, "POST", std::string(user_path).append("/password").c_str(), needs::admin,
	      [&, text_field](auto &req, auto &res, const session &s) {
		      std::string name = req.matches[1].str();
		      user_set_password(d, name, text_field(body_json(req), "password"));
		      audit(d, s, "reset the password of " + name, { { "user", name } });
		      send(res, 200, { { "name", name } });
	      });
	route(st, svr, "DELETE", user_path, needs::admin, [&](auto &req, auto &res, const session &s) {
		std::string name = req.matches[1].str();
		user_del(d, name);
		audit(d, s, "removed user " + name, { { "user", name } });
		send(res, 200, { { "name", name } });
	});

	// ---- data
	route(st, svr, "GET", "/api/data/files", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, { { "files", files_list(d) } });
	});
	route(st, svr, "POST", "/api/data/files", needs::user, [&](auto &req, auto &res, const session &s) {
		if (!req.is_multipart_form_data() || !req.has_file("file"))
			raise(400, "upload a file as multipart/form-data field \"file\"");
		const auto &f = req.get_file_value("file");
		if (f.content.size() > c.upload_limit)
			raise(413, "the file is over the upload limit of " + std::to_string(c.upload_limit) + " bytes");
		if (f.content.empty())
			raise(400, "the file is empty");
		auto field = [&](const char *k) {
			return req.has_file(k) ? req.get_file_value(k).content : std::string();
		};
		send(res, 201, file_add(d, c, s, f.content, f.filename, field("format"), field("csv")));
	});
	route(st, svr, "GET", R"(/api/data/files/(\d+)/download)", needs::user,
	      [&](auto &req, auto &res, auto &) {
		      int64_t id = path_id(req);
		      json f = file_get(d, id);
		      std::ifstream in(file_path(d, c, id), std::ios::binary);
		      if (!in)
			      raise(500, "file " + std::to_string(id) + " is in the list but not on disk");
		      std::ostringstream ss;
		      ss << in.rdbuf();
		      attachment(res, f["name"]);
		      res.set_content(ss.str(), f["format"] == "csv" ? "text/csv" :
					      f["format"] == "text" ? "text/plain" : "application/octet-stream");
	      });
	route(st, svr, "DELETE", R"(/api/data/files/(\d+))", needs::user,
	      [&](auto &req, auto &res, const session &s) {
		      file_del(d, c, s, path_id(req));
		      send(res, 200, { { "id", path_id(req) } });
	      });
	route(st, svr, "POST", R"(/api/data/files/(\d+)/(convert|sample|filter))", needs::user,
	      [&](auto &req, auto &res, const session &s) {
		      send(res, 201, file_derive(d, c, s, path_id(req), req.matches[2].str(), body_json(req)));
	      });
	route(st, svr, "GET", R"(/api/data/files/(\d+)/analyze)", needs::user,
	      [&](auto &req, auto &res, auto &) {
		      json a = file_analyze(d, c, path_id(req));
		      if (!req.has_param("format") || req.get_param_value("format") == "json") {
			      send(res, 200, a);
			      return;
		      }
		      if (req.get_param_value("format") != "csv")
			      raise(400, "format is json or csv");
		      std::string part = req.has_param("part") ? req.get_param_value("part") : "";
		      static const std::map<std::string, std::vector<std::string>> cols = {
			      { "top", { "key", "count", "bytes" } },
			      { "reuse", { "le", "count" } },
			      { "wss", { "start", "objects", "bytes" } },
		      };
		      auto it = cols.find(part);
		      if (it == cols.end())
			      raise(400, "part is top, reuse or wss");
		      attachment(res, "file-" + std::to_string(path_id(req)) + "-" + part + ".csv");
		      res.set_content(csv_of(a[part], it->second), "text/csv");
	      });

	// ---- cluster
	route(st, svr, "GET", "/api/cluster", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, cluster_get());
	});
	route(st, svr, "POST", "/api/cluster/cache", needs::admin, [&](auto &req, auto &res, const session &s) {
		send(res, 200, cluster_cache_set(d, s, body_json(req)));
	});
	route(st, svr, "GET", "/api/cluster/slope", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, cluster_slope());
	});

	// ---- the object store (read only)
	route(st, svr, "GET", "/api/store", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, st.s.summary());
	});
	route(st, svr, "GET", "/api/store/master", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, st.s.master());
	});
	route(st, svr, "GET", "/api/store/segments", needs::user, [&](auto &, auto &res, auto &) {
		send(res, 200, st.s.segments());
	});
	route(st, svr, "GET", "/api/store/objects", needs::user, [&](auto &req, auto &res, auto &) {
		auto get = [&](const char *k) { return req.has_param(k) ? req.get_param_value(k) : std::string(); };
		unsigned int limit = store_page_default;
		if (std::string lim = get("limit"); !lim.empty() &&
		    (!dsctl::parse_u32(lim, limit) || limit < 1 || limit > store_page_max))
			raise(400, "limit is from 1 to " + std::to_string(store_page_max));
		send(res, 200, st.s.objects(get("prefix"), get("after"), limit));
	});

	// ---- anything else under /api/: the session first, then 404
	for (const char *m : { "GET", "POST", "DELETE", "PUT", "PATCH" })
		route(st, svr, m, "/api/.*", needs::user, [](auto &req, auto &, auto &) {
			raise(404, "no endpoint " + req.method + " " + req.path);
		});

	// ---- the front end
	svr.Get("/(.*)", [](const httplib::Request &req, httplib::Response &res) {
		std::string p = req.path == "/" ? "/index.html" : req.path;
		for (size_t k = 0; k < www_asset_count; k++)
			if (p == www_assets[k].path) {
				res.set_content(reinterpret_cast<const char *>(www_assets[k].data),
						www_assets[k].size, www_assets[k].type);
				res.set_header("Cache-Control", "no-cache");
				return;
			}
		send(res, 404, { { "error", "no page " + req.path } });
	});
}

bool loopback(const std::string &host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (host == "localhost")
		return true;
	if (inet_pton(AF_INET, host.c_str(), &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host.c_str(), &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

}  // namespace

int serve(const config &c)
{
	bool tls = !c.cert.empty();

	if (!loopback(c.host) && !tls && !c.insecure)
		raise(400, "listening on " + c.host + " (beyond loopback) needs cert FILE and key FILE, "
		      "or the insecure flag for plain HTTP");
	if (c.cert.empty() != c.key.empty())
		raise(400, "give both cert FILE and key FILE");
	for (const auto &f : { c.cert, c.key })
		if (!f.empty() && access(f.c_str(), R_OK) != 0)
			raise(400, "cannot read " + f + ": " + strerror(errno));
	if (!c.traces_dir.empty() && !std::filesystem::is_directory(c.traces_dir))
		raise(400, "traces: " + c.traces_dir + " is not a directory");

	// SIGINT and SIGTERM stop the server cleanly: blocked in every thread,
	// waited for by one
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, nullptr);

	// the database holds password hashes and sessions: this user's alone
	umask(077);
	db d(c.db_path);
	std::error_code ec;
	std::filesystem::create_directories(files_dir(c), ec);
	if (ec)
		raise(500, "cannot create " + files_dir(c) + ": " + ec.message());
	jobs j(d, c);
	store so(c);
	listener l(d);
	std::unique_ptr<httplib::Server> svr;
	if (tls)
		svr = std::make_unique<httplib::SSLServer>(c.cert.c_str(), c.key.c_str());
	else
		svr = std::make_unique<httplib::Server>();
	if (!svr->is_valid())
		raise(400, "cannot start HTTPS with " + c.cert + " and " + c.key);
	server_state st{ c, d, j, so, tls };
	// each live tail holds a worker while it is open
	svr->new_task_queue = [] { return new httplib::ThreadPool(http_workers); };

	// a response's header and body leave as separate writes: without
	// this, Nagle holds the body for the client's delayed ACK (~40 ms per
	// request on a kept-alive connection)
	svr->set_tcp_nodelay(true);
	// room for the multipart framing around the largest upload; every
	// other body is small, and is refused before it is read (anyone can
	// send one to /api/login)
	svr->set_payload_max_length(c.upload_limit + (1 << 16));
	svr->set_pre_routing_handler([](const httplib::Request &req, httplib::Response &res) {
		if (req.method == "POST" && req.path == "/api/data/files")
			return httplib::Server::HandlerResponse::Unhandled;
		std::string te = req.get_header_value("Transfer-Encoding");
		uint64_t len = 0;
		if (req.has_header("Content-Length") &&
		    !dsctl::parse_u64(req.get_header_value("Content-Length"), len))
			len = UINT64_MAX;
		if (len > body_max || (!te.empty() && te != "identity")) {
			send(res, 413, { { "error", "a request body has at most " + std::to_string(body_max) +
						    " bytes (uploads aside), with a Content-Length" } });
			return httplib::Server::HandlerResponse::Handled;
		}
		return httplib::Server::HandlerResponse::Unhandled;
	});
	svr->set_post_routing_handler([](const httplib::Request &, httplib::Response &res) {
		res.set_header("Content-Security-Policy",
			       "default-src 'self'; img-src 'self' data:; style-src 'self'; "
			       "frame-ancestors 'none'");
		res.set_header("X-Content-Type-Options", "nosniff");
		res.set_header("X-Frame-Options", "DENY");
		res.set_header("Referrer-Policy", "no-referrer");
	});
	svr->set_error_handler([&c](const httplib::Request &, httplib::Response &res) {
		if (!res.body.empty())
			return;
		if (res.status == 413)
			send(res, 413, { { "error", "the request is over the upload limit of " +
						     std::to_string(c.upload_limit) + " bytes" } });
		else
			send(res, res.status, { { "error", res.status == 404 ? "not found" :
							  "HTTP status " + std::to_string(res.status) } });
	});
	routes(st, *svr);

	int port = c.port;
	if (port == 0)
		port = svr->bind_to_any_port(c.host);
	else if (!svr->bind_to_port(c.host, port))
		port = -1;
	if (port < 0)
		raise(500, "cannot listen on " + c.host + ":" + std::to_string(c.port) + ": " + strerror(errno));

	std::string host = c.host.find(':') != std::string::npos ? "[" + c.host + "]" : c.host;
	log_event(d, "info", "console", -1, "console started on " + host + ":" + std::to_string(port));
	bool no_users = !user_count(d);

	// a signal that comes before the server runs is held until it does:
	// stop() on a server not yet listening would be lost
	std::atomic<bool> signaled{ false }, done{ false };
	std::thread sig([&] {
		int signo;
		sigwait(&stop, &signo);
		signaled = true;
		log_feed::get().close();	// the live tails end: their workers are joined
		while (!svr->is_running() && !done)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		svr->stop();
	});
	printf("dsctl ui: listening on %s://%s:%d/\n", tls ? "https" : "http", host.c_str(), port);
	if (no_users)
		printf("dsctl ui: no users yet: create one with \"dsctl ui user add NAME role admin db %s\"\n",
		       c.db_path.c_str());
	fflush(stdout);
	svr->listen_after_bind();
	done = true;
	// listen returned: by a signal, or by a failure (then wake the waiter)
	if (!signaled)
		pthread_kill(sig.native_handle(), SIGTERM);
	log_feed::get().close();
	sig.join();
	try {
		log_event(d, "info", "console", -1, "console stopped");
	} catch (...) {
		// stopped all the same
	}
	return 0;
}

}  // namespace dsui
