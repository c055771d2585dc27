// SPDX-License-Identifier: MIT
// D2: the corrected half step and plain mixing.
#include "sim/optimizers/d2.hpp"

#include "topologies/topology.hpp"

#include <algorithm>
#include <cstdio>

namespace dtsim {
namespace {

GossipProtocol::Options d2_options() {
  GossipProtocol::Options o;
  o.async_allowed = false;
  o.async_refusal = "d2's correction 2*x_t - x_{t-1} - lr*(g_t - g_{t-1}) undoes the previous "
                    "round's mixing only if every node mixed that same round";
  o.time_varying_allowed = false;
  o.time_varying_refusal = "d2 needs one fixed mixing matrix";
  return o;
}

} // namespace

D2::D2(const Params& p, const AlgorithmSetup& setup)
    : GossipProtocol(p, setup, d2_options()),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))) {
  // Without gradients, D2 on an eigenvector of W with eigenvalue l < 0 is y' = l(2y - y_prev),
  // with root l - sqrt(l^2 - l) of modulus < 1 iff l > -1/3: at -1/3 the mode never decays.
  const double lmin = setup.topology->min_eigenvalue();
  if (lmin <= -1.0 / 3.0 + 1e-9) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%.6g", lmin);
    p.fail("name", "d2 needs the smallest eigenvalue of W above -1/3, but this " +
                       setup.topology->name() + " of " + std::to_string(setup.nodes) +
                       " nodes has " + shown +
                       "; use a graph whose W keeps every eigenvalue above -1/3, e.g. an odd "
                       "ring or the complete graph (dtsim topology KIND --nodes N prints it)");
  }
  x_prev_ = NodeVectors(setup.nodes, setup.num_params);
  g_prev_ = NodeVectors(setup.nodes, setup.num_params);
}

std::string D2::describe() const {
  return "d2 (" + describe_protocol() + lr_schedule().describe() + ")";
}

std::size_t D2::state_bytes() const {
  return GossipProtocol::state_bytes() + x_prev_.bytes() + g_prev_.bytes();
}

bool D2::attach_resident(ResidentVectors& vectors) {
  ResidentVectors::LocalUpdateRule rule;
  rule.weight_decay = weight_decay_;
  rule.d2 = true;
  set_resident(vectors, rule, {&x_prev_, &g_prev_});
  return true;
}

void D2::correct(bool first_step, float weight_decay, float lr, std::span<float> grad,
                 std::span<const float> x, std::span<float> x_prev, std::span<float> lr_g_prev,
                 std::span<float> out) {
  for (std::size_t first = 0; first < out.size(); first += kBlock) {
    const auto len = std::min(kBlock, out.size() - first);
    const auto xb = as_vec(x.subspan(first, len));
    auto g = as_vec(grad.subspan(first, len));
    auto o = as_vec(out.subspan(first, len));
    auto xp = as_vec(x_prev.subspan(first, len));
    auto gp = as_vec(lr_g_prev.subspan(first, len));
    if (weight_decay > 0)
      g += weight_decay * xb;
    if (first_step)
      o = xb - lr * g;
    else
      o = 2.0f * xb - xp - (lr * g - gp);
    xp = xb;
    gp = lr * g;
  }
}

void D2::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) { // the backend corrects and sends
    resident()->local_step(node, outgoing_id(node), step_lr(node));
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  correct(task_step(node) == 0, weight_decay_, step_lr(node), grad, x, x_prev_.span(i),
          g_prev_.span(i), outgoing(node, 0));
}

void D2::combine(int node, std::span<float> x) {
  if (resident()) {
    queue_mix(node);
    return;
  }
  mix(node, 0, sent(node, 0), x);
}

} // namespace dtsim
