// SPDX-License-Identifier: MIT
// run_mlp_batch's executor on the device: cuBLAS for the GEMMs (with their bias in the
// epilogue where epilogues is set), one element kernel per other step, all on one stream.
// The ResNet executor extends it.
#pragma once

#include "cuda/bias_epilogue_gemm.cuh"
#include "cuda/device_memory.cuh"
#include "cuda/mlp_batch_math.hpp"

namespace dtsim::cuda {
namespace {

struct DeviceMlpOps {
  cublasHandle_t blas;
  cudaStream_t stream;
  BiasEpilogueGemms* epilogues; // null: the bias (and ReLU) by add_bias, after the product

  void gemm(const StridedGemm& g) const {
    const float one = 1.0f, zero = 0.0f;
    check(cublasSgemmStridedBatched(blas, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &one, g.a,
                                    g.lda, g.stride_a, g.b, g.ldb, g.stride_b, &zero, g.c, g.ldc,
                                    g.stride_c, g.count),
          "cublasSgemmStridedBatched");
  }
  // False where there are no epilogues or they do not take g: forward_layer then runs it
  // and add_bias.
  bool gemm_with_bias(const StridedGemm& g, const float* bias, long long bias_stride,
                      bool relu) const {
    return epilogues && epilogues->run(stream, g, bias, bias_stride, relu);
  }
  void gather(const MlpBatchBuffers& buf, int features, int n, int count) const {
    const float* train = buf.train;
    const std::uint32_t* idx = buf.idx;
    float* x = buf.x;
    const std::size_t per_node = static_cast<std::size_t>(features) * n;
    if (gather_by_quads(train, features, x))
      each_element(stream, count, per_node / kGatherQuad, [=] __device__(int b, std::size_t q) {
        gather_quad(train, features, idx, n, x, b, q);
      });
    else
      each_element(stream, count, per_node, [=] __device__(int b, std::size_t e) {
        gather_element(train, features, idx, n, x, b, e);
      });
  }
  void add_bias(float* z, int out, int n, const float* params, std::size_t num_params,
                std::size_t bias_offset, bool relu, int count) const {
    each_element(stream, count, static_cast<std::size_t>(out) * n,
                 [=] __device__(int b, std::size_t e) {
                   add_bias_element(z, out, n, params, num_params, bias_offset, relu, b, e);
                 });
  }
  void softmax_xent(const float* logits, int classes, int n, const MlpBatchBuffers& buf,
                    float* dlogits, int count) const {
    const std::int32_t* labels = buf.labels;
    const std::uint32_t* idx = buf.idx;
    double* column_loss = buf.column_loss;
    each_element(stream, count, static_cast<std::size_t>(n), [=] __device__(int b, std::size_t k) {
      softmax_xent_column(logits, classes, n, labels, idx, dlogits, column_loss, b,
                          static_cast<int>(k));
    });
  }
  void mean_loss(const MlpBatchBuffers& buf, int n, int count) const {
    const double* column_loss = buf.column_loss;
    double* loss = buf.loss;
    each_element(stream, 1, static_cast<std::size_t>(count), [=] __device__(int, std::size_t b) {
      mean_loss_node(column_loss, n, loss, static_cast<int>(b));
    });
  }
  void bias_gradient(const float* dz, int out, int n, float* grads, std::size_t num_params,
                     std::size_t bias_offset, int count) const {
    each_element(
        stream, count, static_cast<std::size_t>(out), [=] __device__(int b, std::size_t j) {
          bias_gradient_row(dz, out, n, grads, num_params, bias_offset, b, static_cast<int>(j));
        });
  }
  void relu_backward_bias(const float* a, float* d, int out, int n, float* grads,
                          std::size_t num_params, std::size_t bias_offset, int count) const {
    each_element(stream, count, static_cast<std::size_t>(out),
                 [=] __device__(int b, std::size_t j) {
                   relu_backward_bias_row(a, d, out, n, grads, num_params, bias_offset, b,
                                          static_cast<int>(j));
                 });
  }
  void relu_backward(const float* a, float* d, std::size_t total) const {
    each_element(stream, 1, total,
                 [=] __device__(int, std::size_t e) { relu_backward_element(a, d, e); });
  }
  void eval_columns(const MlpEvalBuffers& buf, const float* logits, int classes, int n,
                    int count) const {
    const std::int32_t* labels = buf.labels;
    double* column_loss = buf.column_loss;
    std::int32_t* column_correct = buf.column_correct;
    each_element(stream, count, static_cast<std::size_t>(n), [=] __device__(int b, std::size_t k) {
      eval_column(logits, classes, n, labels, column_loss, column_correct, b, static_cast<int>(k));
    });
  }
  void eval_nodes(const MlpEvalBuffers& buf, int n, int count) const {
    const double* column_loss = buf.column_loss;
    const std::int32_t* column_correct = buf.column_correct;
    double* loss_sum = buf.loss_sum;
    std::int64_t* correct = buf.correct;
    each_element(stream, 1, static_cast<std::size_t>(count), [=] __device__(int, std::size_t b) {
      eval_node(column_loss, column_correct, n, loss_sum, correct, static_cast<int>(b));
    });
  }
};

} // namespace
} // namespace dtsim::cuda
