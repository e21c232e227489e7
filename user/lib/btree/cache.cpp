// SPDX-License-Identifier: BSD-2-Clause
// The compute-side index cache: copies of internal nodes, so a warm
// lookup goes straight to its leaf (one READ).  Entries are hints; the
// node a hint leads to is checked (fences, level, free flag) and a hint
// found stale is dropped (tree.cpp).
#include "tree.hpp"

namespace dsmem::btree {

template <class N>
void index_cache<N>::configure(uint64_t limit, uint32_t node_size)
{
	std::unique_lock g(m_);
	limit_ = limit;
	node_size_ = node_size;
}

template <class N>
uint64_t index_cache<N>::entries() const
{
	std::shared_lock g(m_);
	uint64_t n = 0;

	for (const auto &l : levels_)
		n += l.size();
	return n;
}

template <class N>
bool index_cache<N>::lookup(key k, unsigned min_level, hit *h)
{
	std::shared_lock g(m_);

	for (unsigned level = std::max(min_level, 1u); level < height_max; level++) {
		const level_map &l = levels_[level];
		auto it = l.upper_bound(k);

		if (it == l.begin())
			continue;
		--it;
		N n(it->second->img.get(), node_size_);
		if (!n.covers(k))
			continue;
		it->second->referenced.store(true, std::memory_order_relaxed);
		h->child = n.child_for(k);
		h->from = it->second->addr;
		h->level = level;
		return true;
	}
	return false;
}

template <class N>
void index_cache<N>::insert(const N &n, uint64_t addr)
{
	const node_header &hd = n.hdr();
	unsigned level = hd.level;

	if (!level || level >= height_max || (hd.flags & node_free) || !limit_)
		return;
	const owned low = (hd.flags & node_low_inf) ? kind<N>::own(kind<N>::lowest()) : n.low();
	const owned high = (hd.flags & node_high_inf) ? owned() : n.high();
	const typename kind<N>::less less;
	auto it_new = std::make_unique<item>();
	it_new->addr = addr;
	it_new->img.reset(new uint8_t[node_size_]);
	std::memcpy(it_new->img.get(), n.data(), node_size_);

	std::unique_lock g(m_);
	level_map &l = levels_[level];
	// drop what the new image overlaps: older views of its range
	auto it = l.lower_bound(low);
	if (it != l.begin()) {
		auto prev = std::prev(it);
		N pn(prev->second->img.get(), node_size_);
		if ((pn.hdr().flags & node_high_inf) || less(low, pn.high())) {
			l.erase(prev);
			bytes_.fetch_sub(node_size_, std::memory_order_relaxed);
		}
	}
	while (it != l.end() && ((hd.flags & node_high_inf) || less(it->first, high))) {
		it = l.erase(it);
		bytes_.fetch_sub(node_size_, std::memory_order_relaxed);
	}
	l.emplace(low, std::move(it_new));
	fifo_.emplace_back(level, low);
	bytes_.fetch_add(node_size_, std::memory_order_relaxed);
	evict_locked();
}

template <class N>
void index_cache<N>::evict_locked()
{
	// second chance: a referenced entry goes round once more
	size_t budget = fifo_.size() * 2;

	while (bytes_.load(std::memory_order_relaxed) > limit_ && !fifo_.empty() && budget--) {
		auto [level, low] = fifo_.front();
		fifo_.pop_front();
		auto it = levels_[level].find(low);
		if (it == levels_[level].end())
			continue;	// replaced or dropped since
		if (it->second->referenced.exchange(false, std::memory_order_relaxed)) {
			fifo_.emplace_back(level, low);
			continue;
		}
		levels_[level].erase(it);
		bytes_.fetch_sub(node_size_, std::memory_order_relaxed);
	}
	// the queue holds stale keys too; keep it from growing without end
	if (fifo_.size() > 4 * (limit_ / node_size_ + 16)) {
		std::deque<std::pair<unsigned, owned>> live;
		for (auto &[level, low] : fifo_)
			if (levels_[level].count(low))
				live.emplace_back(level, low);
		fifo_.swap(live);
	}
}

template <class N>
void index_cache<N>::invalidate(unsigned level, uint64_t addr)
{
	std::unique_lock g(m_);

	if (level >= height_max)
		return;
	level_map &l = levels_[level];
	for (auto it = l.begin(); it != l.end(); ++it) {
		if (it->second->addr == addr) {
			l.erase(it);
			bytes_.fetch_sub(node_size_, std::memory_order_relaxed);
			return;
		}
	}
}

template class index_cache<node_view>;
template class index_cache<vnode_view>;

}  // namespace dsmem::btree
