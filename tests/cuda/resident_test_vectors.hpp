// SPDX-License-Identifier: MIT
// Random vectors, their comparison and the device's tiles on the host, for the tests of the
// resident element math.
#pragma once

#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dtsim::test {

// n floats uniform in [-1, 1).
inline std::vector<float> random_vector(Rng& rng, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

// f(e0, stride) over the tiles of a P-element row as the device kernels take them: J
// elements per thread at a stride of 256 threads (each_tile), so that the tiles' edges and
// the row's partial last tile are what a test covers; every thread of the last tile is
// called, also those past the row (which the kernel leaves out), so that the tile
// functions' own bounds are tested too.
template <int J, class F> void each_tile_on_host(std::size_t P, const F& f) {
  constexpr std::size_t kThreads = 256;
  for (std::size_t tile = 0; tile < P; tile += J * kThreads)
    for (std::size_t t = 0; t < kThreads; ++t)
      f(tile + t, kThreads);
}

// Largest |a - b| over the largest |b|.
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return worst / scale;
}

} // namespace dtsim::test
