// SPDX-License-Identifier: BSD-2-Clause
// dsctl ui: the web console's parts and what they share.  One process:
// an HTTP server (cpp-httplib), one SQLite database, a simulation worker
// and a netlink listener.  Lock order: a part's own lock, then db::lock_.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "run.hpp"

struct ds_store;	// <dsmem/store.h>

namespace dsui {

using json = nlohmann::ordered_json;

// Limits and defaults, in one place.
constexpr uint64_t upload_limit_default = 64ULL << 20;
constexpr uint64_t session_ttl_default = 12 * 3600;	// seconds idle
// failed logins refused beyond, per user name and per client address
// (an address may be shared: a NAT, a proxy), in this many seconds
constexpr int login_fail_max_user = 5;
constexpr int login_fail_max_addr = 20;
constexpr int login_fail_window = 300;
constexpr size_t name_max = 64;
constexpr size_t password_min = 8;
constexpr size_t password_max = 1024;
constexpr int log_page_max = 1000;
constexpr int log_page_default = 100;
constexpr size_t log_export_max = 100000;
constexpr size_t runs_kept_max = 1000;
constexpr size_t analyze_top = 20;
constexpr uint64_t gen_requests_max = 100000000;	// a generator's requests
constexpr size_t run_specs_max = 100;			// policies x sizes of a run
constexpr uint64_t run_windows_max = 10000;		// miss-ratio windows of a run
constexpr size_t run_request_max = 16384;		// a run's request, as JSON
// bodies beyond this are refused before they are read, but uploads'
constexpr size_t body_max = 256 * 1024;
constexpr int64_t events_kept_max = 1000000;		// the oldest go first
constexpr int refusal_log_interval = 60;		// s: one "refused" per name
constexpr unsigned store_page_default = 100;		// objects a listing answers
constexpr unsigned store_page_max = 1000;
// the live tail's Server-Sent Event streams: each holds one of the HTTP
// server's worker threads, so the pool has this many more than the
// requests of pages need (http_workers)
constexpr int log_streams_max = 8;
constexpr int http_workers = 8 + log_streams_max;
constexpr int log_stream_heartbeat_s = 5;	// a comment line: a gone client is found (its second write fails)
constexpr int log_stream_poll_ms = 2000;	// another process's events, at most this late

struct config {
	std::string host = "127.0.0.1";
	uint16_t port = 8080;
	std::string db_path;
	std::string cert, key;		// both or neither: HTTPS
	bool insecure = false;		// plain HTTP beyond loopback
	uint64_t upload_limit = upload_limit_default;
	uint64_t session_ttl = session_ttl_default;
	std::string traces_dir;		// server-side traces, "" none
	// the object store: its masters ("" none: the store page says so)
	// and the local node its object listing joins as (0: no listing)
	std::string store_masters;
	uint32_t store_node = 0;
};

// An answer other than 200, raised by a handler: {"error": what}.
struct http_error {
	int status;
	std::string what;
};
[[noreturn]] void raise(int status, const std::string &what);

double now_s();		// Unix time, seconds with a fraction

// JSON text of j, bytes that are not UTF-8 (a file name, a trace's field
// quoted in an error) replaced rather than thrown on.
std::string json_text(const json &j, int indent = -1);
// s with every byte sequence that is not UTF-8 replaced by U+FFFD.
std::string valid_utf8(const std::string &s);

// ---- db.cpp: one SQLite connection behind a mutex ---------------------------
class stmt;
class db {
public:
	explicit db(const std::string &path);	// opens, creates the schema
	~db();
	db(const db &) = delete;
	db &operator=(const db &) = delete;

	// A statement with parameters bound in order.  Ids and counts come
	// from RETURNING: the connection's last rowid and change count are
	// shared by every thread.
	stmt prepare(const std::string &sql);
	// Several statements as one transaction.
	void begin() { exec("BEGIN IMMEDIATE"); }
	void commit() { exec("COMMIT"); }
	void rollback() { exec("ROLLBACK"); }
	void exec(const std::string &sql);
	std::recursive_mutex lock_;

private:
	friend class stmt;
	sqlite3 *h_ = nullptr;
};

// A prepared statement: bind values (1-based, in order), step() rows,
// read columns.  Errors throw http_error 500 with SQLite's message.
class stmt {
public:
	stmt(db &d, const std::string &sql);
	~stmt();
	stmt(stmt &&o) noexcept : d_(o.d_), s_(o.s_), n_(o.n_) { o.s_ = nullptr; }
	stmt(const stmt &) = delete;

	stmt &bind(int64_t v);
	stmt &bind(double v);
	stmt &bind(const std::string &v);
	// NULL for "absent": an empty string, a negative number
	stmt &bind_or_null(const std::string &v);
	stmt &bind_or_null(int64_t v);
	bool step();	// true: a row is ready
	void run();	// step to the end
	int64_t i64(int col) const;
	double f64(int col) const;
	std::string text(int col) const;
	bool null(int col) const;

private:
	db &d_;
	sqlite3_stmt *s_;
	int n_ = 0;
};

// ---- auth.cpp: users, sessions, logins ---------------------------------------
struct session {
	int64_t user_id = 0;
	std::string user, role, csrf;
	double expires = 0;
	bool admin() const { return role == "admin"; }
};

// A user's name, role and password: the one set of rules, for "dsctl ui
// user" and the console's user page alike (http_error 400 when broken).
bool valid_name(const std::string &name);
void check_name(const std::string &name);
void check_role(const std::string &role);
void check_password(const std::string &password);
void user_add(db &d, const std::string &name, const std::string &password,
	      const std::string &role);	// throws http_error 400/409
// These throw 404 for no such user, and 409 rather than remove or demote
// the last admin.  A new password ends the user's sessions.
void user_del(db &d, const std::string &name);
std::string user_set_role(db &d, const std::string &name, const std::string &role);	// the old role
void user_set_password(db &d, const std::string &name, const std::string &password);
json user_list(db &d);
int64_t user_count(db &d);

struct login_result {
	int status;		// 200, 401 or 429
	std::string token;	// the cookie's value, on 200
	session s;
	int retry_after = 0;	// on 429
	bool log_refusal = false;	// on 429: the first of a while, to log
};
login_result login(db &d, const std::string &name, const std::string &password,
		   const std::string &addr, uint64_t ttl);
// The session a cookie's token names, its expiry pushed on; none if it
// is unknown or expired (and then it is deleted).  touch false: its
// expiry stays (a live tail's check is no sign of someone at the page).
std::optional<session> session_get(db &d, const std::string &token, uint64_t ttl, bool touch = true);
// A CSRF token for the login form, which has no session yet to hold one:
// 32 random bytes in hex, given as a cookie and in GET /api/login's body
// and sent back in the X-CSRF-Token header (a double-submit cookie).
std::string login_csrf_new();
void session_end(db &d, const std::string &token);

// ---- events.cpp: the log (module events and the console's audit log) ------
void log_event(db &d, const std::string &level, const std::string &component,
	       int64_t node, const std::string &message, const json &data = nullptr);
void audit(db &d, const session &s, const std::string &message, const json &data = nullptr);

struct log_query {
	std::optional<double> from, to;
	std::string level, component, q;
	std::optional<int64_t> node, before, after;
	int limit = log_page_default;
	bool oldest_first = false;	// the live tail's order
};
// Events matching q, newest first (or oldest_first):
// {"events": [...], "next": id|null}.
json logs_query(db &d, const log_query &q);
// For export: every match, newest first, up to log_export_max, one at a
// time (an export of them all is not held as one document).
// fn sees each row as the statement: id, ts, level, node, component,
// message, data.
void logs_each(db &d, const log_query &q, const std::function<void(const stmt &)> &fn);
json event_json(const stmt &row);
bool valid_level(const std::string &level);
int64_t log_newest(db &d);	// the newest event's id, 0 for none

// What the live tail's streams wait on: the newest event id this process
// wrote.  Events written by another process ("dsctl ui user" on the same
// database) are found by a stream's next look, at most a wait's timeout on.
class log_feed {
public:
	static log_feed &get();
	void wrote(int64_t id);
	// Until an event newer than seen, or timeout; false once closing.
	bool wait(int64_t seen, std::chrono::milliseconds timeout);
	void close();		// the server stops: every stream ends
	bool closing();

private:
	std::mutex lock_;	// a leaf: nothing is taken under it
	std::condition_variable wake_;
	int64_t newest_ = 0;
	bool closing_ = false;
};
bool valid_component(const std::string &component);

// The module's netlink events, written to the log as they come.
class listener {
public:
	explicit listener(db &d);
	~listener();

private:
	void loop();
	bool listen_once(std::string &last_error);
	db &d_;
	std::atomic<bool> stop_{ false };
	int wake_[2] = { -1, -1 };
	std::thread th_;
};

// ---- jobs.cpp: simulation runs, one at a time, in a worker -------------------
class jobs {
public:
	jobs(db &d, const config &c);
	~jobs();
	// Validate a run request (400 on bad input), queue it: its id.
	int64_t submit(const session &s, const json &req);
	json list();
	json get(int64_t id);
	void cancel(const session &s, int64_t id);
	void remove(const session &s, int64_t id);

private:
	void loop();
	// Write a run's end; false when the database would not take it.
	bool finish(int64_t id, const std::string &state, const std::string &error, const json &result);
	db &d_;
	const config &c_;
	std::mutex lock_;	// before db::lock_
	std::condition_variable wake_;
	bool stop_ = false;
	int64_t running_ = 0;
	std::shared_ptr<dssim::progress> prog_;	// the running job's
	std::thread th_;
};

// ---- data.cpp: uploaded traces and what is made of them ---------------------
std::string files_dir(const config &c);
json files_list(db &d);
json file_get(db &d, int64_t id);
// The stored path of a file, 404 when there is none.
std::string file_path(db &d, const config &c, int64_t id);
// Keep an uploaded trace (its bytes: content) if it parses.
json file_add(db &d, const config &c, const session &s, const std::string &content,
	      const std::string &name, const std::string &format, const std::string &csv);
void file_del(db &d, const config &c, const session &s, int64_t id);
// A new file made of file id: convert, sample or filter.
json file_derive(db &d, const config &c, const session &s, int64_t id,
		 const std::string &what, const json &args);
json file_analyze(db &d, const config &c, int64_t id);

// ---- cluster.cpp: the module's objects, and its cache's settings ---------------
json cluster_get();
json cluster_cache_set(db &d, const session &s, const json &body);

// ---- cluster.cpp: Slope's ranges and migrations as the module shows them
json cluster_slope();

// ---- store.cpp: the object store, read only, through libdsstore -------------
// Masters and segments take no node: each request is one call to the
// masters.  Listing objects needs a client of the store, opened on the
// configured node when first asked for (segment_size 0: it contributes no
// memory) and kept; a failed call drops it and the next one opens anew.
class store {
public:
	explicit store(const config &c);
	~store();
	store(const store &) = delete;
	store &operator=(const store &) = delete;

	json summary() const;			// what is configured
	json master() const;			// 503 none, 502 unreachable
	json segments() const;
	// prefix, after (a previous answer's next), limit 1..1000
	json objects(const std::string &prefix, const std::string &after, unsigned limit);

private:
	const config &c_;
	std::mutex lock_;
	::ds_store *s_ = nullptr;
};

// ---- server.cpp -----------------------------------------------------------------
int serve(const config &c);

}  // namespace dsui
