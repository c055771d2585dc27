// SPDX-License-Identifier: MIT
// D-PSGD protocol: local step, neighbour exchange, weighted mixing.
#include "sim/optimizers/dsgd.hpp"

#include "sim/core/errors.hpp"
#include "topologies/topology.hpp"

#include <algorithm>

namespace dtsim {

Dsgd::Dsgd(const Params& p, const AlgorithmSetup& setup)
    : topology_(*setup.topology), lr_(static_cast<float>(p.number("lr", 0.05, Range::positive()))),
      async_(p.choice("mode", "sync", {"sync", "async"}) == "async"),
      adapt_then_combine_(
          p.choice("order", "adapt_then_combine", {"adapt_then_combine", "combine_then_adapt"}) ==
          "adapt_then_combine"),
      update_(p, setup.nodes, setup.num_params), nodes_(static_cast<std::size_t>(setup.nodes)) {
  for (int i = 0; i < setup.nodes; ++i) {
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    const std::size_t deg = topology_.neighbors(i).size();
    s.inbox[0].resize(deg);
    s.inbox[1].resize(deg);
    s.latest.resize(deg);
    s.latest_step.assign(deg, 0);
    s.mix_in.resize(deg);
    if (!adapt_then_combine_)
      s.pending_u.resize(static_cast<Eigen::Index>(setup.num_params));
  }
}

std::string Dsgd::describe() const {
  return std::string("dsgd (") + (async_ ? "async" : "sync") + ", " +
         (adapt_then_combine_ ? "adapt_then_combine" : "combine_then_adapt") +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") + ")";
}

std::size_t Dsgd::state_bytes() const {
  std::size_t bytes = update_.state_bytes();
  for (const NodeState& s : nodes_)
    bytes += static_cast<std::size_t>(s.pending_u.size()) * sizeof(float);
  return bytes;
}

int Dsgd::neighbour_index(int node, int neighbour) const {
  const auto nb = topology_.neighbors(node);
  const auto it = std::lower_bound(nb.begin(), nb.end(), neighbour);
  DTSIM_ASSERT(it != nb.end() && *it == neighbour, "message from a non-neighbour");
  return static_cast<int>(it - nb.begin());
}

void Dsgd::start(Context& ctx) {
  if (async_) {
    // Every node starts from the same model: that is each neighbour's first "copy".
    SharedBuffer init = ctx.new_buffer();
    as_vec(init.data()) = as_vec(ctx.params_view(0));
    for (NodeState& s : nodes_)
      std::fill(s.latest.begin(), s.latest.end(), init);
  }
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    nodes_[static_cast<std::size_t>(i)].out = ctx.new_buffer();
    ctx.start_gradient(i, 0);
  }
}

void Dsgd::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (adapt_then_combine_) {
    update_.step(node, grad, x, lr_, s.out.data());
  } else {
    update_.direction(node, grad, x, grad); // grad now holds u
    as_vec(s.out.data()) = as_vec(x);
    s.pending_u = as_vec(grad);
  }
}

void Dsgd::before_gradient(int node, std::span<float> x) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (!s.mix_pending)
    return;
  s.mix_pending = false;
  // Summed in neighbour order: the same floating-point result on every run.
  VecMap out = as_vec(x);
  const auto self = static_cast<float>(topology_.self_weight(node));
  if (adapt_then_combine_)
    out = self * as_vec(s.mix_self.view());
  else
    out *= self;
  const auto w = topology_.weights(node);
  for (std::size_t k = 0; k < s.mix_in.size(); ++k)
    out += static_cast<float>(w[k]) * as_vec(s.mix_in[k].view());
  if (!adapt_then_combine_)
    out -= lr_ * s.pending_u;
}

void Dsgd::mix_next(Context& ctx, int node, std::vector<SharedBuffer>& inputs) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  s.mix_self = adapt_then_combine_ ? s.out : SharedBuffer();
  for (std::size_t k = 0; k < inputs.size(); ++k)
    s.mix_in[k] = inputs[k];
  s.mix_pending = true;
  s.out = ctx.new_buffer();
  ctx.start_gradient(node, s.round);
}

void Dsgd::on_gradient(Context& ctx, int node, const GradientResult&) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  // The task that used the previous mixing inputs is done: let them go.
  s.mix_self = SharedBuffer();
  for (SharedBuffer& b : s.mix_in)
    b = SharedBuffer();
  for (int j : topology_.neighbors(node))
    ctx.send(node, j, MessageInfo{0, s.round + (async_ ? 1 : 0), s.round}, s.out);

  if (async_) {
    ++s.round;
    std::int64_t staleness = 0;
    for (std::int64_t step : s.latest_step)
      staleness = std::max(staleness, s.round - 1 - step);
    ctx.record_update(node, staleness);
    mix_next(ctx, node, s.latest);
    return;
  }
  s.step_done = true;
  s.wait_start = ctx.now();
  try_mix(ctx, node);
}

void Dsgd::on_message(Context& ctx, const Message& msg) {
  const int node = msg.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto k = static_cast<std::size_t>(neighbour_index(node, msg.src));
  if (async_) {
    // Messages from one sender arrive in send order (FIFO link), so the newest wins.
    s.latest[k] = msg.payload;
    s.latest_step[k] = msg.info.version;
    return;
  }
  DTSIM_ASSERT(msg.info.round == s.round || msg.info.round == s.round + 1,
               "sync D-PSGD message more than one round ahead");
  const auto parity = static_cast<std::size_t>(msg.info.round & 1);
  s.inbox[parity][k] = msg.payload;
  ++s.received[parity];
  try_mix(ctx, node);
}

void Dsgd::try_mix(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto parity = static_cast<std::size_t>(s.round & 1);
  if (!s.step_done || s.received[parity] < static_cast<int>(s.inbox[parity].size()))
    return;
  ctx.record_idle(node, ctx.now() - s.wait_start);
  s.received[parity] = 0;
  s.step_done = false;
  ++s.round;
  ctx.record_update(node, 0);
  mix_next(ctx, node, s.inbox[parity]);
  for (SharedBuffer& b : s.inbox[parity])
    b = SharedBuffer();
}

} // namespace dtsim
