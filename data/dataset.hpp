// SPDX-License-Identifier: MIT
// In-memory labelled datasets, normalised once and shared read-only by every node.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

// A labelled dataset. Examples are the columns of `features` (num_features x size), so that
// a minibatch gathered column by column is directly the right-hand side of a GEMM.
// `shape` is the per-example layout for convolutional models (channels, height, width), or
// {num_features} for flat data. Invariant: labels.size() == features.cols(), labels in
// [0, num_classes).
struct Dataset {
  std::string name;
  int num_classes = 0;
  std::vector<int> shape;
  Eigen::MatrixXf features;
  std::vector<std::int32_t> labels;

  int num_features() const { return static_cast<int>(features.rows()); }
  std::size_t size() const { return labels.size(); }
};

struct DataSplit {
  Dataset train;
  Dataset test;
};

} // namespace dtsim
