// SPDX-License-Identifier: BSD-2-Clause
// The object store's client: gRPC to the masters (leader following),
// membership (grants and peers), heartbeats, and a queue of tasks run by
// worker threads that move object bytes with the dsmem data path.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <sys/uio.h>

#include <grpcpp/grpcpp.h>

#include <dsmem/ds.h>
#include <dsmem/store.h>

#include "dsstore.grpc.pb.h"
#include "nvmeof.hpp"
#include "tls.hpp"

namespace dsmem::store {

namespace pb = ::dsmem::store::v1;
using Clock = std::chrono::steady_clock;

// gRPC takes deadlines on the system clock only.
inline std::chrono::system_clock::time_point wall(Clock::time_point t)
{
	auto left = t - Clock::now();
	return std::chrono::system_clock::now() +
	       std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
}

// A gRPC status as the C API's negative errno (store-brief.md's table).
int status_to_errno(const grpc::Status &s);
// "not the leader; leader is ADDR": true, and *leader = ADDR ("" unknown).
bool not_leader(const grpc::Status &s, std::string *leader);
// "key": 0, or -EINVAL with *why set.
int check_key(const char *key, std::string *why);

// A master's CLOCK_REALTIME instant (a lease's or a put's end) on our
// steady clock, without trusting the two realtime clocks to agree: the
// span it leaves, as of the response, counted from when the request was
// sent, less margin_pct percent of it.  A span that is already over (or
// a clock far ahead of the master's) gives sent, i.e. "over".
Clock::time_point local_deadline(Clock::time_point sent, int64_t realtime_at_response,
				 int64_t until_ns, unsigned margin_pct);
// The same from the span the master gave (left_ns as of its answer),
// counted from when the request was sent: no realtime clock involved.
Clock::time_point local_deadline_after(Clock::time_point sent, int64_t left_ns,
				       unsigned margin_pct);
// An answer's deadline on our clock: its span when the master gave one
// (has_left), else its realtime instant (an older master).
Clock::time_point answer_deadline(Clock::time_point sent, bool has_left, int64_t left_ns,
				  int64_t until_ns, unsigned margin_pct);
// CLOCK_REALTIME in ns, as the master's deadlines are given.
int64_t realtime_ns();
// The C API's replication config as the RPCs carry it.
pb::ReplicateConfig to_pb(const ds_store_replicate_config &c);

// A put's attributes (ds_store_put_opts), checked.
struct PutAttrs {
	bool soft_pin = false;
	uint64_t ttl_ms = 0;		// 0: none
	bool any() const { return soft_pin || ttl_ms; }
};
// opts as the C API takes it (a struct that grows, see store.h) into
// *out: 0, or -EINVAL / -E2BIG with *why set.  NULL: no attributes.
int read_put_opts(const ds_store_put_opts *opts, PutAttrs *out, std::string *why);
// A name for one request, the same on each of its retries (never 0).
uint64_t new_request_id();
// A replica's shard's length, for for_each_shard (shards.hpp).
inline uint64_t shard_length(const pb::Shard &s)
{
	return s.length();
}

// The masters, by address; calls go to the one believed to lead and
// follow redirections, trying the others while one is unreachable.
class Masters {
public:
	// "h:p[,h:p...]", reached with tls's credentials (insecure: loopback only)
	int set(const std::string &list, const TlsFiles &tls, std::string *err);
	std::string leader() const;

	template <typename Req, typename Resp>
	using Method = grpc::Status (pb::Master::Stub::*)(grpc::ClientContext *, const Req &, Resp *);

	// 0 or -errno (*err says why); gives up at deadline.
	template <typename Req, typename Resp>
	int call(Method<Req, Resp> m, const Req &req, Resp *resp, Clock::time_point deadline,
		 std::string *err, grpc::Status *last = nullptr)
	{
		int hops = 0;
		std::chrono::milliseconds backoff(20);
		size_t tried = 0;
		bool unreachable = false;
		std::string refused;	// refused_hint() of a connection closed

		for (;;) {
			std::string addr;
			std::shared_ptr<pb::Master::Stub> stub = current(&addr);
			grpc::ClientContext ctx;
			ctx.set_deadline(wall(deadline));
			grpc::Status s = (stub.get()->*m)(&ctx, req, resp);
			if (last)
				*last = s;
			if (s.ok())
				return 0;
			std::string hint;
			bool redirect = not_leader(s, &hint);
			bool down = s.error_code() == grpc::StatusCode::UNAVAILABLE;
			unreachable |= down;
			if (down) {
				forget(addr);
				if (refused.empty())
					refused = refused_hint(s);
			}
			if (!redirect && !down) {
				*err = addr + ": " + s.error_message();
				// out of time (ours, not a master's own deadline, as a
				// drain's) while no master answered at all
				if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && unreachable &&
				    Clock::now() >= deadline) {
					*err += refused;
					return -EAGAIN;
				}
				return status_to_errno(s);
			}
			if (Clock::now() >= deadline) {
				*err = addr + ": " + s.error_message() + refused;
				return -EAGAIN;	// every master tried
			}
			if (redirect && !hint.empty() && hint != addr && hops++ < 8) {
				follow(hint);
				continue;
			}
			// unreachable, or a master that does not know the
			// leader yet: the next one, pausing after each round
			advance(addr);
			if (++tried % addrs_size() == 0 || redirect) {
				auto left = deadline - Clock::now();
				std::this_thread::sleep_for(std::min<Clock::duration>(backoff, left));
				backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
				hops = 0;
			}
		}
	}

	// What a connection closed in the TLS handshake may mean: a master
	// refuses there a caller whose certificate is missing or not of the
	// store's CA, and TLS 1.3 tells the caller no more than that the
	// socket closed.  "" for other statuses.
	static std::string refused_hint(const grpc::Status &s);

	std::shared_ptr<pb::Master::Stub> current(std::string *addr);
	void follow(const std::string &addr);
	void advance(const std::string &from);
	// A TLS channel that failed to connect keeps failing after the master
	// is back (gRPC 1.51: a master restarted, a link cut and restored):
	// one in TRANSIENT_FAILURE is dropped, the next call makes a fresh one.
	void forget(const std::string &addr);

private:
	size_t addrs_size() const;
	std::shared_ptr<pb::Master::Stub> stub_for(const std::string &addr);

	mutable std::mutex mu_;
	std::vector<std::string> addrs_;
	size_t cur_ = 0;
	struct Chan {
		std::shared_ptr<grpc::Channel> ch;
		std::shared_ptr<pb::Master::Stub> stub;
	};
	std::map<std::string, Chan> stubs_;
	std::shared_ptr<grpc::ChannelCredentials> creds_;
};

// One key of a batch task: the caller's item, where its result goes
// (valid until the task is done, as the buffers are).
struct BatchItem {
	std::string key;
	std::vector<iovec> iov;
	uint64_t size = 0;
	ds_store_batch_item *out = nullptr;
	std::string why;			// a failure's reason
	Clock::time_point lease_end{};		// get: its lease, on our clock
};

// Tasks: queued (WAITING), run by a worker (PENDING), then done.
class TaskQueue {
public:
	// Runs on worker `worker`; fills *st (version, replicas, ...);
	// returns 0 (COMPLETE), -ETIMEDOUT (TIMEOUT) or -errno (FAILED), and
	// on failure may say why in *why (the master's words, a segment...).
	using Fn = std::function<int(unsigned worker, Clock::time_point deadline,
				     ds_store_task_status *st, std::string *why)>;

	TaskQueue() = default;
	TaskQueue(const TaskQueue &) = delete;
	TaskQueue &operator=(const TaskQueue &) = delete;
	~TaskQueue() { stop(); }

	void start(unsigned workers);
	// -ESHUTDOWN once stopped.
	int submit(uint32_t kind, uint32_t timeout_ms, Fn fn, uint64_t *id);
	// Unknown ids report INVALID (-ENOENT in err) and return 0; why (when
	// not NULL) gets a done task's reason, "" if it completed or gave none.
	int query(uint64_t id, int wait_ms, bool release, ds_store_task_status *st,
		  std::string *why = nullptr);
	int cancel(uint64_t id);	// -EBUSY running or done, -ENOENT unknown
	// Cancel what waits, let running tasks end, join the workers.
	void stop();
	size_t size();			// tasks not released

private:
	struct Task {
		ds_store_task_status st{};
		std::string why;	// a failed task's reason
		Fn fn;
		Clock::time_point deadline;
	};
	static bool done(const Task &t) { return t.st.state > DS_STORE_PENDING; }
	void expire(Task &t);
	void worker(unsigned index);

	std::mutex mu_;
	std::condition_variable work_cv_;
	std::condition_variable done_cv_;
	std::deque<uint64_t> queue_;
	std::unordered_map<uint64_t, std::shared_ptr<Task>> tasks_;
	std::vector<std::thread> workers_;
	uint64_t next_id_ = 1;
	bool stopping_ = false;
};

struct ClientConfig {
	std::string masters;
	uint32_t node_id = 0;
	std::string addr;		// "": the node's device's address
	uint64_t segment_size = 0;
	uint32_t threads = 4;
	uint32_t timeout_ms = 30000;
	TlsFiles tls;
};

class ClientCore {
public:
	ClientCore() = default;
	ClientCore(const ClientCore &) = delete;
	ClientCore &operator=(const ClientCore &) = delete;
	~ClientCore();

	int open(const ClientConfig &cfg, std::string *err);
	// No node, no registration: the task machinery and argument checks
	// alone, for the unit tests.
	int open_detached(const ClientConfig &cfg, std::string *err);
	// Leave.  With drain, bounded by deadline_ms (0: 120 s or the task
	// timeout, whichever is longer): 0 drained (*moved), else the
	// master's error in *err and the client left without draining (the
	// master reclaims what did not move).
	int close(bool drain, uint64_t deadline_ms = 0, uint64_t *moved = nullptr,
		  std::string *err = nullptr);

	int put(const char *key, const struct iovec *iov, size_t n,
		const ds_store_replicate_config *cfg, const PutAttrs &attrs, uint64_t *task,
		std::string *err);
	int get(const char *key, const struct iovec *iov, size_t n, int64_t min_version,
		uint64_t offset, uint64_t *task, std::string *err);
	int replicate(const char *key, const ds_store_replicate_config *cfg, uint64_t *task,
		      std::string *err);
	int del(const char *key, uint64_t *task, std::string *err);
	int sync(const char *key, uint64_t *task, std::string *err);
	TaskQueue &tasks() { return tasks_; }

	int buf_reg(void *addr, size_t len, std::string *err);
	int buf_dereg(void *addr, std::string *err);

	int list(const std::string &prefix, const std::string &after, uint32_t limit,
		 pb::ListResponse *out, std::string *err);
	int stat(const std::string &key, pb::ObjectInfo *out, std::string *err);
	// SetAttr, at once: mask is DS_STORE_ATTR_* (checked by the caller).
	int set_attr(const std::string &key, uint32_t mask, const PutAttrs &attrs,
		     pb::SetAttrResponse *out, std::string *err);

	// Batches (batch.cpp): puts and gets as one task each; exist and
	// del at once.  Each key's result goes into its item.
	int batch_put(ds_store_batch_item *items, size_t n, const ds_store_replicate_config *cfg,
		      const PutAttrs &attrs, uint64_t *task, std::string *err);
	int batch_get(ds_store_batch_item *items, size_t n, uint64_t *task, std::string *err);
	int batch_exist(ds_store_batch_item *items, size_t n, std::string *err);
	int batch_del(ds_store_batch_item *items, size_t n, std::string *err);
	// keys (and with_iov, buffers) checked; *out the task's copy
	static int batch_check(const ds_store_batch_item *items, size_t n, bool with_iov,
			       std::vector<struct BatchItem> *out, std::string *err);

	uint64_t client_id() const { return client_id_.load(); }
	// Its membership as this client saw it: its heartbeats and rejoins.
	void health(ds_store_health *h) const;

private:
	struct Worker {
		std::mutex mu;		// the handle is not thread-safe
		ds_xfer *x = nullptr;
		std::map<uintptr_t, std::pair<size_t, uint32_t>> mrs;	// addr -> len, mr
		// A ranged get's scratch: the bytes of the chunks it cuts that
		// lie outside the caller's range, read so that the chunks can
		// be checked whole.  Kept (and registered, in mrs) from get to
		// get; only the worker's own thread uses it and wide.
		std::vector<char> scratch;
		std::vector<iovec> wide;
	};
	struct MemberRec {
		pb::Member m;
	};
	// One request's source: an MR and offset, or a plain pointer.
	struct Piece {
		void *p;
		uint64_t len;
		uint64_t obj_off;	// where in the object
	};

	Clock::time_point deadline_in(uint32_t ms) const;
	int join(uint64_t previous, std::string *err);
	int rejoin(uint64_t seen_id);
	int setup_segment(const pb::RegisterClientResponse &r, std::string *err);
	void member_joined(const pb::Member &m);
	void member_left(const pb::Member &m);
	void apply_member(const pb::Member &m);
	bool peer_exists(uint32_t node, const std::string &addr, uint32_t port);
	bool listen_exists(uint32_t node, const std::string &addr);
	void wait_ready();
	void reconcile_members();
	void self_peer();
	void heartbeat_loop();
	void reconcile_loop();
	void watch_loop();
	bool sleep_or_stop(std::chrono::milliseconds d);

	int segment(uint64_t id, pb::SegmentDesc *d, Clock::time_point deadline);
	int nvmeof_target(const pb::SegmentDesc &d, NvmeofTarget **t, std::string *err);
	// The pieces of iov covering object bytes [a, b), where iov byte 0 is
	// object byte base.
	static void pieces(const std::vector<iovec> &iov, uint64_t base, uint64_t a, uint64_t b,
			   std::vector<Piece> *out);
	void source(Worker &w, void *p, uint64_t len, ds_transfer_request *r);
	// A shard's object bytes [lo, hi) (the shard starting at object byte
	// start; iov byte 0 is object byte base) as RDMA requests of opcode
	// on segment d, each with its buffer in *bufs.
	static void shard_requests(uint32_t opcode, const pb::SegmentDesc &d, const pb::Shard &sh,
				   uint64_t start, const std::vector<iovec> &iov, uint64_t base,
				   uint64_t lo, uint64_t hi, std::vector<ds_transfer_request> *reqs,
				   std::vector<void *> *bufs);
	// The same bytes written or read at once through an NVMe-oF shard's
	// block device; a write is on the media (synced) when it returns 0.
	int nvmeof_io(bool write, const pb::Shard &sh, uint64_t start, const std::vector<iovec> &iov,
		      uint64_t base, uint64_t lo, uint64_t hi, Clock::time_point deadline,
		      std::string *err);
	// Run DS requests on worker w; per-request status into *st.  None
	// starts after not_after, by the module's clock where it has
	// DSMEM_FEAT_NOT_AFTER (a request that would is -ETIMEDOUT).
	int transfer(Worker &w, const std::vector<ds_transfer_request> &reqs,
		     std::vector<int> *st, Clock::time_point not_after = Clock::time_point::max());

	int do_put(unsigned worker, Clock::time_point deadline, const std::string &key,
		   const std::vector<iovec> &iov, const ds_store_replicate_config &cfg,
		   const PutAttrs &attrs, ds_store_task_status *st, std::string *why);
	int do_batch_put(unsigned worker, Clock::time_point deadline, std::vector<BatchItem> &items,
			 const ds_store_replicate_config &cfg, const PutAttrs &attrs,
			 ds_store_task_status *st, std::string *why);
	int do_batch_get(unsigned worker, Clock::time_point deadline, std::vector<BatchItem> &items,
			 ds_store_task_status *st, std::string *why);
	static void batch_result(BatchItem &it, int err, int64_t version, uint64_t bytes);
	// The task's status once every key has its result: COMPLETE, err
	// the first key's failure (0: none), *why its reason.
	static int batch_end(std::vector<BatchItem> &items, ds_store_task_status *st,
			     std::string *why);
	int do_get(unsigned worker, Clock::time_point deadline, const std::string &key,
		   const std::vector<iovec> &iov, int64_t min_version, uint64_t offset,
		   ds_store_task_status *st, std::string *why);
	// At least n bytes of w's scratch (grown, and registered again, when
	// short).
	char *scratch(Worker &w, uint64_t n);
	int read_replica(Worker &w, const pb::Replica &rep, const std::vector<iovec> &iov,
			 uint64_t offset, uint64_t len, Clock::time_point deadline);
	// The slow tier's copy of exactly version `want`: -ESTALE (and
	// *found) when the slow tier holds another one; *got the bytes read.
	int configure(const ClientConfig &cfg, std::string *err);
	void report_bad(const pb::ObjectInfo &obj, const pb::Replica &rep, Clock::time_point deadline);
	int read_slow(const std::string &key, const std::vector<iovec> &iov, uint64_t offset,
		      uint64_t len, uint64_t want, uint64_t *found, uint64_t *got,
		      Clock::time_point deadline);

	ClientConfig cfg_;
	Masters masters_;
	TaskQueue tasks_;
	std::vector<std::unique_ptr<Worker>> workers_;

	std::mutex ctx_mu_;		// ds_ctx is not thread-safe
	ds_ctx *ctx_ = nullptr;
	uint16_t port_ = 0;

	std::mutex state_mu_;
	std::atomic<uint64_t> client_id_{0};
	uint64_t heartbeat_ms_ = 500;
	// How long the master remembers a request id (RegisterClient); an
	// older master says nothing, and is given a minute.
	static constexpr uint64_t kOldRetryWindowMs = 60000;
	std::atomic<uint64_t> retry_window_ms_{ kOldRetryWindowMs };
	// The deadline of a request that carries an id: the task's, or half
	// the master's retry window from now, whichever comes first.  A retry
	// after the master forgot the id would act a second time.
	Clock::time_point retry_deadline(Clock::time_point task_deadline) const;
	std::atomic<uint64_t> max_object_size_{0};	// join() sets, put() reads
	std::map<uint64_t, pb::SegmentDesc> segs_;	// the master's, by id
	std::map<std::string, pb::Member> members_;	// by member_key()
	// ours, in the kernel: under ctx_mu_
	bool have_seg_ = false;
	ds_seg_info seg_{};
	uint64_t seg_id_ = 0;		// ours, at the master (state_mu_)

	// NVMe-oF targets, attached once each: nvme_mu_ guards the map only;
	// a slot's own mutex is held while that target attaches, so one slow
	// `nvme connect` does not hold up I/O to the others.
	struct NvmeSlot {
		std::mutex mu;
		std::unique_ptr<NvmeofTarget> t;
	};
	std::mutex nvme_mu_;
	std::map<std::string, std::shared_ptr<NvmeSlot>> nvme_;

	// This client's puts not known to be done, by key: a Sync waits for
	// those submitted before it (the master only knows puts that started).
	std::mutex puts_mu_;
	std::unordered_map<std::string, std::vector<uint64_t>> puts_by_key_;
	uint64_t puts_noted_ = 0;
	// Under puts_mu_: task is a put of key (Sync waits for it).
	void note_put_locked(const std::string &key, uint64_t task);
	std::vector<uint64_t> earlier_puts(const std::string &key);

	std::mutex rejoin_mu_;
	// The heartbeats' record (health()); instants of steady_clock,
	// CLOCK_MONOTONIC, when each beat was sent.
	mutable std::mutex health_mu_;
	uint64_t beats_ok_ = 0, beats_failed_ = 0, rejoins_ = 0;
	int64_t last_ok_ns_ = 0, last_failed_ns_ = 0;
	int last_error_ = 0;
	std::mutex stop_mu_;
	std::condition_variable stop_cv_;
	std::atomic<bool> stopping_{false};
	std::atomic<bool> leaving_{false};	// Leave sent: no rejoining
	std::mutex watch_mu_;
	grpc::ClientContext *watch_ctx_ = nullptr;
	std::thread heartbeat_;
	std::thread reconcile_;		// off the heartbeat thread: RPCs of its own
	std::thread watch_;
	bool open_ = false;
};

}  // namespace dsmem::store

// The C ABI's handle (capi.cpp), here for the unit tests.
struct ds_store {
	dsmem::store::ClientCore client;
};
