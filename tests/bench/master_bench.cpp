// SPDX-License-Identifier: BSD-2-Clause
// master_bench: dsmaster's metadata path on the host, with no data moved
// and no dsmem module: a Leader over a real file log (fdatasync and all)
// in a scratch directory, holding N objects, called as its RPC threads
// call it.  Behind `make bench B=master`.
//
//   master_bench [--dir DIR] [--threads T] [--ops M] N...
//
// For each N (objects resident, e.g. 1000000 10000000):
//   - fills the master with N one-replica objects by batches of 4096
//     (BatchPutStart, BatchPutCommit), as a loader would;
//   - its memory per object (the heap's growth over the fill / N);
//   - forces a snapshot and the log's compaction while T threads call
//     Get and one thread puts, and reports the p99 and the longest Get,
//     and the longest hold of the state mutex (as a waiter saw it);
//   - the rates of PutStart+PutCommit, Get, Exist and Del, M calls each
//     from T threads.
// Figures are named master.NAME_<N as 1M, 10M, ...>.
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mover.hpp"
#include "persist.hpp"
#include "service.hpp"
#include "store_leader_fx.hpp"

using namespace dsmem::store;
using namespace dsmem::store::leaderfx;
using Clock = std::chrono::steady_clock;

namespace {

const Caller kApp{ "app", false };
constexpr int kBatch = 4096;
constexpr uint64_t kObjectSize = 4096;

[[noreturn]] void die(const std::string &why)
{
	fprintf(stderr, "master_bench: %s\n", why.c_str());
	exit(1);
}

// Bytes the heap holds for the program (not what malloc keeps in reserve
// after a snapshot's copy of the state was freed).
uint64_t heap_bytes()
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

std::string label(uint64_t n)
{
	if (n % 1000000 == 0)
		return std::to_string(n / 1000000) + "M";
	if (n % 1000 == 0)
		return std::to_string(n / 1000) + "k";
	return std::to_string(n);
}

std::string key_of(uint64_t i)
{
	char k[32];
	snprintf(k, sizeof(k), "bench/%012" PRIu64, i);
	return k;
}

double ms_since(Clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The p-quantile of samples (sorted here).
double quantile(std::vector<double> *v, double p)
{
	if (v->empty())
		return 0;
	std::sort(v->begin(), v->end());
	return (*v)[std::min(v->size() - 1, static_cast<size_t>(p * v->size()))];
}

struct Bench {
	std::string dir;
	Options opts;
	Mover mover{ kNode };
	std::shared_ptr<Leader> leader;
	uint64_t client = 0;

	// client 0: a new log, and the client and its segment registered;
	// else the log of an earlier Bench, replayed, and its client's id
	Bench(const std::string &d, uint64_t snapshot_every, uint64_t client_id = 0)
		: dir(d), client(client_id)
	{
		master_options(&opts);
		opts.snapshot_every = snapshot_every;
		opts.evict = false;
		std::string err;
		auto log = open_file_log(dir, &err);
		if (!log)
			die(std::string("file log: ") + err);
		leader = std::make_shared<Leader>(opts, nullptr, &mover);
		if (leader->start(std::move(log), [](const std::string &why) {
			    die(std::string("the master lost its log: ") + why);
		    }, &err))
			die(std::string("start: ") + err);
		if (client)
			return;
		v1::RegisterClientRequest rq = client_request();
		v1::RegisterClientResponse ra;
		if (!leader->RegisterClient(kApp, &rq, &ra).ok())
			die("register client");
		client = ra.client_id();
		// room for every object, however many: only metadata is kept
		v1::RegisterSegmentRequest sq = segment_request(client);
		sq.mutable_desc()->set_size(1ull << 46);
		v1::RegisterSegmentResponse sa;
		grpc::Status s = leader->RegisterSegment(kApp, &sq, &sa);
		if (!s.ok())
			die(std::string("register segment: ") + s.error_message());
	}
	~Bench() { leader->stop(); }

	void fill(uint64_t from, uint64_t to)
	{
		const v1::Checksums sums = zero_sums(kObjectSize);
		for (uint64_t at = from; at < to; at += kBatch) {
			uint64_t end = std::min<uint64_t>(to, at + kBatch);
			v1::BatchPutStartRequest sq;
			for (uint64_t i = at; i < end; i++)
				*sq.add_items() = put_start_request(client, key_of(i), kObjectSize);
			v1::BatchPutStartResponse sa;
			grpc::Status s = leader->BatchPutStart(kApp, &sq, &sa);
			if (!s.ok())
				die(std::string("batch put start: ") + s.error_message());
			v1::BatchPutCommitRequest cq;
			for (uint64_t i = at; i < end; i++) {
				const auto &st = sa.status(static_cast<int>(i - at));
				if (st.code())
					die(std::string("put start: ") + st.message());
				v1::PutCommitRequest *c = cq.add_items();
				c->set_client_id(client);
				c->set_key(key_of(i));
				c->set_version(sa.results(static_cast<int>(i - at)).version());
				c->add_done(0);
				*c->mutable_sums() = sums;
			}
			v1::BatchPutCommitResponse ca;
			s = leader->BatchPutCommit(kApp, &cq, &ca);
			if (!s.ok())
				die(std::string("batch put commit: ") + s.error_message());
			for (const auto &st : ca.status())
				if (st.code())
					die(std::string("put commit: ") + st.message());
		}
	}

	bool put(uint64_t i)
	{
		v1::PutStartRequest q = put_start_request(client, key_of(i), kObjectSize);
		v1::PutStartResponse a;
		if (!leader->PutStart(kApp, &q, &a).ok())
			return false;
		v1::PutCommitRequest c = put_commit_request(client, key_of(i), a.version(), kObjectSize);
		v1::PutCommitResponse ca;
		return leader->PutCommit(kApp, &c, &ca).ok();
	}
	bool get(uint64_t i)
	{
		v1::GetRequest q = get_request(key_of(i));
		v1::GetResponse a;
		return leader->Get(kApp, &q, &a).ok();
	}
	bool exist(uint64_t i)
	{
		v1::BatchExistRequest q;
		q.add_keys(key_of(i));
		v1::BatchExistResponse a;
		return leader->BatchExist(kApp, &q, &a).ok() && a.status(0).code() == 0;
	}
	bool del(uint64_t i)
	{
		v1::DelRequest q;
		q.set_key(key_of(i));
		v1::DelResponse a;
		return leader->Del(kApp, &q, &a).ok();
	}
};

// M calls of op from T threads, on keys [base, base + M): calls per second.
template <class Op>
double rate(int threads, uint64_t m, uint64_t base, Op op)
{
	std::atomic<uint64_t> next{ 0 }, failed{ 0 };
	auto t0 = Clock::now();
	std::vector<std::thread> ts;
	for (int t = 0; t < threads; t++)
		ts.emplace_back([&] {
			for (uint64_t i; (i = next++) < m;)
				if (!op(base + i))
					failed++;
		});
	for (auto &t : ts)
		t.join();
	double secs = ms_since(t0) / 1000;
	if (failed)
		die(std::to_string(failed.load()) + " calls failed");
	return m / secs;
}

void figure(const char *name, const std::string &n, double v, const char *unit)
{
	printf("bench: master.%s_%s %.*f %s\n", name, n.c_str(), v < 10 ? 3 : 0, v, unit);
	fflush(stdout);
}

void run(const std::string &top, uint64_t n, int threads, uint64_t m)
{
	std::string dir = top + "/master-" + label(n);
	std::filesystem::remove_all(dir);
	// No snapshot during the fill (each would wait for the last one's
	// state, and make the fill of ten million take three times as
	// long); the first put after it makes one, while the probes below
	// run.
	uint64_t heap0 = heap_bytes();
	auto b = std::make_unique<Bench>(dir, UINT64_MAX);
	auto t0 = Clock::now();
	b->fill(0, n);
	double fill_s = ms_since(t0) / 1000;
	uint64_t heap1 = heap_bytes();
	const std::string l = label(n);
	figure("fill_rate", l, n / fill_s, "objects/s");
	figure("bytes_per_object", l, static_cast<double>(heap1 - heap0) / n, "B");

	// The snapshot: puts until one happened (the file log's snapshot
	// file is replaced), with Get probes meanwhile.
	auto snapshot_id = [&] {
		struct stat st;
		return stat((dir + "/snapshot").c_str(), &st) ? 0 : static_cast<uint64_t>(st.st_ino);
	};
	const uint64_t before = snapshot_id();
	// (two: the log after the snapshot holds the put's commit, one)
	b->leader->set_snapshot_every(2);
	std::atomic<bool> done{ false };
	std::vector<std::vector<double>> lat(threads);
	std::vector<std::thread> probes;
	// The state mutex's longest hold, as a waiter sees it: a probe takes
	// it every millisecond; the longest it waited is the longest anyone
	// else held it (less at most the millisecond between its tries).
	double hold_max = 0;
	std::thread holder([&] {
		while (!done) {
			auto s = Clock::now();
			b->leader->with_state_held([] {});
			hold_max = std::max(hold_max, ms_since(s));
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
	});
	for (int t = 0; t < threads; t++)
		probes.emplace_back([&, t] {
			for (uint64_t i = t; !done; i = (i + 7919) % n) {
				auto s = Clock::now();
				if (!b->get(i))
					die("a Get failed during the snapshot");
				lat[t].push_back(ms_since(s));
				// callers with gaps, as clients are: a probe that
				// never pauses would starve the put that makes the
				// snapshot fall due
				std::this_thread::sleep_for(std::chrono::microseconds(500));
			}
		});
	uint64_t extra = n;
	bool snapped = false;
	for (int i = 0; i < 1000000 && !snapped; i++) {
		if (!b->put(extra++))
			die("a put failed during the snapshot");
		snapped = snapshot_id() != before;
	}
	b->leader->set_snapshot_every(UINT64_MAX);
	done = true;
	for (auto &t : probes)
		t.join();
	holder.join();
	if (!snapped)
		die("no snapshot after a million puts");
	std::vector<double> all;
	for (auto &v : lat)
		all.insert(all.end(), v.begin(), v.end());
	figure("rpc_p99_ms", l, quantile(&all, 0.99), "ms");
	figure("rpc_max_ms", l, all.empty() ? 0 : all.back(), "ms");
	figure("lock_hold_max_ms", l, hold_max, "ms");

	uint64_t client = b->client;
	b.reset();		// (and with it the log's lock)

	// The rates, on a master that restarted over the same log with no
	// snapshot due: this one's, small for the figure above, would
	// snapshot the whole state again every few hundred puts.
	t0 = Clock::now();
	Bench r(dir, 1ull << 40, client);
	figure("replay_s", l, ms_since(t0) / 1000, "s");
	figure("put_rate", l, rate(threads, m, extra, [&](uint64_t i) { return r.put(i); }), "ops/s");
	figure("get_rate", l, rate(threads, m, 0, [&](uint64_t i) { return r.get(i % n); }), "ops/s");
	figure("exist_rate", l, rate(threads, m, 0, [&](uint64_t i) { return r.exist(i % n); }), "ops/s");
	figure("del_rate", l, rate(threads, m, 0, [&](uint64_t i) { return r.del(i); }), "ops/s");
	r.leader->stop();
	std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char **argv)
{
	std::string dir = "/tmp/dsmem-master-bench";
	int threads = 16;
	uint64_t m = 50000;
	std::vector<uint64_t> sizes;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--dir" && i + 1 < argc)
			dir = argv[++i];
		else if (a == "--threads" && i + 1 < argc)
			threads = std::max(1, atoi(argv[++i]));
		else if (a == "--ops" && i + 1 < argc)
			m = std::max(1ull, strtoull(argv[++i], nullptr, 0));
		else if (!a.empty() && a[0] != '-' && strtoull(a.c_str(), nullptr, 0) > 0)
			sizes.push_back(strtoull(a.c_str(), nullptr, 0));
		else
			die(std::string("usage: master_bench [--dir DIR] [--threads T] [--ops M] N... (not ") + a + ")");
	}
	if (sizes.empty())
		sizes = { 1000000 };
	std::filesystem::create_directories(dir);
	for (uint64_t n : sizes) {
		if (m > n)
			die("--ops must not exceed the objects resident");
		run(dir, n, threads, m);
	}
	return 0;
}
