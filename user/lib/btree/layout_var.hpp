// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's node image for variable-length byte-string keys ("DSBK"),
// the sibling of layout.hpp's u64-key node ("DSBN").  Pure functions over
// a byte buffer, as there.
//
// Every key is stored inline, so one READ of a leaf answers a lookup of
// any key up to the tree's key_max.  A node is node_size bytes:
//
//   0      64                64 + 16 * count      heap_top          size
//   +------+-------------------+--------------------+-----------------+
//   |header| slots, sorted     |   free (zeroes)    | heap: key bytes |
//   +------+-------------------+--------------------+-----------------+
//
// The header shares its lock, sum, version, level, flags, count, magic,
// sibling and leftmost fields with node_header (same offsets, same
// meaning), so the lock, sibling and free-flag code serves both kinds.
// Its bytes 32..47, node_header's low and high, are the heap's directory
// here.  The heap holds, from the end of the node down: the node prefix
// (the fences' longest common prefix when both are finite, else empty),
// the fences' bytes after it, then every key's bytes after it.  A slot
// carries the first 4 of those bytes as a big-endian integer, so a binary
// search compares integers and reads the heap only on a tie.
//
// Edits decode the node, change it and lay it out afresh (so the heap is
// always compact); lookups work on the image in place and allocate
// nothing.  All fields are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "layout.hpp"

namespace dsmem::btree {

// ---- limits, in one place ----
inline constexpr uint32_t vnode_magic = 0x4b425344;		// "DSBK"
inline constexpr uint32_t vkey_len_max = 255;		// a slot's u8 length
inline constexpr uint32_t vnode_size_min = DS_BTREE_NODE_MIN;
inline constexpr uint32_t vnode_size_max = DS_BTREE_NODE_MAX;	// u16 offsets
inline constexpr uint32_t vnode_min_entries = 4;	// worst case, per node
inline constexpr uint32_t vhead_bytes = 4;		// a slot's head
inline constexpr uint64_t vchild_align = 64;		// nodes are 64-byte aligned

// A key: bytes compared as unsigned, memcmp over the common length, then
// the shorter first.  Two words, passed by value; it owns nothing.
struct kref {
	const uint8_t *p = nullptr;
	uint32_t len = 0;

	constexpr kref() = default;
	constexpr kref(const uint8_t *bytes, uint32_t n) : p(bytes), len(n) {}
	kref(std::string_view s)
		: p(reinterpret_cast<const uint8_t *>(s.data())), len(static_cast<uint32_t>(s.size()))
	{
	}
	kref(const std::string &s) : kref(std::string_view(s)) {}
	kref(const char *s) : kref(std::string_view(s)) {}	// up to its NUL

	std::string_view sv() const
	{
		return {reinterpret_cast<const char *>(p), len};
	}
	std::string str() const { return std::string(sv()); }
	// the bytes from off on (off <= len)
	kref from(uint32_t off) const { return {p + off, len - off}; }
	kref first(uint32_t n) const { return {p, n}; }
};

// memcmp that takes empty (and null) ranges
inline int kbytes_cmp(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	return n ? std::memcmp(a, b, n) : 0;
}

// <0, 0, >0 as a sorts before, with or after b
inline int kcmp(kref a, kref b)
{
	int c = kbytes_cmp(a.p, b.p, a.len < b.len ? a.len : b.len);

	if (c)
		return c;
	return a.len < b.len ? -1 : a.len > b.len;
}

// the same bytes (std::string on either side converts; != follows)
inline bool operator==(kref a, kref b)
{
	return a.len == b.len && !kbytes_cmp(a.p, b.p, a.len);
}

// The first vhead_bytes of s, big-endian and zero padded: heads that
// differ order their strings as the strings themselves would.
inline uint32_t vhead(kref s)
{
	uint32_t h = 0;

	for (uint32_t i = 0; i < vhead_bytes; i++)
		h = h << 8 | (i < s.len ? s.p[i] : 0);
	return h;
}

// The header; the fields up to magic and from sibling on are node_header's.
struct vnode_header {
	uint64_t lock;		// as node_header (not checksummed)
	uint64_t sum;		// XXH64, see vnode_view::seal
	uint64_t version;
	uint8_t level;		// 0: leaf
	uint8_t flags;		// node_free, node_low_inf, node_high_inf
	uint16_t count;		// slots in use
	uint32_t magic;		// vnode_magic
	uint8_t prefix_len;	// the node prefix: [size - prefix_len, size)
	uint8_t key_max;	// the tree's: no key or fence is longer
	uint16_t heap_top;	// the heap is [heap_top, size)
	uint16_t low_off;	// low fence's bytes after the prefix (finite)
	uint8_t low_len;
	uint8_t reserved0;	// 0
	uint16_t high_off;	// high fence's bytes after the prefix (finite)
	uint8_t high_len;
	uint8_t reserved1[5];	// 0
	uint64_t sibling;
	uint64_t leftmost;
};
static_assert(sizeof(vnode_header) == sizeof(node_header));
static_assert(offsetof(vnode_header, sum) == offsetof(node_header, sum));
static_assert(offsetof(vnode_header, version) == sum_from);
static_assert(offsetof(vnode_header, level) == offsetof(node_header, level));
static_assert(offsetof(vnode_header, flags) == offsetof(node_header, flags));
static_assert(offsetof(vnode_header, count) == offsetof(node_header, count));
static_assert(offsetof(vnode_header, magic) == offsetof(node_header, magic));
static_assert(offsetof(vnode_header, prefix_len) == 32);
static_assert(offsetof(vnode_header, sibling) == offsetof(node_header, sibling));
static_assert(offsetof(vnode_header, leftmost) == offsetof(node_header, leftmost));

struct vslot {
	uint64_t val;		// leaf: the value or its blob; internal: the
				// child for keys >= this key
	uint16_t off;		// the key's bytes after the prefix, in the heap
	uint8_t len;
	uint8_t flags;		// 0
	uint32_t head;		// vhead() of those bytes
};
static_assert(sizeof(vslot) == 16);

inline constexpr uint32_t vnode_slots_max(uint32_t node_size)
{
	return (node_size - sizeof(vnode_header)) / sizeof(vslot);
}

// Bytes of the worst node of a tree: both fences key_max bytes long with
// no common prefix, and `entries` keys of key_max bytes.
inline constexpr uint32_t vnode_worst_bytes(uint32_t key_max, uint32_t entries)
{
	return sizeof(vnode_header) + 2 * key_max + entries * (sizeof(vslot) + key_max);
}

// A tree of this node size may take keys of up to key_max bytes: its
// worst node holds vnode_min_entries keys, so a split always leaves room
// for the key that caused it.
inline constexpr bool vnode_fits(uint32_t node_size, uint32_t key_max)
{
	return key_max >= 1 && key_max <= vkey_len_max && node_size >= vnode_size_min &&
	       node_size <= vnode_size_max &&
	       vnode_worst_bytes(key_max, vnode_min_entries) <= node_size;
}

// The smallest power-of-two node size that fits key_max; 0 when none does.
inline constexpr uint32_t vnode_min_size(uint32_t key_max)
{
	for (uint32_t s = vnode_size_min; s <= vnode_size_max; s *= 2) {
		if (vnode_fits(s, key_max))
			return s;
	}
	return 0;
}

// every key length has a node size; the default node takes 149 bytes
static_assert(vnode_min_size(vkey_len_max) == 2048);
static_assert(vnode_fits(DS_BTREE_NODE_DEFAULT, 149) && !vnode_fits(DS_BTREE_NODE_DEFAULT, 150));

// A DSBK node image in a local buffer of node_size bytes.  Lookups and
// edits expect an image check() accepted (or one this class wrote);
// check() itself reads nothing outside the buffer whatever the image says.
class vnode_view {
public:
	vnode_view(void *buf, uint32_t size) : p_(static_cast<uint8_t *>(buf)), size_(size) {}

	// the common fields; node_header::low and high mean nothing here
	node_header &hdr() const { return *reinterpret_cast<node_header *>(p_); }
	vslot *slots() const { return reinterpret_cast<vslot *>(p_ + sizeof(vnode_header)); }
	uint32_t size() const { return size_; }
	uint8_t *data() const { return p_; }
	bool leaf() const { return hdr().level == 0; }
	uint32_t count() const { return hdr().count; }
	uint32_t key_max() const { return p_[offsetof(vnode_header, key_max)]; }
	uint32_t prefix_len() const { return p_[offsetof(vnode_header, prefix_len)]; }
	kref prefix() const { return {p_ + size_ - prefix_len(), prefix_len()}; }
	uint32_t heap_top() const { return ld16(offsetof(vnode_header, heap_top)); }
	// Header, slots in use and heap: what the node takes (the heap is
	// compact after every edit).
	uint32_t used_bytes() const
	{
		return sizeof(vnode_header) + count() * sizeof(vslot) + (size_ - heap_top());
	}
	// Below a quarter of the node in bytes: the tree's cue to merge or
	// redistribute (node_view's is a quarter of its entries).
	bool underfull() const
	{
		// the payload against a quarter of the payload room, as the
		// integer node counts entries (the header would otherwise be
		// the whole quarter of a 256-byte node)
		return used_bytes() - sizeof(vnode_header) < (size_ - sizeof(vnode_header)) / 4;
	}

	bool covers(kref key) const;	// low <= key < high
	bool right_of(kref key) const;	// key >= high: go to the sibling
	// Leaf: index of key, or -1.
	int find(kref key) const;
	// Internal: the child of the last separator <= key, else leftmost.
	uint64_t child_for(kref key) const;
	// First index whose key is >= key (count when none).
	uint32_t lower_bound(kref key) const;
	// Internal: the child slot for key, 0 leftmost, i + 1 slot i.
	uint32_t child_slot(kref key) const;
	uint64_t child_at(uint32_t slot) const
	{
		return slot ? slots()[slot - 1].val : hdr().leftmost;
	}
	// Key i against key, as kcmp, without a copy.
	int cmp_at(uint32_t i, kref key) const;

	// Key i in full (prefix included); key_into copies it to out (room
	// for key_max bytes) and returns its length: no allocation.
	std::string key_at(uint32_t i) const;
	uint32_t key_into(uint32_t i, uint8_t *out) const;
	uint64_t val_at(uint32_t i) const { return slots()[i].val; }
	void set_val(uint32_t i, uint64_t v) const { slots()[i].val = v; }
	// The fences in full; meaningless when the flag says infinite.
	std::string low() const;
	std::string high() const;

	// Set magic and checksum before the image is written.  The sum is
	// XXH64 (checksum()) of header bytes [16, 64), the slots in use and
	// the heap [heap_top, size).
	void seal() const;
	// An image fit to follow: bounds, checksum, level, fences, prefix,
	// every slot's bytes, order and children.  What is wrong goes into
	// *why (a static string).
	bool check(const char **why = nullptr) const;

	// Start a fresh node (keeps the version, as node_view::init).  The
	// fences must be 1..key_max bytes and key_max must fit the node size
	// (vnode_fits); otherwise the image is one check() refuses.
	void init(uint8_t level, uint8_t key_max, bool low_inf, kref low, bool high_inf,
		  kref high) const;
	// Insert or replace; false when a new key does not fit (replacing a
	// value always does).  A key of 0 or more than key_max bytes, or one
	// the fences do not cover, is refused the same way.
	bool leaf_upsert(kref key, uint64_t val, bool *existed) const;
	bool leaf_remove(kref key) const;
	// Internal: insert the separator with its right child (a separator
	// already there gets the child: a retried insert); false when full.
	bool internal_insert(kref sep, uint64_t child) const;
	// Internal: remove separator i (and the child right of it).
	void internal_remove_at(uint32_t i) const;
	// Internal: give separator i a new key, the child stays (a parent's
	// after balance_with); false, and nothing changed, when it does not
	// fit, or is no key (0 or over key_max bytes, outside the fences, not
	// between its neighbours).
	bool set_separator(uint32_t i, kref key) const;

	// Split into the empty right node `right` (a buffer of the same size)
	// by bytes: each half takes about half of the slot and heap bytes,
	// neither is left without keys.  Right gets the fences, the sibling
	// and this node's key_max; returns the separator, right's low fence,
	// which the caller inserts in the parent (and links this node's
	// sibling to right).  Leaves truncate it: the shortest prefix of
	// right's first key above left's last.  Internal nodes push their
	// middle key up: it leaves both halves and its child becomes right's
	// leftmost.  Needs 2 keys (leaf) or 1 (internal); with fewer, or if
	// no split point fits both halves (key_max too big for the node),
	// returns "" and changes nothing.
	std::string split_into(const vnode_view &right) const;
	// Bytes this node would take after absorb(right, sep) (UINT32_MAX
	// when sep cannot be a key).
	uint32_t merged_bytes(const vnode_view &right, kref sep) const;
	// This node and its right sibling (sep between them in the parent)
	// would fit in half a node: worth a merge (node_view's rule, in bytes).
	bool merge_fits(const vnode_view &right, kref sep) const
	{
		return merged_bytes(right, sep) <= size_ / 2;
	}
	// Take every key of `right` (this node's right sibling, same parent),
	// its high fence and its sibling.  For internal nodes sep (the
	// parent's separator between them) comes down with right's leftmost
	// child.  False, and nothing changed, when it does not fit.
	bool absorb(const vnode_view &right, kref sep) const;
	// Even out the bytes of this node and its right sibling; returns the
	// new separator (right's new low).  Leaves truncate it as a split
	// does; internal nodes rotate through sep.  When no arrangement fits
	// both nodes, nothing changes and right's low comes back.
	std::string balance_with(const vnode_view &right, kref sep) const;

private:
	uint16_t ld16(size_t off) const
	{
		uint16_t v;
		std::memcpy(&v, p_ + off, sizeof(v));
		return v;
	}
	void st16(size_t off, uint16_t v) const { std::memcpy(p_ + off, &v, sizeof(v)); }
	kref low_sfx() const;
	kref high_sfx() const;
	kref sfx(const vslot &s) const { return {p_ + s.off, s.len}; }
	// lower_bound, and whether the key there equals key
	uint32_t search(kref key, bool *hit) const;

	uint8_t *p_;
	uint32_t size_;
};

}  // namespace dsmem::btree
