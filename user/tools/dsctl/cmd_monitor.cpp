// SPDX-License-Identifier: BSD-2-Clause
// dsctl monitor [count N]: print events until a signal (or N events).
#include <csignal>

#include "dsctl.hpp"

namespace dsctl {

namespace {

void on_signal(int)
{
	// ds_monitor_next returns -EINTR; nothing else to do here.
}

int monitor_run(env &e)
{
	unsigned int count = 0;

	while (!e.words.empty()) {
		std::string w = e.words.next();
		if (matches(w, "count") && !e.words.empty()) {
			if (!parse_u32(e.words.next(), count) || !count)
				fail("count needs a positive number");
		} else {
			fail("unexpected \"" + w + "\"");
		}
	}

	struct sigaction sa = {};
	sa.sa_handler = on_signal;	// no SA_RESTART: poll() must return
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);

	auto mon = dsmem::monitor::open();
	if (!mon)
		fail(mon.err(), "cannot start monitoring");
	for (unsigned int seen = 0; !count || seen < count; seen++) {
		auto ev = mon->next();
		if (!ev) {
			if (ev.err().code == -EINTR)
				return 0;
			fail(ev.err(), "monitoring failed");
		}
		e.out.stream(event_record(*ev));
	}
	return 0;
}

const command monitor_cmds[] = {
	{ "show", monitor_run },
};

}  // namespace

const object monitor_object = {
	"monitor", monitor_cmds, 1,
	"Usage: dsctl monitor [count N]\n",
	true,
};

}  // namespace dsctl
