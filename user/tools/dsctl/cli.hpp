// SPDX-License-Identifier: BSD-2-Clause
// dsctl command-line handling, in the manner of iproute2's rdma(8).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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
// or -1 with err set.
int parse_global(int argc, char **argv, global_opts &opts, std::string &err);

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

// Parse an unsigned decimal or 0x-hex number (never octal); false on
// garbage or overflow.
bool parse_u32(std::string_view s, unsigned int &out);

}  // namespace dsctl
