// SPDX-License-Identifier: BSD-2-Clause
// A C++ program on the header-only layer: RAII handles and result types.
#include <cerrno>
#include <cstdio>

#include <dsmem/ds.hpp>
#include <dsmem/slope.hpp>

int main()
{
	dsmem::cache_params p;	// by the module's names, no module needed
	if (!p.set_named("window", 1000000) || p.set_named("bogus", 1) ||
	    p.mask() != 1ULL << DS_CACHE_P_WINDOW_NS)
		return 1;

	// a bad argument is refused before any module is needed
	ds_btree_create_opts bad = {};
	bad.node_size = 100;
	const uint64_t seg = 2ULL << 48 | 1ULL << 36;	// node 2, segment 1
	auto tree = dsmem::btree::create(1, {&seg, 1}, bad);
	if (tree || tree.err().code != -EINVAL)
		return 1;

	// DSUSER_1.5: Slope refuses clearly with no space open
	namespace slope = dsmem::slope;
	auto obj = slope::mig_ptr<slope::map<int, slope::string>>::make(slope::options{true});
	if (obj || obj.err().code != -ENODEV)
		return 1;
	try {
		slope::vector<int> v(1);
		return 1;
	} catch (const slope::no_context &e) {
		if (e.code() != -ENOENT)
			return 1;
	}

	auto ctx = dsmem::context::open();
	if (!ctx) {
		std::printf("dsmem: %s\n", ctx.err().what().c_str());
		return ctx.err().code == -ENOENT ? 0 : 1;
	}
	auto devs = ctx->devices();
	return devs ? 0 : 1;
}
