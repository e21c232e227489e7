// SPDX-License-Identifier: BSD-2-Clause
/*
 * The remote-memory wire codec (kernel/dsmem_wire.c, the very file the
 * module links): round trips, the byte layout, and malformed frames.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dsmem_wire.h"

_Static_assert(sizeof(struct dsmem_wire_hdr) == DSMEM_WIRE_UNIT, "header is one unit");

static unsigned char buf[DSMEM_WIRE_MAX_UNITS * DSMEM_WIRE_UNIT + 64];
static unsigned char data[DSMEM_WIRE_MAX_DATA + 1];

static struct dsmem_wire_msg msg(uint8_t op, uint64_t addr, uint64_t len)
{
	struct dsmem_wire_msg m = { .opcode = op, .addr = addr, .len = len,
				    .tag = 0x11223344, .seq = 7 };
	return m;
}

static void roundtrip(struct dsmem_wire_msg m, size_t expect_size)
{
	struct dsmem_wire_msg out;
	int n = dsmem_wire_encode(buf, sizeof(buf), &m);

	assert_int_equal(n, expect_size);
	assert_int_equal(dsmem_wire_size(m.opcode, m.len), expect_size);
	assert_int_equal(dsmem_wire_decode(buf, n, &out), 0);
	assert_int_equal(out.opcode, m.opcode);
	assert_int_equal(out.flags, m.flags);
	assert_int_equal(out.status, m.status);
	assert_int_equal(out.tag, m.tag);
	assert_int_equal(out.seq, m.seq);
	assert_true(out.addr == m.addr && out.len == m.len && out.aux == m.aux);
	assert_int_equal(out.handled, m.handled);
	if (m.data) {
		assert_ptr_equal(out.data, buf + DSMEM_WIRE_UNIT);
		assert_memory_equal(out.data, m.data, m.len);
	} else {
		assert_null(out.data);
	}
}

static void test_roundtrip_every_opcode(void **state)
{
	struct dsmem_wire_msg m;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 1);

	m = msg(DSMEM_WIRE_ALLOC, 0, 1 << 20);
	m.aux = 3;
	m.handled = 0x80000001;
	roundtrip(m, 64);
	m = msg(DSMEM_WIRE_REPLY_ALLOC, 0x7f0000001000ULL, 1 << 20);
	m.aux = 0x100000;
	roundtrip(m, 64);
	m = msg(DSMEM_WIRE_REPLY_ALLOC, 0, 0);
	m.status = ENOMEM;
	roundtrip(m, 64);
	roundtrip(msg(DSMEM_WIRE_FREE, 0x1000, 0), 64);
	roundtrip(msg(DSMEM_WIRE_REPLY_FREE, 0, 0), 64);
	roundtrip(msg(DSMEM_WIRE_READ, 0x1000, DSMEM_WIRE_MAX_DATA), 64);
	m = msg(DSMEM_WIRE_REPLY_READ_ERROR, 0x1000, 8);
	m.status = EFAULT;
	roundtrip(m, 64);
	m = msg(DSMEM_WIRE_REPLY_WRITE, 0, 0);
	m.status = EACCES;
	roundtrip(m, 64);

	static const size_t lens[] = { 1, 63, 64, 65, 128, 1000, DSMEM_WIRE_MAX_DATA };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t size = 64 + (lens[i] + 63) / 64 * 64;

		m = msg(DSMEM_WIRE_REPLY_READ, 0x2000, lens[i]);
		m.data = data;
		roundtrip(m, size);
		m = msg(DSMEM_WIRE_WRITE, 0x3000 + i, lens[i]);
		m.flags = DSMEM_WIRE_F_ACK;
		m.data = data;
		roundtrip(m, size);
	}
}

static void test_byte_layout_is_little_endian(void **state)
{
	struct dsmem_wire_msg m = msg(DSMEM_WIRE_WRITE, 0x0102030405060708ULL, 3);
	static const unsigned char expect[44] = {
		0xd5, 2, DSMEM_WIRE_WRITE, DSMEM_WIRE_F_ACK,
		0, 0,			/* status */
		2, 0,			/* units */
		0x44, 0x33, 0x22, 0x11,	/* tag */
		7, 0, 0, 0,		/* seq */
		8, 7, 6, 5, 4, 3, 2, 1,	/* addr */
		3, 0, 0, 0, 0, 0, 0, 0,	/* len */
		0, 0, 0, 0, 0, 0, 0, 0,	/* aux */
		0xcc, 0xdd, 0xee, 0xff,	/* handled */
	};

	(void)state;
	m.flags = DSMEM_WIRE_F_ACK;
	m.handled = 0xffeeddcc;
	m.data = "abc";
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 128);
	assert_memory_equal(buf, expect, sizeof(expect));
	assert_memory_equal(buf + 64, "abc", 3);
	for (int i = 44; i < 64; i++)
		assert_int_equal(buf[i], 0);	/* reserved */
	for (int i = 64 + 3; i < 128; i++)
		assert_int_equal(buf[i], 0);	/* padding */
}

static void test_size(void **state)
{
	(void)state;
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_READ, 4096), 64);
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_WRITE, 1), 128);
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_WRITE, 4096), 64 * 65);
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_WRITE, 4097), 0);
	assert_int_equal(dsmem_wire_size(0, 0), 0);
	assert_int_equal(dsmem_wire_size(200, 0), 0);
}

/* Encode a valid message, then break one thing in its bytes. */
static size_t valid_write(size_t len)
{
	struct dsmem_wire_msg m = msg(DSMEM_WIRE_WRITE, 0x1000, len);

	m.data = data;
	return (size_t)dsmem_wire_encode(buf, sizeof(buf), &m);
}

static int decode(size_t n)
{
	struct dsmem_wire_msg m;

	return dsmem_wire_decode(buf, n, &m);
}

static struct dsmem_wire_hdr *hdr(void)
{
	return (struct dsmem_wire_hdr *)buf;
}

static void test_decode_rejects_malformed(void **state)
{
	size_t n;

	(void)state;
	n = valid_write(100);
	assert_int_equal(decode(n), 0);
	/* truncated, ragged, oversized */
	assert_int_equal(decode(0), -EBADMSG);
	assert_int_equal(decode(63), -EBADMSG);
	assert_int_equal(decode(n - 64), -EBADMSG);
	assert_int_equal(decode(n - 1), -EBADMSG);
	assert_int_equal(decode((DSMEM_WIRE_MAX_UNITS + 1) * 64), -EBADMSG);

	n = valid_write(100);
	hdr()->magic = 0x42;
	assert_int_equal(decode(n), -EBADMSG);
	n = valid_write(100);
	hdr()->version = DSMEM_WIRE_VERSION + 1;
	assert_int_equal(decode(n), -EPROTONOSUPPORT);
	n = valid_write(100);
	hdr()->units = htole16(5);
	assert_int_equal(decode(n), -EBADMSG);
	n = valid_write(100);
	hdr()->reserved[19] = 1;
	assert_int_equal(decode(n), -EINVAL);
	n = valid_write(100);
	hdr()->opcode = 0;
	assert_int_equal(decode(n), -EOPNOTSUPP);
	hdr()->opcode = DSMEM_WIRE_OP_MAX + 1;
	assert_int_equal(decode(n), -EOPNOTSUPP);
	n = valid_write(100);
	hdr()->flags = 0x80;
	assert_int_equal(decode(n), -EINVAL);
	n = valid_write(100);
	hdr()->status = htole16(5);	/* a request with a status */
	assert_int_equal(decode(n), -EINVAL);
	n = valid_write(100);
	buf[64 + 100] = 1;		/* garbage in the padding */
	assert_int_equal(decode(n), -EBADMSG);
	n = valid_write(100);
	hdr()->len = htole64(300);	/* more data than units */
	assert_int_equal(decode(n), -EBADMSG);
	n = valid_write(100);
	hdr()->len = htole64(0);
	assert_int_equal(decode(n), -EINVAL);
	n = valid_write(100);
	hdr()->len = htole64(DSMEM_WIRE_MAX_DATA + 64);
	assert_int_equal(decode(n), -EMSGSIZE);
	n = valid_write(100);
	hdr()->addr = htole64(UINT64_MAX - 10);
	assert_int_equal(decode(n), -EOVERFLOW);
}

static void test_reply_status_rules(void **state)
{
	struct dsmem_wire_msg m;

	(void)state;
	/* an error reply without an error, a data reply with one */
	m = msg(DSMEM_WIRE_REPLY_READ_ERROR, 0, 0);
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m = msg(DSMEM_WIRE_REPLY_READ, 0x1000, 8);
	m.data = data;
	m.status = EIO;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	/* and the same on the receiving side */
	m = msg(DSMEM_WIRE_REPLY_READ_ERROR, 0, 0);
	m.status = EFAULT;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 64);
	hdr()->status = 0;
	assert_int_equal(decode(64), -EINVAL);
	/* READ may not ask for more than a reply can carry */
	m = msg(DSMEM_WIRE_READ, 0x1000, DSMEM_WIRE_MAX_DATA + 1);
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EMSGSIZE);
	/* the ACK flag belongs to WRITE only */
	m = msg(DSMEM_WIRE_READ, 0x1000, 8);
	m.flags = DSMEM_WIRE_F_ACK;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
}

static void test_encode_errors(void **state)
{
	struct dsmem_wire_msg m = msg(DSMEM_WIRE_WRITE, 0x1000, 100);

	(void)state;
	m.data = data;
	assert_int_equal(dsmem_wire_encode(buf, 191, &m), -ENOSPC);
	assert_int_equal(dsmem_wire_encode(buf, 192, &m), 192);
	m.data = NULL;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m = msg(77, 0, 0);
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EOPNOTSUPP);
}

/*
 * Random frames: the decoder never reads out of bounds (this test runs
 * under ASan/UBSan), and whatever it accepts re-encodes to the same bytes.
 */
static void test_random_frames(void **state)
{
	static unsigned char again[sizeof(buf)];
	unsigned int accepted = 0;

	(void)state;
	srandom(0xd5);
	for (int i = 0; i < 200000; i++) {
		size_t units = 1 + random() % 4;
		size_t n = units * 64;
		struct dsmem_wire_msg m;

		memset(buf, 0, n);
		/* mostly well-formed headers with one random field, so that
		 * the deep checks are reached, not only the magic */
		buf[0] = random() % 16 ? DSMEM_WIRE_MAGIC : random();
		buf[1] = random() % 16 ? DSMEM_WIRE_VERSION : random();
		buf[2] = random() % (DSMEM_WIRE_OP_MAX + 2);
		buf[3] = random() % 4 ? 0 : random();
		buf[6] = random() % 8 ? (unsigned char)units : (unsigned char)random();
		for (int k = 0; k < 6; k++)
			buf[8 + random() % 32] = random();
		if (!(random() % 8))
			buf[random() % n] = random();
		if (dsmem_wire_decode(buf, n, &m))
			continue;
		accepted++;
		if (m.data) {	/* encode from a copy: data points into buf */
			memcpy(data, m.data, m.len);
			m.data = data;
		}
		assert_int_equal(dsmem_wire_encode(again, sizeof(again), &m), n);
		assert_memory_equal(again, buf, n);
	}
	print_message("accepted %u of 200000 random frames\n", accepted);
	assert_true(accepted > 1000);
}

/* The control messages between modules: GRANT, REVOKE, PING, REPLY_ERROR. */
static void test_roundtrip_control_opcodes(void **state)
{
	struct dsmem_wire_msg m;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 1);

	/* GRANT carries data: one unit of header, then the grant */
	static const size_t lens[] = { 1, 32, 44, 64, 65, DSMEM_WIRE_MAX_DATA };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		m = msg(DSMEM_WIRE_GRANT, DSMEM_GADDR(2, 1, 0), lens[i]);
		m.data = data;
		roundtrip(m, 64 + (lens[i] + 63) / 64 * 64);
	}
	roundtrip(msg(DSMEM_WIRE_REPLY_GRANT, 0, 0), 64);
	m = msg(DSMEM_WIRE_REPLY_GRANT, 0, 0);
	m.status = EEXIST;
	roundtrip(m, 64);
	roundtrip(msg(DSMEM_WIRE_REVOKE, DSMEM_GADDR(2, 1, 0), 0), 64);
	roundtrip(msg(DSMEM_WIRE_REPLY_REVOKE, 0, 0), 64);
	m = msg(DSMEM_WIRE_REPLY_REVOKE, 0, 0);
	m.status = ENOENT;
	roundtrip(m, 64);
	roundtrip(msg(DSMEM_WIRE_PING, 0, 0), 64);
	m = msg(DSMEM_WIRE_REPLY_ERROR, 0, 0);
	m.status = EBADMSG;
	roundtrip(m, 64);
	m = msg(DSMEM_WIRE_REPLY_ERROR, 0, 0);
	m.status = 0xffff;		/* status is 16 bits on the wire */
	roundtrip(m, 64);
}

static void test_control_opcode_rules(void **state)
{
	struct dsmem_wire_msg m;

	(void)state;
	/* REPLY_ERROR is a failure: status 0 is refused both ways */
	m = msg(DSMEM_WIRE_REPLY_ERROR, 0, 0);
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m.status = EPROTO;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 64);
	hdr()->status = 0;
	assert_int_equal(decode(64), -EINVAL);

	/* GRANT needs data, of 1..MAX_DATA bytes */
	m = msg(DSMEM_WIRE_GRANT, 0x1000, 0);
	m.data = data;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m = msg(DSMEM_WIRE_GRANT, 0x1000, DSMEM_WIRE_MAX_DATA + 1);
	m.data = data;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EMSGSIZE);
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_GRANT, DSMEM_WIRE_MAX_DATA + 1), 0);
	m = msg(DSMEM_WIRE_GRANT, 0x1000, 44);
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m.data = data;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 128);
	hdr()->units = htole16(1);	/* its data cut off */
	assert_int_equal(decode(64), -EBADMSG);

	/*
	 * PING carries no data (its rule has none): len is a header field
	 * like any other, never a data length, so the message is one unit
	 * whatever len says, and a PING frame with data units is refused.
	 */
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_PING, 0), 64);
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_PING, 100), 64);
	assert_int_equal(dsmem_wire_size(DSMEM_WIRE_PING, DSMEM_WIRE_MAX_DATA + 1), 64);
	memset(buf, 0xff, 128);
	m = msg(DSMEM_WIRE_PING, 0, 100);
	m.data = data;			/* ignored: nothing to carry */
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 64);
	for (int i = 64; i < 128; i++)
		assert_int_equal(buf[i], 0xff);	/* nothing written past it */
	assert_int_equal(decode(64), 0);
	m = msg(DSMEM_WIRE_PING, 0, 0);
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 64);
	memset(buf + 64, 0, 64);
	hdr()->units = htole16(2);	/* one unit of "data" after it */
	hdr()->len = htole64(64);
	assert_int_equal(decode(128), -EBADMSG);
	hdr()->len = 0;
	assert_int_equal(decode(128), -EBADMSG);
	/* a request: no status, no flags */
	m = msg(DSMEM_WIRE_PING, 0, 0);
	m.status = EIO;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m = msg(DSMEM_WIRE_PING, 0, 0);
	m.flags = DSMEM_WIRE_F_ACK;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m = msg(DSMEM_WIRE_REVOKE, 0x1000, 0);
	m.status = EIO;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
	m = msg(DSMEM_WIRE_GRANT, 0x1000, 44);
	m.data = data;
	m.flags = DSMEM_WIRE_F_ACK;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), -EINVAL);
}

/* GRANT data: aligned, as the receive buffers are */
static _Alignas(8) unsigned char gbuf[DSMEM_WIRE_MAX_DATA + 64];

static struct dsmem_wire_grant_info grant(u64 base, u64 size, u64 span,
					  u32 perm, u32 nkeys)
{
	struct dsmem_wire_grant_info g = { .base = base, .size = size,
					   .span = span, .perm = perm,
					   .nkeys = nkeys };
	return g;
}

/* Encode a grant with keys 0x100 + i into gbuf; its size. */
static size_t put_grant(struct dsmem_wire_grant_info g)
{
	static u32 keys[DSMEM_WIRE_GRANT_MAX_KEYS + 1];

	for (u32 i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		keys[i] = 0x100 + i;
	return (size_t)dsmem_wire_grant_encode(gbuf, sizeof(gbuf), &g, keys);
}

static int get_grant(size_t n)
{
	struct dsmem_wire_grant_info g;

	return dsmem_wire_grant_decode(gbuf, n, &g);
}

static struct dsmem_wire_grant *wgrant(void)
{
	return (struct dsmem_wire_grant *)gbuf;
}

static void test_grant_size(void **state)
{
	struct dsmem_wire_grant_info g = grant(0x1000, 0x1000, 0, 1, 0);

	(void)state;
	_Static_assert(sizeof(struct dsmem_wire_grant) == 32, "grant header");
	assert_int_equal(dsmem_wire_grant_size(0), 32);
	assert_int_equal(dsmem_wire_grant_size(3), 44);
	assert_int_equal(dsmem_wire_grant_size(DSMEM_WIRE_GRANT_MAX_KEYS),
			 DSMEM_WIRE_MAX_DATA);
	/* too many keys for one message */
	assert_int_equal(dsmem_wire_grant_size(DSMEM_WIRE_GRANT_MAX_KEYS + 1), 0);
	assert_int_equal(dsmem_wire_grant_size(UINT32_MAX), 0);
	g.nkeys = DSMEM_WIRE_GRANT_MAX_KEYS + 1;
	assert_int_equal(dsmem_wire_grant_encode(gbuf, sizeof(gbuf), &g, NULL),
			 -EMSGSIZE);
	g.nkeys = 3;
	assert_int_equal(dsmem_wire_grant_encode(gbuf, 43, &g, NULL), -ENOSPC);
}

/* A grant with three keys, carried in a GRANT message and back. */
static void test_grant_roundtrip(void **state)
{
	const u64 base = DSMEM_GADDR(2, 1, 0);
	const u32 keys[3] = { 0x11223344, 0x55667788, 0x99aabbcc };
	struct dsmem_wire_grant_info g = grant(base, (5ULL << 20) + 123,
					       2ULL << 20, DSMEM_WIRE_PERM_ALL, 3);
	struct dsmem_wire_grant_info out;
	struct dsmem_wire_msg m, got;
	static const unsigned char expect[44] = {
		0, 0, 0, 0, 0x10, 0, 0x02, 0,		/* base: node 2, seg 1 */
		0x7b, 0, 0x50, 0, 0, 0, 0, 0,		/* size */
		0, 0, 0x20, 0, 0, 0, 0, 0,		/* span */
		3, 0, 0, 0,				/* perm */
		3, 0, 0, 0,				/* nkeys */
		0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55,
		0xcc, 0xbb, 0xaa, 0x99,			/* rkeys */
	};

	(void)state;
	assert_int_equal(dsmem_wire_grant_encode(gbuf, sizeof(gbuf), &g, keys), 44);
	assert_memory_equal(gbuf, expect, sizeof(expect));

	m = msg(DSMEM_WIRE_GRANT, base, 44);
	m.data = gbuf;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 128);
	assert_int_equal(dsmem_wire_decode(buf, 128, &got), 0);
	assert_int_equal(got.opcode, DSMEM_WIRE_GRANT);
	assert_true(got.addr == base && got.len == 44);
	assert_int_equal(dsmem_wire_grant_decode(got.data, got.len, &out), 0);
	assert_true(out.base == g.base && out.size == g.size && out.span == g.span);
	assert_int_equal(out.perm, DSMEM_WIRE_PERM_ALL);
	assert_int_equal(out.nkeys, 3);
	assert_ptr_equal(out.rkeys, (const unsigned char *)got.data + 32);
	for (u32 i = 0; i < 3; i++)
		assert_int_equal(dsmem_wire_grant_rkey(&out, i), keys[i]);

	/* a span that divides the size: the last region is a whole one */
	g = grant(base, 6ULL << 20, 2ULL << 20, DSMEM_WIRE_PERM_READ, 3);
	assert_int_equal(put_grant(g), 44);
	assert_int_equal(get_grant(44), 0);
	/* one key covering everything */
	g = grant(base, 4096, 4096, DSMEM_WIRE_PERM_WRITE, 1);
	assert_int_equal(put_grant(g), 36);
	assert_int_equal(get_grant(36), 0);
	/* as many keys as a message holds */
	g = grant(0, DSMEM_WIRE_GRANT_MAX_KEYS * 4096ULL, 4096,
		  DSMEM_WIRE_PERM_ALL, DSMEM_WIRE_GRANT_MAX_KEYS);
	assert_int_equal(put_grant(g), DSMEM_WIRE_MAX_DATA);
	assert_int_equal(dsmem_wire_grant_decode(gbuf, DSMEM_WIRE_MAX_DATA, &out), 0);
	assert_int_equal(dsmem_wire_grant_rkey(&out, out.nkeys - 1),
			 0x100 + DSMEM_WIRE_GRANT_MAX_KEYS - 1);
	/* the segment may end at the very top of the address space */
	g = grant(UINT64_MAX - 4096, 4096, 0, DSMEM_WIRE_PERM_READ, 0);
	assert_int_equal(put_grant(g), 32);
	assert_int_equal(get_grant(32), 0);
}

/* Reachable by messages only (page-table translation): no keys, no span. */
static void test_grant_roundtrip_no_keys(void **state)
{
	struct dsmem_wire_grant_info g = grant(DSMEM_GADDR(2, 7, 0), 64ULL << 20,
					       0, DSMEM_WIRE_PERM_READ, 0);
	struct dsmem_wire_grant_info out;
	struct dsmem_wire_msg m, got;

	(void)state;
	assert_int_equal(dsmem_wire_grant_encode(gbuf, sizeof(gbuf), &g, NULL), 32);
	m = msg(DSMEM_WIRE_GRANT, g.base, 32);
	m.data = gbuf;
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 128);
	assert_int_equal(dsmem_wire_decode(buf, 128, &got), 0);
	assert_int_equal(dsmem_wire_grant_decode(got.data, got.len, &out), 0);
	assert_true(out.base == g.base && out.size == g.size && out.span == 0);
	assert_int_equal(out.perm, DSMEM_WIRE_PERM_READ);
	assert_int_equal(out.nkeys, 0);
	/* a span without keys is not checked: nothing is reached by it */
	g.span = 12345;
	assert_int_equal(put_grant(g), 32);
	assert_int_equal(get_grant(32), 0);
}

static void test_grant_decode_rejects_malformed(void **state)
{
	const struct dsmem_wire_grant_info ok =
		grant(0x10000, 5 * 4096 + 1, 4096, DSMEM_WIRE_PERM_ALL, 6);
	struct dsmem_wire_grant_info g;
	size_t n;

	(void)state;
	n = put_grant(ok);
	assert_int_equal(n, 32 + 6 * 4);
	assert_int_equal(get_grant(n), 0);
	/* truncated: in the fixed part, in the keys; trailing bytes */
	assert_int_equal(dsmem_wire_grant_decode(NULL, 0, &g), -EBADMSG);
	assert_int_equal(get_grant(31), -EBADMSG);
	assert_int_equal(get_grant(n - 4), -EBADMSG);
	assert_int_equal(get_grant(n - 1), -EBADMSG);
	assert_int_equal(get_grant(n + 1), -EBADMSG);
	assert_int_equal(get_grant(n + 4), -EBADMSG);

	/* permissions: none, or an unknown bit */
	n = put_grant(ok);
	wgrant()->perm = htole32(0);
	assert_int_equal(get_grant(n), -EINVAL);
	wgrant()->perm = htole32(4);
	assert_int_equal(get_grant(n), -EINVAL);
	wgrant()->perm = htole32(DSMEM_WIRE_PERM_ALL | 4);
	assert_int_equal(get_grant(n), -EINVAL);
	wgrant()->perm = htole32(0x80000000);
	assert_int_equal(get_grant(n), -EINVAL);

	/* an empty segment, one that wraps around the address space */
	assert_int_equal(put_grant(grant(0x10000, 0, 0, 1, 0)), 32);
	assert_int_equal(get_grant(32), -EOVERFLOW);
	assert_int_equal(put_grant(grant(UINT64_MAX - 10, 64, 0, 1, 0)), 32);
	assert_int_equal(get_grant(32), -EOVERFLOW);
	assert_int_equal(put_grant(grant(UINT64_MAX - 4095, 4096, 0, 1, 0)), 32);
	assert_int_equal(get_grant(32), -EOVERFLOW);	/* ends at 2^64 */
	n = put_grant(ok);
	wgrant()->base = htole64(UINT64_MAX - 4096);
	assert_int_equal(get_grant(n), -EOVERFLOW);

	/* keys without a span, or with one larger than the segment */
	n = put_grant(ok);
	wgrant()->span = 0;
	assert_int_equal(get_grant(n), -EINVAL);
	assert_int_equal(put_grant(grant(0x10000, 4096, 8192, 1, 1)), 36);
	assert_int_equal(get_grant(36), -EINVAL);

	/* keys that do not cover the segment exactly: ceil(size/span) */
	n = put_grant(grant(0x10000, 5 * 4096 + 1, 4096, 1, 5));	/* one short */
	assert_int_equal(get_grant(n), -EINVAL);
	n = put_grant(grant(0x10000, 5 * 4096 + 1, 4096, 1, 7));	/* one over */
	assert_int_equal(get_grant(n), -EINVAL);
	n = put_grant(grant(0x10000, 6 * 4096, 4096, 1, 7));	/* span divides */
	assert_int_equal(get_grant(n), -EINVAL);
	n = put_grant(grant(0x10000, 6 * 4096, 4096, 1, 6));
	assert_int_equal(get_grant(n), 0);
	n = put_grant(ok);
	wgrant()->size = htole64(4 * 4096);	/* size no longer matches */
	assert_int_equal(get_grant(n), -EINVAL);

	/* more keys than a message holds: no size is right for them */
	assert_int_equal(dsmem_wire_grant_size(DSMEM_WIRE_GRANT_MAX_KEYS + 1), 0);
	n = put_grant(ok);
	wgrant()->nkeys = htole32(DSMEM_WIRE_GRANT_MAX_KEYS + 1);
	assert_int_equal(get_grant(sizeof(gbuf)), -EBADMSG);
	assert_int_equal(get_grant(32 + 4 * (DSMEM_WIRE_GRANT_MAX_KEYS + 1)), -EBADMSG);
	wgrant()->nkeys = htole32(UINT32_MAX);
	assert_int_equal(get_grant(n), -EBADMSG);
	assert_int_equal(get_grant(32), -EBADMSG);
}

static void test_cm_roundtrip(void **state)
{
	static const struct dsmem_wire_cm_info cases[] = {
		{ .src_node = 1, .dst_node = 2 },
		{ .src_node = 2, .dst_node = 0 },	/* CONNECT to any */
		{ .src_node = DSMEM_NODE_ID_MAX, .dst_node = DSMEM_NODE_ID_MAX },
	};
	static const unsigned char expect[32] = {
		0xd5, 2, 1, 0,		/* magic, version, flags (AUTH) */
		0x34, 0x12, 0, 0,	/* src_node */
		0xff, 0xff, 0, 0,	/* dst_node */
		0, 0, 0, 0,
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	};
	struct dsmem_wire_cm_info keyed = {
		.src_node = 0x1234, .dst_node = 0xffff,
		.flags = DSMEM_WIRE_CM_F_AUTH,
		.nonce = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
	};
	struct dsmem_wire_cm cm;
	struct dsmem_wire_cm_info out;

	(void)state;
	/* fits the 56 bytes a CONNECT's private data may have over IB */
	_Static_assert(sizeof(struct dsmem_wire_cm) == 32, "cm private data");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&cm, 0xaa, sizeof(cm));
		dsmem_wire_cm_encode(&cm, &cases[i]);
		memset(&out, 0xaa, sizeof(out));
		assert_int_equal(dsmem_wire_cm_decode(&cm, sizeof(cm), &out), 0);
		assert_int_equal(out.src_node, cases[i].src_node);
		assert_int_equal(out.dst_node, cases[i].dst_node);
		assert_int_equal(out.flags, 0);
	}
	dsmem_wire_cm_encode(&cm, &keyed);
	assert_memory_equal(&cm, expect, sizeof(expect));
	assert_int_equal(dsmem_wire_cm_decode(&cm, sizeof(cm), &out), 0);
	assert_int_equal(out.flags, DSMEM_WIRE_CM_F_AUTH);
	assert_memory_equal(out.nonce, keyed.nonce, sizeof(out.nonce));
}

/* rdma_cm pads private data to its own size (56 bytes for RC on IB) */
static void test_cm_padded(void **state)
{
	static _Alignas(8) unsigned char pad[56];
	struct dsmem_wire_cm_info out;

	(void)state;
	memset(pad, 0, sizeof(pad));
	dsmem_wire_cm_encode((struct dsmem_wire_cm *)pad,
			     &(struct dsmem_wire_cm_info){ .src_node = 1, .dst_node = 2 });
	assert_int_equal(dsmem_wire_cm_decode(pad, sizeof(pad), &out), 0);
	assert_int_equal(out.src_node, 1);
	assert_int_equal(out.dst_node, 2);
	assert_int_equal(dsmem_wire_cm_decode(pad, sizeof(struct dsmem_wire_cm) + 1,
					      &out), 0);
	/* the padding is rdma_cm's, not ours: not looked at */
	pad[sizeof(struct dsmem_wire_cm)] = 0x5a;
	pad[sizeof(pad) - 1] = 0xff;
	assert_int_equal(dsmem_wire_cm_decode(pad, sizeof(pad), &out), 0);
}

static void test_cm_rejects_malformed(void **state)
{
	static _Alignas(8) unsigned char b[56];
	struct dsmem_wire_cm *cm = (struct dsmem_wire_cm *)b;
	const struct dsmem_wire_cm_info ok = { .src_node = 1, .dst_node = 2 };
	struct dsmem_wire_cm_info out;

	(void)state;
#define CM_RESET() \
	do { memset(b, 0, sizeof(b)); dsmem_wire_cm_encode(cm, &ok); } while (0)
	CM_RESET();
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(*cm), &out), 0);
	/* nothing, or less than the struct (an older or foreign peer) */
	assert_int_equal(dsmem_wire_cm_decode(NULL, 0, &out), -EBADMSG);
	assert_int_equal(dsmem_wire_cm_decode(NULL, sizeof(b), &out), -EBADMSG);
	assert_int_equal(dsmem_wire_cm_decode(b, 0, &out), -EBADMSG);
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(*cm) - 1, &out), -EBADMSG);

	cm->magic = 0x42;
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EBADMSG);
	CM_RESET();
	cm->version = DSMEM_WIRE_VERSION + 1;
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EPROTONOSUPPORT);
	cm->version = 0;
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EPROTONOSUPPORT);
	CM_RESET();
	cm->flags = htole16(4);		/* a flag this version does not know */
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);
	CM_RESET();
	cm->reserved1 = htole32(0x80000000);
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);

	/* node ids: the sender is 1..65535, the expected peer 0..65535 */
	CM_RESET();
	cm->src_node = 0;
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);
	cm->src_node = htole32(DSMEM_NODE_ID_MAX + 1);
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);
	cm->src_node = htole32(UINT32_MAX);
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);
	CM_RESET();
	cm->dst_node = htole32(DSMEM_NODE_ID_MAX + 1);
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);
	dsmem_wire_cm_encode(cm, &(struct dsmem_wire_cm_info){ .src_node = 0, .dst_node = 1 });
	assert_int_equal(dsmem_wire_cm_decode(b, sizeof(b), &out), -EINVAL);
#undef CM_RESET
}

/* What an AUTH proof is the HMAC of, byte by byte (struct dsmem_wire_cm, dsmem_proto.h). */
static void test_auth_input(void **state)
{
	static const u8 nc[16] = { [0] = 0xc0, [15] = 0xcf };
	static const u8 na[16] = { [0] = 0xa0, [15] = 0xaf };
	/* RoCE's GIDs of 10.0.0.1 and 10.0.0.2 */
	static const u8 gc[16] = { [10] = 0xff, 0xff, 10, 0, 0, 1 };
	static const u8 ga[16] = { [10] = 0xff, 0xff, 10, 0, 0, 2 };
	struct dsmem_wire_auth_info a = {
		.role = 1, .nonce_c = nc, .nonce_a = na,
		.gid_c = gc, .gid_a = ga,
		.node_c = 0x0102, .node_a = 0x0304,
		.qpn_c = 0x112233, .qpn_a = 0x445566,
	};
	u8 in[DSMEM_WIRE_AUTH_INPUT_LEN], want[DSMEM_WIRE_AUTH_INPUT_LEN];
	u8 *p = want;

	(void)state;
	assert_int_equal(sizeof(in), 13 + 1 + 16 + 16 + 16 + 16 + 4 * 4);
	memcpy(p, "dsmem-auth-v2", 13);
	p += 13;
	*p++ = 1;
	memcpy(p, nc, 16);
	p += 16;
	memcpy(p, na, 16);
	p += 16;
	memcpy(p, gc, 16);
	p += 16;
	memcpy(p, ga, 16);
	p += 16;
	memcpy(p, (u8[]){ 0x02, 0x01, 0, 0, 0x04, 0x03, 0, 0,
			  0x33, 0x22, 0x11, 0, 0x66, 0x55, 0x44, 0 }, 16);
	dsmem_wire_auth_input(in, &a);
	assert_memory_equal(in, want, sizeof(want));
	/* the role is what tells the two proofs apart */
	a.role = 0;
	dsmem_wire_auth_input(in, &a);
	assert_memory_not_equal(in, want, sizeof(want));
	/* the same connection seen from the other end's side is another input */
	a.role = 1;
	a.gid_c = ga;
	a.gid_a = gc;
	dsmem_wire_auth_input(in, &a);
	assert_memory_not_equal(in, want, sizeof(want));
}

/*
 * Random grants, each in a buffer of exactly its size (ASan sees a read
 * past it): the decoder either refuses one or accepts a grant whose keys
 * cover the range exactly, and that re-encodes to the same bytes.
 */
static void test_random_grants(void **state)
{
	static u32 keys[DSMEM_WIRE_GRANT_MAX_KEYS];
	static _Alignas(8) unsigned char again[DSMEM_WIRE_MAX_DATA];
	unsigned int accepted = 0;

	(void)state;
	srandom(0x9a);
	for (int i = 0; i < 200000; i++) {
		u32 nkeys = random() % 16 ? (u32)(random() % 8) : (u32)random() << 1;
		u64 span = random() % 16 ? (u64)(1 + random() % 8192) : (u64)random();
		u64 size = nkeys && nkeys < 64 ?
			   span * (nkeys - 1) + 1 + (u64)random() % span :
			   (u64)random() << (random() % 40);
		size_t n = dsmem_wire_grant_size(nkeys);
		struct dsmem_wire_grant *w;
		struct dsmem_wire_grant_info g;
		unsigned char *p;

		/* mostly the right size, so that the deep checks are reached */
		if (!n || !(random() % 8))
			n = random() % (DSMEM_WIRE_MAX_DATA + 1);
		p = malloc(n ? n : 1);
		assert_non_null(p);
		for (size_t k = 0; k < n; k++)
			p[k] = random();
		if (n >= sizeof(*w)) {
			w = (struct dsmem_wire_grant *)p;	/* malloc aligns */
			w->base = htole64(random() % 8 ? (u64)random() << 12
						       : UINT64_MAX - random() % 65536);
			w->size = htole64(random() % 16 ? size : (u64)random());
			w->span = htole64(random() % 16 ? span : 0);
			w->perm = htole32(random() % 16 ? (u32)(random() % 5)
							: (u32)random());
			w->nkeys = htole32(nkeys);
			if (!(random() % 8))
				p[random() % sizeof(*w)] = random();
		}
		if (dsmem_wire_grant_decode(p, n, &g)) {
			free(p);
			continue;
		}
		accepted++;
		assert_int_equal(n, dsmem_wire_grant_size(g.nkeys));
		assert_true(g.perm >= 1 && g.perm <= DSMEM_WIRE_PERM_ALL);
		assert_true(g.size && g.base + g.size > g.base);
		if (g.nkeys)
			assert_true(g.span && g.span * (g.nkeys - 1) < g.size &&
				    g.size <= g.span * g.nkeys);
		for (u32 k = 0; k < g.nkeys; k++)
			keys[k] = dsmem_wire_grant_rkey(&g, k);
		assert_int_equal(dsmem_wire_grant_encode(again, sizeof(again), &g, keys),
				 n);
		assert_memory_equal(again, p, n);
		free(p);
	}
	print_message("accepted %u of 200000 random grants\n", accepted);
	assert_true(accepted > 1000);
}

/*
 * A reply answers only the request it was made for: every request's own
 * reply, its error form with a status, REPLY_ERROR; nothing else, and a
 * READ's data only for the range asked.  (A REPLY_ALLOC taken for a READ's
 * answer handed an unwritten buffer to userspace.)
 */
/* Replies are the answers, and every request's answer is one. */
/* PATHS asks; REPLY_PATHS answers with 16-byte addresses, or none. */
static void test_paths_messages(void **state)
{
	struct dsmem_wire_msg m, req = msg(DSMEM_WIRE_PATHS, 0, 0);
	unsigned char out_buf[256];

	(void)state;
	roundtrip(req, 64);
	m = msg(DSMEM_WIRE_REPLY_PATHS, 0, 2 * DSMEM_WIRE_PATH_ADDR_LEN);
	m.data = data;
	roundtrip(m, 128);
	assert_int_equal(dsmem_wire_reply_check(&req, &m), 0);
	/* none: a node on one device, or all its others down */
	m.len = 0;
	roundtrip(m, 64);
	/* a refusal comes as REPLY_ERROR; REPLY_PATHS itself carries none */
	m.status = EOPNOTSUPP;
	assert_int_equal(dsmem_wire_encode(out_buf, sizeof(out_buf), &m), -EINVAL);
	req.status = 1;
	assert_int_equal(dsmem_wire_encode(out_buf, sizeof(out_buf), &req), -EINVAL);
	/* and it answers PATHS only */
	m = msg(DSMEM_WIRE_REPLY_PATHS, 0, 0);
	req = msg(DSMEM_WIRE_PING, 0, 0);
	assert_int_equal(dsmem_wire_reply_check(&req, &m), -EPROTO);
	/* a path's CONNECT says so, and is not refused for it */
	struct dsmem_wire_cm cm;
	struct dsmem_wire_cm_info out;
	dsmem_wire_cm_encode(&cm, &(struct dsmem_wire_cm_info){
		.src_node = 1, .dst_node = 2,
		.flags = DSMEM_WIRE_CM_F_AUTH | DSMEM_WIRE_CM_F_PATH });
	assert_int_equal(dsmem_wire_cm_decode(&cm, sizeof(cm), &out), 0);
	assert_int_equal(out.flags, DSMEM_WIRE_CM_F_AUTH | DSMEM_WIRE_CM_F_PATH);
}

static void test_is_reply(void **state)
{
	static const uint8_t replies[] = {
		DSMEM_WIRE_REPLY_ALLOC, DSMEM_WIRE_REPLY_FREE,
		DSMEM_WIRE_REPLY_READ, DSMEM_WIRE_REPLY_READ_ERROR,
		DSMEM_WIRE_REPLY_WRITE, DSMEM_WIRE_REPLY_GRANT,
		DSMEM_WIRE_REPLY_REVOKE, DSMEM_WIRE_REPLY_ERROR,
		DSMEM_WIRE_REPLY_SLOPE, DSMEM_WIRE_REPLY_SLOPE_KEYS,
		DSMEM_WIRE_REPLY_PATHS,
	};
	int n = 0;

	(void)state;
	for (unsigned int op = 0; op <= 255; op++) {
		bool want = false;

		for (size_t i = 0; i < sizeof(replies); i++)
			want |= replies[i] == op;
		assert_int_equal(want, dsmem_wire_is_reply((uint8_t)op));
		/* what waits for the receiver's handler: the rest but two */
		assert_int_equal(!want && op != DSMEM_WIRE_PING && op != DSMEM_WIRE_AUTH,
				 dsmem_wire_is_request((uint8_t)op));
		n += want;
	}
	assert_int_equal(sizeof(replies), n);
}

static void test_reply_answers_its_request(void **state)
{
	static const struct { uint8_t req, answer, error; } pairs[] = {
		{ DSMEM_WIRE_ALLOC, DSMEM_WIRE_REPLY_ALLOC, 0 },
		{ DSMEM_WIRE_FREE, DSMEM_WIRE_REPLY_FREE, 0 },
		{ DSMEM_WIRE_READ, DSMEM_WIRE_REPLY_READ,
		  DSMEM_WIRE_REPLY_READ_ERROR },
		{ DSMEM_WIRE_WRITE, DSMEM_WIRE_REPLY_WRITE, 0 },
		{ DSMEM_WIRE_GRANT, DSMEM_WIRE_REPLY_GRANT, 0 },
		{ DSMEM_WIRE_REVOKE, DSMEM_WIRE_REPLY_REVOKE, 0 },
		{ DSMEM_WIRE_SLOPE_LEASE_REQ, DSMEM_WIRE_REPLY_SLOPE, 0 },
		{ DSMEM_WIRE_SLOPE_LEASE_RET, DSMEM_WIRE_REPLY_SLOPE, 0 },
		{ DSMEM_WIRE_SLOPE_FREE, DSMEM_WIRE_REPLY_SLOPE, 0 },
		{ DSMEM_WIRE_SLOPE_MIG_PUT, DSMEM_WIRE_REPLY_SLOPE, 0 },
		{ DSMEM_WIRE_SLOPE_MIG_BEGIN, DSMEM_WIRE_REPLY_SLOPE_KEYS,
		  DSMEM_WIRE_REPLY_SLOPE },
		{ DSMEM_WIRE_SLOPE_MIG_HANDOVER, DSMEM_WIRE_REPLY_SLOPE, 0 },
		{ DSMEM_WIRE_SLOPE_MIG_DONE, DSMEM_WIRE_REPLY_SLOPE, 0 },
		{ DSMEM_WIRE_SLOPE_MIG_ABORT, DSMEM_WIRE_REPLY_SLOPE, 0 },
	};
	int answered = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct dsmem_wire_msg req = msg(pairs[i].req, 1ull << 40, 64);

		for (int op = 0; op <= DSMEM_WIRE_OP_MAX + 1; op++) {
			struct dsmem_wire_msg ok = msg(op, req.addr, req.len);
			struct dsmem_wire_msg failed = ok;
			bool yes = op == pairs[i].answer ||
				   op == DSMEM_WIRE_REPLY_ERROR;

			failed.status = 5;
			assert_int_equal(dsmem_wire_reply_check(&req, &ok),
					 yes ? 0 : -EPROTO);
			yes = yes || (pairs[i].error && op == pairs[i].error);
			assert_int_equal(dsmem_wire_reply_check(&req, &failed),
					 yes ? 0 : -EPROTO);
			answered += yes;
		}
	}
	/* every request has its answer and REPLY_ERROR, two have an error form */
	assert_int_equal(answered, 14 * 2 + 2);

	/* a READ's data is about the range asked, all of it */
	struct dsmem_wire_msg rd = msg(DSMEM_WIRE_READ, 4096, 100);
	struct dsmem_wire_msg r = msg(DSMEM_WIRE_REPLY_READ, 4096, 100);

	assert_int_equal(dsmem_wire_reply_check(&rd, &r), 0);
	r.len = 99;
	assert_int_equal(dsmem_wire_reply_check(&rd, &r), -EPROTO);
	r.len = 100;
	r.addr = 4096 + 64;
	assert_int_equal(dsmem_wire_reply_check(&rd, &r), -EPROTO);

	/* what expects no reply takes none: replies, PING, COUNT */
	static const uint8_t no_answer[] = {
		DSMEM_WIRE_REPLY_READ, DSMEM_WIRE_PING,
		DSMEM_WIRE_SLOPE_LEASE_COUNT, 0, DSMEM_WIRE_OP_MAX + 1,
	};
	for (size_t i = 0; i < sizeof(no_answer); i++) {
		struct dsmem_wire_msg q = msg(no_answer[i], 0, 0);

		r = msg(DSMEM_WIRE_REPLY_ERROR, 0, 0);
		r.status = 5;
		assert_int_equal(dsmem_wire_reply_check(&q, &r), -EPROTO);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_opcode),
		cmocka_unit_test(test_is_reply),
		cmocka_unit_test(test_paths_messages),
		cmocka_unit_test(test_byte_layout_is_little_endian),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_decode_rejects_malformed),
		cmocka_unit_test(test_reply_status_rules),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_random_frames),
		cmocka_unit_test(test_roundtrip_control_opcodes),
		cmocka_unit_test(test_control_opcode_rules),
		cmocka_unit_test(test_grant_size),
		cmocka_unit_test(test_grant_roundtrip),
		cmocka_unit_test(test_grant_roundtrip_no_keys),
		cmocka_unit_test(test_grant_decode_rejects_malformed),
		cmocka_unit_test(test_cm_roundtrip),
		cmocka_unit_test(test_cm_padded),
		cmocka_unit_test(test_auth_input),
		cmocka_unit_test(test_cm_rejects_malformed),
		cmocka_unit_test(test_random_grants),
		cmocka_unit_test(test_reply_answers_its_request),
	};
	return cmocka_run_group_tests_name("dsmem_wire", tests, NULL, NULL);
}
