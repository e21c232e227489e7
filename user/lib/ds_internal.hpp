// SPDX-License-Identifier: BSD-2-Clause
// libdsuser internals shared by the library's files and its unit tests.
// Nothing here is exported from the shared library (see libdsuser.map).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include <linux/dsmem.h>

#include <dsmem/ds.h>

namespace dsmem::detail {

// libnl reports NLE_* codes; the C ABI promises negative errnos.
int nlerr_to_errno(int nlerr);

// The text and attribute offset of an extended ACK (NLMSG_ERROR message).
struct extack {
	int error = 0;
	std::string msg;
	int32_t offset = -1;	// offset of the offending attribute, or -1
};
extack parse_extack(const struct nlmsghdr *nlh);
// The same of a dump's NLMSG_DONE: its error (0 for a whole dump) and text.
extack parse_dump_done(const struct nlmsghdr *nlh);

// Messages in both directions; decoding is strict about lengths.
// attr_space: room for attributes beyond the default page (RDM_WRITE).
struct nl_msg *build_request(int family, uint8_t cmd, bool dump,
			     size_t attr_space = 0);
int put_dev_selector(struct nl_msg *msg, const char *name, uint32_t index);
int parse_version(struct nl_msg *msg, ds_version *v);
int parse_dev(struct nl_msg *msg, ds_dev_info *dev);
int parse_stats(struct nl_msg *msg, std::vector<ds_stat> &out);
// full: a GET reply or a NEW/STATE event; otherwise (a DEL event) only
// the ids are required.
int parse_node(struct nl_msg *msg, ds_node_info *node, bool full);
// A node-get reply's owner, group and mode; -EBADMSG without them.
int parse_node_owner(struct nl_msg *msg, ds_node_owner *owner);
// A node's devices as ds_node_add() takes them, a comma-separated list of
// NAME[@NUMA]: 0 and names filled, with numas the NUMA node given for each
// (kNumaAsk where none is), or -EINVAL and err saying why (an empty name,
// one longer than DS_NAME_MAX - 1, more than DS_NODE_DEVS_MAX, a
// duplicate, a NUMA node that is not a number from -1 up).
constexpr int kNumaAsk = -2;
int split_dev_list(const char *list, std::vector<std::string> &names,
		   std::vector<int> &numas, std::string &err);
// Every device of a NODE_GET reply (or NEW event), in order, into out:
// the node-devs list, or without one (an older module) the dev-index and
// dev-name it always has, numa -1.
int parse_node_devs(struct nl_msg *msg, std::vector<ds_node_dev> &out);
int parse_key(struct nl_msg *msg, ds_key_info *key, bool full);
int parse_peer(struct nl_msg *msg, ds_peer_info *peer, bool full);
int parse_seg(struct nl_msg *msg, ds_seg_info *seg, bool full);
int parse_rdm_alloc(struct nl_msg *msg, uint64_t *va, uint64_t *pa);
// The reply must carry exactly len bytes of data (and va, if any).
int parse_rdm_read(struct nl_msg *msg, uint64_t va, void *buf, size_t len);

// Tokens and the token cache.  A token's data must be whole, pass the
// core's dstc_token_check() and match its handle's type and index.
int parse_token(struct nl_msg *msg, ds_token_info *t);
// A CACHE_GET or CACHE_SET reply, or a CACHE_SET event: every parameter
// this library knows, the three tiers and the counters.
int parse_cache(struct nl_msg *msg, ds_cache_info *c);
// full: a TRACE_STOP reply or event (records and dropped required);
// otherwise (TRACE_START events) nothing is.
int parse_trace(struct nl_msg *msg, ds_trace_info *t, bool full);
int parse_bench(struct nl_msg *msg, ds_cache_bench_result *r);
// A CACHE_REPLAY reply: the counters into *r (moves left alone), the moves
// into moves; both required, the moves whole records.
int parse_replay(struct nl_msg *msg, ds_cache_replay_result *r,
		 std::vector<ds_cache_move> &moves);

// Slope: a SLOPE_GET do reply (the node's summary); one message of a
// SLOPE_GET dump, appended to what it is (a summary, a lease, a
// migration; a message that is none of these, a newer module's, is
// skipped); the SLOPE_MIG event.  A lease needs its base, a migration its
// id and state; anything else absent is 0 (a lease without used is not
// held by the node).
struct slope_dump {
	std::vector<ds_slope_range_info> ranges;
	std::vector<ds_slope_lease_info> leases;
	std::vector<ds_slope_mig_info> migs;
	std::vector<ds_slope_object_info> objects;
};
int parse_slope_range(struct nl_msg *msg, ds_slope_range_info *r);
int parse_slope_dump(struct nl_msg *msg, slope_dump &out);
int parse_slope_mig(struct nl_msg *msg, ds_slope_mig_info *m);

// A message of the "events" group as an event; -ENOMSG for a command that is no event this library knows.
int parse_event(struct nl_msg *msg, ds_event *ev);

// One request of a batch as the module takes it; -EINVAL for an unknown
// opcode or a target_offset that leaves the segment target_id names.
int to_xfer_req(const ds_transfer_request &in, struct dsmem_xfer_req *out);
// A batch waited for and released by one ioctl: the status of the first
// transfer that failed, 0 when all succeeded.
int xfer_run(ds_xfer *x, const struct dsmem_xfer_req *reqs, size_t n);
// xfer_run with a bound: -ETIME when the batch is not done timeout_ns
// (CLOCK_MONOTONIC) after the call began; 0: no bound, as xfer_run.
// Signals do not cut the wait short either way.  The bound holds on the
// rings and on the ioctl path where the module has
// DSMEM_FEAT_SUBMIT_TIMEOUT; under an older module the ioctl path waits
// unbounded, until the batch ends (at the latest when the connection's
// watchdog, io_timeout_ms, flushes it).  -ENOMEM before anything is sent
// when the record of a batch given up on cannot be made.
//
// After -ETIME the batch goes on: it is an orphan the handle drops (its
// completions) or releases (its task) later, so its statuses are lost,
// and its transfers may still read from and write to every local buffer
// reqs names.  Until the handle is closed (ds_xfer_close), the caller
// must not reuse or free any of those buffers, nor deregister their MRs:
// on the rings the module may not even have taken the orphan's entries
// yet, so ds_mr_dereg need not say -EBUSY, and an entry taken after it
// would fail, or land in a buffer registered later under the same
// handle.  Closing waits, uninterruptibly, for the handle's transfers in
// flight to end, so it may block until the watchdog flushes them; after
// it, the buffers are free.  A handle with orphans is otherwise fine to
// use: later batches' results are never confused with an orphan's (on
// one path to a node, they complete after it).
int xfer_run_until(ds_xfer *x, const struct dsmem_xfer_req *reqs, size_t n,
		   uint64_t timeout_ns);

// One generic netlink socket with extended ACKs switched on.
class genl_socket {
public:
	genl_socket() = default;
	genl_socket(const genl_socket &) = delete;
	genl_socket &operator=(const genl_socket &) = delete;
	~genl_socket();

	int open(std::string &err);
	// Send a request and feed every reply message to on_msg (which
	// returns 0 or -errno); waits for the ACK or the end of a dump.
	int transact(struct nl_msg *msg, const std::function<int(struct nl_msg *)> &on_msg,
		     std::string &err);
	struct nl_sock *sk() const { return sk_; }

private:
	struct nl_sock *sk_ = nullptr;
};

}  // namespace dsmem::detail

struct ds_ctx {
	dsmem::detail::genl_socket nl;
	int family = -1;
	int chrdev_fd = -1;
	std::string errmsg;
};

namespace dsmem::detail {

inline int fail(ds_ctx *ctx, int err, const char *msg)
{
	ctx->errmsg = msg;
	return err;
}

// Run one request; build failures are reported like any other.
inline int run(ds_ctx *ctx, struct nl_msg *msg,
	       const std::function<int(struct nl_msg *)> &on_msg)
{
	if (!msg)
		return fail(ctx, -ENOMEM, "cannot build a netlink request");
	return ctx->nl.transact(msg, on_msg, ctx->errmsg);
}

// Hand a result to C callers as one malloc'd array (freed with free()).
template <typename T>
int to_c_array(ds_ctx *ctx, const std::vector<T> &v, T **arr, size_t *count)
{
	auto *a = static_cast<T *>(calloc(v.size() + 1, sizeof(T)));
	if (!a)
		return fail(ctx, -ENOMEM, "out of memory");
	if (!v.empty())
		memcpy(a, v.data(), v.size() * sizeof(T));
	*arr = a;
	*count = v.size();
	return 0;
}

// Attribute writers for one request; any failure means the message is
// full, reported once by request().
struct attrs {
	struct nl_msg *msg;
	bool full = false;

	void u8(int type, uint8_t v) { full |= nla_put_u8(msg, type, v) < 0; }
	void u16(int type, uint16_t v) { full |= nla_put_u16(msg, type, v) < 0; }
	void u32(int type, uint32_t v) { full |= nla_put_u32(msg, type, v) < 0; }
	void s32(int type, int32_t v) { full |= nla_put_s32(msg, type, v) < 0; }
	void u64(int type, uint64_t v) { full |= nla_put_u64(msg, type, v) < 0; }
	void str(int type, const char *v) { full |= nla_put_string(msg, type, v) < 0; }
	void flag(int type) { full |= nla_put_flag(msg, type) < 0; }
	void bin(int type, const void *v, size_t len)
	{
		full |= nla_put(msg, type, static_cast<int>(len), v) < 0;
	}
	// A nest: its attributes go between begin() and end().
	struct nlattr *begin(int type)
	{
		struct nlattr *n = nla_nest_start(msg, type);
		full |= !n;
		return n;
	}
	void end(struct nlattr *n)
	{
		if (n)
			nla_nest_end(msg, n);
	}
};

// NODE_NEW's devices: one (names[0]) without a NUMA node as dev-name, as
// every module takes it; otherwise a node-devs nest, a node-dev with its
// name each, and its NUMA node where numas (as split_dev_list's) gives one.
void put_node_devs(attrs &a, const std::vector<std::string> &names,
		   const std::vector<int> &numas);

// Build a request (put() adds its attributes), send it and hand every
// reply to on_msg.
inline int request(ds_ctx *ctx, uint8_t cmd, bool dump,
		   const std::function<void(attrs &)> &put,
		   const std::function<int(struct nl_msg *)> &on_msg,
		   size_t attr_space = 0)
{
	struct nl_msg *msg = build_request(ctx->family, cmd, dump, attr_space);

	if (msg && put) {
		attrs a{msg};
		put(a);
		if (a.full) {
			nlmsg_free(msg);
			return fail(ctx, -EMSGSIZE, "netlink request too large");
		}
	}
	return run(ctx, msg, on_msg);
}

inline int ignore_replies(struct nl_msg *)
{
	return 0;
}

// A do request answered by one message that parse() decodes; when the
// caller wants what it says (need), its absence is an error.
inline int request_one(ds_ctx *ctx, uint8_t cmd, const std::function<void(attrs &)> &put,
		       const std::function<int(struct nl_msg *)> &parse, bool need = true,
		       size_t attr_space = 0)
{
	int replies = 0;
	int ret = request(ctx, cmd, false, put, [&](struct nl_msg *m) {
		return replies++ ? -EBADMSG : parse(m);
	}, attr_space);

	if (ret)
		return ret;
	if (need && !replies)
		return fail(ctx, -EBADMSG, "no reply from the dsmem module");
	return 0;
}

}  // namespace dsmem::detail
