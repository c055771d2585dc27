// SPDX-License-Identifier: MIT
// Random-k sparsification: k uniformly chosen coordinates.
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

// k = ceil(ratio * d) coordinates drawn uniformly without replacement. form unbiased: kept
// values scaled by d/k (E[Q(x)] = x); form contractive: kept as they are (CHOCO-SGD's form,
// E||Q(x) - x||^2 = (1 - k/d) ||x||^2). Wire format: the 64-bit seed of the selection (the
// receiver regenerates the indices) and k float32 values: 8 + 4k bytes.
// Keys: ratio (in (0, 1], default 0.01), form (unbiased | contractive; default as for qsgd).
class RandomK final : public Compressor {
public:
  RandomK(const Params& p, const CompressorSetup& setup);
  std::string describe() const override;
  std::int64_t encoded_bytes(std::size_t dim) const override;
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
  double ratio() const { return ratio_; }
  bool contractive() const { return contractive_; }

private:
  double ratio_;
  bool contractive_;
  std::vector<std::uint32_t> perm_; // a permutation; a partial shuffle draws each subset
};

} // namespace dtsim
