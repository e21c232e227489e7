// SPDX-License-Identifier: BSD-2-Clause
// Checksums for the store's unit tests, shared by the state machine's
// and the Leader's: the master refuses a commit without them.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "checksum.hpp"

namespace dsmem::store::testsums {

// The checksums of size zero bytes, as a writer makes them: each iovec
// names the same zeroed chunk, so no object-sized buffer is needed.
inline pb::Checksums zero_sums(uint64_t size)
{
	static const std::vector<char> zeros(kSumChunk);
	std::vector<iovec> iov;
	for (uint64_t at = 0; at < size; at += kSumChunk)
		iov.push_back({ const_cast<char *>(zeros.data()),
				std::min<uint64_t>(kSumChunk, size - at) });
	pb::Checksums sums;
	make_sums(iov, size, &sums);
	return sums;
}

}  // namespace dsmem::store::testsums
