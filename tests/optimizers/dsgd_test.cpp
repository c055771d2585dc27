// SPDX-License-Identifier: MIT
// DSGD: synchronous rounds stay in lock step; stragglers make neighbours wait.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/tiny_scenarios.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>

using namespace dtsim;

namespace {
std::vector<double> node_column(const MemoryTraceSink& s, const std::string& name) {
  for (const auto& [n, v] : s.summary().node_columns)
    if (n == name)
      return v;
  return {};
}
} // namespace

TEST_SUITE("optimizers") {
  TEST_CASE("Dsgd sync: neighbours stay within one round and wait for stragglers") {
    for (const char* order : {"adapt_then_combine", "combine_then_adapt"}) {
      CAPTURE(order);
      RunPlan plan = plan_run_text(
          testing::tiny_scenario(std::string("{name: dsgd, lr: 0.1, order: ") + order + "}"),
          "tiny.yaml", {"stop={sim_time_s: 0.5}"});
      MemoryTraceSink sink;
      const RunResult r = execute_plan(plan, sink, 2);
      CHECK(r.status == RunStatus::Completed);
      const auto updates = node_column(sink, "updates");
      // A neighbourhood barrier: adjacent ring nodes are at most one round apart (nodes
      // further apart may drift by up to their distance).
      for (std::size_t i = 0; i < updates.size(); ++i)
        CHECK(std::abs(updates[i] - updates[(i + 1) % updates.size()]) <= 1);
      CHECK(*std::min_element(updates.begin(), updates.end()) > 5);
      const auto idle = node_column(sink, "idle_s");
      CHECK(*std::max_element(idle.begin(), idle.end()) > 0.05);
      CHECK(sink.summary().staleness_histogram.size() == 1); // sync: staleness always 0
    }
  }

  TEST_CASE("Dsgd async: nodes progress at their own speed") {
    RunPlan plan = plan_run_text(testing::tiny_scenario("{name: dsgd, mode: async, lr: 0.1}"),
                                 "tiny.yaml", {"stop={sim_time_s: 0.5}"});
    MemoryTraceSink sink;
    execute_plan(plan, sink, 2);
    const auto updates = node_column(sink, "updates");
    const auto [lo, hi] = std::minmax_element(updates.begin(), updates.end());
    CHECK(*hi > 2 * *lo); // stragglers (3x slower) fall behind instead of holding others back
    CHECK(node_column(sink, "idle_s") == std::vector<double>(8, 0.0));
  }
}
