// SPDX-License-Identifier: BSD-2-Clause
// dsctl -- administer dsmem, in the manner of iproute2's rdma(8):
//   dsctl [ OPTIONS ] OBJECT [ COMMAND [ ARGS ] ]
#include <cstdio>
#include <cstring>

#include "dsctl.hpp"

namespace dsctl {

// The object store (cmd_obj.cpp, cmd_master.cpp).
extern const object obj_object;
extern const object master_object;

namespace {

// Abbreviations go to the first object that fits: statistic stays "s".
const object *const objects[] = {
	&dev_object, &stat_object, &monitor_object, &version_object,
	&node_object, &peer_object, &segment_object, &rdm_object, &key_object,
	&btree_object, &slope_object, &token_object, &cache_object, &sim_object, &ui_object,
	&obj_object, &master_object,
};

void usage(FILE *f)
{
	fprintf(f,
		"Usage: dsctl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"       dsctl [ -j [ -p ] ] { dev | node | peer | segment | key | slope | token |\n"
		"                             cache | obj | master | statistic | monitor | version }\n"
		"where  OBJECT := { dev | node | peer | segment | rdm | key | btree | slope | token |\n"
		"                   cache | sim | ui | obj | master | statistic | monitor | version |\n"
		"                   help }\n"
		"       OPTIONS := { -V[ersion] | -j[son] | -p[retty] | -h[elp] }\n");
}

int run(int argc, char **argv)
{
	global_opts opts;
	std::string err;
	int idx = parse_global(argc, argv, opts, err);

	if (idx < 0) {
		fprintf(stderr, "Error: %s\n", err.c_str());
		usage(stderr);
		return 1;
	}
	if (opts.show_version) {
		printf("dsctl utility, dsmem %s\n", DSCTL_VERSION);
		return 0;
	}
	if (opts.help || idx == argc) {
		usage(stdout);
		return 0;
	}

	std::string objname = argv[idx];
	if (matches(objname, "help")) {
		usage(stdout);
		return 0;
	}
	const object *obj = nullptr;
	for (const object *o : objects)
		if (matches(objname, o->name)) {
			obj = o;
			break;
		}
	if (!obj)
		fail("object \"" + objname + "\" is unknown, try \"dsctl help\"");

	args words(std::vector<std::string>(argv + idx + 1, argv + argc));
	command_fn fn = obj->cmds[0].fn;
	if (!words.empty()) {
		if (matches(words.peek(), "help")) {
			fputs(obj->usage, stdout);
			return 0;
		}
		bool found = false;
		for (size_t i = 0; i < obj->ncmds; i++)
			if (matches(words.peek(), obj->cmds[i].name)) {
				fn = obj->cmds[i].fn;
				found = true;
				words.next();
				break;
			}
		if (!found && !obj->default_takes_words)
			fail("unknown command \"" + words.peek() + "\" for object \"" +
			     obj->name + "\", try \"dsctl " + obj->name + " help\"");
	}

	return run_command(fn, opts, words);
}

}  // namespace

}  // namespace dsctl

int main(int argc, char **argv)
{
	return dsctl::run_reporting(dsctl::run, argc, argv);
}
