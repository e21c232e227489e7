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
/* nodes, peers, segments and the remote-memory data path */
#define DSMEM_FEAT_RDM		_BITULL(2)
/* RDMA object tokens and the three-tier token cache */
#define DSMEM_FEAT_TOKENCACHE	_BITULL(3)

/*
 * Global addresses.  A 64-bit remote address names a node, one of its
 * segments and a byte offset in that segment:
 *
 *   63        48 47        36 35                         0
 *  +------------+------------+----------------------------+
 *  |   node id  | segment id |           offset           |
 *  +------------+------------+----------------------------+
 *
 * Node and segment ids start at 1, so no valid address is below 2^36.
 */
#define DSMEM_GADDR_NODE_SHIFT	48
#define DSMEM_GADDR_SEG_SHIFT	36
#define DSMEM_GADDR_OFF_MASK	((1ULL << DSMEM_GADDR_SEG_SHIFT) - 1)
#define DSMEM_NODE_ID_MAX	0xffffU
#define DSMEM_SEG_ID_MAX	0xfffU
#define DSMEM_SEG_SIZE_MAX	(1ULL << DSMEM_GADDR_SEG_SHIFT)

#define DSMEM_GADDR(node, seg, off)					\
	(((__u64)(node) << DSMEM_GADDR_NODE_SHIFT) |			\
	 ((__u64)(seg) << DSMEM_GADDR_SEG_SHIFT) | (__u64)(off))
#define DSMEM_GADDR_NODE(a)	((__u32)((a) >> DSMEM_GADDR_NODE_SHIFT))
#define DSMEM_GADDR_SEG(a)						\
	((__u32)((a) >> DSMEM_GADDR_SEG_SHIFT) & DSMEM_SEG_ID_MAX)
#define DSMEM_GADDR_OFF(a)	((a) & DSMEM_GADDR_OFF_MASK)

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

/*
 * The data path.  A file descriptor is attached to one local node; its
 * requests name remote memory by global address and go out on that
 * node's connection to the addressed node.  Work is submitted in batches
 * (one ioctl per batch, never one per operation) and completes
 * asynchronously: poll() reports POLLIN while a finished task of this
 * descriptor is waiting to be queried.
 */

/**
 * struct dsmem_ioc_attach - DSMEM_IOC_ATTACH argument (needs CAP_NET_ADMIN)
 * @node_id:	the local node whose connections this descriptor uses
 * @flags:	must be 0
 */
struct dsmem_ioc_attach {
	__u32 node_id;
	__u32 flags;
};

#define DSMEM_IOC_ATTACH_SIZE_VER0	8
#define DSMEM_IOC_ATTACH	_IOWR(DSMEM_IOCTL_MAGIC, 0x01, struct dsmem_ioc_attach)

/* struct dsmem_ioc_mr_reg.flags */
#define DSMEM_MR_WRITABLE	0x01	/* remote reads may land in it */
#define DSMEM_MR_FLAGS_ALL	DSMEM_MR_WRITABLE

/**
 * struct dsmem_ioc_mr_reg - DSMEM_IOC_MR_REG argument
 * @addr:	in: start of the user buffer
 * @len:	in: its length in bytes (at most DSMEM_MR_LEN_MAX)
 * @flags:	in: DSMEM_MR_*
 * @handle:	out: names the buffer in struct dsmem_xfer_req.mr
 *
 * The pages are pinned until DSMEM_IOC_MR_DEREG or close(), so transfers
 * move data to and from them with no copy.
 */
struct dsmem_ioc_mr_reg {
	__u64 addr;
	__u64 len;
	__u32 flags;
	__u32 handle;
};

#define DSMEM_MR_LEN_MAX		(1ULL << 32)
#define DSMEM_IOC_MR_REG_SIZE_VER0	24
#define DSMEM_IOC_MR_REG	_IOWR(DSMEM_IOCTL_MAGIC, 0x02, struct dsmem_ioc_mr_reg)

/**
 * struct dsmem_ioc_mr_dereg - DSMEM_IOC_MR_DEREG argument
 * @handle:	a handle from DSMEM_IOC_MR_REG; -EBUSY while a task uses it
 * @__pad:	must be 0
 */
struct dsmem_ioc_mr_dereg {
	__u32 handle;
	__u32 __pad;
};

#define DSMEM_IOC_MR_DEREG_SIZE_VER0	8
#define DSMEM_IOC_MR_DEREG	_IOWR(DSMEM_IOCTL_MAGIC, 0x03, struct dsmem_ioc_mr_dereg)

enum dsmem_xfer_op {
	DSMEM_XFER_READ,	/* remote -> local */
	DSMEM_XFER_WRITE,	/* local -> remote */
	DSMEM_XFER_CAS,		/* 8 bytes: if *remote == compare_add, swap */
	DSMEM_XFER_FAA,		/* 8 bytes: *remote += compare_add */
	DSMEM_XFER_OP_MAX = DSMEM_XFER_FAA
};

/**
 * struct dsmem_xfer_req - one transfer of a batch
 * @opcode:	enum dsmem_xfer_op
 * @flags:	must be 0
 * @__pad:	must be 0
 * @mr:		handle of a registered buffer, or 0: then @local is a plain
 *		user address, pinned for the life of the task
 * @local:	offset into the buffer @mr (its source_offset), or address
 * @remote:	global address (DSMEM_GADDR); 8-byte aligned for CAS/FAA
 * @len:	bytes to move; exactly 8 for CAS and FAA, which store the
 *		remote value found before the operation at @local
 * @compare_add: CAS: the expected value; FAA: the addend
 * @swap:	CAS: the value to store
 */
struct dsmem_xfer_req {
	__u8 opcode;
	__u8 flags;
	__u16 __pad;
	__u32 mr;
	__u64 local;
	__u64 remote;
	__u64 len;
	__u64 compare_add;
	__u64 swap;
};

/**
 * struct dsmem_xfer_status - the outcome of one transfer
 * @status:	0 or a negative errno
 * @__pad:	0
 * @bytes:	bytes moved
 */
struct dsmem_xfer_status {
	__s32 status;
	__u32 __pad;
	__u64 bytes;
};

/* struct dsmem_ioc_submit.flags */
#define DSMEM_SUBMIT_WAIT	0x01	/* return only when the task is done */
#define DSMEM_SUBMIT_RELEASE	0x02	/* with WAIT: forget it once done */
#define DSMEM_SUBMIT_FLAGS_ALL	(DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE)

#define DSMEM_SUBMIT_REQS_MAX	4096	/* transfers in one batch */
#define DSMEM_TASKS_MAX		1024	/* unreleased tasks per descriptor */

/**
 * struct dsmem_ioc_submit - DSMEM_IOC_SUBMIT argument
 * @reqs:	in: user pointer to @nr struct dsmem_xfer_req
 * @nr:		in: 1 .. DSMEM_SUBMIT_REQS_MAX
 * @req_size:	in: sizeof(struct dsmem_xfer_req) as the caller knows it
 * @flags:	in: DSMEM_SUBMIT_*
 * @result:	in: must be 0; out, with DSMEM_SUBMIT_WAIT: the status of
 *		the first transfer that failed, 0 when all succeeded
 * @task:	out: the task id, for DSMEM_IOC_TASK; 0 when released
 *
 * WAIT | RELEASE makes a synchronous call one ioctl: the task is done
 * and forgotten on return, and @result says how it went.
 *
 * A request that cannot start (bad address, no grant, peer down) does
 * not fail the batch: its status says why.  The ioctl itself fails only
 * when the batch as a whole is malformed.
 */
struct dsmem_ioc_submit {
	__u64 reqs;
	__u32 nr;
	__u32 req_size;
	__u32 flags;
	__s32 result;
	__u64 task;
};

#define DSMEM_IOC_SUBMIT_SIZE_VER0	32
#define DSMEM_IOC_SUBMIT	_IOWR(DSMEM_IOCTL_MAGIC, 0x04, struct dsmem_ioc_submit)

/* struct dsmem_ioc_task.flags */
#define DSMEM_TASK_WAIT		0x01	/* sleep until the task is done */
#define DSMEM_TASK_RELEASE	0x02	/* forget a done task after reading */
#define DSMEM_TASK_FLAGS_ALL	(DSMEM_TASK_WAIT | DSMEM_TASK_RELEASE)

/* struct dsmem_ioc_task.state */
enum dsmem_task_state {
	DSMEM_TASK_PENDING,	/* transfers still in flight */
	DSMEM_TASK_COMPLETE,	/* every transfer succeeded */
	DSMEM_TASK_FAILED,	/* done; at least one transfer failed */
};

/**
 * struct dsmem_ioc_task - DSMEM_IOC_TASK argument (QueryTask)
 * @task:	in: a task id from DSMEM_IOC_SUBMIT
 * @status:	in: user pointer to @nr struct dsmem_xfer_status, or 0
 * @nr:		in: entries at @status (at most the batch's size)
 * @flags:	in: DSMEM_TASK_*
 * @state:	out: enum dsmem_task_state
 * @done:	out: transfers finished so far
 * @bytes:	out: bytes moved so far
 *
 * Statuses are written only once the task is done.  A wait interrupted
 * by a signal returns -EINTR and leaves the task as it was.
 */
struct dsmem_ioc_task {
	__u64 task;
	__u64 status;
	__u32 nr;
	__u32 flags;
	__u32 state;
	__u32 done;
	__u64 bytes;
};

#define DSMEM_IOC_TASK_SIZE_VER0	40
#define DSMEM_IOC_TASK		_IOWR(DSMEM_IOCTL_MAGIC, 0x05, struct dsmem_ioc_task)

#endif /* _UAPI_LINUX_DSMEM_H */
