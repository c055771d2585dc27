// SPDX-License-Identifier: MIT
// A user's mixing matrix (topology.mixing: {kind: file, path: W.csv}) over a built graph.
#pragma once

#include "topologies/mixing.hpp"

#include <functional>
#include <string>
#include <vector>

namespace dtsim {

// Entries may differ from exact arithmetic by this much (a matrix written with 10 or more
// significant digits passes).
inline constexpr double kUserMixingTolerance = 1e-9;

// Checks a dense W (rows[i][j] = W(i, j)) against the graph given by sorted neighbour lists:
// n x n, W(i, j) > 0 exactly on the edges, W(i, i) > 0, rows summing to 1 and W symmetric
// (so doubly stochastic, which every gossip method of dtsim assumes, and with real
// eigenvalues for the spectral gap), both within kUserMixingTolerance. Calls `fail` (which
// must throw) with the first violation, naming the entry. The weights returned are the
// user's made exact: each off-diagonal pair averaged, W(i, i) = 1 - the rest of row i.
MixingWeights mixing_from_matrix(const std::vector<std::vector<double>>& rows,
                                 const std::vector<std::vector<int>>& neighbors,
                                 const std::function<void(const std::string& message)>& fail);

} // namespace dtsim
