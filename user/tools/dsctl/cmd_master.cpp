// SPDX-License-Identifier: BSD-2-Clause
// dsctl master [show [master HOST:PORT[,...]]]: the object store's master,
// dsctl master drain segment ID [deadline SECONDS]: a segment drained,
// dsctl master monitor: the pool's events (a segment draining...),
// its leadership and its metadata; and the pool's segments as the master
// sees them, for dsctl segment show pool / segment add pool.
#include <cstdlib>
#include <cstring>

#include "dsctl.hpp"
#include "store_cli.hpp"

namespace dsctl {

namespace {

// The master's message when it gave one, else the error's text.
std::string why(int ret, const char *errbuf)
{
	return *errbuf ? std::string(errbuf) : std::string(strerror(-ret));
}

int master_show(env &e)
{
	std::string masters, err;
	if (!parse_master_only(e.words, masters, err))
		fail(err);
	struct ds_store_master_info info{};
	char errbuf[256] = "";
	int ret = ds_store_master_info(masters.c_str(), &info, errbuf, sizeof(errbuf));
	if (ret < 0)
		fail("cannot reach the master at " + masters + ": " + why(ret, errbuf));
	e.out.begin_list();
	e.out.add(master_record(info));
	return 0;
}

// dsctl master drain segment ID [deadline SECONDS]: the pool's segment
// ID's replicas moved to other segments, then it is removed
int master_drain(env &e)
{
	drain_args a;
	std::string err;
	if (!parse_drain(e.words, a, err))
		fail(err);
	uint64_t moved = 0;
	char errbuf[512] = "";
	int ret = ds_store_segment_drain(a.masters.c_str(), a.segment, a.deadline_s * 1000, &moved,
					 errbuf, sizeof(errbuf));
	if (ret < 0)
		fail("cannot drain segment " + std::to_string(a.segment) + ": " + why(ret, errbuf));
	e.out.begin_list();
	e.out.add(drained_record(a.segment, moved));
	return 0;
}

struct monitor_state {
	env *e;
	uint64_t count, seen;
};

int on_event(const ds_store_event *ev, void *arg)
{
	auto *m = static_cast<monitor_state *>(arg);
	m->e->out.stream(store_event_record(*ev));
	return m->count && ++m->seen >= m->count;
}

// dsctl master monitor [count N] [time SECONDS]: the pool's events as the
// leader pushes them (a segment draining, added, removed; members)
int master_monitor(env &e)
{
	monitor_args a;
	std::string err;
	if (!parse_store_monitor(e.words, a, err))
		fail(err);
	monitor_state m{ &e, a.count, 0 };
	char errbuf[512] = "";
	int ret = ds_store_watch(a.masters.c_str(), static_cast<uint32_t>(a.seconds * 1000),
				 on_event, &m, errbuf, sizeof(errbuf));
	if (ret < 0)
		fail("cannot monitor the master at " + a.masters + ": " + why(ret, errbuf));
	return 0;
}

const command master_cmds[] = {
	{ "show", master_show },
	{ "list", master_show },
	{ "drain", master_drain },
	{ "monitor", master_monitor },
};

}  // namespace

// dsctl segment show pool [master ADDRS] [node N]
int segment_pool_show(env &e)
{
	std::string masters, err;
	uint32_t node = 0;
	if (!parse_pool_show(e.words, masters, node, err))
		fail(err);
	c_array<ds_store_segment_info> segs;
	char errbuf[256] = "";
	int ret = ds_store_segment_list(masters.c_str(), &segs.data, &segs.count, errbuf,
					sizeof(errbuf));
	if (ret < 0)
		fail("cannot list the pool's segments at " + masters + ": " + why(ret, errbuf));
	e.out.begin_list();
	for (const auto &s : segs)
		if (!node || (s.type == 0 && s.node_id == node))
			e.out.add(pool_segment_record(s));
	return 0;
}

// dsctl segment add pool traddr IP [trsvcid N] subnqn NQN size SIZE [base OFF]
int segment_pool_add(env &e)
{
	pool_add_args a;
	std::string err;
	if (!parse_pool_add(e.words, a, err))
		fail(err);
	uint64_t id = 0;
	char errbuf[256] = "";
	int ret = ds_store_nvmeof_register(a.masters.c_str(), a.traddr.c_str(), a.trsvcid,
					   a.subnqn.c_str(), a.base, a.size, &id, errbuf,
					   sizeof(errbuf));
	if (ret < 0)
		fail("cannot add " + a.subnqn + " at " + a.traddr + " to the pool: " +
		     why(ret, errbuf));
	e.out.begin_list();
	e.out.add(pool_added_record(a, id));
	return 0;
}

extern const object master_object;
const object master_object = {
	"master", master_cmds, sizeof(master_cmds) / sizeof(master_cmds[0]),
	"Usage: dsctl master [{ show | list } [master HOST:PORT[,HOST:PORT...]]]\n"
	"       dsctl master drain segment ID [deadline SECONDS] [master HOST:PORT[,...]]\n"
	"       dsctl master monitor [count N] [time SECONDS] [master HOST:PORT[,...]]\n"
	"where  master defaults to $DSMEM_MASTERS\n",
	false,
};

}  // namespace dsctl
