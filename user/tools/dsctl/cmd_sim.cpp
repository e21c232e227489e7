// SPDX-License-Identifier: BSD-2-Clause
#include "dsctl.hpp"

namespace dsctl {

namespace {

int sim_run(env &)
{
	fail("sim run: not yet");
}

const command sim_cmds[] = { { "run", sim_run } };

}  // namespace

extern const object sim_object = { "sim", sim_cmds, 1, "Usage: dsctl sim run ...\n", false };

}  // namespace dsctl
