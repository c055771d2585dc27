// SPDX-License-Identifier: MIT
// Shards partition: label-sorted equal shards dealt to nodes by a random permutation.
#include "data/partition_methods.hpp"

#include <numeric>

namespace dtsim {

NodeIndices partition_shards(const Params& p, std::span<const std::int32_t> labels, int num_classes,
                             int nodes, Rng& rng) {
  const auto per_node = p.integer("shards_per_node", 2, Range::at_least(1));
  const std::size_t size = labels.size();
  const auto n = static_cast<std::size_t>(nodes);
  const std::size_t shards = n * static_cast<std::size_t>(per_node);
  if (shards > size)
    p.fail("shards_per_node", std::to_string(nodes) + " nodes x " + std::to_string(per_node) +
                                  " shards need at least " + std::to_string(shards) +
                                  " training examples, the training set has " +
                                  std::to_string(size) + "; lower shards_per_node");

  // Shuffling within each class first makes a shard a random sample of its classes.
  std::vector<std::uint32_t> sorted;
  sorted.reserve(size);
  for (auto& cls : indices_by_class(labels, num_classes)) {
    rng.shuffle(cls);
    sorted.insert(sorted.end(), cls.begin(), cls.end());
  }
  std::vector<std::size_t> perm(shards);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  rng.shuffle(perm);

  NodeIndices out(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t t = 0; t < static_cast<std::size_t>(per_node); ++t) {
      const std::size_t k = perm[i * static_cast<std::size_t>(per_node) + t];
      out[i].insert(out[i].end(), sorted.begin() + static_cast<std::ptrdiff_t>(k * size / shards),
                    sorted.begin() + static_cast<std::ptrdiff_t>((k + 1) * size / shards));
    }
    rng.shuffle(out[i]);
  }
  return out;
}

} // namespace dtsim
