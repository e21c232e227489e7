// SPDX-License-Identifier: BSD-2-Clause
// The object store's client without a module: the C API's argument
// checks, the task queue's states, gRPC statuses as errnos, and leader
// following against fake masters on loopback.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <dsmem/store.h>
#include <dsmem/store.hpp>

#include "store/client.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::store;

namespace {

// A master that answers MasterInfo itself, or says who leads.
class FakeMaster final : public pb::Master::Service {
public:
	std::string redirect_to;	// "": we lead
	std::string name;
	std::atomic<int> calls{0};

	grpc::Status MasterInfo(grpc::ServerContext *, const pb::MasterInfoRequest *,
				pb::MasterInfoResponse *resp) override
	{
		calls++;
		if (!redirect_to.empty())
			return {grpc::StatusCode::FAILED_PRECONDITION,
				"not the leader; leader is " + redirect_to};
		resp->set_leader(name);
		resp->set_term(7);
		resp->set_evictions(11);
		resp->set_expiries(3);
		resp->set_evicted_bytes(1 << 20);
		resp->set_high_watermark_pct(95);
		resp->set_low_watermark_pct(85);
		resp->set_evict(true);
		resp->add_standbys("a:1");
		resp->add_standbys("b:2");
		return grpc::Status::OK;
	}

	grpc::Status SegmentList(grpc::ServerContext *, const pb::SegmentListRequest *,
				 pb::SegmentListResponse *resp) override
	{
		calls++;
		pb::SegmentDesc *d = resp->add_segments();
		d->set_id(3);
		d->set_type(pb::SEGMENT_NVMEOF);
		d->set_traddr("10.0.0.1");
		d->set_subnqn("nqn.test");
		d->set_size(1 << 20);
		return grpc::Status::OK;
	}

	// put_ok: PutStart places one DRAM replica, and says it keeps the
	// attributes when attrs (a master of before them does not).
	bool put_ok = false;
	bool attrs = false;
	std::mutex mu;
	pb::PutStartRequest last_start;
	std::atomic<int> aborts{0};
	// set_attr: SetAttr is known (else UNIMPLEMENTED, an older master)
	bool set_attr = false;
	pb::SetAttrRequest last_set;

	grpc::Status PutStart(grpc::ServerContext *, const pb::PutStartRequest *req,
			      pb::PutStartResponse *resp) override
	{
		calls++;
		if (put_ok) {
			std::lock_guard<std::mutex> g(mu);
			last_start = *req;
			resp->set_version(5);
			resp->set_attrs(attrs);
			resp->set_dram_wanted(1);
			pb::Replica *r = resp->add_replicas();
			r->set_type(pb::SEGMENT_DRAM);
			return grpc::Status::OK;
		}
		if (req->size() > 100)
			return {grpc::StatusCode::RESOURCE_EXHAUSTED, "no room"};
		return {grpc::StatusCode::INVALID_ARGUMENT, "bad"};
	}

	grpc::Status PutAbort(grpc::ServerContext *, const pb::PutAbortRequest *req,
			      pb::PutAbortResponse *) override
	{
		calls++;
		if (req->version() == 5)
			aborts++;
		return grpc::Status::OK;
	}

	grpc::Status SetAttr(grpc::ServerContext *, const pb::SetAttrRequest *req,
			     pb::SetAttrResponse *resp) override
	{
		calls++;
		if (!set_attr)
			return {grpc::StatusCode::UNIMPLEMENTED, ""};
		{
			std::lock_guard<std::mutex> g(mu);
			last_set = *req;
		}
		if (req->key() == "gone")
			return {grpc::StatusCode::NOT_FOUND, "no object 'gone'"};
		if (req->key() == "theirs")
			return {grpc::StatusCode::PERMISSION_DENIED, "'theirs' belongs to alice, not bob"};
		resp->set_version(9);
		resp->set_expires_ns(req->ttl_ms() ? 1'000'000 : 0);
		return grpc::Status::OK;
	}

	// One object: "pinned", soft-pinned with a TTL.
	grpc::Status List(grpc::ServerContext *, const pb::ListRequest *req,
			  pb::ListResponse *resp) override
	{
		calls++;
		if (req->prefix() != "pinned")
			return grpc::Status::OK;
		pb::ObjectInfo *o = resp->add_objects();
		o->set_key("pinned");
		o->set_version(4);
		o->set_size(10);
		o->mutable_config()->set_dram_replicas(1);
		o->mutable_config()->set_soft_pin(true);
		o->mutable_config()->set_ttl_ms(60000);
		o->set_ctime_ns(1'000'000'000);
		o->set_expires_ns(61'000'000'000);
		o->set_atime_ns(2'000'000'000);
		return grpc::Status::OK;
	}
};

struct Server {
	FakeMaster svc;
	std::unique_ptr<grpc::Server> server;
	std::string addr;

	explicit Server(const std::string &redirect = {})
	{
		int port = 0;
		svc.redirect_to = redirect;
		grpc::ServerBuilder b;
		b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
		b.RegisterService(&svc);
		server = b.BuildAndStart();
		addr = "127.0.0.1:" + std::to_string(port);
		svc.name = addr;
	}
	~Server() { server->Shutdown(); }
};

// A port nobody listens on: bind, read the port, close.
std::string dead_addr()
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	assert_int_equal(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
	assert_int_equal(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
	close(fd);
	return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// A handle with no node and no master registration.
std::unique_ptr<ds_store> detached(const std::string &masters = "127.0.0.1:1",
				   uint32_t threads = 2, uint32_t timeout_ms = 500)
{
	auto s = std::make_unique<ds_store>();
	ClientConfig c;
	c.masters = masters;
	c.threads = threads;
	c.timeout_ms = timeout_ms;
	c.tls.insecure = true;	// the fake masters are plaintext, on loopback
	std::string err;
	assert_int_equal(s->client.open_detached(c, &err), 0);
	return s;
}

void test_status_mapping(void **)
{
	using grpc::StatusCode;
	struct {
		StatusCode code;
		int err;
	} table[] = {
		{StatusCode::OK, 0},
		{StatusCode::INVALID_ARGUMENT, -EINVAL},
		{StatusCode::NOT_FOUND, -ENOENT},
		{StatusCode::RESOURCE_EXHAUSTED, -ENOSPC},
		{StatusCode::ABORTED, -ESTALE},
		{StatusCode::OUT_OF_RANGE, -ERANGE},
		{StatusCode::DEADLINE_EXCEEDED, -ETIMEDOUT},
		{StatusCode::UNAVAILABLE, -EAGAIN},
		{StatusCode::PERMISSION_DENIED, -EPERM},
		{StatusCode::ALREADY_EXISTS, -EEXIST},
		{StatusCode::UNIMPLEMENTED, -EOPNOTSUPP},
		{StatusCode::INTERNAL, -EIO},
		{StatusCode::FAILED_PRECONDITION, -EBUSY},
	};
	for (auto &t : table)
		assert_int_equal(status_to_errno(grpc::Status(t.code, "x")), t.err);
	assert_int_equal(status_to_errno(grpc::Status(StatusCode::FAILED_PRECONDITION,
						      "not the leader; leader is h:1")), -EAGAIN);
	// every replica lost, none flushed: no data, not "busy"
	assert_int_equal(status_to_errno(grpc::Status(StatusCode::FAILED_PRECONDITION,
						      "'k' version 3: no readable replica")), -ENODATA);
	assert_int_equal(status_to_errno(grpc::Status(StatusCode::FAILED_PRECONDITION,
						      "draining")), -EBUSY);
	assert_int_equal(status_to_errno(grpc::Status(StatusCode::DATA_LOSS, "x")), -EIO);
}

// A master's realtime instant on our steady clock, from spans only.
void test_local_deadline(void **)
{
	Clock::time_point sent = Clock::now();
	int64_t rt = 1'000'000'000'000;
	// 10 s left at the response, 20% margin: 8 s after the request left
	auto d = local_deadline(sent, rt, rt + 10'000'000'000, 20);
	assert_true(d - sent == std::chrono::seconds(8));
	// already over (or our clock far ahead): over at once
	assert_true(local_deadline(sent, rt, rt - 5, 20) == sent);
	assert_true(local_deadline(sent, rt, rt, 20) == sent);
	// a master clock ahead of ours by more than the span changes nothing
	// but the span: no absolute realtime comparison
	auto e = local_deadline(sent, rt, rt + 1'000'000, 10);
	assert_true(e - sent == std::chrono::microseconds(900));
}

// A span the master gives is counted from the request on our clock, and
// the two hosts' realtime clocks do not enter: a client whose clock is 30 s
// behind the master's gets the same deadline as one in step, where the
// realtime instant alone would have given it 30 s too many.
void test_answer_deadline_skew(void **)
{
	Clock::time_point sent = Clock::now();
	const int64_t master_now = realtime_ns() + 30'000'000'000;	// we are 30 s behind
	const int64_t until = master_now + 10'000'000'000;
	auto d = answer_deadline(sent, true, 10'000'000'000, until, 10);
	assert_true(d - sent == std::chrono::seconds(9));
	assert_true(local_deadline_after(sent, 0, 10) == sent);
	assert_true(local_deadline_after(sent, -5, 10) == sent);
	// an older master gives no span: its instant against our clock
	auto old = answer_deadline(sent, false, 0, until, 10);
	assert_true(old - sent > std::chrono::seconds(30));
}

// C++ layer: keys the C API would cut at a NUL are refused.
void test_nul_keys(void **)
{
	using namespace std::string_literals;
	assert_false(detail::has_nul("abc"));
	assert_false(detail::has_nul("\xff\xfe"s));	// non-UTF-8 is fine
	assert_true(detail::has_nul("a\0b"s));
	assert_true(detail::has_nul("\0"s));
	error e = detail::nul_error("key");
	assert_int_equal(e.code, -EINVAL);
	assert_non_null(strstr(e.message.c_str(), "NUL"));
}

void test_not_leader(void **)
{
	std::string l;
	assert_true(not_leader({grpc::StatusCode::FAILED_PRECONDITION,
				"not the leader; leader is 10.0.0.2:7000"}, &l));
	assert_string_equal(l.c_str(), "10.0.0.2:7000");
	assert_true(not_leader({grpc::StatusCode::FAILED_PRECONDITION,
				"not the leader; leader is "}, &l));
	assert_true(l.empty());
	assert_true(not_leader({grpc::StatusCode::FAILED_PRECONDITION,
				"not the leader; leader is unknown"}, &l));
	assert_true(l.empty());
	assert_false(not_leader({grpc::StatusCode::FAILED_PRECONDITION, "draining"}, &l));
	assert_false(not_leader({grpc::StatusCode::UNAVAILABLE, "not the leader"}, &l));
}

void test_key_checks(void **)
{
	std::string why;
	assert_int_equal(check_key(nullptr, &why), -EINVAL);
	assert_int_equal(check_key("", &why), -EINVAL);
	assert_string_equal(why.c_str(), "empty key");
	std::string k(DS_STORE_KEY_MAX, 'k');
	assert_int_equal(check_key(k.c_str(), &why), 0);
	k += 'x';
	assert_int_equal(check_key(k.c_str(), &why), -EINVAL);
	assert_non_null(strstr(why.c_str(), "longer"));
}

void test_open_args(void **)
{
	ds_store *s = reinterpret_cast<ds_store *>(0x1);
	ds_store_config c{};
	assert_int_equal(ds_store_open(nullptr, &s), -EINVAL);
	assert_int_equal(ds_store_open(&c, nullptr), -EINVAL);
	assert_int_equal(ds_store_open(&c, &s), -EINVAL);
	assert_null(s);
	assert_string_equal(ds_store_errmsg(nullptr), "no master address");
	c.masters = "127.0.0.1:1";
	assert_int_equal(ds_store_open(&c, &s), -EINVAL);
	assert_string_equal(ds_store_errmsg(nullptr), "no node");
	c.node_id = 1;
	c.masters = "nohost";
	assert_int_equal(ds_store_open(&c, &s), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(nullptr), "port"));
	ds_store_close(nullptr, 0);	// fine
}

void test_null_handle(void **)
{
	uint64_t task = 0;
	char b[8];
	iovec v{b, sizeof(b)};
	ds_store_replicate_config rc{1, 0, 0, 0};
	ds_store_task_status st{};
	ds_store_object_list *l = nullptr;
	ds_store_object_info info{};
	assert_int_equal(ds_store_put(nullptr, "k", &v, 1, &rc, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(nullptr), "no store handle");
	assert_int_equal(ds_store_get(nullptr, "k", &v, 1, -1, 0, &task), -EINVAL);
	assert_int_equal(ds_store_replicate(nullptr, "k", &rc, &task), -EINVAL);
	assert_int_equal(ds_store_del(nullptr, "k", &task), -EINVAL);
	assert_int_equal(ds_store_sync(nullptr, "k", &task), -EINVAL);
	assert_int_equal(ds_store_task_query(nullptr, 1, 0, 0, &st), -EINVAL);
	assert_int_equal(ds_store_task_cancel(nullptr, 1), -EINVAL);
	assert_int_equal(ds_store_buf_reg(nullptr, b, sizeof(b)), -EINVAL);
	assert_int_equal(ds_store_buf_dereg(nullptr, b), -EINVAL);
	assert_int_equal(ds_store_list(nullptr, "", nullptr, 0, &l), -EINVAL);
	assert_int_equal(ds_store_stat(nullptr, "k", &info), -EINVAL);
	ds_store_list_free(nullptr);

	char err[64] = "";
	struct ds_store_master_info mi{};
	ds_store_segment_info *segs = nullptr;
	size_t n = 0;
	uint64_t id = 0;
	assert_int_equal(ds_store_master_info(nullptr, &mi, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "no master address");
	assert_int_equal(ds_store_master_info("127.0.0.1:1", nullptr, err, sizeof(err)), -EINVAL);
	assert_int_equal(ds_store_segment_list("127.0.0.1:1", nullptr, &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(ds_store_segment_list("127.0.0.1:1", &segs, nullptr, err, sizeof(err)), -EINVAL);
	assert_int_equal(ds_store_nvmeof_register("127.0.0.1:1", nullptr, 4420, "nqn", 0, 4096, &id,
						  err, sizeof(err)), -EINVAL);
	assert_int_equal(ds_store_nvmeof_register("127.0.0.1:1", "10.0.0.1", 4420, "nqn", 1, 4096, &id,
						  err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "4096"));
	assert_int_equal(ds_store_nvmeof_register("127.0.0.1:1", "10.0.0.1", 4420, "nqn", 0, 0, &id,
						  nullptr, 0), -EINVAL);
}

void test_put_args(void **)
{
	auto s = detached();
	uint64_t task = 0;
	char b[8] = {};
	iovec v[2] = {{b, sizeof(b)}, {b, 0}};
	ds_store_replicate_config rc{1, 0, DS_STORE_FLUSH_NONE, 0};
	std::string big(DS_STORE_KEY_MAX + 1, 'k');

	assert_int_equal(ds_store_put(s.get(), nullptr, v, 1, &rc, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "no key");
	assert_int_equal(ds_store_put(s.get(), "", v, 1, &rc, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "empty key");
	assert_int_equal(ds_store_put(s.get(), big.c_str(), v, 1, &rc, &task), -EINVAL);
	assert_int_equal(ds_store_put(s.get(), "k", nullptr, 1, &rc, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "no buffers");
	assert_int_equal(ds_store_put(s.get(), "k", v, 0, &rc, &task), -EINVAL);
	assert_int_equal(ds_store_put(s.get(), "k", &v[1], 1, &rc, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "empty object");
	iovec null_buf{nullptr, 4};
	assert_int_equal(ds_store_put(s.get(), "k", &null_buf, 1, &rc, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "NULL"));
	iovec huge[2] = {{b, SIZE_MAX}, {b, 2}};
	assert_int_equal(ds_store_put(s.get(), "k", huge, 2, &rc, &task), -EINVAL);
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &rc, nullptr), -EINVAL);
	ds_store_replicate_config bad = rc;
	bad.flush = 3;
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &bad, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "flush"));
	bad = rc;
	bad.prefer_local = 2;
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &bad, &task), -EINVAL);
	// what the master would refuse: no replicas, or too many
	bad = rc;
	bad.dram_replicas = 0;
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &bad, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "no replicas"));
	assert_int_equal(ds_store_replicate(s.get(), "k", &bad, &task), -EINVAL);
	bad.nvmeof_replicas = 65;
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &bad, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "64"));
	bad = rc;
	bad.dram_replicas = 65;
	assert_int_equal(ds_store_replicate(s.get(), "k", &bad, &task), -EINVAL);
	bad.dram_replicas = 64;
	bad.nvmeof_replicas = 64;
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &bad, &task), 0);
	ds_store_task_status bst{};
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &bst), 0);
	bad = rc;
	bad.dram_replicas = 0;
	bad.nvmeof_replicas = 1;
	assert_int_equal(ds_store_put(s.get(), "k", v, 1, &bad, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &bst), 0);
	// a zero-length iovec among others is fine
	assert_int_equal(ds_store_put(s.get(), "k", v, 2, &rc, &task), 0);
	// no master answers: it ends at its deadline
	ds_store_task_status st{};
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	assert_true(st.state == DS_STORE_TIMEOUT || st.state == DS_STORE_FAILED);
	assert_int_equal(st.bytes, sizeof(b));
}

// The health struct is size-versioned: an older, smaller one gets its
// own fields and nothing past them; a larger one is refused.  A client
// that never joined has sent no beat.
void test_health_args(void **)
{
	auto s = detached();
	ds_store_health h;

	assert_int_equal(ds_store_health_get(nullptr, &h, sizeof(h)), -EINVAL);
	assert_int_equal(ds_store_health_get(s.get(), nullptr, sizeof(h)), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "no health pointer");
	assert_int_equal(ds_store_health_get(s.get(), &h, sizeof(h) + 8), -E2BIG);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "this library knows"));

	memset(&h, 0xa5, sizeof(h));
	assert_int_equal(ds_store_health_get(s.get(), &h, sizeof(h)), 0);
	assert_int_equal(h.client_id, 0);
	assert_int_equal(h.beats_ok + h.beats_failed + h.rejoins, 0);
	assert_int_equal(h.last_ok_ns + h.last_failed_ns, 0);
	assert_int_equal(h.last_error, 0);

	memset(&h, 0xa5, sizeof(h));
	size_t old = offsetof(ds_store_health, beats_failed);
	assert_int_equal(ds_store_health_get(s.get(), &h, old), 0);
	assert_int_equal(h.client_id, 0);
	assert_int_equal(h.beats_ok, 0);
	assert_int_equal(h.beats_failed, 0xa5a5a5a5a5a5a5a5ull);	// not written
}

void test_other_args(void **)
{
	auto s = detached();
	uint64_t task = 0;
	char b[8] = {};
	iovec v{b, sizeof(b)};
	ds_store_replicate_config rc{2, 0, DS_STORE_FLUSH_LAZY, 0};
	ds_store_task_status st{};
	ds_store_object_info info{};
	ds_store_object_list *l = nullptr;

	assert_int_equal(ds_store_get(s.get(), "", &v, 1, -1, 0, &task), -EINVAL);
	assert_int_equal(ds_store_get(s.get(), "k", nullptr, 1, -1, 0, &task), -EINVAL);
	assert_int_equal(ds_store_get(s.get(), "k", &v, 0, -1, 0, &task), -EINVAL);
	assert_int_equal(ds_store_get(s.get(), "k", &v, 1, -2, 0, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "min_version"));
	assert_int_equal(ds_store_get(s.get(), "k", &v, 1, -1, 0, nullptr), -EINVAL);
	assert_int_equal(ds_store_replicate(s.get(), "", &rc, &task), -EINVAL);
	assert_int_equal(ds_store_replicate(s.get(), "k", nullptr, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "no replicate config");
	assert_int_equal(ds_store_replicate(s.get(), "k", &rc, nullptr), -EINVAL);
	assert_int_equal(ds_store_del(s.get(), "", &task), -EINVAL);
	assert_int_equal(ds_store_del(s.get(), "k", nullptr), -EINVAL);
	assert_int_equal(ds_store_sync(s.get(), nullptr, &task), -EINVAL);
	assert_int_equal(ds_store_sync(s.get(), "k", nullptr), -EINVAL);
	assert_int_equal(ds_store_task_query(s.get(), 1, 0, 0, nullptr), -EINVAL);
	assert_int_equal(ds_store_task_query(s.get(), 1, -2, 0, &st), -EINVAL);
	assert_int_equal(ds_store_buf_reg(s.get(), nullptr, 8), -EINVAL);
	assert_int_equal(ds_store_buf_reg(s.get(), b, 0), -EINVAL);
	assert_int_equal(ds_store_buf_dereg(s.get(), nullptr), -EINVAL);
	assert_int_equal(ds_store_buf_dereg(s.get(), b), -ENOENT);
	assert_int_equal(ds_store_list(s.get(), "", nullptr, 0, nullptr), -EINVAL);
	assert_int_equal(ds_store_stat(s.get(), "", &info), -EINVAL);
	assert_int_equal(ds_store_stat(s.get(), "k", nullptr), -EINVAL);
	(void)l;
}

void test_unknown_task(void **)
{
	auto s = detached();
	ds_store_task_status st{};
	st.state = 99;
	assert_int_equal(ds_store_task_query(s.get(), 12345, 0, 1, &st), 0);
	assert_int_equal(st.state, DS_STORE_INVALID);
	assert_int_equal(st.err, -ENOENT);
	assert_int_equal(ds_store_task_cancel(s.get(), 12345), -ENOENT);
}

// One worker held by a gate: what queues behind it WAITs.
struct Gate {
	std::mutex mu;
	std::condition_variable cv;
	bool open = false;
	bool entered = false;
	void wait()
	{
		std::unique_lock<std::mutex> lk(mu);
		entered = true;
		cv.notify_all();
		cv.wait(lk, [this] { return open; });
	}
	void wait_entered()
	{
		std::unique_lock<std::mutex> lk(mu);
		cv.wait(lk, [this] { return entered; });
	}
	void release()
	{
		std::lock_guard<std::mutex> g(mu);
		open = true;
		cv.notify_all();
	}
};

void test_task_states(void **)
{
	TaskQueue q;
	q.start(1);
	Gate gate;
	uint64_t a = 0, b = 0, c = 0;
	ds_store_task_status st{};
	assert_int_equal(q.submit(DS_STORE_TASK_PUT, 10000,
				  [&](unsigned w, Clock::time_point, ds_store_task_status *s, std::string *) {
					  assert_int_equal(w, 0);
					  gate.wait();
					  s->version = 42;
					  return 0;
				  }, &a), 0);
	assert_int_equal(q.submit(DS_STORE_TASK_GET, 10000,
				  [](unsigned, Clock::time_point, ds_store_task_status *, std::string *) { return 0; },
				  &b), 0);
	assert_int_equal(q.submit(DS_STORE_TASK_DEL, 10000,
				  [](unsigned, Clock::time_point, ds_store_task_status *, std::string *why) {
					  *why = "no key k";
					  return -ENOENT;
				  }, &c), 0);
	assert_true(a != b && b != c);
	gate.wait_entered();
	assert_int_equal(q.query(a, 0, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_PENDING);
	assert_int_equal(st.kind, DS_STORE_TASK_PUT);
	assert_int_equal(q.query(b, 0, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_WAITING);
	assert_int_equal(st.version, -1);
	// wait with a time limit returns the state it found
	assert_int_equal(q.query(b, 20, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_WAITING);
	assert_int_equal(q.cancel(a), -EBUSY);
	assert_int_equal(q.cancel(b), 0);
	assert_int_equal(q.cancel(b), -EBUSY);
	assert_int_equal(q.query(b, 0, false, &st), 0);
	assert_int_equal(st.state, DS_STORE_CANCELED);
	assert_int_equal(st.err, -ECANCELED);
	gate.release();
	std::string why = "stale";
	assert_int_equal(q.query(a, -1, false, &st, &why), 0);
	assert_int_equal(st.state, DS_STORE_COMPLETE);
	assert_int_equal(st.version, 42);
	assert_int_equal(st.err, 0);
	assert_string_equal(why.c_str(), "");
	// a failed task keeps its reason
	assert_int_equal(q.query(c, -1, false, &st, &why), 0);
	assert_int_equal(st.state, DS_STORE_FAILED);
	assert_int_equal(st.err, -ENOENT);
	assert_int_equal(st.kind, DS_STORE_TASK_DEL);
	assert_string_equal(why.c_str(), "no key k");
	// release forgets done tasks only when asked
	assert_int_equal(q.size(), 3);
	assert_int_equal(q.query(a, 0, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_COMPLETE);
	assert_int_equal(q.query(a, 0, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_INVALID);
	q.query(b, 0, true, &st);
	q.query(c, 0, true, &st);
	assert_int_equal(q.size(), 0);
	q.stop();
	assert_int_equal(q.submit(DS_STORE_TASK_PUT, 100,
				  [](unsigned, Clock::time_point, ds_store_task_status *, std::string *) { return 0; },
				  &a), -ESHUTDOWN);
}

void test_task_timeout(void **)
{
	TaskQueue q;
	q.start(1);
	Gate gate;
	uint64_t a = 0, b = 0, c = 0;
	ds_store_task_status st{};
	q.submit(DS_STORE_TASK_PUT, 10000,
		 [&](unsigned, Clock::time_point, ds_store_task_status *, std::string *) {
			 gate.wait();
			 return 0;
		 }, &a);
	// queued behind it with a short deadline: times out without running
	std::atomic<bool> ran{false};
	q.submit(DS_STORE_TASK_GET, 30,
		 [&](unsigned, Clock::time_point, ds_store_task_status *, std::string *) {
			 ran = true;
			 return 0;
		 }, &b);
	gate.wait_entered();
	auto t0 = std::chrono::steady_clock::now();
	assert_int_equal(q.query(b, -1, false, &st), 0);
	assert_true(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
	assert_int_equal(st.state, DS_STORE_TIMEOUT);
	assert_int_equal(st.err, -ETIMEDOUT);
	assert_int_equal(q.cancel(b), -EBUSY);
	gate.release();
	// a running task that ends with -ETIMEDOUT is a TIMEOUT too
	q.submit(DS_STORE_TASK_SYNC, 10000,
		 [](unsigned, Clock::time_point, ds_store_task_status *, std::string *) { return -ETIMEDOUT; }, &c);
	assert_int_equal(q.query(c, -1, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_TIMEOUT);
	assert_int_equal(q.query(a, -1, true, &st), 0);
	assert_int_equal(st.state, DS_STORE_COMPLETE);
	assert_false(ran.load());
}

void test_stop_cancels_waiting(void **)
{
	auto q = std::make_unique<TaskQueue>();
	q->start(1);
	Gate gate;
	uint64_t a = 0, b = 0;
	q->submit(DS_STORE_TASK_PUT, 10000,
		  [&](unsigned, Clock::time_point, ds_store_task_status *, std::string *) {
			  gate.wait();
			  return 0;
		  }, &a);
	q->submit(DS_STORE_TASK_PUT, 10000,
		  [](unsigned, Clock::time_point, ds_store_task_status *, std::string *) { return 0; }, &b);
	gate.wait_entered();
	std::thread stopper([&] { q->stop(); });
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	gate.release();
	stopper.join();
	ds_store_task_status st{};
	q->query(b, 0, false, &st);
	assert_int_equal(st.state, DS_STORE_CANCELED);
	q->query(a, 0, false, &st);
	assert_int_equal(st.state, DS_STORE_COMPLETE);
}

void test_many_workers(void **)
{
	TaskQueue q;
	q.start(4);
	std::atomic<int> sum{0};
	std::vector<uint64_t> ids(200);
	for (size_t i = 0; i < ids.size(); i++)
		assert_int_equal(q.submit(DS_STORE_TASK_GET, 10000,
					  [&, i](unsigned w, Clock::time_point, ds_store_task_status *s, std::string *) {
						  assert_true(w < 4);
						  sum += static_cast<int>(i);
						  s->bytes = i;
						  return 0;
					  }, &ids[i]), 0);
	for (size_t i = 0; i < ids.size(); i++) {
		ds_store_task_status st{};
		q.query(ids[i], -1, true, &st);
		assert_int_equal(st.state, DS_STORE_COMPLETE);
		assert_int_equal(st.bytes, i);
	}
	assert_int_equal(sum.load(), 199 * 200 / 2);
	assert_int_equal(q.size(), 0);
}

void test_leader_following(void **)
{
	Server leader;
	Server standby(leader.addr);
	char err[256] = "";
	struct ds_store_master_info mi{};
	// the standby named first: redirected to the leader
	assert_int_equal(ds_store_master_info(standby.addr.c_str(), &mi, err, sizeof(err)), 0);
	assert_string_equal(mi.leader, leader.addr.c_str());
	assert_string_equal(mi.standbys, "a:1,b:2");
	assert_int_equal(mi.term, 7);
	assert_int_equal(mi.evictions, 11);
	assert_int_equal(mi.expiries, 3);
	assert_int_equal(mi.evicted_bytes, 1 << 20);
	assert_int_equal(mi.high_watermark_pct, 95);
	assert_int_equal(mi.low_watermark_pct, 85);
	assert_int_equal(standby.svc.calls.load(), 1);
	assert_int_equal(leader.svc.calls.load(), 1);
	// an unreachable master first: the next one
	std::string list = dead_addr() + "," + leader.addr;
	assert_int_equal(ds_store_master_info(list.c_str(), &mi, err, sizeof(err)), 0);
	assert_string_equal(mi.leader, leader.addr.c_str());
	// C++ layer
	auto r = master_info(standby.addr);
	assert_true(r.ok());
	assert_int_equal(r->term, 7);

	ds_store_segment_info *segs = nullptr;
	size_t n = 0;
	assert_int_equal(ds_store_segment_list(leader.addr.c_str(), &segs, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(segs[0].id, 3);
	assert_int_equal(segs[0].type, 1);
	assert_string_equal(segs[0].traddr, "10.0.0.1");
	assert_string_equal(segs[0].subnqn, "nqn.test");
	free(segs);
}

void test_no_master(void **)
{
	char err[256] = "";
	struct ds_store_master_info mi{};
	std::string list = dead_addr();
	auto t0 = std::chrono::steady_clock::now();
	// UNAVAILABLE from every master until the call's deadline: -EAGAIN
	assert_int_equal(ds_store_master_info(list.c_str(), &mi, err, sizeof(err)), -EAGAIN);
	assert_true(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
	assert_true(err[0] != '\0');
	// a leader nobody can reach: redirections alone do not loop for ever
	Server lost("127.0.0.1:1");
	Masters ms;
	std::string e;
	TlsFiles plain;
	plain.insecure = true;
	assert_int_equal(ms.set(lost.addr, plain, &e), 0);
	pb::MasterInfoRequest req;
	pb::MasterInfoResponse resp;
	int ret = ms.call(&pb::Master::Stub::MasterInfo, req, &resp,
			  Clock::now() + std::chrono::milliseconds(800), &e);
	assert_true(ret == -EAGAIN || ret == -ETIMEDOUT);
}

// Task errors carry the master's status, mapped.
void test_task_errors(void **)
{
	Server m;
	auto s = detached(m.addr, 2, 5000);
	char small[8] = {}, big[200] = {};
	iovec v1{small, sizeof(small)}, v2{big, sizeof(big)};
	uint64_t t1 = 0, t2 = 0;
	ds_store_task_status st{};
	assert_int_equal(ds_store_put(s.get(), "k", &v1, 1, nullptr, &t1), 0);
	assert_int_equal(ds_store_put(s.get(), "k", &v2, 1, nullptr, &t2), 0);
	assert_int_equal(ds_store_task_query(s.get(), t1, -1, 1, &st), 0);
	// the master's INVALID_ARGUMENT: bad arguments, not a failure
	assert_int_equal(st.state, DS_STORE_INVALID);
	assert_int_equal(st.err, -EINVAL);
	assert_int_equal(st.kind, DS_STORE_TASK_PUT);
	assert_int_equal(st.bytes, sizeof(small));
	// its reason: the master's words, left by the query that reported it
	assert_non_null(strstr(ds_store_errmsg(nullptr), ": bad"));
	assert_int_equal(ds_store_task_query(s.get(), t2, -1, 1, &st), 0);
	assert_int_equal(st.state, DS_STORE_FAILED);
	assert_int_equal(st.err, -ENOSPC);
	assert_string_equal(ds_store_errmsg(nullptr), (m.addr + ": no room").c_str());
	// the C++ layer's error says the same
	assert_int_equal(ds_store_put(s.get(), "k", &v2, 1, nullptr, &t2), 0);
	auto r = Task::check(Task(s.get(), t2).wait());
	assert_false(r.ok());
	assert_int_equal(r.err().code, -ENOSPC);
	assert_string_equal(r.err().message.c_str(), ("failed: " + m.addr + ": no room").c_str());
	// a task nobody submitted
	assert_int_equal(ds_store_task_query(s.get(), 999999, 0, 1, &st), 0);
	assert_int_equal(st.state, DS_STORE_INVALID);
	assert_string_equal(ds_store_errmsg(nullptr), "no such task");
	// a master that is not there: TIMEOUT at the task's deadline
	auto d = detached(dead_addr(), 1, 300);
	assert_int_equal(ds_store_del(d.get(), "k", &t1), 0);
	assert_int_equal(ds_store_task_query(d.get(), t1, -1, 1, &st), 0);
	assert_true(st.state == DS_STORE_TIMEOUT || st.state == DS_STORE_FAILED);
	assert_true(st.err == -ETIMEDOUT || st.err == -EAGAIN);
	// Get of an unimplemented RPC on the fake: -EOPNOTSUPP
	assert_int_equal(ds_store_sync(s.get(), "k", &t1), 0);
	assert_int_equal(ds_store_task_query(s.get(), t1, -1, 1, &st), 0);
	assert_int_equal(st.state, DS_STORE_FAILED);
	assert_int_equal(st.err, -EOPNOTSUPP);
}

// ds_store_put_opts grows as the kernel's structs do (copy_struct_from_user).
// Batches are refused whole, before anything is sent, for any bad item.
void test_batch_args(void **)
{
	auto s = detached();
	uint64_t task = 0;
	char b[8] = {};
	iovec v{b, sizeof(b)}, empty{b, 0};
	std::vector<ds_store_batch_item> items(3);
	const char *keys[] = { "a", "b", "c" };
	for (size_t i = 0; i < items.size(); i++) {
		items[i].key = keys[i];
		items[i].iov = &v;
		items[i].iovcnt = 1;
	}

	assert_int_equal(ds_store_batch_put(nullptr, items.data(), 3, nullptr, nullptr, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(nullptr), "no store handle");
	assert_int_equal(ds_store_batch_get(s.get(), items.data(), 0, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "no items"));
	assert_int_equal(ds_store_batch_exist(s.get(), nullptr, 3), -EINVAL);
	std::vector<ds_store_batch_item> many(DS_STORE_BATCH_MAX + 1, items[0]);
	assert_int_equal(ds_store_batch_del(s.get(), many.data(), many.size()), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "the limit is 4096"));
	// one bad key, the others good: the whole batch refused, and says which
	items[2].key = "";
	assert_int_equal(ds_store_batch_put(s.get(), items.data(), 3, nullptr, nullptr, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "item 2"));
	assert_int_equal(ds_store_batch_exist(s.get(), items.data(), 3), -EINVAL);
	assert_int_equal(ds_store_batch_del(s.get(), items.data(), 3), -EINVAL);
	items[2].key = nullptr;
	assert_int_equal(ds_store_batch_get(s.get(), items.data(), 3, &task), -EINVAL);
	items[2].key = keys[2];
	// buffers: none, or an empty object to put
	items[1].iov = nullptr;
	assert_int_equal(ds_store_batch_get(s.get(), items.data(), 3, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "item 1"));
	items[1].iov = &empty;
	assert_int_equal(ds_store_batch_put(s.get(), items.data(), 3, nullptr, nullptr, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "'b'"));
	items[1].iov = &v;
	// the config and opts as a single put checks them
	ds_store_replicate_config none{0, 0, DS_STORE_FLUSH_NONE, 0};
	assert_int_equal(ds_store_batch_put(s.get(), items.data(), 3, &none, nullptr, &task), -EINVAL);
	ds_store_put_opts o{};
	o.size = sizeof(o);
	o.flags = 0x80;
	assert_int_equal(ds_store_batch_put(s.get(), items.data(), 3, nullptr, &o, &task), -EINVAL);
	assert_int_equal(ds_store_batch_put(s.get(), items.data(), 3, nullptr, nullptr, nullptr), -EINVAL);
	// nothing was submitted
	assert_int_equal(s->client.tasks().size(), 0);
}

void test_put_opts(void **)
{
	auto s = detached();
	uint64_t task = 0;
	char b[8] = {};
	iovec v{b, sizeof(b)};
	ds_store_task_status st{};
	ds_store_put_opts o{};
	o.size = sizeof(o);

	assert_int_equal(ds_store_put_ex(nullptr, "k", &v, 1, nullptr, &o, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(nullptr), "no store handle");
	// the first version's size and no more
	o.size = DS_STORE_PUT_OPTS_SIZE_VER0 - 1;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "opts->size"));
	o.size = 0;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), -EINVAL);
	o.size = sizeof(o);
	o.flags = 0x2;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "flags"));
	o.flags = DS_STORE_PUT_SOFT_PIN;
	o.reserved[3] = 1;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "reserved"));
	o.reserved[3] = 0;
	o.ttl_ms = DS_STORE_TTL_MAX_MS + 1;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "ten years"));
	// the put's own checks still come
	o.ttl_ms = DS_STORE_TTL_MAX_MS;
	assert_int_equal(ds_store_put_ex(s.get(), "", &v, 1, nullptr, &o, &task), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "empty key");
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, nullptr), -EINVAL);

	// a newer caller's larger struct: its unknown tail must be 0
	struct {
		ds_store_put_opts o;
		uint64_t newer[2];
	} big{};
	big.o.size = sizeof(big);
	big.o.ttl_ms = 1000;
	big.newer[1] = 1;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &big.o, &task), -E2BIG);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "does not know"));
	big.newer[1] = 0;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &big.o, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	// an older caller's smaller one: what lies past its size is not read
	big.o.size = DS_STORE_PUT_OPTS_SIZE_VER0;
	big.o.reserved[0] = 7;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &big.o, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	// none at all: a plain put
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, nullptr, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	assert_int_equal(st.kind, DS_STORE_TASK_PUT);

	// the same checks, as the library reads them
	PutAttrs at;
	std::string why;
	o = {};
	o.size = sizeof(o);
	o.flags = DS_STORE_PUT_SOFT_PIN;
	o.ttl_ms = 5;
	assert_int_equal(read_put_opts(&o, &at, &why), 0);
	assert_true(at.soft_pin);
	assert_int_equal(at.ttl_ms, 5);
	assert_true(at.any());
	assert_int_equal(read_put_opts(nullptr, &at, &why), 0);
	assert_false(at.any());

	// the C++ layer's config makes the same struct
	ReplicateConfig rc;
	assert_false(rc.has_attrs());
	rc.soft_pin = true;
	rc.ttl_ms = 1500;
	ds_store_put_opts co = rc.opts();
	assert_int_equal(co.size, sizeof(co));
	assert_int_equal(co.flags, DS_STORE_PUT_SOFT_PIN);
	assert_int_equal(co.ttl_ms, 1500);
	assert_int_equal(read_put_opts(&co, &at, &why), 0);
}

void test_set_attr_args(void **)
{
	auto s = detached();
	ds_store_put_opts o{};
	o.size = sizeof(o);
	std::string big(DS_STORE_KEY_MAX + 1, 'k');

	assert_int_equal(ds_store_set_attr(nullptr, "k", DS_STORE_ATTR_TTL, &o), -EINVAL);
	assert_string_equal(ds_store_errmsg(nullptr), "no store handle");
	assert_int_equal(ds_store_set_attr(s.get(), nullptr, DS_STORE_ATTR_TTL, &o), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "no key");
	assert_int_equal(ds_store_set_attr(s.get(), "", DS_STORE_ATTR_TTL, &o), -EINVAL);
	assert_int_equal(ds_store_set_attr(s.get(), big.c_str(), DS_STORE_ATTR_TTL, &o), -EINVAL);
	assert_int_equal(ds_store_set_attr(s.get(), "k", 0, &o), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "empty mask"));
	assert_int_equal(ds_store_set_attr(s.get(), "k", 0x4, &o), -EINVAL);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "unknown mask"));
	assert_int_equal(ds_store_set_attr(s.get(), "k", DS_STORE_ATTR_SOFT_PIN, nullptr), -EINVAL);
	assert_string_equal(ds_store_errmsg(s.get()), "no opts");
	o.ttl_ms = DS_STORE_TTL_MAX_MS + 1;
	assert_int_equal(ds_store_set_attr(s.get(), "k", DS_STORE_ATTR_TTL, &o), -EINVAL);
	o.ttl_ms = 0;
	o.size = 8;
	assert_int_equal(ds_store_set_attr(s.get(), "k", DS_STORE_ATTR_TTL, &o), -EINVAL);
	o.size = sizeof(o);
	o.flags = 0x80;
	assert_int_equal(ds_store_set_attr(s.get(), "k", DS_STORE_ATTR_SOFT_PIN, &o), -EINVAL);
}

// A master of before soft pins and TTLs drops them: such a put is aborted
// and fails with -EOPNOTSUPP; one that keeps them gets the put on.
void test_put_attrs_master(void **)
{
	Server old;
	old.svc.put_ok = true;
	auto s = detached(old.addr, 1, 5000);
	char b[8] = {};
	iovec v{b, sizeof(b)};
	uint64_t task = 0;
	ds_store_task_status st{};
	ds_store_put_opts o{};
	o.size = sizeof(o);
	o.flags = DS_STORE_PUT_SOFT_PIN;
	o.ttl_ms = 90000;

	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	assert_int_equal(st.state, DS_STORE_FAILED);
	assert_int_equal(st.err, -EOPNOTSUPP);
	assert_non_null(strstr(ds_store_errmsg(nullptr), "no soft pin or TTL"));
	assert_int_equal(old.svc.aborts.load(), 1);
	{
		std::lock_guard<std::mutex> g(old.svc.mu);
		assert_true(old.svc.last_start.config().soft_pin());
		assert_int_equal(old.svc.last_start.config().ttl_ms(), 90000);
		assert_int_equal(old.svc.last_start.config().dram_replicas(), 1);
	}
	// only the TTL asked: the same
	o.flags = 0;
	assert_int_equal(ds_store_put_ex(s.get(), "k", &v, 1, nullptr, &o, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	assert_int_equal(st.err, -EOPNOTSUPP);
	// nothing asked: the old master does, as before (here: no data path)
	assert_int_equal(ds_store_put(s.get(), "k", &v, 1, nullptr, &task), 0);
	assert_int_equal(ds_store_task_query(s.get(), task, -1, 1, &st), 0);
	assert_int_equal(st.state, DS_STORE_FAILED);
	assert_int_equal(st.err, -ENODEV);
	{
		std::lock_guard<std::mutex> g(old.svc.mu);
		assert_false(old.svc.last_start.config().soft_pin());
		assert_int_equal(old.svc.last_start.config().ttl_ms(), 0);
	}

	// a master that keeps them: past the check (to the missing data path)
	Server now;
	now.svc.put_ok = true;
	now.svc.attrs = true;
	auto n = detached(now.addr, 1, 5000);
	o.flags = DS_STORE_PUT_SOFT_PIN;
	assert_int_equal(ds_store_put_ex(n.get(), "k", &v, 1, nullptr, &o, &task), 0);
	assert_int_equal(ds_store_task_query(n.get(), task, -1, 1, &st), 0);
	assert_int_equal(st.err, -ENODEV);
	std::lock_guard<std::mutex> g(now.svc.mu);
	assert_true(now.svc.last_start.config().soft_pin());
}

void test_set_attr_master(void **)
{
	ds_store_put_opts o{};
	o.size = sizeof(o);
	o.flags = DS_STORE_PUT_SOFT_PIN;
	o.ttl_ms = 60000;

	// an older master: UNIMPLEMENTED, said as such
	Server old;
	auto s = detached(old.addr, 1, 5000);
	assert_int_equal(ds_store_set_attr(s.get(), "k", DS_STORE_ATTR_SOFT_PIN, &o), -EOPNOTSUPP);
	assert_non_null(strstr(ds_store_errmsg(s.get()), "older dsmaster"));

	Server m;
	m.svc.set_attr = true;
	auto c = detached(m.addr, 1, 5000);
	assert_int_equal(ds_store_set_attr(c.get(), "k", DS_STORE_ATTR_SOFT_PIN, &o), 0);
	{
		std::lock_guard<std::mutex> g(m.svc.mu);
		assert_string_equal(m.svc.last_set.key().c_str(), "k");
		assert_int_equal(m.svc.last_set.mask(), pb::SET_ATTR_SOFT_PIN);
		assert_true(m.svc.last_set.soft_pin());
	}
	o.flags = 0;
	assert_int_equal(ds_store_set_attr(c.get(), "k", DS_STORE_ATTR_SOFT_PIN | DS_STORE_ATTR_TTL,
					   &o), 0);
	{
		std::lock_guard<std::mutex> g(m.svc.mu);
		assert_int_equal(m.svc.last_set.mask(), pb::SET_ATTR_SOFT_PIN | pb::SET_ATTR_TTL);
		assert_false(m.svc.last_set.soft_pin());
		assert_int_equal(m.svc.last_set.ttl_ms(), 60000);
	}
	// the master's refusals, mapped by the status table
	assert_int_equal(ds_store_set_attr(c.get(), "gone", DS_STORE_ATTR_TTL, &o), -ENOENT);
	assert_non_null(strstr(ds_store_errmsg(c.get()), "no object 'gone'"));
	assert_int_equal(ds_store_set_attr(c.get(), "theirs", DS_STORE_ATTR_TTL, &o), -EPERM);
	assert_non_null(strstr(ds_store_errmsg(c.get()), "belongs to alice"));
}

// stat and list carry the attributes and the access time.
void test_object_attrs(void **)
{
	Server m;
	auto s = detached(m.addr, 1, 5000);
	ds_store_object_info info{};
	assert_int_equal(ds_store_stat(s.get(), "pinned", &info), 0);
	assert_string_equal(info.key, "pinned");
	assert_int_equal(info.flags, DS_STORE_OBJ_SOFT_PIN);
	assert_int_equal(info.ctime_ns, 1'000'000'000);
	assert_int_equal(info.expires_ns, 61'000'000'000);
	assert_int_equal(info.atime_ns, 2'000'000'000);
	assert_true(is_soft_pinned(info));
	assert_int_equal(info.reserved[0], 0);
	assert_int_equal(info.reserved[1], 0);
	ds_store_object_list *l = nullptr;
	assert_int_equal(ds_store_list(s.get(), "pinned", nullptr, 0, &l), 0);
	assert_int_equal(l->count, 1);
	assert_int_equal(l->objects[0].expires_ns, 61'000'000'000);
	ds_store_list_free(l);
}

}  // namespace

int main(void)
{
	// the fake masters are plaintext on loopback: so are the C calls
	setenv("DSMEM_STORE_INSECURE", "1", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_mapping),
		cmocka_unit_test(test_not_leader),
		cmocka_unit_test(test_local_deadline),
		cmocka_unit_test(test_answer_deadline_skew),
		cmocka_unit_test(test_nul_keys),
		cmocka_unit_test(test_key_checks),
		cmocka_unit_test(test_open_args),
		cmocka_unit_test(test_null_handle),
		cmocka_unit_test(test_put_args),
		cmocka_unit_test(test_health_args),
		cmocka_unit_test(test_other_args),
		cmocka_unit_test(test_unknown_task),
		cmocka_unit_test(test_task_states),
		cmocka_unit_test(test_task_timeout),
		cmocka_unit_test(test_stop_cancels_waiting),
		cmocka_unit_test(test_many_workers),
		cmocka_unit_test(test_leader_following),
		cmocka_unit_test(test_no_master),
		cmocka_unit_test(test_task_errors),
		cmocka_unit_test(test_batch_args),
		cmocka_unit_test(test_put_opts),
		cmocka_unit_test(test_set_attr_args),
		cmocka_unit_test(test_put_attrs_master),
		cmocka_unit_test(test_set_attr_master),
		cmocka_unit_test(test_object_attrs),
	};
	return cmocka_run_group_tests_name("dsuser_store_client", tests, nullptr, nullptr);
}
