// SPDX-License-Identifier: MIT
// A scenario file turned into every object one run needs, fully validated.
#pragma once

#include "data/dataset.hpp"
#include "data/partition.hpp"
#include "models/model.hpp"
#include "sim/engine/algorithm.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/engine_config.hpp"
#include "sim/engine/example_order.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/system/compute_time_model.hpp"
#include "sim/system/network_model.hpp"
#include "topologies/mixing_schedule.hpp"
#include "topologies/topology.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

// The longest run name: 255 bytes for a file name, less ".h5.partial.tmp" (a trace and its
// checkpoint files are named after the run).
inline constexpr std::size_t kLongestRunName = 240;

// What a plan is for. `check` validates exactly as `run` does (every key, the data, the
// graph, the memory bound; the same resolved_yaml) but gives the algorithm no vectors
// (num_params 0), so checking a sweep of 256-node points does not allocate and fill
// gigabytes of node state; such a plan cannot be executed. `check_here` is `check` plus
// what only this machine can say: that a device `model.backend: cuda` needs is present (a
// sweep's points before any runs; `dtsim validate` uses `check`, so that a GPU sweep can be
// checked anywhere).
enum class PlanUse { run, check, check_here };

// Everything built from one scenario. `resolved_yaml` is the scenario with every default
// filled in: stored in the trace, it reproduces the run exactly.
struct RunPlan {
  std::string name;
  std::string label; // scenario key `label`: the configuration's name in tables and plots
  std::string source_file;
  std::string resolved_yaml;
  // Extra root attributes of the trace, set by the caller (e.g. a sweep's point digest).
  std::vector<std::pair<std::string, std::string>> trace_attributes;
  std::uint64_t seed = 0;
  // Timing-only runs (model.kind: none) have no data, partition, model or order.
  std::optional<TimingOnly> timing;
  std::shared_ptr<const DataSplit> data; // shared: Fashion-MNIST is loaded once per process
  Partition partition;
  std::unique_ptr<Model> model;
  std::optional<Topology> topology;
  std::unique_ptr<MixingSchedule> mixing; // round-by-round W for gossip methods
  std::unique_ptr<ComputeTimeModel> compute;
  std::unique_ptr<NetworkModel> network;
  std::unique_ptr<Algorithm> algorithm;
  std::unique_ptr<ExampleOrder> order; // data.order
  // model.backend; "cuda (as cuda-batched)" once a running plan's cuda found that the node
  // vectors do not fit the device.
  std::string backend = "cpu";
  // The batched gradient backend (model.backend other than cpu) of a running plan;
  // null for cpu, timing-only runs and checking plans.
  std::unique_ptr<BatchedGradients> batched;
  EngineConfig engine;
  std::string output_path;
  std::string events; // none | summary | full
  double memory_estimate_bytes = 0;
  // Wall-clock seconds of making this plan (reading the scenario and data, the graph, the
  // method, the backend), before the run's own clock starts, and of them the gradient
  // backend's (a CUDA device's set-up: its buffers, the kernels it loads ahead of the run).
  double setup_wall_seconds = 0;
  double backend_setup_wall_seconds = 0;
  PlanUse use = PlanUse::run;

  // The model's one-line description, or the timing-only run's.
  std::string describe_model() const;
};

// Reads the scenario file, applies "--set key=value" overrides in order, builds and
// validates everything (data is loaded, the graph is checked, unknown keys are rejected).
// Throws ConfigError with one line naming file, line, key and what was expected.
RunPlan plan_run(const std::string& scenario_path, const std::vector<std::string>& overrides,
                 PlanUse use = PlanUse::run);
// The same from YAML text; `name` stands for the file in messages.
RunPlan plan_run_text(const std::string& yaml, const std::string& name,
                      const std::vector<std::string>& overrides, PlanUse use = PlanUse::run);

// Runs a plan to its end, writing to `sink`. `threads` is recorded in the trace only: the
// caller sets oneTBB's parallelism (results do not depend on it).
RunResult execute_plan(RunPlan& plan, TraceSink& sink, int threads);

} // namespace dtsim
