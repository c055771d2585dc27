// SPDX-License-Identifier: MIT
// IID partition: a uniform shuffle dealt into nearly equal parts.
#include "data/partition_methods.hpp"

#include <numeric>

namespace dtsim {

NodeIndices partition_iid(std::size_t size, int nodes, Rng& rng) {
  std::vector<std::uint32_t> order(size);
  std::iota(order.begin(), order.end(), 0U);
  rng.shuffle(order);
  const auto n = static_cast<std::size_t>(nodes);
  NodeIndices out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i].assign(order.begin() + static_cast<std::ptrdiff_t>(i * size / n),
                  order.begin() + static_cast<std::ptrdiff_t>((i + 1) * size / n));
  return out;
}

} // namespace dtsim
