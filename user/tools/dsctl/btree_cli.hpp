// SPDX-License-Identifier: BSD-2-Clause
// dsctl btree's words and helpers, shared by its commands (cmd_btree.cpp)
// and its load and bench (cmd_btree_bench.cpp).
#pragma once

#include <string>

#include "dsctl.hpp"

namespace dsctl::btree_cli {

// A keyword naming one of two words: false for the first, true for the
// second, def when it is not given.
bool second_of(const keywords &kw, const char *key, const char *first, const char *second,
	       bool def);
uint32_t node_of(const keywords &kw);
uint64_t tree_of(const keywords &kw);
// "tree ADDR through node N", as messages name a tree
std::string through(uint64_t addr, uint32_t node);
// The text of a library error.  ENOENT means "no tree there" (absent) as
// much as "no such local node" (or no module): the node is looked up to
// tell.
std::string btree_error(const dsmem::error &err, uint32_t node,
			const char *absent = "no tree at that address");
dsmem::btree open_tree(uint32_t node, uint64_t addr, const ds_btree_open_opts &o = {});
struct ds_btree_info describe(const dsmem::btree &t);
// Every counter of ds_btree_stats, in its order.
record stats_record(const struct ds_btree_stats &s);

// A key as given: "hex:HEX" its bytes, "text:T" the text T, any other
// word itself; refused when empty or longer than DS_BTREE_KEY_MAX bytes.
std::string key_word(const std::string &word, const char *name);
// The key as tree t takes it: its bytes (at most key_max) on a byte-string
// tree; an unsigned 64-bit number, as 8 big-endian bytes, on an
// integer-key tree.
std::string tree_key(const dsmem::btree &t, const std::string &word, const char *name);
// The key into a record: "key" (a number on an integer-key tree, else
// printable text) or "key_hex".
void put_key(record &r, const dsmem::btree &t, const std::string &key);

int bt_load(env &e);
int bt_bench(env &e);

}  // namespace dsctl::btree_cli
