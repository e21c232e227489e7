// SPDX-License-Identifier: BSD-2-Clause
// The object store's client (see client.hpp and store.h): opening and
// closing it.  Its other concerns are beside it: errors.cpp, masters.cpp,
// tasks.cpp, membership.cpp, transfer.cpp, put.cpp, get.cpp, submit.cpp.
#include "client.hpp"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace dsmem::store {

namespace {

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

}  // namespace

ClientCore::~ClientCore()
{
	close(false);
}

Clock::time_point ClientCore::deadline_in(uint32_t ms) const
{
	return Clock::now() + std::chrono::milliseconds(ms);
}

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
	// someone else's: its port and device were not told, and it is not ours
	if (node.flags & DS_NODE_F_NOT_YOURS) {
		*err = "node " + std::to_string(cfg_.node_id) +
		       ": its owner, group and mode do not let this user use it";
		return -EACCES;
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

int ClientCore::close(bool drain, uint64_t deadline_ms, uint64_t *moved, std::string *err)
{
	int ret = 0;
	if (moved)
		*moved = 0;
	tasks_.stop();
	if (open_) {
		pb::LeaveRequest req;
		pb::LeaveResponse resp;
		req.set_client_id(client_id_.load());
		req.set_drain(drain);
		std::string lerr;
		{
			// no rejoin in progress, none after: Leave is the last word
			std::lock_guard<std::mutex> g(rejoin_mu_);
			leaving_ = true;
		}
		// a drain copies every replica off: the master stops it at its
		// deadline (DEADLINE_EXCEEDED), the RPC's a little later
		uint64_t dms = deadline_ms ? deadline_ms : std::max<uint32_t>(cfg_.timeout_ms, 120000);
		req.set_deadline_ms(drain ? dms : 0);
		auto deadline = deadline_in(drain ? static_cast<uint32_t>(std::min<uint64_t>(
							    dms + 10000, UINT32_MAX))
						  : std::min<uint32_t>(cfg_.timeout_ms, 5000));
		ret = masters_.call(&pb::Master::Stub::Leave, req, &resp, deadline, &lerr);
		if (moved && !ret)
			*moved = resp.moved();
		if (drain && ret) {
			// the master keeps what did not move, readable: leave without
			// the drain and it reclaims the rest in the background
			if (err)
				*err = lerr;
			pb::LeaveRequest plain;
			plain.set_client_id(req.client_id());
			std::string perr;
			masters_.call(&pb::Master::Stub::Leave, plain, &resp,
				      deadline_in(std::min<uint32_t>(cfg_.timeout_ms, 5000)), &perr);
		}
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
	return ret;
}

}  // namespace dsmem::store
