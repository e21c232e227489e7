// SPDX-License-Identifier: BSD-2-Clause
#include <cinttypes>
#include <cstdio>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>

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
		{ DSMEM_FEAT_RDM, "rdm" },
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

record node_record(const ds_node_info &n)
{
	record r;

	r["node"] = n.id;
	r["dev"] = n.dev_name;
	r["port"] = n.port;
	r["peers"] = n.peer_count;
	r["segments"] = n.seg_count;
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
	r["connects"] = p.connects;
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
	default: r["event"] = "unknown"; return r;
	}
	r.update(dev_record(ev.dev));
	return r;
}

}  // namespace dsctl
