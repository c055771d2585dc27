// SPDX-License-Identifier: MIT
// Gradient tracking: tracker update, two-vector messages, mixing of model and tracker.
#include "sim/optimizers/gradient_tracking.hpp"

namespace dtsim {
namespace {

GossipProtocol::Options tracking_options() {
  GossipProtocol::Options o;
  o.vectors = 2;
  o.async_allowed = false;
  o.async_refusal = "gradient-tracking keeps sum_i y_i = sum_i g_i only if every node mixes "
                    "the same round's trackers";
  o.keep_sent = false; // the own tracker and model are still in node state at mixing time
  return o;
}

LocalUpdate::Options tracker_momentum() {
  LocalUpdate::Options o;
  o.weight_decay_key = false; // weight decay enters the gradient before tracking
  return o;
}

} // namespace

GradientTracking::GradientTracking(const Params& p, const AlgorithmSetup& setup)
    : GossipProtocol(p, setup, tracking_options()),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))),
      update_(p, setup.nodes, setup.num_params, tracker_momentum()),
      y_(setup.nodes, setup.num_params), g_prev_(setup.nodes, setup.num_params),
      u_(setup.nodes, setup.num_params) {}

std::string GradientTracking::describe() const {
  return "gradient-tracking (" + describe_protocol() +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         (update_.momentum() > 0 && update_.nesterov() ? " (nesterov)" : "") +
         lr_schedule().describe() + ")";
}

std::size_t GradientTracking::state_bytes() const {
  return GossipProtocol::state_bytes() + update_.state_bytes() + y_.bytes() + g_prev_.bytes() +
         u_.bytes();
}

bool GradientTracking::attach_resident(ResidentVectors& vectors) {
  ResidentVectors::LocalUpdateRule rule = update_.rule();
  rule.weight_decay = weight_decay_;
  rule.combine_then_adapt = true;
  rule.gradient_tracking = true;
  set_resident(vectors, rule, {&y_, &g_prev_, &u_});
  update_.release_state();
  return true;
}

void GradientTracking::track(const ResidentVectors::LocalUpdateRule& rule, bool first,
                             std::span<float> grad, std::span<const float> x, std::span<float> y,
                             std::span<float> g_prev, std::span<float> m, std::span<float> u) {
  auto g = as_vec(grad);
  if (rule.weight_decay > 0)
    g += rule.weight_decay * as_vec(x);
  if (first)
    as_vec(y) = g;
  else
    as_vec(y) += g - as_vec(std::span<const float>(g_prev));
  as_vec(g_prev) = g;
  ResidentVectors::LocalUpdateRule direction_rule = rule;
  direction_rule.weight_decay = 0;
  LocalUpdate::direction(direction_rule, y, x, m, u);
}

void GradientTracking::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) { // the backend tracks, keeps u and sends (x, y)
    resident()->local_step(node, outgoing_id(node), 0.0f);
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  ResidentVectors::LocalUpdateRule rule = update_.rule();
  rule.weight_decay = weight_decay_;
  track(rule, task_step(node) == 0, grad, x, y_.span(i), g_prev_.span(i), update_.momentum_of(node),
        u_.span(i));
  as_vec(outgoing(node, 0)) = as_vec(x);
  as_vec(outgoing(node, 1)) = y_[i];
}

void GradientTracking::combine(int node, std::span<float> x) {
  if (resident()) { // x = mix(x) - lr u and y = mix(y), in the backend
    queue_mix(node, true);
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  mix(node, 0, x, x);
  as_vec(x) -= mixed_lr(node) * u_[i];
  const std::span<float> y = y_.span(i);
  mix(node, 1, y, y);
}

} // namespace dtsim
