// SPDX-License-Identifier: MIT
// QG-DSGDm: local step from the quasi-global buffer; buffer refresh from the displacement.
#include "sim/optimizers/qg_dsgdm.hpp"

#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/quasi_global.hpp"

#include <algorithm>

namespace dtsim {

QgDsgdm::QgDsgdm(const Params& p, const AlgorithmSetup& setup, bool nesterov)
    : GossipProtocol(p, setup, Options{}), nesterov_(nesterov),
      beta_text_(p.number("momentum", 0.9, Range::unit_open_hi())),
      mu_text_(p.number("mu", 0.9, Range::unit_open_hi())), beta_(static_cast<float>(beta_text_)),
      mu_(static_cast<float>(mu_text_)),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))),
      refresh_period_(p.integer("refresh_period", 1, Range::at_least(1))) {
  mhat_ = NodeVectors(setup.nodes, setup.num_params);
  if (refresh_period_ > 1)
    v_ = NodeVectors(setup.nodes, setup.num_params);
  scratch_ = NodeVectors(setup.nodes, std::min(kBlock, setup.num_params));
}

std::string QgDsgdm::describe() const {
  return std::string(nesterov_ ? "qg-dsgdm-n" : "qg-dsgdm") + " (" + describe_protocol() +
         ", beta " + format_number(beta_text_) + ", mu " + format_number(mu_text_) +
         (refresh_period_ > 1 ? ", refresh every " + std::to_string(refresh_period_) : "") +
         lr_schedule().describe() + ")";
}

std::size_t QgDsgdm::state_bytes() const {
  return GossipProtocol::state_bytes() + mhat_.bytes() + v_.bytes() + scratch_.bytes();
}

ResidentVectors::LocalUpdateRule QgDsgdm::rule() const {
  ResidentVectors::LocalUpdateRule r{beta_, weight_decay_, nesterov_, /*quasi_global=*/true, mu_};
  r.refresh_period = refresh_period_;
  return r;
}

bool QgDsgdm::refreshes_now(int node) const {
  // combine() of step t+1 closes step t: a refresh after every L-th step.
  return refresh_period_ > 1 && task_step(node) % refresh_period_ == 0;
}

bool QgDsgdm::attach_resident(ResidentVectors& vectors) {
  if (!can_attach_resident())
    return false;
  // The backend holds the buffers (with a refresh period, v as the rule's row).
  set_resident(vectors, rule(), {&mhat_, &v_, &scratch_});
  return true;
}

void QgDsgdm::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) {
    resident()->local_step(node, outgoing_id(node), step_lr(node));
    return;
  }
  // LocalUpdate's step with the buffer read, not written: the code a resident backend on
  // the host runs too.
  LocalUpdate::step(rule(), grad, x, step_lr(node), mhat_.span(static_cast<std::size_t>(node)),
                    outgoing(node, 0));
}

void QgDsgdm::combine(int node, std::span<float> x) {
  if (resident()) {
    queue_mix(node);
    if (refreshes_now(node))
      resident()->refresh_after_mix(node);
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  const float lr = mixed_lr(node);
  const std::span<const float> own = sent(node, 0);
  float* mhat = mhat_[i].data();
  float* v = refresh_period_ > 1 ? v_[i].data() : nullptr;
  float* mixed = scratch_[i].data();
  for (std::size_t first = 0; first < x.size(); first += kBlock) {
    const std::size_t len = std::min(kBlock, x.size() - first);
    mix_range(node, 0, own, first, len, mixed);
    if (refresh_period_ == 1)
      quasi_global_refresh(mu_, lr, x.data() + first, mixed, mhat + first, len);
    else
      quasi_global_accumulate(lr, x.data() + first, mixed, v + first, len);
  }
  if (refreshes_now(node))
    quasi_global_refresh_every(mu_, refresh_period_, {mhat, x.size()}, {v, x.size()});
}

} // namespace dtsim
