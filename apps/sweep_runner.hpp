// SPDX-License-Identifier: MIT
// Running one sweep point, and the sweep's index.csv: shared by `dtsim sweep` and the MPI
// launcher.
#pragma once

#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/sweep_plan.hpp"
#include "sim/trace/trace_reader.hpp"

#include <atomic>
#include <string>
#include <vector>

namespace dtsim::cli {

struct Outcome {
  std::string status = "pending"; // a run status, or "error: ..." when it could not run
  double accuracy = -1;
  double wall_s = 0;
};

// A fingerprint of what defines a point's run: the base scenario's settings with the point's
// overrides applied (its settings, a tuned value, its name), as 16 hex digits (FNV-1a).
// Stored in the trace as `sweep_point`, so that --resume can tell a finished point from a
// changed one by reading one attribute, without planning the run again.
std::string point_digest(const SweepPlan& plan, const SweepPoint& point);

// Runs one point to its trace <output_dir>/<name>.h5 (never throws: errors are outcomes).
// Setting *interrupt (when given) stops the run as SIGINT stops `dtsim run`: its trace is
// closed with status `interrupted`, which --resume reruns.
// plan_run for a sweep point; a configuration error names the sweep file's line that set
// the bad value (locate_point_error), not the --set it became.
RunPlan plan_point(const SweepPlan& plan, const SweepPoint& point, PlanUse use = PlanUse::run);

Outcome run_sweep_point(const SweepPlan& plan, const SweepPoint& point,
                        std::atomic<bool>* interrupt = nullptr);

// Whether a trace's run reached its end (completed or diverged: a result). An interrupted
// or failed run is not done: --resume reruns it.
bool finished(const Outcome& o);

// The outcome recorded in an existing trace (for --resume); status "unreadable: <why>" for a
// damaged file, which is not finished and so is run again.
Outcome outcome_of_trace(const std::string& trace);
// The outcome recorded in a trace's attributes, already read.
Outcome outcome_of(const TraceContents& attributes);

// Removes <trace>.partial beside a finished trace: a run killed after it renamed its work file
// to the trace and before it removed its last checkpoint leaves one.
void remove_superseded_checkpoint(const std::string& trace);

// Rewrites <dir>/index.csv (through a temporary file, so readers never see half of it).
void write_index(const std::string& dir, const std::vector<SweepPoint>& points,
                 const std::vector<Outcome>& outcomes);

std::string format_duration(double seconds);

} // namespace dtsim::cli
