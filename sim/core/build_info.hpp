// SPDX-License-Identifier: MIT
// What this binary is: version, commit, compiler and the instruction set it was built for.
// Traces and reports record it, because results may differ between builds and ISAs.
#pragma once

#include <string>

namespace dtsim {

struct BuildInfo {
  std::string version;
  std::string commit;   // git commit, "-dirty" if tracked files differed; "unknown" outside git
  std::string compiler; // e.g. "GNU 12.2.0"
  std::string march;    // the -march= value, empty for the compiler default
  std::string isa;      // widest vector extension the code was compiled for: avx512, avx2, ...
};

const BuildInfo& build_info();

// The widest vector extension enabled in this translation unit's compilation.
constexpr const char* compiled_isa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2+fma";
#elif defined(__AVX__)
  return "avx";
#elif defined(__SSE2__)
  return "sse2";
#elif defined(__ARM_NEON)
  return "neon";
#else
  return "generic";
#endif
}

} // namespace dtsim
