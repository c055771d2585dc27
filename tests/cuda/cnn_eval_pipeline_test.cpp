// SPDX-License-Identifier: MIT
// The device's per-node evaluation pass of the CNN (run_cnn_eval) run by the host executor
// against the CPU model's evaluate: every node's model on the same examples, the first
// convolution reading them in place for every node.
#include "cuda/cnn_batch_shape.hpp"
#include "cuda/host_cnn_ops.hpp"
#include "random_problem.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

struct EvalRun {
  std::vector<double> loss_sum;
  std::vector<std::int64_t> correct;
  std::vector<EvalResult> cpu;
};

// `nodes` models (RandomProblem's) on the first n of its examples, by the host executor and
// by the CPU model; `shift_models` makes node b read node b + 1's parameters (a wrong node
// stride: the comparison must catch it).
EvalRun evaluate(const Cnn::Config& config, int nodes, int n, bool shift_models = false) {
  const Cnn model(config);
  const CnnBatchShape shape = cnn_batch_shape(model);
  const test::RandomProblem p(model, shape.features(), config.num_classes, 40, nodes + 1, 1);
  const auto N = static_cast<std::size_t>(nodes);
  std::vector<std::vector<float>> arrays;
  std::vector<float*> scratch;
  for (std::size_t floats : cnn_eval_buffer_floats(shape, n)) {
    arrays.emplace_back(floats * N, -3.0f); // garbage, not zeros
    scratch.push_back(floats == 0 ? nullptr : arrays.back().data());
  }
  std::vector<double> column_loss(N * static_cast<std::size_t>(n));
  std::vector<std::int32_t> column_correct(N * static_cast<std::size_t>(n));
  EvalRun r{std::vector<double>(N), std::vector<std::int64_t>(N), {}};
  const float* params = p.params.data() + (shift_models ? p.num_params : 0);
  const MlpEvalBuffers buf{params,
                           p.train.data(),
                           p.labels.data(),
                           nullptr,
                           column_loss.data(),
                           column_correct.data(),
                           r.loss_sum.data(),
                           r.correct.data()};
  HostCnnOps ops;
  run_cnn_eval(ops, shape, scratch.data(), buf, nodes, n);
  const auto ws = model.make_workspace(n);
  const BatchView batch{p.train.data(), shape.features(), n, p.labels.data()};
  for (std::size_t b = 0; b < N; ++b)
    r.cpu.push_back(model.evaluate({p.params.data() + b * p.num_params, p.num_params}, batch, *ws));
  return r;
}

Cnn::Config lenet() {
  Cnn::Config c;
  c.name = "lenet";
  c.input_shape = {1, 28, 28};
  c.padding = {2, 0};
  return c;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA CNN evaluation pass on the host executor: per-node losses and accuracies") {
    Cnn::Config small; // odd map sizes, kernel 3, one hidden layer
    small.input_shape = {2, 11, 9};
    small.channels = {4, 5};
    small.padding = {1, 0};
    small.kernel = 3;
    small.hidden = {7};
    small.num_classes = 3;
    for (const auto& [config, nodes, n] : {std::tuple{lenet(), 3, 12}, std::tuple{small, 4, 30}}) {
      const EvalRun r = evaluate(config, nodes, n);
      std::int64_t right = 0;
      for (std::size_t b = 0; b < r.cpu.size(); ++b) {
        CAPTURE(b);
        CHECK(r.correct[b] == r.cpu[b].correct);
        CHECK(std::abs(r.loss_sum[b] - r.cpu[b].loss_sum) <= 1e-5 * std::abs(r.cpu[b].loss_sum));
        right += r.cpu[b].correct;
      }
      CHECK(right > 0); // not a comparison of zeros
    }
  }

  TEST_CASE("CUDA CNN evaluation pass on the host executor: each node reads its own model") {
    const EvalRun r = evaluate(lenet(), 3, 12, true);
    bool differs = false;
    for (std::size_t b = 0; b < r.cpu.size(); ++b)
      differs |= std::abs(r.loss_sum[b] - r.cpu[b].loss_sum) > 1e-3 * std::abs(r.cpu[b].loss_sum);
    CHECK(differs);
  }
}
