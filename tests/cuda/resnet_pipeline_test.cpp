// SPDX-License-Identifier: MIT
// DeviceResNet's batched pass run by the host executor against the CPU ResNet: im2col and
// col2im, GroupNorm forward and backward, option-A shortcuts, pooling, the head, and every
// GEMM's shape, stride and transpose, checked without a GPU.
#include "cuda/host_resnet_ops.hpp"
#include "cuda/resnet_batch_shape.hpp"
#include "random_problem.hpp"

#include <doctest/doctest.h>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

using test::Errors;

// `nodes` ResNets with their own initialisation and minibatches of n random images, run by
// Ops's batched pass and by the CPU model.
template <class Ops = HostResNetOps>
Errors worst_relative_error(const ResNet::Config& config, int nodes, int n) {
  const ResNet model(config);
  const ResNetBatchShape shape = resnet_batch_shape(model);
  const int features = shape.features();
  const test::RandomProblem p(model, features, config.num_classes, 40, nodes, n);

  std::vector<std::vector<float>> arrays;
  std::vector<float*> pointers;
  for (std::size_t floats : resnet_buffer_floats(shape, n)) {
    arrays.emplace_back(floats * static_cast<std::size_t>(nodes), -3.0f); // garbage, not zeros
    pointers.push_back(arrays.back().data());
  }
  const auto N = static_cast<std::size_t>(nodes);
  std::vector<float> grads(N * shape.num_params, -7.0f);
  std::vector<double> column_loss(N * static_cast<std::size_t>(n)), loss(N);
  ResNetBatchBuffers buf;
  bind_resnet_buffers(pointers.data(), buf);
  p.bind(buf, grads.data(), column_loss.data(), loss.data());
  Ops ops;
  run_resnet_batch(ops, shape, buf, nodes, n);
  return test::compare_with_cpu(p, model, grads, loss);
}

ResNet::Config config(std::vector<int> input, int blocks, int groups) {
  return {std::move(input), 10, blocks, groups};
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA ResNet pass on the host executor: gradients equal the CPU ResNet's") {
    // Small maps, one block per stage (both stride-2 shortcuts), odd sizes, one example.
    for (const auto& [c, nodes, n] :
         {std::tuple{config({1, 8, 8}, 1, 2), 3, 2}, std::tuple{config({2, 7, 5}, 1, 4), 2, 3},
          std::tuple{config({3, 6, 6}, 2, 1), 2, 1}}) {
      const int node_count = nodes, batch = n; // copies: clang 14 cannot capture bindings
      CAPTURE(node_count);
      CAPTURE(batch);
      const Errors e = worst_relative_error(c, nodes, n);
      CHECK(e.grad < 1e-4);
      CHECK(e.loss < 1e-5);
    }
  }

  TEST_CASE("CUDA ResNet pass on the host executor: ResNet-20 on 3x32x32 images") {
    const Errors e = worst_relative_error(config({3, 32, 32}, 3, 2), 2, 2);
    CHECK(e.grad < 1e-4);
    CHECK(e.loss < 1e-5);
  }

  TEST_CASE(
      "CUDA ResNet pass on the host executor: a missing shortcut or a wrong col2im is caught") {
    // The comparison above must be able to fail.
    struct NoShortcut : HostResNetOps {
      static void shortcut_relu(const float*, const ConvShape& c, int n, float* out, int count) {
        for (std::size_t i = 0; i < c.out_map(n) * static_cast<std::size_t>(count); ++i)
          out[i] = out[i] > 0.0f ? out[i] : 0.0f;
      }
    };
    struct SwappedCol2im : HostResNetOps { // neighbouring pixels' sums exchanged in stride 2
      static void col2im(const float* dpatches, const ConvShape& c, int n, float* dx, int count) {
        HostResNetOps::col2im(dpatches, c, n, dx, count);
        if (c.stride == 2) // 8x8 and 4x4 inputs: an even number of values per node
          for (std::size_t i = 0; i + 1 < c.in_map(n) * static_cast<std::size_t>(count); i += 2)
            std::swap(dx[i], dx[i + 1]);
      }
    };
    CHECK(worst_relative_error<NoShortcut>(config({1, 8, 8}, 1, 2), 2, 2).grad > 1e-2);
    CHECK(worst_relative_error<SwappedCol2im>(config({1, 8, 8}, 1, 2), 2, 2).grad > 1e-2);
  }
}
