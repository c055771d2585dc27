// SPDX-License-Identifier: MIT
// The device's per-node evaluation passes of the convolutional networks (run_cnn_eval,
// run_resnet_eval) run by the host executors against the CPU models' evaluate: every node's
// model on the same examples, the first convolution reading them in place for every node.
#include "cuda/cnn_batch_shape.hpp"
#include "cuda/host_cnn_ops.hpp"
#include "cuda/host_resnet_ops.hpp"
#include "cuda/resnet_batch_shape.hpp"
#include "eval_run.hpp"
#include "random_problem.hpp"
#include "test_cnns.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <functional>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

using test::EvalRun;

// The pass over scratch buffers of `floats` (per node) for `nodes` nodes.
using EvalPass = std::function<void(float* const* scratch, const MlpEvalBuffers& buf)>;

// `nodes` models (RandomProblem's) on the first n of its examples, by the pass and by the
// CPU model; `shift_models` makes node b read node b + 1's parameters (a wrong node stride:
// the comparison must catch it).
EvalRun evaluate(const Model& model, int features, int classes, int nodes, int n,
                 const std::vector<std::size_t>& floats, const EvalPass& pass,
                 bool shift_models = false) {
  const test::RandomProblem p(model, features, classes, 40, nodes + 1, 1);
  const auto N = static_cast<std::size_t>(nodes);
  std::vector<std::vector<float>> arrays;
  std::vector<float*> scratch;
  for (const std::size_t f : floats) {
    arrays.emplace_back(f * N, -3.0f); // garbage, not zeros
    scratch.push_back(f == 0 ? nullptr : arrays.back().data());
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
  pass(scratch.data(), buf);
  const auto ws = model.make_workspace(n);
  const BatchView batch{p.train.data(), features, n, p.labels.data()};
  for (std::size_t b = 0; b < N; ++b)
    r.cpu.push_back(model.evaluate({p.params.data() + b * p.num_params, p.num_params}, batch, *ws));
  return r;
}

EvalRun evaluate_cnn(const Cnn::Config& config, int nodes, int n, bool shift_models = false) {
  const Cnn model(config);
  const CnnBatchShape shape = cnn_batch_shape(model);
  return evaluate(
      model, shape.features(), config.num_classes, nodes, n, cnn_eval_buffer_floats(shape, n),
      [&](float* const* scratch, const MlpEvalBuffers& buf) {
        HostCnnOps ops;
        run_cnn_eval(ops, shape, scratch, buf, nodes, n);
      },
      shift_models);
}

EvalRun evaluate_resnet(const ResNet::Config& config, int nodes, int n, bool shift_models = false) {
  const ResNet model(config);
  const ResNetBatchShape shape = resnet_batch_shape(model);
  return evaluate(
      model, shape.features(), config.num_classes, nodes, n, resnet_eval_buffer_floats(shape, n),
      [&](float* const* scratch, const MlpEvalBuffers& buf) {
        HostResNetOps ops;
        run_resnet_eval(ops, shape, scratch, buf, nodes, n);
      },
      shift_models);
}

// Every node as the CPU, and not a comparison of zeros.
void check_close_and_some_right(const EvalRun& r) {
  test::check_close(r);
  CHECK(test::cpu_correct(r) > 0);
}

ResNet::Config resnet(std::vector<int> input, int blocks, int groups) {
  return {std::move(input), 10, blocks, groups};
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA CNN evaluation pass on the host executor: per-node losses and accuracies") {
    check_close_and_some_right(evaluate_cnn(test::lenet(), 3, 12));
    check_close_and_some_right(evaluate_cnn(test::small_cnn(), 4, 30));
  }

  TEST_CASE("CUDA ResNet evaluation pass on the host executor: per-node losses and accuracies") {
    check_close_and_some_right(evaluate_resnet(resnet({1, 8, 8}, 1, 2), 3, 20));
    check_close_and_some_right(evaluate_resnet(resnet({2, 7, 5}, 2, 4), 2, 30));
  }

  TEST_CASE("CUDA convolutional evaluation passes: each node reads its own model") {
    CHECK(test::some_differ(evaluate_cnn(test::lenet(), 3, 12, true)));
    CHECK(test::some_differ(evaluate_resnet(resnet({1, 8, 8}, 1, 2), 3, 20, true)));
  }
}
