// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdm_bench: dsmem's data path measured the way perftest measures verbs.
 *
 *   rdm_bench lat read|write NODE GADDR SIZE ITERS
 *	synchronous transfers from a registered buffer; prints the typical
 *	(median) latency in microseconds, as ib_*_lat's t_typical
 *   rdm_bench bw read|write NODE GADDR SIZE ITERS DEPTH
 *	batches of DEPTH transfers of SIZE bytes, ITERS transfers in all;
 *	prints MiB/s (2^20 bytes a second), the unit of ib_*_bw's
 *	"BW average [MB/sec]"
 *   rdm_bench connect keyed|insecure ADDR ITERS
 *	nodes 21 and 22 on rxe0, authenticated with the key "cluster" or
 *	insecure; node 21 connects to node 22 at ADDR ITERS times, each
 *	from peer add until the peer is up; prints the median in ms
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include <linux/dsmem.h>
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

int main(int argc, char **argv)
{
	struct ds_transfer_request *reqs;
	struct ds_transfer_status *st;
	unsigned long size, iters, depth = 1;
	struct ds_xfer *x;
	uint64_t gaddr, task;
	int op, ret, state;
	uint32_t mr;
	uint8_t *buf;
	double *lat, t0;

	if (argc > 1 && !strcmp(argv[1], "connect"))
		return bench_connect(argc, argv);
	if (argc < 7 || (strcmp(argv[1], "lat") && strcmp(argv[1], "bw"))) {
		fprintf(stderr, "usage: rdm_bench lat|bw read|write NODE GADDR SIZE ITERS [DEPTH]\n"
			"       rdm_bench connect keyed|insecure ADDR ITERS\n");
		return 2;
	}
	op = strcmp(argv[2], "read") ? DS_OP_WRITE : DS_OP_READ;
	gaddr = strtoull(argv[4], NULL, 0);
	size = strtoul(argv[5], NULL, 0);
	iters = strtoul(argv[6], NULL, 0);
	if (argc > 7)
		depth = strtoul(argv[7], NULL, 0);
	if (!size || !iters || !depth || depth > DS_BATCH_REQS_MAX)
		return die("arguments", -EINVAL);

	ret = ds_xfer_open(strtoul(argv[3], NULL, 0), &x);
	if (ret)
		return die("open", ret);
	buf = aligned_alloc(4096, (size * depth + 4095) & ~4095UL);
	if (!buf)
		return die("buffer", -ENOMEM);
	memset(buf, 0x5a, size * depth);
	ret = ds_mr_reg(x, buf, size * depth, &mr);
	if (ret)
		return die("register", ret);

	if (!strcmp(argv[1], "lat")) {
		struct dsmem_xfer_req r = { .opcode = op, .mr = mr,
					    .remote = gaddr, .len = size };
		struct dsmem_ioc_submit sub = { .reqs = (uintptr_t)&r, .nr = 1,
						.req_size = sizeof(r) };

		lat = calloc(iters, sizeof(*lat));
		for (unsigned long i = 0; i < iters + iters / 10; i++) {
			/* one ioctl: a batch of one, waited for and released */
			sub.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE;
			sub.result = 0;
			sub.task = 0;
			t0 = now_us();
			if (ioctl(ds_xfer_fd(x), DSMEM_IOC_SUBMIT, &sub))
				return die("transfer", -errno);
			if (sub.result)
				return die("transfer", sub.result);
			if (i >= iters / 10)	/* warm-up, as perftest */
				lat[i - iters / 10] = now_us() - t0;
		}
		qsort(lat, iters, sizeof(*lat), cmp_double);
		printf("%.2f\n", lat[iters / 2]);
		return 0;
	}

	reqs = calloc(depth, sizeof(*reqs));
	st = calloc(depth, sizeof(*st));
	for (unsigned long i = 0; i < depth; i++)
		reqs[i] = (struct ds_transfer_request){ .source_offset = i * size,
			.target_id = gaddr, .target_offset = i * size,
			.length = size, .opcode = op, .mr = mr };
	t0 = now_us();
	for (unsigned long done = 0; done < iters; done += depth) {
		ret = ds_batch_submit(x, reqs, depth, &task);
		if (!ret)
			ret = ds_task_query(x, task, 1, 1, &state, st, depth);
		if (ret || state != DS_TASK_COMPLETE)
			return die("batch", ret ? ret : st[0].status);
	}
	printf("%.2f\n", (double)size * ((iters + depth - 1) / depth * depth) /
			 (now_us() - t0) * 1e6 / (1 << 20));
	ds_xfer_close(x);
	return 0;
}
