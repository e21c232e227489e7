// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's RPCs.  Each takes the state mutex for its planning and
// applying (short), then waits for its log record without it; copies of
// data (EAGER flush, Replicate, drain) run without the mutex too.
#include "service.hpp"

#include "etcd.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

namespace dsmem::store {

namespace {

constexpr uint64_t kSlowReadMax = 2ULL << 20;	// under gRPC's 4 MiB message default

int64_t mono_ms()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

// Records that change the replicas of any number of keys (a dead client
// or segment drops them, a remount makes a segment live again).
bool changes_replicas(const lg::Record &r)
{
	switch (r.rec_case()) {
	case lg::Record::kClientRemove:
	case lg::Record::kSegmentAdd:
	case lg::Record::kSegmentState:
	case lg::Record::kSegmentRemove:
		return true;
	default:
		return false;
	}
}

// -EINVAL unless a record of bytes fits in a log entry: every leader
// would fail to append it and step down (etcd refuses the request).
int record_fits(size_t bytes, const char *what, std::string *err)
{
	if (bytes <= Journal::kRecordMax)
		return 0;
	*err = std::string("its metadata record (") + what + ") would be " + std::to_string(bytes) +
	       " bytes, over the limit of " + std::to_string(Journal::kRecordMax) +
	       " bytes one log record may take";
	return -EINVAL;
}

/*
 * An upper bound of the PutStart record a put of q makes, before its
 * placement is known: every shard placed at the largest segment id and
 * offset the pool has now.  (It is exact but for those numbers' sizes.)
 */
size_t put_start_record_bound(const MasterState &st, const Caller &c, const v1::PutStartRequest &q,
			      uint64_t shard_size)
{
	using google::protobuf::io::CodedOutputStream;
	auto varint = [](uint64_t v) { return CodedOutputStream::VarintSize64(v); };
	// a field of fewer than 16's tag (1 byte), its length and its bytes
	auto field = [&](uint64_t len) { return 1 + varint(len) + len; };
	uint64_t max_id = 0, max_offset = 0;
	for (const auto &[id, s] : st.segments()) {
		max_id = std::max(max_id, id);
		max_offset = std::max(max_offset, s.desc.size());
	}
	auto shard = [&](uint64_t len) {
		return field(1 + varint(max_id) + 1 + varint(max_offset) + 1 + varint(len));
	};
	uint64_t size = q.size(), nshards = (size + shard_size - 1) / shard_size;
	uint64_t dram = 2 + nshards * shard(std::min(size, shard_size));	// type, shards
	uint64_t nvmeof = 2 + shard(OffsetAllocator::round(size));

	lg::Record rec;
	lg::PutStart *p = rec.mutable_put_start();
	p->set_key(q.key());
	p->set_version(UINT64_MAX);
	p->set_size(size);
	*p->mutable_config() = q.config();
	p->set_deadline_ns(INT64_MAX);
	p->set_client_id(q.client_id());
	p->set_owner(c.identity);
	// (+ 4: the lengths of the put_start field grow by that much at most)
	return rec.ByteSizeLong() + 4 + q.config().dram_replicas() * field(dram) +
	       q.config().nvmeof_replicas() * field(nvmeof);
}

}  // namespace

namespace {

int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t (*wall_clock_hook)() = nullptr;

}  // namespace

/*
 * The master's clock: the wall clock when the master first read it,
 * advanced by CLOCK_BOOTTIME since (which NTP slews as it slews the wall
 * clock, and which counts a suspend).  Put deadlines, read leases and
 * TTLs are instants on it, so a step of the wall clock while the master
 * runs (an NTP step, an admin's date -s) moves none of them.  Clients
 * get spans beside the instants (deadline_left_ns, lease_left_ns), and a
 * new leader compares no instant of the old one's with its own clock
 * before a whole put timeout, write grace and lease have passed on it.
 */
int64_t now_ns()
{
	static const int64_t offset =
		(wall_clock_hook ? wall_clock_hook() : clock_ns(CLOCK_REALTIME)) -
		clock_ns(CLOCK_BOOTTIME);
	return clock_ns(CLOCK_BOOTTIME) + offset;
}

void set_wall_clock_for_test(int64_t (*hook)())
{
	wall_clock_hook = hook;
}

void log_line(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "dsmaster: %s\n", buf);
}

grpc::Status to_status(int ret, const std::string &msg)
{
	grpc::StatusCode c;

	switch (ret) {
	case 0:
		return grpc::Status::OK;
	case -EINVAL:
		c = grpc::StatusCode::INVALID_ARGUMENT;
		break;
	case -ENOENT:
		c = grpc::StatusCode::NOT_FOUND;
		break;
	case -ENOSPC:
		c = grpc::StatusCode::RESOURCE_EXHAUSTED;
		break;
	case -ESTALE:
		c = grpc::StatusCode::ABORTED;
		break;
	case -ERANGE:
		c = grpc::StatusCode::OUT_OF_RANGE;
		break;
	case -ETIMEDOUT:
		c = grpc::StatusCode::DEADLINE_EXCEEDED;
		break;
	case -EAGAIN:
	case -ESHUTDOWN:
		c = grpc::StatusCode::UNAVAILABLE;
		break;
	case -ENODATA:
	case -EBUSY:
	case -ECANCELED:
		// not "no master": the client must not retry it elsewhere
		c = grpc::StatusCode::FAILED_PRECONDITION;
		break;
	case -EPERM:
		c = grpc::StatusCode::PERMISSION_DENIED;
		break;
	case -EDQUOT:
		c = grpc::StatusCode::RESOURCE_EXHAUSTED;
		break;
	case -EEXIST:
		c = grpc::StatusCode::ALREADY_EXISTS;
		break;
	default:
		c = grpc::StatusCode::INTERNAL;
		break;
	}
	return grpc::Status(c, msg.empty() ? std::string(strerror(-ret)) : msg);
}

// ---- Leader: life

Leader::Leader(const Options &opts, SlowTier *slow, Mover *mover)
	: opts_(opts), slow_(slow), mover_(mover), st_(opts.limits)
{
}

Leader::~Leader()
{
	stop();
}

uint64_t Leader::term()
{
	std::lock_guard<std::mutex> g(mu_);
	return st_.term();
}

int Leader::start(std::unique_ptr<MetaLog> log, std::function<void(const std::string &)> on_lost,
		  std::string *err)
{
	std::string snap;
	std::vector<std::string> recs;

	if (int ret = log->load(&snap, &recs, err))
		return ret;
	std::lock_guard<std::mutex> g(mu_);
	// (a replay makes the salvage the log's leaders held: its records
	// say when each salvaged replica ended)
	if (!snap.empty()) {
		lg::Snapshot s;
		if (!s.ParseFromString(snap)) {
			*err = "the metadata snapshot does not parse";
			return -EIO;
		}
		if (int ret = st_.restore(s, err))
			return ret;
	}
	uint64_t nrec = 0;
	for (size_t i = 0; i < recs.size(); i++) {
		lg::LogEntry e;
		if (!e.ParseFromString(recs[i])) {
			*err = "metadata log entry " + std::to_string(i) + " does not parse";
			return -EIO;
		}
		for (const auto &r : e.records()) {
			if (int ret = st_.apply(r, err)) {
				*err = "metadata log entry " + std::to_string(i) + ": " + *err;
				return ret;
			}
			nrec++;
		}
	}
	// the old leader's Get leases are unknown: give them their time
	// (term 0: there was none)
	if (st_.term())
		st_.set_gc_not_before(now_ns() + opts_.limits.get_lease_ns);
	// Pending puts' deadlines were set on the old leader's clock, which
	// may be seconds off ours; their writers count them from its answers
	// on their own clocks.  None expires before each writer's whole
	// time and the write grace are over by ours, however far the clocks.
	if (st_.term())
		st_.set_expiry_not_before(now_ns() + opts_.limits.put_timeout_ns +
					  opts_.limits.write_grace_ns);
	// clients must find the new leader first (gRPC reconnects back off):
	// those known from the log get a longer first timeout
	int64_t t = mono_ms() + takeover_timeout_ms() - static_cast<int64_t>(opts_.heartbeat_timeout_ms);
	{
		std::lock_guard<std::mutex> sg(seen_mu_);
		for (const auto &[id, m] : st_.clients()) {
			last_seen_[id] = t;
			beat_identity_[id] = m.identity();
		}
	}

	journal_ = std::make_unique<Journal>(
		std::move(log), opts_.snapshot_every, mu_, [this](lg::Snapshot *s) { st_.snapshot(s); },
		[on_lost](int ret, const std::string &msg) {
			on_lost("metadata log append failed (" + std::string(strerror(-ret)) + "): " + msg);
		});
	lg::Record term;
	st_.plan_term(&term);
	uint64_t seq;
	if (int ret = commit_locked(term, &seq, err))
		return ret;
	{
		std::lock_guard<std::mutex> sg(seen_mu_);
		beat_term_ = st_.term();
	}
	// the term record must be durable before anything is served
	mu_.unlock();
	int ret = wait_durable(seq, err);
	mu_.lock();
	if (ret)
		return ret;
	started_ms_ = mono_ms();
	log_line("leader (term %llu): %llu objects, %llu versions, %zu clients, %zu segments "
		 "(%zu log records replayed, %s)",
		 static_cast<unsigned long long>(st_.term()),
		 static_cast<unsigned long long>(st_.object_count()),
		 static_cast<unsigned long long>(st_.version_count()), st_.clients().size(),
		 st_.segments().size(), static_cast<size_t>(nrec), journal_->describe().c_str());
	// an earlier leader's copies that never ended: it may still be writing
	for (const auto &[id, r] : st_.reservations()) {
		uint64_t bytes = 0;
		for (const auto &sh : r.replica().shards())
			bytes += sh.length();
		log_line("quarantined: %llu bytes reserved by term %llu for a copy of '%s' version %llu "
			 "(reservation %llu), until that leader is known to have stopped (at most "
			 "--fence-grace-ms, %llu ms)",
			 static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(r.term()),
			 r.key().substr(0, 64).c_str(), static_cast<unsigned long long>(r.version()),
			 static_cast<unsigned long long>(id),
			 static_cast<unsigned long long>(opts_.fence_grace_ms));
	}
	for (const auto &[id, m] : st_.clients())
		if (m.node_id() != opts_.node)
			peer_queue_.push_back(m);
	serving_ = true;
	threads_.emplace_back([this] { heartbeat_loop(); });
	threads_.emplace_back([this] { gc_loop(); });
	threads_.emplace_back([this] { repair_loop(); });
	threads_.emplace_back([this] { flush_loop(); });
	threads_.emplace_back([this] { peer_loop(); });
	threads_.emplace_back([this] { reclaim_loop(); });
	return 0;
}

void Leader::stop()
{
	if (stopping_.exchange(true))
		return;
	serving_ = false;
	{
		std::lock_guard<std::mutex> g(wm_);
		wcv_.notify_all();
		repair_cv_.notify_all();
		peer_cv_.notify_all();
	}
	for (auto &t : threads_)
		if (t.joinable())
			t.join();
	{
		// copies of RPC threads (Replicate, drain) write their last
		// byte before this leader is said to have stopped
		std::unique_lock<std::mutex> l(mu_);
		writing_cv_.wait(l, [this] { return writing_ == 0; });
	}
	if (journal_)
		journal_->stop();
	std::lock_guard<std::mutex> g(mu_);
	for (auto &[id, w] : watchers_) {
		std::lock_guard<std::mutex> wg(w->m);
		w->closed = true;
		w->cv.notify_all();
	}
	for (const auto &w : observers_) {
		std::lock_guard<std::mutex> wg(w->m);
		w->closed = true;
		w->cv.notify_all();
	}
	sync_cv_.notify_all();
}

void Leader::set_standbys(std::vector<std::string> s)
{
	std::lock_guard<std::mutex> g(mu_);
	standbys_ = std::move(s);
}

// ---- Leader: helpers

int Leader::commit_locked(const lg::Record &rec, uint64_t *seq, std::string *err)
{
	if (stopping_) {
		*err = "the master is stepping down";
		return -EAGAIN;
	}
	// (before it is applied: refused, it changed nothing)
	const auto *kind = rec.GetDescriptor()->FindFieldByNumber(rec.rec_case());
	if (int ret = record_fits(rec.ByteSizeLong(), kind ? kind->name().c_str() : "empty", err))
		return ret;
	if (int ret = st_.apply(rec, err)) {
		log_line("BUG: a planned record does not apply: %s", err->c_str());
		return ret;
	}
	*seq = journal_->submit(rec);
	if (const std::string *key = MasterState::record_key(rec))
		key_seq_[*key] = *seq;
	else if (changes_replicas(rec))
		wide_seq_ = *seq;
	return 0;
}

int Leader::wait_durable(uint64_t seq, std::string *err)
{
	int ret = journal_->wait(seq, err);
	// the state has it but the log does not: not acknowledged, and this
	// master stops serving (the journal reported it)
	return ret ? -EAGAIN : 0;
}

/*
 * A record is applied before it is durable (so that the log's order is
 * the order of application), and a reply computed from the state then may
 * show it: a put or a delete this master would forget if it died now, or
 * if the append failed.  So a reply waits until the last record that
 * changed what it shows is durable.
 */
uint64_t Leader::read_seq_locked(const std::string *key) const
{
	if (!key)
		return journal_->submitted();
	auto it = key_seq_.find(*key);
	return std::max(it == key_seq_.end() ? 0 : it->second, wide_seq_);
}

grpc::Status Leader::durable_reply(uint64_t seq, grpc::Status status)
{
	std::string err;
	if (seq && wait_durable(seq, &err))
		return to_status(-EAGAIN, err);
	return status;
}

bool Leader::leased() const
{
	return Election::clock_ns() < lease_until_ns_.load();
}

/*
 * Checked after the read: if the lease still holds now, it held when the
 * state was read, and no newer leader had changed anything by then.
 */
grpc::Status Leader::read_reply(uint64_t seq, grpc::Status status)
{
	grpc::Status s = durable_reply(seq, std::move(status));
	if (!leased())
		return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
				    "not the leader; its lease on leadership ran out");
	return s;
}

int Leader::commit(const std::vector<lg::Record> &recs, std::string *err)
{
	uint64_t seq = 0;
	{
		std::lock_guard<std::mutex> g(mu_);
		for (const auto &r : recs)
			if (int ret = commit_locked(r, &seq, err))
				return ret;
	}
	return seq ? wait_durable(seq, err) : 0;
}

v1::Member Leader::self_member() const
{
	v1::Member m;
	m.set_client_id(0);
	m.set_node_id(opts_.node);
	m.set_addr(opts_.addr);
	m.set_port(opts_.port);
	m.set_master(true);
	return m;
}

void Leader::push_event(const v1::Event &ev, uint64_t except_client)
{
	std::lock_guard<std::mutex> g(mu_);
	for (auto &[id, w] : watchers_) {
		if (id == except_client)
			continue;
		std::lock_guard<std::mutex> wg(w->m);
		w->events.push_back(ev);
		w->cv.notify_all();
	}
	for (const auto &w : observers_) {
		std::lock_guard<std::mutex> wg(w->m);
		// a monitor that does not read loses its oldest, not our memory
		if (w->events.size() >= 4096)
			w->events.pop_front();
		w->events.push_back(ev);
		w->cv.notify_all();
	}
}

Resolved Leader::resolve_locked(const v1::Replica &r) const
{
	Resolved out;
	for (const auto &s : r.shards()) {
		Place p;
		if (const SegmentState *seg = st_.segment(s.segment_id()))
			p.seg = seg->desc;
		else
			p.seg.set_id(s.segment_id());
		p.offset = s.offset();
		p.length = s.length();
		out.push_back(p);
	}
	return out;
}

bool Leader::source_locked(const std::string &key, uint64_t version, int skip,
			   v1::Replica *out) const
{
	const VersionState *v = st_.find_version(key, version);
	if (!v)
		return false;
	const v1::Replica *best = nullptr;
	for (size_t i = 0; i < v->replicas.size(); i++) {
		const ReplicaState &r = v->replicas[i];
		if (r.lost || static_cast<int>(i) == skip)
			continue;
		bool ok = true;
		for (const auto &s : r.r.shards()) {
			const SegmentState *seg = st_.segment(s.segment_id());
			if (!seg || seg->desc.state() == v1::SEGMENT_DEAD)
				ok = false;
		}
		if (!ok)
			continue;
		if (!best || (best->type() != v1::SEGMENT_DRAM && r.r.type() == v1::SEGMENT_DRAM))
			best = &r.r;
	}
	if (!best)
		return skip < 0 && compose_locked(*v, out);
	*out = *best;
	return true;
}

/*
 * No whole replica is left, but shard j of every DRAM replica holds the
 * same bytes (the same shard size): put one together from shards still on
 * live segments, of the replicas left and of those dropped with a dead
 * segment (salvage keeps their space).  A replica striped over every
 * segment then survives the loss of one; the copy checks the sums.
 */
bool Leader::compose_locked(const VersionState &v, v1::Replica *out) const
{
	std::vector<const v1::Replica *> cands;
	for (const auto &r : v.replicas)
		if (!r.lost && r.r.type() == v1::SEGMENT_DRAM)
			cands.push_back(&r.r);
	for (const auto &r : v.salvage)
		if (r.type() == v1::SEGMENT_DRAM)
			cands.push_back(&r);
	if (cands.empty())
		return false;
	const v1::Replica &shape = *cands.front();
	v1::Replica c;
	c.set_type(v1::SEGMENT_DRAM);
	for (int j = 0; j < shape.shards_size(); j++) {
		const v1::Shard *pick = nullptr;
		for (const v1::Replica *r : cands) {
			if (r->shards_size() != shape.shards_size() ||
			    r->shards(j).length() != shape.shards(j).length())
				continue;
			const SegmentState *seg = st_.segment(r->shards(j).segment_id());
			if (seg && seg->desc.state() != v1::SEGMENT_DEAD) {
				pick = &r->shards(j);
				break;
			}
		}
		if (!pick)
			return false;
		*c.add_shards() = *pick;
	}
	*out = std::move(c);
	return true;
}

std::shared_ptr<std::mutex> Leader::key_lock(std::map<std::string, std::weak_ptr<std::mutex>> &locks,
					     const std::string &key)
{
	std::lock_guard<std::mutex> g(flush_locks_m_);
	auto &w = locks[key];
	std::shared_ptr<std::mutex> l = w.lock();
	if (!l) {
		l = std::make_shared<std::mutex>();
		w = l;
	}
	// forget the keys nobody holds now and then
	if (locks.size() > 4096)
		std::erase_if(locks, [](const auto &kv) { return kv.second.expired(); });
	return l;
}

bool Leader::readopt_one_locked(lg::Record *rec)
{
	int64_t now = now_ns();

	for (const auto &[key, ver] : st_.salvaged()) {
		// only the newest version is repaired, so only its salvage helps
		const VersionState *v = st_.newest(key);
		if (!v || v->version != ver)
			continue;
		const std::vector<v1::Replica> &list = v->salvage;
		std::optional<RepairPlan> p = st_.plan_repair(key);
		// only while no copy reads it (a repair holds a pin)
		if (!p || p->version != ver || st_.leased(key, ver, now))
			continue;
		for (size_t i = 0; i < list.size(); i++) {
			const v1::Replica &r = list[i];
			uint32_t missing = r.type() == v1::SEGMENT_DRAM ? p->dram_missing : p->nvmeof_missing;
			bool ok = missing > 0;
			for (const auto &s : r.shards()) {
				const SegmentState *seg = st_.segment(s.segment_id());
				ok = ok && seg && seg->desc.state() == v1::SEGMENT_ALIVE;
			}
			// shard j apart from the other replicas' shard j
			for (size_t k = 0; ok && k < v->replicas.size(); k++) {
				const v1::Replica &o = v->replicas[k].r;
				if (v->replicas[k].lost || o.type() != r.type())
					continue;
				for (int j = 0; j < r.shards_size() && j < o.shards_size(); j++)
					ok = ok && o.shards(j).segment_id() != r.shards(j).segment_id();
			}
			if (!ok)
				continue;
			// apply() hands the places the salvage held to the replica
			rec->Clear();
			rec->mutable_replica_add()->set_key(key);
			rec->mutable_replica_add()->set_version(ver);
			*rec->mutable_replica_add()->mutable_replica() = r;
			return true;
		}
	}
	return false;
}

void Leader::note_retry(const char *rpc, const std::string &key, uint64_t version)
{
	metrics_->retries++;
	if (version)
		log_line("%s of '%s' version %llu again: a retry, answered as the first was", rpc,
			 key.substr(0, 64).c_str(), static_cast<unsigned long long>(version));
	else
		log_line("%s of '%s' again: a retry, answered as the first was", rpc,
			 key.substr(0, 64).c_str());
}

void Leader::alive_locked(const Caller &c, uint64_t client_id)
{
	std::string err;
	if (client_id && st_.clients().count(client_id) && !st_.check_client(c, client_id, &err)) {
		std::lock_guard<std::mutex> sg(seen_mu_);
		last_seen_[client_id] = std::max(last_seen_[client_id], mono_ms());
	}
}

int Leader::own_put_locked(const Caller &c, uint64_t client_id, const std::string &key,
			   uint64_t version, std::string *err)
{
	if (int ret = st_.check_client(c, client_id, err))
		return ret;
	const VersionState *v = st_.find_version(key, version);
	if (c.admin || !v || v->owner == c.identity)
		return 0;
	*err = "the put of '" + key.substr(0, 64) + "' version " + std::to_string(version) +
	       " is " + v->owner + "'s, not " + c.identity + "'s";
	return -EPERM;
}

// ---- RPCs

grpc::Status Leader::RegisterClient(const Caller &c, const v1::RegisterClientRequest *q, v1::RegisterClientResponse *a)
{
	std::string err;
	lg::Record rec;
	uint64_t seq;
	v1::Member m;

	{
		std::lock_guard<std::mutex> g(mu_);
		if (int ret = st_.plan_register_client(c, q->self(), q->previous_client_id(), &rec, &err))
			return to_status(ret, err);
		if (int ret = commit_locked(rec, &seq, &err))
			return to_status(ret, err);
		m = rec.client_add().member();
		{
			std::lock_guard<std::mutex> sg(seen_mu_);
			last_seen_[m.client_id()] = mono_ms();
			beat_identity_[m.client_id()] = m.identity();
		}
		a->set_client_id(m.client_id());
		*a->add_members() = self_member();
		for (const auto &[id, other] : st_.clients())
			if (id != m.client_id())
				*a->add_members() = other;
		for (const auto &[id, s] : st_.segments())
			st_.segment_desc(s, a->add_segments());
		a->set_heartbeat_ms(opts_.heartbeat_ms);
		a->set_retry_window_ms(static_cast<uint64_t>(opts_.limits.retry_window_ms));
		a->set_dram_shard_size(opts_.limits.shard_size);
		a->set_max_object_size(opts_.limits.max_object_size);
	}
	if (int ret = wait_durable(seq, &err))
		return to_status(ret, err);
	log_line("client %llu joined: node %u at %s port %u%s",
		 static_cast<unsigned long long>(m.client_id()), m.node_id(), m.addr().c_str(),
		 m.port(), q->previous_client_id() == m.client_id() ? " (again)" : "");
	v1::Event ev;
	*ev.mutable_member_joined() = m;
	push_event(ev, m.client_id());
	if (m.node_id() != opts_.node)
		want_peer(m);
	return grpc::Status::OK;
}

grpc::Status Leader::RegisterSegment(const Caller &c, const v1::RegisterSegmentRequest *q, v1::RegisterSegmentResponse *a)
{
	std::string err;
	lg::Record rec;
	uint64_t seq = 0, id = 0, shown = 0;
	bool remounted = false;
	v1::SegmentDesc desc;

	{
		std::lock_guard<std::mutex> g(mu_);
		if (int ret = st_.check_client(c, q->client_id(), &err))
			return to_status(ret, err);
		// memory no client lends (an NVMe-oF namespace) is the pool's
		if (!c.admin && (!q->client_id() || q->desc().type() != v1::SEGMENT_DRAM))
			return to_status(-EPERM, "only an admin adds a segment no client owns, or an "
						 "NVMe-oF namespace (" + c.identity + " is not one)");
		alive_locked(c, q->client_id());
		if (int ret = st_.plan_register_segment(c, q->client_id(), q->desc(), &rec, &id,
							&remounted, &err))
			return to_status(ret, err);
		if (rec.rec_case() != lg::Record::REC_NOT_SET)
			if (int ret = commit_locked(rec, &seq, &err))
				return to_status(ret, err);
		lg::Record again;
		while (remounted && seq && readopt_one_locked(&again)) {
			if (int ret = commit_locked(again, &seq, &err))
				return to_status(ret, err);
			log_line("'%s' version %llu: its replica on segment %llu is readable again",
				 again.replica_add().key().substr(0, 64).c_str(),
				 static_cast<unsigned long long>(again.replica_add().version()),
				 static_cast<unsigned long long>(id));
		}
		st_.segment_desc(*st_.segment(id), &desc);
		// already mounted: its mount may be a record still in flight
		shown = seq ? seq : wide_seq_;
	}
	if (shown)
		if (int ret = wait_durable(shown, &err))
			return to_status(ret, err);
	a->set_segment_id(id);
	a->set_remounted(remounted);
	if (seq) {
		log_line("segment %llu %s: %s, %llu bytes, client %llu%s",
			 static_cast<unsigned long long>(id), remounted ? "remounted" : "added",
			 desc.type() == v1::SEGMENT_DRAM ? "DRAM" : "NVMe-oF",
			 static_cast<unsigned long long>(desc.size()),
			 static_cast<unsigned long long>(q->client_id()),
			 remounted ? (", " + std::to_string(desc.used()) + " bytes in use kept").c_str() : "");
		v1::Event ev;
		*ev.mutable_segment_setup() = desc;
		push_event(ev, q->client_id());
		kick_repair();
	}
	return grpc::Status::OK;
}

int64_t Leader::drain_deadline(uint64_t ms) const
{
	uint64_t d = ms ? ms : opts_.drain_timeout_ms;
	return mono_ms() + static_cast<int64_t>(std::min<uint64_t>(d, 365ULL * 24 * 3600 * 1000));
}

grpc::Status Leader::UnregisterSegment(const Caller &c, const v1::UnregisterSegmentRequest *q,
				       v1::UnregisterSegmentResponse *a)
{
	{
		std::lock_guard<std::mutex> g(mu_);
		const SegmentState *s = st_.segment(q->segment_id());
		if (!s)
			return to_status(-ENOENT, "no segment " + std::to_string(q->segment_id()));
		std::string err;
		if (int ret = st_.check_client(c, q->client_id(), &err))
			return to_status(ret, err);
		if (!c.admin && s->desc.owner_identity() != c.identity)
			return to_status(-EPERM, "segment " + std::to_string(q->segment_id()) + " is " +
							 s->desc.owner_identity() + "'s, not " +
							 c.identity + "'s");
		if (!c.admin && s->desc.owner() && s->desc.owner() != q->client_id())
			return to_status(-EPERM, "segment " + std::to_string(q->segment_id()) +
							 " belongs to client " +
							 std::to_string(s->desc.owner()));
	}
	uint64_t moved = 0, lost = 0;
	if (q->drain()) {
		uint64_t remain = 0;
		std::string err;
		if (int ret = drain(q->segment_id(), drain_deadline(q->deadline_ms()), false, &moved, &remain,
				    &err))
			return to_status(ret, err);
	} else {
		std::string err;
		if (int ret = remove_segment(q->segment_id(), &lost, &err))
			return to_status(ret, err);
	}
	a->set_moved(moved);
	a->set_lost(lost);
	return grpc::Status::OK;
}

grpc::Status Leader::Leave(const Caller &c, const v1::LeaveRequest *q, v1::LeaveResponse *a)
{
	std::vector<uint64_t> segs;
	v1::Member m;
	{
		std::lock_guard<std::mutex> g(mu_);
		auto it = st_.clients().find(q->client_id());
		if (it == st_.clients().end())
			return to_status(-ENOENT, "unknown client " + std::to_string(q->client_id()));
		std::string err;
		if (int ret = st_.check_client(c, q->client_id(), &err))
			return to_status(ret, err);
		m = it->second;
		for (const auto &[id, s] : st_.segments())
			if (s.desc.owner() == q->client_id())
				segs.push_back(id);
	}
	uint64_t moved = 0, lost = 0;
	if (q->drain()) {
		// one deadline for them all; past it the client stays, with
		// what did not move (its segments DRAINING or still ALIVE)
		int64_t deadline = drain_deadline(q->deadline_ms());
		for (uint64_t id : segs) {
			uint64_t remain = 0;
			std::string err;
			if (int ret = drain(id, deadline, false, &moved, &remain, &err)) {
				if (ret == -ETIMEDOUT)
					err = "client " + std::to_string(q->client_id()) +
					      " did not leave: " + err + " (Leave again, with or without "
					      "drain)";
				return to_status(ret, err);
			}
		}
	}
	lg::Record rec;
	rec.mutable_client_remove()->set_client_id(q->client_id());
	std::string err;
	if (int ret = commit({ rec }, &err))
		return to_status(ret, err);
	// without a drain its DRAM segments are the master's to reclaim
	// (the record made them so)
	std::vector<v1::SegmentDesc> orphaned;
	{
		std::lock_guard<std::mutex> g(mu_);
		for (uint64_t id : segs)
			if (const SegmentState *s = st_.segment(id); s && s->desc.reclaimed()) {
				orphaned.emplace_back();
				st_.segment_desc(*s, &orphaned.back());
			}
		{
			std::lock_guard<std::mutex> sg(seen_mu_);
			last_seen_.erase(q->client_id());
			beat_identity_.erase(q->client_id());
		}
		auto w = watchers_.find(q->client_id());
		if (w != watchers_.end()) {
			std::lock_guard<std::mutex> wg(w->second->m);
			w->second->closed = true;
			w->second->cv.notify_all();
			watchers_.erase(w);
		}
	}
	log_line("client %llu left%s: %llu replicas moved, %llu lost",
		 static_cast<unsigned long long>(q->client_id()), q->drain() ? " (drained)" : "",
		 static_cast<unsigned long long>(moved), static_cast<unsigned long long>(lost));
	v1::Event ev;
	*ev.mutable_member_left() = m;
	push_event(ev, q->client_id());
	for (auto &d : orphaned) {
		log_line("segment %llu: its owner left without draining; reclaiming it",
			 static_cast<unsigned long long>(d.id()));
		v1::Event dev;
		*dev.mutable_segment_draining() = d;
		push_event(dev, q->client_id());
	}
	a->set_moved(moved);
	a->set_lost(lost);
	return grpc::Status::OK;
}

/*
 * A beat of a client the monitor knows, from its own identity, is
 * recorded without the state mutex: while something else holds that (a
 * snapshot of a big state, a stuck log) the beat must still count, or
 * the master's stall would make the client look dead.  Anything else (an
 * unknown client, someone else's identity) is answered from the state.
 */
grpc::Status Leader::Heartbeat(const Caller &c, const v1::HeartbeatRequest *q, v1::HeartbeatResponse *a)
{
	{
		std::lock_guard<std::mutex> sg(seen_mu_);
		auto it = beat_identity_.find(q->client_id());
		if (it != beat_identity_.end() && (c.admin || it->second == c.identity)) {
			last_seen_[q->client_id()] = std::max(last_seen_[q->client_id()], mono_ms());
			a->set_term(beat_term_);
			return grpc::Status::OK;
		}
	}
	std::lock_guard<std::mutex> g(mu_);
	std::string err;
	if (!st_.clients().count(q->client_id()))
		return to_status(-ENOENT, "unknown client " + std::to_string(q->client_id()) +
						  "; register again");
	if (int ret = st_.check_client(c, q->client_id(), &err))
		return to_status(ret, err);
	std::lock_guard<std::mutex> sg(seen_mu_);
	last_seen_[q->client_id()] = mono_ms();
	beat_identity_[q->client_id()] = st_.clients().at(q->client_id()).identity();
	a->set_term(st_.term());
	return grpc::Status::OK;
}

// Each stream holds a thread and a queue here: an identity (not an admin)
// keeps at most its quota open, monitors and clients alike, so that
// streams opened without end stop at it.
grpc::Status Leader::watch_open(const Caller &c)
{
	std::lock_guard<std::mutex> g(mu_);
	if (c.admin)
		return grpc::Status::OK;
	uint32_t &open = watches_by_[c.identity];
	if (opts_.watch_quota && open >= opts_.watch_quota)
		return to_status(-EDQUOT, c.identity + " has " + std::to_string(open) +
						  " Watch streams open; its quota is " +
						  std::to_string(opts_.watch_quota));
	open++;
	return grpc::Status::OK;
}

void Leader::watch_close(const Caller &c)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = watches_by_.find(c.identity);
	if (c.admin || it == watches_by_.end())
		return;
	if (!--it->second)
		watches_by_.erase(it);
}

grpc::Status Leader::Watch(const Caller &c, grpc::ServerContext *ctx, const v1::WatchRequest *q,
			   grpc::ServerWriter<v1::Event> *w)
{
	auto watcher = std::make_shared<Watcher>();
	// client 0: a monitor (dsctl master monitor), anyone who may list
	// the segments; it gets every event and registers nothing
	bool observer = q->client_id() == 0;
	if (grpc::Status s = watch_open(c); !s.ok())
		return s;
	struct Closed {
		Leader *l;
		const Caller &c;
		~Closed() { l->watch_close(c); }
	} closed{ this, c };
	if (observer) {
		std::lock_guard<std::mutex> g(mu_);
		if (stopping_)
			return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the master stepped down");
		observers_.insert(watcher);
	}
	if (!observer) {
		std::lock_guard<std::mutex> g(mu_);
		std::string err;
		if (!st_.clients().count(q->client_id()))
			return to_status(-ENOENT, "unknown client " + std::to_string(q->client_id()) +
							  "; register again");
		if (int ret = st_.check_client(c, q->client_id(), &err))
			return to_status(ret, err);
		auto old = watchers_.find(q->client_id());
		if (old != watchers_.end()) {
			std::lock_guard<std::mutex> wg(old->second->m);
			old->second->closed = true;
			old->second->cv.notify_all();
		}
		watchers_[q->client_id()] = watcher;
	}
	for (;;) {
		std::deque<v1::Event> evs;
		{
			std::unique_lock<std::mutex> l(watcher->m);
			watcher->cv.wait_for(l, std::chrono::milliseconds(250),
					     [&] { return watcher->closed || !watcher->events.empty(); });
			evs.swap(watcher->events);
			if (watcher->closed && evs.empty())
				break;
		}
		if (ctx->IsCancelled())
			break;
		for (const auto &ev : evs)
			if (!w->Write(ev))
				goto out;
	}
out:
	std::lock_guard<std::mutex> g(mu_);
	auto it = watchers_.find(q->client_id());
	if (!observer && it != watchers_.end() && it->second == watcher)
		watchers_.erase(it);
	observers_.erase(watcher);
	if (stopping_)
		return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the master stepped down");
	return grpc::Status::OK;
}

grpc::Status Leader::put_start_locked(const Caller &c, const v1::PutStartRequest &q,
				      v1::PutStartResponse *a, uint64_t *seq, int64_t *takeover)
{
	std::string err;
	lg::Record rec;
	std::set<uint64_t> exclude(q.exclude_segments().begin(), q.exclude_segments().end());

	*takeover = 0;
	if (int ret = st_.check_client(c, q.client_id(), &err))
		return to_status(ret, err);
	alive_locked(c, q.client_id());
	// a retry of a put begun already: that put's answer again, once its
	// record is durable (it may still be in flight)
	if (const VersionState *v = st_.pending_put(q.key(), q.client_id(), q.request_id())) {
		a->set_version(v->version);
		for (const auto &r : v->replicas)
			*a->add_replicas() = r.r;
		a->set_deadline_ns(v->deadline_ns);
		a->set_deadline_left_ns(std::max<int64_t>(0, v->deadline_ns - now_ns()));
		a->set_dram_wanted(q.config().dram_replicas());
		a->set_nvmeof_wanted(q.config().nvmeof_replicas());
		a->set_attrs(true);
		*seq = std::max(*seq, read_seq_locked(&q.key()));
		note_retry("PutStart", q.key(), v->version);
		return grpc::Status::OK;
	}
	int ret = st_.plan_put_start(c, q.client_id(), q.key(), q.size(), q.config(), exclude,
				     now_ns(), &rec, &err);
	// a put whose record cannot be logged evicts nothing for its room
	// (commit_locked refuses it, once placed, exactly)
	if (ret == -ENOSPC && opts_.evict && q.config().dram_replicas() <= 64 &&
	    q.config().nvmeof_replicas() <= 64 && q.size() <= opts_.limits.max_object_size)
		if (int fret = record_fits(put_start_record_bound(st_, c, q, opts_.limits.shard_size),
					   "put_start", &err))
			return to_status(fret, "a put of '" + q.key().substr(0, 64) + "' (" +
						       std::to_string(q.size()) + " bytes): " + err);
	if (ret == -ENOSPC && opts_.evict) {
		ret = evict_for_put_locked(c, &q, exclude, &rec, seq, takeover, &err);
		if (ret == -ENOSPC && *takeover)
			err = "pool full; eviction resumes in " + std::to_string(*takeover / 1000000) +
			      " ms (a new leader honours the previous one's read leases)";
	}
	// (failed: *seq is the evictions made meanwhile, durable before the answer)
	if (ret)
		return to_status(ret, err);
	rec.mutable_put_start()->set_request_id(q.request_id());
	if (int fret = record_fits(rec.ByteSizeLong(), "put_start", &err))
		return to_status(fret, "a put of '" + q.key().substr(0, 64) + "' (" +
					       std::to_string(q.size()) + " bytes, " +
					       std::to_string(rec.put_start().replicas_size()) +
					       " replicas): " + err);
	if (int cret = commit_locked(rec, seq, &err))
		return to_status(cret, err);
	const lg::PutStart &p = rec.put_start();
	a->set_version(p.version());
	*a->mutable_replicas() = p.replicas();
	a->set_deadline_ns(p.deadline_ns());
	a->set_deadline_left_ns(std::max<int64_t>(0, p.deadline_ns() - now_ns()));
	a->set_dram_wanted(q.config().dram_replicas());
	a->set_nvmeof_wanted(q.config().nvmeof_replicas());
	a->set_attrs(true);
	if (opts_.verbose)
		log_line("put start '%s' version %llu: %d replicas", q.key().substr(0, 64).c_str(),
			 static_cast<unsigned long long>(p.version()), p.replicas_size());
	return grpc::Status::OK;
}

grpc::Status Leader::PutStart(const Caller &c, const v1::PutStartRequest *q, v1::PutStartResponse *a)
{
	for (int attempt = 0;; attempt++) {
		uint64_t seq = 0;
		int64_t takeover = 0;
		grpc::Status s;
		{
			std::lock_guard<std::mutex> g(mu_);
			s = put_start_locked(c, *q, a, &seq, &takeover);
		}
		if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && takeover && attempt == 0) {
			// a new leader: the old one's read leases run out first
			std::this_thread::sleep_for(std::chrono::nanoseconds(takeover) +
						    std::chrono::milliseconds(10));
			a->Clear();
			continue;
		}
		return durable_reply(seq, s);
	}
}

grpc::Status Leader::put_commit_locked(const Caller &c, const v1::PutCommitRequest &q,
				       v1::PutCommitResponse *a, uint64_t *seq,
				       v1::ReplicateConfig *config)
{
	std::string err;
	lg::Record rec, abort;
	std::vector<uint32_t> done(q.done().begin(), q.done().end());

	if (int ret = own_put_locked(c, q.client_id(), q.key(), q.version(), &err))
		return to_status(ret, err);
	alive_locked(c, q.client_id());
	int ret = st_.plan_put_commit(q.key(), q.version(), done, q.sums(), now_ns(), &rec, &abort,
				      &err);
	if (ret) {
		std::string aerr;
		if (abort.rec_case() != lg::Record::REC_NOT_SET && !commit_locked(abort, seq, &aerr))
			sync_cv_.notify_all();
		// (an abort or expiry by someone else may be in flight)
		if (!*seq)
			*seq = read_seq_locked(&q.key());
		return to_status(ret, err);
	}
	if (rec.rec_case() != lg::Record::REC_NOT_SET) {
		if (int fret = record_fits(rec.ByteSizeLong(), "put_commit", &err))
			return to_status(fret, "the commit of '" + q.key().substr(0, 64) + "' version " +
						       std::to_string(q.version()) + " (" +
						       std::to_string(q.sums().xxh64_size()) +
						       " checksums): " + err + "; a larger checksum chunk "
						       "makes fewer");
		if (int cret = commit_locked(rec, seq, &err))
			return to_status(cret, err);
		metrics_->puts++;
	} else {
		// a retried commit: the first one's record may be in flight
		*seq = read_seq_locked(&q.key());
		note_retry("PutCommit", q.key(), q.version());
	}
	const VersionState *v = st_.find_version(q.key(), q.version());
	for (const auto &r : v->replicas) {
		if (r.r.type() == v1::SEGMENT_DRAM)
			a->set_dram_replicas(a->dram_replicas() + 1);
		else
			a->set_nvmeof_replicas(a->nvmeof_replicas() + 1);
	}
	*config = v->config;
	const ObjectState *o = st_.find_object(q.key());
	a->set_flushed(o && o->flushed_version == q.version());
	sync_cv_.notify_all();
	return grpc::Status::OK;
}

void Leader::eager_flush(const v1::PutCommitRequest &q, const v1::ReplicateConfig &config,
			 v1::PutCommitResponse *a)
{
	if (opts_.verbose)
		log_line("put commit '%s' version %llu", q.key().substr(0, 64).c_str(),
			 static_cast<unsigned long long>(q.version()));
	if (config.flush() != v1::FLUSH_EAGER || a->flushed())
		return;
	bool flushed = false;
	std::string ferr;
	int ret = flush(q.key(), q.version(), &flushed, &ferr);
	a->set_flushed(flushed);
	if (ret) {
		// the put is complete; the flusher retries later
		a->set_flush_errno(-ret);
		a->set_flush_error(ferr);
		log_line("eager flush of '%s' version %llu failed: %s", q.key().substr(0, 64).c_str(),
			 static_cast<unsigned long long>(q.version()), ferr.c_str());
	}
}

grpc::Status Leader::PutCommit(const Caller &c, const v1::PutCommitRequest *q, v1::PutCommitResponse *a)
{
	uint64_t seq = 0;
	v1::ReplicateConfig config;
	grpc::Status s;
	{
		std::lock_guard<std::mutex> g(mu_);
		s = put_commit_locked(c, *q, a, &seq, &config);
	}
	s = durable_reply(seq, s);
	if (s.ok())
		eager_flush(*q, config, a);
	return s;
}

grpc::Status Leader::PutAbort(const Caller &c, const v1::PutAbortRequest *q, v1::PutAbortResponse *)
{
	std::string err;
	lg::Record rec;
	uint64_t seq;
	{
		std::lock_guard<std::mutex> g(mu_);
		if (int ret = own_put_locked(c, q->client_id(), q->key(), q->version(), &err))
			return to_status(ret, err);
		alive_locked(c, q->client_id());
		if (int ret = st_.plan_put_abort(q->key(), q->version(), &rec, &err))
			return to_status(ret, err);
		if (int ret = commit_locked(rec, &seq, &err))
			return to_status(ret, err);
		sync_cv_.notify_all();
	}
	if (int ret = wait_durable(seq, &err))
		return to_status(ret, err);
	return grpc::Status::OK;
}

grpc::Status Leader::get_locked(const v1::GetRequest &q, v1::GetResponse *a, uint64_t *seq)
{
	std::string err;
	GetResult res;
	*seq = std::max(*seq, read_seq_locked(&q.key()));
	// an error waits too: it may show a delete in flight
	int64_t now = now_ns();
	int ret = st_.get(q.key(), q.min_version(), &res, &err, now);
	if (ret)
		return to_status(ret, err);
	st_.touch(q.key(), now);
	*a->mutable_object() = std::move(res.object);
	a->set_slow_tier(res.slow_tier);
	a->set_below_min_version(res.below_min_version);
	if (!res.below_min_version && !res.slow_tier) {
		int64_t until = now + opts_.limits.get_lease_ns;
		st_.lease(q.key(), a->object().version(), until);
		a->set_lease_until_ns(until);
		a->set_lease_left_ns(opts_.limits.get_lease_ns);
	}
	metrics_->gets++;
	return grpc::Status::OK;
}

grpc::Status Leader::Get(const Caller &, const v1::GetRequest *q, v1::GetResponse *a)
{
	uint64_t seq = 0;
	grpc::Status s;
	{
		std::lock_guard<std::mutex> g(mu_);
		s = get_locked(*q, a, &seq);
	}
	return read_reply(seq, s);
}

grpc::Status Leader::SlowRead(const Caller &, const v1::SlowReadRequest *q, v1::SlowReadResponse *a)
{
	std::string err;
	if (int ret = MasterState::check_key(q->key(), &err))
		return to_status(ret, err);
	if (!slow_)
		return to_status(-ENOENT, "no slow tier");
	uint64_t len = std::min(q->length(), kSlowReadMax), version = 0, size = 0;
	std::string data;
	int ret = slow_->get(q->key(), q->offset(), len, &data, &version, &size);
	if (ret)
		return read_reply(0, to_status(ret, ret == -ENOENT ? "'" + q->key().substr(0, 64) +
								     "' is not in the slow tier"
								   : "slow tier: " + std::string(strerror(-ret))));
	// Only the version the state lists as flushed: a copy left behind by
	// a version evicted, expired or deleted (a flush it raced) is nobody's.
	uint64_t seq;
	{
		std::lock_guard<std::mutex> g(mu_);
		seq = read_seq_locked(&q->key());
		if (!st_.slow_copy_listed(q->key(), version, now_ns()))
			return read_reply(seq, to_status(-ENOENT, "'" + q->key().substr(0, 64) + "' version " +
									  std::to_string(version) +
									  " is not in the slow tier"));
	}
	a->set_version(version);
	a->set_data(std::move(data));
	return read_reply(seq, grpc::Status::OK);
}

/*
 * Replicate's drops that readers held back: made here once the leases
 * that cover the version run out, so the answer usually counts them.  A
 * key read on and on keeps renewing its lease: after two lease periods
 * the answer goes without them, and the GC makes them when it can.
 */
int64_t Leader::takeover_timeout_ms() const
{
	return std::max<int64_t>(3 * static_cast<int64_t>(opts_.heartbeat_timeout_ms), 10000);
}

void Leader::trim_when_unread(const std::string &key, uint64_t version)
{
	int64_t give_up = now_ns() + 2 * opts_.limits.get_lease_ns;
	for (;;) {
		int64_t until = 0;
		uint64_t seq = 0;
		bool done = false;
		std::string err;
		{
			std::lock_guard<std::mutex> g(mu_);
			const VersionState *n = st_.newest(key);
			int64_t now = now_ns();
			if (!trims_.count(key) || !n || n->version != version) {
				done = true;
			} else if (!st_.readers_may_hold(key, version, now)) {
				for (const auto &r : st_.plan_trim(key, now))
					if (commit_locked(r, &seq, &err))
						break;
				trims_.erase(key);
				done = true;
			} else {
				until = st_.readers_until(key, version, now);
			}
		}
		if (done) {
			if (seq)
				wait_durable(seq, &err);
			return;
		}
		if (until >= give_up || stopping_)
			return;
		std::this_thread::sleep_for(std::chrono::nanoseconds(until - now_ns()) +
					    std::chrono::milliseconds(1));
	}
}

grpc::Status Leader::Replicate(const Caller &c, const v1::ReplicateRequest *q, v1::ReplicateResponse *a)
{
	std::string err;
	std::vector<lg::Record> recs;
	uint64_t version = 0;
	if (!c.admin)
		return to_status(-EPERM, "changing an object's replicas is for an admin (" +
						 c.identity + " is not one)");
	uint64_t planned = 0;
	bool deferred = false;
	{
		// planned and applied in one hold: a Get leasing the version
		// in between would be handed a replica about to be dropped
		std::lock_guard<std::mutex> g(mu_);
		if (int ret = st_.plan_replicate(q->key(), q->config(), now_ns(), &recs, &version,
						 &deferred, &err))
			return to_status(ret, err);
		for (const auto &r : recs)
			if (int ret = commit_locked(r, &planned, &err))
				return to_status(ret, err);
		if (deferred)
			trims_.insert(q->key());
		else
			trims_.erase(q->key());
	}
	if (planned)
		if (int ret = wait_durable(planned, &err))
			return to_status(ret, err);
	if (deferred)
		trim_when_unread(q->key(), version);
	repair(q->key(), true);
	bool flushed = false;
	if (q->config().flush() == v1::FLUSH_EAGER) {
		int ret = flush(q->key(), version, &flushed, &err);
		if (ret)
			log_line("flush of '%s' version %llu failed: %s", q->key().substr(0, 64).c_str(),
				 static_cast<unsigned long long>(version), err.c_str());
	}
	uint64_t seq;
	bool gone;
	{
		std::lock_guard<std::mutex> g(mu_);
		seq = read_seq_locked(&q->key());
		const VersionState *v = st_.find_version(q->key(), version);
		gone = !v;
		for (size_t i = 0; v && i < v->replicas.size(); i++) {
			if (v->replicas[i].r.type() == v1::SEGMENT_DRAM)
				a->set_dram_replicas(a->dram_replicas() + 1);
			else
				a->set_nvmeof_replicas(a->nvmeof_replicas() + 1);
		}
		const ObjectState *o = st_.find_object(q->key());
		a->set_version(version);
		a->set_flushed(flushed || (o && o->flushed_version == version));
	}
	return durable_reply(seq, gone ? to_status(-ENOENT, "'" + q->key().substr(0, 64) +
								  "' went away meanwhile")
				       : grpc::Status::OK);
}

grpc::Status Leader::del_locked(const Caller &c, const v1::DelRequest &q, v1::DelResponse *a,
				 uint64_t *seq, bool *deleted)
{
	std::string err;
	lg::Record rec;
	uint64_t versions = 0;

	*deleted = false;
	// a retry of a delete already carried out: its answer again, once
	// its record is durable (it may still be in flight).  (Not its slow
	// tier delete: the key may have a newer copy there now; a copy the
	// first attempt left is one nothing points to.)
	if (const lg::Del *done = st_.recent_del(q.key(), q.request_id())) {
		a->set_versions(done->versions());
		*seq = std::max(*seq, read_seq_locked(&q.key()));
		note_retry("Del", q.key(), 0);
		return grpc::Status::OK;
	}
	if (q.request_id() && st_.recent_dels_full())
		return to_status(-EBUSY, "the master remembers " +
						  std::to_string(opts_.limits.recent_dels) +
						  " deletes of the last " +
						  std::to_string(opts_.limits.retry_window_ms / 1000) +
						  " s for their retries; try again shortly");
	if (int ret = st_.plan_del(c, q.key(), &rec, &versions, &err)) {
		// "no object" may be another delete in flight
		*seq = std::max(*seq, read_seq_locked(&q.key()));
		return to_status(ret, err);
	}
	rec.mutable_del()->set_request_id(q.request_id());
	if (int ret = commit_locked(rec, seq, &err))
		return to_status(ret, err);
	a->set_versions(versions);
	*deleted = true;
	metrics_->dels++;
	return grpc::Status::OK;
}

void Leader::delete_slow_copy(const std::string &key)
{
	if (!slow_)
		return;
	int ret = slow_->del(key);
	if (ret && ret != -ENOENT)
		log_line("slow tier: deleting '%s': %s", key.substr(0, 64).c_str(), strerror(-ret));
}

grpc::Status Leader::Del(const Caller &c, const v1::DelRequest *q, v1::DelResponse *a)
{
	uint64_t seq = 0;
	bool deleted;
	grpc::Status s;
	// no flush of this key runs while it goes (nor starts and resurrects it)
	auto fl = flush_lock(q->key());
	std::lock_guard<std::mutex> fg(*fl);
	{
		std::lock_guard<std::mutex> g(mu_);
		s = del_locked(c, *q, a, &seq, &deleted);
	}
	if (!deleted)
		return read_reply(seq, s);
	s = durable_reply(seq, s);
	if (s.ok())
		delete_slow_copy(q->key());
	return s;
}

grpc::Status Leader::List(const Caller &, const v1::ListRequest *q, v1::ListResponse *a)
{
	std::vector<v1::ObjectInfo> out;
	bool more = false;
	uint64_t seq;
	{
		std::lock_guard<std::mutex> g(mu_);
		seq = read_seq_locked(nullptr);
		st_.list(q->prefix(), q->start_after(), q->limit(), &out, &more, now_ns());
	}
	for (auto &o : out)
		*a->add_objects() = std::move(o);
	a->set_more(more);
	return read_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::Sync(const Caller &, const v1::SyncRequest *q, v1::SyncResponse *a)
{
	std::string err;
	if (int ret = MasterState::check_key(q->key(), &err))
		return to_status(ret, err);
	std::unique_lock<std::mutex> l(mu_);
	uint64_t up_to = st_.next_version() - 1;
	// every put begun before this call ends by its deadline, at the latest
	auto limit = std::chrono::steady_clock::now() +
		     std::chrono::nanoseconds(opts_.limits.put_timeout_ns) + std::chrono::milliseconds(opts_.gc_ms * 2 + 1000);
	bool ok = sync_cv_.wait_until(l, limit, [&] {
		return stopping_ || !st_.pending_upto(q->key(), up_to);
	});
	if (stopping_)
		return to_status(-EAGAIN, "the master stepped down");
	if (!ok)
		return to_status(-ETIMEDOUT, "puts of '" + q->key().substr(0, 64) + "' still pending");
	const VersionState *v = st_.newest(q->key());
	a->set_version(v ? v->version : 0);
	// the puts it waited for ended: their records may be in flight
	uint64_t seq = read_seq_locked(&q->key());
	l.unlock();
	return read_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::MasterInfo(const Caller &, const v1::MasterInfoRequest *, v1::MasterInfoResponse *a)
{
	std::unique_lock<std::mutex> g(mu_);
	uint64_t seq = read_seq_locked(nullptr);
	a->set_leader(opts_.advertise);
	for (const auto &s : standbys_)
		a->add_standbys(s);
	a->set_term(st_.term());
	a->set_objects(st_.object_count());
	a->set_versions(st_.version_count());
	a->set_metadata_bytes(journal_->bytes());
	a->set_log_records(journal_->records_since_snapshot());
	a->set_persistence(journal_->describe());
	a->set_global_version(st_.next_version() - 1);
	*a->add_members() = self_member();
	for (const auto &[id, m] : st_.clients())
		*a->add_members() = m;
	a->set_ops(ops.load());
	a->set_slow_tier(slow_ ? slow_->describe() : "");
	a->set_evictions(st_.evictions());
	a->set_expiries(st_.expiries());
	a->set_evicted_bytes(st_.evicted_bytes());
	a->set_high_watermark_pct(opts_.high_watermark_pct);
	a->set_low_watermark_pct(opts_.low_watermark_pct);
	a->set_evict(opts_.evict);
	g.unlock();
	return read_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::SegmentList(const Caller &, const v1::SegmentListRequest *, v1::SegmentListResponse *a)
{
	uint64_t seq;
	{
		std::lock_guard<std::mutex> g(mu_);
		seq = read_seq_locked(nullptr);
		for (const auto &[id, s] : st_.segments())
			st_.segment_desc(s, a->add_segments());
	}
	return read_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::SetAttr(const Caller &c, const v1::SetAttrRequest *q, v1::SetAttrResponse *a)
{
	std::string err;
	lg::Record rec;
	uint64_t seq;
	{
		std::lock_guard<std::mutex> g(mu_);
		if (int ret = st_.plan_set_attr(c, q->key(), q->mask(), q->soft_pin(), q->ttl_ms(),
						now_ns(), &rec, &err))
			return to_status(ret, err);
		if (int ret = commit_locked(rec, &seq, &err))
			return to_status(ret, err);
		const VersionState *v = st_.find_version(q->key(), rec.config_set().version());
		a->set_version(rec.config_set().version());
		a->set_expires_ns(v ? v->expires_ns : 0);
	}
	if (int ret = wait_durable(seq, &err))
		return to_status(ret, err);
	return grpc::Status::OK;
}

// ---- MasterService

void MasterService::set_leader(std::shared_ptr<Leader> l)
{
	std::lock_guard<std::mutex> g(m_);
	if (l)
		metrics_->leader_terms++;
	leader_ = std::move(l);
}

std::shared_ptr<Leader> MasterService::leader()
{
	std::lock_guard<std::mutex> g(m_);
	if (leader_ && !leader_->serving())
		return nullptr;
	return leader_;
}

void MasterService::set_leader_addr(const std::string &addr)
{
	std::lock_guard<std::mutex> g(m_);
	leader_addr_ = addr;
}

grpc::Status MasterService::not_leader()
{
	std::lock_guard<std::mutex> g(m_);
	if (shutting_down_)
		return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the master is shutting down");
	if (leader_addr_.empty() || leader_addr_ == opts_.advertise)
		return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
				    "not the leader; no leader elected yet");
	return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
			    "not the leader; leader is " + leader_addr_);
}

MasterService::MasterService(const Options &opts) : opts_(opts)
{
	if (!opts_.tls.insecure && verifier_.load(opts_.tls.ca, &verifier_err_))
		log_line("TLS: %s", verifier_err_.c_str());
}

grpc::Status MasterService::authenticate(const grpc::ServerContext &ctx, Caller *c)
{
	if (opts_.tls.insecure) {
		c->identity.clear();
		c->admin = true;
		return grpc::Status::OK;
	}
	std::string why;
	c->identity = verifier_.identity(ctx, &why);
	if (c->identity.empty())
		return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
	c->admin = opts_.admins.count(c->identity) > 0;
	return grpc::Status::OK;
}

grpc::Status MasterService::Watch(grpc::ServerContext *ctx, const v1::WatchRequest *q,
				  grpc::ServerWriter<v1::Event> *w)
{
	return metrics_->time_rpc("Watch", [&]() -> grpc::Status {
		Caller c;
		if (grpc::Status s = authenticate(*ctx, &c); !s.ok())
			return s;
		auto l = leader();
		if (!l)
			return not_leader();
		l->ops++;
		return l->Watch(c, ctx, q, w);
	});
}

}  // namespace dsmem::store
