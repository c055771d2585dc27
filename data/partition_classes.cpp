// SPDX-License-Identifier: MIT
// k classes per node (the Momentum Tracking demo's non-IID split, docs/scenarios.md,
// data.partition).
#include "data/partition_methods.hpp"

#include <algorithm>

namespace dtsim {

NodeIndices partition_classes_per_node(const Params& p, std::span<const std::int32_t> labels,
                                       int num_classes, int nodes, Rng& rng) {
  const auto k = p.integer("classes_per_node", 2, Range::between(1, num_classes));
  const auto n = static_cast<std::size_t>(nodes);
  const auto classes = static_cast<std::size_t>(num_classes);

  // Node i owns classes (i*k + j) mod C, j < k: consecutive nodes own disjoint runs of
  // classes until the classes wrap around, so neighbours on a ring differ as much as k allows.
  std::vector<std::vector<std::size_t>> owners(classes);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < static_cast<std::size_t>(k); ++j)
      owners[(i * static_cast<std::size_t>(k) + j) % classes].push_back(i);

  // Each class split equally (in a seeded random order) among the nodes that own it.
  NodeIndices out(n);
  auto by_class = indices_by_class(labels, num_classes);
  for (std::size_t c = 0; c < classes; ++c) {
    auto& idx = by_class[c];
    rng.shuffle(idx);
    const auto& own = owners[c];
    for (std::size_t t = 0; t < own.size(); ++t)
      out[own[t]].insert(
          out[own[t]].end(), idx.begin() + static_cast<std::ptrdiff_t>(t * idx.size() / own.size()),
          idx.begin() + static_cast<std::ptrdiff_t>((t + 1) * idx.size() / own.size()));
  }
  // Every node cut to the smallest node's size, so that nodes differ in labels only.
  std::size_t smallest = labels.size();
  for (const auto& v : out)
    smallest = std::min(smallest, v.size());
  if (smallest == 0)
    p.fail("classes_per_node", "with " + std::to_string(nodes) + " nodes and " + std::to_string(k) +
                                   " classes each, some node's classes have no examples");
  for (auto& v : out) {
    rng.shuffle(v);
    v.resize(smallest);
  }
  return out;
}

} // namespace dtsim
