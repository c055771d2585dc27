// SPDX-License-Identifier: MIT
// Metropolis-Hastings and uniform mixing weights, sparse.
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

MixingWeights metropolis_weights(const std::vector<std::vector<int>>& neighbors) {
  const std::size_t n = neighbors.size();
  MixingWeights w{std::vector<std::vector<double>>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    double off = 0.0;
    w.weights[i].reserve(neighbors[i].size());
    for (int j : neighbors[i]) {
      const std::size_t dj = neighbors[static_cast<std::size_t>(j)].size();
      const double wij = 1.0 / static_cast<double>(1 + std::max(neighbors[i].size(), dj));
      w.weights[i].push_back(wij);
      off += wij;
    }
    // The diagonal takes the remainder so that each row sums to 1 up to one rounding.
    w.self[i] = 1.0 - off;
  }
  return w;
}

MixingWeights uniform_weights(const std::vector<std::vector<int>>& neighbors) {
  if (!is_regular(neighbors))
    throw std::invalid_argument("uniform_mixing: the graph is not regular, so 1/(deg+1) weights "
                                "would not be symmetric");
  const std::size_t n = neighbors.size();
  MixingWeights w{std::vector<std::vector<double>>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    const double wi = 1.0 / static_cast<double>(neighbors[i].size() + 1);
    w.self[i] = wi;
    w.weights[i].assign(neighbors[i].size(), wi);
  }
  return w;
}

Eigen::MatrixXd to_dense(const std::vector<std::vector<int>>& neighbors, const MixingWeights& w) {
  const std::size_t n = neighbors.size();
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(to_index(n), to_index(n));
  for (std::size_t i = 0; i < n; ++i) {
    m(to_index(i), to_index(i)) = w.self[i];
    for (std::size_t k = 0; k < neighbors[i].size(); ++k)
      m(to_index(i), neighbors[i][k]) = w.weights[i][k];
  }
  return m;
}

} // namespace dtsim
