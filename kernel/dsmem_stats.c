// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: module counters, one set per network namespace.
 *
 * Per-CPU so that the data path never bounces a cache line for accounting;
 * a read sums all CPUs.  A reset races benignly with concurrent increments:
 * an increment that lands during the reset may survive it.
 */
#include <linux/build_bug.h>
#include <linux/percpu.h>

#include "dsmem_priv.h"

unsigned int dsmem_stats_net_id;

static __net_init int dsmem_stats_net_init(struct net *net)
{
	struct dsmem_stats_net *sn = net_generic(net, dsmem_stats_net_id);

	sn->stats = alloc_percpu(struct dsmem_stats);
	return sn->stats ? 0 : -ENOMEM;
}

static __net_exit void dsmem_stats_net_exit(struct net *net)
{
	struct dsmem_stats_net *sn = net_generic(net, dsmem_stats_net_id);

	free_percpu(sn->stats);
}

static struct pernet_operations dsmem_stats_net_ops = {
	.init = dsmem_stats_net_init,
	.exit = dsmem_stats_net_exit,
	.id = &dsmem_stats_net_id,
	.size = sizeof(struct dsmem_stats_net),
};

/* first up and last down: everything else counts */
int dsmem_stats_init(void)
{
	return register_pernet_subsys(&dsmem_stats_net_ops);
}

void dsmem_stats_exit(void)
{
	unregister_pernet_subsys(&dsmem_stats_net_ops);
}

static const char * const dsmem_stat_names[] = {
	[DSMEM_STAT_DEV_ADDED]		= "dev_added",
	[DSMEM_STAT_DEV_REMOVED]	= "dev_removed",
	[DSMEM_STAT_DEV_ADD_FAILED]	= "dev_add_failed",
	[DSMEM_STAT_IOCTL_CALLS]	= "ioctl_calls",
	[DSMEM_STAT_IOCTL_UNKNOWN]	= "ioctl_unknown",
	[DSMEM_STAT_IOCTL_SHORT]	= "ioctl_short",
	[DSMEM_STAT_IOCTL_NONZERO_TAIL]	= "ioctl_nonzero_tail",
	[DSMEM_STAT_IOCTL_DENIED]	= "ioctl_denied",
	[DSMEM_STAT_IOCTL_FAULT]	= "ioctl_fault",
	[DSMEM_STAT_NL_EVENTS]		= "nl_events",
	[DSMEM_STAT_NL_EVENTS_DROPPED]	= "nl_events_dropped",
	[DSMEM_STAT_NODE_ADDED]		= "node_added",
	[DSMEM_STAT_NODE_REMOVED]	= "node_removed",
	[DSMEM_STAT_NODE_DEV_LOST]	= "node_dev_lost",
	[DSMEM_STAT_CONN_ESTABLISHED]	= "conn_established",
	[DSMEM_STAT_CONN_FAILED]		= "conn_failed",
	[DSMEM_STAT_CONN_LOST]		= "conn_lost",
	[DSMEM_STAT_CONN_REJECTED]	= "conn_rejected",
	[DSMEM_STAT_CONN_IO_TIMEOUT]	= "conn_io_timeout",
	[DSMEM_STAT_CONN_REG_TIMEOUT]	= "conn_reg_timeout",
	[DSMEM_STAT_MR_REG_POSTED]	= "mr_reg_posted",
	[DSMEM_STAT_CONN_RNR_EXCEEDED]	= "conn_rnr_exceeded",
	[DSMEM_STAT_CONN_POOL_FULL]	= "conn_pool_full",
	[DSMEM_STAT_CONN_UNKNOWN_PEER]	= "conn_unknown_peer",
	[DSMEM_STAT_CONN_ID_IN_USE]	= "conn_id_in_use",
	[DSMEM_STAT_CONN_OWN_ID]		= "conn_own_id",
	[DSMEM_STAT_CONN_WRONG_NODE]	= "conn_wrong_node",
	[DSMEM_STAT_CONN_TIMEWAIT_TIMEOUT] = "conn_timewait_timeout",
	[DSMEM_STAT_AUTH_OK]		= "auth_ok",
	[DSMEM_STAT_AUTH_FAILED]	= "auth_failed",
	[DSMEM_STAT_AUTH_MISMATCH]	= "auth_mismatch",
	[DSMEM_STAT_AUTH_TIMEOUT]	= "auth_timeout",
	[DSMEM_STAT_AUTH_NOKEY]		= "auth_nokey",
	[DSMEM_STAT_RECONNECTS]		= "reconnects",
	[DSMEM_STAT_SEG_ADDED]		= "seg_added",
	[DSMEM_STAT_SEG_REMOVED]		= "seg_removed",
	[DSMEM_STAT_SEG_NOMEM]		= "seg_nomem",
	[DSMEM_STAT_GRANTS_SENT]		= "grants_sent",
	[DSMEM_STAT_REVOKES_SENT]	= "revokes_sent",
	[DSMEM_STAT_MSG_SENT]		= "msg_sent",
	[DSMEM_STAT_MSG_RECV]		= "msg_recv",
	[DSMEM_STAT_MSG_BAD]		= "msg_bad",
	[DSMEM_STAT_MSG_TIMEOUT]		= "msg_timeout",
	[DSMEM_STAT_MSG_DENIED]		= "msg_denied",
	[DSMEM_STAT_MSG_RANGE]		= "msg_range",
	[DSMEM_STAT_MSG_WINDOW_WAITS]	= "msg_window_waits",
	[DSMEM_STAT_XFER_REQS]		= "xfer_reqs",
	[DSMEM_STAT_XFER_SLICES]		= "xfer_slices",
	[DSMEM_STAT_XFER_BYTES]		= "xfer_bytes",
	[DSMEM_STAT_XFER_ERRORS]		= "xfer_errors",
	[DSMEM_STAT_XFER_DENIED]		= "xfer_denied",
	[DSMEM_STAT_XFER_RANGE]		= "xfer_range",
	[DSMEM_STAT_XFER_NOCONN]		= "xfer_noconn",
	[DSMEM_STAT_XFER_BAD]		= "xfer_bad",
	[DSMEM_STAT_TASKS]		= "tasks",
	[DSMEM_STAT_TC_TOKENS]		= "tc_tokens",
	[DSMEM_STAT_TC_RESOLVE_FAILED]	= "tc_resolve_failed",
	[DSMEM_STAT_TC_PAGE_FAILED]	= "tc_page_failed",
	[DSMEM_STAT_TC_PAGE_MISPLACED]	= "tc_page_misplaced",
	[DSMEM_STAT_TC_TRACE_FAILED]	= "tc_trace_failed",
	[DSMEM_STAT_SLOPE_LEASE_DENIED]	= "slope_lease_denied",
	[DSMEM_STAT_SLOPE_FREE_DENIED]	= "slope_free_denied",
	[DSMEM_STAT_SLOPE_BEGIN_DENIED]	= "slope_begin_denied",
	[DSMEM_STAT_SLOPE_QUOTA_MIGS]	= "slope_quota_migs",
	[DSMEM_STAT_SLOPE_QUOTA_BYTES]	= "slope_quota_bytes",
	[DSMEM_STAT_SLOPE_EXPIRED]	= "slope_expired",
	[DSMEM_STAT_SLOPE_INCOMING_CUT]	= "slope_incoming_cut",
	[DSMEM_STAT_SLOPE_BEGIN_NOMEM]	= "slope_begin_nomem",
	[DSMEM_STAT_RINGS_REFUSED]	= "rings_refused",
	[DSMEM_STAT_XFER_LOCAL]		= "xfer_local",
	[DSMEM_STAT_PORT_DOWN]		= "port_down",
	[DSMEM_STAT_PORT_UP]		= "port_up",
	[DSMEM_STAT_CONN_PORT_DOWN]	= "conn_port_down",
	[DSMEM_STAT_PATH_UP]		= "path_up",
	[DSMEM_STAT_PATH_DOWN]		= "path_down",
	[DSMEM_STAT_PATH_REFUSED]	= "path_refused",
	[DSMEM_STAT_XFER_PATH_SLICES]	= "xfer_path_slices",
	[DSMEM_STAT_XFER_FAILOVER]	= "xfer_failover",
	[DSMEM_STAT_SLOPE_FAULT_WAITS]	= "slope_fault_waits",
	[DSMEM_STAT_SLOPE_ROOT_PUSHED]	= "slope_root_pushed",
	[DSMEM_STAT_XFER_LATE]		= "xfer_late",
	[DSMEM_STAT_MR_NODE_FULL]	= "mr_node_full",
};

const char *dsmem_stat_name(enum dsmem_stat s)
{
	BUILD_BUG_ON(ARRAY_SIZE(dsmem_stat_names) != DSMEM_STAT_NR);
	return dsmem_stat_names[s];
}

u64 dsmem_stat_read(struct net *net, enum dsmem_stat s)
{
	struct dsmem_stats __percpu *stats = dsmem_stats_of(net);
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(stats, cpu)->v[s]);
	return sum;
}

void dsmem_stats_reset(struct net *net)
{
	struct dsmem_stats __percpu *stats = dsmem_stats_of(net);
	int cpu, s;

	for_each_possible_cpu(cpu)
		for (s = 0; s < DSMEM_STAT_NR; s++)
			WRITE_ONCE(per_cpu_ptr(stats, cpu)->v[s], 0);
}
