// SPDX-License-Identifier: MIT
// The device CNN pass (LeNet) run by the host executor against the CPU model: im2col with
// the CNN's kernels and padding, the transposed weight layout, bias, ReLU + max pooling and
// its tie rule, the flatten order, and the dense stack, checked without a GPU.
#include "cuda/cnn_batch_shape.hpp"
#include "cuda/host_cnn_ops.hpp"
#include "random_problem.hpp"
#include "test_cnns.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

using test::Errors;

template <class Ops = HostCnnOps>
Errors worst_relative_error(const Cnn::Config& config, int nodes, int n) {
  const Cnn model(config);
  const CnnBatchShape shape = cnn_batch_shape(model);
  const test::RandomProblem p(model, shape.features(), config.num_classes, 40, nodes, n);

  std::vector<std::vector<float>> arrays;
  std::vector<float*> scratch;
  for (std::size_t floats : cnn_buffer_floats(shape, n)) {
    arrays.emplace_back(floats * static_cast<std::size_t>(nodes), -3.0f); // garbage, not zeros
    scratch.push_back(arrays.back().data());
  }
  const auto N = static_cast<std::size_t>(nodes);
  std::vector<float> grads(N * shape.num_params, -7.0f);
  std::vector<double> column_loss(N * static_cast<std::size_t>(n)), loss(N);
  const BatchCommon common{p.train.data(), p.labels.data(),    p.params.data(), grads.data(),
                           p.idx.data(),   column_loss.data(), loss.data()};
  Ops ops;
  run_cnn_batch(ops, shape, scratch.data(), common, nodes, n);
  return test::compare_with_cpu(p, model, grads, loss);
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA CNN pass on the host executor: gradients equal the CPU model's") {
    // LeNet-5 on Fashion-MNIST's 1x28x28 (padding 2, 0) and CIFAR's 3x32x32 (no padding).
    for (const auto& [config, nodes, n] : {std::tuple{test::lenet({1, 28, 28}, {2, 0}), 3, 4},
                                           std::tuple{test::lenet({3, 32, 32}, {0, 0}), 2, 3}}) {
      const int node_count = nodes; // a copy: clang 14 cannot capture bindings
      CAPTURE(node_count);
      const Errors e = worst_relative_error(config, nodes, n);
      CHECK(e.grad < 1e-4);
      CHECK(e.loss < 1e-5);
    }
    // The small CNN (odd map sizes, kernel 3, one hidden layer), a batch of one example.
    const Errors e = worst_relative_error(test::small_cnn(), 2, 1);
    CHECK(e.grad < 1e-4);
    CHECK(e.loss < 1e-5);
  }

  TEST_CASE("CUDA CNN pass on the host executor: a wrong flatten order is caught") {
    struct ChannelsOutermost : HostCnnOps { // flatten as c * pixels + p instead of p * C + c
      static void flatten(const CnnStageShape& s, int n, float* map, float* flat, bool to_map,
                          int count) {
        const std::size_t per_node = s.pooled_map(n);
        for (int b = 0; b < count; ++b)
          for (std::size_t i = 0; i < per_node; ++i) {
            const std::size_t features = s.pooled_pixels() * s.conv.out;
            const std::size_t e = i / features, f = i % features;
            const std::size_t c = f / s.pooled_pixels(), p = f % s.pooled_pixels();
            float* m = map + b * per_node + (c * n + e) * s.pooled_pixels() + p;
            float* v = flat + b * per_node + i;
            if (to_map)
              *m = *v;
            else
              *v = *m;
          }
      }
    };
    CHECK(worst_relative_error<ChannelsOutermost>(test::lenet({1, 28, 28}, {2, 0}), 2, 2).grad >
          1e-2);
  }
}

TEST_SUITE("cuda") {
  TEST_CASE("CUDA CNN pass: a pooling window holding a NaN routes no gradient and ends") {
    // A diverged model's NaN made the search for the window's first maximum run past it.
    CnnStageShape stage;
    stage.conv = ConvShape{1, 1, 2, 2, 1, 0, 1, 0};       // 1x1 conv on a 2x2 map: one 2x2 window
    const float z[4] = {1.0f, 2.0f, 3.0f, std::nanf("")}; // max4 returns the NaN here
    const float da[1] = {1.0f};
    float dz[4] = {-1.0f, -1.0f, -1.0f, -1.0f};
    for (std::size_t i = 0; i < 4; ++i)
      max_pool_backward_element(z, da, stage, 1, dz, 0, i);
    for (float d : dz)
      CHECK(d == 0.0f);
  }
}

TEST_SUITE("cuda") {
  TEST_CASE("CUDA conv passes: kernels above 7 and maps past 2^31 positions are refused") {
    // ConvShape{in, out, height, width, stride, offset, kernel, pad}
    const ConvShape lenet5{1, 6, 28, 28, 1, 0, 5, 2};
    CHECK(conv_shape_problem(lenet5, 32).empty());
    CHECK(conv_shape_problem(ConvShape{1, 6, 28, 28, 1, 0, 7, 3}, 32).empty());
    const std::string wide = conv_shape_problem(ConvShape{1, 6, 28, 28, 1, 0, 9, 4}, 32);
    CHECK(wide.find("kernel 9") != std::string::npos);
    CHECK(conv_shape_problem(ConvShape{1, 6, 28, 28, 1, 0, 0, 0}, 32).find("kernel 0") == 0);
    // 784 positions x 2,800,000 examples > 2^31.
    CHECK(conv_shape_problem(lenet5, 2'800'000).find("2^31") != std::string::npos);
    CHECK(conv_shape_problem(lenet5, 2'700'000).empty());
  }
}
