// SPDX-License-Identifier: BSD-2-Clause
// The object checksums; checksum.hpp says what they are for.
#include "checksum.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace dsmem::store {

namespace {

// One hash state per thread, made once: no allocation per object on the
// data path (and no dependence on the state's layout, which libxxhash
// keeps private to static links).
XXH64_state_t *hash_state()
{
	struct Free {
		void operator()(XXH64_state_t *s) const { XXH64_freeState(s); }
	};
	thread_local std::unique_ptr<XXH64_state_t, Free> st(XXH64_createState());
	return st.get();
}

uint64_t chunk_sum(XXH64_state_t *st, const std::vector<iovec> &iov, uint64_t base, uint64_t from,
		   uint64_t to)
{
	XXH64_reset(st, 0);
	for_each_piece(iov, base, from, to,
		       [st](char *p, uint64_t n, uint64_t) { XXH64_update(st, p, n); });
	return XXH64_digest(st);
}

}  // namespace

void make_sums(const std::vector<iovec> &iov, uint64_t size, pb::Checksums *out)
{
	XXH64_state_t *st = hash_state();
	out->Clear();
	out->set_chunk_size(kSumChunk);
	out->mutable_xxh64()->Reserve(static_cast<int>((size + kSumChunk - 1) / kSumChunk));
	for (uint64_t at = 0; at < size; at += kSumChunk)
		out->add_xxh64(chunk_sum(st, iov, 0, at, std::min(size, at + kSumChunk)));
}

SumSpan sum_span(uint64_t off, uint64_t len, uint64_t size, uint64_t chunk)
{
	uint64_t lo = std::min(off, size);
	// (len may run past the end, or past 2^64 from off: the end bounds it)
	uint64_t hi = len > size - lo ? size : lo + len;
	if (lo == hi || !chunk)
		return { lo, hi };
	lo -= lo % chunk;
	hi = hi % chunk ? std::min(size, hi - hi % chunk + chunk) : hi;
	return { lo, hi };
}

int valid_sums(const pb::Checksums &sums, uint64_t size, std::string *err)
{
	if (size == 0 && sums.xxh64_size() == 0)
		return 0;
	if (sums.xxh64_size() == 0) {
		// bytes no reader could check: a get of them would return
		// whatever a bad replica held
		*err = "no checksums for " + std::to_string(size) +
		       " bytes: a put carries one per chunk";
		return -EINVAL;
	}
	uint64_t c = sums.chunk_size();
	if (c < 4096 || c > (1U << 30) || (c & (c - 1))) {
		*err = "checksum chunk size " + std::to_string(c) +
		       " is not a power of two from 4 KiB to 1 GiB";
		return -EINVAL;
	}
	if (static_cast<uint64_t>(sums.xxh64_size()) != (size + c - 1) / c) {
		*err = std::to_string(sums.xxh64_size()) + " checksums for " + std::to_string(size) +
		       " bytes in chunks of " + std::to_string(c);
		return -EINVAL;
	}
	return 0;
}

int check_sums(const pb::Checksums &sums, uint64_t size, const std::vector<iovec> &iov,
	       uint64_t off, uint64_t len, std::string *err)
{
	if (int ret = valid_sums(sums, size, err))
		return ret;
	if (len == 0)
		return 0;
	uint64_t c = sums.chunk_size(), end = off + len;
	if (off > size || len > size - off || off % c || (end % c && end != size)) {
		// a cut chunk's bytes would pass unchecked
		*err = "bytes " + std::to_string(off) + " to " + std::to_string(end) + " of " +
		       std::to_string(size) + " are not whole checksum chunks of " +
		       std::to_string(c);
		return -EINVAL;
	}
	XXH64_state_t *st = hash_state();
	for (uint64_t from = off; from < end; from += c) {
		uint64_t to = std::min(end, from + c);
		if (chunk_sum(st, iov, off, from, to) != sums.xxh64(static_cast<int>(from / c))) {
			*err = "bytes " + std::to_string(from) + " to " + std::to_string(to) +
			       " do not match their checksum";
			return -EBADMSG;
		}
	}
	return 0;
}

}  // namespace dsmem::store
