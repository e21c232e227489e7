// SPDX-License-Identifier: BSD-2-Clause
// The client's task queue: submitted operations, their workers and states.
#include "client.hpp"

#include <algorithm>
#include <cerrno>

namespace dsmem::store {

void TaskQueue::start(unsigned workers)
{
	std::lock_guard<std::mutex> g(mu_);
	stopping_ = false;
	for (unsigned i = 0; i < workers; i++)
		workers_.emplace_back([this, i] { worker(i); });
}

int TaskQueue::submit(uint32_t kind, uint32_t timeout_ms, Fn fn, uint64_t *id)
{
	auto t = std::make_shared<Task>();
	t->st.state = DS_STORE_WAITING;
	t->st.kind = kind;
	t->st.version = -1;
	t->st.largest_version = -1;
	t->fn = std::move(fn);
	t->deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	std::lock_guard<std::mutex> g(mu_);
	if (stopping_)
		return -ESHUTDOWN;
	*id = next_id_++;
	tasks_[*id] = t;
	queue_.push_back(*id);
	work_cv_.notify_one();
	return 0;
}

// A WAITING task past its deadline: nobody will start it now.
void TaskQueue::expire(Task &t)
{
	if (t.st.state == DS_STORE_WAITING && Clock::now() >= t.deadline) {
		t.st.state = DS_STORE_TIMEOUT;
		t.st.err = -ETIMEDOUT;
		t.fn = nullptr;
		done_cv_.notify_all();
	}
}

void TaskQueue::worker(unsigned index)
{
	std::unique_lock<std::mutex> lk(mu_);
	for (;;) {
		work_cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
		if (queue_.empty())
			return;		// stopping, nothing left
		uint64_t id = queue_.front();
		queue_.pop_front();
		auto it = tasks_.find(id);
		if (it == tasks_.end())
			continue;	// released while waiting
		std::shared_ptr<Task> t = it->second;
		expire(*t);
		if (t->st.state != DS_STORE_WAITING)
			continue;	// canceled or expired
		if (stopping_) {
			t->st.state = DS_STORE_CANCELED;
			t->st.err = -ECANCELED;
			done_cv_.notify_all();
			continue;
		}
		t->st.state = DS_STORE_PENDING;
		ds_store_task_status st = t->st;
		Fn fn = std::move(t->fn);
		lk.unlock();
		int ret;
		std::string why;
		try {
			ret = fn(index, t->deadline, &st, &why);
		} catch (const std::bad_alloc &) {
			ret = -ENOMEM;
		} catch (...) {
			ret = -EIO;
		}
		fn = nullptr;	// the buffers it captured are the caller's again
		lk.lock();
		if (ret == 0) {
			st.state = DS_STORE_COMPLETE;
		} else if (ret == -ETIMEDOUT) {
			st.state = DS_STORE_TIMEOUT;
			st.err = ret;
		} else if (ret == -EINVAL) {
			// bad arguments, caught by the master (INVALID_ARGUMENT)
			st.state = DS_STORE_INVALID;
			st.err = ret;
		} else {
			st.state = DS_STORE_FAILED;
			st.err = ret;
		}
		st.kind = t->st.kind;
		t->st = st;
		if (ret)
			t->why = std::move(why);
		done_cv_.notify_all();
	}
}

int TaskQueue::query(uint64_t id, int wait_ms, bool release, ds_store_task_status *st,
		     std::string *why)
{
	std::unique_lock<std::mutex> lk(mu_);
	auto until = Clock::now() + std::chrono::milliseconds(wait_ms < 0 ? 0 : wait_ms);
	for (;;) {
		auto it = tasks_.find(id);
		if (it == tasks_.end()) {
			*st = {};
			st->state = DS_STORE_INVALID;
			st->err = -ENOENT;
			st->version = -1;
			st->largest_version = -1;
			return 0;
		}
		std::shared_ptr<Task> t = it->second;
		expire(*t);
		bool is_done = done(*t);
		if (is_done || wait_ms == 0 || (wait_ms > 0 && Clock::now() >= until)) {
			*st = t->st;
			if (why)
				*why = is_done ? t->why : "";
			if (is_done && release)
				tasks_.erase(it);
			return 0;
		}
		// wake for a WAITING task's deadline too, to expire it
		auto wake = t->st.state == DS_STORE_WAITING ? t->deadline : Clock::time_point::max();
		if (wait_ms > 0)
			wake = std::min(wake, until);
		if (wake == Clock::time_point::max())
			done_cv_.wait(lk);
		else
			done_cv_.wait_until(lk, wake);
	}
}

int TaskQueue::cancel(uint64_t id)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = tasks_.find(id);
	if (it == tasks_.end())
		return -ENOENT;
	Task &t = *it->second;
	expire(t);
	if (t.st.state != DS_STORE_WAITING)
		return -EBUSY;
	t.st.state = DS_STORE_CANCELED;
	t.st.err = -ECANCELED;
	t.fn = nullptr;
	queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
	done_cv_.notify_all();
	return 0;
}

void TaskQueue::stop()
{
	std::vector<std::thread> ws;
	{
		std::lock_guard<std::mutex> g(mu_);
		stopping_ = true;
		for (uint64_t id : queue_) {
			auto it = tasks_.find(id);
			if (it != tasks_.end() && it->second->st.state == DS_STORE_WAITING) {
				it->second->st.state = DS_STORE_CANCELED;
				it->second->st.err = -ECANCELED;
				it->second->fn = nullptr;
			}
		}
		queue_.clear();
		ws.swap(workers_);
		work_cv_.notify_all();
		done_cv_.notify_all();
	}
	for (std::thread &w : ws)
		w.join();
}

size_t TaskQueue::size()
{
	std::lock_guard<std::mutex> g(mu_);
	return tasks_.size();
}

}  // namespace dsmem::store
