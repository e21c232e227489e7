// SPDX-License-Identifier: BSD-2-Clause
// What every command shares: failures, the module's context and keyword
// helpers.  In dsctl_core, so that the console daemon's commands (and its
// cluster view) fail and check as dsctl's do.
#include <cstdio>

#include "dsctl.hpp"

namespace dsctl {

void fail(const std::string &what)
{
	throw failure{what};
}

void fail(const dsmem::error &e, const std::string &doing)
{
	throw failure{doing + ": " + e.what()};
}

dsmem::context open_context()
{
	auto ctx = dsmem::context::open();
	if (!ctx)
		fail(ctx.err().what());
	return std::move(ctx).value();
}

void check(int ret, const dsmem::context &ctx, const std::string &doing)
{
	if (ret < 0)
		fail(dsmem::error{ret, ds_ctx_errmsg(ctx.get())}, doing);
}

keywords take_keywords(env &e, const std::vector<std::string_view> &words,
			const std::vector<std::string_view> &flags)
{
	keywords kw;
	std::string err;
	if (!kw.parse(e.words, words, err, flags))
		fail(err);
	return kw;
}

const std::string &need(const keywords &kw, std::string_view word, const char *object)
{
	const std::string *v = kw.get(word);
	if (!v)
		fail("missing " + std::string(word) + ", try \"dsctl " + object + " help\"");
	return *v;
}

bool id_arg(const keywords &kw, std::string_view word, uint32_t max,
	    const char *what, uint32_t &out)
{
	const std::string *v = kw.get(word);
	unsigned int id;

	if (!v)
		return false;
	if (!parse_u32(*v, id) || !id || id > max)
		fail(std::string(word) + " needs a " + what + " from 1 to " + std::to_string(max));
	out = id;
	return true;
}

uint64_t u64_arg(const keywords &kw, std::string_view word, uint64_t dflt, uint64_t lo,
		 uint64_t hi, bool echo)
{
	const std::string *v = kw.get(word);
	uint64_t x;

	if (!v)
		return dflt;
	if (!parse_u64(*v, x) || x < lo || x > hi)
		fail(std::string(word) + " needs a number from " + std::to_string(lo) + " to " +
		     std::to_string(hi) + (echo ? ", not \"" + *v + "\"" : ""));
	return x;
}

uint32_t need_id(const keywords &kw, std::string_view word, uint32_t max,
		 const char *what, const char *object)
{
	uint32_t id = 0;
	need(kw, word, object);
	id_arg(kw, word, max, what, id);
	return id;
}

int run_command(command_fn fn, const global_opts &opts, args &words)
{
	output out(opts.json ? (opts.pretty ? output::mode::pretty_json : output::mode::json)
			     : output::mode::text,
		   stdout);
	env e{ opts, out, words };
	int ret = fn(e);
	out.finish();
	return ret;
}

int run_reporting(int (*run)(int argc, char **argv), int argc, char **argv)
{
	try {
		return run(argc, argv);
	} catch (const failure &f) {
		fflush(stdout);
		fprintf(stderr, "Error: %s\n", f.what.c_str());
		return 1;
	}
}

}  // namespace dsctl
