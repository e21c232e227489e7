/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the module's limits and defaults, of every layer, kept together
 * so that their relations (message depths, timeouts, quotas) can be read
 * at one glance.
 */
#ifndef _DSMEM_LIMITS_H
#define _DSMEM_LIMITS_H

#include <linux/time64.h>

#include <uapi/linux/dsmem.h>
#include <uapi/linux/dsmem_netlink.h>

/*
 * Limits, all in one place.
 */
/* largest ioctl argument the dispatcher copies in; checked per entry */
#define DSMEM_IOCTL_ARG_MAX	256
/* ports reported per device; more are summarised by the port count */
#define DSMEM_DEV_PORTS_MAX	64
/*
 * registrations (DSMEM_IOC_MR_REG) the descriptors of one node may hold
 * together, the default of the node_mrs parameter: each takes one of the
 * token cache's indexes, of which the host has DSMEM_HANDLE_INDEX_MAX, so
 * that one tenant registering without end leaves the others theirs
 */
#define DSMEM_NODE_MRS		8192
/* peers per node, segments per node (the global address has 12 bits) */
#define DSMEM_NODE_PEERS_MAX	256
#define DSMEM_NODE_SEGS_MAX	DSMEM_SEG_ID_MAX
/* a peer's paths besides its first connection: one per other device */
#define DSMEM_PATHS_MAX		(DSMEM_NODE_DEVS_MAX - 1)
/*
 * times one unordered request is run again because a path it used went
 * down under it; each needs a path lost, so this bounds a flapping link
 */
#define DSMEM_FAILOVER_MAX	3
/* one-sided work requests in flight per connection */
#define DSMEM_SQ_DEPTH		256
/* receive buffers per connection, each one whole wire message */
#define DSMEM_RQ_DEPTH		64
/* pages a segment allocation zeroes between chances to reschedule */
#define DSMEM_SEG_ZERO_BATCH	256
/* control messages (sends) in flight per connection */
#define DSMEM_MSG_DEPTH		32
/* bytes per one-sided work request: large transfers are cut and pipelined */
#define DSMEM_SLICE_BYTES	(256 * 1024)
/*
 * slices one submitter posts before it lets the descriptor's lock go
 * even with credits to spare: on a software device (rxe) the peer's work
 * runs in the poster's context, and a batch never waits for credits
 */
#define DSMEM_SLICES_PER_HOLD	32
/* a synchronous batch this small polls for its completion first ... */
#define DSMEM_SPIN_REQS_MAX	4
/* ... for at most this long */
#define DSMEM_SPIN_NS		(200 * NSEC_PER_USEC)
/* a ring's thread polls an empty submission ring this long, then sleeps */
#define DSMEM_RING_IDLE_US	2000
/* ... and at most this long: a thread polling costs a CPU nobody is charged for */
#define DSMEM_RING_IDLE_US_MAX	100000
/*
 * a request message waits this long for its reply (the msg_timeout_ms
 * parameter's default; a slow fabric or a debug kernel may need more) ...
 */
#define DSMEM_MSG_TIMEOUT_MS	3000
/* ... and never less than this */
#define DSMEM_MSG_TIMEOUT_MS_MIN	100
/*
 * ... and a Slope BEGIN, which allocates and registers the object's pages
 * at the destination, this much longer per 1024 units (4 MiB of pages)
 */
#define DSMEM_SLOPE_BEGIN_MS_PER_1K	500
/*
 * Slope, per peer: incoming migrations that may hold memory here at once
 * (unfinished, or handed over and not received yet), and the share of
 * RAM they may hold together -- the defaults of the module parameters
 * slope_peer_migs and slope_peer_bytes.  A migration handed over here
 * that no process receives is dropped after slope_unreceived_ms (this by
 * default, never sooner than the minimum).
 */
#define DSMEM_SLOPE_PEER_MIGS		8
#define DSMEM_SLOPE_PEER_RAM_DIV	2
/* and all peers' together, by default: a half of RAM in all */
#define DSMEM_SLOPE_NODE_RAM_DIV	2
#define DSMEM_SLOPE_UNRECEIVED_MS	60000
#define DSMEM_SLOPE_UNRECEIVED_MS_MIN	100
/*
 * A migration a peer began here and has not handed over this long after
 * its first part has its connection closed (slope_incoming_ms's default):
 * room for a large object's dirty rounds under load (a 174 s pull was
 * seen on a loaded debug guest), and a bound on what a peer that stops
 * half way holds.
 */
#define DSMEM_SLOPE_INCOMING_MS		600000
/* rdma_cm address and route resolution */
#define DSMEM_RESOLVE_TIMEOUT_MS	2000
/*
 * a disconnected QP is destroyed after rdma_cm's timewait or after this,
 * whichever is first (on rxe, always this: its timewait is longer): the
 * peer's packets sent before our QP left RTS may still be in the device
 */
#define DSMEM_TIMEWAIT_MAX_MS	2000
/* keepalive: an idle connection is probed this often */
#define DSMEM_KEEPALIVE_MS	1000
/* services registered with the transport (segments, Slope) */
#define DSMEM_SERVICES_MAX	4
/* keys per network namespace */
#define DSMEM_KEYS_MAX		16
/*
 * connections accepted and not yet authenticated, per node: a flood of
 * connects takes these, not the peer slots of authenticated peers; and
 * how long one may stay unauthenticated
 */
#define DSMEM_UNAUTH_MAX	16
#define DSMEM_AUTH_TIMEOUT_MS	5000
/*
 * reconnect backoff, doubling from min to max; to at most REFUSED_MAX
 * while the other end refuses the connect: it is most likely being told
 * about this node right now, and a refusal costs it nothing
 */
#define DSMEM_BACKOFF_MIN_MS	100
#define DSMEM_BACKOFF_MAX_MS	5000
#define DSMEM_BACKOFF_REFUSED_MAX_MS	1000
/* largest memory chunk of a segment: order 9 is 2 MiB with 4 KiB pages */
#define DSMEM_SEG_CHUNK_ORDER_MAX	9
/* token cache: maintenance (idle demotion, aging, adaptation) period */
#define DSMEM_TC_MAINT_JIFFIES	1
/* trace capture: records per CPU ring, per write, and the drain period */
#define DSMEM_TRACE_RING	16384
#define DSMEM_TRACE_BOUNCE	2048
#define DSMEM_TRACE_DRAIN_MS	50
/* CACHE_BENCH: synthetic queue pairs at most */
#define DSMEM_BENCH_QPS_MAX	16384
/*
 * CACHE_REPLAY: trace records per request and moves per reply, each array
 * one attribute (whose length is 16 bits); maintenance period of the
 * replay, as the cache's other times
 */
#define DSMEM_REPLAY_RECS_MAX	2048
#define DSMEM_REPLAY_MOVES_MAX	8191
#define DSMEM_REPLAY_MAINT_NS_MIN	NSEC_PER_USEC
#define DSMEM_REPLAY_MAINT_NS_MAX	(60ULL * NSEC_PER_SEC)
/* one-sided work requests of a Slope migration in flight */
#define DSMEM_SLOPE_WRS		32
/* units per work request at most (the connection's SGE limit applies) */
#define DSMEM_SLOPE_SGE_MAX	32
/* migrations that ended and were not released, per node, at most */
#define DSMEM_SLOPE_ENDED_MAX	64

#endif /* _DSMEM_LIMITS_H */
