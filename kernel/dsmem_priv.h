/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: disaggregated memory over RDMA -- private cross-file declarations.
 */
#ifndef _DSMEM_PRIV_H
#define _DSMEM_PRIV_H

#include <linux/types.h>
#include <linux/percpu.h>
#include <rdma/ib_verbs.h>

#include <uapi/linux/dsmem.h>
#include <uapi/linux/dsmem_netlink.h>

#define DSMEM_MODULE_VERSION	"0.1.0"

/*
 * Limits, all in one place.
 */
/* largest ioctl argument the dispatcher copies in; checked per entry */
#define DSMEM_IOCTL_ARG_MAX	256
/* ports reported per device; more are summarised by the port count */
#define DSMEM_DEV_PORTS_MAX	64

/* One RDMA device as dsmem sees it; created by ib_client .add. */
struct dsmem_device {
	struct ib_device *ibdev;	/* ibdev->index keys dsmem_devs */
	char name[IB_DEVICE_NAME_MAX];	/* under dsmem_devs_lock */
};

/*
 * Counters: one enum, one name table (dsmem_stats.c), per-CPU storage.
 * The names are the ABI seen over netlink; the values of the enum are not.
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
	DSMEM_STAT_NR
};

struct dsmem_stats {
	u64 v[DSMEM_STAT_NR];
};

DECLARE_PER_CPU(struct dsmem_stats, dsmem_stats);

static inline void dsmem_stat_inc(enum dsmem_stat s)
{
	this_cpu_inc(dsmem_stats.v[s]);
}

const char *dsmem_stat_name(enum dsmem_stat s);
u64 dsmem_stat_read(enum dsmem_stat s);
void dsmem_stats_reset(void);

/* dsmem_dev.c: the ib_client and the device table */
extern struct ib_client dsmem_ib_client;
/*
 * Lock order: ib_core's device and client locks (held around .add/.remove)
 *   -> dsmem_devs_lock -> net_rwsem (read, to announce events per netns)
 *   and -> the device's GID table lock (rdma_get_gid_attr).
 * dsmem_devs_lock protects dsmem_devs and every dsmem_device's name; a
 * device found in dsmem_devs under the lock has a live ibdev.
 */
extern struct mutex dsmem_devs_lock;
extern struct xarray dsmem_devs;
void dsmem_devs_check_empty(void);

/* dsmem_netlink.c */
int dsmem_nl_init(void);
void dsmem_nl_exit(void);
void dsmem_nl_notify_dev(struct dsmem_device *sdev, u8 cmd);

/* dsmem_chrdev.c */
int dsmem_chrdev_init(void);
void dsmem_chrdev_exit(void);

/* dsmem_main.c */
u64 dsmem_features(void);

#endif /* _DSMEM_PRIV_H */
