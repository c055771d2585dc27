// SPDX-License-Identifier: MIT
// An out-of-tree compressor: stochastic ternary quantization (TernGrad, Wen et al. 2017).
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

#include <memory>

// Each coordinate becomes s * sign(x_k) * b_k, with s = max_k |x_k| and b_k ~ Bernoulli(|x_k| / s):
// unbiased, 2 bits per coordinate plus the float s on the wire. No keys.
std::unique_ptr<dtsim::Compressor> make_ternary_compressor(const dtsim::Params& p,
                                                           const dtsim::CompressorSetup& setup);
