// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's images in remote memory: superblock, segment headers,
// nodes and out-of-line values.  Pure functions over byte buffers, so the
// unit tests check them without a module.  All fields are little-endian
// (the hosts dsmem supports); a compute node checks every image it reads
// before it follows anything in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <linux/dsmem.h>

#include <dsmem/ds.h>

namespace dsmem::btree {

// ---- limits, in one place ----
inline constexpr uint64_t sb_magic = 0x3145455254425344ULL;	// "DSBTREE1"
inline constexpr uint64_t sb_creating = 0x2a45455254425344ULL;	// "DSBTREE*"
inline constexpr uint64_t sb_spare = 0x4552415053425344ULL;	// "DSBSPARE": a tree's spare
inline constexpr uint32_t format_version = 1;	// u64 keys: what 1.4 made
inline constexpr uint32_t format_features = 2;	// features says what more
inline constexpr uint32_t feature_bytes_keys = 1u << 0;	// DSBK nodes
inline constexpr uint32_t feature_replicas = 1u << 1;	// groups of members
inline constexpr uint32_t features_known = feature_bytes_keys | feature_replicas;
inline constexpr uint32_t node_magic = 0x4e425344;		// "DSBN"
inline constexpr uint32_t clients_max = 64;
inline constexpr uint64_t seg_hdr_off = 4096;		// each segment's header
inline constexpr uint64_t data_off = 64 << 10;		// nodes start here
inline constexpr uint64_t chunk_bytes = 256 << 10;	// general mode's unit
inline constexpr unsigned read_retries_max = 8;		// then -EIO
inline constexpr unsigned height_max = 16;
inline constexpr unsigned restarts_max = 1000;	// then -EAGAIN
inline constexpr uint64_t cache_default = 16 << 20;
inline constexpr uint32_t lease_default_ms = 1000;
inline constexpr uint32_t lease_min_ms = 20;
inline constexpr uint32_t lease_max_ms = 600000;	// fits a slot's 20 bits
inline constexpr uint32_t hop_max = 64;		// B-link moves in one search
inline constexpr uint32_t spares_max = 8;	// segments waiting for a repair
// replicated trees: a READ slower than this is given up (a member's probe
// is given four times as long, a second at least)
inline constexpr uint32_t read_timeout_default_ms = 250;
inline constexpr uint32_t read_timeout_max_ms = 60000;
// sessions put aside with every bounce buffer lost to late READs; beyond
// this many in use, reads go unbounded instead
inline constexpr size_t sessions_retired_max = 64;
inline constexpr uint32_t reuse_grace_ms = 2000;	// freed memory rests

// ---- superblock: segment 0, offset 0 ----
// A client's slot: one word, so that declaring its owner dead (a CAS of
// the word as last seen to 0) fails if the owner beat in between.
//   63        40 39          20 19         0
//  +------------+--------------+------------+
//  |   nonce    |  lease (ms)  |    beat    |   0: free
//  +------------+--------------+------------+
// The owner bumps `beat` with a CAS every lease / 4; a failed CAS means it
// was presumed dead, and it stops.  Its lock tag names the slot and the
// nonce, so a tag outlives neither.
struct client_slot {
	uint64_t word;
	uint64_t acked;		// replicated trees: the view epoch this
				// client writes by (see replica.cpp)
};

inline constexpr unsigned slot_nonce_shift = 40;
inline constexpr unsigned slot_lease_shift = 20;
inline constexpr uint64_t slot_beat_mask = (1ULL << slot_lease_shift) - 1;
inline constexpr uint64_t slot_nonce_mask = (1ULL << 24) - 1;

inline constexpr uint64_t slot_word(uint64_t nonce, uint32_t lease_ms, uint64_t beat)
{
	return (nonce & slot_nonce_mask) << slot_nonce_shift |
	       static_cast<uint64_t>(lease_ms) << slot_lease_shift | (beat & slot_beat_mask);
}
inline constexpr uint64_t slot_nonce(uint64_t word) { return word >> slot_nonce_shift; }
inline constexpr uint32_t slot_lease(uint64_t word)
{
	return static_cast<uint32_t>((word >> slot_lease_shift) & ((1u << 20) - 1));
}
inline constexpr uint64_t slot_beat(uint64_t word)
{
	return (word & ~slot_beat_mask) | ((word + 1) & slot_beat_mask);
}
// lock tag: slot + 1 in the top 16 bits, the nonce, and bit 0 set
inline constexpr uint64_t lock_tag(uint32_t slot, uint64_t nonce)
{
	return static_cast<uint64_t>(slot + 1) << 48 | (nonce & slot_nonce_mask) << 1 | 1;
}
inline constexpr uint32_t tag_slot(uint64_t tag) { return static_cast<uint32_t>(tag >> 48); }
inline constexpr uint64_t tag_nonce(uint64_t tag) { return (tag >> 1) & slot_nonce_mask; }

struct superblock {
	uint64_t magic;		// sb_magic; sb_creating while being made
	uint32_t format;
	uint32_t layout;	// enum ds_btree_layout
	uint32_t node_size;
	uint32_t value_size;	// 8: inline
	uint32_t nsegs;
	uint32_t features;	// format 2: feature_* bits; format 1: 0
	uint64_t root;		// the root node's address | generation (CAS)
	uint64_t node_ids;	// nodes allocated (FAA); seed placement
	uint32_t key_max;	// feature_bytes_keys: bytes of the longest key
	uint32_t reserved0;
	uint64_t reserved1;
	uint64_t segs[DS_BTREE_SEGS_MAX];
	uint64_t seg_size[DS_BTREE_SEGS_MAX];
	uint64_t reserved2[24];
	client_slot clients[clients_max];
	// feature_replicas (the superblock is then on every member of group
	// 0; segs[] names each group by its member 0):
	uint64_t view;		// excluded members (member_bit) | epoch, which
				// counts changes of members[] (view_epoch)
	uint64_t joining;	// members a repair is filling (member_bit)
	uint64_t root_lock;	// lock word over the root word's changes
	uint64_t repair_lock;	// held by the client repairing
	uint32_t replicas;
	uint32_t reserved3;
	uint64_t spares[spares_max];	// segments for repairs; 0: none
	uint64_t members[DS_BTREE_SEGS_MAX][DS_BTREE_REPLICAS_MAX];
};
static_assert(offsetof(superblock, root) == 32);
static_assert(offsetof(superblock, node_ids) == 40);
static_assert(offsetof(superblock, key_max) == 48);
static_assert(offsetof(superblock, segs) == 64);
static_assert(offsetof(superblock, clients) == 512);
static_assert(offsetof(superblock, view) == 1536);
static_assert(offsetof(superblock, joining) == 1544);
static_assert(sizeof(superblock) <= seg_hdr_off);

inline constexpr uint64_t sb_off_root = offsetof(superblock, root);
inline constexpr uint64_t sb_off_view = offsetof(superblock, view);
inline constexpr uint64_t sb_off_joining = offsetof(superblock, joining);
inline constexpr uint64_t sb_off_root_lock = offsetof(superblock, root_lock);
inline constexpr uint64_t sb_off_repair_lock = offsetof(superblock, repair_lock);
inline constexpr uint64_t sb_off_spares = offsetof(superblock, spares);
inline constexpr uint64_t sb_off_members = offsetof(superblock, members);
inline constexpr uint64_t members_mask = (1ULL << (DS_BTREE_SEGS_MAX * DS_BTREE_REPLICAS_MAX)) - 1;
inline constexpr unsigned view_epoch_shift = 48;
inline constexpr uint64_t view_epoch(uint64_t view) { return view >> view_epoch_shift; }
inline constexpr uint64_t view_dead(uint64_t view) { return view & members_mask; }
inline constexpr unsigned member_bit(unsigned group, unsigned m)
{
	return group * DS_BTREE_REPLICAS_MAX + m;
}
static_assert(DS_BTREE_SEGS_MAX * DS_BTREE_REPLICAS_MAX <= 64);

// Nodes are 64-byte aligned, so the root word's low bits count the root's
// changes: a CAS from a root read before a grow and a collapse back to
// the same node fails (ABA).
inline constexpr uint64_t root_gen_mask = 63;
inline constexpr uint64_t root_addr(uint64_t word) { return word & ~root_gen_mask; }
inline constexpr uint64_t root_next(uint64_t word, uint64_t addr)
{
	return addr | ((word + 1) & root_gen_mask);
}
inline constexpr uint64_t sb_off_node_ids = offsetof(superblock, node_ids);
inline constexpr uint64_t client_slot_off(uint32_t i)
{
	return offsetof(superblock, clients) + i * sizeof(client_slot);
}
inline constexpr uint64_t client_acked_off(uint32_t i)
{
	return client_slot_off(i) + offsetof(client_slot, acked);
}

// ---- every segment's header, at seg_hdr_off ----
enum seed_region : unsigned {
	region_root,		// 0x000000, 64 KiB
	region_l1,		// 0x010000, 64 KiB
	region_l2,		// 0x020000, 128 KiB
	region_l3,		// 0x040000, 1.75 MiB
	region_leaf,		// 0x200000, 14 MiB
	region_count
};

struct seg_header {
	uint64_t cursor;			// general: bytes handed out (FAA;
						// replicated: under cursor_lock)
	uint64_t region_cursor[region_count];	// seed: per sub-region (FAA)
	uint64_t cursor_lock;			// replicated trees
};
inline constexpr uint64_t seg_off_cursor = seg_hdr_off + offsetof(seg_header, cursor);
inline constexpr uint64_t seg_off_cursor_lock = seg_hdr_off + offsetof(seg_header, cursor_lock);
inline constexpr uint64_t seg_off_region(unsigned r)
{
	return seg_hdr_off + offsetof(seg_header, region_cursor) + r * 8;
}

// Seed 000's per-server layout, relative to data_off.
inline constexpr uint64_t seed_region_off[region_count] = {
	0x000000, 0x010000, 0x020000, 0x040000, 0x200000};
inline constexpr uint64_t seed_region_size[region_count] = {
	0x10000, 0x10000, 0x20000, 0x1c0000, 0xe00000};
inline constexpr uint64_t seed_server_bytes = 0x1000000;	// 16 MiB

// The sub-region a node of this level goes to, counted from the leaves
// (the seed counts from the root, which moves as the tree grows): leaves,
// then their parents in "level 3+", and so on up to the root region.
unsigned seed_region_for(unsigned level, bool is_root);

// ---- nodes ----
// flags
inline constexpr uint8_t node_free = 0x01;	// merged away; never follow
inline constexpr uint8_t node_low_inf = 0x02;	// no low fence
inline constexpr uint8_t node_high_inf = 0x04;	// no high fence

struct node_header {
	uint64_t lock;		// the lock word: 0 or the holder's tag (not
				// covered by the checksum)
	uint64_t sum;		// XXH64 from sum_from to the last entry in use
	uint64_t version;	// bumped by every write of the node
	uint8_t level;		// 0: leaf
	uint8_t flags;
	uint16_t count;		// entries in use
	uint32_t magic;		// node_magic
	uint64_t low;		// keys >= low (unless node_low_inf)
	uint64_t high;		// keys < high (unless node_high_inf)
	uint64_t sibling;	// right sibling's global address; 0: none
	uint64_t leftmost;	// internal: child for keys below entry 0
};
static_assert(sizeof(node_header) == 64);
inline constexpr uint64_t sum_from = offsetof(node_header, version);
inline constexpr uint64_t node_off_lock = 0;

struct entry {
	uint64_t key;
	uint64_t val;		// leaf: the value, or its blob's address;
				// internal: the child for keys >= key
};

inline constexpr uint32_t node_capacity(uint32_t node_size)
{
	return (node_size - sizeof(node_header)) / sizeof(entry);
}

// A node image in a local buffer of node_size bytes.
class node_view {
public:
	node_view(void *buf, uint32_t size) : p_(static_cast<uint8_t *>(buf)), size_(size) {}

	node_header &hdr() const { return *reinterpret_cast<node_header *>(p_); }
	entry *entries() const { return reinterpret_cast<entry *>(p_ + sizeof(node_header)); }
	uint32_t capacity() const { return node_capacity(size_); }
	uint32_t size() const { return size_; }
	uint8_t *data() const { return p_; }
	bool leaf() const { return hdr().level == 0; }
	bool covers(uint64_t key) const;	// low <= key < high
	bool right_of(uint64_t key) const;	// key >= high: go to the sibling
	// Leaf: index of key, or -1.  Internal: the child for key.
	int find(uint64_t key) const;
	uint64_t child_for(uint64_t key) const;
	// First index with entries()[i].key >= key (count when none).
	uint32_t lower_bound(uint64_t key) const;
	// Internal: the child slot covering key (0: leftmost, i + 1: entry
	// i) and the child in a slot.
	uint32_t child_slot(uint64_t key) const;
	uint64_t child_at(uint32_t slot) const
	{
		return slot ? entries()[slot - 1].val : hdr().leftmost;
	}
	// What the tree code reads without knowing the key format (the
	// byte-string node, layout_var.hpp, answers the same).
	uint32_t count() const { return hdr().count; }
	uint64_t key_at(uint32_t i) const { return entries()[i].key; }
	uint64_t val_at(uint32_t i) const { return entries()[i].val; }
	uint64_t low() const { return hdr().low; }
	uint64_t high() const { return hdr().high; }
	// Fewer than a quarter of the entries: worth a merge.
	bool underfull() const { return count() < capacity() / 4; }
	// This node and its right sibling (sep between them in the parent)
	// would fit in half a node.
	bool merge_fits(const node_view &right, uint64_t sep) const
	{
		(void)sep;
		return count() + right.count() + (leaf() ? 0u : 1u) <= capacity() / 2;
	}
	// Internal: give separator i a new key (the child stays); false
	// when it does not fit (never, with fixed-size keys).
	bool set_separator(uint32_t i, uint64_t key) const
	{
		entries()[i].key = key;
		return true;
	}

	// Set checksum and magic before the image is written.
	void seal() const;
	// An image fit to follow: magic, checksum, count, level and fences
	// consistent.  What is wrong goes into *why (a static string).
	bool check(const char **why = nullptr) const;

	// Start a fresh node: level, fences, no entries.
	void init(uint8_t level, bool low_inf, uint64_t low, bool high_inf,
		  uint64_t high) const;
	// Leaf: insert or replace; false when full (and key is new).
	bool leaf_upsert(uint64_t key, uint64_t val, bool *existed) const;
	bool leaf_remove(uint64_t key) const;
	// Internal: insert the separator key with its right child; false when full.
	bool internal_insert(uint64_t key, uint64_t child) const;
	// Internal: remove the separator at index i (and the child right of it).
	void internal_remove_at(uint32_t i) const;

	// Split into an empty right node `right` (a buffer of the same size):
	// the upper half moves; both get fences; right inherits the sibling.
	// Returns the separator: the right node's low key.  The caller sets
	// this node's sibling to the right node's address.
	uint64_t split_into(const node_view &right) const;
	// Move every entry of `right` (this node's right sibling, same parent)
	// into this node; this node takes right's high fence and sibling.
	// For internal nodes, sep is the parent's separator between them.
	bool absorb(const node_view &right, uint64_t sep) const;
	// Even out the entries of this node and its right sibling; returns the
	// new separator (right's new low).  sep as for absorb.
	uint64_t balance_with(const node_view &right, uint64_t sep) const;

private:
	uint8_t *p_;
	uint32_t size_;
};

// ---- out-of-line values: a blob per value, never written in place ----
struct blob_header {
	uint64_t key;		// whose value it is: checked by readers
	uint32_t len;
	uint32_t sum;		// XXH64 of the bytes, seeded by key and len
};
static_assert(sizeof(blob_header) == 16);
inline constexpr uint32_t blob_slot(uint32_t value_size)
{
	return (sizeof(blob_header) + value_size + 63) & ~63u;
}
void blob_seal(void *buf, uint64_t key, const void *val, uint32_t len);
// The value's bytes when the blob is whole, key's and at most value_size
// long; nullptr otherwise.
const uint8_t *blob_check(const void *buf, uint32_t value_size, uint64_t key, uint32_t *len);

uint64_t checksum(const void *p, size_t n);

// Global addresses: a segment's address plus an offset within it.
inline uint64_t gaddr_seg(uint64_t a) { return a & ~DSMEM_GADDR_OFF_MASK; }
inline uint64_t gaddr_off(uint64_t a) { return DSMEM_GADDR_OFF(a); }

}  // namespace dsmem::btree
