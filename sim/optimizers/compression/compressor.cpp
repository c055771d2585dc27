// SPDX-License-Identifier: MIT
// The default decode and the compressor factory (kind + error feedback).
#include "sim/optimizers/compression/compressor.hpp"

#include "sim/core/flat_vector.hpp"
#include "sim/optimizers/compression/error_feedback.hpp"

namespace dtsim {

std::int64_t Compressor::decode(std::span<const float> wire, std::span<const float>,
                                std::span<float> out) const {
  as_vec(out) = as_vec(wire);
  return 0;
}

void fill_uniforms(Rng& rng, std::span<float> out) {
  const std::size_t n = out.size();
  std::size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const std::uint64_t r = rng.next_u64();
    out[i] = static_cast<float>(r >> 40) * 0x1p-24f;
    out[i + 1] = static_cast<float>((r >> 8) & 0xFFFFFFu) * 0x1p-24f;
  }
  if (i < n)
    out[i] = static_cast<float>(rng.next_u64() >> 40) * 0x1p-24f;
}

std::unique_ptr<Compressor> make_compressor(const Params& p, const CompressorSetup& setup,
                                            const std::string& default_kind) {
  std::unique_ptr<Compressor> c = builtin_compressors().make(p, "kind", default_kind, setup);
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
