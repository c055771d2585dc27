// SPDX-License-Identifier: MIT
// Gossip methods (dsgd and presets, qg-dsgdm, d2, gradient and momentum tracking,
// DecentLaM): consensus with zero gradients, two-step trajectories against hand
// computation, tracking invariants, message sizes and refused modes.
#include "gossip_test_util.hpp"
#include "sim/optimizers/momentum_tracking.hpp"
#include "support/config_error.hpp"
#include "support/scripted_context.hpp"
#include "topologies/one_peer_exponential.hpp"
#include "topologies/random_pairs.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using testing::make_algorithm;
using testing::ScriptedContext;
using testing::setup_for;

namespace {

using testing::Keys;

// Different initial models: node i, coordinate k.
std::vector<Vec> spread_models(int n, std::size_t dim) {
  std::vector<Vec> x(static_cast<std::size_t>(n), Vec(static_cast<Eigen::Index>(dim)));
  for (int i = 0; i < n; ++i)
    for (std::size_t k = 0; k < dim; ++k)
      x[static_cast<std::size_t>(i)](static_cast<Eigen::Index>(k)) =
          static_cast<float>(std::sin(1.7 * i + 0.3 * static_cast<double>(k)) + i);
  return x;
}

void zero_gradient(int, std::span<const float>, std::span<float> g) {
  std::fill(g.begin(), g.end(), 0.0f);
}

// The hand-computed problem: 3 nodes on a star (node 0 the hub; Metropolis weights
// W = [[1/3, 1/3, 1/3], [1/3, 2/3, 0], [1/3, 0, 2/3]]), 2 parameters, and
// g_i(x) = a .* x - b_i with a = (1, 1/2), b_0 = (0, 1), b_1 = (3, -2), b_2 = (-1, 2).
const std::vector<Vec> kStart = {Vec{{1.0f, -1.0f}}, Vec{{2.0f, 0.0f}}, Vec{{-3.0f, 1.0f}}};

void quadratic(int node, std::span<const float> x, std::span<float> g) {
  static const float b[3][2] = {{0.0f, 1.0f}, {3.0f, -2.0f}, {-1.0f, 2.0f}};
  g[0] = x[0] - b[node][0];
  g[1] = 0.5f * x[1] - b[node][1];
}

using Expected = std::vector<std::vector<double>>;

// Runs `steps` steps of a method on the hand-computed problem; node speeds differ so that
// messages arrive in a mixed order.
void check_trajectory(const std::string& name, const Keys& keys, const Expected& expected,
                      int steps = 2) {
  CAPTURE(std::string(name));
  const Topology star = testing::graph("star", 3);
  auto alg = make_algorithm(name, setup_for(star, 2), keys);
  ScriptedContext ctx(star, kStart, quadratic);
  ctx.set_compute_s({1.0, 1.7, 0.6});
  ctx.run_steps(*alg, steps);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 2; ++k) {
      CAPTURE(i);
      CAPTURE(k);
      CHECK(ctx.model(i)[static_cast<std::size_t>(k)] ==
            doctest::Approx(expected[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)])
                .epsilon(1e-5));
    }
}

struct Method {
  const char* name;
  Keys keys;
};

// Every method and variant, with the keys the consensus test uses.
const std::vector<Method>& all_methods() {
  static const std::vector<Method> methods = {
      {"dsgd", {{"lr", "0.1"}}},
      {"dsgd", {{"lr", "0.1"}, {"order", "combine_then_adapt"}, {"momentum", "0.5"}}},
      {"dsgdm", {{"lr", "0.1"}}},
      {"dsgdm-n", {{"lr", "0.1"}}},
      {"qg-dsgdm", {{"lr", "0.1"}}},
      {"qg-dsgdm-n", {{"lr", "0.1"}, {"refresh_period", "3"}}},
      {"d2", {{"lr", "0.1"}}},
      {"gradient-tracking", {{"lr", "0.1"}, {"momentum", "0.9"}, {"nesterov", "true"}}},
      {"momentum-tracking", {{"lr", "0.1"}}},
      {"decentlam", {{"lr", "0.1"}}},
  };
  return methods;
}

} // namespace

TEST_SUITE("optimizers") {
  TEST_CASE("Gossip methods: zero gradients drive different initial models to their average") {
    // 2100 parameters: the blocked loops (2048 per block) run a full and a partial block.
    constexpr std::size_t kDim = 2100;
    for (const char* kind : {"ring", "complete"}) {
      // 5 nodes: an odd ring, whose Metropolis W has no eigenvalue -1/3 (d2's condition).
      const Topology t = testing::graph(kind, 5);
      const std::vector<Vec> start = spread_models(5, kDim);
      Vec average = Vec::Zero(static_cast<Eigen::Index>(kDim));
      for (const Vec& x : start)
        average += x / 5.0f;
      for (const Method& m : all_methods()) {
        CAPTURE(std::string(kind));
        CAPTURE(std::string(m.name));
        auto alg = make_algorithm(m.name, setup_for(t, kDim), m.keys);
        ScriptedContext ctx(t, start, zero_gradient);
        ctx.set_compute_s({1.0, 1.3, 0.7, 1.1, 0.9});
        ctx.run_steps(*alg, 400);
        // Consensus, at the initial average. The average drifts by float rounding only:
        // methods that divide the displacement by lr and multiply it back (qg-dsgdm,
        // decentlam), and d2, whose recursion has a double eigenvalue 1 on the average,
        // accumulate it (2e-3 to 4e-3 here after 400 steps, by build flags, against an initial
        // disagreement of about 4); a method that does not preserve the average is off by O(1).
        Vec mean = Vec::Zero(static_cast<Eigen::Index>(kDim));
        for (int i = 0; i < 5; ++i)
          mean += as_vec(ctx.model(i)) / 5.0f;
        float spread = 0;
        for (int i = 0; i < 5; ++i)
          spread = std::max(spread, (as_vec(ctx.model(i)) - mean).cwiseAbs().maxCoeff());
        CHECK(spread < 1e-5f);
        CHECK((mean - average).cwiseAbs().maxCoeff() < 1e-2f);
      }
    }
  }

  TEST_CASE("Gossip methods: async mode reaches consensus from different initial models") {
    const Topology ring = testing::graph("ring", 5);
    const std::vector<Vec> start = spread_models(5, 50);
    for (const char* name : {"dsgd", "dsgdm-n", "qg-dsgdm-n"}) {
      CAPTURE(std::string(name));
      auto alg = make_algorithm(name, setup_for(ring, 50), {{"lr", "0.1"}, {"mode", "async"}});
      ScriptedContext ctx(ring, start, zero_gradient);
      ctx.set_compute_s({1.0, 1.3, 0.7, 1.1, 0.9});
      ctx.run_steps(*alg, 600);
      float spread = 0;
      for (int i = 1; i < 5; ++i)
        spread =
            std::max(spread, (as_vec(ctx.model(i)) - as_vec(ctx.model(0))).cwiseAbs().maxCoeff());
      CHECK(spread < 1e-3f);
    }
  }

  // Expected values: the formulas of docs/algorithms.md, section 3 evaluated by hand (exact
  // fractions, printed to 9 digits), independently of this code.
  TEST_CASE("Dsgd and presets: two steps on 3 nodes match hand computation") {
    // ATC, plain: x1 = W(x0 - g/2); node 0: g = (1, -3/2), half = (1/2, -1/4), ...
    check_trajectory("dsgd", {{"lr", "0.5"}},
                     {{0.5, 0.291666667}, {1.66666667, -0.833333333}, {-0.666666667, 1.41666667}});
    check_trajectory(
        "dsgd", {{"lr", "0.5"}, {"order", "combine_then_adapt"}, {"weight_decay", "0.1"}},
        {{0.635833333, 0.426666667}, {1.55777778, -1.22222222}, {-0.743611111, 1.64555556}});
    check_trajectory("dsgdm", {{"lr", "0.5"}, {"momentum", "0.5"}},
                     {{0.666666667, 0.375}, {1.75, -1.04166667}, {-0.416666667, 1.79166667}});
    check_trajectory(
        "dsgdm-n", {{"lr", "0.5"}, {"momentum", "0.5"}},
        {{0.708333333, 0.447916667}, {1.90277778, -1.20138889}, {-0.486111111, 2.09722222}});
    check_trajectory("dsgdm-n",
                     {{"lr", "0.5"}, {"momentum", "0.5"}, {"order", "combine_then_adapt"}},
                     {{0.9375, 0.765625}, {1.92361111, -1.90972222}, {-0.736111111, 2.48784722}});
  }

  TEST_CASE("Qg-dsgdm: two steps (and a refresh every 2 steps) match hand computation") {
    check_trajectory("qg-dsgdm", {{"lr", "0.5"}, {"momentum", "0.5"}, {"mu", "0.25"}},
                     {{0.625, 0.354166667}, {1.54166667, -0.875}, {-0.291666667, 1.58333333}});
    check_trajectory("qg-dsgdm-n",
                     {{"lr", "0.5"}, {"momentum", "0.5"}, {"mu", "0.25"}, {"weight_decay", "0.1"}},
                     {{0.68125, 0.434375}, {1.68090278, -1.08493056}, {-0.318402778, 1.95368056}});
    check_trajectory(
        "qg-dsgdm-n", {{"lr", "0.5"}, {"momentum", "0.5"}, {"mu", "0.25"}, {"refresh_period", "2"}},
        {{0.71484375, 0.541992188}, {1.84186921, -1.14717159}, {-0.412181713, 2.23115596}}, 3);
  }

  TEST_CASE("D2: two steps match hand computation") {
    check_trajectory("d2", {{"lr", "0.5"}},
                     {{0.5, 0.291666667}, {1.16666667, -0.527777778}, {-0.166666667, 1.11111111}});
    check_trajectory(
        "d2", {{"lr", "0.5"}, {"weight_decay", "0.1"}},
        {{0.483333333, 0.283333333}, {1.10277778, -0.503333333}, {-0.136111111, 1.07}});
  }

  TEST_CASE("D2: with agreeing nodes it is SGD with the scheduled step, through every change") {
    // Identical models and gradients on the complete graph: mixing is the identity on them,
    // and D2's recursion must reduce to x_{t+1} = x_t - lr_t * g_t. A correction written as
    // lr_t * (g_t - g_{t-1}) (the constant-step form) instead keeps (lr_{t-1} - lr_t) * g_{t-1}
    // in every later step once the rate changes (here at epochs 1 and 2: 0.5, 0.25, 0.125).
    const Topology k3 = testing::graph("complete", 3);
    AlgorithmSetup setup = setup_for(k3, 2);
    setup.batch_size = 1;
    setup.node_samples = {1, 1, 1}; // one step = one epoch of a node
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    root->fields.emplace_back("name", ParamNode::make_scalar("d2", 2));
    root->fields.emplace_back("lr", ParamNode::make_scalar("0.5", 3));
    ParamNode schedule = ParamNode::make_map(4);
    ParamNode epochs;
    epochs.kind = ParamNode::Kind::List;
    epochs.line = 4;
    epochs.items = {ParamNode::make_scalar("1", 4), ParamNode::make_scalar("2", 4)};
    schedule.fields.emplace_back("decay_epochs", epochs);
    schedule.fields.emplace_back("decay_factor", ParamNode::make_scalar("0.5", 4));
    root->fields.emplace_back("lr_schedule", schedule);
    const Params p(root, "test.yaml");
    auto alg = algorithm_registry().make(p, "name", "dsgd", setup);
    auto same_gradient = [](int, std::span<const float> x, std::span<float> g) {
      g[0] = x[0] - 3.0f;
      g[1] = 0.5f * x[1] + 1.0f;
    };
    const Vec start{{1.0f, -1.0f}};
    ScriptedContext ctx(k3, {start, start, start}, same_gradient);
    ctx.run_steps(*alg, 4);
    double x0 = 1.0, x1 = -1.0;
    for (const double lr : {0.5, 0.25, 0.125, 0.125}) {
      const double g0 = x0 - 3.0, g1 = 0.5 * x1 + 1.0;
      x0 -= lr * g0;
      x1 -= lr * g1;
    }
    for (int i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(ctx.model(i)[0] == doctest::Approx(x0).epsilon(1e-5));
      CHECK(ctx.model(i)[1] == doctest::Approx(x1).epsilon(1e-5));
    }
  }

  TEST_CASE("Gradient tracking: two steps match hand computation") {
    check_trajectory(
        "gradient-tracking", {{"lr", "0.5"}},
        {{1.41666667, -0.104166667}, {1.36111111, -0.722222222}, {-1.27777778, 1.70138889}});
    check_trajectory(
        "gradient-tracking",
        {{"lr", "0.5"}, {"momentum", "0.5"}, {"nesterov", "true"}, {"weight_decay", "0.1"}},
        {{2.368125, -0.29}, {1.24111111, -0.847222222}, {-1.59673611, 2.42472222}});
  }

  TEST_CASE("Momentum tracking: two steps match hand computation, including m and d") {
    check_trajectory("momentum-tracking", {{"lr", "0.5"}, {"momentum", "0.5"}},
                     {{1.16666667, 0.125}, {1.94444444, 0.236111111}, {-1.11111111, 0.763888889}});
    check_trajectory(
        "momentum-tracking", {{"lr", "0.5"}, {"momentum", "0.5"}, {"weight_decay", "0.1"}},
        {{1.2025, 0.0766666667}, {1.78277778, 0.277777778}, {-1.03527778, 0.745555556}});
    const Topology star = testing::graph("star", 3);
    auto alg = make_algorithm("momentum-tracking", setup_for(star, 2),
                              {{"lr", "0.5"}, {"momentum", "0.5"}});
    ScriptedContext ctx(star, kStart, quadratic);
    ctx.run_steps(*alg, 2);
    auto& mt = dynamic_cast<MomentumTracking&>(*alg);
    const Expected m = {{1.66666667, -2.25}, {-1.66666667, 4.08333333}, {-2, -3.08333333}};
    const Expected d = {
        {2.33333333, -1.83333333}, {-0.444444444, 4.44444444}, {-1.88888889, -2.61111111}};
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 2; ++k) {
        const auto ui = static_cast<std::size_t>(i);
        const auto uk = static_cast<std::size_t>(k);
        CHECK(mt.momentum(i)(k) == doctest::Approx(m[ui][uk]).epsilon(1e-5));
        CHECK(mt.correction(i)(k) == doctest::Approx(d[ui][uk]).epsilon(1e-5));
      }
  }

  TEST_CASE("DecentLaM: two steps match hand computation") {
    check_trajectory("decentlam", {{"lr", "0.5"}, {"momentum", "0.5"}},
                     {{0.166666667, 0.875}, {1.58333333, -1.20833333}, {0.25, 1.45833333}});
    check_trajectory("decentlam", {{"lr", "0.5"}, {"momentum", "0.5"}, {"weight_decay", "0.1"}},
                     {{0.15, 0.866666667}, {1.45, -1.17}, {0.35, 1.40333333}});
  }

  TEST_CASE("Momentum tracking: the trackers sum to the momenta after every round (sync)") {
    // sum_i c_i = sum_i m_i  <=>  sum_i d_i = 0, on heterogeneous quadratics (b_i differ),
    // on a static ring and on two time-varying schedules.
    constexpr int kNodes = 8;
    constexpr std::size_t kDim = 3;
    auto heterogeneous = [](int node, std::span<const float> x, std::span<float> g) {
      for (std::size_t k = 0; k < g.size(); ++k)
        g[k] = x[k] * (1.0f + 0.1f * static_cast<float>(k)) -
               3.0f * static_cast<float>((node + 1) * (k + 1));
    };
    const Topology ring = testing::graph("ring", kNodes);
    const OnePeerExponential one_peer(kNodes);
    const RandomPairs pairs(kNodes, 5);
    for (const MixingSchedule* schedule :
         std::initializer_list<const MixingSchedule*>{nullptr, &one_peer, &pairs}) {
      CAPTURE((schedule ? schedule->name() : std::string("ring")));
      for (int steps = 1; steps <= 6; ++steps) {
        CAPTURE(steps);
        auto alg = make_algorithm("momentum-tracking", setup_for(ring, kDim, schedule),
                                  {{"lr", "0.05"}, {"weight_decay", "0.01"}});
        ScriptedContext ctx(ring, spread_models(kNodes, kDim), heterogeneous);
        ctx.set_compute_s({1.0, 1.4, 0.6, 1.2, 0.8, 1.1, 0.9, 1.3});
        ctx.run_steps(*alg, steps);
        auto& mt = dynamic_cast<MomentumTracking&>(*alg);
        Vec sum_d = Vec::Zero(kDim), sum_m = Vec::Zero(kDim);
        for (int i = 0; i < kNodes; ++i) {
          sum_d += mt.correction(i);
          sum_m += mt.momentum(i);
        }
        CHECK(sum_m.cwiseAbs().minCoeff() > 1.0f); // the momenta are far from zero
        CHECK(sum_d.cwiseAbs().maxCoeff() < 1e-4f * sum_m.cwiseAbs().maxCoeff());
      }
    }
  }

  TEST_CASE("Tracking methods: one message carries two vectors and is charged for both") {
    constexpr std::size_t kDim = 10;
    const Topology ring = testing::graph("ring", 4);
    for (const char* name : {"gradient-tracking", "momentum-tracking", "dsgd"}) {
      CAPTURE(std::string(name));
      auto alg = make_algorithm(name, setup_for(ring, kDim), {{"lr", "0.1"}});
      ScriptedContext ctx(ring, spread_models(4, kDim), zero_gradient);
      ctx.run_steps(*alg, 3);
      const bool two = std::string(name) != "dsgd";
      // Gossip messages: 3 rounds x 4 nodes x 2 neighbours; momentum tracking adds the
      // all-reduce of g^0 through node 0 (3 gradients in, 3 means out, one vector each).
      const std::int64_t gossip = two ? 2 * 4 * kDim + 64 : 4 * kDim + 64;
      std::size_t gossip_count = 0, init_count = 0;
      for (std::int64_t b : ctx.message_bytes) {
        if (b == gossip)
          ++gossip_count;
        else if (b == 4 * kDim + 64)
          ++init_count;
        else
          FAIL("unexpected message size " << b);
      }
      CHECK(gossip_count == 24);
      CHECK(init_count == (std::string(name) == "momentum-tracking" ? 6u : 0u));
    }
  }

  TEST_CASE("Gossip methods: refused mode and topology combinations name the reason") {
    const Topology ring = testing::graph("ring", 4);
    for (const char* name : {"d2", "gradient-tracking", "momentum-tracking", "decentlam"}) {
      CAPTURE(std::string(name));
      const std::string e = testing::config_error_of([&] {
        make_algorithm(name, setup_for(ring, 3), {{"mode", "async"}});
      });
      CHECK(e.find("test.yaml:3: mode: expected sync: ") == 0);
    }
    const OnePeerExponential one_peer(4);
    CHECK(testing::config_error_of([&] { make_algorithm("d2", setup_for(ring, 3, &one_peer)); }) ==
          "test.yaml:2: name: d2 needs one fixed mixing matrix (topology "
          "one_peer_exponential is time-varying); use a static topology");
    // An even ring's Metropolis W has eigenvalue -1/3: D2's consensus mode would never decay.
    CHECK(testing::config_error_of([&] { make_algorithm("d2", setup_for(ring, 3)); }) ==
          "test.yaml:2: name: d2 needs the smallest eigenvalue of W above -1/3, but this ring of "
          "4 nodes has -0.333333; use a graph whose W keeps every eigenvalue above -1/3, e.g. an "
          "odd ring or the complete graph (dtsim topology KIND --nodes N prints it)");
    CHECK(testing::config_error_of([&] {
            make_algorithm("dsgd", setup_for(ring, 3, &one_peer), {{"mode", "async"}});
          }).find("test.yaml:3: mode: expected sync: async gossip mixes with the freshest copy") ==
          0);
    const RandomPairs pairs(4, 1);
    CHECK(testing::config_error_of([&] {
            make_algorithm("decentlam", setup_for(ring, 3, &pairs));
          }) == "test.yaml:2: name: decentlam's momentum diverges when W changes from round to "
                "round (topology random_pairs is time-varying); use a static topology");
    // dsgdm-n fixes Nesterov: the key is unknown there.
    CHECK(testing::config_error_of([&] {
            make_algorithm("dsgdm-n", setup_for(ring, 3), {{"nesterov", "false"}});
          }).find("test.yaml:3: nesterov: unknown key") == 0);
  }

  TEST_CASE("Gossip methods: time-varying schedules in sync mode average like their W") {
    // Zero gradients on the one-peer exponential graph (8 nodes): dsgd reaches the exact
    // average after log2(8) = 3 rounds; every method preserves the average and converges.
    const Topology base = testing::graph("exponential", 8);
    const OnePeerExponential one_peer(8);
    const std::vector<Vec> start = spread_models(8, 20);
    Vec average = Vec::Zero(20);
    for (const Vec& x : start)
      average += x / 8.0f;
    {
      auto alg = make_algorithm("dsgd", setup_for(base, 20, &one_peer), {{"lr", "0.1"}});
      ScriptedContext ctx(base, start, zero_gradient);
      ctx.set_compute_s({1.0, 1.4, 0.6, 1.2, 0.8, 1.1, 0.9, 1.3});
      ctx.run_steps(*alg, 3);
      for (int i = 0; i < 8; ++i)
        CHECK((as_vec(ctx.model(i)) - average).cwiseAbs().maxCoeff() < 1e-5f);
    }
    const RandomPairs pairs(8, 3);
    for (const MixingSchedule* schedule : {static_cast<const MixingSchedule*>(&one_peer),
                                           static_cast<const MixingSchedule*>(&pairs)})
      for (const Method& m : all_methods()) {
        // d2 and decentlam refuse time-varying schedules (test above).
        if (std::string(m.name) == "d2" || std::string(m.name) == "decentlam")
          continue;
        CAPTURE(schedule->name());
        CAPTURE(std::string(m.name));
        auto alg = make_algorithm(m.name, setup_for(base, 20, schedule), m.keys);
        ScriptedContext ctx(base, start, zero_gradient);
        ctx.set_compute_s({1.0, 1.4, 0.6, 1.2, 0.8, 1.1, 0.9, 1.3});
        ctx.run_steps(*alg, 400);
        for (int i = 0; i < 8; ++i) // float drift of the average: see the static case
          CHECK((as_vec(ctx.model(i)) - average).cwiseAbs().maxCoeff() < 1e-2f);
      }
  }
}
