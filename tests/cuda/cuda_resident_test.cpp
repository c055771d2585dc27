// SPDX-License-Identifier: MIT
// The resident device store's evaluation statistics against the host's (need a CUDA device):
// the mean of the node models bit for bit, the consensus distance within rounding, and the
// per-node accuracies of the MLP's evaluation pass against the CPU model's.
#include "cuda/cuda_backend.hpp"
#include "cuda/device_gradients.hpp"
#include "models/mlp.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/consensus_distance.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/vector_ops.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;

TEST_SUITE("cuda") {
  TEST_CASE("CUDA: a resident store's mean model and consensus distance equal the host's") {
    if (const std::string why = cuda::unavailable_reason(); !why.empty()) {
      MESSAGE("SKIPPED: " << why);
      return;
    }
    const std::vector<int> widths{40, 24, 12, 6}; // 1,362 parameters
    const int nodes = 7, examples = 64;
    Rng rng = Rng::stream(13, "test", Rng::kNoNode);
    std::vector<float> features(static_cast<std::size_t>(widths.front() * examples));
    for (float& f : features)
      f = static_cast<float>(rng.uniform(-1.0, 1.0));
    std::vector<std::int32_t> labels(examples);
    for (std::size_t k = 0; k < labels.size(); ++k)
      labels[k] = static_cast<std::int32_t>(k % 6);
    const auto device = cuda::make_device_mlp(widths, features, labels, 8, 65535, nodes);
    ResidentVectors* resident = device->resident();
    REQUIRE(resident != nullptr);
    const std::size_t P = 1362;
    Eigen::MatrixXf models(static_cast<Eigen::Index>(P), nodes);
    for (Eigen::Index i = 0; i < models.size(); ++i)
      models.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    resident->push_models({models.data(), static_cast<std::size_t>(models.size())});

    std::vector<float> mean_device(P), mean_host(P);
    resident->mean_of_rows(VectorRef::Kind::model, mean_device);
    mean_of_columns(models, mean_host);
    CHECK(mean_device == mean_host);

    Vec scratch;
    const double host = consensus_distance(models, scratch);
    const double on_device = resident->consensus_distance();
    CHECK(host > 0);
    CHECK(std::abs(on_device - host) <= 1e-6 * host);
    CHECK(resident->consensus_distance() == on_device); // the same bits again
  }

  TEST_CASE("CUDA: a resident store's per-node accuracies equal the CPU model's") {
    if (const std::string why = cuda::unavailable_reason(); !why.empty()) {
      MESSAGE("SKIPPED: " << why);
      return;
    }
    const Mlp model(40, {24, 12}, 6);
    const int nodes = 9, examples = 64, n = 50;
    Rng rng = Rng::stream(14, "test", Rng::kNoNode);
    std::vector<float> features(static_cast<std::size_t>(40 * examples));
    for (float& f : features)
      f = static_cast<float>(rng.uniform(-1.0, 1.0));
    std::vector<std::int32_t> labels(examples);
    for (std::int32_t& y : labels)
      y = static_cast<std::int32_t>(rng.below(6));
    // At most 4 nodes per device chunk: the 9 nodes take chunks of 4, 4 and 1.
    const auto device = cuda::make_device_mlp({40, 24, 12, 6}, features, labels, 8, 4, nodes);
    const std::size_t P = model.num_params();
    Eigen::MatrixXf models(static_cast<Eigen::Index>(P), nodes);
    for (int i = 0; i < nodes; ++i) {
      Rng init = Rng::stream(15, "test-node", static_cast<std::uint64_t>(i));
      model.init({models.col(i).data(), P}, init);
    }
    device->resident()->push_models({models.data(), static_cast<std::size_t>(models.size())});
    const std::span<const float> set{features.data(), 40 * static_cast<std::size_t>(n)};
    const std::span<const std::int32_t> set_labels{labels.data(), static_cast<std::size_t>(n)};
    std::vector<EvalResult> results(nodes), again(nodes);
    REQUIRE(device->evaluate_resident(set, set_labels, results));
    REQUIRE(device->evaluate_resident(set, set_labels, again)); // the set already there
    for (int i = 0; i < nodes; ++i) {
      CHECK(again[static_cast<std::size_t>(i)].correct ==
            results[static_cast<std::size_t>(i)].correct);
      CHECK(again[static_cast<std::size_t>(i)].loss_sum ==
            results[static_cast<std::size_t>(i)].loss_sum);
    }
    const auto ws = model.make_workspace(n);
    const BatchView batch{features.data(), 40, n, labels.data()};
    for (int i = 0; i < nodes; ++i) {
      CAPTURE(i);
      const EvalResult cpu = model.evaluate({models.col(i).data(), P}, batch, *ws);
      const EvalResult& gpu = results[static_cast<std::size_t>(i)];
      CHECK(gpu.count == n);
      CHECK(gpu.correct == cpu.correct);
      CHECK(std::abs(gpu.loss_sum - cpu.loss_sum) <= 1e-5 * std::abs(cpu.loss_sum));
    }
  }
}
