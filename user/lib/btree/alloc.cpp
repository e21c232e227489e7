// SPDX-License-Identifier: BSD-2-Clause
// Memory for nodes and out-of-line values.
//
// General layout: each compute client takes chunk_bytes at a time from a
// segment's cursor (one FAA; replicated trees: under a lock, so that every
// member's cursor agrees), round-robin over the segments, and carves
// nodes from it locally, so capacity is the segments' and nothing else.
// Seed layout (seed 000): node ids come from one counter; node i lives on
// server i % N, in the sub-region of its level, at that sub-region's
// cursor; a full sub-region is -ENOSPC, as the seed's fixed regions imply.
//
// Freed memory rests for reuse_grace_ms before it is handed out again,
// so a reader that fetched a pointer to it just before it was freed reads
// an image that still checks out as what it was (or as free).
#include "tree.hpp"

namespace dsmem::btree {

int tree::take_chunk(session &s)
{
	for (uint32_t tries = 0; tries < nsegs_; tries++) {
		uint32_t i = next_seg_++ % nsegs_;
		batch b(s);
		uint64_t *old = s.word(5);

		if (replicated()) {
			int ret = take_chunk_r(s, i, old);
			if (ret == -ENOSPC)
				continue;
			if (ret)
				return ret;
		} else {
			b.faa(segs_[i] + seg_off_cursor, chunk_bytes, old);
			if (int ret = b.run(batch::k_other))
				return ret;
		}
		// a cursor past the end only grows: the segment is full
		if (data_off + *old + chunk_bytes <= seg_size_[i]) {
			chunk_next_ = segs_[i] + data_off + *old;
			chunk_end_ = chunk_next_ + chunk_bytes;
			return 0;
		}
	}
	return -ENOSPC;
}

int tree::carve(session &s, uint64_t size, uint64_t *addr)
{
	if (chunk_end_ - chunk_next_ < size) {
		if (int ret = take_chunk(s))
			return ret;
	}
	*addr = chunk_next_;
	chunk_next_ += size;
	return 0;
}

int tree::seed_alloc(session &s, unsigned region, uint64_t size, uint64_t *addr)
{
	batch b(s);
	uint64_t *id = s.word(5), *off = s.word(6);

	b.faa(sb(sb_off_node_ids), 1, id);
	if (int ret = b.run(batch::k_other))
		return ret;
	uint32_t server = static_cast<uint32_t>(*id % nsegs_);
	b.faa(segs_[server] + seg_off_region(region), size, off);
	if (int ret = b.run(batch::k_other))
		return ret;
	if (*off + size > seed_region_size[region])
		return -ENOSPC;
	*addr = segs_[server] + data_off + seed_region_off[region] + *off;
	return 0;
}

static bool take_rested(std::deque<tree::freed> &q, uint64_t *addr)
{
	if (q.empty() || clock::now() - q.front().at < std::chrono::milliseconds(reuse_grace_ms))
		return false;
	*addr = q.front().addr;
	q.pop_front();
	return true;
}

int tree::alloc_node(session &s, unsigned level, bool is_root, uint64_t *addr)
{
	std::lock_guard g(alloc_m_);

	if (take_rested(free_nodes_, addr))
		return 0;
	if (layout_ == DS_BTREE_SEED)
		return seed_alloc(s, seed_region_for(level, is_root), node_size_, addr);
	int ret = carve(s, node_size_, addr);
	// the superblock's count learns of it with the next heartbeat
	if (!ret)
		unflushed_nodes_.fetch_add(1, std::memory_order_relaxed);
	return ret;
}

int tree::alloc_blob(session &s, uint64_t *addr)
{
	std::lock_guard g(alloc_m_);

	if (take_rested(free_blobs_, addr))
		return 0;
	if (layout_ == DS_BTREE_SEED)
		return seed_alloc(s, region_leaf, blob_size(), addr);
	return carve(s, blob_size(), addr);
}

void tree::free_node(uint64_t addr)
{
	std::lock_guard g(alloc_m_);
	free_nodes_.push_back({addr, clock::now()});
}

void tree::free_blob(uint64_t addr)
{
	std::lock_guard g(alloc_m_);
	free_blobs_.push_back({addr, clock::now()});
}

}  // namespace dsmem::btree
