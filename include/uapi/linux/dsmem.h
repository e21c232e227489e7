/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * dsmem: disaggregated memory over RDMA -- character device ABI (/dev/dsmem).
 *
 * Every ioctl argument is a size-versioned struct: the size is the one
 * encoded in the ioctl number (_IOC_SIZE).  The kernel accepts any size from
 * the first published size of a struct up to, and beyond, its own size:
 *  - smaller than the first published size:            -EINVAL
 *  - larger than the kernel's, with non-zero tail bytes: -E2BIG
 *  - an unknown command number:                          -ENOTTY
 * Output is copied back up to the smaller of the two sizes.  New fields are
 * only ever appended, so old binaries keep working against new modules and
 * new binaries learn what an old module supports from the feature bits.
 */
#ifndef _UAPI_LINUX_DSMEM_H
#define _UAPI_LINUX_DSMEM_H

#include <linux/const.h>
#include <linux/types.h>
#include <linux/ioctl.h>

#define DSMEM_DEVICE_NAME	"dsmem"

/* Bumped only on an incompatible change; additions use feature bits. */
#define DSMEM_ABI_VERSION	1

/* Feature bits reported by DSMEM_IOC_VERSION and the netlink VERSION_GET. */
/* device add/remove announced on the "events" multicast group */
#define DSMEM_FEAT_DEV_EVENTS	_BITULL(0)
/* counters readable and resettable over netlink */
#define DSMEM_FEAT_STATS	_BITULL(1)

#define DSMEM_IOCTL_MAGIC	0xD5

/* Flags for struct dsmem_ioc_version.flags: none defined yet. */
#define DSMEM_VERSION_FLAGS_ALL	0

/**
 * struct dsmem_ioc_version - DSMEM_IOC_VERSION argument
 * @flags:	in: must be 0
 * @abi_version:	out: DSMEM_ABI_VERSION of the running module
 * @features:	out: mask of DSMEM_FEAT_*
 * @max_ioctl_nr:	out: highest ioctl number the module dispatches
 * @__pad:	must be 0
 * @module_version:	out: NUL-terminated module version string
 */
struct dsmem_ioc_version {
	__u32 flags;
	__u32 abi_version;
	__u64 features;
	__u32 max_ioctl_nr;
	__u32 __pad;
	char module_version[32];
};

#define DSMEM_IOC_VERSION_SIZE_VER0	56	/* first published size */

#define DSMEM_IOC_VERSION	_IOWR(DSMEM_IOCTL_MAGIC, 0x00, struct dsmem_ioc_version)

#endif /* _UAPI_LINUX_DSMEM_H */
