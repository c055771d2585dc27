// SPDX-License-Identifier: MIT
// Goto-style blocked GEMM driver over Eigen 3.4's packing routines and gebp micro-kernel.
#include "models/gemm.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>

// Eigen's public products get their packing buffers per call (from the heap above
// EIGEN_STACK_ALLOCATION_LIMIT, 128 KiB, which the 256x784 layer exceeds) and cannot be given
// caller-owned ones, so this file drives the same internal building blocks that
// Eigen::internal::general_matrix_matrix_product::run uses on its sequential path (Eigen
// 3.4): same blocking, same pack routines, same gebp micro-kernel, hence the same speed.
// Only this file depends on Eigen internals.

namespace dtsim {
namespace {

using Eigen::Index;
namespace ei = Eigen::internal;

// Eigen sizes its GEMM blocks (and so the order of the float sums) from the cache sizes the
// CPU reports, and VMs of one machine kind report different ones: the same build and seed
// gave quickstart accuracies 0.8686, 0.8659 and 0.8691 on three of them, and on one VM
// setting L1 to 32 KiB instead of its reported 48 KiB moved the result from 0.8691 to 0.8654.
// Fixed sizes (a common x86 server: 32 KiB L1, 1 MiB L2, 32 MiB L3) make a build's results
// independent of what the VM reports. Set before main(), ahead of any product.
const bool kCacheSizesPinned = [] {
  Eigen::setCpuCacheSizes(32 * 1024, 1024 * 1024, 32 * 1024 * 1024);
  return true;
}();

struct Blocking {
  Index kc, mc, nc;
};

// Eigen's own heuristic (from the pinned cache sizes above), as its products use it
// single-threaded.
Blocking blocking_for(Index m, Index n, Index k) {
  DTSIM_ASSERT(kCacheSizesPinned, "cache sizes are pinned before any product");
  Index kc = k, mc = m, nc = n;
  ei::computeProductBlockingSizes<float, float, 1>(kc, mc, nc, Index{1});
  return {kc, std::min(mc, m), std::min(nc, n)};
}

// One streaming pass over all of C before the kernels. Initialising each mc x nc block just
// before its first kernel call instead was measured 10% slower on the 256x784 gradient
// (partial-column writes defeat the hardware prefetcher).
void init_c(MatMap c, GemmInit init, const float* bias) {
  if (init == GemmInit::Zero && c.outerStride() == c.rows())
    Eigen::Map<Eigen::VectorXf>(c.data(), c.size()).setZero(); // one linear vectorised pass
  else if (init == GemmInit::Zero)
    c.setZero();
  else if (init == GemmInit::Bias)
    c.colwise() = Eigen::Map<const Eigen::VectorXf>(bias, c.rows());
}

// C += A * B with Eigen's sequential blocking (see general_matrix_matrix_product::run).
template <int LhsOrder, int RhsOrder>
void gemm_blocked(Index m, Index n, Index k, const float* a, Index lda, const float* b, Index ldb,
                  MatMap c, GemmScratch& scratch) {
  using Traits = ei::gebp_traits<float, float>;
  using LhsMapper = ei::const_blas_data_mapper<float, Index, LhsOrder>;
  using RhsMapper = ei::const_blas_data_mapper<float, Index, RhsOrder>;
  using ResMapper = ei::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;

  ei::gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress,
                    typename Traits::LhsPacket4Packing, LhsOrder>
      pack_lhs;
  ei::gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, RhsOrder> pack_rhs;
  ei::gebp_kernel<float, float, Index, ResMapper, Traits::mr, Traits::nr, false, false> gebp;

  const Blocking bl = blocking_for(m, n, k);
  DTSIM_ASSERT(bl.kc * bl.mc <= scratch.capacity_a() && bl.kc * bl.nc <= scratch.capacity_b(),
               "GemmScratch was not reserved for this product shape");
  const LhsMapper lhs(a, lda);
  const RhsMapper rhs(b, ldb);
  const ResMapper res(c.data(), c.outerStride());
  float* block_a = scratch.block_a();
  float* block_b = scratch.block_b();

  // The rhs block can be packed once when it is not split along k or n (Eigen's rule).
  const bool pack_rhs_once = bl.mc != m && bl.kc == k && bl.nc == n;
  for (Index i2 = 0; i2 < m; i2 += bl.mc) {
    const Index mc = std::min(i2 + bl.mc, m) - i2;
    for (Index k2 = 0; k2 < k; k2 += bl.kc) {
      const Index kc = std::min(k2 + bl.kc, k) - k2;
      pack_lhs(block_a, lhs.getSubMapper(i2, k2), kc, mc);
      for (Index j2 = 0; j2 < n; j2 += bl.nc) {
        const Index nc = std::min(j2 + bl.nc, n) - j2;
        if (!pack_rhs_once || i2 == 0)
          pack_rhs(block_b, rhs.getSubMapper(k2, j2), kc, nc);
        gebp(res.getSubMapper(i2, j2), block_a, block_b, mc, kc, nc, 1.0f);
      }
    }
  }
}

} // namespace

void GemmScratch::reserve(Index m, Index n, Index k) {
  const Blocking bl = blocking_for(m, n, k);
  if (bl.kc * bl.mc > block_a_.size())
    block_a_.resize(bl.kc * bl.mc);
  if (bl.kc * bl.nc > block_b_.size())
    block_b_.resize(bl.kc * bl.nc);
}

void gemm(bool trans_a, ConstMatMap a, bool trans_b, ConstMatMap b, MatMap c, GemmInit init,
          const float* bias, GemmScratch& scratch) {
  const Index m = trans_a ? a.cols() : a.rows();
  const Index k = trans_a ? a.rows() : a.cols();
  const Index n = trans_b ? b.rows() : b.cols();
  DTSIM_ASSERT((trans_b ? b.cols() : b.rows()) == k && c.rows() == m && c.cols() == n,
               "gemm: dimensions do not agree");
  DTSIM_ASSERT(init != GemmInit::Bias || bias != nullptr, "gemm: GemmInit::Bias needs a bias");
  if (m == 0 || n == 0)
    return;
  init_c(c, init, bias);
  if (k == 0)
    return;
  // A transposed column-major operand is the same memory read as row-major.
  const Index lda = a.outerStride(), ldb = b.outerStride();
  if (!trans_a && !trans_b)
    gemm_blocked<Eigen::ColMajor, Eigen::ColMajor>(m, n, k, a.data(), lda, b.data(), ldb, c,
                                                   scratch);
  else if (!trans_a && trans_b)
    gemm_blocked<Eigen::ColMajor, Eigen::RowMajor>(m, n, k, a.data(), lda, b.data(), ldb, c,
                                                   scratch);
  else if (trans_a && !trans_b)
    gemm_blocked<Eigen::RowMajor, Eigen::ColMajor>(m, n, k, a.data(), lda, b.data(), ldb, c,
                                                   scratch);
  else
    gemm_blocked<Eigen::RowMajor, Eigen::RowMajor>(m, n, k, a.data(), lda, b.data(), ldb, c,
                                                   scratch);
}

} // namespace dtsim
