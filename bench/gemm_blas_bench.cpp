// SPDX-License-Identifier: MIT
// dtsim_gemm_blas_bench: dtsim's GEMM (Eigen's packing and micro-kernel, models/gemm.cpp)
// against a CBLAS library's sgemm on the MLP 784-256-128-10's GEMM shapes, one thread, so
// that "use a BLAS library instead" is a measured choice. Built only where Debian's OpenBLAS
// (libopenblas-dev) is installed; link another CBLAS by hand to compare it (BLIS: see
// docs/benchmarks.md).
#include "models/gemm.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

using namespace dtsim;

namespace {

struct Shape {
  int m, n, k;
  bool trans_a, trans_b;
  const char* name;
};

// Best of 7 repetitions of 200 calls, in GFLOP/s.
template <class F> double gflops(double flops, const F& f) {
  for (int i = 0; i < 20; ++i)
    f();
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i)
      f();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count() / 200);
  }
  return flops / best / 1e9;
}

} // namespace

int main() {
  // One thread in the library too (OpenBLAS's pthread build would otherwise use both cores).
  openblas_set_num_threads(1);
  const Shape shapes[] = {{256, 128, 784, false, false, "layer 1 forward, batch 128"},
                          {256, 784, 128, false, true, "layer 1 dW, batch 128"},
                          {128, 128, 256, false, false, "layer 2 forward, batch 128"},
                          {128, 256, 128, false, true, "layer 2 dW, batch 128"},
                          {256, 128, 128, true, false, "layer 2 dX, batch 128"},
                          {256, 32, 784, false, false, "layer 1 forward, batch 32"},
                          {256, 784, 32, false, true, "layer 1 dW, batch 32"}};
  Rng rng = Rng::stream(1, "gemm-bench", Rng::kNoNode);
  std::printf("%-28s %14s %14s %12s\n", "C = op(A) op(B)", "dtsim GFLOP/s", "cblas GFLOP/s",
              "max |diff|");
  for (const Shape& s : shapes) {
    const int a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    std::vector<float> a(static_cast<std::size_t>(a_rows) * a_cols),
        b(static_cast<std::size_t>(b_rows) * b_cols), c(static_cast<std::size_t>(s.m) * s.n),
        c_blas(c.size());
    for (float& v : a)
      v = static_cast<float>(rng.uniform(-1.0, 1.0));
    for (float& v : b)
      v = static_cast<float>(rng.uniform(-1.0, 1.0));
    GemmScratch scratch;
    scratch.reserve(s.m, s.n, s.k);
    const double flops = 2.0 * s.m * s.n * s.k;
    const double ours = gflops(flops, [&] {
      gemm(s.trans_a, mat_map(static_cast<const float*>(a.data()), a_rows, a_cols, a_rows),
           s.trans_b, mat_map(static_cast<const float*>(b.data()), b_rows, b_cols, b_rows),
           mat_map(c.data(), s.m, s.n, s.m), GemmInit::Zero, nullptr, scratch);
    });
    const double theirs = gflops(flops, [&] {
      cblas_sgemm(CblasColMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                  s.trans_b ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), a_rows,
                  b.data(), b_rows, 0.0f, c_blas.data(), s.m);
    });
    double diff = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      diff = std::max(diff, static_cast<double>(std::abs(c[i] - c_blas[i])));
    std::printf("%-28s %14.1f %14.1f %12.2g\n", s.name, ours, theirs, diff);
  }
  return 0;
}
