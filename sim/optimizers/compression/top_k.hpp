// SPDX-License-Identifier: MIT
// Top-k sparsification: the k largest-magnitude coordinates, the rest zero.
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace dtsim {

// k = ceil(ratio * d) (at least 1, at most d). Ties in magnitude go to the lower index, so
// the selection is one well-defined set. Contractive: ||Q(x) - x||^2 <= (1 - k/d) ||x||^2.
// Wire format: k (uint32 index, float32 value) pairs: 8k bytes.
// Keys: ratio (in (0, 1], default 0.01).
class TopK final : public Compressor {
public:
  TopK(const Params& p, const CompressorSetup& setup);
  std::string describe() const override;
  std::int64_t encoded_bytes(std::size_t dim) const override;
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
  static std::size_t count(double ratio, std::size_t dim);
  double ratio() const { return ratio_; }

private:
  double ratio_;
  std::vector<std::uint32_t> bits_;            // scratch: magnitudes as bit patterns, sized once
  std::array<std::uint32_t, 4 * 2048> counts_; // radix-selection histograms (radix_select.hpp)
};

} // namespace dtsim
