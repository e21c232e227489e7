// SPDX-License-Identifier: BSD-2-Clause
/*
 * `make bench B=cache`: the token cache's in-kernel connection sweep
 * (CACHE_BENCH) from 16 to 16384 active QPs, in the fixed and the adaptive
 * mode, each against the same accesses served without a cache (every one
 * a PCIe round trip to host memory: cost_l1 + cost_l2 + cost_l3 as the
 * model charges a miss of both tiers), and adaptive mode, the default,
 * against fixed mode, the seed's; then sampled heat (sample = 4, 16, 64)
 * against exact counting.
 *
 *   cache_bench [OPS]
 * prints "bench: NAME VALUE UNIT" lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dsmem/ds.h>

static const unsigned int sweep[] = { 16, 64, 256, 1024, 4096, 16384 };

int main(int argc, char **argv)
{
	unsigned int ops = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 100000;
	uint64_t params[DS_CACHE_P_NR] = {};
	struct ds_cache_bench_result r;
	struct ds_cache_info info;
	struct ds_ctx *ctx = NULL;
	double uncached, fixed_ns[sizeof(sweep) / sizeof(sweep[0])];
	int ret;

	ret = ds_ctx_open(&ctx);
	if (ret || (ret = ds_cache_get(ctx, &info))) {
		fprintf(stderr, "Error: %s\n", ctx ? ds_ctx_errmsg(ctx) : "no module");
		return 1;
	}
	uncached = (double)(info.params[DS_CACHE_P_COST_L1_NS] +
			    info.params[DS_CACHE_P_COST_L2_NS] +
			    info.params[DS_CACHE_P_COST_L3_NS]);
	for (int mode = DS_CACHE_FIXED; mode <= DS_CACHE_ADAPTIVE; mode++) {
		const char *m = mode == DS_CACHE_FIXED ? "" : "adaptive.";

		params[DS_CACHE_P_MODE] = mode;
		for (size_t i = 0; i < sizeof(sweep) / sizeof(sweep[0]); i++) {
			unsigned int q = sweep[i];
			double acc, ns;

			ret = ds_cache_bench(ctx, q, ops, 1, params,
					     1ULL << DS_CACHE_P_MODE, &r);
			if (ret) {
				fprintf(stderr, "Error: cache bench qps %u: %s\n", q,
					ds_ctx_errmsg(ctx));
				return 1;
			}
			acc = (double)r.accesses;
			ns = r.modeled_ns / acc;
			printf("bench: cache.%sl1_hit_ratio_qps_%u %.4f ratio\n", m, q,
			       r.hits_l1 / acc);
			printf("bench: cache.%sl2_hit_ratio_qps_%u %.4f ratio\n", m, q,
			       r.hits_l2 / acc);
			printf("bench: cache.%sl3_ratio_qps_%u %.4f ratio\n", m, q,
			       r.hits_l3 / acc);
			printf("bench: cache.%smodeled_ns_per_access_qps_%u %.1f ns\n",
			       m, q, ns);
			printf("bench: cache.%smodeled_ns_per_access_qps_%u.ratio_vs_uncached %.3f x\n",
			       m, q, ns / uncached);
			/* three lookups per operation, one NIC at 100 ns/op */
			printf("bench: cache.%smodeled_mops_qps_%u %.2f Mops/s\n", m,
			       q, 1e3 / (3 * ns));
			/* the default mode against the seed's fixed one */
			if (mode == DS_CACHE_FIXED)
				fixed_ns[i] = ns;
			else
				printf("bench: cache.adaptive.modeled_ns_per_access_qps_%u.ratio_vs_fixed %.3f x\n",
				       q, ns / fixed_ns[i]);
			if (!mode && q == 1024) {
				printf("bench: cache.resolve_l1_hit_ns %llu ns\n",
				       (unsigned long long)r.l1_hit_mean_ns);
				printf("bench: cache.resolve_l1_hit_p99_ns %llu ns\n",
				       (unsigned long long)r.l1_hit_p99_ns);
				printf("bench: cache.resolve_miss_ns %llu ns\n",
				       (unsigned long long)r.miss_mean_ns);
				printf("bench: cache.resolve_miss_p99_ns %llu ns\n",
				       (unsigned long long)r.miss_p99_ns);
			}
			fflush(stdout);
		}
	}
	/*
	 * Sampled heat (sample = N): the L1 hit ratio it keeps and the
	 * measured resolve time of all lookups, against exact counting in
	 * this run, fixed mode at 1024 QPs.
	 */
	{
		static const unsigned int ns_[] = { 1, 4, 16, 64 };
		double hit1 = 0, res1 = 0;

		params[DS_CACHE_P_MODE] = DS_CACHE_FIXED;
		for (size_t i = 0; i < sizeof(ns_) / sizeof(ns_[0]); i++) {
			double acc, hit, res;

			params[DS_CACHE_P_SAMPLE] = ns_[i];
			ret = ds_cache_bench(ctx, 1024, ops, 1, params,
					     1ULL << DS_CACHE_P_MODE |
					     1ULL << DS_CACHE_P_SAMPLE, &r);
			if (ret) {
				fprintf(stderr, "Error: cache bench sample %u: %s\n",
					ns_[i], ds_ctx_errmsg(ctx));
				return 1;
			}
			acc = (double)r.accesses;
			hit = r.hits_l1 / acc;
			res = ((double)r.l1_hit_mean_ns * r.hits_l1 +
			       (double)r.miss_mean_ns * (r.hits_l2 + r.hits_l3)) / acc;
			if (ns_[i] == 1) {
				hit1 = hit;
				res1 = res;
				continue;
			}
			printf("bench: cache.sampled_%u.l1_hit.ratio_vs_exact %.3f x\n",
			       ns_[i], hit1 > 0 ? hit / hit1 : 0);
			printf("bench: cache.sampled_%u.resolve_ns.ratio_vs_exact %.3f x\n",
			       ns_[i], res1 > 0 ? res / res1 : 0);
			fflush(stdout);
		}
	}
	ds_ctx_close(ctx);
	return 0;
}
