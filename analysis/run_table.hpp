// SPDX-License-Identifier: MIT
// One row of figures per trace, and groups of rows summarised as mean and std.
#pragma once

#include "sim/trace/trace_reader.hpp"

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::analysis {

// Named figures of one run, in a fixed column order (see run_columns()).
struct RunRow {
  std::string path;
  std::string status;
  std::string seed;               // the scenario's seed: pairs runs across groups
  std::vector<std::string> group; // values of the --by keys
  std::vector<double> values;     // aligned with run_columns()
  // Aligned with run_columns(): why a value is missing where it is for a reason other than
  // "not measured" (e.g. "<10 pts": too few evaluations in the measure's window); empty
  // otherwise.
  std::vector<std::string> missing;
};

// A stability measure needs at least this many evaluations in its window (the second half
// of the curve, or the whole curve); with fewer it is missing, not a confident 0.
inline constexpr std::size_t kMinWindowPoints = 10;

// Column names of RunRow::values: final/best accuracy of the evaluation model, node
// accuracy, time and updates to `target` accuracy, the stability measures of the accuracy
// curve (docs/analysis.md), train-loss std, divergence, consensus, bytes,
// staleness, wall time and simulated/wall ratio, simulated time, bytes to `target`, waiting
// per computing time (all nodes) and payload bits per coordinate (gossip methods); from the
// per-epoch table (eval.per_epoch): the last epoch's node-data training loss and test
// accuracy, the mean training loss over the second half of the epochs, the last herding
// bound and its mean over the epochs after the first (whose order is the same D-RR
// permutation for every orderer); the example orderer's coordination bytes; and the test
// accuracy at a given simulated time (acc_at_time: linear between the evaluations around
// it; missing when not asked for or when the run ended before it).
const std::vector<std::string>& run_columns();

RunRow summarize_run(const std::string& path, const TraceContents& trace, double target,
                     double at_time_s = std::numeric_limits<double>::quiet_NaN());

// Statistics over a group's runs follow analysis/statistics.hpp: sample std (k - 1) and the
// Student-t 95% confidence interval of the mean.
struct GroupRow {
  std::vector<std::string> group;
  std::size_t runs = 0;
  std::vector<std::size_t> members; // indices into the rows given to group_rows()
  std::vector<double> mean;         // aligned with run_columns(); NaN values are skipped
  std::vector<double> std;          // sample std over the group's runs (NaN for one run)
  std::vector<double> ci95;         // half-width of the 95% CI of the mean (NaN for one run)
  // Runs with a finite value, per column: a time to target averages only the runs that
  // reached it, and a reader must see how many did.
  std::vector<std::size_t> counted;
};

// Rows with equal `group` values, sorted by their values in natural order: key by key,
// numbers by value (4 < 16) and before any text, text by characters.
std::vector<GroupRow> group_rows(const std::vector<RunRow>& rows);

// One table cell: the mean, "± spread" when more than one run has a value, and "(k/n)" when
// only k of the group's n runs have one (e.g. reached the target accuracy); "-" for none,
// "- (reason)" when the runs give a reason.
std::string format_cell(double mean, double spread, std::size_t counted, std::size_t runs,
                        const std::string& missing_reason = "");

// The reason the group's runs give for a missing column (the first run's), or "".
std::string missing_reason(const GroupRow& g, const std::vector<RunRow>& rows, std::size_t column);

// Paired differences of `column` between group g and its baseline b over the seeds both
// have: mean, sample std and 95% CI of the per-seed differences (analysis/statistics.hpp).
struct PairedDifference {
  double mean;
  double ci95;
  std::size_t pairs;
};
PairedDifference paired_difference(const GroupRow& g, const GroupRow& b,
                                   const std::vector<RunRow>& rows, std::size_t column);

// The order group_rows sorts by.
bool natural_less(const std::vector<std::string>& a, const std::vector<std::string>& b);

} // namespace dtsim::analysis
