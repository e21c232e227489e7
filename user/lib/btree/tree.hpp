// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's compute-side state, shared by the files of user/lib/btree:
// sessions (one data-path handle per thread), the node allocator, the
// index cache, the local lock table and the client slot.
//
// Lock order, everywhere: a parent before its children, a left node before
// its right sibling.  A split unlocks the child before it locks the parent
// (B-link needs no more), so no thread waits for a lock above one it holds.
// Local locks (local_locks) are taken just before the remote lock of the
// same node and dropped just after it, so they follow the same order.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "layout.hpp"
#include "node_kind.hpp"

struct ds_xfer;

namespace dsmem::btree {

using clock = std::chrono::steady_clock;

// Counters of one session; relaxed atomics so stats() reads them live.
struct counters {
#define DS_BTREE_COUNTER(n) std::atomic<uint64_t> n{0};
#include "counters.def"
#undef DS_BTREE_COUNTER
};

class tree;

// One thread's data path: a /dev/dsmem handle, a registered buffer with
// room for the node images of the deepest operation (a merge holds a
// parent and two children, a split a new node too) and the atomics' words.
struct session {
	enum slot : unsigned { s_node0, s_node1, s_node2, s_node3, s_node4, s_nodes };

	tree *t = nullptr;
	ds_xfer *x = nullptr;
	uint32_t mr = 0;
	uint8_t *buf = nullptr;
	size_t buf_size = 0;
	counters st;

	~session();
	uint8_t *node(unsigned i) const;
	// Words after the nodes: 0..7 the single-copy paths' (see their
	// users), w_lock.. and w_unlock.. a replicated lock's and unlock's
	// per-member results, w_probe a failure probe's.
	// w_sink takes what a probe given up on still reads: nothing
	// looks at it.
	enum word_slot : unsigned { w_lock = 8, w_unlock = 11, w_probe = 14, w_tmp = 15,
				    w_sink = 16, w_joiners = 17, w_view = 18 /* .. 23 */ };
	uint64_t *word(unsigned i) const;
	// Replicated trees: buffers a bounded READ lands in before it is
	// copied out; one given up on stays the late transfer's, for good.
	static constexpr unsigned bounce_max = 4;
	// the members as the last batch was built against (a failure the
	// view has moved past since is not news)
	uint64_t view_at_run = 0, joining_at_run = 0;
	unsigned bounce_used = 0;
	uint32_t bounce_size = 0;
	uint8_t *bounce(unsigned i) const;
	uint8_t *blobs() const;			// room for a leaf's blobs
	uint64_t offset(const void *p) const
	{
		return static_cast<uint64_t>(static_cast<const uint8_t *>(p) - buf);
	}
};

// Work requests waited for together: one round trip.
class batch {
public:
	enum kind { k_read, k_lock, k_write, k_other };

	explicit batch(session &s) : s_(s) {}
	void read(uint64_t remote, void *local, uint64_t len);
	void write(uint64_t remote, const void *local, uint64_t len);
	void cas(uint64_t remote, uint64_t expect, uint64_t swap, uint64_t *old);
	void faa(uint64_t remote, uint64_t add, uint64_t *old);
	int run(kind k);
	// run, given up after timeout_ns: -ETIME (see xfer_run_until)
	int run_until(kind k, uint64_t timeout_ns);
	size_t size() const { return n_; }

private:
	static constexpr size_t max_ = 256;
	void add(uint8_t op, uint64_t remote, const void *local, uint64_t len,
		 uint64_t compare_add, uint64_t swap);
	session &s_;
	struct dsmem_xfer_req reqs_[max_];
	size_t n_ = 0;
	uint64_t bytes_read_ = 0, bytes_written_ = 0;
};

// Threads of this compute node wait here, not on the remote lock word, so
// the NIC sees one CAS per node at a time from this node.  Exact addresses
// (no hashing), so two locks never alias and the lock order holds.
class local_locks {
public:
	void lock(uint64_t addr);
	void unlock(uint64_t addr);

private:
	static constexpr unsigned shards_ = 64;
	// a handful of locks per shard at a time: a reserved vector, so
	// taking one never allocates
	struct shard {
		std::mutex m;
		std::condition_variable cv;
		std::vector<uint64_t> held;
		shard() { held.reserve(64); }
	};
	shard &of(uint64_t addr) { return shards_v_[(addr >> 6) % shards_]; }
	shard shards_v_[shards_];
};

// Internal nodes as last read, per level, keyed by their low fence.
// Bounded in bytes; second-chance FIFO eviction.  A pointer taken from it
// is only a hint: the node it leads to is checked like any other.  One
// per key format (N: the node view).
template <class N>
class index_cache {
public:
	using key = key_t<N>;
	using owned = owned_t<N>;
	struct hit {
		uint64_t child;		// the node below that covers the key
		uint64_t from;		// the cached node it came from
		unsigned level;		// the cached node's level
	};

	void configure(uint64_t limit, uint32_t node_size);
	bool lookup(key k, unsigned min_level, hit *h);
	void insert(const N &n, uint64_t addr);
	void invalidate(unsigned level, uint64_t addr);
	uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
	uint64_t limit() const { return limit_; }
	uint64_t entries() const;

private:
	struct item {
		uint64_t addr;
		std::unique_ptr<uint8_t[]> img;
		std::atomic<bool> referenced{false};
	};
	using level_map = std::map<owned, std::unique_ptr<item>, typename kind<N>::less>;

	void evict_locked();
	mutable std::shared_mutex m_;
	level_map levels_[height_max];
	std::deque<std::pair<unsigned, owned>> fifo_;	// (level, low)
	std::atomic<uint64_t> bytes_{0};
	uint64_t limit_ = cache_default;
	uint32_t node_size_ = DS_BTREE_NODE_DEFAULT;
};

class tree {
public:
	tree(uint32_t node_id, uint64_t addr) : node_id_(node_id), addr_(addr) {}
	~tree();

	// ---- set up (session.cpp) ----
	// sb_at: where to read the superblock (a replicated tree's copy on
	// another member of group 0 when the first is lost)
	int open(const ds_btree_open_opts &o, uint64_t sb_at);
	// from: 0, the tree's (through the view); else that address
	int load_superblock(session &s, superblock *sb, uint64_t from = 0);
	int open_members(const superblock &sb);
	int make_session(std::unique_ptr<session> *out);
	session *acquire(int *err);
	void release(session *s);
	void sum(ds_btree_stats *st);
	void reset_stats();
	int claim_slot(session &s);
	void heartbeat_loop();
	bool fenced() const { return fenced_.load(std::memory_order_relaxed); }

	// ---- node locks (session.cpp) ----
	// Lock the node and read its image into buf (one round trip).
	int lock_read(session &s, uint64_t addr, uint8_t *buf);
	// Write the image (but its lock word) and unlock, in one round trip;
	// first (a new node on the same memory node, whole) goes ahead of it.
	int write_unlock(session &s, uint64_t addr, uint8_t *buf, uint64_t first = 0,
			 const uint8_t *first_buf = nullptr);
	int unlock(session &s, uint64_t addr);
	// Several locked nodes' images in one batch, their locks kept; then
	// their unlocks in one more.  A killed process cannot stop a batch
	// once the ioctl has posted it, so a change of several nodes lands
	// whole or not at all.
	int write_images(session &s, std::initializer_list<std::pair<uint64_t, uint8_t *>> nodes);
	int unlock_all(session &s, std::initializer_list<uint64_t> addrs);
	int read_node(session &s, uint64_t addr, uint8_t *buf, batch::kind k = batch::k_read);

	// ---- memory (alloc.cpp) ----
	int alloc_node(session &s, unsigned level, bool is_root, uint64_t *addr);
	int alloc_blob(session &s, uint64_t *addr);
	void free_node(uint64_t addr);
	void free_blob(uint64_t addr);

	// ---- operations (tree.cpp) ----
	// N: the tree's node view (node_view: u64 keys; vnode_view: byte
	// strings); the C ABI checks it is the tree's before it calls.
	template <class N>
	int get(session &s, key_t<N> key, void *val, size_t len, size_t *vlen);
	template <class N>
	int put(session &s, key_t<N> key, const void *val, size_t len);
	template <class N>
	int del(session &s, key_t<N> key);
	template <class N>
	int scan(session &s, key_t<N> start, size_t limit, owned_t<N> *keys,
		 void *vals, size_t *n);
	int info(session &s, ds_btree_info *out);
	int probe(session &s, uint64_t n, uint64_t *ns);
	bool bytes_keys() const { return key_max_ != 0; }
	uint32_t key_max() const { return key_max_; }
	// An image read whole and fit to follow, in the tree's node format;
	// sealing one before it is written.
	bool image_ok(const uint8_t *buf) const;
	void seal_image(uint8_t *buf) const;

	// what an operation is allowed to assume of the tree
	uint32_t node_size() const { return node_size_; }
	uint32_t value_size() const { return value_size_; }
	bool inline_values() const { return value_size_ == 8; }
	uint32_t blob_size() const { return blob_slot(value_size_); }
	uint64_t sb(uint64_t off) const { return addr_ + off; }

	// ---- replicas (replica.cpp) ----
	// A replicated tree (R > 1) names a node by its logical address: the
	// address in member 0 of its group; member m holds it at the same
	// offset of its own segment.  Reads and locks go to the group's
	// primary, the first live member from g % R on (the primaries spread
	// over the memory nodes).  An R = 1 tree never takes these paths.
	bool replicated() const { return replicas_ > 1; }
	uint32_t replicas() const { return replicas_; }
	unsigned group_of(uint64_t a) const;
	uint64_t member_addr(uint64_t a, unsigned m) const
	{
		unsigned g = group_of(a);
		return members_[g][m].load(std::memory_order_relaxed) + (a - segs_[g]);
	}
	bool member_live(unsigned g, unsigned m) const
	{
		return !(view_.load(std::memory_order_relaxed) >> member_bit(g, m) & 1);
	}
	// a live member, or one a repair is filling: writes go to both
	bool member_writable(unsigned g, unsigned m) const
	{
		return member_live(g, m) ||
		       (joining_.load(std::memory_order_relaxed) >> member_bit(g, m) & 1);
	}
	uint64_t joining() const { return joining_.load(std::memory_order_relaxed); }
	uint64_t view_word() const { return view_.load(std::memory_order_relaxed); }
	uint64_t epoch() const { return view_epoch(view_.load(std::memory_order_relaxed)); }
	int primary_of(unsigned g) const;	// -1: no member left
	uint64_t probe_timeout_ns() const
	{
		return std::max<uint64_t>(4 * read_timeout_ns_, 1000000000ULL);
	}
	// Where a read of logical a goes now (a failing one, when none is
	// left, so that the read reports it).
	uint64_t primary_addr(uint64_t a) const
	{
		if (!replicated())
			return a;
		return member_addr(a, static_cast<unsigned>(std::max(primary_of(group_of(a)), 0)));
	}
	// After a batch failed with err: probe each live member alone and
	// exclude those that fail (never a group's last).  0: some were,
	// try again; err: the failure was not a member's.
	int fail_over(session &s, int err);
	// Merge what group 0 records of the members into this handle's
	// view: excluded members, and a repair's changes (acknowledged).
	int learn_view(session &s);
	// A segment for repairs; the background repair (repair_loop) uses
	// it when a member is excluded.
	int spare_add(session &s, uint64_t seg, uint64_t size);
	uint32_t spares() const { return spares_.load(std::memory_order_relaxed); }
	int members(session &s, ds_btree_member *out, size_t n, size_t *count);
	template <class N>
	int verify(session &s, ds_btree_verify_report *r);
	// len bytes at logical a, from the primary (another member when it
	// fails); a write of what nothing points to yet, to every member; a
	// CAS on every live member (res[m]: what each held; res_none for the
	// dead).
	int read_at(session &s, uint64_t a, void *dst, uint32_t len, batch::kind k);
	int write_new(session &s, uint64_t a, const void *src, uint32_t len);
	// timeout_ns (0: none) bounds each batch: a member that does not
	// answer is probed and excluded like one that failed
	int cas_all(session &s, uint64_t a, uint64_t expect, uint64_t swap, uint64_t *res,
		    uint64_t timeout_ns = 0);
	static constexpr uint64_t res_none = ~0ULL;	// no lock or slot word
	// The root word's change from word to next (*seen: what it was).
	// fresh: the new root node, written at view epoch epoch_then:
	// written again when a repair moved the view on since.
	int root_cas(session &s, uint64_t word, uint64_t next, uint64_t *seen,
		     uint64_t fresh = 0, const uint8_t *fresh_buf = nullptr,
		     uint64_t epoch_then = 0);

	// public for the C ABI
	uint32_t node_id_;
	uint64_t addr_;

private:
	friend struct session;
	// Where a traversal began: a cached node's pointer, or the root.
	struct origin {
		uint64_t from = 0;	// the cached node; 0: the root
		unsigned level = 0;
	};
	// The node at `level` covering key: its address, and its image in buf
	// when read_target (otherwise it may be unread).  -ERANGE when the
	// tree is not that tall.
	template <class N>
	int descend(session &s, key_t<N> key, unsigned level, uint8_t *buf,
		    uint64_t *addr, bool read_target, bool use_cache, origin *o);
	// The same, locked: the image in buf is the node's, under our lock.
	template <class N>
	int lock_for(session &s, key_t<N> key, unsigned level, uint8_t *buf,
		     uint64_t *addr);
	void drop_hint(session &s, const origin &o);
	// Forget a cached node (either format: addresses name it).
	void uncache(unsigned level, uint64_t addr);
	// The root's image in buf and its address; *word (may be NULL) gets
	// the root word as read, generation included, for a CAS on it.
	int root_image(session &s, uint8_t *buf, uint64_t *addr, bool refresh,
		       uint64_t *word);
	// What node n, read at a and expected at level, says of key: it holds
	// it, it lies right (move along the sibling), the pointer to n was
	// stale (begin again), or n is corrupt (its sibling is itself).
	enum class at { here, right, stale, corrupt };
	template <class N>
	at classify(const N &n, uint64_t a, key_t<N> key, unsigned level) const;
	// A node address inside one of the tree's segments' node areas; an
	// out-of-line value's likewise.
	bool valid_node_ptr(uint64_t a) const;
	bool valid_blob_ptr(uint64_t a) const;
	template <class N>
	int insert_separator(session &s, unsigned level, key_t<N> sep, uint64_t child);
	template <class N>
	int grow_root(session &s, uint64_t word, uint8_t *buf);
	template <class N>
	int split_and_write(session &s, uint64_t addr, uint8_t *buf,
			    key_t<N> key, uint64_t val, bool *existed);
	template <class N>
	int try_merge(session &s, unsigned level, key_t<N> key, bool again);
	template <class N>
	int collapse_root(session &s, uint64_t word);
	int read_value(session &s, uint64_t key, uint64_t ref, void *val,
		       size_t len, size_t *vlen);
	int write_blob(session &s, uint64_t key, const void *val, size_t len,
		       uint64_t *addr);
	bool restart(session &s, unsigned *n);
	// A wait for a lock: when its holder's slot was last polled, and the
	// slot's word as first seen unchanged.
	struct lock_wait {
		clock::time_point polled;
		uint64_t seen = 0;
		clock::time_point seen_at;
		uint64_t holder = 0;	// whose slot seen is (lock_r)
	};
	int steal_check(session &s, uint64_t holder, lock_wait *w);
	bool heartbeat_fresh() const;
	int await_heartbeat();
	// CAS our tag off the lock word, best effort (after a failed batch).
	void release_lock(session &s, uint64_t addr);
	// The replicated forms (replica.cpp): a lock word at lock_a on every
	// live member, with len bytes at read_a read from the primary; the
	// bytes written back to the backups first, then to the primary with
	// the unlocks; node images of a merge likewise.
	// wait false: -EBUSY rather than wait for a live holder; keep: the
	// wait's state across such calls, so a dead holder is still found
	int lock_r(session &s, uint64_t lock_a, uint64_t read_a, uint8_t *dst, uint32_t len,
		   bool image, bool wait = true, lock_wait *keep = nullptr);
	int write_unlock_r(session &s, uint64_t lock_a, uint64_t write_a, const uint8_t *src,
			   uint32_t len, uint64_t first, const uint8_t *first_buf);
	int unlock_r(session &s, uint64_t lock_a);
	int resync(session &s, uint64_t addr, uint8_t *buf);
	int write_images_r(session &s, std::initializer_list<std::pair<uint64_t, uint8_t *>> nodes);
	int exclude(session &s, uint64_t gone);
	int heartbeat_r(session &s, uint64_t next);
	int claim_r(session &s, uint32_t i, uint64_t expect, uint64_t mine, bool *won);
	int take_chunk_r(session &s, uint32_t g, uint64_t *off);
	// the repair: a spare in an excluded member's place, filled from
	// the others while the tree is in use (replica.cpp)
	void repair_loop();
	int repair(session &s);
	int repair_start(session &s, superblock &sb, unsigned *g, unsigned *m);
	int await_acks(session &s, uint64_t epoch);
	int fill(session &s, unsigned g, unsigned m);
	template <class N>
	int fill_nodes(session &s, unsigned g, unsigned m);
	int repair_commit(session &s, unsigned g, unsigned m);
	int install(session &s, uint64_t view, uint64_t joining, const superblock *sb);
	int ack(session &s);
	int name_spare(session &s, unsigned g, unsigned m, uint32_t i, uint64_t seg);
	int write_spare(session &s, uint64_t dst, const void *src, uint32_t len, unsigned g,
			unsigned m);
	int fill_superblock(session &s, uint64_t dst, unsigned m);
	int write_joiners(session &s, uint64_t a, uint64_t word);
	int view_cas(session &s, uint64_t off, uint64_t set, uint64_t clear, bool bump,
		     bool same_epoch = false);

	// the superblock's constants
	uint32_t layout_ = DS_BTREE_GENERAL;
	uint32_t node_size_ = DS_BTREE_NODE_DEFAULT;
	uint32_t value_size_ = 8;
	uint32_t key_max_ = 0;		// 0: u64 keys; else byte strings
	uint32_t nsegs_ = 0;
	uint64_t segs_[DS_BTREE_SEGS_MAX] = {};
	uint64_t seg_size_[DS_BTREE_SEGS_MAX] = {};
	uint32_t flags_ = 0;
	uint32_t lease_ms_ = lease_default_ms;
	uint32_t replicas_ = 1;
	uint64_t read_timeout_ns_ = 0;
	// a member's segment changes only while it is excluded (not read,
	// not written), by a repair
	std::atomic<uint64_t> members_[DS_BTREE_SEGS_MAX][DS_BTREE_REPLICAS_MAX] = {};
	// superblock::view as this handle knows it (excluded members, the
	// epoch of members_[]), and the members being filled.  Exclusions
	// only add bits; view_m_ orders this handle's changes (held across
	// round trips, by nothing that a peer's answer waits for)
	std::atomic<uint64_t> view_{0};
	std::atomic<uint64_t> joining_{0};
	std::atomic<uint32_t> spares_{0};
	// recursive: an exclusion can happen inside a repair's step
	std::recursive_mutex view_m_;
	lock_wait repair_wait_;		// the repair lock's, across tries
	std::mutex repair_m_;
	std::condition_variable repair_cv_;
	bool repair_stop_ = false;
	std::thread repair_thread_;

	// this client
	uint32_t slot_ = 0;
	uint64_t tag_ = 0;
	uint64_t slot_word_ = 0;	// as our last heartbeat left it
	std::atomic<clock::rep> last_beat_{0};	// when it landed
	std::atomic<bool> fenced_{false};
	std::atomic<uint64_t> root_hint_{0};
	// general layout: nodes carved since the last heartbeat, which adds
	// them to the superblock's count (a FAA per node would cost a round
	// trip per split)
	std::atomic<uint64_t> unflushed_nodes_{0};
	// held while a count taken from unflushed_nodes_ is on its way to
	// the superblock, and by info() over its reads of both: otherwise
	// info() may find the nodes in neither place
	std::mutex nodes_flush_m_;

	std::mutex sessions_m_;
	std::vector<std::unique_ptr<session>> sessions_;
	std::vector<session *> idle_;
	counters retired_;	// sessions' counters are never dropped

	std::mutex hb_m_;
	std::condition_variable hb_cv_;
	bool hb_stop_ = false;
	std::thread hb_thread_;

	// allocation: a chunk being carved, freed memory resting
	std::mutex alloc_m_;
	uint64_t chunk_next_ = 0, chunk_end_ = 0;
	uint32_t next_seg_ = 0;
public:
	struct freed {
		uint64_t addr;
		clock::time_point at;
	};
private:
	std::deque<freed> free_nodes_, free_blobs_;
	int take_chunk(session &s);
	int carve(session &s, uint64_t size, uint64_t *addr);
	int seed_alloc(session &s, unsigned region, uint64_t size, uint64_t *addr);

	index_cache<node_view> cache_;
	index_cache<vnode_view> vcache_;
	template <class N> index_cache<N> &cache();
	local_locks locks_;

	// probe(): the leaves it reads, gathered on its first call
	static constexpr size_t probe_leaves_max = 4096;
	std::mutex probe_m_;
	std::vector<uint64_t> probe_leaves_;
	std::atomic<uint64_t> probe_next_{0};
};

// RAII: a session for the length of one call.
class session_ref {
public:
	explicit session_ref(tree *t) : t_(t), s_(t->acquire(&err_)) {}
	~session_ref()
	{
		if (s_)
			t_->release(s_);
	}
	session *get() const { return s_; }
	int error() const { return err_ ? err_ : -ENOMEM; }
	session_ref(const session_ref &) = delete;
	session_ref &operator=(const session_ref &) = delete;

private:
	tree *t_;
	int err_ = 0;
	session *s_;
};

}  // namespace dsmem::btree

// The C ABI's opaque handle.
struct ds_btree {
	dsmem::btree::tree t;
	ds_btree(uint32_t node, uint64_t addr) : t(node, addr) {}
};
