// SPDX-License-Identifier: MIT
// Measures one core's single-precision FMA throughput, the yardstick for kernel efficiency.
#pragma once

#include <string>
#include <vector>

namespace dtsim {

struct FmaPeak {
  std::string isa;   // "avx2" (256-bit FMA) or "avx512" (512-bit FMA)
  double gflops = 0; // one thread, best of five ~0.2 s repetitions
};

// GFLOP/s of one thread issuing only independent FMAs, for every vector width this CPU
// executes (AVX2 always on x86-64-v3; AVX-512 where the CPU has it, read at run time), widest
// last. This is the practical peak that a GEMM on this core can approach; a build for a
// narrower ISA than the CPU's reaches at most the narrower figure.
std::vector<FmaPeak> measure_fma_peaks();

} // namespace dtsim
