// SPDX-License-Identifier: BSD-2-Clause
// The program's side of the module's shared rings (DSMEM_IOC_RING_SETUP):
// it produces submission entries and consumes completion entries in
// memory it maps, so a transfer costs no system call while the module's
// submission thread is awake and the completion arrives within the spin.
#ifndef DSUSER_XFER_RING_HPP
#define DSUSER_XFER_RING_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <linux/dsmem.h>

namespace dsmem::detail {

class xfer_ring {
public:
	xfer_ring() = default;
	xfer_ring(const xfer_ring &) = delete;
	xfer_ring &operator=(const xfer_ring &) = delete;
	~xfer_ring();

	// 0; -EOPNOTSUPP when the module has no rings; another -errno
	int setup(int fd, uint32_t entries, uint32_t idle_us);
	void set_spin_ns(uint64_t ns);
	uint64_t spin_ns() const { return spin_ns_; }

	// Entries the SQ has room for now.
	uint32_t sq_space() const
	{
		return sq_entries_ - (sq_tail_ - load_acquire(&sq_ctl_->head));
	}
	// Queue one entry; sq_space() must have said there is room.  It is
	// the module's only after submit().  not_after: as the SQE's.
	void push(const struct dsmem_xfer_req &req, uint64_t user_data, uint64_t not_after = 0)
	{
		struct dsmem_sqe &e = sqes_[sq_tail_ & (sq_entries_ - 1)];

		e.req = req;
		e.user_data = user_data;
		e.not_after_ns = not_after;
		sq_tail_++;
	}
	// Publish what push() queued and wake the module's thread if it went
	// to sleep: 0 or -errno (of the wake-up's ioctl).
	int submit();

	// Hand each completion waiting in the CQ to fn(const dsmem_cqe &) and
	// free its slot; how many there were.
	template <class F> uint32_t reap(F &&fn)
	{
		uint32_t tail = load_acquire(&cq_ctl_->tail);
		uint32_t n = 0;

		for (; cq_head_ != tail; cq_head_++, n++)
			fn(cqes_[cq_head_ & (cq_entries_ - 1)]);
		if (n) {
			store_release(&cq_ctl_->head, cq_head_);
			wake_if_held();
		}
		return n;
	}
	bool cq_empty() const { return load_acquire(&cq_ctl_->tail) == cq_head_; }

	// Wait until a completion waits in the CQ: spin for spin_ns, then
	// sleep in DSMEM_IOC_RING_ENTER for at most timeout_ns (0: no bound).
	// 0; -ETIME; -EINTR when a signal came; another -errno.
	int wait_cqe(uint64_t timeout_ns);

	uint32_t sq_entries() const { return sq_entries_; }
	uint32_t cq_entries() const { return cq_entries_; }

private:
	static uint32_t load_acquire(const uint32_t *p)
	{
		// the module stores it; atomic_ref wants a mutable object
		return std::atomic_ref<uint32_t>(*const_cast<uint32_t *>(p))
			.load(std::memory_order_acquire);
	}
	static void store_release(uint32_t *p, uint32_t v)
	{
		std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release);
	}
	int enter(uint32_t flags, uint32_t min_complete, uint64_t timeout_ns);
	// The thread sleeps on a full CQ too: once we made room, wake it if
	// it sleeps with entries of ours still in the SQ.
	void wake_if_held();
	bool need_wakeup() const
	{
		return std::atomic_ref<uint32_t>(sq_ctl_->flags).load(std::memory_order_relaxed) &
		       DSMEM_RING_NEED_WAKEUP;
	}

	int fd_ = -1;
	void *sq_map_ = nullptr;
	void *cq_map_ = nullptr;
	size_t sq_bytes_ = 0;
	size_t cq_bytes_ = 0;
	struct dsmem_ring_ctl *sq_ctl_ = nullptr;
	struct dsmem_ring_ctl *cq_ctl_ = nullptr;
	struct dsmem_sqe *sqes_ = nullptr;
	struct dsmem_cqe *cqes_ = nullptr;
	uint32_t sq_entries_ = 0;
	uint32_t cq_entries_ = 0;
	uint32_t sq_tail_ = 0;		// ours; published by submit()
	uint32_t sq_published_ = 0;
	uint32_t cq_head_ = 0;		// ours; published by reap()
	uint64_t spin_ns_ = 0;
	uint64_t spin_ticks_ = 0;	// spin_ns_ in the spin's clock
};

}  // namespace dsmem::detail

#endif
