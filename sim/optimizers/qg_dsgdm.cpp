// SPDX-License-Identifier: MIT
// QG-DSGDm: local step from the quasi-global buffer; buffer refresh from the displacement.
#include "sim/optimizers/qg_dsgdm.hpp"

#include <algorithm>

namespace dtsim {

QgDsgdm::QgDsgdm(const Params& p, const AlgorithmSetup& setup, bool nesterov)
    : GossipProtocol(p, setup, Options{}), nesterov_(nesterov),
      beta_text_(p.number("momentum", 0.9, Range::unit_open_hi())),
      mu_text_(p.number("mu", 0.9, Range::unit_open_hi())), beta_(static_cast<float>(beta_text_)),
      mu_(static_cast<float>(mu_text_)),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))),
      refresh_period_(p.integer("refresh_period", 1, Range::at_least(1))) {
  const auto d = static_cast<Eigen::Index>(setup.num_params);
  const auto n = static_cast<std::size_t>(setup.nodes);
  mhat_.assign(n, Vec::Zero(d));
  if (refresh_period_ > 1)
    v_.assign(n, Vec::Zero(d));
  scratch_.assign(n, Vec(static_cast<Eigen::Index>(std::min(kBlock, setup.num_params))));
}

std::string QgDsgdm::describe() const {
  return std::string(nesterov_ ? "qg-dsgdm-n" : "qg-dsgdm") + " (" + describe_protocol() +
         ", beta " + format_number(beta_text_) + ", mu " + format_number(mu_text_) +
         (refresh_period_ > 1 ? ", refresh every " + std::to_string(refresh_period_) : "") +
         lr_schedule().describe() + ")";
}

std::size_t QgDsgdm::state_bytes() const {
  std::size_t floats = 0;
  for (const auto* vs : {&mhat_, &v_, &scratch_})
    for (const Vec& v : *vs)
      floats += static_cast<std::size_t>(v.size());
  return GossipProtocol::state_bytes() + floats * sizeof(float);
}

void QgDsgdm::local_step(int node, std::span<const float> x, std::span<float> grad) {
  const float lr = step_lr(node);
  const Vec& mhat = mhat_[static_cast<std::size_t>(node)];
  const std::span<float> out = outgoing(node, 0);
  for (std::size_t first = 0; first < out.size(); first += kBlock) {
    const auto len = static_cast<Eigen::Index>(std::min(kBlock, out.size() - first));
    const auto xb = as_vec(x.subspan(first, static_cast<std::size_t>(len)));
    const auto g = as_vec(grad.subspan(first, static_cast<std::size_t>(len)));
    const auto mh = mhat.segment(static_cast<Eigen::Index>(first), len);
    auto o = as_vec(out.subspan(first, static_cast<std::size_t>(len)));
    if (nesterov_)
      o = xb - lr * ((g + weight_decay_ * xb) + beta_ * (beta_ * mh + g + weight_decay_ * xb));
    else
      o = xb - lr * (beta_ * mh + g + weight_decay_ * xb);
  }
}

void QgDsgdm::combine(int node, std::span<float> x) {
  const auto i = static_cast<std::size_t>(node);
  const float lr = mixed_lr(node);
  const std::span<const float> own = sent(node, 0);
  Vec& mhat = mhat_[i];
  float* mixed = scratch_[i].data();
  for (std::size_t first = 0; first < x.size(); first += kBlock) {
    const std::size_t len = std::min(kBlock, x.size() - first);
    mix_range(node, 0, own, first, len, mixed);
    const auto n = static_cast<Eigen::Index>(len);
    const ConstVecMap x_new(mixed, n);
    auto xb = as_vec(x.subspan(first, len));
    auto mh = mhat.segment(static_cast<Eigen::Index>(first), n);
    if (refresh_period_ == 1)
      mh = mu_ * mh + (1 - mu_) * ((xb - x_new) / lr);
    else
      v_[i].segment(static_cast<Eigen::Index>(first), n) += (xb - x_new) / lr;
    xb = x_new;
  }
  // combine() of step t+1 closes step t: a refresh after every L-th step.
  if (refresh_period_ > 1 && task_step(node) % refresh_period_ == 0) {
    mhat = mu_ * mhat + ((1 - mu_) / static_cast<float>(refresh_period_)) * v_[i];
    v_[i].setZero();
  }
}

} // namespace dtsim
