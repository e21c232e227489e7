// SPDX-License-Identifier: BSD-2-Clause
// The object store's client (see client.hpp and store.h).
#include "client.hpp"
#include "checksum.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace dsmem::store {

// ---- errors ----------------------------------------------------------------

// The one table of gRPC statuses as errnos (store-brief.md's, plus the
// FAILED_PRECONDITION refinements).  Rows with a message substring are
// tried first, in order; then the row with the code alone.
namespace {
struct StatusRow {
	grpc::StatusCode code;
	const char *contains;	// nullptr: any message
	int err;
};
constexpr StatusRow kStatusTable[] = {
	// a master that does not lead: retried elsewhere until the deadline
	{grpc::StatusCode::FAILED_PRECONDITION, "not the leader", -EAGAIN},
	// every replica of the version is gone and none is in the slow tier
	{grpc::StatusCode::FAILED_PRECONDITION, "no readable replica", -ENODATA},
	// a state the call cannot be served in yet (draining, ...)
	{grpc::StatusCode::FAILED_PRECONDITION, nullptr, -EBUSY},
	{grpc::StatusCode::OK, nullptr, 0},
	{grpc::StatusCode::INVALID_ARGUMENT, nullptr, -EINVAL},
	{grpc::StatusCode::NOT_FOUND, nullptr, -ENOENT},
	{grpc::StatusCode::RESOURCE_EXHAUSTED, nullptr, -ENOSPC},
	{grpc::StatusCode::ABORTED, nullptr, -ESTALE},
	{grpc::StatusCode::OUT_OF_RANGE, nullptr, -ERANGE},
	{grpc::StatusCode::DEADLINE_EXCEEDED, nullptr, -ETIMEDOUT},
	{grpc::StatusCode::UNAVAILABLE, nullptr, -EAGAIN},
	{grpc::StatusCode::PERMISSION_DENIED, nullptr, -EPERM},
	{grpc::StatusCode::UNAUTHENTICATED, nullptr, -EACCES},
	{grpc::StatusCode::ALREADY_EXISTS, nullptr, -EEXIST},
	{grpc::StatusCode::CANCELLED, nullptr, -ECANCELED},
	{grpc::StatusCode::UNIMPLEMENTED, nullptr, -EOPNOTSUPP},
};
}  // namespace

int status_to_errno(const grpc::Status &s)
{
	for (const StatusRow &r : kStatusTable) {
		if (r.code != s.error_code())
			continue;
		if (!r.contains || s.error_message().find(r.contains) != std::string::npos)
			return r.err;
	}
	return -EIO;	// UNKNOWN, INTERNAL, DATA_LOSS
}

bool not_leader(const grpc::Status &s, std::string *leader)
{
	static const std::string marker = "leader is ";
	if (s.error_code() != grpc::StatusCode::FAILED_PRECONDITION)
		return false;
	const std::string &msg = s.error_message();
	if (msg.find("not the leader") == std::string::npos)
		return false;
	if (leader) {
		leader->clear();
		size_t at = msg.find(marker);
		if (at != std::string::npos) {
			std::string a = msg.substr(at + marker.size());
			while (!a.empty() && (a.back() == ' ' || a.back() == '.' || a.back() == '\n'))
				a.pop_back();
			if (a != "unknown" && a != "none" && a.find(':') != std::string::npos)
				*leader = a;
		}
	}
	return true;
}

int check_key(const char *key, std::string *why)
{
	if (!key) {
		*why = "no key";
		return -EINVAL;
	}
	size_t n = strnlen(key, DS_STORE_KEY_MAX + 1);
	if (n == 0) {
		*why = "empty key";
		return -EINVAL;
	}
	if (n > DS_STORE_KEY_MAX) {
		*why = "key longer than " + std::to_string(DS_STORE_KEY_MAX) + " bytes";
		return -EINVAL;
	}
	return 0;
}

// What every keyed submission checks first.
int check_submit(const char *key, const uint64_t *task, std::string *why)
{
	if (int ret = check_key(key, why))
		return ret;
	if (!task) {
		*why = "no task pointer";
		return -EINVAL;
	}
	return 0;
}

namespace {

constexpr uint32_t kReplicasMax = 64;	// the master's limit per kind

int check_config(const ds_store_replicate_config *c, std::string *why)
{
	if (c->flush > DS_STORE_FLUSH_EAGER) {
		*why = "flush must be none, lazy or eager";
		return -EINVAL;
	}
	if (c->prefer_local > 1) {
		*why = "prefer_local must be 0 or 1";
		return -EINVAL;
	}
	// what the master would refuse (INVALID_ARGUMENT) anyway
	if (c->dram_replicas == 0 && c->nvmeof_replicas == 0) {
		*why = "no replicas: dram_replicas and nvmeof_replicas are both 0";
		return -EINVAL;
	}
	if (c->dram_replicas > kReplicasMax || c->nvmeof_replicas > kReplicasMax) {
		*why = "at most " + std::to_string(kReplicasMax) + " replicas of each kind";
		return -EINVAL;
	}
	return 0;
}

int check_iov(const struct iovec *iov, size_t n, uint64_t *total, std::string *why)
{
	*total = 0;
	if (!iov || n == 0) {
		*why = "no buffers";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!iov[i].iov_base && iov[i].iov_len) {
			*why = "buffer " + std::to_string(i) + " is NULL";
			return -EINVAL;
		}
		if (__builtin_add_overflow(*total, iov[i].iov_len, total)) {
			*why = "buffers overflow";
			return -EINVAL;
		}
	}
	return 0;
}

pb::ReplicateConfig to_pb(const ds_store_replicate_config &c)
{
	pb::ReplicateConfig p;
	p.set_dram_replicas(c.dram_replicas);
	p.set_nvmeof_replicas(c.nvmeof_replicas);
	p.set_flush(static_cast<pb::FlushMode>(c.flush));
	p.set_prefer_local(c.prefer_local != 0);
	return p;
}

int64_t realtime_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string member_key(const pb::Member &m)
{
	return m.master() ? "m" + std::to_string(m.node_id()) + "@" + m.addr()
			  : "c" + std::to_string(m.client_id());
}

// The IPv4 address of a network interface.
std::string netdev_addr(const char *netdev)
{
	struct ifaddrs *ifa = nullptr;
	std::string out;
	if (getifaddrs(&ifa))
		return out;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, netdev))
			continue;
		char buf[INET_ADDRSTRLEN];
		auto *sin = reinterpret_cast<struct sockaddr_in *>(i->ifa_addr);
		if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)))
			out = buf;
		break;
	}
	freeifaddrs(ifa);
	return out;
}

// A name for one request, the same on each of its retries: 64 random
// bits, never 0 (none).
uint64_t new_request_id()
{
	thread_local std::mt19937_64 rng{ (static_cast<uint64_t>(std::random_device{}()) << 32) ^
					  std::random_device{}() };
	uint64_t id;
	while (!(id = rng()))
		;
	return id;
}

constexpr uint64_t kSlowChunk = 1 << 20;
constexpr int kPutAttempts = 6;		// the first, then excluding what failed
// how long a put waits for a peer still (re)connecting, or for its grant,
// before it places the replica elsewhere: the node's longest reconnect
// backoff (DSMEM_BACKOFF_MAX_MS, 5 s) and a connect
constexpr auto kPeerSettle = std::chrono::seconds(8);
constexpr int kGetAttempts = 8;
constexpr unsigned kLeaseMarginPct = 20;	// of a Get lease, for the read
constexpr unsigned kPutMarginPct = 10;		// of a put's time, for the commit

}  // namespace

Clock::time_point local_deadline(Clock::time_point sent, int64_t realtime_at_response,
				 int64_t until_ns, unsigned margin_pct)
{
	if (until_ns <= realtime_at_response)
		return sent;
	int64_t span = until_ns - realtime_at_response;
	span -= span / 100 * static_cast<int64_t>(margin_pct);
	return sent + std::chrono::nanoseconds(span);
}

// ---- masters ---------------------------------------------------------------

int Masters::set(const std::string &list, const TlsFiles &tls, std::string *err)
{
	std::lock_guard<std::mutex> g(mu_);
	stubs_.clear();
	addrs_.clear();
	size_t pos = 0;
	while (pos <= list.size()) {
		size_t comma = list.find(',', pos);
		std::string a = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
		while (!a.empty() && a.front() == ' ')
			a.erase(a.begin());
		while (!a.empty() && a.back() == ' ')
			a.pop_back();
		if (!a.empty()) {
			if (a.find(':') == std::string::npos) {
				*err = "master address " + a + " has no port";
				return -EINVAL;
			}
			addrs_.push_back(a);
		}
		if (comma == std::string::npos)
			break;
		pos = comma + 1;
	}
	if (addrs_.empty()) {
		*err = "no master address";
		return -EINVAL;
	}
	if (tls.insecure && !loopback_only(list)) {
		*err = "insecure (plaintext) calls go to masters on loopback only, not to " + list;
		return -EINVAL;
	}
	if (int ret = channel_credentials(tls, &creds_, err))
		return ret;
	cur_ = 0;
	return 0;
}

std::string Masters::leader() const
{
	std::lock_guard<std::mutex> g(mu_);
	return addrs_.empty() ? std::string() : addrs_[cur_];
}

size_t Masters::addrs_size() const
{
	std::lock_guard<std::mutex> g(mu_);
	return std::max<size_t>(addrs_.size(), 1);
}

std::shared_ptr<pb::Master::Stub> Masters::stub_for(const std::string &addr)
{
	auto it = stubs_.find(addr);
	if (it != stubs_.end())
		return it->second.stub;
	grpc::ChannelArguments args;
	args.SetMaxReceiveMessageSize(64 << 20);
	// a dead master should be noticed within seconds, not minutes
	args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
	args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
	// and a connect attempt into a cut link gives up within a second
	// (default 20 s), so that the link's return is noticed at once
	args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
	args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
	args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
	args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
	auto ch = grpc::CreateCustomChannel(addr, creds_, args);
	std::shared_ptr<pb::Master::Stub> stub(pb::Master::NewStub(ch));
	stubs_[addr] = { ch, stub };
	return stub;
}

std::shared_ptr<pb::Master::Stub> Masters::current(std::string *addr)
{
	std::lock_guard<std::mutex> g(mu_);
	*addr = addrs_[cur_];
	return stub_for(*addr);
}

void Masters::follow(const std::string &addr)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = std::find(addrs_.begin(), addrs_.end(), addr);
	if (it == addrs_.end()) {
		// a leader advertised under a name the caller did not list
		addrs_.push_back(addr);
		it = addrs_.end() - 1;
	}
	cur_ = static_cast<size_t>(it - addrs_.begin());
}

void Masters::forget(const std::string &addr)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = stubs_.find(addr);
	if (it != stubs_.end() && it->second.ch->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE)
		stubs_.erase(it);
}

void Masters::advance(const std::string &from)
{
	std::lock_guard<std::mutex> g(mu_);
	if (addrs_[cur_] == from)
		cur_ = (cur_ + 1) % addrs_.size();
}

// ---- tasks -----------------------------------------------------------------

void TaskQueue::start(unsigned workers)
{
	std::lock_guard<std::mutex> g(mu_);
	stopping_ = false;
	for (unsigned i = 0; i < workers; i++)
		workers_.emplace_back([this, i] { worker(i); });
}

int TaskQueue::submit(uint32_t kind, uint32_t timeout_ms, Fn fn, uint64_t *id)
{
	auto t = std::make_shared<Task>();
	t->st.state = DS_STORE_WAITING;
	t->st.kind = kind;
	t->st.version = -1;
	t->st.largest_version = -1;
	t->fn = std::move(fn);
	t->deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	std::lock_guard<std::mutex> g(mu_);
	if (stopping_)
		return -ESHUTDOWN;
	*id = next_id_++;
	tasks_[*id] = t;
	queue_.push_back(*id);
	work_cv_.notify_one();
	return 0;
}

// A WAITING task past its deadline: nobody will start it now.
void TaskQueue::expire(Task &t)
{
	if (t.st.state == DS_STORE_WAITING && Clock::now() >= t.deadline) {
		t.st.state = DS_STORE_TIMEOUT;
		t.st.err = -ETIMEDOUT;
		t.fn = nullptr;
		done_cv_.notify_all();
	}
}

void TaskQueue::worker(unsigned index)
{
	std::unique_lock<std::mutex> lk(mu_);
	for (;;) {
		work_cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
		if (queue_.empty())
			return;		// stopping, nothing left
		uint64_t id = queue_.front();
		queue_.pop_front();
		auto it = tasks_.find(id);
		if (it == tasks_.end())
			continue;	// released while waiting
		std::shared_ptr<Task> t = it->second;
		expire(*t);
		if (t->st.state != DS_STORE_WAITING)
			continue;	// canceled or expired
		if (stopping_) {
			t->st.state = DS_STORE_CANCELED;
			t->st.err = -ECANCELED;
			done_cv_.notify_all();
			continue;
		}
		t->st.state = DS_STORE_PENDING;
		ds_store_task_status st = t->st;
		Fn fn = std::move(t->fn);
		lk.unlock();
		int ret;
		std::string why;
		try {
			ret = fn(index, t->deadline, &st, &why);
		} catch (const std::bad_alloc &) {
			ret = -ENOMEM;
		} catch (...) {
			ret = -EIO;
		}
		fn = nullptr;	// the buffers it captured are the caller's again
		lk.lock();
		if (ret == 0) {
			st.state = DS_STORE_COMPLETE;
		} else if (ret == -ETIMEDOUT) {
			st.state = DS_STORE_TIMEOUT;
			st.err = ret;
		} else if (ret == -EINVAL) {
			// bad arguments, caught by the master (INVALID_ARGUMENT)
			st.state = DS_STORE_INVALID;
			st.err = ret;
		} else {
			st.state = DS_STORE_FAILED;
			st.err = ret;
		}
		st.kind = t->st.kind;
		t->st = st;
		if (ret)
			t->why = std::move(why);
		done_cv_.notify_all();
	}
}

int TaskQueue::query(uint64_t id, int wait_ms, bool release, ds_store_task_status *st,
		     std::string *why)
{
	std::unique_lock<std::mutex> lk(mu_);
	auto until = Clock::now() + std::chrono::milliseconds(wait_ms < 0 ? 0 : wait_ms);
	for (;;) {
		auto it = tasks_.find(id);
		if (it == tasks_.end()) {
			*st = {};
			st->state = DS_STORE_INVALID;
			st->err = -ENOENT;
			st->version = -1;
			st->largest_version = -1;
			return 0;
		}
		std::shared_ptr<Task> t = it->second;
		expire(*t);
		bool is_done = done(*t);
		if (is_done || wait_ms == 0 || (wait_ms > 0 && Clock::now() >= until)) {
			*st = t->st;
			if (why)
				*why = is_done ? t->why : "";
			if (is_done && release)
				tasks_.erase(it);
			return 0;
		}
		// wake for a WAITING task's deadline too, to expire it
		auto wake = t->st.state == DS_STORE_WAITING ? t->deadline : Clock::time_point::max();
		if (wait_ms > 0)
			wake = std::min(wake, until);
		if (wake == Clock::time_point::max())
			done_cv_.wait(lk);
		else
			done_cv_.wait_until(lk, wake);
	}
}

int TaskQueue::cancel(uint64_t id)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = tasks_.find(id);
	if (it == tasks_.end())
		return -ENOENT;
	Task &t = *it->second;
	expire(t);
	if (t.st.state != DS_STORE_WAITING)
		return -EBUSY;
	t.st.state = DS_STORE_CANCELED;
	t.st.err = -ECANCELED;
	t.fn = nullptr;
	queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
	done_cv_.notify_all();
	return 0;
}

void TaskQueue::stop()
{
	std::vector<std::thread> ws;
	{
		std::lock_guard<std::mutex> g(mu_);
		stopping_ = true;
		for (uint64_t id : queue_) {
			auto it = tasks_.find(id);
			if (it != tasks_.end() && it->second->st.state == DS_STORE_WAITING) {
				it->second->st.state = DS_STORE_CANCELED;
				it->second->st.err = -ECANCELED;
				it->second->fn = nullptr;
			}
		}
		queue_.clear();
		ws.swap(workers_);
		work_cv_.notify_all();
		done_cv_.notify_all();
	}
	for (std::thread &w : ws)
		w.join();
}

size_t TaskQueue::size()
{
	std::lock_guard<std::mutex> g(mu_);
	return tasks_.size();
}

// ---- membership ------------------------------------------------------------

ClientCore::~ClientCore()
{
	close(false);
}

Clock::time_point ClientCore::deadline_in(uint32_t ms) const
{
	return Clock::now() + std::chrono::milliseconds(ms);
}

bool ClientCore::peer_exists(uint32_t node, const std::string &addr, uint32_t port)
{
	ds_peer_info *peers = nullptr;
	size_t n = 0;
	if (ds_peer_list(ctx_, cfg_.node_id, &peers, &n))
		return false;
	bool found = false;
	for (size_t i = 0; i < n && !found; i++) {
		const ds_peer_info &p = peers[i];
		if (p.state == DS_PEER_ERROR || p.state == DS_PEER_DOWN)
			continue;
		found = p.remote_node == node ||
			(!p.passive && p.port == port && addr == p.addr);
	}
	free(peers);
	return found;
}

// Whether the node admits the member's node already (a listen peer).
bool ClientCore::listen_exists(uint32_t node, const std::string &addr)
{
	ds_peer_info *peers = nullptr;
	size_t n = 0;
	if (ds_peer_list(ctx_, cfg_.node_id, &peers, &n))
		return false;
	bool found = false;
	for (size_t i = 0; i < n && !found; i++)
		found = peers[i].listen && peers[i].remote_node == node && addr == peers[i].addr;
	free(peers);
	return found;
}

// Grant our segment to the member's node and, from the higher node id,
// connect to it: one connection serves both directions.  The lower id
// admits the higher (its node accepts only the peers it was told about),
// and each end binds the connection to the member's node id.
void ClientCore::apply_member(const pb::Member &m)
{
	if (m.node_id() == 0)
		return;
	std::lock_guard<std::mutex> g(ctx_mu_);
	if (m.node_id() == cfg_.node_id)
		return;		// a member sharing our node reaches us as we do
	if (have_seg_)
		ds_seg_grant(ctx_, cfg_.node_id, seg_.id, m.node_id(), DS_PERM_ALL);
	if (m.addr().empty())
		return;
	if (cfg_.node_id > m.node_id() && !peer_exists(m.node_id(), m.addr(), m.port()))
		ds_peer_add_id(ctx_, cfg_.node_id, m.addr().c_str(), static_cast<uint16_t>(m.port()),
			       m.node_id(), 0, nullptr);
	if (cfg_.node_id < m.node_id() && !listen_exists(m.node_id(), m.addr()))
		ds_peer_add_id(ctx_, cfg_.node_id, m.addr().c_str(), 0, m.node_id(),
			       DS_PEER_LISTEN, nullptr);
}

void ClientCore::member_joined(const pb::Member &m)
{
	{
		std::lock_guard<std::mutex> g(state_mu_);
		members_[member_key(m)] = m;
	}
	apply_member(m);
}

void ClientCore::member_left(const pb::Member &m)
{
	bool others = false;
	{
		std::lock_guard<std::mutex> g(state_mu_);
		members_.erase(member_key(m));
		for (auto &[k, o] : members_)
			others |= o.node_id() == m.node_id();
	}
	if (others || m.node_id() == cfg_.node_id)
		return;
	std::lock_guard<std::mutex> g(ctx_mu_);
	if (have_seg_)
		ds_seg_revoke(ctx_, cfg_.node_id, seg_.id, m.node_id());
}

// Our DRAM segment: the one of this node the master already knows
// (remount: its allocations are intact), else a new one.
int ClientCore::setup_segment(const pb::RegisterClientResponse &r, std::string *err)
{
	if (!cfg_.segment_size)
		return 0;
	bool created = false;
	ds_seg_info mine{};
	{
		std::lock_guard<std::mutex> g(ctx_mu_);
		ds_seg_info *segs = nullptr;
		size_t n = 0;
		if (!have_seg_ && ds_seg_list(ctx_, cfg_.node_id, &segs, &n) == 0) {
			for (size_t i = 0; i < n && !have_seg_; i++) {
				for (const pb::SegmentDesc &d : r.segments()) {
					if (d.type() == pb::SEGMENT_DRAM && d.node_id() == cfg_.node_id &&
					    d.gaddr() == segs[i].addr && segs[i].size == cfg_.segment_size) {
						seg_ = segs[i];
						have_seg_ = true;
						break;
					}
				}
			}
			free(segs);
		}
		if (!have_seg_) {
			int ret = ds_seg_add(ctx_, cfg_.node_id, cfg_.segment_size, -1,
					     DS_TRANSLATE_SEGMENT, &seg_);
			if (ret) {
				*err = std::string("segment of ") + std::to_string(cfg_.segment_size) +
				       " bytes on node " + std::to_string(cfg_.node_id) + ": " +
				       ds_ctx_errmsg(ctx_);
				return ret;
			}
			have_seg_ = true;
			created = true;
		}
		mine = seg_;
	}
	pb::RegisterSegmentRequest req;
	pb::RegisterSegmentResponse resp;
	req.set_client_id(client_id_.load());
	pb::SegmentDesc *d = req.mutable_desc();
	d->set_type(pb::SEGMENT_DRAM);
	d->set_size(mine.size);
	d->set_node_id(cfg_.node_id);
	d->set_gaddr(mine.addr);
	int ret = masters_.call(&pb::Master::Stub::RegisterSegment, req, &resp,
				deadline_in(cfg_.timeout_ms), err);
	if (ret) {
		if (created) {
			std::lock_guard<std::mutex> g(ctx_mu_);
			ds_seg_del(ctx_, cfg_.node_id, mine.id);
			have_seg_ = false;
		}
		*err = "RegisterSegment: " + *err;
		return ret;
	}
	std::lock_guard<std::mutex> g(state_mu_);
	seg_id_ = resp.segment_id();
	return 0;
}

// RegisterClient (again, after a failover, with previous), our segment,
// and the grants and peers for every member.
int ClientCore::join(uint64_t previous, std::string *err)
{
	pb::RegisterClientRequest req;
	pb::RegisterClientResponse resp;
	pb::Member *self = req.mutable_self();
	self->set_node_id(cfg_.node_id);
	self->set_addr(cfg_.addr);
	self->set_port(port_);
	req.set_previous_client_id(previous);
	int ret = masters_.call(&pb::Master::Stub::RegisterClient, req, &resp,
				deadline_in(cfg_.timeout_ms), err);
	if (ret) {
		*err = "RegisterClient: " + *err;
		return ret;
	}
	{
		std::lock_guard<std::mutex> g(state_mu_);
		client_id_ = resp.client_id();
		if (resp.heartbeat_ms())
			heartbeat_ms_ = resp.heartbeat_ms();
		max_object_size_ = resp.max_object_size();
		segs_.clear();
		for (const pb::SegmentDesc &d : resp.segments())
			segs_[d.id()] = d;
		members_.clear();
		for (const pb::Member &m : resp.members())
			members_[member_key(m)] = m;
	}
	// close() may have sent Leave meanwhile (it sets leaving_ under
	// rejoin_mu_, which a rejoin holds): register nothing more
	if (leaving_) {
		*err = "closing";
		return -ESHUTDOWN;
	}
	if ((ret = setup_segment(resp, err)))
		return ret;
	for (const pb::Member &m : resp.members())
		apply_member(m);
	return 0;
}

// A new leader forgot us, or the watch stream broke: join again, unless
// another thread already did since we saw seen_id.
int ClientCore::rejoin(uint64_t seen_id)
{
	std::lock_guard<std::mutex> g(rejoin_mu_);
	if (client_id_.load() != seen_id || stopping_ || leaving_)
		return 0;
	std::string err;
	return join(seen_id, &err);
}

// Until every other member's DRAM segment is granted to our node, the
// first put may pick one we cannot reach yet.
void ClientCore::wait_ready()
{
	auto until = Clock::now() + std::chrono::seconds(5);
	for (;;) {
		std::vector<uint64_t> want;
		{
			std::lock_guard<std::mutex> g(state_mu_);
			for (auto &[id, d] : segs_)
				if (d.type() == pb::SEGMENT_DRAM && d.state() == pb::SEGMENT_ALIVE &&
				    d.node_id() != cfg_.node_id)
					want.push_back(d.gaddr());
		}
		bool ready = true;
		{
			std::lock_guard<std::mutex> g(ctx_mu_);
			if (have_seg_)
				want.push_back(seg_.addr);	// through the loopback peer
			ds_peer_info *peers = nullptr;
			size_t n = 0;
			if (ds_peer_list(ctx_, cfg_.node_id, &peers, &n) == 0) {
				for (uint64_t a : want) {
					bool seen = false, partial = false;
					for (size_t i = 0; i < n && !seen; i++) {
						if (peers[i].state != DS_PEER_UP)
							continue;
						partial |= peers[i].nrsegs < peers[i].rseg_total;
						for (uint32_t k = 0; k < peers[i].nrsegs; k++)
							seen |= peers[i].rsegs[k].addr == a;
					}
					ready &= seen || partial;
				}
				free(peers);
			}
		}
		if (ready || Clock::now() >= until || stopping_)
			return;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
}

bool ClientCore::sleep_or_stop(std::chrono::milliseconds d)
{
	std::unique_lock<std::mutex> lk(stop_mu_);
	return stop_cv_.wait_for(lk, d, [this] { return stopping_.load(); });
}

void ClientCore::heartbeat_loop()
{
	for (;;) {
		uint64_t period;
		{
			std::lock_guard<std::mutex> g(state_mu_);
			period = heartbeat_ms_;
		}
		if (sleep_or_stop(std::chrono::milliseconds(period)))
			return;
		uint64_t id = client_id_.load();
		if (!id)
			continue;	// not registered yet
		pb::HeartbeatRequest req;
		pb::HeartbeatResponse resp;
		req.set_client_id(id);
		std::string err;
		grpc::Status last;
		int ret = masters_.call(&pb::Master::Stub::Heartbeat, req, &resp,
					Clock::now() + std::chrono::milliseconds(2 * period + 500),
					&err, &last);
		if (ret == -ENOENT && !leaving_)	// a new leader that never heard of us
			rejoin(id);
	}
}

// Its own thread: a slow MasterInfo/SegmentList, or grants and peers
// to set up, must not delay a heartbeat.
void ClientCore::reconcile_loop()
{
	if (sleep_or_stop(std::chrono::milliseconds(300)))
		return;
	for (;;) {
		if (!leaving_)
			reconcile_members();
		if (sleep_or_stop(std::chrono::seconds(1)))
			return;
	}
}

// Events sent before our Watch stream was set up are lost: compare the
// members with the master's list now and then, and catch up.
void ClientCore::reconcile_members()
{
	pb::MasterInfoRequest req;
	pb::MasterInfoResponse resp;
	std::string err;
	if (masters_.call(&pb::Master::Stub::MasterInfo, req, &resp, deadline_in(2000), &err))
		return;
	uint64_t self = client_id_.load();
	std::map<std::string, pb::Member> now;
	for (const pb::Member &m : resp.members())
		if (m.master() || m.client_id() != self)
			now[member_key(m)] = m;
	std::vector<pb::Member> joined, left;
	{
		std::lock_guard<std::mutex> g(state_mu_);
		for (auto &[k, m] : now)
			if (!members_.count(k))
				joined.push_back(m);
		for (auto &[k, m] : members_)
			if (!now.count(k))
				left.push_back(m);
	}
	for (const pb::Member &m : joined)
		member_joined(m);
	for (const pb::Member &m : left)
		member_left(m);
	if (joined.empty())
		return;
	// their segments too, for the readiness check and placement lookups
	pb::SegmentListRequest sreq;
	pb::SegmentListResponse sresp;
	if (masters_.call(&pb::Master::Stub::SegmentList, sreq, &sresp, deadline_in(2000), &err))
		return;
	std::lock_guard<std::mutex> g(state_mu_);
	for (const pb::SegmentDesc &d : sresp.segments())
		segs_[d.id()] = d;
}

// The data path reaches segments through connections only: a loopback
// peer lets this node read and write its own segment like any other
// (replicas the master placed here, prefer_local).  Best effort.
void ClientCore::self_peer()
{
	std::lock_guard<std::mutex> g(ctx_mu_);
	if (!have_seg_)
		return;
	ds_seg_grant(ctx_, cfg_.node_id, seg_.id, cfg_.node_id, DS_PERM_ALL);
	if (!peer_exists(cfg_.node_id, cfg_.addr, port_))
		ds_peer_add(ctx_, cfg_.node_id, cfg_.addr.c_str(), port_, nullptr);
}

void ClientCore::watch_loop()
{
	std::chrono::milliseconds backoff(50);
	bool first = true;
	while (!stopping_ && !leaving_) {
		uint64_t id = client_id_.load();
		if (!first) {
			// events may have been missed: join again for the
			// current members (the master keeps our id)
			if (rejoin(id)) {
				if (sleep_or_stop(backoff))
					return;
				backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
				continue;
			}
			id = client_id_.load();
		}
		first = false;
		std::string addr;
		auto stub = masters_.current(&addr);
		grpc::ClientContext ctx;
		{
			std::lock_guard<std::mutex> g(watch_mu_);
			if (stopping_)
				return;
			watch_ctx_ = &ctx;
		}
		pb::WatchRequest req;
		req.set_client_id(id);
		auto reader = stub->Watch(&ctx, req);
		pb::Event ev;
		bool got = false;
		while (reader->Read(&ev)) {
			got = true;
			backoff = std::chrono::milliseconds(50);
			switch (ev.ev_case()) {
			case pb::Event::kMemberJoined:
				member_joined(ev.member_joined());
				break;
			case pb::Event::kMemberLeft:
				member_left(ev.member_left());
				break;
			case pb::Event::kSegmentSetup: {
				std::lock_guard<std::mutex> g(state_mu_);
				segs_[ev.segment_setup().id()] = ev.segment_setup();
				break;
			}
			case pb::Event::kSegmentRemoved: {
				std::lock_guard<std::mutex> g(state_mu_);
				segs_.erase(ev.segment_removed().id());
				break;
			}
			default:
				break;
			}
		}
		grpc::Status s = reader->Finish();
		{
			std::lock_guard<std::mutex> g(watch_mu_);
			watch_ctx_ = nullptr;
		}
		if (stopping_ || leaving_)
			return;
		std::string hint;
		if (s.error_code() == grpc::StatusCode::UNAVAILABLE)
			masters_.forget(addr);
		if (not_leader(s, &hint) && !hint.empty())
			masters_.follow(hint);
		else if (!got)
			masters_.advance(addr);
		if (!got && sleep_or_stop(backoff))
			return;
		if (!got)
			backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
	}
}

// ---- open / close ----------------------------------------------------------

// The configuration with its defaults, and the masters to ask.
int ClientCore::configure(const ClientConfig &cfg, std::string *err)
{
	cfg_ = cfg;
	if (!cfg_.threads)
		cfg_.threads = 4;
	if (!cfg_.timeout_ms)
		cfg_.timeout_ms = 30000;
	return masters_.set(cfg_.masters, cfg_.tls, err);
}

int ClientCore::open(const ClientConfig &cfg, std::string *err)
{
	if (int ret = configure(cfg, err))
		return ret;
	if (!cfg_.node_id) {
		*err = "no node";
		return -EINVAL;
	}
	if (int ret = ds_ctx_open(&ctx_)) {
		*err = ret == -ENOENT ? "the dsmem module is not loaded" : ds_ctx_errmsg(ctx_);
		return ret;
	}
	ds_node_info node{};
	if (int ret = ds_node_get(ctx_, cfg_.node_id, &node)) {
		*err = "node " + std::to_string(cfg_.node_id) + ": " + ds_ctx_errmsg(ctx_);
		return ret;
	}
	port_ = node.port;
	if (cfg_.addr.empty()) {
		ds_dev_info dev{};
		if (ds_dev_get(ctx_, node.dev_name, &dev) == 0)
			for (uint16_t i = 0; i < dev.nports && cfg_.addr.empty(); i++)
				if (dev.ports[i].netdev[0])
					cfg_.addr = netdev_addr(dev.ports[i].netdev);
		if (cfg_.addr.empty()) {
			*err = std::string("no IPv4 address on ") + node.dev_name + "'s netdev; give addr";
			return -EADDRNOTAVAIL;
		}
	}
	for (uint32_t i = 0; i < cfg_.threads; i++) {
		auto w = std::make_unique<Worker>();
		if (int ret = ds_xfer_open(cfg_.node_id, &w->x)) {
			*err = "data path of node " + std::to_string(cfg_.node_id) + ": " + strerror(-ret);
			return ret;
		}
		workers_.push_back(std::move(w));
	}
	// Beat from the moment RegisterClient answers: making and zeroing the
	// segment can outlast the heartbeat timeout on a slow host.  A beat
	// that finds us unknown waits for this first join (rejoin_mu_).
	heartbeat_ = std::thread([this] { heartbeat_loop(); });
	{
		std::lock_guard<std::mutex> g(rejoin_mu_);
		if (int ret = join(0, err))
			return ret;
	}
	self_peer();
	open_ = true;
	reconcile_ = std::thread([this] { reconcile_loop(); });
	watch_ = std::thread([this] { watch_loop(); });
	wait_ready();
	tasks_.start(cfg_.threads);
	return 0;
}

int ClientCore::open_detached(const ClientConfig &cfg, std::string *err)
{
	if (int ret = configure(cfg, err))
		return ret;
	tasks_.start(cfg_.threads);
	return 0;
}

void ClientCore::close(bool drain)
{
	tasks_.stop();
	if (open_) {
		pb::LeaveRequest req;
		pb::LeaveResponse resp;
		req.set_client_id(client_id_.load());
		req.set_drain(drain);
		std::string err;
		{
			// no rejoin in progress, none after: Leave is the last word
			std::lock_guard<std::mutex> g(rejoin_mu_);
			leaving_ = true;
		}
		// a drain copies every replica off: give it time
		auto deadline = deadline_in(drain ? std::max<uint32_t>(cfg_.timeout_ms, 120000)
						  : std::min<uint32_t>(cfg_.timeout_ms, 5000));
		int ret = masters_.call(&pb::Master::Stub::Leave, req, &resp, deadline, &err);
		stopping_ = true;
		{
			std::lock_guard<std::mutex> g(stop_mu_);
			stop_cv_.notify_all();
		}
		{
			std::lock_guard<std::mutex> g(watch_mu_);
			if (watch_ctx_)
				watch_ctx_->TryCancel();
		}
		if (heartbeat_.joinable())
			heartbeat_.join();
		if (reconcile_.joinable())
			reconcile_.join();
		if (watch_.joinable())
			watch_.join();
		// without a drain the kernel keeps the segment, and its objects,
		// for the master to serve or for a remount
		if (drain && ret == 0) {
			std::lock_guard<std::mutex> g(ctx_mu_);
			if (have_seg_)
				ds_seg_del(ctx_, cfg_.node_id, seg_.id);
			have_seg_ = false;
		}
		open_ = false;
	}
	if (heartbeat_.joinable()) {	// an open that failed after it started
		stopping_ = true;
		{
			std::lock_guard<std::mutex> g(stop_mu_);
			stop_cv_.notify_all();
		}
		heartbeat_.join();
	}
	for (auto &w : workers_) {
		for (auto &[addr, r] : w->mrs)
			ds_mr_dereg(w->x, r.second);
		ds_xfer_close(w->x);
	}
	workers_.clear();
	{
		std::lock_guard<std::mutex> g(nvme_mu_);
		nvme_.clear();
	}
	if (ctx_) {
		ds_ctx_close(ctx_);
		ctx_ = nullptr;
	}
}

// ---- buffers and transfers -------------------------------------------------

int ClientCore::buf_reg(void *addr, size_t len, std::string *err)
{
	if (!addr || !len) {
		*err = "no buffer";
		return -EINVAL;
	}
	auto key = reinterpret_cast<uintptr_t>(addr);
	size_t done = 0;
	int ret = 0;
	for (; done < workers_.size(); done++) {
		Worker &w = *workers_[done];
		std::lock_guard<std::mutex> g(w.mu);
		if (w.mrs.count(key)) {
			ret = -EEXIST;
			*err = "buffer already registered";
			break;
		}
		uint32_t mr = 0;
		if ((ret = ds_mr_reg(w.x, addr, len, &mr))) {
			*err = std::string("register buffer: ") + strerror(-ret);
			break;
		}
		w.mrs[key] = {len, mr};
	}
	if (ret) {
		for (size_t i = 0; i < done; i++) {
			Worker &w = *workers_[i];
			std::lock_guard<std::mutex> g(w.mu);
			auto it = w.mrs.find(key);
			ds_mr_dereg(w.x, it->second.second);
			w.mrs.erase(it);
		}
	}
	return ret;
}

int ClientCore::buf_dereg(void *addr, std::string *err)
{
	auto key = reinterpret_cast<uintptr_t>(addr);
	bool found = false;
	for (auto &wp : workers_) {
		std::lock_guard<std::mutex> g(wp->mu);
		auto it = wp->mrs.find(key);
		if (it == wp->mrs.end())
			continue;
		ds_mr_dereg(wp->x, it->second.second);
		wp->mrs.erase(it);
		found = true;
	}
	if (!found) {
		*err = "buffer not registered";
		return -ENOENT;
	}
	return 0;
}

void ClientCore::source(Worker &w, void *p, uint64_t len, ds_transfer_request *r)
{
	auto a = reinterpret_cast<uintptr_t>(p);
	auto it = w.mrs.upper_bound(a);
	if (it != w.mrs.begin()) {
		--it;
		if (a >= it->first && a + len <= it->first + it->second.first) {
			r->mr = it->second.second;
			r->source_offset = a - it->first;
			return;
		}
	}
	r->mr = 0;
	r->source_offset = a;
}

void ClientCore::pieces(const std::vector<iovec> &iov, uint64_t base, uint64_t a, uint64_t b,
		    std::vector<Piece> *out)
{
	for_each_piece(iov, base, a, b,
		       [out](char *p, uint64_t n, uint64_t obj_off) { out->push_back({p, n, obj_off}); });
}

int ClientCore::transfer(Worker &w, const std::vector<ds_transfer_request> &reqs, std::vector<int> *st)
{
	st->assign(reqs.size(), 0);
	std::vector<uint64_t> tasks;
	int ret = 0;
	for (size_t at = 0; at < reqs.size(); at += DS_BATCH_REQS_MAX) {
		size_t n = std::min<size_t>(DS_BATCH_REQS_MAX, reqs.size() - at);
		uint64_t task = 0;
		if ((ret = ds_batch_submit(w.x, reqs.data() + at, n, &task))) {
			for (size_t i = at; i < reqs.size(); i++)
				(*st)[i] = ret;
			break;
		}
		tasks.push_back(task);
	}
	std::vector<ds_transfer_status> ts;
	for (size_t b = 0; b < tasks.size(); b++) {
		size_t at = b * DS_BATCH_REQS_MAX;
		size_t n = std::min<size_t>(DS_BATCH_REQS_MAX, reqs.size() - at);
		ts.assign(n, {});
		int state = 0;
		int r;
		// a signal ends the wait, not the transfer: the RDMA may still
		// land in the caller's buffers or the replica's space, and the
		// task slot is ours until released.  Never return before.
		do
			r = ds_task_query(w.x, tasks[b], 1, 1, &state, ts.data(), n);
		while (r == -EINTR);
		for (size_t i = 0; i < n; i++)
			(*st)[at + i] = r ? r : ts[i].status;
	}
	return ret;
}

int ClientCore::segment(uint64_t id, pb::SegmentDesc *d, Clock::time_point deadline)
{
	{
		std::lock_guard<std::mutex> g(state_mu_);
		auto it = segs_.find(id);
		if (it != segs_.end()) {
			*d = it->second;
			return 0;
		}
	}
	// a segment set up since we last heard
	pb::SegmentListRequest req;
	pb::SegmentListResponse resp;
	std::string err;
	if (int ret = masters_.call(&pb::Master::Stub::SegmentList, req, &resp, deadline, &err))
		return ret;
	std::lock_guard<std::mutex> g(state_mu_);
	for (const pb::SegmentDesc &s : resp.segments())
		segs_[s.id()] = s;
	auto it = segs_.find(id);
	if (it == segs_.end())
		return -ENOENT;
	*d = it->second;
	return 0;
}

int ClientCore::nvmeof_target(const pb::SegmentDesc &d, NvmeofTarget **t, std::string *err)
{
	std::string key = d.traddr() + ":" + std::to_string(d.trsvcid()) + "/" + d.subnqn();
	std::shared_ptr<NvmeSlot> slot;
	{
		std::lock_guard<std::mutex> g(nvme_mu_);
		std::shared_ptr<NvmeSlot> &sp = nvme_[key];
		if (!sp)
			sp = std::make_shared<NvmeSlot>();
		slot = sp;
	}
	// attach once; a failed attach is tried again by the next caller
	std::lock_guard<std::mutex> g(slot->mu);
	if (!slot->t) {
		std::unique_ptr<NvmeofTarget> nt;
		if (int ret = NvmeofTarget::attach(d.traddr(), d.trsvcid(), d.subnqn(), &nt, err))
			return ret;
		slot->t = std::move(nt);
	}
	*t = slot->t.get();
	return 0;
}

// ---- operations ------------------------------------------------------------

int ClientCore::do_put(unsigned worker, Clock::time_point deadline, const std::string &key,
		   const std::vector<iovec> &iov, const ds_store_replicate_config &cfg,
		   ds_store_task_status *st, std::string *why)
{
	uint64_t size = 0;
	for (const iovec &v : iov)
		size += v.iov_len;
	st->bytes = size;
	std::vector<uint64_t> exclude;
	int last_err = -EIO;
	// what every later reader checks the bytes against
	pb::Checksums sums;
	make_sums(iov, size, &sums);

	Clock::time_point settle_until{};
	for (int attempt = 0, waits = 0; attempt < kPutAttempts;) {
		pb::PutStartRequest req;
		pb::PutStartResponse start;
		req.set_client_id(client_id_.load());
		req.set_key(key);
		req.set_size(size);
		*req.mutable_config() = to_pb(cfg);
		for (uint64_t s : exclude)
			req.add_exclude_segments(s);
		// each attempt's reason replaces the last's
		std::string &err = *why;
		err.clear();
		Clock::time_point sent = Clock::now();
		if (int ret = masters_.call(&pb::Master::Stub::PutStart, req, &start, deadline, &err))
			return ret;
		// the master frees the version's space after its deadline: no
		// write may land after it, and the commit must arrive before
		Clock::time_point until = deadline;
		if (start.deadline_ns())
			until = std::min(until, local_deadline(sent, realtime_ns(), start.deadline_ns(),
							       kPutMarginPct));
		auto abort = [&] {
			pb::PutAbortRequest ab;
			pb::PutAbortResponse abr;
			ab.set_client_id(client_id_.load());
			ab.set_key(key);
			ab.set_version(start.version());
			std::string e;
			// best effort, past the task's deadline too (briefly)
			masters_.call(&pb::Master::Stub::PutAbort, ab, &abr,
				      std::max(deadline, Clock::now() + std::chrono::seconds(1)), &e);
		};
		if (worker >= workers_.size()) {
			abort();
			err = "detached: no data path";
			return -ENODEV;
		}
		int nrep = start.replicas_size();
		std::vector<bool> ok(static_cast<size_t>(nrep), true);
		std::vector<uint64_t> failed_segs;

		// every shard of every DRAM replica in one batch; the segments
		// are looked up (maybe an RPC) before the worker's lock
		std::vector<ds_transfer_request> reqs;
		std::vector<void *> srcs;
		std::vector<std::pair<int, uint64_t>> owner;	// replica, segment
		int dram = 0;
		for (int r = 0; r < nrep; r++) {
			const pb::Replica &rep = start.replicas(r);
			if (rep.type() != pb::SEGMENT_DRAM)
				continue;
			dram++;
			uint64_t pos = 0;
			for (const pb::Shard &sh : rep.shards()) {
				pb::SegmentDesc d;
				if (int ret = segment(sh.segment_id(), &d, until)) {
					ok[r] = false;
					failed_segs.push_back(sh.segment_id());
					err = "segment " + std::to_string(sh.segment_id()) + ": " +
					      strerror(-ret);
					pos += sh.length();
					continue;
				}
				std::vector<Piece> ps;
				pieces(iov, 0, pos, pos + sh.length(), &ps);
				for (const Piece &p : ps) {
					ds_transfer_request tr{};
					tr.opcode = DS_OP_WRITE;
					tr.target_id = d.gaddr();
					tr.target_offset = sh.offset() + (p.obj_off - pos);
					tr.length = p.len;
					reqs.push_back(tr);
					srcs.push_back(p.p);
					owner.emplace_back(r, sh.segment_id());
				}
				pos += sh.length();
			}
		}
		if (!reqs.empty() && Clock::now() >= until) {
			for (int r = 0; r < nrep; r++)
				if (start.replicas(r).type() == pb::SEGMENT_DRAM)
					ok[r] = false;
			last_err = -ETIMEDOUT;
		} else if (!reqs.empty()) {
			Worker &w = *workers_[worker];
			std::lock_guard<std::mutex> g(w.mu);
			for (size_t i = 0; i < reqs.size(); i++)
				source(w, srcs[i], reqs[i].length, &reqs[i]);
			std::vector<int> status;
			transfer(w, reqs, &status);
			for (size_t i = 0; i < status.size(); i++) {
				if (status[i]) {
					ok[owner[i].first] = false;
					failed_segs.push_back(owner[i].second);
					last_err = status[i];
					err = "writing to segment " + std::to_string(owner[i].second) +
					      ": " + strerror(-status[i]);
				}
			}
		}
		// NVMe-oF replicas through the block device, flushed to media
		// before they count
		for (int r = 0; r < nrep; r++) {
			const pb::Replica &rep = start.replicas(r);
			if (rep.type() != pb::SEGMENT_NVMEOF)
				continue;
			uint64_t pos = 0;
			for (const pb::Shard &sh : rep.shards()) {
				pb::SegmentDesc d;
				NvmeofTarget *t = nullptr;
				int ret = segment(sh.segment_id(), &d, until);
				if (!ret)
					ret = nvmeof_target(d, &t, &err);
				std::vector<Piece> ps;
				pieces(iov, 0, pos, pos + sh.length(), &ps);
				for (size_t i = 0; !ret && i < ps.size(); i++) {
					if (Clock::now() >= until)
						ret = -ETIMEDOUT;
					else
						ret = t->pwrite(ps[i].p, ps[i].len,
								d.base() + sh.offset() + (ps[i].obj_off - pos),
								&err, until);
				}
				if (!ret)
					ret = t->sync(&err);
				if (ret) {
					ok[r] = false;
					failed_segs.push_back(sh.segment_id());
					last_err = ret;
					break;
				}
				pos += sh.length();
			}
		}

		int dram_ok = 0, any_ok = 0;
		for (int r = 0; r < nrep; r++) {
			any_ok += ok[r];
			dram_ok += ok[r] && start.replicas(r).type() == pb::SEGMENT_DRAM;
		}
		// past the master's deadline its space may be someone else's:
		// no commit
		bool late = Clock::now() >= until;
		// a grant on its way (the peer is up, its grant not yet here)
		// is a moment away: a put does not settle for fewer DRAM
		// replicas for it, as it must for a peer that is gone
		bool short_dram = dram_ok < dram && last_err == -EACCES;
		bool retry = !late && cfg.dram_replicas && dram &&
			     (!dram_ok || short_dram) &&
			     attempt + 1 < kPutAttempts && Clock::now() < deadline;
		if (late || retry || !any_ok) {
			abort();
			Clock::time_point now = Clock::now();
			if (retry && (last_err == -ENOTCONN || last_err == -EACCES)) {
				// a peer still connecting, or a grant on its way:
				// the same segments work a moment later, so this
				// is no attempt -- unless it lasts longer than a
				// peer takes to come back
				if (settle_until == Clock::time_point{})
					settle_until = now + kPeerSettle;
				if (now < settle_until) {
					waits = std::min(waits + 1, 5);
					std::this_thread::sleep_for(std::min<Clock::duration>(
						{std::chrono::milliseconds(200 * waits),
						 settle_until - now, deadline - now}));
					continue;
				}
			}
			if (retry) {
				std::sort(failed_segs.begin(), failed_segs.end());
				for (uint64_t s : failed_segs)
					if (std::find(exclude.begin(), exclude.end(), s) == exclude.end())
						exclude.push_back(s);
				attempt++;
				continue;
			}
			if (late)
				err = "the put's time ran out before its commit";
			return late ? -ETIMEDOUT : last_err;
		}

		pb::PutCommitRequest cr;
		pb::PutCommitResponse commit;
		cr.set_client_id(client_id_.load());
		cr.set_key(key);
		cr.set_version(start.version());
		for (int r = 0; r < nrep; r++)
			if (ok[r])
				cr.add_done(static_cast<uint32_t>(r));
		*cr.mutable_sums() = sums;
		if (int ret = masters_.call(&pb::Master::Stub::PutCommit, cr, &commit, deadline, &err))
			return ret;
		st->version = static_cast<int64_t>(start.version());
		st->dram_replicas = commit.dram_replicas();
		st->nvmeof_replicas = commit.nvmeof_replicas();
		st->flushed = commit.flushed();
		// complete, but not in the slow tier as asked: the master's
		// reason (ENOSPC: a full disk)
		if (cfg.flush == DS_STORE_FLUSH_EAGER && !commit.flushed()) {
			int e = commit.flush_errno();
			st->err = e > 0 ? -e : e < 0 ? e : -EIO;
		}
		return 0;
	}
	return last_err;
}

int ClientCore::read_replica(Worker &w, const pb::Replica &rep, const std::vector<iovec> &iov,
			 uint64_t offset, uint64_t len, Clock::time_point deadline)
{
	uint64_t pos = 0, end = offset + len;
	if (rep.type() == pb::SEGMENT_NVMEOF) {
		for (const pb::Shard &sh : rep.shards()) {
			uint64_t lo = std::max(pos, offset), hi = std::min(pos + sh.length(), end);
			if (lo < hi) {
				pb::SegmentDesc d;
				NvmeofTarget *t = nullptr;
				std::string err;
				int ret = segment(sh.segment_id(), &d, deadline);
				if (!ret)
					ret = nvmeof_target(d, &t, &err);
				std::vector<Piece> ps;
				pieces(iov, offset, lo, hi, &ps);
				for (size_t i = 0; !ret && i < ps.size(); i++) {
					if (Clock::now() >= deadline)
						ret = -ETIMEDOUT;
					else
						ret = t->pread(ps[i].p, ps[i].len,
							       d.base() + sh.offset() + (ps[i].obj_off - pos),
							       &err, deadline);
				}
				if (ret)
					return ret;
			}
			pos += sh.length();
		}
		return 0;
	}
	// the segments first (maybe an RPC), then the worker's lock
	std::vector<ds_transfer_request> reqs;
	std::vector<void *> dsts;
	for (const pb::Shard &sh : rep.shards()) {
		uint64_t lo = std::max(pos, offset), hi = std::min(pos + sh.length(), end);
		if (lo < hi) {
			pb::SegmentDesc d;
			if (int ret = segment(sh.segment_id(), &d, deadline))
				return ret;
			std::vector<Piece> ps;
			pieces(iov, offset, lo, hi, &ps);
			for (const Piece &p : ps) {
				ds_transfer_request tr{};
				tr.opcode = DS_OP_READ;
				tr.target_id = d.gaddr();
				tr.target_offset = sh.offset() + (p.obj_off - pos);
				tr.length = p.len;
				reqs.push_back(tr);
				dsts.push_back(p.p);
			}
		}
		pos += sh.length();
	}
	if (reqs.empty())
		return 0;
	if (Clock::now() >= deadline)
		return -ETIMEDOUT;
	std::vector<int> status;
	{
		std::lock_guard<std::mutex> g(w.mu);
		for (size_t i = 0; i < reqs.size(); i++)
			source(w, dsts[i], reqs[i].length, &reqs[i]);
		transfer(w, reqs, &status);
	}
	for (int s : status)
		if (s)
			return s;
	return 0;
}

int ClientCore::read_slow(const std::string &key, const std::vector<iovec> &iov, uint64_t offset,
		      uint64_t len, uint64_t want, uint64_t *found, uint64_t *got,
		      Clock::time_point deadline)
{
	*found = 0;
	*got = 0;
	for (uint64_t at = offset; at < offset + len;) {
		pb::SlowReadRequest req;
		pb::SlowReadResponse resp;
		uint64_t ask = std::min(kSlowChunk, offset + len - at);
		req.set_key(key);
		req.set_offset(at);
		req.set_length(ask);
		std::string err;
		if (int ret = masters_.call(&pb::Master::Stub::SlowRead, req, &resp, deadline, &err))
			return ret;
		if (resp.version() != want) {
			// not the version the Get named (a newer flush, or an
			// older copy): the caller decides
			*found = resp.version();
			return -ESTALE;
		}
		uint64_t n = std::min<uint64_t>(resp.data().size(), ask);
		if (n == 0)
			break;		// the object ends here
		std::vector<Piece> ps;
		pieces(iov, offset, at, at + n, &ps);
		const char *src = resp.data().data();
		for (const Piece &p : ps) {
			memcpy(p.p, src, p.len);
			src += p.len;
		}
		at += n;
		*got = at - offset;
		if (n < ask)
			break;		// short: the end of the object
	}
	*found = want;
	return 0;
}

// Tell the master: it reads the replica itself and drops it if it agrees
// (our transport may have been the one at fault).  Briefly: the get goes
// on with the next replica whatever the answer.
void ClientCore::report_bad(const pb::ObjectInfo &obj, const pb::Replica &rep,
			    Clock::time_point deadline)
{
	if (!rep.shards_size())
		return;
	pb::ReportReplicaRequest req;
	pb::ReportReplicaResponse resp;
	std::string err;
	req.set_key(obj.key());
	req.set_version(obj.version());
	*req.mutable_first_shard() = rep.shards(0);
	masters_.call(&pb::Master::Stub::ReportReplica, req, &resp,
		      std::min(deadline, Clock::now() + std::chrono::seconds(2)), &err);
}

int ClientCore::do_get(unsigned worker, Clock::time_point deadline, const std::string &key,
		   const std::vector<iovec> &iov, int64_t min_version, uint64_t offset,
		   ds_store_task_status *st, std::string *why)
{
	uint64_t room = 0;
	for (const iovec &v : iov)
		room += v.iov_len;
	int last_err = -EIO;
	// before asking again: false once the deadline is past
	auto back_off = [deadline](int attempt) {
		auto pause = std::min<Clock::duration>(std::chrono::milliseconds(200 * (attempt + 1)),
						      deadline - Clock::now());
		if (pause <= Clock::duration::zero())
			return false;
		std::this_thread::sleep_for(pause);
		return true;
	};

	for (int attempt = 0; attempt < kGetAttempts; attempt++) {
		pb::GetRequest req;
		pb::GetResponse resp;
		req.set_client_id(client_id_.load());
		req.set_key(key);
		req.set_min_version(min_version);
		// each attempt's reason replaces the last's
		std::string &err = *why;
		err.clear();
		Clock::time_point sent = Clock::now();
		if (int ret = masters_.call(&pb::Master::Stub::Get, req, &resp, deadline, &err)) {
			// a min_version no put was given yet: say what there is
			pb::ObjectInfo newest;
			if (ret == -ERANGE && stat(key, &newest, &err) == 0)
				st->largest_version = static_cast<int64_t>(newest.version());
			// no readable replica now: a repair may be copying one
			if (ret == -ENODATA && attempt + 1 < kGetAttempts && back_off(attempt)) {
				last_err = ret;
				continue;
			}
			return ret;
		}
		// the lease on our clock: the master's realtime is not ours
		Clock::time_point lease_end =
			local_deadline(sent, realtime_ns(), resp.lease_until_ns(), kLeaseMarginPct);
		if (worker >= workers_.size()) {
			err = "detached: no data path";
			return -ENODEV;
		}
		const pb::ObjectInfo &obj = resp.object();
		if (resp.below_min_version()) {
			st->largest_version = obj.version() ? static_cast<int64_t>(obj.version()) : -1;
			err = "the newest version is " + std::to_string(obj.version()) +
			      ", older than min_version " + std::to_string(min_version);
			return -ERANGE;
		}
		uint64_t size = obj.size();
		uint64_t len = offset >= size ? 0 : std::min(size - offset, room);
		st->version = static_cast<int64_t>(obj.version());
		st->bytes = len;
		if (!len)
			return 0;

		// replicas nearest first: a shard on our node, DRAM, NVMe-oF
		std::vector<int> order;
		for (int r = 0; r < obj.replicas_size(); r++)
			order.push_back(r);
		auto rank = [&](int r) {
			const pb::Replica &rep = obj.replicas(r);
			if (rep.type() == pb::SEGMENT_NVMEOF)
				return 2;
			for (const pb::Shard &sh : rep.shards()) {
				std::lock_guard<std::mutex> g(state_mu_);
				auto it = segs_.find(sh.segment_id());
				if (it != segs_.end() && it->second.node_id() == cfg_.node_id)
					return 0;
			}
			return 1;
		};
		std::stable_sort(order.begin(), order.end(),
				 [&](int a, int b) { return rank(a) < rank(b); });
		bool read = false;
		for (int r : order) {
			Worker &w = *workers_[worker];
			int ret = read_replica(w, obj.replicas(r), iov, offset, len, deadline);
			// a replica gone bad, or bytes the transport got wrong:
			// never the object; the next copy may be whole
			if (!ret)
				ret = check_sums(obj.sums(), size, iov, offset, len, &err);
			if (ret == -EBADMSG)
				report_bad(obj, obj.replicas(r), deadline);
			if (!ret) {
				read = true;
				break;
			}
			last_err = ret;
			if (ret != -EBADMSG)
				err = std::string("reading a replica of version ") +
				      std::to_string(obj.version()) + ": " + strerror(-ret);
		}
		if (!read && (resp.slow_tier() || obj.flushed() || obj.flushed_version() >= obj.version())) {
			uint64_t found = 0, got = 0;
			int ret = read_slow(key, iov, offset, len, obj.version(), &found, &got, deadline);
			if (ret == -ESTALE) {
				last_err = ret;
				if (Clock::now() >= deadline)
					return -ETIMEDOUT;
				// a newer version was flushed meanwhile: locate
				// it (its replicas may be readable); an older
				// copy: ask again, the master may have moved on
				if (found > obj.version())
					min_version = std::max<int64_t>(min_version,
									static_cast<int64_t>(found));
				continue;
			}
			if (!ret)
				ret = check_sums(obj.sums(), size, iov, offset, got, &err);
			if (ret)
				return ret;
			st->bytes = got;
			return 0;
		}
		if (!read) {
			// the master may re-replicate meanwhile, and a peer that
			// is still connecting (-ENOTCONN) or a grant on its way
			// (-EACCES) is there a moment later: back off, then ask
			if (!back_off(attempt))
				return -ETIMEDOUT;
			continue;
		}
		if (Clock::now() <= lease_end)
			return 0;
		// the lease (less a margin) may have run out while we read:
		// the bytes are good only if the version was not collected
		// meanwhile
		pb::GetRequest again;
		pb::GetResponse check;
		again.set_client_id(client_id_.load());
		again.set_key(key);
		again.set_min_version(static_cast<int64_t>(obj.version()));
		if (masters_.call(&pb::Master::Stub::Get, again, &check, deadline, &err) == 0 &&
		    !check.below_min_version() && check.object().version() == obj.version())
			return 0;
		min_version = std::max<int64_t>(min_version, static_cast<int64_t>(obj.version()));
		last_err = -ESTALE;
	}
	return last_err;
}

// ---- submission ------------------------------------------------------------

int ClientCore::put(const char *key, const struct iovec *iov, size_t n,
		const ds_store_replicate_config *cfg, uint64_t *task, std::string *err)
{
	uint64_t total = 0;
	if (int ret = check_key(key, err))
		return ret;
	if (int ret = check_iov(iov, n, &total, err))
		return ret;
	if (!total) {
		*err = "empty object";
		return -EINVAL;
	}
	uint64_t max_size = max_object_size_.load();
	if (max_size && total > max_size) {
		*err = "object of " + std::to_string(total) + " bytes is over the limit of " +
		       std::to_string(max_size);
		return -EINVAL;
	}
	ds_store_replicate_config c{1, 0, DS_STORE_FLUSH_NONE, 0};
	if (cfg)
		c = *cfg;
	if (int ret = check_config(&c, err))
		return ret;
	if (!task) {
		*err = "no task pointer";
		return -EINVAL;
	}
	std::string k(key);
	std::vector<iovec> v(iov, iov + n);
	std::lock_guard<std::mutex> lk(puts_mu_);
	int ret = tasks_.submit(DS_STORE_TASK_PUT, cfg_.timeout_ms,
				[this, k, v, c](unsigned w, Clock::time_point d, ds_store_task_status *st,
						std::string *why) { return do_put(w, d, k, v, c, st, why); },
				task);
	if (!ret) {
		std::vector<uint64_t> &ids = puts_by_key_[k];
		std::erase_if(ids, [this](uint64_t id) {
			ds_store_task_status st{};
			tasks_.query(id, 0, false, &st);
			return st.state > DS_STORE_PENDING;
		});
		ids.push_back(*task);
	}
	return ret;
}

// The puts of key submitted so far and maybe not done; forgets done ones.
std::vector<uint64_t> ClientCore::earlier_puts(const std::string &key)
{
	std::lock_guard<std::mutex> lk(puts_mu_);
	auto it = puts_by_key_.find(key);
	if (it == puts_by_key_.end())
		return {};
	std::erase_if(it->second, [this](uint64_t id) {
		ds_store_task_status st{};
		tasks_.query(id, 0, false, &st);
		return st.state > DS_STORE_PENDING;
	});
	std::vector<uint64_t> ids = it->second;
	if (ids.empty())
		puts_by_key_.erase(it);
	return ids;
}

int ClientCore::get(const char *key, const struct iovec *iov, size_t n, int64_t min_version,
		uint64_t offset, uint64_t *task, std::string *err)
{
	uint64_t total = 0;
	if (int ret = check_key(key, err))
		return ret;
	if (int ret = check_iov(iov, n, &total, err))
		return ret;
	if (min_version < -1) {
		*err = "min_version must be -1 or a version";
		return -EINVAL;
	}
	if (!task) {
		*err = "no task pointer";
		return -EINVAL;
	}
	std::string k(key);
	std::vector<iovec> v(iov, iov + n);
	return tasks_.submit(DS_STORE_TASK_GET, cfg_.timeout_ms,
			     [this, k, v, min_version, offset](unsigned w, Clock::time_point d,
							       ds_store_task_status *st, std::string *why) {
				     return do_get(w, d, k, v, min_version, offset, st, why);
			     },
			     task);
}

int ClientCore::replicate(const char *key, const ds_store_replicate_config *cfg, uint64_t *task,
		      std::string *err)
{
	if (int ret = check_key(key, err))
		return ret;
	if (!cfg || !task) {
		*err = cfg ? "no task pointer" : "no replicate config";
		return -EINVAL;
	}
	if (int ret = check_config(cfg, err))
		return ret;
	pb::ReplicateRequest req;
	req.set_key(key);
	*req.mutable_config() = to_pb(*cfg);
	return tasks_.submit(DS_STORE_TASK_REPLICATE, cfg_.timeout_ms,
			     [this, req](unsigned, Clock::time_point d, ds_store_task_status *st,
					 std::string *why) {
				     pb::ReplicateResponse resp;
				     int ret = masters_.call(&pb::Master::Stub::Replicate, req, &resp, d, why);
				     if (ret)
					     return ret;
				     st->version = static_cast<int64_t>(resp.version());
				     st->dram_replicas = resp.dram_replicas();
				     st->nvmeof_replicas = resp.nvmeof_replicas();
				     st->flushed = resp.flushed();
				     return 0;
			     },
			     task);
}

int ClientCore::del(const char *key, uint64_t *task, std::string *err)
{
	if (int ret = check_submit(key, task, err))
		return ret;
	pb::DelRequest req;
	req.set_key(key);
	// a retry at another master must not delete what came after
	// (or find nothing and say so) if the first attempt did it
	req.set_request_id(new_request_id());
	return tasks_.submit(DS_STORE_TASK_DEL, cfg_.timeout_ms,
			     [this, req](unsigned, Clock::time_point d, ds_store_task_status *,
					 std::string *why) {
				     pb::DelResponse resp;
				     return masters_.call(&pb::Master::Stub::Del, req, &resp, d, why);
			     },
			     task);
}

int ClientCore::sync(const char *key, uint64_t *task, std::string *err)
{
	if (int ret = check_submit(key, task, err))
		return ret;
	pb::SyncRequest req;
	req.set_key(key);
	// Tasks run in submission order, so these puts have started (or
	// ended) by the time the sync runs: waiting on them cannot deadlock.
	std::vector<uint64_t> before = earlier_puts(key);
	return tasks_.submit(DS_STORE_TASK_SYNC, cfg_.timeout_ms,
			     [this, req, before](unsigned, Clock::time_point d, ds_store_task_status *st,
						 std::string *why) {
				     for (uint64_t id : before) {
					     ds_store_task_status pst{};
					     auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
						     d - Clock::now()).count();
					     if (left <= 0)
						     return -ETIMEDOUT;
					     tasks_.query(id, static_cast<int>(std::min<int64_t>(left, INT32_MAX)),
							  false, &pst);
					     if (pst.state <= DS_STORE_PENDING)
						     return -ETIMEDOUT;
				     }
				     pb::SyncResponse resp;
				     int ret = masters_.call(&pb::Master::Stub::Sync, req, &resp, d, why);
				     if (!ret)
					     st->version = resp.version() ? static_cast<int64_t>(resp.version()) : -1;
				     return ret;
			     },
			     task);
}

int ClientCore::list(const std::string &prefix, const std::string &after, uint32_t limit,
		 pb::ListResponse *out, std::string *err)
{
	pb::ListRequest req;
	req.set_prefix(prefix);
	req.set_start_after(after);
	req.set_limit(limit);
	return masters_.call(&pb::Master::Stub::List, req, out, deadline_in(cfg_.timeout_ms), err);
}

// The newest complete version, without taking a Get lease: the first
// key of a listing by the key itself is the key, if it exists.
int ClientCore::stat(const std::string &key, pb::ObjectInfo *out, std::string *err)
{
	pb::ListResponse resp;
	if (int ret = list(key, "", 1, &resp, err))
		return ret;
	if (resp.objects_size() == 0 || resp.objects(0).key() != key) {
		*err = "no object " + key;
		return -ENOENT;
	}
	*out = resp.objects(0);
	return 0;
}

}  // namespace dsmem::store
