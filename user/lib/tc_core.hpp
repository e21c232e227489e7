// SPDX-License-Identifier: BSD-2-Clause
// The token cache's portable core (kernel/tokencache/dsmem_tc_core.c, the
// very file the module compiles): its token codec and its tables of
// parameters and counters.  Internal to libdsuser; not installed.
#pragma once

// C, not C++: dstc_entry() is both a struct and a function there.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
extern "C" {
#include "dsmem_tc_core.h"
}
#pragma GCC diagnostic pop

// dsmem_portable.h maps the kernel's type names with macros; they must
// not leak into C++ (member functions called u8, ...).
#undef u8
#undef u16
#undef u32
#undef u64
#undef s32
#undef s64
