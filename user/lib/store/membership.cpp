// SPDX-License-Identifier: BSD-2-Clause
// The client as a member of the store: joining, heartbeats, the watch
// stream, and the grants and peers every other member needs.
#include "client.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dsmem::store {

namespace {

std::string member_key(const pb::Member &m)
{
	return m.master() ? "m" + std::to_string(m.node_id()) + "@" + m.addr()
			  : "c" + std::to_string(m.client_id());
}

}  // namespace

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
		retry_window_ms_ = resp.retry_window_ms() ? resp.retry_window_ms() : kOldRetryWindowMs;
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
	int ret = join(seen_id, &err);
	if (!ret) {
		std::lock_guard<std::mutex> hg(health_mu_);
		rejoins_++;
	}
	return ret;
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
		int64_t sent = std::chrono::duration_cast<std::chrono::nanoseconds>(
				       std::chrono::steady_clock::now().time_since_epoch())
				       .count();
		int ret = masters_.call(&pb::Master::Stub::Heartbeat, req, &resp,
					Clock::now() + std::chrono::milliseconds(2 * period + 500),
					&err, &last);
		{
			// A leader that forgot us answered: the beat got through.
			std::lock_guard<std::mutex> g(health_mu_);
			if (ret == 0 || ret == -ENOENT) {
				beats_ok_++;
				last_ok_ns_ = sent;
			} else {
				beats_failed_++;
				last_failed_ns_ = sent;
				last_error_ = ret;
			}
		}
		if (ret == -ENOENT && !leaving_)	// a new leader that never heard of us
			rejoin(id);
	}
}

void ClientCore::health(ds_store_health *h) const
{
	std::lock_guard<std::mutex> g(health_mu_);
	*h = {};
	h->client_id = client_id_.load();
	h->beats_ok = beats_ok_;
	h->beats_failed = beats_failed_;
	h->rejoins = rejoins_;
	h->last_ok_ns = static_cast<uint64_t>(last_ok_ns_);
	h->last_failed_ns = static_cast<uint64_t>(last_failed_ns_);
	h->last_error = last_error_;
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
			case pb::Event::kSegmentDraining: {
				// still read from until it is removed; nothing new lands there
				std::lock_guard<std::mutex> g(state_mu_);
				segs_[ev.segment_draining().id()] = ev.segment_draining();
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

}  // namespace dsmem::store
