// SPDX-License-Identifier: BSD-2-Clause
// dsctl slope [show [node N]]: each node's part of the Slope range, its
// leases and its migrations.
#include <linux/dsmem.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

// What ds_slope_range_list() filled, released with it.
struct slope_list {
	ds_slope_ranges l{};

	slope_list() = default;
	slope_list(const slope_list &) = delete;
	slope_list &operator=(const slope_list &) = delete;
	~slope_list() { ds_slope_range_list_free(&l); }
};

int slope_show(env &e)
{
	keywords kw = take_keywords(e, { "node" });
	uint32_t node = 0;
	id_arg(kw, "node", DSMEM_NODE_ID_MAX, "node id", node);
	dsmem::context ctx = open_context();

	slope_list list;
	check(ds_slope_range_list(ctx.get(), node, &list.l), ctx,
	      node ? "cannot show the Slope range of node " + std::to_string(node)
		   : std::string("cannot list the Slope ranges"));
	if (node && !list.l.nranges && !list.l.nleases && !list.l.nmigs) {
		// a dump of a node that does not exist is empty: ask for it
		// alone, so that the module says why
		ds_slope_range_info r{};
		check(ds_slope_range_get(ctx.get(), node, &r), ctx,
		      "cannot show the Slope range of node " + std::to_string(node));
		ds_slope_ranges one{};
		one.ranges = &r;
		one.nranges = 1;
		e.out.begin_list();
		for (const record &rec : slope_records(one))
			e.out.add(rec);
		return 0;
	}
	e.out.begin_list();
	for (const record &rec : slope_records(list.l))
		e.out.add(rec);
	return 0;
}

const command slope_cmds[] = {
	{ "show", slope_show },
	{ "list", slope_show },
};

}  // namespace

const object slope_object = {
	"slope", slope_cmds, sizeof(slope_cmds) / sizeof(slope_cmds[0]),
	"Usage: dsctl slope [show [node N]]\n",
	false,
};

}  // namespace dsctl
