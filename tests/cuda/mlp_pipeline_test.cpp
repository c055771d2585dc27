// SPDX-License-Identifier: MIT
// DeviceMlp's batched pass run by the host executor against the CPU model: the layer order,
// offsets, strides, leading dimensions and transposes given to cuBLAS, and the kernels'
// math, checked without a GPU.
#include "cuda/host_mlp_ops.hpp"
#include "models/mlp.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

struct Errors {
  double grad = 0.0; // worst |difference| over the node's largest gradient entry
  double loss = 0.0; // worst relative difference of the mean losses
};

// widths: inputs, hidden..., classes. `nodes` models and minibatches of `n` examples drawn
// from `examples` random ones, run by Ops and by the CPU model.
template <class Ops = HostMlpOps>
Errors worst_relative_error(const std::vector<int>& widths, int nodes, int n, int examples) {
  const int features = widths.front(), classes = widths.back();
  const std::vector<int> hidden(widths.begin() + 1, widths.end() - 1);
  const Mlp model(features, hidden, classes);
  const MlpBatchShape shape = mlp_batch_shape(widths);
  REQUIRE(shape.num_params == model.num_params());

  Rng rng = Rng::stream(5, "test", Rng::kNoNode);
  Eigen::MatrixXf train(features, examples);
  for (Eigen::Index i = 0; i < train.size(); ++i)
    train.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  std::vector<std::int32_t> labels;
  for (int i = 0; i < examples; ++i)
    labels.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes))));

  const std::size_t P = shape.num_params;
  const auto N = static_cast<std::size_t>(nodes);
  const auto n_ = static_cast<std::size_t>(n);
  std::vector<float> params(N * P), grads(N * P, -7.0f), x(N * features * n_);
  std::vector<std::uint32_t> idx(N * n_);
  std::vector<std::vector<float>> act;
  std::vector<float*> act_pointers;
  for (const BatchLayer& l : shape.layers) {
    act.emplace_back(N * l.out * n_);
    act_pointers.push_back(act.back().data());
  }
  std::vector<float> delta0(N * shape.widest * n_), delta1(N * shape.widest * n_);
  std::vector<double> column_loss(N * n_), loss(N);
  for (std::size_t b = 0; b < N; ++b) {
    Rng node = Rng::stream(9, "test-node", b);
    model.init({params.data() + b * P, P}, node);
    for (std::size_t k = 0; k < n_; ++k)
      idx[b * n_ + k] =
          static_cast<std::uint32_t>(node.below(static_cast<std::uint64_t>(examples)));
  }
  MlpBatchBuffers buf;
  buf.train = train.data();
  buf.labels = labels.data();
  buf.params = params.data();
  buf.grads = grads.data();
  buf.idx = idx.data();
  buf.x = x.data();
  buf.act = act_pointers.data();
  buf.delta[0] = delta0.data();
  buf.delta[1] = delta1.data();
  buf.column_loss = column_loss.data();
  buf.loss = loss.data();
  Ops ops;
  run_mlp_batch(ops, shape, buf, nodes, n);

  auto ws = model.make_workspace(n);
  Eigen::MatrixXf batch(features, n);
  std::vector<std::int32_t> y(n_);
  std::vector<float> reference(P);
  Errors worst;
  for (std::size_t b = 0; b < N; ++b) {
    for (std::size_t k = 0; k < n_; ++k) {
      batch.col(static_cast<Eigen::Index>(k)) = train.col(idx[b * n_ + k]);
      y[k] = labels[idx[b * n_ + k]];
    }
    const BatchView view{batch.data(), features, n, y.data()};
    const double expected = model.loss_and_grad({params.data() + b * P, P}, view, reference, *ws);
    worst.loss = std::max(worst.loss, std::abs(loss[b] - expected) / std::abs(expected));
    double scale = 0.0, err = 0.0;
    for (std::size_t p = 0; p < P; ++p) {
      scale = std::max(scale, static_cast<double>(std::abs(reference[p])));
      err = std::max(err, static_cast<double>(std::abs(grads[b * P + p] - reference[p])));
    }
    REQUIRE(scale > 0.0);
    worst.grad = std::max(worst.grad, err / scale);
  }
  return worst;
}

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

  TEST_CASE("CUDA pass on the host executor: a wrong stride or transpose is caught") {
    // The comparison above must be able to fail. Every node reading node 0's weights in the
    // first layer (a stride of 0, as a wrong strideA would), or the weight gradient's GEMM
    // with its transpose flags swapped, gives gradients far from the CPU's.
    struct SharedWeights : HostMlpOps {
      bool first = true;
      void gemm(StridedGemm g) {
        if (std::exchange(first, false))
          g.stride_a = 0;
        HostMlpOps::gemm(g);
      }
    };
    struct SwappedTranspose : HostMlpOps {
      void gemm(StridedGemm g) {
        if (!g.trans_a && g.trans_b && g.m == g.n && g.n == g.k) // all 8 x 8: in bounds
          std::swap(g.trans_a, g.trans_b);
        HostMlpOps::gemm(g);
      }
    };
    CHECK(worst_relative_error<SharedWeights>({12, 9, 7, 5}, 5, 8, 100).grad > 1e-2);
    CHECK(worst_relative_error<SwappedTranspose>({12, 8, 8, 5}, 3, 8, 100).grad > 1e-2);
  }
}
