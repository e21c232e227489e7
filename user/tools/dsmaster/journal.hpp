// SPDX-License-Identifier: BSD-2-Clause
// Group commit of the metadata log.  A mutation is applied to the state
// and submitted here under the state mutex (so the log's order is the
// order of application); the RPC then waits, without the mutex, until its
// record is durable.  One writer thread appends whatever queued meanwhile
// as one log entry: several RPCs share one fdatasync (or etcd Txn).
#pragma once

#include <sys/mman.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dsstore_log.pb.h"
#include "persist.hpp"

namespace dsmem::store {

// A copy of the state taken by a child process, as Redis's BGSAVE takes
// one: fork() hands the child the state as it is at that instant,
// copy-on-write, so the state mutex is held only for the fork, whose
// cost is copying the page tables (about 8 ms per GiB of heap on the
// test machine), and not for the walk and serialisation of every object
// (seconds at ten million objects).  The child serialises into a memfd,
// which the parent maps.
//
// The child runs only code that takes no lock another thread may have
// held at the fork: the walk of the state (whose mutex the forking
// thread holds), protobuf, glibc's malloc (which fork() leaves
// consistent) and write(2).  It leaves by _exit, running no atexit
// handler and no destructor of the parent's objects.
class SnapshotChild {
public:
	SnapshotChild() = default;
	~SnapshotChild();	// kills and reaps a child not yet finished
	SnapshotChild(const SnapshotChild &) = delete;
	SnapshotChild &operator=(const SnapshotChild &) = delete;

	// With the state mutex held: forks the child that calls take and
	// writes what it made.  -errno (and why) if no child was made.
	int start(const std::function<void(log::v1::Snapshot *)> &take, std::string *err);
	// Waits for the child: 0 and the serialised snapshot (valid while
	// this object lives), or -errno and why.
	int finish(std::string_view *bytes, std::string *err);

private:
	static constexpr int kTooBig = 4;	// the child's exit status
	pid_t pid_ = -1;
	int fd_ = -1;
	void *map_ = MAP_FAILED;
	size_t len_ = 0;
};

class Journal {
public:
	// A log entry must fit in one etcd request (1.5 MiB by default: the
	// rest is room for the request's own fields), and a record in an
	// entry (with the entry's field header).  A record over kRecordMax
	// is never submitted: the RPC that would make it is refused, or else
	// every leader would fail its append and step down in turn.
	static constexpr size_t kEntryMax = 1024 * 1024;
	static constexpr size_t kRecordMax = kEntryMax - 16;

	// take_snapshot copies the state, called in a SnapshotChild forked
	// with state_mu held (or, if no child can be made, in the writer
	// with state_mu held; the records it covers are appended, and the
	// copy serialised and compacted, without it); on_fail once, when an
	// append fails (the state is ahead of the log: this master must
	// stop serving).
	Journal(std::unique_ptr<MetaLog> log, uint64_t snapshot_every, std::mutex &state_mu,
		std::function<void(log::v1::Snapshot *)> take_snapshot,
		std::function<void(int, const std::string &)> on_fail);
	~Journal();
	Journal(const Journal &) = delete;
	Journal &operator=(const Journal &) = delete;

	// Under the state mutex, after apply(): the record's sequence number.
	uint64_t submit(const log::v1::Record &rec);
	// 0 once every record up to seq is durable; the append's -errno if not.
	int wait(uint64_t seq, std::string *err);
	// The sequence number of the last record submitted (under the state
	// mutex: of the last one applied), and of the last one durable.
	uint64_t submitted() const;
	uint64_t durable() const;
	void stop();

	// as of the last append or compaction (the log is the writer's alone)
	uint64_t bytes() const { return bytes_; }
	uint64_t records_since_snapshot() const { return since_snapshot_; }
	std::string describe() const { return describe_; }
	// Log entries between snapshots from now on (the next append makes
	// one if as many are in the log already).
	void set_snapshot_every(uint64_t n) { snapshot_every_ = n; }
	MetaLog *log() { return log_.get(); }

private:
	void run();
	int append_batch(std::vector<std::string> &batch, std::string *err);

	std::unique_ptr<MetaLog> log_;
	std::string describe_;
	std::atomic<uint64_t> snapshot_every_;
	std::mutex &state_mu_;
	std::function<void(log::v1::Snapshot *)> take_snapshot_;
	std::function<void(int, const std::string &)> on_fail_;

	mutable std::mutex m_;
	std::condition_variable cv_, done_cv_;
	std::vector<std::string> queue_;	// serialised records
	uint64_t submitted_ = 0, durable_ = 0;
	int failed_ = 0;
	std::string fail_msg_;
	bool stop_ = false;
	std::atomic<uint64_t> bytes_{ 0 }, since_snapshot_{ 0 };
	std::thread writer_;
};

}  // namespace dsmem::store
