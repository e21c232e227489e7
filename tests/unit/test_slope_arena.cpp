// SPDX-License-Identifier: BSD-2-Clause
// Slope's arenas without a module (user/lib/slope/): the very arena code,
// its runs taken from ordinary mmap'd memory.  Size classes, reuse of
// partly filled pages, medium and large blocks, run growth, runs given
// back when empty, the run table growing into the arena, header checks;
// then the space over the same memory (open_space()): allocation
// contexts, the inverse map, batched frees, the C++ Allocator under the
// standard containers, mig_ptr, the refusals of migrate, and an arrival
// played on the same pages (the source forgets them, the destination
// adopts them from the header).
#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include <dsmem/slope.hpp>

#include "slope/arena.hpp"
#include "slope/space.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::slope::detail;
namespace slope = dsmem::slope;

namespace {

#include "slope_plain_source.hpp"

uint64_t addr_of(const void *p)
{
	return reinterpret_cast<uint64_t>(p);
}

bool contains(const std::string &s, const char *part)
{
	return s.find(part) != std::string::npos;
}

// ---- the arena alone ----

void test_size_classes(void **)
{
	assert_int_equal(class_for(0, 1), 0);
	assert_int_equal(class_for(1, 1), 0);
	assert_int_equal(class_for(16, 16), 0);
	assert_int_equal(class_for(17, 8), 1);
	assert_int_equal(class_for(100, 8), 6);		// 112
	assert_int_equal(class_for(2048, 16), nclasses - 1);
	assert_int_equal(class_for(2049, 8), -1);
	assert_int_equal(class_for(48, 32), 3);		// 64: 48 is not 32-aligned
	assert_int_equal(class_for(130, 64), 9);	// 192
	assert_int_equal(class_for(8, 4096), -1);
	for (unsigned c = 0; c < nclasses; c++) {
		assert_int_equal(class_size[c] % 16, 0);
		assert_int_equal(class_for(class_size[c], 16), static_cast<int>(c));
	}

	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 7, &h), 0);
	arena a(h, src);
	for (unsigned c = 0; c < nclasses; c++) {
		const unsigned per_page = page_size / class_size[c];
		std::set<uint64_t> pages;
		std::vector<void *> blocks;
		for (unsigned i = 0; i < per_page; i++) {
			void *p;
			assert_int_equal(a.allocate(class_size[c], 16, &p), 0);
			assert_int_equal(addr_of(p) % 16, 0);
			pages.insert(addr_of(p) & ~(page_size - 1));
			blocks.push_back(p);
		}
		// a page holds exactly per_page blocks of the class, apart
		assert_int_equal(pages.size(), 1);
		std::sort(blocks.begin(), blocks.end());
		for (size_t i = 1; i < blocks.size(); i++)
			assert_true(addr_of(blocks[i]) - addr_of(blocks[i - 1]) >= class_size[c]);
		void *next;
		assert_int_equal(a.allocate(class_size[c], 16, &next), 0);
		assert_false(pages.count(addr_of(next) & ~(page_size - 1)));
	}
	// aligned blocks: a class that is a multiple of the alignment
	for (size_t align : {32, 64, 128, 256, 1024, 2048}) {
		void *p;
		assert_int_equal(a.allocate(24, align, &p), 0);
		assert_int_equal(addr_of(p) % align, 0);
	}
	void *p;
	assert_int_equal(a.allocate(24, 4096, &p), 0);	// a page
	assert_int_equal(addr_of(p) % 4096, 0);
	assert_int_equal(a.allocate(8, 3, &p), -EINVAL);
	assert_true(contains(errmsg(), "power of two"));
	a.release();
	assert_true(src.live.empty());
}

void test_reuse_partial_pages(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 0, &h), 0);
	arena a(h, src);

	// the header run: 16 pages, the first holds header and descriptors
	assert_int_equal(src.taken.size(), 1);
	assert_int_equal(src.taken[0], 16 * page_size);
	const uint64_t data_pages = 15;

	// fill its pages with 64-byte blocks: no new run until they are full
	std::vector<void *> blocks;
	for (uint64_t i = 0; i < data_pages * (page_size / 64); i++) {
		void *p;
		assert_int_equal(a.allocate(64, 8, &p), 0);
		blocks.push_back(p);
	}
	assert_int_equal(src.taken.size(), 1);
	assert_int_equal(h->slab_pages, data_pages);

	// a freed block is the next one handed out, in its own page
	void *freed = blocks[70];
	assert_int_equal(a.deallocate(freed), 0);
	void *again;
	assert_int_equal(a.allocate(50, 8, &again), 0);
	assert_ptr_equal(again, freed);

	// another class takes a page of its own; with none free, a new run,
	// twice the size
	void *other;
	assert_int_equal(a.allocate(200, 8, &other), 0);
	assert_int_equal(src.taken.size(), 2);
	assert_int_equal(src.taken[1], 32 * page_size);

	// a partly filled page of the class is used before a fresh one
	assert_int_equal(a.deallocate(blocks[5]), 0);
	assert_int_equal(a.deallocate(blocks[900]), 0);
	const uint64_t slabs = h->slab_pages;
	for (int i = 0; i < 2; i++) {
		void *p;
		assert_int_equal(a.allocate(64, 8, &p), 0);
		assert_true(p == blocks[5] || p == blocks[900]);
	}
	assert_int_equal(h->slab_pages, slabs);

	// emptying a slab page returns the page to the run's free spans
	const uint64_t free_before = a.usage().free_pages;
	for (unsigned i = 64; i < 128; i++)	// the second page, all of it
		assert_int_equal(a.deallocate(blocks[i]), 0);
	assert_int_equal(h->slab_pages, slabs - 1);
	assert_int_equal(a.usage().free_pages, free_before + 1);
	assert_int_equal(h->live_blocks, blocks.size() - 64 + 1);
	a.release();
	assert_true(src.live.empty());
}

void test_run_growth(void **)
{
	for (uint32_t flags : {0u, arena_huge}) {
		plain_source src;
		arena_header *h;
		assert_int_equal(arena::create(src, flags, 0, &h), 0);
		arena a(h, src);
		const uint64_t block = 2048;

		// 24 MiB of small blocks
		for (uint64_t i = 0; i < (24ULL << 20) / block; i++) {
			void *p;
			assert_int_equal(a.allocate(block, 8, &p), 0);
		}
		// doubling from the first run up to the largest, then the largest
		std::vector<uint64_t> want;
		const uint64_t last = flags ? max_huge_run : max_run;
		for (uint64_t len = flags ? huge_unit : first_run; len < last; len *= 2)
			want.push_back(len);
		assert_true(src.taken.size() > want.size());
		want.resize(src.taken.size(), last);
		for (size_t i = 0; i < src.taken.size(); i++)
			assert_int_equal(src.taken[i], want[i]);
		for (const auto &[addr, len] : src.live)
			assert_int_equal(addr % h->unit, 0);
		assert_int_equal(a.usage().runs, src.taken.size());
		a.release();
		assert_true(src.live.empty());
	}
}

void test_medium_blocks(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 0, &h), 0);
	arena a(h, src);
	const uint64_t free0 = a.usage().free_pages;

	void *b[3];
	for (auto &p : b) {
		assert_int_equal(a.allocate(5000, 8, &p), 0);	// two pages each
		assert_int_equal(addr_of(p) % page_size, 0);
	}
	assert_int_equal(h->medium_pages, 6);
	assert_int_equal(a.usage().free_pages, free0 - 6);
	assert_int_equal(addr_of(b[1]) - addr_of(b[0]), 2 * page_size);
	std::memset(b[1], 0x5a, 8192);

	// the middle one, then its neighbours: the spans merge back whole
	assert_int_equal(a.deallocate(b[1]), 0);
	void *fit;
	assert_int_equal(a.allocate(8192, 8, &fit), 0);	// the hole fits it
	assert_ptr_equal(fit, b[1]);
	assert_int_equal(a.deallocate(fit), 0);
	assert_int_equal(a.deallocate(b[0]), 0);
	assert_int_equal(a.deallocate(b[2]), 0);
	assert_int_equal(a.usage().free_pages, free0);
	void *whole;
	assert_int_equal(a.allocate(free0 * page_size, 8, &whole), 0);
	assert_int_equal(src.taken.size(), 1);	// the header run took it
	assert_int_equal(a.deallocate(whole), 0);

	// the largest medium block, and one page more: a run of its own
	void *m;
	assert_int_equal(a.allocate(medium_pages_max * page_size, 8, &m), 0);
	assert_int_equal(a.usage().large_runs, 0);
	void *l;
	assert_int_equal(a.allocate(medium_pages_max * page_size + 1, 8, &l), 0);
	assert_int_equal(a.usage().large_runs, 1);
	a.release();
}

void test_large_blocks(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 0, &h), 0);
	arena a(h, src);

	void *p;
	assert_int_equal(a.allocate(300 << 10, 8, &p), 0);
	assert_int_equal(src.taken.size(), 2);
	assert_int_equal(src.taken[1], 300 << 10);	// whole pages: exactly
	assert_true(src.live.count(addr_of(p)));	// the block is the run
	std::memset(p, 1, 300 << 10);
	assert_int_equal(h->live_bytes, 300 << 10);
	assert_int_equal(a.deallocate(p), 0);		// given back at once
	assert_int_equal(src.given, 1);
	assert_false(src.live.count(addr_of(p)));
	assert_int_equal(h->live_bytes, 0);
	assert_int_equal(a.usage().runs, 1);

	// alignment up to the unit only
	assert_int_equal(a.allocate(1 << 20, 8192, &p), -EINVAL);
	assert_true(contains(errmsg(), "unit"));
	// beyond what any object can hold
	assert_int_equal(a.allocate(alloc_max + 1, 8, &p), -ENOMEM);
	// the source's failure is the allocation's
	src.refuse = true;
	assert_int_equal(a.allocate(1 << 20, 8, &p), -ENOMEM);
	assert_true(contains(errmsg(), "plain_source"));
	src.refuse = false;
	a.release();

	// a huge arena: 2 MiB units, aligned, and blocks aligned up to them
	plain_source hsrc;
	assert_int_equal(arena::create(hsrc, arena_huge, 0, &h), 0);
	arena ha(h, hsrc);
	assert_int_equal(h->unit, huge_unit);
	assert_int_equal(ha.allocate(3 << 20, 1 << 20, &p), 0);
	assert_int_equal(addr_of(p) % huge_unit, 0);
	assert_int_equal(hsrc.taken.back(), 4 << 20);
	for (const extent &e : ha.extents())
		assert_int_equal(e.addr % huge_unit + e.len % huge_unit, 0);
	ha.release();
	assert_true(hsrc.live.empty());
}

void test_runs_given_back(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 0, &h), 0);
	arena a(h, src);
	std::vector<void *> blocks;

	// five small runs' worth
	while (src.taken.size() < 5) {
		void *p;
		assert_int_equal(a.allocate(1000, 8, &p), 0);
		blocks.push_back(p);
	}
	assert_int_equal(src.given, 0);
	for (void *p : blocks)
		assert_int_equal(a.deallocate(p), 0);
	// all runs but the header's are empty: given back, one kept spare
	assert_int_equal(src.given, 3);
	assert_int_equal(src.live.size(), 2);
	assert_true(src.live.count(h->self));
	assert_int_equal(h->live_blocks, 0);
	assert_int_equal(h->slab_pages, 0);

	// the spare serves the next run's worth without a new one
	const size_t taken = src.taken.size();
	blocks.clear();
	while (a.usage().free_pages > 0) {
		void *p;
		assert_int_equal(a.allocate(4096, 8, &p), 0);
		blocks.push_back(p);
	}
	assert_int_equal(src.taken.size(), taken);

	// held runs stay, empty, until let go (a migration's extents)
	a.hold_runs(true);
	for (void *p : blocks)
		assert_int_equal(a.deallocate(p), 0);
	void *l;
	assert_int_equal(a.allocate(1 << 20, 8, &l), 0);
	assert_int_equal(a.deallocate(l), 0);
	assert_int_equal(src.live.size(), 3);
	a.hold_runs(false);
	assert_int_equal(src.live.size(), 2);	// the large run went
	a.release();
	assert_true(src.live.empty());
}

void test_run_table_growth(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 0, &h), 0);
	arena a(h, src);
	std::vector<void *> blocks;

	// large blocks, a run each: far more than the header's table holds
	for (int i = 0; i < 200; i++) {
		void *p;
		assert_int_equal(a.allocate((medium_pages_max + 1) * page_size, 8, &p), 0);
		blocks.push_back(p);
	}
	assert_true(h->runs != h->runs_inline);
	assert_true(h->runs_cap >= h->nruns + 1);
	assert_int_equal(a.usage().large_runs, 200);
	// the table is a block of the arena: a run of it holds it
	h->root = blocks[0];
	const char *why = arena::check(h, 0, UINT64_MAX, 0);
	assert_string_equal(why ? why : "", "");
	for (size_t i = 1; i < h->nruns; i++)
		assert_true(h->runs[i - 1].addr < h->runs[i].addr);
	for (void *p : blocks)
		assert_int_equal(a.deallocate(p), 0);
	assert_int_equal(a.usage().large_runs, 0);
	a.release();
	assert_true(src.live.empty());
}

void test_header_check(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 42, &h), 0);
	arena a(h, src);
	void *p;
	assert_int_equal(a.allocate(100 << 10, 8, &p), 0);
	h->root = p;
	assert_int_equal(a.allocate(1 << 20, 8, &p), 0);

	const uint64_t pages = a.usage().pages;
	assert_null(arena::check(h, 0, UINT64_MAX, 0));
	assert_null(arena::check(h, 0, UINT64_MAX, pages));
	assert_true(contains(arena::check(h, 0, UINT64_MAX, pages + 1), "add up"));
	// runs must lie in the range given (the Slope range, for real)
	assert_non_null(arena::check(h, 0, h->self, 0));

	h->magic ^= 1;
	assert_true(contains(arena::check(h, 0, UINT64_MAX, 0), "bad magic"));
	h->magic ^= 1;
	h->self += page_size;
	assert_non_null(arena::check(h, 0, UINT64_MAX, 0));
	h->self -= page_size;
	void *root = h->root;
	h->root = &src;		// not in the object
	assert_true(contains(arena::check(h, 0, UINT64_MAX, 0), "root"));
	h->root = root;
	std::swap(h->runs[0], h->runs[1]);
	assert_true(contains(arena::check(h, 0, UINT64_MAX, 0), "order"));
	std::swap(h->runs[0], h->runs[1]);
	assert_null(arena::check(h, 0, UINT64_MAX, 0));

	// what a migration passes: sorted, disjoint, adjacent runs merged
	std::vector<extent> ext = a.extents();
	uint64_t total = 0;
	for (size_t i = 0; i < ext.size(); i++) {
		total += ext[i].len;
		if (i)
			assert_true(ext[i - 1].addr + ext[i - 1].len < ext[i].addr);
	}
	assert_int_equal(total >> page_shift, pages);
	a.release();
}

void test_bad_frees(void **)
{
	plain_source src;
	arena_header *h;
	assert_int_equal(arena::create(src, 0, 0, &h), 0);
	arena a(h, src);
	void *s, *m;
	int local;

	assert_int_equal(a.allocate(64, 8, &s), 0);
	assert_int_equal(a.allocate(3 * page_size, 8, &m), 0);
	assert_int_equal(a.deallocate(&local), -EINVAL);	// not in it
	assert_true(contains(errmsg(), "not in this object"));
	assert_int_equal(a.deallocate(static_cast<char *>(s) + 8), -EINVAL);
	assert_int_equal(a.deallocate(static_cast<char *>(s) + 64), -EINVAL);	// never handed out
	assert_int_equal(a.deallocate(static_cast<char *>(m) + page_size), -EINVAL);
	assert_int_equal(a.deallocate(h), -EINVAL);		// the header page
	assert_int_equal(a.deallocate(m), 0);
	assert_int_equal(a.deallocate(m), -EINVAL);		// twice
	assert_int_equal(h->live_blocks, 1);
	assert_int_equal(a.deallocate(s), 0);
	a.release();
}

// ---- the space over plain memory ----

ds_slope *space_of(void **state)
{
	return static_cast<ds_slope *>(*state);
}

void test_open_once(void **state)
{
	ds_slope *sp;
	assert_ptr_equal(ds_slope_get(), space_of(state));
	assert_int_equal(open_space(std::make_unique<plain_source>(), &sp), -EBUSY);
	assert_int_equal(ds_slope_open(1, &sp), -EBUSY);
	assert_true(contains(ds_slope_errmsg(), "already"));
}

void test_no_context(void **)
{
	void *p = nullptr;

	assert_int_equal(ds_slope_alloc(16, 8, &p), -ENOENT);
	assert_true(contains(ds_slope_errmsg(), "no allocation context"));
	assert_null(p);

	slope::Allocator<int> alloc;
	bool caught = false;
	try {
		(void)alloc.allocate(4);
	} catch (const slope::no_context &e) {
		caught = e.code() == -ENOENT && contains(e.what(), "no allocation context");
	}
	assert_true(caught);
	// and as the standard's allocation failure
	caught = false;
	try {
		slope::vector<int> v(10);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	assert_true(caught);
}

void test_contexts_and_inverse_map(void **state)
{
	ds_slope *sp = space_of(state);
	ds_slope_obj *a, *b, *found;
	void *pa, *pb, *pa2;

	assert_int_equal(ds_slope_obj_create(sp, 100, 8, 0, 1, &a), 0);
	assert_int_equal(ds_slope_obj_create(sp, 100, 8, 0, 2, &b), 0);
	assert_int_equal(ds_slope_obj_lookup(ds_slope_obj_root(a), &found), 0);
	assert_ptr_equal(found, a);

	// nested: the innermost context takes the allocations
	assert_int_equal(ds_slope_ctx_push(a), 0);
	assert_int_equal(ds_slope_alloc(40, 8, &pa), 0);
	assert_int_equal(ds_slope_ctx_push(b), 0);
	assert_int_equal(ds_slope_alloc(40, 8, &pb), 0);
	assert_int_equal(ds_slope_ctx_pop(a), -EINVAL);	// out of order
	assert_int_equal(ds_slope_ctx_pop(b), 0);
	assert_int_equal(ds_slope_alloc(1 << 20, 8, &pa2), 0);	// a large one
	assert_int_equal(ds_slope_obj_destroy(a), -EBUSY);	// its context is open
	assert_int_equal(ds_slope_ctx_pop(a), 0);

	assert_int_equal(ds_slope_obj_lookup(pa, &found), 0);
	assert_ptr_equal(found, a);
	assert_int_equal(ds_slope_obj_lookup(pb, &found), 0);
	assert_ptr_equal(found, b);
	assert_int_equal(ds_slope_obj_lookup(static_cast<char *>(pa2) + 4096, &found), 0);
	assert_ptr_equal(found, a);

	// freeing needs no context: the inverse map finds the object
	ds_slope_obj_info ia;
	assert_int_equal(ds_slope_obj_describe(a, &ia), 0);
	assert_int_equal(ia.live_blocks, 3);
	assert_int_equal(ds_slope_free(pa2), 0);
	assert_int_equal(ds_slope_free(pa), 0);
	assert_int_equal(ds_slope_obj_describe(a, &ia), 0);
	assert_int_equal(ia.live_blocks, 1);	// the root
	assert_int_equal(ds_slope_obj_lookup(pa2, &found), -ENOENT);
	int local;
	assert_int_equal(ds_slope_free(&local), -EINVAL);
	assert_true(contains(ds_slope_errmsg(), "no Slope object"));
	assert_int_equal(ds_slope_free(nullptr), 0);

	// destroyed: none of its pages is in the map, and all are given back
	const uint64_t header = ia.header;
	assert_int_equal(ds_slope_obj_destroy(a), 0);
	assert_int_equal(ds_slope_obj_lookup(reinterpret_cast<void *>(header), &found), -ENOENT);
	assert_int_equal(ds_slope_obj_lookup(pb, &found), 0);
	assert_int_equal(ds_slope_free(pb), 0);
	assert_int_equal(ds_slope_obj_destroy(b), 0);
	assert_true(backing->live.empty());

	ds_slope_info info;
	assert_int_equal(ds_slope_describe(sp, &info), 0);
	assert_int_equal(info.objects, 0);
	assert_int_equal(info.pending_runs, 0);
	assert_int_equal(info.runs_given, info.runs_taken);
	assert_int_equal(info.bytes_given, info.bytes_taken);
}

void test_batched_frees(void **state)
{
	ds_slope *sp = space_of(state);
	ds_slope_obj *o;
	std::vector<void *> blocks;

	assert_int_equal(ds_slope_obj_create(sp, 8, 8, 0, 0, &o), 0);
	assert_int_equal(ds_slope_ctx_push(o), 0);
	for (int i = 0; i < 100; i++) {
		void *p;
		assert_int_equal(ds_slope_alloc((medium_pages_max + 1) * page_size, 8, &p), 0);
		blocks.push_back(p);
	}
	assert_int_equal(ds_slope_ctx_pop(o), 0);
	const size_t batches = backing->batches;
	for (void *p : blocks)
		assert_int_equal(ds_slope_free(p), 0);

	// 100 runs given back: a batch of 64, and 36 waiting for the next
	ds_slope_info info;
	assert_int_equal(ds_slope_describe(sp, &info), 0);
	assert_int_equal(backing->batches, batches + 1);
	assert_int_equal(info.pending_runs, 36);
	assert_int_equal(backing->live.size(), 1 + 36);
	// destroying the object sends the rest
	assert_int_equal(ds_slope_obj_destroy(o), 0);
	assert_int_equal(ds_slope_describe(sp, &info), 0);
	assert_int_equal(info.pending_runs, 0);
	assert_true(backing->live.empty());
}

struct tables {
	slope::vector<int> v;
	slope::map<int, slope::string> m;
	slope::unordered_map<uint64_t, uint64_t> u;
	slope::string s;

	explicit tables(const char *name) : s(name) {}
};

// Every byte of the object's containers is the object's.
void owned_by(ds_slope_obj *obj, const void *p)
{
	ds_slope_obj *found = nullptr;
	assert_int_equal(ds_slope_obj_lookup(p, &found), 0);
	assert_ptr_equal(found, obj);
}

void fill(tables &t, int n)
{
	for (int i = 0; i < n; i++) {
		t.v.push_back(i * 3);
		t.m.emplace(i, slope::string(static_cast<size_t>(i % 40 + 1), static_cast<char>('a' + i % 26)));
		t.u[static_cast<uint64_t>(i) * 7919] = static_cast<uint64_t>(i);
	}
}

void check_tables(ds_slope_obj *obj, const tables &t, int n)
{
	assert_int_equal(t.v.size(), n);
	assert_int_equal(t.m.size(), n);
	assert_int_equal(t.u.size(), n);
	owned_by(obj, &t);
	owned_by(obj, t.v.data());
	owned_by(obj, t.s.data());
	for (int i = 0; i < n; i++) {
		assert_int_equal(t.v[static_cast<size_t>(i)], i * 3);
		auto it = t.m.find(i);
		assert_true(it != t.m.end());
		assert_int_equal(it->second.size(), i % 40 + 1);
		owned_by(obj, &*it);
		if (it->second.size() > 15)	// not in the string itself
			owned_by(obj, it->second.data());
		auto u = t.u.find(static_cast<uint64_t>(i) * 7919);
		assert_true(u != t.u.end());
		assert_int_equal(u->second, i);
		owned_by(obj, &*u);
	}
}

void test_containers(void **state)
{
	ds_slope *sp = space_of(state);
	const int n = 20000;
	const char *name = "a name longer than the small-string buffer";

	for (bool huge : {false, true}) {
		auto made = slope::mig_ptr<tables>::make(name, slope::options{huge});
		assert_true(made.ok());
		slope::mig_ptr<tables> t = std::move(made.value());
		assert_true(static_cast<bool>(t));
		assert_string_equal(t->s.c_str(), name);	// built under the init context
		{
			auto ctx = t.create_context();
			fill(*t, n);
			// copies and moves inside the object
			slope::vector<int> copy = t->v;
			t->v = std::move(copy);
			t->s += " and then some";
		}
		check_tables(t.handle(), *t, n);

		ds_slope_obj_info info;
		assert_int_equal(ds_slope_obj_describe(t.handle(), &info), 0);
		assert_int_equal(info.type_tag, slope::type_tag<tables>());
		assert_int_equal(info.flags, huge ? DS_SLOPE_HUGE : 0);
		assert_int_equal(info.root, addr_of(t.get()));
		assert_true(info.pages > 0 && info.extents <= info.runs);
		if (huge)
			assert_int_equal(info.pages % 512, 0);

		// erasing frees into the object with no context open
		for (int i = 0; i < n; i += 2) {
			t->m.erase(i);
			t->u.erase(static_cast<uint64_t>(i) * 7919);
		}
		t->v.clear();
		t->v.shrink_to_fit();
		ds_slope_obj_info after;
		assert_int_equal(ds_slope_obj_describe(t.handle(), &after), 0);
		assert_true(after.live_blocks < info.live_blocks);
		assert_true(after.live_bytes < info.live_bytes);

		// allocating outside a context throws; the object is untouched
		bool caught = false;
		try {
			t->v.push_back(1);
		} catch (const slope::no_context &) {
			caught = true;
		}
		assert_true(caught);
		assert_true(t->v.empty());

		t.reset();
		assert_false(static_cast<bool>(t));
		ds_slope_info si;
		assert_int_equal(ds_slope_describe(sp, &si), 0);
		assert_int_equal(si.objects, 0);
		assert_true(backing->live.empty());
	}
}

struct throws_in_ctor {
	slope::vector<int> v;
	explicit throws_in_ctor(int n) : v(static_cast<size_t>(n))
	{
		throw std::runtime_error("no");
	}
};

void test_make(void **state)
{
	ds_slope *sp = space_of(state);
	ds_slope_info info;

	// what the constructor allocated goes with the object it threw from
	bool caught = false;
	try {
		(void)slope::mig_ptr<throws_in_ctor>::make(100000);
	} catch (const std::runtime_error &) {
		caught = true;
	}
	assert_true(caught);
	assert_int_equal(ds_slope_describe(sp, &info), 0);
	assert_int_equal(info.objects, 0);
	assert_true(backing->live.empty());

	// a context on an object nests inside another's
	auto outer = slope::mig_ptr<slope::vector<int>>::make();
	auto inner = slope::mig_ptr<slope::vector<int>>::make(size_t{1000}, 7);
	assert_true(outer.ok() && inner.ok());
	assert_int_equal((*inner)->size(), 1000);
	{
		auto co = outer->create_context();
		(*outer)->push_back(1);
		{
			auto ci = inner->create_context();
			(*inner)->resize(5000, 9);
		}
		(*outer)->resize(3000);
	}
	owned_by(outer->handle(), (*outer)->data());
	owned_by(inner->handle(), (*inner)->data());
	assert_int_equal((**inner)[4999], 9);

	outer->reset();
	inner->reset();
	assert_int_equal(ds_slope_describe(sp, &info), 0);
	assert_int_equal(info.objects, 0);

	// the type's tag and name, as receive() matches them
	static_assert(slope::type_tag<int>() != slope::type_tag<long>());
	static_assert(slope::type_tag<const int>() == slope::type_tag<int>());
	assert_string_equal(std::string(slope::type_name<int>()).c_str(), "int");
}

void test_migrate_refusals(void **state)
{
	ds_slope *sp = space_of(state);
	ds_slope_obj *o, *got;
	ds_slope_mig *mig = nullptr;

	assert_int_equal(ds_slope_obj_create(sp, 64, 8, 0, 0, &o), 0);
	assert_int_equal(ds_slope_ctx_push(o), 0);
	assert_int_equal(ds_slope_migrate(o, 2, nullptr, &mig), -EBUSY);
	assert_true(contains(ds_slope_errmsg(), "contexts are open"));
	assert_int_equal(ds_slope_ctx_pop(o), 0);

	ds_slope_migrate_opts opts = {};
	opts.max_rounds = DS_SLOPE_ROUNDS_MAX + 1;
	assert_int_equal(ds_slope_migrate(o, 2, &opts, &mig), -EINVAL);
	opts = {};
	opts.reserved[2] = 1;
	assert_int_equal(ds_slope_migrate(o, 2, &opts, &mig), -EINVAL);

	// no arena header at the object's start: not migratable
	ds_slope_obj_info info;
	assert_int_equal(ds_slope_obj_describe(o, &info), 0);
	auto *h = reinterpret_cast<arena_header *>(info.header);
	h->magic ^= 0xff;
	assert_int_equal(ds_slope_migrate(o, 2, nullptr, &mig), -EINVAL);
	assert_true(contains(ds_slope_errmsg(), "cannot migrate: no Slope object header"));
	h->magic ^= 0xff;

	// intact, but the space has no module under it
	assert_int_equal(ds_slope_migrate(o, 2, nullptr, &mig), -EOPNOTSUPP);
	assert_null(mig);
	assert_int_equal(ds_slope_obj_describe(o, &info), 0);
	assert_int_equal(info.state, DS_SLOPE_OBJ_HERE);
	assert_int_equal(ds_slope_recv(sp, 0, 0, &got, nullptr), -EOPNOTSUPP);
	assert_int_equal(ds_slope_obj_incoming(o, 0, nullptr), -ENOENT);
	assert_int_equal(ds_slope_obj_settle(o), 0);
	assert_int_equal(ds_slope_obj_destroy(o), 0);
}

// Threads allocating for objects of their own and for one they share,
// and freeing each other's blocks: no block is handed out twice.
void test_threads(void **state)
{
	ds_slope *sp = space_of(state);
	auto made = slope::mig_ptr<int>::make();
	assert_true(made.ok());
	ds_slope_obj *shared = made->handle();
	std::mutex m;
	std::vector<std::pair<uint64_t *, size_t>> handed;	// block, words
	std::atomic<int> failures{0};

	auto check_and_free = [&](std::pair<uint64_t *, size_t> b) {
		for (size_t i = 0; i < b.second; i++)
			failures += b.first[i] != addr_of(b.first) + i;
		failures += ds_slope_free(b.first) != 0;
	};
	std::vector<std::thread> threads;
	for (int t = 0; t < 4; t++) {
		threads.emplace_back([&, t] {
			auto own = slope::mig_ptr<slope::map<int, int>>::make();
			if (!own) {
				failures++;
				return;
			}
			for (int i = 0; i < 3000; i++) {
				{
					auto ctx = own->create_context();
					(**own)[i] = t;
				}
				const size_t words = 2 + static_cast<size_t>(i * 7 % 700);
				void *p;
				ds_slope_ctx_push(shared);
				int r = ds_slope_alloc(words * 8, 8, &p);
				ds_slope_ctx_pop(shared);
				if (r) {
					failures++;
					continue;
				}
				auto *w = static_cast<uint64_t *>(p);
				for (size_t k = 0; k < words; k++)
					w[k] = addr_of(w) + k;
				std::pair<uint64_t *, size_t> victim{nullptr, 0};
				{
					std::lock_guard g(m);
					handed.emplace_back(w, words);
					if (handed.size() > 100) {
						const size_t at = static_cast<size_t>(i) % handed.size();
						victim = handed[at];
						handed[at] = handed.back();
						handed.pop_back();
					}
				}
				if (victim.first)
					check_and_free(victim);
			}
			failures += (*own)->size() != 3000;
		});
	}
	for (auto &t : threads)
		t.join();
	for (auto &b : handed)
		check_and_free(b);
	assert_int_equal(failures.load(), 0);

	ds_slope_obj_info info;
	assert_int_equal(ds_slope_obj_describe(shared, &info), 0);
	assert_int_equal(info.live_blocks, 1);	// the root
	made->reset();
	ds_slope_info si;
	assert_int_equal(ds_slope_describe(sp, &si), 0);
	assert_int_equal(si.objects, 0);
	assert_true(backing->live.empty());
}

// An arrival, played on one node's plain memory: the source forgets the
// object as after a handover, and the destination adopts it from its
// header, as ds_slope_recv() does with what the module handed over.
void test_arrival(void **state)
{
	ds_slope *sp = space_of(state);
	const int n = 5000;
	auto made = slope::mig_ptr<tables>::make("arrived");
	assert_true(made.ok());
	slope::mig_ptr<tables> t = std::move(made.value());
	{
		auto ctx = t.create_context();
		fill(*t, n);
	}
	ds_slope_obj_info info;
	assert_int_equal(ds_slope_obj_describe(t.handle(), &info), 0);

	struct dsmem_ioc_slope_mig a = {};
	a.id = 77;
	a.peer = 1;
	a.cookie = info.header;
	a.pages = info.pages;
	a.state = DSMEM_SLOPE_MIG_DONE;
	ds_slope_obj *got;
	// still ours: its runs would overlap
	assert_int_equal(adopt(*sp, a, &got), -EBADMSG);
	assert_true(contains(ds_slope_errmsg(), "overlaps"));

	left(*t.handle());
	assert_false(static_cast<bool>(t));
	assert_int_equal(ds_slope_obj_lookup(reinterpret_cast<void *>(info.header), &got), -ENOENT);

	a.pages = info.pages + 1;
	assert_int_equal(adopt(*sp, a, &got), -EBADMSG);
	assert_true(contains(ds_slope_errmsg(), "add up"));
	a.pages = info.pages;
	a.cookie = info.header + page_size;
	assert_int_equal(adopt(*sp, a, &got), -EBADMSG);
	assert_true(contains(ds_slope_errmsg(), "bad magic"));
	a.cookie = info.header;
	assert_int_equal(adopt(*sp, a, &got), 0);

	// the same object, working: its blocks map to it, it grows and frees
	auto *r = static_cast<tables *>(ds_slope_obj_root(got));
	assert_ptr_equal(r, reinterpret_cast<void *>(info.root));
	check_tables(got, *r, n);
	assert_string_equal(r->s.c_str(), "arrived");
	ds_slope_obj_info ginfo;
	assert_int_equal(ds_slope_obj_describe(got, &ginfo), 0);
	assert_int_equal(ginfo.type_tag, slope::type_tag<tables>());
	assert_int_equal(ginfo.pages, info.pages);
	assert_int_equal(ginfo.live_blocks, info.live_blocks);
	assert_int_equal(ds_slope_ctx_push(got), 0);
	fill(*r, 2 * n);	// keys again, and more
	assert_int_equal(ds_slope_ctx_pop(got), 0);
	assert_int_equal(r->v.size(), 3 * n);
	assert_int_equal(r->m.size(), 2 * n);
	owned_by(got, r->v.data());
	ds_slope_mig_stats st;
	assert_int_equal(ds_slope_obj_incoming(got, 0, &st), 0);
	assert_int_equal(st.id, 77);
	assert_int_equal(st.state, DS_SLOPE_MIG_DONE);

	// the source's handle goes without freeing anything
	const size_t live = backing->live.size();
	t.reset();
	assert_int_equal(backing->live.size(), live);
	r->~tables();
	assert_int_equal(ds_slope_obj_destroy(got), 0);
	assert_true(backing->live.empty());
}

}  // namespace

int main(void)
{
	const struct CMUnitTest arena_tests[] = {
		cmocka_unit_test(test_size_classes),
		cmocka_unit_test(test_reuse_partial_pages),
		cmocka_unit_test(test_run_growth),
		cmocka_unit_test(test_medium_blocks),
		cmocka_unit_test(test_large_blocks),
		cmocka_unit_test(test_runs_given_back),
		cmocka_unit_test(test_run_table_growth),
		cmocka_unit_test(test_header_check),
		cmocka_unit_test(test_bad_frees),
	};
	const struct CMUnitTest space_tests[] = {
		cmocka_unit_test_setup_teardown(test_open_once, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_no_context, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_contexts_and_inverse_map, space_setup,
						space_teardown),
		cmocka_unit_test_setup_teardown(test_batched_frees, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_containers, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_make, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_migrate_refusals, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_threads, space_setup, space_teardown),
		cmocka_unit_test_setup_teardown(test_arrival, space_setup, space_teardown),
	};
	int failed = cmocka_run_group_tests_name("dsuser_slope_arena", arena_tests, nullptr, nullptr);
	return failed + cmocka_run_group_tests_name("dsuser_slope_space", space_tests, nullptr,
						    nullptr);
}
