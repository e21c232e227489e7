// SPDX-License-Identifier: BSD-2-Clause
// The cluster view: nodes, peers, segments and the token cache, as
// "dsctl -j" prints them (the same record functions), and changes to the
// cache's parameters (admins only, parsed as "dsctl cache set" parses
// them, and audited); and Slope's ranges and migrations, as the module
// shows them to dsctl slope show.
#include <algorithm>
#include <cerrno>

#include "dsctl.hpp"
#include "ui.hpp"

namespace dsui {

namespace {

struct no_context {
	std::string what;
};

dsmem::context open_ctx()
{
	auto ctx = dsmem::context::open();
	if (!ctx)
		throw no_context{ ctx.err().what() };
	return std::move(ctx).value();
}

void check(int ret, const dsmem::context &ctx, const std::string &doing)
{
	if (ret >= 0)
		return;
	try {
		dsctl::check(ret, ctx, doing);
	} catch (const dsctl::failure &f) {
		// what the kernel refused is the client's error; the rest ours
		raise(ret == -EINVAL || ret == -ERANGE || ret == -EBUSY ? 400 :
		      ret == -EPERM || ret == -EACCES ? 403 : 500, f.what);
	}
}

}  // namespace

json cluster_get()
{
	json out = { { "module", false } };

	try {
		dsmem::context ctx = open_ctx();
		dsctl::c_array<ds_node_info> nodes;
		dsctl::c_array<ds_peer_info> peers;
		dsctl::c_array<ds_seg_info> segs;
		auto cache = std::make_unique<ds_cache_info>();

		check(ds_node_list(ctx.get(), &nodes.data, &nodes.count), ctx, "cannot list nodes");
		check(ds_peer_list(ctx.get(), 0, &peers.data, &peers.count), ctx, "cannot list peers");
		check(ds_seg_list(ctx.get(), 0, &segs.data, &segs.count), ctx, "cannot list segments");
		check(ds_cache_get(ctx.get(), cache.get()), ctx, "cannot read the token cache");
		out["module"] = true;
		out["nodes"] = json::array();
		for (const auto &n : nodes)
			out["nodes"].push_back(dsctl::node_record(n));
		out["peers"] = json::array();
		for (const auto &p : peers)
			out["peers"].push_back(dsctl::peer_record(p));
		out["segments"] = json::array();
		for (const auto &sg : segs)
			out["segments"].push_back(dsctl::seg_record(sg));
		out["cache"] = dsctl::cache_record(*cache);
	} catch (const no_context &e) {
		out["error"] = e.what;
	} catch (const http_error &e) {
		out["error"] = e.what;
	}
	return out;
}

namespace {

// How far a migration is, 0 to 1: the prefill's units sent over the
// object's (capped: later rounds send dirty units again), then the pull's
// units pulled over the dirty ones; none for a failed one.
json mig_progress(const ds_slope_mig_info &m)
{
	switch (m.state) {
	case DS_SLOPE_MIG_DONE:
		return 1.0;
	case DS_SLOPE_MIG_FAILED:
		return nullptr;
	case DS_SLOPE_MIG_HANDED_OVER:
		return m.dirty_units ? dsctl::round_to(std::min(1.0, double(m.pulled_units) /
							      double(m.dirty_units)), 4) : 1.0;
	default: {
		unsigned shift = m.unit_shift >= 12 && m.unit_shift < 40 ? m.unit_shift : 12;
		uint64_t units = (m.pages + (uint64_t{ 1 } << (shift - 12)) - 1) >> (shift - 12);
		if (!units)
			return nullptr;
		return dsctl::round_to(std::min(1.0, double(m.sent_units) / double(units)), 4);
	}
	}
}

// What ds_slope_range_list() filled, released with it.
struct slope_list {
	ds_slope_ranges l{};

	slope_list() = default;
	slope_list(const slope_list &) = delete;
	slope_list &operator=(const slope_list &) = delete;
	~slope_list() { ds_slope_range_list_free(&l); }
};

}  // namespace

json cluster_slope()
{
	json out = { { "module", false } };

	try {
		dsmem::context ctx = open_ctx();
		slope_list list;
		check(ds_slope_range_list(ctx.get(), 0, &list.l), ctx, "cannot list the Slope ranges");
		out["module"] = true;
		// each node's share: its pages, its leases, the objects it holds
		json nodes = json::array();
		for (size_t i = 0; i < list.l.nranges; i++) {
			const ds_slope_range_info &r = list.l.ranges[i];
			uint64_t objects = 0, object_pages = 0;
			for (size_t k = 0; k < list.l.nobjects; k++)
				if (list.l.objects[k].node_id == r.node_id) {
					objects++;
					object_pages += list.l.objects[k].pages;
				}
			uint64_t migs = 0;
			for (size_t k = 0; k < list.l.nmigs; k++)
				migs += list.l.migs[k].node_id == r.node_id;
			nodes.push_back({ { "node", r.node_id },
					  { "pages", r.pages },
					  { "leases_held", r.leases_held },
					  { "leases_free", r.leases_free },
					  { "objects", objects },
					  { "object_pages", object_pages },
					  { "migrations", migs } });
		}
		// each migration as dsctl slope show prints it, at each end
		json migs = json::array();
		for (size_t k = 0; k < list.l.nmigs; k++) {
			const ds_slope_mig_info &m = list.l.migs[k];
			json r = { { "node", m.node_id } };
			r.update(dsctl::slope_mig_record(m));
			r["progress"] = mig_progress(m);
			migs.push_back(r);
		}
		out["nodes"] = nodes;
		out["migrations"] = migs;
	} catch (const no_context &e) {
		out["error"] = e.what;
	} catch (const http_error &e) {
		out["error"] = e.what;
	}
	return out;
}

json cluster_cache_set(db &d, const session &s, const json &body)
{
	if (!s.admin())
		raise(403, "changing the cache's settings needs the admin role");
	if (!body.is_object() || !body.contains("params") || !body["params"].is_object() ||
	    body["params"].empty())
		raise(400, "params is an object of NAME: VALUE pairs");

	std::vector<std::string> words;
	for (const auto &[name, v] : body["params"].items()) {
		if (!v.is_string() && !v.is_number_unsigned())
			raise(400, "the value of " + name + " is a number or a string such as \"1ms\"");
		words.push_back(name);
		words.push_back(v.is_string() ? v.get<std::string>() : std::to_string(v.get<uint64_t>()));
	}
	dsctl::args a(words);
	dsctl::keywords kw;
	dsctl::cache_settings cs;
	std::string err;
	if (!dsctl::parse_cache_words(a, {}, {}, kw, cs, err))
		raise(400, err);

	dsmem::context ctx = [] {
		try {
			return open_ctx();
		} catch (const no_context &e) {
			raise(503, e.what);
		}
	}();
	auto before = std::make_unique<ds_cache_info>();
	auto after = std::make_unique<ds_cache_info>();
	check(ds_cache_get(ctx.get(), before.get()), ctx, "cannot read the token cache");
	check(ds_cache_set(ctx.get(), cs.params, cs.mask, 0, after.get()), ctx,
	      "cannot set the token cache");
	json was = dsctl::cache_params_record(*before), now = dsctl::cache_params_record(*after);
	auto value_of = [](const json &params, const std::string &name) {
		for (const auto &p : params)
			if (p["name"] == name)
				return p["value"];
		return json(nullptr);
	};
	json changed = json::object();
	for (const auto &[name, v] : body["params"].items())
		changed[name] = { { "from", value_of(was, name) }, { "to", value_of(now, name) } };
	audit(d, s, "changed cache settings " + json_text(body["params"]), changed);
	return dsctl::cache_record(*after);
}

}  // namespace dsui
