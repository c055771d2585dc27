// SPDX-License-Identifier: MIT
// The host executors' element loop and the im2col / col2im steps shared by the ResNet and
// CNN host executors (HostMlpOps's GEMM and dense-layer steps underneath).
#pragma once

#include "cuda/conv_batch_math.hpp"
#include "cuda/host_mlp_ops.hpp"

namespace dtsim::cuda {

struct HostConvOps : HostMlpOps {
  // f(b, i) for every node b < count and element i < per_node.
  template <class F> static void each(int count, std::size_t per_node, F f) {
    for (int b = 0; b < count; ++b)
      for (std::size_t i = 0; i < per_node; ++i)
        f(b, i);
  }
  static void im2col(const float* x, MapView v, const ConvShape& c, int n, float* patches,
                     int count) {
    each(count, c.out_pixels() * n,
         [&](int b, std::size_t row) { im2col_row(x, v, c, n, patches, b, row); });
  }
  static void col2im(const float* dpatches, const ConvShape& c, int n, float* dx, int count) {
    each(count, c.in_pixels() * n,
         [&](int b, std::size_t pos) { col2im_position(dpatches, c, n, dx, b, pos); });
  }
};

} // namespace dtsim::cuda
