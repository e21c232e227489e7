// SPDX-License-Identifier: BSD-2-Clause
// An object's checksums (pb::Checksums): XXH64 of each kSumChunk bytes,
// made by the writer and checked by every reader -- the client's gets
// (a ranged one reads the chunks it cuts whole), the master's copies and
// flushes.  The master refuses a put without them.  One implementation for
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

// The bytes a reader must hold to check object bytes [off, off + len) of
// an object of size bytes: [lo, hi), the range widened to whole chunks
// of chunk bytes (the last one may be the object's short end).  A range
// that holds nothing (len 0, off at or past the end) widens to nothing:
// lo == hi == min(off, size).
struct SumSpan {
	uint64_t lo, hi;
};
SumSpan sum_span(uint64_t off, uint64_t len, uint64_t size, uint64_t chunk);

// Object bytes [off, off + len) of an object of size bytes, read into iov
// in order: 0 if every chunk matches its checksum, -EBADMSG and why if
// one does not.  The range must be whole chunks (start on a chunk's
// first byte, end on a chunk's end or the object's): a cut chunk cannot
// be checked, so the caller reads it whole (sum_span) rather than have
// its bytes pass unchecked.  -EINVAL and why for a range that is not, and
// for sums that cannot be this object's (valid_sums).
int check_sums(const pb::Checksums &sums, uint64_t size, const std::vector<iovec> &iov,
	       uint64_t off, uint64_t len, std::string *err);

// The sums' shape for an object of size bytes: 0, or -EINVAL and why.
// An object of size bytes has one checksum per chunk; one of 0 bytes has
// no chunks, so none (or any chunk size with no checksums) is its shape.
int valid_sums(const pb::Checksums &sums, uint64_t size, std::string *err);

}  // namespace dsmem::store
