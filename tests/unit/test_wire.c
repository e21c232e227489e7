// SPDX-License-Identifier: BSD-2-Clause
/*
 * The remote-memory wire codec (kernel/rdm/dsmem_wire.c, the very file the
 * module links): round trips, the byte layout, and malformed frames.
 */
#include <setjmp.h>
#include <stdarg.h>
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
	static const unsigned char expect[40] = {
		0xd5, 1, DSMEM_WIRE_WRITE, DSMEM_WIRE_F_ACK,
		0, 0,			/* status */
		2, 0,			/* units */
		0x44, 0x33, 0x22, 0x11,	/* tag */
		7, 0, 0, 0,		/* seq */
		8, 7, 6, 5, 4, 3, 2, 1,	/* addr */
		3, 0, 0, 0, 0, 0, 0, 0,	/* len */
		0, 0, 0, 0, 0, 0, 0, 0,	/* aux */
	};

	(void)state;
	m.flags = DSMEM_WIRE_F_ACK;
	m.data = "abc";
	assert_int_equal(dsmem_wire_encode(buf, sizeof(buf), &m), 128);
	assert_memory_equal(buf, expect, sizeof(expect));
	assert_memory_equal(buf + 64, "abc", 3);
	for (int i = 40; i < 64; i++)
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
	hdr()->version = 2;
	assert_int_equal(decode(n), -EPROTONOSUPPORT);
	n = valid_write(100);
	hdr()->units = htole16(5);
	assert_int_equal(decode(n), -EBADMSG);
	n = valid_write(100);
	hdr()->reserved[23] = 1;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_opcode),
		cmocka_unit_test(test_byte_layout_is_little_endian),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_decode_rejects_malformed),
		cmocka_unit_test(test_reply_status_rules),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_random_frames),
	};
	return cmocka_run_group_tests_name("dsmem_wire", tests, NULL, NULL);
}
