// SPDX-License-Identifier: MIT
// Metropolis-Hastings and uniform mixing weights.
#include "topologies/mixing.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace dtsim {
namespace {

Eigen::Index to_index(std::size_t i) {
  return static_cast<Eigen::Index>(i);
}

} // namespace

bool is_regular(const std::vector<std::vector<int>>& neighbors) {
  if (neighbors.empty())
    return true;
  for (const auto& nb : neighbors)
    if (nb.size() != neighbors.front().size())
      return false;
  return true;
}

Eigen::MatrixXd metropolis_mixing(const std::vector<std::vector<int>>& neighbors) {
  const std::size_t n = neighbors.size();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(to_index(n), to_index(n));
  for (std::size_t i = 0; i < n; ++i) {
    double off = 0.0;
    for (int j : neighbors[i]) {
      const std::size_t dj = neighbors[static_cast<std::size_t>(j)].size();
      const double wij = 1.0 / static_cast<double>(1 + std::max(neighbors[i].size(), dj));
      w(to_index(i), j) = wij;
      off += wij;
    }
    // The diagonal takes the remainder so that each row sums to 1 up to one rounding.
    w(to_index(i), to_index(i)) = 1.0 - off;
  }
  return w;
}

Eigen::MatrixXd uniform_mixing(const std::vector<std::vector<int>>& neighbors) {
  if (!is_regular(neighbors))
    throw std::invalid_argument("uniform_mixing: the graph is not regular, so 1/(deg+1) weights "
                                "would not be symmetric");
  const std::size_t n = neighbors.size();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(to_index(n), to_index(n));
  for (std::size_t i = 0; i < n; ++i) {
    const double wi = 1.0 / static_cast<double>(neighbors[i].size() + 1);
    w(to_index(i), to_index(i)) = wi;
    for (int j : neighbors[i])
      w(to_index(i), j) = wi;
  }
  return w;
}

} // namespace dtsim
