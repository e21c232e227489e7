// SPDX-License-Identifier: BSD-2-Clause
// A get: a lease on a version, its replicas read (RDMA, NVMe-oF, the
// slow tier) and checked, a bad one reported.
#include "client.hpp"
#include "checksum.hpp"
#include "shards.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dsmem::store {

namespace {

constexpr uint64_t kSlowChunk = 1 << 20;
constexpr int kGetAttempts = 8;
constexpr unsigned kLeaseMarginPct = 20;	// of a Get lease, for the read

}  // namespace

char *ClientCore::scratch(Worker &w, uint64_t n)
{
	if (w.scratch.size() >= n)
		return w.scratch.data();
	// Registered like a caller's buffer, so that a get that has one
	// keeps the handle's rings; unregistered (a plain pointer, pinned
	// by each transfer) if the module will not.  Under the handle's
	// lock: buf_reg and buf_dereg walk mrs from other threads.
	std::lock_guard<std::mutex> g(w.mu);
	auto it = w.mrs.find(reinterpret_cast<uintptr_t>(w.scratch.data()));
	if (!w.scratch.empty() && it != w.mrs.end()) {
		ds_mr_dereg(w.x, it->second.second);
		w.mrs.erase(it);
	}
	w.scratch.assign(n, 0);
	w.scratch.shrink_to_fit();
	uint32_t mr = 0;
	if (ds_mr_reg(w.x, w.scratch.data(), n, &mr) == 0)
		w.mrs[reinterpret_cast<uintptr_t>(w.scratch.data())] = { n, mr };
	return w.scratch.data();
}

int ClientCore::read_replica(Worker &w, const pb::Replica &rep, const std::vector<iovec> &iov,
			 uint64_t offset, uint64_t len, Clock::time_point deadline)
{
	uint64_t end = offset + len;
	if (rep.type() == pb::SEGMENT_NVMEOF) {
		std::string err;
		return for_each_shard(rep.shards(), shard_length, offset, end,
				      [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
			return nvmeof_io(false, sh, first, iov, offset, lo, hi, deadline, &err);
		});
	}
	// the segments first (maybe an RPC), then the worker's lock
	std::vector<ds_transfer_request> reqs;
	std::vector<void *> dsts;
	if (int ret = for_each_shard(rep.shards(), shard_length, offset, end,
				     [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
		pb::SegmentDesc d;
		if (int r = segment(sh.segment_id(), &d, deadline))
			return r;
		shard_requests(DS_OP_READ, d, sh, first, iov, offset, lo, hi, &reqs, &dsts);
		return 0;
	}))
		return ret;
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
			answer_deadline(sent, resp.has_lease_left_ns(), resp.lease_left_ns(),
					resp.lease_until_ns(), kLeaseMarginPct);
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
		// sums no reader can check (none, or not this object's): no
		// replica can make the bytes good
		if (int ret = valid_sums(obj.sums(), size, &err))
			return ret;

		// Every byte returned is checked, and a checksum covers a whole
		// chunk: the chunks the range cuts (at most its first and its
		// last) are read whole, their bytes outside the range into the
		// worker's scratch.  A range of whole chunks reads no more.
		Worker &w = *workers_[worker];
		uint64_t chunk = obj.sums().chunk_size();
		SumSpan span = sum_span(offset, len, size, chunk);
		uint64_t head = offset - span.lo, tail = span.hi - (offset + len);
		const std::vector<iovec> *wide = &iov;
		if (head || tail) {
			char *buf = scratch(w, head + tail);
			w.wide.clear();
			if (head)
				w.wide.push_back({ buf, head });
			for_each_piece(iov, 0, 0, len, [&w](char *p, uint64_t n, uint64_t) {
				w.wide.push_back({ p, n });
			});
			if (tail)
				w.wide.push_back({ buf + head, tail });
			wide = &w.wide;
		}

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
			int ret = read_replica(w, obj.replicas(r), *wide, span.lo, span.hi - span.lo,
					       deadline);
			// a replica gone bad, or bytes the transport got wrong:
			// never the object; the next copy may be whole
			if (!ret)
				ret = check_sums(obj.sums(), size, *wide, span.lo, span.hi - span.lo,
						 &err);
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
			int ret = read_slow(key, *wide, span.lo, span.hi - span.lo, obj.version(), &found,
					    &got, deadline);
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
			// a short copy: only its whole chunks can be checked, and
			// only checked bytes are returned
			uint64_t end = span.lo + got;
			if (end != size)
				end -= end % chunk;
			if (!ret)
				ret = check_sums(obj.sums(), size, *wide, span.lo, end - span.lo, &err);
			if (ret)
				return ret;
			st->bytes = end > offset ? std::min(len, end - offset) : 0;
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

}  // namespace dsmem::store
