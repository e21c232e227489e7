// SPDX-License-Identifier: BSD-2-Clause
#include "output.hpp"

#include <cctype>

namespace dsctl {

namespace {

std::string scalar(const record &v)
{
	if (v.is_string())
		return v.get<std::string>();
	if (v.is_boolean())
		return v.get<bool>() ? "yes" : "no";
	if (v.is_null())
		return "-";
	return v.dump();
}

// Text conventions, from rdma(8): "ifindex" and "ifname" open the line as
// "N: name:", "event" as "[EVENT]", nested lists go on indented lines.
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
		} else if (k == "ifindex" || k == "ifname") {
			line += scalar(v) + ": ";
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

void output::finish()
{
	if (listed_ && mode_ != mode::text)
		fprintf(out_, "%s\n", list_.dump(mode_ == mode::pretty_json ? 4 : -1).c_str());
	listed_ = false;
	list_ = record::array();
	fflush(out_);
}

}  // namespace dsctl
