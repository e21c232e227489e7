// SPDX-License-Identifier: BSD-2-Clause
// slope_worker: one end of a Slope migration, for the kernel selftests to
// drive (as root in a test guest, libdsuser linked statically).
//
//   slope_worker send --node N --dst M --kind KIND [--n COUNT] [--writer]
//                     [--rounds R] [--stop-pages P] [--sum-file PATH]
//   slope_worker recv --node M --kind KIND (--expect SUM | --sum-file PATH)
//                     [--timeout-ms T]
//   slope_worker constread --node N [--n COUNT]
//
// KIND is the object's type:
//   vector       slope::vector<int> of COUNT elements, 4 KiB pages
//   vector_huge  the same in a huge object (2 MiB units)
//   map          slope::map<int, slope::string>: COUNT keys, strings of 1
//                to 50 characters
//   umap         slope::unordered_map<uint64_t, uint64_t>: COUNT entries
//                (1000000 is fine)
//   selfptr      a type whose members point at each other and at its own
//                blocks: a vector, a cursor into it, a counter and a
//                pointer to it, a pointer to itself, a linked list of
//                COUNT nodes and the address of its last link
//   slab         slope::map<uint64_t, uint64_t> of COUNT entries whose
//                nodes come from a slab sub-allocator of the object's own
//                (slab_suballoc.hpp), installed by both ends: each checks
//                that the slab holds every page of the nodes
// COUNT defaults to 1000.  The receiver's KIND must be the sender's
// (vector and vector_huge are the same type): another type is refused.
//
// send builds the object on node N (under a context), then migrates it
// to node M and waits for the end.  With --writer a thread keeps writing
// into the object (no allocations) from before the migration starts until
// on_stop, which stops and joins it.  on_stop then computes the object's
// checksum -- the state that is handed over -- and prints it (and, with
// --sum-file, writes it there as "0x%016llx\n", atomically by rename)
// before it returns and the object is handed over: the file exists by the
// time the receiver can have the object.
//
// recv receives the next object of KIND on node M, computes its checksum
// and compares it with --expect (the sender's checksum= value) or with the
// content of --sum-file.  It then keeps using the object, allocating and
// freeing (a context on node M), checks what it did, waits until every
// page has arrived and destroys the object.
//
// The checksum is a walk of the contents, not of memory: elements in
// order for vector, map and the list, an order-independent sum of the
// entries for umap; for selfptr the walk also checks that every pointer
// points where it should (or fails: a broken pointer).
//
// Output on stdout, one key=value per line, in this order:
//   send: role node dst kind n build_ns object_pages object_runs
//         object_extents live_bytes [writes] [checksum] <stats> left
//         [intact]
//   recv: role node kind checksum expected verified modified
//         checksum_after <stats> freed
// where <stats> is the migration as the module reported it last:
//   mig_id mig_state mig_error peer pages unit_shift rounds sent_units
//   dirty_units pulled_units failed_units fault_waits prefill_ns stop_ns
//   no_owner_ns pull_ns total_ns first_round_ns
// mig_state is prefill, stopping, handed_over, done, failed or incoming;
// mig_error a negative errno or 0.  writes: the writer's (with --writer).
// checksum: printed by on_stop, so absent when the migration failed before
// asking to stop.  left=1: the sender's mig_ptr is empty after the
// migration.  intact: after a migration that failed with the object still
// here, 1 when the object checks out (a walk that finds every pointer
// right, and, if on_stop ran, the checksum it printed).  Checksums are
// 0x%016llx.
// A failure of the start (unknown node, say) prints no <stats>.
//
// constread builds an object on node N whose root holds a
// slope::vector<uint64_t> of COUNT elements (a block of pages of its
// own), tracks the writes to those pages (DSMEM_IOC_SLOPE_DIRTY on a
// descriptor of its own), and reads every element through
// mig_ptr::cget(), then writes one per page through mig_ptr::get():
//   constread: role node data_pages const_dirty mut_dirty
// const_dirty: pages the reads dirtied (0 is right); mut_dirty: the
// writes' (data_pages is right).
//
// Exit status: 0 success; 1 failure, with "Error: TEXT" on stderr (a
// failed or mismatched migration still prints what it has first); 2 a
// usage error.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include <fcntl.h>
#include <getopt.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dsmem.h>

#include <dsmem/slope.hpp>

#include "slab_suballoc.hpp"

namespace slope = dsmem::slope;

namespace {

struct args {
	bool send = false;
	uint32_t node = 0;
	uint32_t dst = 0;
	std::string kind;
	uint64_t n = 1000;
	bool writer = false;
	uint32_t rounds = 0;
	uint64_t stop_pages = 0;
	std::string sum_file;
	std::string expect;
	int timeout_ms = 60000;
};

// splitmix64's finalizer: contents and checksums from it.
uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t combine(uint64_t h, uint64_t v)
{
	return mix(h ^ v);
}

uint64_t ns_since(std::chrono::steady_clock::time_point t)
{
	return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
					     std::chrono::steady_clock::now() - t).count());
}

[[noreturn]] void die(const std::string &what)
{
	std::fflush(stdout);
	std::fprintf(stderr, "Error: %s\n", what.c_str());
	std::exit(1);
}

void check(bool ok, const char *what)
{
	if (!ok)
		throw std::runtime_error(what);
}

// ---- the kinds: build, write, checksum, grow ----

struct vector_kind {
	using type = slope::vector<int>;

	static int value(uint64_t i) { return static_cast<int>(mix(i) & 0x7fffffff); }

	static void build(type &v, uint64_t n)
	{
		for (uint64_t i = 0; i < n; i++)
			v.push_back(value(i));
	}

	static void touch(type &v, uint64_t step)
	{
		v[mix(step) % v.size()] = static_cast<int>(step & 0x7fffffff);
	}

	static uint64_t checksum(const type &v)
	{
		uint64_t h = v.size();
		for (int x : v)
			h = combine(h, static_cast<uint32_t>(x));
		return h;
	}

	static void grow(type &v)
	{
		const size_t old = v.size(), more = old / 2 + 1;
		for (size_t i = 0; i < more; i++)
			v.push_back(static_cast<int>(i));
		v.erase(v.begin());
		check(v.size() == old + more - 1, "vector: wrong size after growing");
		for (size_t i = 0; i < more; i++)
			check(v[old - 1 + i] == static_cast<int>(i), "vector: wrong element after growing");
		v.shrink_to_fit();
	}
};

struct map_kind {
	using type = slope::map<int, slope::string>;

	static int key(uint64_t i) { return static_cast<int>(i * 7); }

	static slope::string value(uint64_t i)
	{
		return slope::string(i % 50 + 1, static_cast<char>('a' + mix(i) % 26));
	}

	static void build(type &m, uint64_t n)
	{
		for (uint64_t i = 0; i < n; i++)
			m.emplace(key(i), value(i));
	}

	static void touch(type &m, uint64_t step)
	{
		auto it = m.find(key(mix(step) % m.size()));
		it->second[step % it->second.size()] = static_cast<char>('a' + step % 26);
	}

	static uint64_t checksum(const type &m)
	{
		uint64_t h = m.size();
		for (const auto &[k, s] : m) {
			h = combine(h, static_cast<uint32_t>(k));
			h = combine(h, s.size());
			for (char c : s)
				h = combine(h, static_cast<unsigned char>(c));
		}
		return h;
	}

	// new keys between the old ones, a third of the old ones erased
	static void grow(type &m)
	{
		const uint64_t n = m.size();
		uint64_t erased = 0;
		for (uint64_t i = 0; i < n / 2; i++)
			m.emplace(key(i) + 1, value(n + i));
		for (uint64_t i = 0; i < n; i += 3)
			erased += m.erase(key(i));
		check(m.size() == n + n / 2 - erased, "map: wrong size after growing");
		for (uint64_t i = 0; i < n / 2; i++) {
			auto it = m.find(key(i) + 1);
			check(it != m.end() && it->second == value(n + i), "map: a new key is wrong");
		}
	}
};

struct umap_kind {
	using type = slope::unordered_map<uint64_t, uint64_t>;

	static void build(type &u, uint64_t n)
	{
		for (uint64_t i = 0; i < n; i++)
			u.emplace(mix(i), i);
	}

	static void touch(type &u, uint64_t step)
	{
		u.find(mix(mix(step) % u.size()))->second++;
	}

	static uint64_t checksum(const type &u)
	{
		uint64_t h = 0;
		for (const auto &[k, v] : u)
			h += mix(k ^ mix(v));
		return combine(h, u.size());
	}

	static void grow(type &u)
	{
		const uint64_t n = u.size();
		for (uint64_t i = 0; i < n / 2; i++)
			u.emplace(mix(n + i), n + i);
		for (uint64_t i = 0; i < n; i += 4)
			u.erase(mix(i));
		check(u.size() == n + n / 2 - (n + 3) / 4, "umap: wrong size after growing");
		for (uint64_t i = 0; i < n / 2; i++) {
			auto it = u.find(mix(n + i));
			check(it != u.end() && it->second == n + i, "umap: a new entry is wrong");
		}
	}
};

// Pointers into itself and into its own blocks, all of which must still
// point where they did after the move.
struct selfref {
	struct node {
		node *next;
		uint64_t value;
	};

	slope::vector<uint64_t> data;
	size_t cursor_index = 0;
	uint64_t *cursor = nullptr;		// &data[cursor_index]
	uint64_t counter = 0;
	uint64_t *counter_ptr = &counter;
	selfref *self = this;
	node *head = nullptr;
	node **tail = &head;			// the last node's next, or head
	uint64_t nodes = 0;
	char label[32] = "selfref";
	char *label_end = label + std::strlen(label);

	selfref() = default;
	selfref(const selfref &) = delete;
	selfref &operator=(const selfref &) = delete;

	~selfref()
	{
		slope::Allocator<node> alloc;
		while (head) {
			node *next = head->next;
			alloc.deallocate(head, 1);
			head = next;
		}
	}

	void append(uint64_t v)
	{
		node *x = slope::Allocator<node>().allocate(1);
		*x = {nullptr, v};
		*tail = x;
		tail = &x->next;
		nodes++;
	}

	void push(uint64_t v)
	{
		data.push_back(v);
		cursor = &data[cursor_index];	// the block may have moved
	}
};

struct selfptr_kind {
	using type = selfref;

	static void build(type &o, uint64_t n)
	{
		for (uint64_t i = 0; i < n; i++) {
			o.push(mix(i));
			o.append(i);
		}
	}

	static void touch(type &o, uint64_t step)
	{
		++*o.counter_ptr;
		o.cursor_index = mix(step) % o.data.size();
		o.cursor = &o.data[o.cursor_index];
		*o.cursor = step;
	}

	static uint64_t checksum(const type &o)
	{
		check(o.self == &o, "selfptr: self no longer points at the object");
		check(o.counter_ptr == &o.counter, "selfptr: counter_ptr is broken");
		check(o.data.empty() ? !o.cursor : o.cursor == &o.data[o.cursor_index],
		      "selfptr: the cursor is broken");
		check(o.label_end == o.label + std::strlen(o.label), "selfptr: label_end is broken");

		uint64_t h = combine(o.counter, o.cursor_index);
		for (uint64_t x : o.data)
			h = combine(h, x);
		uint64_t count = 0;
		selfref::node *const *link = &o.head;
		for (const selfref::node *x = o.head; x; x = x->next) {
			h = combine(h, x->value);
			link = &x->next;
			count++;
		}
		check(count == o.nodes, "selfptr: the list lost nodes");
		check(link == o.tail, "selfptr: tail is not the last link");
		return combine(h, count);
	}

	static void grow(type &o)
	{
		const uint64_t n = o.nodes, c = o.counter;
		for (uint64_t i = 0; i < n / 2 + 1; i++) {
			o.push(i);
			o.append(n + i);
		}
		++*o.counter_ptr;
		check(o.counter == c + 1, "selfptr: counter_ptr writes elsewhere");
		check(o.nodes == n + n / 2 + 1 && o.data.size() == o.nodes, "selfptr: wrong size");
		checksum(o);	// every pointer still right
	}
};

struct slab_store {
	dsmem_test::slab sub;	// first: the map frees into it
	slope::map<uint64_t, uint64_t> m;
};

struct slab_kind {
	using type = slab_store;

	static void install(slope::mig_ptr<type> &obj)
	{
		if (auto r = obj.use(obj->sub); !r)
			throw std::runtime_error(r.err().what());
	}

	// every node in a page of the slab's, in the object
	static void placed(const slope::mig_ptr<type> &obj)
	{
		auto info = obj.info();
		check(info.ok(), "slab: describing the object failed");
		check(info->sub_pages == obj->sub.pages_held() && info->sub_pages > 0,
		      "slab: the object's sub pages are not the slab's");
		for (const auto &kv : obj->m) {
			ds_slope_obj *owner = nullptr;
			check(!ds_slope_obj_lookup(&kv, &owner) && owner == obj.handle(),
			      "slab: a node the inverse map does not give to the object");
		}
		check(obj->sub.blocks() == obj->m.size(), "slab: blocks and nodes differ");
	}

	static void build(type &o, uint64_t n)
	{
		for (uint64_t i = 0; i < n; i++)
			o.m.emplace(i, mix(i));
	}

	static void touch(type &o, uint64_t step)
	{
		o.m.find(mix(step) % o.m.size())->second = step;
	}

	static uint64_t checksum(const type &o)
	{
		uint64_t h = o.m.size();
		for (const auto &[k, v] : o.m)
			h = combine(combine(h, k), v);
		return h;
	}

	static void grow(type &o)
	{
		const uint64_t n = o.m.size();
		for (uint64_t i = n; i < n + n / 2 + 1; i++)
			o.m.emplace(i, mix(i));
		for (uint64_t i = 0; i < n; i += 3)
			o.m.erase(i);
		check(o.sub.blocks() == o.m.size(), "slab: blocks and nodes differ after growing");
	}
};

template <typename K>
void install(slope::mig_ptr<typename K::type> &obj)
{
	if constexpr (requires { K::install(obj); })
		K::install(obj);
}

template <typename K>
void placed(const slope::mig_ptr<typename K::type> &obj)
{
	if constexpr (requires { K::placed(obj); })
		K::placed(obj);
}

// ---- output ----

const char *state_name(uint32_t s)
{
	static const char *const names[] = {"prefill", "stopping", "handed_over",
					    "done", "failed", "incoming"};
	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

void print_stats(const slope::mig_stats &st)
{
	std::printf("mig_id=%" PRIu64 "\n", st.id);
	std::printf("mig_state=%s\n", state_name(st.state));
	std::printf("mig_error=%d\n", st.error);
	std::printf("peer=%u\n", st.peer);
	std::printf("pages=%" PRIu64 "\n", st.pages);
	std::printf("unit_shift=%u\n", st.unit_shift);
	std::printf("rounds=%u\n", st.rounds);
	std::printf("sent_units=%" PRIu64 "\n", st.sent_units);
	std::printf("dirty_units=%" PRIu64 "\n", st.dirty_units);
	std::printf("pulled_units=%" PRIu64 "\n", st.pulled_units);
	std::printf("failed_units=%" PRIu64 "\n", st.failed_units);
	std::printf("fault_waits=%" PRIu64 "\n", st.fault_waits);
	std::printf("prefill_ns=%" PRIu64 "\n", st.prefill_ns);
	std::printf("stop_ns=%" PRIu64 "\n", st.stop_ns);
	std::printf("no_owner_ns=%" PRIu64 "\n", st.no_owner_ns);
	std::printf("pull_ns=%" PRIu64 "\n", st.pull_ns);
	std::printf("total_ns=%" PRIu64 "\n", st.total_ns);
	std::printf("first_round_ns=%" PRIu64 "\n", st.first_round_ns);
}

void write_sum(const std::string &path, uint64_t sum)
{
	const std::string tmp = path + ".tmp";
	FILE *f = std::fopen(tmp.c_str(), "w");
	if (!f)
		die("cannot write " + tmp + ": " + std::strerror(errno));
	std::fprintf(f, "0x%016" PRIx64 "\n", sum);
	if (std::fclose(f) || std::rename(tmp.c_str(), path.c_str()))
		die("cannot write " + path + ": " + std::strerror(errno));
}

uint64_t parse_sum(const std::string &text, const std::string &from)
{
	char *end = nullptr;
	errno = 0;
	uint64_t v = std::strtoull(text.c_str(), &end, 0);
	if (errno || end == text.c_str() || (*end && *end != '\n'))
		die("no checksum in " + from + ": \"" + text + "\"");
	return v;
}

uint64_t read_sum(const std::string &path)
{
	char buf[64] = {};
	FILE *f = std::fopen(path.c_str(), "r");
	if (!f)
		die("cannot read " + path + ": " + std::strerror(errno));
	size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
	std::fclose(f);
	return parse_sum(std::string(buf, n), path);
}

slope::space open_space(uint32_t node)
{
	auto sp = slope::space::open(node);
	if (!sp)
		die(sp.err().what());
	return std::move(sp.value());
}

template <typename K>
void print_object(const slope::mig_ptr<typename K::type> &obj)
{
	auto info = obj.info();
	if (!info)
		die(info.err().what());
	std::printf("object_pages=%" PRIu64 "\n", info->pages);
	std::printf("object_runs=%u\n", info->runs);
	std::printf("object_extents=%u\n", info->extents);
	std::printf("live_bytes=%" PRIu64 "\n", info->live_bytes);
}

template <typename K>
int send(const args &a, bool huge)
{
	using T = typename K::type;
	slope::space sp = open_space(a.node);

	auto made = slope::mig_ptr<T>::make(slope::options{huge});
	if (!made)
		die(made.err().what());
	slope::mig_ptr<T> obj = std::move(made.value());
	T &o = *obj;
	install<K>(obj);
	const auto t0 = std::chrono::steady_clock::now();
	{
		auto ctx = obj.create_context();
		K::build(o, a.n);
	}
	placed<K>(obj);
	std::printf("build_ns=%" PRIu64 "\n", ns_since(t0));
	print_object<K>(obj);

	std::atomic<bool> stop{false};
	uint64_t writes = 0;
	std::thread writer;
	if (a.writer)
		writer = std::thread([&] {
			uint64_t step = 0;
			while (!stop.load(std::memory_order_relaxed))
				K::touch(o, step++);
			writes = step;
		});
	auto stop_writer = [&] {
		stop = true;
		if (writer.joinable()) {
			writer.join();
			std::printf("writes=%" PRIu64 "\n", writes);
		}
	};

	bool stopped = false;
	uint64_t sum = 0;
	slope::migrate_options mo;
	mo.max_rounds = a.rounds;
	mo.stop_pages = a.stop_pages;
	mo.on_stop = [&] {
		stop_writer();
		sum = K::checksum(o);
		std::printf("checksum=0x%016" PRIx64 "\n", sum);
		std::fflush(stdout);
		if (!a.sum_file.empty())
			write_sum(a.sum_file, sum);
		stopped = true;
	};

	auto mig = obj.migrate(a.dst, std::move(mo));
	if (!mig) {
		stop_writer();
		die(mig.err().what());
	}
	auto done = mig->wait();
	stop_writer();	// the migration failed before asking to stop
	auto last = mig->stats();
	if (last)
		print_stats(*last);
	std::printf("left=%d\n", !obj);
	if (!done) {
		// before the handover the object stays, as it was when it stopped
		if (obj) {
			const uint64_t now = K::checksum(o);
			std::printf("intact=%d\n", !stopped || now == sum);
		}
		die(done.err().what());
	}
	if (obj)
		die("the migration is done but the object is still here");
	return 0;
}

template <typename K>
int recv(const args &a)
{
	using T = typename K::type;
	slope::space sp = open_space(a.node);

	auto got = slope::receive<T>(a.timeout_ms);
	if (!got)
		die(got.err().what());
	slope::mig_ptr<T> obj = std::move(got.value());
	T &o = *obj;

	const uint64_t sum = K::checksum(o);
	const uint64_t expect = a.expect.empty() ? read_sum(a.sum_file) :
		parse_sum(a.expect, "--expect");
	std::printf("checksum=0x%016" PRIx64 "\n", sum);
	std::printf("expected=0x%016" PRIx64 "\n", expect);
	std::printf("verified=%d\n", sum == expect);
	std::fflush(stdout);

	install<K>(obj);	// not migrated: the receiver's own
	placed<K>(obj);
	{
		auto ctx = obj.create_context();
		K::grow(o);
	}
	placed<K>(obj);
	std::printf("modified=1\n");
	std::printf("checksum_after=0x%016" PRIx64 "\n", K::checksum(o));

	// the C call: its statistics come with a failure too
	slope::mig_stats st{};
	const int arrived = ds_slope_obj_incoming(obj.handle(), 1, &st);
	const std::string why = arrived ? ds_slope_errmsg() : "";
	print_stats(st);
	if (arrived)
		die(why);
	obj.reset();
	auto info = sp.info();
	std::printf("freed=%d\n", info && info->objects == 0);
	if (sum != expect)
		die("the object that arrived is not the one that left");
	return 0;
}

// ---- constread ----

struct holder {
	slope::vector<uint64_t> v;
};

uint64_t dirty_op(int fd, struct dsmem_ioc_slope_dirty &d)
{
	if (ioctl(fd, DSMEM_IOC_SLOPE_DIRTY, &d))
		die(std::string("DSMEM_IOC_SLOPE_DIRTY: ") + std::strerror(errno));
	return d.dirty;
}

int constread(const args &a)
{
	slope::space sp = open_space(a.node);
	auto made = slope::mig_ptr<holder>::make();
	if (!made)
		die(made.err().what());
	slope::mig_ptr<holder> obj = std::move(made.value());
	{
		auto ctx = obj.create_context();
		obj->v.assign(a.n, 1);
	}
	const uint64_t words = 4096 / sizeof(uint64_t);
	const uint64_t addr = reinterpret_cast<uint64_t>(obj->v.data());
	const uint64_t pages = a.n / words;	// whole pages of the block only
	check(addr % 4096 == 0 && pages >= 1, "constread: the data is no page-aligned block");

	int fd = open("/dev/" DSMEM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	struct dsmem_ioc_attach at = {};
	at.node_id = a.node;
	if (fd < 0 || ioctl(fd, DSMEM_IOC_ATTACH, &at))
		die(std::string("attaching a tracker: ") + std::strerror(errno));
	struct dsmem_slope_extent e = {addr, pages * 4096};
	struct dsmem_ioc_slope_dirty d = {};
	d.op = DSMEM_SLOPE_DIRTY_START;
	d.extents = reinterpret_cast<uint64_t>(&e);
	d.nr = 1;
	dirty_op(fd, d);
	const uint64_t id = d.id;
	auto collect = [&] {
		struct dsmem_ioc_slope_dirty c = {};
		c.op = DSMEM_SLOPE_DIRTY_COLLECT;
		c.id = id;
		return dirty_op(fd, c);
	};
	collect();	// the epoch of the START, whatever it saw

	uint64_t sum = 0;
	const holder &ro = obj.cref();
	for (uint64_t i = 0; i < pages * words; i++)
		sum += ro.v[i];
	const uint64_t const_dirty = collect();
	for (uint64_t p = 0; p < pages; p++)
		obj.get()->v[p * words] += 1;
	const uint64_t mut_dirty = collect();

	d = {};
	d.op = DSMEM_SLOPE_DIRTY_STOP;
	d.id = id;
	dirty_op(fd, d);
	close(fd);
	check(sum == pages * words, "constread: the reads saw other values");
	std::printf("data_pages=%" PRIu64 "\n", pages);
	std::printf("const_dirty=%" PRIu64 "\n", const_dirty);
	std::printf("mut_dirty=%" PRIu64 "\n", mut_dirty);
	return 0;
}

[[noreturn]] void usage(const char *why)
{
	std::fprintf(stderr,
		     "slope_worker: %s\n"
		     "usage: slope_worker send --node N --dst M --kind KIND [--n COUNT] [--writer]\n"
		     "                         [--rounds R] [--stop-pages P] [--sum-file PATH]\n"
		     "       slope_worker recv --node M --kind KIND (--expect SUM | --sum-file PATH)\n"
		     "                         [--timeout-ms T]\n"
		     "       slope_worker constread --node N [--n COUNT]\n"
		     "KIND: vector vector_huge map umap selfptr slab\n",
		     why);
	std::exit(2);
}

uint64_t number(const char *s, const char *name, uint64_t max)
{
	char *end = nullptr;
	errno = 0;
	unsigned long long v = std::strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max)
		usage((std::string("bad ") + name + ": " + s).c_str());
	return v;
}

args parse(int argc, char **argv)
{
	enum { o_node = 1, o_dst, o_kind, o_n, o_writer, o_rounds, o_stop, o_sum, o_expect,
	       o_timeout };
	static const struct option opts[] = {
		{"node", required_argument, nullptr, o_node},
		{"dst", required_argument, nullptr, o_dst},
		{"kind", required_argument, nullptr, o_kind},
		{"n", required_argument, nullptr, o_n},
		{"writer", no_argument, nullptr, o_writer},
		{"rounds", required_argument, nullptr, o_rounds},
		{"stop-pages", required_argument, nullptr, o_stop},
		{"sum-file", required_argument, nullptr, o_sum},
		{"expect", required_argument, nullptr, o_expect},
		{"timeout-ms", required_argument, nullptr, o_timeout},
		{nullptr, 0, nullptr, 0},
	};
	args a;

	if (argc < 2)
		usage("no command");
	const std::string cmd = argv[1];
	if (cmd != "send" && cmd != "recv" && cmd != "constread")
		usage(("unknown command " + cmd).c_str());
	a.send = cmd == "send";
	if (cmd == "constread")
		a.kind = "constread";
	optind = 2;
	for (int c; (c = getopt_long(argc, argv, "", opts, nullptr)) != -1;) {
		switch (c) {
		case o_node: a.node = static_cast<uint32_t>(number(optarg, "--node", UINT32_MAX)); break;
		case o_dst: a.dst = static_cast<uint32_t>(number(optarg, "--dst", UINT32_MAX)); break;
		case o_kind: a.kind = optarg; break;
		case o_n: a.n = number(optarg, "--n", 1ULL << 32); break;
		case o_writer: a.writer = true; break;
		case o_rounds: a.rounds = static_cast<uint32_t>(number(optarg, "--rounds", DS_SLOPE_ROUNDS_MAX)); break;
		case o_stop: a.stop_pages = number(optarg, "--stop-pages", UINT64_MAX); break;
		case o_sum: a.sum_file = optarg; break;
		case o_expect: a.expect = optarg; break;
		case o_timeout: a.timeout_ms = static_cast<int>(number(optarg, "--timeout-ms", INT32_MAX)); break;
		default: usage("unknown option");
		}
	}
	if (optind != argc)
		usage("stray arguments");
	if (!a.node || a.kind.empty())
		usage("--node and --kind are needed");
	if (a.kind == "constread")
		return a;
	if (a.kind != "vector" && a.kind != "vector_huge" && a.kind != "map" &&
	    a.kind != "umap" && a.kind != "selfptr" && a.kind != "slab")
		usage(("unknown kind " + a.kind).c_str());
	if (a.send && !a.dst)
		usage("send needs --dst");
	if (!a.send && a.expect.empty() == a.sum_file.empty())
		usage("recv needs --expect or --sum-file");
	if (!a.n)
		usage("--n must be at least 1");
	return a;
}

template <typename K>
int run(const args &a, bool huge = false)
{
	try {
		return a.send ? send<K>(a, huge) : recv<K>(a);
	} catch (const std::exception &e) {	// a check, or an allocation
		die(e.what());
	}
}

}  // namespace

int main(int argc, char **argv)
{
	const args a = parse(argc, argv);

	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	if (a.kind == "constread") {
		std::printf("role=constread\nnode=%u\n", a.node);
		try {
			return constread(a);
		} catch (const std::exception &e) {
			die(e.what());
		}
	}
	std::printf("role=%s\n", a.send ? "send" : "recv");
	std::printf("node=%u\n", a.node);
	if (a.send)
		std::printf("dst=%u\n", a.dst);
	std::printf("kind=%s\n", a.kind.c_str());
	if (a.send)
		std::printf("n=%" PRIu64 "\n", a.n);

	if (a.kind == "vector")
		return run<vector_kind>(a);
	if (a.kind == "vector_huge")
		return run<vector_kind>(a, true);
	if (a.kind == "map")
		return run<map_kind>(a);
	if (a.kind == "umap")
		return run<umap_kind>(a);
	if (a.kind == "slab")
		return run<slab_kind>(a);
	return run<selfptr_kind>(a);
}
