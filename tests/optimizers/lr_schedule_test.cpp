// SPDX-License-Identifier: MIT
// LrSchedule: warm-up, step decay and scaling with nodes at given epochs; key errors.
#include "sim/optimizers/lr_schedule.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "support/config_error.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

namespace {

// 4 nodes, batch 32, node data sizes 320, 640, 960, 1280 examples, 10-epoch budget.
AlgorithmSetup four_nodes(double budget_epochs = 10) {
  AlgorithmSetup s{4, 10, nullptr};
  s.batch_size = 32;
  s.budget_epochs = budget_epochs;
  s.node_samples = {320, 640, 960, 1280};
  return s;
}

LrSchedule schedule(const std::string& yaml, const AlgorithmSetup& setup = four_nodes()) {
  const Params p(parse_yaml_text(yaml, "lr.yaml"), "lr.yaml");
  LrSchedule s(p, setup, 0.05);
  p.reject_unused();
  return s;
}

} // namespace

TEST_SUITE("optimizers") {
  TEST_CASE("LrSchedule: without lr_schedule the rate is the constant lr") {
    const LrSchedule s = schedule("lr: 0.2\n");
    CHECK(s.constant());
    CHECK(s.at_epoch(0) == 0.2);
    CHECK(s.at_epoch(1e6) == 0.2);
    CHECK(s.for_step(3, 1000) == 0.2f);
    CHECK(s.describe().empty());
    CHECK(schedule("{}").at_epoch(3) == 0.05);
  }

  TEST_CASE("LrSchedule: linear warm-up, then decay at fractions of the budget") {
    // peak 0.4; warm-up from 0.1 over 2 epochs; x0.1 at 50% and 75% of 10 epochs.
    const LrSchedule s = schedule("lr: 0.4\nlr_schedule: {warmup_epochs: 2, warmup_from: 0.1, "
                                  "decay_at: [0.5, 0.75], decay_factor: 0.1}\n");
    CHECK(s.at_epoch(0) == doctest::Approx(0.1));
    CHECK(s.at_epoch(0.5) == doctest::Approx(0.175));
    CHECK(s.at_epoch(1) == doctest::Approx(0.25));
    CHECK(s.at_epoch(2) == doctest::Approx(0.4));
    CHECK(s.at_epoch(4.99) == doctest::Approx(0.4));
    CHECK(s.at_epoch(5) == doctest::Approx(0.04));
    CHECK(s.at_epoch(7.4) == doctest::Approx(0.04));
    CHECK(s.at_epoch(7.5) == doctest::Approx(0.004));
    CHECK(s.at_epoch(10) == doctest::Approx(0.004));
  }

  TEST_CASE("LrSchedule: a node's epoch is its steps * batch / its data size") {
    const LrSchedule s = schedule("lr: 0.4\nlr_schedule: {decay_epochs: [1, 2], "
                                  "decay_factor: 0.5}\n");
    CHECK(s.node_epoch(0, 10) == doctest::Approx(1.0));  // 10 * 32 / 320
    CHECK(s.node_epoch(3, 10) == doctest::Approx(0.25)); // 10 * 32 / 1280
    CHECK(s.for_step(0, 9) == 0.4f);
    CHECK(s.for_step(0, 10) == 0.2f);
    CHECK(s.for_step(0, 20) == 0.1f);
    CHECK(s.for_step(3, 39) == 0.4f);
    CHECK(s.for_step(3, 40) == 0.2f);
    CHECK(s.global_epoch(3200) == doctest::Approx(1.0)); // all nodes: 3200 examples
  }

  TEST_CASE("LrSchedule: scaling with nodes as in the QG-DSGDm setup") {
    // lr 0.1 per 64 samples, 4 nodes of batch 32: peak 0.1 * 4 * 32 / 64 = 0.2, warm-up
    // from the unscaled 0.1 over 5 epochs.
    const LrSchedule s = schedule("lr: 0.1\nlr_schedule: {warmup_epochs: 5, warmup_from: 0.1, "
                                  "scale_with_nodes: {base_batch: 64}}\n");
    CHECK(s.peak() == doctest::Approx(0.2));
    CHECK(s.at_epoch(0) == doctest::Approx(0.1));
    CHECK(s.at_epoch(2.5) == doctest::Approx(0.15));
    CHECK(s.at_epoch(5) == doctest::Approx(0.2));
    CHECK(s.describe() == ", lr 0.2 (0.1 x 2), warm-up 5 epochs from 0.1");
    // base_batch defaults to the local batch: lr * nodes.
    CHECK(schedule("lr: 0.1\nlr_schedule: {scale_with_nodes: {}}\n").peak() ==
          doctest::Approx(0.4));
  }

  TEST_CASE("LrSchedule: bad keys are one-line errors") {
    using testing::config_error_of;
    CHECK(config_error_of([] { schedule("lr_schedule: {warmup_epochs: 3}\n"); }) ==
          "lr.yaml:1: lr_schedule.warmup_from: required key is missing (expected a number > 0)");
    CHECK(config_error_of([] { schedule("lr_schedule: {decay_at: [0.75, 0.5]}\n"); }) ==
          "lr.yaml:1: lr_schedule.decay_at: expected strictly increasing values, got 0.75 "
          "before 0.5");
    CHECK(config_error_of([] {
            schedule("lr_schedule: {decay_at: [1.5]}\n");
          }).find("lr.yaml:1: lr_schedule.decay_at: expected a number in (0, 1)") == 0);
    CHECK(config_error_of([] {
            schedule("lr_schedule: {decay_at: [0.5], decay_epochs: [3]}\n");
          }).find("lr.yaml:1: lr_schedule.decay_epochs: give decay milestones either") == 0);
    CHECK(config_error_of([] { schedule("lr_schedule: {decay_at: [0.5]}\n", four_nodes(0)); })
              .find("lr.yaml:1: lr_schedule.decay_at: fractions of the training budget need "
                    "stop.epochs or stop.steps") == 0);
    CHECK(config_error_of([] {
            schedule("lr_schedule: {decay_factor: 0}\n");
          }).find("lr.yaml:1: lr_schedule.decay_factor: expected a number in (0, 1]") == 0);
  }
}
