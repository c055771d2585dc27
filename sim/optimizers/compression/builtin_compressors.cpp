// SPDX-License-Identifier: MIT
// The explicit list of built-in compressors (no static self-registration).
#include "sim/optimizers/compression/cast_compressor.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/compression/lattice_quantizer.hpp"
#include "sim/optimizers/compression/qsgd.hpp"
#include "sim/optimizers/compression/random_k.hpp"
#include "sim/optimizers/compression/sign_compressor.hpp"
#include "sim/optimizers/compression/top_k.hpp"

namespace dtsim {

namespace {

CompressorRegistry builtin_compressors() {
  using Setup = const CompressorSetup&;
  CompressorRegistry r;
  r.add("none", "float32, exact (4 bytes per coordinate)",
        [](const Params&, Setup) { return std::make_unique<CastCompressor>(false); });
  r.add("fp16", "IEEE half precision (2 bytes per coordinate)",
        [](const Params&, Setup) { return std::make_unique<CastCompressor>(true); });
  r.add("qsgd", "stochastic quantization to 2^bits-1 levels of the bucket norm; unbiased",
        [](const Params& p, Setup s) { return std::make_unique<Qsgd>(p, s); });
  r.add("topk", "largest-magnitude fraction `ratio` of the coordinates",
        [](const Params& p, Setup s) { return std::make_unique<TopK>(p, s); });
  r.add("randomk", "random fraction `ratio` of the coordinates; unbiased (scaled) or not",
        [](const Params& p, Setup s) { return std::make_unique<RandomK>(p, s); });
  r.add("sign", "one sign bit per coordinate, scaled by the mean magnitude",
        [](const Params&, Setup) { return std::make_unique<SignCompressor>(); });
  r.add("lattice", "SwarmSGD's modular lattice quantizer, decoded against the receiver's model",
        [](const Params& p, Setup s) { return std::make_unique<LatticeQuantizer>(p, s); });
  return r;
}

} // namespace

CompressorRegistry& compressor_registry() {
  static CompressorRegistry registry = builtin_compressors();
  return registry;
}

} // namespace dtsim
