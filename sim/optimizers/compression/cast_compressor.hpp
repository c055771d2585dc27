// SPDX-License-Identifier: MIT
// `none` (float32) and `fp16`: every coordinate sent as a float of fixed width.
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

namespace dtsim {

// none: 4 bytes per coordinate, exact. fp16: IEEE half precision (round to nearest even),
// 2 bytes per coordinate; values beyond ±65504 become ±inf. No keys.
class CastCompressor final : public Compressor {
public:
  explicit CastCompressor(bool half) : half_(half) {}
  std::string describe() const override { return half_ ? "fp16" : "none (float32)"; }
  std::int64_t encoded_bytes(std::size_t dim) const override;
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
  bool half() const { return half_; }

private:
  bool half_;
};

} // namespace dtsim
