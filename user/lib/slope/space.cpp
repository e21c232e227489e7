// SPDX-License-Identifier: BSD-2-Clause
// Slope (DSUSER_1.5): the space, objects, allocation contexts and the
// inverse map.  Migration is in migrate.cpp.
//
// The inverse map (process memory, never migrated) maps every run of
// every object here to its object, so ds_slope_free() needs no context:
// a container's destructor frees into the right arena whatever context
// is open.  Runs given back are batched: one DSMEM_IOC_SLOPE_FREE per
// batch_runs runs or batch_bytes bytes, and whenever an object is
// destroyed.
#include "space.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

using namespace dsmem::slope::detail;

static_assert(sizeof(extent) == sizeof(struct dsmem_slope_extent));
static_assert(huge_unit == DSMEM_SLOPE_HUGE_SIZE);
static_assert(arena_huge == DS_SLOPE_HUGE && DS_SLOPE_HUGE == DSMEM_SLOPE_HUGE);
static_assert(DS_SLOPE_ROUNDS_MAX == DSMEM_SLOPE_ROUNDS_MAX);

namespace {

constexpr size_t batch_runs = 64;
constexpr uint64_t batch_bytes = 16ULL << 20;

std::mutex open_m;			// opening and closing the space
std::atomic<ds_slope *> current{nullptr};
// this thread's allocation contexts, innermost last
thread_local std::vector<ds_slope_obj *> contexts;
// a page call of a sub-allocator failed: the error text is ours
thread_local bool sub_touched;

void last_sub_error_clear()
{
	sub_touched = false;
}

// A sub-allocator's failure: our text when our page call failed, else one
// that says whose it was.
int sub_failed(int err, const char *what, ...) __attribute__((format(printf, 2, 3)));
int sub_failed(int err, const char *what, ...)
{
	char buf[128];
	va_list ap;

	if (sub_touched)
		return err;
	va_start(ap, what);
	vsnprintf(buf, sizeof(buf), what, ap);
	va_end(ap);
	return fail(err, "the object's sub-allocator failed %s: %s", buf, strerror(-err));
}

// Runs from the module's Slope range.
class device_source final : public run_source {
public:
	explicit device_source(int fd) : fd_(fd) {}

	int take(uint64_t len, bool huge, uint64_t *addr) override
	{
		return take_for(0, len, huge, addr);
	}

	int take_for(uint64_t object, uint64_t len, bool huge, uint64_t *addr) override
	{
		struct dsmem_ioc_slope_alloc a = {};

		if (len > DSMEM_SLOPE_LEASE_SIZE)
			return fail(-ENOMEM, "%llu bytes in one block: the module allocates "
				    "at most a lease (1 GiB) at a time",
				    static_cast<unsigned long long>(len));
		a.len = len;
		a.flags = (huge ? DSMEM_SLOPE_HUGE : 0) | (object ? 0 : DSMEM_SLOPE_NEW_OBJECT);
		a.object = object;
		if (ioctl(fd_, DSMEM_IOC_SLOPE_ALLOC, &a) < 0) {
			int err = -errno;
			if (err == -ENOMEM || err == -ENOSPC)
				return fail(err, "no Slope memory for %llu more bytes: no free lease "
					    "in the cluster, or no memory on this node",
					    static_cast<unsigned long long>(len));
			return fail(err, "DSMEM_IOC_SLOPE_ALLOC of %llu bytes failed: %s",
				    static_cast<unsigned long long>(len), strerror(-err));
		}
		*addr = a.addr;
		return 0;
	}

	// The module frees a batch whole or not at all: a refused batch is
	// tried again a run at a time, so that one bad run keeps no other.
	size_t give_back(const extent *runs, size_t n) override
	{
		size_t refused = 0;

		for (size_t off = 0; off < n; off += DSMEM_SLOPE_EXTENTS_MAX) {
			const size_t k = std::min<size_t>(n - off, DSMEM_SLOPE_EXTENTS_MAX);
			if (free_runs(runs + off, k))
				continue;
			for (size_t i = 0; i < k; i++)
				refused += k == 1 || !free_runs(runs + off + i, 1);
		}
		return refused;
	}

private:
	bool free_runs(const extent *runs, size_t n)
	{
		struct dsmem_ioc_slope_free f = {};

		f.extents = reinterpret_cast<uint64_t>(runs);
		f.nr = static_cast<uint32_t>(n);
		return ioctl(fd_, DSMEM_IOC_SLOPE_FREE, &f) == 0;
	}

	int fd_;
};

void flush_locked(ds_slope &sp)
{
	if (sp.pending.empty())
		return;
	// the module takes extents sorted and disjoint, as for MIGRATE
	std::sort(sp.pending.begin(), sp.pending.end(),
		  [](const extent &x, const extent &y) { return x.addr < y.addr; });
	sp.counters.free_batches++;
	sp.counters.free_failures += sp.backing->give_back(sp.pending.data(), sp.pending.size());
	sp.pending.clear();
	sp.pending_bytes = 0;
}

ds_slope_obj *owner_of(ds_slope &sp, uint64_t addr)
{
	std::shared_lock g(sp.inv_m);
	auto it = sp.inv.upper_bound(addr);

	if (it == sp.inv.begin())
		return nullptr;
	--it;
	return addr < it->second.end ? it->second.obj : nullptr;
}

int install(ds_slope *sp, ds_slope **spp)
{
	current.store(sp);
	*spp = sp;
	return 0;
}

// Attach fd to the node and map the whole Slope range at its address.
int attach_and_map(int fd, uint32_t node)
{
	struct dsmem_ioc_version v = {};
	struct dsmem_ioc_attach at = {};

	if (ioctl(fd, DSMEM_IOC_VERSION, &v) < 0)
		return fail(-errno, "DSMEM_IOC_VERSION failed: %s", strerror(errno));
	if (v.abi_version != DSMEM_ABI_VERSION)
		return fail(-EPROTO, "the dsmem module speaks ABI %u, this library %u",
			    v.abi_version, DSMEM_ABI_VERSION);
	if (!(v.features & DSMEM_FEAT_SLOPE))
		return fail(-EOPNOTSUPP, "the dsmem module has no Slope support");

	at.node_id = node;
	if (ioctl(fd, DSMEM_IOC_ATTACH, &at) < 0) {
		int err = -errno;
		if (err == -EPERM || err == -EACCES)
			return fail(err, "attaching to node %u needs CAP_NET_ADMIN", node);
		if (err == -ENOENT || err == -ENODEV)
			return fail(err, "there is no node %u on this host", node);
		return fail(err, "cannot attach to node %u: %s", node, strerror(-err));
	}

	void *want = reinterpret_cast<void *>(DSMEM_SLOPE_BASE);
	if (mmap(want, DSMEM_SLOPE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		 fd, 0) == MAP_FAILED) {
		int err = -errno;
		if (err == -EEXIST)
			return fail(err, "the Slope range %#llx-%#llx is taken: something else is "
				    "mapped there in this process",
				    DSMEM_SLOPE_BASE, DSMEM_SLOPE_BASE + DSMEM_SLOPE_SIZE);
		if (err == -ENOMEM)
			return fail(err, "no room for the 4 TiB Slope range in this process "
				    "(an address-space limit?)");
		return fail(err, "mapping the Slope range failed: %s", strerror(-err));
	}
	return 0;
}

}  // namespace

namespace dsmem::slope::detail {

int object_source::take(uint64_t len, bool huge, uint64_t *addr)
{
	ds_slope &sp = *obj_.sp;

	if (int ret = sp.backing->take_for(obj_.header, len, huge, addr))
		return ret;
	{
		std::lock_guard g(sp.m);
		sp.counters.runs_taken++;
		sp.counters.bytes_taken += len;
	}
	std::unique_lock g(sp.inv_m);
	sp.inv[*addr] = {*addr + len, &obj_};
	return 0;
}

size_t object_source::give_back(const extent *runs, size_t n)
{
	ds_slope &sp = *obj_.sp;
	{
		std::unique_lock g(sp.inv_m);
		for (size_t i = 0; i < n; i++)
			sp.inv.erase(runs[i].addr);
	}
	std::lock_guard g(sp.m);
	for (size_t i = 0; i < n; i++) {
		sp.pending.push_back(runs[i]);
		sp.pending_bytes += runs[i].len;
		sp.counters.runs_given++;
		sp.counters.bytes_given += runs[i].len;
	}
	if (sp.pending.size() >= batch_runs || sp.pending_bytes >= batch_bytes)
		flush_locked(sp);
	return 0;	// counted when the batch goes
}

int open_space(std::unique_ptr<run_source> backing, ds_slope **spp)
{
	std::lock_guard g(open_m);

	if (current.load())
		return fail(-EBUSY, "this process already has a Slope space open");
	auto *sp = new ds_slope;
	sp->backing = std::move(backing);
	sp->hi = UINT64_MAX;
	return install(sp, spp);
}

void unregister_runs(ds_slope_obj &obj)
{
	ds_slope &sp = *obj.sp;
	std::unique_lock g(sp.inv_m);

	std::erase_if(sp.inv, [&obj](const auto &e) { return e.second.obj == &obj; });
}

// A received object's runs, from its run table; -EBADMSG when one
// overlaps a run of another object.
int register_runs(ds_slope_obj &obj)
{
	ds_slope &sp = *obj.sp;
	const arena_header *h = obj.a->header();
	std::unique_lock g(sp.inv_m);

	for (uint32_t i = 0; i < h->nruns; i++) {
		const run_entry &r = h->runs[i];
		auto next = sp.inv.lower_bound(r.addr);
		bool overlap = next != sp.inv.end() && next->first < r.addr + r.len;
		if (next != sp.inv.begin())
			overlap |= std::prev(next)->second.end > r.addr;
		if (overlap) {
			std::erase_if(sp.inv, [&obj](const auto &e) { return e.second.obj == &obj; });
			return fail(-EBADMSG, "the object that arrived overlaps another object here");
		}
		sp.inv[r.addr] = {r.addr + r.len, &obj};
	}
	return 0;
}

void flush_frees(ds_slope &sp)
{
	std::lock_guard g(sp.m);
	flush_locked(sp);
}

ds_slope_obj *new_object(ds_slope &sp)
{
	auto *obj = new ds_slope_obj;
	obj->sp = &sp;
	std::lock_guard g(sp.m);
	sp.objects.insert(obj);
	return obj;
}

void delete_object(ds_slope_obj *obj)
{
	{
		std::lock_guard g(obj->sp->m);
		obj->sp->objects.erase(obj);
	}
	delete obj;
}

}  // namespace dsmem::slope::detail

DS_EXPORT int ds_slope_open(uint32_t node_id, struct ds_slope **spp)
{
	std::lock_guard g(open_m);

	if (!spp)
		return fail(-EINVAL, "no handle to fill");
	if (ds_slope *cur = current.load())
		return fail(-EBUSY, "this process already has a Slope space open (node %u)", cur->node);
	if (sysconf(_SC_PAGESIZE) != static_cast<long>(page_size))
		return fail(-EOPNOTSUPP, "Slope needs 4 KiB pages");

	int fd = open("/dev/" DSMEM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return fail(-ENOENT, "no /dev/" DSMEM_DEVICE_NAME
				    ": the dsmem module is not loaded");
		return fail(-errno, "cannot open /dev/" DSMEM_DEVICE_NAME ": %s", strerror(errno));
	}
	if (int ret = attach_and_map(fd, node_id)) {
		close(fd);
		return ret;
	}

	auto *sp = new ds_slope;
	sp->fd = fd;
	sp->node = node_id;
	sp->backing = std::make_unique<device_source>(fd);
	sp->lo = DSMEM_SLOPE_BASE;
	sp->hi = DSMEM_SLOPE_BASE + DSMEM_SLOPE_SIZE;
	sp->counters.node_id = node_id;
	return install(sp, spp);
}

DS_EXPORT int ds_slope_close(struct ds_slope *sp)
{
	std::lock_guard g(open_m);

	if (!sp)
		return 0;
	if (sp != current.load())
		return fail(-EINVAL, "not the process's Slope space");
	// objects received but never asked for: nobody else can free them
	for (;;) {
		ds_slope_obj *obj;
		{
			std::lock_guard gs(sp->m);
			if (sp->unclaimed.empty())
				break;
			obj = sp->unclaimed.front();
			sp->unclaimed.pop_front();
		}
		ds_slope_obj_destroy(obj);
	}
	{
		std::lock_guard gs(sp->m);
		if (!sp->objects.empty())
			return fail(-EBUSY, "%zu Slope objects are still alive: destroy them first",
				    sp->objects.size());
		flush_locked(*sp);
	}
	if (sp->fd >= 0) {
		munmap(reinterpret_cast<void *>(DSMEM_SLOPE_BASE), DSMEM_SLOPE_SIZE);
		close(sp->fd);
	}
	current.store(nullptr);
	delete sp;
	return 0;
}

DS_EXPORT struct ds_slope *ds_slope_get(void)
{
	return current.load();
}

DS_EXPORT const char *ds_slope_errmsg(void)
{
	return errmsg();
}

DS_EXPORT int ds_slope_describe(struct ds_slope *sp, struct ds_slope_info *info)
{
	if (!sp || !info)
		return fail(-EINVAL, "no space or nothing to fill");
	std::lock_guard g(sp->m);
	*info = sp->counters;
	info->objects = static_cast<uint32_t>(sp->objects.size());
	info->unclaimed = static_cast<uint32_t>(sp->unclaimed.size());
	info->pending_runs = static_cast<uint32_t>(sp->pending.size());
	return 0;
}

DS_EXPORT int ds_slope_obj_create(struct ds_slope *sp, size_t root_size, size_t root_align,
				  uint32_t flags, uint64_t type_tag, struct ds_slope_obj **objp)
{
	if (!sp || !objp)
		return fail(-EINVAL, "no space or no handle to fill");
	if (flags & ~DS_SLOPE_HUGE)
		return fail(-EINVAL, "unknown flags %#x", flags);

	ds_slope_obj *obj = new_object(*sp);
	arena_header *h;
	void *root;
	int ret = arena::create(obj->src, flags, type_tag, &h);
	if (ret) {
		delete_object(obj);
		return ret;
	}
	obj->a = std::make_unique<arena>(h, obj->src);
	// the arena's first block, in fresh (zero-filled) pages
	ret = obj->a->allocate(root_size, root_align, &root);
	if (ret) {
		obj->a->release();
		delete_object(obj);
		flush_frees(*sp);
		return ret;
	}
	h->root = root;
	obj->header = h->self;
	obj->type_tag = type_tag;
	obj->flags = flags;
	obj->root.store(root);
	*objp = obj;
	return 0;
}

DS_EXPORT int ds_slope_obj_destroy(struct ds_slope_obj *obj)
{
	if (!obj)
		return 0;
	if (uint32_t n = obj->contexts.load())
		return fail(-EBUSY, "%u allocation contexts are open on the object", n);
	// Whatever the migrations' outcome, the handle goes: their errors
	// only say whether there is still something to free.
	while (settle(*obj) == -EINTR)
		;
	if (obj->incoming_id)
		while (settle_incoming(*obj, true, nullptr) == -EINTR)
			;
	{
		std::lock_guard g(obj->m);
		if (obj->a && obj->state.load() == DS_SLOPE_OBJ_HERE)
			obj->a->release();
		else if (obj->a)	// a migration the module lost track of:
			unregister_runs(*obj);	// its pages are not ours to free
		obj->a.reset();
	}
	flush_frees(*obj->sp);
	delete_object(obj);
	return 0;
}

DS_EXPORT void *ds_slope_obj_root(const struct ds_slope_obj *obj)
{
	return obj ? obj->root.load() : nullptr;
}

DS_EXPORT int ds_slope_obj_describe(struct ds_slope_obj *obj, struct ds_slope_obj_info *info)
{
	if (!obj || !info)
		return fail(-EINVAL, "no object or nothing to fill");
	std::lock_guard g(obj->m);
	*info = {};
	info->header = obj->header;
	info->type_tag = obj->type_tag;
	info->flags = obj->flags;
	info->state = static_cast<uint32_t>(obj->state.load());
	info->contexts = obj->contexts.load();
	if (!obj->a)
		return 0;

	const arena_header *h = obj->a->header();
	const arena_usage u = obj->a->usage();
	info->root = reinterpret_cast<uint64_t>(h->root);
	info->runs = u.runs;
	info->extents = u.extents;
	info->pages = u.pages;
	info->large_runs = u.large_runs;
	info->free_pages = u.free_pages;
	info->slab_pages = h->slab_pages;
	info->medium_pages = h->medium_pages;
	info->live_blocks = h->live_blocks;
	info->live_bytes = h->live_bytes;
	info->sub_pages = h->sub_pages;
	return 0;
}

DS_EXPORT int ds_slope_obj_lookup(const void *p, struct ds_slope_obj **objp)
{
	ds_slope *sp = current.load();
	ds_slope_obj *obj = sp ? owner_of(*sp, reinterpret_cast<uint64_t>(p)) : nullptr;

	if (!objp)
		return fail(-EINVAL, "no handle to fill");
	if (!obj)
		return fail(-ENOENT, "%p is in no Slope object of this process", p);
	*objp = obj;
	return 0;
}

DS_EXPORT int ds_slope_ctx_push(struct ds_slope_obj *obj)
{
	if (!obj)
		return fail(-EINVAL, "no object to allocate for");
	std::lock_guard g(obj->m);
	switch (obj->state.load()) {
	case DS_SLOPE_OBJ_MIGRATING:
		return fail(-EBUSY, "the object is migrating: nothing can be allocated for it");
	case DS_SLOPE_OBJ_GONE:
		return fail(-ENOENT, "the object has left this node");
	}
	contexts.push_back(obj);
	obj->contexts++;
	return 0;
}

DS_EXPORT int ds_slope_ctx_pop(struct ds_slope_obj *obj)
{
	if (contexts.empty() || contexts.back() != obj)
		return fail(-EINVAL, "not the innermost allocation context of this thread");
	contexts.pop_back();
	obj->contexts--;
	return 0;
}

DS_EXPORT int ds_slope_alloc(size_t size, size_t align, void **p)
{
	if (!p)
		return fail(-EINVAL, "nowhere to put the block");
	if (contexts.empty())
		return fail(-ENOENT, "no allocation context: open one for the object to "
			    "allocate for (ds_slope_ctx_push, mig_ptr::create_context)");
	ds_slope_obj *obj = contexts.back();
	std::lock_guard g(obj->m);
	if (obj->sub) {
		ds_slope_pages pg{obj};
		last_sub_error_clear();
		int ret = obj->sub->alloc(obj->sub_state, &pg, size, align, p);
		if (ret < 0)
			return sub_failed(ret, "allocating %zu bytes", size);
		if (ret == 0)
			return 0;
	}
	return obj->a->allocate(size, align, p);
}

DS_EXPORT int ds_slope_free(void *p)
{
	if (!p)
		return 0;
	ds_slope *sp = current.load();
	ds_slope_obj *obj = sp ? owner_of(*sp, reinterpret_cast<uint64_t>(p)) : nullptr;
	if (!obj)
		return fail(-EINVAL, "%p is in no Slope object of this process", p);
	std::lock_guard g(obj->m);
	// it left between the lookup and the lock
	if (!obj->a)
		return fail(-EINVAL, "%p belongs to an object that has left this node", p);
	if (obj->a->sub_page(p)) {
		if (!obj->sub)
			return fail(-EINVAL, "%p is in a sub-allocator's page, and the object has "
				    "no sub-allocator installed", p);
		ds_slope_pages pg{obj};
		last_sub_error_clear();
		if (int ret = obj->sub->free(obj->sub_state, &pg, p))
			return sub_failed(ret, "freeing %p", p);
		return 0;
	}
	return obj->a->deallocate(p);
}

DS_EXPORT int ds_slope_obj_suballoc(struct ds_slope_obj *obj, const struct ds_slope_suballoc *ops,
				    void *state)
{
	if (!obj)
		return fail(-EINVAL, "no object");
	if (ops && (!ops->alloc || !ops->free))
		return fail(-EINVAL, "a sub-allocator needs both alloc and free");
	if (state && owner_of(*obj->sp, reinterpret_cast<uint64_t>(state)) != obj)
		return fail(-EINVAL, "the sub-allocator's state %p is not in the object's "
			    "memory: it would not travel with it", state);
	std::lock_guard g(obj->m);
	if (!obj->a)
		return fail(-ENOENT, "the object has left this node");
	if (!ops && obj->a->header()->sub_pages)
		return fail(-EBUSY, "the sub-allocator still holds %llu pages of the object",
			    static_cast<unsigned long long>(obj->a->header()->sub_pages));
	obj->sub = ops;
	obj->sub_state = ops ? state : nullptr;
	return 0;
}

DS_EXPORT int ds_slope_pages_take(struct ds_slope_pages *pg, void **page)
{
	if (!pg || !page)
		return fail(-EINVAL, "no pages or nowhere to put the page");
	int ret = pg->obj->a->sub_page_take(page);
	sub_touched |= ret != 0;
	return ret;
}

DS_EXPORT int ds_slope_pages_give(struct ds_slope_pages *pg, void *page)
{
	if (!pg)
		return fail(-EINVAL, "no pages");
	int ret = pg->obj->a->sub_page_give(page);
	sub_touched |= ret != 0;
	return ret;
}
