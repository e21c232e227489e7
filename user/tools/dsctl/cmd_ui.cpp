// SPDX-License-Identifier: BSD-2-Clause
// dsctl ui [serve] [listen ADDR:PORT] [db PATH] [cert FILE key FILE]
//          [insecure] [upload-limit BYTES] [session-ttl SECONDS] [traces DIR]
//          [store-masters HOST:PORT[,...]] [store-node N]
//      | ui user [show] [db PATH]
//      | ui user add NAME [role admin|viewer] [db PATH]
//      | ui user del NAME [db PATH]
//      | ui user set NAME role admin|viewer [db PATH]
//      | ui user passwd NAME [db PATH]
// The console is its own program, dsmem-console(8): dsctl execs it with
// these words, so that dsctl links no HTTP server, database or crypto.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits.h>
#include <unistd.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

const char console_program[] = "dsmem-console";

// The directory of the running dsctl: a build tree's dsctl runs the
// console built beside it.
std::string self_dir()
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return "";
	std::string exe(buf, size_t(n));
	return exe.substr(0, exe.rfind('/'));
}

// Replace dsctl by the console, with the output options and the words.
[[noreturn]] void exec_console(env &e, const char *verb)
{
	// Not PATH: dsctl runs as root for its admin words, and root's PATH
	// (sudo -E, su without -) may name a directory a user can write.
	std::string file = find_program(console_program, self_dir(), nullptr, DSCTL_SBINDIR);
	if (file.empty())
		fail(std::string(console_program) + " is not beside dsctl or in " DSCTL_SBINDIR
		     ": install it to use dsctl ui");
	std::vector<std::string> words = { file };
	if (e.opts.json)
		words.push_back("-j");
	if (e.opts.pretty)
		words.push_back("-p");
	words.push_back(verb);
	while (!e.words.empty())
		words.push_back(e.words.next());
	std::vector<char *> argv;
	for (std::string &w : words)
		argv.push_back(w.data());
	argv.push_back(nullptr);
	fflush(stdout);
	execv(file.c_str(), argv.data());
	fail("cannot run " + file + ": " + strerror(errno));
}

int ui_serve(env &e)
{
	exec_console(e, "serve");
}

int ui_user(env &e)
{
	exec_console(e, "user");
}

const command ui_cmds[] = {
	{ "serve", ui_serve },
	{ "user", ui_user },
};

}  // namespace

extern const object ui_object = {
	"ui", ui_cmds, sizeof(ui_cmds) / sizeof(ui_cmds[0]),
	"Usage: dsctl ui [ serve ] [ listen ADDR:PORT ] [ db PATH ] [ cert FILE key FILE ]\n"
	"                          [ insecure ] [ upload-limit BYTES ] [ session-ttl SECONDS ]\n"
	"                          [ traces DIR ] [ store-masters HOST:PORT[,...] ] [ store-node N ]\n"
	"       dsctl ui user [ show ] [ db PATH ]\n"
	"       dsctl ui user add NAME [ role { admin | viewer } ] [ db PATH ]\n"
	"       dsctl ui user del NAME [ db PATH ]\n"
	"       dsctl ui user set NAME role { admin | viewer } [ db PATH ]\n"
	"       dsctl ui user passwd NAME [ db PATH ]\n"
	"Keywords may be written --keyword too.\n"
	"The last admin is neither deleted nor made a viewer.\n"
	"The password of user add and passwd is asked on the terminal, or read from the first line\n"
	"of standard input.  listen defaults to 127.0.0.1:8080, db to\n"
	"$XDG_STATE_HOME/dsmem/ui.db (~/.local/state/dsmem/ui.db); store-masters to\n"
	"$DSMEM_MASTERS.\n"
	"dsctl ui runs the console daemon, dsmem-console(8).\n",
	true,
};

}  // namespace dsctl
