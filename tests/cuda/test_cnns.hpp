// SPDX-License-Identifier: MIT
// The CNN configurations the batched-pass tests share.
#pragma once

#include "models/cnn.hpp"

#include <utility>
#include <vector>

namespace dtsim::test {

inline Cnn::Config lenet(std::vector<int> input = {1, 28, 28}, std::vector<int> padding = {2, 0}) {
  Cnn::Config c;
  c.name = "lenet";
  c.input_shape = std::move(input);
  c.padding = std::move(padding);
  return c;
}

// Odd map sizes (the pools drop a row and a column), kernel 3, one hidden layer.
inline Cnn::Config small_cnn() {
  Cnn::Config c;
  c.input_shape = {2, 11, 9};
  c.channels = {4, 5};
  c.padding = {1, 0};
  c.kernel = 3;
  c.hidden = {7};
  c.num_classes = 3;
  return c;
}

} // namespace dtsim::test
