// SPDX-License-Identifier: MIT
// Top-k selection with a deterministic tie rule.
#include "sim/optimizers/compression/top_k.hpp"

#include "sim/core/flat_vector.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>

namespace dtsim {

TopK::TopK(const Params& p, const CompressorSetup& setup)
    : ratio_(p.number("ratio", 0.01, Range{0.0, 1.0, true, false})), bits_(setup.dim) {}

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
  const std::size_t n = x.size(), k = count(ratio_, n);
  if (bits_.size() != n)
    bits_.resize(n); // only if built for another dimension
  // Magnitudes as IEEE bit patterns, which order non-negative floats like their values; NaN
  // counts as +inf (the largest), so a diverging vector never breaks the ordering.
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    bits_[i] = std::bit_cast<std::uint32_t>(a != a ? std::numeric_limits<float>::infinity() : a);
  }
  // The k-th largest pattern by radix selection, 11 + 11 + 10 bits from the top: three
  // counting passes instead of a branchy nth_element.
  std::uint32_t prefix = 0, mask = 0;
  std::size_t rank = k; // rank of the wanted value among those matching the prefix
  for (const auto& [digit_shift, digit_width] :
       {std::pair{21, 11}, std::pair{10, 11}, std::pair{0, 10}}) {
    // Locals, so that the counting loop keeps them in registers.
    const int shift = digit_shift;
    const std::uint32_t digits = (1u << digit_width) - 1;
    const std::uint32_t want = prefix, have = mask;
    // Four interleaved histograms: values cluster in few bins, and one histogram would make
    // every increment wait for the previous one to the same bin.
    std::uint32_t* counts = counts_.data();
    std::fill(counts_.begin(), counts_.end(), 0u);
    const std::size_t n4 = n - n % 4;
    for (std::size_t i = 0; i < n4; i += 4)
      for (std::size_t j = 0; j < 4; ++j) {
        const std::uint32_t b = bits_[i + j];
        if ((b & have) == want)
          ++counts[j * 2048 + ((b >> shift) & digits)];
      }
    for (std::size_t i = n4; i < n; ++i)
      if ((bits_[i] & have) == want)
        ++counts[(bits_[i] >> shift) & digits];
    for (std::size_t j = 1; j < 4; ++j)
      for (std::size_t d = 0; d <= digits; ++d)
        counts[d] += counts[j * 2048 + d];
    for (std::uint32_t d = digits + 1; d-- > 0;) {
      if (rank <= counts_[d]) {
        prefix |= d << shift;
        mask |= digits << shift;
        break;
      }
      rank -= counts_[d];
    }
  }
  // Keep everything above the threshold (k - rank values) and, of the ties at it, the
  // `rank` lowest indices.
  const std::uint32_t threshold = prefix;
  for (std::size_t i = 0; i < n; ++i)
    wire[i] = bits_[i] > threshold ? x[i] : 0.0f;
  for (std::size_t i = 0; i < n && rank > 0; ++i)
    if (bits_[i] == threshold) {
      wire[i] = x[i];
      --rank;
    }
  const double kept = static_cast<double>(as_vec(std::span<const float>(wire)).squaredNorm());
  st.norm_sq = static_cast<double>(as_vec(x).squaredNorm());
  st.error_sq = std::max(0.0, st.norm_sq - kept);
  return st;
}

} // namespace dtsim
