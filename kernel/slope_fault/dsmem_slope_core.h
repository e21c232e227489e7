/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem Slope: the rules both the module and userspace apply to extents
 * of the Slope range and to the migration's wire data.  Portable C: the
 * module and the userspace tests compile the same file.
 */
#ifndef _DSMEM_SLOPE_CORE_H
#define _DSMEM_SLOPE_CORE_H

#include "../dsmem_portable.h"

#ifdef __KERNEL__
#include <uapi/linux/dsmem.h>
#else
#include <linux/dsmem.h>
#endif
#include "../dsmem_proto.h"

#define DSMEM_SLOPE_PAGE_SHIFT	12

/*
 * Extents of one object: sorted, disjoint, non-empty, aligned to the unit
 * (1 << unit_shift: 12 or 21) and inside the Slope range.  *units gets
 * their total; more than max_units is -E2BIG.
 */
int dsmem_slope_extents_check(const struct dsmem_slope_extent *e, u32 n,
			      unsigned int unit_shift, u64 max_units,
			      u64 *units);

/*
 * The unit index, over the extents in order, of address a; -1 when a is
 * in none of them.  first[i] is the index of extent i's first unit.
 */
s64 dsmem_slope_unit_of(const struct dsmem_slope_extent *e, const u64 *first,
			u32 n, unsigned int unit_shift, u64 a);

/* fill first[] for dsmem_slope_unit_of */
void dsmem_slope_extents_index(const struct dsmem_slope_extent *e, u32 n,
			       unsigned int unit_shift, u64 *first);

/* SLOPE_MIG_BEGIN's staged data */
struct dsmem_slope_begin_info {
	u64 cookie;
	u64 units;
	u32 nextents;
	u8 unit_shift;
	const void *extents;	/* nextents wire extents, decoded in place */
};

size_t dsmem_slope_begin_size(u32 nextents);
int dsmem_slope_begin_encode(void *buf, size_t size,
			     const struct dsmem_slope_begin_info *b,
			     const struct dsmem_slope_extent *ext);
/* checks everything dsmem_slope_extents_check does */
int dsmem_slope_begin_decode(const void *buf, size_t size,
			     struct dsmem_slope_begin_info *b);
void dsmem_slope_begin_extent(const struct dsmem_slope_begin_info *b, u32 i,
			      struct dsmem_slope_extent *e);

/* memory regions over a migration's units (REPLY_SLOPE_KEYS, HANDOVER) */
struct dsmem_slope_keys_info {
	u64 span;
	u32 nkeys;
	const void *rkeys;	/* nkeys little-endian u32 */
};

size_t dsmem_slope_keys_size(u32 nkeys);
int dsmem_slope_keys_encode(void *buf, size_t size, u64 span, u32 nkeys,
			    const u32 *rkeys);
/* keys that cover exactly "units" units of 1 << unit_shift bytes */
int dsmem_slope_keys_decode(const void *buf, size_t size, u64 units,
			    unsigned int unit_shift,
			    struct dsmem_slope_keys_info *k);
u32 dsmem_slope_rkey(const void *rkeys, u32 i);

/* SLOPE_MIG_HANDOVER's staged data */
struct dsmem_slope_handover_info {
	u64 dirty_units;
	struct dsmem_slope_keys_info keys;
	const void *bitmap;	/* ceil(units / 64) little-endian u64 */
};

size_t dsmem_slope_handover_size(u32 nkeys, u64 units);
int dsmem_slope_handover_encode(void *buf, size_t size, u64 units,
				u64 span, u32 nkeys, const u32 *rkeys,
				const unsigned long *dirty);
int dsmem_slope_handover_decode(const void *buf, size_t size, u64 units,
				unsigned int unit_shift,
				struct dsmem_slope_handover_info *h);
bool dsmem_slope_handover_dirty(const struct dsmem_slope_handover_info *h,
				u64 unit);

#endif /* _DSMEM_SLOPE_CORE_H */
