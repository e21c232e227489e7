// SPDX-License-Identifier: BSD-2-Clause
// dsctl stat [show] | stat reset
#include "dsctl.hpp"

namespace dsctl {

namespace {

void no_more_words(env &e)
{
	if (!e.words.empty())
		fail("unexpected \"" + e.words.peek() + "\"");
}

int stat_show(env &e)
{
	no_more_words(e);
	dsmem::context ctx = open_context();
	auto stats = ctx.stats();
	if (!stats)
		fail(stats.err(), "cannot read counters");
	record r;
	for (const auto &s : *stats)
		r[s.name] = s.value;
	e.out.add(r);
	return 0;
}

int stat_reset(env &e)
{
	no_more_words(e);
	dsmem::context ctx = open_context();
	auto ret = ctx.reset_stats();
	if (!ret)
		fail(ret.err(), "cannot reset counters");
	return 0;
}

const command stat_cmds[] = {
	{ "show", stat_show },
	{ "reset", stat_reset },
};

}  // namespace

const object stat_object = {
	"statistic", stat_cmds, 2,
	"Usage: dsctl statistic [show]\n"
	"       dsctl statistic reset\n",
	false,
};

}  // namespace dsctl
