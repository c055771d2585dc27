// SPDX-License-Identifier: MIT
// A random training set, node models and minibatch indices for the batched passes' tests.
#pragma once

#include "models/model.hpp"
#include "sim/core/rng.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace dtsim::test {

struct RandomProblem {
  Eigen::MatrixXf train; // features x examples, U(-1, 1)
  std::vector<std::int32_t> labels;
  std::vector<float> params;      // nodes x num_params, each node's own init
  std::vector<std::uint32_t> idx; // nodes x n rows of train
  std::size_t num_params = 0;
  int n = 0;

  RandomProblem(const Model& model, int features, int classes, int examples, int nodes, int n_)
      : train(features, examples), num_params(model.num_params()), n(n_) {
    Rng rng = Rng::stream(5, "test", Rng::kNoNode);
    for (Eigen::Index i = 0; i < train.size(); ++i)
      train.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    for (int i = 0; i < examples; ++i)
      labels.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes))));
    params.resize(static_cast<std::size_t>(nodes) * num_params);
    for (int b = 0; b < nodes; ++b) {
      Rng node = Rng::stream(9, "test-node", static_cast<std::uint64_t>(b));
      model.init({params.data() + b * num_params, num_params}, node);
      for (int k = 0; k < n; ++k)
        idx.push_back(static_cast<std::uint32_t>(node.below(static_cast<std::uint64_t>(examples))));
    }
  }

  // Points a batched pass's buffers (MlpBatchBuffers, ResNetBatchBuffers, ...) at this
  // problem's training set, labels, node models and minibatches, and at the caller's
  // gradients (nodes x num_params) and per-column and per-node losses.
  template <class Buffers>
  void bind(Buffers& buf, float* grads, double* column_loss, double* loss) const {
    buf.train = train.data();
    buf.labels = labels.data();
    buf.params = params.data();
    buf.grads = grads;
    buf.idx = idx.data();
    buf.column_loss = column_loss;
    buf.loss = loss;
  }

  // Node b's gradient and mean loss by the CPU model, for comparison.
  double cpu_gradient(const Model& model, Workspace& ws, int b, std::vector<float>& grad) const {
    const auto features = static_cast<int>(train.rows());
    Eigen::MatrixXf batch(features, n);
    std::vector<std::int32_t> y(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      const std::uint32_t row = idx[static_cast<std::size_t>(b) * n + k];
      batch.col(k) = train.col(row);
      y[static_cast<std::size_t>(k)] = labels[row];
    }
    grad.assign(num_params, 0.0f);
    const BatchView view{batch.data(), features, n, y.data()};
    return model.loss_and_grad({params.data() + b * num_params, num_params}, view, grad, ws);
  }
};

// The worst gradient error of a batched pass over the nodes, relative to each node's
// largest CPU gradient entry, and the worst relative error of the mean losses.
struct Errors {
  double grad = 0.0;
  double loss = 0.0;
};

inline Errors compare_with_cpu(const RandomProblem& p, const Model& model,
                               const std::vector<float>& grads, const std::vector<double>& loss) {
  auto ws = model.make_workspace(p.n);
  std::vector<float> reference;
  Errors worst;
  const std::size_t P = p.num_params;
  for (std::size_t b = 0; b < loss.size(); ++b) {
    const double expected = p.cpu_gradient(model, *ws, static_cast<int>(b), reference);
    worst.loss = std::max(worst.loss, std::abs(loss[b] - expected) / std::abs(expected));
    double scale = 0.0, err = 0.0;
    for (std::size_t k = 0; k < P; ++k) {
      scale = std::max(scale, static_cast<double>(std::abs(reference[k])));
      err = std::max(err, static_cast<double>(std::abs(grads[b * P + k] - reference[k])));
    }
    worst.grad = std::max(worst.grad, scale > 0.0 ? err / scale : err);
  }
  return worst;
}

} // namespace dtsim::test
