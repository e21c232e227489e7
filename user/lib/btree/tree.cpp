// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's operations over remote memory.
//
// Reads take no locks: every image read is checked (checksum, level,
// fences, free flag) and a traversal that lands on the wrong node moves
// right along the sibling pointers (B-link) or begins again.  Writers
// lock one node with a CAS that travels with the READ of it (one round
// trip) and write the new image and the unlock together (one more).  A
// split writes the new right node before the left one points to it, and
// inserts the separator into the parent afterwards, holding no lock below.
#include "tree.hpp"

#include <algorithm>
#include <bit>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace dsmem::btree {

namespace {

bool same_memory_node(uint64_t a, uint64_t b)
{
	return DSMEM_GADDR_NODE(a) == DSMEM_GADDR_NODE(b);
}

}  // namespace

bool tree::image_ok(const uint8_t *buf) const
{
	auto *p = const_cast<uint8_t *>(buf);

	if (!bytes_keys())
		return node_view(p, node_size_).check();
	// a node's own key_max is the tree's, or it would refuse the tree's
	// keys (or hold longer ones)
	vnode_view v(p, node_size_);
	return v.check() && v.key_max() == key_max_;
}

void tree::seal_image(uint8_t *buf) const
{
	if (bytes_keys())
		vnode_view(buf, node_size_).seal();
	else
		node_view(buf, node_size_).seal();
}

template <> index_cache<node_view> &tree::cache<node_view>() { return cache_; }
template <> index_cache<vnode_view> &tree::cache<vnode_view>() { return vcache_; }

void tree::uncache(unsigned level, uint64_t addr)
{
	if (bytes_keys())
		vcache_.invalidate(level, addr);
	else
		cache_.invalidate(level, addr);
}

bool tree::valid_node_ptr(uint64_t a) const
{
	if (a & root_gen_mask)
		return false;	// nodes are 64-byte aligned
	for (uint32_t i = 0; i < nsegs_; i++) {
		if (gaddr_seg(a) != segs_[i])
			continue;
		uint64_t off = gaddr_off(a);
		return off >= data_off && off <= seg_size_[i] - node_size_;
	}
	return false;
}

bool tree::valid_blob_ptr(uint64_t a) const
{
	for (uint32_t i = 0; i < nsegs_; i++) {
		if (gaddr_seg(a) != segs_[i])
			continue;
		uint64_t off = gaddr_off(a);
		return !(a & 63) && off >= data_off && off <= seg_size_[i] - blob_size();
	}
	return false;
}

template <class N>
tree::at tree::classify(const N &n, uint64_t a, key_t<N> key, unsigned level) const
{
	const node_header &h = n.hdr();

	if ((h.flags & node_free) || h.level != level)
		return at::stale;
	if (n.right_of(key)) {
		if (!h.sibling)
			return at::stale;
		return h.sibling == a ? at::corrupt : at::right;
	}
	// left of its low fence: we came by a pointer older than its range
	return n.covers(key) ? at::here : at::stale;
}

bool tree::restart(session &s, unsigned *n)
{
	s.st.restarts.fetch_add(1, std::memory_order_relaxed);
	if (++*n > restarts_max)
		return false;
	if (*n > 4)
		std::this_thread::sleep_for(std::chrono::microseconds(10 * *n));
	return true;
}

void tree::drop_hint(session &s, const origin &o)
{
	if (!o.from)
		return;
	s.st.cache_stale.fetch_add(1, std::memory_order_relaxed);
	uncache(o.level, o.from);
}

int tree::root_image(session &s, uint8_t *buf, uint64_t *addr, bool refresh,
		     uint64_t *word)
{
	node_view n(buf, node_size_);

	for (int pass = 0; pass < 2; pass++) {
		uint64_t w = root_hint_.load(std::memory_order_relaxed);

		if (refresh || !w) {
			if (int ret = read_at(s, sb(sb_off_root), s.word(1), 8, batch::k_read))
				return ret;
			w = *s.word(1);
			root_hint_.store(w, std::memory_order_relaxed);
			refresh = true;
		}
		uint64_t root = root_addr(w);
		if (!valid_node_ptr(root)) {
			s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
			return -EIO;
		}
		if (word)
			*word = w;
		if (int ret = read_node(s, root, buf)) {
			if (ret == -EIO && replicated() && !refresh) {
				refresh = true;	// (as descend's hints)
				continue;
			}
			return ret;
		}
		const node_header &h = n.hdr();
		bool alone = (h.flags & node_low_inf) && (h.flags & node_high_inf);
		if (!(h.flags & node_free) && (alone || refresh)) {
			*addr = root;
			return 0;
		}
		refresh = true;	// the hint was an old root
	}
	return -EAGAIN;
}

template <class N>
int tree::descend(session &s, key_t<N> key, unsigned level, uint8_t *buf,
		  uint64_t *addr, bool read_target, bool use_cache, origin *o)
{
	N n(buf, node_size_);
	unsigned restarts = 0;
	bool refresh = false;

	// from the root again, the hint that led here dropped; false when
	// an operation has begun again too often
	auto restart_stale = [&] {
		drop_hint(s, *o);
		use_cache = false;
		refresh = true;
		return restart(s, &restarts);
	};

	use_cache = use_cache && !(flags_ & DS_BTREE_NO_CACHE);
again:
	{
		typename index_cache<N>::hit h;
		uint64_t a;
		unsigned expect;
		bool have = false;

		*o = {};
		if (use_cache && cache<N>().lookup(key, level + 1, &h)) {
			s.st.cache_hits.fetch_add(1, std::memory_order_relaxed);
			a = h.child;
			expect = h.level - 1;
			*o = {h.from, h.level};
		} else {
			if (!(flags_ & DS_BTREE_NO_CACHE))
				s.st.cache_misses.fetch_add(1, std::memory_order_relaxed);
			if (int ret = root_image(s, buf, &a, refresh, nullptr))
				return ret;
			expect = n.hdr().level;
			if (expect < level)
				return -ERANGE;
			have = true;
		}
		for (unsigned hops = 0;; hops++) {
			if (!have) {
				// never follow a pointer out of the tree's memory
				if (!valid_node_ptr(a) || hops > hop_max) {
					s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
					return -EIO;
				}
				if (expect == level && !read_target) {
					*addr = a;
					return 0;
				}
				int ret = read_node(s, a, buf);
				// a replicated tree's hint may name a node freed
				// before a repair, which the spare never got:
				// stale, not damage
				if (ret == -EIO && replicated() && !hops && o->from) {
					if (!restart_stale())
						return -EAGAIN;
					goto again;
				}
				if (ret)
					return ret;
			}
			have = false;
			const node_header &hd = n.hdr();
			at where = classify(n, a, key, expect);
			uint64_t next = where == at::right ? hd.sibling :
					hd.level > level ? n.child_for(key) : 0;
			if (where == at::corrupt || (where == at::here && next == a)) {
				s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
				return -EIO;	// a node pointing at itself
			}
			if (where == at::stale) {
				// a merged node, or one whose range moved left
				// of the key
				if (!restart_stale())
					return -EAGAIN;
				goto again;
			}
			if (where == at::right) {
				s.st.sibling_hops.fetch_add(1, std::memory_order_relaxed);
				// the cached parent predates a split: re-read
				// it next time
				drop_hint(s, *o);
				o->from = 0;
				a = next;
				continue;
			}
			if (hd.level == level) {
				*addr = a;
				return 0;
			}
			cache<N>().insert(n, a);
			a = next;
			expect = hd.level - 1;
		}
	}
}

template <class N>
int tree::lock_for(session &s, key_t<N> key, unsigned level, uint8_t *buf,
		   uint64_t *addr)
{
	N n(buf, node_size_);
	unsigned restarts = 0;
	bool use_cache = true;

	for (;;) {
		origin o;
		uint64_t a;

		if (int ret = descend<N>(s, key, level, buf, &a, false, use_cache, &o))
			return ret;
		for (unsigned hops = 0;; hops++) {
			if (!valid_node_ptr(a) || hops > hop_max) {
				s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
				return -EIO;
			}
			if (int ret = lock_read(s, a, buf))
				return ret;
			at where = classify(n, a, key, level);
			if (where == at::corrupt) {
				unlock(s, a);
				s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
				return -EIO;
			}
			if (where == at::stale) {
				if (int ret = unlock(s, a))
					return ret;
				drop_hint(s, o);
				use_cache = false;
				break;
			}
			if (where == at::right) {
				uint64_t next = n.hdr().sibling;

				s.st.sibling_hops.fetch_add(1, std::memory_order_relaxed);
				if (int ret = unlock(s, a))
					return ret;
				drop_hint(s, o);
				o.from = 0;
				a = next;
				continue;
			}
			*addr = a;
			return 0;
		}
		if (!restart(s, &restarts))
			return -EAGAIN;
	}
}

// ---- values ----

int tree::write_blob(session &s, uint64_t key, const void *val, size_t len,
		     uint64_t *addr)
{
	uint8_t *b = s.blobs();

	if (int ret = alloc_blob(s, addr))
		return ret;
	std::memset(b, 0, blob_size());
	blob_seal(b, key, val, static_cast<uint32_t>(len));
	return write_new(s, *addr, b, blob_size());
}

// -EAGAIN: the blob is no longer this key's (the leaf changed under us).
int tree::read_value(session &s, uint64_t key, uint64_t ref, void *val,
		     size_t len, size_t *vlen)
{
	uint8_t *b = s.blobs();
	uint32_t n;

	if (int ret = read_at(s, ref, b, blob_size(), batch::k_read))
		return ret;
	const uint8_t *p = blob_check(b, value_size_, key, &n);
	if (!p)
		return -EAGAIN;
	if (val)
		std::memcpy(val, p, std::min<size_t>(len, n));
	if (vlen)
		*vlen = n;
	return 0;
}

// ---- operations ----

template <class N>
int tree::get(session &s, key_t<N> key, void *val, size_t len, size_t *vlen)
{
	uint8_t *buf = s.node(session::s_node0);
	N n(buf, node_size_);
	unsigned restarts = 0;

	s.st.lookups.fetch_add(1, std::memory_order_relaxed);
	for (;;) {
		origin o;
		uint64_t a;

		if (int ret = descend<N>(s, key, 0, buf, &a, true, true, &o))
			return ret;
		int i = n.find(key);
		if (i < 0)
			return -ENOENT;
		uint64_t v = n.val_at(static_cast<uint32_t>(i));
		if (inline_values()) {
			if (val)
				std::memcpy(val, &v, std::min<size_t>(len, 8));
			if (vlen)
				*vlen = 8;
			return 0;
		}
		int ret = read_value(s, kind<N>::blob_key(key), v, val, len, vlen);
		if (ret != -EAGAIN)
			return ret;
		if (!restart(s, &restarts))
			return -EAGAIN;
	}
}

template <class N>
int tree::split_and_write(session &s, uint64_t addr, uint8_t *buf,
			  key_t<N> key, uint64_t val, bool *existed)
{
	N l(buf, node_size_);
	uint8_t *rbuf = s.node(session::s_node2);
	N r(rbuf, node_size_);
	unsigned level = l.hdr().level;
	uint64_t raddr;
	int ret;

	ret = alloc_node(s, level, false, &raddr);
	if (ret) {
		unlock(s, addr);
		return ret;
	}
	std::memset(rbuf, 0, node_size_);
	const owned_t<N> sep = l.split_into(r);
	bool cut = true;
	if constexpr (std::is_same_v<N, vnode_view>)
		cut = !sep.empty();	// no cut fits: the node is left as it was
	const N &into = r.covers(key) ? r : l;
	if (!cut || !into.leaf_upsert(key, val, existed)) {
		free_node(raddr);
		unlock(s, addr);
		return -EUCLEAN;	// half a node always has room
	}
	l.hdr().sibling = raddr;
	r.hdr().lock = 0;
	r.hdr().version = 1;
	seal_image(rbuf);
	if (same_memory_node(addr, raddr) || replicated()) {
		// one QP: the new node lands before the pointer to it
		// (replicated: with the backups' images, before the primary's)
		ret = write_unlock(s, addr, buf, raddr, rbuf);
	} else {
		ret = write_new(s, raddr, rbuf, node_size_);
		if (ret) {
			unlock(s, addr);
			return ret;
		}
		ret = write_unlock(s, addr, buf);
	}
	if (ret)
		return ret;
	s.st.splits.fetch_add(1, std::memory_order_relaxed);
	// the tree is whole already (B-link): the parent's entry only
	// shortens the way to the new node, so the write stands even if
	// that fails; a later split or root growth links it
	(void)insert_separator<N>(s, level + 1, kind<N>::ref(sep), raddr);
	return 0;
}

template <class N>
int tree::grow_root(session &s, uint64_t word, uint8_t *buf)
{
	N n(buf, node_size_);
	uint64_t root = root_addr(word);
	uint8_t *tbuf = s.node(session::s_node4);
	N t(tbuf, node_size_);
	uint64_t taddr;

	if (int ret = read_node(s, root, buf))
		return ret;
	if (n.hdr().flags & node_free)
		return 0;
	unsigned level = n.hdr().level + 1;
	std::memset(tbuf, 0, node_size_);
	kind<N>::init(t, static_cast<uint8_t>(level), key_max_, true, kind<N>::lowest(), true,
		      kind<N>::lowest());
	t.hdr().leftmost = root;
	// every node of the old root's level, as far as one node holds; their
	// low fences ascend, or the images lie (a cycle of siblings)
	uint64_t next = n.hdr().sibling;
	owned_t<N> last = kind<N>::own(kind<N>::lowest());
	for (uint32_t hops = 0; next; hops++) {
		if (!valid_node_ptr(next) || next == root || hops > node_capacity(node_size_)) {
			s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
			return -EIO;
		}
		if (int ret = read_node(s, next, buf))
			return ret;
		if ((n.hdr().flags & node_free) || n.hdr().level != level - 1)
			return 0;	// the level is changing: try again
		const owned_t<N> low = n.low();
		if (hops && !typename kind<N>::less()(last, low)) {
			s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
			return -EIO;
		}
		if (!t.internal_insert(kind<N>::ref(low), next))
			break;	// full: the rest is reached through siblings
		last = low;
		next = n.hdr().sibling;
	}
	if (!t.hdr().count)
		return 0;	// alone at its level: nothing to grow
	if (int ret = alloc_node(s, level, true, &taddr))
		return ret;
	t.hdr().version = 1;
	seal_image(tbuf);
	uint64_t epoch_then = epoch();
	if (int ret = write_new(s, taddr, tbuf, node_size_))
		return ret;
	if (int ret = root_cas(s, word, root_next(word, taddr), s.word(1), taddr, tbuf,
			       epoch_then))
		return ret;
	if (*s.word(1) != word) {
		free_node(taddr);	// another client changed the root first
		root_hint_.store(*s.word(1), std::memory_order_relaxed);
		return 0;
	}
	root_hint_.store(root_next(word, taddr), std::memory_order_relaxed);
	s.st.root_changes.fetch_add(1, std::memory_order_relaxed);
	return 0;
}

template <class N>
int tree::insert_separator(session &s, unsigned level, key_t<N> sep, uint64_t child)
{
	uint8_t *buf = s.node(session::s_node1);
	N p(buf, node_size_);
	unsigned restarts = 0;
	uint64_t paddr;

	for (;;) {
		int ret = lock_for<N>(s, sep, level, buf, &paddr);
		if (ret == -ERANGE) {
			// the split node was the root: a level above it now
			uint64_t root, word;
			if ((ret = root_image(s, buf, &root, true, &word)))
				return ret;
			if (p.hdr().level >= level)
				continue;
			if ((ret = grow_root<N>(s, word, buf)))
				return ret;
			if (!restart(s, &restarts))
				return -EAGAIN;
			continue;
		}
		if (ret)
			return ret;
		break;
	}
	// already there: the root was grown over it
	for (uint32_t i = 0; i <= p.hdr().count; i++) {
		if (p.child_at(i) == child)
			return unlock(s, paddr);
	}
	// still what we split off?  Root growth may have linked it, a merge
	// freed it and the memory rested and been reused, while we waited
	{
		uint8_t *cbuf = s.node(session::s_node3);
		N c(cbuf, node_size_);
		int ret = read_node(s, child, cbuf);
		if (ret || (c.hdr().flags & (node_free | node_low_inf)) ||
		    c.hdr().level != level - 1 || c.low() != sep) {
			int uret = unlock(s, paddr);
			return ret ? ret : uret;
		}
	}
	bool existed;
	if (p.internal_insert(sep, child)) {
		int ret = write_unlock(s, paddr, buf);
		if (!ret)
			cache<N>().insert(p, paddr);
		return ret;
	}
	// the parent splits too; the new halves' images are not cached, so
	// the next traversal reads them fresh
	uncache(level, paddr);
	return split_and_write<N>(s, paddr, buf, sep, child, &existed);
}

template <class N>
int tree::put(session &s, key_t<N> key, const void *val, size_t len)
{
	uint8_t *buf = s.node(session::s_node0);
	N n(buf, node_size_);
	uint64_t v = 0, addr;
	bool existed;
	int ret;

	if (len > value_size_ || (!val && len))
		return -EINVAL;
	uint64_t epoch_then = epoch();
	if (inline_values())
		std::memcpy(&v, val, len);
	else if ((ret = write_blob(s, kind<N>::blob_key(key), val, len, &v)))
		return ret;
	ret = lock_for<N>(s, key, 0, buf, &addr);
	if (ret)
		goto err_blob;
	// a repair that began since the value was written may have copied
	// the leaf already: the spare must not get a pointer to a value it
	// lacks (s.blobs() still holds it)
	if (!inline_values() && epoch() != epoch_then &&
	    (ret = write_new(s, v, s.blobs(), blob_size()))) {
		release_lock(s, addr);
		locks_.unlock(addr);
		goto err_blob;
	}
	{
		uint64_t old = 0;
		int i = n.find(key);

		if (i >= 0)
			old = n.val_at(static_cast<uint32_t>(i));
		if (n.leaf_upsert(key, v, &existed))
			ret = write_unlock(s, addr, buf);
		else
			ret = split_and_write<N>(s, addr, buf, key, v, &existed);
		if (ret)
			goto err_blob;
		(existed ? s.st.updates : s.st.inserts).fetch_add(1, std::memory_order_relaxed);
		if (existed && !inline_values() && old)
			free_blob(old);
		return 0;
	}

err_blob:
	if (!inline_values())
		free_blob(v);
	return ret;
}

template <class N>
int tree::collapse_root(session &s, uint64_t word)
{
	uint64_t root = root_addr(word);
	uint8_t *buf = s.node(session::s_node1);
	uint8_t *cbuf = s.node(session::s_node2);
	N r(buf, node_size_), c(cbuf, node_size_);

	if (int ret = lock_read(s, root, buf))
		return ret;
	if (int ret = read_at(s, sb(sb_off_root), s.word(1), 8, batch::k_read)) {
		unlock(s, root);
		return ret;
	}
	const node_header &h = r.hdr();
	if (*s.word(1) != word || !h.level || h.count || (h.flags & node_free))
		return unlock(s, root);
	uint64_t child = h.leftmost;
	if (!valid_node_ptr(child) || child == root) {
		unlock(s, root);
		return -EIO;
	}
	// only a child that holds the whole key space can be the root
	if (int ret = read_node(s, child, cbuf)) {
		unlock(s, root);
		return ret;
	}
	if (!((c.hdr().flags & node_low_inf) && (c.hdr().flags & node_high_inf)))
		return unlock(s, root);
	if (int ret = root_cas(s, word, root_next(word, child), s.word(1))) {
		unlock(s, root);
		return ret;
	}
	if (*s.word(1) != word)
		return unlock(s, root);
	root_hint_.store(root_next(word, child), std::memory_order_relaxed);
	s.st.root_changes.fetch_add(1, std::memory_order_relaxed);
	r.hdr().flags |= node_free;
	int ret = write_unlock(s, root, buf);
	uncache(h.level, root);
	free_node(root);
	return ret;
}

// Opportunistic: merge or even out an underfull node with a neighbour
// under the same parent.  Locks parent, left, right in that order.
template <class N>
int tree::try_merge(session &s, unsigned level, key_t<N> key, bool again)
{
	uint8_t *pbuf = s.node(session::s_node1);
	uint8_t *lbuf = s.node(session::s_node3);
	uint8_t *rbuf = s.node(session::s_node2);
	N p(pbuf, node_size_), l(lbuf, node_size_), r(rbuf, node_size_);
	uint64_t paddr;
	int ret;

	ret = lock_for<N>(s, key, level + 1, pbuf, &paddr);
	if (ret == -ERANGE) {
		uint64_t root, word;
		if ((ret = root_image(s, pbuf, &root, true, &word)))
			return ret;
		return p.hdr().level && !p.hdr().count ? collapse_root<N>(s, word) : 0;
	}
	if (ret)
		return ret;
	if (!p.hdr().count) {
		// one child only: the parent is what is underfull
		if ((ret = unlock(s, paddr)))
			return ret;
		if ((ret = try_merge<N>(s, level + 1, key, true)))
			return ret;
		// the parent has neighbours now: this level once more
		return again ? try_merge<N>(s, level, key, false) : 0;
	}
	uint32_t slot = p.child_slot(key);
	uint32_t a = slot < p.hdr().count ? slot : slot - 1;
	uint64_t laddr = p.child_at(a), raddr = p.child_at(a + 1);
	const owned_t<N> sep = p.key_at(a);

	if (laddr == raddr || laddr == paddr || raddr == paddr) {
		// a checked image cannot say this; refuse rather than self-deadlock
		unlock(s, paddr);
		return -EUCLEAN;
	}
	if ((ret = lock_read(s, laddr, lbuf)))
		goto out_parent;
	if ((ret = lock_read(s, raddr, rbuf)))
		goto out_left;
	if ((l.hdr().flags | r.hdr().flags) & node_free || l.hdr().level != level ||
	    r.hdr().level != level || l.hdr().sibling != raddr ||
	    (!l.underfull() && !r.underfull())) {
		ret = 0;
		goto out_right;
	}
	if (l.merge_fits(r, kind<N>::ref(sep)) && l.absorb(r, kind<N>::ref(sep))) {
		// merge: the left node takes everything, the parent forgets
		// the right one, which is marked free for late readers
		p.internal_remove_at(a);
		r.hdr().flags |= node_free;
		s.st.merges.fetch_add(1, std::memory_order_relaxed);
	} else {
		// even out through the separator
		if constexpr (std::is_same_v<N, vnode_view>) {
			// a longer separator than the parent has room for, or
			// nothing to move, leaves all three as they are
			std::vector<uint8_t> keep(lbuf, lbuf + node_size_);
			std::vector<uint8_t> keep_r(rbuf, rbuf + node_size_);
			const std::string nsep = l.balance_with(r, kind<N>::ref(sep));
			if (nsep == sep || !p.set_separator(a, kind<N>::ref(nsep))) {
				std::memcpy(lbuf, keep.data(), node_size_);
				std::memcpy(rbuf, keep_r.data(), node_size_);
				ret = 0;
				goto out_right;
			}
		} else {
			p.set_separator(a, l.balance_with(r, sep));
		}
		s.st.redistributions.fetch_add(1, std::memory_order_relaxed);
	}
	// All three images in one batch, and only then the unlocks: no
	// writer can change one node while a reader may still find its keys
	// in another, and a killed process cannot leave half of it.  Readers
	// that meet the images landing in any order either find the keys or
	// begin again.
	ret = write_images(s, {{laddr, lbuf}, {raddr, rbuf}, {paddr, pbuf}});
	{
		int uret = unlock_all(s, {paddr, laddr, raddr});
		ret = ret ? ret : uret;
	}
	uncache(level, raddr);
	uncache(level, laddr);
	if (ret) {
		uncache(level + 1, paddr);
		return ret;
	}
	cache<N>().insert(p, paddr);
	if (r.hdr().flags & node_free) {
		free_node(raddr);
		if (p.underfull())
			return try_merge<N>(s, level + 1, key, true);
	}
	return 0;

out_right:
	unlock(s, raddr);
out_left:
	unlock(s, laddr);
out_parent:
	unlock(s, paddr);
	return ret;
}

template <class N>
int tree::del(session &s, key_t<N> key)
{
	uint8_t *buf = s.node(session::s_node0);
	N n(buf, node_size_);
	uint64_t addr;
	int ret;

	ret = lock_for<N>(s, key, 0, buf, &addr);
	if (ret)
		return ret;
	int i = n.find(key);
	if (i < 0) {
		ret = unlock(s, addr);
		return ret ? ret : -ENOENT;
	}
	uint64_t old = n.val_at(static_cast<uint32_t>(i));
	n.leaf_remove(key);
	if ((ret = write_unlock(s, addr, buf)))
		return ret;
	s.st.deletes.fetch_add(1, std::memory_order_relaxed);
	if (!inline_values())
		free_blob(old);
	bool is_root = (n.hdr().flags & node_low_inf) && (n.hdr().flags & node_high_inf);
	if (!is_root && n.underfull()) {
		// the delete is done; tidying up is best effort, and a
		// failure here leaves a valid, only emptier, tree
		(void)try_merge<N>(s, 0, key, true);
	}
	return 0;
}

template <class N>
int tree::scan(session &s, key_t<N> start, size_t limit, owned_t<N> *keys,
	       void *vals, size_t *count)
{
	uint8_t *buf = s.node(session::s_node0);
	N n(buf, node_size_);
	auto *out = static_cast<uint8_t *>(vals);
	size_t vsize = value_size_;
	unsigned restarts = 0;
	owned_t<N> cur = kind<N>::own(start);
	uint64_t a;
	size_t got = 0;
	origin o;

	if (!limit || limit > DS_BTREE_SCAN_MAX || !keys)
		return -EINVAL;
	s.st.scans.fetch_add(1, std::memory_order_relaxed);
	if (int ret = descend<N>(s, kind<N>::ref(cur), 0, buf, &a, true, true, &o))
		return ret;
	for (;;) {
		uint32_t i = n.lower_bound(kind<N>::ref(cur));
		size_t first = got;
		const node_header &h = n.hdr();

		for (; i < h.count && got < limit; i++) {
			keys[got] = n.key_at(i);
			if (out && inline_values()) {
				uint64_t v = n.val_at(i);
				std::memcpy(out + got * vsize, &v, 8);
			}
			got++;
		}
		if (out && !inline_values() && got > first) {
			uint8_t *b = s.blobs();
			batch r(s);
			size_t k;

			for (;;) {
				for (k = first; k < got; k++) {
					uint32_t j = n.lower_bound(kind<N>::ref(keys[k]));
					r.read(primary_addr(n.val_at(j)),
					       b + (k - first) * blob_size(), blob_size());
				}
				int ret = r.run(batch::k_read);
				if (!ret)
					break;
				if ((ret = fail_over(s, ret)))
					return ret;
			}
			for (k = first; k < got; k++) {
				uint32_t len;
				const uint8_t *p = blob_check(b + (k - first) * blob_size(),
							      value_size_,
							      kind<N>::blob_key(kind<N>::ref(keys[k])),
							      &len);
				if (!p)
					break;
				std::memset(out + k * vsize, 0, vsize);
				std::memcpy(out + k * vsize, p, len);
			}
			if (k < got) {
				// a value changed under us: read its leaf again
				cur = keys[k];
				got = k;
				if (!restart(s, &restarts))
					return -EIO;
				if (int ret = descend<N>(s, kind<N>::ref(cur), 0, buf, &a, true,
							 true, &o))
					return ret;
				continue;
			}
		}
		if (got == limit || (h.flags & node_high_inf))
			break;
		cur = n.high();
		uint64_t next = h.sibling;
		unsigned hops = 0;
		at where = at::stale;
		while (next) {
			if (!valid_node_ptr(next) || hops > hop_max) {
				s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
				return -EIO;
			}
			if (hops++)
				s.st.sibling_hops.fetch_add(1, std::memory_order_relaxed);
			if (read_node(s, next, buf))
				break;
			where = classify(n, next, kind<N>::ref(cur), 0);
			if (where != at::right)
				break;
			next = n.hdr().sibling;
		}
		if (where == at::corrupt) {
			s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
			return -EIO;
		}
		if (where != at::here) {
			// merged or moved: find cur's leaf from above
			if (!restart(s, &restarts))
				return -EAGAIN;
			if (int ret = descend<N>(s, kind<N>::ref(cur), 0, buf, &a, true, true, &o))
				return ret;
		}
	}
	*count = got;
	return 0;
}

int tree::info(session &s, ds_btree_info *out)
{
	superblock sbk;
	uint8_t *buf = s.node(session::s_node0);
	node_view n(buf, node_size_);
	uint64_t root;

	*out = {};
	{
		std::lock_guard nf(nodes_flush_m_);
		if (int ret = load_superblock(s, &sbk))
			return ret;
		// with what this handle carved since its last heartbeat
		out->nodes = sbk.node_ids + unflushed_nodes_.load(std::memory_order_relaxed);
	}
	if (int ret = root_image(s, buf, &root, true, nullptr))
		return ret;
	out->addr = addr_;
	out->layout = layout_;
	out->node_size = node_size_;
	out->value_size = value_size_;
	out->height = n.hdr().level + 1u;
	out->root = root;	// the address, without the generation
	for (const auto &c : sbk.clients)
		out->clients += c.word != 0;
	out->nsegs = nsegs_;
	for (uint32_t i = 0; i < nsegs_; i++) {
		seg_header h;

		out->segs[i] = segs_[i];
		out->seg_size[i] = seg_size_[i];
		if (int ret = read_at(s, segs_[i] + seg_hdr_off, buf, sizeof(h), batch::k_other))
			return ret;
		std::memcpy(&h, buf, sizeof(h));
		uint64_t used = data_off;
		if (layout_ == DS_BTREE_SEED) {
			for (unsigned r = 0; r < region_count; r++)
				used += std::min(h.region_cursor[r], seed_region_size[r]);
		} else {
			used += std::min(h.cursor, seg_size_[i] - data_off);
		}
		out->seg_used[i] = used;
	}
	out->cache_bytes = cache_.bytes() + vcache_.bytes();
	out->cache_limit = (flags_ & DS_BTREE_NO_CACHE) ? 0 : cache_.limit();
	out->cache_entries = cache_.entries() + vcache_.entries();
	out->client_id = slot_;
	out->key_max = key_max_;
	out->replicas = replicas_;
	out->members_dead = static_cast<uint32_t>(std::popcount(view_dead(view_.load())));
	out->spares = spares();
	out->lock_lease_ms = lease_ms_;
	return 0;
}

// The floor a lookup is measured against: back-to-back READs of one leaf
// each, through the same data path, over the leaves in a shuffled order
// (a lookup's leaf is anywhere too: always reading one node would be kinder
// to every cache on the way).  The leaves are gathered once per handle,
// along the leaf level, before any READ is timed.
int tree::probe(session &s, uint64_t n, uint64_t *ns)
{
	uint8_t *buf = s.node(session::s_node0);
	node_view v(buf, node_size_);
	batch b(s);

	if (!n)
		return -EINVAL;
	{
		std::lock_guard g(probe_m_);
		if (probe_leaves_.empty()) {
			uint64_t a;
			origin o;
			if (int ret = bytes_keys() ?
				descend<vnode_view>(s, kind<vnode_view>::lowest(), 0, buf, &a, true,
						    false, &o) :
				descend<node_view>(s, 0, 0, buf, &a, true, false, &o))
				return ret;
			while (a && probe_leaves_.size() < probe_leaves_max) {
				if (!valid_node_ptr(a))
					return -EIO;
				probe_leaves_.push_back(a);
				uint64_t next = v.hdr().sibling;
				if (next && read_node(s, next, buf))
					break;
				a = next;
			}
			std::minstd_rand rng(1);
			std::shuffle(probe_leaves_.begin(), probe_leaves_.end(), rng);
		}
	}
	auto t0 = clock::now();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = probe_next_.fetch_add(1, std::memory_order_relaxed);
		// a replicated tree's reads go to the primary: so do these
		b.read(primary_addr(probe_leaves_[k % probe_leaves_.size()]), buf, node_size_);
		if (int ret = b.run(batch::k_read))
			return ret;
	}
	*ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
		clock::now() - t0).count());
	return 0;
}

// Level by level from the root: down the leftmost children, along the
// siblings.  Each level's fences must chain from "none" to "none", every
// leaf key must lie within its node's, and every live member must hold
// the same image as the primary.
template <class N>
int tree::verify(session &s, ds_btree_verify_report *r)
{
	uint8_t *buf = s.node(session::s_node0), *copy = s.node(session::s_node1);
	N n(buf, node_size_);
	uint64_t first;
	typename kind<N>::less less;

	if (int ret = root_image(s, buf, &first, true, nullptr))
		return ret;
	r->height = n.hdr().level + 1u;
	for (int level = n.hdr().level; level >= 0 && first; level--) {
		uint64_t a = first, hops = 0;
		owned_t<N> prev_high{};

		first = 0;
		for (bool leftmost = true; a; leftmost = false) {
			if (!valid_node_ptr(a) || ++hops > seg_size_[0] / node_size_ * nsegs_) {
				r->order_errors++;
				break;
			}
			if (int ret = read_node(s, a, buf))
				return ret;
			r->nodes++;
			const node_header &h = n.hdr();
			if (h.level != level || (h.flags & node_free) ||
			    leftmost != !!(h.flags & node_low_inf) ||
			    (!leftmost && (less(n.low(), prev_high) || less(prev_high, n.low()))))
				r->order_errors++;
			if (level)
				first = first ? first : h.leftmost;
			else
				r->keys += n.count();
			for (uint32_t i = 0; !level && i < n.count(); i++) {
				const owned_t<N> k = n.key_at(i);
				if (!n.covers(kind<N>::ref(k)))
					r->order_errors++;
			}
			for (unsigned m = 0; replicated() && m < replicas_; m++) {
				if (!member_live(group_of(a), m) ||
				    member_addr(a, m) == primary_addr(a))
					continue;
				batch b(s);
				b.read(member_addr(a, m), copy, node_size_);
				if (int ret = b.run(batch::k_read))
					return ret;
				if (std::memcmp(copy + 8, buf + 8, node_size_ - 8))
					r->replica_mismatches++;
			}
			if (h.flags & node_high_inf) {
				if (h.sibling)
					r->order_errors++;
				break;
			}
			prev_high = n.high();
			if (!h.sibling)
				r->order_errors++;	// a fence with nothing beyond it
			a = h.sibling;
		}
	}
	return r->replica_mismatches || r->order_errors ? -EUCLEAN : 0;
}

// One instance of the operations per key format.
#define DS_BTREE_OPS(N)                                                                    \
	template int tree::get<N>(session &, key_t<N>, void *, size_t, size_t *);          \
	template int tree::put<N>(session &, key_t<N>, const void *, size_t);              \
	template int tree::del<N>(session &, key_t<N>);                                    \
	template int tree::scan<N>(session &, key_t<N>, size_t, owned_t<N> *, void *, size_t *); \
	template int tree::verify<N>(session &, ds_btree_verify_report *);
DS_BTREE_OPS(node_view)
DS_BTREE_OPS(vnode_view)
#undef DS_BTREE_OPS

}  // namespace dsmem::btree
