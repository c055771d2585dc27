// SPDX-License-Identifier: MIT
// GradientSlot with per-thread TaskScratch: every node's gradient equals a direct
// computation, whichever thread's scratch held it, and a node keeps its own gradient only
// when the algorithm reads it after the task.
#include "models/make_model.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/gradient_slot.hpp"
#include "support/params_helper.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

// Records the gradient each node's after_gradient hook saw.
class RecordingAlgorithm : public Algorithm {
public:
  RecordingAlgorithm(int nodes, bool reads_after) : seen(nodes), reads_after_(reads_after) {}
  std::string describe() const override { return "recording"; }
  void start(Context&) override {}
  void on_gradient(Context&, int, const GradientResult&) override {}
  void on_message(Context&, const Message&) override {}
  void after_gradient(int node, std::span<const float>, std::span<float> grad) override {
    seen[static_cast<std::size_t>(node)].assign(grad.begin(), grad.end());
  }
  bool reads_gradient_after_task() const override { return reads_after_; }
  std::size_t state_bytes() const override { return 0; }

  std::vector<std::vector<float>> seen;

private:
  bool reads_after_;
};

// Writes each node's model in before_gradient from a table, as a mixing does from its
// inputs, and records the model its after_gradient saw.
class WritingAlgorithm final : public RecordingAlgorithm {
public:
  explicit WritingAlgorithm(std::vector<std::vector<float>> models)
      : RecordingAlgorithm(static_cast<int>(models.size()), false), models_(std::move(models)),
        seen_models(models_.size()) {}
  void before_gradient(int node, std::span<float> x) override {
    const auto& m = models_[static_cast<std::size_t>(node)];
    std::copy(m.begin(), m.end(), x.begin());
  }
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) override {
    RecordingAlgorithm::after_gradient(node, x, grad);
    seen_models[static_cast<std::size_t>(node)].assign(x.begin(), x.end());
  }

private:
  std::vector<std::vector<float>> models_;

public:
  std::vector<std::vector<float>> seen_models;
};

class UnusedOrder : public ExampleOrder {
public:
  std::string describe() const override { return "unused"; }
  int next_batch(OrderChannel&, int, std::span<std::uint32_t>) override { return 0; }
  std::span<const std::uint32_t> epoch_order(int, std::int64_t) const override { return {}; }
  std::size_t state_bytes() const override { return 0; }
};

Dataset noise_dataset(int features, int size, int classes) {
  Dataset d;
  d.name = "random";
  d.num_classes = classes;
  d.shape = {features};
  Rng rng = Rng::stream(7, "test-data", 0);
  d.features.resize(features, size);
  for (Eigen::Index k = 0; k < d.features.size(); ++k)
    d.features.data()[k] = static_cast<float>(rng.uniform() - 0.5);
  for (int k = 0; k < size; ++k)
    d.labels.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes))));
  return d;
}

// One model per node, each from its own stream: a gradient left in the wrong buffer shows.
std::vector<std::vector<float>> node_models(const Model& model, int nodes, std::uint64_t seed) {
  std::vector<std::vector<float>> x(static_cast<std::size_t>(nodes),
                                    std::vector<float>(model.num_params()));
  for (int i = 0; i < nodes; ++i) {
    Rng rng = Rng::stream(seed, "test-init", static_cast<std::uint64_t>(i));
    model.init(x[static_cast<std::size_t>(i)], rng);
  }
  return x;
}

// The gradient of `x` on examples first, first+1, ..., first+batch-1, computed directly.
std::vector<float> direct_gradient(const Model& model, const Dataset& data,
                                   std::span<const float> x, int first, int batch) {
  const auto features = static_cast<int>(data.features.rows());
  Eigen::MatrixXf examples(features, batch);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (int k = 0; k < batch; ++k) {
    examples.col(k) = data.features.col(first + k);
    labels[static_cast<std::size_t>(k)] = data.labels[static_cast<std::size_t>(first + k)];
  }
  std::vector<float> g(model.num_params());
  const auto ws = model.make_workspace(batch);
  model.loss_and_grad(x, BatchView{examples.data(), features, batch, labels.data()}, g, *ws);
  return g;
}

} // namespace

TEST_SUITE("engine") {
  TEST_CASE("GradientSlot: per-thread scratch gives each node its own exact gradient") {
    constexpr int kNodes = 8, kBatch = 5, kFeatures = 12, kClasses = 4;
    const Dataset data = noise_dataset(kFeatures, 40, kClasses);
    const auto model = make_model(testing::make_params({{"kind", "mlp"}}), {kFeatures}, kClasses);
    std::vector<std::vector<float>> x = node_models(*model, kNodes, 3);
    // The expected gradient of node i: its model on examples i, i+1, ..., i+kBatch-1.
    auto expected = [&](int i) {
      return direct_gradient(*model, data, x[static_cast<std::size_t>(i)], i, kBatch);
    };

    for (const bool reads_after : {false, true}) {
      for (const int threads : {1, 2}) {
        CAPTURE(reads_after);
        CAPTURE(threads);
        tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                                  static_cast<std::size_t>(threads));
        TaskScratchPool scratch(*model, kFeatures, kBatch, !reads_after, false);
        RecordingAlgorithm algorithm(kNodes, reads_after);
        UnusedOrder order;
        std::vector<std::unique_ptr<GradientSlot>> slots;
        for (int i = 0; i < kNodes; ++i) {
          slots.push_back(
              std::make_unique<GradientSlot>(*model, data, kBatch, scratch, reads_after));
          for (int k = 0; k < kBatch; ++k)
            slots.back()->indices()[static_cast<std::size_t>(k)] =
                static_cast<std::uint32_t>(i + k);
        }
        for (int round = 0; round < 3; ++round) { // scratch reused across rounds
          for (int i = 0; i < kNodes; ++i)
            slots[static_cast<std::size_t>(i)]->launch(x[static_cast<std::size_t>(i)], algorithm,
                                                       order, i);
          for (int i = 0; i < kNodes; ++i) {
            GradientSlot& slot = *slots[static_cast<std::size_t>(i)];
            slot.join();
            const std::vector<float> want = expected(i);
            CHECK(algorithm.seen[static_cast<std::size_t>(i)] == want);
            if (reads_after)
              CHECK(std::vector<float>(slot.grad().begin(), slot.grad().end()) == want);
            else
              CHECK(slot.grad().empty());
          }
        }
      }
    }
  }

  TEST_CASE("GradientSlot: a task on a working copy leaves the node's stored model alone") {
    constexpr int kNodes = 4, kBatch = 5, kFeatures = 12, kClasses = 4;
    const Dataset data = noise_dataset(kFeatures, 40, kClasses);
    const auto model = make_model(testing::make_params({{"kind", "mlp"}}), {kFeatures}, kClasses);
    const std::size_t dim = model->num_params();
    const std::vector<std::vector<float>> written = node_models(*model, kNodes, 5);
    for (const int threads : {1, 2}) {
      CAPTURE(threads);
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                                static_cast<std::size_t>(threads));
      TaskScratchPool scratch(*model, kFeatures, kBatch, true, true);
      WritingAlgorithm algorithm(written);
      UnusedOrder order;
      // The stored models hold NaN: a task that read or wrote them would show.
      std::vector<std::vector<float>> stored(kNodes, std::vector<float>(dim, std::nanf("")));
      std::vector<std::unique_ptr<GradientSlot>> slots;
      for (int i = 0; i < kNodes; ++i) {
        slots.push_back(std::make_unique<GradientSlot>(*model, data, kBatch, scratch, false));
        for (int k = 0; k < kBatch; ++k)
          slots.back()->indices()[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(i + k);
      }
      for (int i = 0; i < kNodes; ++i)
        slots[static_cast<std::size_t>(i)]->launch(stored[static_cast<std::size_t>(i)], algorithm,
                                                   order, i, true);
      for (int i = 0; i < kNodes; ++i) {
        const auto u = static_cast<std::size_t>(i);
        slots[u]->join();
        CHECK(algorithm.seen_models[u] == written[u]);
        CHECK(
            std::all_of(stored[u].begin(), stored[u].end(), [](float v) { return std::isnan(v); }));
        // The gradient is the written model's.
        CHECK(algorithm.seen[u] == direct_gradient(*model, data, written[u], i, kBatch));
      }
    }
  }
}
