// SPDX-License-Identifier: BSD-2-Clause
// dsctl: objects, their commands, and the records they print.
#pragma once

#include <string>

#include <dsmem/ds.hpp>

#include "cli.hpp"
#include "output.hpp"

namespace dsctl {

// A command's failure: printed as "Error: <what>" on stderr, exit 1.
struct failure {
	std::string what;
};

struct env {
	global_opts opts;
	output &out;
	args &words;
};

using command_fn = int (*)(env &e);

struct command {
	const char *name;
	command_fn fn;
};

struct object {
	const char *name;
	const command *cmds;	// the first is the default verb
	size_t ncmds;
	const char *usage;
	// words after OBJECT that name no command go to the default verb
	// (monitor's options); otherwise they are an error
	bool default_takes_words;
};

// Raise a failure from a library error (prefers the kernel's own text).
[[noreturn]] void fail(const dsmem::error &e, const std::string &doing);
[[noreturn]] void fail(const std::string &what);
dsmem::context open_context();

// Records: the one place library structs become output.
record dev_record(const ds_dev_info &d);
record event_record(const ds_event &ev);
std::string port_state_name(uint8_t state);
std::string node_type_name(uint8_t type);
std::string link_layer_name(uint8_t ll);
std::string guid_string(uint64_t guid);
record features_record(uint64_t features);

extern const object dev_object;
extern const object version_object;
extern const object monitor_object;
extern const object stat_object;

}  // namespace dsctl
