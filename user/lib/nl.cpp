// SPDX-License-Identifier: BSD-2-Clause
// Generic netlink transport of libdsuser: requests, replies, extended ACKs.
#include <cerrno>
#include <cstring>

#include <linux/dsmem_netlink.h>
#include <netlink/errno.h>
#include <sys/socket.h>

#include "ds_internal.hpp"

namespace dsmem::detail {

int nlerr_to_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case 0: return 0;
	case NLE_INTR: return -EINTR;
	case NLE_BAD_SOCK: return -EBADF;
	case NLE_AGAIN: return -EAGAIN;
	case NLE_NOMEM: return -ENOMEM;
	case NLE_EXIST: return -EEXIST;
	case NLE_INVAL: return -EINVAL;
	case NLE_RANGE: return -ERANGE;
	case NLE_MSGSIZE: return -EMSGSIZE;
	case NLE_OPNOTSUPP: return -EOPNOTSUPP;
	case NLE_AF_NOSUPPORT: return -EAFNOSUPPORT;
	case NLE_OBJ_NOTFOUND: return -ENOENT;
	case NLE_NOATTR: return -ENOENT;
	case NLE_MISSING_ATTR: return -EINVAL;
	case NLE_AF_MISMATCH: return -EINVAL;
	case NLE_SEQ_MISMATCH: return -EPROTO;
	case NLE_MSG_OVERFLOW: return -EMSGSIZE;
	case NLE_MSG_TRUNC: return -EMSGSIZE;
	case NLE_NOADDR: return -EADDRNOTAVAIL;
	case NLE_SRCRT_NOSUPPORT: return -EOPNOTSUPP;
	case NLE_MSG_TOOSHORT: return -EBADMSG;
	case NLE_MSGTYPE_NOSUPPORT: return -EBADMSG;
	case NLE_OBJ_MISMATCH: return -EINVAL;
	case NLE_NOCACHE: return -ENOENT;
	case NLE_BUSY: return -EBUSY;
	case NLE_PROTO_MISMATCH: return -EPROTO;
	case NLE_NOACCESS: return -EACCES;
	case NLE_PERM: return -EPERM;
	case NLE_PKTLOC_FILE: return -ENOENT;
	case NLE_PARSE_ERR: return -EBADMSG;
	case NLE_NODEV: return -ENODEV;
	case NLE_IMMUTABLE: return -EPERM;
	case NLE_DUMP_INTR: return -EINTR;
	case NLE_ATTRSIZE: return -EBADMSG;
	default: return -EIO;
	}
}

namespace {

// The extended-ack TLVs at [pos, pos + rem): the message and the offset.
void parse_ack_tlvs(extack &ea, const char *pos, size_t rem)
{
	while (rem >= NLA_HDRLEN) {
		auto *a = reinterpret_cast<const struct nlattr *>(pos);
		if (a->nla_len < NLA_HDRLEN || a->nla_len > rem)
			break;
		const char *payload = pos + NLA_HDRLEN;
		size_t plen = a->nla_len - NLA_HDRLEN;
		switch (a->nla_type & NLA_TYPE_MASK) {
		case NLMSGERR_ATTR_MSG:
			ea.msg.assign(payload, strnlen(payload, plen));
			break;
		case NLMSGERR_ATTR_OFFS:
			if (plen == sizeof(uint32_t))
				memcpy(&ea.offset, payload, sizeof(uint32_t));
			break;
		default:
			break;
		}
		size_t step = NLA_ALIGN(a->nla_len);
		if (step >= rem)
			break;
		pos += step;
		rem -= step;
	}
}

}  // namespace

extack parse_extack(const struct nlmsghdr *nlh)
{
	extack ea;

	if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(struct nlmsgerr))
		return ea;
	auto *e = static_cast<const struct nlmsgerr *>(NLMSG_DATA(nlh));
	ea.error = e->error;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return ea;

	// TLVs follow the echoed request, or only its header when capped.
	size_t off = NLMSG_HDRLEN + sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (e->msg.nlmsg_len < NLMSG_HDRLEN)
			return ea;
		off += NLMSG_ALIGN(e->msg.nlmsg_len) - NLMSG_HDRLEN;
	}
	if (off > nlh->nlmsg_len)
		return ea;

	parse_ack_tlvs(ea, reinterpret_cast<const char *>(nlh) + off,
		       nlh->nlmsg_len - off);
	return ea;
}

extack parse_dump_done(const struct nlmsghdr *nlh)
{
	extack ea;

	// a dump's end carries its error, an int, then the TLVs
	if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(int))
		return ea;
	memcpy(&ea.error, NLMSG_DATA(nlh), sizeof(int));
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS)
		parse_ack_tlvs(ea, reinterpret_cast<const char *>(NLMSG_DATA(nlh)) + sizeof(int),
			       nlh->nlmsg_len - NLMSG_HDRLEN - sizeof(int));
	return ea;
}

genl_socket::~genl_socket()
{
	if (sk_)
		nl_socket_free(sk_);
}

int genl_socket::open(std::string &err)
{
	int one = 1;

	sk_ = nl_socket_alloc();
	if (!sk_) {
		err = "cannot allocate a netlink socket";
		return -ENOMEM;
	}
	int ret = genl_connect(sk_);
	if (ret < 0) {
		err = "cannot open a generic netlink socket";
		return nlerr_to_errno(ret);
	}
	// Acks are requested per message: do requests want one, dumps end
	// with NLMSG_DONE.
	nl_socket_disable_auto_ack(sk_);
	// Replies may exceed a page (RDM_READ data): size each read to fit.
	nl_socket_enable_msg_peek(sk_);
	// libnl's default buffers (32 KiB, doubled by the kernel) cannot queue
	// a CACHE_REPLAY reply (up to ~67 KiB of moves and counters, charged
	// as 128 KiB) and the ACK behind it: the ACK would be dropped and the
	// read fail with ENOBUFS.  The kernel caps this at rmem_max/wmem_max.
	// Best effort, like the options below.
	nl_socket_set_buffer_size(sk_, 1 << 20, 1 << 20);
	int fd = nl_socket_get_fd(sk_);
	// Best effort: without them errors still arrive, only without text.
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return 0;
}

namespace {

struct transact_state {
	const std::function<int(struct nl_msg *)> *on_msg;
	std::string *err;
	int ret = 0;
	bool done = false;
};

int on_valid(struct nl_msg *msg, void *arg)
{
	auto *st = static_cast<transact_state *>(arg);
	if (st->ret)
		return NL_SKIP;	// drain the rest of a failed dump
	st->ret = (*st->on_msg)(msg);
	if (st->ret && st->err->empty())
		*st->err = "malformed reply from the dsmem module";
	return NL_OK;
}

int on_finish(struct nl_msg *, void *arg)
{
	static_cast<transact_state *>(arg)->done = true;
	return NL_STOP;
}

// A dump's end: an error there is the dump's, e.g. refused on its first
// part, when the kernel has no earlier point to say so.
int on_dump_done(struct nl_msg *msg, void *arg)
{
	auto *st = static_cast<transact_state *>(arg);
	extack ea = parse_dump_done(nlmsg_hdr(msg));

	st->done = true;
	if (ea.error < 0 && !st->ret) {
		st->ret = ea.error;
		*st->err = ea.msg;
	}
	return NL_STOP;
}

int on_error(struct sockaddr_nl *, struct nlmsgerr *e, void *arg)
{
	auto *st = static_cast<transact_state *>(arg);
	auto *nlh = reinterpret_cast<const struct nlmsghdr *>(
		reinterpret_cast<const char *>(e) - NLMSG_HDRLEN);
	extack ea = parse_extack(nlh);

	st->done = true;
	if (e->error) {
		st->ret = e->error;
		*st->err = ea.msg;
	}
	return NL_STOP;
}

}  // namespace

int genl_socket::transact(struct nl_msg *msg,
			  const std::function<int(struct nl_msg *)> &on_msg,
			  std::string &err)
{
	transact_state st{&on_msg, &err};

	err.clear();
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		err = "out of memory";
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &st);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_dump_done, &st);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_finish, &st);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &st);

	int ret = nl_send_auto(sk_, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		nl_cb_put(cb);
		err = "cannot send to the dsmem module";
		return nlerr_to_errno(ret);
	}
	while (!st.done) {
		ret = nl_recvmsgs(sk_, cb);
		if (ret < 0 && !st.done) {
			nl_cb_put(cb);
			if (err.empty())
				err = nl_geterror(ret);
			return nlerr_to_errno(ret);
		}
	}
	nl_cb_put(cb);
	return st.ret;
}

}  // namespace dsmem::detail
