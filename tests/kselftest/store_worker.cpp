// SPDX-License-Identifier: BSD-2-Clause
// store_worker: one client of the object store (dsmaster), driven line by
// line by the kernel selftests (store_test, twoguest_test) and the bench,
// as root in a test guest; libdsuser linked statically.
//
//   store_worker --masters H:P[,H:P] --node ID [--addr IP] [--segment SIZE]
//                [--threads N] [--timeout-ms MS] [--identity NAME]
//
// TLS: the library's defaults (DSMEM_STORE_TLS_DIR's ca.crt, client.crt,
// client.key); --identity NAME takes NAME.crt and NAME.key there instead
// (none: forge calls without a certificate).
//
// It joins the store (ds_store_open; with --segment it contributes that
// much DRAM of node ID), prints "ready client=1" (or "error ret=-E msg=..."
// and exits 1), then reads commands on stdin and answers each with one
// line on stdout, "ok" followed by key=value fields:
//
//   put KEY SIZE SEED [dram N] [nvme N] [flush none|lazy|eager] [local]
//       [pin] [ttl MS] [nowait]
//                             -> ret [task] state err version dram nvme
//                                flushed bytes (nowait: ret task)
//   attr KEY [pin|unpin] [ttl MS]
//                             -> ret (ds_store_set_attr)
//   bput PREFIX COUNT SIZE SEED0 [dram N] [pin] [ttl MS]
//                             -> one batch put of PREFIX0..PREFIX<COUNT-1>
//                                (key i: pattern(SEED0 + i)): ret state
//                                err ok failed versions (comma-separated)
//                                errs (each key's, comma-separated)
//   bget PREFIX COUNT SIZE SEED0
//                             -> one batch get of the same keys, each
//                                checked: ret state err ok intact failed
//                                errs
//   bexist KEY... | bdel KEY...
//                             -> ret errs versions (each key's)
//   get KEY CAP [min V] [off O] [expect SEED [size S]]
//                             -> ret state err version largest bytes
//                                intact seed size
//   wait TASK                 -> the task's fields, as put/get print them
//   replicate KEY [dram N] [nvme N] [flush MODE]
//                             -> ret state err version dram nvme flushed
//   del KEY | sync KEY        -> ret state err version
//   stat KEY                  -> ret version size dram nvme flushed
//                                flushed_version pinned expires_ns atime_ns
//   list PREFIX               -> ret count more keys (comma-separated)
//   loop PREFIX COUNT SIZE SEED0 [dram N] [nvme N] [flush MODE]
//                             -> one "put key=... ret= ..." line per put of
//                                PREFIX0, PREFIX1, ... (seed SEED0+i),
//                                then "ok done=COUNT"
//   zipf PREFIX KEYS OPS SIZE SEED THETA [pin N] [dram N] [puts N]
//                             -> a cache's workload: OPS gets of keys
//                                PREFIX0..PREFIX<KEYS-1> drawn Zipf(THETA)
//                                (rank 0 hottest), each miss (ENOENT) put
//                                (soft-pinned if among the N coldest
//                                ranks); key r holds pattern(SEED + r);
//                                then "ok done ops gets hits puts
//                                pinned_puts put_failed bad" (bad: a get
//                                that returned wrong bytes) and the first
//                                failure's message; with puts N it ends
//                                sooner, once N puts were made (a fill
//                                sized by what it put, not by its hits)
//   chaos PROCESS KEYS SECONDS SEED FILE [dram N] [ops N] [stop PATH]
//                             -> a Jepsen-style workload: for SECONDS,
//                                put/get/del/exist on keys ch/0..ch/KEYS-1
//                                chosen by SEED, each operation's
//                                invocation and completion appended to FILE
//                                (docs/chaos.md's history, as process
//                                PROCESS) as it happens; then "ok done
//                                ops=N".  With ops N it ends after N
//                                operations, with stop PATH once PATH
//                                exists (looked for before each one); with
//                                either, SECONDS 0 sets no time at all
//                                (make check's run, sized by operations)
//   chaos-final PROCESS KEYS FILE
//                             -> a get of every key, marked final (what a
//                                lost acknowledged put would show in)
//   prefix P                  -> every key from now on is P followed by the
//                                key given (P "-": none); "ok ret=0
//                                prefix=P"
//   clear                     -> every object under the prefix deleted
//                                (listed, then batch deletes): "ok ret=0
//                                found=N deleted=N failed=N"
//   echo WORD                 -> "ok echo=WORD", once every command sent
//                                before it has been answered
//   close [drain]             -> ds_store_close, "ok", exit 0
//   quit                      -> exit 0 without closing (as if killed)
//
// KEY "-" is the empty key; "@N" a key of N 'k's (for bad input).
//
// The key prefix (the "prefix" command, or STORE_WORKER_PREFIX in the
// environment, which the one-shot commands locate and report read) lets
// one store serve many tests, each in keys of its own: it is put before
// every KEY and batch or list PREFIX above, except the empty key, which
// stays empty, and "@N", which stays N bytes long in all (the prefix and
// then 'k's), so that bad input stays exactly as bad.  zipf, loop and
// chaos take their keys as given.
//
// Object contents: store_pattern.h, a function of the seed and size.  A
// get checks what it read: against "expect SEED" (and "size S", default
// offset + bytes read) when given, else against the header the bytes
// carry (from offset 0 only): intact=1 when every byte is right, so a
// torn or mixed version cannot pass; intact=-1: nothing to check against.
//
// One-shot commands (no store handle, no node needed), printing one line:
//   store_worker --masters M info       -> master info as key=value
//   store_worker --masters M segments   -> one "segment id=..." line each
//   store_worker --masters M nvmeof-register TRADDR TRSVCID NQN BASE SIZE
//                                       -> "ok ret=0 segment=ID"
//   store_worker --masters M locate KEY -> "ok ret=0 version=V replicas=N
//                                          sums=N r0=GADDR r0_len=L r0_seg=S
//                                          r0_off=O ..." (each replica's
//                                          first shard)
//   store_worker --masters M drain SEGMENT DEADLINE_MS
//                                       -> "ok ret=0|-ERRNO moved=N msg=..."
//   store_worker --masters M report KEY VERSION SEGMENT OFFSET
//                                       -> "ok ret=0|-ENOENT dropped=0|1"
//   store_worker --masters M forge WHAT ARGS...
//       the RPC itself with a client_id the caller chooses, as a client
//       that lies about who it is would; -> "ok ret=-ERRNO msg=..."
//         unregister SEGMENT CLIENT   leave CLIENT     heartbeat CLIENT
//         put KEY CLIENT (PutStart)   del KEY          replicate KEY DRAM
//         rejoin CLIENT NODE ADDR PORT (RegisterClient, previous_client_id)
//         remount SEGMENT NODE ADDR PORT (join as a new client, then
//           RegisterSegment with that segment's description)
//                                          (ReportReplica)
//   store_worker --masters M replicate KEY DRAM NVME
//                                       -> "ok ret=0 version=V dram=N nvme=N"
//                                          (Replicate, at the first master
//                                          only: no retry at another)
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <getopt.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <dsmem/store.h>
#include <grpcpp/grpcpp.h>

#include "client.hpp"
#include "dsstore.grpc.pb.h"
#include "tls.hpp"

#include "store_pattern.h"

namespace {

bool g_no_cert;	// --identity none: raw calls without a certificate
std::string g_prefix;	// before every key (see the header)

struct args {
	std::string masters;
	uint32_t node = 0;
	std::string addr;
	uint64_t segment = 0;
	uint32_t threads = 0;
	uint32_t timeout_ms = 0;
	std::vector<std::string> oneshot;
};

ds_store *store;

// Buffers: one grows to the largest object asked for (64 MiB at most in
// the tests), mapped so that freeing it returns the memory at once.
struct buffer {
	uint8_t *p = nullptr;
	size_t len = 0;

	uint8_t *get(size_t n)
	{
		if (n <= len)
			return p;
		if (p)
			munmap(p, len);
		len = n < 4096 ? 4096 : n;
		p = static_cast<uint8_t *>(mmap(nullptr, len, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		if (p == MAP_FAILED) {
			p = nullptr;
			len = 0;
		}
		return p;
	}
};

buffer put_buf, get_buf;

uint64_t num(const std::string &s)
{
	char *end = nullptr;
	errno = 0;
	unsigned long long v = std::strtoull(s.c_str(), &end, 0);
	if (errno || end == s.c_str())
		return 0;
	switch (*end) {
	case 'K': case 'k': v <<= 10; break;
	case 'M': case 'm': v <<= 20; break;
	case 'G': case 'g': v <<= 30; break;
	default: break;
	}
	return v;
}

std::string key_arg(const std::string &w)
{
	if (w == "-")
		return "";
	if (w.size() > 1 && w[0] == '@') {
		const uint64_t n = num(w.substr(1));
		if (n < g_prefix.size())
			return std::string(n, 'k');
		return g_prefix + std::string(n - g_prefix.size(), 'k');
	}
	return g_prefix + w;
}

uint32_t flush_mode(const std::string &w)
{
	if (w == "eager")
		return DS_STORE_FLUSH_EAGER;
	if (w == "lazy")
		return DS_STORE_FLUSH_LAZY;
	return DS_STORE_FLUSH_NONE;
}

// Options "name value" after the positional words.
struct opts {
	ds_store_replicate_config cfg{1, 0, DS_STORE_FLUSH_NONE, 0};
	bool nowait = false;
	bool drain = false;
	int64_t min = -1;
	uint64_t off = 0;
	bool has_expect = false;
	uint64_t expect = 0;
	uint64_t size = 0;
	ds_store_put_opts put{ sizeof(ds_store_put_opts), 0, 0, {} };
	bool attrs = false;	// put with put_opts (ds_store_put_ex)
	uint32_t attr_mask = 0;	// attr: what to set

	void parse(const std::vector<std::string> &w, size_t from)
	{
		for (size_t i = from; i < w.size(); i++) {
			const std::string &o = w[i];
			const std::string v = i + 1 < w.size() ? w[i + 1] : "";
			if (o == "dram") { cfg.dram_replicas = static_cast<uint32_t>(num(v)); i++; }
			else if (o == "nvme") { cfg.nvmeof_replicas = static_cast<uint32_t>(num(v)); i++; }
			else if (o == "flush") { cfg.flush = flush_mode(v); i++; }
			else if (o == "local") cfg.prefer_local = 1;
			else if (o == "nowait") nowait = true;
			else if (o == "drain") drain = true;
			else if (o == "min") { min = std::strtoll(v.c_str(), nullptr, 0); i++; }
			else if (o == "off") { off = num(v); i++; }
			else if (o == "expect") { has_expect = true; expect = num(v); i++; }
			else if (o == "size") { size = num(v); i++; }
			else if (o == "pin") {
				put.flags |= DS_STORE_PUT_SOFT_PIN;
				attrs = true;
				attr_mask |= DS_STORE_ATTR_SOFT_PIN;
			} else if (o == "unpin") {
				put.flags &= ~DS_STORE_PUT_SOFT_PIN;
				attr_mask |= DS_STORE_ATTR_SOFT_PIN;
			} else if (o == "ttl") {
				put.ttl_ms = num(v);
				attrs = true;
				attr_mask |= DS_STORE_ATTR_TTL;
				i++;
			}
		}
	}
};

// What a get read: its check.
struct get_ctx {
	uint64_t cap = 0;
	uint64_t off = 0;
	bool has_expect = false;
	uint64_t expect = 0;
	uint64_t size = 0;	/* 0: off + bytes read */
};

std::string msg_field()
{
	const char *m = ds_store_errmsg(store);
	std::string s = m ? m : "";
	for (char &c : s)
		if (c == ' ' || c == '\n' || c == '\t')
			c = '_';
	return s.empty() ? "" : " msg=" + s;
}

std::string status_fields(const ds_store_task_status &st, const get_ctx *g)
{
	char b[512];
	std::snprintf(b, sizeof(b),
		      " state=%u err=%d version=%" PRId64 " largest=%" PRId64 " bytes=%" PRIu64
		      " dram=%u nvme=%u flushed=%u",
		      st.state, st.err, st.version, st.largest_version, st.bytes,
		      st.dram_replicas, st.nvmeof_replicas, st.flushed);
	std::string s = b;
	if (g) {
		int intact = -1;
		uint64_t seed = 0, size = 0;
		const uint64_t n = st.bytes < g->cap ? st.bytes : g->cap;
		if (st.state == DS_STORE_COMPLETE) {
			if (g->has_expect) {
				seed = g->expect;
				size = g->size ? g->size : g->off + n;
				intact = store_pat_check(get_buf.p, n, seed, size, g->off);
			} else if (!g->off && !store_pat_seed(get_buf.p, n, &seed, &size)) {
				intact = store_pat_check(get_buf.p, n, seed, size, 0);
			}
		}
		std::snprintf(b, sizeof(b), " intact=%d seed=%" PRIu64 " size=%" PRIu64, intact,
			      seed, size);
		s += b;
	}
	if (st.state != DS_STORE_COMPLETE)
		s += msg_field();
	return s;
}

// The buffers of puts still in flight (nowait), until they are waited for.
std::map<uint64_t, std::vector<uint8_t>> inflight;

// Tasks whose gets we must check when they are waited for.
std::vector<std::pair<uint64_t, get_ctx>> pending_gets;

std::string wait_task(uint64_t task)
{
	ds_store_task_status st{};
	int ret = ds_store_task_query(store, task, -1, 1, &st);
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	const get_ctx *g = nullptr;
	get_ctx gc;
	for (auto it = pending_gets.begin(); it != pending_gets.end(); ++it)
		if (it->first == task) {
			gc = it->second;
			g = &gc;
			pending_gets.erase(it);
			break;
		}
	inflight.erase(task);
	// a task that ended with an error: the reason its query left
	return "ok ret=0 task=" + std::to_string(task) + status_fields(st, g) + (st.err ? msg_field() : "");
}

std::string do_put(const std::string &key, uint64_t size, uint64_t seed, const opts &o)
{
	std::vector<uint8_t> own;
	uint8_t *p;
	if (o.nowait) {
		own.resize(size ? size : 1);
		p = own.data();
	} else {
		p = put_buf.get(size ? size : 1);
	}
	if (!p)
		return "ok ret=-12 msg=no_memory";
	store_pat_fill(p, size, seed);
	struct iovec iov = {p, size};
	uint64_t task = 0;
	int ret = o.attrs ? ds_store_put_ex(store, key.c_str(), &iov, 1, &o.cfg, &o.put, &task)
			  : ds_store_put(store, key.c_str(), &iov, 1, &o.cfg, &task);
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	if (o.nowait) {
		inflight[task] = std::move(own);
		return "ok ret=0 task=" + std::to_string(task);
	}
	return wait_task(task);
}

std::string do_get(const std::string &key, uint64_t cap, const opts &o)
{
	uint8_t *p = get_buf.get(cap ? cap : 1);
	if (!p)
		return "ok ret=-12 msg=no_memory";
	std::memset(p, 0, cap);
	struct iovec iov = {p, cap};
	uint64_t task = 0;
	int ret = ds_store_get(store, key.c_str(), &iov, 1, o.min, o.off, &task);
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	pending_gets.push_back({task, get_ctx{cap, o.off, o.has_expect, o.expect, o.size}});
	return wait_task(task);
}

std::string do_stat(const std::string &key)
{
	ds_store_object_info info{};
	int ret = ds_store_stat(store, key.c_str(), &info);
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	char b[384];
	std::snprintf(b, sizeof(b),
		      "ok ret=0 version=%" PRIu64 " size=%" PRIu64 " dram=%u nvme=%u flushed=%u"
		      " flushed_version=%" PRIu64 " pinned=%d expires_ns=%" PRId64
		      " atime_ns=%" PRId64,
		      info.version, info.size, info.dram_replicas, info.nvmeof_replicas,
		      info.flushed, info.flushed_version, !!(info.flags & DS_STORE_OBJ_SOFT_PIN),
		      info.expires_ns, info.atime_ns);
	return b;
}

// A batch's keys PREFIX0.. and their items (the keys outlive the call).
struct batch {
	std::vector<std::string> keys;
	std::vector<std::vector<uint8_t>> bufs;
	std::vector<struct iovec> iovs;
	std::vector<ds_store_batch_item> items;

	void make(const std::vector<std::string> &k, uint64_t size)
	{
		keys = k;
		bufs.assign(keys.size(), std::vector<uint8_t>(size ? size : 1));
		iovs.resize(keys.size());
		items.assign(keys.size(), ds_store_batch_item{});
		for (size_t i = 0; i < keys.size(); i++) {
			iovs[i] = { bufs[i].data(), size };
			items[i].key = keys[i].c_str();
			items[i].iov = &iovs[i];
			items[i].iovcnt = 1;
		}
	}
	std::string fields() const
	{
		std::string errs, versions;
		for (const auto &it : items) {
			errs += (errs.empty() ? "" : ",") + std::to_string(it.err);
			versions += (versions.empty() ? "" : ",") + std::to_string(it.version);
		}
		return " errs=" + errs + " versions=" + versions;
	}
};

std::vector<std::string> numbered(const std::string &prefix, uint64_t count)
{
	std::vector<std::string> k;
	for (uint64_t i = 0; i < count; i++)
		k.push_back(prefix + std::to_string(i));
	return k;
}

std::string do_batch(const std::vector<std::string> &w)
{
	batch b;
	const std::string &c = w[0];
	char head[160];
	if (c == "bexist" || c == "bdel") {
		std::vector<std::string> keys;
		for (size_t i = 1; i < w.size(); i++)
			keys.push_back(key_arg(w[i]));
		b.make(keys, 0);
		int ret = c == "bexist" ? ds_store_batch_exist(store, b.items.data(), b.items.size())
					: ds_store_batch_del(store, b.items.data(), b.items.size());
		if (ret)
			return "ok ret=" + std::to_string(ret) + msg_field();
		return "ok ret=0" + b.fields();
	}
	if (w.size() < 5)
		return "ok ret=-22 msg=b_PREFIX_COUNT_SIZE_SEED0";
	const uint64_t count = num(w[2]), size = num(w[3]), seed0 = num(w[4]);
	b.make(numbered(g_prefix + w[1], count), size);
	opts o;
	o.parse(w, 5);
	uint64_t task = 0;
	int ret;
	if (c == "bput") {
		for (uint64_t i = 0; i < count; i++)
			store_pat_fill(b.bufs[i].data(), size, seed0 + i);
		ret = ds_store_batch_put(store, b.items.data(), b.items.size(), &o.cfg,
					 o.attrs ? &o.put : nullptr, &task);
	} else {
		ret = ds_store_batch_get(store, b.items.data(), b.items.size(), &task);
	}
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	ds_store_task_status st{};
	ret = ds_store_task_query(store, task, -1, 1, &st);
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	uint64_t ok = 0, intact = 0, failed = 0;
	for (uint64_t i = 0; i < count; i++) {
		const ds_store_batch_item &it = b.items[i];
		if (it.err) {
			failed++;
			continue;
		}
		ok++;
		if (c == "bget" && it.bytes == size &&
		    store_pat_check(b.bufs[i].data(), size, seed0 + i, size, 0))
			intact++;
	}
	std::snprintf(head, sizeof(head),
		      "ok ret=0 state=%u err=%d bytes=%" PRIu64 " ok=%" PRIu64 " intact=%" PRIu64
		      " failed=%" PRIu64,
		      st.state, st.err, st.bytes, ok, intact, failed);
	return head + b.fields() + (st.err ? msg_field() : "");
}

std::string do_attr(const std::string &key, const opts &o)
{
	int ret = ds_store_set_attr(store, key.c_str(), o.attr_mask, &o.put);
	return "ok ret=" + std::to_string(ret) + (ret ? msg_field() : "");
}

int run_task(int ret, const uint64_t *task, ds_store_task_status *st);

/*
 * Zipf(theta) ranks by inverse CDF; a cache's traffic: read, and on a
 * miss fetch (here: make) the object and put it.
 */
std::string do_zipf(const std::vector<std::string> &w)
{
	if (w.size() < 7)
		return "ok ret=-22 msg=zipf_PREFIX_KEYS_OPS_SIZE_SEED_THETA";
	const std::string prefix = w[1];
	const uint64_t keys = num(w[2]), ops = num(w[3]), size = num(w[4]), seed = num(w[5]);
	const double theta = std::strtod(w[6].c_str(), nullptr);
	uint64_t pins = 0, max_puts = 0;
	opts o;
	for (size_t i = 7; i + 1 < w.size(); i += 2)
		if (w[i] == "pin")
			pins = num(w[i + 1]);
		else if (w[i] == "puts")
			max_puts = num(w[i + 1]);
		else if (w[i] == "dram")
			o.cfg.dram_replicas = static_cast<uint32_t>(num(w[i + 1]));
	if (!keys || !size)
		return "ok ret=-22 msg=zipf_needs_keys_and_size";
	std::vector<double> cdf(keys);
	double sum = 0;
	for (uint64_t r = 0; r < keys; r++)
		cdf[r] = sum += 1.0 / std::pow(static_cast<double>(r + 1), theta);
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	uint64_t gets = 0, hits = 0, puts = 0, pinned_puts = 0, put_failed = 0, bad = 0;
	std::string first_err;
	uint8_t *gp = get_buf.get(size), *pp = put_buf.get(size);
	if (!gp || !pp)
		return "ok ret=-12 msg=no_memory";
	uint64_t n = 0;
	for (; n < ops && (!max_puts || puts < max_puts); n++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double u = static_cast<double>(x >> 11) / 9007199254740992.0 * sum;
		uint64_t r = static_cast<uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u) -
						   cdf.begin());
		if (r >= keys)
			r = keys - 1;
		const std::string key = prefix + std::to_string(r);
		ds_store_task_status st{};
		struct iovec giov = {gp, size};
		uint64_t task = 0;
		gets++;
		int ret = run_task(ds_store_get(store, key.c_str(), &giov, 1, -1, 0, &task), &task, &st);
		if (!ret) {
			if (st.bytes == size && store_pat_check(gp, size, seed + r, size, 0))
				hits++;
			else
				bad++;
			continue;
		}
		if (ret != -ENOENT) {
			bad++;
			if (first_err.empty())
				first_err = "get_" + key + ":" + std::to_string(ret) + msg_field();
			continue;
		}
		store_pat_fill(pp, size, seed + r);
		struct iovec piov = {pp, size};
		const bool pin = r + pins >= keys;
		ds_store_put_opts po{ sizeof(po), pin ? DS_STORE_PUT_SOFT_PIN : 0u, 0, {} };
		puts++;
		pinned_puts += pin;
		ret = run_task(ds_store_put_ex(store, key.c_str(), &piov, 1, &o.cfg, &po, &task), &task,
			       &st);
		if (ret) {
			put_failed++;
			if (first_err.empty())
				first_err = "put_" + key + ":" + std::to_string(ret) + msg_field();
		}
	}
	char b[256];
	std::snprintf(b, sizeof(b),
		      "ok done ops=%" PRIu64 " gets=%" PRIu64 " hits=%" PRIu64 " puts=%" PRIu64
		      " pinned_puts=%" PRIu64 " put_failed=%" PRIu64 " bad=%" PRIu64,
		      n, gets, hits, puts, pinned_puts, put_failed, bad);
	return b + (first_err.empty() ? "" : " first=" + first_err);
}

std::string do_list(const std::string &prefix)
{
	std::string keys;
	size_t count = 0;
	int more = 0;
	std::string after;
	for (;;) {
		ds_store_object_list *l = nullptr;
		int ret = ds_store_list(store, prefix.c_str(), after.empty() ? nullptr : after.c_str(),
					0, &l);
		if (ret)
			return "ok ret=" + std::to_string(ret) + msg_field();
		for (size_t i = 0; i < l->count; i++) {
			keys += (keys.empty() ? "" : ",") + std::string(l->objects[i].key);
			after = l->objects[i].key;
		}
		count += l->count;
		more = l->more;
		const bool again = l->more && l->count;
		ds_store_list_free(l);
		if (!again)
			break;
	}
	return "ok ret=0 count=" + std::to_string(count) + " more=" + std::to_string(more) +
	       " keys=" + keys;
}

/*
 * Every object under the prefix deleted, so that the next test on this
 * store finds the pool as empty as a store of its own would be: the keys
 * listed first, then deleted in batches of the size the master takes in
 * one run (batch.cpp).
 */
std::string do_clear()
{
	std::vector<std::string> keys;
	std::string after;
	for (;;) {
		ds_store_object_list *l = nullptr;
		int ret = ds_store_list(store, g_prefix.c_str(),
					after.empty() ? nullptr : after.c_str(), 0, &l);
		if (ret)
			return "ok ret=" + std::to_string(ret) + msg_field();
		for (size_t i = 0; i < l->count; i++)
			keys.emplace_back(l->objects[i].key);
		if (l->count)
			after = keys.back();
		const bool again = l->more && l->count;
		ds_store_list_free(l);
		if (!again)
			break;
	}
	uint64_t deleted = 0, failed = 0;
	for (size_t i = 0; i < keys.size(); i += 256) {
		batch b;
		std::vector<std::string> part(keys.begin() + i,
					      keys.begin() + std::min(keys.size(), i + 256));
		b.make(part, 0);
		int ret = ds_store_batch_del(store, b.items.data(), b.items.size());
		if (ret)
			return "ok ret=" + std::to_string(ret) + msg_field();
		for (const ds_store_batch_item &it : b.items)
			(it.err ? failed : deleted)++;
	}
	return "ok ret=0 found=" + std::to_string(keys.size()) + " deleted=" +
	       std::to_string(deleted) + " failed=" + std::to_string(failed);
}

std::string do_simple(int kind, const std::string &key, const opts &o)
{
	uint64_t task = 0;
	int ret;
	switch (kind) {
	case DS_STORE_TASK_REPLICATE: ret = ds_store_replicate(store, key.c_str(), &o.cfg, &task); break;
	case DS_STORE_TASK_DEL: ret = ds_store_del(store, key.c_str(), &task); break;
	default: ret = ds_store_sync(store, key.c_str(), &task); break;
	}
	if (ret)
		return "ok ret=" + std::to_string(ret) + msg_field();
	return wait_task(task);
}

// ---- the Jepsen-style workload (chaos_test, make bench B=chaos) ----

int64_t mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// One history line per write(2), O_APPEND: what was written before a
// SIGKILL is whole.
struct history_file {
	int fd = -1;
	uint64_t process = 0;

	void event(const char *type, const char *f, const std::string &key, const std::string &more)
	{
		char b[512];
		int n = std::snprintf(b, sizeof(b),
				      "{\"type\":\"%s\",\"process\":%" PRIu64 ",\"f\":\"%s\","
				      "\"key\":\"%s\",\"time\":%" PRId64 "%s}\n",
				      type, process, f, key.c_str(), mono_ns(), more.c_str());
		if (n > 0 && write(fd, b, static_cast<size_t>(n)) != n)
			std::fprintf(stderr, "store_worker: history: %s\n", strerror(errno));
	}
};

std::string errfield(int err)
{
	return ",\"error\":\"" + std::string(strerror(-err)) + "\"";
}

// A task to its end: 0 and *st, or the submission's -errno.  (The task
// by pointer: it is set by the submission, an argument of the call.)
int run_task(int ret, const uint64_t *task, ds_store_task_status *st)
{
	if (ret)
		return ret;
	ret = ds_store_task_query(store, *task, -1, 1, st);
	if (ret)
		return ret;
	return st->state == DS_STORE_COMPLETE ? 0 : st->err ? st->err : -EIO;
}

// One operation, recorded.  A put that may have happened (a timeout, a
// master lost mid-call) is info; one that surely did not (refused before
// anything was placed) fail; a read that failed changed nothing: fail.
void chaos_op(history_file &h, int what, const std::string &key, uint64_t value,
	      const ds_store_replicate_config &cfg, bool final)
{
	ds_store_task_status st{};
	uint64_t task = 0;
	char more[160];
	const char *f = what == 0 ? "put" : what == 1 ? "get" : what == 2 ? "del" : "exist";

	if (what == 0) {
		std::snprintf(more, sizeof(more), ",\"value\":%" PRIu64, value);
		h.event("invoke", f, key, more);
		const uint64_t size = 4096 * (1 + value % 4);
		uint8_t *p = put_buf.get(size);
		store_pat_fill(p, size, value);
		struct iovec iov = {p, size};
		int ret = run_task(ds_store_put(store, key.c_str(), &iov, 1, &cfg, &task), &task, &st);
		if (!ret) {
			std::snprintf(more, sizeof(more), ",\"version\":%" PRId64, st.version);
			h.event("ok", f, key, more);
		} else {
			bool surely_not = ret == -EINVAL || ret == -ENOSPC || ret == -EPERM;
			h.event(surely_not ? "fail" : "info", f, key, errfield(ret));
		}
		return;
	}
	h.event("invoke", f, key, final ? ",\"final\":true" : "");
	if (what == 1) {
		const uint64_t cap = 4 * 4096;
		uint8_t *p = get_buf.get(cap);
		std::memset(p, 0, cap);
		struct iovec iov = {p, cap};
		int ret = run_task(ds_store_get(store, key.c_str(), &iov, 1, -1, 0, &task), &task, &st);
		uint64_t seed = 0, size = 0;
		if (!ret) {
			bool intact = !store_pat_seed(p, st.bytes, &seed, &size) && size == st.bytes &&
				      store_pat_check(p, st.bytes, seed, size, 0);
			std::snprintf(more, sizeof(more),
				      ",\"found\":true,\"value\":%" PRIu64 ",\"version\":%" PRId64
				      ",\"checksum_ok\":%s",
				      seed, st.version, intact ? "true" : "false");
			h.event("ok", f, key, more);
		} else if (ret == -ENOENT) {
			h.event("ok", f, key, ",\"found\":false");
		} else {
			h.event("fail", f, key, errfield(ret));
		}
	} else if (what == 2) {
		int ret = run_task(ds_store_del(store, key.c_str(), &task), &task, &st);
		if (!ret)
			h.event("ok", f, key, ",\"found\":true");
		else if (ret == -ENOENT)
			h.event("ok", f, key, ",\"found\":false");
		else
			h.event(ret == -EPERM || ret == -EINVAL ? "fail" : "info", f, key, errfield(ret));
	} else {
		ds_store_object_info info{};
		int ret = ds_store_stat(store, key.c_str(), &info);
		if (!ret) {
			std::snprintf(more, sizeof(more), ",\"found\":true,\"version\":%" PRIu64,
				      info.version);
			h.event("ok", f, key, more);
		} else if (ret == -ENOENT) {
			h.event("ok", f, key, ",\"found\":false");
		} else {
			h.event("fail", f, key, errfield(ret));
		}
	}
}

std::string do_chaos(const std::vector<std::string> &w, bool final)
{
	if ((!final && w.size() < 6) || (final && w.size() < 4))
		return "ok ret=-22 msg=usage";
	history_file h;
	h.process = num(w[1]);
	const uint64_t keys = num(w[2]);
	const std::string &file = final ? w[3] : w[5];
	h.fd = open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (h.fd < 0 || !keys)
		return "ok ret=" + std::to_string(h.fd < 0 ? -errno : -EINVAL) + " msg=history";
	opts o;
	o.parse(w, final ? 4 : 6);
	uint64_t ops = 0;
	if (final) {
		for (uint64_t k = 0; k < keys; k++, ops++)
			chaos_op(h, 1, "ch/" + std::to_string(k), 0, o.cfg, true);
	} else {
		const int64_t secs = static_cast<int64_t>(num(w[3]));
		const int64_t until = mono_ns() + secs * 1000000000LL;
		uint64_t rng = store_pat_mix(num(w[4]) ^ (h.process << 32)) | 1, n = 0, max_ops = 0;
		std::string stop;
		for (size_t i = 6; i + 1 < w.size(); i++)
			if (w[i] == "ops")
				max_ops = num(w[++i]);
			else if (w[i] == "stop")
				stop = w[++i];
		// no clock when the run is sized otherwise (SECONDS 0)
		const bool timed = secs > 0 || (!max_ops && stop.empty());
		while ((!timed || mono_ns() < until) && (!max_ops || ops < max_ops) &&
		       (stop.empty() || access(stop.c_str(), F_OK))) {
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			const std::string key = "ch/" + std::to_string(rng % keys);
			// writes unique per process: the value names its put
			const int r = static_cast<int>((rng >> 20) % 10);
			const int what = r < 4 ? 0 : r < 7 ? 1 : r < 8 ? 2 : 3;
			chaos_op(h, what, key, what == 0 ? (h.process << 24) | ++n : 0, o.cfg, false);
			ops++;
		}
	}
	close(h.fd);
	return "ok done ops=" + std::to_string(ops);
}

void do_loop(const std::vector<std::string> &w)
{
	if (w.size() < 5) {
		std::printf("ok ret=-22 msg=usage\n");
		return;
	}
	opts o;
	o.parse(w, 5);
	const uint64_t count = num(w[2]), size = num(w[3]), seed0 = num(w[4]);
	for (uint64_t i = 0; i < count; i++) {
		const std::string key = w[1] + std::to_string(i);
		const uint64_t seed = seed0 + i;
		std::string r = do_put(key, size, seed, o);
		// "ok ret=..." -> "put key=K seed=S ret=..."
		std::printf("put key=%s seed=%" PRIu64 " size=%" PRIu64 " %s\n", key.c_str(), seed,
			    size, r.c_str() + 3);
	}
	std::printf("ok done=%" PRIu64 "\n", count);
}

std::vector<std::string> split(const std::string &line)
{
	std::vector<std::string> w;
	size_t i = 0;
	while (i < line.size()) {
		while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
			i++;
		size_t j = i;
		while (j < line.size() && line[j] != ' ' && line[j] != '\t')
			j++;
		if (j > i)
			w.push_back(line.substr(i, j - i));
		i = j;
	}
	return w;
}

[[noreturn]] void usage(const char *why)
{
	std::fprintf(stderr,
		     "store_worker: %s\n"
		     "usage: store_worker --masters H:P[,H:P] --node ID [--addr IP] [--segment SIZE]\n"
		     "                    [--threads N] [--timeout-ms MS]\n",
		     why);
	std::exit(2);
}

args parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{"masters", required_argument, nullptr, 'm'},
		{"node", required_argument, nullptr, 'n'},
		{"addr", required_argument, nullptr, 'a'},
		{"segment", required_argument, nullptr, 's'},
		{"threads", required_argument, nullptr, 't'},
		{"timeout-ms", required_argument, nullptr, 'T'},
		{"identity", required_argument, nullptr, 'i'},
		{nullptr, 0, nullptr, 0},
	};
	args a;
	for (int c; (c = getopt_long(argc, argv, "", lo, nullptr)) != -1;) {
		switch (c) {
		case 'm': a.masters = optarg; break;
		case 'n': a.node = static_cast<uint32_t>(num(optarg)); break;
		case 'a': a.addr = optarg; break;
		case 's': a.segment = num(optarg); break;
		case 't': a.threads = static_cast<uint32_t>(num(optarg)); break;
		case 'T': a.timeout_ms = static_cast<uint32_t>(num(optarg)); break;
		case 'i': {
			g_no_cert = !strcmp(optarg, "none");
			// the library's per-file defaults, for the store and raw calls
			const char *d = getenv(dsmem::store::kTlsDirEnv);
			std::string dir = d && *d ? d : dsmem::store::kTlsDirDefault;
			setenv("DSMEM_STORE_CERT", (dir + "/" + optarg + ".crt").c_str(), 1);
			setenv("DSMEM_STORE_KEY", (dir + "/" + optarg + ".key").c_str(), 1);
			break;
		}
		default: usage("unknown option");
		}
	}
	for (int i = optind; i < argc; i++)
		a.oneshot.push_back(argv[i]);
	if (a.masters.empty())
		usage("--masters is needed");
	if (a.oneshot.empty() && !a.node)
		usage("--node is needed");
	return a;
}

std::string field(const char *s)
{
	std::string v = s;
	for (char &c : v)
		if (c == ' ' || c == '\n' || c == '\t')
			c = '_';
	return v;
}

// The pool's segments, or false once the error is printed.
bool segment_list(const args &a, ds_store_segment_info **segs, size_t *n)
{
	char err[512] = "";
	int ret = ds_store_segment_list(a.masters.c_str(), segs, n, err, sizeof(err));
	if (ret)
		std::printf("ok ret=%d msg=%s\n", ret, field(err).c_str());
	return !ret;
}

// A status as "ok ret=-ERRNO msg=...", the exit status 0 when it is OK.
int status_line(const grpc::Status &s)
{
	// the library's own table of statuses as errnos
	int ret = dsmem::store::status_to_errno(s);
	std::printf("ok ret=%d msg=%s\n", ret, field(s.error_message().c_str()).c_str());
	return ret ? 1 : 0;
}

template <typename Stub>
int forge(const std::vector<std::string> &w, Stub stub)
{
	namespace pb = dsmem::store::v1;
	grpc::ClientContext ctx;
	ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
	const std::string &what = w[1];
	auto member = [&](pb::Member *m, size_t at) {
		m->set_node_id(static_cast<uint32_t>(num(w[at])));
		m->set_addr(w[at + 1]);
		m->set_port(static_cast<uint32_t>(num(w[at + 2])));
	};
	if (what == "unregister" && w.size() == 4) {
		pb::UnregisterSegmentRequest q;
		pb::UnregisterSegmentResponse r;
		q.set_segment_id(num(w[2]));
		q.set_client_id(num(w[3]));
		return status_line(stub()->UnregisterSegment(&ctx, q, &r));
	}
	if (what == "leave" && w.size() == 3) {
		pb::LeaveRequest q;
		pb::LeaveResponse r;
		q.set_client_id(num(w[2]));
		return status_line(stub()->Leave(&ctx, q, &r));
	}
	if (what == "heartbeat" && w.size() == 3) {
		pb::HeartbeatRequest q;
		pb::HeartbeatResponse r;
		q.set_client_id(num(w[2]));
		return status_line(stub()->Heartbeat(&ctx, q, &r));
	}
	if (what == "put" && w.size() == 4) {
		pb::PutStartRequest q;
		pb::PutStartResponse r;
		q.set_key(w[2]);
		q.set_client_id(num(w[3]));
		q.set_size(4096);
		q.mutable_config()->set_dram_replicas(1);
		return status_line(stub()->PutStart(&ctx, q, &r));
	}
	if (what == "del" && w.size() == 3) {
		pb::DelRequest q;
		pb::DelResponse r;
		q.set_key(w[2]);
		return status_line(stub()->Del(&ctx, q, &r));
	}
	if (what == "replicate" && w.size() == 4) {
		pb::ReplicateRequest q;
		pb::ReplicateResponse r;
		q.set_key(w[2]);
		q.mutable_config()->set_dram_replicas(static_cast<uint32_t>(num(w[3])));
		return status_line(stub()->Replicate(&ctx, q, &r));
	}
	if (what == "rejoin" && w.size() == 6) {
		pb::RegisterClientRequest q;
		pb::RegisterClientResponse r;
		q.set_previous_client_id(num(w[2]));
		member(q.mutable_self(), 3);
		return status_line(stub()->RegisterClient(&ctx, q, &r));
	}
	if (what == "remount" && w.size() == 6) {
		pb::SegmentListRequest lq;
		pb::SegmentListResponse lr;
		grpc::Status s = stub()->SegmentList(&ctx, lq, &lr);
		if (!s.ok())
			return status_line(s);
		const pb::SegmentDesc *victim = nullptr;
		for (const auto &d : lr.segments())
			if (d.id() == num(w[2]))
				victim = &d;
		if (!victim)
			return status_line(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such segment"));
		grpc::ClientContext jctx, sctx, lctx;
		for (auto *x : { &jctx, &sctx, &lctx })
			x->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
		pb::RegisterClientRequest jq;
		pb::RegisterClientResponse jr;
		member(jq.mutable_self(), 3);
		s = stub()->RegisterClient(&jctx, jq, &jr);
		if (!s.ok())
			return status_line(s);
		pb::RegisterSegmentRequest q;
		pb::RegisterSegmentResponse r;
		q.set_client_id(jr.client_id());
		*q.mutable_desc() = *victim;
		grpc::Status took = stub()->RegisterSegment(&sctx, q, &r);
		pb::LeaveRequest bq;
		pb::LeaveResponse br;
		bq.set_client_id(jr.client_id());
		stub()->Leave(&lctx, bq, &br);
		return status_line(took);
	}
	usage(("unknown forge " + what).c_str());
}

int oneshot(const args &a)
{
	char err[512] = "";
	const std::string &c = a.oneshot[0];
	if (c == "info") {
		struct ds_store_master_info mi{};
		int ret = ds_store_master_info(a.masters.c_str(), &mi, err, sizeof(err));
		if (ret) {
			std::printf("ok ret=%d msg=%s\n", ret, field(err).c_str());
			return 1;
		}
		std::printf("ok ret=0 leader=%s standbys=%s persistence=%s slow_tier=%s term=%" PRIu64
			    " objects=%" PRIu64 " versions=%" PRIu64 " metadata_bytes=%" PRIu64
			    " log_records=%" PRIu64 " global_version=%" PRIu64 " members=%" PRIu64
			    " ops=%" PRIu64 " evictions=%" PRIu64 " expiries=%" PRIu64
			    " evicted_bytes=%" PRIu64 " high_watermark=%u low_watermark=%u\n",
			    field(mi.leader).c_str(), field(mi.standbys).c_str(),
			    field(mi.persistence).c_str(), field(mi.slow_tier).c_str(), mi.term,
			    mi.objects, mi.versions, mi.metadata_bytes, mi.log_records,
			    mi.global_version, mi.members, mi.ops, mi.evictions, mi.expiries,
			    mi.evicted_bytes, mi.high_watermark_pct, mi.low_watermark_pct);
		return 0;
	}
	if (c == "segments") {
		ds_store_segment_info *segs = nullptr;
		size_t n = 0;
		if (!segment_list(a, &segs, &n))
			return 1;
		for (size_t i = 0; i < n; i++)
			std::printf("segment id=%" PRIu64 " type=%u state=%u size=%" PRIu64
				    " used=%" PRIu64 " owner=%" PRIu64 " node=%u\n",
				    segs[i].id, segs[i].type, segs[i].state, segs[i].size,
				    segs[i].used, segs[i].owner, segs[i].node_id);
		std::printf("ok ret=0 count=%zu\n", n);
		free(segs);
		return 0;
	}
	namespace pb = dsmem::store::v1;
	// the first master's RPC itself (the wire contract): for tests that
	// damage a replica, or report one
	auto stub = [&a] {
		std::string first = a.masters.substr(0, a.masters.find(','));
		std::shared_ptr<grpc::ChannelCredentials> creds;
		std::string e;
		auto f = dsmem::store::client_tls_files(nullptr, nullptr, nullptr, false);
		if (g_no_cert)
			f.cert = f.key = "";
		if (dsmem::store::channel_credentials(f, &creds, &e)) {
			std::fprintf(stderr, "store_worker: %s\n", e.c_str());
			std::exit(1);
		}
		return pb::Master::NewStub(grpc::CreateChannel(first, creds));
	};
	if (c == "forge" && a.oneshot.size() >= 3)
		return forge(a.oneshot, stub);
	if (c == "report" && a.oneshot.size() == 5) {
		pb::ReportReplicaRequest req;
		pb::ReportReplicaResponse resp;
		grpc::ClientContext ctx;
		ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
		req.set_key(key_arg(a.oneshot[1]));
		req.set_version(num(a.oneshot[2]));
		req.mutable_first_shard()->set_segment_id(num(a.oneshot[3]));
		req.mutable_first_shard()->set_offset(num(a.oneshot[4]));
		grpc::Status s = stub()->ReportReplica(&ctx, req, &resp);
		int ret = s.ok() ? 0 : s.error_code() == grpc::StatusCode::NOT_FOUND ? -ENOENT : -EIO;
		std::printf("ok ret=%d dropped=%d msg=%s\n", ret, resp.dropped(),
			    field(s.error_message().c_str()).c_str());
		return ret ? 1 : 0;
	}
	if (c == "replicate" && a.oneshot.size() == 4) {
		pb::ReplicateRequest req;
		pb::ReplicateResponse resp;
		grpc::ClientContext ctx;
		ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
		req.set_key(a.oneshot[1]);
		req.mutable_config()->set_dram_replicas(static_cast<uint32_t>(num(a.oneshot[2])));
		req.mutable_config()->set_nvmeof_replicas(static_cast<uint32_t>(num(a.oneshot[3])));
		grpc::Status s = stub()->Replicate(&ctx, req, &resp);
		std::printf("ok ret=%d version=%" PRIu64 " dram=%u nvme=%u msg=%s\n", s.ok() ? 0 : -EIO,
			    resp.version(), resp.dram_replicas(), resp.nvmeof_replicas(),
			    field(s.error_message().c_str()).c_str());
		return s.ok() ? 0 : 1;
	}
	if (c == "locate" && a.oneshot.size() == 2) {
		// where the newest version's replicas are
		pb::GetRequest req;
		pb::GetResponse resp;
		grpc::ClientContext ctx;
		ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
		req.set_key(key_arg(a.oneshot[1]));
		req.set_min_version(-1);
		grpc::Status s = stub()->Get(&ctx, req, &resp);
		if (!s.ok()) {
			std::printf("ok ret=%d msg=%s\n", -EIO, field(s.error_message().c_str()).c_str());
			return 1;
		}
		ds_store_segment_info *segs = nullptr;
		size_t n = 0;
		if (!segment_list(a, &segs, &n))
			return 1;
		const pb::ObjectInfo &o = resp.object();
		std::printf("ok ret=0 version=%" PRIu64 " replicas=%d sums=%d", o.version(),
			    o.replicas_size(), o.sums().xxh64_size());
		// each replica's first shard: global address, length, place
		for (int r = 0; r < o.replicas_size(); r++) {
			const pb::Shard &sh = o.replicas(r).shards(0);
			for (size_t i = 0; i < n; i++)
				if (segs[i].id == sh.segment_id())
					std::printf(" r%d=0x%" PRIx64 " r%d_len=%" PRIu64 " r%d_seg=%" PRIu64
						    " r%d_off=%" PRIu64,
						    r, segs[i].gaddr + sh.offset(), r, sh.length(), r,
						    sh.segment_id(), r, sh.offset());
		}
		std::printf("\n");
		free(segs);
		return 0;
	}
	if (c == "drain" && a.oneshot.size() == 3) {
		uint64_t moved = 0;
		int ret = ds_store_segment_drain(a.masters.c_str(), num(a.oneshot[1]),
						 num(a.oneshot[2]), &moved, err, sizeof(err));
		std::printf("ok ret=%d moved=%" PRIu64 " msg=%s\n", ret, moved, field(err).c_str());
		return ret ? 1 : 0;
	}
	if (c == "nvmeof-register" && a.oneshot.size() == 6) {
		uint64_t id = 0;
		int ret = ds_store_nvmeof_register(a.masters.c_str(), a.oneshot[1].c_str(),
						   static_cast<uint32_t>(num(a.oneshot[2])),
						   a.oneshot[3].c_str(), num(a.oneshot[4]),
						   num(a.oneshot[5]), &id, err, sizeof(err));
		if (ret) {
			std::printf("ok ret=%d msg=%s\n", ret, field(err).c_str());
			return 1;
		}
		std::printf("ok ret=0 segment=%" PRIu64 "\n", id);
		return 0;
	}
	usage(("unknown one-shot command " + c).c_str());
}

}  // namespace

// The heartbeats' failures and rejoins, as they come, into the log
// (stderr): the chaos test tells a client cut off from its leader from
// one a master declared dead wrongly (store_test.c, the stall).  Polled,
// so a burst shows as its last beat; stops before a close.
std::atomic<bool> g_watch_stop{false};

void watch_health()
{
	uint64_t failed = 0, rejoins = 0;

	while (!g_watch_stop.load()) {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		ds_store_health h;
		if (ds_store_health_get(store, &h, sizeof(h)))
			return;
		if (h.beats_failed == failed && h.rejoins == rejoins)
			continue;
		failed = h.beats_failed;
		rejoins = h.rejoins;
		std::fprintf(stderr,
			     "store_worker: heartbeat failed=%" PRIu64 " last_failed_ns=%" PRIu64
			     " err=%d ok=%" PRIu64 " last_ok_ns=%" PRIu64 " rejoins=%" PRIu64
			     " client=%" PRIu64 "\n",
			     h.beats_failed, h.last_failed_ns, h.last_error, h.beats_ok,
			     h.last_ok_ns, h.rejoins, h.client_id);
	}
}

int main(int argc, char **argv)
{
	const args a = parse(argc, argv);
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	if (const char *p = std::getenv("STORE_WORKER_PREFIX"))
		g_prefix = p;
	if (!a.oneshot.empty())
		return oneshot(a);

	ds_store_config cfg{};
	cfg.masters = a.masters.c_str();
	cfg.node_id = a.node;
	cfg.addr = a.addr.empty() ? nullptr : a.addr.c_str();
	cfg.segment_size = a.segment;
	cfg.threads = a.threads;
	cfg.timeout_ms = a.timeout_ms;
	// A pool's client starting while the masters elect (an etcd member
	// starved, a leader's lease expiring) keeps trying, as an
	// application's start-up would: each open is bounded by the timeout;
	// the harness gives a join 210 s (three etcd members and two masters
	// in a guest beside the debug tier's once took over 90 s to answer).
	auto join_until = std::chrono::steady_clock::now() + std::chrono::seconds(200);
	int ret, tries = 0;
	while ((ret = ds_store_open(&cfg, &store)) == -EAGAIN || ret == -ETIMEDOUT) {
		if (std::chrono::steady_clock::now() >= join_until)
			break;
		std::fprintf(stderr, "store_worker: join attempt %d: %s; again\n", ++tries,
			     ds_store_errmsg(nullptr));
		std::this_thread::sleep_for(std::chrono::milliseconds(500));
	}
	if (ret) {
		// (the message is per thread: no handle needed)
		std::string m = ds_store_errmsg(nullptr);
		std::printf("error ret=%d msg=%s\n", ret, m.c_str());
		return 1;
	}
	std::printf("ready node=%u segment=%" PRIu64 "\n", a.node, a.segment);
	std::thread watcher(watch_health);

	char *line = nullptr;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		std::string l(line, static_cast<size_t>(n));
		while (!l.empty() && (l.back() == '\n' || l.back() == '\r'))
			l.pop_back();
		std::vector<std::string> w = split(l);
		if (w.empty())
			continue;
		const std::string &c = w[0];
		opts o;
		std::string r;
		if (c == "put" && w.size() >= 4) {
			o.parse(w, 4);
			r = do_put(key_arg(w[1]), num(w[2]), num(w[3]), o);
		} else if (c == "get" && w.size() >= 3) {
			o.parse(w, 3);
			r = do_get(key_arg(w[1]), num(w[2]), o);
		} else if (c == "wait" && w.size() >= 2) {
			r = wait_task(num(w[1]));
		} else if (c == "replicate" && w.size() >= 2) {
			o.parse(w, 2);
			r = do_simple(DS_STORE_TASK_REPLICATE, key_arg(w[1]), o);
		} else if (c == "del" && w.size() >= 2) {
			r = do_simple(DS_STORE_TASK_DEL, key_arg(w[1]), o);
		} else if (c == "sync" && w.size() >= 2) {
			r = do_simple(DS_STORE_TASK_SYNC, key_arg(w[1]), o);
		} else if (c == "attr" && w.size() >= 2) {
			o.parse(w, 2);
			r = do_attr(key_arg(w[1]), o);
		} else if (c == "bput" || c == "bget" || c == "bexist" || c == "bdel") {
			r = do_batch(w);
		} else if (c == "zipf") {
			r = do_zipf(w);
		} else if (c == "stat" && w.size() >= 2) {
			r = do_stat(key_arg(w[1]));
		} else if (c == "list") {
			r = do_list(g_prefix + (w.size() >= 2 ? w[1] : ""));
		} else if (c == "prefix" && w.size() >= 2) {
			g_prefix = w[1] == "-" ? "" : w[1];
			r = "ok ret=0 prefix=" + w[1];
		} else if (c == "clear") {
			r = do_clear();
		} else if (c == "echo" && w.size() >= 2) {
			r = "ok echo=" + w[1];
		} else if (c == "chaos") {
			r = do_chaos(w, false);
		} else if (c == "chaos-final") {
			r = do_chaos(w, true);
		} else if (c == "loop") {
			do_loop(w);
			continue;
		} else if (c == "close") {
			o.parse(w, 1);
			g_watch_stop = true;
			watcher.join();
			ds_store_close(store, o.drain);
			std::printf("ok\n");
			return 0;
		} else if (c == "quit") {
			std::printf("ok\n");
			std::fflush(stdout);
			_exit(0);
		} else {
			r = "ok ret=-22 msg=unknown_command";
		}
		std::printf("%s\n", r.c_str());
	}
	// stdin closed: the test is gone; leave as if killed (no drain)
	_exit(0);
}
