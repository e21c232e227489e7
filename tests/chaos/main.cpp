// SPDX-License-Identifier: BSD-2-Clause
// dschaos-check: judge a chaos run's history (docs/chaos.md).
//
//   dschaos-check [--bench] [--no-versions] [--no-witnesses] [--max-steps N]
//                 [-v | -q] HISTORY.jsonl
//
// Exit status: 0 when every key is linearizable and nothing acknowledged
// was lost or read corrupt, 1 otherwise, 2 for a malformed history or a
// usage error.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "check.hpp"

namespace {

int usage()
{
	std::cerr << "usage: dschaos-check [--bench] [--no-versions] [--no-witnesses] [--max-steps N] [-v | -q]\n"
		     "                     HISTORY.jsonl\n"
		     "  HISTORY.jsonl  the run's history, one JSON event per line ('-': stdin)\n"
		     "  --bench        figures as \"bench: chaos.NAME VALUE UNIT\"\n"
		     "  --no-versions  a plain register: ignore the versions puts and gets report\n"
		     "  --no-witnesses search every key, even one a pair of operations proves wrong\n"
		     "  --max-steps N  give up on a key after N search steps (it is then undecided)\n"
		     "  -v             also name the keys that are linearizable\n"
		     "  -q             the figures only\n";
	return 2;
}

}  // namespace

int main(int argc, char **argv)
{
	dschaos::options opt;
	bool bench = false, verbose = false, quiet = false;
	const char *path = nullptr;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--bench") {
			bench = true;
		} else if (a == "--no-versions") {
			opt.versions = false;
		} else if (a == "--no-witnesses") {
			opt.witnesses = false;
		} else if (a == "--max-steps" && i + 1 < argc) {
			char *end;
			errno = 0;
			opt.max_steps = std::strtoull(argv[++i], &end, 10);
			if (errno || *end || !opt.max_steps)
				return usage();
		} else if (a == "-v") {
			verbose = true;
		} else if (a == "-q") {
			quiet = true;
		} else if (a == "-h" || a == "--help") {
			usage();
			return 0;
		} else if (!path && (a == "-" || a[0] != '-')) {
			path = argv[i];
		} else {
			return usage();
		}
	}
	if (!path)
		return usage();

	dschaos::report r;
	try {
		dschaos::history h;
		if (std::strcmp(path, "-") == 0) {
			h = dschaos::read_history(std::cin);
		} else {
			std::ifstream in(path);
			if (!in) {
				std::cerr << "dschaos-check: " << path << ": " << std::strerror(errno) << '\n';
				return 2;
			}
			h = dschaos::read_history(in);
			if (in.bad()) {
				std::cerr << "dschaos-check: " << path << ": read error\n";
				return 2;
			}
		}
		r = dschaos::check(h, opt);
	} catch (const dschaos::history_error &e) {
		std::cerr << "dschaos-check: " << path << ": " << e.what() << '\n';
		return 2;
	}
	if (!quiet)
		dschaos::print_report(std::cout, r, verbose);
	dschaos::print_figures(std::cout, r, bench);
	return r.passed() ? 0 : 1;
}
