// SPDX-License-Identifier: MIT
// `dtsim run` and `dtsim validate`: scenario -> plan -> simulation -> HDF5 trace.
#include "apps/arg_cursor.hpp"
#include "apps/commands.hpp"
#include "apps/progress_line.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <unistd.h>

namespace dtsim::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) {
  g_interrupted.store(true);
}

struct RunArgs {
  std::string scenario;
  std::string output;
  std::vector<std::string> overrides;
  int threads = 0;
  bool quiet = false;
};

// A batched run's backend line: its share of the wall time, the mean batch and, on a device,
// the bus traffic per node-step and where the backend's time went (docs/cuda.md).
void print_backend_line(const RunResult& r) {
  const auto steps = static_cast<double>(std::max<std::int64_t>(1, r.gradient_steps));
  const double wall = std::max(r.wall_seconds, 1e-9);
  const double backend = std::max(r.gradient_wall_seconds, 1e-9);
  std::printf("  gradients: %s\n    %.0f%% of the wall time, mean batch %.1f",
              r.gradient_backend.c_str(), 100 * r.gradient_wall_seconds / wall,
              r.gradient_batch_mean);
  const TransferStats& b = r.bus;
  if (b.host_to_device_bytes + b.device_to_host_bytes > 0)
    std::printf("; bus %.2f MB per node-step; of the backend's time: upload %.0f%%, kernels "
                "%.0f%%, download %.0f%%, host staging %.0f%% (overlapping the copies)",
                static_cast<double>(b.host_to_device_bytes + b.device_to_host_bytes) / steps / 1e6,
                100 * b.upload_seconds / backend, 100 * b.compute_seconds / backend,
                100 * b.download_seconds / backend, 100 * b.staging_seconds / backend);
  if (b.mixing_seconds + b.steps_seconds > 0) // a resident device run: its stream's time
    std::printf("\n    of the wall time on the device: mixing %.0f%%, pass %.0f%%, local steps "
                "%.0f%%, idle waiting for the host %.0f%%",
                100 * b.mixing_seconds / wall, 100 * b.compute_seconds / wall,
                100 * b.steps_seconds / wall, 100 * b.idle_seconds / wall);
  if (b.element_wise_steps > 0) // the engine thread's steps, and the kernels that ran them
    std::printf("\n    element-wise steps on the engine thread: %lld in %lld kernels",
                static_cast<long long>(b.element_wise_steps),
                static_cast<long long>(b.element_wise_kernels));
  std::printf("\n");
}

RunArgs parse_run_args(const std::vector<std::string>& args) {
  RunArgs r;
  for (ArgCursor c("run", args); c.next();) {
    if (c.take_set(r.overrides))
      continue;
    const std::string& a = c.arg();
    if (a == "-o" || a == "--output") {
      r.output = c.path_value("a trace file name");
    } else if (a == "--threads") {
      r.threads = static_cast<int>(c.integer_value(1, 1024));
    } else if (a == "--quiet" || a == "-q") {
      r.quiet = true;
    } else if (c.is_option()) {
      c.unknown_option();
    } else if (r.scenario.empty()) {
      r.scenario = a;
    } else {
      throw ConfigError("run: more than one scenario given ('" + r.scenario + "', '" + a + "')");
    }
  }
  if (r.scenario.empty())
    throw ConfigError("run: expected a scenario file, e.g. dtsim run scenarios/quickstart.yaml");
  return r;
}

} // namespace

int run_command(const std::vector<std::string>& args) {
  const RunArgs a = parse_run_args(args);
  const int threads = a.threads > 0 ? a.threads : tbb::info::default_concurrency();
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                  static_cast<std::size_t>(threads));

  // Before the plan (which loads the data): a signal during start-up ends the process with
  // exit code 130 and one line, not an abrupt death.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  RunPlan plan = plan_run(a.scenario, a.overrides);
  if (!a.output.empty())
    plan.output_path = a.output;
  if (g_interrupted.load()) { // before anything is written: an earlier trace stays as it was
    std::fprintf(stderr, "%s: interrupted before the run started; no trace written\n",
                 plan.name.c_str());
    return 130;
  }

  const bool tty = !a.quiet && isatty(fileno(stderr));
  ProgressLine progress(tty);
  plan.engine.interrupt = &g_interrupted;
  if (tty)
    plan.engine.on_progress = [&progress](const Progress& p) { progress.update(p); };

  if (!a.quiet)
    std::cerr << plan.name << ": " << plan.topology->size() << " nodes, " << plan.describe_model()
              << ", " << plan.algorithm->describe() << ", " << plan.topology->name()
              << " (spectral gap " << plan.topology->spectral_gap() << "), " << threads
              << " thread(s)\n";

  Hdf5TraceSink sink(plan.output_path, event_level_of(plan.events));
  const RunResult r = execute_plan(plan, sink, threads);
  progress.finish();

  std::printf("%s: %s (%s)\n", plan.name.c_str(), to_string(r.status), r.message.c_str());
  if (plan.timing)
    std::printf("  timing-only run: %lld events, %.2f M events/s\n",
                static_cast<long long>(r.events),
                static_cast<double>(r.events) / std::max(r.wall_seconds, 1e-9) / 1e6);
  else
    std::printf("  final test accuracy (averaged model): %.4f   test loss: %.4f\n",
                r.final_test_accuracy, r.final_test_loss);
  std::printf("  simulated time: %.2f s   epochs: %.2f   updates: %lld   gradient steps: %lld\n",
              r.sim_time_s, r.epochs, static_cast<long long>(r.updates),
              static_cast<long long>(r.gradient_steps));
  std::printf("  wall time: %.2f s   updates/s: %.0f   simulated/wall: %.2fx\n", r.wall_seconds,
              static_cast<double>(r.updates) / std::max(r.wall_seconds, 1e-9),
              r.sim_time_s / std::max(r.wall_seconds, 1e-9));
  // Before the run's clock: what a rate above leaves out, so that a backend which moves work
  // ahead of the run (a device's kernels loaded at set-up) shows where it went.
  std::printf("  set-up before the run: %.2f s", plan.setup_wall_seconds);
  if (plan.batched)
    std::printf(", of which the gradient backend %.2f s", plan.backend_setup_wall_seconds);
  std::printf("\n");
  if (!r.gradient_backend.empty())
    print_backend_line(r);
  std::printf("  trace: %s\n", plan.output_path.c_str());
  for (const std::string& w : r.warnings)
    std::fprintf(stderr, "warning: %s: %s\n", plan.name.c_str(), w.c_str());
  switch (r.status) {
  case RunStatus::Completed:
    return 0;
  case RunStatus::Diverged:
    return 3;
  case RunStatus::Interrupted:
    return 130;
  default:
    return 1;
  }
}

int validate_command(const std::vector<std::string>& args) {
  std::vector<std::string> files, overrides;
  for (ArgCursor c("validate", args); c.next();) {
    if (c.take_set(overrides))
      continue;
    if (c.is_option())
      c.unknown_option();
    files.push_back(c.arg());
  }
  if (files.empty())
    throw ConfigError("validate: expected one or more scenario files");
  int failures = 0;
  for (const std::string& path : files) {
    try {
      const RunPlan plan = plan_run(path, overrides, PlanUse::check);
      std::printf("%s: ok (%d nodes, %s, %s)\n", path.c_str(), plan.topology->size(),
                  plan.describe_model().c_str(), plan.algorithm->describe().c_str());
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 2;
}

} // namespace dtsim::cli
