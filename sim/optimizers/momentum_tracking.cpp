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
      m_(setup.nodes, setup.num_params), d_(setup.nodes, setup.num_params),
      first_gradients_(static_cast<std::size_t>(setup.nodes)) {}

std::string MomentumTracking::describe() const {
  return "momentum-tracking (" + describe_protocol() + ", beta " + format_number(beta_text_) +
         lr_schedule().describe() + ")";
}

std::size_t MomentumTracking::state_bytes() const { // m_ and d_ are released when resident
  return GossipProtocol::state_bytes() + m_.bytes() + d_.bytes();
}

bool MomentumTracking::attach_resident(ResidentVectors& vectors) {
  ResidentVectors::LocalUpdateRule rule;
  rule.momentum = beta_;
  rule.weight_decay = weight_decay_;
  rule.momentum_tracking = true;
  set_resident(vectors, rule, {&m_, &d_});
  return true;
}

void MomentumTracking::step(float beta, float weight_decay, std::span<const float> g,
                            std::span<const float> x, std::span<float> m, std::span<const float> d,
                            std::span<float> d_minus_m) {
  as_vec(m) = beta * as_vec(std::span<const float>(m)) + as_vec(g) + weight_decay * as_vec(x);
  as_vec(d_minus_m) = as_vec(d) - as_vec(std::span<const float>(m));
}

void MomentumTracking::initialise(float beta, float weight_decay, std::span<const float> gbar,
                                  std::span<const float> x, std::span<float> d, std::span<float> m,
                                  std::span<float> d_minus_m) {
  as_vec(m) = as_vec(std::span<const float>(d)); // g0
  as_vec(d) = (as_vec(std::span<const float>(m)) - as_vec(gbar)) / (1 - beta);
  as_vec(m) = beta * as_vec(std::span<const float>(d)) + as_vec(std::span<const float>(m)) +
              weight_decay * as_vec(x);
  as_vec(d_minus_m) = as_vec(std::span<const float>(d)) - as_vec(std::span<const float>(m));
}

void MomentumTracking::descend(float lr, std::span<float> x, std::span<const float> m,
                               std::span<const float> d) {
  as_vec(x) -= lr * (as_vec(m) - as_vec(d));
}

void MomentumTracking::correct(std::span<float> d, std::span<const float> m) {
  as_vec(d) += as_vec(m);
}

void MomentumTracking::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) { // the backend sends (x, d - m), or keeps g0 in d at the first step
    resident()->local_step(node, outgoing_id(node), 0.0f);
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  as_vec(outgoing(node, 0)) = as_vec(x);
  if (task_step(node) == 0) {
    d_[i] = as_vec(grad); // g^0, until the all-reduce gives the mean (start_node())
    return;
  }
  step(beta_, weight_decay_, grad, x, m_.span(i), d_.span(i), outgoing(node, 1));
}

void MomentumTracking::combine(int node, std::span<float> x) {
  if (resident()) { // both mixings and their ends, in the backend
    queue_mix(node);
    return;
  }
  const auto i = static_cast<std::size_t>(node);
  mix(node, 0, x, x);
  descend(mixed_lr(node), x, m_.span(i), d_.span(i));
  const std::span<float> d = d_.span(i);
  mix(node, 1, sent(node, 1), d);
  correct(d, m_.span(i));
}

bool MomentumTracking::ready_to_send(Context& ctx, int node) {
  if (round(node) > 0)
    return true;
  SharedBuffer g0 = ctx.new_buffer(); // on a resident backend an id: g0 stays there
  if (!resident())
    as_vec(g0.data()) = d_[static_cast<std::size_t>(node)];
  if (node != 0) {
    ctx.send(node, 0, MessageInfo{kInitGradient, 0, 0}, std::move(g0));
    return false;
  }
  // Node 0 collects its own first gradient. When it is the last to arrive (node 0 the
  // slowest at step 0, or a single node), that completes the all-reduce here, before node 0
  // is held: start_node() then must not release it, and it goes on at once.
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
  start_node(ctx, msg.dst, msg.payload);
}

void MomentumTracking::collect(Context& ctx, int node, SharedBuffer g0) {
  first_gradients_[static_cast<std::size_t>(node)] = std::move(g0);
  if (++collected_ < num_nodes())
    return;
  // Summed in node order, whatever the arrival order: the same mean on every run (on a
  // resident backend, there, at the first start_momentum_tracking).
  SharedBuffer mean = ctx.new_buffer();
  if (!resident()) {
    VecMap gbar = as_vec(mean.data());
    gbar = as_vec(first_gradients_[0].view());
    for (std::size_t j = 1; j < first_gradients_.size(); ++j)
      gbar += as_vec(first_gradients_[j].view());
    gbar /= static_cast<float>(num_nodes());
  }
  for (SharedBuffer& b : first_gradients_)
    b = SharedBuffer();
  for (int j = 1; j < num_nodes(); ++j)
    ctx.send(0, j, MessageInfo{kInitMean, 0, 0}, mean);
  start_node(ctx, 0, mean);
}

void MomentumTracking::start_node(Context& ctx, int node, const SharedBuffer& gbar) {
  // Engine thread, once per node, while the node waits (its task is done).
  if (resident()) {
    resident()->start_momentum_tracking(node, outgoing_id(node));
  } else {
    const auto i = static_cast<std::size_t>(node);
    initialise(beta_, weight_decay_, gbar.view(), ctx.params_view(node), d_.span(i), m_.span(i),
               outgoing(node, 1));
  }
  if (!(collecting_own_ && node == 0)) // else node 0 is not held: ready_to_send goes on
    release(ctx, node);
}

} // namespace dtsim
