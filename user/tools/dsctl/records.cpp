// SPDX-License-Identifier: BSD-2-Clause
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

struct bit_name {
	uint64_t bit;
	const char *name;
};

// The names of the bits set in flags: the table's, then "bitN" for any other.
record bit_names(uint64_t flags, std::span<const bit_name> known)
{
	record names = record::array();

	for (const auto &k : known)
		if (flags & k.bit) {
			names.push_back(k.name);
			flags &= ~k.bit;
		}
	for (int b = 0; b < 64; b++)
		if (flags & (1ULL << b))
			names.push_back("bit" + std::to_string(b));
	return names;
}

}  // namespace

std::string port_state_name(uint8_t state)
{
	static const char *const names[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
	};
	if (state < sizeof(names) / sizeof(names[0]))
		return names[state];
	return "UNKNOWN(" + std::to_string(state) + ")";
}

std::string node_type_name(uint8_t type)
{
	switch (type) {
	case 1: return "ca";
	case 2: return "switch";
	case 3: return "router";
	case 4: return "rnic";
	case 5: return "usnic";
	case 6: return "usnic_udp";
	case 7: return "unspecified";
	default: return "unknown";
	}
}

// As rdma(8) prints GUIDs: four groups of four hex digits.
std::string guid_string(uint64_t guid)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x",
		 static_cast<unsigned>(guid >> 48) & 0xffff,
		 static_cast<unsigned>(guid >> 32) & 0xffff,
		 static_cast<unsigned>(guid >> 16) & 0xffff,
		 static_cast<unsigned>(guid) & 0xffff);
	return buf;
}

record features_record(uint64_t features)
{
	static const bit_name known[] = {
		{ DSMEM_FEAT_DEV_EVENTS, "dev_events" },
		{ DSMEM_FEAT_STATS, "stats" },
		{ DSMEM_FEAT_RDM, "rdm" },
		{ DSMEM_FEAT_TOKENCACHE, "tokencache" },
		{ DSMEM_FEAT_SLOPE, "slope" },
		{ DSMEM_FEAT_RINGS, "rings" },
		{ DSMEM_FEAT_MULTIPATH, "multipath" },
		{ DSMEM_FEAT_NUMA, "numa" },
		{ DSMEM_FEAT_SUBMIT_TIMEOUT, "submit_timeout" },
		{ DSMEM_FEAT_NOT_AFTER, "not_after" },
		{ DSMEM_FEAT_NODE_OWNER, "node_owner" },
		{ DSMEM_FEAT_NODE_USERS, "node_users" },
	};
	return bit_names(features, known);
}

std::string link_layer_name(uint8_t ll)
{
	switch (ll) {
	case 1: return "InfiniBand";
	case 2: return "Ethernet";
	default: return "unspecified";
	}
}

record dev_record(const ds_dev_info &d)
{
	static const char *const atomic[] = { "none", "hca", "glob" };
	record r;

	r["ifindex"] = d.index;
	r["ifname"] = d.name;
	r["node_type"] = node_type_name(d.node_type);
	if (d.fw_version[0])
		r["fw"] = d.fw_version;
	r["node_guid"] = guid_string(d.node_guid);
	r["ports"] = d.port_count;
	r["max_qp"] = d.max_qp;
	r["max_cqe"] = d.max_cqe;
	r["max_mr"] = d.max_mr;
	r["max_qp_wr"] = d.max_qp_wr;
	r["atomic"] = d.atomic_cap < 3 ? atomic[d.atomic_cap] : "unknown";
	record ports = record::array();
	for (unsigned i = 0; i < d.nports && i < DS_DEV_PORTS_MAX; i++) {
		const ds_port_info &p = d.ports[i];
		record pr;
		pr["port"] = p.index;
		pr["state"] = port_state_name(p.state);
		if (p.active_mtu)
			pr["mtu"] = p.active_mtu;
		pr["link_layer"] = link_layer_name(p.link_layer);
		if (p.netdev[0])
			pr["netdev"] = p.netdev;
		ports.push_back(pr);
	}
	r["port_list"] = ports;
	return r;
}

std::string addr_string(uint64_t addr)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	return buf;
}

std::string peer_state_name(uint8_t state)
{
	switch (state) {
	case DSMEM_PEER_CONNECTING: return "connecting";
	case DSMEM_PEER_UP: return "up";
	case DSMEM_PEER_DOWN: return "down";
	case DSMEM_PEER_ERROR: return "error";
	default: return "unknown(" + std::to_string(state) + ")";
	}
}

std::string perm_string(uint8_t perm)
{
	std::string s;

	if (perm & DSMEM_PERM_READ)
		s += 'r';
	if (perm & DSMEM_PERM_WRITE)
		s += 'w';
	if (perm & ~DSMEM_PERM_ALL) {
		char buf[8];
		snprintf(buf, sizeof(buf), "0x%x", perm);
		return buf;
	}
	return s.empty() ? "none" : s;
}

std::string translate_name(uint8_t translate)
{
	switch (translate) {
	case DSMEM_TRANSLATE_SEGMENT: return "segment";
	case DSMEM_TRANSLATE_PAGES: return "pages";
	default: return "unknown(" + std::to_string(translate) + ")";
	}
}

record node_record(const ds_node_info &n, std::span<const ds_node_dev> devs)
{
	record r;

	r["node"] = n.id;
	// someone else's: its owner, group and mode are all one is told
	if (n.flags & DS_NODE_F_NOT_YOURS) {
		r["access"] = "none";
		return r;
	}
	r["dev"] = n.dev_name;	// the first device, as before node-devs
	if (!devs.empty()) {
		record list = record::array();
		for (const auto &d : devs) {
			record dr;
			dr["index"] = d.index;
			dr["name"] = d.name;
			dr["numa"] = d.numa;
			list.push_back(dr);
		}
		r["devs"] = list;
	}
	r["port"] = n.port;
	r["peers"] = n.peer_count;
	r["segments"] = n.seg_count;
	if (n.key[0])
		r["key"] = n.key;
	else
		r["insecure"] = true;	// its peers are not authenticated
	r["accept"] = n.accept == DS_ACCEPT_KEYED ? "keyed" : "peers";
	return r;
}

record peer_record(const ds_peer_info &p)
{
	record r;

	r["node"] = p.node_id;
	r["peer"] = p.id;
	r["addr"] = p.addr;
	r["port"] = p.port;
	if (p.remote_node)
		r["remote_node"] = p.remote_node;
	else
		r["remote_node"] = nullptr;
	r["state"] = peer_state_name(p.state);
	if (p.passive)
		r["passive"] = true;
	if (p.listen)
		r["listen"] = true;
	r["connects"] = p.connects;
	if (p.paths > 1)
		r["paths"] = p.paths;
	if (p.last_errno)
		r["errno"] = p.last_errno;
	record rsegs = record::array();
	unsigned n = p.nrsegs < DS_PEER_RSEGS_MAX ? p.nrsegs : DS_PEER_RSEGS_MAX;
	for (unsigned i = 0; i < n; i++) {
		const ds_remote_seg &s = p.rsegs[i];
		record sr;
		sr["node"] = DSMEM_GADDR_NODE(s.addr);
		sr["seg"] = DSMEM_GADDR_SEG(s.addr);
		sr["addr"] = addr_string(s.addr);
		sr["size"] = s.size;
		sr["perm"] = perm_string(s.perm);
		sr["keys"] = s.keys;
		rsegs.push_back(sr);
	}
	if (p.rseg_total > n)
		r["remote_segs_total"] = p.rseg_total;
	r["remote_segs"] = rsegs;
	return r;
}

record seg_record(const ds_seg_info &s)
{
	record r;

	r["node"] = s.node_id;
	r["seg"] = s.id;
	r["size"] = s.size;
	r["addr"] = addr_string(s.addr);
	r["used"] = s.used;
	r["page_size"] = s.page_size;
	r["numa"] = s.numa < 0 ? -1 : s.numa;
	r["translate"] = translate_name(s.translate);
	record grants = record::array();
	unsigned n = s.ngrants < DS_SEG_GRANTS_MAX ? s.ngrants : DS_SEG_GRANTS_MAX;
	for (unsigned i = 0; i < n; i++) {
		record g;
		g["node"] = s.grants[i].remote_node;
		g["perm"] = perm_string(s.grants[i].perm);
		grants.push_back(g);
	}
	if (s.grant_total > n)
		r["grants_total"] = s.grant_total;
	r["grants"] = grants;
	return r;
}

record rdm_alloc_record(uint32_t node, uint32_t remote_node, uint64_t size,
			uint64_t va, uint64_t pa)
{
	record r;

	r["node"] = node;
	r["remote_node"] = remote_node;
	r["va"] = addr_string(va);
	r["pa"] = addr_string(pa);
	r["size"] = size;
	return r;
}

record rdm_data_record(uint64_t addr, const uint8_t *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	record r;
	std::string hex;

	hex.reserve(2 * len);
	for (size_t i = 0; i < len; i++) {
		hex += digits[data[i] >> 4];
		hex += digits[data[i] & 15];
	}
	r["addr"] = addr_string(addr);
	r["len"] = static_cast<uint64_t>(len);
	r["data"] = hex;
	return r;
}

std::string handle_string(uint32_t handle)
{
	char buf[16];
	snprintf(buf, sizeof(buf), "0x%08" PRIx32, handle);
	return buf;
}

std::string tier_name(uint8_t tier)
{
	switch (tier) {
	case DS_TIER_L1: return "l1";
	case DS_TIER_L2: return "l2";
	case DS_TIER_L3: return "l3";
	default: return "unknown(" + std::to_string(tier) + ")";
	}
}

record token_flags_record(uint8_t flags)
{
	static const bit_name known[] = {
		{ DS_TOKEN_PINNED, "pinned" },
		{ DS_TOKEN_DIRTY, "dirty" },
		{ DS_TOKEN_MIGRATING, "migrating" },
	};
	return bit_names(flags, known);
}

std::string token_type_name(uint8_t type)
{
	const char *name = ds_token_type_name(type);
	return name ? name : "unknown(" + std::to_string(type) + ")";
}

record token_record(const ds_token_info &t)
{
	record r;

	r["handle"] = handle_string(t.handle);
	r["type"] = token_type_name(t.type);
	r["index"] = t.index;
	r["layer"] = tier_name(t.layer);
	r["flags"] = token_flags_record(t.flags);
	r["version"] = t.version;
	if (t.node)
		r["node"] = t.node;
	else
		r["node"] = nullptr;
	r["object"] = std::string(t.object, strnlen(t.object, sizeof(t.object)));
	r["hits"] = t.hits;
	r["accesses"] = t.accesses;
	// the layout is the module's: its table names the fields
	record fields = record::object();
	const char *name;
	uint32_t value;
	for (unsigned int i = 0; ds_token_field(&t, i, &name, &value) == 0; i++)
		fields[name] = value;
	r["fields"] = fields;
	return r;
}

std::string cache_mode_name(uint64_t mode)
{
	switch (mode) {
	case DS_CACHE_FIXED: return "fixed";
	case DS_CACHE_ADAPTIVE: return "adaptive";
	default: return "unknown(" + std::to_string(mode) + ")";
	}
}

record ratio_record(uint64_t part, uint64_t whole)
{
	if (!whole)
		return nullptr;
	return round_to(static_cast<double>(part) / static_cast<double>(whole), 4);
}

record cache_params_record(const ds_cache_info &c)
{
	record params = record::array();
	unsigned int n = c.nparams < DS_CACHE_PARAMS_MAX ? c.nparams : DS_CACHE_PARAMS_MAX;

	for (unsigned int i = 0; i < n; i++) {
		ds_cache_param_desc d;
		if (ds_cache_param_describe(i, &d))
			break;	// a newer module's, which this library cannot name
		record p;
		p["name"] = d.name;
		if (i == DS_CACHE_P_MODE)
			p["value"] = cache_mode_name(c.params[i]);
		else
			p["value"] = c.params[i];
		if (d.unit[0])
			p["unit"] = d.unit;
		// thresholds: as set, and as the adaptive mode moved them
		if (i == DS_CACHE_P_PROMOTE_L1)
			p["in_effect"] = c.promote_l1;
		if (i == DS_CACHE_P_PROMOTE_L2)
			p["in_effect"] = c.promote_l2;
		params.push_back(p);
	}
	return params;
}

record tier_record(const ds_cache_tier &t)
{
	record r;

	r["tier"] = tier_name(t.id);
	r["entries"] = t.entries;
	if (t.capacity)
		r["capacity"] = t.capacity;
	else
		r["capacity"] = nullptr;	// unbounded
	r["bytes"] = t.bytes;
	r["numa"] = t.numa < 0 ? -1 : t.numa;
	r["hits"] = t.hits;
	r["misses"] = t.misses;
	r["hit_ratio"] = ratio_record(t.hits, t.hits + t.misses);
	r["promotions"] = t.promotions;
	r["demotions"] = t.demotions;
	r["evictions"] = t.evictions;
	r["cost_mean_ns"] = t.cost_mean_ns;
	r["cost_p99_ns"] = t.cost_p99_ns;
	return r;
}

record trace_state_record(const ds_cache_info &c)
{
	record r;

	r["active"] = c.trace_active != 0;
	r["records"] = c.trace_records;
	r["dropped"] = c.trace_dropped;
	return r;
}

record cache_record(const ds_cache_info &c)
{
	record r;

	r["entries"] = c.entries;
	r["pinned"] = c.pinned;
	r["queued"] = c.queued;
	r["migrations_per_sec"] = c.migrate_rate;
	r["migration"] = {
		{ "per_sec", c.migrate_rate },
		{ "latency_mean_ns", c.migrate_lat_mean_ns },
		{ "latency_p99_ns", c.migrate_lat_p99_ns },
		{ "dma_bytes_per_sec", c.dma_rate },
		{ "dma_prefetch_bytes_per_sec", c.dma_prefetch_rate },
	};
	r["params"] = cache_params_record(c);
	record tiers = record::array();
	for (const auto &t : c.tiers)
		if (t.id)
			tiers.push_back(tier_record(t));
	r["tiers"] = tiers;
	record counters = record::object();
	unsigned int n = c.nstats < DS_CACHE_STATS_MAX ? c.nstats : DS_CACHE_STATS_MAX;
	for (unsigned int i = 0; i < n; i++)
		counters[std::string(c.stats[i].name, strnlen(c.stats[i].name, DS_NAME_MAX))] =
			c.stats[i].value;
	if (c.stat_total > n)
		r["counters_total"] = c.stat_total;
	r["counters"] = counters;
	r["trace"] = trace_state_record(c);
	return r;
}

record trace_stop_record(const ds_trace_info &t)
{
	record r;

	r["records"] = t.records;
	r["dropped"] = t.dropped;
	if (t.error) {
		r["errno"] = t.error;
		r["error"] = strerror(static_cast<int>(t.error));
	}
	return r;
}

record bench_record(uint32_t qps, uint32_t ops, uint32_t seed,
		    const ds_cache_bench_result &b)
{
	record r;

	r["qps"] = qps;
	r["ops"] = ops;
	r["seed"] = seed;
	r["accesses"] = b.accesses;
	r["hits_l1"] = b.hits_l1;
	r["hits_l2"] = b.hits_l2;
	r["hits_l3"] = b.hits_l3;
	r["hit_ratio_l1"] = ratio_record(b.hits_l1, b.accesses);
	r["modeled_ns"] = b.modeled_ns;
	if (b.accesses)
		r["modeled_mean_ns"] = b.modeled_ns / b.accesses;
	else
		r["modeled_mean_ns"] = nullptr;
	r["l1_hit_mean_ns"] = b.l1_hit_mean_ns;
	r["l1_hit_p99_ns"] = b.l1_hit_p99_ns;
	r["miss_mean_ns"] = b.miss_mean_ns;
	r["miss_p99_ns"] = b.miss_p99_ns;
	r["migrations"] = b.migrations;
	return r;
}

std::string slope_mig_state_name(uint8_t state)
{
	switch (state) {
	case DSMEM_SLOPE_MIG_PREFILL: return "prefill";
	case DSMEM_SLOPE_MIG_STOPPING: return "stopping";
	case DSMEM_SLOPE_MIG_HANDED_OVER: return "handed_over";
	case DSMEM_SLOPE_MIG_DONE: return "done";
	case DSMEM_SLOPE_MIG_FAILED: return "failed";
	case DSMEM_SLOPE_MIG_INCOMING: return "incoming";
	default: return "unknown(" + std::to_string(state) + ")";
	}
}

namespace {

// A node id the module did not report (0) is not known.
record node_or_null(uint32_t node)
{
	return node ? record(node) : record(nullptr);
}

// A phase's time: 0 until the phase has ended.
record phase_ns(uint64_t ns)
{
	return ns ? record(ns) : record(nullptr);
}

}  // namespace

record slope_lease_record(const ds_slope_lease_info &l)
{
	record r;

	r["base"] = addr_string(l.base);
	r["holder"] = node_or_null(l.holder);
	r["responsible"] = node_or_null(l.responsible);
	// the pages of a lease held by another node are that node's to count
	r["pages"] = l.held ? record(l.used) : record(nullptr);
	return r;
}

record slope_object_record(const ds_slope_object_info &o)
{
	record r;

	r["addr"] = addr_string(o.addr);
	r["pages"] = o.pages;
	r["runs"] = o.runs;
	return r;
}

record slope_mig_record(const ds_slope_mig_info &m)
{
	record r;

	r["id"] = m.id;
	r["direction"] = m.incoming ? "in" : "out";
	r["peer"] = node_or_null(m.peer);
	r["state"] = slope_mig_state_name(m.state);
	if (m.error) {
		r["errno"] = m.error;
		r["error"] = strerror(static_cast<int>(m.error));
	}
	r["cookie"] = addr_string(m.cookie);
	r["pages"] = m.pages;
	if (m.unit_shift && m.unit_shift < 64)
		r["unit"] = uint64_t{1} << m.unit_shift;
	else
		r["unit"] = nullptr;
	r["rounds"] = m.rounds;
	r["sent"] = m.sent_units;
	r["dirty"] = m.dirty_units;
	r["pulled"] = m.pulled_units;
	r["failed"] = m.failed_units;
	r["fault_waits"] = m.fault_waits;
	r["prefill_ns"] = phase_ns(m.prefill_ns);
	r["stop_ns"] = phase_ns(m.stop_ns);
	r["no_owner_ns"] = phase_ns(m.no_owner_ns);
	r["pull_ns"] = phase_ns(m.pull_ns);
	r["total_ns"] = m.total_ns;
	r["first_round_ns"] = phase_ns(m.first_round_ns);
	return r;
}

std::vector<record> slope_records(const ds_slope_ranges &l)
{
	std::vector<record> nodes;
	std::vector<uint32_t> ids;

	// a node's record, made when it first appears: by its summary, or by
	// a lease or migration if the summary is missing
	auto node_of = [&](uint32_t id) -> record & {
		for (size_t i = 0; i < ids.size(); i++)
			if (ids[i] == id)
				return nodes[i];
		record r;
		r["node"] = id;
		r["base"] = nullptr;
		r["size"] = nullptr;
		r["pages"] = nullptr;
		r["leases_held"] = nullptr;
		r["leases_free"] = nullptr;
		r["leases"] = record::array();
		r["objects"] = record::array();
		r["migrations"] = record::array();
		ids.push_back(id);
		nodes.push_back(r);
		return nodes.back();
	};
	for (size_t i = 0; i < l.nranges; i++) {
		const ds_slope_range_info &s = l.ranges[i];
		record &r = node_of(s.node_id);
		r["base"] = addr_string(s.base);
		r["size"] = s.size;
		r["pages"] = s.pages;
		r["leases_held"] = s.leases_held;
		r["leases_free"] = s.leases_free;
	}
	for (size_t i = 0; i < l.nleases; i++)
		node_of(l.leases[i].node_id)["leases"].push_back(slope_lease_record(l.leases[i]));
	for (size_t i = 0; i < l.nobjects; i++)
		node_of(l.objects[i].node_id)["objects"].push_back(
			slope_object_record(l.objects[i]));
	for (size_t i = 0; i < l.nmigs; i++)
		node_of(l.migs[i].node_id)["migrations"].push_back(slope_mig_record(l.migs[i]));
	return nodes;
}

record event_record(const ds_event &ev)
{
	record r;

	switch (ev.type) {
	case DS_EVENT_DEV_NEW: r["event"] = "dev_new"; break;
	case DS_EVENT_DEV_DEL:	// a departing device is named, not described
		r["event"] = "dev_del";
		r["ifindex"] = ev.dev.index;
		r["ifname"] = ev.dev.name;
		return r;
	case DS_EVENT_DEV_RENAME: r["event"] = "dev_rename"; break;
	case DS_EVENT_MODULE_LOADED: r["event"] = "module_loaded"; return r;
	case DS_EVENT_MODULE_UNLOADED: r["event"] = "module_unloaded"; return r;
	case DS_EVENT_NODE_NEW:
		r["event"] = "node_new";
		r.update(node_record(ev.node));
		return r;
	case DS_EVENT_NODE_DEL:	// departing objects are named, not described
		r["event"] = "node_del";
		r["node"] = ev.node.id;
		return r;
	case DS_EVENT_PEER_NEW:
	case DS_EVENT_PEER_STATE:
		r["event"] = ev.type == DS_EVENT_PEER_NEW ? "peer_new" : "peer_state";
		r.update(peer_record(ev.peer));
		return r;
	case DS_EVENT_PEER_DEL:
		r["event"] = "peer_del";
		r["node"] = ev.peer.node_id;
		r["peer"] = ev.peer.id;
		return r;
	case DS_EVENT_SEG_NEW:
		r["event"] = "seg_new";
		r.update(seg_record(ev.seg));
		return r;
	case DS_EVENT_SEG_DEL:
		r["event"] = "seg_del";
		r["node"] = ev.seg.node_id;
		r["seg"] = ev.seg.id;
		return r;
	case DS_EVENT_CACHE_SET:
		r["event"] = "cache_set";
		r.update(cache_record(ev.cache));
		return r;
	case DS_EVENT_TRACE_START:
		r["event"] = "trace_start";
		return r;
	case DS_EVENT_TRACE_STOP:
		r["event"] = "trace_stop";
		r.update(trace_stop_record(ev.trace));
		return r;
	case DS_EVENT_SLOPE_MIG:
		r["event"] = "slope_mig";
		r["node"] = ev.slope_mig.node_id;
		r.update(slope_mig_record(ev.slope_mig));
		return r;
	default: r["event"] = "unknown"; return r;
	}
	r.update(dev_record(ev.dev));
	return r;
}

}  // namespace dsctl
