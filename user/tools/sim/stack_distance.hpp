// SPDX-License-Identifier: BSD-2-Clause
// dssim internal: Mattson's stack distances with a Fenwick tree, shared by
// the one-pass LRU runs (run.cpp) and trace analysis (analyze.cpp).  Not
// part of the library's interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim.hpp"

namespace dssim {

// Mattson's stack distances: the distinct objects touched since the
// previous request to the same one, itself included (0: never before).
// LRU at size S hits exactly the requests whose distance is 1..S.
// next() must be called for every request of t in order.
class stack_distance {
public:
	explicit stack_distance(const trace &t) : fen_(t.size() + 1, 0), last_(t.nobjects(), -1) {}

	uint64_t next(size_t i, uint32_t id)
	{
		int64_t p = last_[id];
		uint64_t d = 0;

		if (p < 0) {
			live_++;
		} else {
			// marks sit at each object's latest request
			d = live_ - prefix(size_t(p) + 1) + 1;
			add(size_t(p), -1);
		}
		add(i, 1);
		last_[id] = int64_t(i);
		return d;
	}

private:
	void add(size_t pos, int32_t v)
	{
		for (size_t k = pos + 1; k < fen_.size(); k += k & -k)
			fen_[k] += v;
	}
	uint64_t prefix(size_t pos) const	// marks at positions < pos
	{
		uint64_t s = 0;

		for (size_t k = pos; k; k -= k & -k)
			s += fen_[k];
		return s;
	}

	std::vector<uint32_t> fen_;
	std::vector<int64_t> last_;
	uint64_t live_ = 0;
};

}  // namespace dssim
