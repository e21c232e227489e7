// SPDX-License-Identifier: BSD-2-Clause
// etcd v3 over gRPC: one channel per endpoint, made on first use; a call
// goes to the endpoint that answered last and moves on when that one is
// UNAVAILABLE (down, or a member without a leader).
#include "etcd.hpp"

#include <time.h>

#include <cerrno>
#include <grpcpp/grpcpp.h>

#include "etcd.grpc.pb.h"

namespace dsmem::store {

namespace pb = etcdserverpb;

std::string etcd_prefix_end(const std::string &prefix)
{
	std::string end = prefix;

	while (!end.empty()) {
		unsigned char last = static_cast<unsigned char>(end.back());
		if (last < 0xff) {
			end.back() = static_cast<char>(last + 1);
			return end;
		}
		end.pop_back();
	}
	return std::string(1, '\0');	// etcd: from key to the end of the key space
}

struct EtcdClient::Impl {
	struct Endpoint {
		std::string addr;
		std::shared_ptr<grpc::Channel> channel;
		std::shared_ptr<pb::KV::Stub> kv;
		std::shared_ptr<pb::Lease::Stub> lease;
	};
	std::mutex m;
	std::vector<Endpoint> eps;
	std::shared_ptr<grpc::ChannelCredentials> creds;	// null: creds_err
	std::string creds_err;
	std::atomic<size_t> current{ 0 };

	// A copy: another thread may drop the endpoint's channel meanwhile.
	Endpoint endpoint(size_t i)
	{
		std::lock_guard g(m);
		Endpoint &e = eps[i];
		if (!e.channel) {
			grpc::ChannelArguments args;
			args.SetMaxReceiveMessageSize(-1);
			// our own subchannels, so a dropped channel takes its failed
			// connection along instead of sharing it with the next one
			args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
			// a connection lost mid-run is tried again within a
			// second, not after gRPC's backoff of up to two minutes
			args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
			args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
			e.channel = grpc::CreateCustomChannel(e.addr, creds, args);
			e.kv = pb::KV::NewStub(e.channel);
			e.lease = pb::Lease::NewStub(e.channel);
		}
		return e;
	}

	// A channel that failed to connect can stay failed after its
	// endpoint comes back (gRPC 1.51 keeps failing new handshakes);
	// the next call makes a fresh one.
	void drop(size_t i)
	{
		std::lock_guard g(m);
		eps[i].kv.reset();
		eps[i].lease.reset();
		eps[i].channel.reset();
	}

	static int to_errno(const grpc::Status &s)
	{
		switch (s.error_code()) {
		case grpc::StatusCode::UNAVAILABLE:
			return -EAGAIN;
		case grpc::StatusCode::DEADLINE_EXCEEDED:
			return -ETIMEDOUT;
		case grpc::StatusCode::NOT_FOUND:
			return -ENOENT;	// etcd: lease not found
		case grpc::StatusCode::INVALID_ARGUMENT:
			if (s.error_message().find("too large") != std::string::npos)
				return -EMSGSIZE;
			return -EINVAL;
		case grpc::StatusCode::RESOURCE_EXHAUSTED:
			if (s.error_message().find("larger than max") != std::string::npos)
				return -EMSGSIZE;
			return -ENOSPC;	// etcd: database space exceeded
		default:
			return -EIO;
		}
	}

	// call(endpoint, context) once per endpoint, starting at the current
	// one, until one answers with anything but UNAVAILABLE.
	template <typename Call> int run(const char *what, Call call, std::string *err)
	{
		size_t n = eps.size(), start = current.load();
		grpc::Status s;
		std::string tried;

		if (!creds) {
			if (err)
				*err = std::string("etcd ") + what + ": " + creds_err;
			return -EACCES;
		}
		for (size_t k = 0; k < n; k++) {
			size_t i = (start + k) % n;
			Endpoint e = endpoint(i);
			grpc::ClientContext ctx;
			ctx.set_deadline(std::chrono::system_clock::now() + kEtcdDeadline);
			s = call(e, ctx);
			if (s.ok()) {
				current.store(i);
				return 0;
			}
			if (!tried.empty())
				tried += "; ";
			tried += e.addr + ": " + s.error_message();
			if (s.error_code() != grpc::StatusCode::UNAVAILABLE)
				break;
			drop(i);
		}
		if (err)
			*err = std::string("etcd ") + what + ": " + tried;
		return to_errno(s);
	}
};

EtcdClient::EtcdClient(const std::string &endpoints, const TlsFiles &tls)
	: endpoints_(endpoints), impl_(new Impl)
{
	size_t pos = 0;

	if (tls.ca.empty())
		impl_->creds = grpc::InsecureChannelCredentials();
	else if (channel_credentials(tls, &impl_->creds, &impl_->creds_err))
		impl_->creds.reset();

	while (pos <= endpoints.size()) {
		size_t comma = endpoints.find(',', pos);
		if (comma == std::string::npos)
			comma = endpoints.size();
		std::string ep = endpoints.substr(pos, comma - pos);
		// accept etcdctl's spelling too
		for (const char *scheme : { "http://", "https://" })
			if (ep.rfind(scheme, 0) == 0)
				ep = ep.substr(std::char_traits<char>::length(scheme));
		while (!ep.empty() && ep.back() == '/')
			ep.pop_back();
		if (!ep.empty())
			impl_->eps.push_back({ ep, nullptr, nullptr, nullptr });
		pos = comma + 1;
	}
	if (impl_->eps.empty())
		impl_->eps.push_back({ "127.0.0.1:2379", nullptr, nullptr, nullptr });
}

EtcdClient::~EtcdClient() = default;

static void copy_kv(const pb::KeyValue &from, EtcdKV *to)
{
	to->key = from.key();
	to->value = from.value();
	to->create_revision = from.create_revision();
	to->mod_revision = from.mod_revision();
	to->lease = from.lease();
}

int EtcdClient::get(const std::string &key, EtcdKV *kv, std::string *err)
{
	pb::RangeRequest req;
	pb::RangeResponse resp;

	req.set_key(key);
	int ret = impl_->run("get", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.kv->Range(&ctx, req, &resp);
	}, err);
	if (ret)
		return ret;
	if (resp.kvs_size() == 0) {
		if (err)
			*err = "etcd: no key " + key;
		return -ENOENT;
	}
	if (kv)
		copy_kv(resp.kvs(0), kv);
	return 0;
}

int EtcdClient::range_at(const std::string &key, const std::string &range_end, int64_t revision,
			 std::vector<EtcdKV> *out, int64_t *rev, std::string *err)
{
	// pages keep each response small; all of them read at one revision
	constexpr int64_t page = 512;
	std::string from = key;

	out->clear();
	for (;;) {
		pb::RangeRequest req;
		pb::RangeResponse resp;

		req.set_key(from);
		req.set_range_end(range_end);
		req.set_limit(page);
		req.set_revision(revision);
		int ret = impl_->run("range", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
			return e.kv->Range(&ctx, req, &resp);
		}, err);
		if (ret)
			return ret;
		if (revision == 0)
			revision = resp.header().revision();
		for (const pb::KeyValue &kv : resp.kvs()) {
			out->emplace_back();
			copy_kv(kv, &out->back());
		}
		if (!resp.more() || resp.kvs_size() == 0)
			break;
		from = resp.kvs(resp.kvs_size() - 1).key() + std::string(1, '\0');
	}
	if (rev)
		*rev = revision;
	return 0;
}

int EtcdClient::range(const std::string &prefix, std::vector<EtcdKV> *out, std::string *err)
{
	return range_at(prefix, etcd_prefix_end(prefix), 0, out, nullptr, err);
}

int EtcdClient::put(const std::string &key, const std::string &value, int64_t lease, std::string *err)
{
	pb::PutRequest req;
	pb::PutResponse resp;

	req.set_key(key);
	req.set_value(value);
	req.set_lease(lease);
	return impl_->run("put", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.kv->Put(&ctx, req, &resp);
	}, err);
}

int EtcdClient::del_prefix(const std::string &prefix, std::string *err)
{
	pb::DeleteRangeRequest req;
	pb::DeleteRangeResponse resp;

	req.set_key(prefix);
	req.set_range_end(etcd_prefix_end(prefix));
	return impl_->run("delete", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.kv->DeleteRange(&ctx, req, &resp);
	}, err);
}

int EtcdClient::lease_grant(int64_t ttl_s, int64_t *id, std::string *err)
{
	pb::LeaseGrantRequest req;
	pb::LeaseGrantResponse resp;

	req.set_ttl(ttl_s);
	int ret = impl_->run("lease grant", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.lease->LeaseGrant(&ctx, req, &resp);
	}, err);
	if (ret)
		return ret;
	if (!resp.error().empty() || resp.id() == 0) {
		if (err)
			*err = "etcd lease grant: " + resp.error();
		return -EIO;
	}
	*id = resp.id();
	return 0;
}

int EtcdClient::lease_keepalive(int64_t id, int64_t *ttl_left, std::string *err)
{
	pb::LeaseKeepAliveRequest req;
	pb::LeaseKeepAliveResponse resp;

	req.set_id(id);
	// etcd's keepalive is a stream; one request and its answer is one refresh
	int ret = impl_->run("lease keepalive", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		auto stream = e.lease->LeaseKeepAlive(&ctx);
		bool got = stream->Write(req) && stream->Read(&resp);
		stream->WritesDone();
		if (got) {
			ctx.TryCancel();	// the answer is in; the stream's end is not needed
			stream->Finish().IgnoreError();
			return grpc::Status::OK;
		}
		grpc::Status s = stream->Finish();
		return s.ok() ? grpc::Status(grpc::StatusCode::UNKNOWN, "stream closed") : s;
	}, err);
	if (ret)
		return ret;
	if (ttl_left)
		*ttl_left = resp.ttl();
	if (resp.ttl() <= 0) {
		if (err)
			*err = "etcd lease " + std::to_string(id) + " expired";
		return -ENOENT;
	}
	return 0;
}

int EtcdClient::lease_revoke(int64_t id, std::string *err)
{
	pb::LeaseRevokeRequest req;
	pb::LeaseRevokeResponse resp;

	req.set_id(id);
	return impl_->run("lease revoke", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.lease->LeaseRevoke(&ctx, req, &resp);
	}, err);
}

int EtcdClient::create_if_absent(const std::string &key, const std::string &value, int64_t lease,
				 bool *won, int64_t *rev, std::string *holder, std::string *err)
{
	pb::TxnRequest req;
	pb::TxnResponse resp;

	pb::Compare *c = req.add_compare();
	c->set_key(key);
	c->set_target(pb::Compare::CREATE);
	c->set_result(pb::Compare::EQUAL);
	c->set_create_revision(0);	// absent
	pb::PutRequest *p = req.add_success()->mutable_request_put();
	p->set_key(key);
	p->set_value(value);
	p->set_lease(lease);
	// both branches read the key back: its create_revision is the fence
	req.add_success()->mutable_request_range()->set_key(key);
	req.add_failure()->mutable_request_range()->set_key(key);
	int ret = impl_->run("txn", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.kv->Txn(&ctx, req, &resp);
	}, err);
	if (ret)
		return ret;
	*won = resp.succeeded();
	const pb::ResponseOp *read = nullptr;
	for (const pb::ResponseOp &op : resp.responses())
		if (op.has_response_range())
			read = &op;
	if (!read || read->response_range().kvs_size() == 0) {
		// deleted (its lease expired) between the compare and the read
		if (err)
			*err = "etcd: " + key + " vanished; try again";
		return -EAGAIN;
	}
	const pb::KeyValue &kv = read->response_range().kvs(0);
	if (rev)
		*rev = kv.create_revision();
	if (holder)
		*holder = kv.value();
	return 0;
}

int EtcdClient::fenced_ops(const std::string &fence_key, int64_t fence_rev,
			   const std::vector<EtcdOp> &ops, std::string *err)
{
	return fenced_ops_if_absent(fence_key, fence_rev, {}, ops, err);
}

int EtcdClient::fenced_ops_if_absent(const std::string &fence_key, int64_t fence_rev,
				     const std::vector<std::string> &absent,
				     const std::vector<EtcdOp> &ops, std::string *err)
{
	pb::TxnRequest req;
	pb::TxnResponse resp;

	pb::Compare *c = req.add_compare();
	c->set_key(fence_key);
	c->set_target(pb::Compare::CREATE);
	c->set_result(pb::Compare::EQUAL);
	c->set_create_revision(fence_rev);
	for (const std::string &k : absent) {
		pb::Compare *a = req.add_compare();
		a->set_key(k);
		a->set_target(pb::Compare::CREATE);
		a->set_result(pb::Compare::EQUAL);
		a->set_create_revision(0);	// absent
		// on failure, tell which compare failed (keys only: a record can be big)
		pb::RangeRequest *r = req.add_failure()->mutable_request_range();
		r->set_key(k);
		r->set_keys_only(true);
	}
	if (!absent.empty()) {
		pb::RangeRequest *r = req.add_failure()->mutable_request_range();
		r->set_key(fence_key);
		r->set_keys_only(true);
	}
	for (const EtcdOp &op : ops) {
		if (op.kind == EtcdOp::Put) {
			pb::PutRequest *p = req.add_success()->mutable_request_put();
			p->set_key(op.key);
			p->set_value(op.value);
			p->set_lease(op.lease);
		} else {
			pb::DeleteRangeRequest *d = req.add_success()->mutable_request_delete_range();
			d->set_key(op.key);
			d->set_range_end(op.range_end);
		}
	}
	int ret = impl_->run("txn", [&](Impl::Endpoint &e, grpc::ClientContext &ctx) {
		return e.kv->Txn(&ctx, req, &resp);
	}, err);
	if (ret)
		return ret;
	if (!resp.succeeded()) {
		std::string present;
		bool fence_ok = false;
		int n = resp.responses_size();
		for (int i = 0; i < n; i++) {
			const pb::ResponseOp &op = resp.responses(i);
			if (!op.has_response_range() || op.response_range().kvs_size() == 0)
				continue;
			const pb::KeyValue &kv = op.response_range().kvs(0);
			if (static_cast<size_t>(i) < absent.size())
				present = present.empty() ? kv.key() : present;
			else
				fence_ok = kv.create_revision() == fence_rev;
		}
		if (err) {
			if (!absent.empty() && fence_ok && !present.empty())
				*err = "etcd: " + present + " already exists (written by an earlier, "
				       "ambiguous attempt or another master)";
			else
				*err = "etcd: fence " + fence_key + " no longer at revision " +
				       std::to_string(fence_rev) + ": leadership lost";
		}
		return -ESTALE;
	}
	return 0;
}

int EtcdClient::fenced_txn(const std::string &fence_key, int64_t fence_rev,
			   const std::vector<std::pair<std::string, std::string>> &puts,
			   const std::vector<std::string> &deletes,
			   const std::vector<std::string> &delete_prefixes, std::string *err)
{
	std::vector<EtcdOp> ops;

	for (const auto &[k, v] : puts)
		ops.push_back({ EtcdOp::Put, k, v, "", 0 });
	for (const std::string &k : deletes)
		ops.push_back({ EtcdOp::Delete, k, "", "", 0 });
	for (const std::string &p : delete_prefixes)
		ops.push_back({ EtcdOp::Delete, p, "", etcd_prefix_end(p), 0 });
	return fenced_ops(fence_key, fence_rev, ops, err);
}

Election::Election(std::shared_ptr<EtcdClient> etcd, std::string key, std::string value, int64_t ttl_s)
	: etcd_(std::move(etcd)), key_(std::move(key)), value_(std::move(value)),
	  ttl_s_(ttl_s > 0 ? ttl_s : 2)
{
}

int64_t Election::clock_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void Election::renewed(int64_t sent_ns, int64_t ttl_s)
{
	lease_ends_ns_ = sent_ns + ttl_s * 900000000LL;
}

int Election::campaign(bool *leader, std::string *err)
{
	std::lock_guard g(m_);

	*leader = false;
	held_until_ns_ = 0;
	// a lease kept from an earlier try is reused while it lives
	if (lease_) {
		int64_t ttl, sent = clock_ns();
		if (etcd_->lease_keepalive(lease_, &ttl, nullptr))
			lease_ = 0;
		else
			renewed(sent, ttl);
	}
	if (!lease_) {
		rev_ = 0;
		int64_t sent = clock_ns();
		if (int ret = etcd_->lease_grant(ttl_s_, &lease_, err))
			return ret;
		renewed(sent, ttl_s_);	// etcd grants at least what is asked
	}
	bool won = false;
	int64_t rev = 0;
	std::string holder;
	if (int ret = etcd_->create_if_absent(key_, value_, lease_, &won, &rev, &holder, err)) {
		if (ret == -ENOENT)	// our lease ran out just now: a new one next time
			lease_ = 0;
		// the key just went, or the lease: the next try may win
		return ret == -EAGAIN || ret == -ENOENT ? 0 : ret;
	}
	if (!won) {
		// still ours from an earlier campaign?
		EtcdKV kv;
		if (etcd_->get(key_, &kv, nullptr) == 0 && kv.lease == lease_ &&
		    kv.create_revision == rev)
			won = true;
	}
	if (won) {
		rev_ = rev;
		held_until_ns_ = lease_ends_ns_;
		*leader = true;
	}
	return 0;
}

int Election::keepalive(std::string *err)
{
	std::lock_guard g(m_);

	if (!lease_ || !rev_) {
		if (err)
			*err = "not the leader";
		return -ESTALE;
	}
	int64_t ttl, sent = clock_ns();
	int ret = etcd_->lease_keepalive(lease_, &ttl, err);
	if (ret == -ENOENT) {
		lease_ = 0;
		rev_ = 0;
		held_until_ns_ = 0;
		return -ESTALE;
	}
	if (ret)
		return ret;	// etcd unreachable: the caller decides when to give up
	// the lease lives; the key must be the one we created too
	EtcdKV kv;
	ret = etcd_->get(key_, &kv, err);
	if (ret == -ENOENT || (ret == 0 && kv.create_revision != rev_)) {
		if (err)
			*err = "leader key " + key_ + " is no longer ours";
		rev_ = 0;
		held_until_ns_ = 0;
		return -ESTALE;
	}
	if (!ret) {
		renewed(sent, ttl);
		held_until_ns_ = lease_ends_ns_;
	}
	return ret;
}

void Election::resign()
{
	std::lock_guard g(m_);

	held_until_ns_ = 0;
	if (lease_)
		etcd_->lease_revoke(lease_, nullptr);
	lease_ = 0;
	rev_ = 0;
}

int Election::leader(std::string *value, std::string *err)
{
	EtcdKV kv;

	if (int ret = etcd_->get(key_, &kv, err))
		return ret;
	if (value)
		*value = kv.value;
	return 0;
}

int64_t Election::revision() const
{
	return rev_.load();
}

LeaseRenewer::LeaseRenewer(Election &e, std::chrono::milliseconds period)
	: t_([this, &e, period] {
		  std::unique_lock<std::mutex> l(m_);
		  while (!cv_.wait_for(l, period, [this] { return done_; })) {
			  l.unlock();
			  std::string err;
			  e.keepalive(&err);
			  l.lock();
		  }
	  })
{
}

LeaseRenewer::~LeaseRenewer()
{
	{
		std::lock_guard<std::mutex> g(m_);
		done_ = true;
	}
	cv_.notify_all();
	t_.join();
}

}  // namespace dsmem::store
