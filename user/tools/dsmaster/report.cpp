// SPDX-License-Identifier: BSD-2-Clause
// ReportReplica: a reader found a replica whose bytes fail their
// checksums; the master re-reads it and drops it if it is bad, and only
// while another copy reads whole.
#include <dsmem/ds.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "checksum.hpp"
#include "service.hpp"

namespace dsmem::store {

namespace {

// Does replica r start with shard sh?
bool starts_with(const v1::Replica &r, const v1::Shard &sh)
{
	return r.shards_size() && r.shards(0).segment_id() == sh.segment_id() &&
	       r.shards(0).offset() == sh.offset();
}

}  // namespace

grpc::Status Leader::ReportReplica(const Caller &, const v1::ReportReplicaRequest *q, v1::ReportReplicaResponse *a)
{
	std::string err;
	const std::string name = "'" + q->key().substr(0, 64) + "' version " + std::to_string(q->version());
	v1::Replica rep;
	v1::Checksums sums;
	Resolved r;
	uint64_t size = 0;
	// the other replicas, to find one whole before this one goes
	std::vector<std::pair<v1::Replica, Resolved>> others;
	bool slow_listed = false;
	// one at a time with the repairs of this key
	auto rl = replica_lock(q->key());
	std::lock_guard<std::mutex> held(*rl);
	{
		std::lock_guard<std::mutex> g(mu_);
		const VersionState *v = st_.find_version(q->key(), q->version());
		if (!v || !v->complete)
			return to_status(-ENOENT, "no complete " + name);
		auto it = std::find_if(v->replicas.begin(), v->replicas.end(),
				       [&](const ReplicaState &x) { return starts_with(x.r, q->first_shard()); });
		if (it == v->replicas.end())
			return to_status(-ENOENT, "no such replica of " + name);
		if (!v->sums.xxh64_size())
			return grpc::Status::OK;	// nothing to check it against
		rep = it->r;
		sums = v->sums;
		size = v->size;
		r = resolve_locked(rep);
		for (const auto &x : v->replicas)
			if (!x.lost && !MasterState::same_replica(x.r, rep))
				others.emplace_back(x.r, resolve_locked(x.r));
		slow_listed = slow_ && st_.slow_copy_listed(q->key(), q->version(), now_ns());
		st_.pin(q->key(), q->version());
	}
	// the master's own read of it
	int ret = mover_->check(r, size, sums, &err);
	const std::string why = err;
	// One mismatch of a re-read may be the read's fault, not the
	// copy's: it goes only while another copy reads whole.
	std::vector<v1::Replica> verified;
	bool slow_verified = false;
	if (ret == -EBADMSG) {
		for (const auto &[other, places] : others) {
			std::string e;
			if (!mover_->check(places, size, sums, &e)) {
				verified.push_back(other);
				break;
			}
		}
		if (verified.empty() && slow_listed) {
			std::string data, e;
			uint64_t ver = 0;
			slow_verified = !slow_->get(q->key(), 0, size, &data, &ver, nullptr) &&
					ver == q->version() && data.size() == size &&
					!check_sums(sums, size, { { data.data(), size } }, 0, size, &e);
		}
	}
	{
		std::lock_guard<std::mutex> g(mu_);
		st_.unpin(q->key(), q->version());
	}
	if (ret != -EBADMSG)
		return grpc::Status::OK;	// whole here (or unreadable: the heartbeats decide)
	const unsigned long long seg = q->first_shard().segment_id(), off = q->first_shard().offset();
	lg::Record d;
	uint64_t seq = 0;
	{
		// planned and committed under one hold of the state: the
		// record names the replica by its places, which nothing moves
		std::lock_guard<std::mutex> g(mu_);
		std::string perr;
		int pret = st_.plan_drop_bad_replica(q->key(), q->version(), rep, verified, slow_verified,
						     &d, &perr);
		if (pret == -EBUSY)
			log_line("%s: the replica at segment %llu offset %llu failed its checksums (%s), "
				 "but %s: kept",
				 name.c_str(), seg, off, why.c_str(), perr.c_str());
		if (pret)
			return grpc::Status::OK;
		if (int cret = commit_locked(d, &seq, &err))
			return to_status(cret, err);
	}
	if (int wret = wait_durable(seq, &err))
		return to_status(wret, err);
	log_line("%s: the replica at segment %llu offset %llu failed its checksums (%s): dropped",
		 name.c_str(), seg, off, why.c_str());
	a->set_dropped(true);
	kick_repair();
	return grpc::Status::OK;
}

}  // namespace dsmem::store
