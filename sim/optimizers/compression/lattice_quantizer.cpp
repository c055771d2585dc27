// SPDX-License-Identifier: MIT
// Modular lattice encoding and nearest-to-reference decoding.
#include "sim/optimizers/compression/lattice_quantizer.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

namespace dtsim {
namespace {
constexpr double kMaxIndex = 2147483647.0; // indices travel as int32
} // namespace

LatticeQuantizer::LatticeQuantizer(int bits, double side, bool stochastic)
    : bits_(bits), levels_(std::int64_t{1} << bits), side_(side), stochastic_(stochastic) {}

LatticeQuantizer::LatticeQuantizer(const Params& p, const CompressorSetup& setup)
    : LatticeQuantizer(static_cast<int>(p.integer("bits", 8, Range::between(1, 16))),
                       p.number("side", 1e-4, Range::positive()),
                       p.choice("rounding", "nearest", {"nearest", "stochastic"}) == "stochastic") {
  if (!setup.allow_reference)
    p.fail("kind", "expected a compressor that needs no reference point (this algorithm sends "
                   "differences, which the lattice quantizer cannot decode; use none, fp16, "
                   "qsgd, topk, randomk or sign)");
}

std::string LatticeQuantizer::describe() const {
  return "lattice (" + std::to_string(bits_) + " bits, side " + format_number(side_) +
         (stochastic_ ? ", stochastic rounding" : "") + ")";
}

std::int64_t LatticeQuantizer::encoded_bytes(std::size_t dim) const {
  return (static_cast<std::int64_t>(dim) * bits_ + 7) / 8;
}

EncodeStats LatticeQuantizer::encode(std::span<const float> x, std::span<float> wire, Rng& rng) {
  EncodeStats st;
  UniformStream u(rng);
  const double inv = 1.0 / side_;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = static_cast<double>(x[i]) * inv;
    double k = stochastic_ ? std::floor(v) : std::nearbyint(v);
    if (stochastic_ && static_cast<double>(u.next()) < v - k)
      k += 1.0;
    // Out-of-range and non-finite values are clamped; the run diverges anyway.
    if (!(std::fabs(k) <= kMaxIndex))
      k = std::isnan(k) ? 0.0 : std::copysign(kMaxIndex, k);
    wire[i] = std::bit_cast<float>(static_cast<std::int32_t>(k));
    const double err = k * side_ - static_cast<double>(x[i]);
    st.error_sq += err * err;
    st.norm_sq += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  return st;
}

std::int64_t LatticeQuantizer::decode(std::span<const float> wire, std::span<const float> ref,
                                      std::span<float> out) const {
  std::int64_t failures = 0;
  const double q = static_cast<double>(levels_);
  const double qs = q * side_;
  const auto mask = static_cast<std::uint32_t>(levels_ - 1);
  for (std::size_t i = 0; i < wire.size(); ++i) {
    const auto k = std::bit_cast<std::int32_t>(wire[i]);
    const auto e = static_cast<std::int64_t>(static_cast<std::uint32_t>(k) & mask); // k mod q
    const double m = std::nearbyint(static_cast<double>(ref[i]) / qs - static_cast<double>(e) / q);
    const double decoded = static_cast<double>(e) + q * m;
    if (decoded != static_cast<double>(k))
      ++failures;
    out[i] = static_cast<float>(decoded * side_);
  }
  return failures;
}

} // namespace dtsim
