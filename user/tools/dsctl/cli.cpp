// SPDX-License-Identifier: BSD-2-Clause
#include "cli.hpp"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/dsmem_netlink.h>

#include "output.hpp"

namespace dsctl {

bool matches(std::string_view arg, std::string_view word)
{
	return !arg.empty() && arg.size() <= word.size() &&
	       word.substr(0, arg.size()) == arg;
}

int parse_global(int argc, char **argv, global_opts &opts, std::string &err, bool words_follow)
{
	static const struct option longopts[] = {
		{ "json", no_argument, nullptr, 'j' },
		{ "pretty", no_argument, nullptr, 'p' },
		{ "version", no_argument, nullptr, 'V' },
		{ "help", no_argument, nullptr, 'h' },
		{ nullptr, 0, nullptr, 0 },
	};
	int c, word = 1;		// the word getopt reads
	global_opts before = opts;	// as that word found them

	opterr = 0;
	optind = 0;	// a full reset, whatever a parse before left behind
	// '+': stop at OBJECT, so that command words are never options;
	// _only: "-json" and "-pretty" work as in iproute2.
	for (;;) {
		if (optind && optind != word) {	// 0: the reset, at word 1
			word = optind;
			before = opts;
		}
		c = getopt_long_only(argc, argv, "+jpVh", longopts, nullptr);
		if (c == -1)
			break;
		if (c == '?' && words_follow) {
			// a keyword: none of the options in its word count
			opts = before;
			return word;
		}
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
	uint64_t v;
	if (!parse_u64(s, v) || v > UINT_MAX)
		return false;
	out = static_cast<unsigned int>(v);
	return true;
}

bool parse_u64(std::string_view s, uint64_t &out)
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
	unsigned long long v = strtoull(buf.c_str(), &end, hex ? 16 : 10);
	if (errno || *end)
		return false;
	out = v;
	return true;
}

bool parse_size(std::string_view s, uint64_t &out)
{
	unsigned int shift = 0;

	if (!s.empty()) {
		switch (s.back()) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: break;
		}
	}
	if (shift)
		s.remove_suffix(1);
	uint64_t v;
	if (!parse_u64(s, v) || v > (UINT64_MAX >> shift))
		return false;
	out = v << shift;
	return true;
}

bool parse_addr(std::string_view s, uint64_t &out)
{
	if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	return parse_u64(s, out);
}

bool parse_perm(std::string_view s, uint8_t &out)
{
	if (s == "r")
		out = DSMEM_PERM_READ;
	else if (s == "rw")
		out = DSMEM_PERM_READ | DSMEM_PERM_WRITE;
	else
		return false;
	return true;
}

bool parse_translate(std::string_view s, int &out)
{
	if (matches(s, "segment"))
		out = DSMEM_TRANSLATE_SEGMENT;
	else if (matches(s, "pages"))
		out = DSMEM_TRANSLATE_PAGES;
	else
		return false;
	return true;
}

bool parse_hex_data(std::string_view s, std::vector<uint8_t> &out)
{
	std::vector<uint8_t> bytes;

	if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s.remove_prefix(2);
	for (size_t i = 0; i < s.size();) {
		if (isspace(static_cast<unsigned char>(s[i]))) {
			i++;
			continue;
		}
		if (i + 1 >= s.size() || !isxdigit(static_cast<unsigned char>(s[i])) ||
		    !isxdigit(static_cast<unsigned char>(s[i + 1])))
			return false;
		char pair[3] = { s[i], s[i + 1], '\0' };
		bytes.push_back(static_cast<uint8_t>(strtoul(pair, nullptr, 16)));
		i += 2;
	}
	if (bytes.empty())
		return false;
	out = std::move(bytes);
	return true;
}

bool keywords::parse(args &a, const std::vector<std::string_view> &words, std::string &err,
		     const std::vector<std::string_view> &flags)
{
	while (!a.empty())
		if (!take(a.next(), a, words, flags, err))
			return false;
	return true;
}

bool keywords::take(const std::string &w, args &a, const std::vector<std::string_view> &words,
		    const std::vector<std::string_view> &flags, std::string &err)
{
	std::string_view word;
	bool is_flag = false;

	for (std::string_view k : words)
		if (matches(w, k)) {
			word = k;
			break;
		}
	for (std::string_view f : flags)
		if (word.empty() && matches(w, f)) {
			word = f;
			is_flag = true;
		}
	if (word.empty()) {
		err = "unexpected \"" + w + "\"";
		return false;
	}
	if (has(word)) {
		err = std::string(word) + " is given twice";
		return false;
	}
	if (is_flag) {
		kv_.emplace_back(word, "");
		return true;
	}
	if (a.empty()) {
		err = std::string(word) + " needs a value";
		return false;
	}
	kv_.emplace_back(word, a.next());
	return true;
}

const std::string *keywords::get(std::string_view word) const
{
	for (const auto &[k, v] : kv_)
		if (k == word)
			return &v;
	return nullptr;
}

bool parse_duration(std::string_view s, uint64_t &out)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	uint64_t mult = 1;

	for (const auto &u : units) {
		std::string_view suf(u.suffix);
		if (s.size() > suf.size() && s.substr(s.size() - suf.size()) == suf) {
			s.remove_suffix(suf.size());
			mult = u.ns;
			break;
		}
	}
	uint64_t v;
	if (!parse_u64(s, v) || v > UINT64_MAX / mult)
		return false;
	out = v * mult;
	return true;
}

bool parse_handle(std::string_view s, uint32_t &out)
{
	unsigned int v;
	if (!parse_u32(s, v))
		return false;
	out = v;
	return true;
}

bool parse_token_type(std::string_view s, int &out)
{
	int type = ds_token_type_lookup(std::string(s).c_str());
	if (type < 0)
		return false;
	out = type;
	return true;
}

bool parse_tier(std::string_view s, uint8_t &out)
{
	if (s.size() != 2 || (s[0] != 'l' && s[0] != 'L') || s[1] < '1' || s[1] > '3')
		return false;
	out = static_cast<uint8_t>(DS_TIER_L1 + (s[1] - '1'));
	return true;
}

bool parse_cache_value(unsigned int index, std::string_view s, uint64_t &out,
		       std::string &err)
{
	ds_cache_param_desc d;
	uint64_t v;

	if (ds_cache_param_describe(index, &d)) {
		err = "unknown parameter";
		return false;
	}
	std::string unit(d.unit);
	if (index == DS_CACHE_P_MODE) {
		if (matches(s, "fixed"))
			v = DS_CACHE_FIXED;
		else if (matches(s, "adaptive"))
			v = DS_CACHE_ADAPTIVE;
		else {
			err = std::string(d.name) + " needs \"fixed\" or \"adaptive\"";
			return false;
		}
	} else if (unit == "ns") {
		if (!parse_duration(s, v) || v < d.min || v > d.max) {
			err = std::string(d.name) + " needs a time from " + duration_string(d.min) +
			      " to " + duration_string(d.max) + " (suffixes ns, us, ms, s)";
			return false;
		}
	} else if (!parse_u64(s, v) || v < d.min || v > d.max) {
		err = std::string(d.name) + " needs a number " +
		      (unit.empty() ? "" : "of " + unit + " ") + "from " +
		      std::to_string(d.min) + " to " + std::to_string(d.max);
		return false;
	}
	out = v;
	return true;
}

bool parse_cache_words(args &a, const std::vector<std::string_view> &words,
		       const std::vector<std::string_view> &flags, keywords &kw,
		       cache_settings &cs, std::string &err)
{
	while (!a.empty()) {
		std::string w = a.next();
		int i = ds_cache_param_lookup(w.c_str());

		if (i < 0) {
			// a keyword or flag of the command, else no parameter
			bool known = false;
			for (std::string_view k : words)
				known |= matches(w, k);
			for (std::string_view f : flags)
				known |= matches(w, f);
			if (!known) {
				err = "unknown parameter \"" + w + "\"";
				return false;
			}
			if (!kw.take(w, a, words, flags, err))
				return false;
			continue;
		}
		uint64_t bit = 1ULL << i;
		if (cs.mask & bit) {
			err = w + " is given twice";
			return false;
		}
		if (a.empty()) {
			err = w + " needs a value";
			return false;
		}
		if (!parse_cache_value(static_cast<unsigned int>(i), a.next(),
				       cs.params[i], err))
			return false;
		cs.mask |= bit;
	}
	return true;
}

// Every item, empty ones included: "lru," and "" are refused by whoever
// reads the items, not taken as "lru" or as nothing.
std::vector<std::string> split_list(const std::string &s, char sep)
{
	std::vector<std::string> out;
	size_t start = 0;

	for (size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + 1)
		out.push_back(s.substr(start, at - start));
	out.push_back(s.substr(start));
	return out;
}

std::string find_program(const std::string &name, const std::string &self_dir,
			 const char *path, const std::string &fallback_dir)
{
	std::vector<std::string> dirs = { self_dir };
	for (std::string_view rest = path ? path : ""; path;) {
		size_t colon = rest.find(':');
		// an empty entry is the current directory, as for execvp()
		std::string_view dir = rest.substr(0, colon);
		dirs.emplace_back(dir.empty() ? "." : dir);
		if (colon == std::string_view::npos)
			break;
		rest.remove_prefix(colon + 1);
	}
	dirs.push_back(fallback_dir);
	for (const std::string &dir : dirs) {
		if (dir.empty())
			continue;
		std::string file = dir + "/" + name;
		struct stat st;
		if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
		    access(file.c_str(), X_OK) == 0)
			return file;
	}
	return "";
}

}  // namespace dsctl
