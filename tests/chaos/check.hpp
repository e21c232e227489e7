// SPDX-License-Identifier: BSD-2-Clause
// The checker of a chaos run's history (docs/chaos.md): whether each
// key's history is linearizable for a register with put, get, del and
// exist (the first violating window in plain words when it is not), the
// acknowledged puts the final reads prove lost, the gets whose bytes
// failed their checksum, and the gets whose bytes are whole but another
// key's or another version's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "history.hpp"

namespace dschaos {

struct options {
	// The store's versions are part of its specification: puts take
	// effect in the order of their versions, a get reads the version of
	// the value it returns.  false: a plain register (versions ignored).
	bool versions = true;
	// Look for pairs of operations that prove a violation before searching
	// (false: search only; the tests compare the two).
	bool witnesses = true;
	// Search steps per key, and bytes of memo, before giving up (the key
	// is then undecided).
	uint64_t max_steps = 10'000'000;
	uint64_t max_memo_bytes = 512ull << 20;
};

enum class verdict : uint8_t { linearizable, violation, undecided };

struct key_result {
	std::string key;
	size_t ops = 0;			// the key's operations
	verdict result = verdict::linearizable;
	int64_t from = 0, to = 0;	// the first violating window (ns)
	// The first violation, one sentence per line, then any others found
	// before the search (a read of a value nobody wrote, say).
	std::vector<std::string> why;
	uint64_t steps = 0;		// search steps
	double ms = 0;
};

struct report {
	size_t ops = 0, ok = 0, fail = 0, info = 0, open_at_end = 0;
	size_t keys = 0, faults = 0;
	std::map<std::string, size_t> faults_by_name;
	size_t violations = 0;		// keys not linearizable
	size_t undecided = 0;		// keys the search gave up on
	size_t lost_acked = 0;		// acknowledged puts the final reads lost
	size_t bad_checksum = 0;	// gets whose bytes failed their checksum
	// gets whose bytes (whole, their checksum good) are another key's, or
	// another version's than the one the get names
	size_t wrong_bytes = 0;
	size_t dup_versions = 0;	// puts of different keys given one version
	size_t unread_final = 0;	// keys whose final reads all failed
	std::map<std::string, size_t> errors;	// failed and unknown ops by error
	std::vector<key_result> keys_checked;
	std::vector<std::string> lost;	// a sentence per lost put
	std::vector<std::string> bad;	// a sentence per bad get
	std::vector<std::string> wrong;	// a sentence per get of wrong bytes
	std::vector<std::string> dups;	// a sentence per version given twice
	std::vector<std::string> unread;	// a sentence per unread key
	double ms = 0;			// the whole check
	int64_t t0 = 0;			// the history's first time

	bool passed() const
	{
		return !violations && !undecided && !lost_acked && !bad_checksum && !wrong_bytes &&
		       !dup_versions && !unread_final;
	}
};

// Throws history_error for a history it cannot judge: a value put twice
// to one key, an acknowledged put without a version (with versions).
report check(const history &h, const options &opt = {});

// The report in words, then the figures: "chaos.NAME N", or with bench
// "bench: chaos.NAME N UNIT".
void print_report(std::ostream &out, const report &r, bool verbose);
void print_figures(std::ostream &out, const report &r, bool bench);

}  // namespace dschaos
