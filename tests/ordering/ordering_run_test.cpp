// SPDX-License-Identifier: MIT
// Orderers inside whole runs: determinism across thread counts, CD-GraB's traffic and waits,
// the per-epoch table, and the scenario keys' errors.
#include "sim/optimizers/ordering/order_setup.hpp"
#include "sim/optimizers/ordering/random_order.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/config_error.hpp"
#include "support/trace_compare.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

// 4 workers with 400 examples each (IID), batch 10: 40 steps per epoch, 5 pairs per step.
std::string run_scenario(const std::string& algorithm, const std::string& order) {
  return R"(
nodes: 4
seed: 7
data:
  dataset: synthetic
  synthetic: {features: 12, classes: 3, train: 1600, test: 300}
  partition: {kind: iid}
  batch_size: 10
  order: )" +
         order + R"(
model: {kind: softmax}
topology: {kind: ring}
algorithm: )" +
         algorithm + R"(
system:
  compute: {dist: lognormal, mean_s: 0.01, sigma: 0.5}
  network: {latency_s: 0.001, bandwidth_Bps: 1.0e7}
stop: {epochs: 3}
eval: {every_s: 0.1, per_epoch: true, herding_bound: true}
)";
}

struct Outcome {
  RunResult result;
  MemoryTraceSink sink;
};

Outcome run(const std::string& yaml, int threads) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  RunPlan plan = plan_run_text(yaml, "order.yaml", {});
  Outcome o;
  o.result = execute_plan(plan, o.sink, threads);
  return o;
}

std::vector<double> node_column(const MemoryTraceSink& s, const std::string& name) {
  for (const auto& [n, v] : s.summary().node_columns)
    if (n == name)
      return v;
  FAIL("no node column " << name);
  return {};
}

// An order added at run time: the random order, counting the engine's on_gradient_ready
// calls, and saying (acts) whether it takes them.
class CountingOrder final : public ExampleOrder {
public:
  CountingOrder(const OrderSetup& setup, bool acts, std::int64_t& calls)
      : inner_(setup, true), acts_(acts), calls_(calls) {}
  std::string describe() const override { return "counting"; }
  int next_batch(OrderChannel& channel, int node, std::span<std::uint32_t> out) override {
    return inner_.next_batch(channel, node, out);
  }
  void on_gradient_ready(OrderChannel&, int) override { ++calls_; }
  bool acts_on_gradient_ready() const override { return acts_; }
  std::span<const std::uint32_t> epoch_order(int node, std::int64_t epoch) const override {
    return inner_.epoch_order(node, epoch);
  }
  std::size_t state_bytes() const override { return inner_.state_bytes(); }

private:
  RandomOrder inner_;
  bool acts_;
  std::int64_t& calls_;
};

} // namespace

TEST_SUITE("ordering") {
  TEST_CASE("An order's on_gradient_ready: called at every gradient unless it says it does "
            "nothing there") {
    // Static: the registry is the process's and outlives this test.
    static std::int64_t acting = 0, quiet = 0;
    acting = quiet = 0;
    if (!order_registry().find("counting-acting")) {
      order_registry().add("counting-acting", "test", [](const Params&, const OrderSetup& s) {
        return std::make_unique<CountingOrder>(s, true, acting);
      });
      order_registry().add("counting-quiet", "test", [](const Params&, const OrderSetup& s) {
        return std::make_unique<CountingOrder>(s, false, quiet);
      });
    }
    const std::string alg = "{name: dsgd, lr: 0.1}";
    const Outcome a = run(run_scenario(alg, "{kind: counting-acting}"), 1);
    const Outcome q = run(run_scenario(alg, "{kind: counting-quiet}"), 1);
    CHECK(a.result.gradient_steps > 0);
    CHECK(acting == a.result.gradient_steps);
    CHECK(quiet == 0);
    // The same run otherwise.
    testing::check_identical_rows(a.sink.rows(), q.sink.rows());
  }

  TEST_CASE("Ordering runs: identical with 1 and 2 threads (ssgd + cd-grab, dsgd async + grab)") {
    for (const auto& setting : {std::pair<std::string, std::string>{
                                    "{name: ssgd, lr: 0.1, momentum: 0.9}", "{kind: cd-grab}"},
                                {"{name: dsgd, mode: async, lr: 0.1}", "{kind: grab}"},
                                {"{name: asgd, lr: 0.05}", "{kind: pair-balance}"}}) {
      // Named copies, not a structured binding: CAPTURE's lambda cannot capture bindings in
      // clang 14 (the sanitizer build's compiler).
      const std::string& alg = setting.first;
      const std::string& order = setting.second;
      CAPTURE(alg);
      CAPTURE(order);
      const Outcome one = run(run_scenario(alg, order), 1);
      const Outcome two = run(run_scenario(alg, order), 2);
      CHECK(one.result.status == RunStatus::Completed);
      testing::check_identical_rows(one.sink.rows(), two.sink.rows());
      testing::check_identical_rows(one.sink.epoch_rows(), two.sink.epoch_rows());
      CHECK(one.sink.summary().node_columns == two.sink.summary().node_columns);
      // One /epochs row per completed pass over the data.
      REQUIRE(one.sink.epoch_rows().size() == 3);
      CHECK(one.sink.epoch_rows()[2].get("epoch") == 3);
      CHECK(one.sink.epoch_rows()[2].get("herding_bound") > 0);
      CHECK(one.sink.epoch_rows()[2].get("train_loss") <
            one.sink.epoch_rows()[0].get("train_loss"));
    }
  }

  TEST_CASE("CD-GraB run: differences and signs are real traffic, and a slow coordinator "
            "makes workers wait at epoch ends") {
    const Outcome fast = run(run_scenario("{name: ssgd, lr: 0.1, momentum: 0.9}",
                                          "{kind: cd-grab, server_s_per_pair: 0}"),
                             2);
    const Outcome slow = run(run_scenario("{name: ssgd, lr: 0.1, momentum: 0.9}",
                                          "{kind: cd-grab, server_s_per_pair: 0.002}"),
                             2);
    // d = 3 x 13 = 39: every step, 5 pair differences of 4 d bytes plus a 64-byte header.
    const std::vector<double> diff_bytes(4, 120.0 * (64 + 5 * 39 * 4));
    CHECK(node_column(fast.sink, "order_bytes_sent") == diff_bytes);
    CHECK(node_column(slow.sink, "order_bytes_sent") == diff_bytes);
    double waited = 0;
    for (double w : node_column(slow.sink, "order_wait_s"))
      waited += w;
    // 40 steps x 20 pairs x 2 ms = 1.6 s of coordinator time per epoch: at least the last
    // step's 40 ms is waited for at each of the two epoch ends, by every worker.
    CHECK(waited > 2 * 4 * 0.04);
    CHECK(slow.result.sim_time_s > fast.result.sim_time_s);
    // The orders themselves do not depend on timing: the same losses per epoch.
    for (std::size_t e = 0; e < 3; ++e)
      CHECK(slow.sink.epoch_rows()[e].get("train_loss") ==
            fast.sink.epoch_rows()[e].get("train_loss"));
  }

  TEST_CASE("CD-GraB coordinator on its own machine: its traffic leaves the server's link, "
            "the orders stay the same") {
    // Slow links with receiver queueing: at the server's machine the workers' pair
    // differences queue behind (and delay) their gradients; on a machine of its own they
    // do not.
    const auto scenario = [](const std::string& where) {
      std::string yaml =
          run_scenario("{name: ssgd, lr: 0.1, momentum: 0.9}",
                       "{kind: cd-grab, server_s_per_pair: 0, coordinator: " + where + "}");
      yaml.replace(yaml.find("bandwidth_Bps: 1.0e7}"), 21,
                   "bandwidth_Bps: 2.0e4, receiver_queueing: true}");
      return yaml;
    };
    const Outcome shared = run(scenario("server"), 2);
    const Outcome own = run(scenario("separate"), 2);
    CHECK(own.result.sim_time_s < 0.9 * shared.result.sim_time_s);
    CHECK(node_column(own.sink, "order_bytes_sent") ==
          node_column(shared.sink, "order_bytes_sent"));
    for (std::size_t e = 0; e < 3; ++e)
      CHECK(own.sink.epoch_rows()[e].get("train_loss") ==
            shared.sink.epoch_rows()[e].get("train_loss"));
    CHECK(testing::config_error_of([&] {
            plan_run_text(scenario("elsewhere"), "o.yaml", {});
          }).find("data.order.coordinator: unknown name 'elsewhere'") != std::string::npos);
  }

  TEST_CASE("Ordering keys: one-line errors for bad kinds and per-epoch settings") {
    const std::string alg = "{name: ssgd, lr: 0.1}";
    CHECK(testing::config_error_of([&] {
            plan_run_text(run_scenario(alg, "{kind: grb}"), "o.yaml", {});
          }).find("o.yaml:9: data.order.kind: unknown name 'grb' (did you mean 'grab'?)") == 0);
    CHECK(testing::config_error_of([&] {
            plan_run_text(run_scenario(alg, "{kind: random}"), "o.yaml", {"eval.per_epoch=false"});
          }) == "o.yaml:17: eval.herding_bound: the herding bound is a per-epoch measure: set "
                "eval.per_epoch: true");
    CHECK(testing::config_error_of([&] {
            plan_run_text(run_scenario(alg, "{kind: cd-grab, sever_s_per_pair: 1}"), "o.yaml", {});
          }).find("sever_s_per_pair: unknown key") != std::string::npos);
  }
}
