// SPDX-License-Identifier: MIT
// Topology: validation of the graph and mixing matrix, diameter (BFS) and spectral gap.
#include "topologies/topology.hpp"

#include "sim/core/errors.hpp"
#include "topologies/spectrum.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <utility>

namespace dtsim {
namespace {

// Row sums and symmetry are exact up to a few roundings for every builder we have; 1e-12
// still holds for a complete graph of 4096 nodes (4096 terms of 1/4096).
constexpr double kTolerance = 1e-12;

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;

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

void check_mixing(const std::vector<std::vector<int>>& nb, const Eigen::MatrixXd& w) {
  const Eigen::Index n = static_cast<Eigen::Index>(nb.size());
  if (w.rows() != n || w.cols() != n)
    invalid("mixing matrix is " + std::to_string(w.rows()) + "x" + std::to_string(w.cols()) +
            " for " + std::to_string(n) + " nodes");
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& row = nb[static_cast<std::size_t>(i)];
    auto next = row.begin(); // walks the sorted neighbour list alongside the columns
    double sum = 0.0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double x = w(i, j);
      const bool linked = j == i || (next != row.end() && *next == j);
      if (next != row.end() && *next == j)
        ++next;
      // Built only on failure: this loop visits all n^2 entries.
      const auto at = [&] { return "W(" + std::to_string(i) + "," + std::to_string(j) + ")"; };
      if (!std::isfinite(x) || x < 0.0)
        invalid(at() + " = " + std::to_string(x) + " is not a finite non-negative weight");
      if (linked && x == 0.0)
        invalid(at() + " is 0 but must be positive on an edge or the diagonal");
      if (!linked && x != 0.0)
        invalid(at() + " is non-zero but " + std::to_string(j) + " is not a neighbour of " +
                std::to_string(i));
      if (j > i && std::fabs(x - w(j, i)) > kTolerance)
        invalid("mixing matrix is not symmetric at " + at());
      sum += x;
    }
    if (std::fabs(sum - 1.0) > kTolerance)
      invalid("row " + std::to_string(i) + " of the mixing matrix sums to " + std::to_string(sum) +
              ", not 1");
  }
}

// Longest shortest path, by one BFS per node; throws for a disconnected graph.
int compute_diameter(const std::vector<std::vector<int>>& nb) {
  const std::size_t n = nb.size();
  Graph g(n);
  for (std::size_t i = 0; i < n; ++i)
    for (int j : nb[i])
      if (static_cast<std::size_t>(j) > i)
        boost::add_edge(i, static_cast<std::size_t>(j), g);

  std::vector<int> dist(n);
  std::vector<boost::default_color_type> color(n);
  const auto index = boost::get(boost::vertex_index, g);
  const auto dist_map = boost::make_iterator_property_map(dist.begin(), index);
  const auto color_map = boost::make_iterator_property_map(color.begin(), index);
  int diameter = 0;
  for (std::size_t s = 0; s < n; ++s) {
    // A node adjacent to all others has eccentricity 1: skipping its BFS makes a complete
    // graph O(n^2) instead of O(n^3).
    if (n > 1 && nb[s].size() == n - 1) {
      diameter = std::max(diameter, 1);
      continue;
    }
    std::fill(dist.begin(), dist.end(), -1);
    dist[s] = 0;
    boost::breadth_first_search(g, s,
                                boost::visitor(boost::make_bfs_visitor(boost::record_distances(
                                                   dist_map, boost::on_tree_edge())))
                                    .color_map(color_map));
    for (int d : dist) {
      if (d < 0)
        invalid("graph is disconnected (node " + std::to_string(s) + " does not reach every node)");
      diameter = std::max(diameter, d);
    }
  }
  return diameter;
}

} // namespace

Topology::Topology(std::string name, std::vector<std::vector<int>> neighbors,
                   Eigen::MatrixXd mixing)
    : name_(std::move(name)), neighbors_(std::move(neighbors)), mixing_(std::move(mixing)) {
  if (neighbors_.empty())
    invalid("needs at least one node");
  check_neighbors(neighbors_);
  check_mixing(neighbors_, mixing_);
  weights_.resize(neighbors_.size());
  for (std::size_t i = 0; i < neighbors_.size(); ++i)
    for (int j : neighbors_[i])
      weights_[i].push_back(mixing_(static_cast<Eigen::Index>(i), j));
  diameter_ = compute_diameter(neighbors_);
  const Eigen::VectorXd self = mixing_.diagonal();
  const MixingSpectrum spectrum =
      mixing_spectrum(neighbors_, weights_, std::span<const double>(self.data(), self.size()));
  spectral_gap_ = spectrum.gap;
  min_eigenvalue_ = spectrum.lambda_min;
}

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

int Topology::diameter() const {
  return diameter_;
}

std::size_t Topology::num_edges() const {
  std::size_t twice = 0;
  for (const auto& nb : neighbors_)
    twice += nb.size();
  return twice / 2;
}

} // namespace dtsim
