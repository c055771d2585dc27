// SPDX-License-Identifier: MIT
// dtsim-mpi-sweep: rank 0 hands a sweep's points to the other ranks, one at a time.
//   mpirun -np 17 dtsim-mpi-sweep SWEEP.yaml [-o DIR] [--resume]
// Built only when CMake finds MPI. Each rank runs its points with the whole node's oneTBB
// pool; traces are the same as from `dtsim sweep` or `dtsim run`.
#include "apps/output_folder.hpp"
#include "apps/sweep_runner.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mpi.h>
#include <string>
#include <vector>

using namespace dtsim;
using namespace dtsim::cli;

namespace {

constexpr int kTag = 7;

// What a worker reports after a point (a fixed-size record sent as bytes).
struct Report {
  int index = -1; // -1: nothing yet (first request)
  double accuracy = -1;
  double wall_s = 0;
  char status[112] = {};
};

struct Args {
  std::string file;
  std::string output;
  bool resume = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-o" || arg == "--output") && i + 1 < argc)
      a.output = argv[++i];
    else if (arg == "--resume")
      a.resume = true;
    else if (!arg.empty() && arg[0] != '-' && a.file.empty())
      a.file = arg;
    else
      throw ConfigError("usage: dtsim-mpi-sweep SWEEP.yaml [-o DIR] [--resume]");
  }
  if (a.file.empty())
    throw ConfigError("usage: dtsim-mpi-sweep SWEEP.yaml [-o DIR] [--resume]");
  return a;
}

void coordinate(const SweepPlan& plan, const std::vector<std::size_t>& todo,
                std::vector<Outcome>& outcomes, int workers) {
  std::size_t next = 0, done = 0, failed = 0;
  const auto start = std::chrono::steady_clock::now();
  while (workers > 0) {
    Report r;
    MPI_Status st;
    MPI_Recv(&r, sizeof r, MPI_BYTE, MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &st);
    if (r.index >= 0) {
      const auto i = static_cast<std::size_t>(r.index);
      outcomes[i] = {r.status, r.accuracy, r.wall_s};
      ++done;
      failed += outcomes[i].status != "completed";
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "[%zu/%zu done, %zu failed, ETA %s] rank %d: %s: %s\n", done,
                   todo.size(), failed,
                   format_duration(elapsed / static_cast<double>(done) *
                                   static_cast<double>(todo.size() - done))
                       .c_str(),
                   st.MPI_SOURCE, plan.points[i].name.c_str(), r.status);
      write_index(plan.output_dir, plan.points, outcomes);
    }
    int index = -1;
    if (next < todo.size())
      index = static_cast<int>(todo[next++]);
    else
      --workers;
    MPI_Send(&index, 1, MPI_INT, st.MPI_SOURCE, kTag, MPI_COMM_WORLD);
  }
}

void work(const SweepPlan& plan) {
  Report r;
  for (;;) {
    MPI_Send(&r, sizeof r, MPI_BYTE, 0, kTag, MPI_COMM_WORLD);
    int index = -1;
    MPI_Recv(&index, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (index < 0)
      return;
    const Outcome o = run_sweep_point(plan, plan.points[static_cast<std::size_t>(index)]);
    r = Report{};
    r.index = index;
    r.accuracy = o.accuracy;
    r.wall_s = o.wall_s;
    std::strncpy(r.status, o.status.c_str(), sizeof r.status - 1);
  }
}

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  try {
    const Args a = parse(argc, argv);
    SweepPlan plan = plan_sweep(a.file);
    if (plan.tune)
      throw ConfigError(a.file + ": tune: the MPI launcher does not run tuning steps; run the "
                                 "sweep with dtsim sweep (--shard K/N splits it across jobs)");
    if (!a.output.empty())
      plan.output_dir = a.output;
    if (rank == 0) {
      for (const SweepPoint& p : plan.points) // fail fast on a bad point
        plan_point(plan, p, PlanUse::check_here);
      make_output_folder(plan.output_dir, "-o");
      std::vector<Outcome> outcomes(plan.points.size());
      std::vector<std::size_t> todo;
      for (std::size_t i = 0; i < plan.points.size(); ++i) {
        const std::string trace = plan.output_dir + "/" + plan.points[i].name + ".h5";
        if (a.resume && std::filesystem::exists(trace))
          outcomes[i] = outcome_of_trace(trace);
        if (!finished(outcomes[i])) // never run, interrupted, failed or damaged: run it (again)
          todo.push_back(i);
        else
          remove_superseded_checkpoint(trace);
      }
      std::fprintf(stderr, "%s: %zu points, %zu to run on %d worker ranks\n", plan.name.c_str(),
                   plan.points.size(), todo.size(), std::max(size - 1, 1));
      if (size == 1) {
        for (std::size_t i : todo) {
          outcomes[i] = run_sweep_point(plan, plan.points[i]);
          write_index(plan.output_dir, plan.points, outcomes);
        }
      } else {
        coordinate(plan, todo, outcomes, size - 1);
      }
      write_index(plan.output_dir, plan.points, outcomes);
      code = std::all_of(outcomes.begin(), outcomes.end(),
                         [](const Outcome& o) { return o.status == "completed"; })
                 ? 0
                 : 1;
    } else {
      work(plan);
    }
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}
