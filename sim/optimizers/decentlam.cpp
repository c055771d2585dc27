// SPDX-License-Identifier: MIT
// DecentLaM: half step, then momentum on the mixed displacement.
#include "sim/optimizers/decentlam.hpp"

#include "sim/optimizers/quasi_global.hpp"

#include <algorithm>

namespace dtsim {

namespace {

GossipProtocol::Options decentlam_options() {
  GossipProtocol::Options o;
  o.async_allowed = false;
  o.async_refusal = "decentlam's momentum acts on the whole gossip displacement, and with "
                    "stale copies it amplifies the delay: even with zero gradients the models "
                    "diverge";
  // On the consensus error the update is heavy ball, x' = W x + beta*(x - x_prev): stable
  // for one fixed symmetric W, but with beta = 0.9 it diverges on the one-peer exponential
  // graph (complex eigenvalues) and on random pairs (switching projections): zero-gradient
  // runs diverged on both before they were refused.
  o.time_varying_allowed = false;
  o.time_varying_refusal = "decentlam's momentum diverges when W changes from round to round";
  return o;
}

} // namespace

DecentLam::DecentLam(const Params& p, const AlgorithmSetup& setup)
    : GossipProtocol(p, setup, decentlam_options()),
      beta_text_(p.number("momentum", 0.9, Range::unit_open_hi())),
      beta_(static_cast<float>(beta_text_)),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))) {
  m_ = NodeVectors(setup.nodes, setup.num_params);
  scratch_ = NodeVectors(setup.nodes, std::min(kBlock, setup.num_params));
}

std::string DecentLam::describe() const {
  return "decentlam (" + describe_protocol() + ", beta " + format_number(beta_text_) +
         lr_schedule().describe() + ")";
}

std::size_t DecentLam::state_bytes() const {
  return GossipProtocol::state_bytes() + m_.bytes() + scratch_.bytes();
}

bool DecentLam::attach_resident(ResidentVectors& vectors) {
  ResidentVectors::LocalUpdateRule rule;
  rule.weight_decay = weight_decay_;
  rule.decentlam = true;
  rule.mu = beta_;
  set_resident(vectors, rule, {&m_, &scratch_});
  return true;
}

void DecentLam::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) { // the backend's step without momentum: z = x - lr (g + wd x)
    resident()->local_step(node, outgoing_id(node), step_lr(node));
    return;
  }
  const float lr = step_lr(node);
  as_vec(outgoing(node, 0)) = as_vec(x) - lr * (as_vec(grad) + weight_decay_ * as_vec(x));
}

void DecentLam::combine(int node, std::span<float> x) {
  if (resident()) { // mixed, then the momentum on the displacement, in the backend
    queue_mix(node);
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  const float lr = mixed_lr(node);
  const std::span<const float> z = sent(node, 0);
  float* mixed = scratch_[i].data();
  float* m = m_[i].data();
  for (std::size_t first = 0; first < x.size(); first += kBlock) {
    const std::size_t len = std::min(kBlock, x.size() - first);
    mix_range(node, 0, z, first, len, mixed);
    decentlam_momentum(beta_, lr, x.data() + first, mixed, m + first, len);
  }
}

} // namespace dtsim
