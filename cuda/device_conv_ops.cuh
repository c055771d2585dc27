// SPDX-License-Identifier: MIT
// The device executors' im2col and col2im steps, shared by the ResNet and CNN executors.
#pragma once

#include "cuda/conv_batch_math.hpp"
#include "cuda/device_mlp_ops.cuh"

namespace dtsim::cuda {
namespace {

struct DeviceConvOps : DeviceMlpOps {
  void im2col(const float* x, MapView v, const ConvShape& c, int n, float* patches,
              int count) const {
    each_element(stream, count, c.out_pixels() * n, [=] __device__(int b, std::size_t row) {
      im2col_row(x, v, c, n, patches, b, row);
    });
  }
  void col2im(const float* dpatches, const ConvShape& c, int n, float* dx, int count) const {
    each_element(stream, count, c.in_pixels() * n, [=] __device__(int b, std::size_t pos) {
      col2im_position(dpatches, c, n, dx, b, pos);
    });
  }
};

} // namespace
} // namespace dtsim::cuda
