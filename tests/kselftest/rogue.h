/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A rogue peer: a userspace end of a dsmem connection, on librdmacm and
 * libibverbs, that claims whatever node id it is told and sends whatever
 * bytes it is told -- well-formed messages through the module's own wire
 * codec (kernel/dsmem_wire.c), or anything else raw.  rogue_test
 * drives it against a node in the guest.
 */
#ifndef DSMEM_TEST_ROGUE_H
#define DSMEM_TEST_ROGUE_H

#include <stddef.h>
#include <stdint.h>

#include "dsmem_wire.h"

struct rogue;

/* how a rogue answers the node's GRANT and REVOKE while it waits */
enum rogue_mode {
	ROGUE_ANSWER,		/* REPLY_GRANT / REPLY_REVOKE, status 0 */
	ROGUE_SILENT,		/* never */
	ROGUE_REFUSE,		/* a GRANT: REPLY_GRANT, status ENOMEM; a REVOKE: 0 */
};

/*
 * Connect to the node listening at addr:port, claiming node id src (and
 * expecting dst, 0: any).  0, or -ECONNREFUSED when the node rejects the
 * connect, or another -errno.
 */
int rogue_connect(struct rogue **r, const char *addr, uint16_t port, uint32_t src,
		  uint32_t dst, enum rogue_mode mode);

/*
 * What a rogue does about authentication (struct dsmem_wire_cm): whether
 * its connect asks for it (DSMEM_WIRE_CM_F_AUTH), and then which proof it
 * sends -- the right one for key (which may be the wrong key), exactly
 * the bytes of proof (a recorded one, replayed), or none at all.  With
 * key and not no_check, the node's own proof is checked too
 * (-EKEYREJECTED if wrong).
 */
struct rogue_auth {
	int flag;
	const void *key;
	size_t key_len;
	const uint8_t *proof;	/* DSMEM_WIRE_AUTH_LEN bytes */
	int no_check;		/* send the proof, do not wait for the node's */
	const char *from;	/* the source IPv4 address; NULL: the route's */
	int path;		/* claim to be another path (CM_F_PATH) */
	/*
	 * The IPv4 addresses the proofs name as the connector's and the
	 * acceptor's (NULL: those of the path the rogue's QP talks over) --
	 * a proof made on another connection, relayed or turned back
	 */
	const char *proof_from, *proof_to;
};

int rogue_connect_auth(struct rogue **r, const char *addr, uint16_t port, uint32_t src,
		       uint32_t dst, enum rogue_mode mode, const struct rogue_auth *auth);
/*
 * rogue_connect_auth in three steps, for connects that must reach the
 * node together: everything the rogue prepares on its own (addresses,
 * QP, buffers); the connect request, sent without waiting; and the wait
 * for the node's answer (up to timeout_ms), then the handshake.  0 or
 * -errno each (-ECONNREFUSED from rogue_established when the node
 * rejects the connect); a rogue prepared is the caller's to close,
 * whatever the later steps return.  auth is copied, not what it points
 * to: that must last until rogue_established.
 */
int rogue_prepare(struct rogue **r, const char *addr, uint16_t port, uint32_t src,
		  uint32_t dst, enum rogue_mode mode, const struct rogue_auth *auth);
int rogue_dial(struct rogue *r);
int rogue_established(struct rogue *r, int timeout_ms);
/* the proof this rogue sent (DSMEM_WIRE_AUTH_LEN bytes), or NULL */
const uint8_t *rogue_proof(const struct rogue *r);
void rogue_close(struct rogue *r);

/* send len raw bytes as one message */
int rogue_send_raw(struct rogue *r, const void *buf, size_t len);
/* encode and send m (its seq is filled in) */
int rogue_send(struct rogue *r, struct dsmem_wire_msg *m);
/*
 * The next message from the node that is not a GRANT or REVOKE handled
 * by the mode, decoded into m; its data (if any) copied to data (at most
 * max bytes).  -ETIMEDOUT after timeout_ms, -ECONNRESET when the node
 * closed the connection, -EBADMSG when it does not decode.
 */
int rogue_recv(struct rogue *r, struct dsmem_wire_msg *m, void *data, size_t max,
	       int timeout_ms);
/*
 * Send req with a fresh tag and wait for the message that carries it;
 * the node's own messages meanwhile are kept for rogue_recv, without
 * their data.
 */
int rogue_call(struct rogue *r, struct dsmem_wire_msg *req, struct dsmem_wire_msg *reply,
	       void *data, size_t max, int timeout_ms);
/* the node closed the connection (waits up to timeout_ms for it) */
int rogue_wait_closed(struct rogue *r, int timeout_ms);
/* GRANTs and REVOKEs the rogue received so far */
unsigned int rogue_grants(const struct rogue *r);
unsigned int rogue_revokes(const struct rogue *r);
/*
 * From now on, receive buffers the rogue consumes (rogue_held of them)
 * are not posted again, so that the node's sends meet no buffer
 * (receiver not ready: its RC QP retries them).
 */
void rogue_hold_recvs(struct rogue *r);
unsigned int rogue_held(const struct rogue *r);
/* n of the held buffers (the first taken first) posted again */
int rogue_release_held(struct rogue *r, unsigned int n);
/*
 * From now on the rogue's messages say it handled none of the node's
 * requests (DSMEM_WIRE_REQ_WINDOW), though it does.
 */
void rogue_mute_handled(struct rogue *r);
/* the node's requests (not its answers, PINGs or proof) received so far */
unsigned int rogue_requests(const struct rogue *r);
/* how it answers the node's GRANTs and REVOKEs from now on */
void rogue_set_mode(struct rogue *r, enum rogue_mode mode);

/* A GRANT received: the segment's range, its permissions, its first key. */
struct rogue_grant {
	uint64_t base;
	uint64_t size;
	uint64_t span;		/* bytes each key covers */
	uint32_t perm;		/* DSMEM_PERM_* */
	uint32_t nkeys;
	uint32_t rkey0;		/* for [base, base + span) */
};

/* The GRANT received back GRANTs before the last (0: the last); -ENOENT. */
int rogue_grant(const struct rogue *r, unsigned int back, struct rogue_grant *g);
/*
 * An RDMA WRITE of len bytes (at most a message's) to the node's addr
 * under rkey.  0 once it completed; -EACCES when the node refused it
 * (which ends the connection, its QP in error); another -errno.
 */
int rogue_write(struct rogue *r, uint64_t addr, uint32_t rkey, const void *buf, size_t len);

#endif
