// SPDX-License-Identifier: BSD-2-Clause
// libdsstore -- header-only C++20 layer over the object store's C ABI
// (store.h).  RAII client, task handles, dsmem::result for failures;
// nothing here throws.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <sys/uio.h>

#include <dsmem/ds.hpp>
#include <dsmem/store.h>

namespace dsmem::store {

using ::dsmem::error;
using ::dsmem::result;

enum class Flush : uint32_t {
	none = DS_STORE_FLUSH_NONE,
	lazy = DS_STORE_FLUSH_LAZY,
	eager = DS_STORE_FLUSH_EAGER,
};

struct ReplicateConfig {
	uint32_t dram_replicas = 1;
	uint32_t nvmeof_replicas = 0;
	Flush flush = Flush::none;
	bool prefer_local = false;
	// a put's attributes (DSSTORE_1.1): evicted last; removed this long
	// after the commit (0: never).  Either set: the put needs a master
	// that keeps them (-EOPNOTSUPP from an older one).  replicate()
	// ignores them (set_attr changes them).
	bool soft_pin = false;
	uint64_t ttl_ms = 0;

	ds_store_replicate_config c() const
	{
		return {dram_replicas, nvmeof_replicas, static_cast<uint32_t>(flush),
			prefer_local ? 1u : 0u};
	}

	bool has_attrs() const { return soft_pin || ttl_ms; }

	ds_store_put_opts opts() const
	{
		ds_store_put_opts o{};
		o.size = sizeof(o);
		o.flags = soft_pin ? DS_STORE_PUT_SOFT_PIN : 0;
		o.ttl_ms = ttl_ms;
		return o;
	}
};

struct Config {
	std::string masters;		// "host:port[,host:port...]"
	uint32_t node_id = 0;		// an existing local dsmem node
	std::string addr;		// "": the node's device's address
	uint64_t segment_size = 0;	// DRAM to contribute; 0: none
	uint32_t threads = 0;		// 0: 4
	uint32_t timeout_ms = 0;	// per task; 0: 30000
	// TLS files; "": DSMEM_STORE_CA/CERT/KEY, else DSMEM_STORE_TLS_DIR's
	std::string tls_ca, tls_cert, tls_key;
	bool insecure = false;		// plaintext to a loopback master
};

namespace detail {
// The C API takes C strings: a NUL inside would silently cut a key to
// another object's name, so such keys (and prefixes) are refused.
inline bool has_nul(const std::string &s) { return s.find('\0') != std::string::npos; }
inline error nul_error(const char *what)
{
	return error{-EINVAL, std::string(what) + " contains a NUL byte"};
}
}  // namespace detail

using TaskStatus = ds_store_task_status;
// Its soft pin is in flags (is_soft_pinned()); expires_ns (0: never) and
// atime_ns are CLOCK_REALTIME.
using ObjectInfo = ds_store_object_info;
using Health = ds_store_health;
// The master's figures, evictions and watermarks among them.
using MasterInfo = struct ds_store_master_info;

inline bool is_soft_pinned(const ObjectInfo &o) { return (o.flags & DS_STORE_OBJ_SOFT_PIN) != 0; }

// A queued operation.  The handle does not own the task: a task that is
// never waited for with release stays in the client until it closes.
class Task {
public:
	Task() = default;
	Task(ds_store *s, uint64_t id) : s_(s), id_(id) {}

	uint64_t id() const { return id_; }

	// Until done (wait_ms -1) or wait_ms passed; release forgets a done
	// task.  The status says COMPLETE, FAILED (err), ...
	result<TaskStatus> wait(int wait_ms = -1, bool release = true) const
	{
		TaskStatus st{};
		if (int r = ds_store_task_query(s_, id_, wait_ms, release ? 1 : 0, &st))
			return error{r, ds_store_errmsg(s_)};
		return st;
	}

	result<TaskStatus> status() const { return wait(0, false); }

	result<void> cancel() const
	{
		if (int r = ds_store_task_cancel(s_, id_))
			return error{r, ds_store_errmsg(s_)};
		return {};
	}

	// done and COMPLETE: the status; otherwise its err as an error, with
	// the reason the query that reported it left in this thread (call it
	// on wait()'s answer, before another call of the store)
	static result<TaskStatus> check(result<TaskStatus> r)
	{
		if (!r)
			return r;
		if (r->state != DS_STORE_COMPLETE) {
			std::string m = state_name(r->state);
			const char *why = ds_store_errmsg(nullptr);
			if (r->err && why && *why)
				m += std::string(": ") + why;
			return error{r->err ? r->err : -EIO, m};
		}
		return r;
	}

	static const char *state_name(uint32_t s)
	{
		static const char *const names[] = {"waiting", "pending", "invalid", "canceled",
						    "complete", "timeout", "failed"};
		return s < std::size(names) ? names[s] : "unknown";
	}

private:
	ds_store *s_ = nullptr;
	uint64_t id_ = 0;
};

class Client {
public:
	static result<Client> open(const Config &cfg)
	{
		ds_store_config c{};
		c.masters = cfg.masters.c_str();
		c.node_id = cfg.node_id;
		c.addr = cfg.addr.empty() ? nullptr : cfg.addr.c_str();
		c.segment_size = cfg.segment_size;
		c.threads = cfg.threads;
		c.timeout_ms = cfg.timeout_ms;
		c.tls_ca = cfg.tls_ca.empty() ? nullptr : cfg.tls_ca.c_str();
		c.tls_cert = cfg.tls_cert.empty() ? nullptr : cfg.tls_cert.c_str();
		c.tls_key = cfg.tls_key.empty() ? nullptr : cfg.tls_key.c_str();
		c.flags = cfg.insecure ? DS_STORE_INSECURE : 0;
		ds_store *s = nullptr;
		if (int r = ds_store_open(&c, &s))
			return error{r, ds_store_errmsg(nullptr)};
		return Client(s);
	}

	ds_store *get() const { return s_.get(); }

	// Leave; with drain, this client's replicas move elsewhere first.
	void close(bool drain = false)
	{
		if (ds_store *s = s_.release())
			ds_store_close(s, drain ? 1 : 0);
	}

	// Leave after a drain bounded by deadline (0: the library's 120 s):
	// the replicas moved, or ETIMEDOUT with what moved and what remains
	// (the client left all the same; the master reclaims the rest).
	result<uint64_t> close_drain(std::chrono::milliseconds deadline)
	{
		ds_store *s = s_.release();
		if (!s)
			return error{-EINVAL, "closed already"};
		uint64_t moved = 0;
		char msg[512] = "";
		if (int r = ds_store_close_drain(s, static_cast<uint64_t>(deadline.count()), &moved,
						 msg, sizeof(msg)))
			return error{r, msg};
		return moved;
	}

	// The buffers must stay valid until the task is done.
	result<Task> put(const std::string &key, std::span<const std::byte> data,
			 const ReplicateConfig &cfg = {})
	{
		iovec v{const_cast<std::byte *>(data.data()), data.size()};
		return put(key, std::span<const iovec>(&v, 1), cfg);
	}

	result<Task> put(const std::string &key, std::span<const iovec> iov,
			 const ReplicateConfig &cfg = {})
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		ds_store_replicate_config c = cfg.c();
		uint64_t id = 0;
		if (!cfg.has_attrs())	// works with an older library too
			return task(ds_store_put(get(), key.c_str(), iov.data(), iov.size(), &c, &id),
				    id);
		ds_store_put_opts o = cfg.opts();
		return task(ds_store_put_ex(get(), key.c_str(), iov.data(), iov.size(), &c, &o, &id),
			    id);
	}

	// Pin or unpin key's newest version, or set its TTL from now (0:
	// never expires), at once; what is nullopt stays.  Only the key's
	// owner or an admin may.
	result<void> set_attr(const std::string &key, std::optional<bool> soft_pin,
			      std::optional<uint64_t> ttl_ms = std::nullopt)
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		ds_store_put_opts o{};
		o.size = sizeof(o);
		uint32_t mask = 0;
		if (soft_pin) {
			mask |= DS_STORE_ATTR_SOFT_PIN;
			o.flags = *soft_pin ? DS_STORE_PUT_SOFT_PIN : 0;
		}
		if (ttl_ms) {
			mask |= DS_STORE_ATTR_TTL;
			o.ttl_ms = *ttl_ms;
		}
		return check(ds_store_set_attr(get(), key.c_str(), mask, &o));
	}

	result<Task> get(const std::string &key, std::span<std::byte> buf, int64_t min_version = -1,
			 uint64_t offset = 0)
	{
		iovec v{buf.data(), buf.size()};
		return get(key, std::span<const iovec>(&v, 1), min_version, offset);
	}

	result<Task> get(const std::string &key, std::span<const iovec> iov, int64_t min_version = -1,
			 uint64_t offset = 0)
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		uint64_t id = 0;
		return task(ds_store_get(get(), key.c_str(), iov.data(), iov.size(), min_version, offset,
					 &id), id);
	}

	// Batches: the items (ds_store_batch_item: key, buffers, and each
	// key's result) and their buffers stay valid until the task is done;
	// each item's err says how its key went.
	result<Task> put_batch(std::span<ds_store_batch_item> items, const ReplicateConfig &cfg = {})
	{
		ds_store_replicate_config c = cfg.c();
		ds_store_put_opts o = cfg.opts();
		uint64_t id = 0;
		return task(ds_store_batch_put(get(), items.data(), items.size(), &c,
					       cfg.has_attrs() ? &o : nullptr, &id),
			    id);
	}

	result<Task> get_batch(std::span<ds_store_batch_item> items)
	{
		uint64_t id = 0;
		return task(ds_store_batch_get(get(), items.data(), items.size(), &id), id);
	}

	// At once: each item's err is 0 (version: the newest) or -ENOENT.
	result<void> exist_batch(std::span<ds_store_batch_item> items)
	{
		return check(ds_store_batch_exist(get(), items.data(), items.size()));
	}

	result<void> del_batch(std::span<ds_store_batch_item> items)
	{
		return check(ds_store_batch_del(get(), items.data(), items.size()));
	}

	result<Task> replicate(const std::string &key, const ReplicateConfig &cfg)
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		ds_store_replicate_config c = cfg.c();
		uint64_t id = 0;
		return task(ds_store_replicate(get(), key.c_str(), &c, &id), id);
	}

	result<Task> del(const std::string &key)
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		uint64_t id = 0;
		return task(ds_store_del(get(), key.c_str(), &id), id);
	}

	result<Task> sync(const std::string &key)
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		uint64_t id = 0;
		return task(ds_store_sync(get(), key.c_str(), &id), id);
	}

	result<void> buf_reg(std::span<std::byte> buf)
	{
		return check(ds_store_buf_reg(get(), buf.data(), buf.size()));
	}

	result<void> buf_dereg(void *addr) { return check(ds_store_buf_dereg(get(), addr)); }

	// One page from after ("": the first); *more says whether to go on.
	result<std::vector<ObjectInfo>> list(const std::string &prefix, const std::string &after = {},
					     uint32_t limit = 0, bool *more = nullptr)
	{
		if (detail::has_nul(prefix))
			return detail::nul_error("prefix");
		if (detail::has_nul(after))
			return detail::nul_error("after");
		ds_store_object_list *l = nullptr;
		if (int r = ds_store_list(get(), prefix.c_str(), after.empty() ? nullptr : after.c_str(),
					  limit, &l))
			return error{r, ds_store_errmsg(get())};
		std::vector<ObjectInfo> out(l->objects, l->objects + l->count);
		if (more)
			*more = l->more != 0;
		ds_store_list_free(l);
		return out;
	}

	// Every page.
	result<std::vector<ObjectInfo>> list_all(const std::string &prefix)
	{
		std::vector<ObjectInfo> all;
		std::string after;
		for (bool more = true; more;) {
			auto page = list(prefix, after, 0, &more);
			if (!page)
				return page.err();
			all.insert(all.end(), page->begin(), page->end());
			if (page->empty())
				break;
			after = page->back().key;
		}
		return all;
	}

	result<ObjectInfo> stat(const std::string &key)
	{
		if (detail::has_nul(key))
			return detail::nul_error("key");
		ObjectInfo info{};
		if (int r = ds_store_stat(get(), key.c_str(), &info))
			return error{r, ds_store_errmsg(get())};
		return info;
	}

	// Its heartbeats and rejoins, as this client saw them.
	result<Health> health() const
	{
		Health h{};
		if (int r = ds_store_health_get(get(), &h, sizeof(h)))
			return error{r, ds_store_errmsg(get())};
		return h;
	}

private:
	struct closer {
		void operator()(ds_store *s) const { ds_store_close(s, 0); }
	};

	explicit Client(ds_store *s) : s_(s) {}

	// id by reference: callers write task(ds_store_put(..., &id), id),
	// and a copy may be taken (GCC does) before the call has set it
	result<Task> task(int r, const uint64_t &id)
	{
		if (r)
			return error{r, ds_store_errmsg(get())};
		return Task(get(), id);
	}

	result<void> check(int r)
	{
		if (r)
			return error{r, ds_store_errmsg(get())};
		return {};
	}

	std::unique_ptr<ds_store, closer> s_;
};

// The read-only views (no client needed).
inline result<MasterInfo> master_info(const std::string &masters)
{
	MasterInfo info{};
	char err[256] = "";
	if (int r = ds_store_master_info(masters.c_str(), &info, err, sizeof(err)))
		return error{r, err};
	return info;
}

inline result<std::vector<ds_store_segment_info>> segment_list(const std::string &masters)
{
	ds_store_segment_info *segs = nullptr;
	size_t n = 0;
	char err[256] = "";
	if (int r = ds_store_segment_list(masters.c_str(), &segs, &n, err, sizeof(err)))
		return error{r, err};
	std::vector<ds_store_segment_info> out(segs, segs + n);
	free(segs);
	return out;
}

}  // namespace dsmem::store
