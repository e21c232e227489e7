// SPDX-License-Identifier: BSD-2-Clause
// "dsctl sim run" as a function: the simulator's spec parsing and runs,
// keywords in, one record out.  dsctl's sim command and the web console
// make their runs through it, so both report the same record.  It speaks
// dsctl's words (keywords, record, failure) as both of its callers do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "output.hpp"
#include "run.hpp"

namespace dsctl {

// The keywords "dsctl sim run" takes.
extern const std::vector<std::string_view> sim_run_words;

// Every check of kw that needs no trace (sim_execute makes them too),
// and a generator's size against max_requests (0: any): throws failure
// or dssim::sim_error, as sim_execute does.
void sim_validate(const keywords &kw, uint64_t max_requests);

// Validate kw (sim_run_words' keywords; plot and output are the
// command's) and make the runs: the record "dsctl -j sim run" prints.
// prog, when given, counts the requests done and stops the runs when
// its cancel flag is set.  Throws failure on bad keywords,
// dssim::sim_error on what the simulator refuses (and on a cancel).
record sim_execute(const keywords &kw, dssim::progress *prog);

}  // namespace dsctl
