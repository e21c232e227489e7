// SPDX-License-Identifier: BSD-2-Clause
// The master's metadata log: a snapshot plus the records appended after
// it.  Records are opaque bytes here (dsstore_log.proto gives them
// meaning).  Two backends: files in a directory (one master) and etcd
// (masters with failover; every write fenced by the leader key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "etcd.hpp"

namespace dsmem::store {

// CRC-32C (Castagnoli), as iSCSI and ext4 use it; crc32c(0, p, n) starts one.
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

class MetaLog {
public:
	virtual ~MetaLog() = default;
	// The last snapshot (empty if none) and every record appended after it,
	// in order.  A torn last record (crash mid-append) is dropped; a bad
	// record with more data after it is damage: -EIO, nothing dropped.
	virtual int load(std::string *snapshot, std::vector<std::string> *records, std::string *err) = 0;
	// Durable when it returns 0 (file: fdatasync; etcd: Txn committed).
	// -ESTALE from the etcd backend: this master is no longer the leader,
	// or the log moved on without it (the record's number already taken,
	// e.g. by an earlier append that failed with a timeout but committed
	// later); either way it must step down (or load() and replay).
	// An append that failed otherwise may still commit: a later one reads
	// its number back first and returns -ESTALE if it did.
	virtual int append(const std::string &record, std::string *err) = 0;
	// Replace snapshot + log by this snapshot (atomic).  File backend: if
	// the directory fsync after the snapshot's rename fails, the error is
	// returned and the old log is kept; appends retry that fsync first and
	// fail until it succeeds (so no record lands in a log the snapshot is
	// about to supersede).
	virtual int compact(std::string_view snapshot, std::string *err) = 0;
	virtual uint64_t records_since_snapshot() const = 0;
	virtual uint64_t bytes() const = 0;		// snapshot + log size
	virtual std::string describe() const = 0;	// "file:DIR", "etcd:EPS"
};

// Files DIR/snapshot and DIR/log (records framed with length + CRC32C).
// DIR is created if missing and locked (flock on DIR/lock): a second
// master on the same directory is refused with -EBUSY.  Opening fsyncs DIR
// (new lock and log files, and a compaction's rename that was not yet
// durable) and fails if it cannot.
std::unique_ptr<MetaLog> open_file_log(const std::string &dir, std::string *err);

// fsync(2) on a directory, so the entries made or renamed in it are
// durable: the file log's and the slow tier's one way.  0 or -errno.
int fsync_dir(const std::string &dir);

// mkdir -p, each directory it makes durable in its parent.  0 or -errno.
int mkdir_p(const std::string &path);

// Tests only: when set, called instead of fsync(2) on a directory by
// fsync_dir (returns 0 or -errno); nullptr restores the real one.
void set_dir_fsync_hook_for_test(int (*hook)(const char *dir));

// Keys PREFIX/snapshot and PREFIX/log/<20-digit seq>; every write is a Txn
// that also compares fence_key's create_revision == fence_rev (the leader key).
// An append also compares its log key's create_revision == 0 (absent), so a
// record is never overwritten, not even by a late commit of a failed Txn.
// An append whose Txn timed out is read back and tried again, up to
// append_tries times in all, before it fails.
// A record must fit in one etcd request (--max-request-bytes, 1.5 MiB by
// default; -EMSGSIZE otherwise); a snapshot of any size is split into
// chunks of kEtcdSnapshotChunk under PREFIX/snapshot/<gen>/<part>.
inline constexpr size_t kEtcdSnapshotChunk = 1024 * 1024;
inline constexpr int kEtcdAppendTries = 3;
std::unique_ptr<MetaLog> open_etcd_log(std::shared_ptr<EtcdClient> etcd, const std::string &prefix,
				       const std::string &fence_key, int64_t fence_rev, std::string *err,
				       int append_tries = kEtcdAppendTries);

}  // namespace dsmem::store
