// SPDX-License-Identifier: MIT
// Splitting a training set across nodes: iid, dirichlet(alpha), shards.
#pragma once

#include "sim/core/params.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dtsim {

// Which training examples each node owns, and the resulting per-node label histogram.
// Invariant: the node lists are disjoint; histogram[i][c] counts class c at node i.
struct Partition {
  std::vector<std::vector<std::uint32_t>> node_indices;
  std::vector<std::vector<std::int64_t>> label_histogram;
};

// Reads `partition:` (kind: iid | dirichlet | shards, with their keys) and splits `labels`
// among `nodes` nodes with the seeded stream ("partition", no node). Every node gets at
// least one example or a ConfigError says why not.
Partition make_partition(const Params& partition, std::span<const std::int32_t> labels,
                         int num_classes, int nodes, std::uint64_t seed);

} // namespace dtsim
