// SPDX-License-Identifier: BSD-2-Clause
/*
 * Network namespaces: a container sees the RDMA devices it may use
 * (all of them in the RDMA core's shared mode, those moved into it in
 * exclusive mode), over dsctl, lookups and events; and its own counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

/* dsctl's JSON device list as seen from namespace ns ("" = ours) */
static int devs_in(const char *ns, char *out, size_t size)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s%s %s -j dev > /tmp/ns.out 2>&1",
		 *ns ? "ip netns exec " : "", ns, dsctl_path());
	if (run("%s", cmd))
		return -1;
	return read_file("/tmp/ns.out", out, size);
}

/* The RDMA core changes netns mode only once extra namespaces are gone,
 * which happens asynchronously after 'ip netns del': tried until it
 * takes, within a generous bound (a slow host takes longer, and changes
 * no verdict). */
static int set_mode(const char *mode)
{
	for (int64_t end = now_ms() + 120000;; usleep(100000)) {
		if (!run("rdma system set netns %s 2>/dev/null", mode))
			return 0;
		if (now_ms() >= end)
			return -1;
	}
}

/*
 * Deletes namespace ns and returns once the kernel has torn it down: 0,
 * or -1 if that did not happen within two minutes (a hang's bound).
 *
 * 'ip netns del' only drops the last reference.  The RDMA core removes
 * the namespace's compat devices later, in the netns cleanup worker, and
 * 6.1 races a netns mode switch against that removal (a KASAN
 * use-after-free in kobject_uevent_env, seen in the debug tier).  A veth
 * pair with one end inside marks the end of the teardown: the cleanup
 * runs each pernet exit in the reverse order of registration, so ib_core's
 * (registered when it loads) ends before the core's device exit deletes
 * the inner end, and its outer peer with it.  The outer end vanishing is
 * therefore the event that the RDMA core is done with the namespace.
 */
/* Drops namespace ns's name with the veth mark in it; 0 or -1. */
static int netns_del_marked(const char *ns)
{
	run("ip link del dsnsmark 2>/dev/null");
	if (run("ip link add dsnsmark type veth peer name dsnsmark1 netns %s", ns) ||
	    run("ip netns del %s", ns))
		return -1;
	return 0;
}

/* 0 once the marked namespace is torn down, -1 if not within two minutes */
static int netns_marked_gone(void)
{
	for (int64_t end = now_ms() + 120000;; usleep(100000)) {
		if (run("ip link show dsnsmark >/dev/null 2>&1"))
			return 0;
		if (now_ms() >= end)
			return -1;
	}
}

static int netns_del_and_wait(const char *ns)
{
	char path[64];

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	if (access(path, F_OK))
		return 0;
	if (netns_del_marked(ns))
		return -1;
	return netns_marked_gone();
}

/*
 * A monitor inside the namespace dsns, in a child process: it opens, says
 * ready, waits for go, then exits with check(mon).  Device events are
 * queued before 'rdma link add' returns, so the check runs on what the
 * namespace was told, with no waiting for things that should not come.
 */
struct ns_monitor {
	pid_t pid;
	int go;
};

static int ns_monitor_start(struct ns_monitor *m, int (*check)(struct ds_monitor *))
{
	int ready[2], go[2];
	char c;

	if (pipe(ready) || pipe(go))
		return -1;
	m->pid = fork();
	if (m->pid < 0)
		return -1;
	if (m->pid == 0) {
		int fd = open("/var/run/netns/dsns", O_RDONLY | O_CLOEXEC);
		struct ds_monitor *mon;

		if (fd < 0 || setns(fd, CLONE_NEWNET) || ds_monitor_open(&mon))
			_exit(2);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(check(mon));
	}
	close(ready[1]);
	close(go[0]);
	m->go = go[1];
	return read(ready[0], &c, 1) == 1 ? 0 : -1;
}

/* The child's verdict: 0 when its check held. */
static int ns_monitor_finish(struct ns_monitor *m)
{
	int status;

	if (write(m->go, "g", 1) != 1 || waitpid(m->pid, &status, 0) != m->pid ||
	    !WIFEXITED(status))
		return -1;
	close(m->go);
	return WEXITSTATUS(status);
}

static int saw_rxe9_added(struct ds_monitor *mon)
{
	return wait_event(mon, DS_EVENT_DEV_NEW, "rxe9") ? 4 : 0;
}

static int saw_nothing(struct ds_monitor *mon)
{
	struct ds_event ev;

	return ds_monitor_next(mon, &ev, 0) == -EAGAIN ? 0 : 4;
}

FIXTURE(ns) {
	int unused;
};

FIXTURE_SETUP(ns)
{
	ASSERT_EQ(0, netns_del_and_wait("dsns"));
	ASSERT_EQ(0, set_mode("shared"));
	ASSERT_EQ(0, run("ip netns add dsns"));
}

FIXTURE_TEARDOWN(ns)
{
	run("rdma link delete rxe9 2>/dev/null; "
	    "ip netns exec dsns rdma link delete rxe9 2>/dev/null");
	EXPECT_EQ(0, netns_del_and_wait("dsns"));
	set_mode("shared");
}

TEST_F_TIMEOUT(ns, shared_mode_container_sees_devices_and_events, 120)
{
	const char *spare = env_or_die("DSMEM_SPARE_NETDEV");
	struct ns_monitor mon;
	char out[8192];

	ASSERT_EQ(0, devs_in("dsns", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"ifname\":\"rxe0\"")) TH_LOG("%s", out);

	ASSERT_EQ(0, ns_monitor_start(&mon, saw_rxe9_added));
	ASSERT_EQ(0, run("rdma link add rxe9 type rxe netdev %s", spare));
	EXPECT_EQ(0, ns_monitor_finish(&mon)) TH_LOG("no dev_new rxe9 in the namespace");
	ASSERT_EQ(0, run("rdma link delete rxe9"));
}

/*
 * rxe devices cannot change namespace (and new devices start in the
 * initial one), so in exclusive mode the container must see none: not in
 * a dump, not by name, not as an event.
 */
/* 76 s in one CI run's debug tier, past 120 s in a slower one */
TEST_F_TIMEOUT(ns, exclusive_mode_container_sees_no_foreign_device, 300)
{
	const char *spare = env_or_die("DSMEM_SPARE_NETDEV");
	struct ns_monitor mon;
	char out[8192];

	/*
	 * Exclusive mode can only be entered with no extra namespace, and
	 * only once the kernel has finished tearing the last one down (see
	 * netns_del_and_wait: 6.1's switch races with that teardown).
	 */
	ASSERT_EQ(0, netns_del_and_wait("dsns"));
	ASSERT_EQ(0, set_mode("exclusive")) TH_LOG("rdma system set netns exclusive");
	ASSERT_EQ(0, run("ip netns add dsns"));

	ASSERT_EQ(0, devs_in("dsns", out, sizeof(out)));
	EXPECT_STREQ("[]\n", out);
	EXPECT_EQ(1, run("ip netns exec dsns %s dev show rxe0 2>/dev/null", dsctl_path()));
	ASSERT_EQ(0, devs_in("", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"ifname\":\"rxe0\"")) TH_LOG("%s", out);

	ASSERT_EQ(0, ns_monitor_start(&mon, saw_nothing));
	ASSERT_EQ(0, run("rdma link add rxe9 type rxe netdev %s", spare));
	EXPECT_EQ(0, ns_monitor_finish(&mon)) TH_LOG("the namespace heard of rxe9");
	ASSERT_EQ(0, devs_in("dsns", out, sizeof(out)));
	EXPECT_STREQ("[]\n", out);
}

/* n ioctls /dev/dsmem does not know: each counted as ioctl_unknown */
static int bad_ioctls(int n)
{
	int fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	for (int i = 0; i < n && !ret; i++)
		if (ioctl(fd, _IO('x', 0)) != -1 || errno != ENOTTY)
			ret = -EPROTO;
	close(fd);
	return ret;
}

/* Moves the calling process into namespace ns: 0, or -1. */
static int enter_netns(const char *ns)
{
	char path[128];
	int fd, ret;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = setns(fd, CLONE_NEWNET) ? -1 : 0;
	close(fd);
	return ret;
}

/*
 * In a child moved into namespace ns: its counters start at zero, count
 * what it does, and its reset clears them.  0, or the step that failed.
 */
static int counts_in(const char *ns)
{
	struct ds_ctx *ctx;
	int ret;

	if (enter_netns(ns))
		return 1;
	if (stat_value(NULL, "ioctl_unknown") || stat_value(NULL, "ioctl_calls"))
		return 2;
	if (bad_ioctls(3))
		return 3;
	if (stat_value(NULL, "ioctl_unknown") != 3)
		return 4;
	if (ds_ctx_open(&ctx))
		return 5;
	ret = ds_stats_reset(ctx);
	ds_ctx_close(ctx);
	if (ret)
		return 6;
	return stat_value(NULL, "ioctl_unknown") ? 7 : 0;
}

/*
 * Counters are each namespace's own: a container's start at zero, count
 * what its processes do and reset only its own; the initial namespace's
 * neither see the container's counts nor lose theirs to its reset.
 */
TEST_F_TIMEOUT(ns, statistics_are_the_namespace_own, 120)
{
	uint64_t unknown;
	pid_t pid;
	int st;

	ASSERT_EQ(0, bad_ioctls(1));
	unknown = stat_value(NULL, "ioctl_unknown");
	ASSERT_NE(~0ULL, unknown);
	ASSERT_LT(0, unknown);
	pid = fork();
	if (!pid)
		_exit(counts_in("dsns"));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("the namespace's step %d failed", WEXITSTATUS(st));
	EXPECT_EQ(unknown, stat_value(NULL, "ioctl_unknown"));
	ASSERT_EQ(0, bad_ioctls(1));
	EXPECT_EQ(unknown + 1, stat_value(NULL, "ioctl_unknown"));
}

enum { NS_NODE = 61, NS_PORT = 7861 };

/* How many nodes with id are listed in the caller's namespace, at port. */
static int nodes_listed(struct ds_ctx *ctx, uint32_t id, uint16_t port)
{
	struct ds_node_info *nodes;
	size_t n;
	int found = 0;

	if (ds_node_list(ctx, &nodes, &n))
		return -1;
	for (size_t i = 0; i < n; i++)
		found += nodes[i].id == id && nodes[i].port == port;
	free(nodes);
	return found;
}

/*
 * In namespace ns: make node NS_NODE at NS_PORT, see it, and only it,
 * then delete it so that the namespace can go.  0, or the step that
 * failed.
 */
static int own_node_in(const char *ns)
{
	struct ds_ctx *ctx;
	int ret = 0;

	if (enter_netns(ns))
		return 1;
	if (ds_ctx_open(&ctx))
		return 2;
	if (test_node_add(ctx, NS_NODE, "rxe0", NS_PORT))
		ret = 3;
	else if (nodes_listed(ctx, NS_NODE, NS_PORT) != 1)
		ret = 4;
	else if (ds_node_del(ctx, NS_NODE))
		ret = 5;
	else if (nodes_listed(ctx, NS_NODE, NS_PORT) != 0)
		ret = 6;
	ds_ctx_close(ctx);
	return ret;
}

/*
 * Node ids are each namespace's own, as its addresses and ports are: a
 * container makes its node 61 on port 7861 beside the host's node 61 on
 * the same port, each lists its own once, and the container deleting its
 * node leaves the host's.  (On the old module the container's add was
 * refused: a node with this id existed.)
 */
TEST_F_TIMEOUT(ns, node_ids_are_the_namespace_own, 120)
{
	struct ds_ctx *ctx;
	struct ds_node_info info;
	pid_t pid;
	int st;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, test_node_add(ctx, NS_NODE, "rxe0", NS_PORT));
	pid = fork();
	if (!pid)
		_exit(own_node_in("dsns"));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("the namespace's step %d failed", WEXITSTATUS(st));
	EXPECT_EQ(1, nodes_listed(ctx, NS_NODE, NS_PORT));
	EXPECT_EQ(0, ds_node_get(ctx, NS_NODE, &info));
	EXPECT_EQ(0, ds_node_del(ctx, NS_NODE));
	ds_ctx_close(ctx);
}

enum { NS_NSID = 7 };

/* In namespace ns: make node NS_NODE at NS_PORT and leave it there. */
static int node_left_in(const char *ns)
{
	struct ds_ctx *ctx;
	int ret;

	if (enter_netns(ns))
		return 1;
	if (ds_ctx_open(&ctx))
		return 2;
	ret = test_node_add(ctx, NS_NODE, "rxe0", NS_PORT) ? 3 : 0;
	ds_ctx_close(ctx);
	return ret;
}

/* As nobody: the container's nodes are neither listed nor deleted. */
static int netns_nodes_refused(void)
{
	struct ds_node_info *nodes = NULL, info;
	struct ds_ctx *ctx;
	size_t n;
	int ret = 0;

	if (ds_ctx_open(&ctx))
		return 2;
	if (ds_node_list_netns(ctx, NS_NSID, &nodes, &n) != -EPERM)
		ret = 3;
	else if (ds_node_get_netns(ctx, NS_NSID, NS_NODE, &info) != -EPERM)
		ret = 4;
	else if (ds_node_del_netns(ctx, NS_NSID, NS_NODE) != -EPERM)
		ret = 5;
	free(nodes);
	ds_ctx_close(ctx);
	return ret;
}

/*
 * A container that ends with a node in it: the node keeps its namespace
 * (its rdma_cm ids hold it), and the host's admin finds the node by the
 * namespace's id and deletes it, upon which the namespace goes.  Without
 * CAP_NET_ADMIN the namespace's nodes are neither listed nor deleted, and
 * an id the host does not know is ENOENT.
 */
TEST_F_TIMEOUT(ns, node_left_in_a_container_is_reached_by_netnsid, 300)
{
	struct ds_node_info *nodes = NULL, info;
	struct ds_ctx *ctx;
	size_t n = 0;
	pid_t pid;
	int st;

	ASSERT_EQ(0, run("ip netns set dsns %d", NS_NSID));
	pid = fork();
	if (!pid)
		_exit(node_left_in("dsns"));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		TH_LOG("the namespace's step %d failed", WEXITSTATUS(st));
	/* the container ends: no process in it and no name for it */
	ASSERT_EQ(0, netns_del_marked("dsns"));

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	ASSERT_EQ(0, ds_node_list_netns(ctx, NS_NSID, &nodes, &n));
	ASSERT_EQ(1, n);
	EXPECT_EQ(NS_NODE, nodes[0].id);
	EXPECT_EQ(NS_PORT, nodes[0].port);
	free(nodes);
	EXPECT_EQ(0, ds_node_get_netns(ctx, NS_NSID, NS_NODE, &info));
	EXPECT_EQ(-ENOENT, ds_node_get(ctx, NS_NODE, &info));
	EXPECT_EQ(-ENOENT, ds_node_list_netns(ctx, 4242, &nodes, &n));
	EXPECT_EQ(-ENOENT, ds_node_del_netns(ctx, 4242, NS_NODE));
	/* a negative id would name the caller's own namespace: refused */
	ASSERT_EQ(0, test_node_add(ctx, NS_NODE, "rxe0", NS_PORT));
	EXPECT_EQ(-EINVAL, ds_node_list_netns(ctx, -1, &nodes, &n));
	EXPECT_EQ(-EINVAL, ds_node_get_netns(ctx, -1, NS_NODE, &info));
	EXPECT_EQ(-EINVAL, ds_node_del_netns(ctx, -1, NS_NODE));
	EXPECT_EQ(0, ds_node_del(ctx, NS_NODE)) TH_LOG("the refused delete took the host's node");

	pid = fork_nobody();
	if (!pid)
		_exit(netns_nodes_refused());
	EXPECT_EQ(0, child_step(pid));
	EXPECT_EQ(0, ds_node_get_netns(ctx, NS_NSID, NS_NODE, &info))
		TH_LOG("the refused delete took the node");

	/* what an admin runs */
	EXPECT_EQ(0, run("%s -j node show netnsid %d | grep -q '\"node\":%d'",
			 dsctl_path(), NS_NSID, NS_NODE));
	EXPECT_EQ(0, run("%s node del id %d netnsid %d", dsctl_path(), NS_NODE, NS_NSID));
	/* the namespace goes with its last node, and its id with it */
	EXPECT_EQ(0, netns_marked_gone());
	EXPECT_EQ(-ENOENT, ds_node_list_netns(ctx, NS_NSID, &nodes, &n));
	ds_ctx_close(ctx);
}

TEST_HARNESS_MAIN
