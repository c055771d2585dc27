// SPDX-License-Identifier: MIT
// FMA peak: 12 independent accumulator chains, enough to cover FMA latency x throughput.
#include "bench/fma_peak.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <immintrin.h>

namespace dtsim {
namespace {

// 12 chains: FMA latency 4-5 cycles x 2 ports needs >= 10 in flight. x slightly below 1 and a
// tiny y keep the values finite and normal for any iteration count.
constexpr int kChains = 12;
volatile float g_sink = 0.0f; // the result is used, so the loop cannot be removed

// CPU time of this thread: time-slicing with other processes on a shared machine is not
// counted, so the figure is the core's, not the scheduler's.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double run_fma(std::int64_t iterations) {
  const __m256 x = _mm256_set1_ps(0.9999999f);
  const __m256 y = _mm256_set1_ps(1e-7f);
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const double start = thread_seconds();
  for (std::int64_t it = 0; it < iterations; ++it) {
    // Fully unrolled so that the accumulators stay in registers.
    acc[0] = _mm256_fmadd_ps(acc[0], x, y);
    acc[1] = _mm256_fmadd_ps(acc[1], x, y);
    acc[2] = _mm256_fmadd_ps(acc[2], x, y);
    acc[3] = _mm256_fmadd_ps(acc[3], x, y);
    acc[4] = _mm256_fmadd_ps(acc[4], x, y);
    acc[5] = _mm256_fmadd_ps(acc[5], x, y);
    acc[6] = _mm256_fmadd_ps(acc[6], x, y);
    acc[7] = _mm256_fmadd_ps(acc[7], x, y);
    acc[8] = _mm256_fmadd_ps(acc[8], x, y);
    acc[9] = _mm256_fmadd_ps(acc[9], x, y);
    acc[10] = _mm256_fmadd_ps(acc[10], x, y);
    acc[11] = _mm256_fmadd_ps(acc[11], x, y);
  }
  const double seconds = thread_seconds() - start;
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  g_sink = g_sink + lanes[0];
  return seconds;
}

} // namespace

double measure_fma_peak_gflops_per_core() {
  constexpr double kFlopsPerIteration = kChains * 8 * 2.0;
  // Calibrate to ~0.2 s per repetition, then keep the best of five.
  std::int64_t iterations = 1 << 20;
  double seconds = run_fma(iterations);
  while (seconds < 0.02) {
    iterations *= 4;
    seconds = run_fma(iterations);
  }
  iterations = std::max<std::int64_t>(1, static_cast<std::int64_t>(iterations * 0.2 / seconds));
  double best = 0.0;
  for (int rep = 0; rep < 5; ++rep)
    best = std::max(best, kFlopsPerIteration * static_cast<double>(iterations) /
                              run_fma(iterations) / 1e9);
  return best;
}

} // namespace dtsim
