// SPDX-License-Identifier: MIT
// Constant and adaptive delay compensation.
#include "sim/optimizers/delay_compensation.hpp"

#include "sim/optimizers/vector_ops.hpp"

namespace dtsim {

DelayCompensation::DelayCompensation(const Params& p, int workers, std::size_t dim)
    : adaptive_(p.choice("variant", "constant", {"constant", "adaptive"}) == "adaptive") {
  lambda_ = static_cast<float>(p.number("lambda", adaptive_ ? 2.0 : 0.04, Range::non_negative()));
  if (adaptive_) {
    ms_decay_ = static_cast<float>(p.number("ms_decay", 0.95, Range::unit_open_hi()));
    eps_ = static_cast<float>(p.number("eps", 1e-7, Range::positive()));
    ms_ = Vec::Zero(static_cast<Eigen::Index>(dim));
  }
  backup_.assign(static_cast<std::size_t>(workers), Vec(static_cast<Eigen::Index>(dim)));
}

void DelayCompensation::remember_all(const Vec& w) {
  for (Vec& b : backup_)
    b = w;
}

void DelayCompensation::compensate(int worker, std::span<float> g, const Vec& w) {
  VecMap gv = as_vec(g);
  const Vec& bak = backup_[static_cast<std::size_t>(worker)];
  if (adaptive_) {
    ms_ = ms_decay_ * ms_ + (1 - ms_decay_) * gv.cwiseAbs2();
    gv.array() += lambda_ * (ms_.array() + eps_).rsqrt() * gv.array().square() * (w - bak).array();
  } else { // the resident step's code (vector_ops.hpp)
    apply_vector_op(ResidentVectors::VectorOp::delay_compensate, g,
                    {w.data(), static_cast<std::size_t>(w.size())},
                    {bak.data(), static_cast<std::size_t>(bak.size())}, lambda_);
  }
}

std::size_t DelayCompensation::state_bytes() const {
  std::size_t floats = static_cast<std::size_t>(ms_.size());
  for (const Vec& b : backup_)
    floats += static_cast<std::size_t>(b.size());
  return floats * sizeof(float);
}

std::string DelayCompensation::describe() const {
  return std::string(adaptive_ ? "adaptive" : "constant") + " lambda " +
         format_number(static_cast<double>(lambda_));
}

} // namespace dtsim
