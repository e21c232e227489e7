/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem Slope: what the files of a migration share -- its life and state
 * (dsmem_slope_mig.c), DMA and memory regions (_dma.c), one-sided work
 * (_wr.c), the source's and the destination's steps (_src.c, _dst.c)
 * and the ioctls (_ioctl.c).  The protocol is drawn in dsmem_slope_mig.c;
 * struct dsmem_slope_mig and the locks are in dsmem_slope.h.
 */
#ifndef _DSMEM_SLOPE_MIG_H
#define _DSMEM_SLOPE_MIG_H

#include <linux/llist.h>
#include <rdma/ib_verbs.h>

#include "dsmem_slope.h"

/* staged BEGIN or HANDOVER data at most: the largest of the two messages */
#define DSMEM_SLOPE_STAGE_MAX						\
	(sizeof(struct dsmem_wire_slope_begin) +			\
	 DSMEM_SLOPE_EXTENTS_MAX * sizeof(struct dsmem_wire_slope_extent))

struct dsmem_slope_wr {
	struct ib_cqe cqe;
	struct llist_node node;
	struct dsmem_slope_mig *mig;
	u64 unit;
	u32 n;
	int status;
};

static inline u64 dsmem_slope_unit_bytes(const struct dsmem_slope_mig *mig)
{
	return 1ULL << mig->unit_shift;
}

/* dsmem_slope_mig.c */
void dsmem_slope_mig_put(struct dsmem_slope_mig *mig);
struct dsmem_slope_mig *dsmem_slope_mig_alloc(struct dsmem_slope *s,
					      struct dsmem_conn *conn,
					      bool incoming);
bool dsmem_slope_mig_ended(const struct dsmem_slope_mig *mig);
bool dsmem_slope_mig_holds(const struct dsmem_slope_mig *mig);
void dsmem_slope_mig_unstage(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_unlink(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_link(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_set_state(struct dsmem_slope_mig *mig, u32 state,
			       int error);
void dsmem_slope_expire_kick(struct dsmem_slope *s);
struct dsmem_slope_mig *dsmem_slope_mig_find(struct dsmem_slope *s, u64 id);

/* dsmem_slope_mig_dma.c */
int dsmem_slope_mig_map_dma(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_dereg(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_hold(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_unpin(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_reg(struct dsmem_slope_mig *mig, int access);
int dsmem_slope_mig_keys(struct dsmem_slope_mig *mig, u32 *rkeys);

/* dsmem_slope_mig_wr.c */
void dsmem_slope_mig_mark(struct dsmem_slope_mig *mig, u64 unit, u64 n,
			  bool ok);
void dsmem_slope_mig_arrived(struct dsmem_slope_mig *mig, u64 unit,
			     u32 n, bool ok);
int dsmem_slope_mig_reap(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_drain(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_post(struct dsmem_slope_mig *mig, u64 k, u32 n, int *err);
u32 dsmem_slope_run(struct dsmem_slope_mig *mig,
		    const unsigned long *set, u64 k);
void dsmem_slope_mig_work(struct work_struct *work);

/* dsmem_slope_mig_src.c */
int dsmem_slope_mig_pages(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_send_abort(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_fail_source(struct dsmem_slope_mig *mig, int err,
				 bool tell_peer);
void dsmem_slope_mig_prefill(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_free_source(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_begin(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_check_huge(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_setup_failed(struct dsmem_slope_mig *mig, int err,
				  bool tell_peer);
void dsmem_slope_mig_freeze(struct dsmem_slope_mig *mig);
int dsmem_slope_mig_handover(struct dsmem_slope_mig *mig, u64 *ndirty);

/* dsmem_slope_mig_dst.c */
void dsmem_slope_mig_pull(struct dsmem_slope_mig *mig);
void dsmem_slope_mig_discard(struct dsmem_slope_mig *mig);

#endif /* _DSMEM_SLOPE_MIG_H */
