// SPDX-License-Identifier: MIT
// The device's per-node evaluation pass (run_mlp_eval) run by the host executor against the
// CPU model's evaluate: every node's model on the same examples, the first layer reading them
// at stride 0.
#include "cuda/host_mlp_ops.hpp"
#include "eval_run.hpp"
#include "models/mlp.hpp"
#include "random_problem.hpp"
#include "shared_first_weights.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

using test::check_close;
using test::EvalRun;

// `nodes` models (RandomProblem's) on the first n of its examples, by Ops and by the CPU.
template <class Ops = HostMlpOps>
EvalRun evaluate(const std::vector<int>& widths, int nodes, int n, int examples) {
  const int features = widths.front(), classes = widths.back();
  const Mlp model(features, std::vector<int>(widths.begin() + 1, widths.end() - 1), classes);
  const MlpBatchShape shape = mlp_batch_shape(widths);
  const test::RandomProblem p(model, features, classes, examples, nodes, 1);
  const auto N = static_cast<std::size_t>(nodes);
  const auto n_ = static_cast<std::size_t>(n);
  std::vector<std::vector<float>> act;
  std::vector<float*> act_pointers;
  for (const BatchLayer& l : shape.layers) {
    act.emplace_back(N * l.out * n_);
    act_pointers.push_back(act.back().data());
  }
  std::vector<double> column_loss(N * n_);
  std::vector<std::int32_t> column_correct(N * n_);
  EvalRun r{std::vector<double>(N), std::vector<std::int64_t>(N), {}};
  const MlpEvalBuffers buf{p.params.data(),     p.train.data(),     p.labels.data(),
                           act_pointers.data(), column_loss.data(), column_correct.data(),
                           r.loss_sum.data(),   r.correct.data()};
  Ops ops;
  run_mlp_eval(ops, shape, buf, nodes, n);
  const auto ws = model.make_workspace(n);
  const BatchView batch{p.train.data(), features, n, p.labels.data()};
  for (std::size_t b = 0; b < N; ++b)
    r.cpu.push_back(model.evaluate({p.params.data() + b * p.num_params, p.num_params}, batch, *ws));
  return r;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA evaluation pass on the host executor: per-node losses and accuracies") {
    check_close(evaluate({12, 5}, 4, 50, 100));           // softmax
    check_close(evaluate({12, 9, 7, 5}, 5, 64, 100));     // two hidden layers
    check_close(evaluate({784, 64, 32, 10}, 3, 40, 200)); // image-sized input
    // Not a comparison of zeros: the random models get some answers right.
    const EvalRun r = evaluate({12, 9, 7, 5}, 5, 64, 100);
    CHECK(r.cpu[0].correct + r.cpu[1].correct > 0);
  }

  TEST_CASE("CUDA evaluation pass on the host executor: each node reads its own weights") {
    // Every node reading node 0's first layer (a stride of 0 for A, as a wrong strideA would)
    // gives other losses.
    CHECK(test::some_differ(evaluate<test::SharedFirstWeights>({12, 9, 7, 5}, 5, 64, 100)));
  }
}
