// SPDX-License-Identifier: MIT
// QSGD (Alistarh et al. 2017): stochastic quantization to s levels of the bucket norm.
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

#include <vector>

namespace dtsim {

// Per bucket of `bucket` coordinates (0: the whole vector) with norm N = ||v||_2:
//   Q(v)_k = N * sign(v_k) * xi_k / s,  s = 2^bits - 1,  l = floor(s |v_k| / N),
//   xi_k = l + 1 with probability s |v_k| / N - l, else l          (E[Q(v)] = v)
// form unbiased: Q as above. form contractive (CHOCO-SGD's scaled QSGD): Q / tau with
// tau = 1 + min(b / s^2, sqrt(b) / s), b the bucket's length.
// Wire format: per bucket a float32 norm, per coordinate 1 sign bit and `bits` level bits,
// bit-packed: 4 * buckets + ceil(d * (bits + 1) / 8) bytes.
// Keys: bits (1..16, default 4), bucket (>= 0, default 512), form (unbiased | contractive;
// default contractive where the algorithm needs it, else unbiased).
class Qsgd final : public Compressor {
public:
  Qsgd(const Params& p, const CompressorSetup& setup);
  std::string describe() const override;
  std::int64_t encoded_bytes(std::size_t dim) const override;
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
  int bits() const { return bits_; }
  // A bucket's norm as encode() computes it (a device's QSGD is checked against its levels
  // given this norm: compiled here, it has encode()'s bits whatever the caller's flags).
  static float bucket_norm(std::span<const float> bucket);
  std::size_t bucket() const { return bucket_; } // 0: the whole vector
  bool contractive() const { return contractive_; }

private:
  int bits_;
  std::size_t bucket_;
  bool contractive_;
  std::vector<float> uniforms_; // one draw per coordinate, sized at the first encode
};

} // namespace dtsim
