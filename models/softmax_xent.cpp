// SPDX-License-Identifier: MIT
// Numerically stable softmax cross-entropy (log-sum-exp with the column maximum subtracted).
#include "models/softmax_xent.hpp"

#include "sim/core/errors.hpp"

#include <cmath>

namespace dtsim {
namespace {

std::int32_t checked_label(const std::int32_t* labels, Eigen::Index j, Eigen::Index classes) {
  const std::int32_t y = labels[j];
  DTSIM_ASSERT(y >= 0 && y < classes, "label out of range for the model's classes");
  return y;
}

} // namespace

double softmax_xent_grad(ConstMatMap logits, const std::int32_t* labels, MatMap dlogits) {
  const Eigen::Index n = logits.cols();
  DTSIM_ASSERT(n >= 1 && dlogits.rows() == logits.rows() && dlogits.cols() == n,
               "softmax_xent_grad: bad shapes");
  const float inv_n = 1.0f / static_cast<float>(n);
  double loss_sum = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const std::int32_t y = checked_label(labels, j, logits.rows());
    const float m = logits.col(j).maxCoeff();
    auto e = dlogits.col(j);
    e = (logits.col(j).array() - m).exp().matrix();
    const float sum = e.sum(); // >= 1: the maximum contributes exp(0)
    loss_sum += static_cast<double>(std::log(sum) - (logits(y, j) - m));
    e *= inv_n / sum;
    e(y) -= inv_n;
  }
  return loss_sum / static_cast<double>(n);
}

EvalResult softmax_xent_eval(ConstMatMap logits, const std::int32_t* labels) {
  EvalResult r;
  r.count = logits.cols();
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    const std::int32_t y = checked_label(labels, j, logits.rows());
    Eigen::Index arg = 0;
    const float m = logits.col(j).maxCoeff(&arg);
    const float sum = (logits.col(j).array() - m).exp().sum();
    r.loss_sum += static_cast<double>(std::log(sum) - (logits(y, j) - m));
    r.correct += arg == y ? 1 : 0;
  }
  return r;
}

} // namespace dtsim
