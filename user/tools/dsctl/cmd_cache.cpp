// SPDX-License-Identifier: BSD-2-Clause
// dsctl cache [show] | cache set [PARAM VALUE]... [reset]
//      | cache trace [show | start FILE | stop]
//      | cache bench qps N ops N [seed N] [PARAM VALUE]...
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

void no_more_words(env &e)
{
	if (!e.words.empty())
		fail("unexpected \"" + e.words.peek() + "\"");
}

// The cache as the module reports it; large, so not on the stack.
std::unique_ptr<ds_cache_info> read_cache(const dsmem::context &ctx)
{
	auto c = std::make_unique<ds_cache_info>();
	check(ds_cache_get(ctx.get(), c.get()), ctx, "cannot read the token cache");
	return c;
}

int cache_show(env &e)
{
	no_more_words(e);
	dsmem::context ctx = open_context();
	e.out.add(cache_record(*read_cache(ctx)));
	return 0;
}

int cache_set(env &e)
{
	keywords kw;
	cache_settings cs;
	std::string err;

	if (!parse_cache_words(e.words, {}, { "reset" }, kw, cs, err))
		fail(err + ", try \"dsctl cache help\"");
	bool reset = kw.has("reset");
	if (!cs.mask && !reset)
		fail("nothing to set, try \"dsctl cache help\"");

	dsmem::context ctx = open_context();
	check(ds_cache_set(ctx.get(), cs.params, cs.mask, reset, nullptr), ctx,
	      "cannot set the token cache");
	return 0;
}

struct fd_guard {
	int fd;
	~fd_guard()
	{
		if (fd >= 0)
			close(fd);
	}
};

int trace_start(env &e)
{
	if (e.words.empty())
		fail("missing FILE, try \"dsctl cache help\"");
	std::string file = e.words.next();
	no_more_words(e);

	// before any request: a file that cannot be written is our failure
	fd_guard f{ open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) };
	if (f.fd < 0)
		fail("cannot write " + file + ": " + strerror(errno));
	dsmem::context ctx = open_context();
	// the module keeps its own reference to the file
	check(ds_trace_start(ctx.get(), f.fd), ctx, "cannot start a trace to " + file);
	return 0;
}

int trace_stop(env &e)
{
	no_more_words(e);
	dsmem::context ctx = open_context();
	ds_trace_info t{};
	check(ds_trace_stop(ctx.get(), &t), ctx, "cannot stop the trace");
	e.out.add(trace_stop_record(t));
	return 0;
}

int trace_show(env &e)
{
	no_more_words(e);
	dsmem::context ctx = open_context();
	e.out.add(trace_state_record(*read_cache(ctx)));
	return 0;
}

int cache_trace(env &e)
{
	if (e.words.empty())
		return trace_show(e);
	std::string w = e.words.next();
	if (matches(w, "show"))
		return trace_show(e);
	if (matches(w, "start"))
		return trace_start(e);
	if (matches(w, "stop"))
		return trace_stop(e);
	fail("unknown command \"" + w + "\" for \"cache trace\", try \"dsctl cache help\"");
}

int cache_bench(env &e)
{
	keywords kw;
	cache_settings cs;
	std::string err;

	if (!parse_cache_words(e.words, { "qps", "ops", "seed" }, {}, kw, cs, err))
		fail(err + ", try \"dsctl cache help\"");
	unsigned int qps, ops, seed = 1;
	if (!parse_u32(need(kw, "qps", "cache"), qps) || !qps || qps > DS_CACHE_BENCH_QPS_MAX)
		fail("qps needs a number of queue pairs from 1 to " +
		     std::to_string(DS_CACHE_BENCH_QPS_MAX));
	if (!parse_u32(need(kw, "ops", "cache"), ops) || !ops)
		fail("ops needs a number of operations from 1 to " + std::to_string(UINT_MAX));
	if (const std::string *v = kw.get("seed"); v && !parse_u32(*v, seed))
		fail("seed needs an unsigned 32-bit number");

	dsmem::context ctx = open_context();
	ds_cache_bench_result b{};
	check(ds_cache_bench(ctx.get(), qps, ops, seed, cs.params, cs.mask, &b), ctx,
	      "cannot run the benchmark");
	e.out.add(bench_record(qps, ops, seed, b));
	return 0;
}

const command cache_cmds[] = {
	{ "show", cache_show },
	{ "set", cache_set },
	{ "trace", cache_trace },
	{ "bench", cache_bench },
};

// Words after head, joined by sep and wrapped before column 80 (a line
// ends with the separator, the next is indented under the first word).
std::string wrapped(std::string line, const std::vector<std::string> &words,
		    const std::string &sep, const std::string &tail)
{
	const std::string indent(line.size(), ' ');
	std::string out;

	for (size_t i = 0; i < words.size(); i++) {
		std::string word = words[i] + (i + 1 < words.size() ? sep : tail);
		if (line.size() + word.size() > 79 && line.size() > indent.size()) {
			while (!line.empty() && line.back() == ' ')
				line.pop_back();
			out += line + "\n";
			line = indent;
		}
		line += word;
	}
	return out + line + "\n";
}

// The usage names the parameters of the module's table.
const std::string cache_usage = [] {
	std::vector<std::string> params, times;
	ds_cache_param_desc d;

	for (unsigned int i = 0; ds_cache_param_describe(i, &d) == 0; i++) {
		params.emplace_back(d.name);
		if (!strcmp(d.unit, "ns"))
			times.emplace_back(d.name);
	}
	return "Usage: dsctl cache [show]\n"
	       "       dsctl cache set [PARAM VALUE]... [reset]\n"
	       "       dsctl cache trace [{ show | start FILE | stop }]\n"
	       "       dsctl cache bench qps N ops N [seed N] [PARAM VALUE]...\n" +
	       wrapped("where  PARAM := { ", params, " | ", " }") +
	       wrapped("       times: { ", times, " | ", " }") +
	       "       a time is NUMBER[ns|us|ms|s] (ns when bare); mode { fixed | adaptive }\n";
}();

}  // namespace

const object cache_object = {
	"cache", cache_cmds, sizeof(cache_cmds) / sizeof(cache_cmds[0]),
	cache_usage.c_str(),
	false,
};

}  // namespace dsctl
