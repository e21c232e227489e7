// SPDX-License-Identifier: BSD-2-Clause
#include "cli.hpp"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <getopt.h>

namespace dsctl {

bool matches(std::string_view arg, std::string_view word)
{
	return !arg.empty() && arg.size() <= word.size() &&
	       word.substr(0, arg.size()) == arg;
}

int parse_global(int argc, char **argv, global_opts &opts, std::string &err)
{
	static const struct option longopts[] = {
		{ "json", no_argument, nullptr, 'j' },
		{ "pretty", no_argument, nullptr, 'p' },
		{ "version", no_argument, nullptr, 'V' },
		{ "help", no_argument, nullptr, 'h' },
		{ nullptr, 0, nullptr, 0 },
	};
	int c;

	opterr = 0;
	optind = 1;
	// '+': stop at OBJECT, so that command words are never options;
	// _only: "-json" and "-pretty" work as in iproute2.
	while ((c = getopt_long_only(argc, argv, "+jpVh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'j': opts.json = true; break;
		case 'p': opts.pretty = true; break;
		case 'V': opts.show_version = true; break;
		case 'h': opts.help = true; break;
		default:
			if (optopt)
				err = std::string("unknown option \"-") + static_cast<char>(optopt) + "\"";
			else
				err = std::string("unknown option \"") + argv[optind - 1] + "\"";
			return -1;
		}
	}
	// as in iproute2, -p without -j is accepted and changes nothing
	return optind;
}

bool parse_u32(std::string_view s, unsigned int &out)
{
	if (s.empty() || s.size() > 32 || s[0] == '-' || s[0] == '+')
		return false;
	// decimal, or hex with 0x; never octal, so "010" is ten
	bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	std::string buf(hex ? s.substr(2) : s);
	char *end = nullptr;
	errno = 0;
	if (buf.empty() || !isxdigit(static_cast<unsigned char>(buf[0])))
		return false;
	unsigned long v = strtoul(buf.c_str(), &end, hex ? 16 : 10);
	if (errno || *end || v > UINT_MAX)
		return false;
	out = static_cast<unsigned int>(v);
	return true;
}

}  // namespace dsctl
