// SPDX-License-Identifier: MIT
// SwarmSGD's modular lattice quantizer with reference-point decoding (Davies et al. 2021).
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

#include <vector>

namespace dtsim {

// Each coordinate is rounded to the lattice s*Z (index k = round(x / s)) and only
// e = k mod q is sent, q = 2^bits. The receiver picks the lattice point congruent to e that
// is nearest its own reference value r:
//   decode(e, r) = q*s*round(r/(q*s) - e/q) + s*e
// which is right iff |s*k - r| < q*s/2: the models being averaged must be close.
// In simulation the payload carries the full index k (as a float, exact: |k| < 2^24, clamped);
// decode() uses only
// k mod q to decode and compares with k to count the coordinates that decoded wrongly, which
// a real receiver could not see. Such a coordinate takes the wrong lattice value, as it would.
// Wire format: d * bits bits, bit-packed: ceil(d * bits / 8) bytes.
// Keys: bits (1..16, default 8), side (s > 0, default 1e-4, FSPDA's 8-bit setting),
// rounding (nearest | stochastic: unbiased, default nearest).
class LatticeQuantizer final : public Compressor {
public:
  LatticeQuantizer(const Params& p, const CompressorSetup& setup);
  LatticeQuantizer(int bits, double side, bool stochastic);
  std::string describe() const override;
  std::int64_t encoded_bytes(std::size_t dim) const override;
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
  bool wire_is_decoded() const override { return false; }
  bool needs_reference() const override { return true; }
  std::int64_t decode(std::span<const float> wire, std::span<const float> ref,
                      std::span<float> out) const override;
  // s*k: bit-identical to a successful decode, without the decoding work.
  void own_view(std::span<const float> wire, std::span<const float> x,
                std::span<float> out) const override;
  double radius() const { return 0.5 * static_cast<double>(levels_) * side_; } // q*s/2
  int bits() const { return bits_; }
  double side() const { return side_; }
  bool stochastic() const { return stochastic_; }

private:
  int bits_;
  std::int64_t levels_; // q
  double side_;         // s
  bool stochastic_;
  std::vector<float> uniforms_; // stochastic rounding: one draw per coordinate
};

} // namespace dtsim
