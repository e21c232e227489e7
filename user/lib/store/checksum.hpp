// SPDX-License-Identifier: BSD-2-Clause
// An object's checksums (pb::Checksums): XXH64 of each kSumChunk bytes,
// made by the writer and checked by every reader of a whole chunk -- the
// client's gets, the master's copies and flushes.  One implementation for
// both sides.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dsstore.pb.h"

namespace dsmem::store {

namespace pb = dsmem::store::v1;

// Object bytes [from, to) of iov (whose first byte is object byte base),
// one contiguous piece at a time: f(pointer, length, object offset).
template <typename F>
void for_each_piece(const std::vector<iovec> &iov, uint64_t base, uint64_t from, uint64_t to,
		    F &&f)
{
	uint64_t pos = base;
	for (const iovec &v : iov) {
		uint64_t end = pos + v.iov_len;
		uint64_t lo = pos > from ? pos : from, hi = end < to ? end : to;
		if (lo < hi)
			f(static_cast<char *>(v.iov_base) + (lo - pos), hi - lo, lo);
		if (end >= to)
			break;
		pos = end;
	}
}

// 1 MiB: the DRAM shard's default, so a shard read whole is checked whole
constexpr uint32_t kSumChunk = 1U << 20;

// The checksums of the size bytes that iov holds in order.
void make_sums(const std::vector<iovec> &iov, uint64_t size, pb::Checksums *out);

// Bytes [off, off + len) of an object of size bytes, read into iov in
// order: 0 if every chunk wholly inside them matches (chunks cut by the
// range are not checked; no sums at all: nothing to check), -EBADMSG
// and why otherwise, -EINVAL for sums that cannot be this object's.
int check_sums(const pb::Checksums &sums, uint64_t size, const std::vector<iovec> &iov,
	       uint64_t off, uint64_t len, std::string *err);

// The sums' shape for an object of size bytes: 0, or -EINVAL and why.
int valid_sums(const pb::Checksums &sums, uint64_t size, std::string *err);

}  // namespace dsmem::store
