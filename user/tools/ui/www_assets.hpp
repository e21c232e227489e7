// SPDX-License-Identifier: BSD-2-Clause
// The front end's files, embedded at build time (embed.cmake).
#pragma once

#include <cstddef>

namespace dsui {

struct www_asset {
	const char *path;	// as served: "/index.html", "/vendor/chart.js"
	const char *type;	// Content-Type
	const unsigned char *data;
	size_t size;
};

extern const www_asset www_assets[];
extern const size_t www_asset_count;

}  // namespace dsui
