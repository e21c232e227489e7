// SPDX-License-Identifier: BSD-2-Clause
// An NVMe-oF namespace as the store uses it: attached with nvme-rdma
// (nvme-cli's `nvme connect`, unless a controller is already there) and
// read and written with O_DIRECT through aligned bounce buffers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace dsmem::store {

class NvmeofTarget {
public:
	NvmeofTarget(const NvmeofTarget &) = delete;
	NvmeofTarget &operator=(const NvmeofTarget &) = delete;
	~NvmeofTarget();

	// Attach (nvme connect -t rdma, unless already attached) and open
	// the namespace block device of subsystem subnqn.
	static int attach(const std::string &traddr, uint32_t trsvcid, const std::string &subnqn,
			  std::unique_ptr<NvmeofTarget> *out, std::string *err);
	using Deadline = std::chrono::steady_clock::time_point;

	// Any offset and length: partial blocks are read, modified, written.
	// -ETIMEDOUT once deadline passed (checked between block I/Os; a
	// dead link fails I/O within the controller's loss timeout).
	int pwrite(const void *buf, uint64_t len, uint64_t off, std::string *err,
		   Deadline deadline = Deadline::max());
	int pread(void *buf, uint64_t len, uint64_t off, std::string *err,
		  Deadline deadline = Deadline::max());
	// What was written is on the media (fdatasync: an NVMe flush; the
	// target's write cache may hold O_DIRECT writes).
	int sync(std::string *err);
	const std::string &device() const { return device_; }
	uint64_t capacity() const { return capacity_; }

private:
	NvmeofTarget() = default;

	int fd_ = -1;
	std::string device_;
	uint64_t capacity_ = 0;
	uint64_t block_ = 4096;		// the alignment O_DIRECT needs
};

}  // namespace dsmem::store
