// SPDX-License-Identifier: BSD-2-Clause
// libdsuser data path: one-sided transfers on /dev/dsmem.
//
// With the module's shared rings (the default where it has them) a
// transfer is an entry in the submission ring and its outcome an entry in
// the completion ring: no system call while the module's submission
// thread is awake and the completion comes within the spin.  Ring entries
// name registered buffers only, so plain pointers go through a registered
// bounce buffer (up to kBounce bytes), or as they are when they fall in a
// buffer this handle registered.
//
// Without rings, or for a plain pointer larger than the bounce buffer, a
// batch is one DSMEM_IOC_SUBMIT and a synchronous call a batch of one that
// the same ioctl waits for and releases.
//
// A synchronous batch with a deadline (xfer_run_until) that is not done
// by then is given up on: it becomes an orphan, whose completions (on the
// rings) or whose task (on the ioctl path) the handle takes and drops
// later; its transfers go on meanwhile.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <vector>

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dsmem.h>

#include "ds_internal.hpp"
#include "xfer_ring.hpp"

using namespace dsmem::detail;

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

// The C ABI mirrors the module's: statuses are handed through as they are.
static_assert(sizeof(ds_transfer_status) == sizeof(dsmem_xfer_status));
static_assert(offsetof(ds_transfer_status, status) == offsetof(dsmem_xfer_status, status));
static_assert(offsetof(ds_transfer_status, bytes) == offsetof(dsmem_xfer_status, bytes));
static_assert(DS_BATCH_REQS_MAX == DSMEM_SUBMIT_REQS_MAX);
constexpr bool same(int a, int b) { return a == b; }
static_assert(same(DS_TASK_PENDING, DSMEM_TASK_PENDING) &&
	      same(DS_TASK_COMPLETE, DSMEM_TASK_COMPLETE) &&
	      same(DS_TASK_FAILED, DSMEM_TASK_FAILED));
static_assert(same(DS_OP_READ, DSMEM_XFER_READ) && same(DS_OP_WRITE, DSMEM_XFER_WRITE) &&
	      same(DS_OP_CAS, DSMEM_XFER_CAS) && same(DS_OP_FAA, DSMEM_XFER_FAA));

namespace {

constexpr size_t kBounce = 64 * 1024;		// plain pointers up to this
constexpr uint32_t kRingEntries = 256;		// the SQ's; the CQ twice that
// A ring task's id and its entries' user_data carry this bit; the
// module's task ids are below 2^31.
constexpr uint64_t kRingTask = 1ull << 63;
// a synchronous call's entries: kSyncMark | its sequence << 32 | the
// request's index, so that a call never counts an earlier one's
constexpr uint64_t kSyncMark = 1ull << 62;
constexpr uint32_t kSyncSeqMask = (1u << 30) - 1;
// the bound on one sleep, after which the wait looks at the SQ again
constexpr uint64_t kSleepNs = 10 * 1000 * 1000;

struct mr_range {
	uintptr_t addr;
	size_t len;
	uint32_t mr;
};

// A batch submitted through the rings, until it is released.
struct ring_task {
	uint32_t gen = 0;
	bool used = false;
	uint32_t done = 0;
	std::vector<ds_transfer_status> st;
};

}  // namespace

struct ds_xfer {
	// A synchronous call cut short -- by a signal, or given up on at its
	// deadline: its task is still in flight and, for an atomic, still to
	// write the word it owns.  On the rings (task 0) it is the entries of
	// sync sequence seq, left of them still to complete; the sequence is
	// not used again before they have.
	struct orphan {
		uint64_t task;
		std::unique_ptr<uint64_t> word;
		uint32_t seq = 0;
		uint32_t left = 0;
	};

	int fd = -1;
	uint8_t req_flags = 0;		// DSMEM_XFER_F_* on every request
	bool submit_timeout = false;	// the module has DSMEM_FEAT_SUBMIT_TIMEOUT
	bool has_not_after = false;	// and DSMEM_FEAT_NOT_AFTER
	std::unique_ptr<uint64_t> word;	// where an atomic's old value lands
	std::vector<orphan> orphans;

	// the ring path; null without it
	std::unique_ptr<dsmem::detail::xfer_ring> ring;
	void *bounce = nullptr;		// kBounce bytes, registered as bounce_mr
	uint32_t bounce_mr = 0;
	std::vector<mr_range> mrs;	// what ds_mr_reg registered
	std::vector<ring_task> tasks;	// slots; a task id names slot and gen
	std::vector<uint32_t> free_tasks;
	size_t live_tasks = 0;
	// the synchronous call in progress
	uint32_t sync_seq = 0;
	uint32_t sync_left = 0;
	uint32_t sync_err_idx = UINT32_MAX;
	int32_t sync_err = 0;
	// Readiness for poll() on the rings, made by the first ds_xfer_fd():
	// an epoll set of the descriptor (completions not yet taken) and an
	// eventfd, readable while ring tasks the library took are done and
	// not yet queried.  Handles never polled pay nothing for it.
	size_t tasks_done = 0;		// done ring tasks, not yet released
	mutable int poll_fd = -1;
	mutable int done_fd = -1;

	~ds_xfer()
	{
		ring.reset();		// unmapped before the descriptor goes
		if (poll_fd >= 0)
			close(poll_fd);
		if (done_fd >= 0)
			close(done_fd);
		if (fd >= 0)
			close(fd);
		// the module's pins keep the pages of what is still in flight
		if (bounce)
			munmap(bounce, kBounce);
	}
};

namespace dsmem::detail {

int to_xfer_req(const ds_transfer_request &in, struct dsmem_xfer_req *out)
{
	uint64_t remote;

	if (in.opcode > DSMEM_XFER_OP_MAX)
		return -EINVAL;
	if (__builtin_add_overflow(in.target_id, in.target_offset, &remote))
		return -EINVAL;
	// an offset past the segment would silently name the next one
	if ((remote & ~DSMEM_GADDR_OFF_MASK) != (in.target_id & ~DSMEM_GADDR_OFF_MASK))
		return -EINVAL;
	*out = {};
	out->opcode = static_cast<uint8_t>(in.opcode);
	out->mr = in.mr;
	out->local = in.source_offset;
	out->remote = remote;
	out->len = in.length;
	out->compare_add = in.compare_add;
	out->swap = in.swap;
	return 0;
}

}  // namespace dsmem::detail

namespace {

int task_ioctl(ds_xfer *x, uint64_t task, uint32_t flags, int *state,
	       struct dsmem_xfer_status *st, size_t n)
{
	struct dsmem_ioc_task t = {};

	t.task = task;
	t.flags = flags;
	if (st && n) {
		t.status = reinterpret_cast<uintptr_t>(st);
		t.nr = static_cast<uint32_t>(n);
	}
	if (ioctl(x->fd, DSMEM_IOC_TASK, &t) < 0)
		return -errno;
	if (state)
		*state = static_cast<int>(t.state);
	return 0;
}

// Release what interrupted synchronous calls left behind, once done, so
// they do not hold task slots (DSMEM_TASKS_MAX) for the life of the fd.
// The rings' orphans go as their last completion is taken (complete()).
void reap(ds_xfer *x)
{
	for (size_t i = 0; i < x->orphans.size();) {
		if (!x->orphans[i].task) {
			i++;
			continue;
		}
		int state = DSMEM_TASK_PENDING;
		int ret = task_ioctl(x, x->orphans[i].task, DSMEM_TASK_RELEASE,
				     &state, nullptr, 0);

		if (ret == -EINTR || (!ret && state == DSMEM_TASK_PENDING)) {
			i++;
			continue;
		}
		// released, or the module no longer knows it: the word is ours
		x->orphans.erase(x->orphans.begin() + static_cast<ptrdiff_t>(i));
	}
}

// A batch of one, waited for and released by the same ioctl: the kernel
// waits uninterruptibly (a transfer always ends, by completion or by the
// flush of a closing connection), so a synchronous call is one syscall and
// never leaves a task behind.
int sync_one(ds_xfer *x, struct dsmem_xfer_req &req)
{
	return dsmem::detail::xfer_run(x, &req, 1);
}

uint64_t mono_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
	       static_cast<uint64_t>(ts.tv_nsec);
}

// The deadline timeout_ns from now on CLOCK_MONOTONIC; 0 (none) for 0.
uint64_t deadline_of(uint64_t timeout_ns)
{
	uint64_t d;

	if (!timeout_ns)
		return 0;
	if (__builtin_add_overflow(mono_ns(), timeout_ns, &d))
		return 0;	/* centuries away: no bound */
	return d;
}

// Room for one more orphan, made before the call that may leave one:
// its record must not fail to be kept once the call is given up on.
int orphan_room(ds_xfer *x)
{
	try {
		x->orphans.reserve(x->orphans.size() + 1);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	}
	return 0;
}

}  // namespace

// The ring path.
namespace {

// A plain pointer that falls in a buffer this handle registered: the
// registration and the offset into it.
bool find_mr(const ds_xfer *x, uintptr_t p, uint64_t len, uint32_t *mr,
	     uint64_t *off)
{
	for (const auto &r : x->mrs) {
		if (p >= r.addr && len <= r.len && p - r.addr <= r.len - len) {
			*mr = r.mr;
			*off = p - r.addr;
			return true;
		}
	}
	return false;
}

// One completion: a synchronous call's, or a ring task's.
void complete(ds_xfer *x, const struct dsmem_cqe &c)
{
	uint64_t ud = c.user_data;
	auto idx = static_cast<uint32_t>(ud);

	if (ud & kRingTask) {
		auto slot = static_cast<uint32_t>(ud >> 32) & 0x7fffffffu;

		if (slot < x->tasks.size() && idx < x->tasks[slot].st.size()) {
			ring_task &t = x->tasks[slot];

			t.st[idx] = {c.status, 0, c.bytes};
			if (++t.done == t.st.size() && !x->tasks_done++ && x->done_fd >= 0)
				(void)eventfd_write(x->done_fd, 1);
		}
		return;
	}
	if (!(ud & kSyncMark))
		return;
	auto seq = static_cast<uint32_t>(ud >> 32) & kSyncSeqMask;
	if (x->sync_left && seq == x->sync_seq) {
		if (c.status && idx < x->sync_err_idx) {
			x->sync_err_idx = idx;
			x->sync_err = c.status;
		}
		x->sync_left--;
		return;
	}
	// a call given up on: dropped, and its sequence free once all came
	for (auto it = x->orphans.begin(); it != x->orphans.end(); ++it) {
		if (!it->task && it->seq == seq) {
			if (!--it->left)
				x->orphans.erase(it);
			break;
		}
	}
}

// The next synchronous call's sequence: never one whose given-up
// entries may still complete.
uint32_t next_sync_seq(ds_xfer *x)
{
	uint32_t seq = x->sync_seq;
	bool taken;

	do {
		seq = (seq + 1) & kSyncSeqMask;
		taken = false;
		for (const auto &o : x->orphans)
			taken |= !o.task && o.seq == seq;
	} while (taken);
	return seq;
}

uint32_t reap_ring(ds_xfer *x)
{
	return x->ring->reap([x](const struct dsmem_cqe &c) { complete(x, c); });
}

// Reap what came, or wait (spin, then sleep) for something to come.
// 0 when the caller should look at its condition again; -EINTR only when
// interruptible; -ETIME once past deadline (CLOCK_MONOTONIC ns; 0: none)
// with nothing come; another -errno when the module refused the wait.
int ring_wait(ds_xfer *x, bool interruptible, uint64_t deadline = 0)
{
	uint64_t sleep_ns = kSleepNs;

	if (reap_ring(x))
		return 0;
	if (deadline) {
		uint64_t now = mono_ns();

		if (now >= deadline)
			return -ETIME;
		sleep_ns = std::min(sleep_ns, deadline - now);
	}
	int ret = x->ring->wait_cqe(sleep_ns);
	if (ret == -ETIME || (ret == -EINTR && !interruptible))
		ret = 0;
	if (!ret)
		reap_ring(x);
	return ret;
}

// Push n entries as the SQ makes room, the i-th with user_data tag | i;
// *pushed says how many went, all of them unless it failed (or the
// deadline, as ring_wait's, passed while the SQ was full).
int ring_push(ds_xfer *x, const struct dsmem_xfer_req *reqs, size_t n,
	      uint64_t tag, uint64_t deadline = 0, size_t *pushed = nullptr,
	      uint64_t not_after = 0)
{
	size_t next = 0;
	int ret = 0;

	while (next < n) {
		uint32_t room = x->ring->sq_space();

		if (!room) {
			// a wake-up lost to a failed ioctl is retried here
			ret = ring_wait(x, false, deadline);
			if (ret)
				break;
			continue;
		}
		for (; room && next < n; room--, next++)
			x->ring->push(reqs[next], tag | next, not_after);
		// a failed wake-up is retried by the wait, which wakes too
		(void)x->ring->submit();
	}
	if (pushed)
		*pushed = next;
	return ret;
}

// A synchronous batch on the rings: every request names a registered
// buffer.  Like DSMEM_SUBMIT_WAIT, the first failed request's status;
// -ETIME when not done by deadline (CLOCK_MONOTONIC ns; 0: none).  A call
// that returns before all its entries completed leaves an orphan, of
// which orphan_room() made room for the record.
int ring_run(ds_xfer *x, const struct dsmem_xfer_req *reqs, size_t n,
	     uint64_t deadline = 0)
{
	size_t pushed = 0;

	x->sync_seq = next_sync_seq(x);
	x->sync_left = static_cast<uint32_t>(n);
	x->sync_err_idx = UINT32_MAX;
	x->sync_err = 0;
	int ret = ring_push(x, reqs, n,
			    kSyncMark | static_cast<uint64_t>(x->sync_seq) << 32,
			    deadline, &pushed);
	// A transfer always ends, so the wait does too; like the ioctl
	// path's, it outlasts signals, and buffers are free on return --
	// unless the caller gave a deadline and it passed.
	while (!ret && x->sync_left)
		ret = ring_wait(x, false, deadline);
	if (!x->sync_left)
		return x->sync_err;	/* all done, even if just too late */
	// what was pushed and has not completed yet completes later
	auto left = static_cast<uint32_t>(pushed - (n - x->sync_left));
	x->sync_left = 0;
	if (left && x->orphans.size() < x->orphans.capacity())
		x->orphans.push_back({0, nullptr, x->sync_seq, left});
	return ret;
}

bool all_registered(const struct dsmem_xfer_req *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!reqs[i].mr)
			return false;
	return true;
}

}  // namespace

int dsmem::detail::xfer_run(ds_xfer *x, const struct dsmem_xfer_req *reqs, size_t n)
{
	return xfer_run_until(x, reqs, n, 0);
}

int dsmem::detail::xfer_run_until(ds_xfer *x, const struct dsmem_xfer_req *reqs,
				  size_t n, uint64_t timeout_ns)
{
	struct dsmem_ioc_submit sub = {};
	uint64_t deadline = deadline_of(timeout_ns);

	if (n < 1 || n > DSMEM_SUBMIT_REQS_MAX)
		return -EINVAL;
	// the record of a batch given up on must find room
	if (deadline || x->ring) {
		if (int ret = orphan_room(x))
			return ret;
	}
	// a task given up on is released once done, whichever path runs now
	if (!x->orphans.empty())
		reap(x);
	if (x->ring && all_registered(reqs, n))
		return ring_run(x, reqs, n, deadline);
	sub.reqs = reinterpret_cast<uintptr_t>(reqs);
	sub.nr = static_cast<uint32_t>(n);
	sub.req_size = sizeof(*reqs);
	sub.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE;
	// an older module would refuse the field (-E2BIG): it waits as ever
	if (deadline && x->submit_timeout)
		sub.timeout_ns = timeout_ns;
	if (ioctl(x->fd, DSMEM_IOC_SUBMIT, &sub) < 0)
		return -errno;
	// given up on, the task is kept (not released) under its id; done,
	// it was released (task 0), whatever its status says
	if (sub.timeout_ns && sub.result == -ETIME && sub.task) {
		x->orphans.push_back({sub.task, nullptr});	/* room made */
		return -ETIME;
	}
	return sub.result;
}

namespace {

int atomic_one(ds_xfer *x, uint8_t op, uint64_t gaddr, uint64_t compare_add,
	       uint64_t swap, uint64_t *old)
{
	struct dsmem_xfer_req req = {};

	if (!x->ring && !x->word) {
		x->word.reset(new (std::nothrow) uint64_t(0));
		if (!x->word)
			return -ENOMEM;
	}
	req.opcode = op;
	req.flags = x->req_flags;
	req.local = reinterpret_cast<uintptr_t>(x->word.get());
	req.remote = gaddr;
	req.len = sizeof(uint64_t);
	req.compare_add = compare_add;
	req.swap = swap;
	if (x->ring) {
		// the word is the bounce buffer's first
		req.mr = x->bounce_mr;
		req.local = 0;
		int ret = ring_run(x, &req, 1);
		if (!ret && old)
			memcpy(old, x->bounce, sizeof(*old));
		return ret;
	}
	int ret = sync_one(x, req);
	if (!ret && old)
		*old = *x->word;
	return ret;
}

int transfer_one(ds_xfer *x, uint8_t op, uint64_t gaddr, const void *buf, size_t len)
{
	struct dsmem_xfer_req req = {};

	req.opcode = op;
	req.flags = x->req_flags;
	req.local = reinterpret_cast<uintptr_t>(buf);
	req.remote = gaddr;
	req.len = len;
	uint64_t off;
	if (find_mr(x, req.local, len, &req.mr, &off)) {
		// in a buffer this handle registered: no copy, no pinning
		req.local = off;
		return x->ring ? ring_run(x, &req, 1) : sync_one(x, req);
	}
	if (x->ring) {
		if (len && len <= kBounce) {
			if (op == DSMEM_XFER_WRITE)
				memcpy(x->bounce, buf, len);
			req.mr = x->bounce_mr;
			req.local = 0;
			int ret = ring_run(x, &req, 1);
			if (!ret && op == DSMEM_XFER_READ)
				memcpy(const_cast<void *>(buf), x->bounce, len);
			return ret;
		}
	}
	// larger than the bounce buffer: pinned for this call, no copy
	return sync_one(x, req);
}

}  // namespace

namespace {

// The bounce buffer and the rings; -EOPNOTSUPP when the module has none.
int ring_open(ds_xfer *x, const struct ds_xfer_attr &a)
{
	struct dsmem_ioc_mr_reg r = {};
	auto ring = std::make_unique<dsmem::detail::xfer_ring>();

	x->bounce = mmap(nullptr, kBounce, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->bounce == MAP_FAILED) {
		x->bounce = nullptr;
		return -errno;
	}
	// a child's copy-on-write would split it from the pinned pages
	madvise(x->bounce, kBounce, MADV_DONTFORK);
	r.addr = reinterpret_cast<uintptr_t>(x->bounce);
	r.len = kBounce;
	r.flags = DSMEM_MR_WRITABLE;
	if (ioctl(x->fd, DSMEM_IOC_MR_REG, &r) < 0)
		return -errno;
	x->bounce_mr = r.handle;
	if (int ret = ring->setup(x->fd, a.ring_entries ? a.ring_entries : kRingEntries,
				  a.idle_us))
		return ret;
	ring->set_spin_ns(static_cast<uint64_t>(a.spin_us) * 1000);
	x->ring = std::move(ring);
	return 0;
}

// What ring_open made before it was refused.
void ring_drop(ds_xfer *x)
{
	struct dsmem_ioc_mr_dereg d = {};

	x->ring.reset();
	if (x->bounce_mr) {
		d.handle = x->bounce_mr;
		(void)ioctl(x->fd, DSMEM_IOC_MR_DEREG, &d);
		x->bounce_mr = 0;
	}
	if (x->bounce) {
		munmap(x->bounce, kBounce);
		x->bounce = nullptr;
	}
}

}  // namespace

DS_EXPORT int ds_xfer_open_attr(uint32_t node_id, const struct ds_xfer_attr *attr,
				struct ds_xfer **xp)
{
	struct ds_xfer_attr a = DS_XFER_ATTR_INIT;
	std::unique_ptr<ds_xfer> x(new (std::nothrow) ds_xfer);
	struct dsmem_ioc_version v = {};
	struct dsmem_ioc_attach at = {};

	if (attr) {
		// size-versioned: what a newer caller adds must be zero
		if (attr->size < DS_XFER_ATTR_SIZE_VER0)
			return -EINVAL;
		const auto *tail = reinterpret_cast<const uint8_t *>(attr);
		for (size_t i = sizeof(a); i < attr->size; i++)
			if (tail[i])
				return -E2BIG;
		memcpy(&a, attr, std::min<size_t>(attr->size, sizeof(a)));
		if (a.flags & ~DS_XFER_FLAGS_ALL || a.reserved ||
		    a.ring_entries > DSMEM_RING_ENTRIES_MAX)
			return -EINVAL;
	}
	if (!x)
		return -ENOMEM;
	x->fd = open("/dev/" DSMEM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (x->fd < 0)
		return -errno;
	if (ioctl(x->fd, DSMEM_IOC_VERSION, &v) < 0)
		return -errno;
	if (v.abi_version != DSMEM_ABI_VERSION)
		return -EPROTO;
	if (!(v.features & DSMEM_FEAT_RDM))
		return -EOPNOTSUPP;
	x->submit_timeout = v.features & DSMEM_FEAT_SUBMIT_TIMEOUT;
	x->has_not_after = v.features & DSMEM_FEAT_NOT_AFTER;
	if (a.flags & DS_XFER_UNORDERED) {
		if (!(v.features & DSMEM_FEAT_MULTIPATH))
			return -EOPNOTSUPP;
		x->req_flags = DSMEM_XFER_F_UNORDERED;
	}
	at.node_id = node_id;
	if (ioctl(x->fd, DSMEM_IOC_ATTACH, &at) < 0)
		return -errno;
	if (!(a.flags & DS_XFER_NO_RINGS) && (v.features & DSMEM_FEAT_RINGS)) {
		// refused (the module's rings are all taken) or not to be had
		// (memory, locked-memory limit): the ioctl path, as before
		if (ring_open(x.get(), a))
			ring_drop(x.get());
	}
	*xp = x.release();
	return 0;
}

DS_EXPORT int ds_xfer_open(uint32_t node_id, struct ds_xfer **xp)
{
	return ds_xfer_open_attr(node_id, nullptr, xp);
}

DS_EXPORT int ds_xfer_rings(const struct ds_xfer *x)
{
	return x->ring ? 1 : 0;
}

DS_EXPORT int ds_xfer_set_spin(struct ds_xfer *x, uint32_t spin_us)
{
	if (!x->ring)
		return -EOPNOTSUPP;
	x->ring->set_spin_ns(static_cast<uint64_t>(spin_us) * 1000);
	return 0;
}

DS_EXPORT void ds_xfer_close(struct ds_xfer *x)
{
	if (!x)
		return;
	if (!x->orphans.empty())
		reap(x);
	// tasks still in flight may write their words after close(): leave
	// those words allocated rather than let the module write freed memory
	for (auto &o : x->orphans)
		(void)o.word.release();
	delete x;
}

DS_EXPORT int ds_xfer_fd(const struct ds_xfer *x)
{
	struct epoll_event ev = {};

	if (!x->ring)
		return x->fd;
	if (x->poll_fd >= 0)
		return x->poll_fd;
	// On the rings the library takes completions of every task while
	// it waits for one, so the descriptor alone would not show a task
	// it already took: poll both that and the tasks it holds done.
	x->done_fd = eventfd(x->tasks_done ? 1 : 0, EFD_CLOEXEC | EFD_NONBLOCK);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (x->done_fd < 0 || ep < 0)
		goto err;
	ev.events = EPOLLIN;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, x->fd, &ev) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, x->done_fd, &ev))
		goto err;
	x->poll_fd = ep;
	return ep;
err:
	int ret = -errno;
	if (ep >= 0)
		close(ep);
	if (x->done_fd >= 0)
		close(x->done_fd);
	x->done_fd = -1;
	return ret;
}

DS_EXPORT int ds_mr_reg(struct ds_xfer *x, void *addr, size_t len, uint32_t *mr)
{
	struct dsmem_ioc_mr_reg r = {};

	r.addr = reinterpret_cast<uintptr_t>(addr);
	r.len = len;
	r.flags = DSMEM_MR_WRITABLE;	// reads land in registered buffers
	try {
		x->mrs.reserve(x->mrs.size() + 1);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	}
	if (ioctl(x->fd, DSMEM_IOC_MR_REG, &r) < 0)
		return -errno;
	// plain pointers into it go zero-copy on the rings
	x->mrs.push_back({reinterpret_cast<uintptr_t>(addr), len, r.handle});
	*mr = r.handle;
	return 0;
}

DS_EXPORT int ds_mr_dereg(struct ds_xfer *x, uint32_t mr)
{
	struct dsmem_ioc_mr_dereg d = {};

	if (x->ring && mr == x->bounce_mr)
		return -EINVAL;	/* the library's own */
	d.handle = mr;
	if (ioctl(x->fd, DSMEM_IOC_MR_DEREG, &d) < 0)
		return -errno;
	for (auto it = x->mrs.begin(); it != x->mrs.end(); ++it) {
		if (it->mr == mr) {
			x->mrs.erase(it);
			break;
		}
	}
	return 0;
}

DS_EXPORT int ds_read(struct ds_xfer *x, uint64_t gaddr, void *buf, size_t len)
{
	return transfer_one(x, DSMEM_XFER_READ, gaddr, buf, len);
}

DS_EXPORT int ds_write(struct ds_xfer *x, uint64_t gaddr, const void *buf,
		       size_t len)
{
	return transfer_one(x, DSMEM_XFER_WRITE, gaddr, buf, len);
}

DS_EXPORT int ds_cas(struct ds_xfer *x, uint64_t gaddr, uint64_t expect,
		     uint64_t desired, uint64_t *old)
{
	return atomic_one(x, DSMEM_XFER_CAS, gaddr, expect, desired, old);
}

DS_EXPORT int ds_faa(struct ds_xfer *x, uint64_t gaddr, uint64_t add,
		     uint64_t *old)
{
	return atomic_one(x, DSMEM_XFER_FAA, gaddr, add, 0, old);
}

namespace {

int ring_submit(ds_xfer *x, const std::vector<struct dsmem_xfer_req> &kreqs,
		uint64_t not_after, uint64_t *task)
{
	uint32_t slot;

	if (x->live_tasks >= DSMEM_TASKS_MAX)
		return -EAGAIN;		/* as the module says */
	try {
		if (x->free_tasks.empty()) {
			x->tasks.emplace_back();
			// so that a release's push_back cannot throw
			x->free_tasks.reserve(x->tasks.size());
			x->free_tasks.push_back(static_cast<uint32_t>(x->tasks.size() - 1));
		}
		slot = x->free_tasks.back();
		x->tasks[slot].st.assign(kreqs.size(), {});
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	}
	x->free_tasks.pop_back();
	ring_task &t = x->tasks[slot];
	t.used = true;
	t.done = 0;
	t.gen = (t.gen + 1) & 0x7fffffffu;
	x->live_tasks++;
	uint64_t tag = kRingTask | static_cast<uint64_t>(slot) << 32;
	*task = kRingTask | static_cast<uint64_t>(t.gen) << 32 | slot;
	// queued in full before returning: a batch beyond the SQ's room
	// waits here for the module to take what went before
	return ring_push(x, kreqs.data(), kreqs.size(), tag, 0, nullptr, not_after);
}

int ring_query(ds_xfer *x, uint64_t task, bool wait, bool release, int *state,
	       struct ds_transfer_status *st, size_t n)
{
	auto slot = static_cast<uint32_t>(task);
	auto gen = static_cast<uint32_t>(task >> 32) & 0x7fffffffu;

	if (slot >= x->tasks.size() || !x->tasks[slot].used ||
	    x->tasks[slot].gen != gen)
		return -ENOENT;
	if (st && n > x->tasks[slot].st.size())
		return -EINVAL;
	reap_ring(x);
	while (wait && x->tasks[slot].done < x->tasks[slot].st.size()) {
		if (int ret = ring_wait(x, true))
			return ret;
	}
	ring_task &t = x->tasks[slot];
	if (t.done < t.st.size()) {
		if (state)
			*state = DS_TASK_PENDING;
		return 0;
	}
	bool failed = false;
	for (const auto &s : t.st)
		failed |= s.status != 0;
	if (state)
		*state = failed ? DS_TASK_FAILED : DS_TASK_COMPLETE;
	if (st)
		std::copy_n(t.st.begin(), n, st);
	if (release) {
		t.used = false;
		t.st.clear();
		x->free_tasks.push_back(slot);	/* reserved: cannot throw */
		x->live_tasks--;
		eventfd_t v;
		if (!--x->tasks_done && x->done_fd >= 0)
			(void)eventfd_read(x->done_fd, &v);
	}
	return 0;
}

}  // namespace

namespace {

int batch_submit(struct ds_xfer *x, const struct ds_transfer_request *reqs, size_t n,
		 uint64_t not_after, uint64_t *task)
{
	struct dsmem_ioc_submit sub = {};
	std::vector<struct dsmem_xfer_req> kreqs;

	if (!reqs || n < 1 || n > DS_BATCH_REQS_MAX)
		return -EINVAL;
	if (not_after && !x->has_not_after)
		return -EOPNOTSUPP;
	try {
		kreqs.resize(n);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	}
	// the whole batch is checked before the handle is looked at
	for (size_t i = 0; i < n; i++) {
		if (int ret = to_xfer_req(reqs[i], &kreqs[i]))
			return ret;
	}
	bool on_ring = x->ring != nullptr;
	for (size_t i = 0; i < n; i++) {
		kreqs[i].flags = x->req_flags;
		if (on_ring && !kreqs[i].mr) {
			uint64_t off = 0;

			on_ring = find_mr(x, kreqs[i].local, kreqs[i].len,
					  &kreqs[i].mr, &off);
			if (on_ring)
				kreqs[i].local = off;
		}
	}
	if (on_ring)
		return ring_submit(x, kreqs, not_after, task);
	// plain pointers outside any registration: pinned by the ioctl
	for (size_t i = 0; i < n; i++) {
		if (!reqs[i].mr) {
			kreqs[i].mr = 0;
			kreqs[i].local = reqs[i].source_offset;
		}
	}
	if (!x->orphans.empty())
		reap(x);
	sub.reqs = reinterpret_cast<uintptr_t>(kreqs.data());
	sub.nr = static_cast<uint32_t>(n);
	sub.req_size = sizeof(struct dsmem_xfer_req);
	sub.not_after_ns = not_after;
	if (ioctl(x->fd, DSMEM_IOC_SUBMIT, &sub) < 0)
		return -errno;
	*task = sub.task;
	return 0;
}

}  // namespace

DS_EXPORT int ds_batch_submit(struct ds_xfer *x,
			      const struct ds_transfer_request *reqs, size_t n,
			      uint64_t *task)
{
	return batch_submit(x, reqs, n, 0, task);
}

DS_EXPORT int ds_batch_submit_until(struct ds_xfer *x,
				    const struct ds_transfer_request *reqs, size_t n,
				    uint64_t not_after_ns, uint64_t *task)
{
	return batch_submit(x, reqs, n, not_after_ns, task);
}

DS_EXPORT int ds_task_query(struct ds_xfer *x, uint64_t task, int wait,
			    int release, int *state,
			    struct ds_transfer_status *st, size_t n)
{
	uint32_t flags = (wait ? DSMEM_TASK_WAIT : 0) | (release ? DSMEM_TASK_RELEASE : 0);

	if (task & kRingTask) {
		if (!x->ring)
			return -ENOENT;
		return ring_query(x, task, wait, release, state, st, n);
	}
	if (st && n > UINT32_MAX)
		return -EINVAL;
	return task_ioctl(x, task, flags, state,
			  reinterpret_cast<struct dsmem_xfer_status *>(st), n);
}
