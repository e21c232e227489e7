/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * dsmem: compact RDMA object tokens, their 32-bit handles and the token
 * cache's access-trace file format.
 *
 * Every RDMA object the module creates (protection domains, memory
 * regions, completion queues, queue pairs) and each queue pair's send-side
 * state (its doorbell record and WQE format) is described by a packed
 * token and named by a compact handle.  Tokens are host byte order in memory and
 * over netlink (DSMEM_ATTR_TOKEN_DATA carries the bytes of the struct).
 */
#ifndef _UAPI_LINUX_DSMEM_TOKEN_H
#define _UAPI_LINUX_DSMEM_TOKEN_H

#include <linux/types.h>

enum dsmem_token_type {
	DSMEM_TOKEN_PD,
	DSMEM_TOKEN_MR,
	DSMEM_TOKEN_CQ,
	DSMEM_TOKEN_QP,
	DSMEM_TOKEN_DB,		/* a QP's send doorbell record */
	DSMEM_TOKEN_WQE,	/* a QP's work-request format */
	DSMEM_TOKEN_TYPES,
};

/* The layout version every token of this header carries in hdr.version. */
#define DSMEM_TOKEN_VERSION	1

struct dsmem_token_hdr {
	__u8 type;		/* enum dsmem_token_type */
	__u8 version;		/* DSMEM_TOKEN_VERSION */
	__u16 index;		/* in its type's pool */
} __attribute__((packed));

struct dsmem_pd_token {
	struct dsmem_token_hdr hdr;
	__u32 pdn;		/* the device's PD number */
} __attribute__((packed));

struct dsmem_mr_token {
	struct dsmem_token_hdr hdr;
	__u32 lkey;
	__u8 access_flags;	/* low bits of enum ib_access_flags */
	__u8 page_bits;		/* page shift */
	__u16 n_pages;		/* saturates at 0xffff */
} __attribute__((packed));

struct dsmem_cq_token {
	struct dsmem_token_hdr hdr;
	__u32 cqn;
	__u16 cqe;		/* entries; saturates at 0xffff */
	__u8 comp_vec;
	__u8 flags;
} __attribute__((packed));

struct dsmem_qp_token {
	struct dsmem_token_hdr hdr;
	__u32 qpn;
	__u8 qp_type;		/* enum ib_qp_type */
	__u8 state;		/* enum ib_qp_state */
	__u8 pd_index;		/* low 8 bits of the PD token's index */
	__u8 scq_index;		/* ... of the send CQ's */
	__u8 rcq_index;		/* ... of the receive CQ's */
	__u8 access_flags;	/* remote access the QP allows */
} __attribute__((packed));

/*
 * A QP's send doorbell record, rung by every work request posted on it.
 * Each post updates it inline, so its relaxed count (the token's
 * accesses, DSMEM_ATTR_TOKEN_ACCESSES) is the send queue's producer index.
 */
struct dsmem_db_token {
	struct dsmem_token_hdr hdr;
	__u32 qpn;
	__u16 sq_depth;		/* the send queue's work requests */
	__u16 qp_index;		/* the QP token's index */
} __attribute__((packed));

/*
 * What each work request of a QP is built from, as a NIC caches it beside
 * the WQEs it fetches: the lkey of its local SGEs and the SGE limits.
 */
struct dsmem_wqe_token {
	struct dsmem_token_hdr hdr;
	__u32 lkey;		/* the PD's local DMA lkey */
	__u8 max_sge;		/* per send, write and atomic */
	__u8 max_read_sge;	/* per RDMA READ */
	__u16 qp_index;		/* the QP token's index */
} __attribute__((packed));

#define DSMEM_PD_TOKEN_SIZE	8
#define DSMEM_MR_TOKEN_SIZE	12
#define DSMEM_CQ_TOKEN_SIZE	12
#define DSMEM_QP_TOKEN_SIZE	14
#define DSMEM_DB_TOKEN_SIZE	12
#define DSMEM_WQE_TOKEN_SIZE	12

/* Any token; the largest is 14 bytes. */
union dsmem_token {
	struct dsmem_token_hdr hdr;
	struct dsmem_pd_token pd;
	struct dsmem_mr_token mr;
	struct dsmem_cq_token cq;
	struct dsmem_qp_token qp;
	struct dsmem_db_token db;
	struct dsmem_wqe_token wqe;
	__u8 bytes[16];
};

/*
 * Compact handles:
 *
 *   31  30   29   28         16 15            0
 *  +--------+----+-------------+---------------+
 *  | type   |type|  generation |     index     |
 *  | bits1-0|bit2|             |               |
 *  +--------+----+-------------+---------------+
 *
 * The generation changes each time an index is reused, so a handle that
 * outlived its object is refused (-ESTALE), never resolved to another.
 * Generation 0 is never issued: no valid handle of a PD is 0.
 *
 * Type bit 2 came with the doorbell and WQE tokens and took the
 * generation's top bit: a handle of the first four types with a
 * generation below 8192 reads as it did when the type had two bits.
 */
#define DSMEM_HANDLE_TYPE_SHIFT	30
#define DSMEM_HANDLE_TYPE_HI_SHIFT	29	/* type bit 2 */
#define DSMEM_HANDLE_GEN_SHIFT	16
#define DSMEM_HANDLE_GEN_MASK	0x1fffU
#define DSMEM_HANDLE_INDEX_MAX	0xffffU

#define DSMEM_HANDLE(type, gen, index)					\
	((((__u32)(type) & 3) << DSMEM_HANDLE_TYPE_SHIFT) |		\
	 (((__u32)(type) >> 2 & 1) << DSMEM_HANDLE_TYPE_HI_SHIFT) |	\
	 (((__u32)(gen) & DSMEM_HANDLE_GEN_MASK) << DSMEM_HANDLE_GEN_SHIFT) | \
	 ((__u32)(index) & DSMEM_HANDLE_INDEX_MAX))
/* bits 31-29 (type bits 1, 0, 2) to the type, by a table of nibbles */
#define DSMEM_HANDLE_TYPE(h)						\
	((0x73625140U >> 4 * ((__u32)(h) >> DSMEM_HANDLE_TYPE_HI_SHIFT)) & 7)
#define DSMEM_HANDLE_GEN(h)						\
	(((__u32)(h) >> DSMEM_HANDLE_GEN_SHIFT) & DSMEM_HANDLE_GEN_MASK)
#define DSMEM_HANDLE_INDEX(h)	((__u32)(h) & DSMEM_HANDLE_INDEX_MAX)

/* Cache tiers, as in the directory's layer field. */
enum dsmem_tier {
	DSMEM_TIER_L1 = 1,	/* NIC SRAM: a small table of hot entries */
	DSMEM_TIER_L2,		/* CXL memory: compressed bucket pages */
	DSMEM_TIER_L3,		/* host DRAM: every token, in full */
};

/* Directory entry flags. */
#define DSMEM_TOKEN_PINNED	0x01	/* never migrates */
#define DSMEM_TOKEN_DIRTY	0x02	/* L1 holds unwritten relaxed fields */
#define DSMEM_TOKEN_MIGRATING	0x04	/* between tiers; readers retry */

enum dsmem_cache_mode {
	DSMEM_CACHE_FIXED,	/* thresholds as set */
	DSMEM_CACHE_ADAPTIVE,	/* thresholds follow the live hit rates */
};

/*
 * Access-trace file (dsctl cache trace): a header, then records, all
 * little-endian.  Records are in per-CPU order, so timestamps can step
 * back at most by the drain interval where two CPUs interleave.
 */
#define DSMEM_TRACE_MAGIC	"DSMTRACE"
#define DSMEM_TRACE_VERSION	1

struct dsmem_trace_hdr {
	char magic[8];		/* DSMEM_TRACE_MAGIC, no NUL */
	__u32 version;		/* DSMEM_TRACE_VERSION */
	__u32 rec_size;		/* sizeof(struct dsmem_trace_rec) */
};

enum dsmem_trace_op {
	DSMEM_TRACE_READ,	/* resolved for its fields */
	DSMEM_TRACE_MODIFY,	/* resolved, relaxed fields updated inline */
	DSMEM_TRACE_WRITE,	/* strict fields written through */
	DSMEM_TRACE_CREATE,
	DSMEM_TRACE_DESTROY,
};

struct dsmem_trace_rec {
	__u64 time_ns;		/* CLOCK_MONOTONIC */
	__u32 handle;
	__u32 node;		/* node id owning the object; 0 for none */
	__u8 type;		/* enum dsmem_token_type */
	__u8 op;		/* enum dsmem_trace_op */
	__u8 tier;		/* enum dsmem_tier that served it; 0 none */
	__u8 __pad;
	__u32 __reserved;
};

#define DSMEM_TRACE_HDR_SIZE	16
#define DSMEM_TRACE_REC_SIZE	24

#endif /* _UAPI_LINUX_DSMEM_TOKEN_H */
