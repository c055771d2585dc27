// SPDX-License-Identifier: MIT
// A sweep's tuning step (the `tune:` block): the tuning runs of each group of points, and the
// value each group's evaluation runs then use.
#pragma once

#include "sim/scenario/sweep_plan.hpp"

#include <string>
#include <vector>

namespace dtsim::cli {

// The evaluation points that differ only in their seed, and the runs that tune them.
struct TuningGroup {
  std::string name;
  std::vector<std::size_t> points;     // indices into SweepPlan::points
  std::vector<std::string> candidates; // the tuned key's values, as --set text
  std::vector<SweepPoint> runs;        // candidate-major, then tuning seed; names "tune/..."
};

// Groups in the order their first point appears. Throws ConfigError when a tuning seed is
// also an evaluation seed, or (tune.factors) a group has no numeric value of the key.
std::vector<TuningGroup> tuning_groups(const SweepPlan& plan);

struct TuningChoice {
  bool ready = false;   // every tuning run of the group has a trace
  std::string value;    // the chosen value (ready only)
  double score = 0;     // its criterion, mean over the tuning seeds
  bool at_edge = false; // the first or last of the grid: the best may lie outside it
};

// Reads the group's tuning traces from the sweep folder and picks the candidate with the
// best mean criterion over the tuning seeds; a diverged run or a missing value scores as the
// worst; ties go to the earlier candidate in grid order. Writes <dir>/tuning.csv (every
// candidate's score, the choice marked).
std::vector<TuningChoice> choose_values(const SweepPlan& plan,
                                        const std::vector<TuningGroup>& groups);

} // namespace dtsim::cli
