// SPDX-License-Identifier: MIT
// The host executor of run_resnet_batch: HostConvOps plus plain loops over the ResNet
// kernels' element functions. It checks, without a GPU, everything in
// DeviceResNet's pass but the CUDA calls themselves (tests/cuda/resnet_pipeline_test.cpp).
#pragma once

#include "cuda/host_conv_ops.hpp"
#include "cuda/resnet_batch_math.hpp"

namespace dtsim::cuda {

struct HostResNetOps : HostConvOps {
  static void norm_stats(const float* z, const NormShape& g, int n, float* partial, float* stats,
                         int count) {
    for (const bool squares : {false, true}) {
      each(count, static_cast<std::size_t>(n) * g.channels, [&](int b, std::size_t t) {
        norm_channel_sum_element(z, stats, g, n, squares, partial, b, static_cast<int>(t));
      });
      each(count, static_cast<std::size_t>(n) * g.groups, [&](int b, std::size_t t) {
        norm_group_stat_element(partial, g, n, squares, stats, b, static_cast<int>(t));
      });
    }
  }
  static void norm_apply(const float* z, const float* stats, const float* params,
                         std::size_t num_params, const NormShape& g, int n, bool relu, float* y,
                         int count) {
    each(count, static_cast<std::size_t>(g.channels) * g.pixels * n, [&](int b, std::size_t i) {
      norm_apply_element(z, stats, params, num_params, g, n, relu, y, b, i);
    });
  }
  static void norm_backward(const float* z, const float* stats, const float* dy, float* sums,
                            const float* params, float* grads, std::size_t num_params,
                            const NormShape& g, int n, float* dz, int count) {
    each(count, static_cast<std::size_t>(n) * g.channels, [&](int b, std::size_t t) {
      norm_sums_element(z, stats, dy, g, n, sums, b, static_cast<int>(t));
    });
    each(count, static_cast<std::size_t>(g.channels), [&](int b, std::size_t c) {
      norm_param_grad_element(sums, g, n, grads, num_params, b, static_cast<int>(c));
    });
    each(count, static_cast<std::size_t>(g.channels) * g.pixels * n, [&](int b, std::size_t i) {
      norm_input_grad_element(z, stats, dy, sums, params, num_params, g, n, dz, b, i);
    });
  }
  static void shortcut_relu(const float* in, const ConvShape& c, int n, float* out, int count) {
    each(count, c.out_map(n),
         [&](int b, std::size_t i) { shortcut_relu_element(in, c, n, out, b, i); });
  }
  static void shortcut_backward(const float* d_out, const ConvShape& c, int n, float* d_in,
                                int count) {
    each(count, c.in_map(n),
         [&](int b, std::size_t i) { shortcut_backward_element(d_out, c, n, d_in, b, i); });
  }
  static void average_pool(const float* map, int channels, int pixels, int n, float* pooled,
                           int count) {
    each(count, static_cast<std::size_t>(channels) * n, [&](int b, std::size_t t) {
      average_pool_element(map, channels, pixels, n, pooled, b, static_cast<int>(t));
    });
  }
  static void average_pool_backward(const float* dpooled, int channels, int pixels, int n,
                                    float* d_map, int count) {
    each(count, static_cast<std::size_t>(channels) * pixels * n, [&](int b, std::size_t i) {
      average_pool_backward_element(dpooled, channels, pixels, n, d_map, b, i);
    });
  }
};

} // namespace dtsim::cuda
