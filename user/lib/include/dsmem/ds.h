/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libdsuser -- the C ABI of dsmem's userspace library.
 *
 * Conventions: functions are ds_<object>_<verb>; they return 0 or a negative
 * errno; objects are opaque handles.  After a failure, ds_ctx_errmsg()
 * gives the kernel's extended-ack text (or the library's own explanation).
 * A context is not thread-safe; use one per thread.
 */
#ifndef DSMEM_DS_H
#define DSMEM_DS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this library's ABI: the SONAME's major number. */
#define DS_LIB_ABI_VERSION	1

#define DS_NAME_MAX		64
#define DS_DEV_PORTS_MAX	8

struct ds_ctx;
struct ds_monitor;

struct ds_version {
	char module_version[32];
	uint32_t abi_version;		/* module's DSMEM_ABI_VERSION */
	uint32_t family_version;	/* generic netlink family version */
	uint64_t features;		/* DSMEM_FEAT_* */
	uint64_t reserved[4];
};

struct ds_port_info {
	uint32_t index;			/* 1-based */
	uint8_t state;			/* enum ib_port_state: 4 = ACTIVE */
	uint8_t link_layer;		/* 1 InfiniBand, 2 Ethernet */
	uint16_t reserved0;
	uint32_t active_mtu;		/* bytes */
	char netdev[16];		/* "" when the port has none */
};

struct ds_dev_info {
	uint32_t index;			/* the RDMA core's device index */
	uint32_t port_count;
	char name[DS_NAME_MAX];
	char fw_version[DS_NAME_MAX];
	uint64_t node_guid;
	uint8_t node_type;		/* enum rdma_node_type: 1 CA, 4 RNIC */
	uint8_t atomic_cap;		/* 0 none, 1 HCA, 2 global */
	uint16_t nports;		/* entries filled in ports[] */
	uint32_t max_qp;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_qp_wr;
	uint32_t reserved0;
	struct ds_port_info ports[DS_DEV_PORTS_MAX];
	uint64_t reserved[4];
};

struct ds_stat {
	char name[DS_NAME_MAX];
	uint64_t value;
};

enum ds_event_type {
	DS_EVENT_DEV_NEW = 1,		/* an RDMA device appeared */
	DS_EVENT_DEV_DEL,		/* an RDMA device went away (index, name) */
	DS_EVENT_DEV_RENAME,		/* an RDMA device changed its name */
	DS_EVENT_MODULE_LOADED,		/* dsmem.ko registered its family */
	DS_EVENT_MODULE_UNLOADED,	/* dsmem.ko went away */
};

struct ds_event {
	uint32_t type;			/* enum ds_event_type */
	uint32_t reserved0;
	struct ds_dev_info dev;		/* DEV_* events */
};

/* Library identity; no context needed. */
const char *ds_lib_version(void);
unsigned int ds_lib_abi_version(void);

/*
 * Open a control context (a generic netlink socket).  Fails with -ENOENT,
 * and a message saying so, when the dsmem module is not loaded.
 */
int ds_ctx_open(struct ds_ctx **ctxp);
void ds_ctx_close(struct ds_ctx *ctx);
/* Text for the last failure on this context; "" when there is none. */
const char *ds_ctx_errmsg(const struct ds_ctx *ctx);
/*
 * Open /dev/dsmem and check that the module speaks this library's ABI
 * (-EPROTO otherwise).  The data path does this itself; it is exposed so
 * tools can report it.
 */
int ds_ctx_chrdev_version(struct ds_ctx *ctx, struct ds_version *v);

int ds_version_get(struct ds_ctx *ctx, struct ds_version *v);

/* All devices; free the array with ds_dev_list_free(). */
int ds_dev_list(struct ds_ctx *ctx, struct ds_dev_info **devs, size_t *count);
void ds_dev_list_free(struct ds_dev_info *devs);
int ds_dev_get(struct ds_ctx *ctx, const char *name, struct ds_dev_info *dev);
int ds_dev_get_by_index(struct ds_ctx *ctx, uint32_t index,
			struct ds_dev_info *dev);

/* Module counters; free the array with ds_stats_free(). */
int ds_stats_get(struct ds_ctx *ctx, struct ds_stat **stats, size_t *count);
void ds_stats_free(struct ds_stat *stats);
/* Needs CAP_NET_ADMIN. */
int ds_stats_reset(struct ds_ctx *ctx);

/*
 * Event monitor: device events from the "events" group, and the module's
 * own arrival and departure (it keeps listening across a reload).
 * It does not hold the module: rmmod works while a monitor is open.
 */
int ds_monitor_open(struct ds_monitor **monp);
void ds_monitor_close(struct ds_monitor *mon);
/* A file descriptor to poll() for POLLIN. */
int ds_monitor_fd(const struct ds_monitor *mon);
/*
 * Next event: 0 and *ev filled; -EAGAIN when timeout_ms (-1: forever)
 * passed first; -EINTR when a signal came; another -errno on failure.
 */
int ds_monitor_next(struct ds_monitor *mon, struct ds_event *ev,
		    int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* DSMEM_DS_H */
