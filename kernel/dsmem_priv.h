/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: disaggregated memory over RDMA -- what every layer of the module
 * uses: its limits, counters, workqueue and the RDMA devices it sees.
 * Each subsystem keeps its own declarations beside it: rdm/dsmem_rdm.h,
 * tokencache/dsmem_tc.h, slope_fault/dsmem_slope.h, dsmem_netlink.h.
 */
#ifndef _DSMEM_PRIV_H
#define _DSMEM_PRIV_H

#include <linux/types.h>
#include <linux/percpu.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include <uapi/linux/dsmem.h>

#include "dsmem_limits.h"

#define DSMEM_MODULE_VERSION	"0.1.0"

/* One RDMA device as dsmem sees it; created by ib_client .add. */
struct dsmem_device {
	struct ib_device *ibdev;	/* ibdev->index keys dsmem_devs */
	char name[IB_DEVICE_NAME_MAX];	/* under dsmem_devs_lock */
	/* a port going down or up: its connections are told (dsmem_dev.c) */
	struct ib_event_handler event_handler;
	struct work_struct port_work;
};

/*
 * Counters: one enum, one name table (dsmem_stats.c), per-CPU storage in
 * each network namespace, so that a container reads and resets its own.
 * Each count goes to the namespace of the node it concerns, or of the
 * process that made the call (ioctls); what belongs to the whole host --
 * its RDMA devices, the token cache -- to the initial namespace.  The
 * names are the ABI seen over netlink; the values of the enum are not.
 */
enum dsmem_stat {
	DSMEM_STAT_DEV_ADDED,
	DSMEM_STAT_DEV_REMOVED,
	DSMEM_STAT_DEV_ADD_FAILED,
	DSMEM_STAT_IOCTL_CALLS,
	DSMEM_STAT_IOCTL_UNKNOWN,
	DSMEM_STAT_IOCTL_SHORT,
	DSMEM_STAT_IOCTL_NONZERO_TAIL,
	DSMEM_STAT_IOCTL_DENIED,
	DSMEM_STAT_IOCTL_FAULT,
	DSMEM_STAT_NL_EVENTS,
	DSMEM_STAT_NL_EVENTS_DROPPED,
	DSMEM_STAT_NODE_ADDED,
	DSMEM_STAT_NODE_REMOVED,
	DSMEM_STAT_NODE_DEV_LOST,
	DSMEM_STAT_CONN_ESTABLISHED,
	DSMEM_STAT_CONN_FAILED,
	DSMEM_STAT_CONN_LOST,
	DSMEM_STAT_CONN_REJECTED,
	DSMEM_STAT_CONN_IO_TIMEOUT,
	DSMEM_STAT_CONN_REG_TIMEOUT,
	DSMEM_STAT_MR_REG_POSTED,
	DSMEM_STAT_CONN_RNR_EXCEEDED,
	DSMEM_STAT_CONN_POOL_FULL,
	DSMEM_STAT_CONN_UNKNOWN_PEER,
	DSMEM_STAT_CONN_ID_IN_USE,
	DSMEM_STAT_CONN_OWN_ID,
	DSMEM_STAT_CONN_WRONG_NODE,
	DSMEM_STAT_CONN_TIMEWAIT_TIMEOUT,
	DSMEM_STAT_AUTH_OK,
	DSMEM_STAT_AUTH_FAILED,
	DSMEM_STAT_AUTH_MISMATCH,
	DSMEM_STAT_AUTH_TIMEOUT,
	DSMEM_STAT_AUTH_NOKEY,
	DSMEM_STAT_RECONNECTS,
	DSMEM_STAT_SEG_ADDED,
	DSMEM_STAT_SEG_REMOVED,
	DSMEM_STAT_SEG_NOMEM,
	DSMEM_STAT_GRANTS_SENT,
	DSMEM_STAT_REVOKES_SENT,
	DSMEM_STAT_MSG_SENT,
	DSMEM_STAT_MSG_RECV,
	DSMEM_STAT_MSG_BAD,
	DSMEM_STAT_MSG_TIMEOUT,
	DSMEM_STAT_MSG_DENIED,
	DSMEM_STAT_MSG_RANGE,
	DSMEM_STAT_MSG_WINDOW_WAITS,
	DSMEM_STAT_XFER_REQS,
	DSMEM_STAT_XFER_SLICES,
	DSMEM_STAT_XFER_BYTES,
	DSMEM_STAT_XFER_ERRORS,
	DSMEM_STAT_XFER_DENIED,
	DSMEM_STAT_XFER_RANGE,
	DSMEM_STAT_XFER_NOCONN,
	DSMEM_STAT_XFER_BAD,
	DSMEM_STAT_TASKS,
	DSMEM_STAT_TC_TOKENS,
	DSMEM_STAT_TC_RESOLVE_FAILED,
	DSMEM_STAT_TC_PAGE_FAILED,
	DSMEM_STAT_TC_PAGE_MISPLACED,
	DSMEM_STAT_TC_TRACE_FAILED,
	DSMEM_STAT_SLOPE_LEASE_DENIED,
	DSMEM_STAT_SLOPE_FREE_DENIED,
	DSMEM_STAT_SLOPE_BEGIN_DENIED,
	DSMEM_STAT_SLOPE_QUOTA_MIGS,
	DSMEM_STAT_SLOPE_QUOTA_BYTES,
	DSMEM_STAT_SLOPE_EXPIRED,
	DSMEM_STAT_SLOPE_INCOMING_CUT,
	DSMEM_STAT_SLOPE_BEGIN_NOMEM,
	DSMEM_STAT_RINGS_REFUSED,
	DSMEM_STAT_XFER_LOCAL,
	DSMEM_STAT_PORT_DOWN,
	DSMEM_STAT_PORT_UP,
	DSMEM_STAT_CONN_PORT_DOWN,
	DSMEM_STAT_PATH_UP,
	DSMEM_STAT_PATH_DOWN,
	DSMEM_STAT_PATH_REFUSED,
	DSMEM_STAT_XFER_PATH_SLICES,
	DSMEM_STAT_XFER_FAILOVER,
	DSMEM_STAT_SLOPE_FAULT_WAITS,
	DSMEM_STAT_SLOPE_ROOT_PUSHED,
	DSMEM_STAT_XFER_LATE,
	DSMEM_STAT_MR_NODE_FULL,
	DSMEM_STAT_NR
};

struct dsmem_stats {
	u64 v[DSMEM_STAT_NR];
};

struct dsmem_stats_net {
	struct dsmem_stats __percpu *stats;
};

extern unsigned int dsmem_stats_net_id;

/*
 * @net is alive: the caller holds it (a node, the caller's own).  Inline:
 * the data path counts every slice.
 */
static inline struct dsmem_stats __percpu *dsmem_stats_of(struct net *net)
{
	struct dsmem_stats_net *sn = net_generic(net, dsmem_stats_net_id);

	return sn->stats;
}

static inline void dsmem_stat_inc(struct net *net, enum dsmem_stat s)
{
	this_cpu_inc(dsmem_stats_of(net)->v[s]);
}

static inline void dsmem_stat_add(struct net *net, enum dsmem_stat s, u64 n)
{
	this_cpu_add(dsmem_stats_of(net)->v[s], n);
}

/* the host's own counts: its devices, the token cache */
#define dsmem_host_net()	(&init_net)

const char *dsmem_stat_name(enum dsmem_stat s);
u64 dsmem_stat_read(struct net *net, enum dsmem_stat s);
void dsmem_stats_reset(struct net *net);
int dsmem_stats_init(void);
void dsmem_stats_exit(void);

/* dsmem_wq.c: the module's workqueue, first up and last down */
extern struct workqueue_struct *dsmem_wq;
int dsmem_wq_init(void);
void dsmem_wq_exit(void);

/* rdm/dsmem_dev.c: the ib_client and the device table */
extern struct ib_client dsmem_ib_client;
/*
 * Lock order: ib_core's device and client locks (held around .add/.remove)
 *   -> dsmem_devs_lock -> net_rwsem (read, to announce events per netns)
 *   and -> the device's GID table lock (rdma_get_gid_attr)
 *   and -> the driver's own locks (query_port); never those under
 *   net_rwsem, which they may nest outside (rxe: usdev_lock -> rtnl_mutex
 *   -> net_rwsem).
 * dsmem_devs_lock protects dsmem_devs and every dsmem_device's name; a
 * device found in dsmem_devs under the lock has a live ibdev.
 */
extern struct mutex dsmem_devs_lock;
extern struct xarray dsmem_devs;
void dsmem_devs_check_empty(void);

/* what this module offers (DSMEM_FEAT_*): the version ioctl and netlink */
static inline u64 dsmem_features(void)
{
	return DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS | DSMEM_FEAT_RDM |
	       DSMEM_FEAT_TOKENCACHE | DSMEM_FEAT_SLOPE | DSMEM_FEAT_RINGS |
	       DSMEM_FEAT_MULTIPATH | DSMEM_FEAT_NUMA |
	       DSMEM_FEAT_SUBMIT_TIMEOUT | DSMEM_FEAT_NOT_AFTER |
	       DSMEM_FEAT_NODE_OWNER | DSMEM_FEAT_NODE_USERS;
}

#endif /* _DSMEM_PRIV_H */
