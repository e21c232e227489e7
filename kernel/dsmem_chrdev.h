/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the state of one open /dev/dsmem, made by open and gone with
 * release (dsmem_chrdev.c).  Each part belongs to the code that serves it.
 */
#ifndef _DSMEM_CHRDEV_H
#define _DSMEM_CHRDEV_H

#include <linux/list.h>
#include <linux/mutex.h>

struct dsmem_xfer_file;

struct dsmem_file {
	/*
	 * The data path's part: the node attached, registered buffers,
	 * tasks (rdm/dsmem_xfer.c).  Counted on its own: a task's
	 * completion may outlive the descriptor's release.
	 */
	struct dsmem_xfer_file *xfer;
	/* Slope's part: DSMEM_IOC_SLOPE_DIRTY's trackers, under slope_lock */
	struct mutex slope_lock;
	struct list_head slope_tracks;
};

/* dsmem_chrdev.c */
int dsmem_chrdev_init(void);
void dsmem_chrdev_exit(void);

#endif /* _DSMEM_CHRDEV_H */
