// SPDX-License-Identifier: BSD-2-Clause
// Offsets inside one segment: best fit with coalescing, 16 KiB units.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace dsmem::store {

inline constexpr uint64_t kAllocUnit = 16 * 1024;	// the 16 KiB minimum

// Free extents are kept twice: by offset (to find neighbours to coalesce
// with) and by (length, offset) (to find the best fit); both O(log n).
class OffsetAllocator {	// not thread-safe; the master locks
public:
	explicit OffsetAllocator(uint64_t size);	// size rounded down to kAllocUnit
	static uint64_t round(uint64_t len);		// up to kAllocUnit
	std::optional<uint64_t> allocate(uint64_t len);	// best fit; nullopt: no room
	bool reserve(uint64_t off, uint64_t len);	// exact range (rebuild); false if taken/out of range
	void release(uint64_t off, uint64_t len);	// len as given to allocate/reserve
	uint64_t size() const { return size_; }
	uint64_t used() const { return used_; }
	uint64_t largest_free() const;
	size_t free_extents() const { return by_off_.size(); }

private:
	void add_free(uint64_t off, uint64_t len);
	void del_free(std::map<uint64_t, uint64_t>::iterator it);

	uint64_t size_;
	uint64_t used_ = 0;
	std::map<uint64_t, uint64_t> by_off_;		// offset -> length
	std::set<std::pair<uint64_t, uint64_t>> by_len_;	// (length, offset)
};

}  // namespace dsmem::store
