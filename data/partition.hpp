// SPDX-License-Identifier: MIT
// Splitting a training set across nodes: iid, Dirichlet(alpha) label skew, shards, k classes.
#pragma once

#include "sim/core/params.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// Which training examples each node owns, and the resulting per-node label histogram.
// Invariant: the node lists are disjoint; histogram[i][c] counts class c at node i.
struct Partition {
  std::vector<std::vector<std::uint32_t>> node_indices;
  std::vector<std::vector<std::int64_t>> label_histogram;
};

// Keys of `data.partition:` (every one has a default):
//   kind: iid                   # iid | dirichlet | dirichlet_qg | shards | classes_per_node
//   alpha: 0.5                  # dirichlet: concentration > 0 (small = few classes per node)
//   min_size: 10                # dirichlet: redraw until every node has >= min_size examples
//   max_redraws: 1000           # dirichlet: give up (ConfigError) after this many draws
//   shards_per_node: 2          # shards: label-sorted shards per node, integer >= 1
//   group_size: 10              # dirichlet_qg: nodes per Dirichlet group (QG code: 10)
//   classes_per_node: 2         # classes_per_node: k in [1, classes]

// Reads `partition:` (kind and its keys) and splits `labels`
// among `nodes` nodes with the seeded stream ("partition", no node). Every node gets at
// least one example or a ConfigError says why not.
Partition make_partition(const Params& partition, std::span<const std::int32_t> labels,
                         int num_classes, int nodes, std::uint64_t seed);

// The partition kinds `kind:` accepts, each with a one-line description (for `dtsim list`).
std::vector<std::pair<std::string, std::string>> partition_kinds();

} // namespace dtsim
