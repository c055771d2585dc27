// SPDX-License-Identifier: MIT
// The host executor of run_mlp_batch: plain loops over the kernels' element functions and a
// naive strided-batched GEMM. It checks, without a GPU, everything in DeviceMlp's pass but
// the CUDA calls themselves: the layer order, the offsets, strides, leading dimensions and
// transposes handed to cuBLAS, and the kernels' math (tests/cuda/mlp_pipeline_test.cpp).
#pragma once

#include "cuda/mlp_batch_math.hpp"

namespace dtsim::cuda {

struct HostMlpOps {
  // cuBLAS's column-major semantics: element (r, c) of X is X[r + c * ld]; op(A) is m x k.
  static void gemm(const StridedGemm& g) {
    for (int i = 0; i < g.count; ++i) {
      const float* a = g.a + i * g.stride_a;
      const float* b = g.b + i * g.stride_b;
      float* c = g.c + i * g.stride_c;
      for (int col = 0; col < g.n; ++col)
        for (int row = 0; row < g.m; ++row) {
          float s = 0.0f;
          for (int p = 0; p < g.k; ++p) {
            const float av = g.trans_a ? a[p + static_cast<long long>(row) * g.lda]
                                       : a[row + static_cast<long long>(p) * g.lda];
            const float bv = g.trans_b ? b[col + static_cast<long long>(p) * g.ldb]
                                       : b[p + static_cast<long long>(col) * g.ldb];
            s += av * bv;
          }
          c[row + static_cast<long long>(col) * g.ldc] = s;
        }
    }
  }
  static void gather(const MlpBatchBuffers& buf, int features, int n, int count) {
    const std::size_t per_node = static_cast<std::size_t>(features) * n;
    const bool quads = gather_by_quads(buf.train, features, buf.x);
    for (int b = 0; b < count; ++b) {
      if (quads)
        for (std::size_t q = 0; q < per_node / kGatherQuad; ++q)
          gather_quad(buf.train, features, buf.idx, n, buf.x, b, q);
      else
        for (std::size_t e = 0; e < per_node; ++e)
          gather_element(buf.train, features, buf.idx, n, buf.x, b, e);
    }
  }
  static void add_bias(float* z, int out, int n, const float* params, std::size_t num_params,
                       std::size_t bias_offset, bool relu, int count) {
    for (int b = 0; b < count; ++b)
      for (std::size_t e = 0; e < static_cast<std::size_t>(out) * n; ++e)
        add_bias_element(z, out, n, params, num_params, bias_offset, relu, b, e);
  }
  static void softmax_xent(const float* logits, int classes, int n, const MlpBatchBuffers& buf,
                           float* dlogits, int count) {
    for (int b = 0; b < count; ++b)
      for (int k = 0; k < n; ++k)
        softmax_xent_column(logits, classes, n, buf.labels, buf.idx, dlogits, buf.column_loss, b,
                            k);
  }
  static void mean_loss(const MlpBatchBuffers& buf, int n, int count) {
    for (int b = 0; b < count; ++b)
      mean_loss_node(buf.column_loss, n, buf.loss, b);
  }
  static void bias_gradient(const float* dz, int out, int n, float* grads, std::size_t num_params,
                            std::size_t bias_offset, int count) {
    for (int b = 0; b < count; ++b)
      for (int j = 0; j < out; ++j)
        bias_gradient_row(dz, out, n, grads, num_params, bias_offset, b, j);
  }
  static void relu_backward_bias(const float* a, float* d, int out, int n, float* grads,
                                 std::size_t num_params, std::size_t bias_offset, int count) {
    for (int b = 0; b < count; ++b)
      for (int j = 0; j < out; ++j)
        relu_backward_bias_row(a, d, out, n, grads, num_params, bias_offset, b, j);
  }
  static void relu_backward(const float* a, float* d, std::size_t total) {
    for (std::size_t e = 0; e < total; ++e)
      relu_backward_element(a, d, e);
  }
  static void eval_columns(const MlpEvalBuffers& buf, const float* logits, int classes, int n,
                           int count) {
    for (int b = 0; b < count; ++b)
      for (int k = 0; k < n; ++k)
        eval_column(logits, classes, n, buf.labels, buf.column_loss, buf.column_correct, b, k);
  }
  static void eval_nodes(const MlpEvalBuffers& buf, int n, int count) {
    for (int b = 0; b < count; ++b)
      eval_node(buf.column_loss, buf.column_correct, n, buf.loss_sum, buf.correct, b);
  }
};

} // namespace dtsim::cuda
