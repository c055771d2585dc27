// SPDX-License-Identifier: MIT
// Modular lattice encoding and nearest-to-reference decoding.
#include "sim/optimizers/compression/lattice_quantizer.hpp"

#include "sim/core/flat_vector.hpp"

#include <cmath>
#include <cstdint>

namespace dtsim {
namespace {
// Indices are kept below 2^24 in magnitude, so that they and every step of decode are exact
// in float arithmetic: |x| up to 2^24 * side, far beyond any trained weight.
constexpr float kMaxIndex = 16777215.0f;
// The loops are Eigen array expressions: they vectorize (rint and floor included), which
// plain loops over std::nearbyint do not under GCC's default floating-point flags.
using Arr = Eigen::ArrayXf;
} // namespace

LatticeQuantizer::LatticeQuantizer(int bits, double side, bool stochastic)
    : bits_(bits), levels_(std::int64_t{1} << bits), side_(side), stochastic_(stochastic) {}

LatticeQuantizer::LatticeQuantizer(const Params& p, const CompressorSetup& setup)
    : LatticeQuantizer(static_cast<int>(p.integer("bits", 8, Range::between(1, 16))),
                       // Within single precision's normal range, so that the cells (and coordinates
                       // divided by them) stay finite floats.
                       p.number("side", 1e-4, Range::between(1e-30, 1e30)),
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
  const float inv = static_cast<float>(1.0 / side_);
  const auto xa = as_vec(x).array();
  auto w = as_vec(wire).array();
  if (stochastic_) {
    if (uniforms_.size() != x.size())
      uniforms_.resize(x.size()); // once: instances are made for one dimension
    fill_uniforms(rng, uniforms_);
    // floor(v + u), u uniform in [0, 1): v rounded up with probability frac(v), unbiased.
    w = (xa * inv + as_vec(std::span<const float>(uniforms_)).array()).floor();
  } else {
    w = (xa * inv).rint();
  }
  // Out-of-range indices are clamped; such a run diverges anyway (NaN stays NaN and is
  // counted as a decode failure).
  w = w.max(-kMaxIndex).min(kMaxIndex);
  EncodeStats st;
  st.norm_sq = static_cast<double>(as_vec(x).squaredNorm());
  st.error_sq = static_cast<double>((w * static_cast<float>(side_) - xa).matrix().squaredNorm());
  return st;
}

std::int64_t LatticeQuantizer::decode(std::span<const float> wire, std::span<const float> ref,
                                      std::span<float> out) const {
  const float q = static_cast<float>(levels_);
  const float inv_q = 1.0f / q; // a power of two: exact
  const float inv_qs = static_cast<float>(1.0 / (static_cast<double>(levels_) * side_));
  const auto k = as_vec(wire).array();
  auto o = as_vec(out).array();
  // e = k mod q is all a receiver sees; the lattice point congruent to e nearest the
  // reference is e + q * rint(ref/(q s) - e/q), exact in float (see kMaxIndex).
  const auto e = k - q * (k * inv_q).floor();
  o = e + q * (as_vec(ref).array() * inv_qs - e * inv_q).rint();
  const auto failures = static_cast<std::int64_t>((o != k).count());
  o *= static_cast<float>(side_);
  return failures;
}

void LatticeQuantizer::own_view(std::span<const float> wire, std::span<const float>,
                                std::span<float> out) const {
  as_vec(out) = as_vec(wire) * static_cast<float>(side_);
}

} // namespace dtsim
