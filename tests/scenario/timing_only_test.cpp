// SPDX-License-Identifier: MIT
// Timing-only runs (model.kind: none): the same simulated timeline as a run with a real model
// of the same size, no model memory, and clear errors for keys that need data or a model.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/config_error.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <string>

using namespace dtsim;

namespace {

// 12 synthetic features x 3 classes: softmax has 12 * 3 + 3 = 39 parameters.
constexpr int kSoftmaxParams = 39;

std::string scenario(const std::string& model, const std::string& data,
                     const std::string& algorithm) {
  return R"(
nodes: 9
seed: 11
data: )" +
         data +
         R"(
model: )" +
         model +
         R"(
topology: {kind: ring}
algorithm: )" +
         algorithm +
         R"(
system:
  compute: {dist: lognormal, mean_s: 0.01, sigma: 0.5, stragglers: {fraction: 0.2, slowdown: 3}}
  network: {latency_s: 0.002, bandwidth_Bps: 2.0e4, jitter_s: 0.001}
stop: {sim_time_s: 1.5}
eval: {every_s: 0.1}
)";
}

const std::string kRealData =
    "{dataset: synthetic, synthetic: {features: 12, classes: 3, train: 900, test: 90}, "
    "batch_size: 10}";

MemoryTraceSink run(const std::string& yaml) {
  RunPlan plan = plan_run_text(yaml, "t.yaml", {});
  MemoryTraceSink sink;
  const RunResult r = execute_plan(plan, sink, 1);
  REQUIRE(r.status == RunStatus::Completed);
  return sink;
}

double attribute(const std::vector<std::pair<std::string, double>>& attrs,
                 const std::string& name) {
  for (const auto& [n, v] : attrs)
    if (n == name)
      return v;
  FAIL("no attribute " << name);
  return 0;
}

} // namespace

TEST_SUITE("scenario") {
  TEST_CASE("timing-only: the timeline equals a real model's of the same size") {
    // Compute times, message sizes, queues, partners and staleness do not depend on the
    // gradients' values, so a timing-only run must reproduce every system measure of the run
    // with a real 39-parameter model, event for event. (Compressors that draw random numbers,
    // qsgd and randomk, draw one per coordinate from the algorithm's stream, so partner draws
    // that follow them differ from a real run's: same distribution, another sample.)
    const std::string none = "{kind: none, num_params: " + std::to_string(kSoftmaxParams) + "}";
    for (const std::string alg :
         {"{name: dsgdm-n, lr: 0.05}", "{name: dsgd, mode: async, lr: 0.05}",
          "{name: ad-psgd, lr: 0.05}", "{name: asgd, lr: 0.05}", "{name: gsgm, lr: 0.05}",
          "{name: swarm-sgd, lr: 0.05, local_steps: 2, compressor: {kind: fp16}}",
          "{name: choco-sgd, lr: 0.05, compressor: {kind: topk, ratio: 0.25}}",
          "{name: momentum-tracking, lr: 0.05}", "{name: ssgd, lr: 0.05}"}) {
      CAPTURE(alg);
      const MemoryTraceSink real = run(scenario("{kind: softmax}", kRealData, alg));
      const MemoryTraceSink timing =
          run(scenario(none, "{batch_size: 10, train_samples: 900}", alg));
      for (const char* column : {"updates", "gradient_steps", "compute_s", "idle_s", "bytes_sent",
                                 "bytes_received", "messages_sent"}) {
        CAPTURE(column);
        std::vector<double> a, b;
        for (const auto& [n, v] : real.summary().node_columns)
          if (n == column)
            a = v;
        for (const auto& [n, v] : timing.summary().node_columns)
          if (n == column)
            b = v;
        REQUIRE(a.size() == 9);
        CHECK(a == b);
      }
      CHECK(real.summary().staleness_histogram == timing.summary().staleness_histogram);
      const auto& ra = real.summary().number_attributes;
      const auto& ta = timing.summary().number_attributes;
      CHECK(attribute(ra, "updates") > 50);
      for (const char* name : {"sim_time_s", "updates", "gradient_steps", "bytes_sent", "epochs"})
        CHECK(attribute(ra, name) == attribute(ta, name));
      REQUIRE(real.rows().size() == timing.rows().size());
      // No model: accuracy and loss are NaN, not made up.
      CHECK(std::isnan(timing.rows().back().columns[5].second));
      CHECK(timing.rows().back().columns[5].first == "test_accuracy");
      CHECK(std::isnan(attribute(ta, "final_test_accuracy")));
    }
  }

  TEST_CASE("timing-only: no model memory, and the message size is the declared one") {
    RunPlan plan = plan_run_text(
        scenario("{kind: none, num_params: 2500000}", "{batch_size: 10}", "{name: dsgd, lr: 0.1}"),
        "t.yaml", {"nodes=50000"});
    CHECK(plan.describe_model().find("2500000") != std::string::npos);
    MemoryTraceSink sink;
    plan.engine.stop_sim_time_s = 0.05;
    const RunResult r = execute_plan(plan, sink, 1);
    CHECK(r.status == RunStatus::Completed);
    CHECK(attribute(sink.header().number_attributes, "memory_node_params_bytes") == 0);
    CHECK(attribute(sink.header().number_attributes, "wire_params") == 2500000);
    // Every gossip message of a ring is the dense vector plus a header: 10 MB + header.
    const auto& attrs = sink.summary().number_attributes;
    const double bytes = attribute(attrs, "bytes_sent");
    double messages = 0;
    for (const auto& [n, v] : sink.summary().node_columns)
      if (n == "messages_sent")
        for (double m : v)
          messages += m;
    REQUIRE(messages > 0);
    CHECK(bytes / messages == doctest::Approx(4.0 * 2500000 + 64).epsilon(1e-3));
  }

  TEST_CASE("timing-only: keys that need data or a model are refused by name") {
    const std::string none = "{kind: none, num_params: 1000}";
    const std::string alg = "{name: dsgd}";
    {
      const std::string e = testing::config_error_of(
          [&] { plan_run_text(scenario(none, "{partition: {kind: iid}}", alg), "t.yaml", {}); });
      CHECK_MESSAGE(e.find("t.yaml") != std::string::npos, e);
      CHECK_MESSAGE(e.find("data.partition") != std::string::npos, e);
      CHECK_MESSAGE(e.find("timing-only") != std::string::npos, e);
    }
    {
      const std::string e = testing::config_error_of(
          [&] { plan_run_text(scenario(none, "{dataset: synthetic}", alg), "t.yaml", {}); });
      CHECK_MESSAGE(e.find("data.dataset") != std::string::npos, e);
      CHECK_MESSAGE(e.find("no data") != std::string::npos, e);
    }
    {
      const std::string e = testing::config_error_of([&] {
        plan_run_text(scenario(none, "{batch_size: 10}", alg), "t.yaml", {"eval.per_node=true"});
      });
      CHECK_MESSAGE(e.find("eval.per_node") != std::string::npos, e);
      CHECK_MESSAGE(e.find("no model") != std::string::npos, e);
    }
    {
      const std::string e = testing::config_error_of(
          [&] { plan_run_text(scenario("{kind: none, num_params: 0}", "{}", alg), "t.yaml", {}); });
      CHECK_MESSAGE(e.find("model.num_params") != std::string::npos, e);
    }
    {
      const std::string e = testing::config_error_of(
          [&] { plan_run_text(scenario("{kind: none, hidden: [10]}", "{}", alg), "t.yaml", {}); });
      CHECK_MESSAGE(e.find("model.hidden") != std::string::npos, e);
    }
  }
}
