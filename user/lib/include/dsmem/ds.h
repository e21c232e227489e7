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
/* a key's name with its NUL; a key's secret, in bytes (DSMEM_KEY_*) */
#define DS_KEY_NAME_MAX		32
#define DS_KEY_MIN		16
#define DS_KEY_MAX		64
/* the key nodes prove unless told otherwise */
#define DS_KEY_DEFAULT		"cluster"
#define DS_DEV_PORTS_MAX	8
/* the RDMA devices a node may use at most (DSMEM_NODE_DEVS_MAX) */
#define DS_NODE_DEVS_MAX	4

struct ds_ctx;
struct ds_monitor;
struct ds_xfer;

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

/*
 * A dsmem endpoint: node id, RDMA device, rdma_cm port.  A node on
 * several devices gives its first here; ds_node_devs() lists them all.
 */
struct ds_node_info {
	uint32_t id;
	uint32_t dev_index;		/* the first device's */
	char dev_name[DS_NAME_MAX];	/* the first device's */
	uint16_t port;
	uint16_t reserved0;
	uint32_t peer_count;
	uint32_t seg_count;
	uint8_t accept;			/* enum ds_accept (reserved before 1.8) */
	uint8_t flags;			/* DS_NODE_F_* (reserved before 1.15) */
	uint8_t reserved1[2];
	/* the key its peers prove; "": insecure (was reserved before 1.7) */
	char key[DS_KEY_NAME_MAX];
};

/*
 * ds_node_info.flags.  DS_NODE_F_NOT_YOURS: the caller may not use the
 * node (its owner, group and mode do not let it; see ds_node_set_owner),
 * so the module told only that it exists: every field but the id is
 * zero, and ds_node_get_owner still says whose it is.  (DSUSER_1.15)
 */
#define DS_NODE_F_NOT_YOURS	0x1

/* One RDMA device of a node (DSUSER_1.10). */
struct ds_node_dev {
	uint32_t index;			/* the RDMA core's device index */
	int32_t numa;			/* its NUMA node; -1 if none is known */
	char name[DS_NAME_MAX];
};

/* Whom a node admits when a connection is requested (DSUSER_1.8). */
enum ds_accept {
	DS_ACCEPT_PEERS = 0,		/* its peers' addresses (and ids) only */
	DS_ACCEPT_KEYED = 1,		/* any address; a keyed node only */
};

/* A key of the caller's network namespace: its name, never the secret. */
struct ds_key_info {
	char name[DS_KEY_NAME_MAX];
	uint32_t len;			/* bytes of the secret */
	uint32_t reserved0;
	uint64_t reserved[2];
};

#define DS_PEER_RSEGS_MAX	16

/* Grant permissions (the module's DSMEM_PERM_*). */
#define DS_PERM_READ		0x01
#define DS_PERM_WRITE		0x02	/* also allows atomics */
#define DS_PERM_ALL		(DS_PERM_READ | DS_PERM_WRITE)

/* A segment another node granted to this peer's local node. */
struct ds_remote_seg {
	uint64_t addr;			/* global address of byte 0 */
	uint64_t size;
	uint8_t perm;			/* DS_PERM_* */
	uint8_t reserved0[3];
	uint32_t keys;			/* memory regions; 0: messages only */
};

enum ds_peer_state {
	DS_PEER_CONNECTING = 1,
	DS_PEER_UP,
	DS_PEER_DOWN,
	DS_PEER_ERROR,
};

struct ds_peer_info {
	uint32_t node_id;		/* the local node */
	uint32_t id;			/* unique within the node */
	uint32_t remote_node;		/* 0 until known */
	uint8_t state;			/* enum ds_peer_state */
	uint8_t passive;		/* 1: the other end connected to us */
	uint16_t port;
	char addr[48];			/* numeric IPv4 or IPv6 address */
	uint32_t connects;		/* connections established */
	uint32_t last_errno;		/* positive errno, 0 none */
	uint32_t rseg_total;		/* remote segments granted to us */
	uint32_t nrsegs;		/* entries filled in rsegs[] */
	struct ds_remote_seg rsegs[DS_PEER_RSEGS_MAX];
	uint8_t listen;			/* 1: admitted, never dialled (1.8) */
	/* connections up: its first and its other paths (1.10) */
	uint8_t paths;
	uint8_t reserved0[6];
	uint64_t reserved[3];
};

enum ds_translate {
	DS_TRANSLATE_SEGMENT = 0,	/* base/limit */
	DS_TRANSLATE_PAGES = 1,		/* page table with permissions */
};

#define DS_SEG_GRANTS_MAX	16

struct ds_grant_info {
	uint32_t remote_node;
	uint8_t perm;			/* DS_PERM_* */
	uint8_t reserved[3];
};

struct ds_seg_info {
	uint32_t node_id;
	uint32_t id;
	uint64_t size;
	uint64_t addr;			/* global address of byte 0 */
	uint64_t used;			/* bytes handed out by ALLOC */
	int32_t numa;			/* -1: any */
	uint32_t page_size;
	uint8_t translate;		/* enum ds_translate */
	uint8_t reserved0[3];
	uint32_t ngrants;		/* entries filled in grants[] */
	uint32_t grant_total;
	uint32_t reserved1;
	struct ds_grant_info grants[DS_SEG_GRANTS_MAX];
	uint64_t reserved[4];
};

/*
 * RDMA object tokens and the three-tier token cache (DSUSER_1.2).  The
 * values mirror <linux/dsmem_token.h> and <linux/dsmem_netlink.h>.
 */
enum ds_token_type {
	DS_TOKEN_PD = 0,
	DS_TOKEN_MR,
	DS_TOKEN_CQ,
	DS_TOKEN_QP,
	DS_TOKEN_DB,			/* a QP's send doorbell record */
	DS_TOKEN_WQE,			/* a QP's work-request format */
};

enum ds_tier {
	DS_TIER_L1 = 1,			/* NIC SRAM: the hot entries */
	DS_TIER_L2,			/* CXL memory: compressed pages */
	DS_TIER_L3,			/* host DRAM: every token */
};

/* Directory entry flags of a token. */
#define DS_TOKEN_PINNED		0x01	/* never migrates */
#define DS_TOKEN_DIRTY		0x02	/* L1 holds unwritten relaxed fields */
#define DS_TOKEN_MIGRATING	0x04	/* between tiers */

#define DS_TOKEN_DATA_MAX	16

struct ds_token_info {
	uint32_t handle;		/* type | generation | index */
	uint8_t type;			/* enum ds_token_type */
	uint8_t layer;			/* enum ds_tier it is in */
	uint8_t flags;			/* DS_TOKEN_* */
	uint8_t data_len;		/* bytes of data[]: 8, 12, 12 or 14 */
	uint32_t version;		/* the directory entry's version */
	uint32_t offset;		/* where in its layer */
	uint32_t node;			/* owner node; 0: none */
	uint32_t hits;			/* in the current window */
	uint64_t accesses;		/* updates counted (a relaxed field) */
	uint16_t index;			/* in its type's pool (token header) */
	uint16_t reserved0;
	uint32_t reserved1;
	char object[DS_NAME_MAX];	/* what it stands for: "node 1 peer 2 qp" */
	/* the packed token (union dsmem_token), host byte order; decode
	 * its fields with ds_token_field() */
	uint8_t data[DS_TOKEN_DATA_MAX];
	uint64_t reserved[4];
};

/* What ds_token_set() changes: the fields whose DS_TOKEN_SET_* bit is set. */
#define DS_TOKEN_SET_PINNED	0x01
#define DS_TOKEN_SET_LAYER	0x02
#define DS_TOKEN_SET_VERSION	0x04

struct ds_token_update {
	uint32_t mask;			/* DS_TOKEN_SET_* */
	uint8_t pinned;			/* 1 pin (into L1), 0 unpin */
	uint8_t layer;			/* enum ds_tier: move it there now */
	uint16_t reserved0;
	uint32_t version;		/* expected directory version: -ESTALE
					 * if it changed since */
	uint32_t reserved1;
	uint64_t reserved[2];
};

/* Token-cache parameters: indexes into ds_cache_info.params. */
enum ds_cache_param {
	DS_CACHE_P_L1_CAPACITY,		/* entries */
	DS_CACHE_P_L2_CAPACITY,		/* entries */
	DS_CACHE_P_PROMOTE_L2,		/* window hits that move L3 -> L2 */
	DS_CACHE_P_PROMOTE_L1,		/* window hits that move to L1 */
	DS_CACHE_P_WINDOW_NS,
	DS_CACHE_P_L1_IDLE_NS,
	DS_CACHE_P_L2_IDLE_NS,
	DS_CACHE_P_AGING_NS,
	DS_CACHE_P_BATCH_THRESHOLD,
	DS_CACHE_P_BATCH_MAX,
	DS_CACHE_P_QUEUE_MAX,
	DS_CACHE_P_CAS_RETRIES,
	DS_CACHE_P_PREFETCH,
	DS_CACHE_P_COST_L1_NS,
	DS_CACHE_P_COST_L2_NS,
	DS_CACHE_P_COST_L3_NS,
	DS_CACHE_P_MODE,		/* enum ds_cache_mode */
	DS_CACHE_P_MIGRATE_BUDGET,	/* migrations per adaptation interval */
	DS_CACHE_P_ADAPT_NS,
	DS_CACHE_P_SAMPLE,		/* count one access in N, as N */
	DS_CACHE_P_OPTIMISTIC,		/* 1: lookups use a moving entry's old copy */
	DS_CACHE_P_NR			/* parameters this library knows */
};

enum ds_cache_mode {
	DS_CACHE_FIXED = 0,		/* thresholds as set */
	DS_CACHE_ADAPTIVE = 1,		/* thresholds follow the hit rates */
};

/* Room in the structs below, for what later modules add. */
#define DS_CACHE_PARAMS_MAX	32
#define DS_CACHE_TIERS		3
#define DS_CACHE_STATS_MAX	64

/* A parameter as the module's own table describes it. */
struct ds_cache_param_desc {
	const char *name;		/* "l1_capacity", "window", ... */
	const char *unit;		/* "entries", "hits", "ns", "tries", "" */
	uint64_t min;
	uint64_t max;
	uint64_t def;			/* the default */
	uint64_t reserved[2];
};

struct ds_cache_tier {
	uint8_t id;			/* enum ds_tier */
	uint8_t reserved0[3];
	int32_t numa;			/* node of its memory; -1 any */
	uint32_t entries;
	uint32_t capacity;		/* entries; 0: unbounded (L3) */
	uint64_t bytes;			/* memory its copies take */
	uint64_t hits;			/* accesses it served */
	uint64_t misses;		/* accesses that went past it */
	uint64_t promotions;		/* entries moved in from below */
	uint64_t demotions;		/* idle entries moved out */
	uint64_t evictions;		/* entries moved out for room */
	uint64_t cost_mean_ns;		/* modelled, of the accesses it served */
	uint64_t cost_p99_ns;
	uint64_t reserved[4];
};

struct ds_cache_info {
	uint32_t nparams;		/* entries filled in params[] */
	uint32_t nstats;		/* entries filled in stats[] */
	uint32_t stat_total;		/* counters the module reported */
	uint32_t promote_l1;		/* thresholds in effect (the adaptive */
	uint32_t promote_l2;		/* mode moves them off the params) */
	uint32_t entries;		/* live tokens */
	uint32_t pinned;
	uint32_t queued;		/* promotions waiting */
	uint64_t migrate_rate;		/* migrations per second, last second */
	uint8_t trace_active;		/* an access trace is being written */
	uint8_t reserved0[7];
	uint64_t trace_records;		/* written to the file */
	uint64_t trace_dropped;		/* lost to a full buffer */
	uint64_t params[DS_CACHE_PARAMS_MAX];	/* enum ds_cache_param */
	struct ds_cache_tier tiers[DS_CACHE_TIERS];	/* L1, L2, L3 */
	struct ds_stat stats[DS_CACHE_STATS_MAX];	/* "hits_l1", ... */
	/* migrations since the counters' reset: queue wait + modelled copy */
	uint64_t migrate_lat_mean_ns;
	uint64_t migrate_lat_p99_ns;
	/* modelled DMA, bytes per second over the last second */
	uint64_t dma_rate;		/* of promotions */
	uint64_t dma_prefetch_rate;	/* of prefetched neighbours */
	uint64_t reserved[4];
};

/* How a trace capture ended (ds_trace_stop, DS_EVENT_TRACE_STOP). */
struct ds_trace_info {
	uint64_t records;		/* written to the file */
	uint64_t dropped;		/* lost to a full buffer */
	uint32_t error;			/* positive errno it stopped on; 0 ok */
	uint32_t reserved0;
	uint64_t reserved[2];
};

/* A synthetic run on a private cache (ds_cache_bench). */
struct ds_cache_bench_result {
	uint64_t accesses;
	uint64_t hits_l1;
	uint64_t hits_l2;
	uint64_t hits_l3;
	uint64_t modeled_ns;		/* total modelled access cost */
	uint64_t l1_hit_mean_ns;	/* measured resolve time of L1 hits */
	uint64_t l1_hit_p99_ns;
	uint64_t miss_mean_ns;		/* measured, served by L2 or L3 */
	uint64_t miss_p99_ns;
	uint64_t migrations;
	uint64_t reserved[6];
};

/* What an access-trace record did (struct ds_trace_rec). */
enum ds_trace_op {
	DS_TRACE_READ = 0,		/* resolved for its fields */
	DS_TRACE_MODIFY = 1,		/* resolved, relaxed fields updated inline */
	DS_TRACE_WRITE = 2,		/* strict fields written through */
	DS_TRACE_CREATE = 3,
	DS_TRACE_DESTROY = 4,
};

/*
 * One record of an access trace: struct dsmem_trace_rec of
 * <linux/dsmem_token.h>, as the file a capture writes holds them after
 * its header (little-endian there, host order here).
 */
struct ds_trace_rec {
	uint64_t time_ns;		/* CLOCK_MONOTONIC */
	uint32_t handle;
	uint32_t node;			/* the object's node id; 0 for none */
	uint8_t type;			/* enum ds_token_type */
	uint8_t op;			/* enum ds_trace_op */
	uint8_t tier;			/* enum ds_tier that served it; 0 none */
	uint8_t reserved0;
	uint32_t reserved1;
};

/* One move between tiers of a replay's private cache (DSUSER_1.3). */
struct ds_cache_move {
	uint32_t eid;			/* the entry: token type << 16 | index */
	uint8_t from;			/* enum ds_tier */
	uint8_t to;			/* enum ds_tier */
	uint16_t reserved0;
};

/* What ds_cache_replay() saw; release with ds_cache_replay_free(). */
struct ds_cache_replay_result {
	struct ds_cache_move *moves;	/* every move, in order (malloc'd) */
	size_t nmoves;
	uint32_t truncated;		/* 1: the module made more moves than it
					 * lists (DS_CACHE_REPLAY_MOVES_MAX);
					 * "migrations" counts them all */
	uint32_t nstats;		/* entries filled in stats[] */
	uint32_t stat_total;		/* counters the module reported */
	uint32_t reserved0;
	struct ds_stat stats[DS_CACHE_STATS_MAX];	/* the private cache's:
							 * "hits_l1", ... */
	uint64_t reserved[8];
};

/*
 * The Slope range as the module shows it over netlink (DSUSER_1.5): a
 * node's part of it, the leases it holds or gave out, and its migrations.
 * What the module did not report is 0.
 */
struct ds_slope_range_info {
	uint32_t node_id;
	uint32_t leases_held;		/* leases the node allocates in */
	uint32_t leases_free;		/* of its own share, not handed out */
	uint32_t reserved0;
	uint64_t base;			/* the range: its first address */
	uint64_t size;			/* and its bytes */
	uint64_t pages;			/* 4 KiB pages the node owns */
	uint64_t reserved[4];
};

/* A 1 GiB lease, as the dump of node_id lists it. */
struct ds_slope_lease_info {
	uint32_t node_id;		/* the node whose dump listed it */
	uint32_t holder;		/* the node allocating in it */
	uint32_t responsible;		/* the node whose share it is */
	uint8_t held;			/* 1: node_id holds it (used is known);
					 * 0: of node_id's share, held by holder */
	uint8_t reserved0[3];
	uint64_t base;			/* its first address */
	uint64_t used;			/* held: 4 KiB pages allocated in it */
	uint64_t reserved[2];
};

/*
 * An object a node holds pages of: its runs were allocated for it on the
 * node, or arrived with it.
 */
struct ds_slope_object_info {
	uint32_t node_id;		/* the node whose dump listed it */
	uint32_t runs;			/* its runs of pages there */
	uint64_t addr;			/* the object's address */
	uint64_t pages;			/* 4 KiB pages of its runs there */
	uint64_t reserved[2];
};

/*
 * A migration as one end sees it: the fields of struct
 * dsmem_ioc_slope_mig.  Times are 0 until the phase they measure ended;
 * total_ns runs until the migration is done.
 */
struct ds_slope_mig_info {
	uint32_t node_id;		/* the node at this end */
	uint32_t peer;			/* the node at the other end */
	uint64_t id;			/* node_id's id for the migration */
	uint8_t state;			/* enum ds_slope_mig_state */
	uint8_t incoming;		/* 1: node_id is the destination */
	uint8_t unit_shift;		/* 12, or 21 for 2 MiB units */
	uint8_t reserved0;
	uint32_t error;			/* positive errno it failed with; 0 none */
	uint64_t cookie;		/* the source's: the object's address */
	uint64_t pages;			/* 4 KiB pages of the object */
	uint32_t rounds;		/* prefill rounds run */
	uint32_t reserved1;
	uint64_t sent_units;		/* written during the prefill */
	uint64_t dirty_units;		/* dirty at the handover */
	uint64_t pulled_units;		/* of those, pulled so far */
	uint64_t failed_units;		/* that could not be pulled */
	uint64_t fault_waits;		/* destination faults that waited */
	uint64_t prefill_ns;		/* start until stopping */
	uint64_t stop_ns;		/* stopping until MIG_STOP */
	uint64_t no_owner_ns;		/* MIG_STOP until the destination owned it */
	uint64_t pull_ns;		/* handover until the last page arrived */
	uint64_t total_ns;		/* start (or arrival) until done */
	uint64_t first_round_ns;	/* the first prefill round */
	uint64_t reserved[4];
};

/* What a Slope dump returned; release with ds_slope_range_list_free(). */
struct ds_slope_ranges {
	struct ds_slope_range_info *ranges;	/* one per node, by node id */
	size_t nranges;
	struct ds_slope_lease_info *leases;	/* per node: held ones by address,
						 * then those given out */
	size_t nleases;
	struct ds_slope_mig_info *migs;		/* per node, by id */
	size_t nmigs;
	struct ds_slope_object_info *objects;	/* per node, by address */
	size_t nobjects;
	uint64_t reserved[4];
};

enum ds_event_type {
	DS_EVENT_DEV_NEW = 1,		/* an RDMA device appeared */
	DS_EVENT_DEV_DEL,		/* an RDMA device went away (index, name) */
	DS_EVENT_DEV_RENAME,		/* an RDMA device changed its name */
	DS_EVENT_MODULE_LOADED,		/* dsmem.ko registered its family */
	DS_EVENT_MODULE_UNLOADED,	/* dsmem.ko went away */
	DS_EVENT_NODE_NEW,		/* node */
	DS_EVENT_NODE_DEL,		/* node (id only) */
	DS_EVENT_PEER_NEW,		/* peer */
	DS_EVENT_PEER_DEL,		/* peer (node_id, id) */
	DS_EVENT_PEER_STATE,		/* peer, in its new state */
	DS_EVENT_SEG_NEW,		/* seg */
	DS_EVENT_SEG_DEL,		/* seg (node_id, id) */
	DS_EVENT_CACHE_SET,		/* cache: parameters changed or reset */
	DS_EVENT_TRACE_START,		/* trace: a capture began */
	DS_EVENT_TRACE_STOP,		/* trace: a capture ended */
	DS_EVENT_SLOPE_MIG,		/* slope_mig: a migration changed state */
};

struct ds_event {
	uint32_t type;			/* enum ds_event_type */
	uint32_t reserved0;
	struct ds_dev_info dev;		/* DEV_* events */
	struct ds_node_info node;	/* NODE_* events */
	struct ds_peer_info peer;	/* PEER_* events */
	struct ds_seg_info seg;		/* SEG_* events */
	struct ds_cache_info cache;	/* CACHE_SET (DSUSER_1.2) */
	struct ds_trace_info trace;	/* TRACE_* (DSUSER_1.2) */
	struct ds_slope_mig_info slope_mig;	/* SLOPE_MIG (DSUSER_1.5) */
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
 * Nodes, peers and segments.  Adding and deleting nodes and peers needs
 * CAP_NET_ADMIN.  A node's segments, grants and peer list need a user of
 * the node: one its owner, group and mode let read and write it (see
 * ds_node_set_owner), or CAP_NET_ADMIN; others get -EACCES, a node_id 0
 * list leaves their nodes out, and ds_node_get tells them only the id
 * (DS_NODE_F_NOT_YOURS).  A segment's memory is charged to the caller's
 * memory cgroup.  Lists are freed with free().
 */
/*
 * A node whose connections are all authenticated with the key named
 * DS_KEY_DEFAULT ("cluster"), which must have been added (ds_key_add):
 * -ENOKEY if not.
 *
 * dev names the node's RDMA device, or its devices as a comma-separated
 * list ("rxe0,rxe1"): 1 to DS_NODE_DEVS_MAX distinct names of 1 to
 * DS_NAME_MAX - 1 bytes each, no spaces around the commas; the node
 * admits connections arriving on any of them, and its first device is
 * the one ds_node_get() reports.  An empty name (",rxe1", "rxe0,,rxe1",
 * "rxe0,"), one too long, more than DS_NODE_DEVS_MAX names or a name
 * given twice is -EINVAL before the module is asked.  One name is sent
 * as before, so it works with any module; a list needs a module that
 * knows node-devs (an older one refuses it).  (The list: DSUSER_1.10.)
 * A name may end in "@NUMA" ("rxe0@0,rxe1@1"): the NUMA node to take the
 * device as on, over what it says (rxe says nothing; firmware may lack or
 * misstate proximity data), an online node or -1 for none; small
 * unordered transfers prefer a device on their buffer's node.  Only "@"
 * and a number is read so; any other "@" is the name's.  Below -1:
 * -EINVAL here; not online: -EINVAL from the module; a module without
 * DSMEM_FEAT_NUMA: -EOPNOTSUPP, before it is asked.
 */
int ds_node_add(struct ds_ctx *ctx, uint32_t id, const char *dev,
		uint16_t port);
/*
 * The same with the key named key; key NULL makes the node insecure, an
 * explicit choice: any host that reaches its port may connect as any
 * node id.
 */
int ds_node_add_keyed(struct ds_ctx *ctx, uint32_t id, const char *dev,
		      uint16_t port, const char *key);
int ds_node_del(struct ds_ctx *ctx, uint32_t id);
int ds_node_get(struct ds_ctx *ctx, uint32_t id, struct ds_node_info *node);
int ds_node_list(struct ds_ctx *ctx, struct ds_node_info **nodes,
		 size_t *count);
/*
 * The same in another network namespace: the one the caller's namespace
 * knows by netnsid (`ip netns list-id`).  A node holds its namespace
 * while it lives, so these are how a host's admin finds and deletes the
 * nodes a container left behind.  They need CAP_NET_ADMIN over that
 * namespace; an unknown netnsid is -ENOENT.  (DSUSER_1.14)
 */
int ds_node_get_netns(struct ds_ctx *ctx, int32_t netnsid, uint32_t id,
		      struct ds_node_info *node);
int ds_node_list_netns(struct ds_ctx *ctx, int32_t netnsid,
		       struct ds_node_info **nodes, size_t *count);
int ds_node_del_netns(struct ds_ctx *ctx, int32_t netnsid, uint32_t id);
/*
 * Node id's devices in the order they were given, less any removed since
 * (the node carries on with the others): the number the node
 * has (1 to DS_NODE_DEVS_MAX; more than max is possible), of which the
 * first max are put in devs (NULL when max is 0); or -errno, -ENOENT
 * when there is no such node.  From a module without node-devs, the one
 * device ds_node_get() reports, numa -1.  (DSUSER_1.10)
 */
int ds_node_devs(struct ds_ctx *ctx, uint32_t id, struct ds_node_dev *devs,
		 unsigned int max);

/*
 * Keys of the caller's network namespace (CAP_NET_ADMIN to add or
 * delete): len DS_KEY_MIN to DS_KEY_MAX bytes; replace non-zero replaces
 * a key of the name.  The list is freed with free().
 */
int ds_key_add(struct ds_ctx *ctx, const char *name, const void *key,
	       size_t len, int replace);
int ds_key_del(struct ds_ctx *ctx, const char *name);
int ds_key_list(struct ds_ctx *ctx, struct ds_key_info **keys, size_t *count);

/*
 * addr is a numeric IPv4 or IPv6 address; *peer_id may be NULL.  A peer
 * is dialled, and is also whom the node admits (DS_ACCEPT_PEERS): a
 * connection from its address.
 */
int ds_peer_add(struct ds_ctx *ctx, uint32_t node_id, const char *addr,
		uint16_t port, uint32_t *peer_id);
/*
 * The same, and the peer must be node remote_node (0: any; a peer that
 * answers as another is refused).  With DS_PEER_LISTEN the node only
 * admits it, never dials it: remote_node is needed and port is 0.
 * (DSUSER_1.8)
 */
#define DS_PEER_LISTEN		0x1
int ds_peer_add_id(struct ds_ctx *ctx, uint32_t node_id, const char *addr,
		   uint16_t port, uint32_t remote_node, unsigned int flags,
		   uint32_t *peer_id);
/* enum ds_accept; keyed on an insecure node is -EINVAL (DSUSER_1.8) */
int ds_node_set_accept(struct ds_ctx *ctx, uint32_t id, int accept);
/*
 * Who may use a node -- attach a descriptor, make and grant its segments,
 * list its peers -- (DSUSER_1.14): checked as opening
 * a file with this owner, group and mode for reading and writing is
 * (CAP_NET_ADMIN overrides).  Ids are as the user namespace that owns the
 * node's network namespace sees them.  A new node is its creator's, mode
 * 0600.  Setting needs CAP_NET_ADMIN; a mode past 0777 or a uid or gid
 * with no mapping is -EINVAL.  A module without owners (before
 * DSMEM_FEAT_NODE_OWNER) reports -EOPNOTSUPP.
 */
struct ds_node_owner {
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;		/* permission bits, 0 to 0777 */
	uint32_t reserved;	/* 0 */
};
int ds_node_get_owner(struct ds_ctx *ctx, uint32_t id, struct ds_node_owner *owner);
int ds_node_set_owner(struct ds_ctx *ctx, uint32_t id, const struct ds_node_owner *owner);
int ds_peer_del(struct ds_ctx *ctx, uint32_t node_id, uint32_t peer_id);
int ds_peer_get(struct ds_ctx *ctx, uint32_t node_id, uint32_t peer_id,
		struct ds_peer_info *peer);
/* node_id 0: the peers of every node */
int ds_peer_list(struct ds_ctx *ctx, uint32_t node_id,
		 struct ds_peer_info **peers, size_t *count);

/* numa -1: any; translate: enum ds_translate; *seg may be NULL */
int ds_seg_add(struct ds_ctx *ctx, uint32_t node_id, uint64_t size,
	       int32_t numa, int translate, struct ds_seg_info *seg);
int ds_seg_del(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id);
int ds_seg_get(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id,
	       struct ds_seg_info *seg);
/* node_id 0: the segments of every node */
int ds_seg_list(struct ds_ctx *ctx, uint32_t node_id,
		struct ds_seg_info **segs, size_t *count);
/* perm: DS_PERM_*; a second grant to the same node changes perm */
int ds_seg_grant(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id,
		 uint32_t remote_node, uint8_t perm);
int ds_seg_revoke(struct ds_ctx *ctx, uint32_t node_id, uint32_t seg_id,
		  uint32_t remote_node);

/*
 * The remote-memory service of seed 002, by message (not one-sided):
 * node_id is the local node that sends; the remote node is the one the
 * address names (for alloc: remote_node, and seg_id 0 for any segment
 * granted to us with write permission).  Reads and writes move at most
 * DS_RDM_DATA_MAX bytes (DSMEM_RDM_DATA_MAX).  All need a user of
 * node_id (see ds_node_set_owner).
 */
#define DS_RDM_DATA_MAX		4096

int ds_rdm_alloc(struct ds_ctx *ctx, uint32_t node_id, uint32_t remote_node,
		 uint32_t seg_id, uint64_t size, uint64_t *va, uint64_t *pa);
int ds_rdm_free(struct ds_ctx *ctx, uint32_t node_id, uint64_t va);
int ds_rdm_read(struct ds_ctx *ctx, uint32_t node_id, uint64_t va,
		void *buf, size_t len);
int ds_rdm_write(struct ds_ctx *ctx, uint32_t node_id, uint64_t va,
		 const void *buf, size_t len);

/*
 * Tokens: the compact descriptors of the RDMA objects dsmem creates,
 * named by 32-bit handles.  Setting needs CAP_NET_ADMIN.  A handle that
 * never named a token fails with -ENOENT; one whose object is gone (its
 * generation differs) with -ESTALE, never resolving to another object.
 */
int ds_token_get(struct ds_ctx *ctx, uint32_t handle, struct ds_token_info *info);
/* type: enum ds_token_type, -1 any; node 0: any.  Free with ds_token_list_free(). */
int ds_token_list(struct ds_ctx *ctx, int type, uint32_t node,
		  struct ds_token_info **infos, size_t *count);
void ds_token_list_free(struct ds_token_info *infos);
/*
 * Pin (into L1), unpin or move a token: at least one of the two
 * (-EINVAL).  With DS_TOKEN_SET_VERSION it fails with -ESTALE if the
 * entry changed since.  *info (may be NULL) receives the token after.
 */
int ds_token_set(struct ds_ctx *ctx, uint32_t handle,
		 const struct ds_token_update *update, struct ds_token_info *info);

/*
 * A token's fields after its header, by the module's own table (e.g. a
 * QP's "qpn", "qp_type", "state", ...), so callers need not know the
 * layout.  -EINVAL when info holds no valid token.
 */
const char *ds_token_type_name(int type);	/* "pd" ... "qp"; NULL if unknown */
int ds_token_type_lookup(const char *name);	/* the type, or -ENOENT */
int ds_token_field_count(const struct ds_token_info *info);
/* Field i (0 .. count - 1): its name and value; -ENOENT past the last. */
int ds_token_field(const struct ds_token_info *info, unsigned int i,
		   const char **name, uint32_t *value);
/* The field called name; -ENOENT when tokens of its type have none. */
int ds_token_field_get(const struct ds_token_info *info, const char *name,
		       uint32_t *value);

/*
 * The token cache: its parameters (enum ds_cache_param), tiers and
 * counters.  Setting, tracing and benchmarking need CAP_NET_ADMIN.
 */
int ds_cache_get(struct ds_ctx *ctx, struct ds_cache_info *info);
/*
 * Set the parameters whose bit is set in mask (bit i: params[i]) and,
 * with reset, zero the counters (one of the two, or -EINVAL).  Each value
 * must lie in its range (-ERANGE, naming it); the module checks the whole
 * set (-ERANGE) and refuses an L1 smaller than its pinned entries
 * (-EBUSY).  *info (may be NULL) receives the cache as it is after.
 */
int ds_cache_set(struct ds_ctx *ctx, const uint64_t *params, uint64_t mask,
		 int reset, struct ds_cache_info *info);
/* The module's table: DS_CACHE_P_NR parameters, by index or by name. */
unsigned int ds_cache_param_count(void);
const char *ds_cache_param_name(unsigned int index);	/* NULL past the last */
int ds_cache_param_lookup(const char *name);		/* index, or -ENOENT */
int ds_cache_param_describe(unsigned int index,	/* -ENOENT past the last */
			    struct ds_cache_param_desc *desc);
/* A counter of info by name: 0, or -ENOENT when it has none so called. */
int ds_cache_stat(const struct ds_cache_info *info, const char *name,
		  uint64_t *value);

/*
 * Access traces: the module writes a struct dsmem_trace_hdr, then struct
 * dsmem_trace_rec records (<linux/dsmem_token.h>) to fd, a regular file
 * open for writing, until ds_trace_stop().  The module keeps its own
 * reference: the caller may close fd at once.  -EBUSY: a capture runs.
 */
int ds_trace_start(struct ds_ctx *ctx, int fd);
/* -ENOENT when no capture runs; *info may be NULL. */
int ds_trace_stop(struct ds_ctx *ctx, struct ds_trace_info *info);

/*
 * A uniform sweep of ops operations over qps (1 .. DS_CACHE_BENCH_QPS_MAX)
 * synthetic queue pairs on a private cache: the live cache's parameters,
 * those of mask changed as in ds_cache_set().  The live cache is left
 * alone.  *result may be NULL.
 */
#define DS_CACHE_BENCH_QPS_MAX	16384
int ds_cache_bench(struct ds_ctx *ctx, uint32_t qps, uint32_t ops, uint32_t seed,
		   const uint64_t *params, uint64_t mask,
		   struct ds_cache_bench_result *result);

/*
 * Replay nrecs records of an access trace (1 .. DS_CACHE_REPLAY_RECS_MAX,
 * in time order) on a private cache with the parameters as in
 * ds_cache_bench(), maintenance every maint_ns of trace time (1 us to
 * 60 s; 0: the module's default, 100 us), and report the moves between
 * tiers it made and its counters.  READ, MODIFY and WRITE records resolve
 * their entry (type and index of the handle; the generation is not looked
 * at); CREATE and DESTROY are skipped.  A record of an unknown type, of a
 * type not its handle's, of an unknown op, with reserved fields set or
 * earlier than the one before is -EINVAL (the message says which); too few
 * or too many records or a value out of range is -ERANGE.  The live cache is left alone.  *result may be NULL;
 * its moves are freed by ds_cache_replay_free().  Needs CAP_NET_ADMIN.
 */
#define DS_CACHE_REPLAY_RECS_MAX	2048
#define DS_CACHE_REPLAY_MOVES_MAX	8191
int ds_cache_replay(struct ds_ctx *ctx, const struct ds_trace_rec *recs, size_t nrecs,
		    uint64_t maint_ns, const uint64_t *params, uint64_t mask,
		    struct ds_cache_replay_result *result);
/* Free a result's moves (and empty it); NULL is fine. */
void ds_cache_replay_free(struct ds_cache_replay_result *result);

/*
 * The Slope range of the local nodes (DSUSER_1.5; -EOPNOTSUPP from a
 * module without it).  get: node_id's summary; -ENOENT for no such node.
 * list: node_id 0 for every node; each node's summary, leases, objects
 * and migrations (those in flight, and those ended but not released);
 * nothing for a node_id that does not exist.
 */
int ds_slope_range_get(struct ds_ctx *ctx, uint32_t node_id,
		       struct ds_slope_range_info *info);
int ds_slope_range_list(struct ds_ctx *ctx, uint32_t node_id,
			struct ds_slope_ranges *list);
/* Free what a list holds (and empty it); NULL is fine. */
void ds_slope_range_list_free(struct ds_slope_ranges *list);

/*
 * The data path: one-sided READ, WRITE, CAS and FAA on /dev/dsmem.
 * A transfer handle is bound to one local node (its user's, see
 * ds_node_set_owner) and
 * reaches the segments other nodes granted to it, by global address.
 * Synchronous calls are a batch of one; batches cost one ioctl each.
 * A handle is not thread-safe: use one per thread.
 */
enum ds_opcode {
	DS_OP_READ = 0,
	DS_OP_WRITE = 1,
	DS_OP_CAS = 2,
	DS_OP_FAA = 3,
};

/*
 * AsyncBatchTransfer's TransferRequest, plus the atomics' operands.
 * target_id + target_offset must stay in the segment target_id names
 * (-EINVAL otherwise).
 */
struct ds_transfer_request {
	uint64_t source_offset;		/* into the registered buffer `mr` */
	uint64_t target_id;		/* a segment's global address */
	uint64_t target_offset;		/* bytes into that segment */
	uint64_t length;
	uint32_t opcode;		/* enum ds_opcode */
	uint32_t mr;			/* from ds_mr_reg; 0: source_offset is
					 * a plain pointer */
	uint64_t compare_add;		/* CAS: expected; FAA: addend */
	uint64_t swap;			/* CAS: new value */
};

enum ds_task_state {
	DS_TASK_PENDING = 0,
	DS_TASK_COMPLETE = 1,
	DS_TASK_FAILED = 2,
};

struct ds_transfer_status {
	int32_t status;			/* 0 or -errno */
	uint32_t reserved0;
	uint64_t bytes;
};

int ds_xfer_open(uint32_t node_id, struct ds_xfer **xp);
void ds_xfer_close(struct ds_xfer *x);

/*
 * Where the module has them (DSMEM_FEAT_RINGS), a handle moves its
 * transfers through shared submission and completion rings: no system
 * call per operation while the module's submission thread polls (it
 * sleeps after idle_us without work) and a completion arrives within the
 * spin.  A wait spins for spin_us, then sleeps in the module.  Ring
 * entries need registered buffers: ds_read/ds_write copy a plain buffer
 * of up to 64 KiB through the handle's own, and use one the handle
 * registered (ds_mr_reg) as it is; larger unregistered ones, and batches
 * naming them, take the ioctl path.  The module gives rings to as many
 * handles at once as its parameter ring_threads says (a quarter of the
 * CPUs by default: each polls with a thread of its own); a handle opened
 * beyond that takes the ioctl path.  docs/data-path.md has the figures.
 *
 * On both paths a plain pointer into a buffer the handle registered
 * moves data to and from the pages pinned then: keep it mapped until
 * ds_mr_dereg.  On the rings a bad plain buffer faults in the caller (the
 * library copies it), where the ioctl path says -EFAULT.
 */
struct ds_xfer_attr {
	uint32_t size;			/* sizeof(struct ds_xfer_attr) */
	uint32_t flags;			/* DS_XFER_* */
	uint32_t ring_entries;		/* the submission ring's; 0: 256 */
	uint32_t spin_us;		/* a wait spins this long, then sleeps */
	uint32_t idle_us;		/* the module's thread polls an empty
					 * ring this long; 0: its default */
	uint32_t reserved;		/* 0 */
};
#define DS_XFER_NO_RINGS	0x1	/* the ioctl path only */
/*
 * Every transfer of the handle is unordered (1.10): it may pass the
 * handle's earlier ones to the same node, and is spread, a slice at a
 * time, over every path the peer has (one per pair of the two nodes'
 * devices).  Without it, a handle's transfers to a node keep their order
 * on one path.  -EOPNOTSUPP from a module without paths.
 */
#define DS_XFER_UNORDERED	0x2
#define DS_XFER_FLAGS_ALL	(DS_XFER_NO_RINGS | DS_XFER_UNORDERED)
#define DS_XFER_SPIN_US_DEFAULT	100
#define DS_XFER_ATTR_SIZE_VER0	24
#define DS_XFER_ATTR_INIT \
	{ sizeof(struct ds_xfer_attr), 0, 0, DS_XFER_SPIN_US_DEFAULT, 0, 0 }
/* attr NULL: DS_XFER_ATTR_INIT */
int ds_xfer_open_attr(uint32_t node_id, const struct ds_xfer_attr *attr,
		      struct ds_xfer **xp);
/* 1 when the handle uses the rings, 0 when the ioctl path */
int ds_xfer_rings(const struct ds_xfer *x);
/* The spin before a wait sleeps; -EOPNOTSUPP without rings. */
int ds_xfer_set_spin(struct ds_xfer *x, uint32_t spin_us);
/*
 * poll() it for POLLIN: some task is done.  On the rings it is an epoll
 * descriptor the handle owns (close the handle, not it), -errno when it
 * cannot be made.
 */
int ds_xfer_fd(const struct ds_xfer *x);
/* Pin a buffer for zero-copy transfers; *mr names it in requests. */
int ds_mr_reg(struct ds_xfer *x, void *addr, size_t len, uint32_t *mr);
int ds_mr_dereg(struct ds_xfer *x, uint32_t mr);

/*
 * Synchronous transfers return the transfer's status: 0 or -errno.
 * -EINTR: a signal came while waiting; the transfer goes on and may still
 * land in buf, so buf must stay valid (the library releases the task).
 */
int ds_read(struct ds_xfer *x, uint64_t gaddr, void *buf, size_t len);
int ds_write(struct ds_xfer *x, uint64_t gaddr, const void *buf, size_t len);
/* *old receives the value found; the swap happened iff *old == expect */
int ds_cas(struct ds_xfer *x, uint64_t gaddr, uint64_t expect,
	   uint64_t desired, uint64_t *old);
int ds_faa(struct ds_xfer *x, uint64_t gaddr, uint64_t add, uint64_t *old);

/* Submit a batch (1 .. DS_BATCH_REQS_MAX requests); *task names it. */
#define DS_BATCH_REQS_MAX	4096	/* DSMEM_SUBMIT_REQS_MAX */
int ds_batch_submit(struct ds_xfer *x, const struct ds_transfer_request *reqs,
		    size_t n, uint64_t *task);
/*
 * As ds_batch_submit, but no part of the batch starts after not_after_ns,
 * an instant of CLOCK_BOOTTIME (0: none): the module reads the clock as it
 * hands each slice of a request to the device, so a request not wholly
 * started by then fails with -ETIMEDOUT in its status, however long the
 * caller was stopped before or in the call.  What started lands or fails
 * within the connection's io_timeout_ms.  For writes to space the caller
 * holds only until some instant (a lease).  -EOPNOTSUPP from a module
 * without it (before DSMEM_FEAT_NOT_AFTER), with a nonzero not_after_ns.
 */
int ds_batch_submit_until(struct ds_xfer *x, const struct ds_transfer_request *reqs,
			  size_t n, uint64_t not_after_ns, uint64_t *task);
/*
 * QueryTask: *state (enum ds_task_state); with wait, sleeps until done.
 * st (n entries, may be NULL) is filled once the task is done.  A done
 * task is forgotten after it is queried with release set.
 */
int ds_task_query(struct ds_xfer *x, uint64_t task, int wait, int release,
		  int *state, struct ds_transfer_status *st, size_t n);

/*
 * Event monitor: device, node, peer, segment, token-cache and Slope
 * migration events from the "events" group, and the module's own arrival
 * and departure (it keeps listening across a reload).  Programs built
 * against an older version (DSUSER_1.0, DSUSER_1.1, DSUSER_1.2), whose
 * struct ds_event is smaller, get only the event types that version knew.
 * It does not hold the module: rmmod works while a monitor is open.
 * The events name peers, segments and grants: joining them needs
 * CAP_NET_ADMIN in the network namespace (-EPERM; a module loaded later
 * says so from ds_monitor_next).
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

/*
 * B+tree on disaggregated memory (DSUSER_1.4).  The tree lives in
 * segments served by dsmem's remote-memory service on one or more memory
 * nodes, each granted read-write to every compute node that opens it.
 * Compute nodes reach it with one-sided READ, WRITE, 8-byte CAS and FAA
 * only: node locks are CAS on lock words in the memory nodes' RAM, reads
 * are lock-free and validated by checksum, splits are B-link (a right
 * sibling pointer and a high fence in every node), and each compute node
 * keeps a bounded cache of internal nodes.  A tree is named by the global
 * address of its first segment, where its superblock is.
 *
 * A struct ds_btree is safe to share between threads: each thread gets
 * its own data-path handle the first time it uses the tree.
 */
struct ds_btree;

enum ds_btree_layout {
	DS_BTREE_GENERAL = 0,		/* chunks round-robin over the segments */
	DS_BTREE_SEED = 1,		/* seed 000: per-server 16 MiB regions,
					 * level sub-regions, node_id % N */
};

#define DS_BTREE_SEGS_MAX	16	/* segments (memory-node regions) */
#define DS_BTREE_NODE_MIN	256
#define DS_BTREE_NODE_MAX	4096
#define DS_BTREE_NODE_DEFAULT	1024
#define DS_BTREE_VALUE_MAX	4096	/* bytes of an out-of-line value */
#define DS_BTREE_SCAN_MAX	65536	/* entries one scan returns */
#define DS_BTREE_KEY_MAX	255	/* bytes of a byte-string key */
#define DS_BTREE_REPLICAS_MAX	3	/* copies of every node (DSUSER_1.11) */
/* Bytes a segment needs: its header plus one seed region. */
#define DS_BTREE_SEED_SEG_MIN	((64ULL << 10) + (16ULL << 20))

struct ds_btree_create_opts {
	uint32_t layout;		/* enum ds_btree_layout */
	uint32_t node_size;		/* bytes, a power of two in
					 * [NODE_MIN, NODE_MAX]; 0: default */
	uint32_t value_size;		/* 0 or 8: 8-byte values inline in the
					 * leaves; 9 .. DS_BTREE_VALUE_MAX:
					 * values up to this size, out of line */
	uint32_t key_max;		/* 0: 8-byte integer keys (the ds_btree_get
					 * family); 1 .. DS_BTREE_KEY_MAX: byte-
					 * string keys of up to this many bytes
					 * (ds_btree_kget family, DSUSER_1.11),
					 * all kept in the leaves; a node must
					 * hold four of the longest: see
					 * ds_btree_node_size_min() */
	uint32_t replicas;		/* 0 or 1: one copy of each node;
					 * 2 .. DS_BTREE_REPLICAS_MAX: that
					 * many, on as many memory nodes
					 * (DSUSER_1.11; general layout only) */
	uint32_t reserved0;
	uint64_t reserved[3];
};

/* struct ds_btree_open_opts.flags */
#define DS_BTREE_NO_CACHE	0x01	/* every operation from the root */

struct ds_btree_open_opts {
	uint64_t cache_bytes;		/* index-cache bound; 0: 16 MiB */
	uint32_t lock_lease_ms;		/* how long this client may stay
					 * silent before others presume it dead
					 * and take its locks: 20 .. 600000;
					 * 0: 1000 */
	uint32_t flags;			/* DS_BTREE_* */
	uint32_t read_timeout_ms;	/* replicated trees: a READ of a member
					 * not done by then is given up and the
					 * member probed (1 .. 60000; 0: 250;
					 * DSUSER_1.11) */
	uint32_t reserved0;
	uint64_t reserved[3];
};

struct ds_btree_info {
	uint64_t addr;			/* the tree's name: its superblock */
	uint32_t layout;		/* enum ds_btree_layout */
	uint32_t node_size;
	uint32_t value_size;		/* 8: inline */
	uint32_t height;		/* levels; 1: the root is a leaf */
	uint64_t root;			/* global address of the root node */
	uint64_t nodes;			/* allocated so far, all compute nodes
					 * (general layout: as of each one's
					 * last heartbeat) */
	uint32_t clients;		/* compute clients with the tree open */
	uint32_t nsegs;
	uint64_t segs[DS_BTREE_SEGS_MAX];	/* global address of each */
	uint64_t seg_size[DS_BTREE_SEGS_MAX];
	uint64_t seg_used[DS_BTREE_SEGS_MAX];	/* bytes handed out */
	uint64_t cache_bytes;		/* this handle's index cache: in use */
	uint64_t cache_limit;		/* and its bound */
	uint64_t cache_entries;
	uint32_t client_id;		/* this handle's slot in the tree */
	uint32_t lock_lease_ms;
	uint32_t key_max;		/* 0: integer keys (DSUSER_1.11) */
	uint32_t replicas;		/* copies of each node (DSUSER_1.11) */
	uint32_t members_dead;		/* excluded members, all groups */
	uint32_t spares;		/* segments waiting to replace one */
	uint64_t reserved[6];
};

/*
 * Counters of one handle, summed over its threads.  A round trip is one
 * batch of work requests waited for: the types say what it was for.
 */
struct ds_btree_stats {
	uint64_t lookups;
	uint64_t inserts;		/* puts of a new key */
	uint64_t updates;		/* puts of an existing key */
	uint64_t deletes;
	uint64_t scans;
	uint64_t rtt_read;		/* round trips that only read */
	uint64_t rtt_lock;		/* that took a lock (CAS, with a read) */
	uint64_t rtt_write;		/* that wrote (and unlocked) */
	uint64_t rtt_other;		/* FAA: allocation, heartbeats apart */
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t cache_hits;		/* traversals that began at a cached
					 * internal node */
	uint64_t cache_misses;		/* that began at the root */
	uint64_t cache_stale;		/* cached pointers found stale */
	uint64_t lock_retries;		/* CAS attempts that found it held */
	uint64_t lock_steals;		/* locks taken over from dead holders */
	uint64_t read_retries;		/* torn or corrupt images read again */
	uint64_t corrupt;		/* images still bad after the retries
					 * (reported as -EIO) */
	uint64_t sibling_hops;		/* B-link moves right */
	uint64_t restarts;		/* traversals begun again */
	uint64_t splits;
	uint64_t merges;
	uint64_t redistributions;
	uint64_t root_changes;
	uint64_t replica_fallbacks;	/* reads sent to another member after
					 * one failed */
	uint64_t members_excluded;	/* members this handle found dead and
					 * excluded (DSUSER_1.11) */
	uint64_t members_repaired;	/* spares this handle filled in an
					 * excluded member's place */
	uint64_t read_timeouts;		/* READs of a member given up on
					 * (read_timeout_ms) */
	uint64_t reserved[4];
};

/*
 * Create a tree over segs[0 .. n-1] (global addresses of segments,
 * DSMEM_GADDR(node, seg, 0)), using node_id's data path.  -EEXIST when
 * segs[0] already holds a tree, -ENOSPC when a segment is too small for
 * its layout.  *addr names the tree.
 *
 * With opts->replicas R > 1, segs is groups of R segments, group after
 * group (n a multiple of R, at most DS_BTREE_SEGS_MAX groups); the R
 * segments of a group must be on R different memory nodes, and the group
 * uses as many bytes of each as its smallest has.  Every node is written
 * to each live member of its group before its lock opens; reads go to
 * the group's primary and fall back to another member when it fails.  A
 * member that fails is excluded for good, for every client (the
 * superblock, on each member of group 0, records it), and the tree goes
 * on while each group keeps one live member; then -EHOSTDOWN.  Memory
 * nodes are assumed to fail by stopping, seen alike by every compute node.
 */
int ds_btree_create(uint32_t node_id, const uint64_t *segs, size_t n,
		    const struct ds_btree_create_opts *opts, uint64_t *addr);
/* Open (opts may be NULL): -ENOENT when no tree is at addr. */
int ds_btree_open(uint32_t node_id, uint64_t addr,
		  const struct ds_btree_open_opts *opts, struct ds_btree **tp);
void ds_btree_close(struct ds_btree *t);
/* Unname a closed tree: later opens fail; the segments stay allocated. */
int ds_btree_drop(uint32_t node_id, uint64_t addr);

/*
 * Values are value_size bytes at most (8 for inline trees).  get copies
 * min(len, size) bytes and sets *vlen (may be NULL) to the value's size;
 * -ENOENT when the key is absent.  put inserts or updates.  del: -ENOENT
 * when absent.  -EIO: a node image stayed corrupt (see the stats).
 */
int ds_btree_get(struct ds_btree *t, uint64_t key, void *val, size_t len,
		 size_t *vlen);
int ds_btree_put(struct ds_btree *t, uint64_t key, const void *val,
		 size_t len);
int ds_btree_del(struct ds_btree *t, uint64_t key);
/*
 * Up to limit (<= DS_BTREE_SCAN_MAX) entries with keys >= start,
 * ascending, into keys[] and vals[] (value_size bytes each; vals may be
 * NULL).  *n receives the count.  A scan is not a snapshot: each entry is
 * a value the key held during the call.
 */
int ds_btree_scan(struct ds_btree *t, uint64_t start, size_t limit,
		  uint64_t *keys, void *vals, size_t *n);

int ds_btree_describe(struct ds_btree *t, struct ds_btree_info *info);
/* The tree's value size (8: inline), known locally: no round trip. */
uint32_t ds_btree_value_size(const struct ds_btree *t);
int ds_btree_stats_get(struct ds_btree *t, struct ds_btree_stats *st);
void ds_btree_stats_reset(struct ds_btree *t);
/*
 * The floor a lookup is measured against: n back-to-back READs of one
 * leaf each through the same data path, cycling over up to 4096 of the
 * tree's leaves in a shuffled order (gathered on the first call, untimed);
 * *ns the total time.
 */
int ds_btree_probe(struct ds_btree *t, uint64_t n, uint64_t *ns);

/*
 * Byte-string keys (DSUSER_1.11), on trees created with a key_max: 1 ..
 * key_max bytes each, ordered as unsigned bytes (memcmp), a key that is a
 * prefix of another first.  Every key is kept whole in its leaf, so a
 * lookup with a warm index cache is one READ whatever the key's length.
 * On an integer-key tree the same calls take 8-byte big-endian keys (the
 * integers' order).  -EINVAL for an empty key, -EMSGSIZE for one longer
 * than the tree's key_max; the integer-key calls on a byte-string tree
 * give -EINVAL.  Otherwise as ds_btree_get, _put, _del and _scan.
 */
struct ds_btree_key {
	uint8_t len;
	uint8_t bytes[DS_BTREE_KEY_MAX];
};

int ds_btree_kget(struct ds_btree *t, const void *key, size_t klen, void *val,
		  size_t len, size_t *vlen);
int ds_btree_kput(struct ds_btree *t, const void *key, size_t klen,
		  const void *val, size_t len);
int ds_btree_kdel(struct ds_btree *t, const void *key, size_t klen);
/* start may be empty (slen 0): from the first key. */
int ds_btree_kscan(struct ds_btree *t, const void *start, size_t slen,
		   size_t limit, struct ds_btree_key *keys, void *vals, size_t *n);
/* The tree's key_max; 0: integer keys.  Known locally. */
uint32_t ds_btree_key_max(const struct ds_btree *t);
/*
 * The smallest node size (a power of two) whose nodes hold four keys of
 * key_max bytes; 0 when none up to DS_BTREE_NODE_MAX does.
 */
uint32_t ds_btree_node_size_min(uint32_t key_max);

/* Replicated trees (DSUSER_1.11): the members of each group. */
enum ds_btree_member_state {
	DS_BTREE_MEMBER_LIVE = 0,
	DS_BTREE_MEMBER_DEAD = 1,	/* excluded: never read or written again */
	DS_BTREE_MEMBER_JOINING = 2,	/* a spare being filled: written, not
					 * read */
};

struct ds_btree_member {
	uint64_t seg;			/* DSMEM_GADDR(node, seg, 0) */
	uint32_t group;
	uint8_t index;			/* in its group: 0 .. replicas - 1 */
	uint8_t state;			/* enum ds_btree_member_state */
	uint8_t primary;		/* 1: the group's reads and locks go here */
	uint8_t reserved;
};

/*
 * Every member, group by group, as the superblock records them now (one
 * round trip): up to n into m[]; *count gets how many there are
 * (-ENOSPC when more than n).  A tree of one replica has one member per
 * segment.
 */
int ds_btree_members(struct ds_btree *t, struct ds_btree_member *m, size_t n,
		     size_t *count);

/*
 * Give a replicated tree a spare segment (granted read-write to the
 * compute node, at least as large as the tree's groups use).  When a
 * member is excluded, a background thread of one of the clients that
 * have the tree open puts a spare on another memory node than the
 * group's others in its place and copies the group's nodes to it with
 * one-sided verbs while the tree is in use (the spare is "joining":
 * written, not read); then the spare is a live member.  Up to 8 spares
 * wait; -ENOSPC beyond, or for a segment too small; -EEXIST for a member
 * or a spare already given; -EOPNOTSUPP on a tree of one replica.
 */
int ds_btree_spare_add(struct ds_btree *t, uint64_t seg);

struct ds_btree_verify_report {
	uint64_t nodes;			/* reachable nodes read */
	uint64_t keys;			/* entries in the leaves */
	uint32_t height;
	uint32_t reserved0;
	uint64_t replica_mismatches;	/* nodes whose live members' images
					 * differ */
	uint64_t order_errors;		/* keys or fences out of order, broken
					 * sibling chains */
	uint64_t reserved[4];
};

/*
 * Walk every level of a quiescent tree (no writer running): each node is
 * read from every live member of its group and checked against the
 * others and against its neighbours.  0 when all is well, -EUCLEAN when
 * anything counted in the report is not zero, -EIO for an image that
 * stays corrupt.
 */
int ds_btree_verify(struct ds_btree *t, struct ds_btree_verify_report *r);

/*
 * Slope (DSUSER_1.5): live migration of objects between nodes without
 * serialization.  Every process on every node maps the Slope range of
 * /dev/dsmem at the same virtual addresses (4 TiB from 0x300000000000).
 * An object is a heap of its own in that range: its root block, every
 * block allocated for it and the arena that keeps track of them, all in
 * pages the object owns.  Migration moves those pages to the same
 * addresses on another node, so the object works there unchanged: its
 * pointers still point into itself.  It must hold no pointer to anything
 * outside its own memory (no vtables, function pointers or descriptors).
 *
 * Allocations are attributed by context: each thread has a stack of
 * contexts, and ds_slope_alloc() allocates for the object on top.
 * Freeing needs no context: the process keeps an inverse map from pages
 * to objects.  One space per process; every function is thread-safe.
 * Failures return a negative errno, and ds_slope_errmsg() says why.
 */
struct ds_slope;
struct ds_slope_obj;
struct ds_slope_mig;

/* ds_slope_obj_create() flags */
#define DS_SLOPE_HUGE		0x01	/* runs of 2 MiB units */

#define DS_SLOPE_ROUNDS_MAX	64	/* prefill rounds of one migration */

struct ds_slope_info {
	uint32_t node_id;		/* 0: a space not on /dev/dsmem */
	uint32_t objects;		/* handles alive, received ones included */
	uint32_t unclaimed;		/* received, waiting for a receive of
					 * their type */
	uint32_t pending_runs;		/* given back, waiting for the batch */
	uint64_t runs_taken;		/* runs the module allocated */
	uint64_t bytes_taken;
	uint64_t runs_given;		/* runs given back (pending included) */
	uint64_t bytes_given;
	uint64_t free_batches;		/* DSMEM_IOC_SLOPE_FREE calls */
	uint64_t free_failures;		/* runs the module refused to free */
	uint64_t reserved[4];
};

enum ds_slope_obj_state {
	DS_SLOPE_OBJ_HERE = 0,		/* owned by this node */
	DS_SLOPE_OBJ_MIGRATING,		/* being copied; still usable */
	DS_SLOPE_OBJ_GONE,		/* handed over: its pages are elsewhere */
};

struct ds_slope_obj_info {
	uint64_t header;		/* its first byte: the arena header */
	uint64_t type_tag;
	uint64_t root;			/* address of the root block */
	uint32_t flags;			/* DS_SLOPE_HUGE */
	uint32_t state;			/* enum ds_slope_obj_state */
	/* the rest is 0 once the object is gone */
	uint32_t runs;			/* page runs it owns */
	uint32_t extents;		/* as a migration passes them: adjacent
					 * runs merged */
	uint64_t pages;			/* 4 KiB pages of its runs */
	uint64_t large_runs;		/* runs of one large block each */
	uint64_t slab_pages;		/* pages cut into small blocks */
	uint64_t medium_pages;		/* pages of medium blocks */
	uint64_t free_pages;		/* free pages of its other runs */
	uint64_t live_blocks;		/* allocated and not freed */
	uint64_t live_bytes;		/* their size, rounded up to the size
					 * class, the page or the unit */
	uint32_t contexts;		/* allocation contexts open on it */
	uint32_t reserved0;
	uint64_t sub_pages;		/* pages its sub-allocator holds */
	uint64_t reserved[3];
};

/* The module's enum dsmem_slope_mig_state. */
enum ds_slope_mig_state {
	DS_SLOPE_MIG_PREFILL = 0,	/* source: copying while the app runs */
	DS_SLOPE_MIG_STOPPING,		/* source: waits for the app to stop */
	DS_SLOPE_MIG_HANDED_OVER,	/* the destination owns it; pulling */
	DS_SLOPE_MIG_DONE,		/* every page is at the destination */
	DS_SLOPE_MIG_FAILED,		/* see error */
	DS_SLOPE_MIG_INCOMING,		/* destination: prefill arriving */
};

/* A migration as the module reports it (struct dsmem_ioc_slope_mig). */
struct ds_slope_mig_stats {
	uint64_t id;			/* the migration, on this node */
	uint32_t state;			/* enum ds_slope_mig_state */
	int32_t error;			/* FAILED: negative errno */
	uint32_t peer;			/* the other node */
	uint32_t unit_shift;		/* 12, or 21 for huge objects */
	uint64_t cookie;		/* the object's header address */
	uint64_t pages;			/* 4 KiB pages of the object */
	uint32_t rounds;		/* prefill rounds run */
	uint32_t reserved0;
	uint64_t sent_units;		/* written during prefill, all rounds */
	uint64_t dirty_units;		/* dirty at the handover: pulled by the
					 * destination */
	uint64_t pulled_units;		/* of those, pulled so far */
	uint64_t failed_units;		/* could not be pulled (the source
					 * died): touching them raises SIGBUS */
	uint64_t fault_waits;		/* destination faults that waited */
	uint64_t prefill_ns;		/* start until the module asked to stop */
	uint64_t stop_ns;		/* that until the handover: the
					 * application's part (on_stop) */
	uint64_t no_owner_ns;		/* the handover: no node owned it */
	uint64_t pull_ns;		/* handover until the last page arrived */
	uint64_t total_ns;		/* start (or arrival) until done */
	uint64_t first_round_ns;	/* the first prefill round, which writes
					 * every unit: the copy's own bandwidth */
	uint64_t reserved[4];
};

/*
 * Called when the dirty set has converged: from its return on, nothing
 * may touch the object on this node (every thread must be told and must
 * have let go before it returns).  It runs in the thread driving the
 * migration, so it must not wait for the migration itself (destroy,
 * settle, wait or free it).  st: the migration so far.
 */
typedef void (*ds_slope_stop_fn)(void *arg, const struct ds_slope_mig_stats *st);

struct ds_slope_migrate_opts {
	uint32_t max_rounds;		/* prefill rounds before asking to stop,
					 * at most DS_SLOPE_ROUNDS_MAX; 0: the
					 * module's default (8) */
	uint32_t reserved0;
	uint64_t stop_pages;		/* ask to stop once a round leaves at
					 * most this many dirty units; 0: once a
					 * round no longer shrinks the set */
	ds_slope_stop_fn on_stop;	/* NULL: nothing touches the object
					 * while the migration is waited for */
	void *arg;
	uint64_t reserved[4];
};

/*
 * Open the process's Slope space on local node node_id: attach to it (as
 * its user, see ds_node_set_owner) and map the Slope range.  -EBUSY when the process has
 * one open; -EEXIST when something else is mapped in the Slope range;
 * -EOPNOTSUPP when the module has no Slope.
 */
int ds_slope_open(uint32_t node_id, struct ds_slope **spp);
/*
 * Unmap and detach.  Objects received but never claimed are destroyed;
 * -EBUSY, and nothing done, while other objects are alive.
 */
int ds_slope_close(struct ds_slope *sp);
/* The process's open space; NULL when there is none. */
struct ds_slope *ds_slope_get(void);
/* Text for the calling thread's last failed ds_slope_* call. */
const char *ds_slope_errmsg(void);
int ds_slope_describe(struct ds_slope *sp, struct ds_slope_info *info);

/*
 * A new object: an arena in new pages, with a root block of root_size
 * bytes aligned to root_align (zero-filled).  type_tag names its type for
 * ds_slope_recv() (0: untyped).  flags: DS_SLOPE_HUGE.
 */
int ds_slope_obj_create(struct ds_slope *sp, size_t root_size, size_t root_align,
			uint32_t flags, uint64_t type_tag, struct ds_slope_obj **objp);
/*
 * Give back every page of the object and free the handle.  A migration in
 * flight is waited for first (as by ds_slope_obj_settle()); if it moved the
 * object, only the handle is freed.  A received object's pages are waited
 * for.  -EBUSY, and nothing done, while contexts are open on it.
 */
int ds_slope_obj_destroy(struct ds_slope_obj *obj);
/* The root block; NULL once the object has left this node. */
void *ds_slope_obj_root(const struct ds_slope_obj *obj);
int ds_slope_obj_describe(struct ds_slope_obj *obj, struct ds_slope_obj_info *info);
/*
 * The object that owns address p (any byte of its pages), from the
 * inverse map; -ENOENT when no object of this process does.
 */
int ds_slope_obj_lookup(const void *p, struct ds_slope_obj **objp);
/*
 * Wait until no migration of obj is in flight, driving it as
 * ds_slope_mig_wait() does (its on_stop is called from this thread).
 * Afterwards ds_slope_obj_root() says whether the object is still here.
 */
int ds_slope_obj_settle(struct ds_slope_obj *obj);
/*
 * The migration that brought a received object here: with wait, sleeps
 * until its every page has arrived.  Its error if it failed; -ENOENT for
 * an object created on this node.  st may be NULL.
 */
int ds_slope_obj_incoming(struct ds_slope_obj *obj, int wait,
			  struct ds_slope_mig_stats *st);

/*
 * Allocation contexts: push makes obj the calling thread's allocation
 * target until the matching pop (-EINVAL out of order).  -EBUSY while obj
 * migrates: its pages are fixed from the start of a migration.
 */
int ds_slope_ctx_push(struct ds_slope_obj *obj);
int ds_slope_ctx_pop(struct ds_slope_obj *obj);
/*
 * size bytes aligned to align (a power of two) for the object whose
 * context is on top of this thread's stack; -ENOENT when there is none.
 * Blocks are not zeroed.
 */
int ds_slope_alloc(size_t size, size_t align, void **p);
/* Free a block of any object of this process; NULL is fine.  -EINVAL
 * when p is not a block of one. */
int ds_slope_free(void *p);

/*
 * A sub-allocator: the application's own allocator for the blocks of one
 * object, carving whole pages that it takes from the object (so they
 * migrate with it, and the inverse map resolves every block).  Its
 * callbacks run under the object's lock: they may take and give pages
 * through pg (valid during the call only), and must not call
 * ds_slope_alloc() or ds_slope_free() for the same object.
 *  alloc: 0 with *p set; 1 to decline (Slope's own allocator serves the
 *         request); or -errno.
 *  free:  p is a block alloc handed out, in one of its pages; 0 or -errno.
 */
struct ds_slope_pages;
struct ds_slope_suballoc {
	int (*alloc)(void *state, struct ds_slope_pages *pg, size_t size, size_t align,
		     void **p);
	int (*free)(void *state, struct ds_slope_pages *pg, void *p);
};
/*
 * Install ops for obj's allocations from now on (ops NULL: none).  state,
 * handed to the callbacks, must be NULL or lie in obj's own memory, since
 * it travels with the object; a received object has none installed until
 * its receiver installs one again (freeing into its pages fails until
 * then).  -EBUSY when removing it while it still holds pages; -EINVAL
 * when state lies outside obj; -ENOENT when obj has left.
 */
int ds_slope_obj_suballoc(struct ds_slope_obj *obj, const struct ds_slope_suballoc *ops,
			  void *state);
/* One whole page of the object for the sub-allocator, and back. */
int ds_slope_pages_take(struct ds_slope_pages *pg, void **page);
int ds_slope_pages_give(struct ds_slope_pages *pg, void *page);

/*
 * Move obj to node dst_node, a connected peer: its pages are copied while
 * the application keeps using it, then the module asks it to stop
 * (on_stop) and hands it over.  Start only: ds_slope_mig_wait() drives
 * the rest.  From here on nothing can be allocated for obj (blocks may
 * still be freed).  -EBUSY while contexts are open on it; -EINVAL when it
 * is no intact object, or dst_node is this node; -E2BIG when it has more
 * extents or units than one migration takes; the module's -ENOTCONN (or
 * -ENOENT) when dst_node is not a connected peer.  A received object's
 * pages are waited for first.  opts may be NULL.
 */
int ds_slope_migrate(struct ds_slope_obj *obj, uint32_t dst_node,
		     const struct ds_slope_migrate_opts *opts, struct ds_slope_mig **migp);
/*
 * Drive the migration to its end: on_stop when the module asks, then the
 * handover (after which ds_slope_obj_root() is NULL: the pages are gone
 * from this node), then until the destination has every page.  0 when it
 * is done; the migration's error when it failed (if before the handover,
 * the object is still here, intact).  -EINTR: a signal came; call again.
 * st (may be NULL) receives the last state seen.
 */
int ds_slope_mig_wait(struct ds_slope_mig *mig, struct ds_slope_mig_stats *st);
/* The migration as it is now, without waiting. */
int ds_slope_mig_get(struct ds_slope_mig *mig, struct ds_slope_mig_stats *st);
/* Waits for the migration as ds_slope_mig_wait() does if it has not
 * ended, then forgets it. */
void ds_slope_mig_free(struct ds_slope_mig *mig);

/*
 * The next object handed over to this node whose type tag is type_tag
 * (0: any).  Its pages are at the addresses they had on the source;
 * dirty ones arrive in the background, and a touch waits for them.  An
 * object of another type is kept for a later receive of its type, and
 * this call fails with -EPROTOTYPE.  timeout_ms: -1 waits for ever, 0
 * not at all (-EAGAIN); -ETIMEDOUT when it passed.  -EBADMSG when the
 * pages hold no Slope object.  st (may be NULL): the migration at arrival.
 */
int ds_slope_recv(struct ds_slope *sp, uint64_t type_tag, int timeout_ms,
		  struct ds_slope_obj **objp, struct ds_slope_mig_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* DSMEM_DS_H */
