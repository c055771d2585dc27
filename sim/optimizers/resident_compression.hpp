// SPDX-License-Identifier: MIT
// The device form (ResidentCompression) of a method's compressor: which of the built-in
// compressors a resident device backend can run itself, and with which parameters.
#pragma once

#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/compression/compressor.hpp"

#include <cstddef>

namespace dtsim {

// QSGD (by buckets, or one over the whole vector), top-k, random-k, sign, fp16 and float32
// have a device form; anything else (the lattice quantizer, error feedback, a compressor
// added at run time) has none (kind none). `dim`: the vector's length.
ResidentCompression resident_compression(const Compressor& c, std::size_t dim);

} // namespace dtsim
