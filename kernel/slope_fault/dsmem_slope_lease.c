// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: leases, the units in which nodes own the Slope range.
 *
 * Node i is responsible for the i-th share of DSMEM_SLOPE_LEASES_PER_NODE
 * 1 GiB leases and gives each to at most one node at a time (itself
 * included).  A node allocates only inside leases it holds, so no two
 * nodes ever hand out the same address, with no coordinator.  Each node
 * announces how many leases it has free, periodically and when a peer
 * connects; a node short of space asks one of the two nodes that last
 * announced the most, at random, so that simultaneous askers spread out.
 * Freed addresses go back to the holder of their lease, through the node
 * responsible for it, which knows the holder.  An empty lease goes back.
 */
#include <linux/bitmap.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dsmem_slope.h"

static unsigned int slope_announce_ms = 10000;
module_param(slope_announce_ms, uint, 0644);
MODULE_PARM_DESC(slope_announce_ms,
		 "interval of the Slope free-lease announcements (ms, >= 10)");

static unsigned int slope_leases_per_peer = 16;
module_param(slope_leases_per_peer, uint, 0644);
MODULE_PARM_DESC(slope_leases_per_peer,
		 "leases of this node's share one peer may hold at a time (1 .. 64)");

/* the lease holding a (global index over every share) */
static u32 dsmem_slope_lease_of(u64 a)
{
	return (a - DSMEM_SLOPE_BASE) >> DSMEM_SLOPE_LEASE_SHIFT;
}

static u64 dsmem_slope_lease_base(u32 lease)
{
	return DSMEM_SLOPE_BASE + ((u64)lease << DSMEM_SLOPE_LEASE_SHIFT);
}

/* our share's first lease, or -1 for a node with no share */
static int dsmem_slope_share_first(struct dsmem_slope *s)
{
	u32 id = s->node->id;

	if (!id || id > DSMEM_SLOPE_NODES_MAX)
		return -1;
	return (id - 1) * DSMEM_SLOPE_LEASES_PER_NODE;
}

static u32 dsmem_slope_free_leases(struct dsmem_slope *s)
{
	u32 i, n = 0;

	if (dsmem_slope_share_first(s) < 0)
		return 0;
	mutex_lock(&s->share_lock);
	for (i = 0; i < DSMEM_SLOPE_LEASES_PER_NODE; i++)
		n += !s->holder[i];
	mutex_unlock(&s->share_lock);
	return n;
}

/*
 * Give one lease of our share to node: -ENOSPC when none is left, and
 * -EDQUOT when a peer holds its quota already, so that one peer cannot
 * take the share every other node (and this one) allocates from.
 */
static int dsmem_slope_share_take(struct dsmem_slope *s, u32 node, u32 *lease)
{
	unsigned int quota = clamp_t(unsigned int, READ_ONCE(slope_leases_per_peer),
				     1, DSMEM_SLOPE_LEASES_PER_NODE);
	u32 i, free = DSMEM_SLOPE_LEASES_PER_NODE, held = 0;
	int first = dsmem_slope_share_first(s);
	int ret = 0;

	if (first < 0)
		return -ENOSPC;
	mutex_lock(&s->share_lock);
	for (i = 0; i < DSMEM_SLOPE_LEASES_PER_NODE; i++) {
		if (!s->holder[i] && free == DSMEM_SLOPE_LEASES_PER_NODE)
			free = i;
		held += s->holder[i] == node;
	}
	if (node != s->node->id && held >= quota)
		ret = -EDQUOT;
	else if (free == DSMEM_SLOPE_LEASES_PER_NODE)
		ret = -ENOSPC;
	else
		s->holder[free] = node;
	mutex_unlock(&s->share_lock);
	if (!ret)
		*lease = first + free;
	return ret;
}

/* The holder of a lease of our share, or 0. */
static u32 dsmem_slope_share_holder(struct dsmem_slope *s, u32 lease)
{
	int first = dsmem_slope_share_first(s);
	u32 h;

	if (first < 0 || lease < first ||
	    lease >= first + DSMEM_SLOPE_LEASES_PER_NODE)
		return 0;
	mutex_lock(&s->share_lock);
	h = s->holder[lease - first];
	mutex_unlock(&s->share_lock);
	return h;
}

static int dsmem_slope_share_put(struct dsmem_slope *s, u32 lease, u32 node)
{
	int first = dsmem_slope_share_first(s);
	int ret = -ESTALE;

	if (first < 0 || lease < first ||
	    lease >= first + DSMEM_SLOPE_LEASES_PER_NODE)
		return -EINVAL;
	mutex_lock(&s->share_lock);
	if (s->holder[lease - first] == node) {
		s->holder[lease - first] = 0;
		ret = 0;
	}
	mutex_unlock(&s->share_lock);
	return ret;
}

static int dsmem_slope_hold(struct dsmem_slope *s, u32 lease)
{
	struct dsmem_slope_lease *l;
	int ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->used = kvcalloc(BITS_TO_LONGS(DSMEM_SLOPE_LEASE_PAGES),
			   sizeof(long), GFP_KERNEL);
	if (!l->used) {
		kfree(l);
		return -ENOMEM;
	}
	mutex_lock(&s->lease_lock);
	ret = xa_insert(&s->held, lease, l, GFP_KERNEL);
	mutex_unlock(&s->lease_lock);
	if (ret) {
		kvfree(l->used);
		kfree(l);
	}
	return ret;
}

/* Ask the node responsible for leases; under grow_lock only. */
static int dsmem_slope_lease_ask(struct dsmem_slope *s, u32 from, u32 *lease)
{
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_SLOPE_LEASE_REQ };
	struct dsmem_wire_msg reply;
	struct dsmem_conn *conn;
	u64 a;
	int ret;

	if (from == s->node->id)
		return dsmem_slope_share_take(s, from, lease);
	conn = dsmem_conn_lookup(s->node, from);
	if (!conn)
		return -ENOTCONN;
	ret = dsmem_msg_call(conn, &req, &reply, NULL, 0);
	dsmem_conn_put(conn);
	if (ret)
		return ret;
	a = reply.addr;
	/* a lease of the share of the node we asked, and nothing else */
	if (a < DSMEM_SLOPE_BASE || a - DSMEM_SLOPE_BASE >= DSMEM_SLOPE_SIZE ||
	    a & (DSMEM_SLOPE_LEASE_SIZE - 1) || DSMEM_SLOPE_ADDR_NODE(a) != from)
		return -EPROTO;
	*lease = dsmem_slope_lease_of(a);
	return 0;
}

/*
 * Candidates, best first: the two nodes that last announced the most free
 * leases, in random order, then every other node that announced some.
 */
static int dsmem_slope_lease_acquire(struct dsmem_slope *s, u32 *lease)
{
	u32 counts[DSMEM_SLOPE_NODES_MAX + 1];
	u32 order[DSMEM_SLOPE_NODES_MAX];
	u32 n = 0, i, j, me = s->node->id;
	int ret = -ENOSPC;

	for (i = 1; i <= DSMEM_SLOPE_NODES_MAX; i++)
		counts[i] = i == me ? dsmem_slope_free_leases(s) :
				      READ_ONCE(s->peer_free[i]);
	for (i = 1; i <= DSMEM_SLOPE_NODES_MAX; i++) {
		if (!counts[i])
			continue;
		/* insertion by count, descending */
		for (j = n; j && counts[order[j - 1]] < counts[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
		n++;
	}
	if (n > 1 && get_random_u32_below(2))
		swap(order[0], order[1]);
	for (i = 0; i < n; i++) {
		ret = dsmem_slope_lease_ask(s, order[i], lease);
		if (!ret)
			return dsmem_slope_hold(s, *lease);
		/* that node ran out since it announced: forget its count */
		if (order[i] != me)
			WRITE_ONCE(s->peer_free[order[i]], 0);
	}
	return ret;
}

/* Under lease_lock: a free run of npages (2 MiB aligned for huge), or -1. */
static long dsmem_slope_lease_find(struct dsmem_slope *s, u64 npages, bool huge,
				   unsigned long *lease)
{
	unsigned long align = huge ? (1UL << DSMEM_SLOPE_HUGE_ORDER) - 1 : 0;
	struct dsmem_slope_lease *l;
	unsigned long i, pos;

	lockdep_assert_held(&s->lease_lock);
	xa_for_each(&s->held, i, l) {
		if (l->returning)
			continue;
		pos = bitmap_find_next_zero_area(l->used, DSMEM_SLOPE_LEASE_PAGES,
						 0, npages, align);
		if (pos < DSMEM_SLOPE_LEASE_PAGES) {
			*lease = i;
			return pos;
		}
	}
	return -1;
}

/*
 * Under alloc_lock: a free run of npages in a held lease, taken; -EAGAIN
 * when no held lease has one (dsmem_slope_lease_grow, then again).
 */
int dsmem_slope_lease_alloc(struct dsmem_slope *s, u64 npages, bool huge,
			    u64 *addr)
{
	struct dsmem_slope_lease *l;
	unsigned long lease;
	long pos;

	lockdep_assert_held(&s->alloc_lock);
	mutex_lock(&s->lease_lock);
	pos = dsmem_slope_lease_find(s, npages, huge, &lease);
	if (pos >= 0) {
		l = xa_load(&s->held, lease);
		bitmap_set(l->used, pos, npages);
		l->nused += npages;
		*addr = dsmem_slope_lease_base(lease) + ((u64)pos << PAGE_SHIFT);
	}
	mutex_unlock(&s->lease_lock);
	return pos >= 0 ? 0 : -EAGAIN;
}

/*
 * Hold one more lease, for a run of npages that no held lease has room
 * for: asked of the node responsible for it, which may take a message
 * timeout per candidate.  So never under alloc_lock, which every
 * incoming migration and every free needs; under grow_lock, so that
 * allocators short of room together ask once, and ask not at all when
 * another's lease came meanwhile.
 */
int dsmem_slope_lease_grow(struct dsmem_slope *s, u64 npages, bool huge)
{
	unsigned long lease;
	bool room;
	u32 got;
	int ret;

	mutex_lock(&s->grow_lock);
	mutex_lock(&s->lease_lock);
	room = dsmem_slope_lease_find(s, npages, huge, &lease) >= 0;
	mutex_unlock(&s->lease_lock);
	ret = room ? 0 : dsmem_slope_lease_acquire(s, &got);
	mutex_unlock(&s->grow_lock);
	return ret;
}

static int dsmem_slope_lease_return(struct dsmem_slope *s, u32 lease)
{
	struct dsmem_wire_msg req = {
		.opcode = DSMEM_WIRE_SLOPE_LEASE_RET,
		.addr = dsmem_slope_lease_base(lease),
	};
	u32 resp = DSMEM_SLOPE_ADDR_NODE(req.addr);
	struct dsmem_wire_msg reply;
	struct dsmem_conn *conn;
	int ret;

	if (resp == s->node->id)
		return dsmem_slope_share_put(s, lease, resp);
	conn = dsmem_conn_lookup(s->node, resp);
	if (!conn)
		return -ENOTCONN;
	ret = dsmem_msg_call(conn, &req, &reply, NULL, 0);
	dsmem_conn_put(conn);
	return ret;
}

/* Extents per message of a SLOPE_FREE */
#define DSMEM_SLOPE_FREE_BATCH						\
	(DSMEM_WIRE_MAX_DATA / sizeof(struct dsmem_wire_slope_extent))

static int dsmem_slope_free_send(struct dsmem_slope *s, u32 to, bool relayed,
				 struct dsmem_wire_slope_extent *w, u32 n)
{
	struct dsmem_wire_msg req = {
		.opcode = DSMEM_WIRE_SLOPE_FREE,
		.aux = relayed,
		.len = n * sizeof(*w),
		.data = w,
	};
	struct dsmem_wire_msg reply;
	struct dsmem_conn *conn;
	int ret;

	conn = dsmem_conn_lookup(s->node, to);
	if (!conn)
		return -ENOTCONN;
	ret = dsmem_msg_call(conn, &req, &reply, NULL, 0);
	dsmem_conn_put(conn);
	return ret;
}

/* What a release has to tell other nodes, sent once lease_lock is free. */
struct dsmem_slope_outbox {
	struct dsmem_wire_slope_extent *ext;
	u32 *to;			/* per extent: the node it goes to */
	bool *holder;			/* ... as a relay to the holder */
	u32 n, max;
	u32 returns[DSMEM_SLOPE_LEASES_PER_NODE];	/* leases emptied */
	u32 nreturns;
};

/*
 * Under lease_lock: clear addresses of a lease we hold.  An emptied
 * lease is to go back to the node responsible for it (marked returning,
 * so nothing is allocated in it meanwhile), unless it is the last one we
 * hold: the next allocation would only ask for one again.
 */
static void dsmem_slope_lease_clear(struct dsmem_slope *s, u32 lease,
				    u64 a, u64 len, struct dsmem_slope_outbox *o)
{
	struct dsmem_slope_lease *l = xa_load(&s->held, lease), *it;
	unsigned long pos = (a - dsmem_slope_lease_base(lease)) >> PAGE_SHIFT;
	unsigned long n = len >> PAGE_SHIFT, i, held = 0, set = 0, bit;

	/* only what was in use leaves the count: a lease still backing an
	 * object is never emptied by a free of addresses around it
	 */
	for (bit = find_next_bit(l->used, pos + n, pos); bit < pos + n;
	     bit = find_next_bit(l->used, pos + n, bit + 1))
		set++;
	bitmap_clear(l->used, pos, n);
	l->nused -= min_t(u64, l->nused, set);
	if (l->nused || l->returning ||
	    o->nreturns == ARRAY_SIZE(o->returns))
		return;
	xa_for_each(&s->held, i, it)
		held += !it->returning;
	if (held < 2)
		return;
	l->returning = true;
	o->returns[o->nreturns++] = lease;
}

/*
 * Give back addresses: bits of leases we hold are cleared (a lease left
 * empty goes back to the node responsible for it); addresses of leases
 * we do not hold are freed at their holder -- directly, or through the
 * node responsible for the lease, which knows its holder (marked
 * relayed, so that it goes no further).  Addresses that cannot reach
 * their holder (a peer down) stay allocated there: a leak of address
 * space, never a reuse.  What other nodes are to be told is collected
 * here, under lease_lock, and sent by dsmem_slope_outbox_send() with no
 * lock of ours held: a peer's reply may take a message timeout.  NULL
 * when there is nothing to tell, or no memory to say it (the addresses
 * then stay allocated at their holder, as for a peer down).
 */
static struct dsmem_slope_outbox *
dsmem_slope_release(struct dsmem_slope *s, const struct dsmem_slope_extent *e,
		    u32 n, bool relayed)
{
	struct dsmem_slope_outbox *o = kzalloc(sizeof(*o), GFP_KERNEL);
	u32 i;

	if (!o)
		return NULL;
	for (i = 0; i < n; i++)
		o->max += e[i].len / DSMEM_SLOPE_LEASE_SIZE + 2;
	o->ext = kvmalloc_array(o->max, sizeof(*o->ext), GFP_KERNEL);
	o->to = kvmalloc_array(o->max, sizeof(*o->to), GFP_KERNEL);
	o->holder = kvmalloc_array(o->max, sizeof(*o->holder), GFP_KERNEL);
	if (!o->ext || !o->to || !o->holder) {
		dsmem_slope_outbox_free(o);
		return NULL;
	}

	mutex_lock(&s->lease_lock);
	for (i = 0; i < n; i++) {
		u64 a = e[i].addr, end = a + e[i].len;

		/* one lease at a time: a caller's extent may span two */
		while (a < end) {
			u32 lease = dsmem_slope_lease_of(a);
			u64 stop = min(end, dsmem_slope_lease_base(lease + 1));
			u32 dest = DSMEM_SLOPE_ADDR_NODE(a);
			bool holder = false;

			if (xa_load(&s->held, lease)) {
				dsmem_slope_lease_clear(s, lease, a, stop - a, o);
				a = stop;
				continue;
			}
			if (dest == s->node->id) {
				dest = dsmem_slope_share_holder(s, lease);
				holder = true;
			}
			/* a relayed free for a lease we no longer hold, or
			 * one nobody holds: nothing to give back
			 */
			if (!relayed && dest && dest != s->node->id &&
			    o->n < o->max) {
				o->ext[o->n].addr = cpu_to_le64(a);
				o->ext[o->n].len = cpu_to_le64(stop - a);
				o->to[o->n] = dest;
				o->holder[o->n] = holder;
				o->n++;
			}
			a = stop;
		}
	}
	mutex_unlock(&s->lease_lock);
	return o;
}

void dsmem_slope_outbox_free(struct dsmem_slope_outbox *o)
{
	if (!o)
		return;
	kvfree(o->holder);
	kvfree(o->to);
	kvfree(o->ext);
	kfree(o);
}

/* Tell the other nodes what a release collected, then free it; o may be NULL. */
void dsmem_slope_outbox_send(struct dsmem_slope *s, struct dsmem_slope_outbox *o)
{
	u32 i, j, start;

	if (!o)
		return;
	/* runs of one destination, a message per batch */
	for (start = 0; start < o->n; start = j) {
		for (j = start + 1; j < o->n && j - start < DSMEM_SLOPE_FREE_BATCH &&
		     o->to[j] == o->to[start] && o->holder[j] == o->holder[start]; j++)
			;
		dsmem_slope_free_send(s, o->to[start], o->holder[start],
				      &o->ext[start], j - start);
	}
	for (i = 0; i < o->nreturns; i++) {
		u32 lease = o->returns[i];
		int ret = dsmem_slope_lease_return(s, lease);
		struct dsmem_slope_lease *l;

		mutex_lock(&s->lease_lock);
		l = xa_load(&s->held, lease);
		/* on failure we keep holding it, empty: nothing is lost */
		if (ret || !l || l->nused) {
			if (l)
				l->returning = false;
			l = NULL;
		} else {
			xa_erase(&s->held, lease);
		}
		mutex_unlock(&s->lease_lock);
		if (l) {
			kvfree(l->used);
			kfree(l);
		}
	}
	dsmem_slope_outbox_free(o);
}

/*
 * Under alloc_lock: the bookkeeping of a release; what other nodes are to
 * be told the caller sends once it has let alloc_lock go
 * (dsmem_slope_outbox_send).
 */
struct dsmem_slope_outbox *
dsmem_slope_lease_release(struct dsmem_slope *s,
			  const struct dsmem_slope_extent *e, u32 n)
{
	lockdep_assert_held(&s->alloc_lock);
	return dsmem_slope_release(s, e, n, false);
}

/*
 * Whether a peer may free these addresses: none of them backs an object
 * this node holds (a page here that was not handed over).  Freed, such
 * an address would be handed out again while our object still uses it.
 * Which other node owns an address no node knows, so a peer's free of
 * another peer's object cannot be told from its own.
 */
static bool dsmem_slope_free_allowed(struct dsmem_slope *s,
				     const struct dsmem_slope_extent *e, u32 n)
{
	XA_STATE(xas, &s->pages, 0);
	bool ok = true;
	void *entry;
	u32 i;

	rcu_read_lock();
	for (i = 0; i < n && ok; i++) {
		pgoff_t first = dsmem_slope_idx(e[i].addr);
		pgoff_t last = first + (e[i].len >> PAGE_SHIFT) - 1;

		xas_set(&xas, first);
		xas_for_each(&xas, entry, last) {
			if (xas_retry(&xas, entry))
				continue;
			if (!xas_get_mark(&xas, DSMEM_SLOPE_GONE)) {
				ok = false;
				break;
			}
		}
	}
	rcu_read_unlock();
	return ok;
}

/*
 * Whether every address of these that lies in a lease this node holds is
 * in use there: a peer frees, or migrates here, what was allocated,
 * nothing else.  A free of unallocated addresses would count a lease
 * empty while objects still live in it, and the lease, given back, would
 * hand their addresses out again; an object placed at them would be
 * handed out again by this node's own allocator.
 */
bool dsmem_slope_extents_in_use(struct dsmem_slope *s,
				const struct dsmem_slope_extent *e, u32 n)
{
	bool ok = true;
	u32 i;

	mutex_lock(&s->lease_lock);
	for (i = 0; i < n && ok; i++) {
		u64 a = e[i].addr, end = a + e[i].len;

		while (a < end && ok) {
			u32 lease = dsmem_slope_lease_of(a);
			u64 base = dsmem_slope_lease_base(lease);
			u64 stop = min(end, dsmem_slope_lease_base(lease + 1));
			struct dsmem_slope_lease *l = xa_load(&s->held, lease);
			unsigned long pos = (a - base) >> PAGE_SHIFT;
			unsigned long last = (stop - base) >> PAGE_SHIFT;

			if (l && find_next_zero_bit(l->used, last, pos) < last)
				ok = false;
			a = stop;
		}
	}
	mutex_unlock(&s->lease_lock);
	return ok;
}

/*
 * Whether every address of these that lies in this node's share lies in
 * a lease of it that is given out (to this node or to a peer): nobody
 * allocated in a lease that is not, so no object lives there.
 */
bool dsmem_slope_extents_given_out(struct dsmem_slope *s,
				   const struct dsmem_slope_extent *e, u32 n)
{
	int first = dsmem_slope_share_first(s);
	bool ok = true;
	u32 i;

	if (first < 0)
		return true;
	mutex_lock(&s->share_lock);
	for (i = 0; i < n && ok; i++) {
		u32 lease = dsmem_slope_lease_of(e[i].addr);
		u32 last = dsmem_slope_lease_of(e[i].addr + e[i].len - 1);

		for (; lease <= last && ok; lease++)
			if (lease >= first && lease < first + DSMEM_SLOPE_LEASES_PER_NODE &&
			    !s->holder[lease - first])
				ok = false;
	}
	mutex_unlock(&s->share_lock);
	return ok;
}

/*
 * A relayed free comes from the node responsible for the lease, which
 * knows its holder; nobody else may say it relays.
 */
static bool dsmem_slope_relay_allowed(u32 from,
				      const struct dsmem_slope_extent *e, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (DSMEM_SLOPE_ADDR_NODE(e[i].addr) != from ||
		    DSMEM_SLOPE_ADDR_NODE(e[i].addr + e[i].len - 1) != from)
			return false;
	return true;
}

int dsmem_slope_on_lease_req(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	u32 from = conn->remote_node, lease;
	int ret;

	ret = dsmem_slope_share_take(s, from, &lease);
	if (!ret)
		reply->addr = dsmem_slope_lease_base(lease);
	if (ret == -EDQUOT) {
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_LEASE_DENIED);
		pr_notice_ratelimited("node %u: node %u holds %u leases of this node's share, refusing another\n",
				      s->node->id, from,
				      READ_ONCE(slope_leases_per_peer));
	}
	return ret;
}

int dsmem_slope_on_lease_ret(struct dsmem_conn *conn, void *priv,
			     const struct dsmem_wire_msg *m,
			     struct dsmem_wire_msg *reply, void **data)
{
	if (m->addr < DSMEM_SLOPE_BASE ||
	    m->addr - DSMEM_SLOPE_BASE >= DSMEM_SLOPE_SIZE)
		return -ERANGE;
	return dsmem_slope_share_put(priv, dsmem_slope_lease_of(m->addr),
				     conn->remote_node);
}

int dsmem_slope_on_lease_count(struct dsmem_conn *conn, void *priv,
			       const struct dsmem_wire_msg *m,
			       struct dsmem_wire_msg *reply, void **data)
{
	struct dsmem_slope *s = priv;
	u32 from = conn->remote_node;

	if (from && from <= DSMEM_SLOPE_NODES_MAX)
		WRITE_ONCE(s->peer_free[from],
			   min_t(u64, m->aux, DSMEM_SLOPE_LEASES_PER_NODE));
	return DSMEM_MSG_NO_REPLY;
}

int dsmem_slope_on_free(struct dsmem_conn *conn, void *priv,
			const struct dsmem_wire_msg *m,
			struct dsmem_wire_msg *reply, void **data)
{
	const struct dsmem_wire_slope_extent *w = m->data;
	struct dsmem_slope *s = priv;
	u32 from = conn->remote_node, i, n;
	struct dsmem_slope_extent *e;
	int ret;

	if (m->len % sizeof(*w) || m->aux > 1)
		return -EINVAL;
	n = m->len / sizeof(*w);
	e = kmalloc_array(n, sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		e[i].addr = le64_to_cpu(w[i].addr);
		e[i].len = le64_to_cpu(w[i].len);
	}
	ret = dsmem_slope_extents_check(e, n, PAGE_SHIFT,
					DSMEM_SLOPE_SIZE >> PAGE_SHIFT,
					&(u64){ 0 });
	if (!ret && ((m->aux && !dsmem_slope_relay_allowed(from, e, n)) ||
		     !dsmem_slope_free_allowed(s, e, n) ||
		     !dsmem_slope_extents_in_use(s, e, n))) {
		dsmem_stat_inc(s->node->net, DSMEM_STAT_SLOPE_FREE_DENIED);
		pr_notice_ratelimited("node %u: node %u frees Slope addresses it cannot own, refusing\n",
				      s->node->id, from);
		ret = -EACCES;
	}
	/* lease_lock only: never a lock an ioctl waits for us under */
	if (!ret)
		dsmem_slope_outbox_send(s, dsmem_slope_release(s, e, n, m->aux));
	kfree(e);
	return ret;
}

void dsmem_slope_announce_work(struct work_struct *work)
{
	struct dsmem_slope *s = container_of(to_delayed_work(work),
					     struct dsmem_slope, announce_work);
	struct dsmem_wire_msg m = {
		.opcode = DSMEM_WIRE_SLOPE_LEASE_COUNT,
		.aux = dsmem_slope_free_leases(s),
	};
	struct dsmem_node *node = s->node;
	struct dsmem_peer *peer;
	unsigned long i;

	rcu_read_lock();
	xa_for_each(&node->peers, i, peer) {
		struct dsmem_conn *conn = NULL;

		spin_lock_bh(&peer->lock);
		if (peer->conn && READ_ONCE(peer->conn->state) == DSMEM_CONN_UP &&
		    kref_get_unless_zero(&peer->conn->ref))
			conn = peer->conn;
		spin_unlock_bh(&peer->lock);
		if (!conn)
			continue;
		rcu_read_unlock();
		dsmem_msg_send(conn, &m);
		dsmem_conn_put(conn);
		rcu_read_lock();
	}
	rcu_read_unlock();
	queue_delayed_work(dsmem_wq, &s->announce_work,
			   msecs_to_jiffies(max(slope_announce_ms, 10U)));
}

void dsmem_slope_lease_init(struct dsmem_slope *s)
{
	queue_delayed_work(dsmem_wq, &s->announce_work,
			   msecs_to_jiffies(max(slope_announce_ms, 10U)));
}

void dsmem_slope_lease_fini(struct dsmem_slope *s)
{
	struct dsmem_slope_lease *l;
	unsigned long i;

	xa_for_each(&s->held, i, l) {
		kvfree(l->used);
		kfree(l);
	}
	xa_destroy(&s->held);
}
