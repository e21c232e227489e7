// SPDX-License-Identifier: BSD-2-Clause
/*
 * A malicious peer against a node (issue 21's harness): a userspace rogue
 * (rogue.c) connects to node 1, claiming node id 9, which node 1 has
 * granted two segments, and misbehaves on purpose.  Each case checks that
 * the node refuses what it must, says so (a reply with an error, or the
 * connection closed), counts it, and keeps serving node 2, an honest peer.
 * The debug tier runs the same cases under KASAN, lockdep and kmemleak.
 *
 * Both nodes authenticate their peers with the key "rogue-cluster".  The
 * rogue of the protocol cases holds it (a member gone bad); the
 * authentication cases try without it: no handshake, a wrong key, a
 * replayed proof, a spoofed node id, a flood of connects -- or with it,
 * proving for another pair of addresses (a splice, a reflection).
 *
 * Not yet here: Slope's migration and lease abuse.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "dsmem_slope_core.h"
#include "rogue.h"
#include "util.h"

#define PORT_1		7495
#define PORT_2		7496
#define ROGUE_ID	9
#define SEG_SIZE	(1u << 20)
#define WAIT_MS		3000
#define KEY_NAME	"rogue-cluster"
/*
 * A generous bound for a wait that ends on the node's own event (a
 * connection closed, a counter grown), such as an unauthenticated
 * connection's end after DSMEM_AUTH_TIMEOUT_MS (5 s): a slow host takes
 * longer, and changes no verdict.
 */
#define AUTH_WAIT_MS	60000

static uint8_t cluster_key[32];
static const struct rogue_auth keyed = {
	.flag = 1, .key = cluster_key, .key_len = sizeof(cluster_key),
};

FIXTURE(rogue) {
	struct ds_ctx *ctx;
	struct rogue *r;
	const char *addr;
	uint32_t peer;		/* node 2's peer of node 1 */
	uint64_t seg;		/* node 1's, granted rw to the rogue and node 2 */
	uint32_t seg_id;
	uint64_t pseg;		/* page-translated, granted rw to the rogue */
	uint32_t pseg_id;
	uint64_t closed;	/* node 1's segment granted to nobody */
	uint64_t msg_timeout;	/* msg_timeout_ms to put back; 0: untouched */
	uint64_t io_timeout;	/* io_timeout_ms to put back; 0: untouched */
};

/* Node 2 still reads and writes node 1's memory. */
static int honest_ok(struct ds_ctx *ctx, uint64_t seg)
{
	char out[64], in[64];
	int ret;

	snprintf(out, sizeof(out), "honest %ld", random());
	ret = ds_rdm_write(ctx, 2, seg + 4096, out, sizeof(out));
	if (!ret)
		ret = ds_rdm_read(ctx, 2, seg + 4096, in, sizeof(in));
	return ret ? ret : memcmp(out, in, sizeof(in)) ? -EIO : 0;
}

/*
 * The rogue, connected, with the grants node 1 pushes it answered (waited
 * for up to a minute: a slow host takes longer, and changes no verdict).
 */
static int rogue_up(struct rogue **r, const char *addr, unsigned int grants)
{
	struct dsmem_wire_msg m;
	int ret = rogue_connect_auth(r, addr, PORT_1, ROGUE_ID, 1, ROGUE_ANSWER, &keyed);

	for (int i = 0; !ret && rogue_grants(*r) < grants && i < 600; i++) {
		ret = rogue_recv(*r, &m, NULL, 0, 100);
		if (!ret) {
			/* the node asked something else */
			fprintf(stderr, "# rogue: unexpected opcode %u from the node\n", m.opcode);
			return -EPROTO;
		}
		if (ret == -ETIMEDOUT)
			ret = 0;
	}
	if (!ret && rogue_grants(*r) < grants)
		ret = -ETIMEDOUT;
	return ret;
}

/*
 * Close *r and connect again as the fixture's rogue: 0, or the last
 * -errno after AUTH_WAIT_MS (a hang's bound).  The node may still hold
 * the id a moment, while the old connection's release runs.
 */
static int rogue_again(struct rogue **r, const char *addr)
{
	int ret = -1;

	rogue_close(*r);
	*r = NULL;
	for (int64_t end = now_ms() + AUTH_WAIT_MS; ret && now_ms() < end;) {
		ret = rogue_up(r, addr, 2);
		if (ret) {
			rogue_close(*r);
			*r = NULL;
			usleep(100000);
		}
	}
	return ret;
}

FIXTURE_SETUP(rogue)
{
	struct ds_seg_info s;

	self->addr = env_or_die("DSMEM_LOCAL_ADDR");
	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	for (size_t i = 0; i < sizeof(cluster_key); i++)
		cluster_key[i] = (uint8_t)random();
	ASSERT_EQ(0, ds_key_add(self->ctx, KEY_NAME, cluster_key, sizeof(cluster_key), 1))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, ds_node_add_keyed(self->ctx, 1, "rxe0", PORT_1, KEY_NAME))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, ds_node_add_keyed(self->ctx, 2, "rxe0", PORT_2, KEY_NAME));
	/* the rogue claims ids from node 2's address: only the key decides */
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, 1, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	self->seg = s.addr;
	self->seg_id = s.id;
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_PAGES, &s));
	self->pseg = s.addr;
	self->pseg_id = s.id;
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	self->closed = s.addr;
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 1, self->seg_id, ROGUE_ID, DSMEM_PERM_ALL));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 1, self->pseg_id, ROGUE_ID, DSMEM_PERM_ALL));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 1, self->seg_id, 2, DSMEM_PERM_ALL));
	ASSERT_EQ(0, ds_peer_add(self->ctx, 2, self->addr, PORT_1, &self->peer))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, wait_rsegs(self->ctx, 2, self->peer, 1));
	ASSERT_EQ(0, rogue_up(&self->r, self->addr, 2));
}

FIXTURE_TEARDOWN(rogue)
{
	if (self->msg_timeout)
		param_set("msg_timeout_ms", self->msg_timeout);
	if (self->io_timeout)
		param_set("io_timeout_ms", self->io_timeout);
	rogue_close(self->r);
	ds_node_del(self->ctx, 7);	/* seg_del_while_last_device_goes' */
	ds_node_del(self->ctx, 100);	/* slope_alloc_asks_without_alloc_lock's */
	ds_node_del(self->ctx, 2);
	ds_node_del(self->ctx, 1);
	ds_key_del(self->ctx, KEY_NAME);
	ds_ctx_close(self->ctx);
}

/* A raw header: magic, version, opcode, units, tag; the rest zero. */
static void raw_hdr(uint8_t *b, size_t size, uint8_t op, uint16_t units, uint32_t tag)
{
	struct dsmem_wire_hdr *h = (void *)b;

	memset(b, 0, size);
	h->magic = DSMEM_WIRE_MAGIC;
	h->version = DSMEM_WIRE_VERSION;
	h->opcode = op;
	h->units = htole16(units);
	h->tag = htole32(tag);
	h->len = htole64(8);
}

/*
 * Messages the codec refuses: each that names a tag is answered with
 * REPLY_ERROR and that tag, each that does not is dropped; all are
 * counted, and the connection carries on.
 */
TEST_F_TIMEOUT(rogue, garbage_is_refused, 120)
{
	static const struct {
		const char *what;
		uint8_t op;
		size_t size;
		int edit;
	} cases[] = {
		{ "unknown opcode", 200, 64, 0 },
		{ "opcode 0", 0, 64, 0 },
		{ "wrong version", DSMEM_WIRE_READ, 64, 1 },
		{ "units say 2, one sent", DSMEM_WIRE_READ, 64, 2 },
		{ "not whole units", DSMEM_WIRE_READ, 100, 0 },
		{ "reserved bytes set", DSMEM_WIRE_READ, 64, 3 },
		{ "a request with a status", DSMEM_WIRE_READ, 64, 4 },
		{ "unknown flags", DSMEM_WIRE_READ, 64, 5 },
		{ "WRITE longer than its data", DSMEM_WIRE_WRITE, 128, 6 },
		{ "READ beyond the inline maximum", DSMEM_WIRE_READ, 64, 7 },
		{ "READ wrapping the address space", DSMEM_WIRE_READ, 64, 8 },
		{ "nonzero padding after WRITE data", DSMEM_WIRE_WRITE, 128, 9 },
	};
	uint64_t bad = stat_value(self->ctx, "msg_bad");
	uint8_t b[256];
	struct dsmem_wire_msg m, rd = { .opcode = DSMEM_WIRE_READ, .len = 8 };
	size_t nanswered = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dsmem_wire_hdr *h = (void *)b;
		uint32_t tag = 1000 + i;

		raw_hdr(b, sizeof(b), cases[i].op, cases[i].size / 64, tag);
		h->addr = htole64(self->seg);
		switch (cases[i].edit) {
		case 1: h->version = DSMEM_WIRE_VERSION + 1; break;
		case 2: h->units = htole16(2); break;
		case 3: h->reserved[sizeof(h->reserved) - 1] = 1; break;
		case 4: h->status = htole16(5); break;
		case 5: h->flags = 0x80; break;
		case 6: h->len = htole64(100); break;
		case 7: h->len = htole64(DSMEM_WIRE_MAX_DATA + 1); break;
		case 8: h->addr = htole64(UINT64_MAX - 4); break;
		case 9: b[64 + 8 + 3] = 1; break;
		}
		ASSERT_EQ(0, rogue_send_raw(self->r, b, cases[i].size)) TH_LOG("%s", cases[i].what);
		ASSERT_EQ(0, rogue_recv(self->r, &m, NULL, 0, WAIT_MS)) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(DSMEM_WIRE_REPLY_ERROR, m.opcode) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(tag, m.tag) TH_LOG("%s", cases[i].what);
		EXPECT_NE(0, m.status) TH_LOG("%s", cases[i].what);
		nanswered++;
	}
	/* nothing to answer: no magic, or less than a header */
	raw_hdr(b, sizeof(b), DSMEM_WIRE_READ, 1, 77);
	b[0] = 0;
	ASSERT_EQ(0, rogue_send_raw(self->r, b, 64));
	ASSERT_EQ(0, rogue_send_raw(self->r, "\xd5\x01\x05", 3));
	EXPECT_EQ(-ETIMEDOUT, rogue_recv(self->r, &m, NULL, 0, 500));

	/* every one counted; the connection still serves a good request */
	EXPECT_LE(bad + nanswered + 2, stat_value(self->ctx, "msg_bad"));
	rd.addr = self->seg;
	ASSERT_EQ(0, rogue_call(self->r, &rd, &m, NULL, 0, WAIT_MS));
	EXPECT_EQ(DSMEM_WIRE_REPLY_READ, m.opcode);
	EXPECT_EQ(0, m.status);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * Well-formed requests for memory the rogue may not touch, or that is
 * not there: each answered with an error, nothing served, nothing
 * changed for the owner.
 */
TEST_F_TIMEOUT(rogue, out_of_range_is_refused, 120)
{
	uint8_t data[64], mark[64];
	char in[64];
	struct {
		const char *what;
		struct dsmem_wire_msg m;
		int want;		/* 0: any error */
	} cases[] = {
		{ "READ of a segment not granted",
		  { .opcode = DSMEM_WIRE_READ, .addr = self->closed, .len = 8 }, -EACCES },
		{ "WRITE to a segment not granted",
		  { .opcode = DSMEM_WIRE_WRITE, .flags = DSMEM_WIRE_F_ACK, .addr = self->closed,
		    .len = 8, .data = data }, -EACCES },
		{ "READ past a segment's end",
		  { .opcode = DSMEM_WIRE_READ, .addr = self->seg + SEG_SIZE - 4, .len = 8 }, 0 },
		{ "WRITE past a segment's end",
		  { .opcode = DSMEM_WIRE_WRITE, .flags = DSMEM_WIRE_F_ACK,
		    .addr = self->seg + SEG_SIZE - 4, .len = 8, .data = data }, 0 },
		{ "READ between segments",
		  { .opcode = DSMEM_WIRE_READ, .addr = self->seg + SEG_SIZE + 4096, .len = 8 }, 0 },
		{ "READ of another node's address",
		  { .opcode = DSMEM_WIRE_READ, .addr = DSMEM_GADDR(3, 1, 4096), .len = 8 },
		  -EFAULT },
		{ "READ of an unmapped page of a paged segment",
		  { .opcode = DSMEM_WIRE_READ, .addr = self->pseg + 8192, .len = 8 }, -EFAULT },
		{ "ALLOC larger than the segment",
		  { .opcode = DSMEM_WIRE_ALLOC, .len = 2 * SEG_SIZE, .aux = self->pseg_id },
		  -ENOMEM },
		{ "ALLOC in a segment id out of range",
		  { .opcode = DSMEM_WIRE_ALLOC, .len = 4096, .aux = 1ull << 40 }, -EINVAL },
		{ "ALLOC in a segment not granted",
		  { .opcode = DSMEM_WIRE_ALLOC, .len = 4096, .aux = self->pseg_id + 1 },
		  -EACCES },
		{ "FREE of what was never allocated",
		  { .opcode = DSMEM_WIRE_FREE, .addr = self->pseg + 4096 }, -EINVAL },
		{ "FREE in a segment not granted",
		  { .opcode = DSMEM_WIRE_FREE, .addr = self->closed }, -EACCES },
		{ "REVOKE of a grant never given",
		  { .opcode = DSMEM_WIRE_REVOKE, .addr = 0x123456789000ull }, 0 },
		{ "Slope BEGIN with nothing staged",
		  { .opcode = DSMEM_WIRE_SLOPE_MIG_BEGIN, .len = 64, .aux = 5 }, 0 },
		{ "Slope HANDOVER of no migration",
		  { .opcode = DSMEM_WIRE_SLOPE_MIG_HANDOVER, .len = 64, .aux = 6 }, 0 },
		{ "Slope PUT beyond the staging limit",
		  { .opcode = DSMEM_WIRE_SLOPE_MIG_PUT, .addr = 1ull << 30, .len = 64,
		    .aux = 7, .data = data }, 0 },
		{ "Slope DONE of no migration",
		  { .opcode = DSMEM_WIRE_SLOPE_MIG_DONE, .aux = 8 }, 0 },
	};
	struct dsmem_wire_msg m, rd = { .opcode = DSMEM_WIRE_READ, .len = sizeof(in) };

	/* the owner's bytes, which no refused WRITE may change */
	memset(data, 0xee, sizeof(data));
	memset(mark, 0x11, sizeof(mark));
	ASSERT_EQ(0, ds_rdm_write(self->ctx, 2, self->seg + SEG_SIZE - sizeof(mark), mark,
				  sizeof(mark)));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, rogue_call(self->r, &cases[i].m, &m, in, sizeof(in), WAIT_MS))
			TH_LOG("%s", cases[i].what);
		EXPECT_NE(0, m.status) TH_LOG("%s: answered %u", cases[i].what, m.opcode);
		if (cases[i].want)
			EXPECT_EQ(-cases[i].want, m.status) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(0, m.len) TH_LOG("%s: an error carries no data", cases[i].what);
	}
	/* what the refused writes aimed at is as it was */
	rd.addr = self->seg + SEG_SIZE - sizeof(in);
	ASSERT_EQ(0, rogue_call(self->r, &rd, &m, in, sizeof(in), WAIT_MS));
	EXPECT_EQ(0, m.status);
	EXPECT_EQ(0, memcmp(mark, in, sizeof(in)));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/* Node 1's ALLOC of remote memory, sent to the rogue, in a thread. */
struct ask {
	struct ds_ctx *ctx;
	int ret;
	uint64_t va, pa;
	char buf[8];
	bool read;
	uint64_t addr;
};

static void *ask_rogue(void *arg)
{
	struct ask *a = arg;

	if (a->read)
		a->ret = ds_rdm_read(a->ctx, 1, a->addr, a->buf, sizeof(a->buf));
	else
		a->ret = ds_rdm_alloc(a->ctx, 1, ROGUE_ID, 1, 4096, &a->va, &a->pa);
	return NULL;
}

/*
 * Replies are matched to their request by opcode and range, not by tag
 * alone: a reply that does not answer fails its caller with EPROTO, is
 * counted, and closes the connection; nothing unwritten reaches the
 * caller.
 */
TEST_F_TIMEOUT(rogue, reply_must_answer_its_request, 180)
{
	static const struct {
		const char *what;
		bool read;
		uint8_t op;
		int64_t addr_off, len;
	} cases[] = {
		{ "REPLY_READ to an ALLOC", false, DSMEM_WIRE_REPLY_READ, 0, 8 },
		{ "REPLY_GRANT to an ALLOC", false, DSMEM_WIRE_REPLY_GRANT, 0, 0 },
		{ "REPLY_ALLOC to a READ", true, DSMEM_WIRE_REPLY_ALLOC, 0, 0 },
		{ "REPLY_READ of another range", true, DSMEM_WIRE_REPLY_READ, 8, 8 },
		{ "REPLY_READ longer than asked", true, DSMEM_WIRE_REPLY_READ, 0, 64 },
	};
	uint8_t zero[64] = {};
	int ret;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t bad = stat_value(self->ctx, "msg_bad");
		struct ask a = { .ctx = self->ctx, .read = cases[i].read };
		struct dsmem_wire_msg req, reply = { .opcode = cases[i].op };
		pthread_t t;

		if (i) {
			rogue_close(self->r);
			ASSERT_EQ(0, rogue_up(&self->r, self->addr, 2)) TH_LOG("%s", cases[i].what);
		}
		if (cases[i].read) {
			/* the rogue grants node 1 a segment of its "own" */
			uint8_t g[64];
			uint32_t key = 0x1234;
			struct dsmem_wire_grant_info gi = {
				.base = DSMEM_GADDR(ROGUE_ID, 1, 0),
				.size = SEG_SIZE, .span = SEG_SIZE, .perm = DSMEM_PERM_ALL, .nkeys = 1,
			};
			struct dsmem_wire_msg gm = { .opcode = DSMEM_WIRE_GRANT, .addr = gi.base,
						     .data = g };
			struct dsmem_wire_msg gr;

			gm.len = dsmem_wire_grant_encode(g, sizeof(g), &gi, &key);
			ASSERT_LT(0, (int)gm.len);
			ASSERT_EQ(0, rogue_call(self->r, &gm, &gr, NULL, 0, WAIT_MS));
			ASSERT_EQ(DSMEM_WIRE_REPLY_GRANT, gr.opcode);
			ASSERT_EQ(0, gr.status) TH_LOG("the node refused the rogue's grant");
			a.addr = gi.base + 64;
		}
		ASSERT_EQ(0, pthread_create(&t, NULL, ask_rogue, &a));
		ASSERT_EQ(0, rogue_recv(self->r, &req, NULL, 0, 10000)) TH_LOG("%s", cases[i].what);
		ASSERT_EQ(cases[i].read ? DSMEM_WIRE_READ : DSMEM_WIRE_ALLOC, req.opcode);
		reply.tag = req.tag;
		reply.addr = req.addr + cases[i].addr_off;
		reply.len = cases[i].len;
		if (reply.opcode == DSMEM_WIRE_REPLY_READ)
			reply.data = zero;
		/* the node may close before it acknowledges the send */
		ret = rogue_send(self->r, &reply);
		EXPECT_TRUE(ret == 0 || ret == -ECONNRESET) TH_LOG("%s: send %d", cases[i].what, ret);
		pthread_join(t, NULL);
		EXPECT_EQ(-EPROTO, a.ret) TH_LOG("%s", cases[i].what);
		EXPECT_LT(bad, stat_value(self->ctx, "msg_bad")) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(0, rogue_wait_closed(self->r, 10000)) TH_LOG("%s: still connected",
									cases[i].what);
		EXPECT_EQ(0, honest_ok(self->ctx, self->seg)) TH_LOG("%s", cases[i].what);
	}
}

/*
 * A peer that never answers a GRANT: node 1 sends it one when it
 * connects, and awaits the answer without its control-plane lock -- the
 * administrator's requests and the other peers' grants go on meanwhile --
 * then drops the silent peer after msg_timeout_ms.
 *
 * Decided on events, not on how long the requests took: the GRANT waits
 * under a timeout far longer than the requests can take on any host
 * (SILENT_WAIT_MS), so the requests must all be done while it is still
 * unanswered -- no timeout counted, the silent peer still connected.  A
 * control plane that waited for the silent peer would hang them until the
 * GRANT timed out, and that would show in both.  Then, with the timeout
 * back as it was, a second GRANT to the silent peer goes unanswered too,
 * and the peer is dropped and counted.
 */
#define SILENT_WAIT_MS	90000

TEST_F_TIMEOUT(rogue, silent_peer_stalls_nobody, 240)
{
	uint64_t timeouts = stat_value(self->ctx, "msg_timeout");
	struct ds_seg_info s, s2;
	struct rogue *silent;
	struct dsmem_wire_msg m;
	int ret;

	ASSERT_EQ(0, param_get("msg_timeout_ms", &self->msg_timeout));
	ASSERT_EQ(0, param_set("msg_timeout_ms", SILENT_WAIT_MS));
	rogue_close(self->r);
	self->r = NULL;
	ASSERT_EQ(0, rogue_connect_auth(&silent, self->addr, PORT_1, ROGUE_ID, 1, ROGUE_SILENT,
				       &keyed));
	/* the tear-down closes it if an assertion ends the test early */
	self->r = silent;
	/* node 1 waits for our answer from now on */
	for (int i = 0; i < 600 && !rogue_grants(silent); i++)
		rogue_recv(silent, &m, NULL, 0, 100);
	ASSERT_LE(1, rogue_grants(silent));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	EXPECT_EQ(0, ds_seg_grant(self->ctx, 1, s.id, 2, DSMEM_PERM_ALL));
	EXPECT_EQ(0, ds_seg_del(self->ctx, 1, s.id));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
	/* all four done, and the GRANT is still unanswered */
	EXPECT_EQ(timeouts, stat_value(self->ctx, "msg_timeout"))
		TH_LOG("the silent peer's GRANT timed out before node 1's requests were done");
	EXPECT_EQ(-ETIMEDOUT, rogue_recv(silent, &m, NULL, 0, 0))
		TH_LOG("the silent peer was dropped before node 1's requests were done");

	/* and the silent peer is dropped, with the timeout as it was */
	ASSERT_EQ(0, param_set("msg_timeout_ms", self->msg_timeout));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s2));
	/* this one asks the silent peer itself: it waits out the timeout */
	ret = ds_seg_grant(self->ctx, 1, s2.id, ROGUE_ID, DSMEM_PERM_ALL);
	EXPECT_EQ(-ETIMEDOUT, ret) TH_LOG("the GRANT to the silent peer ended with %d", ret);
	EXPECT_EQ(0, rogue_wait_closed(silent, 60000));
	EXPECT_LT(timeouts, stat_value(self->ctx, "msg_timeout"));
	EXPECT_EQ(0, ds_seg_del(self->ctx, 1, s2.id));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
	self->msg_timeout = 0;
}

/* Node 1's narrowing of the rogue's grant of a segment to read-only. */
struct narrowing {
	struct ds_ctx *ctx;
	uint32_t seg_id;
	int ret;
};

static void *narrow(void *arg)
{
	struct narrowing *n = arg;

	n->ret = ds_seg_grant(n->ctx, 1, n->seg_id, ROGUE_ID, DSMEM_PERM_READ);
	return NULL;
}

/*
 * A narrowing the peer refuses takes its write access all the same.
 * Node 1 narrows the rogue's grant of seg from rw to r, and the rogue
 * answers that GRANT with ENOMEM, as an honest peer out of memory would.
 * The rw registration it held must not outlive the refusal: a write
 * under its rkey, which landed before, is refused at the NIC, and the
 * bytes stay as they were.
 */
TEST_F_TIMEOUT(rogue, refused_narrowing_keeps_no_write, 120)
{
	char before[64] = "written under the rw grant";
	char after[64] = "written after the narrowing was refused";
	struct narrowing n = { .ctx = self->ctx, .seg_id = self->seg_id };
	struct rogue_grant g = {};
	struct dsmem_wire_msg m;
	unsigned int grants;
	char in[64];
	pthread_t t;
	int ret;

	/* seg's rw grant, of the two the rogue answered */
	for (unsigned int back = 0; !rogue_grant(self->r, back, &g) && g.base != self->seg; back++)
		;
	ASSERT_EQ(self->seg, g.base);
	ASSERT_EQ(DSMEM_PERM_ALL, g.perm);
	ASSERT_EQ(0, rogue_write(self->r, self->seg + 8192, g.rkey0, before, sizeof(before)));
	ASSERT_EQ(0, ds_rdm_read(self->ctx, 2, self->seg + 8192, in, sizeof(in)));
	ASSERT_EQ(0, memcmp(before, in, sizeof(in))) TH_LOG("the rw write did not land");

	grants = rogue_grants(self->r);
	rogue_set_mode(self->r, ROGUE_REFUSE);
	ASSERT_EQ(0, pthread_create(&t, NULL, narrow, &n));
	/* the node's GRANT is refused as it comes */
	for (int i = 0; i < 600 && rogue_grants(self->r) == grants; i++)
		rogue_recv(self->r, &m, NULL, 0, 100);
	pthread_join(t, NULL);
	ASSERT_LT(grants, rogue_grants(self->r));
	EXPECT_EQ(-ENOMEM, n.ret) TH_LOG("the refused narrowing ended with %d", n.ret);

	ret = rogue_write(self->r, self->seg + 8192, g.rkey0, after, sizeof(after));
	EXPECT_EQ(-EACCES, ret) TH_LOG("a write under the old rw rkey ended with %d", ret);
	ASSERT_EQ(0, ds_rdm_read(self->ctx, 2, self->seg + 8192, in, sizeof(in)));
	EXPECT_EQ(0, memcmp(before, in, sizeof(in))) TH_LOG("the segment holds '%.64s'", in);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * The rogue's 32 receive buffers filled with node 1's answers to 40 of
 * its requests, taken and not given back: 8 answers wait for a buffer.
 */
static void answers_wait(struct __test_metadata *_metadata, struct rogue *r)
{
	struct dsmem_wire_msg m;

	rogue_hold_recvs(r);
	for (unsigned int i = 0; i < 40; i++) {
		struct dsmem_wire_msg q = { .opcode = DSMEM_WIRE_SLOPE_LEASE_RET, .tag = 1000 + i };

		ASSERT_EQ(0, rogue_send(r, &q));
	}
	for (int i = 0; i < 600 && rogue_held(r) < 32; i++)
		rogue_recv(r, &m, NULL, 0, 100);
	ASSERT_EQ(32, rogue_held(r));
}

struct granting {
	struct ds_ctx *ctx;
	uint32_t seg_id;
	int ret, done;
};

static void *grant_run(void *arg)
{
	struct granting *g = arg;

	g->ret = ds_seg_grant(g->ctx, 1, g->seg_id, ROGUE_ID, DSMEM_PERM_ALL);
	__atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A peer that stops taking messages: node 1's sends to it wait (receiver
 * not ready, retried), and a grant's memory registration, made under
 * node 1's lock, completes only behind them.  The wait is bounded as a
 * message's answer is (msg_timeout_ms, conn_reg_timeout), and by the
 * RNR retries of the answer waiting ahead of it (six NAKs of at most
 * 655 ms, conn_rnr_exceeded); either bound ends the grant and the
 * connection, whichever is first.  The rogue fills its 32 buffers with
 * node 1's answers to 40 requests, so 8 answers wait ahead of the
 * registration.  The I/O watchdog, which would close the connection too
 * once nothing completes for io_timeout_ms, is set to a minute for the
 * case, out of the way: it must not be what ends the grant.  (The old
 * module waited here until the watchdog closed the connection.)
 */
TEST_F_TIMEOUT(rogue, stalled_peer_bounds_grant_registration, 180)
{
	uint64_t regs = stat_value(self->ctx, "conn_reg_timeout");
	uint64_t rnrs = stat_value(self->ctx, "conn_rnr_exceeded");
	uint64_t ios = stat_value(self->ctx, "conn_io_timeout");
	struct granting g = { .ctx = self->ctx };
	struct dsmem_wire_msg m;
	struct ds_seg_info s;
	pthread_t t;

	ASSERT_EQ(0, param_get("io_timeout_ms", &self->io_timeout));
	ASSERT_EQ(0, param_set("io_timeout_ms", 60000));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	g.seg_id = s.id;
	answers_wait(_metadata, self->r);

	ASSERT_EQ(0, pthread_create(&t, NULL, grant_run, &g));
	/* until the grant ends (the watchdog's minute: a hang's bound) */
	for (int i = 0; !__atomic_load_n(&g.done, __ATOMIC_ACQUIRE) && i < 900; i++)
		rogue_recv(self->r, &m, NULL, 0, 100);
	pthread_join(t, NULL);
	TH_LOG("the grant ended with %d", g.ret);
	EXPECT_NE(0, g.ret);
	EXPECT_EQ(0, rogue_wait_closed(self->r, AUTH_WAIT_MS));
	TH_LOG("registration timeouts +%llu, RNR retries exceeded +%llu",
	       (unsigned long long)(stat_value(self->ctx, "conn_reg_timeout") - regs),
	       (unsigned long long)(stat_value(self->ctx, "conn_rnr_exceeded") - rnrs));
	EXPECT_EQ(regs + rnrs + 1, stat_value(self->ctx, "conn_reg_timeout") +
				   stat_value(self->ctx, "conn_rnr_exceeded"))
		TH_LOG("the registration was bounded by neither msg_timeout_ms nor the RNR retries");
	EXPECT_EQ(ios, stat_value(self->ctx, "conn_io_timeout"));
	EXPECT_EQ(0, ds_seg_del(self->ctx, 1, s.id));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

struct seg_churn {
	struct ds_ctx *ctx;
	int ret, done;
};

static void *seg_churn_run(void *arg)
{
	struct seg_churn *c = arg;
	struct ds_seg_info s;

	c->ret = ds_seg_add(c->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s);
	if (!c->ret)
		c->ret = ds_seg_del(c->ctx, 1, s.id);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A grant to a peer that takes no message waits for its memory
 * registration, which completes behind the answers the peer holds up --
 * without node 1's lock.  The registration is posted (mr_reg_posted)
 * behind 8 answers waiting for the rogue's buffers, and the rogue gives
 * one back each second (within the RNR retries of the answer waiting for
 * it), so the registration cannot complete before it gave 8; meanwhile
 * node 1 makes and deletes another segment, which takes its lock twice.
 * Decided by the count of buffers given back when that was done: fewer
 * than 8.  Then the rogue goes, which ends the grant before its bound.
 * (With the registration under the lock, as before, the segment's making
 * waited until the registration ended.)
 */
TEST_F_TIMEOUT(rogue, stalled_grant_holds_no_node_lock, 180)
{
	uint64_t regs = stat_value(self->ctx, "conn_reg_timeout");
	uint64_t posted = stat_value(self->ctx, "mr_reg_posted");
	struct seg_churn c = { .ctx = self->ctx };
	struct granting g = { .ctx = self->ctx };
	unsigned int released = 0;
	struct dsmem_wire_msg m;
	pthread_t t, ct;
	struct ds_seg_info s;

	ASSERT_EQ(0, param_get("io_timeout_ms", &self->io_timeout));
	ASSERT_EQ(0, param_set("io_timeout_ms", 60000));
	ASSERT_EQ(0, param_get("msg_timeout_ms", &self->msg_timeout));
	ASSERT_EQ(0, param_set("msg_timeout_ms", 60000));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	g.seg_id = s.id;
	rogue_set_mode(self->r, ROGUE_ANSWER);
	answers_wait(_metadata, self->r);

	ASSERT_EQ(0, pthread_create(&t, NULL, grant_run, &g));
	for (int i = 0; i < 3000 && stat_value(self->ctx, "mr_reg_posted") == posted; i++)
		usleep(10000);
	ASSERT_LT(posted, stat_value(self->ctx, "mr_reg_posted"));

	ASSERT_EQ(0, pthread_create(&ct, NULL, seg_churn_run, &c));
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) && released < 12) {
		int64_t next = now_ms() + 1000;

		while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) && now_ms() < next)
			rogue_recv(self->r, &m, NULL, 0, 10);
		if (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
			break;
		ASSERT_EQ(0, rogue_release_held(self->r, 1));
		released++;
	}
	pthread_join(ct, NULL);
	TH_LOG("a segment made and deleted after %u buffers given back; the grant %s", released,
	       __atomic_load_n(&g.done, __ATOMIC_ACQUIRE) ? "was done" : "still waited");
	EXPECT_EQ(0, c.ret);
	EXPECT_GT(8, released) TH_LOG("the segment waited for the grant's registration");
	EXPECT_EQ(0, __atomic_load_n(&g.done, __ATOMIC_ACQUIRE));

	/*
	 * The rogue goes, and the grant with it, before any bound: rxe in
	 * 6.1 replays a registration after the RNR retries of a send ahead
	 * of it, fails it ("not free") and never completes it, so only the
	 * connection's end (or msg_timeout_ms) ends this one.
	 */
	rogue_close(self->r);
	self->r = NULL;
	pthread_join(t, NULL);
	EXPECT_NE(0, g.ret);
	EXPECT_EQ(regs, stat_value(self->ctx, "conn_reg_timeout"));
	EXPECT_EQ(0, ds_seg_del(self->ctx, 1, s.id));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A peer that gives a receive buffer back now and then, each time before
 * node 1's send waiting for one runs out of RNR retries, completes node
 * 1's sends one by one, each long after it was sent.  Once one has been
 * in flight for io_timeout_ms, the connection goes (conn_io_timeout).
 * The rogue fills its 32 buffers with node 1's answers to 40 requests,
 * then gives one back every 2 s (within six RNR NAKs of 655 ms): the
 * 8th answer would wait 16 s, and io_timeout_ms is 5 s for the case.
 * Decided by what happened first: the connection closed, or all 8 went
 * through.  (With the watchdog counting any completion as progress, as
 * the old module's did, all 8 went through and the connection stayed.)
 */
TEST_F_TIMEOUT(rogue, trickled_buffers_close_the_connection, 180)
{
	uint64_t ios = stat_value(self->ctx, "conn_io_timeout");
	unsigned int released = 0;
	struct dsmem_wire_msg m;

	ASSERT_EQ(0, param_get("io_timeout_ms", &self->io_timeout));
	ASSERT_EQ(0, param_set("io_timeout_ms", 5000));
	answers_wait(_metadata, self->r);

	while (released < 8) {
		int64_t next = now_ms() + 2000;
		int ret = 0;

		ASSERT_EQ(0, rogue_release_held(self->r, 1));
		released++;
		while (ret != -ECONNRESET && now_ms() < next)
			ret = rogue_recv(self->r, &m, NULL, 0, (int)(next - now_ms()));
		if (ret == -ECONNRESET)
			break;
	}
	TH_LOG("%u buffers given back when the connection %s", released,
	       rogue_wait_closed(self->r, 0) ? "was still up" : "closed");
	EXPECT_EQ(0, rogue_wait_closed(self->r, 0));
	EXPECT_GT(8, released);
	EXPECT_EQ(ios + 1, stat_value(self->ctx, "conn_io_timeout"));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

struct grant_pairs {
	struct ds_ctx *ctx;
	uint32_t seg_id;
	unsigned int pairs, done_pairs;
	int ret, done;
};

static void *grant_pairs_run(void *arg)
{
	struct grant_pairs *g = arg;

	for (g->done_pairs = 0; g->done_pairs < g->pairs; g->done_pairs++) {
		g->ret = ds_seg_grant(g->ctx, 1, g->seg_id, ROGUE_ID, DSMEM_PERM_READ);
		if (!g->ret)
			g->ret = ds_seg_revoke(g->ctx, 1, g->seg_id, ROGUE_ID);
		if (g->ret)
			break;
	}
	__atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* 17 GRANT and REVOKE pairs to the rogue, which answers them: g->ret. */
static void grant_pairs(struct __test_metadata *_metadata, struct rogue *r,
			struct grant_pairs *g)
{
	struct dsmem_wire_msg m;
	pthread_t t;

	g->pairs = 17;
	g->done = 0;
	ASSERT_EQ(0, pthread_create(&t, NULL, grant_pairs_run, g));
	for (int i = 0; i < 1200 && !__atomic_load_n(&g->done, __ATOMIC_ACQUIRE); i++)
		rogue_recv(r, &m, NULL, 0, 100);
	pthread_join(t, NULL);
}

/*
 * Node 1 keeps at most DSMEM_WIRE_REQ_WINDOW (32) requests unhandled at a
 * peer, by what the peer's messages say it handled.  A rogue that says
 * so gets 34 requests (17 grants and their revokes) and more, and node 1
 * never waits.  Muted, the rogue answers each request but says it
 * handled none: with what was unhandled when it fell silent, it
 * receives 32, node 1's next waits for the window (msg_window_waits),
 * and after io_timeout_ms with none handled the connection goes
 * (conn_io_timeout).  (Without the window the muted rogue received all
 * 34 and the connection stayed.)
 */
TEST_F_TIMEOUT(rogue, unhandled_requests_shut_the_window, 180)
{
	uint64_t waits = stat_value(self->ctx, "msg_window_waits");
	uint64_t ios = stat_value(self->ctx, "conn_io_timeout");
	struct grant_pairs g = { .ctx = self->ctx };
	struct ds_seg_info s;
	unsigned int before;

	ASSERT_EQ(0, param_get("io_timeout_ms", &self->io_timeout));
	ASSERT_EQ(0, param_set("io_timeout_ms", 2000));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 1, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	g.seg_id = s.id;
	rogue_set_mode(self->r, ROGUE_ANSWER);

	before = rogue_requests(self->r);
	grant_pairs(_metadata, self->r, &g);
	EXPECT_EQ(0, g.ret) TH_LOG("pair %u ended with %d", g.done_pairs, g.ret);
	EXPECT_LE(before + 34, rogue_requests(self->r));
	EXPECT_EQ(waits, stat_value(self->ctx, "msg_window_waits"));

	rogue_mute_handled(self->r);
	before = rogue_requests(self->r);
	grant_pairs(_metadata, self->r, &g);
	TH_LOG("muted: pair %u ended with %d; %u requests received (%u grants, %u revokes in all), %llu waits",
	       g.done_pairs, g.ret, rogue_requests(self->r) - before, rogue_grants(self->r),
	       rogue_revokes(self->r),
	       (unsigned long long)(stat_value(self->ctx, "msg_window_waits") - waits));
	/* (a REVOKE that fails is not the caller's error: the pairs may end well) */
	EXPECT_EQ(0, rogue_wait_closed(self->r, AUTH_WAIT_MS));
	/* what node 1 had unhandled at the rogue when it was muted, and 32 in all */
	EXPECT_GE(before + DSMEM_WIRE_REQ_WINDOW, rogue_requests(self->r));
	EXPECT_LT(waits, stat_value(self->ctx, "msg_window_waits"));
	EXPECT_EQ(ios + 1, stat_value(self->ctx, "conn_io_timeout"));
	EXPECT_EQ(0, ds_seg_del(self->ctx, 1, s.id));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A peer that says it handled more of node 1's requests than node 1 sent
 * it would open node 1's window past the buffers it promised: the
 * connection goes, counted as a bad message.
 */
TEST_F_TIMEOUT(rogue, overstated_handled_closes, 120)
{
	uint64_t bad = stat_value(self->ctx, "msg_bad");
	struct dsmem_wire_msg ping = { .opcode = DSMEM_WIRE_PING, .handled = 1000 };
	uint8_t b[DSMEM_WIRE_UNIT];
	int ret;

	ASSERT_EQ((int)sizeof(b), dsmem_wire_encode(b, sizeof(b), &ping));
	ret = rogue_send_raw(self->r, b, sizeof(b));
	/*
	 * the node may close before our send's completion comes back (the
	 * debug tier once saw it flushed): the close is what is judged
	 */
	EXPECT_TRUE(ret == 0 || ret == -ECONNRESET) TH_LOG("send: %d", ret);
	EXPECT_EQ(0, rogue_wait_closed(self->r, 10000));
	EXPECT_EQ(bad + 1, stat_value(self->ctx, "msg_bad"));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/* A message larger than the node's receive buffers ends the connection. */
TEST_F_TIMEOUT(rogue, oversize_message_closes, 120)
{
	static uint8_t b[2 * (DSMEM_WIRE_MAX_DATA + DSMEM_WIRE_UNIT)];
	int ret;

	raw_hdr(b, sizeof(b), DSMEM_WIRE_WRITE, sizeof(b) / 64, 5);
	ret = rogue_send_raw(self->r, b, sizeof(b));
	/* the node's receive fails, and so, NAKed, may our send */
	EXPECT_TRUE(ret == 0 || ret == -ECONNRESET) TH_LOG("send: %d", ret);
	EXPECT_EQ(0, rogue_wait_closed(self->r, 10000));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
	/* and the rogue may come back, as any peer */
	rogue_close(self->r);
	self->r = NULL;
	EXPECT_EQ(0, rogue_up(&self->r, self->addr, 2));
}

/*
 * Until the node closes the connection, what it sends a rogue that has
 * not proved the key: its own proof at most -- no GRANT, no answer to the
 * READ the rogue sends first.
 */
static int nothing_served(struct __test_metadata *_metadata, struct rogue *r, uint64_t seg)
{
	struct dsmem_wire_msg m, rd = { .opcode = DSMEM_WIRE_READ, .addr = seg, .len = 8, .tag = 7 };
	int64_t end = now_ms() + AUTH_WAIT_MS;
	int served = 0;

	rogue_send(r, &rd);
	while (now_ms() < end) {
		int ret = rogue_recv(r, &m, NULL, 0, (int)(end - now_ms()));

		if (ret == -ECONNRESET)
			break;
		if (!ret && m.opcode != DSMEM_WIRE_AUTH) {
			TH_LOG("served opcode %u before authentication", m.opcode);
			served++;
		}
	}
	EXPECT_EQ(0, rogue_grants(r));
	return served;
}

/* stat name grew past before, within AUTH_WAIT_MS */
static bool stat_grew(struct ds_ctx *ctx, const char *name, uint64_t before)
{
	int64_t end = now_ms() + AUTH_WAIT_MS;

	while (stat_value(ctx, name) <= before && now_ms() < end)
		usleep(50000);
	return stat_value(ctx, name) > before;
}

/*
 * Node 2's id, spoofed by a rogue that does not authenticate: node 1
 * refuses the connect itself (node 1 granted node 2 a segment), and node
 * 2's own connection is untouched.
 */
TEST_F_TIMEOUT(rogue, spoofed_id_without_key_is_refused, 120)
{
	uint64_t mismatch = stat_value(self->ctx, "auth_mismatch");
	struct rogue *spoof;

	EXPECT_EQ(-ECONNREFUSED, rogue_connect(&spoof, self->addr, PORT_1, 2, 1, ROGUE_ANSWER));
	EXPECT_EQ(mismatch + 1, stat_value(self->ctx, "auth_mismatch"));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A second address of this guest, on the device rxe0 runs over (the GID
 * table follows the netdev's addresses): "" when it cannot be had.
 */
static const char *second_addr(const char *addr)
{
	static char cmd[256];

	snprintf(cmd, sizeof(cmd),
		 "dev=$(ip -o -4 addr show | awk '$4 ~ \"^%s/\" { print $2; exit }'); "
		 "ip addr replace 10.99.77.7/32 dev \"$dev\"", addr);
	return system(cmd) ? "" : "10.99.77.7";
}

/*
 * A connect of the rogue from the second address in auth->from, claiming
 * id: tried until the rxe GID table has taken the address, in a moment.
 */
static int connect_from_second(struct rogue **r, const char *addr, uint32_t id,
			       const struct rogue_auth *auth)
{
	int ret = -ENETUNREACH;

	for (int i = 0; i < 600 && ret; i++) {
		ret = rogue_connect_auth(r, addr, PORT_1, id, 1, ROGUE_ANSWER, auth);
		if (ret)
			usleep(100000);
	}
	return ret;
}

static void second_addr_drop(void)
{
	system("ip addr del 10.99.77.7/32 dev \"$(ip -o -4 addr show | "
	       "awk '$4 == \"10.99.77.7/32\" { print $2; exit }')\"");
}

/*
 * Admission by address, with a second address of this host: node 2 is
 * up on node 1, so node 2's id is not taken from another address, even
 * with the key (counted; node 2 keeps working); an id that is not up is,
 * while node 1 accepts keyed connections; once node 1 accepts only its
 * peers, the second address is a stranger.
 */
TEST_F_TIMEOUT(rogue, id_in_use_from_another_address, 120)
{
	struct rogue_auth from = keyed;
	uint64_t in_use = stat_value(self->ctx, "conn_id_in_use");
	uint64_t unknown;
	struct rogue *r = NULL;

	from.from = second_addr(self->addr);
	ASSERT_STRNE("", from.from);
	ASSERT_EQ(0, connect_from_second(&r, self->addr, ROGUE_ID + 1, &from));
	rogue_close(r);

	EXPECT_EQ(-ECONNREFUSED, rogue_connect_auth(&r, self->addr, PORT_1, 2, 1, ROGUE_ANSWER,
						    &from));
	EXPECT_EQ(in_use + 1, stat_value(self->ctx, "conn_id_in_use"));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));

	/* only its peers: node 2, from its own address */
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, 1, DS_ACCEPT_PEERS));
	unknown = stat_value(self->ctx, "conn_unknown_peer");
	EXPECT_EQ(-ECONNREFUSED, rogue_connect_auth(&r, self->addr, PORT_1, ROGUE_ID + 1, 1,
						    ROGUE_ANSWER, &from));
	EXPECT_EQ(unknown + 1, stat_value(self->ctx, "conn_unknown_peer"));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
	second_addr_drop();
}

/*
 * A segment delete waits for a silent peer's REVOKE, with the node's lock
 * dropped, while the node's last device goes: the teardown that follows
 * takes the segment's mappings with the device, and the delete, resuming
 * after, touches no freed device (the debug tier's KASAN reports it when
 * it does).  Node 7 on rxe9, on the spare netdev (10.99.0.2, its end of
 * rxe0's cable), so that rxe0 stays for the other cases.  The rogue runs
 * in a process of its own: rxe cannot take a device from a process that
 * has it open, so the device's removal waits for that process to exit,
 * which it does once node 7's teardown has closed its connection.
 */
static void seg_del_rogue(int tell)
{
	struct rogue_auth from = keyed;
	struct dsmem_wire_msg m;
	struct rogue *r = NULL;
	int ret = -ENETUNREACH;

	/* from that address, so that rdma_cm binds the rogue to rxe9 too;
	 * the new device's GID table takes it in a moment */
	from.from = "10.99.0.2";
	for (int i = 0; i < 100 && ret; i++) {
		ret = rogue_connect_auth(&r, "10.99.0.2", PORT_2 + 2, ROGUE_ID + 3, 7,
					 ROGUE_ANSWER, &from);
		if (ret)
			usleep(100000);
	}
	if (ret)
		_exit(11);
	for (int i = 0; i < 600 && !rogue_grants(r); i++)
		rogue_recv(r, &m, NULL, 0, 100);
	if (!rogue_grants(r))
		_exit(12);
	/* the REVOKE goes unanswered */
	rogue_set_mode(r, ROGUE_SILENT);
	if (write(tell, "g", 1) != 1)
		_exit(13);
	for (int i = 0; i < 600 && !rogue_revokes(r); i++)
		rogue_recv(r, &m, NULL, 0, 100);
	if (!rogue_revokes(r) || write(tell, "r", 1) != 1)
		_exit(14);
	_exit(rogue_wait_closed(r, 120000) ? 15 : 0);
}

static int exit_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST_F_TIMEOUT(rogue, seg_del_while_last_device_goes, 300)
{
	const char *spare = env_or_die("DSMEM_SPARE_NETDEV");
	unsigned long taint = kernel_taint() | 1UL << 12 | 1UL << 13;
	struct ds_seg_info s;
	pid_t rogue, del, gone;
	int tell[2];
	char c = 0;

	run("rdma link delete rxe9 2>/dev/null");
	ASSERT_EQ(0, run("rdma link add rxe9 type rxe netdev %s", spare));
	ASSERT_EQ(0, ds_node_add_keyed(self->ctx, 7, "rxe9", PORT_2 + 2, KEY_NAME))
		TH_LOG("%s", ds_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, 7, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, ds_seg_add(self->ctx, 7, SEG_SIZE, -1, DS_TRANSLATE_SEGMENT, &s));
	ASSERT_EQ(0, ds_seg_grant(self->ctx, 7, s.id, ROGUE_ID + 3, DSMEM_PERM_ALL));
	/* the delete waits for the REVOKE's answer up to a minute */
	ASSERT_EQ(0, param_get("msg_timeout_ms", &self->msg_timeout));
	ASSERT_EQ(0, param_set("msg_timeout_ms", 60000));
	ASSERT_EQ(0, pipe(tell));
	rogue = fork();
	ASSERT_LE(0, rogue);
	if (rogue == 0) {
		close(tell[0]);
		seg_del_rogue(tell[1]);
	}
	close(tell[1]);
	ASSERT_EQ(1, read(tell[0], &c, 1)) TH_LOG("the rogue: %d", exit_status(rogue));
	ASSERT_EQ('g', c);

	del = fork();
	ASSERT_LE(0, del);
	if (del == 0) {
		struct ds_ctx *ctx;
		int ret;

		if (ds_ctx_open(&ctx))
			_exit(11);
		ret = ds_seg_del(ctx, 7, s.id);
		_exit(ret && ret != -ENOENT ? 12 : 0);
	}
	/* the REVOKE is at the rogue: the delete waits, without node 7's lock */
	EXPECT_EQ(1, read(tell[0], &c, 1));
	EXPECT_EQ('r', c);
	/* node 7's only device goes, under the delete */
	gone = fork();
	ASSERT_LE(0, gone);
	if (gone == 0)
		_exit(run("rdma link delete rxe9") ? 1 : 0);
	EXPECT_EQ(0, exit_status(rogue)) TH_LOG("the rogue saw no close");
	EXPECT_EQ(0, exit_status(gone)) TH_LOG("rdma link delete failed");
	EXPECT_EQ(0, exit_status(del)) TH_LOG("the delete failed");
	close(tell[0]);
	EXPECT_EQ(-ENOENT, ds_node_del(self->ctx, 7));
	EXPECT_EQ(0, kernel_taint() & ~taint) TH_LOG("taint %#lx", kernel_taint());
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/* ---- the rogue as a Slope source ---- */

#define MIG_UNITS	16		/* pages of each object the rogue sends */

/* A request from the rogue that must succeed: 0, -status or -errno. */
/* how long a rogue_ok() call waits for its answer: a hang's bound */
static int call_ms = WAIT_MS;

static int rogue_ok(struct rogue *r, struct dsmem_wire_msg *req, struct dsmem_wire_msg *reply,
		    void *data, size_t max)
{
	int ret = rogue_call(r, req, reply, data, max, call_ms);

	return ret ? ret : reply->status ? -(int)reply->status : 0;
}

/* The rogue's n-th object: in its own share of the Slope range. */
static uint64_t rogue_obj(unsigned int n)
{
	return DSMEM_SLOPE_BASE + (uint64_t)(ROGUE_ID - 1) * DSMEM_SLOPE_SHARE_SIZE +
	       (uint64_t)n * (MIG_UNITS << 12);
}

/*
 * What a source sends as op (BEGIN or HANDOVER) of a migration: its n
 * bytes of stage, staged by a PUT first.  0, or the -errno of either.
 */
static int rogue_staged(struct rogue *r, uint8_t op, uint64_t wire_id, void *stage, int n,
			struct dsmem_wire_msg *reply, void *data, size_t max)
{
	struct dsmem_wire_msg put = { .opcode = DSMEM_WIRE_SLOPE_MIG_PUT, .aux = wire_id };
	struct dsmem_wire_msg req = { .opcode = op, .aux = wire_id, .len = n };
	int ret;

	if (n < 0)
		return n;
	put.len = n;
	put.data = stage;
	ret = rogue_ok(r, &put, reply, NULL, 0);
	return ret ? ret : rogue_ok(r, &req, reply, data, max);
}

/*
 * A migration's BEGIN from the rogue, staged by a PUT as a source's is:
 * 0, or the -errno of the PUT or of the BEGIN.  No page is pushed: node 1
 * places zero pages (a source that sends nothing leaks nothing to it).
 */
static int rogue_slope_begin(struct rogue *r, uint64_t wire_id, uint64_t addr)
{
	struct dsmem_slope_extent ext = { .addr = addr, .len = MIG_UNITS << 12 };
	struct dsmem_slope_begin_info b = {
		.cookie = addr, .units = MIG_UNITS, .nextents = 1, .unit_shift = 12,
	};
	uint8_t stage[512], keys[DSMEM_WIRE_MAX_DATA];
	struct dsmem_slope_keys_info k;
	struct dsmem_wire_msg m;
	int ret = rogue_staged(r, DSMEM_WIRE_SLOPE_MIG_BEGIN, wire_id, stage,
			       dsmem_slope_begin_encode(stage, sizeof(stage), &b, &ext),
			       &m, keys, sizeof(keys));

	if (ret)
		return ret;
	if (m.opcode != DSMEM_WIRE_REPLY_SLOPE_KEYS)
		return -EPROTO;
	return dsmem_slope_keys_decode(keys, m.len, MIG_UNITS, 12, &k);
}

/*
 * The HANDOVER, with no unit dirty, so that node 1 pulls nothing from the
 * rogue; then node 1's DONE, answered.  0 or -errno.
 */
static int rogue_slope_handover(struct rogue *r, uint64_t wire_id)
{
	struct dsmem_wire_msg m, done = { .opcode = DSMEM_WIRE_REPLY_SLOPE };
	unsigned long dirty[1] = { 0 };
	uint32_t rkey = 0;	/* never used: nothing to pull */
	uint8_t stage[512];
	int ret = rogue_staged(r, DSMEM_WIRE_SLOPE_MIG_HANDOVER, wire_id, stage,
			       dsmem_slope_handover_encode(stage, sizeof(stage), MIG_UNITS,
							   MIG_UNITS << 12, 1, &rkey, dirty),
			       &m, NULL, 0);

	if (ret)
		return ret;
	do {
		ret = rogue_recv(r, &m, NULL, 0, 30000);
	} while (!ret && !(m.opcode == DSMEM_WIRE_SLOPE_MIG_DONE && m.aux == wire_id));
	if (ret)
		return ret;
	done.tag = m.tag;
	return m.len ? -EIO : rogue_send(r, &done);
}

/* Abort an unfinished migration of the rogue's at node 1. */
static int rogue_slope_abort(struct rogue *r, uint64_t wire_id)
{
	struct dsmem_wire_msg abort = { .opcode = DSMEM_WIRE_SLOPE_MIG_ABORT, .aux = wire_id }, m;

	return rogue_ok(r, &abort, &m, NULL, 0);
}

/*
 * A migration's BEGIN sent again after its handover, as a peer that
 * retried or lies would: refused with EALREADY, touching nothing; node
 * 1's application receives the object whole.
 */
TEST_F_TIMEOUT(rogue, slope_begin_again_after_handover, 180)
{
	const uint64_t addr = rogue_obj(0), size = MIG_UNITS << 12;
	struct dsmem_slope_extent ext = { .addr = addr, .len = size };
	struct dsmem_slope_begin_info b = {
		.cookie = addr, .units = MIG_UNITS, .nextents = 1, .unit_shift = 12,
	};
	struct dsmem_wire_msg again = { .opcode = DSMEM_WIRE_SLOPE_MIG_BEGIN, .aux = 77 }, m;
	uint8_t stage[512], keys[DSMEM_WIRE_MAX_DATA];
	struct dsmem_ioc_slope_mig mig = {};
	uint8_t zero[MIG_UNITS << 12] = { 0 };
	int fd, n = dsmem_slope_begin_encode(stage, sizeof(stage), &b, &ext);

	ASSERT_LT(0, n);
	again.len = n;
	ASSERT_EQ(0, rogue_slope_begin(self->r, 77, addr));
	ASSERT_EQ(0, rogue_slope_handover(self->r, 77));
	/* the BEGIN alone, as the source sent it (its staging PUT is over) */
	EXPECT_EQ(-EALREADY, rogue_ok(self->r, &again, &m, keys, sizeof(keys)));

	fd = attach_open(1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, slope_map(fd));
	mig.flags = DSMEM_SLOPE_MIG_WAIT;
	mig.timeout_ms = 10000;
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_SLOPE_RECV, &mig)) TH_LOG("recv: %s", strerror(errno));
	EXPECT_EQ(addr, mig.cookie);
	EXPECT_EQ(MIG_UNITS, mig.pages);
	ASSERT_EQ(0, slope_mig_get(fd, mig.id, DSMEM_SLOPE_MIG_WAIT, DSMEM_SLOPE_MIG_HANDED_OVER,
				   10000, &mig));
	EXPECT_EQ(DSMEM_SLOPE_MIG_DONE, mig.state) TH_LOG("error %d", mig.error);
	EXPECT_EQ(0, memcmp((void *)addr, zero, size));
	EXPECT_EQ(0, slope_mig_get(fd, mig.id, DSMEM_SLOPE_MIG_RELEASE, 0, 0, &mig));
	munmap((void *)DSMEM_SLOPE_BASE, DSMEM_SLOPE_SIZE);
	close(fd);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A storm of migrations from one peer: slope_peer_migs of them hold memory
 * at node 1 at once, the rest are refused with EBUSY and counted; once
 * those end, the peer may migrate again.
 */
TEST_F_TIMEOUT(rogue, slope_migration_storm_is_bounded, 180)
{
	uint64_t refused = stat_value(self->ctx, "slope_quota_migs"), migs;
	int taken = 0, ret;

	ASSERT_EQ(0, param_get("slope_peer_migs", &migs));
	ASSERT_EQ(0, param_set("slope_peer_migs", 3));
	for (unsigned int i = 0; i < 8; i++) {
		ret = rogue_slope_begin(self->r, 100 + i, rogue_obj(i));
		if (!ret)
			taken++;
		else
			EXPECT_EQ(-EBUSY, ret) TH_LOG("migration %u", i);
	}
	EXPECT_EQ(3, taken);
	EXPECT_EQ(refused + 5, stat_value(self->ctx, "slope_quota_migs"));
	for (unsigned int i = 0; i < 3; i++)
		EXPECT_EQ(0, rogue_slope_abort(self->r, 100 + i));
	/* room again */
	EXPECT_EQ(0, rogue_slope_begin(self->r, 200, rogue_obj(8)));
	EXPECT_EQ(0, rogue_slope_abort(self->r, 200));
	ASSERT_EQ(0, param_set("slope_peer_migs", migs));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * Two peers, each within its own quota, together pass slope_node_bytes:
 * the BEGIN that would is refused with EDQUOT and counted; once one of
 * theirs ends, there is room again.  Each object is 16 pages.
 */
TEST_F_TIMEOUT(rogue, slope_node_bytes_bound_all_peers, 180)
{
	uint64_t refused = stat_value(self->ctx, "slope_quota_bytes"), node_bytes;
	const uint64_t obj = MIG_UNITS << 12;
	struct rogue *other = NULL;
	uint64_t other_obj;

	/* the second rogue's objects, in its own share */
	other_obj = DSMEM_SLOPE_BASE + (uint64_t)(ROGUE_ID + 4 - 1) * DSMEM_SLOPE_SHARE_SIZE;
	ASSERT_EQ(0, rogue_connect_auth(&other, self->addr, PORT_1, ROGUE_ID + 4, 1, ROGUE_ANSWER,
					&keyed));
	ASSERT_EQ(0, param_get("slope_node_bytes", &node_bytes));
	/* three objects, and room for a BEGIN's staged data beside them */
	ASSERT_EQ(0, param_set("slope_node_bytes", 3 * obj + obj / 4));
	EXPECT_EQ(0, rogue_slope_begin(self->r, 500, rogue_obj(0)));
	EXPECT_EQ(0, rogue_slope_begin(self->r, 501, rogue_obj(1)));
	EXPECT_EQ(0, rogue_slope_begin(other, 502, other_obj));
	EXPECT_EQ(-EDQUOT, rogue_slope_begin(other, 503, other_obj + obj));
	EXPECT_EQ(refused + 1, stat_value(self->ctx, "slope_quota_bytes"));
	/* one ends: the other peer's next one fits */
	EXPECT_EQ(0, rogue_slope_abort(self->r, 500));
	EXPECT_EQ(0, rogue_slope_begin(other, 504, other_obj + 2 * obj));
	ASSERT_EQ(0, param_set("slope_node_bytes", node_bytes));
	EXPECT_EQ(0, rogue_slope_abort(self->r, 501));
	EXPECT_EQ(0, rogue_slope_abort(other, 502));
	EXPECT_EQ(0, rogue_slope_abort(other, 504));
	rogue_close(other);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * An allocation that asks a peer for a lease holds up nothing else while
 * the peer takes its time: node 100 (no share of its own, ids past 64
 * have none) asks the rogue, the only node that announced free leases,
 * and the rogue holds the answer back; meanwhile the rogue's migration
 * to node 100 is placed and answered, which needs the allocation lock.
 * Then the rogue answers the ask with no lease, and the allocation fails
 * with ENOSPC.  The old module held that lock across the ask: the BEGIN
 * waited until the ask timed out (a minute here).
 */
TEST_F_TIMEOUT(rogue, slope_alloc_asks_without_alloc_lock, 240)
{
	struct dsmem_wire_msg count = { .opcode = DSMEM_WIRE_SLOPE_LEASE_COUNT, .aux = 8 };
	struct dsmem_wire_msg m, ask = { 0 }, no;
	struct rogue *r = NULL;
	pid_t alloc;
	int st;

	ASSERT_EQ(0, ds_node_add_keyed(self->ctx, 100, "rxe0", PORT_2 + 3, KEY_NAME));
	ASSERT_EQ(0, ds_node_set_accept(self->ctx, 100, DS_ACCEPT_KEYED));
	ASSERT_EQ(0, rogue_connect_auth(&r, self->addr, PORT_2 + 3, ROGUE_ID, 100, ROGUE_ANSWER,
					&keyed));
	ASSERT_EQ(0, rogue_send(r, &count));
	ASSERT_EQ(0, param_get("msg_timeout_ms", &self->msg_timeout));
	ASSERT_EQ(0, param_set("msg_timeout_ms", 60000));
	alloc = fork();
	ASSERT_LE(0, alloc);
	if (alloc == 0) {
		struct dsmem_ioc_slope_alloc a = { .len = 16 * 4096,
						   .flags = DSMEM_SLOPE_NEW_OBJECT };
		int fd = attach_open(100);

		if (fd < 0)
			_exit(11);
		_exit(!ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &a) ? 12 : errno == ENOSPC ? 0 : 13);
	}
	for (int i = 0; i < 600 && ask.opcode != DSMEM_WIRE_SLOPE_LEASE_REQ; i++)
		if (!rogue_recv(r, &m, NULL, 0, 100) && m.opcode == DSMEM_WIRE_SLOPE_LEASE_REQ)
			ask = m;
	ASSERT_EQ(DSMEM_WIRE_SLOPE_LEASE_REQ, ask.opcode);

	/* the ask outstanding, a migration arrives: placed and answered */
	call_ms = 30000;
	EXPECT_EQ(0, rogue_slope_begin(r, 600, rogue_obj(0)));
	call_ms = WAIT_MS;
	EXPECT_EQ(0, waitpid(alloc, &st, WNOHANG)) TH_LOG("the allocation ended before the answer");

	/* no lease for node 100 */
	no = (struct dsmem_wire_msg){ .opcode = DSMEM_WIRE_REPLY_SLOPE, .tag = ask.tag,
				      .status = ENOSPC };
	ASSERT_EQ(0, rogue_send(r, &no));
	ASSERT_EQ(alloc, waitpid(alloc, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("the allocation: %#x", st);
	EXPECT_EQ(0, rogue_slope_abort(r, 600));
	rogue_close(r);
	EXPECT_EQ(0, ds_node_del(self->ctx, 100));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * Objects handed over that no process at node 1 receives: dropped after
 * slope_unreceived_ms, counted, and nothing is left to receive.
 */
TEST_F_TIMEOUT(rogue, slope_unreceived_expire, 180)
{
	uint64_t expired = stat_value(self->ctx, "slope_expired");
	struct dsmem_ioc_slope_mig mig = {};
	uint64_t ms;
	int fd;

	ASSERT_EQ(0, param_get("slope_unreceived_ms", &ms));
	ASSERT_EQ(0, param_set("slope_unreceived_ms", 1000));
	for (unsigned int i = 0; i < 2; i++) {
		ASSERT_EQ(0, rogue_slope_begin(self->r, 300 + i, rogue_obj(i)));
		ASSERT_EQ(0, rogue_slope_handover(self->r, 300 + i));
	}
	for (int i = 0; i < 300 && stat_value(self->ctx, "slope_expired") < expired + 2; i++)
		usleep(100000);
	ASSERT_EQ(0, param_set("slope_unreceived_ms", ms));
	EXPECT_EQ(expired + 2, stat_value(self->ctx, "slope_expired"));
	fd = attach_open(1);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, DSMEM_IOC_SLOPE_RECV, &mig));
	EXPECT_EQ(EAGAIN, errno);
	close(fd);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A peer that begins a migration here and never hands it over holds the
 * pages node 1 placed for it, and the migration's slot, only until
 * slope_incoming_ms: then node 1 closes its connection, whose release
 * ends the migration and frees the pages.  The same object's addresses
 * are free again: BEGUN anew over a new connection, node 1 places it.
 */
TEST_F_TIMEOUT(rogue, slope_incoming_not_handed_over_is_cut, 180)
{
	uint64_t cut = stat_value(self->ctx, "slope_incoming_cut"), ms = 0;

	ASSERT_EQ(0, param_get("slope_incoming_ms", &ms));
	ASSERT_EQ(0, param_set("slope_incoming_ms", 1000));
	ASSERT_EQ(0, rogue_slope_begin(self->r, 400, rogue_obj(0)));
	/* and nothing more of it */
	EXPECT_EQ(0, rogue_wait_closed(self->r, AUTH_WAIT_MS))
		TH_LOG("node 1 kept the connection of a migration never handed over");
	ASSERT_EQ(0, param_set("slope_incoming_ms", ms));
	EXPECT_EQ(cut + 1, stat_value(self->ctx, "slope_incoming_cut"));
	ASSERT_EQ(0, rogue_again(&self->r, self->addr));
	EXPECT_EQ(0, rogue_slope_begin(self->r, 401, rogue_obj(0)))
		TH_LOG("the object's addresses were still held");
	EXPECT_EQ(0, rogue_slope_abort(self->r, 401));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * Slope from a key holder gone bad: it holds at most slope_leases_per_peer
 * leases of node 1's share (the rest stays for node 1 and honest peers);
 * it cannot free the addresses of node 1's own object (they are not given
 * out again), nor pass a free off as relayed by the node responsible for
 * the lease.
 */
TEST_F_TIMEOUT(rogue, slope_leases_and_frees_are_bounded, 120)
{
	struct dsmem_wire_msg req = { .opcode = DSMEM_WIRE_SLOPE_LEASE_REQ }, m;
	uint64_t denied = stat_value(self->ctx, "slope_lease_denied");
	uint64_t fdenied = stat_value(self->ctx, "slope_free_denied");
	struct dsmem_ioc_slope_alloc obj = { .len = 64 * 4096, .flags = DSMEM_SLOPE_NEW_OBJECT };
	struct dsmem_ioc_slope_alloc next = { .len = 64 * 4096, .flags = DSMEM_SLOPE_NEW_OBJECT };
	struct dsmem_wire_slope_extent w;
	uint64_t lease = 0, quota;
	int got = 0, fd;

	ASSERT_EQ(0, param_get("slope_leases_per_peer", &quota));
	ASSERT_EQ(0, param_set("slope_leases_per_peer", 4));
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(0, rogue_call(self->r, &req, &m, NULL, 0, WAIT_MS));
		if (m.status) {
			EXPECT_EQ(EDQUOT, m.status);
			continue;
		}
		lease = m.addr;
		got++;
	}
	ASSERT_EQ(0, param_set("slope_leases_per_peer", quota));
	EXPECT_EQ(4, got);
	EXPECT_EQ(denied + 4, stat_value(self->ctx, "slope_lease_denied"));

	/* node 1's own object: its addresses are not the rogue's to free */
	fd = attach_open(1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &obj)) TH_LOG("%s", strerror(errno));
	w.addr = htole64(obj.addr);
	w.len = htole64(obj.len);
	req = (struct dsmem_wire_msg){ .opcode = DSMEM_WIRE_SLOPE_FREE, .len = sizeof(w), .data = &w };
	ASSERT_EQ(0, rogue_call(self->r, &req, &m, NULL, 0, WAIT_MS));
	EXPECT_EQ(EACCES, m.status);
	/* still node 1's: the next object lies elsewhere */
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &next));
	EXPECT_TRUE(next.addr >= obj.addr + obj.len || next.addr + next.len <= obj.addr)
		TH_LOG("object at %#llx, the next at %#llx", (unsigned long long)obj.addr,
		       (unsigned long long)next.addr);

	/* a relay of a free, claimed by one that is not responsible for it */
	ASSERT_NE(0, lease);
	w.addr = htole64(lease);
	w.len = htole64(4096);
	req = (struct dsmem_wire_msg){ .opcode = DSMEM_WIRE_SLOPE_FREE, .aux = 1, .len = sizeof(w),
				       .data = &w };
	ASSERT_EQ(0, rogue_call(self->r, &req, &m, NULL, 0, WAIT_MS));
	EXPECT_EQ(EACCES, m.status);
	EXPECT_EQ(fdenied + 2, stat_value(self->ctx, "slope_free_denied"));
	close(fd);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

static uint64_t lease_index(uint64_t a)
{
	return (a - DSMEM_SLOPE_BASE) >> DSMEM_SLOPE_LEASE_SHIFT;
}

/*
 * Node 1's object *obj, made through a descriptor of node 1 (returned,
 * or -errno), and *hole: len bytes just past it, in the same lease,
 * that nobody was given.
 */
static int node1_object_and_hole(struct dsmem_ioc_slope_alloc *obj, uint64_t len,
				 uint64_t *hole)
{
	int fd = attach_open(1);

	if (fd < 0)
		return fd;
	if (ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, obj)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*hole = obj->addr + obj->len;
	if (lease_index(obj->addr) != lease_index(*hole + len - 1)) {
		close(fd);
		return -ERANGE;
	}
	return fd;
}

/*
 * A free of addresses node 1 never allocated, in a lease it holds, is
 * refused and counted.  Taken, it would count the lease empty while node
 * 1's object still lives in it, and the lease, given back, would hand
 * that object's addresses out again.
 */
TEST_F_TIMEOUT(rogue, slope_free_of_unallocated_refused, 120)
{
	uint64_t fdenied = stat_value(self->ctx, "slope_free_denied");
	struct dsmem_ioc_slope_alloc obj = { .len = 64 * 4096, .flags = DSMEM_SLOPE_NEW_OBJECT };
	struct dsmem_ioc_slope_alloc next = obj;
	struct dsmem_wire_slope_extent w;
	struct dsmem_wire_msg req, m;
	uint64_t hole;
	int fd;

	/* past the object, in its lease: addresses nobody was given */
	fd = node1_object_and_hole(&obj, obj.len, &hole);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	w.addr = htole64(hole);
	w.len = htole64(obj.len);
	req = (struct dsmem_wire_msg){ .opcode = DSMEM_WIRE_SLOPE_FREE, .len = sizeof(w), .data = &w };
	ASSERT_EQ(0, rogue_call(self->r, &req, &m, NULL, 0, WAIT_MS));
	EXPECT_EQ(EACCES, m.status) TH_LOG("a free of unallocated addresses answered %u", m.status);
	EXPECT_EQ(fdenied + 1, stat_value(self->ctx, "slope_free_denied"));
	/* the object keeps its addresses: the next one lies elsewhere */
	ASSERT_EQ(0, ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &next));
	EXPECT_TRUE(next.addr >= obj.addr + obj.len || next.addr + next.len <= obj.addr)
		TH_LOG("object at %#llx, the next at %#llx", (unsigned long long)obj.addr,
		       (unsigned long long)next.addr);
	close(fd);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A migration whose object lies where node 1 gave nothing out is refused
 * and counted, before a page is placed: in a lease node 1 holds, past its
 * own object (node 1's allocator would hand those addresses out again),
 * and in a lease of node 1's share that nobody holds.  Node 1's next
 * object still lies elsewhere, and the rogue's own share still takes a
 * migration.
 */
TEST_F_TIMEOUT(rogue, slope_begin_outside_given_out_refused, 120)
{
	uint64_t bdenied = stat_value(self->ctx, "slope_begin_denied");
	struct dsmem_ioc_slope_alloc obj = { .len = 64 * 4096, .flags = DSMEM_SLOPE_NEW_OBJECT };
	struct dsmem_ioc_slope_alloc next = obj;
	/* the last lease of node 1's share: node 1 allocates from its first */
	const uint64_t unheld = DSMEM_SLOPE_BASE +
				((uint64_t)(DSMEM_SLOPE_LEASES_PER_NODE - 1) << DSMEM_SLOPE_LEASE_SHIFT);
	uint64_t hole;
	int fd;

	fd = node1_object_and_hole(&obj, MIG_UNITS << 12, &hole);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	ASSERT_NE(lease_index(unheld), lease_index(obj.addr));
	EXPECT_EQ(-EACCES, rogue_slope_begin(self->r, 400, hole));
	EXPECT_EQ(-EACCES, rogue_slope_begin(self->r, 401, unheld));
	EXPECT_EQ(bdenied + 2, stat_value(self->ctx, "slope_begin_denied"));
	/* nothing was placed there: node 1 still allocates */
	EXPECT_EQ(0, ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &next)) TH_LOG("%s", strerror(errno));
	/* the rogue's own share is its own: a migration from it goes on */
	EXPECT_EQ(0, rogue_slope_begin(self->r, 402, rogue_obj(0)));
	EXPECT_EQ(0, rogue_slope_abort(self->r, 402));
	close(fd);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * Paths are admitted beside a first connection only.  Node 2's first
 * connection to node 1 is up: a path claiming an id that is not up, one
 * that does not authenticate, and any path to an insecure node are
 * refused before anything is made (path_refused, auth_mismatch); a path
 * claiming node 2's id with the key is a path (the key is what proves
 * it), and leaves with its connection.
 */
TEST_F_TIMEOUT(rogue, paths_need_an_up_peer_and_the_key, 120)
{
	static const struct rogue_auth keyed_path = {
		.flag = 1, .key = cluster_key, .key_len = sizeof(cluster_key), .path = 1,
	};
	static const struct rogue_auth bare_path = { .path = 1 };
	uint64_t refused = stat_value(self->ctx, "path_refused");
	uint64_t mismatch = stat_value(self->ctx, "auth_mismatch");
	struct ds_peer_info *peers, p = {};
	uint32_t node2 = 0;
	struct rogue *r;
	size_t n;

	/* the fixture's rogue is up as ROGUE_ID; this id is not */
	EXPECT_EQ(-ECONNREFUSED, rogue_connect_auth(&r, self->addr, PORT_1, ROGUE_ID + 2, 1,
						    ROGUE_ANSWER, &keyed_path));
	EXPECT_EQ(refused + 1, stat_value(self->ctx, "path_refused"));
	EXPECT_EQ(-ECONNREFUSED, rogue_connect_auth(&r, self->addr, PORT_1, 2, 1,
						    ROGUE_ANSWER, &bare_path));
	EXPECT_EQ(mismatch + 1, stat_value(self->ctx, "auth_mismatch"));
	/* an insecure node has no paths, whoever asks */
	ASSERT_EQ(0, ds_node_add_keyed(self->ctx, 3, "rxe0", PORT_2 + 1, NULL));
	EXPECT_EQ(-ECONNREFUSED, rogue_connect_auth(&r, self->addr, PORT_2 + 1, 2, 3,
						    ROGUE_ANSWER, &bare_path));
	EXPECT_EQ(refused + 2, stat_value(self->ctx, "path_refused"));
	EXPECT_EQ(0, ds_node_del(self->ctx, 3));

	/* node 1's passive peer of node 2 */
	ASSERT_EQ(0, ds_peer_list(self->ctx, 1, &peers, &n));
	for (size_t i = 0; i < n; i++)
		if (peers[i].remote_node == 2 && peers[i].passive)
			node2 = peers[i].id;
	free(peers);
	ASSERT_NE(0, node2);
	ASSERT_EQ(0, rogue_connect_auth(&r, self->addr, PORT_1, 2, 1, ROGUE_ANSWER, &keyed_path));
	for (int i = 0; i < 600 && p.paths != 2; i++) {
		ds_peer_get(self->ctx, 1, node2, &p);
		usleep(100000);
	}
	EXPECT_EQ(2, p.paths);
	rogue_close(r);
	for (int i = 0; i < 600 && p.paths != 1; i++) {
		ds_peer_get(self->ctx, 1, node2, &p);
		usleep(100000);
	}
	EXPECT_EQ(1, p.paths);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A rogue that asks for the handshake and never proves anything: nothing
 * served, and closed at the handshake deadline.
 */
TEST_F_TIMEOUT(rogue, no_proof_gets_nothing, 120)
{
	static const struct rogue_auth mute = { .flag = 1 };
	uint64_t timeouts = stat_value(self->ctx, "auth_timeout");
	struct rogue *r;
	int64_t t0 = now_ms();

	ASSERT_EQ(0, rogue_connect_auth(&r, self->addr, PORT_1, ROGUE_ID, 1, ROGUE_ANSWER, &mute));
	EXPECT_EQ(0, nothing_served(_metadata, r, self->seg));
	EXPECT_EQ(0, rogue_wait_closed(r, 1000));
	TH_LOG("closed after %lld ms", (long long)(now_ms() - t0));
	EXPECT_TRUE(stat_grew(self->ctx, "auth_timeout", timeouts));
	rogue_close(r);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * The wrong key, claiming node 2's id (which node 1 granted a segment):
 * the proof is refused, the connection closed, nothing served.
 */
TEST_F_TIMEOUT(rogue, wrong_key_gets_nothing, 120)
{
	static uint8_t wrong[32];
	const struct rogue_auth guess = {
		.flag = 1, .key = wrong, .key_len = sizeof(wrong), .no_check = 1,
	};
	uint64_t failed = stat_value(self->ctx, "auth_failed");
	struct rogue *r;

	memcpy(wrong, cluster_key, sizeof(wrong));
	wrong[31] ^= 1;
	ASSERT_EQ(0, rogue_connect_auth(&r, self->addr, PORT_1, 2, 1, ROGUE_ANSWER, &guess));
	EXPECT_EQ(0, nothing_served(_metadata, r, self->seg));
	EXPECT_EQ(0, rogue_wait_closed(r, 1000));
	EXPECT_TRUE(stat_grew(self->ctx, "auth_failed", failed));
	rogue_close(r);
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
}

/*
 * A proof recorded from a good connection, replayed on a new one: the
 * node's fresh nonce and the new QPNs make it worthless.
 */
TEST_F_TIMEOUT(rogue, replayed_proof_gets_nothing, 120)
{
	uint8_t recorded[DSMEM_WIRE_AUTH_LEN];
	struct rogue_auth replay = { .flag = 1, .proof = recorded, .no_check = 1 };
	uint64_t failed = stat_value(self->ctx, "auth_failed");
	struct rogue *r;

	ASSERT_NE(NULL, rogue_proof(self->r));
	memcpy(recorded, rogue_proof(self->r), sizeof(recorded));
	rogue_close(self->r);
	self->r = NULL;
	ASSERT_EQ(0, rogue_connect_auth(&r, self->addr, PORT_1, ROGUE_ID, 1, ROGUE_ANSWER, &replay));
	EXPECT_EQ(0, nothing_served(_metadata, r, self->seg));
	EXPECT_EQ(0, rogue_wait_closed(r, 1000));
	EXPECT_TRUE(stat_grew(self->ctx, "auth_failed", failed));
	rogue_close(r);
	/* the key holder itself still gets in */
	EXPECT_EQ(0, rogue_up(&self->r, self->addr, 2));
}

/*
 * A key holder's proof made for another pair of addresses gets nothing:
 * the proof names the GIDs of the path each end's QP talks over.  The
 * rogue connects from the guest's second address and proves, with the
 * right key, nonces and QPNs, first as if it were at node 1's own
 * address (what a man in the middle relays from a member there: a
 * splice), then with the two addresses turned round (node 1's own
 * connect turned back at it: a reflection).  Both are refused and
 * counted; the same rogue naming the path it is on gets in.
 */
TEST_F_TIMEOUT(rogue, proof_names_the_addresses, 120)
{
	struct rogue_auth splice = keyed, reflect = keyed, honest = keyed;
	uint64_t failed;
	struct rogue *r = NULL;

	honest.from = second_addr(self->addr);
	ASSERT_STRNE("", honest.from);
	splice.from = honest.from;
	splice.proof_from = self->addr;
	splice.no_check = 1;
	reflect.from = honest.from;
	reflect.proof_from = self->addr;
	reflect.proof_to = honest.from;
	reflect.no_check = 1;

	/* the proof for the path it is on gets in, and node 1's own names it */
	ASSERT_EQ(0, connect_from_second(&r, self->addr, ROGUE_ID + 6, &honest));
	rogue_close(r);

	/* a splice, then a reflection */
	for (int i = 0; i < 2; i++) {
		failed = stat_value(self->ctx, "auth_failed");
		ASSERT_EQ(0, rogue_connect_auth(&r, self->addr, PORT_1, ROGUE_ID + 6, 1,
						ROGUE_ANSWER, i ? &reflect : &splice));
		EXPECT_EQ(0, nothing_served(_metadata, r, self->seg)) TH_LOG("proof %d", i);
		EXPECT_EQ(0, rogue_wait_closed(r, AUTH_WAIT_MS)) TH_LOG("proof %d", i);
		EXPECT_TRUE(stat_grew(self->ctx, "auth_failed", failed)) TH_LOG("proof %d", i);
		rogue_close(r);
	}

	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
	second_addr_drop();
}

/*
 * A flood of connects that never authenticate takes the node's small
 * pool of unauthenticated connections and no more: the rest are refused
 * and counted, authenticated peers keep working, and once the flood has
 * gone (closed, or timed out) a key holder connects again.
 *
 * The rogues are all made ready first and their connect requests sent
 * together, so that the node decides them one after the other, not
 * between the rogues' own set-ups.  The verdict is the node's counters,
 * not how fast that went: a flood connection leaves the pool only when
 * the node times it out (auth_timeout; we close none before the end), so
 * at most the pool and those timed out are admitted, and all the others
 * are refused -- FLOOD - POOL of them when none timed out, as on any host
 * that decides the flood within DSMEM_AUTH_TIMEOUT_MS.
 */
TEST_F_TIMEOUT(rogue, connect_flood_is_bounded, 180)
{
	enum { FLOOD = 24, POOL = 16 };
	static const struct rogue_auth mute = { .flag = 1 };
	uint64_t full = stat_value(self->ctx, "conn_pool_full");
	uint64_t timeouts = stat_value(self->ctx, "auth_timeout");
	struct rogue *flood[FLOOD] = { 0 };
	int rets[FLOOD];
	int up = 0, refused = 0, other = 0, gone;

	for (int i = 0; i < FLOOD; i++) {
		rets[i] = rogue_prepare(&flood[i], self->addr, PORT_1, 100 + i, 1, ROGUE_ANSWER,
				       &mute);
		if (rets[i])
			TH_LOG("rogue %d: %d", i, rets[i]);
	}
	for (int i = 0; i < FLOOD; i++)
		if (!rets[i])
			rets[i] = rogue_dial(flood[i]);
	for (int i = 0; i < FLOOD; i++) {
		if (!rets[i])
			rets[i] = rogue_established(flood[i], AUTH_WAIT_MS);
		if (!rets[i])
			up++;
		else if (rets[i] == -ECONNREFUSED)
			refused++;
		else
			other++;
		if (rets[i] && rets[i] != -ECONNREFUSED)
			TH_LOG("connect %d: %d", i, rets[i]);
	}
	/* read after the node decided every connect: its timeouts until then, and more */
	gone = (int)(stat_value(self->ctx, "auth_timeout") - timeouts);
	TH_LOG("%d connected, %d refused, %d failed; %d timed out meanwhile", up, refused,
	       other, gone);
	/*
	 * A rogue that failed otherwise may have held a place and left it:
	 * each such counts as one more that may have been admitted.
	 */
	EXPECT_GE(POOL + gone + other, up);
	EXPECT_LE(FLOOD - POOL - gone - 2 * other, refused);
	EXPECT_EQ(full + refused, stat_value(self->ctx, "conn_pool_full"));
	EXPECT_EQ(0, honest_ok(self->ctx, self->seg));
	for (int i = 0; i < FLOOD; i++)
		rogue_close(flood[i]);

	/* the pool drains as the node notices the rogues gone */
	EXPECT_EQ(0, rogue_again(&self->r, self->addr));
}

TEST_HARNESS_MAIN
