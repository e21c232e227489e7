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
int parse_peer(struct nl_msg *msg, ds_peer_info *peer, bool full);
int parse_seg(struct nl_msg *msg, ds_seg_info *seg, bool full);
int parse_rdm_alloc(struct nl_msg *msg, uint64_t *va, uint64_t *pa);
// The reply must carry exactly len bytes of data (and va, if any).
int parse_rdm_read(struct nl_msg *msg, uint64_t va, void *buf, size_t len);

// A message of the "events" group as an event; -ENOMSG for a command that is no event this library knows.
int parse_event(struct nl_msg *msg, ds_event *ev);

// One request of a batch as the module takes it; -EINVAL for an unknown
// opcode or a target_offset that leaves the segment target_id names.
int to_xfer_req(const ds_transfer_request &in, struct dsmem_xfer_req *out);

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

}  // namespace dsmem::detail
