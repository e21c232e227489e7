// SPDX-License-Identifier: BSD-2-Clause
// DSBK node images: variable-length keys (see layout_var.hpp).
#include "layout_var.hpp"

#include <algorithm>
#include <vector>

#define XXH_STATIC_LINKING_ONLY	// an XXH64 state on the stack, no malloc
#include <xxhash.h>

namespace dsmem::btree {

namespace {

constexpr size_t o_prefix_len = offsetof(vnode_header, prefix_len);
constexpr size_t o_key_max = offsetof(vnode_header, key_max);
constexpr size_t o_heap_top = offsetof(vnode_header, heap_top);
constexpr size_t o_low_off = offsetof(vnode_header, low_off);
constexpr size_t o_low_len = offsetof(vnode_header, low_len);
constexpr size_t o_high_off = offsetof(vnode_header, high_off);
constexpr size_t o_high_len = offsetof(vnode_header, high_len);
constexpr size_t o_reserved0 = offsetof(vnode_header, reserved0);
constexpr size_t o_reserved1 = offsetof(vnode_header, reserved1);
constexpr size_t reserved1_bytes = sizeof(vnode_header::reserved1);
constexpr size_t o_dir = o_prefix_len;			// bytes 32..47: ours
constexpr size_t dir_bytes = offsetof(vnode_header, sibling) - o_dir;
constexpr uint32_t hdr_bytes = sizeof(vnode_header);
constexpr uint32_t slot_bytes = sizeof(vslot);

uint32_t lcp(kref a, kref b)
{
	uint32_t n = std::min(a.len, b.len), i = 0;

	while (i < n && a.p[i] == b.p[i])
		i++;
	return i;
}

// The shortest prefix of r that sorts after l (given l < r): one byte
// past their common prefix.
uint32_t sep_len(kref l, kref r)
{
	return lcp(l, r) + 1;
}

// key against pre ‖ sfx, without joining them
int cmp2(kref key, kref pre, kref sfx)
{
	if (int c = kbytes_cmp(key.p, pre.p, std::min(key.len, pre.len)))
		return c;
	if (key.len < pre.len)
		return -1;
	return kcmp(key.from(pre.len), sfx);
}

// A slot's key (after the prefix) against s, whose head is head.  Equal
// heads mean equal first min(len, 4) bytes, so only the bytes after the
// head are read, and only then.
int slot_cmp(const uint8_t *base, const vslot &sl, kref s, uint32_t head)
{
	if (sl.head != head)
		return sl.head < head ? -1 : 1;
	uint32_t m = std::min<uint32_t>(sl.len, s.len);
	if (m > vhead_bytes) {
		if (int c = std::memcmp(base + sl.off + vhead_bytes, s.p + vhead_bytes,
					m - vhead_bytes))
			return c;
	}
	return sl.len < s.len ? -1 : sl.len > s.len;
}

// XXH64 of header [sum_from, 64), n slots and the heap [top, size): the
// same value as checksum() of those bytes laid end to end.  The caller
// bounds n and top.
uint64_t vsum(const uint8_t *p, uint32_t size, uint32_t n, uint32_t top)
{
	XXH64_state_t st;

	XXH64_reset(&st, 0);
	XXH64_update(&st, p + sum_from, hdr_bytes - sum_from + n * slot_bytes);
	XXH64_update(&st, p + top, size - top);
	return XXH64_digest(&st);
}

// A node taken apart: full fences, full keys (their bytes in one pool).
struct draft {
	struct ent {
		uint32_t off, len;
		uint64_t val;
	};

	bool low_inf = true, high_inf = true;
	std::string low, high;
	std::vector<ent> ents;
	std::vector<uint8_t> pool;

	uint32_t n() const { return static_cast<uint32_t>(ents.size()); }
	kref key(uint32_t i) const { return {pool.data() + ents[i].off, ents[i].len}; }
	void insert(uint32_t i, kref k, uint64_t v)
	{
		uint32_t off = static_cast<uint32_t>(pool.size());

		pool.insert(pool.end(), k.p, k.p + k.len);
		ents.insert(ents.begin() + i, ent{off, k.len, v});
	}
	void add(kref k, uint64_t v) { insert(n(), k, v); }
	void add_from(const draft &o, uint32_t from, uint32_t to)
	{
		for (uint32_t i = from; i < to; i++)
			add(o.key(i), o.ents[i].val);
	}
	void fences(bool li, kref lo, bool hi, kref hi_key)
	{
		low_inf = li;
		high_inf = hi;
		low = li ? std::string() : lo.str();
		high = hi ? std::string() : hi_key.str();
	}
};

void decode(const vnode_view &v, draft &d)
{
	const node_header &h = v.hdr();
	uint32_t n = h.count, pl = v.prefix_len(), total = 0;

	d.low_inf = h.flags & node_low_inf;
	d.high_inf = h.flags & node_high_inf;
	d.low = d.low_inf ? std::string() : v.low();
	d.high = d.high_inf ? std::string() : v.high();
	for (uint32_t i = 0; i < n; i++)
		total += pl + v.slots()[i].len;
	d.pool.resize(total);
	d.ents.clear();
	d.ents.reserve(n + 1);
	total = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = v.key_into(i, d.pool.data() + total);

		d.ents.push_back({total, len, v.slots()[i].val});
		total += len;
	}
}

// The prefix a node with these fences stores: the fences' common prefix
// when both are finite.
uint32_t fence_prefix(bool li, kref lo, bool hi, kref hi_key)
{
	return li || hi ? 0 : lcp(lo, hi_key);
}

// Bytes of a node: header, slots, the prefix once, the fences' and keys'
// bytes after it (key_bytes: the keys' full lengths summed).
uint64_t image_bytes(uint32_t p, bool li, kref lo, bool hi, kref hi_key, uint32_t n,
		     uint64_t key_bytes)
{
	return hdr_bytes + uint64_t{n} * slot_bytes + p + (li ? 0 : lo.len - p) +
	       (hi ? 0 : hi_key.len - p) + key_bytes - uint64_t{n} * p;
}

// The draft's prefix: the fences', cut short by any key that does not
// start with it (only a caller's misuse makes one; check() then refuses
// the image, but nothing is written out of place).
uint32_t prefix_of(const draft &d)
{
	uint32_t p = fence_prefix(d.low_inf, d.low, d.high_inf, d.high);

	for (uint32_t i = 0; i < d.n() && p; i++)
		p = std::min(p, lcp(d.key(i), kref(d.low).first(p)));
	return p;
}

uint64_t bytes_of(const draft &d)
{
	uint64_t kb = 0;

	for (const auto &e : d.ents)
		kb += e.len;
	return image_bytes(prefix_of(d), d.low_inf, d.low, d.high_inf, d.high, d.n(), kb);
}

// Lay the draft out in v's buffer: the header's common fields (but for
// count and the fence flags) and key_max stay, the rest is written
// afresh, free space zeroed.  False, and nothing written, when it does
// not fit.
bool encode(const vnode_view &v, const draft &d)
{
	const uint32_t size = v.size(), n = d.n();
	const uint32_t p = prefix_of(d);
	uint8_t *b = v.data();

	if (n > vnode_slots_max(size) || bytes_of(d) > size)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		if (d.ents[i].len > vkey_len_max)
			return false;
	}
	if (d.low.size() > vkey_len_max || d.high.size() > vkey_len_max)
		return false;

	uint8_t km = b[o_key_max];
	node_header &h = v.hdr();
	std::memset(b + o_dir, 0, dir_bytes);
	std::memset(b + hdr_bytes, 0, size - hdr_bytes);
	b[o_key_max] = km;
	b[o_prefix_len] = static_cast<uint8_t>(p);
	h.count = static_cast<uint16_t>(n);
	h.flags = static_cast<uint8_t>((h.flags & ~(node_low_inf | node_high_inf)) |
				       (d.low_inf ? node_low_inf : 0) |
				       (d.high_inf ? node_high_inf : 0));

	uint32_t top = size;
	auto put = [&](kref s) {
		top -= s.len;
		if (s.len)
			std::memcpy(b + top, s.p, s.len);
		return static_cast<uint16_t>(top);
	};
	auto st16 = [&](size_t off, uint16_t val) { std::memcpy(b + off, &val, 2); };
	if (p)
		put(kref(d.low).first(p));
	if (!d.low_inf) {
		kref s = kref(d.low).from(p);
		st16(o_low_off, put(s));
		b[o_low_len] = static_cast<uint8_t>(s.len);
	}
	if (!d.high_inf) {
		kref s = kref(d.high).from(p);
		st16(o_high_off, put(s));
		b[o_high_len] = static_cast<uint8_t>(s.len);
	}
	vslot *sl = v.slots();
	for (uint32_t i = 0; i < n; i++) {
		kref s = d.key(i).from(p);
		sl[i].val = d.ents[i].val;
		sl[i].off = put(s);
		sl[i].len = static_cast<uint8_t>(s.len);
		sl[i].flags = 0;
		sl[i].head = vhead(s);
	}
	st16(o_heap_top, static_cast<uint16_t>(top));
	return true;
}

// Where to cut a run of keys d (with d's fences as the outer ones) into
// two nodes: the candidate in [lo, hi] that fits both and leaves the
// bigger one smallest, the shorter separator on a tie.  Leaves: left
// takes [0, k), right [k, n), the separator a truncated key (above the
// left's low fence when k is 0); internal: key k goes up.
struct cut {
	int at = -1;
	uint32_t sep_len = 0;
};

cut choose(const draft &d, bool leaf, uint32_t lo, uint32_t hi, uint32_t size)
{
	const uint32_t n = d.n();
	std::vector<uint64_t> sum(n + 1, 0);	// sum[i]: bytes of keys [0, i)
	cut best;
	uint64_t best_max = UINT64_MAX;

	for (uint32_t i = 0; i < n; i++)
		sum[i + 1] = sum[i] + d.ents[i].len;
	for (uint32_t k = lo; k <= hi && k < n; k++) {
		kref r = d.key(k), sep = r;
		uint32_t rn = n - k, rfrom = k;

		if (leaf) {
			kref l = k ? d.key(k - 1) : d.low_inf ? kref() : kref(d.low);
			if (kcmp(l, r) >= 0)
				continue;	// a key at the low fence: no room left of it
			sep = r.first(sep_len(l, r));
		} else {
			if (!d.low_inf && kcmp(d.low, sep) >= 0)
				continue;	// the low fence itself: left would cover nothing
			rn--;
			rfrom++;
		}
		uint64_t lb = image_bytes(fence_prefix(d.low_inf, d.low, false, sep), d.low_inf,
					  d.low, false, sep, k, sum[k]);
		uint64_t rb = image_bytes(fence_prefix(false, sep, d.high_inf, d.high), false, sep,
					  d.high_inf, d.high, rn, sum[n] - sum[rfrom]);
		uint64_t m = std::max(lb, rb);
		if (lb > size || rb > size)
			continue;
		if (m < best_max || (m == best_max && sep.len < best.sep_len)) {
			best_max = m;
			best.at = static_cast<int>(k);
			best.sep_len = sep.len;
		}
	}
	return best;
}

// Cut d at c into the drafts l and r, the separator into *sep; right's
// leftmost child (internal) into *leftmost.  False when either does not
// fit (the choice said they do; a misused call may say otherwise).
bool cut_into(const draft &d, bool leaf, cut c, uint32_t size, draft &l, draft &r,
	      std::string *sep, uint64_t *leftmost)
{
	uint32_t k = static_cast<uint32_t>(c.at);

	*sep = d.key(k).first(c.sep_len).str();
	l.fences(d.low_inf, d.low, false, *sep);
	l.add_from(d, 0, k);
	r.fences(false, *sep, d.high_inf, d.high);
	r.add_from(d, leaf ? k : k + 1, d.n());
	*leftmost = leaf ? 0 : d.ents[k].val;
	return bytes_of(l) <= size && bytes_of(r) <= size;
}

// Candidates for a cut of n keys: never a side without keys when there
// are enough for both (internal nodes need n >= 3: one goes up).
bool cut_range(bool leaf, uint32_t n, uint32_t *lo, uint32_t *hi)
{
	if (leaf) {
		if (!n)
			return false;
		*lo = n >= 2 ? 1 : 0;
		*hi = n >= 2 ? n - 1 : 0;
	} else {
		if (!n)
			return false;
		*lo = n >= 3 ? 1 : 0;
		*hi = n >= 3 ? n - 2 : n - 1;
	}
	return true;
}

bool sep_ok(kref sep, uint32_t key_max)
{
	return sep.len >= 1 && sep.len <= key_max;
}

}  // namespace

kref vnode_view::low_sfx() const
{
	return {p_ + ld16(o_low_off), p_[o_low_len]};
}

kref vnode_view::high_sfx() const
{
	return {p_ + ld16(o_high_off), p_[o_high_len]};
}

bool vnode_view::covers(kref key) const
{
	if (!(hdr().flags & node_low_inf) && cmp2(key, prefix(), low_sfx()) < 0)
		return false;
	return !right_of(key);
}

bool vnode_view::right_of(kref key) const
{
	return !(hdr().flags & node_high_inf) && cmp2(key, prefix(), high_sfx()) >= 0;
}

uint32_t vnode_view::search(kref key, bool *hit) const
{
	const uint32_t n = count();
	const kref pre = prefix();

	*hit = false;
	// every key starts with the prefix: a key that does not sorts
	// before or after all of them
	int c = kbytes_cmp(key.p, pre.p, std::min(key.len, pre.len));
	if (c < 0 || (!c && key.len < pre.len))
		return 0;
	if (c > 0)
		return n;

	const kref s = key.from(pre.len);
	const uint32_t head = vhead(s);
	const vslot *sl = slots();
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int d = slot_cmp(p_, sl[mid], s, head);

		if (!d) {
			*hit = true;	// keys are unique: mid is the bound
			return mid;
		}
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t vnode_view::lower_bound(kref key) const
{
	bool hit;

	return search(key, &hit);
}

int vnode_view::find(kref key) const
{
	bool hit;
	uint32_t i = search(key, &hit);

	return hit ? static_cast<int>(i) : -1;
}

uint32_t vnode_view::child_slot(kref key) const
{
	bool hit;
	uint32_t i = search(key, &hit);

	return hit ? i + 1 : i;
}

uint64_t vnode_view::child_for(kref key) const
{
	return child_at(child_slot(key));
}

int vnode_view::cmp_at(uint32_t i, kref key) const
{
	return -cmp2(key, prefix(), sfx(slots()[i]));
}

std::string vnode_view::key_at(uint32_t i) const
{
	std::string k(prefix().sv());

	k.append(sfx(slots()[i]).sv());
	return k;
}

uint32_t vnode_view::key_into(uint32_t i, uint8_t *out) const
{
	kref pre = prefix(), s = sfx(slots()[i]);

	if (pre.len)
		std::memcpy(out, pre.p, pre.len);
	if (s.len)
		std::memcpy(out + pre.len, s.p, s.len);
	return pre.len + s.len;
}

std::string vnode_view::low() const
{
	std::string k(prefix().sv());

	k.append(low_sfx().sv());
	return k;
}

std::string vnode_view::high() const
{
	std::string k(prefix().sv());

	k.append(high_sfx().sv());
	return k;
}

void vnode_view::seal() const
{
	// bounded as check() bounds them, so sealing a bogus image (a test's)
	// reads nothing outside the node either
	uint32_t n = std::min<uint32_t>(count(), vnode_slots_max(size_));
	uint32_t top = std::clamp<uint32_t>(heap_top(), hdr_bytes + n * slot_bytes, size_);

	hdr().magic = vnode_magic;
	hdr().sum = vsum(p_, size_, n, top);
}

bool vnode_view::check(const char **why) const
{
	// bounds before anything they bound is read, the sum before the rest
	const char *w = [this]() -> const char * {
		if (size_ < vnode_size_min || size_ > vnode_size_max)
			return "node size out of range";
		const node_header &h = hdr();
		const uint32_t n = h.count, top = heap_top(), km = key_max(), pl = prefix_len();
		const bool li = h.flags & node_low_inf, hi = h.flags & node_high_inf;

		if (h.magic != vnode_magic)
			return "bad magic";
		if (n > vnode_slots_max(size_))
			return "count over capacity";
		if (top < hdr_bytes + n * slot_bytes || top > size_)
			return "heap out of bounds";
		if (h.sum != vsum(p_, size_, n, top))
			return "checksum mismatch";
		if (h.level >= height_max)
			return "level out of range";
		if (!vnode_fits(size_, km))
			return "key_max does not fit the node";
		if (p_[o_reserved0] || std::any_of(p_ + o_reserved1, p_ + o_reserved1 + reserved1_bytes,
						   [](uint8_t b) { return b != 0; }))
			return "reserved bytes set";
		if (pl > km || pl > size_ - top)
			return "prefix out of bounds";
		auto fence_ok = [&](bool inf, size_t o_off, size_t o_len) {
			uint32_t off = ld16(o_off), len = p_[o_len];

			if (inf)
				return !off && !len;
			return off >= top && off + len <= size_ && pl + len >= 1 && pl + len <= km;
		};
		if (!fence_ok(li, o_low_off, o_low_len) || !fence_ok(hi, o_high_off, o_high_len))
			return "fence out of bounds";
		if ((li || hi) && pl)
			return "prefix without two fences";
		const kref lo = low_sfx(), hk = high_sfx();
		if (!li && !hi) {
			// the prefix is all the fences share: their bytes after it
			// differ at once (or one of them has none)
			if (lo.len && hk.len && lo.p[0] == hk.p[0])
				return "prefix not the fences' common prefix";
			if (kcmp(lo, hk) >= 0)
				return "fences inverted";
		}
		// the sum vouches for what a writer sealed; children are
		// checked as well, since they are followed
		const bool internal = !leaf();
		if (internal && !(h.flags & node_free) && !h.leftmost)
			return "internal node without a leftmost child";
		if (internal && (h.leftmost & (vchild_align - 1)))
			return "misaligned child";
		const vslot *s = slots();
		for (uint32_t i = 0; i < n; i++) {
			if (s[i].flags)
				return "slot flags set";
			if (s[i].off < top || s[i].off + s[i].len > size_)
				return "key out of bounds";
			if (pl + s[i].len < 1 || pl + s[i].len > km)
				return "key length out of range";
			const kref k = sfx(s[i]);
			if (s[i].head != vhead(k))
				return "slot head mismatch";
			if (i && kcmp(sfx(s[i - 1]), k) >= 0)
				return "keys out of order";
			// (with one fence finite the prefix is empty: suffixes
			// are the keys)
			if ((!li && kcmp(k, lo) < 0) || (!hi && kcmp(k, hk) >= 0))
				return "key outside the fences";
			if (internal && !s[i].val)
				return "null child";
			if (internal && (s[i].val & (vchild_align - 1)))
				return "misaligned child";
		}
		return nullptr;
	}();

	if (why)
		*why = w;
	return !w;
}

void vnode_view::init(uint8_t level, uint8_t key_max, bool low_inf, kref low, bool high_inf,
		      kref high) const
{
	uint64_t version = hdr().version;
	node_header &h = hdr();
	draft d;

	d.fences(low_inf, low, high_inf, high);	// (copied first: they may be ours)
	std::memset(p_, 0, size_);
	h.version = version;
	h.level = level;
	h.magic = vnode_magic;
	h.flags = static_cast<uint8_t>((low_inf ? node_low_inf : 0) | (high_inf ? node_high_inf : 0));
	p_[o_key_max] = key_max;
	st16(o_heap_top, static_cast<uint16_t>(size_));
	if (!encode(*this, d))
		p_[o_key_max] = 0;	// fences that cannot be stored: check() refuses
}

bool vnode_view::leaf_upsert(kref key, uint64_t val, bool *existed) const
{
	bool hit;
	uint32_t i = search(key, &hit);
	draft d;

	if (hit) {
		slots()[i].val = val;
		*existed = true;
		return true;
	}
	*existed = false;
	if (!sep_ok(key, key_max()) || !covers(key))
		return false;
	// (cheap refusal first: the heap is compact, so this is exact)
	if (used_bytes() + slot_bytes + key.len - prefix_len() > size_)
		return false;
	decode(*this, d);
	d.insert(i, key, val);
	return encode(*this, d);
}

bool vnode_view::leaf_remove(kref key) const
{
	int i = find(key);

	if (i < 0)
		return false;
	internal_remove_at(static_cast<uint32_t>(i));
	return true;
}

bool vnode_view::internal_insert(kref sep, uint64_t child) const
{
	bool existed;

	return leaf_upsert(sep, child, &existed);
}

void vnode_view::internal_remove_at(uint32_t i) const
{
	draft d;

	if (i >= count())
		return;
	decode(*this, d);
	d.ents.erase(d.ents.begin() + i);
	encode(*this, d);	// fewer bytes: it fits
}

bool vnode_view::set_separator(uint32_t i, kref key) const
{
	draft d;

	if (i >= count() || !sep_ok(key, key_max()) || !covers(key))
		return false;
	if ((i && cmp_at(i - 1, key) >= 0) || (i + 1 < count() && cmp_at(i + 1, key) <= 0))
		return false;
	decode(*this, d);
	uint64_t v = d.ents[i].val;
	d.ents.erase(d.ents.begin() + i);
	d.insert(i, key, v);
	return encode(*this, d);
}

std::string vnode_view::split_into(const vnode_view &right) const
{
	node_header &h = hdr();
	draft d, l, r;
	uint32_t lo, hi;
	std::string sep;
	uint64_t leftmost;

	decode(*this, d);
	if ((leaf() && d.n() < 2) || !cut_range(leaf(), d.n(), &lo, &hi))
		return {};
	cut c = choose(d, leaf(), lo, hi, size_);
	if (c.at < 0 || !cut_into(d, leaf(), c, size_, l, r, &sep, &leftmost))
		return {};
	right.init(h.level, static_cast<uint8_t>(key_max()), false, sep, d.high_inf, d.high);
	right.hdr().sibling = h.sibling;
	right.hdr().leftmost = leftmost;
	encode(right, r);
	encode(*this, l);
	return sep;
}

// this node's keys, (internal) sep with right's leftmost, right's keys;
// the outer fences.  False if sep cannot be a key.
static bool pool_of(const vnode_view &l, const vnode_view &r, kref sep, draft &d)
{
	draft rd;

	if (!l.leaf() && !sep_ok(sep, l.key_max()))
		return false;
	decode(l, d);
	decode(r, rd);
	d.high_inf = rd.high_inf;
	d.high = rd.high;
	if (!l.leaf())
		d.add(sep, r.hdr().leftmost);
	d.add_from(rd, 0, rd.n());
	return true;
}

uint32_t vnode_view::merged_bytes(const vnode_view &right, kref sep) const
{
	draft d;

	if (!pool_of(*this, right, sep, d))
		return UINT32_MAX;
	return static_cast<uint32_t>(std::min<uint64_t>(bytes_of(d), UINT32_MAX));
}

bool vnode_view::absorb(const vnode_view &right, kref sep) const
{
	draft d;

	if (!pool_of(*this, right, sep, d) || !encode(*this, d))
		return false;
	hdr().sibling = right.hdr().sibling;
	return true;
}

std::string vnode_view::balance_with(const vnode_view &right, kref sep) const
{
	draft d, l, r;
	uint32_t lo, hi;
	std::string nsep;
	uint64_t leftmost;

	if (!pool_of(*this, right, sep, d) || !cut_range(leaf(), d.n(), &lo, &hi))
		return right.low();
	cut c = choose(d, leaf(), lo, hi, std::min(size_, right.size_));
	if (c.at < 0 || !cut_into(d, leaf(), c, std::min(size_, right.size_), l, r, &nsep, &leftmost))
		return right.low();
	// (left keeps its low fence, right its high one)
	encode(*this, l);
	encode(right, r);
	if (!leaf())
		right.hdr().leftmost = leftmost;
	return nsep;
}

}  // namespace dsmem::btree
