// SPDX-License-Identifier: BSD-2-Clause
#include "store_cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <linux/dsmem.h>

namespace dsctl {

namespace {

constexpr uint32_t replicas_max = 64;

bool valid_port(std::string_view s)
{
	unsigned int port;
	if (s.empty() || s.size() > 5)
		return false;
	for (char c : s)
		if (c < '0' || c > '9')
			return false;
	return parse_u32(s, port) && port >= 1 && port <= 65535;
}

bool valid_master(std::string_view s)
{
	if (s.empty())
		return false;
	if (s[0] == '[') {
		size_t close = s.find(']');
		if (close == std::string_view::npos || close < 2 || close + 1 >= s.size() ||
		    s[close + 1] != ':')
			return false;
		return valid_port(s.substr(close + 2));
	}
	size_t colon = s.rfind(':');
	if (colon == std::string_view::npos || colon == 0)
		return false;
	std::string_view host = s.substr(0, colon);
	if (host.find(':') != std::string_view::npos)
		return false;		// IPv6 needs its brackets
	for (char c : host)
		if (c == ' ' || c == '\t' || c == '/')
			return false;
	return valid_port(s.substr(colon + 1));
}

// A count keyword from lo to hi; false with err "WORD needs WHAT from lo to hi".
bool count_arg(const keywords &kw, std::string_view word, uint64_t lo, uint64_t hi,
	       const char *what, uint64_t &out, std::string &err)
{
	const std::string *v = kw.get(word);
	uint64_t n;
	if (!v)
		return true;
	if (!parse_u64(*v, n) || n < lo || n > hi) {
		err = std::string(word) + " needs " + what + " from " + std::to_string(lo) +
		      " to " + std::to_string(hi);
		return false;
	}
	out = n;
	return true;
}

bool take_words(args &a, keywords &kw, const std::vector<std::string_view> &words,
		std::string &err, const std::vector<std::string_view> &flags = {})
{
	return kw.parse(a, words, err, flags);
}

bool take_key(args &a, const char *cmd, std::string &key, std::string &err)
{
	if (a.empty()) {
		err = std::string("missing KEY, try \"dsctl obj help\" (obj ") + cmd + " KEY ...)";
		return false;
	}
	key = a.next();
	return check_key(key, err);
}

bool take_target(const keywords &kw, store_target &t, std::string &err)
{
	return resolve_masters(kw.get("master"), t.masters, err) &&
	       resolve_node(kw.get("node"), t.node, err);
}

// replicas, nvmeof, flush, local into cfg.
bool take_config(const keywords &kw, ds_store_replicate_config &cfg, std::string &err)
{
	uint64_t n;

	n = cfg.dram_replicas;
	if (!count_arg(kw, "replicas", 0, replicas_max, "a number of DRAM replicas", n, err))
		return false;
	cfg.dram_replicas = static_cast<uint32_t>(n);
	n = cfg.nvmeof_replicas;
	if (!count_arg(kw, "nvmeof", 0, replicas_max, "a number of NVMe-oF replicas", n, err))
		return false;
	cfg.nvmeof_replicas = static_cast<uint32_t>(n);
	if (const std::string *v = kw.get("flush"); v && !parse_flush(*v, cfg.flush)) {
		err = "flush needs \"eager\", \"lazy\" or \"none\"";
		return false;
	}
	cfg.prefer_local = kw.has("local");
	if (!cfg.dram_replicas && !cfg.nvmeof_replicas) {
		err = "an object needs at least one replica: replicas or nvmeof above 0";
		return false;
	}
	return true;
}

record version_value(int64_t v)
{
	return v < 0 ? record(nullptr) : record(v);
}

}  // namespace

bool valid_masters(std::string_view s)
{
	if (s.empty())
		return false;
	size_t start = 0;
	for (;;) {
		size_t comma = s.find(',', start);
		if (!valid_master(s.substr(start, comma == std::string_view::npos ?
						       std::string_view::npos : comma - start)))
			return false;
		if (comma == std::string_view::npos)
			return true;
		start = comma + 1;
	}
}

bool resolve_masters(const std::string *given, std::string &out, std::string &err)
{
	const char *env = getenv(masters_env);
	if (given) {
		if (!valid_masters(*given)) {
			err = "master needs HOST:PORT[,HOST:PORT...]";
			return false;
		}
		out = *given;
		return true;
	}
	if (!env || !*env) {
		err = std::string("missing master: give master HOST:PORT[,HOST:PORT...] or set ") +
		      masters_env;
		return false;
	}
	if (!valid_masters(env)) {
		err = std::string(masters_env) + " needs HOST:PORT[,HOST:PORT...]";
		return false;
	}
	out = env;
	return true;
}

bool resolve_node(const std::string *given, uint32_t &out, std::string &err)
{
	const char *env = getenv(node_env);
	const char *name = "node";
	std::string v;
	unsigned int id;

	if (given) {
		v = *given;
	} else if (env && *env) {
		v = env;
		name = node_env;
	} else {
		err = std::string("missing node: give node ID (a local dsmem node) or set ") +
		      node_env;
		return false;
	}
	if (!parse_u32(v, id) || !id || id > DSMEM_NODE_ID_MAX) {
		err = std::string(name) + " needs a node id from 1 to " +
		      std::to_string(DSMEM_NODE_ID_MAX);
		return false;
	}
	out = id;
	return true;
}

bool check_key(std::string_view key, std::string &err)
{
	if (key.empty() || key.size() > DS_STORE_KEY_MAX) {
		err = "KEY needs 1 to " + std::to_string(DS_STORE_KEY_MAX) + " bytes";
		return false;
	}
	return true;
}

std::string key_string(std::string_view key)
{
	std::string out;
	size_t i = 0;

	while (i < key.size()) {
		auto c = static_cast<unsigned char>(key[i]);
		size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 :
			   (c >> 3) == 0x1e ? 4 : 0;
		bool ok = n && i + n <= key.size();
		for (size_t j = 1; ok && j < n; j++)
			ok = (static_cast<unsigned char>(key[i + j]) & 0xc0) == 0x80;
		if (ok && n > 1) {
			// no overlong forms, no surrogates, nothing above U+10FFFF
			uint32_t cp = c & (0x7f >> n);
			for (size_t j = 1; j < n; j++)
				cp = (cp << 6) | (static_cast<unsigned char>(key[i + j]) & 0x3f);
			static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
			ok = cp >= least[n] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
		}
		if (!ok) {
			char buf[8];
			snprintf(buf, sizeof(buf), "\\x%02x", c);
			out += buf;
			i++;
			continue;
		}
		out.append(key.substr(i, n));
		i += n;
	}
	return out;
}

bool parse_flush(std::string_view s, uint32_t &out)
{
	if (matches(s, "none"))
		out = DS_STORE_FLUSH_NONE;
	else if (matches(s, "lazy"))
		out = DS_STORE_FLUSH_LAZY;
	else if (matches(s, "eager"))
		out = DS_STORE_FLUSH_EAGER;
	else
		return false;
	return true;
}

std::string flush_name(uint32_t flush)
{
	switch (flush) {
	case DS_STORE_FLUSH_NONE: return "none";
	case DS_STORE_FLUSH_LAZY: return "lazy";
	case DS_STORE_FLUSH_EAGER: return "eager";
	default: return "unknown(" + std::to_string(flush) + ")";
	}
}

bool parse_mix(std::string_view s, uint32_t &reads, uint32_t &writes)
{
	size_t colon = s.find(':');
	unsigned int r, w;

	if (colon == std::string_view::npos)
		return false;
	std::string_view rs = s.substr(0, colon), ws = s.substr(colon + 1);
	for (std::string_view p : { rs, ws })
		for (char c : p)
			if (c < '0' || c > '9')
				return false;
	if (!parse_u32(rs, r) || !parse_u32(ws, w) || r > 100000 || w > 100000 || (!r && !w))
		return false;
	reads = r;
	writes = w;
	return true;
}

bool parse_ttl(std::string_view s, uint64_t &ms)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		// "ms" before "m" and "s"
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
	};
	uint64_t mult = 1, v;

	if (s == "none") {
		ms = 0;
		return true;
	}
	for (const auto &u : units) {
		std::string_view suf(u.suffix);
		if (s.size() > suf.size() && s.substr(s.size() - suf.size()) == suf) {
			s.remove_suffix(suf.size());
			mult = u.ms;
			break;
		}
	}
	// decimal digits only: "0x1h" and "1e3" are not times
	for (char c : s)
		if (c < '0' || c > '9')
			return false;
	if (!parse_u64(s, v) || v > DS_STORE_TTL_MAX_MS / mult)
		return false;
	ms = v * mult;
	return true;
}

// ---- the commands' words ---------------------------------------------------

namespace {

const char ttl_words[] = "NUMBER[ms|s|m|h|d] (plain: ms) up to 3660d, or none";

}  // namespace

bool parse_put(args &a, put_args &out, std::string &err)
{
	keywords kw;
	if (!take_key(a, "put", out.key, err) ||
	    !take_words(a, kw, { "file", "replicas", "nvmeof", "flush", "ttl", "master", "node" },
			err, { "local", "pin" }) ||
	    !take_config(kw, out.config, err))
		return false;
	out.soft_pin = kw.has("pin");
	if (const std::string *v = kw.get("ttl"); v && !parse_ttl(*v, out.ttl_ms)) {
		err = std::string("ttl needs ") + ttl_words;
		return false;
	}
	if (const std::string *f = kw.get("file")) {
		if (f->empty()) {
			err = "file needs a path, or - for standard input";
			return false;
		}
		out.file = *f == "-" ? "" : *f;
	}
	return take_target(kw, out.target, err);
}

bool parse_get(args &a, get_args &out, std::string &err)
{
	keywords kw;
	if (!take_key(a, "get", out.key, err) ||
	    !take_words(a, kw, { "file", "version", "offset", "length", "master", "node" }, err))
		return false;
	if (const std::string *f = kw.get("file")) {
		if (f->empty()) {
			err = "file needs a path, or - for standard output";
			return false;
		}
		out.file = *f == "-" ? "" : *f;
	}
	if (const std::string *v = kw.get("version")) {
		uint64_t n;
		if (!parse_u64(*v, n) || n > INT64_MAX) {
			err = "version needs a version number (the least one to read)";
			return false;
		}
		out.min_version = static_cast<int64_t>(n);
	}
	if (const std::string *v = kw.get("offset"); v && !parse_size(*v, out.offset)) {
		err = "offset needs a number of bytes (suffixes K, M, G, T)";
		return false;
	}
	if (const std::string *v = kw.get("length");
	    v && (!parse_size(*v, out.length) || !out.length || out.length == UINT64_MAX)) {
		err = "length needs a positive number of bytes (suffixes K, M, G, T)";
		return false;
	}
	return take_target(kw, out.target, err);
}

bool parse_key_cmd(args &a, const char *cmd, key_args &out, std::string &err)
{
	keywords kw;
	return take_key(a, cmd, out.key, err) && take_words(a, kw, { "master", "node" }, err) &&
	       take_target(kw, out.target, err);
}

bool parse_attr(args &a, const char *cmd, attr_args &out, std::string &err)
{
	keywords kw;
	std::string_view c(cmd);
	if (!take_key(a, cmd, out.key, err))
		return false;
	if (c == "ttl") {
		if (a.empty()) {
			err = "missing DURATION, try \"dsctl obj help\" (obj ttl KEY { DURATION | none })";
			return false;
		}
		std::string d = a.next();
		if (!parse_ttl(d, out.ttl_ms)) {
			err = "DURATION needs " + std::string(ttl_words);
			return false;
		}
		out.mask = DS_STORE_ATTR_TTL;
	} else {
		out.mask = DS_STORE_ATTR_SOFT_PIN;
		out.soft_pin = c == "pin";
	}
	return take_words(a, kw, { "master", "node" }, err) && take_target(kw, out.target, err);
}

bool parse_replicate(args &a, replicate_args &out, std::string &err)
{
	keywords kw;
	if (!take_key(a, "replicate", out.key, err) ||
	    !take_words(a, kw, { "replicas", "nvmeof", "flush", "master", "node" }, err))
		return false;
	if (!kw.has("replicas")) {
		err = "missing replicas, try \"dsctl obj help\"";
		return false;
	}
	return take_config(kw, out.config, err) && take_target(kw, out.target, err);
}

bool parse_list(args &a, list_args &out, std::string &err)
{
	keywords kw;
	if (!take_words(a, kw, { "prefix", "master", "node" }, err))
		return false;
	if (const std::string *p = kw.get("prefix")) {
		if (p->size() > DS_STORE_KEY_MAX) {
			err = "prefix needs at most " + std::to_string(DS_STORE_KEY_MAX) + " bytes";
			return false;
		}
		out.prefix = *p;
	}
	return take_target(kw, out.target, err);
}

bool parse_bench(args &a, bench_args &out, std::string &err)
{
	keywords kw;
	uint64_t n;

	if (!take_words(a, kw, { "size", "count", "threads", "mix", "replicas", "time", "master",
				 "node" }, err))
		return false;
	if (const std::string *v = kw.get("size");
	    v && (!parse_size(*v, out.size) || out.size < (16u << 10) || out.size > (64u << 20))) {
		err = "size needs a number of bytes from 16K to 64M";
		return false;
	}
	if (!count_arg(kw, "count", 1, 1000000, "a number of objects", out.count, err))
		return false;
	n = out.threads;
	if (!count_arg(kw, "threads", 1, 64, "a number of threads", n, err))
		return false;
	out.threads = static_cast<uint32_t>(n);
	if (const std::string *v = kw.get("mix"); v && !parse_mix(*v, out.reads, out.writes)) {
		err = "mix needs READS:WRITES, such as 50:50 or 100:0";
		return false;
	}
	n = out.replicas;
	if (!count_arg(kw, "replicas", 1, replicas_max, "a number of DRAM replicas", n, err))
		return false;
	out.replicas = static_cast<uint32_t>(n);
	if (!count_arg(kw, "time", 0, 3600, "a number of seconds", out.seconds, err))
		return false;
	return take_target(kw, out.target, err);
}

bool parse_master_only(args &a, std::string &masters, std::string &err)
{
	keywords kw;
	return take_words(a, kw, { "master" }, err) &&
	       resolve_masters(kw.get("master"), masters, err);
}

bool parse_pool_show(args &a, std::string &masters, uint32_t &node, std::string &err)
{
	keywords kw;
	if (!take_words(a, kw, { "master", "node" }, err))
		return false;
	node = 0;
	if (const std::string *v = kw.get("node")) {
		unsigned int id;
		if (!parse_u32(*v, id) || !id || id > DSMEM_NODE_ID_MAX) {
			err = "node needs a node id from 1 to " + std::to_string(DSMEM_NODE_ID_MAX);
			return false;
		}
		node = id;
	}
	return resolve_masters(kw.get("master"), masters, err);
}

bool parse_pool_add(args &a, pool_add_args &out, std::string &err)
{
	keywords kw;
	uint64_t n = out.trsvcid;
	if (!take_words(a, kw, { "traddr", "trsvcid", "subnqn", "size", "base", "master" }, err))
		return false;
	const std::string *traddr = kw.get("traddr"), *subnqn = kw.get("subnqn"),
			  *size = kw.get("size");
	for (auto [word, v] : { std::pair<const char *, const std::string *>{ "traddr", traddr },
				{ "subnqn", subnqn }, { "size", size } })
		if (!v) {
			err = std::string("missing ") + word + ", try \"dsctl segment help\"";
			return false;
		}
	if (traddr->empty() || traddr->size() >= sizeof(ds_store_segment_info::traddr)) {
		err = "traddr needs the target's RDMA address (an IP address)";
		return false;
	}
	out.traddr = *traddr;
	if (!count_arg(kw, "trsvcid", 1, 65535, "a port", n, err))
		return false;
	out.trsvcid = static_cast<uint32_t>(n);
	if (subnqn->empty() || subnqn->size() >= sizeof(ds_store_segment_info::subnqn)) {
		err = "subnqn needs the subsystem's NQN (1 to " +
		      std::to_string(sizeof(ds_store_segment_info::subnqn) - 1) + " bytes)";
		return false;
	}
	out.subnqn = *subnqn;
	if (!parse_size(*size, out.size) || out.size < (16u << 10) || out.size % 4096) {
		err = "size needs a number of bytes from 16K, a multiple of 4K (suffixes K, M, G, T)";
		return false;
	}
	if (const std::string *v = kw.get("base");
	    v && (!parse_size(*v, out.base) || out.base % 4096)) {
		err = "base needs a byte offset into the namespace, a multiple of 4K";
		return false;
	}
	return resolve_masters(kw.get("master"), out.masters, err);
}

bool parse_drain(args &a, drain_args &out, std::string &err)
{
	keywords kw;
	if (!take_words(a, kw, { "segment", "deadline", "master" }, err))
		return false;
	const std::string *seg = kw.get("segment");
	if (!seg) {
		err = "missing segment, try \"dsctl master help\"";
		return false;
	}
	if (!count_arg(kw, "segment", 1, UINT64_MAX, "a segment id", out.segment, err) ||
	    !count_arg(kw, "deadline", 1, 7 * 24 * 3600, "a number of seconds", out.deadline_s,
		       err))
		return false;
	return resolve_masters(kw.get("master"), out.masters, err);
}

bool parse_store_monitor(args &a, monitor_args &out, std::string &err)
{
	keywords kw;
	return take_words(a, kw, { "count", "time", "master" }, err) &&
	       count_arg(kw, "count", 1, UINT32_MAX, "a number of events", out.count, err) &&
	       count_arg(kw, "time", 1, 7 * 24 * 3600, "a number of seconds", out.seconds, err) &&
	       resolve_masters(kw.get("master"), out.masters, err);
}

// ---- records ---------------------------------------------------------------

std::string task_state_name(uint32_t state)
{
	static const char *const names[] = {
		"waiting", "pending", "invalid", "canceled", "complete", "timeout", "failed",
	};
	if (state < sizeof(names) / sizeof(names[0]))
		return names[state];
	return "unknown(" + std::to_string(state) + ")";
}

std::string pool_segment_type_name(uint32_t type)
{
	switch (type) {
	case 0: return "dram";
	case 1: return "nvmeof";
	default: return "unknown(" + std::to_string(type) + ")";
	}
}

std::string pool_segment_state_name(uint32_t state)
{
	switch (state) {
	case 0: return "alive";
	case 1: return "draining";
	case 2: return "dead";
	default: return "unknown(" + std::to_string(state) + ")";
	}
}

record put_record(const std::string &key, const ds_store_replicate_config &cfg,
		  const ds_store_task_status &st)
{
	record r;
	r["key"] = key_string(key);
	r["version"] = version_value(st.version);
	r["size"] = st.bytes;
	r["replicas"] = st.dram_replicas;
	r["replicas_wanted"] = cfg.dram_replicas;
	r["nvmeof"] = st.nvmeof_replicas;
	r["nvmeof_wanted"] = cfg.nvmeof_replicas;
	r["flush"] = flush_name(cfg.flush);
	r["flushed"] = st.flushed != 0;
	if (st.err)
		r["flush_error"] = errno_text(st.err);
	return r;
}

record replicate_record(const std::string &key, const ds_store_replicate_config &cfg,
			const ds_store_task_status &st)
{
	record r = put_record(key, cfg, st);
	r.erase("size");
	return r;
}

record get_record(const std::string &key, const ds_store_task_status &st, uint64_t offset,
		  const std::string &file)
{
	record r;
	r["key"] = key_string(key);
	r["version"] = version_value(st.version);
	r["offset"] = offset;
	r["bytes"] = st.bytes;
	r["file"] = file;
	return r;
}

record sync_record(const std::string &key, const ds_store_task_status &st)
{
	record r;
	r["key"] = key_string(key);
	r["version"] = version_value(st.version);
	return r;
}

record object_record(const ds_store_object_info &o)
{
	record r;
	std::string key(o.key, strnlen(o.key, sizeof(o.key)));
	r["key"] = key_string(key);
	r["version"] = o.version;
	r["size"] = o.size;
	r["replicas"] = o.dram_replicas;
	r["replicas_wanted"] = o.config.dram_replicas;
	r["nvmeof"] = o.nvmeof_replicas;
	r["nvmeof_wanted"] = o.config.nvmeof_replicas;
	r["flush"] = flush_name(o.config.flush);
	r["flushed"] = o.flushed != 0;
	r["flushed_version"] = o.flushed_version ? record(o.flushed_version) : record(nullptr);
	r["local"] = o.config.prefer_local != 0;
	r["ctime"] = o.ctime_ns ? record(utc_string(o.ctime_ns)) : record(nullptr);
	r["atime"] = o.atime_ns ? record(utc_string(o.atime_ns)) : record(nullptr);
	// text: "pinned" and "expires TIME" only when set (output.cpp)
	r["soft_pin"] = (o.flags & DS_STORE_OBJ_SOFT_PIN) != 0;
	r["expires_ns"] = o.expires_ns;
	return r;
}

record master_record(const struct ds_store_master_info &m)
{
	record r;
	std::string leader(m.leader, strnlen(m.leader, sizeof(m.leader)));
	std::string standbys(m.standbys, strnlen(m.standbys, sizeof(m.standbys)));
	record sb = record::array();
	size_t start = 0;
	while (start < standbys.size()) {
		size_t comma = standbys.find(',', start);
		if (comma == std::string::npos)
			comma = standbys.size();
		if (comma > start)
			sb.push_back(standbys.substr(start, comma - start));
		start = comma + 1;
	}
	auto str = [](const char *s, size_t n) {
		size_t len = strnlen(s, n);
		return len ? record(std::string(s, len)) : record(nullptr);
	};

	r["leader"] = leader.empty() ? record(nullptr) : record(leader);
	r["standbys"] = sb;
	r["term"] = m.term;
	r["objects"] = m.objects;
	r["versions"] = m.versions;
	r["metadata_bytes"] = m.metadata_bytes;
	r["log_records"] = m.log_records;
	r["persistence"] = str(m.persistence, sizeof(m.persistence));
	r["slow_tier"] = str(m.slow_tier, sizeof(m.slow_tier));
	r["global_version"] = m.global_version;
	r["members"] = m.members;
	r["ops"] = m.ops;
	r["evictions"] = m.evictions;
	r["expiries"] = m.expiries;
	r["evicted_bytes"] = m.evicted_bytes;
	// 0: a master without eviction
	r["high_watermark_pct"] = m.high_watermark_pct ? record(m.high_watermark_pct)
							: record(nullptr);
	r["low_watermark_pct"] = m.low_watermark_pct ? record(m.low_watermark_pct)
						      : record(nullptr);
	return r;
}

namespace {

// A pool segment's fields, appended to r.
void add_pool_segment(record &r, const ds_store_segment_info &s)
{
	char buf[24];

	r["segment"] = s.id;
	r["type"] = pool_segment_type_name(s.type);
	r["state"] = pool_segment_state_name(s.state);
	r["size"] = s.size;
	r["used"] = s.used;
	r["use"] = s.size ? record(round_to(static_cast<double>(s.used) /
						     static_cast<double>(s.size), 4))
			  : record(nullptr);
	r["owner"] = s.owner ? record(s.owner) : record(nullptr);
	if (s.type == 1) {
		r["traddr"] = std::string(s.traddr, strnlen(s.traddr, sizeof(s.traddr)));
		r["trsvcid"] = s.trsvcid;
		r["subnqn"] = std::string(s.subnqn, strnlen(s.subnqn, sizeof(s.subnqn)));
		snprintf(buf, sizeof(buf), "0x%" PRIx64, s.base);
		r["base"] = buf;
	} else {
		r["node"] = s.node_id;
		snprintf(buf, sizeof(buf), "0x%" PRIx64, s.gaddr);
		r["addr"] = buf;
	}
	if (s.flags & DS_STORE_SEGMENT_RECLAIMED)
		r["reclaimed"] = true;
}

}  // namespace

record pool_segment_record(const ds_store_segment_info &s)
{
	record r;
	add_pool_segment(r, s);
	return r;
}

record pool_added_record(const pool_add_args &a, uint64_t id)
{
	char buf[24];
	record r;
	r["segment"] = id;
	r["type"] = pool_segment_type_name(1);
	r["size"] = a.size;
	r["traddr"] = a.traddr;
	r["trsvcid"] = a.trsvcid;
	r["subnqn"] = a.subnqn;
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a.base);
	r["base"] = buf;
	return r;
}

record drained_record(uint64_t segment, uint64_t moved)
{
	record r;
	r["segment"] = segment;
	r["moved"] = moved;
	return r;
}

const char *store_event_name(uint32_t type)
{
	switch (type) {
	case DS_STORE_EV_MEMBER_JOINED: return "member_joined";
	case DS_STORE_EV_MEMBER_LEFT: return "member_left";
	case DS_STORE_EV_SEGMENT_SETUP: return "segment_setup";
	case DS_STORE_EV_SEGMENT_REMOVED: return "segment_removed";
	case DS_STORE_EV_SEGMENT_DRAINING: return "segment_draining";
	default: return "unknown";
	}
}

// The event, then its member (client, node, addr, port) or its segment
// (as segment show pool prints one).
record store_event_record(const ds_store_event &ev)
{
	record r;
	r["event"] = store_event_name(ev.type);
	if (ev.type == DS_STORE_EV_MEMBER_JOINED || ev.type == DS_STORE_EV_MEMBER_LEFT) {
		r["client"] = ev.client_id;
		r["node"] = ev.node_id;
		r["addr"] = std::string(ev.addr, strnlen(ev.addr, sizeof(ev.addr)));
		r["port"] = ev.port;
		return r;
	}
	add_pool_segment(r, ev.segment);
	return r;
}

record latencies::quantile_us(double q)
{
	if (ns.empty())
		return nullptr;
	std::sort(ns.begin(), ns.end());
	size_t want = static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size())));
	want = std::clamp<size_t>(want, 1, ns.size());
	return round_to(static_cast<double>(ns[want - 1]) / 1000.0, 2);
}

record per_second(uint64_t n, uint64_t ns)
{
	if (!ns)
		return nullptr;
	return round_to(static_cast<double>(n) * 1e9 / static_cast<double>(ns), 2);
}

record bench_record(const bench_args &a, bench_result &res)
{
	record r;
	r["size"] = a.size;
	r["count"] = a.count;
	r["threads"] = a.threads;
	r["mix"] = std::to_string(a.reads) + ":" + std::to_string(a.writes);
	r["replicas"] = a.replicas;
	r["time_ns"] = a.seconds * 1000000000ULL;

	auto mb = [](uint64_t bytes, uint64_t ns) {
		if (!ns)
			return record(nullptr);
		return record(round_to(static_cast<double>(bytes) * 1e3 / static_cast<double>(ns), 2));
	};
	r["fill_ops"] = res.fill.ns.size();
	r["fill_ops_per_s"] = per_second(res.fill.ns.size(), res.fill_ns);
	r["fill_mb_per_s"] = mb(res.fill.bytes, res.fill_ns);
	r["fill_p50_us"] = res.fill.quantile_us(0.50);
	r["fill_p99_us"] = res.fill.quantile_us(0.99);
	for (auto [name, l] : { std::pair<const char *, latencies *>{ "put", &res.put },
				{ "get", &res.get } }) {
		std::string p(name);
		r[p + "_ops"] = l->ns.size();
		r[p + "_ops_per_s"] = per_second(l->ns.size(), res.mixed_ns);
		r[p + "_mb_per_s"] = mb(l->bytes, res.mixed_ns);
		r[p + "_p50_us"] = l->quantile_us(0.50);
		r[p + "_p99_us"] = l->quantile_us(0.99);
	}
	r["errors"] = res.errors;
	if (res.errors)
		r["first_error"] = res.first_error;
	return r;
}

}  // namespace dsctl
