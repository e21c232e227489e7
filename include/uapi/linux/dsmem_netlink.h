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

#include <linux/types.h>

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
	DSMEM_CMD_NODE_NEW,	/* do (admin): create a node; also an event */
	DSMEM_CMD_NODE_DEL,	/* do (admin): delete a node; also an event */
	DSMEM_CMD_NODE_GET,	/* do: one node by id; dump: all */
	DSMEM_CMD_PEER_NEW,	/* do (admin): connect to a peer; also an event */
	DSMEM_CMD_PEER_DEL,	/* do (admin): drop a peer; also an event */
	DSMEM_CMD_PEER_GET,	/* do: one peer; dump: all, or one node's */
	DSMEM_CMD_PEER_STATE,	/* event: a peer changed state */
	DSMEM_CMD_SEG_NEW,	/* do (admin): reserve a segment; also an event */
	DSMEM_CMD_SEG_DEL,	/* do (admin): remove a segment; also an event */
	DSMEM_CMD_SEG_GET,	/* do: one segment; dump: all, or one node's */
	DSMEM_CMD_SEG_GRANT,	/* do (admin): let a remote node reach a segment */
	DSMEM_CMD_SEG_REVOKE,	/* do (admin): withdraw a grant */
	DSMEM_CMD_RDM_ALLOC,	/* do (admin): ALLOC on a remote node */
	DSMEM_CMD_RDM_FREE,	/* do (admin): FREE on a remote node */
	DSMEM_CMD_RDM_READ,	/* do (admin): READ message to a remote node */
	DSMEM_CMD_RDM_WRITE,	/* do (admin): WRITE message to a remote node */
	DSMEM_CMD_TOKEN_GET,	/* do: one token by handle; dump: all, or filtered */
	DSMEM_CMD_TOKEN_SET,	/* do (admin): pin, unpin or move a token */
	DSMEM_CMD_CACHE_GET,	/* do: parameters, tiers and counters */
	DSMEM_CMD_CACHE_SET,	/* do (admin): parameters, reset; also an event */
	DSMEM_CMD_TRACE_START,	/* do (admin): capture accesses to a file; event */
	DSMEM_CMD_TRACE_STOP,	/* do (admin): stop the capture; also an event */
	DSMEM_CMD_CACHE_BENCH,	/* do (admin): synthetic run on a private cache */
	DSMEM_CMD_CACHE_REPLAY,	/* do (admin): a trace through a private cache */
	DSMEM_CMD_SLOPE_GET,	/* do: a node's Slope range; dump: with its
				 * leases and migrations, of all nodes or one
				 */
	DSMEM_CMD_SLOPE_MIG,	/* event: a migration changed state */
	DSMEM_CMD_KEY_NEW,	/* do (admin): install a key of this netns */
	DSMEM_CMD_KEY_DEL,	/* do (admin): remove (and zero) a key */
	DSMEM_CMD_KEY_GET,	/* do: one key's name and length; dump: all.
				 * The key itself is never sent back.
				 */
	DSMEM_CMD_NODE_SET,	/* do (admin): change a node's admission */

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
	DSMEM_ATTR_NODE_ID,		/* u32, 1 .. DSMEM_NODE_ID_MAX */
	DSMEM_ATTR_NODE_PORT,		/* u16, the rdma_cm port it listens on */
	DSMEM_ATTR_NODE_PEER_COUNT,	/* u32 */
	DSMEM_ATTR_NODE_SEG_COUNT,	/* u32 */
	DSMEM_ATTR_PEER_ID,		/* u32, unique within its node */
	DSMEM_ATTR_PEER_ADDR,		/* binary, 4 (IPv4) or 16 (IPv6) bytes */
	DSMEM_ATTR_PEER_PORT,		/* u16 */
	DSMEM_ATTR_PEER_STATE,		/* u8, enum dsmem_peer_state */
	DSMEM_ATTR_PEER_REMOTE_NODE,	/* u32, the node id at the other end */
	DSMEM_ATTR_PEER_PASSIVE,	/* u8: 1 if the other end connected */
	DSMEM_ATTR_PEER_CONNECTS,	/* u32, connections established */
	DSMEM_ATTR_PEER_ERRNO,		/* u32, last error as a positive errno */
	DSMEM_ATTR_PEER_REMOTE_SEGS,	/* nest of DSMEM_ATTR_REMOTE_SEG */
	DSMEM_ATTR_REMOTE_SEG,		/* nest, enum dsmem_rseg_attr */
	DSMEM_ATTR_SEG_ID,		/* u32, 1 .. DSMEM_SEG_ID_MAX */
	DSMEM_ATTR_SEG_SIZE,		/* u64, bytes */
	DSMEM_ATTR_SEG_NUMA,		/* s32, NUMA node of its memory; -1 any */
	DSMEM_ATTR_SEG_TRANSLATE,	/* u8, enum dsmem_translate */
	DSMEM_ATTR_SEG_ADDR,		/* u64, global address of byte 0 */
	DSMEM_ATTR_SEG_USED,		/* u64, bytes handed out by ALLOC */
	DSMEM_ATTR_SEG_PAGE_SIZE,	/* u32, size of its memory's chunks */
	DSMEM_ATTR_SEG_PERM,		/* u8, DSMEM_PERM_* */
	DSMEM_ATTR_SEG_GRANTS,		/* nest of DSMEM_ATTR_GRANT */
	DSMEM_ATTR_GRANT,		/* nest, enum dsmem_grant_attr */
	DSMEM_ATTR_RDM_ADDR,		/* u64, global address (va) */
	DSMEM_ATTR_RDM_LEN,		/* u64, bytes */
	DSMEM_ATTR_RDM_PA,		/* u64, backing offset of an allocation */
	DSMEM_ATTR_RDM_DATA,		/* binary, at most DSMEM_WIRE_MAX_DATA */
	DSMEM_ATTR_TOKEN_HANDLE,	/* u32, see uapi/linux/dsmem_token.h */
	DSMEM_ATTR_TOKEN_TYPE,		/* u8, enum dsmem_token_type */
	DSMEM_ATTR_TOKEN_DATA,		/* binary, the packed token */
	DSMEM_ATTR_TOKEN_LAYER,		/* u8, enum dsmem_tier */
	DSMEM_ATTR_TOKEN_FLAGS,		/* u8, DSMEM_TOKEN_PINNED ... */
	DSMEM_ATTR_TOKEN_VERSION,	/* u32, the directory entry's version */
	DSMEM_ATTR_TOKEN_OFFSET,	/* u32, where in its layer */
	DSMEM_ATTR_TOKEN_OBJECT,	/* string, what the token stands for */
	DSMEM_ATTR_TOKEN_HITS,		/* u32, hits in the current window */
	DSMEM_ATTR_TOKEN_ACCESSES,	/* u64, relaxed field: updates counted */
	DSMEM_ATTR_TOKEN_PINNED,	/* u8, 0 or 1 (TOKEN_SET) */
	DSMEM_ATTR_CACHE_PARAMS,	/* nest, enum dsmem_cache_param + 1 */
	DSMEM_ATTR_CACHE_STATS,		/* nest of DSMEM_ATTR_STAT entries */
	DSMEM_ATTR_CACHE_TIERS,		/* nest of DSMEM_ATTR_CACHE_TIER */
	DSMEM_ATTR_CACHE_TIER,		/* nest, enum dsmem_tier_attr */
	DSMEM_ATTR_CACHE_RESET,		/* flag (CACHE_SET): zero the counters */
	DSMEM_ATTR_CACHE_PROMOTE_L1,	/* u32, threshold in effect */
	DSMEM_ATTR_CACHE_PROMOTE_L2,	/* u32, threshold in effect */
	DSMEM_ATTR_CACHE_ENTRIES,	/* u32, live tokens */
	DSMEM_ATTR_CACHE_PINNED,	/* u32, pinned tokens */
	DSMEM_ATTR_CACHE_QUEUED,	/* u32, promotions waiting */
	DSMEM_ATTR_CACHE_MIGRATE_RATE,	/* u64, migrations per second, last second */
	DSMEM_ATTR_TRACE_FD,		/* u32, a file descriptor open for writing */
	DSMEM_ATTR_TRACE_ACTIVE,	/* u8 */
	DSMEM_ATTR_TRACE_RECORDS,	/* u64, written to the file */
	DSMEM_ATTR_TRACE_DROPPED,	/* u64, lost to a full buffer */
	DSMEM_ATTR_TRACE_ERRNO,		/* u32, why the capture stopped; 0 ok */
	DSMEM_ATTR_BENCH_QPS,		/* u32, active queue pairs */
	DSMEM_ATTR_BENCH_OPS,		/* u32, operations to run */
	DSMEM_ATTR_BENCH_SEED,		/* u32 */
	DSMEM_ATTR_BENCH_RESULT,	/* nest, enum dsmem_bench_attr */
	DSMEM_ATTR_REPLAY_MAINT_NS,	/* u64, trace time between maintenance runs */
	DSMEM_ATTR_REPLAY_RECS,		/* binary, struct dsmem_trace_rec[] */
	DSMEM_ATTR_REPLAY_MOVES,	/* binary, struct dsmem_cache_move[] */
	DSMEM_ATTR_REPLAY_TRUNCATED,	/* flag: more moves than REPLAY_MOVES holds */
	DSMEM_ATTR_SLOPE_BASE,		/* u64, DSMEM_SLOPE_BASE */
	DSMEM_ATTR_SLOPE_SIZE,		/* u64, DSMEM_SLOPE_SIZE */
	DSMEM_ATTR_SLOPE_PAGES,		/* u64, pages this node owns */
	DSMEM_ATTR_SLOPE_LEASES_HELD,	/* u32, leases this node allocates in */
	DSMEM_ATTR_SLOPE_LEASES_FREE,	/* u32, of its share, not handed out */
	DSMEM_ATTR_SLOPE_LEASE,		/* nest, enum dsmem_slope_lease_attr */
	DSMEM_ATTR_SLOPE_MIG,		/* nest, enum dsmem_slope_mig_attr */
	DSMEM_ATTR_SLOPE_OBJ,		/* nest, enum dsmem_slope_obj_attr */
	DSMEM_ATTR_KEY_NAME,		/* string, 1 .. DSMEM_KEY_NAME_MAX - 1 */
	DSMEM_ATTR_KEY_DATA,		/* binary, DSMEM_KEY_MIN .. DSMEM_KEY_MAX */
	DSMEM_ATTR_KEY_LEN,		/* u32, bytes of the key */
	DSMEM_ATTR_KEY_REPLACE,		/* flag (KEY_NEW): replace one of the name */
	DSMEM_ATTR_NODE_KEY,		/* string, the key its peers must prove */
	DSMEM_ATTR_NODE_INSECURE,	/* flag: peers are not authenticated */
	DSMEM_ATTR_NODE_ACCEPT,		/* u8, enum dsmem_accept */
	DSMEM_ATTR_PEER_LISTEN,		/* flag: admitted when it connects, never
					 * dialled
					 */

	__DSMEM_ATTR_MAX,
	DSMEM_ATTR_MAX = __DSMEM_ATTR_MAX - 1
};

/* keys: a name of at most this many bytes with its NUL, and the secret */
#define DSMEM_KEY_NAME_MAX	32
#define DSMEM_KEY_MIN		16
#define DSMEM_KEY_MAX		64

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

enum dsmem_peer_state {
	DSMEM_PEER_CONNECTING = 1,	/* resolving, connecting */
	DSMEM_PEER_UP,			/* connected; transfers flow */
	DSMEM_PEER_DOWN,		/* disconnected; reconnecting later */
	DSMEM_PEER_ERROR,		/* the last attempt failed; see errno */
};

/*
 * Whom a node's listener admits.  Either way a keyed node serves a
 * connection only once it proved the key; admission is checked before,
 * at connect time.
 */
enum dsmem_accept {
	DSMEM_ACCEPT_PEERS,	/* only peers added with their address */
	DSMEM_ACCEPT_KEYED,	/* any address (keyed nodes only) */
};

enum dsmem_translate {
	DSMEM_TRANSLATE_SEGMENT,	/* base/limit: pa = va - va_base + pa_base */
	DSMEM_TRANSLATE_PAGES,		/* hashed page table with permissions */
};

/* grant permissions */
#define DSMEM_PERM_READ		0x01
#define DSMEM_PERM_WRITE	0x02	/* also allows atomics */
#define DSMEM_PERM_ALL		(DSMEM_PERM_READ | DSMEM_PERM_WRITE)

enum dsmem_rseg_attr {
	DSMEM_RSEG_ATTR_UNSPEC,
	DSMEM_RSEG_ATTR_PAD,
	DSMEM_RSEG_ATTR_ADDR,		/* u64, global address of byte 0 */
	DSMEM_RSEG_ATTR_SIZE,		/* u64 */
	DSMEM_RSEG_ATTR_PERM,		/* u8, DSMEM_PERM_* */
	DSMEM_RSEG_ATTR_KEYS,		/* u32, memory regions covering it */

	__DSMEM_RSEG_ATTR_MAX,
	DSMEM_RSEG_ATTR_MAX = __DSMEM_RSEG_ATTR_MAX - 1
};

enum dsmem_grant_attr {
	DSMEM_GRANT_ATTR_UNSPEC,
	DSMEM_GRANT_ATTR_REMOTE_NODE,	/* u32 */
	DSMEM_GRANT_ATTR_PERM,		/* u8, DSMEM_PERM_* */

	__DSMEM_GRANT_ATTR_MAX,
	DSMEM_GRANT_ATTR_MAX = __DSMEM_GRANT_ATTR_MAX - 1
};

/*
 * Token-cache parameters: DSMEM_ATTR_CACHE_PARAMS nests one u64 attribute
 * per parameter, of type DSMEM_CACHE_P_<NAME> + 1.  The module reports
 * every one; CACHE_SET takes any subset and checks the resulting whole
 * (a bad value or combination: -ERANGE, naming it in the extended ack).
 */
enum dsmem_cache_param {
	DSMEM_CACHE_P_L1_CAPACITY,	/* entries */
	DSMEM_CACHE_P_L2_CAPACITY,	/* entries */
	DSMEM_CACHE_P_PROMOTE_L2,	/* window hits that move L3 -> L2 */
	DSMEM_CACHE_P_PROMOTE_L1,	/* window hits that move to L1 */
	DSMEM_CACHE_P_WINDOW_NS,
	DSMEM_CACHE_P_L1_IDLE_NS,
	DSMEM_CACHE_P_L2_IDLE_NS,
	DSMEM_CACHE_P_AGING_NS,
	DSMEM_CACHE_P_BATCH_THRESHOLD,
	DSMEM_CACHE_P_BATCH_MAX,
	DSMEM_CACHE_P_QUEUE_MAX,
	DSMEM_CACHE_P_CAS_RETRIES,
	DSMEM_CACHE_P_PREFETCH,
	DSMEM_CACHE_P_COST_L1_NS,
	DSMEM_CACHE_P_COST_L2_NS,
	DSMEM_CACHE_P_COST_L3_NS,
	DSMEM_CACHE_P_MODE,		/* enum dsmem_cache_mode */
	DSMEM_CACHE_P_MIGRATE_BUDGET,	/* migrations per adaptation interval */
	DSMEM_CACHE_P_ADAPT_NS,

	DSMEM_CACHE_P_NR
};

enum dsmem_tier_attr {
	DSMEM_TIER_ATTR_UNSPEC,
	DSMEM_TIER_ATTR_PAD,
	DSMEM_TIER_ATTR_ID,		/* u8, enum dsmem_tier */
	DSMEM_TIER_ATTR_ENTRIES,	/* u32 */
	DSMEM_TIER_ATTR_CAPACITY,	/* u32, entries; L3: unbounded, 0 */
	DSMEM_TIER_ATTR_BYTES,		/* u64, memory its copies take */
	DSMEM_TIER_ATTR_NUMA,		/* s32, node of its memory; -1 any */
	DSMEM_TIER_ATTR_HITS,		/* u64, accesses it served */
	DSMEM_TIER_ATTR_MISSES,		/* u64, accesses that went past it */
	DSMEM_TIER_ATTR_PROMOTIONS,	/* u64, entries moved in from below */
	DSMEM_TIER_ATTR_DEMOTIONS,	/* u64, idle entries moved out */
	DSMEM_TIER_ATTR_EVICTIONS,	/* u64, entries moved out for room */
	DSMEM_TIER_ATTR_COST_MEAN_NS,	/* u64, modelled, accesses it served */
	DSMEM_TIER_ATTR_COST_P99_NS,	/* u64, modelled */

	__DSMEM_TIER_ATTR_MAX,
	DSMEM_TIER_ATTR_MAX = __DSMEM_TIER_ATTR_MAX - 1
};

/*
 * CACHE_BENCH: BENCH_OPS operations spread uniformly over BENCH_QPS
 * synthetic queue pairs, each touching its QP, CQ and MR tokens.
 */
enum dsmem_bench_attr {
	DSMEM_BENCH_ATTR_UNSPEC,
	DSMEM_BENCH_ATTR_PAD,
	DSMEM_BENCH_ATTR_ACCESSES,	/* u64 */
	DSMEM_BENCH_ATTR_HITS_L1,	/* u64 */
	DSMEM_BENCH_ATTR_HITS_L2,	/* u64 */
	DSMEM_BENCH_ATTR_HITS_L3,	/* u64 */
	DSMEM_BENCH_ATTR_MODELED_NS,	/* u64, total modelled access cost */
	DSMEM_BENCH_ATTR_L1_HIT_MEAN_NS,	/* u64, measured resolve time */
	DSMEM_BENCH_ATTR_L1_HIT_P99_NS,	/* u64 */
	DSMEM_BENCH_ATTR_MISS_MEAN_NS,	/* u64, measured, L2 or L3 served */
	DSMEM_BENCH_ATTR_MISS_P99_NS,	/* u64 */
	DSMEM_BENCH_ATTR_MIGRATIONS,	/* u64 */

	__DSMEM_BENCH_ATTR_MAX,
	DSMEM_BENCH_ATTR_MAX = __DSMEM_BENCH_ATTR_MAX - 1
};

/*
 * CACHE_REPLAY: each move between tiers the private cache made, in order
 * (DSMEM_ATTR_REPLAY_MOVES is an array of them, host byte order).
 */
struct dsmem_cache_move {
	__u32 eid;		/* entry: token type << 16 | index */
	__u8 from;		/* enum dsmem_tier */
	__u8 to;		/* enum dsmem_tier */
	__u16 __pad;
};

#define DSMEM_CACHE_MOVE_SIZE	8

/*
 * DSMEM_ATTR_SLOPE_LEASE: a lease a node holds (USED set) or, of its own
 * share, gave to another node (USED absent).
 */
enum dsmem_slope_lease_attr {
	DSMEM_SLOPE_LEASE_ATTR_UNSPEC,
	DSMEM_SLOPE_LEASE_ATTR_PAD,
	DSMEM_SLOPE_LEASE_ATTR_BASE,		/* u64, its first address */
	DSMEM_SLOPE_LEASE_ATTR_HOLDER,		/* u32, node allocating in it */
	DSMEM_SLOPE_LEASE_ATTR_RESPONSIBLE,	/* u32, node that hands it out */
	DSMEM_SLOPE_LEASE_ATTR_USED,		/* u64, pages allocated in it */

	__DSMEM_SLOPE_LEASE_ATTR_MAX,
	DSMEM_SLOPE_LEASE_ATTR_MAX = __DSMEM_SLOPE_LEASE_ATTR_MAX - 1
};

/*
 * DSMEM_ATTR_SLOPE_OBJ: an object whose pages the node owns, as its runs
 * were allocated (DSMEM_IOC_SLOPE_ALLOC with an object) or arrived
 */
enum dsmem_slope_obj_attr {
	DSMEM_SLOPE_OBJ_ATTR_UNSPEC,
	DSMEM_SLOPE_OBJ_ATTR_PAD,
	DSMEM_SLOPE_OBJ_ATTR_ADDR,		/* u64, the object's address */
	DSMEM_SLOPE_OBJ_ATTR_PAGES,		/* u64, 4 KiB pages of its runs */
	DSMEM_SLOPE_OBJ_ATTR_RUNS,		/* u32, runs of pages */

	__DSMEM_SLOPE_OBJ_ATTR_MAX,
	DSMEM_SLOPE_OBJ_ATTR_MAX = __DSMEM_SLOPE_OBJ_ATTR_MAX - 1
};

/* DSMEM_ATTR_SLOPE_MIG: the fields of struct dsmem_ioc_slope_mig */
enum dsmem_slope_mig_attr {
	DSMEM_SLOPE_MIG_ATTR_UNSPEC,
	DSMEM_SLOPE_MIG_ATTR_PAD,
	DSMEM_SLOPE_MIG_ATTR_ID,		/* u64, the node's id for it */
	DSMEM_SLOPE_MIG_ATTR_STATE,		/* u8, enum dsmem_slope_mig_state */
	DSMEM_SLOPE_MIG_ATTR_ERRNO,		/* u32, positive errno; 0 none */
	DSMEM_SLOPE_MIG_ATTR_PEER,		/* u32, the node at the other end */
	DSMEM_SLOPE_MIG_ATTR_INCOMING,		/* u8, 1: we are the destination */
	DSMEM_SLOPE_MIG_ATTR_COOKIE,		/* u64 */
	DSMEM_SLOPE_MIG_ATTR_PAGES,		/* u64, 4 KiB pages */
	DSMEM_SLOPE_MIG_ATTR_UNIT_SHIFT,	/* u8, 12 or 21 */
	DSMEM_SLOPE_MIG_ATTR_ROUNDS,		/* u32, prefill rounds */
	DSMEM_SLOPE_MIG_ATTR_SENT,		/* u64, units written in prefill */
	DSMEM_SLOPE_MIG_ATTR_DIRTY,		/* u64, units dirty at handover */
	DSMEM_SLOPE_MIG_ATTR_PULLED,		/* u64, units pulled */
	DSMEM_SLOPE_MIG_ATTR_FAILED,		/* u64, units lost */
	DSMEM_SLOPE_MIG_ATTR_FAULT_WAITS,	/* u64, faults that waited */
	DSMEM_SLOPE_MIG_ATTR_PREFILL_NS,	/* u64 */
	DSMEM_SLOPE_MIG_ATTR_STOP_NS,		/* u64 */
	DSMEM_SLOPE_MIG_ATTR_NO_OWNER_NS,	/* u64 */
	DSMEM_SLOPE_MIG_ATTR_PULL_NS,		/* u64 */
	DSMEM_SLOPE_MIG_ATTR_TOTAL_NS,		/* u64 */
	DSMEM_SLOPE_MIG_ATTR_FIRST_ROUND_NS,	/* u64 */

	__DSMEM_SLOPE_MIG_ATTR_MAX,
	DSMEM_SLOPE_MIG_ATTR_MAX = __DSMEM_SLOPE_MIG_ATTR_MAX - 1
};

#endif /* _UAPI_LINUX_DSMEM_NETLINK_H */
