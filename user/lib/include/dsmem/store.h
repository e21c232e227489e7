/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libdsstore: the pooled object store's client (DSUSER_1.6; soft pins
 * and TTLs, ds_store_put_ex and ds_store_set_attr, DSSTORE_1.1).
 *
 * A client joins the store run by dsmaster, contributes a DRAM segment of
 * its dsmem node to the pool, and puts and gets objects.  Every operation
 * is asynchronous: it is queued and returns a task id at once; the task is
 * then queried (ds_store_task_query) until it is done.  Object bytes move
 * by RDMA between the caller's buffers and the segments, never through
 * the master.  Functions return 0 or a negative errno; after a failure
 * ds_store_errmsg() says why.  A handle is thread-safe.
 */
#ifndef DSMEM_STORE_H
#define DSMEM_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ds_store;

#define DS_STORE_KEY_MAX	1024	/* bytes, no NUL inside */

enum ds_store_flush {
	DS_STORE_FLUSH_NONE = 0,
	DS_STORE_FLUSH_LAZY = 1,	/* in the background; may skip versions */
	DS_STORE_FLUSH_EAGER = 2,	/* before the put completes */
};

struct ds_store_replicate_config {
	uint32_t dram_replicas;
	uint32_t nvmeof_replicas;
	uint32_t flush;			/* enum ds_store_flush */
	uint32_t prefer_local;		/* replica 0 on this client's segment */
};

struct ds_store_config {
	const char *masters;		/* "host:port[,host:port...]" */
	uint32_t node_id;		/* an existing local dsmem node */
	uint32_t reserved0;
	const char *addr;		/* the node's RDMA IP; NULL: its device's */
	uint64_t segment_size;		/* DRAM to contribute; 0: none */
	uint32_t threads;		/* task workers; 0: 4 */
	uint32_t timeout_ms;		/* per task; 0: 30000 */
	/*
	 * TLS to the masters (PEM files).  NULL: $DSMEM_STORE_CA,
	 * $DSMEM_STORE_CERT, $DSMEM_STORE_KEY, else ca.crt, client.crt and
	 * client.key in $DSMEM_STORE_TLS_DIR (default /etc/dsmem/store).
	 * The read-only calls below take the same defaults.
	 */
	const char *tls_ca;		/* the CA the masters' certificates are of */
	const char *tls_cert;		/* this client's certificate (its identity) */
	const char *tls_key;		/* and its private key */
	uint32_t flags;			/* DS_STORE_* */
	uint32_t reserved1;
};

/*
 * Plaintext, to masters on loopback only (dsmaster --insecure); also
 * DSMEM_STORE_INSECURE=1 in the environment.
 */
#define DS_STORE_INSECURE	(1u << 0)

/*
 * Join: register with the master, contribute the segment (remounting
 * this node's segment the master already knows, if any), and set up the
 * RDMA connections and grants to the other members.
 */
int ds_store_open(const struct ds_store_config *cfg, struct ds_store **sp);
/*
 * Leave.  With drain, the master first copies this client's replicas to
 * other segments, then the segment is removed; without it the segment
 * stays mounted in the kernel and the master keeps serving it until the
 * client's heartbeats are missed (then it re-replicates).
 */
void ds_store_close(struct ds_store *s, int drain);
/*
 * Leave with a drain bounded by deadline_ms (0: 120 s, or the task
 * timeout if longer): the master stops the drain there.  0: every
 * replica moved (*moved of them, moved may be NULL) and the segment is
 * removed.  -ETIMEDOUT: the deadline passed; errbuf says how many moved
 * and how many remain, and the client leaves without draining: the
 * master goes on moving the rest off the segment, still readable, in the
 * background (docs/store.md, "Removing resources").  s is freed always.
 */
int ds_store_close_drain(struct ds_store *s, uint64_t deadline_ms, uint64_t *moved,
			 char *errbuf, size_t errlen);
/* Why this thread's last call failed; s may be NULL (a failed open). */
const char *ds_store_errmsg(const struct ds_store *s);

/* Tasks. */
enum ds_store_task_state {
	DS_STORE_WAITING = 0,		/* queued, not started */
	DS_STORE_PENDING = 1,		/* running */
	DS_STORE_INVALID = 2,		/* no such task (-ENOENT), or bad
					 * arguments the master refused (-EINVAL) */
	DS_STORE_CANCELED = 3,
	DS_STORE_COMPLETE = 4,
	DS_STORE_TIMEOUT = 5,
	DS_STORE_FAILED = 6,
};

enum ds_store_task_kind {
	DS_STORE_TASK_PUT = 1,
	DS_STORE_TASK_GET = 2,
	DS_STORE_TASK_REPLICATE = 3,
	DS_STORE_TASK_DEL = 4,
	DS_STORE_TASK_SYNC = 5,
	DS_STORE_TASK_BATCH_PUT = 6,
	DS_STORE_TASK_BATCH_GET = 7,
};

struct ds_store_task_status {
	uint32_t state;			/* enum ds_store_task_state */
	uint32_t kind;			/* enum ds_store_task_kind */
	int32_t err;			/* 0 or -errno: why FAILED/TIMEOUT/INVALID */
	uint32_t dram_replicas;		/* PUT/REPLICATE: complete DRAM copies */
	uint32_t nvmeof_replicas;	/* PUT/REPLICATE: complete NVMe-oF copies */
	uint32_t flushed;		/* PUT/REPLICATE: in the slow tier */
	int64_t version;		/* PUT: the new version; GET: the one read;
					 * REPLICATE/SYNC: the one acted on;
					 * -1: none */
	int64_t largest_version;	/* GET FAILED: newest readable, -1: none */
	uint64_t bytes;			/* GET: bytes read; PUT: object size */
	uint64_t reserved[4];
};

/*
 * Put: the object is the concatenation of iov[0..n).  The buffers must
 * stay valid until the task is done.  Every put makes a new version; a
 * get never sees a partial one.  cfg NULL: one DRAM replica, no flush.
 * An EAGER put whose flush failed is COMPLETE with flushed 0 and err the
 * flush's -errno (-ENOSPC: a full disk); the master keeps trying.  A
 * config with no replicas at all, or more than 64 of a kind, is refused
 * (-EINVAL); arguments only the master can judge make the task INVALID
 * with err -EINVAL.
 */
int ds_store_put(struct ds_store *s, const char *key, const struct iovec *iov,
		 size_t n, const struct ds_store_replicate_config *cfg,
		 uint64_t *task);

/*
 * What a put asks of the object beyond its replicas; also the values
 * ds_store_set_attr sets.  A struct that grows: size is the sizeof the
 * caller was built with, at least DS_STORE_PUT_OPTS_SIZE_VER0 (-EINVAL
 * below).  A larger one than this library knows is taken when the bytes
 * it does not know are zero, else -E2BIG (the kernel's
 * copy_struct_from_user rule), so a program built against a newer header
 * fails clearly on an older library instead of losing what it asked for.
 * Unknown flags, reserved words not zero or a TTL over
 * DS_STORE_TTL_MAX_MS: -EINVAL.
 */
struct ds_store_put_opts {
	uint32_t size;			/* sizeof(struct ds_store_put_opts) */
	uint32_t flags;			/* DS_STORE_PUT_* */
	uint64_t ttl_ms;		/* removed this long after its commit; 0: never */
	uint64_t reserved[4];		/* 0 */
};
#define DS_STORE_PUT_OPTS_SIZE_VER0	16	/* size, flags and ttl_ms */
/*
 * A soft pin: when the pool is full the master evicts the least recently
 * used objects that are not pinned first, and a pinned one only when
 * nothing else is left (a pin is a preference, not a reservation).
 */
#define DS_STORE_PUT_SOFT_PIN	0x1u
/* Ten years (of 366 days), the master's limit: a longer TTL is a mistake. */
#define DS_STORE_TTL_MAX_MS	(10ULL * 366 * 24 * 3600 * 1000)

/*
 * Put with attributes: ds_store_put, and opts' soft pin and TTL kept with
 * the new version (opts NULL: none, as ds_store_put).  A master too old to
 * keep them would silently drop them: such a put is aborted and its task
 * FAILED with -EOPNOTSUPP (nothing is written), rather than leave an object
 * that is evicted or kept against the caller's wish.
 */
int ds_store_put_ex(struct ds_store *s, const char *key, const struct iovec *iov,
		    size_t n, const struct ds_store_replicate_config *cfg,
		    const struct ds_store_put_opts *opts, uint64_t *task);

/*
 * Set the soft pin or TTL of key's newest version after its put, at once
 * (synchronous: no task).  mask says which: DS_STORE_ATTR_SOFT_PIN takes
 * opts->flags & DS_STORE_PUT_SOFT_PIN (clear: unpin), DS_STORE_ATTR_TTL
 * takes opts->ttl_ms, counted from now (0: never expires).  Only the
 * key's owner or an admin may (-EPERM); -ENOENT: no such key; -EINVAL: a
 * mask of none or unknown bits, or opts as ds_store_put_ex refuses them;
 * -EOPNOTSUPP: a master without attributes.
 */
#define DS_STORE_ATTR_SOFT_PIN	0x1u
#define DS_STORE_ATTR_TTL	0x2u
int ds_store_set_attr(struct ds_store *s, const char *key, uint32_t mask,
		      const struct ds_store_put_opts *opts);
/*
 * Batches (DSSTORE_1.1): many keys in one round trip to the master and
 * their bytes in one submission to the data path.  Each key is answered
 * in its own item; one failing does not fail the others.  The items and
 * their buffers must stay valid until the task is done.  A batch task is
 * COMPLETE once every key has its answer, with err the first failed
 * key's -errno (0: none) and bytes the sum of the keys'; a key the fast
 * path cannot finish (a replica that failed, a copy that did not match
 * its checksums, the slow tier) takes the single call's way, retries
 * and all.  At most DS_STORE_BATCH_MAX items; -EINVAL (before anything
 * is sent) for a bad key or buffer in any item.
 */
struct ds_store_batch_item {
	const char *key;
	const struct iovec *iov;	/* put: the object; get: where it goes */
	size_t iovcnt;			/* (exist, del: unused) */
	int32_t err;			/* out: 0 or this key's -errno */
	uint32_t reserved0;
	int64_t version;		/* out: put: the new version; get, exist:
					 * the one read or found; del: the
					 * versions deleted; -1: none */
	uint64_t bytes;			/* out: put: the size; get: bytes read */
	uint64_t reserved[2];
};
#define DS_STORE_BATCH_MAX	4096
/* Puts with one config and opts (as ds_store_put_ex; opts may be NULL). */
int ds_store_batch_put(struct ds_store *s, struct ds_store_batch_item *items, size_t n,
		       const struct ds_store_replicate_config *cfg,
		       const struct ds_store_put_opts *opts, uint64_t *task);
/* Gets of each key's newest version from offset 0 (leases as ds_store_get). */
int ds_store_batch_get(struct ds_store *s, struct ds_store_batch_item *items, size_t n,
		       uint64_t *task);
/*
 * At once, one round trip: whether each key has a complete version (err
 * 0 and its version, or -ENOENT), and deletes (err 0 and the versions
 * deleted, or -ENOENT, -EPERM).  0, or the -errno that failed every key
 * (no master).
 */
int ds_store_batch_exist(struct ds_store *s, struct ds_store_batch_item *items, size_t n);
int ds_store_batch_del(struct ds_store *s, struct ds_store_batch_item *items, size_t n);

/*
 * Get: bytes from offset on, scattered into iov[0..n); a shorter object
 * leaves the rest of the buffers untouched.  min_version -1: any; a
 * newer min_version than exists fails with -ERANGE and reports the
 * largest readable one.  -ENODATA: no replica of the version is readable
 * and the slow tier has none.  -EBADMSG: no copy matched the writer's
 * checksums (each whole MiB read is checked; see docs/store.md).
 */
int ds_store_get(struct ds_store *s, const char *key, const struct iovec *iov,
		 size_t n, int64_t min_version, uint64_t offset, uint64_t *task);
int ds_store_replicate(struct ds_store *s, const char *key,
		       const struct ds_store_replicate_config *cfg,
		       uint64_t *task);
int ds_store_del(struct ds_store *s, const char *key, uint64_t *task);
/* Sync: ends when every put of key begun before it has ended; its
 * version is then the newest complete one (a following get with it as
 * min_version is fresh). */
int ds_store_sync(struct ds_store *s, const char *key, uint64_t *task);

/*
 * QueryTask.  wait_ms: 0 returns at once, -1 waits until done.  A done
 * task is forgotten after a query with release set.  An unknown task
 * reports DS_STORE_INVALID.  A query that reports a task ended with err
 * set (FAILED, TIMEOUT, INVALID, CANCELED; an EAGER put's flush) leaves
 * its reason in ds_store_errmsg(): the master's words when it refused.
 */
int ds_store_task_query(struct ds_store *s, uint64_t task, int wait_ms,
			int release, struct ds_store_task_status *st);
/* A WAITING task is canceled (0); a running or done one is not (-EBUSY). */
int ds_store_task_cancel(struct ds_store *s, uint64_t task);

/* Register a buffer for zero-copy puts and gets (pinned, RDMA-registered). */
int ds_store_buf_reg(struct ds_store *s, void *addr, size_t len);
int ds_store_buf_dereg(struct ds_store *s, void *addr);

/* List: the newest complete version of each key with prefix, from a
 * cursor (NULL: the first); free with ds_store_list_free(). */
struct ds_store_object_info {
	char key[DS_STORE_KEY_MAX + 1];
	uint8_t reserved0[7];
	uint64_t version;
	uint64_t size;
	struct ds_store_replicate_config config;
	uint32_t dram_replicas;
	uint32_t nvmeof_replicas;
	uint32_t flushed;
	uint32_t flags;			/* DS_STORE_OBJ_* */
	uint64_t flushed_version;
	int64_t ctime_ns;
	int64_t expires_ns;		/* CLOCK_REALTIME it expires at; 0: never */
	int64_t atime_ns;		/* its last put or get the master saw (eviction
					 * goes by it); 0: an older master */
	uint64_t reserved[2];
};
/* Soft-pinned (DS_STORE_PUT_SOFT_PIN): evicted after everything else. */
#define DS_STORE_OBJ_SOFT_PIN	0x1u

struct ds_store_object_list {
	size_t count;
	int more;			/* call again from the last key */
	struct ds_store_object_info *objects;
};

int ds_store_list(struct ds_store *s, const char *prefix, const char *after,
		  uint32_t limit, struct ds_store_object_list **list);
void ds_store_list_free(struct ds_store_object_list *list);
/* One object's newest complete version (-ENOENT: none). */
int ds_store_stat(struct ds_store *s, const char *key,
		  struct ds_store_object_info *info);

/*
 * The client's membership as it saw it: its heartbeats to the leading
 * master and its rejoins.  A beat is answered when a master took it
 * (a leader that had forgotten the client answers too, and the client
 * joins again); it failed when no master answered it in time.  Instants
 * are CLOCK_MONOTONIC nanoseconds of when the beat was sent, 0 for never.
 * size is sizeof(*h) as the caller knows it: a smaller, older struct
 * gets its fields only, and a larger one is -E2BIG.
 */
struct ds_store_health {
	uint64_t client_id;		/* the master's id for it; 0 before it joined */
	uint64_t beats_ok;		/* heartbeats a master answered */
	uint64_t beats_failed;		/* heartbeats no master answered in time */
	uint64_t rejoins;		/* times it joined again under a new id */
	uint64_t last_ok_ns;		/* the last answered beat's sending */
	uint64_t last_failed_ns;	/* the last failed beat's sending */
	int32_t last_error;		/* that beat's -errno */
	uint32_t reserved;
};
int ds_store_health_get(struct ds_store *s, struct ds_store_health *h, size_t size);

/*
 * Read-only views that need no segment and no node: dsctl's master show
 * and segment show.  cfg->node_id and segment_size are ignored.
 */
struct ds_store_segment_info {
	uint64_t id;
	uint32_t type;			/* 0 DRAM, 1 NVMe-oF */
	uint32_t state;			/* 0 alive, 1 draining, 2 dead */
	uint64_t size;
	uint64_t used;
	uint64_t owner;			/* client id */
	uint32_t node_id;
	uint32_t trsvcid;
	uint64_t gaddr;
	uint64_t base;
	char traddr[64];
	char subnqn[224];
	uint32_t flags;			/* DS_STORE_SEGMENT_* */
	uint32_t reserved0;
	uint64_t reserved[3];
};
/* Its owner left without draining: the master drains it, then removes it. */
#define DS_STORE_SEGMENT_RECLAIMED	0x1u

struct ds_store_master_info {
	char leader[128];
	char standbys[512];		/* comma-separated */
	char persistence[256];
	char slow_tier[256];
	uint64_t term;
	uint64_t objects;
	uint64_t versions;
	uint64_t metadata_bytes;
	uint64_t log_records;
	uint64_t global_version;
	uint64_t members;
	uint64_t ops;
	/* eviction; all 0 from an older master */
	uint64_t evictions;		/* objects evicted for room (LRU) */
	uint64_t expiries;		/* objects removed at their TTL */
	uint64_t evicted_bytes;		/* the bytes the two freed */
	uint32_t high_watermark_pct;	/* a tier's use it starts above */
	uint32_t low_watermark_pct;	/* and goes on down to */
};

/* The function shares its struct's name: C++'s -Wshadow would object. */
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
int ds_store_master_info(const char *masters, struct ds_store_master_info *info,
			 char *errbuf, size_t errlen);
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
int ds_store_segment_list(const char *masters,
			  struct ds_store_segment_info **segs, size_t *count,
			  char *errbuf, size_t errlen);
/*
 * Drain a segment of the pool (an admin, or its owner's identity): it
 * turns DRAINING, its replicas are copied to other segments and it is
 * removed.  deadline_ms 0: the master's --drain-timeout-ms.  -ETIMEDOUT:
 * the deadline passed (errbuf: how many moved, how many remain); the
 * segment stays DRAINING, its remaining replicas readable there.
 */
int ds_store_segment_drain(const char *masters, uint64_t segment_id, uint64_t deadline_ms,
			   uint64_t *moved, char *errbuf, size_t errlen);
/* The pool's events, as the master pushes them to its clients. */
enum ds_store_event_type {
	DS_STORE_EV_MEMBER_JOINED = 1,
	DS_STORE_EV_MEMBER_LEFT = 2,
	DS_STORE_EV_SEGMENT_SETUP = 3,		/* added or remounted */
	DS_STORE_EV_SEGMENT_REMOVED = 4,	/* removed, or dead */
	DS_STORE_EV_SEGMENT_DRAINING = 5,	/* no new replicas; its copies move off */
};

struct ds_store_event {
	uint32_t type;			/* DS_STORE_EV_* */
	uint32_t node_id;		/* MEMBER_*: the member's dsmem node */
	uint64_t client_id;		/* MEMBER_*: 0 for a master */
	uint32_t port;			/* MEMBER_*: its rdma_cm port */
	uint32_t reserved;
	char addr[64];			/* MEMBER_*: its RDMA IP address */
	struct ds_store_segment_info segment;	/* SEGMENT_* */
};

/*
 * A monitor of the pool (dsctl master monitor): cb is called with each
 * event as the leader pushes it, until cb returns nonzero or timeout_ms
 * passes (0: no limit).  0 then; -errno if no master streams (errbuf).
 * Events of a failover's gap are not replayed.
 */
int ds_store_watch(const char *masters, uint32_t timeout_ms,
		   int (*cb)(const struct ds_store_event *ev, void *arg), void *arg,
		   char *errbuf, size_t errlen);
/* Register an NVMe-oF namespace (attached with nvme-rdma) as a segment. */
int ds_store_nvmeof_register(const char *masters, const char *traddr,
			     uint32_t trsvcid, const char *subnqn,
			     uint64_t base, uint64_t size, uint64_t *segment_id,
			     char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DSMEM_STORE_H */
