// SPDX-License-Identifier: MIT
// SwarmSGD protocol: local runs, quantized pairwise averaging, non-blocking partners.
#include "sim/optimizers/swarm_sgd.hpp"

#include "sim/core/errors.hpp"
#include "sim/optimizers/compression/cast_compressor.hpp"
#include "sim/optimizers/compression/error_feedback.hpp"
#include "sim/optimizers/compression/lattice_quantizer.hpp"
#include "sim/optimizers/resident_compression.hpp"
#include "topologies/topology.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

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
  if (!blocking_)
    scratch_.resize(d);
}

std::string SwarmSgd::describe() const {
  return "swarm-sgd (" + std::string(blocking_ ? "blocking" : "non-blocking") + ", " +
         (geometric_ ? "geometric " : "") + std::to_string(local_steps_) + " local steps, " +
         nodes_[0].compressor->describe() +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         rates_.describe() + ")";
}

std::size_t SwarmSgd::state_bytes() const {
  std::size_t floats = static_cast<std::size_t>(scratch_.size());
  for (const NodeState& s : nodes_)
    floats += static_cast<std::size_t>(s.pub.size() + s.origin.size() + s.y.size() +
                                       s.own_q.size() + s.decoded.size() + s.view.size());
  return update_.state_bytes() + floats * sizeof(float);
}

std::int64_t SwarmSgd::send_bytes() const {
  return nodes_[0].compressor->encoded_bytes(wire_dim_) + kMessageHeaderBytes;
}

std::optional<ResidentCodec> SwarmSgd::device_codec() const {
  const Compressor* c = nodes_[0].compressor.get();
  ResidentCodec codec;
  if (const auto* feedback = dynamic_cast<const ErrorFeedback*>(c)) {
    codec.error_feedback = true; // around the inner compressor's form
    c = &feedback->inner();
  }
  if (const auto* cast = dynamic_cast<const CastCompressor*>(c)) {
    codec.kind = cast->half() ? ResidentCodec::Kind::half : ResidentCodec::Kind::none;
  } else if (const auto* lattice = dynamic_cast<const LatticeQuantizer*>(c)) {
    codec.kind = ResidentCodec::Kind::lattice;
    codec.bits = lattice->bits();
    codec.side = lattice->side();
    codec.stochastic = lattice->stochastic();
  } else if (const ResidentCompression form = resident_compression(*c, dim_);
             form.kind != ResidentCompression::Kind::none) {
    codec.kind = ResidentCodec::Kind::compress; // QSGD, top-k, random-k, sign
    codec.compression = form;
  } else {
    return std::nullopt; // a compressor added at run time
  }
  return codec;
}

std::size_t SwarmSgd::resident_vectors_per_node() const {
  return dynamic_cast<const ErrorFeedback*>(nodes_[0].compressor.get()) ? 11 : 10;
}

bool SwarmSgd::can_attach_resident() const {
  return device_codec().has_value();
}

bool SwarmSgd::attach_resident(ResidentVectors& vectors) {
  if (!can_attach_resident())
    return false;
  vectors.set_local_update(update_.rule()); // the local step writes y_i (a vector by id)
  device_seeds_.assign(nodes_.size(), 0);   // drawn in start()
  ResidentCodec codec = *device_codec();
  codec.seeds = device_seeds_.data();
  vectors.set_codec(codec, this);
  resident_ = &vectors;
  update_.release_state();
  for (NodeState& s : nodes_)
    for (Vec* v : {&s.pub, &s.origin, &s.y, &s.own_q, &s.decoded, &s.view})
      Vec().swap(*v);
  Vec().swap(scratch_);
  return true;
}

NamedVector SwarmSgd::vector(int node, Slot slot) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto k = static_cast<std::size_t>(slot);
  if (resident_)
    return {ResidentVectors::VectorRef::message(s.stored[k].id()), {}};
  Vec* host[] = {&s.y, &s.origin, &s.own_q, &s.decoded, &s.view};
  return {{}, {host[k]->data(), dim_}};
}

NamedVector SwarmSgd::pub(int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  return {ResidentVectors::VectorRef::live(node),
          resident_ ? std::span<float>() : std::span<float>(s.pub.data(), dim_)};
}

NamedVector SwarmSgd::payload(SharedBuffer& b) const {
  return message_vector(resident_, b);
}

NamedOperand SwarmSgd::payload(const SharedBuffer& b) const {
  return message_operand(resident_, b);
}

void SwarmSgd::apply_step(ResidentVectors::VectorOp op, NamedVector dst, NamedOperand a,
                          NamedOperand b) {
  apply_named(resident_, op, dst, a, b);
}

void SwarmSgd::encode(int node, std::span<const float> x, std::span<float> wire) {
  stats_.encoded(
      nodes_[static_cast<std::size_t>(node)].compressor->encode(x, wire, ctx_->rng(node)));
}

void SwarmSgd::decode(int node, std::span<const float> wire, std::span<const float> ref,
                      std::span<float> out) {
  stats_.decoded(node, nodes_[static_cast<std::size_t>(node)].compressor->decode(wire, ref, out));
}

void SwarmSgd::own_view(int node, std::span<const float> wire, std::span<const float> x,
                        std::span<float> out) {
  nodes_[static_cast<std::size_t>(node)].compressor->own_view(wire, x, out);
}

void SwarmSgd::encode_named(int node, NamedOperand x, NamedVector wire) {
  if (resident_)
    resident_->encode(node, x.ref, wire.ref);
  else
    encode(node, x.host, wire.host);
}

NamedOperand SwarmSgd::decode_named(int node, const SharedBuffer& b, NamedOperand ref) {
  if (nodes_[static_cast<std::size_t>(node)].compressor->wire_is_decoded())
    return payload(b);
  const NamedVector out = vector(node, Slot::decoded);
  if (resident_)
    resident_->decode(node, payload(b).ref, ref.ref, out.ref);
  else
    decode(node, b.view(), ref.host, out.host);
  return out;
}

NamedOperand SwarmSgd::own_view_named(int node, const SharedBuffer& b, NamedOperand x,
                                      NamedVector out) {
  if (resident_)
    resident_->own_view(node, payload(b).ref, x.ref, out.ref);
  else
    own_view(node, b.view(), x.host, out.host);
  return out;
}

void SwarmSgd::take_device_figures() const {
  if (!resident_)
    return;
  if (ResidentVectors::EncodeSums e; resident_->take_encode_sums(e))
    stats_.encoded_sums(e.error, e.count, e.relative, e.relative_count);
  std::vector<std::int64_t> failures(nodes_.size(), 0);
  if (resident_->take_decode_failures(failures))
    stats_.decoded_counts(failures);
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
  using Op = ResidentVectors::VectorOp;
  ctx_ = &ctx;
  if (resident_) {
    scratch_id_ = ctx.new_buffer();
    sum_id_ = ctx.new_buffer();
  }
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    NodeState& s = nodes_[static_cast<std::size_t>(i)];
    if (resident_) {
      for (SharedBuffer& b : s.stored)
        b = ctx.new_buffer();
      Rng stream = ctx.rng(i); // a copy: the device's seed, drawn without moving the node's stream
      device_seeds_[static_cast<std::size_t>(i)] = stream.next_u64();
    }
    const NamedOperand x{ResidentVectors::VectorRef::model(i),
                         resident_ ? std::span<const float>() : ctx.params_view(i)};
    apply_step(Op::copy, vector(i, Slot::y), x);
    if (!blocking_) {
      apply_step(Op::copy, pub(i), vector(i, Slot::y));
      apply_step(Op::copy, vector(i, Slot::origin), vector(i, Slot::y));
    }
    s.target = draw_local_steps(ctx, i);
    s.lr = rates_.take(i);
    ctx.start_gradient(i, 0);
  }
}

void SwarmSgd::before_gradient(int node, std::span<float> x) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (!s.copy_y)
    return;
  s.copy_y = false;
  if (resident_) // x = 1 * y: a mixing of one input, exact
    resident_->mix_into_model(node, s.stored[static_cast<std::size_t>(Slot::y)].id(), 1.0f, {}, {},
                              0.0f);
  else
    as_vec(x) = s.y;
}

void SwarmSgd::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (resident_) // y = x - lr u, the vector y names
    resident_->local_step(node, s.stored[static_cast<std::size_t>(Slot::y)].id(), s.lr);
  else
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

void SwarmSgd::initiate(Context& ctx, int node) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const auto nb = topology_.neighbors(node);
  const int partner = nb[ctx.rng(node).below(nb.size())];
  SharedBuffer b = ctx.new_buffer();
  encode_named(node, model(node), payload(b));
  // Our own Q(model) as the partner will rebuild it (it decodes against a nearby model).
  own_view_named(node, b, model(node), vector(node, Slot::own_q));
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
  SharedBuffer reply = ctx.new_buffer();
  encode_named(node, model(node), payload(reply));
  const NamedOperand q_initiator = decode_named(node, request.payload, model(node));
  const NamedOperand q_self =
      s.compressor->wire_is_decoded()
          ? payload(std::as_const(reply))
          : own_view_named(node, reply, model(node), vector(node, Slot::view));
  // The initiator computes the same sum in the same order: both hold the same A.
  apply_step(ResidentVectors::VectorOp::average, model(node), q_initiator, q_self);
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
  using Op = ResidentVectors::VectorOp;
  const int node = reply.dst;
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  const NamedOperand q_partner = decode_named(node, reply.payload, model(node));
  const bool disturbed = locks_.disturbed(node);
  if (blocking_) { // y = (Q_i + Q_j) / 2, or y += (Q_i + Q_j) / 2 - Q_i (a broken deadlock:
                   // the partner averaged with Q_i, so the sum is kept)
    apply_step(disturbed ? Op::average_step_add : Op::average, vector(node, Slot::y),
               vector(node, Slot::own_q), q_partner);
  } else {
    // X = (Q(X_i) + Q(X_j)) / 2 - (o - y), or its increment form X += (Q_i + Q_j) / 2 - Q_i
    // - (o - y) (a broken deadlock: the partner averaged with Q_i): o - y first, as one
    // expression would round it.
    const NamedVector own_q = vector(node, Slot::own_q);
    if (disturbed) {
      const NamedVector t =
          resident_ ? payload(scratch_id_) : NamedVector{{}, {scratch_.data(), dim_}};
      apply_step(Op::subtract, t, vector(node, Slot::origin), vector(node, Slot::y));
      apply_step(Op::average_step_less, t, own_q, q_partner);
      apply_step(Op::add, pub(node), t);
    } else {
      apply_step(Op::subtract, pub(node), vector(node, Slot::origin), vector(node, Slot::y));
      apply_step(Op::average_less, pub(node), own_q, q_partner);
    }
    apply_step(Op::copy, vector(node, Slot::origin), pub(node));
    apply_step(Op::copy, vector(node, Slot::y), pub(node));
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
  // The current model of node i is X_i + (y_i - o_i) (y_i the task's model while it
  // computes): (X_i + y_i) - o_i summed in node order, then / n.
  if (resident_) {
    using Op = ResidentVectors::VectorOp;
    using Ref = ResidentVectors::VectorRef;
    const Ref sum = Ref::message(sum_id_.id()), t = Ref::message(scratch_id_.id());
    resident_->apply(Op::zero, sum, {});
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
      const NodeState& s = nodes_[static_cast<std::size_t>(i)];
      const Ref y = ctx.computing(i)
                        ? Ref::model(i)
                        : Ref::message(s.stored[static_cast<std::size_t>(Slot::y)].id());
      if (blocking_) { // the host's o += y
        resident_->apply(Op::add, sum, y);
        continue;
      }
      resident_->apply(Op::copy, t, Ref::live(i));
      resident_->apply(Op::add, t, y);
      resident_->apply(Op::subtract, t, t,
                       Ref::message(s.stored[static_cast<std::size_t>(Slot::origin)].id()));
      resident_->apply(Op::add, sum, t);
    }
    resident_->apply(Op::divide, sum, {}, {}, static_cast<float>(nodes_.size()));
    resident_->read(sum, out);
    return;
  }
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
  take_device_figures();
  stats_.add_metrics(columns);
  rates_.add_metrics(columns);
}

void SwarmSgd::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  take_device_figures();
  stats_.add_node_columns(columns);
}

} // namespace dtsim
