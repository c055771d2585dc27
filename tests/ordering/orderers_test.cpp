// SPDX-License-Identifier: MIT
// Example orderers on hand-built gradients: permutations every epoch, the orders the rules
// of docs/algorithms.md, section 7 give by hand, D-RR identical to the engine's original sampler.
#include "order_harness.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/data_sampler.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"
#include "sim/optimizers/ordering/random_order.hpp"
#include "support/config_error.hpp"
#include "support/params_helper.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <map>
#include <numeric>

using namespace dtsim;
using namespace dtsim::testing;

namespace {

Partition partition_of(const std::vector<std::vector<std::uint32_t>>& nodes) {
  Partition p;
  p.node_indices = nodes;
  return p;
}

std::unique_ptr<ExampleOrder> make(const std::string& kind, const Partition& part,
                                   const Model& model, int batch, std::uint64_t seed = 5) {
  const OrderSetup setup{static_cast<int>(part.node_indices.size()), batch, seed, &part, &model};
  if (kind == "id-grab-mean")
    return make_order(make_params({{"kind", "id-grab"}, {"balance", "mean"}}), setup);
  return make_order(make_params({{"kind", kind}}), setup);
}

// Gradients given by position in each node's first-epoch order: rows[node][position].
OrderHarness::Gradient by_position(const ExampleOrder& order,
                                   const std::vector<std::vector<std::vector<float>>>& rows) {
  std::map<std::uint32_t, std::vector<float>> g;
  for (std::size_t j = 0; j < rows.size(); ++j) {
    const auto first = order.epoch_order(static_cast<int>(j), 0);
    for (std::size_t k = 0; k < rows[j].size(); ++k)
      g[first[k]] = rows[j][k];
  }
  return [g](std::uint32_t id) { return g.at(id); };
}

std::vector<std::uint32_t> slice(const std::vector<std::uint32_t>& v, std::size_t first,
                                 std::size_t n) {
  REQUIRE(first + n <= v.size());
  return {v.begin() + static_cast<long>(first), v.begin() + static_cast<long>(first + n)};
}

} // namespace

TEST_SUITE("ordering") {
  TEST_CASE("Orderers: every kind gives each node a permutation of its examples every epoch") {
    const Partition part = partition_of({{3, 9, 14, 20, 21, 30, 31}, // 7 (odd)
                                         {0, 1, 2, 4, 5, 6, 7, 8},   // 8
                                         {40, 41, 42, 43, 44}});     // 5 (odd)
    const StubModel model(3);
    for (const char* kind :
         {"random", "fixed", "grab", "pair-balance", "id-grab", "id-grab-mean", "cd-grab"})
      for (bool late : {false, true}) {
        CAPTURE(kind);
        CAPTURE(late);
        auto order = make(kind, part, model, 3);
        OrderHarness h(*order, 3, 3, 3, [](std::uint32_t id) {
          Rng r(1000 + id);
          return std::vector<float>{static_cast<float>(r.normal()), static_cast<float>(r.normal()),
                                    static_cast<float>(r.normal())};
        });
        for (int round = 0; round < 30; ++round)
          h.round(late);
        for (int j = 0; j < 3; ++j) {
          std::vector<std::uint32_t> expected = part.node_indices[static_cast<std::size_t>(j)];
          std::sort(expected.begin(), expected.end());
          const auto& d = h.drawn(j);
          const std::size_t m = expected.size();
          REQUIRE(d.size() >= 4 * m);
          std::vector<std::vector<std::uint32_t>> epochs;
          for (std::size_t first = 0; first + m <= d.size(); first += m) {
            auto e = slice(d, first, m);
            epochs.push_back(e);
            std::sort(e.begin(), e.end());
            CHECK(e == expected);
          }
          // random reshuffles; fixed never changes; balancing changes the order.
          if (std::string(kind) == "fixed")
            CHECK(epochs[0] == epochs[3]);
          else
            CHECK(epochs[0] != epochs[3]);
        }
      }
  }

  TEST_CASE("Orderers: random is the engine's original D-RR sampler, draw for draw") {
    const Partition part = partition_of({{5, 9, 11, 20, 33, 41, 42}, {1, 2, 3}});
    const StubModel model(2);
    for (int batch : {1, 3, 7, 8}) {
      CAPTURE(batch);
      auto order = make("random", part, model, batch, 11);
      OrderHarness h(*order, 2, batch, 2, [](std::uint32_t) { return std::vector<float>(2); });
      for (int round = 0; round < 9; ++round)
        h.round(false);
      for (int j = 0; j < 2; ++j) {
        DataSampler reference(part.node_indices[static_cast<std::size_t>(j)], 11, j);
        std::vector<std::uint32_t> expected(h.drawn(j).size());
        for (std::size_t first = 0; first < expected.size();
             first += static_cast<std::size_t>(batch))
          reference.next_batch(
              std::span<std::uint32_t>(expected).subspan(first, static_cast<std::size_t>(batch)));
        CHECK(h.drawn(j) == expected);
      }
    }
  }

  TEST_CASE("GraB: the stale-mean rule of 10.1 by hand") {
    // One node, four examples a b c d (the first epoch's order), batch 2. Epoch 0, mbar = 0:
    //  a (1,0): <0,c>=0 -> s=(1,0) front     b (1,1): <s,c>=1 -> s=(0,-1) back
    //  c (-1,2): -2 -> s=(-1,1) front       d (3,-3): -6 -> s=(2,-2) front
    // next = a c d b, mnext = (1,0). Epoch 1 in that order, mbar = (1,0): a c=(0,0) front,
    // c c=(-2,2) front, d c=(2,-3) <(-2,2),c>=-10 front, b c=(0,1) <(0,-1),c>=-1 front.
    const Partition part = partition_of({{10, 11, 12, 13}});
    const StubModel model(2);
    auto order = make("grab", part, model, 2);
    const auto s0 = std::vector<std::uint32_t>(order->epoch_order(0, 0).begin(),
                                               order->epoch_order(0, 0).end());
    OrderHarness h(*order, 1, 2, 2, by_position(*order, {{{1, 0}, {1, 1}, {-1, 2}, {3, -3}}}));
    for (int round = 0; round < 6; ++round)
      h.round(false);
    const std::vector<std::uint32_t> acdb{s0[0], s0[2], s0[3], s0[1]};
    CHECK(slice(h.drawn(0), 0, 4) == s0);
    CHECK(slice(h.drawn(0), 4, 4) == acdb);
    CHECK(slice(h.drawn(0), 8, 4) == acdb);
  }

  TEST_CASE("PairBalance: the rule of 10.2 by hand, with a pair across two batches") {
    // a b c d e, batch 3 (batches a b c | d e): pair (a,b) dlt=(1,0): s=0 -> s=(1,0),
    // a front, b back; pair (c,d) dlt=(2,-1): <s,dlt>=2 > 0 -> s=(-1,1), d front, c back;
    // e (odd) in the middle: next = a d e c b.
    const Partition part = partition_of({{0, 1, 2, 3, 4}});
    const StubModel model(2);
    for (const char* kind : {"pair-balance", "id-grab"}) {
      CAPTURE(kind);
      auto order = make(kind, part, model, 3);
      const auto f = order->epoch_order(0, 0);
      const std::vector<std::uint32_t> s0(f.begin(), f.end());
      OrderHarness h(*order, 1, 3, 2,
                     by_position(*order, {{{1, 0}, {0, 0}, {2, 0}, {0, 1}, {5, 5}}}));
      for (int round = 0; round < 4; ++round)
        h.round(false);
      CHECK(slice(h.drawn(0), 5, 5) ==
            std::vector<std::uint32_t>{s0[0], s0[3], s0[4], s0[2], s0[1]});
    }
  }

  TEST_CASE("CD-GraB: one running sum over both workers (10.4 by hand), unlike ID-GraB") {
    // Two workers, four examples each (a b c d), batch 2: one pair per worker and step.
    // dlt = g(second) - g(first); pairs balanced worker 0 then 1 with one shared s:
    //  step 0: w0 dlt=(-1,0): s=0 -> s=(-1,0) +1;  w1 dlt=(2,1): <s,dlt>=-2 -> s=(1,1) +1
    //  step 1: w0 dlt=(1,2): 3 > 0 -> s=(0,-1) -1; w1 dlt=(0,-3): 3 > 0 -> s=(0,2) -1
    // next: w0 a d c b, w1 a d c b. Alone (PairBalance per worker) both give a c d b.
    const Partition part = partition_of({{0, 1, 2, 3}, {4, 5, 6, 7}});
    const StubModel model(2);
    const std::vector<std::vector<std::vector<float>>> g = {{{1, 0}, {0, 0}, {0, 0}, {1, 2}},
                                                            {{0, 0}, {2, 1}, {0, 3}, {0, 0}}};
    for (bool late : {false, true}) {
      CAPTURE(late);
      for (const char* kind : {"cd-grab", "id-grab"}) {
        CAPTURE(kind);
        auto order = make(kind, part, model, 2);
        OrderHarness h(*order, 2, 2, 2, by_position(*order, g));
        for (int round = 0; round < 4; ++round)
          h.round(late);
        for (int j = 0; j < 2; ++j) {
          const auto f = order->epoch_order(j, 0);
          const std::vector<std::uint32_t> s0(f.begin(), f.end());
          const std::vector<std::uint32_t> adcb{s0[0], s0[3], s0[2], s0[1]};
          const std::vector<std::uint32_t> acdb{s0[0], s0[2], s0[3], s0[1]};
          CHECK(slice(h.drawn(j), 4, 4) == (std::string(kind) == "cd-grab" ? adcb : acdb));
        }
        if (std::string(kind) == "cd-grab") {
          // Per worker and step: 64 + 4 d bytes of differences, 64 + 1 bytes of signs.
          // Four steps drawn; with late delivery the last step's signs are not sent yet.
          const int signed_steps = late ? 3 : 4;
          CHECK(h.bytes() == 4 * 2 * (64 + 4 * 2) + signed_steps * 2 * (64 + 1));
          // Late delivery: both workers waited for their signs at the epoch's end.
          CHECK(h.releases() == (late ? 2 : 0));
        }
      }
    }
  }

  TEST_CASE("Orderers: configuration errors are one line naming the key") {
    const Partition part = partition_of({{0, 1, 2, 3}});
    const StubModel with(2), without(2, false);
    const OrderSetup setup{1, 2, 1, &part, &without};
    CHECK(config_error_of([&] {
            make_order(make_params({{"kind", "cd-grub"}}), setup);
          }) ==
          "test.yaml:2: kind: unknown name 'cd-grub' (did you mean 'cd-grab'?); expected one of: "
          "random, fixed, grab, pair-balance, id-grab, cd-grab");
    CHECK(config_error_of([&] {
            make_order(make_params({{"kind", "cd-grab"}}), setup);
          }) ==
          "test.yaml:2: kind: 'cd-grab' balances per-example gradients, which model stub does not "
          "compute; use random or fixed, or another model");
    CHECK(config_error_of([&] {
            make_order(make_params({{"kind", "random"}}), setup);
          }) == "(no error)");
    const OrderSetup ok{1, 2, 1, &part, &with};
    CHECK(config_error_of([&] {
            make_order(make_params({{"kind", "id-grab"}, {"balance", "both"}}), ok);
          }).find("test.yaml:3: balance:") == 0);
    CHECK(config_error_of([&] {
            make_order(make_params({{"kind", "cd-grab"}, {"server_s_per_pair", "-1"}}), ok);
          }).find("test.yaml:3: server_s_per_pair: expected a number in [0, 1000000000]") == 0);
  }
}
