/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: what portable policy code (compiled into the module and into
 * userspace) may use: kernel types and byte-order helpers, mapped onto
 * libc outside the kernel.
 */
#ifndef _DSMEM_PORTABLE_H
#define _DSMEM_PORTABLE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <asm/byteorder.h>
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <asm/processor.h>

#include <linux/build_bug.h>
#include <linux/bits.h>

/*
 * The token cache's lock-free paths.  Its directory word is published
 * with release and read with acquire; the barriers order a reader's copy
 * against its second look at the word (seqlock-like, see
 * dsmem_tc_core.c).
 */
/* pairs with dsmem_store_release */
#define dsmem_load_acquire(p)		smp_load_acquire(p)
/* publishes what was written before it */
#define dsmem_store_release(p, v)	smp_store_release(p, v)
#define dsmem_read_once(x)		READ_ONCE(x)
#define dsmem_write_once(x, v)		WRITE_ONCE(x, v)
#define dsmem_cmpxchg64(p, o, n)	cmpxchg64(p, o, n)
/* copy read before the word is read again */
#define dsmem_rmb()			smp_rmb()
/* MIGRATING visible before the copy changes */
#define dsmem_wmb()			smp_wmb()
#define dsmem_cpu_relax()		cpu_relax()
#else
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

#define u8 __u8
#define u16 __u16
#define u32 __u32
#define u64 __u64
#define le16_to_cpu(x) le16toh(x)
#define le32_to_cpu(x) le32toh(x)
#define le64_to_cpu(x) le64toh(x)
#define cpu_to_le16(x) htole16(x)
#define cpu_to_le32(x) htole32(x)
#define cpu_to_le64(x) htole64(x)
#define s32 __s32
#define s64 __s64
#define BIT(n)		(1UL << (n))
#define BIT_ULL(n)	(1ULL << (n))

#define dsmem_load_acquire(p)		__atomic_load_n(p, __ATOMIC_ACQUIRE)
#define dsmem_store_release(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
#define dsmem_read_once(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define dsmem_write_once(x, v)		__atomic_store_n(&(x), v, __ATOMIC_RELAXED)
static inline __u64 dsmem_cmpxchg64(__u64 *p, __u64 old, __u64 new_val)
{
	__atomic_compare_exchange_n(p, &old, new_val, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	return old;
}

#define dsmem_rmb()			__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define dsmem_wmb()			__atomic_thread_fence(__ATOMIC_RELEASE)
#define dsmem_cpu_relax()		do { } while (0)
#endif

#endif /* _DSMEM_PORTABLE_H */
