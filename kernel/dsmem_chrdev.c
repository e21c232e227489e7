// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: /dev/dsmem and its ioctl dispatch.
 *
 * Each ioctl is one table entry: handler, first published argument size,
 * privilege.  The dispatcher alone copies arguments in and out, so the
 * size-versioning rules (see include/uapi/linux/dsmem.h) hold for every
 * command without each handler repeating them.
 */
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dsmem_priv.h"
#include "dsmem_chrdev.h"
#include "rdm/dsmem_rdm.h"
#include "slope_fault/dsmem_slope.h"

/*
 * No command is for CAP_NET_ADMIN alone: attaching, which grants the use
 * of a node, is checked against the node's owner, group and mode.
 */
struct dsmem_ioctl_desc {
	unsigned int cmd;	/* the command as this module defines it */
	int (*handler)(struct file *filp, void *arg);
	u16 min_size;		/* first published size of the argument */
};

/* DSMEM_IOCTL(VERSION, ...) binds DSMEM_IOC_VERSION and its _SIZE_VER0 */
#define DSMEM_IOCTL(_name, _handler)					\
	[_IOC_NR(DSMEM_IOC_##_name)] = {				\
		.cmd = DSMEM_IOC_##_name,				\
		.handler = _handler,					\
		.min_size = DSMEM_IOC_##_name##_SIZE_VER0,		\
	}

static int dsmem_ioc_version(struct file *filp, void *arg);

/* the data path's handlers take the descriptor's state */
static int dsmem_ioc_attach(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;
	struct dsmem_node *node;
	int ret;

	ret = dsmem_xfer_attach(file->xfer, arg);
	if (ret == -EACCES)
		dsmem_stat_inc(current->nsproxy->net_ns, DSMEM_STAT_IOCTL_DENIED);
	if (ret)
		return ret;
	node = dsmem_xfer_node_get(file->xfer);
	if (node) {
		dsmem_slope_attach(filp, node);
		dsmem_node_put(node);
	}
	return 0;
}

/* The Slope calls work on the descriptor's node, without its lock. */
static int dsmem_ioc_slope(struct file *filp, void *arg,
			   int (*fn)(struct dsmem_node *node, void *arg))
{
	struct dsmem_file *file = filp->private_data;
	struct dsmem_node *node = dsmem_xfer_node_get(file->xfer);
	int ret;

	if (!node)
		return -ENOTCONN;
	ret = fn(node, arg);
	dsmem_node_put(node);
	return ret;
}

static int dsmem_ioc_slope_alloc(struct file *filp, void *arg)
{
	return dsmem_ioc_slope(filp, arg, dsmem_slope_ioc_alloc);
}

static int dsmem_ioc_slope_free(struct file *filp, void *arg)
{
	return dsmem_ioc_slope(filp, arg, dsmem_slope_ioc_free);
}

static int dsmem_ioc_slope_migrate(struct file *filp, void *arg)
{
	return dsmem_ioc_slope(filp, arg, dsmem_slope_ioc_migrate);
}

static int dsmem_ioc_slope_mig_get(struct file *filp, void *arg)
{
	return dsmem_ioc_slope(filp, arg, dsmem_slope_ioc_mig_get);
}

static int dsmem_ioc_slope_mig_stop(struct file *filp, void *arg)
{
	return dsmem_ioc_slope(filp, arg, dsmem_slope_ioc_mig_stop);
}

static int dsmem_ioc_slope_recv(struct file *filp, void *arg)
{
	return dsmem_ioc_slope(filp, arg, dsmem_slope_ioc_recv);
}

/* The trackers belong to the descriptor; each holds its node. */
static int dsmem_ioc_slope_dirty(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;
	struct dsmem_node *node = dsmem_xfer_node_get(file->xfer);
	int ret;

	if (!node)
		return -ENOTCONN;
	mutex_lock(&file->slope_lock);
	ret = dsmem_slope_ioc_dirty(&file->slope_tracks, node, arg);
	mutex_unlock(&file->slope_lock);
	dsmem_node_put(node);
	return ret;
}

static int dsmem_ioc_mr_reg(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_xfer_mr_reg(file->xfer, arg);
}

static int dsmem_ioc_mr_dereg(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_xfer_mr_dereg(file->xfer, arg);
}

static int dsmem_ioc_submit(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_xfer_submit(file->xfer, arg);
}

static int dsmem_ioc_task(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_xfer_task(file->xfer, arg);
}

static int dsmem_ioc_ring_setup(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_ring_setup(file->xfer, arg);
}

static int dsmem_ioc_ring_enter(struct file *filp, void *arg)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_ring_enter(file->xfer, arg);
}

static const struct dsmem_ioctl_desc dsmem_ioctls[] = {
	DSMEM_IOCTL(VERSION, dsmem_ioc_version),
	DSMEM_IOCTL(ATTACH, dsmem_ioc_attach),
	DSMEM_IOCTL(MR_REG, dsmem_ioc_mr_reg),
	DSMEM_IOCTL(MR_DEREG, dsmem_ioc_mr_dereg),
	DSMEM_IOCTL(SUBMIT, dsmem_ioc_submit),
	DSMEM_IOCTL(TASK, dsmem_ioc_task),
	DSMEM_IOCTL(SLOPE_ALLOC, dsmem_ioc_slope_alloc),
	DSMEM_IOCTL(SLOPE_FREE, dsmem_ioc_slope_free),
	DSMEM_IOCTL(SLOPE_MIGRATE, dsmem_ioc_slope_migrate),
	DSMEM_IOCTL(SLOPE_MIG_GET, dsmem_ioc_slope_mig_get),
	DSMEM_IOCTL(SLOPE_MIG_STOP, dsmem_ioc_slope_mig_stop),
	DSMEM_IOCTL(SLOPE_RECV, dsmem_ioc_slope_recv),
	DSMEM_IOCTL(SLOPE_DIRTY, dsmem_ioc_slope_dirty),
	DSMEM_IOCTL(RING_SETUP, dsmem_ioc_ring_setup),
	DSMEM_IOCTL(RING_ENTER, dsmem_ioc_ring_enter),
};

static int dsmem_ioc_version(struct file *filp, void *arg)
{
	struct dsmem_ioc_version *v = arg;

	if (v->flags & ~DSMEM_VERSION_FLAGS_ALL || v->__pad)
		return -EINVAL;

	v->abi_version = DSMEM_ABI_VERSION;
	v->features = dsmem_features();
	v->max_ioctl_nr = ARRAY_SIZE(dsmem_ioctls) - 1;
	strscpy(v->module_version, DSMEM_MODULE_VERSION,
		sizeof(v->module_version));
	return 0;
}

static long dsmem_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	void __user *argp = (void __user *)uarg;
	/* the caller's: it counts what it asked for */
	struct net *net = current->nsproxy->net_ns;
	const struct dsmem_ioctl_desc *desc;
	unsigned int nr = _IOC_NR(cmd);
	size_t usize = _IOC_SIZE(cmd);
	u8 karg[DSMEM_IOCTL_ARG_MAX] __aligned(8);
	size_t ksize;
	int ret;

	BUILD_BUG_ON(sizeof(struct dsmem_ioc_version) != DSMEM_IOC_VERSION_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_attach) != DSMEM_IOC_ATTACH_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_mr_reg) != DSMEM_IOC_MR_REG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_mr_dereg) != DSMEM_IOC_MR_DEREG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_submit) != DSMEM_IOC_SUBMIT_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_task) != DSMEM_IOC_TASK_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_slope_alloc) != DSMEM_IOC_SLOPE_ALLOC_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_slope_free) != DSMEM_IOC_SLOPE_FREE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_slope_migrate) != DSMEM_IOC_SLOPE_MIGRATE_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_slope_mig) != DSMEM_IOC_SLOPE_MIG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_slope_dirty) != DSMEM_IOC_SLOPE_DIRTY_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_ring_setup) != DSMEM_IOC_RING_SETUP_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_ring_enter) != DSMEM_IOC_RING_ENTER_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct dsmem_ring_ctl) != DSMEM_RING_ENTRIES_OFFSET);
	BUILD_BUG_ON(sizeof(struct dsmem_sqe) != 64);
	BUILD_BUG_ON(sizeof(struct dsmem_cqe) != 32);
	BUILD_BUG_ON(sizeof(struct dsmem_xfer_req) != 48);
	BUILD_BUG_ON(sizeof(struct dsmem_xfer_status) != 16);
	BUILD_BUG_ON(sizeof(struct dsmem_ioc_version) > DSMEM_IOCTL_ARG_MAX);

	dsmem_stat_inc(net, DSMEM_STAT_IOCTL_CALLS);

	if (_IOC_TYPE(cmd) != DSMEM_IOCTL_MAGIC || nr >= ARRAY_SIZE(dsmem_ioctls))
		goto err_unknown;
	desc = &dsmem_ioctls[nr];
	if (!desc->handler || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		goto err_unknown;

	if (usize < desc->min_size) {
		dsmem_stat_inc(net, DSMEM_STAT_IOCTL_SHORT);
		return -EINVAL;
	}
	ksize = _IOC_SIZE(desc->cmd);
	ret = copy_struct_from_user(karg, ksize, argp, usize);
	if (ret) {
		dsmem_stat_inc(net, ret == -E2BIG ?
				    DSMEM_STAT_IOCTL_NONZERO_TAIL :
				    DSMEM_STAT_IOCTL_FAULT);
		return ret;
	}

	ret = desc->handler(filp, karg);
	if (ret)
		return ret;

	if ((_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(argp, karg, min(usize, ksize))) {
		dsmem_stat_inc(net, DSMEM_STAT_IOCTL_FAULT);
		return -EFAULT;
	}
	return 0;

err_unknown:
	dsmem_stat_inc(net, DSMEM_STAT_IOCTL_UNKNOWN);
	return -ENOTTY;
}

static int dsmem_open(struct inode *inode, struct file *filp)
{
	struct dsmem_file *file;
	int ret;

	file = kzalloc(sizeof(*file), GFP_KERNEL);
	if (!file)
		return -ENOMEM;
	ret = dsmem_xfer_open(&file->xfer);
	if (ret)
		goto err_free_file;
	mutex_init(&file->slope_lock);
	INIT_LIST_HEAD(&file->slope_tracks);
	filp->private_data = file;
	return 0;

err_free_file:
	kfree(file);
	return ret;
}

static int dsmem_release(struct inode *inode, struct file *filp)
{
	struct dsmem_file *file = filp->private_data;

	/* transfers end first; the trackers hold their nodes themselves */
	dsmem_xfer_release(file->xfer);
	dsmem_slope_file_release(&file->slope_tracks);
	kfree(file);
	return 0;
}

static int dsmem_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct dsmem_file *file = filp->private_data;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;

	if (off >= DSMEM_RING_OFF_SQ)
		return dsmem_ring_mmap(file->xfer, vma);
	return dsmem_slope_mmap(filp, vma);
}

static __poll_t dsmem_poll(struct file *filp, poll_table *wait)
{
	struct dsmem_file *file = filp->private_data;

	return dsmem_xfer_poll(file->xfer, filp, wait);
}

static const struct file_operations dsmem_fops = {
	.owner		= THIS_MODULE,
	.open		= dsmem_open,
	.release	= dsmem_release,
	.poll		= dsmem_poll,
	.mmap		= dsmem_mmap,
	.unlocked_ioctl	= dsmem_ioctl,
	/* every argument has the same layout for 32- and 64-bit callers */
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice dsmem_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= DSMEM_DEVICE_NAME,
	.fops	= &dsmem_fops,
	/* privileged commands check CAP_NET_ADMIN themselves */
	.mode	= 0666,
};

int dsmem_chrdev_init(void)
{
	return misc_register(&dsmem_misc);
}

void dsmem_chrdev_exit(void)
{
	misc_deregister(&dsmem_misc);
}
