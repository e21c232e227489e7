// SPDX-License-Identifier: BSD-2-Clause
// Group commit of the metadata log.  A mutation is applied to the state
// and submitted here under the state mutex (so the log's order is the
// order of application); the RPC then waits, without the mutex, until its
// record is durable.  One writer thread appends whatever queued meanwhile
// as one log entry: several RPCs share one fdatasync (or etcd Txn).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dsstore_log.pb.h"
#include "persist.hpp"

namespace dsmem::store {

class Journal {
public:
	// A log entry must fit in one etcd request (1.5 MiB by default: the
	// rest is room for the request's own fields), and a record in an
	// entry (with the entry's field header).  A record over kRecordMax
	// is never submitted: the RPC that would make it is refused, or else
	// every leader would fail its append and step down in turn.
	static constexpr size_t kEntryMax = 1024 * 1024;
	static constexpr size_t kRecordMax = kEntryMax - 16;

	// take_snapshot copies the state, called with state_mu held (and
	// nothing else: the records it covers are appended, and the copy
	// serialised and compacted, without it); on_fail once, when an
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
	MetaLog *log() { return log_.get(); }

private:
	void run();
	int append_batch(std::vector<std::string> &batch, std::string *err);

	std::unique_ptr<MetaLog> log_;
	std::string describe_;
	uint64_t snapshot_every_;
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
