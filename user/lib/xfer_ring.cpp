// SPDX-License-Identifier: BSD-2-Clause
// The shared rings' set-up, wake-up and the spin-then-sleep wait.
#include "xfer_ring.hpp"

#include <cerrno>
#include <ctime>

#include <sys/ioctl.h>
#include <sys/mman.h>

namespace dsmem::detail {

namespace {

uint64_t clock_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
	       static_cast<uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__) || defined(__i386__)
/*
 * The spin is timed with the time-stamp counter: clock_gettime is a
 * system call wherever the clocksource has no vDSO reading (hpet, acpi_pm:
 * emulated machines, some VMs), and a spin must not make one.  Its rate
 * is measured once a process, over a millisecond.
 */
double tsc_per_ns()
{
	static const double rate = [] {
		uint64_t c0 = clock_ns(), t0 = __builtin_ia32_rdtsc(), c1;

		while ((c1 = clock_ns()) - c0 < 1000000)
			;
		double r = static_cast<double>(__builtin_ia32_rdtsc() - t0) /
			   static_cast<double>(c1 - c0);
		return r > 0.01 ? r : 1.0;
	}();
	return rate;
}

uint64_t spin_clock()
{
	return __builtin_ia32_rdtsc();
}

uint64_t spin_ticks(uint64_t ns)
{
	return static_cast<uint64_t>(static_cast<double>(ns) * tsc_per_ns());
}
#else
// elsewhere the vDSO reads the clock without a system call
uint64_t spin_clock()
{
	return clock_ns();
}

uint64_t spin_ticks(uint64_t ns)
{
	return ns;
}
#endif

void *map_region(int fd, size_t len, uint64_t off)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       static_cast<off_t>(off));

	if (p == MAP_FAILED)
		return nullptr;
	// a child must not share our rings: its entries would be ours
	madvise(p, len, MADV_DONTFORK);
	return p;
}

void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	asm volatile("yield");
#endif
}

}  // namespace

void xfer_ring::set_spin_ns(uint64_t ns)
{
	spin_ns_ = ns;
	spin_ticks_ = ns ? spin_ticks(ns) : 0;
}

xfer_ring::~xfer_ring()
{
	if (sq_map_)
		munmap(sq_map_, sq_bytes_);
	if (cq_map_)
		munmap(cq_map_, cq_bytes_);
}

int xfer_ring::setup(int fd, uint32_t entries, uint32_t idle_us)
{
	struct dsmem_ioc_ring_setup s = {};

	s.sq_entries = entries;
	s.idle_us = idle_us;
	if (ioctl(fd, DSMEM_IOC_RING_SETUP, &s) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	sq_map_ = map_region(fd, s.sq_bytes, s.sq_off);
	if (!sq_map_)
		return -errno;
	sq_bytes_ = s.sq_bytes;
	cq_map_ = map_region(fd, s.cq_bytes, s.cq_off);
	if (!cq_map_)
		return -errno;
	cq_bytes_ = s.cq_bytes;
	fd_ = fd;
	sq_entries_ = s.sq_entries;
	cq_entries_ = s.cq_entries;
	sq_ctl_ = static_cast<struct dsmem_ring_ctl *>(sq_map_);
	cq_ctl_ = static_cast<struct dsmem_ring_ctl *>(cq_map_);
	sqes_ = reinterpret_cast<struct dsmem_sqe *>(
		static_cast<char *>(sq_map_) + DSMEM_RING_ENTRIES_OFFSET);
	cqes_ = reinterpret_cast<struct dsmem_cqe *>(
		static_cast<char *>(cq_map_) + DSMEM_RING_ENTRIES_OFFSET);
	sq_tail_ = sq_published_ = load_acquire(&sq_ctl_->tail);
	cq_head_ = load_acquire(&cq_ctl_->head);
	return 0;
}

int xfer_ring::enter(uint32_t flags, uint32_t min_complete, uint64_t timeout_ns)
{
	struct dsmem_ioc_ring_enter e = {};

	e.flags = flags;
	e.min_complete = min_complete;
	e.timeout_ns = timeout_ns;
	return ioctl(fd_, DSMEM_IOC_RING_ENTER, &e) < 0 ? -errno : 0;
}

void xfer_ring::wake_if_held()
{
	// our head's store before the flag's load, as in submit()
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (need_wakeup() && load_acquire(&sq_ctl_->head) != sq_published_)
		(void)enter(DSMEM_ENTER_SQ_WAKEUP, 0, 0);
}

int xfer_ring::submit()
{
	if (sq_tail_ == sq_published_)
		return 0;
	store_release(&sq_ctl_->tail, sq_tail_);
	sq_published_ = sq_tail_;
	// The thread sets NEED_WAKEUP, then looks at the tail once more; we
	// store the tail, then look at the flag: one of us sees the other.
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (need_wakeup())
		return enter(DSMEM_ENTER_SQ_WAKEUP, 0, 0);
	return 0;
}

int xfer_ring::wait_cqe(uint64_t timeout_ns)
{
	if (!cq_empty())
		return 0;
	if (spin_ticks_) {
		uint64_t start = spin_clock();

		do {
			for (int i = 0; i < 16; i++) {
				if (!cq_empty())
					return 0;
				cpu_relax();
			}
		} while (spin_clock() - start < spin_ticks_);
	}
	// The module counts from its view of our head: make it current.
	// Then, as in submit(), look at the flag: a thread that slept on a
	// full CQ with entries left in the SQ takes them once woken.
	store_release(&cq_ctl_->head, cq_head_);
	std::atomic_thread_fence(std::memory_order_seq_cst);
	uint32_t flags = DSMEM_ENTER_GETEVENTS;
	if (need_wakeup() && load_acquire(&sq_ctl_->head) != sq_published_)
		flags |= DSMEM_ENTER_SQ_WAKEUP;
	return enter(flags, 1, timeout_ns);
}

}  // namespace dsmem::detail
