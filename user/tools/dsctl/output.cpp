// SPDX-License-Identifier: BSD-2-Clause
#include "output.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace dsctl {

std::string size_string(uint64_t bytes)
{
	static const char units[] = "KMGT";

	if (!bytes)
		return "0";
	int u = -1;
	while (u < 3 && !(bytes & 1023)) {
		bytes >>= 10;
		u++;
	}
	return std::to_string(bytes) + (u < 0 ? "" : std::string(1, units[u]));
}

std::string duration_string(uint64_t ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = { { "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 } };

	for (const auto &u : units)
		if (ns && ns % u.ns == 0)
			return std::to_string(ns / u.ns) + u.suffix;
	return std::to_string(ns) + "ns";
}

std::string utc_string(int64_t ns)
{
	time_t secs = static_cast<time_t>(ns / 1000000000);
	long frac = static_cast<long>(ns % 1000000000);
	if (frac < 0) {
		frac += 1000000000;
		secs--;
	}
	struct tm tm;
	char buf[64], out[96];
	if (!gmtime_r(&secs, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		return std::to_string(ns);
	snprintf(out, sizeof(out), "%s.%09ldZ", buf, frac);
	return out;
}

std::string hexdump(const uint8_t *data, size_t len)
{
	std::string out;
	char buf[32];

	for (size_t off = 0; off < len; off += 16) {
		std::string ascii;
		if (off)
			out += '\n';
		snprintf(buf, sizeof(buf), "%08zx  ", off);
		out += buf;
		for (size_t i = 0; i < 16; i++) {
			if (off + i < len) {
				uint8_t c = data[off + i];
				snprintf(buf, sizeof(buf), "%02x ", c);
				out += buf;
				ascii += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '.';
			} else {
				out += "   ";
			}
			if (i == 7)
				out += ' ';
		}
		out += " |" + ascii + "|";
	}
	return out;
}

namespace {

// Fields that are numbers of bytes: text prints them with a binary suffix.
bool is_size_field(const std::string &k)
{
	return k == "size" || k == "used" || k == "page_size" || k == "bytes" || k == "unit";
}

// Times in ns: the key says so by its suffix.
bool is_ns_field(const std::string &k)
{
	return k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0;
}

// Lists of sub-records whose lines open with a word of their own.
const char *list_tag(const std::string &k)
{
	if (k == "grants")
		return "grant";
	if (k == "remote_segs")
		return "remote_seg";
	if (k == "leases")
		return "lease";
	if (k == "migrations")
		return "mig";
	if (k == "objects")
		return "object";
	return nullptr;
}

// Sub-records that go on a line of their own, opened by their key.
bool own_line(const std::string &k)
{
	return k == "counters" || k == "trace" || k == "migration";
}

std::vector<uint8_t> unhex(const std::string &s)
{
	std::vector<uint8_t> bytes;
	for (size_t i = 0; i + 1 < s.size(); i += 2)
		bytes.push_back(static_cast<uint8_t>(strtoul(s.substr(i, 2).c_str(), nullptr, 16)));
	return bytes;
}

std::string scalar(const record &v)
{
	if (v.is_string()) {
		// a value of several words stays one: object "node 1 peer 2 qp"
		std::string str = v.get<std::string>();
		for (char c : str)
			if (isspace(static_cast<unsigned char>(c)))
				return "\"" + str + "\"";
		return str;
	}
	if (v.is_boolean())
		return v.get<bool>() ? "yes" : "no";
	if (v.is_null())
		return "-";
	return v.dump();
}

// A value in its unit: times as durations, others followed by the unit.
std::string with_unit(const record &v, const std::string &unit)
{
	if (unit == "ns" && v.is_number_unsigned())
		return duration_string(v.get<uint64_t>());
	return scalar(v) + (unit.empty() || unit == "ns" ? "" : " " + unit);
}

// A token-cache parameter: "param NAME VALUE [UNIT] [in_effect VALUE]".
std::string param_line(const record &p)
{
	std::string unit = p.contains("unit") && p["unit"].is_string() ?
		p["unit"].get<std::string>() : "";
	std::string line = "param";

	for (auto it = p.begin(); it != p.end(); ++it) {
		const std::string &k = it.key();
		if (k == "name")
			line += " " + scalar(it.value());
		else if (k == "value")
			line += " " + with_unit(it.value(), unit);
		else if (k != "unit")
			line += " " + k + " " + with_unit(it.value(), unit == "ns" ? unit : "");
	}
	return line;
}

// The names of a node's "devs", joined by commas, each with "@NUMA" where
// its NUMA node is known: what "node add ... dev" takes.
std::string dev_names(const record &devs)
{
	std::string joined;
	if (!devs.is_array())
		return joined;
	for (const auto &d : devs) {
		if (!d.is_object() || !d.contains("name"))
			continue;
		joined += (joined.empty() ? "" : ",") + scalar(d["name"]);
		if (d.contains("numa") && d["numa"].is_number_integer() &&
		    d["numa"].get<int64_t>() >= 0)
			joined += "@" + scalar(d["numa"]);
	}
	return joined;
}

// Text conventions, from rdma(8): "ifindex" and "ifname" open the line as
// "N: name:", "event" as "[EVENT]", a token's "type" as a bare word, a
// node's "dev" as the names of all its "devs" ("dev rxe0,rxe1"),
// nested lists go on indented lines; sizes take a binary suffix, times
// (keys ending in "_ns") a unit, "numa" -1 is "any", strings of several
// words are quoted, and "data" (bytes in hex) follows the line as a
// hexdump.  An object's "soft_pin" is the word "pinned" when true and
// its "expires_ns" (CLOCK_REALTIME) "expires" and the time in UTC when
// not 0; text leaves out both otherwise, JSON always has them.
void render(const record &r, std::string &line, int indent)
{
	std::string nested;

	for (auto it = r.begin(); it != r.end(); ++it) {
		const std::string &k = it.key();
		const record &v = it.value();

		if (k == "event") {
			std::string tag = scalar(v);
			for (auto &ch : tag)
				ch = ch == '_' ? ' ' : static_cast<char>(toupper(ch));
			line += "[" + tag + "] ";
		} else if (k == "dev" && r.contains("devs") && !dev_names(r["devs"]).empty()) {
			line += k + " " + dev_names(r["devs"]) + " ";
		} else if (k == "devs" && r.contains("dev") && v.is_array()) {
			// said by "dev"
		} else if (k == "ifindex" || k == "ifname") {
			line += scalar(v) + ": ";
		} else if (k == "type" && v.is_string()) {
			line += scalar(v) + " ";
		} else if (k == "data" && v.is_string()) {
			std::vector<uint8_t> bytes = unhex(v.get<std::string>());
			if (!bytes.empty())
				nested += "\n" + hexdump(bytes.data(), bytes.size());
		} else if (k == "soft_pin" && v.is_boolean()) {
			if (v.get<bool>())
				line += "pinned ";
		} else if (k == "expires_ns" && v.is_number_integer()) {
			if (v.get<int64_t>())
				line += "expires " + utc_string(v.get<int64_t>()) + " ";
		} else if (is_size_field(k) && v.is_number_unsigned()) {
			line += k + " " + size_string(v.get<uint64_t>()) + " ";
		} else if (is_ns_field(k) && (v.is_number_unsigned() || v.is_null())) {
			line += k.substr(0, k.size() - 3) + " " +
				(v.is_null() ? "-" : duration_string(v.get<uint64_t>())) + " ";
		} else if (k == "params" && v.is_array()) {
			for (const auto &e : v)
				nested += "\n" + std::string(indent + 4, ' ') + param_line(e);
		} else if (own_line(k) && v.is_object()) {
			std::string sub(indent + 4, ' ');
			sub += k + " ";
			render(v, sub, indent + 4);
			nested += "\n" + sub;
		} else if (k == "numa" && v.is_number_integer() && v.get<int64_t>() == -1) {
			line += k + " any ";
		} else if (list_tag(k) && v.is_array()) {
			// an empty one says nothing: most segments have no grant
			for (const auto &e : v) {
				std::string sub(indent + 4, ' ');
				sub += std::string(list_tag(k)) + " ";
				render(e, sub, indent + 4);
				nested += "\n" + sub;
			}
		} else if (v.is_array() && !v.empty() && v.front().is_object()) {
			for (const auto &e : v) {
				std::string sub(indent + 4, ' ');
				render(e, sub, indent + 4);
				nested += "\n" + sub;
			}
		} else if (v.is_object()) {
			render(v, line, indent);
		} else if (v.is_array()) {
			std::string joined;
			for (const auto &e : v)
				joined += (joined.empty() ? "" : ",") + scalar(e);
			line += k + " " + (joined.empty() ? "-" : joined) + " ";
		} else {
			line += k + " " + scalar(v) + " ";
		}
	}
	while (!line.empty() && line.back() == ' ')
		line.pop_back();
	line += nested;
}

}  // namespace

std::string output::text(const record &r)
{
	std::string line;
	render(r, line, 0);
	return line;
}

void output::add(const record &r)
{
	listed_ = true;
	if (mode_ == mode::text)
		fprintf(out_, "%s\n", text(r).c_str());
	else
		list_.push_back(r);
}

void output::stream(const record &r)
{
	if (mode_ == mode::text)
		fprintf(out_, "%s\n", text(r).c_str());
	else
		fprintf(out_, "%s\n", r.dump(mode_ == mode::pretty_json ? 4 : -1).c_str());
	fflush(out_);
}

void output::text_block(const std::string &lines)
{
	if (mode_ == mode::text)
		fputs(lines.c_str(), out_);
}

void output::finish()
{
	if (listed_ && mode_ != mode::text)
		fprintf(out_, "%s\n", list_.dump(mode_ == mode::pretty_json ? 4 : -1).c_str());
	listed_ = false;
	list_ = record::array();
	fflush(out_);
}

std::string strprintf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(nullptr, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return {};
	std::string s(static_cast<size_t>(n) + 1, '\0');
	va_start(ap, fmt);
	vsnprintf(s.data(), s.size(), fmt, ap);
	va_end(ap);
	s.resize(static_cast<size_t>(n));
	return s;
}

double round_to(double v, int decimals)
{
	// exact powers of ten, so a figure prints the same on every build
	static constexpr double scale[] = { 1.0, 10.0, 100.0, 1000.0, 10000.0 };
	const double k = scale[std::clamp(decimals, 0, 4)];

	return std::round(v * k) / k;
}

std::string errno_text(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

}  // namespace dsctl
