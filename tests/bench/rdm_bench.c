// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdm_bench: dsmem's data path measured the way perftest measures verbs.
 *
 *   rdm_bench [-i] [-u] [-s SPIN_US] lat read|write NODE GADDR SIZE ITERS
 *	synchronous ds_read/ds_write from a registered buffer; prints the
 *	typical (median) latency in microseconds, as ib_*_lat's t_typical
 *   rdm_bench [-i] [-u] [-s SPIN_US] sync read|write NODE GADDR SIZE ITERS
 *	the same transfers timed as a whole (no clock read per transfer:
 *	where the clock has no vDSO reading, each is a system call); prints
 *	the mean in microseconds
 *   rdm_bench [-i] [-u] [-s SPIN_US] bw read|write NODE GADDR SIZE ITERS DEPTH
 *	DEPTH transfers of SIZE bytes kept in flight (two batches of
 *	DEPTH/2, each resubmitted as soon as it is done, as perftest keeps
 *	its send queue full), ITERS transfers in all; prints MiB/s (2^20
 *	bytes a second), the unit of ib_*_bw's "BW average [MB/sec]"
 *   rdm_bench [-i] [-u] [-s SPIN_US] ops read NODE GADDR SIZE ITERS DEPTH
 *	the same, printing transfers a second (ib_*_bw's MsgRate)
 *   rdm_bench memcpy SIZE ITERS
 *	the reference of the local path: memcpy() of SIZE bytes between two
 *	buffers, timed as a whole; prints the mean in microseconds
 *   rdm_bench connect keyed|insecure ADDR ITERS
 *	nodes 21 and 22 on rxe0, authenticated with the key "cluster" or
 *	insecure; node 21 connects to node 22 at ADDR ITERS times, each
 *	from peer add until the peer is up; prints the median in ms
 *
 * -i takes the ioctl path (DS_XFER_NO_RINGS) instead of the shared rings;
 * -u opens the handle unordered (DS_XFER_UNORDERED): its transfers are
 * spread over every path of the peer (one per device pair);
 * -t THREADS runs bw and ops on that many handles at once, each from its
 * own thread on its own region, and prints their sum;
 * -s sets the spin before a wait sleeps (the library's default otherwise).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include <dsmem/ds.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int die(const char *what, int err)
{
	fprintf(stderr, "rdm_bench: %s: %s\n", what, strerror(-err));
	return 1;
}

static int bench_memcpy(int argc, char **argv)
{
	unsigned long size, iters;
	uint8_t *src, *dst;
	double t0;

	if (argc != 4)
		return die("arguments", -EINVAL);
	size = strtoul(argv[2], NULL, 0);
	iters = strtoul(argv[3], NULL, 0);
	src = aligned_alloc(4096, (size + 4095) & ~4095UL);
	dst = aligned_alloc(4096, (size + 4095) & ~4095UL);
	if (!size || !iters || !src || !dst)
		return die("arguments", -EINVAL);
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	t0 = now_us();
	for (unsigned long i = 0; i < iters; i++) {
		memcpy(dst, src, size);
		/* each copy is made, as each get's is */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	printf("%.3f\n", (now_us() - t0) / iters);
	free(src);
	free(dst);
	return 0;
}

static int bench_connect(int argc, char **argv)
{
	const char *key = strcmp(argv[2], "insecure") ? "cluster" : NULL;
	unsigned long iters = strtoul(argv[4], NULL, 0);
	struct ds_ctx *ctx;
	double *ms, t0;
	int ret;

	if (argc != 5 || !iters)
		return die("arguments", -EINVAL);
	ms = calloc(iters, sizeof(*ms));
	ret = ds_ctx_open(&ctx);
	if (!ret)
		ret = ds_node_add_keyed(ctx, 21, "rxe0", 7521, key);
	if (!ret)
		ret = ds_node_add_keyed(ctx, 22, "rxe0", 7522, key);
	/* node 22 admits node 21 from its address, as any node its peers */
	if (!ret)
		ret = ds_peer_add_id(ctx, 22, argv[3], 0, 21, DS_PEER_LISTEN, NULL);
	for (unsigned long i = 0; !ret && i < iters; i++) {
		struct ds_peer_info p = { 0 };
		uint32_t peer;

		t0 = now_us();
		ret = ds_peer_add_id(ctx, 21, argv[3], 7522, 22, 0, &peer);
		while (!ret && p.state != DS_PEER_UP && now_us() - t0 < 10e6) {
			ret = ds_peer_get(ctx, 21, peer, &p);
			if (!ret && p.state != DS_PEER_UP)
				usleep(100);
		}
		ms[i] = (now_us() - t0) / 1e3;
		if (!ret && p.state != DS_PEER_UP)
			ret = -ETIMEDOUT;
		if (!ret)
			ret = ds_peer_del(ctx, 21, peer);
		/* node 22's end is free again once the connection is gone */
		usleep(20000);
	}
	ds_node_del(ctx, 21);
	ds_node_del(ctx, 22);
	ds_ctx_close(ctx);
	if (ret)
		return die("connect", ret);
	qsort(ms, iters, sizeof(*ms), cmp_double);
	printf("%.2f\n", ms[iters / 2]);
	return 0;
}

/* DEPTH in flight as two halves; the seconds it took */
static int run_depth(struct ds_xfer *x, struct ds_transfer_request *reqs,
		     unsigned long depth, unsigned long *iters, double *secs)
{
	unsigned long half[2] = { (depth + 1) / 2, depth / 2 };
	struct ds_transfer_status *st = calloc(depth, sizeof(*st));
	uint64_t task[2] = { 0 };
	bool busy[2] = { false };
	unsigned long sent = 0;
	double t0 = now_us();
	int ret = 0, state;

	if (!st)
		return -ENOMEM;
	for (int b = 0; !ret && (sent < *iters || busy[0] || busy[1]); b ^= 1) {
		if (busy[b]) {
			ret = ds_task_query(x, task[b], 1, 1, &state, st, half[b]);
			if (!ret && state != DS_TASK_COMPLETE)
				ret = st[0].status ? st[0].status : -EIO;
			busy[b] = false;
		}
		if (!ret && half[b] && sent < *iters) {
			ret = ds_batch_submit(x, reqs + (b ? half[0] : 0), half[b], &task[b]);
			busy[b] = !ret;
			sent += half[b];
		}
	}
	*secs = (now_us() - t0) / 1e6;
	*iters = sent;
	free(st);
	return ret;
}

/* One handle's share of a bw or ops run: its own buffer, region, batches. */
struct bw_job {
	struct ds_xfer_attr attr;
	uint32_t node;
	uint64_t gaddr;
	unsigned long size, depth, iters;
	int op;
	double secs;
	int ret;
};

static void *bw_job_run(void *arg)
{
	struct bw_job *j = arg;
	struct ds_transfer_request *reqs;
	struct ds_xfer *x;
	uint8_t *buf;
	uint32_t mr;

	j->ret = ds_xfer_open_attr(j->node, &j->attr, &x);
	if (j->ret)
		return NULL;
	buf = aligned_alloc(4096, (j->size * j->depth + 4095) & ~4095UL);
	reqs = calloc(j->depth, sizeof(*reqs));
	if (!buf || !reqs) {
		j->ret = -ENOMEM;
		goto out;
	}
	memset(buf, 0x5a, j->size * j->depth);
	j->ret = ds_mr_reg(x, buf, j->size * j->depth, &mr);
	for (unsigned long i = 0; !j->ret && i < j->depth; i++)
		reqs[i] = (struct ds_transfer_request){ .source_offset = i * j->size,
			.target_id = j->gaddr, .target_offset = i * j->size,
			.length = j->size, .opcode = j->op, .mr = mr };
	if (!j->ret)
		j->ret = run_depth(x, reqs, j->depth, &j->iters, &j->secs);
out:
	free(reqs);
	free(buf);
	ds_xfer_close(x);
	return NULL;
}

/*
 * bw and ops with THREADS handles at once, each on its own region of the
 * segment after gaddr (SIZE * DEPTH bytes apart) and ITERS / THREADS
 * transfers: their transfers summed over the slowest one's time.
 */
static int bw_threads(const struct ds_xfer_attr *attr, bool ops, int op, uint32_t node,
		      uint64_t gaddr, unsigned long size, unsigned long iters,
		      unsigned long depth, unsigned int threads)
{
	struct bw_job *jobs = calloc(threads, sizeof(*jobs));
	pthread_t *th = calloc(threads, sizeof(*th));
	double secs = 0, total = 0;

	if (!jobs || !th)
		return die("threads", -ENOMEM);
	for (unsigned int t = 0; t < threads; t++) {
		jobs[t] = (struct bw_job){ .attr = *attr, .node = node,
			.gaddr = gaddr + (uint64_t)t * size * depth, .size = size,
			.depth = depth, .iters = iters / threads, .op = op };
		pthread_create(&th[t], NULL, bw_job_run, &jobs[t]);
	}
	for (unsigned int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		if (jobs[t].ret)
			return die("batch", jobs[t].ret);
		total += jobs[t].iters;
		if (jobs[t].secs > secs)
			secs = jobs[t].secs;
	}
	if (ops)
		printf("%.0f\n", total / secs);
	else
		printf("%.2f\n", (double)size * total / secs / (1 << 20));
	free(th);
	free(jobs);
	return 0;
}

int main(int argc, char **argv)
{
	struct ds_xfer_attr attr = DS_XFER_ATTR_INIT;
	struct ds_transfer_request *reqs;
	unsigned long size, iters, depth = 1;
	struct ds_xfer *x;
	uint64_t gaddr;
	int op, ret, c;
	uint32_t mr;
	uint8_t *buf;
	double *lat, t0, secs;
	unsigned int threads = 1;

	if (argc > 1 && !strcmp(argv[1], "connect"))
		return bench_connect(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "memcpy"))
		return bench_memcpy(argc, argv);
	while ((c = getopt(argc, argv, "+iut:s:")) != -1) {
		if (c == 't')
			threads = strtoul(optarg, NULL, 0);
		else if (c == 'i')
			attr.flags |= DS_XFER_NO_RINGS;
		else if (c == 'u')
			attr.flags |= DS_XFER_UNORDERED;
		else if (c == 's')
			attr.spin_us = strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 7 || (strcmp(argv[1], "lat") && strcmp(argv[1], "sync") &&
			 strcmp(argv[1], "bw") && strcmp(argv[1], "ops"))) {
		fprintf(stderr, "usage: rdm_bench [-i] [-u] [-t THREADS] [-s SPIN_US] lat|sync|bw|ops read|write NODE GADDR SIZE ITERS [DEPTH]\n"
			"       rdm_bench memcpy SIZE ITERS\n"
			"       rdm_bench connect keyed|insecure ADDR ITERS\n");
		return 2;
	}
	op = strcmp(argv[2], "read") ? DS_OP_WRITE : DS_OP_READ;
	gaddr = strtoull(argv[4], NULL, 0);
	size = strtoul(argv[5], NULL, 0);
	iters = strtoul(argv[6], NULL, 0);
	if (argc > 7)
		depth = strtoul(argv[7], NULL, 0);
	if (!size || !iters || !depth || depth > DS_BATCH_REQS_MAX || !threads)
		return die("arguments", -EINVAL);
	if (threads > 1 && (!strcmp(argv[1], "bw") || !strcmp(argv[1], "ops")))
		return bw_threads(&attr, !strcmp(argv[1], "ops"), op,
				  strtoul(argv[3], NULL, 0), gaddr, size, iters, depth,
				  threads);

	ret = ds_xfer_open_attr(strtoul(argv[3], NULL, 0), &attr, &x);
	if (ret)
		return die("open", ret);
	buf = aligned_alloc(4096, (size * depth + 4095) & ~4095UL);
	if (!buf)
		return die("buffer", -ENOMEM);
	memset(buf, 0x5a, size * depth);
	ret = ds_mr_reg(x, buf, size * depth, &mr);
	if (ret)
		return die("register", ret);

	if (!strcmp(argv[1], "sync")) {
		t0 = now_us();
		for (unsigned long i = 0; i < iters; i++) {
			ret = op == DS_OP_READ ? ds_read(x, gaddr, buf, size) :
						 ds_write(x, gaddr, buf, size);
			if (ret)
				return die("transfer", ret);
		}
		printf("%.3f\n", (now_us() - t0) / iters);
		return 0;
	}
	if (!strcmp(argv[1], "lat")) {
		lat = calloc(iters, sizeof(*lat));
		for (unsigned long i = 0; i < iters + iters / 10; i++) {
			/* a registered buffer: no copy, and no pinning per call */
			t0 = now_us();
			ret = op == DS_OP_READ ? ds_read(x, gaddr, buf, size) :
						 ds_write(x, gaddr, buf, size);
			if (ret)
				return die("transfer", ret);
			if (i >= iters / 10)	/* warm-up, as perftest */
				lat[i - iters / 10] = now_us() - t0;
		}
		qsort(lat, iters, sizeof(*lat), cmp_double);
		printf("%.2f\n", lat[iters / 2]);
		return 0;
	}

	reqs = calloc(depth, sizeof(*reqs));
	for (unsigned long i = 0; i < depth; i++)
		reqs[i] = (struct ds_transfer_request){ .source_offset = i * size,
			.target_id = gaddr, .target_offset = i * size,
			.length = size, .opcode = op, .mr = mr };
	ret = run_depth(x, reqs, depth, &iters, &secs);
	if (ret)
		return die("batch", ret);
	if (!strcmp(argv[1], "ops"))
		printf("%.0f\n", iters / secs);
	else
		printf("%.2f\n", (double)size * iters / secs / (1 << 20));
	ds_xfer_close(x);
	return 0;
}
