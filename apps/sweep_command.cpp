// SPDX-License-Identifier: MIT
// `dtsim sweep`: every point of a sweep file as one run, in parallel, resumable, shardable.
#include "analysis/run_table.hpp"
#include "apps/arg_cursor.hpp"
#include "apps/commands.hpp"
#include "apps/output_folder.hpp"
#include "apps/shell_quote.hpp"
#include "apps/sweep_runner.hpp"
#include "apps/sweep_tuning.hpp"
#include "sim/core/build_info.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/sweep_plan.hpp"
#include "sim/trace/trace_reader.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_group.h>

namespace dtsim::cli {
namespace {

struct SweepArgs {
  std::string file;
  std::string output;
  int jobs = 1;
  bool resume = false;
  bool dry_run = false;
  int shard_k = 1;
  int shard_n = 1;
  std::atomic<bool>* interrupt = nullptr; // set: start no new point, stop the running ones
};

bool interrupted(const SweepArgs& a) {
  return a.interrupt != nullptr && a.interrupt->load();
}

std::atomic<bool> g_interrupted{false};
extern "C" void on_sweep_signal(int) {
  g_interrupted.store(true);
}

SweepArgs parse(const std::vector<std::string>& args) {
  SweepArgs a;
  for (ArgCursor c("sweep", args); c.next();) {
    const std::string& arg = c.arg();
    if (arg == "-o" || arg == "--output") {
      a.output = c.path_value("an output folder");
    } else if (arg == "--jobs" || arg == "-j") {
      a.jobs = static_cast<int>(c.integer_value(1, 256));
    } else if (arg == "--resume") {
      a.resume = true;
    } else if (arg == "--dry-run") {
      a.dry_run = true;
    } else if (arg == "--shard") {
      const std::string v = c.value();
      const auto slash = v.find('/');
      if (slash == std::string::npos)
        throw ConfigError("--shard: expected K/N (e.g. 2/8), got '" + v + "'");
      a.shard_n = static_cast<int>(parse_whole_integer("--shard", v.substr(slash + 1), 1, 1000000));
      a.shard_k =
          static_cast<int>(parse_whole_integer("--shard", v.substr(0, slash), 1, a.shard_n));
    } else if (c.is_option()) {
      c.unknown_option();
    } else if (a.file.empty()) {
      a.file = arg;
    } else {
      throw ConfigError("sweep: more than one sweep file given");
    }
  }
  if (a.file.empty())
    throw ConfigError("sweep: expected a sweep file, e.g. dtsim sweep scenarios/sweeps/nodes.yaml");
  return a;
}

// <dir>/sweep-info.yaml: what produced the folder (for `dtsim report`'s provenance).
void write_sweep_info(const SweepPlan& plan, const SweepArgs& a,
                      const std::vector<std::string>& args) {
  const BuildInfo& b = build_info();
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string command = "dtsim sweep";
  for (const std::string& arg : args)
    command += " " + arg;
  std::ofstream out(plan.output_dir + "/sweep-info.yaml");
  out << "sweep_file: " << a.file << "\ncommand: '" << command << "'\nstarted: " << date
      << "\ndtsim_version: " << b.version << "\nbuild_commit: " << b.commit
      << "\nbuild_compiler: " << b.compiler << "\nbuild_march: " << b.march
      << "\nbuild_isa: " << b.isa << "\nthreads: " << tbb::info::default_concurrency()
      << "\njobs: " << a.jobs << "\n";
}

bool has_trace(const SweepPlan& plan, const SweepPoint& point) {
  return std::filesystem::exists(plan.output_dir + "/" + point.name + ".h5");
}

// Whether the trace with attributes `t` ran exactly this point: a changed sweep file or a new
// tuning choice reruns the point instead of mixing old and new settings. Traces written by a
// sweep carry the point's digest (one attribute to read); older ones are compared by
// resolved scenario.
bool ran_this_point(const SweepPlan& plan, const SweepPoint& point, const TraceContents& t) {
  if (const auto digest = t.text_attributes.find("sweep_point"); digest != t.text_attributes.end())
    return digest->second == point_digest(plan, point);
  const auto scenario = t.text_attributes.find("scenario");
  return scenario != t.text_attributes.end() &&
         scenario->second == plan_point(plan, point, PlanUse::check).resolved_yaml;
}

// Runs `points` (all, or those without a trace under --resume) with `jobs` parallel runs and
// keeps <dir>/<index_name> up to date. Returns the outcomes, aligned with `points`.
std::vector<Outcome> run_points(const SweepPlan& plan, const std::vector<SweepPoint>& points,
                                const SweepArgs& a, const char* phase) {
  std::vector<Outcome> outcomes(points.size());
  std::vector<std::size_t> todo;
  std::size_t stale = 0, unfinished = 0, unreadable = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string trace = plan.output_dir + "/" + points[i].name + ".h5";
    if (a.resume && std::filesystem::exists(trace)) {
      TraceContents attributes;
      try {
        attributes = read_trace_attributes(trace);
      } catch (const ConfigError& e) { // a damaged file: run the point again, over it
        std::fprintf(stderr, "%s\n", e.what());
        plan_point(plan, points[i], PlanUse::check_here); // not validated with the others
        ++unreadable;
        todo.push_back(i);
        continue;
      }
      if (ran_this_point(plan, points[i], attributes)) {
        outcomes[i] = outcome_of(attributes);
        if (finished(outcomes[i])) {
          remove_superseded_checkpoint(trace);
          continue;
        }
        ++unfinished; // interrupted or failed: run it again
      } else {
        // Changed since it ran, and not validated with the others (it had a trace):
        // validate it now, before anything runs.
        plan_point(plan, points[i], PlanUse::check_here);
        ++stale;
      }
    }
    make_output_folder(std::filesystem::path(trace).parent_path(), "-o");
    todo.push_back(i);
  }
  std::fprintf(stderr, "%s: %zu to run, %zu already done", phase, todo.size(),
               points.size() - todo.size());
  if (stale > 0)
    std::fprintf(stderr, " (%zu traces rerun: their settings changed)", stale);
  if (unreadable > 0)
    std::fprintf(stderr, " (%zu unreadable traces rerun)", unreadable);
  if (unfinished > 0)
    std::fprintf(stderr, " (%zu rerun: interrupted or failed)", unfinished);
  std::fprintf(stderr, "\n");
  const std::string index_dir =
      std::string(phase) == "tuning" ? plan.output_dir + "/tune" : plan.output_dir;

  std::mutex mutex; // guards outcomes, counters and the index
  std::atomic<std::size_t> next{0};
  std::size_t done = 0, failed = 0, diverged = 0, running = 0;
  const auto start = std::chrono::steady_clock::now();
  auto run_point = [&](std::size_t i) {
    const SweepPoint& p = points[i];
    const Outcome o = run_sweep_point(plan, p, a.interrupt);
    const std::lock_guard lock(mutex);
    outcomes[i] = o;
    --running;
    ++done;
    diverged += o.status == "diverged";
    failed += o.status != "completed" && o.status != "diverged" && o.status != "interrupted";
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta =
        elapsed / static_cast<double>(done) * static_cast<double>(todo.size() - done);
    char accuracy[32] = ""; // a failed or diverged point has none
    if (o.accuracy >= 0)
      std::snprintf(accuracy, sizeof accuracy, " acc %.4f", o.accuracy);
    std::fprintf(stderr,
                 "[%s %zu/%zu done, %zu running, %zu diverged, %zu failed, ETA %s] %s: %s%s\n",
                 phase, done, todo.size(), running, diverged, failed, format_duration(eta).c_str(),
                 p.name.c_str(), o.status.c_str(), accuracy);
    write_index(index_dir, points, outcomes);
  };
  // `jobs` loops on the one oneTBB pool pull points in order; each run's gradients and
  // evaluations are tasks on the same pool. Results equal running each point alone.
  tbb::task_group group;
  for (int j = 0; j < std::min<int>(a.jobs, static_cast<int>(todo.size())); ++j)
    group.run([&] {
      for (std::size_t k; !interrupted(a) && (k = next.fetch_add(1)) < todo.size();) {
        {
          const std::lock_guard lock(mutex);
          ++running;
        }
        run_point(todo[k]);
      }
    });
  group.wait();
  make_output_folder(index_dir, "-o");
  write_index(index_dir, points, outcomes);
  return outcomes;
}

void print_dry_run(const std::vector<SweepPoint>& points) {
  for (const SweepPoint& p : points) {
    std::printf("%s", p.name.c_str());
    for (const std::string& o : p.overrides)
      std::printf("  --set %s", shell_quote(o).c_str());
    std::printf("\n");
  }
}

// The tuning phase: runs every group's grid on the tuning seeds (this shard's share), then
// fixes the chosen value in each evaluation point. Points of groups whose tuning is not
// complete (other shards still running) are dropped from this invocation.
std::vector<SweepPoint> tune(const SweepPlan& plan, std::vector<SweepPoint> points,
                             const SweepArgs& a) {
  const std::vector<TuningGroup> groups = tuning_groups(plan);
  std::vector<SweepPoint> runs;
  for (const TuningGroup& g : groups)
    runs.insert(runs.end(), g.runs.begin(), g.runs.end());
  runs = shard(runs, a.shard_k, a.shard_n);
  std::fprintf(stderr, "tuning %s: %zu groups x %zu values x %zu seeds (%zu runs in this shard)\n",
               plan.tune->key.c_str(), groups.size(),
               groups.empty() ? 0 : groups[0].candidates.size(), plan.tune->seeds.size(),
               runs.size());
  for (const SweepPoint& r : runs) // fail fast on a bad value (a dry run too)
    if (!a.resume || !has_trace(plan, r))
      plan_point(plan, r, PlanUse::check_here);
  if (a.dry_run) {
    print_dry_run(runs);
    return points;
  }
  run_points(plan, runs, a, "tuning");
  if (interrupted(a))
    return {};
  const std::vector<TuningChoice> choices = choose_values(plan, groups);
  std::vector<SweepPoint> ready;
  for (SweepPoint& p : points) {
    const auto g = static_cast<std::size_t>(
        std::find_if(
            groups.begin(), groups.end(),
            [&](const TuningGroup& x) { return x.name == (p.group.empty() ? "all" : p.group); }) -
        groups.begin());
    if (!choices[g].ready) {
      std::fprintf(stderr,
                   "%s: tuning of its group is incomplete (other shards?); run again "
                   "with --resume once they are done\n",
                   p.name.c_str());
      continue;
    }
    p.tuned = plan.tune->key + "=" + choices[g].value;
    // Before the name override, after the point's own settings: the chosen value wins.
    p.overrides.insert(p.overrides.end() - 1, p.tuned);
    ready.push_back(std::move(p));
  }
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (choices[g].ready)
      std::fprintf(stderr, "tuned %s: %s = %s (%s %.4f)%s\n", groups[g].name.c_str(),
                   plan.tune->key.c_str(), choices[g].value.c_str(), plan.tune->criterion.c_str(),
                   choices[g].score, choices[g].at_edge ? "  [at the edge of the grid]" : "");
  return ready;
}

// Throws ConfigError on a `tune:` block that cannot run: an unknown criterion, a tuning seed
// that is also an evaluation seed, a factor grid on a point without a numeric value.
void check_tune(const SweepPlan& plan) {
  const auto& columns = analysis::run_columns();
  if (std::find(columns.begin(), columns.end(), plan.tune->criterion) == columns.end()) {
    const std::string guess = closest_name(plan.tune->criterion, columns);
    throw ConfigError(plan.tune->where.at("criterion") + ": unknown measure '" +
                      plan.tune->criterion + "'" +
                      (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
  }
  tuning_groups(plan);
}

int report_interrupt(const SweepPlan& plan) {
  std::fprintf(stderr,
               "%s: interrupted; the finished points keep their traces, `--resume` runs the "
               "rest (index %s/index.csv)\n",
               plan.name.c_str(), plan.output_dir.c_str());
  return 130;
}

} // namespace

int sweep_command(const std::vector<std::string>& args) {
  std::signal(SIGINT, on_sweep_signal);
  std::signal(SIGTERM, on_sweep_signal);
  return sweep_command(args, &g_interrupted);
}

int sweep_command(const std::vector<std::string>& args, std::atomic<bool>* interrupt) {
  SweepArgs a = parse(args);
  a.interrupt = interrupt;
  SweepPlan plan = plan_sweep(a.file);
  if (!a.output.empty())
    plan.output_dir = a.output;
  if (plan.tune)
    check_tune(plan);
  std::vector<SweepPoint> points = shard(plan.points, a.shard_k, a.shard_n);
  std::fprintf(stderr, "%s: %zu points (%zu in shard %d/%d), base %s, output %s/\n",
               plan.name.c_str(), plan.points.size(), points.size(), a.shard_k, a.shard_n,
               plan.base_scenario.c_str(), plan.output_dir.c_str());
  // Validate every point before running any (a typo fails fast, not after hours; a dry run
  // checks what the real one would run). Under --resume a point with a trace was valid when
  // it ran; if it changed since, run_points validates it before rerunning it.
  for (const SweepPoint& p : points)
    if (!a.resume || !has_trace(plan, p))
      plan_point(plan, p, PlanUse::check_here);
  if (!a.dry_run) {
    make_output_folder(plan.output_dir, "-o");
    write_sweep_info(plan, a, args);
  }
  if (plan.tune)
    points = tune(plan, std::move(points), a);
  if (interrupted(a))
    return report_interrupt(plan);
  if (a.dry_run) {
    print_dry_run(points);
    return 0;
  }
  const std::vector<Outcome> outcomes = run_points(plan, points, a, "evaluation");
  // A signal that came after the last point had finished interrupted nothing.
  if (interrupted(a) && !std::all_of(outcomes.begin(), outcomes.end(), finished))
    return report_interrupt(plan);
  const auto count = [&](auto pred) {
    return static_cast<std::size_t>(std::count_if(outcomes.begin(), outcomes.end(), pred));
  };
  const std::size_t diverged = count([](const Outcome& o) { return o.status == "diverged"; });
  const std::size_t failed =
      count([](const Outcome& o) { return o.status != "completed" && o.status != "diverged"; });
  std::fprintf(stderr, "%s: %zu points, %zu diverged (a result), %zu failed; index %s/index.csv\n",
               plan.name.c_str(), outcomes.size(), diverged, failed, plan.output_dir.c_str());
  // A diverged run is a result of a stability study; a failure (crash, bad input) is not.
  return failed == 0 ? 0 : 1;
}

} // namespace dtsim::cli
