// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: module counters.
 *
 * Per-CPU so that the data path never bounces a cache line for accounting;
 * a read sums all CPUs.  A reset races benignly with concurrent increments:
 * an increment that lands during the reset may survive it.
 */
#include <linux/build_bug.h>
#include <linux/percpu.h>

#include "dsmem_priv.h"

DEFINE_PER_CPU(struct dsmem_stats, dsmem_stats);

static const char * const dsmem_stat_names[] = {
	[DSMEM_STAT_DEV_ADDED]		= "dev_added",
	[DSMEM_STAT_DEV_REMOVED]	= "dev_removed",
	[DSMEM_STAT_DEV_ADD_FAILED]	= "dev_add_failed",
	[DSMEM_STAT_IOCTL_CALLS]	= "ioctl_calls",
	[DSMEM_STAT_IOCTL_UNKNOWN]	= "ioctl_unknown",
	[DSMEM_STAT_IOCTL_SHORT]	= "ioctl_short",
	[DSMEM_STAT_IOCTL_NONZERO_TAIL]	= "ioctl_nonzero_tail",
	[DSMEM_STAT_IOCTL_DENIED]	= "ioctl_denied",
	[DSMEM_STAT_IOCTL_FAULT]	= "ioctl_fault",
	[DSMEM_STAT_NL_EVENTS]		= "nl_events",
	[DSMEM_STAT_NL_EVENTS_DROPPED]	= "nl_events_dropped",
};

const char *dsmem_stat_name(enum dsmem_stat s)
{
	BUILD_BUG_ON(ARRAY_SIZE(dsmem_stat_names) != DSMEM_STAT_NR);
	return dsmem_stat_names[s];
}

u64 dsmem_stat_read(enum dsmem_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(&dsmem_stats, cpu)->v[s]);
	return sum;
}

void dsmem_stats_reset(void)
{
	int cpu, s;

	for_each_possible_cpu(cpu)
		for (s = 0; s < DSMEM_STAT_NR; s++)
			WRITE_ONCE(per_cpu_ptr(&dsmem_stats, cpu)->v[s], 0);
}
