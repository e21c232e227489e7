// SPDX-License-Identifier: BSD-2-Clause
// dsctl command-line handling, in the manner of iproute2's rdma(8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dsmem/ds.h>

namespace dsctl {

// iproute2's rule: a word may be abbreviated to any non-empty prefix.
bool matches(std::string_view arg, std::string_view word);

struct global_opts {
	bool json = false;
	bool pretty = false;
	bool show_version = false;
	bool help = false;
};

// Parse the options before OBJECT; returns the index of OBJECT in argv,
// or -1 with err set.  With words_follow (a program whose keywords may be
// written --keyword, as dsmem-console's), the first word that is no
// option ends the options instead, and its index is returned.
int parse_global(int argc, char **argv, global_opts &opts, std::string &err,
		 bool words_follow = false);

// The words after OBJECT, consumed left to right.
class args {
public:
	args(std::vector<std::string> words) : w_(std::move(words)) {}
	bool empty() const { return i_ >= w_.size(); }
	const std::string &peek() const { return w_[i_]; }
	std::string next() { return w_[i_++]; }
	size_t left() const { return w_.size() - i_; }

private:
	std::vector<std::string> w_;
	size_t i_ = 0;
};

// iproute2's "KEYWORD VALUE" pairs, in any order: every word left in the
// args is one of the command's keywords (abbreviated as matches() allows;
// where a prefix fits several, the first in the order given wins)
// followed by its value, and each keyword comes at most once.
// Flag words (pin, reset) take no value: given, their value is "".
class keywords {
public:
	// Consumes every word of a; false with err set on an unknown word, a
	// keyword without a value or a keyword given twice.
	bool parse(args &a, const std::vector<std::string_view> &words, std::string &err,
		   const std::vector<std::string_view> &flags = {});
	// One word w, just taken from a: a keyword (whose value is taken
	// from a too) or a flag; false with err set as parse() does.
	bool take(const std::string &w, args &a, const std::vector<std::string_view> &words,
		  const std::vector<std::string_view> &flags, std::string &err);
	// The value of a keyword (its full name), or nullptr when not given.
	const std::string *get(std::string_view word) const;
	bool has(std::string_view word) const { return get(word) != nullptr; }

private:
	std::vector<std::pair<std::string, std::string>> kv_;
};

// Parse an unsigned decimal or 0x-hex number (never octal); false on
// garbage or overflow.
bool parse_u32(std::string_view s, unsigned int &out);
bool parse_u64(std::string_view s, uint64_t &out);

// A number of bytes: a number as parse_u64 takes it, optionally followed
// by one binary suffix K, M, G or T (either case: 1K is 1024).  False on
// garbage, a suffix on its own and overflow.
bool parse_size(std::string_view s, uint64_t &out);

// An address: hexadecimal after 0x (or 0X), at most 64 bits.  Decimal is
// refused, so that an address copied without its 0x is not misread.
bool parse_addr(std::string_view s, uint64_t &out);

// A grant permission: "r" (DSMEM_PERM_READ) or "rw" (read and write).
bool parse_perm(std::string_view s, uint8_t &out);

// A translation scheme: "segment" (0) or "pages" (1), abbreviated as
// matches() allows.
bool parse_translate(std::string_view s, int &out);

// Bytes as hexadecimal digits, two per byte, after an optional 0x;
// whitespace between bytes is ignored.  False on an odd digit count,
// anything that is not a hex digit, or no bytes at all.
bool parse_hex_data(std::string_view s, std::vector<uint8_t> &out);

// A time in ns: a number with an optional suffix ns, us, ms or s (none:
// ns).  False on garbage, a suffix on its own and overflow.
bool parse_duration(std::string_view s, uint64_t &out);

// A token handle: as parse_u32 takes it (0xc0010002, or decimal).
bool parse_handle(std::string_view s, uint32_t &out);

// A token type by the module's name for it: pd, mr, cq, qp, db or wqe.
bool parse_token_type(std::string_view s, int &out);

// A cache tier: l1, l2 or l3 (enum ds_tier).
bool parse_tier(std::string_view s, uint8_t &out);

// A value of token-cache parameter index, checked against the module's
// table: times as parse_duration takes them, mode "fixed" or "adaptive"
// (abbreviated as matches() allows), the rest plain numbers.  False with
// err naming the parameter and what it takes.
bool parse_cache_value(unsigned int index, std::string_view s, uint64_t &out,
		       std::string &err);

// Token-cache parameters by name (exact, as the module's table has them).
struct cache_settings {
	uint64_t params[DS_CACHE_PARAMS_MAX] = {};
	uint64_t mask = 0;	// bit i: params[i] is set
};

// The words of "cache set" and "cache bench": PARAM VALUE pairs into cs,
// and the keywords and flags of the command into kw, in any order, each
// at most once.  False with err set naming the offending word; an
// unknown word is "unknown parameter".
bool parse_cache_words(args &a, const std::vector<std::string_view> &words,
		       const std::vector<std::string_view> &flags, keywords &kw,
		       cache_settings &cs, std::string &err);

// Every item of a comma (or sep) separated list, empty ones included.
std::vector<std::string> split_list(const std::string &s, char sep);

// Where program name is: in self_dir first (the directory dsctl runs
// from, so that a build tree runs its own programs), then in each
// directory of path (PATH's syntax, nullptr for none), then in
// fallback_dir.  The first executable file of that name; "" when none.
std::string find_program(const std::string &name, const std::string &self_dir,
			 const char *path, const std::string &fallback_dir);

}  // namespace dsctl
