// SPDX-License-Identifier: MIT
// Dirichlet partition exactly as the QG-DSGDm code builds it (docs/scenarios.md, data.partition
// kind dirichlet_qg).
#include "data/partition_methods.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {
namespace {

// One group's buckets by the QG variant of the per-class Dirichlet cut: cap N_g/n_g per
// bucket, redraw until the smallest bucket holds >= half the mean, buckets in class order.
NodeIndices group_buckets(std::span<const std::uint32_t> slice,
                          std::span<const std::int32_t> labels, int num_classes,
                          std::size_t group_nodes, double alpha, std::int64_t max_redraws, Rng& rng,
                          const Params& p) {
  const auto size = static_cast<double>(slice.size());
  const double cap = size / static_cast<double>(group_nodes);
  // int(0.50 * N_g / n_g) in the reference code.
  const auto need = static_cast<std::size_t>(0.5 * cap);
  // The slice is already shuffled: each class keeps its order of appearance in it.
  std::vector<std::vector<std::uint32_t>> by_class(static_cast<std::size_t>(num_classes));
  for (std::uint32_t k : slice)
    by_class[static_cast<std::size_t>(labels[k])].push_back(k);

  NodeIndices buckets(group_nodes);
  std::vector<double> share(group_nodes);
  for (std::int64_t draw = 0; draw < max_redraws; ++draw) {
    for (auto& b : buckets)
      b.clear();
    for (const auto& cls : by_class) {
      rng.dirichlet(alpha, share);
      double sum = 0.0;
      for (std::size_t j = 0; j < group_nodes; ++j) {
        if (static_cast<double>(buckets[j].size()) >= cap)
          share[j] = 0.0;
        sum += share[j];
      }
      if (sum <= 0.0) {
        // The reference code would divide by zero here; spread the class over open buckets.
        for (std::size_t j = 0; j < group_nodes; ++j) {
          share[j] = static_cast<double>(buckets[j].size()) < cap ? 1.0 : 0.0;
          sum += share[j];
        }
        DTSIM_ASSERT(sum > 0.0, "some bucket is below the cap while examples remain");
      }
      // Cut points floor(cumsum(p) * m) for all but the last bucket, as np.split does.
      const std::size_t m = cls.size();
      double cumulative = 0.0;
      std::size_t begin = 0;
      for (std::size_t j = 0; j < group_nodes; ++j) {
        std::size_t end = m;
        if (j + 1 < group_nodes) {
          cumulative += share[j] / sum;
          end = std::clamp(
              static_cast<std::size_t>(std::floor(cumulative * static_cast<double>(m))), begin, m);
        }
        buckets[j].insert(buckets[j].end(), cls.begin() + static_cast<std::ptrdiff_t>(begin),
                          cls.begin() + static_cast<std::ptrdiff_t>(end));
        begin = end;
      }
    }
    std::size_t smallest = slice.size();
    for (const auto& b : buckets)
      smallest = std::min(smallest, b.size());
    if (smallest >= need)
      return buckets;
  }
  p.fail("alpha", "dirichlet_qg alpha=" + format_number(alpha) +
                      " could not give every node of a " + std::to_string(group_nodes) +
                      "-node group >= " + std::to_string(need) + " examples in " +
                      std::to_string(max_redraws) + " draws; raise alpha or max_redraws");
}

} // namespace

NodeIndices partition_dirichlet_qg(const Params& p, std::span<const std::int32_t> labels,
                                   int num_classes, int nodes, Rng& rng) {
  const double alpha = p.number("alpha", 0.5, Range::positive());
  const auto group = static_cast<std::size_t>(p.integer("group_size", 10, Range::at_least(1)));
  const auto max_redraws = p.integer("max_redraws", 1000, Range::at_least(1));
  const std::size_t size = labels.size();
  const auto n = static_cast<std::size_t>(nodes);

  // 1. One shuffle of all examples.
  std::vector<std::uint32_t> shuffled(size);
  for (std::size_t k = 0; k < size; ++k)
    shuffled[k] = static_cast<std::uint32_t>(k);
  rng.shuffle(shuffled);

  // 2. Groups of at most `group` nodes, each on a contiguous slice of floor(group/n * N)
  //    examples; the last group takes the rest. (The reference code requires n >= 10; with
  //    fewer nodes there is one group of all of them.)
  const std::size_t groups = (n + group - 1) / group;
  std::vector<std::uint32_t> concatenated;
  concatenated.reserve(size);
  std::size_t from = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const bool last = g + 1 == groups;
    const std::size_t group_nodes = last ? n - group * (groups - 1) : group;
    const auto per_group =
        static_cast<std::size_t>(static_cast<double>(std::min(group, n)) / static_cast<double>(n) *
                                 static_cast<double>(size));
    const std::size_t to = last ? size : std::min(size, from + per_group);
    // 3. The Dirichlet cut inside the group; buckets keep class order (no shuffle).
    for (const auto& bucket : group_buckets(std::span(shuffled).subspan(from, to - from), labels,
                                            num_classes, group_nodes, alpha, max_redraws, rng, p))
      concatenated.insert(concatenated.end(), bucket.begin(), bucket.end());
    from = to;
  }
  // 4. Equal slices of floor(N/n) of the concatenation, node k taking slice k; the remainder
  //    (fewer than n examples) is unused, as in the reference code.
  const std::size_t slice = size / n;
  NodeIndices out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i].assign(concatenated.begin() + static_cast<std::ptrdiff_t>(i * slice),
                  concatenated.begin() + static_cast<std::ptrdiff_t>((i + 1) * slice));
  return out;
}

} // namespace dtsim
