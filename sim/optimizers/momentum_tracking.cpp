// SPDX-License-Identifier: MIT
// Momentum Tracking: momentum and correction updates, the one-time all-reduce of g^0.
#include "sim/optimizers/momentum_tracking.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {
namespace {

GossipProtocol::Options tracking_options() {
  GossipProtocol::Options o;
  o.vectors = 2;
  o.async_allowed = false;
  o.async_refusal = "momentum-tracking keeps sum_i c_i = sum_i m_i only if every node mixes "
                    "the same round's corrections";
  return o;
}

} // namespace

MomentumTracking::MomentumTracking(const Params& p, const AlgorithmSetup& setup)
    : GossipProtocol(p, setup, tracking_options()),
      beta_text_(p.number("momentum", 0.9, Range::unit_open_hi())),
      beta_(static_cast<float>(beta_text_)),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))),
      first_gradients_(static_cast<std::size_t>(setup.nodes)) {
  const auto d = static_cast<Eigen::Index>(setup.num_params);
  m_.assign(static_cast<std::size_t>(setup.nodes), Vec::Zero(d));
  d_.assign(static_cast<std::size_t>(setup.nodes), Vec::Zero(d));
}

std::string MomentumTracking::describe() const {
  return "momentum-tracking (" + describe_protocol() + ", beta " + format_number(beta_text_) +
         lr_schedule().describe() + ")";
}

std::size_t MomentumTracking::state_bytes() const {
  std::size_t floats = 0;
  for (std::size_t i = 0; i < m_.size(); ++i)
    floats += static_cast<std::size_t>(m_[i].size() + d_[i].size());
  return GossipProtocol::state_bytes() + floats * sizeof(float);
}

void MomentumTracking::local_step(int node, std::span<const float> x, std::span<float> grad) {
  const auto i = static_cast<std::size_t>(node);
  as_vec(outgoing(node, 0)) = as_vec(x);
  if (task_step(node) == 0) {
    d_[i] = as_vec(grad); // g^0, until the all-reduce gives the mean (initialise())
    return;
  }
  Vec& m = m_[i];
  m = beta_ * m + as_vec(grad) + weight_decay_ * as_vec(x);
  as_vec(outgoing(node, 1)) = d_[i] - m;
}

void MomentumTracking::combine(int node, std::span<float> x) {
  const auto i = static_cast<std::size_t>(node);
  mix(node, 0, x, x);
  as_vec(x) -= mixed_lr(node) * (m_[i] - d_[i]);
  const std::span<float> d{d_[i].data(), dim()};
  mix(node, 1, sent(node, 1), d);
  d_[i] += m_[i];
}

bool MomentumTracking::ready_to_send(Context& ctx, int node) {
  if (round(node) > 0)
    return true;
  SharedBuffer g0 = ctx.new_buffer();
  as_vec(g0.data()) = d_[static_cast<std::size_t>(node)];
  if (node != 0) {
    ctx.send(node, 0, MessageInfo{kInitGradient, 0, 0}, std::move(g0));
    return false;
  }
  // Node 0 collects its own first gradient. When it is the last to arrive (node 0 the
  // slowest at step 0, or a single node), that completes the all-reduce here, before node 0
  // is held: initialise() then must not release it, and it goes on at once.
  collecting_own_ = true;
  collect(ctx, 0, std::move(g0));
  collecting_own_ = false;
  return collected_ == num_nodes();
}

void MomentumTracking::on_control_message(Context& ctx, const Message& msg) {
  if (msg.info.tag == kInitGradient) {
    DTSIM_ASSERT(msg.dst == 0, "first gradients go to node 0");
    collect(ctx, msg.src, msg.payload);
    return;
  }
  DTSIM_ASSERT(msg.info.tag == kInitMean, "momentum tracking: unexpected message tag");
  initialise(ctx, msg.dst, msg.payload.view());
}

void MomentumTracking::collect(Context& ctx, int node, SharedBuffer g0) {
  first_gradients_[static_cast<std::size_t>(node)] = std::move(g0);
  if (++collected_ < num_nodes())
    return;
  // Summed in node order, whatever the arrival order: the same mean on every run.
  SharedBuffer mean = ctx.new_buffer();
  VecMap gbar = as_vec(mean.data());
  gbar = as_vec(first_gradients_[0].view());
  for (std::size_t j = 1; j < first_gradients_.size(); ++j)
    gbar += as_vec(first_gradients_[j].view());
  gbar /= static_cast<float>(num_nodes());
  for (SharedBuffer& b : first_gradients_)
    b = SharedBuffer();
  for (int j = 1; j < num_nodes(); ++j)
    ctx.send(0, j, MessageInfo{kInitMean, 0, 0}, mean);
  initialise(ctx, 0, mean.view());
}

void MomentumTracking::initialise(Context& ctx, int node, std::span<const float> gbar) {
  // Engine thread, once per node, while the node waits (its task is done).
  const auto i = static_cast<std::size_t>(node);
  Vec& m = m_[i];
  Vec& d = d_[i]; // g^0
  m = (d - as_vec(gbar)) / (1 - beta_);
  d.swap(m); // d = m^0 = (g^0 - gbar)/(1 - beta); m = g^0
  m = beta_ * d + m + weight_decay_ * as_vec(ctx.params_view(node));
  as_vec(outgoing(node, 1)) = d - m;
  if (!(collecting_own_ && node == 0)) // else node 0 is not held: ready_to_send goes on
    release(ctx, node);
}

} // namespace dtsim
