// SPDX-License-Identifier: MIT
// dtsim_scale_bench: how setup time, event throughput and memory grow with the node count.
// Timing-only runs (model.kind: none) of asynchronous gossip (AD-PSGD) and synchronous
// D-PSGD on a ring at n = 1k, 10k, 100k (and 1M with --max-nodes 1000000), each against the
// n x d x 4 bytes a run with real d-parameter models would need for the node models alone;
// then a 100,000-node ring with a real softmax model (synthetic data, 20 features), set up
// and run for a few steps. One process; peak memory is reset before each case.
#include "sim/core/params.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <malloc.h>
#include <string>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

constexpr long long kWireParams = 61706; // LeNet-5's parameter count

std::string timing_scenario(const std::string& algorithm) {
  return R"(name: scale
seed: 1
model: {kind: none, num_params: )" +
         std::to_string(kWireParams) + R"(}
topology: {kind: ring}
algorithm: )" +
         algorithm +
         R"(
system:
  compute: {dist: lognormal, mean_s: 0.05, sigma: 0.3, stragglers: {fraction: 0.1, slowdown: 4}}
  network: {latency_s: 0.001, bandwidth_Bps: 1.0e9}
stop: {steps: 20}
eval: {every_s: 0.25}
)";
}

const char* kSoftmaxScenario = R"(name: scale-softmax
seed: 1
data:
  dataset: synthetic
  synthetic: {features: 20, classes: 4, train: 200000, test: 1000}
  batch_size: 2
model: {kind: softmax}
topology: {kind: ring}
algorithm: {name: dsgd, mode: sync, lr: 0.1}
system: {compute: {dist: lognormal, mean_s: 0.05, sigma: 0.3}}
stop: {steps: 3}
eval: {every_s: 1000}
)";

// Peak resident memory since the last reset, in MiB (Linux: VmHWM; "5" to clear_refs resets
// it to the current resident size, after malloc_trim has returned the previous case's heap).
void reset_peak_memory() {
  malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";
}
double peak_memory_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

struct Case {
  double setup_s = 0;
  RunResult result;
  double peak_mib = 0;
};

Case run_case(const std::string& yaml, int nodes) {
  using Clock = std::chrono::steady_clock;
  reset_peak_memory();
  Case c;
  const auto t0 = Clock::now();
  RunPlan plan = plan_run_text(yaml, "scale.yaml", {"nodes=" + std::to_string(nodes)});
  c.setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
  MemoryTraceSink sink;
  c.result = execute_plan(plan, sink, 1);
  c.peak_mib = peak_memory_mib();
  return c;
}

} // namespace

int main(int argc, char** argv) {
  int max_nodes = 100000;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--max-nodes")
      max_nodes = std::atoi(argv[i + 1]);
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);

  std::printf("timing-only runs (model.kind: none, messages of %lld floats), 1 thread, 20 "
              "gradient steps per node:\n",
              kWireParams);
  std::printf("%-34s %9s %8s %11s %12s %9s %13s\n", "algorithm", "nodes", "setup s", "events",
              "events/s", "peak MiB", "n x d x 4 MiB");
  for (const char* algorithm : {"{name: ad-psgd, lr: 0.05}", "{name: dsgd, mode: sync, lr: 0.05}"})
    for (int nodes = 1000; nodes <= max_nodes; nodes *= 10) {
      const Case c = run_case(timing_scenario(algorithm), nodes);
      const double bound = static_cast<double>(nodes) * kWireParams * 4 / (1 << 20);
      std::printf("%-34s %9d %8.2f %11lld %12.0f %9.0f %13.0f  (%s)\n", algorithm, nodes, c.setup_s,
                  static_cast<long long>(c.result.events),
                  static_cast<double>(c.result.events) / c.result.wall_seconds, c.peak_mib, bound,
                  to_string(c.result.status));
    }

  const Case s = run_case(kSoftmaxScenario, 100000);
  std::printf("real softmax model (84 params), synthetic 20-feature data, ring, sync D-PSGD, "
              "100000 nodes: setup %.2f s (data, partition, topology, spectral gap), 3 steps "
              "per node in %.2f s, peak %.0f MiB, %s\n",
              s.setup_s, s.result.wall_seconds, s.peak_mib, to_string(s.result.status));
  return 0;
}
