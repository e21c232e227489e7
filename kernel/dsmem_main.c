// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: disaggregated memory over RDMA -- module entry points.
 *
 * Bring-up order is such that each interface exists before anything can
 * announce through it: netlink first (device events are multicast from
 * ib_client .add), then /dev/dsmem, then the ib_client.  Tear-down is the
 * reverse.
 */
#include <linux/module.h>
#include <net/genetlink.h>

#include "dsmem_priv.h"

u64 dsmem_features(void)
{
	return DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS | DSMEM_FEAT_RDM |
	       DSMEM_FEAT_TOKENCACHE | DSMEM_FEAT_SLOPE;
}

static int __init dsmem_init(void)
{
	int ret;

	ret = dsmem_tc_init();
	if (ret)
		return ret;

	ret = dsmem_slope_init();
	if (ret)
		goto err_tc;

	ret = dsmem_rdm_init();
	if (ret)
		goto err_slope;
	dsmem_tc_start();

	ret = dsmem_nl_init();
	if (ret)
		goto err_rdm;

	ret = dsmem_chrdev_init();
	if (ret)
		goto err_nl;

	ret = ib_register_client(&dsmem_ib_client);
	if (ret)
		goto err_chrdev;

	return 0;

err_chrdev:
	dsmem_chrdev_exit();
err_nl:
	dsmem_nl_exit();
err_rdm:
	dsmem_tc_exit();	/* its workers run on dsmem_wq */
	dsmem_rdm_fini();
	dsmem_slope_exit();
	return ret;
err_slope:
	dsmem_slope_exit();
err_tc:
	dsmem_tc_exit();
	return ret;
}

static void __exit dsmem_exit(void)
{
	/* nodes first: their connections use the devices */
	dsmem_rdm_exit();
	ib_unregister_client(&dsmem_ib_client);
	dsmem_devs_check_empty();
	dsmem_chrdev_exit();
	dsmem_nl_exit();
	dsmem_tc_exit();
	dsmem_rdm_fini();
	/* after the last node: their inodes are of this filesystem */
	dsmem_slope_exit();
}

module_init(dsmem_init);
module_exit(dsmem_exit);

MODULE_DESCRIPTION("dsmem: disaggregated memory over RDMA");
MODULE_AUTHOR("The dsmem authors");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION(DSMEM_MODULE_VERSION);
MODULE_ALIAS_GENL_FAMILY(DSMEM_GENL_NAME);
