// SPDX-License-Identifier: BSD-2-Clause
// The slow tier's writer: one version copied from a pool replica to the
// slow tier, for an EAGER put's commit or by the LAZY flusher's loop.
#include <dsmem/ds.h>

#include <cerrno>
#include <cstring>

#include "checksum.hpp"
#include "service.hpp"

namespace dsmem::store {

int Leader::flush(const std::string &key, uint64_t version, bool *flushed, std::string *err)
{
	*flushed = false;
	if (!slow_) {
		*err = "no slow tier";
		return -ENODEV;
	}
	auto fl = flush_lock(key);
	std::lock_guard<std::mutex> fg(*fl);
	v1::Replica src;
	v1::Checksums sums;
	Resolved src_r;
	uint64_t size, commit_seq = 0;
	{
		std::lock_guard<std::mutex> g(mu_);
		const VersionState *v = st_.find_version(key, version);
		const ObjectState *o = st_.find_object(key);
		if (!v || !v->complete || v->deleted) {
			*err = "version gone";
			return -ENOENT;
		}
		if (o->flushed_version >= version) {
			// a newer one is there already: the slow tier never goes back
			*flushed = o->flushed_version == version;
			return 0;
		}
		if (!source_locked(key, version, -1, &src)) {
			*err = "no replica to flush from";
			return -ENODATA;
		}
		src_r = resolve_locked(src);
		size = v->size;
		sums = v->sums;
		if (!st_.commit_durable(key, version, durable_records_locked()))
			commit_seq = record_seq_locked(v->committed_at);
		st_.pin(key, version);
	}
	std::string data;
	int ret = 0;
	// The slow tier holds only versions the log cannot forget: a leader
	// that died before the commit was durable would leave a copy under
	// a number the next leader hands to another put.
	if (commit_seq)
		ret = wait_durable(commit_seq, err);
	if (!ret) {
		try {
			data.resize(size);
		} catch (const std::bad_alloc &) {
			ret = -ENOMEM;
			*err = "no memory for a buffer of " + std::to_string(size) + " bytes";
		}
	}
	if (!ret)
		ret = mover_->read(src_r, 0, data.data(), size, err);
	// the slow tier gets the object or nothing
	if (!ret)
		ret = check_sums(sums, size, { { data.data(), size } }, 0, size, err);
	{
		std::lock_guard<std::mutex> g(mu_);
		st_.unpin(key, version);
	}
	if (ret)
		return ret;
	uint64_t held = 0;
	ret = slow_->put(key, version, data.data(), size, &held);
	if (ret) {
		*err = "slow tier " + slow_->describe() + ": " + strerror(-ret);
		return ret;
	}
	if (held != version) {
		// it kept a newer version (another leader's): Flushed(version)
		// would promise bytes it does not hold
		*err = "slow tier " + slow_->describe() + " holds version " + std::to_string(held) +
		       ", not " + std::to_string(version);
		return -ESTALE;
	}
	uint64_t seq = 0;
	bool gone;
	{
		std::lock_guard<std::mutex> g(mu_);
		// Evicted, expired or deleted since the pin was dropped: the
		// copy just written is nobody's, and its bytes must never be
		// read again.  No Flushed for it, and it goes below.
		gone = !st_.live_version(key, version);
		const ObjectState *o = st_.find_object(key);
		if (!gone && o->flushed_version >= version) {
			*flushed = o->flushed_version == version;
			return 0;
		}
		if (!gone) {
			lg::Record r;
			r.mutable_flushed()->set_key(key);
			r.mutable_flushed()->set_version(version);
			if ((ret = commit_locked(r, &seq, err)))
				return ret;
		}
	}
	if (gone) {
		// (this key's flush lock is held: no flush of ours wrote since;
		// a newer copy another leader wrote stays, -ESTALE)
		ret = slow_->del_version(key, version);
		if (ret && ret != -ENOENT && ret != -ESTALE)
			log_line("slow tier: removing the copy of '%s' version %llu, gone while it was "
				 "flushed: %s",
				 key.substr(0, 64).c_str(), static_cast<unsigned long long>(version),
				 strerror(-ret));
		*err = "version gone while it was flushed";
		return -ENOENT;
	}
	if ((ret = wait_durable(seq, err)))
		return ret;
	*flushed = true;
	if (opts_.verbose)
		log_line("flushed '%s' version %llu", key.substr(0, 64).c_str(),
			 static_cast<unsigned long long>(version));
	return 0;
}

uint64_t Leader::durable_records_locked() const
{
	uint64_t submitted = journal_->submitted();
	return st_.applied() - (submitted - journal_->durable());
}

uint64_t Leader::record_seq_locked(uint64_t ordinal) const
{
	// the records applied before the journal began were replayed
	uint64_t before = st_.applied() - journal_->submitted();
	return ordinal > before ? ordinal - before : 0;
}

void Leader::flush_loop()
{
	auto period = std::chrono::milliseconds(std::max<uint64_t>(50, opts_.flush_ms));
	std::string last_err;

	while (sleep_for(period)) {
		std::vector<std::pair<std::string, uint64_t>> todo;
		{
			std::lock_guard<std::mutex> g(mu_);
			todo = st_.plan_flushes(durable_records_locked());
		}
		for (const auto &[key, version] : todo) {
			if (stopping_)
				return;
			bool flushed;
			std::string err;
			int ret = flush(key, version, &flushed, &err);
			// disk full and the like: said once until it changes; retried
			if (ret && ret != -ENOENT && err != last_err) {
				log_line("lazy flush of '%s' version %llu: %s (retrying)",
					 key.substr(0, 64).c_str(), static_cast<unsigned long long>(version),
					 err.c_str());
				last_err = err;
			}
			if (ret == -ENOSPC || ret == -ENODEV)
				break;
		}
	}
}

}  // namespace dsmem::store
