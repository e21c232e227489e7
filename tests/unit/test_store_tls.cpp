// SPDX-License-Identifier: BSD-2-Clause
// The store's TLS without a module: dsmaster's service behind real TLS on
// loopback, with certificates scripts/store-certs makes.  Who the master
// takes a call from, and what a caller without a certificate, with one of
// another CA, or a master of another CA gets: the first two are refused in
// the TLS handshake, before the master reads their calls.
#include <cerrno>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <sys/stat.h>

#include <grpcpp/grpcpp.h>

#include <dsmem/store.h>

#include "client.hpp"
#include "mover.hpp"
#include "persist.hpp"
#include "service.hpp"
#include "store_leader_fx.hpp"
#include "tls.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::store;

namespace {

std::string g_dir;	// scripts/store-certs init: ca, master, client, admin
std::string g_other;	// another CA and its client

std::string sh(const std::string &cmd)
{
	int ret = system(cmd.c_str());
	if (ret)
		fail_msg("'%s' exited %d", cmd.c_str(), ret);
	return cmd;
}

// dsmaster's service with no leader yet: a caller it takes is told
// "not the leader" (FAILED_PRECONDITION), one it refuses UNAUTHENTICATED.
struct Master {
	Options opts;
	std::unique_ptr<MasterService> svc;
	std::unique_ptr<grpc::Server> server;
	std::string addr;

	explicit Master(const std::string &dir)
	{
		opts.tls = { dir + "/ca.crt", dir + "/master.crt", dir + "/master.key", false };
		svc = std::make_unique<MasterService>(opts);
		std::shared_ptr<grpc::ServerCredentials> creds;
		std::string err;
		assert_int_equal(server_credentials(opts.tls, &creds, &err), 0);
		int port = 0;
		grpc::ServerBuilder b;
		b.AddListeningPort("127.0.0.1:0", creds, &port);
		b.RegisterService(svc.get());
		server = b.BuildAndStart();
		assert_true(port > 0);
		addr = "127.0.0.1:" + std::to_string(port);
	}
	~Master() { server->Shutdown(); }
};

grpc::Status info(const std::string &addr, const TlsFiles &f)
{
	std::shared_ptr<grpc::ChannelCredentials> creds;
	std::string err;
	if (channel_credentials(f, &creds, &err))
		fail_msg("credentials: %s", err.c_str());
	auto stub = v1::Master::NewStub(grpc::CreateChannel(addr, creds));
	grpc::ClientContext ctx;
	ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
	v1::MasterInfoRequest q;
	v1::MasterInfoResponse a;
	return stub->MasterInfo(&ctx, q, &a);
}

TlsFiles files(const std::string &dir, const std::string &name)
{
	return { dir + "/ca.crt", dir + "/" + name + ".crt", dir + "/" + name + ".key", false };
}

// What the library says at once, before it calls: -EACCES and why.
void assert_refused_locally(const TlsFiles &f, const char *why)
{
	Masters ms;
	std::string err;
	assert_int_equal(ms.set("127.0.0.1:1", f, &err), -EACCES);
	if (err.find(why) == std::string::npos)
		fail_msg("\"%s\" not in: %s", why, err.c_str());
}

void test_certified_caller(void **)
{
	Master m(g_dir);
	for (const char *who : { "client", "admin" }) {
		grpc::Status s = info(m.addr, files(g_dir, who));
		assert_int_equal(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
		assert_non_null(strstr(s.error_message().c_str(), "not the leader"));
	}
}

void test_no_certificate(void **)
{
	Master m(g_dir);
	TlsFiles f = files(g_dir, "client");
	f.cert.clear();
	f.key.clear();
	// refused in the handshake: the service never saw the call, which
	// it would have answered UNAUTHENTICATED or "not the leader"
	grpc::Status s = info(m.addr, f);
	assert_int_equal(s.error_code(), grpc::StatusCode::UNAVAILABLE);
	assert_null(strstr(s.error_message().c_str(), "not the leader"));
	// and the library says why before it calls
	assert_refused_locally(f, "no client certificate");
}

void test_other_ca(void **)
{
	Master m(g_dir);
	// a client certificate of another CA: refused in the handshake
	TlsFiles f = files(g_other, "client");
	f.ca = g_dir + "/ca.crt";
	grpc::Status s = info(m.addr, f);
	assert_int_equal(s.error_code(), grpc::StatusCode::UNAVAILABLE);
	assert_refused_locally(f, "(CN=client) is not one of the store's CA");
	// with both CAs in its bundle the client cannot tell: the master
	// closes the connection, and the library, out of time, says what
	// that may mean
	const std::string bundle = g_other + "/bundle.crt";
	sh("cat " + g_dir + "/ca.crt " + g_other + "/ca.crt > " + bundle);
	f.ca = bundle;
	{
		Masters ms;
		std::string err;
		assert_int_equal(ms.set(m.addr, f, &err), 0);
		v1::MasterInfoRequest q;
		v1::MasterInfoResponse a;
		// (the deadline only bounds the wait: the verdict is the
		// message, and one refused handshake on loopback is enough;
		// 2 s was too little for that beside a guest on two cores)
		int ret = ms.call(&v1::Master::Stub::MasterInfo, q, &a,
				  Clock::now() + std::chrono::seconds(10), &err);
		assert_int_equal(ret, -EAGAIN);
		if (err.find("without a certificate of the store's CA") == std::string::npos)
			fail_msg("no hint in: %s", err.c_str());
	}
	// a master of another CA: the client will not talk to it
	Master other(g_other);
	s = info(other.addr, files(g_dir, "client"));
	assert_int_equal(s.error_code(), grpc::StatusCode::UNAVAILABLE);
	// plaintext to a TLS master: no answer either
	TlsFiles plain;
	plain.insecure = true;
	s = info(m.addr, plain);
	assert_int_equal(s.error_code(), grpc::StatusCode::UNAVAILABLE);
}

// A master that goes away and comes back on the same port: the client's
// next calls reach it (a channel that failed is not kept).
void test_master_back(void **)
{
	auto m = std::make_unique<Master>(g_dir);
	const std::string addr = m->addr;
	Masters ms;
	std::string err;
	assert_int_equal(ms.set(addr, files(g_dir, "client"), &err), 0);
	// one call on the client's current channel; "not the leader" (no
	// leader here) is an answer from the master
	auto raw = [&](int ms_budget) {
		std::string at;
		auto stub = ms.current(&at);
		grpc::ClientContext ctx;
		ctx.set_wait_for_ready(true);
		ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms_budget));
		v1::MasterInfoRequest q;
		v1::MasterInfoResponse a;
		return stub->MasterInfo(&ctx, q, &a).error_code();
	};
	assert_int_equal(raw(2000), grpc::StatusCode::FAILED_PRECONDITION);
	m.reset();
	v1::MasterInfoRequest q;
	v1::MasterInfoResponse a;
	assert_int_equal(ms.call(&v1::Master::Stub::MasterInfo, q, &a,
				 Clock::now() + std::chrono::milliseconds(300), &err), -EAGAIN);
	// the same port again
	Options o;
	o.tls = files(g_dir, "master");
	MasterService svc(o);
	std::shared_ptr<grpc::ServerCredentials> creds;
	assert_int_equal(server_credentials(o.tls, &creds, &err), 0);
	grpc::ServerBuilder b;
	b.AddListeningPort(addr, creds);
	b.RegisterService(&svc);
	auto server = b.BuildAndStart();
	assert_non_null(server.get());
	assert_int_equal(raw(5000), grpc::StatusCode::FAILED_PRECONDITION);
	server->Shutdown();
}

// The metadata log's snapshot is made by a child forked from a master
// that runs gRPC's threads, TLS and all: the child touches none of them,
// and the master serves through and after it.
void test_snapshot_while_serving(void **)
{
	char tmpl[] = "/tmp/test_store_tls.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	const std::string dir = tmpl;
	auto m = std::make_unique<Master>(g_dir);
	Options o = m->opts;
	leaderfx::master_options(&o);
	o.snapshot_every = 2;
	Mover mover{ leaderfx::kNode };
	auto leader = std::make_shared<Leader>(o, nullptr, &mover);
	std::string err;
	auto log = open_file_log(dir, &err);
	assert_non_null(log.get());
	assert_int_equal(leader->start(std::move(log), [](const std::string &why) {
				 fail_msg("the master lost its log: %s", why.c_str());
			 }, &err), 0);
	m->svc->set_leader(leader);

	std::shared_ptr<grpc::ChannelCredentials> creds;
	assert_int_equal(channel_credentials(files(g_dir, "client"), &creds, &err), 0);
	auto stub = v1::Master::NewStub(grpc::CreateChannel(m->addr, creds));
	struct stat st;
	int snapshots = 0;
	ino_t last = 0;
	for (int i = 0; i < 12; i++) {
		grpc::ClientContext ctx;
		ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
		v1::RegisterClientRequest q = leaderfx::client_request();
		v1::RegisterClientResponse a;
		grpc::Status s = stub->RegisterClient(&ctx, q, &a);
		if (!s.ok())
			fail_msg("call %d: %s", i, s.error_message().c_str());
		if (!stat((dir + "/snapshot").c_str(), &st) && st.st_ino != last) {
			last = st.st_ino;
			snapshots++;
		}
	}
	assert_true(snapshots >= 2);
	assert_true(info(m->addr, files(g_dir, "client")).ok());
	leader->stop();
	m.reset();
	std::filesystem::remove_all(dir);
}

void test_client_files(void **)
{
	Masters ms;
	std::string err;
	TlsFiles f = files(g_dir, "client");
	f.key = g_dir + "/absent.key";
	assert_int_equal(ms.set("127.0.0.1:7700", f, &err), -ENOENT);
	assert_non_null(strstr(err.c_str(), "absent.key"));
	f = files(g_dir, "client");
	f.cert = g_dir + "/ca.srl";	// not PEM
	assert_int_equal(ms.set("127.0.0.1:7700", f, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "not PEM"));
	// plaintext goes to loopback only
	TlsFiles plain;
	plain.insecure = true;
	assert_int_equal(ms.set("10.0.0.1:7700", plain, &err), -EINVAL);
	assert_non_null(strstr(err.c_str(), "loopback"));
	assert_int_equal(ms.set("127.0.0.1:7700,[::1]:7701,localhost:1", plain, &err), 0);
	assert_false(loopback_only("127.0.0.1:1,10.0.0.1:2"));
	assert_false(loopback_only(""));
	assert_false(loopback_only("127.0.0.1"));

	// the defaults: DSMEM_STORE_TLS_DIR, then the per-file variables
	setenv("DSMEM_STORE_TLS_DIR", "/d", 1);
	setenv("DSMEM_STORE_CERT", "/x/me.crt", 1);
	TlsFiles d = client_tls_files(nullptr, nullptr, "/k", false);
	assert_string_equal(d.ca.c_str(), "/d/ca.crt");
	assert_string_equal(d.cert.c_str(), "/x/me.crt");
	assert_string_equal(d.key.c_str(), "/k");
	assert_false(d.insecure);
	setenv("DSMEM_STORE_INSECURE", "1", 1);
	assert_true(client_tls_files(nullptr, nullptr, nullptr, false).insecure);
	unsetenv("DSMEM_STORE_INSECURE");
	unsetenv("DSMEM_STORE_CERT");
	unsetenv("DSMEM_STORE_TLS_DIR");

	// the C API takes its config's files; unknown flags are refused
	ds_store_config c{};
	ds_store *s = nullptr;
	c.masters = "127.0.0.1:1";
	c.node_id = 1;
	c.flags = 0x80;
	assert_int_equal(ds_store_open(&c, &s), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(nullptr), "flags"));
	c.flags = 0;
	c.tls_ca = "/nonexistent/ca.crt";
	assert_int_equal(ds_store_open(&c, &s), -ENOENT);
	assert_non_null(strstr(ds_store_errmsg(nullptr), "/nonexistent/ca.crt"));
}

}  // namespace

int main(void)
{
	char tmpl[] = "/tmp/store-tls.XXXXXX";
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	g_dir = std::string(tmpl) + "/ours";
	g_other = std::string(tmpl) + "/theirs";
	const std::string certs = DS_STORE_CERTS;
	sh(certs + " init " + g_dir + " >/dev/null");
	sh(certs + " init " + g_other + " >/dev/null");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_certified_caller),
		cmocka_unit_test(test_no_certificate),
		cmocka_unit_test(test_other_ca),
		cmocka_unit_test(test_master_back),
		cmocka_unit_test(test_client_files),
		cmocka_unit_test(test_snapshot_while_serving),
	};
	int ret = cmocka_run_group_tests(tests, nullptr, nullptr);
	sh(std::string("rm -rf ") + tmpl);
	return ret;
}
