// SPDX-License-Identifier: BSD-2-Clause
// dsctl dev [show [DEV]]
#include "dsctl.hpp"

namespace dsctl {

namespace {

int dev_show(env &e)
{
	dsmem::context ctx = open_context();

	e.out.begin_list();
	if (e.words.empty()) {
		auto devs = ctx.devices();
		if (!devs)
			fail(devs.err(), "cannot list devices");
		for (const auto &d : *devs)
			e.out.add(dev_record(d));
		return 0;
	}

	std::string name = e.words.next();
	if (!e.words.empty())
		fail("unexpected \"" + e.words.peek() + "\" after the device name");
	auto dev = ctx.device(name);
	if (!dev)
		fail(dev.err(), "cannot show device \"" + name + "\"");
	e.out.add(dev_record(*dev));
	return 0;
}

const command dev_cmds[] = {
	{ "show", dev_show },
	{ "list", dev_show },
};

}  // namespace

const object dev_object = {
	"dev", dev_cmds, sizeof(dev_cmds) / sizeof(dev_cmds[0]),
	"Usage: dsctl dev [show [DEV]]\n",
	false,
};

}  // namespace dsctl
