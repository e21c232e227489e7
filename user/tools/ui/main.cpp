// SPDX-License-Identifier: BSD-2-Clause
// dsmem-console -- the web console, a daemon of its own ("dsctl ui" runs it):
//   dsmem-console [ -j [ -p ] ] [serve] [listen ADDR:PORT] [db PATH]
//          [cert FILE key FILE] [insecure] [upload-limit BYTES]
//          [session-ttl SECONDS] [traces DIR]
//          [store-masters HOST:PORT[,...]] [store-node N]
//      | user [show] [db PATH]
//      | user add NAME [role admin|viewer] [db PATH]
//      | user del NAME [db PATH]
//      | user set NAME role admin|viewer [db PATH]
//      | user passwd NAME [db PATH]
// Keywords may be written --keyword too.  Its messages name "dsctl ui",
// the word operators type.
#include <cerrno>
#include <cstring>
#include <iostream>

#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <linux/dsmem.h>

#include "dsctl.hpp"
#include "store_cli.hpp"
#include "ui.hpp"

namespace dsui {

namespace {

using namespace dsctl;

// $XDG_STATE_HOME/dsmem/ui.db, else ~/.local/state/dsmem/ui.db
std::string default_db()
{
	const char *state = getenv("XDG_STATE_HOME");
	if (state && *state)
		return std::string(state) + "/dsmem/ui.db";
	const char *home = getenv("HOME");
	if (!home || !*home)
		fail("no HOME to keep the console's database in: give db PATH");
	return std::string(home) + "/.local/state/dsmem/ui.db";
}

std::string db_of(const keywords &kw)
{
	return kw.has("db") ? *kw.get("db") : default_db();
}

// The words left, with "--listen" taken as "listen" (the form daemons'
// users type).
args dashless(env &e)
{
	std::vector<std::string> w;
	while (!e.words.empty()) {
		std::string s = e.words.next();
		w.push_back(s.rfind("--", 0) == 0 && s.size() > 2 ? s.substr(2) : s);
	}
	return args(w);
}

keywords words_of(env &e, const std::vector<std::string_view> &words,
		  const std::vector<std::string_view> &flags = {})
{
	args a = dashless(e);
	keywords kw;
	std::string err;
	if (!kw.parse(a, words, err, flags))
		fail(err + ", try \"dsctl ui help\"");
	return kw;
}

// Errors of the console's parts become dsctl's "Error: ..."
template <typename F>
int guarded(F f)
{
	try {
		return f();
	} catch (const dsui::http_error &e) {
		fail(e.what);
	}
}

// A password from the terminal (asked twice, not echoed) or, when stdin
// is not one, its first line.
std::string read_password()
{
	std::string pw, again;

	if (!isatty(STDIN_FILENO)) {
		if (!std::getline(std::cin, pw))
			fail("no password on standard input");
		return pw;
	}
	struct termios old, quiet;
	tcgetattr(STDIN_FILENO, &old);
	quiet = old;
	quiet.c_lflag &= ~tcflag_t(ECHO);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	fputs("Password: ", stderr);
	bool ok = bool(std::getline(std::cin, pw));
	fputs("\nAgain: ", stderr);
	ok = ok && std::getline(std::cin, again);
	fputs("\n", stderr);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
	if (!ok)
		fail("no password given");
	if (pw != again)
		fail("the passwords differ");
	return pw;
}

int ui_serve(env &e)
{
	keywords kw = words_of(e, { "listen", "db", "cert", "key", "upload-limit", "session-ttl", "traces",
				    "store-masters", "store-node" },
			       { "insecure" });
	dsui::config c;

	c.insecure = kw.has("insecure");
	if (kw.has("listen")) {
		const std::string &l = *kw.get("listen");
		size_t colon = l.rfind(':');
		unsigned int port;
		if (colon == std::string::npos || !parse_u32(l.substr(colon + 1), port) || port > 65535)
			fail("listen takes ADDRESS:PORT (port 0: any free port), not \"" + l + "\"");
		c.host = l.substr(0, colon);
		if (c.host.size() > 2 && c.host.front() == '[' && c.host.back() == ']')
			c.host = c.host.substr(1, c.host.size() - 2);
		c.port = uint16_t(port);
	}
	c.db_path = db_of(kw);
	c.cert = kw.has("cert") ? *kw.get("cert") : "";
	c.key = kw.has("key") ? *kw.get("key") : "";
	c.traces_dir = kw.has("traces") ? *kw.get("traces") : "";
	if (kw.has("upload-limit") &&
	    (!parse_size(*kw.get("upload-limit"), c.upload_limit) || !c.upload_limit))
		fail("upload-limit takes a number of bytes with an optional K, M or G suffix");
	if (kw.has("session-ttl") &&
	    (!parse_u64(*kw.get("session-ttl"), c.session_ttl) || !c.session_ttl ||
	     c.session_ttl > 30 * 86400))
		fail("session-ttl takes seconds, from 1 to 2592000 (30 days)");
	// the object store's masters: the keyword, else DSMEM_MASTERS (as
	// dsctl obj), else none (the store page says how to give them)
	const char *env_masters = getenv(masters_env);
	if (kw.has("store-masters") || (env_masters && *env_masters)) {
		std::string err;
		if (!resolve_masters(kw.get("store-masters"), c.store_masters, err))
			fail(kw.has("store-masters") ? "store-masters needs HOST:PORT[,HOST:PORT...]" : err);
	}
	if (kw.has("store-node")) {
		unsigned int n;
		if (!parse_u32(*kw.get("store-node"), n) || !n || n > DSMEM_NODE_ID_MAX)
			fail("store-node needs a node id from 1 to " + std::to_string(DSMEM_NODE_ID_MAX));
		if (c.store_masters.empty())
			fail(std::string("store-node needs the masters: give store-masters HOST:PORT[,...] or set ") +
			     masters_env);
		c.store_node = n;
	}
	return guarded([&] { return dsui::serve(c); });
}

int ui_user(env &e)
{
	std::string verb = e.words.empty() ? "show" : e.words.peek();
	bool named = verb == "add" || verb == "del" || verb == "set" || verb == "passwd";

	if (named || matches(verb, "show"))
		e.words.next();
	else
		verb = "show";	// "ui user db PATH"
	if (!named) {
		keywords kw = words_of(e, { "db" });
		return guarded([&] {
			dsui::db d(db_of(kw));
			e.out.begin_list();
			for (const auto &u : dsui::user_list(d))
				e.out.add({ { "user", u["name"] }, { "role", u["role"] } });
			return 0;
		});
	}
	if (e.words.empty())
		fail("missing NAME, try \"dsctl ui help\"");
	std::string name = e.words.next();
	keywords kw = words_of(e, verb == "add" || verb == "set" ? std::vector<std::string_view>{ "role", "db" }
								: std::vector<std::string_view>{ "db" });
	// the console's user page checks through the same calls (auth.cpp)
	return guarded([&] {
		umask(077);	// as serve makes it: the hashes are no one else's
		dsui::db d(db_of(kw));
		if (verb == "del") {
			dsui::user_del(d, name);
			dsui::log_event(d, "info", "audit", -1, "user " + name + " deleted (dsctl)");
			return 0;
		}
		if (verb == "set") {
			if (!kw.has("role"))
				fail("missing role admin|viewer, try \"dsctl ui help\"");
			std::string role = *kw.get("role");
			std::string was = dsui::user_set_role(d, name, role);
			dsui::log_event(d, "info", "audit", -1,
					"user " + name + " made " + role + " (was " + was + ") (dsctl)");
			return 0;
		}
		// refused before the password is asked for
		dsui::check_name(name);
		if (verb == "passwd") {
			bool known = false;
			for (const auto &u : dsui::user_list(d))
				known = known || u["name"] == name;
			if (!known)
				fail("no user " + name);
			std::string pw = read_password();
			dsui::user_set_password(d, name, pw);
			dsui::log_event(d, "info", "audit", -1, "password of " + name + " reset (dsctl)");
			return 0;
		}
		std::string role = kw.has("role") ? *kw.get("role") : "viewer";
		dsui::check_role(role);
		dsui::user_add(d, name, read_password(), role);
		dsui::log_event(d, "info", "audit", -1, "user " + name + " added as " + role + " (dsctl)");
		return 0;
	});
}

const char usage_text[] =
	"Usage: dsmem-console [ -j [ -p ] ] [ serve ] [ listen ADDR:PORT ] [ db PATH ]\n"
	"                     [ cert FILE key FILE ] [ insecure ] [ upload-limit BYTES ]\n"
	"                     [ session-ttl SECONDS ] [ traces DIR ]\n"
	"                     [ store-masters HOST:PORT[,...] ] [ store-node N ]\n"
	"       dsmem-console [ -j [ -p ] ] user [ show ] [ db PATH ]\n"
	"       dsmem-console user add NAME [ role { admin | viewer } ] [ db PATH ]\n"
	"       dsmem-console user del NAME [ db PATH ]\n"
	"       dsmem-console user set NAME role { admin | viewer } [ db PATH ]\n"
	"       dsmem-console user passwd NAME [ db PATH ]\n"
	"Keywords may be written --keyword too; see dsmem-console(8).\n";

int run(int argc, char **argv)
{
	global_opts opts;
	std::string err;
	// dsctl's options, only before the words: "--listen" is a keyword
	int i = parse_global(argc, argv, opts, err, true);

	if (opts.show_version) {
		printf("dsmem-console, dsmem %s\n", DSCTL_VERSION);
		return 0;
	}
	if (opts.help || (i < argc && std::string_view(argv[i]) == "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	args words(std::vector<std::string>(argv + i, argv + argc));
	int (*fn)(env &) = ui_serve;
	if (!words.empty() && matches(words.peek(), "user")) {
		fn = ui_user;
		words.next();
	} else if (!words.empty() && matches(words.peek(), "serve")) {
		words.next();
	}
	return run_command(fn, opts, words);
}

}  // namespace

}  // namespace dsui

int main(int argc, char **argv)
{
	return dsctl::run_reporting(dsui::run, argc, argv);
}
