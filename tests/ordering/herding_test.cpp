// SPDX-License-Identifier: MIT
// The herding bound: hand values, balanced orders below the original one, and the engine's
// streamed, chunked computation against the reference on a real model.
#include "data/dataset.hpp"
#include "models/mlp.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/epoch_probe.hpp"
#include "sim/engine/herding.hpp"
#include "sim/optimizers/ordering/balancers.hpp"
#include "sim/optimizers/ordering/epoch_orders.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <numeric>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

// The vectors of `order`, one after another.
std::vector<float> in_order(const std::vector<std::vector<float>>& v,
                            std::span<const std::uint32_t> order) {
  std::vector<float> out;
  for (std::uint32_t i : order)
    out.insert(out.end(), v[i].begin(), v[i].end());
  return out;
}

double bound_of(const std::vector<std::vector<float>>& v, std::span<const std::uint32_t> order) {
  return herding_bound(in_order(v, order), v[0].size(), order.size());
}

// One epoch of balancing over `order` with fixed vectors: the next order.
std::vector<std::uint32_t> balance_once(const std::vector<std::vector<float>>& v,
                                        std::vector<std::uint32_t> order, bool pair,
                                        MeanBalancer* mean = nullptr) {
  EpochOrders orders(order);
  const auto d = v[0].size();
  PairBalancer pb(d);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (pair) {
      if (k % 2 == 1)
        orders.place_pair(order[k - 1], order[k], pb.step(v[order[k - 1]], v[order[k]]));
      else if (k + 1 == order.size())
        orders.place_middle(order[k]);
    } else if (mean->step(v[order[k]])) {
      orders.place_front(order[k]);
    } else {
      orders.place_back(order[k]);
    }
  }
  if (!pair)
    mean->end_epoch();
  orders.draw(order.size());
  orders.advance();
  return {orders.current().begin(), orders.current().end()};
}

} // namespace

TEST_SUITE("ordering") {
  TEST_CASE("herding_bound: hand values and interleaving") {
    // Vectors 1, 3, -1, 1 (d = 1): mean 1, centred 0 2 -2 0, prefixes 0 2 0 0 -> 2.
    CHECK(herding_bound(std::vector<float>{1, 3, -1, 1}, 1, 4) == 2.0);
    // d = 2, max over coordinates and prefixes: (1,0) (-1,4) mean (0,2): (1,-2) (0,0) -> 2.
    CHECK(herding_bound(std::vector<float>{1, 0, -1, 4}, 2, 2) == 2.0);
    std::vector<std::uint32_t> out;
    const std::vector<std::uint32_t> a{0, 1, 2, 3, 4}, b{10, 11, 12};
    const std::vector<std::span<const std::uint32_t>> orders{a, b};
    interleave_orders(orders, 2, out);
    CHECK(out == std::vector<std::uint32_t>{0, 1, 10, 11, 2, 3, 12, 4});
  }

  TEST_CASE("herding_bound: balanced orders are below the original order") {
    // 64 vectors in d = 8 with a common offset, in their original (index) order.
    Rng rng(17);
    std::vector<std::vector<float>> v(64, std::vector<float>(8));
    for (auto& x : v)
      for (float& c : x)
        c = static_cast<float>(0.5 + rng.normal());
    std::vector<std::uint32_t> original(64);
    std::iota(original.begin(), original.end(), 0u);
    const double h0 = bound_of(v, original);
    // Each epoch reorders the previous epoch's order (the vectors do not change).
    std::vector<std::uint32_t> paired = original, grab = original;
    MeanBalancer mean(8, 64);
    std::vector<double> pair_bounds, grab_bounds;
    for (int epoch = 0; epoch < 4; ++epoch) {
      paired = balance_once(v, paired, true);
      grab = balance_once(v, grab, false, &mean); // mbar = 0 in the first epoch
      pair_bounds.push_back(bound_of(v, paired));
      grab_bounds.push_back(bound_of(v, grab));
      INFO("epoch " << epoch << ": herding bound original " << h0 << ", PairBalance "
                    << pair_bounds.back() << ", GraB " << grab_bounds.back());
    }
    CHECK(pair_bounds.front() < h0);
    CHECK(pair_bounds.back() < 0.5 * h0);
    CHECK(grab_bounds.back() < 0.5 * h0);
    const auto& grab2 = grab;
    std::vector<std::uint32_t> sorted = grab2;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == original);
  }

  TEST_CASE("EpochProbe: streamed herding bound and node losses equal the reference") {
    // 10 features, 3 classes (d = 33): 256-example chunks, 4100 examples = 17 chunks, so the
    // bound crosses chunk and group boundaries.
    Rng rng(3);
    Dataset train;
    train.num_classes = 3;
    train.features.resize(10, 4100);
    for (Eigen::Index k = 0; k < train.features.size(); ++k)
      train.features.data()[k] = static_cast<float>(rng.normal());
    for (int k = 0; k < 4100; ++k)
      train.labels.push_back(static_cast<std::int32_t>(rng.below(3)));
    Partition part;
    part.node_indices.resize(3);
    for (std::uint32_t k = 0; k < 4100; ++k)
      part.node_indices[k % 3].push_back(k);
    rng.shuffle(part.node_indices[1]);
    const Mlp model(10, {}, 3);
    std::vector<float> params(model.num_params());
    model.init(params, rng);

    // Reference: every example's gradient in the interleaved order, in one batch.
    std::vector<std::span<const std::uint32_t>> orders;
    for (const auto& o : part.node_indices)
      orders.emplace_back(o);
    std::vector<std::uint32_t> seq;
    interleave_orders(orders, 5, seq);
    Eigen::MatrixXf batch(10, static_cast<Eigen::Index>(seq.size()));
    std::vector<std::int32_t> labels;
    for (std::size_t k = 0; k < seq.size(); ++k) {
      batch.col(static_cast<Eigen::Index>(k)) = train.features.col(seq[k]);
      labels.push_back(train.labels[seq[k]]);
    }
    auto ws = model.make_workspace(static_cast<int>(seq.size()));
    std::vector<float> grad(model.num_params()), per(model.num_params() * seq.size());
    model.loss_and_per_example_grads(
        params, BatchView{batch.data(), 10, static_cast<int>(seq.size()), labels.data()}, grad, per,
        *ws);
    const double expected = herding_bound(per, model.num_params(), seq.size());

    double first = -1;
    for (int threads : {1, 2}) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                                static_cast<std::size_t>(threads));
      EpochProbe probe(model, train, part, 5, true);
      CHECK(probe.herding_chunk() == 256);
      const double got = probe.herding_bound(params, orders);
      CHECK(got == doctest::Approx(expected).epsilon(1e-4));
      if (first < 0)
        first = got;
      CHECK(got == first); // bit-identical for any thread count
      // Node losses: one model for all nodes = the plain mean over nodes of node means.
      const std::vector<std::span<const float>> one{params};
      double mean = 0;
      for (const auto& o : part.node_indices) {
        double sum = 0;
        for (std::uint32_t k : o)
          sum +=
              model
                  .evaluate(params,
                            BatchView{train.features.col(k).data(), 10, 1, &train.labels[k]}, *ws)
                  .loss_sum;
        mean += sum / static_cast<double>(o.size()) / 3.0;
      }
      CHECK(probe.node_train_loss(one) == doctest::Approx(mean).epsilon(1e-9));
    }
  }
}
