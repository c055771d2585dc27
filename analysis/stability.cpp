// SPDX-License-Identifier: MIT
// Dispersion measures of evaluation curves.
#include "analysis/stability.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtsim::analysis {
namespace {

double mean(std::span<const double> v) {
  double s = 0;
  for (double x : v)
    s += x;
  return s / static_cast<double>(v.size());
}

double pop_std(std::span<const double> v) {
  if (v.size() < 2)
    return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v)
    s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

} // namespace

double std_second_half(std::span<const double> values) {
  return pop_std(values.subspan(values.size() / 2));
}

Stability stability(std::span<const double> a, std::size_t window) {
  Stability s;
  const std::size_t n = a.size();
  const std::size_t tail = std::max<std::size_t>(1, n / 10);
  s.final_value = mean(a.subspan(n - tail));
  s.best_value = *std::max_element(a.begin(), a.end());
  s.std_second_half = std_second_half(a);

  const std::size_t half = n / 2;
  if (n - half >= 2) {
    double sum = 0;
    for (std::size_t k = half; k + 1 < n; ++k)
      sum += std::fabs(a[k + 1] - a[k]);
    s.mean_abs_change = sum / static_cast<double>(n - half - 1);
  }

  const std::size_t w = std::min(window, n);
  double win_sum = 0;
  for (std::size_t k = 0; k + w <= n; ++k)
    win_sum += pop_std(a.subspan(k, w));
  s.window_std = win_sum / static_cast<double>(n - w + 1);

  // Deviation from the trailing moving average of (up to) w points.
  double osc = 0;
  for (std::size_t k = half; k < n; ++k) {
    const std::size_t first = k + 1 >= w ? k + 1 - w : 0;
    osc += std::fabs(a[k] - mean(a.subspan(first, k + 1 - first)));
  }
  s.oscillation = osc / static_cast<double>(n - half);

  double peak = a[0];
  for (double x : a) {
    peak = std::max(peak, x);
    s.worst_drop = std::max(s.worst_drop, peak - x);
  }
  return s;
}

double stability_gain(double baseline, double method) {
  if (baseline == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return (baseline - method) / baseline * 100.0;
}

} // namespace dtsim::analysis
