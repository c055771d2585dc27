// SPDX-License-Identifier: MIT
// The FMA-peak loop with 512-bit vectors (compiled with -mavx512f; called only where the CPU
// has AVX-512).
#include "bench/fma_chains.hpp"

#include <immintrin.h>

namespace dtsim {
namespace {
struct Avx512 {
  static __m512 set1(float v) { return _mm512_set1_ps(v); }
  static __m512 fmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
  static __m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
  static float first(__m512 a) { return _mm512_cvtss_f32(a); }
};
} // namespace

double run_fma_avx512(std::int64_t iterations, volatile float& sink) {
  return fma_chains::run<Avx512>(iterations, sink);
}

} // namespace dtsim
