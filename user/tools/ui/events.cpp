// SPDX-License-Identifier: BSD-2-Clause
// The console's log: the module's netlink events (the "events" multicast
// group, through libdsuser's monitor) and the console's own audit log,
// in one SQLite table that the log page queries.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <variant>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <dsmem/ds.hpp>

#include "dsctl.hpp"
#include "ui.hpp"

namespace dsui {

namespace {

const char *const levels[] = { "debug", "info", "warning", "error" };
const char *const components[] = { "device", "node", "peer", "segment", "cache",
				   "migration", "module", "audit", "console" };

// The component an event of the module's belongs to, by its name.
std::string component_of(const std::string &event)
{
	static const std::pair<const char *, const char *> prefixes[] = {
		{ "dev_", "device" }, { "node_", "node" }, { "peer_", "peer" },
		{ "seg_", "segment" }, { "cache_", "cache" }, { "trace_", "cache" },
		{ "mig", "migration" }, { "slope_mig", "migration" }, { "module_", "module" },
	};
	for (const auto &[prefix, comp] : prefixes)
		if (event.rfind(prefix, 0) == 0)
			return comp;
	return "module";
}

// "peer_state node 1 peer 2 state error": the event and its scalar fields.
std::string message_of(const json &r)
{
	std::string m = r.value("event", "event");

	for (const auto &[k, v] : r.items()) {
		if (k == "event" || v.is_structured())
			continue;
		m += " " + k + " " + (v.is_string() ? v.get<std::string>() : json_text(v));
		if (m.size() > 300)
			break;
	}
	return m;
}

std::string level_of(const json &r)
{
	std::string ev = r.value("event", "");
	std::string state = r.contains("state") && r["state"].is_string() ? r["state"].get<std::string>() : "";

	if (state == "error" || state == "down" || state == "failed" || ev == "module_unloaded")
		return "warning";
	return "info";
}

}  // namespace

bool valid_level(const std::string &level)
{
	for (const char *l : levels)
		if (level == l)
			return true;
	return false;
}

bool valid_component(const std::string &component)
{
	for (const char *c : components)
		if (component == c)
			return true;
	return false;
}

void log_event(db &d, const std::string &level, const std::string &component, int64_t node,
	       const std::string &message, const json &data)
{
	stmt q = d.prepare("INSERT INTO events (ts, level, node, component, message, data)"
			   " VALUES (?, ?, ?, ?, ?, ?) RETURNING id");
	q.bind(now_s()).bind(level).bind_or_null(node).bind(component).bind(valid_utf8(message))
		.bind_or_null(data.is_null() ? std::string() : json_text(data));
	q.step();
	int64_t id = q.i64(0);
	q.run();
	// the oldest events go first once there are too many
	if (id % 1024 == 0)
		d.prepare("DELETE FROM events WHERE id <= ?").bind(id - events_kept_max).run();
	log_feed::get().wrote(id);
}

log_feed &log_feed::get()
{
	static log_feed f;
	return f;
}

void log_feed::wrote(int64_t id)
{
	{
		std::lock_guard<std::mutex> g(lock_);
		newest_ = std::max(newest_, id);
	}
	wake_.notify_all();
}

bool log_feed::wait(int64_t seen, std::chrono::milliseconds timeout)
{
	std::unique_lock<std::mutex> g(lock_);
	wake_.wait_for(g, timeout, [&] { return closing_ || newest_ > seen; });
	return !closing_;
}

void log_feed::close()
{
	{
		std::lock_guard<std::mutex> g(lock_);
		closing_ = true;
	}
	wake_.notify_all();
}

bool log_feed::closing()
{
	std::lock_guard<std::mutex> g(lock_);
	return closing_;
}

int64_t log_newest(db &d)
{
	stmt q = d.prepare("SELECT coalesce(max(id), 0) FROM events");
	q.step();
	return q.i64(0);
}

void audit(db &d, const session &s, const std::string &message, const json &data)
{
	log_event(d, "info", "audit", -1, s.user + ": " + message, data);
}

namespace {

// WHERE clause and its parameters, in order: every value is bound.
struct where {
	std::string sql;
	std::vector<std::variant<std::string, double>> args;
	void add(const std::string &cond) { sql += (sql.empty() ? " WHERE " : " AND ") + cond; }
	void text(const std::string &cond, const std::string &v)
	{
		add(cond);
		args.emplace_back(v);
	}
	void num(const std::string &cond, double v)
	{
		add(cond);
		args.emplace_back(v);
	}
	void bind(stmt &q) const
	{
		for (const auto &a : args)
			std::visit([&q](const auto &v) { q.bind(v); }, a);
	}
};

where make_where(const log_query &lq)
{
	where w;

	if (lq.from)
		w.num("ts >= ?", *lq.from);
	if (lq.to)
		w.num("ts <= ?", *lq.to);
	if (!lq.level.empty()) {
		// a level and those above it
		size_t k = 0;
		while (k < 4 && lq.level != levels[k])
			k++;
		std::string in;
		for (size_t j = k; j < 4; j++)
			in += std::string(in.empty() ? "'" : ",'") + levels[j] + "'";
		w.add("level IN (" + in + ")");	// from the fixed table, not from input
	}
	if (!lq.component.empty())
		w.text("component = ?", lq.component);
	if (lq.node)
		w.num("node = ?", double(*lq.node));
	if (!lq.q.empty())
		// plain text, whatever it holds: no LIKE pattern, no SQL
		w.text("instr(lower(message), lower(?)) > 0", lq.q);
	if (lq.before)
		w.num("id < ?", double(*lq.before));
	if (lq.after)
		w.num("id > ?", double(*lq.after));
	return w;
}


}  // namespace

json logs_query(db &d, const log_query &lq)
{
	where w = make_where(lq);
	stmt q = d.prepare("SELECT id, ts, level, node, component, message, data FROM events" + w.sql +
			   (lq.oldest_first ? " ORDER BY id ASC LIMIT ?" : " ORDER BY id DESC LIMIT ?"));
	w.bind(q);
	q.bind(int64_t(lq.limit) + 1);
	json ev = json::array();
	int64_t last = 0;
	bool more = false;
	while (q.step()) {
		if (int(ev.size()) == lq.limit) {
			more = true;
			break;
		}
		ev.push_back(event_json(q));
		last = q.i64(0);
	}
	return { { "events", ev }, { "next", more ? json(last) : json(nullptr) } };
}

// An events row (SELECT id, ts, level, node, component, message, data).
json event_json(const stmt &q)
{
	json e = { { "id", q.i64(0) }, { "ts", q.f64(1) }, { "level", q.text(2) },
		   { "node", q.null(3) ? json(nullptr) : json(q.i64(3)) },
		   { "component", q.text(4) }, { "message", q.text(5) }, { "data", nullptr } };
	if (!q.null(6))
		e["data"] = json::parse(q.text(6), nullptr, false);
	return e;
}

void logs_each(db &d, const log_query &lq, const std::function<void(const stmt &)> &fn)
{
	where w = make_where(lq);
	stmt q = d.prepare("SELECT id, ts, level, node, component, message, data FROM events" + w.sql +
			   " ORDER BY id DESC LIMIT ?");
	w.bind(q);
	q.bind(int64_t(log_export_max));
	while (q.step())
		fn(q);
}

listener::listener(db &d) : d_(d)
{
	if (pipe2(wake_, O_CLOEXEC) < 0)
		raise(500, std::string("pipe: ") + strerror(errno));
	th_ = std::thread([this] { loop(); });
}

listener::~listener()
{
	stop_ = true;
	if (write(wake_[1], "x", 1) < 0) {
		// the thread still sees stop_ within its poll timeout
	}
	th_.join();
	close(wake_[0]);
	close(wake_[1]);
}

// Monitor the module; when monitoring cannot start or fails (no netlink,
// a failure mid-way), note it once and try again every few seconds.  A
// failure to write the log (a locked or full database) costs the events
// of that moment, never the listener: the console runs on without it.
void listener::loop()
{
	std::string last_error;

	while (!stop_) {
		try {
			if (listen_once(last_error))
				return;
		} catch (...) {
			// below: wait as after a failed open, then try again
		}
		struct pollfd p = { wake_[0], POLLIN, 0 };
		poll(&p, 1, 3000);
	}
}

// One monitor, until it fails (false) or the listener stops (true).
bool listener::listen_once(std::string &last_error)
{
	auto mon = dsmem::monitor::open();
	if (!mon) {
		std::string e = mon.err().what();
		if (e != last_error) {
			last_error = e;
			log_event(d_, "warning", "console", -1, "cannot listen to the module's events: " + e);
		}
		return false;
	}
	last_error.clear();
	log_event(d_, "info", "console", -1, "listening to the module's events");
	while (!stop_) {
		struct pollfd p[2] = { { mon->fd(), POLLIN, 0 }, { wake_[0], POLLIN, 0 } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return false;
		if (p[1].revents)
			return true;
		for (;;) {
			auto ev = mon->next(0);
			if (!ev) {
				if (ev.err().code == -EAGAIN)
					break;
				last_error = ev.err().what();
				log_event(d_, "warning", "console", -1, "module events: " + last_error);
				return false;
			}
			json r = dsctl::event_record(*ev);
			int64_t node = r.contains("node") && r["node"].is_number_unsigned()
					       ? r["node"].get<int64_t>() : -1;
			try {
				log_event(d_, level_of(r), component_of(r.value("event", "")), node,
					  message_of(r), r);
			} catch (...) {
				// a locked or full database loses this event, not the monitor
			}
		}
	}
	return true;
}

}  // namespace dsui
