// SPDX-License-Identifier: BSD-2-Clause
// The web console's HTTP API, end to end: a real `dsctl ui` on loopback
// with its own database, driven by cpp-httplib's client.  Logins,
// sessions, CSRF, roles, rate limiting, simulation runs (checked against
// `dsctl -j sim run`), logs, uploads and bad input of every kind; the
// store page against no master, an unreachable one and a real dsmaster.
#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using json = nlohmann::json;

namespace {

std::string tmpdir;

// Run dsctl with words, stdin_text on its standard input; its exit code,
// its standard output in out.
int dsctl(const std::vector<std::string> &words, const std::string &stdin_text, std::string *out = nullptr)
{
	int in[2], o[2];
	if (pipe(in) || pipe(o))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		close(in[1]);
		close(o[0]);
		std::vector<char *> argv = { const_cast<char *>(DS_DSCTL) };
		for (const auto &w : words)
			argv.push_back(const_cast<char *>(w.c_str()));
		argv.push_back(nullptr);
		execv(DS_DSCTL, argv.data());
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	if (write(in[1], stdin_text.data(), stdin_text.size()) < 0)
		return -1;
	close(in[1]);
	std::string got;
	char buf[4096];
	for (ssize_t n; (n = read(o[0], buf, sizeof(buf))) > 0;)
		got.append(buf, size_t(n));
	close(o[0]);
	int st;
	waitpid(pid, &st, 0);
	if (out)
		*out = got;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// A console on a free loopback port; stopped (SIGTERM) when destroyed.
struct console {
	pid_t pid = -1;
	int port = 0;
	std::string first_line;

	console(const std::string &db, const std::vector<std::string> &extra = {})
	{
		int o[2];
		if (pipe(o))
			return;
		pid = fork();
		if (pid == 0) {
			dup2(o[1], 1);
			close(o[0]);
			// the daemon-style spelling; tests/ui and the guest test use "listen"
			std::vector<std::string> w = { DS_DSCTL, "ui", "serve", "--listen", "127.0.0.1:0", "--db", db };
			w.insert(w.end(), extra.begin(), extra.end());
			std::vector<char *> argv;
			for (auto &s : w)
				argv.push_back(s.data());
			argv.push_back(nullptr);
			execv(DS_DSCTL, argv.data());
			_exit(127);
		}
		close(o[1]);
		// the first line names the port
		char ch;
		while (read(o[0], &ch, 1) == 1 && ch != '\n')
			first_line += ch;
		close(o[0]);
		auto at = first_line.rfind(':');
		if (at != std::string::npos)
			port = atoi(first_line.c_str() + at + 1);
	}
	~console()
	{
		if (pid > 0) {
			kill(pid, SIGTERM);
			int st;
			waitpid(pid, &st, 0);
		}
	}
	httplib::Client client() const
	{
		httplib::Client c("127.0.0.1", port);
		c.set_read_timeout(120, 0);
		return c;
	}
};

// A logged-in client: its cookie and CSRF token.
struct user_session {
	std::string cookie, csrf;
	httplib::Headers headers(bool with_csrf = true) const
	{
		httplib::Headers h = { { "Cookie", cookie } };
		if (with_csrf)
			h.emplace("X-CSRF-Token", csrf);
		return h;
	}
};

console *srv;
user_session admin, viewer;

std::unique_ptr<httplib::Client> cli()
{
	auto c = std::make_unique<httplib::Client>("127.0.0.1", srv->port);
	c->set_read_timeout(120, 0);
	return c;
}

// What the login form sends besides its body: the CSRF token of a GET of
// /api/login, in the header and in the cookie that GET set.
template <typename Client>
httplib::Headers login_headers(Client &c)
{
	auto g = c.Get("/api/login");
	assert_non_null(g);
	assert_int_equal(g->status, 200);
	std::string set = g->get_header_value("Set-Cookie");
	assert_non_null(strstr(set.c_str(), "dsui_login="));
	assert_non_null(strstr(set.c_str(), "HttpOnly"));
	std::string csrf = json::parse(g->body)["csrf"];
	return { { "Cookie", set.substr(0, set.find(';')) }, { "X-CSRF-Token", csrf } };
}

httplib::Result login_raw(const std::string &user, const std::string &pw)
{
	auto c = cli();
	return c->Post("/api/login", login_headers(*c),
		       json{ { "user", user }, { "password", pw } }.dump(), "application/json");
}

user_session login_as(const std::string &user, const std::string &pw)
{
	auto r = login_raw(user, pw);
	assert_non_null(r);
	assert_int_equal(r->status, 200);
	user_session s;
	std::string set = r->get_header_value("Set-Cookie");
	assert_non_null(strstr(set.c_str(), "HttpOnly"));
	assert_non_null(strstr(set.c_str(), "SameSite=Strict"));
	s.cookie = set.substr(0, set.find(';'));
	s.csrf = json::parse(r->body)["csrf"];
	return s;
}

json body(const httplib::Result &r)
{
	assert_non_null(r);
	json j = json::parse(r->body, nullptr, false);
	if (j.is_discarded())
		fail_msg("not JSON (status %d): %s", r->status, r->body.c_str());
	return j;
}

httplib::Result post(const user_session &s, const std::string &path, const json &b, bool csrf = true)
{
	return cli()->Post(path.c_str(), s.headers(csrf), b.dump(), "application/json");
}

int setup(void **)
{
	char t[] = "/tmp/test_ui_api.XXXXXX";
	if (!mkdtemp(t))
		return -1;
	tmpdir = t;
	// the main console has no object store: the store tests start their own
	unsetenv("DSMEM_MASTERS");
	std::string db = tmpdir + "/ui.db";
	if (dsctl({ "ui", "user", "add", "alice", "role", "admin", "db", db }, "alice-password\n") ||
	    dsctl({ "ui", "user", "add", "bob", "db", db }, "bob-password\n") ||
	    dsctl({ "ui", "user", "add", "dave", "db", db }, "dave-password\n"))
		return -1;
	srv = new console(db, { "upload-limit", "64K" });
	if (!srv->port)
		return -1;
	admin = login_as("alice", "alice-password");
	viewer = login_as("bob", "bob-password");
	return 0;
}

int teardown(void **)
{
	delete srv;
	std::string cmd = "rm -rf " + tmpdir;
	return system(cmd.c_str()) == 0 ? 0 : -1;
}

void users_are_managed_by_dsctl(void **)
{
	std::string db = tmpdir + "/ui.db", out;

	assert_int_equal(dsctl({ "-j", "ui", "user", "show", "db", db }, "", &out), 0);
	json u = json::parse(out);
	assert_int_equal(u.size(), 3);
	assert_string_equal(u[0]["user"].get<std::string>().c_str(), "alice");
	assert_string_equal(u[0]["role"].get<std::string>().c_str(), "admin");
	assert_string_equal(u[1]["role"].get<std::string>().c_str(), "viewer");
	// refused: a second alice, a short password, a bad name, a bad role
	assert_int_equal(dsctl({ "ui", "user", "add", "alice", "db", db }, "another-password\n"), 1);
	assert_int_equal(dsctl({ "ui", "user", "add", "eve", "db", db }, "short\n"), 1);
	assert_int_equal(dsctl({ "ui", "user", "add", "a b", "db", db }, "long-enough\n"), 1);
	assert_int_equal(dsctl({ "ui", "user", "add", "eve", "role", "root", "db", db }, "long-enough\n"), 1);
	assert_int_equal(dsctl({ "ui", "user", "del", "nobody", "db", db }, ""), 1);
	assert_int_equal(dsctl({ "-j", "ui", "user", "show", "db", db }, "", &out), 0);
	assert_int_equal(json::parse(out).size(), 3);
}

// The console's user management: the rules of "dsctl ui user" (one set of
// calls), admins only, CSRF-checked, audited, and never without an admin.
// A console of its own: its users change.
void users_are_managed_in_the_console(void **)
{
	std::string db = tmpdir + "/users.db", out;
	assert_int_equal(dsctl({ "ui", "user", "add", "root", "role", "admin", "db", db }, "root-password\n"), 0);
	assert_int_equal(dsctl({ "ui", "user", "add", "vic", "db", db }, "vic-password\n"), 0);
	console c(db);
	assert_true(c.port > 0);
	auto cl = c.client();
	auto as = [&](const std::string &u, const std::string &pw) {
		auto r = cl.Post("/api/login", login_headers(cl), json{ { "user", u }, { "password", pw } }.dump(),
				 "application/json");
		user_session s;
		if (!r || r->status != 200)
			return s;
		std::string set = r->get_header_value("Set-Cookie");
		s.cookie = set.substr(0, set.find(';'));
		s.csrf = json::parse(r->body)["csrf"];
		return s;
	};
	auto req = [&](const user_session &s, const char *m, const std::string &p, const json &b = nullptr,
		       bool csrf = true) {
		std::string m_ = m;
		auto r = m_ == "GET" ? cl.Get(p.c_str(), s.headers(csrf))
			 : m_ == "POST" ? cl.Post(p.c_str(), s.headers(csrf), b.dump(), "application/json")
			 : m_ == "PATCH" ? cl.Patch(p.c_str(), s.headers(csrf), b.dump(), "application/json")
					 : cl.Delete(p.c_str(), s.headers(csrf));
		assert_non_null(r);
		return r;
	};
	user_session root = as("root", "root-password"), vic = as("vic", "vic-password");
	assert_false(root.cookie.empty());
	assert_false(vic.cookie.empty());

	// viewers: 403 for every user endpoint, reading included
	assert_int_equal(req(vic, "GET", "/api/users")->status, 403);
	assert_int_equal(req(vic, "POST", "/api/users", { { "name", "eve" }, { "password", "eve-password" } })->status, 403);
	assert_int_equal(req(vic, "PATCH", "/api/users/vic", { { "role", "admin" } })->status, 403);
	assert_int_equal(req(vic, "POST", "/api/users/root/password", { { "password", "mine-now-123" } })->status, 403);
	assert_int_equal(req(vic, "DELETE", "/api/users/root")->status, 403);
	// admins without the CSRF token: 403
	assert_int_equal(req(root, "POST", "/api/users", { { "name", "eve" }, { "password", "eve-password" } }, false)->status, 403);
	assert_int_equal(req(root, "DELETE", "/api/users/vic", nullptr, false)->status, 403);

	// dsctl's rules, word for word: the CLI refuses what the API refuses
	struct bad { std::string name, role, pw; int status; };
	for (const auto &b : std::vector<bad>{ { "a b", "viewer", "long-enough", 400 },
					       { std::string(65, 'x'), "viewer", "long-enough", 400 },
					       { "eve", "root", "long-enough", 400 },
					       { "eve", "viewer", "short", 400 },
					       { "vic", "viewer", "long-enough", 409 } }) {
		auto r = req(root, "POST", "/api/users", { { "name", b.name }, { "role", b.role }, { "password", b.pw } });
		if (r->status != b.status)
			fail_msg("adding %s/%s: %d, not %d", b.name.c_str(), b.role.c_str(), r->status, b.status);
		assert_int_equal(dsctl({ "ui", "user", "add", b.name, "role", b.role, "db", db }, b.pw + "\n"), 1);
	}
	assert_int_equal(req(root, "POST", "/api/users", { { "name", "eve" } })->status, 400);

	// add, log in, change the role, reset the password, remove
	auto r = req(root, "POST", "/api/users", { { "name", "eve" }, { "role", "viewer" }, { "password", "eve-password" } });
	assert_int_equal(r->status, 201);
	user_session eve = as("eve", "eve-password");
	assert_false(eve.cookie.empty());
	assert_int_equal(req(eve, "GET", "/api/users")->status, 403);
	assert_int_equal(req(root, "PATCH", "/api/users/eve", { { "role", "admin" } })->status, 200);
	assert_int_equal(req(eve, "GET", "/api/users")->status, 200);	// her session has the new role
	assert_int_equal(req(root, "PATCH", "/api/users/eve", { { "role", "root" } })->status, 400);
	assert_int_equal(req(root, "PATCH", "/api/users/nobody", { { "role", "viewer" } })->status, 404);
	assert_int_equal(req(root, "POST", "/api/users/eve/password", { { "password", "short" } })->status, 400);
	assert_int_equal(req(root, "POST", "/api/users/eve/password", { { "password", "eve-new-password" } })->status, 200);
	assert_int_equal(req(eve, "GET", "/api/session")->status, 401);	// her sessions ended
	assert_true(as("eve", "eve-password").cookie.empty());
	assert_false(as("eve", "eve-new-password").cookie.empty());

	// the last admin is neither removed nor demoted, by the API or by dsctl
	assert_int_equal(req(root, "PATCH", "/api/users/root", { { "role", "viewer" } })->status, 200);	// eve is one
	assert_int_equal(req(root, "GET", "/api/users")->status, 403);	// root is a viewer now
	user_session eve2 = as("eve", "eve-new-password");
	r = req(eve2, "PATCH", "/api/users/eve", { { "role", "viewer" } });
	assert_int_equal(r->status, 409);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "last admin"));
	assert_int_equal(req(eve2, "DELETE", "/api/users/eve")->status, 409);
	assert_int_equal(dsctl({ "ui", "user", "del", "eve", "db", db }, ""), 1);
	assert_int_equal(dsctl({ "ui", "user", "set", "eve", "role", "viewer", "db", db }, ""), 1);
	assert_int_equal(dsctl({ "ui", "user", "set", "root", "role", "admin", "db", db }, ""), 0);
	assert_int_equal(dsctl({ "ui", "user", "passwd", "root", "db", db }, "root-password-2\n"), 0);
	assert_true(as("root", "root-password").cookie.empty());
	root = as("root", "root-password-2");
	assert_false(root.cookie.empty());
	assert_int_equal(req(root, "DELETE", "/api/users/eve")->status, 200);
	assert_int_equal(req(root, "DELETE", "/api/users/eve")->status, 404);
	assert_true(as("eve", "eve-new-password").cookie.empty());
	json users = body(req(root, "GET", "/api/users"))["users"];
	assert_int_equal(users.size(), 2);

	// each change is in the audit log, under the admin's name
	json logs = body(req(root, "GET", "/api/logs?component=audit&limit=1000"));
	std::string all;
	for (const auto &e : logs["events"])
		all += e["message"].get<std::string>() + "\n";
	for (const char *m : { "root: added user eve as viewer", "root: made eve admin (was viewer)",
			       "root: reset the password of eve", "root: removed user eve",
			       "user root made admin (was viewer) (dsctl)", "password of root reset (dsctl)" })
		if (all.find(m) == std::string::npos)
			fail_msg("no \"%s\" in the audit log:\n%s", m, all.c_str());
}

// A request on a socket of its own, left open: the status of the answer
// (its first line), the socket in fd.
int open_stream(const std::string &path, const std::string &cookie, int &fd, const std::string &extra = "")
{
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	a.sin_port = htons(uint16_t(srv->port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) < 0)
		return -1;
	std::string rq = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" +
			 (cookie.empty() ? "" : "Cookie: " + cookie + "\r\n") + extra + "\r\n";
	if (write(fd, rq.data(), rq.size()) != ssize_t(rq.size()))
		return -1;
	std::string line;
	char ch;
	while (read(fd, &ch, 1) == 1 && ch != '\n')
		line += ch;
	return line.size() > 12 ? atoi(line.c_str() + 9) : -1;
}

// What a stream sends until want is in it (or 20 s).
std::string read_until(int fd, const std::string &want)
{
	std::string got;
	char buf[4096];
	for (int k = 0; k < 200 && got.find(want) == std::string::npos; k++) {
		struct timeval tv = { 0, 100000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n > 0)
			got.append(buf, size_t(n));
	}
	return got;
}

// The live tail: Server-Sent Events, pushed as events are written, from
// Last-Event-ID on a reconnection, for a session only, a bounded number.
void the_live_tail_is_pushed(void **)
{
	int fd;
	assert_int_equal(open_stream("/api/logs/stream", "", fd), 401);
	close(fd);
	assert_int_equal(open_stream("/api/logs/stream?from=1", viewer.cookie, fd), 400);
	close(fd);

	// a stream from now: a login made after it opens comes down it
	assert_int_equal(open_stream("/api/logs/stream?component=audit&q=logged%20in", viewer.cookie, fd), 200);
	std::string head = read_until(fd, "\r\n\r\n");
	assert_non_null(strstr(head.c_str(), "text/event-stream"));
	login_as("dave", "dave-password");
	std::string got = read_until(fd, "dave: logged in");
	close(fd);
	size_t at = got.find("id: ");
	if (at == std::string::npos || got.find("dave: logged in") == std::string::npos)
		fail_msg("no event of dave's login in the stream: %s", got.c_str());
	long id = atol(got.c_str() + at + 4);
	assert_true(id > 0);
	assert_non_null(strstr(got.c_str(), "\ndata: {"));

	// an EventSource reconnecting with Last-Event-ID gets what came after it
	assert_int_equal(open_stream("/api/logs/stream?component=audit&q=logged%20in", viewer.cookie, fd,
				     "Last-Event-ID: " + std::to_string(id - 1) + "\r\n"), 200);
	got = read_until(fd, "dave: logged in");
	close(fd);
	assert_non_null(strstr(got.c_str(), ("id: " + std::to_string(id) + "\n").c_str()));
	assert_int_equal(open_stream("/api/logs/stream", viewer.cookie, fd, "Last-Event-ID: x\r\n"), 400);
	close(fd);

	// at most 8 open at once (log_streams_max); a closed one's place comes
	// back once the server finds it gone (its heartbeat's write fails): the
	// streams above, closed, may still hold theirs for a few seconds
	int opened = 0, refused = 0;
	for (int round = 0; round < 60 && opened != 8; round++) {
		std::vector<int> open;
		int status = 0;
		while (int(open.size()) <= 8) {
			status = open_stream("/api/logs/stream", viewer.cookie, fd);
			if (status != 200) {
				close(fd);
				break;
			}
			open.push_back(fd);
		}
		opened = int(open.size());
		refused = status;
		if (opened == 8)	// and the 9th refused: the rest of the console still answers
			assert_int_equal(cli()->Get("/api/session", viewer.headers(false))->status, 200);
		for (int f : open)
			close(f);
		if (opened != 8)
			usleep(500000);
	}
	assert_int_equal(opened, 8);
	assert_int_equal(refused, 503);
}

void no_users_says_how_to_create_one(void **)
{
	console c(tmpdir + "/empty.db");
	assert_true(c.port > 0);
	auto cl = c.client();
	json j = body(cl.Get("/api/login"));
	assert_false(j["users"].get<bool>());
	assert_non_null(strstr(j["hint"].get<std::string>().c_str(), "dsctl ui user add"));
	auto r = cl.Post("/api/login", login_headers(cl), R"({"user":"admin","password":"admin"})",
			 "application/json");
	assert_int_equal(r->status, 401);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "no users yet"));
}

void wrong_password_and_unknown_user(void **)
{
	auto r = login_raw("alice", "not-her-password");
	assert_int_equal(r->status, 401);
	std::string wrong = body(r)["error"];
	r = login_raw("nosuchuser", "whatever-password");
	assert_int_equal(r->status, 401);
	// the same answer: it does not tell which names exist
	assert_string_equal(body(r)["error"].get<std::string>().c_str(), wrong.c_str());
	auto c = cli();
	r = c->Post("/api/login", login_headers(*c), "{not json", "application/json");
	assert_int_equal(r->status, 400);
	r = c->Post("/api/login", login_headers(*c), R"({"user":"alice"})", "application/json");
	assert_int_equal(r->status, 400);
}

void failed_logins_are_rate_limited(void **)
{
	for (int k = 0; k < 5; k++)
		assert_int_equal(login_raw("dave", "wrong-password")->status, 401);
	auto r = login_raw("dave", "dave-password");	// right, but too late
	assert_int_equal(r->status, 429);
	assert_true(atoi(r->get_header_value("Retry-After").c_str()) > 0);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "too many failed logins"));
	// the address has room (20): others still log in; the log has them
	assert_int_equal(login_raw("bob", "bob-password")->status, 200);
	json logs = body(cli()->Get("/api/logs?component=audit&q=failed%20login%20of%20dave&limit=100",
				    admin.headers(false)));
	assert_true(logs["events"].size() >= 5);
}

void every_endpoint_needs_a_session(void **)
{
	const std::vector<std::pair<const char *, const char *>> eps = {
		{ "GET", "/api/session" }, { "POST", "/api/logout" }, { "GET", "/api/sim/options" },
		{ "GET", "/api/sim/runs" }, { "POST", "/api/sim/runs" }, { "GET", "/api/sim/runs/1" },
		{ "POST", "/api/sim/runs/1/cancel" }, { "DELETE", "/api/sim/runs/1" },
		{ "GET", "/api/logs" }, { "GET", "/api/data/files" }, { "POST", "/api/data/files" },
		{ "GET", "/api/data/files/1/analyze" }, { "GET", "/api/data/files/1/download" },
		{ "POST", "/api/data/files/1/convert" }, { "DELETE", "/api/data/files/1" },
		{ "GET", "/api/cluster" }, { "POST", "/api/cluster/cache" }, { "GET", "/api/nothing" },
		{ "GET", "/api/cluster/slope" }, { "GET", "/api/store" }, { "GET", "/api/store/master" },
		{ "GET", "/api/store/segments" }, { "GET", "/api/store/objects?prefix=a" },
		{ "GET", "/api/logs/stream" }, { "GET", "/api/users" }, { "POST", "/api/users" },
		{ "DELETE", "/api/users/bob" }, { "POST", "/api/users/bob/password" },
	};
	httplib::Headers bogus = { { "Cookie", "dsui_session=" + std::string(64, 'a') } };
	for (const auto &[m, p] : eps)
		for (int with_bogus = 0; with_bogus < 2; with_bogus++) {
			httplib::Headers h = with_bogus ? bogus : httplib::Headers{};
			httplib::Result r = std::string(m) == "GET" ? cli()->Get(p, h)
					    : std::string(m) == "POST" ? cli()->Post(p, h, "{}", "application/json")
								       : cli()->Delete(p, h);
			assert_non_null(r);
			if (r->status != 401)
				fail_msg("%s %s answered %d without a session", m, p, r->status);
			assert_true(body(r).contains("error"));
		}
}

void state_changes_need_the_csrf_token(void **)
{
	json run = { { "trace", { { "gen", "zipf:requests=1000,objects=100" } } }, { "sizes", { "10" } } };
	auto r = post(admin, "/api/sim/runs", run, false);
	assert_int_equal(r->status, 403);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "CSRF"));
	user_session forged = admin;
	forged.csrf = viewer.csrf;	// another session's token is no good
	assert_int_equal(post(forged, "/api/sim/runs", run)->status, 403);
	assert_int_equal(post(admin, "/api/sim/runs", run)->status, 202);
}

// The login form takes the same check, with the token of a GET of
// /api/login and its cookie: without either, or with another's token, the
// right password logs nobody in.
void login_needs_the_csrf_token(void **)
{
	const std::string creds = json{ { "user", "alice" }, { "password", "alice-password" } }.dump();
	auto c = cli();
	httplib::Headers h = login_headers(*c), other = login_headers(*c);
	std::string cookie = h.find("Cookie")->second, token = h.find("X-CSRF-Token")->second;
	auto refused = [&](const httplib::Headers &with) {
		auto r = c->Post("/api/login", with, creds, "application/json");
		assert_non_null(r);
		assert_int_equal(r->status, 403);
		assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "CSRF"));
		assert_true(r->get_header_value("Set-Cookie").empty());
	};
	refused({});
	refused({ { "Cookie", cookie } });
	refused({ { "X-CSRF-Token", token } });
	refused({ { "Cookie", cookie }, { "X-CSRF-Token", other.find("X-CSRF-Token")->second } });
	refused({ { "Cookie", cookie }, { "X-CSRF-Token", token.substr(1) } });
	auto r = c->Post("/api/login", h, creds, "application/json");
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->get_header_value("Set-Cookie").c_str(), "dsui_session="));
}

json wait_run(int64_t id)
{
	// bounded: a run of these sizes takes well under a second
	for (int k = 0; k < 1200; k++) {
		json j = body(cli()->Get(("/api/sim/runs/" + std::to_string(id)).c_str(), admin.headers(false)));
		std::string st = j["state"];
		if (st != "queued" && st != "running")
			return j;
		usleep(100000);
	}
	fail_msg("run %lld did not finish", (long long)id);
}

void a_run_is_dsctl_sim_run(void **)
{
	const std::string gen = "zipf:requests=200k,objects=20k,alpha=0.99";
	json run = { { "name", "mrc" }, { "trace", { { "gen", gen } } },
		     { "policies", { "lru", "s3fifo", "belady" } }, { "sizes", { "1%", "5%", "10%" } },
		     { "latency", "L1:5,L2:200,L3:800" } };
	auto r = post(viewer, "/api/sim/runs", run);
	assert_int_equal(r->status, 202);
	json done = wait_run(body(r)["id"]);
	assert_string_equal(done["state"].get<std::string>().c_str(), "done");
	assert_string_equal(done["name"].get<std::string>().c_str(), "mrc");
	assert_true(done["progress"].get<double>() == 1.0);

	std::string out;
	assert_int_equal(dsctl({ "-j", "sim", "run", "gen", gen, "policy", "lru,s3fifo,belady", "size",
				 "1%,5%,10%", "latency", "L1:5,L2:200,L3:800" }, "", &out), 0);
	json ref = json::parse(out);
	const json &got = done["result"]["runs"];
	assert_int_equal(got.size(), 9);
	assert_int_equal(got.size(), ref["runs"].size());
	for (size_t k = 0; k < got.size(); k++) {
		assert_string_equal(got[k]["policy"].get<std::string>().c_str(),
				    ref["runs"][k]["policy"].get<std::string>().c_str());
		assert_int_equal(got[k]["size"].get<uint64_t>(), ref["runs"][k]["size"].get<uint64_t>());
		assert_int_equal(got[k]["misses"].get<uint64_t>(), ref["runs"][k]["misses"].get<uint64_t>());
		assert_int_equal(got[k]["windows"].size(), ref["runs"][k]["windows"].size());
	}
	// belady is the floor at every size
	for (size_t k = 0; k < 3; k++)
		assert_true(got[6 + k]["miss_ratio"].get<double>() <= got[k]["miss_ratio"].get<double>());
}

void impossible_runs_are_refused(void **)
{
	size_t before = body(cli()->Get("/api/sim/runs", admin.headers(false)))["runs"].size();
	const std::vector<std::pair<json, const char *>> bad = {
		{ { { "trace", { { "gen", "zipf:requests=1000" } } }, { "policies", { "nope" } } }, "unknown policy" },
		{ { { "trace", { { "gen", "zipf:requests=1000" } } }, { "sizes", { "0" } } }, "size 0" },
		{ { { "trace", { { "gen", "zipf:nonsense=1" } } } }, "unknown key" },
		{ { { "trace", { { "gen", "zipf:requests=4g" } } } }, "at most" },
		{ { { "trace", { { "file", 999999 } } } }, "no file" },
		{ { { "trace", { { "server", "../etc/passwd" } } } }, "server-side" },
		{ { { "trace", "x" } }, "trace must be" },
		{ { { "trace", { { "gen", "zipf" } } }, { "latency", "L9:5" } }, "latency" },
		{ { { "trace", { { "gen", "zipf" } } }, { "params", "nosuch=1" } }, "params" },
		{ { { "trace", { { "gen", "zipf" } } }, { "plot", "/tmp/x" } }, "unknown field" },
		{ { { "trace", { { "gen", "zipf" } } }, { "policies", json::array() } }, "non-empty" },
		{ { { "trace", { { "gen", "sweep:qps=16..64" } } } }, "connection sweeps" },
	};
	for (const auto &[req, says] : bad) {
		auto r = post(admin, "/api/sim/runs", req);
		json j = body(r);
		if (r->status != 400 || j["error"].get<std::string>().find(says) == std::string::npos)
			fail_msg("%s: %d %s (wanted 400 \"%s\")", req.dump().c_str(), r->status,
				 j.dump().c_str(), says);
	}
	auto r = cli()->Post("/api/sim/runs", admin.headers(), "[1,2", "application/json");
	assert_int_equal(r->status, 400);
	assert_int_equal(body(cli()->Get("/api/sim/runs", admin.headers(false)))["runs"].size(), before);

	// what needs the trace fails the run, with the simulator's message
	json warm = { { "trace", { { "gen", "zipf:requests=1000" } } }, { "warmup", 5000 } };
	json done = wait_run(body(post(admin, "/api/sim/runs", warm))["id"]);
	assert_string_equal(done["state"].get<std::string>().c_str(), "failed");
	assert_non_null(strstr(done["error"].get<std::string>().c_str(), "warmup"));
}

void a_run_can_be_canceled(void **)
{
	json run = { { "trace", { { "gen", "zipf:requests=100m,objects=1m" } } },
		     { "policies", { "arc", "s3fifo", "lfu", "sieve" } }, { "sizes", { "1%", "2%" } } };
	int64_t id = body(post(admin, "/api/sim/runs", run))["id"];
	// another user's run is not viewer's to cancel
	assert_int_equal(cli()->Post(("/api/sim/runs/" + std::to_string(id) + "/cancel").c_str(),
				     viewer.headers(), "", "application/json")->status, 403);
	auto r = cli()->Post(("/api/sim/runs/" + std::to_string(id) + "/cancel").c_str(), admin.headers(),
			     "", "application/json");
	assert_int_equal(r->status, 200);
	json done = wait_run(id);
	assert_string_equal(done["state"].get<std::string>().c_str(), "canceled");
	assert_true(done["result"].is_null());
	// a finished run cannot be canceled again; it can be deleted
	r = cli()->Post(("/api/sim/runs/" + std::to_string(id) + "/cancel").c_str(), admin.headers(), "",
			"application/json");
	assert_int_equal(r->status, 409);
	assert_int_equal(cli()->Delete(("/api/sim/runs/" + std::to_string(id)).c_str(), admin.headers())->status, 200);
	assert_int_equal(cli()->Get(("/api/sim/runs/" + std::to_string(id)).c_str(), admin.headers(false))->status, 404);
}

void logs_filter_page_and_export(void **)
{
	auto get = [](const std::string &q) {
		return body(cli()->Get(("/api/logs?" + q).c_str(), admin.headers(false)));
	};
	json all = get("component=audit&limit=1000");
	assert_true(all["events"].size() >= 4);
	for (const auto &e : all["events"])
		assert_string_equal(e["component"].get<std::string>().c_str(), "audit");
	json logins = get("component=audit&q=LOGGED%20IN%20FROM");	// case-insensitive text
	assert_true(logins["events"].size() >= 2);
	for (const auto &e : logins["events"])
		assert_non_null(strstr(e["message"].get<std::string>().c_str(), "logged in from"));
	json warn = get("level=warning&limit=1000");
	for (const auto &e : warn["events"])
		assert_true(e["level"] == "warning" || e["level"] == "error");
	assert_true(warn["events"].size() >= 5);	// dave's failures
	// pages of 2, newest first, joined by the cursor, cover the whole
	std::vector<int64_t> ids;
	std::string cursor;
	for (int k = 0; k < 100; k++) {
		json p = get("component=audit&limit=2" + (cursor.empty() ? "" : "&before=" + cursor));
		for (const auto &e : p["events"])
			ids.push_back(e["id"]);
		if (p["next"].is_null())
			break;
		cursor = std::to_string(p["next"].get<int64_t>());
	}
	assert_int_equal(ids.size(), all["events"].size());
	for (size_t k = 1; k < ids.size(); k++)
		assert_true(ids[k] < ids[k - 1]);
	int64_t newest = all["events"][0]["id"];
	assert_int_equal(get("component=audit&after=" + std::to_string(newest))["events"].size(), 0);
	// time range: the future holds nothing
	assert_int_equal(get("from=2999-01-01T00:00:00Z")["events"].size(), 0);
	assert_true(get("from=2000-01-01T00:00&to=2999-01-01T00:00Z")["events"].size() > 0);

	// text that looks like SQL is text: no match, and the table is intact
	json inj = get("q=%27%29%3B%20DROP%20TABLE%20events%3B%20--");
	assert_int_equal(inj["events"].size(), 0);
	inj = get("q=%25");	// not a LIKE wildcard either
	assert_int_equal(inj["events"].size(), 0);
	assert_int_equal(get("component=audit&limit=1000")["events"].size(), all["events"].size());

	// bad filters are refused, by name
	for (const char *q : { "level=loud", "component=kitchen", "limit=0", "limit=5000", "before=x",
			       "from=yesterday", "format=xml" }) {
		auto r = cli()->Get(("/api/logs?" + std::string(q)).c_str(), admin.headers(false));
		if (r->status != 400)
			fail_msg("%s answered %d", q, r->status);
	}

	auto csv = cli()->Get("/api/logs?component=audit&format=csv", admin.headers(false));
	assert_int_equal(csv->status, 200);
	assert_non_null(strstr(csv->get_header_value("Content-Disposition").c_str(), "attachment"));
	assert_int_equal(csv->body.rfind("id,ts,level,node,component,message\n", 0), 0);
	size_t lines = size_t(std::count(csv->body.begin(), csv->body.end(), '\n'));
	assert_int_equal(lines, all["events"].size() + 1);
	auto js = cli()->Get("/api/logs?component=audit&format=json", admin.headers(false));
	assert_int_equal(body(js).size(), all["events"].size());
}

httplib::Result upload(const user_session &s, const std::string &name, const std::string &content,
		       const std::string &format = "")
{
	httplib::MultipartFormDataItems items = { { "file", content, name, "application/octet-stream" } };
	if (!format.empty())
		items.push_back({ "format", format, "", "" });
	return cli()->Post("/api/data/files", s.headers(), items);
}

void uploads_convert_and_analyze(void **)
{
	std::string text;
	for (int k = 0; k < 300; k++)
		text += std::to_string((k * 7) % 31) + "\n";
	auto r = upload(admin, "keys.txt", text);
	assert_int_equal(r->status, 201);
	json f = body(r);
	assert_string_equal(f["format"].get<std::string>().c_str(), "text");
	assert_int_equal(f["requests"].get<int>(), 300);
	assert_int_equal(f["objects"].get<int>(), 31);
	std::string id = std::to_string(f["id"].get<int64_t>());

	r = post(admin, "/api/data/files/" + id + "/convert", { { "to", "csv" } });
	assert_int_equal(r->status, 201);
	json c = body(r);
	assert_string_equal(c["format"].get<std::string>().c_str(), "csv");
	assert_int_equal(c["requests"].get<int>(), 300);
	auto dl = cli()->Get(("/api/data/files/" + std::to_string(c["id"].get<int64_t>()) + "/download").c_str(),
			     admin.headers(false));
	assert_int_equal(dl->status, 200);
	assert_int_equal(dl->body.rfind("time_ns,key,size,op\n0,0,1,read\n0,7,1,read\n", 0), 0);

	json a = body(cli()->Get(("/api/data/files/" + id + "/analyze").c_str(), admin.headers(false)));
	assert_int_equal(a["requests"].get<int>(), 300);
	assert_int_equal(a["objects"].get<int>(), 31);
	assert_int_equal(a["cold"].get<int>(), 31);
	// keys cycle with period 31: every reuse is at distance 31 (le 32)
	uint64_t reused = 0;
	for (const auto &b : a["reuse"]) {
		reused += b["count"].get<uint64_t>();
		if (b["count"].get<uint64_t>())
			assert_int_equal(b["le"].get<int>(), 32);
	}
	assert_int_equal(reused, 269);
	assert_int_equal(a["top"][0]["count"].get<int>(), 10);
	auto part = cli()->Get(("/api/data/files/" + id + "/analyze?format=csv&part=reuse").c_str(),
			       admin.headers(false));
	assert_int_equal(part->body.rfind("le,count\n", 0), 0);

	r = post(admin, "/api/data/files/" + id + "/filter", { { "from", 10 }, { "to", 40 } });
	assert_int_equal(body(r)["requests"].get<int>(), 30);
	r = post(admin, "/api/data/files/" + id + "/sample", { { "rate", 0.5 } });
	assert_int_equal(r->status, 201);
	assert_true(body(r)["requests"].get<int>() < 300);

	// an uploaded trace runs in the simulator
	json run = { { "trace", { { "file", f["id"] } } }, { "policies", { "lru" } }, { "sizes", { "31", "30" } } };
	json done = wait_run(body(post(admin, "/api/sim/runs", run))["id"]);
	assert_string_equal(done["state"].get<std::string>().c_str(), "done");
	assert_int_equal(done["result"]["runs"][0]["misses"].get<int>(), 31);	// all fit
	assert_int_equal(done["result"]["runs"][1]["misses"].get<int>(), 300);	// LRU's loop

	// a viewer cannot delete the admin's file; the admin can
	assert_int_equal(cli()->Delete(("/api/data/files/" + id).c_str(), viewer.headers())->status, 403);
	assert_int_equal(cli()->Delete(("/api/data/files/" + id).c_str(), admin.headers())->status, 200);
	assert_int_equal(cli()->Get(("/api/data/files/" + id + "/analyze").c_str(), admin.headers(false))->status, 404);
}

void bad_uploads_keep_nothing(void **)
{
	size_t before = body(cli()->Get("/api/data/files", admin.headers(false)))["files"].size();
	auto r = upload(admin, "junk.bin", std::string("\x01\x02garbage\x00\xff", 12));
	assert_int_equal(r->status, 400);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "junk.bin"));
	r = upload(admin, "trunc.oracleGeneral.bin", std::string(30, '\0'), "oracleGeneral");
	assert_int_equal(r->status, 400);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "trunc.oracleGeneral.bin"));
	r = upload(admin, "keys.txt", "1\n2\n", "wav");
	assert_int_equal(r->status, 400);
	r = upload(admin, "big.txt", std::string(100 * 1024, '7'));	// over 64K
	assert_int_equal(r->status, 413);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "limit"));
	r = upload(admin, "empty.txt", "");
	assert_int_equal(r->status, 400);
	r = cli()->Post("/api/data/files", admin.headers(), "{}", "application/json");
	assert_int_equal(r->status, 400);
	for (const char *op : { "convert", "sample", "filter" }) {
		// on a file that is not there, and with bad arguments
		assert_int_equal(post(admin, std::string("/api/data/files/999999/") + op, json::object())->status, 404);
	}
	assert_int_equal(body(cli()->Get("/api/data/files", admin.headers(false)))["files"].size(), before);
	// nothing half-written is left beside the database
	std::string cmd = "ls -A " + tmpdir + "/ui.db.files | grep -c '^\\.' >/dev/null";
	assert_int_not_equal(system(cmd.c_str()), 0);
}

void derived_files_check_their_arguments(void **)
{
	json f = body(upload(admin, "args.txt", "1\n2\n3\n1\n2\n3\n"));
	std::string base = "/api/data/files/" + std::to_string(f["id"].get<int64_t>());
	size_t before = body(cli()->Get("/api/data/files", admin.headers(false)))["files"].size();
	const std::vector<std::pair<std::string, json>> bad = {
		{ "/convert", json::object() }, { "/convert", { { "to", "wav" } } },
		{ "/convert", { { "to", 3 } } }, { "/sample", json::object() },
		{ "/sample", { { "rate", 0 } } }, { "/sample", { { "rate", 2 } } },
		{ "/sample", { { "rate", "half" } } }, { "/filter", { { "from", 5 }, { "to", 2 } } },
		{ "/filter", { { "from", -1 } } }, { "/filter", { { "op", "both" } } },
		{ "/filter", { { "from", 6 } } }, { "/convert", json::array() },
	};
	for (const auto &[op, args] : bad) {
		auto r = post(admin, base + op, args);
		if (r->status != 400)
			fail_msg("%s %s answered %d", op.c_str(), args.dump().c_str(), r->status);
		assert_true(body(r).contains("error"));
	}
	for (const char *q : { "?format=xml", "?format=csv&part=nope", "?format=csv" })
		assert_int_equal(cli()->Get((base + "/analyze" + q).c_str(), admin.headers(false))->status, 400);
	assert_int_equal(body(cli()->Get("/api/data/files", admin.headers(false)))["files"].size(), before);
	assert_int_equal(cli()->Get("/api/data/files/999999/download", admin.headers(false))->status, 404);
	auto r = post(admin, "/api/cluster/cache", { { "params", { { "promote_l1", json::array() } } } });
	assert_int_equal(r->status, 400);
	assert_int_equal(cli()->Delete(base.c_str(), admin.headers())->status, 200);
}

void viewers_cannot_change_the_cache(void **)
{
	auto r = post(viewer, "/api/cluster/cache", { { "params", { { "promote_l1", 64 } } } });
	assert_int_equal(r->status, 403);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "admin"));
	// an admin gets past the role: a bad parameter, then no module here
	r = post(admin, "/api/cluster/cache", { { "params", { { "no_such_param", 1 } } } });
	assert_int_equal(r->status, 400);
	r = post(admin, "/api/cluster/cache", { { "params", "x" } });
	assert_int_equal(r->status, 400);
	json cl = body(cli()->Get("/api/cluster", viewer.headers(false)));
	if (!cl["module"].get<bool>()) {
		r = post(admin, "/api/cluster/cache", { { "params", { { "promote_l1", 64 } } } });
		assert_int_equal(r->status, 503);
		assert_true(cl["error"].is_string());
	}
}

void sessions_expire_and_log_out(void **)
{
	user_session s = login_as("bob", "bob-password");
	assert_int_equal(cli()->Get("/api/session", s.headers(false))->status, 200);

	// the server's clock is not ours to move: age the session in its table
	sqlite3 *h;
	assert_int_equal(sqlite3_open((tmpdir + "/ui.db").c_str(), &h), SQLITE_OK);
	sqlite3_busy_timeout(h, 5000);
	assert_int_equal(sqlite3_exec(h, "UPDATE sessions SET expires = 1", nullptr, nullptr, nullptr), SQLITE_OK);
	sqlite3_close(h);
	auto r = cli()->Get("/api/session", s.headers(false));
	assert_int_equal(r->status, 401);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "expired"));

	admin = login_as("alice", "alice-password");
	viewer = login_as("bob", "bob-password");
	s = login_as("bob", "bob-password");
	assert_int_equal(cli()->Post("/api/logout", s.headers(false), "", "application/json")->status, 403);
	r = cli()->Post("/api/logout", s.headers(), "", "application/json");
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->get_header_value("Set-Cookie").c_str(), "Max-Age=0"));
	assert_int_equal(cli()->Get("/api/session", s.headers(false))->status, 401);
	assert_int_equal(cli()->Get("/api/session", viewer.headers(false))->status, 200);	// others stay
}

void pages_and_headers(void **)
{
	auto r = cli()->Get("/");
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->body.c_str(), "<html"));
	assert_non_null(strstr(r->get_header_value("Content-Security-Policy").c_str(), "default-src 'self'"));
	assert_string_equal(r->get_header_value("X-Frame-Options").c_str(), "DENY");
	r = cli()->Get("/vendor/chart.js");
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->body.c_str(), "Chart.js v3"));
	assert_int_equal(cli()->Get("/../../etc/passwd")->status, 404);
}

void big_bodies_are_refused_unread(void **)
{
	std::string big(1 << 20, ' ');
	big[0] = '[';
	big.back() = ']';
	// refused with 413 before the body is read; a client still sending
	// it may see the connection reset instead of the answer
	auto refused = [](const httplib::Result &r) { return !r || r->status == 413; };
	assert_true(refused(cli()->Post("/api/login", big, "application/json")));
	assert_true(refused(post(admin, "/api/sim/runs",
				 json{ { "trace", { { "gen", "zipf" } } }, { "name", std::string(300000, 'x') } })));
	// the answer itself, to a client that waits for it
	httplib::Client raw("127.0.0.1", srv->port);
	auto r = raw.Post("/api/login", { { "Expect", "100-continue" } }, big, "application/json");
	if (r)
		assert_int_equal(r->status, 413);
	assert_int_equal(cli()->Get("/api/session", admin.headers(false))->status, 200);
	// an upload may be bigger than other bodies (up to its own limit)
	std::string text;
	while (text.size() < 300000)
		text += "12345\n";
	httplib::MultipartFormDataItems items = { { "file", text, "big-ok.txt", "text/plain" } };
	auto srv64 = cli()->Post("/api/data/files", admin.headers(), items);
	assert_int_equal(srv64->status, 413);	// this console's limit is 64K
	text.resize(60000);
	items = { { "file", text, "fits.txt", "text/plain" } };
	assert_int_equal(cli()->Post("/api/data/files", admin.headers(), items)->status, 201);
}

void ids_stay_right_under_concurrency(void **)
{
	// runs and uploads get their own ids while other threads (these, and
	// the worker finishing runs) write the log
	std::atomic<bool> stop{ false };
	std::thread noise([&] {
		while (!stop)
			cli()->Get("/api/login");	// nothing logged: reads only
	});
	std::vector<std::thread> ts;
	std::atomic<int> wrong{ 0 };
	std::mutex said_lock;
	std::string said;	// what went wrong, for the log
	auto bad = [&](const std::string &step, const httplib::Result &r) {
		std::lock_guard<std::mutex> l(said_lock);
		wrong++;
		said += step + ": " + (r ? std::to_string(r->status) + " " + r->body.substr(0, 200)
					 : "no response (" + httplib::to_string(r.error()) + ")") + "\n";
	};
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&, t] {
			for (int k = 0; k < 8; k++) {
				std::string name = "c" + std::to_string(t) + "-" + std::to_string(k);
				json run = { { "name", name }, { "trace", { { "gen", "zipf:requests=1000,objects=100" } } },
					     { "sizes", { "10" } } };
				auto r = post(admin, "/api/sim/runs", run);
				if (!r || r->status != 202) {
					bad("run " + name, r);
					continue;
				}
				int64_t id = json::parse(r->body)["id"];
				auto g = cli()->Get(("/api/sim/runs/" + std::to_string(id)).c_str(), admin.headers(false));
				if (!g || g->status != 200 || json::parse(g->body)["name"] != name)
					bad("run " + std::to_string(id) + " read back as " + name, g);
				httplib::MultipartFormDataItems items = { { "file", "1\n2\n1\n", name + ".txt", "text/plain" } };
				auto u = cli()->Post("/api/data/files", admin.headers(), items);
				if (!u || u->status != 201) {
					bad("upload " + name, u);
					continue;
				}
				int64_t fid = json::parse(u->body)["id"];
				auto f = cli()->Get(("/api/data/files/" + std::to_string(fid) + "/download").c_str(),
						    admin.headers(false));
				if (!f || f->body != "1\n2\n1\n")
					bad("file " + std::to_string(fid) + " downloaded", f);
				cli()->Delete(("/api/data/files/" + std::to_string(fid)).c_str(), admin.headers());
			}
		});
	for (auto &t : ts)
		t.join();
	stop = true;
	noise.join();
	if (wrong)
		print_error("%s", said.c_str());
	assert_int_equal(wrong.load(), 0);
}

void ids_are_never_reused(void **)
{
	// the newest file deleted, the next upload must not take its id: the
	// deleter's unlink of "ID" raced with the new file's rename to it
	int64_t first = body(upload(admin, "gone.txt", "1\n"))["id"];
	assert_int_equal(cli()->Delete(("/api/data/files/" + std::to_string(first)).c_str(),
				       admin.headers())->status, 200);
	int64_t next = body(upload(admin, "next.txt", "2\n"))["id"];
	assert_true(next > first);
	assert_int_equal(cli()->Get(("/api/data/files/" + std::to_string(first) + "/download").c_str(),
				    admin.headers(false))->status, 404);
	assert_int_equal(cli()->Delete(("/api/data/files/" + std::to_string(next)).c_str(),
				       admin.headers())->status, 200);
}

void a_first_schema_database_upgrades(void **)
{
	// a database made before ids were kept unique: its rows survive the
	// upgrade, and a deleted id is not handed out again after it
	std::string db = tmpdir + "/v1.db";
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db.c_str(), &h), SQLITE_OK);
	const char *v1 =
		"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
		" hash TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('admin','viewer')),"
		" created REAL NOT NULL);"
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
		" requests INTEGER NOT NULL, objects INTEGER NOT NULL, csv TEXT, origin TEXT);"
		"INSERT INTO runs VALUES (7, 'old run', 'alice', 'failed', 1, 2, 'gone', '{}', NULL);"
		"INSERT INTO files VALUES (3, 'old.txt', 'alice', 1, 2, 'text', 1, 1, NULL, 'upload');"
		"INSERT INTO files VALUES (5, 'newest.txt', 'alice', 1, 2, 'text', 1, 1, NULL, 'upload');"
		"DELETE FROM files WHERE id = 5;"
		"PRAGMA user_version=1;";
	assert_int_equal(sqlite3_exec(h, v1, nullptr, nullptr, nullptr), SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(dsctl({ "ui", "user", "add", "carol", "role", "admin", "db", db }, "carol-password\n"), 0);

	assert_int_equal(sqlite3_open(db.c_str(), &h), SQLITE_OK);
	auto one = [&](const char *sql) {
		sqlite3_stmt *q;
		assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, nullptr), SQLITE_OK);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		std::string v = reinterpret_cast<const char *>(sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
		return v;
	};
	assert_string_equal(one("PRAGMA user_version").c_str(), "2");
	assert_string_equal(one("SELECT name FROM runs WHERE id = 7").c_str(), "old run");
	assert_string_equal(one("SELECT name FROM files WHERE id = 3").c_str(), "old.txt");
	// the id space goes on from the newest row still there; 4 and 5, once
	// handed out or not, are never given again from here on
	assert_int_equal(sqlite3_exec(h, "INSERT INTO files (name, user, created, size, format, requests,"
				      " objects) VALUES ('n', 'carol', 1, 1, 'text', 1, 1);"
				      "DELETE FROM files WHERE name = 'n';"
				      "INSERT INTO files (name, user, created, size, format, requests,"
				      " objects) VALUES ('m', 'carol', 1, 1, 'text', 1, 1)",
				      nullptr, nullptr, nullptr), SQLITE_OK);
	assert_string_equal(one("SELECT id FROM files WHERE name = 'm'").c_str(), "5");
	sqlite3_close(h);
}

void names_that_are_not_utf8_break_nothing(void **)
{
	auto r = upload(admin, std::string("bad\xff\xfe name.txt"), "1\n2\n3\n");
	assert_int_equal(r->status, 201);
	std::string name = body(r)["name"];
	assert_non_null(strstr(name.c_str(), "\xef\xbf\xbd"));	// U+FFFD
	assert_int_equal(cli()->Get("/api/data/files", admin.headers(false))->status, 200);
	assert_int_equal(cli()->Get("/api/logs?component=audit", admin.headers(false))->status, 200);
	assert_int_equal(cli()->Get("/api/logs?format=json", admin.headers(false))->status, 200);
	r = cli()->Get("/api/logs?level=%FF", admin.headers(false));
	assert_int_equal(r->status, 400);
	body(r);	// still JSON
	assert_int_equal(cli()->Delete(("/api/data/files/" + std::to_string(body(upload(admin, "x.txt", "1\n"))["id"].get<int64_t>())).c_str(),
				       admin.headers())->status, 200);
}

void runs_are_bounded(void **)
{
	json many = json::array();
	for (int k = 1; k <= 101; k++)
		many.push_back(std::to_string(k));
	auto r = post(admin, "/api/sim/runs", { { "trace", { { "gen", "zipf:requests=1000" } } }, { "sizes", many } });
	assert_int_equal(r->status, 400);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "at most 100"));
	r = post(admin, "/api/sim/runs", { { "trace", { { "gen", "zipf:requests=1m" } } }, { "window", 1 } });
	assert_int_equal(r->status, 400);
	assert_non_null(strstr(body(r)["error"].get<std::string>().c_str(), "windows"));
	r = post(admin, "/api/sim/runs", { { "trace", { { "gen", "zipf:requests=1m" } } }, { "window", 100 } });
	assert_int_equal(r->status, 202);
	r = post(admin, "/api/sim/runs", { { "trace", { { "gen", "zipf:requests=101m" } } } });
	assert_int_equal(r->status, 400);
}

void concurrent_failures_do_not_pass_the_limit(void **)
{
	std::string db = tmpdir + "/ui.db";
	assert_int_equal(dsctl({ "ui", "user", "add", "erin", "db", db }, "erin-password\n"), 0);
	std::atomic<int> checked{ 0 }, refused{ 0 };
	std::vector<std::thread> ts;
	for (int t = 0; t < 12; t++)
		ts.emplace_back([&] {
			auto r = login_raw("erin", "wrong-password");
			if (r && r->status == 401)
				checked++;
			else if (r && r->status == 429)
				refused++;
		});
	for (auto &t : ts)
		t.join();
	assert_int_equal(checked.load(), 5);
	assert_int_equal(refused.load(), 7);
	// refused tries are logged once a minute per name and address, not each
	for (int k = 0; k < 5; k++)
		assert_int_equal(login_raw("erin", "wrong-password")->status, 429);
	json logs = body(cli()->Get("/api/logs?component=audit&q=login%20of%20erin%20from", admin.headers(false)));
	size_t refusals = 0;
	for (const auto &e : logs["events"])
		refusals += e["message"].get<std::string>().find("refused") != std::string::npos;
	assert_int_equal(refusals, 1);
}

void the_database_is_private(void **)
{
	struct stat st;
	assert_int_equal(stat((tmpdir + "/ui.db").c_str(), &st), 0);
	assert_int_equal(st.st_mode & 077, 0);
	assert_int_equal(stat((tmpdir + "/ui.db.files").c_str(), &st), 0);
	assert_int_equal(st.st_mode & 077, 0);
	// and every method under /api/ needs a session
	httplib::Client c("127.0.0.1", srv->port);
	assert_int_equal(c.Put("/api/sim/runs/1", "{}", "application/json")->status, 401);
	assert_int_equal(c.Patch("/api/sim/runs/1", "{}", "application/json")->status, 401);
}

void a_signal_at_start_stops_it(void **)
{
	// SIGTERM the moment the port is printed: before the server runs
	for (int k = 0; k < 5; k++) {
		console *c = new console(tmpdir + "/sig.db");
		assert_true(c->port > 0);
		pid_t pid = c->pid;
		kill(pid, SIGTERM);
		int st = 0, waited = 0;
		while (waitpid(pid, &st, WNOHANG) == 0 && waited++ < 600)
			usleep(50000);
		assert_true(waited < 600);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		c->pid = -1;
		delete c;
	}
}

void https_with_a_certificate(void **)
{
	std::string cert = tmpdir + "/cert.pem", key = tmpdir + "/key.pem";
	std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout " +
			  key + " -out " + cert + " 2>/dev/null";
	assert_int_equal(system(cmd.c_str()), 0);
	std::string db = tmpdir + "/tls.db";
	assert_int_equal(dsctl({ "ui", "user", "add", "tess", "role", "admin", "db", db }, "tess-password\n"), 0);
	// HTTPS (the test stays on loopback)
	console c(db, { "cert", cert, "key", key });
	assert_true(c.port > 0);
	assert_non_null(strstr(c.first_line.c_str(), "https://"));
	httplib::SSLClient s("127.0.0.1", c.port);
	s.enable_server_certificate_verification(false);
	httplib::Headers h = login_headers(s);
	auto g = s.Get("/api/login");
	assert_non_null(strstr(g->get_header_value("Set-Cookie").c_str(), "; Secure"));
	auto r = s.Post("/api/login", h, R"({"user":"tess","password":"tess-password"})", "application/json");
	assert_non_null(r);
	assert_int_equal(r->status, 200);
	// the cookie says Secure over HTTPS
	assert_non_null(strstr(r->get_header_value("Set-Cookie").c_str(), "; Secure"));
	// plain HTTP to the TLS port gets no answer
	httplib::Client plain("127.0.0.1", c.port);
	auto p = plain.Get("/api/login");
	assert_true(!p || p->status >= 400);
	// a key that does not go with the certificate is refused at start
	std::string other = tmpdir + "/other.pem";
	cmd = "openssl genrsa -out " + other + " 2048 2>/dev/null";
	assert_int_equal(system(cmd.c_str()), 0);
	std::string out;
	assert_int_equal(dsctl({ "ui", "listen", "127.0.0.1:0", "cert", cert, "key", other, "db", db }, "", &out), 1);
}

void binding_beyond_loopback_needs_tls(void **)
{
	std::string out;
	assert_int_equal(dsctl({ "ui", "listen", "0.0.0.0:0", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "listen", "127.0.0.1:0", "cert", "/nonexistent", "key", "/nonexistent",
				 "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "listen", "nonsense", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "session-ttl", "0", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "upload-limit", "0", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "upload-limit", "lots", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "traces", "/nonexistent", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "cert", "/etc/hostname", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "frobnicate", "1", "db", tmpdir + "/x.db" }, "", &out), 1);
	// the store's words: masters as dsctl obj takes them, a node with them
	assert_int_equal(dsctl({ "ui", "store-masters", "nonsense", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "store-masters", "h:0", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "store-node", "3", "db", tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "store-masters", "127.0.0.1:1", "store-node", "0", "db",
				 tmpdir + "/x.db" }, "", &out), 1);
	assert_int_equal(dsctl({ "ui", "store-masters", "127.0.0.1:1", "store-node", "65536", "db",
				 tmpdir + "/x.db" }, "", &out), 1);
}

// ---- the store page ------------------------------------------------------

// A loopback port nothing listens on (just now).
int free_port()
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) ||
	    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len))
		fail_msg("no free port: %s", strerror(errno));
	close(fd);
	return ntohs(a.sin_port);
}

std::string error_of(const httplib::Result &r)
{
	json j = body(r);
	assert_true(j.contains("error") && j["error"].is_string());
	return j["error"];
}

#define assert_has(text, part) do { \
	std::string t_ = (text); \
	if (t_.find(part) == std::string::npos) \
		fail_msg("\"%s\" is not in \"%s\"", std::string(part).c_str(), t_.c_str()); \
} while (0)

// A console of its own, with the environment's store variables set for it
// alone (each an empty value: unset).
console *store_console(const std::vector<std::string> &extra,
		       const std::vector<std::pair<const char *, std::string>> &envs)
{
	for (const char *k : { "DSMEM_MASTERS", "DSMEM_STORE_INSECURE", "DSMEM_STORE_TLS_DIR",
			       "DSMEM_STORE_CA", "DSMEM_STORE_CERT", "DSMEM_STORE_KEY" })
		unsetenv(k);
	for (const auto &[k, v] : envs)
		setenv(k, v.c_str(), 1);
	auto *c = new console(tmpdir + "/ui.db", extra);
	for (const auto &[k, v] : envs)
		unsetenv(k);
	assert_true(c->port > 0);
	return c;
}

httplib::Result get_on(const console &c, const std::string &path, const user_session &s)
{
	httplib::Client cl("127.0.0.1", c.port);
	cl.set_read_timeout(60, 0);
	return cl.Get(path.c_str(), s.headers(false));
}

void the_store_page_without_masters(void **)
{
	json j = body(cli()->Get("/api/store", viewer.headers(false)));
	assert_false(j["configured"].get<bool>());
	assert_true(j["masters"].empty());
	assert_true(j["node"].is_null());
	assert_has(j["note"].get<std::string>(), "store-masters");
	for (const char *p : { "/api/store/master", "/api/store/segments", "/api/store/objects" }) {
		auto r = cli()->Get(p, viewer.headers(false));
		assert_int_equal(r->status, 503);
		assert_has(error_of(r), "store-masters HOST:PORT");
	}
	// bad listings are refused before anything is asked
	for (const char *p : { "/api/store/objects?limit=0", "/api/store/objects?limit=1001",
			       "/api/store/objects?after=xyz", "/api/store/objects?after=610",
			       "/api/store/objects?after=6100" })
		assert_int_equal(cli()->Get(p, viewer.headers(false))->status, 400);
	// the Slope view answers with or without the module
	j = body(cli()->Get("/api/cluster/slope", viewer.headers(false)));
	if (j["module"].get<bool>()) {
		assert_true(j["nodes"].is_array());
		assert_true(j["migrations"].is_array());
	} else {
		assert_true(j["error"].is_string());
	}
}

void an_unreachable_master_is_502(void **)
{
	int port = free_port();
	std::string addr = "127.0.0.1:" + std::to_string(port);
	// no TLS files: refused before any connection, with the reason
	mkdir((tmpdir + "/no-tls").c_str(), 0700);
	{
		std::unique_ptr<console> c(store_console({ "store-masters", addr },
							 { { "DSMEM_STORE_TLS_DIR", tmpdir + "/no-tls" } }));
		json j = body(get_on(*c, "/api/store", viewer));
		assert_true(j["configured"].get<bool>());
		assert_string_equal(j["masters"][0].get<std::string>().c_str(), addr.c_str());
		assert_has(j["note"].get<std::string>(), "store-node N");
		auto r = get_on(*c, "/api/store/master", viewer);
		assert_int_equal(r->status, 502);
		assert_has(error_of(r), "cannot reach the master at " + addr + ": ");
		assert_has(error_of(r), "ca.crt");
		r = get_on(*c, "/api/store/segments", viewer);
		assert_int_equal(r->status, 502);
		assert_has(error_of(r), "cannot list the pool's segments at " + addr);
		r = get_on(*c, "/api/store/objects", viewer);
		assert_int_equal(r->status, 503);
		assert_has(error_of(r), "store-node N");
	}
	// plaintext to a port nothing listens on: the library tries until its
	// deadline (10 s); the three requests wait out theirs together
	std::unique_ptr<console> c(store_console({ "store-masters", addr, "store-node", "1" },
						 { { "DSMEM_STORE_INSECURE", "1" } }));
	const char *paths[] = { "/api/store/master", "/api/store/segments", "/api/store/objects?prefix=k" };
	int status[3] = {};
	std::string error[3];
	std::vector<std::thread> ts;
	for (int k = 0; k < 3; k++)
		ts.emplace_back([&, k] {
			auto r = get_on(*c, paths[k], viewer);
			if (!r)
				return;
			status[k] = r->status;
			json j = json::parse(r->body, nullptr, false);
			error[k] = j.is_object() && j["error"].is_string() ? j["error"].get<std::string>() : r->body;
		});
	for (auto &t : ts)
		t.join();
	for (int k = 0; k < 3; k++)
		if (status[k] != 502)
			fail_msg("%s answered %d: %s", paths[k], status[k], error[k].c_str());
	assert_has(error[0], "cannot reach the master at " + addr + ": " + addr);
	assert_has(error[1], "cannot list the pool's segments at " + addr);
	// no module here, or no such node, or no master: said which
	assert_has(error[2], "cannot join the store at " + addr + " as node 1: ");
}

void the_store_page_against_a_real_master(void **)
{
	int port = free_port();
	std::string addr = "127.0.0.1:" + std::to_string(port), dir = tmpdir + "/master";
	mkdir(dir.c_str(), 0700);
	mkdir((dir + "/data").c_str(), 0700);
	// dsmaster's control plane runs without the module (data moves aside)
	pid_t m = fork();
	if (m == 0) {
		int fd = open((dir + "/log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(DS_DSMASTER, DS_DSMASTER, "--listen", addr.c_str(), "--node", "1", "--addr",
		      "127.0.0.1", "--port", "18001", "--data-dir", (dir + "/data").c_str(),
		      "--slow-tier", "none", "--insecure", "--metrics-listen", "none", nullptr);
		_exit(127);
	}
	struct stop_master {
		pid_t pid;
		~stop_master()
		{
			kill(pid, SIGTERM);
			waitpid(pid, nullptr, 0);
		}
	} stop{ m };
	bool up = false;
	for (int k = 0; k < 200 && !up; k++) {
		std::ifstream in(dir + "/log");
		std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		up = all.find("leader (term") != std::string::npos;
		if (!up)
			usleep(50000);
	}
	assert_true(up);
	setenv("DSMEM_STORE_INSECURE", "1", 1);
	std::string out;
	int st = dsctl({ "segment", "add", "pool", "master", addr, "traddr", "10.0.0.9", "subnqn",
			 "nqn.2026-01.io.dsmem:ui-test", "size", "1G" }, "", &out);
	unsetenv("DSMEM_STORE_INSECURE");
	assert_int_equal(st, 0);

	std::unique_ptr<console> c(store_console({ "store-masters", addr },
						 { { "DSMEM_STORE_INSECURE", "1" } }));
	json j = body(get_on(*c, "/api/store/master", viewer));
	assert_string_equal(j["leader"].get<std::string>().c_str(), addr.c_str());
	assert_true(j["standbys"].empty());
	assert_true(j["term"].get<uint64_t>() >= 1);
	assert_int_equal(j["objects"].get<uint64_t>(), 0);
	for (const char *k : { "evictions", "expiries", "evicted_bytes" })
		assert_int_equal(j[k].get<uint64_t>(), 0);
	assert_int_equal(j["high_watermark_pct"].get<int>(), 95);
	assert_int_equal(j["low_watermark_pct"].get<int>(), 85);
	assert_string_equal(j["masters"][0].get<std::string>().c_str(), addr.c_str());

	auto r = get_on(*c, "/api/store/segments", viewer);
	assert_int_equal(r->status, 200);
	// where segments' bytes are is not the console's to show
	for (const char *secret : { "\"addr\"", "\"base\"", "gaddr", "rkey" })
		if (r->body.find(secret) != std::string::npos)
			fail_msg("%s in %s", secret, r->body.c_str());
	j = body(r);
	assert_int_equal(j["segments"].size(), 1);
	json sg = j["segments"][0];
	assert_string_equal(sg["type"].get<std::string>().c_str(), "nvmeof");
	assert_string_equal(sg["state"].get<std::string>().c_str(), "alive");
	assert_int_equal(sg["size"].get<uint64_t>(), 1ULL << 30);
	assert_int_equal(sg["used"].get<uint64_t>(), 0);
	assert_string_equal(sg["subnqn"].get<std::string>().c_str(), "nqn.2026-01.io.dsmem:ui-test");
	assert_int_equal(j["tiers"].size(), 2);
	for (const auto &t : j["tiers"]) {
		bool nv = t["tier"] == "nvmeof";
		assert_int_equal(t["segments"].get<uint64_t>(), nv ? 1 : 0);
		assert_int_equal(t["size"].get<uint64_t>(), nv ? 1ULL << 30 : 0);
		assert_true(nv ? t["use"].get<double>() == 0.0 : t["use"].is_null());
	}
	r = get_on(*c, "/api/store/objects", viewer);
	assert_int_equal(r->status, 503);
	assert_has(error_of(r), "store-node N");
	// read only: nothing else under /api/store
	httplib::Client cl("127.0.0.1", c->port);
	assert_int_equal(cl.Post("/api/store/objects", admin.headers(), "{}", "application/json")->status, 404);
	assert_int_equal(cl.Delete("/api/store/master", admin.headers())->status, 404);
}

}  // namespace

int main()
{
	// a dsctl that refuses its words before reading the password leaves
	// the pipe to its stdin closed: EPIPE, not death
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(users_are_managed_by_dsctl),
		cmocka_unit_test(users_are_managed_in_the_console),
		cmocka_unit_test(the_live_tail_is_pushed),
		cmocka_unit_test(no_users_says_how_to_create_one),
		cmocka_unit_test(wrong_password_and_unknown_user),
		cmocka_unit_test(every_endpoint_needs_a_session),
		cmocka_unit_test(state_changes_need_the_csrf_token),
		cmocka_unit_test(login_needs_the_csrf_token),
		cmocka_unit_test(a_run_is_dsctl_sim_run),
		cmocka_unit_test(impossible_runs_are_refused),
		cmocka_unit_test(a_run_can_be_canceled),
		cmocka_unit_test(uploads_convert_and_analyze),
		cmocka_unit_test(bad_uploads_keep_nothing),
		cmocka_unit_test(derived_files_check_their_arguments),
		cmocka_unit_test(viewers_cannot_change_the_cache),
		cmocka_unit_test(failed_logins_are_rate_limited),
		cmocka_unit_test(logs_filter_page_and_export),
		cmocka_unit_test(sessions_expire_and_log_out),
		cmocka_unit_test(pages_and_headers),
		cmocka_unit_test(binding_beyond_loopback_needs_tls),
		cmocka_unit_test(big_bodies_are_refused_unread),
		cmocka_unit_test(ids_stay_right_under_concurrency),
		cmocka_unit_test(ids_are_never_reused),
		cmocka_unit_test(a_first_schema_database_upgrades),
		cmocka_unit_test(names_that_are_not_utf8_break_nothing),
		cmocka_unit_test(runs_are_bounded),
		cmocka_unit_test(concurrent_failures_do_not_pass_the_limit),
		cmocka_unit_test(the_database_is_private),
		cmocka_unit_test(a_signal_at_start_stops_it),
		cmocka_unit_test(https_with_a_certificate),
		cmocka_unit_test(the_store_page_without_masters),
		cmocka_unit_test(an_unreachable_master_is_502),
		cmocka_unit_test(the_store_page_against_a_real_master),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
