// SPDX-License-Identifier: MIT
// A models::ResNet's layers as the batched pass sees them (host code: the CUDA sources do
// not include the model's Eigen headers).
#pragma once

#include "cuda/resnet_batch_math.hpp"
#include "models/resnet.hpp"
#include "sim/core/errors.hpp"

namespace dtsim::cuda {

inline ResNetBatchShape resnet_batch_shape(const ResNet& model) {
  auto conv = [](const GemmConv& c) {
    // The batched pass runs ResNet's 3x3, padding-1 convolutions only.
    DTSIM_ASSERT(c.kernel == 3 && c.pad == 1, "resnet_batch_shape: not a 3x3 padding-1 conv");
    return ConvShape{c.in_channels, c.out_channels, c.in_height, c.in_width, c.stride, c.offset};
  };
  auto norm = [](const GroupNorm& g) {
    return NormShape{g.channels, g.groups, g.pixels, g.offset};
  };
  ResNetBatchShape s;
  const std::vector<int>& input = model.config().input_shape;
  s.channels = input[0];
  s.height = input[1];
  s.width = input[2];
  s.stem = conv(model.stem());
  s.stem_norm = norm(model.stem_norm());
  for (const ResNet::Block& b : model.blocks())
    s.blocks.push_back({conv(b.conv1), conv(b.conv2), norm(b.norm1), norm(b.norm2)});
  s.head = {model.head().in, model.head().out, model.head().offset};
  s.num_params = model.num_params();
  return s;
}

} // namespace dtsim::cuda
