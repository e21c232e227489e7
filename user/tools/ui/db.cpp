// SPDX-License-Identifier: BSD-2-Clause
// The console's database: one SQLite connection, WAL, every statement
// prepared with bound parameters (no SQL is ever built from input).
#include <chrono>
#include <filesystem>

#include "ui.hpp"

namespace dsui {

namespace {

// The schema; user_version says which of these steps a database has had.
const char *const schema[] = {
	"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
	" hash TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('admin','viewer')),"
	" created REAL NOT NULL);"
	// a session's token is kept only as its hash: a copy of the database
	// opens no session
	"CREATE TABLE sessions (token_hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL"
	" REFERENCES users(id) ON DELETE CASCADE, csrf TEXT NOT NULL,"
	" created REAL NOT NULL, expires REAL NOT NULL);"
	"CREATE TABLE login_failures (name TEXT NOT NULL, addr TEXT NOT NULL, ts REAL NOT NULL);"
	"CREATE INDEX login_failures_ts ON login_failures(ts);"
	"CREATE TABLE events (id INTEGER PRIMARY KEY, ts REAL NOT NULL, level TEXT NOT NULL,"
	" node INTEGER, component TEXT NOT NULL, message TEXT NOT NULL, data TEXT);"
	"CREATE INDEX events_ts ON events(ts);"
	"CREATE INDEX events_component ON events(component, id);"
	"CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT NOT NULL,"
	" state TEXT NOT NULL, created REAL NOT NULL, finished REAL, error TEXT,"
	" request TEXT NOT NULL, result TEXT);"
	"CREATE TABLE files (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT NOT NULL,"
	" created REAL NOT NULL, size INTEGER NOT NULL, format TEXT NOT NULL,"
	" requests INTEGER NOT NULL, objects INTEGER NOT NULL, csv TEXT, origin TEXT);",
	// ids are never handed out twice: a deleted file's id, given to the
	// next upload, let the deleter remove the new file from disk, and an
	// old link (or audit line) named another run or file
	"CREATE TABLE runs_v2 (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
	" user TEXT NOT NULL, state TEXT NOT NULL, created REAL NOT NULL, finished REAL,"
	" error TEXT, request TEXT NOT NULL, result TEXT);"
	"INSERT INTO runs_v2 SELECT * FROM runs; DROP TABLE runs;"
	"ALTER TABLE runs_v2 RENAME TO runs;"
	"CREATE TABLE files_v2 (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
	" user TEXT NOT NULL, created REAL NOT NULL, size INTEGER NOT NULL, format TEXT NOT NULL,"
	" requests INTEGER NOT NULL, objects INTEGER NOT NULL, csv TEXT, origin TEXT);"
	"INSERT INTO files_v2 SELECT * FROM files; DROP TABLE files;"
	"ALTER TABLE files_v2 RENAME TO files;",
};

}  // namespace

void raise(int status, const std::string &what)
{
	throw http_error{ status, what };
}

double now_s()
{
	return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string json_text(const json &j, int indent)
{
	return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string valid_utf8(const std::string &s)
{
	// the JSON writer's replacement, read back
	return json::parse(json_text(json(s))).get<std::string>();
}

db::db(const std::string &path)
{
	std::error_code ec;
	auto dir = std::filesystem::path(path).parent_path();
	if (!dir.empty())
		std::filesystem::create_directories(dir, ec);
	if (sqlite3_open_v2(path.c_str(), &h_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
		std::string msg = h_ ? sqlite3_errmsg(h_) : "out of memory";
		sqlite3_close(h_);
		h_ = nullptr;
		raise(500, "cannot open " + path + ": " + msg);
	}
	sqlite3_busy_timeout(h_, 5000);
	try {
		exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL");
		int64_t have;
		{
			// finished before the steps run: DROP TABLE fails while
			// any statement is still open
			stmt v(*this, "PRAGMA user_version");
			v.step();
			have = v.i64(0);
		}
		int64_t want = int64_t(sizeof(schema) / sizeof(schema[0]));
		if (have > want)
			raise(500, path + " was made by a newer dsctl (schema " + std::to_string(have) + ")");
		for (int64_t k = have; k < want; k++) {
			begin();
			exec(schema[k]);
			exec("PRAGMA user_version=" + std::to_string(k + 1));
			commit();
		}
	} catch (...) {
		sqlite3_close(h_);
		throw;
	}
}

db::~db()
{
	sqlite3_close(h_);
}

void db::exec(const std::string &sql)
{
	std::lock_guard<std::recursive_mutex> g(lock_);
	char *err = nullptr;

	if (sqlite3_exec(h_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
		std::string msg = err ? err : "unknown error";
		sqlite3_free(err);
		raise(500, "database: " + msg);
	}
}

stmt db::prepare(const std::string &sql)
{
	return stmt(*this, sql);
}

stmt::stmt(db &d, const std::string &sql) : d_(d)
{
	if (sqlite3_prepare_v2(d.h_, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
		raise(500, std::string("database: ") + sqlite3_errmsg(d.h_));
}

stmt::~stmt()
{
	sqlite3_finalize(s_);
}

stmt &stmt::bind(int64_t v)
{
	sqlite3_bind_int64(s_, ++n_, v);
	return *this;
}

stmt &stmt::bind(double v)
{
	sqlite3_bind_double(s_, ++n_, v);
	return *this;
}

stmt &stmt::bind(const std::string &v)
{
	sqlite3_bind_text(s_, ++n_, v.data(), int(v.size()), SQLITE_TRANSIENT);
	return *this;
}

stmt &stmt::bind_or_null(const std::string &v)
{
	if (!v.empty())
		return bind(v);
	sqlite3_bind_null(s_, ++n_);
	return *this;
}

stmt &stmt::bind_or_null(int64_t v)
{
	if (v >= 0)
		return bind(v);
	sqlite3_bind_null(s_, ++n_);
	return *this;
}

bool stmt::step()
{
	int rc = sqlite3_step(s_);

	if (rc == SQLITE_ROW)
		return true;
	if (rc == SQLITE_DONE)
		return false;
	raise(500, std::string("database: ") + sqlite3_errmsg(d_.h_));
}

void stmt::run()
{
	while (step())
		;
}

int64_t stmt::i64(int col) const
{
	return sqlite3_column_int64(s_, col);
}

double stmt::f64(int col) const
{
	return sqlite3_column_double(s_, col);
}

std::string stmt::text(int col) const
{
	const unsigned char *t = sqlite3_column_text(s_, col);
	return t ? std::string(reinterpret_cast<const char *>(t),
			       size_t(sqlite3_column_bytes(s_, col))) : std::string();
}

bool stmt::null(int col) const
{
	return sqlite3_column_type(s_, col) == SQLITE_NULL;
}

}  // namespace dsui
