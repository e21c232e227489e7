// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fault injection in the manner of syzkaller's fail-nth: every ioctl of
 * /dev/dsmem and every mutating operation of the dsmem netlink family runs
 * with the n-th allocation of the calling thread failing, n = 1, 2, ...,
 * until an attempt completes without reaching the injected fault.
 *
 * /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION_DEBUG_FS): writing n
 * makes the n-th should_fail() of this thread fail; each fault point
 * reached decrements it, so reading 0 back after the call means the fault
 * was injected, non-zero that the call did not get that far.  failslab and
 * fail_page_alloc count only allocations they may fail: by default none
 * that can sleep, hence ignore-gfp-wait=N (and, for pages, any order, any
 * zone).  verbose=0 keeps the console quiet; the probability stays 0, so
 * nothing but fail-nth fails.
 *
 * After every injected attempt: the answer is success or a clean errno,
 * the object is there exactly when the call said so, and the same call
 * without injection succeeds (then is undone), so that no half-made state
 * is left behind.  Leaks are for kmemleak, run after the suite.
 *
 * Only the caller's part is swept: connecting to a peer, granting, remote
 * allocation, transfers and migrations finish in workqueues and CQ
 * handlers, where fail-nth does not apply.  A netlink request counts the
 * socket buffer of the request, the reply and the ACK too; a lost ACK
 * (ENOBUFS on the socket) leaves the outcome unknown and only the state is
 * checked then.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <linux/dsmem_token.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define PORT_BASE	7690		/* node n listens on PORT_BASE + n */
#define PAGE		4096UL
#define NTH_MAX		2000		/* a sweep longer than this fails */
#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define DBGFS		"/sys/kernel/debug"

/* Points tried by every test, summed in the parent at exit. */
static uint64_t *total_points;
static pid_t main_pid;

__attribute__((constructor)) static void points_init(void)
{
	total_points = mmap(NULL, sizeof(*total_points), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (total_points == MAP_FAILED)
		total_points = NULL;
	main_pid = getpid();
}

__attribute__((destructor)) static void points_report(void)
{
	if (total_points && getpid() == main_pid)
		printf("# fail-nth: total %llu points\n",
		       (unsigned long long)__atomic_load_n(total_points, __ATOMIC_SEQ_CST));
}

/* ---- the injection knobs ---- */

static const struct knob {
	const char *path;
	const char *value;
} knobs[] = {
	{ DBGFS "/failslab/ignore-gfp-wait", "N" },
	{ DBGFS "/failslab/verbose", "0" },
	{ DBGFS "/fail_page_alloc/ignore-gfp-wait", "N" },
	{ DBGFS "/fail_page_alloc/ignore-gfp-highmem", "N" },
	{ DBGFS "/fail_page_alloc/min-order", "0" },
	{ DBGFS "/fail_page_alloc/verbose", "0" },
};

#define NKNOBS	(sizeof(knobs) / sizeof(knobs[0]))

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* ---- the fixture ---- */

FIXTURE(fn) {
	const char *why;	/* set: skip, for this reason */
	char saved[NKNOBS][32];
	int nth;		/* FAIL_NTH */
	unsigned int n;		/* armed for the next call; 0: none */
	bool hit;		/* the armed fault was injected */
	bool lost;		/* the ACK was lost: outcome unknown */
	struct raw_nl nl;
	struct ds_ctx *ctx;
	char reply[16384];	/* the last reply of a netlink do */
	/* what the operations work on */
	const char *addr;	/* DSMEM_LOCAL_ADDR */
	int fd;			/* attached to node 1 */
	int fd2;		/* attached to node 2, or a scratch descriptor */
	int tfd;		/* trace file */
	uint32_t peer;
	uint32_t seg;		/* node 2's segment */
	uint64_t seg_addr;
	uint64_t va;
	uint32_t handle;
	uint32_t token;
	uint8_t ttype;		/* its type */
	uint64_t task;
	uint64_t obj;		/* Slope object: address, 16 pages */
	uint64_t id;		/* tracker or migration */
	uint64_t mig;		/* a finished migration, kept */
	int32_t result;
	uint64_t cas[2];	/* CAS_RETRIES: original, other */
	uint8_t *buf;		/* 64 KiB, page aligned */
};

FIXTURE_SETUP(fn)
{
	struct stat st;
	unsigned int i;
	struct timeval tv = { .tv_sec = 30 };

	self->fd = self->fd2 = self->tfd = -1;
	self->nth = -1;
	if (access(FAIL_NTH, F_OK)) {
		self->why = "no " FAIL_NTH ": the kernel lacks CONFIG_FAULT_INJECTION_DEBUG_FS";
		return;
	}
	if (stat(DBGFS "/failslab", &st))
		mount("debugfs", DBGFS, "debugfs", 0, NULL);
	if (stat(DBGFS "/failslab", &st) || stat(DBGFS "/fail_page_alloc", &st)) {
		self->why = "no failslab or fail_page_alloc in debugfs (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC)";
		return;
	}
	for (i = 0; i < NKNOBS; i++) {
		char *nl;

		ASSERT_EQ(0, read_file(knobs[i].path, self->saved[i], sizeof(self->saved[i])))
			TH_LOG("%s", knobs[i].path);
		nl = strchr(self->saved[i], '\n');
		if (nl)
			*nl = '\0';
		ASSERT_EQ(0, write_str(knobs[i].path, knobs[i].value)) TH_LOG("%s", knobs[i].path);
	}
	self->nth = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->nth) TH_LOG("%s: %s", FAIL_NTH, strerror(errno));
	ASSERT_EQ(0, raw_open(&self->nl));
	ASSERT_EQ(0, setsockopt(self->nl.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	setsockopt(self->nl.fd, SOL_SOCKET, SO_RCVBUF, &(int){ 1 << 20 }, sizeof(int));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, test_key_add(self->ctx));
	self->addr = env_or_die("DSMEM_LOCAL_ADDR");
	self->buf = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
}

FIXTURE_TEARDOWN(fn)
{
	unsigned int i;

	if (self->why)
		return;
	if (self->nth >= 0)
		close(self->nth);
	if (self->fd >= 0)
		close(self->fd);
	if (self->fd2 >= 0)
		close(self->fd2);
	if (self->tfd >= 0)
		close(self->tfd);
	if (self->ctx) {
		ds_trace_stop(self->ctx, NULL);
		ds_node_del(self->ctx, 1);
		ds_node_del(self->ctx, 2);
		ds_ctx_close(self->ctx);
	}
	for (i = 0; i < NKNOBS; i++)
		if (self->saved[i][0])
			write_str(knobs[i].path, self->saved[i]);
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

#define CHECK_SKIP() do {						\
	if (self->why)							\
		SKIP(return, "%s", self->why);				\
} while (0)

typedef FIXTURE_DATA(fn) fn_t;

/* ---- arming ---- */

static int arm(fn_t *f)
{
	char b[16];
	int len;

	f->hit = false;
	if (!f->n)
		return 0;
	len = snprintf(b, sizeof(b), "%u", f->n);
	return pwrite(f->nth, b, len, 0) == len ? 0 : -EIO;
}

static void disarm(fn_t *f)
{
	char b[16] = "";
	ssize_t len;

	if (!f->n)
		return;
	len = pread(f->nth, b, sizeof(b) - 1, 0);
	f->hit = len > 0 && strtoul(b, NULL, 10) == 0;
	if (pwrite(f->nth, "0", 1, 0) != 1)
		perror(FAIL_NTH);
}

/* ---- netlink: raw requests, the fault armed around send() ---- */

static struct nl_msg *req(fn_t *f, int cmd)
{
	struct nl_msg *m = nlmsg_alloc();

	if (m)
		genlmsg_put(m, 0, 0, f->nl.family, 0, NLM_F_REQUEST | NLM_F_ACK,
			    cmd, DSMEM_GENL_VERSION);
	return m;
}

/* Until the ACK: its error; a lost ACK (ENOBUFS) sets f->lost. */
static int nl_answer(fn_t *f)
{
	static char buf[65536];
	int flags = 0;

	f->reply[0] = 0;
	for (;;) {
		ssize_t n = recv(f->nl.fd, buf, sizeof(buf), flags);

		if (n < 0 && errno == ENOBUFS && !f->lost) {
			/* the error comes first; a reply may still be queued */
			f->lost = true;
			flags = MSG_DONTWAIT;
			continue;
		}
		if (n < 0)
			return f->lost ? -ENOBUFS : -errno;
		for (struct nlmsghdr *nh = (void *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
			if (nh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nh->nlmsg_type == f->nl.family && nh->nlmsg_len <= sizeof(f->reply))
				memcpy(f->reply, nh, nh->nlmsg_len);
		}
	}
}

/* Sends m (and frees it), the fault armed for send() alone. */
static int nl_do(fn_t *f, struct nl_msg *m)
{
	struct nlmsghdr *h;
	ssize_t n;
	int ret;

	if (!m)
		return -ENOMEM;
	h = nlmsg_hdr(m);
	f->lost = false;
	if (arm(f)) {
		nlmsg_free(m);
		return -EIO;
	}
	n = send(f->nl.fd, h, h->nlmsg_len, 0);
	ret = n < 0 ? -errno : 0;
	disarm(f);
	nlmsg_free(m);
	return ret ? ret : nl_answer(f);
}

/* An attribute of the last reply, or NULL. */
static struct nlattr *reply_attr(fn_t *f, int type)
{
	struct nlmsghdr *nh = (void *)f->reply;

	if (!f->reply[0] || nh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
		return NULL;
	return nla_find(genlmsg_attrdata(nlmsg_data(nh), 0),
			genlmsg_attrlen(nlmsg_data(nh), 0), type);
}

/* ---- ioctls and other calls, the fault armed around them ---- */

static int ioc(fn_t *f, int fd, unsigned long cmd, void *arg)
{
	int ret;

	if (arm(f))
		return -EIO;
	ret = ioctl(fd, cmd, arg) ? -errno : 0;
	disarm(f);
	return ret;
}

/* ---- the sweep ---- */

struct op {
	const char *name;
	int (*prep)(fn_t *f);		/* before each attempt (no injection) */
	int (*run)(fn_t *f);		/* the call: 0 or -errno */
	int (*done)(fn_t *f);		/* 1: its effect is there; 0: not */
	int (*verify)(fn_t *f);		/* after a success without injection */
	int (*cleanup)(fn_t *f);	/* back to the state before prep */
	bool err_keeps;			/* an error may keep the effect (as
					 * documented): the retry completes it */
	int (*retry)(fn_t *f);		/* the call again after a failure,
					 * when not plain run (documented) */
};

static bool clean_errno(int ret)
{
	/* allocation failures, as the callers report them */
	return ret == -ENOMEM || ret == -ENOBUFS;
}

static void sweep(struct __test_metadata *_metadata, fn_t *f, const struct op *op)
{
	unsigned int n;
	int ret, d;

	for (n = 1; n <= NTH_MAX; n++) {
		if (op->prep)
			ASSERT_EQ(0, op->prep(f)) TH_LOG("%s: n=%u: prep", op->name, n);
		f->n = n;
		ret = op->run(f);
		f->n = 0;
		if (!f->hit) {
			/* the call did not get as far as the n-th point */
			ASSERT_EQ(0, ret) TH_LOG("%s: n=%u: %s without a fault",
						 op->name, n, strerror(-ret));
			if (op->verify)
				ASSERT_EQ(0, op->verify(f)) TH_LOG("%s: verify", op->name);
			if (op->cleanup)
				ASSERT_EQ(0, op->cleanup(f)) TH_LOG("%s: cleanup", op->name);
			break;
		}
		ASSERT_TRUE(ret == 0 || clean_errno(ret))
			TH_LOG("%s: n=%u: %d (%s)", op->name, n, ret, strerror(-ret));
		d = ret == 0;
		if (op->done) {
			d = op->done(f);
			ASSERT_LE(0, d) TH_LOG("%s: n=%u: state: %s", op->name, n, strerror(-d));
			if (!f->lost && !(op->err_keeps && ret && d))
				ASSERT_EQ(ret == 0, d)
					TH_LOG("%s: n=%u: returned %d but the effect is %s",
					       op->name, n, ret, d ? "there" : "not there");
		}
		if (d) {
			/* it happened: undo and start again */
			if (op->cleanup)
				ASSERT_EQ(0, op->cleanup(f)) TH_LOG("%s: n=%u: cleanup", op->name, n);
			if (op->prep)
				ASSERT_EQ(0, op->prep(f)) TH_LOG("%s: n=%u: prep", op->name, n);
		}
		/* a failed attempt left things as they were: it works now */
		ret = !d && op->retry ? op->retry(f) : op->run(f);
		ASSERT_EQ(0, ret) TH_LOG("%s: n=%u: retry without a fault: %s",
					 op->name, n, strerror(-ret));
		if (op->done)
			ASSERT_EQ(1, op->done(f)) TH_LOG("%s: n=%u: retry: no effect", op->name, n);
		if (op->verify)
			ASSERT_EQ(0, op->verify(f)) TH_LOG("%s: n=%u: verify", op->name, n);
		if (op->cleanup)
			ASSERT_EQ(0, op->cleanup(f)) TH_LOG("%s: n=%u: cleanup", op->name, n);
	}
	ASSERT_GE(NTH_MAX, n) TH_LOG("%s: more than %u points", op->name, NTH_MAX);
	printf("# fail-nth: %s: %u points\n", op->name, n - 1);
	fflush(stdout);
	if (total_points)
		__atomic_add_fetch(total_points, n - 1, __ATOMIC_SEQ_CST);
}

#define SWEEP(...) do {							\
	static const struct op __op = { __VA_ARGS__ };			\
	sweep(_metadata, self, &__op);					\
} while (0)

static int ignore(int ret, int e)
{
	return ret == e ? 0 : ret;
}

/* ---- nodes ---- */

/* the key is added once, in the fixture: not a step under injection */
static int node_add(fn_t *f, uint32_t id)
{
	return ds_node_add(f->ctx, id, "rxe0", PORT_BASE + id);
}

/*
 * Node 2, which node 1 connects to, admits any address that proves the
 * key: the sweeps are of the caller's allocations, not of admission.
 */
static int node2_add(fn_t *f)
{
	int ret = node_add(f, 2);

	return ret ? ret : ds_node_set_accept(f->ctx, 2, DS_ACCEPT_KEYED);
}

static int node_new_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_NODE_NEW);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_string(m, DSMEM_ATTR_DEV_NAME, "rxe0");
	nla_put_u16(m, DSMEM_ATTR_NODE_PORT, PORT_BASE + 1);
	nla_put_string(m, DSMEM_ATTR_NODE_KEY, TEST_KEY_NAME);
	return nl_do(f, m);
}

static int node_new_done(fn_t *f)
{
	struct ds_node_info ni;
	int ret = ds_node_get(f->ctx, 1, &ni);

	return ret == -ENOENT ? 0 : ret ? ret : 1;
}

static int node_del_done(fn_t *f)
{
	int ret = node_new_done(f);

	return ret < 0 ? ret : !ret;
}

static int node1_del(fn_t *f)
{
	return ignore(ds_node_del(f->ctx, 1), -ENOENT);
}

static int node1_add(fn_t *f)
{
	return node_add(f, 1);
}

static int node_del_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_NODE_DEL);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	return nl_do(f, m);
}

static int stats_reset_run(fn_t *f)
{
	return nl_do(f, req(f, DSMEM_CMD_STATS_RESET));
}

TEST_F_TIMEOUT(fn, nl_node, 600)
{
	CHECK_SKIP();
	SWEEP(.name = "node-new", .run = node_new_run, .done = node_new_done,
	      .cleanup = node1_del);
	SWEEP(.name = "node-del", .prep = node1_add, .run = node_del_run,
	      .done = node_del_done, .cleanup = node1_del);
	SWEEP(.name = "stats-reset", .run = stats_reset_run);
}

/* ---- segments and grants ---- */

static int seg_count(fn_t *f, uint32_t node)
{
	struct ds_seg_info *s;
	size_t n;
	int ret = ds_seg_list(f->ctx, node, &s, &n);

	if (ret)
		return ret;
	free(s);
	return (int)n;
}

/* every segment of node 2 but f->seg */
static int segs_del(fn_t *f)
{
	struct ds_seg_info *s;
	size_t n;
	int ret = ds_seg_list(f->ctx, 2, &s, &n);

	for (size_t i = 0; !ret && i < n; i++)
		if (s[i].id != f->seg)
			ret = ds_seg_del(f->ctx, 2, s[i].id);
	if (!ret)
		free(s);
	return ret;
}

static int seg_new_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_SEG_NEW);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 2);
	nla_put_u64(m, DSMEM_ATTR_SEG_SIZE, 1 << 20);
	nla_put_u8(m, DSMEM_ATTR_SEG_TRANSLATE, DSMEM_TRANSLATE_SEGMENT);
	return nl_do(f, m);
}

static int seg_new_done(fn_t *f)
{
	int n = seg_count(f, 2);

	return n < 0 ? n : n == 1 + !!f->seg;
}

static int seg_del_prep(fn_t *f)
{
	struct ds_seg_info s = {};
	int ret = ds_seg_add(f->ctx, 2, 1 << 20, -1, DS_TRANSLATE_SEGMENT, &s);

	f->va = s.id;		/* the one to delete */
	return ret;
}

static int seg_del_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_SEG_DEL);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 2);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, (uint32_t)f->va);
	return nl_do(f, m);
}

static int seg_del_done(fn_t *f)
{
	struct ds_seg_info s;
	int ret = ds_seg_get(f->ctx, 2, (uint32_t)f->va, &s);

	return ret == -ENOENT ? 1 : ret ? ret : 0;
}

static int grants(fn_t *f)
{
	struct ds_seg_info s;
	int ret = ds_seg_get(f->ctx, 2, f->seg, &s);

	return ret ? ret : (int)s.grant_total;
}

static int grant_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_SEG_GRANT);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 2);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, f->seg);
	nla_put_u32(m, DSMEM_ATTR_PEER_REMOTE_NODE, 1);
	nla_put_u8(m, DSMEM_ATTR_SEG_PERM, DSMEM_PERM_ALL);
	return nl_do(f, m);
}

static int grant_done(fn_t *f)
{
	int n = grants(f);

	return n < 0 ? n : n == 1;
}

static int grant_revoke(fn_t *f)
{
	return ignore(ds_seg_revoke(f->ctx, 2, f->seg, 1), -ENOENT);
}

static int grant(fn_t *f)
{
	return ds_seg_grant(f->ctx, 2, f->seg, 1, DSMEM_PERM_ALL);
}

static int revoke_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_SEG_REVOKE);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 2);
	nla_put_u32(m, DSMEM_ATTR_SEG_ID, f->seg);
	nla_put_u32(m, DSMEM_ATTR_PEER_REMOTE_NODE, 1);
	return nl_do(f, m);
}

static int revoke_done(fn_t *f)
{
	int n = grants(f);

	return n < 0 ? n : n == 0;
}

/* node 2 with segment f->seg; node 1 connected to it when peer */
static void seg_setup(struct __test_metadata *_metadata, fn_t *f, bool peer)
{
	struct ds_seg_info s;

	ASSERT_EQ(0, node2_add(f)) TH_LOG("%s", ds_ctx_errmsg(f->ctx));
	ASSERT_EQ(0, ds_seg_add(f->ctx, 2, 4 << 20, -1, DS_TRANSLATE_SEGMENT, &s));
	f->seg = s.id;
	f->seg_addr = s.addr;
	if (!peer)
		return;
	ASSERT_EQ(0, node_add(f, 1));
	ASSERT_EQ(0, ds_peer_add(f->ctx, 1, f->addr, PORT_BASE + 2, &f->peer))
		TH_LOG("%s", ds_ctx_errmsg(f->ctx));
	ASSERT_EQ(0, wait_rsegs(f->ctx, 1, f->peer, 0));
}

TEST_F_TIMEOUT(fn, nl_seg, 600)
{
	CHECK_SKIP();
	ASSERT_EQ(0, node2_add(self));
	SWEEP(.name = "seg-new", .run = seg_new_run, .done = seg_new_done,
	      .cleanup = segs_del);
	SWEEP(.name = "seg-del", .prep = seg_del_prep, .run = seg_del_run,
	      .done = seg_del_done, .cleanup = segs_del);
	ASSERT_EQ(0, ds_node_del(self->ctx, 2));
	/* grants to a node not connected: bookkeeping only */
	seg_setup(_metadata, self, false);
	SWEEP(.name = "seg-grant", .run = grant_run, .done = grant_done,
	      .cleanup = grant_revoke);
	SWEEP(.name = "seg-revoke", .prep = grant, .run = revoke_run,
	      .done = revoke_done, .cleanup = grant_revoke);
}

/* ---- peers ---- */

static int peers(fn_t *f, uint32_t node)
{
	struct ds_peer_info *p;
	size_t n;
	int ret = ds_peer_list(f->ctx, node, &p, &n);

	if (ret)
		return ret;
	free(p);
	return (int)n;
}

/*
 * How long a passive peer may outlive its link: a missed disconnect is
 * caught by the connection's I/O watchdog (io_timeout_ms, after a PING
 * stops completing), and the debug kernel is slow -- three times that.
 */
static int passive_linger_ms(void)
{
	char buf[32];
	int ms = 8000;

	if (!read_file("/sys/module/dsmem/parameters/io_timeout_ms", buf, sizeof(buf)))
		ms = atoi(buf);
	return 3 * ms + 2000;
}

/* no peer on either node (the passive one goes once the link is down) */
static int peers_del(fn_t *f)
{
	struct ds_peer_info *p;
	size_t n;
	int ret = ds_peer_list(f->ctx, 1, &p, &n), polls;

	for (size_t i = 0; !ret && i < n; i++)
		ret = ignore(ds_peer_del(f->ctx, 1, p[i].id), -ENOENT);
	if (ret)
		return ret;
	free(p);
	polls = passive_linger_ms() / 50;
	for (int i = 0; i < polls; i++) {
		if (peers(f, 2) == 0)
			return 0;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

static int peer_new_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_PEER_NEW);
	struct in_addr a;
	struct nlattr *id;
	int ret;

	inet_pton(AF_INET, f->addr, &a);
	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put(m, DSMEM_ATTR_PEER_ADDR, 4, &a);
	nla_put_u16(m, DSMEM_ATTR_PEER_PORT, PORT_BASE + 2);
	ret = nl_do(f, m);
	id = reply_attr(f, DSMEM_ATTR_PEER_ID);
	f->peer = id ? nla_get_u32(id) : 0;
	return ret;
}

static int peer_new_done(fn_t *f)
{
	int n = peers(f, 1);

	return n < 0 ? n : n == 1;
}

/* the connection comes up */
static int peer_up(fn_t *f)
{
	return wait_rsegs(f->ctx, 1, f->peer, 0);
}

static int peer_add(fn_t *f)
{
	int ret = ds_peer_add(f->ctx, 1, f->addr, PORT_BASE + 2, &f->peer);

	return ret ? ret : peer_up(f);
}

static int peer_del_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_PEER_DEL);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_u32(m, DSMEM_ATTR_PEER_ID, f->peer);
	return nl_do(f, m);
}

static int peer_del_done(fn_t *f)
{
	int n = peers(f, 1);

	return n < 0 ? n : n == 0;
}

TEST_F_TIMEOUT(fn, nl_peer, 900)
{
	CHECK_SKIP();
	ASSERT_EQ(0, node_add(self, 1));
	ASSERT_EQ(0, node2_add(self));
	/* the caller's part: the connection is made by rdma_cm's handlers */
	SWEEP(.name = "peer-new", .run = peer_new_run, .done = peer_new_done,
	      .verify = peer_up, .cleanup = peers_del);
	SWEEP(.name = "peer-del", .prep = peer_add, .run = peer_del_run,
	      .done = peer_del_done, .cleanup = peers_del);
}

/* ---- grants on a live connection, remote memory by message ---- */

static uint64_t seg_used(fn_t *f)
{
	struct ds_seg_info s;

	return ds_seg_get(f->ctx, 2, f->seg, &s) ? ~0ULL : s.used;
}

static int rdm_alloc_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_RDM_ALLOC);
	struct nlattr *a;
	int ret;

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_u32(m, DSMEM_ATTR_PEER_REMOTE_NODE, 2);
	nla_put_u64(m, DSMEM_ATTR_RDM_LEN, 8192);
	ret = nl_do(f, m);
	a = reply_attr(f, DSMEM_ATTR_RDM_ADDR);
	f->va = a ? nla_get_u64(a) : 0;
	return ret;
}

/* f->token holds the used bytes before */
static int rdm_alloc_done(fn_t *f)
{
	uint64_t u = seg_used(f);

	return u == ~0ULL ? -EIO : u != f->token;
}

static int rdm_free_va(fn_t *f)
{
	if (seg_used(f) == f->token)
		return 0;
	if (!f->va)
		return -ENOENT;
	return ds_rdm_free(f->ctx, 1, f->va);
}

static int rdm_alloc(fn_t *f)
{
	return ds_rdm_alloc(f->ctx, 1, 2, 0, 8192, &f->va, NULL);
}

static int rdm_free_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_RDM_FREE);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, f->va);
	return nl_do(f, m);
}

static int rdm_free_done(fn_t *f)
{
	int ret = rdm_alloc_done(f);

	return ret < 0 ? ret : !ret;
}

static int rdm_write_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_RDM_WRITE);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, f->seg_addr + 64);
	nla_put(m, DSMEM_ATTR_RDM_DATA, 64, f->buf);
	return nl_do(f, m);
}

static int rdm_read_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_RDM_READ);

	nla_put_u32(m, DSMEM_ATTR_NODE_ID, 1);
	nla_put_u64(m, DSMEM_ATTR_RDM_ADDR, f->seg_addr + 64);
	nla_put_u64(m, DSMEM_ATTR_RDM_LEN, 64);
	return nl_do(f, m);
}

/* the grant's keys reached node 1 */
static int rsegs_1(fn_t *f)
{
	return wait_rsegs(f->ctx, 1, f->peer, 1);
}

static int rsegs_0(fn_t *f)
{
	int ret = grant_revoke(f);

	return ret ? ret : wait_rsegs(f->ctx, 1, f->peer, 0);
}

static int grant_live(fn_t *f)
{
	int ret = grant(f);

	return ret ? ret : rsegs_1(f);
}

TEST_F_TIMEOUT(fn, nl_rdm, 900)
{
	CHECK_SKIP();
	seg_setup(_metadata, self, true);
	/*
	 * The caller registers the MRs and sends GRANT.  A grant a connected
	 * peer did not take is recorded all the same (dsctl-segment(8)): the
	 * same grant again must then reach the peer.
	 */
	SWEEP(.name = "seg-grant-connected", .run = grant_run, .done = grant_done,
	      .verify = rsegs_1, .cleanup = rsegs_0, .err_keeps = true);
	SWEEP(.name = "seg-revoke-connected", .prep = grant_live, .run = revoke_run,
	      .done = revoke_done, .cleanup = rsegs_0);
	ASSERT_EQ(0, grant_live(self));
	self->token = seg_used(self);
	/* ALLOC and FREE are served by node 2's receive handler */
	SWEEP(.name = "rdm-alloc", .run = rdm_alloc_run, .done = rdm_alloc_done,
	      .cleanup = rdm_free_va);
	SWEEP(.name = "rdm-free", .prep = rdm_alloc, .run = rdm_free_run,
	      .done = rdm_free_done, .cleanup = rdm_free_va);
	SWEEP(.name = "rdm-write", .run = rdm_write_run);
	SWEEP(.name = "rdm-read", .run = rdm_read_run);
}

/* ---- the token cache ---- */

static int token_pinned(fn_t *f)
{
	struct ds_token_info t;
	int ret = ds_token_get(f->ctx, f->token, &t);

	return ret ? ret : !!(t.flags & DS_TOKEN_PINNED);
}

static int token_unpin(fn_t *f)
{
	struct ds_token_update u = { .mask = DS_TOKEN_SET_PINNED, .pinned = 0 };

	return ds_token_set(f->ctx, f->token, &u, NULL);
}

static int token_set_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_TOKEN_SET);

	nla_put_u32(m, DSMEM_ATTR_TOKEN_HANDLE, f->token);
	nla_put_u8(m, DSMEM_ATTR_TOKEN_PINNED, 1);
	return nl_do(f, m);
}

static int cache_set_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_CACHE_SET);
	struct nlattr *p = nla_nest_start(m, DSMEM_ATTR_CACHE_PARAMS);

	nla_put_u64(m, DSMEM_CACHE_P_CAS_RETRIES + 1, f->cas[1]);
	nla_nest_end(m, p);
	return nl_do(f, m);
}

static int cas_retries(fn_t *f)
{
	struct ds_cache_info *c = malloc(sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = ds_cache_get(f->ctx, c);
	if (!ret)
		ret = c->params[DSMEM_CACHE_P_CAS_RETRIES] == f->cas[1];
	free(c);
	return ret;
}

static int cas_restore(fn_t *f)
{
	return ds_cache_set(f->ctx, f->cas, 1ULL << DSMEM_CACHE_P_CAS_RETRIES, 0, NULL);
}

static int trace_active(fn_t *f)
{
	struct ds_cache_info *c = malloc(sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = ds_cache_get(f->ctx, c);
	if (!ret)
		ret = c->trace_active;
	free(c);
	return ret;
}

static int trace_start_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_TRACE_START);

	nla_put_u32(m, DSMEM_ATTR_TRACE_FD, f->tfd);
	return nl_do(f, m);
}

static int trace_stopped(fn_t *f)
{
	int ret = trace_active(f);

	return ret < 0 ? ret : !ret;
}

static int trace_stop(fn_t *f)
{
	int ret = trace_active(f);

	if (ret <= 0)
		return ret;
	return ds_trace_stop(f->ctx, NULL);
}

static int trace_start(fn_t *f)
{
	return ds_trace_start(f->ctx, f->tfd);
}

static int trace_stop_run(fn_t *f)
{
	return nl_do(f, req(f, DSMEM_CMD_TRACE_STOP));
}

static int bench_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_CACHE_BENCH);

	nla_put_u32(m, DSMEM_ATTR_BENCH_QPS, 4);
	nla_put_u32(m, DSMEM_ATTR_BENCH_OPS, 64);
	nla_put_u32(m, DSMEM_ATTR_BENCH_SEED, 1);
	return nl_do(f, m);
}

static int replay_run(fn_t *f)
{
	struct nl_msg *m = req(f, DSMEM_CMD_CACHE_REPLAY);
	struct dsmem_trace_rec r[8];

	memset(r, 0, sizeof(r));
	for (int i = 0; i < 8; i++) {
		r[i].time_ns = 1000000ULL * (i + 1);
		r[i].handle = f->token;
		r[i].node = 1;
		r[i].type = f->ttype;
		r[i].op = i ? DSMEM_TRACE_READ : DSMEM_TRACE_CREATE;
	}
	nla_put(m, DSMEM_ATTR_REPLAY_RECS, sizeof(r), r);
	return nl_do(f, m);
}

TEST_F_TIMEOUT(fn, nl_cache, 600)
{
	struct ds_token_info *t;
	struct ds_cache_info *c = calloc(1, sizeof(*c));
	size_t n;

	CHECK_SKIP();
	ASSERT_NE(NULL, c);
	/* a connection's tokens (PD, QP, CQ, MRs) */
	seg_setup(_metadata, self, true);
	ASSERT_EQ(0, ds_token_list(self->ctx, -1, 0, &t, &n));
	ASSERT_LT(0, n);
	self->token = t[0].handle;
	self->ttype = t[0].type;
	ds_token_list_free(t);
	ASSERT_EQ(0, token_unpin(self));
	SWEEP(.name = "token-set", .run = token_set_run, .done = token_pinned,
	      .cleanup = token_unpin);

	ASSERT_EQ(0, ds_cache_get(self->ctx, c));
	self->cas[0] = c->params[DSMEM_CACHE_P_CAS_RETRIES];
	self->cas[1] = self->cas[0] == 8 ? 9 : 8;
	free(c);
	SWEEP(.name = "cache-set", .run = cache_set_run, .done = cas_retries,
	      .cleanup = cas_restore);

	self->tfd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	ASSERT_LE(0, self->tfd);
	SWEEP(.name = "trace-start", .run = trace_start_run, .done = trace_active,
	      .cleanup = trace_stop);
	SWEEP(.name = "trace-stop", .prep = trace_start, .run = trace_stop_run,
	      .done = trace_stopped, .cleanup = trace_stop);
	SWEEP(.name = "cache-bench", .run = bench_run);
	SWEEP(.name = "cache-replay", .run = replay_run);
}

/* ---- /dev/dsmem: open, version, attach ---- */

static int open_run(fn_t *f)
{
	int fd;

	if (arm(f))
		return -EIO;
	fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	fd = fd < 0 ? -errno : fd;
	disarm(f);
	if (fd < 0)
		return fd;
	f->fd2 = fd;
	return 0;
}

static int close_fd2(fn_t *f)
{
	if (f->fd2 >= 0)
		close(f->fd2);
	f->fd2 = -1;
	return 0;
}

static int version_run(fn_t *f)
{
	struct dsmem_ioc_version v = {};

	return ioc(f, f->fd, DSMEM_IOC_VERSION, &v);
}

static int fd2_open(fn_t *f)
{
	f->fd2 = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	return f->fd2 < 0 ? -errno : 0;
}

static int attach_run(fn_t *f)
{
	struct dsmem_ioc_attach a = { .node_id = 1 };

	return ioc(f, f->fd2, DSMEM_IOC_ATTACH, &a);
}

TEST_F_TIMEOUT(fn, ioctl_basic, 300)
{
	CHECK_SKIP();
	ASSERT_EQ(0, node_add(self, 1));
	self->fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	SWEEP(.name = "open", .run = open_run, .cleanup = close_fd2);
	SWEEP(.name = "ioctl-version", .run = version_run);
	SWEEP(.name = "ioctl-attach", .prep = fd2_open, .run = attach_run,
	      .cleanup = close_fd2);
}

/* ---- /dev/dsmem: registered buffers and transfers ---- */

static int mr_reg_run(fn_t *f)
{
	struct dsmem_ioc_mr_reg r = { .addr = (uintptr_t)f->buf, .len = 1 << 16,
				      .flags = DSMEM_MR_WRITABLE };
	int ret = ioc(f, f->fd, DSMEM_IOC_MR_REG, &r);

	f->handle = ret ? 0 : r.handle;
	return ret;
}

static int mr_dereg(fn_t *f)
{
	struct dsmem_ioc_mr_dereg d = { .handle = f->handle };
	int ret;

	if (!f->handle)
		return 0;
	ret = ioctl(f->fd, DSMEM_IOC_MR_DEREG, &d) ? -errno : 0;
	f->handle = 0;
	return ignore(ret, -ENOENT);
}

static int mr_reg(fn_t *f)
{
	f->n = 0;
	return mr_reg_run(f);
}

static int mr_dereg_run(fn_t *f)
{
	struct dsmem_ioc_mr_dereg d = { .handle = f->handle };
	int ret = ioc(f, f->fd, DSMEM_IOC_MR_DEREG, &d);

	if (!ret)
		f->handle = 0;
	return ret;
}

static int submit(fn_t *f, uint32_t flags)
{
	struct dsmem_xfer_req r = {
		.opcode = DSMEM_XFER_WRITE, .local = (uintptr_t)f->buf,
		.remote = f->seg_addr + 8192, .len = 8192,
	};
	struct dsmem_ioc_submit s = {
		.reqs = (uintptr_t)&r, .nr = 1, .req_size = sizeof(r), .flags = flags,
	};
	int ret = ioc(f, f->fd, DSMEM_IOC_SUBMIT, &s);

	f->result = s.result;
	f->task = ret ? 0 : s.task;
	return ret;
}

static int submit_run(fn_t *f)
{
	return submit(f, DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE);
}

/* the transfer of a call that succeeded without a fault went through */
static int submit_ok(fn_t *f)
{
	return f->result;
}

static int task_prep(fn_t *f)
{
	return submit(f, 0);
}

static int task_run(fn_t *f)
{
	struct dsmem_xfer_status st;
	struct dsmem_ioc_task t = {
		.task = f->task, .status = (uintptr_t)&st, .nr = 1,
		.flags = DSMEM_TASK_WAIT | DSMEM_TASK_RELEASE,
	};
	int ret = ioc(f, f->fd, DSMEM_IOC_TASK, &t);

	if (!ret) {
		f->task = 0;
		f->result = t.state == DSMEM_TASK_COMPLETE ? st.status : -EIO;
	}
	return ret;
}

static int task_release(fn_t *f)
{
	struct dsmem_ioc_task t = { .task = f->task,
				    .flags = DSMEM_TASK_WAIT | DSMEM_TASK_RELEASE };

	if (!f->task)
		return 0;
	f->task = 0;
	return ioctl(f->fd, DSMEM_IOC_TASK, &t) ? -errno : 0;
}

TEST_F_TIMEOUT(fn, ioctl_xfer, 600)
{
	CHECK_SKIP();
	seg_setup(_metadata, self, true);
	ASSERT_EQ(0, grant_live(self));
	self->fd = attach_open(1);
	ASSERT_LE(0, self->fd);
	SWEEP(.name = "ioctl-mr-reg", .run = mr_reg_run, .cleanup = mr_dereg);
	SWEEP(.name = "ioctl-mr-dereg", .prep = mr_reg, .run = mr_dereg_run,
	      .cleanup = mr_dereg);
	/* the caller's part: posting; completions come by the CQ handler */
	SWEEP(.name = "ioctl-submit", .run = submit_run, .verify = submit_ok);
	SWEEP(.name = "ioctl-task", .prep = task_prep, .run = task_run,
	      .verify = submit_ok, .cleanup = task_release);
}

/* ---- /dev/dsmem: Slope ---- */

static int slope_alloc(fn_t *f, uint64_t len, uint64_t *addr)
{
	struct dsmem_ioc_slope_alloc a = { .len = len };
	int ret = ioc(f, f->fd, DSMEM_IOC_SLOPE_ALLOC, &a);

	*addr = ret ? 0 : a.addr;
	return ret;
}

static int slope_free(fn_t *f, uint64_t addr, uint64_t len)
{
	struct dsmem_slope_extent e = { .addr = addr, .len = len };
	struct dsmem_ioc_slope_free fr = { .extents = (uintptr_t)&e, .nr = 1 };

	return ioc(f, f->fd, DSMEM_IOC_SLOPE_FREE, &fr);
}

static int mmap_run(fn_t *f)
{
	void *p;
	int ret;

	if (arm(f))
		return -EIO;
	p = mmap((void *)DSMEM_SLOPE_BASE, DSMEM_SLOPE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, f->fd, 0);
	ret = p == MAP_FAILED ? -errno : 0;
	disarm(f);
	return ret;
}

static int unmap(fn_t *f)
{
	(void)f;
	return munmap((void *)DSMEM_SLOPE_BASE, DSMEM_SLOPE_SIZE) ? -errno : 0;
}

static int alloc_run(fn_t *f)
{
	return slope_alloc(f, 16 * PAGE, &f->va);
}

static int free_va(fn_t *f)
{
	int ret = 0;

	f->n = 0;
	if (f->va)
		ret = slope_free(f, f->va, 16 * PAGE);
	f->va = 0;
	return ret;
}

static int alloc_touch(fn_t *f)
{
	int ret;

	f->n = 0;
	ret = alloc_run(f);
	if (!ret)
		memset((void *)f->va, 0x5a, 16 * PAGE);
	return ret;
}

static int free_run(fn_t *f)
{
	int ret = slope_free(f, f->va, 16 * PAGE);

	if (!ret)
		f->va = 0;
	return ret;
}

static int dirty(fn_t *f, uint32_t op)
{
	struct dsmem_slope_extent e = { .addr = f->obj, .len = 16 * PAGE };
	struct dsmem_ioc_slope_dirty d = { .op = op };
	int ret;

	if (op == DSMEM_SLOPE_DIRTY_START) {
		d.extents = (uintptr_t)&e;
		d.nr = 1;
	} else {
		d.id = f->id;
	}
	if (op == DSMEM_SLOPE_DIRTY_COLLECT) {
		d.bitmap = (uintptr_t)f->buf;
		d.bitmap_len = 2;
	}
	ret = ioc(f, f->fd, DSMEM_IOC_SLOPE_DIRTY, &d);

	if (!ret && op == DSMEM_SLOPE_DIRTY_START)
		f->id = d.id;
	if (!ret && op == DSMEM_SLOPE_DIRTY_STOP)
		f->id = 0;
	return ret;
}

static int dirty_start_run(fn_t *f)
{
	return dirty(f, DSMEM_SLOPE_DIRTY_START);
}

static int dirty_collect_run(fn_t *f)
{
	return dirty(f, DSMEM_SLOPE_DIRTY_COLLECT);
}

static int dirty_stop_run(fn_t *f)
{
	return dirty(f, DSMEM_SLOPE_DIRTY_STOP);
}

static int dirty_start(fn_t *f)
{
	f->n = 0;
	return dirty_start_run(f);
}

static int dirty_stop(fn_t *f)
{
	f->n = 0;
	return f->id ? dirty_stop_run(f) : 0;
}

static int mig_get(fn_t *f, int fd, uint64_t id, uint32_t flags, uint32_t state,
		   struct dsmem_ioc_slope_mig *m)
{
	memset(m, 0, sizeof(*m));
	m->id = id;
	m->flags = flags;
	m->state = state;
	m->timeout_ms = 60000;
	return ioc(f, fd, DSMEM_IOC_SLOPE_MIG_GET, m);
}

/* its state, once past PREFILL and HANDED_OVER */
static int mig_settle(fn_t *f, uint64_t id, struct dsmem_ioc_slope_mig *m)
{
	int ret;

	f->n = 0;
	ret = mig_get(f, f->fd, id, 0, 0, m);
	while (!ret && (m->state == DSMEM_SLOPE_MIG_PREFILL ||
			m->state == DSMEM_SLOPE_MIG_HANDED_OVER))
		ret = mig_get(f, f->fd, id, DSMEM_SLOPE_MIG_WAIT, m->state, m);
	return ret;
}

static int migrate_run(fn_t *f)
{
	struct dsmem_slope_extent e = { .addr = f->va, .len = 4 * PAGE };
	struct dsmem_ioc_slope_migrate mg = {
		.extents = (uintptr_t)&e, .nr = 1, .dst_node = 2, .cookie = f->va,
	};
	int ret = ioc(f, f->fd, DSMEM_IOC_SLOPE_MIGRATE, &mg);

	f->id = ret ? 0 : mg.id;
	return ret;
}

/* a 4-page object of node 1, written */
static int object_new(fn_t *f)
{
	int ret;

	f->n = 0;
	ret = slope_alloc(f, 4 * PAGE, &f->va);
	if (!ret)
		memset((void *)f->va, 0xa5, 4 * PAGE);
	return ret;
}

static int mig_stop(fn_t *f, uint64_t id)
{
	struct dsmem_ioc_slope_mig m = { .id = id };

	return ioc(f, f->fd, DSMEM_IOC_SLOPE_MIG_STOP, &m);
}

/* the migration f->id to its end, released; the object is node 2's */
static int mig_finish(fn_t *f)
{
	struct dsmem_ioc_slope_mig m;
	int ret;

	if (!f->id)
		return free_va(f);
	ret = mig_settle(f, f->id, &m);
	if (!ret && m.state == DSMEM_SLOPE_MIG_STOPPING) {
		ret = mig_stop(f, f->id);
		if (!ret)
			ret = mig_settle(f, f->id, &m);
	}
	if (!ret && m.state != DSMEM_SLOPE_MIG_DONE)
		ret = -EPROTO;
	if (!ret)
		ret = mig_get(f, f->fd, f->id, DSMEM_SLOPE_MIG_RELEASE, 0, &m);
	/*
	 * node 2 takes it, or its unreceived migrations would reach
	 * slope_peer_migs and refuse the sweep's next ones (EBUSY)
	 */
	if (!ret && f->fd2 >= 0) {
		memset(&m, 0, sizeof(m));
		if (ioctl(f->fd2, DSMEM_IOC_SLOPE_RECV, &m) && errno != EAGAIN)
			ret = -errno;
	}
	f->id = 0;
	f->va = 0;
	return ret;
}

/* a migration of a new object, converged, waiting for MIG_STOP */
static int mig_stopping(fn_t *f)
{
	struct dsmem_ioc_slope_mig m;
	int ret = object_new(f);

	if (!ret)
		ret = migrate_run(f);
	if (!ret)
		ret = mig_settle(f, f->id, &m);
	if (!ret && m.state != DSMEM_SLOPE_MIG_STOPPING)
		ret = -EPROTO;
	return ret;
}

static int mig_stop_run(fn_t *f)
{
	return mig_stop(f, f->id);
}

/*
 * After a failed MIG_STOP: the migration FAILED with that error and the
 * source keeps the object (<linux/dsmem.h>), whole; or, when the failure
 * came before anything was decided, it is still STOPPING.  Either way a
 * stop, of a new migration of the same object then, goes through.
 */
static int mig_stop_retry(fn_t *f)
{
	struct dsmem_ioc_slope_mig m;
	int ret = mig_get(f, f->fd, f->id, 0, 0, &m);

	if (ret)
		return ret;
	if (m.state == DSMEM_SLOPE_MIG_STOPPING)
		return mig_stop_run(f);
	if (m.state != DSMEM_SLOPE_MIG_FAILED || !m.error)
		return -EPROTO;
	ret = mig_get(f, f->fd, f->id, DSMEM_SLOPE_MIG_RELEASE, 0, &m);
	if (ret)
		return ret;
	f->id = 0;
	for (uint64_t a = f->va; a < f->va + 4 * PAGE; a += 8)
		if (*(volatile uint64_t *)a != 0xa5a5a5a5a5a5a5a5ULL)
			return -EIO;
	ret = migrate_run(f);
	if (!ret)
		ret = mig_settle(f, f->id, &m);
	if (!ret && m.state != DSMEM_SLOPE_MIG_STOPPING)
		ret = -EPROTO;
	return ret ? ret : mig_stop_run(f);
}

static int mig_get_run(fn_t *f)
{
	struct dsmem_ioc_slope_mig m;

	return mig_get(f, f->fd, f->mig, 0, 0, &m);
}

/* handed over to node 2, not yet received there */
static int mig_handed_over(fn_t *f)
{
	int ret = mig_stopping(f);

	return ret ? ret : mig_stop(f, f->id);
}

static int recv_run(fn_t *f)
{
	struct dsmem_ioc_slope_mig m = {};

	return ioc(f, f->fd2, DSMEM_IOC_SLOPE_RECV, &m);
}

TEST_F_TIMEOUT(fn, ioctl_slope, 900)
{
	struct dsmem_ioc_slope_mig m;

	CHECK_SKIP();
	ASSERT_EQ(0, node_add(self, 1));
	ASSERT_EQ(0, node2_add(self));
	ASSERT_EQ(0, ds_peer_add(self->ctx, 1, self->addr, PORT_BASE + 2, &self->peer));
	ASSERT_EQ(0, wait_rsegs(self->ctx, 1, self->peer, 0));
	self->fd = attach_open(1);
	ASSERT_LE(0, self->fd);
	/* receives each object the sweeps move (mig_finish) */
	self->fd2 = attach_open(2);
	ASSERT_LE(0, self->fd2);
	SWEEP(.name = "mmap-slope", .run = mmap_run, .cleanup = unmap);
	ASSERT_EQ(0, slope_map(self->fd));
	SWEEP(.name = "ioctl-slope-alloc", .run = alloc_run, .cleanup = free_va);
	SWEEP(.name = "ioctl-slope-free", .prep = alloc_touch, .run = free_run,
	      .cleanup = free_va);

	ASSERT_EQ(0, slope_alloc(self, 16 * PAGE, &self->obj));
	memset((void *)self->obj, 1, 16 * PAGE);
	SWEEP(.name = "ioctl-slope-dirty-start", .run = dirty_start_run,
	      .cleanup = dirty_stop);
	SWEEP(.name = "ioctl-slope-dirty-collect", .prep = dirty_start,
	      .run = dirty_collect_run, .cleanup = dirty_stop);
	SWEEP(.name = "ioctl-slope-dirty-stop", .prep = dirty_start,
	      .run = dirty_stop_run, .cleanup = dirty_stop);

	/* the caller's part: tracking and set-up; the copy runs in a worker */
	SWEEP(.name = "ioctl-slope-migrate", .prep = object_new, .run = migrate_run,
	      .cleanup = mig_finish);
	SWEEP(.name = "ioctl-slope-mig-stop", .prep = mig_stopping, .run = mig_stop_run,
	      .retry = mig_stop_retry, .cleanup = mig_finish);
	ASSERT_EQ(0, mig_stopping(self));
	self->mig = self->id;
	ASSERT_EQ(0, mig_stop(self, self->mig));
	ASSERT_EQ(0, mig_settle(self, self->mig, &m));
	ASSERT_EQ(DSMEM_SLOPE_MIG_DONE, m.state);
	SWEEP(.name = "ioctl-slope-mig-get", .run = mig_get_run);

	/* node 2 has received the migration above: take it off the list */
	do
		memset(&m, 0, sizeof(m));
	while (ioctl(self->fd2, DSMEM_IOC_SLOPE_RECV, &m) == 0);
	ASSERT_EQ(EAGAIN, errno);
	SWEEP(.name = "ioctl-slope-recv", .prep = mig_handed_over, .run = recv_run,
	      .cleanup = mig_finish);
}

TEST_HARNESS_MAIN
