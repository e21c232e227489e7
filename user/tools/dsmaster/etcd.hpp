// SPDX-License-Identifier: BSD-2-Clause
// A small etcd v3 client over gRPC (etcd.proto is our own subset of etcd's
// wire definitions) and a leader election on one lease-backed key.
//
// Every call has a short deadline (kEtcdDeadline) so a dead etcd costs a
// caller seconds, not forever; UNAVAILABLE moves on to the next endpoint.
// Errors: -EAGAIN no endpoint answered, -ETIMEDOUT deadline, -ENOENT key or
// lease absent, -ESTALE a fence compare failed, -EMSGSIZE over etcd's
// request limit, -EIO anything else; *err says which endpoint and why.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tls.hpp"

namespace dsmem::store {

inline constexpr std::chrono::milliseconds kEtcdDeadline{ 2000 };

struct EtcdKV {
	std::string key, value;
	int64_t create_revision = 0, mod_revision = 0, lease = 0;
};

// One operation of a fenced transaction.  A delete with range_end deletes
// [key, range_end); without, the one key.
struct EtcdOp {
	enum Kind { Put, Delete } kind = Put;
	std::string key, value, range_end;
	int64_t lease = 0;
};

// The end of the range holding every key that starts with prefix: the
// prefix with its last byte + 1 (trailing 0xff bytes dropped first).
std::string etcd_prefix_end(const std::string &prefix);

class EtcdClient {	// thread-safe
public:
	// "127.0.0.1:2379[,...]" tries each; over TLS (client certificate
	// too, for etcd's --client-cert-auth) when tls.ca is set
	explicit EtcdClient(const std::string &endpoints, const TlsFiles &tls = {});
	~EtcdClient();
	EtcdClient(const EtcdClient &) = delete;
	EtcdClient &operator=(const EtcdClient &) = delete;

	int get(const std::string &key, EtcdKV *kv, std::string *err);	// -ENOENT
	int range(const std::string &prefix, std::vector<EtcdKV> *out, std::string *err);	// all keys with prefix
	// [key, range_end) at revision (0: now), paged; *rev the revision read
	int range_at(const std::string &key, const std::string &range_end, int64_t revision,
		     std::vector<EtcdKV> *out, int64_t *rev, std::string *err);
	int put(const std::string &key, const std::string &value, int64_t lease, std::string *err);
	int del_prefix(const std::string &prefix, std::string *err);
	int lease_grant(int64_t ttl_s, int64_t *id, std::string *err);
	int lease_keepalive(int64_t id, int64_t *ttl_left, std::string *err);	// one refresh; ttl 0 => expired (-ENOENT)
	int lease_revoke(int64_t id, std::string *err);
	// key absent -> put with lease; *won; *rev = the key's create_revision, *holder = its value
	int create_if_absent(const std::string &key, const std::string &value, int64_t lease,
			     bool *won, int64_t *rev, std::string *holder, std::string *err);
	// generic fenced txn: if fence_key's create_revision == fence_rev then puts/deletes
	int fenced_txn(const std::string &fence_key, int64_t fence_rev,
		       const std::vector<std::pair<std::string, std::string>> &puts,
		       const std::vector<std::string> &deletes,
		       const std::vector<std::string> &delete_prefixes,
		       std::string *err);	// -ESTALE when the compare fails
	// The same with ops in order (puts with leases, range deletes).
	int fenced_ops(const std::string &fence_key, int64_t fence_rev,
		       const std::vector<EtcdOp> &ops, std::string *err);
	// The same, and also only if none of the keys in absent exists
	// (compare create_revision == 0).  -ESTALE when any compare fails;
	// *err says whether the fence or which key.
	int fenced_ops_if_absent(const std::string &fence_key, int64_t fence_rev,
				 const std::vector<std::string> &absent,
				 const std::vector<EtcdOp> &ops, std::string *err);
	const std::string &endpoints() const { return endpoints_; }

	struct Impl;

private:
	std::string endpoints_;
	std::unique_ptr<Impl> impl_;
};

// Leader election on one key (lease-backed, create-if-absent).
class Election {
public:
	Election(std::shared_ptr<EtcdClient> etcd, std::string key, std::string value, int64_t ttl_s);
	~Election() = default;
	int campaign(bool *leader, std::string *err);	// one try; does not block
	int keepalive(std::string *err);		// -ESTALE: leadership lost
	void resign();					// revoke the lease
	int leader(std::string *value, std::string *err);	// current holder's value, -ENOENT none
	int64_t revision() const;			// our key's create_revision (the fence)
	// Until when (clock_ns()) nobody else can hold the key: 0 unless we
	// hold it.  etcd keeps a lease TTL seconds past a renewal it
	// receives, so at least that long past the moment the renewal was
	// sent, less a tenth for clocks that run at different rates.
	int64_t held_until_ns() const { return held_until_ns_.load(); }
	// CLOCK_BOOTTIME: it runs on while this process is stopped and while
	// the host sleeps, as etcd's clock does
	static int64_t clock_ns();

private:
	void renewed(int64_t sent_ns, int64_t ttl_s);

	std::shared_ptr<EtcdClient> etcd_;
	std::string key_, value_;
	int64_t ttl_s_;
	std::mutex m_;
	int64_t lease_ = 0;
	int64_t lease_ends_ns_ = 0;	// the hold the last grant or renewal gives
	std::atomic<int64_t> rev_{ 0 };
	std::atomic<int64_t> held_until_ns_{ 0 };
};

// Renews an election's lease every period on a thread of its own while it
// lives, for whoever holds it through work longer than the TTL: a master
// taking over replays the whole log before it can renew again, and a long
// log under load outlasted the TTL -- the lease ran out, the takeover's
// fenced writes failed, and the next campaign replayed the same log
// again: no leader for good.  A renewal that fails is for the holder's
// fenced writes to find.
class LeaseRenewer {
public:
	LeaseRenewer(Election &e, std::chrono::milliseconds period);
	~LeaseRenewer();
	LeaseRenewer(const LeaseRenewer &) = delete;
	LeaseRenewer &operator=(const LeaseRenewer &) = delete;

private:
	std::mutex m_;
	std::condition_variable cv_;
	bool done_ = false;
	std::thread t_;		// last: started once the rest is there
};

}  // namespace dsmem::store
