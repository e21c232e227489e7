// SPDX-License-Identifier: BSD-2-Clause
// Slope's process-wide state behind the C ABI: the space (the Slope range
// mapped from /dev/dsmem), its objects, the inverse map from pages to
// objects, and migrations.  Shared by space.cpp and migrate.cpp, and by
// the unit tests, which open a space on plain memory (open_space()).
//
// Locks, outermost first: opening and closing the space; an object's
// incoming_m; a migration's m; an object's m; then the space's m or the
// inverse map's inv_m, never both.  No lock is held while on_stop runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <vector>

#include <linux/dsmem.h>

#include <dsmem/ds.h>

#include "arena.hpp"

namespace dsmem::slope::detail {

// An object's runs pass through here: into the inverse map when taken,
// out of it and into the space's batch of frees when given back.
class object_source final : public run_source {
public:
	explicit object_source(ds_slope_obj &obj) : obj_(obj) {}
	int take(uint64_t len, bool huge, uint64_t *addr) override;
	size_t give_back(const extent *runs, size_t n) override;

private:
	ds_slope_obj &obj_;
};

// One outgoing migration, shared by its handle and its object.
struct migration {
	ds_slope *sp = nullptr;
	ds_slope_obj *obj = nullptr;	// until it ends
	uint64_t id = 0;
	ds_slope_stop_fn on_stop = nullptr;
	void *arg = nullptr;

	std::mutex m;			// held from the start until the id is known
	std::condition_variable cv;
	bool driving = false;		// a thread is in the module's wait
	bool app_stopped = false;	// on_stop has returned
	bool handed_over = false;
	bool ended = false;
	int lost = 0;			// the module's wait failed: gave up on it
	ds_slope_mig_stats st = {};	// as last seen
};

// Open the process's space on backing instead of /dev/dsmem: objects,
// contexts and the inverse map work, migration does not (-EOPNOTSUPP).
// For the unit tests; not exported.
int open_space(std::unique_ptr<run_source> backing, ds_slope **spp);

// For migrate.cpp.
void unregister_runs(ds_slope_obj &obj);
int register_runs(ds_slope_obj &obj);
void flush_frees(ds_slope &sp);
ds_slope_obj *new_object(ds_slope &sp);
void delete_object(ds_slope_obj *obj);
// Until no outgoing migration of obj is in flight, and until a received
// object has every page; -EINTR and other errors of the module's wait.
int settle(ds_slope_obj &obj);
int settle_incoming(ds_slope_obj &obj, bool wait, ds_slope_mig_stats *st);
void to_stats(const struct dsmem_ioc_slope_mig &k, ds_slope_mig_stats *st);
// The source's and the destination's ends of a handover (the unit tests
// play both on plain memory): forget an object whose pages have gone;
// adopt the object at a received migration's cookie.
void left(ds_slope_obj &obj);
int adopt(ds_slope &sp, const struct dsmem_ioc_slope_mig &a, ds_slope_obj **out);

}  // namespace dsmem::slope::detail

struct ds_slope {
	int fd = -1;			// /dev/dsmem; -1: plain memory (tests)
	uint32_t node = 0;
	std::unique_ptr<dsmem::slope::detail::run_source> backing;
	uint64_t lo = 0, hi = 0;	// where its objects' runs can lie

	std::mutex m;			// what follows, to the inverse map
	std::set<ds_slope_obj *> objects;
	std::deque<ds_slope_obj *> unclaimed;	// received, of a type not asked for
	std::vector<dsmem::slope::detail::extent> pending;	// to give back
	uint64_t pending_bytes = 0;
	ds_slope_info counters = {};

	// the inverse map: first byte of each run -> its end and its object
	struct owned {
		uint64_t end;
		ds_slope_obj *obj;
	};
	std::shared_mutex inv_m;
	std::map<uint64_t, owned> inv;
};

struct ds_slope_obj {
	ds_slope *sp = nullptr;
	dsmem::slope::detail::object_source src{*this};

	std::mutex m;			// a, state, outgoing
	std::unique_ptr<dsmem::slope::detail::arena> a;	// null once gone
	std::atomic<void *> root{nullptr};		// null once gone
	std::atomic<int> state{DS_SLOPE_OBJ_HERE};
	std::atomic<uint32_t> contexts{0};
	uint64_t header = 0;		// the arena header: the cookie
	uint64_t type_tag = 0;
	uint32_t flags = 0;
	std::shared_ptr<dsmem::slope::detail::migration> outgoing;	// in flight
	// the application's allocator inside the object's pages (under m);
	// not migrated: a receiver installs it again
	const ds_slope_suballoc *sub = nullptr;
	void *sub_state = nullptr;

	// the migration that brought it here; id 0: created here
	std::mutex incoming_m;
	uint64_t incoming_id = 0;
	bool incoming_ended = false;
	ds_slope_mig_stats incoming = {};	// as last seen
};

// What a sub-allocator's callbacks reach the object's pages through:
// valid during the call only, under the object's m.
struct ds_slope_pages {
	ds_slope_obj *obj;
};

struct ds_slope_mig {
	std::shared_ptr<dsmem::slope::detail::migration> m;
};
