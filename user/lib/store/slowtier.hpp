// SPDX-License-Identifier: BSD-2-Clause
// The slow tier: one copy of each key's newest flushed version, behind a
// pluggable interface chosen by the spec's scheme ("dir:/path").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dsmem::store {

class SlowTier {	// one version per key; never goes backwards; thread-safe
public:
	virtual ~SlowTier() = default;
	// A version older than (or equal to) the stored one is a no-op returning 0.
	// -ENOSPC when the disk is full: the old copy is untouched.
	virtual int put(const std::string &key, uint64_t version, const void *data, uint64_t len) = 0;
	// Bytes [off, off + len) clipped to the object (off past the end: -ERANGE);
	// every read checks the CRCs of the 1 MiB chunks it touches (-EIO on a
	// mismatch).
	virtual int get(const std::string &key, uint64_t off, uint64_t len, std::string *data,
			uint64_t *version, uint64_t *size) = 0;	// -ENOENT
	virtual int version(const std::string &key, uint64_t *version, uint64_t *size) = 0;	// -ENOENT
	virtual int del(const std::string &key) = 0;	// -ENOENT
	virtual std::string describe() const = 0;	// "dir:/path"
};

// "dir:/path" (a directory tree; keys escaped to safe file names, written
// as tmp + fsync + rename with a header of version, size and CRC and a CRC
// per 1 MiB chunk).  Several processes may share the tree (an old leader
// and a new one): the version compare-and-replace holds a flock on the
// fan-out directory's .lock.  Opening removes tmp files left by a crash
// (this host's dead pids, or older than an hour).
std::unique_ptr<SlowTier> open_slow_tier(const std::string &spec, std::string *err);

}  // namespace dsmem::store
