// SPDX-License-Identifier: BSD-2-Clause
// _dsmem: the object store's client for Python, over libdsstore's C++
// layer (<dsmem/store.hpp>).  The Pythonic surface (dsmem.Store, its
// exceptions, futures, batch conventions) is dsmem/__init__.py; this is
// what needs C: Python buffers handed to the store without a copy, and
// every call into the library made without the GIL.
//
// Conventions inside: a failure of the store is thrown as Failure and
// raised as the exception dsmem/__init__.py's factory makes of it; a
// Py_buffer (View) is taken and released with the GIL held, and stays
// held across the GIL-free call that uses its memory.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include <dsmem/store.hpp>

namespace py = pybind11;
namespace st = dsmem::store;

namespace {

// A failure of the store: a negative errno, the library's words, and
// what dsmem's exceptions carry besides.
struct Failure {
	int code;
	std::string message;
	std::string key;		// the key it is about ("": none)
	int64_t version = -1;		// FlushError: the version that was put
	int64_t largest_version = -1;	// ERANGE: the newest readable one
};

Failure failure(const dsmem::error &e, const std::string &key = {})
{
	return Failure{e.code ? e.code : -EIO, e.what(), key};
}

// dsmem/__init__.py's factory(errno, message, key, version,
// largest_version) -> exception instance; set once at import and kept
// for the interpreter's life (a handle: nothing to destroy at exit).
py::handle error_factory;

// A Python buffer, held.  Taken and released with the GIL.
class View {
public:
	View() = default;
	View(const View &) = delete;
	View &operator=(const View &) = delete;
	View(View &&o) noexcept : v_(o.v_), held_(o.held_), copy_(std::move(o.copy_))
	{
		o.held_ = false;
	}
	~View()
	{
		if (held_)
			PyBuffer_Release(&v_);
	}

	// what's the object's bytes, as they are (no copy): contiguous,
	// writable if asked.  what names the argument in the errors.
	static View take(py::handle o, bool writable, const char *what)
	{
		View b;
		if (!PyObject_CheckBuffer(o.ptr()))
			throw py::type_error(std::string(what) + " must be a bytes-like object (the buffer "
					     "protocol), not '" + Py_TYPE(o.ptr())->tp_name + "'");
		if (PyObject_GetBuffer(o.ptr(), &b.v_, PyBUF_ANY_CONTIGUOUS)) {
			PyErr_Clear();
			PyErr_Format(PyExc_BufferError, "%s must be contiguous (C or Fortran order)", what);
			throw py::error_already_set();
		}
		b.held_ = true;
		if (writable && b.v_.readonly)
			throw py::type_error(std::string(what) + " must be a writable bytes-like object, not "
					     "the read-only '" + Py_TYPE(o.ptr())->tp_name + "'");
		if (b.v_.len == 0)
			throw py::value_error(std::string(what) + " is empty");
		return b;
	}

	// for a put: contiguous as it is, else a contiguous copy (a strided
	// numpy view, a memoryview slice with a step)
	static View take_or_copy(py::handle o, const char *what)
	{
		View b;
		if (!PyObject_CheckBuffer(o.ptr()))
			throw py::type_error(std::string(what) + " must be a bytes-like object (the buffer "
					     "protocol), not '" + Py_TYPE(o.ptr())->tp_name + "'");
		if (PyObject_GetBuffer(o.ptr(), &b.v_, PyBUF_ANY_CONTIGUOUS) == 0) {
			b.held_ = true;
		} else {
			PyErr_Clear();
			Py_buffer full;
			if (PyObject_GetBuffer(o.ptr(), &full, PyBUF_FULL_RO))
				throw py::error_already_set();
			b.copy_ = std::make_unique<std::vector<char>>(static_cast<size_t>(full.len));
			int r = PyBuffer_ToContiguous(b.copy_->data(), &full, full.len, 'C');
			PyBuffer_Release(&full);
			if (r)
				throw py::error_already_set();
		}
		if (b.size() == 0)
			throw py::value_error(std::string(what) + " is empty: an object is 1 byte at least");
		return b;
	}

	void *data() const { return copy_ ? copy_->data() : v_.buf; }
	size_t size() const { return copy_ ? copy_->size() : static_cast<size_t>(v_.len); }
	iovec iov() const { return {data(), size()}; }

private:
	Py_buffer v_{};
	bool held_ = false;
	std::unique_ptr<std::vector<char>> copy_;
};

// What one library call of a batch takes: DS_STORE_BATCH_MAX items at most.
using BatchPart = std::span<ds_store_batch_item>;

// A batch of one buffer per key: the items point into iovs, the iovs
// into the held views, so it stays where it was made.
struct BufferBatch {
	std::vector<View> views;
	std::vector<iovec> iovs;
	std::vector<ds_store_batch_item> items;

	// take(buffer) -> View; call and noun name the arguments in the error
	template <typename Take>
	BufferBatch(const char *call, const char *noun, const std::vector<std::string> &keys,
		    py::sequence buffers, Take &&take)
	{
		if (static_cast<size_t>(py::len(buffers)) != keys.size())
			throw py::value_error(std::string(call) + ": " + std::to_string(keys.size()) +
					      " keys and " + std::to_string(py::len(buffers)) + " " +
					      noun);
		views.reserve(keys.size());
		for (size_t i = 0; i < keys.size(); i++)
			views.push_back(take(buffers[i]));
		iovs.resize(keys.size());
		items.resize(keys.size());
		for (size_t i = 0; i < keys.size(); i++) {
			iovs[i] = views[i].iov();
			items[i].key = keys[i].c_str();
			items[i].iov = &iovs[i];
			items[i].iovcnt = 1;
		}
	}
	BufferBatch(const BufferBatch &) = delete;
	BufferBatch &operator=(const BufferBatch &) = delete;
};

// A task's end: its status, or the Failure it ended with.  An EAGER
// put whose flush failed ended COMPLETE with err: a FlushError that
// carries the version it did put.
st::TaskStatus finish(dsmem::result<st::Task> t, const std::string &key)
{
	if (!t)
		throw failure(t.err(), key);
	auto r = st::Task::check(t.value().wait());
	if (!r)
		throw failure(r.err(), key);
	return r.value();
}

// Bytes-like objects for the key convert to std::string (pybind11 takes
// bytes and str); dsmem/__init__.py has checked them already.

struct PutOpts {
	uint32_t replicas = 1;
	uint32_t nvmeof_replicas = 0;
	uint32_t flush = DS_STORE_FLUSH_NONE;
	bool prefer_local = false;
	bool soft_pin = false;
	uint64_t ttl_ms = 0;

	st::ReplicateConfig cfg() const
	{
		st::ReplicateConfig c;
		c.dram_replicas = replicas;
		c.nvmeof_replicas = nvmeof_replicas;
		c.flush = static_cast<st::Flush>(flush);
		c.prefer_local = prefer_local;
		c.soft_pin = soft_pin;
		c.ttl_ms = ttl_ms;
		return c;
	}
};

py::dict info_dict(const st::ObjectInfo &o)
{
	py::dict d;
	d["key"] = py::bytes(o.key, strnlen(o.key, sizeof(o.key)));
	d["version"] = o.version;
	d["size"] = o.size;
	d["replicas"] = o.dram_replicas;
	d["nvmeof_replicas"] = o.nvmeof_replicas;
	d["flushed"] = o.flushed != 0;
	d["flushed_version"] = o.flushed_version;
	d["soft_pin"] = st::is_soft_pinned(o);
	d["ctime_ns"] = o.ctime_ns;
	d["expires_ns"] = o.expires_ns;
	d["atime_ns"] = o.atime_ns;
	d["config_replicas"] = o.config.dram_replicas;
	d["config_nvmeof_replicas"] = o.config.nvmeof_replicas;
	d["config_flush"] = o.config.flush;
	d["config_prefer_local"] = o.config.prefer_local != 0;
	return d;
}

class Client {
public:
	Client(const std::string &masters, uint32_t node_id, uint64_t segment_size,
	       const std::optional<std::string> &addr, uint32_t threads, uint32_t timeout_ms,
	       const std::optional<std::string> &tls_ca, const std::optional<std::string> &tls_cert,
	       const std::optional<std::string> &tls_key, bool insecure)
	{
		st::Config c;
		c.masters = masters;
		c.node_id = node_id;
		c.addr = addr.value_or("");
		c.segment_size = segment_size;
		c.threads = threads;
		c.timeout_ms = timeout_ms;
		c.tls_ca = tls_ca.value_or("");
		c.tls_cert = tls_cert.value_or("");
		c.tls_key = tls_key.value_or("");
		c.insecure = insecure;
		std::optional<dsmem::error> err;
		{
			py::gil_scoped_release nogil;
			auto r = st::Client::open(c);
			if (r)
				c_.emplace(std::move(r.value()));
			else
				err = r.err();
		}
		if (err)
			throw failure(*err);
	}

	// A client that never opened: every call checks its arguments and
	// then says the store is closed (the host's tests, without a store).
	Client() = default;

	~Client()
	{
		try {
			close(false);
		} catch (...) {
		}
	}

	bool closed() const { return !c_; }

	void close(bool drain)
	{
		std::vector<uintptr_t> regs;
		for (const auto &b : bufs_)
			regs.push_back(b.first);
		{
			py::gil_scoped_release nogil;
			std::unique_lock<std::shared_mutex> lk(mu_);
			if (c_) {
				for (uintptr_t a : regs)
					c_->buf_dereg(reinterpret_cast<void *>(a));
				c_->close(drain);
				c_.reset();
			}
		}
		bufs_.clear();	// releases the buffers, with the GIL
	}

	int64_t put(const std::string &key, py::handle value, const PutOpts &o, bool as_is)
	{
		View v = as_is ? View::take(value, false, "put_from()'s buffer")
			       : View::take_or_copy(value, "the value");
		iovec iov = v.iov();
		st::ReplicateConfig cfg = o.cfg();
		return run([&](st::Client &c) {
			st::TaskStatus s = finish(c.put(key, std::span<const iovec>(&iov, 1), cfg), key);
			if (s.err) {
				Failure f = Failure{s.err, why(s.err), key};
				f.version = s.version;
				throw f;
			}
			return s.version;
		});
	}

	// -> (bytes read, version read)
	std::pair<uint64_t, int64_t> get_into(const std::string &key, py::handle buffer,
					      int64_t min_version, uint64_t offset)
	{
		View v = View::take(buffer, true, "get_into()'s buffer");
		iovec iov = v.iov();
		return run([&](st::Client &c) {
			st::TaskStatus s = get_task(c, key, &iov, min_version, offset);
			return std::make_pair(s.bytes, s.version);
		});
	}

	// The whole object as bytes: its size from a stat, then a get into
	// bytes of that size.  A newer version may come between the two:
	// the get reads the newest, so a version other than the stat's that
	// filled the buffer may have been cut short, and is read again at
	// its own size.  -> (bytes, version)
	std::pair<py::bytes, int64_t> get(const std::string &key, int64_t min_version)
	{
		check_open();
		for (int attempt = 0;; attempt++) {
			st::ObjectInfo info = run([&](st::Client &c) { return stat_of(c, key); });
			if (info.size == 0)
				throw Failure{-EPROTO, "the master says the object is empty", key};
			PyObject *b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(info.size));
			if (!b)
				throw py::error_already_set();
			py::object owner = py::reinterpret_steal<py::object>(b);
			iovec iov{PyBytes_AS_STRING(b), info.size};
			st::TaskStatus s = run([&](st::Client &c) {
				return get_task(c, key, &iov, min_version, 0);
			});
			if (s.version != static_cast<int64_t>(info.version) && s.bytes == info.size &&
			    attempt < 8) {
				min_version = s.version;	// at least as new as the one just seen
				continue;
			}
			if (s.bytes < info.size && _PyBytes_Resize(&b, static_cast<Py_ssize_t>(s.bytes))) {
				owner.release();	// _PyBytes_Resize freed it
				throw py::error_already_set();
			}
			owner.release();
			return {py::reinterpret_steal<py::bytes>(b), s.version};
		}
	}

	py::dict stat(const std::string &key)
	{
		check_open();
		st::ObjectInfo info = run([&](st::Client &c) { return stat_of(c, key); });
		return info_dict(info);
	}

	// -> the newest complete version, or -1: none
	int64_t exists(const std::string &key)
	{
		check_open();
		return run([&](st::Client &c) -> int64_t {
			auto r = c.stat(key);
			if (!r) {
				if (r.err().code == -ENOENT)
					return -1;
				throw failure(r.err(), key);
			}
			return static_cast<int64_t>(r->version);
		});
	}

	void remove(const std::string &key)
	{
		check_open();
		run([&](st::Client &c) { return finish(c.del(key), key); });
	}

	void set_attr(const std::string &key, std::optional<bool> soft_pin,
		      std::optional<uint64_t> ttl_ms)
	{
		if (!soft_pin && !ttl_ms)
			throw py::value_error("set_attr: give soft_pin, ttl_ms or both");
		check_open();
		run([&](st::Client &c) {
			auto r = c.set_attr(key, soft_pin, ttl_ms);
			if (!r)
				throw failure(r.err(), key);
			return 0;
		});
	}

	// One page: -> (list of info dicts, more)
	std::pair<py::list, bool> list(const std::string &prefix, const std::string &after,
				       uint32_t limit)
	{
		check_open();
		bool more = false;
		std::vector<st::ObjectInfo> v = run([&](st::Client &c) {
			auto r = c.list(prefix, after, limit, &more);
			if (!r)
				throw failure(r.err());
			return std::move(r.value());
		});
		py::list out;
		for (const st::ObjectInfo &o : v)
			out.append(info_dict(o));
		return {out, more};
	}

	// Every key with prefix, deleted in batches: -> how many were
	// (keys gone meanwhile are not counted, and not an error).
	uint64_t remove_prefix(const std::string &prefix)
	{
		check_open();
		return run([&](st::Client &c) -> uint64_t {
			auto all = c.list_all(prefix);
			if (!all)
				throw failure(all.err());
			uint64_t removed = 0;
			std::vector<std::string> keys;
			for (const st::ObjectInfo &o : *all)
				keys.emplace_back(o.key);
			for (size_t at = 0; at < keys.size(); at += DS_STORE_BATCH_MAX) {
				size_t n = std::min<size_t>(DS_STORE_BATCH_MAX, keys.size() - at);
				std::vector<ds_store_batch_item> items(n);
				for (size_t i = 0; i < n; i++)
					items[i].key = keys[at + i].c_str();
				if (auto r = c.del_batch(items); !r)
					throw failure(r.err());
				for (const ds_store_batch_item &it : items) {
					if (it.err == 0)
						removed++;
					else if (it.err != -ENOENT)
						throw Failure{it.err, why(it.err), it.key};
				}
			}
			return removed;
		});
	}

	// Batches: -> (a tuple per key, errno 0 or negative first, then
	// put: version; get_batch: bytes, version; get_batch_into: bytes
	// read, version; exist: version; remove: versions deleted), and the
	// batch's message (the first failure's, or "").

	py::tuple put_batch(const std::vector<std::string> &keys, py::sequence values,
			    const PutOpts &o)
	{
		BufferBatch b("put_batch", "values", keys, values,
			      [](py::handle v) { return View::take_or_copy(v, "a value"); });
		st::ReplicateConfig cfg = o.cfg();
		std::string msg = batch_tasks(b.items, [&](st::Client &c, BatchPart part) {
			return c.put_batch(part, cfg);
		});
		return versions_of(b.items, msg);
	}

	py::tuple get_batch_into(const std::vector<std::string> &keys, py::sequence buffers)
	{
		BufferBatch b("get_batch_into", "buffers", keys, buffers,
			      [](py::handle v) { return View::take(v, true, "a buffer"); });
		std::string msg = batch_tasks(b.items, [](st::Client &c, BatchPart part) {
			return c.get_batch(part);
		});
		py::list out;
		for (const ds_store_batch_item &it : b.items)
			out.append(py::make_tuple(it.err, it.err ? 0 : it.bytes, it.version));
		return py::make_tuple(out, msg);
	}

	// Whole objects: a stat per key (their sizes), then one batch get
	// into bytes of those sizes; a key whose newer version may not have
	// fit is read again as get() does.
	py::tuple get_batch(const std::vector<std::string> &keys)
	{
		check_open();
		const size_t n = keys.size();
		std::vector<st::ObjectInfo> infos(n);
		std::vector<int> errs(n, 0);
		std::string first;
		run([&](st::Client &c) {
			for (size_t i = 0; i < n; i++) {
				auto r = c.stat(keys[i]);
				if (r) {
					infos[i] = r.value();
				} else {
					errs[i] = r.err().code ? r.err().code : -EIO;
					if (first.empty() && errs[i] != -ENOENT)
						first = "'" + keys[i].substr(0, 64) + "': " + r.err().what();
				}
			}
			return 0;
		});
		std::vector<py::object> data(n);
		std::vector<iovec> iovs;
		std::vector<ds_store_batch_item> items;
		std::vector<size_t> which;
		iovs.reserve(n);
		for (size_t i = 0; i < n; i++) {
			if (errs[i])
				continue;
			PyObject *b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(infos[i].size));
			if (!b)
				throw py::error_already_set();
			data[i] = py::reinterpret_steal<py::object>(b);
			iovs.push_back({PyBytes_AS_STRING(b), infos[i].size});
			ds_store_batch_item it{};
			it.key = keys[i].c_str();
			it.iovcnt = 1;
			items.push_back(it);
			which.push_back(i);
		}
		for (size_t k = 0; k < items.size(); k++)
			items[k].iov = &iovs[k];
		std::vector<int64_t> versions(n, -1);
		if (!items.empty()) {
			std::string msg = batch_tasks(items, [](st::Client &c, BatchPart part) {
				return c.get_batch(part);
			});
			if (first.empty())
				first = msg;
		}
		py::list out;
		for (size_t k = 0; k < items.size(); k++) {
			size_t i = which[k];
			const ds_store_batch_item &it = items[k];
			errs[i] = it.err;
			versions[i] = it.version;
			if (it.err)
				continue;
			if (it.version != static_cast<int64_t>(infos[i].version) && it.bytes == infos[i].size) {
				// perhaps cut short: once more, as get() does
				try {
					auto whole = get(keys[i], it.version);
					data[i] = whole.first;
					versions[i] = whole.second;
				} catch (const Failure &f) {
					errs[i] = f.code;
					if (first.empty())
						first = "'" + keys[i].substr(0, 64) + "': " + f.message;
				}
				continue;
			}
			if (it.bytes < infos[i].size) {
				PyObject *b = data[i].release().ptr();
				if (_PyBytes_Resize(&b, static_cast<Py_ssize_t>(it.bytes)))
					throw py::error_already_set();
				data[i] = py::reinterpret_steal<py::object>(b);
			}
		}
		for (size_t i = 0; i < n; i++)
			out.append(py::make_tuple(errs[i], errs[i] ? py::none() : data[i], versions[i]));
		return py::make_tuple(out, first);
	}

	py::tuple exist_batch(const std::vector<std::string> &keys)
	{
		return sync_batch(keys, false);
	}

	py::tuple remove_batch(const std::vector<std::string> &keys)
	{
		return sync_batch(keys, true);
	}

	void register_buffer(py::handle buffer)
	{
		View v = View::take(buffer, false, "register_buffer()'s buffer");
		auto addr = reinterpret_cast<uintptr_t>(v.data());
		size_t len = v.size();
		run([&](st::Client &c) {
			if (auto r = c.buf_reg(std::span<std::byte>(reinterpret_cast<std::byte *>(addr), len));
			    !r)
				throw failure(r.err());
			return 0;
		});
		bufs_.emplace(addr, std::move(v));
	}

	void unregister_buffer(py::handle buffer)
	{
		uintptr_t addr;
		{
			View v = View::take(buffer, false, "unregister_buffer()'s buffer");
			addr = reinterpret_cast<uintptr_t>(v.data());
		}
		if (!bufs_.count(addr))
			throw py::value_error("unregister_buffer: the buffer is not registered");
		run([&](st::Client &c) {
			if (auto r = c.buf_dereg(reinterpret_cast<void *>(addr)); !r)
				throw failure(r.err());
			return 0;
		});
		bufs_.erase(addr);	// (another thread may have, meanwhile)
	}

	size_t registered() const { return bufs_.size(); }

private:
	void check_open() const
	{
		if (!c_)
			throw py::value_error("the store is closed");
	}

	// f(client) without the GIL, the client held open meanwhile.  f may
	// throw Failure (not a Python exception: no GIL).
	template <typename F>
	auto run(F &&f) -> decltype(f(std::declval<st::Client &>()))
	{
		check_open();
		py::gil_scoped_release nogil;
		std::shared_lock<std::shared_mutex> lk(mu_);
		if (!c_)
			throw Failure{-EBADF, "the store was closed meanwhile", {}};
		return f(*c_);
	}

	static std::string why(int code)
	{
		const char *m = ds_store_errmsg(nullptr);
		return m && *m ? m : std::strerror(-code);
	}

	static st::ObjectInfo stat_of(st::Client &c, const std::string &key)
	{
		auto r = c.stat(key);
		if (!r)
			throw failure(r.err(), key);
		return r.value();
	}

	static st::TaskStatus get_task(st::Client &c, const std::string &key, iovec *iov,
				       int64_t min_version, uint64_t offset)
	{
		auto t = c.get(key, std::span<const iovec>(iov, 1), min_version, offset);
		if (!t)
			throw failure(t.err(), key);
		auto r = t.value().wait();
		if (!r)
			throw failure(r.err(), key);
		st::TaskStatus s = r.value();
		if (s.state != DS_STORE_COMPLETE) {
			auto checked = st::Task::check(r);
			Failure f = failure(checked.err(), key);
			if (s.err == -ERANGE)
				f.largest_version = s.largest_version;
			throw f;
		}
		return s;
	}

	// items in tasks of at most DS_STORE_BATCH_MAX, each submitted by
	// submit(client, part) in run(), all queued, then waited for: -> the
	// first failure's message ("": none)
	template <typename Submit>
	std::string batch_tasks(std::vector<ds_store_batch_item> &items, Submit &&submit)
	{
		return run([&](st::Client &c) {
			std::vector<st::Task> tasks;
			std::string first;
			std::optional<dsmem::error> err;
			for (size_t at = 0; at < items.size(); at += DS_STORE_BATCH_MAX) {
				size_t n = std::min<size_t>(DS_STORE_BATCH_MAX, items.size() - at);
				auto t = submit(c, BatchPart(items.data() + at, n));
				if (!t) {
					err = t.err();
					break;
				}
				tasks.push_back(t.value());
			}
			// whatever was queued is waited for: its buffers are in use
			for (const st::Task &t : tasks) {
				auto r = st::Task::check(t.wait());
				if (!r) {
					if (!err)
						err = r.err();
					continue;
				}
				if (r->err && first.empty())
					first = why(r->err);
			}
			if (err)
				throw failure(*err);
			return first;
		});
	}

	// -> ([(errno, version) per item], msg)
	static py::tuple versions_of(const std::vector<ds_store_batch_item> &items,
				     const std::string &msg)
	{
		py::list out;
		for (const ds_store_batch_item &it : items)
			out.append(py::make_tuple(it.err, it.version));
		return py::make_tuple(out, msg);
	}

	py::tuple sync_batch(const std::vector<std::string> &keys, bool del)
	{
		std::vector<ds_store_batch_item> items(keys.size());
		for (size_t i = 0; i < keys.size(); i++)
			items[i].key = keys[i].c_str();
		std::string first = run([&](st::Client &c) {
			std::string msg;
			for (size_t at = 0; at < items.size(); at += DS_STORE_BATCH_MAX) {
				size_t n = std::min<size_t>(DS_STORE_BATCH_MAX, items.size() - at);
				std::span<ds_store_batch_item> part(items.data() + at, n);
				auto r = del ? c.del_batch(part) : c.exist_batch(part);
				if (!r)
					throw failure(r.err());
			}
			for (const ds_store_batch_item &it : items)
				if (it.err && it.err != -ENOENT && msg.empty())
					msg = std::string("'") + it.key + "': " + std::strerror(-it.err);
			return msg;
		});
		return versions_of(items, first);
	}

	mutable std::shared_mutex mu_;	// shared: a call; unique: close
	std::optional<st::Client> c_;
	std::map<uintptr_t, View> bufs_;	// registered, by address (GIL)
};

py::dict master_info(const std::string &masters)
{
	std::optional<dsmem::error> err;
	st::MasterInfo m{};
	{
		py::gil_scoped_release nogil;
		auto r = st::master_info(masters);
		if (r)
			m = r.value();
		else
			err = r.err();
	}
	if (err)
		throw failure(*err);
	py::dict d;
	d["leader"] = std::string(m.leader);
	d["standbys"] = std::string(m.standbys);
	d["persistence"] = std::string(m.persistence);
	d["slow_tier"] = std::string(m.slow_tier);
	d["term"] = m.term;
	d["objects"] = m.objects;
	d["versions"] = m.versions;
	d["members"] = m.members;
	d["ops"] = m.ops;
	d["evictions"] = m.evictions;
	d["expiries"] = m.expiries;
	d["evicted_bytes"] = m.evicted_bytes;
	return d;
}

}  // namespace

// _dsmem_sim.cpp: the cache simulator
void bind_sim(py::module_ &m);

PYBIND11_MODULE(_dsmem, m)
{
	m.doc() = "libdsstore's client and the cache simulator for Python (use the dsmem package, not this)";
	bind_sim(m);

	py::register_exception_translator([](std::exception_ptr p) {
		try {
			if (p)
				std::rethrow_exception(p);
		} catch (const Failure &f) {
			if (!error_factory) {
				PyErr_SetString(PyExc_OSError, f.message.c_str());
				return;
			}
			py::object key = f.key.empty() ? py::object(py::none()) : py::object(py::bytes(f.key));
			py::object e = error_factory(-f.code, f.message, key, f.version, f.largest_version);
			PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(e.ptr())), e.ptr());
		}
	});

	m.def("_set_error_factory", [](py::object f) {
		f.inc_ref();	// kept for the interpreter's life
		error_factory = f;
	});
	m.def("master_info", &master_info, py::arg("masters"));
	m.attr("KEY_MAX") = DS_STORE_KEY_MAX;
	m.attr("BATCH_MAX") = DS_STORE_BATCH_MAX;
	m.attr("TTL_MAX_MS") = DS_STORE_TTL_MAX_MS;

	py::class_<PutOpts>(m, "PutOpts")
		.def(py::init([](uint32_t replicas, uint32_t nvmeof_replicas, uint32_t flush,
				 bool prefer_local, bool soft_pin, uint64_t ttl_ms) {
			     return PutOpts{replicas, nvmeof_replicas, flush, prefer_local, soft_pin, ttl_ms};
		     }),
		     py::arg("replicas"), py::arg("nvmeof_replicas"), py::arg("flush"),
		     py::arg("prefer_local"), py::arg("soft_pin"), py::arg("ttl_ms"));

	py::class_<Client>(m, "Client")
		.def(py::init<const std::string &, uint32_t, uint64_t, const std::optional<std::string> &,
			      uint32_t, uint32_t, const std::optional<std::string> &,
			      const std::optional<std::string> &, const std::optional<std::string> &, bool>(),
		     py::arg("masters"), py::arg("node_id"), py::arg("segment_size"), py::arg("addr"),
		     py::arg("threads"), py::arg("timeout_ms"), py::arg("tls_ca"), py::arg("tls_cert"),
		     py::arg("tls_key"), py::arg("insecure"))
		.def_static("closed_client", [] { return std::make_unique<Client>(); })
		.def_property_readonly("closed", &Client::closed)
		.def("close", &Client::close, py::arg("drain"))
		.def("put", &Client::put, py::arg("key"), py::arg("value"), py::arg("opts"),
		     py::arg("as_is"))
		.def("get", &Client::get, py::arg("key"), py::arg("min_version"))
		.def("get_into", &Client::get_into, py::arg("key"), py::arg("buffer"),
		     py::arg("min_version"), py::arg("offset"))
		.def("stat", &Client::stat, py::arg("key"))
		.def("exists", &Client::exists, py::arg("key"))
		.def("remove", &Client::remove, py::arg("key"))
		.def("set_attr", &Client::set_attr, py::arg("key"), py::arg("soft_pin"),
		     py::arg("ttl_ms"))
		.def("list", &Client::list, py::arg("prefix"), py::arg("after"), py::arg("limit"))
		.def("remove_prefix", &Client::remove_prefix, py::arg("prefix"))
		.def("put_batch", &Client::put_batch, py::arg("keys"), py::arg("values"), py::arg("opts"))
		.def("get_batch", &Client::get_batch, py::arg("keys"))
		.def("get_batch_into", &Client::get_batch_into, py::arg("keys"), py::arg("buffers"))
		.def("exist_batch", &Client::exist_batch, py::arg("keys"))
		.def("remove_batch", &Client::remove_batch, py::arg("keys"))
		.def("register_buffer", &Client::register_buffer, py::arg("buffer"))
		.def("unregister_buffer", &Client::unregister_buffer, py::arg("buffer"))
		.def_property_readonly("registered", &Client::registered);
}
