// SPDX-License-Identifier: MIT
// D-PSGD protocol: local step, neighbour exchange, weighted mixing.
#include "sim/optimizers/dsgd.hpp"

#include "sim/core/errors.hpp"
#include "topologies/topology.hpp"

#include <algorithm>

namespace dtsim {

Dsgd::Dsgd(const Params& p, const AlgorithmSetup& setup)
    : topology_(*setup.topology),
      lr_(static_cast<float>(p.number("lr", 0.05, Range::positive()))),
      async_(p.choice("mode", "sync", {"sync", "async"}) == "async"),
      adapt_then_combine_(p.choice("order", "adapt_then_combine",
                                   {"adapt_then_combine", "combine_then_adapt"}) ==
                          "adapt_then_combine"),
      update_(p, setup.nodes, setup.num_params),
      nodes_(static_cast<std::size_t>(setup.nodes)) {
  const auto d = static_cast<Eigen::Index>(setup.num_params);
  u_.resize(d);
  mixed_.resize(d);
  for (int i = 0; i < setup.nodes; ++i) {
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    const std::size_t deg = topology_.neighbors(i).size();
    s.inbox[0].resize(deg);
    s.inbox[1].resize(deg);
    s.latest.resize(deg);
    s.latest_step.assign(deg, 0);
  }
  if (!async_ && !adapt_then_combine_)
    pending_u_.assign(static_cast<std::size_t>(setup.nodes), Vec(d));
}

std::string Dsgd::describe() const {
  return std::string("dsgd (") + (async_ ? "async" : "sync") + ", " +
         (adapt_then_combine_ ? "adapt_then_combine" : "combine_then_adapt") +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") + ")";
}

std::size_t Dsgd::state_bytes() const {
  return update_.state_bytes() +
         pending_u_.size() * static_cast<std::size_t>(u_.size()) * sizeof(float) +
         2 * static_cast<std::size_t>(u_.size()) * sizeof(float);
}

int Dsgd::neighbour_index(int node, int neighbour) const {
  const auto nb = topology_.neighbors(node);
  const auto it = std::lower_bound(nb.begin(), nb.end(), neighbour);
  DTSIM_ASSERT(it != nb.end() && *it == neighbour, "message from a non-neighbour");
  return static_cast<int>(it - nb.begin());
}

void Dsgd::broadcast(Context& ctx, int node, std::span<const float> x, std::int64_t round) {
  SharedBuffer b = ctx.new_buffer();
  as_vec(b.data()) = as_vec(x);
  for (int j : topology_.neighbors(node))
    ctx.send(node, j, MessageInfo{0, round, round}, b);
}

void Dsgd::mix_into(int node, std::span<const float> self,
                    const std::vector<SharedBuffer>& copies, std::span<float> out) {
  // Summed in neighbour order: the same floating-point result on every run.
  const auto w = topology_.weights(node);
  mixed_.noalias() = static_cast<float>(topology_.self_weight(node)) * as_vec(self);
  for (std::size_t k = 0; k < copies.size(); ++k)
    mixed_.noalias() += static_cast<float>(w[k]) * as_vec(copies[k].view());
  as_vec(out) = mixed_;
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
    if (!async_ && !adapt_then_combine_)
      broadcast(ctx, i, ctx.params_view(i), 0);
    ctx.start_gradient(i, 0);
  }
}

void Dsgd::on_gradient(Context& ctx, int node, const GradientResult& r) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const std::span<float> x = ctx.params(node);
  const std::span<float> u{u_.data(), static_cast<std::size_t>(u_.size())};
  update_.direction(node, r.grad, x, u);

  if (async_) {
    if (adapt_then_combine_) {
      as_vec(x) -= lr_ * u_;
      mix_into(node, x, s.latest, x);
    } else {
      mix_into(node, x, s.latest, x);
      as_vec(x) -= lr_ * u_;
    }
    ++s.round;
    std::int64_t staleness = 0;
    for (std::int64_t step : s.latest_step)
      staleness = std::max(staleness, s.round - 1 - step);
    ctx.record_update(node, staleness);
    broadcast(ctx, node, x, s.round);
    ctx.start_gradient(node, s.round);
    return;
  }

  if (adapt_then_combine_) {
    s.own = ctx.new_buffer();
    as_vec(s.own.data()) = as_vec(x) - lr_ * u_;
    for (int j : topology_.neighbors(node))
      ctx.send(node, j, MessageInfo{0, s.round, s.round}, s.own);
  } else {
    pending_u_[static_cast<std::size_t>(node)] = u_;
  }
  s.step_done = true;
  s.wait_start = ctx.now();
  try_mix(ctx, node);
}

void Dsgd::on_message(Context& ctx, const Message& msg) {
  const int node = msg.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const int k = neighbour_index(node, msg.src);
  if (async_) {
    // Messages from one sender arrive in send order (FIFO link), so the newest wins.
    s.latest[static_cast<std::size_t>(k)] = msg.payload;
    s.latest_step[static_cast<std::size_t>(k)] = msg.info.version;
    return;
  }
  DTSIM_ASSERT(msg.info.round == s.round || msg.info.round == s.round + 1,
               "sync D-PSGD message more than one round ahead");
  const auto parity = static_cast<std::size_t>(msg.info.round & 1);
  s.inbox[parity][static_cast<std::size_t>(k)] = msg.payload;
  ++s.received[parity];
  try_mix(ctx, node);
}

void Dsgd::try_mix(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto parity = static_cast<std::size_t>(s.round & 1);
  if (!s.step_done || s.received[parity] < static_cast<int>(s.inbox[parity].size()))
    return;
  ctx.record_idle(node, ctx.now() - s.wait_start);
  const std::span<float> x = ctx.params(node);
  if (adapt_then_combine_) {
    mix_into(node, s.own.view(), s.inbox[parity], x);
    s.own = SharedBuffer();
  } else {
    mix_into(node, x, s.inbox[parity], x);
    as_vec(x) -= lr_ * pending_u_[static_cast<std::size_t>(node)];
  }
  for (SharedBuffer& b : s.inbox[parity])
    b = SharedBuffer();
  s.received[parity] = 0;
  s.step_done = false;
  ++s.round;
  ctx.record_update(node, 0);
  if (!adapt_then_combine_)
    broadcast(ctx, node, x, s.round);
  ctx.start_gradient(node, s.round);
}

} // namespace dtsim
