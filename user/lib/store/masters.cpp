// SPDX-License-Identifier: BSD-2-Clause
// Finding the leading master and following it (see Masters in client.hpp).
#include "client.hpp"

#include <cerrno>

namespace dsmem::store {

int Masters::set(const std::string &list, const TlsFiles &tls, std::string *err)
{
	std::lock_guard<std::mutex> g(mu_);
	stubs_.clear();
	addrs_.clear();
	size_t pos = 0;
	while (pos <= list.size()) {
		size_t comma = list.find(',', pos);
		std::string a = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
		while (!a.empty() && a.front() == ' ')
			a.erase(a.begin());
		while (!a.empty() && a.back() == ' ')
			a.pop_back();
		if (!a.empty()) {
			if (a.find(':') == std::string::npos) {
				*err = "master address " + a + " has no port";
				return -EINVAL;
			}
			addrs_.push_back(a);
		}
		if (comma == std::string::npos)
			break;
		pos = comma + 1;
	}
	if (addrs_.empty()) {
		*err = "no master address";
		return -EINVAL;
	}
	if (tls.insecure && !loopback_only(list)) {
		*err = "insecure (plaintext) calls go to masters on loopback only, not to " + list;
		return -EINVAL;
	}
	if (int ret = channel_credentials(tls, &creds_, err))
		return ret;
	// a master would close the connection to a caller it does not take,
	// and say no more: said here, at once
	if (!tls.insecure)
		if (int ret = check_client_certificate(tls, err))
			return ret;
	cur_ = 0;
	return 0;
}

std::string Masters::refused_hint(const grpc::Status &s)
{
	const std::string &m = s.error_message();
	if (s.error_code() != grpc::StatusCode::UNAVAILABLE ||
	    (m.find("Socket closed") == std::string::npos &&
	     m.find("Connection reset") == std::string::npos &&
	     m.find("andshake") == std::string::npos))
		return "";
	return " (a master closes the connection in the TLS handshake to a caller "
	       "without a certificate of the store's CA: check DSMEM_STORE_TLS_DIR "
	       "or the certificate given)";
}

std::string Masters::leader() const
{
	std::lock_guard<std::mutex> g(mu_);
	return addrs_.empty() ? std::string() : addrs_[cur_];
}

size_t Masters::addrs_size() const
{
	std::lock_guard<std::mutex> g(mu_);
	return std::max<size_t>(addrs_.size(), 1);
}

std::shared_ptr<pb::Master::Stub> Masters::stub_for(const std::string &addr)
{
	auto it = stubs_.find(addr);
	if (it != stubs_.end())
		return it->second.stub;
	grpc::ChannelArguments args;
	args.SetMaxReceiveMessageSize(64 << 20);
	// a dead master should be noticed within seconds, not minutes
	args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
	args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
	// and a connect attempt into a cut link gives up within a second
	// (default 20 s), so that the link's return is noticed at once
	args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
	// (dsmaster's workers.cpp knows it: kClientKeepaliveMs)
	args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
	args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
	args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
	auto ch = grpc::CreateCustomChannel(addr, creds_, args);
	std::shared_ptr<pb::Master::Stub> stub(pb::Master::NewStub(ch));
	stubs_[addr] = { ch, stub };
	return stub;
}

std::shared_ptr<pb::Master::Stub> Masters::current(std::string *addr)
{
	std::lock_guard<std::mutex> g(mu_);
	*addr = addrs_[cur_];
	return stub_for(*addr);
}

void Masters::follow(const std::string &addr)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = std::find(addrs_.begin(), addrs_.end(), addr);
	if (it == addrs_.end()) {
		// a leader advertised under a name the caller did not list
		addrs_.push_back(addr);
		it = addrs_.end() - 1;
	}
	cur_ = static_cast<size_t>(it - addrs_.begin());
}

void Masters::forget(const std::string &addr)
{
	std::lock_guard<std::mutex> g(mu_);
	auto it = stubs_.find(addr);
	if (it != stubs_.end() && it->second.ch->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE)
		stubs_.erase(it);
}

void Masters::advance(const std::string &from)
{
	std::lock_guard<std::mutex> g(mu_);
	if (addrs_[cur_] == from)
		cur_ = (cur_ + 1) % addrs_.size();
}

}  // namespace dsmem::store
