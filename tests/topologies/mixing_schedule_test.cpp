// SPDX-License-Identifier: MIT
// Mixing schedules: static W every round, one-peer exponential (exact averaging in log2 n
// rounds), random pairs (seeded matchings), every round doubly stochastic.
#include "support/params_helper.hpp"
#include "topologies/make_topology.hpp"
#include "topologies/mixing_schedule.hpp"
#include "topologies/one_peer_exponential.hpp"
#include "topologies/random_pairs.hpp"
#include "topologies/static_mixing.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

namespace {

void check_doubly_stochastic(const Eigen::MatrixXd& w) {
  CHECK((w.array() >= 0).all());
  CHECK((w.rowwise().sum().array() - 1).abs().maxCoeff() < 1e-15);
  CHECK((w.colwise().sum().array() - 1).abs().maxCoeff() < 1e-15);
}

// The rows' in-lists and the out-lists describe the same matrix: j in out(i) <=> i in in(j).
void check_in_out_agree(const MixingSchedule& s, std::int64_t round) {
  const Eigen::MatrixXd w = s.matrix(round);
  for (int i = 0; i < s.size(); ++i)
    for (int j : s.at(round, i).out) {
      CHECK(j != i);
      CHECK(w(j, i) > 0);
    }
  int edges_in = 0, edges_out = 0;
  for (int i = 0; i < s.size(); ++i) {
    edges_in += static_cast<int>(s.at(round, i).in.size());
    edges_out += static_cast<int>(s.at(round, i).out.size());
  }
  CHECK(edges_in == edges_out);
}

Topology graph(const std::string& kind, int n) {
  return make_topology(testing::make_params({{"kind", kind}}), n, 1);
}

} // namespace

TEST_SUITE("topologies") {
  TEST_CASE("MixingSchedule: every round of every schedule is doubly stochastic") {
    for (int n : {1, 2, 3, 5, 6, 8, 13}) {
      CAPTURE(n);
      const OnePeerExponential one_peer(n);
      const RandomPairs pairs(n, 11);
      const Topology ring = graph("ring", n);
      const StaticMixing fixed(ring);
      for (const MixingSchedule* s :
           {static_cast<const MixingSchedule*>(&one_peer),
            static_cast<const MixingSchedule*>(&pairs), static_cast<const MixingSchedule*>(&fixed)})
        for (std::int64_t r = 0; r < 12; ++r) {
          CAPTURE(s->name());
          CAPTURE(r);
          check_doubly_stochastic(s->matrix(r));
          check_in_out_agree(*s, r);
          for (int i = 0; i < n; ++i)
            CHECK(static_cast<int>(s->at(r, i).in.size()) <= s->max_degree());
        }
    }
  }

  TEST_CASE("OnePeerExponential: round r pairs i with i + 2^(r mod log2 n), weights 1/2") {
    const OnePeerExponential s(8);
    CHECK(s.period() == 3);
    CHECK(s.time_varying());
    for (std::int64_t r = 0; r < 6; ++r) {
      const int hop = 1 << (r % 3);
      for (int i = 0; i < 8; ++i) {
        const RoundMixing row = s.at(r, i);
        REQUIRE(row.in.size() == 1);
        CHECK(row.in[0] == (i + hop) % 8);
        CHECK(row.out[0] == (i - hop + 8) % 8);
        CHECK(row.weights[0] == 0.5);
        CHECK(row.self_weight == 0.5);
      }
    }
  }

  TEST_CASE("OnePeerExponential: log2 n rounds give the exact average for n a power of 2") {
    for (int n : {2, 4, 8, 16, 32, 64}) {
      CAPTURE(n);
      const OnePeerExponential s(n);
      const auto tau = s.period();
      CHECK((std::int64_t{1} << tau) == n);
      const Eigen::MatrixXd average = Eigen::MatrixXd::Constant(n, n, 1.0 / n);
      for (std::int64_t start : {0, 1, 5}) { // any tau consecutive rounds
        Eigen::MatrixXd product = Eigen::MatrixXd::Identity(n, n);
        for (std::int64_t r = start; r < start + tau; ++r)
          product = s.matrix(r) * product;
        CHECK((product - average).cwiseAbs().maxCoeff() < 1e-15);
        // One round fewer is not yet the average (entries 2/n or 0).
        Eigen::MatrixXd shorter = Eigen::MatrixXd::Identity(n, n);
        for (std::int64_t r = start; r < start + tau - 1; ++r)
          shorter = s.matrix(r) * shorter;
        CHECK((shorter - average).cwiseAbs().maxCoeff() > 0.5 / n);
      }
    }
  }

  TEST_CASE("RandomPairs: a seeded perfect matching per round, the same in any query order") {
    const RandomPairs a(10, 4), b(10, 4), other(10, 5);
    bool differs_by_round = false, differs_by_seed = false;
    for (std::int64_t r : {0, 7, 3, 30, 7, 0, 12, 13, 14, 15, 16, 17, 18, 19, 0}) {
      for (int i = 0; i < 10; ++i) {
        const RoundMixing row = a.at(r, i);
        REQUIRE(row.in.size() == 1); // even n: everyone has a partner
        const int j = row.in[0];
        CHECK(j != i);
        CHECK(a.at(r, j).in[0] == i); // symmetric
        CHECK(b.at(r, i).in[0] == j); // same seed, other query order
        differs_by_seed |= other.at(r, i).in[0] != j;
        differs_by_round |= a.at(r + 1, i).in[0] != j;
      }
    }
    CHECK(differs_by_seed);
    CHECK(differs_by_round);
    // Odd n: exactly one node sits each round out, with weight 1 on itself.
    const RandomPairs odd(7, 1);
    for (std::int64_t r = 0; r < 20; ++r) {
      int alone = 0;
      for (int i = 0; i < 7; ++i)
        if (odd.at(r, i).in.empty()) {
          ++alone;
          CHECK(odd.at(r, i).self_weight == 1.0);
        }
      CHECK(alone == 1);
    }
  }

  TEST_CASE("make_mixing_schedule: time-varying kinds get their rounds, others the static W") {
    for (const char* kind : {"one_peer_exponential", "random_pairs", "ring", "hypercube"}) {
      CAPTURE(kind);
      const Params p = testing::make_params({{"kind", kind}});
      const Topology t = make_topology(p, 8, 2);
      const auto s = make_mixing_schedule(p, t, 2);
      const bool varying =
          std::string(kind) == "one_peer_exponential" || std::string(kind) == "random_pairs";
      CHECK(s->time_varying() == varying);
      if (!varying)
        CHECK(s->matrix(5) == t.mixing_matrix());
    }
    // The static graph of a time-varying kind is the union of its rounds' edges.
    CHECK(graph("one_peer_exponential", 8).num_edges() == graph("exponential", 8).num_edges());
    CHECK(graph("random_pairs", 6).num_edges() == 15);
  }
}
