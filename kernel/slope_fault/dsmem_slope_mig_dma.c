// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: a migration's pages as the device sees them.  The source
 * takes a reference on every page of its units; both sides map the units
 * for DMA and register them in memory regions for their peer alone; and
 * unpinning undoes it all in the order that keeps a peer's late access
 * off pages that may be freed.
 */
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "dsmem_slope_mig.h"

static void dsmem_slope_mig_unmap_dma(struct dsmem_slope_mig *mig)
{
	struct ib_device *ibdev;
	u64 k;

	if (!mig->mapped)
		return;
	ibdev = mig->conn->ibdev;
	for (k = 0; k < mig->units; k++)
		ib_dma_unmap_page(ibdev, mig->dma[k], dsmem_slope_unit_bytes(mig),
				  DMA_BIDIRECTIONAL);
	mig->mapped = false;
}

int dsmem_slope_mig_map_dma(struct dsmem_slope_mig *mig)
{
	struct ib_device *ibdev = mig->conn->ibdev;
	u64 k;

	mig->dma = kvcalloc(mig->units, sizeof(*mig->dma), GFP_KERNEL_ACCOUNT);
	if (!mig->dma)
		return -ENOMEM;
	for (k = 0; k < mig->units; k++) {
		mig->dma[k] = ib_dma_map_page(ibdev, mig->pages[k], 0,
					      dsmem_slope_unit_bytes(mig),
					      DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(ibdev, mig->dma[k])) {
			while (k--)
				ib_dma_unmap_page(ibdev, mig->dma[k],
						  dsmem_slope_unit_bytes(mig),
						  DMA_BIDIRECTIONAL);
			return -ENOMEM;
		}
	}
	mig->mapped = true;
	return 0;
}

void dsmem_slope_mig_dereg(struct dsmem_slope_mig *mig)
{
	u32 i;

	/* deregistration kills the keys: the peer's late accesses fail */
	for (i = 0; i < mig->nmrs; i++)
		ib_dereg_mr(mig->mrs[i]);
	kfree(mig->mrs);
	mig->mrs = NULL;
	mig->nmrs = 0;
}

static struct page *dsmem_slope_mig_page(struct dsmem_slope_mig *mig, u64 i)
{
	unsigned int order = mig->unit_shift - PAGE_SHIFT;

	return mig->pages[i >> order] + (i & ((1ULL << order) - 1));
}

/*
 * Source: a reference on every page of the units, before they are
 * mapped for the device.  Under alloc_lock, after a 2 MiB unit was
 * found contiguous, so that page + i is what s->pages holds.
 */
void dsmem_slope_mig_hold(struct dsmem_slope_mig *mig)
{
	u64 i, n = mig->units << (mig->unit_shift - PAGE_SHIFT);

	for (i = 0; i < n; i++)
		get_page(dsmem_slope_mig_page(mig, i));
	mig->held = n;
}

/*
 * Nothing reaches the pages through us any more: the peer's keys are
 * dead, the device mappings gone; only then are the pages let go, which
 * frees those a SLOPE_FREE dropped meanwhile.
 */
void dsmem_slope_mig_unpin(struct dsmem_slope_mig *mig)
{
	u64 i;

	dsmem_slope_mig_dereg(mig);
	dsmem_slope_mig_unmap_dma(mig);
	for (i = 0; i < mig->held; i++)
		put_page(dsmem_slope_mig_page(mig, i));
	mig->held = 0;
}

/*
 * Memory regions over the units in order, each at iova i * span, for the
 * peer of this migration only.
 */
int dsmem_slope_mig_reg(struct dsmem_slope_mig *mig, int access)
{
	struct dsmem_conn *conn = mig->conn;
	u32 maxpl = conn->ibdev->attrs.max_fast_reg_page_list_len;
	u64 unit = dsmem_slope_unit_bytes(mig), per, k;
	/*
	 * An entry to spare in each region: rxe (6.1) reads the map after
	 * the last full one when a transfer ends at the region's end.
	 */
	u32 spare = maxpl > 1;
	struct scatterlist *sgl;
	u32 nmrs, i;
	int ret;

	per = min_t(u64, maxpl ? maxpl - spare : 1, mig->units);
	nmrs = DIV_ROUND_UP_ULL(mig->units, per);
	if (nmrs > DSMEM_WIRE_SLOPE_KEYS_MAX)
		return -E2BIG;
	mig->mrs = kcalloc(nmrs, sizeof(*mig->mrs), GFP_KERNEL);
	sgl = kvcalloc(per, sizeof(*sgl), GFP_KERNEL);
	if (!mig->mrs || !sgl) {
		ret = -ENOMEM;
		goto out;
	}
	mig->span = per * unit;
	for (i = 0; i < nmrs; i++) {
		u64 n = min_t(u64, per, mig->units - i * per);
		struct ib_mr *mr;

		sg_init_table(sgl, n);
		for (k = 0; k < n; k++) {
			sg_set_page(&sgl[k], mig->pages[i * per + k], unit, 0);
			sg_dma_address(&sgl[k]) = mig->dma[i * per + k];
			sg_dma_len(&sgl[k]) = unit;
		}
		mr = ib_alloc_mr(conn->pd, IB_MR_TYPE_MEM_REG, n + spare);
		if (IS_ERR(mr)) {
			ret = PTR_ERR(mr);
			goto out;
		}
		mig->mrs[mig->nmrs++] = mr;
		ret = ib_map_mr_sg(mr, sgl, n, NULL, unit);
		if (ret != n) {
			ret = ret < 0 ? ret : -EINVAL;
			goto out;
		}
		mr->iova = (u64)i * mig->span;
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		ret = dsmem_reg_post(conn, mr, access);
		if (ret)
			goto out;
	}
	ret = 0;
out:
	kvfree(sgl);
	if (ret)
		dsmem_slope_mig_dereg(mig);
	return ret;
}

int dsmem_slope_mig_keys(struct dsmem_slope_mig *mig, u32 *rkeys)
{
	u32 i;

	for (i = 0; i < mig->nmrs; i++)
		rkeys[i] = mig->mrs[i]->rkey;
	return mig->nmrs;
}
