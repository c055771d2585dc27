// SPDX-License-Identifier: MIT
// CHOCO-SGD vector math: compressed differences, public estimates, the consensus step.
#include "sim/optimizers/choco_sgd.hpp"

#include "sim/core/errors.hpp"
#include "topologies/topology.hpp"

namespace dtsim {
namespace {

GossipProtocol::Options choco_options() {
  GossipProtocol::Options o;
  o.async_allowed = false;
  o.async_refusal = "choco-sgd's s_i = sum_j W_ij xhat_j needs every neighbour's q of every "
                    "round exactly once";
  o.time_varying_allowed = false;
  o.time_varying_refusal = "choco-sgd keeps s_i = sum_j W_ij xhat_j for one fixed W";
  o.keep_sent = true; // combine adds W_ii q_i with the neighbours' q_j
  return o;
}

} // namespace

ChocoSgd::ChocoSgd(const Params& p, const AlgorithmSetup& setup)
    : GossipProtocol(p, setup, choco_options()), topology_(*setup.topology),
      gamma_(static_cast<float>(p.number("gamma", 0.5, Range{0.0, 1.0, true, false}))),
      adapt_then_combine_(
          p.choice("order", "adapt_then_combine", {"adapt_then_combine", "combine_then_adapt"}) ==
          "adapt_then_combine"),
      update_(p, setup.nodes, setup.num_params), nodes_(static_cast<std::size_t>(setup.nodes)),
      stats_(setup.nodes, false) {
  const Params cp = p.child("compressor");
  CompressorSetup cs{dim()};
  cs.contractive = true;
  cs.allow_error_feedback = false;
  cs.allow_reference = false;
  const auto d = static_cast<Eigen::Index>(dim());
  for (NodeState& s : nodes_) {
    s.compressor = make_compressor(cp, cs, "qsgd");
    DTSIM_ASSERT(s.compressor->wire_is_decoded(), "choco-sgd needs self-decoding messages");
    s.x_half.resize(d);
    s.xhat.resize(d);
    s.s.resize(d);
    s.scratch.resize(d);
  }
}

std::string ChocoSgd::describe() const {
  return "choco-sgd (" + describe_protocol() + ", gamma " +
         format_number(static_cast<double>(gamma_)) + ", " +
         (adapt_then_combine_ ? "adapt_then_combine" : "combine_then_adapt") + ", " +
         nodes_[0].compressor->describe() +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         lr_schedule().describe() + ")";
}

std::size_t ChocoSgd::state_bytes() const {
  return GossipProtocol::state_bytes() + update_.state_bytes() +
         4 * nodes_.size() * dim() * sizeof(float);
}

void ChocoSgd::prepare(Context& ctx) {
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
  }
}

void ChocoSgd::local_step(int node, std::span<const float> x, std::span<float> grad) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  update_.step(node, grad, x, step_lr(node), {s.x_half.data(), dim()});
  if (!adapt_then_combine_)
    s.x_half += gamma_ * (s.s - s.xhat);
  s.scratch = s.x_half - s.xhat;
  const std::span<float> q = outgoing(node, 0);
  s.last = s.compressor->encode({s.scratch.data(), dim()}, q, s.rng);
  s.xhat += as_vec(q);
}

void ChocoSgd::combine(int node, std::span<float> x) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  // s_i += W_ii q_i + sum_j W_ij q_j, summed in neighbour order.
  mix(node, 0, sent(node, 0), {s.scratch.data(), dim()});
  s.s += s.scratch;
  if (adapt_then_combine_)
    as_vec(x) = s.x_half + gamma_ * (s.s - s.xhat);
  else
    as_vec(x) = s.x_half;
}

std::int64_t ChocoSgd::message_bytes(int node) {
  const NodeState& s = nodes_[static_cast<std::size_t>(node)];
  stats_.encoded(s.last);
  const std::int64_t payload = s.compressor->encoded_bytes(wire_dim());
  for (std::size_t k = 0; k < topology_.neighbors(node).size(); ++k)
    stats_.sent(payload, wire_dim());
  return payload + kMessageHeaderBytes;
}

void ChocoSgd::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  stats_.add_metrics(columns);
  GossipProtocol::add_metrics(columns);
}

void ChocoSgd::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  stats_.add_node_columns(columns);
}

} // namespace dtsim
