// SPDX-License-Identifier: BSD-2-Clause
// The metadata log's group commit; journal.hpp says why.
#include "journal.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace dsmem::store {

SnapshotChild::~SnapshotChild()
{
	if (pid_ > 0) {
		kill(pid_, SIGKILL);
		while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR)
			;
	}
	if (map_ != MAP_FAILED)
		munmap(map_, len_);
	if (fd_ >= 0)
		close(fd_);
}

int SnapshotChild::start(const std::function<void(log::v1::Snapshot *)> &take, std::string *err)
{
	fd_ = memfd_create("dsmaster-snapshot", MFD_CLOEXEC);
	if (fd_ < 0) {
		int ret = -errno;
		*err = std::string("memfd_create: ") + strerror(errno);
		return ret;
	}
	pid_t parent = getpid();
	pid_ = fork();
	if (pid_ < 0) {
		int ret = -errno;
		*err = std::string("fork: ") + strerror(errno);
		return ret;
	}
	if (pid_ > 0)
		return 0;

	// The child.  It must not outlive the master (which may be killed
	// while it writes), nor run the master's signal dispositions.
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(2);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	log::v1::Snapshot snapshot;
	take(&snapshot);
	// protobuf logs (under a lock of its own) before refusing a message
	// over its limit: refused here first, quietly
	if (snapshot.ByteSizeLong() > static_cast<size_t>(INT_MAX))
		_exit(kTooBig);
	_exit(snapshot.SerializeToFileDescriptor(fd_) ? 0 : 1);
}

int SnapshotChild::finish(std::string_view *bytes, std::string *err)
{
	int status = 0;
	pid_t pid = pid_;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			*err = std::string("waitpid: ") + strerror(errno);
			return -ECHILD;
		}
	}
	pid_ = -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == kTooBig) {
		*err = "the snapshot is over protobuf's 2 GiB limit";
		return -EFBIG;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		*err = WIFSIGNALED(status) ?
			std::string("the snapshot's child was killed by signal ") +
				std::to_string(WTERMSIG(status)) :
			std::string("the snapshot's child failed (exit status ") +
				std::to_string(WEXITSTATUS(status)) + ")";
		return -EIO;
	}
	struct stat st;
	if (fstat(fd_, &st)) {
		*err = std::string("fstat of the snapshot: ") + strerror(errno);
		return -EIO;
	}
	len_ = static_cast<size_t>(st.st_size);
	*bytes = {};
	if (!len_)
		return 0;
	map_ = mmap(nullptr, len_, PROT_READ, MAP_SHARED, fd_, 0);
	if (map_ == MAP_FAILED) {
		int ret = -errno;
		*err = std::string("mmap of the snapshot: ") + strerror(errno);
		return ret;
	}
	*bytes = std::string_view(static_cast<const char *>(map_), len_);
	return 0;
}

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
			// the state locked nothing new is applied: a child process
			// is forked with the state as it is, and what was queued
			// meanwhile is taken along.  Only the fork runs under the
			// state mutex; appending what was queued, the child's walk
			// and serialisation, and compacting do not (records
			// submitted meanwhile wait in the queue, this thread being
			// the log's only writer).  A slow disk or etcd then stalls
			// no RPC that needs the state, and no heartbeat.
			SnapshotChild child;
			log::v1::Snapshot copy;
			std::string snap_bytes, why;
			std::string_view bytes;
			int sret;
			{
				std::lock_guard<std::mutex> sg(state_mu_);
				l.lock();
				batch.clear();
				batch.swap(queue_);
				upto = submitted_;
				l.unlock();
				sret = child.start(take_snapshot_, &why);
				if (sret) {
					// no child (no memory for its page tables, or
					// no process left): copy the state here, the
					// mutex held the longer for it
					fprintf(stderr, "dsmaster: %s; the snapshot is copied under the "
						"state lock\n", why.c_str());
					take_snapshot_(&copy);
				}
			}
			if (!batch.empty())
				ret = append_batch(batch, &err);
			if (sret) {
				snap_bytes = copy.SerializeAsString();
				bytes = snap_bytes;
				sret = 0;
			} else {
				sret = child.finish(&bytes, &why);
			}
			if (sret) {
				fprintf(stderr, "dsmaster: snapshot failed (%s); the log goes on\n",
					why.c_str());
			} else if (!ret) {
				int cret = log_->compact(bytes, &err);
				if (cret)
					fprintf(stderr, "dsmaster: snapshot failed (%s); the log goes on\n",
						err.c_str());
				else
					fprintf(stderr, "dsmaster: snapshot of %zu bytes written; the log "
						"is compacted\n", bytes.size());
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
