// SPDX-License-Identifier: MIT
// `dtsim sweep`: every point of a sweep file as one run, in parallel, resumable, shardable.
#include "apps/commands.hpp"
#include "apps/sweep_runner.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/sweep_plan.hpp"
#include "sim/trace/trace_reader.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
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
};

int parse_int(const std::string& flag, const std::string& v, int lo, int hi) {
  try {
    std::size_t used = 0;
    const int x = std::stoi(v, &used);
    if (used == v.size() && x >= lo && x <= hi)
      return x;
  } catch (...) {
  }
  throw ConfigError(flag + ": expected an integer in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "], got '" + v + "'");
}

SweepArgs parse(const std::vector<std::string>& args) {
  SweepArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size())
        throw ConfigError(arg + ": expected a value after it");
      return args[++i];
    };
    if (arg == "-o" || arg == "--output") {
      a.output = value();
    } else if (arg == "--jobs" || arg == "-j") {
      a.jobs = parse_int("--jobs", value(), 1, 256);
    } else if (arg == "--resume") {
      a.resume = true;
    } else if (arg == "--dry-run") {
      a.dry_run = true;
    } else if (arg == "--shard") {
      const std::string v = value();
      const auto slash = v.find('/');
      if (slash == std::string::npos)
        throw ConfigError("--shard: expected K/N (e.g. 2/8), got '" + v + "'");
      a.shard_n = parse_int("--shard", v.substr(slash + 1), 1, 1000000);
      a.shard_k = parse_int("--shard", v.substr(0, slash), 1, a.shard_n);
    } else if (!arg.empty() && arg[0] == '-') {
      throw ConfigError("sweep: unknown option '" + arg + "'");
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

} // namespace

int sweep_command(const std::vector<std::string>& args) {
  const SweepArgs a = parse(args);
  SweepPlan plan = plan_sweep(a.file);
  if (!a.output.empty())
    plan.output_dir = a.output;
  const std::vector<SweepPoint> points = shard(plan.points, a.shard_k, a.shard_n);
  std::fprintf(stderr, "%s: %zu points (%zu in shard %d/%d), base %s, output %s/\n",
               plan.name.c_str(), plan.points.size(), points.size(), a.shard_k, a.shard_n,
               plan.base_scenario.c_str(), plan.output_dir.c_str());
  if (a.dry_run) {
    for (const SweepPoint& p : points) {
      std::printf("%s", p.name.c_str());
      for (const std::string& o : p.overrides)
        std::printf("  --set '%s'", o.c_str());
      std::printf("\n");
    }
    return 0;
  }
  // Validate every point before running any (a typo fails fast, not after hours).
  for (const SweepPoint& p : points)
    plan_run(plan.base_scenario, p.overrides);
  std::filesystem::create_directories(plan.output_dir);

  std::vector<Outcome> outcomes(points.size());
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string trace = plan.output_dir + "/" + points[i].name + ".h5";
    if (a.resume && std::filesystem::exists(trace)) {
      outcomes[i] = outcome_of_trace(trace);
      continue;
    }
    todo.push_back(i);
  }
  std::fprintf(stderr, "%zu to run, %zu already done\n", todo.size(), points.size() - todo.size());

  std::mutex mutex; // guards outcomes, counters and index.csv
  std::atomic<std::size_t> next{0};
  std::size_t done = 0, failed = 0, running = 0;
  const auto start = std::chrono::steady_clock::now();
  auto run_point = [&](std::size_t i) {
    const SweepPoint& p = points[i];
    const Outcome o = run_sweep_point(plan, p);
    const std::lock_guard lock(mutex);
    outcomes[i] = o;
    --running;
    ++done;
    if (o.status != "completed")
      ++failed;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta =
        elapsed / static_cast<double>(done) * static_cast<double>(todo.size() - done);
    std::fprintf(stderr, "[%zu/%zu done, %zu running, %zu failed, ETA %s] %s: %s acc %.4f\n", done,
                 todo.size(), running, failed, format_duration(eta).c_str(), p.name.c_str(),
                 o.status.c_str(), o.accuracy);
    write_index(plan.output_dir, points, outcomes);
  };
  // `jobs` loops on the one oneTBB pool pull points in order; each run's gradients and
  // evaluations are tasks on the same pool. Results equal running each point alone.
  tbb::task_group group;
  for (int j = 0; j < std::min<int>(a.jobs, static_cast<int>(todo.size())); ++j)
    group.run([&] {
      for (std::size_t k; (k = next.fetch_add(1)) < todo.size();) {
        {
          const std::lock_guard lock(mutex);
          ++running;
        }
        run_point(todo[k]);
      }
    });
  group.wait();
  write_index(plan.output_dir, points, outcomes);
  std::fprintf(stderr, "%s: %zu run, %zu not completed; index %s/index.csv\n", plan.name.c_str(),
               done, failed, plan.output_dir.c_str());
  return failed == 0 ? 0 : 1;
}

} // namespace dtsim::cli
