// SPDX-License-Identifier: MIT
// Where a resident message lives on the device: host code, tested without a GPU.
//
// The resident store makes a message's buffer at its id's first use. One allocation each
// made the goal row's 2,048 messages (1,024 nodes, two a node) 2,048 cudaMalloc calls in its
// first rounds, between the kernels of the local steps. Here messages are made in slabs of
// up to 64 (at most 64 MiB a slab, one message where a message is larger), so that such a
// run makes 32 calls. Each message starts at a 256-byte boundary, as its own allocation
// would, and no slab moves once made: a message's address stays put as the store grows.
// The cost is at most one slab's unused tail (under 64 MiB) beyond the messages in use,
// which the quarter of the device that resident_nodes_kept leaves aside covers.
#pragma once

#include <algorithm>
#include <cstddef>

namespace dtsim::cuda {

class MessageSlabs {
public:
  static constexpr std::size_t kAlignFloats = 64; // 256 bytes
  static constexpr std::size_t kMostPerSlab = 64;
  static constexpr std::size_t kSlabBytes = std::size_t{64} << 20;

  // Messages of `floats` floats each (P times the vectors a message holds).
  explicit MessageSlabs(std::size_t floats)
      : floats_(floats), stride_((floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats),
        per_slab_(std::clamp<std::size_t>(kSlabBytes / (std::max<std::size_t>(stride_, 1) * 4), 1,
                                          kMostPerSlab)) {}

  std::size_t message_floats() const { return floats_; }
  std::size_t messages_per_slab() const { return per_slab_; }
  std::size_t slab_floats() const { return per_slab_ * stride_; }
  std::size_t slab_of(std::size_t id) const { return id / per_slab_; }
  // The message's first float within its slab.
  std::size_t offset_of(std::size_t id) const { return id % per_slab_ * stride_; }

private:
  std::size_t floats_, stride_, per_slab_;
};

} // namespace dtsim::cuda
