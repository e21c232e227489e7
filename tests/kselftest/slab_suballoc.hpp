// SPDX-License-Identifier: BSD-2-Clause
// A slab allocator of an application's own, as a Slope sub-allocator
// (slope::SubAllocator): for the unit tests and slope_worker.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include <dsmem/slope.hpp>

namespace dsmem_test {

namespace slope = dsmem::slope;

// A slab allocator of the application's: one size class per page, a free
// list per class threaded through the free blocks, and a small page
// header naming the class.  Every byte of its state is in the object.
class slab {
public:
	static constexpr std::size_t classes[] = {16, 32, 64, 128, 256};
	static constexpr unsigned nclasses = std::size(classes);
	static constexpr std::size_t max = 256;

	void *allocate(slope::pages &pg, std::size_t n, std::size_t align)
	{
		if (n > max || align > 16)
			return nullptr;	// Slope's allocator takes it
		unsigned c = 0;
		while (classes[c] < n)
			c++;
		if (!free_[c]) {
			auto *page = static_cast<page_head *>(pg.take());
			page->cls = c;
			page->live = 0;
			pages_++;
			// the first block holds the header; the rest are free
			for (std::size_t off = hdr(c); off + classes[c] <= slope::pages::page_size;
			     off += classes[c])
				push(c, reinterpret_cast<char *>(page) + off);
		}
		void *b = free_[c];
		free_[c] = *static_cast<void **>(b);
		head_of(b)->live++;
		blocks_++;
		return b;
	}

	void deallocate(slope::pages &pg, void *p) noexcept
	{
		page_head *h = head_of(p);
		push(h->cls, p);
		blocks_--;
		if (--h->live)
			return;
		// the page is empty: unthread its blocks and give it back
		for (void **q = &free_[h->cls]; *q;)
			if (head_of(*q) == h)
				*q = *static_cast<void **>(*q);
			else
				q = static_cast<void **>(*q);
		pages_--;
		pg.give(h);
	}

	uint64_t pages_held() const { return pages_; }
	uint64_t blocks() const { return blocks_; }

private:
	struct page_head {
		uint32_t cls;
		uint32_t live;
	};

	static std::size_t hdr(unsigned c) { return std::max(classes[c], sizeof(page_head)); }
	static page_head *head_of(void *p)
	{
		return reinterpret_cast<page_head *>(reinterpret_cast<uintptr_t>(p) &
						     ~(slope::pages::page_size - 1));
	}
	void push(unsigned c, void *b)
	{
		*static_cast<void **>(b) = free_[c];
		free_[c] = b;
	}

	void *free_[nclasses] = {};
	uint64_t pages_ = 0;
	uint64_t blocks_ = 0;
};
static_assert(slope::SubAllocator<slab>);

}  // namespace dsmem_test
