// SPDX-License-Identifier: BSD-2-Clause
// libdsuser event monitor: the family's "events" group plus nlctrl's
// "notify" group, so the monitor sees the module leave and come back.
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <new>

#include <poll.h>

#include <linux/dsmem_netlink.h>
#include <linux/genetlink.h>

#include "ds_internal.hpp"

using namespace dsmem::detail;

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

// struct ds_event as DSUSER_1.0 published it, before nodes, peers and
// segments: programs built then pass a buffer of this size.
struct ds_event_v1_0 {
	uint32_t type;
	uint32_t reserved0;
	struct ds_dev_info dev;
};
static_assert(offsetof(ds_event, dev) == offsetof(ds_event_v1_0, dev));

// ... and as DSUSER_1.1 published it, before the token cache.
struct ds_event_v1_1 {
	uint32_t type;
	uint32_t reserved0;
	struct ds_dev_info dev;
	struct ds_node_info node;
	struct ds_peer_info peer;
	struct ds_seg_info seg;
};
static_assert(offsetof(ds_event, seg) == offsetof(ds_event_v1_1, seg) &&
	      offsetof(ds_event, cache) >= sizeof(ds_event_v1_1));

// ... and as DSUSER_1.2 published it, before Slope's migrations.
struct ds_event_v1_2 {
	uint32_t type;
	uint32_t reserved0;
	struct ds_dev_info dev;
	struct ds_node_info node;
	struct ds_peer_info peer;
	struct ds_seg_info seg;
	struct ds_cache_info cache;
	struct ds_trace_info trace;
};
static_assert(offsetof(ds_event, trace) == offsetof(ds_event_v1_2, trace) &&
	      offsetof(ds_event, slope_mig) >= sizeof(ds_event_v1_2));

struct ds_monitor {
	genl_socket events;	// subscriptions only; never sends requests
	int family = -1;	// -1 while the module is not loaded
	std::deque<ds_event> queue;
	int error = 0;		// a parse failure found inside a batch
};

namespace dsmem::detail {

int parse_event(struct nl_msg *msg, ds_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (!genlmsg_valid_hdr(nlmsg_hdr(msg), 0))
		return -EBADMSG;
	switch (static_cast<struct genlmsghdr *>(nlmsg_data(nlmsg_hdr(msg)))->cmd) {
	case DSMEM_CMD_DEV_NEW:
		ev->type = DS_EVENT_DEV_NEW;
		return parse_dev(msg, &ev->dev);
	case DSMEM_CMD_DEV_DEL:
		ev->type = DS_EVENT_DEV_DEL;
		return parse_dev(msg, &ev->dev);
	case DSMEM_CMD_DEV_RENAME:
		ev->type = DS_EVENT_DEV_RENAME;
		return parse_dev(msg, &ev->dev);
	case DSMEM_CMD_NODE_NEW:
		ev->type = DS_EVENT_NODE_NEW;
		return parse_node(msg, &ev->node, true);
	case DSMEM_CMD_NODE_DEL:	// may name the node only
		ev->type = DS_EVENT_NODE_DEL;
		return parse_node(msg, &ev->node, false);
	case DSMEM_CMD_PEER_NEW:
		ev->type = DS_EVENT_PEER_NEW;
		return parse_peer(msg, &ev->peer, true);
	case DSMEM_CMD_PEER_DEL:
		ev->type = DS_EVENT_PEER_DEL;
		return parse_peer(msg, &ev->peer, false);
	case DSMEM_CMD_PEER_STATE:
		ev->type = DS_EVENT_PEER_STATE;
		return parse_peer(msg, &ev->peer, true);
	case DSMEM_CMD_SEG_NEW:
		ev->type = DS_EVENT_SEG_NEW;
		return parse_seg(msg, &ev->seg, true);
	case DSMEM_CMD_SEG_DEL:
		ev->type = DS_EVENT_SEG_DEL;
		return parse_seg(msg, &ev->seg, false);
	case DSMEM_CMD_CACHE_SET:
		ev->type = DS_EVENT_CACHE_SET;
		return parse_cache(msg, &ev->cache);
	case DSMEM_CMD_TRACE_START:
		ev->type = DS_EVENT_TRACE_START;
		return parse_trace(msg, &ev->trace, false);
	case DSMEM_CMD_TRACE_STOP:
		ev->type = DS_EVENT_TRACE_STOP;
		return parse_trace(msg, &ev->trace, true);
	case DSMEM_CMD_SLOPE_MIG:
		ev->type = DS_EVENT_SLOPE_MIG;
		return parse_slope_mig(msg, &ev->slope_mig);
	default:
		ev->type = 0;
		return -ENOMSG;
	}
}

}  // namespace dsmem::detail

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

// Join the module's events group, if the module is there: 0 (also when
// it is not), or -errno (-EPERM: the group needs CAP_NET_ADMIN, since its
// events carry peers, segments and grants).
int subscribe_module(ds_monitor *mon)
{
	int family, group, ret;

	mon->family = -1;
	if (resolve(DSMEM_GENL_NAME, DSMEM_GENL_MCGRP_EVENTS, &family, &group))
		return 0;
	ret = nl_socket_add_membership(mon->events.sk(), group);
	if (ret < 0)
		return nlerr_to_errno(ret);
	mon->family = family;
	return 0;
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
		int ret = subscribe_module(mon);

		// the module came, and its events are not ours to read
		if (ret)
			mon->error = ret;
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
	int ret = parse_event(msg, &ev);
	if (ret == -ENOMSG)
		return NL_SKIP;	// a newer module's event
	if (ret) {
		mon->error = ret;
		return NL_SKIP;
	}
	mon->queue.push_back(ev);
	return NL_OK;
}

// The next event of a type up to max_type; newer ones are dropped.
int next_event(struct ds_monitor *mon, struct ds_event *ev, int timeout_ms,
	       uint32_t max_type)
{
	using clock = std::chrono::steady_clock;
	const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);

	for (;;) {
		while (!mon->queue.empty()) {
			*ev = mon->queue.front();
			mon->queue.pop_front();
			if (ev->type <= max_type)
				return 0;
		}

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
	ret = subscribe_module(mon);
	if (ret)
		goto err_free_mon;
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

// An older version's event: its prefix of struct ds_event, and only the
// types up to the last one it knew.
template <typename Ev>
static int next_event_as(struct ds_monitor *mon, Ev *ev, int timeout_ms,
			 uint32_t last_type)
{
	ds_event full;
	int ret = next_event(mon, &full, timeout_ms, last_type);

	if (!ret)
		memcpy(ev, &full, sizeof(*ev));
	return ret;
}

// ds_monitor_next@DSUSER_1.0, @DSUSER_1.1, @DSUSER_1.2 and @@DSUSER_1.5:
// same SONAME, a larger struct ds_event each time; binaries built against
// an older version get the events they know.
DS_EXPORT int ds_monitor_next_v1_0(struct ds_monitor *mon, struct ds_event_v1_0 *ev,
				   int timeout_ms)
	__attribute__((symver("ds_monitor_next@DSUSER_1.0")));
DS_EXPORT int ds_monitor_next_v1_0(struct ds_monitor *mon, struct ds_event_v1_0 *ev,
				   int timeout_ms)
{
	return next_event_as(mon, ev, timeout_ms, DS_EVENT_MODULE_UNLOADED);
}

DS_EXPORT int ds_monitor_next_v1_1(struct ds_monitor *mon, struct ds_event_v1_1 *ev,
				   int timeout_ms)
	__attribute__((symver("ds_monitor_next@DSUSER_1.1")));
DS_EXPORT int ds_monitor_next_v1_1(struct ds_monitor *mon, struct ds_event_v1_1 *ev,
				   int timeout_ms)
{
	return next_event_as(mon, ev, timeout_ms, DS_EVENT_SEG_DEL);
}

DS_EXPORT int ds_monitor_next_v1_2(struct ds_monitor *mon, struct ds_event_v1_2 *ev,
				   int timeout_ms)
	__attribute__((symver("ds_monitor_next@DSUSER_1.2")));
DS_EXPORT int ds_monitor_next_v1_2(struct ds_monitor *mon, struct ds_event_v1_2 *ev,
				   int timeout_ms)
{
	return next_event_as(mon, ev, timeout_ms, DS_EVENT_TRACE_STOP);
}

DS_EXPORT int ds_monitor_next_v1_5(struct ds_monitor *mon, struct ds_event *ev,
				   int timeout_ms)
	__attribute__((symver("ds_monitor_next@@DSUSER_1.5")));
DS_EXPORT int ds_monitor_next_v1_5(struct ds_monitor *mon, struct ds_event *ev,
				   int timeout_ms)
{
	return next_event(mon, ev, timeout_ms, UINT32_MAX);
}
