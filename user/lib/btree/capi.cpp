// SPDX-License-Identifier: BSD-2-Clause
// The B+tree's C ABI (DSUSER_1.4).
#include "tree.hpp"

#include <endian.h>

#include <new>
#include <string>
#include <thread>
#include <vector>

#include "../ds_internal.hpp"

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

using namespace dsmem::btree;

namespace {

bool valid_opts(const ds_btree_create_opts &o)
{
	uint32_t ns = o.node_size;

	if (o.layout > DS_BTREE_SEED || o.key_max > DS_BTREE_KEY_MAX ||
	    o.replicas > DS_BTREE_REPLICAS_MAX || o.reserved0 ||
	    (o.replicas > 1 && o.layout != DS_BTREE_GENERAL))
		return false;
	for (uint64_t r : o.reserved)
		if (r)
			return false;
	if (ns < DS_BTREE_NODE_MIN || ns > DS_BTREE_NODE_MAX || (ns & (ns - 1)))
		return false;
	if (o.key_max && !vnode_fits(ns, o.key_max))
		return false;
	return o.value_size >= 8 && o.value_size <= DS_BTREE_VALUE_MAX;
}

// Every segment node_id's peers grant it.
int remote_segs(uint32_t node_id, std::vector<ds_remote_seg> *out)
{
	ds_ctx *ctx = nullptr;
	ds_peer_info *peers = nullptr;
	size_t npeers = 0;
	int ret = ds_ctx_open(&ctx);

	if (ret)
		return ret;
	ret = ds_peer_list(ctx, node_id, &peers, &npeers);
	ds_ctx_close(ctx);
	if (ret)
		return ret;
	for (size_t p = 0; p < npeers; p++)
		out->insert(out->end(), peers[p].rsegs, peers[p].rsegs + peers[p].nrsegs);
	free(peers);
	return 0;
}

// The size of each segment as the compute node was granted it; -EACCES
// when one is not granted to node_id read-write.
int granted_sizes(uint32_t node_id, const uint64_t *segs, size_t n, uint64_t *sizes)
{
	std::vector<ds_remote_seg> rsegs;
	int ret = remote_segs(node_id, &rsegs);

	for (size_t i = 0; i < n && !ret; i++) {
		sizes[i] = 0;
		for (const ds_remote_seg &r : rsegs) {
			if (r.addr != segs[i])
				continue;
			if ((r.perm & DS_PERM_ALL) != DS_PERM_ALL || !r.keys)
				ret = -EACCES;
			sizes[i] = r.size;
			break;
		}
		if (!sizes[i])
			ret = -EACCES;
	}
	return ret;
}

// The segment that names a replicated tree is lost: its superblock's copy
// on another member of group 0, among the segments granted to node_id.
int open_elsewhere(uint32_t node_id, uint64_t addr, const ds_btree_open_opts &o, ds_btree **tp)
{
	std::vector<ds_remote_seg> rsegs;

	if (int ret = remote_segs(node_id, &rsegs))
		return ret;
	for (const ds_remote_seg &r : rsegs) {
		if (r.addr == addr || (r.perm & DS_PERM_ALL) != DS_PERM_ALL)
			continue;
		auto *t = new (std::nothrow) ds_btree(node_id, addr);
		if (!t)
			return -ENOMEM;
		if (!t->t.open(o, r.addr)) {
			*tp = t;
			return 0;
		}
		delete t;
	}
	return -EHOSTDOWN;
}

// Claim offset 0 of each of group 0's members (where the superblock's
// copies go): from here on a concurrent create sees -EBUSY.
int claim_group0(ds_xfer *x, const uint64_t *segs, uint32_t r)
{
	uint64_t old = 0;

	for (uint32_t m = 0; m < r; m++) {
		int ret = ds_cas(x, segs[m], 0, sb_creating, &old);
		if (!ret && old)
			ret = old == sb_creating ? -EBUSY : -EEXIST;
		if (ret) {
			while (m--)
				(void)ds_cas(x, segs[m], sb_creating, 0, &old);
			return ret;
		}
	}
	return 0;
}

}  // namespace

DS_EXPORT int ds_btree_create(uint32_t node_id, const uint64_t *segs, size_t n,
			      const struct ds_btree_create_opts *opts, uint64_t *addr)
{
	ds_btree_create_opts o = opts ? *opts : ds_btree_create_opts{};
	uint64_t sizes[DS_BTREE_SEGS_MAX * DS_BTREE_REPLICAS_MAX];
	ds_xfer *x = nullptr;
	uint64_t old = 0;
	uint32_t r, groups;
	int ret;

	if (!o.node_size)
		o.node_size = DS_BTREE_NODE_DEFAULT;
	if (!o.value_size)
		o.value_size = 8;
	if (!segs || !n || !addr || !valid_opts(o))
		return -EINVAL;
	r = std::max(o.replicas, 1u);
	groups = static_cast<uint32_t>(n / r);
	if (n % r || groups > DS_BTREE_SEGS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (DSMEM_GADDR_OFF(segs[i]) || !DSMEM_GADDR_NODE(segs[i]))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (segs[j] == segs[i])
				return -EINVAL;
		// a group's members on as many memory nodes, or one loss
		// takes two
		for (size_t j = i - i % r; j < i; j++)
			if (DSMEM_GADDR_NODE(segs[j]) == DSMEM_GADDR_NODE(segs[i]))
				return -EINVAL;
	}
	if ((ret = granted_sizes(node_id, segs, n, sizes)))
		return ret;
	for (size_t i = 0; i < n; i++) {
		uint64_t need = o.layout == DS_BTREE_SEED ? DS_BTREE_SEED_SEG_MIN :
			data_off + chunk_bytes;
		if (sizes[i] < need)
			return -ENOSPC;
	}
	if ((ret = ds_xfer_open(node_id, &x)))
		return ret;
	if ((ret = claim_group0(x, segs, r)))
		goto out;
	{
		auto sbk = std::make_unique<superblock>();
		auto img = std::make_unique<uint8_t[]>(o.node_size);
		uint64_t root_addr = data_off;	// in group 0, on each member

		// integer keys on one copy keep format 1, which older
		// libraries open
		sbk->features = (o.key_max ? feature_bytes_keys : 0) |
				(r > 1 ? feature_replicas : 0);
		sbk->format = sbk->features ? format_features : format_version;
		sbk->key_max = o.key_max;
		sbk->layout = o.layout;
		sbk->node_size = o.node_size;
		sbk->value_size = o.value_size;
		sbk->nsegs = groups;
		sbk->root = segs[0] + root_addr;
		sbk->node_ids = 1;
		sbk->replicas = r > 1 ? r : 0;
		for (uint32_t g = 0; g < groups; g++) {
			sbk->segs[g] = segs[g * r];
			sbk->seg_size[g] = sizes[g * r];
			for (uint32_t m = 0; m < r; m++) {
				if (r > 1)
					sbk->members[g][m] = segs[g * r + m];
				sbk->seg_size[g] = std::min(sbk->seg_size[g], sizes[g * r + m]);
			}
		}
		for (size_t i = 0; i < n; i++) {
			seg_header h = {};

			// the root leaf takes the first slot of group 0 (the
			// seed's root region starts there too)
			if (!i && o.layout == DS_BTREE_SEED)
				h.region_cursor[region_root] = o.node_size;
			else if (i < r)
				h.cursor = o.node_size;
			if ((ret = ds_write(x, segs[i] + seg_hdr_off, &h, sizeof(h))))
				goto undo;
		}
		std::memset(img.get(), 0, o.node_size);
		if (o.key_max) {
			vnode_view root(img.get(), o.node_size);
			kind<vnode_view>::init(root, 0, o.key_max, true, kind<vnode_view>::lowest(),
					       true, kind<vnode_view>::lowest());
			root.hdr().version = 1;
			root.seal();
		} else {
			node_view root(img.get(), o.node_size);
			root.init(0, true, 0, true, 0);
			root.hdr().version = 1;
			root.seal();
		}
		for (uint32_t m = 0; m < r; m++) {
			if ((ret = ds_write(x, segs[m] + root_addr, img.get(), o.node_size)))
				goto undo;
			// everything but the magic, then the magic: RC keeps
			// the order
			if ((ret = ds_write(x, segs[m] + 8,
					    reinterpret_cast<uint8_t *>(sbk.get()) + 8,
					    sizeof(superblock) - 8)))
				goto undo;
		}
		// the first copy last: it names the tree, and opens look there
		for (uint32_t m = r; m-- > 0;)
			if ((ret = ds_write(x, segs[m], &sb_magic, 8)))
				goto undo;
	}
	*addr = segs[0];
	goto out;

undo:
	for (uint32_t m = 0; m < r; m++) {
		if (ds_cas(x, segs[m], sb_creating, 0, &old) || old != sb_creating)
			(void)ds_cas(x, segs[m], sb_magic, 0, &old);
	}
out:
	ds_xfer_close(x);
	return ret;
}

DS_EXPORT int ds_btree_open(uint32_t node_id, uint64_t addr,
			    const struct ds_btree_open_opts *opts, struct ds_btree **tp)
{
	ds_btree_open_opts o = opts ? *opts : ds_btree_open_opts{};

	if (!tp || DSMEM_GADDR_OFF(addr) || !DSMEM_GADDR_NODE(addr) ||
	    (o.flags & ~DS_BTREE_NO_CACHE) || o.read_timeout_ms > read_timeout_max_ms ||
	    o.reserved0 ||
	    (o.lock_lease_ms && (o.lock_lease_ms < lease_min_ms || o.lock_lease_ms > lease_max_ms)))
		return -EINVAL;
	for (uint64_t r : o.reserved)
		if (r)
			return -EINVAL;
	auto *t = new (std::nothrow) ds_btree(node_id, addr);
	if (!t)
		return -ENOMEM;
	int ret = t->t.open(o, addr);
	if (ret) {
		delete t;
		// a replicated tree whose first segment is lost: a copy
		if (ret != -ENOTCONN && ret != -EHOSTDOWN && ret != -ETIMEDOUT && ret != -ETIME)
			return ret;
		// (none found: the error as it was)
		if (open_elsewhere(node_id, addr, o, &t))
			return ret;
	}
	*tp = t;
	return 0;
}

DS_EXPORT void ds_btree_close(struct ds_btree *t)
{
	delete t;
}

DS_EXPORT int ds_btree_drop(uint32_t node_id, uint64_t addr)
{
	superblock before, after;
	ds_xfer *x = nullptr;
	uint64_t old = 0;
	int ret;

	if (DSMEM_GADDR_OFF(addr) || !DSMEM_GADDR_NODE(addr))
		return -EINVAL;
	if ((ret = ds_xfer_open(node_id, &x)))
		return ret;
	if ((ret = ds_read(x, addr, &before, sizeof(before))))
		goto out;
	if (before.magic != sb_magic) {
		ret = -ENOENT;
		goto out;
	}
	{
		// a client whose slot still moves within twice its lease has
		// the tree open
		uint32_t wait_ms = 0;
		for (const auto &c : before.clients)
			if (c.word)
				wait_ms = std::max(wait_ms, 2 * std::max(slot_lease(c.word), lease_min_ms));
		if (wait_ms) {
			std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
			if ((ret = ds_read(x, addr, &after, sizeof(after))))
				goto out;
			for (uint32_t i = 0; i < clients_max; i++) {
				if (after.clients[i].word &&
				    after.clients[i].word != before.clients[i].word) {
					ret = -EBUSY;
					goto out;
				}
			}
		}
	}
	ret = ds_cas(x, addr, sb_magic, 0, &old);
	if (!ret && old != sb_magic)
		ret = -ENOENT;
	// the copies on the other members of group 0, those still there
	for (uint32_t m = 1; !ret && (before.features & feature_replicas) &&
			     m < std::min(before.replicas, uint32_t{DS_BTREE_REPLICAS_MAX}); m++)
		(void)ds_cas(x, before.members[0][m], sb_magic, 0, &old);
out:
	ds_xfer_close(x);
	return ret;
}

#define WITH_SESSION(t, expr)						\
	do {								\
		if (!(t))						\
			return -EINVAL;					\
		session_ref ref(&(t)->t);				\
		if (!ref.get())						\
			return ref.error();				\
		session &s = *ref.get();				\
		return (expr);						\
	} while (0)

// The integer-key calls: on an integer-key tree only.
#define WITH_U64_SESSION(t, expr)					\
	do {								\
		if ((t) && (t)->t.bytes_keys())				\
			return -EINVAL;					\
		WITH_SESSION(t, expr);					\
	} while (0)

DS_EXPORT int ds_btree_get(struct ds_btree *t, uint64_t key, void *val,
			   size_t len, size_t *vlen)
{
	WITH_U64_SESSION(t, t->t.get<node_view>(s, key, val, len, vlen));
}

DS_EXPORT int ds_btree_put(struct ds_btree *t, uint64_t key, const void *val,
			   size_t len)
{
	WITH_U64_SESSION(t, t->t.put<node_view>(s, key, val, len));
}

DS_EXPORT int ds_btree_del(struct ds_btree *t, uint64_t key)
{
	WITH_U64_SESSION(t, t->t.del<node_view>(s, key));
}

DS_EXPORT int ds_btree_scan(struct ds_btree *t, uint64_t start, size_t limit,
			    uint64_t *keys, void *vals, size_t *n)
{
	if (!n)
		return -EINVAL;
	*n = 0;
	WITH_U64_SESSION(t, t->t.scan<node_view>(s, start, limit, keys, vals, n));
}

namespace {

// A byte-string key as the tree takes it: an integer-key tree takes 8
// bytes, big-endian (their order is the integers').
int key_arg(const ds_btree *t, const void *key, size_t klen, bool empty_ok)
{
	if (!t || (!key && klen))
		return -EINVAL;
	if (!klen)
		return empty_ok ? 0 : -EINVAL;
	if (!t->t.bytes_keys())
		return klen == 8 ? 0 : -EINVAL;
	return klen > t->t.key_max() ? -EMSGSIZE : 0;
}

uint64_t u64_of(const void *key)
{
	uint64_t be;

	std::memcpy(&be, key, 8);
	return be64toh(be);
}

kref kref_of(const void *key, size_t klen)
{
	return kref(static_cast<const uint8_t *>(key), static_cast<uint32_t>(klen));
}

}  // namespace

DS_EXPORT int ds_btree_kget(struct ds_btree *t, const void *key, size_t klen, void *val,
			    size_t len, size_t *vlen)
{
	if (int ret = key_arg(t, key, klen, false))
		return ret;
	if (!t->t.bytes_keys())
		WITH_SESSION(t, t->t.get<node_view>(s, u64_of(key), val, len, vlen));
	WITH_SESSION(t, t->t.get<vnode_view>(s, kref_of(key, klen), val, len, vlen));
}

DS_EXPORT int ds_btree_kput(struct ds_btree *t, const void *key, size_t klen,
			    const void *val, size_t len)
{
	if (int ret = key_arg(t, key, klen, false))
		return ret;
	if (!t->t.bytes_keys())
		WITH_SESSION(t, t->t.put<node_view>(s, u64_of(key), val, len));
	WITH_SESSION(t, t->t.put<vnode_view>(s, kref_of(key, klen), val, len));
}

DS_EXPORT int ds_btree_kdel(struct ds_btree *t, const void *key, size_t klen)
{
	if (int ret = key_arg(t, key, klen, false))
		return ret;
	if (!t->t.bytes_keys())
		WITH_SESSION(t, t->t.del<node_view>(s, u64_of(key)));
	WITH_SESSION(t, t->t.del<vnode_view>(s, kref_of(key, klen)));
}

DS_EXPORT int ds_btree_kscan(struct ds_btree *t, const void *start, size_t slen,
			     size_t limit, struct ds_btree_key *keys, void *vals, size_t *n)
{
	if (!n)
		return -EINVAL;
	*n = 0;
	if (int ret = key_arg(t, start, slen, true))
		return ret;
	if (!keys || !limit || limit > DS_BTREE_SCAN_MAX)
		return -EINVAL;
	session_ref ref(&t->t);
	if (!ref.get())
		return ref.error();
	session &s = *ref.get();
	int ret;
	if (!t->t.bytes_keys()) {
		std::vector<uint64_t> ks(limit);
		ret = t->t.scan<node_view>(s, slen ? u64_of(start) : 0, limit, ks.data(), vals, n);
		for (size_t i = 0; !ret && i < *n; i++) {
			uint64_t be = htobe64(ks[i]);
			keys[i].len = 8;
			std::memcpy(keys[i].bytes, &be, 8);
		}
		return ret;
	}
	std::vector<std::string> ks(limit);
	ret = t->t.scan<vnode_view>(s, slen ? kref_of(start, slen) : kind<vnode_view>::lowest(),
				    limit, ks.data(), vals, n);
	for (size_t i = 0; !ret && i < *n; i++) {
		keys[i].len = static_cast<uint8_t>(ks[i].size());
		std::memcpy(keys[i].bytes, ks[i].data(), ks[i].size());
	}
	return ret;
}

DS_EXPORT uint32_t ds_btree_key_max(const struct ds_btree *t)
{
	return t ? t->t.key_max() : 0;
}

DS_EXPORT uint32_t ds_btree_node_size_min(uint32_t key_max)
{
	if (!key_max || key_max > DS_BTREE_KEY_MAX)
		return 0;
	return vnode_min_size(key_max);
}

DS_EXPORT int ds_btree_describe(struct ds_btree *t, struct ds_btree_info *info)
{
	if (!info)
		return -EINVAL;
	WITH_SESSION(t, t->t.info(s, info));
}

DS_EXPORT uint32_t ds_btree_value_size(const struct ds_btree *t)
{
	return t ? t->t.value_size() : 0;
}

DS_EXPORT int ds_btree_stats_get(struct ds_btree *t, struct ds_btree_stats *st)
{
	if (!t || !st)
		return -EINVAL;
	t->t.sum(st);
	return 0;
}

DS_EXPORT void ds_btree_stats_reset(struct ds_btree *t)
{
	if (t)
		t->t.reset_stats();
}

DS_EXPORT int ds_btree_probe(struct ds_btree *t, uint64_t n, uint64_t *ns)
{
	if (!ns)
		return -EINVAL;
	WITH_SESSION(t, t->t.probe(s, n, ns));
}

DS_EXPORT int ds_btree_members(struct ds_btree *t, struct ds_btree_member *m, size_t n,
			       size_t *count)
{
	if (!count || (!m && n))
		return -EINVAL;
	WITH_SESSION(t, t->t.members(s, m, n, count));
}

DS_EXPORT int ds_btree_verify(struct ds_btree *t, struct ds_btree_verify_report *r)
{
	if (!r)
		return -EINVAL;
	*r = {};
	if (t && t->t.bytes_keys())
		WITH_SESSION(t, t->t.verify<vnode_view>(s, r));
	WITH_SESSION(t, t->t.verify<node_view>(s, r));
}

DS_EXPORT int ds_btree_spare_add(struct ds_btree *t, uint64_t seg)
{
	uint64_t size = 0;

	if (!t || DSMEM_GADDR_OFF(seg) || !DSMEM_GADDR_NODE(seg))
		return -EINVAL;
	if (int ret = granted_sizes(t->t.node_id_, &seg, 1, &size))
		return ret;
	WITH_SESSION(t, t->t.spare_add(s, seg, size));
}
