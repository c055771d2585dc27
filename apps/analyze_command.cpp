// SPDX-License-Identifier: MIT
// `dtsim analyze`: one row per run or per group of runs (mean ± std over seeds).
#include "analysis/run_table.hpp"
#include "analysis/stability.hpp"
#include "apps/commands.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/yaml_tree.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
  double target = 0.8;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

AnalyzeArgs parse(const std::vector<std::string>& args) {
  AnalyzeArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size())
        throw ConfigError(args[i] + ": expected a value after it");
      return args[++i];
    };
    const std::string& arg = args[i];
    if (arg == "--by") {
      a.by = split_commas(value());
    } else if (arg == "--csv") {
      a.csv = value();
    } else if (arg == "--markdown") {
      a.markdown = true;
    } else if (arg == "--columns") {
      a.columns = split_commas(value());
    } else if (arg == "--baseline") {
      for (const std::string& kv : split_commas(value())) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos)
          throw ConfigError("--baseline: expected key=value[,key=value], got '" + kv + "'");
        a.baseline.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
    } else if (arg == "--target") {
      a.target = std::strtod(value().c_str(), nullptr);
    } else if (!arg.empty() && arg[0] == '-') {
      throw ConfigError("analyze: unknown option '" + arg + "'");
    } else {
      a.inputs.push_back(arg);
    }
  }
  if (a.inputs.empty())
    throw ConfigError("analyze: expected trace files or folders, e.g. dtsim analyze runs/");
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

std::vector<std::string> trace_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    if (std::filesystem::is_directory(in)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(in)) {
        const std::string p = e.path().string();
        if (e.is_regular_file() && (p.ends_with(".h5") || p.ends_with(".h5.partial")))
          found.push_back(p);
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

// The value of a dotted scenario key in a trace (or its status / name attribute).
std::string group_value(const TraceContents& t, const std::string& key, const ParamNode& scenario) {
  if (key == "status" || key == "name") {
    const auto it = t.text_attributes.find(key);
    return it == t.text_attributes.end() ? "?" : it->second;
  }
  const ParamNode* n = &scenario;
  std::stringstream path(key);
  for (std::string part; std::getline(path, part, '.');) {
    n = n->kind == ParamNode::Kind::Map ? n->find(part) : nullptr;
    if (!n)
      return "-";
  }
  if (n->kind == ParamNode::Kind::Scalar)
    return n->scalar;
  std::string yaml = to_yaml(*n);
  while (!yaml.empty() && yaml.back() == '\n')
    yaml.pop_back();
  return yaml;
}

void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, bool markdown) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows)
      width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = markdown ? "| " : "";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      s += cells[c] + std::string(width[c] - cells[c].size(), ' ');
      s += markdown ? " | " : "  ";
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    std::printf("%s\n", s.c_str());
  };
  line(header);
  if (markdown) {
    std::vector<std::string> sep;
    for (std::size_t w : width)
      sep.push_back(std::string(std::max<std::size_t>(3, w), '-'));
    line(sep);
  }
  for (const auto& r : rows)
    line(r);
}

} // namespace

int analyze_command(const std::vector<std::string>& args) {
  const AnalyzeArgs a = parse(args);
  std::vector<RunRow> rows;
  for (const std::string& file : trace_files(a.inputs)) {
    TraceContents t;
    try {
      t = read_trace(file);
    } catch (const ConfigError& e) {
      // A run still writing its .partial holds a lock: report it and go on.
      if (!file.ends_with(".partial"))
        throw;
      std::fprintf(stderr, "skipped (still running?): %s\n", e.what());
      continue;
    }
    RunRow r = analysis::summarize_run(file, t, a.target);
    const auto scenario_it = t.text_attributes.find("scenario");
    const auto scenario =
        parse_yaml_text(scenario_it == t.text_attributes.end() ? "{}" : scenario_it->second, file);
    for (const std::string& key : a.by)
      r.group.push_back(group_value(t, key, *scenario));
    rows.push_back(std::move(r));
  }
  if (rows.empty())
    throw ConfigError("analyze: no traces (*.h5) found in the given paths");

  const auto& all = analysis::run_columns();
  std::vector<std::size_t> shown;
  for (const std::string& c : a.columns)
    shown.push_back(static_cast<std::size_t>(std::find(all.begin(), all.end(), c) - all.begin()));

  std::vector<std::string> header;
  std::vector<std::vector<std::string>> table;
  if (!a.by.empty()) {
    header = a.by;
    header.push_back("runs");
    for (std::size_t c : shown)
      header.push_back(all[c]);
    // Stability gains (algorithms.md section 11) over the baseline group, in %; the same
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
      for (std::size_t c : shown)
        cells.push_back(analysis::format_cell(g.mean[c], g.std[c], g.counted[c], g.runs));
      const GroupRow* b = baseline_of(g, groups, a);
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
      for (std::size_t c : shown)
        cells.push_back(analysis::format_cell(r.values[c], 0, 1, 1));
      table.push_back(std::move(cells));
    }
  }
  print_table(header, table, a.markdown);

  if (!a.csv.empty()) {
    std::ofstream out(a.csv);
    if (!out)
      throw ConfigError("--csv: cannot write " + a.csv);
    out << "trace,status";
    for (const std::string& k : a.by)
      out << ',' << k;
    for (const std::string& c : all)
      out << ',' << c;
    out << '\n';
    for (const RunRow& r : rows) {
      out << r.path << ',' << r.status;
      for (const std::string& g : r.group)
        out << ",\"" << g << '"';
      for (double v : r.values)
        out << ',' << format_number(v);
      out << '\n';
    }
  }
  return 0;
}

} // namespace dtsim::cli
