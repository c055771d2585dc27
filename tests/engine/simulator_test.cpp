// SPDX-License-Identifier: MIT
// Simulator end to end on synthetic data: determinism across thread counts, stop rules,
// divergence and stall detection.
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/tiny_scenarios.hpp"
#include "support/trace_compare.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

struct Outcome {
  RunResult result;
  MemoryTraceSink sink;
};

Outcome run_text(const std::string& yaml, int threads, std::vector<std::string> sets = {}) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  RunPlan plan = plan_run_text(yaml, "tiny.yaml", sets);
  Outcome o;
  o.result = execute_plan(plan, o.sink, threads);
  return o;
}

void check_identical_metrics(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  REQUIRE(a.rows().size() > 5);
  testing::check_identical_rows(a.rows(), b.rows());
}

// Records what Context::common_model says in its start (before and after it writes node
// 0's model) and at each gradient, and runs each node's gradients until the stop rule.
class CommonModelProbe final : public Algorithm {
public:
  explicit CommonModelProbe(bool write_in_start) : write_in_start_(write_in_start) {}
  std::string describe() const override { return "common-model probe"; }
  void start(Context& ctx) override {
    const std::span<const float> common = ctx.common_model();
    at_start = !common.empty();
    for (int i = 0; i < ctx.num_nodes() && at_start; ++i)
      same_as_every_node = same_as_every_node &&
                           std::equal(common.begin(), common.end(), ctx.params_view(i).begin());
    if (write_in_start_)
      ctx.params(0)[0] += 1.0f;
    after_write = !ctx.common_model().empty();
    for (int i = 0; i < ctx.num_nodes(); ++i)
      ctx.start_gradient(i, 0);
    after_gradient_started = !ctx.common_model().empty();
  }
  void on_gradient(Context& ctx, int node, const GradientResult&) override {
    during_run = during_run || !ctx.common_model().empty();
    ctx.start_gradient(node, 0);
  }
  void on_message(Context&, const Message&) override {}
  std::size_t state_bytes() const override { return 0; }
  bool at_start = false, same_as_every_node = true, after_write = false,
       after_gradient_started = true, during_run = false;

private:
  bool write_in_start_;
};

} // namespace

TEST_SUITE("engine") {
  TEST_CASE("Simulator: the common model is the initial model, during the start only") {
    for (const bool write : {false, true}) {
      CAPTURE(write);
      RunPlan plan = plan_run_text(testing::tiny_scenario("{name: dsgd, lr: 0.1}"), "tiny.yaml",
                                   {"stop={steps: 3}"});
      auto probe = std::make_unique<CommonModelProbe>(write);
      const CommonModelProbe& seen = *probe;
      plan.algorithm = std::move(probe);
      MemoryTraceSink sink;
      execute_plan(plan, sink, 2);
      CHECK(seen.at_start);
      CHECK(seen.same_as_every_node);
      CHECK(seen.after_write == !write);        // a model written: the nodes may differ
      CHECK_FALSE(seen.after_gradient_started); // its task may write one
      CHECK_FALSE(seen.during_run);
    }
  }

  TEST_CASE("Simulator: identical metrics with 1 and 2 threads (dsgd async, asgd, dsgd sync)") {
    for (const char* alg :
         {"{name: dsgd, mode: async, lr: 0.1, momentum: 0.9}", "{name: asgd, lr: 0.05}",
          "{name: dsgd, mode: sync, lr: 0.1, order: combine_then_adapt}"}) {
      CAPTURE(alg);
      const Outcome one = run_text(testing::tiny_scenario(alg), 1);
      const Outcome two = run_text(testing::tiny_scenario(alg), 2);
      CHECK(one.result.status == RunStatus::Completed);
      check_identical_metrics(one.sink, two.sink);
      CHECK(one.sink.summary().staleness_histogram == two.sink.summary().staleness_histogram);
    }
  }

  TEST_CASE("Simulator: the same seed twice gives the same run, another seed does not") {
    const std::string s = testing::tiny_scenario("{name: dsgd, mode: async, lr: 0.1}");
    const Outcome a = run_text(s, 2);
    const Outcome b = run_text(s, 2);
    const Outcome c = run_text(s, 2, {"seed=4"});
    check_identical_metrics(a.sink, b.sink);
    CHECK(a.result.final_test_accuracy != doctest::Approx(-1));
    CHECK(a.sink.rows().back().get("test_loss") != c.sink.rows().back().get("test_loss"));
  }

  TEST_CASE("Simulator: stop rules (steps per node, simulated time)") {
    const std::string s = testing::tiny_scenario("{name: dsgd, lr: 0.1}");
    const Outcome steps = run_text(s, 2, {"stop={steps: 5}"});
    CHECK(steps.result.gradient_steps == 5 * 8);
    const Outcome time = run_text(s, 2, {"stop={sim_time_s: 0.2}"});
    CHECK(time.result.sim_time_s == doctest::Approx(0.2));
    CHECK(time.sink.rows().back().get("sim_time_s") == doctest::Approx(0.2));
  }

  TEST_CASE("Simulator: a huge learning rate is detected as divergence") {
    const Outcome o = run_text(testing::tiny_scenario("{name: dsgd, lr: 1.0e6}"), 2);
    CHECK(o.result.status == RunStatus::Diverged);
    CHECK(o.sink.summary().status == RunStatus::Diverged);
    CHECK(o.sink.summary().message.find("loss") != std::string::npos);
  }

  TEST_CASE("Simulator: trains the synthetic problem well above chance") {
    const Outcome o = run_text(testing::tiny_scenario("{name: dsgd, lr: 0.1, momentum: 0.9}"), 2);
    CHECK(o.result.status == RunStatus::Completed);
    CHECK(o.sink.rows().front().get("test_accuracy") < 0.5);
    CHECK(o.result.final_test_accuracy > 0.8);
    CHECK(o.result.epochs >= 3.0);
    // Per-node statistics add up.
    double updates = 0;
    for (const auto& [name, values] : o.sink.summary().node_columns)
      if (name == "updates")
        for (double v : values)
          updates += v;
    CHECK(updates == doctest::Approx(static_cast<double>(o.result.updates)));
  }
}

TEST_SUITE("engine") {
  TEST_CASE("Simulator: an interrupt stops the run cleanly with status interrupted") {
    RunPlan plan = plan_run_text(testing::tiny_scenario("{name: dsgd, lr: 0.1}"), "tiny.yaml", {});
    std::atomic<bool> flag{false};
    int evaluations_seen = 0;
    plan.engine.interrupt = &flag;
    // Progress is reported at every evaluation: raise the flag at the third one.
    plan.engine.on_progress = [&](const Progress&) {
      if (++evaluations_seen == 3)
        flag = true;
    };
    MemoryTraceSink sink;
    const RunResult r = execute_plan(plan, sink, 2);
    CHECK(r.status == RunStatus::Interrupted);
    CHECK(sink.summary().status == RunStatus::Interrupted);
    CHECK(sink.rows().size() >= 3);
    CHECK(r.epochs < 3.0);
  }
}
