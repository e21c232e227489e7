// SPDX-License-Identifier: BSD-2-Clause
// What the tree's operations need to know of a key format: the node view
// that reads it, how a key is passed (key) and kept (owned), and the few
// calls whose arguments differ.  The operations (tree.cpp) are templates
// over the view, instantiated once per format, so the hot path makes no
// indirect call.
#pragma once

#include <functional>
#include <string>

#include "layout.hpp"
#include "layout_var.hpp"

namespace dsmem::btree {

template <class N> struct kind;

// 8-byte integer keys, DSBN nodes: the format of every tree before
// byte-string keys, and still the default.
template <> struct kind<node_view> {
	using key = uint64_t;
	using owned = uint64_t;
	using less = std::less<>;

	static key ref(const owned &k) { return k; }
	static owned own(key k) { return k; }
	static key lowest() { return 0; }
	// what a value's blob names its key by
	static uint64_t blob_key(key k) { return k; }
	static void init(const node_view &n, uint8_t level, uint32_t key_max, bool low_inf,
			 key low, bool high_inf, key high)
	{
		(void)key_max;
		n.init(level, low_inf, low, high_inf, high);
	}
};

// Byte strings of 1 .. key_max bytes, DSBK nodes.
template <> struct kind<vnode_view> {
	using key = kref;
	using owned = std::string;
	struct less {
		using is_transparent = void;
		bool operator()(const std::string &a, const std::string &b) const
		{
			return kcmp(kref(a), kref(b)) < 0;
		}
		bool operator()(const std::string &a, kref b) const
		{
			return kcmp(kref(a), b) < 0;
		}
		bool operator()(kref a, const std::string &b) const
		{
			return kcmp(a, kref(b)) < 0;
		}
	};

	static key ref(const owned &k) { return kref(k); }
	static owned own(key k) { return std::string(reinterpret_cast<const char *>(k.p), k.len); }
	// the empty string: below every key (keys have a byte at least)
	static key lowest()
	{
		static const uint8_t none = 0;
		return kref(&none, 0);
	}
	static uint64_t blob_key(key k) { return checksum(k.p, k.len); }
	static void init(const vnode_view &n, uint8_t level, uint32_t key_max, bool low_inf,
			 key low, bool high_inf, key high)
	{
		n.init(level, static_cast<uint8_t>(key_max), low_inf, low, high_inf, high);
	}
};

template <class N> using key_t = typename kind<N>::key;
template <class N> using owned_t = typename kind<N>::owned;

}  // namespace dsmem::btree
