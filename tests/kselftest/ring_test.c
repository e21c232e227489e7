// SPDX-License-Identifier: BSD-2-Clause
/*
 * The data path's shared rings, driven through the raw ABI: node 1 moves
 * data to and from node 2's segment through a submission and a completion
 * ring it maps, and everything a program can write into its rings or pass
 * to the two ioctls is tried against the module.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define SEG_SIZE	(16u << 20)
#define BUF_SIZE	(10u << 20)
#define PORT_A		7481
#define PORT_B		7482


static int ring_open(struct test_ring *r, int fd, uint32_t entries, uint32_t idle_us)
{
	memset(r, 0, sizeof(*r));
	r->s.sq_entries = entries;
	r->s.idle_us = idle_us;
	if (ioctl(fd, DSMEM_IOC_RING_SETUP, &r->s))
		return -errno;
	return test_ring_map(r, fd);
}

static void ring_close(struct test_ring *r)
{
	test_ring_unmap(r);
}

static void ring_push(struct test_ring *r, const struct dsmem_sqe *e)
{
	r->sqes[r->sq_tail & (r->s.sq_entries - 1)] = *e;
	r->sq_tail++;
}

/* Publish the tail, and wake the thread if it went to sleep. */
static int ring_submit(struct test_ring *r)
{
	struct dsmem_ioc_ring_enter en = { .flags = DSMEM_ENTER_SQ_WAKEUP };

	__atomic_store_n(&r->sq->tail, r->sq_tail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->sq->flags, __ATOMIC_RELAXED) & DSMEM_RING_NEED_WAKEUP)
		return ioctl(r->fd, DSMEM_IOC_RING_ENTER, &en) ? -errno : 1;
	return 0;
}

/* Wait for and take one completion: spin a little, then sleep. */
static int ring_reap(struct test_ring *r, struct dsmem_cqe *out)
{
	/* an 8 MiB transfer once took over 10 s on a loaded debug guest */
	struct dsmem_ioc_ring_enter en = { .flags = DSMEM_ENTER_GETEVENTS,
					   .min_complete = 1,
					   .timeout_ns = 60000000000ull };

	for (int spin = 0;; spin++) {
		if (__atomic_load_n(&r->cq->tail, __ATOMIC_ACQUIRE) != r->cq_head)
			break;
		if (spin > 1000 && ioctl(r->fd, DSMEM_IOC_RING_ENTER, &en))
			return -errno;
	}
	*out = r->cqes[r->cq_head & (r->s.cq_entries - 1)];
	r->cq_head++;
	__atomic_store_n(&r->cq->head, r->cq_head, __ATOMIC_RELEASE);
	return 0;
}

/*
 * A generous bound for a wait that ends on an event of the ring (a flag
 * set, completions arrived): a hang fails, a slow host does not.
 */
#define RING_WAIT_MS	60000

/* Whether the ring's thread says that it sleeps (waits for it to). */
static bool thread_asleep(struct test_ring *r)
{
	for (int64_t end = now_ms() + RING_WAIT_MS;; usleep(10000)) {
		if (__atomic_load_n(&r->sq->flags, __ATOMIC_ACQUIRE) &
		    DSMEM_RING_NEED_WAKEUP)
			return true;
		if (now_ms() >= end)
			return false;
	}
}

/* Waits until the CQ's tail reaches at least n; the tail then. */
static uint32_t cq_tail_reaches(struct test_ring *r, uint32_t n)
{
	int64_t end = now_ms() + RING_WAIT_MS;
	uint32_t tail;

	/* the indexes are free-running: "below n" is a negative distance */
	while ((int32_t)((tail = __atomic_load_n(&r->cq->tail, __ATOMIC_ACQUIRE)) - n) < 0 &&
	       now_ms() < end)
		usleep(1000);
	return tail;
}

FIXTURE(ring) {
	uint64_t ring_threads;		/* the module's parameter as it was */
	struct ds_ctx *ctx;
	uint64_t seg;
	int fd;
	uint8_t *buf;
	uint32_t mr;
	struct test_ring r;
};

FIXTURE_SETUP(ring)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct dsmem_ioc_mr_reg reg = { .flags = DSMEM_MR_WRITABLE };
	struct ds_seg_info s;
	uint32_t peer;

	ASSERT_EQ(0, param_get("ring_threads", &self->ring_threads));
	ASSERT_EQ(0, param_set("ring_threads", 16));
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

FIXTURE_TEARDOWN(ring)
{
	if (self->fd >= 0)
		close(self->fd);
	free(self->buf);
	ds_node_del(self->ctx, 1);
	ds_node_del(self->ctx, 2);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, param_set("ring_threads", self->ring_threads));
	EXPECT_EQ(0, kernel_taint() & ~(1UL << 12 | 1UL << 13));
}

static struct dsmem_sqe xfer(uint8_t op, uint32_t mr, uint64_t local, uint64_t remote,
			     uint64_t len, uint64_t user_data)
{
	return (struct dsmem_sqe){ .req = { .opcode = op, .mr = mr, .local = local,
					    .remote = remote, .len = len },
				   .user_data = user_data };
}

/* 1 B to 4 MiB at unaligned offsets, written then read back, verified. */
TEST_F_TIMEOUT(ring, roundtrip_sizes, 300)
{
	static const size_t sizes[] = { 1, 7, 64, 4095, 4097, 65539,
					(1 << 20) + 5, 4 << 20 };
	uint8_t *out = self->buf, *in = self->buf + (4 << 20) + 64;
	struct dsmem_cqe c;

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 8, 0));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], off = (i * 4099) % 4096 + 1;
		uint64_t ra = self->seg + (i * 1234567) % (SEG_SIZE - n);
		struct dsmem_sqe w = xfer(DSMEM_XFER_WRITE, self->mr, off, ra, n, 2 * i);
		struct dsmem_sqe rd = xfer(DSMEM_XFER_READ, self->mr,
					   in - self->buf + 3, ra, n, 2 * i + 1);

		test_fill(out + off, n, i + 1);
		memset(in + 3, 0, n);
		ring_push(&self->r, &w);
		ASSERT_LE(0, ring_submit(&self->r));
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_EQ(2 * i, c.user_data);
		ASSERT_EQ(0, c.status) TH_LOG("write of %zu: %d", n, c.status);
		ASSERT_EQ(n, c.bytes);
		ring_push(&self->r, &rd);
		ASSERT_LE(0, ring_submit(&self->r));
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_EQ(2 * i + 1, c.user_data);
		ASSERT_EQ(0, c.status);
		ASSERT_EQ(0, memcmp(out + off, in + 3, n)) TH_LOG("size %zu", n);
	}
	ring_close(&self->r);
}

/* A full ring of reads in flight, CAS and FAA, and each completion once. */
TEST_F_TIMEOUT(ring, deep_queue_and_atomics, 300)
{
	enum { N = 64, SZ = 4096 };
	uint8_t seen[N] = { 0 };
	struct dsmem_sqe cas;
	struct dsmem_cqe c;
	uint64_t *word = (uint64_t *)(self->buf + BUF_SIZE - 64);

	ASSERT_EQ(0, ring_open(&self->r, self->fd, N, 0));
	ASSERT_EQ(N, self->r.s.sq_entries);
	ASSERT_EQ(2 * N, self->r.s.cq_entries);
	test_fill(self->buf, N * SZ, 7);
	for (int i = 0; i < N; i++) {
		struct dsmem_sqe e = xfer(DSMEM_XFER_WRITE, self->mr, i * SZ,
					  self->seg + i * SZ, SZ, i);
		ring_push(&self->r, &e);
	}
	ASSERT_LE(0, ring_submit(&self->r));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_GT(N, c.user_data);
		ASSERT_EQ(0, seen[c.user_data]++);
		ASSERT_EQ(0, c.status);
	}
	/* FAA three times, then CAS from the value found */
	word[0] = 0;
	for (int i = 0; i < 3; i++) {
		struct dsmem_sqe e = xfer(DSMEM_XFER_FAA, self->mr, BUF_SIZE - 64,
					  self->seg + SEG_SIZE - 8, 8, 100 + i);
		e.req.compare_add = 5;
		ring_push(&self->r, &e);
		ASSERT_LE(0, ring_submit(&self->r));
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_EQ(0, c.status);
	}
	cas = xfer(DSMEM_XFER_CAS, self->mr, BUF_SIZE - 64, self->seg + SEG_SIZE - 8,
		   8, 200);
	cas.req.compare_add = 15;
	cas.req.swap = 42;
	ring_push(&self->r, &cas);
	ASSERT_LE(0, ring_submit(&self->r));
	ASSERT_EQ(0, ring_reap(&self->r, &c));
	ASSERT_EQ(0, c.status);
	/* the value found: three adds of 5 */
	ASSERT_EQ(15, word[0]);
	ring_close(&self->r);
}

/* Hostile entries: each fails alone, with an errno, and the ring goes on. */
TEST_F(ring, bad_entries_fail_alone)
{
	struct {
		struct dsmem_sqe e;
		int status;
	} bad[] = {
		{ xfer(DSMEM_XFER_READ, 0, 0, 0, 8, 0), -EINVAL },	/* no mr */
		{ xfer(DSMEM_XFER_READ, 999, 0, 0, 8, 0), -ENOENT },
		{ xfer(9, 1, 0, 0, 8, 0), -EINVAL },
		{ xfer(DSMEM_XFER_READ, 1, BUF_SIZE - 4, 0, 8, 0), -ERANGE },
		{ xfer(DSMEM_XFER_READ, 1, 0, 0, 0, 0), -EINVAL },
		{ xfer(DSMEM_XFER_CAS, 1, 0, 0, 4, 0), -EINVAL },
		{ xfer(DSMEM_XFER_READ, 1, 0, 0, 8, 0), -ERANGE },	/* past the segment */
	};
	struct dsmem_sqe late, good;
	struct dsmem_cqe c;
	size_t i;

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 16, 0));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bad[i].e.req.mr = bad[i].e.req.mr == 1 ? self->mr : bad[i].e.req.mr;
		if (i == 6)
			bad[i].e.req.remote = self->seg + SEG_SIZE - 4;
		bad[i].e.user_data = i;
		ring_push(&self->r, &bad[i].e);
	}
	/* past its instant (1 ns of CLOCK_BOOTTIME): it never starts */
	late = xfer(DSMEM_XFER_READ, self->mr, 0, self->seg, 8, 77);
	late.not_after_ns = 1;
	ring_push(&self->r, &late);
	ASSERT_LE(0, ring_submit(&self->r));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_EQ(i, c.user_data);
		EXPECT_EQ(bad[i].status, c.status)
			TH_LOG("entry %zu", i);
	}
	ASSERT_EQ(0, ring_reap(&self->r, &c));
	EXPECT_EQ(77, c.user_data);
	EXPECT_EQ(-ETIMEDOUT, c.status);
	EXPECT_EQ(0, c.bytes);
	/* and a good one after */
	good = xfer(DSMEM_XFER_READ, self->mr, 0, self->seg, 64, 78);
	ring_push(&self->r, &good);
	ASSERT_LE(0, ring_submit(&self->r));
	ASSERT_EQ(0, ring_reap(&self->r, &c));
	EXPECT_EQ(78, c.user_data);
	EXPECT_EQ(0, c.status);
	ring_close(&self->r);
}

/*
 * Indexes a program makes up: a tail far beyond a full ring is taken as a
 * full ring; a CQ head beyond the tail stalls that ring, nothing else.
 */
TEST_F_TIMEOUT(ring, hostile_indexes, 120)
{
	struct dsmem_ioc_ring_enter en = { .flags = DSMEM_ENTER_GETEVENTS,
					   .min_complete = 1, .timeout_ns = 300000000 };
	struct dsmem_cqe c;
	uint32_t got;

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 4, 0));
	/* every slot holds a valid small read */
	for (int i = 0; i < 4; i++) {
		struct dsmem_sqe e = xfer(DSMEM_XFER_READ, self->mr, i * 64, self->seg, 64, i);

		self->r.sqes[i] = e;
	}
	self->r.sq_tail = 1000003;
	ASSERT_LE(0, ring_submit(&self->r));
	/*
	 * A full ring's worth, at most: the CQ holds twice the SQ.  The four
	 * slots' reads complete, and the thread, with nothing more it may
	 * take, goes to sleep: what it completes by then is what the tail
	 * made up got it, whenever that happens.
	 */
	cq_tail_reaches(&self->r, 4);
	ASSERT_TRUE(thread_asleep(&self->r));
	got = __atomic_load_n(&self->r.cq->tail, __ATOMIC_ACQUIRE);
	EXPECT_GE(8, got);
	EXPECT_LE(4, got);
	while (self->r.cq_head != got)
		ASSERT_EQ(0, ring_reap(&self->r, &c));
	/* a CQ head ahead of the tail: no room is left, nothing faults */
	__atomic_store_n(&self->r.cq->head,
			 __atomic_load_n(&self->r.cq->tail, __ATOMIC_ACQUIRE) + 100,
			 __ATOMIC_RELEASE);
	usleep(200000);
	got = __atomic_load_n(&self->r.cq->tail, __ATOMIC_ACQUIRE);
	usleep(200000);
	EXPECT_EQ(got, __atomic_load_n(&self->r.cq->tail, __ATOMIC_ACQUIRE));
	/* GETEVENTS with that head returns at once or times out, never hangs */
	errno = 0;
	ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en);
	EXPECT_NE(EFAULT, errno);
	ring_close(&self->r);
}

/* The thread sleeps after idle_us, says so, and an enter wakes it. */
TEST_F_TIMEOUT(ring, idle_thread_sleeps_and_wakes, 120)
{
	struct dsmem_cqe c;
	struct dsmem_sqe e = xfer(DSMEM_XFER_READ, self->mr, 0, self->seg, 8, 5);
	int woke = 0;

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 4, 1000));
	ASSERT_TRUE(thread_asleep(&self->r));
	ring_push(&self->r, &e);
	woke = ring_submit(&self->r);
	ASSERT_EQ(1, woke);
	ASSERT_EQ(0, ring_reap(&self->r, &c));
	EXPECT_EQ(5, c.user_data);
	EXPECT_EQ(0, c.status);
	ring_close(&self->r);
}

/* The CPU time (ticks) of our ring's thread, dsmem-sq/<our pid>; -1 if none. */
static long sq_thread_ticks(void)
{
	char want[32], path[300], comm[32], stat[512];
	struct dirent *d;
	long ticks = -1;
	DIR *dir;

	/* a task's comm is cut at 15 characters */
	snprintf(want, sizeof(want), "dsmem-sq/%d", getpid());
	want[15] = '\0';
	strcat(want, "\n");
	dir = opendir("/proc");
	if (!dir)
		return -1;
	while ((d = readdir(dir)) && ticks < 0) {
		unsigned long ut, st;
		char *p;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f) || strcmp(comm, want)) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		f = fopen(path, "r");
		if (!f)
			break;
		/* fields 14 and 15, after the comm's closing parenthesis */
		if (fgets(stat, sizeof(stat), f) && (p = strrchr(stat, ')')) &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			   &ut, &st) == 2)
			ticks = (long)(ut + st);
		fclose(f);
	}
	closedir(dir);
	return ticks;
}

/*
 * A full CQ with entries still in the SQ: the thread cannot take them,
 * so it sleeps rather than spin; the program's head and a wake-up resume
 * it.
 */
TEST_F_TIMEOUT(ring, full_cq_thread_sleeps, 120)
{
	struct dsmem_ioc_ring_enter en = { .flags = DSMEM_ENTER_GETEVENTS |
						    DSMEM_ENTER_SQ_WAKEUP,
					   .min_complete = 1 };
	struct dsmem_cqe c;
	uint32_t cq;
	long t0, t1;

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 4, 1000));
	cq = self->r.s.cq_entries;
	ASSERT_EQ(8, cq);
	for (uint32_t i = 0; i < cq + 4; i++) {
		struct dsmem_sqe e = xfer(DSMEM_XFER_READ, self->mr, 8 * i,
					  self->seg, 8, i);

		while (self->r.sq_tail - __atomic_load_n(&self->r.sq->head, __ATOMIC_ACQUIRE) ==
		       self->r.s.sq_entries)
			usleep(1000);
		ring_push(&self->r, &e);
		ASSERT_LE(0, ring_submit(&self->r));
	}
	/* the CQ fills (however long its reads take); four entries stay in the SQ */
	ASSERT_EQ(cq, cq_tail_reaches(&self->r, cq));
	ASSERT_TRUE(thread_asleep(&self->r));
	EXPECT_EQ(self->r.sq_tail - 4, __atomic_load_n(&self->r.sq->head, __ATOMIC_ACQUIRE));
	t0 = sq_thread_ticks();
	ASSERT_LE(0, t0);
	usleep(500000);
	t1 = sq_thread_ticks();
	EXPECT_GE(2, t1 - t0) TH_LOG("the thread ran %ld ticks while it had nothing it could do",
				     t1 - t0);

	/* consume the CQ, then wake the thread with the head moved */
	for (uint32_t i = 0; i < cq; i++) {
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		EXPECT_EQ(i, c.user_data);
		EXPECT_EQ(0, c.status);
	}
	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en));
	for (uint32_t i = cq; i < cq + 4; i++) {
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		EXPECT_EQ(i, c.user_data);
		EXPECT_EQ(0, c.status);
	}
	ring_close(&self->r);
}

/*
 * Rings beyond the module's ring_threads are refused with EAGAIN (the
 * ioctl path stays), counted, and given again once one is gone.
 */
TEST_F(ring, refused_beyond_ring_threads)
{
	struct test_ring other;
	uint64_t refused = stat_value(self->ctx, "rings_refused");
	int fd2 = attach_open(1);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, param_set("ring_threads", 1));
	ASSERT_EQ(0, ring_open(&self->r, self->fd, 4, 0));
	EXPECT_EQ(-EAGAIN, ring_open(&other, fd2, 4, 0));
	EXPECT_EQ(refused + 1, stat_value(self->ctx, "rings_refused"));
	ring_close(&self->r);
	close(self->fd);	/* its ring goes with it */
	self->fd = -1;
	ASSERT_EQ(0, ring_open(&other, fd2, 4, 0));
	ring_close(&other);
	close(fd2);
}

/* What the ioctls and mmap refuse. */
TEST_F(ring, setup_enter_and_mmap_are_checked)
{
	struct dsmem_ioc_ring_setup s = { 0 };
	struct dsmem_ioc_ring_enter en = { 0 };
	int unattached = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	void *p;

	ASSERT_LE(0, unattached);
	s.sq_entries = 4;
	EXPECT_EQ(-1, ioctl(unattached, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(ENOTCONN, errno);
	en.flags = DSMEM_ENTER_SQ_WAKEUP;
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en));
	EXPECT_EQ(ENXIO, errno);
	close(unattached);

	s = (struct dsmem_ioc_ring_setup){ .sq_entries = 0 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	s = (struct dsmem_ioc_ring_setup){ .sq_entries = DSMEM_RING_ENTRIES_MAX + 1 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	s = (struct dsmem_ioc_ring_setup){ .sq_entries = 8, .idle_us = 100001 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	s = (struct dsmem_ioc_ring_setup){ .sq_entries = 8, .cq_entries = 4 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	s = (struct dsmem_ioc_ring_setup){ .sq_entries = 8, .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 5, 0));
	EXPECT_EQ(8, self->r.s.sq_entries);
	EXPECT_EQ(16, self->r.s.cq_entries);
	s = (struct dsmem_ioc_ring_setup){ .sq_entries = 8 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_SETUP, &s));
	EXPECT_EQ(EBUSY, errno);

	/* private, executable, too long, elsewhere */
	p = mmap(NULL, self->r.s.sq_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 self->fd, self->r.s.sq_off);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, self->r.s.sq_bytes, PROT_READ | PROT_EXEC, MAP_SHARED,
		 self->fd, self->r.s.sq_off);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, self->r.s.sq_bytes + 4096, PROT_READ, MAP_SHARED,
		 self->fd, self->r.s.sq_off);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		 self->r.s.sq_off + 4096);
	EXPECT_EQ(MAP_FAILED, p);
	/* an exec upgrade of a good mapping */
	EXPECT_EQ(-1, mprotect(self->r.sq_mem, self->r.s.sq_bytes,
			       PROT_READ | PROT_EXEC));

	en = (struct dsmem_ioc_ring_enter){ .flags = 4 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en));
	EXPECT_EQ(EINVAL, errno);
	en = (struct dsmem_ioc_ring_enter){ .flags = DSMEM_ENTER_GETEVENTS };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en));
	EXPECT_EQ(EINVAL, errno);
	en = (struct dsmem_ioc_ring_enter){ .flags = DSMEM_ENTER_GETEVENTS,
					    .min_complete = 1, .timeout_ns = 1000000 };
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en));
	EXPECT_EQ(ETIME, errno);
	ring_close(&self->r);
}

/*
 * What a bounded wait on the rings rests on (libdsuser's xfer_run_until):
 * a 1 ns wait for an 8 MiB READ ends with ETIME and leaves it in flight;
 * the next batch, pushed meanwhile, completes with its own user_data and
 * data, and the abandoned READ's completion arrives too, whole, named by
 * its own user_data: never taken for the next batch's.
 */
TEST_F_TIMEOUT(ring, deadline_then_next_batch, 120)
{
	enum { BIG = 8 << 20, SMALL = 64 << 10, OFF_W = 9 << 20,
	       OFF_R = OFF_W + SMALL };
	struct dsmem_ioc_ring_enter en = { .flags = DSMEM_ENTER_GETEVENTS,
					   .min_complete = 1, .timeout_ns = 1 };
	struct dsmem_sqe big = xfer(DSMEM_XFER_READ, self->mr, 0, self->seg, BIG, 1000);
	struct dsmem_sqe w = xfer(DSMEM_XFER_WRITE, self->mr, OFF_W,
				  self->seg + SEG_SIZE - SMALL, SMALL, 2000);
	struct dsmem_sqe rd = xfer(DSMEM_XFER_READ, self->mr, OFF_R,
				   self->seg + SEG_SIZE - SMALL, SMALL, 2001);
	bool big_done = false, w_done = false, rd_done = false;
	uint8_t *want = malloc(BIG);
	struct dsmem_cqe c;

	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, ring_open(&self->r, self->fd, 16, 0));
	/* the segment's first BIG bytes hold a pattern */
	test_fill(self->buf, BIG, 51);
	memcpy(want, self->buf, BIG);
	w = xfer(DSMEM_XFER_WRITE, self->mr, 0, self->seg, BIG, 1);
	ring_push(&self->r, &w);
	ASSERT_LE(0, ring_submit(&self->r));
	ASSERT_EQ(0, ring_reap(&self->r, &c));
	ASSERT_EQ(1, c.user_data);
	ASSERT_EQ(0, c.status);
	memset(self->buf, 0, BIG);

	/* given up on at once */
	ring_push(&self->r, &big);
	ASSERT_LE(0, ring_submit(&self->r));
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_RING_ENTER, &en));
	EXPECT_EQ(ETIME, errno);
	EXPECT_EQ(self->r.cq_head, __atomic_load_n(&self->r.cq->tail, __ATOMIC_ACQUIRE));

	/* the next batch: a write, then its read back */
	w = xfer(DSMEM_XFER_WRITE, self->mr, OFF_W, self->seg + SEG_SIZE - SMALL,
		 SMALL, 2000);
	test_fill(self->buf + OFF_W, SMALL, 52);
	memset(self->buf + OFF_R, 0, SMALL);
	ring_push(&self->r, &w);
	ASSERT_LE(0, ring_submit(&self->r));
	while (!w_done) {
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_TRUE(c.user_data == 1000 || c.user_data == 2000)
			TH_LOG("user_data %llu", (unsigned long long)c.user_data);
		EXPECT_EQ(0, c.status);
		if (c.user_data == 1000) {
			ASSERT_FALSE(big_done);
			big_done = true;
			EXPECT_EQ(BIG, c.bytes);
		} else {
			w_done = true;
			EXPECT_EQ(SMALL, c.bytes);
		}
	}
	ring_push(&self->r, &rd);
	ASSERT_LE(0, ring_submit(&self->r));
	while (!rd_done || !big_done) {
		ASSERT_EQ(0, ring_reap(&self->r, &c));
		ASSERT_TRUE((c.user_data == 1000 && !big_done) ||
			    (c.user_data == 2001 && !rd_done))
			TH_LOG("user_data %llu", (unsigned long long)c.user_data);
		EXPECT_EQ(0, c.status);
		if (c.user_data == 1000) {
			big_done = true;
			EXPECT_EQ(BIG, c.bytes);
		} else {
			rd_done = true;
			EXPECT_EQ(SMALL, c.bytes);
		}
	}
	EXPECT_EQ(0, memcmp(self->buf + OFF_W, self->buf + OFF_R, SMALL));
	/* the abandoned READ's bytes arrived whole */
	EXPECT_EQ(0, memcmp(self->buf, want, BIG));
	/* nothing more: each completion came once */
	EXPECT_EQ(self->r.cq_head, __atomic_load_n(&self->r.cq->tail, __ATOMIC_ACQUIRE));
	free(want);
	ring_close(&self->r);
}

/* Closing with transfers in flight and rings mapped elsewhere. */
TEST_F_TIMEOUT(ring, close_with_work_in_flight, 120)
{
	struct dsmem_ioc_mr_dereg dr = { .handle = self->mr };
	bool dereged;

	ASSERT_EQ(0, ring_open(&self->r, self->fd, 64, 0));
	for (int i = 0; i < 64; i++) {
		struct dsmem_sqe e = xfer(DSMEM_XFER_READ, self->mr, i * 65536,
					  self->seg + i * 65536, 65536, i);
		ring_push(&self->r, &e);
	}
	ASSERT_LE(0, ring_submit(&self->r));
	/*
	 * Busy while the ring's transfers use it; or gone, if the thread had
	 * taken none yet: then the entries it takes later find no buffer.
	 */
	dereged = !ioctl(self->fd, DSMEM_IOC_MR_DEREG, &dr);
	if (!dereged)
		EXPECT_EQ(EBUSY, errno);
	close(self->fd);
	self->fd = -1;
	/* the mappings hold the descriptor: every completion still arrives */
	EXPECT_EQ(64, cq_tail_reaches(&self->r, 64));
	for (int i = 0; i < 64; i++) {
		int st = self->r.cqes[i].status;

		EXPECT_TRUE(st == 0 || (dereged && st == -ENOENT)) TH_LOG("%d", st);
	}
	ring_close(&self->r);
}

TEST_HARNESS_MAIN
