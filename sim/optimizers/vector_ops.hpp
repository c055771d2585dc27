// SPDX-License-Identifier: MIT
// ResidentVectors::apply's element-wise steps and a pairwise method's evaluation mean on host
// vectors: the one definition that a method's host path and the CPU resident backend both
// run, so that their results are the same bits.
#pragma once

#include "sim/core/errors.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <cmath>
#include <span>

namespace dtsim {

// dst = op(a, b, s, t) (ResidentVectors::VectorOp); dst may be a. Not server_step, which
// updates two vectors (its host code is server_step.hpp's), nor the steps on the double
// sum (accumulate_rows, mean_of_sum below).
inline void apply_vector_op(ResidentVectors::VectorOp op, std::span<float> dst,
                            std::span<const float> a, std::span<const float> b, float s,
                            float t = 0.0f) {
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
  case Op::add:
    d += as_vec(a);
    return;
  case Op::divide:
    d /= s;
    return;
  case Op::zero:
    d.setZero();
    return;
  case Op::delay_compensate: // g += lambda g.*g.*(w - bak), DelayCompensation's constant form
    d.array() += s * d.array().square() * (as_vec(a) - as_vec(b)).array();
    return;
  case Op::subtract:
    d = as_vec(a) - as_vec(b);
    return;
  case Op::average_less: // SwarmSGD's (q_i + q_j) / 2 - (o - y), dst holding o - y
    d = (as_vec(a) + as_vec(b)) * 0.5f - d;
    return;
  case Op::average_step_less: // its increment form, a = q_i
    d = ((as_vec(a) + as_vec(b)) * 0.5f - as_vec(a)) - d;
    return;
  case Op::average_step_add: // blocking SwarmSGD's increment form, dst = y, a = q_i
    d += (as_vec(a) + as_vec(b)) * 0.5f - as_vec(a);
    return;
  case Op::mean_square: // DelayCompensation's adaptive MS = decay MS + (1 - decay) g.*g
    d = s * d + t * as_vec(a).cwiseAbs2();
    return;
  case Op::delay_compensate_adaptive:
    // g += lambda (1 / sqrt(MS + eps)) .* g.*g .* (w - bak), element by element with IEEE
    // square roots and divisions: Eigen's packet rsqrt and sqrt are estimates refined once
    // (EIGEN_FAST_MATH) and its scalar ones are not, so an Eigen expression rounded the
    // elements of an unaligned head otherwise than the rest.
    for (std::size_t e = 0; e < dst.size(); ++e)
      dst[e] = dst[e] + s * (1.0f / std::sqrt(a[e] + t)) * (dst[e] * dst[e]) * b[e];
    return;
  case Op::server_step:
  case Op::accumulate:
  case Op::mean_of_sum:
    break;
  }
  DTSIM_ASSERT(false, "apply_vector_op: a server step or a step on the double sum");
}

// GSGM's running sum of its table's rows, in double so that it does not drift from the
// exact mean: sum += a (add) or sum -= a.
inline void accumulate_rows(Eigen::Ref<Eigen::VectorXd> sum, std::span<const float> a, bool add) {
  if (add)
    sum += as_vec(a).cast<double>();
  else
    sum -= as_vec(a).cast<double>();
}

// out = sum / count (times the reciprocal, in double), rounded to float.
inline void mean_of_sum(std::span<float> out, const Eigen::Ref<const Eigen::VectorXd>& sum,
                        double count) {
  as_vec(out) = (sum * (1.0 / count)).cast<float>();
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
