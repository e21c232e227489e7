// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's node image for variable-length keys without a module
// (user/lib/btree/layout_var.hpp, "DSBK"): key order, the image's offsets
// and prefix compression, leaf edits against a model, splits with suffix
// truncation, merges and redistributions, the head-only binary search,
// seal and check against flipped bits and hostile offsets, and the
// capacity that key_max buys.
//
// Internal nodes are checked, as in test_btree_layout, by what routing
// must keep: for every probe key, the child reached through the node that
// covers the key is the child reached before the change.
#include <algorithm>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "btree/layout_var.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::btree;

namespace {

using seps_t = std::vector<std::pair<std::string, uint64_t>>;

// A node buffer: node_size bytes, 8-aligned, filled with garbage so that
// init() is seen to clear what it must.
struct vbuf {
	std::vector<uint64_t> words;
	vnode_view v;

	explicit vbuf(uint32_t size, uint8_t fill = 0xcc)
		: words((size + 7) / 8), v(words.data(), size)
	{
		std::memset(words.data(), fill, words.size() * 8);
	}
	vbuf(const vbuf &o) : words(o.words), v(words.data(), o.v.size()) {}
	vbuf &operator=(const vbuf &) = delete;
	node_header &h() const { return v.hdr(); }
	uint8_t *b() const { return v.data(); }
};

std::string hex(const std::string &s)
{
	std::string o;
	char t[4];

	for (unsigned char c : s) {
		std::snprintf(t, sizeof(t), "%02x", c);
		o += t;
	}
	return o.empty() ? "(empty)" : o;
}

std::string rep(uint8_t c, uint32_t n)
{
	return std::string(n, static_cast<char>(c));
}

uint64_t child(uint32_t i)
{
	return DSMEM_GADDR(3, 1, 0x10000 + 64ull * i);	// nodes are 64-byte aligned
}

bool sealed_ok(const vbuf &n, const char **why = nullptr)
{
	n.v.seal();
	return n.v.check(why);
}

void assert_sealed_ok(const vbuf &n)
{
	const char *why = nullptr;

	if (!sealed_ok(n, &why))
		fail_msg("check: %s", why);
}

// A leaf with the given keys (value: the key's length * 1000 + its first byte)
uint64_t val_of(const std::string &k)
{
	return k.size() * 1000 + (k.empty() ? 0 : static_cast<uint8_t>(k[0]));
}

vbuf leaf_of(uint32_t size, uint8_t km, const std::vector<std::string> &keys,
	     bool low_inf = true, const std::string &low = "", bool high_inf = true,
	     const std::string &high = "")
{
	vbuf n(size);
	bool existed;

	n.v.init(0, km, low_inf, low, high_inf, high);
	for (const auto &k : keys) {
		if (!n.v.leaf_upsert(k, val_of(k), &existed))
			fail_msg("upsert %s", hex(k).c_str());
	}
	return n;
}

vbuf internal_of(uint32_t size, uint8_t km, uint64_t leftmost, const seps_t &seps,
		 bool low_inf = true, const std::string &low = "", bool high_inf = true,
		 const std::string &high = "", uint8_t level = 1)
{
	vbuf n(size);

	n.v.init(level, km, low_inf, low, high_inf, high);
	n.h().leftmost = leftmost;
	for (const auto &[k, c] : seps) {
		if (!n.v.internal_insert(k, c))
			fail_msg("insert %s", hex(k).c_str());
	}
	return n;
}

// Random keys that share prefixes, with 0x00 and 0xff bytes in them.
std::string rkey(std::mt19937_64 &rng, uint32_t key_max, const std::string &base = "")
{
	static const std::string stems[] = {"", "user:", "user:alice/", "user:bob/",
					    "user:bob/x", std::string(2, '\0'), "\xff\xff\xff"};
	static const uint8_t alpha[] = {0x00, 0x01, 'a', 'b', 'c', 0x7f, 0xfe, 0xff};
	const uint32_t len = std::max<uint32_t>(1 + rng() % key_max, base.size());
	std::string k = base + stems[rng() % 7];

	while (k.size() < len)
		k.push_back(static_cast<char>(alpha[rng() % 8]));
	k.resize(std::min<size_t>(len, key_max));
	return k;
}

// Probe keys around every interesting key: itself, one byte longer (0x00
// and 0xff), one byte shorter, its last byte one up and one down.
std::vector<std::string> probes(const std::vector<std::string> &keys)
{
	std::vector<std::string> p = {"", std::string(1, '\0'), "\xff", rep(0xff, 255)};

	for (const auto &k : keys) {
		p.push_back(k);
		p.push_back(k + std::string(1, '\0'));
		p.push_back(k + "\xff");
		if (!k.empty()) {
			p.push_back(k.substr(0, k.size() - 1));
			std::string d = k, u = k;
			if (static_cast<uint8_t>(d.back()) > 0) {
				d.back() = static_cast<char>(d.back() - 1);
				p.push_back(d);
			}
			if (static_cast<uint8_t>(u.back()) < 0xff) {
				u.back() = static_cast<char>(u.back() + 1);
				p.push_back(u);
			}
		}
	}
	return p;
}

// The child each probe key reaches through a row of internal siblings
// (the one whose fences cover it).
uint64_t route(const std::vector<const vbuf *> &row, const std::string &k)
{
	for (const vbuf *n : row) {
		if (n->v.covers(k))
			return n->v.child_for(k);
	}
	fail_msg("no node covers %s", hex(k).c_str());
	return 0;
}

// What a node of these fences and keys takes, by the format's rule.
uint32_t expect_bytes(bool li, const std::string &lo, bool hi, const std::string &hk,
		      const std::vector<std::string> &keys)
{
	uint32_t p = 0, b;

	if (!li && !hi) {
		while (p < lo.size() && p < hk.size() && lo[p] == hk[p])
			p++;
	}
	b = 64 + 16 * keys.size() + p + (li ? 0 : lo.size() - p) + (hi ? 0 : hk.size() - p);
	for (const auto &k : keys)
		b += k.size() - p;
	return b;
}

// ---- key order and the image's constants ----

void test_kcmp_order(void **)
{
	// ascending: the shorter first on a common prefix, bytes unsigned
	const std::vector<std::string> asc = {
		std::string("\x00", 1), std::string("\x00\x00", 2), std::string("\x00\x01", 2),
		"\x01", "a", std::string("a\x00", 2), "a\x01", "ab", "abc", "ab\x7f",
		"ab\x80", "b", "\x7f", "\x80", "\xfe\xff\xff", "\xff", std::string("\xff\x00", 2),
		"\xff\xff", rep(0xff, 255)};
	for (size_t i = 0; i < asc.size(); i++) {
		assert_int_equal(kcmp(asc[i], asc[i]), 0);
		for (size_t j = i + 1; j < asc.size(); j++) {
			if (!(kcmp(asc[i], asc[j]) < 0 && kcmp(asc[j], asc[i]) > 0))
				fail_msg("%s !< %s", hex(asc[i]).c_str(), hex(asc[j]).c_str());
		}
	}
	// the empty key sorts first; kcmp takes null pointers with no bytes
	assert_int_equal(kcmp(kref(), kref()), 0);
	assert_true(kcmp(kref(), std::string("\x00", 1)) < 0);

	// heads: big-endian, zero padded; differing heads order as the keys
	assert_int_equal(vhead(std::string("\x01\x02", 2)), 0x01020000u);
	assert_int_equal(vhead(std::string("\xff\xfe\xfd\xfc\xfb", 5)), 0xfffefdfcu);
	assert_int_equal(vhead(kref()), 0u);
	std::mt19937_64 rng(11);
	for (int i = 0; i < 20000; i++) {
		std::string a = rkey(rng, 8), b = rkey(rng, 8);
		int c = kcmp(a, b);
		// std::string compares as unsigned bytes too (char_traits)
		assert_int_equal(c < 0, a < b);
		assert_int_equal(c == 0, a == b);
		uint32_t ha = vhead(a), hb = vhead(b);
		if (ha != hb)
			assert_int_equal(ha < hb, c < 0);
		else if (a.size() >= 4 && b.size() >= 4)
			assert_true(a.compare(0, 4, b, 0, 4) == 0);
	}
}

void test_layout_constants(void **)
{
	const uint8_t dsbk[4] = {'D', 'S', 'B', 'K'};

	assert_int_equal(std::memcmp(&vnode_magic, dsbk, 4), 0);
	assert_int_equal(sizeof(vnode_header), 64);
	assert_int_equal(offsetof(vnode_header, lock), 0);
	assert_int_equal(offsetof(vnode_header, sum), 8);
	assert_int_equal(offsetof(vnode_header, version), 16);
	assert_int_equal(offsetof(vnode_header, level), 24);
	assert_int_equal(offsetof(vnode_header, flags), 25);
	assert_int_equal(offsetof(vnode_header, count), 26);
	assert_int_equal(offsetof(vnode_header, magic), 28);
	assert_int_equal(offsetof(vnode_header, prefix_len), 32);
	assert_int_equal(offsetof(vnode_header, key_max), 33);
	assert_int_equal(offsetof(vnode_header, heap_top), 34);
	assert_int_equal(offsetof(vnode_header, low_off), 36);
	assert_int_equal(offsetof(vnode_header, low_len), 38);
	assert_int_equal(offsetof(vnode_header, high_off), 40);
	assert_int_equal(offsetof(vnode_header, high_len), 42);
	assert_int_equal(offsetof(vnode_header, sibling), 48);
	assert_int_equal(offsetof(vnode_header, leftmost), 56);
	assert_int_equal(sizeof(vslot), 16);
	assert_int_equal(offsetof(vslot, off), 8);
	assert_int_equal(offsetof(vslot, len), 10);
	assert_int_equal(offsetof(vslot, flags), 11);
	assert_int_equal(offsetof(vslot, head), 12);
	assert_int_equal(vnode_slots_max(256), 12);
	assert_int_equal(vnode_slots_max(4096), 252);

	// one image by hand: fences "apple" and "apricot" share "ap"
	vbuf n(256);
	bool existed;
	n.v.init(0, 16, false, "apple", false, "apricot");
	assert_true(n.v.leaf_upsert("applesauce", 7, &existed));
	n.h().version = 5;
	n.v.seal();
	const uint8_t *b = n.b();
	assert_int_equal(b[32], 2);		// prefix_len
	assert_int_equal(b[33], 16);		// key_max
	uint16_t top, lo_off, hi_off;
	std::memcpy(&top, b + 34, 2);
	std::memcpy(&lo_off, b + 36, 2);
	std::memcpy(&hi_off, b + 40, 2);
	// from the end down: "ap", "ple", "ricot", "plesauce"
	assert_int_equal(top, 256 - 2 - 3 - 5 - 8);
	assert_int_equal(std::memcmp(b + 254, "ap", 2), 0);
	assert_int_equal(lo_off, 251);
	assert_int_equal(b[38], 3);
	assert_int_equal(std::memcmp(b + lo_off, "ple", 3), 0);
	assert_int_equal(hi_off, 246);
	assert_int_equal(b[42], 5);
	assert_int_equal(std::memcmp(b + hi_off, "ricot", 5), 0);
	const vslot &s = n.v.slots()[0];
	assert_int_equal(s.val, 7);
	assert_int_equal(s.off, top);
	assert_int_equal(s.len, 8);
	assert_int_equal(s.flags, 0);
	assert_int_equal(s.head, 0x706c6573u);	// "ples"
	assert_int_equal(std::memcmp(b + top, "plesauce", 8), 0);
	// the sum: checksum() of header [16, 64) ‖ the slot ‖ the heap
	std::vector<uint8_t> cat(b + 16, b + 64 + 16);
	cat.insert(cat.end(), b + top, b + 256);
	assert_true(n.h().sum == checksum(cat.data(), cat.size()));
	assert_int_equal(n.v.used_bytes(), 64 + 16 + 256 - top);
	assert_true(n.v.check());
}

// ---- init, fences ----

void test_init_garbage(void **)
{
	vbuf n(1024, 0xcc);

	n.h().version = 77;	// in the garbage: init keeps it
	n.v.init(0, 32, false, "apple", false, "apricot");
	assert_int_equal(n.h().version, 77);
	assert_int_equal(n.h().lock, 0);
	assert_int_equal(n.h().sibling, 0);
	assert_int_equal(n.h().leftmost, 0);
	assert_int_equal(n.h().count, 0);
	assert_int_equal(n.h().flags, 0);
	assert_int_equal(n.h().level, 0);
	assert_int_equal(n.h().magic, vnode_magic);
	assert_int_equal(n.v.key_max(), 32);
	assert_int_equal(n.v.prefix_len(), 2);
	assert_true(n.v.low() == "apple");
	assert_true(n.v.high() == "apricot");
	assert_true(n.v.leaf());
	// everything but the header's fields and the heap is zero
	for (uint32_t i = 43; i < 48; i++)
		assert_int_equal(n.b()[i], 0);
	for (uint32_t i = 64; i < n.v.heap_top(); i++)
		assert_int_equal(n.b()[i], 0);
	assert_int_equal(n.v.used_bytes(), 64 + 2 + 3 + 5);
	assert_sealed_ok(n);

	// the fences
	assert_false(n.v.covers(""));
	assert_false(n.v.covers("a"));
	assert_false(n.v.covers("ap"));		// shorter than the prefix
	assert_false(n.v.covers("appla"));
	assert_true(n.v.covers("apple"));
	assert_true(n.v.covers(std::string("apple\x00", 6)));
	assert_true(n.v.covers("apq"));
	assert_true(n.v.covers("apricos\xff"));
	assert_false(n.v.covers("apricot"));
	assert_false(n.v.right_of("appla"));	// left of the node is not "right of"
	assert_true(n.v.right_of("apricot"));
	assert_true(n.v.right_of(std::string("apricot\x00", 8)));
	assert_true(n.v.right_of("aq"));
	assert_true(n.v.right_of("b"));
	assert_int_equal(n.v.lower_bound("a"), 0);
	assert_int_equal(n.v.lower_bound("b"), 0);
	assert_int_equal(n.v.find("apple"), -1);

	// infinite fences, then one of each; levels
	vbuf m(512, 0x5a);
	m.v.init(2, 64, true, "ignored", true, "ignored");
	assert_int_equal(m.h().flags, node_low_inf | node_high_inf);
	assert_int_equal(m.v.prefix_len(), 0);
	assert_int_equal(m.v.heap_top(), 512);
	assert_false(m.v.leaf());
	assert_true(m.v.covers(""));
	assert_true(m.v.covers(rep(0xff, 255)));
	assert_false(m.v.right_of(rep(0xff, 255)));
	m.h().leftmost = child(1);
	assert_sealed_ok(m);
	m.v.init(0, 64, false, "m", true, "");
	assert_int_equal(m.v.prefix_len(), 0);	// one fence: no prefix
	assert_false(m.v.covers("l\xff"));
	assert_true(m.v.covers("m"));
	assert_true(m.v.covers(rep(0xff, 200)));
	assert_sealed_ok(m);
	// init from the node's own bytes (its low fence "m", at low_off)
	uint16_t lo_off;
	std::memcpy(&lo_off, m.b() + offsetof(vnode_header, low_off), 2);
	m.v.init(1, 64, false, kref(m.b() + lo_off, 1), true, "");
	assert_true(m.v.low() == "m");
	m.v.init(0, 64, true, "", false, "m");
	assert_true(m.v.covers(""));
	assert_true(m.v.covers("l\xff"));
	assert_true(m.v.right_of("m"));
	assert_sealed_ok(m);

	// a low fence that is the prefix itself ("ab" .. "ab\x80")
	m.v.init(0, 64, false, "ab", false, "ab\x80");
	assert_int_equal(m.v.prefix_len(), 2);
	assert_true(m.v.low() == "ab");
	bool existed;
	assert_true(m.v.leaf_upsert("ab", 1, &existed));	// a key of no suffix
	assert_true(m.v.leaf_upsert("ab\x7f", 2, &existed));
	assert_true(m.v.leaf_upsert(std::string("ab\x00", 3), 3, &existed));
	assert_int_equal(m.v.slots()[0].len, 0);
	assert_int_equal(m.v.find("ab"), 0);
	assert_int_equal(m.v.find(std::string("ab\x00", 3)), 1);
	assert_int_equal(m.v.find("a"), -1);
	assert_sealed_ok(m);

	// what check() refuses: never initialized, zeroes, fences in the
	// wrong order or equal, fences over key_max, key_max over the node
	vbuf g(1024, 0xcc), z(1024, 0);
	const char *why = nullptr;
	assert_false(g.v.check(&why));
	assert_non_null(why);
	assert_false(z.v.check());
	vbuf f(1024);
	f.v.init(0, 32, false, "b", false, "a");
	assert_false(sealed_ok(f, &why));
	assert_non_null(why);
	f.v.init(0, 32, false, "abc", false, "abc");
	assert_false(sealed_ok(f));
	f.v.init(0, 32, false, "abc", false, std::string("abc\0", 4));
	assert_true(sealed_ok(f));
	f.v.init(0, 4, false, "abcde", true, "");
	assert_false(sealed_ok(f));
	f.v.init(0, 4, false, "", true, "");	// an empty finite fence
	assert_false(sealed_ok(f));
	f.v.init(0, 200, true, "", true, "");	// 1024 bytes hold key_max 149
	assert_false(sealed_ok(f));
	f.v.init(0, 0, true, "", true, "");
	assert_false(sealed_ok(f));
	vbuf tiny(256);
	tiny.v.init(0, 255, false, rep('a', 255), false, rep('b', 255));	// cannot be stored
	assert_false(sealed_ok(tiny));
	assert_true(tiny.v.heap_top() == 256);
	f.v.init(height_max, 32, true, "", true, "");
	assert_false(sealed_ok(f));
}

// ---- leaves against a model ----

struct leaf_cfg {
	uint32_t size;
	uint8_t km;
	bool low_inf;
	std::string low;
	bool high_inf;
	std::string high;
	std::string base;	// every generated key starts with it
};

void test_random_vs_map(void **)
{
	const leaf_cfg cfgs[] = {
		{1024, 32, false, "user:", false, "user;", "user:"},
		{512, 24, true, "", true, "", ""},
		{4096, 255, false, "k", true, "", "k"},
		{1024, 40, false, "ab", false, "ab\x80", "ab"},
		{256, 8, true, "", false, "user:b", ""},
	};
	std::mt19937_64 rng(2024);

	for (const auto &c : cfgs) {
		vbuf n(c.size);
		std::map<std::string, uint64_t> model;
		bool existed;
		uint32_t refused = 0, full = 0;

		n.v.init(0, c.km, c.low_inf, c.low, c.high_inf, c.high);
		auto inside = [&](const std::string &k) {
			return (c.low_inf || kcmp(k, c.low) >= 0) && (c.high_inf || kcmp(k, c.high) < 0);
		};
		for (int step = 0; step < 10000; step++) {
			std::string k = rkey(rng, c.km, c.base);
			if (k.size() > c.km)
				k.resize(c.km);
			// now and then an exact key of the model
			if (!model.empty() && rng() % 4 == 0) {
				auto it = model.begin();
				std::advance(it, rng() % model.size());
				k = it->first;
			}
			if (rng() % 5 < 3) {
				uint64_t v = rng();
				std::vector<std::string> ks;
				for (auto &[mk, mv] : model)
					ks.push_back(mk);
				bool had = model.count(k);
				ks.push_back(k);
				bool fits = expect_bytes(c.low_inf, c.low, c.high_inf, c.high, ks) <= c.size;
				bool ok = n.v.leaf_upsert(k, v, &existed);
				assert_int_equal(existed, had);
				if (!inside(k)) {
					assert_false(ok);	// refused: outside the fences
					refused++;
				} else {
					assert_int_equal(ok, had || fits);
					full += !ok;
				}
				if (ok)
					model[k] = v;
			} else {
				assert_int_equal(n.v.leaf_remove(k), model.erase(k));
			}
			// the image after every edit
			assert_int_equal(n.v.count(), model.size());
			std::vector<std::string> ks;
			for (auto &[mk, mv] : model)
				ks.push_back(mk);
			assert_int_equal(n.v.used_bytes(),
					 expect_bytes(c.low_inf, c.low, c.high_inf, c.high, ks));
			assert_sealed_ok(n);
			if (step % 50 == 0 || n.v.count() < 4) {
				uint32_t i = 0;
				for (auto &[mk, mv] : model) {
					assert_true(n.v.key_at(i) == mk);
					assert_true(n.v.val_at(i) == mv);
					i++;
				}
			}
			// lookups agree with the model
			for (int q = 0; q < 4; q++) {
				std::string p = q ? rkey(rng, c.km, c.base) : k;
				auto lb = model.lower_bound(p);
				uint32_t want = static_cast<uint32_t>(std::distance(model.begin(), lb));
				assert_int_equal(n.v.lower_bound(p), want);
				int f = n.v.find(p);
				if (lb != model.end() && lb->first == p) {
					assert_int_equal(f, want);
					assert_true(n.v.val_at(f) == lb->second);
					assert_int_equal(n.v.cmp_at(f, p), 0);
				} else {
					assert_int_equal(f, -1);
				}
			}
		}
		// the model's keys filled the node more than once
		assert_true(full > 0);
		if (!c.low_inf || !c.high_inf)
			assert_true(refused > 0 || c.base.size());

		// canonical: the same keys inserted afresh, in reverse order,
		// give the same bytes
		vbuf again(c.size, 0x11);
		again.h().version = n.h().version;
		again.v.init(0, c.km, c.low_inf, c.low, c.high_inf, c.high);
		for (auto it = model.rbegin(); it != model.rend(); ++it)
			assert_true(again.v.leaf_upsert(it->first, it->second, &existed));
		n.v.seal();
		again.v.seal();
		assert_int_equal(std::memcmp(n.b(), again.b(), c.size), 0);

		// set_val and key_into
		if (n.v.count()) {
			uint8_t out[256];
			n.v.set_val(0, 0x1234);
			assert_true(n.v.val_at(0) == 0x1234);
			uint32_t len = n.v.key_into(0, out);
			assert_true(std::string(reinterpret_cast<char *>(out), len) == model.begin()->first);
			assert_false(n.v.check());	// a changed value needs a seal
			assert_sealed_ok(n);
		}
		// keys the tree must refuse: empty, over key_max
		assert_false(n.v.leaf_upsert("", 1, &existed));
		std::string over = c.base + rep('a', c.km);
		over.resize(c.km + 1u, 'a');
		assert_false(n.v.leaf_upsert(over, 1, &existed));
	}
}

// ---- splits ----

void test_split_suffix_truncation(void **)
{
	std::mt19937_64 rng(99);

	for (int round = 0; round < 300; round++) {
		const uint32_t size = round % 3 == 0 ? 512 : 1024;
		const uint8_t km = static_cast<uint8_t>(round % 3 == 0 ? 48 : 64);
		const bool bounded = round % 2;
		const std::string lo = "customer/", hi = "customer0";
		vbuf l(size);
		bool existed;
		std::map<std::string, uint64_t> model;

		l.v.init(0, km, !bounded, lo, !bounded, hi);
		// long shared prefixes: "customer/000123/orders/..."
		std::string pending;
		for (;;) {
			char id[64];
			std::snprintf(id, sizeof(id), "customer/%06u/orders/%u",
				      static_cast<unsigned>(rng() % 40), static_cast<unsigned>(rng() % 100000));
			std::string k(id);
			k += rep(static_cast<uint8_t>('a' + rng() % 3), rng() % 12);
			k.resize(std::min<size_t>(k.size(), km));
			if (model.count(k))
				continue;
			if (!l.v.leaf_upsert(k, rng(), &existed)) {
				pending = k;
				break;
			}
			model[k] = l.v.val_at(l.v.find(k));
		}
		const uint64_t S = child(777);
		l.h().sibling = S;
		l.h().version = 9;
		vbuf r(size, 0x5a);
		r.h().version = 0;
		const uint32_t before_used = l.v.used_bytes();
		std::string sep = l.v.split_into(r.v);
		assert_false(sep.empty());

		// fences chain: [low, sep) and [sep, high)
		assert_true(sep == r.v.low());
		assert_true(sep == l.v.high());
		assert_false(l.h().flags & node_high_inf);
		assert_false(r.h().flags & node_low_inf);
		assert_int_equal(!!(l.h().flags & node_low_inf), !bounded);
		assert_int_equal(!!(r.h().flags & node_high_inf), !bounded);
		if (bounded) {
			assert_true(l.v.low() == lo);
			assert_true(r.v.high() == hi);
		}
		// the sibling goes right; the caller links left to it
		assert_true(r.h().sibling == S);
		assert_true(l.h().sibling == S);
		assert_int_equal(r.h().version, 0);
		assert_int_equal(l.h().version, 9);
		assert_int_equal(r.v.key_max(), km);
		// neither half empty; bytes about even
		const uint32_t nl = l.v.count(), nr = r.v.count();
		assert_true(nl > 0 && nr > 0);
		assert_int_equal(nl + nr, model.size());
		const uint32_t ul = l.v.used_bytes(), ur = r.v.used_bytes();
		if (std::max(ul, ur) - std::min(ul, ur) > 16 + 3u * km)
			fail_msg("uneven: %u and %u of %u", ul, ur, before_used);
		// suffix truncation: left's last < sep <= right's first, and
		// sep is the shortest prefix of right's first that is
		const std::string last = l.v.key_at(nl - 1), first = r.v.key_at(0);
		assert_true(kcmp(last, sep) < 0);
		assert_true(kcmp(sep, first) <= 0);
		assert_true(first.compare(0, sep.size(), sep) == 0);
		assert_true(kcmp(sep.substr(0, sep.size() - 1), last) <= 0);
		// every key in its half, and only there
		for (auto &[k, v] : model) {
			const vbuf &home = kcmp(k, sep) < 0 ? l : r;
			const vbuf &other = kcmp(k, sep) < 0 ? r : l;
			assert_true(home.v.covers(k));
			assert_false(other.v.covers(k));
			int i = home.v.find(k);
			assert_true(i >= 0);
			assert_true(home.v.val_at(i) == v);
			assert_int_equal(other.v.find(k), -1);
		}
		assert_true(l.v.right_of(sep));
		assert_sealed_ok(l);
		assert_sealed_ok(r);

		// the key that did not fit goes in where the tree puts it
		const vbuf &into = kcmp(pending, sep) >= 0 ? r : l;
		assert_true(into.v.leaf_upsert(pending, 1, &existed));
		assert_false(existed);
		assert_sealed_ok(into);
		assert_true(into.v.leaf_remove(pending));

		// absorb undoes the split, byte for byte
		assert_true(l.v.absorb(r.v, sep));
		assert_int_equal(l.v.count(), model.size());
		assert_int_equal(l.v.used_bytes(), before_used);
		uint32_t i = 0;
		for (auto &[k, v] : model) {
			assert_true(l.v.key_at(i) == k);
			assert_true(l.v.val_at(i) == v);
			i++;
		}
		assert_int_equal(!!(l.h().flags & node_high_inf), !bounded);
		assert_true(l.h().sibling == S);
		assert_sealed_ok(l);
	}

	// a fence at the very first key: the separator is still > left's last
	vbuf n = leaf_of(256, 16, {"a", "ab", "abc", "abcd", "b"});
	vbuf r(256);
	std::string sep = n.v.split_into(r.v);
	assert_true(kcmp(n.v.key_at(n.v.count() - 1), sep) < 0);
	assert_true(sep == r.v.key_at(0).substr(0, sep.size()));
	// too few keys to split: nothing changes
	vbuf one = leaf_of(256, 16, {"x"});
	vbuf one0(one), r1(256);
	assert_true(one.v.split_into(r1.v).empty());
	assert_int_equal(std::memcmp(one.b(), one0.b(), 256), 0);
	// an internal node whose only separator is its low fence: no split
	// point leaves the left half a key range
	vbuf in = internal_of(256, 16, child(1), {{"m", child(2)}}, false, "m", true, "");
	vbuf in0(in), r2(256);
	assert_sealed_ok(in);
	in0.v.seal();
	assert_true(in.v.split_into(r2.v).empty());
	assert_int_equal(std::memcmp(in.b(), in0.b(), 256), 0);
	// with one more above it, it splits at that one
	assert_true(in.v.internal_insert("q", child(3)));
	assert_true(in.v.split_into(r2.v) == "q");
	assert_int_equal(in.v.count(), 1);
	assert_int_equal(r2.v.count(), 0);
	assert_true(r2.h().leftmost == child(3));
}

void test_internal_split_routing(void **)
{
	std::mt19937_64 rng(5);

	for (int round = 0; round < 200; round++) {
		const uint32_t size = round % 2 ? 512 : 1024;
		const uint8_t km = 32;
		const bool bounded = round % 4 < 2;
		const std::string lo = "m", hi = "t";
		seps_t seps;
		std::map<std::string, uint64_t> m;
		uint32_t ci = 1;
		uint32_t want = round % 5 == 0 ? 1 + rng() % 3 : UINT32_MAX;	// small ones too

		vbuf n(size);
		n.v.init(2, km, !bounded, lo, !bounded, hi);
		n.h().leftmost = child(0);
		while (m.size() < want) {
			std::string k = bounded ? rkey(rng, km, "m") : rkey(rng, km);
			// (separators sort after the low fence: a child's split
			// point is above the child's, and so the node's, low)
			if (bounded && !(kcmp(k, lo) > 0 && kcmp(k, hi) < 0))
				continue;
			if (m.count(k))
				continue;
			if (!n.v.internal_insert(k, child(ci)))
				break;
			m[k] = child(ci++);
		}
		vbuf orig(n);
		vbuf r(size);
		n.h().sibling = child(999);
		std::vector<std::string> keys = {lo, hi};
		for (auto &[k, c] : m)
			keys.push_back(k);

		std::string sep = n.v.split_into(r.v);
		assert_false(sep.empty());
		assert_true(sep == n.v.high());
		assert_true(sep == r.v.low());
		assert_true(m.count(sep));	// the middle key, in full
		assert_true(r.h().sibling == child(999));
		assert_int_equal(r.h().level, 2);
		assert_int_equal(!!(r.h().flags & node_high_inf), !bounded);
		if (bounded)
			assert_true(r.v.high() == hi);
		// the separator moved up: a key of neither half; its child is
		// the right half's leftmost
		assert_int_equal(n.v.count() + r.v.count(), m.size() - 1);
		if (m.size() >= 3)
			assert_true(n.v.count() > 0 && r.v.count() > 0);
		assert_int_equal(n.v.find(sep), -1);
		assert_int_equal(r.v.find(sep), -1);
		assert_true(r.h().leftmost == m[sep]);
		assert_true(r.h().leftmost == orig.v.child_for(sep));
		for (const auto &k : probes(keys)) {
			if (!orig.v.covers(k))
				continue;
			uint64_t got = route({&n, &r}, k);
			if (got != orig.v.child_for(k))
				fail_msg("%s: routed elsewhere", hex(k).c_str());
			// child_slot and child_at agree with child_for
			const vbuf &home = n.v.covers(k) ? n : r;
			assert_true(home.v.child_at(home.v.child_slot(k)) == got);
		}
		assert_sealed_ok(n);
		assert_sealed_ok(r);

		// the separator that overflowed the node goes in as the tree puts it
		for (int t = 0; t < 8; t++) {
			std::string k = bounded ? rkey(rng, km, "m") : rkey(rng, km);
			if ((bounded && !(kcmp(k, lo) > 0 && kcmp(k, hi) < 0)) || m.count(k))
				continue;
			const vbuf &into = kcmp(k, sep) >= 0 ? r : n;
			vbuf copy(into);
			assert_true(copy.v.internal_insert(k, child(5000)));
			assert_sealed_ok(copy);
			break;
		}

		// absorb, given the separator back, undoes it byte for byte
		assert_true(n.v.absorb(r.v, sep));
		assert_int_equal(n.v.count(), m.size());
		for (const auto &k : probes(keys)) {
			if (orig.v.covers(k))
				assert_true(n.v.child_for(k) == orig.v.child_for(k));
		}
		orig.h().sibling = child(999);
		orig.v.seal();
		assert_sealed_ok(n);
		assert_int_equal(std::memcmp(n.b(), orig.b(), size), 0);
	}
}

void test_internal_ops(void **)
{
	const uint64_t A = child(1), B = child(2), C = child(3), D = child(4);
	vbuf n = internal_of(512, 32, A, {{"p", D}, {"f", B}, {"k", C}});

	assert_int_equal(n.v.count(), 3);
	assert_true(n.v.key_at(0) == "f" && n.v.key_at(2) == "p");
	assert_true(n.v.child_for("") == A);
	assert_true(n.v.child_for("e\xff") == A);
	assert_true(n.v.child_for("f") == B);
	assert_true(n.v.child_for(std::string("f\x00", 2)) == B);
	assert_true(n.v.child_for("k") == C);
	assert_true(n.v.child_for("p") == D);
	assert_true(n.v.child_for(rep(0xff, 255)) == D);
	assert_int_equal(n.v.child_slot("a"), 0);
	assert_int_equal(n.v.child_slot("f"), 1);
	assert_int_equal(n.v.child_slot("g"), 1);
	assert_int_equal(n.v.child_slot("zz"), 3);
	assert_true(n.v.child_at(0) == A && n.v.child_at(3) == D);
	assert_int_equal(n.v.find("k"), 1);
	assert_int_equal(n.v.find("kk"), -1);
	assert_sealed_ok(n);

	// a retried insert of the same separator is harmless
	assert_true(n.v.internal_insert("k", C));
	assert_int_equal(n.v.count(), 3);

	// set_separator: in order or refused
	assert_true(n.v.set_separator(1, "j"));
	assert_true(n.v.child_for("j") == C);
	assert_true(n.v.child_for("i\xff") == B);
	assert_false(n.v.set_separator(1, "f"));	// equal to its left neighbour
	assert_false(n.v.set_separator(1, "q"));	// beyond its right one
	assert_false(n.v.set_separator(1, ""));
	assert_false(n.v.set_separator(1, rep('j', 33)));	// over key_max
	assert_false(n.v.set_separator(3, "z"));	// no such slot
	assert_true(n.v.key_at(1) == "j");
	assert_sealed_ok(n);

	// removing a separator hands its keys to the child on its left
	n.v.internal_remove_at(1);
	assert_int_equal(n.v.count(), 2);
	assert_true(n.v.child_for("k") == B);
	assert_true(n.v.child_for("p") == D);
	n.v.internal_remove_at(0);
	n.v.internal_remove_at(0);
	assert_int_equal(n.v.count(), 0);
	assert_true(n.v.child_for("zzz") == A);
	assert_int_equal(n.v.heap_top(), 512);
	assert_sealed_ok(n);

	// children are checked: null, misaligned, no leftmost
	vbuf c = internal_of(512, 32, A, {{"f", B}, {"k", C}});
	assert_sealed_ok(c);
	c.v.slots()[1].val = 0;
	assert_false(sealed_ok(c));
	c.v.slots()[1].val = C + 8;
	assert_false(sealed_ok(c));
	c.v.slots()[1].val = C;
	c.h().leftmost = 0;
	assert_false(sealed_ok(c));
	c.h().flags |= node_free;	// a freed node need not have one
	assert_true(sealed_ok(c));
	c.h().leftmost = A + 32;
	assert_false(sealed_ok(c));
	// a leaf's values are data: anything goes
	vbuf l = leaf_of(256, 16, {"a"});
	l.v.set_val(0, 3);
	assert_true(sealed_ok(l));
}

// ---- merges and redistribution ----

// A leaf and its right sibling around sep, from sorted keys.
std::pair<vbuf, vbuf> leaf_pair(uint32_t size, uint8_t km, const std::vector<std::string> &lk,
				const std::vector<std::string> &rk, const std::string &sep,
				const std::string &hi = "")
{
	vbuf l = leaf_of(size, km, lk, true, "", false, sep);
	vbuf r = leaf_of(size, km, rk, false, sep, hi.empty(), hi);
	l.h().sibling = child(100);
	r.h().sibling = child(200);
	return {l, r};
}

void test_absorb_and_balance(void **)
{
	std::mt19937_64 rng(17);

	// leaves: absorb takes all, the high fence and the sibling
	{
		auto [l, r] = leaf_pair(512, 32, {"apple", "banana"}, {"melon", "mango\xff"}, "m", "t");
		uint32_t want = l.v.merged_bytes(r.v, "m");
		assert_true(l.v.absorb(r.v, "m"));
		assert_int_equal(l.v.used_bytes(), want);
		assert_int_equal(l.v.count(), 4);
		assert_true(l.v.high() == "t");
		assert_true(l.h().sibling == child(200));
		assert_true(l.h().flags & node_low_inf);
		for (const char *k : {"apple", "banana", "mango\xff", "melon"})
			assert_true(l.v.find(k) >= 0);
		assert_sealed_ok(l);
	}
	// the last node: the merged node has no high fence, no sibling
	{
		auto [l, r] = leaf_pair(512, 32, {}, {"z"}, "m");
		r.h().sibling = 0;
		assert_true(l.v.absorb(r.v, "m"));
		assert_true(l.h().flags & node_high_inf);
		assert_int_equal(l.h().sibling, 0);
		assert_true(l.v.covers(rep(0xff, 255)));
		assert_sealed_ok(l);
	}
	// too big: refused, nothing changed
	{
		std::vector<std::string> lk, rk;
		for (int i = 0; i < 7; i++) {
			lk.push_back("a" + rep(static_cast<uint8_t>('a' + i), 20));
			rk.push_back("n" + rep(static_cast<uint8_t>('a' + i), 20));
		}
		auto [l, r] = leaf_pair(512, 32, lk, rk, "m");
		vbuf l0(l), r0(r);
		assert_true(l.v.merged_bytes(r.v, "m") > 512);
		assert_false(l.v.absorb(r.v, "m"));
		assert_int_equal(std::memcmp(l.b(), l0.b(), 512), 0);
		assert_int_equal(std::memcmp(r.b(), r0.b(), 512), 0);
	}

	// leaves: balance shapes (left, right): rich, poor, empty
	const std::pair<uint32_t, uint32_t> shapes[] = {{1, 12}, {12, 1}, {0, 7}, {7, 0},
							{1, 1}, {0, 1}, {1, 0}, {6, 6}};
	for (auto [nl, nr] : shapes) {
		std::vector<std::string> lk, rk;
		for (uint32_t i = 0; i < nl; i++)
			lk.push_back("key/" + std::to_string(100 + i) + "/left");
		for (uint32_t i = 0; i < nr; i++)
			rk.push_back("key/" + std::to_string(500 + i) + "/right");
		auto [l, r] = leaf_pair(512, 32, lk, rk, "key/5", "kez");
		std::vector<std::string> all = lk;
		all.insert(all.end(), rk.begin(), rk.end());

		std::string sep = l.v.balance_with(r.v, "key/5");
		assert_int_equal(l.v.count() + r.v.count(), nl + nr);
		if (nl + nr >= 2)
			assert_true(l.v.count() > 0 && r.v.count() > 0);
		assert_true(r.v.count() > 0);
		assert_true(sep == r.v.low() && sep == l.v.high());
		assert_true(l.h().flags & node_low_inf);	// the outer fences stay
		assert_true(r.v.high() == "kez");
		assert_false(r.h().flags & node_low_inf);
		assert_true(l.h().sibling == child(100));	// links unchanged
		assert_true(r.h().sibling == child(200));
		const uint32_t ul = l.v.used_bytes(), ur = r.v.used_bytes();
		assert_true(std::max(ul, ur) - std::min(ul, ur) <= 16 + 3 * 32);
		// truncated: left's last < sep <= right's first, shortest
		std::string first = r.v.key_at(0);
		assert_true(first.compare(0, sep.size(), sep) == 0);
		if (l.v.count()) {
			std::string last = l.v.key_at(l.v.count() - 1);
			assert_true(kcmp(last, sep) < 0);
			assert_true(kcmp(sep.substr(0, sep.size() - 1), last) <= 0);
		}
		for (const auto &k : all) {
			const vbuf &home = kcmp(k, sep) < 0 ? l : r;
			int i = home.v.find(k);
			assert_true(i >= 0);
			assert_true(home.v.val_at(i) == val_of(k));
			assert_true(home.v.covers(k));
		}
		assert_sealed_ok(l);
		assert_sealed_ok(r);
	}
	// nothing to move
	{
		auto [l, r] = leaf_pair(512, 32, {}, {}, "m");
		assert_true(l.v.balance_with(r.v, "m") == "m");
		assert_true(sealed_ok(l) && sealed_ok(r));
	}
	// one key, at the left's low fence: it cannot go right (left would
	// keep no key range), so nothing changes
	{
		vbuf l = leaf_of(512, 32, {"k"}, false, "k", false, "m");
		vbuf r = leaf_of(512, 32, {}, false, "m", true, "");
		vbuf l0(l), r0(r);
		assert_true(l.v.balance_with(r.v, "m") == "m");
		assert_int_equal(std::memcmp(l.b(), l0.b(), 512), 0);
		assert_int_equal(std::memcmp(r.b(), r0.b(), 512), 0);
		// one above it does
		vbuf l2 = leaf_of(512, 32, {"kz"}, false, "k", false, "m");
		vbuf r2(r0);
		assert_true(l2.v.balance_with(r2.v, "m") == "kz");
		assert_int_equal(l2.v.count(), 0);
		assert_int_equal(r2.v.find("kz"), 0);
		assert_sealed_ok(l2);
		assert_sealed_ok(r2);
	}

	// internal: absorb brings the parent's separator down with right's
	// leftmost; balance rotates through it
	{
		seps_t ls = {{"c", child(11)}, {"f", child(12)}};
		seps_t rs = {{"p", child(21)}, {"s", child(22)}, {"v", child(23)}};
		vbuf l = internal_of(512, 32, child(10), ls, true, "", false, "m");
		vbuf r = internal_of(512, 32, child(20), rs, false, "m", true, "");
		vbuf lo(l), ro(r);
		r.h().sibling = child(300);
		std::vector<std::string> keys = {"m", "c", "f", "p", "s", "v"};
		assert_true(l.v.absorb(r.v, "m"));
		assert_int_equal(l.v.count(), 6);
		assert_true(l.v.child_for("m") == child(20));
		assert_true(l.v.child_for("o") == child(20));
		assert_true(l.h().flags & node_high_inf);
		assert_true(l.h().sibling == child(300));
		for (const auto &k : probes(keys))
			assert_true(l.v.child_for(k) == (kcmp(k, "m") < 0 ? lo : ro).v.child_for(k));
		assert_sealed_ok(l);
		// a separator that cannot be a key
		vbuf l2(lo), r2(ro);
		assert_false(l2.v.absorb(r2.v, ""));
		assert_false(l2.v.absorb(r2.v, rep('m', 33)));
	}
	const std::pair<uint32_t, uint32_t> ishapes[] = {{1, 10}, {10, 1}, {0, 5}, {5, 0}, {3, 4}, {0, 0}};
	for (auto [nl, nr] : ishapes) {
		seps_t ls, rs;
		for (uint32_t i = 0; i < nl; i++)
			ls.push_back({"g/" + std::to_string(10 + i) + "/left", child(100 + i)});
		for (uint32_t i = 0; i < nr; i++)
			rs.push_back({"q/" + std::to_string(10 + i) + "/right", child(200 + i)});
		vbuf l = internal_of(512, 32, child(99), ls, false, "b", false, "m");
		vbuf r = internal_of(512, 32, child(199), rs, false, "m", true, "");
		vbuf lo(l), ro(r);
		std::vector<std::string> keys = {"b", "m"};
		for (auto &[k, c] : ls)
			keys.push_back(k);
		for (auto &[k, c] : rs)
			keys.push_back(k);

		std::string sep = l.v.balance_with(r.v, "m");
		// one separator goes down into the pool, one comes up
		assert_int_equal(l.v.count() + r.v.count(), nl + nr);
		assert_true(sep == l.v.high() && sep == r.v.low());
		assert_true(l.v.low() == "b");
		assert_true(r.h().flags & node_high_inf);
		assert_int_equal(l.v.find(sep), -1);
		assert_int_equal(r.v.find(sep), -1);
		if (nl + nr >= 2)
			assert_true(l.v.count() > 0 && r.v.count() > 0);
		for (const auto &k : probes(keys)) {
			if (kcmp(k, "b") < 0)
				continue;
			uint64_t want = (kcmp(k, "m") < 0 ? lo : ro).v.child_for(k);
			assert_true(route({&l, &r}, k) == want);
		}
		assert_sealed_ok(l);
		assert_sealed_ok(r);
	}

	// split, balance, absorb at random: every key's home, every route
	for (int round = 0; round < 400; round++) {
		const bool leaf = round % 2;
		const uint32_t size = round % 3 ? 1024 : 512;
		const uint8_t km = static_cast<uint8_t>(round % 3 ? 64 : 24);
		vbuf a(size);
		bool existed;
		std::map<std::string, uint64_t> ents;
		uint32_t ci = 1;

		a.v.init(leaf ? 0 : 1, km, true, "", true, "");
		a.h().leftmost = leaf ? 0 : child(0);
		// fill to a random level past half
		uint32_t stop = size / 2 + rng() % (size / 2);
		while (a.v.used_bytes() < stop) {
			std::string k = rkey(rng, km);
			if (ents.count(k))
				continue;
			if (!a.v.leaf_upsert(k, child(ci), &existed))
				break;
			ents[k] = child(ci++);
		}
		if (ents.size() < 3)
			continue;
		vbuf orig(a), b(size);
		std::vector<std::string> keys;
		for (auto &[k, v] : ents)
			keys.push_back(k);
		auto same = [&](const vbuf &x, const vbuf &y) {
			for (const auto &k : probes(keys)) {
				if (leaf) {
					const vbuf &h = x.v.covers(k) ? x : y;
					int i = h.v.find(k);
					assert_int_equal(i >= 0, ents.count(k));
					if (i >= 0)
						assert_true(h.v.val_at(i) == ents[k]);
				} else {
					assert_true(route({&x, &y}, k) == orig.v.child_for(k));
				}
			}
			assert_sealed_ok(x);
			assert_sealed_ok(y);
		};
		std::string sep = a.v.split_into(b.v);
		assert_false(sep.empty());
		same(a, b);
		// lopsided: move keys out of one side, then even them out
		if (leaf && rng() % 2) {
			while (b.v.count() > 1) {
				std::string k = b.v.key_at(b.v.count() - 1);
				assert_true(b.v.leaf_remove(k));
				ents.erase(k);
			}
			keys.clear();
			for (auto &[k, v] : ents)
				keys.push_back(k);
		}
		sep = a.v.balance_with(b.v, sep);
		same(a, b);
		assert_true(a.v.merged_bytes(b.v, sep) <= size);
		assert_true(a.v.absorb(b.v, sep));
		assert_int_equal(a.v.count(), ents.size());
		for (const auto &k : probes(keys)) {
			if (leaf)
				assert_int_equal(a.v.find(k) >= 0, ents.count(k));
			else
				assert_true(a.v.child_for(k) == orig.v.child_for(k));
		}
		assert_true(a.h().flags & node_high_inf);
		assert_sealed_ok(a);
	}
}

// ---- prefix compression ----

void test_prefix_compression(void **)
{
	const std::string pre = "tenant-42/users/";
	const std::vector<std::string> names = {"alice", "albert", "bob", "carol", "dave",
						"eve", "frank", "grace", "heidi", "ivan"};
	vbuf n(1024), flat(1024);
	bool existed;
	uint32_t kb = 0;

	n.v.init(0, 64, false, pre + "a", false, pre + "m");
	flat.v.init(0, 64, true, "", true, "");
	for (const auto &s : names) {
		assert_true(n.v.leaf_upsert(pre + s, s.size(), &existed));
		assert_true(flat.v.leaf_upsert(pre + s, s.size(), &existed));
		kb += s.size();
	}
	assert_int_equal(n.v.prefix_len(), pre.size());
	// the heap: the prefix once, then only what follows it
	assert_int_equal(n.v.size() - n.v.heap_top(), pre.size() + 1 + 1 + kb);
	assert_int_equal(flat.v.size() - flat.v.heap_top(), kb + names.size() * pre.size());
	std::string heap(reinterpret_cast<char *>(n.b() + n.v.heap_top()), n.v.size() - n.v.heap_top());
	size_t seen = 0;
	for (size_t at = heap.find(pre); at != std::string::npos; at = heap.find(pre, at + 1))
		seen++;
	assert_int_equal(seen, 1);
	assert_true(n.v.used_bytes() < flat.v.used_bytes());
	// decoded keys are the keys
	std::vector<std::string> sorted(names);
	std::sort(sorted.begin(), sorted.end());
	for (uint32_t i = 0; i < sorted.size(); i++) {
		assert_true(n.v.key_at(i) == pre + sorted[i]);
		assert_true(flat.v.key_at(i) == pre + sorted[i]);
		assert_int_equal(n.v.slots()[i].len, sorted[i].size());
		assert_int_equal(n.v.find(pre + sorted[i]), i);
		assert_int_equal(n.v.find(sorted[i]), -1);
	}
	assert_true(n.v.low() == pre + "a" && n.v.high() == pre + "m");
	assert_sealed_ok(n);
	assert_sealed_ok(flat);
	// lookups that leave the prefix early
	assert_int_equal(n.v.lower_bound("tenant-41"), 0);
	assert_int_equal(n.v.lower_bound("tenant-42"), 0);
	assert_int_equal(n.v.lower_bound("tenant-43"), names.size());
	assert_int_equal(n.v.lower_bound(pre + "b"), 2);
	// a key that is a prefix of the prefix, with 0xff bytes after it in
	// memory: none of them may be read
	std::string mem = pre.substr(0, 9) + rep(0xff, 16);
	assert_int_equal(n.v.lower_bound(kref(reinterpret_cast<const uint8_t *>(mem.data()), 9)), 0);
	assert_int_equal(n.v.child_slot(kref(reinterpret_cast<const uint8_t *>(mem.data()), 9)), 0);
	assert_int_equal(n.v.find(kref(reinterpret_cast<const uint8_t *>(mem.data()), 9)), -1);
	assert_false(n.v.covers(kref(reinterpret_cast<const uint8_t *>(mem.data()), 9)));
	assert_false(n.v.right_of(kref(reinterpret_cast<const uint8_t *>(mem.data()), 9)));

	// a split lengthens the halves' prefixes, a merge shortens it back
	vbuf r(1024);
	std::string sep = n.v.split_into(r.v);
	assert_true(n.v.prefix_len() >= pre.size());
	assert_true(r.v.prefix_len() >= pre.size());
	assert_true(n.v.absorb(r.v, sep));
	assert_int_equal(n.v.prefix_len(), pre.size());
	assert_sealed_ok(n);
}

// ---- the binary search reads heads only ----

void test_head_compare_only(void **)
{
	std::mt19937_64 rng(8);
	const std::string pre = "pp";
	vbuf n(2048);
	bool existed;
	std::map<std::string, uint64_t> m;
	std::map<uint32_t, std::string> heads;

	n.v.init(0, 32, false, pre + std::string(1, '\0'), false, pre + "\xff");
	while (m.size() < 40) {
		// a distinct head, then a tail, so keys are longer than heads
		std::string k = pre;
		for (int i = 0; i < 4; i++)
			k.push_back(static_cast<char>(rng() % 255));
		if (k[2] == 0)
			continue;
		k += rep(static_cast<uint8_t>(rng()), 1 + rng() % 20);
		uint32_t hd = vhead(kref(k).from(2));
		if (heads.count(hd))
			continue;
		heads[hd] = k;
		assert_true(n.v.leaf_upsert(k, hd, &existed));
		m[k] = hd;
	}
	assert_sealed_ok(n);

	// Poison every key's heap bytes but the target's past its head: a
	// key below the target reads as 0xff..., one above as 0x00..., the
	// target's own head bytes are flipped.  Reading any of them would
	// misplace the target.  The fences are poisoned too; the prefix stays.
	auto poisoned = [&](const std::string &target) {
		vbuf p(n);
		for (uint32_t i = 0; i < p.v.count(); i++) {
			const vslot &s = p.v.slots()[i];
			std::string k = n.v.key_at(i);
			uint8_t *b = p.b() + s.off;
			if (k == target) {
				for (uint32_t j = 0; j < 4; j++)
					b[j] ^= 0xff;
				continue;
			}
			std::memset(b, kcmp(k, target) < 0 ? 0xff : 0x00, s.len);
		}
		uint16_t off;
		std::memcpy(&off, p.b() + offsetof(vnode_header, low_off), 2);
		p.b()[off] ^= 0x55;
		std::memcpy(&off, p.b() + offsetof(vnode_header, high_off), 2);
		p.b()[off] ^= 0x55;
		return p;
	};
	uint32_t i = 0;
	for (auto &[k, v] : m) {
		vbuf p = poisoned(k);
		assert_false(p.v.check());	// it is poison
		assert_int_equal(p.v.find(k), i);
		assert_int_equal(p.v.lower_bound(k), i);
		assert_int_equal(p.v.child_slot(k), i + 1);
		assert_true(p.v.val_at(i) == v);
		// keys of the target's head but other tails: read the target's
		// tail only
		std::string longer = k + "x", shorter = k.substr(0, 6), other = k;
		other.back() = static_cast<char>(other.back() ^ 1);
		assert_int_equal(p.v.find(longer), -1);
		assert_int_equal(p.v.lower_bound(longer), i + 1);
		assert_int_equal(p.v.find(shorter), -1);
		assert_int_equal(p.v.lower_bound(shorter), i);
		assert_int_equal(p.v.find(other), -1);
		assert_int_equal(p.v.lower_bound(other), kcmp(other, k) < 0 ? i : i + 1);
		i++;
	}
	// absent keys whose heads no key has: no heap byte but the prefix read
	vbuf all(n);
	for (uint32_t j = 0; j < all.v.count(); j++) {
		const vslot &s = all.v.slots()[j];
		std::memset(all.b() + s.off, 0xa5, s.len);
	}
	for (int t = 0; t < 2000; t++) {
		std::string k = pre;
		for (int j = 0; j < 4 + static_cast<int>(rng() % 6); j++)
			k.push_back(static_cast<char>(rng()));
		if (heads.count(vhead(kref(k).from(2))))
			continue;
		uint32_t want = static_cast<uint32_t>(std::distance(m.begin(), m.lower_bound(k)));
		assert_int_equal(all.v.lower_bound(k), want);
		assert_int_equal(all.v.find(k), -1);
	}
}

// ---- seal and check ----

void test_every_bit_flip_caught(void **)
{
	std::vector<vbuf> nodes;

	nodes.push_back(leaf_of(256, 8, {"a", "abc", "b\xff", std::string("c\x00", 2)}, false,
				std::string("\x00", 1), false, "d"));
	nodes.push_back(leaf_of(1024, 40, {"user:alice/x", "user:bob/y", "user:bob/yy", "user:carol"},
				false, "user:", false, "user;"));
	nodes.push_back(internal_of(512, 32, child(1), {{"f", child(2)}, {std::string("k\0m", 3), child(3)}},
				    true, "", false, "zz", 3));
	for (auto &n : nodes) {
		const uint32_t size = n.v.size();
		n.h().sibling = child(50);
		n.h().version = 3;
		n.v.seal();
		assert_true(n.v.check());

		// the header from the sum on, the slots in use, the heap
		std::vector<uint32_t> offs;
		for (uint32_t o = 8; o < 64 + 16 * n.v.count(); o++)
			offs.push_back(o);
		for (uint32_t o = n.v.heap_top(); o < size; o++)
			offs.push_back(o);
		uint32_t flips = 0;
		for (uint32_t o : offs) {
			for (int bit = 0; bit < 8; bit++) {
				const char *why = nullptr;
				n.b()[o] ^= 1 << bit;
				if (n.v.check(&why))
					fail_msg("bit %d of byte %u not caught", bit, o);
				assert_non_null(why);
				n.b()[o] ^= 1 << bit;
				flips++;
			}
		}
		assert_int_equal(flips, 8 * offs.size());
		assert_true(n.v.check());

		// not covered, by design: the lock word (a locked node reads as
		// valid) and the free space between slots and heap, which no
		// lookup reads (writers zero it, and the sum of every byte of
		// the node would cost time for nothing)
		n.h().lock = 0xdeadbeefcafe;
		assert_true(n.v.check());
		n.h().lock = 0;
		for (uint32_t o = 64 + 16 * n.v.count(); o < n.v.heap_top(); o++) {
			n.b()[o] ^= 0xff;
			assert_true(n.v.check());
			n.b()[o] ^= 0xff;
		}

		// torn: the front of one version, the rear of the next
		vbuf newer(n);
		bool existed;
		assert_true(newer.v.leaf_upsert(std::string(n.v.key_at(0)) + "!", child(60), &existed));
		newer.h().version++;
		newer.v.seal();
		assert_true(newer.v.check());
		for (uint32_t tear : {48u, 64u + 8u, size / 2, size - 4}) {
			vbuf t1(n), t2(newer);
			std::memcpy(t1.b() + tear, newer.b() + tear, size - tear);
			std::memcpy(t2.b() + tear, n.b() + tear, size - tear);
			if (std::memcmp(t1.b(), newer.b(), size) && std::memcmp(t1.b(), n.b(), size))
				assert_false(t1.v.check());
			if (std::memcmp(t2.b(), newer.b(), size) && std::memcmp(t2.b(), n.b(), size))
				assert_false(t2.v.check());
		}
	}
}

// A valid node to corrupt: both fences, a prefix ("user"), keys of 1 to 9
// bytes past it.  From the end of the node down: "user" at 508, the
// fences' ":" at 507 and ";" at 506, the keys' ":" at 505, ":\x01" at 503,
// ":abcdefgh" at 494, ":z" at 492.
vbuf victim()
{
	vbuf n = leaf_of(512, 32, {"user:", "user:\x01", "user:abcdefgh", "user:z"}, false, "user:",
			 false, "user;");
	assert_int_equal(n.v.prefix_len(), 4);
	assert_int_equal(n.v.heap_top(), 492);
	return n;
}

void test_corrupt_offsets_safe(void **)
{
	struct corruption {
		const char *what;
		void (*apply)(vbuf &);
	};
	static const corruption cs[] = {
		{"slot off past the node", [](vbuf &n) { n.v.slots()[2].off = 510; }},
		{"slot off 0xffff", [](vbuf &n) { n.v.slots()[2].off = 0xffff; }},
		{"slot off into the slots", [](vbuf &n) { n.v.slots()[1].off = 64; }},
		{"slot off into the header", [](vbuf &n) { n.v.slots()[1].off = 8; }},
		{"slot len 255", [](vbuf &n) { n.v.slots()[2].len = 255; }},
		{"key below the low fence", [](vbuf &n) {
			 n.b()[505] = '9';
			 n.v.slots()[0].head = vhead(kref(n.b() + 505, 1));
		 }},
		{"key at the high fence", [](vbuf &n) {
			 n.b()[492] = ';';
			 n.v.slots()[3].head = vhead(kref(n.b() + 492, 2));
		 }},
		{"slot flags", [](vbuf &n) { n.v.slots()[0].flags = 1; }},
		{"slot head", [](vbuf &n) { n.v.slots()[2].head ^= 1; }},
		{"slots swapped", [](vbuf &n) { std::swap(n.v.slots()[1], n.v.slots()[2]); }},
		{"slots equal", [](vbuf &n) { n.v.slots()[2] = n.v.slots()[1]; }},
		{"count huge", [](vbuf &n) { n.h().count = 0xffff; }},
		{"count one over capacity", [](vbuf &n) { n.h().count = vnode_slots_max(512) + 1; }},
		{"count over the heap", [](vbuf &n) { n.h().count = vnode_slots_max(512); }},
		{"count one more", [](vbuf &n) { n.h().count++; }},
		{"heap_top 0", [](vbuf &n) { uint16_t v = 0; std::memcpy(n.b() + 34, &v, 2); }},
		{"heap_top 63", [](vbuf &n) { uint16_t v = 63; std::memcpy(n.b() + 34, &v, 2); }},
		{"heap_top past the node", [](vbuf &n) { uint16_t v = 513; std::memcpy(n.b() + 34, &v, 2); }},
		{"heap_top 0xffff", [](vbuf &n) { uint16_t v = 0xffff; std::memcpy(n.b() + 34, &v, 2); }},
		{"heap_top above the keys", [](vbuf &n) { uint16_t v = 500; std::memcpy(n.b() + 34, &v, 2); }},
		{"prefix 255", [](vbuf &n) { n.b()[32] = 255; }},
		{"prefix past the heap", [](vbuf &n) { n.b()[32] = 30; }},
		{"prefix not all the fences share", [](vbuf &n) { n.b()[507] = ';'; }},
		{"prefix with an infinite fence", [](vbuf &n) {
			 n.h().flags |= node_high_inf;
			 std::memset(n.b() + 40, 0, 3);
		 }},
		{"key_max 0", [](vbuf &n) { n.b()[33] = 0; }},
		{"key_max 255 in 512 bytes", [](vbuf &n) { n.b()[33] = 255; }},
		{"key_max under a key", [](vbuf &n) { n.b()[33] = 12; }},
		{"low fence off 0xffff", [](vbuf &n) { uint16_t v = 0xffff; std::memcpy(n.b() + 36, &v, 2); }},
		{"low fence len 255", [](vbuf &n) { n.b()[38] = 255; }},
		{"high fence off 0", [](vbuf &n) { uint16_t v = 0; std::memcpy(n.b() + 40, &v, 2); }},
		{"high fence len 200", [](vbuf &n) { n.b()[42] = 200; }},
		{"high fence below low", [](vbuf &n) { n.b()[506] = '9'; }},
		{"reserved", [](vbuf &n) { n.b()[39] = 1; }},
		{"reserved 2", [](vbuf &n) { n.b()[47] = 1; }},
		{"low infinite with bytes", [](vbuf &n) { n.h().flags |= node_low_inf; }},
		{"high infinite with bytes", [](vbuf &n) { n.h().flags |= node_high_inf; }},
		{"level", [](vbuf &n) { n.h().level = height_max; }},
		{"internal without children", [](vbuf &n) { n.h().level = 1; }},
	};
	for (const auto &c : cs) {
		vbuf n = victim();
		const char *why = nullptr;
		assert_sealed_ok(n);
		c.apply(n);
		n.v.seal();	// past the sum: the structure must say it
		if (n.v.check(&why))
			fail_msg("%s: accepted", c.what);
		assert_non_null(why);
		// and unsealed, the same
		vbuf m = victim();
		m.v.seal();
		c.apply(m);
		assert_false(m.v.check());
	}
	// fences that share more than the prefix (no key to trip over
	// first): low ":" turned ";", high ";x", under the prefix "user"
	{
		vbuf n = leaf_of(512, 32, {}, false, "user:", false, "user;x");
		const char *why = nullptr;
		assert_int_equal(n.v.prefix_len(), 4);
		assert_sealed_ok(n);
		uint16_t off;
		std::memcpy(&off, n.b() + offsetof(vnode_header, low_off), 2);
		n.b()[off] = ';';
		n.v.seal();
		assert_false(n.v.check(&why));
		assert_string_equal(why, "prefix not the fences' common prefix");
	}
	// bad magic, even with a sum over it
	{
		vbuf n = victim();
		n.v.seal();
		n.h().magic = node_magic;	// a DSBN image is not a DSBK one
		assert_false(n.v.check());
	}
	// a view of a size no tree has
	{
		vbuf n = victim();
		n.v.seal();
		vnode_view small(n.b(), 128);
		assert_false(small.check());
	}

	// fuzz: random bytes changed, resealed or not; check() must not read
	// outside the node (run under valgrind or ASan), and what it accepts
	// must be searchable
	std::mt19937_64 rng(1);
	uint32_t accepted = 0;
	for (int t = 0; t < 30000; t++) {
		vbuf n = t % 2 ? victim()
			       : internal_of(512, 32, child(1), {{"kk", child(2)}, {"kkabcdefgh", child(3)}},
					     false, "kk", false, "kl");
		int changes = 1 + rng() % 4;
		for (int j = 0; j < changes; j++) {
			uint32_t o = rng() % (rng() % 2 ? 64 : n.v.size());
			n.b()[o] = static_cast<uint8_t>(rng() % 3 ? rng() : (rng() % 2 ? 0 : 0xff));
		}
		if (rng() % 4)
			n.v.seal();
		if (!n.v.check())
			continue;
		accepted++;
		for (uint32_t i = 0; i < n.v.count(); i++) {
			std::string k = n.v.key_at(i);
			assert_int_equal(n.v.find(k), i);
			assert_true(n.v.covers(k));
		}
		(void)n.v.low();
		(void)n.v.high();
	}
	assert_true(accepted > 0);	// (values and versions change freely)
}

// ---- capacity ----

void test_capacity(void **)
{
	struct expect {
		uint32_t km, min_size;
	};
	const expect ex[] = {{8, 256}, {21, 256}, {22, 512}, {32, 512}, {64, 512},
			     {65, 1024}, {128, 1024}, {149, 1024}, {150, 2048}, {255, 2048}};

	for (auto [km, want] : ex) {
		if (vnode_min_size(km) != want)
			fail_msg("key_max %u: %u, not %u", km, vnode_min_size(km), want);
		assert_true(vnode_fits(want, km));
		if (want > vnode_size_min)
			assert_false(vnode_fits(want / 2, km));
		// the exact bound: header, two fences, four slots and keys
		uint32_t exact = 64 + 2 * km + 4 * (16 + km);
		assert_int_equal(vnode_worst_bytes(km, 4), exact);
		if (exact >= vnode_size_min) {
			assert_true(vnode_fits(exact, km));
			assert_false(vnode_fits(exact - 1, km));
		}
	}
	assert_false(vnode_fits(4096, 0));
	assert_false(vnode_fits(4096, 256));
	assert_false(vnode_fits(128, 8));
	assert_false(vnode_fits(8192, 8));
	assert_int_equal(vnode_min_size(0), 0);
	assert_int_equal(vnode_min_size(256), 0);
	assert_int_equal(vnode_min_size(672), 0);

	std::mt19937_64 rng(3);
	for (uint32_t km : {8u, 32u, 64u, 128u, 255u}) {
		// the worst node: fences of key_max bytes with nothing in
		// common, keys of key_max bytes
		const std::string lo = rep(0x01, km), hi = rep(0xfe, km);
		auto worst_key = [&](uint32_t i) {
			std::string k = rep(static_cast<uint8_t>(0x10 + i), km);
			return k;
		};
		auto fill = [&](uint32_t size) {
			vbuf n(size);
			bool existed;
			uint32_t i = 0;
			n.v.init(0, static_cast<uint8_t>(km), false, lo, false, hi);
			while (i < 200 && n.v.leaf_upsert(worst_key(i), i, &existed))
				i++;
			return i;
		};
		uint32_t ms = vnode_min_size(km);
		assert_true(fill(ms) >= 4);
		uint32_t exact = vnode_worst_bytes(km, 4);
		if (exact >= vnode_size_min) {
			assert_int_equal(fill(exact), 4);
			// the first size refused cannot hold four
			assert_int_equal(fill(exact - 1), 3);
		}
		if (ms / 2 >= vnode_size_min)
			assert_true(fill(ms / 2) < 4);

		// at the smallest size, a full node split by the tree always
		// takes the key that did not fit (key_max bytes, any place),
		// with fences or without
		for (int round = 0; round < 60; round++) {
			const bool fenced = round % 2;
			vbuf n(ms);
			bool existed;
			std::string pending;
			n.v.init(0, static_cast<uint8_t>(km), !fenced, lo, !fenced, hi);
			for (;;) {
				std::string k = rep(static_cast<uint8_t>(0x02 + rng() % 0xfb), km);
				for (uint32_t j = 0; j < km; j++)
					k[j] = static_cast<char>(0x02 + rng() % 0xfb);
				if (n.v.find(k) >= 0)
					continue;
				if (!n.v.leaf_upsert(k, 1, &existed)) {
					pending = k;
					break;
				}
			}
			assert_true(n.v.count() >= 4);
			vbuf r(ms);
			std::string sep = n.v.split_into(r.v);
			assert_false(sep.empty());
			const vbuf &into = kcmp(pending, sep) >= 0 ? r : n;
			assert_true(into.v.leaf_upsert(pending, 2, &existed));
			assert_sealed_ok(n);
			assert_sealed_ok(r);
		}
	}
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kcmp_order),
		cmocka_unit_test(test_layout_constants),
		cmocka_unit_test(test_init_garbage),
		cmocka_unit_test(test_random_vs_map),
		cmocka_unit_test(test_split_suffix_truncation),
		cmocka_unit_test(test_internal_split_routing),
		cmocka_unit_test(test_internal_ops),
		cmocka_unit_test(test_absorb_and_balance),
		cmocka_unit_test(test_prefix_compression),
		cmocka_unit_test(test_head_compare_only),
		cmocka_unit_test(test_every_bit_flip_caught),
		cmocka_unit_test(test_corrupt_offsets_safe),
		cmocka_unit_test(test_capacity),
	};
	return cmocka_run_group_tests_name("dsuser_btree_keys", tests, nullptr, nullptr);
}
