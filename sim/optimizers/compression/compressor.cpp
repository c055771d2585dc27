// SPDX-License-Identifier: MIT
// The default decode and the compressor factory (kind + error feedback).
#include "sim/optimizers/compression/compressor.hpp"

#include "sim/core/flat_vector.hpp"
#include "sim/optimizers/compression/error_feedback.hpp"

#include <algorithm>

namespace dtsim {

std::int64_t Compressor::decode(std::span<const float> wire, std::span<const float>,
                                std::span<float> out) const {
  as_vec(out) = as_vec(wire);
  return 0;
}

void fill_uniforms(Rng& rng, std::span<float> out) {
  const std::size_t n = out.size();
  for (std::size_t i = 0; i < n; i += 4) {
    std::uint64_t r = rng.next_u64();
    for (std::size_t j = i; j < std::min(i + 4, n); ++j, r >>= 16)
      out[j] = (static_cast<float>(r & 0xFFFFu) + 0.5f) * 0x1p-16f;
  }
}

std::unique_ptr<Compressor> make_compressor(const Params& p, const CompressorSetup& setup,
                                            const std::string& default_kind) {
  std::unique_ptr<Compressor> c = compressor_registry().make(p, "kind", default_kind, setup);
  if (!setup.allow_error_feedback) {
    if (p.has("error_feedback"))
      p.fail("error_feedback",
             "expected no error_feedback key: this algorithm has error feedback built "
             "in (its public estimates keep what a message left out)");
    return c;
  }
  if (p.flag("error_feedback", false))
    return std::make_unique<ErrorFeedback>(std::move(c), setup.dim);
  return c;
}

} // namespace dtsim
