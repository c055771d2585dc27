// SPDX-License-Identifier: MIT
// `dtsim report DIR`: a self-contained Markdown report of a sweep folder, with PNG figures
// drawn by analysis/plot.py.
#include "analysis/run_table.hpp"
#include "apps/arg_cursor.hpp"
#include "apps/commands.hpp"
#include "apps/output_folder.hpp"
#include "apps/plot_script.hpp"
#include "apps/run_collection.hpp"
#include "apps/shell_quote.hpp"
#include "sim/core/build_info.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/wait.h>

namespace dtsim::cli {
namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string dir;
  std::string output; // default <dir>/report.md
  std::vector<std::string> by = {"label"};
  std::string vs = "nodes";
  double target = 0.8;
  std::vector<std::string> command;
};

ReportArgs parse(const std::vector<std::string>& args) {
  ReportArgs a;
  a.command = args;
  for (ArgCursor c("report", args); c.next();) {
    const std::string& arg = c.arg();
    if (arg == "-o" || arg == "--output")
      a.output = c.path_value("the report's file name");
    else if (arg == "--by")
      a.by = split_commas(c.value());
    else if (arg == "--vs")
      a.vs = c.value();
    else if (arg == "--target")
      a.target = c.number_value(0, 1, "an accuracy in [0, 1]");
    else if (c.is_option())
      c.unknown_option();
    else if (a.dir.empty())
      a.dir = arg;
    else
      throw ConfigError("report: more than one folder given");
  }
  if (a.dir.empty() || !fs::is_directory(a.dir))
    throw ConfigError("report: expected a sweep folder, e.g. dtsim report runs/nodes");
  if (a.output.empty())
    a.output = (fs::path(a.dir) / "report.md").string();
  if (std::error_code ec; fs::is_directory(a.output, ec))
    throw ConfigError("-o: " + a.output + " is a folder; expected the report's file name (e.g. " +
                      (fs::path(a.output) / "report.md").string() + ")");
  return a;
}

// The interpreter and script that draw the figures.
std::string plot_command() {
  const char* python = std::getenv("DTSIM_PYTHON");
  return shell_quote(python ? python : "/usr/bin/python3") + " " + shell_quote(plot_script());
}

// Runs analysis/plot.py with `args`; throws with its exit status on failure.
void plot(const std::vector<std::string>& args) {
  std::string cmd = plot_command();
  for (const std::string& a : args)
    cmd += ' ' + shell_quote(a); // a char, not "…" + string: GCC 12 -Wrestrict false positive
  cmd += " >/dev/null";
  const int rc = std::system(cmd.c_str());
  if (rc != 0)
    throw std::runtime_error("report: analysis/plot.py failed (exit status " +
                             std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) +
                             ", its message above); command: " + cmd.substr(0, 300) +
                             (cmd.size() > 300 ? " ..." : ""));
}

// key: value lines of sweep-info.yaml (written by dtsim sweep), in order.
std::vector<std::pair<std::string, std::string>> sweep_info(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(fs::path(dir) / "sweep-info.yaml");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(": ");
    if (colon != std::string::npos)
      out.emplace_back(line.substr(0, colon), line.substr(colon + 2));
  }
  return out;
}

std::string cell(const analysis::GroupRow& g, const std::vector<analysis::RunRow>& rows,
                 std::size_t c) {
  return analysis::format_cell(g.mean[c], g.ci95[c], g.counted[c], g.runs,
                               analysis::missing_reason(g, rows, c));
}

// The chosen rows of <dir>/tuning.csv as table rows: group, value, score, note.
std::vector<std::vector<std::string>> tuning_rows(const std::string& dir) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(fs::path(dir) / "tuning.csv");
  std::string line;
  std::getline(in, line); // header
  std::vector<std::vector<std::string>> all;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');)
      f.push_back(x);
    if (f.size() == 7)
      all.push_back(f);
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i][6] != "1")
      continue;
    std::string grid;
    bool first = true, last = true;
    for (std::size_t j = 0; j < all.size(); ++j)
      if (all[j][0] == all[i][0]) {
        grid += (grid.empty() ? "" : ", ") + all[j][2] +
                (all[j][4] != "0" ? " (" + all[j][4] + " div.)" : "");
        first = first && j >= i;
        last = last && j <= i;
      }
    char score[32];
    std::snprintf(score, sizeof score, "%.4f", std::strtod(all[i][5].c_str(), nullptr));
    out.push_back({all[i][0], all[i][1] + " = " + all[i][2], score, grid,
                   first || last ? "edge of the grid" : ""});
  }
  return out;
}

} // namespace

int report_command(const std::vector<std::string>& args) {
  const ReportArgs a = parse(args);
  std::vector<std::string> files;
  for (const std::string& f : trace_files({a.dir}))
    if (fs::path(f).lexically_relative(a.dir).begin()->string() != "tune") // tuning runs
      files.push_back(f);
  std::vector<std::string> by = a.by;
  by.push_back(a.vs);
  if (files.empty())
    throw ConfigError("report: no traces (*.h5) in " + a.dir);
  // The --vs key is looked up with the --by keys: an error names the option the user wrote.
  std::vector<std::string> by_options(a.by.size(), "--by");
  by_options.push_back("--vs");
  RunCollection runs =
      collect_runs(files, by, a.target, std::numeric_limits<double>::quiet_NaN(), by_options);
  if (runs.rows.empty())
    throw ConfigError("report: no traces (*.h5) in " + a.dir);
  // Interrupted, failed or still running (.partial) runs stopped somewhere on their way: their
  // figures are not results to average with finished runs'. Listed apart, left out.
  std::vector<analysis::RunRow> unfinished;
  std::vector<std::string> finished_files;
  for (auto it = runs.rows.begin(); it != runs.rows.end();)
    if (it->status == "completed" || it->status == "diverged") {
      finished_files.push_back(it->path);
      ++it;
    } else {
      unfinished.push_back(std::move(*it));
      it = runs.rows.erase(it);
    }
  if (runs.rows.empty())
    throw ConfigError("report: no finished runs in " + a.dir + " (" +
                      std::to_string(unfinished.size()) +
                      " interrupted, failed or still running; `dtsim sweep --resume` completes "
                      "a sweep)");
  files = finished_files;
  const std::vector<analysis::GroupRow> groups = analysis::group_rows(runs.rows);

  const fs::path out_md(a.output);
  const std::string img_name = out_md.stem().string() + "-img";
  const fs::path img = out_md.parent_path() / img_name;
  make_output_folder(img, "-o");
  const std::string csv = (img / "runs.csv").string();
  write_runs_csv(csv, by, runs.rows, "-o");
  std::string colour;
  for (const std::string& k : a.by)
    colour += (colour.empty() ? "" : ",") + k;
  std::vector<std::string> curve_args = {"--panel",
                                         a.vs,
                                         "--colour",
                                         colour,
                                         "--x",
                                         "epoch",
                                         "--y",
                                         "test_accuracy",
                                         "--legend-below",
                                         "--no-svg",
                                         "-o",
                                         (img / "curves").string()};
  curve_args.insert(curve_args.begin(), files.begin(), files.end());
  // Runs that evaluate no model (timing-only) or all diverged have no accuracy to draw.
  const auto& columns = analysis::run_columns();
  const auto final_acc = static_cast<std::size_t>(
      std::find(columns.begin(), columns.end(), "final_acc") - columns.begin());
  const bool has_accuracy =
      std::any_of(runs.rows.begin(), runs.rows.end(),
                  [&](const analysis::RunRow& r) { return std::isfinite(r.values[final_acc]); });
  if (has_accuracy)
    plot(curve_args);
  const std::vector<std::string> measures = {"final_acc", "node_acc_mean", "acc_std_2nd_half",
                                             "acc_worst_drop"};
  std::string measure_list;
  for (const std::string& m : measures)
    measure_list += (measure_list.empty() ? "" : ",") + m;
  if (has_accuracy)
    plot({csv, "--vs", a.vs, "--colour", colour, "--measure", measure_list, "--no-svg", "-o",
          (img / ("vs-" + a.vs)).string()});

  std::ostringstream md;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  md << "# Sweep report: " << fs::path(a.dir).filename().string() << "\n\n"
     << runs.rows.size() << " finished evaluation runs in `" << a.dir << "`"
     << (unfinished.empty() ? ""
                            : " (and " + std::to_string(unfinished.size()) +
                                  " unfinished, left out: see [Unfinished runs](#unfinished-runs))")
     << ", grouped by " << colour << " and " << a.vs << ". Written by `dtsim report` on " << date
     << ".\n\n";

  md << "## Results\n\nEach cell: mean over the group's runs ± the half-width of its 95% "
        "confidence interval (Student t, k − 1 degrees of freedom; sample std with divisor "
        "k − 1). `(k/n)`: only k of n runs have the value; `- (<10 pts)`: the measure's window "
        "held fewer than 10 evaluations. Diverged runs count in `diverged` and have no "
        "accuracy.\n\n";
  const std::vector<std::string> shown = {
      "final_acc",      "node_acc_mean", "acc_std_2nd_half", "acc_mean_abs_change",
      "acc_worst_drop", "consensus",     "diverged",         "sim_s"};
  const auto& all = analysis::run_columns();
  std::vector<std::string> header = by;
  header.push_back("runs");
  header.insert(header.end(), shown.begin(), shown.end());
  std::vector<std::vector<std::string>> table;
  for (const analysis::GroupRow& g : groups) {
    std::vector<std::string> r = g.group;
    r.push_back(std::to_string(g.runs));
    for (const std::string& c : shown)
      r.push_back(
          cell(g, runs.rows,
               static_cast<std::size_t>(std::find(all.begin(), all.end(), c) - all.begin())));
    table.push_back(std::move(r));
  }
  {
    // print_table writes to a FILE*: render into a temporary file's text.
    std::FILE* tmp = std::tmpfile();
    print_table(tmp, header, table, true);
    std::rewind(tmp);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;)
      md.write(buf, static_cast<std::streamsize>(n));
    std::fclose(tmp);
  }
  md << "\nThe same per run: [`" << img_name << "/runs.csv`](" << img_name << "/runs.csv).\n\n";

  if (has_accuracy)
    md << "## Figures\n\nTest accuracy of the evaluation model against epochs, one panel per "
       << a.vs << " (mean and 95% CI band over runs):\n\n![curves](" << img_name
       << "/curves.png)\n\nFinal accuracy, mean node accuracy and the stability measures "
          "against "
       << a.vs << " (mean and 95% CI):\n\n![measures](" << img_name << "/vs-" << a.vs
       << ".png)\n\n";
  else
    md << "## Figures\n\nNone: no run has a test accuracy (timing-only runs evaluate no model, "
          "or every run diverged).\n\n";

  const auto tuning = tuning_rows(a.dir);
  md << "## Tuning\n\n";
  if (tuning.empty()) {
    md << "No tuning step (no `tuning.csv` in the folder).\n\n";
  } else {
    md << "Each group's value was chosen on the tuning seeds (disjoint from the evaluation "
          "seeds) by the sweep's criterion, mean over the tuning seeds, a diverged run counting "
          "as the worst; the grid shows every value tried (div. = diverged tuning runs).\n\n"
       << "| group | chosen | score | grid | note |\n|---|---|---|---|---|\n";
    for (const auto& r : tuning)
      md << "| " << r[0] << " | " << r[1] << " | " << r[2] << " | " << r[3] << " | " << r[4]
         << " |\n";
    md << "\n";
  }

  if (!unfinished.empty()) {
    md << "## Unfinished runs\n\nInterrupted, failed or still running when the report was "
          "written; left out of the results (`dtsim sweep --resume` runs them again):\n\n";
    for (const analysis::RunRow& r : unfinished)
      md << "- `" << r.path << "`: " << r.status << "\n";
    md << "\n";
  }
  md << "## Diverged runs\n\n";
  if (runs.diverged.empty())
    md << "None.\n\n";
  for (const std::string& d : runs.diverged)
    md << "- `" << d << "`\n";
  if (!runs.diverged.empty())
    md << "\n";
  if (!runs.warnings.empty()) {
    md << "## Warnings recorded by runs\n\n";
    for (const std::string& w : runs.warnings)
      md << "- " << w << "\n";
    md << "\n";
  }

  md << "## Provenance\n\n| | |\n|---|---|\n";
  for (const auto& [k, v] : sweep_info(a.dir))
    md << "| sweep (last invocation) " << k << " | `" << v << "` |\n";
  for (const auto& [build, count] : runs.builds)
    md << "| traces written by | " << build << " (" << count << " runs) |\n";
  const BuildInfo& b = build_info();
  std::string report_cmd = "dtsim report";
  for (const std::string& arg : a.command)
    report_cmd += " " + arg;
  md << "| report command | `" << report_cmd << "` |\n| report build | dtsim " << b.version
     << ", commit " << b.commit << ", " << b.compiler << ", -march=" << b.march << " (" << b.isa
     << ") |\n";
  if (has_accuracy)
    md << "| figures drawn by | `" << plot_command() << "` |\n";
  std::ofstream report(a.output);
  report << md.str();
  if (!report.flush())
    throw ConfigError("-o: cannot write " + a.output + ": " +
                      std::generic_category().message(errno));
  std::fprintf(stderr, "wrote %s and %s/\n", a.output.c_str(), img.string().c_str());
  return 0;
}

} // namespace dtsim::cli
