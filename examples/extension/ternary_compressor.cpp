// SPDX-License-Identifier: MIT
#include "ternary_compressor.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using namespace dtsim;

class TernaryCompressor final : public Compressor {
public:
  explicit TernaryCompressor(std::size_t dim) : uniforms_(dim) {}

  std::string describe() const override { return "ternary (example, stochastic, 2 bits)"; }

  std::int64_t encoded_bytes(std::size_t dim) const override {
    return 4 + static_cast<std::int64_t>((2 * dim + 7) / 8); // s, then 2 bits per coordinate
  }

  // Writes the receiver's reconstruction itself (wire_is_decoded() stays true), as the
  // built-in unbiased quantizers do; the network is charged encoded_bytes().
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override {
    float s = 0;
    for (const float v : x)
      s = std::max(s, std::abs(v));
    fill_uniforms(rng, std::span<float>(uniforms_).first(x.size())); // scratch: no allocation
    EncodeStats st;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const bool keep = s > 0 && uniforms_[k] * s < std::abs(x[k]);
      wire[k] = keep ? std::copysign(s, x[k]) : 0.0f;
      st.norm_sq += static_cast<double>(x[k]) * x[k];
      st.error_sq += static_cast<double>(wire[k] - x[k]) * (wire[k] - x[k]);
    }
    return st;
  }

private:
  std::vector<float> uniforms_;
};

} // namespace

std::unique_ptr<Compressor> make_ternary_compressor(const Params&, const CompressorSetup& setup) {
  return std::make_unique<TernaryCompressor>(setup.dim);
}
