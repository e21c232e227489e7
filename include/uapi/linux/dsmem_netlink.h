/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * dsmem: generic netlink family "dsmem".
 * Documentation/netlink/specs/dsmem.yaml is the reference for this file.
 *
 * Requests are strictly validated: an attribute an operation does not take,
 * a wrong length or a reserved header field set is refused with -EINVAL and
 * an extended-ack message naming the offending attribute.  Operations that
 * change state require CAP_NET_ADMIN.
 */
#ifndef _UAPI_LINUX_DSMEM_NETLINK_H
#define _UAPI_LINUX_DSMEM_NETLINK_H

#define DSMEM_GENL_NAME		"dsmem"
#define DSMEM_GENL_VERSION	1
#define DSMEM_GENL_MCGRP_EVENTS	"events"

enum dsmem_cmd {
	DSMEM_CMD_UNSPEC,
	DSMEM_CMD_VERSION_GET,	/* do: module, ABI and family versions */
	DSMEM_CMD_DEV_GET,	/* do: one device by index or name; dump: all */
	DSMEM_CMD_DEV_NEW,	/* notification: a device appeared */
	DSMEM_CMD_DEV_DEL,	/* notification: a device went away */
	DSMEM_CMD_DEV_RENAME,	/* notification: a device changed its name */
	DSMEM_CMD_STATS_GET,	/* do: module counters */
	DSMEM_CMD_STATS_RESET,	/* do (admin): zero the module counters */

	__DSMEM_CMD_MAX,
	DSMEM_CMD_MAX = __DSMEM_CMD_MAX - 1
};

enum dsmem_attr {
	DSMEM_ATTR_UNSPEC,
	DSMEM_ATTR_PAD,
	DSMEM_ATTR_MODULE_VERSION,	/* string */
	DSMEM_ATTR_ABI_VERSION,		/* u32 */
	DSMEM_ATTR_FAMILY_VERSION,	/* u32 */
	DSMEM_ATTR_FEATURES,		/* u64, DSMEM_FEAT_* */
	DSMEM_ATTR_DEV_INDEX,		/* u32, the RDMA core's device index */
	DSMEM_ATTR_DEV_NAME,		/* string, e.g. "rxe0" */
	DSMEM_ATTR_DEV_NODE_GUID,	/* u64, host byte order */
	DSMEM_ATTR_DEV_NODE_TYPE,	/* u8, enum rdma_node_type */
	DSMEM_ATTR_DEV_FW_VERSION,	/* string */
	DSMEM_ATTR_DEV_PORT_COUNT,	/* u32 */
	DSMEM_ATTR_DEV_PORTS,		/* nest of DSMEM_ATTR_PORT entries */
	DSMEM_ATTR_DEV_MAX_QP,		/* u32 */
	DSMEM_ATTR_DEV_MAX_CQE,		/* u32 */
	DSMEM_ATTR_DEV_MAX_MR,		/* u32 */
	DSMEM_ATTR_DEV_MAX_QP_WR,	/* u32 */
	DSMEM_ATTR_DEV_ATOMIC_CAP,	/* u8, enum ib_atomic_cap */
	DSMEM_ATTR_PORT,		/* nest, enum dsmem_port_attr */
	DSMEM_ATTR_STATS,		/* nest of DSMEM_ATTR_STAT entries */
	DSMEM_ATTR_STAT,		/* nest, enum dsmem_stat_attr */

	__DSMEM_ATTR_MAX,
	DSMEM_ATTR_MAX = __DSMEM_ATTR_MAX - 1
};

enum dsmem_port_attr {
	DSMEM_PORT_ATTR_UNSPEC,
	DSMEM_PORT_ATTR_INDEX,		/* u32, 1-based */
	DSMEM_PORT_ATTR_STATE,		/* u8, enum ib_port_state */
	DSMEM_PORT_ATTR_ACTIVE_MTU,	/* u32, bytes */
	DSMEM_PORT_ATTR_LINK_LAYER,	/* u8, 1 InfiniBand, 2 Ethernet */
	DSMEM_PORT_ATTR_NETDEV,		/* string, RoCE/iWARP only */

	__DSMEM_PORT_ATTR_MAX,
	DSMEM_PORT_ATTR_MAX = __DSMEM_PORT_ATTR_MAX - 1
};

enum dsmem_stat_attr {
	DSMEM_STAT_ATTR_UNSPEC,
	DSMEM_STAT_ATTR_PAD,
	DSMEM_STAT_ATTR_NAME,		/* string */
	DSMEM_STAT_ATTR_VALUE,		/* u64 */

	__DSMEM_STAT_ATTR_MAX,
	DSMEM_STAT_ATTR_MAX = __DSMEM_STAT_ATTR_MAX - 1
};

#endif /* _UAPI_LINUX_DSMEM_NETLINK_H */
