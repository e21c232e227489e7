// SPDX-License-Identifier: BSD-2-Clause
// What the fixtures of dsmaster's Leader and metrics tests share: a
// master's options on loopback, and the requests of its one client (its
// registration and DRAM segment, puts and gets).  Each test sends them
// its own way: to the Leader as an app, or through the MasterService,
// whose RPCs the metrics count.
#pragma once

#include <cstdint>
#include <string>

#include "service.hpp"
#include "store_sums.hpp"

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

using testsums::zero_sums;

// One DRAM replica.
inline v1::PutStartRequest put_start_request(uint64_t client, const std::string &key, uint64_t size)
{
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

// The newest version.
inline v1::GetRequest get_request(const std::string &key)
{
	v1::GetRequest q;
	q.set_key(key);
	q.set_min_version(-1);
	return q;
}

}  // namespace dsmem::store::leaderfx
