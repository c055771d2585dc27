// SPDX-License-Identifier: MIT
// What travels between nodes (and the parameter server): a header and a shared payload.
#pragma once

#include "sim/core/sim_time.hpp"
#include "sim/engine/shared_buffer.hpp"

#include <cstdint>

namespace dtsim {

// Bytes of envelope every message pays on the wire on top of its payload (compressors add it
// to their encoded size, as the engine does for dense payloads).
inline constexpr std::int64_t kMessageHeaderBytes = 64;

// Algorithm-defined header fields; the engine only carries them.
struct MessageInfo {
  std::int32_t tag = 0;     // what the payload is (model, gradient, ...)
  std::int64_t version = 0; // e.g. the server version or the sender's step counter
  std::int64_t round = 0;   // e.g. the synchronous round it belongs to
};

// A delivered message. `payload` stays valid while the algorithm holds a copy of the handle.
struct Message {
  std::int32_t src = -1;
  std::int32_t dst = -1;
  MessageInfo info;
  SharedBuffer payload;
  std::int64_t wire_bytes = 0;
  SimTime sent_at;
};

} // namespace dtsim
