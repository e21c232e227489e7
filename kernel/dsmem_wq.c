// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the module's workqueue, which every part queues on (connection
 * work, Slope's announcements and expiry, the token cache's maintenance).
 * It exists before any of them and goes after all of them.
 */
#include <linux/workqueue.h>

#include "dsmem_priv.h"

struct workqueue_struct *dsmem_wq;

int dsmem_wq_init(void)
{
	/* ordered per item is all we need; unbound keeps latency low */
	dsmem_wq = alloc_workqueue("dsmem", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return dsmem_wq ? 0 : -ENOMEM;
}

void dsmem_wq_exit(void)
{
	destroy_workqueue(dsmem_wq);
}
