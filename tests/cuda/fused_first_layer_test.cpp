// SPDX-License-Identifier: MIT
// The first-layer weights' fused local step (fused_first_layer.hpp), its blocks run thread by
// thread on the host, against the unfused order: the gradient dz x^T summed per weight in
// example order, then local_step_element on it. Layer sizes that are not multiples of the
// 64-wide tiles and more examples than one shared-memory load cover the edges.
#include "cuda/fused_first_layer.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

struct Problem {
  static constexpr int kOut = 70, kIn = 150, kExamples = 40; // 2 x 3 tiles, 2 loads
  static constexpr int kNodes = 5, kFirst = 2, kStepped = 3; // nodes 2..4 step
  static constexpr std::size_t kRest = 37; // the row's floats after the first layer's W
  static constexpr std::size_t kP = static_cast<std::size_t>(kOut) * kIn + kRest;
  std::vector<float> dz, x, models, momenta, grads, messages;
  Problem() {
    Rng rng = Rng::stream(31, "test", Rng::kNoNode);
    const auto fill = [&](std::vector<float>& v, std::size_t size) {
      v.resize(size);
      for (float& f : v)
        f = static_cast<float>(rng.uniform(-1.0, 1.0));
    };
    fill(dz, std::size_t{kStepped} * kOut * kExamples);
    fill(x, std::size_t{kStepped} * kIn * kExamples);
    fill(models, kNodes * kP);
    fill(momenta, kNodes * kP);
    fill(grads, kNodes * kP);
    fill(messages, kStepped * kP);
  }
  FirstLayerPlan plan() const { return {dz.data(), x.data(), kOut, kIn, kExamples, kFirst}; }
  // The same minibatches read by index (a pass that did not gather them): the training set
  // holds x's columns in reverse order, and each index names its column there.
  std::vector<float> train;
  std::vector<std::uint32_t> idx;
  FirstLayerPlan plan_by_index() {
    const std::size_t columns = std::size_t{kStepped} * kExamples;
    train.resize(x.size());
    idx.resize(columns);
    for (std::size_t c = 0; c < columns; ++c) {
      const std::size_t at = columns - 1 - c;
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(c * kIn), kIn,
                  train.begin() + static_cast<std::ptrdiff_t>(at * kIn));
      idx[c] = static_cast<std::uint32_t>(at);
    }
    FirstLayerPlan f = plan();
    f.x = nullptr;
    f.train = train.data();
    f.idx = idx.data();
    return f;
  }
};

// Runs the steps of nodes 2, 4 and 3 (in that entry order) on p's vectors, fused (reading
// the minibatches by index, or gathered) or in the unfused order, and returns the vectors
// after.
Problem run(StepBatch rule, bool fused, bool by_index = false) {
  Problem p;
  const int node[] = {2, 4, 3};
  float* out[] = {p.messages.data(), p.messages.data() + Problem::kP,
                  rule.combine_then_adapt ? nullptr : p.messages.data() + 2 * Problem::kP};
  const float lr[] = {0.1f, 0.2f, 0.05f};
  rule.node = node;
  rule.out = out;
  rule.lr = lr;
  const FirstLayerPlan f = by_index ? p.plan_by_index() : p.plan();
  for (int b = 0; b < Problem::kStepped; ++b) {
    if (fused) {
      for (int tile = 0; tile < fused_tiles(f); ++tile)
        fused_block_on_host(rule, f, p.grads.data(), p.models.data(), p.momenta.data(), Problem::kP,
                            b, tile);
      continue;
    }
    const std::size_t row = static_cast<std::size_t>(node[b]) * Problem::kP;
    const int at = node[b] - f.first_node;
    for (int i = 0; i < f.in; ++i)
      for (int o = 0; o < f.out; ++o) {
        float g = 0.0f;
        for (int k = 0; k < f.n; ++k)
          g += f.dz[(static_cast<std::size_t>(at) * f.n + k) * f.out + o] *
               f.x[(static_cast<std::size_t>(at) * f.n + k) * f.in + i];
        const std::size_t e = static_cast<std::size_t>(i) * f.out + o;
        local_step_element(rule, lr[b], g, p.models[row + e], p.momenta[row + e], &p.grads[row + e],
                           rule.momentum != 0 ? &p.momenta[row + e] : nullptr,
                           out[b] ? out[b] + e : nullptr);
      }
  }
  return p;
}

// The largest difference between two vectors relative to the larger magnitude (at least 1).
double worst(const std::vector<float>& a, const std::vector<float>& b) {
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    w = std::max(w, std::abs(double{a[i]} - double{b[i]}) /
                        std::max({1.0, std::abs(double{a[i]}), std::abs(double{b[i]})}));
  return w;
}

void check_same_steps(const StepBatch& rule) {
  const Problem fused = run(rule, true), unfused = run(rule, false), before;
  const Problem by_index = run(rule, true, true);
  // The same sums in the same order: the same bits (this file is built without fused
  // multiply-adds, which a compiler could place differently in the two; on the device the
  // fused kernel's gradient differs from cuBLAS's in rounding, cuda_resident_test.cpp).
  CHECK(fused.messages == unfused.messages);
  CHECK(fused.momenta == unfused.momenta);
  CHECK(fused.grads == unfused.grads);
  // The minibatches read by index: the same values, the same bits.
  CHECK(by_index.messages == fused.messages);
  CHECK(by_index.momenta == fused.momenta);
  CHECK(by_index.grads == fused.grads);
  // Something moved, and only the first layer of the stepped nodes' rows: the rest of each
  // message, and nodes 0 and 1, are as they were.
  CHECK(worst(fused.messages, before.messages) > 1e-3);
  for (int m = 0; m < Problem::kStepped; ++m)
    for (std::size_t e = Problem::kP - Problem::kRest; e < Problem::kP; ++e)
      CHECK(fused.messages[m * Problem::kP + e] == before.messages[m * Problem::kP + e]);
  for (std::size_t e = 0; e < 2 * Problem::kP; ++e) {
    CHECK(fused.momenta[e] == before.momenta[e]);
    CHECK(fused.grads[e] == before.grads[e]);
  }
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("fused first-layer steps equal the gradient then the local step") {
    StepBatch rule;
    SUBCASE("plain SGD") {}
    SUBCASE("heavy ball with weight decay") {
      rule.momentum = 0.9f;
      rule.weight_decay = 1e-3f;
    }
    SUBCASE("Nesterov") {
      rule.momentum = 0.9f;
      rule.nesterov = true;
    }
    SUBCASE("quasi-global buffer") {
      rule.momentum = 0.9f;
      rule.quasi_global = true;
    }
    SUBCASE("combine-then-adapt, one step without a message") {
      rule.momentum = 0.9f;
      rule.combine_then_adapt = true;
    }
    check_same_steps(rule);
  }

  TEST_CASE("fused first-layer steps: a weight read at the wrong place is caught") {
    // The comparison above must be able to fail: a plan that reads the minibatch of the
    // wrong node (positions shifted by one) steps with another node's gradient.
    StepBatch rule;
    rule.momentum = 0.9f;
    Problem p = run(rule, false);
    Problem q;
    const int node[] = {2, 4, 3};
    float* out[] = {q.messages.data(), q.messages.data() + Problem::kP,
                    q.messages.data() + 2 * Problem::kP};
    const float lr[] = {0.1f, 0.2f, 0.05f};
    rule.node = node;
    rule.out = out;
    rule.lr = lr;
    FirstLayerPlan shifted = q.plan();
    shifted.first_node = 1; // node 2 (entry 0) reads position 1's delta and minibatch
    for (int tile = 0; tile < fused_tiles(shifted); ++tile)
      fused_block_on_host(rule, shifted, q.grads.data(), q.models.data(), q.momenta.data(),
                          Problem::kP, 0, tile);
    std::vector<float> first(p.messages.begin(), p.messages.begin() + Problem::kP);
    std::vector<float> wrong(q.messages.begin(), q.messages.begin() + Problem::kP);
    CHECK(worst(first, wrong) > 1e-3);
  }
}
