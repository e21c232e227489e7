// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem_plant: the debug tier checking itself.  kreports_test loads it in
 * a debug-kernel guest to plant the two things the tier exists to catch,
 * a leak and a use after free, and expects scripts/guest.d/kreports to
 * fail on each: a tier that stopped seeing them would otherwise pass every
 * run.  Built against the debug kernel only (make kernel-debug).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

static char *plant = "";
module_param(plant, charp, 0400);
MODULE_PARM_DESC(plant, "what to plant at load: leak or uaf");

/* Through here, so that the compiler keeps what it cannot see used. */
static void *dsmem_plant_sink;

/*
 * Objects nothing points to any more: kmemleak's to find.  Its scan is
 * conservative and reads whole stacks, the dead part below the stack
 * pointer too, and a finished task's stack stays allocated in a cache:
 * a copy of the pointer left there by kmalloc's frames or our own would
 * count as a reference and hide the leak.  So the frames are scrubbed
 * after, and there are several leaks, each call overwriting what the one
 * before left at the same depth.
 */
#define DSMEM_PLANT_LEAKS	4
#define DSMEM_PLANT_SCRUB	512	/* bytes per frame */
#define DSMEM_PLANT_SCRUB_DEPTH	8	/* frames: 4 KiB below ours */

/*
 * Where the leaks are, in a form kmemleak's scan does not take for a
 * pointer (each address with its bits flipped): leaks to it while the
 * module is loaded, freed when it goes.  One that a stale copy hid from
 * kreports_test's scan must not turn up in the suite's own scan after
 * the run, where it would be taken for dsmem's: once this module is
 * gone, its frames no longer resolve, as dsmem's do not after rmmod.
 */
static unsigned long dsmem_plant_hidden[DSMEM_PLANT_LEAKS];

static noinline int dsmem_plant_leak(int i)
{
	void *p = kmalloc(192, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	memset(p, 0xa5, 192);
	WRITE_ONCE(dsmem_plant_hidden[i], ~(unsigned long)p);
	WRITE_ONCE(dsmem_plant_sink, p);
	WRITE_ONCE(dsmem_plant_sink, NULL);
	return 0;
}

static noinline void dsmem_plant_scrub(int depth)
{
	char frame[DSMEM_PLANT_SCRUB];

	/* the call first: as a tail call it would reuse this frame */
	if (depth > 1)
		dsmem_plant_scrub(depth - 1);
	memzero_explicit(frame, sizeof(frame));
}

static int dsmem_plant_leaks(void)
{
	int i, err;

	for (i = 0; i < DSMEM_PLANT_LEAKS; i++) {
		err = dsmem_plant_leak(i);
		if (err)
			return err;
	}
	dsmem_plant_scrub(DSMEM_PLANT_SCRUB_DEPTH);
	return 0;
}

/* A read of freed memory: KASAN's (or KFENCE's) to report. */
static noinline int dsmem_plant_uaf(void)
{
	char *p = kmalloc(64, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	WRITE_ONCE(dsmem_plant_sink, p);
	kfree(p);
	pr_info("dsmem_plant: read after free: %d\n",
		READ_ONCE(((char *)READ_ONCE(dsmem_plant_sink))[8]));
	WRITE_ONCE(dsmem_plant_sink, NULL);
	return 0;
}

static int __init dsmem_plant_init(void)
{
	if (!strcmp(plant, "leak"))
		return dsmem_plant_leaks();
	if (!strcmp(plant, "uaf"))
		return dsmem_plant_uaf();
	pr_err("dsmem_plant: plant=leak or plant=uaf\n");
	return -EINVAL;
}
module_init(dsmem_plant_init);

static void __exit dsmem_plant_exit(void)
{
	int i;

	for (i = 0; i < DSMEM_PLANT_LEAKS; i++)
		if (dsmem_plant_hidden[i])
			kfree((void *)~dsmem_plant_hidden[i]);
}
module_exit(dsmem_plant_exit);

MODULE_DESCRIPTION("dsmem debug tier: planted leak and use after free");
MODULE_LICENSE("Dual BSD/GPL");
