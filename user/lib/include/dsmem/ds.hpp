// SPDX-License-Identifier: BSD-2-Clause
// libdsuser -- header-only C++20 layer over the C ABI in ds.h.
// RAII handles and result types; nothing here throws, and no exception
// ever crosses the C ABI.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <dsmem/ds.h>

namespace dsmem {

// A failure: a negative errno and the best text there is for it.
struct error {
	int code = 0;
	std::string message;

	std::string what() const
	{
		if (!message.empty())
			return message;
		return std::strerror(-code);
	}
};

template <typename T>
class result {
public:
	result(T value) : v_(std::move(value)) {}
	result(error e) : v_(std::move(e)) {}

	bool ok() const { return v_.index() == 0; }
	explicit operator bool() const { return ok(); }
	T &value() & { return std::get<0>(v_); }
	T &&value() && { return std::get<0>(std::move(v_)); }
	T &operator*() & { return value(); }
	T *operator->() { return &value(); }
	const error &err() const { return std::get<1>(v_); }

private:
	std::variant<T, error> v_;
};

template <>
class result<void> {
public:
	result() = default;
	result(error e) : e_(std::move(e)), ok_(false) {}

	bool ok() const { return ok_; }
	explicit operator bool() const { return ok_; }
	const error &err() const { return e_; }

private:
	error e_;
	bool ok_ = true;
};

// A subset of the token cache's parameters, for context::cache_set()
// and context::cache_bench(): the ones set here change, the others stay.
class cache_params {
public:
	cache_params &set(ds_cache_param p, uint64_t value)
	{
		auto i = static_cast<unsigned int>(p);
		if (i < DS_CACHE_P_NR) {
			values_[i] = value;
			mask_ |= 1ULL << i;
		}
		return *this;
	}

	// By the module's name for it ("l1_capacity", "window", ...); false
	// when it has none so called.
	bool set_named(const std::string &name, uint64_t value)
	{
		int i = ds_cache_param_lookup(name.c_str());
		if (i < 0)
			return false;
		set(static_cast<ds_cache_param>(i), value);
		return true;
	}

	const uint64_t *values() const { return values_; }
	uint64_t mask() const { return mask_; }

private:
	uint64_t values_[DS_CACHE_PARAMS_MAX] = {};
	uint64_t mask_ = 0;
};

// A token's fields after its header, by the module's table: name and
// value, in layout order; empty when t holds no valid token.
inline std::vector<std::pair<std::string_view, uint32_t>> token_fields(const ds_token_info &t)
{
	std::vector<std::pair<std::string_view, uint32_t>> out;
	int n = ds_token_field_count(&t);
	for (int i = 0; i < n; i++) {
		const char *name = nullptr;
		uint32_t value = 0;
		if (ds_token_field(&t, static_cast<unsigned int>(i), &name, &value) == 0)
			out.emplace_back(name, value);
	}
	return out;
}

class context {
public:
	static result<context> open()
	{
		ds_ctx *c = nullptr;
		int ret = ds_ctx_open(&c);
		if (ret == -ENOENT)
			return error{ret, "the dsmem module is not loaded"};
		if (ret)
			return error{ret, {}};
		return context(c);
	}

	ds_ctx *get() const { return ctx_.get(); }

	result<ds_version> version()
	{
		ds_version v{};
		if (int r = ds_version_get(get(), &v))
			return last_error(r);
		return v;
	}

	result<ds_version> chrdev_version()
	{
		ds_version v{};
		if (int r = ds_ctx_chrdev_version(get(), &v))
			return last_error(r);
		return v;
	}

	result<std::vector<ds_dev_info>> devices()
	{
		ds_dev_info *arr = nullptr;
		size_t n = 0;
		if (int r = ds_dev_list(get(), &arr, &n))
			return last_error(r);
		std::vector<ds_dev_info> out(arr, arr + n);
		ds_dev_list_free(arr);
		return out;
	}

	result<ds_dev_info> device(const std::string &name)
	{
		ds_dev_info d{};
		if (int r = ds_dev_get(get(), name.c_str(), &d))
			return last_error(r);
		return d;
	}

	result<ds_dev_info> device(uint32_t index)
	{
		ds_dev_info d{};
		if (int r = ds_dev_get_by_index(get(), index, &d))
			return last_error(r);
		return d;
	}

	result<std::vector<ds_stat>> stats()
	{
		ds_stat *arr = nullptr;
		size_t n = 0;
		if (int r = ds_stats_get(get(), &arr, &n))
			return last_error(r);
		std::vector<ds_stat> out(arr, arr + n);
		ds_stats_free(arr);
		return out;
	}

	result<void> reset_stats()
	{
		if (int r = ds_stats_reset(get()))
			return last_error(r);
		return {};
	}

	// Nodes, peers, segments: adding and deleting need CAP_NET_ADMIN.
	// dev: the node's RDMA device, or several as "rxe0,rxe1" (ds_node_add).
	result<void> node_add(uint32_t id, const std::string &dev, uint16_t port)
	{
		return check(ds_node_add(get(), id, dev.c_str(), port));
	}

	// key empty: an insecure node, explicitly; node_add proves DS_KEY_DEFAULT
	result<void> node_add_keyed(uint32_t id, const std::string &dev, uint16_t port,
				    const std::string &key)
	{
		return check(ds_node_add_keyed(get(), id, dev.c_str(), port,
					       key.empty() ? nullptr : key.c_str()));
	}

	result<void> node_del(uint32_t id) { return check(ds_node_del(get(), id)); }

	// Whom the node admits: DS_ACCEPT_PEERS, or DS_ACCEPT_KEYED (keyed nodes).
	result<void> node_set_accept(uint32_t id, int accept)
	{
		return check(ds_node_set_accept(get(), id, accept));
	}

	// Keys: CAP_NET_ADMIN to add or delete; a list gives names, never secrets.
	result<void> key_add(const std::string &name, const void *key, size_t len,
			     bool replace = false)
	{
		return check(ds_key_add(get(), name.c_str(), key, len, replace));
	}

	result<void> key_del(const std::string &name) { return check(ds_key_del(get(), name.c_str())); }

	result<ds_node_info> node(uint32_t id)
	{
		ds_node_info n{};
		if (int r = ds_node_get(get(), id, &n))
			return last_error(r);
		return n;
	}

	result<std::vector<ds_node_info>> nodes()
	{
		ds_node_info *arr = nullptr;
		size_t n = 0;
		return list(ds_node_list(get(), &arr, &n), arr, n);
	}

	// The node's RDMA devices, all of them, in order.
	result<std::vector<ds_node_dev>> node_devs(uint32_t id)
	{
		std::vector<ds_node_dev> out(DS_NODE_DEVS_MAX);
		for (;;) {
			int r = ds_node_devs(get(), id, out.data(),
					     static_cast<unsigned int>(out.size()));
			if (r < 0)
				return last_error(r);
			bool whole = static_cast<size_t>(r) <= out.size();
			out.resize(static_cast<size_t>(r));
			if (whole)
				return out;
		}
	}

	// The new peer's id.
	result<uint32_t> peer_add(uint32_t node, const std::string &addr, uint16_t port)
	{
		uint32_t id = 0;
		if (int r = ds_peer_add(get(), node, addr.c_str(), port, &id))
			return last_error(r);
		return id;
	}

	// A peer that must be node remote (0: any); flags DS_PEER_LISTEN: admit
	// it when it connects, never dial it (port 0).
	result<uint32_t> peer_add_id(uint32_t node, const std::string &addr, uint16_t port,
				     uint32_t remote, unsigned int flags = 0)
	{
		uint32_t id = 0;
		if (int r = ds_peer_add_id(get(), node, addr.c_str(), port, remote, flags, &id))
			return last_error(r);
		return id;
	}

	result<void> peer_del(uint32_t node, uint32_t peer_id)
	{
		return check(ds_peer_del(get(), node, peer_id));
	}

	result<ds_peer_info> peer(uint32_t node, uint32_t peer_id)
	{
		ds_peer_info p{};
		if (int r = ds_peer_get(get(), node, peer_id, &p))
			return last_error(r);
		return p;
	}

	// node 0: the peers of every node
	result<std::vector<ds_peer_info>> peers(uint32_t node = 0)
	{
		ds_peer_info *arr = nullptr;
		size_t n = 0;
		return list(ds_peer_list(get(), node, &arr, &n), arr, n);
	}

	result<ds_seg_info> seg_add(uint32_t node, uint64_t size, int32_t numa = -1,
				    int translate = DS_TRANSLATE_SEGMENT)
	{
		ds_seg_info s{};
		if (int r = ds_seg_add(get(), node, size, numa, translate, &s))
			return last_error(r);
		return s;
	}

	result<void> seg_del(uint32_t node, uint32_t seg_id)
	{
		return check(ds_seg_del(get(), node, seg_id));
	}

	result<ds_seg_info> seg(uint32_t node, uint32_t seg_id)
	{
		ds_seg_info s{};
		if (int r = ds_seg_get(get(), node, seg_id, &s))
			return last_error(r);
		return s;
	}

	// node 0: the segments of every node
	result<std::vector<ds_seg_info>> segs(uint32_t node = 0)
	{
		ds_seg_info *arr = nullptr;
		size_t n = 0;
		return list(ds_seg_list(get(), node, &arr, &n), arr, n);
	}

	result<void> seg_grant(uint32_t node, uint32_t seg_id, uint32_t remote_node,
				 uint8_t perm)
	{
		return check(ds_seg_grant(get(), node, seg_id, remote_node, perm));
	}

	result<void> seg_revoke(uint32_t node, uint32_t seg_id, uint32_t remote_node)
	{
		return check(ds_seg_revoke(get(), node, seg_id, remote_node));
	}

	// The remote-memory service by message (see ds_rdm_alloc()).
	struct rdm_block {
		uint64_t va;
		uint64_t pa;
	};

	// seg_id 0: any segment the remote node granted us with write permission
	result<rdm_block> rdm_alloc(uint32_t node, uint32_t remote_node, uint64_t size,
				    uint32_t seg_id = 0)
	{
		rdm_block b{};
		if (int r = ds_rdm_alloc(get(), node, remote_node, seg_id, size, &b.va, &b.pa))
			return last_error(r);
		return b;
	}

	result<void> rdm_free(uint32_t node, uint64_t va)
	{
		return check(ds_rdm_free(get(), node, va));
	}

	// At most DS_RDM_DATA_MAX bytes each.
	result<std::vector<uint8_t>> rdm_read(uint32_t node, uint64_t va, size_t len)
	{
		static_assert(DS_RDM_DATA_MAX == 4096, "the text below");
		if (len > DS_RDM_DATA_MAX)	// before allocating for it
			return error{-EINVAL, "at most 4096 bytes per read"};
		std::vector<uint8_t> buf(len);
		if (int r = ds_rdm_read(get(), node, va, buf.data(), len))
			return last_error(r);
		return buf;
	}

	result<void> rdm_write(uint32_t node, uint64_t va, std::span<const uint8_t> data)
	{
		return check(ds_rdm_write(get(), node, va, data.data(), data.size()));
	}

	// Tokens: setting needs CAP_NET_ADMIN.
	result<ds_token_info> token(uint32_t handle)
	{
		ds_token_info t{};
		if (int r = ds_token_get(get(), handle, &t))
			return last_error(r);
		return t;
	}

	// type: enum ds_token_type, -1 any; node 0: any
	result<std::vector<ds_token_info>> tokens(int type = -1, uint32_t node = 0)
	{
		ds_token_info *arr = nullptr;
		size_t n = 0;
		return list(ds_token_list(get(), type, node, &arr, &n), arr, n);
	}

	// The token as it is after the change.
	result<ds_token_info> token_set(uint32_t handle, const ds_token_update &u)
	{
		ds_token_info t{};
		if (int r = ds_token_set(get(), handle, &u, &t))
			return last_error(r);
		return t;
	}

	// The token cache: setting, tracing and benchmarking need CAP_NET_ADMIN.
	result<ds_cache_info> cache()
	{
		ds_cache_info c{};
		if (int r = ds_cache_get(get(), &c))
			return last_error(r);
		return c;
	}

	// The cache as it is after the change.
	result<ds_cache_info> cache_set(const cache_params &p, bool reset = false)
	{
		ds_cache_info c{};
		if (int r = ds_cache_set(get(), p.values(), p.mask(), reset, &c))
			return last_error(r);
		return c;
	}

	// fd: a regular file open for writing; the module keeps its own
	// reference, so it may be closed at once.
	result<void> trace_start(int fd) { return check(ds_trace_start(get(), fd)); }

	result<ds_trace_info> trace_stop()
	{
		ds_trace_info t{};
		if (int r = ds_trace_stop(get(), &t))
			return last_error(r);
		return t;
	}

	result<ds_cache_bench_result> cache_bench(uint32_t qps, uint32_t ops, uint32_t seed = 1,
						  const cache_params &p = {})
	{
		ds_cache_bench_result b{};
		if (int r = ds_cache_bench(get(), qps, ops, seed, p.values(), p.mask(), &b))
			return last_error(r);
		return b;
	}

	// A trace on a private cache: its moves between tiers, in order, and
	// its counters.  maint_ns 0: the module's default.
	struct replay_result {
		std::vector<ds_cache_move> moves;
		bool truncated = false;		// more moves were made than listed
		std::vector<ds_stat> stats;
	};

	result<replay_result> cache_replay(std::span<const ds_trace_rec> recs,
					   uint64_t maint_ns = 0, const cache_params &p = {})
	{
		auto r = std::make_unique<ds_cache_replay_result>();
		if (int e = ds_cache_replay(get(), recs.data(), recs.size(), maint_ns, p.values(),
					    p.mask(), r.get()))
			return last_error(e);
		replay_result out;
		out.moves.assign(r->moves, r->moves + r->nmoves);
		out.truncated = r->truncated != 0;
		out.stats.assign(r->stats, r->stats + r->nstats);
		ds_cache_replay_free(r.get());
		return out;
	}

	// The Slope range: one node's summary, or every node's (node 0) or
	// one node's with its leases and migrations.
	result<ds_slope_range_info> slope_range(uint32_t node)
	{
		ds_slope_range_info r{};
		if (int e = ds_slope_range_get(get(), node, &r))
			return last_error(e);
		return r;
	}

	struct slope_listing {
		std::vector<ds_slope_range_info> ranges;
		std::vector<ds_slope_lease_info> leases;
		std::vector<ds_slope_mig_info> migs;
	};

	result<slope_listing> slope_ranges(uint32_t node = 0)
	{
		ds_slope_ranges l{};
		if (int e = ds_slope_range_list(get(), node, &l))
			return last_error(e);
		slope_listing out;
		out.ranges.assign(l.ranges, l.ranges + l.nranges);
		out.leases.assign(l.leases, l.leases + l.nleases);
		out.migs.assign(l.migs, l.migs + l.nmigs);
		ds_slope_range_list_free(&l);
		return out;
	}

private:
	struct closer {
		void operator()(ds_ctx *c) const { ds_ctx_close(c); }
	};

	explicit context(ds_ctx *c) : ctx_(c) {}
	error last_error(int code) const { return error{code, ds_ctx_errmsg(get())}; }

	result<void> check(int code) const
	{
		if (code)
			return last_error(code);
		return {};
	}

	// Take over a C list (malloc'd, freed with free()).
	template <typename T>
	result<std::vector<T>> list(int code, T *arr, size_t n) const
	{
		if (code)
			return last_error(code);
		std::vector<T> out(arr, arr + n);
		std::free(arr);
		return out;
	}

	std::unique_ptr<ds_ctx, closer> ctx_;
};

class monitor {
public:
	static result<monitor> open()
	{
		ds_monitor *m = nullptr;
		if (int r = ds_monitor_open(&m))
			return error{r, {}};
		return monitor(m);
	}

	int fd() const { return ds_monitor_fd(mon_.get()); }

	// -EAGAIN in the error when the timeout passed first.
	result<ds_event> next(int timeout_ms = -1)
	{
		ds_event ev{};
		if (int r = ds_monitor_next(mon_.get(), &ev, timeout_ms))
			return error{r, {}};
		return ev;
	}

private:
	struct closer {
		void operator()(ds_monitor *m) const { ds_monitor_close(m); }
	};

	explicit monitor(ds_monitor *m) : mon_(m) {}

	std::unique_ptr<ds_monitor, closer> mon_;
};

// The data path: a handle on /dev/dsmem bound to one local node.
// Errors carry no text beyond the errno's.
class xfer {
public:
	// attr: ds_xfer_attr's options (the rings, the spin); the defaults
	// when left out
	static result<xfer> open(uint32_t node, const ds_xfer_attr *attr = nullptr)
	{
		ds_xfer *x = nullptr;
		if (int r = ds_xfer_open_attr(node, attr, &x)) {
			if (r == -EOPNOTSUPP)
				return error{r, "the dsmem module has no data path"};
			if (r == -EPROTO)
				return error{r, "the dsmem module speaks another ABI version"};
			return error{r, {}};
		}
		return xfer(x);
	}

	ds_xfer *get() const { return x_.get(); }
	int fd() const { return ds_xfer_fd(get()); }
	// whether transfers go through the shared rings
	bool rings() const { return ds_xfer_rings(get()) == 1; }
	result<void> set_spin(uint32_t spin_us) { return check(ds_xfer_set_spin(get(), spin_us)); }

	// A handle for ds_transfer_request.mr.
	result<uint32_t> mr_reg(void *addr, size_t len)
	{
		uint32_t mr = 0;
		if (int r = ds_mr_reg(get(), addr, len, &mr))
			return error{r, {}};
		return mr;
	}

	result<void> mr_dereg(uint32_t mr) { return check(ds_mr_dereg(get(), mr)); }

	result<void> read(uint64_t gaddr, void *buf, size_t len)
	{
		return check(ds_read(get(), gaddr, buf, len));
	}

	result<void> write(uint64_t gaddr, const void *buf, size_t len)
	{
		return check(ds_write(get(), gaddr, buf, len));
	}

	// The value found; the swap happened iff it equals expect.
	result<uint64_t> cas(uint64_t gaddr, uint64_t expect, uint64_t desired)
	{
		uint64_t old = 0;
		if (int r = ds_cas(get(), gaddr, expect, desired, &old))
			return error{r, {}};
		return old;
	}

	// The value before the addition.
	result<uint64_t> faa(uint64_t gaddr, uint64_t add)
	{
		uint64_t old = 0;
		if (int r = ds_faa(get(), gaddr, add, &old))
			return error{r, {}};
		return old;
	}

	// The task id, for query().
	result<uint64_t> submit(std::span<const ds_transfer_request> reqs)
	{
		uint64_t task = 0;
		if (int r = ds_batch_submit(get(), reqs.data(), reqs.size(), &task))
			return error{r, {}};
		return task;
	}

	// The task's state (enum ds_task_state); st is filled once it is done.
	result<int> query(uint64_t task, bool wait = true, bool release = true,
			  std::span<ds_transfer_status> st = {})
	{
		int state = DS_TASK_PENDING;
		if (int r = ds_task_query(get(), task, wait, release, &state,
					  st.empty() ? nullptr : st.data(), st.size()))
			return error{r, {}};
		return state;
	}

private:
	struct closer {
		void operator()(ds_xfer *x) const { ds_xfer_close(x); }
	};

	explicit xfer(ds_xfer *x) : x_(x) {}

	static result<void> check(int code)
	{
		if (code)
			return error{code, {}};
		return {};
	}

	std::unique_ptr<ds_xfer, closer> x_;
};

// A B+tree on disaggregated memory (see ds.h).  One handle serves every
// thread of the process.
class btree {
public:
	struct entry {
		uint64_t key;
		std::vector<uint8_t> value;
	};

	// The tree's name: the global address of segs[0].
	static result<uint64_t> create(uint32_t node, std::span<const uint64_t> segs,
				       const ds_btree_create_opts &o = {})
	{
		uint64_t addr = 0;
		if (int r = ds_btree_create(node, segs.data(), segs.size(), &o, &addr)) {
			if (r == -EEXIST)
				return error{r, "the first segment already holds a tree"};
			if (r == -EACCES)
				return error{r, "a segment is not granted read-write to this node"};
			if (r == -ENOSPC)
				return error{r, "a segment is too small for the layout"};
			return error{r, {}};
		}
		return addr;
	}

	static result<btree> open(uint32_t node, uint64_t addr,
				  const ds_btree_open_opts &o = {})
	{
		ds_btree *t = nullptr;
		if (int r = ds_btree_open(node, addr, &o, &t)) {
			if (r == -ENOENT)
				return error{r, "no tree at that address"};
			if (r == -EUSERS)
				return error{r, "every client slot of the tree is taken"};
			return error{r, {}};
		}
		return btree(t);
	}

	static result<void> drop(uint32_t node, uint64_t addr)
	{
		if (int r = ds_btree_drop(node, addr)) {
			if (r == -EBUSY)
				return error{r, "the tree is open on some compute node"};
			return error{r, {}};
		}
		return {};
	}

	ds_btree *get() const { return t_.get(); }

	// Inline (8-byte) values; nullopt when the key is absent.
	result<std::optional<uint64_t>> get(uint64_t key) const
	{
		uint64_t v = 0;
		int r = ds_btree_get(get(), key, &v, sizeof(v), nullptr);
		if (r == -ENOENT)
			return std::optional<uint64_t>{};
		if (r)
			return error{r, {}};
		return std::optional<uint64_t>{v};
	}

	// Any value; nullopt when the key is absent.
	result<std::optional<std::vector<uint8_t>>> get_bytes(uint64_t key) const
	{
		std::vector<uint8_t> v(DS_BTREE_VALUE_MAX);
		size_t n = 0;
		int r = ds_btree_get(get(), key, v.data(), v.size(), &n);
		if (r == -ENOENT)
			return std::optional<std::vector<uint8_t>>{};
		if (r)
			return error{r, {}};
		v.resize(n);
		return std::optional<std::vector<uint8_t>>{std::move(v)};
	}

	result<void> put(uint64_t key, uint64_t value)
	{
		return check(ds_btree_put(get(), key, &value, sizeof(value)));
	}

	result<void> put(uint64_t key, std::span<const uint8_t> value)
	{
		return check(ds_btree_put(get(), key, value.data(), value.size()));
	}

	// false when the key was absent.
	result<bool> del(uint64_t key)
	{
		int r = ds_btree_del(get(), key);
		if (r == -ENOENT)
			return false;
		if (r)
			return error{r, {}};
		return true;
	}

	// Up to limit entries from start, ascending.
	result<std::vector<entry>> scan(uint64_t start, size_t limit) const
	{
		const size_t vs = value_size();
		std::vector<uint64_t> keys(limit);
		std::vector<uint8_t> vals(limit * vs);
		size_t n = 0;
		if (int r = ds_btree_scan(get(), start, limit, keys.data(), vals.data(), &n))
			return error{r, {}};
		std::vector<entry> out(n);
		for (size_t i = 0; i < n; i++) {
			out[i].key = keys[i];
			out[i].value.assign(vals.begin() + static_cast<ptrdiff_t>(i * vs),
					    vals.begin() + static_cast<ptrdiff_t>((i + 1) * vs));
		}
		return out;
	}

	// 8: inline; known locally
	uint32_t value_size() const { return ds_btree_value_size(get()); }

	// ---- byte-string keys (trees created with a key_max) ----
	struct kentry {
		std::string key;
		std::vector<uint8_t> value;
	};

	// 0: integer keys; known locally
	uint32_t key_max() const { return ds_btree_key_max(get()); }

	result<std::optional<std::vector<uint8_t>>> get_bytes(std::string_view key) const
	{
		std::vector<uint8_t> v(DS_BTREE_VALUE_MAX);
		size_t n = 0;
		int r = ds_btree_kget(get(), key.data(), key.size(), v.data(), v.size(), &n);
		if (r == -ENOENT)
			return std::optional<std::vector<uint8_t>>{};
		if (r)
			return key_error(r, key.size());
		v.resize(n);
		return std::optional<std::vector<uint8_t>>{std::move(v)};
	}

	result<void> put(std::string_view key, std::span<const uint8_t> value)
	{
		if (int r = ds_btree_kput(get(), key.data(), key.size(), value.data(), value.size()))
			return key_error(r, key.size());
		return {};
	}

	result<void> put(std::string_view key, uint64_t value)
	{
		return put(key, std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&value), 8));
	}

	// false when the key was absent.
	result<bool> del(std::string_view key)
	{
		int r = ds_btree_kdel(get(), key.data(), key.size());
		if (r == -ENOENT)
			return false;
		if (r)
			return key_error(r, key.size());
		return true;
	}

	// Up to limit entries from start (empty: the first key), ascending.
	result<std::vector<kentry>> scan(std::string_view start, size_t limit) const
	{
		const size_t vs = value_size();
		std::vector<ds_btree_key> keys(limit);
		std::vector<uint8_t> vals(limit * vs);
		size_t n = 0;
		if (int r = ds_btree_kscan(get(), start.data(), start.size(), limit, keys.data(),
					   vals.data(), &n))
			return key_error(r, start.empty() ? 8 : start.size());
		std::vector<kentry> out(n);
		for (size_t i = 0; i < n; i++) {
			out[i].key.assign(reinterpret_cast<const char *>(keys[i].bytes), keys[i].len);
			out[i].value.assign(vals.begin() + static_cast<ptrdiff_t>(i * vs),
					    vals.begin() + static_cast<ptrdiff_t>((i + 1) * vs));
		}
		return out;
	}

	result<ds_btree_info> info() const
	{
		ds_btree_info in{};
		if (int r = ds_btree_describe(get(), &in))
			return error{r, {}};
		return in;
	}

	ds_btree_stats stats() const
	{
		ds_btree_stats st{};
		ds_btree_stats_get(get(), &st);
		return st;
	}

	void reset_stats() { ds_btree_stats_reset(get()); }

	result<std::vector<ds_btree_member>> members() const
	{
		std::vector<ds_btree_member> m(DS_BTREE_SEGS_MAX * DS_BTREE_REPLICAS_MAX);
		size_t n = 0;
		if (int r = ds_btree_members(get(), m.data(), m.size(), &n))
			return error{r, {}};
		m.resize(n);
		return m;
	}
	result<void> spare_add(uint64_t seg) { return check(ds_btree_spare_add(get(), seg)); }
	// The report also when the walk found something wrong (-EUCLEAN).
	result<ds_btree_verify_report> verify() const
	{
		ds_btree_verify_report rep{};
		int r = ds_btree_verify(get(), &rep);
		if (r && r != -EUCLEAN)
			return error{r, {}};
		return rep;
	}

private:
	struct closer {
		void operator()(ds_btree *t) const { ds_btree_close(t); }
	};

	explicit btree(ds_btree *t) : t_(t) {}

	static result<void> check(int code)
	{
		if (code)
			return error{code, {}};
		return {};
	}

	error key_error(int code, size_t klen) const
	{
		if (code == -EMSGSIZE)
			return error{code, "the key is longer than the tree's " +
					   std::to_string(key_max()) + " bytes"};
		if (code == -EINVAL && !key_max() && klen != 8)
			return error{code, "this tree takes 8-byte big-endian keys"};
		return error{code, {}};
	}

	std::unique_ptr<ds_btree, closer> t_;
};

}  // namespace dsmem
