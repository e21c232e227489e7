// SPDX-License-Identifier: BSD-2-Clause
// POLICY/lru: a single-tier policy as L1 with an LRU as L2, the two-tier
// cache the seed policy is measured against at the same capacities.  The
// L2 is a second-level cache of the L1's misses, as in a memory
// hierarchy: every request L1 misses is looked up (and kept) in L2;
// nothing tells L2 what L1 evicts, so an object may be in both (the
// seed's L2 is exclusive, which favours the seed by at most L1's size).
#include <memory>
#include <string>

#include "sim.hpp"

namespace dssim {

namespace {

class two_tier final : public policy {
public:
	two_tier(std::unique_ptr<policy> l1, std::unique_ptr<policy> l2)
		: l1_(std::move(l1)), l2_(std::move(l2))
	{
		tiered = true;
	}

	int access(const trace &t, size_t i) override
	{
		const uint32_t sz = t.size_of(i);
		int tier = 0;

		c.requests++;
		c.bytes += sz;
		if (l1_->access(t, i) != 0) {
			c.miss_bytes += sz;
			tier = l2_->access(t, i) == 0 ? 1 : 2;
		}
		c.hits[tier]++;
		return tier;
	}

	void finish() override
	{
		l1_->finish();
		l2_->finish();
		c.evictions = l1_->c.evictions + l2_->c.evictions;
		c.writebacks = l1_->c.writebacks + l2_->c.writebacks;
		c.admissions_refused = l1_->c.admissions_refused;
		// an L2 hit brings the object up, as a promotion does
		c.promotions = c.hits[1];
	}

private:
	std::unique_ptr<policy> l1_, l2_;
};

}  // namespace

std::unique_ptr<policy> make_two_tier(std::string_view name, const trace &t,
				      const policy_opts &o, uint64_t l2_entries)
{
	const size_t slash = name.rfind('/');
	const std::string_view upper = name.substr(0, slash), lower = name.substr(slash + 1);

	if (lower != "lru")
		throw sim_error("policy " + std::string(name) + ": the L2 of a two-tier policy is lru (" +
				std::string(upper) + "/lru)");
	if (o.cap.bytes)
		throw sim_error("policy " + std::string(name) +
				": a two-tier policy counts entries; give its size in entries");
	auto l1 = make_baseline(upper, t, o);
	if (!l1)
		throw sim_error("policy " + std::string(name) + ": \"" + std::string(upper) +
				"\" is no single-tier policy (" + std::string(upper) + "/lru)");
	policy_opts lo = o;
	lo.cap = capacity{ l2_entries, false };
	return std::make_unique<two_tier>(std::move(l1), make_baseline("lru", t, lo));
}

}  // namespace dssim
