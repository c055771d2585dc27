// SPDX-License-Identifier: MIT
// The _dtsim extension module behind `import dtsim` (python/dtsim/__init__.py): a run or a
// sweep from Python, in this process, on the same code as the CLI.
//
// Why a worker thread: the simulation must run without the GIL (other Python threads go
// on), yet Ctrl-C must stop it, and Python runs its signal handlers only on the main thread
// when asked. So the work runs on a thread of its own while the calling thread waits
// without the GIL and, every 100 ms, takes it to let Python check for signals. A
// KeyboardInterrupt sets the engine's interrupt flag (the run's trace is closed with status
// `interrupted`, exactly as SIGINT does to `dtsim run`) and is raised once the work ended.
#include "apps/commands.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/sweep_plan.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <thread>

namespace py = pybind11;

namespace {

// Runs work(interrupt) on a worker thread; see the file comment. Returns its result or
// rethrows its exception; a KeyboardInterrupt (or any exception a Python signal handler
// raised) wins over both.
template <class Result, class Work> Result run_interruptibly(Work work) {
  std::atomic<bool> interrupt{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::optional<Result> result;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      result.emplace(work(interrupt));
    } catch (...) {
      error = std::current_exception();
    }
    const std::lock_guard lock(mutex);
    done = true;
    cv.notify_all();
  });
  std::optional<py::error_already_set> signal_error;
  for (bool finished = false; !finished;) {
    {
      py::gil_scoped_release no_gil;
      std::unique_lock lock(mutex);
      finished = cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; });
    }
    if (!finished && !signal_error && PyErr_CheckSignals() != 0) {
      signal_error.emplace(); // takes the pending Python exception out of the interpreter
      interrupt.store(true);
    }
  }
  worker.join();
  if (signal_error)
    throw *signal_error;
  if (error)
    std::rethrow_exception(error);
  return std::move(*result);
}

struct RunOutcome {
  std::string trace;
  std::string status;
  std::string message;
  double final_test_accuracy = 0;
  double final_test_loss = 0;
  double sim_time_s = 0;
  double epochs = 0;
  double wall_s = 0;
};

// One run from a scenario file (text empty) or YAML text (`origin` names it in messages).
RunOutcome run_scenario(const std::string& path, const std::string& text, const std::string& origin,
                        const std::vector<std::string>& overrides, const std::string& output,
                        int threads) {
  // Planned on the caller's thread: a bad scenario raises at once, before any thread starts.
  dtsim::RunPlan plan = text.empty() ? dtsim::plan_run(path, overrides)
                                     : dtsim::plan_run_text(text, origin, overrides);
  if (!output.empty())
    plan.output_path = output;
  const int n_threads = threads > 0 ? threads : tbb::info::default_concurrency();
  return run_interruptibly<RunOutcome>([&](std::atomic<bool>& interrupt) {
    const tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                          static_cast<std::size_t>(n_threads));
    plan.engine.interrupt = &interrupt;
    dtsim::Hdf5TraceSink sink(plan.output_path, dtsim::event_level_of(plan.events));
    const dtsim::RunResult r = dtsim::execute_plan(plan, sink, n_threads);
    return RunOutcome{plan.output_path,  dtsim::to_string(r.status),
                      r.message,         r.final_test_accuracy,
                      r.final_test_loss, r.sim_time_s,
                      r.epochs,          r.wall_seconds};
  });
}

// `dtsim sweep ARGS...` in this process; returns the exit code (130 when interrupted).
int sweep(const std::vector<std::string>& args) {
  return run_interruptibly<int>(
      [&](std::atomic<bool>& interrupt) { return dtsim::cli::sweep_command(args, &interrupt); });
}

// The folder a sweep file writes to (its `output:`, else runs/<name>).
std::string sweep_output_dir(const std::string& file) {
  return dtsim::plan_sweep(file).output_dir;
}

// `dtsim analyze ARGS...` (the caller passes --csv FILE); returns the exit code.
int analyze(const std::vector<std::string>& args) {
  py::gil_scoped_release no_gil;
  return dtsim::cli::analyze_command(args);
}

} // namespace

PYBIND11_MODULE(_dtsim, m) {
  m.doc() = "dtsim's engine: runs and sweeps in this process (use the dtsim package)";
  py::register_exception<dtsim::ConfigError>(m, "ConfigError", PyExc_ValueError);
  py::class_<RunOutcome>(m, "RunOutcome")
      .def_readonly("trace", &RunOutcome::trace)
      .def_readonly("status", &RunOutcome::status)
      .def_readonly("message", &RunOutcome::message)
      .def_readonly("final_test_accuracy", &RunOutcome::final_test_accuracy)
      .def_readonly("final_test_loss", &RunOutcome::final_test_loss)
      .def_readonly("sim_time_s", &RunOutcome::sim_time_s)
      .def_readonly("epochs", &RunOutcome::epochs)
      .def_readonly("wall_s", &RunOutcome::wall_s);
  m.def("run_scenario", &run_scenario, py::arg("path"), py::arg("text"), py::arg("origin"),
        py::arg("overrides"), py::arg("output"), py::arg("threads"));
  m.def("sweep", &sweep, py::arg("args"));
  m.def("sweep_output_dir", &sweep_output_dir, py::arg("file"));
  m.def("analyze", &analyze, py::arg("args"));
}
