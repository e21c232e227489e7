// SPDX-License-Identifier: BSD-2-Clause
// libdsuser internals shared by the library's files and its unit tests.
// Nothing here is exported from the shared library (see libdsuser.map).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

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
struct nl_msg *build_request(int family, uint8_t cmd, bool dump);
int put_dev_selector(struct nl_msg *msg, const char *name, uint32_t index);
int parse_version(struct nl_msg *msg, ds_version *v);
int parse_dev(struct nl_msg *msg, ds_dev_info *dev);
int parse_stats(struct nl_msg *msg, std::vector<ds_stat> &out);

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
