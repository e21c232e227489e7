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
/* Slope: the migratable range, its leases, dirty tracking and migration */
#define DSMEM_FEAT_SLOPE	_BITULL(4)
/* the data path's shared submission and completion rings */
#define DSMEM_FEAT_RINGS	_BITULL(5)
/* peers over every device pair of their nodes; DSMEM_XFER_F_UNORDERED */
#define DSMEM_FEAT_MULTIPATH	_BITULL(6)
/* node-new takes a device's NUMA node; small unordered transfers use it */
#define DSMEM_FEAT_NUMA		_BITULL(7)
/* struct dsmem_ioc_submit.timeout_ns: a synchronous batch's wait bounded */
#define DSMEM_FEAT_SUBMIT_TIMEOUT	_BITULL(8)
/* not_after_ns of struct dsmem_ioc_submit and dsmem_sqe: no late posts */
#define DSMEM_FEAT_NOT_AFTER	_BITULL(9)
/* nodes have an owner, a group and a mode; attaching checks them */
#define DSMEM_FEAT_NODE_OWNER	_BITULL(10)
/*
 * A node's users (its owner, group or mode) make its segments, grant them
 * and read its peers without CAP_NET_ADMIN; others see only its id, owner,
 * group and mode
 */
#define DSMEM_FEAT_NODE_USERS	_BITULL(11)

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
 * struct dsmem_ioc_attach - DSMEM_IOC_ATTACH argument
 * @node_id:	the local node whose connections this descriptor uses
 * @flags:	must be 0
 *
 * Checked as opening a file of the node's owner, group and mode for
 * reading and writing is (netlink node-owner, node-group, node-mode):
 * -EACCES when they do not allow it, unless the caller has CAP_NET_ADMIN
 * over the node's network namespace.
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

/*
 * struct dsmem_xfer_req.flags.  UNORDERED: the transfer need not keep its
 * place behind the descriptor's earlier ones to the same node, so it may
 * go over any of the peer's paths, a slice to each (striped); without
 * it, every transfer to a node takes one path, in order.
 */
#define DSMEM_XFER_F_UNORDERED	0x01
#define DSMEM_XFER_F_ALL	DSMEM_XFER_F_UNORDERED

/**
 * struct dsmem_xfer_req - one transfer of a batch
 * @opcode:	enum dsmem_xfer_op
 * @flags:	DSMEM_XFER_F_*
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
 *		the first transfer that failed, 0 when all succeeded, or
 *		-ETIME when @timeout_ns ran out first
 * @task:	out: the task id, for DSMEM_IOC_TASK; 0 when released
 * @timeout_ns:	in (DSMEM_FEAT_SUBMIT_TIMEOUT): with DSMEM_SUBMIT_WAIT, the
 *		longest the call may wait, in nanoseconds of CLOCK_MONOTONIC
 *		from its start (pinning the batch's buffers counts); 0: no
 *		bound.  Must be 0 without WAIT.
 * @not_after_ns: in (DSMEM_FEAT_NOT_AFTER): 0, or an instant of
 *		CLOCK_BOOTTIME after which no part of the batch's transfers
 *		is started (see below)
 *
 * WAIT | RELEASE makes a synchronous call one ioctl: the task is done
 * and forgotten on return, and @result says how it went.
 *
 * Without @timeout_ns the wait is not cut short by signals: transfers
 * always end, by completion or by the flush of a closing connection,
 * though the flush may take the connection's io_timeout_ms.  With it,
 * the wait ends at the deadline (at the granularity of the kernel's
 * tick), still not by a signal.  If the task is not done by then, the
 * ioctl returns 0 with @result -ETIME and the task left pending under
 * its id in @task, not released even if RELEASE was asked: its
 * transfers go on, their buffers stay in use until they end, and the
 * caller releases it with DSMEM_IOC_TASK once it is done.
 *
 * A request that cannot start (bad address, no grant, peer down) does
 * not fail the batch: its status says why.  The ioctl itself fails only
 * when the batch as a whole is malformed.
 *
 * With @not_after_ns the module reads the clock as it hands each slice of
 * a transfer to the device (after any wait for room on the connection,
 * and again for a slice sent on another path after its own was lost), or
 * copies each MiB of a transfer to the node's own segment: a transfer not
 * wholly started by then ends with -ETIMEDOUT.  Slices started before it
 * land or fail as usual, within the connection's io_timeout_ms.  A
 * program that may write a remote range only until some instant (a lease
 * on it) thus writes nothing there that starts later, however long the
 * program itself was stopped between its own look at the clock and the
 * call.
 */
struct dsmem_ioc_submit {
	__u64 reqs;
	__u32 nr;
	__u32 req_size;
	__u32 flags;
	__s32 result;
	__u64 task;
	__u64 timeout_ns;
	__u64 not_after_ns;
};

#define DSMEM_IOC_SUBMIT_SIZE_VER0	32
#define DSMEM_IOC_SUBMIT_SIZE_VER1	40	/* + timeout_ns */
#define DSMEM_IOC_SUBMIT_SIZE_VER2	48	/* + not_after_ns */
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

/*
 * Slope: live migration of objects between nodes without serialization.
 *
 * Every node's processes map /dev/dsmem at the same virtual addresses:
 * mmap(DSMEM_SLOPE_BASE + off, len, PROT_READ | PROT_WRITE,
 * MAP_SHARED | MAP_FIXED_NOREPLACE, fd, off) on a descriptor attached to
 * the node; any other placement fails with -EINVAL.  The module owns the
 * pages: an address is backed on a node only while that node owns it, so
 * an object whose pages move to another node works there unchanged.
 *
 * The range is cut into 1 GiB leases.  Node i (1 <= i <=
 * DSMEM_SLOPE_NODES_MAX) is responsible for the i-th share of
 * DSMEM_SLOPE_LEASES_PER_NODE leases and hands them out, to itself or to
 * the peers that ask; a node allocates only inside leases it holds.
 */
#define DSMEM_SLOPE_BASE		0x300000000000ULL
#define DSMEM_SLOPE_LEASE_SHIFT		30
#define DSMEM_SLOPE_LEASE_SIZE		(1ULL << DSMEM_SLOPE_LEASE_SHIFT)
#define DSMEM_SLOPE_LEASES_PER_NODE	64
#define DSMEM_SLOPE_NODES_MAX		64
#define DSMEM_SLOPE_SHARE_SIZE						\
	(DSMEM_SLOPE_LEASES_PER_NODE * DSMEM_SLOPE_LEASE_SIZE)
#define DSMEM_SLOPE_SIZE	(DSMEM_SLOPE_NODES_MAX * DSMEM_SLOPE_SHARE_SIZE)
/* the unit of an object allocated with DSMEM_SLOPE_HUGE */
#define DSMEM_SLOPE_HUGE_SHIFT		21
#define DSMEM_SLOPE_HUGE_SIZE		(1ULL << DSMEM_SLOPE_HUGE_SHIFT)

/* the node responsible for the lease holding address a (0: none) */
#define DSMEM_SLOPE_ADDR_NODE(a)					\
	((__u32)(((a) - DSMEM_SLOPE_BASE) / DSMEM_SLOPE_SHARE_SIZE) + 1)

/* a byte range of the Slope range; both ends page aligned */
struct dsmem_slope_extent {
	__u64 addr;
	__u64 len;
};

/* struct dsmem_ioc_slope_alloc.flags and others */
#define DSMEM_SLOPE_HUGE	0x01	/* 2 MiB units: aligned, populated */
/* ALLOC: the run is the first of a new object, at the run's address */
#define DSMEM_SLOPE_NEW_OBJECT	0x02
#define DSMEM_SLOPE_ALLOC_FLAGS_ALL	(DSMEM_SLOPE_HUGE | DSMEM_SLOPE_NEW_OBJECT)

/**
 * struct dsmem_ioc_slope_alloc - DSMEM_IOC_SLOPE_ALLOC argument
 * @len:	in: bytes, a multiple of the page size (of 2 MiB with HUGE)
 * @flags:	in: DSMEM_SLOPE_*
 * @__pad:	must be 0
 * @addr:	out: the first byte of a free run of the Slope range, now
 *		owned by this node; pages are zero and faulted in on use
 * @object:	in: the object the run is for (its address, as MIGRATE's
 *		cookie), or 0 (with DSMEM_SLOPE_NEW_OBJECT: must be 0, the
 *		object's address is the run's): the node then lists the
 *		object, its runs and pages (netlink slope-get) until they are
 *		freed or move away
 *
 * Takes a new lease from the peers when the held ones are full: from one
 * of the nodes that last announced the most free leases.
 */
struct dsmem_ioc_slope_alloc {
	__u64 len;
	__u32 flags;
	__u32 __pad;
	__u64 addr;
	__u64 object;
};

#define DSMEM_IOC_SLOPE_ALLOC_SIZE_VER0	32
#define DSMEM_IOC_SLOPE_ALLOC	_IOWR(DSMEM_IOCTL_MAGIC, 0x06, struct dsmem_ioc_slope_alloc)

/* extents in one call of FREE, MIGRATE or DIRTY */
#define DSMEM_SLOPE_EXTENTS_MAX	65536

/**
 * struct dsmem_ioc_slope_free - DSMEM_IOC_SLOPE_FREE argument
 * @extents:	in: user pointer to @nr struct dsmem_slope_extent, sorted
 *		and disjoint, page aligned
 * @nr:		in: 1 .. DSMEM_SLOPE_EXTENTS_MAX
 * @__pad:	must be 0
 * @freed:	out: bytes given back
 *
 * The pages go at once; the addresses go back to the lease, batched: to
 * the lease's holder, through the node responsible for it when that is
 * another node.  A lease left empty is returned.  Every extent must be
 * owned by this node and not migrating, or nothing is freed.
 */
struct dsmem_ioc_slope_free {
	__u64 extents;
	__u32 nr;
	__u32 __pad;
	__u64 freed;
};

#define DSMEM_IOC_SLOPE_FREE_SIZE_VER0	24
#define DSMEM_IOC_SLOPE_FREE	_IOWR(DSMEM_IOCTL_MAGIC, 0x07, struct dsmem_ioc_slope_free)

/* struct dsmem_ioc_slope_migrate.flags: DSMEM_SLOPE_HUGE only */
#define DSMEM_SLOPE_MIGRATE_FLAGS_ALL	DSMEM_SLOPE_HUGE

/* prefill rounds at most, and the default */
#define DSMEM_SLOPE_ROUNDS_MAX		64
#define DSMEM_SLOPE_ROUNDS_DEFAULT	8
/* units of one migration at most (2 GiB of 4 KiB pages) */
#define DSMEM_SLOPE_MIG_UNITS_MAX	(1U << 19)

/**
 * struct dsmem_ioc_slope_migrate - DSMEM_IOC_SLOPE_MIGRATE argument
 * @extents:	in: user pointer to @nr extents: every page of the object,
 *		owned by this node, sorted and disjoint
 * @nr:		in: 1 .. DSMEM_SLOPE_EXTENTS_MAX
 * @dst_node:	in: the node to move the object to, a connected peer
 * @flags:	in: DSMEM_SLOPE_HUGE: the extents are 2 MiB units
 * @max_rounds:	in: prefill rounds before asking to stop (0: default)
 * @stop_pages:	in: ask to stop once a round leaves at most this many
 *		dirty units (0: once a round no longer shrinks the set)
 * @cookie:	in: handed to the destination (the object's address)
 * @id:		out: the migration, for MIG_WAIT, MIG_STOP and MIG_GET
 * @root:	in (VER1): 0, or an address in the extents: its unit and
 *		the cookie's, when dirty at the handover, are written to the
 *		destination with it rather than pulled, so that its first
 *		touches of the object do not wait (the object's root)
 *
 * Starts write tracking and the prefill, and returns: the object stays
 * usable while its pages are copied.  When the dirty set has converged
 * the migration asks the application to stop touching the object
 * (DSMEM_SLOPE_MIG_STOPPING, seen through MIG_WAIT); MIG_STOP then hands
 * it over.
 */
struct dsmem_ioc_slope_migrate {
	__u64 extents;
	__u32 nr;
	__u32 dst_node;
	__u32 flags;
	__u32 max_rounds;
	__u64 stop_pages;
	__u64 cookie;
	__u64 id;
	__u64 root;
};

#define DSMEM_IOC_SLOPE_MIGRATE_SIZE_VER0	48
#define DSMEM_IOC_SLOPE_MIGRATE_SIZE_VER1	56	/* + root */
#define DSMEM_IOC_SLOPE_MIGRATE	_IOWR(DSMEM_IOCTL_MAGIC, 0x08, struct dsmem_ioc_slope_migrate)

/* The life of a migration, on either side. */
enum dsmem_slope_mig_state {
	DSMEM_SLOPE_MIG_PREFILL,	/* source: copying while the app runs */
	DSMEM_SLOPE_MIG_STOPPING,	/* source: converged, waits for MIG_STOP */
	DSMEM_SLOPE_MIG_HANDED_OVER,	/* the destination owns it; pulling */
	DSMEM_SLOPE_MIG_DONE,		/* every page is at the destination */
	/* see error; the source keeps an object that failed before the
	 * handover
	 */
	DSMEM_SLOPE_MIG_FAILED,
	DSMEM_SLOPE_MIG_INCOMING,	/* destination: prefill arriving */
};

/* struct dsmem_ioc_slope_mig.flags */
#define DSMEM_SLOPE_MIG_WAIT	0x01	/* sleep until the state is past @state */
#define DSMEM_SLOPE_MIG_RELEASE	0x02	/* forget a DONE or FAILED migration */
#define DSMEM_SLOPE_MIG_FLAGS_ALL					\
	(DSMEM_SLOPE_MIG_WAIT | DSMEM_SLOPE_MIG_RELEASE)

/**
 * struct dsmem_ioc_slope_mig - argument of MIG_GET, MIG_STOP and RECV
 * @id:		in (GET, STOP): a migration of this node; out (RECV)
 * @flags:	in: DSMEM_SLOPE_MIG_*
 * @state:	in, with WAIT: return once the state differs from this;
 *		out: enum dsmem_slope_mig_state
 * @error:	out: negative errno of a FAILED migration
 * @peer:	out: the other node
 * @timeout_ms:	in, with WAIT: 0 waits for ever; -ETIMEDOUT after it
 * @cookie:	out: the source's cookie
 * @pages:	out: 4 KiB pages of the object
 * @unit_shift:	out: 12, or 21 for 2 MiB units
 * @rounds:	out: prefill rounds run
 * @sent_units:	out: units written during prefill (all rounds)
 * @dirty_units: out: units dirty at the handover, pulled by the destination
 * @pulled_units: out: units the destination has pulled so far
 * @failed_units: out: units the destination could not pull (the source
 *		died): touching them raises SIGBUS
 * @fault_waits: out: destination faults that waited for a page
 * @prefill_ns:	out: from MIGRATE to the state STOPPING
 * @stop_ns:	out: from STOPPING to MIG_STOP (the application's part)
 * @no_owner_ns: out: from MIG_STOP until the destination owned it
 * @pull_ns:	out: from the handover until the last page arrived
 * @total_ns:	out: from MIGRATE (or arrival) until DONE
 * @first_round_ns: out: the first prefill round, which writes every unit:
 *		the copy's own bandwidth, set-up excluded
 *
 * MIG_STOP: the application no longer touches the object; the call hands
 * it over and returns with the state HANDED_OVER, after which the source's
 * pages of the object are gone from its address space (SIGBUS).
 * RECV: on the destination, waits (with WAIT) for a migration that was
 * handed over to this node and not yet received, and describes it.
 */
struct dsmem_ioc_slope_mig {
	__u64 id;
	__u32 flags;
	__u32 state;
	__s32 error;
	__u32 peer;
	__u64 timeout_ms;
	__u64 cookie;
	__u64 pages;
	__u32 unit_shift;
	__u32 rounds;
	__u64 sent_units;
	__u64 dirty_units;
	__u64 pulled_units;
	__u64 failed_units;
	__u64 fault_waits;
	__u64 prefill_ns;
	__u64 stop_ns;
	__u64 no_owner_ns;
	__u64 pull_ns;
	__u64 total_ns;
	__u64 first_round_ns;
};

#define DSMEM_IOC_SLOPE_MIG_SIZE_VER0	144
#define DSMEM_IOC_SLOPE_MIG_GET_SIZE_VER0	DSMEM_IOC_SLOPE_MIG_SIZE_VER0
#define DSMEM_IOC_SLOPE_MIG_STOP_SIZE_VER0	DSMEM_IOC_SLOPE_MIG_SIZE_VER0
#define DSMEM_IOC_SLOPE_RECV_SIZE_VER0	DSMEM_IOC_SLOPE_MIG_SIZE_VER0
#define DSMEM_IOC_SLOPE_MIG_GET	_IOWR(DSMEM_IOCTL_MAGIC, 0x09, struct dsmem_ioc_slope_mig)
#define DSMEM_IOC_SLOPE_MIG_STOP _IOWR(DSMEM_IOCTL_MAGIC, 0x0a, struct dsmem_ioc_slope_mig)
#define DSMEM_IOC_SLOPE_RECV	_IOWR(DSMEM_IOCTL_MAGIC, 0x0b, struct dsmem_ioc_slope_mig)

/* struct dsmem_ioc_slope_dirty.op */
enum dsmem_slope_dirty_op {
	DSMEM_SLOPE_DIRTY_START,	/* track @extents; out: @id */
	DSMEM_SLOPE_DIRTY_COLLECT,	/* new epoch; the last one's set out */
	DSMEM_SLOPE_DIRTY_STOP,		/* end tracking @id */
};

/* struct dsmem_ioc_slope_dirty.flags */
/* START: read the CPU's dirty bits instead of taking a write fault each */
#define DSMEM_SLOPE_DIRTY_HARVEST	0x02
#define DSMEM_SLOPE_DIRTY_FLAGS_ALL	(DSMEM_SLOPE_HUGE | DSMEM_SLOPE_DIRTY_HARVEST)

/**
 * struct dsmem_ioc_slope_dirty - DSMEM_IOC_SLOPE_DIRTY argument
 * @op:		in: enum dsmem_slope_dirty_op
 * @flags:	in (START): DSMEM_SLOPE_HUGE, DSMEM_SLOPE_DIRTY_HARVEST
 * @extents:	in (START): user pointer to @nr extents, as for MIGRATE
 * @nr:		in (START): 1 .. DSMEM_SLOPE_EXTENTS_MAX
 * @__pad:	must be 0
 * @id:		out (START), in (COLLECT, STOP): the tracker
 * @bitmap:	in (COLLECT): user pointer: one bit per unit of the
 *		extents in order (bit i of byte i / 8), or 0
 * @bitmap_len:	in (COLLECT): bytes at @bitmap
 * @dirty:	out (COLLECT): units written in the epoch that ended
 * @units:	out (START, COLLECT): units tracked
 *
 * The dirty-tracking engine of MIGRATE, open for measurement and tests:
 * an epoch starts write-protected; the first write to a unit in it is
 * recorded, with no signal, no VMA split and no trip to userspace.
 */
struct dsmem_ioc_slope_dirty {
	__u32 op;
	__u32 flags;
	__u64 extents;
	__u32 nr;
	__u32 __pad;
	__u64 id;
	__u64 bitmap;
	__u64 bitmap_len;
	__u64 dirty;
	__u64 units;
};

#define DSMEM_IOC_SLOPE_DIRTY_SIZE_VER0	64
#define DSMEM_IOC_SLOPE_DIRTY	_IOWR(DSMEM_IOCTL_MAGIC, 0x0c, struct dsmem_ioc_slope_dirty)

/*
 * Shared rings: the data path with no system call per operation.
 *
 * DSMEM_IOC_RING_SETUP on an attached descriptor makes a submission ring
 * (SQ) of struct dsmem_sqe and a completion ring (CQ) of struct dsmem_cqe;
 * mmap(NULL, sq_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, sq_off) and
 * the same for the CQ map them.  Each region opens with a struct
 * dsmem_ring_ctl; its entries follow at DSMEM_RING_ENTRIES_OFFSET.
 *
 * The program produces SQ entries and consumes CQ entries: it writes
 * entries, then advances the SQ's tail with a store-release; it reads the
 * CQ's tail with a load-acquire, the entries before it, then advances the
 * CQ's head.  The module does the mirror image.  Indexes are free-running
 * 32-bit counters; an entry's slot is index & (entries - 1).
 *
 * A kernel thread consumes the SQ.  After idle_us without work (an empty
 * SQ, or a CQ with no room) it sets DSMEM_RING_NEED_WAKEUP in the SQ's
 * flags and sleeps; a program that sees the flag after advancing the SQ's
 * tail or the CQ's head wakes it with DSMEM_IOC_RING_ENTER and
 * DSMEM_ENTER_SQ_WAKEUP.  DSMEM_ENTER_GETEVENTS sleeps until
 * min_complete entries wait in the CQ; poll() reports POLLIN while any do.
 *
 * Ring entries name registered buffers only (mr != 0).  A malformed entry
 * completes with an error status; the module never stalls or faults on
 * what a program writes into its rings.  The module takes an SQ entry only
 * when its completion has room in the CQ, so the CQ never overflows.
 */
struct dsmem_ring_ctl {
	__u32 head;		/* consumer's */
	__u32 __pad0[15];
	__u32 tail;		/* producer's */
	__u32 __pad1[15];
	__u32 flags;		/* DSMEM_RING_* */
	__u32 __pad2[15];
};

#define DSMEM_RING_ENTRIES_OFFSET	192	/* sizeof(struct dsmem_ring_ctl) */
/* struct dsmem_ring_ctl.flags of the SQ */
#define DSMEM_RING_NEED_WAKEUP	0x01

/**
 * struct dsmem_sqe - one transfer submitted through the SQ
 * @req:	as in DSMEM_IOC_SUBMIT; @req.mr must name a registered buffer
 * @user_data:	returned in the completion
 * @not_after_ns: as struct dsmem_ioc_submit's, for this entry
 *		(DSMEM_FEAT_NOT_AFTER; a module without it wants 0 here)
 */
struct dsmem_sqe {
	struct dsmem_xfer_req req;
	__u64 user_data;
	__u64 not_after_ns;
};

/**
 * struct dsmem_cqe - the outcome of one SQ entry
 * @user_data:	the entry's
 * @bytes:	bytes moved
 * @status:	0 or a negative errno
 * @flags:	0
 * @__rsvd:	0
 */
struct dsmem_cqe {
	__u64 user_data;
	__u64 bytes;
	__s32 status;
	__u32 flags;
	__u64 __rsvd;
};

#define DSMEM_RING_ENTRIES_MAX	4096
/* mmap offsets of the two regions (beyond Slope's) */
#define DSMEM_RING_OFF_SQ	(1ULL << 48)
#define DSMEM_RING_OFF_CQ	(DSMEM_RING_OFF_SQ + (1ULL << 40))

/* struct dsmem_ioc_ring_setup.flags: none defined yet */
#define DSMEM_RING_SETUP_FLAGS_ALL	0

/**
 * struct dsmem_ioc_ring_setup - DSMEM_IOC_RING_SETUP argument
 * @sq_entries:	in: wanted, 1 .. DSMEM_RING_ENTRIES_MAX; out: made (the
 *		next power of two)
 * @cq_entries:	in: 0 (twice the SQ's) or wanted, at least sq_entries;
 *		out: made
 * @flags:	in: DSMEM_RING_SETUP_*
 * @idle_us:	in: how long the SQ thread polls an empty ring before it
 *		sleeps, at most 100000; 0: the module's default (2000)
 * @sq_bytes:	out: length to map at @sq_off
 * @cq_bytes:	out: length to map at @cq_off
 * @sq_off:	out: DSMEM_RING_OFF_SQ
 * @cq_off:	out: DSMEM_RING_OFF_CQ
 *
 * One pair of rings per descriptor: -EBUSY for a second.  -EAGAIN when
 * the module has as many rings as its parameter ring_threads allows (a
 * quarter of the CPUs by default): the ioctl path is always there.
 */
struct dsmem_ioc_ring_setup {
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 flags;
	__u32 idle_us;
	__u32 sq_bytes;
	__u32 cq_bytes;
	__u64 sq_off;
	__u64 cq_off;
};

#define DSMEM_IOC_RING_SETUP_SIZE_VER0	40
#define DSMEM_IOC_RING_SETUP	_IOWR(DSMEM_IOCTL_MAGIC, 0x0d, struct dsmem_ioc_ring_setup)

/* struct dsmem_ioc_ring_enter.flags */
#define DSMEM_ENTER_SQ_WAKEUP	0x01	/* wake the SQ thread */
#define DSMEM_ENTER_GETEVENTS	0x02	/* wait for min_complete CQ entries */
#define DSMEM_ENTER_FLAGS_ALL	(DSMEM_ENTER_SQ_WAKEUP | DSMEM_ENTER_GETEVENTS)

/**
 * struct dsmem_ioc_ring_enter - DSMEM_IOC_RING_ENTER argument
 * @flags:	in: DSMEM_ENTER_*
 * @min_complete: in: with GETEVENTS, 1 .. the CQ's entries
 * @timeout_ns:	in: with GETEVENTS, 0 for none; -ETIME when it passes
 *
 * A wait interrupted by a signal returns -EINTR.
 */
struct dsmem_ioc_ring_enter {
	__u32 flags;
	__u32 min_complete;
	__u64 timeout_ns;
};

#define DSMEM_IOC_RING_ENTER_SIZE_VER0	16
#define DSMEM_IOC_RING_ENTER	_IOWR(DSMEM_IOCTL_MAGIC, 0x0e, struct dsmem_ioc_ring_enter)

#endif /* _UAPI_LINUX_DSMEM_H */
