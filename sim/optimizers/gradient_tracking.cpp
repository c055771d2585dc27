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
      update_(p, setup.nodes, setup.num_params, tracker_momentum()) {
  const auto d = static_cast<Eigen::Index>(setup.num_params);
  const auto n = static_cast<std::size_t>(setup.nodes);
  y_.assign(n, Vec::Zero(d));
  g_prev_.assign(n, Vec::Zero(d));
  u_.assign(n, Vec::Zero(d));
}

std::string GradientTracking::describe() const {
  return "gradient-tracking (" + describe_protocol() +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         (update_.momentum() > 0 && update_.nesterov() ? " (nesterov)" : "") +
         lr_schedule().describe() + ")";
}

std::size_t GradientTracking::state_bytes() const {
  std::size_t floats = 0;
  for (std::size_t i = 0; i < y_.size(); ++i)
    floats += static_cast<std::size_t>(y_[i].size() + g_prev_[i].size() + u_[i].size());
  return GossipProtocol::state_bytes() + update_.state_bytes() + floats * sizeof(float);
}

void GradientTracking::local_step(int node, std::span<const float> x, std::span<float> grad) {
  const auto i = static_cast<std::size_t>(node);
  auto g = as_vec(grad);
  if (weight_decay_ > 0)
    g += weight_decay_ * as_vec(x);
  if (task_step(node) == 0)
    y_[i] = g;
  else
    y_[i] += g - g_prev_[i];
  g_prev_[i] = g;
  as_vec(outgoing(node, 0)) = as_vec(x);
  as_vec(outgoing(node, 1)) = y_[i];
  update_.direction(node, {y_[i].data(), dim()}, x, {u_[i].data(), dim()});
}

void GradientTracking::combine(int node, std::span<float> x) {
  const auto i = static_cast<std::size_t>(node);
  mix(node, 0, x, x);
  as_vec(x) -= mixed_lr(node) * u_[i];
  const std::span<float> y{y_[i].data(), dim()};
  mix(node, 1, y, y);
}

} // namespace dtsim
