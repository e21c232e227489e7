// SPDX-License-Identifier: BSD-2-Clause
// dsctl btree load and btree bench: the B+tree filled with keys, and
// YCSB workloads on it from compute-node processes.
//   btree load node N tree ADDR count N [order sorted|random] [threads T]
//   btree bench node N[,N...] tree ADDR workload a|b|c|d|e|f ...
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>

#include <sys/wait.h>
#include <unistd.h>

#include <linux/dsmem.h>

#include "btree_cli.hpp"
#include "sim.hpp"

namespace dsctl::btree_cli {

namespace {

using steady = std::chrono::steady_clock;

uint64_t ns_since(steady::time_point t0)
{
	return static_cast<uint64_t>(
		std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t0).count());
}

// The steady clock in ns: CLOCK_MONOTONIC, the same in every process.
uint64_t steady_ns(steady::time_point t)
{
	return static_cast<uint64_t>(
		std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

void add_stats(struct ds_btree_stats &a, const struct ds_btree_stats &b)
{
	// the struct is all uint64_t: summed field by field
	static_assert(sizeof(struct ds_btree_stats) % sizeof(uint64_t) == 0);
	auto *pa = reinterpret_cast<uint64_t *>(&a);
	const auto *pb = reinterpret_cast<const uint64_t *>(&b);
	for (size_t i = 0; i < sizeof(a) / sizeof(uint64_t); i++)
		pa[i] += pb[i];
}

uint64_t rtt_total(const struct ds_btree_stats &s)
{
	return s.rtt_read + s.rtt_lock + s.rtt_write + s.rtt_other;
}

// ---- keys ---------------------------------------------------------------------

// Load and bench name keys by integers.  On a byte-string tree the key is
// "user" and the integer in decimal, zero-padded to key_len bytes (YCSB's
// form; the padding keeps the integers' order, so scans mean the same).
// Set once from the tree and the words, before any thread or process.
uint32_t key_len = 0;	// 0: integer keys
constexpr uint32_t key_len_min = 24;	// "user" and 20 digits

size_t key_bytes(uint64_t k, char *out)
{
	memcpy(out, "user", 4);
	for (uint32_t i = key_len; i > 4; i--, k /= 10)
		out[i - 1] = static_cast<char>('0' + k % 10);
	return key_len;
}

uint64_t key_number(const uint8_t *p, size_t len)
{
	uint64_t k = 0;
	for (size_t i = 4; i < len; i++)
		k = k * 10 + static_cast<uint64_t>(p[i] - '0');
	return k;
}

int put_k(ds_btree *t, uint64_t key, const void *val, size_t len)
{
	char k[DS_BTREE_KEY_MAX];
	if (!key_len)
		return ds_btree_put(t, key, val, len);
	return ds_btree_kput(t, k, key_bytes(key, k), val, len);
}

int get_k(ds_btree *t, uint64_t key, void *val, size_t len, size_t *vlen)
{
	char k[DS_BTREE_KEY_MAX];
	if (!key_len)
		return ds_btree_get(t, key, val, len, vlen);
	return ds_btree_kget(t, k, key_bytes(key, k), val, len, vlen);
}

int scan_k(ds_btree *t, uint64_t start, size_t limit, uint64_t *keys, void *vals, size_t *n)
{
	char k[DS_BTREE_KEY_MAX];
	if (!key_len)
		return ds_btree_scan(t, start, limit, keys, vals, n);
	thread_local std::vector<ds_btree_key> ks;
	ks.resize(std::max(ks.size(), limit));
	int ret = ds_btree_kscan(t, k, key_bytes(start, k), limit, ks.data(), vals, n);
	for (size_t i = 0; !ret && i < *n; i++)
		keys[i] = key_number(ks[i].bytes, ks[i].len);
	return ret;
}

// key-len on a byte-string tree (default: 32, or key_max when shorter);
// refused on an integer-key tree.
void set_key_len(const std::string *word, uint32_t key_max)
{
	uint64_t n = std::min<uint32_t>(32, key_max);

	if (!key_max) {
		if (word)
			fail("key-len is for trees of byte-string keys (created with key-max)");
		key_len = 0;
		return;
	}
	if (key_max < key_len_min)
		fail("load and bench name keys by 24 bytes at least: this tree's keys have " +
		     std::to_string(key_max) + " at most");
	if (word && (!parse_u64(*word, n) || n < key_len_min || n > key_max))
		fail("key-len needs a number from " + std::to_string(key_len_min) + " to " +
		     std::to_string(key_max) + " (the tree's key-max)");
	key_len = static_cast<uint32_t>(n);
}

// ---- values -------------------------------------------------------------------

// What load and bench store under a key, so that a loaded tree reads back
// recognisably: the key itself (inline), "v<key>" (out of line).
size_t value_into(uint64_t key, uint32_t value_size, uint8_t *buf)
{
	if (value_size == 8) {
		memcpy(buf, &key, 8);
		return 8;
	}
	char text[24];
	int n = snprintf(text, sizeof(text), "v%llu", static_cast<unsigned long long>(key));
	size_t len = std::min<size_t>(static_cast<size_t>(n), value_size);
	memcpy(buf, text, len);
	return len;
}

// ---- load -------------------------------------------------------------------

struct load_result {
	uint64_t keys = 0;
	double seconds = 0;
	int err = 0;
	uint64_t failed_key = 0;
};

// Insert keys 0 .. count-1 (in order, or shuffled by a fixed seed) from
// `threads` threads on one handle, each a contiguous slice of the order.
load_result load_keys(ds_btree *t, uint64_t count, bool sorted, unsigned threads,
		      uint32_t value_size)
{
	// random order: a fixed bijection of [0, count), not an array of
	// every key
	dssim::scatter perm(count);
	auto order = [&](uint64_t i) { return sorted ? i : perm(i); };
	std::atomic<int> err{ 0 };
	std::atomic<uint64_t> failed_key{ 0 };
	auto t0 = steady::now();
	std::vector<std::thread> th;
	for (unsigned w = 0; w < threads; w++)
		th.emplace_back([&, w] {
			std::vector<uint8_t> buf(std::max<uint32_t>(value_size, 8));
			uint64_t from = count * w / threads, to = count * (w + 1) / threads;
			for (uint64_t i = from; i < to && !err.load(std::memory_order_relaxed);
			     i++) {
				uint64_t key = order(i);
				size_t n = value_into(key, value_size, buf.data());
				int ret = put_k(t, key, buf.data(), n);
				if (ret < 0) {
					failed_key = key;
					err = ret;
				}
			}
		});
	for (auto &x : th)
		x.join();
	load_result r;
	r.seconds = static_cast<double>(ns_since(t0)) / 1e9;
	r.keys = count;
	r.err = err;
	r.failed_key = failed_key;
	return r;
}

void check_load(const load_result &l)
{
	if (l.err)
		fail("cannot load key " + std::to_string(l.failed_key) + ": " + errno_text(l.err));
}

unsigned threads_of(const keywords &kw)
{
	return static_cast<unsigned>(u64_arg(kw, "threads", 1, 1, 256));
}

}  // namespace

int bt_load(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "count", "order", "threads", "key-len" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	uint64_t count;
	if (!parse_u64(need(kw, "count", "btree"), count) || !count || count > (1ULL << 32))
		fail("count needs a number of keys from 1 to " + std::to_string(1ULL << 32));
	bool sorted = !second_of(kw, "order", "sorted", "random", true);
	unsigned threads = threads_of(kw);

	dsmem::btree t = open_tree(node, addr);
	set_key_len(kw.get("key-len"), t.key_max());
	uint32_t vs = t.value_size();
	t.reset_stats();
	load_result l = load_keys(t.get(), count, sorted, threads, vs);
	check_load(l);
	struct ds_btree_stats s = t.stats();
	struct ds_btree_info after = describe(t);

	record r;
	r["tree"] = addr_string(addr);
	r["keys"] = count;
	r["order"] = sorted ? "sorted" : "random";
	r["threads"] = threads;
	r["seconds"] = round_to(l.seconds, 4);
	r["ops_per_sec"] = round_to(static_cast<double>(count) / l.seconds, 1);
	r["rtt_per_op"] = ratio_record(rtt_total(s), count);
	r["lock_retries_per_op"] = ratio_record(s.lock_retries, count);
	r["splits"] = s.splits;
	r["height"] = after.height;
	r["nodes"] = after.nodes;
	e.out.begin_list();
	e.out.add(r);
	return 0;
}

namespace {

// ---- bench ------------------------------------------------------------------

// Latencies in ns, log-linear: 64 buckets per power of two (values within
// 1.6%), up to 2^40 ns.
class latency_hist {
public:
	static constexpr unsigned sub_bits = 6, max_exp = 40;
	static constexpr unsigned buckets = (max_exp - sub_bits + 1) << sub_bits;

	void add(uint64_t ns)
	{
		ns = std::min<uint64_t>(ns, (1ULL << max_exp) - 1);
		n_[index(ns)]++;
		count_++;
	}
	void merge(const latency_hist &o)
	{
		for (unsigned i = 0; i < buckets; i++)
			n_[i] += o.n_[i];
		count_ += o.count_;
	}
	uint64_t count() const { return count_; }
	// the q-quantile's bucket midpoint, in µs; null when empty
	record quantile_us(double q) const
	{
		if (!count_)
			return nullptr;
		uint64_t want = std::max<uint64_t>(1, static_cast<uint64_t>(
						      std::ceil(q * static_cast<double>(count_))));
		uint64_t seen = 0;
		for (unsigned i = 0; i < buckets; i++) {
			seen += n_[i];
			if (seen >= want)
				return round_to(mid(i) / 1000.0, 2);
		}
		return nullptr;
	}

private:
	static unsigned index(uint64_t v)
	{
		if (v < (1u << sub_bits))
			return static_cast<unsigned>(v);
		unsigned e = 63 - static_cast<unsigned>(__builtin_clzll(v));
		unsigned m = static_cast<unsigned>(v >> (e - sub_bits)) & ((1u << sub_bits) - 1);
		return ((e - sub_bits + 1) << sub_bits) + m;
	}
	static double mid(unsigned i)
	{
		if (i < (1u << sub_bits))
			return i;
		unsigned e = (i >> sub_bits) + sub_bits - 1;
		double m = (i & ((1u << sub_bits) - 1)) + (1u << sub_bits);
		return (m + 0.5) * std::ldexp(1.0, static_cast<int>(e - sub_bits));
	}

	uint64_t n_[buckets] = {};
	uint64_t count_ = 0;
};

enum op_kind : unsigned { k_read, k_update, k_insert, k_scan, k_rmw, k_kinds };
const char *const kind_names[k_kinds] = { "read", "update", "insert", "scan", "rmw" };

// One kind of operation, as one process measured it.  rtt[] (by the
// stats' types: read, lock, write, other) only when `attributed`.
struct kind_result {
	uint64_t ops = 0, not_found = 0;
	uint64_t failed = 0;		// attempts that failed (tolerate yes)
	uint64_t rtt[4] = {};
	uint64_t bytes_read = 0;
	latency_hist lat;

	// adds another thread's or process's counts of the same kind
	void merge(const kind_result &b)
	{
		ops += b.ops;
		not_found += b.not_found;
		failed += b.failed;
		for (int j = 0; j < 4; j++)
			rtt[j] += b.rtt[j];
		bytes_read += b.bytes_read;
		lat.merge(b.lat);
	}
};

// What a compute-node process sends through its pipe: a message (err 0:
// ready), and after the run another, then on success its result.  Plain
// bytes: both ends are this program.
struct proc_msg {
	int32_t err = 0;
	char text[200] = {};
};

// verify yes: a key found without its last acknowledged update, as an
// example of what was lost
struct lost_key {
	uint64_t key = 0, acked = 0, found = 0;	// found 0: the key is gone
	uint64_t unacked = 0;		// failed puts after the acknowledged one
};
constexpr unsigned lost_examples = 4;	// per compute node

struct proc_result {
	uint32_t node = 0, client_id = 0;
	uint64_t elapsed_ns = 0;
	uint64_t start_ns = 0, end_ns = 0;	// the run, since bench_opts.origin_ns
	uint64_t lookup_words = 0;	// words of the lookup bitmap sent after this
	uint64_t verified = 0, lost_acked = 0, unverified = 0;	// verify yes
	uint32_t nlost = 0;		// examples in lost[]
	lost_key lost[lost_examples];
	uint8_t attributed = 0;
	kind_result kinds[k_kinds];
	struct ds_btree_stats stats{};
	uint64_t cache_bytes = 0, cache_entries = 0;
	uint64_t probe_ns = 0;		// the floor: 2 x probe reads, around the run
};

struct bench_opts {
	uint64_t tree = 0;
	std::string key_len_word;	// key-len as given; empty: the default
	std::vector<uint32_t> nodes;
	char workload = 'c';
	bool zipf = true;
	double theta = 0.99;
	uint64_t keys = 100000;
	uint64_t ops = 100000;		// over all threads of all compute nodes
	double seconds = 0;		// time mode when > 0
	unsigned threads = 1;		// per compute node
	uint64_t cache = 0;		// 0: the library's default
	bool no_cache = false;
	bool load = true;
	uint64_t warmup = UINT64_MAX;	// ops per thread; MAX: a tenth
	uint64_t probe = 2000;
	uint64_t seed = 1;
	uint64_t insert_base = 0;	// d, e: new keys from here up
	bool tolerate = false;		// a failed op is counted and retried
	bool verify = false;		// updates to owned keys, checked at the end
	// the steady clock (CLOCK_MONOTONIC, one for all processes) when the
	// compute nodes were forked: their lookup bitmaps count ms from it
	uint64_t origin_ns = 0;
};

// The operation a YCSB workload makes of one drawn request: the stream's
// write flag picks the workload's second kind (A, B: update; D, E: insert;
// F: read-modify-write), C reads only, E reads by scans.
op_kind kind_for(char workload, bool write)
{
	switch (workload) {
	case 'a': case 'b': return write ? k_update : k_read;
	case 'd': return write ? k_insert : k_read;
	case 'e': return write ? k_insert : k_scan;
	case 'f': return write ? k_rmw : k_read;
	default: return k_read;
	}
}

double write_share(char workload)
{
	switch (workload) {
	case 'a': case 'f': return 0.5;
	case 'b': case 'd': case 'e': return 0.05;
	default: return 0;
	}
}

// One thread's requests, drawn by the cache simulator's generator (its
// Zipf sampler scatters the popular keys over the key space).  For D,
// rank[] orders the drawn objects by how often they were drawn, the
// popularity ranks "read latest" counts back from the newest insert with.
struct stream {
	dssim::trace t;
	std::vector<uint64_t> rank;
};

stream make_stream(const bench_opts &o, uint64_t requests, uint64_t seed)
{
	char spec[256];
	double w = write_share(o.workload);
	if (o.zipf)
		snprintf(spec, sizeof(spec), "zipf:objects=%llu,alpha=%.17g,requests=%llu,seed=%llu",
			 static_cast<unsigned long long>(o.keys), o.theta,
			 static_cast<unsigned long long>(requests),
			 static_cast<unsigned long long>(seed));
	else
		snprintf(spec, sizeof(spec), "uniform:objects=%llu,requests=%llu,seed=%llu",
			 static_cast<unsigned long long>(o.keys),
			 static_cast<unsigned long long>(requests),
			 static_cast<unsigned long long>(seed));
	std::string s = spec;
	if (w > 0)
		s += ",write=" + std::to_string(w);
	stream st{ dssim::generate(s), {} };
	if (o.workload == 'd') {
		uint32_t n = st.t.nobjects();
		if (!o.zipf) {
			// uniform: every key is as likely; its value serves as rank
			st.rank.assign(st.t.keys.begin(), st.t.keys.end());
		} else {
			std::vector<uint64_t> freq(n);
			for (uint32_t id : st.t.ids)
				freq[id]++;
			std::vector<uint32_t> by(n);
			for (uint32_t i = 0; i < n; i++)
				by[i] = i;
			std::stable_sort(by.begin(), by.end(),
					 [&](uint32_t a, uint32_t b) { return freq[a] > freq[b]; });
			st.rank.resize(n);
			for (uint32_t r = 0; r < n; r++)
				st.rank[by[r]] = r;
		}
	}
	return st;
}

// The threads of one compute node.
struct node_run {
	const bench_opts &o;
	ds_btree *t;
	uint32_t value_size;
	uint32_t proc, nprocs;
	bool attribute;			// per-operation round trips
	std::atomic<uint64_t> inserted{ 0 };	// this process's new keys
	std::atomic<int> err{ 0 };
	std::atomic<bool> stop{ false };

	node_run(const bench_opts &opts, ds_btree *tree, uint32_t vs, uint32_t p, uint32_t np,
		 bool attr)
		: o(opts), t(tree), value_size(vs), proc(p), nprocs(np), attribute(attr)
	{
	}

	// the n-th key this process inserts: disjoint from every key in the
	// tree and from the other compute nodes' inserts
	uint64_t new_key(uint64_t n) const { return o.insert_base + n * nprocs + proc; }

	// D's read-latest: rank 0 is this process's newest insert, counting
	// back through its inserts and then the loaded keys
	uint64_t latest(uint64_t rank) const
	{
		uint64_t ins = inserted.load(std::memory_order_relaxed);
		if (rank < ins)
			return new_key(ins - 1 - rank);
		return o.keys - 1 - (rank - ins) % o.keys;
	}

	// verify yes: key i belongs to thread i % G of all G threads of the
	// run, and a thread updates only its own keys: the one of the drawn
	// key's block of G (parse_bench makes keys at least G)
	uint64_t owned(uint64_t drawn, uint32_t gid) const
	{
		uint64_t all = uint64_t{ nprocs } * o.threads;
		uint64_t k = drawn - drawn % all + gid;
		return k < o.keys ? k : k - all;
	}
};

// verify yes: what a thread wrote to one of its keys.  Its final value
// must be the last put acknowledged, or one of the puts after it that
// failed: those may have landed.
struct owned_put {
	uint64_t acked = 0;		// 0: none acknowledged (stamps never are)
	std::vector<uint64_t> unacked;
};

// The value of a verified update: the thread and its op number, with
// the top bit set so that no loaded value (the key itself) is one.
uint64_t stamp(uint32_t gid, uint64_t seq)
{
	return 1ULL << 63 | uint64_t{ gid } << 40 | (seq & ((1ULL << 40) - 1));
}

// A value as the report names it: "THREAD/OP" for a stamp, else hex.
std::string stamp_name(uint64_t v)
{
	if (!(v >> 63))
		return strprintf("0x%llx", static_cast<unsigned long long>(v));
	return strprintf("%llu/%llu", static_cast<unsigned long long>(v >> 40 & ((1ULL << 23) - 1)),
			 static_cast<unsigned long long>(v & ((1ULL << 40) - 1)));
}

struct worker_state {
	kind_result kinds[k_kinds];
	std::vector<uint8_t> val, scan_vals;
	std::vector<uint64_t> scan_keys;
	std::mt19937_64 rng;
	struct ds_btree_stats last{};
	uint32_t gid = 0;		// proc * threads + thread: over the run
	unsigned fail_streak = 0;	// failures in a row (tolerate yes)
	// bit n: a lookup completed in ms n after bench_opts.origin_ns
	std::vector<uint64_t> lookup_ms;
	std::unordered_map<uint64_t, owned_put> owned;	// verify yes
	uint64_t verified = 0, lost_acked = 0, unverified = 0;
	std::vector<lost_key> lost;	// the first few of lost_acked
};

void mark_lookup(const bench_opts &o, worker_state &ws, steady::time_point at)
{
	uint64_t ms = (steady_ns(at) - o.origin_ns) / 1000000;
	if (ms / 64 >= ws.lookup_ms.size())
		ws.lookup_ms.resize(ms / 64 + 1);
	ws.lookup_ms[ms / 64] |= 1ULL << (ms % 64);
}

// The floor through the harness do_op puts around an operation (a clock
// read on each side, a histogram entry), one dependent READ at a time:
// the total time of n of them.
int harnessed_floor(ds_btree *t, uint64_t n, uint64_t *total_ns)
{
	latency_hist lat;
	uint64_t ns;
	// untimed: the first call gathers the leaves it reads
	if (int ret = ds_btree_probe(t, 1, &ns))
		return ret;
	auto start = steady::now();

	for (uint64_t i = 0; i < n; i++) {
		auto t0 = steady::now();
		if (int ret = ds_btree_probe(t, 1, &ns))
			return ret;
		lat.add(ns_since(t0));
	}
	*total_ns = ns_since(start);
	return 0;
}

// The run's error: the first any thread met.
void first_error(node_run &nr, int err)
{
	int zero = 0;
	nr.err.compare_exchange_strong(zero, err);
}

// Write (and, with verify yes, note) an update of key to the value of op
// seq: a value the key never held before.
int update(node_run &nr, worker_state &ws, uint64_t key, uint64_t seq)
{
	uint64_t v = nr.o.verify ? stamp(ws.gid, seq) : seq ^ (key << 32);
	if (nr.value_size != 8)
		memset(ws.val.data(), static_cast<int>('a' + seq % 26), ws.val.size());
	if (nr.value_size == 8 || nr.o.verify)
		memcpy(ws.val.data(), &v, 8);
	int ret = put_k(nr.t, key, ws.val.data(), ws.val.size());
	if (nr.o.verify) {
		owned_put &p = ws.owned[key];
		if (ret < 0) {
			p.unacked.push_back(v);
		} else {
			p.acked = v;
			p.unacked.clear();
		}
	}
	return ret;
}

// One operation; false when it failed (an error other than a key not
// found): with tolerate yes it is counted, the thread pauses (1 ms,
// doubling with each failure in a row, up to 64 ms) and the caller draws
// the same request again; otherwise nr.err is set.  Its latency and,
// when attributed, its round trips go to the kind's record only when
// `record_it` (not during warm-up), and so do the lookups it completes
// to ws.lookup_ms.
bool do_op(node_run &nr, worker_state &ws, const stream &st, size_t r, uint64_t seq,
	   bool record_it)
{
	uint32_t id = st.t.ids[r];
	uint64_t key = st.t.keys[id];
	op_kind k = kind_for(nr.o.workload, st.t.is_write(r));
	size_t vlen = 0;
	int ret = 0;
	// when a lookup completed, if one did; a read's is its end, so that
	// it costs no clock read more than the floor's harness
	steady::time_point got{};
	bool read_done = false;
	auto t0 = steady::now();

	if (nr.o.verify && (k == k_update || k == k_rmw))
		key = nr.owned(key, ws.gid);
	switch (k) {
	case k_read:
		if (nr.o.workload == 'd')
			key = nr.latest(st.rank[id]);
		ret = get_k(nr.t, key, ws.val.data(), ws.val.size(), &vlen);
		read_done = ret >= 0 || ret == -ENOENT;
		break;
	case k_update:
		ret = update(nr, ws, key, seq);
		break;
	case k_insert: {
		key = nr.new_key(nr.inserted.fetch_add(1, std::memory_order_relaxed));
		size_t n = value_into(key, nr.value_size, ws.val.data());
		ret = put_k(nr.t, key, ws.val.data(), n);
		break;
	}
	case k_scan: {
		// YCSB E: scan lengths uniform in 1 .. 100
		size_t len = 1 + ws.rng() % 100, n = 0;
		ret = scan_k(nr.t, key, len, ws.scan_keys.data(), ws.scan_vals.data(), &n);
		break;
	}
	case k_rmw:
		ret = get_k(nr.t, key, ws.val.data(), ws.val.size(), &vlen);
		if (ret >= 0 || ret == -ENOENT)
			got = steady::now();
		if (!ret && nr.o.verify) {
			ret = update(nr, ws, key, seq);
		} else if (!ret) {
			ws.val[0]++;	// the modification: a byte of the value
			ret = put_k(nr.t, key, ws.val.data(),
					   std::min<size_t>(vlen, ws.val.size()));
		}
		break;
	default:
		break;
	}
	auto t1 = steady::now();
	uint64_t ns = static_cast<uint64_t>(
		std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
	if (read_done)
		got = t1;
	bool ok = ret >= 0 || ret == -ENOENT;
	if (!ok && !nr.o.tolerate) {
		first_error(nr, ret);
		return false;
	}
	ws.fail_streak = ok ? 0 : ws.fail_streak + 1;
	if (record_it) {
		kind_result &kr = ws.kinds[k];
		if (got != steady::time_point{})
			mark_lookup(nr.o, ws, got);
		if (ok) {
			kr.ops++;
			kr.not_found += ret == -ENOENT;
			kr.lat.add(ns);
		} else {
			kr.failed++;
		}
		if (nr.attribute) {
			// one thread on the handle: its counters moved for this op
			// only (a failed op's round trips are dropped)
			struct ds_btree_stats now{};
			ds_btree_stats_get(nr.t, &now);
			if (ok) {
				kr.rtt[0] += now.rtt_read - ws.last.rtt_read;
				kr.rtt[1] += now.rtt_lock - ws.last.rtt_lock;
				kr.rtt[2] += now.rtt_write - ws.last.rtt_write;
				kr.rtt[3] += now.rtt_other - ws.last.rtt_other;
				kr.bytes_read += now.bytes_read - ws.last.bytes_read;
			}
			ws.last = now;
		}
	}
	if (!ok)
		std::this_thread::sleep_for(
			std::chrono::milliseconds(1u << std::min(ws.fail_streak - 1, 6u)));
	return ok;
}

// verify yes, once every thread of the run has stopped: each key this
// thread put with an acknowledgement is read back (a read that fails is
// tried 10 times, 100 ms apart, with tolerate yes) and counted in
// lost_acked when its value is not one the thread may have left there.
void check_owned(node_run &nr, worker_state &ws)
{
	for (const auto &[key, p] : ws.owned) {
		if (!p.acked)
			continue;	// nothing acknowledged, nothing to lose
		size_t vlen = 0;
		int ret;
		for (int tries = 1;; tries++) {
			ret = get_k(nr.t, key, ws.val.data(), ws.val.size(), &vlen);
			if (ret >= 0 || ret == -ENOENT || !nr.o.tolerate || tries == 10)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
		if (ret < 0 && ret != -ENOENT) {
			if (!nr.o.tolerate) {
				first_error(nr, ret);
				return;
			}
			ws.unverified++;
			continue;
		}
		ws.verified++;
		uint64_t v = 0;
		if (!ret && vlen >= 8)
			memcpy(&v, ws.val.data(), 8);
		if (!ret && (v == p.acked ||
			     std::find(p.unacked.begin(), p.unacked.end(), v) != p.unacked.end()))
			continue;
		ws.lost_acked++;
		if (ws.lost.size() < lost_examples)
			ws.lost.push_back({ key, p.acked, ret ? 0 : v, p.unacked.size() });
	}
}

// All n bytes through read() or write(), past signals and short counts.
template <typename Byte, typename Op>
bool all_of_it(Op op, int fd, Byte *b, size_t n)
{
	while (n) {
		ssize_t done = op(fd, b, n);
		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			return false;
		b += done;
		n -= static_cast<size_t>(done);
	}
	return true;
}

bool write_all(int fd, const void *p, size_t n)
{
	return all_of_it(::write, fd, static_cast<const uint8_t *>(p), n);
}

bool read_all(int fd, void *p, size_t n)
{
	return all_of_it(::read, fd, static_cast<uint8_t *>(p), n);
}

// A compute node's failure, thrown so that its tree is closed on the way
// out (its client slot freed) before the message goes to the parent.
struct child_error {
	std::string what;
	int code;
};

void send_failure(int fd, const std::string &what, int err)
{
	proc_msg m;
	m.err = err ? err : -EIO;
	snprintf(m.text, sizeof(m.text), "%s", what.c_str());
	write_all(fd, &m, sizeof(m));
}

ds_btree_open_opts open_opts(const bench_opts &o)
{
	ds_btree_open_opts oo{};
	oo.cache_bytes = o.cache;
	oo.flags = o.no_cache ? DS_BTREE_NO_CACHE : 0;
	return oo;
}

// A compute node: open the tree through its node id, warm up its
// threads, say ready on out, wait for the go byte, run, send the result.
// Throws child_error.
void run_compute_node(const bench_opts &o, uint32_t proc, int out, int go)
{
	uint32_t node = o.nodes[proc];
	uint32_t nprocs = static_cast<uint32_t>(o.nodes.size());
	auto opened = dsmem::btree::open(node, o.tree, open_opts(o));
	if (!opened)
		throw child_error{ "cannot open " + through(o.tree, node) + ": " +
					   btree_error(opened.err(), node),
				   opened.err().code };
	dsmem::btree tree = std::move(opened).value();
	ds_btree *t = tree.get();
	auto described = tree.info();
	if (!described)
		throw child_error{ "cannot read the tree's superblock: " + described.err().what(),
				   described.err().code };
	struct ds_btree_info info = described.value();

	const unsigned T = o.threads;
	const uint64_t per_thread = o.seconds > 0 ? 0 : (o.ops + nprocs * T - 1) / (nprocs * T);
	// by default a tenth of the run warms up: of its ops, or of its time
	const bool warm_by_time = o.seconds > 0 && o.warmup == UINT64_MAX;
	const uint64_t warm = o.warmup != UINT64_MAX ? o.warmup : per_thread / 10;
	// time mode: a stream of a million requests per thread, cycled
	const uint64_t requests = o.seconds > 0 ? (1u << 20) : per_thread + warm;
	auto warm_time = std::chrono::duration<double>(o.seconds / 10);
	auto run_time = std::chrono::duration<double>(o.seconds);
	// with one thread per handle, the stats' deltas around an op are the
	// op's own; C has one kind, whose share is the total anyway
	node_run nr(o, t, info.value_size, proc, nprocs, T == 1 && o.workload != 'c');

	std::vector<stream> streams(T);
	std::vector<worker_state> ws(T);
	try {
		for (unsigned i = 0; i < T; i++) {
			streams[i] = make_stream(o, std::max<uint64_t>(requests, 1),
						 o.seed * 1000003 + proc * 1024 + i);
			ws[i].val.resize(std::max<uint32_t>(info.value_size, 8));
			ws[i].scan_keys.resize(100);
			ws[i].scan_vals.resize(100 * info.value_size);
			ws[i].rng.seed(o.seed * 7919 + proc * 1024 + i);
			ws[i].gid = proc * T + i;
		}
	} catch (const dssim::sim_error &x) {
		throw child_error{ x.what(), -EINVAL };
	}

	std::barrier warmed(T + 1), started(T + 1);
	steady::time_point deadline;
	std::vector<std::thread> th;
	for (unsigned i = 0; i < T; i++)
		th.emplace_back([&, i] {
			const stream &st = streams[i];
			worker_state &w = ws[i];
			size_t len = st.t.size(), r = 0;
			uint64_t seq = 0;
			// a request that failed (tolerate yes) is drawn again; in
			// ops mode every attempt takes one of the thread's ops
			auto step = [&](bool record_it) {
				if (do_op(nr, w, st, r, seq++, record_it))
					r = (r + 1) % len;
			};
			auto w_end = steady::now() + warm_time;
			if (warm_by_time)
				while (steady::now() < w_end && !nr.err)
					step(false);
			else
				for (uint64_t n = 0; n < warm && !nr.err; n++)
					step(false);
			warmed.arrive_and_wait();
			started.arrive_and_wait();
			if (nr.attribute)
				ds_btree_stats_get(t, &w.last);
			if (o.seconds > 0)
				while (!nr.err && steady::now() < deadline)
					step(true);
			else
				for (uint64_t n = 0; n < per_thread && !nr.err; n++)
					step(true);
		});

	warmed.arrive_and_wait();
	// the floor, just before the run and again just after it, so that
	// load on the host moves both sides of the ratio alike
	uint64_t probe_ns = 0, before_ns = 0;
	if (!proc)
		nr.err = harnessed_floor(t, o.probe, &before_ns);
	ds_btree_stats_reset(t);
	proc_msg ready;
	char gobyte;
	bool go_ok = write_all(out, &ready, sizeof(ready)) && read_all(go, &gobyte, 1);
	// no go (the parent gave up): the threads stop at their first op
	if (!go_ok)
		nr.err = -ECANCELED;
	auto t0 = steady::now();
	deadline = t0 + std::chrono::duration_cast<steady::duration>(run_time);
	started.arrive_and_wait();
	for (auto &x : th)
		x.join();
	uint64_t elapsed = ns_since(t0);
	if (!go_ok)
		throw child_error{ "not started", -ECANCELED };
	struct ds_btree_stats run_stats = tree.stats();	// the probe's are not the run's
	// the floor once more, from the first compute node as it stands after
	// the run: with the parent's reading before it, the floor brackets the
	// run, so load on the host moves both sides of the ratio alike.  A run
	// that tolerates failures goes without a floor when it fails.
	if (!proc && !nr.err) {
		int ret = harnessed_floor(t, o.probe, &probe_ns);
		if (ret < 0 && !o.tolerate)
			nr.err = ret;
		probe_ns = ret < 0 ? 0 : probe_ns + before_ns;
	}
	auto failed = [&](const char *what) {
		return child_error{ std::string(what) + " on node " + std::to_string(node) +
					    ": " + errno_text(nr.err),
				    nr.err };
	};
	if (nr.err)
		throw failed("operation failed");

	// keys are read back once no thread of any compute node still runs:
	// say stopped, wait for the parent's second go
	proc_msg stopped;
	if (!write_all(out, &stopped, sizeof(stopped)) || !read_all(go, &gobyte, 1))
		throw child_error{ "not checked", -ECANCELED };
	if (o.verify) {
		std::vector<std::thread> ck;
		for (unsigned i = 0; i < T; i++)
			ck.emplace_back([&, i] { check_owned(nr, ws[i]); });
		for (auto &x : ck)
			x.join();
		if (nr.err)
			throw failed("reading the keys back failed");
	}

	auto r = std::make_unique<proc_result>();
	r->node = node;
	r->elapsed_ns = elapsed;
	r->start_ns = steady_ns(t0) - o.origin_ns;
	r->end_ns = r->start_ns + elapsed;
	r->probe_ns = probe_ns;
	r->attributed = nr.attribute;
	std::vector<uint64_t> lookups;
	for (unsigned i = 0; i < T; i++) {
		for (unsigned k = 0; k < k_kinds; k++)
			r->kinds[k].merge(ws[i].kinds[k]);
		r->verified += ws[i].verified;
		r->lost_acked += ws[i].lost_acked;
		r->unverified += ws[i].unverified;
		for (const lost_key &l : ws[i].lost)
			if (r->nlost < lost_examples)
				r->lost[r->nlost++] = l;
		const std::vector<uint64_t> &b = ws[i].lookup_ms;
		lookups.resize(std::max(lookups.size(), b.size()));
		for (size_t j = 0; j < b.size(); j++)
			lookups[j] |= b[j];
	}
	r->lookup_words = lookups.size();
	r->stats = run_stats;
	if (auto after = tree.info()) {
		r->client_id = after.value().client_id;
		r->cache_bytes = after.value().cache_bytes;
		r->cache_entries = after.value().cache_entries;
	}
	proc_msg done;
	if (!write_all(out, &done, sizeof(done)) || !write_all(out, r.get(), sizeof(*r)) ||
	    !write_all(out, lookups.data(), lookups.size() * sizeof(uint64_t)))
		throw child_error{ "cannot send the results", -EPIPE };
}

bench_opts parse_bench(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "workload", "dist", "theta", "keys",
					 "ops", "time", "threads", "cache", "load", "warmup",
					 "probe", "seed", "key-len", "tolerate", "verify" });
	bench_opts o;
	for (const std::string &s : split_list(need(kw, "node", "btree"), ',')) {
		unsigned id;
		if (!parse_u32(s, id) || !id || id > DSMEM_NODE_ID_MAX)
			fail("node needs node ids from 1 to " + std::to_string(DSMEM_NODE_ID_MAX) +
			     ", separated by commas");
		if (std::find(o.nodes.begin(), o.nodes.end(), id) != o.nodes.end())
			fail("node " + s + " is given twice: each compute node needs a node id of its own");
		o.nodes.push_back(id);
	}
	if (o.nodes.size() > 64)
		fail("node takes at most 64 compute nodes");
	o.tree = tree_of(kw);
	if (const std::string *v = kw.get("key-len"))
		o.key_len_word = *v;
	const std::string &w = need(kw, "workload", "btree");
	if (w.size() != 1 || w[0] < 'a' || w[0] > 'f')
		fail("workload needs a YCSB workload: a, b, c, d, e or f");
	o.workload = w[0];
	o.zipf = !second_of(kw, "dist", "zipf", "uniform", !o.zipf);
	if (const std::string *v = kw.get("theta")) {
		char *end = nullptr;
		o.theta = strtod(v->c_str(), &end);
		if (!o.zipf)
			fail("theta is for dist zipf only");
		if (v->empty() || *end || !(o.theta > 0) || o.theta > 100)
			fail("theta needs a number above 0, such as 0.99");
	}
	o.keys = u64_arg(kw, "keys", o.keys, 1, (1ULL << 32) - 2);
	if (kw.has("ops") && kw.has("time"))
		fail("give ops or time, not both");
	o.ops = u64_arg(kw, "ops", o.ops, 1, 1ULL << 32);
	if (const std::string *v = kw.get("time")) {
		char *end = nullptr;
		o.seconds = strtod(v->c_str(), &end);
		if (v->empty() || *end || !(o.seconds > 0) || o.seconds > 86400)
			fail("time needs a number of seconds above 0, such as 10 or 2.5");
	}
	o.threads = threads_of(kw);
	if (const std::string *v = kw.get("cache")) {
		if (!parse_size(*v, o.cache))
			fail("cache needs a number of bytes (suffixes K, M, G, T); 0 for none");
		o.no_cache = o.cache == 0;
	}
	o.load = !second_of(kw, "load", "yes", "no", !o.load);
	if (kw.has("warmup"))
		o.warmup = u64_arg(kw, "warmup", 0, 0, 1ULL << 32);
	o.probe = u64_arg(kw, "probe", o.probe, 1, 1ULL << 32);
	o.seed = u64_arg(kw, "seed", o.seed, 0, UINT64_MAX);
	o.tolerate = !second_of(kw, "tolerate", "yes", "no", true);
	o.verify = !second_of(kw, "verify", "yes", "no", true);
	if (o.verify) {
		uint64_t all = o.nodes.size() * o.threads;
		if (o.workload != 'a' && o.workload != 'b' && o.workload != 'f')
			fail("verify is for workloads that update: a, b or f");
		if (o.keys < all)
			fail("verify gives each thread keys of its own: keys needs " +
			     std::to_string(all) + " at least (the threads of all compute nodes)");
	}
	return o;
}

record kind_record(const char *name, const kind_result &k, bool attributed)
{
	record r;
	r["kind"] = name;
	r["ops"] = k.ops;
	r["not_found"] = k.not_found;
	r["failed"] = k.failed;
	r["p50_us"] = k.lat.quantile_us(0.50);
	r["p99_us"] = k.lat.quantile_us(0.99);
	if (attributed) {
		uint64_t all = k.rtt[0] + k.rtt[1] + k.rtt[2] + k.rtt[3];
		r["rtt_per_op"] = ratio_record(all, k.ops);
		r["rtt_read_per_op"] = ratio_record(k.rtt[0], k.ops);
		r["rtt_lock_per_op"] = ratio_record(k.rtt[1], k.ops);
		r["rtt_write_per_op"] = ratio_record(k.rtt[2], k.ops);
		r["rtt_other_per_op"] = ratio_record(k.rtt[3], k.ops);
		r["bytes_read_per_op"] = ratio_record(k.bytes_read, k.ops);
	}
	return r;
}

// The longest run of ms in [from, to) whose bit in b is clear.
uint64_t longest_gap(const std::vector<uint64_t> &b, uint64_t from, uint64_t to)
{
	uint64_t best = 0, run = 0;
	for (uint64_t ms = from; ms < to; ms++) {
		bool hit = ms / 64 < b.size() && (b[ms / 64] >> (ms % 64) & 1);
		run = hit ? 0 : run + 1;
		best = std::max(best, run);
	}
	return best;
}

// The largest key in the tree at or above from, by bisection over
// one-entry scans (64 at most); false when there is none.
bool largest_key(ds_btree *t, uint64_t from, uint64_t *out)
{
	uint64_t k;
	auto first_from = [&](uint64_t start) {
		size_t n = 0;
		if (int ret = scan_k(t, start, 1, &k, nullptr, &n); ret < 0)
			fail("cannot scan the tree for its largest key: " + errno_text(ret));
		return n == 1;
	};
	if (!first_from(from))
		return false;
	uint64_t lo = k, hi = UINT64_MAX;	// lo is a key; none is above hi
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2 + 1;
		if (first_from(mid))
			lo = k;
		else
			hi = mid - 1;
	}
	*out = lo;
	return true;
}

}  // namespace

int bt_bench(env &e)
{
	bench_opts o = parse_bench(e);
	uint32_t nprocs = static_cast<uint32_t>(o.nodes.size());
	record r;
	r["tree"] = addr_string(o.tree);
	r["workload"] = std::string(1, o.workload);
	r["dist"] = o.zipf ? "zipf" : "uniform";
	r["theta"] = o.zipf ? record(o.theta) : record(nullptr);
	r["keys"] = o.keys;
	r["compute_nodes"] = nprocs;
	r["threads"] = o.threads;

	// Load through the first compute node, before any process runs: the
	// handle is closed again before the fork.  (The first compute node
	// measures the floor around the run.)
	double floor_rps = 0, floor_us = 0;
	{
		dsmem::btree t = open_tree(o.nodes[0], o.tree, open_opts(o));
		set_key_len(o.key_len_word.empty() ? nullptr : &o.key_len_word, t.key_max());
		r["key_len"] = key_len ? key_len : 8;
		if (o.load) {
			load_result l = load_keys(t.get(), o.keys, false, o.threads,
						  t.value_size());
			check_load(l);
			r["load_ops_per_sec"] = round_to(static_cast<double>(l.keys) / l.seconds, 1);
		} else {
			r["load_ops_per_sec"] = nullptr;
		}
		// inserts go above every key, those of earlier runs too, so
		// that they are inserts, not updates
		o.insert_base = o.keys;
		uint64_t top;
		if ((o.workload == 'd' || o.workload == 'e') &&
		    largest_key(t.get(), o.keys, &top)) {
			if (top > UINT64_MAX - (1ULL << 40))
				fail("the tree's keys reach " + std::to_string(top) +
				     ": no room above them for new keys");
			o.insert_base = top + 1;
		}
	}

	o.origin_ns = steady_ns(steady::now());
	fflush(stdout);
	fflush(stderr);
	int go[2];
	if (pipe(go))
		fail(std::string("cannot make a pipe: ") + strerror(errno));
	std::vector<int> outs;
	std::vector<pid_t> pids;
	for (uint32_t p = 0; p < nprocs; p++) {
		int fd[2];
		if (pipe(fd))
			fail(std::string("cannot make a pipe: ") + strerror(errno));
		pid_t pid = fork();
		if (pid < 0)
			fail(std::string("cannot fork: ") + strerror(errno));
		if (pid == 0) {
			close(fd[0]);
			close(go[1]);
			for (int x : outs)
				close(x);
			int rc = 0;
			try {
				run_compute_node(o, p, fd[1], go[0]);
			} catch (const child_error &x) {
				send_failure(fd[1], x.what, x.code);
				rc = 1;
			} catch (...) {
				send_failure(fd[1], "compute node " + std::to_string(o.nodes[p]) +
							    " failed",
					     -EIO);
				rc = 1;
			}
			// _exit: the parent's stdio buffers and atexit work are not ours
			_exit(rc);
		}
		close(fd[1]);
		outs.push_back(fd[0]);
		pids.push_back(pid);
	}
	close(go[0]);

	// a message from each: the first failure is the one reported
	std::string err;
	auto take_msg = [&](uint32_t p) {
		proc_msg m;
		if (!read_all(outs[p], &m, sizeof(m))) {
			if (err.empty())
				err = "compute node " + std::to_string(o.nodes[p]) + " died";
			return false;
		}
		if (m.err && err.empty())
			err = m.text;
		return m.err == 0;
	};
	// every compute node ready (warmed up, counters reset), then all go;
	// every one stopped, then all read their keys back (the same pipe)
	auto go_all = [&](const char *what) {
		for (uint32_t p = 0; p < nprocs; p++)
			take_msg(p);
		if (!err.empty())
			return;
		std::vector<char> bytes(nprocs, 'g');
		if (!write_all(go[1], bytes.data(), bytes.size()))
			err = std::string("cannot ") + what + " the compute nodes: " + strerror(errno);
	};
	go_all("start");
	if (err.empty())
		go_all("resume");
	close(go[1]);	// without the go bytes, the compute nodes give up
	auto res = std::make_unique<proc_result[]>(nprocs);
	std::vector<uint64_t> lookups;	// bitmap: ms with a lookup, any process
	for (uint32_t p = 0; p < nprocs && err.empty(); p++) {
		if (!take_msg(p))
			break;
		std::vector<uint64_t> b;
		if (read_all(outs[p], &res[p], sizeof(proc_result))) {
			b.resize(res[p].lookup_words);
			if (!read_all(outs[p], b.data(), b.size() * sizeof(uint64_t)))
				err = "compute node " + std::to_string(o.nodes[p]) + " died";
		} else {
			err = "compute node " + std::to_string(o.nodes[p]) + " died";
		}
		lookups.resize(std::max(lookups.size(), b.size()));
		for (size_t j = 0; j < b.size(); j++)
			lookups[j] |= b[j];
	}
	for (uint32_t p = 0; p < nprocs; p++) {
		close(outs[p]);
		waitpid(pids[p], nullptr, 0);
	}
	if (!err.empty())
		fail(err);

	// sums over the compute nodes; the run's time is the slowest node's
	kind_result kinds[k_kinds];
	latency_hist all;
	struct ds_btree_stats st{};
	uint64_t ops = 0, elapsed = 0, not_found = 0, failed = 0;
	uint64_t verified = 0, lost_acked = 0, unverified = 0;
	uint64_t start_ns = UINT64_MAX, end_ns = 0;
	record lost = record::array();	// examples of lost_acked
	bool attributed = true;
	record per_node = record::array();
	for (uint32_t p = 0; p < nprocs; p++) {
		const proc_result &pr = res[p];
		uint64_t n = 0, nfailed = 0;
		for (unsigned k = 0; k < k_kinds; k++) {
			const kind_result &b = pr.kinds[k];
			kinds[k].merge(b);
			all.merge(b.lat);
			n += b.ops;
			not_found += b.not_found;
			nfailed += b.failed;
		}
		failed += nfailed;
		verified += pr.verified;
		lost_acked += pr.lost_acked;
		unverified += pr.unverified;
		for (uint32_t i = 0; i < pr.nlost && i < lost_examples; i++) {
			const lost_key &l = pr.lost[i];
			record x;
			x["key"] = l.key;
			x["acked"] = stamp_name(l.acked);
			x["found"] = l.found ? record(stamp_name(l.found)) : record(nullptr);
			x["unacked"] = l.unacked;
			lost.push_back(x);
		}
		start_ns = std::min(start_ns, pr.start_ns);
		end_ns = std::max(end_ns, pr.end_ns);
		add_stats(st, pr.stats);
		ops += n;
		elapsed = std::max(elapsed, pr.elapsed_ns);
		attributed &= pr.attributed != 0;
		record nd;
		nd["node"] = pr.node;
		nd["client_id"] = pr.client_id;
		nd["ops"] = n;
		nd["failed"] = nfailed;
		nd["ops_per_sec"] = pr.elapsed_ns ? round_to(static_cast<double>(n) * 1e9 /
							   static_cast<double>(pr.elapsed_ns), 1)
						  : 0.0;
		nd["cache_entries"] = pr.cache_entries;
		nd["cache_bytes"] = pr.cache_bytes;
		per_node.push_back(nd);
	}
	// the floor: the first compute node's reads before and after the run
	if (res[0].probe_ns) {
		double ns = static_cast<double>(res[0].probe_ns);
		floor_rps = 2.0 * static_cast<double>(o.probe) * 1e9 / ns;
		floor_us = ns / 1000.0 / (2.0 * static_cast<double>(o.probe));
	}
	double secs = static_cast<double>(elapsed) / 1e9;
	double tput = secs > 0 ? static_cast<double>(ops) / secs : 0;
	r["ops"] = ops;
	r["seconds"] = round_to(secs, 4);
	r["ops_per_sec"] = round_to(tput, 1);
	r["p50_us"] = all.quantile_us(0.50);
	r["p99_us"] = all.quantile_us(0.99);
	r["rtt_per_op"] = ratio_record(rtt_total(st), ops);
	r["rtt_read_per_op"] = ratio_record(st.rtt_read, ops);
	r["rtt_lock_per_op"] = ratio_record(st.rtt_lock, ops);
	r["rtt_write_per_op"] = ratio_record(st.rtt_write, ops);
	r["rtt_other_per_op"] = ratio_record(st.rtt_other, ops);
	r["bytes_read_per_op"] = ratio_record(st.bytes_read, ops);
	r["bytes_written_per_op"] = ratio_record(st.bytes_written, ops);
	r["cache_hit_rate"] = ratio_record(st.cache_hits, st.cache_hits + st.cache_misses);
	r["lock_retries_per_op"] = ratio_record(st.lock_retries, ops);
	r["not_found"] = not_found;
	r["failed"] = failed;
	// verify yes: keys read back, acknowledged updates lost, keys that
	// could not be read back
	r["verified_keys"] = o.verify ? record(verified) : record(nullptr);
	r["lost_acked"] = o.verify ? record(lost_acked) : record(nullptr);
	r["unverified_keys"] = o.verify ? record(unverified) : record(nullptr);
	if (!lost.empty())
		r["lost"] = lost;
	// whole ms of the run, from the first compute node's start to the
	// last one's end; E looks up by scans only
	r["max_lookup_gap_ms"] = o.workload == 'e' ? record(nullptr) :
		record(longest_gap(lookups, (start_ns + 999999) / 1000000, end_ns / 1000000));
	r["floor_reads_per_sec"] = round_to(floor_rps, 1);
	r["floor_read_us"] = round_to(floor_us, 2);
	// per thread, so that with one thread it is the ratio
	r["ratio_vs_floor"] = floor_rps > 0 ? record(round_to(tput / (nprocs * o.threads) / floor_rps, 4))
					    : record(nullptr);
	record kr = record::array();
	for (unsigned k = 0; k < k_kinds; k++)
		if (kinds[k].ops || kinds[k].failed) {
			// a single kind's round trips are the totals
			bool only = kinds[k].ops == ops;
			kind_result one = kinds[k];
			if (only && !attributed) {
				one.rtt[0] = st.rtt_read;
				one.rtt[1] = st.rtt_lock;
				one.rtt[2] = st.rtt_write;
				one.rtt[3] = st.rtt_other;
				one.bytes_read = st.bytes_read;
			}
			kr.push_back(kind_record(kind_names[k], one, attributed || only));
		}
	r["kinds"] = kr;
	r["compute"] = per_node;
	r["counters"] = stats_record(st);
	e.out.begin_list();
	e.out.add(r);
	return 0;
}

}  // namespace dsctl::btree_cli
