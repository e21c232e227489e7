// SPDX-License-Identifier: BSD-2-Clause
// The seed policy: the token cache's own policy core (the very file the
// module compiles), stepped through the same replay driver as the
// module's CACHE_REPLAY, so a trace makes the same moves here as there.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim.hpp"
#include "../../lib/tc_core.hpp"

namespace dssim {

namespace {

// One thread owns the cache: no lock, and pages can go at once.
void *seed_page_alloc(dstc_cache *)
{
	return calloc(1, DSTC_PAGE_SIZE);
}

void seed_page_free(dstc_cache *, void *page)
{
	free(page);
}

void *seed_chunk_alloc(dstc_cache *, size_t size)
{
	return calloc(1, size);
}

void seed_nolock(dstc_cache *) {}

void seed_chunk_free(dstc_cache *, void *p)
{
	free(p);
}

const dstc_ops seed_ops = {
	.page_alloc = seed_page_alloc,
	.page_free = seed_page_free,
	.chunk_alloc = seed_chunk_alloc,
	.lock = seed_nolock,
	.unlock = seed_nolock,
};

constexpr size_t prefetch_ahead = 16;

class seed_policy : public policy {
public:
	seed_policy(const trace &t, const policy_opts &o, bool adaptive);
	~seed_policy() override { dstc_cache_destroy(&c_, seed_chunk_free); }
	seed_policy(const seed_policy &) = delete;
	seed_policy &operator=(const seed_policy &) = delete;

	int access(const trace &t, size_t i) override;
	void finish() override;

private:
	static void record_move(dstc_cache *c, uint32_t eid, uint8_t from, uint8_t to);
	uint32_t eid_of(const trace &t, uint32_t id) const
	{
		return t.eids.empty() ? id : t.eids[id];
	}

	dstc_cache c_;
	dstc_stats st_ = {};
	dstc_replay r_ = {};
	std::vector<uint16_t> gen_;	// per object; 0: not inserted yet
	std::vector<move_event> *moves_;
	bool trace_clock_;
	uint64_t interval_ns_;
	uint64_t now_ = 0;
	uint64_t first_ns_ = 0;	// the clock at the first request
};

// Entry ids the trace uses: dense ids, or the module's type << 16 | index.
uint32_t entries_needed(const trace &t)
{
	uint32_t n = t.nobjects();

	for (uint32_t e : t.eids)
		n = e + 1 > n ? e + 1 : n;
	return n;
}

// What is wrong with a parameter set, by name, value and limit: the
// core's own words only name them.
static std::string params_error(const __u64 *p, unsigned int bad, uint64_t l1_max,
				const char *why)
{
	auto named = [&](unsigned int k) {
		return std::string(dstc_params[k].name) + " " + std::to_string(p[k]);
	};
	if (bad < DSTC_P_NR) {
		const dstc_param_desc &d = dstc_params[bad];
		uint64_t max = bad == DSTC_P_L1_CAPACITY ? l1_max : d.max;
		bool low = p[bad] < d.min;
		std::string unit = *d.unit ? std::string(" ") + d.unit : "";
		return named(bad) + " is " + (low ? "below its minimum " : "above its limit ") +
		       std::to_string(low ? d.min : max) + unit;
	}
	// the two the core's message names
	static const struct { const char *why; unsigned int lo, hi; } pairs[] = {
		{ "promote_l1 below promote_l2", DSTC_P_PROMOTE_L1, DSTC_P_PROMOTE_L2 },
		{ "batch_max below batch_threshold", DSTC_P_BATCH_MAX, DSTC_P_BATCH_THRESHOLD },
		{ "queue_max below batch_threshold", DSTC_P_QUEUE_MAX, DSTC_P_BATCH_THRESHOLD },
	};
	for (const auto &q : pairs)
		if (!std::strcmp(why, q.why))
			return named(q.lo) + " is below " + named(q.hi);
	return why;
}

seed_policy::seed_policy(const trace &t, const policy_opts &o, bool adaptive)
	: gen_(t.nobjects(), 0), moves_(o.moves),
	  // module traces carry real times; other sources' clocks are too
	  // coarse (seconds) for windows of microseconds
	  trace_clock_(t.format == "dsmem" && !t.times_ns.empty()),
	  interval_ns_(o.interval_ns ? o.interval_ns : 1)
{
	__u64 p[DSTC_P_NR];
	const char *why = nullptr;
	uint32_t n = entries_needed(t);

	tiered = true;
	if (n > DSTC_ENTRIES_MAX)
		throw sim_error("seed: the trace has " + std::to_string(n) +
				" objects; the token cache holds at most " +
				std::to_string(DSTC_ENTRIES_MAX));
	dstc_params_default(p);
	// "seed" is the seed's fixed thresholds, whatever the module defaults to
	p[DSTC_P_MODE] = adaptive ? DSMEM_CACHE_ADAPTIVE : DSMEM_CACHE_FIXED;
	for (unsigned int k = 0; k < DSTC_P_NR; k++)
		if (o.params_mask & (1ULL << k))
			p[k] = o.params[k];
	// an L1 slot holds a whole token: bytes are counted in tokens
	p[DSTC_P_L1_CAPACITY] = o.cap.bytes ? o.cap.value / sizeof(union dsmem_token)
					    : o.cap.value;
	if (o.l2_entries)
		p[DSTC_P_L2_CAPACITY] = o.l2_entries;
	if (adaptive)
		p[DSTC_P_MODE] = DSMEM_CACHE_ADAPTIVE;
	for (int k = 0; k < 3; k++)
		p[DSTC_P_COST_L1_NS + k] = o.cost_ns[k];
	// the simulator models no SRAM: its L1 may outgrow the NIC's
	unsigned int bad;
	if (dstc_params_check_l1(p, DSTC_ENTRIES_MAX, &bad, &why))
		throw sim_error("seed: " + params_error(p, bad, DSTC_ENTRIES_MAX, why));
	uint32_t l1_slots = std::max<uint32_t>(DSTC_L1_MAX, uint32_t(p[DSTC_P_L1_CAPACITY]));
	if (dstc_cache_init_l1(&c_, &seed_ops, nullptr, n, p, l1_slots)) {
		dstc_cache_destroy(&c_, seed_chunk_free);
		throw sim_error("seed: out of memory for " + std::to_string(n) + " entries");
	}
	dstc_replay_init(&r_, o.maint_ns);
	if (moves_) {
		c_.priv = this;
		c_.move_hook = record_move;
	}
}

void seed_policy::record_move(dstc_cache *c, uint32_t eid, uint8_t from, uint8_t to)
{
	static_cast<seed_policy *>(c->priv)->moves_->push_back({ eid, from, to });
}

int seed_policy::access(const trace &t, size_t i)
{
	uint32_t id = t.ids[i], eid = eid_of(t, id);
	dstc_result res;

	// the trace is known ahead: fetch a later request's entry, which a
	// large trace has long since pushed out of the CPU's caches (what the
	// entry points at, fetched the same way, gained nothing)
	if (i + prefetch_ahead < t.size()) {
		uint32_t ahead = t.ids[i + prefetch_ahead];
		const struct dstc_entry *e = dstc_entry(&c_, eid_of(t, ahead));

		__builtin_prefetch(&gen_[ahead]);
		if (e) {
			__builtin_prefetch(e);
			__builtin_prefetch(reinterpret_cast<const char *>(e) + sizeof(*e) - 1);
		}
	}

	if (!gen_[id]) {
		union dsmem_token tok;
		uint8_t type = t.types.empty() ? uint8_t{ DSMEM_TOKEN_MR } : t.types[id];

		dstc_token_init(&tok, type, static_cast<uint16_t>(eid & 0xffff));
		if (type == DSMEM_TOKEN_QP)
			tok.qp.state = 3;	/* IB_QPS_RTS: it carries traffic */
		if (dstc_insert_locked(&c_, eid, 0, &tok, &gen_[id]))
			throw sim_error("seed: out of memory inserting entry " +
					std::to_string(eid));
	}
	if (trace_clock_)
		now_ = t.times_ns[i] > now_ ? t.times_ns[i] : now_;
	else
		now_ += interval_ns_;
	if (!i)
		first_ns_ = now_;
	if (dstc_replay_step(&c_, &st_, &r_, eid, gen_[id], t.is_write(i) ? 1 : 0,
			     now_, &res))
		throw sim_error("seed: entry " + std::to_string(eid) + " vanished");
	int tier = res.tier - 1;
	c.requests++;
	c.hits[tier]++;
	c.bytes += t.size_of(i);
	if (tier)
		c.miss_bytes += t.size_of(i);
	return tier;
}

void seed_policy::finish()
{
	const __u64 *v = st_.v;

	c.promotions = v[DSTC_S_PROMOTE_L1] + v[DSTC_S_PROMOTE_L2];
	c.demotions = v[DSTC_S_DEMOTE_L1] + v[DSTC_S_DEMOTE_L2];
	c.evictions = v[DSTC_S_EVICT_L1] + v[DSTC_S_EVICT_L2];
	c.writebacks = v[DSTC_S_WRITEBACKS];
	c.has_migration = true;
	c.migrations = v[DSTC_S_MIGRATIONS];
	c.migrate_ns = v[DSTC_S_MIGRATE_NS];
	c.dma_bytes = v[DSTC_S_DMA_BYTES];
	c.dma_prefetch_bytes = v[DSTC_S_DMA_PREFETCH_BYTES];
	c.span_ns = now_ - first_ns_;
	c.mig_hist.assign(st_.mig_hist, st_.mig_hist + DSTC_HIST_BUCKETS);
}

}  // namespace

const std::vector<std::string> &policy_names()
{
	static const std::vector<std::string> names = [] {
		std::vector<std::string> n = baseline_names();
		n.push_back("seed");
		n.push_back("seed-adaptive");
		return n;
	}();
	return names;
}

std::unique_ptr<policy> make_policy(std::string_view name, const trace &t,
				    const policy_opts &o)
{
	if (name == "seed" || name == "seed-adaptive")
		return std::make_unique<seed_policy>(t, o, name == "seed-adaptive" || o.adaptive);
	// the seed's rival at the same capacities: its L2 is the seed's
	if (name.find('/') != std::string_view::npos)
		return make_two_tier(name, t, o, o.l2_entries ? o.l2_entries :
					   dstc_params[DSTC_P_L2_CAPACITY].def);
	auto p = make_baseline(name, t, o);
	if (!p) {
		std::string known;
		for (const auto &n : policy_names())
			known += (known.empty() ? "" : ", ") + n;
		throw sim_error("unknown policy \"" + std::string(name) + "\" (one of " + known + ")");
	}
	return p;
}

}  // namespace dssim
