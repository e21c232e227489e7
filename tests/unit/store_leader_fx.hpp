// SPDX-License-Identifier: BSD-2-Clause
// What the fixtures of dsmaster's Leader and metrics tests share: a
// master's options on loopback, and the requests of its one client (its
// registration and DRAM segment, puts and gets).  Each test sends them
// its own way: to the Leader as an app, or through the MasterService,
// whose RPCs the metrics count.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "checksum.hpp"
#include "service.hpp"

namespace dsmem::store::leaderfx {

constexpr uint32_t kNode = 9;
constexpr uint64_t kSegment = 64ull << 20;
constexpr uint64_t kGaddr = 0x9001000000000ull;

// The master of node kNode, never snapshotting, whose clients never miss
// a heartbeat.
inline void master_options(Options *o)
{
	o->node = kNode;
	o->addr = "127.0.0.1";
	o->port = 7479;
	o->advertise = "127.0.0.1:7700";
	o->heartbeat_timeout_ms = 600000;	// nobody beats here
	o->heartbeat_ms = 100;
	o->snapshot_every = 1u << 30;
}

inline v1::RegisterClientRequest client_request()
{
	v1::RegisterClientRequest q;
	q.mutable_self()->set_node_id(kNode);
	q.mutable_self()->set_addr("127.0.0.1");
	q.mutable_self()->set_port(7479);
	return q;
}

// The client's one DRAM segment, kSegment bytes at kGaddr.
inline v1::RegisterSegmentRequest segment_request(uint64_t client)
{
	v1::RegisterSegmentRequest q;
	q.set_client_id(client);
	q.mutable_desc()->set_type(v1::SEGMENT_DRAM);
	q.mutable_desc()->set_size(kSegment);
	q.mutable_desc()->set_node_id(kNode);
	q.mutable_desc()->set_gaddr(kGaddr);
	return q;
}

// One DRAM replica.
// The checksums of size zero bytes, as a writer makes them: each iovec
// names the same zeroed chunk, so no object-sized buffer is needed.
inline v1::Checksums zero_sums(uint64_t size)
{
	static const std::vector<char> zeros(kSumChunk);
	std::vector<iovec> iov;
	for (uint64_t at = 0; at < size; at += kSumChunk)
		iov.push_back({ const_cast<char *>(zeros.data()),
				std::min<uint64_t>(kSumChunk, size - at) });
	v1::Checksums sums;
	make_sums(iov, size, &sums);
	return sums;
}

// The size each key's last put_start_request named: a commit carries the
// sums of that many bytes (the master refuses one without), and callers
// of put_commit_request need not say the size again.
inline std::map<std::string, uint64_t> &put_sizes(std::unique_lock<std::mutex> *l)
{
	static std::mutex m;
	static std::map<std::string, uint64_t> sizes;
	*l = std::unique_lock<std::mutex>(m);
	return sizes;
}

inline v1::PutStartRequest put_start_request(uint64_t client, const std::string &key, uint64_t size)
{
	{
		std::unique_lock<std::mutex> l;
		put_sizes(&l)[key] = size;
	}
	v1::PutStartRequest q;
	q.set_client_id(client);
	q.set_key(key);
	q.set_size(size);
	q.mutable_config()->set_dram_replicas(1);
	return q;
}

// The one replica written, of size bytes of zeros.
inline v1::PutCommitRequest put_commit_request(uint64_t client, const std::string &key,
					       uint64_t version, uint64_t size)
{
	v1::PutCommitRequest q;
	q.set_client_id(client);
	q.set_key(key);
	q.set_version(version);
	q.add_done(0);
	*q.mutable_sums() = zero_sums(size);
	return q;
}

// The same, of the size the key's last put_start_request named.
inline v1::PutCommitRequest put_commit_request(uint64_t client, const std::string &key,
					       uint64_t version)
{
	uint64_t size = 0;
	{
		std::unique_lock<std::mutex> l;
		auto &sizes = put_sizes(&l);
		auto it = sizes.find(key);
		if (it != sizes.end())
			size = it->second;
	}
	return put_commit_request(client, key, version, size);
}

// The newest version.
inline v1::GetRequest get_request(const std::string &key)
{
	v1::GetRequest q;
	q.set_key(key);
	q.set_min_version(-1);
	return q;
}

}  // namespace dsmem::store::leaderfx
