// SPDX-License-Identifier: BSD-2-Clause
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <setjmp.h>

#include "sim.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

static void placeholder(void **) {}

int main()
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(placeholder) };
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
