// SPDX-License-Identifier: BSD-2-Clause
// The single-tier baselines `dsctl sim` compares the seed policy with:
// lru, fifo, lfu, arc, s3fifo, sieve, wtinylfu (Caffeine's, adaptive
// window), wtinylfu-dk (doorkeeper, fixed window), random (write-back),
// belady (the offline optimum), lirs, 2q, clock, slru, lru2, gdsf,
// hyperbolic, lecar, cacheus, lhd and clockpro; the admission filters
// POLICY+tinylfu and POLICY+size:MAX that go in front of any of them; and
// the capacity parser.
//
// Every policy keeps its state in flat arrays indexed by the trace's dense
// object id, sized once in its constructor: no hashing and no allocation
// per request.  Each comes in two builds, entries and bytes, so that the
// entries build carries no size bookkeeping at all.
//
// Common rules of the bytes build: an object weighs its request's size;
// eviction runs until the incoming object fits; a request larger than the
// whole cache is a miss that is not admitted (admissions_refused), and
// drops a copy of the object cached at an older, smaller size; a hit whose
// size changed updates the bookkeeping and evicts if the cache overflows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim.hpp"

namespace dssim {

namespace {

constexpr uint32_t NIL = 0xffffffffu;

// The trace is known ahead: touching the state of the request this many
// places on hides most of a cache miss behind the requests in between.
constexpr size_t lookahead = 12;

// ---- shared pieces ---------------------------------------------------------

// Intrusive circular doubly linked lists over one array of links: slots
// 0..nobjects-1 are the objects, then one sentinel per list.  An object is
// in at most one of the lists at a time; next == NIL marks "in none".
// Front (sentinel's next) is the newest end, back (sentinel's prev) the
// oldest.
struct link {
	uint32_t prev, next;
};

class lists {
public:
	lists(uint32_t nobjects, uint32_t nlists) : base_(nobjects)
	{
		if (static_cast<uint64_t>(nobjects) + nlists >= NIL)
			throw sim_error("too many objects for the simulator (at most 2^32 - 16)");
		l_.assign(static_cast<size_t>(nobjects) + nlists, link{ NIL, NIL });
		for (uint32_t k = 0; k < nlists; k++)
			l_[base_ + k] = link{ base_ + k, base_ + k };
	}
	uint32_t sentinel(uint32_t k) const { return base_ + k; }
	bool linked(uint32_t id) const { return l_[id].next != NIL; }
	void prefetch(uint32_t id) const { __builtin_prefetch(&l_[id], 1); }
	bool empty(uint32_t s) const { return l_[s].next == s; }
	uint32_t back(uint32_t s) const { return l_[s].prev; }
	uint32_t front(uint32_t s) const { return l_[s].next; }
	uint32_t newer(uint32_t id) const { return l_[id].prev; }
	uint32_t older(uint32_t id) const { return l_[id].next; }
	void push_front(uint32_t s, uint32_t id)
	{
		const uint32_t f = l_[s].next;
		l_[id] = link{ s, f };
		l_[f].prev = id;
		l_[s].next = id;
	}
	void unlink(uint32_t id)
	{
		const link e = l_[id];
		l_[e.prev].next = e.next;
		l_[e.next].prev = e.prev;
		l_[id].next = NIL;
	}
	void move_front(uint32_t s, uint32_t id)
	{
		if (l_[s].next == id)	// already the newest: the common hot hit
			return;
		unlink(id);
		push_front(s, id);
	}

private:
	std::vector<link> l_;
	uint32_t base_;
};

// The trace is known ahead: start fetching the state of the object that
// request i + lookahead names, so that it is in the CPU's cache by its
// turn.  State is a per-object array, a lists, or anything with prefetch().
template <class S> void prefetch_state(const S &s, uint32_t id)
{
	if constexpr (requires { s.prefetch(id); })
		s.prefetch(id);
	else
		__builtin_prefetch(&s[id]);
}

template <class... S> void prefetch_ahead(const trace &t, size_t i, const S &...state)
{
	if (i + lookahead < t.size()) {
		const uint32_t a = t.ids[i + lookahead];
		(prefetch_state(state, a), ...);
	}
}

// What every baseline shares: its capacity and what it holds now, in
// entries or in bytes, so that tests can check it never overflows.
class baseline : public policy {
public:
	explicit baseline(uint64_t cap) : cap_(cap) {}
	uint64_t held() const { return used_; }
	// Whether the object is cached now (admission filters ask it).
	virtual bool holds(uint32_t id) const = 0;

protected:
	// The counters of one request: served (tier 0) or missed (tier 2).
	int hit(uint32_t sz)
	{
		c.requests++;
		c.bytes += sz;
		c.hits[0]++;
		return 0;
	}
	int miss(uint32_t sz)
	{
		c.requests++;
		c.bytes += sz;
		c.hits[2]++;
		c.miss_bytes += sz;
		return 2;
	}
	int refuse(uint32_t sz)
	{
		c.admissions_refused++;
		return miss(sz);
	}
	// An object larger than the whole cache is never admitted; a copy
	// of it held from when it was smaller goes first (drop()).
	template <typename Drop>
	int refuse(uint32_t sz, bool cached, Drop drop)
	{
		if (cached)
			drop();
		return refuse(sz);
	}

	uint64_t cap_;
	uint64_t used_ = 0;
};

// Per-object sizes, kept only by the bytes build (the size an object was
// cached at, which is what it frees when it leaves).
template <bool Bytes> struct sizes_of {
	explicit sizes_of(uint32_t) {}
	static constexpr uint64_t get(uint32_t) { return 1; }
	void set(uint32_t, uint32_t) {}
};
template <> struct sizes_of<true> {
	explicit sizes_of(uint32_t n) : v(n, 0) {}
	uint64_t get(uint32_t id) const { return v[id]; }
	void set(uint32_t id, uint32_t sz) { v[id] = sz; }
	std::vector<uint32_t> v;
};

template <bool Bytes> constexpr uint64_t weight(uint32_t sz)
{
	if constexpr (Bytes)
		return sz;
	else
		return 1;
}

// ceil(v * num / den) and floor(...) without overflowing 64 bits
uint64_t share_floor(uint64_t v, uint64_t num, uint64_t den)
{
	return static_cast<uint64_t>(static_cast<unsigned __int128>(v) * num / den);
}
uint64_t share_ceil(uint64_t v, uint64_t num, uint64_t den)
{
	const unsigned __int128 p = static_cast<unsigned __int128>(v) * num;
	return static_cast<uint64_t>((p + den - 1) / den);
}

// splitmix64: the PRNG of random replacement and the sketch's hash
uint64_t mix64(uint64_t x)
{
	return mix64_finish(x + splitmix_gamma);
}

// ---- LRU and FIFO ----------------------------------------------------------

// One list, newest at the front; LRU moves a hit to the front, FIFO does
// not.  The hot path is a handful of loads and stores: no virtual call
// inside, no size logic in the entries build.
template <bool Bytes, bool Lru> class queue_policy final : public baseline {
public:
	queue_policy(const trace &t, uint64_t cap)
		: baseline(cap), q_(t.nobjects(), 1), s_(q_.sentinel(0)), sz_(t.nobjects())
	{
	}

	bool holds(uint32_t id) const override { return q_.linked(id); }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, q_);
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, q_.linked(id), [&] { drop(id); });
		}
		if (q_.linked(id)) {
			if constexpr (Lru)
				q_.move_front(s_, id);
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						drop(q_.back(s_));
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			drop(q_.back(s_));
		q_.push_front(s_, id);
		sz_.set(id, sz);
		used_ += w;
		return miss(sz);
	}

private:
	void drop(uint32_t id)
	{
		q_.unlink(id);
		used_ -= sz_.get(id);
		c.evictions++;
	}

	lists q_;
	uint32_t s_;
	sizes_of<Bytes> sz_;
};

// ---- LFU -------------------------------------------------------------------

// O(1) LFU (Shah, Mitra & Matani, 2010): a list of frequency buckets in
// rising order, each holding its objects newest first.  The victim is the
// oldest object of the lowest bucket: least frequent, ties to the least
// recently used (an object enters its bucket when accessed).  An evicted
// object's count is forgotten.
template <bool Bytes> class lfu_policy final : public baseline {
public:
	lfu_policy(const trace &t, uint64_t cap)
		: baseline(cap), ol_(t.nobjects(), link{ NIL, NIL }), ob_(t.nobjects(), NIL),
		  sz_(t.nobjects())
	{
		bk_.reserve(std::min<uint64_t>(cap, t.nobjects()) + 2);
	}

	bool holds(uint32_t id) const override { return ob_[id] != NIL; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, ob_, ol_);
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, ob_[id] != NIL, [&] { drop(id); });
		}
		if (ob_[id] != NIL) {
			bump(id);
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						drop(bk_[first_].tail);
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			drop(bk_[first_].tail);
		uint32_t b = first_;
		if (b == NIL || bk_[b].freq != 1)
			b = new_bucket(1, NIL);
		obj_push(b, id);
		sz_.set(id, sz);
		used_ += w;
		return miss(sz);
	}

private:
	struct bucket {
		uint64_t freq;
		uint32_t prev, next;	// neighbouring buckets, NIL-ended
		uint32_t head, tail;	// its objects, newest at head
	};

	// a new bucket after `after` (NIL: first)
	uint32_t new_bucket(uint64_t freq, uint32_t after)
	{
		uint32_t b;
		if (!free_.empty()) {
			b = free_.back();
			free_.pop_back();
		} else {
			b = static_cast<uint32_t>(bk_.size());
			bk_.push_back(bucket{});
		}
		const uint32_t nx = after == NIL ? first_ : bk_[after].next;
		bk_[b] = bucket{ freq, after, nx, NIL, NIL };
		if (after == NIL)
			first_ = b;
		else
			bk_[after].next = b;
		if (nx != NIL)
			bk_[nx].prev = b;
		return b;
	}
	void free_bucket(uint32_t b)
	{
		const bucket &e = bk_[b];
		if (e.prev == NIL)
			first_ = e.next;
		else
			bk_[e.prev].next = e.next;
		if (e.next != NIL)
			bk_[e.next].prev = e.prev;
		free_.push_back(b);
	}
	void obj_push(uint32_t b, uint32_t id)
	{
		bucket &e = bk_[b];
		ol_[id] = link{ NIL, e.head };
		if (e.head != NIL)
			ol_[e.head].prev = id;
		else
			e.tail = id;
		e.head = id;
		ob_[id] = b;
	}
	// unlink from its bucket; frees the bucket when it empties
	void obj_unlink(uint32_t id)
	{
		const uint32_t b = ob_[id];
		bucket &e = bk_[b];
		const link l = ol_[id];
		if (l.prev != NIL)
			ol_[l.prev].next = l.next;
		else
			e.head = l.next;
		if (l.next != NIL)
			ol_[l.next].prev = l.prev;
		else
			e.tail = l.prev;
		ob_[id] = NIL;
		if (e.head == NIL)
			free_bucket(b);
	}
	void bump(uint32_t id)
	{
		const uint32_t b = ob_[id];
		const uint64_t f = bk_[b].freq + 1;
		uint32_t nb = bk_[b].next;
		if (nb == NIL || bk_[nb].freq != f)
			nb = new_bucket(f, b);
		obj_unlink(id);
		obj_push(nb, id);
	}
	void drop(uint32_t id)
	{
		obj_unlink(id);
		used_ -= sz_.get(id);
		c.evictions++;
	}

	std::vector<link> ol_;		// per object: neighbours in its bucket
	std::vector<uint32_t> ob_;	// per object: its bucket, NIL if absent
	std::vector<bucket> bk_;
	std::vector<uint32_t> free_;
	uint32_t first_ = NIL;		// the lowest-frequency bucket
	sizes_of<Bytes> sz_;
};

// Objects on N lists, each on at most one (where_[id], N for none), with
// each list's weight in entries or bytes: the queues of ARC, S3-FIFO and
// W-TinyLFU.
template <bool Bytes, uint8_t N> class listed : public baseline {
protected:
	listed(const trace &t, uint64_t cap)
		: baseline(cap), q_(t.nobjects(), N), where_(t.nobjects(), N), sz_(t.nobjects())
	{
	}
	void put(uint8_t list, uint32_t id)
	{
		q_.push_front(q_.sentinel(list), id);
		where_[id] = list;
		w_[list] += sz_.get(id);
	}
	void take(uint32_t id)
	{
		q_.unlink(id);
		w_[where_[id]] -= sz_.get(id);
		where_[id] = N;
	}
	void evict_obj(uint32_t id)
	{
		take(id);
		used_ -= sz_.get(id);
		c.evictions++;
	}
	// A hit at another size than the object had: its list and the
	// total weigh the new size (the bytes build; a no-op otherwise).
	void resize(uint32_t id, uint32_t sz)
	{
		if constexpr (Bytes) {
			if (sz_.get(id) != sz) {
				used_ = used_ - sz_.get(id) + sz;
				w_[where_[id]] = w_[where_[id]] - sz_.get(id) + sz;
				sz_.set(id, sz);
			}
		}
	}
	// SLRU's promotion: a probation hit moves to protected, whose
	// overflow goes back to probation's front.
	void promote(uint32_t id, uint8_t probation, uint8_t prot, uint64_t prot_max)
	{
		take(id);
		put(prot, id);
		const uint32_t ps = q_.sentinel(prot);
		while (w_[prot] > prot_max) {
			const uint32_t v = q_.back(ps);
			take(v);
			put(probation, v);
		}
	}

	lists q_;
	std::vector<uint8_t> where_;
	sizes_of<Bytes> sz_;
	uint64_t w_[N] = {};
};

// ---- ARC -------------------------------------------------------------------

// ARC (Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement
// Cache", FAST'03, Fig. 4): T1 (seen once recently) and T2 (seen at least
// twice) hold data; B1 and B2 remember what T1 and T2 evicted; the target
// size p of T1 grows on a B1 hit and shrinks on a B2 hit.  The entries
// build is the paper's, with p real as in the paper.  The bytes build is
// the byte-weighted one of libCacheSim's ARC.c: the four lists are
// weighed in bytes, case IV's tests "|L1| = c" and "total = 2c" become
// "T1 + B1 + incoming > c" and "total >= 2c", and eviction repeats until
// the object fits.  One deliberate difference: the step of p is scaled by
// the requested object's size (libCacheSim moves a byte-sized p by the
// bare ratio, i.e. by about one byte per ghost hit, so it barely adapts).
template <bool Bytes> class arc_policy final : public listed<Bytes, 4> {	// T1, T2, B1, B2
	// names of a dependent base, spelt out once
	using base = listed<Bytes, 4>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::w_, base::put, base::take, base::evict_obj,
		base::resize, base::promote;

public:
	arc_policy(const trace &t, uint64_t cap)
		: listed<Bytes, 4>(t, cap)
	{
	}

	bool holds(uint32_t id) const override { return where_[id] == t1 || where_[id] == t2; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_);
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh == t1 || wh == t2, [&] { forget(id); });
		}
		if (wh == t1 || wh == t2) {	// case I: a hit moves to T2's MRU
			if constexpr (Bytes) {
				used_ = used_ - sz_.get(id) + sz;
				w_[wh] -= sz_.get(id);
				sz_.set(id, sz);
			} else {
				w_[wh] -= 1;
			}
			q_.unlink(id);
			put(t2, id);
			if constexpr (Bytes) {
				while (used_ > cap_)
					replace(false);
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		const double cd = static_cast<double>(cap_);
		const double step = static_cast<double>(w);
		bool in_b2 = false;
		if (wh == b1) {		// case II: recency was short of room
			const double d = w_[b1] >= w_[b2] ? 1.0 : double(w_[b2]) / double(w_[b1]);
			p_ = std::min(p_ + d * step, cd);
			unghost(id);
			if (used_ + w > cap_)
				replace(false);
		} else if (wh == b2) {	// case III: frequency was
			const double d = w_[b2] >= w_[b1] ? 1.0 : double(w_[b1]) / double(w_[b2]);
			p_ = std::max(p_ - d * step, 0.0);
			unghost(id);
			in_b2 = true;
			if (used_ + w > cap_)
				replace(true);
		}
		while (used_ + w > cap_)	// case IV (and the bytes build's rest)
			make_room(w, in_b2);
		sz_.set(id, sz);
		used_ += w;
		put(wh == b1 || wh == b2 ? t2 : t1, id);
		return miss(sz);
	}

private:
	enum : uint8_t { t1, t2, b1, b2, none };

	void unghost(uint32_t id) { take(id); }
	// evict data without a ghost (case IV A's second branch, refusals)
	void forget(uint32_t id)
	{
		take(id);
		used_ -= sz_.get(id);
		c.evictions++;
	}
	// REPLACE(x, p): move T1's or T2's LRU to its ghost list
	void replace(bool in_b2)
	{
		const double t1w = static_cast<double>(w_[t1]);
		const bool from_t1 = !q_.empty(q_.sentinel(t1)) &&
				     (t1w > p_ || (in_b2 && t1w == p_) || q_.empty(q_.sentinel(t2)));
		const uint8_t from = from_t1 ? t1 : t2;
		const uint32_t v = q_.back(q_.sentinel(from));
		take(v);
		used_ -= sz_.get(v);
		c.evictions++;
		put(from_t1 ? b1 : b2, v);
	}
	// case IV: x is in no list
	void make_room(uint64_t w, bool in_b2)
	{
		if (w_[t1] + w_[b1] + w > cap_) {	// A: L1 = T1 u B1 is full
			if (w_[t1] < cap_) {
				if (!q_.empty(q_.sentinel(b1)))
					unghost(q_.back(q_.sentinel(b1)));
				replace(in_b2);
			} else {
				forget(q_.back(q_.sentinel(t1)));
			}
		} else {			// B: L1 has room
			if (w_[t1] + w_[t2] + w_[b1] + w_[b2] >= 2 * cap_ &&
			    !q_.empty(q_.sentinel(b2)))
				unghost(q_.back(q_.sentinel(b2)));
			replace(in_b2);
		}
	}

	double p_ = 0;		// target size of T1
};

// ---- S3-FIFO ---------------------------------------------------------------

// S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction",
// SOSP'23, Algorithm 1): a small FIFO S (10% of the cache), a main FIFO M
// (90%) and a ghost FIFO G of as many entries (bytes) as M; a 2-bit
// counter per object, capped at 3, counts hits.
//   miss:  evict while the cache is full; insert into M if the object is
//          in G, else into S, with freq 0
//   evict: from S when S holds at least 10% of the cache, else from M
//   evictS: the tail of S moves to M if freq > 1, i.e. hit at least
//          twice since it was inserted (Algorithm 1's "t.freq > 1"; the
//          paper's own code, libCacheSim's S3FIFOv0.c, moves at freq >= 2
//          too; the later blog and S3FIFO.c use a threshold of 1 hit),
//          with its counter cleared ("its access bits are cleared during
//          the move"), evicting from M if M is then over its share; else
//          it goes to G and the loop ends
//   evictM: the tail of M with freq > 0 goes back to M's head with freq-1;
//          the first with freq 0 is evicted
// G is consulted when the request arrives (as the paper's code does),
// before evicting.  Guards the algorithm leaves implicit: when S is empty
// M is evicted from, and the other way round.
template <bool Bytes> class s3fifo_policy final : public listed<Bytes, 3> {	// S, M, G
	// names of a dependent base, spelt out once
	using base = listed<Bytes, 3>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::w_, base::put, base::take, base::evict_obj,
		base::resize, base::promote;

public:
	s3fifo_policy(const trace &t, uint64_t cap)
		: listed<Bytes, 3>(t, cap), freq_(t.nobjects(), 0)
	{
		s_min_ = share_ceil(cap, 1, 10);	// S.size >= 0.1 * cache
		m_max_ = cap - s_min_;		// M over 0.9 * cache
		g_max_ = m_max_;
	}

	bool holds(uint32_t id) const override { return where_[id] == small_q || where_[id] == main_q; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, freq_);
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh == small_q || wh == main_q, [&] { evict_obj(id); });
		}
		if (wh == small_q || wh == main_q) {
			freq_[id] = static_cast<uint8_t>(std::min(freq_[id] + 1, 3));
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					w_[wh] = w_[wh] - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						evict();
				}
			}
			return hit(sz);
		}
		const bool ghost = wh == ghost_q;
		if (ghost)
			take(id);
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		sz_.set(id, sz);
		freq_[id] = 0;
		put(ghost ? main_q : small_q, id);
		used_ += w;
		return miss(sz);
	}

private:
	enum : uint8_t { small_q, main_q, ghost_q, none };

	void evict()
	{
		if ((w_[small_q] >= s_min_ && !q_.empty(q_.sentinel(small_q))) ||
		    q_.empty(q_.sentinel(main_q)))
			evict_small();
		else
			evict_main();
	}
	void evict_small()
	{
		const uint32_t s = q_.sentinel(small_q);
		while (!q_.empty(s)) {
			const uint32_t v = q_.back(s);
			take(v);
			if (freq_[v] > 1) {
				freq_[v] = 0;
				put(main_q, v);
				if (w_[main_q] > m_max_)
					evict_main();
			} else {
				used_ -= sz_.get(v);
				c.evictions++;
				put(ghost_q, v);
				const uint32_t g = q_.sentinel(ghost_q);
				while (w_[ghost_q] > g_max_)
					take(q_.back(g));
				return;
			}
		}
	}
	void evict_main()
	{
		const uint32_t m = q_.sentinel(main_q);
		while (!q_.empty(m)) {
			const uint32_t v = q_.back(m);
			if (freq_[v] > 0) {
				freq_[v]--;
				q_.move_front(m, v);
			} else {
				evict_obj(v);
				return;
			}
		}
	}

	std::vector<uint8_t> freq_;
	uint64_t s_min_, m_max_, g_max_;
};

// ---- SIEVE -----------------------------------------------------------------

// SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24): one FIFO
// queue, a visited bit per object set by a hit, and a hand that moves from
// the tail (oldest) toward the head, clearing visited bits as it passes
// and evicting the first unvisited object; it stays where it stopped and
// wraps to the tail past the head.  New objects go to the head.
//
// CLOCK (Corbato, "A Paging Experiment with the Multics System", 1968):
// one reference bit per object, set by a hit; the hand sweeps from the
// oldest object, clearing set bits and passing those objects by, and
// evicts the first whose bit is clear.  Kept as a queue whose tail is the
// hand, a passed object rotating to the head: the same victims as a
// circular buffer.  A new object starts with its bit clear, as
// libCacheSim's Clock does.
//
// The two differ only in what the hand does with an object it passes
// (Clock: rotates it to the head), so they are one class.
template <bool Bytes, bool Clock> class hand_policy final : public baseline {
public:
	hand_policy(const trace &t, uint64_t cap)
		: baseline(cap), q_(t.nobjects(), 1), s_(q_.sentinel(0)),
		  visited_(t.nobjects(), 0), sz_(t.nobjects())
	{
	}

	bool holds(uint32_t id) const override { return q_.linked(id); }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, q_, visited_);
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, q_.linked(id), [&] { drop(id); });
		}
		if (q_.linked(id)) {
			visited_[id] = 1;
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						evict();
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		q_.push_front(s_, id);
		visited_[id] = 0;
		sz_.set(id, sz);
		used_ += w;
		return miss(sz);
	}

private:
	void evict()
	{
		if constexpr (Clock) {
			for (;;) {
				const uint32_t v = q_.back(s_);
				if (!visited_[v]) {
					drop(v);
					return;
				}
				visited_[v] = 0;	// its second chance
				q_.move_front(s_, v);
			}
		}
		uint32_t o = hand_ == NIL ? q_.back(s_) : hand_;
		while (visited_[o]) {
			visited_[o] = 0;
			o = q_.newer(o);
			if (o == s_)
				o = q_.back(s_);
		}
		hand_ = o;	// drop() moves it on to the next newer object
		drop(o);
	}
	void drop(uint32_t id)
	{
		if (hand_ == id) {
			// the hand goes on from the next newer object
			const uint32_t n = q_.newer(id);
			hand_ = n == s_ ? NIL : n;
		}
		q_.unlink(id);
		used_ -= sz_.get(id);
		c.evictions++;
	}

	lists q_;
	uint32_t s_;
	uint32_t hand_ = NIL;	// NIL: start from the tail
	std::vector<uint8_t> visited_;
	sizes_of<Bytes> sz_;
};

// ---- W-TinyLFU -------------------------------------------------------------

// TinyLFU's frequency estimate (Einziger, Friedman & Manes, "TinyLFU: A
// Highly Efficient Cache Admission Policy", TOS 2017) as Caffeine's
// FrequencySketch lays it out: a count-min sketch of 4-bit counters,
// 16 per 64-bit word, ceil_pow2(entries) words; each of its 4 hash
// functions picks a word and a counter within a quarter of it chosen by
// the item.  The doorkeeper, a Bloom filter in front of it (the paper's,
// not Caffeine's), takes an item's first occurrence, so one-off objects
// never reach the counters.  After 10 x entries increments every counter
// is halved and the doorkeeper cleared (the paper's reset).
class frequency_sketch {
public:
	explicit frequency_sketch(uint64_t entries)
	{
		entries = std::clamp<uint64_t>(entries, 1, uint64_t(1) << 30);
		uint64_t w = 1;
		while (w < entries)
			w <<= 1;
		table_.assign(w, 0);
		tmask_ = w - 1;
		sample_ = 10 * entries;
		uint64_t bits = 64;
		while (bits < sample_)
			bits <<= 1;
		door_.assign(bits / 64, 0);
		dmask_ = bits - 1;
	}

	void increment(uint32_t id)
	{
		const uint64_t h = mix64(id);
		if (!door_add(h)) {
			const unsigned start = static_cast<unsigned>(h & 3) << 2;
			for (unsigned k = 0; k < 4; k++) {
				uint64_t &word = table_[index(h, k)];
				const unsigned shift = (start + k) << 2;
				if (((word >> shift) & 0xf) != 0xf)
					word += uint64_t(1) << shift;
			}
		}
		if (++additions_ >= sample_)
			reset();
	}

	// touch what increment(id) will, ahead of time
	void prefetch(uint32_t id) const
	{
		const uint64_t h = mix64(id);
		for (unsigned k = 0; k < 4; k++)
			__builtin_prefetch(&table_[index(h, k)], 1);
		__builtin_prefetch(&door_[door_a(h) >> 6], 1);
		__builtin_prefetch(&door_[door_b(h) >> 6], 1);
	}

	unsigned estimate(uint32_t id) const
	{
		const uint64_t h = mix64(id);
		const unsigned start = static_cast<unsigned>(h & 3) << 2;
		unsigned f = 15;
		for (unsigned k = 0; k < 4; k++) {
			const unsigned shift = (start + k) << 2;
			f = std::min(f, static_cast<unsigned>((table_[index(h, k)] >> shift) & 0xf));
		}
		return f + (door_has(h) ? 1 : 0);
	}

private:
	size_t index(uint64_t h, unsigned k) const
	{
		static constexpr uint64_t seeds[4] = { 0xc3a5c85c97cb3127ull, 0xb492b66fbe98f273ull,
						       0x9ae16a3b2f90404full, 0xcbf29ce484222325ull };
		uint64_t x = (h + seeds[k]) * seeds[k];
		x += x >> 32;
		return static_cast<size_t>(x & tmask_);
	}
	// the doorkeeper: two probes; true if both bits were already set
	uint64_t door_a(uint64_t h) const { return (h >> 16) & dmask_; }
	uint64_t door_b(uint64_t h) const { return (h * 0x9e3779b97f4a7c15ull >> 20) & dmask_; }
	bool door_add(uint64_t h)
	{
		const uint64_t a = door_a(h), b = door_b(h);
		const uint64_t ma = uint64_t(1) << (a & 63), mb = uint64_t(1) << (b & 63);
		const bool had = (door_[a >> 6] & ma) && (door_[b >> 6] & mb);
		door_[a >> 6] |= ma;
		door_[b >> 6] |= mb;
		return !had;
	}
	bool door_has(uint64_t h) const
	{
		const uint64_t a = door_a(h), b = door_b(h);
		return (door_[a >> 6] >> (a & 63) & 1) && (door_[b >> 6] >> (b & 63) & 1);
	}
	void reset()
	{
		for (uint64_t &w : table_)
			w = (w >> 1) & 0x7777777777777777ull;
		std::fill(door_.begin(), door_.end(), 0);
		additions_ /= 2;
	}

	std::vector<uint64_t> table_, door_;
	uint64_t tmask_, dmask_;
	uint64_t sample_, additions_ = 0;
};

// W-TinyLFU with a doorkeeper (wtinylfu-dk; Einziger et al.): a window LRU
// of 1% of the cache in front of a main SLRU (probation 20%, protected
// 80% of main).  Every request counts in the sketch.  A new object enters
// the window; the window's LRU victim then becomes a candidate for main:
// if main has room it enters probation, else it duels main's victim (the
// LRU of probation, or of protected when probation is empty) and is
// admitted only if its estimated frequency is strictly higher; the loser
// is evicted.  A probation hit moves to protected, whose overflow goes
// back to probation's MRU.  Caffeine also admits a warm loser (estimate
// > 5) with probability 1/128 against hash flooding; left out here, as
// a trace cannot flood the sketch on purpose.
template <bool Bytes> class wtinylfu_dk_policy final : public listed<Bytes, 3> {	// window, probation, protected
	// names of a dependent base, spelt out once
	using base = listed<Bytes, 3>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::w_, base::put, base::take, base::evict_obj,
		base::resize, base::promote;

public:
	wtinylfu_dk_policy(const trace &t, uint64_t cap)
		: listed<Bytes, 3>(t, cap), sketch_(expected_entries(t, cap))
	{
		win_max_ = share_ceil(cap, 1, 100);	// Caffeine: max - 0.99 max
		main_max_ = cap - win_max_;
		prot_max_ = share_floor(main_max_, 4, 5);
	}

	bool holds(uint32_t id) const override { return where_[id] != none; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_, sketch_);
		sketch_.increment(id);
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh != none, [&] { evict_obj(id); });
		}
		if (wh != none) {
			resize(id, sz);
			if (wh == probation) {
				promote(id, probation, prot, prot_max_);
			} else {
				q_.move_front(q_.sentinel(wh), id);
			}
			if constexpr (Bytes) {
				while (used_ > cap_)
					evict_any();
			}
			return hit(sz);
		}
		sz_.set(id, sz);
		put(window, id);
		used_ += weight<Bytes>(sz);
		const uint32_t ws = q_.sentinel(window);
		while (w_[window] > win_max_) {
			const uint32_t cand = q_.back(ws);
			take(cand);
			admit(cand);
		}
		if constexpr (Bytes) {
			// objects that grew on hits can leave main over its share
			while (used_ > cap_)
				evict_any();
		}
		return miss(sz);
	}

private:
	enum : uint8_t { window, probation, prot, none };

	static uint64_t expected_entries(const trace &t, uint64_t cap)
	{
		// entries: the capacity; bytes: capacity over the mean request size
		uint64_t e = cap;
		if constexpr (Bytes) {
			if (!t.sizes.empty()) {
				long double sum = 0;
				for (uint32_t s : t.sizes)
					sum += s;
				const long double mean = std::max<long double>(1, sum / t.sizes.size());
				e = static_cast<uint64_t>(static_cast<long double>(cap) / mean);
			}
		}
		return std::clamp<uint64_t>(e, 1, std::max<uint32_t>(t.nobjects(), 1));
	}

	uint32_t main_victim() const
	{
		if (!q_.empty(q_.sentinel(probation)))
			return q_.back(q_.sentinel(probation));
		if (!q_.empty(q_.sentinel(prot)))
			return q_.back(q_.sentinel(prot));
		return NIL;
	}
	// the window's victim asks main for room (it is out of every list)
	void admit(uint32_t cand)
	{
		const uint64_t w = sz_.get(cand);
		while (w_[probation] + w_[prot] + w > main_max_) {
			const uint32_t v = main_victim();
			if (v == NIL || sketch_.estimate(cand) <= sketch_.estimate(v)) {
				used_ -= w;	// refused: the candidate goes
				c.evictions++;
				return;
			}
			evict_obj(v);
		}
		put(probation, cand);
	}
	// a grown object overflowed the cache: evict in main's order, then
	// the window's
	void evict_any()
	{
		const uint32_t v = main_victim();
		evict_obj(v != NIL ? v : q_.back(q_.sentinel(window)));
	}

	frequency_sketch sketch_;
	uint64_t win_max_, main_max_, prot_max_;
};

// ---- W-TinyLFU as Caffeine has it -------------------------------------------

// Caffeine's FrequencySketch (Manes): TinyLFU's count-min sketch of 4-bit
// counters, no doorkeeper.  ceil_pow2(entries) 64-bit words (at least 8)
// in blocks of 8 (one 64-byte line); an item's hash picks a block, and
// each of the 4 rows a word among a pair of that block and one of its 16
// counters.  increment() bumps the 4 counters that are below 15 and
// counts the increment if any moved; at 10 x entries counted increments
// every counter is halved and the count becomes (count - odd counters /
// 4) / 2.  The estimate is the least of the 4.  Lazy as Caffeine's: it
// counts nothing until start(), which Caffeine calls when the cache is
// first half full.
class caffeine_sketch {
public:
	explicit caffeine_sketch(uint64_t entries)
	{
		entries = std::clamp<uint64_t>(entries, 1, uint64_t(1) << 30);
		uint64_t w = 8;
		while (w < entries)
			w <<= 1;
		words_ = w;
		block_mask_ = w / 8 - 1;
		sample_ = 10 * entries;
	}
	bool started() const { return !table_.empty(); }
	void start() { table_.assign(words_, 0); }
	uint64_t sample_size() const { return sample_; }

	void increment(uint32_t id)
	{
		if (table_.empty())
			return;
		const uint64_t h = mix64(id);
		const uint32_t counter_hash = static_cast<uint32_t>(h >> 32);
		const size_t block = (static_cast<uint32_t>(h) & block_mask_) << 3;
		bool added = false;
		for (unsigned k = 0; k < 4; k++) {
			const uint32_t c = counter_hash >> (k << 3);
			const unsigned shift = ((c >> 1) & 15) << 2;
			uint64_t &word = table_[block + (c & 1) + (k << 1)];
			if (((word >> shift) & 0xf) != 0xf) {
				word += uint64_t(1) << shift;
				added = true;
			}
		}
		if (added && ++size_ == sample_)
			reset();
	}

	void prefetch(uint32_t id) const
	{
		if (!table_.empty())
			__builtin_prefetch(&table_[(static_cast<uint32_t>(mix64(id)) & block_mask_) << 3], 1);
	}

	unsigned estimate(uint32_t id) const
	{
		if (table_.empty())
			return 0;
		const uint64_t h = mix64(id);
		const uint32_t counter_hash = static_cast<uint32_t>(h >> 32);
		const size_t block = (static_cast<uint32_t>(h) & block_mask_) << 3;
		unsigned f = 15;
		for (unsigned k = 0; k < 4; k++) {
			const uint32_t c = counter_hash >> (k << 3);
			const unsigned shift = ((c >> 1) & 15) << 2;
			f = std::min(f, static_cast<unsigned>(
						(table_[block + (c & 1) + (k << 1)] >> shift) & 0xf));
		}
		return f;
	}

private:
	void reset()
	{
		uint64_t odd = 0;
		for (uint64_t &w : table_) {
			odd += static_cast<uint64_t>(__builtin_popcountll(w & 0x1111111111111111ull));
			w = (w >> 1) & 0x7777777777777777ull;
		}
		size_ = (size_ - (odd >> 2)) >> 1;
	}

	std::vector<uint64_t> table_;
	uint64_t words_, block_mask_, sample_, size_ = 0;
};

// The cache's size in entries for a sketch: the capacity, or in bytes the
// capacity over the trace's mean request size (at least 1, at most the
// trace's objects).
template <bool Bytes> uint64_t sketch_entries(const trace &t, uint64_t cap)
{
	uint64_t e = cap;
	if constexpr (Bytes) {
		if (!t.sizes.empty()) {
			long double sum = 0;
			for (uint32_t s : t.sizes)
				sum += s;
			const long double mean = std::max<long double>(1, sum / t.sizes.size());
			e = static_cast<uint64_t>(static_cast<long double>(cap) / mean);
		}
	}
	return std::clamp<uint64_t>(e, 1, std::max<uint32_t>(t.nobjects(), 1));
}

// W-TinyLFU as Caffeine's BoundedLocalCache runs it (Einziger, Eytan,
// Friedman & Manes, "Adaptive Software Cache Management", Middleware'18,
// for the hill climber).  Sizes: window = cap - floor(0.99 cap), main the
// rest, protected at most floor(0.8 main).  Per request, as one
// maintenance cycle of Caffeine's:
//   hit: the sketch counts it; a window or protected hit moves to its
//     list's MRU end; a probation hit moves to protected's (unless it
//     weighs more than protected's maximum).  A hit counts in the sample.
//   miss: the object enters the window's MRU end; the sketch starts when
//     the cache is first half full, then counts it.  A miss counts.
//   evictEntries: while the window is over its maximum its LRU object
//     moves to probation's MRU end, a candidate; then while the cache is
//     over capacity the newest candidate duels probation's LRU victim
//     (victims walk toward the MRU end; with none left protected's LRU,
//     then the window's; with no candidate left the window's MRU object
//     is the candidate): admitted if its estimate is higher than the
//     victim's, or, when it is at least 6, with probability 1/128 (the
//     generator starts from opts.seed); the loser is evicted.
//   climb: when the sample holds 10 x entries requests, the hit rate's
//     change from the last sample picks the direction: the same step when
//     it rose or held, the opposite when it fell; the next step is 6.25%
//     of the cache, in the new direction, when the rate moved by 0.05 or
//     more, else 0.98 of this one; the first step is -6.25% of the cache.
//     Protected's overflow is demoted (LRU to probation's MRU end); then
//     the window grows by the step, taking probation's LRU objects (then
//     protected's) to its MRU end and lowering protected's maximum, or
//     shrinks (to at least 1), moving its LRU objects to probation's MRU
//     end, up to 1000 objects a cycle, the rest kept for the next.
// Departures from Caffeine, for a simulator: the sketch of the bytes
// build is sized once to the capacity over the mean request size
// (Caffeine's weighted cache resizes, and clears, it as its entry count
// grows); an object larger than the whole cache is refused up front.
template <bool Bytes> class wtinylfu_policy final : public listed<Bytes, 3> {	// window, probation, protected
	// names of a dependent base, spelt out once
	using base = listed<Bytes, 3>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::w_, base::put, base::take, base::evict_obj,
		base::resize, base::promote;

public:
	wtinylfu_policy(const trace &t, uint64_t cap, uint64_t seed)
		: listed<Bytes, 3>(t, cap), sketch_(sketch_entries<Bytes>(t, cap)), rng_(seed)
	{
		win_max_ = cap - share_floor(cap, 99, 100);
		prot_max_ = share_floor(cap - win_max_, 4, 5);
		step_ = -step_percent * static_cast<double>(cap);
	}

	uint64_t window_max() const { return win_max_; }

	bool holds(uint32_t id) const override { return where_[id] != none; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_, sketch_);
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh != none, [&] { evict_obj(id); });
		}
		if (wh != none) {
			sketch_.increment(id);
			bool grew = false;
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					w_[wh] = w_[wh] - sz_.get(id) + sz;
					sz_.set(id, sz);
					grew = true;
				}
			}
			if (wh == probation && sz_.get(id) <= prot_max_) {
				take(id);
				put(prot, id);
			} else {
				q_.move_front(q_.sentinel(wh), id);
			}
			hits_++;
			if (grew)
				evict_entries();
			climb();
			return hit(sz);
		}
		sz_.set(id, sz);
		put(window, id);
		used_ += weight<Bytes>(sz);
		if (!sketch_.started() && used_ >= cap_ / 2)
			sketch_.start();
		sketch_.increment(id);
		misses_++;
		evict_entries();
		climb();
		return miss(sz);
	}

private:
	enum : uint8_t { window, probation, prot, none };
	static constexpr double step_percent = 0.0625, step_decay = 0.98, restart = 0.05;
	static constexpr unsigned transfer_max = 1000;

	uint32_t oldest(uint8_t l) const
	{
		const uint32_t s = q_.sentinel(l);
		return q_.empty(s) ? NIL : q_.back(s);
	}
	uint32_t newest(uint8_t l) const
	{
		const uint32_t s = q_.sentinel(l);
		return q_.empty(s) ? NIL : q_.front(s);
	}
	// the neighbours toward the MRU and the LRU end, NIL past the end
	uint32_t next_newer(uint32_t id) const
	{
		const uint32_t n = q_.newer(id);
		return n == q_.sentinel(where_[id]) ? NIL : n;
	}
	uint32_t next_older(uint32_t id) const
	{
		const uint32_t n = q_.older(id);
		return n == q_.sentinel(where_[id]) ? NIL : n;
	}

	void evict_entries()
	{
		int candidates = 0;
		while (w_[window] > win_max_ && !q_.empty(q_.sentinel(window))) {
			const uint32_t v = oldest(window);
			take(v);
			put(probation, v);
			candidates++;
		}
		evict_from_main(candidates);
	}

	void evict_from_main(int candidates)
	{
		uint8_t victim_q = probation;
		uint32_t victim = oldest(probation);
		uint32_t cand = newest(probation);
		while (used_ > cap_) {
			// (Caffeine 3's evictFromMain: the window's peekLast,
			// walking older; its 2.x took peekFirst, walking newer)
			if (candidates == 0)
				cand = newest(window);
			if (cand == NIL && victim == NIL) {
				if (victim_q == probation) {
					victim = oldest(prot);
					victim_q = prot;
					continue;
				}
				if (victim_q == prot) {
					victim = oldest(window);
					victim_q = window;
					continue;
				}
				break;
			}
			if (victim == NIL) {
				const uint32_t e = cand;
				cand = next_older(cand);
				candidates--;
				evict_obj(e);
				continue;
			}
			if (cand == NIL) {
				const uint32_t e = victim;
				victim = next_newer(victim);
				evict_obj(e);
				continue;
			}
			if (cand == victim) {
				victim = next_newer(victim);
				const uint32_t e = cand;
				cand = next_older(cand);
				candidates--;
				evict_obj(e);
				continue;
			}
			candidates--;
			if (admit(cand, victim)) {
				const uint32_t e = victim;
				victim = next_newer(victim);
				evict_obj(e);
				cand = next_older(cand);
			} else {
				const uint32_t e = cand;
				cand = next_older(cand);
				evict_obj(e);
			}
		}
	}

	bool admit(uint32_t cand, uint32_t victim)
	{
		const unsigned vf = sketch_.estimate(victim);
		const unsigned cf = sketch_.estimate(cand);
		if (cf > vf)
			return true;
		if (cf >= 6)
			return (mix64_finish(rng_ += splitmix_gamma) & 127) == 0;
		return false;
	}

	void climb()
	{
		determine_adjustment();
		demote_from_protected();
		if (adjust_ > 0)
			increase_window();
		else if (adjust_ < 0)
			decrease_window();
	}
	void determine_adjustment()
	{
		if (!sketch_.started()) {
			prev_rate_ = 0;
			hits_ = misses_ = 0;
			return;
		}
		const uint64_t n = hits_ + misses_;
		if (n < sketch_.sample_size())
			return;
		const double rate = static_cast<double>(hits_) / static_cast<double>(n);
		const double change = rate - prev_rate_;
		const double amount = change >= 0 ? step_ : -step_;
		step_ = std::fabs(change) >= restart
				? step_percent * static_cast<double>(cap_) * (amount >= 0 ? 1 : -1)
				: step_decay * amount;
		prev_rate_ = rate;
		adjust_ = static_cast<int64_t>(amount);
		hits_ = misses_ = 0;
	}
	void demote_from_protected()
	{
		for (unsigned k = 0; k < transfer_max && w_[prot] > prot_max_; k++) {
			const uint32_t v = oldest(prot);
			if (v == NIL)
				break;
			take(v);
			put(probation, v);
		}
	}
	void increase_window()
	{
		if (prot_max_ == 0)
			return;
		uint64_t quota = std::min<uint64_t>(static_cast<uint64_t>(adjust_), prot_max_);
		prot_max_ -= quota;
		win_max_ += quota;
		demote_from_protected();
		for (unsigned k = 0; k < transfer_max; k++) {
			uint32_t v = oldest(probation);
			if (v == NIL || quota < sz_.get(v))
				v = oldest(prot);
			if (v == NIL || quota < sz_.get(v))
				break;
			quota -= sz_.get(v);
			take(v);
			put(window, v);
		}
		prot_max_ += quota;
		win_max_ -= quota;
		adjust_ = static_cast<int64_t>(quota);
	}
	void decrease_window()
	{
		if (win_max_ <= 1)
			return;
		uint64_t quota = std::min<uint64_t>(static_cast<uint64_t>(-adjust_), win_max_ - 1);
		prot_max_ += quota;
		win_max_ -= quota;
		for (unsigned k = 0; k < transfer_max; k++) {
			const uint32_t v = oldest(window);
			if (v == NIL || quota < sz_.get(v))
				break;
			quota -= sz_.get(v);
			take(v);
			put(probation, v);
		}
		prot_max_ -= quota;
		win_max_ += quota;
		adjust_ = -static_cast<int64_t>(quota);
	}

	caffeine_sketch sketch_;
	uint64_t rng_;
	uint64_t win_max_, prot_max_;
	uint64_t hits_ = 0, misses_ = 0;	// in this sample
	double prev_rate_ = 0, step_;
	int64_t adjust_ = 0;
};

// ---- random (write-back) ---------------------------------------------------

// Random replacement as NIC caches evict (a victim chosen uniformly among
// the cached objects by a PRNG seeded from opts.seed), write-back: a
// write, hit or miss (write-allocate), leaves the object dirty, and
// evicting a dirty object counts a writeback.
template <bool Bytes> class random_policy final : public baseline {
public:
	random_policy(const trace &t, uint64_t cap, uint64_t seed)
		: baseline(cap), pos_(t.nobjects(), NIL), dirty_(t.nobjects(), 0),
		  sz_(t.nobjects()), rng_(seed)
	{
		slots_.reserve(std::min<uint64_t>(cap, t.nobjects()));
	}

	bool holds(uint32_t id) const override { return pos_[id] != NIL; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, pos_, dirty_);
		const bool wr = t.is_write(i);
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, pos_[id] != NIL, [&] { drop(id); });
		}
		if (pos_[id] != NIL) {
			dirty_[id] |= wr;
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						drop(slots_[pick()]);
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			drop(slots_[pick()]);
		pos_[id] = static_cast<uint32_t>(slots_.size());
		slots_.push_back(id);
		dirty_[id] = wr;
		sz_.set(id, sz);
		used_ += w;
		return miss(sz);
	}

private:
	size_t pick()
	{
		rng_ += 0x9e3779b97f4a7c15ull;
		uint64_t x = rng_;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		x ^= x >> 31;
		// Lemire's multiply-shift: uniform enough, no division
		return static_cast<size_t>((static_cast<unsigned __int128>(x) * slots_.size()) >> 64);
	}
	void drop(uint32_t id)
	{
		const uint32_t p = pos_[id];
		const uint32_t last = slots_.back();
		slots_[p] = last;
		pos_[last] = p;
		slots_.pop_back();
		pos_[id] = NIL;
		if (dirty_[id]) {
			c.writebacks++;
			dirty_[id] = 0;
		}
		used_ -= sz_.get(id);
		c.evictions++;
	}

	std::vector<uint32_t> pos_;	// per object: index in slots_, NIL if absent
	std::vector<uint32_t> slots_;	// the cached objects
	std::vector<uint8_t> dirty_;
	sizes_of<Bytes> sz_;
	uint64_t rng_;
};

// ---- Belady ----------------------------------------------------------------

// Belady's MIN: evict the cached object whose next use is farthest.  The
// cached objects sit in an indexed max-heap keyed by next use (never = the
// largest key), so a request costs O(log n).
//
// Entries: optimal with bypass.  A miss need not be cached: the incoming
// object competes with the cached ones, and if its own next use is the
// farthest (in particular, never) it is not cached.  This is MIN on the
// cache plus the incoming object, which minimises misses among all
// policies that may bypass, and so bounds every demand policy from below.
// Bytes: a heuristic (the optimum with sizes is NP-hard): evict by
// farthest next use until the object fits, but bypass it as soon as the
// farthest cached object is needed sooner than it is.
template <bool Bytes> class belady_policy final : public baseline {
public:
	belady_policy(const trace &t, uint64_t cap)
		: baseline(cap), pos_(t.nobjects(), NIL), key_(t.nobjects(), 0),
		  sz_(t.nobjects())
	{
		if (t.next.empty()) {
			trace tmp;	// only what compute_next reads
			tmp.ids = t.ids;
			tmp.keys = t.keys;
			compute_next(tmp);
			own_next_ = std::move(tmp.next);
		} else if (t.next.size() != t.size()) {
			throw sim_error("belady: the trace's next-access array does not match its requests");
		}
		heap_.reserve(std::min<uint64_t>(cap, t.nobjects()));
	}

	bool holds(uint32_t id) const override { return pos_[id] != NIL; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, pos_, key_);
		const int64_t nx = own_next_.empty() ? t.next[i] : own_next_[i];
		const uint64_t k = nx < 0 ? std::numeric_limits<uint64_t>::max()
					  : static_cast<uint64_t>(nx);
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, pos_[id] != NIL, [&] { drop(id); });
		}
		if (pos_[id] != NIL) {
			rekey(id, k);
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						drop(heap_[0]);
				}
			}
			return hit(sz);
		}
		if (k == std::numeric_limits<uint64_t>::max())
			return miss(sz);	// never used again: bypass
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_) {
			if (key_[heap_[0]] < k)
				return miss(sz);	// it is the farthest: bypass
			drop(heap_[0]);
		}
		key_[id] = k;
		pos_[id] = static_cast<uint32_t>(heap_.size());
		heap_.push_back(id);
		up(pos_[id]);
		sz_.set(id, sz);
		used_ += w;
		return miss(sz);
	}

private:
	void place(size_t at, uint32_t id)
	{
		heap_[at] = id;
		pos_[id] = static_cast<uint32_t>(at);
	}
	void up(size_t at)
	{
		const uint32_t id = heap_[at];
		while (at > 0) {
			const size_t parent = (at - 1) / 2;
			if (key_[heap_[parent]] >= key_[id])
				break;
			place(at, heap_[parent]);
			at = parent;
		}
		place(at, id);
	}
	void down(size_t at)
	{
		const uint32_t id = heap_[at];
		const size_t n = heap_.size();
		for (;;) {
			size_t child = 2 * at + 1;
			if (child >= n)
				break;
			if (child + 1 < n && key_[heap_[child + 1]] > key_[heap_[child]])
				child++;
			if (key_[heap_[child]] <= key_[id])
				break;
			place(at, heap_[child]);
			at = child;
		}
		place(at, id);
	}
	void rekey(uint32_t id, uint64_t k)
	{
		const uint64_t old = key_[id];
		key_[id] = k;
		if (k > old)
			up(pos_[id]);
		else
			down(pos_[id]);
	}
	void drop(uint32_t id)
	{
		const size_t at = pos_[id];
		const uint32_t last = heap_.back();
		heap_.pop_back();
		pos_[id] = NIL;
		if (last != id) {
			place(at, last);
			up(at);
			down(pos_[last]);
		}
		used_ -= sz_.get(id);
		c.evictions++;
	}

	std::vector<uint32_t> pos_;	// per object: heap index, NIL if absent
	std::vector<uint64_t> key_;	// per object: next use of its last request
	std::vector<uint32_t> heap_;
	std::vector<int64_t> own_next_;	// when the trace has none
	sizes_of<Bytes> sz_;
};

// ---- LIRS ------------------------------------------------------------------

// LIRS (Jiang & Zhang, "LIRS: An Efficient Low Inter-reference Recency Set
// Replacement Policy to Improve Buffer Cache Performance", SIGMETRICS'02):
// the LIR set (99% of the cache) holds the objects of small inter-reference
// recency, the resident HIR objects (the other 1%, at least one entry) the
// rest.  The stack S orders objects by recency: every LIR object, and the
// HIR objects (resident or not) more recent than the oldest LIR one, which
// pruning keeps at S's bottom.  The queue Q holds the resident HIR objects,
// its front the next victim.
//   hit LIR: to the top of S; prune if it was the bottom
//   hit HIR in S: it becomes LIR and leaves Q; the bottom LIR object
//        becomes a resident HIR at Q's end; prune.  Not in S: to the top
//        of S and Q's end, still HIR
//   miss: evict Q's front (still in S, it stays there as non-resident);
//        then as a hit on HIR in S if it was non-resident in S, else a
//        resident HIR at the top of S and Q's end -- or LIR while the LIR
//        set has room (the cold start)
// Non-resident entries are bounded as Caffeine's simulator bounds them (its
// lirs.non-resident-multiplier, 2.0), else a scan grows S without end: at
// most twice the cache (entries, or bytes of their sizes); past that the
// oldest to become non-resident leaves S.
// Bytes: the LIR set is 99% of the bytes, a promotion demotes bottom LIR
// objects until the set fits, and room is made by demoting the bottom LIR
// object when Q is empty.
template <bool Bytes> class lirs_policy final : public baseline {
public:
	lirs_policy(const trace &t, uint64_t cap)
		: baseline(cap), s_(t.nobjects(), 1), q_(t.nobjects(), 2), st_(t.nobjects(), none),
		  sz_(t.nobjects()), S_(s_.sentinel(0)), Q_(q_.sentinel(0)), NR_(q_.sentinel(1))
	{
		lir_max_ = cap - share_ceil(cap, 1, 100);
		nr_max_ = cap > std::numeric_limits<uint64_t>::max() / 2
				  ? std::numeric_limits<uint64_t>::max()
				  : 2 * cap;
	}

	bool holds(uint32_t id) const override { return st_[id] == lir || st_[id] == hir; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, st_, s_, q_);
		const uint8_t st = st_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, st == lir || st == hir, [&] { forget(id); });
		}
		if (st == lir || st == hir) {
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					if (st == lir)
						lir_w_ = lir_w_ - sz_.get(id) + sz;
					sz_.set(id, sz);
				}
			}
			if (st == lir) {
				const bool bottom = s_.back(S_) == id;
				s_.move_front(S_, id);
				if (bottom)
					prune();
			} else if (s_.linked(id)) {
				q_.unlink(id);
				to_lir(id);
			} else {
				s_.push_front(S_, id);
				q_.move_front(Q_, id);
				prune_lone();
			}
			if constexpr (Bytes) {
				fit_lir();
				while (used_ > cap_)
					evict();
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();	// may prune or trim id's own non-resident entry
		if (st_[id] == ghost) {
			q_.unlink(id);
			nr_w_ -= sz_.get(id);
			sz_.set(id, sz);
			used_ += w;
			to_lir(id);
		} else {
			sz_.set(id, sz);
			used_ += w;
			s_.push_front(S_, id);
			if (lir_w_ + w <= lir_max_) {
				st_[id] = lir;
				lir_w_ += w;
			} else {
				st_[id] = hir;
				q_.push_front(Q_, id);
				prune_lone();
			}
		}
		return miss(sz);
	}

private:
	enum : uint8_t { lir, hir, ghost, none };

	// an HIR object in S (out of Q already) becomes LIR at S's top
	void to_lir(uint32_t id)
	{
		st_[id] = lir;
		lir_w_ += sz_.get(id);
		s_.move_front(S_, id);
		fit_lir();
	}
	// demote bottom LIR objects to Q's end until the LIR set fits
	void fit_lir()
	{
		while (lir_w_ > lir_max_)
			demote();
	}
	void demote()
	{
		const uint32_t v = s_.back(S_);
		s_.unlink(v);
		st_[v] = hir;
		lir_w_ -= sz_.get(v);
		q_.push_front(Q_, v);
		prune();
	}
	// drop HIR entries from S's bottom until a LIR one is there; resident
	// ones stay in Q
	void prune()
	{
		while (!s_.empty(S_) && st_[s_.back(S_)] != lir) {
			const uint32_t v = s_.back(S_);
			s_.unlink(v);
			if (st_[v] == ghost) {
				q_.unlink(v);
				nr_w_ -= sz_.get(v);
				st_[v] = none;
			}
		}
	}
	// with no LIR object in S (a cache of one entry, whose LIR set is
	// empty), an HIR object pushed on S is at its bottom: pruned at once
	void prune_lone()
	{
		if (lir_w_ == 0)
			prune();
	}
	void evict()
	{
		if (q_.empty(Q_))
			demote();	// bytes: Q emptied by a large object
		const uint32_t v = q_.back(Q_);
		q_.unlink(v);
		used_ -= sz_.get(v);
		c.evictions++;
		if (!s_.linked(v)) {
			st_[v] = none;
			return;
		}
		st_[v] = ghost;
		q_.push_front(NR_, v);
		nr_w_ += sz_.get(v);
		while (nr_w_ > nr_max_) {
			const uint32_t g = q_.back(NR_);
			q_.unlink(g);
			s_.unlink(g);	// never S's bottom, which is LIR
			nr_w_ -= sz_.get(g);
			st_[g] = none;
		}
	}
	// a resident object refused at a size larger than the cache
	void forget(uint32_t id)
	{
		if (s_.linked(id))
			s_.unlink(id);
		if (q_.linked(id))
			q_.unlink(id);
		if (st_[id] == lir)
			lir_w_ -= sz_.get(id);
		st_[id] = none;
		used_ -= sz_.get(id);
		c.evictions++;
		prune();
	}

	lists s_;	// the stack S, top at the front
	lists q_;	// Q (the resident HIR objects, the victim at the back)
			// and the non-resident entries, the oldest at the back
	std::vector<uint8_t> st_;
	sizes_of<Bytes> sz_;
	uint32_t S_, Q_, NR_;	// the sentinels
	uint64_t lir_max_, nr_max_;
	uint64_t lir_w_ = 0, nr_w_ = 0;
};

// ---- 2Q --------------------------------------------------------------------

// 2Q, the full version (Johnson & Shasha, "2Q: A Low Overhead High
// Performance Buffer Management Replacement Algorithm", VLDB'94): A1in, a
// FIFO of objects seen once (Kin = 25% of the cache), Am, an LRU of objects
// seen again after leaving A1in, and A1out, a FIFO of the ids A1in evicted
// (Kout = 50% of the cache, holding no data).
//   hit in Am: to Am's MRU; hit in A1in: nothing (a correlated reference)
//   miss: in A1out, to Am's MRU; else to A1in's head
//   room: while A1in is over Kin its tail goes to A1out's head (A1out's
//         tail falling off past Kout), else Am's LRU is evicted
// Guard the paper leaves implicit: with Am empty, A1in's tail goes.
template <bool Bytes> class twoq_policy final : public listed<Bytes, 3> {	// A1in, Am, A1out
	// names of a dependent base, spelt out once
	using base = listed<Bytes, 3>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::w_, base::put, base::take, base::evict_obj,
		base::resize, base::promote;

public:
	twoq_policy(const trace &t, uint64_t cap)
		: listed<Bytes, 3>(t, cap)
	{
		kin_ = share_floor(cap, 1, 4);
		kout_ = share_floor(cap, 1, 2);
	}

	bool holds(uint32_t id) const override { return where_[id] == a1in || where_[id] == am; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_);
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh == a1in || wh == am, [&] { evict_obj(id); });
		}
		if (wh == a1in || wh == am) {
			resize(id, sz);
			if (wh == am)
				q_.move_front(q_.sentinel(am), id);
			if constexpr (Bytes) {
				while (used_ > cap_)
					reclaim();
			}
			return hit(sz);
		}
		const bool ghost = wh == a1out;
		if (ghost)
			take(id);
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			reclaim();
		sz_.set(id, sz);
		put(ghost ? am : a1in, id);
		used_ += w;
		return miss(sz);
	}

private:
	enum : uint8_t { a1in, am, a1out, none };

	void reclaim()
	{
		const uint32_t in = q_.sentinel(a1in);
		if (!q_.empty(in) && (w_[a1in] > kin_ || q_.empty(q_.sentinel(am)))) {
			const uint32_t v = q_.back(in);
			take(v);
			used_ -= sz_.get(v);
			c.evictions++;
			put(a1out, v);
			const uint32_t out = q_.sentinel(a1out);
			while (w_[a1out] > kout_)
				take(q_.back(out));
		} else {
			evict_obj(q_.back(q_.sentinel(am)));
		}
	}

	uint64_t kin_, kout_;
};

// ---- SLRU ------------------------------------------------------------------

// Segmented LRU (Karedla, Love & Wherry, "Caching Strategies to Improve
// Disk System Performance", IEEE Computer, 1994): a probationary and a
// protected LRU segment, the protected one at most 80% of the cache.  A
// miss enters probationary's MRU end; a hit there (the object's second
// request) promotes it to protected's MRU end, and protected's overflow
// goes back, from its LRU end, to probationary's MRU end.  The victim is
// probationary's LRU object (protected's when probationary is empty).
template <bool Bytes> class slru_policy final : public listed<Bytes, 2> {	// probationary, protected
	// names of a dependent base, spelt out once
	using base = listed<Bytes, 2>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::w_, base::put, base::take, base::evict_obj,
		base::resize, base::promote;

public:
	slru_policy(const trace &t, uint64_t cap)
		: listed<Bytes, 2>(t, cap)
	{
		prot_max_ = share_floor(cap, 4, 5);
	}

	bool holds(uint32_t id) const override { return where_[id] != none; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_);
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh != none, [&] { evict_obj(id); });
		}
		if (wh != none) {
			resize(id, sz);
			if (wh == probation) {
				promote(id, probation, prot, prot_max_);
			} else {
				q_.move_front(q_.sentinel(prot), id);
			}
			if constexpr (Bytes) {
				while (used_ > cap_)
					evict();
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		sz_.set(id, sz);
		put(probation, id);
		used_ += w;
		return miss(sz);
	}

private:
	enum : uint8_t { probation, prot, none };

	void evict()
	{
		const uint32_t ps = q_.sentinel(probation);
		evict_obj(q_.back(!q_.empty(ps) ? ps : q_.sentinel(prot)));
	}

	uint64_t prot_max_;
};

// An indexed binary min-heap of objects: each object's key and its place
// in the heap, so that a key can change and any object leave in O(log n).
// The heap of LRU-2, GDSF and LeCaR's LFU expert; K needs operator<.
template <class K> class object_heap {
public:
	object_heap(uint32_t nobjects, uint64_t cap) : pos_(nobjects, NIL), key_(nobjects)
	{
		h_.reserve(std::min<uint64_t>(cap, nobjects));
	}
	bool contains(uint32_t id) const { return pos_[id] != NIL; }
	bool empty() const { return h_.empty(); }
	uint32_t top() const { return h_[0]; }
	const K &key(uint32_t id) const { return key_[id]; }
	void prefetch(uint32_t id) const
	{
		__builtin_prefetch(&pos_[id], 1);
		__builtin_prefetch(&key_[id], 1);
	}
	void push(uint32_t id, const K &k)
	{
		key_[id] = k;
		h_.push_back(id);
		up(h_.size() - 1);
	}
	void update(uint32_t id, const K &k)
	{
		const bool smaller = k < key_[id];
		key_[id] = k;
		if (smaller)
			up(pos_[id]);
		else
			down(pos_[id]);
	}
	void erase(uint32_t id)
	{
		const size_t at = pos_[id];
		const uint32_t last = h_.back();
		h_.pop_back();
		pos_[id] = NIL;
		if (last != id) {
			place(at, last);
			up(at);
			down(pos_[last]);
		}
	}

private:
	void place(size_t at, uint32_t id)
	{
		h_[at] = id;
		pos_[id] = static_cast<uint32_t>(at);
	}
	void up(size_t at)
	{
		const uint32_t id = h_[at];
		while (at > 0) {
			const size_t parent = (at - 1) / 2;
			if (!(key_[id] < key_[h_[parent]]))
				break;
			place(at, h_[parent]);
			at = parent;
		}
		place(at, id);
	}
	void down(size_t at)
	{
		const uint32_t id = h_[at];
		const size_t n = h_.size();
		for (;;) {
			size_t child = 2 * at + 1;
			if (child >= n)
				break;
			if (child + 1 < n && key_[h_[child + 1]] < key_[h_[child]])
				child++;
			if (!(key_[h_[child]] < key_[id]))
				break;
			place(at, h_[child]);
			at = child;
		}
		place(at, id);
	}

	std::vector<uint32_t> pos_;	// per object: heap index, NIL if absent
	std::vector<K> key_;
	std::vector<uint32_t> h_;
};

// ---- LRU-2 -----------------------------------------------------------------

// LRU-K with K = 2 (O'Neil, O'Neil & Weikum, "The LRU-K Page Replacement
// Algorithm For Database Disk Buffering", SIGMOD'93), with a correlated
// reference period of 0: every request counts.  Each object keeps the
// times of its last two requests, HIST(1) and HIST(2); the victim is the
// object of the largest backward 2-distance, the oldest HIST(2).  Objects
// seen only once have an infinite one and go first, the least recently
// used of them first (they wait in an LRU list; the others in a heap by
// HIST(2)).  The history of evicted objects is retained, bounded at as
// many objects (bytes) as the cache holds, oldest evicted forgotten first:
// one seen again while remembered has two references at once.
template <bool Bytes> class lru2_policy final : public baseline {
public:
	lru2_policy(const trace &t, uint64_t cap)
		: baseline(cap), q_(t.nobjects(), 2), twice_(t.nobjects(), cap),
		  st_(t.nobjects(), none), last_(t.nobjects(), 0), sz_(t.nobjects()),
		  once_s_(q_.sentinel(0)), hist_s_(q_.sentinel(1))
	{
	}

	bool holds(uint32_t id) const override { return st_[id] == once || st_[id] == twice; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, st_, last_, q_, twice_);
		const uint64_t now = ++now_;
		const uint8_t st = st_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, st == once || st == twice, [&] { forget(id); });
		}
		if (st == once || st == twice) {
			const uint64_t prev = last_[id];
			last_[id] = now;
			if (st == once) {
				q_.unlink(id);
				st_[id] = twice;
				twice_.push(id, prev);
			} else {
				twice_.update(id, prev);
			}
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						evict();
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();	// may forget id's own history
		if (st_[id] == hist) {
			q_.unlink(id);
			hist_w_ -= sz_.get(id);
			st_[id] = twice;
			twice_.push(id, last_[id]);
		} else {
			st_[id] = once;
			q_.push_front(once_s_, id);
		}
		last_[id] = now;
		sz_.set(id, sz);
		used_ += w;
		return miss(sz);
	}

private:
	enum : uint8_t { once, twice, hist, none };

	void unplace(uint32_t v)
	{
		if (st_[v] == once)
			q_.unlink(v);
		else
			twice_.erase(v);
		used_ -= sz_.get(v);
		c.evictions++;
	}
	void evict()
	{
		const uint32_t v = !q_.empty(once_s_) ? q_.back(once_s_) : twice_.top();
		unplace(v);
		st_[v] = hist;
		q_.push_front(hist_s_, v);
		hist_w_ += sz_.get(v);
		while (hist_w_ > cap_) {
			const uint32_t g = q_.back(hist_s_);
			q_.unlink(g);
			hist_w_ -= sz_.get(g);
			st_[g] = none;
		}
	}
	// refused at a size larger than the cache: dropped, history and all
	void forget(uint32_t id)
	{
		unplace(id);
		st_[id] = none;
	}

	lists q_;			// objects seen once (LRU) and the history
	object_heap<uint64_t> twice_;	// the others, by HIST(2)
	std::vector<uint8_t> st_;
	std::vector<uint64_t> last_;	// HIST(1): the last request's time
	sizes_of<Bytes> sz_;
	uint32_t once_s_, hist_s_;
	uint64_t hist_w_ = 0;
	uint64_t now_ = 0;
};

// ---- GDSF ------------------------------------------------------------------

// GreedyDual-Size-Frequency (Cherkasova, "Improving WWW Proxies Performance
// with Greedy-Dual-Size-Frequency Caching Policy", HP Labs HPL-98-69R1,
// 1998): each cached object has the priority H = L + freq / size (cost 1),
// set when it enters and on every hit; the victim is the lowest H, and L,
// the inflation value, becomes the victim's H, so that objects not
// requested for long age out.  Ties go to the least recently requested.
// An evicted object's count is forgotten.  Sized in entries every object
// weighs 1 and this is LFU with dynamic aging.
struct gdsf_key {
	double h;
	uint64_t seq;	// the last request's time
	bool operator<(const gdsf_key &o) const { return h < o.h || (h == o.h && seq < o.seq); }
};

template <bool Bytes> class gdsf_policy final : public baseline {
public:
	gdsf_policy(const trace &t, uint64_t cap)
		: baseline(cap), heap_(t.nobjects(), cap), freq_(t.nobjects(), 0), sz_(t.nobjects())
	{
	}

	bool holds(uint32_t id) const override { return heap_.contains(id); }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, heap_, freq_);
		const uint64_t now = ++now_;
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, heap_.contains(id), [&] { drop(id); });
		}
		if (heap_.contains(id)) {
			freq_[id]++;
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					sz_.set(id, sz);
				}
			}
			heap_.update(id, key(id, now));
			if constexpr (Bytes) {
				while (used_ > cap_)
					evict();
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		freq_[id] = 1;
		sz_.set(id, sz);
		heap_.push(id, key(id, now));
		used_ += w;
		return miss(sz);
	}

private:
	gdsf_key key(uint32_t id, uint64_t now) const
	{
		// a 0-byte object counts as 1 byte: no infinite priority
		const double size = std::max<double>(1, static_cast<double>(sz_.get(id)));
		return gdsf_key{ l_ + static_cast<double>(freq_[id]) / size, now };
	}
	void evict()
	{
		const uint32_t v = heap_.top();
		l_ = heap_.key(v).h;
		drop(v);
	}
	void drop(uint32_t id)
	{
		heap_.erase(id);
		freq_[id] = 0;
		used_ -= sz_.get(id);
		c.evictions++;
	}

	object_heap<gdsf_key> heap_;
	std::vector<uint32_t> freq_;
	sizes_of<Bytes> sz_;
	double l_ = 0;	// the inflation value L
	uint64_t now_ = 0;
};

// ---- sampling --------------------------------------------------------------

// The cached objects of a sampling policy (Hyperbolic, LHD): a dense array
// of slots, each naming its object, and each object's place in it, so that
// a sample is a random index and any object leaves in O(1).  The victim is
// the lowest of 64 slots drawn at random, as both papers sample (the lowest
// of all of them when 64 or fewer are cached: the same victim, exactly).
// Slot needs an id; its generator starts from opts.seed.
template <class Slot> class sampled {
public:
	sampled(uint32_t nobjects, uint64_t cap, uint64_t seed) : pos_(nobjects, NIL), rng_(seed)
	{
		slots_.reserve(std::min<uint64_t>(cap, nobjects));
	}
	bool contains(uint32_t id) const { return pos_[id] != NIL; }
	Slot &at(uint32_t id) { return slots_[pos_[id]]; }
	void prefetch(uint32_t id) const { __builtin_prefetch(&pos_[id]); }
	void push(const Slot &s)
	{
		pos_[s.id] = static_cast<uint32_t>(slots_.size());
		slots_.push_back(s);
	}
	// takes id out; returns its slot
	Slot erase(uint32_t id)
	{
		const uint32_t p = pos_[id];
		const Slot gone = slots_[p];
		slots_[p] = slots_.back();
		pos_[slots_[p].id] = p;
		slots_.pop_back();
		pos_[id] = NIL;
		return gone;
	}
	// the object whose slot is lowest by lower(a, b) among the sample
	template <class Lower> uint32_t victim(Lower lower)
	{
		size_t v = 0;
		if (slots_.size() <= samples) {
			for (size_t k = 1; k < slots_.size(); k++)
				if (lower(slots_[k], slots_[v]))
					v = k;
			return slots_[v].id;
		}
		size_t at[samples];
		for (size_t k = 0; k < samples; k++) {
			at[k] = pick();
			__builtin_prefetch(&slots_[at[k]]);
		}
		v = at[0];
		for (size_t k = 1; k < samples; k++)
			if (lower(slots_[at[k]], slots_[v]))
				v = at[k];
		return slots_[v].id;
	}

private:
	static constexpr size_t samples = 64;

	size_t pick()
	{
		const uint64_t x = mix64_finish(rng_ += splitmix_gamma);
		return static_cast<size_t>((static_cast<unsigned __int128>(x) * slots_.size()) >> 64);
	}

	std::vector<uint32_t> pos_;	// per object: index in slots_, NIL if absent
	std::vector<Slot> slots_;	// the cached objects
	uint64_t rng_;
};

// ---- Hyperbolic ------------------------------------------------------------

// Hyperbolic caching (Blankstein, Sen & Freedman, "Hyperbolic Caching:
// Flexible Caching for Web Applications", USENIX ATC'17): an object's
// priority is the requests it had since it entered the cache over the time
// it has been there, n / t (over its size too, n / (t * size), in bytes,
// the paper's size-aware variant); the victim is the lowest priority among
// 64 resident objects sampled at random, as the paper samples (see
// sampled).  Time counts requests.  Its generator starts from opts.seed.
template <bool Bytes> class hyperbolic_policy final : public baseline {
public:
	hyperbolic_policy(const trace &t, uint64_t cap, uint64_t seed)
		: baseline(cap), res_(t.nobjects(), cap, seed)
	{
	}

	bool holds(uint32_t id) const override { return res_.contains(id); }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, res_);
		now_++;
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, res_.contains(id), [&] { drop(id); });
		}
		if (res_.contains(id)) {
			slot &e = res_.at(id);
			e.n++;
			if constexpr (Bytes) {
				if (e.size != sz) {
					used_ = used_ - e.size + sz;
					e.size = sz;
					while (used_ > cap_)
						drop(victim());
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			drop(victim());
		res_.push(slot{ 1, now_, id, static_cast<uint32_t>(w) });
		used_ += w;
		return miss(sz);
	}

private:
	// what sampling reads, in one place: one cache line a sample
	struct slot {
		uint64_t n;	// requests since it entered
		uint64_t t0;	// when it entered
		uint32_t id;
		uint32_t size;	// its weight (1 in entries)
	};

	// a's priority below b's: n_a / (t_a s_a) < n_b / (t_b s_b), without
	// dividing; ties to the older
	bool lower(const slot &a, const slot &b) const
	{
		const double ta = static_cast<double>(std::max<uint64_t>(1, now_ - a.t0));
		const double tb = static_cast<double>(std::max<uint64_t>(1, now_ - b.t0));
		const double sa = std::max<uint32_t>(1, a.size), sb = std::max<uint32_t>(1, b.size);
		const double pa = static_cast<double>(a.n) * tb * sb;
		const double pb = static_cast<double>(b.n) * ta * sa;
		return pa < pb || (pa == pb && a.t0 < b.t0);
	}
	uint32_t victim()
	{
		return res_.victim([this](const slot &a, const slot &b) { return lower(a, b); });
	}
	void drop(uint32_t id)
	{
		used_ -= res_.erase(id).size;
		c.evictions++;
	}

	sampled<slot> res_;
	uint64_t now_ = 0;
};

// ---- learning from regret: LeCaR and CACHEUS --------------------------------

// What LeCaR and CACHEUS share (LeCaR's Algorithm 1): two experts with a
// weight each, w for the first and 1 - w for the second, 0.5 to start.  A
// miss that must make room evicts the first expert's victim with
// probability w, else the second's, and remembers it in that expert's
// history (a FIFO of N/2 objects, N the cache's size in entries, or of half
// its bytes).  A miss found in an expert's history is its regret: the other
// weight is multiplied by e^(rate r), r = d^t, t the requests it spent in
// the history and d = 0.005^(1/N); then the weights are normalised.  Sized
// in bytes, N is the capacity over the trace's mean request size.  The
// generator starts from opts.seed.
template <bool Bytes, uint8_t N> class regret_experts : public listed<Bytes, N> {
protected:
	regret_experts(const trace &t, uint64_t cap, uint64_t seed)
		: listed<Bytes, N>(t, cap), out_at_(t.nobjects(), 0), rng_(seed)
	{
		entries_ = expected_entries(t, cap);
		discount_ = std::pow(0.005, 1.0 / static_cast<double>(entries_));
		hist_max_ = share_floor(cap, 1, 2);
	}

	// a uniform draw in [0, 1)
	double uniform() { return static_cast<double>(mix64_finish(rng_ += splitmix_gamma) >> 11) * 0x1p-53; }
	// whether the first expert names this victim
	bool draw_first() { return uniform() < w1_; }
	// a miss found in the first's history (first_wrong) or the second's,
	// gone there at out_at_[id]
	void regret(uint32_t id, bool first_wrong, uint64_t now, double rate)
	{
		const double r = std::pow(discount_, static_cast<double>(now - out_at_[id]));
		const double gain = std::exp(rate * r);
		double w2 = 1 - w1_;
		if (first_wrong)
			w2 *= gain;
		else
			w1_ *= gain;
		w1_ /= w1_ + w2;
		// a floor, as libCacheSim's: an expert weighed 0 could never
		// gain again (its weight only ever multiplies)
		w1_ = std::clamp(w1_, 1e-10, 1 - 1e-10);
	}
	// v, just evicted, into history h; leave(g) for each object that the
	// history's bound pushes out
	template <class Leave> void remember(uint8_t h, uint32_t v, uint64_t now, Leave leave)
	{
		this->put(h, v);
		out_at_[v] = now;
		const uint32_t hs = this->q_.sentinel(h);
		while (this->w_[h] > hist_max_) {
			const uint32_t g = this->q_.back(hs);
			this->take(g);
			leave(g);
		}
	}

	std::vector<uint64_t> out_at_;	// when it went to a history
	uint64_t rng_;
	double w1_ = 0.5;	// the first expert's weight
	uint64_t entries_;	// N
	double discount_;
	uint64_t hist_max_;

private:
	static uint64_t expected_entries(const trace &t, uint64_t cap)
	{
		uint64_t e = cap;
		if constexpr (Bytes) {
			if (!t.sizes.empty()) {
				long double sum = 0;
				for (uint32_t s : t.sizes)
					sum += s;
				const long double mean =
					std::max<long double>(1, sum / t.sizes.size());
				e = static_cast<uint64_t>(static_cast<long double>(cap) / mean);
			}
		}
		return std::max<uint64_t>(e, 1);
	}
};

// An LFU expert's order: count, then the last request's time; Mru breaks
// ties to the most recently used (CR-LFU), else to the least (LeCaR's LFU).
template <bool Mru> struct freq_key {
	uint64_t freq, last;
	bool operator<(const freq_key &o) const
	{
		return freq < o.freq || (freq == o.freq && (Mru ? last > o.last : last < o.last));
	}
};

// ---- LeCaR -----------------------------------------------------------------

// LeCaR (Vietri et al., "Driving Cache Replacement with ML-based LeCaR",
// HotStorage'18, Algorithm 1): regret_experts with LRU first and LFU (ties
// to the least recently used) second, and a fixed learning rate lambda =
// 0.45.  An object back from a history keeps its count.
template <bool Bytes> class lecar_policy final : public regret_experts<Bytes, 3> {	// cache, H_LRU, H_LFU
	// names of a dependent base, spelt out once
	using base = regret_experts<Bytes, 3>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::put, base::take, base::evict_obj,
		base::resize, base::w1_, base::regret, base::remember, base::draw_first;

public:
	lecar_policy(const trace &t, uint64_t cap, uint64_t seed)
		: base(t, cap, seed), lfu_(t.nobjects(), cap), freq_(t.nobjects(), 0)
	{
	}

	double lru_weight() const { return w1_; }

	bool holds(uint32_t id) const override { return where_[id] == cached; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_, lfu_, freq_);
		const uint64_t now = ++now_;
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh == cached, [&] {
					lfu_.erase(id);
					evict_obj(id);
				});
		}
		if (wh == cached) {
			resize(id, sz);
			q_.move_front(q_.sentinel(cached), id);
			lfu_.update(id, key{ ++freq_[id], now });
			if constexpr (Bytes) {
				while (used_ > cap_)
					evict();
			}
			return hit(sz);
		}
		if (wh == h_lru || wh == h_lfu) {
			// the expert that evicted it regrets it: the other gains
			regret(id, wh == h_lru, now, lambda);
			take(id);
			freq_[id]++;
		} else {
			freq_[id] = 1;
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		sz_.set(id, sz);
		put(cached, id);
		lfu_.push(id, key{ freq_[id], now });
		used_ += w;
		return miss(sz);
	}

private:
	enum : uint8_t { cached, h_lru, h_lfu, none };
	static constexpr double lambda = 0.45;
	using key = freq_key<false>;

	void evict()
	{
		const bool by_lru = draw_first();
		const uint32_t v = by_lru ? q_.back(q_.sentinel(cached)) : lfu_.top();
		lfu_.erase(v);
		evict_obj(v);
		remember(by_lru ? h_lru : h_lfu, v, now_, [](uint32_t) {});
	}

	object_heap<key> lfu_;	// the cached objects by (count, last request)
	std::vector<uint64_t> freq_;
	uint64_t now_ = 0;
};

// ---- CACHEUS ---------------------------------------------------------------

// CACHEUS (Rodriguez et al., "Learning Cache Replacement with CACHEUS",
// FAST'21): regret_experts with SR-LRU first and CR-LFU second, and a
// learning rate that adapts.
//   SR-LRU, scan-resistant LRU: the cache is split into SR, where new
//     objects enter, and R, the objects requested again (an SR hit moves
//     to R; an object back from a history enters R).  R's overflow is
//     demoted to SR's MRU end; the victim is SR's LRU end (R's when SR is
//     empty).  SR's target size adapts: a miss found in SR-LRU's history
//     on an object it evicted new (never hit) means SR was too small: it
//     grows by max(1, D / H); a hit on a demoted object in SR means R was:
//     SR shrinks by max(1, H / D), D the demoted objects in SR, H the new
//     ones in the history.  It starts at half the cache, and stays within
//     [1, N - 1] (N the capacity).
//   CR-LFU, churn-resistant LFU: the least frequent, ties to the most
//     recently used, so that under churn the objects already cached stay.
//   The learning rate lambda starts at 0.45 (LeCaR's), and every N
//     requests (a window; N in entries, as regret_experts has it) moves by
//     the sign of (change in the window's hit rate) / (its own last
//     change): lambda += sign |lambda * its last change|, at least 10^-3.
//     When it did not change, ten windows in a row without a better hit
//     rate restart it at random in [10^-3, 1).
// An object keeps its count through a history, as LeCaR's.  Sized in
// bytes, SR's steps are the object's size times the ratio.
template <bool Bytes> class cacheus_policy final : public regret_experts<Bytes, 4> {	// SR, R, H_SR, H_CR
	using base = regret_experts<Bytes, 4>;
	using base::c, base::cap_, base::used_, base::hit, base::miss, base::refuse;
	using base::q_, base::where_, base::sz_, base::put, base::take, base::evict_obj,
		base::resize, base::w1_, base::regret, base::remember, base::draw_first,
		base::uniform, base::entries_;

public:
	cacheus_policy(const trace &t, uint64_t cap, uint64_t seed)
		: base(t, cap, seed), lfu_(t.nobjects(), cap), freq_(t.nobjects(), 0),
		  flags_(t.nobjects(), 0)
	{
		sr_hi_ = cap > 1 ? cap - 1 : 1;
		sr_max_ = std::clamp<uint64_t>(cap / 2, 1, sr_hi_);
	}

	double sr_weight() const { return w1_; }
	double learning_rate() const { return lr_; }

	bool holds(uint32_t id) const override { return where_[id] == sr || where_[id] == r; }
	int access(const trace &t, size_t i) override
	{
		const int tier = serve(t, i);
		window(tier == 0);
		return tier;
	}

private:
	enum : uint8_t { sr, r, h_sr, h_cr, none };
	enum : uint8_t { is_new = 1, demoted = 2 };
	using key = freq_key<true>;

	int serve(const trace &t, size_t i)
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, where_, q_, lfu_, freq_, flags_);
		const uint64_t now = ++now_;
		const uint8_t wh = where_[id];
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, wh == sr || wh == r, [&] { drop(id); });
		}
		if (wh == sr || wh == r) {
			resize(id, sz);
			if (wh == sr) {
				if (flags_[id] & demoted) {
					demoted_n_--;
					step_sr(false, hist_new_n_, demoted_n_ + 1, sz);
				}
				flags_[id] = 0;
				take(id);
				put(r, id);
				fit_r();
			} else {
				q_.move_front(q_.sentinel(r), id);
			}
			lfu_.update(id, key{ ++freq_[id], now });
			if constexpr (Bytes) {
				while (used_ > cap_)
					evict();
			}
			return hit(sz);
		}
		const bool back = wh == h_sr || wh == h_cr;
		if (back) {
			regret(id, wh == h_sr, now, lr_);
			if (wh == h_sr && (flags_[id] & is_new)) {
				hist_new_n_--;
				step_sr(true, demoted_n_, hist_new_n_ + 1, sz);
			}
			flags_[id] = 0;
			take(id);
			freq_[id]++;
		} else {
			flags_[id] = is_new;
			freq_[id] = 1;
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		sz_.set(id, sz);
		put(back ? r : sr, id);
		lfu_.push(id, key{ freq_[id], now });
		used_ += w;
		fit_r();
		return miss(sz);
	}
	// SR grows (or shrinks) by max(1, num / den) objects of this size
	void step_sr(bool grow, uint64_t num, uint64_t den, uint32_t sz)
	{
		const uint64_t d = std::max<uint64_t>(1, num / std::max<uint64_t>(1, den)) * weight<Bytes>(sz);
		sr_max_ = grow ? std::min(sr_hi_, sr_max_ + std::min(d, sr_hi_))
			       : sr_max_ - std::min(d, sr_max_ - 1);
		fit_r();
	}
	// R's overflow to SR's MRU end, marked demoted
	void fit_r()
	{
		const uint32_t rs = q_.sentinel(r);
		while (listed<Bytes, 4>::w_[r] > cap_ - sr_max_) {
			const uint32_t v = q_.back(rs);
			take(v);
			put(sr, v);
			flags_[v] = demoted;
			demoted_n_++;
		}
	}
	void drop(uint32_t id)
	{
		lfu_.erase(id);
		if (flags_[id] & demoted)
			demoted_n_--;
		flags_[id] = 0;
		evict_obj(id);
	}
	void evict()
	{
		const bool by_sr = draw_first();
		uint32_t v;
		if (by_sr) {
			const uint32_t s = q_.sentinel(sr);
			v = q_.back(q_.empty(s) ? q_.sentinel(r) : s);
		} else {
			v = lfu_.top();
		}
		const bool was_new = by_sr && (flags_[v] & is_new);
		drop(v);
		if (was_new) {
			flags_[v] = is_new;
			hist_new_n_++;
		}
		remember(by_sr ? h_sr : h_cr, v, now_, [this](uint32_t g) {
			if (flags_[g] & is_new)
				hist_new_n_--;
			flags_[g] = 0;
		});
	}
	// the end of a window of N requests: move lambda
	void window(bool was_hit)
	{
		win_hits_ += was_hit;
		if (++win_req_ < entries_)
			return;
		const double hr = static_cast<double>(win_hits_) / static_cast<double>(win_req_);
		const double dhr = hr - hr_prev_, dlr = lr_ - lr_prev_;
		lr_prev_ = lr_;
		hr_prev_ = hr;
		if (dlr != 0) {
			const double sign = dhr / dlr > 0 ? 1 : -1;
			lr_ = std::max(lr_ + sign * std::fabs(lr_ * dlr), 1e-3);
			unlearn_ = 0;
		} else if ((hr == 0 || dhr <= 0) && ++unlearn_ >= 10) {
			unlearn_ = 0;
			lr_ = 1e-3 + uniform() * (1 - 1e-3);
		}
		win_req_ = win_hits_ = 0;
	}

	object_heap<key> lfu_;	// CR-LFU: the cached objects by (count, last request)
	std::vector<uint64_t> freq_;
	std::vector<uint8_t> flags_;	// is_new: never hit (in SR, or H_SR);
					// demoted: in SR from R
	uint64_t sr_max_, sr_hi_;	// SR's target weight, its bound
	uint64_t demoted_n_ = 0;	// demoted objects in SR
	uint64_t hist_new_n_ = 0;	// new objects in H_SR
	double lr_ = 0.45, lr_prev_ = 0, hr_prev_ = 0;
	uint64_t win_req_ = 0, win_hits_ = 0, unlearn_ = 0;
	uint64_t now_ = 0;
};

// ---- LHD -------------------------------------------------------------------

// LHD (Beckmann, Chen & Cidon, "LHD: Improving Cache Hit Rate by Maximizing
// Hit Density", NSDI'18): the victim is the object of the lowest hit
// density, the hits it can still expect over the space-time it will still
// take: for an object of age a in class c, the hits at ages past a over
// the sum of the remaining lifetimes, from the counts of hits and
// evictions at each (class, age) -- over its size in bytes.  Ages count
// requests since the object's last request, coarsened (shifted right so
// that 1024 buckets span 32 N requests, N the cache's size in entries; the
// last bucket holds all older).  Classes are the hits an object had since
// it entered, 0 to 15 (the paper's reuse classes, without its application
// ids).  Every max(64, 4 N) requests the densities are recomputed and the
// counts decay by 0.9, an EWMA (a class with no events yet takes the
// densities of the class below); until the first time, a density of
// 1 / (age + 1) makes it LRU-like (by size, in bytes).  The victim is the
// lowest of 64 sampled objects (see sampled), ties to the least recently
// requested.  No explorer objects.  Its generator starts from opts.seed.
template <bool Bytes> class lhd_policy final : public baseline {
public:
	lhd_policy(const trace &t, uint64_t cap, uint64_t seed)
		: baseline(cap), res_(t.nobjects(), cap, seed), hits_(classes * ages, 0),
		  evictions_(classes * ages, 0), density_(classes * ages)
	{
		const uint64_t n = sketch_entries<Bytes>(t, cap);
		while ((static_cast<uint64_t>(ages) << shift_) < 32 * n && shift_ < 40)
			shift_++;
		interval_ = std::max<uint64_t>(64, 4 * n);
		for (size_t k = 0; k < density_.size(); k++)
			density_[k] = 1.0 / static_cast<double>(k % ages + 1);
	}

	bool holds(uint32_t id) const override { return res_.contains(id); }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, res_);
		now_++;
		if (++since_ >= interval_)
			reconfigure();
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, res_.contains(id), [&] { drop(id); });
		}
		if (res_.contains(id)) {
			slot &e = res_.at(id);
			hits_[at(e)]++;
			e.last = now_;
			e.cls = static_cast<uint8_t>(std::min<unsigned>(e.cls + 1, classes - 1));
			if constexpr (Bytes) {
				if (e.size != sz) {
					used_ = used_ - e.size + sz;
					e.size = sz;
					while (used_ > cap_)
						evict();
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			evict();
		res_.push(slot{ now_, id, static_cast<uint32_t>(w), 0 });
		used_ += w;
		return miss(sz);
	}

private:
	static constexpr unsigned classes = 16, ages = 1024;
	static constexpr double decay = 0.9;

	struct slot {
		uint64_t last;	// its last request
		uint32_t id;
		uint32_t size;	// its weight (1 in entries)
		uint8_t cls;
	};

	// its (class, coarsened age) counter
	size_t at(const slot &e) const
	{
		const uint64_t a = std::min<uint64_t>((now_ - e.last) >> shift_, ages - 1);
		return static_cast<size_t>(e.cls) * ages + a;
	}
	// a's density below b's: d_a / s_a < d_b / s_b, without dividing;
	// ties to the older
	bool lower(const slot &a, const slot &b) const
	{
		const double sa = std::max<uint32_t>(1, a.size), sb = std::max<uint32_t>(1, b.size);
		const double pa = density_[at(a)] * sb, pb = density_[at(b)] * sa;
		return pa < pb || (pa == pb && a.last < b.last);
	}
	// from the oldest age down: hits above a over the lifetime still to
	// come, each event at age x >= a counting x - a + 1
	void reconfigure()
	{
		since_ = 0;
		for (unsigned cl = 0; cl < classes; cl++) {
			double hits = 0, events = 0, life = 0;
			for (unsigned a = ages; a-- > 0;) {
				const size_t k = static_cast<size_t>(cl) * ages + a;
				hits += hits_[k];
				events += hits_[k] + evictions_[k];
				life += events;
				density_[k] = life > 0 ? hits / life : 0;
				hits_[k] *= decay;
				evictions_[k] *= decay;
			}
			// no events yet: the class below's densities, not 0
			// (which would evict its objects before any could hit)
			if (events == 0 && cl > 0)
				std::copy_n(&density_[(cl - 1) * ages], ages, &density_[cl * ages]);
		}
	}
	void evict()
	{
		const uint32_t v =
			res_.victim([this](const slot &a, const slot &b) { return lower(a, b); });
		evictions_[at(res_.at(v))]++;
		drop(v);
	}
	void drop(uint32_t id)
	{
		used_ -= res_.erase(id).size;
		c.evictions++;
	}

	sampled<slot> res_;
	std::vector<double> hits_, evictions_;	// per (class, age), decaying
	std::vector<double> density_;		// per (class, age)
	unsigned shift_ = 0;
	uint64_t interval_, since_ = 0;
	uint64_t now_ = 0;
};

// ---- CLOCK-Pro -------------------------------------------------------------

// CLOCK-Pro (Jiang, Chen & Zhang, "CLOCK-Pro: An Effective Improvement of
// the CLOCK Replacement", USENIX ATC'05): LIRS's idea on a clock.  Resident
// objects are hot or cold; a cold object is in its test period from when
// it enters (or a hand restarts it) until a hand ends it, and stays on the
// clock after its eviction as a non-resident test entry.  One circular
// list, new entries at its head; three hands sweep it from its tail:
//   HAND_cold evicts: at a resident cold object with its reference bit
//     set, it clears it, and the object turns hot if in its test period
//     (else a new test period starts) and moves to the head; one with the
//     bit clear is evicted, staying as a test entry if in its test period.
//   HAND_hot, run while the hot objects exceed m - m_c, turns the first
//     hot object with its bit clear cold (clearing set bits as it passes),
//     and ends the test periods it passes (a non-resident entry leaves).
//   HAND_test, run while the test entries exceed m, ends test periods
//     until a non-resident entry has left.
// A hit only sets the reference bit.  A miss on a test entry makes it hot
// at the head; another miss enters cold, in its test period -- or hot
// while the hot objects are below m - m_c (the cold start, as LIRS).  m_c,
// the cold objects' allocation, adapts: +1 when a cold object is requested
// in its test period, -1 when a test period ends unrequested, within
// [1% of m (at least 1), m]; it starts at the floor, LIRS's split.  The
// floor is ours: at m_c = 1 HAND_cold would walk the whole clock for
// each eviction, to the one cold object there is.  Sized in
// bytes, m is the capacity, each object counts its size (in m_c's steps
// too) and the test entries are bounded by m bytes.  The hands move
// independently, and one at an entry that leaves or moves to the head
// goes on to the next.
template <bool Bytes> class clockpro_policy final : public baseline {
public:
	clockpro_policy(const trace &t, uint64_t cap)
		: baseline(cap), clk_(t.nobjects(), 1), S_(clk_.sentinel(0)), st_(t.nobjects(), none),
		  ref_(t.nobjects(), 0), test_(t.nobjects(), 0), sz_(t.nobjects())
	{
		mc_ = mc_min_ = std::max<uint64_t>(1, share_ceil(cap, 1, 100));
	}

	bool holds(uint32_t id) const override { return st_[id] == hot || st_[id] == cold; }
	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		prefetch_ahead(t, i, st_, clk_, ref_);
		if constexpr (Bytes) {
			if (sz > cap_)
				return refuse(sz, holds(id), [&] { forget(id); });
		}
		if (holds(id)) {
			ref_[id] = 1;
			if constexpr (Bytes) {
				if (sz_.get(id) != sz) {
					used_ = used_ - sz_.get(id) + sz;
					if (st_[id] == hot)
						hot_w_ = hot_w_ - sz_.get(id) + sz;
					sz_.set(id, sz);
					while (used_ > cap_)
						run_cold();
				}
			}
			return hit(sz);
		}
		const uint64_t w = weight<Bytes>(sz);
		while (used_ + w > cap_)
			run_cold();	// may end id's own test period
		if (st_[id] == test) {
			leave(id);
			nonres_w_ -= sz_.get(id);
			mc_ = std::min(cap_, mc_ + w);
			enter(id, sz, hot);
		} else {
			enter(id, sz, hot_w_ + w <= cap_ - mc_ ? hot : cold);
		}
		while (hot_w_ > cap_ - mc_)
			run_hot();
		return miss(sz);
	}

private:
	enum : uint8_t { hot, cold, test, none };

	void enter(uint32_t id, uint32_t sz, uint8_t st)
	{
		const uint64_t w = weight<Bytes>(sz);
		sz_.set(id, sz);
		st_[id] = st;
		ref_[id] = 0;
		test_[id] = st == cold;
		clk_.push_front(S_, id);
		used_ += w;
		if (st == hot)
			hot_w_ += w;
	}
	// the entry after id, the hands' way (tail to head, wrapping)
	uint32_t after(uint32_t id) const
	{
		const uint32_t n = clk_.newer(id);
		return n == S_ ? clk_.back(S_) : n;
	}
	uint32_t start(uint32_t hand) const { return hand == NIL ? clk_.back(S_) : hand; }
	// id leaves its place: hands at it go on to the next entry
	void unhand(uint32_t id)
	{
		const uint32_t n = after(id);
		for (uint32_t *h : { &hand_cold_, &hand_hot_, &hand_test_ })
			if (*h == id)
				*h = n == id ? NIL : n;
	}
	void leave(uint32_t id)
	{
		unhand(id);
		clk_.unlink(id);
	}
	void to_head(uint32_t id)
	{
		unhand(id);
		clk_.move_front(S_, id);
	}
	void fewer_cold(uint64_t w) { mc_ -= std::min(w, mc_ - mc_min_); }
	// a test period ends unrequested: a non-resident entry leaves
	void end_test(uint32_t id)
	{
		fewer_cold(sz_.get(id));
		if (st_[id] == test) {
			leave(id);
			nonres_w_ -= sz_.get(id);
			st_[id] = none;
		} else {
			test_[id] = 0;
		}
	}
	// HAND_cold: evict one resident cold object
	void run_cold()
	{
		for (;;) {
			if (used_ == hot_w_)
				run_hot();	// no cold object (left): make one
			uint32_t h = start(hand_cold_);
			while (st_[h] != cold)
				h = after(h);
			hand_cold_ = h;
			const uint64_t w = sz_.get(h);
			if (ref_[h]) {
				ref_[h] = 0;
				if (test_[h]) {
					st_[h] = hot;
					test_[h] = 0;
					hot_w_ += w;
					mc_ = std::min(cap_, mc_ + w);
				} else {
					test_[h] = 1;
				}
				to_head(h);
				while (hot_w_ > cap_ - mc_)
					run_hot();
				continue;
			}
			used_ -= w;
			c.evictions++;
			if (test_[h]) {
				hand_cold_ = after(h);
				st_[h] = test;
				nonres_w_ += w;
				while (nonres_w_ > cap_)
					run_test();
			} else {
				leave(h);
				st_[h] = none;
			}
			return;
		}
	}
	// HAND_hot: turn one hot object cold
	void run_hot()
	{
		if (hot_w_ == 0)
			return;
		for (;;) {
			const uint32_t h = start(hand_hot_);
			hand_hot_ = after(h);
			if (st_[h] == hot) {
				if (ref_[h]) {
					ref_[h] = 0;
					continue;
				}
				st_[h] = cold;
				test_[h] = 0;
				hot_w_ -= sz_.get(h);
				return;
			}
			if (st_[h] == test || test_[h])
				end_test(h);
		}
	}
	// HAND_test: end test periods until a non-resident entry has left
	void run_test()
	{
		for (;;) {
			const uint32_t h = start(hand_test_);
			hand_test_ = after(h);
			if (st_[h] == test) {
				end_test(h);
				return;
			}
			if (test_[h])
				end_test(h);
		}
	}
	// a resident object refused at a size larger than the cache
	void forget(uint32_t id)
	{
		leave(id);
		used_ -= sz_.get(id);
		if (st_[id] == hot)
			hot_w_ -= sz_.get(id);
		st_[id] = none;
		c.evictions++;
	}

	lists clk_;	// the clock: head at the front, the hands go tail to head
	uint32_t S_;
	uint32_t hand_cold_ = NIL, hand_hot_ = NIL, hand_test_ = NIL;	// NIL: at the tail
	std::vector<uint8_t> st_;
	std::vector<uint8_t> ref_;	// the reference bit
	std::vector<uint8_t> test_;	// a resident cold object in its test period
	sizes_of<Bytes> sz_;
	uint64_t mc_, mc_min_;		// m_c, the cold allocation, and its floor
	uint64_t hot_w_ = 0, nonres_w_ = 0;
};

// ---- admission filters -----------------------------------------------------

// POLICY+tinylfu and POLICY+size:MAX: a filter in front of any baseline
// that decides whether a miss is admitted at all.  A request for an
// object the policy holds goes to it (a hit); a miss goes to it only if
// every filter admits the object, else it is a miss the policy never
// sees (its ghosts and histories do not learn of it either).
//   tinylfu: TinyLFU's frequency sketch (Einziger, Friedman & Manes, TOS
//     2017), Caffeine's layout (caffeine_sketch, sized to the cache,
//     counting from the first request), counts every request; a miss is
//     admitted when its estimate is at least 2 (it was seen before within
//     the sketch's memory).  A threshold, not a duel with the policy's
//     victim: not every policy can name its victim before it evicts.
//   size:MAX: admits objects of at most MAX bytes (in a bytes build; an
//     entries build has no sizes and the filter is left out).  Admission
//     only: an object cached at a smaller size and asked for larger stays.
class filtered final : public baseline {
public:
	filtered(std::unique_ptr<policy> inner, const trace &t, uint64_t cap, bool bytes,
		 bool tinylfu, uint64_t max_size)
		: baseline(cap), in_(std::move(inner)), b_(static_cast<baseline &>(*in_)),
		  sketch_(bytes ? sketch_entries<true>(t, cap) : sketch_entries<false>(t, cap)),
		  tinylfu_(tinylfu), max_size_(max_size)
	{
		if (tinylfu_)
			sketch_.start();
	}

	bool holds(uint32_t id) const override { return b_.holds(id); }

	int access(const trace &t, size_t i) override
	{
		const uint32_t id = t.ids[i];
		const uint32_t sz = t.size_of(i);
		if (tinylfu_) {
			if (i + lookahead < t.size())
				sketch_.prefetch(t.ids[i + lookahead]);
			sketch_.increment(id);
		}
		if (!b_.holds(id) && ((max_size_ && sz > max_size_) ||
				      (tinylfu_ && sketch_.estimate(id) < 2)))
			return miss(sz);
		const int tier = in_->access(t, i);
		c.requests++;
		c.bytes += sz;
		c.hits[tier]++;
		if (tier != 0)
			c.miss_bytes += sz;
		c.evictions = in_->c.evictions;
		c.writebacks = in_->c.writebacks;
		c.admissions_refused = in_->c.admissions_refused;
		used_ = b_.held();
		return tier;
	}

private:
	std::unique_ptr<policy> in_;
	const baseline &b_;
	caffeine_sketch sketch_;
	bool tinylfu_;
	uint64_t max_size_;	// 0: no size filter
};

template <template <bool> class P, class... A>
std::unique_ptr<policy> build(bool bytes, const trace &t, uint64_t cap, A... a)
{
	if (bytes)
		return std::make_unique<P<true>>(t, cap, a...);
	return std::make_unique<P<false>>(t, cap, a...);
}

// what f reads of p when p is a P (either build), else -1: the learned
// state tests look at
template <template <bool> class P, class F> double learned(const policy &p, F f)
{
	if (const auto *l = dynamic_cast<const P<false> *>(&p))
		return f(*l);
	if (const auto *l = dynamic_cast<const P<true> *>(&p))
		return f(*l);
	return -1;
}

template <bool B> using lru_policy = queue_policy<B, true>;
template <bool B> using fifo_policy = queue_policy<B, false>;
template <bool B> using sieve_policy = hand_policy<B, false>;
template <bool B> using clock_policy = hand_policy<B, true>;

// ---- capacity parsing helpers ----------------------------------------------

const char *const capacity_forms =
	"a number of entries (1000), bytes (64K, 64KiB, 1MB, 2G: binary multiples, "
	"1K = 1024) or a share of the trace (10%)";

}  // namespace

const std::vector<std::string> &baseline_names()
{
	static const std::vector<std::string> names = { "lru",	 "fifo",     "lfu",
							 "arc",	 "s3fifo",   "sieve",
							 "wtinylfu", "wtinylfu-dk", "random", "belady",
							 "lirs", "2q", "clock", "slru",
							 "lru2", "gdsf", "hyperbolic", "lecar",
							 "cacheus", "lhd", "clockpro" };
	return names;
}

std::unique_ptr<policy> make_baseline(std::string_view name, const trace &t,
				      const policy_opts &o)
{
	const uint64_t cap = o.cap.value;
	const bool bytes = o.cap.bytes;
	if (const size_t plus = name.find('+'); plus != std::string_view::npos) {
		// POLICY+FILTER[+FILTER]...: see filtered
		bool tinylfu = false;
		uint64_t max_size = 0;
		std::string_view rest = name.substr(plus + 1);
		for (;;) {
			const size_t next = rest.find('+');
			const std::string_view f = rest.substr(0, next);
			if (f == "tinylfu") {
				tinylfu = true;
			} else if (f.substr(0, 5) == "size:" && f.size() > 5 && f.back() != '%') {
				max_size = parse_capacity(f.substr(5), t).value;
			} else {
				throw sim_error("policy " + std::string(name) + ": unknown filter \"" +
						std::string(f) + "\" (tinylfu or size:MAX, MAX in bytes: 512, 4K)");
			}
			if (next == std::string_view::npos)
				break;
			rest = rest.substr(next + 1);
		}
		auto inner = make_baseline(name.substr(0, plus), t, o);
		if (!inner)
			return nullptr;
		if (!bytes)
			max_size = 0;	// no sizes: the size filter admits all
		if (!tinylfu && !max_size)
			return inner;
		return std::make_unique<filtered>(std::move(inner), t, cap, bytes, tinylfu, max_size);
	}
	const auto &names = baseline_names();
	if (std::find(names.begin(), names.end(), name) == names.end())
		return nullptr;
	if (cap == 0)
		throw sim_error(std::string(name) +
				": size 0: a cache needs room for at least one entry");
	if (name == "lru")
		return build<lru_policy>(bytes, t, cap);
	if (name == "fifo")
		return build<fifo_policy>(bytes, t, cap);
	if (name == "lfu")
		return build<lfu_policy>(bytes, t, cap);
	if (name == "arc")
		return build<arc_policy>(bytes, t, cap);
	if (name == "s3fifo")
		return build<s3fifo_policy>(bytes, t, cap);
	if (name == "sieve")
		return build<sieve_policy>(bytes, t, cap);
	if (name == "wtinylfu")
		return build<wtinylfu_policy>(bytes, t, cap, o.seed);
	if (name == "wtinylfu-dk")
		return build<wtinylfu_dk_policy>(bytes, t, cap);
	if (name == "random")
		return build<random_policy>(bytes, t, cap, o.seed);
	if (name == "belady")
		return build<belady_policy>(bytes, t, cap);
	if (name == "lirs")
		return build<lirs_policy>(bytes, t, cap);
	if (name == "2q")
		return build<twoq_policy>(bytes, t, cap);
	if (name == "clock")
		return build<clock_policy>(bytes, t, cap);
	if (name == "slru")
		return build<slru_policy>(bytes, t, cap);
	if (name == "lru2")
		return build<lru2_policy>(bytes, t, cap);
	if (name == "gdsf")
		return build<gdsf_policy>(bytes, t, cap);
	if (name == "hyperbolic")
		return build<hyperbolic_policy>(bytes, t, cap, o.seed);
	if (name == "lecar")
		return build<lecar_policy>(bytes, t, cap, o.seed);
	if (name == "cacheus")
		return build<cacheus_policy>(bytes, t, cap, o.seed);
	if (name == "lhd")
		return build<lhd_policy>(bytes, t, cap, o.seed);
	if (name == "clockpro")
		return build<clockpro_policy>(bytes, t, cap);
	return nullptr;
}

uint64_t belady_bytes_needed(const trace &t)
{
	const uint64_t n = t.nobjects();
	// per object: heap position, key, heap slot, size
	uint64_t need = n * (sizeof(uint32_t) + sizeof(uint64_t) + sizeof(uint32_t) +
			     sizeof(uint32_t));
	// no next array: compute_next runs on a copy of the ids and keys and
	// the policy keeps the result
	if (t.next.empty())
		need += t.size() * (sizeof(uint32_t) + sizeof(int64_t)) + n * sizeof(uint64_t);
	return need;
}

uint64_t baseline_held(const policy &p)
{
	const auto *b = dynamic_cast<const baseline *>(&p);
	return b ? b->held() : 0;
}

bool baseline_holds(const policy &p, uint32_t id)
{
	const auto *b = dynamic_cast<const baseline *>(&p);
	return b && b->holds(id);
}

int64_t wtinylfu_window(const policy &p)
{
	if (const auto *w = dynamic_cast<const wtinylfu_policy<false> *>(&p))
		return static_cast<int64_t>(w->window_max());
	if (const auto *w = dynamic_cast<const wtinylfu_policy<true> *>(&p))
		return static_cast<int64_t>(w->window_max());
	return -1;
}

double lecar_lru_weight(const policy &p)
{
	return learned<lecar_policy>(p, [](const auto &l) { return l.lru_weight(); });
}

double cacheus_sr_weight(const policy &p)
{
	return learned<cacheus_policy>(p, [](const auto &l) { return l.sr_weight(); });
}

double cacheus_learning_rate(const policy &p)
{
	return learned<cacheus_policy>(p, [](const auto &l) { return l.learning_rate(); });
}

// Capacity: NUMBER [UNIT], NUMBER being digits with an optional fraction.
//   (no unit)          entries; must be whole: "1000"
//   B                  bytes: "4096B"
//   K, KB, KiB         x 1024: binary multiples throughout, so "1KB" is
//   M, MB, MiB         1024 bytes, not 1000 (cache sizes are quoted in
//   G, GB, GiB         binary units); case does not matter; fractions
//   T, TB, TiB         are allowed ("1.5M")
//   %                  a share of the trace: of its distinct objects, in
//                      entries, when it has no sizes; of its footprint in
//                      bytes (the sum of each object's first size seen, as
//                      libCacheSim counts its working set) when it has.
// Rounded to the nearest whole entry or byte.  Empty, negative, garbage,
// an unknown unit and anything that comes to 0 are refused.
capacity parse_capacity(std::string_view s, const trace &t)
{
	const std::string shown(s);
	size_t a = 0, b = s.size();
	while (a < b && (s[a] == ' ' || s[a] == '\t'))
		a++;
	while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
		b--;
	s = s.substr(a, b - a);
	if (s.empty())
		throw sim_error("size \"" + shown + "\": empty; expected " + std::string(capacity_forms));
	if (s[0] == '-')
		throw sim_error("size " + shown + ": a cache size cannot be negative");
	size_t i = 0;
	long double v = 0;
	bool digits = false, whole = true;
	while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
		v = v * 10 + (s[i++] - '0');
		digits = true;
	}
	if (i < s.size() && s[i] == '.') {
		long double scale = 1;
		i++;
		while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
			scale /= 10;
			if (s[i] != '0')
				whole = false;
			v += (s[i++] - '0') * scale;
			digits = true;
		}
	}
	if (!digits)
		throw sim_error("size " + shown + ": not a size; expected " +
				std::string(capacity_forms));
	const std::string unit = ascii_lower(s.substr(i));
	capacity r;
	long double n = 0;
	if (unit.empty()) {
		if (!whole)
			throw sim_error("size " + shown + ": a number of entries must be whole");
		n = v;
	} else if (unit == "%") {
		if (v > 100)
			throw sim_error("size " + shown + ": a share of the trace is at most 100%");
		r.bytes = !t.sizes.empty();
		long double base = t.nobjects();
		if (r.bytes) {
			std::vector<uint8_t> seen(t.nobjects(), 0);
			long double sum = 0;
			for (size_t k = 0; k < t.size(); k++) {
				const uint32_t id = t.ids[k];
				if (!seen[id]) {
					seen[id] = 1;
					sum += t.sizes[k];
				}
			}
			base = sum;
		}
		n = std::round(v * base / 100);
		if (n < 1)
			throw sim_error("size " + shown + " of " +
					std::to_string(static_cast<uint64_t>(base)) +
					(r.bytes ? " bytes" : " objects") +
					" is 0: a cache needs room for at least one entry");
	} else {
		static const struct {
			const char *name;
			unsigned shift;
		} units[] = { { "b", 0 },    { "k", 10 },   { "kb", 10 }, { "kib", 10 },
			      { "m", 20 },   { "mb", 20 },  { "mib", 20 }, { "g", 30 },
			      { "gb", 30 },  { "gib", 30 }, { "t", 40 },   { "tb", 40 },
			      { "tib", 40 } };
		bool found = false;
		for (const auto &u : units) {
			if (unit == u.name) {
				n = std::round(v * static_cast<long double>(uint64_t(1) << u.shift));
				found = true;
			}
		}
		if (!found)
			throw sim_error("size " + shown + ": unknown unit \"" + std::string(s.substr(i)) +
					"\"; expected " + std::string(capacity_forms));
		r.bytes = true;
	}
	if (n < 1)
		throw sim_error("size " + shown + ": a cache needs room for at least one entry");
	if (n >= 9.2e18L)
		throw sim_error("size " + shown + ": too large");
	r.value = static_cast<uint64_t>(n);
	return r;
}

}  // namespace dssim
