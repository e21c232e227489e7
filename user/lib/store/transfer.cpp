// SPDX-License-Identifier: BSD-2-Clause
// The client's data path: registered buffers, RDMA batches through a
// worker's ds_xfer, segments by id, NVMe-oF targets.
#include "client.hpp"
#include "checksum.hpp"

#include <algorithm>
#include <ctime>
#include <cerrno>

namespace dsmem::store {

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

void ClientCore::shard_requests(uint32_t opcode, const pb::SegmentDesc &d, const pb::Shard &sh,
				uint64_t start, const std::vector<iovec> &iov, uint64_t base, uint64_t lo,
				uint64_t hi, std::vector<ds_transfer_request> *reqs, std::vector<void *> *bufs)
{
	std::vector<Piece> ps;
	pieces(iov, base, lo, hi, &ps);
	for (const Piece &p : ps) {
		ds_transfer_request tr{};
		tr.opcode = opcode;
		tr.target_id = d.gaddr();
		tr.target_offset = sh.offset() + (p.obj_off - start);
		tr.length = p.len;
		reqs->push_back(tr);
		bufs->push_back(p.p);
	}
}

int ClientCore::nvmeof_io(bool write, const pb::Shard &sh, uint64_t start, const std::vector<iovec> &iov,
			  uint64_t base, uint64_t lo, uint64_t hi, Clock::time_point deadline,
			  std::string *err)
{
	pb::SegmentDesc d;
	NvmeofTarget *t = nullptr;
	int ret = segment(sh.segment_id(), &d, deadline);
	if (!ret)
		ret = nvmeof_target(d, &t, err);
	std::vector<Piece> ps;
	pieces(iov, base, lo, hi, &ps);
	for (size_t i = 0; !ret && i < ps.size(); i++) {
		uint64_t at = d.base() + sh.offset() + (ps[i].obj_off - start);
		if (Clock::now() >= deadline)
			ret = -ETIMEDOUT;
		else if (write)
			ret = t->pwrite(ps[i].p, ps[i].len, at, err, deadline);
		else
			ret = t->pread(ps[i].p, ps[i].len, at, err, deadline);
	}
	if (!ret && write)
		ret = t->sync(err);
	return ret;
}

/*
 * not_after on our clock as an instant of CLOCK_BOOTTIME, the module's (0:
 * none): a span from now, so that a step of either clock moves nothing,
 * and one already over is 1 ns, long past.
 */
static uint64_t boottime_instant(Clock::time_point not_after)
{
	if (not_after == Clock::time_point::max())
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(not_after - Clock::now()).count();
	if (left <= 0)
		return 1;
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec) +
	       static_cast<uint64_t>(left);
}

int ClientCore::transfer(Worker &w, const std::vector<ds_transfer_request> &reqs, std::vector<int> *st,
			 Clock::time_point not_after)
{
	st->assign(reqs.size(), 0);
	std::vector<uint64_t> tasks;
	int ret = 0;
	// The instant goes to the module, which reads its clock at each
	// post: this process may be stopped for any time after its own look
	// at the deadline, and a write that starts late could land in space
	// the master has given to another put.  A module without it has
	// only that look (the caller's) to go by.
	uint64_t until = boottime_instant(not_after);
	for (size_t at = 0; at < reqs.size(); at += DS_BATCH_REQS_MAX) {
		size_t n = std::min<size_t>(DS_BATCH_REQS_MAX, reqs.size() - at);
		uint64_t task = 0;
		ret = until ? ds_batch_submit_until(w.x, reqs.data() + at, n, until, &task) : -EOPNOTSUPP;
		if (ret == -EOPNOTSUPP)
			ret = ds_batch_submit(w.x, reqs.data() + at, n, &task);
		if (ret) {
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

}  // namespace dsmem::store
