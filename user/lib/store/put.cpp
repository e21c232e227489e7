// SPDX-License-Identifier: BSD-2-Clause
// A put: the master places the replicas, the client writes them (RDMA,
// NVMe-oF) and commits, retrying around what failed.
#include "client.hpp"
#include "checksum.hpp"
#include "settle.hpp"
#include "shards.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace dsmem::store {

namespace {

constexpr int kPutAttempts = 6;		// the first, then excluding what failed
constexpr unsigned kPutMarginPct = 10;		// of a put's time, for the commit

}  // namespace

int ClientCore::do_put(unsigned worker, Clock::time_point deadline, const std::string &key,
		   const std::vector<iovec> &iov, const ds_store_replicate_config &cfg,
		   const PutAttrs &attrs, ds_store_task_status *st, std::string *why)
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
		// one name per attempt, kept by masters_.call's retries
		req.set_request_id(new_request_id());
		req.set_key(key);
		req.set_size(size);
		*req.mutable_config() = to_pb(cfg);
		req.mutable_config()->set_soft_pin(attrs.soft_pin);
		req.mutable_config()->set_ttl_ms(attrs.ttl_ms);
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
			until = std::min(until, answer_deadline(sent, start.has_deadline_left_ns(),
								start.deadline_left_ns(),
								start.deadline_ns(), kPutMarginPct));
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
		// a master that does not know the attributes ignored them: the
		// object would be evicted or kept against the caller's wish
		if (attrs.any() && !start.attrs()) {
			abort();
			err = masters_.leader() + ": the master keeps no soft pin or TTL "
			      "(an older dsmaster); nothing was put";
			return -EOPNOTSUPP;
		}
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
			for_each_shard(rep.shards(), shard_length, 0, size,
				       [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
				pb::SegmentDesc d;
				if (int ret = segment(sh.segment_id(), &d, until)) {
					ok[r] = false;
					failed_segs.push_back(sh.segment_id());
					err = "segment " + std::to_string(sh.segment_id()) + ": " +
					      strerror(-ret);
					return 0;	// the replica's other shards still go
				}
				shard_requests(DS_OP_WRITE, d, sh, first, iov, 0, lo, hi, &reqs, &srcs);
				owner.resize(reqs.size(), { r, sh.segment_id() });
				return 0;
			});
		}
		if (!reqs.empty()) {
			Worker &w = *workers_[worker];
			std::lock_guard<std::mutex> g(w.mu);
			for (size_t i = 0; i < reqs.size(); i++)
				source(w, srcs[i], reqs[i].length, &reqs[i]);
			// The deadline, checked last before the writes (after the
			// worker's lock and the staging copy, which may take a
			// while): the master gives the space to another put once
			// its write grace past the deadline is over, and a write
			// begun before the deadline ends within that grace.
			std::vector<int> status;
			if (Clock::now() >= until) {
				for (int r = 0; r < nrep; r++)
					if (start.replicas(r).type() == pb::SEGMENT_DRAM)
						ok[r] = false;
				last_err = -ETIMEDOUT;
			} else {
				transfer(w, reqs, &status, until);
			}
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
			for_each_shard(rep.shards(), shard_length, 0, size,
				       [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
				int ret = nvmeof_io(true, sh, first, iov, 0, lo, hi, until, &err);
				if (ret) {
					ok[r] = false;
					failed_segs.push_back(sh.segment_id());
					last_err = ret;
				}
				return ret;
			});
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
			if (retry && peer_settling(last_err)) {
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

}  // namespace dsmem::store
