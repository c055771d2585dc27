// SPDX-License-Identifier: MIT
// `dtsim analyze`: one row per run or per group of runs (mean ± std over seeds).
#include "analysis/run_table.hpp"
#include "analysis/stability.hpp"
#include "apps/arg_cursor.hpp"
#include "apps/commands.hpp"
#include "apps/run_collection.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/yaml_tree.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace dtsim::cli {
namespace {

using analysis::GroupRow;
using analysis::RunRow;

struct AnalyzeArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> by;
  std::vector<std::string> columns = {"final_acc",           "best_acc",       "acc_std_2nd_half",
                                      "acc_mean_abs_change", "acc_worst_drop", "diverged",
                                      "staleness_mean"};
  std::string csv;
  std::vector<std::pair<std::string, std::string>> baseline; // --by key = value
  bool markdown = false;
  bool quiet = false; // with --csv: the file only, no table on stdout
  double target = 0.8;
  double at_time_s = std::numeric_limits<double>::quiet_NaN(); // acc_at_time
};

AnalyzeArgs parse(const std::vector<std::string>& args) {
  AnalyzeArgs a;
  for (ArgCursor c("analyze", args); c.next();) {
    const std::string& arg = c.arg();
    if (arg == "--by") {
      a.by = split_commas(c.value());
    } else if (arg == "--csv") {
      a.csv = c.path_value("a CSV file name");
      if (std::error_code ec; std::filesystem::is_directory(a.csv, ec)) // before the work
        throw ConfigError("--csv: " + a.csv + " is a folder; expected a CSV file name");
    } else if (arg == "--markdown") {
      a.markdown = true;
    } else if (arg == "--quiet" || arg == "-q") {
      a.quiet = true;
    } else if (arg == "--columns") {
      a.columns = split_commas(c.value());
    } else if (arg == "--baseline") {
      for (const std::string& kv : split_commas(c.value())) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos)
          throw ConfigError("--baseline: expected key=value[,key=value], got '" + kv + "'");
        a.baseline.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
    } else if (arg == "--target") {
      a.target = c.number_value(0, 1, "an accuracy in [0, 1]");
    } else if (arg == "--at-time") {
      a.at_time_s = c.number_value(0, std::numeric_limits<double>::max(), "simulated seconds >= 0");
    } else if (c.is_option()) {
      c.unknown_option();
    } else {
      a.inputs.push_back(arg);
    }
  }
  if (a.inputs.empty())
    throw ConfigError("analyze: expected trace files or folders, e.g. dtsim analyze runs/");
  if (a.quiet && a.csv.empty())
    throw ConfigError("analyze: --quiet prints nothing, so it needs --csv OUT.csv");
  const auto& known = analysis::run_columns();
  for (const std::string& c : a.columns)
    if (std::find(known.begin(), known.end(), c) == known.end()) {
      const std::string guess = closest_name(c, known);
      throw ConfigError("--columns: unknown column '" + c + "'" +
                        (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
    }
  for (const auto& [key, v] : a.baseline)
    if (std::find(a.by.begin(), a.by.end(), key) == a.by.end())
      throw ConfigError("--baseline: key '" + key + "' must also be a --by key");
  return a;
}

// The baseline group of `g`: same values on the other --by keys, the baseline's values on
// the baseline keys. nullptr if there is none.
const GroupRow* baseline_of(const GroupRow& g, const std::vector<GroupRow>& groups,
                            const AnalyzeArgs& a) {
  for (const GroupRow& b : groups) {
    bool match = true;
    for (std::size_t k = 0; k < a.by.size() && match; ++k) {
      const auto it = std::find_if(a.baseline.begin(), a.baseline.end(),
                                   [&](const auto& kv) { return kv.first == a.by[k]; });
      match = it == a.baseline.end() ? b.group[k] == g.group[k] : b.group[k] == it->second;
    }
    if (match)
      return &b;
  }
  return nullptr;
}

} // namespace

int analyze_command(const std::vector<std::string>& args) {
  const AnalyzeArgs a = parse(args);
  RunCollection collection = collect_runs(trace_files(a.inputs), a.by, a.target, a.at_time_s);
  const std::vector<RunRow>& rows = collection.rows;
  if (rows.empty())
    throw ConfigError("analyze: no traces (*.h5) found in the given paths");
  if (a.quiet) {
    write_runs_csv(a.csv, a.by, rows, "--csv");
    return 0;
  }
  for (const auto& [key, value] : a.baseline) {
    const auto k =
        static_cast<std::size_t>(std::find(a.by.begin(), a.by.end(), key) - a.by.begin());
    std::vector<std::string> values;
    for (const RunRow& r : rows)
      if (std::find(values.begin(), values.end(), r.group[k]) == values.end())
        values.push_back(r.group[k]);
    if (std::find(values.begin(), values.end(), value) == values.end()) {
      const std::string guess = closest_name(value, values);
      throw ConfigError("--baseline: no run has " + key + " = '" + value + "'" +
                        (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
    }
  }

  const auto& all = analysis::run_columns();
  std::vector<std::size_t> shown;
  for (const std::string& c : a.columns)
    shown.push_back(static_cast<std::size_t>(std::find(all.begin(), all.end(), c) - all.begin()));

  std::vector<std::string> header;
  std::vector<std::vector<std::string>> table;
  std::size_t missing_cells = 0;
  if (!a.by.empty()) {
    header = a.by;
    header.push_back("runs");
    for (std::size_t c : shown) {
      header.push_back(all[c]);
      header.push_back(all[c] + "_ci95");
    }
    if (!a.baseline.empty())
      for (std::size_t c : shown)
        header.push_back("d_" + all[c]);
    // Stability gains (docs/analysis.md) over the baseline group, in %; the same
    // relative reduction for the per-epoch training loss and herding bound (lower is better).
    std::vector<std::size_t> gains;
    for (std::size_t c : shown) {
      if (a.baseline.empty())
        break;
      if (all[c].rfind("acc_", 0) == 0 && all[c] != "acc_mean") {
        gains.push_back(c);
        header.push_back("gain_" + all[c].substr(4) + "_%");
      } else if (all[c].rfind("epoch_train_loss", 0) == 0 ||
                 all[c].rfind("herding_bound", 0) == 0) {
        gains.push_back(c);
        header.push_back("gain_" + all[c] + "_%");
      }
    }
    const std::vector<GroupRow> groups = analysis::group_rows(rows);
    for (const GroupRow& g : groups) {
      std::vector<std::string> cells = g.group;
      cells.push_back(std::to_string(g.runs));
      for (std::size_t c : shown) {
        const std::string why = analysis::missing_reason(g, rows, c);
        if (!why.empty())
          ++missing_cells;
        cells.push_back(analysis::format_cell(g.mean[c], g.std[c], g.counted[c], g.runs, why));
        cells.push_back(std::isfinite(g.ci95[c]) ? "±" + analysis::format_cell(g.ci95[c], 0, 1, 1)
                                                 : "-");
      }
      const GroupRow* b = baseline_of(g, groups, a);
      // Paired per-seed differences against the baseline group: mean ± 95% CI (pairs).
      for (std::size_t c : a.baseline.empty() ? std::vector<std::size_t>{} : shown) {
        std::string cell = "-";
        if (b && b != &g) {
          const analysis::PairedDifference d = analysis::paired_difference(g, *b, rows, c);
          if (d.pairs > 0) {
            char buf[96];
            const bool big = std::fabs(d.mean) >= 1000;
            if (d.pairs > 1)
              std::snprintf(buf, sizeof buf, big ? "%+.0f ± %.0f (%zu)" : "%+.4f ± %.4f (%zu)",
                            d.mean, d.ci95, d.pairs);
            else
              std::snprintf(buf, sizeof buf, big ? "%+.0f (1)" : "%+.4f (1)", d.mean);
            cell = buf;
          }
        }
        cells.push_back(cell);
      }
      for (std::size_t c : gains) {
        char buf[32] = "-";
        if (b) {
          const double gain = analysis::stability_gain(b->mean[c], g.mean[c]);
          if (std::isfinite(gain))
            std::snprintf(buf, sizeof buf, all[c].rfind("acc_", 0) == 0 ? "%+.0f" : "%+.1f", gain);
        }
        cells.push_back(buf);
      }
      table.push_back(std::move(cells));
    }
  } else {
    header = {"trace", "status"};
    for (std::size_t c : shown)
      header.push_back(all[c]);
    for (const RunRow& r : rows) {
      std::vector<std::string> cells = {r.path, r.status};
      for (std::size_t c : shown) {
        if (!r.missing[c].empty())
          ++missing_cells;
        cells.push_back(analysis::format_cell(r.values[c], 0, 1, 1, r.missing[c]));
      }
      table.push_back(std::move(cells));
    }
  }
  print_table(stdout, header, table, a.markdown);
  // The conventions, once, under the table (they travel with a pasted Markdown table).
  if (!a.by.empty()) {
    std::printf("\n%s± = sample std over a group's runs (divisor k - 1); *_ci95 = half-width of "
                "the 95%% confidence interval of the mean (Student t, k - 1 degrees of freedom)",
                a.markdown ? "" : "note: ");
    if (!a.baseline.empty())
      std::printf("; d_* = mean paired difference to the baseline over the seeds both have, "
                  "± its 95%% CI (pairs)");
    std::printf(".\n");
  }
  if (missing_cells > 0)
    std::printf("%s- (<%zu pts): fewer than %zu evaluations in the measure's window (the second "
                "half of the curve, or the whole curve): not measured; evaluate more often "
                "(eval.every_epochs).\n",
                a.markdown ? "\n" : "note: ", analysis::kMinWindowPoints,
                analysis::kMinWindowPoints);

  if (!a.csv.empty())
    write_runs_csv(a.csv, a.by, rows, "--csv");
  return 0;
}

} // namespace dtsim::cli
