// SPDX-License-Identifier: MIT
// Models kept as their mixing inputs (Algorithm::keep_model_inputs): tasks on per-thread
// working copies, stored models rebuilt before they are read. Runs with and without them
// must write the same trace, bit for bit, whenever and however often the models are read.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/sink_compare.hpp"
#include "support/tiny_scenarios.hpp"

#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

MemoryTraceSink run(const std::string& algorithm, const std::vector<std::string>& sets,
                    bool working_copies, int threads) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  RunPlan plan = plan_run_text(testing::tiny_scenario(algorithm), "tiny.yaml", sets);
  plan.engine.working_copies = working_copies;
  MemoryTraceSink sink;
  const RunResult r = execute_plan(plan, sink, threads);
  CHECK(r.status == RunStatus::Completed);
  return sink;
}

void check_same_run(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  REQUIRE(a.rows().size() >= 2);
  testing::check_same_run(a, b);
}

} // namespace

TEST_SUITE("engine") {
  TEST_CASE("Working copies: runs write the traces of runs without them") {
    struct Case {
      const char* algorithm;
      std::vector<std::string> sets;
      bool copies; // tasks run on working copies
    };
    // Evaluations about every ten rounds with per-node accuracy (each node's model is
    // rebuilt at every read), only at the start and the end (nearly every task on a copy),
    // per epoch with each node's training loss; the tiny scenario's own, a few rounds apart
    // (too few tasks between reads: no copies). Sync and async gossip, momentum, Nesterov
    // with weight decay, D2, a time-varying schedule; methods that mix otherwise never keep.
    const std::vector<std::string> often = {"stop={epochs: 8}",
                                            "eval={every_s: 0.3, per_node: true}"};
    const std::vector<std::string> rare = {"eval={every_s: 100}"};
    const std::vector<std::string> per_epoch = {"eval={every_s: 100, per_epoch: true}"};
    const std::vector<Case> cases = {
        {"{name: dsgd, lr: 0.1, momentum: 0.9}", often, true},
        {"{name: dsgd, lr: 0.1, momentum: 0.9}", rare, true},
        {"{name: dsgd, lr: 0.1, momentum: 0.9}", {}, false},
        {"{name: dsgdm, lr: 0.1, mode: async}", often, true},
        {"{name: dsgd, lr: 0.1, mode: async}", rare, true},
        {"{name: dsgdm-n, lr: 0.1, weight_decay: 0.001}", per_epoch, true},
        // An MLP, batches of 1, and an orderer that defers launches (CD-GraB).
        {"{name: dsgdm, lr: 0.05}",
         {"model={kind: mlp, hidden: [13, 7]}", "data.batch_size=1", "stop={epochs: 1}", often[1]},
         true},
        {"{name: dsgdm, lr: 0.05}",
         {"model={kind: mlp, hidden: [13, 7]}", "data.order={kind: cd-grab}", per_epoch[0]},
         true},
        {"{name: d2, lr: 0.05}", {"topology.kind=complete", rare[0]}, true},
        {"{name: dsgd, lr: 0.1}", {"topology.kind=one_peer_exponential", often[0], often[1]}, true},
        {"{name: dsgd, lr: 0.1, order: combine_then_adapt}", rare, false},
        {"{name: qg-dsgdm, lr: 0.1}", rare, false}};
    for (const Case& c : cases) {
      CAPTURE(std::string(c.algorithm));
      CAPTURE(c.sets.empty() ? std::string("default eval") : c.sets.back());
      const MemoryTraceSink reference = run(c.algorithm, c.sets, false, 2);
      CHECK(testing::summary_attribute(reference, "tasks_on_working_copy") == 0);
      for (int threads : {1, 2}) {
        const MemoryTraceSink copies = run(c.algorithm, c.sets, true, threads);
        check_same_run(reference, copies);
        const double on_copy = testing::summary_attribute(copies, "tasks_on_working_copy");
        const double steps = testing::summary_attribute(copies, "gradient_steps");
        if (!c.copies) {
          CHECK(on_copy == 0);
          continue;
        }
        CHECK(on_copy > 0);
        // Every read of a model that a task left on a copy rebuilt it: with evaluations every
        // few rounds, many times per node.
        const double rebuilds = testing::summary_attribute(copies, "model_rebuilds");
        CHECK(rebuilds >= 8);
        if (c.sets.back() == often[1])
          CHECK(rebuilds > 3 * 8); // three reads per node, on average
        if (c.sets.back() == rare[0])
          CHECK(on_copy > 0.7 * steps); // all but each node's first few tasks
      }
    }
  }
}
