// SPDX-License-Identifier: BSD-2-Clause
// dsctl obj [list [prefix P]]
//      | obj put KEY [file PATH|-] [replicas N] [nvmeof N] [flush eager|lazy|none] [local]
//                   [pin] [ttl DURATION]
//      | obj get KEY [file PATH|-] [version MIN] [offset N] [length N]
//      | obj del|sync|stat|pin|unpin KEY
//      | obj ttl KEY DURATION|none
//      | obj replicate KEY replicas N [nvmeof N] [flush eager|lazy|none]
//      | obj bench [size SIZE] [count N] [threads T] [mix R:W] [replicas N] [time S]
// each with [master HOST:PORT[,...]] (or DSMEM_MASTERS) and [node ID] (or
// DSMEM_NODE): the object store run by dsmaster, joined as a client that
// contributes no memory (segment_size 0) and moves data from node ID.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsctl.hpp"
#include "store_cli.hpp"

namespace dsctl {

namespace {

// A client of the store, left without draining (it owns no segment).
class store_client {
public:
	explicit store_client(const store_target &t)
	{
		ds_store_config cfg{};
		cfg.masters = t.masters.c_str();
		cfg.node_id = t.node;
		cfg.segment_size = 0;
		int ret = ds_store_open(&cfg, &s_);
		if (ret < 0) {
			// the calling thread's last failure, handle or none
			const char *m = ds_store_errmsg(s_);
			std::string why = m && *m ? m : strerror(-ret);
			if (s_)
				ds_store_close(s_, 0);
			s_ = nullptr;
			fail("cannot join the store at " + t.masters + " as node " +
			     std::to_string(t.node) + ": " + why);
		}
	}
	store_client(const store_client &) = delete;
	store_client &operator=(const store_client &) = delete;
	~store_client()
	{
		if (s_)
			ds_store_close(s_, 0);
	}
	ds_store *get() const { return s_; }

	// The library's message for the last failure, else the error's text.
	std::string why(int err) const
	{
		const char *m = ds_store_errmsg(s_);
		if (m && *m)
			return m;
		return errno_text(err);
	}

	void check(int ret, const std::string &doing) const
	{
		if (ret < 0)
			fail(doing + ": " + why(ret));
	}

	// Wait for a task and forget it; fails unless it completed.
	ds_store_task_status wait(uint64_t task, const std::string &doing) const
	{
		ds_store_task_status st{};
		check(ds_store_task_query(s_, task, -1, 1, &st), doing);
		if (st.state == DS_STORE_COMPLETE)
			return st;
		fail(doing + ": " + task_why(st));
	}

	// Why a task ended without completing: the reason the query left in
	// the thread's message (the master's words when it refused), else
	// its error number.
	static std::string task_why(const ds_store_task_status &st)
	{
		if (st.state == DS_STORE_TIMEOUT && !st.err)
			return "timed out";
		if (st.state == DS_STORE_CANCELED && !st.err)
			return "canceled";
		if (st.state == DS_STORE_INVALID && !st.err)
			return "no such task";
		const char *m = ds_store_errmsg(nullptr);
		return m && *m ? m : strerror(st.err ? -st.err : EIO);
	}

private:
	ds_store *s_ = nullptr;
};

std::string key_quoted(const std::string &key)
{
	return "\"" + key_string(key) + "\"";
}

// A page-aligned buffer, registered with the store while it lives when
// the store takes it (zero copy); unregistered buffers work too.
class buffer {
public:
	explicit buffer(uint64_t len) : len_(len)
	{
		uint64_t alloc = (len + 4095) & ~uint64_t(4095);
		p_ = static_cast<char *>(aligned_alloc(4096, alloc ? alloc : 4096));
		if (!p_)
			fail("cannot allocate " + size_string(len) + " bytes");
	}
	buffer(const buffer &) = delete;
	buffer &operator=(const buffer &) = delete;
	~buffer()
	{
		if (reg_)
			ds_store_buf_dereg(reg_, p_);
		free(p_);
	}
	void reg(ds_store *s)
	{
		if (len_ && !ds_store_buf_reg(s, p_, len_))
			reg_ = s;
	}
	char *data() { return p_; }
	uint64_t size() const { return len_; }

private:
	char *p_ = nullptr;
	uint64_t len_;
	ds_store *reg_ = nullptr;
};

// The whole of a file, or of standard input for "".
std::unique_ptr<buffer> read_input(const std::string &file)
{
	int fd = file.empty() ? STDIN_FILENO : open(file.c_str(), O_RDONLY | O_CLOEXEC);
	std::string name = file.empty() ? std::string("standard input") : file;
	if (fd < 0)
		fail("cannot open " + name + ": " + strerror(errno));
	struct stat sb;
	std::string data;
	std::unique_ptr<buffer> out;
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode)) {
		out = std::make_unique<buffer>(static_cast<uint64_t>(sb.st_size));
		uint64_t got = 0;
		while (got < out->size()) {
			ssize_t n = read(fd, out->data() + got, out->size() - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				fail("cannot read " + name + ": " + strerror(errno));
			if (!n)
				fail("cannot read " + name + ": it shrank while being read");
			got += static_cast<uint64_t>(n);
		}
	} else {
		char chunk[65536];
		for (;;) {
			ssize_t n = read(fd, chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				fail("cannot read " + name + ": " + strerror(errno));
			if (!n)
				break;
			data.append(chunk, static_cast<size_t>(n));
		}
		out = std::make_unique<buffer>(data.size());
		memcpy(out->data(), data.data(), data.size());
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (!out->size())
		fail("cannot put an empty object: " + name + " has no bytes");
	return out;
}

void write_all(int fd, const char *p, uint64_t len, const std::string &name)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("cannot write " + name + ": " + strerror(errno));
		p += n;
		len -= static_cast<uint64_t>(n);
	}
}

// ---- the commands ------------------------------------------------------------

template <typename A, typename P>
A parsed(env &e, P parse)
{
	A a;
	std::string err;
	if (!parse(e.words, a, err))
		fail(err);
	return a;
}

int obj_list(env &e)
{
	list_args a = parsed<list_args>(e, parse_list);
	store_client c(a.target);
	std::string after;
	bool first = true;

	e.out.begin_list();
	for (;;) {
		ds_store_object_list *l = nullptr;
		c.check(ds_store_list(c.get(), a.prefix.c_str(), first ? nullptr : after.c_str(),
				      1000, &l),
			a.prefix.empty() ? std::string("cannot list objects")
					 : "cannot list objects with prefix " + key_quoted(a.prefix));
		first = false;
		for (size_t i = 0; i < l->count; i++)
			e.out.add(object_record(l->objects[i]));
		bool more = l->more && l->count;
		if (l->count)
			after.assign(l->objects[l->count - 1].key,
				     strnlen(l->objects[l->count - 1].key, DS_STORE_KEY_MAX + 1));
		ds_store_list_free(l);
		if (!more)
			return 0;
	}
}

int obj_put(env &e)
{
	put_args a = parsed<put_args>(e, parse_put);
	std::unique_ptr<buffer> data = read_input(a.file);
	store_client c(a.target);
	data->reg(c.get());

	iovec iov{ data->data(), data->size() };
	uint64_t task;
	std::string doing = "cannot put " + key_quoted(a.key);
	if (a.soft_pin || a.ttl_ms) {
		ds_store_put_opts opts{};
		opts.size = sizeof(opts);
		opts.flags = a.soft_pin ? DS_STORE_PUT_SOFT_PIN : 0;
		opts.ttl_ms = a.ttl_ms;
		c.check(ds_store_put_ex(c.get(), a.key.c_str(), &iov, 1, &a.config, &opts, &task),
			doing);
	} else {
		c.check(ds_store_put(c.get(), a.key.c_str(), &iov, 1, &a.config, &task), doing);
	}
	ds_store_task_status st = c.wait(task, doing);
	if (!st.bytes)
		st.bytes = data->size();
	e.out.begin_list();
	e.out.add(put_record(a.key, a.config, st));
	return 0;
}

int obj_get(env &e)
{
	get_args a = parsed<get_args>(e, parse_get);
	store_client c(a.target);
	std::string doing = "cannot get " + key_quoted(a.key);
	ds_store_task_status st{};
	std::unique_ptr<buffer> data;

	// the size of the newest version; a newer one that turns up between
	// the stat and the get may be larger: ask again then
	for (int tries = 0;; tries++) {
		ds_store_object_info info{};
		c.check(ds_store_stat(c.get(), a.key.c_str(), &info), doing);
		if (a.offset >= info.size)
			fail(doing + ": offset " + std::to_string(a.offset) +
			     " is not below its size (" + std::to_string(info.size) + " bytes)");
		uint64_t len = std::min(a.length, info.size - a.offset);
		data = std::make_unique<buffer>(len);
		data->reg(c.get());
		iovec iov{ data->data(), len };
		uint64_t task;
		c.check(ds_store_get(c.get(), a.key.c_str(), &iov, 1, a.min_version, a.offset, &task),
			doing);
		c.check(ds_store_task_query(c.get(), task, -1, 1, &st), doing);
		if (st.state != DS_STORE_COMPLETE) {
			if (st.err == -ERANGE && a.min_version >= 0) {
				// the task's largest readable version, else the stat's
				int64_t newest = st.largest_version >= 0
							 ? st.largest_version
							 : static_cast<int64_t>(info.version);
				fail(doing + ": version " + std::to_string(a.min_version) +
				     " is newer than the newest readable one (" +
				     std::to_string(newest) + ")");
			}
			fail(doing + ": " + c.task_why(st));
		}
		if (a.length != UINT64_MAX || st.version < 0 ||
		    static_cast<uint64_t>(st.version) == info.version || st.bytes < len || tries >= 3)
			break;
	}
	uint64_t bytes = std::min(st.bytes, data->size());
	if (a.file.empty()) {
		write_all(STDOUT_FILENO, data->data(), bytes, "standard output");
		return 0;
	}
	int fd = open(a.file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail("cannot open " + a.file + ": " + strerror(errno));
	write_all(fd, data->data(), bytes, a.file);
	if (close(fd) < 0)
		fail("cannot write " + a.file + ": " + strerror(errno));
	st.bytes = bytes;
	e.out.begin_list();
	e.out.add(get_record(a.key, st, a.offset, a.file));
	return 0;
}

int obj_del(env &e)
{
	key_args a;
	std::string err;
	if (!parse_key_cmd(e.words, "del", a, err))
		fail(err);
	store_client c(a.target);
	uint64_t task;
	std::string doing = "cannot delete " + key_quoted(a.key);
	c.check(ds_store_del(c.get(), a.key.c_str(), &task), doing);
	c.wait(task, doing);
	return 0;
}

int obj_sync(env &e)
{
	key_args a;
	std::string err;
	if (!parse_key_cmd(e.words, "sync", a, err))
		fail(err);
	store_client c(a.target);
	uint64_t task;
	std::string doing = "cannot sync " + key_quoted(a.key);
	c.check(ds_store_sync(c.get(), a.key.c_str(), &task), doing);
	ds_store_task_status st = c.wait(task, doing);
	e.out.begin_list();
	e.out.add(sync_record(a.key, st));
	return 0;
}

int obj_stat(env &e)
{
	key_args a;
	std::string err;
	if (!parse_key_cmd(e.words, "stat", a, err))
		fail(err);
	store_client c(a.target);
	ds_store_object_info info{};
	c.check(ds_store_stat(c.get(), a.key.c_str(), &info), "cannot stat " + key_quoted(a.key));
	e.out.begin_list();
	e.out.add(object_record(info));
	return 0;
}

// pin, unpin, ttl: the key's attributes, at once; prints nothing (as del).
int obj_attr(env &e, const char *cmd, const char *doing_what)
{
	attr_args a;
	std::string err;
	if (!parse_attr(e.words, cmd, a, err))
		fail(err);
	store_client c(a.target);
	ds_store_put_opts opts{};
	opts.size = sizeof(opts);
	opts.flags = a.soft_pin ? DS_STORE_PUT_SOFT_PIN : 0;
	opts.ttl_ms = a.ttl_ms;
	c.check(ds_store_set_attr(c.get(), a.key.c_str(), a.mask, &opts),
		std::string("cannot ") + doing_what + " " + key_quoted(a.key));
	return 0;
}

int obj_pin(env &e)
{
	return obj_attr(e, "pin", "pin");
}

int obj_unpin(env &e)
{
	return obj_attr(e, "unpin", "unpin");
}

int obj_ttl(env &e)
{
	return obj_attr(e, "ttl", "set the TTL of");
}

int obj_replicate(env &e)
{
	replicate_args a = parsed<replicate_args>(e, parse_replicate);
	store_client c(a.target);
	uint64_t task;
	std::string doing = "cannot replicate " + key_quoted(a.key);
	c.check(ds_store_replicate(c.get(), a.key.c_str(), &a.config, &task), doing);
	ds_store_task_status st = c.wait(task, doing);
	e.out.begin_list();
	e.out.add(replicate_record(a.key, a.config, st));
	return 0;
}

// ---- bench -------------------------------------------------------------------

uint64_t now_ns()
{
	return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
		std::chrono::steady_clock::now().time_since_epoch()).count());
}

struct bench_worker {
	latencies fill, put, get;
	uint64_t errors = 0;
	std::string first_error;
};

// One put or get, timed; false on a failure (counted).
bool bench_op(store_client &c, bool is_put, const std::string &key, buffer &buf,
	      const ds_store_replicate_config &cfg, latencies &lat, bench_worker &w)
{
	iovec iov{ buf.data(), buf.size() };
	uint64_t task;
	ds_store_task_status st{};
	uint64_t t0 = now_ns();
	int ret = is_put ? ds_store_put(c.get(), key.c_str(), &iov, 1, &cfg, &task)
			 : ds_store_get(c.get(), key.c_str(), &iov, 1, -1, 0, &task);
	if (!ret)
		ret = ds_store_task_query(c.get(), task, -1, 1, &st);
	uint64_t t1 = now_ns();
	if (ret < 0 || st.state != DS_STORE_COMPLETE) {
		if (!w.errors++)
			w.first_error = std::string(is_put ? "put " : "get ") + key_quoted(key) + ": " +
					(ret < 0 ? c.why(ret) : c.task_why(st));
		return false;
	}
	lat.add(t1 - t0, buf.size());
	return true;
}

int obj_bench(env &e)
{
	bench_args a = parsed<bench_args>(e, parse_bench);
	store_client c(a.target);
	ds_store_replicate_config cfg{ a.replicas, 0, DS_STORE_FLUSH_NONE, 0 };
	std::string prefix = "dsctl-bench/" + std::to_string(getpid()) + "/";
	std::vector<std::string> keys(a.count);
	for (uint64_t i = 0; i < a.count; i++)
		keys[i] = prefix + std::to_string(i);

	std::vector<bench_worker> workers(a.threads);
	std::vector<std::unique_ptr<buffer>> bufs;
	for (uint32_t t = 0; t < a.threads; t++) {
		bufs.push_back(std::make_unique<buffer>(a.size));
		for (uint64_t i = 0; i < a.size; i++)
			bufs[t]->data()[i] = static_cast<char>((i * 131 + t * 7 + 1) & 0xff);
		bufs[t]->reg(c.get());
	}
	bench_result res;

	// fill: every key once, the keys split between the threads
	uint64_t t0 = now_ns();
	{
		std::vector<std::thread> th;
		for (uint32_t t = 0; t < a.threads; t++)
			th.emplace_back([&, t] {
				for (uint64_t i = t; i < a.count; i += a.threads)
					bench_op(c, true, keys[i], *bufs[t], cfg, workers[t].fill,
						 workers[t]);
			});
		for (auto &x : th)
			x.join();
	}
	res.fill_ns = now_ns() - t0;

	// mixed: random keys, reads:writes, for the time given
	if (a.seconds) {
		std::atomic<bool> stop{ false };
		std::vector<std::thread> th;
		uint64_t m0 = now_ns();
		for (uint32_t t = 0; t < a.threads; t++)
			th.emplace_back([&, t] {
				std::mt19937_64 rng(0x5eed0000ULL + t);
				std::uniform_int_distribution<uint64_t> pick(0, a.count - 1);
				std::uniform_int_distribution<uint32_t> kind(0, a.reads + a.writes - 1);
				bench_worker &w = workers[t];
				while (!stop.load(std::memory_order_relaxed)) {
					bool is_put = kind(rng) >= a.reads;
					bench_op(c, is_put, keys[pick(rng)], *bufs[t], cfg,
						 is_put ? w.put : w.get, w);
				}
			});
		std::this_thread::sleep_for(std::chrono::seconds(a.seconds));
		stop = true;
		for (auto &x : th)
			x.join();
		res.mixed_ns = now_ns() - m0;
	}

	// the bench's objects go again
	std::vector<uint64_t> dels;
	for (const std::string &k : keys) {
		uint64_t task;
		if (!ds_store_del(c.get(), k.c_str(), &task))
			dels.push_back(task);
	}
	for (uint64_t task : dels) {
		ds_store_task_status st{};
		ds_store_task_query(c.get(), task, -1, 1, &st);
	}

	for (bench_worker &w : workers) {
		res.fill.merge(w.fill);
		res.put.merge(w.put);
		res.get.merge(w.get);
		if (w.errors && !res.errors)
			res.first_error = w.first_error;
		res.errors += w.errors;
	}
	e.out.begin_list();
	e.out.add(bench_record(a, res));
	return res.errors ? 1 : 0;
}

const command obj_cmds[] = {
	{ "list", obj_list },
	{ "show", obj_list },
	{ "put", obj_put },
	{ "get", obj_get },
	{ "del", obj_del },
	{ "replicate", obj_replicate },
	{ "sync", obj_sync },
	{ "stat", obj_stat },
	{ "bench", obj_bench },
	{ "pin", obj_pin },
	{ "unpin", obj_unpin },
	{ "ttl", obj_ttl },
};

}  // namespace

extern const object obj_object;
const object obj_object = {
	"obj", obj_cmds, sizeof(obj_cmds) / sizeof(obj_cmds[0]),
	"Usage: dsctl obj [{ list | show } [prefix P]]\n"
	"       dsctl obj put KEY [file { PATH | - }] [replicas N] [nvmeof N]\n"
	"                     [flush { eager | lazy | none }] [local] [pin] [ttl DURATION]\n"
	"       dsctl obj get KEY [file { PATH | - }] [version MIN] [offset OFF] [length LEN]\n"
	"       dsctl obj { del | sync | stat | pin | unpin } KEY\n"
	"       dsctl obj ttl KEY { DURATION | none }\n"
	"       dsctl obj replicate KEY replicas N [nvmeof N] [flush { eager | lazy | none }]\n"
	"       dsctl obj bench [size SIZE] [count N] [threads T] [mix READS:WRITES]\n"
	"                       [replicas N] [time SECONDS]\n"
	"each with [master HOST:PORT[,HOST:PORT...]] [node ID]\n"
	"where  SIZE := NUMBER[K|M|G|T] (bench: 16K to 64M)\n"
	"       DURATION := NUMBER[ms|s|m|h|d] (plain: ms), up to 3660d\n"
	"       master defaults to $DSMEM_MASTERS, node to $DSMEM_NODE\n",
	false,
};

}  // namespace dsctl
