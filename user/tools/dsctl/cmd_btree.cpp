// SPDX-License-Identifier: BSD-2-Clause
// dsctl btree: the B+tree on disaggregated memory (libdsuser's ds_btree_*).
//   btree create node N segs ADDR[,ADDR...] [layout general|seed]
//                [node-size B] [value-size B] [key-max N] [replicas R]
//   btree [show] node N tree ADDR        | btree drop node N tree ADDR
//   btree members node N tree ADDR       | btree verify node N tree ADDR
//   btree spare node N tree ADDR segs ADDR[,ADDR...]
//   btree get|del node N tree ADDR key K | btree put ... key K value V
//   btree scan node N tree ADDR [start K] [limit N]
//   btree load ..., btree bench ...: cmd_btree_bench.cpp
// A tree is named by the global address of its superblock; every command
// but create and drop opens it through the local node N (its compute node).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include <linux/dsmem.h>

#include "btree_cli.hpp"

namespace dsctl {

namespace btree_cli {

bool second_of(const keywords &kw, const char *key, const char *first, const char *second,
	       bool def)
{
	const std::string *v = kw.get(key);
	if (!v)
		return def;
	if (matches(*v, first))
		return false;
	if (matches(*v, second))
		return true;
	fail(std::string(key) + " needs \"" + first + "\" or \"" + second + "\"");
}

uint32_t node_of(const keywords &kw)
{
	return need_id(kw, "node", DSMEM_NODE_ID_MAX, "node id", "btree");
}

uint64_t tree_of(const keywords &kw)
{
	uint64_t a;
	if (!parse_addr(need(kw, "tree", "btree"), a))
		fail("tree needs the tree's address in hexadecimal, such as 0x2001000000000");
	return a;
}

std::string through(uint64_t addr, uint32_t node)
{
	return "tree " + addr_string(addr) + " through node " + std::to_string(node);
}

std::string btree_error(const dsmem::error &err, uint32_t node, const char *absent)
{
	if (err.code == -ENOENT) {
		auto ctx = dsmem::context::open();
		if (!ctx)
			return ctx.err().what();
		ds_node_info n{};
		if (int r = ds_node_get(ctx.value().get(), node, &n))
			return dsmem::error{ r, ds_ctx_errmsg(ctx.value().get()) }.what();
		if (absent)
			return absent;
	}
	return err.what();
}

dsmem::btree open_tree(uint32_t node, uint64_t addr, const ds_btree_open_opts &o)
{
	auto t = dsmem::btree::open(node, addr, o);
	if (!t)
		fail("cannot open " + through(addr, node) + ": " + btree_error(t.err(), node));
	return std::move(t).value();
}

struct ds_btree_info describe(const dsmem::btree &t)
{
	auto i = t.info();
	if (!i)
		fail(i.err(), "cannot read the tree's superblock");
	return i.value();
}

record stats_record(const struct ds_btree_stats &s)
{
	record r;
	r["lookups"] = s.lookups;
	r["inserts"] = s.inserts;
	r["updates"] = s.updates;
	r["deletes"] = s.deletes;
	r["scans"] = s.scans;
	r["rtt_read"] = s.rtt_read;
	r["rtt_lock"] = s.rtt_lock;
	r["rtt_write"] = s.rtt_write;
	r["rtt_other"] = s.rtt_other;
	r["bytes_read"] = s.bytes_read;
	r["bytes_written"] = s.bytes_written;
	r["cache_hits"] = s.cache_hits;
	r["cache_misses"] = s.cache_misses;
	r["cache_stale"] = s.cache_stale;
	r["lock_retries"] = s.lock_retries;
	r["lock_steals"] = s.lock_steals;
	r["read_retries"] = s.read_retries;
	r["corrupt"] = s.corrupt;
	r["sibling_hops"] = s.sibling_hops;
	r["restarts"] = s.restarts;
	r["splits"] = s.splits;
	r["merges"] = s.merges;
	r["redistributions"] = s.redistributions;
	r["root_changes"] = s.root_changes;
	r["replica_fallbacks"] = s.replica_fallbacks;
	r["members_excluded"] = s.members_excluded;
	r["members_repaired"] = s.members_repaired;
	r["read_timeouts"] = s.read_timeouts;
	return r;
}

std::string key_word(const std::string &word, const char *name)
{
	std::string k;

	if (word.rfind("hex:", 0) == 0) {
		const std::string h = word.substr(4);
		if (h.size() % 2 || h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
			fail(std::string(name) + " hex:... needs pairs of hexadecimal digits");
		for (size_t i = 0; i < h.size(); i += 2)
			k.push_back(static_cast<char>(std::stoul(h.substr(i, 2), nullptr, 16)));
	} else if (word.rfind("text:", 0) == 0) {
		k = word.substr(5);
	} else {
		k = word;
	}
	if (k.empty() || k.size() > DS_BTREE_KEY_MAX)
		fail(std::string(name) + " needs 1 to " + std::to_string(DS_BTREE_KEY_MAX) +
		     " bytes");
	return k;
}

std::string tree_key(const dsmem::btree &t, const std::string &word, const char *name)
{
	std::string k = key_word(word, name);
	uint32_t max = t.key_max();

	if (max) {
		if (k.size() > max)
			fail(std::string(name) + " is " + std::to_string(k.size()) +
			     " bytes: this tree's keys have " + std::to_string(max) + " at most");
		return k;
	}
	uint64_t x;
	if (word.rfind("hex:", 0) == 0 && k.size() == 8)
		return k;
	if (!parse_u64(word, x))
		fail(std::string(name) + " needs an unsigned 64-bit number (this tree's keys are integers)");
	std::string be(8, '\0');
	for (int i = 0; i < 8; i++)
		be[static_cast<size_t>(i)] = static_cast<char>(x >> (56 - 8 * i));
	return be;
}

void put_key(record &r, const dsmem::btree &t, const std::string &key)
{
	if (!t.key_max() && key.size() == 8) {
		uint64_t x = 0;
		for (char c : key)
			x = x << 8 | static_cast<uint8_t>(c);
		r["key"] = x;
		return;
	}
	// printable, and not read back as another key (a word beginning
	// with hex: or text: means something else)
	bool text = key.rfind("hex:", 0) != 0 && key.rfind("text:", 0) != 0;
	for (char c : key)
		text &= c >= 0x20 && c < 0x7f;
	if (text) {
		r["key"] = key;
		return;
	}
	static const char hex[] = "0123456789abcdef";
	std::string h;
	for (char c : key) {
		h.push_back(hex[static_cast<uint8_t>(c) >> 4]);
		h.push_back(hex[static_cast<uint8_t>(c) & 15]);
	}
	r["key_hex"] = h;
}

}  // namespace btree_cli

namespace {

using namespace btree_cli;

const char btree_usage[] =
	"Usage: dsctl btree create node N segs ADDR[,ADDR...] [layout { general | seed }]\n"
	"                          [node-size BYTES] [value-size BYTES] [key-max N]\n"
	"                          [replicas R]\n"
	"       dsctl btree [show] node N tree ADDR\n"
	"       dsctl btree members node N tree ADDR\n"
	"       dsctl btree verify node N tree ADDR\n"
	"       dsctl btree spare node N tree ADDR segs ADDR[,ADDR...]\n"
	"       dsctl btree drop node N tree ADDR\n"
	"       dsctl btree get node N tree ADDR key K\n"
	"       dsctl btree put node N tree ADDR key K value V\n"
	"       dsctl btree del node N tree ADDR key K\n"
	"       dsctl btree scan node N tree ADDR [start K] [limit N]\n"
	"       dsctl btree load node N tree ADDR count N [order { sorted | random }]\n"
	"                        [threads T] [key-len L]\n"
	"       dsctl btree bench node N[,N...] tree ADDR workload { a | b | c | d | e | f }\n"
	"                         [dist { zipf | uniform }] [theta THETA] [keys N]\n"
	"                         [ops N | time SECONDS] [threads T] [cache BYTES]\n"
	"                         [load { yes | no }] [warmup N] [probe N] [seed N]\n"
	"                         [key-len L] [tolerate { yes | no }] [verify { yes | no }]\n"
	"where  ADDR := 0xHEX   BYTES := NUMBER[K|M|G|T]\n"
	"       K := a number (integer-key trees), or on trees with a key-max: text,\n"
	"            text:TEXT (any text, even one beginning with hex:) or hex:HEX\n"
	"       V := an unsigned 64-bit number (inline values) or a string\n";

std::string layout_name(uint32_t layout)
{
	switch (layout) {
	case DS_BTREE_GENERAL: return "general";
	case DS_BTREE_SEED: return "seed";
	default: return "unknown(" + std::to_string(layout) + ")";
	}
}

record info_record(const struct ds_btree_info &i)
{
	record r;
	r["tree"] = addr_string(i.addr);
	r["layout"] = layout_name(i.layout);
	r["node_size"] = i.node_size;
	r["value_size"] = i.value_size;
	r["inline"] = i.value_size == 8;
	r["keys"] = i.key_max ? "bytes" : "u64";
	r["key_max"] = i.key_max ? i.key_max : 8;
	r["replicas"] = i.replicas;
	r["members_dead"] = i.members_dead;
	r["spares"] = i.spares;
	r["height"] = i.height;
	r["root"] = addr_string(i.root);
	r["nodes"] = i.nodes;
	r["clients"] = i.clients;
	r["client_id"] = i.client_id;
	r["lock_lease_ms"] = i.lock_lease_ms;
	r["cache_bytes"] = i.cache_bytes;
	r["cache_limit"] = i.cache_limit;
	r["cache_entries"] = i.cache_entries;
	record segs = record::array();
	for (uint32_t k = 0; k < i.nsegs && k < DS_BTREE_SEGS_MAX; k++) {
		record s;
		s["seg"] = addr_string(i.segs[k]);
		s["size"] = i.seg_size[k];
		s["used"] = i.seg_used[k];
		segs.push_back(s);
	}
	r["segs"] = segs;
	return r;
}

// A value as a record field: inline ones as numbers, out-of-line ones as
// strings when they are printable text, else as "data" (hex; a hexdump in
// text).
void put_value(record &r, const uint8_t *v, size_t len, uint32_t value_size)
{
	if (value_size == 8) {
		uint64_t x = 0;
		memcpy(&x, v, std::min<size_t>(len, 8));
		r["value"] = x;
		return;
	}
	bool text = true;
	for (size_t i = 0; i < len; i++)
		text &= v[i] >= 0x20 && v[i] < 0x7f;
	if (text) {
		r["value"] = std::string(reinterpret_cast<const char *>(v), len);
		return;
	}
	// bytes as "rdm read" renders them
	r["data"] = rdm_data_record(0, v, len)["data"];
}

// ---- create, show, drop, get, put, del, scan ----------------------------------------

std::vector<uint64_t> segs_of(const keywords &kw)
{
	std::vector<uint64_t> segs;
	for (const std::string &s : split_list(need(kw, "segs", "btree"), ',')) {
		uint64_t a;
		if (!parse_addr(s, a))
			fail("segs needs segment addresses in hexadecimal, separated by commas");
		segs.push_back(a);
	}
	return segs;
}

// What create can tell of the segments before the library sees them: at
// most DS_BTREE_SEGS_MAX groups of `replicas` segments, each member of a
// group on a memory node of its own (a group on one node dies with it).
void check_groups(const std::vector<uint64_t> &segs, const ds_btree_create_opts &o)
{
	const size_t r = o.replicas;

	if (r > 1 && o.layout != DS_BTREE_GENERAL)
		fail("replicas is for layout general only");
	if (segs.size() % r)
		fail("replicas " + std::to_string(r) + " needs the segments in groups of " +
		     std::to_string(r) + ": segs gives " + std::to_string(segs.size()));
	if (segs.size() > DS_BTREE_SEGS_MAX * r)
		fail("segs takes at most " + std::to_string(DS_BTREE_SEGS_MAX) +
		     (r > 1 ? " groups of " + std::to_string(r) + " segments" : " segments"));
	for (size_t g = 0; g < segs.size(); g += r)
		for (size_t i = g; i < g + r; i++)
			for (size_t j = g; j < i; j++)
				if (DSMEM_GADDR_NODE(segs[i]) == DSMEM_GADDR_NODE(segs[j]))
					fail("group " + std::to_string(g / r) +
					     " has two segments on memory node " +
					     std::to_string(DSMEM_GADDR_NODE(segs[i])) +
					     ": each replica needs a memory node of its own");
}

int bt_create(env &e)
{
	keywords kw = take_keywords(e, { "node", "segs", "layout", "node-size", "value-size",
					 "key-max", "replicas" });
	uint32_t node = node_of(kw);
	std::vector<uint64_t> segs = segs_of(kw);
	ds_btree_create_opts o{};
	o.layout = second_of(kw, "layout", "general", "seed", false) ? DS_BTREE_SEED
								    : DS_BTREE_GENERAL;
	o.replicas = static_cast<uint32_t>(u64_arg(kw, "replicas", 1, 1, DS_BTREE_REPLICAS_MAX));
	check_groups(segs, o);
	uint64_t sz;
	if (const std::string *v = kw.get("node-size")) {
		if (!parse_size(*v, sz) || sz < DS_BTREE_NODE_MIN || sz > DS_BTREE_NODE_MAX ||
		    (sz & (sz - 1)))
			fail("node-size needs a power of two from " +
			     std::to_string(DS_BTREE_NODE_MIN) + " to " +
			     std::to_string(DS_BTREE_NODE_MAX));
		o.node_size = static_cast<uint32_t>(sz);
	}
	if (const std::string *v = kw.get("value-size")) {
		if (!parse_size(*v, sz) || sz < 8 || sz > DS_BTREE_VALUE_MAX)
			fail("value-size needs a number of bytes from 8 (inline) to " +
			     std::to_string(DS_BTREE_VALUE_MAX));
		o.value_size = static_cast<uint32_t>(sz);
	}
	if (kw.get("key-max")) {
		o.key_max = static_cast<uint32_t>(u64_arg(kw, "key-max", 0, 1, DS_BTREE_KEY_MAX));
		uint32_t min = ds_btree_node_size_min(o.key_max);
		if (!o.node_size)
			o.node_size = std::max<uint32_t>(DS_BTREE_NODE_DEFAULT, min);
		else if (o.node_size < min)
			fail("node-size " + std::to_string(o.node_size) + " holds fewer than four keys of " +
			     std::to_string(o.key_max) + " bytes: it needs " + std::to_string(min) +
			     " at least");
	}

	auto addr = dsmem::btree::create(node, segs, o);
	if (!addr)
		fail("cannot create a tree at " + addr_string(segs[0]) + " through node " +
		     std::to_string(node) + ": " + btree_error(addr.err(), node, nullptr));
	e.out.begin_list();
	e.out.add(record{ { "tree", addr_string(addr.value()) } });
	return 0;
}

int bt_show(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree" });
	uint32_t node = node_of(kw);
	dsmem::btree t = open_tree(node, tree_of(kw));
	record r = info_record(describe(t));
	// what this handle did: opening the tree and reading its superblock
	r["counters"] = stats_record(t.stats());
	e.out.begin_list();
	e.out.add(r);
	return 0;
}

std::string member_state_name(uint8_t state)
{
	switch (state) {
	case DS_BTREE_MEMBER_LIVE: return "live";
	case DS_BTREE_MEMBER_DEAD: return "dead";
	case DS_BTREE_MEMBER_JOINING: return "joining";
	default: return "unknown(" + std::to_string(state) + ")";
	}
}

// One line (one JSON object) per member: the tree's replica groups as
// the superblock records them now.
int bt_members(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	dsmem::btree t = open_tree(node, addr);
	auto members = t.members();
	if (!members)
		fail(members.err(), "cannot read the members of " + through(addr, node));
	e.out.begin_list();
	for (const ds_btree_member &m : members.value()) {
		record r;
		r["group"] = m.group;
		r["index"] = m.index;
		r["seg"] = addr_string(m.seg);
		r["state"] = member_state_name(m.state);
		r["primary"] = m.primary != 0;
		e.out.add(r);
	}
	return 0;
}

// The walk's report is printed whatever it found; a tree found damaged
// (-EUCLEAN) also fails the command, so that scripts see it.
int bt_verify(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	dsmem::btree t = open_tree(node, addr);
	ds_btree_verify_report rep{};
	int ret = ds_btree_verify(t.get(), &rep);
	if (ret && ret != -EUCLEAN)
		fail(dsmem::error{ ret, {} }, "cannot verify " + through(addr, node));
	record r;
	r["tree"] = addr_string(addr);
	r["nodes"] = rep.nodes;
	r["keys"] = rep.keys;
	r["height"] = rep.height;
	r["replica_mismatches"] = rep.replica_mismatches;
	r["order_errors"] = rep.order_errors;
	e.out.begin_list();
	e.out.add(r);
	if (!ret)
		return 0;
	e.out.finish();
	fail("tree " + addr_string(addr) + " failed verification: " +
	     std::to_string(rep.replica_mismatches) + " replica mismatches, " +
	     std::to_string(rep.order_errors) + " order errors");
}

// Spares wait in the tree's superblock until a member is excluded; then
// a client that has the tree open fills one in its place.
int bt_spare(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "segs" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	std::vector<uint64_t> segs = segs_of(kw);
	dsmem::btree t = open_tree(node, addr);
	for (uint64_t seg : segs)
		if (auto r = t.spare_add(seg); !r)
			fail(r.err(), "cannot give " + through(addr, node) + " the spare segment " +
					      addr_string(seg));
	return 0;
}

int bt_drop(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	auto r = dsmem::btree::drop(node, addr);
	if (!r)
		fail("cannot drop " + through(addr, node) + ": " + btree_error(r.err(), node));
	return 0;
}

// What messages call a key: as given on the command line.
std::string key_name(const std::string &word)
{
	return "key " + word;
}

int bt_get(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "key" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	const std::string &word = need(kw, "key", "btree");
	key_word(word, "key");
	dsmem::btree t = open_tree(node, addr);
	std::string key = tree_key(t, word, "key");
	uint32_t vs = t.value_size();
	auto v = t.get_bytes(std::string_view(key));
	if (!v)
		fail(v.err(), "cannot get " + key_name(word));
	if (!v.value())
		fail(key_name(word) + " is not in tree " + addr_string(addr));
	record r;
	put_key(r, t, key);
	put_value(r, v.value()->data(), v.value()->size(), vs);
	e.out.begin_list();
	e.out.add(r);
	return 0;
}

int bt_put(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "key", "value" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	const std::string &word = need(kw, "key", "btree");
	key_word(word, "key");
	const std::string &v = need(kw, "value", "btree");
	dsmem::btree t = open_tree(node, addr);
	std::string key = tree_key(t, word, "key");
	uint32_t vs = t.value_size();
	std::vector<uint8_t> bytes;
	if (vs == 8) {
		uint64_t x;
		if (!parse_u64(v, x))
			fail("value needs an unsigned 64-bit number (the tree keeps 8-byte values)");
		bytes.resize(8);
		memcpy(bytes.data(), &x, 8);
	} else {
		if (v.size() > vs)
			fail("value takes at most " + std::to_string(vs) + " bytes in this tree");
		bytes.assign(v.begin(), v.end());
	}
	auto r = t.put(std::string_view(key), std::span<const uint8_t>(bytes));
	if (!r)
		fail(r.err(), "cannot put " + key_name(word));
	return 0;
}

int bt_del(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "key" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	const std::string &word = need(kw, "key", "btree");
	key_word(word, "key");
	dsmem::btree t = open_tree(node, addr);
	std::string key = tree_key(t, word, "key");
	auto r = t.del(std::string_view(key));
	if (!r)
		fail(r.err(), "cannot delete " + key_name(word));
	if (!r.value())
		fail(key_name(word) + " is not in tree " + addr_string(addr));
	return 0;
}

int bt_scan(env &e)
{
	keywords kw = take_keywords(e, { "node", "tree", "start", "limit" });
	uint32_t node = node_of(kw);
	uint64_t addr = tree_of(kw);
	const std::string *start_word = kw.get("start");
	if (start_word)
		key_word(*start_word, "start");
	uint64_t limit = u64_arg(kw, "limit", 100, 1, DS_BTREE_SCAN_MAX);
	dsmem::btree t = open_tree(node, addr);
	std::string start = start_word ? tree_key(t, *start_word, "start") : std::string();
	uint32_t vs = t.value_size();
	auto entries = t.scan(std::string_view(start), limit);
	if (!entries)
		fail(entries.err(), "cannot scan from " + (start_word ? key_name(*start_word) :
							   std::string("the first key")));
	e.out.begin_list();
	for (const auto &en : entries.value()) {
		record r;
		put_key(r, t, en.key);
		// scan pads out-of-line values to value_size with zeros
		size_t len = vs == 8 ? 8 : strnlen(reinterpret_cast<const char *>(en.value.data()),
						   en.value.size());
		put_value(r, en.value.data(), len, vs);
		e.out.add(r);
	}
	return 0;
}

const command btree_cmds[] = {
	{ "show", bt_show },
	{ "create", bt_create },
	{ "drop", bt_drop },
	{ "members", bt_members },
	{ "verify", bt_verify },
	{ "spare", bt_spare },
	{ "get", bt_get },
	{ "put", bt_put },
	{ "del", bt_del },
	{ "scan", bt_scan },
	{ "load", bt_load },
	{ "bench", bt_bench },
};

}  // namespace

const object btree_object = {
	"btree", btree_cmds, sizeof(btree_cmds) / sizeof(btree_cmds[0]),
	btree_usage,
	false,
};

}  // namespace dsctl
