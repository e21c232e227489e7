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
#else
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
#endif

#endif /* _DSMEM_PORTABLE_H */
