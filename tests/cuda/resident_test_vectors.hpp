// SPDX-License-Identifier: MIT
// Random vectors and their comparison, for the tests of the resident element math.
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
