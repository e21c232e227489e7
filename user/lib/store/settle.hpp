// SPDX-License-Identifier: BSD-2-Clause
// A peer still connecting (ENOTCONN) or a grant on its way (EACCES) is
// there a moment later: the client's put (before it places a replica
// elsewhere) and the master's mover wait for it, this long at most -- the
// node's longest reconnect backoff (DSMEM_BACKOFF_MAX_MS, 5 s) and a
// connect.
#pragma once

#include <cerrno>
#include <chrono>

namespace dsmem::store {

inline constexpr std::chrono::seconds kPeerSettle{8};

inline bool peer_settling(int err)
{
	return err == -ENOTCONN || err == -EACCES;
}

}  // namespace dsmem::store
