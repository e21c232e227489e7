// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's remote images without a module (user/lib/btree/layout.hpp):
// node headers and their checks, leaf and internal edits, splits, merges
// and redistributions (with the parent's separator), out-of-line value
// blobs, the seed layout's regions and the superblock's offsets.
//
// Splits, merges and redistributions of internal nodes are checked by what
// routing must keep: for every probe key, the child reached through the
// node that covers the key is the child reached before the change.
#include <cerrno>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "btree/layout.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::btree;

namespace {

// A node buffer: node_size bytes, 8-aligned, filled with garbage so that
// init() is seen to clear what it must.
struct nbuf {
	std::vector<uint64_t> words;
	node_view v;

	explicit nbuf(uint32_t size, uint8_t fill = 0xcc)
		: words(size / 8), v(words.data(), size)
	{
		std::memset(words.data(), fill, size);
	}
	nbuf(const nbuf &o) : words(o.words), v(words.data(), o.v.size()) {}
	nbuf &operator=(const nbuf &) = delete;
	node_header &h() const { return v.hdr(); }
	entry &e(uint32_t i) const { return v.entries()[i]; }
};

constexpr uint32_t small = 256;		// 12 entries: DS_BTREE_NODE_MIN

// A leaf with the given keys (value = key * 10 + 1), fences as given.
nbuf leaf_of(const std::vector<uint64_t> &keys, bool low_inf = true, uint64_t low = 0,
	     bool high_inf = true, uint64_t high = 0, uint32_t size = small)
{
	nbuf n(size);
	bool existed;

	n.v.init(0, low_inf, low, high_inf, high);
	for (uint64_t k : keys)
		assert_true(n.v.leaf_upsert(k, k * 10 + 1, &existed));
	return n;
}

// An internal node: leftmost child, then (separator, child) pairs.
nbuf internal_of(uint64_t leftmost, const std::vector<std::pair<uint64_t, uint64_t>> &seps,
		 bool low_inf = true, uint64_t low = 0, bool high_inf = true,
		 uint64_t high = 0, uint8_t level = 1)
{
	nbuf n(small);

	n.v.init(level, low_inf, low, high_inf, high);
	n.h().leftmost = leftmost;
	for (auto [k, c] : seps)
		assert_true(n.v.internal_insert(k, c));
	return n;
}

bool sealed_ok(const nbuf &n, const char **why = nullptr)
{
	n.v.seal();
	return n.v.check(why);
}

void assert_ascending(const nbuf &n)
{
	for (uint32_t i = 1; i < n.h().count; i++)
		assert_true(n.e(i - 1).key < n.e(i).key);
}

// Probe keys around every interesting key: k - 1, k, k + 1.
std::vector<uint64_t> probes(const std::vector<uint64_t> &keys)
{
	std::vector<uint64_t> p = {0, 1, UINT64_MAX - 1, UINT64_MAX};

	for (uint64_t k : keys) {
		if (k)
			p.push_back(k - 1);
		p.push_back(k);
		if (k != UINT64_MAX)
			p.push_back(k + 1);
	}
	return p;
}

// ---- constants and offsets ----

void test_constants(void **)
{
	assert_int_equal(sizeof(node_header), 64);
	assert_int_equal(node_capacity(DS_BTREE_NODE_MIN), 12);
	assert_int_equal(node_capacity(1024), 60);
	assert_int_equal(node_capacity(DS_BTREE_NODE_MAX), 252);
	assert_int_equal(sum_from, 16);
	assert_int_equal(offsetof(node_header, sum), 8);
	// the sum is XXH64, seed 0: its reference value for no bytes
	assert_true(checksum("", 0) == 0xef46db3751d8e999ull);
	assert_true(checksum("a", 1) != checksum("b", 1));
	assert_int_equal(blob_slot(0), 64);
	assert_int_equal(blob_slot(48), 64);
	assert_int_equal(blob_slot(49), 128);
	assert_int_equal(blob_slot(DS_BTREE_VALUE_MAX), 4096 + 64);
	// superblock and segment header offsets the kselftests hard-code
	assert_int_equal(sb_off_root, 32);
	assert_int_equal(client_slot_off(0), 512);
	assert_true(client_slot_off(clients_max - 1) + 16 <= seg_hdr_off);
	// a slot word and a lock tag keep their fields apart
	uint64_t w = slot_word(0xabcdef, lease_max_ms, slot_beat_mask);
	assert_int_equal(slot_nonce(w), 0xabcdef);
	assert_int_equal(slot_lease(w), lease_max_ms);
	assert_int_equal(slot_beat(w), slot_word(0xabcdef, lease_max_ms, 0));
	uint64_t tag = lock_tag(clients_max - 1, 0xabcdef);
	assert_int_equal(tag_slot(tag), clients_max);
	assert_int_equal(tag_nonce(tag), 0xabcdef);
	assert_int_equal(seg_off_cursor, seg_hdr_off);
	for (unsigned r = 0; r < region_count; r++)
		assert_int_equal(seg_off_region(r), seg_hdr_off + 8 + 8 * r);
	assert_true(seg_off_region(region_count - 1) + 8 <= data_off);
	// global addresses split into segment and offset
	uint64_t a = DSMEM_GADDR(3, 5, 0x12345);
	assert_true(gaddr_seg(a) == DSMEM_GADDR(3, 5, 0));
	assert_int_equal(gaddr_off(a), 0x12345);
}

void test_seed_regions(void **)
{
	// contiguous, in order, filling the 16 MiB server region exactly
	assert_int_equal(seed_region_off[0], 0);
	for (unsigned r = 1; r < region_count; r++)
		assert_int_equal(seed_region_off[r], seed_region_off[r - 1] + seed_region_size[r - 1]);
	assert_int_equal(seed_region_off[region_leaf] + seed_region_size[region_leaf],
			 seed_server_bytes);
	assert_int_equal(seed_region_size[region_leaf], 14 << 20);	// the 14 MB leaf cap
	assert_true(DS_BTREE_SEED_SEG_MIN == data_off + seed_server_bytes);

	// levels counted from the leaves; the root has its own region
	assert_int_equal(seed_region_for(0, false), region_leaf);
	assert_int_equal(seed_region_for(1, false), region_l3);
	assert_int_equal(seed_region_for(2, false), region_l2);
	assert_int_equal(seed_region_for(3, false), region_l1);
	assert_int_equal(seed_region_for(1, true), region_root);
	assert_int_equal(seed_region_for(3, true), region_root);
	assert_int_equal(seed_region_for(height_max - 1, true), region_root);
	// a root that is a leaf is a leaf: it stays where the leaves are
	assert_int_equal(seed_region_for(0, true), region_leaf);
	// above level 3 nothing is left but the root region
	assert_int_equal(seed_region_for(4, false), region_root);
	for (unsigned l = 0; l < height_max; l++)
		assert_true(seed_region_for(l, false) < region_count);
}

// ---- init, fences, seal and check ----

void test_init(void **)
{
	nbuf n(small, 0xa5);

	n.h().version = 77;
	n.v.init(0, true, 123, true, 456);
	assert_int_equal(n.h().version, 77);	// versions only go up
	assert_int_equal(n.h().level, 0);
	assert_int_equal(n.h().count, 0);
	assert_int_equal(n.h().lock, 0);
	assert_int_equal(n.h().sibling, 0);
	assert_int_equal(n.h().leftmost, 0);
	assert_int_equal(n.h().flags, node_low_inf | node_high_inf);
	assert_int_equal(n.h().magic, node_magic);
	assert_true(n.v.leaf());
	for (uint32_t i = 0; i < n.v.capacity(); i++)
		assert_true(n.e(i).key == 0 && n.e(i).val == 0);
	assert_true(n.v.covers(0));
	assert_true(n.v.covers(UINT64_MAX));
	assert_false(n.v.right_of(UINT64_MAX));
	assert_true(sealed_ok(n));

	n.v.init(2, false, 100, false, 200);
	assert_int_equal(n.h().version, 77);
	assert_int_equal(n.h().level, 2);
	assert_false(n.v.leaf());
	assert_int_equal(n.h().flags, 0);
	assert_int_equal(n.h().low, 100);
	assert_int_equal(n.h().high, 200);
	assert_false(n.v.covers(99));
	assert_true(n.v.covers(100));
	assert_true(n.v.covers(199));
	assert_false(n.v.covers(200));
	assert_false(n.v.right_of(99));	// left of the node is not "right of"
	assert_false(n.v.right_of(199));
	assert_true(n.v.right_of(200));
	assert_true(n.v.right_of(UINT64_MAX));
	n.h().leftmost = DSMEM_GADDR(3, 1, 0x10000);
	assert_true(sealed_ok(n));

	// one finite fence
	n.v.init(0, false, 50, true, 0);
	assert_false(n.v.covers(49));
	assert_true(n.v.covers(UINT64_MAX));
	n.v.init(0, true, 0, false, 50);
	assert_true(n.v.covers(0));
	assert_false(n.v.covers(50));
	assert_true(n.v.right_of(50));
}

void test_seal_check_flips(void **)
{
	for (uint32_t size : {uint32_t{DS_BTREE_NODE_MIN}, uint32_t{1024}}) {
		nbuf n = leaf_of({5, 9, 17, 33}, false, 1, false, 1000, size);
		const char *why = "unset";

		n.h().sibling = DSMEM_GADDR(4, 1, 0x20000);
		n.h().version = 3;
		n.v.seal();
		assert_true(n.v.check(&why));
		assert_null(why);
		assert_true(n.v.check());	// why may be NULL

		// every byte the sum covers (the header from the version on,
		// the entries in use), and the sum itself
		const uint32_t sealed = sizeof(node_header) + n.h().count * sizeof(entry);
		for (uint32_t off = 8; off < sealed; off++) {
			uint8_t *b = n.v.data() + off;
			for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
				*b ^= bit;
				why = nullptr;
				assert_false(n.v.check(&why));
				assert_non_null(why);
				*b ^= bit;
			}
		}
		assert_true(n.v.check());

		// the lock word is not covered: a locked node reads as valid
		n.h().lock = 0xdeadbeefcafe;
		assert_true(n.v.check());
		n.h().lock = 0;

		// torn: the front of one version, the rear of the next
		nbuf newer(n);
		bool existed;
		assert_true(newer.v.leaf_upsert(20, 2, &existed));
		newer.h().version++;
		newer.v.seal();
		assert_true(newer.v.check());
		// (torn inside the entries, where the two differ)
		const uint32_t tear = sizeof(node_header) + 2 * sizeof(entry) + 8;
		nbuf torn(n);
		std::memcpy(torn.v.data() + tear, newer.v.data() + tear, size - tear);
		assert_false(torn.v.check());
		nbuf torn2(newer);
		std::memcpy(torn2.v.data() + tear, n.v.data() + tear, size - tear);
		assert_false(torn2.v.check());
	}
}

void test_check_structure(void **)
{
	const char *why;

	// a zeroed buffer (memory never written) is not a node
	nbuf z(small, 0);
	why = nullptr;
	assert_false(z.v.check(&why));
	assert_non_null(why);

	// bad magic, even with a checksum over it
	nbuf m = leaf_of({1, 2, 3});
	m.v.seal();
	m.h().magic = node_magic ^ 1;
	m.h().sum = checksum(m.v.data() + sum_from, sizeof(node_header) - sum_from + 3 * sizeof(entry));
	why = nullptr;
	assert_false(m.v.check(&why));
	assert_non_null(why);

	// count over capacity (checked before the checksum, which would
	// read past the node; seal() is for counts that fit)
	nbuf c = leaf_of({1, 2, 3});
	c.v.seal();
	c.h().count = static_cast<uint16_t>(c.v.capacity() + 1);
	why = nullptr;
	assert_false(c.v.check(&why));
	assert_non_null(why);
	c.h().count = 0xffff;
	assert_false(c.v.check());
	c.h().count = static_cast<uint16_t>(c.v.capacity());	// full is fine if sorted
	for (uint32_t i = 0; i < c.v.capacity(); i++)
		c.e(i) = {i + 1, i};
	assert_true(sealed_ok(c));

	// inverted fences, and equal ones (an empty key range)
	nbuf f(small);
	f.v.init(0, false, 200, false, 100);
	why = nullptr;
	assert_false(sealed_ok(f, &why));
	assert_non_null(why);
	f.v.init(0, false, 100, false, 100);
	assert_false(sealed_ok(f));
	f.v.init(0, false, 100, false, 101);
	assert_true(sealed_ok(f));
	// an infinite fence makes the other one's value irrelevant
	f.v.init(0, false, 200, true, 0);
	assert_true(sealed_ok(f));
	f.v.init(0, true, 0, false, 1);
	assert_true(sealed_ok(f));

	// a level no tree reaches
	nbuf l = leaf_of({1});
	l.h().level = height_max;
	assert_false(sealed_ok(l));
	l.h().level = 0xff;
	assert_false(sealed_ok(l));

	// an internal node's separators, which are followed: out of order,
	// duplicated, or outside the fences (a leaf's entries are vouched
	// for by the sum alone)
	const std::vector<std::pair<uint64_t, uint64_t>> seps = {{10, 0x2000}, {20, 0x3000}, {30, 0x4000}};
	nbuf o = internal_of(0x1000, seps);
	assert_true(sealed_ok(o));
	std::swap(o.e(0), o.e(2));
	assert_false(sealed_ok(o));
	nbuf d = internal_of(0x1000, seps);
	d.e(1).key = 10;
	assert_false(sealed_ok(d));
	nbuf lf = internal_of(0x1000, seps, false, 10, false, 31);
	assert_true(sealed_ok(lf));
	lf.e(0).key = 9;		// below low
	assert_false(sealed_ok(lf));
	lf.e(0).key = 10;
	lf.e(2).key = 31;		// at high: belongs to the sibling
	assert_false(sealed_ok(lf));

	// internal nodes: a leftmost child and no null children
	nbuf in = internal_of(0x1000, {{10, 0x2000}, {20, 0x3000}});
	assert_true(sealed_ok(in));
	in.h().leftmost = 0;
	assert_false(sealed_ok(in));
	in.h().leftmost = 0x1000;
	in.e(1).val = 0;
	assert_false(sealed_ok(in));
	// a leaf's values may be anything, zero included
	nbuf lz = leaf_of({1});
	lz.e(0).val = 0;
	assert_true(sealed_ok(lz));
}

// ---- leaves ----

void test_leaf_upsert_remove(void **)
{
	std::mt19937_64 rng(7);
	nbuf n(small);
	bool existed = true;

	n.v.init(0, true, 0, true, 0);
	const uint32_t cap = n.v.capacity();
	std::vector<uint64_t> keys = {0, UINT64_MAX, 42, 7, 1000, 999, 1, 500, 64, 65, 3, 12345};
	assert_int_equal(keys.size(), cap);
	for (uint64_t k : keys) {
		assert_true(n.v.leaf_upsert(k, ~k, &existed));
		assert_false(existed);
		assert_ascending(n);
	}
	assert_int_equal(n.h().count, cap);
	for (uint64_t k : keys) {
		int i = n.v.find(k);
		assert_true(i >= 0);
		assert_true(n.e(i).key == k && n.e(i).val == ~k);
		assert_int_equal(n.v.lower_bound(k), i);
	}
	assert_int_equal(n.v.find(2), -1);
	assert_int_equal(n.v.find(UINT64_MAX - 1), -1);
	assert_int_equal(n.v.lower_bound(2), 2);		// after 0 and 1
	assert_int_equal(n.v.lower_bound(UINT64_MAX - 1), cap - 1);
	assert_true(sealed_ok(n));

	// full: a new key is refused and nothing moves; updates still go in
	nbuf before(n);
	assert_false(n.v.leaf_upsert(2, 2, &existed));
	assert_false(existed);
	assert_int_equal(0, std::memcmp(before.v.data(), n.v.data(), small));
	assert_true(n.v.leaf_upsert(42, 4242, &existed));
	assert_true(existed);
	assert_int_equal(n.h().count, cap);
	assert_int_equal(n.e(n.v.find(42)).val, 4242);

	// removal keeps the order and clears the freed slot
	assert_true(n.v.leaf_remove(0));
	assert_false(n.v.leaf_remove(0));
	assert_true(n.v.leaf_remove(500));
	assert_true(n.v.leaf_remove(UINT64_MAX));
	assert_int_equal(n.h().count, cap - 3);
	assert_ascending(n);
	for (uint32_t i = n.h().count; i < cap; i++)
		assert_true(n.e(i).key == 0 && n.e(i).val == 0);
	assert_int_equal(n.v.find(500), -1);
	assert_true(n.v.find(65) >= 0);
	assert_true(sealed_ok(n));

	// against a model: random upserts and removals of a small key space
	std::map<uint64_t, uint64_t> model;
	n.v.init(0, true, 0, true, 0);
	for (int step = 0; step < 20000; step++) {
		uint64_t k = rng() % 24, v = rng();
		if (rng() % 2) {
			bool ok = n.v.leaf_upsert(k, v, &existed);
			bool had = model.count(k);
			assert_int_equal(existed, had);
			assert_int_equal(ok, had || model.size() < cap);
			if (ok)
				model[k] = v;
		} else {
			assert_int_equal(n.v.leaf_remove(k), model.erase(k));
		}
		assert_int_equal(n.h().count, model.size());
		uint32_t i = 0;
		for (auto [mk, mv] : model) {
			assert_true(n.e(i).key == mk && n.e(i).val == mv);
			i++;
		}
	}
	assert_true(sealed_ok(n));
}

// ---- internal nodes ----

void test_internal(void **)
{
	const uint64_t A = DSMEM_GADDR(3, 1, 0x10000), B = A + 256, C = A + 512, D = A + 768;
	nbuf n = internal_of(A, {{30, D}, {10, B}, {20, C}});
	bool existed;

	assert_ascending(n);
	assert_int_equal(n.h().count, 3);
	assert_true(n.v.child_for(0) == A);
	assert_true(n.v.child_for(9) == A);
	assert_true(n.v.child_for(10) == B);
	assert_true(n.v.child_for(19) == B);
	assert_true(n.v.child_for(20) == C);
	assert_true(n.v.child_for(29) == C);
	assert_true(n.v.child_for(30) == D);
	assert_true(n.v.child_for(UINT64_MAX) == D);
	assert_int_equal(n.v.find(20), 1);	// the separator's index
	assert_int_equal(n.v.find(21), -1);
	assert_true(sealed_ok(n));

	// a retried insert of the same separator is harmless
	assert_true(n.v.internal_insert(20, C));
	assert_int_equal(n.h().count, 3);

	// removing a separator hands its keys to the child on its left
	n.v.internal_remove_at(1);
	assert_int_equal(n.h().count, 2);
	assert_true(n.v.child_for(20) == B);
	assert_true(n.v.child_for(29) == B);
	assert_true(n.v.child_for(30) == D);
	assert_true(n.e(2).key == 0 && n.e(2).val == 0);
	n.v.internal_remove_at(0);
	assert_true(n.v.child_for(15) == A);
	n.v.internal_remove_at(0);
	assert_int_equal(n.h().count, 0);
	assert_true(n.v.child_for(UINT64_MAX) == A);	// only leftmost left
	assert_true(sealed_ok(n));

	// full
	nbuf f = internal_of(A, {});
	for (uint32_t i = 0; i < f.v.capacity(); i++)
		assert_true(f.v.internal_insert(100 * (i + 1), A + 256 * (i + 1)));
	assert_false(f.v.internal_insert(50, B));
	assert_false(f.v.internal_insert(UINT64_MAX, B));
	assert_true(f.v.leaf_upsert(100, A + 256, &existed));	// same key: fine
	assert_true(existed);
	for (uint32_t i = 0; i < f.v.capacity(); i++) {
		assert_true(f.v.child_for(100 * (i + 1)) == A + 256 * (i + 1));
		assert_true(f.v.child_for(100 * (i + 1) + 99) == A + 256 * (i + 1));
	}
	assert_true(f.v.child_for(99) == A);
	assert_true(sealed_ok(f));
}

// ---- splits ----

void test_split_leaf(void **)
{
	const uint64_t S = DSMEM_GADDR(4, 2, 0x30000);

	for (bool high_inf : {true, false}) {
		std::vector<uint64_t> keys;
		for (uint64_t k = 0; k < node_capacity(small); k++)
			keys.push_back(1000 + 10 * k);
		nbuf l = leaf_of(keys, false, 1000, high_inf, 5000);
		nbuf r(small, 0x5a);
		l.h().sibling = S;
		l.h().version = 9;
		r.h().version = 0;	// init keeps the right buffer's version

		uint64_t sep = l.v.split_into(r.v);
		// fences: [1000, sep) and [sep, old high)
		assert_true(sep == r.h().low);
		assert_true(sep == l.h().high);
		assert_true(sep == r.e(0).key);
		assert_false(l.h().flags & node_high_inf);
		assert_false(r.h().flags & node_low_inf);
		assert_int_equal(l.h().low, 1000);
		assert_int_equal(!!(r.h().flags & node_high_inf), high_inf);
		if (!high_inf)
			assert_int_equal(r.h().high, 5000);
		// the right node inherits the sibling; the caller links left to it
		assert_true(r.h().sibling == S);
		assert_true(l.h().sibling == S);
		assert_int_equal(r.h().level, 0);
		assert_int_equal(r.h().version, 0);
		assert_int_equal(l.h().version, 9);
		// halves
		assert_int_equal(l.h().count + r.h().count, keys.size());
		assert_true(l.h().count >= keys.size() / 2 - 1 && r.h().count >= keys.size() / 2 - 1);
		assert_ascending(l);
		assert_ascending(r);
		for (uint32_t i = l.h().count; i < l.v.capacity(); i++)
			assert_true(l.e(i).key == 0 && l.e(i).val == 0);
		for (uint64_t k : keys) {
			const nbuf &home = k < sep ? l : r;
			const nbuf &other = k < sep ? r : l;
			assert_true(home.v.covers(k));
			assert_false(other.v.covers(k));
			int i = home.v.find(k);
			assert_true(i >= 0);
			assert_int_equal(home.e(i).val, k * 10 + 1);
			assert_int_equal(other.v.find(k), -1);
		}
		assert_true(l.v.right_of(sep));
		assert_false(l.v.right_of(sep - 1));
		assert_true(sealed_ok(l));
		assert_true(sealed_ok(r));

		// absorb undoes it
		nbuf before = leaf_of(keys, false, 1000, high_inf, 5000);
		assert_true(l.v.absorb(r.v, sep));
		assert_int_equal(l.h().count, keys.size());
		for (uint32_t i = 0; i < keys.size(); i++)
			assert_true(l.e(i).key == before.e(i).key && l.e(i).val == before.e(i).val);
		assert_int_equal(!!(l.h().flags & node_high_inf), high_inf);
		if (!high_inf)
			assert_int_equal(l.h().high, 5000);
		assert_true(l.h().sibling == S);
		assert_true(sealed_ok(l));
	}
}

// The child each probe key reaches through a row of internal siblings
// (the one whose fences cover it).
uint64_t route(const std::vector<const nbuf *> &row, uint64_t k)
{
	for (const nbuf *n : row)
		if (n->v.covers(k))
			return n->v.child_for(k);
	fail_msg("no node covers %llu", (unsigned long long)k);
	return 0;
}

std::vector<std::pair<uint64_t, uint64_t>> seps_from(uint64_t first, uint32_t n, uint64_t step,
						     uint64_t child0)
{
	std::vector<std::pair<uint64_t, uint64_t>> s;
	for (uint32_t i = 0; i < n; i++)
		s.push_back({first + step * i, child0 + 256 * (i + 1)});
	return s;
}

void test_split_internal(void **)
{
	const uint64_t C0 = DSMEM_GADDR(3, 1, 0x40000);
	const uint32_t cap = node_capacity(small);

	for (uint32_t count : {cap, cap - 1, 3u}) {
		auto seps = seps_from(100, count, 100, C0);
		nbuf n = internal_of(C0, seps, false, 50, false, 100 * (count + 2), 2);
		nbuf orig(n);
		nbuf r(small);
		std::vector<uint64_t> keys = {50, 100 * (count + 2) - 1};
		for (auto [k, c] : seps)
			keys.push_back(k);
		n.h().sibling = 0x77;

		uint64_t sep = n.v.split_into(r.v);
		assert_true(sep == n.h().high);
		assert_true(sep == r.h().low);
		assert_true(r.h().sibling == 0x77);
		assert_int_equal(r.h().level, 2);
		assert_int_equal(r.h().high, orig.h().high);
		assert_true(r.h().leftmost != 0);
		// the separator moved up: it is a key of neither half, and its
		// child is the right half's leftmost
		assert_int_equal(n.h().count + r.h().count, count - 1);
		assert_int_equal(n.v.find(sep), -1);
		assert_int_equal(r.v.find(sep), -1);
		assert_true(r.h().leftmost == orig.v.child_for(sep));
		for (uint64_t k : probes(keys)) {
			if (!orig.v.covers(k))
				continue;
			assert_true(route({&n, &r}, k) == orig.v.child_for(k));
		}
		assert_true(sealed_ok(n));
		assert_true(sealed_ok(r));

		// and absorb, given the separator back, undoes it
		assert_true(n.v.absorb(r.v, sep));
		assert_int_equal(n.h().count, count);
		assert_int_equal(n.h().high, orig.h().high);
		assert_true(n.h().sibling == 0x77);
		for (uint64_t k : probes(keys))
			if (orig.v.covers(k))
				assert_true(n.v.child_for(k) == orig.v.child_for(k));
		assert_true(sealed_ok(n));
	}
}

// ---- merges ----

void test_absorb_leaf(void **)
{
	nbuf l = leaf_of({10, 20, 30}, true, 0, false, 100);
	nbuf r = leaf_of({100, 150, 170}, false, 100, false, 300);
	const uint64_t T = DSMEM_GADDR(3, 1, 0x999 * 8);

	l.h().sibling = DSMEM_GADDR(4, 1, 0x1000);	// r's address
	r.h().sibling = T;
	assert_true(l.v.absorb(r.v, 100));
	assert_int_equal(l.h().count, 6);
	assert_ascending(l);
	assert_int_equal(l.h().high, 300);
	assert_true(l.h().flags & node_low_inf);
	assert_false(l.h().flags & node_high_inf);
	assert_true(l.h().sibling == T);
	for (uint64_t k : {10, 20, 30, 100, 150, 170})
		assert_true(l.v.find(k) >= 0);
	assert_true(l.v.covers(299));
	assert_false(l.v.covers(300));
	assert_true(sealed_ok(l));

	// the last node: the merged node has no high fence and no sibling
	nbuf e = leaf_of({}, false, 5, false, 10);
	nbuf last = leaf_of({10, 11}, false, 10, true, 0);
	e.h().sibling = 0x1234;
	assert_true(e.v.absorb(last.v, 10));
	assert_true(e.h().flags & node_high_inf);
	assert_int_equal(e.h().sibling, 0);
	assert_true(e.v.covers(UINT64_MAX));
	assert_int_equal(e.h().count, 2);
	assert_true(sealed_ok(e));

	// an empty right node
	nbuf a = leaf_of({1, 2}, true, 0, false, 10);
	nbuf b = leaf_of({}, false, 10, false, 20);
	assert_true(a.v.absorb(b.v, 10));
	assert_int_equal(a.h().count, 2);
	assert_int_equal(a.h().high, 20);

	// too many: refused, nothing changed
	std::vector<uint64_t> lk, rk;
	for (uint64_t i = 0; i < 7; i++) {
		lk.push_back(i);
		rk.push_back(100 + i);
	}
	nbuf x = leaf_of(lk, true, 0, false, 100);
	nbuf y = leaf_of(rk, false, 100, true, 0);
	nbuf x0(x), y0(y);
	assert_false(x.v.absorb(y.v, 100));
	assert_int_equal(0, std::memcmp(x.v.data(), x0.v.data(), small));
	assert_int_equal(0, std::memcmp(y.v.data(), y0.v.data(), small));
	// exactly full is fine
	rk.pop_back();
	rk.pop_back();
	nbuf y2 = leaf_of(rk, false, 100, true, 0);
	assert_true(x.v.absorb(y2.v, 100));
	assert_int_equal(x.h().count, x.v.capacity());
	assert_true(sealed_ok(x));
}

void test_absorb_internal(void **)
{
	const uint64_t L0 = DSMEM_GADDR(3, 1, 0x10000), R0 = DSMEM_GADDR(4, 1, 0x10000);
	const uint32_t cap = node_capacity(small);
	// the parent's separator between them is right's low fence
	nbuf l = internal_of(L0, seps_from(200, 3, 100, L0), false, 100, false, 1000);
	nbuf r = internal_of(R0, seps_from(1100, 4, 100, R0), false, 1000, false, 2000);
	nbuf lo(l), ro(r);

	r.h().sibling = 0x4242;
	assert_true(l.v.absorb(r.v, 1000));
	// the separator comes down with right's leftmost child
	assert_int_equal(l.h().count, 3 + 4 + 1);
	assert_true(l.v.child_for(1000) == R0);
	assert_true(l.v.child_for(1099) == R0);
	assert_int_equal(l.h().high, 2000);
	assert_true(l.h().sibling == 0x4242);
	assert_ascending(l);
	std::vector<uint64_t> keys = {100, 999, 1000, 1999};
	for (auto [k, c] : seps_from(200, 3, 100, L0))
		keys.push_back(k);
	for (auto [k, c] : seps_from(1100, 4, 100, R0))
		keys.push_back(k);
	for (uint64_t k : probes(keys)) {
		if (k < 100 || k >= 2000)
			continue;
		assert_true(l.v.child_for(k) == (k < 1000 ? lo.v.child_for(k) : ro.v.child_for(k)));
	}
	assert_true(sealed_ok(l));

	// internal absorb needs a slot for the separator too
	nbuf a = internal_of(L0, seps_from(200, 6, 10, L0), false, 100, false, 1000);
	nbuf b = internal_of(R0, seps_from(1100, cap - 6, 10, R0), false, 1000, true, 0);
	nbuf a0(a);
	assert_false(a.v.absorb(b.v, 1000));
	assert_int_equal(0, std::memcmp(a.v.data(), a0.v.data(), small));
	nbuf b2 = internal_of(R0, seps_from(1100, cap - 7, 10, R0), false, 1000, true, 0);
	assert_true(a.v.absorb(b2.v, 1000));
	assert_int_equal(a.h().count, cap);
	assert_true(a.h().flags & node_high_inf);
	assert_true(sealed_ok(a));
}

// ---- redistribution ----

void test_balance_leaf(void **)
{
	const uint32_t cap = node_capacity(small);

	// (left, right) sizes: right rich, left rich, both full, one each
	const std::pair<uint32_t, uint32_t> shapes[] = {{2, 11}, {11, 2}, {cap, cap}, {5, 1},
							{0, 7}, {7, 0}, {1, 1}};
	for (auto [nl, nr] : shapes) {
		std::vector<uint64_t> lk, rk, all;
		for (uint64_t i = 0; i < nl; i++)
			lk.push_back(10 + 3 * i);
		for (uint64_t i = 0; i < nr; i++)
			rk.push_back(500 + 7 * i);
		nbuf l = leaf_of(lk, true, 0, false, 500);
		nbuf r = leaf_of(rk, false, 500, false, 900);
		l.h().sibling = 0x100;
		r.h().sibling = 0x200;
		all = lk;
		all.insert(all.end(), rk.begin(), rk.end());

		uint64_t sep = l.v.balance_with(r.v, 500);
		uint32_t tl = l.h().count, tr = r.h().count;
		assert_int_equal(tl + tr, nl + nr);
		assert_true(tl + 1 >= tr && tr + 1 >= tl);	// even
		assert_true(tr > 0);
		assert_true(sep == r.e(0).key);
		assert_true(sep == r.h().low);
		assert_true(sep == l.h().high);
		assert_false(r.h().flags & node_low_inf);
		assert_true(l.h().flags & node_low_inf);	// the outer fences stay
		assert_int_equal(r.h().high, 900);
		assert_true(l.h().sibling == 0x100);	// links unchanged
		assert_true(r.h().sibling == 0x200);
		assert_ascending(l);
		assert_ascending(r);
		for (uint32_t i = tl; i < cap; i++)
			assert_true(l.e(i).key == 0 && l.e(i).val == 0);
		for (uint32_t i = tr; i < cap; i++)
			assert_true(r.e(i).key == 0 && r.e(i).val == 0);
		for (uint64_t k : all) {
			const nbuf &home = k < sep ? l : r;
			int i = home.v.find(k);
			assert_true(i >= 0);
			assert_int_equal(home.e(i).val, k * 10 + 1);
			assert_true(home.v.covers(k));
		}
		assert_true(sealed_ok(l));
		assert_true(sealed_ok(r));
	}
}

void test_balance_internal(void **)
{
	const uint64_t L0 = DSMEM_GADDR(3, 1, 0x10000), R0 = DSMEM_GADDR(4, 1, 0x10000);
	const uint32_t cap = node_capacity(small);
	const std::pair<uint32_t, uint32_t> shapes[] = {{1, 10}, {10, 1}, {cap, cap}, {0, 5},
							{5, 0}, {3, 4}};

	for (auto [nl, nr] : shapes) {
		auto ls = seps_from(200, nl, 50, L0), rs = seps_from(1100, nr, 50, R0);
		nbuf l = internal_of(L0, ls, false, 100, false, 1000, 1);
		nbuf r = internal_of(R0, rs, false, 1000, true, 0, 1);
		nbuf lo(l), ro(r);
		std::vector<uint64_t> keys = {100, 999, 1000};
		for (auto [k, c] : ls)
			keys.push_back(k);
		for (auto [k, c] : rs)
			keys.push_back(k);

		uint64_t sep = l.v.balance_with(r.v, 1000);
		uint32_t tl = l.h().count, tr = r.h().count;
		// one separator goes down into the pool, one comes up
		assert_int_equal(tl + tr, nl + nr);
		assert_true(tl + 1 >= tr && tr + 1 >= tl);
		assert_true(sep == l.h().high);
		assert_true(sep == r.h().low);
		assert_true(r.h().flags & node_high_inf);
		assert_int_equal(l.h().low, 100);
		assert_int_equal(l.v.find(sep), -1);
		assert_int_equal(r.v.find(sep), -1);
		if (nl != nr)
			assert_true(sep != 1000);
		for (uint64_t k : probes(keys)) {
			if (k < 100)
				continue;
			uint64_t want = k < 1000 ? lo.v.child_for(k) : ro.v.child_for(k);
			assert_true(route({&l, &r}, k) == want);
		}
		assert_true(sealed_ok(l));
		assert_true(sealed_ok(r));
	}
}

// Split, then balance, then absorb, at random: leaves and internal nodes
// keep every key's home and every route.
void test_random_restructure(void **)
{
	std::mt19937_64 rng(2024);
	const uint32_t cap = node_capacity(small);

	for (int round = 0; round < 2000; round++) {
		bool leaf = round % 2;
		uint32_t n = cap / 2 + rng() % (cap / 2 + 1);
		std::map<uint64_t, uint64_t> ents;
		while (ents.size() < n)
			ents[1 + rng() % 100000] = DSMEM_GADDR(3, 1, 8 * (1 + rng() % 100000));
		nbuf a(small);
		bool existed;
		a.v.init(leaf ? 0 : 1, true, 0, true, 0);
		a.h().leftmost = leaf ? 0 : DSMEM_GADDR(4, 1, 64);
		for (auto [k, v] : ents)
			assert_true(a.v.leaf_upsert(k, v, &existed));
		nbuf orig(a), b(small);
		std::vector<uint64_t> keys;
		for (auto [k, v] : ents)
			keys.push_back(k);
		auto same = [&](const nbuf &x, const nbuf &y) {
			for (uint64_t k : probes(keys)) {
				if (leaf) {
					const nbuf &h = x.v.covers(k) ? x : y;
					int i = h.v.find(k);
					assert_int_equal(i >= 0, ents.count(k));
					if (i >= 0)
						assert_true(h.e(i).val == ents[k]);
				} else {
					assert_true(route({&x, &y}, k) == orig.v.child_for(k));
				}
			}
			assert_true(sealed_ok(x));
			assert_true(sealed_ok(y));
		};
		uint64_t sep = a.v.split_into(b.v);
		same(a, b);
		sep = a.v.balance_with(b.v, sep);
		same(a, b);
		assert_true(a.v.absorb(b.v, sep));
		assert_int_equal(a.h().count, n);
		for (uint64_t k : probes(keys)) {
			if (leaf)
				assert_int_equal(a.v.find(k) >= 0, ents.count(k));
			else
				assert_true(a.v.child_for(k) == orig.v.child_for(k));
		}
		assert_true(a.h().flags & node_high_inf);
		assert_true(sealed_ok(a));
	}
}

// ---- out-of-line values ----

void test_blob(void **)
{
	std::mt19937 rng(5);

	for (uint32_t vs : {9u, 100u, uint32_t{DS_BTREE_VALUE_MAX}}) {
		const uint32_t slot = blob_slot(vs);
		std::vector<uint8_t> buf(slot, 0xee), val(vs);
		for (auto &c : val)
			c = static_cast<uint8_t>(rng());

		for (uint32_t len : {0u, 1u, vs / 2, vs}) {
			uint32_t got = 12345;
			const uint64_t key = 0x1122334455667788ULL + len;

			blob_seal(buf.data(), key, val.data(), len);
			const uint8_t *p = blob_check(buf.data(), vs, key, &got);
			assert_non_null(p);
			assert_int_equal(got, len);
			assert_true(p == buf.data() + sizeof(blob_header));
			assert_int_equal(0, std::memcmp(p, val.data(), len));

			// another key's blob (a stale pointer to a reused slot)
			assert_null(blob_check(buf.data(), vs, key + 1, &got));
			assert_null(blob_check(buf.data(), vs, 0, &got));

			// any flipped byte of header or value
			for (uint32_t off = 0; off < sizeof(blob_header) + len; off++) {
				buf[off] ^= 0x10;
				assert_null(blob_check(buf.data(), vs, key, &got));
				buf[off] ^= 0x10;
			}
			// bytes past the value are padding
			if (sizeof(blob_header) + len < slot) {
				buf[slot - 1] ^= 0xff;
				assert_non_null(blob_check(buf.data(), vs, key, &got));
			}
			assert_non_null(blob_check(buf.data(), vs, key, &got));
		}

		// torn: the head of one value, the tail of another of the same key
		if (vs >= 32) {
			std::vector<uint8_t> other(slot), val2(val);
			for (auto &c : val2)
				c ^= 0x3c;
			blob_seal(buf.data(), 9, val.data(), vs);
			blob_seal(other.data(), 9, val2.data(), vs);
			std::vector<uint8_t> torn(buf);
			std::memcpy(torn.data() + slot / 2, other.data() + slot / 2, slot - slot / 2);
			uint32_t got;
			assert_null(blob_check(torn.data(), vs, 9, &got));
			assert_non_null(blob_check(other.data(), vs, 9, &got));
		}

		// a length over the tree's value size, though the slot could
		// hold it (a hostile writer): refused, so no copy overruns a
		// caller's buffer of value_size bytes
		std::vector<uint8_t> big(slot, 0), most(slot - sizeof(blob_header), 0x42);
		uint32_t got;
		blob_seal(big.data(), 3, most.data(), vs);
		assert_non_null(blob_check(big.data(), vs, 3, &got));
		if (slot - sizeof(blob_header) > vs) {
			blob_seal(big.data(), 3, most.data(), vs + 1);
			assert_null(blob_check(big.data(), vs, 3, &got));
		}
		for (uint32_t len : {vs + 1, UINT32_MAX}) {
			std::memcpy(big.data() + offsetof(blob_header, len), &len, 4);
			assert_null(blob_check(big.data(), vs, 3, &got));
		}
	}

	// never written (zeroes) is not a blob of key 0
	std::vector<uint8_t> z(64, 0);
	uint32_t got;
	assert_null(blob_check(z.data(), 64, 0, &got));
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_seed_regions),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_seal_check_flips),
		cmocka_unit_test(test_check_structure),
		cmocka_unit_test(test_leaf_upsert_remove),
		cmocka_unit_test(test_internal),
		cmocka_unit_test(test_split_leaf),
		cmocka_unit_test(test_split_internal),
		cmocka_unit_test(test_absorb_leaf),
		cmocka_unit_test(test_absorb_internal),
		cmocka_unit_test(test_balance_leaf),
		cmocka_unit_test(test_balance_internal),
		cmocka_unit_test(test_random_restructure),
		cmocka_unit_test(test_blob),
	};
	return cmocka_run_group_tests_name("dsuser_btree_layout", tests, nullptr, nullptr);
}
