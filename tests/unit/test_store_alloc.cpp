// SPDX-License-Identifier: BSD-2-Clause
// The segment offset allocator: 16 KiB rounding, best fit, coalescing,
// reserve for rebuilds, and a long random run against a bitmap of units.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "alloc.hpp"

extern "C" {
#include <cmocka.h>
}

using dsmem::store::kAllocUnit;
using dsmem::store::OffsetAllocator;

namespace {

constexpr uint64_t U = kAllocUnit;

void rounding(void **)
{
	assert_int_equal(OffsetAllocator::round(1), U);
	assert_int_equal(OffsetAllocator::round(U), U);
	assert_int_equal(OffsetAllocator::round(U + 1), 2 * U);
	assert_int_equal(OffsetAllocator::round(0), U);
	assert_true(OffsetAllocator::round(UINT64_MAX) >= UINT64_MAX - U);	// no wrap to 0

	OffsetAllocator a(10 * U + 123);	// the odd tail is not usable
	assert_int_equal(a.size(), 10 * U);
	assert_int_equal(a.largest_free(), 10 * U);
	OffsetAllocator tiny(U - 1);
	assert_int_equal(tiny.size(), 0);
	assert_false(tiny.allocate(1).has_value());
}

void allocate_release(void **)
{
	OffsetAllocator a(8 * U);

	auto x = a.allocate(1);
	assert_true(x.has_value());
	assert_int_equal(*x, 0);
	assert_int_equal(a.used(), U);
	auto y = a.allocate(U + 1);	// two units
	assert_int_equal(*y, U);
	assert_int_equal(a.used(), 3 * U);
	a.release(*x, 1);
	assert_int_equal(a.used(), 2 * U);
	a.release(*y, U + 1);
	assert_int_equal(a.used(), 0);
	assert_int_equal(a.largest_free(), 8 * U);
	assert_int_equal(a.free_extents(), 1);
}

void best_fit(void **)
{
	OffsetAllocator a(32 * U);
	std::vector<uint64_t> off;

	// holes of 3, 1 and 2 units between live 1-unit blocks
	for (uint64_t len : { 3, 1, 1, 1, 2, 1 })
		off.push_back(*a.allocate(len * U));
	// off: 0(3) 3(1) 4(1) 5(1) 6(2) 8(1); rest 9..32 free
	a.release(off[0], 3 * U);
	a.release(off[2], U);
	a.release(off[4], 2 * U);
	assert_int_equal(*a.allocate(U), 4 * U);	// the 1-unit hole, not the first
	assert_int_equal(*a.allocate(2 * U), 6 * U);	// the 2-unit hole
	assert_int_equal(*a.allocate(2 * U), 0);	// the 3-unit hole's low end
	assert_int_equal(*a.allocate(U), 2 * U);	// its last unit
	assert_int_equal(*a.allocate(5 * U), 9 * U);	// the tail
}

void coalescing(void **)
{
	OffsetAllocator a(4 * U);
	uint64_t b[4];

	for (auto &x : b)
		x = *a.allocate(U);
	assert_false(a.allocate(1).has_value());
	// free 1 and 3, then 2 joins both neighbours, then 0 the whole
	a.release(b[1], U);
	a.release(b[3], U);
	assert_int_equal(a.free_extents(), 2);
	assert_int_equal(a.largest_free(), U);
	a.release(b[2], U);
	assert_int_equal(a.free_extents(), 1);
	assert_int_equal(a.largest_free(), 3 * U);
	a.release(b[0], U);
	assert_int_equal(a.free_extents(), 1);
	assert_int_equal(a.largest_free(), 4 * U);
	assert_int_equal(*a.allocate(4 * U), 0);
}

void fragmentation_and_exhaustion(void **)
{
	OffsetAllocator a(16 * U);
	std::vector<uint64_t> off;

	for (int i = 0; i < 16; i++)
		off.push_back(*a.allocate(U));
	assert_false(a.allocate(1).has_value());
	assert_int_equal(a.largest_free(), 0);
	for (int i = 0; i < 16; i += 2)
		a.release(off[i], U);
	// half free, but in single units: two units do not fit
	assert_int_equal(a.used(), 8 * U);
	assert_int_equal(a.largest_free(), U);
	assert_false(a.allocate(2 * U).has_value());
	assert_true(a.allocate(U).has_value());
	a.release(off[1], U);	// 0 was re-taken; 1 and 2 join: 2 units
	assert_int_equal(a.largest_free(), 2 * U);
	assert_int_equal(*a.allocate(2 * U), U);
	assert_false(a.allocate(U * 17).has_value());
}

void reserve_ranges(void **)
{
	OffsetAllocator a(16 * U);

	assert_true(a.reserve(4 * U, 2 * U));
	assert_int_equal(a.used(), 2 * U);
	assert_int_equal(a.free_extents(), 2);
	assert_false(a.reserve(5 * U, U));	// taken
	assert_false(a.reserve(3 * U, 2 * U));	// overlaps its start
	assert_false(a.reserve(5 * U, 4 * U));	// overlaps its end
	assert_false(a.reserve(15 * U, 2 * U));	// past the end
	assert_false(a.reserve(16 * U, 1));	// starts at the end
	assert_false(a.reserve(U + 1, U));	// not on a unit
	assert_false(a.reserve(UINT64_MAX - U, 1));
	assert_true(a.reserve(0, 1));		// rounds to a unit
	assert_true(a.reserve(15 * U, U));	// the last unit
	assert_int_equal(a.used(), 4 * U);
	// allocation goes around the reserved ranges
	assert_int_equal(*a.allocate(3 * U), U);
	assert_int_equal(*a.allocate(9 * U), 6 * U);
	assert_false(a.allocate(1).has_value());
	a.release(4 * U, 2 * U);
	assert_int_equal(*a.allocate(U), 4 * U);
}

// Thousands of random allocates, releases and reserves, each checked
// against a bitmap of units: allocations never overlap or leave the
// segment, best fit picks a smallest hole, and the counters agree.
void random_against_bitmap(void **)
{
	constexpr uint64_t units = 512;
	OffsetAllocator a(units * U);
	std::vector<bool> taken(units, false);
	std::map<uint64_t, uint64_t> live;	// offset -> length given
	std::mt19937_64 rng(8);

	auto holes = [&]() {
		std::vector<std::pair<uint64_t, uint64_t>> h;	// (start unit, units)
		for (uint64_t i = 0; i < units;) {
			if (taken[i]) {
				i++;
				continue;
			}
			uint64_t j = i;
			while (j < units && !taken[j])
				j++;
			h.push_back({ i, j - i });
			i = j;
		}
		return h;
	};
	for (int step = 0; step < 20000; step++) {
		unsigned op = static_cast<unsigned>(rng() % 10);
		if (op < 5) {
			uint64_t len = 1 + rng() % (8 * U);
			uint64_t n = OffsetAllocator::round(len) / U;
			uint64_t best = UINT64_MAX;
			for (auto [s, l] : holes())
				if (l >= n && l < best)
					best = l;
			auto off = a.allocate(len);
			if (best == UINT64_MAX) {
				assert_false(off.has_value());
				continue;
			}
			assert_true(off.has_value());
			assert_int_equal(*off % U, 0);
			uint64_t u = *off / U;
			assert_true(u + n <= units);
			for (uint64_t k = u; k < u + n; k++) {
				assert_false(taken[k]);
				taken[k] = true;
			}
			// the hole it came from is a smallest that fits
			uint64_t s = u;
			while (s > 0 && !taken[s - 1])
				s--;
			assert_int_equal(s, u);	// low end of its hole
			uint64_t e = u + n;
			while (e < units && !taken[e])
				e++;
			assert_int_equal(e - s, best);
			live[*off] = len;
		} else if (op < 9 && !live.empty()) {
			auto it = live.begin();
			std::advance(it, static_cast<long>(rng() % live.size()));
			uint64_t u = it->first / U, n = OffsetAllocator::round(it->second) / U;
			a.release(it->first, it->second);
			for (uint64_t k = u; k < u + n; k++)
				taken[k] = false;
			live.erase(it);
		} else {
			uint64_t u = rng() % (units + 4), n = 1 + rng() % 6;
			bool can = u + n <= units;
			for (uint64_t k = u; can && k < u + n; k++)
				can = !taken[k];
			bool got = a.reserve(u * U, n * U - rng() % U);
			assert_int_equal(got, can);
			if (got) {
				for (uint64_t k = u; k < u + n; k++)
					taken[k] = true;
				live[u * U] = n * U;
			}
		}
		uint64_t used = 0, largest = 0;
		for (bool t : taken)
			used += t;
		auto h = holes();
		for (auto [s, l] : h)
			largest = std::max(largest, l);
		assert_int_equal(a.used(), used * U);
		assert_int_equal(a.largest_free(), largest * U);
		assert_int_equal(a.free_extents(), h.size());	// fully coalesced
	}
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rounding),
		cmocka_unit_test(allocate_release),
		cmocka_unit_test(best_fit),
		cmocka_unit_test(coalescing),
		cmocka_unit_test(fragmentation_and_exhaustion),
		cmocka_unit_test(reserve_ranges),
		cmocka_unit_test(random_against_bitmap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
