// SPDX-License-Identifier: MIT
// An immutable communication graph with its mixing matrix and spectral gap.
#pragma once

#include <Eigen/Core>
#include <span>
#include <string>
#include <vector>

namespace dtsim {

// Undirected, connected graph over nodes 0..n-1 with a symmetric, doubly stochastic mixing
// matrix W (W_ij > 0 iff j is a neighbour of i or j == i). Neighbour lists exclude i and are
// sorted; weights(i)[k] = W(i, neighbors(i)[k]). Built only by the functions of
// make_topology.hpp, which check connectivity and stochasticity.
class Topology {
public:
  Topology(std::string name, std::vector<std::vector<int>> neighbors, Eigen::MatrixXd mixing);

  const std::string& name() const { return name_; }
  int size() const { return static_cast<int>(neighbors_.size()); }
  std::span<const int> neighbors(int i) const { return neighbors_[static_cast<std::size_t>(i)]; }
  std::span<const double> weights(int i) const { return weights_[static_cast<std::size_t>(i)]; }
  double self_weight(int i) const { return mixing_(i, i); }
  const Eigen::MatrixXd& mixing_matrix() const { return mixing_; }

  int min_degree() const;
  int max_degree() const;
  int diameter() const;                                     // hops; computed once at construction
  double spectral_gap() const { return spectral_gap_; }     // 1 - max(|lambda_2|, |lambda_n|)
  double min_eigenvalue() const { return min_eigenvalue_; } // lambda_n of W (1 for n = 1)
  std::size_t num_edges() const;                            // undirected edges

private:
  std::string name_;
  std::vector<std::vector<int>> neighbors_;
  std::vector<std::vector<double>> weights_;
  Eigen::MatrixXd mixing_;
  int diameter_ = 0;
  double spectral_gap_ = 0.0;
  double min_eigenvalue_ = 1.0;
};

} // namespace dtsim
