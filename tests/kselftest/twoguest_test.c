// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two guests joined by a datagram link: each sees its own rxe0 on its own
 * NIC, and the two devices are distinct.  Runs in both guests at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

TEST(each_guest_sees_its_own_rxe)
{
	const char *dir = env_or_die("DSMEM_RUN_DIR");
	int id = atoi(env_or_die("DSMEM_GUEST_ID"));
	char mine[256], theirs[256], buf[64];
	struct ds_dev_info d;
	struct ds_ctx *ctx;
	FILE *f;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, ds_dev_get(ctx, "rxe0", &d)) TH_LOG("%s", ds_ctx_errmsg(ctx));
	EXPECT_STREQ(env_or_die("DSMEM_NETDEV"), d.ports[0].netdev);
	EXPECT_EQ(4, d.ports[0].state);
	ds_ctx_close(ctx);

	/* the peer answers over the link the RDMA traffic will use */
	EXPECT_EQ(0, run("ping -c 1 -W 5 %s >/dev/null", env_or_die("DSMEM_PEER_ADDR")));

	/* publish our GUID on the shared run directory, read the peer's */
	snprintf(mine, sizeof(mine), "%s/guid.%d", dir, id);
	snprintf(theirs, sizeof(theirs), "%s/guid.%d", dir, !id);
	f = fopen(mine, "we");
	ASSERT_NE(NULL, f);
	fprintf(f, "%" PRIx64 "\n", d.node_guid);
	fclose(f);
	for (int i = 0; i < 300 && read_file(theirs, buf, sizeof(buf)); i++)
		usleep(100000);
	ASSERT_EQ(0, read_file(theirs, buf, sizeof(buf))) TH_LOG("peer never published");
	EXPECT_NE(d.node_guid, strtoull(buf, NULL, 16)) TH_LOG("both guests see one device");
}

/* Wait (~30 s) for the other guest to publish a file; its text in buf. */
static int await_file(const char *dir, const char *name, char *buf, size_t n)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 300; i++) {
		if (!read_file(path, buf, n))
			return 0;
		usleep(100000);
	}
	return -ETIMEDOUT;
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
	ASSERT_EQ(0, ds_node_add(ctx, id + 1, "rxe0", 7471));
	if (id == 1) {
		struct ds_peer_info *peers = NULL;
		uint64_t theirs = 0;
		size_t n;

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
	ASSERT_EQ(0, ds_peer_add(ctx, 1, env_or_die("DSMEM_PEER_ADDR"), 7471, &peer));
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

TEST_HARNESS_MAIN
