// SPDX-License-Identifier: MIT
// Tuning groups, their runs, and the choice of each group's value.
#include "apps/sweep_tuning.hpp"

#include "analysis/run_table.hpp"
#include "apps/output_folder.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "sim/trace/trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace dtsim::cli {
namespace {

bool is_seed(const std::string& o) {
  return o.rfind("seed=", 0) == 0;
}
bool is_name(const std::string& o) {
  return o.rfind("name=", 0) == 0;
}

// The scalar at a dotted key of the base scenario with `overrides` applied, or "".
std::string resolved_value(const SweepPlan& plan, const std::vector<std::string>& overrides,
                           const std::string& key) {
  auto tree = parse_yaml_file(plan.base_scenario);
  for (const std::string& o : overrides)
    apply_override(*tree, o);
  const ParamNode* n = tree.get();
  std::stringstream path(key);
  for (std::string part; n && std::getline(path, part, '.');)
    n = n->kind == ParamNode::Kind::Map ? n->find(part) : nullptr;
  return n && n->kind == ParamNode::Kind::Scalar ? n->scalar : "";
}

std::set<std::string> evaluation_seeds(const SweepPlan& plan) {
  std::set<std::string> seeds;
  for (const SweepPoint& p : plan.points) {
    const auto it = std::find_if(p.overrides.begin(), p.overrides.end(), is_seed);
    if (it != p.overrides.end()) {
      seeds.insert(it->substr(5));
    } else {
      const std::string base = resolved_value(plan, {}, "seed");
      seeds.insert(base.empty() ? "1" : base);
    }
  }
  return seeds;
}

} // namespace

std::vector<TuningGroup> tuning_groups(const SweepPlan& plan) {
  const TuneSpec& spec = *plan.tune;
  const std::set<std::string> eval_seeds = evaluation_seeds(plan);
  for (std::uint64_t s : spec.seeds)
    if (eval_seeds.count(std::to_string(s)))
      throw ConfigError(spec.where.at("seeds") + ": seed " + std::to_string(s) +
                        " is also an evaluation seed; tuning seeds must be disjoint from the "
                        "points' seeds");
  std::vector<TuningGroup> groups;
  for (std::size_t i = 0; i < plan.points.size(); ++i) {
    const SweepPoint& p = plan.points[i];
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const TuningGroup& x) { return x.name == p.group; });
    if (g != groups.end()) {
      g->points.push_back(i);
      continue;
    }
    TuningGroup group;
    group.name = p.group.empty() ? "all" : p.group;
    group.points.push_back(i);
    std::vector<std::string> common;
    for (const std::string& o : p.overrides)
      if (!is_seed(o) && !is_name(o))
        common.push_back(o);
    std::vector<double> values = spec.values;
    if (!spec.factors.empty()) {
      const std::string own = resolved_value(plan, common, spec.key);
      double base = 0;
      try {
        std::size_t used = 0;
        base = std::stod(own, &used);
        if (used != own.size())
          throw std::invalid_argument(own);
      } catch (const std::exception&) {
        throw ConfigError(spec.where.at("factors") + ": point " + p.name + " has no number at " +
                          spec.key + " (got '" + own +
                          "'); set it in the base scenario or the point, or use tune.values");
      }
      values.clear();
      for (double f : spec.factors)
        values.push_back(base * f);
    }
    for (double v : values) {
      // Six significant digits: 0.1 x 0.1 reads 0.01, not 0.010000000000000002.
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", v);
      const std::string text = buf;
      group.candidates.push_back(text);
      for (std::uint64_t seed : spec.seeds) {
        SweepPoint run;
        run.name = "tune/" + group.name + "_" + plan.tune_label + "=" + name_fragment(text) +
                   "_seed=" + std::to_string(seed);
        run.overrides = common;
        run.origin_of = p.origin_of;
        run.overrides.push_back("seed=" + std::to_string(seed));
        run.overrides.push_back(spec.key + "=" + text);
        run.overrides.push_back("name=" + plan.name + "_" + run.name.substr(5));
        run.group = group.name;
        group.runs.push_back(std::move(run));
      }
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

std::vector<TuningChoice> choose_values(const SweepPlan& plan,
                                        const std::vector<TuningGroup>& groups) {
  const TuneSpec& spec = *plan.tune;
  const auto& columns = analysis::run_columns();
  const auto column = static_cast<std::size_t>(
      std::find(columns.begin(), columns.end(), spec.criterion) - columns.begin());
  const double worst = spec.maximize ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::infinity();
  std::vector<TuningChoice> choices(groups.size());
  std::ostringstream csv;
  csv << "group,key,value,seeds,diverged,score,chosen\n";
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const TuningGroup& group = groups[g];
    const std::size_t per = spec.seeds.size();
    std::vector<double> scores;
    std::vector<int> diverged;
    bool ready = true;
    for (std::size_t c = 0; c < group.candidates.size() && ready; ++c) {
      double sum = 0;
      int bad = 0;
      for (std::size_t k = 0; k < per; ++k) {
        const std::string trace = plan.output_dir + "/" + group.runs[c * per + k].name + ".h5";
        if (!std::filesystem::exists(trace)) {
          ready = false;
          break;
        }
        const analysis::RunRow row =
            analysis::summarize_run(trace, read_trace(trace), /*target=*/1.0);
        const double x = row.values[column];
        if (row.status != "completed" || !std::isfinite(x)) {
          ++bad;
          sum = worst;
        } else if (std::isfinite(sum)) {
          sum += x;
        }
      }
      scores.push_back(std::isfinite(sum) ? sum / static_cast<double>(per) : worst);
      diverged.push_back(bad);
    }
    if (!ready)
      continue;
    std::size_t best = 0;
    for (std::size_t c = 1; c < scores.size(); ++c)
      if (spec.maximize ? scores[c] > scores[best] : scores[c] < scores[best])
        best = c;
    choices[g] = {true, group.candidates[best], scores[best],
                  scores.size() > 1 && (best == 0 || best + 1 == scores.size())};
    for (std::size_t c = 0; c < scores.size(); ++c)
      csv << group.name << ',' << spec.key << ',' << group.candidates[c] << ',' << per << ','
          << diverged[c] << ',' << format_number(scores[c]) << ',' << (c == best ? 1 : 0) << '\n';
  }
  make_output_folder(plan.output_dir, "-o");
  std::ofstream(plan.output_dir + "/tuning.csv") << csv.str();
  return choices;
}

} // namespace dtsim::cli
