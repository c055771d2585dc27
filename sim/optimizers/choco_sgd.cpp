// SPDX-License-Identifier: MIT
// CHOCO-SGD protocol: compressed difference gossip, synchronous rounds.
#include "sim/optimizers/choco_sgd.hpp"

#include "sim/core/errors.hpp"
#include "topologies/topology.hpp"

#include <algorithm>

namespace dtsim {

ChocoSgd::ChocoSgd(const Params& p, const AlgorithmSetup& setup)
    : topology_(*setup.topology), rates_(p, setup, 0.05),
      gamma_(static_cast<float>(p.number("gamma", 0.5, Range{0.0, 1.0, true, false}))),
      adapt_then_combine_(
          p.choice("order", "adapt_then_combine", {"adapt_then_combine", "combine_then_adapt"}) ==
          "adapt_then_combine"),
      dim_(setup.num_params), update_(p, setup.nodes, setup.num_params),
      nodes_(static_cast<std::size_t>(setup.nodes)), stats_(setup.nodes, false) {
  const Params cp = p.child("compressor");
  CompressorSetup cs{dim_};
  cs.contractive = true;
  cs.allow_error_feedback = false;
  cs.allow_reference = false;
  const auto d = static_cast<Eigen::Index>(dim_);
  for (int i = 0; i < setup.nodes; ++i) {
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    s.compressor = make_compressor(cp, cs, "qsgd");
    DTSIM_ASSERT(s.compressor->wire_is_decoded(), "choco-sgd needs self-decoding messages");
    const std::size_t deg = topology_.neighbors(i).size();
    s.inbox[0].resize(deg);
    s.inbox[1].resize(deg);
    s.mix_in.resize(deg);
    s.x_half.resize(d);
    s.xhat.resize(d);
    s.s.resize(d);
    s.delta.resize(d);
  }
}

std::string ChocoSgd::describe() const {
  return "choco-sgd (gamma " + format_number(gamma_) + ", " +
         (adapt_then_combine_ ? "adapt_then_combine" : "combine_then_adapt") + ", " +
         nodes_[0].compressor->describe() +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         rates_.describe() + ")";
}

std::size_t ChocoSgd::state_bytes() const {
  return update_.state_bytes() + 4 * nodes_.size() * dim_ * sizeof(float);
}

int ChocoSgd::neighbour_index(int node, int neighbour) const {
  const auto nb = topology_.neighbors(node);
  const auto it = std::lower_bound(nb.begin(), nb.end(), neighbour);
  DTSIM_ASSERT(it != nb.end() && *it == neighbour, "message from a non-neighbour");
  return static_cast<int>(it - nb.begin());
}

void ChocoSgd::start(Context& ctx) {
  // The public estimates start at the initial models, which every node knows (in a run
  // they are one common model); s_i is their weighted sum, in neighbour order.
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    s.xhat = as_vec(ctx.params_view(i));
    s.s = static_cast<float>(topology_.self_weight(i)) * s.xhat;
    const auto nb = topology_.neighbors(i);
    const auto w = topology_.weights(i);
    for (std::size_t k = 0; k < nb.size(); ++k)
      s.s += static_cast<float>(w[k]) * as_vec(ctx.params_view(nb[k]));
    s.rng = Rng(ctx.rng(i).next_u64());
    s.out = ctx.new_buffer();
  }
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    nodes_[static_cast<std::size_t>(i)].lr = rates_.take(i);
    ctx.start_gradient(i, 0);
  }
}

void ChocoSgd::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  update_.step(node, grad, x, s.lr, {s.x_half.data(), dim_});
  if (!adapt_then_combine_)
    s.x_half += gamma_ * (s.s - s.xhat);
  s.delta = s.x_half - s.xhat;
  s.last = s.compressor->encode({s.delta.data(), dim_}, s.out.data(), s.rng);
  const auto q = as_vec(s.out.view());
  s.xhat += q;
  s.s += static_cast<float>(topology_.self_weight(node)) * q;
}

void ChocoSgd::before_gradient(int node, std::span<float> x) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (!s.mix_pending)
    return;
  s.mix_pending = false;
  // Summed in neighbour order: the same floating-point result on every run.
  const auto w = topology_.weights(node);
  for (std::size_t k = 0; k < s.mix_in.size(); ++k)
    s.s += static_cast<float>(w[k]) * as_vec(s.mix_in[k].view());
  if (adapt_then_combine_)
    as_vec(x) = s.x_half + gamma_ * (s.s - s.xhat);
  else
    as_vec(x) = s.x_half;
}

void ChocoSgd::on_gradient(Context& ctx, int node, const GradientResult&) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  // The task that used the previous round's messages is done: let them go.
  for (SharedBuffer& b : s.mix_in)
    b = SharedBuffer();
  stats_.encoded(s.last);
  const std::int64_t bytes = s.compressor->encoded_bytes(dim_);
  for (int j : topology_.neighbors(node)) {
    stats_.sent(bytes, dim_);
    ctx.send(node, j, MessageInfo{0, s.round, s.round}, s.out, bytes + kMessageHeaderBytes);
  }
  s.step_done = true;
  s.wait_start = ctx.now();
  try_mix(ctx, node);
}

void ChocoSgd::on_message(Context& ctx, const Message& msg) {
  const int node = msg.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  DTSIM_ASSERT(msg.info.round == s.round || msg.info.round == s.round + 1,
               "choco-sgd message more than one round ahead");
  const auto parity = static_cast<std::size_t>(msg.info.round & 1);
  s.inbox[parity][static_cast<std::size_t>(neighbour_index(node, msg.src))] = msg.payload;
  ++s.received[parity];
  try_mix(ctx, node);
}

void ChocoSgd::try_mix(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto parity = static_cast<std::size_t>(s.round & 1);
  if (!s.step_done || s.received[parity] < static_cast<int>(s.inbox[parity].size()))
    return;
  ctx.record_idle(node, ctx.now() - s.wait_start);
  s.received[parity] = 0;
  s.step_done = false;
  ++s.round;
  ctx.record_update(node, 0);
  for (std::size_t k = 0; k < s.mix_in.size(); ++k) {
    s.mix_in[k] = s.inbox[parity][k];
    s.inbox[parity][k] = SharedBuffer();
  }
  s.mix_pending = true;
  s.out = ctx.new_buffer();
  s.lr = rates_.take(node);
  ctx.start_gradient(node, s.round);
}

void ChocoSgd::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  stats_.add_metrics(columns);
  rates_.add_metrics(columns);
}

void ChocoSgd::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  stats_.add_node_columns(columns);
}

} // namespace dtsim
