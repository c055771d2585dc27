// SPDX-License-Identifier: MIT
// A triad over arrays larger than the caches, timed on one thread.
#include "bench/memory_bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace dtsim {

double measure_stream_bandwidth(std::size_t working_set_bytes) {
  const std::size_t n = std::max<std::size_t>(working_set_bytes / (3 * sizeof(float)), 1024);
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f); // touched once: no page faults below
  double best = 1e30;
  for (int pass = 0; pass < 8; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    float* __restrict out = a.data();
    const float* __restrict x = b.data();
    const float* __restrict y = c.data();
    const float s = 0.5f + static_cast<float>(pass);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = x[i] + s * y[i];
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // Keep the result observable so that the loop is not removed.
  volatile float sink = a[n / 2];
  (void)sink;
  return 16.0 * static_cast<double>(n) / best;
}

} // namespace dtsim
