// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tenants: a node has an owner, a group and a mode, and attaching a
 * /dev/dsmem descriptor to it is checked against them as opening a file
 * is, so that an application runs without root on the node its admin
 * gave it, and not on another's.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

enum {
	NOBODY = 65534,
	NODE_MINE = 71,		/* nobody's */
	NODE_THEIRS = 72,	/* root's */
	NODE_MEMORY = 73,	/* root's, with a segment granted to NODE_MINE */
	PORT_MINE = 7871,
	PORT_THEIRS = 7872,
	PORT_MEMORY = 7873,
	LEN = 64 << 10,
};

/* DSMEM_IOC_ATTACH of a fresh descriptor to node: 0 or -errno. */
static int attach_errno(uint32_t node)
{
	struct dsmem_ioc_attach a = { .node_id = node };
	int fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, DSMEM_IOC_ATTACH, &a) ? -errno : 0;
	close(fd);
	return ret;
}

/* Runs step(arg) as nobody, without privilege: its exit status. */
static int as_nobody(int (*step)(uint32_t), uint32_t arg)
{
	pid_t pid = fork_nobody();

	if (!pid)
		_exit(step(arg));
	return pid < 0 ? -1 : child_step(pid);
}

/* 0 if nobody attaches to node, 3 if refused with EACCES, else 4. */
static int nobody_attach(uint32_t node)
{
	int ret = attach_errno(node);

	return !ret ? 0 : ret == -EACCES ? 3 : 4;
}

static int owner_set(struct ds_ctx *ctx, uint32_t id, uint32_t uid, uint32_t gid,
		     uint32_t mode)
{
	struct ds_node_owner o = { .uid = uid, .gid = gid, .mode = mode };

	return ds_node_set_owner(ctx, id, &o);
}

FIXTURE(tenant) {
	struct ds_ctx *ctx;
	/* the module's parameters as they were, put back in teardown */
	uint64_t node_mrs, ring_threads, node_rings;
};

#define RING_CG	CG_ROOT "/dsmem-ring-test"

FIXTURE_SETUP(tenant)
{
	ASSERT_EQ(0, param_get("node_mrs", &self->node_mrs));
	ASSERT_EQ(0, param_get("ring_threads", &self->ring_threads));
	ASSERT_EQ(0, param_get("node_rings", &self->node_rings));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, NODE_MINE, "rxe0", PORT_MINE))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, NODE_THEIRS, "rxe0", PORT_THEIRS));
}

FIXTURE_TEARDOWN(tenant)
{
	/* whatever a case left: its parameters, and this process in a cgroup */
	param_set("node_mrs", self->node_mrs);
	param_set("ring_threads", self->ring_threads);
	param_set("node_rings", self->node_rings);
	if (!access(RING_CG, F_OK)) {
		cg_write(CG_ROOT "/cgroup.procs", "%d", getpid());
		rmdir(RING_CG);
	}
	ds_node_del(self->ctx, NODE_MEMORY);
	ds_node_del(self->ctx, NODE_THEIRS);
	ds_node_del(self->ctx, NODE_MINE);
	ds_ctx_close(self->ctx);
}

/* A node is its creator's alone until the admin says otherwise. */
TEST_F_TIMEOUT(tenant, new_node_is_its_creators_with_mode_0600, 300)
{
	struct ds_node_owner o;

	ASSERT_EQ(0, ds_node_get_owner(self->ctx, NODE_MINE, &o));
	EXPECT_EQ(getuid(), o.uid);
	EXPECT_EQ(getgid(), o.gid);
	EXPECT_EQ(0600, o.mode);
	EXPECT_EQ(3, as_nobody(nobody_attach, NODE_MINE));
}

/*
 * The owner's bits for the owner, the group's for a member, the others'
 * for the rest, each needing read and write; a refusal is counted and
 * leaves the descriptor free to attach where it may.
 */
TEST_F_TIMEOUT(tenant, attach_is_checked_as_opening_a_file, 300)
{
	uint64_t denied = stat_value(NULL, "ioctl_denied");

	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, 0, 0600));
	EXPECT_EQ(0, as_nobody(nobody_attach, NODE_MINE));
	EXPECT_EQ(3, as_nobody(nobody_attach, NODE_THEIRS));
	EXPECT_EQ(denied + 1, stat_value(NULL, "ioctl_denied"));

	/* the group's bits, for a member of the group */
	ASSERT_EQ(0, owner_set(self->ctx, NODE_THEIRS, 0, NOBODY, 0660));
	EXPECT_EQ(0, as_nobody(nobody_attach, NODE_THEIRS));
	/* read alone is not enough: a descriptor writes too */
	ASSERT_EQ(0, owner_set(self->ctx, NODE_THEIRS, 0, NOBODY, 0640));
	EXPECT_EQ(3, as_nobody(nobody_attach, NODE_THEIRS));
	/* the others' bits, for one neither owner nor member */
	ASSERT_EQ(0, owner_set(self->ctx, NODE_THEIRS, 0, 0, 0606));
	EXPECT_EQ(0, as_nobody(nobody_attach, NODE_THEIRS));
	/* the owner's own bits decide for the owner, as for a file */
	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, 0, 0066));
	EXPECT_EQ(3, as_nobody(nobody_attach, NODE_MINE));
	/* and CAP_NET_ADMIN overrides */
	EXPECT_EQ(0, attach_errno(NODE_MINE));
}

/* As nobody: a refused attach, then one allowed on the same descriptor. */
static int refused_then_attached(uint32_t unused)
{
	struct dsmem_ioc_attach a = { .node_id = NODE_THEIRS };
	int fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);

	(void)unused;
	if (fd < 0)
		return 2;
	if (!ioctl(fd, DSMEM_IOC_ATTACH, &a) || errno != EACCES)
		return 3;
	a.node_id = NODE_MINE;
	if (ioctl(fd, DSMEM_IOC_ATTACH, &a))
		return 4;
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(tenant, refused_attach_leaves_the_descriptor_free, 300)
{
	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	EXPECT_EQ(0, as_nobody(refused_then_attached, 0));
}

/* As nobody: giving itself a node, or another mode, is refused. */
static int nobody_sets_owner(uint32_t node)
{
	struct ds_node_owner o = { .uid = NOBODY, .gid = NOBODY, .mode = 0666 };
	struct ds_ctx *ctx;
	int ret;

	if (ds_ctx_open(&ctx))
		return 2;
	ret = ds_node_set_owner(ctx, node, &o) == -EPERM ? 0 : 3;
	ds_ctx_close(ctx);
	return ret;
}

TEST_F_TIMEOUT(tenant, only_an_admin_changes_the_owner, 300)
{
	struct ds_node_owner o;

	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	/* not even the owner: who may use a node is the admin's to say */
	EXPECT_EQ(0, as_nobody(nobody_sets_owner, NODE_MINE));
	EXPECT_EQ(0, as_nobody(nobody_sets_owner, NODE_THEIRS));
	ASSERT_EQ(0, ds_node_get_owner(self->ctx, NODE_THEIRS, &o));
	EXPECT_EQ(0, o.uid);
	EXPECT_EQ(0600, o.mode);

	/* bad values are refused and change nothing */
	EXPECT_EQ(-EINVAL, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 01000));
	EXPECT_EQ(-EINVAL, owner_set(self->ctx, NODE_MINE, (uint32_t)-1, NOBODY, 0600));
	EXPECT_EQ(-EINVAL, owner_set(self->ctx, NODE_MINE, NOBODY, (uint32_t)-1, 0600));
	ASSERT_EQ(0, ds_node_get_owner(self->ctx, NODE_MINE, &o));
	EXPECT_EQ(NOBODY, o.uid);
	EXPECT_EQ(NOBODY, o.gid);
	EXPECT_EQ(0600, o.mode);
	EXPECT_EQ(-ENOENT, owner_set(self->ctx, 4242, NOBODY, NOBODY, 0600));
}

/* What dsctl shows, and what it sets. */
TEST_F_TIMEOUT(tenant, dsctl_sets_and_shows_the_owner, 300)
{
	char out[4096];
	struct ds_node_owner o;

	ASSERT_EQ(0, run("%s node set id %d owner nobody group %d mode 0640",
			 dsctl_path(), NODE_MINE, NOBODY));
	ASSERT_EQ(0, ds_node_get_owner(self->ctx, NODE_MINE, &o));
	EXPECT_EQ(NOBODY, o.uid);
	EXPECT_EQ(NOBODY, o.gid);
	EXPECT_EQ(0640, o.mode);
	/* what is not given stays */
	ASSERT_EQ(0, run("%s node set id %d mode 660", dsctl_path(), NODE_MINE));
	ASSERT_EQ(0, ds_node_get_owner(self->ctx, NODE_MINE, &o));
	EXPECT_EQ(NOBODY, o.uid);
	EXPECT_EQ(0660, o.mode);
	ASSERT_EQ(0, run("%s -j node show id %d > /tmp/tenant.out", dsctl_path(), NODE_MINE));
	ASSERT_EQ(0, read_file("/tmp/tenant.out", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"owner\":65534")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"mode\":\"0660\"")) TH_LOG("%s", out);
	EXPECT_NE(0, run("%s node set id %d mode 999 2>/dev/null", dsctl_path(), NODE_MINE));
	EXPECT_NE(0, run("%s node set id %d owner no-such-user-here 2>/dev/null",
			 dsctl_path(), NODE_MINE));
	/* a node added with its owner */
	ASSERT_EQ(0, run("%s node add id %d dev rxe0 port %d owner nobody mode 0600",
			 dsctl_path(), NODE_MEMORY, PORT_MEMORY));
	ASSERT_EQ(0, ds_node_get_owner(self->ctx, NODE_MEMORY, &o));
	EXPECT_EQ(NOBODY, o.uid);
	EXPECT_EQ(getgid(), o.gid);
	EXPECT_EQ(0600, o.mode);
}

/*
 * As nobody, on its own node: remote memory written and read back through
 * the library's data path, with its buffer pinned under nobody's
 * RLIMIT_MEMLOCK.  0, or the step that failed.
 */
static int nobody_moves_data(uint32_t unused)
{
	static uint8_t out[LEN], in[LEN];
	const char *seg = getenv("TENANT_SEG");
	uint64_t gaddr = seg ? strtoull(seg, NULL, 0) : 0;
	struct ds_xfer *x;
	int ret = 0;

	(void)unused;
	if (!gaddr)
		return 2;
	for (size_t i = 0; i < LEN; i++)
		out[i] = (uint8_t)(i * 7 + 3);
	if (ds_xfer_open(NODE_MINE, &x))
		return 3;
	if (ds_write(x, gaddr, out, LEN))
		ret = 4;
	else if (ds_read(x, gaddr, in, LEN))
		ret = 5;
	else if (memcmp(in, out, LEN))
		ret = 6;
	ds_xfer_close(x);
	if (ret)
		return ret;
	/* and the node it does not own stays out of its reach */
	return ds_xfer_open(NODE_THEIRS, &x) == -EACCES ? 0 : 7;
}

TEST_F_TIMEOUT(tenant, unprivileged_application_moves_data_on_its_node, 300)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	char gaddr[32];
	struct ds_seg_info s;
	uint32_t peer;

	ASSERT_EQ(0, test_node_add(self->ctx, NODE_MEMORY, "rxe0", PORT_MEMORY));
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, NODE_MEMORY, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, ds_seg_add(self->ctx, NODE_MEMORY, 1 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, NODE_MEMORY, 1, NODE_MINE, DS_PERM_ALL));
	ASSERT_EQ(0, ds_peer_add(self->ctx, NODE_MINE, addr, PORT_MEMORY, &peer))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, wait_rsegs(self->ctx, NODE_MINE, peer, 1));
	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	snprintf(gaddr, sizeof(gaddr), "%#llx", (unsigned long long)s.addr);
	ASSERT_EQ(0, setenv("TENANT_SEG", gaddr, 1));
	EXPECT_EQ(0, as_nobody(nobody_moves_data, 0));
}

/*
 * As nobody, owner of NODE_MINE: a segment made, granted to a peer's node,
 * listed with its grant, revoked and deleted, all without privilege; the
 * same asked of root's NODE_THEIRS is refused.  0, or the step that
 * failed.
 */
static int nobody_works_its_node(uint32_t theirs_seg)
{
	struct ds_seg_info s, got, *segs = NULL;
	struct ds_peer_info *peers = NULL;
	struct ds_ctx *ctx;
	size_t n = 0, i;
	int ret = 0;

	if (ds_ctx_open(&ctx))
		return 2;
	if (ds_seg_add(ctx, NODE_MINE, 1 << 20, -1, DS_TRANSLATE_SEGMENT, &s)) {
		ret = 3;
		goto out;
	}
	if (ds_seg_grant(ctx, NODE_MINE, s.id, NODE_THEIRS, DS_PERM_READ) ||
	    ds_seg_get(ctx, NODE_MINE, s.id, &got) || got.ngrants != 1 ||
	    got.grants[0].remote_node != NODE_THEIRS) {
		ret = 4;
		goto out;
	}
	if (ds_peer_list(ctx, NODE_MINE, &peers, &n) || n != 0) {
		ret = 5;
		goto out;
	}
	free(peers);
	/* a dump of every node's segments holds ours and none of root's */
	if (ds_seg_list(ctx, 0, &segs, &n)) {
		ret = 6;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (segs[i].node_id != NODE_MINE)
			ret = 7;
	free(segs);
	if (ret || n != 1)
		goto out;
	/* root's node: nothing to make, see, grant, or take away */
	if (ds_seg_add(ctx, NODE_THEIRS, 1 << 20, -1, DS_TRANSLATE_SEGMENT, NULL) != -EACCES ||
	    ds_seg_list(ctx, NODE_THEIRS, &segs, &n) != -EACCES ||
	    ds_seg_get(ctx, NODE_THEIRS, theirs_seg, &got) != -EACCES ||
	    ds_seg_grant(ctx, NODE_THEIRS, theirs_seg, NODE_MINE, DS_PERM_ALL) != -EACCES ||
	    ds_seg_del(ctx, NODE_THEIRS, theirs_seg) != -EACCES ||
	    ds_peer_list(ctx, NODE_THEIRS, &peers, &n) != -EACCES) {
		ret = 8;
		goto out;
	}
	/* and peers stay the admin's to give, on its own node too */
	if (ds_peer_add(ctx, NODE_MINE, "127.0.0.1", PORT_THEIRS, NULL) != -EPERM) {
		ret = 9;
		goto out;
	}
	if (ds_seg_revoke(ctx, NODE_MINE, s.id, NODE_THEIRS) ||
	    ds_seg_del(ctx, NODE_MINE, s.id))
		ret = 10;
out:
	ds_ctx_close(ctx);
	return ret;
}

TEST_F_TIMEOUT(tenant, owner_makes_and_grants_segments_on_its_node, 300)
{
	struct ds_seg_info theirs, got;
	struct ds_node_info node;

	ASSERT_EQ(0, ds_seg_add(self->ctx, NODE_THEIRS, 1 << 20, -1, DS_TRANSLATE_SEGMENT,
				&theirs));
	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	EXPECT_EQ(0, as_nobody(nobody_works_its_node, theirs.id));
	/* root's segment is as it was, ungranted */
	ASSERT_EQ(0, ds_seg_get(self->ctx, NODE_THEIRS, theirs.id, &got));
	EXPECT_EQ(0, got.ngrants);
	ASSERT_EQ(0, ds_node_get(self->ctx, NODE_THEIRS, &node));
	EXPECT_EQ(1, node.seg_count);
	ASSERT_EQ(0, ds_node_get(self->ctx, NODE_MINE, &node));
	EXPECT_EQ(0, node.seg_count);
}

/*
 * As nobody: its own node described in full, root's only as existing and
 * whose it is, through the library and dsctl alike.
 */
static int nobody_looks_at_nodes(uint32_t unused)
{
	struct ds_node_info mine, theirs, *nodes = NULL;
	struct ds_node_owner o;
	struct ds_node_dev dev;
	struct ds_ctx *ctx;
	size_t n = 0, i, seen = 0;
	int ret = 0;

	(void)unused;
	if (ds_ctx_open(&ctx))
		return 2;
	if (ds_node_get(ctx, NODE_MINE, &mine) || mine.flags || mine.port != PORT_MINE ||
	    !mine.dev_name[0]) {
		ret = 3;
		goto out;
	}
	if (ds_node_get(ctx, NODE_THEIRS, &theirs) || theirs.flags != DS_NODE_F_NOT_YOURS ||
	    theirs.port || theirs.dev_name[0] || theirs.key[0] || theirs.seg_count) {
		ret = 4;
		goto out;
	}
	if (ds_node_get_owner(ctx, NODE_THEIRS, &o) || o.uid != 0 || o.mode != 0600 ||
	    ds_node_devs(ctx, NODE_THEIRS, &dev, 1) != -EACCES) {
		ret = 5;
		goto out;
	}
	if (ds_node_list(ctx, &nodes, &n)) {
		ret = 6;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (nodes[i].id == NODE_MINE && !nodes[i].flags)
			seen |= 1;
		if (nodes[i].id == NODE_THEIRS && nodes[i].flags == DS_NODE_F_NOT_YOURS &&
		    !nodes[i].port)
			seen |= 2;
	}
	free(nodes);
	if (seen != 3) {
		ret = 7;
		goto out;
	}
out:
	ds_ctx_close(ctx);
	return ret;
}

TEST_F_TIMEOUT(tenant, others_see_only_that_a_node_exists_and_whose, 300)
{
	char out[4096];

	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	EXPECT_EQ(0, as_nobody(nobody_looks_at_nodes, 0));

	/*
	 * dsctl says the same, run by root without CAP_NET_ADMIN on a node
	 * root does not own: the checkout, dsctl in it, may not be readable
	 * by nobody.
	 */
	ASSERT_EQ(0, owner_set(self->ctx, NODE_THEIRS, NOBODY, NOBODY, 0600));
	ASSERT_EQ(0, run("setpriv --bounding-set -net_admin %s -j node show id %d > /tmp/tenant.out",
			 dsctl_path(), NODE_THEIRS));
	ASSERT_EQ(0, read_file("/tmp/tenant.out", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"access\":\"none\"")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"owner\":65534")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "\"port\"")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "\"key\"")) TH_LOG("%s", out);
	ASSERT_EQ(0, run("setpriv --bounding-set -net_admin %s node show > /tmp/tenant.out",
			 dsctl_path()));
	ASSERT_EQ(0, read_file("/tmp/tenant.out", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "access none")) TH_LOG("%s", out);
	/* and its segments and Slope part are not to be read */
	EXPECT_EQ(1, run("setpriv --bounding-set -net_admin %s segment show node %d 2>/dev/null",
			 dsctl_path(), NODE_THEIRS));
	EXPECT_EQ(1, run("setpriv --bounding-set -net_admin %s slope show node %d 2>/dev/null",
			 dsctl_path(), NODE_THEIRS));
}

enum { NODE_MRS = 4 };

/*
 * Registers pages of buf on node through two descriptors, alternately,
 * until one is refused: how many were taken, or -1.  *err: the refusal.
 */
static int register_until_refused(uint32_t node, uint8_t *buf, struct ds_xfer *x[2],
				  uint32_t *mrs, int *err)
{
	int n;

	if (ds_xfer_open(node, &x[0]) || ds_xfer_open(node, &x[1]))
		return -1;
	for (n = 0; n < 2 * NODE_MRS; n++) {
		*err = ds_mr_reg(x[n % 2], buf + (size_t)n * 4096, 4096, &mrs[n]);
		if (*err)
			return n;
	}
	return n;
}

/* As nobody on NODE_MINE: its share of registrations, and no more. */
static int nobody_registers(uint32_t unused)
{
	static uint8_t buf[2 * NODE_MRS * 4096] __attribute__((aligned(4096)));
	uint32_t mrs[2 * NODE_MRS];
	struct ds_xfer *x[2] = { NULL, NULL };
	int err = 0, n;

	(void)unused;
	n = register_until_refused(NODE_MINE, buf, x, mrs, &err);
	if (n != NODE_MRS)
		return n < 0 ? 2 : 3;
	if (err != -ENOSPC)
		return 4;
	/* one given back is one to take again */
	if (ds_mr_dereg(x[0], mrs[0]) || ds_mr_reg(x[1], buf, 4096, &mrs[0]))
		return 5;
	if (ds_mr_reg(x[0], buf + 4096, 4096, &mrs[1]) != -ENOSPC)
		return 6;
	/* and a descriptor closed gives back all of its */
	ds_xfer_close(x[0]);
	if (ds_mr_reg(x[1], buf + 2 * 4096, 4096, &mrs[2]))
		return 7;
	ds_xfer_close(x[1]);
	return 0;
}

/*
 * The token cache's indexes are the host's: a node's descriptors hold at
 * most node_mrs registrations together, so that one tenant registering
 * without end leaves the others theirs.  Root fills NODE_THEIRS's share
 * and keeps it; nobody then gets all of NODE_MINE's, and is refused the
 * next, counted.
 */
TEST_F_TIMEOUT(tenant, a_node_holds_its_share_of_registrations, 300)
{
	static uint8_t buf[2 * NODE_MRS * 4096] __attribute__((aligned(4096)));
	uint32_t mrs[2 * NODE_MRS];
	struct ds_xfer *x[2] = { NULL, NULL };
	uint64_t full;
	int err = 0, n, mine;

	ASSERT_EQ(0, param_set("node_mrs", NODE_MRS));
	full = stat_value(NULL, "mr_node_full");
	n = register_until_refused(NODE_THEIRS, buf, x, mrs, &err);
	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	mine = as_nobody(nobody_registers, 0);
	ds_xfer_close(x[0]);
	ds_xfer_close(x[1]);
	EXPECT_EQ(NODE_MRS, n);
	EXPECT_EQ(-ENOSPC, err);
	EXPECT_EQ(0, mine);
	/* root's one refusal, nobody's two */
	EXPECT_EQ(full + 3, stat_value(NULL, "mr_node_full"));
}

/* The ring thread polling for process pid ("dsmem-sq/PID"), or 0. */
static pid_t ring_thread_of(pid_t pid)
{
	char want[32], path[300], comm[64];
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	/* as the kernel keeps it: 15 characters at most, then a newline */
	snprintf(want, sizeof(want), "dsmem-sq/%d", (int)pid);
	want[15] = '\0';
	strcat(want, "\n");
	while (d && !found && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if (!read_file(path, comm, sizeof(comm)) && !strcmp(comm, want))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* As nobody on NODE_MINE, whose share is one ring: one, not two. */
static int nobody_opens_rings(uint32_t unused)
{
	struct ds_xfer *x1, *x2, *x3;

	(void)unused;
	if (ds_xfer_open(NODE_MINE, &x1))
		return 2;
	if (ds_xfer_rings(x1) != 1)
		return 3;
	/* the host has one more, the node none: the ioctl path */
	if (ds_xfer_open(NODE_MINE, &x2))
		return 4;
	if (ds_xfer_rings(x2) != 0)
		return 5;
	ds_xfer_close(x1);
	if (ds_xfer_open(NODE_MINE, &x3) || ds_xfer_rings(x3) != 1)
		return 6;
	ds_xfer_close(x2);
	ds_xfer_close(x3);
	return 0;
}

/*
 * A ring's thread polls for one program: a node's descriptors hold at
 * most node_rings of the host's ring_threads, and the thread runs in its
 * program's cgroups, so that its CPU time is charged there.  Root holds
 * NODE_THEIRS's one ring; nobody gets NODE_MINE's one and is refused a
 * second though the host has one left (counted), and gets one again
 * after closing.  Then a ring opened from inside a cgroup has its thread
 * there (the Debian kernel: the debug kernel has no memory cgroups).
 */
TEST_F_TIMEOUT(tenant, a_node_holds_its_share_of_rings, 300)
{
	uint64_t refused;
	struct ds_xfer *y, *z;
	char cg[256] = "", path[64];
	int ret, mine, rings;
	pid_t tid = 0;

	ASSERT_EQ(0, param_set("ring_threads", 3));
	ASSERT_EQ(0, param_set("node_rings", 1));
	refused = stat_value(NULL, "rings_refused");
	ASSERT_EQ(0, ds_xfer_open(NODE_THEIRS, &y));
	rings = ds_xfer_rings(y);
	ASSERT_EQ(0, owner_set(self->ctx, NODE_MINE, NOBODY, NOBODY, 0600));
	mine = as_nobody(nobody_opens_rings, 0);
	ds_xfer_close(y);

	ret = cg_make(RING_CG, 1ULL << 30);
	if (!ret) {
		ASSERT_EQ(0, cg_write(RING_CG "/cgroup.procs", "%d", getpid()));
		ret = ds_xfer_open(NODE_THEIRS, &z);
		ASSERT_EQ(0, cg_write(CG_ROOT "/cgroup.procs", "%d", getpid()));
		ASSERT_EQ(0, ret);
		EXPECT_EQ(1, ds_xfer_rings(z));
		tid = ring_thread_of(getpid());
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)tid);
		EXPECT_NE(0, tid);
		EXPECT_EQ(0, read_file(path, cg, sizeof(cg)));
		ds_xfer_close(z);
		/*
		 * The thread has stopped, but it leaves its cgroup a little
		 * after (cgroup_exit): tried a bounded number of times.
		 */
		for (int i = 0; i < 200 && rmdir(RING_CG) && errno == EBUSY; i++)
			usleep(10000);
		EXPECT_NE(0, access(RING_CG, F_OK));
	} else {
		TH_LOG("no memory cgroups here (%s): the thread's cgroup is not looked at",
		       strerror(-ret));
	}
	EXPECT_EQ(1, rings);
	EXPECT_EQ(0, mine);
	EXPECT_EQ(refused + 1, stat_value(NULL, "rings_refused"));
	if (tid)
		EXPECT_STREQ("0::/dsmem-ring-test\n", cg);
}

TEST_HARNESS_MAIN
