// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's batch RPCs: the single calls' work for many keys under a few
// holds of the state mutex and one wait for the log, each key answered on
// its own (one failing does not fail the others).  A batch fails as a
// whole only for what fails every key: not the leader, the log lost.
#include <algorithm>
#include <chrono>
#include <thread>

#include "service.hpp"

namespace dsmem::store {

namespace {

constexpr int kBatchMax = 4096;
// Items per hold of the state mutex: a batch of thousands lets the single
// calls in between its runs (a batch is not atomic: each key stands alone).
constexpr int kItemsPerHold = 256;

// each(i) for i in [0, n), under mu, in runs of kItemsPerHold.
template <class F>
void in_runs(std::mutex &mu, int n, F &&each)
{
	for (int from = 0; from < n; from += kItemsPerHold) {
		std::lock_guard<std::mutex> g(mu);
		for (int i = from; i < std::min(n, from + kItemsPerHold); i++)
			each(i);
	}
}

void set_status(v1::ItemStatus *out, const grpc::Status &s)
{
	out->set_code(static_cast<int32_t>(s.error_code()));
	out->set_message(s.error_message());
}

grpc::Status too_many(int n)
{
	return to_status(-EINVAL, "a batch of " + std::to_string(n) + " items; the limit is " +
					  std::to_string(kBatchMax));
}

}  // namespace

grpc::Status Leader::BatchPutStart(const Caller &c, const v1::BatchPutStartRequest *q,
				   v1::BatchPutStartResponse *a)
{
	if (q->items_size() > kBatchMax)
		return too_many(q->items_size());
	uint64_t seq = 0;
	int64_t wait = 0;
	std::vector<int> again;
	in_runs(mu_, q->items_size(), [&](int i) {
		int64_t takeover = 0;
		grpc::Status s = put_start_locked(c, q->items(i), a->add_results(), &seq, &takeover);
		set_status(a->add_status(), s);
		if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && takeover) {
			again.push_back(i);
			wait = std::max(wait, takeover);
		}
	});
	if (!again.empty()) {
		// a new leader: the old one's read leases run out first (once)
		std::this_thread::sleep_for(std::chrono::nanoseconds(wait) +
					    std::chrono::milliseconds(10));
		in_runs(mu_, static_cast<int>(again.size()), [&](int k) {
			int i = again[static_cast<size_t>(k)];
			int64_t takeover = 0;
			a->mutable_results(i)->Clear();
			grpc::Status s = put_start_locked(c, q->items(i), a->mutable_results(i), &seq,
							  &takeover);
			set_status(a->mutable_status(i), s);
		});
	}
	return durable_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::BatchPutCommit(const Caller &c, const v1::BatchPutCommitRequest *q,
				    v1::BatchPutCommitResponse *a)
{
	if (q->items_size() > kBatchMax)
		return too_many(q->items_size());
	uint64_t seq = 0;
	std::vector<v1::ReplicateConfig> configs(static_cast<size_t>(q->items_size()));
	in_runs(mu_, q->items_size(), [&](int i) {
		uint64_t s_seq = 0;
		grpc::Status s = put_commit_locked(c, q->items(i), a->add_results(), &s_seq,
						   &configs[static_cast<size_t>(i)]);
		seq = std::max(seq, s_seq);
		set_status(a->add_status(), s);
	});
	grpc::Status s = durable_reply(seq, grpc::Status::OK);
	if (!s.ok())
		return s;
	for (int i = 0; i < q->items_size(); i++)
		if (a->status(i).code() == 0)
			eager_flush(q->items(i), configs[static_cast<size_t>(i)], a->mutable_results(i));
	return s;
}

grpc::Status Leader::BatchGet(const Caller &, const v1::BatchGetRequest *q, v1::BatchGetResponse *a)
{
	if (q->items_size() > kBatchMax)
		return too_many(q->items_size());
	uint64_t seq = 0;
	in_runs(mu_, q->items_size(), [&](int i) {
		set_status(a->add_status(), get_locked(q->items(i), a->add_results(), &seq));
	});
	return read_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::BatchExist(const Caller &, const v1::BatchExistRequest *q,
				v1::BatchExistResponse *a)
{
	if (q->keys_size() > kBatchMax)
		return too_many(q->keys_size());
	uint64_t seq = 0;
	in_runs(mu_, q->keys_size(), [&](int i) {
		const std::string &key = q->keys(i);
		std::string err;
		GetResult res;
		seq = std::max(seq, read_seq_locked(&key));
		int ret = st_.get(key, -1, &res, &err, now_ns());
		set_status(a->add_status(), to_status(ret, err));
		a->add_versions(ret ? 0 : res.object.version());
	});
	return read_reply(seq, grpc::Status::OK);
}

grpc::Status Leader::BatchDel(const Caller &c, const v1::BatchDelRequest *q, v1::BatchDelResponse *a)
{
	if (q->items_size() > kBatchMax)
		return too_many(q->items_size());
	// no flush of these keys runs while they go: their locks in key order
	std::vector<std::string> keys;
	for (const auto &item : q->items())
		keys.push_back(item.key());
	std::sort(keys.begin(), keys.end());
	keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
	std::vector<std::shared_ptr<std::mutex>> locks;
	for (const auto &k : keys)
		locks.push_back(flush_lock(k));
	for (auto &l : locks)
		l->lock();
	uint64_t seq = 0;
	std::vector<std::string> deleted;
	in_runs(mu_, q->items_size(), [&](int i) {
		const auto &item = q->items(i);
		bool fresh = false;
		set_status(a->add_status(), del_locked(c, item, a->add_results(), &seq, &fresh));
		if (fresh)
			deleted.push_back(item.key());
	});
	grpc::Status s = read_reply(seq, grpc::Status::OK);
	if (s.ok())
		for (const auto &k : deleted)
			delete_slow_copy(k);
	for (auto it = locks.rbegin(); it != locks.rend(); ++it)
		(*it)->unlock();
	return s;
}

}  // namespace dsmem::store
