/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: encoder and decoder of the wire format in dsmem_proto.h.
 * Portable C: the module and the userspace tests compile the same file.
 */
#ifndef _DSMEM_WIRE_H
#define _DSMEM_WIRE_H

#include "dsmem_portable.h"

#ifdef __KERNEL__
#include <uapi/linux/dsmem.h>
#else
#include <linux/dsmem.h>
#endif
#include "dsmem_proto.h"

/* A message in host byte order. */
struct dsmem_wire_msg {
	u8 opcode;
	u8 flags;
	u16 status;
	u32 tag;
	u32 seq;
	u64 addr;
	u64 len;
	u64 aux;
	u32 handled;
	/* data of REPLY_READ and WRITE: encode reads it, decode points it
	 * into the received buffer
	 */
	const void *data;
};

/* A reply to a request (answered by nothing), not a request. */
bool dsmem_wire_is_reply(u8 opcode);
/*
 * A message that waits in the receiver's buffer until handled, and so
 * counts in the sender's window (DSMEM_WIRE_REQ_WINDOW): not a reply,
 * PING or AUTH.
 */
bool dsmem_wire_is_request(u8 opcode);
/* Bytes a message of this opcode and length occupies; 0 if invalid. */
size_t dsmem_wire_size(u8 opcode, u64 len);
/* Encode into buf; the number of bytes written, or a negative errno. */
int dsmem_wire_encode(void *buf, size_t size, const struct dsmem_wire_msg *m);
/* Decode a received message of exactly size bytes; 0 or a negative errno. */
int dsmem_wire_decode(const void *buf, size_t size, struct dsmem_wire_msg *m);
/* 0 if reply answers req (tags aside), else -EPROTO. */
int dsmem_wire_reply_check(const struct dsmem_wire_msg *req,
			   const struct dsmem_wire_msg *reply);

/* A GRANT's data, in host byte order; rkeys points into the buffer. */
struct dsmem_wire_grant_info {
	u64 base;
	u64 size;
	u64 span;
	u32 perm;
	u32 nkeys;
	const void *rkeys;	/* nkeys little-endian u32 */
};

/* Bytes of a GRANT's data with nkeys keys; 0 if too many. */
size_t dsmem_wire_grant_size(u32 nkeys);
int dsmem_wire_grant_encode(void *buf, size_t size,
			    const struct dsmem_wire_grant_info *g,
			    const u32 *rkeys);
int dsmem_wire_grant_decode(const void *buf, size_t size,
			    struct dsmem_wire_grant_info *g);
u32 dsmem_wire_grant_rkey(const struct dsmem_wire_grant_info *g, u32 i);

/* rdma_cm private data: node ids of both ends, and the handshake's. */
struct dsmem_wire_cm_info {
	u32 src_node;
	u32 dst_node;
	u16 flags;
	u8 nonce[DSMEM_WIRE_NONCE_LEN];
};

/* The bytes an AUTH proof is the HMAC of (see struct dsmem_wire_cm). */
#define DSMEM_WIRE_AUTH_INPUT_LEN \
	(13 + 1 + 2 * DSMEM_WIRE_NONCE_LEN + 2 * DSMEM_WIRE_GID_LEN + 16)

struct dsmem_wire_auth_info {
	u8 role;			/* 0: the connecting end, 1: accepting */
	const u8 *nonce_c, *nonce_a;
	const u8 *gid_c, *gid_a;	/* DSMEM_WIRE_GID_LEN bytes each */
	u32 node_c, node_a;
	u32 qpn_c, qpn_a;
};

void dsmem_wire_auth_input(u8 out[DSMEM_WIRE_AUTH_INPUT_LEN],
			   const struct dsmem_wire_auth_info *a);

void dsmem_wire_cm_encode(struct dsmem_wire_cm *cm,
			  const struct dsmem_wire_cm_info *info);
int dsmem_wire_cm_decode(const void *buf, size_t size,
			 struct dsmem_wire_cm_info *info);

#endif /* _DSMEM_WIRE_H */
