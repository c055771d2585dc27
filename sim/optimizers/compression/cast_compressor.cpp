// SPDX-License-Identifier: MIT
// Float32 and float16 casts.
#include "sim/optimizers/compression/cast_compressor.hpp"

#include "sim/core/flat_vector.hpp"

namespace dtsim {

std::int64_t CastCompressor::encoded_bytes(std::size_t dim) const {
  return static_cast<std::int64_t>(dim) * (half_ ? 2 : 4);
}

EncodeStats CastCompressor::encode(std::span<const float> x, std::span<float> wire, Rng&) {
  EncodeStats st;
  const auto xv = as_vec(x);
  auto w = as_vec(wire);
  st.norm_sq = static_cast<double>(xv.squaredNorm());
  if (!half_) {
    w = xv;
    return st;
  }
  for (std::size_t k = 0; k < x.size(); ++k)
    wire[k] = static_cast<float>(Eigen::half(x[k]));
  st.error_sq = static_cast<double>((w - xv).squaredNorm());
  return st;
}

} // namespace dtsim
