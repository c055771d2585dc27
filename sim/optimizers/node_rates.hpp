// SPDX-License-Identifier: MIT
// Per-node step sizes for methods whose nodes step on their own clocks (AD-PSGD, SwarmSGD,
// CHOCO-SGD): node i's k-th local step uses the LrSchedule's rate at i's own epoch position.
#pragma once

#include "sim/optimizers/lr_schedule.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// Keys of the `algorithm:` section: lr, lr_schedule (see LrSchedule). Engine thread only:
// take() a node's rate when its step's inputs are fixed (before start_gradient, or where
// the engine thread applies the update) and hand the float to the step.
class NodeRates {
public:
  NodeRates(const Params& algorithm, const AlgorithmSetup& setup, double default_lr);

  // The rate of node's next local step; counts the step.
  float take(int node);
  // "lr": the mean over nodes of the rate each node used last (its first rate before any
  // step), one /metrics column like the other schedules'.
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const;
  // "" for a constant rate, else the schedule (LrSchedule::describe).
  std::string describe() const { return schedule_.describe(); }

private:
  LrSchedule schedule_;
  std::vector<std::int64_t> steps_;
  std::vector<float> current_;
};

} // namespace dtsim
