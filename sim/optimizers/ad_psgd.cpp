// SPDX-License-Identifier: MIT
// AD-PSGD protocol: snapshot gradients, atomic pairwise averaging, stale updates.
#include "sim/optimizers/ad_psgd.hpp"

#include "sim/core/errors.hpp"
#include "sim/optimizers/vector_ops.hpp"
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
      update_(p, setup.nodes, setup.num_params), u_(setup.nodes, setup.num_params),
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
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    nodes_[i].active = !bipartite_ || colour[i] == 0;
}

std::string AdPsgd::describe() const {
  return std::string("ad-psgd (") + (bipartite_ ? "bipartite active/passive" : "all nodes active") +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         rates_.describe() + ")";
}

std::size_t AdPsgd::state_bytes() const { // the live models are made at the start
  const std::size_t live = resident_ ? 0 : nodes_.size() * dim_ * sizeof(float);
  return update_.state_bytes() + u_.bytes() + live;
}

bool AdPsgd::attach_resident(ResidentVectors& vectors) {
  // The local step keeps u (LocalUpdate's direction) and sends nothing: the combine-then-adapt
  // rule with kNoMessage.
  ResidentVectors::LocalUpdateRule rule = update_.rule();
  rule.combine_then_adapt = true;
  vectors.set_local_update(rule);
  resident_ = &vectors;
  // The backend holds the live models, directions and momenta.
  update_.release_state();
  u_.release();
  return true;
}

AdPsgd::Target AdPsgd::live_vector(int node) {
  return {ResidentVectors::VectorRef::live(node),
          resident_ ? std::span<float>() : std::span<float>(live(node).data(), dim_)};
}

AdPsgd::Operand AdPsgd::direction_vector(int node) {
  return {ResidentVectors::VectorRef::gradient(node),
          resident_ ? std::span<const float>() : u_.span(static_cast<std::size_t>(node))};
}

void AdPsgd::apply_step(ResidentVectors::VectorOp op, Target dst, Operand a, Operand b, float s) {
  apply_named(resident_, op, dst, a, b, s);
}

std::span<const float> AdPsgd::live_model(int node) const {
  DTSIM_ASSERT(!resident_, "live_model(): the live models are on the resident backend");
  return {live_.col(node).data(), dim_};
}

void AdPsgd::start(Context& ctx) {
  using Op = ResidentVectors::VectorOp;
  // Made here, once attach_resident has had its say: a resident backend keeps them itself.
  if (!resident_)
    live_.resize(static_cast<Eigen::Index>(dim_), ctx.num_nodes());
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    const Operand model{ResidentVectors::VectorRef::model(i),
                        resident_ ? std::span<const float>() : ctx.params_view(i)};
    apply_step(Op::copy, live_vector(i), model);
    ctx.start_gradient(i, 0);
  }
}

void AdPsgd::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  if (resident_) { // u kept there, next to the node's gradient
    resident_->local_step(node, ResidentVectors::kNoMessage, 0.0f);
    return;
  }
  update_.direction(node, grad, x, u_.span(static_cast<std::size_t>(node)));
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
  apply_step(ResidentVectors::VectorOp::copy, message_vector(resident_, b), live_vector(node));
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
  using Op = ResidentVectors::VectorOp;
  const int node = request.dst;
  SharedBuffer reply = ctx.new_buffer();
  apply_step(Op::copy, message_vector(resident_, reply), live_vector(node));
  apply_step(Op::average, live_vector(node), live_vector(node),
             message_operand(resident_, request.payload));
  ++nodes_[static_cast<std::size_t>(node)].averagings;
  locks_.served(request.src);
  stats_.interaction(request.src, node);
  stats_.sent(static_cast<std::int64_t>(dim_ * sizeof(float)), dim_);
  ctx.send(node, request.src, MessageInfo{kReply, 0, 0}, std::move(reply));
}

void AdPsgd::finish(Context& ctx, const Message& reply) {
  const int node = reply.dst;
  using Op = ResidentVectors::VectorOp;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (locks_.disturbed(node)) // keeps the sum: the partner got s.sent
    apply_step(Op::add_half_difference, live_vector(node),
               message_operand(resident_, reply.payload), message_operand(resident_, s.sent));
  else
    apply_step(Op::average, live_vector(node), live_vector(node),
               message_operand(resident_, reply.payload));
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
  apply_step(ResidentVectors::VectorOp::subtract_scaled, live_vector(node), direction_vector(node),
             {}, rates_.take(node));
  ctx.record_update(node, s.averagings - s.at_snapshot);
}

void AdPsgd::next_gradient(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  apply_step(ResidentVectors::VectorOp::copy, model_vector(resident_, ctx, node),
             live_vector(node));
  s.at_snapshot = s.averagings;
  ctx.start_gradient(node, s.averagings);
}

void AdPsgd::eval_model(const Context&, std::span<float> out) const {
  // Summed in node order: the same result on every run.
  if (resident_)
    resident_->mean_of_rows(VectorRef::Kind::live, out);
  else
    mean_of_columns(live_, out);
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
