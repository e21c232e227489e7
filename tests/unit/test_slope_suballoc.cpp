// SPDX-License-Identifier: BSD-2-Clause
// Slope's sub-allocators (slope::SubAllocator, ds_slope_obj_suballoc) on
// plain memory: a slab-style allocator of the application's own carves the
// pages Slope hands it; every block it places lies in those pages, inside
// the object's runs, and the inverse map resolves it to the object; frees
// reach it through slope::Allocator with no context open; requests it
// declines go to Slope's allocator; it cannot be removed while it holds
// pages; its state must lie in the object; and after an arrival (played on
// the same pages) the receiver installs it again and it works on.
#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <dsmem/slope.hpp>

#include "slope/arena.hpp"
#include "slope/space.hpp"

#include "../kselftest/slab_suballoc.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::slope::detail;
namespace slope = dsmem::slope;
using dsmem_test::slab;

namespace {

#include "slope_plain_source.hpp"

// The sub-allocator first: the containers after it free into it.
struct store {
	slab sub;
	slope::map<uint64_t, uint64_t> m;
	slope::vector<uint64_t> big;
};


// Every node of the map lies in a page the sub-allocator holds, inside
// the object, and the inverse map names the object.
void check_nodes(ds_slope_obj *obj, const store &s, std::set<uint64_t> *pages)
{
	// the map's nodes: reach them from the values' addresses (a node
	// holds its value)
	for (const auto &[k, v] : s.m) {
		const void *p = &v;
		ds_slope_obj *got = nullptr;
		assert_int_equal(ds_slope_obj_lookup(p, &got), 0);
		assert_ptr_equal(got, obj);
		const uint64_t page = obj->a->sub_page(p);
		assert_int_not_equal(page, 0);
		pages->insert(page);
		assert_int_equal(v, k * 3);
	}
}

void fill(store &s, uint64_t from, uint64_t to)
{
	for (uint64_t k = from; k < to; k++)
		s.m[k] = k * 3;
}

void test_slab_places_in_slope_pages(void **)
{
	auto made = slope::mig_ptr<store>::make();
	assert_true(made.ok());
	slope::mig_ptr<store> t = std::move(made.value());
	ds_slope_obj *obj = t.handle();
	assert_true(t.use(t->sub).ok());

	const uint64_t n = 2000;
	{
		auto ctx = t.create_context();
		fill(*t, 0, n);
		t->big.resize(4096);	// 32 KiB: declined, Slope's allocator
	}
	std::set<uint64_t> pages;
	check_nodes(obj, *t, &pages);
	assert_int_equal(t->sub.blocks(), n);
	assert_int_equal(pages.size(), t->sub.pages_held());
	ds_slope_obj_info info;
	assert_int_equal(ds_slope_obj_describe(obj, &info), 0);
	assert_int_equal(info.sub_pages, t->sub.pages_held());
	// the page count is the slab's, not one per block
	assert_true(info.sub_pages * (4096 / 64) >= n && info.sub_pages < n / 8);

	// the declined block is Slope's, and the object's too
	ds_slope_obj *got = nullptr;
	assert_int_equal(obj->a->sub_page(t->big.data()), 0);
	assert_int_equal(ds_slope_obj_lookup(t->big.data(), &got), 0);
	assert_ptr_equal(got, obj);

	// no removing it while it holds pages
	auto r = t.unuse();
	assert_false(r.ok());
	assert_int_equal(r.err().code, -EBUSY);

	// frees need no context: the inverse map and the page kind find it
	for (uint64_t k = 0; k < n; k += 2)
		t->m.erase(k);
	assert_int_equal(t->sub.blocks(), n / 2);
	const uint64_t half = t->sub.pages_held();
	t->m.clear();
	assert_int_equal(t->sub.blocks(), 0);
	assert_int_equal(t->sub.pages_held(), 0);
	assert_true(half > 0);
	assert_int_equal(ds_slope_obj_describe(obj, &info), 0);
	assert_int_equal(info.sub_pages, 0);
	assert_true(t.unuse().ok());

	// without it, Slope's own allocator; installing it later is fine
	{
		auto ctx = t.create_context();
		fill(*t, 0, 10);
	}
	assert_int_equal(obj->a->sub_page(&t->m.begin()->second), 0);
	assert_true(t.use(t->sub).ok());
	t.reset();
	assert_true(backing->live.empty());
}

void test_state_outside_refused(void **)
{
	auto made = slope::mig_ptr<store>::make();
	assert_true(made.ok());
	slope::mig_ptr<store> t = std::move(made.value());
	slab outside;
	auto r = t.use(outside);
	assert_false(r.ok());
	assert_int_equal(r.err().code, -EINVAL);
	assert_non_null(std::strstr(ds_slope_errmsg(), "travel"));
	// nothing installed: Slope's own allocator, no sub pages
	{
		auto ctx = t.create_context();
		fill(*t, 0, 100);
	}
	ds_slope_obj_info info;
	assert_int_equal(ds_slope_obj_describe(t.handle(), &info), 0);
	assert_int_equal(info.sub_pages, 0);
	assert_true(info.slab_pages > 0);
}

// A sub-allocator that fails: the failure reaches the container as the
// alloc_error it is, and nothing is placed.
struct refuser {
	void *allocate(slope::pages &, std::size_t, std::size_t)
	{
		throw slope::alloc_error(-ENOSPC, "full");
	}
	void deallocate(slope::pages &, void *) noexcept {}
};

struct refused_store {
	refuser sub;
	slope::vector<int> v;
};

void test_failure_propagates(void **)
{
	auto made = slope::mig_ptr<refused_store>::make();
	assert_true(made.ok());
	slope::mig_ptr<refused_store> t = std::move(made.value());
	assert_true(t.use(t->sub).ok());
	auto ctx = t.create_context();
	bool thrown = false;
	try {
		t->v.push_back(1);
	} catch (const slope::alloc_error &e) {
		thrown = true;
		assert_int_equal(e.code(), -ENOSPC);
		assert_non_null(std::strstr(e.what(), "sub-allocator"));
	}
	assert_true(thrown);
	assert_true(t->v.empty());
}

// After a handover (played on the same pages), the receiver installs the
// slab again over its migrated state: the blocks it placed at the source
// are freed into it, and it places new ones in its pages.
void test_arrival_reinstall(void **state)
{
	ds_slope *sp = static_cast<ds_slope *>(*state);
	auto made = slope::mig_ptr<store>::make();
	assert_true(made.ok());
	slope::mig_ptr<store> t = std::move(made.value());
	assert_true(t.use(t->sub).ok());
	{
		auto ctx = t.create_context();
		fill(*t, 0, 500);
	}
	ds_slope_obj_info info;
	assert_int_equal(ds_slope_obj_describe(t.handle(), &info), 0);
	const uint64_t held = t->sub.pages_held();

	struct dsmem_ioc_slope_mig a = {};
	a.id = 5;
	a.peer = 1;
	a.cookie = info.header;
	a.pages = info.pages;
	a.state = DSMEM_SLOPE_MIG_DONE;
	left(*t.handle());
	ds_slope_obj *got;
	assert_int_equal(adopt(*sp, a, &got), 0);
	auto *s = static_cast<store *>(ds_slope_obj_root(got));
	assert_int_equal(s->sub.pages_held(), held);

	// not installed yet: freeing into its pages is refused, nothing lost
	void *first = &s->m.begin()->second;
	assert_int_equal(ds_slope_free(first), -EINVAL);
	assert_non_null(std::strstr(ds_slope_errmsg(), "no sub-allocator"));
	assert_int_equal(s->sub.blocks(), 500);

	assert_int_equal(ds_slope_obj_suballoc(got, &slope::detail::suballoc_calls<slab>::ops, &s->sub), 0);
	std::set<uint64_t> pages;
	check_nodes(got, *s, &pages);
	assert_int_equal(ds_slope_ctx_push(got), 0);
	fill(*s, 500, 1000);
	assert_int_equal(ds_slope_ctx_pop(got), 0);
	pages.clear();
	check_nodes(got, *s, &pages);
	assert_int_equal(pages.size(), s->sub.pages_held());
	s->m.clear();
	assert_int_equal(s->sub.pages_held(), 0);
	s->~store();
	assert_int_equal(ds_slope_obj_destroy(got), 0);
	t.reset();
	assert_true(backing->live.empty());
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_slab_places_in_slope_pages, space_setup,
						space_teardown),
		cmocka_unit_test_setup_teardown(test_state_outside_refused, space_setup,
						space_teardown),
		cmocka_unit_test_setup_teardown(test_failure_propagates, space_setup,
						space_teardown),
		cmocka_unit_test_setup_teardown(test_arrival_reinstall, space_setup,
						space_teardown),
	};
	return cmocka_run_group_tests_name("slope_suballoc", tests, nullptr, nullptr);
}
