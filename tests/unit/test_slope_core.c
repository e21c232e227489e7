// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Slope rules shared by the module and userspace
 * (kernel/slope_fault/dsmem_slope_core.c, the very file the module links):
 * extents, unit indexes, and the migration's wire data (BEGIN, keys,
 * HANDOVER) -- round trips and every malformed form a peer could send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dsmem_slope_core.h"

#define B	DSMEM_SLOPE_BASE
#define P	4096ULL
#define H	DSMEM_SLOPE_HUGE_SIZE

static void test_extents_check(void **state)
{
	struct dsmem_slope_extent e[3] = {
		{ B, 4 * P }, { B + 8 * P, P }, { B + 9 * P, 2 * P },
	};
	__u64 units = 0;

	(void)state;
	assert_int_equal(dsmem_slope_extents_check(e, 3, 12, 100, &units), 0);
	assert_int_equal(units, 7);
	/* too many units for the caller */
	assert_int_equal(dsmem_slope_extents_check(e, 3, 12, 6, &units), -E2BIG);
	/* not 2 MiB units */
	assert_int_equal(dsmem_slope_extents_check(e, 3, 21, 100, &units), -EINVAL);
	/* neither 4 KiB nor 2 MiB */
	assert_int_equal(dsmem_slope_extents_check(e, 3, 13, 100, &units), -EINVAL);
	/* none, or too many */
	assert_int_equal(dsmem_slope_extents_check(e, 0, 12, 100, &units), -EINVAL);
	assert_int_equal(dsmem_slope_extents_check(e, DSMEM_SLOPE_EXTENTS_MAX + 1, 12, 100,
						   &units), -EINVAL);
	/* overlapping, out of order, empty, unaligned */
	e[1].addr = B + 3 * P;
	assert_int_equal(dsmem_slope_extents_check(e, 3, 12, 100, &units), -EINVAL);
	e[1].addr = B + 8 * P;
	e[2].addr = B;
	assert_int_equal(dsmem_slope_extents_check(e, 3, 12, 100, &units), -EINVAL);
	e[2].addr = B + 9 * P;
	e[2].len = 0;
	assert_int_equal(dsmem_slope_extents_check(e, 3, 12, 100, &units), -EINVAL);
	e[2].len = P + 1;
	assert_int_equal(dsmem_slope_extents_check(e, 3, 12, 100, &units), -EINVAL);
	/* outside the range, below and across its end */
	e[0].addr = B - 4 * P;
	assert_int_equal(dsmem_slope_extents_check(e, 1, 12, 100, &units), -ERANGE);
	e[0].addr = B + DSMEM_SLOPE_SIZE - 2 * P;
	assert_int_equal(dsmem_slope_extents_check(e, 1, 12, 100, &units), -ERANGE);
	/* a length that wraps */
	e[0].addr = B;
	e[0].len = 0ULL - P;
	assert_int_equal(dsmem_slope_extents_check(e, 1, 12, UINT64_MAX, &units), -ERANGE);
	/* the last page of the range is fine */
	e[0].addr = B + DSMEM_SLOPE_SIZE - P;
	e[0].len = P;
	assert_int_equal(dsmem_slope_extents_check(e, 1, 12, 100, &units), 0);
}

static void test_unit_of(void **state)
{
	struct dsmem_slope_extent e[3] = {
		{ B, 2 * H }, { B + 10 * H, H }, { B + 20 * H, 3 * H },
	};
	__u64 first[3];

	(void)state;
	dsmem_slope_extents_index(e, 3, 21, first);
	assert_int_equal(first[0], 0);
	assert_int_equal(first[1], 2);
	assert_int_equal(first[2], 3);
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B), 0);
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B + H + 17), 1);
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B + 10 * H + H - 1), 2);
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B + 22 * H), 5);
	/* between and around the extents */
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B + 2 * H), -1);
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B + 23 * H), -1);
	assert_int_equal(dsmem_slope_unit_of(e, first, 3, 21, B - 1), -1);
	assert_int_equal(dsmem_slope_unit_of(e, first, 0, 21, B), -1);
}

/* A random sorted set of extents, with the units it covers. */
static uint32_t random_extents(struct dsmem_slope_extent *e, uint32_t max, __u64 *units,
			       unsigned int *seed)
{
	uint32_t n = 1 + rand_r(seed) % max;
	uint64_t a = B + (uint64_t)(rand_r(seed) % 64) * P;

	*units = 0;
	for (uint32_t i = 0; i < n; i++) {
		e[i].addr = a;
		e[i].len = (1 + rand_r(seed) % 9) * P;
		*units += e[i].len / P;
		a += e[i].len + (uint64_t)(rand_r(seed) % 3) * P;
	}
	return n;
}

static void test_begin_roundtrip(void **state)
{
	static struct dsmem_slope_extent e[300], out;
	static unsigned char buf[sizeof(struct dsmem_wire_slope_begin) + 300 * 16];
	unsigned int seed = 7;

	(void)state;
	for (int round = 0; round < 200; round++) {
		struct dsmem_slope_begin_info b = { .cookie = 0x1234 + round, .unit_shift = 12 }, d;
		__u64 units;
		size_t len;

		b.nextents = random_extents(e, 300, &units, &seed);
		b.units = units;
		len = dsmem_slope_begin_size(b.nextents);
		assert_int_equal(dsmem_slope_begin_encode(buf, sizeof(buf), &b, e), (int)len);
		assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), 0);
		assert_int_equal(d.cookie, b.cookie);
		assert_int_equal(d.units, units);
		assert_int_equal(d.nextents, b.nextents);
		for (uint32_t i = 0; i < d.nextents; i++) {
			dsmem_slope_begin_extent(&d, i, &out);
			assert_int_equal(out.addr, e[i].addr);
			assert_int_equal(out.len, e[i].len);
		}
		/* a truncated or padded message, and a wrong count */
		assert_int_equal(dsmem_slope_begin_decode(buf, len - 1, &d), -EBADMSG);
		assert_int_equal(dsmem_slope_begin_decode(buf, len + 16, &d), -EBADMSG);
		((struct dsmem_wire_slope_begin *)buf)->units = htole64(units + 1);
		assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -EINVAL);
	}
}

static void test_begin_malformed(void **state)
{
	struct dsmem_slope_extent e[2] = { { B, 2 * P }, { B + 4 * P, P } };
	struct dsmem_slope_begin_info b = { .units = 3, .nextents = 2, .unit_shift = 12 }, d;
	unsigned char buf[sizeof(struct dsmem_wire_slope_begin) + 2 * 16];
	struct dsmem_wire_slope_begin *w = (void *)buf;
	size_t len = sizeof(buf);

	(void)state;
	assert_int_equal(dsmem_slope_begin_encode(buf, len - 1, &b, e), -ENOSPC);
	assert_int_equal(dsmem_slope_begin_encode(buf, len, &b, e), (int)len);
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), 0);
	assert_int_equal(dsmem_slope_begin_decode(buf, 8, &d), -EBADMSG);
	w->reserved[1] = 1;
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -EINVAL);
	w->reserved[1] = 0;
	w->unit_shift = 20;
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -EINVAL);
	w->unit_shift = 12;
	/* a peer's extents obey the same rules as ours */
	w->extents[1].addr = htole64(B + P);
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -EINVAL);
	w->extents[1].addr = htole64(0x1000);
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -ERANGE);
	w->extents[1].addr = htole64(B + 4 * P + 1);
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -EINVAL);
	w->extents[1].addr = htole64(B + 4 * P);
	w->extents[1].len = 0;
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -EINVAL);
	w->extents[1].len = htole64((uint64_t)DSMEM_SLOPE_MIG_UNITS_MAX * P);
	w->units = htole64(2 + DSMEM_SLOPE_MIG_UNITS_MAX);
	assert_int_equal(dsmem_slope_begin_decode(buf, len, &d), -E2BIG);
}

static void test_keys(void **state)
{
	uint32_t rkeys[5] = { 11, 22, 33, 44, 55 };
	struct dsmem_slope_keys_info k;
	unsigned char buf[DSMEM_WIRE_MAX_DATA];
	int n;

	(void)state;
	/* 5 regions of 512 units cover 2049 .. 2560 units exactly */
	n = dsmem_slope_keys_encode(buf, sizeof(buf), 512 * P, 5, rkeys);
	assert_int_equal(n, (int)dsmem_slope_keys_size(5));
	assert_int_equal(dsmem_slope_keys_decode(buf, n, 2049, 12, &k), 0);
	assert_int_equal(dsmem_slope_keys_decode(buf, n, 2560, 12, &k), 0);
	assert_int_equal(k.nkeys, 5);
	assert_int_equal(k.span, 512 * P);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(dsmem_slope_rkey(k.rkeys, i), rkeys[i]);
	assert_int_equal(dsmem_slope_keys_decode(buf, n, 2048, 12, &k), -EINVAL);
	assert_int_equal(dsmem_slope_keys_decode(buf, n, 2561, 12, &k), -EINVAL);
	assert_int_equal(dsmem_slope_keys_decode(buf, n, 0, 12, &k), -EINVAL);
	/* a span that is not whole units */
	assert_int_equal(dsmem_slope_keys_decode(buf, n, 2049, 21, &k), -EINVAL);
	assert_int_equal(dsmem_slope_keys_decode(buf, n - 4, 2049, 12, &k), -EBADMSG);
	assert_int_equal(dsmem_slope_keys_decode(buf, 4, 2049, 12, &k), -EBADMSG);
	/* no keys, too many */
	assert_int_equal(dsmem_slope_keys_encode(buf, sizeof(buf), P, 0, rkeys), -EMSGSIZE);
	assert_int_equal(dsmem_slope_keys_encode(buf, sizeof(buf), P, DSMEM_WIRE_SLOPE_KEYS_MAX + 1,
						 rkeys), -EMSGSIZE);
	assert_true(dsmem_slope_keys_size(DSMEM_WIRE_SLOPE_KEYS_MAX) <= DSMEM_WIRE_MAX_DATA);
}

static void test_handover(void **state)
{
	enum { UNITS = 1000 };
	unsigned long dirty[(UNITS + 63) / 64] = { 0 };
	uint32_t rkeys[2] = { 7, 9 };
	static unsigned char buf[8192];
	struct dsmem_slope_handover_info h;
	size_t len = dsmem_slope_handover_size(2, UNITS);
	uint64_t want = 0;
	int n;

	(void)state;
	for (int i = 0; i < UNITS; i += 7) {
		dirty[i / (8 * sizeof(long))] |= 1UL << (i % (8 * sizeof(long)));
		want++;
	}
	n = dsmem_slope_handover_encode(buf, sizeof(buf), UNITS, 512 * P, 2, rkeys, dirty);
	assert_int_equal(n, (int)len);
	assert_int_equal(dsmem_slope_handover_decode(buf, len, UNITS, 12, &h), 0);
	assert_int_equal(h.dirty_units, want);
	assert_int_equal(h.keys.nkeys, 2);
	assert_int_equal(dsmem_slope_rkey(h.keys.rkeys, 1), 9);
	for (int i = 0; i < UNITS; i++)
		assert_int_equal(dsmem_slope_handover_dirty(&h, i), i % 7 == 0);
	/* the units must be the migration's */
	assert_int_equal(dsmem_slope_handover_decode(buf, len, UNITS + 64, 12, &h), -EBADMSG);
	/* unit 994 is dirty: a migration of 990 units has no such unit */
	assert_int_equal(dsmem_slope_handover_decode(buf, len, UNITS - 10, 12, &h), -EINVAL);
	/* a count that does not match the bits */
	((struct dsmem_wire_slope_handover *)buf)->dirty_units = htole64(want + 1);
	assert_int_equal(dsmem_slope_handover_decode(buf, len, UNITS, 12, &h), -EINVAL);
	((struct dsmem_wire_slope_handover *)buf)->dirty_units = htole64(want);
	/* a bit past the last unit */
	buf[len - 1] |= 0x80;
	assert_int_equal(dsmem_slope_handover_decode(buf, len, UNITS, 12, &h), -EINVAL);
	buf[len - 1] &= 0x7f;
	assert_int_equal(dsmem_slope_handover_decode(buf, len - 8, UNITS, 12, &h), -EBADMSG);
	assert_int_equal(dsmem_slope_handover_encode(buf, len - 1, UNITS, 512 * P, 2, rkeys,
						     dirty), -ENOSPC);
}

/* Random bytes never pass as a BEGIN, keys or HANDOVER by accident of size. */
static void test_garbage(void **state)
{
	static unsigned char buf[4096];
	unsigned int seed = 99;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct dsmem_slope_begin_info b;
		struct dsmem_slope_keys_info k;
		struct dsmem_slope_handover_info h;
		size_t len = rand_r(&seed) % sizeof(buf);

		for (size_t i = 0; i < len; i++)
			buf[i] = rand_r(&seed);
		/* whatever they say, decoding must not read past len */
		(void)dsmem_slope_begin_decode(buf, len, &b);
		(void)dsmem_slope_keys_decode(buf, len, 100, 12, &k);
		(void)dsmem_slope_handover_decode(buf, len, 100, 12, &h);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extents_check),
		cmocka_unit_test(test_unit_of),
		cmocka_unit_test(test_begin_roundtrip),
		cmocka_unit_test(test_begin_malformed),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_handover),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
