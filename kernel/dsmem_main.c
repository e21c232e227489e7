// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: disaggregated memory over RDMA -- module entry points.
 *
 * Bring-up goes from the bottom up: the workqueue everything queues on,
 * the token cache, the transport (with its segment service), Slope (a
 * service registered with the transport), then the interfaces, each
 * before anything can announce through it: netlink (device events are
 * multicast from ib_client .add), /dev/dsmem, and last the ib_client.
 * Tear-down is the exact reverse.
 */
#include <linux/module.h>
#include <net/genetlink.h>

#include "dsmem_priv.h"
#include "dsmem_chrdev.h"
#include "dsmem_netlink.h"
#include "rdm/dsmem_rdm.h"
#include "tokencache/dsmem_tc.h"
#include "slope_fault/dsmem_slope.h"

static int __init dsmem_init(void)
{
	int ret;

	ret = dsmem_stats_init();
	if (ret)
		return ret;

	ret = dsmem_wq_init();
	if (ret)
		goto err_stats;

	ret = dsmem_tc_init();
	if (ret)
		goto err_wq;

	ret = dsmem_rdm_init();
	if (ret)
		goto err_tc;

	ret = dsmem_slope_init();
	if (ret)
		goto err_rdm;

	ret = dsmem_nl_init();
	if (ret)
		goto err_slope;

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
err_slope:
	dsmem_slope_exit();
err_rdm:
	dsmem_rdm_exit();
err_tc:
	dsmem_tc_exit();
err_wq:
	dsmem_wq_exit();
err_stats:
	dsmem_stats_exit();
	return ret;
}

static void __exit dsmem_exit(void)
{
	/*
	 * What netlink made while the module ran goes first: every node,
	 * its connections and segments, while the devices are still there.
	 * The rest undoes dsmem_init() step by step.
	 */
	dsmem_rdm_stop();
	ib_unregister_client(&dsmem_ib_client);
	dsmem_devs_check_empty();
	dsmem_chrdev_exit();
	dsmem_nl_exit();
	dsmem_slope_exit();
	dsmem_rdm_exit();
	dsmem_tc_exit();
	dsmem_wq_exit();
	dsmem_stats_exit();
}

module_init(dsmem_init);
module_exit(dsmem_exit);

MODULE_DESCRIPTION("dsmem: disaggregated memory over RDMA");
MODULE_AUTHOR("The dsmem authors");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION(DSMEM_MODULE_VERSION);
MODULE_ALIAS_GENL_FAMILY(DSMEM_GENL_NAME);
