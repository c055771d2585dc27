// SPDX-License-Identifier: MIT
// Dirichlet label-skew partition (NIID-Bench "noniid-labeldir", arXiv:2102.02079).
#include "data/partition_methods.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

NodeIndices partition_dirichlet(const Params& p, std::span<const std::int32_t> labels,
                                int num_classes, int nodes, Rng& rng, const std::string& where) {
  const double alpha = p.number("alpha", 0.5, Range::positive());
  const auto min_size = p.integer("min_size", 10, Range::at_least(1));
  const auto max_redraws = p.integer("max_redraws", 1000, Range::at_least(1));
  const std::size_t size = labels.size();
  const auto n = static_cast<std::size_t>(nodes);
  if (static_cast<double>(min_size) * static_cast<double>(n) > static_cast<double>(size))
    p.fail("min_size", "min_size " + std::to_string(min_size) + " x " + std::to_string(nodes) +
                           " nodes needs " + std::to_string(min_size * nodes) +
                           " training examples, the training set has " + std::to_string(size) +
                           "; lower min_size or use fewer nodes");

  const auto by_class = indices_by_class(labels, num_classes);
  // A node already holding its fair share gets no more, which keeps sizes from drifting
  // far apart (the NIID-Bench rule).
  const double cap = static_cast<double>(size) / static_cast<double>(n);
  NodeIndices buckets(n);
  std::vector<double> share(n);
  std::vector<std::uint32_t> idx;
  for (std::int64_t draw = 0; draw < max_redraws; ++draw) {
    for (auto& b : buckets)
      b.clear();
    for (const auto& cls : by_class) {
      idx = cls;
      rng.shuffle(idx);
      rng.dirichlet(alpha, share);
      double sum = 0.0;
      for (std::size_t j = 0; j < n; ++j) {
        if (static_cast<double>(buckets[j].size()) >= cap)
          share[j] = 0.0;
        sum += share[j];
      }
      if (sum <= 0.0) {
        // Every open node drew (numerically) zero: spread this class evenly over them.
        for (std::size_t j = 0; j < n; ++j) {
          share[j] = static_cast<double>(buckets[j].size()) < cap ? 1.0 : 0.0;
          sum += share[j];
        }
        DTSIM_ASSERT(sum > 0.0, "some node is below the cap while examples remain");
      }
      // Cut at floor(cumsum * m); the last node takes the rest, so no example is lost to
      // rounding.
      const std::size_t m = idx.size();
      double cumulative = 0.0;
      std::size_t begin = 0;
      for (std::size_t j = 0; j < n; ++j) {
        std::size_t end = m;
        if (j + 1 < n) {
          cumulative += share[j] / sum;
          end = std::clamp(
              static_cast<std::size_t>(std::floor(cumulative * static_cast<double>(m))), begin, m);
        }
        buckets[j].insert(buckets[j].end(), idx.begin() + static_cast<std::ptrdiff_t>(begin),
                          idx.begin() + static_cast<std::ptrdiff_t>(end));
        begin = end;
      }
    }
    std::size_t smallest = size;
    for (const auto& b : buckets)
      smallest = std::min(smallest, b.size());
    if (smallest >= static_cast<std::size_t>(min_size)) {
      for (auto& b : buckets)
        rng.shuffle(b);
      return buckets;
    }
  }
  throw ConfigError(
      where + ": dirichlet alpha=" + format_number(alpha) + " could not give every one of " +
      std::to_string(nodes) + " nodes >= " + std::to_string(min_size) + " examples in " +
      std::to_string(max_redraws) + " draws; raise alpha, lower min_size or use fewer nodes");
}

} // namespace dtsim
