// SPDX-License-Identifier: BSD-2-Clause
// ReportReplica: a reader found a replica whose bytes fail their
// checksums; the master re-reads it and drops it if it is bad.
#include <dsmem/ds.h>

#include <cerrno>
#include <cstring>

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
	// one at a time with the repairs of this key: indexes stay put
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
		st_.pin(q->key(), q->version());
	}
	// the master's own read of it
	int ret = mover_->check(r, size, sums, &err);
	{
		std::lock_guard<std::mutex> g(mu_);
		st_.unpin(q->key(), q->version());
	}
	if (ret != -EBADMSG)
		return grpc::Status::OK;	// whole here (or unreadable: the heartbeats decide)
	const std::string why = err;
	lg::Record d;
	{
		std::lock_guard<std::mutex> g(mu_);
		const VersionState *v = st_.find_version(q->key(), q->version());
		if (!v)
			return grpc::Status::OK;
		for (size_t i = 0; i < v->replicas.size(); i++)
			if (starts_with(v->replicas[i].r, q->first_shard())) {
				d.mutable_replica_drop()->set_key(q->key());
				d.mutable_replica_drop()->set_version(q->version());
				d.mutable_replica_drop()->set_index(static_cast<uint32_t>(i));
			}
	}
	if (d.rec_case() == lg::Record::REC_NOT_SET)
		return grpc::Status::OK;
	if (int ret2 = commit({ d }, &err))
		return to_status(ret2, err);
	log_line("%s: the replica at segment %llu offset %llu failed its checksums (%s): dropped",
		 name.c_str(),
		 static_cast<unsigned long long>(q->first_shard().segment_id()),
		 static_cast<unsigned long long>(q->first_shard().offset()), why.c_str());
	a->set_dropped(true);
	kick_repair();
	return grpc::Status::OK;
}

}  // namespace dsmem::store
