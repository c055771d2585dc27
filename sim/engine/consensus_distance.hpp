// SPDX-License-Identifier: MIT
// The evaluations' consensus distance of node models held on the host: the engine's, and
// the CPU resident backend's (which must write the engine's bits).
#pragma once

#include "sim/core/flat_vector.hpp"

namespace dtsim {

// (1/n) sum_i ||x_i - mean||^2 over the n columns of `models` (one node model each), with
// mean = the columns' sum / n (into `mean`, resized as needed; Eigen's rowwise sum, which
// adds columns in a small tree, so not Context::mean_of_models' bits: the engine and the
// CPU resident backend share this function, so their traces agree), each node's squared
// norm in float and their sum in double, in node order.
inline double consensus_distance(const Eigen::MatrixXf& models, Vec& mean) {
  const auto n = models.cols();
  mean = models.rowwise().sum() / static_cast<float>(n);
  double sum = 0;
  for (Eigen::Index i = 0; i < n; ++i)
    sum += static_cast<double>((models.col(i) - mean).squaredNorm());
  return sum / static_cast<double>(n);
}

} // namespace dtsim
