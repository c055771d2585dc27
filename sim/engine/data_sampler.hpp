// SPDX-License-Identifier: MIT
// Each node's minibatch stream over its own examples: reshuffled every local epoch.
#pragma once

#include "sim/core/rng.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dtsim {

// Random reshuffling per node (D-RR order): a fresh seeded permutation of the node's
// examples each time it has seen them all. A batch larger than the node's data, or one that
// reaches the end of a permutation, wraps into the next permutation. Stream ("data", node).
// With reshuffle = false the first permutation is kept for every epoch (a fixed order).
class DataSampler {
public:
  DataSampler(std::vector<std::uint32_t> indices, std::uint64_t seed, int node,
              bool reshuffle = true);
  // Fills `out` with the next out.size() example indices. No allocation.
  void next_batch(std::span<std::uint32_t> out);
  std::size_t size() const { return order_.size(); }
  std::int64_t epochs_started() const { return epochs_; }
  // The permutation of the current local epoch, and of the one before (empty in the first).
  std::span<const std::uint32_t> current_order() const { return order_; }
  std::span<const std::uint32_t> previous_order() const { return previous_; }

private:
  std::vector<std::uint32_t> order_;
  std::vector<std::uint32_t> previous_;
  std::size_t pos_ = 0;
  std::int64_t epochs_ = 0;
  bool reshuffle_;
  Rng rng_;
};

} // namespace dtsim
