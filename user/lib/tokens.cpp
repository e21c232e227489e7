// SPDX-License-Identifier: BSD-2-Clause
// libdsuser control path for RDMA object tokens and the token cache:
// tokens by handle, the cache's parameters, tiers and counters, access
// traces and the synthetic benchmark.  Token layouts and the parameter
// table come from the module's own portable core (tc_core.hpp).
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <linux/dsmem_netlink.h>
#include <linux/dsmem_token.h>

#include "ds_internal.hpp"
#include "tc_core.hpp"

using namespace dsmem::detail;

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

// ds.h mirrors the uAPI's values without including it.
#define DS_SAME(a, b) static_assert(static_cast<long>(a) == static_cast<long>(b), #a)
DS_SAME(DS_TOKEN_PD, DSMEM_TOKEN_PD);
DS_SAME(DS_TOKEN_MR, DSMEM_TOKEN_MR);
DS_SAME(DS_TOKEN_CQ, DSMEM_TOKEN_CQ);
DS_SAME(DS_TOKEN_QP, DSMEM_TOKEN_QP);
DS_SAME(DS_TOKEN_DB, DSMEM_TOKEN_DB);
DS_SAME(DS_TOKEN_WQE, DSMEM_TOKEN_WQE);
DS_SAME(DS_TOKEN_WQE + 1, DSMEM_TOKEN_TYPES);
DS_SAME(DS_TIER_L1, DSMEM_TIER_L1);
DS_SAME(DS_TIER_L2, DSMEM_TIER_L2);
DS_SAME(DS_TIER_L3, DSMEM_TIER_L3);
DS_SAME(DS_CACHE_TIERS, DSMEM_TIER_L3);
DS_SAME(DS_TOKEN_PINNED, DSMEM_TOKEN_PINNED);
DS_SAME(DS_TOKEN_DIRTY, DSMEM_TOKEN_DIRTY);
DS_SAME(DS_TOKEN_MIGRATING, DSMEM_TOKEN_MIGRATING);
DS_SAME(DS_TOKEN_DATA_MAX, sizeof(union dsmem_token));
DS_SAME(DS_CACHE_FIXED, DSMEM_CACHE_FIXED);
DS_SAME(DS_CACHE_ADAPTIVE, DSMEM_CACHE_ADAPTIVE);
DS_SAME(DS_CACHE_P_L1_CAPACITY, DSMEM_CACHE_P_L1_CAPACITY);
DS_SAME(DS_CACHE_P_L2_CAPACITY, DSMEM_CACHE_P_L2_CAPACITY);
DS_SAME(DS_CACHE_P_PROMOTE_L2, DSMEM_CACHE_P_PROMOTE_L2);
DS_SAME(DS_CACHE_P_PROMOTE_L1, DSMEM_CACHE_P_PROMOTE_L1);
DS_SAME(DS_CACHE_P_WINDOW_NS, DSMEM_CACHE_P_WINDOW_NS);
DS_SAME(DS_CACHE_P_L1_IDLE_NS, DSMEM_CACHE_P_L1_IDLE_NS);
DS_SAME(DS_CACHE_P_L2_IDLE_NS, DSMEM_CACHE_P_L2_IDLE_NS);
DS_SAME(DS_CACHE_P_AGING_NS, DSMEM_CACHE_P_AGING_NS);
DS_SAME(DS_CACHE_P_BATCH_THRESHOLD, DSMEM_CACHE_P_BATCH_THRESHOLD);
DS_SAME(DS_CACHE_P_BATCH_MAX, DSMEM_CACHE_P_BATCH_MAX);
DS_SAME(DS_CACHE_P_QUEUE_MAX, DSMEM_CACHE_P_QUEUE_MAX);
DS_SAME(DS_CACHE_P_CAS_RETRIES, DSMEM_CACHE_P_CAS_RETRIES);
DS_SAME(DS_CACHE_P_PREFETCH, DSMEM_CACHE_P_PREFETCH);
DS_SAME(DS_CACHE_P_COST_L1_NS, DSMEM_CACHE_P_COST_L1_NS);
DS_SAME(DS_CACHE_P_COST_L2_NS, DSMEM_CACHE_P_COST_L2_NS);
DS_SAME(DS_CACHE_P_COST_L3_NS, DSMEM_CACHE_P_COST_L3_NS);
DS_SAME(DS_CACHE_P_MODE, DSMEM_CACHE_P_MODE);
DS_SAME(DS_CACHE_P_MIGRATE_BUDGET, DSMEM_CACHE_P_MIGRATE_BUDGET);
DS_SAME(DS_CACHE_P_ADAPT_NS, DSMEM_CACHE_P_ADAPT_NS);
DS_SAME(DS_CACHE_P_SAMPLE, DSMEM_CACHE_P_SAMPLE);
DS_SAME(DS_CACHE_P_OPTIMISTIC, DSMEM_CACHE_P_OPTIMISTIC);
DS_SAME(DS_CACHE_P_NR, DSMEM_CACHE_P_NR);
DS_SAME(DS_CACHE_P_NR, DSTC_P_NR);
static_assert(DS_CACHE_P_NR <= DS_CACHE_PARAMS_MAX && DS_CACHE_PARAMS_MAX <= 64,
	      "a mask bit per parameter");
static_assert(DS_CACHE_STATS_MAX >= DSTC_S_NR, "room for every counter of the core");
// the migration figures took reserved room: the struct keeps its size
static_assert(sizeof(ds_cache_info) == 5328, "ds_cache_info: the ABI's size");
DS_SAME(DS_TRACE_READ, DSMEM_TRACE_READ);
DS_SAME(DS_TRACE_MODIFY, DSMEM_TRACE_MODIFY);
DS_SAME(DS_TRACE_WRITE, DSMEM_TRACE_WRITE);
DS_SAME(DS_TRACE_CREATE, DSMEM_TRACE_CREATE);
DS_SAME(DS_TRACE_DESTROY, DSMEM_TRACE_DESTROY);
// the library's records are the module's, byte for byte
DS_SAME(sizeof(struct ds_trace_rec), DSMEM_TRACE_REC_SIZE);
DS_SAME(offsetof(struct ds_trace_rec, handle), offsetof(struct dsmem_trace_rec, handle));
DS_SAME(offsetof(struct ds_trace_rec, node), offsetof(struct dsmem_trace_rec, node));
DS_SAME(offsetof(struct ds_trace_rec, type), offsetof(struct dsmem_trace_rec, type));
DS_SAME(offsetof(struct ds_trace_rec, op), offsetof(struct dsmem_trace_rec, op));
DS_SAME(offsetof(struct ds_trace_rec, tier), offsetof(struct dsmem_trace_rec, tier));
DS_SAME(offsetof(struct ds_trace_rec, reserved1), offsetof(struct dsmem_trace_rec, __reserved));
DS_SAME(sizeof(struct ds_cache_move), DSMEM_CACHE_MOVE_SIZE);

namespace {

// The token info holds, as the core checks it: whole, of a known type
// and layout version.  Null when it does not.
bool token_of(const ds_token_info *info, union dsmem_token *t)
{
	if (!info || info->data_len > sizeof(*t))
		return false;
	memset(t, 0, sizeof(*t));
	memcpy(t, info->data, info->data_len);
	return !dstc_token_check(t, info->data_len) && t->hdr.type == info->type;
}

const struct dstc_field *token_fields(const ds_token_info *info, union dsmem_token *t,
				      unsigned int *nr)
{
	if (!token_of(info, t))
		return nullptr;
	return dstc_token_fields(t->hdr.type, nr);
}

// Every parameter of mask known, and in its range by the core's table.
int check_params(ds_ctx *ctx, const uint64_t *params, uint64_t mask)
{
	if (mask && !params)
		return fail(ctx, -EINVAL, "no parameter values");
	if (mask >> DSTC_P_NR)
		return fail(ctx, -EINVAL, "unknown cache parameter");
	for (unsigned int i = 0; i < DSTC_P_NR; i++) {
		const struct dstc_param_desc &d = dstc_params[i];

		if (!(mask & (1ULL << i)) || (params[i] >= d.min && params[i] <= d.max))
			continue;
		ctx->errmsg = std::string(d.name) + " out of range: " + std::to_string(d.min) +
			      " to " + std::to_string(d.max);
		if (d.unit[0])
			ctx->errmsg += std::string(" ") + d.unit;
		return -ERANGE;
	}
	return 0;
}

void put_params(attrs &a, const uint64_t *params, uint64_t mask)
{
	if (!mask)
		return;
	struct nlattr *nest = a.begin(DSMEM_ATTR_CACHE_PARAMS);
	for (unsigned int i = 0; i < DSTC_P_NR; i++)
		if (mask & (1ULL << i))
			a.u64(static_cast<int>(i + 1), params[i]);
	a.end(nest);
}

}  // namespace

// ---- tokens ----

DS_EXPORT int ds_token_get(struct ds_ctx *ctx, uint32_t handle,
			   struct ds_token_info *info)
{
	return request_one(ctx, DSMEM_CMD_TOKEN_GET, [handle](attrs &a) {
		a.u32(DSMEM_ATTR_TOKEN_HANDLE, handle);
	}, [info](struct nl_msg *m) { return parse_token(m, info); });
}

DS_EXPORT int ds_token_list(struct ds_ctx *ctx, int type, uint32_t node,
			    struct ds_token_info **infos, size_t *count)
{
	if (type < -1 || type >= DSMEM_TOKEN_TYPES)
		return fail(ctx, -EINVAL, "unknown token type");

	std::vector<ds_token_info> out;
	int ret = request(ctx, DSMEM_CMD_TOKEN_GET, true, [=](attrs &a) {
		if (type >= 0)
			a.u8(DSMEM_ATTR_TOKEN_TYPE, static_cast<uint8_t>(type));
		if (node)
			a.u32(DSMEM_ATTR_NODE_ID, node);
	}, [&out](struct nl_msg *m) {
		ds_token_info t;
		int r = parse_token(m, &t);
		if (!r)
			out.push_back(t);
		return r;
	});
	return ret ? ret : to_c_array(ctx, out, infos, count);
}

DS_EXPORT void ds_token_list_free(struct ds_token_info *infos)
{
	free(infos);
}

DS_EXPORT int ds_token_set(struct ds_ctx *ctx, uint32_t handle,
			   const struct ds_token_update *u, struct ds_token_info *info)
{
	const uint32_t known = DS_TOKEN_SET_PINNED | DS_TOKEN_SET_LAYER | DS_TOKEN_SET_VERSION;

	if (!u || (u->mask & ~known))
		return fail(ctx, -EINVAL, "unknown token update");
	if ((u->mask & DS_TOKEN_SET_PINNED) && u->pinned > 1)
		return fail(ctx, -EINVAL, "pinned is 0 or 1");
	if ((u->mask & DS_TOKEN_SET_LAYER) &&
	    (u->layer < DSMEM_TIER_L1 || u->layer > DSMEM_TIER_L3))
		return fail(ctx, -EINVAL, "layer is 1, 2 or 3 (L1, L2, L3)");

	ds_token_info t;
	int ret = request_one(ctx, DSMEM_CMD_TOKEN_SET, [=](attrs &a) {
		a.u32(DSMEM_ATTR_TOKEN_HANDLE, handle);
		if (u->mask & DS_TOKEN_SET_PINNED)
			a.u8(DSMEM_ATTR_TOKEN_PINNED, u->pinned);
		if (u->mask & DS_TOKEN_SET_LAYER)
			a.u8(DSMEM_ATTR_TOKEN_LAYER, u->layer);
		if (u->mask & DS_TOKEN_SET_VERSION)
			a.u32(DSMEM_ATTR_TOKEN_VERSION, u->version);
	}, [&t](struct nl_msg *m) { return parse_token(m, &t); }, info != nullptr);
	if (!ret && info)
		*info = t;
	return ret;
}

DS_EXPORT const char *ds_token_type_name(int type)
{
	if (type < 0 || type >= DSMEM_TOKEN_TYPES)
		return nullptr;
	return dstc_token_type_name(static_cast<uint8_t>(type));
}

DS_EXPORT int ds_token_type_lookup(const char *name)
{
	for (int type = 0; name && type < DSMEM_TOKEN_TYPES; type++)
		if (!strcmp(name, dstc_token_type_name(static_cast<uint8_t>(type))))
			return type;
	return -ENOENT;
}

DS_EXPORT int ds_token_field_count(const struct ds_token_info *info)
{
	union dsmem_token t;
	unsigned int nr = 0;

	if (!token_fields(info, &t, &nr))
		return -EINVAL;
	return static_cast<int>(nr);
}

DS_EXPORT int ds_token_field(const struct ds_token_info *info, unsigned int i,
			     const char **name, uint32_t *value)
{
	union dsmem_token t;
	unsigned int nr = 0;
	const struct dstc_field *f = token_fields(info, &t, &nr);

	if (!f)
		return -EINVAL;
	if (i >= nr)
		return -ENOENT;
	if (name)
		*name = f[i].name;
	if (value)
		*value = dstc_field_get(&t, &f[i]);
	return 0;
}

DS_EXPORT int ds_token_field_get(const struct ds_token_info *info, const char *name,
				 uint32_t *value)
{
	union dsmem_token t;
	unsigned int nr = 0;
	const struct dstc_field *f = token_fields(info, &t, &nr);

	if (!f || !name)
		return -EINVAL;
	for (unsigned int i = 0; i < nr; i++)
		if (!strcmp(f[i].name, name)) {
			if (value)
				*value = dstc_field_get(&t, &f[i]);
			return 0;
		}
	return -ENOENT;
}

// ---- the cache ----

DS_EXPORT int ds_cache_get(struct ds_ctx *ctx, struct ds_cache_info *info)
{
	return request_one(ctx, DSMEM_CMD_CACHE_GET, nullptr,
			   [info](struct nl_msg *m) { return parse_cache(m, info); });
}

DS_EXPORT int ds_cache_set(struct ds_ctx *ctx, const uint64_t *params, uint64_t mask,
			   int reset, struct ds_cache_info *info)
{
	int ret = check_params(ctx, params, mask);
	if (ret)
		return ret;

	auto *c = static_cast<ds_cache_info *>(malloc(sizeof(ds_cache_info)));
	if (!c)
		return fail(ctx, -ENOMEM, "out of memory");
	ret = request_one(ctx, DSMEM_CMD_CACHE_SET, [=](attrs &a) {
		put_params(a, params, mask);
		if (reset)
			a.flag(DSMEM_ATTR_CACHE_RESET);
	}, [c](struct nl_msg *m) { return parse_cache(m, c); }, info != nullptr);
	if (!ret && info)
		*info = *c;
	free(c);
	return ret;
}

DS_EXPORT unsigned int ds_cache_param_count(void)
{
	return DSTC_P_NR;
}

DS_EXPORT const char *ds_cache_param_name(unsigned int index)
{
	return index < DSTC_P_NR ? dstc_params[index].name : nullptr;
}

DS_EXPORT int ds_cache_param_lookup(const char *name)
{
	for (unsigned int i = 0; name && i < DSTC_P_NR; i++)
		if (!strcmp(name, dstc_params[i].name))
			return static_cast<int>(i);
	return -ENOENT;
}

DS_EXPORT int ds_cache_param_describe(unsigned int index, struct ds_cache_param_desc *desc)
{
	if (!desc)
		return -EINVAL;
	if (index >= DSTC_P_NR)
		return -ENOENT;
	memset(desc, 0, sizeof(*desc));
	desc->name = dstc_params[index].name;
	desc->unit = dstc_params[index].unit;
	desc->min = dstc_params[index].min;
	desc->max = dstc_params[index].max;
	desc->def = dstc_params[index].def;
	return 0;
}

DS_EXPORT int ds_cache_stat(const struct ds_cache_info *info, const char *name,
			    uint64_t *value)
{
	if (!info || !name)
		return -EINVAL;
	for (uint32_t i = 0; i < info->nstats && i < DS_CACHE_STATS_MAX; i++)
		if (!strncmp(info->stats[i].name, name, sizeof(info->stats[i].name))) {
			if (value)
				*value = info->stats[i].value;
			return 0;
		}
	return -ENOENT;
}

// ---- traces and the benchmark ----

DS_EXPORT int ds_trace_start(struct ds_ctx *ctx, int fd)
{
	if (fd < 0)
		return fail(ctx, -EBADF, "no file descriptor to trace to");
	return request(ctx, DSMEM_CMD_TRACE_START, false, [fd](attrs &a) {
		a.u32(DSMEM_ATTR_TRACE_FD, static_cast<uint32_t>(fd));
	}, ignore_replies);
}

DS_EXPORT int ds_trace_stop(struct ds_ctx *ctx, struct ds_trace_info *info)
{
	ds_trace_info t;
	int ret = request_one(ctx, DSMEM_CMD_TRACE_STOP, nullptr,
			      [&t](struct nl_msg *m) { return parse_trace(m, &t, true); },
			      info != nullptr);
	if (!ret && info)
		*info = t;
	return ret;
}

DS_EXPORT int ds_cache_bench(struct ds_ctx *ctx, uint32_t qps, uint32_t ops, uint32_t seed,
			     const uint64_t *params, uint64_t mask,
			     struct ds_cache_bench_result *result)
{
	static_assert(DS_CACHE_BENCH_QPS_MAX == 16384, "the text below");
	if (!qps || qps > DS_CACHE_BENCH_QPS_MAX)
		return fail(ctx, -EINVAL, "qps is 1 to 16384");
	int ret = check_params(ctx, params, mask);
	if (ret)
		return ret;

	ds_cache_bench_result r;
	ret = request_one(ctx, DSMEM_CMD_CACHE_BENCH, [=](attrs &a) {
		a.u32(DSMEM_ATTR_BENCH_QPS, qps);
		a.u32(DSMEM_ATTR_BENCH_OPS, ops);
		a.u32(DSMEM_ATTR_BENCH_SEED, seed);
		put_params(a, params, mask);
	}, [&r](struct nl_msg *m) { return parse_bench(m, &r); }, result != nullptr);
	if (!ret && result)
		*result = r;
	return ret;
}

DS_EXPORT int ds_cache_replay(struct ds_ctx *ctx, const struct ds_trace_rec *recs,
			      size_t nrecs, uint64_t maint_ns, const uint64_t *params,
			      uint64_t mask, struct ds_cache_replay_result *result)
{
	static_assert(DS_CACHE_REPLAY_RECS_MAX == 2048, "the text below");
	if (!recs && nrecs)
		return fail(ctx, -EINVAL, "no records");
	if (!nrecs || nrecs > DS_CACHE_REPLAY_RECS_MAX)
		return fail(ctx, -ERANGE, "a replay takes 1 to 2048 records");
	if (maint_ns && (maint_ns < 1000 || maint_ns > 60000000000ULL))
		return fail(ctx, -ERANGE, "maint_ns is 1 us to 60 s (0: the default)");
	int ret = check_params(ctx, params, mask);
	if (ret)
		return ret;

	auto *r = static_cast<ds_cache_replay_result *>(calloc(1, sizeof(ds_cache_replay_result)));
	if (!r)
		return fail(ctx, -ENOMEM, "out of memory");
	std::vector<ds_cache_move> moves;
	size_t len = nrecs * sizeof(*recs);
	ret = request_one(ctx, DSMEM_CMD_CACHE_REPLAY, [=](attrs &a) {
		a.bin(DSMEM_ATTR_REPLAY_RECS, recs, len);
		if (maint_ns)
			a.u64(DSMEM_ATTR_REPLAY_MAINT_NS, maint_ns);
		put_params(a, params, mask);
	}, [r, &moves](struct nl_msg *m) { return parse_replay(m, r, moves); },
	   result != nullptr, 1024 + nla_total_size(static_cast<int>(len)));
	if (!ret && result)
		ret = to_c_array(ctx, moves, &r->moves, &r->nmoves);
	if (!ret && result)
		*result = *r;
	free(r);
	return ret;
}

DS_EXPORT void ds_cache_replay_free(struct ds_cache_replay_result *result)
{
	if (!result)
		return;
	free(result->moves);
	result->moves = nullptr;
	result->nmoves = 0;
}
