// SPDX-License-Identifier: MIT
// FMA peak: calibrates each ISA's loop to ~0.2 s and keeps the best of five repetitions.
#include "bench/fma_peak.hpp"

#include <algorithm>
#include <cstdint>

namespace dtsim {

double run_fma_avx2(std::int64_t iterations, volatile float& sink);
double run_fma_avx512(std::int64_t iterations, volatile float& sink);

namespace {

volatile float g_sink = 0.0F;

double peak_gflops(double (*run)(std::int64_t, volatile float&), int lanes) {
  const double flops_per_iteration = 12.0 * lanes * 2.0; // 12 chains x lanes x (mul + add)
  std::int64_t iterations = 1 << 20;
  double seconds = run(iterations, g_sink);
  while (seconds < 0.02) {
    iterations *= 4;
    seconds = run(iterations, g_sink);
  }
  iterations = std::max<std::int64_t>(1, static_cast<std::int64_t>(iterations * 0.2 / seconds));
  double best = 0.0;
  for (int rep = 0; rep < 5; ++rep)
    best = std::max(best, flops_per_iteration * static_cast<double>(iterations) /
                              run(iterations, g_sink) / 1e9);
  return best;
}

} // namespace

std::vector<FmaPeak> measure_fma_peaks() {
  std::vector<FmaPeak> peaks{{"avx2", peak_gflops(run_fma_avx2, 8)}};
  if (__builtin_cpu_supports("avx512f"))
    peaks.push_back({"avx512", peak_gflops(run_fma_avx512, 16)});
  return peaks;
}

} // namespace dtsim
