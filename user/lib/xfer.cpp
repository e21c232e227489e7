// SPDX-License-Identifier: BSD-2-Clause
// libdsuser data path: one-sided transfers on /dev/dsmem.  A batch is one
// DSMEM_IOC_SUBMIT; a synchronous call is a batch of one and the
// DSMEM_IOC_TASK that waits for it and releases it.
#include <cerrno>
#include <climits>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dsmem.h>

#include "ds_internal.hpp"

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

struct ds_xfer {
	// A synchronous call a signal cut short: its task is still in flight
	// and, for an atomic, still to write the word it owns.
	struct orphan {
		uint64_t task;
		std::unique_ptr<uint64_t> word;
	};

	int fd = -1;
	std::unique_ptr<uint64_t> word;	// where an atomic's old value lands
	std::vector<orphan> orphans;

	~ds_xfer()
	{
		if (fd >= 0)
			close(fd);
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
void reap(ds_xfer *x)
{
	for (size_t i = 0; i < x->orphans.size();) {
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

}  // namespace

int dsmem::detail::xfer_run(ds_xfer *x, const struct dsmem_xfer_req *reqs, size_t n)
{
	struct dsmem_ioc_submit sub = {};

	if (n < 1 || n > DSMEM_SUBMIT_REQS_MAX)
		return -EINVAL;
	if (!x->orphans.empty())
		reap(x);
	sub.reqs = reinterpret_cast<uintptr_t>(reqs);
	sub.nr = static_cast<uint32_t>(n);
	sub.req_size = sizeof(*reqs);
	sub.flags = DSMEM_SUBMIT_WAIT | DSMEM_SUBMIT_RELEASE;
	if (ioctl(x->fd, DSMEM_IOC_SUBMIT, &sub) < 0)
		return -errno;
	return sub.result;
}

namespace {

int atomic_one(ds_xfer *x, uint8_t op, uint64_t gaddr, uint64_t compare_add,
	       uint64_t swap, uint64_t *old)
{
	struct dsmem_xfer_req req = {};

	if (!x->word) {
		x->word.reset(new (std::nothrow) uint64_t(0));
		if (!x->word)
			return -ENOMEM;
	}
	req.opcode = op;
	req.local = reinterpret_cast<uintptr_t>(x->word.get());
	req.remote = gaddr;
	req.len = sizeof(uint64_t);
	req.compare_add = compare_add;
	req.swap = swap;
	int ret = sync_one(x, req);
	if (!ret && old)
		*old = *x->word;
	return ret;
}

int transfer_one(ds_xfer *x, uint8_t op, uint64_t gaddr, const void *buf, size_t len)
{
	struct dsmem_xfer_req req = {};

	req.opcode = op;
	req.local = reinterpret_cast<uintptr_t>(buf);
	req.remote = gaddr;
	req.len = len;
	return sync_one(x, req);
}

}  // namespace

DS_EXPORT int ds_xfer_open(uint32_t node_id, struct ds_xfer **xp)
{
	std::unique_ptr<ds_xfer> x(new (std::nothrow) ds_xfer);
	struct dsmem_ioc_version v = {};
	struct dsmem_ioc_attach at = {};

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
	at.node_id = node_id;
	if (ioctl(x->fd, DSMEM_IOC_ATTACH, &at) < 0)
		return -errno;
	*xp = x.release();
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
	return x->fd;
}

DS_EXPORT int ds_mr_reg(struct ds_xfer *x, void *addr, size_t len, uint32_t *mr)
{
	struct dsmem_ioc_mr_reg r = {};

	r.addr = reinterpret_cast<uintptr_t>(addr);
	r.len = len;
	r.flags = DSMEM_MR_WRITABLE;	// reads land in registered buffers
	if (ioctl(x->fd, DSMEM_IOC_MR_REG, &r) < 0)
		return -errno;
	*mr = r.handle;
	return 0;
}

DS_EXPORT int ds_mr_dereg(struct ds_xfer *x, uint32_t mr)
{
	struct dsmem_ioc_mr_dereg d = {};

	d.handle = mr;
	return ioctl(x->fd, DSMEM_IOC_MR_DEREG, &d) < 0 ? -errno : 0;
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

DS_EXPORT int ds_batch_submit(struct ds_xfer *x,
			      const struct ds_transfer_request *reqs, size_t n,
			      uint64_t *task)
{
	struct dsmem_ioc_submit sub = {};
	std::vector<struct dsmem_xfer_req> kreqs;

	if (!reqs || n < 1 || n > DS_BATCH_REQS_MAX)
		return -EINVAL;
	try {
		kreqs.resize(n);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		int ret = to_xfer_req(reqs[i], &kreqs[i]);
		if (ret)
			return ret;
	}
	if (!x->orphans.empty())
		reap(x);
	sub.reqs = reinterpret_cast<uintptr_t>(kreqs.data());
	sub.nr = static_cast<uint32_t>(n);
	sub.req_size = sizeof(struct dsmem_xfer_req);
	if (ioctl(x->fd, DSMEM_IOC_SUBMIT, &sub) < 0)
		return -errno;
	*task = sub.task;
	return 0;
}

DS_EXPORT int ds_task_query(struct ds_xfer *x, uint64_t task, int wait,
			    int release, int *state,
			    struct ds_transfer_status *st, size_t n)
{
	uint32_t flags = (wait ? DSMEM_TASK_WAIT : 0) | (release ? DSMEM_TASK_RELEASE : 0);

	if (st && n > UINT32_MAX)
		return -EINVAL;
	return task_ioctl(x, task, flags, state,
			  reinterpret_cast<struct dsmem_xfer_status *>(st), n);
}
