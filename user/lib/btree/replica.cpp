// SPDX-License-Identifier: BSD-2-Clause
// Replicated trees: every node on the R members of its group, each on
// another memory node, with one-sided verbs only.
//
// The rules (docs/btree.md has the argument):
// - A lock is taken on every live member of the node's group.  The
//   primary's word decides who holds it: a client that loses there gives
//   the backups' back at once.  The backups' words keep a failover from
//   opening a lock: whoever holds a node holds it on every member that
//   survives, so the lock survives the loss of any member.
// - A write goes to the backups first, then to the primary with the
//   unlocks.  What a reader finds on a primary is therefore on every live
//   member already, and losing the primary loses nothing anyone has seen;
//   a write is done once the backups have it.
// - A member that fails is excluded for good: its bit is set (by CAS, so
//   clients merge their findings) in the dead word on every live member
//   of group 0, which every client re-reads with its heartbeat.  Memory
//   nodes are assumed to fail by stopping, alike for every compute node.
// - A lock taken over from a dead holder may find the backups ahead of
//   the primary (it died between the two writes): the new holder copies
//   one image to every member before it goes on.
// A retried batch is safe: writes go only to members still locked by us,
// and a CAS is sent again only where its result shows it did not run.
#include "tree.hpp"

#include <bit>
#include <random>

namespace dsmem::btree {

namespace {

void pause(unsigned attempt)
{
	thread_local std::minstd_rand rng(std::random_device{}());

	if (attempt < 2)
		std::this_thread::yield();
	else
		std::this_thread::sleep_for(std::chrono::microseconds(rng() % (1u << std::min(attempt, 10u))));
}

}  // namespace

unsigned tree::group_of(uint64_t a) const
{
	uint64_t seg = gaddr_seg(a);

	for (unsigned g = 1; g < nsegs_; g++)
		if (segs_[g] == seg)
			return g;
	return 0;
}

int tree::primary_of(unsigned g) const
{
	for (unsigned i = 0; i < replicas_; i++) {
		unsigned m = (g + i) % replicas_;
		if (member_live(g, m))
			return static_cast<int>(m);
	}
	return -1;
}

// ---- failures ----

int tree::fail_over(session &s, int err)
{
	uint64_t gone = 0;

	if (!replicated())
		return err;
	for (unsigned g = 0; g < nsegs_; g++) {
		uint64_t lost = 0;
		unsigned live = 0;

		for (unsigned m = 0; m < replicas_; m++) {
			if (!member_live(g, m))
				continue;
			live++;
			// alone: a batch naming a vanished node may be
			// refused whole
			batch b(s);
			b.read(members_[g][m] + seg_hdr_off, s.word(session::w_probe), 8);
			if (b.run(batch::k_other))
				lost |= 1ULL << member_bit(g, m);
		}
		// every member of a group unreachable says more about this
		// client's own path than about the members
		if (lost && std::popcount(lost) == static_cast<int>(live))
			return err;
		gone |= lost;
	}
	return gone ? exclude(s, gone) : err;
}

int tree::exclude(session &s, uint64_t gone)
{
	std::lock_guard g(view_m_);
	uint64_t was = dead_.fetch_or(gone);
	uint64_t *old = s.word(session::w_probe);

	if (!(gone & ~was))
		return 0;	// another thread was first
	s.st.members_excluded.fetch_add(static_cast<uint64_t>(std::popcount(gone & ~was)),
					std::memory_order_relaxed);
	// record it on every live member of group 0, merging what others
	// recorded; again if a member was lost meanwhile
	for (unsigned round = 0; round < 2 * DS_BTREE_REPLICAS_MAX; round++) {
		uint64_t at_start = dead_.load();

		for (unsigned m = 0; m < replicas_; m++) {
			uint64_t a = members_[0][m] + sb_off_dead, seen = 0;

			for (unsigned i = 0; member_live(0, m); i++) {
				uint64_t want = seen | dead_.load();
				batch b(s);

				if (want == seen)
					break;
				b.cas(a, seen, want, old);
				if (b.run(batch::k_other)) {
					// this one is lost too, unless it is
					// group 0's last
					unsigned live = 0;
					for (unsigned k = 0; k < replicas_; k++)
						live += member_live(0, k);
					if (live == 1)
						return -EHOSTDOWN;
					dead_.fetch_or(1ULL << member_bit(0, m));
					s.st.members_excluded.fetch_add(1, std::memory_order_relaxed);
					break;
				}
				if (*old == seen)
					break;
				seen = *old;
				dead_.fetch_or(seen);
				if (i > 64)
					return -EAGAIN;
			}
		}
		if (dead_.load() == at_start)
			return 0;
	}
	return -EAGAIN;
}

int tree::learn_dead(session &s)
{
	uint64_t *w = s.word(session::w_lock);

	if (!replicated())
		return 0;
	for (;;) {
		batch b(s);

		for (unsigned m = 0; m < replicas_; m++) {
			w[m] = 0;
			if (member_live(0, m))
				b.read(members_[0][m] + sb_off_dead, &w[m], 8);
		}
		int ret = b.run(batch::k_other);
		if (!ret)
			break;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
	for (unsigned m = 0; m < replicas_; m++)
		dead_.fetch_or(w[m]);
	return 0;
}

// ---- reads, writes and atomics on every member ----

int tree::read_at(session &s, uint64_t a, void *dst, uint32_t len, batch::kind k)
{
	batch b(s);

	if (!replicated()) {
		b.read(a, dst, len);
		return b.run(k);
	}
	for (unsigned g = group_of(a);;) {
		int p = primary_of(g);
		if (p < 0)
			return -EHOSTDOWN;
		b.read(member_addr(a, static_cast<unsigned>(p)), dst, len);
		int ret = b.run(k);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
		s.st.replica_fallbacks.fetch_add(1, std::memory_order_relaxed);
	}
}

int tree::write_new(session &s, uint64_t a, const void *src, uint32_t len)
{
	batch b(s);

	if (!replicated()) {
		b.write(a, src, len);
		return b.run(batch::k_write);
	}
	for (unsigned g = group_of(a);;) {
		if (primary_of(g) < 0)
			return -EHOSTDOWN;
		for (unsigned m = 0; m < replicas_; m++)
			if (member_live(g, m))
				b.write(member_addr(a, m), src, len);
		int ret = b.run(batch::k_write);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
}

int tree::cas_all(session &s, uint64_t a, uint64_t expect, uint64_t swap, uint64_t *res)
{
	unsigned g = group_of(a);

	for (unsigned m = 0; m < replicas_; m++)
		res[m] = res_none;
	for (;;) {
		batch b(s);

		if (primary_of(g) < 0)
			return -EHOSTDOWN;
		for (unsigned m = 0; m < replicas_; m++)
			if (member_live(g, m) && res[m] == res_none)
				b.cas(member_addr(a, m), expect, swap, &res[m]);
		if (!b.size())
			return 0;
		int ret = b.run(batch::k_other);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
		for (unsigned m = 0; m < replicas_; m++)
			if (!member_live(g, m))
				res[m] = res_none;
	}
}

// ---- locks ----

int tree::lock_r(session &s, uint64_t lock_a, uint64_t read_a, uint8_t *dst, uint32_t len,
		 bool image)
{
	unsigned g = group_of(lock_a);
	uint64_t *res = s.word(session::w_lock);
	uint64_t expect[DS_BTREE_REPLICAS_MAX] = {}, holder = 0, stolen = 0;
	bool mine[DS_BTREE_REPLICAS_MAX] = {};
	int read_from = -1, p, ret;
	lock_wait w;

	w.polled = clock::now();
	for (unsigned attempt = 0;; attempt++) {
		batch b(s);
		uint64_t other = 0;

		if ((p = primary_of(g)) < 0) {
			ret = -EHOSTDOWN;
			goto out_release;
		}
		bool all = true;
		for (unsigned m = 0; m < replicas_; m++)
			all &= mine[m] || !member_live(g, m);
		if (all)
			break;	// (a failover can leave nothing to take)
		for (unsigned m = 0; m < replicas_; m++) {
			res[m] = res_none;
			if (mine[m] || !member_live(g, m))
				continue;
			// found held once: the primary alone until it is ours
			if (attempt && !mine[p] && m != static_cast<unsigned>(p))
				continue;
			b.cas(member_addr(lock_a, m), expect[m], tag_, &res[m]);
			// behind the CAS on its QP: sees what the CAS left
			if (m == static_cast<unsigned>(p))
				b.read(member_addr(read_a, m), dst, len);
		}
		ret = b.run(batch::k_lock);
		for (unsigned m = 0; m < replicas_; m++) {
			if (res[m] == res_none)
				continue;
			if (res[m] == expect[m] || res[m] == tag_) {
				mine[m] = true;
				if (expect[m])
					stolen = expect[m];
				if (m == static_cast<unsigned>(p))
					read_from = p;
			} else if (m == static_cast<unsigned>(p) || !other) {
				other = res[m];
			}
		}
		if (ret) {
			if ((ret = fail_over(s, ret)))
				goto out_release;
			continue;
		}
		all = true;
		for (unsigned m = 0; m < replicas_; m++)
			all &= mine[m] || !member_live(g, m);
		if (all)
			break;
		s.st.lock_retries.fetch_add(1, std::memory_order_relaxed);
		if (!mine[p]) {
			// lost at the primary: the holder needs our backups
			for (unsigned m = 0; m < replicas_; m++) {
				if (mine[m] && member_live(g, m))
					b.cas(member_addr(lock_a, m), tag_, 0, &res[m]);
				mine[m] = false;
			}
			if (b.size() && (ret = b.run(batch::k_lock)) && (ret = fail_over(s, ret)))
				goto out_release;
		}
		for (unsigned m = 0; m < replicas_; m++)
			expect[m] = 0;
		if (other != holder) {
			holder = other;
			w.seen_at = {};
		}
		ret = other == stolen ? 1 : steal_check(s, other, &w);
		if (ret < 0)
			goto out_release;
		if (ret == 1) {
			for (unsigned m = 0; m < replicas_; m++)
				if (!mine[m])
					expect[m] = other;
		} else {
			pause(attempt);
		}
	}
	if (stolen)
		s.st.lock_steals.fetch_add(1, std::memory_order_relaxed);
	// ours on every member now, so nothing changes them
	for (unsigned tries = 0; read_from != primary_of(g); tries++) {
		int q = primary_of(g);
		if (q < 0 || tries > DS_BTREE_REPLICAS_MAX) {
			ret = q < 0 ? -EHOSTDOWN : -EIO;
			goto out_release;
		}
		batch b(s);
		b.read(member_addr(read_a, static_cast<unsigned>(q)), dst, len);
		if (!(ret = b.run(batch::k_lock)))
			read_from = q;
		else if ((ret = fail_over(s, ret)))
			goto out_release;
	}
	if (stolen && image && (ret = resync(s, read_a, dst)))
		goto out_release;
	return 0;

out_release:
	for (unsigned m = 0; m < replicas_; m++) {
		if (!mine[m] || !member_live(g, m))
			continue;
		batch b(s);
		b.cas(member_addr(lock_a, m), tag_, 0, &res[m]);
		(void)b.run(batch::k_write);
	}
	return ret;
}

// After a takeover: one good image on every member.  The primary's, or,
// when the dead holder tore it, a backup's (the backups were written
// whole before the primary was touched).
int tree::resync(session &s, uint64_t addr, uint8_t *buf)
{
	unsigned g = group_of(addr);

	for (unsigned m = 0; !image_ok(buf) && m < replicas_; m++) {
		if (m == static_cast<unsigned>(primary_of(g)) || !member_live(g, m))
			continue;
		batch b(s);
		b.read(member_addr(addr, m), buf, node_size_);
		if (int ret = b.run(batch::k_read); ret && (ret = fail_over(s, ret)))
			return ret;
	}
	if (!image_ok(buf))
		return 0;	// the caller's check reports it
	for (;;) {
		batch b(s);
		for (unsigned m = 0; m < replicas_; m++)
			if (member_live(g, m))
				b.write(member_addr(addr, m) + 8, buf + 8, node_size_ - 8);
		int ret = b.run(batch::k_write);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
}

int tree::write_unlock_r(session &s, uint64_t lock_a, uint64_t write_a, const uint8_t *src,
			 uint32_t len, uint64_t first, const uint8_t *first_buf)
{
	unsigned g = group_of(lock_a);
	uint64_t *res = s.word(session::w_unlock);
	int p, ret;

	// the backups, and a new node on each of its members
	for (;;) {
		batch b(s);

		if ((p = primary_of(g)) < 0) {
			ret = -EHOSTDOWN;
			goto out_release;
		}
		if (first) {
			unsigned fg = group_of(first);
			for (unsigned m = 0; m < replicas_; m++)
				if (member_live(fg, m))
					b.write(member_addr(first, m), first_buf, node_size_);
		}
		for (unsigned m = 0; m < replicas_; m++)
			if (m != static_cast<unsigned>(p) && member_live(g, m))
				b.write(member_addr(write_a, m), src, len);
		if (!b.size() || !(ret = b.run(batch::k_write)))
			break;
		if ((ret = fail_over(s, ret)))
			goto out_release;
	}
	// then the primary, each unlock behind the write on its QP; a
	// member whose unlock ran is never written again
	for (unsigned m = 0; m < replicas_; m++)
		res[m] = res_none;
	for (;;) {
		batch b(s);

		if ((p = primary_of(g)) < 0) {
			ret = -EHOSTDOWN;
			goto out_release;
		}
		for (unsigned m = 0; m < replicas_; m++) {
			if (!member_live(g, m) || res[m] != res_none)
				continue;
			if (m == static_cast<unsigned>(p))
				b.write(member_addr(write_a, m), src, len);
			b.cas(member_addr(lock_a, m), tag_, 0, &res[m]);
		}
		if (!b.size() || !(ret = b.run(batch::k_write)))
			return 0;
		if ((ret = fail_over(s, ret)))
			goto out_release;
	}

out_release:
	(void)cas_all(s, lock_a, tag_, 0, res);
	return ret;
}

int tree::unlock_r(session &s, uint64_t lock_a)
{
	return cas_all(s, lock_a, tag_, 0, s.word(session::w_unlock));
}

int tree::write_images_r(session &s, std::initializer_list<std::pair<uint64_t, uint8_t *>> nodes)
{
	// backups of every node, then every primary
	for (int primaries = 0; primaries < 2; primaries++) {
		for (;;) {
			batch b(s);
			for (auto [addr, buf] : nodes) {
				unsigned g = group_of(addr);
				int p = primary_of(g);
				if (p < 0)
					return -EHOSTDOWN;
				for (unsigned m = 0; m < replicas_; m++)
					if (member_live(g, m) && (m == static_cast<unsigned>(p)) == !!primaries)
						b.write(member_addr(addr, m) + 8, buf + 8, node_size_ - 8);
			}
			int ret = b.size() ? b.run(batch::k_write) : 0;
			if (!ret)
				break;
			if ((ret = fail_over(s, ret)))
				return ret;
		}
	}
	return 0;
}

// ---- shared words ----

int tree::root_cas(session &s, uint64_t word, uint64_t next, uint64_t *seen)
{
	batch b(s);

	if (!replicated()) {
		b.cas(sb(sb_off_root), word, next, seen);
		return b.run(batch::k_lock);
	}
	// a CAS on each member could leave them disagreeing; a lock keeps
	// the root word's changes in one order on all of them
	uint64_t *cur = s.word(session::w_tmp);
	uint64_t lock_a = sb(sb_off_root_lock);
	int ret;

	locks_.lock(lock_a);
	if ((ret = lock_r(s, lock_a, sb(sb_off_root), reinterpret_cast<uint8_t *>(cur), 8, false)))
		goto out_local;
	*seen = *cur;
	if (*cur != word) {
		ret = unlock_r(s, lock_a);
		goto out_local;
	}
	*cur = next;
	ret = write_unlock_r(s, lock_a, sb(sb_off_root), reinterpret_cast<uint8_t *>(cur), 8, 0,
			     nullptr);
out_local:
	locks_.unlock(lock_a);
	return ret;
}

// A chunk of group g: its cursor under a lock, for the reason above.
int tree::take_chunk_r(session &s, uint32_t g, uint64_t *off)
{
	uint64_t *cur = s.word(session::w_tmp);
	uint64_t lock_a = segs_[g] + seg_off_cursor_lock;
	int ret;

	locks_.lock(lock_a);
	if ((ret = lock_r(s, lock_a, segs_[g] + seg_off_cursor, reinterpret_cast<uint8_t *>(cur),
			  8, false)))
		goto out_local;
	*off = *cur;
	if (data_off + *cur + chunk_bytes > seg_size_[g]) {
		ret = unlock_r(s, lock_a);
		if (!ret)
			ret = -ENOSPC;
		goto out_local;
	}
	*cur += chunk_bytes;
	ret = write_unlock_r(s, lock_a, segs_[g] + seg_off_cursor, reinterpret_cast<uint8_t *>(cur),
			     8, 0, nullptr);
out_local:
	locks_.unlock(lock_a);
	return ret;
}

// ---- this client's slot on every member of group 0 ----

int tree::claim_r(session &s, uint32_t i, uint64_t expect, uint64_t mine, bool *won)
{
	uint64_t *res = s.word(session::w_lock);
	int ret = cas_all(s, sb(client_slot_off(i)), expect, mine, res);

	*won = false;
	if (ret)
		return ret;
	bool all = true;
	for (unsigned m = 0; m < replicas_; m++)
		all &= res[m] == res_none || res[m] == expect || res[m] == mine;
	if (all) {
		*won = true;
		return 0;
	}
	// another client got some: give back what we got
	for (unsigned m = 0; m < replicas_; m++) {
		if (res[m] != expect || !member_live(0, m))
			continue;
		batch b(s);
		b.cas(member_addr(sb(client_slot_off(i)), m), mine, expect, s.word(session::w_tmp));
		(void)b.run(batch::k_other);
	}
	return 0;
}

// 0: beat; 1: presumed dead (a member's word is no longer ours).
int tree::heartbeat_r(session &s, uint64_t next)
{
	uint64_t *res = s.word(session::w_unlock);
	int ret = cas_all(s, sb(client_slot_off(slot_ - 1)), slot_word_, next, res);

	if (ret)
		return ret;
	for (unsigned m = 0; m < replicas_; m++)
		if (res[m] != res_none && res[m] != slot_word_ && res[m] != next)
			return 1;
	return learn_dead(s);
}

// ---- what the members are ----

int tree::members(session &s, ds_btree_member *out, size_t n, size_t *count)
{
	if (int ret = learn_dead(s))
		return ret;
	*count = static_cast<size_t>(nsegs_) * replicas_;
	if (*count > n)
		return -ENOSPC;
	for (unsigned g = 0; g < nsegs_; g++) {
		int p = primary_of(g);
		for (unsigned m = 0; m < replicas_; m++) {
			ds_btree_member &o = out[g * replicas_ + m];
			o = {};
			o.seg = members_[g][m];
			o.group = g;
			o.index = static_cast<uint8_t>(m);
			o.state = member_live(g, m) ? DS_BTREE_MEMBER_LIVE : DS_BTREE_MEMBER_DEAD;
			o.primary = p == static_cast<int>(m);
		}
	}
	return 0;
}

}  // namespace dsmem::btree
