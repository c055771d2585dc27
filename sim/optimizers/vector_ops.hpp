// SPDX-License-Identifier: MIT
// ResidentVectors::apply's element-wise steps and a pairwise method's evaluation mean on host
// vectors: the one definition that a method's host path and the CPU resident backend both
// run, so that their results are the same bits.
#pragma once

#include "sim/core/errors.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <span>

namespace dtsim {

// dst = op(a, b, s) (ResidentVectors::VectorOp); dst may be a. Not server_step, which
// updates two vectors: its host code is server_step.hpp's.
inline void apply_vector_op(ResidentVectors::VectorOp op, std::span<float> dst,
                            std::span<const float> a, std::span<const float> b, float s) {
  using Op = ResidentVectors::VectorOp;
  VecMap d = as_vec(dst);
  switch (op) {
  case Op::copy:
    d = as_vec(a);
    return;
  case Op::average:
    d = (as_vec(a) + as_vec(b)) * 0.5f;
    return;
  case Op::add_half_difference:
    d += (as_vec(a) - as_vec(b)) * 0.5f;
    return;
  case Op::subtract_scaled:
    d -= s * as_vec(a);
    return;
  case Op::server_step:
    break;
  }
  DTSIM_ASSERT(false, "apply_vector_op: server_step runs as server_step.hpp's code");
}

// out = the mean of the columns of `m` (one per node), summed in column order.
inline void mean_of_columns(const Eigen::Ref<const Eigen::MatrixXf>& m, std::span<float> out) {
  VecMap o = as_vec(out);
  o = m.col(0);
  for (Eigen::Index i = 1; i < m.cols(); ++i)
    o += m.col(i);
  o /= static_cast<float>(m.cols());
}

} // namespace dtsim
