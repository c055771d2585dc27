// SPDX-License-Identifier: MIT
// dtsim_bench: start-up, the FMA peaks of every ISA the CPU has, the MLP and LeNet steps, and a
// 32-node Fashion-MNIST run at 1 and 2 threads, all measured in one process so that the
// ratios compare like with like.
#include "bench/fma_peak.hpp"
#include "bench/memory_bandwidth.hpp"
#include "bench/model_step_bench.hpp"
#include "models/make_model.hpp"
#include "sim/core/build_info.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

// 32 nodes on a ring, synchronous D-PSGD with momentum, the MLP of the quickstart; no
// per-node evaluation so that the run is dominated by what is being measured.
const char* kScenario = R"(name: bench32
seed: 1
nodes: 32
data: {dataset: fashion-mnist, batch_size: 32, partition: {kind: dirichlet, alpha: 0.5}}
model: {kind: mlp, hidden: [256, 128]}
topology: {kind: ring}
algorithm: {name: dsgd, mode: sync, lr: 0.05, momentum: 0.9}
system: {compute: {dist: lognormal, mean_s: 0.05, sigma: 0.3}}
stop: {epochs: 2}
eval: {every_s: 1000, test_samples: 10000}
)";

struct ScenarioTiming {
  double wall_s = 0;
  double gradient_s = 0;
  double algorithm_s = 0;
  double eval_s = 0;
  std::int64_t steps = 0;
  double accuracy = 0;
  double tasks_on_working_copy = 0;
  double model_rebuilds = 0;
};

double attribute(const MemoryTraceSink& sink, const std::string& name) {
  for (const auto& [n, v] : sink.summary().number_attributes)
    if (n == name)
      return v;
  return std::nan("");
}

ScenarioTiming run_scenario(int threads, const std::vector<std::string>& sets) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  RunPlan plan = plan_run_text(kScenario, "bench32.yaml", sets);
  MemoryTraceSink sink;
  const RunResult r = execute_plan(plan, sink, threads);
  // The algorithm's vector math: its hooks in the tasks and the rebuilds of models kept as
  // their mixing inputs.
  return {r.wall_seconds,
          r.gradient_wall_seconds,
          r.algorithm_task_wall_seconds + r.model_rebuild_wall_seconds,
          r.eval_wall_seconds,
          r.gradient_steps,
          r.final_test_accuracy,
          attribute(sink, "tasks_on_working_copy"),
          attribute(sink, "model_rebuilds")};
}

} // namespace

int main(int argc, char** argv) {
  const auto process_start = std::chrono::steady_clock::now();
  const double epochs = argc > 1 ? std::atof(argv[1]) : 2.0;
  const std::vector<std::string> sets = {"stop.epochs=" + format_number(epochs)};

  // Start-up first, while nothing is decoded or cached: what `dtsim run` pays before the
  // first event of the 32-node run (Fashion-MNIST decoded, partition, models, topology).
  // A second plan in the same process finds the data decoded (as a sweep's later points do).
  {
    using Clock = std::chrono::steady_clock;
    const RunPlan cold = plan_run_text(kScenario, "bench32.yaml", {});
    const std::chrono::duration<double> first = Clock::now() - process_start;
    const auto again = Clock::now();
    const RunPlan warm = plan_run_text(kScenario, "bench32.yaml", {});
    const std::chrono::duration<double> second = Clock::now() - again;
    std::printf("start-up of the 32-node Fashion-MNIST MLP run (process start to a ready plan): "
                "%.3f s; a second plan in the same process (data already decoded): %.3f s\n",
                first.count(), second.count());
  }

  std::printf("build: -march=%s (%s)\n", build_info().march.c_str(), build_info().isa.c_str());
  const std::vector<FmaPeak> peaks = measure_fma_peaks();
  for (const FmaPeak& p : peaks)
    std::printf("FMA peak (1 core, %-6s):                %7.1f GFLOP/s\n", p.isa.c_str(), p.gflops);
  const double peak = peaks.back().gflops; // the widest ISA this CPU executes
  std::printf("step figures below are %% of the widest peak (%s)\n", peaks.back().isa.c_str());

  auto root = std::make_shared<ParamNode>(ParamNode::make_map());
  const auto model = make_model(Params(root, "bench"), {1, 28, 28}, 10);
  std::printf("model: %s\n", model->describe().c_str());
  for (int batch : {32, 128}) {
    const StepBenchResult s = bench_model_step(*model, 784, batch, 2.0);
    std::printf("MLP SGD step, batch %3d, 1 thread: median %6.1f GFLOP/s = %3.0f%% of peak "
                "(best %6.1f = %3.0f%%), %6.0f steps/s\n",
                batch, s.gflops, 100 * s.gflops / peak, s.gflops_best, 100 * s.gflops_best / peak,
                s.steps_per_second);
  }

  // LeNet-5 on Fashion-MNIST-shaped input (1x28x28, first conv padded by 2).
  auto lenet_root = std::make_shared<ParamNode>(ParamNode::make_map());
  lenet_root->fields.emplace_back("kind", ParamNode::make_scalar("lenet"));
  const auto lenet = make_model(Params(lenet_root, "bench"), {1, 28, 28}, 10);
  std::printf("model: %s, %.2f MFLOP per example\n", lenet->describe().c_str(),
              lenet->flops_per_example() / 1e6);
  for (int batch : {32, 128}) {
    const StepBenchResult s = bench_model_step(*lenet, 784, batch, 2.0);
    std::printf("LeNet SGD step, batch %3d, 1 thread: median %6.1f GFLOP/s = %3.0f%% of peak "
                "(best %6.1f = %3.0f%%), %6.0f steps/s = %.3f ms/step (best %.3f)\n",
                batch, s.gflops, 100 * s.gflops / peak, s.gflops_best, 100 * s.gflops_best / peak,
                s.steps_per_second, 1e3 * s.seconds_per_step, 1e3 * s.seconds_per_step_best);
  }
  // ResNet-20 (GroupNorm) on CIFAR-shaped input: the CPU reference of the seeds' model.
  auto resnet_root = std::make_shared<ParamNode>(ParamNode::make_map());
  resnet_root->fields.emplace_back("kind", ParamNode::make_scalar("resnet20"));
  const auto resnet = make_model(Params(resnet_root, "bench"), {3, 32, 32}, 10);
  std::printf("model: %s, %.1f MFLOP per example\n", resnet->describe().c_str(),
              resnet->flops_per_example() / 1e6);
  {
    const StepBenchResult s = bench_model_step(*resnet, 3 * 32 * 32, 32, 2.0);
    std::printf("ResNet-20 SGD step, batch  32, 1 thread: median %6.1f GFLOP/s = %3.0f%% of peak "
                "(best %6.1f = %3.0f%%), %6.2f steps/s = %.1f ms/step\n",
                s.gflops, 100 * s.gflops / peak, s.gflops_best, 100 * s.gflops_best / peak,
                s.steps_per_second, 1e3 * s.seconds_per_step);
  }
  if (epochs <= 0)
    return 0; // model steps only

  std::printf("32-node Fashion-MNIST D-PSGD run, %.1f epochs (%s):\n", epochs,
              "ring, MLP, batch 32");
  const ScenarioTiming one = run_scenario(1, sets);
  const ScenarioTiming two = run_scenario(2, sets);
  const double engine = one.wall_s - one.gradient_s - one.algorithm_s - one.eval_s;
  std::printf("  1 thread : wall %6.2f s, %6.0f node-steps/s = gradients %5.2f s + algorithm "
              "vector math %5.2f s + evaluation %5.2f s + engine %5.2f s; accuracy %.4f\n",
              one.wall_s, static_cast<double>(one.steps) / one.wall_s, one.gradient_s,
              one.algorithm_s, one.eval_s, engine, one.accuracy);
  std::printf("  tasks on working copies of the model: %.0f of %lld; stored models rebuilt: %.0f\n",
              one.tasks_on_working_copy, static_cast<long long>(one.steps), one.model_rebuilds);
  std::printf("  2 threads: wall %6.2f s, %6.0f node-steps/s, accuracy %.4f\n", two.wall_s,
              static_cast<double>(two.steps) / two.wall_s, two.accuracy);
  std::printf("  parallel speedup (1 -> 2 threads):    %5.2fx\n", one.wall_s / two.wall_s);
  std::printf(
      "  engine overhead (1 thread; event loop, scheduling, bookkeeping): %4.1f%% of wall\n",
      100 * engine / one.wall_s);
  std::printf("  algorithm vector math (local step, mixing; in node tasks):     %4.1f%% of wall\n",
              100 * one.algorithm_s / one.wall_s);
  // The vector math is a few flops per parameter over 32 nodes' vectors, far more than the
  // caches hold: its floor is memory traffic. Per node-step, after the gradient (which leaves
  // g and x in cache), ATC D-PSGD with momentum on a ring reads and writes the momentum m,
  // writes the message (plus a read for ownership of each line) and reads the node's own and
  // two neighbours' messages: 7 vectors. The mixed model x goes to a per-thread working copy
  // that stays in cache (the stored one is rebuilt only when read, rarely in this run).
  const double vector_bytes = 4.0 * static_cast<double>(model->num_params());
  const double bytes_per_step = 7 * vector_bytes;
  const double bandwidth =
      measure_stream_bandwidth(static_cast<std::size_t>(32 * 4 * vector_bytes));
  const double floor_s = bytes_per_step * static_cast<double>(one.steps) / bandwidth;
  std::printf("  memory floor of that vector math: 7 vectors of %.2f MB per node-step (m read and "
              "written, message written and read for ownership, 3 messages read) "
              "at %.1f GB/s (1-core triad over %.0f MB) = %.2f s; vector math took %.2f s = "
              "%.2fx the floor\n",
              vector_bytes / 1e6, bandwidth / 1e9, 32 * 4 * vector_bytes / 1e6, floor_s,
              one.algorithm_s, one.algorithm_s / floor_s);
  // Could any schedule bring it under the issue's 20% of the wall? Only by moving fewer
  // bytes: the least any order of tasks could move is the momentum read and written, the
  // message written once (streaming stores, no read for ownership) and each message read
  // from memory once (its two other readers served from cache): 4 vectors. The nodes' live
  // vectors (momenta and two rounds of messages, 3 per node) exceed what the last-level
  // cache gives one core, so the bound is priced at the triad over the same working set;
  // the share it allows is the share with zero overhead and free reuse.
  const double least_s = 4 * vector_bytes * static_cast<double>(one.steps) / bandwidth;
  const double other_s = one.wall_s - one.algorithm_s;
  std::printf("  least traffic any task order could reach: 4 vectors per node-step = %.2f s, "
              "i.e. %.0f%% of a wall with the rest unchanged\n",
              least_s, 100 * least_s / (least_s + other_s));
  std::printf("  1-core triad by working set (where the caches stop helping):");
  for (const double megabytes : {1.0, 8.0, 32.0})
    std::printf(" %.0f MB %.1f GB/s;", megabytes,
                measure_stream_bandwidth(static_cast<std::size_t>(megabytes * 1e6)) / 1e9);
  std::printf(" %.0f MB %.1f GB/s\n", 32 * 4 * vector_bytes / 1e6, bandwidth / 1e9);
  std::printf("  identical results at 1 and 2 threads: %s\n",
              one.accuracy == two.accuracy && one.steps == two.steps ? "yes" : "NO");
  return 0;
}
