/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the token cache's policy core -- token codec, L2 page codec,
 * directory, tiers, promotion and demotion, eviction, the adaptive
 * thresholds and the modelled cost.
 *
 * Portable C with no kernel headers: the module, the simulator and the
 * unit tests compile this very file.  The caller supplies the clock (every
 * entry point takes "now" in ns), memory for L2 pages, and a lock for the
 * structural paths; lookups and inline updates are lock-free.
 *
 * Concurrency contract:
 *  - dstc_access() may run on many CPUs at once and takes no lock except
 *    for moving an L2 entry in the LRU (ops->lock).
 *  - every other function that changes state must be called with
 *    ops->lock held (dstc_*_locked), or takes it itself (documented).
 *  - memory a reader may still look at (L2 pages) is released through
 *    ops->page_free, which must defer the free past concurrent readers.
 */
#ifndef _DSMEM_TC_CORE_H
#define _DSMEM_TC_CORE_H

#include "../dsmem_portable.h"

#ifdef __KERNEL__
#include <uapi/linux/dsmem_token.h>
#include <uapi/linux/dsmem_netlink.h>
#else
#include <linux/dsmem_token.h>
#include <linux/dsmem_netlink.h>
#endif

/* ---- token codec ------------------------------------------------------ */

/* One field of a token: what dsctl prints and what L2 compresses. */
struct dstc_field {
	const char *name;
	u8 offset;
	u8 size;		/* 1, 2 or 4 */
};

/* The fields after the header, in layout order; NULL for a bad type. */
const struct dstc_field *dstc_token_fields(u8 type, unsigned int *nr);
const char *dstc_token_type_name(u8 type);
/* bytes of a token of this type, 0 for a bad type */
unsigned int dstc_token_size(u8 type);
u32 dstc_field_get(const union dsmem_token *t, const struct dstc_field *f);
void dstc_field_set(union dsmem_token *t, const struct dstc_field *f, u32 v);
/* header, size and version agree: 0 or -EINVAL */
int dstc_token_check(const union dsmem_token *t, unsigned int len);
void dstc_token_init(union dsmem_token *t, u8 type, u16 index);

/* ---- L2 pages: one bucket of tokens, delta-compressed --------------- */

#define DSTC_BUCKET_SHIFT	7
#define DSTC_BUCKET_SLOTS	BIT(DSTC_BUCKET_SHIFT)
#define DSTC_PAGE_SIZE		4096U

struct dstc_page_hdr {
	u32 page_id;		/* bucket number */
	u16 used_slots;
	u16 stream_end;		/* bytes of the page in use */
	u64 slot_bitmap[DSTC_BUCKET_SLOTS / 64];
	union dsmem_token base;	/* every slot is coded as a delta to it */
	u16 slot_off[DSTC_BUCKET_SLOTS];	/* 0: empty */
};

void dstc_page_init(void *page, u32 page_id);
/* 0, or -ENOSPC only if the page cannot hold the token even compacted */
int dstc_page_put(void *page, unsigned int slot, const union dsmem_token *t);
int dstc_page_get(const void *page, unsigned int slot, union dsmem_token *t);
void dstc_page_del(void *page, unsigned int slot);
/* the live records of from, without holes, into the page to */
void dstc_page_compact(void *to, const void *from);
/* bytes the slot's coded token takes */
unsigned int dstc_page_slot_bytes(const void *page, unsigned int slot);

/* ---- parameters ------------------------------------------------------- */

/* the parameters, in the order of the netlink ABI */
#define DSTC_P_L1_CAPACITY	DSMEM_CACHE_P_L1_CAPACITY
#define DSTC_P_L2_CAPACITY	DSMEM_CACHE_P_L2_CAPACITY
#define DSTC_P_PROMOTE_L2	DSMEM_CACHE_P_PROMOTE_L2
#define DSTC_P_PROMOTE_L1	DSMEM_CACHE_P_PROMOTE_L1
#define DSTC_P_WINDOW_NS	DSMEM_CACHE_P_WINDOW_NS
#define DSTC_P_L1_IDLE_NS	DSMEM_CACHE_P_L1_IDLE_NS
#define DSTC_P_L2_IDLE_NS	DSMEM_CACHE_P_L2_IDLE_NS
#define DSTC_P_AGING_NS	DSMEM_CACHE_P_AGING_NS
#define DSTC_P_BATCH_THRESHOLD	DSMEM_CACHE_P_BATCH_THRESHOLD
#define DSTC_P_BATCH_MAX	DSMEM_CACHE_P_BATCH_MAX
#define DSTC_P_QUEUE_MAX	DSMEM_CACHE_P_QUEUE_MAX
#define DSTC_P_CAS_RETRIES	DSMEM_CACHE_P_CAS_RETRIES
#define DSTC_P_PREFETCH	DSMEM_CACHE_P_PREFETCH
#define DSTC_P_COST_L1_NS	DSMEM_CACHE_P_COST_L1_NS
#define DSTC_P_COST_L2_NS	DSMEM_CACHE_P_COST_L2_NS
#define DSTC_P_COST_L3_NS	DSMEM_CACHE_P_COST_L3_NS
#define DSTC_P_MODE	DSMEM_CACHE_P_MODE
#define DSTC_P_MIGRATE_BUDGET	DSMEM_CACHE_P_MIGRATE_BUDGET
#define DSTC_P_ADAPT_NS	DSMEM_CACHE_P_ADAPT_NS
#define DSTC_P_SAMPLE	DSMEM_CACHE_P_SAMPLE
#define DSTC_P_OPTIMISTIC	DSMEM_CACHE_P_OPTIMISTIC
#define DSTC_P_NR	DSMEM_CACHE_P_NR

struct dstc_param_desc {
	const char *name;
	u64 min;
	u64 max;
	u64 def;
	const char *unit;
	const char *range_msg;	/* "<name> out of range" */
};

extern const struct dstc_param_desc dstc_params[DSTC_P_NR];

/* Validate a whole set; on error *why (static text) says what is wrong. */
int dstc_params_check(const u64 *p, const char **why);
/*
 * The same, with l1_capacity bounded by l1_max (a cache's l1_slots) rather
 * than DSTC_L1_MAX; *bad is the parameter out of its range, or DSTC_P_NR
 * when two disagree (promote_l1 below promote_l2, ...) or all is well.
 */
int dstc_params_check_l1(const u64 *p, u64 l1_max, unsigned int *bad,
			 const char **why);
void dstc_params_default(u64 *p);

/* ---- statistics ------------------------------------------------------- */

enum dstc_stat {
	DSTC_S_HITS_L1,
	DSTC_S_HITS_L2,
	DSTC_S_HITS_L3,
	DSTC_S_COST_L1_NS,	/* modelled ns of accesses served by L1 */
	DSTC_S_COST_L2_NS,
	DSTC_S_COST_L3_NS,
	DSTC_S_PROMOTE_L1,	/* moves into L1 */
	DSTC_S_PROMOTE_L2,	/* moves L3 -> L2 */
	DSTC_S_DEMOTE_L1,	/* idle L1 -> L2/L3 */
	DSTC_S_DEMOTE_L2,	/* idle L2 -> L3 */
	DSTC_S_EVICT_L1,	/* made room in L1 */
	DSTC_S_EVICT_L2,	/* made room in L2 */
	DSTC_S_MIGRATIONS,
	DSTC_S_MIGRATE_FAILED,	/* no L2 page, or L1 full of pinned entries */
	DSTC_S_CAS_RETRIES,	/* inline updates that lost a race */
	DSTC_S_CAS_FALLBACKS,	/* ... and took the slow path */
	DSTC_S_READ_RETRIES,	/* lookups that saw a version change */
	DSTC_S_QUEUED,		/* promotions queued */
	DSTC_S_BACKPRESSURE,	/* ... refused: the queue was full */
	DSTC_S_BATCHES,
	DSTC_S_PREFETCHED,	/* neighbours moved with a promotion */
	DSTC_S_EXPAND_URGENT,	/* L3 fetches from the urgent queue */
	DSTC_S_EXPAND_BACKGROUND,	/* L3 fetches installed from the queue */
	DSTC_S_WRITEBACKS,	/* dirty L1 relaxed fields written back */
	DSTC_S_WRITETHROUGHS,	/* strict-field updates written through */
	DSTC_S_ADAPT_UP,	/* adaptive mode raised the thresholds */
	DSTC_S_ADAPT_DOWN,	/* ... lowered them */
	DSTC_S_PREFETCH_HITS,	/* prefetched entries asked for while in L2 */
	DSTC_S_OPTIMISTIC_READS,	/* old copies of moving entries used */
	DSTC_S_OPTIMISTIC_RECONCILES,	/* ... validated against the move's publish */
	DSTC_S_MIGRATE_NS,	/* migration latency, summed (queue + copy) */
	DSTC_S_DMA_BYTES,	/* modelled DMA of promotions */
	DSTC_S_DMA_PREFETCH_BYTES,	/* ... of prefetched neighbours */
	DSTC_S_NR
};

/* a modelled DMA moves whole lines of this many bytes */
#define DSTC_DMA_LINE		64

extern const char *const dstc_stat_names[DSTC_S_NR];

/* modelled-cost histogram: exact below 32 ns, then 16 per power of two */
#define DSTC_HIST_BUCKETS	352

struct dstc_stats {
	u64 v[DSTC_S_NR];
	u32 hist[3][DSTC_HIST_BUCKETS];	/* per serving tier */
	u32 mig_hist[DSTC_HIST_BUCKETS];	/* migration latency */
	/*
	 * sample > 1: accesses left before the next counted one.  Per stats
	 * block, so per CPU in the module: a hot entry's counters are then
	 * written by one access in N of every CPU, where a per-entry
	 * countdown would be written by every access and keep the line
	 * bouncing that sampling is meant to spare.  Not summed.
	 */
	u32 sample_left;
};

unsigned int dstc_hist_bucket(u64 ns);
/* lower bound of a bucket, in ns */
u64 dstc_hist_value(unsigned int bucket);
/* the q-th per-mille value of the histogram (q = 990 for p99) */
u64 dstc_hist_quantile(const u32 *hist, unsigned int n, unsigned int q);
void dstc_stats_add(struct dstc_stats *sum, const struct dstc_stats *s);

/* ---- the cache -------------------------------------------------------- */

#define DSTC_NONE		0xffffffffU
#define DSTC_L1_MAX		16384U
#define DSTC_ENTRIES_MAX	BIT(22)	/* the L1 update word has 23 bits */
#define DSTC_CHUNK_SHIFT	8
#define DSTC_L1_SAMPLE		8	/* adaptive: main slots a victim is chosen from */
#define DSTC_SAMPLE_L1S		20	/* adaptive: a window spans this many L1s of accesses */
#define DSTC_CLIMB_L1S		10	/* adaptive: the climber's sample, TinyLFU's */
#define DSTC_FREQ_MAX		15	/* adaptive: duels count to this, as 4-bit counters */
#define DSTC_RATE_ONE		65536U	/* hit rates in 1/65536ths */

/*
 * The directory word: what readers validate and migrations swap.
 *   63..32 version, 31..16 generation, 15..8 flags, 7..0 layer (0: free)
 */
#define DSTC_CTL(ver, gen, flags, layer)				\
	(((u64)(ver) << 32) | ((u64)(gen) << 16) | ((u64)(flags) << 8) | \
	 (u64)(layer))
#define DSTC_CTL_VER(c)		((u32)((c) >> 32))
#define DSTC_CTL_GEN(c)		((u16)((c) >> 16))
#define DSTC_CTL_FLAGS(c)	((u8)((c) >> 8))
#define DSTC_CTL_LAYER(c)	((u8)(c))

/*
 * Whether a directory word is the live entry of generation gen: 0;
 * -ENOENT if the entry was never created; -ESTALE if its object is gone
 * or the index now belongs to another generation.
 */
static inline int dstc_ctl_check(u64 ctl, u16 gen)
{
	if (!DSTC_CTL_GEN(ctl))
		return -ENOENT;
	if (DSTC_CTL_GEN(ctl) != gen || !DSTC_CTL_LAYER(ctl))
		return -ESTALE;
	return 0;
}

struct dstc_entry {
	u64 ctl;
	u32 token_offset;	/* L1: slot; L2: bucket << 7 | slot; L3: id */
	u32 node;		/* the owner, for traces */
	u8 queued;		/* DSTC_Q_* it waits in, if any */
	u8 target;		/* tier it is queued for */
	u8 prefetched;		/* came to L2 with a neighbour, not yet asked for */
	u8 __pad;
	u32 win_hits;		/* hits in the current window */
	u32 win_prev;		/* hits in the one before */
	u32 lru_prev;		/* L2 LRU, under the lock */
	u32 lru_next;
	u32 move_ver;		/* the version a move in flight publishes; 0: none */
	u64 win_start;
	u64 last_ns;
	u64 relaxed;		/* written-back relaxed fields (accesses) */
	u64 queued_ns;		/* when its promotion was queued */
	union dsmem_token token;	/* L3: always whole; a move never writes it */
};

/*
 * An L1 slot.  The update word carries the relaxed fields' delta since
 * the entry came in, tagged with its entry so a late CAS never lands on
 * another entry, and a closed bit that a migration sets before copying.
 */
#define DSTC_UPD_CLOSED		BIT_ULL(63)
#define DSTC_UPD_TAG_SHIFT	40
#define DSTC_UPD_DELTA_MASK	((1ULL << DSTC_UPD_TAG_SHIFT) - 1)
#define DSTC_UPD_TAG(eid)	((u64)((eid) + 1) << DSTC_UPD_TAG_SHIFT)

struct dstc_l1 {
	u64 upd;
	u32 eid;		/* DSTC_NONE: free */
	u32 freq;		/* LFU, aged */
	u64 last_ns;		/* LRU tie-break */
	union dsmem_token token;
	/* adaptive mode's admission window, oldest first (under the lock) */
	u32 w_prev;
	u32 w_next;
};

struct dstc_cache;

struct dstc_ops {
	void *(*page_alloc)(struct dstc_cache *c);	/* DSTC_PAGE_SIZE */
	void (*page_free)(struct dstc_cache *c, void *page);
	void *(*chunk_alloc)(struct dstc_cache *c, size_t size);	/* zeroed */
	void (*lock)(struct dstc_cache *c);
	void (*unlock)(struct dstc_cache *c);
};

enum { DSTC_Q_NONE, DSTC_Q_URGENT, DSTC_Q_BACKGROUND };

struct dstc_queue {
	u32 *ring;
	u32 head;		/* next to take */
	u32 len;
};

struct dstc_cache {
	const struct dstc_ops *ops;
	void *priv;
	u64 p[DSTC_P_NR];	/* as set */
	u32 eff_promote_l1;	/* in effect (adaptive mode moves them) */
	u32 eff_promote_l2;
	u64 eff_window;		/* window in effect (adaptive: from the rate) */
	/*
	 * Adaptive mode's L1: a window that every entrant joins, and the
	 * main part that its oldest entry must win a duel to enter; the
	 * window's size climbs the L1 hit rate.
	 */
	u32 w_head;		/* oldest in the window */
	u32 w_tail;
	u32 w_used;
	u32 w_target;
	s32 climb_step;		/* the next change of w_target */
	u32 climb_prev;		/* L1 hits per 65536 accesses, last sample */
	u64 climb_acc;		/* total accesses at the last sample's end */
	u64 climb_l1;		/* ... L1 hits */
	u64 climb_ns;		/* ... its time */
	u32 l1_hand;		/* where the next victim sample starts */
	u32 eff_prefetch;	/* neighbours in effect (adaptive: by their hits) */
	u32 prefetch_idle;	/* adaptive: intervals with prefetch off */
	u32 nentries;
	struct dstc_entry **chunks;	/* nentries >> DSTC_CHUNK_SHIFT */
	void **pages;		/* bucket -> L2 page */
	u32 npages;
	struct dstc_l1 *l1;	/* l1_slots of them */
	u32 l1_slots;		/* DSTC_L1_MAX; a simulator's L1 may be larger */
	u32 *l1_free;		/* stack of free slots */
	u32 l1_nfree;
	u32 l1_used;
	u32 l1_pinned;
	u32 l2_used;
	u32 lru_head;		/* most recent L2 entry */
	u32 lru_tail;
	u32 nlive;
	struct dstc_queue q[2];	/* urgent, background */
	u32 qcap;
	u64 last_aging;
	u64 last_idle_scan;	/* adaptive: L1's last walk for idle entries */
	u64 last_adapt;
	u32 migrated;		/* in this adaptation interval */
	struct dstc_stats adapt_base;	/* totals at the last adaptation */
	u32 *scratch;		/* batch_max entry ids */
	u32 l1_hw;		/* slots below this were ever used */
	u64 mig_wait;		/* the next migration's queueing time (batches) */
	bool mig_prefetch;	/* the next migration is a prefetch */
	void (*apply_hook)(struct dstc_cache *c, u32 eid);	/* tests */
	/* every move between tiers, after it is published (replays) */
	void (*move_hook)(struct dstc_cache *c, u32 eid, u8 from, u8 to);
};

/*
 * Tables come from ops->chunk_alloc.  Directory chunks are allocated on
 * first use by dstc_insert_locked; a caller whose lock forbids sleeping
 * installs them beforehand with dstc_chunk_install.
 */
#define DSTC_CHUNK_BYTES	(sizeof(struct dstc_entry) << DSTC_CHUNK_SHIFT)
/* 0: installed; 1: one was already there (free mem); -EINVAL: bad eid */
int dstc_chunk_install_locked(struct dstc_cache *c, u32 eid, void *mem);
bool dstc_chunk_present(struct dstc_cache *c, u32 eid);
int dstc_cache_init(struct dstc_cache *c, const struct dstc_ops *ops,
		    void *priv, u32 nentries, const u64 *params);
/*
 * With l1_slots L1 slots rather than the NIC's DSTC_L1_MAX (1 to
 * DSTC_ENTRIES_MAX): the simulator's caches, which model no SRAM.
 */
int dstc_cache_init_l1(struct dstc_cache *c, const struct dstc_ops *ops,
		       void *priv, u32 nentries, const u64 *params, u32 l1_slots);
/* every chunk and page; ops->page_free for pages, free_chunk otherwise */
void dstc_cache_destroy(struct dstc_cache *c,
			void (*free_chunk)(struct dstc_cache *c, void *p));

struct dstc_entry *dstc_entry(struct dstc_cache *c, u32 eid);

/*
 * Create entry eid with token t in L3 (caller holds the lock); returns
 * the generation to put in the handle.
 */
int dstc_insert_locked(struct dstc_cache *c, u32 eid, u32 node,
		       const union dsmem_token *t, u16 *gen);
int dstc_remove_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		       u16 gen);

/* What one access found. */
struct dstc_result {
	union dsmem_token token;
	u8 tier;		/* served it */
	u8 flags;		/* directory flags seen */
	u32 retries;		/* version and CAS retries */
	u64 cost_ns;		/* modelled */
	bool kick;		/* a promotion batch is ready: run dstc_run */
};

/*
 * Resolve entry eid (generation gen); with delta != 0 also add delta to
 * its relaxed fields inline (hot path: CAS in L1, bounded retries, then
 * the slow path).  -ENOENT: no such entry; -ESTALE: generation differs.
 * c->apply_hook, if set, runs between the read and the CAS of an L1
 * update, and between an optimistic read of a moving entry's old copy and
 * its validation (the unit tests use it to lose races on purpose).
 *
 * An entry being moved: by default the lookup waits for the move to
 * publish (spinning, then on the lock).  With the optimistic parameter it
 * reads the old copy instead -- the L1 slot it leaves, validated by the
 * slot's update tag, or the home copy in L3, which no move writes -- and
 * validates the directory word after: unchanged, or exactly the move's
 * publish (a move copies, it does not change the token), else it retries.
 */
int dstc_access(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		u16 gen, u64 delta, u64 now, struct dstc_result *res);

/* Relaxed fields of an entry: written back plus any L1 delta. */
u64 dstc_relaxed(struct dstc_cache *c, u32 eid);
/* Write-through of strict fields (the token), in every tier it is in. */
int dstc_update_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		       u16 gen, const union dsmem_token *t);
/* Pin into L1 (-ENOSPC: L1 is full of pinned entries) or unpin. */
int dstc_pin_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
		    u16 gen, bool pin, u64 now);
/* Move an entry now (tests, benchmarks); -EBUSY if pinned. */
int dstc_migrate_locked(struct dstc_cache *c, struct dstc_stats *st, u32 eid,
			u8 tier, u64 now);
/* Change parameters (validated as a set); -EBUSY: L1 below pinned. */
int dstc_set_params_locked(struct dstc_cache *c, struct dstc_stats *st,
			   const u64 *p, u64 now, const char **why);
/*
 * Run queued promotions (a batch, clustered by bucket) and, if maint,
 * idle demotion, aging and adaptation.  Takes the lock itself.
 * total: the caller's summed stats, for the adaptive mode.
 */
void dstc_run(struct dstc_cache *c, struct dstc_stats *st, u64 now,
	      bool maint, const struct dstc_stats *total);

/* A consistent copy of an entry's directory word and token. */
int dstc_peek(struct dstc_cache *c, u32 eid, u64 *ctl, u32 *offset,
	      union dsmem_token *t);
/* Window hit estimate at now. */
u32 dstc_window_hits(const struct dstc_cache *c, const struct dstc_entry *e,
		     u64 now);

/* ---- replay ----------------------------------------------------------- */

/*
 * A trace replayed the way the module's workers drive the cache: an access,
 * the promotion batch it kicked at once, and a maintenance run every
 * maint_ns of trace time.  The kernel's CACHE_REPLAY and CACHE_BENCH, the
 * simulator and the unit tests all step through this one driver, so that
 * the same trace makes the same moves everywhere.
 */
#define DSTC_REPLAY_MAINT_NS	100000ULL	/* 100 us */

struct dstc_replay {
	u64 maint_ns;
	u64 next_maint;		/* 0: at the first access + maint_ns */
};

static inline void dstc_replay_init(struct dstc_replay *r, u64 maint_ns)
{
	r->maint_ns = maint_ns ? maint_ns : DSTC_REPLAY_MAINT_NS;
	r->next_maint = 0;
}

/*
 * One access of entry eid (generation gen) at now, which must not go back
 * in time; delta as dstc_access takes it.  Maintenance whose time has come
 * runs first, once however long the gap, with st as the running total.
 */
int dstc_replay_step(struct dstc_cache *c, struct dstc_stats *st,
		     struct dstc_replay *r, u32 eid, u16 gen, u64 delta,
		     u64 now, struct dstc_result *res);

#endif /* _DSMEM_TC_CORE_H */
