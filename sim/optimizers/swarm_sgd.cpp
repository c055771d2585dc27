// SPDX-License-Identifier: MIT
// SwarmSGD protocol: local runs, quantized pairwise averaging, non-blocking partners.
#include "sim/optimizers/swarm_sgd.hpp"

#include "sim/core/errors.hpp"
#include "topologies/topology.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

SwarmSgd::SwarmSgd(const Params& p, const AlgorithmSetup& setup)
    : topology_(*setup.topology), rates_(p, setup, 0.05),
      local_steps_(static_cast<int>(p.integer("local_steps", 2, Range::between(1, 1000000)))),
      geometric_(p.choice("local_steps_dist", "fixed", {"fixed", "geometric"}) == "geometric"),
      blocking_(p.flag("blocking", false)), dim_(setup.num_params), wire_dim_(setup.wire_params()),
      update_(p, setup.nodes, setup.num_params), nodes_(static_cast<std::size_t>(setup.nodes)),
      locks_(setup.nodes), stats_(setup.nodes, true) {
  if (setup.nodes < 2)
    p.fail("name", "swarm-sgd averages with a random neighbour: expected nodes >= 2");
  const Params cp = p.child("compressor");
  const auto d = static_cast<Eigen::Index>(dim_);
  for (NodeState& s : nodes_) {
    s.compressor = make_compressor(cp, CompressorSetup{dim_}, "lattice");
    s.y.resize(d);
    s.own_q.resize(d);
    if (!blocking_) {
      s.pub.resize(d);
      s.origin.resize(d);
    }
    if (!s.compressor->wire_is_decoded()) {
      s.decoded.resize(d);
      s.view.resize(d);
    }
  }
}

std::string SwarmSgd::describe() const {
  return "swarm-sgd (" + std::string(blocking_ ? "blocking" : "non-blocking") + ", " +
         (geometric_ ? "geometric " : "") + std::to_string(local_steps_) + " local steps, " +
         nodes_[0].compressor->describe() +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         rates_.describe() + ")";
}

std::size_t SwarmSgd::state_bytes() const {
  std::size_t floats = 0;
  for (const NodeState& s : nodes_)
    floats += static_cast<std::size_t>(s.pub.size() + s.origin.size() + s.y.size() +
                                       s.own_q.size() + s.decoded.size() + s.view.size());
  return update_.state_bytes() + floats * sizeof(float);
}

std::int64_t SwarmSgd::send_bytes() const {
  return nodes_[0].compressor->encoded_bytes(wire_dim_) + kMessageHeaderBytes;
}

int SwarmSgd::draw_local_steps(Context& ctx, int node) {
  if (!geometric_ || local_steps_ == 1)
    return local_steps_;
  // Geometric on {1, 2, ...} with mean H: 1 + floor(log U / log(1 - 1/H)), U in (0, 1].
  const double u = 1.0 - ctx.rng(node).uniform();
  const double k = 1.0 + std::floor(std::log(u) / std::log(1.0 - 1.0 / local_steps_));
  return static_cast<int>(std::min(k, 1000.0 * local_steps_));
}

void SwarmSgd::start(Context& ctx) {
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    s.y = as_vec(ctx.params_view(i));
    if (!blocking_) {
      s.pub = s.y;
      s.origin = s.y;
    }
    s.target = draw_local_steps(ctx, i);
    s.lr = rates_.take(i);
    ctx.start_gradient(i, 0);
  }
}

void SwarmSgd::before_gradient(int node, std::span<float> x) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (s.copy_y)
    as_vec(x) = s.y;
  s.copy_y = false;
}

void SwarmSgd::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  update_.step(node, grad, x, s.lr, {s.y.data(), dim_});
}

void SwarmSgd::next_gradient(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  s.copy_y = true;
  s.lr = rates_.take(node);
  ctx.start_gradient(node, 0);
}

void SwarmSgd::on_gradient(Context& ctx, int node, const GradientResult&) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  ++s.steps;
  ctx.record_update(node, -1);
  if (!s.deferred.empty()) { // blocking: the partners that waited for this gradient
    while (!s.deferred.empty()) {
      const Message m = std::move(s.deferred.front());
      s.deferred.pop_front();
      serve(ctx, m);
    }
    next_gradient(ctx, node);
    return;
  }
  if (s.steps >= s.target)
    initiate(ctx, node);
  else
    next_gradient(ctx, node);
}

std::span<const float> SwarmSgd::decode(int node, const SharedBuffer& payload, const Vec& ref) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const Compressor& c = *s.compressor;
  if (c.wire_is_decoded())
    return payload.view();
  stats_.decoded(node, c.decode(payload.view(), {ref.data(), dim_}, {s.decoded.data(), dim_}));
  return {s.decoded.data(), dim_};
}

void SwarmSgd::initiate(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto nb = topology_.neighbors(node);
  const int partner = nb[ctx.rng(node).below(nb.size())];
  const Vec& m = model(s);
  SharedBuffer b = ctx.new_buffer();
  stats_.encoded(s.compressor->encode({m.data(), dim_}, b.data(), ctx.rng(node)));
  // Our own Q(model) as the partner will rebuild it (it decodes against a nearby model).
  s.compressor->own_view(b.view(), {m.data(), dim_}, {s.own_q.data(), dim_});
  s.wait_start = ctx.now();
  locks_.begin(node, partner);
  stats_.sent(send_bytes() - kMessageHeaderBytes, wire_dim_);
  ctx.send(node, partner, MessageInfo{kRequest, s.steps, 0}, std::move(b), send_bytes());
}

void SwarmSgd::on_message(Context& ctx, const Message& msg) {
  if (msg.info.tag == kReply) {
    finish(ctx, msg);
    return;
  }
  DTSIM_ASSERT(msg.info.tag == kRequest, "swarm-sgd: unknown message");
  const int node = msg.dst;
  if (locks_.waiting(node)) {
    if (!locks_.closes_cycle(node, msg.src)) {
      locks_.hold(msg);
      return;
    }
    stats_.deadlock_broken();
    locks_.mark_disturbed(node);
  } else if (blocking_ && ctx.computing(node)) {
    nodes_[static_cast<std::size_t>(node)].deferred.push_back(msg);
    return;
  }
  serve(ctx, msg);
}

void SwarmSgd::serve(Context& ctx, const Message& request) {
  const int node = request.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  Vec& m = model(s);
  Compressor& c = *s.compressor;
  SharedBuffer reply = ctx.new_buffer();
  stats_.encoded(c.encode({m.data(), dim_}, reply.data(), ctx.rng(node)));
  const auto q_initiator = as_vec(decode(node, request.payload, m));
  std::span<const float> q_self = reply.view();
  if (!c.wire_is_decoded()) {
    c.own_view(reply.view(), {m.data(), dim_}, {s.view.data(), dim_});
    q_self = {s.view.data(), dim_};
  }
  // The initiator computes the same sum in the same order: both hold the same A.
  m = (q_initiator + as_vec(q_self)) * 0.5f;
  if (blocking_) {
    s.steps = 0; // the partner's local run restarts from A
    s.target = draw_local_steps(ctx, node);
    stats_.partner_staleness(0);
  } else {
    stats_.partner_staleness(s.steps);
  }
  locks_.served(request.src);
  stats_.interaction(request.src, node);
  stats_.sent(send_bytes() - kMessageHeaderBytes, wire_dim_);
  ctx.send(node, request.src, MessageInfo{kReply, s.steps, 0}, std::move(reply), send_bytes());
}

void SwarmSgd::finish(Context& ctx, const Message& reply) {
  const int node = reply.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  Vec& m = model(s);
  const auto q_partner = as_vec(decode(node, reply.payload, m));
  const bool disturbed = locks_.disturbed(node);
  if (blocking_) {
    if (disturbed) // keeps the sum: the partner averaged with own_q
      s.y += (s.own_q + q_partner) * 0.5f - s.own_q;
    else
      s.y = (s.own_q + q_partner) * 0.5f;
  } else {
    if (disturbed)
      s.pub += (s.own_q + q_partner) * 0.5f - s.own_q - (s.origin - s.y);
    else
      s.pub = (s.own_q + q_partner) * 0.5f - (s.origin - s.y);
    s.origin = s.pub;
    s.y = s.pub;
  }
  s.steps = 0;
  s.target = draw_local_steps(ctx, node);
  ctx.record_idle(node, ctx.now() - s.wait_start);
  locks_.end(node);
  while (locks_.has_held(node))
    serve(ctx, locks_.take_held(node));
  next_gradient(ctx, node);
}

void SwarmSgd::eval_model(const Context& ctx, std::span<float> out) const {
  // The current model of node i is X_i + (y_i - o_i); summed in node order.
  VecMap o = as_vec(out);
  o.setZero();
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
    const NodeState& s = nodes_[static_cast<std::size_t>(i)];
    const auto y = ctx.computing(i) ? as_vec(ctx.params_view(i))
                                    : as_vec(std::span<const float>(s.y.data(), dim_));
    if (blocking_)
      o += y;
    else
      o += s.pub + y - s.origin;
  }
  o /= static_cast<float>(nodes_.size());
}

void SwarmSgd::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  stats_.add_metrics(columns);
  rates_.add_metrics(columns);
}

void SwarmSgd::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  stats_.add_node_columns(columns);
}

} // namespace dtsim
