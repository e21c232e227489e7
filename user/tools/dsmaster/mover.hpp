// SPDX-License-Identifier: BSD-2-Clause
// The master's data mover: copies replicas (re-replication, Replicate,
// drain) and reads them for the slow tier, through the master's own dsmem
// node (RDMA READ into a registered bounce buffer, WRITE out of it) and
// NVMe-oF namespaces.  It opens the node lazily, so a master on a host
// without the dsmem module still runs the control plane.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dsstore.pb.h"
#include "nvmeof.hpp"

struct ds_xfer;

namespace dsmem::store {

// One shard, resolved to where it lives.
struct Place {
	v1::SegmentDesc seg;
	uint64_t offset = 0, length = 0;
};
using Resolved = std::vector<Place>;	// a replica's shards, in object order

class Mover {
public:
	explicit Mover(uint32_t node_id) : node_id_(node_id) {}
	~Mover();
	Mover(const Mover &) = delete;
	Mover &operator=(const Mover &) = delete;

	// Bytes [off, off + len) of the object a replica holds.
	int read(const Resolved &src, uint64_t off, void *buf, uint64_t len, std::string *err);
	// Returns once the bytes are durable: every NVMe-oF namespace it
	// wrote was flushed (a failed flush fails the write), as a client's
	// put flushes before it commits.
	// may_write: as copy()'s, before each round of the bounce buffer's size.
	int write(const Resolved &dst, uint64_t off, const void *buf, uint64_t len, std::string *err,
		  const std::function<int(std::string *)> &may_write = nullptr);
	// A whole object, in pieces of the bounce buffer's size, each checked
	// against the writer's sums before it goes on (-EBADMSG: the source
	// is not the object); durable like write(), with one flush per
	// NVMe-oF namespace at the end.
	// may_write (if given) is asked before each round is written; its
	// error ends the copy (a leader whose lease ran out writes no more).
	int copy(const Resolved &src, const Resolved &dst, uint64_t size, const v1::Checksums &sums,
		 std::string *err, const std::function<int(std::string *)> &may_write = nullptr);
	// Read a whole replica and check it against the sums (-EBADMSG).
	int check(const Resolved &src, uint64_t size, const v1::Checksums &sums, std::string *err);
	// 0 if the node can be used (opens it); the reason if not.
	int ready(std::string *err);

private:
	int open_locked(std::string *err);
	int rdma(bool write, const Place &p, uint64_t off, uint64_t buf_off, uint64_t len,
		 std::string *err);
	int nvme(bool write, const Place &p, uint64_t off, void *buf, uint64_t len, std::string *err);
	int io(bool write, const Resolved &r, uint64_t off, char *buf, uint64_t len,
	       std::set<uint64_t> *written_nvme, std::string *err);
	// write() without the flush: the NVMe-oF segments it wrote are added
	// to written_nvme, for flush().
	int write_unflushed(const Resolved &dst, uint64_t off, const void *buf, uint64_t len,
			    std::set<uint64_t> *written_nvme, std::string *err,
			    const std::function<int(std::string *)> &may_write = nullptr);
	int flush(const std::set<uint64_t> &written_nvme, std::string *err);

	uint32_t node_id_;
	std::mutex m_;			// one copy at a time: a ds_xfer is per thread
	ds_xfer *x_ = nullptr;
	char *bounce_ = nullptr;
	uint32_t mr_ = 0;
	int64_t next_try_ns_ = 0;
	std::string open_err_;
	std::map<uint64_t, std::unique_ptr<NvmeofTarget>> nvme_;	// by segment id
};

}  // namespace dsmem::store
