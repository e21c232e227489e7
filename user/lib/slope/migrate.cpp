// SPDX-License-Identifier: BSD-2-Clause
// Slope migration (DSUSER_1.5).  The module copies the pages; the library
// does the object's part: which pages it has (its arena's runs, passed as
// extents), telling the application to stop touching it (on_stop) before
// MIG_STOP, forgetting it once it has left, and on the destination,
// finding the arena at the cookie and rebuilding the inverse map from its
// run table.
//
// A migration is driven by whichever thread waits for it
// (ds_slope_mig_wait(), or a settle or destroy of its object), one at a
// time: the others sleep until it ends or the driver is interrupted.
#include "space.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/ioctl.h>

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

using namespace dsmem::slope::detail;

constexpr bool same(int a, int b)
{
	return a == b;
}
static_assert(same(DS_SLOPE_MIG_PREFILL, DSMEM_SLOPE_MIG_PREFILL) &&
	      same(DS_SLOPE_MIG_STOPPING, DSMEM_SLOPE_MIG_STOPPING) &&
	      same(DS_SLOPE_MIG_HANDED_OVER, DSMEM_SLOPE_MIG_HANDED_OVER) &&
	      same(DS_SLOPE_MIG_DONE, DSMEM_SLOPE_MIG_DONE) &&
	      same(DS_SLOPE_MIG_FAILED, DSMEM_SLOPE_MIG_FAILED) &&
	      same(DS_SLOPE_MIG_INCOMING, DSMEM_SLOPE_MIG_INCOMING));

namespace {

int mig_get(int fd, uint64_t id, uint32_t flags, uint32_t state, struct dsmem_ioc_slope_mig *a)
{
	*a = {};
	a->id = id;
	a->flags = flags;
	a->state = state;
	return ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, a) < 0 ? -errno : 0;
}

bool finished(uint32_t state)
{
	return state == DSMEM_SLOPE_MIG_DONE || state == DSMEM_SLOPE_MIG_FAILED;
}

// The module keeps an ended migration's record until told; failing to
// forget it changes nothing for the object.
void forget(int fd, uint64_t id)
{
	struct dsmem_ioc_slope_mig a;
	(void)mig_get(fd, id, DSMEM_SLOPE_MIG_RELEASE, 0, &a);
}

void publish(migration &mg, const struct dsmem_ioc_slope_mig &a)
{
	std::lock_guard g(mg.m);
	to_stats(a, &mg.st);
	mg.st.id = mg.id;
}

// Failed before the handover: the object is this node's again, intact.
void stayed(ds_slope_obj &obj)
{
	std::lock_guard g(obj.m);
	obj.state.store(DS_SLOPE_OBJ_HERE);
	obj.a->hold_runs(false);
}

// Have the application stop, then hand the object over.  *a: the state
// after, HANDED_OVER, or FAILED when the module gave up meanwhile.
int stop(migration &mg, int fd, struct dsmem_ioc_slope_mig *a)
{
	if (!mg.app_stopped) {
		if (mg.on_stop) {
			ds_slope_mig_stats st;
			{
				std::lock_guard g(mg.m);
				st = mg.st;
			}
			mg.on_stop(mg.arg, &st);
		}
		mg.app_stopped = true;
	}

	struct dsmem_ioc_slope_mig s = {};
	s.id = mg.id;
	if (ioctl(fd, DSMEM_IOC_SLOPE_MIG_STOP, &s) == 0) {
		*a = s;
		return 0;
	}
	int err = -errno;
	if (err == -EINTR)
		return fail(err, "interrupted while handing the object over");
	// refused because the migration failed meanwhile: that is its outcome
	if (mig_get(fd, mg.id, 0, 0, a) || a->state != DSMEM_SLOPE_MIG_FAILED)
		return fail(err, "handing the object over failed: %s", strerror(-err));
	return 0;
}

// Follow the migration until it ends; the caller holds the driving token.
// -EINTR, or another error of the module's, when cut short.
int drive(migration &mg)
{
	const int fd = mg.sp->fd;
	struct dsmem_ioc_slope_mig a;

	for (;;) {
		if (int ret = mig_get(fd, mg.id, DSMEM_SLOPE_MIG_WAIT, mg.st.state, &a)) {
			if (ret == -EINTR)
				return fail(ret, "interrupted while waiting for the migration");
			return fail(ret, "waiting for the migration failed: %s", strerror(-ret));
		}
		if (a.state == DSMEM_SLOPE_MIG_STOPPING) {
			publish(mg, a);
			if (int ret = stop(mg, fd, &a))
				return ret;
		}
		publish(mg, a);
		if ((a.state == DSMEM_SLOPE_MIG_HANDED_OVER || a.state == DSMEM_SLOPE_MIG_DONE) &&
		    !mg.handed_over) {
			mg.handed_over = true;
			left(*mg.obj);
		}
		if (a.state == DSMEM_SLOPE_MIG_FAILED && !mg.handed_over)
			stayed(*mg.obj);
		if (finished(a.state)) {
			forget(fd, mg.id);
			return 0;
		}
	}
}

// Until the migration has ended, driving it when no other thread does.
// An error other than -EINTR ends it too: the module lost track of it,
// and the object stays as it was (migrating: neither usable nor freed).
int wait_end(migration &mg)
{
	std::unique_lock g(mg.m);

	while (!mg.ended) {
		if (mg.driving) {
			mg.cv.wait(g);
			continue;
		}
		mg.driving = true;
		g.unlock();
		int ret = drive(mg);
		g.lock();
		mg.driving = false;
		if (ret != -EINTR) {
			mg.ended = true;
			mg.lost = ret;
			std::lock_guard go(mg.obj->m);
			mg.obj->outgoing.reset();
			mg.obj = nullptr;
		}
		mg.cv.notify_all();
		if (ret)
			return ret;
	}
	return 0;
}

// An ended migration's outcome, with its text.
int outcome(const migration &mg)
{
	if (mg.lost)
		return fail(mg.lost, "lost track of the migration: %s", strerror(-mg.lost));
	if (mg.st.state == DSMEM_SLOPE_MIG_DONE)
		return 0;
	const int err = mg.st.error ? mg.st.error : -EIO;
	if (!mg.handed_over)
		return fail(err, "the migration to node %u failed before the handover (%s): "
			    "the object is still here", mg.st.peer, strerror(-err));
	return fail(err, "the migration to node %u failed after the handover (%s): "
		    "%llu units could not be pulled", mg.st.peer, strerror(-err),
		    static_cast<unsigned long long>(mg.st.failed_units));
}

// Under obj.m: whether obj can start migrating from sp.
int can_migrate(const ds_slope &sp, const ds_slope_obj &obj)
{
	switch (obj.state.load()) {
	case DS_SLOPE_OBJ_MIGRATING:
		return fail(-EBUSY, "the object is already migrating");
	case DS_SLOPE_OBJ_GONE:
		return fail(-ENOENT, "the object has left this node");
	}
	if (uint32_t n = obj.contexts.load())
		return fail(-EBUSY, "%u allocation contexts are open on the object: nothing can "
			    "be allocated for it once it migrates", n);
	if (const char *why = arena::check(obj.a->header(), sp.lo, sp.hi, 0))
		return fail(-EINVAL, "the object cannot migrate: %s", why);
	if (sp.fd < 0)
		return fail(-EOPNOTSUPP, "this Slope space is not on /dev/dsmem: its objects "
			    "cannot migrate");
	return 0;
}

int migrate_error(int err, uint32_t dst, uint32_t node)
{
	switch (err) {
	case -ENOENT:
	case -ENOTCONN:
		return fail(err, "node %u is not a connected peer of node %u", dst, node);
	case -EINVAL:
		return fail(err, "the dsmem module refused the migration's extents or options");
	case -EDQUOT:
		return fail(err, "node %u refused the object: with what node %u's other migrations "
			    "hold there it is over its slope_peer_bytes (received ones do not count)",
			    dst, node);
	}
	return fail(err, "DSMEM_IOC_SLOPE_MIGRATE to node %u failed: %s", dst, strerror(-err));
}

}  // namespace

namespace dsmem::slope::detail {

// Handed over: the object's pages are gone from this node.
void left(ds_slope_obj &obj)
{
	std::lock_guard g(obj.m);
	obj.a.reset();
	obj.root.store(nullptr);
	obj.state.store(DS_SLOPE_OBJ_GONE);
	unregister_runs(obj);
}

// The object at a received migration's cookie, checked and adopted: its
// runs in the inverse map, held until every page has arrived.
int adopt(ds_slope &sp, const struct dsmem_ioc_slope_mig &a, ds_slope_obj **out)
{
	const uint64_t cookie = a.cookie;
	const auto pages = static_cast<unsigned long long>(a.pages);

	if (cookie < sp.lo || cookie >= sp.hi || cookie % page_size)
		return fail(-EBADMSG, "the object from node %u names no Slope address (%#llx): "
			    "its %llu pages stay allocated here", a.peer,
			    static_cast<unsigned long long>(cookie), pages);
	auto *h = reinterpret_cast<arena_header *>(cookie);
	if (const char *why = arena::check(h, sp.lo, sp.hi, a.pages))
		return fail(-EBADMSG, "the %llu pages from node %u hold no Slope object (%s): "
			    "they stay allocated here", pages, a.peer, why);

	ds_slope_obj *obj = new_object(sp);
	obj->a = std::make_unique<arena>(h, obj->src);
	obj->header = cookie;
	obj->type_tag = h->type_tag;
	obj->flags = h->flags;
	obj->incoming_id = a.id;
	to_stats(a, &obj->incoming);
	obj->incoming.id = a.id;
	if (int ret = register_runs(*obj)) {
		delete_object(obj);
		return ret;
	}
	obj->incoming_ended = finished(a.state);
	if (obj->incoming_ended)
		forget(sp.fd, a.id);
	obj->a->hold_runs(!obj->incoming_ended);
	obj->root.store(h->root);
	*out = obj;
	return 0;
}

void to_stats(const struct dsmem_ioc_slope_mig &k, ds_slope_mig_stats *st)
{
	*st = {};
	st->id = k.id;
	st->state = k.state;
	st->error = k.error;
	st->peer = k.peer;
	st->unit_shift = k.unit_shift;
	st->cookie = k.cookie;
	st->pages = k.pages;
	st->rounds = k.rounds;
	st->sent_units = k.sent_units;
	st->dirty_units = k.dirty_units;
	st->pulled_units = k.pulled_units;
	st->failed_units = k.failed_units;
	st->fault_waits = k.fault_waits;
	st->prefill_ns = k.prefill_ns;
	st->stop_ns = k.stop_ns;
	st->no_owner_ns = k.no_owner_ns;
	st->pull_ns = k.pull_ns;
	st->total_ns = k.total_ns;
	st->first_round_ns = k.first_round_ns;
}

int settle(ds_slope_obj &obj)
{
	std::shared_ptr<migration> mg;
	{
		std::lock_guard g(obj.m);
		mg = obj.outgoing;
	}
	return mg ? wait_end(*mg) : 0;
}

int settle_incoming(ds_slope_obj &obj, bool wait, ds_slope_mig_stats *st)
{
	std::lock_guard g(obj.incoming_m);
	ds_slope_mig_stats &in = obj.incoming;
	const int fd = obj.sp->fd;

	if (!obj.incoming_id)
		return fail(-ENOENT, "the object was created on this node");
	while (!obj.incoming_ended) {
		struct dsmem_ioc_slope_mig a;
		if (int ret = mig_get(fd, obj.incoming_id, wait ? DSMEM_SLOPE_MIG_WAIT : 0,
				      in.state, &a)) {
			if (ret == -EINTR)
				return fail(ret, "interrupted while waiting for the object's pages");
			return fail(ret, "asking for the incoming migration failed: %s",
				    strerror(-ret));
		}
		to_stats(a, &in);
		in.id = obj.incoming_id;
		if (finished(a.state)) {
			forget(fd, obj.incoming_id);
			obj.incoming_ended = true;
			std::lock_guard go(obj.m);
			obj.a->hold_runs(false);
		} else if (!wait) {
			break;
		}
	}
	if (st)
		*st = in;
	if (obj.incoming_ended && in.state == DSMEM_SLOPE_MIG_FAILED)
		return fail(in.error ? in.error : -EIO, "the object arrived from node %u "
			    "incomplete (%s): %llu units could not be pulled, touching them "
			    "raises SIGBUS", in.peer, strerror(in.error ? -in.error : EIO),
			    static_cast<unsigned long long>(in.failed_units));
	return 0;
}

}  // namespace dsmem::slope::detail

DS_EXPORT int ds_slope_obj_settle(struct ds_slope_obj *obj)
{
	if (!obj)
		return fail(-EINVAL, "no object");
	return settle(*obj);
}

DS_EXPORT int ds_slope_obj_incoming(struct ds_slope_obj *obj, int wait,
				    struct ds_slope_mig_stats *st)
{
	if (!obj)
		return fail(-EINVAL, "no object");
	return settle_incoming(*obj, wait, st);
}

DS_EXPORT int ds_slope_migrate(struct ds_slope_obj *obj, uint32_t dst_node,
			       const struct ds_slope_migrate_opts *opts, struct ds_slope_mig **migp)
{
	const ds_slope_migrate_opts o = opts ? *opts : ds_slope_migrate_opts{};

	if (!obj || !migp)
		return fail(-EINVAL, "no object or no handle to fill");
	if (o.reserved0 || std::any_of(std::begin(o.reserved), std::end(o.reserved),
				       [](uint64_t r) { return r != 0; }))
		return fail(-EINVAL, "reserved fields of the options are set");
	if (o.max_rounds > DS_SLOPE_ROUNDS_MAX)
		return fail(-EINVAL, "at most %d prefill rounds", DS_SLOPE_ROUNDS_MAX);
	ds_slope &sp = *obj->sp;
	if (sp.fd >= 0 && dst_node == sp.node)
		return fail(-EINVAL, "node %u is this node", dst_node);
	// its pages must all be here before they can go on
	if (obj->incoming_id) {
		if (int ret = settle_incoming(*obj, true, nullptr))
			return ret;
	}

	auto mg = std::make_shared<migration>();
	mg->sp = &sp;
	mg->obj = obj;
	mg->on_stop = o.on_stop;
	mg->arg = o.arg;
	// held until the id is known: a settle from another thread waits
	std::unique_lock mg_lock(mg->m);
	std::vector<extent> ext;
	uint64_t bytes = 0, root = 0;
	{
		std::lock_guard g(obj->m);
		if (int ret = can_migrate(sp, *obj))
			return ret;
		ext = obj->a->extents();
		root = reinterpret_cast<uint64_t>(obj->a->header()->root);
		for (const extent &e : ext)
			bytes += e.len;
		const uint64_t units = bytes / obj->a->header()->unit;
		if (ext.size() > DSMEM_SLOPE_EXTENTS_MAX)
			return fail(-E2BIG, "the object has %zu extents; a migration takes at "
				    "most %u", ext.size(), DSMEM_SLOPE_EXTENTS_MAX);
		if (units > DSMEM_SLOPE_MIG_UNITS_MAX)
			return fail(-E2BIG, "the object is %llu units; a migration moves at most %u",
				    static_cast<unsigned long long>(units), DSMEM_SLOPE_MIG_UNITS_MAX);
		obj->state.store(DS_SLOPE_OBJ_MIGRATING);
		obj->a->hold_runs(true);
		obj->outgoing = mg;
	}

	struct dsmem_ioc_slope_migrate k = {};
	k.extents = reinterpret_cast<uint64_t>(ext.data());
	k.nr = static_cast<uint32_t>(ext.size());
	k.dst_node = dst_node;
	k.flags = obj->flags & DS_SLOPE_HUGE ? DSMEM_SLOPE_HUGE : 0;
	k.max_rounds = o.max_rounds;
	k.stop_pages = o.stop_pages;
	k.cookie = obj->header;
	// the root's page and the header's go with the handover: what
	// receive() and the first use touch find them in place
	k.root = root;
	if (ioctl(sp.fd, DSMEM_IOC_SLOPE_MIGRATE, &k) < 0) {
		const int err = -errno;
		mg->ended = true;
		std::lock_guard g(obj->m);
		obj->state.store(DS_SLOPE_OBJ_HERE);
		obj->a->hold_runs(false);
		obj->outgoing.reset();
		return migrate_error(err, dst_node, sp.node);
	}
	mg->id = k.id;
	mg->st.id = k.id;
	mg->st.state = DSMEM_SLOPE_MIG_PREFILL;
	mg->st.peer = dst_node;
	mg->st.cookie = obj->header;
	mg->st.pages = bytes >> page_shift;
	mg->st.unit_shift = obj->flags & DS_SLOPE_HUGE ? DSMEM_SLOPE_HUGE_SHIFT : page_shift;
	*migp = new ds_slope_mig{mg};
	return 0;
}

DS_EXPORT int ds_slope_mig_wait(struct ds_slope_mig *mig, struct ds_slope_mig_stats *st)
{
	if (!mig)
		return fail(-EINVAL, "no migration");
	migration &mg = *mig->m;
	int ret = wait_end(mg);
	std::lock_guard g(mg.m);
	if (st)
		*st = mg.st;
	return ret ? ret : outcome(mg);
}

DS_EXPORT int ds_slope_mig_get(struct ds_slope_mig *mig, struct ds_slope_mig_stats *st)
{
	if (!mig || !st)
		return fail(-EINVAL, "no migration or nothing to fill");
	migration &mg = *mig->m;
	{
		std::lock_guard g(mg.m);
		if (mg.ended) {
			*st = mg.st;
			return 0;
		}
	}
	struct dsmem_ioc_slope_mig a;
	int ret = mig_get(mg.sp->fd, mg.id, 0, 0, &a);
	std::lock_guard g(mg.m);
	// it may have ended, and been forgotten, meanwhile
	if (mg.ended) {
		*st = mg.st;
		return 0;
	}
	if (ret)
		return fail(ret, "asking for the migration failed: %s", strerror(-ret));
	to_stats(a, st);
	st->id = mg.id;
	return 0;
}

DS_EXPORT void ds_slope_mig_free(struct ds_slope_mig *mig)
{
	if (!mig)
		return;
	while (wait_end(*mig->m) == -EINTR)
		;
	delete mig;
}

DS_EXPORT int ds_slope_recv(struct ds_slope *sp, uint64_t type_tag, int timeout_ms,
			    struct ds_slope_obj **objp, struct ds_slope_mig_stats *st)
{
	ds_slope_obj *obj = nullptr;

	if (!sp || !objp)
		return fail(-EINVAL, "no space or no handle to fill");
	{
		std::lock_guard g(sp->m);
		auto it = std::find_if(sp->unclaimed.begin(), sp->unclaimed.end(),
				       [type_tag](const ds_slope_obj *o) {
					       return !type_tag || o->type_tag == type_tag;
				       });
		if (it != sp->unclaimed.end()) {
			obj = *it;
			sp->unclaimed.erase(it);
		}
	}
	if (obj) {
		if (st) {
			std::lock_guard g(obj->incoming_m);
			*st = obj->incoming;
		}
		*objp = obj;
		return 0;
	}
	if (sp->fd < 0)
		return fail(-EOPNOTSUPP, "this Slope space is not on /dev/dsmem: nothing arrives");

	struct dsmem_ioc_slope_mig a = {};
	if (timeout_ms) {
		a.flags = DSMEM_SLOPE_MIG_WAIT;
		a.timeout_ms = timeout_ms < 0 ? 0 : static_cast<uint64_t>(timeout_ms);
	}
	if (ioctl(sp->fd, DSMEM_IOC_SLOPE_RECV, &a) < 0) {
		const int err = -errno;
		if (err == -ETIMEDOUT)
			return fail(err, "no object arrived within %d ms", timeout_ms);
		if (!timeout_ms && (err == -EAGAIN || err == -ENOENT))
			return fail(-EAGAIN, "no object has arrived");
		if (err == -EINTR)
			return fail(err, "interrupted while waiting for an object");
		return fail(err, "DSMEM_IOC_SLOPE_RECV failed: %s", strerror(-err));
	}
	if (int ret = adopt(*sp, a, &obj))
		return ret;
	if (type_tag && obj->type_tag != type_tag) {
		std::lock_guard g(sp->m);
		sp->unclaimed.push_back(obj);
		return fail(-EPROTOTYPE, "the object that arrived from node %u is of another type "
			    "(tag %#llx, not %#llx): it is kept for a receive of its type", a.peer,
			    static_cast<unsigned long long>(obj->type_tag),
			    static_cast<unsigned long long>(type_tag));
	}
	if (st)
		to_stats(a, st);
	*objp = obj;
	return 0;
}
