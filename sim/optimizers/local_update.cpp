// SPDX-License-Identifier: MIT
// Weight decay and local momentum on flat vectors.
#include "sim/optimizers/local_update.hpp"

#include <algorithm>

namespace dtsim {

LocalUpdate::LocalUpdate(const Params& p, int nodes, std::size_t dim, const Options& options) {
  beta_text_ = p.number("momentum", options.momentum, Range::unit_open_hi());
  beta_ = static_cast<float>(beta_text_);
  nesterov_ = options.nesterov_key ? p.flag("nesterov", options.nesterov) : options.nesterov;
  if (options.weight_decay_key)
    weight_decay_ = static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()));
  if (beta_ > 0)
    m_ = NodeVectors(nodes, dim);
}

void LocalUpdate::direction(int node, std::span<const float> grad, std::span<const float> x,
                            std::span<float> out) {
  direction(rule(), grad, x,
            beta_ > 0 ? m_.span(static_cast<std::size_t>(node)).first(out.size())
                      : std::span<float>(),
            out);
}

void LocalUpdate::direction(const ResidentVectors::LocalUpdateRule& rule,
                            std::span<const float> grad, std::span<const float> x,
                            std::span<float> m_all, std::span<float> out) {
  VecMap u = as_vec(out);
  if (rule.weight_decay > 0)
    u = as_vec(grad) + rule.weight_decay * as_vec(x);
  else if (out.data() != grad.data())
    u = as_vec(grad);
  if (rule.momentum > 0) {
    VecMap m = as_vec(m_all);
    m = rule.momentum * m + u;
    if (rule.nesterov)
      u += rule.momentum * m;
    else
      u = m;
  }
}

void LocalUpdate::step(int node, std::span<const float> grad, std::span<const float> x, float lr,
                       std::span<float> out) {
  step(rule(), grad, x, lr,
       beta_ > 0 ? m_.span(static_cast<std::size_t>(node)).first(out.size()) : std::span<float>(),
       out);
}

void LocalUpdate::step(const ResidentVectors::LocalUpdateRule& rule, std::span<const float> grad,
                       std::span<const float> x, float lr, std::span<float> m_all,
                       std::span<float> out) {
  // Blocked so that each block of g, x and m is read once from memory: the whole step is
  // bandwidth-bound (it touches every parameter a few times and does 2-4 flops on each).
  constexpr std::size_t kBlock = 2048;
  const float beta = rule.momentum, weight_decay = rule.weight_decay;
  for (std::size_t first = 0; first < out.size(); first += kBlock) {
    const std::size_t len = std::min(kBlock, out.size() - first);
    const auto g = as_vec(grad.subspan(first, len));
    const auto xb = as_vec(x.subspan(first, len));
    auto o = as_vec(out.subspan(first, len));
    if (beta == 0) {
      o = xb - lr * (g + weight_decay * xb);
      continue;
    }
    auto m = as_vec(m_all.subspan(first, len));
    if (rule.quasi_global) { // m is read, not written (QG-DSGDm's buffer)
      if (rule.nesterov)
        o = xb - lr * ((g + weight_decay * xb) + beta * (beta * m + g + weight_decay * xb));
      else
        o = xb - lr * (beta * m + g + weight_decay * xb);
      continue;
    }
    m = beta * m + g + weight_decay * xb;
    if (rule.nesterov)
      o = xb - lr * (g + weight_decay * xb + beta * m);
    else
      o = xb - lr * m;
  }
}

std::size_t LocalUpdate::state_bytes() const {
  return m_.bytes();
}

} // namespace dtsim
