// SPDX-License-Identifier: MIT
// An immutable communication graph with its mixing matrix and spectral gap.
#pragma once

#include "topologies/mixing.hpp"

#include <Eigen/Core>
#include <span>
#include <string>
#include <vector>

namespace dtsim {

// Exact diameters cost one BFS per node (O(n * edges)); above this many nodes a lower bound.
inline constexpr int kExactDiameterMaxNodes = 4096;

// Undirected, connected graph over nodes 0..n-1 with a symmetric, doubly stochastic mixing
// matrix W (W_ij > 0 iff j is a neighbour of i or j == i), stored sparsely: O(n + edges)
// memory and setup time apart from the diameter, which is exact up to kExactDiameterMaxNodes
// nodes and a lower bound above. Neighbour lists exclude i and are sorted;
// weights(i)[k] = W(i, neighbors(i)[k]). Built by the functions of make_topology.hpp; every
// constructor checks the graph and W and throws std::invalid_argument on a violation.
class Topology {
public:
  Topology(std::string name, std::vector<std::vector<int>> neighbors, MixingWeights mixing);
  // From a dense W (tests, small user matrices); its zero pattern must match the graph.
  Topology(std::string name, std::vector<std::vector<int>> neighbors,
           const Eigen::MatrixXd& mixing);

  const std::string& name() const { return name_; }
  int size() const { return static_cast<int>(neighbors_.size()); }
  std::span<const int> neighbors(int i) const { return neighbors_[static_cast<std::size_t>(i)]; }
  std::span<const double> weights(int i) const {
    return mixing_.weights[static_cast<std::size_t>(i)];
  }
  double self_weight(int i) const { return mixing_.self[static_cast<std::size_t>(i)]; }
  // The dense n x n W, built on request (tests, `dtsim topology` on small graphs).
  Eigen::MatrixXd mixing_matrix() const { return to_dense(neighbors_, mixing_); }

  int min_degree() const;
  int max_degree() const;
  // Hops, computed once at construction: exact when diameter_exact(), else the longest
  // shortest path found by a double BFS sweep (a lower bound; n > kExactDiameterMaxNodes).
  int diameter() const { return diameter_; }
  bool diameter_exact() const { return diameter_exact_; }
  double spectral_gap() const { return spectral_gap_; }     // 1 - max(|lambda_2|, |lambda_n|)
  double min_eigenvalue() const { return min_eigenvalue_; } // lambda_n of W (1 for n = 1)
  std::size_t num_edges() const;                            // undirected edges

private:
  std::string name_;
  std::vector<std::vector<int>> neighbors_;
  MixingWeights mixing_;
  int diameter_ = 0;
  bool diameter_exact_ = true;
  double spectral_gap_ = 0.0;
  double min_eigenvalue_ = 1.0;
};

} // namespace dtsim
