// SPDX-License-Identifier: MIT
// Constant and adaptive delay compensation.
#include "sim/optimizers/delay_compensation.hpp"

#include "sim/optimizers/vector_ops.hpp"

namespace dtsim {

DelayCompensation::DelayCompensation(const Params& p, int workers, std::size_t dim)
    : adaptive_(p.choice("variant", "constant", {"constant", "adaptive"}) == "adaptive"),
      backup_(workers, dim) {
  lambda_ = static_cast<float>(p.number("lambda", adaptive_ ? 2.0 : 0.04, Range::non_negative()));
  if (adaptive_) {
    ms_decay_ = static_cast<float>(p.number("ms_decay", 0.95, Range::unit_open_hi()));
    eps_ = static_cast<float>(p.number("eps", 1e-7, Range::positive()));
    ms_ = Vec::Zero(static_cast<Eigen::Index>(dim));
    difference_.resize(static_cast<Eigen::Index>(dim));
  }
}

void DelayCompensation::remember_all(const Vec& w) {
  for (std::size_t k = 0; k < backup_.size(); ++k)
    backup_[k] = w;
}

// The resident steps' code (vector_ops.hpp), on the host's vectors.
void DelayCompensation::compensate(int worker, std::span<float> g, const Vec& w) {
  using Op = ResidentVectors::VectorOp;
  const auto span = [](const Vec& v) {
    return std::span<const float>(v.data(), static_cast<std::size_t>(v.size()));
  };
  const Vec& bak = backup_[static_cast<std::size_t>(worker)];
  if (!adaptive_) {
    apply_vector_op(Op::delay_compensate, g, span(w), span(bak), lambda_);
    return;
  }
  const std::span<float> ms(ms_.data(), static_cast<std::size_t>(ms_.size()));
  const std::span<float> difference(difference_.data(),
                                    static_cast<std::size_t>(difference_.size()));
  apply_vector_op(Op::mean_square, ms, g, {}, ms_decay_, 1 - ms_decay_);
  apply_vector_op(Op::subtract, difference, span(w), span(bak), 0.0f);
  apply_vector_op(Op::delay_compensate_adaptive, g, ms, difference, lambda_, eps_);
}

void DelayCompensation::compensate_resident(ResidentVectors& r, ResidentVectors::VectorRef row,
                                            int worker) const {
  using Op = ResidentVectors::VectorOp;
  using Ref = ResidentVectors::VectorRef;
  if (!adaptive_) {
    r.apply(Op::delay_compensate, row, Ref::server_model(), Ref::model(worker), lambda_);
    return;
  }
  r.apply(Op::mean_square, Ref::server_mean_square(), row, {}, ms_decay_, 1 - ms_decay_);
  r.apply(Op::subtract, Ref::server_scratch(), Ref::server_model(), Ref::model(worker));
  r.apply(Op::delay_compensate_adaptive, row, Ref::server_mean_square(), Ref::server_scratch(),
          lambda_, eps_);
}

std::size_t DelayCompensation::state_bytes() const {
  return static_cast<std::size_t>(ms_.size() + difference_.size()) * sizeof(float) +
         backup_.bytes();
}

std::string DelayCompensation::describe() const {
  return std::string(adaptive_ ? "adaptive" : "constant") + " lambda " +
         format_number(static_cast<double>(lambda_));
}

} // namespace dtsim
