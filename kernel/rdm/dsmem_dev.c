// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the ib_client -- one dsmem_device per RDMA device, including
 * devices that come and go at runtime (rdma link add/del of rxe), and
 * their ports going down and up.
 */
#include <linux/slab.h>
#include <linux/xarray.h>
#include <linux/mutex.h>

#include "../dsmem_netlink.h"
#include "dsmem_rdm.h"

/*
 * A port went down or up.  ib_core calls this from its workqueue, the
 * device's event_handler_rwsem held for read (unregistering takes it for
 * write): the connections are walked from our own work instead.
 */
static void dsmem_ib_event(struct ib_event_handler *handler,
			   struct ib_event *ev)
{
	struct dsmem_device *sdev = container_of(handler, struct dsmem_device,
						 event_handler);

	switch (ev->event) {
	case IB_EVENT_PORT_ERR:
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_PORT_DOWN);
		break;
	case IB_EVENT_PORT_ACTIVE:
		dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_PORT_UP);
		break;
	default:
		return;
	}
	dev_info(&sdev->ibdev->dev, "dsmem: port %u %s\n", ev->element.port_num,
		 ev->event == IB_EVENT_PORT_ERR ? "down" : "up");
	queue_work(dsmem_wq, &sdev->port_work);
}

/* The ports' states are read from ib_core's cache, updated before events. */
static void dsmem_port_work(struct work_struct *work)
{
	struct dsmem_device *sdev = container_of(work, struct dsmem_device,
						 port_work);

	dsmem_rdm_port_change(sdev);
}

/* protects dsmem_devs and device names; lock order in dsmem_priv.h */
DEFINE_MUTEX(dsmem_devs_lock);
/* ibdev->index -> struct dsmem_device; ordered, so it doubles as dump cursor */
DEFINE_XARRAY(dsmem_devs);

static int dsmem_ib_add(struct ib_device *ibdev)
{
	struct dsmem_device *sdev;
	int ret;

	sdev = kzalloc(sizeof(*sdev), GFP_KERNEL);
	if (!sdev) {
		ret = -ENOMEM;
		goto err_count;
	}
	sdev->ibdev = ibdev;
	INIT_WORK(&sdev->port_work, dsmem_port_work);
	INIT_IB_EVENT_HANDLER(&sdev->event_handler, ibdev, dsmem_ib_event);
	ib_register_event_handler(&sdev->event_handler);

	mutex_lock(&dsmem_devs_lock);
	strscpy(sdev->name, dev_name(&ibdev->dev), sizeof(sdev->name));
	ret = xa_insert(&dsmem_devs, ibdev->index, sdev, GFP_KERNEL);
	if (ret) {
		mutex_unlock(&dsmem_devs_lock);
		goto err_unregister_handler;
	}
	ib_set_client_data(ibdev, &dsmem_ib_client, sdev);
	/* announced under the lock: events and dumps see one order */
	dsmem_nl_notify_dev(sdev, DSMEM_CMD_DEV_NEW);
	mutex_unlock(&dsmem_devs_lock);

	dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_DEV_ADDED);
	return 0;

err_unregister_handler:
	ib_unregister_event_handler(&sdev->event_handler);
	cancel_work_sync(&sdev->port_work);
	kfree(sdev);
err_count:
	dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_DEV_ADD_FAILED);
	dev_warn(&ibdev->dev, "dsmem: not attaching: %d\n", ret);
	return ret;
}

static void dsmem_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct dsmem_device *sdev = client_data;

	mutex_lock(&dsmem_devs_lock);
	xa_erase(&dsmem_devs, ibdev->index);
	dsmem_nl_notify_dev(sdev, DSMEM_CMD_DEV_DEL);
	mutex_unlock(&dsmem_devs_lock);
	ib_unregister_event_handler(&sdev->event_handler);
	cancel_work_sync(&sdev->port_work);
	/* out of the table, no node can be made on it; now end its nodes */
	dsmem_rdm_dev_remove(sdev);

	kfree(sdev);
	dsmem_stat_inc(dsmem_host_net(), DSMEM_STAT_DEV_REMOVED);
}

static void dsmem_ib_rename(struct ib_device *ibdev, void *client_data)
{
	struct dsmem_device *sdev = client_data;

	mutex_lock(&dsmem_devs_lock);
	strscpy(sdev->name, dev_name(&ibdev->dev), sizeof(sdev->name));
	dsmem_nl_notify_dev(sdev, DSMEM_CMD_DEV_RENAME);
	mutex_unlock(&dsmem_devs_lock);
}

struct ib_client dsmem_ib_client = {
	.name	= "dsmem",
	.add	= dsmem_ib_add,
	.remove	= dsmem_ib_remove,
	.rename	= dsmem_ib_rename,
};

/* After ib_unregister_client every device must have been removed. */
void dsmem_devs_check_empty(void)
{
	WARN_ON(!xa_empty(&dsmem_devs));
	xa_destroy(&dsmem_devs);
}
