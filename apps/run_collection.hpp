// SPDX-License-Identifier: MIT
// Traces of a folder as table rows grouped by scenario keys: shared by `dtsim analyze` and
// `dtsim report`.
#pragma once

#include "analysis/run_table.hpp"

#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::cli {

// *.h5 (and *.h5.partial) files under the given files and folders, sorted per folder.
std::vector<std::string> trace_files(const std::vector<std::string>& inputs);

struct RunCollection {
  std::vector<analysis::RunRow> rows; // group = the values of `by`, "-" where a run lacks one
  std::vector<std::string> warnings;  // "<trace>: <the run's warning>", one per line
  std::vector<std::string> diverged;  // "<trace>: <status message>"
  // The builds that wrote the traces ("commit, compiler, -march=..."), with their run counts,
  // in order of first appearance: a folder filled by two builds says so.
  std::vector<std::pair<std::string, std::size_t>> builds;
};

// Reads every trace (skipping .partial files still being written), summarises it and looks
// up the `by` keys (dotted scenario keys, or `name` / `status`). A `by` key that no trace has
// is a ConfigError naming the closest key ("did you mean"): it would pool every run. The error
// names the option the key came from: by_options[k], or --by when not given.
RunCollection collect_runs(const std::vector<std::string>& files,
                           const std::vector<std::string>& by, double target,
                           double at_time_s = std::numeric_limits<double>::quiet_NaN(),
                           const std::vector<std::string>& by_options = {});

// "a,b,,c" -> {"a", "b", "c"}: the comma lists of --by, --columns, --measure.
std::vector<std::string> split_commas(const std::string& s);

// A left-aligned table, padded by display width (UTF-8); `markdown` adds pipes and a rule.
void print_table(std::FILE* out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, bool markdown);

// One row per run: trace, status, the `by` values, every run_columns() value. `option` names
// where the path came from in the error a file that cannot be written gives.
void write_runs_csv(const std::string& path, const std::vector<std::string>& by,
                    const std::vector<analysis::RunRow>& rows, const std::string& option);

} // namespace dtsim::cli
