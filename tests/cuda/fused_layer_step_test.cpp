// SPDX-License-Identifier: MIT
// A layer's weights' fused local step (fused_layer_step.hpp), its blocks run thread by thread
// on the host, against the unfused order: the gradient dz x^T summed per weight in example
// order, then local_step_element on it; the layer at the start of a row (the first layer) or
// inside it (the second). Layer sizes that are not multiples of the 64-wide tiles and more
// examples than one shared-memory load cover the edges.
#include "cuda/fused_layer_step.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <utility>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

struct Problem {
  static constexpr int kOut = 70, kIn = 150, kExamples = 40; // 2 x 3 tiles, 2 loads
  static constexpr int kNodes = 5, kFirst = 2, kStepped = 3; // nodes 2..4 step
  static constexpr std::size_t kLead = 23; // the row's floats before a second layer's W
  static constexpr std::size_t kRest = 37; // the row's floats after the layer's W
  static constexpr std::size_t kP = kLead + static_cast<std::size_t>(kOut) * kIn + kRest;
  std::size_t offset = 0; // where the layer's W starts: 0 or kLead
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
  FusedLayerPlan plan() const {
    return {dz.data(), x.data(), kOut, kIn, kExamples, kFirst, nullptr, nullptr, offset};
  }
  // The same minibatches read by index (a pass that did not gather them): the training set
  // holds x's columns in reverse order, and each index names its column there.
  std::vector<float> train;
  std::vector<std::uint32_t> idx;
  FusedLayerPlan plan_by_index() {
    const std::size_t columns = std::size_t{kStepped} * kExamples;
    train.resize(x.size());
    idx.resize(columns);
    for (std::size_t c = 0; c < columns; ++c) {
      const std::size_t at = columns - 1 - c;
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(c * kIn), kIn,
                  train.begin() + static_cast<std::ptrdiff_t>(at * kIn));
      idx[c] = static_cast<std::uint32_t>(at);
    }
    FusedLayerPlan f = plan();
    f.x = nullptr;
    f.train = train.data();
    f.idx = idx.data();
    return f;
  }
};

// Runs the steps of nodes 2, 4 and 3 (in that entry order) on p's vectors, fused (reading
// the minibatches by index, or gathered; the model and momentum from memory after the sums,
// or prefetched into the shared tiles) or in the unfused order, and returns the vectors
// after.
Problem run(StepBatch rule, bool fused, bool by_index = false, std::size_t offset = 0,
            bool prefetch = false) {
  Problem p;
  p.offset = offset;
  const int node[] = {2, 4, 3};
  float* out[] = {p.messages.data(), p.messages.data() + Problem::kP,
                  rule.combine_then_adapt ? nullptr : p.messages.data() + 2 * Problem::kP};
  const float lr[] = {0.1f, 0.2f, 0.05f};
  rule.node = node;
  rule.out = out;
  rule.lr = lr;
  const FusedLayerPlan f = by_index ? p.plan_by_index() : p.plan();
  for (int b = 0; b < Problem::kStepped; ++b) {
    if (fused) {
      for (int tile = 0; tile < fused_tiles(f); ++tile)
        fused_block_on_host(rule, f, p.grads.data(), p.models.data(), p.momenta.data(), Problem::kP,
                            b, tile, prefetch);
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
        const std::size_t e = f.offset + static_cast<std::size_t>(i) * f.out + o;
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

// The same messages, momenta and gradients, bit for bit.
void check_same_vectors(const Problem& a, const Problem& b) {
  CHECK(a.messages == b.messages);
  CHECK(a.momenta == b.momenta);
  CHECK(a.grads == b.grads);
}

void check_same_steps(const StepBatch& rule, std::size_t offset) {
  const Problem fused = run(rule, true, false, offset), unfused = run(rule, false, false, offset);
  const Problem before;
  const Problem by_index = run(rule, true, true, offset);
  const Problem prefetched = run(rule, true, false, offset, true);
  // The same sums in the same order: the same bits (this file is built without fused
  // multiply-adds, which a compiler could place differently in the two; on the device the
  // fused kernel's gradient differs from cuBLAS's in rounding, cuda_resident_test.cpp).
  check_same_vectors(fused, unfused);
  // The minibatches read by index: the same values, the same bits.
  check_same_vectors(by_index, fused);
  // The model and momentum copied into the shared tiles first: the same values, the same bits.
  check_same_vectors(prefetched, fused);
  // Something moved, and only the layer of the stepped nodes' rows: the rest of each
  // message, and nodes 0 and 1, are as they were.
  CHECK(worst(fused.messages, before.messages) > 1e-3);
  const std::size_t end = fused.plan().end();
  for (int m = 0; m < Problem::kStepped; ++m)
    for (std::size_t e = 0; e < Problem::kP; ++e)
      if (e < offset || e >= end)
        CHECK(fused.messages[m * Problem::kP + e] == before.messages[m * Problem::kP + e]);
  for (std::size_t e = 0; e < 2 * Problem::kP; ++e) {
    CHECK(fused.momenta[e] == before.momenta[e]);
    CHECK(fused.grads[e] == before.grads[e]);
  }
}

// Step entry 0 as node 2 of q (rate 0.1, its message q's first; momentum 0.9): the rule and
// the rows a block of that entry reads. Holds the arrays the rule points to: used in place.
struct NodeTwoEntry {
  int node[1] = {2};
  float* out[1];
  float lr[1] = {0.1f};
  StepBatch rule;
  StepRows rows;
  explicit NodeTwoEntry(Problem& q) : out{q.messages.data()} {
    rule.momentum = 0.9f;
    rule.node = node;
    rule.out = out;
    rule.lr = lr;
    rows = step_rows(rule, q.grads.data(), q.models.data(), q.momenta.data(), Problem::kP, 0);
  }
  NodeTwoEntry(const NodeTwoEntry&) = delete;
  NodeTwoEntry& operator=(const NodeTwoEntry&) = delete;
};

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("fused layer steps equal the gradient then the local step") {
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
    check_same_steps(rule, 0);              // a first layer, at the row's start
    check_same_steps(rule, Problem::kLead); // a second layer, inside the row
  }

  TEST_CASE("fused layer steps: the plain tiles take the rest of each row") {
    const auto ranges = [](const FusedLayers* f, std::size_t P) {
      std::vector<std::pair<std::size_t, std::size_t>> r;
      for_each_unfused_range(f, P,
                             [&](std::size_t from, std::size_t to) { r.emplace_back(from, to); });
      return r;
    };
    using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;
    CHECK(ranges(nullptr, 50) == Ranges{{0, 50}});
    FusedLayers f;
    f.count = 1;
    f.plan[0].out = 4;
    f.plan[0].in = 5; // [0, 20)
    CHECK(ranges(&f, 50) == Ranges{{20, 50}});
    CHECK(ranges(&f, 20).empty());
    f.count = 2;
    f.plan[1].out = 3;
    f.plan[1].in = 4;
    f.plan[1].offset = 24; // [24, 36): the first layer's bias between
    CHECK(ranges(&f, 50) == Ranges{{20, 24}, {36, 50}});
    CHECK(ranges(&f, 36) == Ranges{{20, 24}});
  }

  TEST_CASE("fused layer steps: a weight read at the wrong place is caught") {
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
    FusedLayerPlan shifted = q.plan();
    shifted.first_node = 1; // node 2 (entry 0) reads position 1's delta and minibatch
    for (int tile = 0; tile < fused_tiles(shifted); ++tile)
      fused_block_on_host(rule, shifted, q.grads.data(), q.models.data(), q.momenta.data(),
                          Problem::kP, 0, tile);
    std::vector<float> first(p.messages.begin(), p.messages.begin() + Problem::kP);
    std::vector<float> wrong(q.messages.begin(), q.messages.begin() + Problem::kP);
    CHECK(worst(first, wrong) > 1e-3);
  }

  TEST_CASE("fused layer steps: the shared tiles hold the block's weights, zero past the layer") {
    // The corner tile of a second layer (outputs 64..69 of 70, inputs 128..149 of 150): its
    // model and momentum in place (input-major), zero where the tile leaves the layer.
    Problem q;
    q.offset = Problem::kLead;
    const NodeTwoEntry entry(q);
    const StepRows& r = entry.rows;
    const FusedLayerPlan f = q.plan();
    std::vector<float> w(kFusedTileFloats, -1.0f), m(kFusedTileFloats, -1.0f);
    const int o0 = kFusedTile, i0 = 2 * kFusedTile;
    for (int t = 0; t < kFusedThreads; ++t)
      fused_tile_copy(f, r, o0, i0, t, w.data(), m.data(), CopyOrZero{});
    const std::size_t row = 2 * Problem::kP;
    int inside = 0;
    for (int v = 0; v < kFusedTileFloats; ++v) {
      const int o = o0 + v % kFusedTile, i = i0 + v / kFusedTile;
      if (o < f.out && i < f.in) {
        const std::size_t e = row + f.offset + static_cast<std::size_t>(i) * f.out + o;
        CHECK(w[static_cast<std::size_t>(v)] == q.models[e]);
        CHECK(m[static_cast<std::size_t>(v)] == q.momenta[e]);
        ++inside;
      } else {
        CHECK(w[static_cast<std::size_t>(v)] == 0.0f);
        CHECK(m[static_cast<std::size_t>(v)] == 0.0f);
      }
    }
    CHECK(inside == 6 * 22);
  }

  TEST_CASE("fused layer steps: a shared tile read at the wrong place is caught") {
    // The prefetching steps' comparison must be able to fail: entry 0's blocks with tiles
    // copied from a layer one float later (each weight's neighbour) step to other messages.
    Problem q;
    const NodeTwoEntry entry(q);
    const StepBatch& rule = entry.rule;
    const StepRows& r = entry.rows;
    const Problem fused = run(rule, true);
    const FusedLayerPlan f = q.plan();
    FusedLayerPlan later = f;
    ++later.offset;
    std::vector<float> dz(kFusedShared), x(kFusedShared), w(kFusedTileFloats), m(kFusedTileFloats);
    std::vector<FusedAccumulators> acc(kFusedThreads);
    for (int tile = 0; tile < fused_tiles(f); ++tile) {
      const int o0 = tile % fused_tiles_out(f) * kFusedTile;
      const int i0 = tile / fused_tiles_out(f) * kFusedTile;
      std::fill(acc.begin(), acc.end(), FusedAccumulators{});
      for (int k0 = 0; k0 < f.n; k0 += kFusedExamples) {
        const int kc = std::min(kFusedExamples, f.n - k0);
        for (int t = 0; t < kFusedThreads; ++t)
          fused_load(f, 0, o0, i0, k0, kc, t, dz.data(), x.data());
        for (int t = 0; t < kFusedThreads; ++t)
          fused_accumulate(t, dz.data(), x.data(), kc, acc[static_cast<std::size_t>(t)]);
      }
      for (int t = 0; t < kFusedThreads; ++t)
        fused_tile_copy(later, r, o0, i0, t, w.data(), m.data(), CopyOrZero{});
      for (int t = 0; t < kFusedThreads; ++t)
        fused_step_from_tiles(rule, f, r, o0, i0, t, acc[static_cast<std::size_t>(t)], w.data(),
                              m.data());
    }
    std::vector<float> right(fused.messages.begin(), fused.messages.begin() + Problem::kP);
    std::vector<float> wrong(q.messages.begin(), q.messages.begin() + Problem::kP);
    CHECK(worst(right, wrong) > 1e-3);
  }
}
