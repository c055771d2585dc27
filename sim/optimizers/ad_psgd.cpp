// SPDX-License-Identifier: MIT
// AD-PSGD protocol: snapshot gradients, atomic pairwise averaging, stale updates.
#include "sim/optimizers/ad_psgd.hpp"

#include "sim/core/errors.hpp"
#include "topologies/topology.hpp"

#include <deque>

namespace dtsim {
namespace {

// Colour 0/1 per node by breadth-first search from node 0; empty if an edge joins two nodes
// of one colour (the graph is not bipartite).
std::vector<int> two_colouring(const Topology& t) {
  std::vector<int> colour(static_cast<std::size_t>(t.size()), -1);
  std::deque<int> queue;
  for (int start = 0; start < t.size(); ++start) {
    if (colour[static_cast<std::size_t>(start)] >= 0)
      continue;
    colour[static_cast<std::size_t>(start)] = 0;
    queue.push_back(start);
    while (!queue.empty()) {
      const int i = queue.front();
      queue.pop_front();
      for (int j : t.neighbors(i)) {
        int& cj = colour[static_cast<std::size_t>(j)];
        if (cj < 0) {
          cj = 1 - colour[static_cast<std::size_t>(i)];
          queue.push_back(j);
        } else if (cj == colour[static_cast<std::size_t>(i)]) {
          return {};
        }
      }
    }
  }
  return colour;
}

} // namespace

AdPsgd::AdPsgd(const Params& p, const AlgorithmSetup& setup)
    : topology_(*setup.topology), rates_(p, setup, 0.05),
      split_(p.choice("split", "auto", {"auto", "bipartite", "none"})), dim_(setup.num_params),
      update_(p, setup.nodes, setup.num_params),
      live_(static_cast<Eigen::Index>(setup.num_params), setup.nodes),
      nodes_(static_cast<std::size_t>(setup.nodes)), locks_(setup.nodes),
      stats_(setup.nodes, true) {
  if (setup.nodes < 2)
    p.fail("name", "ad-psgd averages each step with a neighbour: expected nodes >= 2");
  const std::vector<int> colour = two_colouring(topology_);
  if (split_ == "bipartite" && colour.empty())
    p.fail("split", "expected a bipartite topology for split: bipartite (this " + topology_.name() +
                        " of " + std::to_string(topology_.size()) +
                        " nodes is not; split: none detects and breaks deadlocks)");
  bipartite_ = split_ != "none" && !colour.empty();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].active = !bipartite_ || colour[i] == 0;
    nodes_[i].u.resize(static_cast<Eigen::Index>(setup.num_params));
  }
}

std::string AdPsgd::describe() const {
  return std::string("ad-psgd (") + (bipartite_ ? "bipartite active/passive" : "all nodes active") +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         rates_.describe() + ")";
}

std::size_t AdPsgd::state_bytes() const {
  return update_.state_bytes() +
         2 * static_cast<std::size_t>(live_.size()) * sizeof(float); // live models + u
}

std::span<const float> AdPsgd::live_model(int node) const {
  return {live_.col(node).data(), dim_};
}

void AdPsgd::start(Context& ctx) {
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    live(i) = as_vec(ctx.params_view(i));
    ctx.start_gradient(i, 0);
  }
}

void AdPsgd::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  Vec& u = nodes_[static_cast<std::size_t>(node)].u;
  update_.direction(node, grad, x, {u.data(), dim_});
}

void AdPsgd::on_gradient(Context& ctx, int node, const GradientResult&) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (!s.active) {
    apply_update(ctx, node);
    next_gradient(ctx, node);
    return;
  }
  const auto nb = topology_.neighbors(node);
  const int partner = nb[ctx.rng(node).below(nb.size())];
  SharedBuffer b = ctx.new_buffer();
  as_vec(b.data()) = live(node);
  s.sent = b;
  s.wait_start = ctx.now();
  locks_.begin(node, partner);
  stats_.sent(static_cast<std::int64_t>(dim_ * sizeof(float)), dim_);
  ctx.send(node, partner, MessageInfo{kRequest, s.averagings, 0}, std::move(b));
}

void AdPsgd::on_message(Context& ctx, const Message& msg) {
  if (msg.info.tag == kReply) {
    finish(ctx, msg);
    return;
  }
  DTSIM_ASSERT(msg.info.tag == kRequest, "ad-psgd: unknown message");
  const int node = msg.dst;
  if (!locks_.waiting(node)) {
    serve(ctx, msg);
  } else if (locks_.closes_cycle(node, msg.src)) {
    stats_.deadlock_broken();
    locks_.mark_disturbed(node);
    serve(ctx, msg);
  } else {
    locks_.hold(msg);
  }
}

void AdPsgd::serve(Context& ctx, const Message& request) {
  const int node = request.dst;
  SharedBuffer reply = ctx.new_buffer();
  auto x = live(node);
  const auto other = as_vec(request.payload.view());
  as_vec(reply.data()) = x;
  x = (x + other) * 0.5f;
  ++nodes_[static_cast<std::size_t>(node)].averagings;
  locks_.served(request.src);
  stats_.interaction(request.src, node);
  stats_.sent(static_cast<std::int64_t>(dim_ * sizeof(float)), dim_);
  ctx.send(node, request.src, MessageInfo{kReply, 0, 0}, std::move(reply));
}

void AdPsgd::finish(Context& ctx, const Message& reply) {
  const int node = reply.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  auto x = live(node);
  const auto other = as_vec(reply.payload.view());
  if (locks_.disturbed(node))
    x += (other - as_vec(s.sent.view())) * 0.5f; // keeps the sum: the partner got s.sent
  else
    x = (x + other) * 0.5f;
  ++s.averagings;
  s.sent = SharedBuffer();
  ctx.record_idle(node, ctx.now() - s.wait_start);
  apply_update(ctx, node);
  locks_.end(node);
  while (locks_.has_held(node))
    serve(ctx, locks_.take_held(node));
  next_gradient(ctx, node);
}

void AdPsgd::apply_update(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  live(node) -= rates_.take(node) * s.u;
  ctx.record_update(node, s.averagings - s.at_snapshot);
}

void AdPsgd::next_gradient(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  as_vec(ctx.params(node)) = live(node);
  s.at_snapshot = s.averagings;
  ctx.start_gradient(node, s.averagings);
}

void AdPsgd::eval_model(const Context&, std::span<float> out) const {
  // Summed in node order: the same result on every run.
  VecMap o = as_vec(out);
  o = live_.col(0);
  for (Eigen::Index i = 1; i < live_.cols(); ++i)
    o += live_.col(i);
  o /= static_cast<float>(live_.cols());
}

void AdPsgd::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  stats_.add_metrics(columns);
  rates_.add_metrics(columns);
}

void AdPsgd::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  stats_.add_node_columns(columns);
}

} // namespace dtsim
