// SPDX-License-Identifier: MIT
// Scaled sign compression: one bit per coordinate and the mean magnitude.
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

namespace dtsim {

// Q(x) = (||x||_1 / d) * sign(x), with sign(0) = +1 (one bit cannot say zero). Biased and
// contractive, as CHOCO-SGD uses it. Wire format: a float32 scale and d sign bits:
// 4 + ceil(d / 8) bytes. No keys.
class SignCompressor final : public Compressor {
public:
  std::string describe() const override { return "sign (scaled by mean |x|)"; }
  std::int64_t encoded_bytes(std::size_t dim) const override;
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
};

} // namespace dtsim
