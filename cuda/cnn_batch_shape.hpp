// SPDX-License-Identifier: MIT
// A models::Cnn's layers as the batched pass sees them (host code: the CUDA sources do not
// include the model's Eigen headers).
#pragma once

#include "cuda/cnn_batch_math.hpp"
#include "models/cnn.hpp"

namespace dtsim::cuda {

inline CnnBatchShape cnn_batch_shape(const Cnn& model) {
  CnnBatchShape s;
  const ConvLayer& first = model.convs().front();
  s.channels = first.in_channels;
  s.height = first.in_height;
  s.width = first.in_width;
  for (const ConvLayer& c : model.convs())
    s.stages.push_back({ConvShape{c.in_channels, c.out_channels, c.in_height, c.in_width, 1,
                                  c.offset, c.kernel, c.pad}});
  for (const DenseLayer& d : model.dense())
    s.dense.push_back({d.in, d.out, d.offset});
  s.num_params = model.num_params();
  return s;
}

} // namespace dtsim::cuda
