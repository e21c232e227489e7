// SPDX-License-Identifier: BSD-2-Clause
// dsctl monitor [count N]: print events until a signal (or N events).
#include <cerrno>
#include <csignal>
#include <cstring>

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

// Print every event the library has queued; false when count is reached.
bool drain(env &e, dsmem::monitor &mon, unsigned int count, unsigned int &seen)
{
	for (;;) {
		auto ev = mon.next(0);
		if (!ev) {
			if (ev.err().code == -EAGAIN)
				return true;
			fail(ev.err(), "monitoring failed");
		}
		e.out.stream(event_record(*ev));
		if (count && ++seen == count)
			return false;
	}
}

int monitor_run(env &e)
{
	unsigned int count = 0, seen = 0;

	while (!e.words.empty()) {
		std::string w = e.words.next();
		if (matches(w, "count") && !e.words.empty()) {
			if (!parse_u32(e.words.next(), count) || !count)
				fail("count needs a positive number");
		} else {
			fail("unexpected \"" + w + "\"");
		}
	}

	// SIGINT/SIGTERM arrive as readable data, so none is lost between
	// two polls and the exit is always clean.
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, nullptr);
	int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
	if (sfd < 0)
		fail(std::string("signalfd: ") + strerror(errno));

	auto mon = dsmem::monitor::open();
	if (!mon)
		fail(mon.err(), "cannot start monitoring");
	for (;;) {
		struct pollfd fds[2] = {
			{ mon->fd(), POLLIN, 0 },
			{ sfd, POLLIN, 0 },
		};
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail(std::string("poll: ") + strerror(errno));
		}
		if (fds[1].revents)
			break;
		if (!drain(e, *mon, count, seen))
			break;
	}
	close(sfd);
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
