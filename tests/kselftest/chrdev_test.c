// SPDX-License-Identifier: BSD-2-Clause
/*
 * /dev/dsmem: the version ioctl and the dispatcher's size-versioning rules,
 * and the submit ioctl's growth by a deadline (timeout_ns).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define VERSION_NR	_IOC_NR(DSMEM_IOC_VERSION)
#define RW		(_IOC_READ | _IOC_WRITE)

FIXTURE(chrdev) {
	int fd;
};

FIXTURE_SETUP(chrdev)
{
	self->fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/dsmem: %s", strerror(errno));
}

FIXTURE_TEARDOWN(chrdev)
{
	close(self->fd);
}

TEST_F(chrdev, version)
{
	struct dsmem_ioc_version v = {};

	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(DSMEM_ABI_VERSION, v.abi_version);
	EXPECT_EQ(DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS,
		  v.features & (DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS));
	EXPECT_TRUE(v.features & DSMEM_FEAT_SUBMIT_TIMEOUT);
	EXPECT_TRUE(v.features & DSMEM_FEAT_NOT_AFTER);
	/* the highest command dispatched is the rings' enter */
	EXPECT_EQ(_IOC_NR(DSMEM_IOC_RING_ENTER), v.max_ioctl_nr);
	EXPECT_STREQ("0.1.0", v.module_version);
}

TEST_F(chrdev, unknown_command_is_enotty)
{
	struct dsmem_ioc_version v = {};
	uint64_t before = stat_value(NULL, "ioctl_unknown");

	/* a number past the table */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(DSMEM_IOCTL_MAGIC, 0x7f, v), &v));
	EXPECT_EQ(ENOTTY, errno);
	/* another magic */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR('T', VERSION_NR, v), &v));
	EXPECT_EQ(ENOTTY, errno);
	/* the right number with the wrong direction */
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(DSMEM_IOCTL_MAGIC, VERSION_NR, v), &v));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IO(DSMEM_IOCTL_MAGIC, VERSION_NR)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(before + 4, stat_value(NULL, "ioctl_unknown"));
}

TEST_F(chrdev, short_struct_is_einval)
{
	char buf[DSMEM_IOC_VERSION_SIZE_VER0] = {};
	uint64_t before = stat_value(NULL, "ioctl_short");

	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR,
					   DSMEM_IOC_VERSION_SIZE_VER0 - 8), buf));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR, 0), buf));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(before + 2, stat_value(NULL, "ioctl_short"));
}

TEST_F(chrdev, larger_struct_zero_tail_is_accepted)
{
	struct {
		struct dsmem_ioc_version v;
		uint64_t future[4];
	} big;

	memset(&big, 0, sizeof(big));
	ASSERT_EQ(0, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR,
					  sizeof(big)), &big));
	EXPECT_EQ(DSMEM_ABI_VERSION, big.v.abi_version);
	/* the kernel writes back only what it knows */
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, big.future[i]);
}

TEST_F(chrdev, larger_struct_nonzero_tail_is_e2big)
{
	struct {
		struct dsmem_ioc_version v;
		uint64_t future[4];
	} big;
	uint64_t before = stat_value(NULL, "ioctl_nonzero_tail");

	memset(&big, 0, sizeof(big));
	big.future[3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR,
					   sizeof(big)), &big));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0, big.v.abi_version);	/* nothing was written back */
	EXPECT_EQ(before + 1, stat_value(NULL, "ioctl_nonzero_tail"));
}

TEST_F(chrdev, unknown_flags_are_einval)
{
	struct dsmem_ioc_version v = { .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(EINVAL, errno);
	v.flags = 0;
	v.__pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(chrdev, bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, NULL));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(chrdev, library_checks_abi)
{
	struct ds_version v;
	struct ds_ctx *ctx;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	EXPECT_EQ(0, ds_ctx_chrdev_version(ctx, &v));
	EXPECT_EQ(DSMEM_ABI_VERSION, v.abi_version);
	ds_ctx_close(ctx);
}

/*
 * DSMEM_IOC_SUBMIT's versions: node 1 reads and writes node 2's segment
 * on a descriptor of its own, through the raw ABI.
 */
#define SEG_SIZE	(16u << 20)
/*
 * 8 MiB a request on Debian's kernel, 2 MiB on the debug kernel (64 MiB
 * over rxe took more than two minutes there under TCG): set by the
 * fixture, before anything is sized by it.
 */
static uint32_t xfer_size = 8u << 20;
#define XFER_SIZE	xfer_size
#define XFER_NR		8		/* 16 or 64 MiB: far longer than 1 ns */
#define BUF_SIZE	(XFER_NR * XFER_SIZE)
#define SUBMIT_NR	_IOC_NR(DSMEM_IOC_SUBMIT)
#define PORT_A		7491
#define PORT_B		7492

FIXTURE(submit) {
	struct ds_ctx *ctx;
	uint64_t seg;
	int fd;
	uint8_t *buf;
	uint32_t mr;
};

FIXTURE_SETUP(submit)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct dsmem_ioc_mr_reg reg = { .flags = DSMEM_MR_WRITABLE };
	struct ds_seg_info s;
	uint32_t peer;

	self->fd = -1;
	xfer_size = debug_kernel() ? 2u << 20 : 8u << 20;
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 1, "rxe0", PORT_A))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 2, "rxe0", PORT_B));
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, 2, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 2, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	self->seg = s.addr;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 2, 1, 1, DSMEM_PERM_ALL));
	ASSERT_EQ(0, ds_peer_add(self->ctx, 1, addr, PORT_B, &peer))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, wait_rsegs(self->ctx, 1, peer, 1));
	self->fd = attach_open(1);
	ASSERT_LE(0, self->fd);
	self->buf = aligned_alloc(4096, BUF_SIZE);
	ASSERT_NE(NULL, self->buf);
	reg.addr = (uintptr_t)self->buf;
	reg.len = BUF_SIZE;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_MR_REG, &reg));
	self->mr = reg.handle;
}

FIXTURE_TEARDOWN(submit)
{
	if (self->fd >= 0)
		close(self->fd);
	free(self->buf);
	ds_node_del(self->ctx, 1);
	ds_node_del(self->ctx, 2);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

/* Request i of XFER_NR: XFER_SIZE bytes of the buffer, half the segment. */
static void big_reqs(struct dsmem_xfer_req *r, uint8_t op, uint32_t mr, uint64_t seg)
{
	for (int i = 0; i < XFER_NR; i++)
		r[i] = (struct dsmem_xfer_req){
			.opcode = op, .mr = mr, .local = (uint64_t)i * XFER_SIZE,
			.remote = seg + (uint64_t)(i % 2) * XFER_SIZE, .len = XFER_SIZE };
}

/*
 * A 1 ns deadline on a 64 MiB READ (16 on the debug kernel): the ioctl
 * returns with result -ETIME and the task kept, pending, though RELEASE
 * was asked; its buffer stays in use; it goes on, and is released by its
 * id once done, whole.
 */
TEST_F_TIMEOUT(submit, submit_timeout, 300)
{
	struct dsmem_xfer_req r[XFER_NR];
	struct dsmem_xfer_status st[XFER_NR];
	struct dsmem_ioc_submit sub = {
		.reqs = (uintptr_t)r, .nr = XFER_NR, .req_size = sizeof(r[0]),
		.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE };
	struct dsmem_ioc_task tq = { 0 };
	struct dsmem_ioc_mr_dereg dr = { .handle = self->mr };
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

	/* the segment's halves hold two patterns */
	test_fill(self->buf, 2 * XFER_SIZE, 41);
	big_reqs(r, DSMEM_XFER_WRITE, self->mr, self->seg);
	sub.nr = 2;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	ASSERT_EQ(0, sub.result);
	ASSERT_EQ(0, sub.task);

	memset(self->buf, 0, BUF_SIZE);
	big_reqs(r, DSMEM_XFER_READ, self->mr, self->seg);
	sub.nr = XFER_NR;
	sub.timeout_ns = 1;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(-ETIME, sub.result);
	ASSERT_NE(0, sub.task);
	EXPECT_EQ(1, sub.timeout_ns);	/* left as it was */

	tq.task = sub.task;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_TASK, &tq));
	EXPECT_EQ(DSMEM_TASK_PENDING, tq.state);
	/* its buffer is in use while it runs */
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_MR_DEREG, &dr));
	EXPECT_EQ(EBUSY, errno);
	/* a RELEASE of a pending task leaves it */
	tq = (struct dsmem_ioc_task){ .task = sub.task, .flags = DSMEM_TASK_RELEASE };
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_TASK, &tq));
	EXPECT_EQ(DSMEM_TASK_PENDING, tq.state);

	/* done later: poll says so; then released, with every status
	 * (64 MiB over rxe on the debug kernel under TCG can take over a
	 * minute: CI once saw it not done at 60 s) */
	EXPECT_EQ(1, poll(&pfd, 1, 240000));
	tq = (struct dsmem_ioc_task){ .task = sub.task, .status = (uintptr_t)st,
				      .nr = XFER_NR,
				      .flags = DSMEM_TASK_WAIT | DSMEM_TASK_RELEASE };
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_TASK, &tq));
	EXPECT_EQ(DSMEM_TASK_COMPLETE, tq.state);
	EXPECT_EQ(XFER_NR, tq.done);
	EXPECT_EQ((uint64_t)BUF_SIZE, tq.bytes);
	for (int i = 0; i < XFER_NR; i++) {
		EXPECT_EQ(0, st[i].status);
		EXPECT_EQ(XFER_SIZE, st[i].bytes);
	}
	/* the data arrived, though nobody waited for it */
	test_fill(self->buf + BUF_SIZE - 2 * XFER_SIZE, 2 * XFER_SIZE, 41);
	for (int i = 0; i < XFER_NR - 2; i++) {
		EXPECT_EQ(0, memcmp(self->buf + (uint64_t)i * XFER_SIZE,
				    self->buf + BUF_SIZE - (2 - i % 2) * XFER_SIZE,
				    XFER_SIZE)) TH_LOG("request %d", i);
	}
	/* forgotten now, and its buffer free */
	tq = (struct dsmem_ioc_task){ .task = sub.task };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_TASK, &tq));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, ioctl(self->fd, DSMEM_IOC_MR_DEREG, &dr));
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * not_after_ns: a WRITE whose instant (CLOCK_BOOTTIME) has passed never
 * starts: -ETIMEDOUT, no byte moved, the segment as it was, xfer_late
 * counted; one whose instant is ahead lands.  So does a READ, and a
 * batch of requests to the node's own segment (a copy, not the device)
 * is held to it the same way.
 */
TEST_F_TIMEOUT(submit, submit_not_after, 120)
{
	const uint32_t len = 65536;
	struct dsmem_xfer_req r = { .opcode = DSMEM_XFER_WRITE, .mr = self->mr,
				    .remote = self->seg, .len = len };
	struct dsmem_ioc_submit sub = {
		.reqs = (uintptr_t)&r, .nr = 1, .req_size = sizeof(r),
		.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE };
	struct dsmem_ioc_task tq = { 0 };
	struct dsmem_xfer_status st;
	uint64_t late0 = stat_value(self->ctx, "xfer_late");
	struct dsmem_ioc_version v = {};
	struct ds_seg_info own;

	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	ASSERT_TRUE(v.features & DSMEM_FEAT_NOT_AFTER);
	/* the segment's first 64 KiB: pattern 51, in time */
	test_fill(self->buf, len, 51);
	sub.not_after_ns = boottime_ns() + 60000000000ull;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	ASSERT_EQ(0, sub.result);
	EXPECT_EQ(late0, stat_value(self->ctx, "xfer_late"));

	/* pattern 52, a nanosecond late: refused at its post */
	test_fill(self->buf, len, 52);
	sub.not_after_ns = boottime_ns() - 1;
	sub.flags = DSMEM_SUBMIT_WAIT;
	sub.task = 0;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(-ETIMEDOUT, sub.result);
	tq = (struct dsmem_ioc_task){ .task = sub.task, .status = (uintptr_t)&st, .nr = 1,
				      .flags = DSMEM_TASK_RELEASE };
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_TASK, &tq));
	EXPECT_EQ(DSMEM_TASK_FAILED, tq.state);
	EXPECT_EQ(-ETIMEDOUT, st.status);
	EXPECT_EQ(0, st.bytes);
	EXPECT_EQ(late0 + 1, stat_value(self->ctx, "xfer_late"));

	/* the segment still holds pattern 51: read back in time */
	memset(self->buf, 0, len);
	r.opcode = DSMEM_XFER_READ;
	sub.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE;
	sub.task = 0;
	sub.result = 0;
	sub.not_after_ns = boottime_ns() + 60000000000ull;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	ASSERT_EQ(0, sub.result);
	test_fill(self->buf + len, len, 51);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + len, len)) TH_LOG("a late write landed");

	/* a late READ moves nothing either */
	memset(self->buf, 0, len);
	sub.not_after_ns = 1;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(-ETIMEDOUT, sub.result);
	EXPECT_EQ(0, self->buf[0]);
	EXPECT_EQ(late0 + 2, stat_value(self->ctx, "xfer_late"));

	/* node 1's own segment, which it reaches by a copy: the same */
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &own));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 1, own.id, 1, DSMEM_PERM_ALL));
	r = (struct dsmem_xfer_req){ .opcode = DSMEM_XFER_WRITE, .mr = self->mr,
				     .remote = own.addr, .len = len };
	test_fill(self->buf, len, 53);
	sub.not_after_ns = 1;
	sub.result = 0;		/* (an input too: must be 0) */
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(-ETIMEDOUT, sub.result);
	EXPECT_EQ(late0 + 3, stat_value(self->ctx, "xfer_late"));
	sub.not_after_ns = boottime_ns() + 60000000000ull;
	sub.result = 0;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(0, sub.result);
	EXPECT_EQ(late0 + 3, stat_value(self->ctx, "xfer_late"));
}

/*
 * libdsuser's ds_batch_submit_until, on the rings and on the ioctl path:
 * a late batch's request fails with -ETIMEDOUT and writes nothing; 0 is
 * no instant.
 */
TEST_F_TIMEOUT(submit, batch_submit_until, 120)
{
	uint64_t threads;

	/* one ring at least (a quarter of the guest's two CPUs is none) */
	ASSERT_EQ(0, param_get("ring_threads", &threads));
	ASSERT_EQ(0, param_set("ring_threads", 1));
	for (int rings = 1; rings >= 0; rings--) {
		struct ds_xfer_attr a = DS_XFER_ATTR_INIT;
		struct ds_transfer_request q = { .target_id = self->seg, .length = 4096,
						 .opcode = DS_OP_WRITE };
		struct ds_transfer_status st;
		struct ds_xfer *x;
		uint64_t task;
		uint8_t *p = aligned_alloc(4096, 8192);
		uint32_t mr;
		int state;

		ASSERT_NE(NULL, p);
		if (!rings)
			a.flags |= DS_XFER_NO_RINGS;
		ASSERT_EQ(0, ds_xfer_open_attr(1, &a, &x));
		EXPECT_EQ(rings, ds_xfer_rings(x)) TH_LOG("rings %d", rings);
		ASSERT_EQ(0, ds_mr_reg(x, p, 8192, &mr));
		q.mr = mr;
		test_fill(p, 4096, 60 + rings);
		ASSERT_EQ(0, ds_batch_submit_until(x, &q, 1, 0, &task));
		ASSERT_EQ(0, ds_task_query(x, task, 1, 1, &state, &st, 1));
		EXPECT_EQ(DS_TASK_COMPLETE, state);
		test_fill(p, 4096, 70 + rings);
		ASSERT_EQ(0, ds_batch_submit_until(x, &q, 1, boottime_ns() - 1, &task));
		ASSERT_EQ(0, ds_task_query(x, task, 1, 1, &state, &st, 1));
		EXPECT_EQ(DS_TASK_FAILED, state);
		EXPECT_EQ(-ETIMEDOUT, st.status);
		/* the segment holds the first pattern */
		q.opcode = DS_OP_READ;
		q.source_offset = 4096;
		ASSERT_EQ(0, ds_batch_submit_until(x, &q, 1, boottime_ns() + 60000000000ull, &task));
		ASSERT_EQ(0, ds_task_query(x, task, 1, 1, &state, &st, 1));
		EXPECT_EQ(DS_TASK_COMPLETE, state);
		test_fill(p, 4096, 60 + rings);
		EXPECT_EQ(0, memcmp(p, p + 4096, 4096)) TH_LOG("a late write landed (rings %d)", rings);
		ds_mr_dereg(x, mr);
		ds_xfer_close(x);
		free(p);
	}
	EXPECT_EQ(0, param_set("ring_threads", threads));
}

/* A deadline that is not reached changes nothing; one without WAIT is refused. */
TEST_F_TIMEOUT(submit, submit_timeout_met, 120)
{
	struct dsmem_xfer_req r = { .opcode = DSMEM_XFER_READ, .mr = self->mr,
				    .remote = self->seg, .len = 4096 };
	struct dsmem_ioc_submit sub = {
		.reqs = (uintptr_t)&r, .nr = 1, .req_size = sizeof(r),
		.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE,
		.timeout_ns = 60000000000ull };
	struct dsmem_ioc_task tq = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(0, sub.result);
	EXPECT_EQ(0, sub.task);		/* released */

	/* WAIT alone: the task stays, done */
	sub.flags = DSMEM_SUBMIT_WAIT;
	sub.task = 0;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(0, sub.result);
	ASSERT_NE(0, sub.task);
	tq.task = sub.task;
	tq.flags = DSMEM_TASK_RELEASE;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_TASK, &tq));
	EXPECT_EQ(DSMEM_TASK_COMPLETE, tq.state);

	/* a failed transfer's status, within the deadline, as without one */
	r.remote = self->seg + SEG_SIZE - 8;
	sub.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE;
	sub.task = 0;
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(-ERANGE, sub.result);
	EXPECT_EQ(0, sub.task);

	/* a deadline needs a wait */
	r.remote = self->seg;
	sub.result = 0;
	sub.flags = 0;
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_SUBMIT, &sub));
	EXPECT_EQ(EINVAL, errno);
}

/* The 32-byte struct of old binaries: synchronous as ever, no deadline;
 * the 40-byte one: no instant. */
TEST_F_TIMEOUT(submit, submit_timeout_ver0, 300)
{
	struct dsmem_xfer_req r[XFER_NR];
	struct dsmem_ioc_submit sub = {
		.reqs = (uintptr_t)r, .nr = XFER_NR, .req_size = sizeof(r[0]),
		.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE,
		.timeout_ns = 1,	/* beyond VER0: never read */
		.not_after_ns = 1 };	/* beyond VER1: never read */
	unsigned long cmd0 = _IOC(RW, DSMEM_IOCTL_MAGIC, SUBMIT_NR,
				  DSMEM_IOC_SUBMIT_SIZE_VER0);
	unsigned long cmd1 = _IOC(RW, DSMEM_IOCTL_MAGIC, SUBMIT_NR,
				  DSMEM_IOC_SUBMIT_SIZE_VER1);

	ASSERT_EQ(DSMEM_IOC_SUBMIT_SIZE_VER2, sizeof(sub));
	ASSERT_EQ(DSMEM_IOC_SUBMIT_SIZE_VER2, _IOC_SIZE(DSMEM_IOC_SUBMIT));
	test_fill(self->buf, 2 * XFER_SIZE, 43);
	big_reqs(r, DSMEM_XFER_WRITE, self->mr, self->seg);
	sub.nr = 2;
	ASSERT_EQ(0, ioctl(self->fd, cmd0, &sub));
	EXPECT_EQ(0, sub.result);
	EXPECT_EQ(0, sub.task);
	memset(self->buf, 0, BUF_SIZE);
	big_reqs(r, DSMEM_XFER_READ, self->mr, self->seg);
	sub.nr = XFER_NR;
	ASSERT_EQ(0, ioctl(self->fd, cmd0, &sub));
	EXPECT_EQ(0, sub.result);	/* done, all of it */
	EXPECT_EQ(0, sub.task);		/* and released */
	EXPECT_EQ(1, sub.timeout_ns);	/* not written back */
	test_fill(self->buf + BUF_SIZE - XFER_SIZE, XFER_SIZE, 43);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + BUF_SIZE - XFER_SIZE, XFER_SIZE));
	/* VER1: its timeout_ns (none), not the instant past VER1 */
	sub.timeout_ns = 0;
	sub.nr = 1;
	ASSERT_EQ(0, ioctl(self->fd, cmd1, &sub));
	EXPECT_EQ(0, sub.result);
	EXPECT_EQ(1, sub.not_after_ns);	/* not written back */
	/* and smaller than VER0 is refused */
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, SUBMIT_NR,
					   DSMEM_IOC_SUBMIT_SIZE_VER0 - 8), &sub));
	EXPECT_EQ(EINVAL, errno);
}

/* A struct larger than VER2: a zero tail is taken, any other is -E2BIG. */
TEST_F(submit, submit_e2big)
{
	struct dsmem_xfer_req r = { .opcode = DSMEM_XFER_READ, .mr = self->mr,
				    .remote = self->seg, .len = 64 };
	struct {
		struct dsmem_ioc_submit sub;
		uint64_t future;
	} big = {
		.sub = { .reqs = (uintptr_t)&r, .nr = 1, .req_size = sizeof(r),
			 .flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE,
			 .timeout_ns = 60000000000ull },
	};
	unsigned long cmd = _IOC(RW, DSMEM_IOCTL_MAGIC, SUBMIT_NR, sizeof(big));
	uint64_t before = stat_value(NULL, "ioctl_nonzero_tail");

	ASSERT_EQ(56, sizeof(big));
	ASSERT_EQ(0, ioctl(self->fd, cmd, &big));
	EXPECT_EQ(0, big.sub.result);
	EXPECT_EQ(0, big.sub.task);
	EXPECT_EQ(0, big.future);
	big.future = 1;
	EXPECT_EQ(-1, ioctl(self->fd, cmd, &big));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(before + 1, stat_value(NULL, "ioctl_nonzero_tail"));
	/* nothing ran: no task was made */
	EXPECT_EQ(0, big.sub.task);
}

TEST_HARNESS_MAIN
