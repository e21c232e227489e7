// SPDX-License-Identifier: BSD-2-Clause
// What the C API submits: argument checks, then tasks for puts, gets,
// replications, deletes and syncs; listings and stats answered at once.
#include "client.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace dsmem::store {

namespace {

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

// A put's replica config (the default one where cfg is NULL) and task
// pointer, checked alike for single and batch puts.
int check_put_config(const ds_store_replicate_config *cfg, const uint64_t *task,
		     ds_store_replicate_config *out, std::string *why)
{
	*out = cfg ? *cfg : ds_store_replicate_config{1, 0, DS_STORE_FLUSH_NONE, 0};
	if (int ret = check_config(out, why))
		return ret;
	if (!task) {
		*why = "no task pointer";
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

}  // namespace

Clock::time_point ClientCore::retry_deadline(Clock::time_point task_deadline) const
{
	return std::min(task_deadline,
			Clock::now() + std::chrono::milliseconds(retry_window_ms_.load() / 2));
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

int read_put_opts(const ds_store_put_opts *opts, PutAttrs *out, std::string *why)
{
	*out = {};
	if (!opts)
		return 0;
	if (opts->size < DS_STORE_PUT_OPTS_SIZE_VER0) {
		*why = "opts->size is " + std::to_string(opts->size) + ", below the first version's " +
		       std::to_string(DS_STORE_PUT_OPTS_SIZE_VER0) + " (set it to sizeof)";
		return -EINVAL;
	}
	// a newer caller's struct: what this library does not know must be 0
	ds_store_put_opts o{};
	memcpy(&o, opts, std::min<size_t>(opts->size, sizeof(o)));
	const auto *tail = reinterpret_cast<const unsigned char *>(opts);
	for (size_t i = sizeof(o); i < opts->size; i++)
		if (tail[i]) {
			*why = "opts has fields this library does not know (byte " + std::to_string(i) +
			       " of " + std::to_string(opts->size) + " is set): a newer header's";
			return -E2BIG;
		}
	if (o.flags & ~DS_STORE_PUT_SOFT_PIN) {
		*why = "unknown opts->flags " + std::to_string(o.flags & ~DS_STORE_PUT_SOFT_PIN);
		return -EINVAL;
	}
	for (uint64_t r : o.reserved)
		if (r) {
			*why = "opts->reserved must be 0";
			return -EINVAL;
		}
	if (o.ttl_ms > DS_STORE_TTL_MAX_MS) {
		*why = "a TTL of " + std::to_string(o.ttl_ms) + " ms; the limit is ten years (" +
		       std::to_string(DS_STORE_TTL_MAX_MS) + " ms)";
		return -EINVAL;
	}
	out->soft_pin = o.flags & DS_STORE_PUT_SOFT_PIN;
	out->ttl_ms = o.ttl_ms;
	return 0;
}

int ClientCore::put(const char *key, const struct iovec *iov, size_t n,
		const ds_store_replicate_config *cfg, const PutAttrs &attrs, uint64_t *task,
		std::string *err)
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
	ds_store_replicate_config c;
	if (int ret = check_put_config(cfg, task, &c, err))
		return ret;
	std::string k(key);
	std::vector<iovec> v(iov, iov + n);
	std::lock_guard<std::mutex> lk(puts_mu_);
	int ret = tasks_.submit(DS_STORE_TASK_PUT, cfg_.timeout_ms,
				[this, k, v, c, attrs](unsigned w, Clock::time_point d,
						       ds_store_task_status *st, std::string *why) {
					return do_put(w, d, k, v, c, attrs, st, why);
				},
				task);
	if (!ret)
		note_put_locked(k, *task);
	return ret;
}

/*
 * Sync waits for the puts of its key submitted before it.  The map would
 * keep an entry for every key ever put: now and then (every kPutsSweep
 * puts) the done tasks and empty keys go, so it holds about what is in
 * flight.
 */
void ClientCore::note_put_locked(const std::string &key, uint64_t task)
{
	constexpr uint64_t kPutsSweep = 1024;
	auto done = [this](uint64_t id) {
		ds_store_task_status st{};
		tasks_.query(id, 0, false, &st);
		return st.state > DS_STORE_PENDING;
	};
	std::vector<uint64_t> &ids = puts_by_key_[key];
	std::erase_if(ids, done);
	ids.push_back(task);
	if (++puts_noted_ % kPutsSweep)
		return;
	for (auto it = puts_by_key_.begin(); it != puts_by_key_.end();) {
		std::erase_if(it->second, done);
		it = it->second.empty() ? puts_by_key_.erase(it) : std::next(it);
	}
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
				     return masters_.call(&pb::Master::Stub::Del, req, &resp,
							  retry_deadline(d), why);
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

int ClientCore::set_attr(const std::string &key, uint32_t mask, const PutAttrs &attrs,
			 pb::SetAttrResponse *out, std::string *err)
{
	pb::SetAttrRequest req;
	req.set_key(key);
	req.set_mask(mask);
	req.set_soft_pin(attrs.soft_pin);
	req.set_ttl_ms(attrs.ttl_ms);
	grpc::Status last;
	int ret = masters_.call(&pb::Master::Stub::SetAttr, req, out, deadline_in(cfg_.timeout_ms),
				err, &last);
	if (ret == -EOPNOTSUPP && last.error_code() == grpc::StatusCode::UNIMPLEMENTED)
		*err = masters_.leader() + ": the master keeps no soft pin or TTL (an older dsmaster)";
	return ret;
}

int ClientCore::batch_check(const ds_store_batch_item *items, size_t n, bool with_iov,
			     std::vector<BatchItem> *out, std::string *err)
{
	if (!items || !n) {
		*err = "no items";
		return -EINVAL;
	}
	if (n > DS_STORE_BATCH_MAX) {
		*err = "a batch of " + std::to_string(n) + " items; the limit is " +
		       std::to_string(DS_STORE_BATCH_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		std::string why;
		if (int ret = check_key(items[i].key, &why)) {
			*err = "item " + std::to_string(i) + ": " + why;
			return ret;
		}
		if (!with_iov)
			continue;
		uint64_t total = 0;
		if (int ret = check_iov(items[i].iov, items[i].iovcnt, &total, &why)) {
			*err = "item " + std::to_string(i) + ": " + why;
			return ret;
		}
		if (out) {
			BatchItem b;
			b.key = items[i].key;
			b.iov.assign(items[i].iov, items[i].iov + items[i].iovcnt);
			b.out = const_cast<ds_store_batch_item *>(&items[i]);
			b.size = total;
			out->push_back(std::move(b));
		}
	}
	return 0;
}

int ClientCore::batch_put(ds_store_batch_item *items, size_t n, const ds_store_replicate_config *cfg,
			  const PutAttrs &attrs, uint64_t *task, std::string *err)
{
	std::vector<BatchItem> v;
	if (int ret = batch_check(items, n, true, &v, err))
		return ret;
	uint64_t max_size = max_object_size_.load();
	for (const BatchItem &b : v) {
		if (!b.size || (max_size && b.size > max_size)) {
			*err = "'" + b.key.substr(0, 64) + "': an object of " + std::to_string(b.size) +
			       " bytes" + (b.size ? "; the limit is " + std::to_string(max_size) : "");
			return -EINVAL;
		}
	}
	ds_store_replicate_config c;
	if (int ret = check_put_config(cfg, task, &c, err))
		return ret;
	for (size_t i = 0; i < n; i++)
		batch_result(v[i], 0, -1, 0);
	std::lock_guard<std::mutex> lk(puts_mu_);
	int ret = tasks_.submit(DS_STORE_TASK_BATCH_PUT, cfg_.timeout_ms,
				[this, v, c, attrs](unsigned w, Clock::time_point d,
						    ds_store_task_status *st, std::string *why) mutable {
					return do_batch_put(w, d, v, c, attrs, st, why);
				},
				task);
	// a Sync of one of the keys waits for it as for a single put
	if (!ret)
		for (const BatchItem &b : v)
			note_put_locked(b.key, *task);
	return ret;
}

int ClientCore::batch_get(ds_store_batch_item *items, size_t n, uint64_t *task, std::string *err)
{
	std::vector<BatchItem> v;
	if (int ret = batch_check(items, n, true, &v, err))
		return ret;
	if (!task) {
		*err = "no task pointer";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		batch_result(v[i], 0, -1, 0);
	return tasks_.submit(DS_STORE_TASK_BATCH_GET, cfg_.timeout_ms,
			     [this, v](unsigned w, Clock::time_point d, ds_store_task_status *st,
				       std::string *why) mutable { return do_batch_get(w, d, v, st, why); },
			     task);
}

}  // namespace dsmem::store
