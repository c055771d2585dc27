// SPDX-License-Identifier: MIT
// CHOCO-SGD vector math: compressed differences, public estimates, the consensus step.
#include "sim/optimizers/choco_sgd.hpp"

#include "sim/core/errors.hpp"
#include "sim/optimizers/resident_compression.hpp"
#include "topologies/topology.hpp"

#include <map>
#include <vector>

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
  const std::size_t vectors = resident() ? 0 : 4 * nodes_.size() * dim();
  return GossipProtocol::state_bytes() + update_.state_bytes() + vectors * sizeof(float);
}

ResidentCompression ChocoSgd::device_compression() const {
  return resident_compression(*nodes_[0].compressor, dim());
}

bool ChocoSgd::can_attach_resident() const {
  return device_compression().kind != ResidentCompression::Kind::none;
}

bool ChocoSgd::attach_resident(ResidentVectors& vectors) {
  if (!can_attach_resident())
    return false;
  ResidentVectors::LocalUpdateRule rule = update_.rule();
  rule.choco = true;
  rule.gamma = gamma_;
  rule.choco_adapt_then_combine = adapt_then_combine_;
  rule.encoder = this;
  device_seeds_.assign(nodes_.size(), 0); // drawn in prepare()
  rule.compression = device_compression();
  rule.compression.seeds = device_seeds_.data();
  set_resident(vectors, rule);
  update_.release_state();
  for (NodeState& s : nodes_) {
    Vec().swap(s.x_half);
    Vec().swap(s.xhat);
    Vec().swap(s.s);
    Vec().swap(s.scratch);
  }
  return true;
}

void ChocoSgd::prepare(Context& ctx) {
  // The public estimates start at the initial models, which every node knows; s_i is their
  // weighted sum, in neighbour order. Where every node holds the one initial model (a run's
  // start), s_i depends only on node i's weights: nodes with the same weights share it, made
  // once (the same bits as n times) and, on a resident backend, sent once.
  const std::span<const float> common = ctx.common_model();
  std::map<std::vector<double>, std::vector<int>> by_weights;
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    if (!common.empty()) {
      std::vector<double> key{topology_.self_weight(i)};
      const auto w = topology_.weights(i);
      key.insert(key.end(), w.begin(), w.end());
      by_weights[key].push_back(i);
    } else {
      initial_sums({&i, 1}, ctx, {});
    }
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    s.rng = Rng(ctx.rng(i).next_u64());
    if (resident()) // a device's stream seeded from s.rng's
      device_seeds_[static_cast<std::size_t>(i)] = Rng(s.rng).next_u64();
  }
  for (const auto& [weights, group] : by_weights)
    initial_sums(group, ctx, common);
}

void ChocoSgd::initial_sums(std::span<const int> group, const Context& ctx,
                            std::span<const float> common) {
  // The group's first node's estimate and sum (each model read where common is empty).
  const int i = group.front();
  const auto model = [&](int j) { return as_vec(common.empty() ? ctx.params_view(j) : common); };
  Vec estimate = model(i);
  Vec weighted = static_cast<float>(topology_.self_weight(i)) * estimate;
  const auto nb = topology_.neighbors(i);
  const auto w = topology_.weights(i);
  for (std::size_t k = 0; k < nb.size(); ++k)
    weighted += static_cast<float>(w[k]) * model(nb[k]);
  if (resident()) { // rows 1 and 2 of the choco rule
    resident()->write_rule_row(group, 1, {estimate.data(), dim()});
    resident()->write_rule_row(group, 2, {weighted.data(), dim()});
    return;
  }
  for (const int j : group) {
    NodeState& s = nodes_[static_cast<std::size_t>(j)];
    s.xhat = estimate;
    s.s = weighted;
  }
}

void ChocoSgd::difference(bool adapt_then_combine, float gamma, std::span<float> x_half,
                          std::span<const float> xhat, std::span<const float> s,
                          std::span<float> diff) {
  if (!adapt_then_combine)
    as_vec(x_half) += gamma * (as_vec(s) - as_vec(xhat));
  as_vec(diff) = as_vec(std::span<const float>(x_half)) - as_vec(xhat);
}

void ChocoSgd::estimate(std::span<float> xhat, std::span<const float> q) {
  as_vec(xhat) += as_vec(q);
}

void ChocoSgd::consensus(bool adapt_then_combine, float gamma, std::span<const float> mixed,
                         std::span<float> s, std::span<const float> x_half,
                         std::span<const float> xhat, std::span<float> x) {
  as_vec(s) += as_vec(mixed);
  if (adapt_then_combine)
    as_vec(x) = as_vec(x_half) + gamma * (as_vec(std::span<const float>(s)) - as_vec(xhat));
  else
    as_vec(x) = as_vec(x_half);
}

void ChocoSgd::encode(int node, std::span<const float> x, std::span<float> wire) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  s.last = s.compressor->encode(x, wire, s.rng);
  s.encoded = true;
}

void ChocoSgd::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) { // the backend steps, compresses (with encode() on the host) and sends q
    resident()->local_step(node, outgoing_id(node), step_lr(node));
    return;
  }
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const std::span<float> x_half{s.x_half.data(), dim()};
  const std::span<float> xhat{s.xhat.data(), dim()};
  const std::span<float> diff{s.scratch.data(), dim()};
  update_.step(node, grad, x, step_lr(node), x_half);
  difference(adapt_then_combine_, gamma_, x_half, xhat, {s.s.data(), dim()}, diff);
  const std::span<float> q = outgoing(node, 0);
  encode(node, diff, q);
  estimate(xhat, q);
}

void ChocoSgd::combine(int node, std::span<float> x) {
  if (resident()) { // s += W_ii q_i + sum_j W_ij q_j and the consensus step, in the backend
    queue_mix(node);
    return;
  }
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  // s_i += W_ii q_i + sum_j W_ij q_j, summed in neighbour order.
  const std::span<float> mixed{s.scratch.data(), dim()};
  mix(node, 0, sent(node, 0), mixed);
  consensus(adapt_then_combine_, gamma_, mixed, {s.s.data(), dim()}, {s.x_half.data(), dim()},
            {s.xhat.data(), dim()}, x);
}

std::int64_t ChocoSgd::message_bytes(int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (s.encoded) // else a device encoded it: its figures come in add_metrics
    stats_.encoded(s.last);
  s.encoded = false;
  const std::int64_t payload = s.compressor->encoded_bytes(wire_dim());
  for (std::size_t k = 0; k < topology_.neighbors(node).size(); ++k)
    stats_.sent(payload, wire_dim());
  return payload + kMessageHeaderBytes;
}

void ChocoSgd::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  if (ResidentVectors::EncodeSums e; resident() && resident()->take_encode_sums(e))
    stats_.encoded_sums(e.error, e.count, e.relative, e.relative_count);
  stats_.add_metrics(columns);
  GossipProtocol::add_metrics(columns);
}

void ChocoSgd::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  stats_.add_node_columns(columns);
}

} // namespace dtsim
