// SPDX-License-Identifier: BSD-2-Clause
// dsctl version: the tool, the library, the module and its family.
#include <linux/dsmem_netlink.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

int version_show(env &e)
{
	if (!e.words.empty())
		fail("unexpected \"" + e.words.peek() + "\"");

	record r;
	r["tool"] = DSCTL_VERSION;
	r["library"] = ds_lib_version();
	r["library_abi"] = ds_lib_abi_version();

	// A missing module is a fact to report, not a failure of the tool.
	auto ctx = dsmem::context::open();
	if (!ctx) {
		if (ctx.err().code != -ENOENT)
			fail(ctx.err(), "cannot reach the dsmem module");
		r["module"] = nullptr;
		e.out.add(r);
		return 0;
	}
	auto v = ctx->version();
	if (!v)
		fail(v.err(), "cannot read the module version");
	r["module"] = v->module_version;
	r["module_abi"] = v->abi_version;
	r["family"] = DSMEM_GENL_NAME;
	r["family_version"] = v->family_version;
	r["features"] = features_record(v->features);
	auto cv = ctx->chrdev_version();
	if (!cv)
		fail(cv.err(), "/dev/dsmem does not answer as expected");
	r["chrdev_abi"] = cv->abi_version;
	e.out.add(r);
	return 0;
}

const command version_cmds[] = {
	{ "show", version_show },
};

}  // namespace

const object version_object = {
	"version", version_cmds, 1,
	"Usage: dsctl version [show]\n",
	false,
};

}  // namespace dsctl
