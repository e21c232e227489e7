// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's Leader (user/tools/dsmaster/service.cpp) answering RPCs over
// a metadata log whose appends wait at a gate, as a hung etcd or disk
// makes them wait: no reply may reflect a change that is not durable yet
// (a put or a delete the master would forget if it died, or if the
// append failed).  And a Leader taking over a log where an earlier term
// reserved space for a copy it never finished: that space is given to
// nobody until the earlier leader is known to have stopped.  No dsmem
// module is needed: the Leader's own node is never used (no data moves
// here).
#include <atomic>
#include <cerrno>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include <dsmem/store.h>

#include "journal.hpp"
#include "mover.hpp"
#include "persist.hpp"
#include "service.hpp"
#include "store_leader_fx.hpp"

// cmocka last: its macros do not mix with the C++ headers
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::store;
using namespace dsmem::store::leaderfx;

namespace {

// the identity the test's client calls as (an ordinary one, not an admin)
const Caller kApp{ "app", false };

// The log's entries and its gate, shared with the test.
struct Gate {
	std::mutex m;
	std::condition_variable cv;
	bool open = true;
	int fail = 0;		// closed and failing: appends at the gate return it
	int waiting = 0;	// appends waiting at the gate
	std::vector<std::string> entries;	// appended (durable)

	void close_gate()
	{
		std::lock_guard<std::mutex> g(m);
		open = false;
	}
	void open_gate()
	{
		std::lock_guard<std::mutex> g(m);
		open = true;
		cv.notify_all();
	}
	void fail_gate(int ret)
	{
		std::lock_guard<std::mutex> g(m);
		fail = ret;
		cv.notify_all();
	}
	// Until an append waits at the gate (the journal's writer has the
	// record): true, or false after 10 s.
	bool await_waiting()
	{
		std::unique_lock<std::mutex> l(m);
		return cv.wait_for(l, std::chrono::seconds(10), [&] { return waiting > 0; });
	}
};

class GateLog : public MetaLog {
public:
	explicit GateLog(std::shared_ptr<Gate> g) : g_(std::move(g)) {}
	int load(std::string *snapshot, std::vector<std::string> *records, std::string *) override
	{
		std::lock_guard<std::mutex> l(g_->m);
		snapshot->clear();
		*records = g_->entries;
		return 0;
	}
	int append(const std::string &record, std::string *err) override
	{
		// as etcd refuses a request over its --max-request-bytes (by
		// default 1.5 MiB)
		if (record.size() > 3 * 512 * 1024) {
			*err = "etcdserver: request is too large";
			return -E2BIG;
		}
		std::unique_lock<std::mutex> l(g_->m);
		g_->waiting++;
		g_->cv.notify_all();
		g_->cv.wait(l, [&] { return g_->open || g_->fail; });
		g_->waiting--;
		if (!g_->open) {
			*err = "the gate failed the append";
			return g_->fail;
		}
		g_->entries.push_back(record);
		return 0;
	}
	int compact(std::string_view, std::string *) override { return 0; }
	uint64_t records_since_snapshot() const override { return 0; }
	uint64_t bytes() const override { return 0; }
	std::string describe() const override { return "gate"; }

private:
	std::shared_ptr<Gate> g_;
};

// A Leader on a gated log (with entries: replayed), with one client and
// one DRAM segment of its own (none with entries).
struct Fx {
	std::shared_ptr<Gate> gate = std::make_shared<Gate>();
	Options opts;
	Mover mover{ kNode };
	std::shared_ptr<Leader> leader;
	std::atomic<int> lost{ 0 };
	std::atomic<bool> quiesced{ false };
	uint64_t client = 0;

	explicit Fx(std::vector<std::string> entries = {},
		    const std::function<void(Options &)> &tweak = nullptr)
	{
		master_options(&opts);
		if (tweak)
			tweak(opts);
		gate->entries = std::move(entries);
		bool replay = !gate->entries.empty();
		leader = std::make_shared<Leader>(opts, nullptr, &mover);
		leader->set_quiesced([this](uint64_t) { return quiesced.load(); });
		std::string err;
		int ret = leader->start(std::make_unique<GateLog>(gate),
					[this](const std::string &) { lost++; }, &err);
		if (ret)
			fail_msg("start: %s", err.c_str());
		if (replay)
			return;
		v1::RegisterClientRequest rq = client_request();
		v1::RegisterClientResponse ra;
		assert_true(leader->RegisterClient(kApp, &rq, &ra).ok());
		client = ra.client_id();
		v1::RegisterSegmentRequest sq = segment_request(client);
		v1::RegisterSegmentResponse sa;
		assert_true(leader->RegisterSegment(kApp, &sq, &sa).ok());
	}
	~Fx()
	{
		gate->open_gate();
		leader->stop();
	}

	grpc::Status try_put_start(const std::string &key, uint64_t size, uint64_t *version)
	{
		v1::PutStartRequest q = put_start_request(client, key, size);
		v1::PutStartResponse a;
		grpc::Status s = leader->PutStart(kApp, &q, &a);
		*version = a.version();
		return s;
	}
	uint64_t put_start(const std::string &key, uint64_t size = 1000)
	{
		uint64_t v = 0;
		grpc::Status s = try_put_start(key, size, &v);
		if (!s.ok())
			fail_msg("put start %s: %s", key.c_str(), s.error_message().c_str());
		return v;
	}
	// (size: what put_start was given, which the commit's sums cover)
	grpc::Status put_commit(const std::string &key, uint64_t version, uint64_t size = 1000)
	{
		v1::PutCommitRequest q = put_commit_request(client, key, version, size);
		v1::PutCommitResponse a;
		return leader->PutCommit(kApp, &q, &a);
	}
	uint64_t put(const std::string &key, uint64_t size = 1000)
	{
		uint64_t v = put_start(key, size);
		assert_true(put_commit(key, v, size).ok());
		return v;
	}
	grpc::Status get(const std::string &key, uint64_t *version)
	{
		v1::GetRequest q = get_request(key);
		v1::GetResponse a;
		grpc::Status s = leader->Get(kApp, &q, &a);
		*version = a.object().version();
		return s;
	}
};

// An RPC run in a thread; done once it answered.
struct Call {
	std::atomic<bool> done{ false };
	grpc::Status status;
	uint64_t value = 0;
	std::thread t;

	template <typename F> void run(F f)
	{
		t = std::thread([this, f] {
			status = f(&value);
			done = true;
		});
	}
	void join()
	{
		if (t.joinable())
			t.join();
	}
	~Call() { join(); }
};

// Long enough for a reply that does not wait to have come.
void settle()
{
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

// A commit whose record is not durable yet: a Get (and a retried commit)
// waits for it, and when its append fails, says UNAVAILABLE -- never the
// version the master would have forgotten.
// A commit without checksums (a buggy or hostile client; every reader
// would return its bytes unchecked): refused, alone and in a batch, and
// nothing logged or readable; the same put committed with its sums then
// is.
void test_put_commit_without_sums_refused(void **)
{
	Fx f;
	auto logged = [&] {
		std::lock_guard<std::mutex> g(f.gate->m);
		return f.gate->entries.size();
	};
	uint64_t v = f.put_start("k", 3 << 20), got = 0;
	size_t before = logged();
	v1::PutCommitRequest q = put_commit_request(f.client, "k", v, 3 << 20);
	assert_int_equal(q.sums().xxh64_size(), 3);
	q.clear_sums();
	v1::PutCommitResponse a;
	grpc::Status s = f.leader->PutCommit(kApp, &q, &a);
	assert_int_equal(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
	assert_non_null(strstr(s.error_message().c_str(), "no checksums"));
	v1::BatchPutCommitRequest bq;
	v1::BatchPutCommitResponse ba;
	*bq.add_items() = q;
	assert_true(f.leader->BatchPutCommit(kApp, &bq, &ba).ok());
	assert_int_equal(ba.status_size(), 1);
	assert_int_equal(ba.status(0).code(), grpc::StatusCode::INVALID_ARGUMENT);
	assert_non_null(strstr(ba.status(0).message().c_str(), "no checksums"));
	assert_int_equal(logged(), before);
	assert_int_equal(f.get("k", &got).error_code(), grpc::StatusCode::NOT_FOUND);

	// the put is still open: with its sums it commits
	assert_true(f.put_commit("k", v, 3 << 20).ok());
	assert_true(f.get("k", &got).ok());
	assert_int_equal(got, v);

	// (an object of 0 bytes, which has no chunks and so no sums, is
	// refused at PutStart: no commit of one reaches the check)
	assert_false(f.try_put_start("empty", 0, &got).ok());
}

void test_get_waits_for_durable_put(void **)
{
	Fx f;
	uint64_t v1 = f.put("k"), got = 0;
	assert_true(f.get("k", &got).ok());
	assert_int_equal(got, v1);
	uint64_t v2 = f.put_start("k");

	f.gate->close_gate();
	Call commit, get, retry;
	commit.run([&](uint64_t *) { return f.put_commit("k", v2); });
	assert_true(f.gate->await_waiting());
	get.run([&](uint64_t *v) { return f.get("k", v); });
	retry.run([&](uint64_t *) { return f.put_commit("k", v2); });
	settle();
	// what answered early; the gate goes first, so that a failure here
	// leaves no thread behind
	bool early_get = get.done, early_retry = retry.done, early_commit = commit.done;
	uint64_t early_version = get.value;
	f.gate->fail_gate(-EIO);
	commit.join();
	get.join();
	retry.join();
	// The journal's writer reports the loss after it woke the waiters,
	// so the replies may come before it: stopping the Leader joins that
	// thread, and whatever it was to report, it has (and a failure below
	// leaves no thread behind)
	f.leader->stop();
	if (early_get)
		fail_msg("Get answered (version %llu, %s) before the commit of version %llu was durable",
			 (unsigned long long)early_version, get.status.ok() ? "OK" : "an error",
			 (unsigned long long)v2);
	assert_false(early_retry);	// a retried commit acknowledges nothing early either
	assert_false(early_commit);
	assert_int_equal(commit.status.error_code(), grpc::StatusCode::UNAVAILABLE);
	assert_int_equal(get.status.error_code(), grpc::StatusCode::UNAVAILABLE);
	assert_int_equal(retry.status.error_code(), grpc::StatusCode::UNAVAILABLE);
	assert_int_equal(f.lost.load(), 1);
}

// A delete not durable yet: Get, List, Sync and MasterInfo still wait;
// once it is durable they see it.
void test_reads_wait_for_durable_del(void **)
{
	Fx f;
	uint64_t v1 = f.put("d/k"), got = 0;

	f.gate->close_gate();
	Call del, get, list, sync, info;
	del.run([&](uint64_t *) {
		v1::DelRequest q;
		v1::DelResponse a;
		q.set_key("d/k");
		return f.leader->Del(kApp, &q, &a);
	});
	assert_true(f.gate->await_waiting());
	get.run([&](uint64_t *v) { return f.get("d/k", v); });
	list.run([&](uint64_t *n) {
		v1::ListRequest q;
		v1::ListResponse a;
		q.set_prefix("d/");
		grpc::Status s = f.leader->List(kApp, &q, &a);
		*n = static_cast<uint64_t>(a.objects_size());
		return s;
	});
	sync.run([&](uint64_t *v) {
		v1::SyncRequest q;
		v1::SyncResponse a;
		q.set_key("d/k");
		grpc::Status s = f.leader->Sync(kApp, &q, &a);
		*v = a.version();
		return s;
	});
	info.run([&](uint64_t *n) {
		v1::MasterInfoRequest q;
		v1::MasterInfoResponse a;
		grpc::Status s = f.leader->MasterInfo(kApp, &q, &a);
		*n = a.objects();
		return s;
	});
	settle();
	bool early[5] = { get.done, list.done, sync.done, info.done, del.done };
	f.gate->open_gate();
	del.join();
	get.join();
	list.join();
	sync.join();
	info.join();
	if (early[0])
		fail_msg("Get answered (%s) before the delete was durable",
			 get.status.ok() ? "OK" : get.status.error_message().c_str());
	assert_false(early[1]);	// List
	assert_false(early[2]);	// Sync
	assert_false(early[3]);	// MasterInfo
	assert_false(early[4]);	// Del itself
	assert_true(del.status.ok());
	assert_int_equal(get.status.error_code(), grpc::StatusCode::NOT_FOUND);
	assert_true(list.status.ok());
	assert_int_equal(list.value, 0);
	assert_true(sync.status.ok());
	assert_int_equal(sync.value, 0);
	assert_true(info.status.ok());
	assert_int_equal(info.value, 0);
	// durable reads cost nothing when nothing is in flight
	assert_int_equal(f.get("d/k", &got).error_code(), grpc::StatusCode::NOT_FOUND);
	assert_true(v1 > 0);
	assert_int_equal(f.lost.load(), 0);
}

// Reads of other keys do not wait for a key's record in flight.
void test_other_keys_do_not_wait(void **)
{
	Fx f;
	uint64_t va = f.put("a"), got = 0;
	uint64_t vb = f.put_start("b");

	f.gate->close_gate();
	Call commit;
	commit.run([&](uint64_t *) { return f.put_commit("b", vb); });
	assert_true(f.gate->await_waiting());
	assert_true(f.get("a", &got).ok());
	assert_int_equal(got, va);
	f.gate->open_gate();
	commit.join();
	assert_true(commit.status.ok());
	assert_true(f.get("b", &got).ok());
	assert_int_equal(got, vb);
}

// The used bytes of each segment, as SegmentList says.
std::map<uint64_t, uint64_t> used_of(Leader &l)
{
	v1::SegmentListRequest q;
	v1::SegmentListResponse a;
	assert_true(l.SegmentList(kApp, &q, &a).ok());
	std::map<uint64_t, uint64_t> out;
	for (const auto &d : a.segments())
		out[d.id()] = d.used();
	return out;
}

bool overlaps(const v1::Replica &a, const v1::Replica &b)
{
	for (const auto &x : a.shards())
		for (const auto &y : b.shards())
			if (x.segment_id() == y.segment_id() && x.offset() < y.offset() + y.length() &&
			    y.offset() < x.offset() + x.length())
				return true;
	return false;
}

// What term 1 left in the log: two clients with a 16 MiB segment each,
// an 8 MiB object on one, and a second copy of it reserved on the other
// (*seg the segments, *dst the reserved place, *reservation its id).
std::vector<std::string> log_with_reservation(uint64_t seg[2], v1::Replica *out_dst,
					      uint64_t *reservation)
{
	MasterState st{ Limits() };
	std::vector<std::string> entries;
	std::string err;
	auto log = [&](const lg::Record &r) {
		assert_int_equal(st.apply(r, &err), 0);
		lg::LogEntry e;
		*e.add_records() = r;
		entries.push_back(e.SerializeAsString());
	};
	lg::Record r;
	st.plan_term(&r);
	log(r);
	for (int i = 0; i < 2; i++) {
		v1::Member m;
		m.set_node_id(kNode);
		m.set_addr("127.0.0.1");
		m.set_port(7479);
		r.Clear();
		assert_int_equal(st.plan_register_client(kApp, m, 0, &r, &err), 0);
		log(r);
		uint64_t client = r.client_add().client_id();
		v1::SegmentDesc d;
		d.set_type(v1::SEGMENT_DRAM);
		d.set_size(16 << 20);
		d.set_node_id(kNode);
		d.set_gaddr(0x9001000000000ull + (static_cast<uint64_t>(i) << 36));
		uint64_t id;
		bool remounted;
		r.Clear();
		assert_int_equal(st.plan_register_segment(kApp, client, d, &r, &id, &remounted, &err), 0);
		log(r);
		seg[i] = id;
	}
	v1::ReplicateConfig cfg;
	cfg.set_dram_replicas(1);
	r.Clear();
	assert_int_equal(st.plan_put_start(kApp, 1, "k", 8 << 20, cfg, {}, 1000, &r, &err), 0);
	log(r);
	uint64_t v = r.put_start().version();
	lg::Record c, abort;
	assert_int_equal(st.plan_put_commit("k", v, { 0 }, zero_sums(8 << 20), 1000, &c, &abort, &err),
			 0);
	log(c);
	v1::Replica dst;
	assert_int_equal(st.place_replica("k", v, v1::SEGMENT_DRAM, {}, -1, &dst, &err), 0);
	st.release_replica(dst);
	r.Clear();
	st.plan_reserve("k", v, dst, &r);
	log(r);

	*out_dst = dst;
	*reservation = r.replica_reserve().id();
	return entries;
}

// The leader of term 1 reserved space for a copy and never said it was
// done (stopped, or cut off, mid-copy): the leader of term 2 gives that
// space to no put -- a late write of the old one would land in it --
// until the old leader is known to have stopped; then it is free again.
void test_earlier_reservation_quarantined(void **)
{
	uint64_t seg[2], reservation;
	v1::Replica dst;
	std::vector<std::string> entries = log_with_reservation(seg, &dst, &reservation);
	// (eviction off: what the pool holds is what is counted; a fence
	// grace longer than the test: only the word of term 1 frees it)
	Fx f(entries, [](Options &o) {
		o.evict = false;
		o.fence_grace_ms = 600000;
	});
	auto used = used_of(*f.leader);
	assert_int_equal(used[seg[0]] + used[seg[1]], 16 << 20);
	// puts take the rest, never the reserved space
	uint64_t got = 0;
	for (int i = 0; i < 40; i++) {
		v1::PutStartRequest q;
		v1::PutStartResponse a;
		q.set_client_id(2);
		q.set_key("p" + std::to_string(i));
		q.set_size(1 << 20);
		q.mutable_config()->set_dram_replicas(1);
		if (!f.leader->PutStart(kApp, &q, &a).ok())
			break;
		for (const auto &rep : a.replicas()) {
			if (overlaps(rep, dst))
				fail_msg("put %d placed on space term 1 reserved", i);
			got += rep.shards_size() ? rep.shards(0).length() : 0;
		}
	}
	assert_int_equal(got, 16 << 20);	// 32 MiB, less the object and the reservation
	// still so a while later: nobody said term 1 stopped
	std::this_thread::sleep_for(std::chrono::milliseconds(2500));
	used = used_of(*f.leader);
	assert_int_equal(used[seg[0]] + used[seg[1]], 32 << 20);
	// it did: the space is free again (within a few seconds)
	f.quiesced = true;
	for (int i = 0; i < 100; i++) {
		used = used_of(*f.leader);
		if (used[seg[0]] + used[seg[1]] == 24 << 20)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	assert_int_equal(used[seg[0]] + used[seg[1]], 24 << 20);
	// and the release is in the log
	bool released = false;
	for (const auto &e : f.gate->entries) {
		lg::LogEntry le;
		assert_true(le.ParseFromString(e));
		for (const auto &rec : le.records())
			released |= rec.has_replica_release() &&
				    rec.replica_release().id() == reservation;
	}
	assert_true(released);
}

v1::DelRequest del_request(const std::string &key, uint64_t request_id)
{
	v1::DelRequest q;
	q.set_key(key);
	q.set_request_id(request_id);
	return q;
}

// A retried delete (the same request id) gets the first attempt's answer,
// from this leader or the next one, and never before the first attempt's
// record is durable; a new delete of the key finds nothing.
void test_retried_del_gets_its_answer(void **)
{
	Fx f;
	auto counted = std::make_shared<Metrics>();
	f.leader->set_metrics(counted);
	f.put("r/k");
	f.put("r/k");
	v1::DelRequest first = del_request("r/k", 77);
	v1::DelResponse a;
	assert_true(f.leader->Del(kApp, &first, &a).ok());
	assert_int_equal(a.versions(), 2);
	assert_int_equal(counted->retries.load(), 0);
	a.Clear();
	assert_true(f.leader->Del(kApp, &first, &a).ok());
	assert_int_equal(a.versions(), 2);
	assert_int_equal(counted->retries.load(), 1);
	v1::DelRequest other = del_request("r/k", 78), plain = del_request("r/k", 0);
	assert_int_equal(f.leader->Del(kApp, &other, &a).error_code(), grpc::StatusCode::NOT_FOUND);
	assert_int_equal(f.leader->Del(kApp, &plain, &a).error_code(), grpc::StatusCode::NOT_FOUND);
	// the same id for another key is another request
	f.put("r/j");
	v1::DelRequest j = del_request("r/j", 77);
	a.Clear();
	assert_true(f.leader->Del(kApp, &j, &a).ok());
	assert_int_equal(a.versions(), 1);

	// a retry while the first attempt's record is in flight waits for it
	f.put("r/m");
	f.gate->close_gate();
	v1::DelRequest m = del_request("r/m", 79);
	auto del_m = [&](uint64_t *n) {
		v1::DelResponse r;
		grpc::Status st = f.leader->Del(kApp, &m, &r);
		*n = r.versions();
		return st;
	};
	Call del, retry;
	del.run(del_m);
	assert_true(f.gate->await_waiting());
	retry.run(del_m);
	settle();
	bool early = retry.done;
	f.gate->open_gate();
	del.join();
	retry.join();
	assert_false(early);
	assert_true(del.status.ok());
	assert_true(retry.status.ok());
	assert_int_equal(retry.value, 1);

	// the next leader, from the log, answers the retry the same way
	Fx next(f.gate->entries);
	a.Clear();
	assert_true(next.leader->Del(kApp, &first, &a).ok());
	assert_int_equal(a.versions(), 2);
	assert_int_equal(next.leader->Del(kApp, &other, &a).error_code(), grpc::StatusCode::NOT_FOUND);
}

// The wall clock as the master would read it: the real one, stepped by
// wall_step_ns (a test's NTP step).
std::atomic<int64_t> wall_step_ns{ 0 };
int64_t stepped_wall_clock()
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec + wall_step_ns.load();
}

// Until the GC loop has finished two more passes (a hang guard of a
// minute; the verdicts are on what the passes did).
void await_gc_passes(Fx &f)
{
	uint64_t want = f.leader->gc_rounds() + 2;
	for (int i = 0; i < 6000 && f.leader->gc_rounds() < want; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	assert_true(f.leader->gc_rounds() >= want);
}

// A step of the master's wall clock (an NTP step, date -s) moves none of
// its deadlines: a put begun before a step of ten minutes forward is
// not expired by it, and commits.  (Leases and TTLs are instants on the
// same clock.)
void test_wall_clock_step(void **)
{
	set_wall_clock_for_test(stepped_wall_clock);
	Fx f({}, [](Options &o) { o.gc_ms = 50; });
	uint64_t v = 0;
	assert_true(f.try_put_start("s/k", 100, &v).ok());
	wall_step_ns = 600LL * 1000 * 1000 * 1000;
	await_gc_passes(f);
	grpc::Status s = f.put_commit("s/k", v, 100);
	wall_step_ns = 0;
	set_wall_clock_for_test(nullptr);
	if (!s.ok())
		fail_msg("a put across a step of the wall clock: %s", s.error_message().c_str());
	uint64_t got = 0;
	assert_true(f.get("s/k", &got).ok());
	assert_int_equal(got, v);
}

// A delete's retry after more deletes than the old count-bounded window
// held (4096; one BatchDel could fill it) still gets the first answer,
// and leaves alone the put acknowledged after the first attempt: the
// window is one of time now.
void test_del_retry_after_many_dels(void **)
{
	// (the GC frees the deleted versions' space as the test goes)
	Fx f({}, [](Options &o) { o.gc_ms = 50; });
	f.put("w/k");
	v1::DelRequest first = del_request("w/k", 500);
	v1::DelResponse a;
	assert_true(f.leader->Del(kApp, &first, &a).ok());
	assert_int_equal(a.versions(), 1);
	for (int i = 0; i < 4100; i++) {
		std::string key = "w/o" + std::to_string(i);
		uint64_t v = 0;
		grpc::Status st;
		for (int k = 0; k < 400; k++) {
			st = f.try_put_start(key, 100, &v);
			if (st.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(25));
		}
		assert_true(st.ok());
		assert_true(f.put_commit(key, v, 100).ok());
		v1::DelRequest q = del_request(key, 1000 + static_cast<uint64_t>(i));
		assert_true(f.leader->Del(kApp, &q, &a).ok());
	}
	uint64_t v = f.put("w/k");
	a.Clear();
	assert_true(f.leader->Del(kApp, &first, &a).ok());
	assert_int_equal(a.versions(), 1);
	uint64_t got = 0;
	assert_true(f.get("w/k", &got).ok());
	assert_int_equal(got, v);
}

// Past the number of deletes a master remembers within its retry window,
// a delete with a request id is refused, and deletes nothing; one
// without an id (no retry can come) is not.
void test_del_refused_when_remembered_full(void **)
{
	Fx f({}, [](Options &o) { o.limits.recent_dels = 2; });
	for (int i = 0; i < 3; i++)
		f.put("f/" + std::to_string(i));
	v1::DelResponse a;
	for (int i = 0; i < 2; i++) {
		v1::DelRequest q = del_request("f/" + std::to_string(i), 10 + static_cast<uint64_t>(i));
		assert_true(f.leader->Del(kApp, &q, &a).ok());
	}
	v1::DelRequest q = del_request("f/2", 12);
	grpc::Status s = f.leader->Del(kApp, &q, &a);
	assert_int_equal(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
	assert_non_null(strstr(s.error_message().c_str(), "deletes of the last"));
	uint64_t got = 0;
	assert_true(f.get("f/2", &got).ok());
	// the retries of the remembered ones are still answered
	v1::DelRequest r0 = del_request("f/0", 10);
	assert_true(f.leader->Del(kApp, &r0, &a).ok());
	v1::DelRequest plain = del_request("f/2", 0);
	assert_true(f.leader->Del(kApp, &plain, &a).ok());
}

// A retried PutStart (the same request id: its answer was lost) gets the
// pending put it began, from this leader and from the next one, not a
// second version holding space until the put timeout; another id is
// another put.
void test_retried_put_start_same_put(void **)
{
	Fx f;
	auto counted = std::make_shared<Metrics>();
	f.leader->set_metrics(counted);
	v1::PutStartRequest q = put_start_request(f.client, "p/k", 1000);
	q.set_request_id(55);
	v1::PutStartResponse a1, a2;
	assert_true(f.leader->PutStart(kApp, &q, &a1).ok());
	assert_int_equal(counted->retries.load(), 0);
	assert_true(f.leader->PutStart(kApp, &q, &a2).ok());
	assert_int_equal(counted->retries.load(), 1);	// told apart, and counted
	assert_int_equal(a2.version(), a1.version());
	assert_int_equal(a2.deadline_ns(), a1.deadline_ns());
	assert_string_equal(a2.replicas(0).SerializeAsString().c_str(),
			    a1.replicas(0).SerializeAsString().c_str());
	assert_int_equal(a2.replicas_size(), a1.replicas_size());

	// the next leader, from the log
	Fx next(f.gate->entries);
	v1::PutStartResponse a3;
	assert_true(next.leader->PutStart(kApp, &q, &a3).ok());
	assert_int_equal(a3.version(), a1.version());
	// another request is another put: the retries took no number
	v1::PutStartRequest other = put_start_request(next.client ? next.client : f.client, "p/k", 1000);
	other.set_request_id(56);
	v1::PutStartResponse a4;
	assert_true(next.leader->PutStart(kApp, &other, &a4).ok());
	assert_int_equal(a4.version(), a1.version() + 1);
	// once committed, it is no longer pending
	assert_true(next.put_commit("p/k", a1.version()).ok());
}

// Eviction's tests: leases of 50 ms, and no background eviction unless
// a test asks for it (high watermark 100).
void short_leases(Options &o)
{
	o.limits.get_lease_ns = 50 * 1000 * 1000;
	o.high_watermark_pct = 100;
	o.low_watermark_pct = 90;
}

uint64_t master_evictions(Fx &f)
{
	v1::MasterInfoRequest q;
	v1::MasterInfoResponse a;
	assert_true(f.leader->MasterInfo(kApp, &q, &a).ok());
	return a.evictions();
}

constexpr uint64_t k16M = 16 << 20;

// A full pool: the put evicts the least recently used object, not the
// one read since; its answer, and a Get of the victim, wait until the
// eviction is durable.
void test_full_pool_put_evicts(void **)
{
	Fx f({}, short_leases);
	f.put("a", k16M);
	f.put("b", k16M);
	f.put("c", k16M);
	f.put("d", k16M);
	uint64_t got = 0;
	assert_true(f.get("a", &got).ok());	// a is the newest use now
	std::this_thread::sleep_for(std::chrono::milliseconds(100));	// its lease ends
	assert_int_equal(master_evictions(f), 0);

	f.gate->close_gate();
	Call put, get_b;
	put.run([&](uint64_t *v) { return f.try_put_start("e", k16M, v); });
	assert_true(f.gate->await_waiting());
	get_b.run([&](uint64_t *v) { return f.get("b", v); });
	settle();
	bool early_put = put.done, early_get = get_b.done;
	f.gate->open_gate();
	put.join();
	get_b.join();
	assert_false(early_put);
	assert_false(early_get);
	if (!put.status.ok())
		fail_msg("put into a full pool: %s", put.status.error_message().c_str());
	assert_int_equal(get_b.status.error_code(), grpc::StatusCode::NOT_FOUND);
	assert_true(f.get("a", &got).ok());
	assert_true(f.get("c", &got).ok());
	assert_int_equal(master_evictions(f), 1);
	// the Evict is in the log, before the put it made room for
	int evict_at = -1, put_at = -1, n = 0;
	for (const auto &e : f.gate->entries) {
		lg::LogEntry le;
		assert_true(le.ParseFromString(e));
		for (const auto &rec : le.records()) {
			if (rec.has_evict() && rec.evict().key() == "b")
				evict_at = n;
			if (rec.has_put_start() && rec.put_start().key() == "e")
				put_at = n;
			n++;
		}
	}
	assert_true(evict_at >= 0);
	assert_true(evict_at < put_at);
}

// A put that needs the room of many objects takes eviction's candidates
// a batch at a time, in order, across batches: exactly as many as its
// size needs, the least recently used, not the one read since.
void test_full_pool_put_evicts_many(void **)
{
	Fx f({}, short_leases);
	constexpr uint64_t k256K = 256 << 10;
	const int n = static_cast<int>(4 * k16M / k256K);	// the pool, full
	for (int i = 0; i < n; i++)
		f.put("o" + std::to_string(1000 + i), k256K);
	uint64_t got = 0;
	assert_true(f.get("o1000", &got).ok());	// the oldest is the newest use now
	std::this_thread::sleep_for(std::chrono::milliseconds(100));	// its lease ends
	uint64_t v = 0;
	grpc::Status s = f.try_put_start("big", 2 * k16M, &v);
	if (!s.ok())
		fail_msg("a put that needs %d evictions: %s", n / 2, s.error_message().c_str());
	assert_int_equal(master_evictions(f), n / 2);
	assert_true(f.get("o1000", &got).ok());
	for (int i = 1; i <= n / 2; i++)
		assert_int_equal(f.get("o" + std::to_string(1000 + i), &got).error_code(),
				 grpc::StatusCode::NOT_FOUND);
	assert_true(f.get("o" + std::to_string(1000 + n / 2 + 1), &got).ok());
}

// Nothing may go (every object leased by a get): ENOSPC that says so;
// --evict off: ENOSPC without evicting anything.
void test_full_pool_nothing_evictable(void **)
{
	for (bool evict : { true, false }) {
		Fx f({}, [evict](Options &o) {
			o.evict = evict;
			o.high_watermark_pct = 100;
			o.low_watermark_pct = 90;
		});
		uint64_t got = 0, v = 0;
		for (const char *k : { "a", "b", "c", "d" }) {
			f.put(k, k16M);
			assert_true(f.get(k, &got).ok());	// leased for 10 s
		}
		grpc::Status s = f.try_put_start("e", k16M, &v);
		assert_int_equal(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
		const std::string &m = s.error_message();
		if (evict && m.find("nothing to evict: 4 held by readers' leases") == std::string::npos)
			fail_msg("the error does not say what holds the pool: %s", m.c_str());
		if (!evict && m.find("no segment has room") == std::string::npos)
			fail_msg("--evict off: %s", m.c_str());
		assert_int_equal(master_evictions(f), 0);
		// an object no segment could hold even empty evicts nothing
		s = f.try_put_start("huge", 4 * k16M + 1, &v);
		assert_int_equal(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
		assert_int_equal(master_evictions(f), 0);
	}
}

// A new leader evicts nothing until the old one's read leases ran out:
// a put that needs room waits that long, then evicts.
void test_new_leader_waits_for_old_leases(void **)
{
	auto lease_400ms = [](Options &o) {
		short_leases(o);
		o.limits.get_lease_ns = 400 * 1000 * 1000;
	};
	Fx f({}, lease_400ms);
	for (const char *k : { "a", "b", "c", "d" })
		f.put(k, k16M);
	f.leader->stop();
	Fx next(f.gate->entries, lease_400ms);
	next.client = f.client;
	uint64_t v = 0;
	auto t0 = std::chrono::steady_clock::now();
	grpc::Status s = next.try_put_start("e", k16M, &v);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			  std::chrono::steady_clock::now() - t0).count();
	if (!s.ok())
		fail_msg("put after a takeover: %s", s.error_message().c_str());
	if (ms < 200)
		fail_msg("the new leader evicted %lld ms after taking over (leases: 400 ms)",
			 static_cast<long long>(ms));
	assert_int_equal(master_evictions(next), 1);
	uint64_t got = 0;
	assert_int_equal(next.get("a", &got).error_code(), grpc::StatusCode::NOT_FOUND);
}

// The GC loop keeps the pool under the high watermark: down to the low
// one (here one object), oldest unpinned first.
void test_watermarks_evict_in_background(void **)
{
	Fx f({}, [](Options &o) {
		o.limits.get_lease_ns = 50 * 1000 * 1000;
		o.high_watermark_pct = 60;
		o.low_watermark_pct = 50;
		o.gc_ms = 50;
	});
	{
		// the oldest, soft-pinned: it stays although the oldest
		v1::PutStartRequest q = put_start_request(f.client, "pinned", k16M);
		v1::PutStartResponse a;
		q.mutable_config()->set_soft_pin(true);
		assert_true(f.leader->PutStart(kApp, &q, &a).ok());
		assert_true(a.attrs());
		assert_true(f.put_commit("pinned", a.version(), k16M).ok());
	}
	f.put("a", k16M);
	f.put("b", k16M);	// 75%: over the high watermark
	for (int i = 0; i < 100 && master_evictions(f) < 1; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	uint64_t got = 0;
	assert_int_equal(f.get("a", &got).error_code(), grpc::StatusCode::NOT_FOUND);
	assert_true(f.get("b", &got).ok());
	assert_true(f.get("pinned", &got).ok());
	// 50% now, the low watermark: nothing more goes
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	assert_int_equal(master_evictions(f), 1);
}


// ---- removing resources: drains with a deadline, reclaiming segments
// whose owner is gone.  No data moves here (no module): a copy fails,
// as one whose target does not answer does, and is tried again.

// Another client (node kNode + n) with a segment: somewhere to move to.
uint64_t second_client(Fx &f, uint64_t *segment, uint32_t n = 1)
{
	v1::RegisterClientRequest rq = client_request();
	rq.mutable_self()->set_node_id(kNode + n);
	v1::RegisterClientResponse ra;
	assert_true(f.leader->RegisterClient(kApp, &rq, &ra).ok());
	v1::RegisterSegmentRequest sq = segment_request(ra.client_id());
	sq.mutable_desc()->set_node_id(kNode + n);
	// on its own node, as the top 16 bits say
	sq.mutable_desc()->set_gaddr((static_cast<uint64_t>(kNode + n) << 48) |
				     (static_cast<uint64_t>(n) << 36));
	v1::RegisterSegmentResponse sa;
	assert_true(f.leader->RegisterSegment(kApp, &sq, &sa).ok());
	*segment = sa.segment_id();
	return ra.client_id();
}

std::map<uint64_t, v1::SegmentDesc> segments(Fx &f)
{
	v1::SegmentListRequest q;
	v1::SegmentListResponse a;
	assert_true(f.leader->SegmentList(kApp, &q, &a).ok());
	std::map<uint64_t, v1::SegmentDesc> out;
	for (const auto &d : a.segments())
		out[d.id()] = d;
	return out;
}

uint64_t own_segment(Fx &f)
{
	for (const auto &[id, d] : segments(f))
		if (d.owner() == f.client)
			return id;
	fail_msg("client %llu has no segment", static_cast<unsigned long long>(f.client));
	return 0;
}

// A put of one DRAM replica; local: on f.client's own segment.  The
// segment its replica went to.
uint64_t put_on(Fx &f, const std::string &key, bool local)
{
	v1::PutStartRequest q = put_start_request(f.client, key, 1000);
	q.mutable_config()->set_prefer_local(local);
	v1::PutStartResponse a;
	grpc::Status s = f.leader->PutStart(kApp, &q, &a);
	if (!s.ok())
		fail_msg("put start %s: %s", key.c_str(), s.error_message().c_str());
	assert_true(f.put_commit(key, a.version()).ok());
	return a.replicas(0).shards(0).segment_id();
}

// The client leaves without draining.
void leave(Fx &f, uint64_t client)
{
	v1::LeaveRequest q;
	v1::LeaveResponse a;
	q.set_client_id(client);
	assert_true(f.leader->Leave(kApp, &q, &a).ok());
}

// Where a Get of key reads from (its first replica's first shard).
uint64_t read_from(Fx &f, const std::string &key)
{
	v1::GetRequest q = get_request(key);
	v1::GetResponse a;
	grpc::Status s = f.leader->Get(kApp, &q, &a);
	if (!s.ok())
		fail_msg("get %s: %s", key.c_str(), s.error_message().c_str());
	assert_true(a.object().replicas_size() > 0);
	return a.object().replicas(0).shards(0).segment_id();
}

bool contains(const std::string &hay, const std::string &needle)
{
	return hay.find(needle) != std::string::npos;
}

// A drain that cannot finish stops at its deadline with DEADLINE_EXCEEDED
// saying what moved and what remains; the segment stays DRAINING, still
// its owner's, the replica readable there, nothing new placed on it; a
// RegisterSegment takes it back into service.
void test_drain_deadline(void **)
{
	Fx f({}, [](Options &o) { o.gc_ms = 50; });
	uint64_t other = 0;
	second_client(f, &other);
	uint64_t seg = own_segment(f);
	assert_int_equal(put_on(f, "k", true), seg);

	v1::UnregisterSegmentRequest q;
	v1::UnregisterSegmentResponse a;
	q.set_client_id(f.client);
	q.set_segment_id(seg);
	q.set_drain(true);
	q.set_deadline_ms(500);
	auto t0 = std::chrono::steady_clock::now();
	grpc::Status s = f.leader->UnregisterSegment(kApp, &q, &a);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			  std::chrono::steady_clock::now() - t0).count();
	assert_int_equal(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
	if (!contains(s.error_message(), "0 replicas moved, 1 remain"))
		fail_msg("the error does not count: %s", s.error_message().c_str());
	if (ms < 450 || ms > 5000)
		fail_msg("a drain of deadline 500 ms ended after %lld ms", static_cast<long long>(ms));
	auto segs = segments(f);
	assert_true(segs.count(seg));
	assert_int_equal(segs[seg].state(), v1::SEGMENT_DRAINING);
	assert_int_equal(segs[seg].owner(), f.client);
	assert_int_equal(read_from(f, "k"), seg);
	assert_int_equal(put_on(f, "new", true), other);

	// again: the same answer (nothing lost meanwhile)
	s = f.leader->UnregisterSegment(kApp, &q, &a);
	assert_int_equal(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
	assert_int_equal(read_from(f, "k"), seg);

	v1::RegisterSegmentRequest sq = segment_request(f.client);
	v1::RegisterSegmentResponse sa;
	assert_true(f.leader->RegisterSegment(kApp, &sq, &sa).ok());
	assert_int_equal(sa.segment_id(), seg);
	assert_int_equal(segments(f)[seg].state(), v1::SEGMENT_ALIVE);
	assert_int_equal(put_on(f, "again", true), seg);

	// Leave with a drain past its deadline: the client stays
	v1::LeaveRequest lq;
	v1::LeaveResponse la;
	lq.set_client_id(f.client);
	lq.set_drain(true);
	lq.set_deadline_ms(300);
	s = f.leader->Leave(kApp, &lq, &la);
	assert_int_equal(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
	if (!contains(s.error_message(), "did not leave"))
		fail_msg("%s", s.error_message().c_str());
	v1::HeartbeatRequest hq;
	v1::HeartbeatResponse ha;
	hq.set_client_id(f.client);
	assert_true(f.leader->Heartbeat(kApp, &hq, &ha).ok());
}

// dsmaster's service on loopback (plaintext: everyone an admin) over f's
// leader, for the Watch stream.
struct Served {
	Options o;	// MasterService keeps a reference
	std::unique_ptr<MasterService> svc;
	std::unique_ptr<grpc::Server> server;
	std::unique_ptr<v1::Master::Stub> stub;
	std::string addr;

	explicit Served(Fx &f)
	{
		o = f.opts;
		o.tls.insecure = true;
		svc = std::make_unique<MasterService>(o);
		svc->set_leader(f.leader);
		int port = 0;
		grpc::ServerBuilder b;
		b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
		b.RegisterService(svc.get());
		server = b.BuildAndStart();
		assert_true(port > 0);
		addr = "127.0.0.1:" + std::to_string(port);
		stub = v1::Master::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
	}
	~Served() { server->Shutdown(); }
};

// A client's Watch stream, read in a thread until segment id is removed.
struct Watching {
	grpc::ClientContext ctx;
	std::vector<v1::Event> events;
	std::atomic<bool> joined{ false };	// a member_joined came: the stream is up
	std::thread t;

	Watching(v1::Master::Stub *stub, uint64_t client, uint64_t id)
	{
		ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
		t = std::thread([this, stub, client, id] {
			v1::WatchRequest q;
			q.set_client_id(client);
			auto r = stub->Watch(&ctx, q);
			v1::Event ev;
			while (r->Read(&ev)) {
				if (ev.has_member_joined()) {
					joined = true;
					continue;
				}
				events.push_back(ev);
				if (ev.has_segment_removed() && ev.segment_removed().id() == id)
					break;
			}
			ctx.TryCancel();
			r->Finish();
		});
	}
	~Watching() { ctx.TryCancel(); if (t.joinable()) t.join(); }
	void join() { t.join(); }
	// the index of the first event about segment id of that kind (-1)
	int find(v1::Event::EvCase kind, uint64_t id) const
	{
		for (size_t i = 0; i < events.size(); i++) {
			const v1::Event &e = events[i];
			if (e.ev_case() != kind)
				continue;
			const v1::SegmentDesc &d = kind == v1::Event::kSegmentDraining ? e.segment_draining()
											: e.segment_removed();
			if (d.id() == id)
				return static_cast<int>(i);
		}
		return -1;
	}
};

// Seen by a monitor through the C ABI (ds_store_watch, dsctl master
// monitor's): the kinds of the events about segment id, until removed.
struct Monitor {
	uint64_t id;
	std::vector<uint32_t> kinds;
	std::vector<uint32_t> states;
	int ret = 1;
	std::atomic<bool> joined{ false };
	std::thread t;

	Monitor(const std::string &addr, uint64_t seg) : id(seg)
	{
		t = std::thread([this, addr] {
			char err[256] = "";
			ret = ds_store_watch(addr.c_str(), 20000, on_event, this, err, sizeof(err));
			if (ret)
				print_error("ds_store_watch: %d %s\n", ret, err);
		});
	}
	static int on_event(const ds_store_event *ev, void *arg)
	{
		auto *m = static_cast<Monitor *>(arg);
		if (ev->type == DS_STORE_EV_MEMBER_JOINED)
			m->joined = true;
		if (ev->type < DS_STORE_EV_SEGMENT_SETUP || ev->segment.id != m->id)
			return 0;
		m->kinds.push_back(ev->type);
		m->states.push_back(ev->segment.state);
		return ev->type == DS_STORE_EV_SEGMENT_REMOVED;
	}
	void join() { t.join(); }
	~Monitor()
	{
		if (t.joinable())
			t.join();
	}
};

// The others see a drain: segment_draining (state DRAINING) on each
// client's Watch stream and a monitor's, then segment_removed once it is
// empty.  Through the C ABI (ds_store_segment_drain, dsctl master drain's).
void test_drain_event_then_removed(void **)
{
	Fx f({}, [](Options &o) { o.gc_ms = 50; });
	uint64_t other = 0;
	uint64_t c2 = second_client(f, &other);
	uint64_t seg = own_segment(f);
	Served m(f);
	setenv("DSMEM_STORE_INSECURE", "1", 1);
	Watching w(m.stub.get(), c2, seg);
	Monitor mon(m.addr, seg);
	// their streams are up once a client that joins is seen on both
	for (int i = 0; i < 100 && !(w.joined && mon.joined); i++) {
		v1::RegisterClientRequest rq = client_request();
		rq.mutable_self()->set_node_id(kNode + 10 + i);
		v1::RegisterClientResponse ra;
		assert_true(f.leader->RegisterClient(kApp, &rq, &ra).ok());
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	assert_true(w.joined && mon.joined);

	uint64_t moved = 99;
	char err[512] = "";
	int ret = ds_store_segment_drain(m.addr.c_str(), seg, 5000, &moved, err, sizeof(err));
	if (ret)
		fail_msg("drain: %d %s", ret, err);
	assert_int_equal(moved, 0);
	w.join();
	mon.join();
	unsetenv("DSMEM_STORE_INSECURE");
	int draining = w.find(v1::Event::kSegmentDraining, seg);
	int removed = w.find(v1::Event::kSegmentRemoved, seg);
	if (draining < 0 || removed < 0)
		fail_msg("events seen: %zu, draining at %d, removed at %d", w.events.size(), draining,
			 removed);
	assert_true(draining < removed);
	assert_int_equal(w.events[draining].segment_draining().state(), v1::SEGMENT_DRAINING);
	assert_int_equal(mon.ret, 0);
	assert_int_equal(mon.kinds.size(), 2);
	assert_int_equal(mon.kinds[0], DS_STORE_EV_SEGMENT_DRAINING);
	assert_int_equal(mon.states[0], v1::SEGMENT_DRAINING);
	assert_int_equal(mon.kinds[1], DS_STORE_EV_SEGMENT_REMOVED);
	assert_false(segments(f).count(seg));
	// gone: a drain of it says so
	ret = ds_store_segment_drain(m.addr.c_str(), seg, 5000, &moved, err, sizeof(err));
	assert_int_equal(ret, -ENOENT);
}

// Until pred() or about ms pass; whether pred() held.
template <typename Pred>
bool within(int ms, Pred pred)
{
	for (int i = 0; i < ms / 10; i++) {
		if (pred())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return pred();
}

// No ownerless segment: one whose owner left without draining is the
// master's at once (DRAINING, no owner, reclaimed: nothing new lands
// there) and read from while it is reclaimed.  Here its replica cannot
// move (no module moves data): long past --drain-timeout-ms it is still
// DRAINING and read from, never declared dead (it holds the version's
// last copy); once that version is deleted it is empty and removed.
void test_leave_without_drain_reclaimed(void **)
{
	Fx f({}, [](Options &o) {
		o.gc_ms = 50;
		o.drain_timeout_ms = 300;
		o.limits.get_lease_ns = 100LL * 1000 * 1000;	// read_from's Get
	});
	uint64_t other = 0;
	uint64_t c2 = second_client(f, &other);
	uint64_t seg = own_segment(f);
	assert_int_equal(put_on(f, "k", true), seg);
	leave(f, f.client);
	auto segs = segments(f);
	assert_true(segs.count(seg));
	assert_int_equal(segs[seg].owner(), 0);
	assert_int_equal(segs[seg].state(), v1::SEGMENT_DRAINING);
	assert_true(segs[seg].reclaimed());
	f.client = c2;
	assert_int_equal(put_on(f, "new", false), other);

	std::this_thread::sleep_for(std::chrono::milliseconds(1200));
	segs = segments(f);
	if (!segs.count(seg) || segs[seg].state() != v1::SEGMENT_DRAINING)
		fail_msg("a reclaimed segment holding a version's last copy was not kept draining");
	assert_int_equal(read_from(f, "k"), seg);
	// that version gone, nothing is left on it: removed
	v1::DelRequest d = del_request("k", 0);
	v1::DelResponse da;
	assert_true(f.leader->Del(kApp, &d, &da).ok());
	assert_true(within(5000, [&] { return !segments(f).count(seg); }));
	for (const auto &[id, sd] : segments(f))
		assert_int_equal(sd.owner(), c2);
}

// An empty segment whose owner left goes at once, well within the
// drain timeout.
void test_leave_empty_segment_removed(void **)
{
	Fx f({}, [](Options &o) {
		o.gc_ms = 50;
		o.drain_timeout_ms = 5000;
	});
	uint64_t seg = own_segment(f);
	auto t0 = std::chrono::steady_clock::now();
	leave(f, f.client);
	assert_true(within(5000, [&] { return !segments(f).count(seg); }));
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			  std::chrono::steady_clock::now() - t0).count();
	if (ms >= 2500)
		fail_msg("an empty segment whose owner left stayed %lld ms", static_cast<long long>(ms));
}

// A client that left comes back and mounts its segment again while the
// master reclaims it: the segment is its again (ALIVE, no longer
// reclaimed), and stays so long past the drain timeout, its replica
// read from there and new replicas placed there.
void test_remount_during_reclaim(void **)
{
	Fx f({}, [](Options &o) {
		o.gc_ms = 50;
		o.drain_timeout_ms = 300;
	});
	uint64_t seg = own_segment(f);
	assert_int_equal(put_on(f, "k", true), seg);
	leave(f, f.client);
	assert_true(segments(f)[seg].reclaimed());
	std::this_thread::sleep_for(std::chrono::milliseconds(200));	// a reclaim pass or two

	v1::RegisterClientRequest rq = client_request();
	v1::RegisterClientResponse ra;
	assert_true(f.leader->RegisterClient(kApp, &rq, &ra).ok());
	f.client = ra.client_id();
	v1::RegisterSegmentRequest sq = segment_request(f.client);
	v1::RegisterSegmentResponse sa;
	assert_true(f.leader->RegisterSegment(kApp, &sq, &sa).ok());
	assert_int_equal(sa.segment_id(), seg);
	assert_true(sa.remounted());

	std::this_thread::sleep_for(std::chrono::milliseconds(1200));
	auto segs = segments(f);
	if (!segs.count(seg))
		fail_msg("a segment remounted during its reclaim was removed");
	assert_int_equal(segs[seg].state(), v1::SEGMENT_ALIVE);
	assert_false(segs[seg].reclaimed());
	assert_int_equal(segs[seg].owner(), f.client);
	assert_int_equal(read_from(f, "k"), seg);
	assert_int_equal(put_on(f, "k2", true), seg);
}

// What the pool owns is not reclaimed: an NVMe-oF namespace an admin
// added (no owner, by design), one an admin added for a client that then
// left, and a DRAM segment an admin added for no client stay ALIVE and
// take replicas, long past the drain timeout.
void test_pool_segments_not_reclaimed(void **)
{
	const Caller admin{ "root", true };
	Fx f({}, [](Options &o) {
		o.gc_ms = 50;
		o.drain_timeout_ms = 300;
	});
	auto nvme = [&](uint64_t client, uint64_t base) {
		v1::RegisterSegmentRequest q;
		q.set_client_id(client);
		q.mutable_desc()->set_type(v1::SEGMENT_NVMEOF);
		q.mutable_desc()->set_size(64ull << 20);
		q.mutable_desc()->set_traddr("10.99.0.1");
		q.mutable_desc()->set_trsvcid(4420);
		q.mutable_desc()->set_subnqn("nqn.2026-11.io.dsmem:test");
		q.mutable_desc()->set_base(base);
		v1::RegisterSegmentResponse a;
		grpc::Status st = f.leader->RegisterSegment(admin, &q, &a);
		if (!st.ok())
			fail_msg("nvmeof register: %s", st.error_message().c_str());
		return a.segment_id();
	};
	uint64_t pool_nvme = nvme(0, 0), client_nvme = nvme(f.client, 64ull << 20);
	v1::RegisterSegmentRequest dq = segment_request(0);
	dq.mutable_desc()->set_gaddr(kGaddr + (1ull << 40));
	v1::RegisterSegmentResponse da;
	assert_true(f.leader->RegisterSegment(admin, &dq, &da).ok());
	uint64_t pool_dram = da.segment_id();

	leave(f, f.client);
	std::this_thread::sleep_for(std::chrono::milliseconds(1200));
	auto segs = segments(f);
	for (uint64_t id : { pool_nvme, client_nvme, pool_dram }) {
		if (!segs.count(id))
			fail_msg("pool segment %llu was removed", static_cast<unsigned long long>(id));
		assert_int_equal(segs[id].state(), v1::SEGMENT_ALIVE);
		assert_false(segs[id].reclaimed());
	}
	assert_int_equal(segs[client_nvme].owner(), 0);
}

// A client that dies (no heartbeats): its segment turns DEAD and stays
// for --drain-timeout-ms, its owner's to remount (a restarted client
// reads its replicas again); then, nothing on it, it is removed.
void test_dead_owner_segment_removed(void **)
{
	Fx f({}, [](Options &o) {
		o.gc_ms = 50;
		o.heartbeat_ms = 50;
		o.heartbeat_timeout_ms = 300;
		o.drain_timeout_ms = 1500;
	});
	uint64_t seg = own_segment(f);
	assert_true(within(3000, [&] { return segments(f)[seg].state() == v1::SEGMENT_DEAD; }));
	auto t0 = std::chrono::steady_clock::now();
	assert_true(within(6000, [&] { return !segments(f).count(seg); }));
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			  std::chrono::steady_clock::now() - t0).count();
	if (ms < 1000)
		fail_msg("a dead segment went %lld ms after its owner died, before its grace",
			 static_cast<long long>(ms));
}

// ---- salvage: the replicas a dead segment took away, kept while its
// owner may come back.  They are part of the logged state: a leader that
// replays the log (after a failover, or a restarted master) holds the
// same salvage as the one that wrote it.

const Caller kAdmin{ "admin", true };

// What a leader leaves in its log when the owner of the one segment that
// holds version *ver of "k" dies (no heartbeat): the segment DEAD, the
// replica salvage.  *seg the segment, *was the replica.
std::vector<std::string> log_with_salvage(uint64_t *seg, uint64_t *ver, v1::Replica *was)
{
	Fx f({}, [](Options &o) {
		o.heartbeat_ms = 50;
		o.heartbeat_timeout_ms = 300;
		o.evict = false;
	});
	*seg = own_segment(f);
	*ver = f.put("k");
	v1::GetRequest q = get_request("k");
	v1::GetResponse a;
	assert_true(f.leader->Get(kApp, &q, &a).ok());
	assert_int_equal(a.object().replicas_size(), 1);
	*was = a.object().replicas(0);
	assert_true(within(10000, [&] { return segments(f)[*seg].state() == v1::SEGMENT_DEAD; }));
	// this leader holds the salvage: its place stays taken
	assert_int_equal(used_of(*f.leader)[*seg], OffsetAllocator::round(1000));
	uint64_t v = 0;
	assert_false(f.get("k", &v).ok());	// no replica to read now
	f.leader->stop();
	return f.gate->entries;
}

// The owner's node comes back with the same memory: a new client
// remounts the segment.
uint64_t come_back(Fx &f, uint64_t seg)
{
	v1::RegisterClientRequest rq = client_request();
	v1::RegisterClientResponse ra;
	assert_true(f.leader->RegisterClient(kApp, &rq, &ra).ok());
	f.client = ra.client_id();
	v1::RegisterSegmentRequest sq = segment_request(f.client);
	v1::RegisterSegmentResponse sa;
	assert_true(f.leader->RegisterSegment(kApp, &sq, &sa).ok());
	assert_true(sa.remounted());
	assert_int_equal(sa.segment_id(), seg);
	return f.client;
}

// A MasterState replaying a leader's log entries.
std::unique_ptr<MasterState> replay_entries(const std::vector<std::string> &entries)
{
	auto st = std::make_unique<MasterState>(Limits());
	std::string err;
	for (const auto &e : entries) {
		lg::LogEntry le;
		assert_true(le.ParseFromString(e));
		for (const auto &r : le.records())
			if (st->apply(r, &err))
				fail_msg("replay: %s", err.c_str());
	}
	return st;
}

// A new leader (replaying the log) re-adopts the salvage when the segment
// is remounted: the version is readable where it was, as the leader that
// saw the owner die would have made it (before, the replay freed the
// salvage, and the version had no replica for ever: ENODATA).
void test_salvage_readopted_after_replay(void **)
{
	uint64_t seg, ver;
	v1::Replica was;
	std::vector<std::string> entries = log_with_salvage(&seg, &ver, &was);

	Fx f(entries, [](Options &o) { o.evict = false; });
	assert_int_equal(segments(f)[seg].state(), v1::SEGMENT_DEAD);
	come_back(f, seg);
	v1::GetRequest q = get_request("k");
	v1::GetResponse a;
	grpc::Status s = f.leader->Get(kApp, &q, &a);
	if (!s.ok())
		fail_msg("get after the remount: %s", s.error_message().c_str());
	assert_int_equal(a.object().version(), ver);
	assert_int_equal(a.object().replicas_size(), 1);
	assert_string_equal(a.object().replicas(0).SerializeAsString().c_str(),
			    was.SerializeAsString().c_str());
	// and so does a leader replaying this leader's log
	f.leader->stop();
	auto st = replay_entries(f.gate->entries);
	assert_true(st->salvage().empty());
	assert_int_equal(st->newest("k")->replicas.size(), 1);
}

// A new leader keeps the salvage's place taken: a put on the remounted
// segment does not land on the bytes still to be read (before, the replay
// freed them, and the first put after the remount took them).
void test_salvage_held_after_replay(void **)
{
	uint64_t seg, ver;
	v1::Replica was;
	std::vector<std::string> entries = log_with_salvage(&seg, &ver, &was);

	Fx f(entries, [](Options &o) { o.evict = false; });
	assert_int_equal(used_of(*f.leader)[seg], OffsetAllocator::round(1000));
	come_back(f, seg);
	for (int i = 0; i < 4; i++) {
		std::string key = "n" + std::to_string(i);
		assert_int_equal(put_on(f, key, true), seg);
		v1::GetRequest q = get_request(key);
		v1::GetResponse a;
		assert_true(f.leader->Get(kApp, &q, &a).ok());
		if (overlaps(a.object().replicas(0), was))
			fail_msg("put %s placed on the salvage of 'k'", key.c_str());
	}
	assert_int_equal(used_of(*f.leader)[seg], 5 * OffsetAllocator::round(1000));
}

// After a replay, the salvage goes as it would have on the leader that
// made it, each time by a record: with its version (deleted here), or
// with its segment (an admin removes it).  Nothing is left allocated, in
// this leader nor in a replay of its log.
void test_salvage_freed_after_replay(void **)
{
	uint64_t seg, ver;
	v1::Replica was;
	std::vector<std::string> entries = log_with_salvage(&seg, &ver, &was);
	auto tweak = [](Options &o) {
		o.evict = false;
		o.gc_ms = 50;
	};

	{
		Fx f(entries, tweak);
		assert_int_equal(used_of(*f.leader)[seg], OffsetAllocator::round(1000));
		v1::DelRequest q = del_request("k", 1);
		v1::DelResponse a;
		assert_true(f.leader->Del(kApp, &q, &a).ok());
		assert_true(within(10000, [&] { return used_of(*f.leader)[seg] == 0; }));
		f.leader->stop();
		auto st = replay_entries(f.gate->entries);
		assert_true(st->salvage().empty());
		assert_int_equal(st->segment(seg)->alloc->used(), 0);
	}
	{
		Fx f(entries, tweak);
		assert_int_equal(used_of(*f.leader)[seg], OffsetAllocator::round(1000));
		v1::UnregisterSegmentRequest q;
		v1::UnregisterSegmentResponse a;
		q.set_segment_id(seg);
		grpc::Status s = f.leader->UnregisterSegment(kAdmin, &q, &a);
		if (!s.ok())
			fail_msg("remove: %s", s.error_message().c_str());
		assert_false(segments(f).count(seg));
		f.leader->stop();
		auto st = replay_entries(f.gate->entries);
		assert_true(st->salvage().empty());
		assert_null(st->segment(seg));
	}
}

// A single master on a file log, snapshotting after every entry, restarted
// after the owner of a version's only replica died: the salvage is in its
// snapshot, so the restarted master holds its place and re-adopts it on
// the owner's remount (before, it freed it: ENODATA for ever).
void test_salvage_survives_restart(void **)
{
	char tmpl[] = "/tmp/dsstore-salvage.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	const std::string dir = std::string(tmpl) + "/meta";
	Mover mover{ kNode };
	std::string err;
	auto run = [&](uint64_t timeout_ms) {
		Options o;
		master_options(&o);
		o.heartbeat_ms = 50;
		o.heartbeat_timeout_ms = timeout_ms;
		o.evict = false;
		o.snapshot_every = 1;
		auto l = std::make_shared<Leader>(o, nullptr, &mover);
		auto log = open_file_log(dir, &err);
		if (!log)
			fail_msg("file log: %s", err.c_str());
		if (l->start(std::move(log), [](const std::string &) {}, &err))
			fail_msg("start: %s", err.c_str());
		return l;
	};
	// the state of segment seg; -1: no such segment
	auto state_of = [](Leader &l, uint64_t seg) {
		v1::SegmentListRequest q;
		v1::SegmentListResponse a;
		assert_true(l.SegmentList(kApp, &q, &a).ok());
		for (const auto &d : a.segments())
			if (d.id() == seg)
				return static_cast<int>(d.state());
		return -1;
	};
	auto join = [](Leader &l, uint64_t *seg) {
		v1::RegisterClientRequest rq = client_request();
		v1::RegisterClientResponse ra;
		assert_true(l.RegisterClient(kApp, &rq, &ra).ok());
		v1::RegisterSegmentRequest sq = segment_request(ra.client_id());
		v1::RegisterSegmentResponse sa;
		assert_true(l.RegisterSegment(kApp, &sq, &sa).ok());
		*seg = sa.segment_id();
		return ra.client_id();
	};

	uint64_t seg = 0, ver = 0;
	{
		auto l = run(300);
		uint64_t client = join(*l, &seg);
		v1::PutStartRequest pq = put_start_request(client, "k", 1000);
		v1::PutStartResponse pa;
		assert_true(l->PutStart(kApp, &pq, &pa).ok());
		ver = pa.version();
		v1::PutCommitRequest cq = put_commit_request(client, "k", ver, 1000);
		v1::PutCommitResponse ca;
		assert_true(l->PutCommit(kApp, &cq, &ca).ok());
		assert_true(within(10000, [&] { return state_of(*l, seg) == v1::SEGMENT_DEAD; }));
		assert_int_equal(used_of(*l)[seg], OffsetAllocator::round(1000));
		l->stop();
	}
	auto l = run(600000);
	assert_int_equal(state_of(*l, seg), v1::SEGMENT_DEAD);
	assert_int_equal(used_of(*l)[seg], OffsetAllocator::round(1000));
	uint64_t again = 0;
	join(*l, &again);
	assert_int_equal(again, seg);
	v1::GetRequest q = get_request("k");
	v1::GetResponse a;
	grpc::Status s = l->Get(kApp, &q, &a);
	if (!s.ok())
		fail_msg("get after the restart and remount: %s", s.error_message().c_str());
	assert_int_equal(a.object().version(), ver);
	l->stop();
	l.reset();
	std::filesystem::remove_all(tmpl);
}

// Whether the log holds the release of reservation.
bool release_logged(Fx &f, uint64_t reservation)
{
	std::lock_guard<std::mutex> g(f.gate->m);
	for (const auto &e : f.gate->entries) {
		lg::LogEntry le;
		assert_true(le.ParseFromString(e));
		for (const auto &rec : le.records())
			if (rec.has_replica_release() && rec.replica_release().id() == reservation)
				return true;
	}
	return false;
}

// The leader of term 1 was killed mid-copy without a word: term 2 keeps
// its reserved space from every put at first, and gives it back once
// the fence makes term 1's writes impossible (its lease ran out before
// term 2 was elected, and it writes no round after that: --fence-grace-ms
// after term 2 began) -- not only when an admin removes the segment.
void test_killed_leader_quarantine_released(void **)
{
	uint64_t seg[2], reservation;
	v1::Replica dst;
	std::vector<std::string> entries = log_with_reservation(seg, &dst, &reservation);
	Fx f(entries, [](Options &o) {
		o.evict = false;
		o.fence_grace_ms = 1000;
	});
	// f.quiesced stays false: term 1 never says it stopped
	std::map<uint64_t, uint64_t> used;
	assert_true(within(30000, [&] {
		used = used_of(*f.leader);
		return used[seg[0]] + used[seg[1]] == 8 << 20;
	}));
	assert_true(release_logged(f, reservation));
	// the space is a put's again
	bool on_it = false;
	for (int i = 0; i < 40 && !on_it; i++) {
		v1::PutStartRequest q;
		v1::PutStartResponse a;
		q.set_client_id(2);
		q.set_key("p" + std::to_string(i));
		q.set_size(1 << 20);
		q.mutable_config()->set_dram_replicas(1);
		if (!f.leader->PutStart(kApp, &q, &a).ok())
			break;
		for (const auto &rep : a.replicas())
			on_it |= overlaps(rep, dst);
	}
	assert_true(on_it);
}

// ---- heartbeats: a stalled master is no silent client

// A client's heartbeat thread: a beat every 50 ms until it ends; a pause
// takes effect between beats.
struct Beater {
	Fx &f;
	std::mutex m;
	std::condition_variable cv;
	bool stop = false, pause = false, idle = false;
	uint64_t ok = 0, refused = 0;	// beats answered OK, and not
	std::string refusal;		// the last refusal's message
	std::thread t;

	explicit Beater(Fx &fx) : f(fx)
	{
		t = std::thread([this] { run(); });
	}
	~Beater() { end(); }
	void end()
	{
		{
			std::lock_guard<std::mutex> g(m);
			stop = true;
		}
		cv.notify_all();
		if (t.joinable())
			t.join();
	}
	void run()
	{
		std::unique_lock<std::mutex> l(m);
		while (!stop) {
			if (pause) {
				idle = true;
				cv.notify_all();
				cv.wait(l, [&] { return stop || !pause; });
				idle = false;
				continue;
			}
			l.unlock();
			v1::HeartbeatRequest q;
			v1::HeartbeatResponse a;
			q.set_client_id(f.client);
			grpc::Status s = f.leader->Heartbeat(kApp, &q, &a);
			l.lock();
			if (s.ok()) {
				ok++;
			} else {
				refused++;
				refusal = s.error_message();
			}
			cv.notify_all();
			cv.wait_for(l, std::chrono::milliseconds(50), [&] { return stop || pause; });
		}
	}
	// Until n more beats were answered, or one refused: false if
	// neither came in 10 s.
	bool await_beats(uint64_t n)
	{
		std::unique_lock<std::mutex> l(m);
		uint64_t want = ok + n;
		return cv.wait_for(l, std::chrono::seconds(10), [&] { return ok >= want || refused; });
	}
	// No beat from now on until resume() (none is under way on return).
	bool pause_beats()
	{
		std::unique_lock<std::mutex> l(m);
		pause = true;
		cv.notify_all();
		return cv.wait_for(l, std::chrono::seconds(10), [&] { return idle; });
	}
	void resume()
	{
		std::lock_guard<std::mutex> g(m);
		pause = false;
		cv.notify_all();
	}
};

void short_heartbeats(Options &o)
{
	o.heartbeat_ms = 100;		// the monitor's round: 50 ms
	o.heartbeat_timeout_ms = 1500;
}

// Holds the master's state mutex, as a snapshot of a big state or a
// stuck log append holds it, for twice the heartbeat timeout (by the
// monotonic clock: the fault's schedule, no verdict).  Once the heartbeat
// monitor has begun a round meanwhile (it waits for the mutex), between
// runs, still under the stall.
void stall_master(Fx &f, const std::function<void()> &between)
{
	bool waiting = false;
	f.leader->with_state_held([&] {
		auto end = std::chrono::steady_clock::now() +
			   std::chrono::milliseconds(2 * f.opts.heartbeat_timeout_ms);
		uint64_t r = f.leader->heartbeat_rounds();
		waiting = within(10000, [&] { return f.leader->heartbeat_rounds() > r; });
		if (between)
			between();
		std::this_thread::sleep_until(end);
	});
	// (no cmocka failure under the mutex: it would never be unlocked)
	if (!waiting)
		fail_msg("the heartbeat monitor began no round in 10 s");
	// a round that began after the stall, and ended
	uint64_t r = f.leader->heartbeat_rounds();
	assert_true(within(10000, [&] { return f.leader->heartbeat_rounds() >= r + 2; }));
}

// The master stalls (its state mutex held) past the heartbeat timeout
// while a client goes on beating: the client is not declared dead -- its
// beats are still answered, its segment ALIVE.  (Before, the beats
// queued behind the mutex, and the monitor, first to get it, counted the
// stall as the client's silence: the client was dead, its replicas
// salvage.)
void test_master_stall_not_client_silence(void **)
{
	Fx f({}, short_heartbeats);
	uint64_t seg = own_segment(f);
	Beater b(f);
	assert_true(b.await_beats(2));
	// the beats resume once the monitor waits for the mutex: they come
	// behind it, as they would behind a stall it ran into first
	assert_true(b.pause_beats());
	stall_master(f, [&] { b.resume(); });
	assert_true(b.await_beats(2));
	b.end();
	if (b.refused)
		fail_msg("the client was declared dead by a master stall: %llu beats refused (%s)",
			 static_cast<unsigned long long>(b.refused), b.refusal.c_str());
	v1::HeartbeatRequest q;
	v1::HeartbeatResponse a;
	q.set_client_id(f.client);
	assert_true(f.leader->Heartbeat(kApp, &q, &a).ok());
	assert_int_equal(segments(f)[seg].state(), v1::SEGMENT_ALIVE);
	assert_int_equal(f.lost.load(), 0);
}

// A stall of the master breaks its clients' connections; they come back
// after reconnecting with backoff (2 to 4 s after a 5 s freeze in the
// chaos runs), as after a takeover.  A client silent for twice the
// heartbeat timeout after the stall -- the monitor's rounds that long,
// counted -- is not declared dead: it gets a new leader's first timeout.
void test_client_reconnecting_after_stall_not_dead(void **)
{
	Fx f({}, short_heartbeats);
	uint64_t seg = own_segment(f);
	Beater b(f);
	assert_true(b.await_beats(2));
	assert_true(b.pause_beats());
	stall_master(f, nullptr);
	// (the monitor's round is heartbeat_ms / 2)
	uint64_t rounds = 2 * 2 * f.opts.heartbeat_timeout_ms / f.opts.heartbeat_ms;
	uint64_t r = f.leader->heartbeat_rounds();
	assert_true(within(30000, [&] { return f.leader->heartbeat_rounds() >= r + rounds; }));
	assert_int_equal(segments(f)[seg].state(), v1::SEGMENT_ALIVE);
	b.resume();
	assert_true(b.await_beats(2));
	b.end();
	if (b.refused)
		fail_msg("a client reconnecting after a master stall was declared dead: %s",
			 b.refusal.c_str());
	assert_int_equal(f.lost.load(), 0);
}

// A client that stops beating is still declared dead, a master stall
// meanwhile notwithstanding: its segment DEAD, its beats refused.
void test_silent_client_still_dead(void **)
{
	Fx f({}, short_heartbeats);
	uint64_t seg = own_segment(f);
	{
		Beater b(f);
		assert_true(b.await_beats(2));
		assert_int_equal(b.refused, 0);
	}
	stall_master(f, nullptr);
	assert_true(within(30000, [&] { return segments(f)[seg].state() == v1::SEGMENT_DEAD; }));
	v1::HeartbeatRequest q;
	v1::HeartbeatResponse a;
	q.set_client_id(f.client);
	assert_int_equal(f.leader->Heartbeat(kApp, &q, &a).error_code(), grpc::StatusCode::NOT_FOUND);
}

// ---- records a log entry cannot hold: refused before anything is logged

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

// Another DRAM segment of f.client's, of size bytes at gaddr (no memory
// is touched here: its size is only what the master knows).
void add_segment(Fx &f, uint64_t gaddr, uint64_t size)
{
	v1::RegisterSegmentRequest q = segment_request(f.client);
	q.mutable_desc()->set_gaddr(gaddr);
	q.mutable_desc()->set_size(size);
	v1::RegisterSegmentResponse a;
	grpc::Status s = f.leader->RegisterSegment(kApp, &q, &a);
	if (!s.ok())
		fail_msg("register segment: %s", s.error_message().c_str());
}

size_t logged_records(Fx &f)
{
	std::lock_guard<std::mutex> g(f.gate->m);
	size_t n = 0;
	for (const auto &e : f.gate->entries) {
		lg::LogEntry le;
		assert_true(le.ParseFromString(e));
		n += le.records_size();
	}
	return n;
}

void assert_record_too_big(const grpc::Status &s)
{
	if (s.error_code() != grpc::StatusCode::INVALID_ARGUMENT ||
	    !contains(s.error_message(), "metadata record") ||
	    !contains(s.error_message(), "over the limit of " + std::to_string(Journal::kRecordMax)))
		fail_msg("not refused as a record over the limit: %d %s", s.error_code(),
			 s.error_message().c_str());
}

// 4 KiB shards: a put of 1 GiB is 262144 shards, a PutStart record of
// some 3 MiB (over the 1 MiB a log entry holds: every leader would fail
// its append and step down).  It is refused, INVALID_ARGUMENT saying
// so, nothing logged; the master leads on and serves a put of 64 MiB
// (16384 shards, a record well under the limit).
// A client that tries to exhaust the store is stopped by its identity's
// quota while another identity's puts go on: a batch of 4096 PutStarts
// gets the first 8 MiB's worth placed and the rest RESOURCE_EXHAUSTED
// (no room was short: the segment had 64 MiB), and bob's put then starts
// and commits.  Watch streams likewise: the quota's worth opens, the next
// is refused, an admin has none, and one closed is one to open again.
void test_identity_quotas(void **)
{
	Fx f({}, [](Options &o) {
		o.limits.identity_pending_bytes = 8ull << 20;
		o.watch_quota = 3;
	});
	v1::BatchPutStartRequest bq;
	for (int i = 0; i < 4096; i++)
		*bq.add_items() = put_start_request(f.client, "flood/" + std::to_string(i), 1 << 20);
	v1::BatchPutStartResponse ba;
	assert_true(f.leader->BatchPutStart(kApp, &bq, &ba).ok());
	assert_int_equal(ba.status_size(), 4096);
	int ok = 0, quota = 0;
	for (const auto &st : ba.status()) {
		ok += st.code() == 0;
		quota += st.code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
			 contains(st.message(), "app has 8 puts of 8388608 bytes pending; its quota is");
	}
	assert_int_equal(ok, 8);
	assert_int_equal(quota, 4096 - 8);

	const Caller bob{ "bob", false };
	v1::RegisterClientRequest rq = client_request();
	rq.mutable_self()->set_node_id(kNode + 1);
	v1::RegisterClientResponse ra;
	assert_true(f.leader->RegisterClient(bob, &rq, &ra).ok());
	v1::PutStartRequest q = put_start_request(ra.client_id(), "bob/k", 1 << 20);
	v1::PutStartResponse a;
	grpc::Status s = f.leader->PutStart(bob, &q, &a);
	if (!s.ok())
		fail_msg("bob's put: %s", s.error_message().c_str());
	assert_true(a.replicas_size() > 0);

	// Watch streams
	for (int i = 0; i < 3; i++)
		assert_true(f.leader->watch_open(kApp).ok());
	s = f.leader->watch_open(kApp);
	assert_int_equal(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
	assert_true(contains(s.error_message(), "app has 3 Watch streams open; its quota is 3"));
	assert_true(f.leader->watch_open(bob).ok());
	const Caller admin{ "admin", true };
	for (int i = 0; i < 5; i++)
		assert_true(f.leader->watch_open(admin).ok());
	f.leader->watch_close(kApp);
	assert_true(f.leader->watch_open(kApp).ok());
	assert_false(f.leader->watch_open(kApp).ok());
}

void test_oversized_put_start_refused(void **)
{
	Fx f({}, [](Options &o) { o.limits.shard_size = 4096; });
	add_segment(f, kGaddr + 16 * kGiB, 4 * kGiB);
	size_t before = logged_records(f);
	uint64_t v = 0;
	assert_record_too_big(f.try_put_start("huge", kGiB, &v));
	assert_int_equal(logged_records(f), before);
	assert_int_equal(f.get("huge", &v).error_code(), grpc::StatusCode::NOT_FOUND);
	assert_true(f.leader->serving());
	assert_int_equal(f.lost.load(), 0);
	uint64_t ver = f.put("under", 64 * kMiB);
	uint64_t got = 0;
	assert_true(f.get("under", &got).ok());
	assert_int_equal(got, ver);
	assert_int_equal(f.lost.load(), 0);
}

// The same over a full pool: nothing is evicted to make room for a put
// that could never be logged.  (Each 4 KiB shard takes a 16 KiB unit of
// a segment: the pool, 2 GiB and 64 MiB, holds 135168 units; 4 objects
// of 60 MiB take 61440, and leave too few for the 102400 shards of a
// put of 400 MiB, a record of some 1.3 MiB.)
void test_oversized_put_start_evicts_nothing(void **)
{
	Fx f({}, [](Options &o) {
		o.limits.shard_size = 4096;
		o.high_watermark_pct = 100;	// no eviction in the background
		o.low_watermark_pct = 90;
	});
	add_segment(f, kGaddr + 16 * kGiB, 2 * kGiB);
	for (int i = 0; i < 4; i++)
		f.put("fill" + std::to_string(i), 60 * kMiB);
	assert_int_equal(master_evictions(f), 0);
	size_t before = logged_records(f);
	uint64_t v = 0;
	assert_record_too_big(f.try_put_start("huge", 400 * kMiB, &v));
	assert_int_equal(logged_records(f), before);
	assert_int_equal(master_evictions(f), 0);
	for (int i = 0; i < 4; i++)
		assert_true(f.get("fill" + std::to_string(i), &v).ok());
	assert_true(f.leader->serving());
	assert_int_equal(f.lost.load(), 0);
}

// A commit whose checksums make a record over the limit (1 GiB in
// 4 KiB chunks: 262144 of them, 2 MiB): refused, INVALID_ARGUMENT,
// nothing logged; the same put committed with 1 MiB chunks then is.
void test_oversized_put_commit_refused(void **)
{
	Fx f;
	add_segment(f, kGaddr + 16 * kGiB, 4 * kGiB);
	uint64_t ver = f.put_start("big", kGiB);
	size_t before = logged_records(f);
	v1::PutCommitRequest q = put_commit_request(f.client, "big", ver, kGiB);
	q.mutable_sums()->set_chunk_size(4096);
	q.mutable_sums()->clear_xxh64();
	for (uint64_t i = 0; i < kGiB / 4096; i++)
		q.mutable_sums()->add_xxh64(0);
	v1::PutCommitResponse a;
	assert_record_too_big(f.leader->PutCommit(kApp, &q, &a));
	assert_int_equal(logged_records(f), before);
	assert_true(f.leader->serving());
	assert_true(f.put_commit("big", ver, kGiB).ok());
	uint64_t got = 0;
	assert_true(f.get("big", &got).ok());
	assert_int_equal(got, ver);
	assert_int_equal(f.lost.load(), 0);
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_commit_without_sums_refused),
		cmocka_unit_test(test_get_waits_for_durable_put),
		cmocka_unit_test(test_reads_wait_for_durable_del),
		cmocka_unit_test(test_other_keys_do_not_wait),
		cmocka_unit_test(test_earlier_reservation_quarantined),
		cmocka_unit_test(test_killed_leader_quarantine_released),
		cmocka_unit_test(test_retried_del_gets_its_answer),
		cmocka_unit_test(test_del_retry_after_many_dels),
		cmocka_unit_test(test_del_refused_when_remembered_full),
		cmocka_unit_test(test_retried_put_start_same_put),
		cmocka_unit_test(test_wall_clock_step),
		cmocka_unit_test(test_full_pool_put_evicts),
		cmocka_unit_test(test_full_pool_put_evicts_many),
		cmocka_unit_test(test_full_pool_nothing_evictable),
		cmocka_unit_test(test_new_leader_waits_for_old_leases),
		cmocka_unit_test(test_watermarks_evict_in_background),
		cmocka_unit_test(test_drain_deadline),
		cmocka_unit_test(test_drain_event_then_removed),
		cmocka_unit_test(test_leave_without_drain_reclaimed),
		cmocka_unit_test(test_leave_empty_segment_removed),
		cmocka_unit_test(test_remount_during_reclaim),
		cmocka_unit_test(test_pool_segments_not_reclaimed),
		cmocka_unit_test(test_dead_owner_segment_removed),
		cmocka_unit_test(test_salvage_readopted_after_replay),
		cmocka_unit_test(test_salvage_held_after_replay),
		cmocka_unit_test(test_salvage_freed_after_replay),
		cmocka_unit_test(test_salvage_survives_restart),
		cmocka_unit_test(test_master_stall_not_client_silence),
		cmocka_unit_test(test_client_reconnecting_after_stall_not_dead),
		cmocka_unit_test(test_silent_client_still_dead),
		cmocka_unit_test(test_identity_quotas),
		cmocka_unit_test(test_oversized_put_start_refused),
		cmocka_unit_test(test_oversized_put_start_evicts_nothing),
		cmocka_unit_test(test_oversized_put_commit_refused),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
