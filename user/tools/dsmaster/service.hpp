// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's gRPC service.  A Leader is one term of leadership: the state
// replayed from the metadata log, the journal that makes changes durable,
// the workers (heartbeats, GC, expiry, re-replication, flush, peering)
// and the data mover.  MasterService answers RPCs with the current Leader,
// or FAILED_PRECONDITION "not the leader; leader is ADDR" when there is none.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dsstore.grpc.pb.h"
#include "journal.hpp"
#include "metrics.hpp"
#include "mover.hpp"
#include "slowtier.hpp"
#include "state.hpp"
#include "tls.hpp"

namespace dsmem::store {

struct Options {
	std::string listen = "0.0.0.0:7700";
	std::string advertise;		// default: listen, with --addr for 0.0.0.0
	uint32_t node = 0;
	std::string addr;
	uint32_t port = 0;
	std::string data_dir = "/var/lib/dsmem/master";
	std::string etcd;
	std::string etcd_prefix = "/dsmem/store";
	int64_t etcd_ttl_s = 2;
	std::string slow_tier = "dir:/var/lib/dsmem/slow";
	Limits limits;
	uint64_t heartbeat_ms = 500;
	uint64_t heartbeat_timeout_ms = 3000;
	// a drain's deadline when its call names none; after how long a
	// reclaimed segment that will not empty is reported; and how long a
	// dead one waits for its owner to remount it before it is removed,
	// once nothing is on it (docs/store.md)
	uint64_t drain_timeout_ms = 300000;
	uint64_t gc_ms = 1000;
	uint64_t flush_ms = 1000;
	uint64_t snapshot_every = 10000;
	// how long after it took over a leader keeps the space an earlier
	// term reserved for a copy, when that term's leader never said it
	// stopped (killed without notice): its lease had run out before this
	// leader was elected, and it writes no copy round after that; this
	// covers a round already under way (docs/store.md)
	uint64_t fence_grace_ms = 10000;
	// eviction (docs/store.md): a tier fuller than high is evicted down
	// to low in the background; a put that finds no room evicts inline
	bool evict = true;
	// Watch streams one identity (not an admin) keeps open at once; 0:
	// no limit.  With Limits::identity_pending_*, its quota.
	uint32_t watch_quota = 64;
	uint32_t high_watermark_pct = 95;
	uint32_t low_watermark_pct = 85;
	bool verbose = false;
	// Prometheus metrics over HTTP at HOST:PORT/metrics; "none": off
	std::string metrics_listen = "127.0.0.1:9470";
	// who may call: certificates of tls.ca (tls.insecure: anyone, on
	// loopback); admins: the common names that may act for anyone
	TlsFiles tls{ "/etc/dsmem/store/ca.crt", "/etc/dsmem/store/master.crt",
		      "/etc/dsmem/store/master.key", false };
	std::set<std::string> admins{ "admin" };
	// etcd over TLS when etcd_tls.ca is set (its cert and key: client auth)
	TlsFiles etcd_tls;
};

// The master's clock (service.cpp says why): ns since the epoch, as the
// wall clock read when the master started, advanced by CLOCK_BOOTTIME.
int64_t now_ns();
// For tests: the wall clock the master would read (a test steps it).
void set_wall_clock_for_test(int64_t (*hook)());
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

grpc::Status to_status(int ret, const std::string &msg);

// A client's Watch stream: events queued for it.
struct Watcher {
	std::mutex m;
	std::condition_variable cv;
	std::deque<v1::Event> events;
	bool closed = false;
};

class Leader : public std::enable_shared_from_this<Leader> {
public:
	Leader(const Options &opts, SlowTier *slow, Mover *mover);
	~Leader();

	// Replays the log's snapshot and records, logs a new term, starts
	// the journal and the workers.  on_lost: the log refused a write
	// (leadership lost, disk failed).
	int start(std::unique_ptr<MetaLog> log, std::function<void(const std::string &)> on_lost,
		  std::string *err);
	void stop();
	bool serving() const { return serving_; }
	uint64_t term();

	grpc::Status RegisterClient(const Caller &c, const v1::RegisterClientRequest *q, v1::RegisterClientResponse *a);
	grpc::Status RegisterSegment(const Caller &c, const v1::RegisterSegmentRequest *q, v1::RegisterSegmentResponse *a);
	grpc::Status UnregisterSegment(const Caller &c, const v1::UnregisterSegmentRequest *q,
				       v1::UnregisterSegmentResponse *a);
	grpc::Status Leave(const Caller &c, const v1::LeaveRequest *q, v1::LeaveResponse *a);
	grpc::Status Heartbeat(const Caller &c, const v1::HeartbeatRequest *q, v1::HeartbeatResponse *a);
	// Take one of c's Watch streams (Options::watch_quota): OK, or
	// RESOURCE_EXHAUSTED saying so; watch_close gives it back.
	grpc::Status watch_open(const Caller &c);
	void watch_close(const Caller &c);
	grpc::Status Watch(const Caller &c, grpc::ServerContext *ctx, const v1::WatchRequest *q,
			   grpc::ServerWriter<v1::Event> *w);
	grpc::Status PutStart(const Caller &c, const v1::PutStartRequest *q, v1::PutStartResponse *a);
	grpc::Status PutCommit(const Caller &c, const v1::PutCommitRequest *q, v1::PutCommitResponse *a);
	grpc::Status PutAbort(const Caller &c, const v1::PutAbortRequest *q, v1::PutAbortResponse *a);
	grpc::Status Get(const Caller &c, const v1::GetRequest *q, v1::GetResponse *a);
	grpc::Status SlowRead(const Caller &c, const v1::SlowReadRequest *q, v1::SlowReadResponse *a);
	grpc::Status Replicate(const Caller &c, const v1::ReplicateRequest *q, v1::ReplicateResponse *a);
	grpc::Status ReportReplica(const Caller &c, const v1::ReportReplicaRequest *q, v1::ReportReplicaResponse *a);
	grpc::Status Del(const Caller &c, const v1::DelRequest *q, v1::DelResponse *a);
	grpc::Status List(const Caller &c, const v1::ListRequest *q, v1::ListResponse *a);
	grpc::Status Sync(const Caller &c, const v1::SyncRequest *q, v1::SyncResponse *a);
	grpc::Status MasterInfo(const Caller &c, const v1::MasterInfoRequest *q, v1::MasterInfoResponse *a);
	grpc::Status SegmentList(const Caller &c, const v1::SegmentListRequest *q, v1::SegmentListResponse *a);
	grpc::Status SetAttr(const Caller &c, const v1::SetAttrRequest *q, v1::SetAttrResponse *a);
	grpc::Status BatchPutStart(const Caller &c, const v1::BatchPutStartRequest *q,
				   v1::BatchPutStartResponse *a);
	grpc::Status BatchPutCommit(const Caller &c, const v1::BatchPutCommitRequest *q,
				    v1::BatchPutCommitResponse *a);
	grpc::Status BatchGet(const Caller &c, const v1::BatchGetRequest *q, v1::BatchGetResponse *a);
	grpc::Status BatchExist(const Caller &c, const v1::BatchExistRequest *q,
				v1::BatchExistResponse *a);
	grpc::Status BatchDel(const Caller &c, const v1::BatchDelRequest *q, v1::BatchDelResponse *a);

	std::atomic<uint64_t> ops{ 0 };
	// Set by the election loop: who else campaigns.
	void set_standbys(std::vector<std::string> s);
	// Before start(): whether the leader of an earlier term is known to
	// have stopped, and with it its writes into the pool (called without
	// the state mutex).  Until then, the space that term reserved for its
	// copies stays quarantined.  Unset: never known.
	void set_quiesced(std::function<bool(uint64_t term)> f) { quiesced_ = std::move(f); }
	// Until when (Election::clock_ns()) no other master can have been
	// elected: the election loop moves it on with each renewal of the
	// leader key's lease.  Reads are answered only before it, so a leader
	// that was paused or cut off past it cannot serve what a newer leader
	// has since changed.  Unset (one master, no etcd): for ever.
	void extend_lease(int64_t until_ns) { lease_until_ns_ = until_ns; }
	// Before start(): the process's counters (default: its own).
	void set_metrics(std::shared_ptr<Metrics> m) { metrics_ = std::move(m); }
	// metrics.cpp: what it knows of its state, for the exposition.
	void gauges(LeaderGauges *g);
	// For tests: runs f with the state mutex held, as a long snapshot or
	// a stuck log append would hold it; and how many rounds the
	// heartbeat monitor began (one is counted before it takes the mutex).
	void with_state_held(const std::function<void()> &f)
	{
		std::lock_guard<std::mutex> g(mu_);
		f();
	}
	// For the bench: when the log falls due for a snapshot (see Journal).
	void set_snapshot_every(uint64_t n)
	{
		std::lock_guard<std::mutex> g(mu_);
		if (journal_)
			journal_->set_snapshot_every(n);
	}
	uint64_t heartbeat_rounds() const { return heartbeat_rounds_; }
	// passes of the GC loop (expiry, GC, TTL, eviction) finished
	uint64_t gc_rounds() const { return gc_rounds_; }

private:
	// Under mu_: apply + submit; the sequence number to wait for.
	int commit_locked(const log::v1::Record &rec, uint64_t *seq, std::string *err);
	int wait_durable(uint64_t seq, std::string *err);
	// Replies show only what is durable.  Under mu_: the sequence number
	// a reply about key must wait for (its last record, and the last
	// change of clients or segments, which drops replicas); key nullptr:
	// the last record applied, for replies about everything.
	uint64_t read_seq_locked(const std::string *key) const;
	// status once seq is durable; UNAVAILABLE if it never will be (the
	// append failed: this master forgets what the reply would have said).
	grpc::Status durable_reply(uint64_t seq, grpc::Status status);
	// durable_reply for a read: "not the leader" once the lease ran out
	grpc::Status read_reply(uint64_t seq, grpc::Status status);
	bool leased() const;
	// Apply, log and wait, for workers (takes mu_).
	int commit(const std::vector<log::v1::Record> &recs, std::string *err);
	void push_event(const v1::Event &ev, uint64_t except_client);
	v1::Member self_member() const;
	Resolved resolve_locked(const v1::Replica &r) const;
	// A readable replica of (key, version): a DRAM one first, not on a
	// dead segment; skip (index) excluded.  false if none.
	bool source_locked(const std::string &key, uint64_t version, int skip, v1::Replica *out) const;
	bool compose_locked(const VersionState &v, v1::Replica *out) const;
	// One flush of a key at a time (version order), and one change of
	// its replicas (two repairs would both see it short and both add).
	std::shared_ptr<std::mutex> flush_lock(const std::string &key) { return key_lock(flush_locks_, key); }
	std::shared_ptr<std::mutex> replica_lock(const std::string &key) { return key_lock(replica_locks_, key); }
	std::shared_ptr<std::mutex> key_lock(std::map<std::string, std::weak_ptr<std::mutex>> &locks,
					     const std::string &key);
	// Gives back the reservations of earlier terms whose leaders stopped.
	void release_quarantine();
	// A segment back from the dead: the salvage on it is whole again
	// (nothing was allocated over it), so it is a replica once more.
	// One ReplicaAdd at a time (each changes what the next may do); its
	// apply() hands the places the salvage held to the replica.
	bool readopt_one_locked(log::v1::Record *rec);
	// Any call of a known client is a sign of life, as good as a beat
	// (but only from its own identity).
	void alive_locked(const Caller &c, uint64_t client_id);
	// A request found to be a retry of one already carried out (its
	// answer lost): counted, and said in the log, where a fault run
	// looks for it (version 0: a delete's, which names none).
	void note_retry(const char *rpc, const std::string &key, uint64_t version);
	// PutCommit and PutAbort: client_id and the put are the caller's.
	int own_put_locked(const Caller &c, uint64_t client_id, const std::string &key,
			   uint64_t version, std::string *err);
	// The single calls' work under mu_, for them and their batches: the
	// answer, and *seq the record it must wait for (0: none).
	grpc::Status put_start_locked(const Caller &c, const v1::PutStartRequest &q,
				      v1::PutStartResponse *a, uint64_t *seq, int64_t *takeover);
	grpc::Status put_commit_locked(const Caller &c, const v1::PutCommitRequest &q,
				       v1::PutCommitResponse *a, uint64_t *seq,
				       v1::ReplicateConfig *config);
	// After a durable commit, without mu_: an EAGER put's flush.
	void eager_flush(const v1::PutCommitRequest &q, const v1::ReplicateConfig &config,
			 v1::PutCommitResponse *a);
	// *seq grows to what the answer waits for.
	grpc::Status get_locked(const v1::GetRequest &q, v1::GetResponse *a, uint64_t *seq);
	// *deleted: a new Del record (its slow tier copy goes once durable);
	// the caller holds the key's flush lock.
	grpc::Status del_locked(const Caller &c, const v1::DelRequest &q, v1::DelResponse *a,
				uint64_t *seq, bool *deleted);
	void delete_slow_copy(const std::string &key);

	// A put found no room: evict in LRU order until it is placed (*rec)
	// or nothing more may go (-ENOSPC, *err says what holds the rest).
	// *takeover_ns: how long a new leader still waits for old leases.
	int evict_for_put_locked(const Caller &c, const v1::PutStartRequest *q,
				 const std::set<uint64_t> &exclude, log::v1::Record *rec,
				 uint64_t *seq, int64_t *takeover_ns, std::string *err);
	// Commits an Evict record (under mu_); queues its slow tier delete.
	int evict_locked(const log::v1::Record &evict, uint64_t *seq, std::string *err);
	bool fits_empty_locked(v1::SegmentType type, uint64_t size) const;
	// Brings each tier above the high watermark down to the low one.
	void evict_to_watermarks_locked(int64_t now, uint64_t *seq, uint64_t *n, uint64_t *bytes);
	// Slow tier copies of evicted objects, deleted outside mu_.
	void delete_slow_copies();

	// workers.cpp
	void heartbeat_loop();
	void gc_loop();
	void repair_loop();
	void flush_loop();
	void peer_loop();
	void kick_repair();
	void want_peer(const v1::Member &m);
	bool sleep_for(std::chrono::milliseconds d, std::condition_variable *cv = nullptr,
		       bool *flag = nullptr);
	void declare_dead_locked(uint64_t client_id, std::vector<log::v1::Record> *recs);
	// Makes one more replica of (key, version) of type; 0 done.  It
	// writes only into space a durable ReplicaReserve of this term holds.
	int add_replica(const std::string &key, uint64_t version, v1::SegmentType type,
			const std::set<uint64_t> &avoid, int replace_index, std::string *err);
	// Brings the newest version of key up to its config; wait: for a
	// repair of the key already running (else -EBUSY).
	int repair(const std::string &key, bool wait);
	// Flush (key, version) to the slow tier; *flushed.
	int flush(const std::string &key, uint64_t version, bool *flushed, std::string *err);
	// flush.cpp, under mu_: how many of the records st_ applied are
	// durable (commit_locked applies each before submitting it), and the
	// journal's sequence number of the record applied as ordinal (0: one
	// replayed, durable before this journal began).
	uint64_t durable_records_locked() const;
	uint64_t record_seq_locked(uint64_t ordinal) const;
	// Move every replica off segment id (DRAINING from now), then forget
	// it; 0 done.  Past deadline_ms (CLOCK_MONOTONIC): -ETIMEDOUT, the
	// segment stays DRAINING; *err says what moved and what remains.
	// -ECANCELED: it was taken back into service (or removed) meanwhile.
	// reclaim: the reclaim loop's, of a segment whose owner left
	// (-ECANCELED if it is not that any more).
	int drain(uint64_t segment_id, int64_t deadline_ms, bool reclaim, uint64_t *moved,
		  uint64_t *remain, std::string *err);
	int drop_drained_locked(const std::string &key, uint64_t version, int index,
				uint64_t segment_id);
	bool copies_enough_locked(const VersionState &v, v1::SegmentType type, int skip) const;
	// drained: only if it is still DRAINING and empty (-ECANCELED).
	int remove_segment(uint64_t segment_id, uint64_t *lost, std::string *err,
			   bool drained = false);
	// CLOCK_MONOTONIC ms a drain of deadline ms (0: --drain-timeout-ms) ends at
	int64_t drain_deadline(uint64_t ms) const;
	// Segments whose owner is gone: left without draining (DRAINING, no
	// owner) are drained; dead ones removed after the owner's grace
	// (--drain-timeout-ms) once nothing holds a place on them.
	void reclaim_loop();
	void reclaim_dead();
	bool salvage_on_locked(uint64_t segment_id) const;

	Options opts_;
	SlowTier *slow_;
	Mover *mover_;
	std::mutex mu_;			// the state
	MasterState st_;
	std::unique_ptr<Journal> journal_;
	std::condition_variable sync_cv_;	// a put ended (Sync waits on it)
	// Heartbeats are recorded under seen_mu_ alone, never behind the
	// state mutex: a master stalled on it (a long snapshot, a stuck log)
	// must not make its live clients look silent.  seen_mu_ is taken
	// last (after mu_ when both are held).  last_seen_: client ->
	// CLOCK_MONOTONIC ms; beat_identity_: the identity that may beat
	// for it; beat_term_: this leader's term, for the beat's answer.
	std::mutex seen_mu_;
	std::map<uint64_t, int64_t> last_seen_;
	std::map<uint64_t, std::string> beat_identity_;
	uint64_t beat_term_ = 0;
	// the heartbeat monitor's rounds begun (heartbeat_rounds())
	std::atomic<uint64_t> heartbeat_rounds_{ 0 }, gc_rounds_{ 0 };
	std::map<uint64_t, std::shared_ptr<Watcher>> watchers_;
	std::set<std::shared_ptr<Watcher>> observers_;	// Watch of client 0
	std::map<std::string, uint32_t> watches_by_;	// open streams, by identity
	// (key, version) -> which of its salvage a copy reads next: one that
	// did not answer goes last (volatile; the salvage itself is st_'s)
	std::map<std::pair<std::string, uint64_t>, size_t> salvage_next_;
	// keys whose Replicate left drops for when no reader holds the
	// version (under mu_; volatile: a new leader keeps the extra copies)
	std::set<std::string> trims_;
	// Replicate's wait for the readers of a deferred drop (see service.cpp)
	void trim_when_unread(const std::string &key, uint64_t version);
	// A client's first timeout after a takeover, or after this leader
	// stalled: its connection broke and reconnects with backoff.
	int64_t takeover_timeout_ms() const;
	// segments a drain works on now (under mu_): one drain each
	std::set<uint64_t> draining_;
	// this leader saw them DEAD first at (CLOCK_MONOTONIC ms; reclaim_loop's)
	std::map<uint64_t, int64_t> dead_since_;
	// reclaimed segments: first drained at (CLOCK_MONOTONIC ms), and
	// whether their overrun was logged (reclaim_loop's alone)
	std::map<uint64_t, std::pair<int64_t, bool>> reclaim_since_;
	// key -> the sequence number of its last record, until durable (the
	// GC thread forgets durable ones); the last client or segment change
	std::map<std::string, uint64_t> key_seq_;
	uint64_t wide_seq_ = 0;
	// copies writing into the pool (under mu_): stop() waits for them
	int writing_ = 0;
	std::condition_variable writing_cv_;
	std::function<bool(uint64_t)> quiesced_;
	// CLOCK_MONOTONIC ms this leader's term was durable (start())
	int64_t started_ms_ = 0;
	// keys whose slow copy goes once their Evict (seq) is durable (under mu_)
	std::vector<std::pair<std::string, uint64_t>> slow_dels_;
	std::vector<std::string> standbys_;
	std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>();

	std::mutex flush_locks_m_;
	std::map<std::string, std::weak_ptr<std::mutex>> flush_locks_, replica_locks_;

	std::mutex wm_;			// workers' sleep and kicks
	std::condition_variable wcv_, repair_cv_, peer_cv_;
	bool repair_kicked_ = false, peer_kicked_ = false;
	std::deque<v1::Member> peer_queue_;
	std::atomic<bool> stopping_{ false };
	std::atomic<bool> serving_{ false };
	std::atomic<int64_t> lease_until_ns_{ INT64_MAX };
	std::vector<std::thread> threads_;
};

class MasterService final : public v1::Master::Service {
public:
	explicit MasterService(const Options &opts);

	void set_leader(std::shared_ptr<Leader> l);
	std::shared_ptr<Leader> leader();
	// Who leads, for the redirect message ("" none known).
	void set_leader_addr(const std::string &addr);
	void shutting_down() { shutting_down_ = true; }
	// the process's counters: every RPC timed, by method and status
	std::shared_ptr<Metrics> metrics() const { return metrics_; }

#define DSM_UNARY(name)                                                                   \
	grpc::Status name(grpc::ServerContext *ctx, const v1::name##Request *q,           \
			  v1::name##Response *a) override                                 \
	{                                                                                 \
		return metrics_->time_rpc(#name, [&]() -> grpc::Status {                  \
			Caller c;                                                         \
			if (grpc::Status s = authenticate(*ctx, &c); !s.ok())             \
				return s;                                                 \
			auto l = leader();                                                \
			if (!l)                                                           \
				return not_leader();                                      \
			l->ops++;                                                         \
			return l->name(c, q, a);                                          \
		});                                                                       \
	}
	DSM_UNARY(RegisterClient)
	DSM_UNARY(RegisterSegment)
	DSM_UNARY(UnregisterSegment)
	DSM_UNARY(Leave)
	DSM_UNARY(Heartbeat)
	DSM_UNARY(PutStart)
	DSM_UNARY(PutCommit)
	DSM_UNARY(PutAbort)
	DSM_UNARY(Get)
	DSM_UNARY(SlowRead)
	DSM_UNARY(Replicate)
	DSM_UNARY(ReportReplica)
	DSM_UNARY(Del)
	DSM_UNARY(List)
	DSM_UNARY(Sync)
	DSM_UNARY(MasterInfo)
	DSM_UNARY(SegmentList)
	DSM_UNARY(SetAttr)
	DSM_UNARY(BatchPutStart)
	DSM_UNARY(BatchPutCommit)
	DSM_UNARY(BatchGet)
	DSM_UNARY(BatchExist)
	DSM_UNARY(BatchDel)
#undef DSM_UNARY

	grpc::Status Watch(grpc::ServerContext *ctx, const v1::WatchRequest *q,
			   grpc::ServerWriter<v1::Event> *w) override;

private:
	grpc::Status not_leader();
	// The caller's identity from its certificate; UNAUTHENTICATED without.
	grpc::Status authenticate(const grpc::ServerContext &ctx, Caller *c);

	const Options &opts_;
	PeerVerifier verifier_;
	std::string verifier_err_;	// the CA did not load
	std::mutex m_;
	std::shared_ptr<Leader> leader_;
	std::string leader_addr_;
	std::atomic<bool> shutting_down_{ false };
	std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>();
};

// election.cpp: serve until SIGTERM/SIGINT; the exit status.
int run_master(const Options &opts);

}  // namespace dsmem::store
