// SPDX-License-Identifier: MIT
// Top-k selection with a deterministic tie rule.
#include "sim/optimizers/compression/top_k.hpp"

#include "sim/core/flat_vector.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dtsim {

TopK::TopK(const Params& p, const CompressorSetup& setup)
    : ratio_(p.number("ratio", 0.01, Range{0.0, 1.0, true, false})), order_(setup.dim) {}

std::size_t TopK::count(double ratio, std::size_t dim) {
  const auto k = static_cast<std::size_t>(std::ceil(ratio * static_cast<double>(dim)));
  return std::clamp<std::size_t>(k, 1, std::max<std::size_t>(dim, 1));
}

std::string TopK::describe() const {
  return "topk (ratio " + format_number(ratio_) + ")";
}

std::int64_t TopK::encoded_bytes(std::size_t dim) const {
  return 8 * static_cast<std::int64_t>(count(ratio_, dim));
}

EncodeStats TopK::encode(std::span<const float> x, std::span<float> wire, Rng&) {
  EncodeStats st;
  const std::size_t k = count(ratio_, x.size());
  std::iota(order_.begin(), order_.end(), 0u);
  // NaN sorts first (as the largest), so a diverging vector never breaks the ordering.
  auto mag = [&](std::uint32_t i) {
    const float a = std::fabs(x[i]);
    return std::isnan(a) ? std::numeric_limits<float>::infinity() : a;
  };
  std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k - 1),
                   order_.end(), [&](std::uint32_t a, std::uint32_t b) {
                     const float ma = mag(a), mb = mag(b);
                     return ma > mb || (ma == mb && a < b);
                   });
  as_vec(wire).setZero();
  double kept = 0;
  for (std::size_t t = 0; t < k; ++t) {
    const std::uint32_t i = order_[t];
    wire[i] = x[i];
    kept += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  st.norm_sq = static_cast<double>(as_vec(x).squaredNorm());
  st.error_sq = std::max(0.0, st.norm_sq - kept);
  return st;
}

} // namespace dtsim
