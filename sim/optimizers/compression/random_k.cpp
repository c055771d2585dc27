// SPDX-License-Identifier: MIT
// Random-k by a partial Fisher-Yates shuffle.
#include "sim/optimizers/compression/random_k.hpp"

#include "sim/core/flat_vector.hpp"
#include "sim/optimizers/compression/top_k.hpp"

#include <numeric>

namespace dtsim {

RandomK::RandomK(const Params& p, const CompressorSetup& setup)
    : ratio_(p.number("ratio", 0.01, Range{0.0, 1.0, true, false})),
      contractive_(p.choice("form", setup.contractive ? "contractive" : "unbiased",
                            {"unbiased", "contractive"}) == "contractive"),
      perm_(setup.dim) {
  std::iota(perm_.begin(), perm_.end(), 0u);
}

std::string RandomK::describe() const {
  return "randomk (ratio " + format_number(ratio_) + (contractive_ ? ", contractive" : "") + ")";
}

std::int64_t RandomK::encoded_bytes(std::size_t dim) const {
  return 8 + 4 * static_cast<std::int64_t>(TopK::count(ratio_, dim));
}

EncodeStats RandomK::encode(std::span<const float> x, std::span<float> wire, Rng& rng) {
  EncodeStats st;
  const std::size_t d = x.size(), k = TopK::count(ratio_, d);
  // The first k entries of a partial shuffle of any permutation are a uniform k-subset, so
  // perm_ needs no reset between messages (O(k) per message).
  for (std::size_t t = 0; t < k; ++t)
    std::swap(perm_[t], perm_[t + rng.below(d - t)]);
  const float scale = contractive_ ? 1.0f : static_cast<float>(d) / static_cast<float>(k);
  as_vec(wire).setZero();
  double kept = 0;
  for (std::size_t t = 0; t < k; ++t) {
    const std::uint32_t i = perm_[t];
    wire[i] = scale * x[i];
    kept += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  st.norm_sq = static_cast<double>(as_vec(x).squaredNorm());
  const double sm1 = static_cast<double>(scale) - 1.0;
  st.error_sq = std::max(0.0, st.norm_sq - kept) + sm1 * sm1 * kept;
  return st;
}

} // namespace dtsim
