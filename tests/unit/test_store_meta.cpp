// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's metadata state machine (user/tools/dsmaster/state.cpp) and
// its group-committed log (journal.cpp): replay equals live, allocators
// rebuilt from the metadata, placement, versions, leases, GC, Del, List,
// Sync, dead owners, bad input, reservations for copies.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "checksum.hpp"
#include "journal.hpp"
#include "persist.hpp"
#include "slowtier.hpp"
#include "state.hpp"
#include "store_sums.hpp"

// cmocka last: its macros do not mix with the C++ headers
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::store;

namespace {

constexpr int64_t kSec = 1000000000LL;
constexpr uint64_t kMiB = 1ULL << 20;

using testsums::zero_sums;

// A state and the log of everything applied to it.
// The counts and the attention set that apply() keeps, against a walk
// of every object: a key left out of attention() holds one complete,
// live version with no TTL and no flush to do, which no pass of expiry,
// GC, TTL or the lazy flush acts on.
void assert_tallies(const MasterState &st)
{
	uint64_t live = 0, bytes = 0, versions = 0, lru = 0, pending = 0;
	for (const auto &[key, o] : st.objects()) {
		versions += o.versions.size();
		const VersionState *n = nullptr;
		for (auto it = o.versions.rbegin(); it != o.versions.rend() && !n; ++it)
			if (it->second.complete && !it->second.deleted)
				n = &it->second;
		if (n) {
			live++;
			bytes += n->size;
		}
		size_t in_lru = st.lru().count({ n ? n->config.soft_pin() : false, o.atime_ns, &key });
		if (in_lru != (n && !n->evicted ? 1u : 0u))
			fail_msg("'%s' is%s in lru()", key.c_str(), in_lru ? "" : " not");
		lru += n && !n->evicted;
		for (const auto &[ver, v] : o.versions)
			pending += !v.complete && !v.deleted;
		if (st.plan_repair(key).has_value() != (st.repair_due().count(key) > 0))
			fail_msg("'%s' is%s in repair_due()", key.c_str(),
				 st.repair_due().count(key) ? "" : " not");
		if (st.attention().count(key))
			continue;
		bool quiet = o.versions.empty() ||
			     (o.versions.size() == 1 && n && !n->expires_ns &&
			      (n->config.flush() == pb::FLUSH_NONE || o.flushed_version >= n->version));
		if (!quiet)
			fail_msg("'%s' needs a pass's attention but is not in attention()", key.c_str());
	}
	for (const std::string &key : st.attention())
		if (!st.objects().count(key))
			fail_msg("'%s' is in attention() but is no object", key.c_str());
	for (const std::string &key : st.repair_due())
		if (!st.objects().count(key))
			fail_msg("'%s' is in repair_due() but is no object", key.c_str());
	assert_int_equal(st.lru().size(), lru);
	assert_int_equal(st.pending_count(), pending);
	assert_int_equal(st.object_count(), live);
	assert_int_equal(st.object_bytes(), bytes);
	assert_int_equal(st.version_count(), versions);
}

struct Fx {
	Limits lim;
	MasterState st{ lim };
	std::vector<lg::Record> log;
	int64_t now = 1000 * kSec;
	Caller who{ "app", false };	// the identity the helpers act as

	Fx() = default;
	explicit Fx(const Limits &l) : lim(l), st(l) {}

	void apply(const lg::Record &r)
	{
		std::string err;
		int ret = st.apply(r, &err);
		if (ret)
			fail_msg("apply: %s", err.c_str());
		assert_tallies(st);
		log.push_back(r);
	}

	uint64_t client(uint32_t node)
	{
		pb::Member m;
		m.set_node_id(node);
		m.set_addr("10.0.0." + std::to_string(node));
		m.set_port(7471);
		lg::Record r;
		std::string err;
		assert_int_equal(st.plan_register_client(who, m, 0, &r, &err), 0);
		apply(r);
		return r.client_add().client_id();
	}

	uint64_t segment(uint64_t client, uint64_t gaddr, uint64_t size, bool *remounted = nullptr,
			 pb::SegmentType type = pb::SEGMENT_DRAM)
	{
		pb::SegmentDesc d;
		d.set_type(type);
		d.set_size(size);
		// on its client's node, as the address's top 16 bits say
		uint32_t node = client ? st.clients().at(client).node_id() : 1;
		d.set_node_id(node);
		d.set_gaddr(type == pb::SEGMENT_DRAM ? gaddr | static_cast<uint64_t>(node) << 48 : gaddr);
		if (type == pb::SEGMENT_NVMEOF) {
			d.set_traddr("10.0.0.9");
			d.set_trsvcid(4420);
			d.set_subnqn("nqn.test");
			d.set_base(gaddr);
		}
		lg::Record r;
		uint64_t id = 0;
		bool rem = false;
		std::string err;
		assert_int_equal(st.plan_register_segment(who, client, d, &r, &id, &rem, &err), 0);
		if (r.rec_case() != lg::Record::REC_NOT_SET)
			apply(r);
		if (remounted)
			*remounted = rem;
		return id;
	}

	static pb::ReplicateConfig cfg(uint32_t dram, uint32_t nvme = 0,
				       pb::FlushMode flush = pb::FLUSH_NONE)
	{
		pb::ReplicateConfig c;
		c.set_dram_replicas(dram);
		c.set_nvmeof_replicas(nvme);
		c.set_flush(flush);
		return c;
	}

	// PutStart; the record (its version and replicas).
	lg::PutStart start(uint64_t client, const std::string &key, uint64_t size,
			   const pb::ReplicateConfig &c, int expect = 0)
	{
		lg::Record r;
		std::string err;
		int ret = st.plan_put_start(who, client, key, size, c, {}, now, &r, &err);
		assert_int_equal(ret, expect);
		if (!ret)
			apply(r);
		return r.put_start();
	}

	void commit(const std::string &key, uint64_t version, std::vector<uint32_t> done, int expect = 0)
	{
		lg::Record r, abort;
		std::string err;
		// the sums a writer of zeros sends: a put carries them
		const VersionState *v = st.find_version(key, version);
		pb::Checksums sums = zero_sums(v ? v->size : 0);
		int ret = st.plan_put_commit(key, version, done, sums, now, &r, &abort, &err);
		if (ret != expect)
			print_error("commit %s: %s\n", key.c_str(), err.c_str());
		assert_int_equal(ret, expect);
		if (!ret && r.rec_case() != lg::Record::REC_NOT_SET)
			apply(r);
		if (ret && abort.rec_case() != lg::Record::REC_NOT_SET)
			apply(abort);
	}

	uint64_t put(uint64_t client, const std::string &key, uint64_t size, uint32_t replicas = 1)
	{
		lg::PutStart p = start(client, key, size, cfg(replicas));
		std::vector<uint32_t> done;
		for (int i = 0; i < p.replicas_size(); i++)
			done.push_back(static_cast<uint32_t>(i));
		commit(key, p.version(), done);
		return p.version();
	}

	// A put of config c, every replica written; its version.
	uint64_t put_cfg(uint64_t client, const std::string &key, uint64_t size,
			 const pb::ReplicateConfig &c)
	{
		lg::PutStart p = start(client, key, size, c);
		std::vector<uint32_t> done;
		for (int i = 0; i < p.replicas_size(); i++)
			done.push_back(static_cast<uint32_t>(i));
		commit(key, p.version(), done);
		return p.version();
	}

	// The candidate for key in the eviction order of type; fails if absent.
	EvictCandidate candidate(const std::string &key, pb::SegmentType type = pb::SEGMENT_DRAM)
	{
		for (const EvictCandidate &c : st.eviction_order(type, now, nullptr))
			if (c.key == key)
				return c;
		fail_msg("'%s' is not an eviction candidate", key.c_str());
		return {};
	}

	// Plans and applies the Evict of key's candidate; the record.
	lg::Record evict(const std::string &key, lg::Evict::Reason reason,
			 pb::SegmentType type = pb::SEGMENT_DRAM)
	{
		lg::Record r;
		st.plan_evict(candidate(key, type), reason, &r);
		apply(r);
		return r;
	}

	// SetAttr by who at now: the ConfigSet applied; the return code.
	int set_attr(const std::string &key, uint32_t mask, bool pin, uint64_t ttl_ms,
		     lg::Record *out = nullptr)
	{
		lg::Record r;
		std::string err;
		int ret = st.plan_set_attr(who, key, mask, pin, ttl_ms, now, &r, &err);
		if (!ret)
			apply(r);
		if (out)
			*out = r;
		return ret;
	}

	uint64_t used(pb::SegmentType type = pb::SEGMENT_DRAM) const
	{
		uint64_t size = 0, u = 0;
		st.tier_usage(type, &size, &u);
		return u;
	}

	std::string image() const
	{
		lg::Snapshot s;
		st.snapshot(&s);
		std::string out = s.SerializeAsString();
		for (const auto &[id, seg] : st.segments())
			out += "|" + std::to_string(id) + ":" + std::to_string(seg.alloc->used());
		return out;
	}
};

// The keys of an eviction order, comma separated.
std::string order_of(const std::vector<EvictCandidate> &v)
{
	std::string s;
	for (const auto &c : v)
		s += (s.empty() ? "" : ",") + c.key;
	return s;
}

pb::ReplicateConfig with_attrs(pb::ReplicateConfig c, bool pin, uint64_t ttl_ms)
{
	c.set_soft_pin(pin);
	c.set_ttl_ms(ttl_ms);
	return c;
}

constexpr uint64_t kTtlMaxMs = 10ULL * 366 * 24 * 3600 * 1000;	// state.cpp's limit
constexpr int64_t kMs = 1000000LL;

// Replays a log (optionally after a snapshot) into a new state.
void replay(MasterState &st, const std::vector<lg::Record> &log, size_t from = 0)
{
	std::string err;
	for (size_t i = from; i < log.size(); i++) {
		int ret = st.apply(log[i], &err);
		if (ret)
			fail_msg("replay %zu: %s", i, err.c_str());
	}
}

std::string image_of(const MasterState &st)
{
	assert_tallies(st);
	lg::Snapshot s;
	st.snapshot(&s);
	std::string out = s.SerializeAsString();
	for (const auto &[id, seg] : st.segments())
		out += "|" + std::to_string(id) + ":" + std::to_string(seg.alloc->used());
	return out;
}

// Every shard of every replica that holds its places (not lost, or lost
// but held): no two overlap on a segment.
void assert_no_overlap(const MasterState &st)
{
	std::map<uint64_t, std::map<uint64_t, uint64_t>> taken;	// seg -> off -> end
	for (const auto &[key, o] : st.objects())
		for (const auto &[ver, v] : o.versions)
			for (const auto &r : v.replicas) {
				if (r.lost && !r.held)
					continue;
				for (const auto &s : r.r.shards()) {
					auto &m = taken[s.segment_id()];
					uint64_t end = s.offset() + OffsetAllocator::round(s.length());
					auto it = m.upper_bound(s.offset());
					if (it != m.end() && it->first < end)
						fail_msg("overlap on segment %llu at %llu",
							 (unsigned long long)s.segment_id(),
							 (unsigned long long)s.offset());
					if (it != m.begin() && std::prev(it)->second > s.offset())
						fail_msg("overlap on segment %llu at %llu",
							 (unsigned long long)s.segment_id(),
							 (unsigned long long)s.offset());
					m[s.offset()] = end;
				}
			}
}

// Every segment's allocated bytes are those of the places the state
// holds: non-lost replicas, held ones of pending puts, salvage and
// reservations.  Nothing leaks, and nothing is freed early.
void assert_used_matches(const MasterState &st)
{
	std::map<uint64_t, uint64_t> held;
	auto add = [&](const pb::Replica &r) {
		for (const auto &s : r.shards())
			held[s.segment_id()] += OffsetAllocator::round(s.length());
	};
	for (const auto &[key, o] : st.objects())
		for (const auto &[ver, v] : o.versions) {
			for (const auto &r : v.replicas)
				if (!r.lost || r.held)
					add(r.r);
			for (const auto &r : v.salvage)
				add(r);
		}
	for (const auto &[id, r] : st.reservations())
		add(r.replica());
	for (const auto &[id, seg] : st.segments())
		if (seg.alloc->used() != held[id])
			fail_msg("segment %llu: %llu bytes allocated, %llu held",
				 (unsigned long long)id, (unsigned long long)seg.alloc->used(),
				 (unsigned long long)held[id]);
}

// ---- tests

void test_replay_equals_live(void **)
{
	Fx f;
	uint64_t c1 = f.client(1), c2 = f.client(2), c3 = f.client(3);
	f.segment(c1, 0x100000000, 64 * kMiB);
	f.segment(c2, 0x200000000, 64 * kMiB);
	f.segment(c3, 0x300000000, 64 * kMiB);
	for (int i = 0; i < 20; i++)
		f.put(c1, "k" + std::to_string(i % 7), (i + 1) * 100 * 1024, 2);
	size_t snap_at = f.log.size();
	lg::Snapshot mid;
	f.st.snapshot(&mid);

	lg::PutStart p = f.start(c2, "pending", kMiB, Fx::cfg(3));
	lg::PutStart q = f.start(c2, "aborted", kMiB, Fx::cfg(1));
	lg::Record ab;
	std::string err;
	assert_int_equal(f.st.plan_put_abort("aborted", q.version(), &ab, &err), 0);
	f.apply(ab);
	lg::Record del;
	uint64_t n;
	assert_int_equal(f.st.plan_del(f.who, "k3", &del, &n, &err), 0);
	f.apply(del);
	for (const auto &r : f.st.plan_gc(f.now))
		f.apply(r);
	lg::Record fl;
	fl.mutable_flushed()->set_key("k1");
	fl.mutable_flushed()->set_version(f.st.newest("k1")->version);
	f.apply(fl);
	// a replica moved by hand: place, release, add; drop the old one
	pb::Replica nr;
	uint64_t v0 = f.st.newest("k0")->version;
	assert_int_equal(f.st.place_replica("k0", v0, pb::SEGMENT_DRAM, {}, 0, &nr, &err), 0);
	f.st.release_replica(nr);
	lg::Record add, drop;
	add.mutable_replica_add()->set_key("k0");
	add.mutable_replica_add()->set_version(v0);
	*add.mutable_replica_add()->mutable_replica() = nr;
	f.apply(add);
	drop.mutable_replica_drop()->set_key("k0");
	drop.mutable_replica_drop()->set_version(v0);
	drop.mutable_replica_drop()->set_index(0);
	f.apply(drop);
	// eviction and attributes: LRU of the slow tier's version (kept,
	// evicted) and of one it does not hold (gone), TTL Evicts (one of a
	// flushed version), SetAttr's ConfigSets with an expiry, a put's TTL
	f.now += 10 * kSec;
	uint64_t v1 = f.st.newest("k1")->version;
	f.evict("k1", lg::Evict::LRU);
	f.evict("k2", lg::Evict::LRU);
	fl.mutable_flushed()->set_key("k5");
	fl.mutable_flushed()->set_version(f.st.newest("k5")->version);
	f.apply(fl);
	assert_int_equal(f.set_attr("k4", pb::SET_ATTR_TTL, false, 1000), 0);
	assert_int_equal(f.set_attr("k5", pb::SET_ATTR_TTL, false, 1000), 0);
	assert_int_equal(f.set_attr("k6", pb::SET_ATTR_SOFT_PIN | pb::SET_ATTR_TTL, true, 3600 * 1000), 0);
	const int64_t k6_expires = f.now + 3600 * kSec;
	const int64_t ttl_ctime = f.now;
	f.put_cfg(c1, "ttlput", kMiB, with_attrs(Fx::cfg(1), false, 7000));
	auto ttl = f.st.plan_ttl(f.now + 2 * kSec);
	assert_int_equal(ttl.size(), 2);	// k4, k5
	for (const auto &r : ttl)
		f.apply(r);
	assert_null(f.st.find_object("k5"));
	assert_int_equal(f.st.evictions(), 2);
	assert_int_equal(f.st.expiries(), 2);
	const uint64_t evicted_bytes = f.st.evicted_bytes();
	assert_true(evicted_bytes > 0);
	// an owner dies
	lg::Record dead;
	dead.mutable_client_remove()->set_client_id(c3);
	dead.mutable_client_remove()->set_dead(true);
	f.apply(dead);
	f.commit("pending", p.version(), { 0, 1, 2 });

	// salvage (the dead owner's replicas, still allocated) is part of the
	// state: a replay, and a restore from a snapshot, hold the same
	assert_false(f.st.salvage().empty());
	assert_used_matches(f.st);
	std::string live = f.image();
	MasterState a(f.lim);
	replay(a, f.log);
	assert_string_equal(image_of(a).c_str(), live.c_str());
	MasterState b(f.lim);
	assert_int_equal(b.restore(mid, &err), 0);
	replay(b, f.log, snap_at);
	assert_string_equal(image_of(b).c_str(), live.c_str());
	// and a snapshot of the end restores to the same
	lg::Snapshot end;
	f.st.snapshot(&end);
	MasterState c(f.lim);
	assert_int_equal(c.restore(end, &err), 0);
	assert_string_equal(image_of(c).c_str(), live.c_str());
	assert_no_overlap(c);
	assert_int_equal(c.salvage().size(), f.st.salvage().size());
	assert_used_matches(c);
	// the counters, expiries and evictions, replayed and restored
	for (const MasterState *s : { &a, &b, &c }) {
		assert_int_equal(s->evictions(), 2);
		assert_int_equal(s->expiries(), 2);
		assert_int_equal(s->evicted_bytes(), evicted_bytes);
		const VersionState *k1 = s->find_version("k1", v1);
		assert_non_null(k1);
		assert_true(k1->evicted);
		assert_true(k1->replicas.empty());
		GetResult g;
		assert_int_equal(s->get("k1", -1, &g, &err), 0);
		assert_true(g.slow_tier);
		assert_null(s->find_object("k2"));
		assert_null(s->find_object("k4"));
		assert_null(s->find_object("k5"));
		assert_true(s->newest("k6")->config.soft_pin());
		assert_int_equal(s->newest("k6")->expires_ns, k6_expires);
		assert_int_equal(s->newest("ttlput")->expires_ns, ttl_ctime + 7 * kSec);
		assert_string_equal(order_of(s->eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
				    order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str());
	}
}

void test_remount_keeps_allocations(void **)
{
	Fx f;
	uint64_t c1 = f.client(1);
	uint64_t s1 = f.segment(c1, 0x100000000, 16 * kMiB);
	for (int i = 0; i < 10; i++)
		f.put(c1, "obj" + std::to_string(i), 700 * 1024);
	uint64_t used = f.st.segment(s1)->alloc->used();
	assert_true(used >= 10 * 700 * 1024);
	lg::Snapshot snap;
	f.st.snapshot(&snap);
	// more after the snapshot, in the log
	f.put(c1, "late", 2 * kMiB);
	std::vector<lg::Record> tail(f.log.end() - 2, f.log.end());

	// the master restarts
	Fx g(f.lim);
	std::string err;
	assert_int_equal(g.st.restore(snap, &err), 0);
	replay(g.st, tail);
	assert_int_equal(g.st.segment(s1)->alloc->used(), f.st.segment(s1)->alloc->used());
	// the client comes back (a new process) and mounts the same memory
	uint64_t c2 = g.client(1);
	assert_true(c2 != c1);
	bool remounted = false;
	uint64_t again = g.segment(c2, 0x100000000, 16 * kMiB, &remounted);
	assert_int_equal(again, s1);
	assert_true(remounted);
	assert_int_equal(g.st.segment(s1)->desc.owner(), c2);
	assert_int_equal(g.st.segment(s1)->alloc->used(), f.st.segment(s1)->alloc->used());
	// new puts fill the holes only
	for (int i = 0; i < 5; i++)
		g.put(c2, "new" + std::to_string(i), 300 * 1024);
	assert_no_overlap(g.st);
	assert_non_null(g.st.newest("obj3"));
	// a new segment gets a new id, never an old one
	uint64_t s2 = g.segment(c2, 0x200000000, 16 * kMiB, &remounted);
	assert_false(remounted);
	assert_true(s2 > s1);
}

void test_placement_distinct(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	for (int i = 0; i < 4; i++)
		f.segment(c, 0x100000000ULL * (i + 1), 160 * kMiB);
	for (int k = 0; k < 20; k++) {
		lg::PutStart p = f.start(c, "big" + std::to_string(k), 8 * kMiB + 5, Fx::cfg(3));
		assert_int_equal(p.replicas_size(), 3);
		for (int j = 0; j < 9; j++) {
			std::set<uint64_t> segs;
			for (const auto &r : p.replicas()) {
				assert_int_equal(r.shards_size(), 9);
				segs.insert(r.shards(j).segment_id());
			}
			assert_int_equal(segs.size(), 3);
		}
		uint64_t total = 0;
		for (const auto &s : p.replicas(0).shards())
			total += s.length();
		assert_int_equal(total, 8 * kMiB + 5);
	}
	assert_no_overlap(f.st);
}

void test_prefer_local(void **)
{
	Fx f;
	uint64_t c1 = f.client(1), c2 = f.client(2);
	f.segment(c1, 0x100000000, 64 * kMiB);
	uint64_t mine = f.segment(c2, 0x200000000, 64 * kMiB);
	f.segment(c1, 0x300000000, 64 * kMiB);
	pb::ReplicateConfig c = Fx::cfg(2);
	c.set_prefer_local(true);
	for (int k = 0; k < 10; k++) {
		lg::PutStart p = f.start(c2, "l" + std::to_string(k), 3 * kMiB, c);
		for (const auto &s : p.replicas(0).shards())
			assert_int_equal(s.segment_id(), mine);
	}
}

void test_replicas_above_segments(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	f.start(c, "none", kMiB, Fx::cfg(1), -ENOSPC);
	f.segment(c, 0x100000000, 64 * kMiB);
	f.segment(c, 0x200000000, 64 * kMiB);
	lg::PutStart p = f.start(c, "x", 3 * kMiB, Fx::cfg(3));
	assert_int_equal(p.replicas_size(), 2);	// as many as there are places
	// an NVMe-oF replica asked for where there is none: the DRAM ones only
	lg::PutStart q = f.start(c, "y", kMiB, Fx::cfg(1, 1));
	assert_int_equal(q.replicas_size(), 1);
	// too big for any segment
	f.start(c, "huge", 129 * kMiB, Fx::cfg(1), -ENOSPC);
	// an NVMe-oF segment: one shard, the object's size
	f.segment(c, 0, 256 * kMiB, nullptr, pb::SEGMENT_NVMEOF);
	lg::PutStart n = f.start(c, "z", 5 * kMiB + 1, Fx::cfg(1, 1));
	assert_int_equal(n.replicas_size(), 2);
	assert_int_equal(n.replicas(1).type(), pb::SEGMENT_NVMEOF);
	assert_int_equal(n.replicas(1).shards_size(), 1);
	assert_int_equal(n.replicas(1).shards(0).length(), 5 * kMiB + 1);
}

void test_pending_expiry(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	uint64_t s = f.segment(c, 0x100000000, 64 * kMiB);
	lg::PutStart p = f.start(c, "slow", 4 * kMiB, Fx::cfg(1));
	assert_true(f.st.segment(s)->alloc->used() >= 4 * kMiB);
	assert_true(f.st.plan_expiry(f.now).empty());
	// past the deadline its commit is refused, but its space is not
	// given out before the write grace is over (a write may still land)
	f.now = p.deadline_ns() + 1;
	assert_true(f.st.plan_expiry(f.now).empty());
	f.now = p.deadline_ns() + f.st.limits().write_grace_ns;
	assert_true(f.st.plan_expiry(f.now).empty());
	f.now = p.deadline_ns() + f.st.limits().write_grace_ns + 1;
	auto recs = f.st.plan_expiry(f.now);
	assert_int_equal(recs.size(), 1);
	assert_true(recs[0].put_abort().expired());
	f.apply(recs[0]);
	assert_int_equal(f.st.segment(s)->alloc->used(), 0);
	f.commit("slow", p.version(), { 0 }, -ESTALE);
	// a new leader expires nothing before a whole put's time and the
	// write grace are over by its own clock (the old one's may differ)
	lg::PutStart t = f.start(c, "takeover", kMiB, Fx::cfg(1));
	const int64_t took_over = f.now + 5'000'000'000;	// 5 s after its start
	f.st.set_expiry_not_before(took_over + f.st.limits().put_timeout_ns +
				   f.st.limits().write_grace_ns);
	f.now = t.deadline_ns() + f.st.limits().write_grace_ns + 1;	// as the log says
	assert_true(f.st.plan_expiry(f.now).empty());
	f.now = took_over + f.st.limits().put_timeout_ns + f.st.limits().write_grace_ns;
	assert_int_equal(f.st.plan_expiry(f.now).size(), 1);
	f.apply(f.st.plan_expiry(f.now)[0]);
	// a commit past the deadline, before the expiry ran: refused, freed
	lg::PutStart q = f.start(c, "late", kMiB, Fx::cfg(1));
	f.now = q.deadline_ns() + 1;
	f.commit("late", q.version(), { 0 }, -ESTALE);
	assert_int_equal(f.st.segment(s)->alloc->used(), 0);
	assert_null(f.st.find_object("late"));
	// a commit of nothing written: aborted
	lg::PutStart r = f.start(c, "empty", kMiB, Fx::cfg(1));
	f.commit("empty", r.version(), {}, -ESTALE);
	assert_null(f.st.find_version("empty", r.version()));
}

void test_version_visibility(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	GetResult g;
	std::string err;
	lg::PutStart p1 = f.start(c, "v", kMiB, Fx::cfg(1));
	assert_int_equal(f.st.get("v", -1, &g, &err), -ENOENT);	// pending: invisible
	f.commit("v", p1.version(), { 0 });
	assert_int_equal(f.st.get("v", -1, &g, &err), 0);
	assert_int_equal(g.object.version(), p1.version());
	assert_int_equal(g.object.replicas_size(), 1);
	lg::PutStart p2 = f.start(c, "v", 2 * kMiB, Fx::cfg(1));
	// the newer one pending: the older one still
	assert_int_equal(f.st.get("v", -1, &g, &err), 0);
	assert_int_equal(g.object.version(), p1.version());
	// min_version at the pending one: below, nothing to read
	assert_int_equal(f.st.get("v", static_cast<int64_t>(p2.version()), &g, &err), 0);
	assert_true(g.below_min_version);
	assert_int_equal(g.object.version(), p1.version());
	assert_int_equal(g.object.replicas_size(), 0);
	// min_version never given out: in the future
	assert_int_equal(f.st.get("v", static_cast<int64_t>(p2.version() + 5), &g, &err), -ERANGE);
	f.commit("v", p2.version(), { 0 });
	assert_int_equal(f.st.get("v", static_cast<int64_t>(p2.version()), &g, &err), 0);
	assert_false(g.below_min_version);
	assert_int_equal(g.object.size(), 2 * kMiB);
	// a repeated commit is fine
	f.commit("v", p2.version(), { 0 });
	// versions are global and increase
	lg::PutStart o = f.start(c, "other", kMiB, Fx::cfg(1));
	assert_true(o.version() > p2.version());
}

void test_gc_after_lease(void **)
{
	Limits lim;
	Fx f(lim);
	uint64_t c = f.client(1);
	uint64_t s = f.segment(c, 0x100000000, 64 * kMiB);
	uint64_t v1 = f.put(c, "g", kMiB);
	f.st.lease("g", v1, f.now + 10 * kSec);
	uint64_t v2 = f.put(c, "g", kMiB);
	assert_true(f.st.plan_gc(f.now).empty());	// v1 under its lease
	f.st.pin("g", v1);
	assert_true(f.st.plan_gc(f.now + 11 * kSec).empty());	// and the mover's pin
	f.st.unpin("g", v1);
	auto recs = f.st.plan_gc(f.now + 11 * kSec);
	assert_int_equal(recs.size(), 1);
	assert_int_equal(recs[0].version_drop().version(), v1);
	f.apply(recs[0]);
	assert_null(f.st.find_version("g", v1));
	assert_non_null(f.st.find_version("g", v2));
	assert_int_equal(f.st.segment(s)->alloc->used(), kMiB);
	// a new leader waits for the leases it does not know
	f.st.set_gc_not_before(f.now + 100 * kSec);
	f.put(c, "g", kMiB);
	assert_true(f.st.plan_gc(f.now + 50 * kSec).empty());
	assert_int_equal(f.st.plan_gc(f.now + 101 * kSec).size(), 1);
}

void test_del(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	uint64_t s = f.segment(c, 0x100000000, 64 * kMiB);
	f.put(c, "d", kMiB);
	f.put(c, "d", kMiB);
	lg::PutStart pend = f.start(c, "d", kMiB, Fx::cfg(1));
	lg::Record r;
	uint64_t n = 0;
	std::string err;
	assert_int_equal(f.st.plan_del(f.who, "d", &r, &n, &err), 0);
	assert_int_equal(n, 2);
	f.apply(r);
	GetResult g;
	assert_int_equal(f.st.get("d", -1, &g, &err), -ENOENT);
	// a put begun before the Del does not bring it back
	f.commit("d", pend.version(), { 0 });
	assert_int_equal(f.st.get("d", -1, &g, &err), -ENOENT);
	assert_int_equal(f.st.plan_del(f.who, "d", &r, &n, &err), -ENOENT);
	for (const auto &rec : f.st.plan_gc(f.now))
		f.apply(rec);
	assert_null(f.st.find_object("d"));
	assert_int_equal(f.st.segment(s)->alloc->used(), 0);
	// a put after the Del is a new object
	f.put(c, "d", kMiB);
	assert_int_equal(f.st.get("d", -1, &g, &err), 0);
	assert_int_equal(f.st.plan_del(f.who, "nothere", &r, &n, &err), -ENOENT);
}

// The recent deletes with a request id: found by key and id, kept for the
// retry window however many came after (past the limit the state says it
// is full, and the leader refuses more), forgotten once the window is
// over, and kept through a snapshot and a replay (a retry may reach the
// next leader).
void test_recent_dels(void **)
{
	Limits lim;
	lim.recent_dels = 3;
	lim.retry_window_ms = 60000;
	Fx f(lim);
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	std::string err;
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < 5; i++) {
		std::string key = "r" + std::to_string(i);
		f.put(c, key, kMiB);
		f.put(c, key, kMiB);
		lg::Record r;
		uint64_t n = 0;
		assert_int_equal(f.st.recent_dels_full(), i >= 3);
		assert_int_equal(f.st.plan_del(f.who, key, &r, &n, &err), 0);
		assert_int_equal(r.del().versions(), 2);
		r.mutable_del()->set_request_id(100 + i);
		f.apply(r);
	}
	const lg::Del *d = f.st.recent_del("r4", 104);
	assert_non_null(d);
	assert_int_equal(d->versions(), 2);
	assert_non_null(f.st.recent_del("r2", 102));
	assert_non_null(f.st.recent_del("r0", 100));	// a count forgets nothing
	assert_null(f.st.recent_del("r3", 104));	// another key's id
	assert_null(f.st.recent_del("r4", 0));

	lg::Snapshot snap;
	f.st.snapshot(&snap);
	MasterState restored(lim);
	assert_int_equal(restored.restore(snap, &err), 0);
	assert_non_null(restored.recent_del("r2", 102));
	assert_int_equal(restored.recent_del("r3", 103)->versions(), 2);
	assert_non_null(restored.recent_del("r0", 100));
	MasterState replayed(lim);
	replay(replayed, f.log);
	assert_non_null(replayed.recent_del("r4", 104));
	assert_non_null(replayed.recent_del("r0", 100));
	assert_string_equal(image_of(replayed).c_str(), f.image().c_str());

	// within the window nothing goes; after it, everything does
	int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
				 std::chrono::steady_clock::now().time_since_epoch())
				 .count();
	int64_t t0_ms = std::chrono::duration_cast<std::chrono::milliseconds>(t0.time_since_epoch())
				.count();
	f.st.prune_recent_dels(t0_ms + lim.retry_window_ms);
	assert_non_null(f.st.recent_del("r0", 100));
	assert_true(f.st.recent_dels_full());
	f.st.prune_recent_dels(now_ms + lim.retry_window_ms + 1);
	assert_null(f.st.recent_del("r0", 100));
	assert_null(f.st.recent_del("r4", 104));
	assert_false(f.st.recent_dels_full());
	// and a delete learned of after the pruning is found
	f.put(c, "r9", kMiB);
	lg::Record r;
	uint64_t n = 0;
	assert_int_equal(f.st.plan_del(f.who, "r9", &r, &n, &err), 0);
	r.mutable_del()->set_request_id(109);
	f.apply(r);
	assert_non_null(f.st.recent_del("r9", 109));
}

// Identities: what one writes or lends, another may not replace, delete,
// remount or act for; an admin may.
// What one identity may have pending at once: past its quota in puts or
// in bytes a PutStart is -EDQUOT, saying so, and changes nothing; another
// identity's puts go on, an admin has no quota, a put committed or aborted
// gives its share back, and a new leader (a snapshot restored) counts the
// same.
void test_pending_quota(void **)
{
	Limits lim;
	lim.identity_pending_puts = 3;
	lim.identity_pending_bytes = 8 * kMiB;
	Fx f(lim);
	const Caller bob{ "bob", false }, admin{ "admin", true };
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 256 * kMiB);
	std::vector<lg::PutStart> p;
	for (int i = 0; i < 3; i++)
		p.push_back(f.start(c, "q" + std::to_string(i), kMiB, Fx::cfg(1)));
	lg::Record r;
	std::string err;
	assert_int_equal(f.st.plan_put_start(f.who, c, "q3", kMiB, Fx::cfg(1), {}, f.now, &r, &err),
			 -EDQUOT);
	assert_non_null(strstr(err.c_str(), "app has 3 puts of 3145728 bytes pending; its quota is 3 puts"));
	assert_int_equal(r.rec_case(), lg::Record::REC_NOT_SET);
	assert_int_equal(f.st.pending_of("app").first, 3);
	// another identity, and an admin, go on
	f.who = bob;
	lg::PutStart b = f.start(c, "b0", kMiB, Fx::cfg(1));
	f.who = admin;
	f.start(c, "a0", kMiB, Fx::cfg(1));
	// one committed, one aborted: two more for app
	f.who = Caller{ "app", false };
	f.commit("q0", p[0].version(), { 0 });
	assert_int_equal(f.st.plan_put_abort("q1", p[1].version(), &r, &err), 0);
	f.apply(r);
	assert_int_equal(f.st.pending_of("app").first, 1);
	f.start(c, "q4", kMiB, Fx::cfg(1));
	// the bytes: 2 MiB pending; 7 MiB more would pass 8, 6 MiB fills it
	f.start(c, "big", 7 * kMiB, Fx::cfg(1), -EDQUOT);
	f.start(c, "fits", 6 * kMiB, Fx::cfg(1));
	assert_int_equal(f.st.pending_of("app").second, 8 * kMiB);
	// the same counts after a snapshot, as a new leader has them
	lg::Snapshot snap;
	f.st.snapshot(&snap);
	MasterState again(lim);
	assert_int_equal(again.restore(snap, &err), 0);
	assert_int_equal(again.pending_of("app").first, 3);
	assert_int_equal(again.pending_of("app").second, 8 * kMiB);
	assert_int_equal(again.pending_of("bob").first, 1);
	assert_int_equal(again.plan_put_start(f.who, c, "q5", kMiB, Fx::cfg(1), {}, f.now, &r, &err),
			 -EDQUOT);
	(void)b;
}

void test_ownership(void **)
{
	Fx f;
	const Caller app{ "app", false }, mallory{ "mallory", false }, admin{ "admin", true };
	std::string err;
	uint64_t c = f.client(1);
	uint64_t s = f.segment(c, 0x100000000, 64 * kMiB);
	f.put(c, "k", kMiB);
	assert_string_equal(f.st.clients().at(c).identity().c_str(), "app");
	assert_string_equal(f.st.segment(s)->desc.owner_identity().c_str(), "app");

	// another identity's client id, for a call or to re-join as
	assert_int_equal(f.st.check_client(app, c, &err), 0);
	assert_int_equal(f.st.check_client(mallory, c, &err), -EPERM);
	assert_non_null(strstr(err.c_str(), "app"));
	assert_int_equal(f.st.check_client(admin, c, &err), 0);
	pb::Member m = f.st.clients().at(c);
	lg::Record r;
	assert_int_equal(f.st.plan_register_client(mallory, m, c, &r, &err), -EPERM);

	// another identity's key: neither replaced nor deleted
	f.who = mallory;
	f.start(c, "k", kMiB, Fx::cfg(1), -EPERM);
	uint64_t n = 0;
	assert_int_equal(f.st.plan_del(mallory, "k", &r, &n, &err), -EPERM);
	assert_non_null(strstr(err.c_str(), "belongs to app"));
	GetResult g;
	assert_int_equal(f.st.get("k", -1, &g, &err), 0);
	assert_string_equal(g.object.owner().c_str(), "app");
	// a new key is anyone's (mallory's client on app's node: the segment
	// below is refused for whose it is, not for where)
	uint64_t mc = f.client(1);
	f.put(mc, "m", kMiB);

	// another identity's segment: not remounted, even after its owner left
	lg::Record leave;
	leave.mutable_client_remove()->set_client_id(c);
	f.apply(leave);
	pb::SegmentDesc d = f.st.segment(s)->desc;
	uint64_t id = 0;
	bool rem = false;
	assert_int_equal(f.st.plan_register_segment(mallory, mc, d, &r, &id, &rem, &err), -EPERM);
	assert_non_null(strstr(err.c_str(), "app"));
	// the admin may, and the segment stays app's
	assert_int_equal(f.st.plan_register_segment(admin, mc, d, &r, &id, &rem, &err), 0);
	assert_true(rem);
	assert_string_equal(r.segment_add().desc().owner_identity().c_str(), "app");
	assert_int_equal(f.st.plan_del(admin, "k", &r, &n, &err), 0);

	// the owner identity outlives a snapshot
	lg::Snapshot snap;
	f.st.snapshot(&snap);
	MasterState again(f.lim);
	assert_int_equal(again.restore(snap, &err), 0);
	assert_int_equal(again.plan_del(mallory, "k", &r, &n, &err), -EPERM);
	assert_int_equal(again.get("m", -1, &g, &err), 0);
	assert_string_equal(g.object.owner().c_str(), "mallory");
}

void test_list(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	for (int i = 1; i <= 5; i++)
		f.put(c, "a/" + std::to_string(i), 16 * 1024);
	f.put(c, "b/1", 16 * 1024);
	f.start(c, "a/0pending", 16 * 1024, Fx::cfg(1));
	std::vector<pb::ObjectInfo> out;
	bool more = false;
	f.st.list("a/", "", 2, &out, &more);
	assert_int_equal(out.size(), 2);
	assert_string_equal(out[0].key().c_str(), "a/1");
	assert_string_equal(out[1].key().c_str(), "a/2");
	assert_true(more);
	out.clear();
	f.st.list("a/", "a/2", 2, &out, &more);
	assert_int_equal(out.size(), 2);
	assert_string_equal(out[0].key().c_str(), "a/3");
	assert_true(more);
	out.clear();
	f.st.list("a/", "a/4", 2, &out, &more);
	assert_int_equal(out.size(), 1);
	assert_string_equal(out[0].key().c_str(), "a/5");
	assert_false(more);
	out.clear();
	f.st.list("", "", 0, &out, &more);
	assert_int_equal(out.size(), 6);
	assert_false(more);
}

void test_sync_waits_for_earlier_puts(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	uint64_t v1 = f.put(c, "s", kMiB);
	lg::PutStart p2 = f.start(c, "s", kMiB, Fx::cfg(1));
	uint64_t sync_at = f.st.next_version() - 1;	// Sync begins here
	assert_true(f.st.pending_upto("s", sync_at));
	assert_false(f.st.pending_upto("s", v1));
	// a put begun after the Sync does not hold it
	lg::PutStart p3 = f.start(c, "s", kMiB, Fx::cfg(1));
	f.commit("s", p2.version(), { 0 });
	assert_false(f.st.pending_upto("s", sync_at));
	assert_true(f.st.pending_upto("s", p3.version()));
	assert_int_equal(f.st.newest("s")->version, p2.version());
	assert_false(f.st.pending_upto("other", sync_at));
}

void test_dead_owner(void **)
{
	Fx f;
	uint64_t c1 = f.client(1), c2 = f.client(2), c3 = f.client(3);
	uint64_t a = f.segment(c1, 0x100000000, 64 * kMiB);
	f.segment(c2, 0x200000000, 64 * kMiB);
	f.segment(c3, 0x300000000, 64 * kMiB);
	for (int i = 0; i < 10; i++)
		f.put(c2, "o" + std::to_string(i), 2 * kMiB, 2);
	lg::PutStart pend = f.start(c2, "mid", kMiB, Fx::cfg(3));
	int on_a = -1;
	for (int i = 0; i < pend.replicas_size(); i++)
		if (pend.replicas(i).shards(0).segment_id() == a)
			on_a = i;
	assert_true(on_a >= 0);
	size_t touching = f.st.replicas_on(a).size();
	assert_true(touching > 0);

	lg::Record dead;
	dead.mutable_client_remove()->set_client_id(c1);
	dead.mutable_client_remove()->set_dead(true);
	f.apply(dead);
	assert_int_equal(f.st.segment(a)->desc.state(), pb::SEGMENT_DEAD);
	assert_true(f.st.replicas_on(a).empty());
	// the dropped replicas' places stay taken while they may be copied
	assert_true(f.st.segment(a)->alloc->used() > 0);
	auto salvage = f.st.salvage();
	assert_int_equal(salvage.size(), touching - 1);	// the pending one is not salvage
	assert_used_matches(f.st);
	// every version that lost one is planned for repair, one replica short
	// (a replica's shards keep off the other replica's segments)
	std::set<std::pair<std::string, uint64_t>> hit;
	for (const auto &sv : salvage)
		hit.insert({ sv.key, sv.version });
	assert_int_equal(hit.size(), salvage.size());
	auto plans = f.st.plan_repairs();
	assert_int_equal(plans.size(), hit.size());
	for (const auto &p : plans) {
		assert_int_equal(p.dram_missing, 1);
		assert_int_equal(f.st.newest(p.key)->replicas.size(), 1);
	}
	// a remount while salvage is held: new puts do not land on it
	{
		uint64_t c1b = f.client(1);
		bool rem = false;
		assert_int_equal(f.segment(c1b, 0x100000000, 64 * kMiB, &rem), a);
		assert_true(rem);
		for (int k = 0; k < 20; k++)
			f.start(c1b, "z" + std::to_string(k), kMiB, Fx::cfg(1));
		std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> held;
		for (const auto &sv : salvage)
			for (const auto &sh : sv.replica.shards())
				held[sh.segment_id()].push_back({ sh.offset(), sh.offset() + sh.length() });
		for (const auto &[key, o] : f.st.objects())
			for (const auto &[ver, v] : o.versions)
				for (const auto &r : v.replicas)
					for (const auto &sh : r.r.shards())
						for (const auto &[b, e] : held[sh.segment_id()])
							assert_true(sh.offset() + sh.length() <= b || sh.offset() >= e);
		// the leader's GC ends the salvage it does not need, by a record
		for (const auto &sv : salvage) {
			lg::Record drop;
			f.st.plan_salvage_drop(sv.key, sv.version, &drop);
			f.apply(drop);
		}
		assert_true(f.st.salvage().empty());
		lg::Record dead2;
		dead2.mutable_client_remove()->set_client_id(c1b);
		dead2.mutable_client_remove()->set_dead(true);
		f.apply(dead2);
		// (only pending puts were on it: nothing to salvage)
		assert_true(f.st.salvage().empty());
		for (int k = 0; k < 20; k++) {
			lg::Record ab;
			std::string e2;
			const VersionState *zv = nullptr;
			if (const ObjectState *zo = f.st.find_object("z" + std::to_string(k)))
				zv = &zo->versions.begin()->second;
			if (zv && !zv->complete) {
				assert_int_equal(f.st.plan_put_abort("z" + std::to_string(k), zv->version, &ab, &e2), 0);
				f.apply(ab);
			}
		}
		// what stays taken is the pending put's place on it ("mid",
		// held while its writer may still write)
		uint64_t mid_on_a = 0;
		for (const auto &sh : pend.replicas(on_a).shards())
			if (sh.segment_id() == a)
				mid_on_a += OffsetAllocator::round(sh.length());
		assert_int_equal(f.st.segment(a)->alloc->used(), mid_on_a);
		assert_used_matches(f.st);
	}
	// a new replica goes on the living, shard j away from the survivor's
	std::string err;
	pb::Replica r;
	const VersionState *v = f.st.newest(plans[0].key);
	assert_int_equal(f.st.place_replica(plans[0].key, plans[0].version, pb::SEGMENT_DRAM, {}, -1,
					    &r, &err), 0);
	for (int j = 0; j < r.shards_size(); j++) {
		assert_true(r.shards(j).segment_id() != a);
		assert_true(r.shards(j).segment_id() != v->replicas[0].r.shards(j).segment_id());
	}
	f.st.release_replica(r);
	// the two living segments each hold shard j of one replica already:
	// a third replica has no place
	lg::Record add;
	add.mutable_replica_add()->set_key(plans[0].key);
	add.mutable_replica_add()->set_version(plans[0].version);
	assert_int_equal(f.st.place_replica(plans[0].key, plans[0].version, pb::SEGMENT_DRAM, {}, -1,
					    &r, &err), 0);
	f.st.release_replica(r);
	*add.mutable_replica_add()->mutable_replica() = r;
	f.apply(add);
	assert_int_equal(f.st.place_replica(plans[0].key, plans[0].version, pb::SEGMENT_DRAM, {}, -1,
					    &r, &err), -ENOSPC);
	uint64_t c4 = f.client(4);
	f.segment(c4, 0x400000000, 64 * kMiB);
	assert_int_equal(f.st.place_replica(plans[0].key, plans[0].version, pb::SEGMENT_DRAM, {}, -1,
					    &r, &err), 0);
	f.st.release_replica(r);
	// nothing placed on the dead segment
	for (int k = 0; k < 10; k++) {
		lg::PutStart p = f.start(c2, "n" + std::to_string(k), kMiB, Fx::cfg(3));
		for (const auto &rep : p.replicas())
			assert_true(rep.shards(0).segment_id() != a);
	}
	// the pending put's replica on the dead segment keeps its places
	// while the put lasts (its writer may still write there), and does
	// not count for its commit; when the put ends, they are freed
	const VersionState *mid = f.st.find_version("mid", pend.version());
	assert_true(mid->replicas[static_cast<size_t>(on_a)].lost);
	assert_true(mid->replicas[static_cast<size_t>(on_a)].held);
	assert_used_matches(f.st);
	{
		lg::Snapshot snap;
		f.st.snapshot(&snap);
		MasterState restored(Limits{});
		assert_int_equal(restored.restore(snap, &err), 0);
		assert_true(restored.find_version("mid", pend.version())
				    ->replicas[static_cast<size_t>(on_a)].held);
		assert_used_matches(restored);
	}
	f.commit("mid", pend.version(), { static_cast<uint32_t>(on_a) }, -ESTALE);
	assert_null(f.st.find_version("mid", pend.version()));
	assert_used_matches(f.st);
	// the owner's node comes back with the same memory: the same id, alive
	uint64_t c1c = f.client(1);
	bool remounted = false;
	assert_int_equal(f.segment(c1c, 0x100000000, 64 * kMiB, &remounted), a);
	assert_true(remounted);
	assert_int_equal(f.st.segment(a)->desc.state(), pb::SEGMENT_ALIVE);
	assert_no_overlap(f.st);
}

/*
 * A leader from before salvage was logged freed the salvage of a dead
 * segment without a record once it was not needed; the segment came back
 * and a new put landed where the salvage was.  A replay of that log makes
 * the salvage again (the dead segment's record holds it), and it must give
 * way to the put's record as it did on that leader: otherwise the record
 * finds its place taken (a 10-minute chaos run's masters all failed to
 * take over this way).
 */
void test_replay_after_salvage_released(void **)
{
	Fx f;
	uint64_t c1 = f.client(1), c2 = f.client(2);
	uint64_t a = f.segment(c1, 0x100000000, 4 * kMiB);
	f.segment(c2, 0x200000000, 4 * kMiB);
	f.put(c2, "k", kMiB, 2);

	lg::Record dead;
	dead.mutable_client_remove()->set_client_id(c1);
	dead.mutable_client_remove()->set_dead(true);
	f.apply(dead);
	assert_true(f.st.segment(a)->alloc->used() > 0);	// held as salvage
	assert_int_equal(f.st.salvage().size(), 1);
	// this leader's GC ends it by a record; the old one's left none
	size_t drop_at = f.log.size();
	lg::Record drop;
	f.st.plan_salvage_drop("k", f.st.newest("k")->version, &drop);
	f.apply(drop);
	bool rem = false;
	uint64_t c1b = f.client(1);
	assert_int_equal(f.segment(c1b, 0x100000000, 4 * kMiB, &rem), a);
	assert_true(rem);
	// two replicas on two segments: one is on a, where the salvage was
	f.put(c2, "after", kMiB, 2);
	bool reused = false;
	for (const auto &r : f.st.newest("after")->replicas)
		reused = reused || (r.r.shards(0).segment_id() == a && r.r.shards(0).offset() == 0);
	assert_true(reused);

	// the log as the old leader wrote it: no SalvageDrop.  Its replay is
	// the live state: the salvage gave way to the put.
	std::vector<lg::Record> old_log = f.log;
	old_log.erase(old_log.begin() + static_cast<long>(drop_at));
	Limits lim;
	MasterState st(lim);
	replay(st, old_log);
	assert_true(st.salvage().empty());
	assert_string_equal(image_of(st).c_str(), f.image().c_str());
	assert_no_overlap(st);
	assert_used_matches(st);
	// and the log with the record replays to the same
	MasterState st2(lim);
	replay(st2, f.log);
	assert_string_equal(image_of(st2).c_str(), f.image().c_str());
}

// A replica of 2 shards, on seg0 at off0 and seg1 at off1 (1 MiB each).
pb::Replica striped(uint64_t seg0, uint64_t off0, uint64_t seg1, uint64_t off1)
{
	pb::Replica r;
	r.set_type(pb::SEGMENT_DRAM);
	for (auto [seg, off] : { std::pair{ seg0, off0 }, std::pair{ seg1, off1 } }) {
		pb::Shard *s = r.add_shards();
		s->set_segment_id(seg);
		s->set_offset(off);
		s->set_length(kMiB);
	}
	return r;
}

// A committed put of key (2 MiB, one DRAM replica) placed by hand at r.
uint64_t put_at(Fx &f, uint64_t client, const std::string &key, const pb::Replica &r)
{
	lg::Record ps;
	lg::PutStart *p = ps.mutable_put_start();
	p->set_key(key);
	p->set_version(f.st.next_version());
	p->set_size(2 * kMiB);
	*p->mutable_config() = Fx::cfg(1);
	p->set_client_id(client);
	p->set_owner(f.who.identity);
	p->set_deadline_ns(f.now + 60 * kSec);
	*p->add_replicas() = r;
	f.apply(ps);
	f.commit(key, p->version(), { 0 });
	return p->version();
}

/*
 * Salvage is logged state: made by the record of a dead segment, in a
 * snapshot, and ended only by records -- a ReplicaAdd of the same replica
 * (the segment remounted: re-adopted, its places kept), the end of its
 * version (a delete's VersionDrop), the removal of a segment under it
 * (its shards elsewhere freed too).  A replay, or a restore and replay,
 * is the live state at every step, and nothing leaks.
 */
void test_salvage_logged(void **)
{
	Fx f;
	std::string err;
	uint64_t c1 = f.client(1), c2 = f.client(2);
	uint64_t a = f.segment(c1, 0x100000000, 16 * kMiB);
	uint64_t b = f.segment(c2, 0x200000000, 16 * kMiB);
	// striped over a and b; wholly on a (twice)
	uint64_t sv = put_at(f, c2, "s", striped(a, 0, b, 0));
	pb::Replica on_a = striped(a, 2 * kMiB, a, 3 * kMiB);
	uint64_t tv = put_at(f, c2, "t", on_a);
	uint64_t uv = put_at(f, c2, "u", striped(a, 4 * kMiB, a, 5 * kMiB));
	auto same = [&] {
		MasterState r(f.lim);
		replay(r, f.log);
		assert_string_equal(image_of(r).c_str(), f.image().c_str());
		lg::Snapshot snap;
		f.st.snapshot(&snap);
		MasterState q(f.lim);
		assert_int_equal(q.restore(snap, &err), 0);
		assert_string_equal(image_of(q).c_str(), f.image().c_str());
		assert_used_matches(f.st);
	};

	lg::Record dead;
	dead.mutable_client_remove()->set_client_id(c1);
	dead.mutable_client_remove()->set_dead(true);
	f.apply(dead);
	assert_int_equal(f.st.salvage().size(), 3);
	assert_int_equal(f.st.find_version("s", sv)->salvage.size(), 1);
	assert_true(f.st.find_version("t", tv)->replicas.empty());
	assert_true(f.st.salvage_on(a));
	assert_true(f.st.salvage_on(b));
	assert_int_equal(f.st.segment(a)->alloc->used(), 5 * kMiB);
	assert_int_equal(f.st.segment(b)->alloc->used(), kMiB);
	same();

	// deleted and dropped: its salvage goes with it
	lg::Record del, gc;
	uint64_t n = 0;
	assert_int_equal(f.st.plan_del(f.who, "u", &del, &n, &err), 0);
	f.apply(del);
	gc.mutable_version_drop()->set_key("u");
	gc.mutable_version_drop()->set_version(uv);
	f.apply(gc);
	assert_int_equal(f.st.salvage().size(), 2);
	assert_int_equal(f.st.segment(a)->alloc->used(), 3 * kMiB);
	same();

	// the owner comes back: a new put does not land on the salvage, and
	// the ReplicaAdd re-adopting "t" keeps its places
	uint64_t c1b = f.client(1);
	bool rem = false;
	assert_int_equal(f.segment(c1b, 0x100000000, 16 * kMiB, &rem), a);
	assert_true(rem);
	lg::PutStart p = f.start(c1b, "new", 4 * kMiB, Fx::cfg(1));
	// (the salvage on a: [0, 1) MiB of "s", [2, 4) MiB of "t")
	for (const auto &r : p.replicas())
		for (const auto &s : r.shards())
			assert_true(s.segment_id() != a ||
				    (s.offset() >= kMiB && s.offset() + s.length() <= 2 * kMiB) ||
				    s.offset() >= 4 * kMiB);
	f.commit("new", p.version(), { 0 });
	lg::Record add;
	add.mutable_replica_add()->set_key("t");
	add.mutable_replica_add()->set_version(tv);
	*add.mutable_replica_add()->mutable_replica() = on_a;
	uint64_t before = f.st.segment(a)->alloc->used();
	f.apply(add);
	assert_int_equal(f.st.segment(a)->alloc->used(), before);
	assert_int_equal(f.st.find_version("t", tv)->replicas.size(), 1);
	assert_true(f.st.find_version("t", tv)->salvage.empty());
	assert_int_equal(f.st.salvage().size(), 1);
	same();

	// an admin removes a: the salvage of "s" goes, its shard on b too
	lg::Record remove;
	remove.mutable_segment_remove()->set_segment_id(a);
	f.apply(remove);
	assert_true(f.st.salvage().empty());
	assert_false(f.st.salvage_on(b));
	assert_int_equal(f.st.segment(b)->alloc->used(), 0);
	same();
	assert_no_overlap(f.st);
}

void test_leave_and_remove(void **)
{
	Fx f;
	uint64_t c1 = f.client(1), c2 = f.client(2);
	uint64_t a = f.segment(c1, 0x100000000, 64 * kMiB);
	uint64_t b = f.segment(c2, 0x200000000, 64 * kMiB);
	f.put(c2, "x", kMiB, 2);
	// a leave without drain: the memory stays, owned by nobody and
	// DRAINING (the leader reclaims it: nothing new lands there)
	lg::Record leave;
	leave.mutable_client_remove()->set_client_id(c1);
	f.apply(leave);
	assert_int_equal(f.st.segment(a)->desc.state(), pb::SEGMENT_DRAINING);
	assert_int_equal(f.st.segment(a)->desc.owner(), 0);
	assert_true(f.st.segment(a)->desc.reclaimed());
	assert_int_equal(f.st.newest("x")->replicas.size(), 2);
	// its replica is still a copy: the drain moves it, no repair
	assert_true(f.st.plan_repairs().empty());
	// a removal drops its replicas; the id is not reused
	lg::Record rm;
	rm.mutable_segment_remove()->set_segment_id(a);
	f.apply(rm);
	assert_null(f.st.segment(a));
	assert_int_equal(f.st.newest("x")->replicas.size(), 1);
	assert_int_equal(f.st.newest("x")->replicas[0].r.shards(0).segment_id(), b);
	uint64_t n = f.segment(c2, 0x100000000, 64 * kMiB);
	assert_true(n > b);
}

void test_replicate_plan(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	for (int i = 0; i < 3; i++)
		f.segment(c, 0x100000000ULL * (i + 1), 64 * kMiB);
	uint64_t v = f.put(c, "r", 3 * kMiB, 3);
	std::vector<lg::Record> recs;
	uint64_t ver = 0;
	bool deferred = false;
	std::string err;
	assert_int_equal(f.st.plan_replicate("r", Fx::cfg(1, 0, pb::FLUSH_LAZY), f.now, &recs, &ver, &deferred, &err), 0);
	assert_int_equal(ver, v);
	for (const auto &r : recs)
		f.apply(r);
	assert_int_equal(f.st.newest("r")->replicas.size(), 1);
	assert_int_equal(f.st.newest("r")->config.flush(), pb::FLUSH_LAZY);
	auto fl = f.st.plan_flushes(f.st.applied());	// every record durable
	assert_int_equal(fl.size(), 1);
	recs.clear();
	assert_int_equal(f.st.plan_replicate("r", Fx::cfg(2), f.now, &recs, &ver, &deferred, &err), 0);
	for (const auto &r : recs)
		f.apply(r);
	auto plans = f.st.plan_repairs();
	assert_int_equal(plans.size(), 1);
	assert_int_equal(plans[0].dram_missing, 1);
	recs.clear();
	assert_int_equal(f.st.plan_replicate("r", Fx::cfg(0), f.now, &recs, &ver, &deferred, &err), -EINVAL);
	assert_int_equal(f.st.plan_replicate("nothere", Fx::cfg(1), f.now, &recs, &ver, &deferred, &err), -ENOENT);
}

// Replicate drops no replica a reader may hold: not under a Get's lease,
// not while a new leader waits out the old one's leases.  The drop is
// left for plan_trim, which makes it, by the replica's places, once no
// reader may hold the version.
void test_replicate_waits_for_readers(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	uint64_t s1 = f.segment(c, 0x100000000ULL, 64 * kMiB);
	uint64_t s2 = f.segment(c, 0x200000000ULL, 64 * kMiB);
	uint64_t v = f.put(c, "r", kMiB, 2);
	const int64_t lease = f.st.limits().get_lease_ns;
	f.st.lease("r", v, f.now + lease);
	std::vector<lg::Record> recs;
	uint64_t ver = 0;
	bool deferred = false;
	std::string err;
	assert_int_equal(f.st.plan_replicate("r", Fx::cfg(1), f.now, &recs, &ver, &deferred, &err), 0);
	assert_true(deferred);
	assert_int_equal(recs.size(), 1);	// the ConfigSet alone
	for (const auto &r : recs)
		f.apply(r);
	uint64_t used = f.st.segment(s1)->alloc->used() + f.st.segment(s2)->alloc->used();
	assert_int_equal(f.st.newest("r")->replicas.size(), 2);
	assert_true(f.st.plan_trim("r", f.now + lease - 1).empty());
	auto drops = f.st.plan_trim("r", f.now + lease + 1);
	assert_int_equal(drops.size(), 1);
	assert_true(drops[0].replica_drop().has_replica());
	pb::Replica kept = f.st.newest("r")->replicas[0].r;
	for (const auto &r : drops)
		f.apply(r);
	assert_int_equal(f.st.newest("r")->replicas.size(), 1);
	assert_string_equal(f.st.newest("r")->replicas[0].r.SerializeAsString().c_str(),
			    kept.SerializeAsString().c_str());
	assert_true(f.st.segment(s1)->alloc->used() + f.st.segment(s2)->alloc->used() < used);
	assert_true(f.st.plan_trim("r", f.now + lease + 1).empty());

	// a new leader's wait for the old leases holds it back the same way
	recs.clear();
	assert_int_equal(f.st.plan_replicate("r", Fx::cfg(2), f.now, &recs, &ver, &deferred, &err), 0);
	for (const auto &r : recs)
		f.apply(r);
	f.put(c, "s", kMiB, 2);
	f.st.set_gc_not_before(f.now + lease);
	recs.clear();
	assert_int_equal(f.st.plan_replicate("s", Fx::cfg(1), f.now, &recs, &ver, &deferred, &err), 0);
	assert_true(deferred);
	assert_int_equal(recs.size(), 1);
	for (const auto &r : recs)
		f.apply(r);
	assert_true(f.st.plan_trim("s", f.now + lease - 1).empty());
	assert_int_equal(f.st.plan_trim("s", f.now + lease).size(), 1);
}

void test_bad_input(void **)
{
	Limits lim;
	lim.max_object_size = 8 * kMiB;
	Fx f(lim);
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	f.start(c, "", kMiB, Fx::cfg(1), -EINVAL);
	f.start(c, std::string(1025, 'k'), kMiB, Fx::cfg(1), -EINVAL);
	f.start(c, std::string(1024, 'k'), kMiB, Fx::cfg(1), 0);
	f.start(c, std::string("a\0b", 3), kMiB, Fx::cfg(1), -EINVAL);
	f.start(c, "zero", 0, Fx::cfg(1), -EINVAL);
	f.start(c, "big", 8 * kMiB + 1, Fx::cfg(1), -EINVAL);
	f.start(c, "max", 8 * kMiB, Fx::cfg(1), 0);
	f.start(c, "norep", kMiB, Fx::cfg(0), -EINVAL);
	GetResult g;
	std::string err;
	assert_int_equal(f.st.get("", -1, &g, &err), -EINVAL);
	assert_int_equal(f.st.get("absent", -1, &g, &err), -ENOENT);
	f.commit("absent", 12345, { 0 }, -ENOENT);
	lg::PutStart p = f.start(c, "idx", kMiB, Fx::cfg(1));
	f.commit("idx", p.version(), { 7 }, -EINVAL);
	// segments: too small, no address; unknown client
	pb::SegmentDesc d;
	d.set_size(4096);
	d.set_node_id(1);
	d.set_gaddr(0x500000000);
	lg::Record r;
	uint64_t id;
	bool rem;
	assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), -EINVAL);
	d.set_size(kMiB);
	d.set_gaddr(0);
	assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), -EINVAL);
	d.set_gaddr(0x500000000);
	assert_int_equal(f.st.plan_register_segment(f.who, 999, d, &r, &id, &rem, &err), -ENOENT);
	// over another segment's memory, by one byte or more: refused, named
	uint64_t first = f.segment(c, 0x600000000, 4 * kMiB);
	const uint32_t cn = f.st.clients().at(c).node_id();
	const uint64_t base = f.st.segment(first)->desc.gaddr();
	d.set_type(pb::SEGMENT_DRAM);
	d.set_node_id(cn);
	d.set_size(kMiB);
	for (uint64_t at : { base + kMiB, base + 4 * kMiB - 1,
			     base - kMiB + 1 }) {
		d.set_gaddr(at);
		r.Clear();
		assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), -EEXIST);
		assert_non_null(strstr(err.c_str(), ("segment " + std::to_string(first)).c_str()));
		assert_int_equal(r.rec_case(), lg::Record::REC_NOT_SET);
	}
	// beside it, and the same one again (a remount), are fine
	d.set_gaddr(base + 4 * kMiB);
	assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), 0);
	d.set_gaddr(base);
	d.set_size(4 * kMiB);
	assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), 0);
	assert_true(rem);
	// an NVMe-oF namespace's ranges likewise, per namespace
	f.segment(c, 0x100000, 4 * kMiB, nullptr, pb::SEGMENT_NVMEOF);
	pb::SegmentDesc n = f.st.segment(f.segment(c, 0x100000, 4 * kMiB, nullptr,
						   pb::SEGMENT_NVMEOF))->desc;
	n.set_base(0x100000 + kMiB);
	assert_int_equal(f.st.plan_register_segment(f.who, c, n, &r, &id, &rem, &err), -EEXIST);
	n.set_subnqn("nqn.other");
	assert_int_equal(f.st.plan_register_segment(f.who, c, n, &r, &id, &rem, &err), 0);
	// a DRAM segment is on the node its address names, and a client
	// offers its own node's memory only; an admin may name another
	d.set_size(kMiB);
	d.set_gaddr(base + 64 * kMiB + (1ull << 48));
	assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "is not on its node"));
	d.set_node_id(cn + 1);
	assert_int_equal(f.st.plan_register_segment(f.who, c, d, &r, &id, &rem, &err), -EPERM);
	assert_non_null(strstr(err.c_str(), ("is on node " + std::to_string(cn)).c_str()));
	const Caller admin{ "admin", true };
	assert_int_equal(f.st.plan_register_segment(admin, c, d, &r, &id, &rem, &err), 0);
	// and one that wraps past the end is no segment
	d.set_node_id(0xffff);
	d.set_gaddr(~0ull - kMiB + 2);
	assert_int_equal(f.st.plan_register_segment(admin, c, d, &r, &id, &rem, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "wraps"));
	pb::Member m;
	assert_int_equal(f.st.plan_register_client(f.who, m, 0, &r, &err), -EINVAL);
	// a record that does not fit the state is refused, not applied
	lg::Record bogus;
	bogus.mutable_put_commit()->set_key("nope");
	bogus.mutable_put_commit()->set_version(77);
	assert_int_equal(f.st.apply(bogus, &err), -EINVAL);
	assert_int_equal(f.st.apply(lg::Record(), &err), -EINVAL);
	// an end of salvage for a version the state does not hold
	lg::Record drop;
	f.st.plan_salvage_drop("nope", 77, &drop);
	assert_int_equal(f.st.apply(drop, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "salvage drop of unknown"));
}

bool overlaps(const pb::Replica &a, const pb::Replica &b)
{
	for (const auto &x : a.shards())
		for (const auto &y : b.shards())
			if (x.segment_id() == y.segment_id() &&
			    x.offset() < y.offset() + OffsetAllocator::round(y.length()) &&
			    y.offset() < x.offset() + OffsetAllocator::round(x.length()))
				return true;
	return false;
}

// Space reserved for a copy (ReplicaReserve) is nobody else's until a
// ReplicaAdd takes it over or a ReplicaRelease gives it back: not under a
// later term either (a leader of the term that reserved it may still be
// writing there), and not after a snapshot or a replay.
void test_reservations(void **)
{
	Fx f;
	std::string err;
	uint64_t c1 = f.client(1), c2 = f.client(2);
	uint64_t s1 = f.segment(c1, 0x100000000, 16 * kMiB);
	uint64_t s2 = f.segment(c2, 0x200000000, 16 * kMiB);
	lg::Record t;
	f.st.plan_term(&t);
	f.apply(t);
	uint64_t v = f.put(c1, "k", 6 * kMiB);
	// a second replica of k, reserved by term 1 (placed, released, reserved)
	pb::Replica dst;
	assert_int_equal(f.st.place_replica("k", v, pb::SEGMENT_DRAM, {}, -1, &dst, &err), 0);
	f.st.release_replica(dst);
	lg::Record res;
	f.st.plan_reserve("k", v, dst, &res);
	assert_int_equal(res.replica_reserve().term(), 1);
	uint64_t id = res.replica_reserve().id();
	assert_true(id > 0);
	uint64_t used = f.st.segment(s1)->alloc->used() + f.st.segment(s2)->alloc->used();
	f.apply(res);
	assert_int_equal(f.st.segment(s1)->alloc->used() + f.st.segment(s2)->alloc->used(),
			 used + 6 * kMiB);
	assert_int_equal(f.st.reservations().size(), 1);
	// the same id twice, or over space in use: a corrupt log
	assert_int_equal(f.st.apply(res, &err), -EINVAL);
	lg::Record clash = res;
	clash.mutable_replica_reserve()->set_id(id + 1);
	assert_int_equal(f.st.apply(clash, &err), -EINVAL);

	// a new term: still reserved; puts fill everything else around it
	f.st.plan_term(&t);
	f.apply(t);
	for (int i = 0; i < 40; i++) {
		lg::Record r;
		if (f.st.plan_put_start(f.who, c2, "o" + std::to_string(i), kMiB, Fx::cfg(1), {}, f.now, &r,
					&err))
			break;
		f.apply(r);
		for (const auto &rep : r.put_start().replicas())
			assert_false(overlaps(rep, dst));
	}
	assert_int_equal(f.st.segment(s1)->alloc->used() + f.st.segment(s2)->alloc->used(),
			 32 * kMiB);

	// replay and a snapshot keep it, and the next id
	MasterState a(f.lim);
	replay(a, f.log);
	assert_string_equal(image_of(a).c_str(), f.image().c_str());
	lg::Snapshot snap;
	f.st.snapshot(&snap);
	MasterState b(f.lim);
	assert_int_equal(b.restore(snap, &err), 0);
	assert_string_equal(image_of(b).c_str(), f.image().c_str());
	lg::Record next;
	b.plan_reserve("k", v, dst, &next);
	assert_int_equal(next.replica_reserve().id(), id + 1);
	assert_int_equal(next.replica_reserve().term(), 2);

	// a ReplicaAdd takes the space over (no second reservation of it);
	// one naming another place, or an unknown reservation, is refused
	lg::Record add;
	add.mutable_replica_add()->set_key("k");
	add.mutable_replica_add()->set_version(v);
	*add.mutable_replica_add()->mutable_replica() = dst;
	add.mutable_replica_add()->set_reservation(id + 7);
	assert_int_equal(b.apply(add, &err), -EINVAL);
	lg::Record wrong = add;
	wrong.mutable_replica_add()->set_reservation(id);
	wrong.mutable_replica_add()->mutable_replica()->mutable_shards(0)->set_offset(
		dst.shards(0).offset() + 16384);
	assert_int_equal(b.apply(wrong, &err), -EINVAL);
	add.mutable_replica_add()->set_reservation(id);
	assert_int_equal(b.apply(add, &err), 0);
	assert_true(b.reservations().empty());
	assert_int_equal(b.find_version("k", v)->replicas.size(), 2);
	assert_int_equal(b.segment(s1)->alloc->used() + b.segment(s2)->alloc->used(), 32 * kMiB);

	// a ReplicaRelease gives it back: room for 6 MiB more
	lg::Record rel;
	rel.mutable_replica_release()->set_id(id);
	f.apply(rel);
	assert_true(f.st.reservations().empty());
	assert_int_equal(f.st.segment(s1)->alloc->used() + f.st.segment(s2)->alloc->used(),
			 26 * kMiB);
	assert_int_equal(f.st.apply(rel, &err), -EINVAL);	// released once
	MasterState c(f.lim);
	replay(c, f.log);
	assert_string_equal(image_of(c).c_str(), f.image().c_str());

	// a reservation outlives the removal of its segment (its space on
	// others stays taken), in a snapshot too
	assert_int_equal(f.st.place_replica("k", v, pb::SEGMENT_DRAM, {}, -1, &dst, &err), 0);
	f.st.release_replica(dst);
	res.Clear();
	f.st.plan_reserve("k", v, dst, &res);
	f.apply(res);
	lg::Record rm;
	rm.mutable_segment_remove()->set_segment_id(dst.shards(0).segment_id());
	f.apply(rm);
	assert_int_equal(f.st.reservations().size(), 1);
	f.st.snapshot(&snap);
	MasterState d(f.lim);
	assert_int_equal(d.restore(snap, &err), 0);
	assert_string_equal(image_of(d).c_str(), f.image().c_str());
	rel.mutable_replica_release()->set_id(res.replica_reserve().id());
	f.apply(rel);
	assert_true(f.st.reservations().empty());
}

// The state the file log in dir holds (a snapshot, then its records),
// as image_of() shows it.
std::string replayed_image(const std::string &dir, const Limits &lim)
{
	std::string err, snap;
	auto log = open_file_log(dir, &err);
	assert_non_null(log.get());
	std::vector<std::string> recs;
	assert_int_equal(log->load(&snap, &recs, &err), 0);
	assert_false(snap.empty());
	MasterState st(lim);
	lg::Snapshot s;
	assert_true(s.ParseFromString(snap));
	assert_int_equal(st.restore(s, &err), 0);
	for (const auto &e : recs) {
		lg::LogEntry entry;
		assert_true(entry.ParseFromString(e));
		for (const auto &r : entry.records())
			assert_int_equal(st.apply(r, &err), 0);
	}
	return image_of(st);
}

// The journal with the file log: group commit, snapshots, reload.
void test_journal_reload(void **)
{
	char tmpl[] = "/tmp/test_store_meta.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	std::string dir = tmpl, err;
	Limits lim;
	std::string live;
	{
		std::mutex mu;
		MasterState st(lim);
		auto log = open_file_log(dir, &err);
		assert_non_null(log.get());
		int failed = 0;
		Journal j(std::move(log), 5, mu, [&](lg::Snapshot *s) { st.snapshot(s); },
			  [&](int ret, const std::string &) { failed = ret; });
		Fx f(lim);	// plans; its records go to st through the journal
		uint64_t c = f.client(1);
		f.segment(c, 0x100000000, 64 * kMiB);
		for (int i = 0; i < 30; i++)
			f.put(c, "j" + std::to_string(i % 4), 64 * 1024);
		uint64_t seq = 0;
		// one by one (an entry each), then a burst (group committed)
		for (size_t i = 0; i < f.log.size(); i++) {
			{
				std::lock_guard<std::mutex> g(mu);
				assert_int_equal(st.apply(f.log[i], &err), 0);
				seq = j.submit(f.log[i]);
			}
			if (i < f.log.size() / 2)
				assert_int_equal(j.wait(seq, &err), 0);
		}
		assert_int_equal(j.wait(seq, &err), 0);
		assert_int_equal(failed, 0);
		assert_true(j.records_since_snapshot() < 10);
		live = image_of(st);
		j.stop();
	}
	assert_string_equal(replayed_image(dir, lim).c_str(), live.c_str());
	std::string cmd = "rm -rf " + dir;
	assert_int_equal(system(cmd.c_str()), 0);
}

// Leases end when their last extension says, found without a walk of
// every lease: an extended one survives its first end, an ended one goes,
// and one taken again after its end ends at its new end.
void test_lease_ends(void **)
{
	Limits lim;
	MasterState st(lim);
	st.lease("a", 1, 100);
	st.lease("b", 1, 200);
	st.lease("a", 1, 300);	// extended
	st.lease("c", 1, 150);
	st.lease("c", 1, 120);	// (shorter: no change)
	st.expire_leases(99);
	assert_int_equal(st.lease_count(), 3);
	st.expire_leases(150);
	assert_int_equal(st.lease_count(), 2);
	assert_true(st.leased("a", 1, 150));
	assert_false(st.leased("c", 1, 150));
	assert_true(st.leased("b", 1, 150));
	st.expire_leases(250);
	assert_int_equal(st.lease_count(), 1);
	assert_true(st.leased("a", 1, 250));
	st.lease("b", 1, 400);	// again, after it ended
	st.expire_leases(300);
	assert_int_equal(st.lease_count(), 1);
	assert_false(st.leased("a", 1, 300));
	assert_true(st.leased("b", 1, 300));
	st.expire_leases(1000);
	assert_int_equal(st.lease_count(), 0);
}

// A journal over a new file log in a scratch directory, whose snapshots
// run take_snapshot (after the state's own copy), and the records of 30
// puts to feed it.
struct JournalFx {
	std::string dir, err;
	Limits lim;
	std::mutex mu;
	MasterState st{ lim };
	int failed = 0;
	std::function<void()> in_snapshot = [] {};
	std::unique_ptr<Journal> j;
	Fx f{ lim };	// plans; its records go to st through the journal
	size_t fed = 0;

	explicit JournalFx(uint64_t snapshot_every)
	{
		char tmpl[] = "/tmp/test_store_meta.XXXXXX";
		assert_non_null(mkdtemp(tmpl));
		dir = tmpl;
		auto log = open_file_log(dir, &err);
		assert_non_null(log.get());
		j = std::make_unique<Journal>(
			std::move(log), snapshot_every, mu,
			[this](lg::Snapshot *s) {
				st.snapshot(s);
				in_snapshot();
			},
			[this](int ret, const std::string &) { failed = ret; });
		uint64_t c = f.client(1);
		f.segment(c, 0x100000000, 64 * kMiB);
		for (int i = 0; i < 30; i++)
			f.put(c, "j" + std::to_string(i % 4), 64 * 1024);
	}
	~JournalFx()
	{
		j.reset();
		std::string cmd = "rm -rf " + dir;
		if (system(cmd.c_str()))
			fprintf(stderr, "could not remove %s\n", dir.c_str());
	}
	// applies and submits the next n records, each waited for (a log
	// entry each) if wait_each; the last one's number
	uint64_t feed(size_t n, bool wait_each)
	{
		uint64_t seq = 0;
		for (size_t end = std::min(f.log.size(), fed + n); fed < end; fed++) {
			{
				std::lock_guard<std::mutex> g(mu);
				assert_int_equal(st.apply(f.log[fed], &err), 0);
				seq = j->submit(f.log[fed]);
			}
			if (wait_each)
				assert_int_equal(j->wait(seq, &err), 0);
		}
		return seq;
	}
	// what the log in dir holds, replayed
	std::string reloaded()
	{
		j.reset();	// (and with it the log's lock)
		return replayed_image(dir, lim);
	}
	// the rest of the records, snapshots taken as they fall due: all
	// durable, the log compacted, and what it holds the live state
	void finish()
	{
		in_snapshot = [] {};
		uint64_t seq = feed(f.log.size(), true);
		assert_int_equal(j->wait(seq, &err), 0);
		assert_int_equal(failed, 0);
		assert_true(j->records_since_snapshot() < 10);
		std::string live = image_of(st);
		assert_string_equal(reloaded().c_str(), live.c_str());
	}
};

// Reads one int from fd, or fails after a minute (a hang guard: the
// verdicts are on what is read).
int read_int(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int v = 0;
	if (poll(&p, 1, 60000) != 1 || read(fd, &v, sizeof(v)) != sizeof(v))
		fail_msg("nothing came from the snapshot");
	return v;
}

// The snapshot's copy of the state is made in a forked child while the
// state mutex is free: a state of millions of objects would otherwise
// hold every RPC off for seconds.  The copy still holds exactly what the
// log holds.
void test_journal_snapshot_off_the_lock(void **)
{
	JournalFx jf(5);
	int started[2], go[2];
	assert_int_equal(pipe(started), 0);
	assert_int_equal(pipe(go), 0);
	jf.in_snapshot = [&] {
		int pid = getpid();
		if (write(started[1], &pid, sizeof(pid)) != sizeof(pid) ||
		    read(go[0], &pid, sizeof(pid)) != sizeof(pid))
			_exit(3);
	};
	jf.feed(4, true);
	uint64_t seq = jf.feed(1, false);	// the fifth entry: a snapshot falls due
	int copier = read_int(started[0]);
	// an RPC applies and submits while the copy is made; it is
	// durable once the copy is written, and not in the snapshot
	bool free_meanwhile = jf.mu.try_lock();
	if (free_meanwhile) {
		int ret = jf.st.apply(jf.f.log[jf.fed], &jf.err);
		seq = jf.j->submit(jf.f.log[jf.fed++]);
		jf.mu.unlock();
		assert_int_equal(ret, 0);
	}
	assert_int_equal(write(go[1], &copier, sizeof(copier)), sizeof(copier));
	assert_true(free_meanwhile);
	assert_int_not_equal(copier, getpid());
	assert_int_equal(jf.j->wait(seq, &jf.err), 0);
	jf.finish();	// the rest, with more snapshots
	for (int fd : { started[0], started[1], go[0], go[1] })
		close(fd);
}

// A snapshot whose child dies costs nothing but the compaction: the
// records are durable, the log goes on, the next snapshot is made.
void test_journal_snapshot_child_dies(void **)
{
	JournalFx jf(5);
	const pid_t master = getpid();
	int deaths = 0;
	jf.in_snapshot = [&] {
		if (getpid() != master)
			raise(SIGKILL);
		deaths++;	// (only if the copy were made in this process)
	};
	uint64_t seq = jf.feed(12, true);
	assert_int_equal(jf.j->wait(seq, &jf.err), 0);
	assert_int_equal(deaths, 0);
	// no compaction: the log holds every record since the start
	assert_true(jf.j->records_since_snapshot() >= 6);
	jf.finish();
}

// The writer's checksums: made over iovecs, checked over ranges of whole
// chunks (a range that cuts one is refused, not passed unchecked), a
// flipped byte found, wrong shapes and missing sums refused; the master
// refuses a commit without them and keeps them through commit, snapshot
// and replay.
void test_checksums(void **)
{
	const uint64_t size = 2 * kSumChunk + 1000;
	std::vector<char> obj(size);
	for (uint64_t i = 0; i < size; i++)
		obj[i] = static_cast<char>(i * 131 + (i >> 11));
	// the same bytes in three uneven pieces
	std::vector<iovec> iov = { { obj.data(), 5000 }, { obj.data() + 5000, kSumChunk },
				   { obj.data() + 5000 + kSumChunk, size - 5000 - kSumChunk } };
	pb::Checksums sums, whole;
	make_sums(iov, size, &sums);
	make_sums({ { obj.data(), size } }, size, &whole);
	assert_int_equal(sums.xxh64_size(), 3);
	assert_true(sums.SerializeAsString() == whole.SerializeAsString());
	std::string err;
	assert_int_equal(check_sums(sums, size, iov, 0, size, &err), 0);
	assert_int_equal(valid_sums(sums, size, &err), 0);

	// a byte of the middle chunk flipped: whole reads and reads of that
	// chunk see it; a range that cuts it is refused (its bytes would go
	// unchecked); a read that misses it passes
	obj[kSumChunk + 77] ^= 0x20;
	assert_int_equal(check_sums(sums, size, iov, 0, size, &err), -EBADMSG);
	assert_non_null(strstr(err.c_str(), "checksum"));
	std::vector<iovec> mid = { { obj.data() + kSumChunk, kSumChunk } };
	assert_int_equal(check_sums(sums, size, mid, kSumChunk, kSumChunk, &err), -EBADMSG);
	std::vector<iovec> cut = { { obj.data() + kSumChunk + 1, kSumChunk } };
	err.clear();
	assert_int_equal(check_sums(sums, size, cut, kSumChunk + 1, kSumChunk, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "not whole checksum chunks"));
	std::vector<iovec> tail = { { obj.data() + 2 * kSumChunk, 1000 } };
	assert_int_equal(check_sums(sums, size, tail, 2 * kSumChunk, 1000, &err), 0);
	obj[kSumChunk + 77] ^= 0x20;

	// ranges that are not whole chunks, even of good bytes: refused
	std::vector<iovec> all = { { obj.data(), size } };
	assert_int_equal(check_sums(sums, size, all, 0, kSumChunk - 1, &err), -EINVAL);
	assert_int_equal(check_sums(sums, size, tail, 2 * kSumChunk, 999, &err), -EINVAL);
	assert_int_equal(check_sums(sums, size, all, 0, size + 1, &err), -EINVAL);
	assert_int_equal(check_sums(sums, size, all, 0, 0, &err), 0);

	// no sums for a non-empty object: refused, as are sums of another
	// shape; an empty object has no chunks, so no sums is its shape
	err.clear();
	assert_int_equal(check_sums(pb::Checksums(), size, iov, 0, size, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "no checksums"));
	assert_int_equal(valid_sums(pb::Checksums(), size, &err), -EINVAL);
	assert_int_equal(valid_sums(pb::Checksums(), 0, &err), 0);
	pb::Checksums none;
	make_sums({}, 0, &none);
	assert_int_equal(valid_sums(none, 0, &err), 0);
	assert_int_equal(check_sums(none, 0, {}, 0, 0, &err), 0);
	pb::Checksums bad = sums;
	bad.add_xxh64(1);
	assert_int_equal(valid_sums(bad, size, &err), -EINVAL);
	bad = sums;
	bad.set_chunk_size(3000);
	assert_int_equal(valid_sums(bad, size, &err), -EINVAL);

	// the master: refused at commit when malformed, kept when good
	Fx f;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	lg::PutStart p = f.start(c, "sum", size, Fx::cfg(1));
	lg::Record r, abort;
	pb::Checksums wrong = sums;
	wrong.add_xxh64(7);
	assert_int_equal(f.st.plan_put_commit("sum", p.version(), { 0 }, wrong, f.now, &r, &abort, &err),
			 -EINVAL);
	// none at all: refused, and nothing recorded (the put stays pending)
	r.Clear();
	err.clear();
	assert_int_equal(f.st.plan_put_commit("sum", p.version(), { 0 }, pb::Checksums(), f.now, &r,
					      &abort, &err),
			 -EINVAL);
	assert_non_null(strstr(err.c_str(), "no checksums"));
	assert_int_equal(r.rec_case(), lg::Record::REC_NOT_SET);
	assert_null(f.st.newest("sum"));
	r.Clear();
	assert_int_equal(f.st.plan_put_commit("sum", p.version(), { 0 }, sums, f.now, &r, &abort, &err), 0);
	f.apply(r);
	GetResult g;
	assert_int_equal(f.st.get("sum", -1, &g, &err), 0);
	assert_true(g.object.sums().SerializeAsString() == sums.SerializeAsString());
	MasterState again(f.lim);
	replay(again, f.log);
	assert_true(image_of(again) == f.image());
	lg::Snapshot snap;
	f.st.snapshot(&snap);
	MasterState restored(f.lim);
	assert_int_equal(restored.restore(snap, &err), 0);
	assert_int_equal(restored.get("sum", -1, &g, &err), 0);
	assert_true(g.object.sums().SerializeAsString() == sums.SerializeAsString());
}

// The range a ranged get reads to check what it returns: the requested
// bytes widened to whole chunks, the object's short last one included;
// nothing for nothing.
void test_sum_span(void **)
{
	const uint64_t c = kSumChunk, size = 2 * c + 1000;
	auto span = [&](uint64_t off, uint64_t len) {
		SumSpan s = sum_span(off, len, size, c);
		return std::make_pair(s.lo, s.hi);
	};
	using P = std::pair<uint64_t, uint64_t>;
	// the first byte, the last byte, a byte either side of a boundary
	assert_true(span(0, 1) == P(0, c));
	assert_true(span(size - 1, 1) == P(2 * c, size));
	assert_true(span(c - 1, 1) == P(0, c));
	assert_true(span(c, 1) == P(c, 2 * c));
	assert_true(span(c - 1, 2) == P(0, 2 * c));
	// whole chunks and the whole object read no more
	assert_true(span(0, size) == P(0, size));
	assert_true(span(c, c) == P(c, 2 * c));
	assert_true(span(0, c) == P(0, c));
	assert_true(span(2 * c, 1000) == P(2 * c, size));
	// inside one chunk; into the short last one; past the end
	assert_true(span(10, 20) == P(0, c));
	assert_true(span(2 * c + 10, 5) == P(2 * c, size));
	assert_true(span(c + 5, c + 100) == P(c, size));
	assert_true(span(c + 1, UINT64_MAX) == P(c, size));
	assert_true(span(c + 1, 10 * c) == P(c, size));
	// nothing: len 0, an offset at or past the end
	assert_true(span(c + 5, 0) == P(c + 5, c + 5));
	assert_true(span(size, 10) == P(size, size));
	assert_true(span(size + 7, 10) == P(size, size));
	assert_true(sum_span(0, 0, 0, c).lo == 0 && sum_span(0, 0, 0, c).hi == 0);
	// an object of one short chunk
	assert_true(sum_span(100, 10, 4000, c).lo == 0 && sum_span(100, 10, 4000, c).hi == 4000);
}

// A ranged get's cut chunks are checked: a byte gone bad in the part of
// the first or last chunk the range returns (or the part it does not) is
// found once the range is read widened to whole chunks, and the range
// alone cannot be passed unchecked.
void test_checksum_cut_chunks(void **)
{
	const uint64_t c = kSumChunk, size = 2 * c + 1000;
	std::vector<char> obj(size);
	for (uint64_t i = 0; i < size; i++)
		obj[i] = static_cast<char>(i * 29 + (i >> 9));
	pb::Checksums sums;
	make_sums({ { obj.data(), size } }, size, &sums);
	// As get.cpp does it: a replica's bytes [lo, hi) read into the
	// scratch's head, the caller's buffer and the scratch's tail, then
	// checked whole.  *user gets the caller's bytes.
	auto get = [&](const std::vector<char> &replica, uint64_t off, uint64_t len,
		       std::vector<char> *user, std::string *err) {
		SumSpan sp = sum_span(off, len, size, c);
		uint64_t head = off - sp.lo, tail = sp.hi - (off + len);
		std::vector<char> scratch(head + tail);
		user->assign(len, 0);
		std::vector<iovec> wide;
		if (head)
			wide.push_back({ scratch.data(), head });
		wide.push_back({ user->data(), len });
		if (tail)
			wide.push_back({ scratch.data() + head, tail });
		uint64_t at = sp.lo;
		for (const iovec &v : wide) {
			memcpy(v.iov_base, replica.data() + at, v.iov_len);
			at += v.iov_len;
		}
		assert_true(at == sp.hi);
		return check_sums(sums, size, wide, sp.lo, sp.hi - sp.lo, err);
	};
	std::string err;
	std::vector<char> user;
	// good bytes: each range, its bytes exactly
	const uint64_t ranges[][2] = { { c / 2, c }, { 2 * c + 10, 100 }, { 7, 9 }, { c - 1, 2 } };
	for (const auto &r : ranges) {
		assert_int_equal(get(obj, r[0], r[1], &user, &err), 0);
		assert_memory_equal(user.data(), obj.data() + r[0], r[1]);
	}

	// Bad bytes at each place a cut chunk can hold them: in the range
	// (the head chunk, the tail chunk, the short last chunk) and out of
	// it (the head's scratch part, the tail's).
	const uint64_t off = c / 2, len = c;
	const uint64_t bad_at[] = { off + 3, c + 100, off - 3, off + len + 3 };
	for (uint64_t b : bad_at) {
		std::vector<char> replica = obj;
		replica[b] ^= 0x10;
		err.clear();
		assert_int_equal(get(replica, off, len, &user, &err), -EBADMSG);
		assert_non_null(strstr(err.c_str(), "checksum"));
		// the range alone, without its chunks' other bytes: refused,
		// never passed as good
		std::vector<iovec> only = { { replica.data() + off, len } };
		assert_int_equal(check_sums(sums, size, only, off, len, &err), -EINVAL);
	}
	std::vector<char> replica = obj;
	replica[2 * c + 50] ^= 0x10;
	assert_int_equal(get(replica, 2 * c + 10, 100, &user, &err), -EBADMSG);
	std::vector<iovec> only = { { replica.data() + 2 * c + 10, 100 } };
	assert_int_equal(check_sums(sums, size, only, 2 * c + 10, 100, &err), -EINVAL);
}

// ---- eviction and TTL

// The order: unpinned by last access (commit or touch), ties by key, then
// the soft pinned ones; only the newest version, only on the tier asked.
void test_evict_order(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	f.segment(c, 0, 256 * kMiB, nullptr, pb::SEGMENT_NVMEOF);
	const int64_t t0 = f.now;
	f.put_cfg(c, "nv", kMiB, Fx::cfg(0, 1));	// NVMe-oF only, the oldest
	f.now = t0 + 1 * kSec;
	f.put_cfg(c, "p1", kMiB, with_attrs(Fx::cfg(1), true, 0));
	f.now = t0 + 2 * kSec;
	f.put(c, "a", kMiB);
	f.now = t0 + 3 * kSec;
	f.put(c, "b", kMiB);
	f.now = t0 + 4 * kSec;
	uint64_t both1 = f.put_cfg(c, "both", 2 * kMiB, Fx::cfg(1, 1));
	f.now = t0 + 5 * kSec;
	f.put(c, "c", kMiB);
	f.now = t0 + 6 * kSec;
	f.put_cfg(c, "p2", kMiB, with_attrs(Fx::cfg(1), true, 0));

	EvictBlockers why;
	auto d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, &why);
	assert_string_equal(order_of(d).c_str(), "a,b,both,c,p1,p2");
	assert_int_equal(why.leased + why.pending + why.quarantined_bytes, 0);
	assert_int_equal(why.takeover_left_ns, 0);
	assert_int_equal(d[0].atime_ns, t0 + 2 * kSec);	// its commit time
	assert_int_equal(d[0].bytes, kMiB);
	assert_int_equal(d[0].tier_bytes, kMiB);
	assert_false(d[0].soft_pin);
	assert_true(d[4].soft_pin);
	assert_int_equal(d[4].atime_ns, t0 + 1 * kSec);	// older than all, still after them
	// both tiers: all its bytes, and those on the tier asked about
	assert_int_equal(d[2].version, both1);
	assert_int_equal(d[2].bytes, 4 * kMiB);
	assert_int_equal(d[2].tier_bytes, 2 * kMiB);
	auto n = f.st.eviction_order(pb::SEGMENT_NVMEOF, f.now, nullptr);
	assert_string_equal(order_of(n).c_str(), "nv,both");
	assert_int_equal(n[1].tier_bytes, 2 * kMiB);
	assert_int_equal(f.used(pb::SEGMENT_DRAM), 7 * kMiB);
	assert_int_equal(f.used(pb::SEGMENT_NVMEOF), 3 * kMiB);

	// a touch moves the oldest to the back of the unpinned; an older
	// time does not move anything back; equal times go by key
	f.st.touch("a", t0 + 10 * kSec);
	assert_int_equal(f.st.find_object("a")->atime_ns, t0 + 10 * kSec);
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
			    "b,both,c,a,p1,p2");
	f.st.touch("a", t0);
	assert_int_equal(f.st.find_object("a")->atime_ns, t0 + 10 * kSec);
	f.st.touch("b", t0 + 10 * kSec);
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
			    "both,c,a,b,p1,p2");
	// a touch of a pinned one keeps it among the pinned, ordered by access
	f.st.touch("p1", t0 + 30 * kSec);
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
			    "both,c,a,b,p2,p1");
	f.st.touch("nothere", t0);
	assert_null(f.st.find_object("nothere"));
	// a new version moves the key back too, and is the one listed
	f.now = t0 + 20 * kSec;
	uint64_t both2 = f.put_cfg(c, "both", 2 * kMiB, Fx::cfg(1, 1));
	d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr);
	assert_string_equal(order_of(d).c_str(), "c,a,b,both,p2,p1");
	assert_int_equal(d[3].version, both2);
	assert_int_equal(d[3].atime_ns, t0 + 20 * kSec);
	// an object unpinned by SetAttr joins the others, by its access time
	assert_int_equal(f.set_attr("p2", pb::SET_ATTR_SOFT_PIN, false, 0), 0);
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
			    "c,p2,a,b,both,p1");
}

// Nothing read (a Get's lease, the mover's pin) or pending is a
// candidate, and nothing at all while a new leader waits out the old
// one's leases; the blockers say why.
void test_evict_skips_leased_pending_and_takeover(void **)
{
	Fx f;
	std::string err;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	f.segment(c, 0x200000000, 64 * kMiB);	// room for a copy
	lg::Record t;
	f.st.plan_term(&t);
	f.apply(t);
	const int64_t t0 = f.now;
	uint64_t vl = f.put(c, "leased", kMiB);
	f.now += kSec;
	uint64_t vm = f.put(c, "moving", kMiB);
	f.now += kSec;
	uint64_t vf = f.put(c, "free", kMiB);
	f.now += kSec;
	uint64_t vt = f.put_cfg(c, "ttl", kMiB, with_attrs(Fx::cfg(1), false, 1000));
	f.start(c, "pending", kMiB, Fx::cfg(1));
	lg::PutStart newer = f.start(c, "free", kMiB, Fx::cfg(1));	// pending over a complete one
	f.st.lease("leased", vl, t0 + 10 * kSec);
	f.st.pin("moving", vm);
	// a copy reserved by term 1, quarantined under term 2
	pb::Replica dst;
	assert_int_equal(f.st.place_replica("free", vf, pb::SEGMENT_DRAM, {}, -1, &dst, &err), 0);
	f.st.release_replica(dst);
	lg::Record res;
	f.st.plan_reserve("free", vf, dst, &res);
	f.apply(res);
	f.st.plan_term(&t);
	f.apply(t);
	// one of this term: not quarantined (this leader writes it)
	assert_int_equal(f.st.place_replica("leased", vl, pb::SEGMENT_DRAM, {}, -1, &dst, &err), 0);
	f.st.release_replica(dst);
	res.Clear();
	f.st.plan_reserve("leased", vl, dst, &res);
	assert_int_equal(res.replica_reserve().term(), 2);
	f.apply(res);

	EvictBlockers why;
	auto d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, &why);
	assert_string_equal(order_of(d).c_str(), "free,ttl");
	assert_int_equal(d[0].version, vf);	// the complete one, not the pending
	assert_int_equal(why.leased, 2);
	assert_int_equal(why.pending, 2);
	assert_int_equal(why.quarantined_bytes, kMiB);
	assert_int_equal(why.takeover_left_ns, 0);
	// NVMe-oF: no replica there, nothing leased on it, nothing quarantined
	assert_true(f.st.eviction_order(pb::SEGMENT_NVMEOF, f.now, &why).empty());
	assert_int_equal(why.leased, 0);
	assert_int_equal(why.quarantined_bytes, 0);
	assert_int_equal(why.pending, 2);

	// the lease runs out; the pin is let go
	f.now = t0 + 11 * kSec;
	d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, &why);
	assert_string_equal(order_of(d).c_str(), "leased,free,ttl");
	assert_int_equal(why.leased, 1);
	f.st.unpin("moving", vm);
	d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, &why);
	assert_string_equal(order_of(d).c_str(), "leased,moving,free,ttl");
	assert_int_equal(why.leased, 0);
	// "ttl" is expired, its TTL Evict is due
	auto ttl = f.st.plan_ttl(f.now);
	assert_int_equal(ttl.size(), 1);
	assert_string_equal(ttl[0].evict().key().c_str(), "ttl");
	assert_int_equal(ttl[0].evict().version(), vt);

	// a new leader: nothing until the old leases have run out
	f.st.set_gc_not_before(f.now + 100 * kSec);
	f.st.lease("leased", vl, f.now + 200 * kSec);
	d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, &why);
	assert_true(d.empty());
	assert_int_equal(why.takeover_left_ns, 100 * kSec);
	// nothing is walked while nothing may go (a put waits out the
	// takeover whatever the leases): no leases counted
	assert_int_equal(why.leased, 0);
	assert_int_equal(why.pending, 2);
	assert_true(f.st.plan_ttl(f.now).empty());
	assert_true(f.st.plan_ttl(f.now + 100 * kSec - 1).empty());
	f.now += 100 * kSec;
	d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, &why);
	assert_string_equal(order_of(d).c_str(), "moving,free,ttl");
	assert_int_equal(why.takeover_left_ns, 0);
	assert_int_equal(f.st.plan_ttl(f.now).size(), 1);
	// leased, its TTL waits too
	f.st.lease("ttl", vt, f.now + kSec);
	assert_true(f.st.plan_ttl(f.now).empty());
	f.st.pin("ttl", vt);
	assert_true(f.st.plan_ttl(f.now + 2 * kSec).empty());
	f.st.unpin("ttl", vt);
	assert_int_equal(f.st.plan_ttl(f.now + 2 * kSec).size(), 1);
	assert_true(newer.version() > vf);
}

// A full segment refuses a put; evicting the first candidate makes room
// for it at once; the victim is gone, its older versions deleted.
void test_evict_frees_space(void **)
{
	Fx f;
	std::string err;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 8 * kMiB);
	uint64_t size = 0, used = 0;
	f.st.tier_usage(pb::SEGMENT_DRAM, &size, &used);
	assert_int_equal(size, 8 * kMiB);
	assert_int_equal(used, 0);
	uint64_t v1 = f.put(c, "victim", kMiB);
	f.now += kSec;
	uint64_t v2 = f.put(c, "victim", kMiB);
	int filled = 0;
	for (;; filled++) {
		f.now += kSec;
		lg::Record r;
		int ret = f.st.plan_put_start(f.who, c, "o" + std::to_string(filled), kMiB, Fx::cfg(1),
					      {}, f.now, &r, &err);
		if (ret) {
			assert_int_equal(ret, -ENOSPC);
			break;
		}
		f.apply(r);
		f.commit("o" + std::to_string(filled), r.put_start().version(), { 0 });
		assert_true(filled < 10);
	}
	assert_int_equal(filled, 6);
	assert_int_equal(f.used(), 8 * kMiB);
	f.start(c, "new", kMiB, Fx::cfg(1), -ENOSPC);

	auto d = f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr);
	assert_int_equal(d.size(), 7);
	assert_string_equal(d[0].key.c_str(), "victim");
	assert_int_equal(d[0].version, v2);
	lg::Record ev;
	f.st.plan_evict(d[0], lg::Evict::LRU, &ev);
	assert_string_equal(ev.evict().key().c_str(), "victim");
	assert_int_equal(ev.evict().version(), v2);
	assert_int_equal(ev.evict().reason(), lg::Evict::LRU);
	assert_int_equal(ev.evict().bytes(), kMiB);
	f.apply(ev);
	assert_int_equal(f.used(), 7 * kMiB);
	assert_int_equal(f.st.evictions(), 1);
	assert_int_equal(f.st.evicted_bytes(), kMiB);
	assert_int_equal(f.st.expiries(), 0);
	GetResult g;
	assert_int_equal(f.st.get("victim", -1, &g, &err), -ENOENT);
	assert_null(f.st.find_version("victim", v2));
	assert_non_null(f.st.find_version("victim", v1));
	assert_true(f.st.find_version("victim", v1)->deleted);
	assert_int_equal(f.st.get("o0", -1, &g, &err), 0);
	// the same Evict again is not for a live version: refused, not counted
	assert_int_equal(f.st.apply(ev, &err), -EINVAL);
	assert_int_equal(f.st.evictions(), 1);
	assert_int_equal(f.st.evicted_bytes(), kMiB);
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).substr(0, 3).c_str(),
			    "o0,");

	// the put places now, in the space freed
	lg::PutStart p = f.start(c, "new", kMiB, Fx::cfg(1));
	assert_int_equal(p.replicas_size(), 1);
	assert_int_equal(f.used(), 8 * kMiB);
	// GC drops the deleted older version, and the key with it
	auto gc = f.st.plan_gc(f.now);
	assert_int_equal(gc.size(), 1);
	assert_string_equal(gc[0].version_drop().key().c_str(), "victim");
	assert_int_equal(gc[0].version_drop().version(), v1);
	f.apply(gc[0]);
	assert_null(f.st.find_object("victim"));
	assert_int_equal(f.used(), 7 * kMiB);
	assert_no_overlap(f.st);
	MasterState a(f.lim);
	replay(a, f.log);
	assert_string_equal(image_of(a).c_str(), f.image().c_str());
}

// LRU of the version the slow tier holds drops its replicas only: read
// from the slow tier, not repaired, not evicted again.  TTL removes it
// entirely, as does LRU of a version the slow tier does not hold.
void test_evict_keeps_flushed_copy(void **)
{
	Fx f;
	std::string err;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	auto flushed = [&](const std::string &key, uint64_t v) {
		lg::Record fl;
		fl.mutable_flushed()->set_key(key);
		fl.mutable_flushed()->set_version(v);
		f.apply(fl);
	};
	uint64_t vf = f.put_cfg(c, "f", kMiB, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	flushed("f", vf);
	f.now += kSec;
	f.put(c, "g", kMiB);
	f.now += kSec;
	uint64_t vh = f.put_cfg(c, "h", kMiB, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	flushed("h", vh);
	f.now += kSec;
	uint64_t vo1 = f.put_cfg(c, "old", kMiB, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	flushed("old", vo1);
	f.now += kSec;
	uint64_t vo2 = f.put_cfg(c, "old", kMiB, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
			    "f,g,h,old");
	assert_true(f.st.plan_repairs().empty());
	assert_int_equal(f.used(), 5 * kMiB);

	f.evict("f", lg::Evict::LRU);
	assert_int_equal(f.used(), 4 * kMiB);
	assert_int_equal(f.st.evictions(), 1);
	assert_int_equal(f.st.evicted_bytes(), kMiB);
	const VersionState *v = f.st.newest("f");
	assert_non_null(v);
	assert_int_equal(v->version, vf);
	assert_true(v->evicted);
	assert_true(v->replicas.empty());
	assert_int_equal(f.st.find_object("f")->flushed_version, vf);
	GetResult g;
	assert_int_equal(f.st.get("f", -1, &g, &err), 0);
	assert_true(g.slow_tier);
	assert_true(g.object.flushed());
	assert_int_equal(g.object.replicas_size(), 0);
	assert_int_equal(g.object.version(), vf);
	// one replica of one asked for is missing, yet no repair: it is evicted
	assert_false(f.st.plan_repair("f").has_value());
	assert_true(f.st.plan_repairs().empty());
	assert_string_equal(order_of(f.st.eviction_order(pb::SEGMENT_DRAM, f.now, nullptr)).c_str(),
			    "g,h,old");
	lg::Record again;
	again.mutable_evict()->set_key("f");
	again.mutable_evict()->set_version(vf);
	again.mutable_evict()->set_reason(lg::Evict::LRU);
	assert_int_equal(f.st.apply(again, &err), -EINVAL);
	assert_int_equal(f.st.evictions(), 1);
	// listed still, from the slow tier
	std::vector<pb::ObjectInfo> out;
	bool more;
	f.st.list("f", "", 0, &out, &more);
	assert_int_equal(out.size(), 1);

	// a TTL Evict of a flushed version with replicas: all of it goes
	f.evict("h", lg::Evict::TTL);
	assert_null(f.st.find_object("h"));
	assert_int_equal(f.st.get("h", -1, &g, &err), -ENOENT);
	assert_int_equal(f.used(), 3 * kMiB);
	assert_int_equal(f.st.expiries(), 1);
	assert_int_equal(f.st.evictions(), 1);
	assert_int_equal(f.st.evicted_bytes(), 2 * kMiB);
	// LRU of a version newer than the slow tier's: not kept, and the
	// older flushed one is deleted with it
	assert_int_equal(f.st.find_object("old")->flushed_version, vo1);
	f.evict("old", lg::Evict::LRU);
	assert_int_equal(f.st.get("old", -1, &g, &err), -ENOENT);
	assert_null(f.st.find_version("old", vo2));
	assert_true(f.st.find_version("old", vo1)->deleted);
	assert_int_equal(f.st.find_object("old")->flushed_version, 0);
	auto gc = f.st.plan_gc(f.now);
	assert_int_equal(gc.size(), 1);
	f.apply(gc[0]);
	assert_null(f.st.find_object("old"));
	assert_int_equal(f.st.evictions(), 2);
	assert_int_equal(f.used(), kMiB);	// "g" only (and "f" in the slow tier)
	assert_non_null(f.st.find_object("f"));
	MasterState a(f.lim);
	replay(a, f.log);
	assert_string_equal(image_of(a).c_str(), f.image().c_str());
	// the evicted "f" expires: a TTL takes it from the slow tier too
	lg::Record ttl;
	ttl.mutable_evict()->set_key("f");
	ttl.mutable_evict()->set_version(vf);
	ttl.mutable_evict()->set_reason(lg::Evict::TTL);
	f.apply(ttl);
	assert_null(f.st.find_object("f"));
	assert_int_equal(f.st.get("f", -1, &g, &err), -ENOENT);
	assert_int_equal(f.st.expiries(), 2);
	MasterState b(f.lim);
	replay(b, f.log);
	assert_string_equal(image_of(b).c_str(), f.image().c_str());
}

// TTL: expiry at commit, absent once past it (Get, List, SetAttr), removed
// by plan_ttl's Evict; SetAttr sets the pin and the TTL, checked.
void test_ttl_expiry(void **)
{
	Fx f;
	std::string err;
	const Caller mallory{ "mallory", false }, admin{ "admin", true };
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	const int64_t t0 = f.now;
	uint64_t v = f.put_cfg(c, "t", kMiB, with_attrs(Fx::cfg(1), false, 5000));
	const VersionState *vs = f.st.newest("t");
	assert_int_equal(vs->ctime_ns, t0);
	assert_int_equal(vs->expires_ns, t0 + 5 * kSec);
	assert_int_equal(vs->config.ttl_ms(), 5000);
	f.put(c, "keep", kMiB);
	assert_int_equal(f.st.newest("keep")->expires_ns, 0);

	GetResult g;
	assert_int_equal(f.st.get("t", -1, &g, &err, t0 + 5 * kSec - 1), 0);
	assert_int_equal(g.object.expires_ns(), t0 + 5 * kSec);
	assert_int_equal(g.object.version(), v);
	assert_int_equal(f.st.get("t", -1, &g, &err, t0 + 5 * kSec), -ENOENT);
	assert_non_null(strstr(err.c_str(), "expired"));
	assert_int_equal(f.st.get("t", -1, &g, &err, t0 + 60 * kSec), -ENOENT);
	assert_int_equal(f.st.get("t", -1, &g, &err), 0);	// no clock
	assert_int_equal(f.st.get("keep", -1, &g, &err, t0 + 1000 * kSec), 0);
	std::vector<pb::ObjectInfo> out;
	bool more = true;
	f.st.list("", "", 0, &out, &more, t0 + kSec);
	assert_int_equal(out.size(), 2);
	out.clear();
	f.st.list("", "", 0, &out, &more, t0 + 5 * kSec);
	assert_int_equal(out.size(), 1);
	assert_string_equal(out[0].key().c_str(), "keep");
	assert_false(more);
	// expired, not to be given new attributes
	f.now = t0 + 5 * kSec;
	assert_int_equal(f.set_attr("t", pb::SET_ATTR_SOFT_PIN, true, 0), -ENOENT);
	f.now = t0;

	// plan_ttl: at the expiry, not while leased
	assert_true(f.st.plan_ttl(t0 + 5 * kSec - 1).empty());
	auto ttl = f.st.plan_ttl(t0 + 5 * kSec);
	assert_int_equal(ttl.size(), 1);
	assert_string_equal(ttl[0].evict().key().c_str(), "t");
	assert_int_equal(ttl[0].evict().version(), v);
	assert_int_equal(ttl[0].evict().reason(), lg::Evict::TTL);
	assert_int_equal(ttl[0].evict().bytes(), kMiB);
	f.st.lease("t", v, t0 + 10 * kSec);
	assert_true(f.st.plan_ttl(t0 + 6 * kSec).empty());
	ttl = f.st.plan_ttl(t0 + 10 * kSec);
	assert_int_equal(ttl.size(), 1);
	f.apply(ttl[0]);
	assert_int_equal(f.st.expiries(), 1);
	assert_int_equal(f.st.evictions(), 0);
	assert_int_equal(f.st.evicted_bytes(), kMiB);
	assert_null(f.st.find_object("t"));
	assert_int_equal(f.used(), kMiB);
	assert_true(f.st.plan_ttl(t0 + 100 * kSec).empty());

	// SetAttr TTL N: now + N, the config's ttl too
	f.now = t0 + 20 * kSec;
	lg::Record r;
	uint64_t vk = f.st.newest("keep")->version;
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_TTL, false, 2000, &r), 0);
	assert_true(r.config_set().set_expiry());
	assert_int_equal(r.config_set().version(), vk);
	assert_int_equal(r.config_set().expires_ns(), t0 + 22 * kSec);
	assert_int_equal(f.st.newest("keep")->expires_ns, t0 + 22 * kSec);
	assert_int_equal(f.st.newest("keep")->config.ttl_ms(), 2000);
	assert_int_equal(f.st.newest("keep")->config.dram_replicas(), 1);
	assert_int_equal(f.st.get("keep", -1, &g, &err, t0 + 22 * kSec), -ENOENT);
	// TTL 0: no expiry
	f.now = t0 + 21 * kSec;
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_TTL, false, 0, &r), 0);
	assert_true(r.config_set().set_expiry());
	assert_int_equal(f.st.newest("keep")->expires_ns, 0);
	assert_int_equal(f.st.newest("keep")->config.ttl_ms(), 0);
	assert_int_equal(f.st.get("keep", -1, &g, &err, t0 + 1000000 * kSec), 0);
	assert_true(f.st.plan_ttl(t0 + 1000000 * kSec).empty());
	// the soft pin alone: the TTL and expiry stay
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_TTL, false, 60000), 0);
	assert_int_equal(f.st.newest("keep")->expires_ns, t0 + 81 * kSec);
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_SOFT_PIN, true, 777, &r), 0);
	assert_false(r.config_set().set_expiry());
	const VersionState *kv = f.st.newest("keep");
	assert_true(kv->config.soft_pin());
	assert_int_equal(kv->config.ttl_ms(), 60000);
	assert_int_equal(kv->expires_ns, t0 + 81 * kSec);
	// both at once
	f.now = t0 + 30 * kSec;
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_SOFT_PIN | pb::SET_ATTR_TTL, false, 1000), 0);
	assert_false(f.st.newest("keep")->config.soft_pin());
	assert_int_equal(f.st.newest("keep")->expires_ns, t0 + 31 * kSec);

	// refused: masks, a TTL past ten years, another identity, no object
	assert_int_equal(f.set_attr("keep", 0, true, 0), -EINVAL);
	assert_int_equal(f.set_attr("keep", 4, true, 0), -EINVAL);
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_SOFT_PIN | 4, true, 0), -EINVAL);
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_TTL, false, kTtlMaxMs + 1), -EINVAL);
	assert_false(f.st.newest("keep")->config.soft_pin());	// unchanged
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_TTL, false, kTtlMaxMs, &r), 0);
	assert_int_equal(r.config_set().expires_ns(), f.now + static_cast<int64_t>(kTtlMaxMs) * kMs);
	assert_int_equal(f.set_attr("absent", pb::SET_ATTR_TTL, false, 1), -ENOENT);
	assert_int_equal(f.set_attr("", pb::SET_ATTR_TTL, false, 1), -EINVAL);
	f.who = mallory;
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_SOFT_PIN, true, 0), -EPERM);
	f.who = admin;
	assert_int_equal(f.set_attr("keep", pb::SET_ATTR_SOFT_PIN, true, 0), 0);
	assert_true(f.st.newest("keep")->config.soft_pin());
	f.who = Caller{ "app", false };
	// a put: the same limit
	f.start(c, "long", kMiB, with_attrs(Fx::cfg(1), false, kTtlMaxMs + 1), -EINVAL);
	f.start(c, "long", kMiB, with_attrs(Fx::cfg(1), false, kTtlMaxMs), 0);
	// a pending put's TTL counts from its commit
	lg::PutStart p = f.start(c, "late", kMiB, with_attrs(Fx::cfg(1), false, 3000));
	f.now = t0 + 40 * kSec;
	f.commit("late", p.version(), { 0 });
	assert_int_equal(f.st.newest("late")->expires_ns, t0 + 43 * kSec);
}

// Replicate changes the replicas, never the pin or the TTL (SetAttr's).
void test_replicate_keeps_attrs(void **)
{
	Fx f;
	std::string err;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	f.segment(c, 0x200000000, 64 * kMiB);
	const int64_t t0 = f.now;
	uint64_t v = f.put_cfg(c, "r", kMiB, with_attrs(Fx::cfg(2), true, 60000));
	std::vector<lg::Record> recs;
	uint64_t ver = 0;
	bool deferred = false;
	assert_int_equal(f.st.plan_replicate("r", Fx::cfg(1, 0, pb::FLUSH_LAZY), f.now, &recs, &ver, &deferred, &err), 0);
	assert_int_equal(ver, v);
	assert_int_equal(recs.size(), 2);	// the ConfigSet and a drop
	const lg::ConfigSet &cs = recs[0].config_set();
	assert_int_equal(cs.config().dram_replicas(), 1);
	assert_int_equal(cs.config().flush(), pb::FLUSH_LAZY);
	assert_true(cs.config().soft_pin());
	assert_int_equal(cs.config().ttl_ms(), 60000);
	assert_false(cs.set_expiry());
	for (const auto &r : recs)
		f.apply(r);
	const VersionState *vs = f.st.newest("r");
	assert_int_equal(vs->replicas.size(), 1);
	assert_true(vs->config.soft_pin());
	assert_int_equal(vs->config.ttl_ms(), 60000);
	assert_int_equal(vs->expires_ns, t0 + 60 * kSec);
	// nor does a request's pin or TTL get in
	assert_int_equal(f.set_attr("r", pb::SET_ATTR_SOFT_PIN | pb::SET_ATTR_TTL, false, 0), 0);
	recs.clear();
	assert_int_equal(f.st.plan_replicate("r", with_attrs(Fx::cfg(2), true, 5), f.now, &recs, &ver, &deferred, &err), 0);
	assert_false(recs[0].config_set().config().soft_pin());
	assert_int_equal(recs[0].config_set().config().ttl_ms(), 0);
	assert_int_equal(recs[0].config_set().config().dram_replicas(), 2);
	for (const auto &r : recs)
		f.apply(r);
	assert_false(f.st.newest("r")->config.soft_pin());
	assert_int_equal(f.st.newest("r")->expires_ns, 0);
}

// A temporary directory, removed when it goes.
struct TmpDir {
	std::string path;
	TmpDir()
	{
		char tmpl[] = "/tmp/test_store_meta.XXXXXX";
		assert_non_null(mkdtemp(tmpl));
		path = tmpl;
	}
	~TmpDir()
	{
		std::string cmd = "rm -rf " + path;
		if (system(cmd.c_str()))
			print_error("could not remove %s\n", path.c_str());
	}
};

// The lazy flusher plans a version only once the record that committed
// it is durable: the slow tier must not hold a version the log may
// forget (its number would go to another put).  The leader tells the
// planner how many of the records applied are durable.
void test_flush_plans_durable_commits(void **)
{
	Fx f;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	uint64_t before = f.st.applied();
	uint64_t v = f.put_cfg(c, "lazy", 4096, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	uint64_t committed = f.st.applied();
	assert_int_equal(committed, before + 2);	// PutStart, PutCommit
	// the PutStart is durable, its commit is not: nothing to flush
	assert_true(f.st.plan_flushes(committed - 1).empty());
	assert_false(f.st.commit_durable("lazy", v, committed - 1));
	// once it is
	auto todo = f.st.plan_flushes(committed);
	assert_int_equal(todo.size(), 1);
	assert_string_equal(todo[0].first.c_str(), "lazy");
	assert_int_equal(todo[0].second, v);
	assert_true(f.st.commit_durable("lazy", v, committed));
	// a newer put not durable yet: nothing, not the older one either
	// (it is not the newest)
	uint64_t v2 = f.put_cfg(c, "lazy", 4096, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	assert_true(f.st.plan_flushes(f.st.applied() - 1).empty());
	assert_int_equal(f.st.plan_flushes(f.st.applied()).size(), 1);
	assert_int_equal(f.st.plan_flushes(f.st.applied())[0].second, v2);
	// a replay counts the same records, so the same ordinals
	Fx g;
	for (const auto &r : f.log)
		g.apply(r);
	assert_int_equal(g.st.applied(), f.st.applied());
	assert_int_equal(g.st.find_version("lazy", v2)->committed_at,
			 f.st.find_version("lazy", v2)->committed_at);
	// a record that does not apply is not counted (nor logged)
	lg::Record bad;
	bad.mutable_flushed()->set_key("nobody");
	bad.mutable_flushed()->set_version(1);
	std::string err;
	assert_int_equal(g.st.apply(bad, &err), -EINVAL);
	assert_int_equal(g.st.applied(), f.st.applied());
	// a snapshot holds only what the log held: all of it durable
	lg::Snapshot snap;
	f.st.snapshot(&snap);
	MasterState r(f.lim);
	assert_int_equal(r.restore(snap, &err), 0);
	assert_int_equal(r.plan_flushes(0).size(), 1);
	assert_true(r.commit_durable("lazy", v2, 0));
}

// The slow tier says which version it holds after a put: one that kept a
// newer version must not let the flusher record Flushed for the older.
void test_slow_tier_put_says_what_it_holds(void **)
{
	TmpDir dir;
	std::string err;
	auto t = open_slow_tier("dir:" + dir.path, &err);
	assert_non_null(t.get());
	uint64_t held = 0, ver = 0;
	std::string data;
	assert_int_equal(t->put("k", 5, "five!", 5, &held), 0);
	assert_int_equal(held, 5);
	// an older version: nothing written, and it says it holds 5, not 4
	held = 0;
	assert_int_equal(t->put("k", 4, "four", 4, &held), 0);
	assert_int_equal(held, 5);
	assert_int_equal(t->get("k", 0, 100, &data, &ver, nullptr), 0);
	assert_int_equal(ver, 5);
	assert_string_equal(data.c_str(), "five!");
	// the same version again: it holds exactly that one
	held = 0;
	assert_int_equal(t->put("k", 5, "five!", 5, &held), 0);
	assert_int_equal(held, 5);
	// newer: written
	assert_int_equal(t->put("k", 6, "six", 3, &held), 0);
	assert_int_equal(held, 6);
	// another process's tier on the same tree wrote a newer one: the
	// check under the flock says so too
	auto other = open_slow_tier("dir:" + dir.path, &err);
	assert_non_null(other.get());
	assert_int_equal(other->put("k", 9, "nine", 4, &held), 0);
	assert_int_equal(held, 9);
	held = 0;
	assert_int_equal(t->put("k", 7, "seven", 5, &held), 0);
	assert_int_equal(held, 9);
	// no held asked for: as before
	assert_int_equal(t->put("k", 8, "eight", 5), 0);
	assert_int_equal(t->version("k", &ver, nullptr), 0);
	assert_int_equal(ver, 9);
}

// A version evicted, expired or deleted while the lazy flusher wrote it
// to the slow tier: the flusher's check after the write finds it gone
// (no Flushed for it; the old check, "the object is still there", let
// one through), its copy goes from the tier (and only that version's
// copy), and what the state does not list as flushed is not served.
void test_flush_of_evicted_version(void **)
{
	Fx f;
	std::string err;
	uint64_t c = f.client(1);
	f.segment(c, 0x100000000, 64 * kMiB);
	TmpDir dir;
	auto tier = open_slow_tier("dir:" + dir.path, &err);
	assert_non_null(tier.get());
	uint64_t held = 0;

	// v1 flushed (in the tier and listed); v2 being flushed
	uint64_t v1 = f.put_cfg(c, "k", 4096, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	assert_int_equal(tier->put("k", v1, "one", 3, &held), 0);
	lg::Record fl;
	fl.mutable_flushed()->set_key("k");
	fl.mutable_flushed()->set_version(v1);
	f.apply(fl);
	f.now += kSec;
	uint64_t v2 = f.put_cfg(c, "k", 4096, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	assert_true(f.st.live_version("k", v2));
	assert_true(f.st.slow_copy_listed("k", v1, f.now));
	assert_false(f.st.slow_copy_listed("k", v2, f.now));
	// the flusher read v2 and dropped its pin: LRU evicts v2 (not the
	// version the tier lists, so all of it, and v1 with it) ...
	f.evict("k", lg::Evict::LRU);
	// ... and then the flusher writes the tier
	assert_int_equal(tier->put("k", v2, "two", 3, &held), 0);
	assert_int_equal(held, v2);
	// the object is still there (v1, deleted, until the GC), yet v2 is gone
	assert_non_null(f.st.find_object("k"));
	assert_false(f.st.live_version("k", v2));
	assert_false(f.st.slow_copy_listed("k", v2, f.now));
	assert_false(f.st.slow_copy_listed("k", v1, f.now));
	// the copy goes, but only if it is of that version
	assert_int_equal(tier->del_version("k", v1), -ESTALE);
	assert_int_equal(tier->version("k", &held, nullptr), 0);
	assert_int_equal(held, v2);
	assert_int_equal(tier->del_version("k", v2), 0);
	std::string data;
	assert_int_equal(tier->get("k", 0, 10, &data, nullptr, nullptr), -ENOENT);
	assert_int_equal(tier->del_version("k", v2), -ENOENT);

	// deleted meanwhile: gone as well
	f.now += kSec;
	uint64_t v3 = f.put_cfg(c, "d", 4096, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	assert_true(f.st.live_version("d", v3));
	lg::Record del;
	uint64_t n = 0;
	assert_int_equal(f.st.plan_del(f.who, "d", &del, &n, &err), 0);
	f.apply(del);
	assert_false(f.st.live_version("d", v3));
	assert_false(f.st.slow_copy_listed("d", v3, f.now));
	// expired: its copy is not served past the TTL, even before the
	// GC's Evict takes it
	f.now += kSec;
	uint64_t v4 = f.put_cfg(c, "t", 4096, with_attrs(Fx::cfg(1, 0, pb::FLUSH_LAZY), false, 1000));
	fl.mutable_flushed()->set_key("t");
	fl.mutable_flushed()->set_version(v4);
	f.apply(fl);
	assert_true(f.st.slow_copy_listed("t", v4, f.now));
	assert_false(f.st.slow_copy_listed("t", v4, f.now + 2 * kSec));
	f.evict("t", lg::Evict::TTL);
	assert_false(f.st.live_version("t", v4));
	assert_false(f.st.slow_copy_listed("t", v4, 0));
	// an LRU eviction of the listed version keeps it: served from the tier
	f.now += kSec;
	uint64_t v5 = f.put_cfg(c, "kept", 4096, Fx::cfg(1, 0, pb::FLUSH_LAZY));
	fl.mutable_flushed()->set_key("kept");
	fl.mutable_flushed()->set_version(v5);
	f.apply(fl);
	f.evict("kept", lg::Evict::LRU);
	assert_true(f.st.live_version("kept", v5));
	assert_true(f.st.slow_copy_listed("kept", v5, f.now));
	assert_false(f.st.slow_copy_listed("kept", v5 - 1, f.now));
	assert_false(f.st.slow_copy_listed("nothere", 1, f.now));
}

// A replica reported bad and failing the master's re-read is dropped
// only while another copy was read whole, and by its places: its index
// moves when another replica goes first (a drain, a dead segment)
// between the plan and the commit, and the index would then name a
// good replica (or none).
void test_drop_bad_replica(void **)
{
	Fx f;
	std::string err;
	uint64_t c = f.client(1);
	for (int i = 0; i < 3; i++)
		f.segment(c, 0x100000000ULL * (i + 1), 64 * kMiB);
	uint64_t v = f.put(c, "r", 2 * kMiB, 3);
	const VersionState *vs = f.st.find_version("r", v);
	assert_int_equal(vs->replicas.size(), 3);
	const pb::Replica a = vs->replicas[0].r, b = vs->replicas[1].r, cc = vs->replicas[2].r;
	assert_false(MasterState::same_replica(a, b));
	assert_true(MasterState::same_replica(b, b));

	// nothing else read whole (or only the bad one itself): it stays
	lg::Record rec;
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, b, {}, false, &rec, &err), -EBUSY);
	assert_int_equal(rec.rec_case(), lg::Record::REC_NOT_SET);
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, b, { b }, false, &rec, &err), -EBUSY);
	// a copy verified that is not the version's (any more) does not count
	pb::Replica elsewhere = a;
	elsewhere.mutable_shards(0)->set_offset(a.shards(0).offset() + 64 * kMiB);
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, b, { elsewhere }, false, &rec, &err),
			 -EBUSY);
	// the slow tier's copy read whole counts
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, b, {}, true, &rec, &err), 0);
	rec.Clear();
	// c read whole: b goes, named by its places
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, b, { cc }, false, &rec, &err), 0);
	assert_int_equal(rec.replica_drop().index(), 1);
	assert_true(MasterState::same_replica(rec.replica_drop().replica(), b));
	// before it is applied, a goes (index 0): b is at index 1 no more
	lg::Record first;
	first.mutable_replica_drop()->set_key("r");
	first.mutable_replica_drop()->set_version(v);
	first.mutable_replica_drop()->set_index(0);
	f.apply(first);
	f.apply(rec);
	vs = f.st.find_version("r", v);
	assert_int_equal(vs->replicas.size(), 1);
	assert_true(MasterState::same_replica(vs->replicas[0].r, cc));	// the good one stays
	// b's places are free again, c's are not
	assert_int_equal(f.used(), 2 * kMiB);
	// again: it has no such replica
	assert_int_equal(f.st.apply(rec, &err), -EINVAL);
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, b, { cc }, false, &rec, &err), -ENOENT);
	// the last copy is never dropped on a mismatch
	assert_int_equal(f.st.plan_drop_bad_replica("r", v, cc, { cc }, false, &rec, &err), -EBUSY);
	assert_int_equal(f.st.plan_drop_bad_replica("r", v + 100, cc, { cc }, false, &rec, &err),
			 -ENOENT);
	// a replay does the same
	MasterState replayed(f.lim);
	replay(replayed, f.log);
	assert_string_equal(image_of(replayed).c_str(), f.image().c_str());
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_equals_live),
		cmocka_unit_test(test_remount_keeps_allocations),
		cmocka_unit_test(test_placement_distinct),
		cmocka_unit_test(test_prefer_local),
		cmocka_unit_test(test_replicas_above_segments),
		cmocka_unit_test(test_pending_expiry),
		cmocka_unit_test(test_version_visibility),
		cmocka_unit_test(test_gc_after_lease),
		cmocka_unit_test(test_del),
		cmocka_unit_test(test_recent_dels),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_sync_waits_for_earlier_puts),
		cmocka_unit_test(test_dead_owner),
		cmocka_unit_test(test_replay_after_salvage_released),
		cmocka_unit_test(test_salvage_logged),
		cmocka_unit_test(test_leave_and_remove),
		cmocka_unit_test(test_replicate_plan),
		cmocka_unit_test(test_replicate_waits_for_readers),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_ownership),
		cmocka_unit_test(test_pending_quota),
		cmocka_unit_test(test_lease_ends),
		cmocka_unit_test(test_journal_reload),
		cmocka_unit_test(test_journal_snapshot_off_the_lock),
		cmocka_unit_test(test_journal_snapshot_child_dies),
		cmocka_unit_test(test_checksums),
		cmocka_unit_test(test_sum_span),
		cmocka_unit_test(test_checksum_cut_chunks),
		cmocka_unit_test(test_reservations),
		cmocka_unit_test(test_evict_order),
		cmocka_unit_test(test_evict_skips_leased_pending_and_takeover),
		cmocka_unit_test(test_evict_frees_space),
		cmocka_unit_test(test_evict_keeps_flushed_copy),
		cmocka_unit_test(test_ttl_expiry),
		cmocka_unit_test(test_replicate_keeps_attrs),
		cmocka_unit_test(test_flush_plans_durable_commits),
		cmocka_unit_test(test_slow_tier_put_says_what_it_holds),
		cmocka_unit_test(test_flush_of_evicted_version),
		cmocka_unit_test(test_drop_bad_replica),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
