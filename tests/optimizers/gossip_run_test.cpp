// SPDX-License-Identifier: MIT
// Gossip algorithms through the Simulator: they train, give the same trace with 1 and 2
// threads, CHOCO-SGD with gamma 1 and no compression follows dsgd, and compressed messages
// travel faster under a bandwidth limit.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/config_error.hpp"
#include "support/tiny_scenarios.hpp"
#include "support/trace_compare.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

struct Outcome {
  RunResult result;
  MemoryTraceSink sink;
};

Outcome run(const std::string& algorithm, int threads, std::vector<std::string> sets = {}) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  RunPlan plan = plan_run_text(testing::tiny_scenario(algorithm), "tiny.yaml", sets);
  Outcome o;
  o.result = execute_plan(plan, o.sink, threads);
  return o;
}

double node_total(const MemoryTraceSink& s, const std::string& name) {
  for (const auto& [n, v] : s.summary().node_columns)
    if (n == name) {
      double t = 0;
      for (double x : v)
        t += x;
      return t;
    }
  FAIL("no node column " << name);
  return 0;
}

// Every /metrics value (NaN equal to NaN), the per-node columns and the staleness histogram.
void check_same_trace(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  testing::check_identical_rows(a.rows(), b.rows());
  CHECK(a.summary().node_columns == b.summary().node_columns);
  CHECK(a.summary().staleness_histogram == b.summary().staleness_histogram);
}

} // namespace

TEST_SUITE("gossip") {
  TEST_CASE("Gossip algorithms train, with the same trace for 1 and 2 threads") {
    for (const char* alg : {
             "{name: ad-psgd, lr: 0.1, momentum: 0.5}",
             "{name: ad-psgd, lr: 0.1, split: none}",
             "{name: swarm-sgd, lr: 0.1, compressor: {kind: lattice, bits: 8, side: 0.002}}",
             "{name: swarm-sgd, lr: 0.1, blocking: true, local_steps_dist: geometric}",
             "{name: swarm-sgd, lr: 0.1, compressor: {kind: qsgd, bits: 6, "
             "error_feedback: true}}",
             "{name: choco-sgd, lr: 0.1, compressor: {kind: qsgd, bits: 4}}",
             "{name: choco-sgd, lr: 0.1, gamma: 0.8, order: combine_then_adapt, "
             "compressor: {kind: topk, ratio: 0.2}}",
         }) {
      CAPTURE(alg);
      const Outcome one = run(alg, 1);
      const Outcome two = run(alg, 2);
      CHECK(one.result.status == RunStatus::Completed);
      CHECK(one.result.final_test_accuracy > 0.7);
      check_same_trace(one.sink, two.sink);
      CHECK(one.sink.rows().back().get("bits_per_coordinate") > 0);
      CHECK(std::isfinite(one.sink.rows().back().get("decode_failures")));
    }
  }

  TEST_CASE("ChocoSgd with gamma 1 and compressor none follows dsgd") {
    for (const char* order : {"adapt_then_combine", "combine_then_adapt"}) {
      CAPTURE(order);
      const std::string tail = std::string(", lr: 0.1, momentum: 0.9, order: ") + order + "}";
      const Outcome dsgd = run("{name: dsgd" + tail, 2);
      const Outcome choco = run("{name: choco-sgd, gamma: 1, compressor: {kind: none}" + tail, 2);
      const auto& a = dsgd.sink.rows();
      const auto& b = choco.sink.rows();
      REQUIRE(a.size() == b.size());
      REQUIRE(a.size() > 10);
      for (std::size_t r = 0; r < a.size(); ++r) {
        CAPTURE(r);
        // The same events: same times, updates, steps and bytes on the wire.
        for (const char* c : {"sim_time_s", "updates", "gradient_steps", "bytes_sent"})
          CHECK(a[r].get(c) == b[r].get(c));
        // The same models up to float32 rounding.
        CHECK(b[r].get("test_loss") == doctest::Approx(a[r].get("test_loss")).epsilon(1e-5));
        CHECK(b[r].get("consensus_distance") ==
              doctest::Approx(a[r].get("consensus_distance")).epsilon(1e-3).scale(1e-6));
      }
      CHECK(choco.sink.rows().back().get("bits_per_coordinate") == 32.0);
      CHECK(choco.sink.rows().back().get("quantization_error") == 0.0);
    }
  }

  TEST_CASE("Quantized messages travel faster under a bandwidth limit") {
    // 68 parameters: float32 = 272 + 64 bytes, 4-bit lattice = 34 + 64 bytes, on a 20 kB/s
    // link: 16.8 ms against 4.9 ms per message, compute 10 ms per step.
    const std::vector<std::string> slow = {"system.network.bandwidth_Bps=2.0e4"};
    const Outcome f32 = run("{name: swarm-sgd, lr: 0.1, compressor: {kind: none}}", 2, slow);
    const Outcome q4 = run(
        "{name: swarm-sgd, lr: 0.1, compressor: {kind: lattice, bits: 4, side: 0.01}}", 2, slow);
    CHECK(f32.sink.rows().back().get("bits_per_coordinate") == 32.0);
    CHECK(q4.sink.rows().back().get("bits_per_coordinate") == 4.0);
    const double wait32 = node_total(f32.sink, "idle_s") / node_total(f32.sink, "compute_s");
    const double wait4 = node_total(q4.sink, "idle_s") / node_total(q4.sink, "compute_s");
    CHECK(wait4 < 0.6 * wait32);
    CHECK(q4.result.sim_time_s < f32.result.sim_time_s);
    CHECK(node_total(q4.sink, "bytes_sent") < 0.5 * node_total(f32.sink, "bytes_sent"));
  }

  TEST_CASE("Gossip configuration errors name the key") {
    const std::string s = testing::tiny_scenario("{name: ad-psgd, split: bipartite}");
    CHECK(testing::config_error_of([&] {
            plan_run_text(s, "tiny.yaml", {"nodes=7"});
          }).find("algorithm.split: expected a bipartite topology") != std::string::npos);
    const std::string c = testing::tiny_scenario("{name: choco-sgd, compressor: {kind: lattice}}");
    CHECK(testing::config_error_of([&] {
            plan_run_text(c, "tiny.yaml", {});
          }).find("algorithm.compressor.kind") != std::string::npos);
    const std::string t = testing::tiny_scenario("{name: swarm-sgd, compressor: {kind: topc}}");
    CHECK(testing::config_error_of([&] {
            plan_run_text(t, "tiny.yaml", {});
          }).find("did you mean 'topk'") != std::string::npos);
    const std::string u = testing::tiny_scenario("{name: swarm-sgd, compressor: {bitz: 4}}");
    CHECK(testing::config_error_of([&] { plan_run_text(u, "tiny.yaml", {}); }).find("bitz") !=
          std::string::npos);
  }
}
