// SPDX-License-Identifier: MIT
// Single-threaded float GEMM on caller-owned packing buffers: no allocation, fused C init.
#pragma once

#include <Eigen/Core>

namespace dtsim {

using MatMap = Eigen::Map<Eigen::MatrixXf, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstMatMap = Eigen::Map<const Eigen::MatrixXf, Eigen::Unaligned, Eigen::OuterStride<>>;

// Column-major views with an explicit leading dimension (so that leftCols of a workspace
// buffer or a slice of the flat parameter vector can be passed without a copy).
inline MatMap mat_map(float* data, Eigen::Index rows, Eigen::Index cols, Eigen::Index ld) {
  return MatMap(data, rows, cols, Eigen::OuterStride<>(ld));
}
inline ConstMatMap mat_map(const float* data, Eigen::Index rows, Eigen::Index cols,
                           Eigen::Index ld) {
  return ConstMatMap(data, rows, cols, Eigen::OuterStride<>(ld));
}

// The packing buffers of one caller. Eigen's own `noalias()` products put these on the stack
// below 128 KiB and on the heap above it (the 784x256 layer needs 264 KiB), so every step
// would allocate; here they are sized once, by reserve(), for every shape the caller will use.
class GemmScratch {
public:
  // Makes room for an (m x k) * (k x n) product with Eigen's cache blocking.
  void reserve(Eigen::Index m, Eigen::Index n, Eigen::Index k);
  std::size_t bytes() const {
    return sizeof(float) * static_cast<std::size_t>(block_a_.size() + block_b_.size());
  }
  float* block_a() { return block_a_.data(); }
  float* block_b() { return block_b_.data(); }
  Eigen::Index capacity_a() const { return block_a_.size(); }
  Eigen::Index capacity_b() const { return block_b_.size(); }

private:
  Eigen::VectorXf block_a_; // packed lhs panel, kc x mc
  Eigen::VectorXf block_b_; // packed rhs block, kc x nc
};

// What C holds before the product is added: zero (C = AB), the bias in every column
// (C = AB + b 1^T), or its current value (C += AB).
enum class GemmInit { Zero, Bias, Accumulate };

// C = init + op(A) * op(B), op = identity or transpose, all column-major. `bias` (C.rows()
// floats) is read only for GemmInit::Bias. requires: dimensions agree; scratch reserved for
// this shape; C does not alias A or B.
void gemm(bool trans_a, ConstMatMap a, bool trans_b, ConstMatMap b, MatMap c, GemmInit init,
          const float* bias, GemmScratch& scratch);

} // namespace dtsim
