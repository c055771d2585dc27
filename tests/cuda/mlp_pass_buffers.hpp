// SPDX-License-Identifier: MIT
// The scratch of a batched MLP pass over a RandomProblem's nodes on the host executor, and the
// MlpBatchBuffers that name it (the passes' tests: mlp_pipeline_test.cpp,
// fused_pass_steps_test.cpp).
#pragma once

#include "cuda/mlp_batch_math.hpp"
#include "random_problem.hpp"

#include <vector>

namespace dtsim::test {

struct MlpPassBuffers {
  std::vector<float> x, delta0, delta1;
  std::vector<std::vector<float>> act;
  std::vector<float*> act_pointers;
  std::vector<double> column_loss, loss;
  cuda::MlpBatchBuffers buf;
  // grads: nodes x num_params, where the pass writes.
  MlpPassBuffers(const cuda::MlpBatchShape& shape, const RandomProblem& p, int nodes,
                 std::vector<float>& grads) {
    const auto N = static_cast<std::size_t>(nodes), n = static_cast<std::size_t>(p.n);
    x.resize(N * static_cast<std::size_t>(shape.features) * n);
    for (const cuda::BatchLayer& l : shape.layers) {
      act.emplace_back(N * static_cast<std::size_t>(l.out) * n);
      act_pointers.push_back(act.back().data());
    }
    delta0.resize(N * static_cast<std::size_t>(shape.widest) * n);
    delta1.resize(delta0.size());
    column_loss.resize(N * n);
    loss.resize(N);
    p.bind(buf, grads.data(), column_loss.data(), loss.data());
    buf.x = x.data();
    buf.act = act_pointers.data();
    buf.delta[0] = delta0.data();
    buf.delta[1] = delta1.data();
  }
};

} // namespace dtsim::test
