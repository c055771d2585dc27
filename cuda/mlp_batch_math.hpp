// SPDX-License-Identifier: MIT
// The batched MLP pass of DeviceMlp as one sequence of steps over an executor, and the
// per-element math of its kernels: shared by the CUDA executor (device_mlp.cu) and the host
// reference executor (host_mlp_ops.hpp) that tests run without a GPU.
#pragma once

#include "sim/core/host_device.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace dtsim::cuda {

// One dense layer of the flat parameter vector (models/mlp.hpp's layout): W (out x in,
// column-major) at `offset`, then the bias.
struct BatchLayer {
  int in = 0;
  int out = 0;
  std::size_t offset = 0;
  std::size_t bias_offset() const { return offset + static_cast<std::size_t>(out) * in; }
};

struct MlpBatchShape {
  std::vector<BatchLayer> layers;
  std::size_t num_params = 0;
  int features = 0;
  int widest = 0;
};

// widths: inputs, hidden widths..., classes.
inline MlpBatchShape mlp_batch_shape(const std::vector<int>& widths) {
  MlpBatchShape s;
  s.features = widths.front();
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    s.layers.push_back({widths[l], widths[l + 1], s.num_params});
    s.num_params += static_cast<std::size_t>(widths[l + 1]) * (widths[l] + 1);
    s.widest = widths[l + 1] > s.widest ? widths[l + 1] : s.widest;
  }
  return s;
}

// The buffers every batched pass reads or writes besides its own scratch, each holding
// `count` nodes' blocks (params and grads num_params floats each; idx and column_loss n
// entries; loss one).
struct BatchCommon {
  const float* train = nullptr;         // features x examples, column-major
  const std::int32_t* labels = nullptr; // of the training set
  const float* params = nullptr;
  float* grads = nullptr;
  const std::uint32_t* idx = nullptr;
  double* column_loss = nullptr;
  double* loss = nullptr;
};

// Where a batch lives (device or host memory, per executor). Per node b, every buffer holds
// node b's block at b times its per-node size: params and grads num_params floats, x
// features x n, act[l] out_l x n, delta[0..1] widest x n, idx and column_loss n entries.
struct MlpBatchBuffers : BatchCommon {
  float* x = nullptr;
  float* const* act = nullptr; // one per layer
  float* delta[2] = {nullptr, nullptr};
};

// ---- The kernels' math, one element each (b: node; e, k, j: element, example, row). ----

// The quotient e / d in 32-bit arithmetic where a node's elements fit (they always do in
// practice): a GPU has no 64-bit integer divider, so a 64-bit quotient is a long software
// routine per element. The minibatch gather and the bias kernels, which took one, ran at 41%
// and 30 to 39% of the H100's DRAM bandwidth in the fourth lease's profile, where the
// resident steps' plain streaming kernel reaches 82% (docs/cuda.md). Uniform across a
// kernel's threads: the branch never diverges.
DTSIM_HD inline std::size_t element_quotient(std::size_t e, std::size_t per_node, unsigned d) {
  return per_node <= 0xFFFFFFFFu ? static_cast<std::uint32_t>(e) / d : e / d;
}

// x[b] = the training columns idx[b][0..n).
DTSIM_HD inline void gather_element(const float* train, int features, const std::uint32_t* idx,
                                    int n, float* x, int b, std::size_t e) {
  const std::size_t per_node = static_cast<std::size_t>(features) * n;
  const std::size_t k = element_quotient(e, per_node, static_cast<unsigned>(features));
  const std::size_t f = e - k * static_cast<std::size_t>(features);
  const std::size_t row = idx[static_cast<std::size_t>(b) * n + k];
  x[b * per_node + e] = train[row * features + f];
}

// gather_element for elements 4 q .. 4 q + 3 at once, where features % 4 == 0 and both the
// training set and x are 16-byte aligned (gather_by_quads): one 16-byte load and store on a
// device, a quarter of the index math.
constexpr int kGatherQuad = 4;
DTSIM_HD inline bool gather_by_quads(const float* train, int features, const float* x) {
  return features % kGatherQuad == 0 && reinterpret_cast<std::uintptr_t>(train) % 16 == 0 &&
         reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
}
DTSIM_HD inline void gather_quad(const float* train, int features, const std::uint32_t* idx, int n,
                                 float* x, int b, std::size_t q) {
  const std::size_t per_node = static_cast<std::size_t>(features) * n;
  const std::size_t e = q * kGatherQuad;
  const std::size_t k = element_quotient(e, per_node, static_cast<unsigned>(features));
  const std::size_t f = e - k * static_cast<std::size_t>(features);
  const std::size_t row = idx[static_cast<std::size_t>(b) * n + k];
  const float* from = train + row * features + f;
  float* to = x + b * per_node + e;
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<float4*>(to) = *reinterpret_cast<const float4*>(from);
#else
  for (int j = 0; j < kGatherQuad; ++j)
    to[j] = from[j];
#endif
}

// z[b] (out x n) += node b's bias, then ReLU on hidden layers.
DTSIM_HD inline void add_bias_element(float* z, int out, int n, const float* params,
                                      std::size_t num_params, std::size_t bias_offset, bool relu,
                                      int b, std::size_t e) {
  const std::size_t per_node = static_cast<std::size_t>(out) * n;
  const std::size_t j =
      e - element_quotient(e, per_node, static_cast<unsigned>(out)) * static_cast<std::size_t>(out);
  const float v = z[b * per_node + e] + params[b * num_params + bias_offset + j];
  z[b * per_node + e] = relu ? (v > 0.0f ? v : 0.0f) : v;
}

// Example k of node b: dlogits = (softmax - onehot) / n (models/softmax_xent.cpp's formula)
// and its cross-entropy in column_loss.
DTSIM_HD inline void softmax_xent_column(const float* logits, int classes, int n,
                                         const std::int32_t* labels, const std::uint32_t* idx,
                                         float* dlogits, double* column_loss, int b, int k) {
  const std::size_t col = (static_cast<std::size_t>(b) * n + k) * classes;
  const float* z = logits + col;
  float* d = dlogits + col;
  const int y = labels[idx[static_cast<std::size_t>(b) * n + k]];
  float m = z[0];
  for (int c = 1; c < classes; ++c)
    m = z[c] > m ? z[c] : m;
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) {
    d[c] = expf(z[c] - m);
    sum += d[c];
  }
  column_loss[static_cast<std::size_t>(b) * n + k] = static_cast<double>(logf(sum) - (z[y] - m));
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int c = 0; c < classes; ++c)
    d[c] *= inv_n / sum;
  d[y] -= inv_n;
}

// loss[b] = the mean of node b's column losses, summed in example order.
DTSIM_HD inline void mean_loss_node(const double* column_loss, int n, double* loss, int b) {
  double s = 0.0;
  for (int k = 0; k < n; ++k)
    s += column_loss[static_cast<std::size_t>(b) * n + k];
  loss[b] = s / n;
}

// Row j of node b's bias gradient: the sum of dz[b]'s row j (out x n), in example order.
DTSIM_HD inline void bias_gradient_row(const float* dz, int out, int n, float* grads,
                                       std::size_t num_params, std::size_t bias_offset, int b,
                                       int j) {
  const float* row = dz + static_cast<std::size_t>(b) * out * n + j;
  float s = 0.0f;
  for (int k = 0; k < n; ++k)
    s += row[static_cast<std::size_t>(k) * out];
  grads[b * num_params + bias_offset + j] = s;
}

// d = d where the layer's (post-ReLU) output a > 0, else 0.
DTSIM_HD inline void relu_backward_element(const float* a, float* d, std::size_t e) {
  if (!(a[e] > 0.0f))
    d[e] = 0.0f;
}

// Row j of node b's delta below a hidden layer (out x n, out that layer's width): the ReLU
// mask of the layer's (post-ReLU) output a, as relu_backward_element applies it, then the
// row's sum, the layer's bias gradient, as bias_gradient_row makes it (in example order):
// one pass over the delta for the two, the same bits as the two steps apart. A thread takes
// a whole row, so it loads kReluAhead examples' values before it stores any: one memory
// latency per kReluAhead examples rather than per example (at the seventh lease the 128-row
// layer's kernel, one load-store step at a time, took as long as the 256-row layer's).
constexpr int kReluAhead = 4;
DTSIM_HD inline void relu_backward_bias_row(const float* a, float* d, int out, int n, float* grads,
                                            std::size_t num_params, std::size_t bias_offset, int b,
                                            int j) {
  const std::size_t first = static_cast<std::size_t>(b) * out * n + j;
  const auto column = [&](int k) { return first + static_cast<std::size_t>(k) * out; };
  float s = 0.0f;
  int k = 0;
  for (; k + kReluAhead <= n; k += kReluAhead) {
    float av[kReluAhead], dv[kReluAhead];
    for (int i = 0; i < kReluAhead; ++i) {
      av[i] = a[column(k + i)];
      dv[i] = d[column(k + i)];
    }
    for (int i = 0; i < kReluAhead; ++i) {
      const float v = av[i] > 0.0f ? dv[i] : 0.0f;
      d[column(k + i)] = v;
      s += v;
    }
  }
  for (; k < n; ++k) {
    const float v = a[column(k)] > 0.0f ? d[column(k)] : 0.0f;
    d[column(k)] = v;
    s += v;
  }
  grads[b * num_params + bias_offset + j] = s;
}

// ---- Evaluation (per-node accuracies) ----

// Every node's model on the same n evaluation examples: the examples (features x n,
// column-major) and their labels are shared, the parameters and buffers per node as in
// MlpBatchBuffers; out per node: the summed cross-entropy and the count of correct answers.
struct MlpEvalBuffers {
  const float* params = nullptr;
  const float* x = nullptr;
  const std::int32_t* labels = nullptr;
  float* const* act = nullptr; // one per layer, out x n per node
  double* column_loss = nullptr;
  std::int32_t* column_correct = nullptr;
  double* loss_sum = nullptr;
  std::int64_t* correct = nullptr;
};

// Example k of node b: its cross-entropy and whether the first largest logit is the
// label's (models/softmax_xent.cpp's softmax_xent_eval).
DTSIM_HD inline void eval_column(const float* logits, int classes, int n,
                                 const std::int32_t* labels, double* column_loss,
                                 std::int32_t* column_correct, int b, int k) {
  const std::size_t col = static_cast<std::size_t>(b) * n + k;
  const float* z = logits + col * classes;
  const int y = labels[k];
  int arg = 0;
  float m = z[0];
  for (int c = 1; c < classes; ++c)
    if (z[c] > m) {
      m = z[c];
      arg = c;
    }
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c)
    sum += expf(z[c] - m);
  column_loss[col] = static_cast<double>(logf(sum) - (z[y] - m));
  column_correct[col] = arg == y ? 1 : 0;
}

// Node b's loss sum and correct count over its n examples, in example order.
DTSIM_HD inline void eval_node(const double* column_loss, const std::int32_t* column_correct, int n,
                               double* loss_sum, std::int64_t* correct, int b) {
  double s = 0.0;
  std::int64_t c = 0;
  for (int k = 0; k < n; ++k) {
    s += column_loss[static_cast<std::size_t>(b) * n + k];
    c += column_correct[static_cast<std::size_t>(b) * n + k];
  }
  loss_sum[b] = s;
  correct[b] = c;
}

// ---- The pass, over an executor. ----

// Column-major C[i] = op(A[i]) op(B[i]) for i < count, each operand at base + i * stride
// (cuBLAS's strided-batched GEMM, alpha 1, beta 0).
struct StridedGemm {
  bool trans_a = false;
  bool trans_b = false;
  int m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int lda = 0;
  long long stride_a = 0;
  const float* b = nullptr;
  int ldb = 0;
  long long stride_b = 0;
  float* c = nullptr;
  int ldc = 0;
  long long stride_c = 0;
  int count = 0;
};

// Layer l's weight gradient dW = dz x^T, straight into each node's gradient (dz the
// layer's delta, x its input: the minibatch for layer 0, else the layer below's output).
inline StridedGemm weight_gradient_gemm(const MlpBatchShape& shape, const MlpBatchBuffers& buf,
                                        std::size_t l, int count, int n) {
  const BatchLayer& L = shape.layers[l];
  const float* in = l == 0 ? buf.x : buf.act[l - 1];
  return StridedGemm{false,
                     true,
                     L.out,
                     L.in,
                     n,
                     buf.delta[l % 2],
                     L.out,
                     static_cast<long long>(L.out) * n,
                     in,
                     L.in,
                     static_cast<long long>(L.in) * n,
                     buf.grads + L.offset,
                     L.out,
                     static_cast<long long>(shape.num_params),
                     count};
}

// Layer L's forward product g into its activations, then its bias and, on hidden layers
// (relu), the ReLU: in the product's epilogue where Ops has gemm_with_bias and it takes this
// product (the device's cuBLASLt, bias_epilogue_gemm.cuh), else as two steps.
template <class Ops>
void forward_layer(Ops& ops, const StridedGemm& g, const BatchLayer& L, const float* params,
                   std::size_t num_params, bool relu, int count) {
  if constexpr (requires { ops.gemm_with_bias(g, params, 0LL, relu); })
    if (ops.gemm_with_bias(g, params + L.bias_offset(), static_cast<long long>(num_params), relu))
      return;
  ops.gemm(g);
  ops.add_bias(g.c, L.out, g.n, params, num_params, L.bias_offset(), relu, count);
}

// Ops provides gemm(StridedGemm) and, each over `count` nodes: gather(buffers, features, n,
// count), add_bias(z, out, n, params, num_params, bias_offset, relu, count),
// softmax_xent(logits, classes, n, buffers, dlogits, count), mean_loss(buffers, n, count),
// bias_gradient(dz, out, n, grads, num_params, bias_offset, count) and
// relu_backward_bias(a, d, out, n, grads, num_params, bias_offset, count) (the ReLU mask of a
// hidden layer's delta and that layer's bias gradient in one pass, relu_backward_bias_row).
// Gradients of the mean loss go to buf.grads, losses to buf.loss.
// The first `deferred_layers` layers' weight gradients (at most kDeferrableLayers) are left
// out (their rows of buf.grads untouched): layer l's input (buf.x, or buf.act[l - 1]) and
// its delta buf.delta[l % 2], the last thing the pass writes there, then hold what it needs
// (weight_gradient_gemm(shape, buf, l, ...), or the fused local step of
// fused_layer_step.hpp) until the buffers' next pass. With first_forward_done the first
// layer's product W x is already in buf.act[0] (mixed_first_layer.hpp's kernel wrote it, from
// the minibatch read by index), and with the first layer deferred as well nothing reads the
// minibatch here: it is not gathered into buf.x (the fused step reads it by index).
constexpr int kDeferrableLayers = 2;
inline int deferrable_layers(const MlpBatchShape& shape) {
  const auto layers = static_cast<int>(shape.layers.size());
  return layers < kDeferrableLayers ? layers : kDeferrableLayers;
}
template <class Ops>
void run_mlp_batch(Ops& ops, const MlpBatchShape& shape, const MlpBatchBuffers& buf, int count,
                   int n, int deferred_layers = 0, bool first_forward_done = false) {
  const auto P = static_cast<long long>(shape.num_params);
  const std::size_t last = shape.layers.size() - 1;
  if (deferred_layers < 0 || deferred_layers > deferrable_layers(shape))
    throw std::invalid_argument("MLP pass: more deferred weight gradients than it can leave");
  if (!first_forward_done || deferred_layers == 0)
    ops.gather(buf, shape.features, n, count);
  const float* input = buf.x;
  for (std::size_t l = 0; l <= last; ++l) {
    const BatchLayer& L = shape.layers[l];
    // z = W x: the nodes' W at their parameter vectors' offset (stride = parameter count).
    if (l > 0 || !first_forward_done)
      forward_layer(ops,
                    StridedGemm{false, false, L.out, n, L.in, buf.params + L.offset, L.out, P,
                                input, L.in, static_cast<long long>(L.in) * n, buf.act[l], L.out,
                                static_cast<long long>(L.out) * n, count},
                    L, buf.params, shape.num_params, l < last, count);
    else // the mixed forward kernel's product: its bias and ReLU
      ops.add_bias(buf.act[l], L.out, n, buf.params, shape.num_params, L.bias_offset(), l < last,
                   count);
    input = buf.act[l];
  }
  ops.softmax_xent(buf.act[last], shape.layers[last].out, n, buf, buf.delta[last % 2], count);
  ops.mean_loss(buf, n, count);
  // The output layer's bias gradient from the loss's delta; a hidden layer's with its ReLU
  // mask, below.
  ops.bias_gradient(buf.delta[last % 2], shape.layers[last].out, n, buf.grads, shape.num_params,
                    shape.layers[last].bias_offset(), count);
  for (std::size_t l = last + 1; l-- > 0;) {
    const BatchLayer& L = shape.layers[l];
    const float* dz = buf.delta[l % 2];
    if (static_cast<int>(l) >= deferred_layers)
      ops.gemm(weight_gradient_gemm(shape, buf, l, count, n));
    if (l > 0) {
      // dx = W^T dz, then the ReLU mask of the layer below and that layer's bias gradient.
      float* dx = buf.delta[(l - 1) % 2];
      ops.gemm(StridedGemm{true, false, L.in, n, L.out, buf.params + L.offset, L.out, P, dz, L.out,
                           static_cast<long long>(L.out) * n, dx, L.in,
                           static_cast<long long>(L.in) * n, count});
      const BatchLayer& below = shape.layers[l - 1];
      ops.relu_backward_bias(buf.act[l - 1], dx, below.out, n, buf.grads, shape.num_params,
                             below.bias_offset(), count);
    }
  }
}

// The forward pass of `count` nodes' models on the same n examples (the first layer's
// GEMM reads them at stride 0), then each node's loss sum and correct count: Ops provides
// gemm, add_bias (as run_mlp_batch's), eval_columns(buf, logits, classes, n, count) and
// eval_nodes(buf, n, count).
template <class Ops>
void run_mlp_eval(Ops& ops, const MlpBatchShape& shape, const MlpEvalBuffers& buf, int count,
                  int n) {
  const auto P = static_cast<long long>(shape.num_params);
  const std::size_t last = shape.layers.size() - 1;
  const float* input = buf.x;
  long long input_stride = 0;
  for (std::size_t l = 0; l <= last; ++l) {
    const BatchLayer& L = shape.layers[l];
    forward_layer(ops,
                  StridedGemm{false, false, L.out, n, L.in, buf.params + L.offset, L.out, P, input,
                              L.in, input_stride, buf.act[l], L.out,
                              static_cast<long long>(L.out) * n, count},
                  L, buf.params, shape.num_params, l < last, count);
    input = buf.act[l];
    input_stride = static_cast<long long>(L.out) * n;
  }
  ops.eval_columns(buf, buf.act[last], shape.layers[last].out, n, count);
  ops.eval_nodes(buf, n, count);
}

} // namespace dtsim::cuda
