// SPDX-License-Identifier: BSD-2-Clause
// Node, blob and superblock images (see layout.hpp).
#include "layout.hpp"

#include <algorithm>

#include <xxhash.h>

namespace dsmem::btree {

// XXH64: scalar 64-bit arithmetic, which an emulated CPU runs nearly as
// well as a real one (a table CRC costs a lookup per byte there)
uint64_t checksum(const void *p, size_t n)
{
	return XXH64(p, n, 0);
}

unsigned seed_region_for(unsigned level, bool is_root)
{
	if (is_root && level > 0)
		return region_root;
	switch (level) {
	case 0:
		return region_leaf;
	case 1:
		return region_l3;
	case 2:
		return region_l2;
	case 3:
		return region_l1;
	default:
		return region_root;
	}
}

bool node_view::covers(uint64_t key) const
{
	const node_header &h = hdr();

	if (!(h.flags & node_low_inf) && key < h.low)
		return false;
	return !right_of(key);
}

bool node_view::right_of(uint64_t key) const
{
	const node_header &h = hdr();

	return !(h.flags & node_high_inf) && key >= h.high;
}

uint32_t node_view::lower_bound(uint64_t key) const
{
	const entry *e = entries();
	uint32_t lo = 0, hi = hdr().count;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (e[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int node_view::find(uint64_t key) const
{
	uint32_t i = lower_bound(key);

	if (i < hdr().count && entries()[i].key == key)
		return static_cast<int>(i);
	return -1;
}

uint64_t node_view::child_for(uint64_t key) const
{
	// the last separator <= key; leftmost when none
	uint32_t i = lower_bound(key);

	if (i < hdr().count && entries()[i].key == key)
		return entries()[i].val;
	return i ? entries()[i - 1].val : hdr().leftmost;
}

uint32_t node_view::child_slot(uint64_t key) const
{
	uint32_t i = lower_bound(key);

	if (i < hdr().count && entries()[i].key == key)
		return i + 1;
	return i;
}

// The header after the CRC and the entries in use: the rest of the node
// is never read, so a checksum over it would only cost time.
static size_t sealed_bytes(const node_view &n)
{
	return sizeof(node_header) - sum_from + n.hdr().count * sizeof(entry);
}

void node_view::seal() const
{
	hdr().magic = node_magic;
	hdr().sum = checksum(p_ + sum_from, sealed_bytes(*this));
}

bool node_view::check(const char **why) const
{
	const node_header &h = hdr();
	const char *w = nullptr;

	if (h.magic != node_magic)
		w = "bad magic";
	else if (h.count > capacity())
		w = "count over capacity";
	else if (h.sum != checksum(p_ + sum_from, sealed_bytes(*this)))
		w = "checksum mismatch";
	else if (h.level >= height_max)
		w = "level out of range";
	else if (!(h.flags & (node_low_inf | node_high_inf)) && h.low >= h.high)
		w = "fences inverted";
	else if (!leaf() && !(h.flags & node_free) && !h.leftmost)
		w = "internal node without a leftmost child";
	else if (!leaf()) {
		// the checksum vouches for what a writer sealed; the children
		// an internal node points to are checked as well, since they
		// are followed (a leaf's values are data, or blobs that carry
		// their own key and checksum)
		const entry *e = entries();

		for (uint32_t i = 0; i < h.count && !w; i++) {
			if (i && e[i - 1].key >= e[i].key)
				w = "keys out of order";
			else if (!covers(e[i].key))
				w = "key outside the fences";
			else if (!leaf() && !e[i].val)
				w = "null child";
		}
	}
	if (why)
		*why = w;
	return !w;
}

void node_view::init(uint8_t level, bool low_inf, uint64_t low, bool high_inf,
		     uint64_t high) const
{
	uint64_t version = hdr().version;

	std::memset(p_, 0, size_);
	node_header &h = hdr();
	h.version = version;
	h.level = level;
	h.flags = (low_inf ? node_low_inf : 0) | (high_inf ? node_high_inf : 0);
	h.low = low_inf ? 0 : low;
	h.high = high_inf ? 0 : high;
	h.magic = node_magic;
}

bool node_view::leaf_upsert(uint64_t key, uint64_t val, bool *existed) const
{
	node_header &h = hdr();
	entry *e = entries();
	uint32_t i = lower_bound(key);

	if (i < h.count && e[i].key == key) {
		e[i].val = val;
		*existed = true;
		return true;
	}
	*existed = false;
	if (h.count >= capacity())
		return false;
	std::memmove(e + i + 1, e + i, (h.count - i) * sizeof(entry));
	e[i] = {key, val};
	h.count++;
	return true;
}

bool node_view::leaf_remove(uint64_t key) const
{
	int i = find(key);

	if (i < 0)
		return false;
	internal_remove_at(static_cast<uint32_t>(i));
	return true;
}

bool node_view::internal_insert(uint64_t key, uint64_t child) const
{
	bool existed;

	// a separator already there means a retried insert: same child
	return leaf_upsert(key, child, &existed);
}

void node_view::internal_remove_at(uint32_t i) const
{
	node_header &h = hdr();
	entry *e = entries();

	std::memmove(e + i, e + i + 1, (h.count - i - 1) * sizeof(entry));
	h.count--;
	std::memset(e + h.count, 0, sizeof(entry));
}

uint64_t node_view::split_into(const node_view &right) const
{
	node_header &h = hdr();
	entry *e = entries();
	uint32_t keep = h.count / 2;
	uint64_t sep = e[keep].key;

	right.init(h.level, false, sep, h.flags & node_high_inf, h.high);
	right.hdr().sibling = h.sibling;
	if (leaf()) {
		std::memcpy(right.entries(), e + keep, (h.count - keep) * sizeof(entry));
		right.hdr().count = static_cast<uint16_t>(h.count - keep);
	} else {
		// the separator goes up; its child becomes right's leftmost
		right.hdr().leftmost = e[keep].val;
		std::memcpy(right.entries(), e + keep + 1,
			    (h.count - keep - 1) * sizeof(entry));
		right.hdr().count = static_cast<uint16_t>(h.count - keep - 1);
	}
	std::memset(e + keep, 0, (h.count - keep) * sizeof(entry));
	h.count = static_cast<uint16_t>(keep);
	h.high = sep;
	h.flags &= static_cast<uint8_t>(~node_high_inf);
	return sep;
}

bool node_view::absorb(const node_view &right, uint64_t sep) const
{
	node_header &h = hdr();
	const node_header &r = right.hdr();
	uint32_t need = r.count + (leaf() ? 0 : 1);

	if (h.count + need > capacity())
		return false;
	entry *e = entries();
	if (!leaf())
		e[h.count++] = {sep, r.leftmost};
	std::memcpy(e + h.count, right.entries(), r.count * sizeof(entry));
	h.count = static_cast<uint16_t>(h.count + r.count);
	h.high = r.high;
	h.flags = static_cast<uint8_t>((h.flags & ~node_high_inf) | (r.flags & node_high_inf));
	h.sibling = r.sibling;
	return true;
}

uint64_t node_view::balance_with(const node_view &right, uint64_t sep) const
{
	node_header &h = hdr();
	node_header &r = right.hdr();
	entry *e = entries();
	entry *re = right.entries();
	uint32_t total = h.count + r.count;
	uint32_t want = total / 2;	// entries the left keeps
	uint64_t nsep;

	if (leaf()) {
		if (h.count < want) {	// right -> left
			uint32_t k = want - h.count;
			std::memcpy(e + h.count, re, k * sizeof(entry));
			std::memmove(re, re + k, (r.count - k) * sizeof(entry));
			std::memset(re + r.count - k, 0, k * sizeof(entry));
			h.count = static_cast<uint16_t>(want);
			r.count = static_cast<uint16_t>(r.count - k);
		} else if (h.count > want) {	// left -> right
			uint32_t k = h.count - want;
			std::memmove(re + k, re, r.count * sizeof(entry));
			std::memcpy(re, e + want, k * sizeof(entry));
			std::memset(e + want, 0, k * sizeof(entry));
			h.count = static_cast<uint16_t>(want);
			r.count = static_cast<uint16_t>(r.count + k);
		}
		nsep = re[0].key;
	} else {
		// rotate through the separator: pool left, (sep, right.leftmost), right
		uint32_t n = total + 1;
		entry *pool = new entry[n];
		std::memcpy(pool, e, h.count * sizeof(entry));
		pool[h.count] = {sep, r.leftmost};
		std::memcpy(pool + h.count + 1, re, r.count * sizeof(entry));
		uint32_t left_n = n / 2;	// pool[left_n] goes up
		std::memset(e, 0, capacity() * sizeof(entry));
		std::memset(re, 0, right.capacity() * sizeof(entry));
		std::memcpy(e, pool, left_n * sizeof(entry));
		h.count = static_cast<uint16_t>(left_n);
		nsep = pool[left_n].key;
		r.leftmost = pool[left_n].val;
		std::memcpy(re, pool + left_n + 1, (n - left_n - 1) * sizeof(entry));
		r.count = static_cast<uint16_t>(n - left_n - 1);
		delete[] pool;
	}
	h.high = nsep;
	r.low = nsep;
	r.flags &= static_cast<uint8_t>(~node_low_inf);
	return nsep;
}

// The key and length seed the sum, so a blob of another key fails it too.
static uint32_t blob_sum(uint64_t key, const void *val, uint32_t len)
{
	return static_cast<uint32_t>(XXH64(val, len, key ^ (static_cast<uint64_t>(len) << 32)));
}

void blob_seal(void *buf, uint64_t key, const void *val, uint32_t len)
{
	auto *b = static_cast<blob_header *>(buf);

	b->key = key;
	b->len = len;
	std::memcpy(b + 1, val, len);
	b->sum = blob_sum(key, val, len);
}

const uint8_t *blob_check(const void *buf, uint32_t value_size, uint64_t key, uint32_t *len)
{
	blob_header b;
	const uint8_t *data = static_cast<const uint8_t *>(buf) + sizeof(b);

	std::memcpy(&b, buf, sizeof(b));
	if (b.key != key || b.len > value_size || b.sum != blob_sum(key, data, b.len))
		return nullptr;
	*len = b.len;
	return data;
}

}  // namespace dsmem::btree
