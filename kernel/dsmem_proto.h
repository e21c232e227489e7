/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the remote-memory wire format (after seed 002), carried in RDMA
 * SEND/RECV messages between dsmem modules.  Not user ABI: only modules
 * speak it (and the project's own tests, which compile dsmem_wire.c);
 * the one figure userspace needs, the largest data of a READ or WRITE, is
 * DSMEM_RDM_DATA_MAX in linux/dsmem_netlink.h.
 *
 * A message is a whole number of 64-byte units.  The first unit is a
 * struct dsmem_wire_hdr; data units follow for the operations that carry
 * data (REPLY_READ, WRITE), zero-padded to the unit.  Every multi-byte
 * field is little-endian.  The transport (RDMA) frames messages, so the
 * length of a received message is known; it must equal units * 64.
 *
 *   ALLOC(len = size, aux = segment or 0)  -> REPLY_ALLOC(addr = va, aux = pa)
 *   FREE(addr = va)                        -> REPLY_FREE(status)
 *   READ(addr, len)                        -> REPLY_READ(addr, len, data)
 *                                          |  REPLY_READ_ERROR(status)
 *   WRITE(addr, len, data)                 -> REPLY_WRITE(status), only with
 *                                             DSMEM_WIRE_F_ACK
 *
 * Control messages between modules, beyond the seed:
 *   GRANT(addr = segment base, data = struct dsmem_wire_grant)
 *                                          -> REPLY_GRANT(status)
 *   REVOKE(addr = segment base)            -> REPLY_REVOKE(status)
 *   PING                                      no reply: the RC transport's
 *                                             own ACK proves the peer alive
 *   AUTH(data = HMAC-SHA256 proof)            no reply: sent by both ends of
 *                                             a keyed connection once it is
 *                                             established; nothing else is
 *                                             served on it before both
 *                                             proofs are checked (see
 *                                             struct dsmem_wire_cm)
 *   PATHS                                  -> REPLY_PATHS(len, data = the
 *                                             IPv6 or IPv4-mapped addresses,
 *                                             16 bytes each, at most
 *                                             DSMEM_NODE_DEVS_MAX, of the
 *                                             replier's other devices): asked
 *                                             by the connecting end of a
 *                                             peer's first connection, which
 *                                             then connects another path to
 *                                             each (DSMEM_WIRE_CM_F_PATH).
 *                                             A module that does not answer
 *                                             it (REPLY_ERROR) has one path.
 *
 * Slope (leases and migration):
 *   SLOPE_LEASE_REQ                        -> REPLY_SLOPE(addr = lease base)
 *   SLOPE_LEASE_RET(addr = lease base)     -> REPLY_SLOPE(status)
 *   SLOPE_LEASE_COUNT(aux = free leases)      no reply; sent periodically
 *   SLOPE_FREE(data = extents)             -> REPLY_SLOPE(status); to the
 *                                             node responsible for the
 *                                             lease, which relays it to
 *                                             the holder (aux = 1: relayed)
 *   SLOPE_MIG_PUT(aux = migration, addr = offset, data)
 *                                          -> REPLY_SLOPE: stages a part of
 *                                             the next BEGIN or HANDOVER
 *   SLOPE_MIG_BEGIN(aux, len = staged bytes: struct dsmem_wire_slope_begin)
 *                                          -> REPLY_SLOPE_KEYS(data =
 *                                             struct dsmem_wire_slope_keys)
 *   SLOPE_MIG_HANDOVER(aux, len = staged bytes:
 *                      struct dsmem_wire_slope_handover)
 *                                          -> REPLY_SLOPE(status)
 *   SLOPE_MIG_DONE(aux, addr = pulled, len = failed units)
 *                                          -> REPLY_SLOPE(status)
 *   SLOPE_MIG_ABORT(aux, status-less)      -> REPLY_SLOPE(status)
 * Migration ids are the source's.
 *
 * A reply echoes the request's tag.  status is a positive errno, zero on
 * success, and is set only in replies.
 *
 * Requests (every message but replies, PING and AUTH) wait in the
 * receiver's buffers until it has handled them, so a sender keeps at
 * most DSMEM_WIRE_REQ_WINDOW of them unhandled: every message says in
 * handled how many of the other end's requests its sender has handled
 * and given its buffer back for, ever (mod 2^32), and a receiver that
 * has handled half a window more than it last said sends a PING to say
 * it.  The other messages are taken from their buffer at once.  So a
 * peer that posts the buffers it must never sees a receiver-not-ready
 * NAK for long, and one that does not (or that lies about handled) has
 * its connection closed: a send waits out a few RNR NAKs only.
 */
#ifndef _DSMEM_PROTO_H
#define _DSMEM_PROTO_H

#include <linux/types.h>

#define DSMEM_WIRE_UNIT		64
#define DSMEM_WIRE_MAGIC	0xd5
#define DSMEM_WIRE_VERSION	2
/* requests a sender may have unhandled at the receiver */
#define DSMEM_WIRE_REQ_WINDOW	32
/* inline data per message; larger transfers use one-sided RDMA */
#define DSMEM_WIRE_MAX_DATA	4096
#define DSMEM_WIRE_MAX_UNITS	(1 + DSMEM_WIRE_MAX_DATA / DSMEM_WIRE_UNIT)

enum dsmem_wire_op {
	DSMEM_WIRE_ALLOC = 1,
	DSMEM_WIRE_REPLY_ALLOC,
	DSMEM_WIRE_FREE,
	DSMEM_WIRE_REPLY_FREE,
	DSMEM_WIRE_READ,
	DSMEM_WIRE_REPLY_READ,
	DSMEM_WIRE_REPLY_READ_ERROR,
	DSMEM_WIRE_WRITE,
	DSMEM_WIRE_REPLY_WRITE,
	DSMEM_WIRE_GRANT,
	DSMEM_WIRE_REPLY_GRANT,
	DSMEM_WIRE_REVOKE,
	DSMEM_WIRE_REPLY_REVOKE,
	DSMEM_WIRE_PING,
	DSMEM_WIRE_REPLY_ERROR,	/* to a request the receiver cannot parse */
	DSMEM_WIRE_SLOPE_LEASE_REQ,
	DSMEM_WIRE_SLOPE_LEASE_RET,
	DSMEM_WIRE_SLOPE_LEASE_COUNT,
	DSMEM_WIRE_SLOPE_FREE,
	DSMEM_WIRE_SLOPE_MIG_PUT,
	DSMEM_WIRE_SLOPE_MIG_BEGIN,
	DSMEM_WIRE_SLOPE_MIG_HANDOVER,
	DSMEM_WIRE_SLOPE_MIG_DONE,
	DSMEM_WIRE_SLOPE_MIG_ABORT,
	DSMEM_WIRE_REPLY_SLOPE,
	DSMEM_WIRE_REPLY_SLOPE_KEYS,
	DSMEM_WIRE_AUTH,
	DSMEM_WIRE_PATHS,
	DSMEM_WIRE_REPLY_PATHS,

	__DSMEM_WIRE_OP_MAX,
	DSMEM_WIRE_OP_MAX = __DSMEM_WIRE_OP_MAX - 1
};

/* struct dsmem_wire_hdr.flags */
#define DSMEM_WIRE_F_ACK	0x01	/* WRITE: answer with REPLY_WRITE */
#define DSMEM_WIRE_F_ALL	DSMEM_WIRE_F_ACK

/**
 * struct dsmem_wire_hdr - the first 64-byte unit of every message
 * @magic:	DSMEM_WIRE_MAGIC
 * @version:	DSMEM_WIRE_VERSION
 * @opcode:	enum dsmem_wire_op
 * @flags:	DSMEM_WIRE_F_*
 * @status:	replies: positive errno or 0; requests: 0
 * @units:	64-byte units in the message, this header included
 * @tag:	chosen by the requester, echoed by the reply
 * @seq:	per-connection sequence number of the sender
 * @addr:	remote virtual address (va)
 * @len:	bytes: of data (READ, REPLY_READ, WRITE) or to allocate (ALLOC)
 * @aux:	ALLOC: segment to allocate in (0: any); REPLY_ALLOC: pa
 * @handled:	the receiver's requests the sender has handled, ever
 * @reserved:	must be 0
 */
struct dsmem_wire_hdr {
	__u8 magic;
	__u8 version;
	__u8 opcode;
	__u8 flags;
	__le16 status;
	__le16 units;
	__le32 tag;
	__le32 seq;
	__le64 addr;
	__le64 len;
	__le64 aux;
	__le32 handled;
	__u8 reserved[20];
};

/* struct dsmem_wire_grant.perm */
#define DSMEM_WIRE_PERM_READ	0x01
#define DSMEM_WIRE_PERM_WRITE	0x02	/* also allows atomics */
#define DSMEM_WIRE_PERM_ALL	(DSMEM_WIRE_PERM_READ | DSMEM_WIRE_PERM_WRITE)

/*
 * The data of a GRANT: a segment made reachable to the receiving peer.
 * The segment [base, base + size) is covered by nkeys memory regions of
 * span bytes each (the last one may be shorter); region i starts at
 * base + i * span and is reached with rkeys[i].  nkeys is 0 for a segment
 * that is reachable by messages only (page-table translation).
 */
struct dsmem_wire_grant {
	__le64 base;
	__le64 size;
	__le64 span;
	__le32 perm;
	__le32 nkeys;
	__le32 rkeys[];
};

#define DSMEM_WIRE_GRANT_MAX_KEYS					\
	((DSMEM_WIRE_MAX_DATA - sizeof(struct dsmem_wire_grant)) / sizeof(__le32))

/* an extent of the Slope range, as in struct dsmem_slope_extent */
struct dsmem_wire_slope_extent {
	__le64 addr;
	__le64 len;
};

/*
 * The staged data of a SLOPE_MIG_BEGIN: the object's extents, sorted and
 * disjoint, each a whole number of units.  Unit k of the migration is the
 * k-th unit of the extents in order.
 */
struct dsmem_wire_slope_begin {
	__le64 cookie;
	__le64 units;
	__le32 nextents;
	__u8 unit_shift;	/* 12 or 21 */
	__u8 reserved[3];
	struct dsmem_wire_slope_extent extents[];
};

/*
 * Memory regions over a migration's units in order: unit k is at iova
 * (k / per_mr) * span + (k % per_mr) << unit_shift of rkeys[k / per_mr],
 * with per_mr = span >> unit_shift.
 */
struct dsmem_wire_slope_keys {
	__le64 span;
	__le32 nkeys;
	__le32 reserved;
	__le32 rkeys[];
};

#define DSMEM_WIRE_SLOPE_KEYS_MAX					\
	((DSMEM_WIRE_MAX_DATA - sizeof(struct dsmem_wire_slope_keys)) / sizeof(__le32))

/*
 * The staged data of a SLOPE_MIG_HANDOVER: the units written since the
 * last prefill round (to be pulled by the destination) as a bitmap of
 * ceil(units / 64) little-endian words, after the source's keys.
 */
struct dsmem_wire_slope_handover {
	__le64 dirty_units;
	__le64 bitmap_words;
	__le64 span;
	__le32 nkeys;
	__le32 reserved;
	/* __le32 rkeys[nkeys], padded to 8 bytes, then __le64 bitmap[] */
};

/* struct dsmem_wire_cm.flags */
#define DSMEM_WIRE_CM_F_AUTH	0x0001	/* the sender proves a key (AUTH) */
/* another path of a peer whose first connection is up (see PATHS) */
#define DSMEM_WIRE_CM_F_PATH	0x0002
#define DSMEM_WIRE_CM_F_ALL	(DSMEM_WIRE_CM_F_AUTH | DSMEM_WIRE_CM_F_PATH)
/* bytes of one address in REPLY_PATHS */
#define DSMEM_WIRE_PATH_ADDR_LEN	16

#define DSMEM_WIRE_NONCE_LEN	16
#define DSMEM_WIRE_GID_LEN	16	/* an IB GID; RoCE's holds the IP address */
#define DSMEM_WIRE_AUTH_LEN	32	/* an HMAC-SHA256 */

/**
 * struct dsmem_wire_cm - rdma_cm private data of CONNECT and ACCEPT
 * @magic:	DSMEM_WIRE_MAGIC
 * @version:	DSMEM_WIRE_VERSION
 * @flags:	DSMEM_WIRE_CM_F_*; both ends must agree
 * @src_node:	the sender's node id
 * @dst_node:	CONNECT: the node expected at the other end (0: any);
 *		ACCEPT: the connecting node's id, echoed
 * @reserved1:	must be 0
 * @nonce:	fresh random bytes of the sender, for this connection only
 *
 * With DSMEM_WIRE_CM_F_AUTH each end sends one AUTH, whose data is
 * HMAC-SHA256(key, "dsmem-auth-v2" || role || connector's nonce ||
 * acceptor's nonce || connector's GID || acceptor's GID || connector's
 * node id || acceptor's node id || connector's QPN || acceptor's QPN),
 * role 0 from the end that connected and 1 from the end that accepted,
 * ids and QPNs as __le32.  Each end takes the GIDs from the addresses its
 * own connection was set up for, not from anything the other end says.
 * Both nonces make a recorded proof useless on a new connection; the
 * GIDs and QPNs tie it to this one, so that a proof relayed from another
 * connection (a splice), or from this node's own connect turned back at
 * it (a reflection), names the wrong addresses; and the role keeps an
 * end's own proof from being sent back to it.
 */
struct dsmem_wire_cm {
	__u8 magic;
	__u8 version;
	__le16 flags;
	__le32 src_node;
	__le32 dst_node;
	__le32 reserved1;
	__u8 nonce[DSMEM_WIRE_NONCE_LEN];
};

#endif /* _DSMEM_PROTO_H */
