// SPDX-License-Identifier: BSD-2-Clause
// The metadata log's group commit; journal.hpp says why.
#include "journal.hpp"

#include <cerrno>
#include <cstdio>

namespace dsmem::store {

Journal::Journal(std::unique_ptr<MetaLog> log, uint64_t snapshot_every, std::mutex &state_mu,
		 std::function<void(log::v1::Snapshot *)> take_snapshot,
		 std::function<void(int, const std::string &)> on_fail)
	: log_(std::move(log)), describe_(log_->describe()), snapshot_every_(snapshot_every),
	  state_mu_(state_mu), take_snapshot_(std::move(take_snapshot)), on_fail_(std::move(on_fail))
{
	bytes_ = log_->bytes();
	since_snapshot_ = log_->records_since_snapshot();
	writer_ = std::thread([this] { run(); });
}

Journal::~Journal()
{
	stop();
}

void Journal::stop()
{
	{
		std::lock_guard<std::mutex> g(m_);
		if (stop_ && !writer_.joinable())
			return;
		stop_ = true;
	}
	cv_.notify_all();
	if (writer_.joinable())
		writer_.join();
	std::lock_guard<std::mutex> g(m_);
	if (durable_ < submitted_ && !failed_) {
		failed_ = -ESHUTDOWN;
		fail_msg_ = "the master is shutting down";
	}
	done_cv_.notify_all();
}

uint64_t Journal::submit(const log::v1::Record &rec)
{
	std::lock_guard<std::mutex> g(m_);
	queue_.push_back(rec.SerializeAsString());
	cv_.notify_one();
	return ++submitted_;
}

int Journal::wait(uint64_t seq, std::string *err)
{
	std::unique_lock<std::mutex> l(m_);
	done_cv_.wait(l, [&] { return durable_ >= seq || failed_; });
	if (durable_ >= seq)
		return 0;
	if (err)
		*err = "metadata log: " + fail_msg_;
	return failed_;
}

uint64_t Journal::submitted() const
{
	std::lock_guard<std::mutex> g(m_);
	return submitted_;
}

uint64_t Journal::durable() const
{
	std::lock_guard<std::mutex> g(m_);
	return durable_;
}

// Appends batch (serialised records, each at most kRecordMax) as entries
// of at most kEntryMax: an entry is appended before a record that would
// take it over.
int Journal::append_batch(std::vector<std::string> &batch, std::string *err)
{
	log::v1::LogEntry entry;
	size_t bytes = 0;

	for (size_t i = 0; i < batch.size(); i++) {
		size_t rec_bytes = batch[i].size() + 8;	// with its field header
		if (entry.records_size() && bytes + rec_bytes > kEntryMax) {
			if (int ret = log_->append(entry.SerializeAsString(), err))
				return ret;
			entry.Clear();
			bytes = 0;
		}
		if (!entry.add_records()->ParseFromString(batch[i]))
			return -EIO;
		bytes += rec_bytes;
	}
	if (entry.records_size())
		return log_->append(entry.SerializeAsString(), err);
	return 0;
}

void Journal::run()
{
	std::unique_lock<std::mutex> l(m_);

	for (;;) {
		cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
		if (queue_.empty() && stop_)
			return;
		std::vector<std::string> batch;
		batch.swap(queue_);
		uint64_t upto = submitted_;
		l.unlock();
		std::string err;
		int ret = append_batch(batch, &err);
		bool snap = !ret && log_->records_since_snapshot() >= snapshot_every_;
		if (snap) {
			// The snapshot must hold exactly what the log holds.  With
			// the state locked nothing new is applied: the state is
			// copied, and what was queued meanwhile taken along.  Only
			// that copy runs under the state mutex; appending what was
			// queued, serialising and compacting do not (records
			// submitted meanwhile wait in the queue, this thread being
			// the log's only writer).  A slow disk or etcd then stalls
			// no RPC that needs the state, and no heartbeat.
			log::v1::Snapshot snapshot;
			{
				std::lock_guard<std::mutex> sg(state_mu_);
				l.lock();
				batch.clear();
				batch.swap(queue_);
				upto = submitted_;
				l.unlock();
				take_snapshot_(&snapshot);
			}
			if (!batch.empty())
				ret = append_batch(batch, &err);
			if (!ret) {
				int cret = log_->compact(snapshot.SerializeAsString(), &err);
				if (cret)
					fprintf(stderr, "dsmaster: snapshot failed (%s); the log goes on\n",
						err.c_str());
			}
		}
		bytes_ = log_->bytes();
		since_snapshot_ = log_->records_since_snapshot();
		l.lock();
		if (ret) {
			failed_ = ret;
			fail_msg_ = err;
			done_cv_.notify_all();
			l.unlock();
			on_fail_(ret, err);
			l.lock();
			// nothing more can be made durable
			cv_.wait(l, [&] { return stop_; });
			return;
		}
		durable_ = upto;
		done_cv_.notify_all();
	}
}

}  // namespace dsmem::store
