// SPDX-License-Identifier: BSD-2-Clause
// The host tests' run source for Slope's arenas and spaces: runs from
// anonymous mappings, and a space opened over them (space_setup()).
// Included inside each test's unnamed namespace, after cmocka.h.
#ifndef DSMEM_TEST_SLOPE_PLAIN_SOURCE_HPP
#define DSMEM_TEST_SLOPE_PLAIN_SOURCE_HPP

// Runs from anonymous mappings, unmapped when given back: a touch of a
// run after that faults.  Records what it was asked for.
class plain_source final : public run_source {
public:
	int take(uint64_t len, bool huge, uint64_t *addr) override
	{
		const uint64_t align = huge ? huge_unit : page_size;
		assert_int_equal(len % align, 0);
		if (refuse)	// (fail): not cmocka's macro
			return (dsmem::slope::detail::fail)(-ENOMEM, "plain_source: refused");
		void *p = mmap(nullptr, len + align, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		assert_true(p != MAP_FAILED);
		const uint64_t start = reinterpret_cast<uint64_t>(p);
		const uint64_t a = (start + align - 1) & ~(align - 1);
		if (a > start)
			munmap(p, a - start);
		if (start + align > a)
			munmap(reinterpret_cast<void *>(a + len), start + align - a);
		live[a] = len;
		taken.push_back(len);
		*addr = a;
		return 0;
	}

	// Batches as the module takes them: sorted and disjoint.
	size_t give_back(const extent *runs, size_t n) override
	{
		batches++;
		for (size_t i = 0; i < n; i++) {
			if (i)
				assert_true(runs[i - 1].addr + runs[i - 1].len <= runs[i].addr);
			auto it = live.find(runs[i].addr);
			assert_true(it != live.end());
			assert_int_equal(it->second, runs[i].len);
			munmap(reinterpret_cast<void *>(runs[i].addr), runs[i].len);
			live.erase(it);
			given++;
		}
		return 0;
	}

	std::map<uint64_t, uint64_t> live;	// run -> length
	std::vector<uint64_t> taken;		// lengths, in order
	size_t given = 0;
	size_t batches = 0;
	bool refuse = false;
};

plain_source *backing;

int space_setup(void **state)
{
	auto src = std::make_unique<plain_source>();
	ds_slope *sp;

	backing = src.get();
	if (open_space(std::move(src), &sp))
		return -1;
	*state = sp;
	return 0;
}

int space_teardown(void **state)
{
	return ds_slope_close(static_cast<ds_slope *>(*state)) ? -1 : 0;
}

#endif
