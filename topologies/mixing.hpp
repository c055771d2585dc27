// SPDX-License-Identifier: MIT
// Symmetric, doubly stochastic mixing matrices for an undirected graph.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace dtsim {

// Both take sorted neighbour lists (without self-loops) of an undirected graph over 0..n-1
// and return the dense n x n matrix W with W_ij > 0 exactly on edges and the diagonal.

// Metropolis-Hastings weights: W_ij = 1 / (1 + max(deg_i, deg_j)) on edges and
// W_ii = 1 - sum_j W_ij. Doubly stochastic on any graph (Xiao & Boyd 2004; algorithms.md 13).
Eigen::MatrixXd metropolis_mixing(const std::vector<std::vector<int>>& neighbors);

// Uniform weights over the closed neighbourhood, W_ij = 1 / (deg_i + 1). Symmetric (hence
// doubly stochastic) only on a regular graph, so requires one: throws std::invalid_argument
// otherwise.
Eigen::MatrixXd uniform_mixing(const std::vector<std::vector<int>>& neighbors);

// True when every node has the same degree.
bool is_regular(const std::vector<std::vector<int>>& neighbors);

} // namespace dtsim
