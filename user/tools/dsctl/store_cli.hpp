// SPDX-License-Identifier: BSD-2-Clause
// dsctl obj, master and segment show pool: the words of the object store's
// commands and the records they print.  Nothing here talks to a store, so
// the unit tests (test_store_cli) run it as it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dsmem/store.h>

#include "cli.hpp"
#include "output.hpp"

namespace dsctl {

// The environment variables that stand in for "master" and "node".
inline constexpr const char *masters_env = "DSMEM_MASTERS";
inline constexpr const char *node_env = "DSMEM_NODE";

// The master addresses: HOST:PORT[,HOST:PORT...] (a host in brackets for
// IPv6, "[::1]:7600"), each port from 1 to 65535.  False on anything else.
bool valid_masters(std::string_view s);

// "master" (when given) or DSMEM_MASTERS into out; false with err set
// when neither is there or the value is not valid_masters().
bool resolve_masters(const std::string *given, std::string &out, std::string &err);

// "node" (when given) or DSMEM_NODE into out (1 .. 65535); false with
// err set when neither is there or the value is not a node id.
bool resolve_node(const std::string *given, uint32_t &out, std::string &err);

// A key: 1 .. DS_STORE_KEY_MAX bytes.  False with err set otherwise.
bool check_key(std::string_view key, std::string &err);

// A key as text and JSON print it: valid UTF-8 as it is, any other byte
// as \xHH (JSON needs UTF-8).
std::string key_string(std::string_view key);

// flush: "none", "lazy" or "eager", abbreviated as matches() allows.
bool parse_flush(std::string_view s, uint32_t &out);
std::string flush_name(uint32_t flush);

// A read/write mix "R:W" (two numbers, not both 0, each at most 100000).
bool parse_mix(std::string_view s, uint32_t &reads, uint32_t &writes);

// A time to live in ms: NUMBER with a suffix ms, s, m, h or d (none: ms),
// or "none" (0), at most DS_STORE_TTL_MAX_MS ("3660d").  False on
// garbage, a suffix on its own, overflow and anything over the limit.
bool parse_ttl(std::string_view s, uint64_t &ms);

// ---- the commands' words ---------------------------------------------------

// Where a command finds the store, and as which local node.
struct store_target {
	std::string masters;
	uint32_t node = 0;
};

struct put_args {
	store_target target;
	std::string key;
	std::string file;			// "" or "-": standard input
	ds_store_replicate_config config{ 1, 0, DS_STORE_FLUSH_NONE, 0 };
	bool soft_pin = false;			// pin
	uint64_t ttl_ms = 0;			// ttl DURATION; 0: none
};

struct get_args {
	store_target target;
	std::string key;
	std::string file;			// "" or "-": standard output
	int64_t min_version = -1;
	uint64_t offset = 0;
	uint64_t length = UINT64_MAX;		// UINT64_MAX: to the end
};

// del, sync and stat: a key and nothing else.
struct key_args {
	store_target target;
	std::string key;
};

// pin, unpin and ttl: a key's attributes (ds_store_set_attr).
struct attr_args {
	store_target target;
	std::string key;
	uint32_t mask = 0;			// DS_STORE_ATTR_*
	bool soft_pin = false;			// pin, not unpin
	uint64_t ttl_ms = 0;			// ttl DURATION; 0: none
};

struct replicate_args {
	store_target target;
	std::string key;
	ds_store_replicate_config config{ 1, 0, DS_STORE_FLUSH_NONE, 0 };
};

struct list_args {
	store_target target;
	std::string prefix;
};

struct bench_args {
	store_target target;
	uint64_t size = 1 << 20;		// 16K .. 64M
	uint64_t count = 64;			// objects
	uint32_t threads = 1;
	uint32_t reads = 50, writes = 50;	// the mix
	uint32_t replicas = 1;
	uint64_t seconds = 5;			// the mixed phase; 0: none
};

// Each parses the words after the command (a is consumed), checks them and
// resolves master and node; false with err set as dsctl prints it.
bool parse_put(args &a, put_args &out, std::string &err);
bool parse_get(args &a, get_args &out, std::string &err);
bool parse_key_cmd(args &a, const char *cmd, key_args &out, std::string &err);
// cmd "pin", "unpin" or "ttl" (the latter with its DURATION after KEY).
bool parse_attr(args &a, const char *cmd, attr_args &out, std::string &err);
bool parse_replicate(args &a, replicate_args &out, std::string &err);
bool parse_list(args &a, list_args &out, std::string &err);
bool parse_bench(args &a, bench_args &out, std::string &err);
// master show, segment show pool: only "master".
bool parse_master_only(args &a, std::string &masters, std::string &err);
// segment show pool: "master" and "node" (a filter on the segments' node).
bool parse_pool_show(args &a, std::string &masters, uint32_t &node, std::string &err);

// segment add pool: an NVMe-oF namespace (attached with nvme-rdma) as a
// segment of the pool.
struct pool_add_args {
	std::string masters;
	std::string traddr;
	uint32_t trsvcid = 4420;
	std::string subnqn;
	uint64_t base = 0;
	uint64_t size = 0;
};
bool parse_pool_add(args &a, pool_add_args &out, std::string &err);

// master drain segment ID [deadline SECONDS] [master ADDRS]
struct drain_args {
	std::string masters;
	uint64_t segment = 0;
	uint64_t deadline_s = 0;	// 0: the master's --drain-timeout-ms
};
bool parse_drain(args &a, drain_args &out, std::string &err);

// master monitor [count N] [time SECONDS] [master ADDRS]
struct monitor_args {
	std::string masters;
	uint64_t count = 0;		// 0: no limit
	uint64_t seconds = 0;		// 0: no limit
};
bool parse_store_monitor(args &a, monitor_args &out, std::string &err);

// ---- records ---------------------------------------------------------------

std::string task_state_name(uint32_t state);
std::string pool_segment_type_name(uint32_t type);
std::string pool_segment_state_name(uint32_t state);
// utc_string(): output.hpp.

// What put printed: the version, the replicas made of those asked for.
record put_record(const std::string &key, const ds_store_replicate_config &cfg,
		  const ds_store_task_status &st);
// replicate: as put, without the size.
record replicate_record(const std::string &key, const ds_store_replicate_config &cfg,
			const ds_store_task_status &st);
// get into a file: where the bytes went.
record get_record(const std::string &key, const ds_store_task_status &st, uint64_t offset,
		  const std::string &file);
record sync_record(const std::string &key, const ds_store_task_status &st);
// list and stat: one object's newest complete version.
record object_record(const ds_store_object_info &o);
record master_record(const struct ds_store_master_info &m);
record pool_segment_record(const ds_store_segment_info &s);
// What segment add pool made.
record pool_added_record(const pool_add_args &a, uint64_t id);
record drained_record(uint64_t segment, uint64_t moved);
const char *store_event_name(uint32_t type);
record store_event_record(const ds_store_event &ev);

// Latencies of one kind of operation, in ns.
struct latencies {
	std::vector<uint64_t> ns;
	uint64_t bytes = 0;

	void add(uint64_t t, uint64_t b)
	{
		ns.push_back(t);
		bytes += b;
	}
	void merge(const latencies &o)
	{
		ns.insert(ns.end(), o.ns.begin(), o.ns.end());
		bytes += o.bytes;
	}
	// The q-quantile (0 < q <= 1) in us, to two decimals; null when empty.
	// Sorts ns.
	record quantile_us(double q);
};

struct bench_result {
	latencies fill, put, get;
	uint64_t fill_ns = 0;			// the fill phase's wall time
	uint64_t mixed_ns = 0;			// the mixed phase's wall time
	uint64_t errors = 0;
	std::string first_error;
};

// ops per second, MB (10^6 bytes) per second, to two decimals; null
// when no time passed.
record per_second(uint64_t n, uint64_t ns);
record bench_record(const bench_args &a, bench_result &r);

}  // namespace dsctl
