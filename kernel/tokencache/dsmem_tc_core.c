// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the token cache's policy core (see dsmem_tc_core.h).
 *
 * Migration protocol (seed 001): under the lock, a migration swaps the
 * directory word to MIGRATING, copies the token, and publishes the new
 * layer and offset with the version bumped.  A lock-free reader takes the
 * word, reads the copy it names and takes the word again; any difference
 * and it retries, so it never returns a half-moved token.  An L1 update
 * CASes the slot's update word, which the migration closes before it
 * copies, so an update either lands before the copy or retries elsewhere.
 */
#include "dsmem_tc_core.h"

/* ---- token codec ------------------------------------------------------ */

#define DSTC_FIELD(type, f, size) { #f, (u8)offsetof(type, f), size }

static const struct dstc_field dstc_pd_fields[] = {
	DSTC_FIELD(struct dsmem_pd_token, pdn, 4),
};

static const struct dstc_field dstc_mr_fields[] = {
	DSTC_FIELD(struct dsmem_mr_token, lkey, 4),
	DSTC_FIELD(struct dsmem_mr_token, access_flags, 1),
	DSTC_FIELD(struct dsmem_mr_token, page_bits, 1),
	DSTC_FIELD(struct dsmem_mr_token, n_pages, 2),
};

static const struct dstc_field dstc_cq_fields[] = {
	DSTC_FIELD(struct dsmem_cq_token, cqn, 4),
	DSTC_FIELD(struct dsmem_cq_token, cqe, 2),
	DSTC_FIELD(struct dsmem_cq_token, comp_vec, 1),
	DSTC_FIELD(struct dsmem_cq_token, flags, 1),
};

static const struct dstc_field dstc_qp_fields[] = {
	DSTC_FIELD(struct dsmem_qp_token, qpn, 4),
	DSTC_FIELD(struct dsmem_qp_token, qp_type, 1),
	DSTC_FIELD(struct dsmem_qp_token, state, 1),
	DSTC_FIELD(struct dsmem_qp_token, pd_index, 1),
	DSTC_FIELD(struct dsmem_qp_token, scq_index, 1),
	DSTC_FIELD(struct dsmem_qp_token, rcq_index, 1),
	DSTC_FIELD(struct dsmem_qp_token, access_flags, 1),
};

static const struct dstc_field dstc_db_fields[] = {
	DSTC_FIELD(struct dsmem_db_token, qpn, 4),
	DSTC_FIELD(struct dsmem_db_token, sq_depth, 2),
	DSTC_FIELD(struct dsmem_db_token, qp_index, 2),
};

static const struct dstc_field dstc_wqe_fields[] = {
	DSTC_FIELD(struct dsmem_wqe_token, lkey, 4),
	DSTC_FIELD(struct dsmem_wqe_token, max_sge, 1),
	DSTC_FIELD(struct dsmem_wqe_token, max_read_sge, 1),
	DSTC_FIELD(struct dsmem_wqe_token, qp_index, 2),
};

static const struct {
	const char *name;
	const struct dstc_field *fields;
	unsigned int nr;
	unsigned int size;
} dstc_types[DSMEM_TOKEN_TYPES] = {
	[DSMEM_TOKEN_PD] = { "pd", dstc_pd_fields, 1, DSMEM_PD_TOKEN_SIZE },
	[DSMEM_TOKEN_MR] = { "mr", dstc_mr_fields, 4, DSMEM_MR_TOKEN_SIZE },
	[DSMEM_TOKEN_CQ] = { "cq", dstc_cq_fields, 4, DSMEM_CQ_TOKEN_SIZE },
	[DSMEM_TOKEN_QP] = { "qp", dstc_qp_fields, 7, DSMEM_QP_TOKEN_SIZE },
	[DSMEM_TOKEN_DB] = { "db", dstc_db_fields, 3, DSMEM_DB_TOKEN_SIZE },
	[DSMEM_TOKEN_WQE] = { "wqe", dstc_wqe_fields, 4, DSMEM_WQE_TOKEN_SIZE },
};

/* the published sizes are the layout */
static_assert(sizeof(struct dsmem_token_hdr) == 4, "token header");
static_assert(sizeof(struct dsmem_pd_token) == DSMEM_PD_TOKEN_SIZE, "pd");
static_assert(sizeof(struct dsmem_mr_token) == DSMEM_MR_TOKEN_SIZE, "mr");
static_assert(sizeof(struct dsmem_cq_token) == DSMEM_CQ_TOKEN_SIZE, "cq");
static_assert(sizeof(struct dsmem_qp_token) == DSMEM_QP_TOKEN_SIZE, "qp");
static_assert(sizeof(struct dsmem_db_token) == DSMEM_DB_TOKEN_SIZE, "db");
static_assert(sizeof(struct dsmem_wqe_token) == DSMEM_WQE_TOKEN_SIZE, "wqe");
static_assert(sizeof(union dsmem_token) == 16, "token union");
/* the field tables cover each token exactly */
static_assert(4 + 4 == DSMEM_PD_TOKEN_SIZE, "pd fields");
static_assert(4 + 4 + 1 + 1 + 2 == DSMEM_MR_TOKEN_SIZE, "mr fields");
static_assert(4 + 4 + 2 + 1 + 1 == DSMEM_CQ_TOKEN_SIZE, "cq fields");
static_assert(4 + 4 + 6 * 1 == DSMEM_QP_TOKEN_SIZE, "qp fields");
static_assert(4 + 4 + 2 + 2 == DSMEM_DB_TOKEN_SIZE, "db fields");
static_assert(4 + 4 + 1 + 1 + 2 == DSMEM_WQE_TOKEN_SIZE, "wqe fields");
/* every type fits a handle's three type bits */
static_assert(DSMEM_TOKEN_TYPES <= 8, "handle type bits");
static_assert(sizeof(struct dsmem_trace_hdr) == DSMEM_TRACE_HDR_SIZE, "trace");
static_assert(sizeof(struct dsmem_trace_rec) == DSMEM_TRACE_REC_SIZE, "trace");
static_assert(sizeof(struct dstc_page_hdr) < DSTC_PAGE_SIZE / 8, "page hdr");

const struct dstc_field *dstc_token_fields(u8 type, unsigned int *nr)
{
	if (type >= DSMEM_TOKEN_TYPES)
		return NULL;
	*nr = dstc_types[type].nr;
	return dstc_types[type].fields;
}

const char *dstc_token_type_name(u8 type)
{
	return type < DSMEM_TOKEN_TYPES ? dstc_types[type].name : NULL;
}

unsigned int dstc_token_size(u8 type)
{
	return type < DSMEM_TOKEN_TYPES ? dstc_types[type].size : 0;
}

u32 dstc_field_get(const union dsmem_token *t, const struct dstc_field *f)
{
	u16 v16;
	u32 v32;

	switch (f->size) {
	case 1:
		return t->bytes[f->offset];
	case 2:
		memcpy(&v16, &t->bytes[f->offset], 2);
		return v16;
	default:
		memcpy(&v32, &t->bytes[f->offset], 4);
		return v32;
	}
}

void dstc_field_set(union dsmem_token *t, const struct dstc_field *f, u32 v)
{
	u16 v16 = (u16)v;

	switch (f->size) {
	case 1:
		t->bytes[f->offset] = (u8)v;
		break;
	case 2:
		memcpy(&t->bytes[f->offset], &v16, 2);
		break;
	default:
		memcpy(&t->bytes[f->offset], &v, 4);
		break;
	}
}

int dstc_token_check(const union dsmem_token *t, unsigned int len)
{
	if (len < sizeof(t->hdr) || t->hdr.type >= DSMEM_TOKEN_TYPES)
		return -EINVAL;
	if (len != dstc_types[t->hdr.type].size ||
	    t->hdr.version != DSMEM_TOKEN_VERSION)
		return -EINVAL;
	return 0;
}

void dstc_token_init(union dsmem_token *t, u8 type, u16 index)
{
	memset(t, 0, sizeof(*t));
	t->hdr.type = type;
	t->hdr.version = DSMEM_TOKEN_VERSION;
	t->hdr.index = index;
}

/* ---- L2 pages --------------------------------------------------------- */

/*
 * A slot's record: a byte whose bit i says field i differs from the
 * page's base token (bit 7: the version does), then each differing field
 * as a zigzag varint of its difference, then the version byte if it
 * differs.  Tokens of one bucket are neighbours (consecutive indexes,
 * often consecutive hardware numbers, equal types and states), so most
 * records are 2 to 5 bytes against 16 in L3.
 */
#define DSTC_REC_MAX	24
#define DSTC_REC_VERSION	0x80
#define DSTC_BASE_UNSET	0xff

static inline struct dstc_page_hdr *dstc_ph(void *page)
{
	return page;
}

static unsigned int dstc_varint_put(u8 *p, u32 v)
{
	unsigned int n = 0;

	while (v >= 0x80) {
		p[n++] = (u8)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (u8)v;
	return n;
}

/* bytes read, 0 on a malformed varint or the end of the page */
static unsigned int dstc_varint_get(const u8 *p, unsigned int room, u32 *v)
{
	unsigned int n = 0, shift = 0;
	u32 r = 0;

	while (n < room && n < 5) {
		r |= (u32)(p[n] & 0x7f) << shift;
		if (!(p[n++] & 0x80)) {
			*v = r;
			return n;
		}
		shift += 7;
	}
	return 0;
}

static unsigned int dstc_rec_encode(const union dsmem_token *base,
				    const union dsmem_token *t, u8 *out)
{
	const struct dstc_field *f = dstc_types[base->hdr.type].fields;
	unsigned int i, nr = dstc_types[base->hdr.type].nr, n = 1;
	u8 mask = 0;

	for (i = 0; i < nr; i++) {
		s32 d = (s32)(dstc_field_get(t, &f[i]) -
			      dstc_field_get(base, &f[i]));

		if (!d)
			continue;
		mask |= 1U << i;
		n += dstc_varint_put(out + n, ((u32)d << 1) ^ (u32)(d >> 31));
	}
	if (t->hdr.version != base->hdr.version) {
		mask |= DSTC_REC_VERSION;
		out[n++] = t->hdr.version;
	}
	out[0] = mask;
	return n;
}

/* bytes used, 0 if the record is malformed */
static unsigned int dstc_rec_decode(const union dsmem_token *base,
				    const u8 *in, unsigned int room,
				    union dsmem_token *t)
{
	const struct dstc_field *f = dstc_types[base->hdr.type].fields;
	unsigned int i, nr = dstc_types[base->hdr.type].nr, n = 1, k;
	u8 mask;
	u32 z;

	if (!room)
		return 0;
	mask = in[0];
	*t = *base;
	for (i = 0; i < nr; i++) {
		if (!(mask & (1U << i)))
			continue;
		k = dstc_varint_get(in + n, room - n, &z);
		if (!k)
			return 0;
		n += k;
		dstc_field_set(t, &f[i], dstc_field_get(base, &f[i]) +
			       ((z >> 1) ^ (0U - (z & 1))));
	}
	if (mask & DSTC_REC_VERSION) {
		if (n >= room)
			return 0;
		t->hdr.version = in[n++];
	}
	return n;
}

void dstc_page_init(void *page, u32 page_id)
{
	struct dstc_page_hdr *h = dstc_ph(page);

	memset(h, 0, sizeof(*h));
	h->page_id = page_id;
	h->stream_end = sizeof(*h);
	h->base.hdr.type = DSTC_BASE_UNSET;
}

static unsigned int dstc_page_rec_len(const void *page, unsigned int slot)
{
	const struct dstc_page_hdr *h = page;
	union dsmem_token t;
	u16 off = h->slot_off[slot];

	if (!off)
		return 0;
	return dstc_rec_decode(&h->base, (const u8 *)page + off,
			       h->stream_end - off, &t);
}

unsigned int dstc_page_slot_bytes(const void *page, unsigned int slot)
{
	return slot < DSTC_BUCKET_SLOTS ? dstc_page_rec_len(page, slot) : 0;
}

/*
 * Copy the live records into a fresh page, without the holes.  Never in
 * place: lock-free readers may be decoding the old page.
 */
void dstc_page_compact(void *to, const void *from)
{
	const struct dstc_page_hdr *f = from;
	struct dstc_page_hdr *h = dstc_ph(to);
	unsigned int s, len;

	memcpy(h, f, sizeof(*h));
	h->stream_end = sizeof(*h);
	for (s = 0; s < DSTC_BUCKET_SLOTS; s++) {
		if (!f->slot_off[s])
			continue;
		len = dstc_page_rec_len(from, s);
		memcpy((u8 *)to + h->stream_end, (const u8 *)from + f->slot_off[s],
		       len);
		h->slot_off[s] = h->stream_end;
		h->stream_end += len;
	}
}

int dstc_page_put(void *page, unsigned int slot, const union dsmem_token *t)
{
	struct dstc_page_hdr *h = dstc_ph(page);
	u8 rec[DSTC_REC_MAX];
	unsigned int len, old;

	if (slot >= DSTC_BUCKET_SLOTS || t->hdr.type >= DSMEM_TOKEN_TYPES)
		return -EINVAL;
	if (h->base.hdr.type == DSTC_BASE_UNSET)
		h->base = *t;
	else if (t->hdr.type != h->base.hdr.type)
		return -EINVAL;
	len = dstc_rec_encode(&h->base, t, rec);
	old = dstc_page_rec_len(page, slot);
	if (old && len <= old) {
		/* in place; a shorter record leaves a hole for compaction */
		memcpy((u8 *)page + h->slot_off[slot], rec, len);
		return 0;
	}
	if (h->stream_end + len > DSTC_PAGE_SIZE)
		return -ENOSPC;	/* the caller compacts into a new page */
	if (old)
		dstc_page_del(page, slot);
	memcpy((u8 *)page + h->stream_end, rec, len);
	h->slot_off[slot] = h->stream_end;
	h->stream_end += len;
	h->slot_bitmap[slot / 64] |= 1ULL << (slot % 64);
	h->used_slots++;
	return 0;
}

int dstc_page_get(const void *page, unsigned int slot, union dsmem_token *t)
{
	const struct dstc_page_hdr *h = page;
	u16 off;

	if (slot >= DSTC_BUCKET_SLOTS)
		return -EINVAL;
	off = dsmem_read_once(h->slot_off[slot]);
	if (!off || off >= DSTC_PAGE_SIZE)
		return -ENOENT;
	if (!dstc_rec_decode(&h->base, (const u8 *)page + off,
			     DSTC_PAGE_SIZE - off, t))
		return -EIO;
	t->hdr.index = (u16)((h->page_id << DSTC_BUCKET_SHIFT) | slot);
	return 0;
}

void dstc_page_del(void *page, unsigned int slot)
{
	struct dstc_page_hdr *h = dstc_ph(page);

	if (slot >= DSTC_BUCKET_SLOTS || !h->slot_off[slot])
		return;
	if (h->slot_off[slot] + dstc_page_rec_len(page, slot) == h->stream_end)
		h->stream_end = h->slot_off[slot];
	h->slot_off[slot] = 0;
	h->slot_bitmap[slot / 64] &= ~(1ULL << (slot % 64));
	h->used_slots--;
}

/* ---- parameters ------------------------------------------------------- */

#define NS_PER_MS	1000000ULL
#define NS_PER_S	1000000000ULL

#define DSTC_PARAM(name, lo, hi, def, unit) \
	{ #name, lo, hi, def, unit, #name " out of range" }

const struct dstc_param_desc dstc_params[DSTC_P_NR] = {
	[DSTC_P_L1_CAPACITY] =
		DSTC_PARAM(l1_capacity, 1, DSTC_L1_MAX, 4096, "entries"),
	[DSTC_P_L2_CAPACITY] =
		DSTC_PARAM(l2_capacity, 1, DSTC_ENTRIES_MAX, 65536, "entries"),
	[DSTC_P_PROMOTE_L2] =
		DSTC_PARAM(promote_l2, 1, 65535, 16, "hits"),
	[DSTC_P_PROMOTE_L1] =
		DSTC_PARAM(promote_l1, 1, 65535, 128, "hits"),
	[DSTC_P_WINDOW_NS] =
		DSTC_PARAM(window, 1000, 60 * NS_PER_S, 100 * NS_PER_MS, "ns"),
	[DSTC_P_L1_IDLE_NS] =
		DSTC_PARAM(l1_idle, 1000, 60 * NS_PER_S, 1 * NS_PER_MS, "ns"),
	[DSTC_P_L2_IDLE_NS] =
		DSTC_PARAM(l2_idle, 1000, 60 * NS_PER_S, 10 * NS_PER_MS, "ns"),
	[DSTC_P_AGING_NS] =
		DSTC_PARAM(aging, 1000, 60 * NS_PER_S, 100 * NS_PER_MS, "ns"),
	[DSTC_P_BATCH_THRESHOLD] =
		DSTC_PARAM(batch_threshold, 1, 4096, 32, "entries"),
	[DSTC_P_BATCH_MAX] =
		DSTC_PARAM(batch_max, 1, 4096, 256, "entries"),
	[DSTC_P_QUEUE_MAX] =
		DSTC_PARAM(queue_max, 1, 16384, 1024, "entries"),
	[DSTC_P_CAS_RETRIES] =
		DSTC_PARAM(cas_retries, 1, 1000, 8, "tries"),
	[DSTC_P_PREFETCH] =
		DSTC_PARAM(prefetch, 0, DSTC_BUCKET_SLOTS - 1, 8, "entries"),
	[DSTC_P_COST_L1_NS] =
		DSTC_PARAM(cost_l1, 1, 1000000, 5, "ns"),
	[DSTC_P_COST_L2_NS] =
		DSTC_PARAM(cost_l2, 1, 1000000, 200, "ns"),
	[DSTC_P_COST_L3_NS] =
		DSTC_PARAM(cost_l3, 1, 1000000, 800, "ns"),
	[DSTC_P_MODE] =
		DSTC_PARAM(mode, DSMEM_CACHE_FIXED, DSMEM_CACHE_ADAPTIVE, DSMEM_CACHE_ADAPTIVE, ""),
	[DSTC_P_MIGRATE_BUDGET] =
		DSTC_PARAM(migrate_budget, 1, 1000000, 32768, "entries"),
	[DSTC_P_ADAPT_NS] =
		DSTC_PARAM(adapt_interval, 1000, 60 * NS_PER_S, 10 * NS_PER_MS, "ns"),
	[DSTC_P_SAMPLE] =
		DSTC_PARAM(sample, 1, 1024, 1, "accesses"),
	[DSTC_P_OPTIMISTIC] =
		DSTC_PARAM(optimistic, 0, 1, 0, ""),
};

void dstc_params_default(u64 *p)
{
	unsigned int i;

	for (i = 0; i < DSTC_P_NR; i++)
		p[i] = dstc_params[i].def;
}

int dstc_params_check_l1(const u64 *p, u64 l1_max, unsigned int *bad,
			 const char **why)
{
	unsigned int i;

	for (i = 0; i < DSTC_P_NR; i++) {
		u64 max = i == DSTC_P_L1_CAPACITY ? l1_max : dstc_params[i].max;

		if (p[i] < dstc_params[i].min || p[i] > max) {
			*bad = i;
			*why = dstc_params[i].range_msg;
			return -ERANGE;
		}
	}
	*bad = DSTC_P_NR;
	if (p[DSTC_P_PROMOTE_L1] < p[DSTC_P_PROMOTE_L2]) {
		*why = "promote_l1 below promote_l2";
		return -ERANGE;
	}
	if (p[DSTC_P_BATCH_MAX] < p[DSTC_P_BATCH_THRESHOLD]) {
		*why = "batch_max below batch_threshold";
		return -ERANGE;
	}
	if (p[DSTC_P_QUEUE_MAX] < p[DSTC_P_BATCH_THRESHOLD]) {
		*why = "queue_max below batch_threshold";
		return -ERANGE;
	}
	return 0;
}

int dstc_params_check(const u64 *p, const char **why)
{
	unsigned int bad;

	return dstc_params_check_l1(p, DSTC_L1_MAX, &bad, why);
}

/* ---- statistics ------------------------------------------------------- */

const char *const dstc_stat_names[DSTC_S_NR] = {
	[DSTC_S_HITS_L1]	= "hits_l1",
	[DSTC_S_HITS_L2]	= "hits_l2",
	[DSTC_S_HITS_L3]	= "hits_l3",
	[DSTC_S_COST_L1_NS]	= "cost_l1_ns",
	[DSTC_S_COST_L2_NS]	= "cost_l2_ns",
	[DSTC_S_COST_L3_NS]	= "cost_l3_ns",
	[DSTC_S_PROMOTE_L1]	= "promote_l1",
	[DSTC_S_PROMOTE_L2]	= "promote_l2",
	[DSTC_S_DEMOTE_L1]	= "demote_l1",
	[DSTC_S_DEMOTE_L2]	= "demote_l2",
	[DSTC_S_EVICT_L1]	= "evict_l1",
	[DSTC_S_EVICT_L2]	= "evict_l2",
	[DSTC_S_MIGRATIONS]	= "migrations",
	[DSTC_S_MIGRATE_FAILED]	= "migrate_failed",
	[DSTC_S_CAS_RETRIES]	= "cas_retries",
	[DSTC_S_CAS_FALLBACKS]	= "cas_fallbacks",
	[DSTC_S_READ_RETRIES]	= "read_retries",
	[DSTC_S_QUEUED]		= "queued",
	[DSTC_S_BACKPRESSURE]	= "backpressure",
	[DSTC_S_BATCHES]	= "batches",
	[DSTC_S_PREFETCHED]	= "prefetched",
	[DSTC_S_EXPAND_URGENT]	= "expand_urgent",
	[DSTC_S_EXPAND_BACKGROUND] = "expand_background",
	[DSTC_S_WRITEBACKS]	= "writebacks",
	[DSTC_S_WRITETHROUGHS]	= "writethroughs",
	[DSTC_S_ADAPT_UP]	= "adapt_up",
	[DSTC_S_ADAPT_DOWN]	= "adapt_down",
	[DSTC_S_PREFETCH_HITS]	= "prefetch_hits",
	[DSTC_S_OPTIMISTIC_READS] = "optimistic_reads",
	[DSTC_S_OPTIMISTIC_RECONCILES] = "optimistic_reconciles",
	[DSTC_S_MIGRATE_NS]	= "migrate_ns",
	[DSTC_S_DMA_BYTES]	= "dma_bytes",
	[DSTC_S_DMA_PREFETCH_BYTES] = "dma_prefetch_bytes",
};

#define DSTC_HIST_EXACT	32

unsigned int dstc_hist_bucket(u64 ns)
{
	unsigned int e, b;

	if (ns < DSTC_HIST_EXACT)
		return (unsigned int)ns;
	e = 63 - (unsigned int)__builtin_clzll(ns);	/* >= 5 */
	b = DSTC_HIST_EXACT + (e - 5) * 16 + (unsigned int)((ns >> (e - 4)) & 15);
	return b < DSTC_HIST_BUCKETS ? b : DSTC_HIST_BUCKETS - 1;
}

u64 dstc_hist_value(unsigned int b)
{
	unsigned int e, sub;

	if (b < DSTC_HIST_EXACT)
		return b;
	e = (b - DSTC_HIST_EXACT) / 16 + 5;
	sub = (b - DSTC_HIST_EXACT) % 16;
	return (u64)(16 + sub) << (e - 4);
}

u64 dstc_hist_quantile(const u32 *hist, unsigned int n, unsigned int q)
{
	u64 total = 0, want, seen = 0;
	unsigned int b;

	for (b = 0; b < n; b++)
		total += hist[b];
	if (!total)
		return 0;
	want = (total * q + 999) / 1000;
	for (b = 0; b < n; b++) {
		seen += hist[b];
		if (seen >= want)
			break;
	}
	if (b >= n)
		b = n - 1;
	/* the middle of the bucket */
	return b < DSTC_HIST_EXACT ? b :
	       (dstc_hist_value(b) + dstc_hist_value(b + 1)) / 2;
}

void dstc_stats_add(struct dstc_stats *sum, const struct dstc_stats *s)
{
	unsigned int i, t;

	for (i = 0; i < DSTC_S_NR; i++)
		sum->v[i] += s->v[i];
	for (t = 0; t < 3; t++)
		for (i = 0; i < DSTC_HIST_BUCKETS; i++)
			sum->hist[t][i] += s->hist[t][i];
	for (i = 0; i < DSTC_HIST_BUCKETS; i++)
		sum->mig_hist[i] += s->mig_hist[i];
}

/* ---- directory -------------------------------------------------------- */

static inline u64 dstc_atomic_add(u64 *p, u64 v)
{
	u64 old, cur = dsmem_read_once(*p);

	do {
		old = cur;
		cur = dsmem_cmpxchg64(p, old, old + v);
	} while (cur != old);
	return old + v;
}

bool dstc_chunk_present(struct dstc_cache *c, u32 eid)
{
	return eid < c->nentries && c->chunks[eid >> DSTC_CHUNK_SHIFT];
}

int dstc_chunk_install_locked(struct dstc_cache *c, u32 eid, void *mem)
{
	struct dstc_entry *chunk = mem;
	unsigned int i;

	if (eid >= c->nentries)
		return -EINVAL;
	if (c->chunks[eid >> DSTC_CHUNK_SHIFT])
		return 1;
	for (i = 0; i < (1U << DSTC_CHUNK_SHIFT); i++) {
		chunk[i].lru_prev = DSTC_NONE;
		chunk[i].lru_next = DSTC_NONE;
	}
	dsmem_store_release(&c->chunks[eid >> DSTC_CHUNK_SHIFT], chunk);
	return 0;
}

/*
 * The L1 slot of an offset read without the lock: a migration may have
 * made it another tier's offset meanwhile, which the version check after
 * the read discards -- until then it only has to stay in bounds.
 */
static struct dstc_l1 *dstc_l1_racy(struct dstc_cache *c, u32 off)
{
	return &c->l1[off < c->l1_slots ? off : 0];
}

struct dstc_entry *dstc_entry(struct dstc_cache *c, u32 eid)
{
	struct dstc_entry *chunk;

	if (eid >= c->nentries)
		return NULL;
	chunk = dsmem_load_acquire(&c->chunks[eid >> DSTC_CHUNK_SHIFT]);
	return chunk ? &chunk[eid & ((1U << DSTC_CHUNK_SHIFT) - 1)] : NULL;
}

/*
 * What adaptive mode starts from, and fixed mode keeps: adaptive mode
 * starts with every miss queued for L1 (the window takes it, the duel
 * decides) and the set window; its window holds 1% of L1, as
 * W-TinyLFU's starts.
 */
static void dstc_eff_reset(struct dstc_cache *c, const u64 *p)
{
	bool adaptive = p[DSTC_P_MODE] == DSMEM_CACHE_ADAPTIVE;
	u32 cap = (u32)p[DSTC_P_L1_CAPACITY];

	dsmem_write_once(c->eff_promote_l1, adaptive ? 1 : (u32)p[DSTC_P_PROMOTE_L1]);
	dsmem_write_once(c->eff_promote_l2, adaptive ? 1 : (u32)p[DSTC_P_PROMOTE_L2]);
	dsmem_write_once(c->eff_window, p[DSTC_P_WINDOW_NS]);
	c->eff_prefetch = (u32)p[DSTC_P_PREFETCH];
	c->prefetch_idle = 0;
	c->w_target = cap / 100 ? cap / 100 : 1;
	c->climb_step = cap / 16 ? (s32)(cap / 16) : 1;
	c->climb_prev = DSTC_NONE;
	c->climb_ns = 0;
	c->last_idle_scan = 0;
}

int dstc_cache_init_l1(struct dstc_cache *c, const struct dstc_ops *ops,
		       void *priv, u32 nentries, const u64 *params, u32 l1_slots)
{
	unsigned int bad;
	const char *why;
	u32 i;

	memset(c, 0, sizeof(*c));
	if (!nentries || nentries > DSTC_ENTRIES_MAX || !l1_slots ||
	    l1_slots > DSTC_ENTRIES_MAX ||
	    dstc_params_check_l1(params, l1_slots, &bad, &why))
		return -EINVAL;
	c->l1_slots = l1_slots;
	c->ops = ops;
	c->priv = priv;
	memcpy(c->p, params, sizeof(c->p));
	dstc_eff_reset(c, params);
	c->nentries = nentries;
	c->npages = (nentries + DSTC_BUCKET_SLOTS - 1) >> DSTC_BUCKET_SHIFT;
	c->qcap = (u32)dstc_params[DSTC_P_QUEUE_MAX].max;
	c->chunks = ops->chunk_alloc(c, sizeof(*c->chunks) *
				     ((nentries >> DSTC_CHUNK_SHIFT) + 1));
	c->pages = ops->chunk_alloc(c, sizeof(*c->pages) * c->npages);
	c->l1 = ops->chunk_alloc(c, sizeof(*c->l1) * l1_slots);
	c->l1_free = ops->chunk_alloc(c, sizeof(u32) * l1_slots);
	c->q[0].ring = ops->chunk_alloc(c, sizeof(u32) * c->qcap);
	c->q[1].ring = ops->chunk_alloc(c, sizeof(u32) * c->qcap);
	c->scratch = ops->chunk_alloc(c, sizeof(u32) *
				      dstc_params[DSTC_P_BATCH_MAX].max);
	if (!c->chunks || !c->pages || !c->l1 || !c->l1_free || !c->q[0].ring ||
	    !c->q[1].ring || !c->scratch)
		return -ENOMEM;	/* the caller's destroy frees what came */
	for (i = 0; i < l1_slots; i++) {
		c->l1[i].eid = DSTC_NONE;
		c->l1[i].upd = DSTC_UPD_CLOSED;
		c->l1[i].w_prev = DSTC_NONE;
		c->l1[i].w_next = DSTC_NONE;
		/* lowest slots first: scans stay short */
		c->l1_free[i] = l1_slots - 1 - i;
	}
	c->l1_nfree = l1_slots;
	c->lru_head = DSTC_NONE;
	c->lru_tail = DSTC_NONE;
	c->w_head = DSTC_NONE;
	c->w_tail = DSTC_NONE;
	return 0;
}

int dstc_cache_init(struct dstc_cache *c, const struct dstc_ops *ops,
		    void *priv, u32 nentries, const u64 *params)
{
	return dstc_cache_init_l1(c, ops, priv, nentries, params, DSTC_L1_MAX);
}

void dstc_cache_destroy(struct dstc_cache *c,
			void (*free_chunk)(struct dstc_cache *c, void *p))
{
	u32 i;

	if (c->pages)
		for (i = 0; i < c->npages; i++)
			if (c->pages[i])
				c->ops->page_free(c, c->pages[i]);
	if (c->chunks)
		for (i = 0; i <= (c->nentries >> DSTC_CHUNK_SHIFT); i++)
			free_chunk(c, c->chunks[i]);
	free_chunk(c, c->chunks);
	free_chunk(c, c->pages);
	free_chunk(c, c->l1);
	free_chunk(c, c->l1_free);
	free_chunk(c, c->q[0].ring);
	free_chunk(c, c->q[1].ring);
	free_chunk(c, c->scratch);
	memset(c, 0, sizeof(*c));
}

/* ---- L2 LRU (under the lock) ------------------------------------------ */

static void dstc_lru_unlink(struct dstc_cache *c, u32 eid, struct dstc_entry *e)
{
	if (e->lru_prev != DSTC_NONE)
		dstc_entry(c, e->lru_prev)->lru_next = e->lru_next;
	else if (c->lru_head == eid)
		c->lru_head = e->lru_next;
	if (e->lru_next != DSTC_NONE)
		dstc_entry(c, e->lru_next)->lru_prev = e->lru_prev;
	else if (c->lru_tail == eid)
		c->lru_tail = e->lru_prev;
	e->lru_prev = DSTC_NONE;
	e->lru_next = DSTC_NONE;
}

static void dstc_lru_push(struct dstc_cache *c, u32 eid, struct dstc_entry *e)
{
	e->lru_prev = DSTC_NONE;
	e->lru_next = c->lru_head;
	if (c->lru_head != DSTC_NONE)
		dstc_entry(c, c->lru_head)->lru_prev = eid;
	c->lru_head = eid;
	if (c->lru_tail == DSTC_NONE)
		c->lru_tail = eid;
}

/* ---- adaptive mode's L1 window (under the lock) ------------------------ */

static bool dstc_in_window(const struct dstc_cache *c, u32 slot)
{
	return c->w_head == slot || c->l1[slot].w_prev != DSTC_NONE;
}

static void dstc_win_push(struct dstc_cache *c, u32 slot)
{
	struct dstc_l1 *s = &c->l1[slot];

	s->w_prev = c->w_tail;
	s->w_next = DSTC_NONE;
	if (c->w_tail != DSTC_NONE)
		c->l1[c->w_tail].w_next = slot;
	else
		c->w_head = slot;
	c->w_tail = slot;
	c->w_used++;
}

static void dstc_win_unlink(struct dstc_cache *c, u32 slot)
{
	struct dstc_l1 *s = &c->l1[slot];

	if (s->w_prev != DSTC_NONE)
		c->l1[s->w_prev].w_next = s->w_next;
	else
		c->w_head = s->w_next;
	if (s->w_next != DSTC_NONE)
		c->l1[s->w_next].w_prev = s->w_prev;
	else
		c->w_tail = s->w_prev;
	s->w_prev = DSTC_NONE;
	s->w_next = DSTC_NONE;
	c->w_used--;
}

/* Leaving adaptive mode: the window's entries become plain L1 ones. */
static void dstc_win_clear(struct dstc_cache *c)
{
	while (c->w_head != DSTC_NONE)
		dstc_win_unlink(c, c->w_head);
}

/* ---- migration (under the lock) --------------------------------------- */

static int dstc_migrate(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			u8 to, u64 now);

/*
 * The k L1 entries LFU would evict, least frequent first, the least
 * recently used first among equals; pinned entries and skip excluded.
 */
static bool dstc_l1_worse(const struct dstc_l1 *a, const struct dstc_l1 *b)
{
	/* a is a better victim than b */
	return a->freq < b->freq ||
	       (a->freq == b->freq && a->last_ns < b->last_ns);
}

static bool dstc_pinned(struct dstc_cache *c, u32 eid)
{
	return DSTC_CTL_FLAGS(dstc_entry(c, eid)->ctl) & DSMEM_TOKEN_PINNED;
}

static u32 dstc_l1_victims(struct dstc_cache *c, u32 k, u32 skip, u32 *out)
{
	u32 n = 0, i, j;

	for (i = 0; i < c->l1_hw && k; i++) {
		struct dstc_l1 *s = &c->l1[i];

		if (s->eid == DSTC_NONE || s->eid == skip || dstc_pinned(c, s->eid))
			continue;
		/* keep out[] sorted, best victim first; insertion into k */
		if (n == k && !dstc_l1_worse(s, &c->l1[out[n - 1]]))
			continue;
		j = n < k ? n++ : n - 1;
		while (j && dstc_l1_worse(s, &c->l1[out[j - 1]])) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = i;
	}
	return n;
}

static u64 dstc_l1_close(struct dstc_l1 *s)
{
	u64 old, cur = dsmem_read_once(s->upd);

	do {
		old = cur;
		cur = dsmem_cmpxchg64(&s->upd, old, old | DSTC_UPD_CLOSED);
	} while (cur != old);
	return old & DSTC_UPD_DELTA_MASK;
}

/* An L1 entry out to L2, or to L3 if L2 cannot take it. */
static int dstc_l1_evict(struct dstc_cache *c, struct dstc_stats *st, u32 slot,
			 u64 now)
{
	u32 eid = c->l1[slot].eid;

	st->v[DSTC_S_EVICT_L1]++;
	if (!dstc_migrate(c, st, eid, DSMEM_TIER_L2, now))
		return 0;
	return dstc_migrate(c, st, eid, DSMEM_TIER_L3, now);
}

/*
 * What a duel compares: the hits of the recent windows, counted to
 * DSTC_FREQ_MAX as Caffeine's 4-bit counters do, so that an entry hot
 * long ago cannot keep a newer one out forever.
 */
static u32 dstc_freq(const struct dstc_cache *c, const struct dstc_entry *e,
		     u64 now)
{
	u32 hits = dstc_window_hits(c, e, now);

	return hits > DSTC_FREQ_MAX ? DSTC_FREQ_MAX : hits;
}

/*
 * Adaptive mode's main victim: the least asked-for of a sample of main's
 * slots, the least recently used among equals.  A rotating hand picks
 * the sample, as Redis's LFU does, so an eviction usually costs
 * DSTC_L1_SAMPLE slots, not a scan of the table (it walks further only
 * when main has fewer unpinned entries than that).
 */
static u32 dstc_main_victim(struct dstc_cache *c, u32 skip, u64 now)
{
	u32 best = DSTC_NONE, best_hits = 0, seen = 0, n, i, hits;
	u64 best_ns = 0, last;

	for (n = 0; n < c->l1_hw && seen < DSTC_L1_SAMPLE; n++) {
		struct dstc_l1 *s;

		if (c->l1_hand >= c->l1_hw)
			c->l1_hand = 0;
		i = c->l1_hand++;
		s = &c->l1[i];
		if (s->eid == DSTC_NONE || s->eid == skip ||
		    dstc_in_window(c, i) || dstc_pinned(c, s->eid))
			continue;
		seen++;
		hits = dstc_freq(c, dstc_entry(c, s->eid), now);
		/* lookups write last_ns without the lock */
		last = dsmem_read_once(s->last_ns);
		if (best == DSTC_NONE || hits < best_hits ||
		    (hits == best_hits && last < best_ns)) {
			best = i;
			best_hits = hits;
			best_ns = last;
		}
	}
	return best;
}

/*
 * Adaptive mode's room for an entrant, which joins the window.  Past the
 * window's size its oldest entry leaves it, for main if L1 has room;
 * else it duels main's victim, TinyLFU's admission: it stays only if it
 * was asked for more in the recent windows.  The loser goes to L2, where
 * a second chance is cheap.  The directory counts every entry, so no
 * sketch is needed to know.
 */
static int dstc_l1_room_adaptive(struct dstc_cache *c, struct dstc_stats *st,
				 u32 skip, u64 now)
{
	u32 cap = (u32)c->p[DSTC_P_L1_CAPACITY], cand, victim;

	/* a window the climber shrank passes its surplus to main */
	while (c->w_used > c->w_target)
		dstc_win_unlink(c, c->w_head);
	if (c->w_used && c->w_used == c->w_target) {
		cand = c->w_head;
		dstc_win_unlink(c, cand);
		if (c->l1_used < cap)
			return 0;
		if (!dstc_pinned(c, c->l1[cand].eid)) {
			victim = dstc_main_victim(c, skip, now);
			if (victim == DSTC_NONE ||
			    dstc_freq(c, dstc_entry(c, c->l1[cand].eid), now) <=
			    dstc_freq(c, dstc_entry(c, c->l1[victim].eid), now))
				victim = cand;
			return dstc_l1_evict(c, st, victim, now);
		}
	}
	if (c->l1_used < cap)
		return 0;
	victim = dstc_main_victim(c, skip, now);
	for (cand = c->w_head; victim == DSTC_NONE && cand != DSTC_NONE;
	     cand = c->l1[cand].w_next)
		if (!dstc_pinned(c, c->l1[cand].eid))
			victim = cand;
	if (victim == DSTC_NONE)
		return -ENOSPC;
	return dstc_l1_evict(c, st, victim, now);
}

/* Room for one more in L1: fixed mode evicts the LFU victim. */
static int dstc_l1_room(struct dstc_cache *c, struct dstc_stats *st, u32 skip,
			u64 now)
{
	u32 v;

	if (c->p[DSTC_P_MODE] == DSMEM_CACHE_ADAPTIVE)
		return dstc_l1_room_adaptive(c, st, skip, now);
	if (c->l1_used < c->p[DSTC_P_L1_CAPACITY])
		return 0;
	if (!dstc_l1_victims(c, 1, skip, &v))
		return -ENOSPC;
	return dstc_l1_evict(c, st, v, now);
}

static int dstc_l2_room(struct dstc_cache *c, struct dstc_stats *st, u32 skip,
			u64 now)
{
	u32 v;

	if (c->l2_used < c->p[DSTC_P_L2_CAPACITY])
		return 0;
	v = c->lru_tail;
	if (v == skip)
		v = dstc_entry(c, v)->lru_prev;
	if (v == DSTC_NONE)
		return -ENOSPC;
	st->v[DSTC_S_EVICT_L2]++;
	return dstc_migrate(c, st, v, DSMEM_TIER_L3, now);
}

static void dstc_page_release(struct dstc_cache *c, u32 bucket)
{
	void *page = c->pages[bucket];

	if (page && !dstc_ph(page)->used_slots) {
		dsmem_write_once(c->pages[bucket], NULL);
		c->ops->page_free(c, page);
	}
}

/* Put a token in its bucket's page, compacting into a new page if full. */
static int dstc_l2_put(struct dstc_cache *c, u32 eid, const union dsmem_token *t)
{
	u32 bucket = eid >> DSTC_BUCKET_SHIFT;
	void *page = c->pages[bucket], *fresh;
	int ret;

	ret = dstc_page_put(page, eid & (DSTC_BUCKET_SLOTS - 1), t);
	if (ret != -ENOSPC)
		return ret;
	fresh = c->ops->page_alloc(c);
	if (!fresh)
		return -ENOMEM;
	dstc_page_compact(fresh, page);
	ret = dstc_page_put(fresh, eid & (DSTC_BUCKET_SLOTS - 1), t);
	dsmem_store_release(&c->pages[bucket], fresh);
	c->ops->page_free(c, page);
	return ret;
}

static int dstc_migrate(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			u8 to, u64 now)
{
	struct dstc_entry *e = dstc_entry(c, eid);
	u32 bucket = eid >> DSTC_BUCKET_SHIFT, slot = 0, bytes;
	bool prefetch = c->mig_prefetch;
	u64 wait = c->mig_wait, ctl, delta, lat;
	union dsmem_token tok;
	u8 from;
	int ret = 0;

	/* what the caller said is this move's, not the room it makes */
	c->mig_wait = 0;
	c->mig_prefetch = false;
	ctl = e->ctl;
	from = DSTC_CTL_LAYER(ctl);
	if (!from)
		return -ENOENT;
	if (from == to)
		return 0;
	if (DSTC_CTL_FLAGS(ctl) & DSMEM_TOKEN_PINNED)
		return -EBUSY;

	/* make room first: that may move other entries */
	if (to == DSMEM_TIER_L1) {
		ret = dstc_l1_room(c, st, eid, now);
		if (ret)
			goto fail;
	} else if (to == DSMEM_TIER_L2) {
		ret = dstc_l2_room(c, st, eid, now);
		if (ret)
			goto fail;
		if (!c->pages[bucket]) {
			void *page = c->ops->page_alloc(c);

			if (!page) {
				ret = -ENOMEM;
				goto fail;
			}
			dstc_page_init(page, bucket);
			dsmem_store_release(&c->pages[bucket], page);
		}
	}
	/*
	 * Making room may have moved this very entry: promoted from L2 into
	 * a full L1, the L1 victim's demotion can evict it from a full L2.
	 */
	ctl = e->ctl;
	from = DSTC_CTL_LAYER(ctl);

	/*
	 * Readers that see this retry until the new word is published, or,
	 * optimistic, read the old copy: move_ver tells them it is a move
	 * (the token stays as it is), not a rewrite, and which publish
	 * ends it.  The cmpxchg orders it before the flag.
	 */
	dsmem_write_once(e->move_ver, DSTC_CTL_VER(ctl) + 1);
	dsmem_cmpxchg64(&e->ctl, ctl,
			ctl | ((u64)DSMEM_TOKEN_MIGRATING << 8));
	dsmem_wmb();

	/* modelled DMA of a promotion: the token as its source stores it */
	bytes = from == DSMEM_TIER_L2 ?
		dstc_page_slot_bytes(c->pages[bucket], eid & (DSTC_BUCKET_SLOTS - 1)) :
		dstc_token_size(e->token.hdr.type);

	switch (from) {
	case DSMEM_TIER_L1: {
		struct dstc_l1 *s = &c->l1[e->token_offset];

		delta = dstc_l1_close(s);
		if (delta) {
			dstc_atomic_add(&e->relaxed, delta);
			st->v[DSTC_S_WRITEBACKS]++;
		}
		tok = s->token;
		if (dstc_in_window(c, e->token_offset))
			dstc_win_unlink(c, e->token_offset);
		dsmem_write_once(s->eid, DSTC_NONE);
		c->l1_free[c->l1_nfree++] = e->token_offset;
		c->l1_used--;
		break;
	}
	case DSMEM_TIER_L2:
		tok = e->token;
		dstc_page_del(c->pages[bucket], eid & (DSTC_BUCKET_SLOTS - 1));
		dstc_lru_unlink(c, eid, e);
		e->prefetched = 0;
		c->l2_used--;
		dstc_page_release(c, bucket);
		break;
	default:
		tok = e->token;
		break;
	}

	switch (to) {
	case DSMEM_TIER_L1: {
		struct dstc_l1 *s;

		slot = c->l1_free[--c->l1_nfree];
		if (slot >= c->l1_hw)
			c->l1_hw = slot + 1;
		s = &c->l1[slot];
		/*
		 * Tag the slot before the token changes: an optimistic reader
		 * of the entry that left it checks the tag around its copy.
		 */
		dsmem_write_once(s->upd, DSTC_UPD_CLOSED | DSTC_UPD_TAG(eid));
		dsmem_wmb();
		s->token = tok;
		dsmem_write_once(s->eid, eid);
		s->freq = dstc_window_hits(c, e, now);
		s->last_ns = now;
		dsmem_store_release(&s->upd, DSTC_UPD_TAG(eid));
		c->l1_used++;
		if (c->p[DSTC_P_MODE] == DSMEM_CACHE_ADAPTIVE)
			dstc_win_push(c, slot);
		break;
	}
	case DSMEM_TIER_L2:
		/*
		 * A page holds a whole bucket's worst case, so only a page
		 * for compaction can be missing; then the token stays in
		 * L3, where it always is anyway.
		 */
		if (dstc_l2_put(c, eid, &tok)) {
			dstc_page_release(c, bucket);
			to = DSMEM_TIER_L3;
			slot = eid;
			ret = -ENOMEM;
			break;
		}
		dstc_lru_push(c, eid, e);
		c->l2_used++;
		slot = eid;
		break;
	default:
		slot = eid;
		break;
	}
	/* idle time in a faster tier counts from the arrival there */
	if (to < from && dsmem_read_once(e->last_ns) < now)
		dsmem_write_once(e->last_ns, now);
	dsmem_write_once(e->token_offset, slot);
	dsmem_store_release(&e->ctl, DSTC_CTL(DSTC_CTL_VER(ctl) + 1,
					      DSTC_CTL_GEN(ctl),
					      DSTC_CTL_FLAGS(ctl), to));
	dsmem_write_once(e->move_ver, 0);
	st->v[DSTC_S_MIGRATIONS]++;
	c->migrated++;
	/* latency: its wait in a queue, then the copy at the slower tier's cost */
	lat = wait + c->p[DSTC_P_COST_L1_NS + (from > to ? from : to) - 1];
	st->v[DSTC_S_MIGRATE_NS] += lat;
	st->mig_hist[dstc_hist_bucket(lat)]++;
	if (to < from)
		st->v[prefetch ? DSTC_S_DMA_PREFETCH_BYTES : DSTC_S_DMA_BYTES] +=
			(bytes + DSTC_DMA_LINE - 1) / DSTC_DMA_LINE * DSTC_DMA_LINE;
	if (c->move_hook)
		c->move_hook(c, eid, from, to);
	if (to < from)
		st->v[to == DSMEM_TIER_L1 ? DSTC_S_PROMOTE_L1 : DSTC_S_PROMOTE_L2]++;
	if (ret)	/* it went to L3 instead */
		goto fail;
	return 0;

fail:
	st->v[DSTC_S_MIGRATE_FAILED]++;
	return ret;
}

int dstc_migrate_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			u8 tier, u64 now)
{
	if (!dstc_entry(c, eid) || tier < DSMEM_TIER_L1 || tier > DSMEM_TIER_L3)
		return -EINVAL;
	return dstc_migrate(c, st, eid, tier, now);
}

/* ---- entries ---------------------------------------------------------- */

int dstc_insert_locked(struct dstc_cache *c, u32 eid, u32 node,
		       const union dsmem_token *t, u16 *gen)
{
	struct dstc_entry *e;
	u64 ctl;
	u16 g;

	if (eid >= c->nentries)
		return -EINVAL;
	if (!dstc_chunk_present(c, eid)) {
		void *mem = c->ops->chunk_alloc(c, DSTC_CHUNK_BYTES);

		if (!mem)
			return -ENOMEM;
		dstc_chunk_install_locked(c, eid, mem);
	}
	e = dstc_entry(c, eid);
	ctl = e->ctl;
	if (DSTC_CTL_LAYER(ctl))
		return -EEXIST;
	g = (DSTC_CTL_GEN(ctl) + 1) & DSMEM_HANDLE_GEN_MASK;
	if (!g)
		g = 1;
	e->token = *t;
	e->token_offset = eid;
	e->node = node;
	e->queued = DSTC_Q_NONE;
	/* a ring slot of the last incarnation may remain: make it a no-op */
	e->target = DSMEM_TIER_L3;
	e->relaxed = 0;
	e->prefetched = 0;
	e->win_hits = 0;
	e->win_prev = 0;
	e->win_start = 0;
	e->last_ns = 0;
	c->nlive++;
	dsmem_store_release(&e->ctl, DSTC_CTL(DSTC_CTL_VER(ctl) + 1, g, 0,
					      DSMEM_TIER_L3));
	*gen = g;
	return 0;
}

static struct dstc_entry *dstc_live(struct dstc_cache *c, u32 eid, u16 gen,
				    int *err)
{
	struct dstc_entry *e = dstc_entry(c, eid);

	*err = e ? dstc_ctl_check(e->ctl, gen) : -ENOENT;
	return *err ? NULL : e;
}

int dstc_remove_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		       u16 gen)
{
	struct dstc_entry *e;
	u64 ctl;
	int err;

	e = dstc_live(c, eid, gen, &err);
	if (!e)
		return err;
	ctl = e->ctl;
	if (DSTC_CTL_FLAGS(ctl) & DSMEM_TOKEN_PINNED) {
		c->l1_pinned--;
		e->ctl = ctl & ~((u64)DSMEM_TOKEN_PINNED << 8);
	}
	/* out of L1 and L2 the usual way */
	dstc_migrate(c, st, eid, DSMEM_TIER_L3, 0);
	ctl = e->ctl;
	c->nlive--;
	dsmem_store_release(&e->ctl, DSTC_CTL(DSTC_CTL_VER(ctl) + 1,
					      DSTC_CTL_GEN(ctl), 0, 0));
	return 0;
}

/* ---- the access path (lock-free) --------------------------------------- */

u32 dstc_window_hits(const struct dstc_cache *c, const struct dstc_entry *e,
		     u64 now)
{
	u64 w = dsmem_read_once(c->eff_window);
	u64 start = dsmem_read_once(e->win_start);
	u64 hits = dsmem_read_once(e->win_hits);
	u64 prev = dsmem_read_once(e->win_prev);
	u64 el = now > start ? now - start : 0;

	if (el >= 2 * w)
		return 0;
	if (el >= w)	/* the current window has become the previous one */
		return (u32)(hits * (2 * w - el) / w);
	return (u32)(hits + prev * (w - el) / w);
}

static void dstc_count_hit(struct dstc_cache *c, struct dstc_entry *e, u64 now,
			   u32 weight)
{
	u64 w = dsmem_read_once(c->eff_window);
	u64 start = dsmem_read_once(e->win_start);

	/* approximate under races, as hardware counters are */
	if (now >= start + w) {
		dsmem_write_once(e->win_prev,
				 now < start + 2 * w ?
				 dsmem_read_once(e->win_hits) : 0);
		dsmem_write_once(e->win_hits, 0);
		dsmem_write_once(e->win_start, now);
	}
	dsmem_write_once(e->win_hits, dsmem_read_once(e->win_hits) + weight);
	dsmem_write_once(e->last_ns, now);
}

/*
 * sample = N > 1: one access in N (this stats block's, so this CPU's) is
 * counted, as N; 0 for the others.  Thresholds keep their meaning in
 * expectation, and an access not counted writes nothing of the entry.
 */
static u32 dstc_sample_weight(struct dstc_cache *c, struct dstc_stats *st)
{
	u32 n = (u32)dsmem_read_once(c->p[DSTC_P_SAMPLE]);
	/*
	 * One load and one store: a completion in softirq on this CPU may
	 * run between them, and a separate decrement could then wrap the
	 * countdown.  Left over from a larger N, it is cut to the new one.
	 */
	u32 left = dsmem_read_once(st->sample_left);

	if (n <= 1)
		return 1;
	if (left && left < n) {
		dsmem_write_once(st->sample_left, left - 1);
		return 0;
	}
	dsmem_write_once(st->sample_left, n - 1);
	return n;
}

/*
 * Optimistic mode's old copy of an entry being moved (see dstc_access):
 * the L1 slot it leaves if the slot's tag is still its own around the
 * read (a move into the slot retags it first), else the home copy in L3,
 * which a move never writes.  Returns the tier read.
 */
static u8 dstc_read_old(struct dstc_cache *c, struct dstc_entry *e, u32 eid,
			u8 tier, u32 off, union dsmem_token *t)
{
	const u64 tag_mask = ~(DSTC_UPD_DELTA_MASK | DSTC_UPD_CLOSED);

	if (tier == DSMEM_TIER_L1) {
		struct dstc_l1 *s = dstc_l1_racy(c, off);
		u64 u1 = dsmem_load_acquire(&s->upd);

		/*
		 * The offset may already be the move's new one; a slot the
		 * entry left long ago keeps its tag and an old token, but
		 * not its eid, which leaving cleared.
		 */
		if ((u1 & tag_mask) == DSTC_UPD_TAG(eid) &&
		    dsmem_read_once(s->eid) == eid) {
			*t = s->token;
			dsmem_rmb();
			if ((dsmem_read_once(s->upd) & tag_mask) == DSTC_UPD_TAG(eid))
				return DSMEM_TIER_L1;
		}
	}
	*t = e->token;
	return DSMEM_TIER_L3;
}

/* Queue a promotion; true if a batch should run now. */
static bool dstc_enqueue(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			 struct dstc_entry *e, u8 target, bool urgent, u64 now)
{
	struct dstc_queue *q = &c->q[urgent ? 0 : 1];
	bool kick = false;

	c->ops->lock(c);
	if (e->queued || !DSTC_CTL_LAYER(e->ctl) ||
	    DSTC_CTL_LAYER(e->ctl) <= target)
		goto out;
	if (c->q[0].len + c->q[1].len >= c->p[DSTC_P_QUEUE_MAX]) {
		st->v[DSTC_S_BACKPRESSURE]++;
		goto out;
	}
	q->ring[(q->head + q->len) % c->qcap] = eid;
	q->len++;
	e->queued = urgent ? DSTC_Q_URGENT : DSTC_Q_BACKGROUND;
	e->target = target;
	e->queued_ns = now;
	st->v[DSTC_S_QUEUED]++;
	kick = urgent || c->q[0].len + c->q[1].len >= c->p[DSTC_P_BATCH_THRESHOLD];
out:
	c->ops->unlock(c);
	return kick;
}

static void dstc_lru_touch(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			   struct dstc_entry *e)
{
	c->ops->lock(c);
	if (DSTC_CTL_LAYER(e->ctl) == DSMEM_TIER_L2) {
		if (e->prefetched) {
			e->prefetched = 0;
			st->v[DSTC_S_PREFETCH_HITS]++;
		}
		if (c->lru_head != eid) {
			dstc_lru_unlink(c, eid, e);
			dstc_lru_push(c, eid, e);
		}
	}
	c->ops->unlock(c);
}

/* An L1 update: bounded CAS, false if the slot is closed or moved on. */
static int dstc_l1_update(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			  struct dstc_l1 *s, u64 delta, u32 *retries)
{
	u64 old, tag = DSTC_UPD_TAG(eid);
	u32 i;

	for (i = 0; i < c->p[DSTC_P_CAS_RETRIES]; i++) {
		old = dsmem_read_once(s->upd);
		if (old & DSTC_UPD_CLOSED ||
		    (old & ~DSTC_UPD_DELTA_MASK) != tag)
			return -EAGAIN;	/* migrating: look again */
		if (c->apply_hook)
			c->apply_hook(c, eid);
		if (dsmem_cmpxchg64(&s->upd, old,
				    tag | ((old + delta) & DSTC_UPD_DELTA_MASK)) == old)
			return 0;
		st->v[DSTC_S_CAS_RETRIES]++;
		(*retries)++;
		dsmem_cpu_relax();
	}
	return -EBUSY;
}

int dstc_access(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		u16 gen, u64 delta, u64 now, struct dstc_result *res)
{
	struct dstc_entry *e = dstc_entry(c, eid);
	u32 spins = 0, off, cost, weight;
	bool applied = !delta, locked = false;
	struct dstc_l1 *slot1 = NULL;
	u64 c1, c2;
	u8 tier;
	int ret;

	memset(res, 0, sizeof(*res));
	if (!e)
		return -ENOENT;
	for (;;) {
		/* a slot seen on an earlier pass may be another entry's now */
		slot1 = NULL;
		c1 = dsmem_load_acquire(&e->ctl);
		tier = DSTC_CTL_LAYER(c1);
		ret = dstc_ctl_check(c1, gen);
		if (ret)
			goto out_unlock;
		if ((DSTC_CTL_FLAGS(c1) & DSMEM_TOKEN_MIGRATING) && !locked &&
		    dsmem_read_once(c->p[DSTC_P_OPTIMISTIC])) {
			u32 mv = dsmem_read_once(e->move_ver);

			/* a move (not a rewrite) that publishes version mv */
			if (mv && mv == DSTC_CTL_VER(c1) + 1) {
				off = dsmem_read_once(e->token_offset);
				dsmem_rmb();
				tier = dstc_read_old(c, e, eid, tier, off, &res->token);
				if (!applied) {
					/* home of the relaxed fields wherever it lands */
					dstc_atomic_add(&e->relaxed, delta);
					applied = true;
				}
				if (c->apply_hook)
					c->apply_hook(c, eid);
				dsmem_rmb();
				c2 = dsmem_read_once(e->ctl);
				if (c2 == c1) {
					st->v[DSTC_S_OPTIMISTIC_READS]++;
					c1 &= ~((u64)DSMEM_TOKEN_MIGRATING << 8);
					break;
				}
				/* reconcile: the move published, and nothing since */
				if (DSTC_CTL_VER(c2) == mv &&
				    DSTC_CTL_GEN(c2) == DSTC_CTL_GEN(c1) &&
				    DSTC_CTL_FLAGS(c2) ==
				    (DSTC_CTL_FLAGS(c1) & ~DSMEM_TOKEN_MIGRATING)) {
					st->v[DSTC_S_OPTIMISTIC_READS]++;
					st->v[DSTC_S_OPTIMISTIC_RECONCILES]++;
					c1 = c2;
					break;
				}
				tier = DSTC_CTL_LAYER(c1);
			}
		}
		if (DSTC_CTL_FLAGS(c1) & DSMEM_TOKEN_MIGRATING) {
			/* a migration holds the lock: wait behind it */
			if (++spins > c->p[DSTC_P_CAS_RETRIES] && !locked) {
				c->ops->lock(c);
				locked = true;
			}
			res->retries++;
			st->v[DSTC_S_READ_RETRIES]++;
			dsmem_cpu_relax();
			continue;
		}
		slot1 = NULL;
		off = dsmem_read_once(e->token_offset);
		if (tier == DSMEM_TIER_L1) {
			struct dstc_l1 *s = dstc_l1_racy(c, off);

			res->token = s->token;
			if (!applied) {
				ret = dstc_l1_update(c, st, eid, s, delta,
						     &res->retries);
				if (ret == -EBUSY) {
					/* contended: the slow path */
					dstc_atomic_add(&e->relaxed, delta);
					st->v[DSTC_S_CAS_FALLBACKS]++;
					ret = 0;
				}
				if (!ret)
					applied = true;
			}
			slot1 = s;
		} else if (tier == DSMEM_TIER_L2) {
			void *page = dsmem_load_acquire(&c->pages[off >> DSTC_BUCKET_SHIFT]);

			if (!page || dstc_page_get(page, off & (DSTC_BUCKET_SLOTS - 1),
						   &res->token))
				memset(&res->token, 0, sizeof(res->token));
		} else {
			res->token = e->token;
		}
		if (!applied && tier != DSMEM_TIER_L1) {
			dstc_atomic_add(&e->relaxed, delta);
			applied = true;
		}
		dsmem_rmb();
		c2 = dsmem_read_once(e->ctl);
		if (c1 == c2 && applied)
			break;
		res->retries++;
		st->v[DSTC_S_READ_RETRIES]++;
	}
	if (locked) {
		c->ops->unlock(c);
		locked = false;
	}

	res->tier = tier;
	res->flags = DSTC_CTL_FLAGS(c1);
	weight = dstc_sample_weight(c, st);
	if (weight) {
		dstc_count_hit(c, e, now, weight);
		if (slot1) {
			dsmem_write_once(slot1->freq, dsmem_read_once(slot1->freq) + weight);
			dsmem_write_once(slot1->last_ns, now);
		}
	}
	cost = (u32)c->p[DSTC_P_COST_L1_NS] * (1 + res->retries);
	if (tier >= DSMEM_TIER_L2)
		cost += (u32)c->p[DSTC_P_COST_L2_NS];
	if (tier == DSMEM_TIER_L3)
		cost += (u32)c->p[DSTC_P_COST_L3_NS];
	res->cost_ns = cost;
	st->v[DSTC_S_HITS_L1 + tier - 1]++;
	st->v[DSTC_S_COST_L1_NS + tier - 1] += cost;
	st->hist[tier - 1][dstc_hist_bucket(cost)]++;

	/* a prefetched entry's first hit counts, sampled or not */
	if (tier == DSMEM_TIER_L2 && (weight || dsmem_read_once(e->prefetched)))
		dstc_lru_touch(c, st, eid, e);
	if (weight && !(res->flags & DSMEM_TOKEN_PINNED) &&
	    tier != DSMEM_TIER_L1 && !dsmem_read_once(e->queued)) {
		u32 hits = dstc_window_hits(c, e, now);

		if (hits >= dsmem_read_once(c->eff_promote_l1))
			res->kick = dstc_enqueue(c, st, eid, e, DSMEM_TIER_L1,
						 tier == DSMEM_TIER_L3, now);
		else if (tier == DSMEM_TIER_L3 &&
			 hits >= dsmem_read_once(c->eff_promote_l2))
			res->kick = dstc_enqueue(c, st, eid, e, DSMEM_TIER_L2,
						 false, now);
	}
	return 0;

out_unlock:
	if (locked)
		c->ops->unlock(c);
	return ret;
}

u64 dstc_relaxed(struct dstc_cache *c, u32 eid)
{
	struct dstc_entry *e = dstc_entry(c, eid);
	u64 ctl, v;

	if (!e)
		return 0;
	do {
		ctl = dsmem_load_acquire(&e->ctl);
		v = dsmem_read_once(e->relaxed);
		dsmem_rmb();
		if (DSTC_CTL_LAYER(ctl) == DSMEM_TIER_L1) {
			u64 upd = dsmem_read_once(dstc_l1_racy(c, e->token_offset)->upd);

			if (!(upd & DSTC_UPD_CLOSED))
				v += upd & DSTC_UPD_DELTA_MASK;
		}
		dsmem_rmb();
	} while (ctl != dsmem_read_once(e->ctl) ||
		 (DSTC_CTL_FLAGS(ctl) & DSMEM_TOKEN_MIGRATING));
	return v;
}

int dstc_peek(struct dstc_cache *c, u32 eid, u64 *ctl, u32 *offset,
	      union dsmem_token *t)
{
	struct dstc_entry *e = dstc_entry(c, eid);
	u64 c1;

	if (!e)
		return -ENOENT;
	do {
		c1 = dsmem_load_acquire(&e->ctl);
		*offset = dsmem_read_once(e->token_offset);
		*t = e->token;
		dsmem_rmb();
	} while (c1 != dsmem_read_once(e->ctl));
	if (!DSTC_CTL_LAYER(c1))
		return -ENOENT;
	*ctl = c1;
	if (DSTC_CTL_LAYER(c1) == DSMEM_TIER_L1) {
		u64 upd = dsmem_read_once(dstc_l1_racy(c, *offset)->upd);

		if (!(upd & DSTC_UPD_CLOSED) && (upd & DSTC_UPD_DELTA_MASK))
			*ctl |= (u64)DSMEM_TOKEN_DIRTY << 8;
	}
	return 0;
}

/* ---- write-through, pinning, parameters (under the lock) --------------- */

/*
 * L2 could not take a rewritten token (no page to compact into): the
 * entry drops to L3, which already has it.
 */
static void dstc_l2_fallback(struct dstc_cache *c, u32 eid, struct dstc_entry *e)
{
	dstc_page_del(c->pages[eid >> DSTC_BUCKET_SHIFT],
		      eid & (DSTC_BUCKET_SLOTS - 1));
	dstc_lru_unlink(c, eid, e);
	e->prefetched = 0;
	c->l2_used--;
	dstc_page_release(c, eid >> DSTC_BUCKET_SHIFT);
	e->token_offset = eid;
	e->ctl = (e->ctl & ~0xffULL) | DSMEM_TIER_L3;
}

int dstc_update_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		       u16 gen, const union dsmem_token *t)
{
	struct dstc_entry *e;
	u64 ctl;
	int err;

	e = dstc_live(c, eid, gen, &err);
	if (!e)
		return err;
	if (t->hdr.type != e->token.hdr.type || t->hdr.index != e->token.hdr.index)
		return -EINVAL;
	ctl = e->ctl;
	dsmem_cmpxchg64(&e->ctl, ctl, ctl | ((u64)DSMEM_TOKEN_MIGRATING << 8));
	dsmem_wmb();
	e->token = *t;
	if (DSTC_CTL_LAYER(ctl) == DSMEM_TIER_L1)
		c->l1[e->token_offset].token = *t;
	else if (DSTC_CTL_LAYER(ctl) == DSMEM_TIER_L2 && dstc_l2_put(c, eid, t))
		dstc_l2_fallback(c, eid, e);
	dsmem_store_release(&e->ctl, DSTC_CTL(DSTC_CTL_VER(ctl) + 1,
					      DSTC_CTL_GEN(ctl),
					      DSTC_CTL_FLAGS(ctl),
					      DSTC_CTL_LAYER(e->ctl)));
	st->v[DSTC_S_WRITETHROUGHS]++;
	return 0;
}

int dstc_pin_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		    u16 gen, bool pin, u64 now)
{
	struct dstc_entry *e;
	u64 ctl, bit = (u64)DSMEM_TOKEN_PINNED << 8;
	int err;

	e = dstc_live(c, eid, gen, &err);
	if (!e)
		return err;
	ctl = e->ctl;
	if (!!(ctl & bit) == pin)
		return 0;
	if (pin) {
		if (c->l1_pinned >= c->p[DSTC_P_L1_CAPACITY])
			return -ENOSPC;
		err = dstc_migrate(c, st, eid, DSMEM_TIER_L1, now);
		if (err)
			return err;
		ctl = e->ctl;
		c->l1_pinned++;
	} else {
		c->l1_pinned--;
	}
	dsmem_store_release(&e->ctl, DSTC_CTL(DSTC_CTL_VER(ctl) + 1,
					      DSTC_CTL_GEN(ctl),
					      DSTC_CTL_FLAGS(ctl) ^ DSMEM_TOKEN_PINNED,
					      DSTC_CTL_LAYER(ctl)));
	return 0;
}

static void dstc_shrink(struct dstc_cache *c, struct dstc_stats *st, u64 now)
{
	u32 v;

	while (c->l1_used > c->p[DSTC_P_L1_CAPACITY] &&
	       dstc_l1_victims(c, 1, DSTC_NONE, &v)) {
		st->v[DSTC_S_EVICT_L1]++;
		if (dstc_migrate(c, st, c->l1[v].eid, DSMEM_TIER_L3, now))
			break;
	}
	while (c->l2_used > c->p[DSTC_P_L2_CAPACITY] && c->lru_tail != DSTC_NONE) {
		st->v[DSTC_S_EVICT_L2]++;
		if (dstc_migrate(c, st, c->lru_tail, DSMEM_TIER_L3, now))
			break;
	}
}

int dstc_set_params_locked(struct dstc_cache *c, struct dstc_stats *st,
			   const u64 *p, u64 now, const char **why)
{
	unsigned int bad;
	int ret = dstc_params_check_l1(p, c->l1_slots, &bad, why);

	if (ret)
		return ret;
	if (p[DSTC_P_L1_CAPACITY] < c->l1_pinned) {
		*why = "l1_capacity below the pinned entries";
		return -EBUSY;
	}
	memcpy(c->p, p, sizeof(c->p));
	/* any set parameter restarts adaptation: fixed mode's thresholds
	 * from the set ones, adaptive mode's from 1 and its window from 1%
	 */
	dstc_eff_reset(c, p);
	if (p[DSTC_P_MODE] != DSMEM_CACHE_ADAPTIVE)
		dstc_win_clear(c);
	dstc_shrink(c, st, now);
	return 0;
}

/* ---- batches and maintenance ------------------------------------------ */

#define DSTC_URGENT_BIT	0x80000000U

/*
 * By entry id, so a bucket's entries are adjacent; a shell sort, as a
 * batch is at most a few thousand ids.
 */
static void dstc_sort(u32 *a, u32 n)
{
	u32 gap, i, j, v;

	for (gap = n / 2; gap; gap /= 2)
		for (i = gap; i < n; i++) {
			v = a[i];
			for (j = i; j >= gap && (a[j - gap] & ~DSTC_URGENT_BIT) >
			     (v & ~DSTC_URGENT_BIT); j -= gap)
				a[j] = a[j - gap];
			a[j] = v;
		}
}

/* Neighbours of a newly promoted entry, in its bucket, follow it to L2. */
static void dstc_prefetch(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			  u64 now)
{
	u32 first = eid & ~(DSTC_BUCKET_SLOTS - 1), i, moved = 0;

	for (i = first; i < first + DSTC_BUCKET_SLOTS && i < c->nentries &&
	     moved < c->eff_prefetch; i++) {
		struct dstc_entry *n = dstc_entry(c, i);

		if (i == eid || !n || DSTC_CTL_LAYER(n->ctl) != DSMEM_TIER_L3 ||
		    n->queued || !dstc_window_hits(c, n, now))
			continue;
		if (c->l2_used >= c->p[DSTC_P_L2_CAPACITY])
			break;	/* prefetch never evicts */
		c->mig_prefetch = true;
		if (!dstc_migrate(c, st, i, DSMEM_TIER_L2, now)) {
			n->prefetched = 1;
			st->v[DSTC_S_PREFETCHED]++;
			moved++;
		}
	}
}

static void dstc_run_batch(struct dstc_cache *c, struct dstc_stats *st, u64 now)
{
	u32 budget = (u32)c->p[DSTC_P_MIGRATE_BUDGET];
	u32 n = 0, i, max = (u32)c->p[DSTC_P_BATCH_MAX];
	u32 last_bucket = DSTC_NONE;
	int qi;

	if (c->migrated >= budget)
		return;	/* migration bandwidth spent: entries wait */
	if (max > budget - c->migrated)
		max = budget - c->migrated;
	for (qi = 0; qi < 2; qi++) {
		struct dstc_queue *q = &c->q[qi];

		while (q->len && n < max) {
			u32 eid = q->ring[q->head];
			struct dstc_entry *e = dstc_entry(c, eid);

			q->head = (q->head + 1) % c->qcap;
			q->len--;
			e->queued = DSTC_Q_NONE;
			c->scratch[n++] = eid | (qi ? 0 : DSTC_URGENT_BIT);
		}
	}
	if (!n)
		return;
	st->v[DSTC_S_BATCHES]++;
	dstc_sort(c->scratch, n);
	for (i = 0; i < n; i++) {
		u32 eid = c->scratch[i] & ~DSTC_URGENT_BIT;
		bool urgent = c->scratch[i] & DSTC_URGENT_BIT;
		struct dstc_entry *e = dstc_entry(c, eid);
		u8 from = DSTC_CTL_LAYER(e->ctl);

		if (!from || from <= e->target ||
		    (DSTC_CTL_FLAGS(e->ctl) & DSMEM_TOKEN_PINNED))
			continue;
		c->mig_wait = now > e->queued_ns ? now - e->queued_ns : 0;
		if (dstc_migrate(c, st, eid, e->target, now))
			continue;
		if (from == DSMEM_TIER_L3) {
			st->v[urgent ? DSTC_S_EXPAND_URGENT :
			      DSTC_S_EXPAND_BACKGROUND]++;
			if ((eid >> DSTC_BUCKET_SHIFT) != last_bucket)
				dstc_prefetch(c, st, eid, now);
			last_bucket = eid >> DSTC_BUCKET_SHIFT;
		}
	}
}

/*
 * Caffeine's hill climber on the window's size: a step that raised the
 * L1 hit rate is taken again, one that lowered it is undone and the
 * other way tried; steps shrink by 2% a sample and start again at
 * 1/16 of L1 when the rate moves by 5 points.
 */
static void dstc_climb(struct dstc_cache *c, u32 rate)
{
	u32 cap = (u32)c->p[DSTC_P_L1_CAPACITY], prev = c->climb_prev;
	s32 base = cap / 16 ? (s32)(cap / 16) : 1, amount;
	s64 t;

	c->climb_prev = rate;
	if (prev == DSTC_NONE)
		return;
	amount = rate >= prev ? c->climb_step : -c->climb_step;
	t = (s64)c->w_target + amount;
	if (t > (s64)cap - 1)
		t = (s64)cap - 1;
	c->w_target = t < 1 ? 1 : (u32)t;
	if ((rate > prev ? rate - prev : prev - rate) >= DSTC_RATE_ONE / 20)
		c->climb_step = amount >= 0 ? base : -base;
	else if (amount * 49 / 50)
		c->climb_step = amount * 49 / 50;
	else
		c->climb_step = amount >= 0 ? 1 : -1;
}

/*
 * Prefetch spends migrations on a guess that a bucket's entries are
 * asked for together (a QP's MRs and CQs are).  Adaptive mode checks the
 * guess: fewer neighbours while under one in eight is asked for in L2,
 * more, up to the set number, while half are; off, it tries one again
 * every 16 intervals with enough lookups to judge.
 */
static void dstc_adapt_prefetch(struct dstc_cache *c, u64 moved, u64 hit)
{
	u32 pf = c->eff_prefetch, max = (u32)c->p[DSTC_P_PREFETCH];

	if (!pf) {
		if (++c->prefetch_idle >= 16 && max) {
			c->eff_prefetch = 1;
			c->prefetch_idle = 0;
		}
		return;
	}
	if (moved < 64)
		return;	/* too few to judge */
	if (hit * 8 < moved)
		c->eff_prefetch = pf / 2;
	else if (hit * 2 >= moved)
		c->eff_prefetch = pf * 2 > max ? max : pf * 2;
}

/*
 * Adaptive mode, once a sample of DSTC_CLIMB_L1S L1s of accesses (a
 * count, not a time, so short traces and slow hosts adapt alike):
 * - the window follows the rate: it spans DSTC_SAMPLE_L1S L1s of
 *   accesses, so an entry's counts reach back about 40 L1s, as the
 *   halvings of TinyLFU's sketch of 10 L1s do;
 * - the admission window's size climbs the L1 hit rate (dstc_climb).
 */
static void dstc_adapt_sample(struct dstc_cache *c, const struct dstc_stats *total,
			      u64 now)
{
	const u64 *t = total->v;
	u64 cap = c->p[DSTC_P_L1_CAPACITY], span = DSTC_SAMPLE_L1S * cap, w;
	u64 acc = t[DSTC_S_HITS_L1] + t[DSTC_S_HITS_L2] + t[DSTC_S_HITS_L3];
	u64 n = acc - c->climb_acc, l1 = t[DSTC_S_HITS_L1] - c->climb_l1;
	u64 dt = now - c->climb_ns;

	if (!c->climb_ns || acc < c->climb_acc ||
	    t[DSTC_S_HITS_L1] < c->climb_l1 || now < c->climb_ns) {
		/* the first, or the totals or the clock started again */
		c->climb_acc = acc;
		c->climb_l1 = t[DSTC_S_HITS_L1];
		c->climb_ns = now;
		return;
	}
	if (n < DSTC_CLIMB_L1S * cap)
		return;
	/* dt * span / n, without the product: a quiet day would overflow it */
	if (dt / n >= dstc_params[DSTC_P_WINDOW_NS].max / span)
		w = dstc_params[DSTC_P_WINDOW_NS].max;
	else
		w = dt / n * span + dt % n * span / n;
	if (w < dstc_params[DSTC_P_WINDOW_NS].min)
		w = dstc_params[DSTC_P_WINDOW_NS].min;
	dsmem_write_once(c->eff_window, w);
	dstc_climb(c, (u32)(l1 * DSTC_RATE_ONE / n));
	c->climb_acc = acc;
	c->climb_l1 = t[DSTC_S_HITS_L1];
	c->climb_ns = now;
}

/*
 * Adaptive mode, once an interval:
 * - promote_l1 rises, up to the set one, while migrations spend the
 *   budget, and falls back towards 1 when they do not.
 */
static void dstc_adapt(struct dstc_cache *c, struct dstc_stats *st,
		       const struct dstc_stats *total)
{
	const u64 *t = total->v, *b = c->adapt_base.v;
	u64 h1 = t[DSTC_S_HITS_L1] - b[DSTC_S_HITS_L1];
	u64 h2 = t[DSTC_S_HITS_L2] - b[DSTC_S_HITS_L2];
	u64 h3 = t[DSTC_S_HITS_L3] - b[DSTC_S_HITS_L3];
	u64 refused = t[DSTC_S_BACKPRESSURE] - b[DSTC_S_BACKPRESSURE];
	u64 acc = h1 + h2 + h3;
	u32 p1 = c->eff_promote_l1, max1 = (u32)c->p[DSTC_P_PROMOTE_L1], p2;
	bool saturated;

	if (acc < 64)
		return;	/* too little to go by */
	/* 90% of the budget, rounded up: a budget of 1 is spent by 1 */
	saturated = (u64)c->migrated * 10 >= c->p[DSTC_P_MIGRATE_BUDGET] * 9 ||
		    refused;
	if (saturated && p1 < max1) {
		p1 = p1 * 2 > max1 ? max1 : p1 * 2;
		st->v[DSTC_S_ADAPT_UP]++;
	} else if (!saturated && p1 > 1) {
		p1 /= 2;
		st->v[DSTC_S_ADAPT_DOWN]++;
	}
	p2 = p1 / 2 < c->p[DSTC_P_PROMOTE_L2] ? p1 / 2 : (u32)c->p[DSTC_P_PROMOTE_L2];
	dsmem_write_once(c->eff_promote_l1, p1);
	dsmem_write_once(c->eff_promote_l2, p2 ? p2 : 1);
	dstc_adapt_prefetch(c, t[DSTC_S_PREFETCHED] - b[DSTC_S_PREFETCHED],
			    t[DSTC_S_PREFETCH_HITS] - b[DSTC_S_PREFETCH_HITS]);
}

/*
 * How long an entry may sit idle in L1 or L2: as set; in adaptive mode
 * at least 8 windows (L1) or 64 (L2), as the window follows the rate.
 */
static u64 dstc_idle_ns(const struct dstc_cache *c, u8 tier)
{
	u64 set = c->p[tier == DSMEM_TIER_L1 ? DSTC_P_L1_IDLE_NS : DSTC_P_L2_IDLE_NS];
	u64 w = dsmem_read_once(c->eff_window) * (tier == DSMEM_TIER_L1 ? 8 : 64);

	if (c->p[DSTC_P_MODE] != DSMEM_CACHE_ADAPTIVE || set > w)
		return set;
	return w;
}

/* L1's entries idle for longer than idle go down to L2 (or L3) */
static void dstc_l1_demote_idle(struct dstc_cache *c, struct dstc_stats *st,
				u64 now, u64 idle)
{
	u32 i;

	for (i = 0; i < c->l1_hw; i++) {
		struct dstc_l1 *s = &c->l1[i];

		if (s->eid == DSTC_NONE ||
		    now - dsmem_read_once(s->last_ns) <= idle)
			continue;
		if (dstc_pinned(c, s->eid))
			continue;
		if (!dstc_migrate(c, st, s->eid, DSMEM_TIER_L2, now) ||
		    !dstc_migrate(c, st, s->eid, DSMEM_TIER_L3, now))
			st->v[DSTC_S_DEMOTE_L1]++;
	}
}

static void dstc_maintain(struct dstc_cache *c, struct dstc_stats *st, u64 now,
			  const struct dstc_stats *total)
{
	u64 l1_idle = dstc_idle_ns(c, DSMEM_TIER_L1);
	u64 l2_idle = dstc_idle_ns(c, DSMEM_TIER_L2);
	u32 i;

	if (now - c->last_aging >= c->p[DSTC_P_AGING_NS]) {
		for (i = 0; i < c->l1_hw; i++)
			c->l1[i].freq >>= 1;
		c->last_aging = now;
	}
	/*
	 * Adaptive mode walks L1 for idle entries at most once an eighth of
	 * its idle time (which is 160 L1s of accesses or more): an idle entry
	 * leaves within 9/8 of it, and a large L1 is not walked at every
	 * maintenance.
	 */
	if (c->p[DSTC_P_MODE] != DSMEM_CACHE_ADAPTIVE ||
	    now - c->last_idle_scan >= l1_idle / 8) {
		c->last_idle_scan = now;
		dstc_l1_demote_idle(c, st, now, l1_idle);
	}
	while (c->lru_tail != DSTC_NONE) {
		struct dstc_entry *e = dstc_entry(c, c->lru_tail);

		if (now - dsmem_read_once(e->last_ns) <= l2_idle)
			break;
		if (dstc_migrate(c, st, c->lru_tail, DSMEM_TIER_L3, now))
			break;
		st->v[DSTC_S_DEMOTE_L2]++;
	}
	if (c->p[DSTC_P_MODE] == DSMEM_CACHE_ADAPTIVE && total)
		dstc_adapt_sample(c, total, now);
	if (now - c->last_adapt >= c->p[DSTC_P_ADAPT_NS]) {
		if (c->p[DSTC_P_MODE] == DSMEM_CACHE_ADAPTIVE && total)
			dstc_adapt(c, st, total);
		if (total)
			c->adapt_base = *total;
		c->migrated = 0;
		c->last_adapt = now;
	}
}

void dstc_run(struct dstc_cache *c, struct dstc_stats *st, u64 now,
	      bool maint, const struct dstc_stats *total)
{
	c->ops->lock(c);
	dstc_run_batch(c, st, now);
	if (maint)
		dstc_maintain(c, st, now, total);
	c->ops->unlock(c);
}

/* ---- replay ----------------------------------------------------------- */

int dstc_replay_step(struct dstc_cache *c, struct dstc_stats *st,
		     struct dstc_replay *r, u32 eid, u16 gen, u64 delta,
		     u64 now, struct dstc_result *res)
{
	int ret;

	if (!r->next_maint)
		r->next_maint = now + r->maint_ns;
	if (now >= r->next_maint) {
		dstc_run(c, st, now, true, st);
		/* the next period boundary after now, as a periodic worker */
		r->next_maint = now + r->maint_ns -
				(now - r->next_maint) % r->maint_ns;
	}
	ret = dstc_access(c, st, eid, gen, delta, now, res);
	if (!ret && res->kick)
		dstc_run(c, st, now, false, NULL);
	return ret;
}
