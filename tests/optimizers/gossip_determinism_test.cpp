// SPDX-License-Identifier: MIT
// New gossip methods end to end: identical traces for 1 and 2 threads; the lr column of
// gossip (synchronous and pairwise) and parameter-server runs.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/tiny_scenarios.hpp"
#include "support/trace_compare.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

MemoryTraceSink run(const std::string& algorithm, int threads,
                    const std::vector<std::string>& sets = {}) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  RunPlan plan = plan_run_text(testing::tiny_scenario(algorithm), "tiny.yaml", sets);
  MemoryTraceSink sink;
  const RunResult r = execute_plan(plan, sink, threads);
  CHECK(r.status == RunStatus::Completed);
  return sink;
}

std::vector<double> metric(const MemoryTraceSink& s, const std::string& name) {
  std::vector<double> out;
  for (const auto& row : s.rows())
    for (const auto& [n, v] : row.columns)
      if (n == name)
        out.push_back(v);
  return out;
}

void check_identical(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  REQUIRE(a.rows().size() > 5);
  testing::check_identical_rows(a.rows(), b.rows());
}

} // namespace

TEST_SUITE("optimizers") {
  TEST_CASE("Gossip methods: identical metrics with 1 and 2 threads") {
    for (const char* alg :
         {"{name: qg-dsgdm-n, lr: 0.1, lr_schedule: {warmup_epochs: 1, warmup_from: 0.02, "
          "decay_at: [0.5]}}",
          "{name: momentum-tracking, lr: 0.1}", "{name: decentlam, lr: 0.1}",
          "{name: qg-dsgdm, lr: 0.1, mode: async}"}) {
      CAPTURE(alg);
      check_identical(run(alg, 1), run(alg, 2));
    }
    // A time-varying schedule.
    const std::vector<std::string> pairs = {"topology={kind: random_pairs}"};
    check_identical(run("{name: gradient-tracking, lr: 0.1}", 1, pairs),
                    run("{name: gradient-tracking, lr: 0.1}", 2, pairs));
  }

  TEST_CASE("Momentum tracking: node 0 the last with its first gradient, or alone") {
    // Node 0 gathers the first gradients' mean; when its own arrives last, that completes
    // the all-reduce before node 0 waits (an internal error before the fix).
    const std::string alg = "{name: momentum-tracking, lr: 0.1}";
    const std::vector<std::string> slow_node0 = {
        "system.compute={dist: constant, mean_s: 0.01, speed_factors: [10, 1, 1, 1, 1, 1]}",
        "nodes=6"};
    check_identical(run(alg, 1, slow_node0), run(alg, 2, slow_node0));
    CHECK(run(alg, 1, {"nodes=1"}).rows().size() > 1);
  }

  TEST_CASE("Gossip methods: /metrics records the current learning rate") {
    // IID split of 1600 examples over 8 nodes: 200 each, 12.5 steps of 16 per epoch. Peak
    // 0.1 * 8 * 16 / 32 = 0.4; decays at 1.5 and 2.25 of the 3 epochs.
    const MemoryTraceSink s =
        run("{name: dsgdm-n, lr: 0.1, lr_schedule: {decay_at: [0.5, 0.75], decay_factor: 0.5, "
            "scale_with_nodes: {base_batch: 32}}}",
            2, {"data.partition={kind: iid}"});
    const std::vector<double> lr = metric(s, "lr");
    REQUIRE(lr.size() > 5);
    CHECK(lr.front() == doctest::Approx(0.4));
    CHECK(lr.back() == doctest::Approx(0.1));
    for (std::size_t k = 1; k < lr.size(); ++k)
      CHECK(lr[k] <= lr[k - 1]);
  }

  TEST_CASE("Asynchronous gossip: each node's rate follows the schedule in its own steps") {
    // 3 epochs, decay x0.1 at 1.5 of each node's own epochs; IID and no stragglers, so nodes
    // step at one pace (a straggler's epochs, and its decay, lag behind). The column is the
    // mean of the rates the nodes used last: lr at first, 0.1 lr once all are past 1.5.
    for (const char* alg : {"{name: ad-psgd", "{name: swarm-sgd, compressor: {kind: none}",
                            "{name: choco-sgd, compressor: {kind: none}"}) {
      CAPTURE(std::string(alg));
      const std::string a = std::string(alg) + ", lr: 0.05, lr_schedule: {decay_at: [0.5]}}";
      const std::vector<std::string> iid = {"data.partition={kind: iid}",
                                            "system.compute={dist: constant, mean_s: 0.01}"};
      const MemoryTraceSink s = run(a, 2, iid);
      const std::vector<double> lr = metric(s, "lr");
      REQUIRE(lr.size() > 5);
      CHECK(lr.front() == doctest::Approx(0.05));
      CHECK(lr.back() == doctest::Approx(0.005));
      for (std::size_t k = 1; k < lr.size(); ++k)
        CHECK(lr[k] <= lr[k - 1]);
      check_identical(s, run(a, 1, iid));
    }
  }

  TEST_CASE("Parameter servers: the server's rate follows the schedule in epochs served") {
    // 3 epochs; the server's position is gradients served * 16 / 1600. Decay x0.1 at 1.5.
    for (const char* name : {"asgd", "ssgd", "gsgm"}) {
      CAPTURE(std::string(name));
      const MemoryTraceSink s =
          run(std::string("{name: ") + name + ", lr: 0.05, lr_schedule: {decay_at: [0.5]}}", 2);
      const std::vector<double> lr = metric(s, "lr");
      REQUIRE(lr.size() > 5);
      CHECK(lr.front() == doctest::Approx(0.05));
      CHECK(lr.back() == doctest::Approx(0.005));
    }
  }
}
