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
// A server's: the handshake takes only a caller with a certificate of the
// CA, and proves the caller holds its key, before a byte of a call is
// read; PeerVerifier then takes the identity from it.  A caller refused
// there sees its connection closed, and no more: check_client_certificate
// is how a client tells its user why first.
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
	// The identity in a PEM certificate; "" with *why when it has none.
	std::string judge(const std::string &pem, std::string *why);
	// The identity; "" with *why when there is none to take.
	std::string identity(const grpc::ServerContext &ctx, std::string *why);

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

// 0 if f's certificate is one a master takes: present, of f's CA, for
// client use, with a common name; else -EACCES (or the -errno of a file
// that cannot be read) with *err saying which, as the master would.
int check_client_certificate(const TlsFiles &f, std::string *err);

// Every HOST:PORT of the comma-separated list is a loopback address.
bool loopback_only(const std::string &list);

}  // namespace dsmem::store
