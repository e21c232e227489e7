// SPDX-License-Identifier: BSD-2-Clause
// The history of a Jepsen-style run of the object store (issue 22): one
// JSON object per line, an invocation and a completion per operation of a
// client process, and the nemesis's faults.  docs/chaos.md is the format's
// reference; read_history() is its parser, and refuses a malformed line
// with its number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace dschaos {

// The return time of an operation that never returned (info, or still
// open when the history ends): it may take effect any time after its
// invocation, or never.
inline constexpr int64_t never = std::numeric_limits<int64_t>::max();

enum class fn : uint8_t { put, get, del, exist };
// ok: it happened, with the result recorded; fail: it certainly did not
// happen; info: unknown (a timeout, a crash): it may or may not have.
enum class outcome : uint8_t { ok, fail, info };

const char *fn_name(fn f);
const char *outcome_name(outcome o);

struct op {
	fn f = fn::get;
	outcome type = outcome::info;
	uint64_t process = 0;
	std::string key;
	int64_t call = 0;		// invocation time, ns (monotonic clock)
	int64_t ret = never;		// completion time, ns; never for info
	size_t line = 0;		// the invocation's line
	size_t done_line = 0;		// the completion's line; 0: none
	// put: the value written (its invocation); get: the value read
	uint64_t value = 0;
	// get, exist, del (ok): the key had a value (a del deleted it)
	bool found = false;
	// put (ok): the version the master gave it; get, exist (ok, found):
	// the version read
	bool has_version = false;
	int64_t version = -1;
	// get (ok, found): the bytes read matched their checksum
	bool checksum_ok = true;
	// get, exist: part of the final read phase (see lost puts)
	bool final = false;
	std::string error;		// fail, info: why (free text)
};

struct fault {
	std::string name;		// "kill-leader", "partition", ...
	std::string detail;
	int64_t start = 0;
	int64_t stop = never;		// never: instantaneous, or not stopped
	size_t line = 0;
};

struct history {
	std::vector<op> ops;		// by invocation time (then line)
	std::vector<fault> faults;	// by start
	int64_t t0 = 0;			// the first event's time
	size_t open_at_end = 0;		// invocations never completed (info)
};

// A line the format does not allow, or a history the checker cannot use
// (a value written twice to a key): "line N: what".  line 0: the history
// as a whole.
class history_error : public std::runtime_error {
public:
	history_error(size_t line, const std::string &what);
	size_t line() const { return line_; }

private:
	size_t line_;
};

history read_history(std::istream &in);
history parse_history(const std::string &text);

}  // namespace dschaos
