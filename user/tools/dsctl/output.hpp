// SPDX-License-Identifier: BSD-2-Clause
// dsctl's single output path: every command hands records to an output,
// which prints them as JSON or as iproute2-style text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace dsctl {

using record = nlohmann::ordered_json;

class output {
public:
	enum class mode { text, json, pretty_json };

	output(mode m, FILE *out) : mode_(m), out_(out) {}

	// Declare a listing, so JSON prints [] even when nothing is added.
	void begin_list() { listed_ = true; }
	// A list of records: printed as one JSON array, or one text block each.
	void add(const record &r);
	// One record on its own, printed and flushed at once (monitor).
	void stream(const record &r);
	// Print what a listing collected; only on success, so that a failed
	// command prints nothing on stdout (not even "[]").
	void finish();

	// A command whose own words choose the output after it (sim run's
	// -j, -p and output json|table|csv) sets the mode before it prints.
	void set_mode(mode m) { mode_ = m; }
	// Lines of a command's own text layout (sim run's table and CSV),
	// printed as they are, in text mode; JSON takes records instead.
	void text_block(const std::string &lines);

	// Text rendering of one record, exposed for tests.
	static std::string text(const record &r);

private:
	mode mode_;
	FILE *out_;
	record list_ = record::array();
	bool listed_ = false;
};

// A number of bytes as text: with the largest binary suffix (K, M, G, T)
// that divides it exactly, else plain ("256M", "4097", "0").
std::string size_string(uint64_t bytes);

// A time in ns as text: with the largest suffix (us, ms, s) that divides
// it exactly, else in ns ("100ms", "1500ns", "0ns").
std::string duration_string(uint64_t ns);

// CLOCK_REALTIME in ns as UTC, "2026-11-23T10:00:00.123456789Z".
std::string utc_string(int64_t ns);

// Bytes as hexdump -C prints them: per 16 bytes, the offset in eight hex
// digits, the bytes in hex (an extra space after the eighth) and the
// printable ones between bars; lines joined by newlines, no final offset
// line and no "*" for repeated lines.  "" for no bytes.
std::string hexdump(const uint8_t *data, size_t len);

// v to 0..4 decimals, as dsctl prints rates (1), times (2) and ratios (4).
double round_to(double v, int decimals);

// Text as printf(fmt, ...) would print it.
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// The text of an errno value given with either sign (-EIO or EIO).
std::string errno_text(int err);

}  // namespace dsctl
