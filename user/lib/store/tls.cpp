// SPDX-License-Identifier: BSD-2-Clause
#include "tls.hpp"

#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace dsmem::store {

namespace {

int read_pem(const std::string &path, const char *what, std::string *out, std::string *err)
{
	std::ifstream f(path, std::ios::binary);
	if (!f) {
		int e = errno ? errno : ENOENT;
		*err = std::string("cannot read the ") + what + " " + path + ": " + strerror(e);
		return -e;
	}
	std::ostringstream ss;
	ss << f.rdbuf();
	*out = ss.str();
	if (out->find("-----BEGIN ") == std::string::npos) {
		*err = std::string("the ") + what + " " + path + " is not PEM";
		return -EINVAL;
	}
	return 0;
}

bool loopback_host(std::string host)
{
	if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
		host = host.substr(1, host.size() - 2);
	if (host == "localhost")
		return true;
	struct in_addr a4;
	if (inet_pton(AF_INET, host.c_str(), &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	struct in6_addr a6;
	if (inet_pton(AF_INET6, host.c_str(), &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

}  // namespace

TlsFiles client_tls_files(const char *ca, const char *cert, const char *key, bool insecure)
{
	TlsFiles f;
	const char *dir = getenv(kTlsDirEnv);
	std::string d = dir && *dir ? dir : kTlsDirDefault;
	const char *ins = getenv(kInsecureEnv);

	auto pick = [&](const char *given, const char *env, const char *name) {
		const char *e = getenv(env);
		return given && *given ? std::string(given) : e && *e ? std::string(e) : d + "/" + name;
	};
	f.ca = pick(ca, "DSMEM_STORE_CA", "ca.crt");
	f.cert = pick(cert, "DSMEM_STORE_CERT", "client.crt");
	f.key = pick(key, "DSMEM_STORE_KEY", "client.key");
	f.insecure = insecure || (ins && !strcmp(ins, "1"));
	return f;
}

int channel_credentials(const TlsFiles &f, std::shared_ptr<grpc::ChannelCredentials> *out,
			std::string *err)
{
	if (f.insecure) {
		*out = grpc::InsecureChannelCredentials();
		return 0;
	}
	grpc::SslCredentialsOptions o;
	if (int ret = read_pem(f.ca, "CA certificate", &o.pem_root_certs, err))
		return ret;
	// no certificate: the server is checked, the caller is anonymous
	if (!f.cert.empty() || !f.key.empty()) {
		if (int ret = read_pem(f.cert, "certificate", &o.pem_cert_chain, err))
			return ret;
		if (int ret = read_pem(f.key, "private key", &o.pem_private_key, err))
			return ret;
	}
	*out = grpc::SslCredentials(o);
	return 0;
}

int server_credentials(const TlsFiles &f, std::shared_ptr<grpc::ServerCredentials> *out,
		       std::string *err)
{
	if (f.insecure) {
		*out = grpc::InsecureServerCredentials();
		return 0;
	}
	// The handshake checks the caller's certificate against the CA, as a
	// client's: a caller without one, or with another CA's, is refused
	// before the master reads a byte of its calls (a message may be 64
	// MiB).  PeerVerifier then takes the identity from it.
	grpc::SslServerCredentialsOptions o(
		GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
	grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
	if (int ret = read_pem(f.ca, "CA certificate", &o.pem_root_certs, err))
		return ret;
	if (int ret = read_pem(f.cert, "certificate", &pair.cert_chain, err))
		return ret;
	if (int ret = read_pem(f.key, "private key", &pair.private_key, err))
		return ret;
	o.pem_key_cert_pairs.push_back(std::move(pair));
	*out = grpc::SslServerCredentials(o);
	return 0;
}

bool loopback_only(const std::string &list)
{
	std::stringstream ss(list);
	std::string one;
	bool any = false;

	while (std::getline(ss, one, ',')) {
		size_t colon = one.rfind(':');
		if (colon == std::string::npos || !loopback_host(one.substr(0, colon)))
			return false;
		any = true;
	}
	return any;
}

namespace {

constexpr size_t kVerdictsMax = 1024;
constexpr time_t kVerdictSeconds = 60;	// then expiry is looked at again

std::string openssl_error()
{
	unsigned long e = ERR_get_error();
	char buf[256];
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return e ? buf : "unknown error";
}

}  // namespace

struct PeerVerifier::Impl {
	struct Verdict {
		std::string identity, why;
		time_t at;
	};
	std::mutex m;
	X509_STORE *store = nullptr;
	std::map<std::string, Verdict> seen;	// by certificate PEM

	~Impl()
	{
		if (store)
			X509_STORE_free(store);
	}

	Verdict judge(const std::string &pem) const
	{
		Verdict v{ "", "", time(nullptr) };
		BIO *b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
		X509 *x = b ? PEM_read_bio_X509(b, nullptr, nullptr, nullptr) : nullptr;
		BIO_free(b);
		if (!x) {
			v.why = "the client certificate does not parse: " + openssl_error();
			return v;
		}
		char cn[256] = "";
		X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
		X509_STORE_CTX *c = X509_STORE_CTX_new();
		int ok = c && X509_STORE_CTX_init(c, store, x, nullptr) == 1 &&
			 X509_STORE_CTX_set_purpose(c, X509_PURPOSE_SSL_CLIENT) == 1 &&
			 X509_verify_cert(c) == 1;
		if (!ok)
			v.why = std::string("the client certificate (CN=") + cn +
				") is not one of the store's CA: " +
				(c ? X509_verify_cert_error_string(X509_STORE_CTX_get_error(c)) : "no memory");
		else if (!cn[0])
			v.why = "the client certificate has no common name (its identity)";
		else
			v.identity = cn;
		X509_STORE_CTX_free(c);
		X509_free(x);
		ERR_clear_error();
		return v;
	}
};

PeerVerifier::PeerVerifier() : impl_(new Impl) {}
PeerVerifier::~PeerVerifier() = default;

int PeerVerifier::load(const std::string &ca_file, std::string *err)
{
	std::string pem;
	if (int ret = read_pem(ca_file, "CA certificate", &pem, err))
		return ret;
	X509_STORE *st = X509_STORE_new();
	BIO *b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
	int n = 0;
	while (X509 *x = b && st ? PEM_read_bio_X509(b, nullptr, nullptr, nullptr) : nullptr) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error();
	if (!n) {
		X509_STORE_free(st);
		*err = "no usable certificate in the CA file " + ca_file;
		return -EINVAL;
	}
	std::lock_guard<std::mutex> g(impl_->m);
	if (impl_->store)
		X509_STORE_free(impl_->store);
	impl_->store = st;
	impl_->seen.clear();
	return 0;
}

std::string PeerVerifier::judge(const std::string &pem, std::string *why)
{
	std::lock_guard<std::mutex> g(impl_->m);
	if (!impl_->store) {
		*why = "no CA to check the certificate against";
		return "";
	}
	Impl::Verdict v = impl_->judge(pem);
	*why = v.why;
	return v.identity;
}

int check_client_certificate(const TlsFiles &f, std::string *err)
{
	if (f.cert.empty() || f.key.empty()) {
		*err = "no client certificate: the master takes calls only from holders of a "
		       "certificate of the store's CA";
		return -EACCES;
	}
	PeerVerifier v;
	std::string pem, why;
	if (int ret = v.load(f.ca, err))
		return ret;
	if (int ret = read_pem(f.cert, "certificate", &pem, err))
		return ret;
	if (v.judge(pem, &why).empty()) {
		*err = why;
		return -EACCES;
	}
	return 0;
}

std::string PeerVerifier::identity(const grpc::ServerContext &ctx, std::string *why)
{
	std::shared_ptr<const grpc::AuthContext> a = ctx.auth_context();
	std::vector<grpc::string_ref> pems;
	if (a)
		pems = a->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
	if (pems.empty()) {
		*why = "no client certificate: the master takes calls only from holders of a "
		       "certificate of the store's CA";
		return "";
	}
	std::string pem(pems.front().data(), pems.front().size());
	time_t now = time(nullptr);
	std::lock_guard<std::mutex> g(impl_->m);
	if (!impl_->store) {
		*why = "the master has no CA to check certificates against";
		return "";
	}
	auto it = impl_->seen.find(pem);
	if (it == impl_->seen.end() || now - it->second.at > kVerdictSeconds) {
		if (impl_->seen.size() >= kVerdictsMax)
			impl_->seen.clear();
		it = impl_->seen.insert_or_assign(pem, impl_->judge(pem)).first;
	}
	*why = it->second.why;
	return it->second.identity;
}

}  // namespace dsmem::store
