// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's eviction: a put that finds no room evicts complete versions
// nobody reads, least recently used first (soft-pinned ones last), and
// the GC loop keeps each tier under its high watermark and expires TTLs.
// Every eviction is an Evict record, so it survives a failover; a new
// leader evicts nothing until the old leader's read leases ran out.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "service.hpp"

namespace dsmem::store {

namespace {

constexpr uint64_t kEvictPerTick = 4096;	// records per GC tick and tier
constexpr size_t kEvictBatch = 64;		// candidates a put takes at a time

const char *tier_name(v1::SegmentType t)
{
	return t == v1::SEGMENT_DRAM ? "DRAM" : "NVMe-oF";
}

}  // namespace

int Leader::evict_locked(const lg::Record &rec, uint64_t *seq, std::string *err)
{
	const lg::Evict &e = rec.evict();
	const ObjectState *o = st_.find_object(e.key());
	// the slow tier's copy goes too, unless the LRU keeps it to read from
	bool slow_goes = slow_ && o && o->flushed_version &&
			 !(e.reason() == lg::Evict::LRU && o->flushed_version == e.version());
	if (int ret = commit_locked(rec, seq, err))
		return ret;
	if (slow_goes)
		slow_dels_.emplace_back(e.key(), *seq);
	if (opts_.verbose)
		log_line("%s '%s' version %llu (%llu bytes)",
			 e.reason() == lg::Evict::TTL ? "expired" : "evicted", e.key().substr(0, 64).c_str(),
			 static_cast<unsigned long long>(e.version()),
			 static_cast<unsigned long long>(e.bytes()));
	return 0;
}

/*
 * The tier could hold the object if it were empty: otherwise evicting
 * would empty it for nothing.  DRAM shards spread over segments; an
 * NVMe-oF replica is one extent of one namespace.
 */
bool Leader::fits_empty_locked(v1::SegmentType type, uint64_t size) const
{
	uint64_t total = 0, largest = 0;
	for (const auto &[id, s] : st_.segments())
		if (s.desc.type() == type && s.desc.state() == v1::SEGMENT_ALIVE) {
			total += s.alloc->size();
			largest = std::max(largest, s.alloc->size());
		}
	uint64_t need = OffsetAllocator::round(size);
	return type == v1::SEGMENT_DRAM ? total >= need : largest >= need;
}

int Leader::evict_for_put_locked(const Caller &c, const v1::PutStartRequest *q,
				 const std::set<uint64_t> &exclude, lg::Record *rec, uint64_t *seq,
				 int64_t *takeover_ns, std::string *err)
{
	int64_t now = now_ns();
	uint64_t n = 0, bytes = 0;
	EvictBlockers why, any;
	bool tried = false;

	*takeover_ns = 0;
	for (v1::SegmentType type : { v1::SEGMENT_DRAM, v1::SEGMENT_NVMEOF }) {
		uint32_t want = type == v1::SEGMENT_DRAM ? q->config().dram_replicas()
							 : q->config().nvmeof_replicas();
		if (!want || !fits_empty_locked(type, q->size()))
			continue;
		tried = true;
		// evict about the object's size, then try; again until it
		// fits.  The candidates come a batch at a time (evicted ones
		// leave the order): a full pool of millions of objects is
		// not sorted under the mutex for one put.
		uint64_t freed = 0;
		for (;;) {
			std::vector<EvictCandidate> order =
				st_.eviction_order(type, now, &why, kEvictBatch);
			for (size_t i = 0; i < order.size(); i++) {
				lg::Record ev;
				st_.plan_evict(order[i], lg::Evict::LRU, &ev);
				if (int ret = evict_locked(ev, seq, err))
					return ret;
				n++;
				bytes += order[i].bytes;
				freed += order[i].tier_bytes;
				if (freed < q->size() && i + 1 < order.size())
					continue;
				freed = 0;
				rec->Clear();
				err->clear();
				int ret = st_.plan_put_start(c, q->client_id(), q->key(), q->size(),
							     q->config(), exclude, now, rec, err);
				if (ret != -ENOSPC) {
					log_line("evicted %llu objects (%llu bytes) for a put of %llu bytes",
						 static_cast<unsigned long long>(n),
						 static_cast<unsigned long long>(bytes),
						 static_cast<unsigned long long>(q->size()));
					return ret;
				}
			}
			if (order.size() < kEvictBatch)
				break;	// the whole order was walked: why counts all
		}
		any.leased += why.leased;
		any.pending = std::max(any.pending, why.pending);
		any.quarantined_bytes += why.quarantined_bytes;
		*takeover_ns = std::max(*takeover_ns, why.takeover_left_ns);
	}
	if (!tried) {
		*err = "no segment could hold " + std::to_string(q->size()) +
		       " bytes even empty; nothing evicted";
		return -ENOSPC;
	}
	if (*takeover_ns)
		return -ENOSPC;	// the caller waits for the old leader's leases
	*err = "pool full and nothing " + std::string(n ? "more " : "") + "to evict: " +
	       (n ? std::to_string(n) + " objects evicted for this put; " : "") +
	       std::to_string(any.leased) + " held by readers' leases or copies, " +
	       std::to_string(any.pending) + " puts pending, " +
	       std::to_string(any.quarantined_bytes) + " bytes quarantined";
	return -ENOSPC;
}

void Leader::evict_to_watermarks_locked(int64_t now, uint64_t *seq, uint64_t *n, uint64_t *bytes)
{
	if (!opts_.evict || opts_.high_watermark_pct >= 100)
		return;
	for (v1::SegmentType type : { v1::SEGMENT_DRAM, v1::SEGMENT_NVMEOF }) {
		uint64_t size, used, done = 0;
		st_.tier_usage(type, &size, &used);
		if (!size || used * 100 <= size * opts_.high_watermark_pct)
			continue;
		uint64_t before = used, target = size * opts_.low_watermark_pct / 100;
		for (const EvictCandidate &c : st_.eviction_order(type, now, nullptr, kEvictPerTick)) {
			// soft pins go only for a put that finds no room
			if (used <= target || done >= kEvictPerTick || c.soft_pin)
				break;
			lg::Record ev;
			st_.plan_evict(c, lg::Evict::LRU, &ev);
			std::string err;
			if (evict_locked(ev, seq, &err))
				return;
			done++;
			*bytes += c.bytes;
			st_.tier_usage(type, &size, &used);
		}
		*n += done;
		if (done)
			log_line("evicted %llu objects: %s tier from %llu%% to %llu%% (watermarks %u%%/%u%%)",
				 static_cast<unsigned long long>(done), tier_name(type),
				 static_cast<unsigned long long>(before * 100 / size),
				 static_cast<unsigned long long>(used * 100 / size),
				 opts_.high_watermark_pct, opts_.low_watermark_pct);
	}
}

void Leader::delete_slow_copies()
{
	std::vector<std::pair<std::string, uint64_t>> keys;
	{
		std::lock_guard<std::mutex> g(mu_);
		uint64_t durable = journal_->durable();
		// only once the eviction is durable: a failover must not find
		// the object without its copy
		auto mid = std::stable_partition(slow_dels_.begin(), slow_dels_.end(),
						 [durable](const auto &kv) { return kv.second <= durable; });
		keys.assign(slow_dels_.begin(), mid);
		slow_dels_.erase(slow_dels_.begin(), mid);
	}
	for (const auto &[key, seq] : keys) {
		auto fl = flush_lock(key);
		std::lock_guard<std::mutex> fg(*fl);
		{
			// flushed again since (a newer version): that copy stays
			std::lock_guard<std::mutex> g(mu_);
			const ObjectState *o = st_.find_object(key);
			if (o && o->flushed_version)
				continue;
		}
		int ret = slow_->del(key);
		if (ret && ret != -ENOENT)
			log_line("slow tier: deleting evicted '%s': %s", key.substr(0, 64).c_str(),
				 strerror(-ret));
	}
}

}  // namespace dsmem::store
