// SPDX-License-Identifier: BSD-2-Clause
// Slope's per-object arena: the heap of one migratable object, kept inside
// the object's own pages so that it moves with the object.  Nothing here
// knows about the kernel: page runs come from a run_source, so the unit
// tests run this very code on ordinary mmap'd memory.
//
// An object owns runs of pages.  Its first run starts with the header
// (arena_header): magic, type tag, root pointer, the run table and the free
// lists.  Pointers in it are plain addresses: the object lives at the same
// virtual addresses on every node.
//
// Allocation has three tiers:
//  - small (up to 2 KiB): size-class slabs of one page each; a slab with a
//    free block is on its class's partial list, so blocks come from pages
//    the object already has before any new page is touched;
//  - medium (up to medium_pages()): whole pages, first fit from the free
//    spans of the object's runs;
//  - large: a run of its own, so that freeing it gives the pages back.
// Small and medium blocks share "small runs", requested in growing sizes
// (16 pages doubling to 1024; 2 MiB units for a huge arena) so that an
// object has few extents.  A small run begins with one descriptor per
// page (page_desc); a run whose pages are all free again is given back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsmem::slope::detail {

inline constexpr uint64_t page_size = 4096;
inline constexpr unsigned page_shift = 12;
inline constexpr uint64_t huge_unit = 2ULL << 20;

inline constexpr uint64_t arena_magic = 0x31504f4c53534455ULL;	// "UDSSLOP1"
inline constexpr uint32_t arena_format = 2;	// 2: sub_pages
inline constexpr uint32_t arena_huge = 0x01;	// DS_SLOPE_HUGE: 2 MiB units

// Small runs: 16 pages doubling to 1024 (huge: one unit doubling to four).
inline constexpr uint64_t first_run = 16 * page_size;
inline constexpr uint64_t max_run = 1024 * page_size;
inline constexpr uint64_t max_huge_run = 4 * huge_unit;
// Beyond these, a block gets a run of its own.
inline constexpr uint32_t medium_pages_max = 64;	// 256 KiB
inline constexpr uint32_t medium_pages_max_huge = 256;	// 1 MiB
// The largest block an arena hands out: a migration moves at most 2^19
// units, so no object could move with more (huge ones aside, 1 TiB).
inline constexpr uint64_t alloc_max = 1ULL << 40;

inline constexpr unsigned nclasses = 24;
inline constexpr uint16_t class_size[nclasses] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
};
inline constexpr uint32_t small_max = 2048;
// Free spans are binned by floor(log2(pages)); the last bin takes the rest.
inline constexpr unsigned nbins = 12;
inline constexpr unsigned inline_runs = 16;

// A byte range of the Slope range, as struct dsmem_slope_extent.
struct extent {
	uint64_t addr;
	uint64_t len;
};

enum page_kind : uint8_t {
	pk_meta = 0,	// header or descriptors (and never-touched: zero)
	pk_free,	// head or tail of a free span
	pk_slab,	// a slab of one size class
	pk_medium,	// head of a medium block
	pk_inner,	// any other page of a medium block
	pk_sub,		// a page handed to the object's sub-allocator
};

// One page of a small run.  Only span heads and tails are kept exact: a
// span's neighbours are found through them (boundary tags).
struct page_desc {
	page_desc *next;	// its class's partial list, or its span bin
	page_desc *prev;
	uint64_t page;		// the page's address (set while it heads a block)
	uint16_t span;		// pages of the span it heads or ends
	uint8_t kind;		// enum page_kind
	uint8_t cls;		// slab: size class
	uint16_t live;		// slab: blocks in use
	uint16_t carved;	// slab: blocks ever handed out; the rest untouched
	uint16_t free_head;	// slab: 1 + offset of the first freed block; 0 none
	uint16_t reserved0;
	uint32_t reserved1;
};
static_assert(sizeof(page_desc) == 40);
// spans count pages in 16 bits: no small run has more
static_assert(max_huge_run / page_size <= UINT16_MAX && max_run / page_size <= UINT16_MAX);

struct run_entry {
	uint64_t addr;
	uint64_t len;
	page_desc *descs;	// small run: one per page; large run: nullptr
	uint64_t used;		// small: pages in use; large: bytes (0: kept empty)
	uint32_t meta_pages;	// small: pages taken by the header and descriptors
	uint32_t reserved;
};

struct arena_header {
	uint64_t magic;
	uint32_t format;
	uint32_t flags;		// arena_huge
	uint64_t self;		// its own address: where the object begins
	uint64_t type_tag;	// the C++ layer's hash of the root's type name
	void *root;
	uint64_t unit;		// run granularity: 4 KiB, or 2 MiB when huge
	uint64_t next_run;	// bytes of the next small run
	run_entry *runs;	// sorted by address
	uint32_t nruns;
	uint32_t runs_cap;
	page_desc *partial[nclasses];	// slabs with a free block
	page_desc *spans[nbins];	// free spans of small runs
	uint64_t live_bytes;	// handed out, rounded to class, page or unit
	uint64_t live_blocks;
	uint64_t slab_pages;
	uint64_t medium_pages;
	uint64_t sub_pages;	// pages the sub-allocator holds (pk_sub)
	run_entry runs_inline[inline_runs];
};

// Where an arena's runs come from and go back to.
class run_source {
public:
	virtual ~run_source() = default;
	// A zero-filled run of len bytes (a multiple of the unit), aligned to
	// the unit.  0, or -errno with ds_slope_errmsg()'s text set.
	virtual int take(uint64_t len, bool huge, uint64_t *addr) = 0;
	// The same, for the object at address object (0: the run is the
	// first of a new object, at the run's address), so that the module
	// can list objects and their pages.
	virtual int take_for(uint64_t object, uint64_t len, bool huge, uint64_t *addr)
	{
		(void)object;
		return take(len, huge, addr);
	}
	// Runs no longer used, whole; how many of them could not be given
	// back (they stay allocated, unused: all the caller can do is count).
	virtual size_t give_back(const extent *runs, size_t n) = 0;
};

// What an arena holds, for ds_slope_obj_describe().
struct arena_usage {
	uint32_t runs;
	uint32_t extents;	// runs, adjacent ones merged
	uint64_t pages;
	uint64_t large_runs;
	uint64_t free_pages;	// in the free spans of small runs
};

// The calling thread's last failure text, as ds_slope_errmsg() gives it:
// fail() sets it and returns err.
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *errmsg();

// The size class for size bytes aligned to align (a power of two), or -1
// when no slab block fits.
int class_for(size_t size, size_t align);

// A process's handle on one arena.  Not thread-safe: the caller locks.
class arena {
public:
	arena(arena_header *h, run_source &src) : h_(h), src_(src) {}
	arena(const arena &) = delete;
	arena &operator=(const arena &) = delete;

	// A new arena in a new run of src; nothing allocated yet.
	static int create(run_source &src, uint32_t flags, uint64_t type_tag,
			  arena_header **h);
	// Why h is not the header of an arena whose runs all lie in [lo, hi)
	// and total pages pages (0: any number), or nullptr when it is.  Reads
	// the header and its run table only.
	static const char *check(const arena_header *h, uint64_t lo, uint64_t hi,
				 uint64_t pages);

	arena_header *header() const { return h_; }
	int allocate(size_t size, size_t align, void **p);
	// -EINVAL, touching nothing, when p is no block of this arena.
	// A pointer into a sub-allocator's page is none: see sub_page().
	int deallocate(void *p);
	// One whole page for a sub-allocator, which carves it as it likes:
	// from the object's free spans first, like any page of the arena.
	int sub_page_take(void **p);
	// -EINVAL, touching nothing, when p is no such page.
	int sub_page_give(void *p);
	// The sub-allocator's page that holds p, or 0.
	uint64_t sub_page(const void *p) const;
	// Every run goes back; the arena is gone (h_ dangles).
	void release();
	// While held, runs that fall empty stay: a migration's extents are
	// fixed.  Letting go gives back those that are empty.
	void hold_runs(bool hold);
	// The runs as a migration passes them: sorted, adjacent ones merged.
	std::vector<extent> extents() const;
	arena_usage usage() const;

private:
	bool huge() const { return h_->flags & arena_huge; }
	uint32_t medium_max() const { return huge() ? medium_pages_max_huge : medium_pages_max; }
	int find_run(uint64_t addr) const;
	run_entry &run_of(const page_desc *d) const;
	int reserve_run_slot();
	void insert_run(const run_entry &r);
	void drop_run(uint32_t i);
	int add_small_run(uint32_t pages);
	page_desc *find_span(uint32_t pages) const;
	int take_span(uint32_t pages, uint8_t kind, page_desc **out);
	void free_span(page_desc *d);
	void link_free(page_desc *d, uint32_t pages);
	void unlink_free(page_desc *d);
	int slab_alloc(unsigned cls, void **p);
	int slab_free(page_desc *d, uint64_t addr);
	int large_alloc(size_t size, size_t align, void **p);

	arena_header *h_;
	run_source &src_;
	bool hold_ = false;
	bool growing_ = false;	// the run table is being moved to a bigger block
};

}  // namespace dsmem::slope::detail
