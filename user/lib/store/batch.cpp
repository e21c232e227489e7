// SPDX-License-Identifier: BSD-2-Clause
// Batches: many keys in one master round trip and their bytes in one
// ds_batch_submit.  A key the fast path cannot finish (a replica that
// failed, a checksum that did not match, a slow tier copy, a lease run
// out) goes the single call's way, with its retries; each key gets its
// own result.
#include "client.hpp"
#include "checksum.hpp"
#include "shards.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dsmem::store {

namespace {

constexpr unsigned kPutMarginPct = 10;		// as put.cpp: a put's time, for the commit
constexpr unsigned kLeaseMarginPct = 20;	// as get.cpp: a lease's, for the read

int item_errno(const pb::ItemStatus &s)
{
	return status_to_errno(grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message()));
}

}  // namespace

void ClientCore::batch_result(BatchItem &it, int err, int64_t version, uint64_t bytes)
{
	it.out->err = err;
	it.out->version = version;
	it.out->bytes = bytes;
}

int ClientCore::batch_end(std::vector<BatchItem> &items, ds_store_task_status *st, std::string *why)
{
	st->version = -1;
	st->bytes = 0;
	int first = 0;
	size_t failed = 0;
	for (const BatchItem &it : items) {
		st->bytes += it.out->err ? 0 : it.out->bytes;
		if (it.out->err) {
			failed++;
			if (!first) {
				first = it.out->err;
				*why = "'" + it.key.substr(0, 64) + "': " +
				       (it.why.empty() ? strerror(-first) : it.why);
			}
		}
	}
	// complete: every key has its answer; err names the first that failed
	st->err = first;
	if (failed > 1)
		*why += " (and " + std::to_string(failed - 1) + " more keys)";
	return 0;
}

int ClientCore::do_batch_put(unsigned worker, Clock::time_point deadline,
			     std::vector<BatchItem> &items, const ds_store_replicate_config &cfg,
			     const PutAttrs &attrs, ds_store_task_status *st, std::string *why)
{
	const size_t n = items.size();
	std::vector<uint64_t> sizes(n);
	std::vector<pb::Checksums> sums(n);
	pb::BatchPutStartRequest req;
	for (size_t i = 0; i < n; i++) {
		for (const iovec &v : items[i].iov)
			sizes[i] += v.iov_len;
		make_sums(items[i].iov, sizes[i], &sums[i]);
		pb::PutStartRequest *q = req.add_items();
		q->set_client_id(client_id_.load());
		q->set_request_id(new_request_id());
		q->set_key(items[i].key);
		q->set_size(sizes[i]);
		*q->mutable_config() = to_pb(cfg);
		q->mutable_config()->set_soft_pin(attrs.soft_pin);
		q->mutable_config()->set_ttl_ms(attrs.ttl_ms);
	}
	pb::BatchPutStartResponse start;
	Clock::time_point sent = Clock::now();
	if (int ret = masters_.call(&pb::Master::Stub::BatchPutStart, req, &start, deadline, why))
		return ret;
	if (start.status_size() != static_cast<int>(n) || start.results_size() != static_cast<int>(n)) {
		*why = "the master answered " + std::to_string(start.results_size()) + " of " +
		       std::to_string(n) + " keys";
		return -EPROTO;
	}
	std::vector<bool> fallback(n, false), committing(n, false);
	std::vector<Clock::time_point> until(n, deadline);
	std::vector<std::vector<bool>> ok(n);
	pb::BatchPutCommitRequest commit;
	auto abort = [&](size_t i) {
		pb::PutAbortRequest ab;
		pb::PutAbortResponse abr;
		ab.set_client_id(client_id_.load());
		ab.set_key(items[i].key);
		ab.set_version(start.results(static_cast<int>(i)).version());
		std::string e;
		masters_.call(&pb::Master::Stub::PutAbort, ab, &abr,
			      std::max(deadline, Clock::now() + std::chrono::seconds(1)), &e);
	};

	// every shard of every DRAM replica of every key: one transfer
	std::vector<ds_transfer_request> reqs;
	std::vector<void *> srcs;
	std::vector<std::pair<size_t, int>> owner;	// key, replica
	for (size_t i = 0; i < n; i++) {
		const pb::ItemStatus &s = start.status(static_cast<int>(i));
		const pb::PutStartResponse &p = start.results(static_cast<int>(i));
		if (s.code()) {
			items[i].why = s.message();
			batch_result(items[i], item_errno(s), -1, 0);
			continue;
		}
		if (attrs.any() && !p.attrs()) {
			abort(i);
			items[i].why = "the master keeps no soft pin or TTL (an older dsmaster)";
			batch_result(items[i], -EOPNOTSUPP, -1, 0);
			continue;
		}
		if (worker >= workers_.size()) {
			abort(i);
			items[i].why = "detached: no data path";
			batch_result(items[i], -ENODEV, -1, 0);
			continue;
		}
		if (p.deadline_ns())
			until[i] = std::min(deadline,
					    answer_deadline(sent, p.has_deadline_left_ns(),
							    p.deadline_left_ns(), p.deadline_ns(),
							    kPutMarginPct));
		ok[i].assign(static_cast<size_t>(p.replicas_size()), true);
		committing[i] = true;
		for (int r = 0; r < p.replicas_size(); r++) {
			const pb::Replica &rep = p.replicas(r);
			if (rep.type() == pb::SEGMENT_DRAM) {
				for_each_shard(rep.shards(), shard_length, 0, sizes[i],
					       [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
					pb::SegmentDesc d;
					if (segment(sh.segment_id(), &d, until[i])) {
						ok[i][static_cast<size_t>(r)] = false;
						return 0;
					}
					shard_requests(DS_OP_WRITE, d, sh, first, items[i].iov, 0, lo, hi,
						       &reqs, &srcs);
					owner.resize(reqs.size(), { i, r });
					return 0;
				});
				continue;
			}
			// NVMe-oF: through the block device, on the media when done
			for_each_shard(rep.shards(), shard_length, 0, sizes[i],
				       [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
				std::string e;
				int ret = nvmeof_io(true, sh, first, items[i].iov, 0, lo, hi, until[i], &e);
				if (ret)
					ok[i][static_cast<size_t>(r)] = false;
				return ret;
			});
		}
	}
	if (!reqs.empty()) {
		Worker &w = *workers_[worker];
		std::vector<int> status;
		std::lock_guard<std::mutex> g(w.mu);
		for (size_t k = 0; k < reqs.size(); k++)
			source(w, srcs[k], reqs[k].length, &reqs[k]);
		// each key's deadline, checked last before its writes (see
		// do_put): a late key's requests are dropped, in place; the
		// module checks the earliest of those kept as it posts (the
		// keys of one BatchPutStart share their deadline but for the
		// time its answer took to read)
		auto now = Clock::now();
		auto earliest = Clock::time_point::max();
		size_t kept = 0;
		for (size_t k = 0; k < reqs.size(); k++) {
			if (now >= until[owner[k].first]) {
				ok[owner[k].first][static_cast<size_t>(owner[k].second)] = false;
				continue;
			}
			earliest = std::min(earliest, until[owner[k].first]);
			reqs[kept] = reqs[k];
			owner[kept++] = owner[k];
		}
		reqs.resize(kept);
		owner.resize(kept);
		transfer(w, reqs, &status, earliest);
		for (size_t k = 0; k < status.size(); k++)
			if (status[k])
				ok[owner[k].first][static_cast<size_t>(owner[k].second)] = false;
	}
	std::vector<size_t> in_commit;
	for (size_t i = 0; i < n; i++) {
		if (!committing[i])
			continue;
		bool all = std::all_of(ok[i].begin(), ok[i].end(), [](bool b) { return b; });
		// anything short of every replica, or late: the single put's way
		if (!all || Clock::now() >= until[i]) {
			abort(i);
			fallback[i] = true;
			continue;
		}
		pb::PutCommitRequest *c = commit.add_items();
		c->set_client_id(client_id_.load());
		c->set_key(items[i].key);
		c->set_version(start.results(static_cast<int>(i)).version());
		for (size_t r = 0; r < ok[i].size(); r++)
			c->add_done(static_cast<uint32_t>(r));
		*c->mutable_sums() = sums[i];
		in_commit.push_back(i);
	}
	if (!in_commit.empty()) {
		pb::BatchPutCommitResponse done;
		std::string err;
		int ret = masters_.call(&pb::Master::Stub::BatchPutCommit, commit, &done, deadline, &err);
		for (size_t k = 0; k < in_commit.size(); k++) {
			BatchItem &it = items[in_commit[k]];
			if (ret || k >= static_cast<size_t>(done.status_size())) {
				// the commit may have happened: a later get says which
				it.why = err;
				batch_result(it, ret ? ret : -EPROTO, -1, 0);
				continue;
			}
			const pb::ItemStatus &s = done.status(static_cast<int>(k));
			if (s.code()) {
				it.why = s.message();
				batch_result(it, item_errno(s), -1, 0);
				continue;
			}
			const pb::PutCommitResponse &r = done.results(static_cast<int>(k));
			int e = 0;
			if (cfg.flush == DS_STORE_FLUSH_EAGER && !r.flushed()) {
				e = r.flush_errno() > 0 ? -r.flush_errno() : -EIO;
				it.why = r.flush_error();
			}
			batch_result(it, e, static_cast<int64_t>(commit.items(static_cast<int>(k)).version()),
				     sizes[in_commit[k]]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!fallback[i])
			continue;
		ds_store_task_status one{};
		std::string e;
		int ret = do_put(worker, deadline, items[i].key, items[i].iov, cfg, attrs, &one, &e);
		items[i].why = e;
		batch_result(items[i], ret ? ret : one.err, ret ? -1 : one.version, sizes[i]);
	}
	return batch_end(items, st, why);
}

int ClientCore::do_batch_get(unsigned worker, Clock::time_point deadline,
			     std::vector<BatchItem> &items, ds_store_task_status *st, std::string *why)
{
	const size_t n = items.size();
	pb::BatchGetRequest req;
	for (const BatchItem &it : items) {
		pb::GetRequest *q = req.add_items();
		q->set_client_id(client_id_.load());
		q->set_key(it.key);
		q->set_min_version(-1);
	}
	pb::BatchGetResponse resp;
	Clock::time_point sent = Clock::now();
	if (int ret = masters_.call(&pb::Master::Stub::BatchGet, req, &resp, deadline, why))
		return ret;
	if (resp.status_size() != static_cast<int>(n) || resp.results_size() != static_cast<int>(n)) {
		*why = "the master answered " + std::to_string(resp.results_size()) + " of " +
		       std::to_string(n) + " keys";
		return -EPROTO;
	}
	std::vector<bool> fallback(n, false), reading(n, false), read_ok(n, true);
	std::vector<uint64_t> lens(n, 0);
	std::vector<ds_transfer_request> reqs;
	std::vector<void *> dsts;
	std::vector<size_t> owner;
	for (size_t i = 0; i < n; i++) {
		const pb::ItemStatus &s = resp.status(static_cast<int>(i));
		const pb::GetResponse &g = resp.results(static_cast<int>(i));
		if (s.code()) {
			int e = item_errno(s);
			// no readable replica now: the single get waits for a repair
			if (e == -ENODATA) {
				fallback[i] = true;
				continue;
			}
			items[i].why = s.message();
			batch_result(items[i], e, -1, 0);
			continue;
		}
		const pb::ObjectInfo &obj = g.object();
		uint64_t room = 0;
		for (const iovec &v : items[i].iov)
			room += v.iov_len;
		lens[i] = std::min(obj.size(), room);
		if (!lens[i]) {
			batch_result(items[i], 0, static_cast<int64_t>(obj.version()), 0);
			continue;
		}
		// the first DRAM replica, one on our node first; else the single way
		int pick = -1;
		for (int r = 0; r < obj.replicas_size() && pick < 0; r++)
			if (obj.replicas(r).type() == pb::SEGMENT_DRAM)
				pick = r;
		for (int r = 0; r < obj.replicas_size(); r++) {
			const pb::Replica &rep = obj.replicas(r);
			if (rep.type() != pb::SEGMENT_DRAM || !rep.shards_size())
				continue;
			std::lock_guard<std::mutex> sg(state_mu_);
			auto it = segs_.find(rep.shards(0).segment_id());
			if (it != segs_.end() && it->second.node_id() == cfg_.node_id) {
				pick = r;
				break;
			}
		}
		if (g.slow_tier() || pick < 0 || worker >= workers_.size()) {
			fallback[i] = true;
			continue;
		}
		Clock::time_point lease_end =
			answer_deadline(sent, g.has_lease_left_ns(), g.lease_left_ns(),
					g.lease_until_ns(), kLeaseMarginPct);
		int ret = for_each_shard(obj.replicas(pick).shards(), shard_length, 0, lens[i],
					 [&](const pb::Shard &sh, uint64_t first, uint64_t lo, uint64_t hi) {
			pb::SegmentDesc d;
			if (int r = segment(sh.segment_id(), &d, std::min(deadline, lease_end)))
				return r;
			shard_requests(DS_OP_READ, d, sh, first, items[i].iov, 0, lo, hi, &reqs, &dsts);
			owner.resize(reqs.size(), i);
			return 0;
		});
		if (ret) {
			// its requests so far are read, and not used
			read_ok[i] = false;
			fallback[i] = true;
		}
		reading[i] = true;
		items[i].lease_end = lease_end;
	}
	if (!reqs.empty()) {
		Worker &w = *workers_[worker];
		std::vector<int> status;
		std::lock_guard<std::mutex> g(w.mu);
		for (size_t k = 0; k < reqs.size(); k++)
			source(w, dsts[k], reqs[k].length, &reqs[k]);
		transfer(w, reqs, &status);
		for (size_t k = 0; k < status.size(); k++)
			if (status[k])
				read_ok[owner[k]] = false;
	}
	Clock::time_point now = Clock::now();
	for (size_t i = 0; i < n; i++) {
		if (!reading[i] || fallback[i])
			continue;
		const pb::ObjectInfo &obj = resp.results(static_cast<int>(i)).object();
		std::string e;
		// bytes read after the lease may be of space given to another
		// version: the single get asks again
		if (!read_ok[i] || now > items[i].lease_end ||
		    check_sums(obj.sums(), obj.size(), items[i].iov, 0, lens[i], &e)) {
			fallback[i] = true;
			continue;
		}
		batch_result(items[i], 0, static_cast<int64_t>(obj.version()), lens[i]);
	}
	for (size_t i = 0; i < n; i++) {
		if (!fallback[i])
			continue;
		ds_store_task_status one{};
		std::string e;
		int ret = do_get(worker, deadline, items[i].key, items[i].iov, -1, 0, &one, &e);
		items[i].why = e;
		batch_result(items[i], ret, ret ? -1 : one.version, ret ? 0 : one.bytes);
	}
	return batch_end(items, st, why);
}

int ClientCore::batch_exist(ds_store_batch_item *items, size_t n, std::string *err)
{
	if (int ret = batch_check(items, n, false, nullptr, err))
		return ret;
	pb::BatchExistRequest req;
	pb::BatchExistResponse resp;
	for (size_t i = 0; i < n; i++)
		req.add_keys(items[i].key);
	if (int ret = masters_.call(&pb::Master::Stub::BatchExist, req, &resp, deadline_in(cfg_.timeout_ms),
				    err))
		return ret;
	if (resp.status_size() != static_cast<int>(n) || resp.versions_size() != static_cast<int>(n)) {
		*err = "the master answered " + std::to_string(resp.status_size()) + " of " +
		       std::to_string(n) + " keys";
		return -EPROTO;
	}
	for (size_t i = 0; i < n; i++) {
		items[i].err = item_errno(resp.status(static_cast<int>(i)));
		items[i].version = items[i].err ? -1 : static_cast<int64_t>(resp.versions(static_cast<int>(i)));
		items[i].bytes = 0;
	}
	return 0;
}

int ClientCore::batch_del(ds_store_batch_item *items, size_t n, std::string *err)
{
	if (int ret = batch_check(items, n, false, nullptr, err))
		return ret;
	pb::BatchDelRequest req;
	pb::BatchDelResponse resp;
	for (size_t i = 0; i < n; i++) {
		pb::DelRequest *d = req.add_items();
		d->set_key(items[i].key);
		// a retry at another master answers what the first attempt did
		d->set_request_id(new_request_id());
	}
	if (int ret = masters_.call(&pb::Master::Stub::BatchDel, req, &resp,
				    retry_deadline(deadline_in(cfg_.timeout_ms)), err))
		return ret;
	if (resp.status_size() != static_cast<int>(n) || resp.results_size() != static_cast<int>(n)) {
		*err = "the master answered " + std::to_string(resp.status_size()) + " of " +
		       std::to_string(n) + " keys";
		return -EPROTO;
	}
	for (size_t i = 0; i < n; i++) {
		items[i].err = item_errno(resp.status(static_cast<int>(i)));
		// the versions it deleted
		items[i].version = items[i].err ? -1 : static_cast<int64_t>(resp.results(static_cast<int>(i)).versions());
		items[i].bytes = 0;
	}
	return 0;
}

}  // namespace dsmem::store
