// SPDX-License-Identifier: MIT
// The FMA-peak loop for one vector type, included by a translation unit compiled for its ISA.
#pragma once

#include <cstdint>
#include <ctime>

namespace dtsim::fma_chains {

// CPU time of this thread: time-slicing with other processes on a shared machine is not
// counted, so the figure is the core's, not the scheduler's.
inline double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// 12 independent accumulator chains: FMA latency 4-5 cycles x 2 ports needs >= 10 in flight.
// x slightly below 1 and a tiny y keep the values finite and normal for any iteration count.
// `Ops` supplies set1, fmadd, add and first (lane 0) for the vector type. Returns seconds.
template <class Ops> double run(std::int64_t iterations, volatile float& sink) {
  constexpr int kChains = 12;
  const auto x = Ops::set1(0.9999999F);
  const auto y = Ops::set1(1e-7F);
  decltype(Ops::set1(0.0F)) acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = Ops::set1(static_cast<float>(i));
  const double start = thread_seconds();
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) // unrolled: the accumulators stay in registers
      acc[i] = Ops::fmadd(acc[i], x, y);
  }
  const double seconds = thread_seconds() - start;
  auto sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = Ops::add(sum, acc[i]);
  sink = sink + Ops::first(sum); // the result is used, so the loop cannot be removed
  return seconds;
}

} // namespace dtsim::fma_chains
