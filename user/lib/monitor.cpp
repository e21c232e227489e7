// SPDX-License-Identifier: BSD-2-Clause
// libdsuser event monitor: the family's "events" group plus nlctrl's
// "notify" group, so the monitor sees the module leave and come back.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <new>

#include <poll.h>

#include <linux/dsmem_netlink.h>
#include <linux/genetlink.h>

#include "ds_internal.hpp"

using namespace dsmem::detail;

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

struct ds_monitor {
	genl_socket events;	// subscriptions only; never sends requests
	int family = -1;	// -1 while the module is not loaded
	std::deque<ds_event> queue;
	int error = 0;		// a parse failure found inside a batch
};

namespace {

// Resolve on a separate socket: replies must not interleave with events.
int resolve(const char *family, const char *group, int *family_id, int *group_id)
{
	genl_socket tmp;
	std::string err;
	int ret = tmp.open(err);

	if (ret)
		return ret;
	if (family_id) {
		*family_id = genl_ctrl_resolve(tmp.sk(), family);
		if (*family_id < 0)
			return -ENOENT;
	}
	*group_id = genl_ctrl_resolve_grp(tmp.sk(), family, group);
	return *group_id < 0 ? -ENOENT : 0;
}

// Join the module's events group, if the module is there.
void subscribe_module(ds_monitor *mon)
{
	int family, group;

	mon->family = -1;
	if (resolve(DSMEM_GENL_NAME, DSMEM_GENL_MCGRP_EVENTS, &family, &group))
		return;
	if (nl_socket_add_membership(mon->events.sk(), group) == 0)
		mon->family = family;
}

void handle_ctrl(ds_monitor *mon, struct nlmsghdr *nlh)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1];
	auto *gh = static_cast<struct genlmsghdr *>(nlmsg_data(nlh));

	if (gh->cmd != CTRL_CMD_NEWFAMILY && gh->cmd != CTRL_CMD_DELFAMILY)
		return;
	if (genlmsg_parse(nlh, 0, tb, CTRL_ATTR_MAX, nullptr) < 0 ||
	    !tb[CTRL_ATTR_FAMILY_NAME] ||
	    strcmp(nla_get_string(tb[CTRL_ATTR_FAMILY_NAME]), DSMEM_GENL_NAME))
		return;

	ds_event ev{};
	if (gh->cmd == CTRL_CMD_NEWFAMILY) {
		subscribe_module(mon);
		ev.type = DS_EVENT_MODULE_LOADED;
	} else {
		mon->family = -1;	// the kernel dropped our membership
		ev.type = DS_EVENT_MODULE_UNLOADED;
	}
	mon->queue.push_back(ev);
}

int on_event(struct nl_msg *msg, void *arg)
{
	auto *mon = static_cast<ds_monitor *>(arg);
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (!genlmsg_valid_hdr(nlh, 0))
		return NL_SKIP;
	if (nlh->nlmsg_type == GENL_ID_CTRL) {
		handle_ctrl(mon, nlh);
		return NL_OK;
	}
	if (mon->family < 0 || nlh->nlmsg_type != mon->family)
		return NL_SKIP;

	ds_event ev{};
	switch (static_cast<struct genlmsghdr *>(nlmsg_data(nlh))->cmd) {
	case DSMEM_CMD_DEV_NEW: ev.type = DS_EVENT_DEV_NEW; break;
	case DSMEM_CMD_DEV_DEL: ev.type = DS_EVENT_DEV_DEL; break;
	case DSMEM_CMD_DEV_RENAME: ev.type = DS_EVENT_DEV_RENAME; break;
	default: return NL_SKIP;	// a newer module's event
	}
	int ret = parse_dev(msg, &ev.dev);
	if (ret) {
		mon->error = ret;
		return NL_SKIP;
	}
	mon->queue.push_back(ev);
	return NL_OK;
}

}  // namespace

DS_EXPORT int ds_monitor_open(struct ds_monitor **monp)
{
	auto *mon = new (std::nothrow) ds_monitor;
	std::string err;
	int ctrl_group, ret;

	if (!mon)
		return -ENOMEM;
	ret = mon->events.open(err);
	if (ret)
		goto err_free_mon;
	ret = resolve("nlctrl", "notify", nullptr, &ctrl_group);
	if (ret)
		goto err_free_mon;
	nl_socket_disable_seq_check(mon->events.sk());
	ret = nl_socket_add_membership(mon->events.sk(), ctrl_group);
	if (ret < 0) {
		ret = nlerr_to_errno(ret);
		goto err_free_mon;
	}
	nl_socket_modify_cb(mon->events.sk(), NL_CB_VALID, NL_CB_CUSTOM, on_event, mon);
	subscribe_module(mon);
	*monp = mon;
	return 0;

err_free_mon:
	delete mon;
	return ret;
}

DS_EXPORT void ds_monitor_close(struct ds_monitor *mon)
{
	delete mon;
}

DS_EXPORT int ds_monitor_fd(const struct ds_monitor *mon)
{
	return nl_socket_get_fd(mon->events.sk());
}

DS_EXPORT int ds_monitor_next(struct ds_monitor *mon, struct ds_event *ev,
			      int timeout_ms)
{
	using clock = std::chrono::steady_clock;
	const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);

	while (mon->queue.empty()) {
		struct pollfd pfd = { ds_monitor_fd(mon), POLLIN, 0 };
		int wait_ms = -1;

		// messages that make no event (other families) must not
		// extend the caller's timeout
		if (timeout_ms >= 0) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
				deadline - clock::now());
			wait_ms = left.count() > 0 ? static_cast<int>(left.count()) : 0;
		}
		int n = poll(&pfd, 1, wait_ms);

		if (n < 0)
			return -errno;
		if (n == 0)
			return -EAGAIN;
		int ret = nl_recvmsgs_default(mon->events.sk());
		if (ret < 0 && ret != -NLE_AGAIN)
			return nlerr_to_errno(ret);
		if (mon->error && mon->queue.empty()) {
			ret = mon->error;
			mon->error = 0;
			return ret;
		}
	}
	*ev = mon->queue.front();
	mon->queue.pop_front();
	return 0;
}
