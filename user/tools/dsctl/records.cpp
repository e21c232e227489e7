// SPDX-License-Identifier: BSD-2-Clause
#include <cstdio>

#include <linux/dsmem.h>

#include "dsctl.hpp"

namespace dsctl {

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
	static const struct {
		uint64_t bit;
		const char *name;
	} known[] = {
		{ DSMEM_FEAT_DEV_EVENTS, "dev_events" },
		{ DSMEM_FEAT_STATS, "stats" },
	};
	record names = record::array();

	for (const auto &k : known)
		if (features & k.bit) {
			names.push_back(k.name);
			features &= ~k.bit;
		}
	for (int b = 0; b < 64; b++)
		if (features & (1ULL << b))
			names.push_back("bit" + std::to_string(b));
	return names;
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
	default: r["event"] = "unknown"; return r;
	}
	r.update(dev_record(ev.dev));
	return r;
}

}  // namespace dsctl
