// SPDX-License-Identifier: BSD-2-Clause
// TLS for the store's gRPC: masters and clients prove who they are with
// certificates of one CA (docs/store.md, "Who may do what").  A caller's
// identity is its certificate's common name, never what it writes in a
// request.  Plaintext is an explicit choice and loopback only.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

namespace dsmem::store {

// Where a party's credentials are, as PEM files.
struct TlsFiles {
	std::string ca;		// the CA that signs every party
	std::string cert;	// this party's certificate
	std::string key;	// and its private key
	bool insecure = false;	// plaintext, loopback only
};

// The default directory and file names, e.g. /etc/dsmem/store/client.crt.
constexpr const char *kTlsDirDefault = "/etc/dsmem/store";
constexpr const char *kTlsDirEnv = "DSMEM_STORE_TLS_DIR";
constexpr const char *kInsecureEnv = "DSMEM_STORE_INSECURE";

// A client's files: each the non-empty argument, else DSMEM_STORE_CA,
// DSMEM_STORE_CERT, DSMEM_STORE_KEY, else DIR/ca.crt, DIR/client.crt,
// DIR/client.key with DIR from DSMEM_STORE_TLS_DIR (default
// /etc/dsmem/store).  DSMEM_STORE_INSECURE=1 or insecure: plaintext.
TlsFiles client_tls_files(const char *ca, const char *cert, const char *key, bool insecure);

// Channel credentials for the files: 0, or -errno with *err saying which
// file could not be read.
int channel_credentials(const TlsFiles &f, std::shared_ptr<grpc::ChannelCredentials> *out,
			std::string *err);
// A server's: it asks every caller for a certificate, which the handshake
// proves the caller holds the key of; PeerVerifier then checks it against
// the CA, so that a caller without one, or with another CA's, is told so
// plainly instead of seeing its connection closed.
int server_credentials(const TlsFiles &f, std::shared_ptr<grpc::ServerCredentials> *out,
		       std::string *err);

// Who a caller is: the common name of its certificate, if the CA signed
// it for client use.  Verdicts are remembered per certificate.
class PeerVerifier {
public:
	PeerVerifier();
	~PeerVerifier();
	PeerVerifier(const PeerVerifier &) = delete;
	PeerVerifier &operator=(const PeerVerifier &) = delete;

	int load(const std::string &ca_file, std::string *err);	// 0 or -errno
	// The identity; "" with *why when there is none to take.
	std::string identity(const grpc::ServerContext &ctx, std::string *why);

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

// Every HOST:PORT of the comma-separated list is a loopback address.
bool loopback_only(const std::string &list);

}  // namespace dsmem::store
