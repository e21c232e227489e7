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

TEST_HARNESS_MAIN
