// SPDX-License-Identifier: MIT
// Interleaved orders and the reference herding bound.
#include "sim/engine/herding.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

void interleave_orders(std::span<const std::span<const std::uint32_t>> orders, int batch,
                       std::vector<std::uint32_t>& out) {
  DTSIM_ASSERT(batch >= 1, "interleave_orders: batch must be >= 1");
  std::size_t total = 0, longest = 0;
  for (const auto& o : orders) {
    total += o.size();
    longest = std::max(longest, o.size());
  }
  out.resize(total);
  const auto b = static_cast<std::size_t>(batch);
  std::size_t k = 0;
  for (std::size_t first = 0; first < longest; first += b)
    for (const auto& o : orders)
      for (std::size_t i = first; i < std::min(first + b, o.size()); ++i)
        out[k++] = o[i];
}

double herding_bound(std::span<const float> vectors, std::size_t dim, std::size_t count) {
  DTSIM_ASSERT(vectors.size() >= dim * count, "herding_bound: fewer than dim x count floats");
  if (count == 0 || dim == 0)
    return 0.0;
  std::vector<double> mean(dim, 0.0), prefix(dim, 0.0);
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t i = 0; i < dim; ++i)
      mean[i] += static_cast<double>(vectors[k * dim + i]);
  for (double& m : mean)
    m /= static_cast<double>(count);
  double bound = 0.0;
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t i = 0; i < dim; ++i) {
      prefix[i] += static_cast<double>(vectors[k * dim + i]) - mean[i];
      bound = std::max(bound, std::fabs(prefix[i]));
    }
  return bound;
}

} // namespace dtsim
