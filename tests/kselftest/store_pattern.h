/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The contents of the object store's test objects (store_worker,
 * store_test, twoguest_test, obj_bench): a function of a seed and the
 * object's size, so that any bytes read back can be checked without
 * keeping a copy.  From STORE_PAT_HEADER bytes on, an object begins with
 * a header {magic, seed, size}: bytes read from offset 0 name the version
 * they claim to be, and a torn or mixed object cannot pass the check.
 */
#ifndef DSMEM_STORE_PATTERN_H
#define DSMEM_STORE_PATTERN_H

#include <stdint.h>
#include <string.h>

#define STORE_PAT_MAGIC		0x314a424f4d534423ULL	/* "#DSMOBJ1" */
#define STORE_PAT_HEADER	24

static inline uint64_t store_pat_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Byte i of the object of this seed and size. */
static inline uint8_t store_pat_byte(uint64_t seed, uint64_t size, uint64_t i)
{
	if (size >= STORE_PAT_HEADER && i < STORE_PAT_HEADER) {
		uint64_t h[3] = { STORE_PAT_MAGIC, seed, size };

		return (uint8_t)(h[i / 8] >> ((i & 7) * 8));
	}
	return (uint8_t)(store_pat_mix(seed ^ (i >> 3)) >> ((i & 7) * 8));
}

static inline void store_pat_fill(uint8_t *p, uint64_t size, uint64_t seed)
{
	uint64_t i = 0;

	for (; i + 8 <= size; i += 8) {
		uint64_t v = store_pat_mix(seed ^ (i >> 3));

		memcpy(p + i, &v, 8);
	}
	for (; i < size; i++)
		p[i] = store_pat_byte(seed, size, i);
	if (size >= STORE_PAT_HEADER) {
		uint64_t h[3] = { STORE_PAT_MAGIC, seed, size };

		memcpy(p, h, sizeof(h));
	}
}

/* 1 when p[0..n) are bytes [off, off + n) of the object (seed, size). */
static inline int store_pat_check(const uint8_t *p, uint64_t n, uint64_t seed,
				  uint64_t size, uint64_t off)
{
	uint64_t i = 0;

	if (off + n > size)
		return 0;
	/* the bulk a word at a time, where words line up */
	for (; i < n; i++) {
		uint64_t a = off + i;

		if ((a & 7) == 0 && a >= STORE_PAT_HEADER && i + 8 <= n) {
			uint64_t v = store_pat_mix(seed ^ (a >> 3));

			if (memcmp(p + i, &v, 8))
				return 0;
			i += 7;
			continue;
		}
		if (p[i] != store_pat_byte(seed, size, a))
			return 0;
	}
	return 1;
}

/*
 * The seed an object read whole from offset 0 claims (its header), or
 * -1 when it has no header (shorter, or not one of ours).
 */
static inline int store_pat_seed(const uint8_t *p, uint64_t n, uint64_t *seed, uint64_t *size)
{
	uint64_t h[3];

	if (n < STORE_PAT_HEADER)
		return -1;
	memcpy(h, p, sizeof(h));
	if (h[0] != STORE_PAT_MAGIC)
		return -1;
	*seed = h[1];
	*size = h[2];
	return 0;
}

#endif
