// SPDX-License-Identifier: MIT
// DeviceMlp's batched pass run by the host executor against the CPU model: the layer order,
// offsets, strides, leading dimensions and transposes given to cuBLAS, and the kernels'
// math, checked without a GPU.
#include "cuda/host_mlp_ops.hpp"
#include "cuda/operand_alignment.hpp"
#include "mlp_pass_buffers.hpp"
#include "models/mlp.hpp"
#include "random_problem.hpp"
#include "shared_first_weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <doctest/doctest.h>
#include <stdexcept>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

using test::Errors;

// widths: inputs, hidden..., classes. `nodes` models and minibatches of `n` examples drawn
// from `examples` random ones, run by Ops and by the CPU model.
// With deferred_layers the pass leaves those first layers' weight gradients out (checked:
// their rows keep what was there) and they are computed after, as the batch runner does
// where fused local steps cannot take them: from what the pass left in its buffers.
template <class Ops = HostMlpOps>
Errors worst_relative_error(const std::vector<int>& widths, int nodes, int n, int examples,
                            int deferred_layers = 0) {
  const int features = widths.front(), classes = widths.back();
  const std::vector<int> hidden(widths.begin() + 1, widths.end() - 1);
  const Mlp model(features, hidden, classes);
  const MlpBatchShape shape = mlp_batch_shape(widths);
  REQUIRE(shape.num_params == model.num_params());
  test::RandomProblem p(model, features, classes, examples, nodes, n);
  // Each node's own biases (the model's init leaves them 0), so that a bias read from the
  // wrong place or stride shows.
  for (int b = 0; b < nodes; ++b)
    for (const BatchLayer& L : shape.layers)
      for (int j = 0; j < L.out; ++j)
        p.params[b * shape.num_params + L.bias_offset() + static_cast<std::size_t>(j)] =
            0.2f * std::sin(static_cast<float>(b * 37 + j));

  const std::size_t P = shape.num_params;
  const auto N = static_cast<std::size_t>(nodes);
  std::vector<float> grads(N * P, -7.0f);
  test::MlpPassBuffers pass(shape, p, nodes, grads);
  const MlpBatchBuffers& buf = pass.buf;
  Ops ops;
  run_mlp_batch(ops, shape, buf, nodes, n, deferred_layers);
  for (int l = 0; l < deferred_layers; ++l) {
    const BatchLayer& L = shape.layers[static_cast<std::size_t>(l)];
    const std::size_t weights = static_cast<std::size_t>(L.out) * L.in;
    for (std::size_t b = 0; b < N; ++b) {
      const auto w = grads.begin() + static_cast<std::ptrdiff_t>(b * P + L.offset);
      CHECK(std::all_of(w, w + static_cast<std::ptrdiff_t>(weights),
                        [](float g) { return g == -7.0f; }));
    }
  }
  for (int l = 0; l < deferred_layers; ++l)
    ops.gemm(weight_gradient_gemm(shape, buf, static_cast<std::size_t>(l), nodes, n));
  return test::compare_with_cpu(p, model, grads, pass.loss);
}

// The device's bias epilogue as cuBLASLt defines it (D = act(A B + bias), node b's bias at
// bias + b * bias_stride, one entry per row of D), written apart from add_bias_element: the
// pass must hand it the bias and stride that add_bias reads. It takes the products of
// layers whose output width is odd, or every one (all), and declines the rest, whose bias
// the pass then adds itself.
template <bool all> struct HostEpilogueOps : HostMlpOps {
  bool gemm_with_bias(const StridedGemm& g, const float* bias, long long bias_stride, bool relu) {
    if (!all && g.m % 2 == 0)
      return false;
    gemm(g);
    for (int b = 0; b < g.count; ++b)
      for (int col = 0; col < g.n; ++col)
        for (int row = 0; row < g.m; ++row) {
          float& d = g.c[b * g.stride_c + row + static_cast<long long>(col) * g.ldc];
          d += bias[b * bias_stride + row];
          if (relu && d < 0.0f)
            d = 0.0f;
        }
    return true;
  }
};

void check_close(const Errors& e, double grad_tolerance) {
  CHECK(e.grad < grad_tolerance);
  CHECK(e.loss < 1e-5);
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA pass on the host executor: softmax and MLP gradients equal the CPU model's") {
    check_close(worst_relative_error({12, 5}, 4, 8, 100), 1e-5);            // softmax
    check_close(worst_relative_error({12, 9, 7, 5}, 5, 8, 100), 1e-5);      // two hidden layers
    check_close(worst_relative_error({30, 17, 3}, 3, 1, 100), 1e-5);        // batch of one example
    check_close(worst_relative_error({784, 64, 32, 10}, 3, 16, 200), 1e-4); // image-sized input
  }

  TEST_CASE("CUDA pass on the host executor: the first layers' weight gradients deferred") {
    check_close(worst_relative_error({12, 5}, 4, 8, 100, 1), 1e-5); // softmax: one layer
    check_close(worst_relative_error({12, 9, 7, 5}, 5, 8, 100, 1), 1e-5);
    // The second layer's too: its delta and input survive the rest of the pass.
    check_close(worst_relative_error({12, 9, 5}, 4, 8, 100, 2), 1e-5);
    check_close(worst_relative_error({12, 9, 7, 5}, 5, 8, 100, 2), 1e-5);
    check_close(worst_relative_error({12, 9, 7, 6, 5}, 3, 8, 100, 2), 1e-5);
    // A softmax has no second layer to leave.
    CHECK_THROWS_AS(worst_relative_error({12, 5}, 4, 8, 100, 2), std::invalid_argument);
  }

  TEST_CASE("CUDA pass on the host executor: the gather by quads and the bias's index math") {
    // 8 features a column: quads where the pointers are 16-byte aligned, elements otherwise.
    constexpr int kFeatures = 8, kExamples = 10, kN = 3, kNodes = 2;
    alignas(16) float train[kFeatures * kExamples];
    for (int i = 0; i < kFeatures * kExamples; ++i)
      train[i] = static_cast<float>(i) * 0.5f - 7.0f;
    const std::uint32_t idx[kNodes * kN] = {9, 0, 4, 4, 7, 1};
    alignas(16) float by_quads[kNodes * kFeatures * kN], by_elements[kNodes * kFeatures * kN];
    REQUIRE(gather_by_quads(train, kFeatures, by_quads));
    CHECK_FALSE(gather_by_quads(train + 1, kFeatures, by_quads)); // misaligned
    CHECK_FALSE(gather_by_quads(train, 6, by_quads));             // 6 features: no quads
    for (int b = 0; b < kNodes; ++b) {
      for (std::size_t q = 0; q < kFeatures * kN / kGatherQuad; ++q)
        gather_quad(train, kFeatures, idx, kN, by_quads, b, q);
      for (std::size_t e = 0; e < kFeatures * kN; ++e)
        gather_element(train, kFeatures, idx, kN, by_elements, b, e);
    }
    for (int b = 0; b < kNodes; ++b)
      for (int k = 0; k < kN; ++k)
        for (int f = 0; f < kFeatures; ++f) {
          const float want = train[idx[b * kN + k] * kFeatures + f];
          CHECK(by_quads[(b * kN + k) * kFeatures + f] == want);
          CHECK(by_elements[(b * kN + k) * kFeatures + f] == want);
        }
    // The bias of output j = e % out, for every element of two nodes' z (out x n).
    constexpr int kOut = 5;
    constexpr std::size_t kParams = 40, kBias = 30;
    std::vector<float> params(kNodes * kParams), z(kNodes * kOut * kN, 1.0f);
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i] = static_cast<float>(i);
    for (int b = 0; b < kNodes; ++b)
      for (std::size_t e = 0; e < kOut * kN; ++e)
        add_bias_element(z.data(), kOut, kN, params.data(), kParams, kBias, false, b, e);
    for (int b = 0; b < kNodes; ++b)
      for (std::size_t e = 0; e < kOut * kN; ++e)
        CHECK(z[b * kOut * kN + e] == 1.0f + params[b * kParams + kBias + e % kOut]);
  }

  TEST_CASE("CUDA pass on the host executor: the forward products' bias in their epilogue") {
    // Every layer's bias (and ReLU) in the epilogue, or only some layers' (the others'
    // declined, as the device's library may decline a shape): the CPU model's gradients.
    check_close(worst_relative_error<HostEpilogueOps<true>>({12, 5}, 4, 8, 100), 1e-5);
    check_close(worst_relative_error<HostEpilogueOps<true>>({12, 9, 7, 5}, 5, 8, 100), 1e-5);
    check_close(worst_relative_error<HostEpilogueOps<false>>({12, 9, 8, 5}, 5, 8, 100), 1e-5);
    check_close(worst_relative_error<HostEpilogueOps<true>>({12, 9, 7, 5}, 5, 8, 100, 2), 1e-5);
    // A wrong bias stride (every node reading node 0's bias) is caught.
    struct FirstNodesBias : HostEpilogueOps<true> {
      bool gemm_with_bias(const StridedGemm& g, const float* bias, long long, bool relu) {
        return HostEpilogueOps<true>::gemm_with_bias(g, bias, 0, relu);
      }
    };
    CHECK(worst_relative_error<FirstNodesBias>({12, 9, 7, 5}, 5, 8, 100).loss > 1e-3);
  }

  TEST_CASE("CUDA pass on the host executor: the ReLU mask and the bias gradient in one pass "
            "give the bits of the two apart") {
    // Deltas and activations with zeros, negatives and a NaN where the mask must act, two
    // nodes of a 7-row layer, over fewer examples than the loads ahead (3), a whole number
    // of them (8) and a remainder (5).
    for (const int n : {3, 5, 8}) {
      CAPTURE(n);
      constexpr int kOut = 7, kNodes = 2;
      constexpr std::size_t kParams = 50, kBias = 40;
      const std::size_t size = static_cast<std::size_t>(kNodes) * kOut * n;
      std::vector<float> a(size), apart(size);
      for (std::size_t e = 0; e < size; ++e) {
        a[e] = e % 3 == 0 ? 0.0f : std::sin(static_cast<float>(e)) * 2.0f;
        apart[e] = std::cos(static_cast<float>(e) * 1.7f) / 3.0f;
      }
      a[11] = std::nanf("");
      std::vector<float> together = apart, grads_apart(kNodes * kParams, -1.0f),
                         grads_together = grads_apart;
      HostMlpOps::relu_backward(a.data(), apart.data(), size);
      HostMlpOps::bias_gradient(apart.data(), kOut, n, grads_apart.data(), kParams, kBias, kNodes);
      HostMlpOps::relu_backward_bias(a.data(), together.data(), kOut, n, grads_together.data(),
                                     kParams, kBias, kNodes);
      CHECK(std::memcmp(apart.data(), together.data(), size * sizeof(float)) == 0);
      CHECK(std::memcmp(grads_apart.data(), grads_together.data(),
                        grads_apart.size() * sizeof(float)) == 0);
      CHECK(together[11] == 0.0f); // a NaN activation masks its delta, as relu_backward does
    }
  }

  TEST_CASE("CUDA pass: the alignment every node's operand of a strided batch has") {
    alignas(64) static float rows[64];
    CHECK(weakest_alignment(rows, 4) == 16);     // capped at 16 bytes
    CHECK(weakest_alignment(rows, 2) == 8);      // node 1 at 8 bytes
    CHECK(weakest_alignment(rows, 235146) == 8); // the quickstart MLP's P floats: 8 bytes
    CHECK(weakest_alignment(rows, 235147) == 4); // an odd P: 4
    CHECK(weakest_alignment(rows + 1, 4) == 4);  // the first node's own
    CHECK(weakest_alignment(rows + 2, 0) == 8);  // one node, or a shared operand
  }

  TEST_CASE("CUDA pass on the host executor: a wrong stride or transpose is caught") {
    // The comparison above must be able to fail. Every node reading node 0's weights in the
    // first layer (a stride of 0, as a wrong strideA would), or the weight gradient's GEMM
    // with its transpose flags swapped, gives gradients far from the CPU's.
    struct SwappedTranspose : HostMlpOps {
      void gemm(StridedGemm g) {
        if (!g.trans_a && g.trans_b && g.m == g.n && g.n == g.k) // all 8 x 8: in bounds
          std::swap(g.trans_a, g.trans_b);
        HostMlpOps::gemm(g);
      }
    };
    CHECK(worst_relative_error<test::SharedFirstWeights>({12, 9, 7, 5}, 5, 8, 100).grad > 1e-2);
    CHECK(worst_relative_error<SwappedTranspose>({12, 8, 8, 5}, 3, 8, 100).grad > 1e-2);
  }
}
