// SPDX-License-Identifier: MIT
// Measures one core's single-precision FMA throughput, the yardstick for kernel efficiency.
#pragma once

namespace dtsim {

// GFLOP/s of one thread issuing only independent 256-bit FMAs (AVX2: 8 lanes x 2 flops per
// instruction); best of several ~0.2 s repetitions. This is the practical peak that a GEMM
// on this core can approach.
double measure_fma_peak_gflops_per_core();

} // namespace dtsim
