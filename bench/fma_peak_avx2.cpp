// SPDX-License-Identifier: MIT
// The FMA-peak loop with 256-bit vectors (compiled with -mavx2 -mfma).
#include "bench/fma_chains.hpp"

#include <immintrin.h>

namespace dtsim {
namespace {
struct Avx2 {
  static __m256 set1(float v) { return _mm256_set1_ps(v); }
  static __m256 fmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
  static __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
  static float first(__m256 a) { return _mm256_cvtss_f32(a); }
};
} // namespace

double run_fma_avx2(std::int64_t iterations, volatile float& sink) {
  return fma_chains::run<Avx2>(iterations, sink);
}

} // namespace dtsim
