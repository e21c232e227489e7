// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two guests joined by a datagram link: each sees its own rxe0 on its own
 * NIC, and the two devices are distinct.  Runs in both guests at once.
 * Guest 1 also plays a rogue peer (rogue.c) where a case needs another
 * host's address.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "rogue.h"
#include "store_proc.h"
#include "util.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Both devices, each on its own NIC and network, reach the other guest. */
TEST(each_guest_sees_its_own_rxes)
{
	static const char *const devs[] = { "rxe0", "rxe1" };
	static const char *const netdevs[] = { "DSMEM_NETDEV", "DSMEM_NETDEV2" };
	static const char *const peers[] = { "DSMEM_PEER_ADDR", "DSMEM_PEER_ADDR2" };
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	int id = atoi(env_or_die("DSMEM_GUEST_ID"));
	char mine[256], theirs[256], buf[64];
	struct ds_dev_info d[2];
	struct ds_ctx *ctx;
	FILE *f;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, ds_dev_get(ctx, devs[i], &d[i])) TH_LOG("%s", ds_ctx_errmsg(ctx));
		EXPECT_STREQ(env_or_die(netdevs[i]), d[i].ports[0].netdev);
		EXPECT_EQ(4, d[i].ports[0].state);
		/* the peer answers over the link the RDMA traffic will use */
		EXPECT_EQ(0, run("ping -c 1 -W 5 %s >/dev/null", env_or_die(peers[i])));
	}
	ds_ctx_close(ctx);
	EXPECT_NE(d[0].node_guid, d[1].node_guid);

	/* publish our GUID on the shared run directory, read the peer's */
	snprintf(mine, sizeof(mine), "%s/guid.%d", dir, id);
	snprintf(theirs, sizeof(theirs), "%s/guid.%d", dir, !id);
	f = fopen(mine, "we");
	ASSERT_NE(NULL, f);
	fprintf(f, "%" PRIx64 "\n", d[0].node_guid);
	fclose(f);
	for (int i = 0; i < 300 && read_file(theirs, buf, sizeof(buf)); i++)
		usleep(100000);
	ASSERT_EQ(0, read_file(theirs, buf, sizeof(buf))) TH_LOG("peer never published");
	EXPECT_NE(d[0].node_guid, strtoull(buf, NULL, 16)) TH_LOG("both guests see one device");
}

/* Wait (tenths of seconds) for the other guest to publish a file; its
 * text in buf. */
static int await_file_for(const char *dir, const char *name, char *buf, size_t n, int tenths)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < tenths; i++) {
		if (!read_file(path, buf, n))
			return 0;
		usleep(100000);
	}
	return -ETIMEDOUT;
}

/* ~30 s */
static int await_file(const char *dir, const char *name, char *buf, size_t n)
{
	return await_file_for(dir, name, buf, n, 300);
}

static void publish(const char *dir, const char *name, const char *text)
{
	char path[256], tmp[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	rename(tmp, path);
}

/*
 * One node per guest: node 2 (guest 1) grants a segment to node 1
 * (guest 0), which connects, writes, reads back and counts with FAA over
 * the wire between the guests; node 2 checks what landed.
 */
TEST(one_node_per_guest)
{
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	int id = atoi(env_or_die("DSMEM_GUEST_ID"));
	struct ds_ctx *ctx;
	struct ds_seg_info s;
	struct ds_peer_info p;
	struct ds_xfer *x;
	char buf[128], text[64];
	uint8_t out[65536], in[65536];
	uint32_t peer;
	uint64_t seg, old, v;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, test_node_add(ctx, id + 1, "rxe0", 7471));
	if (id == 1) {
		struct ds_peer_info *peers = NULL;
		uint64_t theirs = 0;
		size_t n;

		/* node 1 of the other guest is admitted, from its address only */
		ASSERT_EQ(0, ds_peer_add_id(ctx, 2, env_or_die("DSMEM_PEER_ADDR"), 0, 1,
					    DS_PEER_LISTEN, NULL));
		ASSERT_EQ(0, ds_seg_add(ctx, 2, 4 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
		ASSERT_EQ(0, ds_seg_grant(ctx, 2, s.id, 1, DSMEM_PERM_ALL));
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)s.addr);
		publish(dir, "seg", text);
		/* node 1 connects and grants us one of its segments in turn */
		for (int i = 0; i < 600 && !theirs; i++) {
			if (!ds_peer_list(ctx, 2, &peers, &n) && n == 1 &&
			    peers[0].state == DS_PEER_UP && peers[0].nrsegs == 1)
				theirs = peers[0].rsegs[0].addr;
			free(peers);
			peers = NULL;
			if (!theirs)
				usleep(50000);
		}
		ASSERT_NE(0, theirs);
		/* the passive end moves data too, both ways of reaching it */
		ASSERT_EQ(0, ds_xfer_open(2, &x));
		for (size_t i = 0; i < 4096; i++)
			out[i] = (uint8_t)(i ^ 0xa5);
		ASSERT_EQ(0, ds_write(x, theirs + 100, out, 4096));
		ASSERT_EQ(0, ds_read(x, theirs + 100, in, 4096));
		EXPECT_EQ(0, memcmp(out, in, 4096));
		ds_xfer_close(x);
		ASSERT_EQ(0, ds_rdm_write(ctx, 2, theirs + 8192, "from node 2", 12))
			TH_LOG("%s", ds_ctx_errmsg(ctx));
		ASSERT_EQ(0, ds_rdm_read(ctx, 2, theirs + 8192, buf, 12));
		EXPECT_STREQ("from node 2", buf);
		publish(dir, "checked", "1\n");
		ASSERT_EQ(0, await_file(dir, "done", buf, sizeof(buf)));
		goto out;
	}
	ASSERT_EQ(0, ds_seg_add(ctx, 1, 1 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
	ASSERT_EQ(0, ds_seg_grant(ctx, 1, s.id, 2, DSMEM_PERM_ALL));
	ASSERT_EQ(0, await_file(dir, "seg", buf, sizeof(buf)));
	seg = strtoull(buf, NULL, 10);
	ASSERT_EQ(0, ds_peer_add_id(ctx, 1, env_or_die("DSMEM_PEER_ADDR"), 7471, 2, 0, &peer));
	for (int i = 0; i < 600; i++) {
		if (!ds_peer_get(ctx, 1, peer, &p) && p.state == DS_PEER_UP &&
		    p.rseg_total == 1)
			break;
		usleep(50000);
	}
	ASSERT_EQ(DS_PEER_UP, p.state);
	ASSERT_EQ(2, p.remote_node);
	ASSERT_EQ(0, ds_xfer_open(1, &x));
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 3);
	ASSERT_EQ(0, ds_write(x, seg + 4096 + 5, out, sizeof(out)));
	ASSERT_EQ(0, ds_read(x, seg + 4096 + 5, in, sizeof(in)));
	EXPECT_EQ(0, memcmp(out, in, sizeof(in)));
	v = 0;
	ASSERT_EQ(0, ds_write(x, seg, &v, 8));
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(0, ds_faa(x, seg, 3, &old));
	ASSERT_EQ(0, ds_read(x, seg, &v, 8));
	EXPECT_EQ(300, v);
	EXPECT_EQ(-ERANGE, ds_read(x, seg + (4 << 20), in, 1));
	ds_xfer_close(x);
	publish(dir, "done", "1\n");
	/* keep the connection until node 2 has used it */
	ASSERT_EQ(0, await_file(dir, "checked", buf, sizeof(buf)));
out:
	ds_node_del(ctx, id + 1);
	ds_ctx_close(ctx);
}

/* ---- a node's own id, claimed from the other host ---- */

#define OWN_ID_PORT	7477

/*
 * Node 1 (guest 0) accepts any key holder.  From guest 1, a rogue with
 * the cluster's key claims node 1's own id: refused at connect time and
 * counted (conn_own_id), for that id comes only from node 1's own host;
 * from anywhere else it is node 1's own connect turned back at it, or a
 * member lying.  The same rogue claiming a free id gets in: the id is
 * refused, not the host.  One guest cannot act this out: every address
 * it has is its own.
 */
TEST(own_id_from_another_host_refused)
{
	static const char key[] = "dsmem test cluster key, 32 bytes";	/* test_key_add's */
	const struct rogue_auth keyed = { .flag = 1, .key = key, .key_len = sizeof(key) - 1 };
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	int id = atoi(env_or_die("DSMEM_GUEST_ID"));
	uint64_t own, ok;
	struct ds_ctx *ctx;
	struct rogue *r;
	char buf[64];
	int ret;

	if (id == 1) {
		ASSERT_EQ(0, await_file(dir, "ownid.ready", buf, sizeof(buf)));
		EXPECT_EQ(-ECONNREFUSED, rogue_connect_auth(&r, env_or_die("DSMEM_PEER_ADDR"),
							    OWN_ID_PORT, 1, 1, ROGUE_ANSWER,
							    &keyed));
		ret = rogue_connect_auth(&r, env_or_die("DSMEM_PEER_ADDR"), OWN_ID_PORT, 7, 1,
					 ROGUE_ANSWER, &keyed);
		EXPECT_EQ(0, ret);
		if (!ret)
			rogue_close(r);
		publish(dir, "ownid.done", "1\n");
		return;
	}
	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, test_node_add(ctx, 1, "rxe0", OWN_ID_PORT));
	ASSERT_EQ(0, ds_node_set_accept(ctx, 1, DS_ACCEPT_KEYED));
	own = stat_value(ctx, "conn_own_id");
	ok = stat_value(ctx, "auth_ok");
	ASSERT_NE(~0ULL, own);
	publish(dir, "ownid.ready", "1\n");
	EXPECT_EQ(0, await_file(dir, "ownid.done", buf, sizeof(buf)));
	EXPECT_EQ(own + 1, stat_value(ctx, "conn_own_id"));
	/* node 1 counts the rogue's proof as good (its own end of the check) */
	EXPECT_LT(ok, stat_value(ctx, "auth_ok"));
	ds_node_del(ctx, 1);
	ds_ctx_close(ctx);
}

/* ---- the B+tree across the guests ---- */

#define BT_KEYS		3000
#define BT_PORT		7475

static int set_link(const char *dir, int id, const char *state);
static int tg_take_seg(struct ds_ctx *ctx, uint32_t node, const char *addr, uint16_t port,
		       uint32_t remote, const char *dir, const char *name, uint64_t *seg,
		       uint32_t *peer);

FIXTURE(pair) {
	struct ds_ctx *ctx;
	const char *dir;
	int id;
	bool done;		/* guest 0 said how it went */
	const char *done_name;	/* where: each test its own file */
	bool cable_out;		/* guest 1's, pulled by guest 0 */
};

FIXTURE_SETUP(pair)
{
	self->dir = env_or_die("DSMEM_RUN_DIR");
	self->id = atoi(env_or_die("DSMEM_GUEST_ID"));
	self->done_name = "bt_done";
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 11 + self->id, "rxe0", BT_PORT))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	/* node 11 (guest 0) connects to node 12, which admits it */
	if (self->id == 1)
		ASSERT_EQ(0, ds_peer_add_id(self->ctx, 12, env_or_die("DSMEM_PEER_ADDR"), 0, 11,
					    DS_PEER_LISTEN, NULL));
}

/* also after a failed assertion: guest 1 must not wait for nothing */
FIXTURE_TEARDOWN(pair)
{
	if (self->id == 0 && self->cable_out)
		(void)set_link(self->dir, 1, "on");
	if (self->id == 0 && !self->done)
		publish(self->dir, self->done_name, "failed\n");
	ds_node_del(self->ctx, 11 + self->id);
	ds_ctx_close(self->ctx);
}

static uint64_t bt_val(uint64_t key, unsigned gen)
{
	return (key ^ 0x5bd1e9955bd1e995ull) * (2 * gen + 3);
}

static uint64_t bt_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Keys of the model in order from start: up to limit of them. */
static size_t bt_expect(const uint64_t *sorted, const unsigned *gen, size_t n, uint64_t start,
			size_t limit, uint64_t *keys)
{
	size_t m = 0;

	for (size_t i = 0; i < n && m < limit; i++)
		if (sorted[i] >= start && gen[i])
			keys[m++] = sorted[i];
	return m;
}

/*
 * Node 12 (guest 1) is a memory node: its segment holds the tree.  Node 11
 * (guest 0) is the compute node: it creates the tree over the wire and
 * puts 3000 keys, reads them all, scans, updates and deletes a part, all
 * checked against a model, while guest 1 only serves its memory.
 */
TEST_F_TIMEOUT(pair, btree_across_guests, 500)
{
	const char *dir = self->dir;
	struct ds_btree_create_opts co = { .node_size = 512 };
	static uint64_t sorted[BT_KEYS], order[BT_KEYS], keys[256], vals[256], exp[256];
	static unsigned gen[BT_KEYS];	/* 0: absent, else the value's generation */
	struct ds_btree_stats st;
	struct ds_btree_info info;
	struct ds_seg_info s;
	struct ds_peer_info p;
	struct ds_ctx *ctx = self->ctx;
	struct ds_btree *t;
	uint64_t seg, addr, v, r = 0x2545f4914f6cdd1dull;
	char buf[128], text[64];
	uint32_t peer;
	size_t n, m, vlen;

	if (self->id == 1) {
		ASSERT_EQ(0, ds_seg_add(ctx, 12, 16 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
		ASSERT_EQ(0, ds_seg_grant(ctx, 12, s.id, 11, DS_PERM_ALL));
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)s.addr);
		publish(dir, "bt_seg", text);
		/* serve until the compute node is done (it says how it went) */
		ASSERT_EQ(0, await_file_for(dir, "bt_done", buf, sizeof(buf), 4500));
		EXPECT_STREQ("ok\n", buf);
		return;
	}
	ASSERT_EQ(0, await_file(dir, "bt_seg", buf, sizeof(buf)));
	seg = strtoull(buf, NULL, 10);
	ASSERT_EQ(12, DSMEM_GADDR_NODE(seg));
	ASSERT_EQ(0, ds_peer_add_id(ctx, 11, env_or_die("DSMEM_PEER_ADDR"), BT_PORT, 12, 0, &peer));
	for (int i = 0; i < 600; i++) {
		if (!ds_peer_get(ctx, 11, peer, &p) && p.state == DS_PEER_UP && p.rseg_total == 1)
			break;
		usleep(50000);
	}
	ASSERT_EQ(DS_PEER_UP, p.state);

	ASSERT_EQ(0, ds_btree_create(11, &seg, 1, &co, &addr)) TH_LOG("create over the wire");
	ASSERT_EQ(0, ds_btree_open(11, addr, NULL, &t));

	/* distinct keys, sorted for the model, put in random order */
	for (size_t i = 0; i < BT_KEYS; i++)
		sorted[i] = (i + 1) * 0x9e3779b97f4a7c15ull >> 8;
	qsort(sorted, BT_KEYS, 8, cmp_u64);
	for (size_t i = 1; i < BT_KEYS; i++)
		ASSERT_NE(sorted[i - 1], sorted[i]);
	for (size_t i = 0; i < BT_KEYS; i++)
		order[i] = i;
	for (size_t i = BT_KEYS; i > 1; i--) {
		size_t j = bt_rnd(&r) % i;
		uint64_t x = order[i - 1];

		order[i - 1] = order[j];
		order[j] = x;
	}
	for (size_t i = 0; i < BT_KEYS; i++) {
		size_t k = order[i];

		ASSERT_EQ(0, ds_btree_put(t, sorted[k], &(uint64_t){ bt_val(sorted[k], 1) }, 8))
			TH_LOG("put %zu", i);
		gen[k] = 1;
	}
	/* updates of every fifth, deletes of every third */
	for (size_t k = 0; k < BT_KEYS; k += 5) {
		ASSERT_EQ(0, ds_btree_put(t, sorted[k], &(uint64_t){ bt_val(sorted[k], 2) }, 8));
		gen[k] = 2;
	}
	for (size_t k = 0; k < BT_KEYS; k += 3) {
		ASSERT_EQ(0, ds_btree_del(t, sorted[k]));
		gen[k] = 0;
	}
	for (size_t i = 0; i < BT_KEYS; i++) {
		size_t k = order[i];
		int ret;

		vlen = 0;
		ret = ds_btree_get(t, sorted[k], &v, 8, &vlen);
		if (!gen[k]) {
			ASSERT_EQ(-ENOENT, ret) TH_LOG("key %zu", k);
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("key %zu", k);
		ASSERT_EQ(8, vlen);
		ASSERT_EQ(bt_val(sorted[k], gen[k]), v) TH_LOG("key %zu", k);
	}
	for (int i = 0; i < 100; i++) {
		uint64_t start = i ? sorted[bt_rnd(&r) % BT_KEYS] + (bt_rnd(&r) % 3) - 1 : 0;
		size_t limit = 1 + bt_rnd(&r) % 256;

		ASSERT_EQ(0, ds_btree_scan(t, start, limit, keys, vals, &n));
		m = bt_expect(sorted, gen, BT_KEYS, start, limit, exp);
		ASSERT_EQ(m, n) TH_LOG("scan %d from %#llx, limit %zu", i, (unsigned long long)start,
				       limit);
		for (size_t j = 0; j < n; j++) {
			size_t k = (uint64_t *)bsearch(&keys[j], sorted, BT_KEYS, 8, cmp_u64) - sorted;

			ASSERT_EQ(exp[j], keys[j]) TH_LOG("scan %d entry %zu", i, j);
			ASSERT_EQ(bt_val(keys[j], gen[k]), vals[j]);
		}
	}
	ASSERT_EQ(0, ds_btree_describe(t, &info));
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("height %u; %" PRIu64 " read, %" PRIu64 " lock, %" PRIu64 " write round trips, "
	       "%" PRIu64 " cache hits", info.height, st.rtt_read, st.rtt_lock, st.rtt_write,
	       st.cache_hits);
	EXPECT_LE(3, info.height);
	ds_btree_close(t);
	publish(dir, "bt_done", _metadata->passed ? "ok\n" : "failed\n");
	self->done = true;
}

/*
 * A replicated tree loses a memory node to a pulled cable: group 0's
 * members are node 12's segment (guest 1, the primary) and node 13's
 * (guest 0), with a spare on node 14 (guest 0).  Guest 0's compute node
 * 11 keeps reading and writing while guest 1's cable is out: reads give
 * up on the silent primary within their timeout, writes once the link's
 * watchdog fails them; the member is excluded, the spare filled in its
 * place, and every key is as the model says, on both members left.
 */
TEST_F_TIMEOUT(pair, btree_replica_cable, 500)
{
	const char *dir = self->dir;
	struct ds_btree_create_opts co = { .node_size = 512, .replicas = 2 };
	static unsigned gen[BT_KEYS];
	struct ds_btree_verify_report rep;
	struct ds_btree_member mem[4];
	struct ds_btree_stats st;
	struct ds_seg_info s;
	struct ds_ctx *ctx = self->ctx;
	struct ds_btree *t;
	uint64_t segs[2], spare = 0, addr, v, r = 0x9e3779b97f4a7c15ull;
	int64_t last_get, gap = 0, t0;
	const uint32_t keys = 600, ops = 2400;
	char buf[128], text[64];
	uint32_t peer;
	size_t n;
	bool live = false;

	self->done_name = "br_done";
	if (self->id == 1) {
		ASSERT_EQ(0, ds_seg_add(ctx, 12, 16 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
		ASSERT_EQ(0, ds_seg_grant(ctx, 12, s.id, 11, DS_PERM_ALL));
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)s.addr);
		publish(dir, "br_seg", text);
		/* serve until guest 0 pulls the cable and is done */
		ASSERT_EQ(0, await_file_for(dir, "br_done", buf, sizeof(buf), 4500));
		EXPECT_STREQ("ok\n", buf);
		return;
	}
	/* nodes 13 and 14 here: a member and the spare */
	for (uint32_t id = 13; id <= 14; id++) {
		ASSERT_EQ(0, test_node_add(ctx, id, "rxe0", BT_PORT + id - 11));
		ASSERT_EQ(0, ds_seg_add(ctx, id, 16 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
		ASSERT_EQ(0, ds_seg_grant(ctx, id, s.id, 11, DS_PERM_ALL));
		if (id == 13)
			segs[1] = s.addr;
		else
			spare = s.addr;
		ASSERT_EQ(0, test_peer_add(ctx, 11, env_or_die("DSMEM_LOCAL_ADDR"),
					   BT_PORT + id - 11, id, &peer));
		ASSERT_EQ(0, wait_rsegs(ctx, 11, peer, 1));
	}
	ASSERT_EQ(0, tg_take_seg(ctx, 11, env_or_die("DSMEM_PEER_ADDR"), BT_PORT, 12, dir,
				 "br_seg", &segs[0], &peer));

	ASSERT_EQ(0, ds_btree_create(11, segs, 2, &co, &addr));
	ASSERT_EQ(0, ds_btree_open(11, addr, NULL, &t));
	ASSERT_EQ(0, ds_btree_spare_add(t, spare));
	ASSERT_EQ(0, ds_btree_members(t, mem, 4, &n));
	ASSERT_EQ(2, n);
	ASSERT_EQ(segs[0], mem[0].seg);
	ASSERT_EQ(1, mem[0].primary);	/* the member across the cable */
	for (uint32_t k = 0; k < keys; k++) {
		ASSERT_EQ(0, ds_btree_put(t, k, &(uint64_t){ bt_val(k, 1) }, 8));
		gen[k] = 1;
	}
	/* gets and puts; guest 1's cable out a fifth of the way in */
	last_get = t0 = now_ms();
	for (uint32_t i = 0; i < ops; i++) {
		uint32_t k = (uint32_t)(bt_rnd(&r) % keys);
		int ret;

		if (i == ops / 5) {
			ASSERT_EQ(0, set_link(dir, 1, "off"));
			self->cable_out = true;
		}
		if (i % 2) {
			ret = ds_btree_put(t, k, &(uint64_t){ bt_val(k, gen[k] + 1) }, 8);
			ASSERT_EQ(0, ret) TH_LOG("put %u (op %u): %d", k, i, ret);
			gen[k]++;
			continue;
		}
		ret = ds_btree_get(t, k, &v, 8, NULL);
		ASSERT_EQ(0, ret) TH_LOG("get %u (op %u): %d", k, i, ret);
		ASSERT_EQ(bt_val(k, gen[k]), v) TH_LOG("key %u", k);
		if (now_ms() - last_get > gap)
			gap = now_ms() - last_get;
		last_get = now_ms();
	}
	/* the spare in the excluded member's place, filled */
	for (int i = 0; i < 1200 && !live; i++) {
		ASSERT_EQ(0, ds_btree_members(t, mem, 4, &n));
		live = mem[0].seg == spare && mem[0].state == DS_BTREE_MEMBER_LIVE;
		if (!live)
			usleep(50000);
	}
	ASSERT_TRUE(live) TH_LOG("member 0: %#llx state %u", (unsigned long long)mem[0].seg,
				 mem[0].state);
	ASSERT_EQ(0, ds_btree_verify(t, &rep)) TH_LOG("%" PRIu64 " mismatches, %" PRIu64
						      " order errors", rep.replica_mismatches,
						      rep.order_errors);
	ASSERT_EQ(keys, rep.keys);
	for (uint32_t k = 0; k < keys; k++) {
		ASSERT_EQ(0, ds_btree_get(t, k, &v, 8, NULL));
		ASSERT_EQ(bt_val(k, gen[k]), v) TH_LOG("key %u", k);
	}
	ASSERT_EQ(0, ds_btree_stats_get(t, &st));
	TH_LOG("%u ops in %lld ms, the longest wait between gets %lld ms; %" PRIu64
	       " read timeouts, %" PRIu64 " fallbacks, %" PRIu64 " excluded", ops,
	       (long long)(last_get - t0), (long long)gap, st.read_timeouts, st.replica_fallbacks,
	       st.members_excluded);
	EXPECT_EQ(1, st.members_excluded);
	ds_btree_close(t);
	ASSERT_EQ(0, set_link(dir, 1, "on"));
	self->cable_out = false;
	ds_node_del(ctx, 13);
	ds_node_del(ctx, 14);
	publish(dir, "br_done", _metadata->passed ? "ok\n" : "failed\n");
	self->done = true;
}

/* ---- Slope across the link ---- */

#define SL_PAGES	1024
#define SL_PAGE		4096UL

/* node's descriptor, with the range mapped; -1 on failure */
static int sl_open(uint32_t node)
{
	int fd = attach_open(node);

	if (fd < 0 || slope_map(fd))
		return -1;
	return fd;
}

static uint64_t sl_word(uint64_t a, uint32_t gen)
{
	return a * 0x9e3779b97f4a7c15ull ^ gen;
}

static void sl_fill_page(uint64_t a, uint32_t gen)
{
	for (uint64_t w = a; w < a + SL_PAGE; w += 8)
		*(volatile uint64_t *)w = sl_word(w, gen);
}

/* pages whose words are not what generation gen[p] wrote */
static unsigned int sl_wrong(uint64_t addr, const uint32_t *gen)
{
	unsigned int bad = 0;

	for (uint64_t p = 0; p < SL_PAGES; p++)
		for (uint64_t w = addr + p * SL_PAGE; w < addr + (p + 1) * SL_PAGE; w += 8)
			if (*(volatile uint64_t *)w != sl_word(w, gen[p])) {
				bad++;
				break;
			}
	return bad;
}

struct sl_writer {
	uint64_t addr;
	uint32_t *gen;
	pthread_t th;
	volatile int stop;
};

static void *sl_writer_run(void *arg)
{
	struct sl_writer *w = arg;
	uint64_t r = 0x9e3779b97f4a7c15ull;

	while (!w->stop) {
		uint64_t p = bt_rnd(&r) % (SL_PAGES / 2);

		sl_fill_page(w->addr + p * SL_PAGE, ++w->gen[p]);
	}
	return NULL;
}

/* Wait (2 minutes at most) until migration id is past state. */
static int sl_wait(int fd, uint64_t id, uint32_t state, struct dsmem_ioc_slope_mig *m)
{
	return slope_mig_get(fd, id, DSMEM_SLOPE_MIG_WAIT, state, 120000, m);
}

/* Move [addr, +SL_PAGES) to node dst: prefill, stop, hand over, done. */
static int sl_move(int fd, uint64_t addr, uint32_t dst, struct sl_writer *w,
		   struct dsmem_ioc_slope_mig *m)
{
	struct dsmem_slope_extent e = { .addr = addr, .len = SL_PAGES * SL_PAGE };
	struct dsmem_ioc_slope_migrate mg = {
		.extents = (uintptr_t)&e, .nr = 1, .dst_node = dst, .cookie = addr,
	};
	int ret;

	if (ioctl(fd, DSMEM_IOC_SLOPE_MIGRATE, &mg))
		return -errno;
	ret = sl_wait(fd, mg.id, DSMEM_SLOPE_MIG_PREFILL, m);
	if (ret)
		return ret;
	if (m->state != DSMEM_SLOPE_MIG_STOPPING)
		return m->error ?: -EPROTO;
	/* the application stops touching it */
	if (w) {
		w->stop = 1;
		pthread_join(w->th, NULL);
	}
	memset(m, 0, sizeof(*m));
	m->id = mg.id;
	if (ioctl(fd, DSMEM_IOC_SLOPE_MIG_STOP, m))
		return -errno;
	while (!ret && m->state == DSMEM_SLOPE_MIG_HANDED_OVER)
		ret = sl_wait(fd, mg.id, DSMEM_SLOPE_MIG_HANDED_OVER, m);
	if (ret)
		return ret;
	return m->state == DSMEM_SLOPE_MIG_DONE ? 0 : -EPROTO;
}

static int sl_recv(int fd, struct dsmem_ioc_slope_mig *m)
{
	memset(m, 0, sizeof(*m));
	m->flags = DSMEM_SLOPE_MIG_WAIT;
	m->timeout_ms = 300000;
	return ioctl(fd, DSMEM_IOC_SLOPE_RECV, m) ? -errno : 0;
}

static int sl_save(const char *dir, const char *name, const uint32_t *gen)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f || fwrite(gen, sizeof(*gen), SL_PAGES, f) != SL_PAGES)
		return -1;
	return fclose(f);
}

static int sl_load(const char *dir, const char *name, uint32_t *gen)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(gen, sizeof(*gen), SL_PAGES, f);
	fclose(f);
	return n == SL_PAGES ? 0 : -1;
}

/*
 * Node 11 (guest 0) moves an object to node 12 (guest 1) while a thread
 * keeps writing to it; guest 1 checks every page (touching the last one,
 * likely still to be pulled, first), writes all of it, and sends it back,
 * where guest 0 checks it again.
 */
TEST_F_TIMEOUT(pair, slope_across_guests, 600)
{
	const char *dir = self->dir;
	struct dsmem_ioc_slope_alloc a = { .len = SL_PAGES * SL_PAGE };
	static uint32_t gen[SL_PAGES];
	struct dsmem_ioc_slope_mig m;
	struct sl_writer w = {};
	struct ds_peer_info p;
	char buf[64], text[64];
	uint64_t addr = 0, in_id = 0;
	uint32_t peer;
	int fd, ret;

	self->done = true;	/* the btree test's flag: not ours */
	if (self->id == 1) {
		/*
		 * Node 12 is this test's now: guest 0 connects only after this,
		 * or it might reach the btree test's node 12 still going away.
		 */
		publish(dir, "sl_node", "1\n");
		fd = sl_open(12);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, sl_recv(fd, &m)) TH_LOG("nothing arrived");
		addr = m.cookie;
		in_id = m.id;
		ASSERT_EQ(SL_PAGES, m.pages);
		ASSERT_EQ(0, await_file(dir, "sl_gen0", buf, sizeof(buf)));
		ASSERT_EQ(0, sl_load(dir, "sl_gen", gen));
		(void)*(volatile uint64_t *)(addr + (SL_PAGES - 1) * SL_PAGE);
		EXPECT_EQ(0, sl_wrong(addr, gen));
		for (uint64_t i = 0; i < SL_PAGES; i++)
			sl_fill_page(addr + i * SL_PAGE, ++gen[i]);
		ASSERT_EQ(0, sl_save(dir, "sl_gen_back", gen));
		/*
		 * The object moves on only once all of it is here (-EBUSY
		 * while the pull still holds any of it): on a loaded host the
		 * pull can outlast the writes above, so wait for it to end.
		 */
		do {
			ASSERT_EQ(0, sl_wait(fd, in_id, DSMEM_SLOPE_MIG_HANDED_OVER, &m));
		} while (m.state == DSMEM_SLOPE_MIG_HANDED_OVER);
		ASSERT_EQ(DSMEM_SLOPE_MIG_DONE, m.state) TH_LOG("the pull: error %d", m.error);
		ASSERT_EQ(0, sl_move(fd, addr, 11, NULL, &m)) TH_LOG("move back");
		TH_LOG("back: %llu pages, %u rounds, no owner for %llu us",
		       (unsigned long long)m.pages, m.rounds,
		       (unsigned long long)m.no_owner_ns / 1000);
		publish(dir, "sl_back", "ok\n");
		ASSERT_EQ(0, await_file_for(dir, "sl_done", buf, sizeof(buf), 3000));
		EXPECT_STREQ("ok\n", buf);
		close(fd);
		return;
	}
	fd = sl_open(11);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, await_file_for(dir, "sl_node", buf, sizeof(buf), 1200));
	ASSERT_EQ(0, ds_peer_add_id(self->ctx, 11, env_or_die("DSMEM_PEER_ADDR"), BT_PORT, 12, 0, &peer));
	for (int i = 0; i < 600; i++) {
		if (!ds_peer_get(self->ctx, 11, peer, &p) && p.state == DS_PEER_UP)
			break;
		usleep(50000);
	}
	ASSERT_EQ(DS_PEER_UP, p.state);
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &a));
	addr = a.addr;
	for (uint64_t i = 0; i < SL_PAGES; i++)
		sl_fill_page(addr + i * SL_PAGE, 0);
	w.addr = addr;
	w.gen = gen;
	ASSERT_EQ(0, pthread_create(&w.th, NULL, sl_writer_run, &w));
	ret = sl_move(fd, addr, 12, &w, &m);
	ASSERT_EQ(0, ret) TH_LOG("move: %s", strerror(-ret));
	TH_LOG("there: %llu dirty at the handover of %llu, %u rounds, no owner for %llu us",
	       (unsigned long long)m.dirty_units, (unsigned long long)m.pages, m.rounds,
	       (unsigned long long)m.no_owner_ns / 1000);
	ASSERT_EQ(0, sl_save(dir, "sl_gen", gen));
	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)addr);
	publish(dir, "sl_gen0", text);
	/* and back */
	ASSERT_EQ(0, sl_recv(fd, &m)) TH_LOG("it never came back");
	EXPECT_EQ(addr, m.cookie);
	ASSERT_EQ(0, await_file(dir, "sl_back", buf, sizeof(buf)));
	ASSERT_EQ(0, sl_load(dir, "sl_gen_back", gen));
	EXPECT_EQ(0, sl_wrong(addr, gen));
	publish(dir, "sl_done", _metadata->passed ? "ok\n" : "failed\n");
	close(fd);
}

/* ---- the object store across the link ---- */

/*
 * dsmaster on guest 0; one client with a segment on each guest.  An
 * object put on guest 1, a replica on each guest, is read whole on guest 0.
 * Then the link goes down under a run of puts from guest 1 (guest 0's
 * cable is pulled for 10 s): every put ends, each COMPLETE or
 * failed, never half there; once the link is back, a put reaches both
 * guests again and guest 0 reads every acknowledged object whole.
 */
/*
 * Pull this guest's cable to the other guest ("off") or plug it back
 * ("on"): the host's runner flips QEMU's link, so the NIC loses carrier and
 * the interface stays configured, as when a cable or a switch port fails.
 * (Not "ip link set down": on rxe that also fails the GSI QP's sends, which
 * leaves the port unable to connect again until its rxe link is re-added.)
 */
static int set_link(const char *dir, int id, const char *state)
{
	char req[32], ack[32], got[128], path[300];

	snprintf(req, sizeof(req), "g%d/link.req", id);
	snprintf(ack, sizeof(ack), "g%d/link.ack", id);
	snprintf(got, sizeof(got), "%s\n", state);
	publish(dir, req, got);
	if (await_file_for(dir, ack, got, sizeof(got), 300))
		return -ETIMEDOUT;
	snprintf(path, sizeof(path), "%s/%s", dir, ack);
	unlink(path);
	if (strncmp(got, state, strlen(state)) || got[strlen(state)] != '\n') {
		fprintf(stderr, "# link %s: %s", state, got);
		return -EIO;
	}
	return 0;
}

/*
 * Guest 1's side of a two-node test: its node admits the other guest's
 * (remote, from addr), grants it a segment of size, publishes the
 * segment's address as dir/name, and waits (up to 4 minutes) for
 * dir/done.  0, or the first failure.
 */
static int tg_offer_seg(struct ds_ctx *ctx, uint32_t node, const char *addr, uint32_t remote,
			uint64_t size, const char *dir, const char *name, const char *done)
{
	struct ds_seg_info s;
	char buf[64];
	int ret;

	ret = ds_peer_add_id(ctx, node, addr, 0, remote, DS_PEER_LISTEN, NULL);
	if (!ret)
		ret = ds_seg_add(ctx, node, size, -1, DS_TRANSLATE_SEGMENT, &s);
	if (!ret)
		ret = ds_seg_grant(ctx, node, s.id, remote, DSMEM_PERM_ALL);
	if (ret)
		return ret;
	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)s.addr);
	publish(dir, name, buf);
	return await_file_for(dir, done, buf, sizeof(buf), 2400);
}

/*
 * Guest 0's side: the segment guest 1 published as dir/name, in *seg; its
 * node connects to remote at addr:port (peer id in *peer) and holds the
 * grant.  0, or the first failure.
 */
static int tg_take_seg(struct ds_ctx *ctx, uint32_t node, const char *addr, uint16_t port,
		       uint32_t remote, const char *dir, const char *name, uint64_t *seg,
		       uint32_t *peer)
{
	char buf[64];
	int ret = await_file(dir, name, buf, sizeof(buf));

	if (ret)
		return ret;
	*seg = strtoull(buf, NULL, 10);
	ret = ds_peer_add_id(ctx, node, addr, port, remote, 0, peer);
	return ret ? ret : wait_rsegs(ctx, node, *peer, 1);
}

/*
 * The second NIC: node 6 (guest 1) on rxe1 grants a segment to node 5
 * (guest 0) on rxe1, which connects over the second network and moves
 * data; then guest 0 pulls that NIC's cable only: the second network goes
 * silent, the first still answers, and plugging it back restores it.
 */
FIXTURE(nic2) {
};

FIXTURE_SETUP(nic2)
{
}

FIXTURE_TEARDOWN(nic2)
{
}

TEST_F_TIMEOUT(nic2, carries_rdma_and_has_its_own_cable, 300)
{
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	const char *addr2 = env_or_die("DSMEM_PEER_ADDR2");
	int id = atoi(env_or_die("DSMEM_GUEST_ID"));
	uint8_t out[65536], in[65536];
	struct ds_ctx *ctx;
	struct ds_xfer *x;
	uint64_t seg;
	uint32_t peer;
	int back = -1;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, test_node_add(ctx, 5 + id, "rxe1", 7481));
	if (id == 1) {
		EXPECT_EQ(0, tg_offer_seg(ctx, 6, addr2, 5, 1 << 20, dir, "seg2", "done2"));
		goto out;
	}
	ASSERT_EQ(0, tg_take_seg(ctx, 5, addr2, 7481, 6, dir, "seg2", &seg, &peer));
	ASSERT_EQ(0, ds_xfer_open(5, &x));
	test_fill(out, sizeof(out), 5);
	EXPECT_EQ(0, ds_write(x, seg + 3, out, sizeof(out)));
	EXPECT_EQ(0, ds_read(x, seg + 3, in, sizeof(in)));
	EXPECT_EQ(0, memcmp(out, in, sizeof(in)));
	ds_xfer_close(x);

	ASSERT_EQ(0, set_link(dir, 0, "off n1"));
	EXPECT_NE(0, run("ping -c 1 -W 2 %s >/dev/null", addr2));
	EXPECT_EQ(0, run("ping -c 1 -W 5 %s >/dev/null", env_or_die("DSMEM_PEER_ADDR")));
	ASSERT_EQ(0, set_link(dir, 0, "on n1"));
	for (int i = 0; i < 10 && back; i++)
		back = run("ping -c 1 -W 1 %s >/dev/null", addr2);
	EXPECT_EQ(0, back);
	publish(dir, "done2", "1\n");
out:
	ds_node_del(ctx, 5 + id);
	ds_ctx_close(ctx);
}

/*
 * Paths across hosts: nodes 7 and 8, one per guest, each on rxe0 and
 * rxe1.  Node 7 dials node 8 over the first network; node 8 offers its
 * rxe1 address and node 7 adds a path over the second network.  An
 * unordered handle's 4 MiB transfers then use both NICs, verified.
 * 32 MiB between two TCG guests sharing the host's cores take longer
 * than the harness's default 30 s under CI's load: a test of its own
 * timeout, in nic2.
 */
TEST_F_TIMEOUT(nic2, paths_across_guests, 300)
{
	struct timespec t0, t1;
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	const char *addr = env_or_die("DSMEM_PEER_ADDR");
	int id = atoi(env_or_die("DSMEM_GUEST_ID"));
	enum { LEN = 4 << 20 };
	uint8_t *out = malloc(LEN), *in = malloc(LEN);
	struct ds_peer_info p = {};
	struct ds_ctx *ctx;
	struct ds_xfer *x;
	uint64_t seg, sent1, retry1;
	uint32_t peer;

	ASSERT_NE(NULL, out);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, test_node_add(ctx, 7 + id, "rxe0,rxe1", 7482));
	if (id == 1) {
		EXPECT_EQ(0, tg_offer_seg(ctx, 8, addr, 7, 16 << 20, dir, "seg3", "done3"));
		goto out;
	}
	ASSERT_EQ(0, tg_take_seg(ctx, 7, addr, 7482, 8, dir, "seg3", &seg, &peer));
	for (int i = 0; i < 100 && p.paths != 2; i++) {
		ds_peer_get(ctx, 7, peer, &p);
		usleep(100000);
	}
	EXPECT_EQ(2, p.paths) TH_LOG("no second path across the guests");
	{
		struct ds_xfer_attr a = DS_XFER_ATTR_INIT;

		a.flags = DS_XFER_UNORDERED;
		ASSERT_EQ(0, ds_xfer_open_attr(7, &a, &x));
	}
	sent1 = rxe_sent_pkts("rxe1");
	retry1 = rxe_counter("rxe0", "completer_retry_err") +
		 rxe_counter("rxe1", "completer_retry_err");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 4; i++) {
		test_fill(out, LEN, 70 + i);
		memset(in, 0, LEN);
		EXPECT_EQ(0, ds_write(x, seg + 4099 * i, out, LEN));
		EXPECT_EQ(0, ds_read(x, seg + 4099 * i, in, LEN));
		EXPECT_EQ(0, memcmp(out, in, LEN));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_LT(sent1 + 1000, rxe_sent_pkts("rxe1"));
	TH_LOG("32 MiB in %.1f s; rxe1 sent %llu packets; %llu retransmit timeouts",
	       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       (unsigned long long)(rxe_sent_pkts("rxe1") - sent1),
	       (unsigned long long)(rxe_counter("rxe0", "completer_retry_err") +
				    rxe_counter("rxe1", "completer_retry_err") - retry1));
	ds_xfer_close(x);
	publish(dir, "done3", "1\n");
out:
	ds_node_del(ctx, 7 + id);
	ds_ctx_close(ctx);
	free(in);
	free(out);
}

/*
 * dsmaster on this guest, logging to dir/master.log: RPC at listen, its
 * node at port, metadata in dir/m, slow tier in dir/slow, TLS from tls
 * (store-certs init); hb_timeout_ms NULL for the default.
 */
static int tg_master(struct proc *p, const char *dir, const char *listen, const char *node,
		     const char *addr, const char *port, const char *tls, const char *hb_timeout_ms)
{
	char data[PATH_MAX], slow[PATH_MAX + 8], log[PATH_MAX + 16];
	char ca[PATH_MAX + 8], cert[PATH_MAX + 16], key[PATH_MAX + 16];
	char *argv[32];
	int n = 0;

	snprintf(data, sizeof(data), "%s/m", dir);
	snprintf(slow, sizeof(slow), "dir:%s/slow", dir);
	snprintf(log, sizeof(log), "%s/master.log", dir);
	snprintf(ca, sizeof(ca), "%s/ca.crt", tls);
	snprintf(cert, sizeof(cert), "%s/master.crt", tls);
	snprintf(key, sizeof(key), "%s/master.key", tls);
	argv[n++] = (char *)dsmaster_path();
	argv[n++] = "--listen";
	argv[n++] = (char *)listen;
	argv[n++] = "--node";
	argv[n++] = (char *)node;
	argv[n++] = "--addr";
	argv[n++] = (char *)addr;
	argv[n++] = "--port";
	argv[n++] = (char *)port;
	argv[n++] = "--data-dir";
	argv[n++] = data;
	argv[n++] = "--slow-tier";
	argv[n++] = slow;
	argv[n++] = "--tls-ca";
	argv[n++] = ca;
	argv[n++] = "--tls-cert";
	argv[n++] = cert;
	argv[n++] = "--tls-key";
	argv[n++] = key;
	if (hb_timeout_ms) {
		argv[n++] = "--heartbeat-timeout-ms";
		argv[n++] = (char *)hb_timeout_ms;
	}
	/*
	 * Both tests hold the store to every put it acknowledged, so the
	 * pool must not evict: a full one refuses a put (ENOSPC, never
	 * acknowledged) instead.  With eviction on, the reservations of
	 * the puts a cut fails, and the salvage and repair after it, once
	 * took the pool over its watermark and evicted an acknowledged key.
	 */
	argv[n++] = "--evict";
	argv[n++] = "off";
	argv[n++] = "-v";
	argv[n] = NULL;
	return spawn(p, log, argv, false) > 0 ? 0 : -1;
}

/*
 * A client of the store on node, lending 32 MiB, its calls ending within
 * timeout_ms, logging to dir/workerNODE.log; 0 once it is ready.
 */
static int tg_worker(struct proc *w, const char *dir, const char *masters, int node,
		     const char *timeout_ms)
{
	char n[16], log[PATH_MAX], r[256];
	char *argv[12];
	int k = 0;

	snprintf(n, sizeof(n), "%d", node);
	snprintf(log, sizeof(log), "%s/worker%d.log", dir, node);
	argv[k++] = (char *)beside("store_worker");
	argv[k++] = "--masters";
	argv[k++] = (char *)masters;
	argv[k++] = "--node";
	argv[k++] = n;
	argv[k++] = "--segment";
	argv[k++] = "32M";
	argv[k++] = "--timeout-ms";
	argv[k++] = (char *)timeout_ms;
	argv[k] = NULL;
	if (spawn(w, log, argv, true) <= 0 || read_line(w, r, sizeof(r), 120000))
		return -1;
	if (strncmp(r, "ready", 5)) {
		fprintf(stderr, "# worker %d: %s\n", node, r);
		return -1;
	}
	return 0;
}

#define LK_PUTS	12		/* puts across the link cut */
#define LK_SIZE	((1ull << 20) + (64ull << 10))	/* two shards each */

/* the processes and nodes, so that a failed assertion still ends them */
FIXTURE(store2) {
	struct proc master, w;
	struct ds_ctx *ctx;
	int id;
};

FIXTURE_SETUP(store2)
{
	self->master.in = self->master.out = -1;
	self->w.in = self->w.out = -1;
	self->id = atoi(env_or_die("DSMEM_GUEST_ID"));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
}

FIXTURE_TEARDOWN(store2)
{
	if (!_metadata->passed) {
		run("tail -n 30 /tmp/store2/*.log | sed 's/^/# /'");
		/* the module's view: its peers and its counters */
		run("%s peer show | sed 's/^/# /'", dsctl_path());
		run("%s statistic show | grep -E 'conn|reconn|xfer_(errors|noconn)|msg_timeout'"
		    " | sed 's/^/# /'", dsctl_path());
	}
	/* whatever happened, the cable is in for what follows */
	if (self->id == 0)
		set_link(env_or_die("DSMEM_RUN_DIR"), 0, "on");
	stop_proc(&self->w, SIGKILL);
	stop_proc(&self->master, SIGTERM);
	ds_node_del(self->ctx, 41 + self->id);
	if (self->id == 0)
		ds_node_del(self->ctx, 40);
	ds_ctx_close(self->ctx);
}

TEST_F_TIMEOUT(store2, store_across_guests, 600)
{
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	char masters[64], r[1024], buf[256], nm[16];
	char tls[PATH_MAX];
	struct proc *w = &self->w;
	struct ds_ctx *ctx = self->ctx;
	int id = self->id, nacked = 0;
	char acked[2048] = "", *save = NULL;

	run("rm -rf /tmp/store2; mkdir -p /tmp/store2/m /tmp/store2/slow");
	/* the store's certificates, made by guest 0 (its master's address in
	 * the master's) where both guests read them */
	snprintf(tls, sizeof(tls), "%s/store-tls", dir);
	setenv("DSMEM_STORE_TLS_DIR", tls, 1);
	if (id == 0) {
		ASSERT_EQ(0, run("rm -rf %s && %s init %s %s >/dev/null", tls, store_certs_path(), tls,
				 addr));
		/* the master's node 40 and its RPC on this guest's address */
		ASSERT_EQ(0, test_node_add(ctx, 40, "rxe0", 7740));
		snprintf(masters, sizeof(masters), "%s:7700", addr);
		ASSERT_EQ(0, tg_master(&self->master, "/tmp/store2", masters, "40", addr, "7740", tls,
				       NULL));
		for (int i = 0; i < 300; i++) {
			if (!oneshot(masters, r, sizeof(r), "info") && kv(r, "ret") == 0)
				break;
			usleep(300000);
		}
		EXPECT_EQ(0, kv(r, "ret")) TH_LOG("master: %s", r);
		publish(dir, "st_master", masters);
	} else {
		ASSERT_EQ(0, await_file_for(dir, "st_master", masters, sizeof(masters), 1200));
	}

	/* a client with 32 MiB on each guest: node 41 on guest 0, 42 on 1 */
	ASSERT_EQ(0, test_node_add(ctx, 41 + id, "rxe0", 7741 + id));
	/* a task ends within 20 s, whatever the link does */
	ASSERT_EQ(0, tg_worker(w, "/tmp/store2", masters, 41 + id, "20000"));
	snprintf(nm, sizeof(nm), "st_ready%d", id);
	publish(dir, nm, "1\n");
	snprintf(nm, sizeof(nm), "st_ready%d", !id);
	ASSERT_EQ(0, await_file_for(dir, nm, r, sizeof(r), 1200));

	if (id == 1) {
		/* put here, two replicas: one segment on each guest */
		ASSERT_EQ(0, wcmd(w, r, sizeof(r), "put tg/k %llu 7 dram 2", 3ull << 20));
		EXPECT_EQ(4, kv(r, "state")) TH_LOG("%s", r);
		EXPECT_EQ(2, kv(r, "dram")) TH_LOG("%s", r);
		snprintf(buf, sizeof(buf), "%lld\n", kv(r, "version"));
		publish(dir, "st_put", buf);
		ASSERT_EQ(0, await_file_for(dir, "st_got", buf, sizeof(buf), 1200));

		ASSERT_EQ(0, await_file_for(dir, "st_checked", buf, sizeof(buf), 1200));

		/* puts while guest 0 takes the link down, and after it is back */
		ASSERT_EQ(0, wsend(w, "loop lk/ %d %llu 500 dram 2", LK_PUTS, LK_SIZE));
		for (int i = 0; i < LK_PUTS; i++) {
			char key[32];

			/* a put ends by its own timeout (20 s), whatever the link does */
			ASSERT_EQ(0, read_line(w, r, sizeof(r), 150000)) TH_LOG("put %d never ended", i);
			ASSERT_EQ(0, strncmp(r, "put ", 4)) TH_LOG("%s", r);
			if (i == 0)
				publish(dir, "st_loop", "1\n");
			kv_str(r, "key", key, sizeof(key));
			if (kv(r, "state") == 4) {
				snprintf(acked + strlen(acked), sizeof(acked) - strlen(acked),
					 "%s %lld\n", key, kv(r, "version"));
				nacked++;
			} else {
				TH_LOG("across the link cut: %s", r);
			}
		}
		ASSERT_EQ(0, read_line(w, r, sizeof(r), 150000));
		ASSERT_EQ(0, await_file_for(dir, "st_link_up", buf, sizeof(buf), 1200));
		/* the connection comes back: a put reaches both guests again */
		for (int i = 0; i < 40; i++) {
			ASSERT_EQ(0, wcmd(w, r, sizeof(r), "put lk/after %llu 600 dram 2", LK_SIZE));
			if (kv(r, "state") == 4 && kv(r, "dram") == 2)
				break;
			sleep(2);
		}
		EXPECT_EQ(4, kv(r, "state")) TH_LOG("after the link came back: %s", r);
		EXPECT_EQ(2, kv(r, "dram")) TH_LOG("after the link came back: %s", r);
		snprintf(acked + strlen(acked), sizeof(acked) - strlen(acked), "lk/after %lld\n",
			 kv(r, "version"));
		TH_LOG("%d of %d puts acknowledged across the link cut", nacked, LK_PUTS);
		publish(dir, "st_acked", acked);
		ASSERT_EQ(0, await_file_for(dir, "st_read", buf, sizeof(buf), 1200));
	} else {
		ASSERT_EQ(0, await_file_for(dir, "st_put", buf, sizeof(buf), 1200));
		ASSERT_EQ(0, wcmd(w, r, sizeof(r), "get tg/k %llu expect 7 size %llu",
				  3ull << 20, 3ull << 20));
		EXPECT_EQ(4, kv(r, "state")) TH_LOG("%s", r);
		EXPECT_EQ(1, kv(r, "intact")) TH_LOG("%s", r);
		EXPECT_EQ(atoll(buf), kv(r, "version")) TH_LOG("%s", r);
		publish(dir, "st_got", "1\n");

		publish(dir, "st_checked", "1\n");

		/* the cable out for 10 s, under guest 1's puts */
		ASSERT_EQ(0, await_file_for(dir, "st_loop", buf, sizeof(buf), 1200));
		ASSERT_EQ(0, set_link(dir, id, "off"));
		sleep(10);
		ASSERT_EQ(0, set_link(dir, id, "on"));
		publish(dir, "st_link_up", "1\n");
		/* every object guest 1 was told was stored, whole */
		ASSERT_EQ(0, await_file_for(dir, "st_acked", acked, sizeof(acked), 3000));
		for (char *line = strtok_r(acked, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char key[32];
			long long ver, seed;

			ASSERT_EQ(2, sscanf(line, "%31s %lld", key, &ver));
			seed = strcmp(key, "lk/after") ? 500 + atoi(key + 3) : 600;
			ASSERT_EQ(0, wcmd(w, r, sizeof(r), "get %s %llu expect %lld size %llu", key,
					  LK_SIZE, seed, LK_SIZE));
			EXPECT_EQ(4, kv(r, "state")) TH_LOG("%s: %s", key, r);
			EXPECT_EQ(ver, kv(r, "version")) TH_LOG("%s: %s", key, r);
			EXPECT_EQ(1, kv(r, "intact")) TH_LOG("%s: %s", key, r);
		}
		publish(dir, "st_read", "1\n");
	}
}

/* ---- the Jepsen-style run across a cut link (docs/chaos.md) ---- */

#define CH2_WORKERS	3
#define CH2_KEYS	4
#define CH2_DIR		"/tmp/chaos2"
/*
 * The run is sized by the operations the clients log, and its cuts are
 * fixed: CH2_CUTS of them, the first after CH2_LEAD_OPS ok operations,
 * each next one CH2_GAP_OPS ok ones after the last was healed (the store
 * served across the link again), the workload's end CH2_TAIL_OPS ok ones
 * after the last.  A cut holds until CH2_WORKERS calls have broken under
 * it (failed or undecided: every client has felt it), then the cable
 * goes back in.  Each wait is bounded by CH2_STALL_S, a hang's bound.
 * The ok operations alone (15 + 2 x 8 + 20) meet the run's floor of 50.
 */
#define CH2_CUTS	3
#define CH2_LEAD_OPS	15
#define CH2_GAP_OPS	8
#define CH2_TAIL_OPS	20
#define CH2_STALL_S	240

/*
 * Guest 0 holds the store: dsmaster and a client lending a segment.
 * Guest 1 holds the three clients of the workload, each lending a segment
 * too, and the nemesis, which pulls guest 1's cable until calls break
 * under it (CH2_CUTS).  The clients' calls end within 3 s: a cut shorter
 * than that would pass for a delay, TCP and RDMA retransmitting across it
 * (cuts of 2 to 6 s under calls of 10 s failed none of 1584 operations),
 * so the cut holds until calls have broken.  So calls and RDMA transfers
 * between the clients and the store, and between the clients' segments
 * and the lender's, break under it.  The history (the clients' calls and
 * the cuts) is on guest 1's clock alone, and the checker decides it
 * there.  The master's heartbeat
 * timeout outlasts a cut: this run asks what a partition does to
 * linearizability, not what a client declared dead loses (which
 * docs/store.md leaves to replication and the slow tier).
 */
FIXTURE(chaos2) {
	struct proc master, w[CH2_WORKERS];
	struct ds_ctx *ctx;
	int id, nodes;
};

FIXTURE_SETUP(chaos2)
{
	self->master.in = self->master.out = -1;
	for (int i = 0; i < CH2_WORKERS; i++)
		self->w[i].in = self->w[i].out = -1;
	self->id = atoi(env_or_die("DSMEM_GUEST_ID"));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
}

FIXTURE_TEARDOWN(chaos2)
{
	if (!_metadata->passed)
		run("tail -n 20 " CH2_DIR "/*.log | sed 's/^/# /'");
	if (self->id == 1) {
		set_link(env_or_die("DSMEM_RUN_DIR"), 1, "on");
		/* guest 0 waits for this, even after a failed assertion */
		publish(env_or_die("DSMEM_RUN_DIR"), "ch_done", "1\n");
	}
	for (int i = 0; i < CH2_WORKERS; i++)
		stop_proc(&self->w[i], SIGKILL);
	stop_proc(&self->master, SIGTERM);
	for (int i = 0; i < self->nodes; i++)
		ds_node_del(self->ctx, 50 + (self->id ? 2 + i : i));
	ds_ctx_close(self->ctx);
}

static int64_t ch2_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Until the clients have logged ok ok operations and broken broken ones
 * (fail or info): 0, or -ETIMEDOUT after CH2_STALL_S (a stalled run).
 */
static int ch2_await(long ok, long broken, const char *what)
{
	long d = 0, k = 0, b = 0;

	for (int i = 0; i < CH2_STALL_S * 5; i++) {
		chaos_logged(CH2_DIR, &d, &k, &b);
		if (k >= ok && b >= broken)
			return 0;
		usleep(200000);
	}
	fprintf(stderr, "# chaos2: %s: %ld operations logged (%ld ok, %ld broken) in %d s, "
		"not %ld ok and %ld broken\n", what, d, k, b, CH2_STALL_S, ok, broken);
	return -ETIMEDOUT;
}

static void ch2_nemesis(int fd, const char *f)
{
	char b[160];
	int n = snprintf(b, sizeof(b),
			 "{\"type\":\"nemesis\",\"f\":\"%s\",\"fault\":\"cut-link\","
			 "\"detail\":\"guest 1's cable\",\"time\":%lld}\n", f, (long long)ch2_now());

	if (write(fd, b, n) != n)
		perror("nemesis");
	fprintf(stderr, "# nemesis: %s cut-link\n", f);
}

TEST_F_TIMEOUT(chaos2, linearizable_across_link_cuts, 560)
{
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	const char *seed = getenv("STORE_CHAOS_SEED");
	char masters[64], r[1024], buf[64];
	char tls[PATH_MAX];
	long long figure[CHAOS_FIGURES];
	int id = self->id, cuts = 0, held, i, st;
	uint64_t rng = (seed ? strtoull(seed, NULL, 0) : 1) * 0x9e3779b97f4a7c15ull | 1;
	int64_t t0;

	run("rm -rf " CH2_DIR "; mkdir -p " CH2_DIR "/m " CH2_DIR "/slow");
	snprintf(tls, sizeof(tls), "%s/chaos2-tls", dir);
	setenv("DSMEM_STORE_TLS_DIR", tls, 1);
	if (id == 0) {
		ASSERT_EQ(0, run("rm -rf %s && %s init %s %s >/dev/null", tls, store_certs_path(), tls,
				 addr));
		ASSERT_EQ(0, test_node_add(self->ctx, 50, "rxe0", 7750));
		self->nodes = 1;
		snprintf(masters, sizeof(masters), "%s:7701", addr);
		/* no client is declared dead during a cut */
		ASSERT_EQ(0, tg_master(&self->master, CH2_DIR, masters, "50", addr, "7750", tls,
				       "30000"));
		for (i = 0; i < 300; i++) {
			if (!oneshot(masters, r, sizeof(r), "info") && kv(r, "ret") == 0)
				break;
			usleep(300000);
		}
		ASSERT_EQ(0, kv(r, "ret")) TH_LOG("master: %s", r);
		/* the lender: node 51 on this side of the link */
		ASSERT_EQ(0, test_node_add(self->ctx, 51, "rxe0", 7751));
		self->nodes = 2;
		ASSERT_EQ(0, tg_worker(&self->w[0], CH2_DIR, masters, 51, "10000"));
		publish(dir, "ch_master", masters);
		/* until guest 1 has checked its history */
		ASSERT_EQ(0, await_file_for(dir, "ch_done", buf, sizeof(buf), 5000));
		return;
	}

	ASSERT_EQ(0, await_file_for(dir, "ch_master", masters, sizeof(masters), 1200));
	for (i = 0; i < CH2_WORKERS; i++) {
		ASSERT_EQ(0, test_node_add(self->ctx, 52 + i, "rxe0", 7752 + i));
		self->nodes = i + 1;
	}
	for (i = 0; i < CH2_WORKERS; i++)
		ASSERT_EQ(0, tg_worker(&self->w[i], CH2_DIR, masters, 52 + i, "3000"))
			TH_LOG("client %d", i);

	int nem = open(CH2_DIR "/nemesis.jsonl", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		       0644);

	ASSERT_LE(0, nem);
	t0 = ch2_now();
	/* sized by operations: each client until the stop file, at most
	 * 100000 operations (a bound no run comes near) */
	for (i = 0; i < CH2_WORKERS; i++)
		ASSERT_EQ(0, wsend(&self->w[i], "chaos %d %d 0 %llu " CH2_DIR "/hist.%d.jsonl dram 2 "
				   "ops 100000 stop " CH2_DIR "/chaos.stop", i + 1, CH2_KEYS,
				   (unsigned long long)rng + i, i + 1));
	/* cuts one at a time, each after the store served again */
	ASSERT_EQ(0, ch2_await(CH2_LEAD_OPS, 0, "before the first cut"));
	for (; cuts < CH2_CUTS;) {
		long done, ok, broken;

		chaos_logged(CH2_DIR, &done, &ok, &broken);
		ch2_nemesis(nem, "start");
		cuts++;
		ASSERT_EQ(0, set_link(dir, 1, "off"));
		held = ch2_await(0, broken + CH2_WORKERS, "under a cut");
		ASSERT_EQ(0, set_link(dir, 1, "on"));
		ch2_nemesis(nem, "stop");
		ASSERT_EQ(0, held);
		ASSERT_EQ(0, ch2_await(ok + (cuts < CH2_CUTS ? CH2_GAP_OPS : CH2_TAIL_OPS), 0,
				       "after a cut healed"));
	}
	/* the workload ends: by its count */
	ASSERT_EQ(0, run("touch " CH2_DIR "/chaos.stop"));
	close(nem);
	for (i = 0; i < CH2_WORKERS; i++) {
		ASSERT_EQ(0, read_line(&self->w[i], r, sizeof(r), 180000)) TH_LOG("client %d", i);
		EXPECT_EQ(0, strncmp(r, "ok done", 7)) TH_LOG("client %d: %s", i, r);
	}
	/* the final reads, once the store answers this side again */
	for (i = 0; i < 60; i++) {
		if (!wcmd(&self->w[0], r, sizeof(r), "list ch/") && kv(r, "ret") == 0)
			break;
		sleep(1);
	}
	ASSERT_EQ(0, wcmd(&self->w[0], r, sizeof(r), "chaos-final %d %d " CH2_DIR "/hist.final.jsonl",
			  CH2_WORKERS + 1, CH2_KEYS));
	EXPECT_EQ(0, strncmp(r, "ok done", 7)) TH_LOG("%s", r);

	st = chaos_check(CH2_DIR, figure, NULL, 0);
	TH_LOG("%d cuts in %lld s", cuts, (long long)((ch2_now() - t0) / 1000000000LL));
	EXPECT_EQ(0, st) TH_LOG("the checker: status %d", st);
	/*
	 * A run that did little, or saw no cut, proves nothing: the
	 * schedule made every cut and counted its operations, and the
	 * checker must have seen them all.
	 */
	EXPECT_LE(50, figure[CHAOS_OPS]);
	EXPECT_LE(CH2_LEAD_OPS + (CH2_CUTS - 1) * CH2_GAP_OPS + CH2_TAIL_OPS, figure[CHAOS_OPS]);
	EXPECT_EQ(CH2_CUTS, cuts);
	EXPECT_EQ(CH2_CUTS, figure[CHAOS_FAULTS]);
	/* nor one whose cuts broke no call */
	EXPECT_LT(0, figure[CHAOS_FAILED] + figure[CHAOS_INFO]);
	EXPECT_EQ(0, figure[CHAOS_VIOLATIONS]);
	EXPECT_EQ(0, figure[CHAOS_LOST_ACKED]);
	EXPECT_EQ(0, figure[CHAOS_BAD_CHECKSUM]);
	if (figure[CHAOS_VIOLATIONS] || figure[CHAOS_LOST_ACKED] || figure[CHAOS_BAD_CHECKSUM])
		run("cp " CH2_DIR "/history.jsonl %s/chaos2-failed.jsonl", dir);
}

TEST_HARNESS_MAIN
