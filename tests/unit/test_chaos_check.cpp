// SPDX-License-Identifier: BSD-2-Clause
// The chaos run's checker (tests/chaos, docs/chaos.md): histories that are
// linearizable (sequential, overlapping puts, operations of unknown
// outcome that did and did not happen), the classic violations (a stale
// read, a value nobody wrote, a read going back in time, a lost
// acknowledged put, a delete seen then unseen), bad checksums, whole
// bytes of another key or version, malformed
// lines, and a generated run of 5 processes x 2000 operations on 4 keys,
// plus dschaos-check itself.
#include <cinttypes>
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "check.hpp"
#include "history.hpp"

extern "C" {
#include <cmocka.h>
}

using namespace dschaos;

namespace {

// times in the tests are milliseconds
constexpr int64_t ms = 1000000;

// A history written line by line.  Each helper writes an operation's
// invocation and completion; a process's operations must come in order.
struct hist {
	std::string text;

	void raw(const std::string &line) { text += line + "\n"; }

	void invoke(int p, const char *f, const char *key, int64_t t, const std::string &more = "")
	{
		raw("{\"type\":\"invoke\",\"process\":" + std::to_string(p) + ",\"f\":\"" + f +
		    "\",\"key\":\"" + key + "\",\"time\":" + std::to_string(t * ms) + more + "}");
	}
	void done(int p, const char *type, const char *f, int64_t t, const std::string &more = "")
	{
		raw("{\"type\":\"" + std::string(type) + "\",\"process\":" + std::to_string(p) +
		    ",\"f\":\"" + f + "\",\"time\":" + std::to_string(t * ms) + more + "}");
	}

	// version < 0: none; type "info": t1 is when the client gave up
	void put(int p, const char *key, uint64_t value, int64_t t0, int64_t t1, int64_t version,
		 const char *type = "ok")
	{
		invoke(p, "put", key, t0, ",\"value\":" + std::to_string(value));
		done(p, type, "put", t1,
		     version >= 0 && !strcmp(type, "ok") ? ",\"version\":" + std::to_string(version) : "");
	}
	// value < 0: found nothing
	void get(int p, const char *key, int64_t t0, int64_t t1, int64_t value, int64_t version = -1,
		 const char *type = "ok", bool checksum_ok = true, bool final = false)
	{
		invoke(p, "get", key, t0, final ? ",\"final\":true" : "");
		if (strcmp(type, "ok")) {
			done(p, type, "get", t1, ",\"error\":\"ETIMEDOUT\"");
			return;
		}
		std::string more = value < 0 ? ",\"found\":false" : ",\"found\":true,\"value\":" + std::to_string(value);
		if (value >= 0 && version >= 0)
			more += ",\"version\":" + std::to_string(version);
		if (!checksum_ok)
			more += ",\"checksum_ok\":false";
		done(p, type, "get", t1, more);
	}
	void del(int p, const char *key, int64_t t0, int64_t t1, bool found, const char *type = "ok")
	{
		invoke(p, "del", key, t0);
		done(p, type, "del", t1, !strcmp(type, "ok") ? std::string(",\"found\":") + (found ? "true" : "false") : "");
	}
	void exist(int p, const char *key, int64_t t0, int64_t t1, bool found, int64_t version = -1)
	{
		invoke(p, "exist", key, t0);
		std::string more = std::string(",\"found\":") + (found ? "true" : "false");
		if (found && version >= 0)
			more += ",\"version\":" + std::to_string(version);
		done(p, "ok", "exist", t1, more);
	}
	void nemesis(int64_t t, const char *f, const char *fault)
	{
		raw("{\"type\":\"nemesis\",\"time\":" + std::to_string(t * ms) + ",\"f\":\"" + f +
		    "\",\"fault\":\"" + fault + "\"}");
	}

	report check(bool versions = true) const
	{
		options o;
		o.versions = versions;
		return dschaos::check(parse_history(text), o);
	}
};

std::string words(const report &r)
{
	std::string s;
	for (const key_result &k : r.keys_checked)
		for (const std::string &w : k.why)
			s += w + "\n";
	for (const std::string &w : r.lost)
		s += w + "\n";
	return s;
}

void expect_linearizable(const hist &h, bool versions = true)
{
	report r = h.check(versions);
	if (r.violations || r.undecided)
		print_message("%s", words(r).c_str());
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.undecided, 0);
	assert_int_equal(r.lost_acked, 0);
	assert_true(r.passed());
}

// One key found not linearizable, its first violation's words holding what.
report expect_violation(const hist &h, const char *what, bool versions = true)
{
	report r = h.check(versions);
	if (r.violations != 1 || words(r).find(what) == std::string::npos)
		print_message("expected \"%s\":\n%s", what, words(r).c_str());
	assert_int_equal(r.violations, 1);
	assert_false(r.passed());
	std::string first;
	for (const key_result &k : r.keys_checked)
		if (k.result == verdict::violation)
			first = k.why.at(0);
	assert_non_null(strstr(first.c_str(), what));
	return r;
}

// ------------------------------------------------------------ linearizable

void sequential(void **)
{
	hist h;
	h.get(0, "k", 0, 1, -1);
	h.exist(0, "k", 2, 3, false);
	h.del(0, "k", 4, 5, false);
	h.put(0, "k", 1, 6, 7, 10);
	h.get(1, "k", 8, 9, 1, 10);
	h.exist(1, "k", 10, 11, true, 10);
	h.put(0, "k", 2, 12, 13, 12);
	h.get(1, "k", 14, 15, 2, 12);
	h.del(0, "k", 16, 17, true);
	h.get(1, "k", 18, 19, -1);
	h.put(0, "k", 3, 20, 21, 15);
	h.exist(1, "k", 22, 23, true);
	h.get(1, "k", 24, 25, 3, 15);
	expect_linearizable(h);
	expect_linearizable(h, false);
	report r = h.check();
	assert_int_equal(r.ops, 13);
	assert_int_equal(r.ok, 13);
	assert_int_equal(r.keys, 1);
}

// Two puts overlap; reads during the overlap see either, in the order of
// their versions, whichever began first; reads after both see the newer.
void concurrent_puts(void **)
{
	for (int swap = 0; swap < 2; swap++) {
		hist h;
		h.put(1, "k", 1, 0, 10, swap ? 6 : 5);
		h.put(2, "k", 2, 1, 9, swap ? 5 : 6);
		h.get(3, "k", 2, 3, -1);
		h.get(3, "k", 4, 5, swap ? 2 : 1, 5);
		h.get(3, "k", 6, 7, swap ? 1 : 2, 6);
		h.get(4, "k", 11, 12, swap ? 1 : 2, 6);
		expect_linearizable(h);
	}
	// without versions a register may read them in either order
	hist h;
	h.put(1, "k", 1, 0, 10, 5);
	h.put(2, "k", 2, 1, 9, 6);
	h.get(3, "k", 4, 5, 2, 6);
	h.get(3, "k", 6, 7, 1, 5);
	expect_linearizable(h, false);
	// with them, the older version after the newer one is time going back
	expect_violation(h, "read going back in time");
	// and after both were acknowledged, the older one is stale
	hist s;
	s.put(1, "k", 1, 0, 10, 5);
	s.put(2, "k", 2, 1, 9, 6);
	s.get(3, "k", 11, 12, 1, 5);
	expect_violation(s, "stale read");
	expect_linearizable(s, false);
}

// A put whose outcome is unknown may take effect, later than its client
// gave up, or never.
void info_ops(void **)
{
	for (int happened = 0; happened < 2; happened++) {
		hist h;
		h.put(1, "k", 1, 0, 1, 1);
		h.put(1, "k", 2, 2, 5, -1, "info");
		h.get(2, "k", 10, 11, happened ? 2 : 1, happened ? 3 : 1);
		h.get(2, "k", 12, 13, happened ? 2 : 1, happened ? 3 : 1);
		h.get(3, "k", 14, 15, happened ? 2 : 1, happened ? 3 : 1, "ok", true, true);
		expect_linearizable(h);
	}
	// a del of unknown outcome, both ways
	for (int happened = 0; happened < 2; happened++) {
		hist h;
		h.put(1, "k", 1, 0, 1, 1);
		h.del(1, "k", 2, 3, false, "info");
		h.get(2, "k", 4, 5, happened ? -1 : 1, 1);
		h.exist(2, "k", 6, 7, !happened);
		expect_linearizable(h);
	}
	// an unknown put nobody read explains a del and an exist that found a
	// value: it happened, though no get saw it
	hist a;
	a.put(1, "k", 7, 0, 2, -1, "info");
	a.exist(2, "k", 3, 4, true);
	a.del(2, "k", 5, 6, true);
	a.get(2, "k", 7, 8, -1);
	expect_linearizable(a);
	// and without it they found a value nobody put
	hist b;
	b.exist(2, "k", 3, 4, true);
	expect_violation(b, "a value out of nowhere");
	// a put of unknown outcome that lands late may not undo a newer
	// version (the newest version is what a get returns) ...
	hist late;
	late.put(1, "k", 2, 0, 1, -1, "info");
	late.put(1, "k", 3, 2, 3, 4);
	late.get(2, "k", 4, 5, 3, 4);
	late.get(2, "k", 6, 7, 2, 3);
	expect_violation(late, "stale read");
	// ... though a plain register allows it
	expect_linearizable(late, false);
	// failed operations never happened, gets of unknown outcome saw nothing
	hist f;
	f.put(1, "k", 1, 0, 1, 1);
	f.put(1, "k", 2, 2, 3, -1, "fail");
	f.del(1, "k", 4, 5, false, "fail");
	f.get(2, "k", 6, 7, 0, -1, "info");
	f.get(2, "k", 8, 9, 1, 1);
	expect_linearizable(f);
	report r = f.check();
	assert_int_equal(r.ok, 2);
	assert_int_equal(r.fail, 2);
	assert_int_equal(r.info, 1);
}

// Operations still open at the end are of unknown outcome.
void open_at_end(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.invoke(1, "put", "k", 2, ",\"value\":2");
	h.get(2, "k", 3, 4, 2, 2);
	report r = h.check();
	assert_int_equal(r.open_at_end, 1);
	assert_int_equal(r.info, 1);
	expect_linearizable(h);
}

// ------------------------------------------------------------ violations

void stale_read(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.put(1, "k", 2, 2, 3, 2);
	h.get(2, "k", 4, 5, 1, 1);
	report r = expect_violation(h, "stale read");
	const key_result &k = r.keys_checked.at(0);
	assert_int_equal(k.to, 5 * ms);
	// and without versions: put 2 began after put 1 ended
	expect_violation(h, "stale read", false);
}

void never_written(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.get(2, "k", 2, 3, 99, 1);
	expect_violation(h, "read of a value never written");
	// written to another key is not written to this one
	hist o;
	o.put(1, "j", 99, 0, 1, 1);
	o.get(2, "k", 2, 3, 99, 1);
	expect_violation(o, "read of a value never written");
	// a failed put is not written either, nor one that began later
	hist f;
	f.put(1, "k", 1, 0, 1, -1, "fail");
	f.get(2, "k", 2, 3, 1);
	expect_violation(f, "read of a value whose put failed");
	hist t;
	t.get(2, "k", 0, 1, 1);
	t.put(1, "k", 1, 2, 3, 1);
	expect_violation(t, "read from the future");
}

void back_in_time(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.put(1, "k", 2, 2, 10, 2);
	h.get(2, "k", 3, 4, 2, 2);
	h.get(2, "k", 5, 6, 1, 1);
	expect_violation(h, "read going back in time");
	// two processes, the same
	hist t;
	t.put(1, "k", 1, 0, 1, 1);
	t.put(1, "k", 2, 2, 10, 2);
	t.get(2, "k", 3, 4, 2, 2);
	t.get(3, "k", 5, 6, 1, 1);
	expect_violation(t, "read going back in time");
}

void lost_acked_put(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.get(2, "k", 2, 3, 1, 1);
	h.nemesis(4, "start", "kill-leader");
	h.nemesis(5, "stop", "kill-leader");
	h.get(2, "k", 6, 7, -1, -1, "ok", true, true);
	report r = expect_violation(h, "a value vanished");
	assert_int_equal(r.lost_acked, 1);
	assert_int_equal(r.faults, 1);
	assert_non_null(strstr(r.lost.at(0).c_str(), "is lost"));
	// the final read sees an older version: the newer put is lost
	hist o;
	o.put(1, "k", 1, 0, 1, 1);
	o.put(1, "k", 2, 2, 3, 2);
	o.get(2, "k", 6, 7, 1, 1, "ok", true, true);
	r = expect_violation(o, "stale read");
	assert_int_equal(r.lost_acked, 1);
	assert_non_null(strstr(r.lost.at(0).c_str(), "value 2"));
	// a del that may have come between explains it: nothing lost
	hist d;
	d.put(1, "k", 1, 0, 1, 1);
	d.del(3, "k", 2, 4, false, "info");
	d.get(2, "k", 6, 7, -1, -1, "ok", true, true);
	r = d.check();
	assert_int_equal(r.lost_acked, 0);
	assert_true(r.passed());
	// an exist's version tells as much
	hist e;
	e.put(1, "k", 1, 0, 1, 1);
	e.put(1, "k", 2, 2, 3, 4);
	e.put(2, "k", 3, 0, 10, -1, "info");
	e.exist(3, "k", 11, 12, true, 2);
	r = e.check();
	assert_int_equal(r.lost_acked, 1);
	assert_non_null(strstr(r.lost.at(0).c_str(), "value 2"));
	// a final phase that could not read a key says so
	hist x;
	x.put(1, "k", 1, 0, 1, 1);
	x.get(2, "k", 6, 7, 0, -1, "fail", true, true);
	x.get(2, "k", 8, 9, 0, -1, "info", true, true);
	x.put(3, "j", 2, 0, 1, 2);
	x.get(2, "j", 10, 11, 2, 2, "ok", true, true);
	r = x.check();
	assert_int_equal(r.unread_final, 1);
	assert_int_equal(r.lost_acked, 0);
	assert_int_equal(r.violations, 0);
	assert_false(r.passed());
	assert_non_null(strstr(r.unread.at(0).c_str(), "key \"k\": no final read succeeded"));
	assert_int_equal(r.errors.at("fail ETIMEDOUT"), 1);
	// without final marks, each key's last read is its final one
	hist u;
	u.put(1, "k", 1, 0, 1, 1);
	u.get(2, "k", 6, 7, -1);
	r = u.check();
	assert_int_equal(r.lost_acked, 1);
}

void del_seen_then_unseen(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.del(1, "k", 2, 3, true);
	h.get(2, "k", 4, 5, -1);
	h.get(2, "k", 6, 7, 1, 1);
	expect_violation(h, "a deleted value came back");
	expect_violation(h, "a deleted value came back", false);
	// a del that found nothing after an acknowledged put
	hist n;
	n.put(1, "k", 1, 0, 1, 1);
	n.del(2, "k", 2, 3, false);
	expect_violation(n, "a value vanished");
}

void versions_checked(void **)
{
	// a get says another version than its put was acknowledged with
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.get(2, "k", 2, 3, 1, 7);
	expect_violation(h, "wrong version");
	expect_linearizable(h, false);
	// versions going backwards in real time
	hist b;
	b.put(1, "k", 1, 0, 1, 5);
	b.put(1, "k", 2, 2, 3, 4);
	expect_violation(b, "versions going backwards");
	// one version for two puts of a key, and of two keys
	hist d;
	d.put(1, "k", 1, 0, 1, 5);
	d.put(2, "k", 2, 0, 1, 5);
	expect_violation(d, "one version for two puts");
	hist g;
	g.put(1, "k", 1, 0, 1, 5);
	g.put(2, "j", 2, 0, 1, 5);
	report r = g.check();
	assert_int_equal(r.dup_versions, 1);
	assert_int_equal(r.violations, 0);
	assert_false(r.passed());
	// an acknowledged put needs its version (unless versions are ignored)
	hist n;
	n.put(1, "k", 1, 0, 1, -1);
	bool threw = false;
	try {
		n.check();
	} catch (const history_error &e) {
		threw = true;
		assert_int_equal(e.line(), 2);
	}
	assert_true(threw);
	expect_linearizable(n, false);
}

void bad_checksum(void **)
{
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.get(2, "k", 2, 3, 1, 1, "ok", false);
	h.get(2, "k", 4, 5, 1, 1);
	report r = h.check();
	assert_int_equal(r.bad_checksum, 1);
	assert_int_equal(r.violations, 0);
	assert_false(r.passed());
	assert_non_null(strstr(r.bad.at(0).c_str(), "checksum"));
}

// Whole bytes (their checksum good) of the wrong object: another key's,
// or another version's than the one the get names.
void wrong_bytes(void **)
{
	// another key's bytes
	hist k;
	k.put(1, "a", 1, 0, 1, 1);
	k.put(2, "b", 2, 2, 3, 2);
	k.get(3, "a", 4, 5, 2, 2);
	report r = k.check();
	assert_int_equal(r.wrong_bytes, 1);
	assert_int_equal(r.bad_checksum, 0);
	assert_false(r.passed());
	assert_non_null(strstr(r.wrong.at(0).c_str(), "wrote to key \"b\""));
	// without versions too: the key is in the bytes' value
	assert_int_equal(k.check(false).wrong_bytes, 1);
	// another version's bytes of the same key, under the newer version
	hist v;
	v.put(1, "k", 1, 0, 1, 1);
	v.put(2, "k", 2, 2, 3, 2);
	v.get(3, "k", 4, 5, 1, 2);
	r = v.check();
	assert_int_equal(r.wrong_bytes, 1);
	assert_false(r.passed());
	assert_non_null(strstr(r.wrong.at(0).c_str(), "bytes of version 1"));
	assert_int_equal(v.check(false).wrong_bytes, 0);	// versions ignored
	// the bytes of a put of unknown outcome, under a version another put
	// was acknowledged with
	hist u;
	u.put(1, "k", 1, 0, 1, -1, "info");
	u.put(2, "k", 2, 2, 3, 2);
	u.get(3, "k", 4, 5, 1, 2);
	r = u.check();
	assert_int_equal(r.wrong_bytes, 1);
	assert_non_null(strstr(r.wrong.at(0).c_str(), "version 2 is the put of value 2"));
	// ...while its own version, unknown before, is no wrong one
	hist ok;
	ok.put(1, "k", 1, 0, 1, -1, "info");
	ok.put(2, "k", 2, 0, 1, 2);
	ok.get(3, "k", 4, 5, 1, 3);
	r = ok.check();
	assert_int_equal(r.wrong_bytes, 0);
	assert_true(r.passed());
}

void faults_counted(void **)
{
	hist h;
	h.nemesis(0, "start", "partition");
	h.nemesis(1, "start", "kill-leader");
	h.put(1, "k", 1, 0, 1, 1);
	h.nemesis(2, "stop", "partition");
	h.nemesis(3, "start", "partition");
	report r = h.check();
	assert_int_equal(r.faults, 3);
	assert_int_equal(r.faults_by_name.at("partition"), 2);
	assert_int_equal(r.faults_by_name.at("kill-leader"), 1);
	history p = parse_history(h.text);
	assert_int_equal(p.faults.at(0).stop, 2 * ms);
	assert_int_equal(p.faults.at(2).stop, never);
}

// ------------------------------------------------------------ malformed

void malformed(void **)
{
	const std::string put0 = "{\"type\":\"invoke\",\"process\":1,\"f\":\"put\",\"key\":\"k\",\"value\":1,\"time\":0}";
	const std::string ok0 = "{\"type\":\"ok\",\"process\":1,\"f\":\"put\",\"version\":1,\"time\":5}";
	const struct {
		std::string text;
		size_t line;
		const char *what;
	} cases[] = {
		{put0 + "\n{\"type\":\"ok\",", 2, "not JSON"},
		{"[1,2]", 1, "not a JSON object"},
		{put0 + "\n\n{\"process\":1,\"f\":\"put\",\"time\":5}", 3, "no \"type\""},
		{put0 + "\n{\"type\":\"done\",\"process\":1,\"f\":\"put\",\"time\":5}", 2, "not invoke, ok"},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"cas\",\"key\":\"k\",\"time\":0}", 1, "not put, get"},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"put\",\"key\":\"k\",\"time\":0}", 1, "no \"value\""},
		{"{\"type\":\"invoke\",\"process\":-1,\"f\":\"get\",\"key\":\"k\",\"time\":0}", 1, "\"process\" is not"},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"get\",\"key\":\"k\",\"time\":0.5}", 1, "\"time\" is not"},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"get\",\"key\":7,\"time\":0}", 1, "\"key\" is not"},
		{ok0, 1, "did not invoke"},
		{put0 + "\n" + put0, 2, "invokes again"},
		{put0 + "\n{\"type\":\"ok\",\"process\":1,\"f\":\"get\",\"found\":false,\"time\":5}", 2,
		 "but invoked a put"},
		{put0 + "\n{\"type\":\"ok\",\"process\":1,\"f\":\"put\",\"key\":\"j\",\"time\":5}", 2,
		 "key is not"},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"put\",\"key\":\"k\",\"value\":1,\"time\":9}\n" + ok0, 2,
		 "time goes backwards"},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"get\",\"key\":\"k\",\"time\":0}\n"
		 "{\"type\":\"ok\",\"process\":1,\"f\":\"get\",\"time\":5}", 2, "no \"found\""},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"get\",\"key\":\"k\",\"time\":0}\n"
		 "{\"type\":\"ok\",\"process\":1,\"f\":\"get\",\"found\":true,\"time\":5}", 2, "no \"value\""},
		{"{\"type\":\"invoke\",\"process\":1,\"f\":\"del\",\"key\":\"k\",\"time\":0}\n"
		 "{\"type\":\"ok\",\"process\":1,\"f\":\"del\",\"found\":1,\"time\":5}", 2, "not true or false"},
		{"{\"type\":\"nemesis\",\"f\":\"stop\",\"fault\":\"partition\",\"time\":5}", 1, "not running"},
		{"{\"type\":\"nemesis\",\"f\":\"pause\",\"fault\":\"partition\",\"time\":5}", 1, "not start or stop"},
	};
	for (const auto &c : cases) {
		bool threw = false;
		try {
			parse_history(c.text);
		} catch (const history_error &e) {
			threw = true;
			if (e.line() != c.line || !strstr(e.what(), c.what) ||
			    strncmp(e.what(), "line ", 5))
				print_message("%s\n-> %s (expected line %zu: ...%s...)\n", c.text.c_str(),
					      e.what(), c.line, c.what);
			assert_int_equal(e.line(), c.line);
			assert_non_null(strstr(e.what(), c.what));
			assert_int_equal(strncmp(e.what(), ("line " + std::to_string(c.line) + ": ").c_str(),
						 6 + std::to_string(c.line).size()), 0);
		}
		if (!threw)
			print_message("accepted: %s\n", c.text.c_str());
		assert_true(threw);
	}
	// a value put twice to one key cannot be told apart: refused
	hist h;
	h.put(1, "k", 1, 0, 1, 1);
	h.put(1, "k", 1, 2, 3, 2);
	bool threw = false;
	try {
		h.check();
	} catch (const history_error &e) {
		threw = true;
		assert_int_equal(e.line(), 3);
		assert_non_null(strstr(e.what(), "unique"));
	}
	assert_true(threw);
	// blank lines, unknown fields and an empty history are fine
	report r = dschaos::check(parse_history("\n  \n{\"type\":\"nemesis\",\"f\":\"start\",\"fault\":\"x\","
						"\"time\":1,\"by\":\"me\"}\n"));
	assert_int_equal(r.ops, 0);
	assert_int_equal(r.faults, 1);
	assert_true(r.passed());
}

// ------------------------------------------------------------ generated runs

// A run of a register store simulated in time: each operation takes effect
// at one instant inside its interval (an unknown one maybe later than its
// client gave up, or never; a failed one never), versions from one
// counter for all keys, then a final read of every key.
struct sim {
	struct ev {
		int p;
		int key;
		fn f;
		int64_t call, at, ret;	// at: takes effect; -1 never
		outcome type;
		uint64_t value = 0;
		bool found = false;
		int64_t version = -1;
		bool final = false;
	};
	std::vector<ev> evs;
	int keys;

	sim(int procs, int per_proc, int nkeys, double info_rate, uint32_t seed) : keys(nkeys)
	{
		std::mt19937_64 rng(seed);
		auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
		auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
		uint64_t value = 1;
		int64_t end = 0;
		for (int p = 0; p < procs; p++) {
			int64_t t = uni(0, 1000);
			for (int i = 0; i < per_proc; i++) {
				ev e;
				e.p = p;
				e.key = static_cast<int>(uni(0, nkeys - 1));
				int r = static_cast<int>(uni(0, 99));
				e.f = r < 40 ? fn::put : r < 80 ? fn::get : r < 90 ? fn::del : fn::exist;
				e.call = t;
				e.ret = t + uni(1, 2000);
				e.at = uni(e.call, e.ret);
				e.type = outcome::ok;
				if (coin(info_rate)) {
					e.type = outcome::info;
					e.at = coin(0.5) ? -1 : e.call + uni(0, 20000);
				} else if (coin(0.01)) {
					e.type = outcome::fail;
					e.at = -1;
				}
				if (e.f == fn::put)
					e.value = value++;
				evs.push_back(e);
				t = e.ret + uni(0, 300);
			}
			end = std::max(end, t);
		}
		for (int k = 0; k < nkeys; k++) {
			ev e;
			e.p = procs;
			e.key = k;
			e.f = fn::get;
			e.call = end + 30000 + k * 10;
			e.ret = e.call + 5;
			e.at = e.call + 2;
			e.type = outcome::ok;
			e.final = true;
			evs.push_back(e);
		}
		// the store: effects in time order
		std::vector<size_t> order;
		for (size_t i = 0; i < evs.size(); i++)
			if (evs[i].at >= 0)
				order.push_back(i);
		std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return evs[a].at < evs[b].at; });
		struct reg {
			bool present = false;
			uint64_t value = 0;
			int64_t version = 0;
		};
		std::vector<reg> st(static_cast<size_t>(nkeys));
		int64_t counter = 0;
		for (size_t i : order) {
			ev &e = evs[i];
			reg &s = st[static_cast<size_t>(e.key)];
			switch (e.f) {
			case fn::put:
				s = {true, e.value, ++counter};
				e.version = counter;
				break;
			case fn::get:
			case fn::exist:
				e.found = s.present;
				e.value = s.value;
				e.version = s.version;
				break;
			case fn::del:
				e.found = s.present;
				s.present = false;
				break;
			}
			counter += static_cast<int64_t>(i % 3 == 0);	// other keys' puts
		}
	}

	std::string jsonl() const
	{
		std::string out;
		char b[256];
		for (const ev &e : evs) {
			std::snprintf(b, sizeof(b),
				      "{\"type\":\"invoke\",\"process\":%d,\"f\":\"%s\",\"key\":\"key%d\",\"time\":%" PRId64,
				      e.p, fn_name(e.f), e.key, e.call * 1000);
			out += b;
			if (e.f == fn::put)
				out += ",\"value\":" + std::to_string(e.value);
			if (e.final)
				out += ",\"final\":true";
			out += "}\n";
			std::snprintf(b, sizeof(b), "{\"type\":\"%s\",\"process\":%d,\"f\":\"%s\",\"time\":%" PRId64,
				      outcome_name(e.type), e.p, fn_name(e.f), e.ret * 1000);
			out += b;
			if (e.type == outcome::ok) {
				if (e.f == fn::put)
					out += ",\"version\":" + std::to_string(e.version);
				else
					out += std::string(",\"found\":") + (e.found ? "true" : "false");
				if (e.found && e.f == fn::get)
					out += ",\"value\":" + std::to_string(e.value);
				if (e.found && e.f != fn::del)
					out += ",\"version\":" + std::to_string(e.version);
			} else if (e.type == outcome::info) {
				out += ",\"error\":\"ETIMEDOUT\"";
			}
			out += "}\n";
		}
		return out;
	}
};

double check_timed(const history &h, report &r, bool versions = true, bool witnesses = true)
{
	options o;
	o.versions = versions;
	o.witnesses = witnesses;
	auto t = std::chrono::steady_clock::now();
	r = dschaos::check(h, o);
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// 5 processes x 2000 operations on 4 keys, 1% of unknown outcome: judged
// linearizable; then one read made stale, found.  Times are printed, not
// asserted.
void generated_run(void **)
{
	sim s(5, 2000, 4, 0.01, 22);
	history h = parse_history(s.jsonl());
	report r;
	double t = check_timed(h, r);
	print_message("# 5 x 2000 operations on 4 keys: %zu ok, %zu info, %zu fail; checked in %.3f s "
		      "(steps per key:%s)\n", r.ok, r.info, r.fail, t,
		      [&] {
			      std::string x;
			      for (const auto &k : r.keys_checked)
				      x += " " + std::to_string(k.steps);
			      return x;
		      }().c_str());
	if (!r.passed())
		print_message("%s", words(r).c_str());
	assert_int_equal(r.ops, 10004);
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.undecided, 0);
	assert_int_equal(r.lost_acked, 0);
	t = check_timed(h, r, false);
	print_message("# the same without versions: %.3f s\n", t);
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.undecided, 0);

	// make a get in the middle read an older value than one acknowledged
	// before it began
	bool stale = false;
	for (size_t i = s.evs.size() / 2; i < s.evs.size() && !stale; i++) {
		auto &e = s.evs[i];
		if (e.f != fn::get || e.type != outcome::ok || !e.found)
			continue;
		auto read = std::find_if(s.evs.begin(), s.evs.end(), [&](const sim::ev &w) {
			return w.f == fn::put && w.key == e.key && w.value == e.value;
		});
		if (read->type != outcome::ok || read->ret >= e.call)
			continue;
		for (const auto &w : s.evs)
			if (w.f == fn::put && w.key == e.key && w.type == outcome::ok && w.version < read->version) {
				e.value = w.value;
				e.version = w.version;
				stale = true;
				break;
			}
	}
	assert_true(stale);
	h = parse_history(s.jsonl());
	t = check_timed(h, r);
	print_message("# with one stale read: %.3f s, %zu violation(s)\n", t, r.violations);
	if (r.violations != 1)
		print_message("%s", words(r).c_str());
	assert_int_equal(r.violations, 1);
	assert_int_equal(r.undecided, 0);
	t = check_timed(h, r, false);
	print_message("# the same without versions: %.3f s, %zu violation(s)\n", t, r.violations);
	assert_int_equal(r.undecided, 0);
	// the search finds it too, without the witnesses
	t = check_timed(h, r, true, false);
	print_message("# the search alone: %.3f s, %zu violation(s)\n", t, r.violations);
	assert_int_equal(r.violations, 1);
	assert_int_equal(r.undecided, 0);
}

// Many operations of unknown outcome (a crash-heavy run) on one key: the
// search must still decide, both ways.
void many_unknown(void **)
{
	sim s(5, 1500, 1, 0.08, 7);
	history h = parse_history(s.jsonl());
	report r;
	double t = check_timed(h, r);
	print_message("# 7500 operations on 1 key, %zu unknown: %.3f s, %" PRIu64 " steps\n", r.info, t,
		      r.keys_checked.at(0).steps);
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.undecided, 0);
	t = check_timed(h, r, false);
	print_message("# without versions: %.3f s, %" PRIu64 " steps\n", t, r.keys_checked.at(0).steps);
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.undecided, 0);
	// the final read finds nothing: unless a del may explain it, a
	// violation
	s.evs.back().found = false;
	h = parse_history(s.jsonl());
	t = check_timed(h, r);
	print_message("# with the final read emptied: %.3f s, %zu violation(s), %zu lost\n", t, r.violations,
		      r.lost_acked);
	assert_int_equal(r.undecided, 0);
}

// A search that runs out of steps says so, and fails the check.
void undecided(void **)
{
	sim s(3, 200, 1, 0.05, 3);
	options o;
	o.max_steps = 2;
	report r = dschaos::check(parse_history(s.jsonl()), o);
	assert_int_equal(r.undecided, 1);
	assert_int_equal(r.violations, 0);
	assert_false(r.passed());
	assert_non_null(strstr(words(r).c_str(), "gave up after 3 steps"));
	// a read of a value nobody wrote is a violation without searching
	s.evs.back().value = 999999;
	s.evs.back().found = true;
	r = dschaos::check(parse_history(s.jsonl()), o);
	assert_int_equal(r.undecided, 0);
	assert_int_equal(r.violations, 1);
}

// ------------------------------------------------------------ against brute force

// Linearizability by brute force, straight from the definition: some order
// of the operations that happened -- every acknowledged one, any subset
// of those of unknown outcome -- that keeps real time (a before b when a
// returned before b was invoked) and that a register gives the same
// answers in.  With versions, the register's puts take effect in the order
// of their versions; a put of unknown outcome has the version a get read
// it with, or none, and then fits anywhere; an exist's version names the
// put known to have it, else a put whose version is unknown.
bool brute_force(const history &h, bool versions)
{
	std::vector<const op *> ops;
	for (const op &o : h.ops)
		if (o.type == outcome::ok || (o.type == outcome::info && (o.f == fn::put || o.f == fn::del)))
			ops.push_back(&o);
	const size_t n = ops.size();
	std::vector<int64_t> version(n, -1);	// puts: known version, -1 none
	std::vector<int> reads(n, -1);		// gets, exists: the put read (-1 any)
	std::vector<bool> unknown(n, false);	// exists: a put of unknown version
	for (size_t i = 0; i < n; i++)
		if (ops[i]->f == fn::put && ops[i]->type == outcome::ok && versions)
			version[i] = ops[i]->version;
	for (size_t i = 0; i < n; i++) {
		const op &o = *ops[i];
		if (o.f != fn::get || !o.found)
			continue;
		for (size_t j = 0; j < n; j++)
			if (ops[j]->f == fn::put && ops[j]->value == o.value)
				reads[i] = static_cast<int>(j);
		if (reads[i] < 0)
			return false;	// nobody (who did not fail) wrote it
		if (versions && o.has_version) {
			int64_t &v = version[static_cast<size_t>(reads[i])];
			if (v >= 0 && v != o.version)
				return false;
			v = o.version;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const op &o = *ops[i];
		if (o.f != fn::exist || !o.found || !versions || !o.has_version)
			continue;
		unknown[i] = true;
		for (size_t j = 0; j < n; j++)
			if (ops[j]->f == fn::put && version[j] == o.version) {
				reads[i] = static_cast<int>(j);
				unknown[i] = false;
			}
	}
	std::set<std::tuple<uint32_t, int, int>> dead;
	std::function<bool(uint32_t, int, int)> go = [&](uint32_t mask, int cur, int maxv) -> bool {
		bool all = true;
		for (size_t i = 0; i < n; i++)
			if (!(mask >> i & 1) && ops[i]->type == outcome::ok)
				all = false;
		if (all)
			return true;
		if (dead.count({mask, cur, maxv}))
			return false;
		for (size_t i = 0; i < n; i++) {
			if (mask >> i & 1)
				continue;
			const op &o = *ops[i];
			bool after = false;
			for (size_t j = 0; j < n; j++)
				if (j != i && !(mask >> j & 1) && ops[j]->ret < o.call)
					after = true;
			if (after)
				continue;
			int c = cur, m = maxv;
			switch (o.f) {
			case fn::put:
				if (version[i] >= 0) {
					if (m >= 0 && version[static_cast<size_t>(m)] >= version[i])
						continue;
					m = static_cast<int>(i);
				}
				c = static_cast<int>(i);
				break;
			case fn::get:
				if (o.found ? cur != reads[i] : cur != -1)
					continue;
				break;
			case fn::exist:
				if (!o.found && cur != -1)
					continue;
				if (o.found && (cur == -1 || (reads[i] >= 0 && cur != reads[i]) ||
						(unknown[i] && version[static_cast<size_t>(cur)] >= 0)))
					continue;
				break;
			case fn::del:
				if (o.type == outcome::ok && o.found != (cur != -1))
					continue;
				c = -1;
				break;
			}
			if (go(mask | 1u << i, c, m))
				return true;
		}
		dead.insert({mask, cur, maxv});
		return false;
	};
	return go(0, -1, -1);
}

// Small histories of one key: a register run in simulated time, then, for
// half of them, one answer changed at random.  The checker and the brute
// force must agree on every one, with versions and without.
// CHAOS_FUZZ_ROUNDS, CHAOS_FUZZ_SEED, CHAOS_FUZZ_OPS (at most 12) and
// CHAOS_FUZZ_INFO (the percentage of unknown outcomes, 20) run more, other,
// longer or more uncertain ones.
void against_brute_force(void **)
{
	auto env = [](const char *name, uint64_t dflt) {
		const char *v = getenv(name);
		return v ? strtoull(v, nullptr, 0) : dflt;
	};
	const uint64_t rounds = env("CHAOS_FUZZ_ROUNDS", 6000), seed = env("CHAOS_FUZZ_SEED", 2022);
	const int64_t max_ops = std::min<int64_t>(12, static_cast<int64_t>(env("CHAOS_FUZZ_OPS", 8)));
	const int64_t info = std::min<int64_t>(90, static_cast<int64_t>(env("CHAOS_FUZZ_INFO", 20)));
	std::mt19937_64 rng(seed);
	auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
	size_t agree[2][2] = {};
	for (uint64_t round = 0; round < rounds; round++) {
		const int n = static_cast<int>(uni(2, max_ops));
		struct x {
			fn f;
			outcome type;
			int64_t call, ret, at;
			uint64_t value;
			bool found = false;
			int64_t version = -1;
		};
		std::vector<x> ops;
		uint64_t value = 1;
		for (int i = 0; i < n; i++) {
			x o;
			int r = static_cast<int>(uni(0, 9));
			o.f = r < 4 ? fn::put : r < 6 ? fn::get : r < 8 ? fn::del : fn::exist;
			o.call = uni(0, 20);
			o.ret = o.call + uni(0, 6);
			o.at = uni(o.call, o.ret);
			r = static_cast<int>(uni(0, 99));
			o.type = r < info ? outcome::info : r < info + 10 ? outcome::fail : outcome::ok;
			if (o.type == outcome::info)
				o.at = uni(0, 2) ? o.call + uni(0, 12) : -1;
			if (o.type == outcome::fail)
				o.at = -1;
			o.value = o.f == fn::put ? value++ : 0;
			ops.push_back(o);
		}
		std::vector<size_t> order;
		for (size_t i = 0; i < ops.size(); i++)
			if (ops[i].at >= 0)
				order.push_back(i);
		std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ops[a].at < ops[b].at; });
		bool present = false;
		uint64_t cur = 0;
		int64_t cur_version = 0, counter = 0;
		for (size_t i : order) {
			x &o = ops[i];
			if (o.f == fn::put) {
				counter += uni(1, 2);
				present = true;
				cur = o.value;
				cur_version = o.version = counter;
			} else {
				o.found = present;
				o.value = cur;
				o.version = cur_version;
				if (o.f == fn::del)
					present = false;
			}
		}
		if (uni(0, 1)) {
			x &o = ops[static_cast<size_t>(uni(0, n - 1))];
			o.type = outcome::ok;
			o.found = uni(0, 2) != 0;
			if (o.f != fn::put)	// a put's value is its identity
				o.value = static_cast<uint64_t>(uni(1, static_cast<int64_t>(value)));
			o.version = uni(1, 2 * n);
		}
		hist hs;
		for (int i = 0; i < n; i++) {
			const x &o = ops[static_cast<size_t>(i)];
			const char *type = outcome_name(o.type);
			switch (o.f) {
			case fn::put:
				hs.put(i, "k", o.value, o.call, o.ret, o.version, type);
				break;
			case fn::get:
				hs.get(i, "k", o.call, o.ret, o.found ? static_cast<int64_t>(o.value) : -1,
				       uni(0, 4) ? o.version : -1, type);
				break;
			case fn::del:
				hs.del(i, "k", o.call, o.ret, o.found, type);
				break;
			case fn::exist:
				if (o.type == outcome::ok) {
					hs.exist(i, "k", o.call, o.ret, o.found, uni(0, 2) ? o.version : -1);
				} else {
					hs.invoke(i, "exist", "k", o.call);
					hs.done(i, type, "exist", o.ret);
				}
				break;
			}
		}
		history h = parse_history(hs.text);
		for (int versions = 0; versions < 2; versions++) {
			const bool want = brute_force(h, versions);
			agree[versions][want]++;
			// with the witnesses first, and the search alone
			for (int witnesses = 0; witnesses < 2; witnesses++) {
				options opt;
				opt.versions = versions;
				opt.witnesses = witnesses;
				report r = dschaos::check(h, opt);
				if (want != (r.violations == 0) || r.undecided)
					print_message("round %" PRIu64 ", versions %d, witnesses %d: brute force says %s, "
						      "the checker %s:\n%s%s", round, versions, witnesses,
						      want ? "linearizable" : "not", r.violations ? "not" : "linearizable",
						      hs.text.c_str(), words(r).c_str());
				assert_int_equal(r.undecided, 0);
				assert_int_equal(want, r.violations == 0);
			}
		}
	}
	print_message("# agreed on %" PRIu64 " histories (seed %" PRIu64 "): with versions %zu linearizable, "
		      "%zu not; without %zu and %zu\n", rounds, seed, agree[1][1], agree[1][0], agree[0][1], agree[0][0]);
}

// ------------------------------------------------------------ the command

int run(const std::vector<std::string> &args, std::string &out)
{
	std::string cmd = DS_CHAOS_CHECK;
	for (const auto &a : args)
		cmd += " '" + a + "'";
	cmd += " 2>&1";
	FILE *f = popen(cmd.c_str(), "r");
	assert_non_null(f);
	out.clear();
	char b[4096];
	size_t n;
	while ((n = fread(b, 1, sizeof(b), f)) > 0)
		out.append(b, n);
	int st = pclose(f);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

std::string temp_file(const std::string &text)
{
	char path[] = "/tmp/dschaos-test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
	close(fd);
	return path;
}

void command(void **)
{
	hist good;
	good.nemesis(0, "start", "kill-leader");
	good.put(1, "k", 1, 0, 1, 1);
	good.get(2, "k", 2, 3, 1, 1);
	hist bad;
	bad.put(1, "k", 1, 0, 1, 1);
	bad.put(1, "k", 2, 2, 3, 2);
	bad.get(2, "k", 4, 5, 1, 1, "ok", true, true);
	// a get of key "k" that returned the bytes put to key "j"
	hist other;
	other.put(1, "k", 1, 0, 1, 1);
	other.put(1, "j", 2, 2, 3, 2);
	other.get(2, "k", 4, 5, 2, 2);
	std::string g = temp_file(good.text), b = temp_file(bad.text),
		    m = temp_file(good.text + "{\"type\":\"ok\"}\n"), o = temp_file(other.text);
	std::string out;

	assert_int_equal(run({g}, out), 0);
	assert_non_null(strstr(out.c_str(), "chaos.ops 2\n"));
	assert_non_null(strstr(out.c_str(), "chaos.faults 1\n"));
	assert_non_null(strstr(out.c_str(), "chaos.violations 0\n"));
	assert_int_equal(run({"--bench", g}, out), 0);
	assert_non_null(strstr(out.c_str(), "bench: chaos.ops 2 ops\n"));
	assert_non_null(strstr(out.c_str(), "bench: chaos.lost_acked 0 puts\n"));
	assert_int_equal(run({"-v", g}, out), 0);
	assert_non_null(strstr(out.c_str(), "key \"k\": linearizable"));

	assert_int_equal(run({b}, out), 1);
	assert_non_null(strstr(out.c_str(), "key \"k\": NOT linearizable"));
	assert_non_null(strstr(out.c_str(), "stale read"));
	assert_non_null(strstr(out.c_str(), "lost acknowledged put"));
	assert_non_null(strstr(out.c_str(), "chaos.violations 1\n"));
	assert_non_null(strstr(out.c_str(), "chaos.lost_acked 1\n"));
	assert_int_equal(run({"-q", "--no-versions", b}, out), 1);
	assert_null(strstr(out.c_str(), "stale read"));
	assert_non_null(strstr(out.c_str(), "chaos.violations 1\n"));

	assert_non_null(strstr(out.c_str(), "chaos.wrong_bytes 0\n"));

	assert_int_equal(run({o}, out), 1);
	assert_non_null(strstr(out.c_str(), "wrong bytes: key \"k\""));
	assert_non_null(strstr(out.c_str(), "chaos.wrong_bytes 1\n"));

	assert_int_equal(run({m}, out), 2);
	assert_non_null(strstr(out.c_str(), (m + ": line 6: no \"time\"").c_str()));
	assert_int_equal(run({"/nonexistent/history"}, out), 2);
	assert_int_equal(run({}, out), 2);
	assert_non_null(strstr(out.c_str(), "usage"));
	unlink(g.c_str());
	unlink(b.c_str());
	unlink(m.c_str());
	unlink(o.c_str());
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sequential),
		cmocka_unit_test(concurrent_puts),
		cmocka_unit_test(info_ops),
		cmocka_unit_test(open_at_end),
		cmocka_unit_test(stale_read),
		cmocka_unit_test(never_written),
		cmocka_unit_test(back_in_time),
		cmocka_unit_test(lost_acked_put),
		cmocka_unit_test(del_seen_then_unseen),
		cmocka_unit_test(versions_checked),
		cmocka_unit_test(bad_checksum),
		cmocka_unit_test(wrong_bytes),
		cmocka_unit_test(faults_counted),
		cmocka_unit_test(malformed),
		cmocka_unit_test(generated_run),
		cmocka_unit_test(many_unknown),
		cmocka_unit_test(undecided),
		cmocka_unit_test(against_brute_force),
		cmocka_unit_test(command),
	};
	return cmocka_run_group_tests_name("chaos_check", tests, NULL, NULL);
}
