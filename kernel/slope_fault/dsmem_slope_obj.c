// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem Slope: the objects a node holds pages of, for the administrator
 * (netlink slope-get).  A run allocated for an object, or arrived with
 * it, is an interval of pages; frees and departures may cut any part of
 * any run, so runs are split and trimmed as pages go.
 */
#include <linux/interval_tree_generic.h>
#include <linux/slab.h>

#include "dsmem_slope.h"

#define RUN_START(r)	((r)->start)
#define RUN_LAST(r)	((r)->last)

INTERVAL_TREE_DEFINE(struct dsmem_slope_run, rb, pgoff_t, subtree_last,
		     RUN_START, RUN_LAST, static __maybe_unused, dsmem_slope_run_it)

static struct dsmem_slope_run *dsmem_slope_run_new(struct dsmem_slope_obj *obj,
						   pgoff_t start, pgoff_t last)
{
	struct dsmem_slope_run *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (r) {
		r->start = start;
		r->last = last;
		r->obj = obj;
	}
	return r;
}

int dsmem_slope_runs_add(struct dsmem_slope *s, u64 obj_addr, pgoff_t start,
			 unsigned long n)
{
	pgoff_t key = dsmem_slope_idx(obj_addr);
	struct dsmem_slope_obj *obj;
	struct dsmem_slope_run *r;
	int ret;

	lockdep_assert_held(&s->alloc_lock);
	obj = xa_load(&s->objs, key);
	if (!obj) {
		obj = kzalloc(sizeof(*obj), GFP_KERNEL);
		if (!obj)
			return -ENOMEM;
		obj->addr = obj_addr;
		ret = xa_insert(&s->objs, key, obj, GFP_KERNEL);
		if (ret) {
			kfree(obj);
			return ret;
		}
	}
	r = dsmem_slope_run_new(obj, start, start + n - 1);
	if (!r) {
		if (!obj->runs) {
			xa_erase(&s->objs, key);
			kfree(obj);
		}
		return -ENOMEM;
	}
	dsmem_slope_run_it_insert(r, &s->runs);
	obj->pages += n;
	obj->runs++;
	return 0;
}

static void dsmem_slope_obj_less(struct dsmem_slope *s,
				 struct dsmem_slope_obj *obj, u64 pages,
				 int runs)
{
	obj->pages -= min(obj->pages, pages);
	obj->runs += runs;
	if (obj->runs)
		return;
	xa_erase(&s->objs, dsmem_slope_idx(obj->addr));
	kfree(obj);
}

/* Pages [start, start + n) are no longer here: cut them out of runs. */
void dsmem_slope_runs_remove(struct dsmem_slope *s, pgoff_t start,
			     unsigned long n)
{
	pgoff_t last = start + n - 1;
	struct dsmem_slope_run *r;

	lockdep_assert_held(&s->alloc_lock);
	while ((r = dsmem_slope_run_it_iter_first(&s->runs, start, last))) {
		pgoff_t from = max(r->start, start), to = min(r->last, last);
		struct dsmem_slope_obj *obj = r->obj;
		u64 gone = to - from + 1;
		int runs = -1;

		dsmem_slope_run_it_remove(r, &s->runs);
		/* what is left after the cut: a tail, a head, or both */
		if (r->last > to) {
			struct dsmem_slope_run *tail;

			tail = dsmem_slope_run_new(obj, to + 1, r->last);
			if (tail) {
				dsmem_slope_run_it_insert(tail, &s->runs);
				runs++;
			} else {
				/* no memory: forgotten rather than kept wrong */
				gone += r->last - to;
			}
		}
		if (r->start < from) {
			r->last = from - 1;
			dsmem_slope_run_it_insert(r, &s->runs);
			runs++;
		} else {
			kfree(r);
		}
		dsmem_slope_obj_less(s, obj, gone, runs);
	}
}

void dsmem_slope_runs_fini(struct dsmem_slope *s)
{
	struct dsmem_slope_obj *obj;
	struct dsmem_slope_run *r;
	unsigned long i;

	while ((r = dsmem_slope_run_it_iter_first(&s->runs, 0, ULONG_MAX))) {
		dsmem_slope_run_it_remove(r, &s->runs);
		kfree(r);
	}
	xa_for_each(&s->objs, i, obj)
		kfree(obj);
	xa_destroy(&s->objs);
}
