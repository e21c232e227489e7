// SPDX-License-Identifier: BSD-2-Clause
// A C++ program on the header-only layer: RAII handles and result types.
#include <cerrno>
#include <cstdio>

#include <dsmem/ds.hpp>

int main()
{
	auto ctx = dsmem::context::open();
	if (!ctx) {
		std::printf("dsmem: %s\n", ctx.err().what().c_str());
		return ctx.err().code == -ENOENT ? 0 : 1;
	}
	auto devs = ctx->devices();
	return devs ? 0 : 1;
}
