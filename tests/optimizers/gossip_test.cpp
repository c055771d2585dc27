// SPDX-License-Identifier: MIT
// Gossip protocols on scripted timelines: pairwise averaging keeps the network mean and
// reaches consensus, local progress is neither lost nor counted twice, deadlock cycles are
// broken, lattice decode failures are counted.
#include "gossip_test_util.hpp"
#include "sim/optimizers/ad_psgd.hpp"
#include "sim/optimizers/choco_sgd.hpp"
#include "sim/optimizers/swarm_sgd.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "support/config_error.hpp"
#include "support/scripted_context.hpp"
#include "topologies/make_topology.hpp"
#include "topologies/one_peer_exponential.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <map>
#include <memory>

using namespace dtsim;
using dtsim::testing::ScriptedContext;
using dtsim::testing::ScriptedTiming;

namespace {

Params yaml(const std::string& text) {
  return Params(parse_yaml_text(text, "test.yaml"), "test.yaml");
}

Topology topology(const std::string& kind, int n) {
  return make_topology(yaml("kind: " + kind), n, 1);
}

constexpr std::size_t kDim = 6;
// Compute times exponential with mean 10 ms per node, 2 ms links: interleavings vary.
constexpr ScriptedTiming kRandomTimes{0.01, true, 0.002};

// Node i's model: N(0, scale^2) per coordinate, different for every node.
void set_random_models(ScriptedContext& ctx, double scale, std::uint64_t seed) {
  Rng rng(seed);
  for (int i = 0; i < ctx.num_nodes(); ++i)
    for (float& v : ctx.params(i))
      v = static_cast<float>(scale * rng.normal());
}

Vec mean_of(const ScriptedContext& ctx) {
  Vec m = Vec::Zero(static_cast<Eigen::Index>(kDim));
  for (int i = 0; i < ctx.num_nodes(); ++i)
    m += as_vec(ctx.params_view(i));
  return m / static_cast<float>(ctx.num_nodes());
}

// Largest distance of a node model from the mean of the node models.
double spread(const ScriptedContext& ctx) {
  const Vec m = mean_of(ctx);
  double s = 0;
  for (int i = 0; i < ctx.num_nodes(); ++i)
    s = std::max(s, static_cast<double>((as_vec(ctx.params_view(i)) - m).norm()));
  return s;
}

Vec eval(const Algorithm& a, const ScriptedContext& ctx) {
  Vec out(static_cast<Eigen::Index>(kDim));
  a.eval_model(ctx, {out.data(), kDim});
  return out;
}

// One /metrics row of the algorithm's own columns (taking it restarts the per-row sums).
std::map<std::string, double> metrics(const Algorithm& a) {
  std::vector<std::pair<std::string, double>> columns;
  a.add_metrics(columns);
  return {columns.begin(), columns.end()};
}

std::int64_t total(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (std::int64_t x : v)
    s += x;
  return s;
}

} // namespace

TEST_SUITE("gossip") {
  TEST_CASE("AdPsgd: pairwise averaging keeps the network mean and reaches consensus") {
    for (const char* split : {"bipartite", "none"}) {
      CAPTURE(split);
      const Topology t = topology("torus", 16);
      AdPsgd a(yaml(std::string("{lr: 0.1, split: ") + split + "}"), {16, kDim, &t});
      ScriptedContext ctx(t, kDim, 4, kRandomTimes);
      set_random_models(ctx, 1.0, 7);
      const Vec mean0 = mean_of(ctx);
      const double spread0 = spread(ctx);
      ctx.run_for(a, 3.0);
      // The live models' mean is the initial mean (no gradients: only averaging).
      CHECK((eval(a, ctx) - mean0).cwiseAbs().maxCoeff() < 1e-5f);
      double live_spread = 0;
      for (int i = 0; i < 16; ++i)
        live_spread =
            std::max(live_spread, static_cast<double>((as_vec(a.live_model(i)) - mean0).norm()));
      CHECK(live_spread < 1e-3 * spread0);
      const auto m = metrics(a);
      CHECK(m.at("interactions") > 500);
      if (std::string(split) == "bipartite") {
        CHECK(m.at("deadlocks_broken") == 0);
        CHECK(a.active(0) != a.active(1));
        CHECK(ctx.idle_s[1] == 0.0); // passive nodes never wait
      }
      CHECK(ctx.idle_s[0] > 0.0);
      CHECK(ctx.max_staleness >= 1);
      CHECK(m.at("bits_per_coordinate") == 32.0);
    }
  }

  TEST_CASE("AdPsgd: with every node active, deadlock cycles are broken and the mean is kept") {
    // Equal compute times: every node initiates at the same instants, so pairs that pick
    // each other (2-cycles) are frequent.
    const Topology t = topology("ring", 4);
    AdPsgd a(yaml("{lr: 0.1, split: none}"), {4, kDim, &t});
    ScriptedContext ctx(t, kDim, 5, {0.01, false, 0.002});
    set_random_models(ctx, 1.0, 8);
    const Vec mean0 = mean_of(ctx);
    ctx.run_for(a, 2.0);
    const auto m = metrics(a);
    CHECK(m.at("deadlocks_broken") > 10);
    CHECK((eval(a, ctx) - mean0).cwiseAbs().maxCoeff() < 1e-5f);
    for (int i = 0; i < 4; ++i)
      CHECK(ctx.updates[static_cast<std::size_t>(i)] > 100); // nobody stalled
  }

  TEST_CASE("AdPsgd: split bipartite on a graph that is not bipartite is refused") {
    const Topology t = topology("ring", 7);
    const std::string e = testing::config_error_of([&] {
      AdPsgd a(yaml("{split: bipartite}"), {7, kDim, &t});
    });
    CHECK(e.find("test.yaml:1: split: expected a bipartite topology") != std::string::npos);
    AdPsgd a(yaml("{split: auto}"), {7, kDim, &t});
    for (int i = 0; i < 7; ++i)
      CHECK(a.active(i));
  }

  TEST_CASE("SwarmSgd: pairwise averaging keeps the network mean and reaches consensus") {
    for (const char* blocking : {"false", "true"}) {
      CAPTURE(blocking);
      const Topology t = topology("ring", 8);
      SwarmSgd a(yaml(std::string("{lr: 0.1, local_steps: 3, local_steps_dist: geometric, "
                                  "compressor: {kind: none}, blocking: ") +
                      blocking + "}"),
                 {8, kDim, &t});
      ScriptedContext ctx(t, kDim, 6, kRandomTimes);
      set_random_models(ctx, 1.0, 9);
      const Vec mean0 = mean_of(ctx);
      const double spread0 = spread(ctx);
      ctx.run_for(a, 6.0);
      CHECK((eval(a, ctx) - mean0).cwiseAbs().maxCoeff() < 1e-5f);
      CHECK(spread(ctx) < 1e-3 * spread0);
      const auto m = metrics(a);
      CHECK(m.at("interactions") > 100);
      CHECK(m.at("decode_failures") == 0);
      if (std::string(blocking) == "false")
        CHECK(m.at("partner_staleness_mean") > 0); // partners were mid-run
      else
        CHECK(m.at("partner_staleness_mean") == 0);
    }
  }

  TEST_CASE("SwarmSgd and AdPsgd: every local step reaches the network mean exactly once") {
    // The same constant gradient g at every node: each applied step moves the mean of the
    // current models by -lr*g/n, whatever the averaging did (non-blocking partners add their
    // progress later; it must be neither lost nor counted twice). While a reply is in flight
    // only the partner has averaged, so the check runs whenever no message is in flight.
    const Topology t = topology("ring", 8);
    Vec g(static_cast<Eigen::Index>(kDim));
    g << 1, -2, 0.5f, 0, 3, -1;
    const std::vector<std::string> algorithms = {
        "{name: swarm, lr: 0.01, local_steps: 2, compressor: {kind: none}}",
        "{name: swarm, lr: 0.01, local_steps: 3, local_steps_dist: geometric, blocking: true, "
        "compressor: {kind: none}}",
        "{name: adpsgd, lr: 0.01, split: none}", "{name: adpsgd, lr: 0.01, split: bipartite}"};
    for (const std::string& text : algorithms) {
      CAPTURE(text);
      Params p = yaml(text);
      const bool swarm = p.text("name") == "swarm";
      std::unique_ptr<Algorithm> a;
      if (swarm)
        a = std::make_unique<SwarmSgd>(p, AlgorithmSetup{8, kDim, &t});
      else
        a = std::make_unique<AdPsgd>(p, AlgorithmSetup{8, kDim, &t});
      ScriptedContext ctx(t, kDim, 7, kRandomTimes);
      ctx.gradient = [&](int, std::span<const float>, std::span<float> out) { as_vec(out) = g; };
      set_random_models(ctx, 1.0, 10);
      const Vec mean0 = mean_of(ctx);
      int checks = 0;
      float worst = 0;
      ctx.after_event = [&] {
        if (ctx.in_flight > 0)
          return;
        ++checks;
        const auto steps = static_cast<float>(total(ctx.updates));
        const Vec expect = mean0 - 0.01f * steps / 8.0f * g;
        worst = std::max(worst, (eval(*a, ctx) - expect).cwiseAbs().maxCoeff());
      };
      ctx.run_for(*a, 2.0);
      CHECK(total(ctx.updates) > 500);
      CHECK(checks > 20);
      CHECK(worst < 1e-4f);
    }
  }

  TEST_CASE("SwarmSgd: lattice decode failures are counted, none while models stay close") {
    const Topology t = topology("ring", 8);
    for (double scale : {1e-3, 1.0}) {
      CAPTURE(scale);
      SwarmSgd a(yaml("{lr: 0.1, compressor: {kind: lattice, bits: 8, side: 1.0e-4}}"),
                 {8, kDim, &t});
      ScriptedContext ctx(t, kDim, 8, kRandomTimes);
      set_random_models(ctx, scale, 11);
      ctx.run_for(a, 1.0);
      const auto m = metrics(a);
      CHECK(m.at("bits_per_coordinate") == 8.0);
      CHECK(m.at("quantization_error") <= 0.5e-4 * std::sqrt(double(kDim)));
      // Radius q*s/2 = 0.0128: models 1e-3 apart decode exactly, models ~1 apart do not.
      if (scale < 0.01)
        CHECK(m.at("decode_failures") == 0);
      else
        CHECK(m.at("decode_failures") > 100);
    }
  }

  TEST_CASE("ChocoSgd: compressed gossip keeps the mean and reaches consensus") {
    for (const char* c : {"{kind: qsgd, bits: 4, bucket: 0}", "{kind: sign}",
                          "{kind: topk, ratio: 0.34}", "{kind: randomk, ratio: 0.34}"}) {
      CAPTURE(c);
      const Topology t = topology("ring", 8);
      ChocoSgd a(yaml(std::string("{lr: 0.1, gamma: 0.3, compressor: ") + c + "}"), {8, kDim, &t});
      ScriptedContext ctx(t, kDim, 9, kRandomTimes);
      set_random_models(ctx, 1.0, 12);
      const Vec mean0 = mean_of(ctx);
      const double spread0 = spread(ctx);
      ctx.run_for(a, 10.0);
      CHECK((mean_of(ctx) - mean0).cwiseAbs().maxCoeff() < 1e-4f);
      CHECK(spread(ctx) < 1e-2 * spread0);
      const auto m = metrics(a);
      CHECK(m.at("quantization_error") >= 0);
    }
  }

  TEST_CASE("Gossip start from the engine's common model: the same run as from each model") {
    // CHOCO-SGD's initial estimates and sums built once per weight pattern (a star: the hub's
    // and the leaves'), and asynchronous gossip's initial copies, from the common model the
    // engine offers at a run's start, against the same models read one by one.
    for (const std::string algorithm : {"choco-sgd", "dsgdm"}) {
      CAPTURE(algorithm);
      const Topology t = topology("star", 6);
      std::vector<Vec> finals;
      for (const bool offered : {true, false}) {
        ScriptedContext ctx(t, kDim, 9, kRandomTimes);
        Rng rng(5);
        Vec x0(static_cast<Eigen::Index>(kDim));
        for (float& v : x0)
          v = static_cast<float>(rng.normal());
        for (int i = 0; i < ctx.num_nodes(); ++i)
          as_vec(ctx.params(i)) = x0;
        ctx.gradient = [](int node, std::span<const float> x, std::span<float> g) {
          for (std::size_t e = 0; e < g.size(); ++e)
            g[e] = x[e] - static_cast<float>(node); // pulls node i towards i
        };
        ctx.offer_common_model = offered;
        const std::unique_ptr<Algorithm> a =
            algorithm == "choco-sgd"
                ? std::unique_ptr<Algorithm>(std::make_unique<ChocoSgd>(
                      yaml("{lr: 0.1, gamma: 0.3, compressor: {kind: topk, ratio: 0.34}}"),
                      AlgorithmSetup{6, kDim, &t}))
                : testing::make_algorithm("dsgdm", testing::setup_for(t, kDim),
                                          {{"lr", "0.1"}, {"mode", "async"}});
        ctx.run_for(*a, 0.5);
        REQUIRE(ctx.gradient_steps > 20);
        Vec all(static_cast<Eigen::Index>(6 * kDim));
        for (int i = 0; i < 6; ++i)
          all.segment(static_cast<Eigen::Index>(i * kDim), static_cast<Eigen::Index>(kDim)) =
              as_vec(ctx.params_view(i));
        finals.push_back(all);
      }
      CHECK(finals[0] == finals[1]);
      CHECK(finals[0] != Vec::Zero(static_cast<Eigen::Index>(6 * kDim)));
    }
  }

  TEST_CASE("ChocoSgd: error feedback and the lattice quantizer are refused") {
    const Topology t = topology("ring", 8);
    CHECK(testing::config_error_of([&] {
            ChocoSgd a(yaml("{compressor: {kind: lattice}}"), {8, kDim, &t});
          }).find("lattice") != std::string::npos);
    CHECK(testing::config_error_of([&] {
            ChocoSgd a(yaml("{compressor: {kind: sign, error_feedback: true}}"), {8, kDim, &t});
          }).find("compressor.error_feedback: expected no error_feedback key") !=
          std::string::npos);
  }

  TEST_CASE("ChocoSgd: asynchronous rounds and time-varying graphs are refused") {
    const Topology t = topology("ring", 8);
    CHECK(testing::config_error_of([&] {
            ChocoSgd a(yaml("{mode: async}"), {8, kDim, &t});
          }).find("mode: expected sync: choco-sgd's s_i") != std::string::npos);
    const OnePeerExponential one_peer(8);
    AlgorithmSetup setup{8, kDim, &t};
    setup.mixing = &one_peer;
    CHECK(testing::config_error_of([&] { ChocoSgd a(yaml("{}"), setup); })
              .find("choco-sgd keeps s_i = sum_j W_ij xhat_j for one fixed W (topology "
                    "one_peer_exponential is time-varying)") != std::string::npos);
  }
}
