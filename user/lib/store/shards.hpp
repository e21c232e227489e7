// SPDX-License-Identifier: BSD-2-Clause
// A replica's shards hold its object's bytes in order: the one walk over
// them that the client's put and get and the master's mover make.
#pragma once

#include <algorithm>
#include <cstdint>

namespace dsmem::store {

// For each shard (length_of(shard) bytes, in object order) holding some
// of the object bytes [from, to): fn(shard, start, lo, hi), start being
// the object offset of the shard's first byte and [lo, hi) the bytes of
// [from, to) it holds.  The first nonzero fn result ends the walk and is
// returned.  *reach, if given and the walk not ended early: the object
// bytes the shards hold.
template <typename Shards, typename LengthOf, typename Fn>
int for_each_shard(const Shards &shards, LengthOf &&length_of, uint64_t from, uint64_t to, Fn &&fn,
		   uint64_t *reach = nullptr)
{
	uint64_t pos = 0;
	for (const auto &sh : shards) {
		uint64_t end = pos + length_of(sh);
		uint64_t lo = std::max(pos, from), hi = std::min(end, to);
		if (lo < hi)
			if (int ret = fn(sh, pos, lo, hi))
				return ret;
		pos = end;
	}
	if (reach)
		*reach = pos;
	return 0;
}

}  // namespace dsmem::store
