// SPDX-License-Identifier: BSD-2-Clause
// What the simulator's tests share: a temporary directory for the files
// they write, and traces made by hand.  Include after cmocka.h.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim.hpp"

namespace simtest {

inline std::string tmp_dir;
inline std::vector<std::string> made_files;

// Group set-up and tear-down: /tmp/<program>.XXXXXX and what was made in it.
inline int make_tmp_dir(void **)
{
	std::string dir = std::string("/tmp/") + program_invocation_short_name + ".XXXXXX";
	if (!mkdtemp(dir.data()))
		return -1;
	tmp_dir = dir;
	return 0;
}

inline int remove_tmp_dir(void **)
{
	for (const std::string &f : made_files)
		unlink(f.c_str());
	return rmdir(tmp_dir.c_str());
}

// A path in tmp_dir, removed at tear-down.
inline std::string tmp_path(const std::string &name)
{
	std::string path = tmp_dir + "/" + name;
	made_files.push_back(path);
	return path;
}

inline std::string slurp(const std::string &path)
{
	FILE *f = fopen(path.c_str(), "rb");
	assert_non_null(f);
	std::string out;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		out.append(buf, n);
	fclose(f);
	return out;
}

// A program with these words: its exit status, stdout and stderr.
struct result {
	int status;
	std::string out, err;
};

inline result run_prog(const char *path, const std::vector<std::string> &words)
{
	char out[] = "/tmp/dssim-out-XXXXXX", err[] = "/tmp/dssim-err-XXXXXX";
	int fo = mkstemp(out), fe = mkstemp(err);
	pid_t pid = fork();

	if (pid == 0) {
		std::vector<char *> argv = { const_cast<char *>(path) };
		for (const auto &w : words)
			argv.push_back(const_cast<char *>(w.c_str()));
		argv.push_back(nullptr);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(path, argv.data());
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	close(fo);
	close(fe);
	result r{ WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err) };
	unlink(out);
	unlink(err);
	return r;
}

#ifdef DS_DSCTL
// dsctl (the build's, DS_DSCTL) with these words.
inline result dsctl(const std::vector<std::string> &words)
{
	return run_prog(DS_DSCTL, words);
}
#endif

// Write bytes to tmp_dir/name; returns the path.
inline std::string write_file(const std::string &name, const std::string &bytes)
{
	std::string path = tmp_path(name);
	FILE *f = fopen(path.c_str(), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
	assert_int_equal(fclose(f), 0);
	return path;
}

// A generated trace; a spec the generator refuses fails the test.
inline dssim::trace gen(const std::string &spec)
{
	try {
		return dssim::generate(spec);
	} catch (const dssim::sim_error &e) {
		fail_msg("%s", e.what());
	}
	return {};
}

// What f threw as a sim_error, or "(no error)".
template <typename F>
std::string error_of(F &&f)
{
	try {
		f();
	} catch (const dssim::sim_error &e) {
		return e.what();
	}
	return "(no error)";
}

inline void assert_has(const std::string &text, std::initializer_list<const char *> parts)
{
	for (const char *part : parts)
		if (text.find(part) == std::string::npos)
			fail_msg("\"%s\" does not say \"%s\"", text.c_str(), part);
}

// A trace of these keys, dense ids in order of first appearance (as the
// readers make them).
template <typename Keys>
dssim::trace trace_of(const Keys &keys)
{
	dssim::trace t;
	t.name = "hand";
	t.format = "gen";
	for (uint64_t k : keys) {
		uint32_t id = 0;
		while (id < t.keys.size() && t.keys[id] != k)
			id++;
		if (id == t.keys.size())
			t.keys.push_back(k);
		t.ids.push_back(id);
	}
	return t;
}

inline dssim::trace trace_of(std::initializer_list<uint64_t> keys)
{
	return trace_of<std::initializer_list<uint64_t>>(keys);
}

}  // namespace simtest
