// SPDX-License-Identifier: MIT
// dtsim_per_example_bench: the cost of per-example gradients and of the herding-bound pass.
#include "models/make_model.hpp"
#include "sim/core/param_tree.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/epoch_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <tbb/global_control.h>
#include <vector>

using namespace dtsim;

namespace {

// Best of 5 timings of `reps` calls, in seconds per call (the VM is noisy: best-of).
template <class F> double best_seconds(int reps, F&& f) {
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      f();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return best;
}

// Fashion-MNIST-like inputs: half the pixels 0, the rest uniform in [0, 1).
std::vector<float> pixels(std::size_t n, Rng& rng) {
  std::vector<float> x(n);
  for (float& v : x)
    v = rng.uniform() < 0.5 ? 0.0f : static_cast<float>(rng.uniform());
  return x;
}

// A model kind with its default keys, on Fashion-MNIST-shaped input.
std::unique_ptr<Model> model(const char* kind) {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map());
  root->fields.emplace_back("kind", ParamNode::make_scalar(kind));
  return make_model(Params(root, "bench"), {1, 28, 28}, 10);
}

} // namespace

int main() {
  tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
  Rng rng(1);
  std::printf("per-example gradients, one thread (best of 5):\n");
  for (const char* kind : {"softmax", "mlp", "lenet"}) {
    const std::unique_ptr<Model> m = model(kind);
    std::vector<float> p(m->num_params());
    m->init(p, rng);
    for (int b : {2, 8, 32}) {
      const std::vector<float> x = pixels(784u * static_cast<std::size_t>(b), rng);
      std::vector<std::int32_t> y(static_cast<std::size_t>(b));
      for (auto& v : y)
        v = static_cast<std::int32_t>(rng.below(10));
      const BatchView batch{x.data(), 784, b, y.data()};
      auto ws = m->make_workspace(b);
      std::vector<float> g(m->num_params()), per(m->num_params() * static_cast<std::size_t>(b));
      const int reps = std::max(10, (std::string(kind) == "lenet" ? 400 : 4000) / b);
      const double plain = best_seconds(reps, [&] { m->loss_and_grad(p, batch, g, *ws); });
      const double with =
          best_seconds(reps, [&] { m->loss_and_per_example_grads(p, batch, g, per, *ws); });
      std::printf("  %-40s batch %2d: loss_and_grad %8.1f us, with per-example %8.1f us "
                  "(x%.2f), buffer %.0f KiB\n",
                  m->describe().c_str(), b, plain * 1e6, with * 1e6, with / plain,
                  static_cast<double>(per.size() * sizeof(float)) / 1024.0);
    }
  }
  // The /epochs herding bound of a 4-node epoch over 28800 examples (the study's size).
  const int n = 28800;
  Dataset train;
  train.num_classes = 10;
  const std::vector<float> x = pixels(784u * n, rng);
  train.features = Eigen::Map<const Eigen::MatrixXf>(x.data(), 784, n);
  for (int k = 0; k < n; ++k)
    train.labels.push_back(static_cast<std::int32_t>(rng.below(10)));
  Partition part;
  part.node_indices.resize(4);
  for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(n); ++k)
    part.node_indices[k % 4].push_back(k);
  std::vector<std::span<const std::uint32_t>> orders;
  for (const auto& o : part.node_indices)
    orders.emplace_back(o);
  for (const char* kind : {"softmax", "lenet"}) {
    const std::unique_ptr<Model> m = model(kind);
    std::vector<float> p(m->num_params());
    m->init(p, rng);
    EpochProbe probe(*m, train, part, 2, true);
    const std::vector<std::span<const float>> models{p};
    const double herding = best_seconds(1, [&] { probe.herding_bound(p, orders); });
    const double loss = best_seconds(1, [&] { probe.node_train_loss(models); });
    std::printf("epoch measurements, %s, %d examples, one thread: herding bound %.2f s, "
                "node-data training loss %.3f s\n",
                m->describe().c_str(), n, herding, loss);
  }
  return 0;
}
