// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's metadata: members, segments, objects (key -> versions ->
// replicas -> shards) and the counters (versions, client and segment ids).
//
// The state changes only through apply(record): the live path plans a
// change (validation, placement), turns it into a log record, applies it
// and logs it; a master that restarts or takes over replays the snapshot
// and the log through the same apply.  The allocators are not persisted:
// they are rebuilt from the shards the metadata holds (reserve), so an
// offset in use is never handed out again, whatever happened before.
//
// Not thread-safe: the master serialises on one mutex.
#pragma once

#include <cstdint>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <dsmem/store.h>

#include "alloc.hpp"
#include "dsstore.pb.h"
#include "dsstore_log.pb.h"

namespace dsmem::store {

namespace pb = dsmem::store::v1;
namespace lg = dsmem::store::log::v1;

inline constexpr size_t kKeyMax = DS_STORE_KEY_MAX;	/* the client checks the same */

struct Limits {
	uint64_t shard_size = 1ULL << 20;	// dram_shard_size
	uint64_t max_object_size = 1ULL << 30;
	int64_t put_timeout_ns = 60LL * 1000 * 1000 * 1000;
	// A pending put's space goes back to placement only this long after
	// its deadline: a client checks the deadline before it writes, and a
	// write begun then may run until the module gives up on the
	// connection (io_timeout_ms, 8 s by default).
	int64_t write_grace_ns = 10LL * 1000 * 1000 * 1000;
	int64_t get_lease_ns = 10LL * 1000 * 1000 * 1000;
	uint32_t list_page = 1000;
	// Deletes are remembered by request id for retry_window_ms of this
	// master's running time from when it learned of them (a new leader:
	// from its replay), for a retry whose first answer was lost with a
	// leader.  Clients retry for at most half of it (RegisterClient says
	// how long).  At most recent_dels are remembered: past that a delete
	// with a request id is refused (-EBUSY) rather than forgotten, since
	// a forgotten delete's retry would delete a later put.
	int64_t retry_window_ms = 120000;
	uint32_t recent_dels = 1u << 20;
	// What one identity (not an admin) may have pending -- puts started
	// and neither committed nor ended -- at once, in puts and in bytes:
	// a client that starts puts without end (a batch of 4096 one-GiB
	// PutStarts) takes this much of the pool and no more, and the other
	// identities' puts go on.  0: no limit.
	uint32_t identity_pending_puts = 4096;
	uint64_t identity_pending_bytes = 64ULL << 30;
};

// Who calls: the common name of its certificate, and whether it is an
// admin (acts for anyone).  Insecure mode: "" and admin.
struct Caller {
	std::string identity;
	bool admin = false;
};

struct ReplicaState {
	pb::Replica r;
	bool lost = false;	// pending put: a segment under it went away
	// lost, but its places stay allocated until the put ends: the
	// segment died rather than left, so it may be remounted with its
	// bytes while the put's writer may still be writing there
	bool held = false;
};

struct VersionState {
	uint64_t version = 0, size = 0, client_id = 0;
	uint64_t request_id = 0;	// the PutStart's (a retry finds it)
	std::string owner;		// the writer's identity
	pb::ReplicateConfig config;
	bool complete = false, deleted = false;
	int64_t deadline_ns = 0, ctime_ns = 0;
	std::vector<ReplicaState> replicas;
	pb::Checksums sums;		// the writer's; empty: none
	int64_t expires_ns = 0;		// TTL: ctime + ttl, or set later; 0 never
	// evicted from the pool, read from the slow tier's copy: not repaired
	bool evicted = false;
	// The ordinal (MasterState::applied()) of the record that committed
	// it; 0 for one restored from a snapshot, which holds only what the
	// log holds.  A record is applied before it is durable, and the slow
	// tier must never hold a version the log may still forget (a leader
	// that dies first would hand its number to another put).  Volatile:
	// not in the snapshot.
	uint64_t committed_at = 0;
	// Complete replicas a dead segment took away (the salvage): their
	// places stay allocated, since the bytes may still be readable
	// (kernel memory outlives its owner) and a remount makes them
	// replicas again.  Part of the logged state, so that a master which
	// replays the log holds the same salvage as the leader that wrote it.
	std::vector<pb::Replica> salvage;
};

struct ObjectState {
	std::map<uint64_t, VersionState> versions;
	uint64_t flushed_version = 0;	// the slow tier's copy
	// last put or get: eviction's order.  Volatile (a replay starts from
	// the commit times), so not in the snapshot.
	int64_t atime_ns = 0;
};

// A version eviction may take now, with what it frees.
struct EvictCandidate {
	std::string key;
	uint64_t version = 0;
	uint64_t bytes = 0;		// all its replicas'
	uint64_t tier_bytes = 0;	// those on the tier asked about
	bool soft_pin = false;
	int64_t atime_ns = 0;
};

// Why a full tier has nothing (more) to evict, for the error.
struct EvictBlockers {
	uint64_t leased = 0;		// versions readers (or copies) hold
	uint64_t pending = 0;		// puts not committed yet
	uint64_t quarantined_bytes = 0;	// an earlier leader's reservations
	int64_t takeover_left_ns = 0;	// a new leader's wait for old leases
};

struct SegmentState {
	pb::SegmentDesc desc;		// used is filled from alloc on the way out
	std::unique_ptr<OffsetAllocator> alloc;
};

// A replica dropped because its segment died: the bytes may still be
// readable (kernel memory outlives its owner), a last source before the
// slow tier.  One entry of a VersionState's salvage, as listed.
struct Salvage {
	std::string key;
	uint64_t version = 0;
	pb::Replica replica;
};

// A version short of the replicas its config asks for.
struct RepairPlan {
	std::string key;
	uint64_t version = 0;
	uint32_t dram_missing = 0, nvmeof_missing = 0;
};

// What a Get answers.
struct GetResult {
	pb::ObjectInfo object;
	bool slow_tier = false;
	bool below_min_version = false;
};

class MasterState {
public:
	explicit MasterState(const Limits &limits) : limits_(limits) {}
	MasterState(const MasterState &) = delete;
	MasterState &operator=(const MasterState &) = delete;

	const Limits &limits() const { return limits_; }

	// The one way the state changes.  -EINVAL (with *err) for a record
	// that does not fit the state: a corrupt log, or a bug.
	int apply(const lg::Record &rec, std::string *err);
	void snapshot(lg::Snapshot *snap) const;
	int restore(const lg::Snapshot &snap, std::string *err);

	// ---- planners: validate and build the record; the state is unchanged
	// (placement allocates to find room, then gives it back: apply reserves)
	int plan_term(lg::Record *rec) const;
	// -EPERM: previous_id is another identity's client.
	int plan_register_client(const Caller &c, const pb::Member &self, uint64_t previous_id,
				 lg::Record *rec, std::string *err) const;
	// *rec stays empty (no record) when the same segment is already mounted
	// by this client: *id is the answer.  -EPERM: the segment is known as
	// another identity's.
	int plan_register_segment(const Caller &c, uint64_t client_id, const pb::SegmentDesc &desc,
				  lg::Record *rec, uint64_t *id, bool *remounted,
				  std::string *err) const;
	// -EPERM: key has a version of another identity (the caller may
	// neither replace nor delete it).
	int check_owner(const Caller &c, const std::string &key, std::string *err) const;
	// -EPERM: client_id is known and registered by another identity.
	int check_client(const Caller &c, uint64_t client_id, std::string *err) const;
	int plan_put_start(const Caller &c, uint64_t client_id, const std::string &key, uint64_t size,
			   const pb::ReplicateConfig &config,
			   const std::set<uint64_t> &exclude, int64_t now_ns,
			   lg::Record *rec, std::string *err);
	// -ESTALE: expired or aborted; *abort holds a PutAbort to log when the
	// commit found the put past its deadline or without a usable replica.
	// sums: the writer's checksums of the bytes (empty: none)
	int plan_put_commit(const std::string &key, uint64_t version,
			    const std::vector<uint32_t> &done, const pb::Checksums &sums,
			    int64_t now_ns, lg::Record *rec, lg::Record *abort,
			    std::string *err) const;
	int plan_put_abort(const std::string &key, uint64_t version, lg::Record *rec,
			   std::string *err) const;
	int plan_del(const Caller &c, const std::string &key, lg::Record *rec, uint64_t *versions,
		     std::string *err) const;
	// The delete of key with this request id, among the recent ones; NULL
	// if none (request id 0: never).
	const lg::Del *recent_del(const std::string &key, uint64_t request_id) const;
	// Whether another delete with a request id would overflow the
	// remembered ones (it is refused then; see Limits).
	bool recent_dels_full() const { return recent_dels_.size() >= limits_.recent_dels; }
	// Forgets the deletes learned of retry_window_ms before now_ms
	// (steady clock).
	void prune_recent_dels(int64_t now_ms);
	// Records taking a version's replicas down to config (drops, each
	// named by its places), plus the ConfigSet; the caller adds replicas
	// with the mover.  A drop is left out while a reader may hold the
	// version (a Get's lease, a copy, a new leader's wait for the old
	// one's leases): its space would go to another put under the reader.
	// *deferred then says plan_trim must make it later.
	int plan_replicate(const std::string &key, const pb::ReplicateConfig &config, int64_t now_ns,
			   std::vector<lg::Record> *recs, uint64_t *version, bool *deferred,
			   std::string *err) const;
	// The drops plan_replicate deferred for key's newest version, once no
	// reader may hold it (none yet, or none left: empty).
	std::vector<lg::Record> plan_trim(const std::string &key, int64_t now_ns) const;
	// A new replica of (key, version) of the given type, placed away from
	// the segments its shard indexes already use (and from avoid).  It
	// stays allocated until release_replica() or apply(ReplicaAdd)
	// (which the caller precedes with release_replica, as apply reserves).
	// skip: the index of a replica being replaced (its places do not count).
	int place_replica(const std::string &key, uint64_t version, pb::SegmentType type,
			  const std::set<uint64_t> &avoid, int skip, pb::Replica *out,
			  std::string *err);
	void release_replica(const pb::Replica &r);
	// A reader reported bad (key, version)'s replica bad, and the
	// master's re-read of it failed its checksums: the ReplicaDrop of
	// that replica, named by its shards (not by its index, which other
	// changes move).  -EBUSY unless another copy was verified whole
	// meanwhile (one of verified still among its replicas, or
	// slow_copy_verified, the slow tier's copy of it): one mismatch of a
	// re-read must not drop the last good copy.  -ENOENT: no such
	// version or replica (any more).
	int plan_drop_bad_replica(const std::string &key, uint64_t version, const pb::Replica &bad,
				  const std::vector<pb::Replica> &verified, bool slow_copy_verified,
				  lg::Record *rec, std::string *err) const;
	// Do a and b name the same places (type, and segment, offset and
	// length of each shard)?
	static bool same_replica(const pb::Replica &a, const pb::Replica &b);
	// The record reserving r (placed, then released: apply reserves) for a
	// copy of (key, version) by this term's leader, which writes into
	// space only once such a record is durable.  A ReplicaAdd naming it
	// takes the space over, a ReplicaRelease gives it back; until then it
	// is nobody else's, whichever term leads (see dsstore_log.proto).
	void plan_reserve(const std::string &key, uint64_t version, const pb::Replica &r,
			  lg::Record *rec) const;
	const std::map<uint64_t, lg::ReplicaReserve> &reservations() const { return reservations_; }

	// ---- queries
	static int check_key(const std::string &key, std::string *err);
	// now_ns: a version past its TTL is absent (0: no clock, for tests)
	int get(const std::string &key, int64_t min_version, GetResult *res,
		std::string *err, int64_t now_ns = 0) const;
	int list(const std::string &prefix, const std::string &start_after, uint32_t limit,
		 std::vector<pb::ObjectInfo> *out, bool *more, int64_t now_ns = 0) const;
	// A put of key numbered <= up_to still pending?
	bool pending_upto(const std::string &key, uint64_t up_to) const;
	// The newest complete, not deleted version; nullptr if none.
	const VersionState *newest(const std::string &key) const;
	const VersionState *find_version(const std::string &key, uint64_t version) const;
	// The pending put of key that client_id began with request_id (not 0);
	// nullptr if none.
	const VersionState *pending_put(const std::string &key, uint64_t client_id,
					uint64_t request_id) const;
	const ObjectState *find_object(const std::string &key) const;
	void object_info(const std::string &key, const VersionState &v, bool with_replicas,
			 pb::ObjectInfo *out) const;

	// Records for pending puts past their deadline.
	std::vector<lg::Record> plan_expiry(int64_t now_ns) const;
	// Records dropping versions superseded or deleted, not under a lease.
	std::vector<lg::Record> plan_gc(int64_t now_ns) const;
	// Newest versions short of replicas (every type counted, DRAM
	// replicas on DRAINING segments not counted as good).
	std::vector<RepairPlan> plan_repairs() const;
	std::optional<RepairPlan> plan_repair(const std::string &key) const;
	// Newest versions with flush LAZY (or EAGER) not in the slow tier,
	// whose commit is durable: committed by one of the first
	// durable_records records applied (see applied()).
	std::vector<std::pair<std::string, uint64_t>> plan_flushes(uint64_t durable_records) const;
	// Was (key, version)'s commit one of the first durable_records
	// records applied?  false for a version it does not know.
	bool commit_durable(const std::string &key, uint64_t version, uint64_t durable_records) const;
	// Is (key, version) complete and not deleted?  A flush checks it
	// after its slow tier write: a version evicted, expired or deleted
	// meanwhile gets no Flushed record, and the copy written is removed.
	bool live_version(const std::string &key, uint64_t version) const;
	// May the slow tier's copy of (key, version) be served?  Only the
	// version listed as flushed, and not one deleted or past its TTL
	// (now_ns 0: no clock): evicted, expired and deleted bytes are never
	// readable again, even if a copy was left behind.
	bool slow_copy_listed(const std::string &key, uint64_t version, int64_t now_ns) const;

	// ---- eviction and TTL (docs/store.md "Eviction")
	// The newest complete versions with replicas on type that may be
	// evicted now, in order: unpinned ones by last access, then soft
	// pinned ones; at most max of them.  Not leased or read by a copy,
	// not while a new leader waits out the old one's leases (*why says
	// what blocks: its count of leased versions is of those walked,
	// all of them when fewer than max came back).  The order is kept
	// by apply() and touch(): finding the first few costs no walk of
	// every object.
	std::vector<EvictCandidate> eviction_order(pb::SegmentType type, int64_t now_ns,
						   EvictBlockers *why, size_t max = SIZE_MAX) const;
	void plan_evict(const EvictCandidate &c, lg::Evict::Reason reason, lg::Record *rec) const;
	// Evict records for versions past their TTL that nothing reads.
	std::vector<lg::Record> plan_ttl(int64_t now_ns) const;
	// The owner (or an admin) sets the soft pin or TTL of the newest version.
	int plan_set_attr(const Caller &c, const std::string &key, uint32_t mask, bool soft_pin,
			  uint64_t ttl_ms, int64_t now_ns, lg::Record *rec, std::string *err) const;
	// A Get or a put: the key moves to the back of the eviction order.
	void touch(const std::string &key, int64_t now_ns);
	// Bytes of ALIVE segments of type: their size, and allocated.
	void tier_usage(pb::SegmentType type, uint64_t *size, uint64_t *used) const;
	uint64_t evictions() const { return evictions_; }
	uint64_t expiries() const { return expiries_; }
	uint64_t evicted_bytes() const { return evicted_bytes_; }

	// Leases (volatile): a Get's, or the mover's while it reads.
	void lease(const std::string &key, uint64_t version, int64_t until_ns);
	bool leased(const std::string &key, uint64_t version, int64_t now_ns) const;
	// The mover's hold while it reads a version (counted).
	void pin(const std::string &key, uint64_t version) { pins_[{ key, version }]++; }
	void unpin(const std::string &key, uint64_t version);
	void expire_leases(int64_t now_ns);
	// A lease, a copy's pin, or a new leader's wait for the old one's
	// leases: a reader may be reading (key, version)'s replicas.
	bool readers_may_hold(const std::string &key, uint64_t version, int64_t now_ns) const
	{
		return leased(key, version, now_ns) || now_ns < gc_not_before_ns_;
	}
	// Until when (CLOCK_REALTIME ns) readers may hold it, as things stand:
	// the later of its lease and the takeover wait; a copy's pin, which
	// has no end given, counts as one lease from now_ns.
	int64_t readers_until(const std::string &key, uint64_t version, int64_t now_ns) const;
	// No GC before this (a new leader does not know the old one's leases).
	void set_gc_not_before(int64_t ns) { gc_not_before_ns_ = ns; }
	// No pending put expires before this: a new leader's clock is not the
	// old one's, and a writer counts its deadline from the old one's
	// answer on its own clock (see Leader::start).
	void set_expiry_not_before(int64_t ns) { expiry_not_before_ns_ = ns; }

	// Salvage holds its shards' places until a record ends it: a
	// SalvageDrop (plan_salvage_drop), a ReplicaAdd of the same replica
	// (a remount re-adopts it), the removal of a segment under it, or
	// the end of its version.  All of it, version by version.
	std::vector<Salvage> salvage() const;
	const std::set<std::pair<std::string, uint64_t>> &salvaged() const { return salvaged_; }
	bool salvage_on(uint64_t segment_id) const;
	void plan_salvage_drop(const std::string &key, uint64_t version, lg::Record *rec) const;

	// The key a record changes; nullptr for records about no one key
	// (they change no object's versions).
	static const std::string *record_key(const lg::Record &rec);

	// ---- counters and listings
	// Records applied so far (replayed or live; a snapshot restored counts
	// none).  The leader applies each record before submitting it to the
	// log, so the last (submitted - durable) of them are the ones not
	// durable yet.
	uint64_t applied() const { return applied_; }
	uint64_t term() const { return term_; }
	uint64_t next_version() const { return next_version_; }
	uint64_t next_client_id() const { return next_client_id_; }
	uint64_t next_segment_id() const { return next_segment_id_; }
	// Objects with a live version (complete, not deleted), their newest
	// such versions' bytes, and all versions: kept by apply(), since
	// counting them would walk every object under the state mutex.
	uint64_t object_count() const { return live_objects_; }
	uint64_t object_bytes() const { return live_bytes_; }
	uint64_t version_count() const { return versions_; }
	// The keys that expiry, GC, TTL or the lazy flush may have work on
	// (a pending put, a deleted or superseded version, a TTL, a flush
	// not done): what their passes walk, instead of every object.
	const std::set<std::string> &attention() const { return attention_; }
	// The keys whose newest version has fewer replicas than it asks for
	// (exactly those plan_repair() has a plan for)
	const std::set<std::string> &repair_due() const { return repair_due_; }
	// Eviction's order: an entry for each object whose newest live
	// version is not evicted, soft pins last, then by last access, then
	// by key (a pointer to objects()' own key)
	struct LruEntry {
		bool soft_pin;
		int64_t atime_ns;
		const std::string *key;
	};
	struct LruOrder {
		bool operator()(const LruEntry &a, const LruEntry &b) const
		{
			return std::tie(a.soft_pin, a.atime_ns, *a.key) <
			       std::tie(b.soft_pin, b.atime_ns, *b.key);
		}
	};
	const std::set<LruEntry, LruOrder> &lru() const { return lru_; }
	uint64_t pending_count() const { return pending_; }
	// Puts and bytes identity has pending (Limits::identity_pending_*).
	std::pair<uint64_t, uint64_t> pending_of(const std::string &identity) const
	{
		auto it = pending_by_.find(identity);
		return it == pending_by_.end() ? std::pair<uint64_t, uint64_t>{} : it->second;
	}
	size_t lease_count() const { return leases_.size(); }
	const std::map<uint64_t, pb::Member> &clients() const { return clients_; }
	const std::map<uint64_t, SegmentState> &segments() const { return segments_; }
	const SegmentState *segment(uint64_t id) const;
	void segment_desc(const SegmentState &s, pb::SegmentDesc *out) const;
	const std::map<std::string, ObjectState> &objects() const { return objects_; }
	// Versions with a replica touching segment id: (key, version, replica index).
	struct ReplicaRef {
		std::string key;
		uint64_t version;
		uint32_t index;
		bool complete;
	};
	std::vector<ReplicaRef> replicas_on(uint64_t segment_id) const;

private:
	// What one object adds to the counts, and whether it needs the
	// passes' attention.  apply() takes it before and after each record
	// that names a key (every record that changes an object's versions
	// does) and accounts the difference.
	struct Tally {
		uint64_t versions = 0, live = 0, bytes = 0, pending = 0;
		bool attention = false, repair = false;
		// the pending versions, by their writer's identity
		std::map<std::string, std::pair<uint64_t, uint64_t>> pending_by;
	};
	Tally tally(const std::string &key) const;
	void account(const std::string &key, const Tally &before, const Tally &after);
	// take key's entry out of lru_ before a change to it, and put it
	// back (if it has one) after
	void lru_out(const std::string &key);
	std::optional<LruEntry> lru_entry(const std::string &key) const;	// if it has one
	static const VersionState *newest_of(const ObjectState &o);
	void lru_in(const std::string &key);
	int apply_record(const lg::Record &rec, std::string *err);
	int apply_segment_add(const lg::SegmentAdd &r, std::string *err);
	int apply_put_start(const lg::PutStart &r, std::string *err);
	int apply_put_commit(const lg::PutCommit &r, std::string *err);
	int apply_replica_add(const lg::ReplicaAdd &r, std::string *err);
	int apply_evict(const lg::Evict &r, std::string *err);
	int reserve_replica(const pb::Replica &r, std::string *err);
	// A log written before salvage was logged freed it without a record
	// and may place a new replica over it: the salvage there gives way.
	bool yield_salvage(const pb::Shard &s);
	void free_salvage(const std::string &key, uint64_t version, VersionState &v);
	void free_replica(const pb::Replica &r);
	// Drop every replica touching segment id; dead: keep them as salvage
	// (otherwise the segment goes, and the salvage touching it too).
	void drop_segment_replicas(uint64_t id, bool dead);
	void erase_version(const std::string &key, uint64_t version);
	VersionState *version_mut(const std::string &key, uint64_t version);
	static bool touches(const pb::Replica &r, uint64_t segment_id);
	// Candidate segments for new shards, ALIVE and of this type.
	std::vector<uint64_t> candidates(pb::SegmentType type) const;
	int place_shards(pb::SegmentType type, uint64_t size, uint64_t shard_size,
			 const std::vector<std::set<uint64_t>> &used_per_shard,
			 const std::vector<uint64_t> &preferred, const std::set<uint64_t> &exclude,
			 pb::Replica *out);

	Limits limits_;
	uint64_t applied_ = 0;
	uint64_t term_ = 0;
	uint64_t next_version_ = 1;
	uint64_t next_client_id_ = 1;
	uint64_t next_segment_id_ = 1;
	std::map<uint64_t, pb::Member> clients_;
	std::map<uint64_t, SegmentState> segments_;
	std::map<std::string, ObjectState> objects_;
	std::set<std::string> attention_, repair_due_;
	uint64_t live_objects_ = 0, live_bytes_ = 0, versions_ = 0, pending_ = 0;
	std::map<std::string, std::pair<uint64_t, uint64_t>> pending_by_;	// by identity
	std::set<LruEntry, LruOrder> lru_;	// its keys point into objects_
	std::map<std::pair<std::string, uint64_t>, int64_t> leases_;
	// the leases by end, for expire_leases() to find the ended ones
	// without a walk of every lease (a busy master holds one per
	// version read in the last lease period)
	std::multimap<int64_t, std::pair<std::string, uint64_t>> lease_ends_;
	std::map<std::pair<std::string, uint64_t>, int> pins_;
	int64_t gc_not_before_ns_ = 0;
	int64_t expiry_not_before_ns_ = 0;
	std::map<uint64_t, lg::ReplicaReserve> reservations_;	// by id
	// the versions with salvage, so that its users need not look at
	// every object (derived from the versions, not in the snapshot)
	std::set<std::pair<std::string, uint64_t>> salvaged_;
	// the deletes with a request id of the last retry window, oldest
	// first, and by request id (a deque's ends move without moving the
	// other elements)
	struct RecentDel {
		int64_t at_ms;		// steady clock, when this master learned of it
		lg::Del del;
	};
	std::deque<RecentDel> recent_dels_;
	std::unordered_multimap<uint64_t, const RecentDel *> recent_by_id_;
	void remember_del(const lg::Del &d);
	uint64_t next_reservation_id_ = 1;
	uint64_t evictions_ = 0, expiries_ = 0, evicted_bytes_ = 0;
	uint64_t rng_ = 0x9e3779b97f4a7c15ULL;	// placement's xorshift
};

const char *segment_state_name(pb::SegmentState s);

}  // namespace dsmem::store
