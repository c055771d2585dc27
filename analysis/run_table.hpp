// SPDX-License-Identifier: MIT
// One row of figures per trace, and groups of rows summarised as mean and std.
#pragma once

#include "sim/trace/trace_reader.hpp"

#include <string>
#include <utility>
#include <vector>

namespace dtsim::analysis {

// Named figures of one run, in a fixed column order (see run_columns()).
struct RunRow {
  std::string path;
  std::string status;
  std::vector<std::string> group; // values of the --by keys
  std::vector<double> values;     // aligned with run_columns()
};

// Column names of RunRow::values: final/best accuracy of the evaluation model, node
// accuracy, time and updates to `target` accuracy, the stability measures of the accuracy
// curve (algorithms.md section 11), train-loss std, divergence, consensus, bytes,
// staleness, wall time and simulated/wall ratio, simulated time, bytes to `target`, waiting
// per computing time (all nodes) and payload bits per coordinate (gossip methods); from the
// per-epoch table (eval.per_epoch): the last epoch's node-data training loss and test
// accuracy, the mean training loss over the second half of the epochs, the last herding
// bound and its mean over the epochs after the first (whose order is the same D-RR
// permutation for every orderer); and the example orderer's coordination bytes.
const std::vector<std::string>& run_columns();

RunRow summarize_run(const std::string& path, const TraceContents& trace, double target);

struct GroupRow {
  std::vector<std::string> group;
  std::size_t runs = 0;
  std::vector<double> mean; // aligned with run_columns(); NaN values are skipped
  std::vector<double> std;  // population std over the group's runs
  // Runs with a finite value, per column: a time to target averages only the runs that
  // reached it, and a reader must see how many did.
  std::vector<std::size_t> counted;
};

// Rows with equal `group` values, sorted by their values in natural order: key by key,
// numbers by value (4 < 16) and before any text, text by characters.
std::vector<GroupRow> group_rows(const std::vector<RunRow>& rows);

// One table cell: the mean, "± std" when more than one run has a value, and "(k/n)" when
// only k of the group's n runs have one (e.g. reached the target accuracy); "-" for none.
std::string format_cell(double mean, double std, std::size_t counted, std::size_t runs);

// The order group_rows sorts by.
bool natural_less(const std::vector<std::string>& a, const std::vector<std::string>& b);

} // namespace dtsim::analysis
