// SPDX-License-Identifier: MIT
// Parameter-server family: GSGM ablates to ASGD exactly, the white list bounds the count
// spread, SSGD rounds, DC-ASGD's compensation by hand, server service time.
#include "sim/core/params.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/optimizers/delay_compensation.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/params_helper.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>

using namespace dtsim;

namespace {

// Heterogeneous workers (speeds 1..2.5x) on a non-IID split: fast workers dominate ASGD.
std::string ps_scenario(const std::string& algorithm) {
  return R"(
nodes: 6
seed: 2
data:
  dataset: synthetic
  synthetic: {features: 10, classes: 3, train: 900, test: 300}
  partition: {kind: shards, shards_per_node: 1}
  batch_size: 16
model: {kind: softmax}
topology: {kind: complete}
algorithm: )" +
         algorithm + R"(
system:
  compute: {dist: exponential, mean_s: 0.01, speed_factors: [1, 1, 1.5, 1.5, 2.5, 2.5]}
  network: {latency_s: 0.001}
stop: {steps: 40}
eval: {every_s: 0.02}
)";
}

MemoryTraceSink run(const std::string& yaml, RunResult* result = nullptr) {
  RunPlan plan = plan_run_text(yaml, "ps.yaml", {});
  MemoryTraceSink sink;
  const RunResult r = execute_plan(plan, sink, 2);
  if (result)
    *result = r;
  return sink;
}

std::vector<double> column(const MemoryTraceSink& s, const std::string& name) {
  for (const auto& [n, v] : s.summary().node_columns)
    if (n == name)
      return v;
  FAIL("no node column " << name);
  return {};
}

void check_same_trajectory(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  REQUIRE(a.rows().size() == b.rows().size());
  for (std::size_t r = 0; r < a.rows().size(); ++r)
    for (const char* c : {"test_loss", "test_accuracy", "updates", "staleness_mean"}) {
      const double x = a.rows()[r].get(c), y = b.rows()[r].get(c);
      CHECK((x == y || (std::isnan(x) && std::isnan(y))));
    }
  CHECK(a.summary().staleness_histogram == b.summary().staleness_histogram);
}

} // namespace

TEST_SUITE("optimizers") {
  TEST_CASE("Gsgm: with every switch off it is exactly ASGD") {
    const auto asgd = run(ps_scenario("{name: asgd, lr: 0.1}"));
    const auto gsgm = run(ps_scenario(
        "{name: gsgm, lr: 0.1, schedule: false, average: false, global_momentum: false}"));
    check_same_trajectory(asgd, gsgm);
  }

  TEST_CASE("Gsgm: averaging over the serving worker alone is ASGD (window 0, last 1)") {
    // Each update's worker enters the running sum and the previous one leaves it: the
    // incremental mean must then be exactly the worker's own gradient.
    const auto asgd = run(ps_scenario("{name: asgd, lr: 0.1}"));
    for (const char* average : {"window: 0", "average_by: last, last: 1"}) {
      CAPTURE(average);
      const auto gsgm = run(ps_scenario(std::string("{name: gsgm, lr: 0.1, schedule: false, ") +
                                        "global_momentum: false, " + average + "}"));
      check_same_trajectory(asgd, gsgm);
    }
  }

  TEST_CASE("Gsgm: global momentum alone is ASGD with server momentum") {
    const auto asgd = run(ps_scenario("{name: asgd, lr: 0.05, momentum: 0.9}"));
    const auto gsgm =
        run(ps_scenario("{name: gsgm, lr: 0.05, schedule: false, average: false, momentum: 0.9}"));
    check_same_trajectory(asgd, gsgm);
  }

  TEST_CASE("Gsgm: the white list keeps accepted-update counts within the slack") {
    for (const char* slack : {"1", "3"}) {
      CAPTURE(slack);
      const auto s = run(ps_scenario(std::string("{name: gsgm, lr: 0.05, slack: ") + slack + "}"));
      for (const auto& row : s.rows())
        CHECK(row.get("update_count_spread") <= std::stod(slack));
      const auto updates = column(s, "updates");
      const auto [lo, hi] = std::minmax_element(updates.begin(), updates.end());
      CHECK(*hi - *lo <= std::stod(slack));
      // The fast workers were held back at least once.
      CHECK(column(s, "held_updates")[0] > 0);
    }
    // Without the schedule the fast workers run away.
    const auto free = run(ps_scenario("{name: gsgm, lr: 0.05, schedule: false}"));
    const auto updates = column(free, "updates");
    CHECK(updates[0] > 1.5 * updates[5]);
  }

  TEST_CASE("Gsgm: the event log records every update with its worker, hold flag and wait") {
    RunPlan plan = plan_run_text(ps_scenario("{name: gsgm, lr: 0.05, slack: 1}"), "ps.yaml",
                                 {"output.events=full"});
    MemoryTraceSink sink;
    const RunResult r = execute_plan(plan, sink, 2);
    std::int64_t updates = 0, held = 0;
    bool held_waited = true;
    for (const EventRecord& e : sink.events())
      if (e.kind == static_cast<std::int32_t>(EventKind::Update)) {
        ++updates;
        CHECK(e.node >= 0);
        CHECK(e.staleness >= 0);
        if (e.held) {
          ++held;
          held_waited = held_waited && e.wait_ns > 0;
        }
      }
    CHECK(updates == r.updates);
    CHECK(held > 0);
    CHECK(held_waited);
    double held_total = 0;
    for (double h : column(sink, "held_updates"))
      held_total += h;
    CHECK(static_cast<double>(held) == held_total);
  }

  TEST_CASE("Ssgd: every round averages all workers, staleness 0") {
    RunResult r;
    const auto s = run(ps_scenario("{name: ssgd, lr: 0.1}"), &r);
    const auto updates = column(s, "updates");
    CHECK(*std::max_element(updates.begin(), updates.end()) ==
          *std::min_element(updates.begin(), updates.end()));
    CHECK(s.summary().staleness_histogram == std::vector<std::int64_t>{r.updates});
  }

  TEST_CASE("Server service time queues gradients and delays the workers") {
    // 6 workers x 4 ms of service per gradient against ~10-25 ms of compute: the server is
    // saturated, gradients queue, and workers wait longer for their replies. (Staleness
    // does not grow: in this closed loop FIFO service makes it about n-1 for everyone.)
    RunResult fast_r, busy_r;
    const auto fast = run(ps_scenario("{name: asgd, lr: 0.05}"), &fast_r);
    const auto busy =
        run(ps_scenario("{name: asgd, lr: 0.05, server: {update_s: 0.004}}"), &busy_r);
    const auto wait = column(busy, "server_wait_s");
    CHECK(*std::max_element(wait.begin(), wait.end()) > 0.01);
    CHECK(column(fast, "server_wait_s") == std::vector<double>(6, 0.0));
    CHECK(busy_r.sim_time_s > 1.3 * fast_r.sim_time_s);
    const auto idle_fast = column(fast, "idle_s"), idle_busy = column(busy, "idle_s");
    CHECK(idle_busy[0] > idle_fast[0] + 0.01);
  }

  TEST_CASE("DelayCompensation: constant and adaptive terms match a hand computation") {
    Vec w(2), w0 = Vec::Zero(2);
    w << 0.5f, 1.0f;
    SUBCASE("constant") {
      DelayCompensation dc(testing::make_params({{"lambda", "0.5"}}), 1, 2);
      dc.remember(0, w0);
      std::vector<float> g = {1.0f, -2.0f};
      dc.compensate(0, g, w);
      // g + 0.5 * g^2 * (w - 0) = (1 + 0.5*1*0.5, -2 + 0.5*4*1)
      CHECK(g[0] == doctest::Approx(1.25));
      CHECK(g[1] == doctest::Approx(0.0));
    }
    SUBCASE("adaptive") {
      DelayCompensation dc(
          testing::make_params({{"variant", "adaptive"}, {"lambda", "2"}, {"ms_decay", "0.5"}}), 1,
          2);
      dc.remember(0, w0);
      std::vector<float> g = {1.0f, -2.0f};
      dc.compensate(0, g, w);
      // MS = 0.5 * g^2 = (0.5, 2); g + 2/sqrt(MS + 1e-7) * g^2 * w
      CHECK(g[0] == doctest::Approx(1.0 + 2.0 / std::sqrt(0.5 + 1e-7) * 1.0 * 0.5));
      CHECK(g[1] == doctest::Approx(-2.0 + 2.0 / std::sqrt(2.0 + 1e-7) * 4.0 * 1.0));
    }
  }

  TEST_CASE("DcAsgd: trains, and lambda 0 is exactly ASGD") {
    const auto asgd = run(ps_scenario("{name: asgd, lr: 0.1}"));
    const auto dc0 = run(ps_scenario("{name: dc-asgd, lr: 0.1, lambda: 0}"));
    check_same_trajectory(asgd, dc0);
    RunResult r;
    run(ps_scenario("{name: dc-asgd, lr: 0.1, lambda: 0.04}"), &r);
    CHECK(r.status == RunStatus::Completed);
    CHECK(r.final_test_accuracy > 0.6);
  }
}
