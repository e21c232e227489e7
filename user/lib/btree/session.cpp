// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's data path: sessions, batches (one round trip each), node
// locks on remote lock words, and this client's slot and heartbeat, which
// let other clients take over the locks of one that died.
#include "tree.hpp"

#include <algorithm>
#include <sys/mman.h>
#include <random>

#include "../ds_internal.hpp"

namespace dsmem::btree {

namespace {

constexpr unsigned words = 24;	// session::word(): see the users

uint64_t ms_since(clock::time_point t)
{
	return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
		clock::now() - t).count());
}

// Spread contending CASes apart, a little more each time.
void backoff(unsigned attempt)
{
	thread_local std::minstd_rand rng(std::random_device{}());
	unsigned cap = 1u << std::min(attempt, 10u);	// up to ~1 ms

	if (attempt < 2) {
		std::this_thread::yield();
		return;
	}
	std::this_thread::sleep_for(std::chrono::microseconds(rng() % cap));
}

}  // namespace

// ---- sessions ----

session::~session()
{
	if (x) {
		// a READ given up on may still land: closing waits for it
		if (mr && !bounce_used)
			ds_mr_dereg(x, mr);
		ds_xfer_close(x);
	}
	if (buf)
		munmap(buf, buf_size);
}

uint8_t *session::node(unsigned i) const
{
	return buf + static_cast<size_t>(i) * t->node_size();
}

uint64_t *session::word(unsigned i) const
{
	return reinterpret_cast<uint64_t *>(node(s_nodes)) + i;
}

uint8_t *session::blobs() const
{
	return node(s_nodes) + words * sizeof(uint64_t);
}

uint8_t *session::bounce(unsigned i) const
{
	size_t blob_room = t->inline_values() ? 0 :
		static_cast<size_t>(node_capacity(t->node_size())) * t->blob_size();
	return blobs() + blob_room + static_cast<size_t>(i) * bounce_size;
}

int tree::make_session(std::unique_ptr<session> *out)
{
	auto s = std::make_unique<session>();
	int ret;
	size_t blob_room = inline_values() ? 0 :
		static_cast<size_t>(node_capacity(node_size_)) * blob_size();

	s->t = this;
	if (replicated())
		s->bounce_size = std::max(node_size_, blob_size());
	s->buf_size = static_cast<size_t>(session::s_nodes) * node_size_ + words * sizeof(uint64_t) +
		      blob_room + static_cast<size_t>(session::bounce_max) * s->bounce_size;
	s->buf_size = (s->buf_size + 4095) & ~size_t(4095);
	void *p = mmap(nullptr, s->buf_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	s->buf = static_cast<uint8_t *>(p);
	ret = ds_xfer_open(node_id_, &s->x);
	if (ret)
		return ret;
	ret = ds_mr_reg(s->x, s->buf, s->buf_size, &s->mr);
	if (ret)
		return ret;
	*out = std::move(s);
	return 0;
}

session *tree::acquire(int *err)
{
	{
		std::lock_guard g(sessions_m_);
		if (!idle_.empty()) {
			session *s = idle_.back();
			idle_.pop_back();
			return s;
		}
	}
	std::unique_ptr<session> s;
	*err = make_session(&s);
	if (*err)
		return nullptr;
	std::lock_guard g(sessions_m_);
	sessions_.push_back(std::move(s));
	return sessions_.back().get();
}

void tree::release(session *s)
{
	std::lock_guard g(sessions_m_);
	// every bounce buffer given to a late READ: a new session gives
	// the next call bounded reads again (this one closes with the tree)
	if (s->bounce_size && s->bounce_used >= session::bounce_max &&
	    sessions_.size() < idle_.size() + sessions_retired_max)
		return;
	idle_.push_back(s);
}

// sum() and reset_stats() walk the counters as ds_btree_stats' fields
static_assert(sizeof(counters) == offsetof(ds_btree_stats, reserved));

void tree::sum(ds_btree_stats *st)
{
	std::lock_guard g(sessions_m_);
	auto *out = reinterpret_cast<uint64_t *>(st);
	size_t i = 0;

	*st = {};
#define DS_BTREE_COUNTER(n) out[i++] = retired_.n.load(std::memory_order_relaxed);
#include "counters.def"
#undef DS_BTREE_COUNTER
	for (auto &s : sessions_) {
		i = 0;
#define DS_BTREE_COUNTER(n) out[i++] += s->st.n.load(std::memory_order_relaxed);
#include "counters.def"
#undef DS_BTREE_COUNTER
	}
}

void tree::reset_stats()
{
	std::lock_guard g(sessions_m_);
#define DS_BTREE_COUNTER(n) retired_.n.store(0);
#include "counters.def"
#undef DS_BTREE_COUNTER
	for (auto &s : sessions_) {
#define DS_BTREE_COUNTER(n) s->st.n.store(0);
#include "counters.def"
#undef DS_BTREE_COUNTER
	}
}

// ---- batches ----

void batch::add(uint8_t op, uint64_t remote, const void *local, uint64_t len,
		uint64_t compare_add, uint64_t swap)
{
	struct dsmem_xfer_req &r = reqs_[n_++];

	r = {};
	r.opcode = op;
	r.mr = s_.mr;
	r.local = s_.offset(local);
	r.remote = remote;
	r.len = len;
	r.compare_add = compare_add;
	r.swap = swap;
}

void batch::read(uint64_t remote, void *local, uint64_t len)
{
	add(DSMEM_XFER_READ, remote, local, len, 0, 0);
	bytes_read_ += len;
}

void batch::write(uint64_t remote, const void *local, uint64_t len)
{
	add(DSMEM_XFER_WRITE, remote, local, len, 0, 0);
	bytes_written_ += len;
}

void batch::cas(uint64_t remote, uint64_t expect, uint64_t swap, uint64_t *old)
{
	add(DSMEM_XFER_CAS, remote, old, 8, expect, swap);
}

void batch::faa(uint64_t remote, uint64_t add_, uint64_t *old)
{
	add(DSMEM_XFER_FAA, remote, old, 8, add_, 0);
}

int batch::run(kind k)
{
	return run_until(k, 0);
}

int batch::run_until(kind k, uint64_t timeout_ns)
{
	if (s_.t->replicated()) {
		s_.view_at_run = s_.t->view_word();
		s_.joining_at_run = s_.t->joining();
	}
	int ret = timeout_ns ? detail::xfer_run_until(s_.x, reqs_, n_, timeout_ns) :
			       detail::xfer_run(s_.x, reqs_, n_);

	switch (k) {
	case k_read:
		s_.st.rtt_read.fetch_add(1, std::memory_order_relaxed);
		break;
	case k_lock:
		s_.st.rtt_lock.fetch_add(1, std::memory_order_relaxed);
		break;
	case k_write:
		s_.st.rtt_write.fetch_add(1, std::memory_order_relaxed);
		break;
	case k_other:
		s_.st.rtt_other.fetch_add(1, std::memory_order_relaxed);
		break;
	}
	s_.st.bytes_read.fetch_add(bytes_read_, std::memory_order_relaxed);
	s_.st.bytes_written.fetch_add(bytes_written_, std::memory_order_relaxed);
	n_ = 0;
	bytes_read_ = bytes_written_ = 0;
	return ret;
}

// ---- local locks ----

void local_locks::lock(uint64_t addr)
{
	shard &sh = of(addr);
	std::unique_lock g(sh.m);

	sh.cv.wait(g, [&] { return std::find(sh.held.begin(), sh.held.end(), addr) == sh.held.end(); });
	sh.held.push_back(addr);
}

void local_locks::unlock(uint64_t addr)
{
	shard &sh = of(addr);
	{
		std::lock_guard g(sh.m);
		auto it = std::find(sh.held.begin(), sh.held.end(), addr);
		if (it != sh.held.end()) {
			*it = sh.held.back();
			sh.held.pop_back();
		}
	}
	sh.cv.notify_all();
}

// ---- node images and locks ----

int tree::read_node(session &s, uint64_t addr, uint8_t *buf, batch::kind k)
{
	for (unsigned i = 0; i <= read_retries_max; i++) {
		if (i)
			s.st.read_retries.fetch_add(1, std::memory_order_relaxed);
		if (int ret = read_at(s, addr, buf, node_size_, k))
			return ret;
		if (image_ok(buf))
			return 0;
		// a writer's image may be half landed: give it time
		backoff(i);
	}
	s.st.corrupt.fetch_add(1, std::memory_order_relaxed);
	return -EIO;
}

// A lock's holder is presumed dead once its slot's word stood still for
// the holder's own lease, timed on this client's clock (no clocks need to
// agree); declaring it dead is a CAS of that very word to 0, which fails
// if the holder beat meanwhile.  Returns 1 when the lock may be taken
// over, 0 to keep waiting.
int tree::steal_check(session &s, uint64_t holder, lock_wait *w)
{
	uint32_t slot = tag_slot(holder);
	uint64_t *word = s.word(2);
	batch b(s);

	if (ms_since(w->polled) < lease_ms_ / 4)
		return 0;
	w->polled = clock::now();
	if (!slot || slot > clients_max || !(holder & 1))
		return 1;	// no client's tag: garbage, take it
	if (int ret = read_at(s, sb(client_slot_off(slot - 1)), word, 8, batch::k_other))
		return ret;
	if (!*word || slot_nonce(*word) != tag_nonce(holder))
		return 1;	// its client is gone: the slot is free or another's
	if (*word != w->seen || w->seen_at == clock::time_point{}) {
		w->seen = *word;
		w->seen_at = clock::now();
		return 0;
	}
	uint32_t lease = slot_lease(*word) ? slot_lease(*word) : lease_ms_;
	if (ms_since(w->seen_at) < lease)
		return 0;
	if (replicated()) {
		// dead when no member's word moved on: a member that took
		// the CAS fences the holder even if another did not
		uint64_t *res = s.word(session::w_unlock);	// free while locking
		if (int ret = cas_all(s, sb(client_slot_off(slot - 1)), w->seen, 0, res))
			return ret;
		for (unsigned m = 0; m < replicas_; m++) {
			if (res[m] != res_none && res[m] != w->seen && res[m] != 0) {
				w->seen_at = {};
				return 0;
			}
		}
		(void)write_joiners(s, sb(client_slot_off(slot - 1)), 0);
		return 1;
	}
	b.cas(sb(client_slot_off(slot - 1)), w->seen, 0, s.word(4));
	if (int ret = b.run(batch::k_other))
		return ret;
	if (*s.word(4) != w->seen) {
		w->seen_at = {};	// it beat after all
		return 0;
	}
	return 1;
}

bool tree::heartbeat_fresh() const
{
	// a quarter lease of margin before anyone may presume us dead
	auto last = clock::time_point(clock::duration(last_beat_.load(std::memory_order_relaxed)));
	return clock::now() - last < std::chrono::milliseconds(lease_ms_ * 3 / 4);
}

int tree::await_heartbeat()
{
	// a late heartbeat thread (a loaded host) holds writes back, it does
	// not fail them; a lost slot does
	auto until = clock::now() + std::chrono::milliseconds(4 * lease_ms_);
	while (!heartbeat_fresh()) {
		if (fenced() || clock::now() > until)
			return -ESTALE;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return fenced() ? -ESTALE : 0;
}

int tree::lock_read(session &s, uint64_t addr, uint8_t *buf)
{
	uint64_t expect = 0, holder = 0;
	uint64_t *old = s.word(0);
	lock_wait w;
	int ret;

	if ((ret = await_heartbeat()))
		return ret;
	locks_.lock(addr);
	if (replicated()) {
		if ((ret = lock_r(s, addr, addr, buf, node_size_, true)))
			goto out_local;
		goto locked;
	}
	w.polled = clock::now();
	for (unsigned attempt = 0;; attempt++) {
		batch b(s);

		// the CAS and the READ behind it on one QP: the READ sees the
		// node as the CAS left it
		b.cas(addr + node_off_lock, expect, tag_, old);
		b.read(addr, buf, node_size_);
		ret = b.run(batch::k_lock);
		if (ret) {
			// the CAS may have landed though the READ failed
			release_lock(s, addr);
			goto out_local;
		}
		if (*old == expect || *old == tag_) {
			// our own tag under our local lock can only be a lock
			// an earlier failure left behind: ours to take
			if (expect)
				s.st.lock_steals.fetch_add(1, std::memory_order_relaxed);
			break;
		}
		s.st.lock_retries.fetch_add(1, std::memory_order_relaxed);
		expect = 0;
		if (*old != holder) {
			// another holder: its slot is watched from scratch
			holder = *old;
			w.seen_at = {};
		}
		ret = steal_check(s, *old, &w);
		if (ret < 0)
			goto out_local;
		if (ret == 1)
			expect = *old;	// take it over from the dead holder
		else
			backoff(attempt);
	}
locked:
	if (image_ok(buf))
		return 0;
	// ours now, so nothing writes it: a bad image is damage, not a race
	ret = read_node(s, addr, buf);
	if (!ret)
		return 0;
	unlock(s, addr);
	return ret;

out_local:
	locks_.unlock(addr);
	return ret;
}

void tree::release_lock(session &s, uint64_t addr)
{
	batch b(s);

	if (replicated()) {
		(void)unlock_r(s, addr);
		return;
	}
	b.cas(addr + node_off_lock, tag_, 0, s.word(6));
	(void)b.run(batch::k_write);
}

int tree::write_unlock(session &s, uint64_t addr, uint8_t *buf, uint64_t first,
			const uint8_t *first_buf)
{
	node_view n(buf, node_size_);
	batch b(s);
	int ret = await_heartbeat();

	if (ret) {
		release_lock(s, addr);
		locks_.unlock(addr);
		return ret;
	}
	n.hdr().version++;
	seal_image(buf);
	if (replicated()) {
		ret = write_unlock_r(s, addr, addr + 8, buf + 8, node_size_ - 8, first, first_buf);
		locks_.unlock(addr);
		return ret;
	}
	// RC executes them in order: a new node lands before the pointer to
	// it, and the image before the lock opens.  The unlock is a CAS from
	// our tag, so a holder presumed dead never opens its successor's lock.
	if (first)
		b.write(first, first_buf, node_size_);
	b.write(addr + 8, buf + 8, node_size_ - 8);
	b.cas(addr + node_off_lock, tag_, 0, s.word(6));
	ret = b.run(batch::k_write);
	if (ret)
		release_lock(s, addr);
	locks_.unlock(addr);
	return ret;
}

int tree::write_images(session &s, std::initializer_list<std::pair<uint64_t, uint8_t *>> nodes)
{
	batch b(s);
	int ret = await_heartbeat();

	if (ret)
		return ret;
	for (auto [addr, buf] : nodes) {
		node_view n(buf, node_size_);
		n.hdr().version++;
		seal_image(buf);
		if (!replicated())
			b.write(addr + 8, buf + 8, node_size_ - 8);
	}
	return replicated() ? write_images_r(s, nodes) : b.run(batch::k_write);
}

int tree::unlock_all(session &s, std::initializer_list<uint64_t> addrs)
{
	batch b(s);

	if (replicated()) {
		int ret = 0;
		for (uint64_t a : addrs) {
			int r = unlock_r(s, a);
			ret = ret ? ret : r;
			locks_.unlock(a);
		}
		return ret;
	}
	for (uint64_t a : addrs)
		b.cas(a + node_off_lock, tag_, 0, s.word(6));
	int ret = b.run(batch::k_write);
	for (uint64_t a : addrs)
		locks_.unlock(a);
	return ret;
}

int tree::unlock(session &s, uint64_t addr)
{
	batch b(s);

	if (replicated()) {
		int ret = unlock_r(s, addr);
		locks_.unlock(addr);
		return ret;
	}
	b.cas(addr + node_off_lock, tag_, 0, s.word(6));
	int ret = b.run(batch::k_write);
	locks_.unlock(addr);
	return ret;
}

// ---- this client: its slot and heartbeat ----

int tree::load_superblock(session &s, superblock *out, uint64_t from)
{
	batch b(s);
	// the superblock is read through the session's blob room or a node
	// slot: it is larger than a small node, so read it in pieces
	auto *dst = reinterpret_cast<uint8_t *>(out);
	size_t done = 0, piece = node_size_;
	uint8_t *tmp = s.node(session::s_node0);

	while (done < sizeof(*out)) {
		size_t n = std::min(piece, sizeof(*out) - done);
		int ret;
		if (from) {
			b.read(from + done, tmp, n);
			ret = b.run(batch::k_other);
		} else {
			ret = read_at(s, addr_ + done, tmp, static_cast<uint32_t>(n), batch::k_other);
		}
		if (ret)
			return ret;
		std::memcpy(dst + done, tmp, n);
		done += n;
	}
	return 0;
}

int tree::claim_slot(session &s)
{
	std::random_device rd;
	auto before = std::make_unique<superblock>();
	auto now = std::make_unique<superblock>();
	uint32_t wait_ms = lease_ms_;

	if (int ret = load_superblock(s, before.get()))
		return ret;
	for (const auto &c : before->clients)
		wait_ms = std::max(wait_ms, slot_lease(c.word));
	// first a free slot; failing that, one whose word stood still for
	// twice its owner's lease: a dead client's
	for (int round = 0; round < 2; round++) {
		const superblock &snap = round ? *now : *before;

		for (uint32_t i = 0; i < clients_max; i++) {
			uint64_t nonce = (rd() & slot_nonce_mask) | 1;
			uint64_t expect = snap.clients[i].word;
			uint64_t mine = slot_word(nonce, lease_ms_, 0);

			if (expect && (!round || expect != before->clients[i].word))
				continue;
			bool won = false;
			if (replicated()) {
				if (int ret = claim_r(s, i, expect, mine, &won))
					return ret;
			} else {
				batch b(s);
				b.cas(sb(client_slot_off(i)), expect, mine, s.word(0));
				if (int ret = b.run(batch::k_other))
					return ret;
				won = *s.word(0) == expect;
			}
			if (won) {
				slot_ = i + 1;
				slot_word_ = mine;
				tag_ = lock_tag(i, nonce);
				last_beat_.store(clock::now().time_since_epoch().count());
				// the view this handle writes by (a repair waits
				// for it)
				return replicated() ? ack(s) : 0;
			}
		}
		if (!round) {
			std::this_thread::sleep_for(std::chrono::milliseconds(2 * wait_ms));
			if (int ret = load_superblock(s, now.get()))
				return ret;
		}
	}
	return -EUSERS;
}

void tree::heartbeat_loop()
{
	std::unique_ptr<session> s;
	std::unique_lock g(hb_m_);

	if (make_session(&s))
		fenced_.store(true);	// no heartbeat: others will presume us dead
	while (s && !hb_stop_) {
		hb_cv_.wait_for(g, std::chrono::milliseconds(std::max(1u, lease_ms_ / 4)));
		if (hb_stop_)
			break;
		g.unlock();
		batch b(*s);
		uint64_t next = slot_beat(slot_word_);
		int ret, dead;
		if (replicated()) {
			ret = heartbeat_r(*s, next);
			// adds commute: every member's count gets them all
			// (a statistic: best effort, after the beat)
			std::lock_guard nf(nodes_flush_m_);
			uint64_t nodes = unflushed_nodes_.exchange(0, std::memory_order_relaxed);
			for (unsigned m = 0; nodes && m < replicas_; m++)
				if (member_live(0, m))
					b.faa(member_addr(sb(sb_off_node_ids), m), nodes, s->word(1));
			if (b.size())
				(void)b.run_until(batch::k_other, probe_timeout_ns());
			dead = ret == 1;
			ret = ret == 1 ? 0 : ret;
		} else {
			std::lock_guard nf(nodes_flush_m_);
			uint64_t nodes = unflushed_nodes_.exchange(0, std::memory_order_relaxed);
			b.cas(sb(client_slot_off(slot_ - 1)), slot_word_, next, s->word(0));
			if (nodes)
				b.faa(sb(sb_off_node_ids), nodes, s->word(1));
			ret = b.run(batch::k_other);
			dead = !ret && *s->word(0) != slot_word_;
		}
		g.lock();
		if (ret)
			continue;	// unreachable for now: writes wait, then fail
		if (dead) {
			// presumed dead (a stall longer than the lease): our
			// locks may be others' now, so this handle writes no more
			fenced_.store(true);
			break;
		}
		slot_word_ = next;
		last_beat_.store(clock::now().time_since_epoch().count());
	}
}

// The groups' members as the superblock has them; -EUCLEAN for a table
// no create would write.
int tree::open_members(const superblock &sb)
{
	replicas_ = 1;
	if (!(sb.features & feature_replicas)) {
		for (uint32_t g = 0; g < sb.nsegs && g < DS_BTREE_SEGS_MAX; g++)
			members_[g][0] = sb.segs[g];
		return 0;
	}
	if (sb.replicas < 2 || sb.replicas > DS_BTREE_REPLICAS_MAX || sb.layout != DS_BTREE_GENERAL ||
	    view_dead(sb.view) >> (member_bit(sb.nsegs - 1, DS_BTREE_REPLICAS_MAX - 1) + 1))
		return -EUCLEAN;
	// (a group keeps its name, segs[g], when a repair replaces its
	// member 0)
	for (uint32_t g = 0; g < sb.nsegs; g++) {
		for (uint32_t m = 0; m < sb.replicas; m++) {
			uint64_t a = sb.members[g][m];
			if (DSMEM_GADDR_OFF(a) || !DSMEM_GADDR_NODE(a))
				return -EUCLEAN;
			for (uint32_t k = 0; k < m; k++)
				if (DSMEM_GADDR_NODE(sb.members[g][k]) == DSMEM_GADDR_NODE(a))
					return -EUCLEAN;
			members_[g][m] = a;
		}
	}
	replicas_ = sb.replicas;
	view_.store(sb.view);
	joining_.store(sb.joining & members_mask);
	for (uint64_t seg : sb.spares)
		spares_.fetch_add(seg != 0);
	return 0;
}

int tree::open(const ds_btree_open_opts &o, uint64_t sb_at)
{
	superblock sb;

	lease_ms_ = o.lock_lease_ms ? o.lock_lease_ms : lease_default_ms;
	flags_ = o.flags;
	read_timeout_ns_ = (o.read_timeout_ms ? o.read_timeout_ms : read_timeout_default_ms) *
			   1000000ULL;
	// the superblock fixes the node size the sessions' buffers need
	node_size_ = DS_BTREE_NODE_MAX;
	value_size_ = 8;
	{
		std::unique_ptr<session> boot;
		if (int ret = make_session(&boot))
			return ret;
		if (int ret = load_superblock(*boot, &sb, sb_at))
			return ret;
	}
	// a copy on another member of group 0 must be this tree's
	if (sb_at != addr_ && sb.magic == sb_magic) {
		bool member = false;
		for (uint32_t m = 0; m < DS_BTREE_REPLICAS_MAX; m++)
			member |= sb.members[0][m] == sb_at;
		if (!(sb.features & feature_replicas) || sb.segs[0] != addr_ || !member)
			return -ENOENT;
	}
	if (sb.magic == sb_creating)
		return -EAGAIN;
	if (sb.magic != sb_magic)
		return -ENOENT;
	// format 1 is what every library since 1.4 reads; 2 names what it
	// needs more, and a library refuses what it does not know
	if (sb.format != format_version &&
	    (sb.format != format_features || (sb.features & ~features_known)))
		return -EPROTO;
	if ((sb.format == format_version && sb.features) ||
	    (!(sb.features & feature_bytes_keys) && sb.key_max))
		return -EUCLEAN;
	key_max_ = (sb.features & feature_bytes_keys) ? sb.key_max : 0;
	if (sb.node_size < DS_BTREE_NODE_MIN || sb.node_size > DS_BTREE_NODE_MAX ||
	    (sb.node_size & (sb.node_size - 1)) || !sb.nsegs ||
	    sb.nsegs > DS_BTREE_SEGS_MAX || sb.layout > DS_BTREE_SEED ||
	    sb.value_size < 8 || sb.value_size > DS_BTREE_VALUE_MAX ||
	    (sb.features & feature_bytes_keys &&
	     (!sb.key_max || sb.key_max > DS_BTREE_KEY_MAX || !vnode_fits(sb.node_size, sb.key_max))))
		return -EUCLEAN;
	if (int ret = open_members(sb))
		return ret;
	layout_ = sb.layout;
	node_size_ = sb.node_size;
	value_size_ = sb.value_size;
	nsegs_ = sb.nsegs;
	for (uint32_t i = 0; i < nsegs_; i++) {
		segs_[i] = sb.segs[i];
		seg_size_[i] = sb.seg_size[i];
	}
	root_hint_.store(sb.root);
	cache_.configure(o.cache_bytes ? o.cache_bytes : cache_default, node_size_);
	vcache_.configure(o.cache_bytes ? o.cache_bytes : cache_default, node_size_);

	session_ref s(this);
	if (!s.get())
		return s.error();
	if (int ret = claim_slot(*s.get()))
		return ret;
	// what the other members of group 0 recorded too
	if (int ret = learn_view(*s.get()))
		return ret;
	hb_thread_ = std::thread([this] { heartbeat_loop(); });
	if (replicated())
		repair_thread_ = std::thread([this] { repair_loop(); });
	return 0;
}

tree::~tree()
{
	if (repair_thread_.joinable()) {
		{
			std::lock_guard g(repair_m_);
			repair_stop_ = true;
		}
		repair_cv_.notify_all();
		repair_thread_.join();
	}
	if (hb_thread_.joinable()) {
		{
			std::lock_guard g(hb_m_);
			hb_stop_ = true;
		}
		hb_cv_.notify_all();
		hb_thread_.join();
	}
	if (slot_) {
		session_ref s(this);
		if (s.get()) {
			batch b(*s.get());
			uint64_t nodes = unflushed_nodes_.exchange(0);
			for (unsigned m = 0; nodes && m < replicas_; m++)
				if (member_live(0, m))
					b.faa(member_addr(sb(sb_off_node_ids), m), nodes, s.get()->word(1));
			if (replicated()) {
				if (b.size())
					(void)b.run(batch::k_other);
				(void)cas_all(*s.get(), sb(client_slot_off(slot_ - 1)), slot_word_, 0,
					      s.get()->word(session::w_unlock));
				(void)write_joiners(*s.get(), sb(client_slot_off(slot_ - 1)), 0);
				return;
			}
			b.cas(sb(client_slot_off(slot_ - 1)), slot_word_, 0, s.get()->word(0));
			(void)b.run(batch::k_other);
		}
	}
}

}  // namespace dsmem::btree
