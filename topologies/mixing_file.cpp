// SPDX-License-Identifier: MIT
#include "topologies/mixing_file.hpp"

#include "sim/core/params.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {
namespace {

std::string entry(std::size_t i, std::size_t j, double x) {
  return "W(" + std::to_string(i) + "," + std::to_string(j) + ") = " + format_number(x);
}

} // namespace

MixingWeights mixing_from_matrix(const std::vector<std::vector<double>>& rows,
                                 const std::vector<std::vector<int>>& neighbors,
                                 const std::function<void(const std::string& message)>& fail) {
  const std::size_t n = neighbors.size();
  if (rows.size() != n)
    fail("expected a " + std::to_string(n) + " x " + std::to_string(n) +
         " matrix (one row and column per node), got " + std::to_string(rows.size()) + " x " +
         std::to_string(rows.size()));
  for (std::size_t i = 0; i < n; ++i) {
    const auto& nb = neighbors[i];
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      const double x = rows[i][j];
      sum += x;
      const bool edge = std::binary_search(nb.begin(), nb.end(), static_cast<int>(j));
      if (i == j && x <= 0.0)
        fail(entry(i, i, x) + ": the diagonal must be > 0 (every node keeps part of its own "
                              "model)");
      if (i != j && !edge && x != 0.0)
        fail(entry(i, j, x) + " but " + std::to_string(i) + " -- " + std::to_string(j) +
             " is not an edge of the graph (W may be non-zero only on edges and the diagonal)");
      if (edge && !(x > 0.0)) // negative weights too: W must be non-negative
        fail(entry(i, j, x) + " on the edge " + std::to_string(i) + " -- " + std::to_string(j) +
             ": every edge needs a weight > 0 (or leave the edge out of the graph)");
      if (j > i && std::fabs(x - rows[j][i]) > kUserMixingTolerance)
        fail(entry(i, j, x) + " but " + entry(j, i, rows[j][i]) +
             ": W must be symmetric (doubly stochastic, as dtsim's gossip methods assume)");
    }
    if (std::fabs(sum - 1.0) > kUserMixingTolerance)
      fail("row " + std::to_string(i) + " sums to " + format_number(sum) +
           ", expected 1 (within 1e-9)");
  }
  MixingWeights w{std::vector<std::vector<double>>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    double off = 0.0;
    for (int j : neighbors[i]) {
      const auto u = static_cast<std::size_t>(j);
      w.weights[i].push_back(0.5 * (rows[i][u] + rows[u][i]));
      off += w.weights[i].back();
    }
    w.self[i] = 1.0 - off;
    if (w.self[i] <= 0.0)
      fail(entry(i, i, rows[i][i]) + ": too small to keep row " + std::to_string(i) +
           " summing to 1 once W is made exactly symmetric");
  }
  return w;
}

} // namespace dtsim
