// SPDX-License-Identifier: BSD-2-Clause
// The master's durable state: the file metadata log (round trip, reopen,
// torn tails versus damage, compaction and its crash window, failing
// directory fsyncs), the directory slow tier (chunk CRCs, two masters
// racing, stale tmp files), and against a real etcd (started here on loopback, free
// ports, a temporary data directory) the client, the etcd metadata log,
// fencing by the leader key and the election's keepalive, the group's one
// slow tier.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <algorithm>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "etcd.hpp"
#include "persist.hpp"
#include "slowtier.hpp"

extern "C" {
#include <cmocka.h>
}

using namespace dsmem::store;
namespace fs = std::filesystem;

namespace {

std::string make_tmpdir()
{
	char tmpl[] = "/tmp/dsstore-test.XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return d;
}

std::string record(int i)
{
	// binary bytes, NULs included, of varying length
	std::string r(static_cast<size_t>(1 + (i * 37) % 300), '\0');
	for (size_t k = 0; k < r.size(); k++)
		r[k] = static_cast<char>(i * 31 + k * 7);
	return r;
}

uint64_t file_size(const std::string &p)
{
	struct stat st;
	assert_int_equal(stat(p.c_str(), &st), 0);
	return static_cast<uint64_t>(st.st_size);
}

void check_load(MetaLog *log, const std::string &want_snap, const std::vector<std::string> &want)
{
	std::string snap, err;
	std::vector<std::string> recs;
	int ret = log->load(&snap, &recs, &err);
	if (ret)
		print_error("load: %s\n", err.c_str());
	assert_int_equal(ret, 0);
	assert_true(snap == want_snap);
	assert_int_equal(recs.size(), want.size());
	for (size_t i = 0; i < want.size(); i++)
		assert_true(recs[i] == want[i]);
	assert_int_equal(log->records_since_snapshot(), want.size());
}

void crc32c_known(void **)
{
	// RFC 3720's check value, and a split computation
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	std::string zeros(32, '\0');
	assert_int_equal(crc32c(0, zeros.data(), zeros.size()), 0x8a9136aau);
}

void file_log_round_trip(void **)
{
	std::string dir = make_tmpdir() + "/meta", err;
	std::vector<std::string> want;
	{
		auto log = open_file_log(dir, &err);	// creates the directory
		assert_true(log != nullptr);
		assert_string_equal(log->describe().c_str(), ("file:" + dir).c_str());
		check_load(log.get(), "", {});
		for (int i = 0; i < 100; i++) {
			want.push_back(record(i));
			assert_int_equal(log->append(want.back(), &err), 0);
		}
		check_load(log.get(), "", want);
		assert_true(log->bytes() > 100);
		assert_int_equal(log->append("", &err), -EINVAL);
		// one master per directory
		std::string err2;
		assert_true(open_file_log(dir, &err2) == nullptr);
		assert_true(err2.find("in use") != std::string::npos);
	}
	auto log = open_file_log(dir, &err);	// reopened: all there, appends go on
	assert_true(log != nullptr);
	check_load(log.get(), "", want);
	want.push_back("after reopen");
	assert_int_equal(log->append(want.back(), &err), 0);
	check_load(log.get(), "", want);
	log.reset();
	fs::remove_all(fs::path(dir).parent_path());
}

void file_log_torn_tail(void **)
{
	std::string dir = make_tmpdir(), err, logf = dir + "/log";
	std::vector<std::string> want;
	uint64_t before_last = 0;
	{
		auto log = open_file_log(dir, &err);
		for (int i = 0; i < 10; i++) {
			if (i == 9)
				before_last = file_size(logf);
			want.push_back(record(i) + "xxxxxxxx");
			assert_int_equal(log->append(want.back(), &err), 0);
		}
	}
	// a crash mid-append: the last record cut in half
	assert_int_equal(truncate(logf.c_str(), static_cast<off_t>(file_size(logf) - 5)), 0);
	want.pop_back();
	{
		auto log = open_file_log(dir, &err);
		assert_true(log != nullptr);
		check_load(log.get(), "", want);
		assert_int_equal(file_size(logf), before_last);	// the tail is cut off the file
		want.push_back("replaces the torn one");
		assert_int_equal(log->append(want.back(), &err), 0);
		check_load(log.get(), "", want);
	}
	// a byte flipped in the last record's data: its CRC fails, it goes
	{
		int fd = open(logf.c_str(), O_RDWR);
		char c;
		off_t at = static_cast<off_t>(file_size(logf) - 3);
		assert_int_equal(pread(fd, &c, 1, at), 1);
		c ^= 0x40;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
		close(fd);
	}
	want.pop_back();
	{
		auto log = open_file_log(dir, &err);
		check_load(log.get(), "", want);
	}
	// garbage after the last record (a length past the end of the file)
	{
		int fd = open(logf.c_str(), O_WRONLY | O_APPEND);
		const char junk[] = "\xff\xff\x00\x00garbage";
		assert_int_equal(write(fd, junk, sizeof(junk) - 1), static_cast<ssize_t>(sizeof(junk) - 1));
		close(fd);
	}
	{
		auto log = open_file_log(dir, &err);
		check_load(log.get(), "", want);
	}
	// zeros where the file grew without its data (a crash on some file
	// systems): torn too
	uint64_t good = file_size(logf);
	{
		int fd = open(logf.c_str(), O_WRONLY | O_APPEND);
		std::string zeros(4096, '\0');
		assert_int_equal(write(fd, zeros.data(), zeros.size()), static_cast<ssize_t>(zeros.size()));
		close(fd);
		auto log = open_file_log(dir, &err);
		assert_true(log != nullptr);
		check_load(log.get(), "", want);
		assert_int_equal(file_size(logf), good);
	}
	// a bad record with more records after it is damage, not a torn
	// tail: refused, and nothing is cut off the file
	{
		int fd = open(logf.c_str(), O_RDWR);
		char c;
		off_t at = 16 + 8 + 2;	// in the first record's data
		assert_int_equal(pread(fd, &c, 1, at), 1);
		c ^= 0x01;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
		close(fd);
		std::string e;
		assert_true(open_file_log(dir, &e) == nullptr);
		assert_true(e.find("damaged") != std::string::npos);
		assert_true(e.find("CRC") != std::string::npos);
		assert_int_equal(file_size(logf), good);
		// back as it was: all there again
		fd = open(logf.c_str(), O_RDWR);
		c ^= 0x01;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
		close(fd);
		auto log = open_file_log(dir, &err);
		assert_true(log != nullptr);
		check_load(log.get(), "", want);
	}
	// a bad length in the middle (not zeros up to the end): damage too
	{
		int fd = open(logf.c_str(), O_RDWR);
		const char bad[4] = { '\0', '\0', '\0', '\x7f' };
		char orig[4];
		assert_int_equal(pread(fd, orig, 4, 16), 4);
		assert_int_equal(pwrite(fd, bad, 4, 16), 4);
		std::string e;
		assert_true(open_file_log(dir, &e) == nullptr);
		assert_true(e.find("length") != std::string::npos);
		assert_int_equal(file_size(logf), good);
		assert_int_equal(pwrite(fd, orig, 4, 16), 4);
		close(fd);
	}
	fs::remove_all(dir);
}

// ---- directory fsync failures ----

int fsync_calls = 0;
int fail_dir_fsync(const char *)
{
	fsync_calls++;
	return -EIO;
}

void file_log_dir_fsync_failure(void **)
{
	std::string dir = make_tmpdir(), err, logf = dir + "/log";
	std::vector<std::string> recs;
	{
		auto log = open_file_log(dir, &err);
		assert_true(log != nullptr);
		for (int i = 0; i < 5; i++) {
			recs.push_back(record(i));
			assert_int_equal(log->append(recs.back(), &err), 0);
		}
		uint64_t log_size = file_size(logf);
		// the snapshot's rename is not known durable: compact fails,
		// and the log (all records, its old stamp) stays as it was
		set_dir_fsync_hook_for_test(fail_dir_fsync);
		assert_int_equal(log->compact("snap A", &err), -EIO);
		assert_int_equal(file_size(logf), log_size);
		// appends retry the directory fsync first and fail while it fails,
		// the log untouched
		fsync_calls = 0;
		assert_int_equal(log->append("refused", &err), -EIO);
		assert_true(fsync_calls > 0);
		assert_true(err.find("durable") != std::string::npos);
		assert_int_equal(file_size(logf), log_size);
		// a second master process... no: a reopen meanwhile fails too
		log.reset();
		assert_true(open_file_log(dir, &err) == nullptr);
		assert_int_equal(file_size(logf), log_size);
		set_dir_fsync_hook_for_test(nullptr);
	}
	{
		// fsync works again: the reopen makes the snapshot durable,
		// then drops the covered log
		auto log = open_file_log(dir, &err);
		assert_true(log != nullptr);
		check_load(log.get(), "snap A", {});
		assert_int_equal(log->append("after", &err), 0);
		check_load(log.get(), "snap A", { "after" });
		// the same within one open log: the next append empties it
		set_dir_fsync_hook_for_test(fail_dir_fsync);
		assert_int_equal(log->compact("snap B", &err), -EIO);
		set_dir_fsync_hook_for_test(nullptr);
		assert_int_equal(log->append("after B", &err), 0);
		check_load(log.get(), "snap B", { "after B" });
	}
	{
		auto log = open_file_log(dir, &err);
		check_load(log.get(), "snap B", { "after B" });
	}
	fs::remove_all(dir);
}

void file_log_compaction(void **)
{
	std::string dir = make_tmpdir(), err, logf = dir + "/log";
	std::string snap1(200000, 's');
	std::vector<std::string> after;

	for (size_t i = 0; i < snap1.size(); i += 97)
		snap1[i] = static_cast<char>(i);
	{
		auto log = open_file_log(dir, &err);
		for (int i = 0; i < 20; i++)
			assert_int_equal(log->append(record(i), &err), 0);
		assert_int_equal(log->compact(snap1, &err), 0);
		check_load(log.get(), snap1, {});
		assert_int_equal(file_size(logf), 16);	// just its header
		for (int i = 0; i < 5; i++) {
			after.push_back(record(100 + i));
			assert_int_equal(log->append(after.back(), &err), 0);
		}
		check_load(log.get(), snap1, after);
		assert_true(log->bytes() >= snap1.size());
	}
	{
		auto log = open_file_log(dir, &err);
		check_load(log.get(), snap1, after);
	}
	// a crash after the new snapshot's rename but before the log was
	// emptied: the old log's records are in the snapshot and must not
	// be replayed twice
	fs::copy_file(logf, dir + "/log.old");
	{
		auto log = open_file_log(dir, &err);
		assert_int_equal(log->compact("snapshot two", &err), 0);
	}
	fs::rename(dir + "/log.old", logf);
	{
		auto log = open_file_log(dir, &err);
		check_load(log.get(), "snapshot two", {});
		assert_int_equal(log->append("three", &err), 0);
		check_load(log.get(), "snapshot two", { "three" });
		// an empty snapshot is a snapshot too
		assert_int_equal(log->compact("", &err), 0);
		check_load(log.get(), "", {});
	}
	// a damaged snapshot is an error, not an empty state
	{
		auto log = open_file_log(dir, &err);
		assert_int_equal(log->compact("precious", &err), 0);
	}
	{
		int fd = open((dir + "/snapshot").c_str(), O_RDWR);
		off_t end = static_cast<off_t>(file_size(dir + "/snapshot") - 1);
		assert_int_equal(pwrite(fd, "X", 1, end), 1);
		close(fd);
		std::string e;
		assert_true(open_file_log(dir, &e) == nullptr);
		assert_true(e.find("CRC") != std::string::npos);
	}
	fs::remove_all(dir);
}

// ---- slow tier ----

void slow_tier_basics(void **)
{
	std::string dir = make_tmpdir(), err;
	std::string data, big(3 << 20, 'b');
	uint64_t ver = 0, size = 0;

	assert_true(open_slow_tier("s3:bucket", &err) == nullptr);
	assert_true(open_slow_tier("dir:", &err) == nullptr);
	auto t = open_slow_tier("dir:" + dir + "/tier", &err);	// made if missing
	assert_true(t != nullptr);
	assert_string_equal(t->describe().c_str(), ("dir:" + dir + "/tier").c_str());

	assert_int_equal(t->version("k", &ver, &size), -ENOENT);
	assert_int_equal(t->get("k", 0, 10, &data, &ver, &size), -ENOENT);
	assert_int_equal(t->del("k"), -ENOENT);
	assert_int_equal(t->put("", 1, "x", 1), -EINVAL);

	assert_int_equal(t->put("k", 5, "hello", 5), 0);
	assert_int_equal(t->version("k", &ver, &size), 0);
	assert_int_equal(ver, 5);
	assert_int_equal(size, 5);
	assert_int_equal(t->get("k", 0, 100, &data, &ver, &size), 0);
	assert_string_equal(data.c_str(), "hello");
	assert_int_equal(t->get("k", 1, 3, &data, nullptr, nullptr), 0);
	assert_string_equal(data.c_str(), "ell");
	assert_int_equal(t->get("k", 5, 3, &data, nullptr, nullptr), 0);
	assert_true(data.empty());
	assert_int_equal(t->get("k", 6, 1, &data, nullptr, nullptr), -ERANGE);

	// never backwards: older and equal versions are no-ops
	assert_int_equal(t->put("k", 4, "old", 3), 0);
	assert_int_equal(t->put("k", 5, "same", 4), 0);
	assert_int_equal(t->get("k", 0, 100, &data, &ver, &size), 0);
	assert_string_equal(data.c_str(), "hello");
	assert_int_equal(ver, 5);
	for (size_t i = 0; i < big.size(); i += 4096)
		big[i] = static_cast<char>(i >> 12);
	assert_int_equal(t->put("k", 9, big.data(), big.size()), 0);
	assert_int_equal(t->get("k", 0, UINT64_MAX, &data, &ver, &size), 0);
	assert_true(data == big);
	assert_int_equal(ver, 9);
	assert_int_equal(size, big.size());
	// an empty object is stored too
	assert_int_equal(t->put("empty", 1, nullptr, 0), 0);
	assert_int_equal(t->get("empty", 0, 10, &data, &ver, &size), 0);
	assert_int_equal(size, 0);

	assert_int_equal(t->del("k"), 0);
	assert_int_equal(t->version("k", &ver, &size), -ENOENT);
	assert_int_equal(t->put("k", 2, "again", 5), 0);	// after a delete, anything goes
	assert_int_equal(t->version("k", &ver, nullptr), 0);
	assert_int_equal(ver, 2);

	// a damaged copy reads as -EIO, not as data
	t.reset();
	t = open_slow_tier("dir:" + dir + "/tier", &err);
	std::string victim;
	for (auto &e : fs::recursive_directory_iterator(dir + "/tier"))
		if (e.is_regular_file() && e.path().filename() == "k")
			victim = e.path();
	assert_false(victim.empty());
	{
		int fd = open(victim.c_str(), O_RDWR);
		off_t end = static_cast<off_t>(file_size(victim) - 1);
		assert_int_equal(pwrite(fd, "#", 1, end), 1);
		close(fd);
	}
	assert_int_equal(t->get("k", 0, 100, &data, &ver, &size), -EIO);
	assert_int_equal(t->put("k", 3, "fresh", 5), 0);	// replaces the damaged copy
	assert_int_equal(t->get("k", 0, 100, &data, &ver, &size), 0);
	assert_string_equal(data.c_str(), "fresh");
	fs::remove_all(dir);
}

void slow_tier_odd_keys(void **)
{
	std::string dir = make_tmpdir(), err, data;
	auto t = open_slow_tier("dir:" + dir, &err);
	std::vector<std::string> keys = { "a/b/c", "/", "..", ".", ".hidden", "%41", "A", "a",
		"sp ace", "uni\xc3\xa9", std::string(1024, '/'), std::string(1024, 'x'),
		std::string(1023, 'x') + "y" };
	std::string bin;
	for (int c = 1; c < 256; c++)
		bin += static_cast<char>(c);
	keys.push_back(bin);
	keys.push_back(bin.substr(0, 200) + "z");
	for (size_t i = 0; i < keys.size(); i++) {
		std::string v = "value of " + std::to_string(i);
		assert_int_equal(t->put(keys[i], i + 1, v.data(), v.size()), 0);
	}
	// each key reads back its own object: no two share a file
	for (size_t i = 0; i < keys.size(); i++) {
		uint64_t ver = 0;
		assert_int_equal(t->get(keys[i], 0, 100, &data, &ver, nullptr), 0);
		assert_string_equal(data.c_str(), ("value of " + std::to_string(i)).c_str());
		assert_int_equal(ver, i + 1);
	}
	// files stay in the fan-out subdirectories, names within NAME_MAX, no tmp left
	size_t files = 0;
	for (auto &e : fs::recursive_directory_iterator(dir)) {
		if (!e.is_regular_file() || e.path().filename() == ".lock" ||
		    e.path().filename() == ".dsmem-tier-id")
			continue;
		files++;
		assert_true(e.path().filename().string().size() <= 255);
		assert_true(e.path().filename().string()[0] != '.');
		assert_int_equal(e.path().parent_path().filename().string().size(), 2);
	}
	assert_int_equal(files, keys.size());
	for (const std::string &k : keys)
		assert_int_equal(t->del(k), 0);
	fs::remove_all(dir);
}

std::string find_file(const std::string &root, const std::string &name)
{
	for (auto &e : fs::recursive_directory_iterator(root))
		if (e.is_regular_file() && e.path().filename() == name)
			return e.path();
	return "";
}

// Every read checks the CRCs of the chunks (1 MiB) it touches.
void slow_tier_chunk_crc(void **)
{
	std::string dir = make_tmpdir(), err, data;
	auto t = open_slow_tier("dir:" + dir, &err);
	const uint64_t mib = 1 << 20;
	std::string big(3 * mib + 777, '\0');
	for (size_t i = 0; i < big.size(); i++)
		big[i] = static_cast<char>(i * 2654435761u >> 11);
	assert_int_equal(t->put("obj", 1, big.data(), big.size()), 0);
	// partial reads, aligned and not, across chunk borders
	struct { uint64_t off, len; } reads[] = { { 0, mib }, { mib, mib }, { 3 * mib, mib },
		{ 5, 10 }, { mib - 3, 6 }, { 2 * mib + 1, mib + 776 }, { big.size(), 1 } };
	for (auto &r : reads) {
		uint64_t ver = 0, size = 0;
		assert_int_equal(t->get("obj", r.off, r.len, &data, &ver, &size), 0);
		assert_true(data == big.substr(r.off, r.len));
		assert_int_equal(ver, 1);
		assert_int_equal(size, big.size());
	}
	// one byte of the third chunk damaged: reads touching it fail, others not
	std::string victim = find_file(dir, "obj");
	uint64_t data_at = file_size(victim) - big.size();
	{
		int fd = open(victim.c_str(), O_RDWR);
		char c = static_cast<char>(big[2 * mib + 100] ^ 0x10);
		assert_int_equal(pwrite(fd, &c, 1, static_cast<off_t>(data_at + 2 * mib + 100)), 1);
		close(fd);
	}
	assert_int_equal(t->get("obj", 0, mib, &data, nullptr, nullptr), 0);
	assert_int_equal(t->get("obj", 3 * mib, mib, &data, nullptr, nullptr), 0);
	assert_int_equal(t->get("obj", 2 * mib, mib, &data, nullptr, nullptr), -EIO);
	assert_int_equal(t->get("obj", 2 * mib + 200, 1, &data, nullptr, nullptr), -EIO);
	assert_int_equal(t->get("obj", mib + 5, mib, &data, nullptr, nullptr), -EIO);
	assert_int_equal(t->get("obj", 0, UINT64_MAX, &data, nullptr, nullptr), -EIO);
	// the last, short chunk is checked too
	{
		int fd = open(victim.c_str(), O_RDWR);
		assert_int_equal(pwrite(fd, "#", 1, static_cast<off_t>(file_size(victim) - 1)), 1);
		close(fd);
	}
	assert_int_equal(t->get("obj", 3 * mib + 776, 1, &data, nullptr, nullptr), -EIO);
	fs::remove_all(dir);
}

// Two tiers on one directory (an old leader and a new one) racing
// versions of the same keys, in threads and in another process: the
// stored version never goes backwards, and its data is its own.
void slow_tier_two_masters(void **)
{
	std::string dir = make_tmpdir(), err;
	const int kVersions = 300, kKeys = 2;
	auto payload = [](uint64_t v) {
		std::string d(8192 + (v * 131) % 8192, static_cast<char>('a' + v % 26));
		memcpy(d.data(), &v, sizeof(v));
		return d;
	};
	// writer w (of 3) puts the versions v with v % 3 == w, in an order that
	// keeps it both ahead of and behind the others
	auto writer = [&](int w) {
		std::string e;
		auto t = open_slow_tier("dir:" + dir, &e);
		if (!t)
			return false;
		for (int i = 0; i < kVersions; i++) {
			uint64_t v = static_cast<uint64_t>(((i % 2) ? i : kVersions - i) * 3 + w + 1);
			std::string d = payload(v);
			for (int k = 0; k < kKeys; k++)
				if (t->put("race" + std::to_string(k), v, d.data(), d.size()))
					return false;
		}
		return true;
	};
	pid_t child = fork();
	if (child == 0)
		_exit(writer(2) ? 0 : 1);
	bool ok0 = false, ok1 = false, mono = true, consistent = true;
	std::atomic<bool> done{ false };
	std::thread t0([&] { ok0 = writer(0); }), t1([&] { ok1 = writer(1); });
	std::thread watch([&] {
		std::string e;
		auto t = open_slow_tier("dir:" + dir, &e);
		uint64_t last[kKeys] = {};
		while (!done) {
			for (int k = 0; k < kKeys; k++) {
				std::string d;
				uint64_t v = 0;
				int r = t->get("race" + std::to_string(k), 0, UINT64_MAX, &d, &v, nullptr);
				if (r == -ENOENT)
					continue;
				if (r || d != payload(v))
					consistent = false;
				if (v < last[k])
					mono = false;
				last[k] = v;
			}
		}
	});
	t0.join();
	t1.join();
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	done = true;
	watch.join();
	assert_true(ok0 && ok1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(mono);
	assert_true(consistent);
	auto t = open_slow_tier("dir:" + dir, &err);
	uint64_t max = static_cast<uint64_t>(kVersions * 3 + 3);
	for (int k = 0; k < kKeys; k++) {
		uint64_t v = 0;
		std::string d;
		assert_int_equal(t->get("race" + std::to_string(k), 0, UINT64_MAX, &d, &v, nullptr), 0);
		assert_int_equal(v, max);
		assert_true(d == payload(max));
	}
	fs::remove_all(dir);
}

// Tmp files a crash left behind go when the tier is opened; live ones stay.
void slow_tier_stale_tmp(void **)
{
	std::string dir = make_tmpdir(), err;
	{
		auto t = open_slow_tier("dir:" + dir, &err);
		assert_int_equal(t->put("keep", 1, "data", 4), 0);
	}
	std::string sub = fs::path(find_file(dir, "keep")).parent_path();
	// this host's tag, as the tier makes it: fnv1a of the host name
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = host; *p; p++)
		h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
	char tag[16];
	snprintf(tag, sizeof(tag), "%08x", static_cast<unsigned>(h & 0xffffffffu));
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, nullptr, 0);
	auto touch = [&](const std::string &name) {
		std::ofstream(sub + "/" + name) << "partial";
		return sub + "/" + name;
	};
	std::string gone1 = touch(".keep.tmp." + std::string(tag) + "." + std::to_string(dead) + ".3");
	std::string live = touch(".keep.tmp." + std::string(tag) + "." + std::to_string(getpid()) + ".4");
	std::string other = touch(".keep.tmp.00000000." + std::to_string(dead) + ".5");	// another host's
	std::string old = touch(".keep.tmp.00000000.1.6");
	std::string legacy = touch(".keep.tmp.12345.7");
	struct timespec ts[2] = { { time(nullptr) - 2 * 3600, 0 }, { time(nullptr) - 2 * 3600, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, old.c_str(), ts, 0), 0);
	assert_int_equal(utimensat(AT_FDCWD, legacy.c_str(), ts, 0), 0);
	{
		auto t = open_slow_tier("dir:" + dir, &err);
		assert_true(t != nullptr);
		assert_false(fs::exists(gone1));
		assert_true(fs::exists(live));
		assert_true(fs::exists(other));	// young, and not ours to judge
		assert_false(fs::exists(old));
		assert_false(fs::exists(legacy));
		assert_true(fs::exists(sub + "/.lock"));
		std::string d;
		assert_int_equal(t->get("keep", 0, 10, &d, nullptr, nullptr), 0);
		assert_string_equal(d.c_str(), "data");
	}
	fs::remove_all(dir);
}

// Two long keys whose escaped names are cut to the same name: the same
// first 183 bytes and the same 64-bit FNV-1a hash.  The pair was found
// offline with Pollard's rho over keys of 190 'a's and ten bytes that
// carry 7 bits of x each (0x80 | bits): f(x) = the hash of such a key, a
// collision of f is one of the cut names.  Neither key may ever overwrite,
// read or delete the other's copy.
std::string colliding_key(uint64_t x)
{
	std::string k(190, 'a');
	for (int i = 0; i < 10; i++)
		k += static_cast<char>(0x80 | ((x >> (7 * i)) & 0x7f));
	return k;
}

uint64_t fnv1a(const std::string &s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (unsigned char c : s)
		h = (h ^ c) * 0x100000001b3ull;
	return h;
}

void slow_tier_colliding_keys(void **)
{
	std::string dir = make_tmpdir(), err, data;
	const std::string k1 = colliding_key(0xc8dc14674207c78bull);
	const std::string k2 = colliding_key(0x3ddf2ffa5535f7f7ull);
	uint64_t ver = 0;

	assert_true(k1 != k2);
	assert_true(fnv1a(k1) == fnv1a(k2));	// the precondition: one cut name
	auto t = open_slow_tier("dir:" + dir, &err);
	assert_true(t != nullptr);
	auto files = [&] {
		size_t n = 0;
		for (auto &e : fs::recursive_directory_iterator(dir))
			n += e.is_regular_file() && e.path().filename().string()[0] != '.';
		return n;
	};
	auto reads = [&](const std::string &k, const char *want, uint64_t wver) {
		uint64_t v = 0;
		assert_int_equal(t->get(k, 0, 100, &data, &v, nullptr), 0);
		assert_string_equal(data.c_str(), want);
		assert_int_equal(v, wver);
		assert_int_equal(t->version(k, &v, nullptr), 0);
		assert_int_equal(v, wver);
	};

	assert_int_equal(t->put(k1, 1, "one", 3), 0);
	assert_int_equal(t->version(k2, &ver, nullptr), -ENOENT);	// k1's file is not k2's
	assert_int_equal(t->put(k2, 2, "two", 3), 0);
	assert_int_equal(files(), 2);
	reads(k1, "one", 1);
	reads(k2, "two", 2);
	// new versions replace each key's own copy, never the other's
	assert_int_equal(t->put(k1, 3, "three", 5), 0);
	assert_int_equal(t->put(k2, 4, "four", 4), 0);
	assert_int_equal(t->put(k2, 1, "old", 3), 0);	// never backwards, still
	reads(k1, "three", 3);
	reads(k2, "four", 4);
	assert_int_equal(files(), 2);
	// another process's tier on the same directory sees the same
	{
		auto t2 = open_slow_tier("dir:" + dir, &err);
		assert_int_equal(t2->get(k2, 0, 100, &data, &ver, nullptr), 0);
		assert_string_equal(data.c_str(), "four");
	}
	// deleting one keeps the other, whichever goes first
	assert_int_equal(t->del(k1), 0);
	assert_int_equal(t->get(k1, 0, 100, &data, &ver, nullptr), -ENOENT);
	assert_int_equal(t->del(k1), -ENOENT);
	reads(k2, "four", 4);
	assert_int_equal(t->put(k1, 5, "five", 4), 0);
	reads(k1, "five", 5);
	reads(k2, "four", 4);
	assert_int_equal(t->del(k2), 0);
	assert_int_equal(t->version(k2, &ver, nullptr), -ENOENT);
	reads(k1, "five", 5);
	assert_int_equal(t->put(k2, 6, "six", 3), 0);
	reads(k2, "six", 6);
	assert_int_equal(files(), 2);
	// a damaged file of one is not replaced by a put of the other (it
	// could be anyone's); its own key reads -EIO, not the other's bytes
	std::string victim;
	for (auto &e : fs::recursive_directory_iterator(dir)) {
		if (!e.is_regular_file() || e.path().filename().string()[0] == '.')
			continue;
		std::ifstream in(e.path(), std::ios::binary);
		std::string d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		if (d.find("five") != std::string::npos)
			victim = e.path();
	}
	assert_false(victim.empty());
	{
		int fd = open(victim.c_str(), O_RDWR);
		assert_int_equal(pwrite(fd, "XXXX", 4, 0), 4);	// the magic
		close(fd);
	}
	assert_int_equal(t->get(k1, 0, 100, &data, &ver, nullptr), -EIO);
	assert_int_equal(t->put(k2, 7, "seven", 5), 0);
	reads(k2, "seven", 7);
	assert_int_equal(t->put(k1, 8, "eight", 5), 0);
	reads(k1, "eight", 8);
	reads(k2, "seven", 7);
	assert_int_equal(t->del(k2), 0);
	assert_int_equal(t->del(k1), 0);
	// only the damaged file is left, and nobody can say whose it was
	assert_int_equal(t->version(k1, &ver, nullptr), -EIO);
	assert_int_equal(files(), 1);
	fs::remove_all(dir);
}

// A tree's identity: made by the first tier that opens it, the same for
// every tier opened on it (by any path, in any process), another for
// another tree; a damaged one does not open.
void slow_tier_identity(void **)
{
	std::string a = make_tmpdir(), b = make_tmpdir(), err;
	auto t1 = open_slow_tier("dir:" + a, &err);
	assert_true(t1 != nullptr);
	assert_int_equal(t1->id().size(), 32);
	auto t2 = open_slow_tier("dir:" + a + "/./", &err);
	assert_string_equal(t2->id().c_str(), t1->id().c_str());
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t child = fork();
	if (child == 0) {
		std::string e;
		auto t = open_slow_tier("dir:" + a, &e);
		std::string id = t ? t->id() : "";
		_exit(write(fd[1], id.data(), id.size()) == static_cast<ssize_t>(id.size()) ? 0 : 1);
	}
	close(fd[1]);
	char buf[64] = "";
	assert_int_equal(read(fd[0], buf, sizeof(buf) - 1), 32);
	close(fd[0]);
	waitpid(child, nullptr, 0);
	assert_string_equal(buf, t1->id().c_str());
	auto t3 = open_slow_tier("dir:" + b, &err);
	assert_true(t3 != nullptr);
	assert_string_not_equal(t3->id().c_str(), t1->id().c_str());
	// many opening an empty tree at once agree on one id
	std::string c = make_tmpdir();
	std::vector<std::string> ids(8);
	std::vector<std::thread> th;
	for (size_t i = 0; i < ids.size(); i++)
		th.emplace_back([&, i] {
			std::string e;
			auto t = open_slow_tier("dir:" + c, &e);
			ids[i] = t ? t->id() : "";
		});
	for (auto &x : th)
		x.join();
	for (const auto &id : ids)
		assert_string_equal(id.c_str(), ids[0].c_str());
	assert_int_equal(ids[0].size(), 32);
	// damaged: refused, with the file named
	std::ofstream(b + "/.dsmem-tier-id") << "dsmem-slow-tier nothex\n";
	assert_true(open_slow_tier("dir:" + b, &err) == nullptr);
	assert_true(err.find(".dsmem-tier-id") != std::string::npos);
	fs::remove_all(a);
	fs::remove_all(b);
	fs::remove_all(c);
}

// A full disk: a 256 KiB tmpfs (root only; skipped elsewhere).
void slow_tier_enospc(void **)
{
	std::string dir = make_tmpdir(), err, data;

	if (geteuid() != 0 || mount("dsstore-test", dir.c_str(), "tmpfs", 0, "size=256k")) {
		fs::remove_all(dir);
		skip();
	}
	{
		auto t = open_slow_tier("dir:" + dir, &err);
		assert_true(t != nullptr);
		std::string small(64 * 1024, '1'), huge(1024 * 1024, '2');
		assert_int_equal(t->put("obj", 1, small.data(), small.size()), 0);
		assert_int_equal(t->put("obj", 2, huge.data(), huge.size()), -ENOSPC);
		uint64_t ver = 0;
		assert_int_equal(t->get("obj", 0, UINT64_MAX, &data, &ver, nullptr), 0);
		assert_int_equal(ver, 1);
		assert_true(data == small);
		size_t files = 0;	// the failed tmp file is gone
		for (auto &e : fs::recursive_directory_iterator(dir))
			files += e.is_regular_file() && e.path().filename() != ".lock" &&
				 e.path().filename() != ".dsmem-tier-id";
		assert_int_equal(files, 1);
		// room again: the newer version goes in
		assert_int_equal(t->put("obj", 3, small.data(), 1000), 0);
		assert_int_equal(t->version("obj", &ver, nullptr), 0);
		assert_int_equal(ver, 3);
	}
	umount(dir.c_str());
	fs::remove_all(dir);
}

// ---- etcd ----

struct EtcdServer {
	pid_t pid = -1;
	std::string dir, endpoint;
};
EtcdServer server;
const char etcd_bin[] = "/usr/bin/etcd";

int free_port()
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sockaddr_in a{};
	socklen_t len = sizeof(a);

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = 0;
	if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) ||
	    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len)) {
		close(fd);
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

int etcd_start(void **)
{
	if (access(etcd_bin, X_OK))
		return 0;	// the tests skip
	server.dir = make_tmpdir();
	int client = free_port(), peer = free_port();
	if (client < 0 || peer < 0 || client == peer)
		return -1;
	std::string curl = "http://127.0.0.1:" + std::to_string(client);
	std::string purl = "http://127.0.0.1:" + std::to_string(peer);
	std::vector<std::string> args = { etcd_bin, "--name", "t", "--data-dir", server.dir + "/data",
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--initial-cluster", "t=" + purl, "--logger", "zap", "--log-level", "error" };
	server.pid = fork();
	if (server.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	// a crashed test leaves no etcd behind
		int out = open((server.dir + "/etcd.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(out, 1);
		dup2(out, 2);
		std::vector<char *> argv;
		for (auto &a : args)
			argv.push_back(a.data());
		argv.push_back(nullptr);
		execv(etcd_bin, argv.data());
		_exit(127);
	}
	server.endpoint = "127.0.0.1:" + std::to_string(client);
	EtcdClient c(server.endpoint);
	std::string err;
	for (int i = 0; i < 100; i++) {
		if (c.put("/ready", "1", 0, &err) == 0)
			return 0;
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	fprintf(stderr, "# etcd did not come up: %s\n", err.c_str());
	return -1;
}

int etcd_stop(void **)
{
	if (server.pid > 0) {
		kill(server.pid, SIGTERM);
		int status;
		waitpid(server.pid, &status, 0);
		server.pid = -1;
	}
	// DSSTORE_TEST_KEEP=1 keeps the directory (etcd.log) for a look
	if (!server.dir.empty() && !getenv("DSSTORE_TEST_KEEP"))
		fs::remove_all(server.dir);
	return 0;
}

std::shared_ptr<EtcdClient> etcd_client()
{
	if (server.pid <= 0)
		skip();
	// a dead endpoint first: calls move on to the live one
	return std::make_shared<EtcdClient>("127.0.0.1:1," + server.endpoint);
}

void etcd_kv(void **)
{
	auto c = etcd_client();
	std::string err;
	EtcdKV kv;
	std::vector<EtcdKV> kvs;

	assert_string_equal(etcd_prefix_end("/a/").c_str(), "/a0");
	assert_true(etcd_prefix_end("a\xff") == "b");
	assert_true(etcd_prefix_end("\xff") == std::string(1, '\0'));

	assert_int_equal(c->get("/kv/none", &kv, &err), -ENOENT);
	for (int i = 0; i < 700; i++)	// more than one page of a range
		assert_int_equal(c->put("/kv/p/" + std::to_string(1000 + i), std::to_string(i), 0, &err), 0);
	assert_int_equal(c->put("/kv/q", "outside", 0, &err), 0);
	assert_int_equal(c->get("/kv/p/1005", &kv, &err), 0);
	assert_string_equal(kv.value.c_str(), "5");
	assert_true(kv.create_revision > 0);
	assert_int_equal(c->range("/kv/p/", &kvs, &err), 0);
	assert_int_equal(kvs.size(), 700);
	assert_string_equal(kvs[699].key.c_str(), "/kv/p/1699");
	assert_int_equal(c->del_prefix("/kv/p/", &err), 0);
	assert_int_equal(c->range("/kv/", &kvs, &err), 0);
	assert_int_equal(kvs.size(), 1);

	// create_if_absent: the first wins, the second learns the holder
	bool won = false;
	int64_t rev1 = 0, rev2 = 0, lease = 0;
	std::string holder;
	assert_int_equal(c->lease_grant(5, &lease, &err), 0);
	assert_int_equal(c->create_if_absent("/kv/lock", "one", lease, &won, &rev1, &holder, &err), 0);
	assert_true(won);
	assert_string_equal(holder.c_str(), "one");
	assert_int_equal(c->create_if_absent("/kv/lock", "two", 0, &won, &rev2, &holder, &err), 0);
	assert_false(won);
	assert_int_equal(rev1, rev2);
	assert_string_equal(holder.c_str(), "one");
	// fenced writes: on the fence's revision only
	assert_int_equal(c->fenced_txn("/kv/lock", rev1, { { "/kv/f", "yes" } }, {}, {}, &err), 0);
	assert_int_equal(c->fenced_txn("/kv/lock", rev1 + 1, { { "/kv/f", "no" } }, {}, {}, &err), -ESTALE);
	assert_int_equal(c->get("/kv/f", &kv, &err), 0);
	assert_string_equal(kv.value.c_str(), "yes");
	assert_int_equal(c->fenced_txn("/kv/lock", rev1, {}, { "/kv/f" }, { "/kv/q" }, &err), 0);
	assert_int_equal(c->get("/kv/f", &kv, &err), -ENOENT);
	assert_int_equal(c->get("/kv/q", &kv, &err), -ENOENT);
	// a revoked lease takes its key along
	assert_int_equal(c->lease_revoke(lease, &err), 0);
	assert_int_equal(c->get("/kv/lock", &kv, &err), -ENOENT);
	int64_t ttl = 0;
	assert_int_equal(c->lease_keepalive(lease, &ttl, &err), -ENOENT);
	assert_int_equal(c->fenced_txn("/kv/lock", rev1, { { "/kv/f", "late" } }, {}, {}, &err), -ESTALE);
	assert_int_equal(c->put("/kv/x", "y", lease, &err), -ENOENT);	// no such lease
	// nobody answering at all
	EtcdClient dead("127.0.0.1:1");
	assert_int_equal(dead.get("/kv/x", &kv, &err), -EAGAIN);
	assert_true(err.find("127.0.0.1:1") != std::string::npos);
}

void etcd_log_round_trip(void **)
{
	auto c = etcd_client();
	std::string err;
	Election e(c, "/rt/leader", "me:1", 5);
	bool leader = false;

	assert_int_equal(e.campaign(&leader, &err), 0);
	assert_true(leader);
	auto log = open_etcd_log(c, "/rt/meta/", "/rt/leader", e.revision(), &err);
	assert_true(log != nullptr);
	check_load(log.get(), "", {});
	std::vector<std::string> want;
	for (int i = 0; i < 30; i++) {
		want.push_back(record(i));
		assert_int_equal(log->append(want.back(), &err), 0);
	}
	check_load(log.get(), "", want);
	// another reader (a standby) sees the same
	auto log2 = open_etcd_log(c, "/rt/meta", "/rt/leader", e.revision(), &err);
	check_load(log2.get(), "", want);

	// small snapshot, inline
	assert_int_equal(log->compact("small snapshot", &err), 0);
	check_load(log.get(), "small snapshot", {});
	want.clear();
	for (int i = 0; i < 3; i++) {
		want.push_back(record(50 + i));
		assert_int_equal(log->append(want.back(), &err), 0);
	}
	check_load(log.get(), "small snapshot", want);

	// a snapshot over etcd's 1.5 MiB request limit goes in chunks
	std::string big(3 * 1024 * 1024 + 12345, '\0');
	for (size_t i = 0; i < big.size(); i++)
		big[i] = static_cast<char>(i * 2654435761u >> 13);
	int cret = log->compact(big, &err);
	if (cret)
		print_error("compact: %s\n", err.c_str());
	assert_int_equal(cret, 0);
	check_load(log.get(), big, {});
	assert_int_equal(log->append("after big", &err), 0);
	assert_true(log->bytes() > big.size());
	std::vector<EtcdKV> kvs;
	assert_int_equal(c->range("/rt/meta/snapshot/", &kvs, &err), 0);
	assert_int_equal(kvs.size(), 4);
	// back to small: the chunks go
	assert_int_equal(log->compact("small again", &err), 0);
	assert_int_equal(c->range("/rt/meta/snapshot/", &kvs, &err), 0);
	assert_int_equal(kvs.size(), 0);
	assert_int_equal(log->compact(big, &err), 0);
	assert_int_equal(log->append("tail", &err), 0);

	// a fresh open continues the numbering
	auto log3 = open_etcd_log(c, "/rt/meta", "/rt/leader", e.revision(), &err);
	assert_int_equal(log3->append("from log3", &err), 0);
	check_load(log3.get(), big, { "tail", "from log3" });
	assert_int_equal(c->range("/rt/meta/log/", &kvs, &err), 0);
	assert_int_equal(kvs.size(), 2);
	e.resign();
}

void etcd_fencing(void **)
{
	auto c = etcd_client();
	std::string err, value;
	Election e1(c, "/fence/leader", "master-1", 5), e2(c, "/fence/leader", "master-2", 5);
	bool l1 = false, l2 = false;

	assert_int_equal(e1.leader(&value, &err), -ENOENT);
	assert_int_equal(e1.campaign(&l1, &err), 0);
	assert_true(l1);
	assert_int_equal(e1.campaign(&l1, &err), 0);	// again: still ours
	assert_true(l1);
	assert_int_equal(e2.campaign(&l2, &err), 0);
	assert_false(l2);
	assert_int_equal(e2.revision(), 0);
	// a standby may read, but a log fenced by no revision never writes
	auto standby = open_etcd_log(c, "/fence/meta", "/fence/leader", e2.revision(), &err);
	assert_true(standby != nullptr);
	assert_int_equal(standby->append("sneaky", &err), -ESTALE);
	assert_int_equal(e2.leader(&value, &err), 0);
	assert_string_equal(value.c_str(), "master-1");

	auto log1 = open_etcd_log(c, "/fence/meta", "/fence/leader", e1.revision(), &err);
	assert_true(log1 != nullptr);
	assert_int_equal(log1->append("one", &err), 0);
	assert_int_equal(log1->append("two", &err), 0);

	// master-1 loses its lease (revoked here; expiry is the same to etcd)
	int64_t rev1 = e1.revision();
	std::string err1;
	Election stale(c, "/fence/leader", "master-1", 5);
	e1.resign();
	assert_int_equal(e2.campaign(&l2, &err), 0);
	assert_true(l2);
	assert_true(e2.revision() > rev1);
	assert_int_equal(e2.leader(&value, &err), 0);
	assert_string_equal(value.c_str(), "master-2");

	// the old leader's writes are refused from now on
	assert_int_equal(log1->append("three", &err1), -ESTALE);
	assert_true(err1.find("leadership") != std::string::npos);
	assert_int_equal(log1->compact("stale snapshot", &err1), -ESTALE);
	assert_int_equal(e1.keepalive(&err1), -ESTALE);

	// the new leader replays what the old one committed, and goes on
	auto log2 = open_etcd_log(c, "/fence/meta", "/fence/leader", e2.revision(), &err);
	assert_true(log2 != nullptr);
	check_load(log2.get(), "", { "one", "two" });
	assert_int_equal(log2->append("three", &err), 0);
	assert_int_equal(log2->compact("snap", &err), 0);
	check_load(log2.get(), "snap", {});
	e2.resign();
	assert_int_equal(e2.leader(&value, &err), -ENOENT);
}

// An append never overwrites a record: a late commit of a failed append
// (simulated by writing the key directly) makes the next one fail with
// -ESTALE, and the log keeps what was there.
void etcd_append_no_overwrite(void **)
{
	auto c = etcd_client();
	std::string err;
	Election e(c, "/ow/leader", "me", 60);	// outlives the stops below
	bool leader = false;
	EtcdKV kv;

	assert_int_equal(e.campaign(&leader, &err), 0);
	assert_true(leader);
	auto log = open_etcd_log(c, "/ow/meta", "/ow/leader", e.revision(), &err);
	assert_true(log != nullptr);
	assert_int_equal(log->append("one", &err), 0);
	// record 2 lands behind this master's back
	assert_int_equal(c->put("/ow/meta/log/00000000000000000002", "late", 0, &err), 0);
	assert_int_equal(log->append("two", &err), -ESTALE);
	assert_true(err.find("already exists") != std::string::npos);
	assert_int_equal(c->get("/ow/meta/log/00000000000000000002", &kv, &err), 0);
	assert_string_equal(kv.value.c_str(), "late");
	// replayed, the master goes on after it
	check_load(log.get(), "", { "one", "late" });
	assert_int_equal(log->append("three", &err), 0);
	check_load(log.get(), "", { "one", "late", "three" });

	// a real ambiguous failure: etcd stopped, the append times out, and
	// may commit when etcd goes on; either way nothing is overwritten
	kill(server.pid, SIGSTOP);
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	int ret = log->append("maybe", &err);
	kill(server.pid, SIGCONT);
	if (ret == 0 || ret == -ESTALE)
		print_error("append while etcd stopped: %d %s\n", ret, err.c_str());
	assert_true(ret != 0 && ret != -ESTALE);
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	bool landed = false;
	for (int i = 0; i < 50; i++) {
		int g = c->get("/ow/meta/log/00000000000000000004", &kv, &err);
		if (g == 0 || g == -ENOENT) {
			landed = g == 0;
			break;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	// simulate the late commit if the server dropped it
	if (!landed)
		assert_int_equal(c->put("/ow/meta/log/00000000000000000004", "maybe", 0, &err), 0);
	// the number is read back first: it is taken, so this master is stale
	assert_int_equal(log->append("four", &err), -ESTALE);
	assert_int_equal(c->get("/ow/meta/log/00000000000000000004", &kv, &err), 0);
	assert_string_equal(kv.value.c_str(), "maybe");
	check_load(log.get(), "", { "one", "late", "three", "maybe" });
	assert_int_equal(log->append("four", &err), 0);
	check_load(log.get(), "", { "one", "late", "three", "maybe", "four" });

	// another timeout: whether its Txn commits (and when) is up to etcd;
	// either the number is still free and used, or it is taken and the
	// master must replay, never an overwrite
	kill(server.pid, SIGSTOP);
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	ret = log->append("lost?", &err);
	kill(server.pid, SIGCONT);
	if (ret == 0 || ret == -ESTALE)
		print_error("append while etcd stopped: %d %s\n", ret, err.c_str());
	assert_true(ret != 0 && ret != -ESTALE);
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	ret = log->append("five", &err);
	if (ret)
		print_message("# append after a timeout: %d %s\n", ret, err.c_str());
	if (ret == -ESTALE) {
		check_load(log.get(), "", { "one", "late", "three", "maybe", "four", "lost?" });
	} else {
		assert_int_equal(ret, 0);
		check_load(log.get(), "", { "one", "late", "three", "maybe", "four", "five" });
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(1000));
	assert_int_equal(c->get("/ow/meta/log/00000000000000000006", &kv, &err), 0);
	assert_string_equal(kv.value.c_str(), ret ? "lost?" : "five");
	e.resign();
}

// An append whose Txn outlives its deadline (here etcd is stopped past it;
// in a master frozen mid-append it is the same timeout) is read back and
// tried again instead of failing: the master that made it goes on leading.
// Whether the first try's Txn committed late or the retry's did, the
// record is in the log exactly once, at its number.
void etcd_append_outlasts_a_timeout(void **)
{
	auto c = etcd_client();
	std::string err;
	Election e(c, "/to/leader", "me", 60);
	bool leader = false;

	assert_int_equal(e.campaign(&leader, &err), 0);
	assert_true(leader);
	auto log = open_etcd_log(c, "/to/meta", "/to/leader", e.revision(), &err);
	assert_true(log != nullptr);
	assert_int_equal(log->append("one", &err), 0);
	kill(server.pid, SIGSTOP);
	int ret = -1;
	std::string terr;
	std::thread t([&] { ret = log->append("two", &terr); });
	// the fault's length: past the first try's deadline, short of the second's
	std::this_thread::sleep_for(kEtcdDeadline + std::chrono::milliseconds(500));
	kill(server.pid, SIGCONT);
	t.join();
	if (ret)
		print_error("append across the stop: %d %s\n", ret, terr.c_str());
	assert_int_equal(ret, 0);
	assert_int_equal(log->append("three", &err), 0);
	check_load(log.get(), "", { "one", "two", "three" });

	// With one try, the same stop leaves the append to its read-back:
	// the Txn committed once etcd went on (0), or its outcome is unknown
	// and the next append settles the number first (-ESTALE if the late
	// commit landed).  Which, is etcd's pace; never a record twice.
	auto once = open_etcd_log(c, "/to/meta", "/to/leader", e.revision(), &err, 1);
	assert_true(once != nullptr);
	kill(server.pid, SIGSTOP);
	std::thread t1([&] { ret = once->append("four", &terr); });
	std::this_thread::sleep_for(kEtcdDeadline + std::chrono::milliseconds(500));
	kill(server.pid, SIGCONT);
	t1.join();
	assert_true(ret != -ESTALE);
	int next = once->append("five", &err);
	assert_true(next == 0 || (ret != 0 && next == -ESTALE));
	std::string snap;
	std::vector<std::string> recs;
	assert_int_equal(once->load(&snap, &recs, &err), 0);
	assert_int_equal(std::count(recs.begin(), recs.end(), "four"), ret == 0 || next == -ESTALE);
	assert_int_equal(std::count(recs.begin(), recs.end(), "five"), next == 0);
	e.resign();
}

// The group's slow tier: the first master's tier is recorded; masters
// with the same tree (another path to it) agree, one with a tree of its
// own is refused (-EXDEV) with a message that says what to do.
void etcd_slow_tier_claim(void **)
{
	auto c = etcd_client();
	std::string a = make_tmpdir(), b = make_tmpdir(), err;
	auto t1 = open_slow_tier("dir:" + a, &err), t2 = open_slow_tier("dir:" + a + "/", &err);
	auto other = open_slow_tier("dir:" + b, &err);
	assert_int_equal(claim_slow_tier(*c, "/st/slow-tier", *t1, &err), 0);
	assert_int_equal(claim_slow_tier(*c, "/st/slow-tier", *t2, &err), 0);
	assert_int_equal(claim_slow_tier(*c, "/st/slow-tier", *t1, &err), 0);
	err.clear();
	assert_int_equal(claim_slow_tier(*c, "/st/slow-tier", *other, &err), -EXDEV);
	assert_true(err.find("every master of a group must reach the same slow tier") != std::string::npos);
	assert_true(err.find(b) != std::string::npos);
	EtcdKV kv;
	assert_int_equal(c->get("/st/slow-tier", &kv, &err), 0);
	assert_string_equal(kv.value.c_str(), t1->id().c_str());
	assert_int_equal(kv.lease, 0);	// outlives every master
	// another group (prefix) may have its own
	assert_int_equal(claim_slow_tier(*c, "/st2/slow-tier", *other, &err), 0);
	EtcdClient dead("127.0.0.1:1");
	assert_int_equal(claim_slow_tier(dead, "/st/slow-tier", *other, &err), -EAGAIN);
	fs::remove_all(a);
	fs::remove_all(b);
}

void etcd_keepalive(void **)
{
	auto c = etcd_client();
	std::string err;
	Election e1(c, "/ka/leader", "a", 2), e2(c, "/ka/leader", "b", 2);
	bool l1 = false, l2 = false;

	assert_int_equal(e1.keepalive(&err), -ESTALE);	// not a leader yet
	assert_int_equal(e1.held_until_ns(), 0);
	int64_t sent = Election::clock_ns();
	assert_int_equal(e1.campaign(&l1, &err), 0);
	assert_true(l1);
	// held for nine tenths of the TTL from before the grant was sent
	int64_t held = e1.held_until_ns();
	assert_true(held >= sent + 1800000000LL && held <= Election::clock_ns() + 1800000000LL);
	// kept alive past its TTL, it stays the leader, its hold moving on
	auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3500);
	while (std::chrono::steady_clock::now() < until) {
		assert_int_equal(e1.keepalive(&err), 0);
		assert_true(e1.held_until_ns() > held);
		held = e1.held_until_ns();
		std::this_thread::sleep_for(std::chrono::milliseconds(500));
	}
	assert_int_equal(e2.campaign(&l2, &err), 0);
	assert_false(l2);
	assert_int_equal(e2.held_until_ns(), 0);
	// left alone, the lease runs out and the standby takes over -- never
	// while the old leader may still think it holds the key
	until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
	while (!l2 && std::chrono::steady_clock::now() < until) {
		std::this_thread::sleep_for(std::chrono::milliseconds(250));
		assert_int_equal(e2.campaign(&l2, &err), 0);
	}
	assert_true(l2);
	assert_true(Election::clock_ns() >= held);
	assert_true(e2.held_until_ns() > Election::clock_ns());
	assert_int_equal(e1.keepalive(&err), -ESTALE);
	assert_int_equal(e1.held_until_ns(), 0);
	// the loser can campaign again (a new lease) and waits its turn
	assert_int_equal(e1.campaign(&l1, &err), 0);
	assert_false(l1);
	assert_int_equal(e2.keepalive(&err), 0);
	e2.resign();
	assert_int_equal(e2.held_until_ns(), 0);
	assert_int_equal(e1.campaign(&l1, &err), 0);
	assert_true(l1);
	e1.resign();
}

// A holder busy longer than the TTL (a takeover replaying a long log)
// keeps the key while a LeaseRenewer lives, and loses it without one.
void etcd_lease_renewed_meanwhile(void **)
{
	auto c = etcd_client();
	std::string err;
	Election e(c, "/rn/leader", "a", 1);
	bool won = false;
	assert_int_equal(e.campaign(&won, &err), 0);
	assert_true(won);
	int64_t held = e.held_until_ns();
	{
		LeaseRenewer renewing(e, std::chrono::milliseconds(300));
		std::this_thread::sleep_for(std::chrono::seconds(3));
	}
	assert_true(e.held_until_ns() > held);
	assert_int_equal(e.keepalive(&err), 0);
	std::this_thread::sleep_for(std::chrono::seconds(3));
	assert_int_equal(e.keepalive(&err), -ESTALE);
	e.resign();
}

}  // namespace

int main(void)
{
	const struct CMUnitTest local[] = {
		cmocka_unit_test(crc32c_known),
		cmocka_unit_test(file_log_round_trip),
		cmocka_unit_test(file_log_torn_tail),
		cmocka_unit_test(file_log_dir_fsync_failure),
		cmocka_unit_test(file_log_compaction),
		cmocka_unit_test(slow_tier_basics),
		cmocka_unit_test(slow_tier_odd_keys),
		cmocka_unit_test(slow_tier_chunk_crc),
		cmocka_unit_test(slow_tier_two_masters),
		cmocka_unit_test(slow_tier_stale_tmp),
		cmocka_unit_test(slow_tier_colliding_keys),
		cmocka_unit_test(slow_tier_identity),
		cmocka_unit_test(slow_tier_enospc),
	};
	const struct CMUnitTest etcd[] = {
		cmocka_unit_test(etcd_kv),
		cmocka_unit_test(etcd_log_round_trip),
		cmocka_unit_test(etcd_fencing),
		cmocka_unit_test(etcd_append_no_overwrite),
		cmocka_unit_test(etcd_append_outlasts_a_timeout),
		cmocka_unit_test(etcd_keepalive),
		cmocka_unit_test(etcd_lease_renewed_meanwhile),
		cmocka_unit_test(etcd_slow_tier_claim),
	};
	int failed = cmocka_run_group_tests_name("store_persist_local", local, NULL, NULL);
	failed += cmocka_run_group_tests_name("store_persist_etcd", etcd, etcd_start, etcd_stop);
	return failed;
}
