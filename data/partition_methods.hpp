// SPDX-License-Identifier: MIT
// The partition algorithms behind make_partition (internal to data/).
#pragma once

#include "sim/core/params.hpp"
#include "sim/core/rng.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dtsim {

using NodeIndices = std::vector<std::vector<std::uint32_t>>;

// requires (all): 1 <= nodes <= labels.size(), labels in [0, num_classes).
// ensures: the lists are disjoint; iid, dirichlet and shards together hold every index of
// `labels` exactly once (dirichlet_qg and classes_per_node leave some examples unused).
// `where` names the `partition:` section for error messages.

// A uniform shuffle dealt into `nodes` contiguous runs whose sizes differ by at most one.
NodeIndices partition_iid(std::size_t size, int nodes, Rng& rng);

// Per-class Dirichlet(alpha) proportions with a per-node cap of size/nodes, redrawn until
// every node holds >= min_size examples (NIID-Bench "noniid-labeldir", arXiv:2102.02079).
NodeIndices partition_dirichlet(const Params& p, std::span<const std::int32_t> labels,
                                int num_classes, int nodes, Rng& rng, const std::string& where);

// The QG-DSGDm code's Dirichlet split (docs/scenarios.md, data.partition kind dirichlet_qg): one
// shuffle, groups of at most group_size nodes on contiguous slices, per-class Dirichlet cuts inside
// each group, then the concatenation cut into n equal slices of floor(N/n) (the remainder is
// unused).
NodeIndices partition_dirichlet_qg(const Params& p, std::span<const std::int32_t> labels,
                                   int num_classes, int nodes, Rng& rng);

// Node i owns classes (i*k + j) mod C for j < k; each class is split equally among its
// owners; all nodes are cut to the smallest node's size (Momentum Tracking's demo split).
NodeIndices partition_classes_per_node(const Params& p, std::span<const std::int32_t> labels,
                                       int num_classes, int nodes, Rng& rng);

// Label-sorted equal shards, shards_per_node of them to each node by a random permutation
// (McMahan et al., arXiv:1602.05629).
NodeIndices partition_shards(const Params& p, std::span<const std::int32_t> labels, int num_classes,
                             int nodes, Rng& rng);

// Indices of each class in increasing order.
std::vector<std::vector<std::uint32_t>> indices_by_class(std::span<const std::int32_t> labels,
                                                         int num_classes);

} // namespace dtsim
