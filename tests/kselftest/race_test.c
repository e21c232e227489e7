// SPDX-License-Identifier: BSD-2-Clause
/*
 * Races and lifetimes of the data path (issue 20): a synchronous submit
 * against a release of its task by id, a completion against a close, the
 * flushed receives of refused connects, a device removed under unreleased
 * tasks, and the RLIMIT_MEMLOCK charge
 * of a task's pinned buffers.  The racing tests hammer their window a
 * number of rounds; under the debug kernel a lost race is a KASAN report.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/membarrier.h>
#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define PORT_A		7481
#define PORT_B		7482
#define SEG_SIZE	(1u << 20)
/*
 * The racing tests hammer their window a number of times, not for a
 * number of seconds: a slow host takes longer over the same rounds, and
 * its verdict is the same.  Time bounds only a wait for an event, and
 * generously (a hang fails).
 */
#define WAIT_MS		60000

/* SUBMIT: 0 or -errno of the ioctl; *sub holds result and task. */
static int submit(int fd, struct dsmem_xfer_req *r, uint32_t nr,
		  uint32_t flags, struct dsmem_ioc_submit *sub)
{
	*sub = (struct dsmem_ioc_submit){
		.reqs = (uintptr_t)r, .nr = nr, .req_size = sizeof(*r),
		.flags = flags };
	return ioctl(fd, DSMEM_IOC_SUBMIT, sub) ? -errno : 0;
}

/* TASK: 0 or -errno of the ioctl; *tq holds the state. */
static int task_query(int fd, uint64_t id, uint32_t flags,
		      struct dsmem_ioc_task *tq)
{
	*tq = (struct dsmem_ioc_task){ .task = id, .flags = flags };
	return ioctl(fd, DSMEM_IOC_TASK, tq) ? -errno : 0;
}

/* mm->pinned_vm of this process, in KiB, or -1. */
static long vm_pinned_kb(void)
{
	char buf[4096], *p;

	if (read_file("/proc/self/status", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "VmPin:");
	return p ? strtol(p + 6, NULL, 10) : -1;
}

/* Node 1 reaches node 2's segment, granted rw, over rxe0. */
/* Taint bits a test added: not the module's own (O, E), nor older ones. */
static unsigned long new_taint(unsigned long before)
{
	return kernel_taint() & ~before & ~(1UL << 12 | 1UL << 13);
}

FIXTURE(race) {
	unsigned long taint;
	struct ds_ctx *ctx;
	uint32_t peer;
	uint64_t seg;
};

FIXTURE_SETUP(race)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct ds_seg_info s;

	self->taint = kernel_taint();
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 1, "rxe0", PORT_A))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 2, "rxe0", PORT_B));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 2, SEG_SIZE, -1,
				DS_TRANSLATE_SEGMENT, &s));
	self->seg = s.addr;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 2, s.id, 1, DSMEM_PERM_ALL));
	ASSERT_EQ(0, test_peer_add(self->ctx, 1, addr, PORT_B, 2, &self->peer))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, wait_rsegs(self->ctx, 1, self->peer, 1));
}

FIXTURE_TEARDOWN(race)
{
	ds_node_del(self->ctx, 1);
	ds_node_del(self->ctx, 2);
	ds_ctx_close(self->ctx);
	EXPECT_EQ(0, new_taint(self->taint));
}

/*
 * Item 1: task ids are cyclic, so another thread can name a task whose
 * SUBMIT_WAIT is still running and release it the moment it is done.  The
 * submitter must still read its own task afterwards (its result, its
 * release).
 */
struct forget_race {
	int fd;
	_Atomic uint64_t last;		/* the submitter's last task id */
	atomic_bool stop;
};

struct releaser {
	struct forget_race *fr;
	uint32_t flags;			/* its TASK flags */
	unsigned long won;		/* tasks it saw done and released */
	unsigned long bad;		/* seen done, yet not COMPLETE */
	int err;			/* an unexpected errno */
};

static void *releaser(void *arg)
{
	struct releaser *rl = arg;
	struct forget_race *fr = rl->fr;
	struct dsmem_ioc_task tq;
	int ret;

	while (!atomic_load(&fr->stop)) {
		uint64_t id = atomic_load(&fr->last) + 1;

		ret = task_query(fr->fd, id, rl->flags, &tq);
		if (ret == -ENOENT)
			continue;
		if (ret) {
			rl->err = ret;
			break;
		}
		if (tq.state == DSMEM_TASK_PENDING)
			continue;
		__atomic_fetch_add(&rl->won, 1, __ATOMIC_RELAXED);
		if (tq.state != DSMEM_TASK_COMPLETE)
			rl->bad++;
	}
	return NULL;
}

/*
 * Submits at least, and then on until the releasers have won once; at
 * most, when they never do.  The debug kernel runs each submit several
 * times slower and watches every one (KASAN, lockdep): a third of the
 * rounds there, as for the other races below.
 */
#define RELEASE_ITERS_MIN	(debug_kernel() ? 1000 : 3000)
#define RELEASE_ITERS_MAX	100000

TEST_F_TIMEOUT(race, submit_wait_vs_task_release, 180)
{
	enum { NR = 8, LEN = 64 };
	struct forget_race fr = {};
	/* one polls, one sleeps in TASK_WAIT as the submitter does */
	struct releaser rl[2] = {
		{ .fr = &fr, .flags = DSMEM_TASK_RELEASE },
		{ .fr = &fr, .flags = DSMEM_TASK_WAIT | DSMEM_TASK_RELEASE },
	};
	struct dsmem_xfer_req r[NR];
	struct dsmem_ioc_mr_reg mr;
	struct dsmem_ioc_submit sub;
	struct dsmem_ioc_task tq;
	unsigned long iters = 0, failed = 0;
	pthread_t t[2];
	void *buf;
	int ret;

	fr.fd = attach_open(1);
	ASSERT_LE(0, fr.fd);
	buf = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	mr = (struct dsmem_ioc_mr_reg){ .addr = (uintptr_t)buf, .len = 1 << 16,
					.flags = DSMEM_MR_WRITABLE };
	ASSERT_EQ(0, ioctl(fr.fd, DSMEM_IOC_MR_REG, &mr));
	/* registered buffers: releasing the task is quick, the window wide */
	for (int i = 0; i < NR; i++)
		r[i] = (struct dsmem_xfer_req){
			.opcode = DSMEM_XFER_READ, .mr = mr.handle,
			.local = i * LEN, .remote = self->seg + i * LEN,
			.len = LEN };

	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, releaser, &rl[i]));
	while (iters < RELEASE_ITERS_MAX &&
	       (iters < RELEASE_ITERS_MIN ||
		!(__atomic_load_n(&rl[0].won, __ATOMIC_RELAXED) +
		  __atomic_load_n(&rl[1].won, __ATOMIC_RELAXED)))) {
		/* one request spins for its task, eight sleep for theirs */
		uint32_t nr = iters & 2 ? NR : 1;
		bool keep = iters & 1;

		ret = submit(fr.fd, r, nr, DSMEM_SUBMIT_WAIT |
			     (keep ? 0 : DSMEM_SUBMIT_RELEASE), &sub);
		if (ret) {
			TH_LOG("submit: %s", strerror(-ret));
			failed++;
			break;
		}
		if (sub.result || (!keep && sub.task))
			failed++;
		if (keep) {
			/* ours to release, unless a releaser was first */
			ret = task_query(fr.fd, sub.task, DSMEM_TASK_RELEASE, &tq);
			if (ret && ret != -ENOENT)
				failed++;
			atomic_store(&fr.last, sub.task);
		} else {
			/* ids are cyclic: it was the one after the last */
			atomic_fetch_add(&fr.last, 1);
		}
		iters++;
	}
	atomic_store(&fr.stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	TH_LOG("%lu submits; other threads released %lu + %lu of them",
	       iters, rl[0].won, rl[1].won);
	EXPECT_EQ(0, failed);
	EXPECT_EQ(0, rl[0].err);
	EXPECT_EQ(0, rl[1].err);
	EXPECT_EQ(0, rl[0].bad + rl[1].bad);
	/* the window was exercised, not just the submitter's own release */
	EXPECT_LT(0, rl[0].won + rl[1].won);
	close(fr.fd);
	munmap(buf, 1 << 16);
}

/*
 * Item 2: a task's completion wakes poll() on its descriptor, while a
 * close waiting for that completion frees the descriptor.
 */
/* submit-and-close rounds of each of the two threads */
#define CLOSE_ROUNDS	(debug_kernel() ? 700UL : 2000UL)

struct close_race {
	uint64_t seg;
	unsigned int seed;
	unsigned long iters;
	int err;
};

static void *closer(void *arg)
{
	struct close_race *cr = arg;
	struct dsmem_ioc_submit sub;
	uint64_t local[4];
	struct dsmem_xfer_req r = {
		.opcode = DSMEM_XFER_READ, .local = (uintptr_t)local,
		.remote = cr->seg, .len = sizeof(local) };
	int fd, ret;

	while (cr->iters < CLOSE_ROUNDS) {
		fd = attach_open(1);
		if (fd < 0) {
			cr->err = fd;
			break;
		}
		ret = submit(fd, &r, 1, 0, &sub);
		if (ret) {
			cr->err = ret;
			close(fd);
			break;
		}
		if (cr->iters & 1) {
			/*
			 * Readable from just before the completion: close
			 * then, and the release finds the task done at once.
			 */
			struct pollfd p = { .fd = fd, .events = POLLIN };

			for (int i = 0; i < 100000 && !poll(&p, 1, 0); i++)
				;
		} else {
			/* or around the time the completion arrives */
			for (unsigned int spin = rand_r(&cr->seed) % 20000;
			     spin; spin--)
				__asm__ __volatile__("" ::: "memory");
		}
		close(fd);
		cr->iters++;
	}
	return NULL;
}

TEST_F_TIMEOUT(race, completion_vs_close, 120)
{
	struct close_race cr[2];
	pthread_t t[2];

	for (int i = 0; i < 2; i++) {
		cr[i] = (struct close_race){ .seg = self->seg + i * 4096,
					     .seed = i + 1 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, closer, &cr[i]));
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, cr[i].err) TH_LOG("%s", strerror(-cr[i].err));
		EXPECT_EQ(CLOSE_ROUNDS, cr[i].iters);
	}
	TH_LOG("%lu + %lu submit-and-close rounds", cr[0].iters, cr[1].iters);
}

/*
 * A connect refused before it is established tears down a QP that was
 * never drained: moving it to error flushes the receives it posted, and
 * their completions may still wait in the CQ for a softirq poll when the
 * release runs.  The receive buffers must outlive the CQ's polling (a CI
 * run once panicked in __ib_process_cq calling a freed buffer's done).
 * Peers to a port nobody listens on are refused over and over while
 * other threads keep the softirqs busy with data-path completions.
 */
#define DEAD_PORT	7489
#define REFUSED_PEERS	16
/* rounds of refused connects: a count, not a time */
#define REFUSED_ROUNDS	8
/* a generous bound for a round's refusals: a hang fails, a slow host does not */

struct busy_path {
	uint64_t seg;
	atomic_bool *stop;
	unsigned long iters;
	int err;
};

static void *busy_path(void *arg)
{
	struct busy_path *b = arg;
	struct dsmem_ioc_submit sub;
	uint64_t local[512];
	struct dsmem_xfer_req r = {
		.opcode = DSMEM_XFER_READ, .local = (uintptr_t)local,
		.remote = b->seg, .len = sizeof(local) };
	int fd = attach_open(1);

	if (fd < 0) {
		b->err = fd;
		return NULL;
	}
	while (!atomic_load(b->stop)) {
		int ret = submit(fd, &r, 1, DSMEM_SUBMIT_WAIT |
				 DSMEM_SUBMIT_RELEASE, &sub);

		if (ret || sub.result) {
			b->err = ret ? ret : sub.result;
			break;
		}
		b->iters++;
	}
	close(fd);
	return NULL;
}

TEST_F_TIMEOUT(race, refused_connects_free_receives, 180)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	uint64_t before = stat_value(self->ctx, "conn_rejected");
	atomic_bool stop = false;
	struct busy_path b[2];
	unsigned long rounds;
	pthread_t t[2];

	for (int i = 0; i < 2; i++) {
		b[i] = (struct busy_path){ .seg = self->seg + i * 8192,
					   .stop = &stop };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, busy_path, &b[i]));
	}
	for (rounds = 0; rounds < REFUSED_ROUNDS; rounds++) {
		uint32_t id[REFUSED_PEERS];
		uint64_t want = stat_value(self->ctx, "conn_rejected") +
				REFUSED_PEERS;
		int64_t end;

		for (int i = 0; i < REFUSED_PEERS; i++)
			ASSERT_EQ(0, ds_peer_add(self->ctx, 1, addr, DEAD_PORT,
						 &id[i]))
				TH_LOG("%s", ds_ctx_errmsg(self->ctx));
		/*
		 * Each refused once (the first retry is 100 ms away): the
		 * round goes on when the counter says so, however long the
		 * refusals took.
		 */
		end = now_ms() + WAIT_MS;
		while (stat_value(self->ctx, "conn_rejected") < want &&
		       now_ms() < end)
			usleep(5000);
		EXPECT_LE(want, stat_value(self->ctx, "conn_rejected"))
			TH_LOG("round %lu: the refusals never came", rounds);
		for (int i = 0; i < REFUSED_PEERS; i++)
			ASSERT_EQ(0, ds_peer_del(self->ctx, 1, id[i]));
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, b[i].err) TH_LOG("%s", strerror(-b[i].err));
	}
	TH_LOG("%lu rounds, %llu connects refused, %lu + %lu reads beside them",
	       rounds, (unsigned long long)(stat_value(self->ctx,
						       "conn_rejected") - before),
	       b[0].iters, b[1].iters);
	EXPECT_LE(rounds * REFUSED_PEERS,
		  stat_value(self->ctx, "conn_rejected") - before);
}

/*
 * A deep batch in flight when its peer is deleted: the QP is drained and
 * every slice completes, by the NIC or with a flush, before the
 * connection's slices go.  rdm_test does this once; here it is done again
 * and again at varying depths into the batch (a CI run once panicked in
 * __ib_process_cq there, on a completion whose context was freed).
 */
struct deep_batch {
	int fd;
	uint32_t mr;
	uint64_t seg;
	int ret, result;
	atomic_bool done;
};

static void *deep_batch(void *arg)
{
	enum { NR = DSMEM_SUBMIT_REQS_MAX, LEN = 4096, SPAN = 256 };
	static struct dsmem_xfer_req r[NR];
	struct deep_batch *d = arg;
	struct dsmem_ioc_submit sub;

	for (int i = 0; i < NR; i++)
		r[i] = (struct dsmem_xfer_req){
			.opcode = i & 1 ? DSMEM_XFER_WRITE : DSMEM_XFER_READ,
			.mr = d->mr, .local = (uint64_t)(i % SPAN) * LEN,
			.remote = d->seg + (uint64_t)(i % SPAN) * LEN,
			.len = LEN };
	d->ret = submit(d->fd, r, NR, DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE,
			&sub);
	d->result = sub.result;
	atomic_store(&d->done, true);
	return NULL;
}

/*
 * Rounds of a deep batch cut by the peer's deletion.  The depth of the cut
 * is a count of the batch's bytes done (xfer_bytes), drawn at random in
 * its first three quarters, not a delay: the batch is in flight then on
 * any host, and a quarter of it is still to come.
 */
#define DEEP_ROUNDS	(debug_kernel() ? 6U : 12U)

TEST_F_TIMEOUT(race, peer_lost_under_deep_batch, 300)
{
	enum { NR = DSMEM_SUBMIT_REQS_MAX, LEN = 4096 };
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	struct deep_batch d = { .seg = self->seg };
	struct dsmem_ioc_mr_reg mr;
	unsigned int seed = 7, lost = 0, rounds, early = 0;
	void *buf;

	d.fd = attach_open(1);
	ASSERT_LE(0, d.fd);
	buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	mr = (struct dsmem_ioc_mr_reg){ .addr = (uintptr_t)buf, .len = 1 << 20,
					.flags = DSMEM_MR_WRITABLE };
	ASSERT_EQ(0, ioctl(d.fd, DSMEM_IOC_MR_REG, &mr));
	d.mr = mr.handle;

	for (rounds = 0; rounds < DEEP_ROUNDS; rounds++) {
		uint64_t want = stat_value(self->ctx, "xfer_bytes") +
				(uint64_t)(1 + rand_r(&seed) % (NR * 3 / 4)) * LEN;
		int64_t end = now_ms() + WAIT_MS;
		pthread_t t;

		atomic_store(&d.done, false);
		ASSERT_EQ(0, pthread_create(&t, NULL, deep_batch, &d));
		while (stat_value(self->ctx, "xfer_bytes") < want &&
		       !atomic_load(&d.done) && now_ms() < end)
			usleep(1000);
		/* a batch that ended first (it failed) is judged below */
		early += atomic_load(&d.done);
		ASSERT_EQ(0, ds_peer_del(self->ctx, 1, self->peer));
		pthread_join(t, NULL);
		/* done before the loss, or ended by it */
		ASSERT_EQ(0, d.ret) TH_LOG("%s", strerror(-d.ret));
		EXPECT_TRUE(d.result == 0 || d.result == -ECONNRESET ||
			    d.result == -ENOTCONN)
			TH_LOG("result %d", d.result);
		lost += d.result != 0;
		ASSERT_EQ(0, test_peer_add(self->ctx, 1, addr, PORT_B, 2,
					   &self->peer));
		ASSERT_EQ(0, wait_rsegs(self->ctx, 1, self->peer, 1));
	}
	TH_LOG("%u batches done before the cut was made", early);
	TH_LOG("%u batches of %u, %u ended by the loss", rounds,
	       DSMEM_SUBMIT_REQS_MAX, lost);
	EXPECT_LT(0, lost);
	close(d.fd);
	munmap(buf, 1 << 20);
}

/*
 * Item 3: the device goes (rdma link delete) under a descriptor whose
 * tasks still hold their own pinned, mapped buffers.  Their mappings must
 * go with the device; releasing the tasks later must not touch it.  The
 * spare netdev's rxe9 serves, so that rxe0 stays for the other programs.
 */
FIXTURE(dev) {
	unsigned long taint;
	struct ds_ctx *ctx;
};

FIXTURE_SETUP(dev)
{
	const char *spare = env_or_die("DSMEM_SPARE_NETDEV");

	self->taint = kernel_taint();
	run("rdma link delete rxe9 2>/dev/null");
	ASSERT_EQ(0, run("rdma link add rxe9 type rxe netdev %s", spare));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
}

FIXTURE_TEARDOWN(dev)
{
	ds_node_del(self->ctx, 9);
	ds_ctx_close(self->ctx);
	run("rdma link delete rxe9 2>/dev/null");
	EXPECT_EQ(0, new_taint(self->taint));
}

TEST_F_TIMEOUT(dev, removed_under_pinned_tasks, 120)
{
	enum { TASKS = 16, NR = 4, LEN = 3 * 4096 };
	struct ds_ctx *ctx = self->ctx;
	struct dsmem_xfer_req r[NR];
	struct dsmem_ioc_submit sub;
	struct dsmem_ioc_mr_reg mr;
	struct dsmem_ioc_task tq;
	uint64_t ids[TASKS];
	uint8_t *buf;
	int fd;

	ASSERT_EQ(0, test_node_add(ctx, 9, "rxe9", PORT_A + 10))
		TH_LOG("%s", ds_ctx_errmsg(ctx));
	fd = attach_open(9);
	ASSERT_LE(0, fd);

	buf = mmap(NULL, TASKS * NR * LEN + LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	mr = (struct dsmem_ioc_mr_reg){ .addr = (uintptr_t)buf, .len = LEN,
					.flags = DSMEM_MR_WRITABLE };
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_MR_REG, &mr));

	/*
	 * No peer: each request pins and maps its buffer, then fails for
	 * want of a connection, and its task keeps the pins until released.
	 */
	for (int t = 0; t < TASKS; t++) {
		for (int i = 0; i < NR; i++)
			r[i] = (struct dsmem_xfer_req){
				.opcode = i & 1 ? DSMEM_XFER_WRITE :
						  DSMEM_XFER_READ,
				.local = (uintptr_t)buf + LEN +
					 (uint64_t)(t * NR + i) * LEN + i * 100,
				.remote = DSMEM_GADDR(2, 1, 0), .len = LEN - 200 };
		/* and one through the registration */
		r[0].mr = mr.handle;
		r[0].local = 0;
		ASSERT_EQ(0, submit(fd, r, NR, t & 1 ? DSMEM_SUBMIT_WAIT : 0,
				    &sub));
		if (t & 1)
			EXPECT_EQ(-ENOTCONN, sub.result);
		ids[t] = sub.task;
	}

	ASSERT_EQ(0, run("rdma link delete rxe9"));
	/*
	 * The ib_device is freed by kfree_rcu: let grace periods pass, so
	 * that touching it later is a use after free, not a near miss.
	 */
	for (int i = 0; i < 10; i++) {
		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
		usleep(300000);
	}

	/* the descriptor outlives its node: refused, but still readable */
	EXPECT_EQ(-ENODEV, submit(fd, r, 1, DSMEM_SUBMIT_WAIT, &sub));
	for (int t = 0; t < TASKS; t += 2) {
		ASSERT_EQ(0, task_query(fd, ids[t], DSMEM_TASK_WAIT |
					DSMEM_TASK_RELEASE, &tq));
		EXPECT_EQ(DSMEM_TASK_FAILED, tq.state);
		EXPECT_EQ(NR, tq.done);
	}
	/* the registration is busy until its last task goes, with the fd */
	struct dsmem_ioc_mr_dereg dr = { .handle = mr.handle };

	EXPECT_EQ(-1, ioctl(fd, DSMEM_IOC_MR_DEREG, &dr));
	EXPECT_EQ(EBUSY, errno);
	close(fd);

	EXPECT_EQ(-ENOENT, ds_node_del(ctx, 9));
	munmap(buf, TASKS * NR * LEN + LEN);
}

/*
 * Nodes 71 and 72 on two devices of their own (dsr0 and dsr1, rxe on two
 * veth pairs), node 71 connected to 72 through both, holding its grant,
 * and a descriptor of node 71 with a registered buffer: mappings on both
 * devices.  Then the devices go under it in the ways that race: both at
 * once (the second to be handled takes the node), or one while the nodes
 * are deleted.  Nothing may oops or leak (the debug tier), and the nodes
 * end gone.
 */
FIXTURE(devs2) {
	unsigned long taint;
	struct ds_ctx *ctx;
};

static void devs2_down(void)
{
	run("rdma link delete dsr0 2>/dev/null; rdma link delete dsr1 2>/dev/null; "
	    "ip link delete dsw0a 2>/dev/null; ip link delete dsw1a 2>/dev/null");
}

FIXTURE_SETUP(devs2)
{
	self->taint = kernel_taint();
	devs2_down();
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, run("ip link add dsw%da type veth peer name dsw%db && "
				 "ip addr add 10.77.%d.1/24 dev dsw%da && "
				 "ip link set dsw%db up && ip link set dsw%da up && "
				 "rdma link add dsr%d type rxe netdev dsw%da",
				 i, i, i, i, i, i, i, i));
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
}

FIXTURE_TEARDOWN(devs2)
{
	ds_node_del(self->ctx, 71);
	ds_node_del(self->ctx, 72);
	ds_ctx_close(self->ctx);
	devs2_down();
	EXPECT_EQ(0, new_taint(self->taint));
}

FIXTURE_VARIANT(devs2) {
	bool node_del;		/* dsr1 goes while the nodes are deleted */
};

FIXTURE_VARIANT_ADD(devs2, both_devices_at_once) { .node_del = false };
FIXTURE_VARIANT_ADD(devs2, one_device_under_node_del) { .node_del = true };

static void *devs2_delete(void *arg)
{
	return (void *)(long)run("rdma link delete %s", (const char *)arg);
}

static void *devs2_node_del(void *arg)
{
	struct ds_ctx *ctx;
	long ret = ds_ctx_open(&ctx);

	if (ret)
		return (void *)ret;
	ret = ds_node_del(ctx, 71) ?: ds_node_del(ctx, 72);
	ds_ctx_close(ctx);
	return (void *)ret;
}

TEST_F_TIMEOUT(devs2, removed_while_in_use, 300)
{
	struct dsmem_ioc_mr_reg mr;
	struct ds_peer_info p;
	struct ds_seg_info seg;
	pthread_t t[2];
	void *rets[2];
	uint32_t peer;
	uint8_t *buf;
	int fd;

	ASSERT_EQ(0, test_node_add(self->ctx, 71, "dsr0,dsr1", PORT_A + 20))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, test_node_add(self->ctx, 72, "dsr0,dsr1", PORT_A + 21));
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, 72, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 72, 4 << 20, -1, DS_TRANSLATE_SEGMENT, &seg));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 72, seg.id, 71, DS_PERM_ALL));
	ASSERT_EQ(0, ds_peer_add(self->ctx, 71, "10.77.0.1", PORT_A + 21, &peer));
	ASSERT_EQ(0, wait_rsegs(self->ctx, 71, peer, 1));
	for (int i = 0; i < 100; i++) {
		if (!ds_peer_get(self->ctx, 71, peer, &p) && p.paths == 2)
			break;
		usleep(50000);
	}
	EXPECT_EQ(2, p.paths) TH_LOG("no path through dsr1");

	fd = attach_open(71);
	ASSERT_LE(0, fd);
	buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 1, 1 << 20);
	mr = (struct dsmem_ioc_mr_reg){ .addr = (uintptr_t)buf, .len = 1 << 20,
					.flags = DSMEM_MR_WRITABLE };
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_MR_REG, &mr));

	ASSERT_EQ(0, pthread_create(&t[0], NULL,
				    variant->node_del ? devs2_node_del : devs2_delete,
				    "dsr0"));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, devs2_delete, "dsr1"));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &rets[i]);
	EXPECT_EQ(0, (long)rets[0]);
	EXPECT_EQ(0, (long)rets[1]);

	/* both nodes are gone, whichever way */
	EXPECT_EQ(-ENOENT, ds_node_del(self->ctx, 71));
	EXPECT_EQ(-ENOENT, ds_node_del(self->ctx, 72));
	close(fd);
	munmap(buf, 1 << 20);
}

/* Clear CAP_IPC_LOCK from the effective set: 0 or -errno. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/*
 * Item 4: a task's own buffers are pinned long-term and charged to
 * RLIMIT_MEMLOCK like a registration: over the limit the request fails
 * with -ENOMEM, and releasing the task returns the charge.
 */
TEST_F_TIMEOUT(race, task_pins_charge_memlock, 120)
{
	const struct rlimit lim = { 64 << 10, 64 << 10 };
	struct dsmem_ioc_submit sub;
	struct dsmem_ioc_task tq;
	struct dsmem_ioc_mr_reg mr;
	struct dsmem_xfer_req r = { .opcode = DSMEM_XFER_READ,
				    .remote = self->seg };
	uint64_t held;
	uint8_t *buf;
	int fd;

	fd = attach_open(1);		/* attaching needs CAP_NET_ADMIN */
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, drop_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));
	buf = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, vm_pinned_kb());

	/* 32 KiB held by an unreleased task */
	r.local = (uintptr_t)buf;
	r.len = 32 << 10;
	ASSERT_EQ(0, submit(fd, &r, 1, DSMEM_SUBMIT_WAIT, &sub));
	ASSERT_EQ(0, sub.result);
	held = sub.task;
	EXPECT_EQ(32, vm_pinned_kb());

	/* 48 more would pass 64: refused, and not charged */
	r.local = (uintptr_t)buf + (64 << 10);
	r.len = 48 << 10;
	ASSERT_EQ(0, submit(fd, &r, 1, DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE,
			    &sub));
	EXPECT_EQ(-ENOMEM, sub.result);
	EXPECT_EQ(32, vm_pinned_kb());
	/* as a registration over the limit is */
	mr = (struct dsmem_ioc_mr_reg){ .addr = (uintptr_t)buf + (64 << 10),
					.len = 48 << 10 };
	EXPECT_EQ(-1, ioctl(fd, DSMEM_IOC_MR_REG, &mr));
	EXPECT_EQ(ENOMEM, errno);

	/* the release returns the charge: now 48 fit */
	ASSERT_EQ(0, task_query(fd, held, DSMEM_TASK_RELEASE, &tq));
	EXPECT_EQ(DSMEM_TASK_COMPLETE, tq.state);
	EXPECT_EQ(0, vm_pinned_kb());
	ASSERT_EQ(0, submit(fd, &r, 1, DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE,
			    &sub));
	EXPECT_EQ(0, sub.result);
	EXPECT_EQ(0, vm_pinned_kb());
	close(fd);
	munmap(buf, 256 << 10);
}

/*
 * Paths under churn: nodes 11 and 12 on rxe0 and rxe1, so node 11's peer
 * gets a second path once its first connection is up.  Each round deletes
 * one of the nodes at a random moment -- PATHS under way, the path
 * connecting, up, carrying an unordered writer's slices -- and the
 * releases of both connections must race cleanly (the debug tier reports
 * any use-after-free, leak or lock order).  The writer ends with an error
 * or not at all, never hangs.
 */
struct churn_writer {
	uint64_t seg;
	atomic_int stop;
	int oks;
};

static void *churn_write(void *arg)
{
	struct churn_writer *w = arg;
	struct ds_xfer_attr a = DS_XFER_ATTR_INIT;
	static uint8_t buf[256 << 10];
	struct ds_xfer *x;

	a.flags = DS_XFER_UNORDERED;
	if (ds_xfer_open_attr(11, &a, &x))
		return NULL;
	while (!atomic_load(&w->stop))
		if (!ds_write(x, w->seg, buf, sizeof(buf)))
			__atomic_fetch_add(&w->oks, 1, __ATOMIC_RELAXED);
	ds_xfer_close(x);
	return NULL;
}

TEST_F_TIMEOUT(race, paths_churn_under_deletion, 240)
{
	const char *addr = env_or_die("DSMEM_LOCAL_ADDR");
	unsigned int seed = (unsigned int)time(NULL);
	int oks = 0, ups = 0;

	for (int round = 0; round < 8; round++) {
		struct churn_writer w = { .stop = 0 };
		struct ds_peer_info p = {};
		struct ds_seg_info s;
		pthread_t th;
		uint32_t peer;

		ASSERT_EQ(0, test_node_add(self->ctx, 11, "rxe0,rxe1", PORT_B + 2));
		ASSERT_EQ(0, test_node_add(self->ctx, 12, "rxe0,rxe1", PORT_B + 3));
		ASSERT_EQ(0, ds_node_set_accept(self->ctx, 12, DS_ACCEPT_KEYED));
		ASSERT_EQ(0, ds_seg_add(self->ctx, 12, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
		ASSERT_EQ(0, ds_seg_grant(self->ctx, 12, s.id, 11, DSMEM_PERM_ALL));
		ASSERT_EQ(0, ds_peer_add(self->ctx, 11, addr, PORT_B + 3, &peer));
		w.seg = s.addr;
		/*
		 * Half the rounds cut within the first connection's set-up,
		 * half once it is up: within the paths' set-up, or with both
		 * carrying the writer's slices -- which rounds 0 and 1 wait
		 * for, so that a slow guest (the debug kernel beside other
		 * guests) cannot leave that case untried.
		 */
		if (round % 4 < 2)
			ASSERT_EQ(0, wait_rsegs(self->ctx, 11, peer, 1));
		if (round < 2)
			ASSERT_EQ(0, wait_paths(self->ctx, 11, peer, 2));
		pthread_create(&th, NULL, churn_write, &w);
		for (int i = 0; round < 2 && i < 400 && !__atomic_load_n(&w.oks, __ATOMIC_RELAXED); i++)
			usleep(50000);
		usleep(rand_r(&seed) % (round % 4 < 2 ? 400000 : 60000));
		if (!ds_peer_get(self->ctx, 11, peer, &p) && p.paths == 2)
			ups++;
		ASSERT_EQ(0, ds_node_del(self->ctx, round % 2 ? 11 : 12));
		usleep(rand_r(&seed) % 100000);
		atomic_store(&w.stop, 1);
		pthread_join(th, NULL);
		oks += w.oks;
		ds_node_del(self->ctx, round % 2 ? 12 : 11);
	}
	TH_LOG("8 rounds, %d with two paths up when cut, %d writes done", ups, oks);
	EXPECT_LT(0, oks);
	EXPECT_LT(0, ups);
}

TEST_HARNESS_MAIN
