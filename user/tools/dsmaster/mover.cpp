// SPDX-License-Identifier: BSD-2-Clause
// The master's data mover; mover.hpp says what it is for.
#include "mover.hpp"

#include <dsmem/ds.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "checksum.hpp"
#include "nvmeof.hpp"
#include "settle.hpp"
#include "shards.hpp"

namespace dsmem::store {

namespace {

constexpr uint64_t kBounce = 4ULL << 20;	// bytes moved per round trip
constexpr uint64_t kPiece = 1ULL << 20;	// bytes per transfer request
constexpr int64_t kRetryNs = 5LL * 1000 * 1000 * 1000;

int64_t mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

Mover::~Mover()
{
	if (x_) {
		if (mr_)
			ds_mr_dereg(x_, mr_);
		ds_xfer_close(x_);
	}
	free(bounce_);
}

int Mover::open_locked(std::string *err)
{
	if (x_)
		return 0;
	// a node that is not there stays so for a while: do not retry per copy
	if (mono_ns() < next_try_ns_) {
		*err = open_err_;
		return -ENODEV;
	}
	int ret = ds_xfer_open(node_id_, &x_);
	if (!ret) {
		if (!bounce_ && posix_memalign(reinterpret_cast<void **>(&bounce_), 4096, kBounce))
			ret = -ENOMEM;
		else
			ret = ds_mr_reg(x_, bounce_, kBounce, &mr_);
		if (ret) {
			ds_xfer_close(x_);
			x_ = nullptr;
			mr_ = 0;
		}
	}
	if (ret) {
		open_err_ = "the master's dsmem node " + std::to_string(node_id_) +
			    " cannot move data: " + strerror(-ret) +
			    (ret == -ENOENT ? " (is the dsmem module loaded and the node added?)" : "");
		next_try_ns_ = mono_ns() + kRetryNs;
		fprintf(stderr, "dsmaster: %s\n", open_err_.c_str());
		*err = open_err_;
		return ret;
	}
	fprintf(stderr, "dsmaster: data mover on dsmem node %u\n", node_id_);
	return 0;
}

int Mover::ready(std::string *err)
{
	std::lock_guard<std::mutex> g(m_);
	return open_locked(err);
}

int Mover::rdma(bool write, const Place &p, uint64_t off, uint64_t buf_off, uint64_t len,
		std::string *err)
{
	std::vector<ds_transfer_request> reqs;
	for (uint64_t done = 0; done < len; done += kPiece) {
		ds_transfer_request r = {};
		r.source_offset = buf_off + done;
		r.target_id = p.seg.gaddr();
		r.target_offset = p.offset + off + done;
		r.length = std::min(kPiece, len - done);
		r.opcode = write ? DS_OP_WRITE : DS_OP_READ;
		r.mr = mr_;
		reqs.push_back(r);
	}
	// The master adds its peer to a client's node when the client
	// registers; that client's first put may commit, and ask for an EAGER
	// flush, before the connection is up (settle.hpp).
	int64_t settle_end =
		mono_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(kPeerSettle).count();
	int ret;
	for (int64_t wait_ms = 25;; wait_ms = std::min<int64_t>(2 * wait_ms, 400)) {
		uint64_t task;
		ret = ds_batch_submit(x_, reqs.data(), reqs.size(), &task);
		if (!ret) {
			int state = 0;
			std::vector<ds_transfer_status> st(reqs.size());
			ret = ds_task_query(x_, task, 1, 1, &state, st.data(), st.size());
			for (size_t i = 0; !ret && i < st.size(); i++)
				ret = st[i].status;
			if (!ret && state != DS_TASK_COMPLETE)
				ret = -EIO;
		}
		if (!peer_settling(ret) || mono_ns() >= settle_end)
			break;
		struct timespec ts = { 0, wait_ms * 1000000 };
		nanosleep(&ts, nullptr);
	}
	if (ret)
		*err = std::string("RDMA ") + (write ? "WRITE to" : "READ from") + " segment " +
		       std::to_string(p.seg.id()) + " (node " + std::to_string(p.seg.node_id()) +
		       "): " + strerror(-ret);
	return ret;
}

int Mover::nvme(bool write, const Place &p, uint64_t off, void *buf, uint64_t len,
		std::string *err)
{
	auto it = nvme_.find(p.seg.id());
	if (it == nvme_.end()) {
		std::unique_ptr<NvmeofTarget> t;
		if (int ret = NvmeofTarget::attach(p.seg.traddr(), p.seg.trsvcid(), p.seg.subnqn(), &t, err))
			return ret;
		it = nvme_.emplace(p.seg.id(), std::move(t)).first;
	}
	uint64_t at = p.seg.base() + p.offset + off;
	return write ? it->second->pwrite(buf, len, at, err) : it->second->pread(buf, len, at, err);
}

// buf holds len bytes; DRAM pieces go through the bounce buffer, whose
// caller-facing copy is buf (up to kBounce bytes at a time).
int Mover::io(bool write, const Resolved &r, uint64_t off, char *buf, uint64_t len,
	      std::set<uint64_t> *written_nvme, std::string *err)
{
	uint64_t reach = 0;
	int ret = for_each_shard(r, [](const Place &p) { return p.length; }, off, off + len,
				 [&](const Place &p, uint64_t first, uint64_t lo, uint64_t hi) {
		char *at = buf + (lo - off);
		if (p.seg.type() == v1::SEGMENT_NVMEOF) {
			if (write)
				written_nvme->insert(p.seg.id());
			return nvme(write, p, lo - first, at, hi - lo, err);
		}
		if (write)
			memcpy(bounce_, at, hi - lo);
		int st = rdma(write, p, lo - first, 0, hi - lo, err);
		if (!st && !write)
			memcpy(at, bounce_, hi - lo);
		return st;
	}, &reach);
	if (ret)
		return ret;
	if (reach < off + len) {
		*err = "replica shorter than the object";
		return -EINVAL;
	}
	return 0;
}

int Mover::read(const Resolved &src, uint64_t off, void *buf, uint64_t len, std::string *err)
{
	std::lock_guard<std::mutex> g(m_);
	if (int ret = open_locked(err))
		return ret;
	for (uint64_t done = 0; done < len; done += kBounce)
		if (int ret = io(false, src, off + done, static_cast<char *>(buf) + done,
				 std::min(kBounce, len - done), nullptr, err))
			return ret;
	return 0;
}

int Mover::write_unflushed(const Resolved &dst, uint64_t off, const void *buf, uint64_t len,
			   std::set<uint64_t> *written_nvme, std::string *err,
			   const std::function<int(std::string *)> &may_write)
{
	std::lock_guard<std::mutex> g(m_);
	if (int ret = open_locked(err))
		return ret;
	for (uint64_t done = 0; done < len; done += kBounce) {
		if (may_write)
			if (int ret = may_write(err))
				return ret;
		if (int ret = io(true, dst, off + done,
				 const_cast<char *>(static_cast<const char *>(buf)) + done,
				 std::min(kBounce, len - done), written_nvme, err))
			return ret;
	}
	return 0;
}

// O_DIRECT writes may sit in the target's volatile write cache: until the
// namespace is flushed, a power loss on the target takes them, and the
// replica must not be recorded before then.
int Mover::flush(const std::set<uint64_t> &written_nvme, std::string *err)
{
	std::lock_guard<std::mutex> g(m_);
	for (uint64_t id : written_nvme) {
		// nvme() attached every segment it wrote, and attachments stay
		auto it = nvme_.find(id);
		std::string why = "not attached";
		int ret = it == nvme_.end() ? -ENODEV : it->second->sync(&why);
		if (ret) {
			*err = "NVMe-oF segment " + std::to_string(id) +
			       ": the flush after writing failed, the copy is not durable: " + why;
			return ret;
		}
	}
	return 0;
}

int Mover::write(const Resolved &dst, uint64_t off, const void *buf, uint64_t len, std::string *err,
		 const std::function<int(std::string *)> &may_write)
{
	std::set<uint64_t> written_nvme;
	if (int ret = write_unflushed(dst, off, buf, len, &written_nvme, err, may_write))
		return ret;
	return flush(written_nvme, err);
}

int Mover::copy(const Resolved &src, const Resolved &dst, uint64_t size, const v1::Checksums &sums,
		std::string *err, const std::function<int(std::string *)> &may_write)
{
	static_assert(kBounce % kSumChunk == 0, "a round holds whole checksum chunks");
	std::vector<char> buf(std::min(kBounce, size));
	std::set<uint64_t> written_nvme;
	for (uint64_t done = 0; done < size; done += kBounce) {
		uint64_t n = std::min(kBounce, size - done);
		if (int ret = read(src, done, buf.data(), n, err))
			return ret;
		if (int ret = check_sums(sums, size, { { buf.data(), n } }, done, n, err))
			return ret;
		if (int ret = write_unflushed(dst, done, buf.data(), n, &written_nvme, err, may_write))
			return ret;
	}
	return flush(written_nvme, err);
}

int Mover::check(const Resolved &src, uint64_t size, const v1::Checksums &sums, std::string *err)
{
	std::vector<char> buf(std::min(kBounce, size));
	for (uint64_t done = 0; done < size; done += kBounce) {
		uint64_t n = std::min(kBounce, size - done);
		if (int ret = read(src, done, buf.data(), n, err))
			return ret;
		if (int ret = check_sums(sums, size, { { buf.data(), n } }, done, n, err))
			return ret;
	}
	return 0;
}

}  // namespace dsmem::store
