// SPDX-License-Identifier: MIT
// One sweep point from scenario to trace, and the sweep index.
#include "apps/sweep_runner.hpp"

#include "apps/csv_field.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"
#include "sim/trace/trace_reader.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tbb/info.h>

namespace dtsim::cli {

std::string point_digest(const SweepPlan& plan, const SweepPoint& point) {
  // The base file with the overrides applied, as YAML before defaults: comments and
  // formatting do not count, settings do.
  std::shared_ptr<ParamNode> tree = parse_yaml_file(plan.base_scenario);
  for (const std::string& o : point.overrides)
    apply_override(*tree, o);
  const std::string text = to_yaml(*tree);
  std::uint64_t h = 14695981039346656037ULL; // FNV-1a, 64 bits: stable across builds
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

RunPlan plan_point(const SweepPlan& plan, const SweepPoint& point, PlanUse use) {
  try {
    return plan_run(plan.base_scenario, point.overrides, use);
  } catch (const ConfigError& e) {
    throw ConfigError(locate_point_error(point, e.what()));
  }
}

Outcome run_sweep_point(const SweepPlan& plan, const SweepPoint& point,
                        std::atomic<bool>* interrupt) {
  Outcome o;
  try {
    RunPlan rp = plan_point(plan, point);
    rp.engine.interrupt = interrupt;
    rp.trace_attributes.emplace_back("sweep_point", point_digest(plan, point));
    Hdf5TraceSink sink(plan.output_dir + "/" + point.name + ".h5",
                       rp.events == "full" ? EventLevel::Full : EventLevel::Summary);
    const RunResult r = execute_plan(rp, sink, tbb::info::default_concurrency());
    o = {to_string(r.status), r.final_test_accuracy, r.wall_seconds};
  } catch (const std::exception& e) {
    o.status = std::string("error: ") + e.what();
  }
  return o;
}

bool finished(const Outcome& o) {
  return o.status == "completed" || o.status == "diverged";
}

Outcome outcome_of_trace(const std::string& trace) {
  Outcome o;
  TraceContents t;
  try {
    t = read_trace_attributes(trace);
  } catch (const ConfigError& e) { // damaged: not finished, so a resume runs it again
    o.status = std::string("unreadable: ") + e.what();
    return o;
  }
  return outcome_of(t);
}

Outcome outcome_of(const TraceContents& t) {
  Outcome o;
  const auto status = t.text_attributes.find("status");
  o.status = status == t.text_attributes.end() ? "?" : status->second;
  const auto acc = t.number_attributes.find("final_test_accuracy");
  o.accuracy = acc == t.number_attributes.end() ? -1 : acc->second;
  const auto wall = t.number_attributes.find("wall_seconds");
  o.wall_s = wall == t.number_attributes.end() ? 0 : wall->second;
  return o;
}

void remove_superseded_checkpoint(const std::string& trace) {
  std::error_code ec;
  std::filesystem::remove(trace + ".partial", ec);
}

std::string format_duration(double s) {
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%.0fh%02.0fm", std::floor(s / 3600), std::fmod(s, 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%.0fm%02.0fs", std::floor(s / 60), std::fmod(s, 60));
  else
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  return buf;
}

void write_index(const std::string& dir, const std::vector<SweepPoint>& points,
                 const std::vector<Outcome>& outcomes) {
  const std::string tmp = dir + "/index.csv.tmp";
  {
    std::ofstream out(tmp);
    out << "point,status,final_test_accuracy,wall_s,trace,tuned,overrides\n";
    for (std::size_t i = 0; i < points.size(); ++i) {
      out << csv_field(points[i].name) << ',' << csv_field(outcomes[i].status, true) << ',';
      if (outcomes[i].accuracy >= 0)
        out << outcomes[i].accuracy;
      std::string overrides;
      for (std::size_t k = 0; k < points[i].overrides.size(); ++k)
        overrides += (k ? " " : "") + points[i].overrides[k];
      out << ',' << outcomes[i].wall_s << ','
          << csv_field(dir + '/' + std::filesystem::path(points[i].name).filename().string() +
                       ".h5")
          << ',' << points[i].tuned << ',' << csv_field(overrides, true) << '\n';
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, dir + "/index.csv", ec);
  if (ec)
    throw std::runtime_error("sweep index " + dir + "/index.csv: cannot write: " + ec.message());
}

} // namespace dtsim::cli
