// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: extents and the migration's wire data, checked the same
 * way for what we are asked to do and for what a peer sends.
 */
#include "dsmem_slope_core.h"

#define DSMEM_SLOPE_LONG_BITS	(8 * sizeof(unsigned long))

int dsmem_slope_extents_check(const struct dsmem_slope_extent *e, u32 n,
			      unsigned int unit_shift, u64 max_units,
			      u64 *units)
{
	u64 mask = (1ULL << unit_shift) - 1, end = 0, total = 0;
	u32 i;

	if (unit_shift != DSMEM_SLOPE_PAGE_SHIFT &&
	    unit_shift != DSMEM_SLOPE_HUGE_SHIFT)
		return -EINVAL;
	if (!n || n > DSMEM_SLOPE_EXTENTS_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		u64 a = e[i].addr, len = e[i].len;

		if (!len || (a | len) & mask)
			return -EINVAL;
		if (a < DSMEM_SLOPE_BASE ||
		    a - DSMEM_SLOPE_BASE > DSMEM_SLOPE_SIZE ||
		    len > DSMEM_SLOPE_SIZE - (a - DSMEM_SLOPE_BASE))
			return -ERANGE;
		/* sorted and disjoint: each starts at or after the last end */
		if (i && a < end)
			return -EINVAL;
		end = a + len;
		total += len >> unit_shift;
		if (total > max_units)
			return -E2BIG;
	}
	*units = total;
	return 0;
}

void dsmem_slope_extents_index(const struct dsmem_slope_extent *e, u32 n,
			       unsigned int unit_shift, u64 *first)
{
	u64 k = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		first[i] = k;
		k += e[i].len >> unit_shift;
	}
}

s64 dsmem_slope_unit_of(const struct dsmem_slope_extent *e, const u64 *first,
			u32 n, unsigned int unit_shift, u64 a)
{
	u32 lo = 0, hi = n;

	/* the last extent starting at or before a */
	while (hi - lo > 1) {
		u32 mid = lo + (hi - lo) / 2;

		if (e[mid].addr <= a)
			lo = mid;
		else
			hi = mid;
	}
	if (!n || a < e[lo].addr || a - e[lo].addr >= e[lo].len)
		return -1;
	return (s64)(first[lo] + ((a - e[lo].addr) >> unit_shift));
}

size_t dsmem_slope_begin_size(u32 nextents)
{
	if (!nextents || nextents > DSMEM_SLOPE_EXTENTS_MAX)
		return 0;
	return sizeof(struct dsmem_wire_slope_begin) +
	       (size_t)nextents * sizeof(struct dsmem_wire_slope_extent);
}

int dsmem_slope_begin_encode(void *buf, size_t size,
			     const struct dsmem_slope_begin_info *b,
			     const struct dsmem_slope_extent *ext)
{
	struct dsmem_wire_slope_begin *w = buf;
	size_t need = dsmem_slope_begin_size(b->nextents);
	u32 i;

	if (!need)
		return -EINVAL;
	if (size < need)
		return -ENOSPC;
	memset(w, 0, sizeof(*w));
	w->cookie = cpu_to_le64(b->cookie);
	w->units = cpu_to_le64(b->units);
	w->nextents = cpu_to_le32(b->nextents);
	w->unit_shift = b->unit_shift;
	for (i = 0; i < b->nextents; i++) {
		w->extents[i].addr = cpu_to_le64(ext[i].addr);
		w->extents[i].len = cpu_to_le64(ext[i].len);
	}
	return (int)need;
}

void dsmem_slope_begin_extent(const struct dsmem_slope_begin_info *b, u32 i,
			      struct dsmem_slope_extent *e)
{
	const struct dsmem_wire_slope_extent *w = b->extents;

	e->addr = le64_to_cpu(w[i].addr);
	e->len = le64_to_cpu(w[i].len);
}

int dsmem_slope_begin_decode(const void *buf, size_t size,
			     struct dsmem_slope_begin_info *b)
{
	const struct dsmem_wire_slope_begin *w = buf;
	u64 mask, end = 0, total = 0;
	u32 i;

	if (size < sizeof(*w))
		return -EBADMSG;
	b->cookie = le64_to_cpu(w->cookie);
	b->units = le64_to_cpu(w->units);
	b->nextents = le32_to_cpu(w->nextents);
	b->unit_shift = w->unit_shift;
	b->extents = w->extents;
	if (size != dsmem_slope_begin_size(b->nextents))
		return -EBADMSG;
	if (w->reserved[0] || w->reserved[1] || w->reserved[2])
		return -EINVAL;
	if (b->unit_shift != DSMEM_SLOPE_PAGE_SHIFT &&
	    b->unit_shift != DSMEM_SLOPE_HUGE_SHIFT)
		return -EINVAL;
	/* the extents check, on the wire form: no copy of a peer's array */
	mask = (1ULL << b->unit_shift) - 1;
	for (i = 0; i < b->nextents; i++) {
		struct dsmem_slope_extent e;

		dsmem_slope_begin_extent(b, i, &e);
		if (!e.len || (e.addr | e.len) & mask)
			return -EINVAL;
		if (e.addr < DSMEM_SLOPE_BASE ||
		    e.addr - DSMEM_SLOPE_BASE > DSMEM_SLOPE_SIZE ||
		    e.len > DSMEM_SLOPE_SIZE - (e.addr - DSMEM_SLOPE_BASE))
			return -ERANGE;
		if (i && e.addr < end)
			return -EINVAL;
		end = e.addr + e.len;
		total += e.len >> b->unit_shift;
		if (total > DSMEM_SLOPE_MIG_UNITS_MAX)
			return -E2BIG;
	}
	if (total != b->units)
		return -EINVAL;
	return 0;
}

size_t dsmem_slope_keys_size(u32 nkeys)
{
	if (!nkeys || nkeys > DSMEM_WIRE_SLOPE_KEYS_MAX)
		return 0;
	return sizeof(struct dsmem_wire_slope_keys) + nkeys * sizeof(__le32);
}

int dsmem_slope_keys_encode(void *buf, size_t size, u64 span, u32 nkeys,
			    const u32 *rkeys)
{
	struct dsmem_wire_slope_keys *w = buf;
	size_t need = dsmem_slope_keys_size(nkeys);
	u32 i;

	if (!need)
		return -EMSGSIZE;
	if (size < need)
		return -ENOSPC;
	w->span = cpu_to_le64(span);
	w->nkeys = cpu_to_le32(nkeys);
	w->reserved = 0;
	for (i = 0; i < nkeys; i++)
		w->rkeys[i] = cpu_to_le32(rkeys[i]);
	return (int)need;
}

/* span is a whole number of units, and nkeys regions of it cover units */
static int dsmem_slope_keys_cover(u64 span, u32 nkeys, u64 units,
				  unsigned int unit_shift)
{
	u64 per;

	if (!span || span & ((1ULL << unit_shift) - 1))
		return -EINVAL;
	per = span >> unit_shift;
	if (!units || (units - 1) / per + 1 != nkeys)
		return -EINVAL;
	return 0;
}

int dsmem_slope_keys_decode(const void *buf, size_t size, u64 units,
			    unsigned int unit_shift,
			    struct dsmem_slope_keys_info *k)
{
	const struct dsmem_wire_slope_keys *w = buf;

	if (size < sizeof(*w))
		return -EBADMSG;
	k->span = le64_to_cpu(w->span);
	k->nkeys = le32_to_cpu(w->nkeys);
	k->rkeys = w->rkeys;
	if (w->reserved || size != dsmem_slope_keys_size(k->nkeys))
		return -EBADMSG;
	return dsmem_slope_keys_cover(k->span, k->nkeys, units, unit_shift);
}

u32 dsmem_slope_rkey(const void *rkeys, u32 i)
{
	const __le32 *k = rkeys;

	return le32_to_cpu(k[i]);
}

static size_t dsmem_slope_handover_keys_bytes(u32 nkeys)
{
	return ((size_t)nkeys * sizeof(__le32) + 7) & ~(size_t)7;
}

size_t dsmem_slope_handover_size(u32 nkeys, u64 units)
{
	if (!nkeys || nkeys > DSMEM_WIRE_SLOPE_KEYS_MAX ||
	    !units || units > DSMEM_SLOPE_MIG_UNITS_MAX)
		return 0;
	return sizeof(struct dsmem_wire_slope_handover) +
	       dsmem_slope_handover_keys_bytes(nkeys) +
	       (size_t)((units + 63) / 64) * sizeof(__le64);
}

int dsmem_slope_handover_encode(void *buf, size_t size, u64 units,
				u64 span, u32 nkeys, const u32 *rkeys,
				const unsigned long *dirty)
{
	struct dsmem_wire_slope_handover *w = buf;
	size_t need = dsmem_slope_handover_size(nkeys, units);
	u64 words = (units + 63) / 64, ndirty = 0, i;
	__le32 *k;
	__le64 *bm;

	if (!need)
		return -EINVAL;
	if (size < need)
		return -ENOSPC;
	memset(buf, 0, need);
	k = (__le32 *)(w + 1);
	bm = (__le64 *)((u8 *)k + dsmem_slope_handover_keys_bytes(nkeys));
	for (i = 0; i < nkeys; i++)
		k[i] = cpu_to_le32(rkeys[i]);
	for (i = 0; i < units; i++) {
		if (!(dirty[i / DSMEM_SLOPE_LONG_BITS] >>
		      (i % DSMEM_SLOPE_LONG_BITS) & 1))
			continue;
		ndirty++;
		bm[i / 64] |= cpu_to_le64(1ULL << (i % 64));
	}
	w->dirty_units = cpu_to_le64(ndirty);
	w->bitmap_words = cpu_to_le64(words);
	w->span = cpu_to_le64(span);
	w->nkeys = cpu_to_le32(nkeys);
	return (int)need;
}

int dsmem_slope_handover_decode(const void *buf, size_t size, u64 units,
				unsigned int unit_shift,
				struct dsmem_slope_handover_info *h)
{
	const struct dsmem_wire_slope_handover *w = buf;
	const __le64 *bm;
	u64 words, count = 0, i;
	u32 nkeys;
	int ret;

	if (size < sizeof(*w))
		return -EBADMSG;
	nkeys = le32_to_cpu(w->nkeys);
	words = le64_to_cpu(w->bitmap_words);
	if (w->reserved || words != (units + 63) / 64 ||
	    size != dsmem_slope_handover_size(nkeys, units))
		return -EBADMSG;
	h->dirty_units = le64_to_cpu(w->dirty_units);
	h->keys.span = le64_to_cpu(w->span);
	h->keys.nkeys = nkeys;
	h->keys.rkeys = w + 1;
	ret = dsmem_slope_keys_cover(h->keys.span, nkeys, units, unit_shift);
	if (ret)
		return ret;
	bm = (const __le64 *)((const u8 *)(w + 1) +
			      dsmem_slope_handover_keys_bytes(nkeys));
	h->bitmap = bm;
	for (i = 0; i < words; i++) {
		u64 v = le64_to_cpu(bm[i]);

		/* no bit past the last unit */
		if (i == words - 1 && units % 64 && v >> (units % 64))
			return -EINVAL;
		for (; v; v &= v - 1)
			count++;
	}
	return count == h->dirty_units ? 0 : -EINVAL;
}

bool dsmem_slope_handover_dirty(const struct dsmem_slope_handover_info *h,
				u64 unit)
{
	const __le64 *bm = h->bitmap;

	return le64_to_cpu(bm[unit / 64]) >> (unit % 64) & 1;
}
