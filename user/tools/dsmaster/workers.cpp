// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's background work: heartbeat monitor, expiry of pending puts,
// GC of superseded and deleted versions, re-replication, draining, and
// the master's own peering with clients (the LAZY flusher is in flush.cpp,
// ReportReplica in report.cpp).  Each plans under the state mutex, moves
// data without it, and re-takes it to commit what it did (checking that
// the world did not move meanwhile).
#include <dsmem/ds.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <tuple>

#include "checksum.hpp"
#include "service.hpp"

namespace dsmem::store {

namespace {

// How often a client pings an idle connection to a master (masters.cpp,
// GRPC_ARG_KEEPALIVE_TIME_MS): a master stalled longer loses them.
constexpr int64_t kClientKeepaliveMs = 2000;

int64_t mono_ms()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

}  // namespace

bool Leader::sleep_for(std::chrono::milliseconds d, std::condition_variable *cv, bool *flag)
{
	std::unique_lock<std::mutex> l(wm_);
	std::condition_variable &c = cv ? *cv : wcv_;
	c.wait_for(l, d, [&] { return stopping_.load() || (flag && *flag); });
	if (flag)
		*flag = false;
	return !stopping_;
}

void Leader::kick_repair()
{
	std::lock_guard<std::mutex> g(wm_);
	repair_kicked_ = true;
	repair_cv_.notify_all();
}

void Leader::want_peer(const v1::Member &m)
{
	std::lock_guard<std::mutex> g(wm_);
	peer_queue_.push_back(m);
	peer_kicked_ = true;
	peer_cv_.notify_all();
}

// ---- heartbeats

void Leader::declare_dead_locked(uint64_t client_id, std::vector<lg::Record> *recs)
{
	lg::Record r;
	r.mutable_client_remove()->set_client_id(client_id);
	r.mutable_client_remove()->set_dead(true);
	recs->push_back(r);
}

/*
 * A client is dead once it was silent for --heartbeat-timeout-ms of the
 * master's own running time.  Time the master did not run -- this loop
 * waited for the state mutex (a snapshot of a big state), for a log
 * append, or the process was paused -- is no client's silence: beats
 * that came meanwhile may still be queued behind the stall.  So when a
 * round comes later than its period after the last one, the lateness is
 * credited to every client (its last beat moves on by as much).  A
 * client that really stopped still dies, only later by what the master
 * stalled.
 */
void Leader::heartbeat_loop()
{
	auto period = std::chrono::milliseconds(std::max<uint64_t>(50, opts_.heartbeat_ms / 2));
	int64_t quarantine_at = 0;
	int64_t last_round = mono_ms();

	while (sleep_for(period)) {
		heartbeat_rounds_++;
		std::vector<v1::Member> dead;
		std::vector<v1::SegmentDesc> segs;
		// per dead client: the replicas it takes along (one per replica,
		// however many of its segments that replica touches)
		std::map<uint64_t, std::set<std::tuple<std::string, uint64_t, uint32_t>>> dropped;
		uint64_t seq = 0;
		std::string err;
		{
			std::lock_guard<std::mutex> g(mu_);
			{
				std::lock_guard<std::mutex> sg(seen_mu_);
				int64_t now = mono_ms();
				int64_t late = now - last_round - static_cast<int64_t>(period.count());
				last_round = now;
				// (a grace already given, a last beat in the future,
				// is left as it is: moving it back to now would undo it)
				if (late > 0)
					for (auto &[id, seen] : last_seen_)
						if (seen < now)
							seen = std::min(now, seen + late);
				// A stall past the clients' keepalive (or their
				// timeout) broke their gRPC connections, which reconnect
				// with backoff as after a takeover: in chaos runs under
				// TCG they came back 2 to 4 s after a 5 s freeze.  They
				// get a new leader's longer first timeout (start()); a
				// client that really stopped still dies, that much
				// later.  (Not for the lateness of a loaded host, a
				// fraction of a second now and then: repeated, it would
				// keep a dead client alive.)
				if (late >= std::max<int64_t>(kClientKeepaliveMs,
							      static_cast<int64_t>(opts_.heartbeat_timeout_ms))) {
					int64_t grace = now + takeover_timeout_ms() -
							static_cast<int64_t>(opts_.heartbeat_timeout_ms);
					for (auto &[id, seen] : last_seen_)
						seen = std::max(seen, grace);
				}
				std::erase_if(beat_identity_, [this](const auto &kv) {
					return !st_.clients().count(kv.first);
				});
				for (const auto &[id, m] : st_.clients()) {
					beat_identity_[id] = m.identity();
					auto it = last_seen_.find(id);
					if (it == last_seen_.end()) {
						last_seen_[id] = now;
						continue;
					}
					if (now - it->second > static_cast<int64_t>(opts_.heartbeat_timeout_ms))
						dead.push_back(m);
				}
				// (a beat from now on is answered from the state,
				// which forgets the client below)
				for (const auto &m : dead) {
					last_seen_.erase(m.client_id());
					beat_identity_.erase(m.client_id());
				}
			}
			for (const auto &m : dead) {
				for (const auto &[id, s] : st_.segments())
					if (s.desc.owner() == m.client_id()) {
						segs.push_back(s.desc);
						for (const auto &r : st_.replicas_on(id))
							if (r.complete)
								dropped[m.client_id()].insert({ r.key, r.version, r.index });
					}
				std::vector<lg::Record> recs;
				declare_dead_locked(m.client_id(), &recs);
				for (const auto &r : recs)
					if (commit_locked(r, &seq, &err))
						break;
				auto w = watchers_.find(m.client_id());
				if (w != watchers_.end()) {
					std::lock_guard<std::mutex> wg(w->second->m);
					w->second->closed = true;
					w->second->cv.notify_all();
					watchers_.erase(w);
				}
			}
		}
		// (here, not in the GC: whatever --gc-ms is, a few seconds after
		// an old leader said it stopped its space is free again)
		if (mono_ms() >= quarantine_at) {
			release_quarantine();
			quarantine_at = mono_ms() + 2000;
		}
		if (dead.empty())
			continue;
		if (seq && wait_durable(seq, &err))
			return;
		for (const auto &m : dead) {
			std::string list;
			size_t n = dropped[m.client_id()].size();
			for (const auto &s : segs)
				if (s.owner() == m.client_id())
					list += (list.empty() ? "" : ",") + std::to_string(s.id());
			log_line("client %llu (node %u) dead: no heartbeat for %llu ms; segments %s dead, "
				 "%zu replicas dropped",
				 static_cast<unsigned long long>(m.client_id()), m.node_id(),
				 static_cast<unsigned long long>(opts_.heartbeat_timeout_ms),
				 list.empty() ? "(none)" : list.c_str(), n);
			v1::Event ev;
			*ev.mutable_member_left() = m;
			push_event(ev, m.client_id());
		}
		for (auto s : segs) {
			s.set_state(v1::SEGMENT_DEAD);
			v1::Event ev;
			*ev.mutable_segment_removed() = s;
			push_event(ev, 0);
		}
		kick_repair();
	}
}

// ---- expiry and GC

void Leader::gc_loop()
{
	auto period = std::chrono::milliseconds(std::max<uint64_t>(50, opts_.gc_ms));

	while (sleep_for(period)) {
		uint64_t seq = 0, expired = 0, dropped = 0, ttl = 0, evicted = 0, evicted_bytes = 0;
		std::string err;
		{
			std::lock_guard<std::mutex> g(mu_);
			int64_t now = now_ns();
			st_.expire_leases(now);
			st_.prune_recent_dels(mono_ms());
			for (const auto &r : st_.plan_expiry(now)) {
				if (commit_locked(r, &seq, &err))
					break;
				expired++;
				if (opts_.verbose)
					log_line("put of '%s' version %llu expired",
						 r.put_abort().key().substr(0, 64).c_str(),
						 static_cast<unsigned long long>(r.put_abort().version()));
			}
			for (const auto &r : st_.plan_gc(now)) {
				if (commit_locked(r, &seq, &err))
					break;
				dropped++;
			}
			for (const auto &r : st_.plan_ttl(now)) {
				if (evict_locked(r, &seq, &err))
					break;
				ttl++;
			}
			evict_to_watermarks_locked(now, &seq, &evicted, &evicted_bytes);
			if (expired)
				sync_cv_.notify_all();
			// replies need not wait for records durable already
			uint64_t durable = journal_->durable();
			std::erase_if(key_seq_, [durable](const auto &kv) { return kv.second <= durable; });
			// salvage no longer needed: the version is superseded or
			// deleted, or has its replicas again (and no copy reads it
			// now).  A record ends it, so that a master replaying the
			// log frees the same places at the same point.
			std::vector<std::pair<std::string, uint64_t>> unneeded;
			for (const auto &[key, ver] : st_.salvaged()) {
				const VersionState *n = st_.newest(key);
				std::optional<RepairPlan> p = st_.plan_repair(key);
				bool needed = n && n->version == ver && p && p->version == ver;
				if (!needed && !st_.leased(key, ver, now))
					unneeded.push_back({ key, ver });
			}
			for (const auto &[key, ver] : unneeded) {
				lg::Record drop;
				st_.plan_salvage_drop(key, ver, &drop);
				if (commit_locked(drop, &seq, &err))
					break;
			}
			// Replicate's drops that a reader held back, now that
			// none does (a key put again or gone needs none)
			for (auto it = trims_.begin(); it != trims_.end();) {
				const VersionState *n = st_.newest(*it);
				if (n && st_.readers_may_hold(*it, n->version, now)) {
					++it;
					continue;
				}
				for (const auto &r : st_.plan_trim(*it, now))
					if (commit_locked(r, &seq, &err))
						break;
				it = trims_.erase(it);
			}
			std::erase_if(salvage_next_, [this](const auto &kv) {
				const VersionState *v = st_.find_version(kv.first.first, kv.first.second);
				return !v || v->salvage.empty();
			});
		}
		if (seq && wait_durable(seq, &err))
			return;
		if (slow_)
			delete_slow_copies();
		if (ttl)
			log_line("%llu objects expired (TTL)", static_cast<unsigned long long>(ttl));
		if (opts_.verbose && (expired || dropped))
			log_line("gc: %llu pending puts expired, %llu versions freed",
				 static_cast<unsigned long long>(expired),
				 static_cast<unsigned long long>(dropped));
		gc_rounds_++;
	}
}

/*
 * Space an earlier term reserved for a copy it never finished: its leader
 * may still be writing there (stopped, or cut off from etcd while its
 * RDMA goes on), so nobody is given it until that leader is known to have
 * stopped -- it says so once its last copy ended, or the file log's lock
 * proves it gone -- or is fenced: this leader was elected once that
 * leader's lease had run out, and a copy writes no round once the lease
 * of its leader ran out (add_replica), so --fence-grace-ms after this
 * term began, a round that was under way then has landed too.  A leader
 * killed without notice so holds its space that long, not until its
 * segments are removed.
 */
void Leader::release_quarantine()
{
	if (!quiesced_)
		return;
	std::set<uint64_t> terms, stopped;
	bool fenced;
	{
		std::lock_guard<std::mutex> g(mu_);
		for (const auto &[id, r] : st_.reservations())
			if (r.term() < st_.term())
				terms.insert(r.term());
		fenced = mono_ms() - started_ms_ >= static_cast<int64_t>(opts_.fence_grace_ms);
	}
	for (uint64_t t : terms)
		if (fenced || quiesced_(t))
			stopped.insert(t);
	if (stopped.empty())
		return;
	uint64_t seq = 0, bytes = 0;
	size_t n = 0;
	std::string err;
	{
		std::lock_guard<std::mutex> g(mu_);
		std::vector<lg::ReplicaReserve> done;
		for (const auto &[id, r] : st_.reservations())
			if (stopped.count(r.term()))
				done.push_back(r);
		for (const auto &r : done) {
			lg::Record rel;
			rel.mutable_replica_release()->set_id(r.id());
			if (commit_locked(rel, &seq, &err))
				break;
			for (const auto &sh : r.replica().shards())
				bytes += sh.length();
			n++;
		}
	}
	if (seq && !wait_durable(seq, &err))
		log_line("quarantine over: %zu reservations (%llu bytes) of %zu %s terms released",
			 n, static_cast<unsigned long long>(bytes), stopped.size(),
			 fenced ? "fenced or stopped" : "stopped");
}

// ---- re-replication

/*
 * The copy is written only into space this term reserved with a durable
 * record (ReplicaReserve), which with etcd is fenced by the leader key: a
 * leader deposed before that record (stopped, cut off from etcd) writes
 * nothing, and one deposed after it writes only where every later leader
 * keeps everyone else out (quarantine) until this one is known to have
 * stopped.  Placing the replica and writing it before a record said so
 * let a stopped old leader, continued, overwrite space the new leader had
 * given to an acknowledged object.
 */
int Leader::add_replica(const std::string &key, uint64_t version, v1::SegmentType type,
			const std::set<uint64_t> &avoid, int replace_index, std::string *err)
{
	v1::Replica src, dst, old;
	v1::Checksums sums;
	Resolved src_r, dst_r;
	bool from_slow = false, from_salvage = false, flushed = false;
	uint64_t size, seq = 0, reservation;
	{
		std::lock_guard<std::mutex> g(mu_);
		const VersionState *v = st_.find_version(key, version);
		if (!v || !v->complete) {
			*err = "version gone";
			return -ENOENT;
		}
		size = v->size;
		sums = v->sums;
		if (replace_index >= 0) {
			if (static_cast<size_t>(replace_index) >= v->replicas.size()) {
				*err = "the replica moved meanwhile";
				return -ESTALE;
			}
			old = v->replicas[replace_index].r;
			bool on_avoided = false;
			for (const auto &s : old.shards())
				on_avoided = on_avoided || avoid.count(s.segment_id());
			if (!on_avoided) {
				*err = "the replica moved meanwhile";
				return -ESTALE;
			}
		}
		const ObjectState *o = st_.find_object(key);
		flushed = o && o->flushed_version == version && slow_;
		if (!source_locked(key, version, -1, &src)) {
			if (!v->salvage.empty()) {
				// the dead owner's memory may still answer
				size_t next = salvage_next_[{ key, version }];
				src = v->salvage[next % v->salvage.size()];
				from_salvage = true;
			} else if (flushed) {
				from_slow = true;
			} else {
				*err = "no replica left to copy from";
				return -ENODATA;
			}
		}
		if (int ret = st_.place_replica(key, version, type, avoid, replace_index, &dst, err))
			return ret;
		// apply() reserves it again, for this term
		st_.release_replica(dst);
		lg::Record res;
		st_.plan_reserve(key, version, dst, &res);
		if (int ret = commit_locked(res, &seq, err))
			return ret;
		reservation = res.replica_reserve().id();
		writing_++;
		if (!from_slow)
			src_r = resolve_locked(src);
		dst_r = resolve_locked(dst);
		st_.pin(key, version);
	}

	// No round is written once this leader's lease ran out: a newer
	// leader may have been elected since, and --fence-grace-ms after it
	// took over it gives the space reserved here to others
	// (release_quarantine).
	auto leased_still = [this](std::string *why) {
		if (leased())
			return 0;
		*why = "this master's lease on leadership ran out during the copy";
		return -ESHUTDOWN;
	};
	auto copy_from_slow = [&] {
		std::string data;
		uint64_t sver = 0, ssize = 0;
		int r = slow_->get(key, 0, size, &data, &sver, &ssize);
		if (!r && (sver != version || data.size() != size)) {
			*err = "the slow tier holds another version";
			r = -ENODATA;
		} else if (r) {
			*err = "slow tier: " + std::string(strerror(-r));
		} else {
			r = check_sums(sums, size, { { data.data(), size } }, 0, size, err);
			if (!r)
				r = mover_->write(dst_r, 0, data.data(), size, err, leased_still);
		}
		return r;
	};
	// not one byte before the reservation is durable (if it never is,
	// this leader stops serving: the journal said so)
	int ret = wait_durable(seq, err);
	if (!ret && from_slow) {
		ret = copy_from_slow();
	} else if (!ret) {
		ret = mover_->copy(src_r, dst_r, size, sums, err, leased_still);
		// the dead owner's memory did not answer: the slow tier is the
		// last source (a salvage that never answers again must not
		// keep the version from it)
		if (ret && from_salvage && flushed) {
			log_line("'%s' version %llu: its dead owner's memory did not answer (%s); "
				 "copying it from the slow tier", key.substr(0, 64).c_str(),
				 static_cast<unsigned long long>(version), err->c_str());
			ret = copy_from_slow();
		}
	}

	seq = 0;
	{
		std::lock_guard<std::mutex> g(mu_);
		st_.unpin(key, version);
		writing_--;
		writing_cv_.notify_all();
		if (ret && from_salvage) {
			// that salvage did not answer (yet: its node may come back,
			// and a remount makes it a replica again): try the next first
			salvage_next_[{ key, version }]++;
		}
		const VersionState *v = st_.find_version(key, version);
		bool still = v && v->complete;
		for (const auto &s : dst.shards()) {
			const SegmentState *seg = st_.segment(s.segment_id());
			if (!seg || seg->desc.state() != v1::SEGMENT_ALIVE)
				still = false;
		}
		if (ret || !still) {
			// the space goes back (if this leader can still say so; if
			// not, the next one keeps it until this one has stopped)
			lg::Record rel;
			rel.mutable_replica_release()->set_id(reservation);
			std::string rerr;
			commit_locked(rel, &seq, &rerr);
			if (!ret) {
				*err = "the version or the new place went away during the copy";
				ret = -ESTALE;
			}
			return ret;
		}
		lg::Record add;
		add.mutable_replica_add()->set_key(key);
		add.mutable_replica_add()->set_version(version);
		*add.mutable_replica_add()->mutable_replica() = dst;
		add.mutable_replica_add()->set_reservation(reservation);
		if ((ret = commit_locked(add, &seq, err)))
			return ret;
		if (replace_index >= 0) {
			// find the old one again: indexes move as replicas come and go
			std::string want = old.SerializeAsString();
			v = st_.find_version(key, version);
			for (size_t i = 0; i < v->replicas.size(); i++)
				if (v->replicas[i].r.SerializeAsString() == want) {
					lg::Record drop;
					drop.mutable_replica_drop()->set_key(key);
					drop.mutable_replica_drop()->set_version(version);
					drop.mutable_replica_drop()->set_index(static_cast<uint32_t>(i));
					if ((ret = commit_locked(drop, &seq, err)))
						return ret;
					break;
				}
		}
	}
	return wait_durable(seq, err);
}

int Leader::repair(const std::string &key, bool wait)
{
	int made = 0, ret = 0;
	std::string err;
	auto rl = replica_lock(key);
	std::unique_lock<std::mutex> held(*rl, std::defer_lock);
	if (wait)
		held.lock();
	else if (!held.try_lock())
		return -EBUSY;
	RepairPlan p;
	{
		std::lock_guard<std::mutex> g(mu_);
		std::optional<RepairPlan> plan = st_.plan_repair(key);
		if (!plan)
			return 0;
		p = *plan;
	}

	for (uint32_t i = 0; i < p.dram_missing; i++) {
		if ((ret = add_replica(p.key, p.version, v1::SEGMENT_DRAM, {}, -1, &err)))
			break;
		made++;
	}
	for (uint32_t i = 0; !ret && i < p.nvmeof_missing; i++) {
		if ((ret = add_replica(p.key, p.version, v1::SEGMENT_NVMEOF, {}, -1, &err)))
			break;
		made++;
	}
	metrics_->repairs += static_cast<uint64_t>(made);
	if (made)
		log_line("re-replicated '%s' version %llu: %d new replicas",
			 p.key.substr(0, 64).c_str(), static_cast<unsigned long long>(p.version), made);
	if (ret && ret != -ENOSPC && opts_.verbose)
		log_line("re-replication of '%s' version %llu: %s", p.key.substr(0, 64).c_str(),
			 static_cast<unsigned long long>(p.version), err.c_str());
	if (ret == -ENODATA && !made) {
		std::lock_guard<std::mutex> g(mu_);
		log_line("'%s' version %llu has no replica left and is not in the slow tier: lost",
			 p.key.substr(0, 64).c_str(), static_cast<unsigned long long>(p.version));
	}
	return ret;
}

void Leader::repair_loop()
{
	auto period = std::chrono::milliseconds(std::max<uint64_t>(100, opts_.gc_ms));
	// (key, version) found without a source: said once, not every pass
	std::set<std::pair<std::string, uint64_t>> hopeless;

	while (sleep_for(period, &repair_cv_, &repair_kicked_)) {
		std::vector<RepairPlan> plans;
		{
			std::lock_guard<std::mutex> g(mu_);
			plans = st_.plan_repairs();
		}
		for (const auto &p : plans) {
			if (stopping_)
				return;
			if (hopeless.count({ p.key, p.version }))
				continue;
			std::string err;
			int ret;
			{
				// a put that got fewer replicas than it asked for waits
				// here for room: skip the copy when there is none
				std::lock_guard<std::mutex> g(mu_);
				v1::Replica probe;
				ret = st_.place_replica(p.key, p.version,
							p.dram_missing ? v1::SEGMENT_DRAM : v1::SEGMENT_NVMEOF,
							{}, -1, &probe, &err);
				if (!ret)
					st_.release_replica(probe);
			}
			if (ret)
				continue;
			if (repair(p.key, false) == -ENODATA)
				hopeless.insert({ p.key, p.version });
		}
	}
}

// ---- drain and removal

int Leader::remove_segment(uint64_t segment_id, uint64_t *lost, std::string *err,
			   bool drained)
{
	v1::SegmentDesc desc;
	uint64_t seq;
	{
		std::lock_guard<std::mutex> g(mu_);
		const SegmentState *s = st_.segment(segment_id);
		if (!s) {
			*err = "no segment " + std::to_string(segment_id);
			return -ENOENT;
		}
		// a remount between the drain's last look and here keeps it
		if (drained && (s->desc.state() != v1::SEGMENT_DRAINING ||
				!st_.replicas_on(segment_id).empty())) {
			*err = "segment " + std::to_string(segment_id) +
			       " was taken back into service during its drain";
			return -ECANCELED;
		}
		desc = s->desc;
		for (const auto &r : st_.replicas_on(segment_id))
			if (r.complete)
				(*lost)++;
		lg::Record rec;
		rec.mutable_segment_remove()->set_segment_id(segment_id);
		if (int ret = commit_locked(rec, &seq, err))
			return ret;
	}
	if (int ret = wait_durable(seq, err))
		return ret;
	log_line("segment %llu removed: %llu replicas dropped",
		 static_cast<unsigned long long>(segment_id), static_cast<unsigned long long>(*lost));
	v1::Event ev;
	*ev.mutable_segment_removed() = desc;
	push_event(ev, 0);
	kick_repair();
	return 0;
}

/*
 * Whether v has its configured count of type's replicas, at least one,
 * wholly on ALIVE segments, replica skip aside (the one a drain moves).
 */
bool Leader::copies_enough_locked(const VersionState &v, v1::SegmentType type, int skip) const
{
	uint32_t good = 0;
	for (size_t i = 0; i < v.replicas.size(); i++) {
		const ReplicaState &o = v.replicas[i];
		if (static_cast<int>(i) == skip || o.lost || o.r.type() != type)
			continue;
		bool ok = true;
		for (const auto &sh : o.r.shards()) {
			const SegmentState *os = st_.segment(sh.segment_id());
			ok = ok && os && os->desc.state() == v1::SEGMENT_ALIVE;
		}
		good += ok;
	}
	uint32_t want = type == v1::SEGMENT_DRAM ? v.config.dram_replicas() : v.config.nvmeof_replicas();
	return good && good >= want;
}

/*
 * (The key's replica lock held.)  Drop replica index of (key, version),
 * on segment_id, that a drain found not needed: superseded, or with
 * enough good copies elsewhere.  Both are looked at again here, under
 * mu_, with the record: -ESTALE if the replica moved or the copies went
 * meanwhile (the drain looks again), -EEXIST if it is a superseded
 * version's last copy (kept for a Get lease; it goes with the segment).
 */
int Leader::drop_drained_locked(const std::string &key, uint64_t version, int index,
				uint64_t segment_id)
{
	uint64_t seq = 0;
	std::string err;
	{
		std::lock_guard<std::mutex> g(mu_);
		const VersionState *v = st_.find_version(key, version);
		if (!v || index < 0 || static_cast<size_t>(index) >= v->replicas.size())
			return -ESTALE;
		const ReplicaState &r = v->replicas[index];
		bool on = false;
		for (const auto &sh : r.r.shards())
			on = on || sh.segment_id() == segment_id;
		if (r.lost || !on)
			return -ESTALE;
		if (st_.newest(key) != v) {
			if (v->replicas.size() == 1)
				return -EEXIST;
		} else {
			if (!copies_enough_locked(*v, r.r.type(), index))
				return -ESTALE;
		}
		lg::Record d;
		d.mutable_replica_drop()->set_key(key);
		d.mutable_replica_drop()->set_version(version);
		d.mutable_replica_drop()->set_index(static_cast<uint32_t>(index));
		if (int ret = commit_locked(d, &seq, &err))
			return ret;
	}
	return wait_durable(seq, &err);
}

/*
 * Each pass moves one replica; the list changes as replicas move.  A copy
 * that failed (no room, a source or target that did not answer) is tried
 * again after a pause until the deadline: a replica is never dropped for
 * want of a place, so a drain that cannot finish leaves the segment
 * DRAINING with what could not move still readable on it.  The deadline
 * is checked between copies: a drain overruns it by at most one copy.
 */
int Leader::drain(uint64_t segment_id, int64_t deadline_ms, bool reclaim, uint64_t *moved,
		  uint64_t *remain, std::string *err)
{
	const std::string name = "segment " + std::to_string(segment_id);
	v1::SegmentDesc desc;
	bool again;
	{
		std::lock_guard<std::mutex> g(mu_);
		const SegmentState *s = st_.segment(segment_id);
		if (!s) {
			*err = "no " + name;
			return -ENOENT;
		}
		if (s->desc.state() == v1::SEGMENT_DEAD) {
			*err = name + " is dead: its replicas are being re-made elsewhere";
			return -ENODATA;
		}
		// the reclaim's look at it is old: remounted since, it is not
		// the master's any more
		if (reclaim && (!s->desc.reclaimed() || s->desc.state() != v1::SEGMENT_DRAINING)) {
			*err = name + " was taken back into service";
			return -ECANCELED;
		}
		if (draining_.count(segment_id)) {
			*err = name + " is being drained already";
			return -EBUSY;
		}
		draining_.insert(segment_id);
		again = s->desc.state() == v1::SEGMENT_DRAINING;
	}
	struct Done {
		Leader *l;
		uint64_t id;
		~Done()
		{
			std::lock_guard<std::mutex> g(l->mu_);
			l->draining_.erase(id);
		}
	} done{ this, segment_id };

	if (!again) {
		lg::Record rec;
		rec.mutable_segment_state()->set_segment_id(segment_id);
		rec.mutable_segment_state()->set_state(v1::SEGMENT_DRAINING);
		if (int ret = commit({ rec }, err)) {
			log_line("drain of %s: %s", name.c_str(), err->c_str());
			return ret;
		}
		{
			std::lock_guard<std::mutex> g(mu_);
			if (const SegmentState *s = st_.segment(segment_id))
				st_.segment_desc(*s, &desc);
		}
		log_line("%s draining", name.c_str());
		v1::Event dev;
		*dev.mutable_segment_draining() = desc;
		push_event(dev, 0);
	}

	// (key, version) whose move failed -> when it is tried again
	std::map<std::pair<std::string, uint64_t>, int64_t> retry_at;
	std::set<std::pair<std::string, uint64_t>> skip;	// superseded, leased
	int ret = 0;
	for (;;) {
		std::string key;
		uint64_t version = 0;
		int index = -1;
		bool newest = false, enough = false;
		v1::SegmentType type = v1::SEGMENT_DRAM;
		int64_t now = mono_ms(), wake = INT64_MAX;
		*remain = 0;
		{
			std::lock_guard<std::mutex> g(mu_);
			const SegmentState *seg = st_.segment(segment_id);
			if (!seg || seg->desc.state() != v1::SEGMENT_DRAINING) {
				*err = name + (seg ? " was taken back into service" : " was removed") +
				       " during its drain";
				ret = -ECANCELED;
				break;
			}
			for (const auto &r : st_.replicas_on(segment_id)) {
				if (!r.complete || skip.count({ r.key, r.version }))
					continue;
				(*remain)++;
				auto at = retry_at.find({ r.key, r.version });
				if (index >= 0)
					continue;
				if (at != retry_at.end() && at->second > now) {
					wake = std::min(wake, at->second);
					continue;
				}
				key = r.key;
				version = r.version;
				index = static_cast<int>(r.index);
				const VersionState *n = st_.newest(key);
				const VersionState *v = st_.find_version(key, version);
				newest = n == v;
				type = v->replicas[index].r.type();
				// enough good ones elsewhere (a repair got there first)?
				enough = copies_enough_locked(*v, type, index);
			}
		}
		if (stopping_) {
			*err = "the master stepped down during the drain of " + name;
			ret = -ESHUTDOWN;
			break;
		}
		if (!*remain)
			break;
		if (now >= deadline_ms) {
			*err = "drain of " + name + " passed its deadline: " + std::to_string(*moved) +
			       " replicas moved, " + std::to_string(*remain) +
			       " remain on it; it stays draining (readable, no new replicas): drain "
			       "it again to finish, or register it again to take it back";
			ret = -ETIMEDOUT;
			break;
		}
		if (index < 0) {
			// every one left waits for its retry
			sleep_for(std::chrono::milliseconds(std::max<int64_t>(
				1, std::min(wake, deadline_ms) - now)));
			continue;
		}
		if (!newest || enough) {
			// superseded (GC takes it anyway) or copies enough: just
			// drop it, if that still holds (indexes move as replicas
			// come and go; the replica lock keeps repairs out)
			auto rl = replica_lock(key);
			std::lock_guard<std::mutex> held(*rl);
			int dret = drop_drained_locked(key, version, index, segment_id);
			if (dret == -EEXIST)
				skip.insert({ key, version });
			else if (dret)
				retry_at[{ key, version }] = mono_ms() + (dret == -ESTALE ? 20 : 200);
			continue;
		}
		auto rl = replica_lock(key);
		std::unique_lock<std::mutex> held(*rl);
		std::string cerr;
		int cret = add_replica(key, version, type, { segment_id }, index, &cerr);
		held.unlock();
		if (cret == -ESTALE)
			continue;	// raced with a repair: look again
		if (cret) {
			// said once per replica; tried again until the deadline
			if (!retry_at.count({ key, version }))
				log_line("drain of %s: '%s' version %llu: %s (trying again)", name.c_str(),
					 key.substr(0, 64).c_str(),
					 static_cast<unsigned long long>(version), cerr.c_str());
			retry_at[{ key, version }] = mono_ms() + 200;
			continue;
		}
		retry_at.erase({ key, version });
		(*moved)++;
	}
	if (ret) {
		log_line("drain of %s stopped: %s", name.c_str(), err->c_str());
		return ret;
	}
	uint64_t dropped = 0;
	if ((ret = remove_segment(segment_id, &dropped, err, true)))
		return ret;
	log_line("%s drained: %llu replicas moved", name.c_str(),
		 static_cast<unsigned long long>(*moved));
	return 0;
}

/*
 * No segment is left whose owner is gone.  One whose owner left without
 * draining (reclaimed, DRAINING, no owner: ClientRemove made it so) is
 * drained here, read from while its replicas move, until it is empty and
 * removed; it is never declared dead for being slow, since its memory
 * may hold a version's last copy, readable there and nowhere else (dead,
 * it would be read from no more, and a new leader would forget it).  A
 * dead one (its owner stopped beating) is the owner's to remount (a restarted client reads its replicas again)
 * for --drain-timeout-ms; after that it is removed once nothing holds a
 * place on it: a salvaged replica can be a version's last copy, so it
 * is never given up here.
 */
void Leader::reclaim_loop()
{
	auto period = std::chrono::milliseconds(std::max<uint64_t>(100, opts_.gc_ms));
	// one orphan does not hold up the others for long: each pass gives
	// each a slice, and what it has not moved waits for the next pass
	const int64_t slice = static_cast<int64_t>(std::min<uint64_t>(opts_.drain_timeout_ms, 10000));

	while (sleep_for(period)) {
		std::vector<uint64_t> orphans;
		{
			std::lock_guard<std::mutex> g(mu_);
			for (const auto &[id, s] : st_.segments())
				if (s.desc.reclaimed() && s.desc.state() == v1::SEGMENT_DRAINING &&
				    !draining_.count(id))
					orphans.push_back(id);
			std::erase_if(reclaim_since_, [&](const auto &kv) {
				const SegmentState *s = st_.segment(kv.first);
				return !s || !s->desc.reclaimed();
			});
		}
		for (uint64_t id : orphans) {
			uint64_t moved = 0, remain = 0;
			std::string err;
			int64_t now = mono_ms();
			int64_t since = reclaim_since_.emplace(id, std::make_pair(now, false)).first->second.first;
			int ret = drain(id, now + slice, true, &moved, &remain, &err);
			if (stopping_)
				return;
			auto it = reclaim_since_.find(id);
			if (ret != -ETIMEDOUT || it == reclaim_since_.end() || it->second.second ||
			    mono_ms() - since < static_cast<int64_t>(opts_.drain_timeout_ms))
				continue;
			// its memory still serves what did not move: it stays
			// readable, and the master goes on trying (said once)
			it->second.second = true;
			log_line("segment %llu (its owner left): %llu replicas still on it after "
				 "--drain-timeout-ms; it stays draining and readable, and the master "
				 "keeps moving them (is the pool full?)",
				 static_cast<unsigned long long>(id), static_cast<unsigned long long>(remain));
		}
		reclaim_dead();
	}
}

void Leader::reclaim_dead()
{
	std::vector<v1::SegmentDesc> gone;
	uint64_t seq = 0;
	std::string err;
	{
		std::lock_guard<std::mutex> g(mu_);
		int64_t now = mono_ms();
		std::erase_if(dead_since_, [&](const auto &kv) {
			const SegmentState *s = st_.segment(kv.first);
			return !s || s->desc.state() != v1::SEGMENT_DEAD;
		});
		for (const auto &[id, s] : st_.segments()) {
			if (s.desc.state() != v1::SEGMENT_DEAD)
				continue;
			// a leader that took over counts the owner's grace afresh
			int64_t since = dead_since_.emplace(id, now).first->second;
			if (now - since < static_cast<int64_t>(opts_.drain_timeout_ms))
				continue;
			v1::SegmentDesc d;
			st_.segment_desc(s, &d);
			// salvage and reservations hold their places: used counts them
			if (d.used() || salvage_on_locked(id))
				continue;
			gone.push_back(d);
		}
		for (size_t i = 0; i < gone.size(); i++) {
			lg::Record rec;
			rec.mutable_segment_remove()->set_segment_id(gone[i].id());
			if (commit_locked(rec, &seq, &err)) {
				gone.resize(i);
				break;
			}
			dead_since_.erase(gone[i].id());
		}
	}
	if (gone.empty() || (seq && wait_durable(seq, &err)))
		return;
	for (const auto &d : gone) {
		log_line("dead segment %llu removed: its owner did not come back within "
			 "--drain-timeout-ms and nothing is left on it",
			 static_cast<unsigned long long>(d.id()));
		v1::Event ev;
		*ev.mutable_segment_removed() = d;
		push_event(ev, 0);
	}
}

bool Leader::salvage_on_locked(uint64_t segment_id) const
{
	return st_.salvage_on(segment_id);
}

// ---- the master's own dsmem peering

void Leader::peer_loop()
{
	struct ds_ctx *ctx = nullptr;
	bool said = false;

	while (sleep_for(std::chrono::milliseconds(1000), &peer_cv_, &peer_kicked_)) {
		std::deque<v1::Member> todo;
		{
			std::lock_guard<std::mutex> g(wm_);
			todo.swap(peer_queue_);
		}
		if (todo.empty())
			continue;
		if (!ctx) {
			int ret = ds_ctx_open(&ctx);
			if (ret) {
				ctx = nullptr;
				if (!said)
					log_line("cannot connect to clients' nodes: dsmem: %s", strerror(-ret));
				said = true;
				continue;
			}
		}
		struct ds_peer_info *peers = nullptr;
		size_t n = 0;
		int ret = ds_peer_list(ctx, opts_.node, &peers, &n);
		if (ret) {
			log_line("peers of node %u: %s %s", opts_.node, strerror(-ret), ds_ctx_errmsg(ctx));
			continue;
		}
		// The higher node id dials (as the clients do among themselves);
		// the lower one admits it: a node accepts only its peers.
		for (const auto &m : todo) {
			bool dial = m.node_id() < opts_.node, have = false;
			for (size_t i = 0; i < n; i++) {
				const ds_peer_info &p = peers[i];
				if (dial ? !p.listen && (p.remote_node == m.node_id() ||
							 (m.addr() == p.addr && p.port == m.port()))
					 : p.listen && p.remote_node == m.node_id() && m.addr() == p.addr)
					have = true;
			}
			if (have)
				continue;
			uint32_t pid = 0;
			ret = ds_peer_add_id(ctx, opts_.node, m.addr().c_str(),
					     dial ? static_cast<uint16_t>(m.port()) : 0, m.node_id(),
					     dial ? 0 : DS_PEER_LISTEN, &pid);
			if (ret)
				log_line("peer %s node %u at %s port %u: %s %s", dial ? "to" : "admitting",
					 m.node_id(), m.addr().c_str(), m.port(), strerror(-ret),
					 ds_ctx_errmsg(ctx));
			else
				log_line("peer %u %s client node %u at %s port %u", pid,
					 dial ? "to" : "admitting", m.node_id(), m.addr().c_str(), m.port());
		}
		free(peers);
	}
	if (ctx)
		ds_ctx_close(ctx);
}

}  // namespace dsmem::store
