// SPDX-License-Identifier: BSD-2-Clause
// The store page: the object store's masters, its pool of segments and its
// objects by key prefix, read only, through libdsstore -- the records of
// dsctl master show, segment show pool and obj list, less the segments'
// addresses.  The masters come from store-masters (or DSMEM_MASTERS), the
// TLS files from the environment, as for dsctl's store commands.
#include <cerrno>
#include <cstring>

#include <dsmem/store.h>

#include "dsctl.hpp"
#include "store_cli.hpp"
#include "ui.hpp"

namespace dsui {

namespace {

// The master's message when it gave one, else the error's text.
std::string why(int ret, const char *errbuf)
{
	return *errbuf ? std::string(errbuf) : std::string(strerror(-ret));
}

void need_masters(const config &c)
{
	if (c.store_masters.empty())
		raise(503, "no object store configured: start the console with store-masters "
		      "HOST:PORT[,...] or set DSMEM_MASTERS");
}

json masters_list(const std::string &s)
{
	json out = json::array();
	for (const std::string &m : dsctl::split_list(s, ','))
		if (!m.empty())
			out.push_back(m);
	return out;
}

std::string hex_of(const std::string &s)
{
	static const char digits[] = "0123456789abcdef";
	std::string out;
	for (unsigned char ch : s) {
		out += digits[ch >> 4];
		out += digits[ch & 15];
	}
	return out;
}

// A cursor as hex_of() made it; 400 otherwise.
std::string unhex(const std::string &s)
{
	auto nibble = [](char ch) {
		return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
		       ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
	};
	if (s.size() % 2 || s.size() > 2 * DS_STORE_KEY_MAX)
		raise(400, "after is the next of a previous answer (hexadecimal)");
	std::string out;
	for (size_t i = 0; i < s.size(); i += 2) {
		int hi = nibble(s[i]), lo = nibble(s[i + 1]);
		if (hi < 0 || lo < 0)
			raise(400, "after is the next of a previous answer (hexadecimal)");
		out += char(hi << 4 | lo);
	}
	if (out.find('\0') != std::string::npos)
		raise(400, "a key holds no NUL byte");
	return out;
}

// A segment as dsctl -j segment show pool prints it, without where its
// bytes are (a DRAM segment's global address, an NVMe-oF one's offset).
json segment_json(const ds_store_segment_info &s)
{
	json r = dsctl::pool_segment_record(s);
	r.erase("addr");
	r.erase("base");
	return r;
}

}  // namespace

store::store(const config &c) : c_(c)
{
}

store::~store()
{
	if (s_)
		ds_store_close(s_, 0);	// it owns no segment: nothing to drain
}

json store::summary() const
{
	json out;
	out["configured"] = !c_.store_masters.empty();
	out["masters"] = masters_list(c_.store_masters);
	out["node"] = c_.store_node ? json(c_.store_node) : json(nullptr);
	out["objects"] = c_.store_node != 0;
	if (c_.store_masters.empty())
		out["note"] = "no object store configured: start the console with store-masters "
			      "HOST:PORT[,...] or set DSMEM_MASTERS";
	else if (!c_.store_node)
		out["note"] = "listing objects needs a local dsmem node to join the store as: "
			      "start the console with store-node N";
	return out;
}

json store::master() const
{
	need_masters(c_);
	struct ds_store_master_info info{};
	char errbuf[256] = "";
	int ret = ds_store_master_info(c_.store_masters.c_str(), &info, errbuf, sizeof(errbuf));
	if (ret < 0)
		raise(502, "cannot reach the master at " + c_.store_masters + ": " + why(ret, errbuf));
	json r = dsctl::master_record(info);
	r["masters"] = masters_list(c_.store_masters);
	return r;
}

json store::segments() const
{
	need_masters(c_);
	dsctl::c_array<ds_store_segment_info> segs;
	char errbuf[256] = "";
	int ret = ds_store_segment_list(c_.store_masters.c_str(), &segs.data, &segs.count, errbuf,
					sizeof(errbuf));
	if (ret < 0)
		raise(502, "cannot list the pool's segments at " + c_.store_masters + ": " +
		      why(ret, errbuf));
	json list = json::array();
	// per tier: what the live segments (alive or draining) hold
	struct tier {
		uint64_t segments = 0, live = 0, size = 0, used = 0;
	} tiers[2];
	for (const auto &s : segs) {
		list.push_back(segment_json(s));
		if (s.type > 1)
			continue;
		tier &t = tiers[s.type];
		t.segments++;
		if (s.state == 2)
			continue;
		t.live++;
		t.size += s.size;
		t.used += s.used;
	}
	json tl = json::array();
	for (uint32_t k = 0; k < 2; k++) {
		const tier &t = tiers[k];
		tl.push_back({ { "tier", dsctl::pool_segment_type_name(k) },
			       { "segments", t.segments },
			       { "live", t.live },
			       { "size", t.size },
			       { "used", t.used },
			       { "use", t.size ? json(dsctl::round_to(double(t.used) / double(t.size), 4))
					       : json(nullptr) } });
	}
	return { { "segments", list }, { "tiers", tl } };
}

json store::objects(const std::string &prefix, const std::string &after_hex, unsigned limit)
{
	if (prefix.size() > DS_STORE_KEY_MAX)
		raise(400, "a prefix has at most " + std::to_string(DS_STORE_KEY_MAX) + " bytes");
	if (prefix.find('\0') != std::string::npos)
		raise(400, "a key holds no NUL byte");
	std::string after = unhex(after_hex);
	need_masters(c_);
	if (!c_.store_node)
		raise(503, "listing objects needs a local dsmem node to join the store as: "
		      "start the console with store-node N");

	std::lock_guard<std::mutex> g(lock_);
	if (!s_) {
		ds_store_config cfg{};
		cfg.masters = c_.store_masters.c_str();
		cfg.node_id = c_.store_node;
		cfg.segment_size = 0;	// a reader: no memory of ours in the pool
		cfg.threads = 1;
		cfg.timeout_ms = 10000;
		int ret = ds_store_open(&cfg, &s_);
		if (ret < 0) {
			const char *m = ds_store_errmsg(s_);
			std::string w = m && *m ? m : strerror(-ret);
			if (s_)
				ds_store_close(s_, 0);
			s_ = nullptr;
			raise(502, "cannot join the store at " + c_.store_masters + " as node " +
			      std::to_string(c_.store_node) + ": " + w);
		}
	}
	ds_store_object_list *l = nullptr;
	int ret = ds_store_list(s_, prefix.c_str(), after.empty() ? nullptr : after.c_str(), limit, &l);
	if (ret < 0) {
		const char *m = ds_store_errmsg(s_);
		std::string w = m && *m ? m : strerror(-ret);
		// the next request joins anew (a master that moved, a node
		// that went)
		ds_store_close(s_, 0);
		s_ = nullptr;
		raise(502, "cannot list the objects at " + c_.store_masters + ": " + w);
	}
	json objs = json::array();
	std::string last;
	for (size_t i = 0; i < l->count; i++) {
		const ds_store_object_info &o = l->objects[i];
		json r = dsctl::object_record(o);
		r.erase("expires_ns");
		r["expires"] = o.expires_ns ? json(dsctl::utc_string(o.expires_ns)) : json(nullptr);
		objs.push_back(r);
		last.assign(o.key, strnlen(o.key, sizeof(o.key)));
	}
	bool more = l->more && l->count;
	ds_store_list_free(l);
	return { { "prefix", dsctl::key_string(prefix) },
		 { "objects", objs },
		 { "more", more },
		 { "next", more ? json(hex_of(last)) : json(nullptr) } };
}

}  // namespace dsui
