// SPDX-License-Identifier: BSD-2-Clause
// Best-fit offset allocator: the smallest free extent that fits, its low
// end handed out, the rest left free; a released extent merges with free
// neighbours so fragmentation only lasts as long as the holes between
// live allocations.
#include "alloc.hpp"

#include <iterator>

namespace dsmem::store {

OffsetAllocator::OffsetAllocator(uint64_t size) : size_(size / kAllocUnit * kAllocUnit)
{
	if (size_)
		add_free(0, size_);
}

uint64_t OffsetAllocator::round(uint64_t len)
{
	if (len == 0)
		return kAllocUnit;
	if (len > UINT64_MAX - (kAllocUnit - 1))
		return UINT64_MAX / kAllocUnit * kAllocUnit;	// never fits; no wrap to 0
	return (len + kAllocUnit - 1) / kAllocUnit * kAllocUnit;
}

void OffsetAllocator::add_free(uint64_t off, uint64_t len)
{
	by_off_.emplace(off, len);
	by_len_.emplace(len, off);
}

void OffsetAllocator::del_free(std::map<uint64_t, uint64_t>::iterator it)
{
	by_len_.erase({ it->second, it->first });
	by_off_.erase(it);
}

std::optional<uint64_t> OffsetAllocator::allocate(uint64_t len)
{
	uint64_t need = round(len);
	auto fit = by_len_.lower_bound({ need, 0 });

	if (fit == by_len_.end())
		return std::nullopt;
	uint64_t ext_len = fit->first, off = fit->second;
	del_free(by_off_.find(off));
	if (ext_len > need)
		add_free(off + need, ext_len - need);
	used_ += need;
	return off;
}

bool OffsetAllocator::reserve(uint64_t off, uint64_t len)
{
	uint64_t need = round(len);

	if (off % kAllocUnit || off >= size_ || need > size_ - off)
		return false;
	// the free extent starting at or before off must cover [off, off+need)
	auto it = by_off_.upper_bound(off);
	if (it == by_off_.begin())
		return false;
	--it;
	uint64_t ext_off = it->first, ext_len = it->second;
	if (ext_off + ext_len < off + need)
		return false;
	del_free(it);
	if (off > ext_off)
		add_free(ext_off, off - ext_off);
	if (ext_off + ext_len > off + need)
		add_free(off + need, ext_off + ext_len - off - need);
	used_ += need;
	return true;
}

void OffsetAllocator::release(uint64_t off, uint64_t len)
{
	uint64_t need = round(len);

	if (off % kAllocUnit || off >= size_ || need > size_ - off)
		return;	// not ours: a caller bug; ignoring it beats corrupting the maps
	uint64_t start = off, end = off + need;
	auto next = by_off_.lower_bound(off);
	// a double release (overlap with a free extent) is ignored for the same reason
	if (next != by_off_.end() && next->first < end)
		return;
	if (next != by_off_.begin()) {
		auto prev = std::prev(next);
		if (prev->first + prev->second > start)
			return;
		if (prev->first + prev->second == start) {
			start = prev->first;
			del_free(prev);
		}
	}
	if (next != by_off_.end() && next->first == end) {
		end += next->second;
		del_free(next);
	}
	add_free(start, end - start);
	used_ -= need;
}

uint64_t OffsetAllocator::largest_free() const
{
	return by_len_.empty() ? 0 : by_len_.rbegin()->first;
}

}  // namespace dsmem::store
