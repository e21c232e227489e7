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
	// -ENOSPC when the disk is full: the old copy is untouched.  *held (if
	// given, on 0): the version the tier holds for key now, which is
	// version only if these bytes (or an earlier put of the same version)
	// are what it holds; a newer one it kept is not version's bytes.
	virtual int put(const std::string &key, uint64_t version, const void *data, uint64_t len,
			uint64_t *held = nullptr) = 0;
	// Bytes [off, off + len) clipped to the object (off past the end: -ERANGE);
	// every read checks the CRCs of the 1 MiB chunks it touches (-EIO on a
	// mismatch).
	virtual int get(const std::string &key, uint64_t off, uint64_t len, std::string *data,
			uint64_t *version, uint64_t *size) = 0;	// -ENOENT
	virtual int version(const std::string &key, uint64_t *version, uint64_t *size) = 0;	// -ENOENT
	virtual int del(const std::string &key) = 0;	// -ENOENT
	// del only if the copy is of exactly this version (checked under the
	// lock puts take): -ESTALE (nothing deleted) if it is another one.
	virtual int del_version(const std::string &key, uint64_t version) = 0;	// -ENOENT
	virtual std::string describe() const = 0;	// "dir:/path"
	// What the store is, whoever reaches it and by which path: two
	// masters have the same id only if they write the same copies.
	virtual std::string id() const = 0;
};

// "dir:/path" (a directory tree; keys escaped to safe file names, long
// ones cut and chained so that no two keys share a file; written
// as tmp + fsync + rename with a header of version, size and CRC and a CRC
// per 1 MiB chunk).  Several processes may share the tree (an old leader
// and a new one): the version compare-and-replace holds a flock on the
// fan-out directory's .lock.  Opening removes tmp files left by a crash
// (this host's dead pids, or older than an hour).  The tree's id is a
// random one in PATH/.dsmem-tier-id, made by the first master that opens
// it (a damaged one: the tier does not open).
std::unique_ptr<SlowTier> open_slow_tier(const std::string &spec, std::string *err);

class EtcdClient;

// Masters with failover share their metadata, and with it the flushed
// versions that a repair or a read trusts to be in the slow tier: all of
// them must reach the same one.  The first to start records its tier's id
// under key (PREFIX/slow-tier); a master whose tier has another id must
// neither lead nor stand by: -EXDEV, and *err says so.  Other errors are
// etcd's (retry).
int claim_slow_tier(EtcdClient &etcd, const std::string &key, const SlowTier &tier, std::string *err);

}  // namespace dsmem::store
