// SPDX-License-Identifier: MIT
// Top-k selection with a deterministic tie rule.
#include "sim/optimizers/compression/top_k.hpp"

#include "sim/core/flat_vector.hpp"
#include "sim/optimizers/compression/radix_select.hpp"

#include <algorithm>

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
  for (std::size_t i = 0; i < n; ++i)
    bits_[i] = magnitude_key(x[i]);
  RadixSelection select;
  select.rank = k;
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    const RadixDigit digit = radix_digit(pass);
    // Locals, so that the counting loop keeps them in registers.
    const int shift = digit.shift;
    const std::uint32_t digits = (1u << digit.width) - 1;
    const std::uint32_t want = select.prefix, have = select.mask;
    // Four interleaved histograms: values cluster in few bins, and one histogram would make
    // every increment wait for the previous one to the same bin.
    std::uint32_t* counts = counts_.data();
    std::fill(counts_.begin(), counts_.end(), 0u);
    const std::size_t n4 = n - n % 4;
    for (std::size_t i = 0; i < n4; i += 4)
      for (std::size_t j = 0; j < 4; ++j) {
        const std::uint32_t b = bits_[i + j];
        if ((b & have) == want)
          ++counts[j * kRadixBins + ((b >> shift) & digits)];
      }
    for (std::size_t i = n4; i < n; ++i)
      if ((bits_[i] & have) == want)
        ++counts[(bits_[i] >> shift) & digits];
    for (std::size_t j = 1; j < 4; ++j)
      for (std::size_t d = 0; d <= digits; ++d)
        counts[d] += counts[j * kRadixBins + d];
    radix_choose(digit, counts, select);
  }
  // Keep everything above the threshold (k - rank values) and, of the ties at it, the
  // `rank` lowest indices.
  const std::uint32_t threshold = select.prefix;
  std::size_t rank = select.rank;
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
