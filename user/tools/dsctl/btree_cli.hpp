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

int bt_load(env &e);
int bt_bench(env &e);

}  // namespace dsctl::btree_cli
