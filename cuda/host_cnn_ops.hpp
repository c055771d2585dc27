// SPDX-License-Identifier: MIT
// The host executor of run_cnn_batch: HostConvOps plus plain loops over the CNN kernels'
// element functions (tests/cuda/cnn_pipeline_test.cpp).
#pragma once

#include "cuda/cnn_batch_math.hpp"
#include "cuda/host_conv_ops.hpp"

namespace dtsim::cuda {

struct HostCnnOps : HostConvOps {
  static void conv_bias(float* z, const CnnStageShape& s, int n, const float* params,
                        std::size_t num_params, int count) {
    each(count, s.conv.out_map(n),
         [&](int b, std::size_t i) { conv_bias_element(z, s, n, params, num_params, b, i); });
  }
  static void relu_max_pool(const float* z, const CnnStageShape& s, int n, float* a, int count) {
    each(count, s.pooled_map(n),
         [&](int b, std::size_t i) { relu_max_pool_element(z, s, n, a, b, i); });
  }
  static void max_pool_backward(const float* z, const float* da, const CnnStageShape& s, int n,
                                float* dz, int count) {
    each(count, s.conv.out_map(n),
         [&](int b, std::size_t i) { max_pool_backward_element(z, da, s, n, dz, b, i); });
  }
  static void conv_bias_gradient(const float* dz, const CnnStageShape& s, int n, float* grads,
                                 std::size_t num_params, int count) {
    each(count, static_cast<std::size_t>(s.conv.out), [&](int b, std::size_t c) {
      conv_bias_gradient_element(dz, s, n, grads, num_params, b, static_cast<int>(c));
    });
  }
  static void flatten(const CnnStageShape& s, int n, float* map, float* flat, bool to_map,
                      int count) {
    each(count, s.pooled_map(n),
         [&](int b, std::size_t i) { flatten_element(s, n, map, flat, to_map, b, i); });
  }
};

} // namespace dtsim::cuda
