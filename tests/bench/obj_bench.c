// SPDX-License-Identifier: BSD-2-Clause
/*
 * obj_bench: the object store (dsmaster + libdsuser's client) measured
 * from one client that contributes no memory, so that every byte crosses
 * rxe to the other clients' segments (--local: the other way round).
 * Behind `make bench B=obj`.
 *
 *   obj_bench --masters H:P --node ID [--depth Q] [--replicas R]
 *             [--local SIZE] MODE ARGS
 *
 *   --local SIZE    the client contributes a segment of SIZE and puts
 *                   with prefer_local: every object's replica is on its
 *                   own node, and the figures are named obj.local_*
 *
 *   bw SIZE COUNT   COUNT puts of SIZE bytes, Q in flight, then a get of
 *                   each; prints put and get bandwidth in MiB/s (2^20
 *                   bytes, as perftest's MB/sec), and checks every get
 *   ops SIZE COUNT  COUNT puts, then COUNT gets (Q in flight): ops/s and
 *                   the p50/p99 of one operation, submit to completion
 *   meta COUNT      COUNT Stat calls from Q threads (metadata only, no
 *                   data moved): their rate, and the master's own count
 *                   of metadata operations over the same time (MasterInfo
 *                   ops) per second
 *   batch SIZE COUNT B
 *                   COUNT objects put and then got in batches of B keys
 *                   (one task each, one after another), against the same
 *                   COUNT single puts and gets with Q in flight: ops/s
 *                   of each and the ratios
 *   fill SIZE       puts of SIZE (Q in flight) into an empty pool (the
 *                   first half of its DRAM), then on until three times
 *                   the pool was put: the last pool's worth is put into
 *                   a full pool, evicting; both rates and their ratio
 *   zipf KEYS OPS SIZE THETA TRACE
 *                   a cache's workload, one at a time: OPS gets of keys
 *                   drawn Zipf(THETA) from KEYS, a miss put; the hit
 *                   ratio; the key ids requested go to TRACE (one per
 *                   line: dsctl sim's text format), for the bound of
 *                   Belady's algorithm on the same trace
 *
 * Lines: "bench: obj.NAME VALUE UNIT".  The keys are deleted at the end.
 * Buffers are registered (ds_store_buf_reg): zero copy, as the issue asks.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <dsmem/store.h>

#include "../kselftest/store_pattern.h"

static struct ds_store *s;
static const char *masters;
static unsigned depth = 4, replicas = 1, prefer_local;
static const char *pfx = "";	/* of the figures' names */

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

static void die(const char *what, int err)
{
	fprintf(stderr, "obj_bench: %s: %s (%s)\n", what, strerror(err < 0 ? -err : err),
		s ? ds_store_errmsg(s) : "");
	exit(1);
}

static uint64_t parse_size(const char *t)
{
	char *end;
	uint64_t v = strtoull(t, &end, 0);

	switch (*end) {
	case 'K': case 'k': return v << 10;
	case 'M': case 'm': return v << 20;
	case 'G': case 'g': return v << 30;
	default: return v;
	}
}

/* "16K", "1M", "16M": the figure's name */
static const char *label(uint64_t size, char *buf, size_t n)
{
	if (size >= (1 << 20) && !(size % (1 << 20)))
		snprintf(buf, n, "%" PRIu64 "M", size >> 20);
	else if (size >= 1024 && !(size % 1024))
		snprintf(buf, n, "%" PRIu64 "K", size >> 10);
	else
		snprintf(buf, n, "%" PRIu64 "B", size);
	return buf;
}

static unsigned long key_base;	/* fill: the keys of a phase go on */

static void key_of(char *key, size_t n, uint64_t size, unsigned long i)
{
	snprintf(key, n, "obj_bench/%d/%" PRIu64 "/%lu", (int)getpid(), size, key_base + i);
}

struct slot {
	uint64_t task;
	double t0;
	unsigned long i;
	int busy;
};

/*
 * COUNT operations (put or get) of SIZE, Q in flight over Q buffers;
 * per-operation latencies into lat (may be NULL).  Returns the seconds.
 */
static double run_ops(int put, uint64_t size, unsigned long count, uint8_t **bufs,
		      double *lat, unsigned long *bad)
{
	struct ds_store_replicate_config cfg = { .dram_replicas = replicas,
						 .prefer_local = prefer_local };
	struct slot *sl = calloc(depth, sizeof(*sl));
	unsigned long next = 0, done = 0;
	double t0 = now_us();
	char key[128];

	while (done < count) {
		for (unsigned q = 0; q < depth && next < count; q++) {
			struct iovec iov;
			int ret;

			if (sl[q].busy)
				continue;
			iov.iov_base = bufs[q];
			iov.iov_len = size;
			key_of(key, sizeof(key), size, next);
			if (put) {
				/* the header names the object: gets can be checked */
				memcpy(bufs[q] + 8, &(uint64_t){ next }, 8);
				ret = ds_store_put(s, key, &iov, 1, &cfg, &sl[q].task);
			} else {
				ret = ds_store_get(s, key, &iov, 1, -1, 0, &sl[q].task);
			}
			if (ret)
				die(put ? "put" : "get", ret);
			sl[q].t0 = now_us();
			sl[q].i = next++;
			sl[q].busy = 1;
		}
		/* the oldest in flight */
		unsigned o = 0;
		for (unsigned q = 1; q < depth; q++)
			if (sl[q].busy && (!sl[o].busy || sl[q].i < sl[o].i))
				o = q;
		struct ds_store_task_status st;
		int ret = ds_store_task_query(s, sl[o].task, -1, 1, &st);

		if (ret)
			die("query", ret);
		if (st.state != DS_STORE_COMPLETE)
			die(put ? "put task" : "get task", st.err ? st.err : -EIO);
		if (lat)
			lat[done] = now_us() - sl[o].t0;
		if (!put && bad) {
			uint64_t seed, sz;

			if (store_pat_seed(bufs[o], size, &seed, &sz) || seed != sl[o].i || sz != size)
				++*bad;
		}
		sl[o].busy = 0;
		done++;
	}
	free(sl);
	return (now_us() - t0) / 1e6;
}

static uint8_t **buffers(uint64_t size)
{
	uint8_t **b = calloc(depth, sizeof(*b));

	for (unsigned q = 0; q < depth; q++) {
		b[q] = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b[q] == MAP_FAILED)
			die("mmap", -errno);
		/* seed 0; the put writes each object's index over the seed */
		store_pat_fill(b[q], size, 0);
		int ret = ds_store_buf_reg(s, b[q], size);
		if (ret)
			die("buf_reg", ret);
	}
	return b;
}

static void cleanup(uint64_t size, unsigned long count, uint8_t **b)
{
	char key[128];

	for (unsigned long i = 0; i < count; i++) {
		uint64_t task;
		struct ds_store_task_status st;

		key_of(key, sizeof(key), size, i);
		if (!ds_store_del(s, key, &task))
			ds_store_task_query(s, task, -1, 1, &st);
	}
	for (unsigned q = 0; q < depth; q++) {
		ds_store_buf_dereg(s, b[q]);
		munmap(b[q], size);
	}
	free(b);
}

static void pct(double *lat, unsigned long n, double *p50, double *p99)
{
	qsort(lat, n, sizeof(*lat), cmp_double);
	*p50 = lat[n / 2];
	*p99 = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
}

static void mode_bw(uint64_t size, unsigned long count)
{
	uint8_t **b = buffers(size);
	unsigned long bad = 0;
	double tp, tg;
	char l[32];

	label(size, l, sizeof(l));
	tp = run_ops(1, size, count, b, NULL, NULL);
	tg = run_ops(0, size, count, b, NULL, &bad);
	printf("bench: obj.%sput_bw_%s %.1f MiB/s\n", pfx, l, count * (double)size / 1048576 / tp);
	printf("bench: obj.%sget_bw_%s %.1f MiB/s\n", pfx, l, count * (double)size / 1048576 / tg);
	if (bad)
		fprintf(stderr, "obj_bench: %lu of %lu gets read the wrong object\n", bad, count);
	cleanup(size, count, b);
	if (bad)
		exit(1);
}

static void mode_ops(uint64_t size, unsigned long count)
{
	uint8_t **b = buffers(size);
	double *lat = calloc(count, sizeof(*lat)), t, p50, p99;
	unsigned long bad = 0;
	char l[32];

	label(size, l, sizeof(l));
	t = run_ops(1, size, count, b, lat, NULL);
	pct(lat, count, &p50, &p99);
	printf("bench: obj.%sput_%s_ops_per_s %.0f ops/s\n", pfx, l, count / t);
	printf("bench: obj.%sput_%s_p50_us %.0f us\n", pfx, l, p50);
	printf("bench: obj.%sput_%s_p99_us %.0f us\n", pfx, l, p99);
	t = run_ops(0, size, count, b, lat, &bad);
	pct(lat, count, &p50, &p99);
	printf("bench: obj.%sget_%s_ops_per_s %.0f ops/s\n", pfx, l, count / t);
	printf("bench: obj.%sget_%s_p50_us %.0f us\n", pfx, l, p50);
	printf("bench: obj.%sget_%s_p99_us %.0f us\n", pfx, l, p99);
	free(lat);
	cleanup(size, count, b);
	if (bad) {
		fprintf(stderr, "obj_bench: %lu of %lu gets read the wrong object\n", bad, count);
		exit(1);
	}
}

static unsigned long meta_each;

static void *meta_thread(void *arg)
{
	struct ds_store_object_info info;
	char key[128];

	key_of(key, sizeof(key), 1, 0);
	for (unsigned long i = 0; i < meta_each; i++)
		if (ds_store_stat(s, key, &info))
			die("stat", -EIO);
	return arg;
}

static uint64_t master_figure(const char *name)
{
	struct ds_store_master_info mi;
	char err[256];
	int ret = ds_store_master_info(masters, &mi, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "obj_bench: master info: %s\n", err);
		exit(1);
	}
	return !strcmp(name, "evictions") ? mi.evictions : mi.ops;
}

static uint64_t master_ops(void)
{
	return master_figure("ops");
}

static void mode_meta(unsigned long count)
{
	struct ds_store_replicate_config cfg = { .dram_replicas = 1 };
	pthread_t *th = calloc(depth, sizeof(*th));
	struct ds_store_task_status st;
	uint8_t one = 1;
	struct iovec iov = { &one, 1 };
	uint64_t task, ops0, ops1;
	char key[128];
	double t0, t;

	key_of(key, sizeof(key), 1, 0);
	if (ds_store_put(s, key, &iov, 1, &cfg, &task) ||
	    ds_store_task_query(s, task, -1, 1, &st) || st.state != DS_STORE_COMPLETE)
		die("put", -EIO);
	meta_each = count / depth ? count / depth : 1;
	ops0 = master_ops();
	t0 = now_us();
	for (unsigned q = 0; q < depth; q++)
		pthread_create(&th[q], NULL, meta_thread, NULL);
	for (unsigned q = 0; q < depth; q++)
		pthread_join(th[q], NULL);
	t = (now_us() - t0) / 1e6;
	ops1 = master_ops();
	printf("bench: obj.stat_ops_per_s %.0f ops/s\n", meta_each * depth / t);
	/* the master's count includes the one MasterInfo call that ends it */
	printf("bench: obj.master_ops_per_s %.0f ops/s\n", (ops1 - ops0) / t);
	if (!ds_store_del(s, key, &task))
		ds_store_task_query(s, task, -1, 1, &st);
	free(th);
}

static double run_batches(int put, uint64_t size, unsigned long count, unsigned long per,
			  uint8_t **bufs, struct ds_store_batch_item *items, char (*keys)[128])
{
	struct ds_store_replicate_config cfg = { .dram_replicas = replicas };
	struct iovec *iov = calloc(per, sizeof(*iov));
	double t0 = now_us();

	for (unsigned long at = 0; at < count; at += per) {
		unsigned long n = count - at < per ? count - at : per;
		struct ds_store_task_status st;
		uint64_t task;
		int ret;

		for (unsigned long i = 0; i < n; i++) {
			key_of(keys[i], sizeof(keys[i]), size, at + i);
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = size;
			if (put)
				memcpy(bufs[i] + 8, &(uint64_t){ at + i }, 8);
			items[i] = (struct ds_store_batch_item){ .key = keys[i], .iov = &iov[i],
								 .iovcnt = 1 };
		}
		ret = put ? ds_store_batch_put(s, items, n, &cfg, NULL, &task)
			  : ds_store_batch_get(s, items, n, &task);
		if (!ret)
			ret = ds_store_task_query(s, task, -1, 1, &st);
		if (ret)
			die(put ? "batch put" : "batch get", ret);
		if (st.state != DS_STORE_COMPLETE || st.err)
			die(put ? "batch put task" : "batch get task", st.err ? st.err : -EIO);
		for (unsigned long i = 0; i < n && !put; i++) {
			uint64_t seed, sz;

			if (store_pat_seed(bufs[i], size, &seed, &sz) || seed != at + i || sz != size)
				die("batch get: wrong bytes", -EIO);
		}
	}
	free(iov);
	return (now_us() - t0) / 1e6;
}

static void mode_batch(uint64_t size, unsigned long count, unsigned long per)
{
	struct ds_store_batch_item *items = calloc(per, sizeof(*items));
	char (*keys)[128] = calloc(per, sizeof(*keys));
	uint8_t **b, **singles;
	unsigned long bad = 0;
	double tp, tg, sp, sg;
	char l[32];
	unsigned save = depth;

	label(size, l, sizeof(l));
	depth = per;		/* a buffer per key of a batch */
	b = buffers(size);
	depth = save;
	tp = run_batches(1, size, count, per, b, items, keys);
	tg = run_batches(0, size, count, per, b, items, keys);
	singles = buffers(size);
	key_base = count;	/* the single calls on keys of their own */
	sp = run_ops(1, size, count, singles, NULL, NULL);
	sg = run_ops(0, size, count, singles, NULL, &bad);
	printf("bench: obj.batch_put_%s_x%lu_ops_per_s %.0f ops/s\n", l, per, count / tp);
	printf("bench: obj.batch_get_%s_x%lu_ops_per_s %.0f ops/s\n", l, per, count / tg);
	printf("bench: obj.single_put_%s_q%u_ops_per_s %.0f ops/s\n", l, depth, count / sp);
	printf("bench: obj.single_get_%s_q%u_ops_per_s %.0f ops/s\n", l, depth, count / sg);
	printf("bench: obj.batch_put_%s_x%lu.ratio_vs_single %.2f x\n", l, per, sp / tp);
	printf("bench: obj.batch_get_%s_x%lu.ratio_vs_single %.2f x\n", l, per, sg / tg);
	cleanup(size, count, singles);
	key_base = 0;
	depth = per;
	cleanup(size, count, b);
	depth = save;
	free(items);
	free(keys);
	if (bad)
		die("single gets read the wrong object", -EIO);
}

/* the DRAM the pool's ALIVE segments hold */
static uint64_t pool_bytes(void)
{
	struct ds_store_segment_info *segs = NULL;
	size_t n = 0;
	uint64_t total = 0;
	char err[256];
	int ret = ds_store_segment_list(masters, &segs, &n, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "obj_bench: segment list: %s\n", err);
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		if (segs[i].type == 0 && segs[i].state == 0)	/* DRAM, alive */
			total += segs[i].size;
	free(segs);
	return total;
}

static void mode_fill(uint64_t size)
{
	uint8_t **b = buffers(size);
	unsigned long per_pool = pool_bytes() / size, half = per_pool / 2;
	double t_empty, t_full;
	char l[32];

	if (half < 16) {
		fprintf(stderr, "obj_bench: a pool of %lu objects of %s is too small\n", per_pool,
			label(size, l, sizeof(l)));
		exit(1);
	}
	label(size, l, sizeof(l));
	t_empty = run_ops(1, size, half, b, NULL, NULL);
	key_base += half;
	run_ops(1, size, 2 * per_pool - half, b, NULL, NULL);	/* full, then evicting */
	key_base += 2 * per_pool - half;
	t_full = run_ops(1, size, per_pool, b, NULL, NULL);
	printf("bench: obj.put_empty_pool_%s_ops_per_s %.0f ops/s\n", l, half / t_empty);
	printf("bench: obj.put_full_pool_%s_ops_per_s %.0f ops/s\n", l, per_pool / t_full);
	printf("bench: obj.put_full_pool_%s.ratio_vs_empty %.2f x\n", l,
	       (per_pool / t_full) / (half / t_empty));
	printf("bench: obj.evictions %" PRIu64 " objects\n", master_figure("evictions"));
	/* (the store is torn down after: no cleanup of 3 pools of keys) */
}

static void mode_zipf(unsigned long keys, unsigned long ops, uint64_t size, double theta,
		      const char *trace)
{
	struct ds_store_replicate_config cfg = { .dram_replicas = 1 };
	double *cdf = calloc(keys, sizeof(*cdf)), sum = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull, task;
	unsigned long hits = 0, puts = 0, bad = 0;
	uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *f = fopen(trace, "we");
	char key[128], l[32];

	if (!cdf || buf == MAP_FAILED || !f)
		die("zipf set-up", -ENOMEM);
	if (ds_store_buf_reg(s, buf, size))
		die("buf_reg", -EIO);
	for (unsigned long r = 0; r < keys; r++)
		cdf[r] = sum += 1.0 / pow((double)(r + 1), theta);
	for (unsigned long n = 0; n < ops; n++) {
		struct ds_store_task_status st;
		struct iovec iov = { buf, size };
		unsigned long lo = 0, hi = keys - 1;
		double u;
		int ret;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		u = (double)(x >> 11) / 9007199254740992.0 * sum;
		while (lo < hi) {	/* the first rank whose cdf reaches u */
			unsigned long mid = (lo + hi) / 2;

			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		fprintf(f, "%lu\n", lo);
		snprintf(key, sizeof(key), "obj_bench/%d/zipf/%lu", (int)getpid(), lo);
		ret = ds_store_get(s, key, &iov, 1, -1, 0, &task);
		if (!ret)
			ret = ds_store_task_query(s, task, -1, 1, &st);
		if (ret)
			die("get", ret);
		if (st.state == DS_STORE_COMPLETE) {
			uint64_t seed, sz;

			hits++;
			if (store_pat_seed(buf, size, &seed, &sz) || seed != lo || sz != size)
				bad++;
			continue;
		}
		if (st.err != -ENOENT)
			die("get task", st.err ? st.err : -EIO);
		store_pat_fill(buf, size, lo);
		ret = ds_store_put(s, key, &iov, 1, &cfg, &task);
		if (!ret)
			ret = ds_store_task_query(s, task, -1, 1, &st);
		if (ret || st.state != DS_STORE_COMPLETE)
			die("put into a full pool", ret ? ret : st.err ? st.err : -EIO);
		puts++;
	}
	fclose(f);
	label(size, l, sizeof(l));
	printf("bench: obj.zipf_%.2f_%s_hit_ratio %.4f ratio\n", theta, l, (double)hits / ops);
	printf("bench: obj.zipf_%.2f_%s_puts %lu puts\n", theta, l, puts);
	for (unsigned long r = 0; r < keys; r++) {
		snprintf(key, sizeof(key), "obj_bench/%d/zipf/%lu", (int)getpid(), r);
		if (!ds_store_del(s, key, &task)) {
			struct ds_store_task_status st;

			ds_store_task_query(s, task, -1, 1, &st);
		}
	}
	ds_store_buf_dereg(s, buf);
	munmap(buf, size);
	free(cdf);
	if (bad) {
		fprintf(stderr, "obj_bench: %lu gets read the wrong object\n", bad);
		exit(1);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: obj_bench --masters H:P --node ID [--depth Q] [--replicas R] [--local SIZE]\n"
			"                 bw SIZE COUNT | ops SIZE COUNT | meta COUNT | fill SIZE\n"
			"                 | batch SIZE COUNT B\n"
			"                 | zipf KEYS OPS SIZE THETA TRACE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "masters", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'q' },
		{ "replicas", required_argument, NULL, 'r' },
		{ "local", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct ds_store_config cfg = { 0 };
	int c, ret;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': masters = optarg; break;
		case 'n': cfg.node_id = strtoul(optarg, NULL, 0); break;
		case 'q': depth = strtoul(optarg, NULL, 0); break;
		case 'r': replicas = strtoul(optarg, NULL, 0); break;
		case 'l':
			cfg.segment_size = parse_size(optarg);
			prefer_local = 1;
			pfx = "local_";
			break;
		default: usage();
		}
	}
	if (!masters || !cfg.node_id || !depth || optind >= argc)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	cfg.masters = masters;
	cfg.threads = depth > 4 ? depth : 4;
	ret = ds_store_open(&cfg, &s);
	if (ret)
		die("open", ret);
	if (!strcmp(argv[optind], "bw") && optind + 2 < argc)
		mode_bw(parse_size(argv[optind + 1]), strtoul(argv[optind + 2], NULL, 0));
	else if (!strcmp(argv[optind], "ops") && optind + 2 < argc)
		mode_ops(parse_size(argv[optind + 1]), strtoul(argv[optind + 2], NULL, 0));
	else if (!strcmp(argv[optind], "meta") && optind + 1 < argc)
		mode_meta(strtoul(argv[optind + 1], NULL, 0));
	else if (!strcmp(argv[optind], "batch") && optind + 3 < argc)
		mode_batch(parse_size(argv[optind + 1]), strtoul(argv[optind + 2], NULL, 0),
			   strtoul(argv[optind + 3], NULL, 0));
	else if (!strcmp(argv[optind], "fill") && optind + 1 < argc)
		mode_fill(parse_size(argv[optind + 1]));
	else if (!strcmp(argv[optind], "zipf") && optind + 5 < argc)
		mode_zipf(strtoul(argv[optind + 1], NULL, 0), strtoul(argv[optind + 2], NULL, 0),
			  parse_size(argv[optind + 3]), strtod(argv[optind + 4], NULL),
			  argv[optind + 5]);
	else
		usage();
	ds_store_close(s, 0);
	return 0;
}
