// SPDX-License-Identifier: MIT
// The resident MLP's fused path end to end on the host executor: a pass that leaves its
// first layers' weight gradients (run_mlp_batch), the plans fused_layer_plans makes from its
// buffers, the fused kernel's blocks on them (fused_block_on_host) and the plain step tiles
// on the rest of each row (for_each_unfused_range, local_step_tile) against the full pass's
// gradient and the local step of every element: the same bits (this target is built without
// fused multiply-adds, and the fused sums run in the host GEMM's example order).
#include "cuda/fused_layer_step.hpp"
#include "cuda/host_mlp_ops.hpp"
#include "mlp_pass_buffers.hpp"
#include "models/mlp.hpp"
#include "random_problem.hpp"

#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

// Every node's message after one local step (heavy ball with weight decay, from momenta of
// 0.1), with the first `fused` layers' gradients taken by the fused kernel, or all from the
// full pass (fused = 0).
std::vector<float> messages_after_step(const std::vector<int>& widths, int fused) {
  const std::vector<int> hidden(widths.begin() + 1, widths.end() - 1);
  const Mlp model(widths.front(), hidden, widths.back());
  const MlpBatchShape shape = mlp_batch_shape(widths);
  constexpr int kNodes = 3, kExamples = 40; // two of the fused kernel's loads
  const test::RandomProblem p(model, widths.front(), widths.back(), 120, kNodes, kExamples);
  const std::size_t P = shape.num_params;
  std::vector<float> grads(kNodes * P, -7.0f), momenta(kNodes * P, 0.1f);
  std::vector<float> messages(kNodes * P, 0.0f);
  test::MlpPassBuffers b(shape, p, kNodes, grads);
  HostMlpOps ops;
  run_mlp_batch(ops, shape, b.buf, kNodes, kExamples, fused);
  const int node[] = {0, 1, 2};
  float* out[] = {messages.data(), messages.data() + P, messages.data() + 2 * P};
  const float lr[] = {0.1f, 0.05f, 0.2f};
  StepBatch rule{node, out, lr, 0.9f, 1e-3f};
  const FusedLayers layers = fused_layer_plans(shape, b.buf, kExamples, 0, true, fused);
  // The pass's params are the models the steps read.
  const float* models = p.params.data();
  for (int e = 0; e < kNodes; ++e) {
    for (int l = 0; l < layers.count; ++l)
      for (int tile = 0; tile < fused_tiles(layers.plan[l]); ++tile)
        fused_block_on_host(rule, layers.plan[l], grads.data(), models, momenta.data(), P, e, tile);
    for_each_unfused_range(&layers, P, [&](std::size_t from, std::size_t to) {
      for (std::size_t e0 = from; e0 < to; e0 += 4 * 8)
        for (std::size_t t = 0; t < 8; ++t)
          local_step_tile<4>(rule, grads.data(), models, momenta.data(), P, e, e0 + t, 8, to);
    });
  }
  return messages;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Fused layer steps after a pass that left them equal the full pass's steps") {
    // Two layers (the second is the output layer: its delta from the softmax), three and four
    // (the second's delta from the layer above's backward product and ReLU mask).
    for (const std::vector<int>& widths :
         {std::vector<int>{30, 20, 5}, std::vector<int>{30, 70, 20, 5},
          std::vector<int>{30, 70, 20, 9, 5}}) {
      CAPTURE(widths.size());
      const std::vector<float> full = messages_after_step(widths, 0);
      CHECK(messages_after_step(widths, 1) == full);
      CHECK(messages_after_step(widths, 2) == full);
    }
  }
}
