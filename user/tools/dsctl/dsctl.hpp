// SPDX-License-Identifier: BSD-2-Clause
// dsctl: objects, their commands, and the records they print.
#pragma once

#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// Run a command on words, printing through an output of the mode opts
// ask for (-j, -p) on stdout; its return is the command's.
int run_command(command_fn fn, const global_opts &opts, args &words);

// A program's main: run(argc, argv), a failure printed as
// "Error: <what>" on stderr with exit code 1.
int run_reporting(int (*run)(int argc, char **argv), int argc, char **argv);

// Raise a failure from a library error (prefers the kernel's own text).
[[noreturn]] void fail(const dsmem::error &e, const std::string &doing);
[[noreturn]] void fail(const std::string &what);
dsmem::context open_context();
// Fail on a negative return of the C ABI, with the context's message.
void check(int ret, const dsmem::context &ctx, const std::string &doing);

// A command's "KEYWORD VALUE" words (see class keywords), or a failure.
keywords take_keywords(env &e, const std::vector<std::string_view> &words,
			const std::vector<std::string_view> &flags = {});
// The value of a keyword the command cannot do without; fails with
// "missing WORD, try \"dsctl OBJECT help\"" when it is not given.
const std::string &need(const keywords &kw, std::string_view word, const char *object);
// An id from 1 to max: false when the keyword is absent, a failure
// ("WORD needs a WHAT from 1 to MAX") when its value is not one.
bool id_arg(const keywords &kw, std::string_view word, uint32_t max,
	    const char *what, uint32_t &out);
// A number from lo to hi: dflt when the keyword is absent, a failure
// ("WORD needs a number from LO to HI", then, with echo, ", not \"VALUE\"")
// when its value is not one.
uint64_t u64_arg(const keywords &kw, std::string_view word, uint64_t dflt, uint64_t lo,
		 uint64_t hi, bool echo = false);
// An id the command cannot do without: need(), then id_arg().
uint32_t need_id(const keywords &kw, std::string_view word, uint32_t max,
		 const char *what, const char *object);

// An array the C ABI allocated, released with free().
template <typename T>
struct c_array {
	T *data = nullptr;
	size_t count = 0;

	c_array() = default;
	c_array(const c_array &) = delete;
	c_array &operator=(const c_array &) = delete;
	~c_array() { free(data); }
	const T *begin() const { return data; }
	const T *end() const { return data + count; }
};

// Records: the one place library structs become output.
record dev_record(const ds_dev_info &d);
record event_record(const ds_event &ev);
std::string port_state_name(uint8_t state);
std::string node_type_name(uint8_t type);
std::string link_layer_name(uint8_t ll);
std::string guid_string(uint64_t guid);
record features_record(uint64_t features);
// devs: all the node's devices (ds_node_devs), its "devs"; none: no "devs"
// (a node event, which gives only the first device)
record node_record(const ds_node_info &n, std::span<const ds_node_dev> devs = {});
record peer_record(const ds_peer_info &p);
record seg_record(const ds_seg_info &s);
record rdm_alloc_record(uint32_t node, uint32_t remote_node, uint64_t size,
			uint64_t va, uint64_t pa);
// A read's bytes: "data" is their hex string (text: a hexdump).
record rdm_data_record(uint64_t addr, const uint8_t *data, size_t len);
// Global addresses are "0x..." strings, in text and in JSON.
std::string addr_string(uint64_t addr);
std::string peer_state_name(uint8_t state);
std::string perm_string(uint8_t perm);
std::string translate_name(uint8_t translate);

// Tokens and the token cache.  Handles are "0x" and eight hex digits.
std::string handle_string(uint32_t handle);
std::string tier_name(uint8_t tier);
std::string token_type_name(uint8_t type);
record token_flags_record(uint8_t flags);
// A token, its fields decoded by the module's table under "fields".
record token_record(const ds_token_info &t);
std::string cache_mode_name(uint64_t mode);
// part / whole to four decimals; null when whole is 0
record ratio_record(uint64_t part, uint64_t whole);
record cache_params_record(const ds_cache_info &c);
record tier_record(const ds_cache_tier &t);
record trace_state_record(const ds_cache_info &c);
record cache_record(const ds_cache_info &c);
record trace_stop_record(const ds_trace_info &t);
record bench_record(uint32_t qps, uint32_t ops, uint32_t seed,
		    const ds_cache_bench_result &b);

// The Slope range: a migration's state by the module's name for it
// ("prefill", "handed_over", ...), a lease, a migration (without its
// node), and one record per node of a dump: its summary with its leases
// and migrations, in the order of the dump's nodes.
std::string slope_mig_state_name(uint8_t state);
record slope_lease_record(const ds_slope_lease_info &l);
record slope_mig_record(const ds_slope_mig_info &m);
record slope_object_record(const ds_slope_object_info &o);
std::vector<record> slope_records(const ds_slope_ranges &l);

extern const object dev_object;
extern const object version_object;
extern const object monitor_object;
extern const object stat_object;
extern const object node_object;
extern const object key_object;
extern const object peer_object;
extern const object segment_object;
extern const object rdm_object;
extern const object btree_object;
extern const object slope_object;
extern const object token_object;
extern const object cache_object;
extern const object sim_object;
extern const object ui_object;

}  // namespace dsctl
