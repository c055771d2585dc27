// SPDX-License-Identifier: MIT
// Scaled sign compression.
#include "sim/optimizers/compression/sign_compressor.hpp"

#include "sim/core/flat_vector.hpp"

namespace dtsim {

std::int64_t SignCompressor::encoded_bytes(std::size_t dim) const {
  return 4 + static_cast<std::int64_t>((dim + 7) / 8);
}

EncodeStats SignCompressor::encode(std::span<const float> x, std::span<float> wire, Rng&) {
  EncodeStats st;
  const auto xv = as_vec(x);
  auto w = as_vec(wire);
  const float scale = x.empty() ? 0.0f : xv.cwiseAbs().sum() / static_cast<float>(x.size());
  for (std::size_t k = 0; k < x.size(); ++k)
    wire[k] = x[k] >= 0.0f ? scale : -scale;
  st.norm_sq = static_cast<double>(xv.squaredNorm());
  st.error_sq = static_cast<double>((w - xv).squaredNorm());
  return st;
}

} // namespace dtsim
