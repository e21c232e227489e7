// SPDX-License-Identifier: BSD-2-Clause
// The store client's errors and checks: gRPC statuses as errnos, keys,
// a master's deadlines on our clock (see client.hpp).
#include "client.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>

namespace dsmem::store {

// The one table of gRPC statuses as errnos (store-brief.md's, plus the
// FAILED_PRECONDITION refinements).  Rows with a message substring are
// tried first, in order; then the row with the code alone.
namespace {
struct StatusRow {
	grpc::StatusCode code;
	const char *contains;	// nullptr: any message
	int err;
};
constexpr StatusRow kStatusTable[] = {
	// a master that does not lead: retried elsewhere until the deadline
	{grpc::StatusCode::FAILED_PRECONDITION, "not the leader", -EAGAIN},
	// every replica of the version is gone and none is in the slow tier
	{grpc::StatusCode::FAILED_PRECONDITION, "no readable replica", -ENODATA},
	// a state the call cannot be served in yet (draining, ...)
	{grpc::StatusCode::FAILED_PRECONDITION, nullptr, -EBUSY},
	{grpc::StatusCode::OK, nullptr, 0},
	{grpc::StatusCode::INVALID_ARGUMENT, nullptr, -EINVAL},
	{grpc::StatusCode::NOT_FOUND, nullptr, -ENOENT},
	// an identity over its quota (pending puts, Watch streams)
	{grpc::StatusCode::RESOURCE_EXHAUSTED, "; its quota is ", -EDQUOT},
	{grpc::StatusCode::RESOURCE_EXHAUSTED, nullptr, -ENOSPC},
	{grpc::StatusCode::ABORTED, nullptr, -ESTALE},
	{grpc::StatusCode::OUT_OF_RANGE, nullptr, -ERANGE},
	{grpc::StatusCode::DEADLINE_EXCEEDED, nullptr, -ETIMEDOUT},
	{grpc::StatusCode::UNAVAILABLE, nullptr, -EAGAIN},
	{grpc::StatusCode::PERMISSION_DENIED, nullptr, -EPERM},
	{grpc::StatusCode::UNAUTHENTICATED, nullptr, -EACCES},
	{grpc::StatusCode::ALREADY_EXISTS, nullptr, -EEXIST},
	{grpc::StatusCode::CANCELLED, nullptr, -ECANCELED},
	{grpc::StatusCode::UNIMPLEMENTED, nullptr, -EOPNOTSUPP},
};
}  // namespace

int status_to_errno(const grpc::Status &s)
{
	for (const StatusRow &r : kStatusTable) {
		if (r.code != s.error_code())
			continue;
		if (!r.contains || s.error_message().find(r.contains) != std::string::npos)
			return r.err;
	}
	return -EIO;	// UNKNOWN, INTERNAL, DATA_LOSS
}

bool not_leader(const grpc::Status &s, std::string *leader)
{
	static const std::string marker = "leader is ";
	if (s.error_code() != grpc::StatusCode::FAILED_PRECONDITION)
		return false;
	const std::string &msg = s.error_message();
	if (msg.find("not the leader") == std::string::npos)
		return false;
	if (leader) {
		leader->clear();
		size_t at = msg.find(marker);
		if (at != std::string::npos) {
			std::string a = msg.substr(at + marker.size());
			while (!a.empty() && (a.back() == ' ' || a.back() == '.' || a.back() == '\n'))
				a.pop_back();
			if (a != "unknown" && a != "none" && a.find(':') != std::string::npos)
				*leader = a;
		}
	}
	return true;
}

int check_key(const char *key, std::string *why)
{
	if (!key) {
		*why = "no key";
		return -EINVAL;
	}
	size_t n = strnlen(key, DS_STORE_KEY_MAX + 1);
	if (n == 0) {
		*why = "empty key";
		return -EINVAL;
	}
	if (n > DS_STORE_KEY_MAX) {
		*why = "key longer than " + std::to_string(DS_STORE_KEY_MAX) + " bytes";
		return -EINVAL;
	}
	return 0;
}

pb::ReplicateConfig to_pb(const ds_store_replicate_config &c)
{
	pb::ReplicateConfig p;
	p.set_dram_replicas(c.dram_replicas);
	p.set_nvmeof_replicas(c.nvmeof_replicas);
	p.set_flush(static_cast<pb::FlushMode>(c.flush));
	p.set_prefer_local(c.prefer_local != 0);
	return p;
}

int64_t realtime_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Clock::time_point local_deadline_after(Clock::time_point sent, int64_t left_ns,
				       unsigned margin_pct)
{
	if (left_ns <= 0)
		return sent;
	left_ns -= left_ns / 100 * static_cast<int64_t>(margin_pct);
	return sent + std::chrono::nanoseconds(left_ns);
}

Clock::time_point answer_deadline(Clock::time_point sent, bool has_left, int64_t left_ns,
				  int64_t until_ns, unsigned margin_pct)
{
	if (has_left)
		return local_deadline_after(sent, left_ns, margin_pct);
	return local_deadline(sent, realtime_ns(), until_ns, margin_pct);
}

Clock::time_point local_deadline(Clock::time_point sent, int64_t realtime_at_response,
				 int64_t until_ns, unsigned margin_pct)
{
	if (until_ns <= realtime_at_response)
		return sent;
	int64_t span = until_ns - realtime_at_response;
	span -= span / 100 * static_cast<int64_t>(margin_pct);
	return sent + std::chrono::nanoseconds(span);
}

}  // namespace dsmem::store
