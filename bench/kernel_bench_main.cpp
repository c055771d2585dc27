// SPDX-License-Identifier: MIT
// dtsim_kernel_bench: FMA peak of one core and the MLP 784-256-128-10 step against it.
#include "bench/fma_peak.hpp"
#include "bench/model_step_bench.hpp"
#include "models/mlp.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  // Optional argument: seconds per measurement (default 2).
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const double peak_before = dtsim::measure_fma_peak_gflops_per_core();
  std::printf("FMA peak, one core (AVX2 256-bit FMA): %.1f GFLOP/s\n", peak_before);

  const dtsim::Mlp mlp(784, {256, 128}, 10);
  std::printf("model: %s, %.3f MFLOP per example (forward + backward GEMMs)\n",
              mlp.describe().c_str(), mlp.flops_per_example() / 1e6);
  struct Row {
    int batch;
    bool sgd;
    dtsim::StepBenchResult r;
  };
  Row rows[] = {{32, false, {}}, {32, true, {}}, {128, false, {}}, {128, true, {}}};
  for (Row& row : rows)
    row.r = dtsim::bench_model_step(mlp, 784, row.batch, seconds, row.sgd);

  // Other load on the machine lowers both figures; the higher peak is the conservative one.
  const double peak = std::max(peak_before, dtsim::measure_fma_peak_gflops_per_core());
  std::printf("FMA peak used for the shares: %.1f GFLOP/s\n\n", peak);
  std::printf("%-6s %-22s %10s %9s %9s %10s %9s %9s\n", "batch", "step", "median_us", "GFLOP/s",
              "of_peak", "steps/s", "best_us", "best_pk");
  for (const Row& row : rows)
    std::printf("%-6d %-22s %10.1f %9.1f %8.1f%% %10.0f %9.1f %8.1f%%\n", row.batch,
                row.sgd ? "loss_and_grad + SGD" : "loss_and_grad", row.r.seconds_per_step * 1e6,
                row.r.gflops, 100.0 * row.r.gflops / peak, row.r.steps_per_second,
                row.r.seconds_per_step_best * 1e6, 100.0 * row.r.gflops_best / peak);
  return 0;
}
