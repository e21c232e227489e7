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

// fail_over's looks at a refused path: 2 + 4 + ... + 512 ms.  (0.1 s was
// too short on a loaded 2-core CI host: a get at the instant of a node's
// deletion failed ENOTCONN before the probes saw the node gone.)
constexpr unsigned fail_over_rounds = 9;

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
	// what the failed batch was built against (the probes are batches)
	uint64_t view_then = s.view_at_run, joining_then = s.joining_at_run;

	if (!replicated())
		return err;
	/*
	 * A connection being torn down (its node deleted a moment ago) can
	 * refuse a batch while a probe of the same member still gets
	 * through: a refusal that names the path is looked at again a few
	 * times, about 1 s in all, before it is the caller's.
	 */
	for (unsigned round = 0;; round++) {
		uint64_t gone = 0, epoch_at = epoch();

		for (unsigned g = 0; g < nsegs_; g++) {
			uint64_t lost = 0, lost_live = 0;
			unsigned live = 0;

			for (unsigned m = 0; m < replicas_; m++) {
				if (!member_writable(g, m))
					continue;
				live += member_live(g, m);
				// alone: a batch naming a vanished node may be
				// refused whole; bounded: a silent one never answers
				batch b(s);
				b.read(members_[g][m] + seg_hdr_off, s.word(session::w_sink), 8);
				if (!b.run_until(batch::k_other, probe_timeout_ns()))
					continue;
				lost |= 1ULL << member_bit(g, m);
				lost_live += member_live(g, m);
			}
			// every member of a group unreachable says more about this
			// client's own path than about the members
			if (lost_live && lost_live == live)
				return err;
			gone |= lost;
		}
		// a repair named other segments meanwhile: what was probed may be
		// gone already; the caller tries again, with the members as they are
		if (epoch() != epoch_at)
			return 0;
		if (gone)
			return exclude(s, gone);
		// nothing newly lost, but a member the batch used was excluded (by
		// another thread, or learnt from group 0) since it was built: again
		if (view_word() != view_then || joining() != joining_then)
			return 0;
		if ((err != -ENOTCONN && err != -ECONNRESET && err != -ECONNABORTED) ||
		    round >= fail_over_rounds)
			return err;
		std::this_thread::sleep_for(std::chrono::milliseconds(2u << round));
	}
}

int tree::exclude(session &s, uint64_t gone)
{
	std::lock_guard g(view_m_);
	// a member being filled that fails stops being written; the
	// repair finds out and gives up on it
	uint64_t joiners = gone & joining_.fetch_and(~gone);
	uint64_t was = view_.fetch_or(gone & ~joiners);

	gone &= ~joiners & ~was;
	if (!gone)
		return 0;	// another thread was first
	// the handle's, whichever thread found it (the heartbeat's and the
	// repair's sessions are not summed)
	retired_.members_excluded.fetch_add(static_cast<uint64_t>(std::popcount(gone)),
					    std::memory_order_relaxed);
	repair_cv_.notify_all();
	for (unsigned tries = 0;; tries++) {
		int ret = view_cas(s, sb_off_view, gone, 0, false, true);
		if (ret != -ESTALE || tries > DS_BTREE_REPLICAS_MAX)
			return ret;
		// a repair moved on: its view first (a slot it refilled is
		// not the segment found dead), then what is still to record
		if ((ret = learn_view(s)))
			return ret;
		gone &= view_dead(view_.load());
		if (!gone)
			return 0;
	}
}

// (view_m_ held.)  same_epoch: -ESTALE when a member's view word has
// moved to another epoch than this handle's (its slots may name other
// segments).
int tree::view_cas(session &s, uint64_t off, uint64_t set, uint64_t clear, bool bump,
		   bool same_epoch)
{
	uint64_t *old = s.word(session::w_probe);

	for (unsigned m = 0; m < replicas_; m++) {
		uint64_t a = members_[0][m] + off;
		uint64_t seen = off == sb_off_view ? view_.load() : joining_.load();

		if (!member_writable(0, m))
			continue;
		for (unsigned i = 0;; i++) {
			uint64_t want = (seen | set) & ~clear;
			batch b(s);

			if (bump)	// one more than what this handle holds
				want = view_dead(want) |
				       (view_epoch(view_.load()) + 1) << view_epoch_shift;
			if (want == seen && i)
				break;
			b.cas(a, seen, want, old);
			if (b.run(batch::k_other)) {
				// this one is lost too, unless it is group 0's
				// last: then the tree is
				unsigned live = 0;
				for (unsigned k = 0; k < replicas_; k++)
					live += member_live(0, k);
				if (live == 1 && member_live(0, m))
					return -EHOSTDOWN;
				if (member_live(0, m))
					retired_.members_excluded.fetch_add(1, std::memory_order_relaxed);
				view_.fetch_or(1ULL << member_bit(0, m));
				joining_.fetch_and(~(1ULL << member_bit(0, m)));
				set |= off == sb_off_view ? 1ULL << member_bit(0, m) : 0;
				m = ~0u;	// the others again, with this one
				break;
			}
			if (*old == seen)
				break;
			seen = *old;
			if (same_epoch && view_epoch(seen) != view_epoch(view_.load()))
				return -ESTALE;
			if (i > 64)
				return -EAGAIN;
		}
	}
	return 0;
}

// What group 0's live members say, merged: the highest epoch wins (a
// repair changed members[] then), and the dead bits of every member at
// that epoch add up.
int tree::learn_view(session &s)
{
	uint64_t *w = s.word(session::w_view);
	uint64_t view = 0, joining = 0;
	int best = -1;

	if (!replicated())
		return 0;
	static_assert(sb_off_joining == sb_off_view + 8);
	for (;;) {
		batch b(s);

		for (unsigned m = 0; m < replicas_; m++) {
			w[2 * m] = w[2 * m + 1] = 0;
			if (member_live(0, m))
				b.read(members_[0][m] + sb_off_view, &w[2 * m], 16);
		}
		if (!b.size())
			return -EHOSTDOWN;
		int ret = b.run(batch::k_other);
		if (!ret)
			break;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
	for (unsigned m = 0; m < replicas_; m++) {
		if (!member_live(0, m))
			continue;
		if (best < 0 || view_epoch(w[2 * m]) > view_epoch(view)) {
			best = static_cast<int>(m);
			view = w[2 * m];
			joining = w[2 * m + 1];
		} else if (view_epoch(w[2 * m]) == view_epoch(view)) {
			view |= view_dead(w[2 * m]);
		}
	}
	if (best < 0)
		return -EHOSTDOWN;
	if (view_epoch(view) <= view_epoch(view_.load())) {
		// others' exclusions at this epoch; a handle busy changing its
		// view (the lock is held across round trips) learns them at
		// the next beat
		std::unique_lock g(view_m_, std::try_to_lock);
		if (!g || view_epoch(view) != view_epoch(view_.load()))
			return 0;
		uint64_t was = view_.fetch_or(view_dead(view));
		if (view_dead(view) & ~was)
			repair_cv_.notify_all();
		return 0;
	}
	// a repair moved on: its members[] too, from the same member
	auto sbk = std::make_unique<superblock>();
	uint8_t *tmp = s.node(session::s_node4);
	uint32_t len = sizeof(sbk->members);

	for (uint32_t done = 0; done < len; done += node_size_) {
		uint32_t n = std::min(node_size_, len - done);
		batch b(s);

		b.read(members_[0][best] + sb_off_members + done, tmp, n);
		if (int ret = b.run(batch::k_other))
			return fail_over(s, ret) ? ret : -EAGAIN;	// next beat
		std::memcpy(reinterpret_cast<uint8_t *>(sbk->members) + done, tmp, n);
	}
	return install(s, view, joining, sbk.get());
}

// Take a newer view: the members a repair changed, then the view itself;
// then tell the repair (acked) that this handle writes by it.
int tree::install(session &s, uint64_t view, uint64_t joining, const superblock *sb)
{
	{
		// (the heartbeat's: never waits for a repair's round trips)
		std::unique_lock g(view_m_, std::try_to_lock);
		if (!g)
			return 0;
		uint64_t cur = view_.load(), changed = 0;

		if (view_epoch(view) <= view_epoch(cur))
			return 0;
		for (unsigned g0 = 0; g0 < nsegs_; g0++) {
			for (unsigned m = 0; m < replicas_; m++) {
				uint64_t seg = sb->members[g0][m];
				if (seg == members_[g0][m].load())
					continue;
				// a segment no create could name: keep ours
				if (DSMEM_GADDR_OFF(seg) || !DSMEM_GADDR_NODE(seg))
					continue;
				changed |= 1ULL << member_bit(g0, m);
			}
		}
		// a slot changing segment is dead while it does: no other
		// thread reads or locks the new segment before its state
		// is known
		view_.fetch_or(changed);
		for (unsigned g0 = 0; g0 < nsegs_; g0++)
			for (unsigned m = 0; m < replicas_; m++)
				if (changed >> member_bit(g0, m) & 1)
					members_[g0][m].store(sb->members[g0][m]);
		// a slot a repair named, filled or gave up is as the repair
		// says; the others keep what this handle found dead too.
		// The view before the joining mask: a spare that turns live
		// is writable throughout (see repair())
		uint64_t trust = changed | joining | joining_.load();
		view_.store(view_dead(view) | (view_dead(cur) & ~trust) |
			    (view_epoch(view) << view_epoch_shift));
		joining_.store(joining & members_mask);
	}
	return ack(s);
}

int tree::ack(session &s)
{
	uint64_t *e = s.word(session::w_tmp);

	*e = view_epoch(view_.load());
	for (;;) {
		batch b(s);
		for (unsigned m = 0; m < replicas_; m++)
			if (member_writable(0, m))
				b.write(members_[0][m] + client_acked_off(slot_ - 1), e, 8);
		if (!b.size())
			return -EHOSTDOWN;
		int ret = b.run(batch::k_other);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
}

// ---- reads, writes and atomics on every member ----

int tree::read_at(session &s, uint64_t a, void *dst, uint32_t len, batch::kind k)
{
	batch b(s);

	if (!replicated()) {
		b.read(a, dst, len);
		return b.run(k);
	}
	for (unsigned g = group_of(a), slow = 0;;) {
		int p = primary_of(g);
		if (p < 0)
			return -EHOSTDOWN;
		// bounded while a bounce buffer is left to give up
		bool timed = read_timeout_ns_ && s.bounce_used < session::bounce_max &&
			     len <= s.bounce_size;
		uint8_t *to = timed ? s.bounce(s.bounce_used) : static_cast<uint8_t *>(dst);
		b.read(member_addr(a, static_cast<unsigned>(p)), to, len);
		int ret = timed ? b.run_until(k, read_timeout_ns_) : b.run(k);
		if (!ret) {
			if (timed)
				std::memcpy(dst, to, len);
			return 0;
		}
		if (ret == -ETIME) {
			s.bounce_used++;	// the late READ's now
			s.st.read_timeouts.fetch_add(1, std::memory_order_relaxed);
		}
		ret = fail_over(s, ret);
		if (ret == -ETIME && ++slow < session::bounce_max)
			continue;	// slow, not gone: again
		if (ret)
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
			if (member_writable(g, m))
				b.write(member_addr(a, m), src, len);
		int ret = b.run(batch::k_write);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
}

int tree::cas_all(session &s, uint64_t a, uint64_t expect, uint64_t swap, uint64_t *res,
		  uint64_t timeout_ns)
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
		int ret = b.run_until(batch::k_other, timeout_ns);
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
		 bool image, bool wait, lock_wait *keep)
{
	unsigned g = group_of(lock_a);
	uint64_t *res = s.word(session::w_lock);
	uint64_t expect[DS_BTREE_REPLICAS_MAX] = {}, stolen = 0;
	bool mine[DS_BTREE_REPLICAS_MAX] = {};
	int read_from = -1, p, ret;
	lock_wait local, &w = keep ? *keep : local;

	if (!keep || w.polled == clock::time_point{})
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
		all = true;
		for (unsigned m = 0; m < replicas_; m++)
			all &= mine[m] || !member_live(g, m);
		// the image read is the node's only if no member was left to
		// another holder, who may still write it: else read it again
		// once all are ours
		if (!all)
			read_from = -1;
		if (ret) {
			if ((ret = fail_over(s, ret)))
				goto out_release;
			continue;
		}
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
		if (other != w.holder) {
			w.holder = other;
			w.seen_at = {};
		}
		ret = other == stolen ? 1 : steal_check(s, other, &w);
		if (ret < 0)
			goto out_release;
		if (!ret && !wait) {
			ret = -EBUSY;	// a live holder: the caller does not wait
			goto out_release;
		}
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
			if (member_writable(g, m))
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
	unsigned written = 0, first_written = 0;	// members that have the bytes
	int p, ret;

	// the backups, and a new node on each of its members; again while
	// a view change made another member a backup (or a joiner)
	for (;;) {
		batch b(s);
		unsigned these = 0, first_these = 0;

		if ((p = primary_of(g)) < 0) {
			ret = -EHOSTDOWN;
			goto out_release;
		}
		if (first) {
			unsigned fg = group_of(first);
			for (unsigned m = 0; m < replicas_; m++) {
				if (member_writable(fg, m) && !(first_written >> m & 1)) {
					b.write(member_addr(first, m), first_buf, node_size_);
					first_these |= 1u << m;
				}
			}
		}
		for (unsigned m = 0; m < replicas_; m++) {
			if (m != static_cast<unsigned>(p) && member_writable(g, m) &&
			    !(written >> m & 1)) {
				b.write(member_addr(write_a, m), src, len);
				these |= 1u << m;
			}
		}
		if (!b.size())
			break;
		if (!(ret = b.run(batch::k_write))) {
			written |= these;
			first_written |= first_these;
			continue;
		}
		if ((ret = fail_over(s, ret)))
			goto out_release;
	}
	// then the primary, each unlock behind the write on its QP; a
	// member whose unlock ran is never written again.  Every live
	// member phase one did not write gets it here: the primary, or one
	// that a view change made a backup meanwhile.  (A member that began
	// joining since is filled after this unlock, under this lock.)
	for (unsigned m = 0; m < replicas_; m++)
		res[m] = res_none;
	for (;;) {
		batch b(s);

		if (primary_of(g) < 0) {
			ret = -EHOSTDOWN;
			goto out_release;
		}
		for (unsigned m = 0; m < replicas_; m++) {
			if (!member_live(g, m) || res[m] != res_none)
				continue;
			if (!(written >> m & 1))
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
	if (nodes.size() > 4)
		return -EINVAL;
	// backups of every node, then every member not written yet (the
	// primaries, or members a view change moved meanwhile); every lock
	// is held throughout, so a batch may go again
	unsigned written[4] = {};

	for (int primaries = 0; primaries < 2; primaries++) {
		for (;;) {
			batch b(s);
			unsigned these[4] = {}, i = 0;
			for (auto [addr, buf] : nodes) {
				unsigned g = group_of(addr);
				int p = primary_of(g);
				if (p < 0)
					return -EHOSTDOWN;
				for (unsigned m = 0; m < replicas_; m++) {
					if (!member_writable(g, m) || (written[i] >> m & 1) ||
					    (!primaries && m == static_cast<unsigned>(p)))
						continue;
					b.write(member_addr(addr, m) + 8, buf + 8, node_size_ - 8);
					these[i] |= 1u << m;
				}
				i++;
			}
			int ret = b.size() ? b.run(batch::k_write) : 0;
			if (!ret) {
				for (unsigned k = 0; k < 4; k++)
					written[k] |= these[k];
				break;
			}
			if ((ret = fail_over(s, ret)))
				return ret;
		}
	}
	return 0;
}

// ---- shared words ----

int tree::root_cas(session &s, uint64_t word, uint64_t next, uint64_t *seen, uint64_t fresh,
		   const uint8_t *fresh_buf, uint64_t epoch_then)
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
	// a repair that began since the new root was written copies the
	// root word under this lock: the spare must not get a pointer to a
	// node it lacks
	if (fresh && epoch() != epoch_then &&
	    (ret = write_new(s, fresh, fresh_buf, node_size_))) {
		(void)unlock_r(s, lock_a);
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
		return write_joiners(s, sb(client_slot_off(i)), mine);
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
	// bounded: a silent member must not stop the beat (writers wait
	// for it, four leases at most)
	int ret = cas_all(s, sb(client_slot_off(slot_ - 1)), slot_word_, next, res,
			  probe_timeout_ns());

	if (ret)
		return ret;
	for (unsigned m = 0; m < replicas_; m++)
		if (res[m] != res_none && res[m] != slot_word_ && res[m] != next)
			return 1;
	// the beat landed: what follows is best effort (a failure must not
	// make the beat look lost, or this client would stand still)
	if (!write_joiners(s, sb(client_slot_off(slot_ - 1)), next))
		(void)learn_view(s);
	return 0;
}

// A member of group 0 being filled has no CAS to take part in (its words
// are not the others' yet): it gets what the CAS left on the others.
int tree::write_joiners(session &s, uint64_t a, uint64_t word)
{
	uint64_t *w = s.word(session::w_joiners);

	*w = word;
	for (;;) {
		batch b(s);
		for (unsigned m = 0; m < replicas_; m++)
			if (!member_live(0, m) && member_writable(0, m))
				b.write(member_addr(a, m), w, 8);
		int ret = b.size() ? b.run(batch::k_other) : 0;
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
	}
}

// ---- what the members are ----

int tree::members(session &s, ds_btree_member *out, size_t n, size_t *count)
{
	if (int ret = learn_view(s))
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
			o.state = member_live(g, m)     ? DS_BTREE_MEMBER_LIVE :
				  member_writable(g, m) ? DS_BTREE_MEMBER_JOINING :
							  DS_BTREE_MEMBER_DEAD;
			o.primary = p == static_cast<int>(m);
		}
	}
	return 0;
}

// ---- repair: a spare in an excluded member's place ----
//
// One client at a time (repair_lock), in the background, with no CPU of
// any memory node:
// 1. it names the spare as the member's (members[]), joining, in a new
//    epoch;
// 2. it waits until every client has acknowledged that epoch (its slot's
//    acked word), or was presumed dead: from then on every write goes to
//    the spare too, as anything written after a lock taken after that;
// 3. it copies what the spare lacks: the group's segment header; for
//    group 0, the superblock and the root word; then every node of the
//    group and every out-of-line value in it, each under its leaf's or
//    node's lock;
// 4. it makes the spare a live member, in one more epoch.
// A repairer that dies leaves the spare joining; the next one fills it
// again from the start.  A spare that fails while it is filled is given
// up (its slot stays excluded, the next spare is tried).

void tree::repair_loop()
{
	std::unique_ptr<session> s;
	std::unique_lock g(repair_m_);

	if (make_session(&s))
		return;
	while (!repair_stop_) {
		repair_cv_.wait_for(g, std::chrono::milliseconds(2 * lease_ms_));
		if (repair_stop_ || fenced())
			break;
		if (!view_dead(view_.load()) && !joining_.load())
			continue;
		g.unlock();
		(void)repair(*s);
		g.lock();
	}
}

int tree::repair(session &s)
{
	auto sbk = std::make_unique<superblock>();
	uint64_t lock_a = sb(sb_off_repair_lock);
	unsigned g = 0, m = 0;
	int ret;

	locks_.lock(lock_a);
	// without waiting for a live repairer, but a dead one's lock is
	// taken over across tries
	ret = lock_r(s, lock_a, sb(sb_off_view), reinterpret_cast<uint8_t *>(s.word(session::w_tmp)),
		     8, false, false, &repair_wait_);
	if (ret)
		goto out_local;
	repair_wait_ = {};
	if ((ret = learn_view(s)) || (ret = load_superblock(s, sbk.get())))
		goto out_unlock;
	ret = repair_start(s, *sbk, &g, &m);
	if (ret <= 0)
		goto out_unlock;
	ret = await_acks(s, view_epoch(view_.load()));
	if (!ret)
		ret = fill(s, g, m);
	// anything but the spare's failure: it stays joining, and the next
	// repair fills it again
	if (ret && ret != -EHOSTDOWN && (joining_.load() >> member_bit(g, m) & 1))
		goto out_unlock;
	{
		uint64_t bit = 1ULL << member_bit(g, m);
		std::lock_guard vg(view_m_);
		int cret;

		if (!ret && !(joining_.load() & bit))
			ret = -EHOSTDOWN;	// the spare failed meanwhile
		// joining first, then the view: a client that sees the new
		// epoch sees the spare's new state with it
		cret = view_cas(s, sb_off_joining, 0, bit, false);
		if (!cret)
			cret = view_cas(s, sb_off_view, 0, ret ? 0 : bit, true);
		// live before it stops joining: a writer that looked in
		// between would find it neither and skip it, and the spare,
		// a primary from here on, would lack that write
		view_.store((view_dead(view_.load()) & ~(ret ? 0 : bit)) |
			    (view_epoch(view_.load()) + 1) << view_epoch_shift);
		joining_.fetch_and(~bit);
		// (the repair's session is the repair thread's own: the
		// handle's counters get it)
		if (!ret)
			retired_.members_repaired.fetch_add(1, std::memory_order_relaxed);
		ret = ret ? ret : cret;
	}
	{
		int aret = ack(s);
		ret = ret ? ret : aret;
	}
out_unlock:
	(void)unlock_r(s, lock_a);
out_local:
	locks_.unlock(lock_a);
	return ret == -EBUSY ? 0 : ret;
}

// Under the repair lock.  1: (g, m) is to be filled, named in the view
// and acknowledged by this handle; 0: nothing to do.
int tree::repair_start(session &s, superblock &sbk, unsigned *g, unsigned *m)
{
	uint64_t dead = view_dead(view_.load()), joining = joining_.load();
	uint32_t nspares = 0;

	for (uint64_t seg : sbk.spares)
		nspares += seg != 0;
	spares_.store(nspares);
	if (joining) {
		// a repairer died: fill it again, from the start
		unsigned bit = static_cast<unsigned>(std::countr_zero(joining));
		*g = bit / DS_BTREE_REPLICAS_MAX;
		*m = bit % DS_BTREE_REPLICAS_MAX;
		return 1;
	}
	for (unsigned gi = 0; gi < nsegs_; gi++) {
		if (primary_of(gi) < 0)
			continue;	// nothing left to fill it from
		for (unsigned mi = 0; mi < replicas_; mi++) {
			if (!(dead >> member_bit(gi, mi) & 1))
				continue;
			for (uint32_t i = 0; i < spares_max; i++) {
				uint64_t seg = sbk.spares[i];
				bool clash = !seg;
				for (unsigned k = 0; k < replicas_ && !clash; k++)
					clash = k != mi && member_writable(gi, k) &&
						DSMEM_GADDR_NODE(members_[gi][k].load()) ==
							DSMEM_GADDR_NODE(seg);
				if (clash)
					continue;
				*g = gi;
				*m = mi;
				return name_spare(s, gi, mi, i, seg);
			}
		}
	}
	return 0;
}

int tree::name_spare(session &s, unsigned g, unsigned m, uint32_t i, uint64_t seg)
{
	uint64_t bit = 1ULL << member_bit(g, m);
	uint64_t *w = s.word(session::w_tmp), *zero = s.word(session::w_lock);
	int ret;

	{
		std::lock_guard vg(view_m_);

		*w = seg;
		*zero = 0;
		// the spare's segment in the excluded slot (nobody reads an
		// excluded slot's segment), out of the spares
		for (;;) {
			batch b(s);
			for (unsigned k = 0; k < replicas_; k++) {
				if (!member_writable(0, k))
					continue;
				b.write(members_[0][k] + sb_off_members +
						(g * DS_BTREE_REPLICAS_MAX + m) * 8, w, 8);
				b.write(members_[0][k] + sb_off_spares + i * 8, zero, 8);
			}
			ret = b.run(batch::k_other);
			if (!ret || (ret = fail_over(s, ret)))
				break;
		}
		if (ret)
			return ret;
		members_[g][m].store(seg);
		if ((ret = view_cas(s, sb_off_joining, bit, 0, false)) ||
		    (ret = view_cas(s, sb_off_view, 0, 0, true)))
			return ret;
		joining_.fetch_or(bit);
		view_.store(view_dead(view_.load()) |
			    (view_epoch(view_.load()) + 1) << view_epoch_shift);
		spares_.fetch_sub(1);
	}
	if ((ret = ack(s)))
		return ret;
	return 1;
}

// Every client that holds a slot has acknowledged epoch, or its slot
// stood still for twice its lease and is now declared dead (a CAS of the
// word as seen, as a lock's holder is; it writes no more).
int tree::await_acks(session &s, uint64_t epoch)
{
	auto sbk = std::make_unique<superblock>();
	uint64_t seen[clients_max] = {};
	clock::time_point since[clients_max];
	auto start = clock::now();
	uint64_t *res = s.word(session::w_unlock);

	for (;;) {
		uint32_t longest = lease_ms_;
		bool all = true;

		if (int ret = load_superblock(s, sbk.get()))
			return ret;
		for (uint32_t i = 0; i < clients_max; i++) {
			const client_slot &c = sbk->clients[i];
			uint32_t lease = slot_lease(c.word) ? slot_lease(c.word) : lease_ms_;

			if (!c.word || i == slot_ - 1 || c.acked >= epoch)
				continue;
			all = false;
			longest = std::max(longest, lease);
			if (c.word != seen[i]) {
				seen[i] = c.word;
				since[i] = clock::now();
				continue;
			}
			if (clock::now() - since[i] < std::chrono::milliseconds(2 * lease))
				continue;
			if (int ret = cas_all(s, sb(client_slot_off(i)), c.word, 0, res))
				return ret;
			bool gone = true;
			for (unsigned k = 0; k < replicas_; k++)
				gone &= res[k] == res_none || res[k] == c.word || res[k] == 0;
			if (gone)
				(void)write_joiners(s, sb(client_slot_off(i)), 0);
		}
		if (all)
			return 0;
		if (clock::now() - start > std::chrono::milliseconds(4 * longest + 10000))
			return -ETIMEDOUT;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
}

// One write to the member being filled; -EHOSTDOWN when it failed.
int tree::write_spare(session &s, uint64_t dst, const void *src, uint32_t len, unsigned g,
		      unsigned m)
{
	for (;;) {
		batch b(s);

		b.write(dst, src, len);
		int ret = b.run(batch::k_write);
		if (!ret)
			return 0;
		if ((ret = fail_over(s, ret)))
			return ret;
		if (!(joining_.load() >> member_bit(g, m) & 1))
			return -EHOSTDOWN;	// the spare, not another member
	}
}

int tree::fill(session &s, unsigned g, unsigned m)
{
	uint64_t dst = members_[g][m].load();
	uint8_t *buf = s.node(session::s_node4);
	uint64_t lock_a = segs_[g] + seg_off_cursor_lock;
	int ret;

	// the segment header, under the cursor's lock
	static_assert(sizeof(seg_header) <= DS_BTREE_NODE_MIN);
	locks_.lock(lock_a);
	ret = lock_r(s, lock_a, segs_[g] + seg_hdr_off, buf, sizeof(seg_header), false);
	if (!ret) {
		reinterpret_cast<seg_header *>(buf)->cursor_lock = 0;
		ret = write_spare(s, dst + seg_hdr_off, buf, sizeof(seg_header), g, m);
		int uret = unlock_r(s, lock_a);
		ret = ret ? ret : uret;
	}
	locks_.unlock(lock_a);
	if (!ret && !g)
		ret = fill_superblock(s, dst, m);
	if (!ret)
		ret = bytes_keys() ? fill_nodes<vnode_view>(s, g, m) : fill_nodes<node_view>(s, g, m);
	return ret;
}

int tree::fill_superblock(session &s, uint64_t dst, unsigned m)
{
	auto sbk = std::make_unique<superblock>();
	uint8_t *tmp = s.node(session::s_node4);
	uint32_t longest = lease_ms_;
	int ret;

	if ((ret = load_superblock(s, sbk.get())))
		return ret;
	sbk->root_lock = sbk->repair_lock = 0;	// the spare's are not held
	for (const client_slot &c : sbk->clients)
		longest = std::max(longest, slot_lease(c.word));
	// the view words as this handle has them; CASes merge in from
	// here on what others record (and learn_view merges the members)
	sbk->view = view_.load();
	sbk->joining = joining_.load();
	for (uint32_t done = 0; done < sizeof(*sbk); done += node_size_) {
		uint32_t n = std::min<uint32_t>(node_size_, sizeof(*sbk) - done);
		std::memcpy(tmp, reinterpret_cast<uint8_t *>(sbk.get()) + done, n);
		if ((ret = write_spare(s, dst + done, tmp, n, 0, m)))
			return ret;
	}
	// the slots as copied may be older than their owners' beats, which
	// write the spare too: two beats of everyone's overwrite them
	std::this_thread::sleep_for(std::chrono::milliseconds(longest / 2 + 1));
	// the root word, under the lock of its changes
	uint64_t lock_a = sb(sb_off_root_lock);
	uint64_t *w = s.word(session::w_tmp);
	locks_.lock(lock_a);
	ret = lock_r(s, lock_a, sb(sb_off_root), reinterpret_cast<uint8_t *>(w), 8, false);
	if (!ret) {
		ret = write_spare(s, dst + sb_off_root, w, 8, 0, m);
		int uret = unlock_r(s, lock_a);
		ret = ret ? ret : uret;
	}
	locks_.unlock(lock_a);
	return ret;
}

// Level by level, as verify walks: each node of group g, and each
// out-of-line value in g, copied to member m under its node's lock.
template <class N>
int tree::fill_nodes(session &s, unsigned g, unsigned m)
{
	uint8_t *buf = s.node(session::s_node0), *blobs = s.blobs();
	N n(buf, node_size_);
	uint64_t first, dst = members_[g][m].load();
	unsigned restarts = 0;

	if (int ret = root_image(s, buf, &first, true, nullptr))
		return ret;
	for (int level = n.hdr().level; level >= 0 && first; level--) {
		uint64_t a = first, level_first = first, hops = 0;

		first = 0;
		while (a) {
			bool in_g = group_of(a) == g;

			if (!valid_node_ptr(a) || ++hops > seg_size_[0] / node_size_ * nsegs_)
				return -EIO;	// a sibling cycle: the images lie
			bool values = !level && !inline_values();
			bool locked = in_g || values;
			int ret = locked ? lock_read(s, a, buf) : read_node(s, a, buf);

			if (ret)
				return ret;
			if (n.hdr().level != level || (n.hdr().flags & node_free)) {
				// the level changed under the walk: again
				if (locked)
					(void)unlock(s, a);
				if (++restarts > restarts_max)
					return -EAGAIN;
				a = level_first;
				hops = 0;
				continue;
			}
			if (level && !first)
				first = n.hdr().leftmost;
			// the values of the group this leaf points at (a batch
			// goes again after a failover: the leaf is ours)
			auto in_this_g = [&](uint64_t v) { return valid_blob_ptr(v) && group_of(v) == g; };
			for (;;) {
				batch b(s);
				size_t nb = 0;
				for (uint32_t i = 0; values && i < n.count(); i++)
					if (in_this_g(n.val_at(i)))
						b.read(primary_addr(n.val_at(i)), blobs + nb++ * blob_size(),
						       blob_size());
				if (!nb || !(ret = b.run(batch::k_read)) || (ret = fail_over(s, ret)))
					break;
			}
			uint64_t tag = n.hdr().lock;
			n.hdr().lock = 0;	// the spare's is free (ours is on the others)
			while (!ret) {
				batch b(s);
				for (uint32_t i = 0, k = 0; values && i < n.count(); i++)
					if (in_this_g(n.val_at(i)))
						b.write(dst + (n.val_at(i) - segs_[g]),
							blobs + k++ * blob_size(), blob_size());
				if (in_g)
					b.write(dst + (a - segs_[g]), buf, node_size_);
				if (!b.size() || !(ret = b.run(batch::k_write)) || (ret = fail_over(s, ret)))
					break;
				if (!(joining_.load() >> member_bit(g, m) & 1))
					ret = -EHOSTDOWN;	// the spare itself failed
			}
			n.hdr().lock = tag;
			uint64_t next = (n.hdr().flags & node_high_inf) ? 0 : n.hdr().sibling;
			int uret = locked ? unlock(s, a) : 0;
			if (ret || uret)
				return ret ? ret : uret;
			a = next;
		}
	}
	return 0;
}

template int tree::fill_nodes<node_view>(session &, unsigned, unsigned);
template int tree::fill_nodes<vnode_view>(session &, unsigned, unsigned);

int tree::spare_add(session &s, uint64_t seg, uint64_t size)
{
	auto sbk = std::make_unique<superblock>();
	uint64_t lock_a = sb(sb_off_repair_lock);
	uint64_t *w = s.word(session::w_tmp);
	int ret;

	if (!replicated())
		return -EOPNOTSUPP;
	for (unsigned g = 0; g < nsegs_; g++) {
		if (size < seg_size_[g])
			return -ENOSPC;
		for (unsigned m = 0; m < replicas_; m++)
			if (members_[g][m].load() == seg)
				return -EEXIST;
	}
	{
		// the segment is the tree's from now: no create takes it, and
		// no other tree's spare_add
		batch b(s);
		b.cas(seg, 0, sb_spare, w);
		if ((ret = b.run(batch::k_other)))
			return ret;
		if (*w && *w != sb_spare)
			return -EEXIST;
	}
	locks_.lock(lock_a);
	if ((ret = lock_r(s, lock_a, sb(sb_off_view), reinterpret_cast<uint8_t *>(w), 8, false)))
		goto out_local;
	if ((ret = load_superblock(s, sbk.get())))
		goto out_unlock;
	{
		uint32_t i = spares_max;

		ret = -ENOSPC;
		for (uint32_t k = spares_max; k-- > 0;) {
			if (sbk->spares[k] == seg)
				ret = -EEXIST;
			if (!sbk->spares[k])
				i = k;
		}
		if (ret == -EEXIST || i == spares_max)
			goto out_unlock;
		*w = seg;
		for (;;) {
			batch b(s);
			for (unsigned k = 0; k < replicas_; k++)
				if (member_writable(0, k))
					b.write(members_[0][k] + sb_off_spares + i * 8, w, 8);
			ret = b.run(batch::k_other);
			if (!ret || (ret = fail_over(s, ret)))
				break;
		}
		if (!ret)
			spares_.fetch_add(1);
	}
out_unlock:
	{
		int uret = unlock_r(s, lock_a);
		ret = ret ? ret : uret;
	}
out_local:
	locks_.unlock(lock_a);
	if (!ret)
		repair_cv_.notify_all();
	return ret;
}

}  // namespace dsmem::btree
