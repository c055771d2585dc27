// SPDX-License-Identifier: MIT
// Topology: validation of the graph and sparse mixing matrix, diameter (BFS) and spectral gap.
#include "topologies/topology.hpp"

#include "sim/core/errors.hpp"
#include "topologies/spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace dtsim {
namespace {

// Row sums and symmetry are exact up to a few roundings for every builder we have; 1e-12
// still holds for a complete graph of 4096 nodes (4096 terms of 1/4096).
constexpr double kTolerance = 1e-12;

[[noreturn]] void invalid(const std::string& what) {
  throw std::invalid_argument("Topology: " + what);
}

void check_neighbors(const std::vector<std::vector<int>>& nb) {
  const int n = static_cast<int>(nb.size());
  for (int i = 0; i < n; ++i) {
    const auto& row = nb[static_cast<std::size_t>(i)];
    for (std::size_t k = 0; k < row.size(); ++k) {
      const int j = row[k];
      if (j < 0 || j >= n)
        invalid("node " + std::to_string(i) + " has neighbour " + std::to_string(j) +
                " outside 0.." + std::to_string(n - 1));
      if (j == i)
        invalid("node " + std::to_string(i) + " lists itself as a neighbour");
      if (k > 0 && row[k - 1] >= j)
        invalid("neighbours of node " + std::to_string(i) + " are not sorted and unique");
      const auto& back = nb[static_cast<std::size_t>(j)];
      if (!std::binary_search(back.begin(), back.end(), i))
        invalid("edge " + std::to_string(i) + "-" + std::to_string(j) + " is listed only at node " +
                std::to_string(i) + " (graph must be undirected)");
    }
  }
}

void check_mixing(const std::vector<std::vector<int>>& nb, const MixingWeights& w) {
  const std::size_t n = nb.size();
  if (w.self.size() != n || w.weights.size() != n)
    invalid("mixing weights are given for " + std::to_string(w.self.size()) + " nodes, not " +
            std::to_string(n));
  const auto check_weight = [](double x, std::size_t i, std::size_t j) {
    const auto at = [&] { return "W(" + std::to_string(i) + "," + std::to_string(j) + ")"; };
    if (!std::isfinite(x) || x < 0.0)
      invalid(at() + " = " + std::to_string(x) + " is not a finite non-negative weight");
    if (x == 0.0)
      invalid(at() + " is 0 but must be positive on an edge or the diagonal");
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& row = nb[i];
    if (w.weights[i].size() != row.size())
      invalid("node " + std::to_string(i) + " has " + std::to_string(row.size()) +
              " neighbours but " + std::to_string(w.weights[i].size()) + " weights");
    check_weight(w.self[i], i, i);
    double sum = w.self[i];
    for (std::size_t k = 0; k < row.size(); ++k) {
      const auto j = static_cast<std::size_t>(row[k]);
      const double x = w.weights[i][k];
      check_weight(x, i, j);
      if (j > i) {
        const auto& back = nb[j];
        const auto pos = std::lower_bound(back.begin(), back.end(), static_cast<int>(i));
        const double mirror = w.weights[j][static_cast<std::size_t>(pos - back.begin())];
        if (std::fabs(x - mirror) > kTolerance)
          invalid("mixing matrix is not symmetric at W(" + std::to_string(i) + "," +
                  std::to_string(j) + ")");
      }
      sum += x;
    }
    if (std::fabs(sum - 1.0) > kTolerance)
      invalid("row " + std::to_string(i) + " of the mixing matrix sums to " + std::to_string(sum) +
              ", not 1");
  }
}

// The sparse weights of a dense W whose zero pattern must be the graph's (checked here:
// O(n^2), used only for small matrices).
MixingWeights sparse_weights(const std::vector<std::vector<int>>& nb, const Eigen::MatrixXd& w) {
  const auto n = static_cast<Eigen::Index>(nb.size());
  if (w.rows() != n || w.cols() != n)
    invalid("mixing matrix is " + std::to_string(w.rows()) + "x" + std::to_string(w.cols()) +
            " for " + std::to_string(n) + " nodes");
  check_neighbors(nb);
  MixingWeights out{std::vector<std::vector<double>>(nb.size()), std::vector<double>(nb.size())};
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& row = nb[static_cast<std::size_t>(i)];
    auto next = row.begin(); // walks the sorted neighbour list alongside the columns
    for (Eigen::Index j = 0; j < n; ++j) {
      const bool linked = next != row.end() && *next == j;
      if (linked) {
        ++next;
        out.weights[static_cast<std::size_t>(i)].push_back(w(i, j));
      } else if (j == i) {
        out.self[static_cast<std::size_t>(i)] = w(i, i);
      } else if (w(i, j) != 0.0) {
        invalid("W(" + std::to_string(i) + "," + std::to_string(j) + ") is non-zero but " +
                std::to_string(j) + " is not a neighbour of " + std::to_string(i));
      }
    }
  }
  return out;
}

// Hop distances from s by BFS over the neighbour lists (-1 = unreached).
std::vector<int> hops_from(const std::vector<std::vector<int>>& nb, std::size_t s) {
  std::vector<int> dist(nb.size(), -1);
  std::vector<std::size_t> queue{s};
  dist[s] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::size_t u = queue[head];
    for (const int v : nb[u])
      if (dist[static_cast<std::size_t>(v)] < 0) {
        dist[static_cast<std::size_t>(v)] = dist[u] + 1;
        queue.push_back(static_cast<std::size_t>(v));
      }
  }
  return dist;
}

// Longest shortest path: exact by one BFS per node up to kExactDiameterMaxNodes, else a
// double sweep (BFS from 0, then from the farthest node found). Throws for a disconnected
// graph (checked by the first BFS: O(n + edges)).
std::pair<int, bool> compute_diameter(const std::vector<std::vector<int>>& nb) {
  const std::size_t n = nb.size();
  std::vector<int> first = hops_from(nb, 0);
  if (const auto it = std::find(first.begin(), first.end(), -1); it != first.end())
    invalid("graph is disconnected (node 0 does not reach node " +
            std::to_string(it - first.begin()) + ")");
  if (n > static_cast<std::size_t>(kExactDiameterMaxNodes)) {
    const auto far =
        static_cast<std::size_t>(std::max_element(first.begin(), first.end()) - first.begin());
    const std::vector<int> second = hops_from(nb, far);
    return {*std::max_element(second.begin(), second.end()), false};
  }
  int diameter = *std::max_element(first.begin(), first.end());
  for (std::size_t s = 1; s < n; ++s) {
    // A node adjacent to all others has eccentricity 1: skipping its BFS makes a complete
    // graph O(n^2) instead of O(n^3).
    if (nb[s].size() == n - 1) {
      diameter = std::max(diameter, 1);
      continue;
    }
    const std::vector<int> dist = hops_from(nb, s);
    diameter = std::max(diameter, *std::max_element(dist.begin(), dist.end()));
  }
  return {diameter, true};
}

} // namespace

Topology::Topology(std::string name, std::vector<std::vector<int>> neighbors, MixingWeights mixing)
    : name_(std::move(name)), neighbors_(std::move(neighbors)), mixing_(std::move(mixing)) {
  if (neighbors_.empty())
    invalid("needs at least one node");
  check_neighbors(neighbors_);
  check_mixing(neighbors_, mixing_);
  std::tie(diameter_, diameter_exact_) = compute_diameter(neighbors_);
  const MixingSpectrum spectrum = mixing_spectrum(neighbors_, mixing_.weights, mixing_.self);
  spectral_gap_ = spectrum.gap;
  min_eigenvalue_ = spectrum.lambda_min;
}

Topology::Topology(std::string name, std::vector<std::vector<int>> neighbors,
                   const Eigen::MatrixXd& mixing)
    : Topology(std::move(name), neighbors,
               neighbors.empty() ? MixingWeights{} : sparse_weights(neighbors, mixing)) {}

int Topology::min_degree() const {
  std::size_t d = neighbors_.front().size();
  for (const auto& nb : neighbors_)
    d = std::min(d, nb.size());
  return static_cast<int>(d);
}

int Topology::max_degree() const {
  std::size_t d = 0;
  for (const auto& nb : neighbors_)
    d = std::max(d, nb.size());
  return static_cast<int>(d);
}

std::size_t Topology::num_edges() const {
  std::size_t twice = 0;
  for (const auto& nb : neighbors_)
    twice += nb.size();
  return twice / 2;
}

} // namespace dtsim
