// SPDX-License-Identifier: MIT
// ASGD: staleness counts on a scripted 3-worker timeline.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

TEST_SUITE("optimizers") {
  TEST_CASE("Asgd: three equal workers reach the steady staleness n-1 after the first round") {
    // All three finish their first gradient at the same instant; the server applies them in
    // event order with staleness 0, 1, 2. Replies leave one after another on the server's
    // link, so from then on each gradient finds exactly two newer updates: staleness 2.
    const std::string yaml = R"(
nodes: 3
data: {dataset: synthetic, synthetic: {features: 8, classes: 2, train: 300, test: 100},
       batch_size: 10}
model: {kind: softmax}
topology: {kind: complete}
algorithm: {name: asgd, lr: 0.1}
system: {compute: {dist: constant, mean_s: 0.1}, network: {latency_s: 0.001, bandwidth_Bps: 1.0e6}}
stop: {steps: 6}
eval: {every_s: 10}
)";
    RunPlan plan = plan_run_text(yaml, "asgd3.yaml", {});
    MemoryTraceSink sink;
    const RunResult r = execute_plan(plan, sink, 1);
    const auto& h = sink.summary().staleness_histogram;
    REQUIRE(h.size() == 3);
    CHECK(h[0] == 1);
    CHECK(h[1] == 1);
    CHECK(h[2] == r.updates - 2);
    CHECK(r.updates >= 15);
    // Workers wait for the server's reply: idle time is recorded for each.
    for (const auto& [name, v] : sink.summary().node_columns)
      if (name == "idle_s")
        for (double x : v)
          CHECK(x > 0);
  }
}
