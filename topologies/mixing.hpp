// SPDX-License-Identifier: MIT
// Symmetric, doubly stochastic mixing matrices for an undirected graph, stored sparsely.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace dtsim {

// The non-zero entries of a mixing matrix W over a graph given by sorted neighbour lists:
// weights[i][k] = W(i, neighbors[i][k]) and self[i] = W(i, i). O(edges) memory, so that
// graphs of 100,000 nodes and more fit.
struct MixingWeights {
  std::vector<std::vector<double>> weights;
  std::vector<double> self;
};

// Both take sorted neighbour lists (without self-loops) of an undirected graph over 0..n-1.
// Metropolis-Hastings weights: W_ij = 1 / (1 + max(deg_i, deg_j)) on edges and
// W_ii = 1 - sum_j W_ij. Doubly stochastic on any graph (Xiao & Boyd 2004).
MixingWeights metropolis_weights(const std::vector<std::vector<int>>& neighbors);
// Uniform weights over the closed neighbourhood, W_ij = 1 / (deg_i + 1). Symmetric (hence
// doubly stochastic) only on a regular graph, so requires one: throws std::invalid_argument
// otherwise.
MixingWeights uniform_weights(const std::vector<std::vector<int>>& neighbors);

// The dense n x n matrix (tests, `dtsim topology` on small graphs).
Eigen::MatrixXd to_dense(const std::vector<std::vector<int>>& neighbors, const MixingWeights& w);
inline Eigen::MatrixXd metropolis_mixing(const std::vector<std::vector<int>>& neighbors) {
  return to_dense(neighbors, metropolis_weights(neighbors));
}
inline Eigen::MatrixXd uniform_mixing(const std::vector<std::vector<int>>& neighbors) {
  return to_dense(neighbors, uniform_weights(neighbors));
}

// True when every node has the same degree.
bool is_regular(const std::vector<std::vector<int>>& neighbors);

} // namespace dtsim
