// SPDX-License-Identifier: MIT
// Gossip rounds: sending, the neighbourhood barrier, freshest copies, mixing inputs.
#include "sim/optimizers/gossip_protocol.hpp"

#include "sim/core/errors.hpp"
#include "sim/optimizers/weighted_sum.hpp"
#include "topologies/static_mixing.hpp"

#include <algorithm>

namespace dtsim {

GossipProtocol::GossipProtocol(const Params& p, const AlgorithmSetup& setup, const Options& options)
    : topology_(*setup.topology), mixing_(setup.mixing), lr_(p, setup, 0.05),
      async_(p.choice("mode", "sync", {"sync", "async"}) == "async"), options_(options),
      dim_(setup.num_params), wire_dim_(setup.wire_params()),
      nodes_(static_cast<std::size_t>(setup.nodes)) {
  if (!mixing_) {
    own_mixing_ = std::make_unique<StaticMixing>(topology_);
    mixing_ = own_mixing_.get();
  }
  DTSIM_ASSERT(mixing_->size() == setup.nodes, "mixing schedule and setup disagree on nodes");
  if (async_ && !options_.async_allowed)
    p.fail("mode", "expected sync: " + options_.async_refusal);
  if (mixing_->time_varying()) {
    if (!options_.time_varying_allowed)
      p.fail("name", options_.time_varying_refusal + " (topology " + mixing_->name() +
                         " is time-varying); use a static topology");
    if (async_)
      p.fail("mode", "expected sync: async gossip mixes with the freshest copy of fixed "
                     "neighbours, but topology " +
                         mixing_->name() + " changes its neighbours every round");
  }
  DTSIM_ASSERT(options_.vectors >= 1, "a gossip message holds at least one vector");
  DTSIM_ASSERT(!async_ || options_.vectors == 1, "async gossip sends one vector");
  if (options_.vectors > 1)
    pool_ = std::make_unique<BufferPool>(static_cast<std::size_t>(options_.vectors) * dim_);
  const auto max_degree = static_cast<std::size_t>(mixing_->max_degree());
  for (int i = 0; i < setup.nodes; ++i) {
    Node& s = nodes_[index(i)];
    s.mix.resize(max_degree);
    s.kept.resize(max_degree);
    s.mix_ids.resize(max_degree);
    if (async_) {
      const std::size_t deg = topology_.neighbors(i).size();
      s.latest.resize(deg);
      s.latest_step.assign(deg, 0);
    } else {
      // Two rounds in flight cover static graphs; time-varying ones add slots on demand.
      s.inbox.resize(2);
      for (RoundInbox& box : s.inbox)
        box.from.resize(max_degree);
    }
  }
}

std::int64_t GossipProtocol::message_bytes(int /*node*/) {
  return static_cast<std::int64_t>(static_cast<std::size_t>(options_.vectors) * wire_dim_ *
                                   sizeof(float)) +
         kMessageHeaderBytes;
}

std::string GossipProtocol::describe_protocol() const {
  std::string s = async_ ? "async" : "sync";
  if (mixing_->time_varying())
    s += ", " + mixing_->name() + " rounds";
  return s;
}

std::size_t GossipProtocol::state_bytes() const {
  return pool_ ? pool_->buffers_allocated() * pool_->floats_per_buffer() * sizeof(float) : 0;
}

void GossipProtocol::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  double sum = 0;
  for (const Node& s : nodes_)
    sum += static_cast<double>(s.lr);
  columns.emplace_back("lr", sum / static_cast<double>(nodes_.size()));
}

SharedBuffer GossipProtocol::new_message(Context& ctx) {
  // On a resident backend a message is an id of the engine's pool, whatever its vectors
  // (the backend's buffer for it holds them all); ids of two pools would collide.
  return pool_ && !resident_ ? pool_->acquire() : ctx.new_buffer();
}

std::span<float> GossipProtocol::outgoing(int node, int k) {
  return nodes_[index(node)].out.data().subspan(static_cast<std::size_t>(k) * dim_, dim_);
}

std::span<const float> GossipProtocol::sent(int node, int k) const {
  const Node& s = nodes_[index(node)];
  DTSIM_ASSERT(s.mix.self, "sent() needs Options::keep_sent");
  return s.mix.self.view().subspan(static_cast<std::size_t>(k) * dim_, dim_);
}

void GossipProtocol::mix_range(int node, int k, std::span<const float> self, std::size_t first,
                               std::size_t len, float* dst) const {
  const MixInputs& in = nodes_[index(node)].mix;
  const std::size_t offset = static_cast<std::size_t>(k) * dim_ + first;
  weighted_sum(
      in.self_w, self.data() + first,
      std::span<const float>(in.w).first(static_cast<std::size_t>(in.count)),
      [&](std::size_t c) { return in.in[c].view().data() + offset; }, len, dst);
}

void GossipProtocol::weighted_mix(const MixInputs& in, int k, const float* self, float* dst) const {
  const std::size_t offset = static_cast<std::size_t>(k) * dim_;
  weighted_sum_blocked(
      in.self_w, self, std::span<const float>(in.w).first(static_cast<std::size_t>(in.count)),
      [&](std::size_t c) { return in.in[c].view().data() + offset; }, dim_, dst, kBlock);
}

void GossipProtocol::mix(int node, int k, std::span<const float> self, std::span<float> dst) const {
  weighted_mix(nodes_[index(node)].mix, k, self.data(), dst.data());
}

bool GossipProtocol::keep_model_inputs(int node) {
  Node& s = nodes_[index(node)];
  if (!s.mix_pending || !combine_is_mix())
    return false;
  s.kept.self = s.mix.self;
  s.kept.self_w = s.mix.self_w;
  s.kept.count = s.mix.count;
  for (std::size_t c = 0; c < static_cast<std::size_t>(s.mix.count); ++c) {
    s.kept.in[c] = s.mix.in[c];
    s.kept.w[c] = s.mix.w[c];
  }
  for (std::size_t c = static_cast<std::size_t>(s.mix.count); c < s.kept.in.size(); ++c)
    s.kept.in[c] = SharedBuffer();
  return true;
}

void GossipProtocol::release_model_inputs(int node) {
  MixInputs& kept = nodes_[index(node)].kept;
  kept.self = SharedBuffer();
  for (SharedBuffer& in : kept.in)
    in = SharedBuffer();
  kept.count = 0;
}

void GossipProtocol::rebuild_model(int node, std::span<float> x) const {
  const MixInputs& kept = nodes_[index(node)].kept;
  DTSIM_ASSERT(kept.self, "rebuild_model() of a node whose inputs were not kept");
  // The same call as combine's mix(node, 0, sent(node, 0), x): the same bits.
  weighted_mix(kept, 0, kept.self.view().data(), x.data());
}

void GossipProtocol::set_resident(ResidentVectors& vectors,
                                  const ResidentVectors::LocalUpdateRule& rule,
                                  std::initializer_list<NodeVectors*> held) {
  vectors.set_local_update(rule);
  resident_ = &vectors;
  for (NodeVectors* v : held)
    v->release();
}

void GossipProtocol::queue_mix(int node, bool self_is_model) {
  Node& s = nodes_[index(node)];
  DTSIM_ASSERT(resident_ && (self_is_model || s.mix.self),
               "queue_mix() needs a resident backend and keep_sent");
  const auto count = static_cast<std::size_t>(s.mix.count);
  for (std::size_t c = 0; c < count; ++c)
    s.mix_ids[c] = s.mix.in[c].id();
  resident_->mix_into_model(node, self_is_model ? ResidentVectors::kOwnModel : s.mix.self.id(),
                            s.mix.self_w, std::span<const std::uint32_t>(s.mix_ids).first(count),
                            std::span<const float>(s.mix.w).first(count), mixed_lr(node));
}

void GossipProtocol::start(Context& ctx) {
  if (async_) {
    // Before its first message arrives, a neighbour's "copy" is its initial model. The
    // engine starts every node from the same model, which one buffer then serves for all
    // (said by common_model: the models are then not read, nor pulled from a backend).
    std::vector<SharedBuffer> initial(nodes_.size());
    const bool common = !ctx.common_model().empty();
    const auto first = as_vec(common ? ctx.common_model() : ctx.params_view(0));
    for (int j = 0; j < ctx.num_nodes(); ++j) {
      if (j > 0 && (common || as_vec(ctx.params_view(j)) == first)) {
        initial[index(j)] = initial[0];
        continue;
      }
      initial[index(j)] = ctx.new_buffer();
      if (resident_)
        resident_->copy_model_to_message(j, initial[index(j)].id());
      else
        as_vec(initial[index(j)].data()) = common ? first : as_vec(ctx.params_view(j));
    }
    for (int i = 0; i < ctx.num_nodes(); ++i) {
      const auto nb = topology_.neighbors(i);
      for (std::size_t k = 0; k < nb.size(); ++k)
        nodes_[index(i)].latest[k] = initial[index(nb[k])];
    }
  }
  prepare(ctx);
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    Node& s = nodes_[index(i)];
    s.out = new_message(ctx);
    s.lr = lr_.for_step(i, 0);
    s.mix_lr = s.lr;
    s.task_step = 0;
    ctx.start_gradient(i, 0);
  }
}

void GossipProtocol::after_gradient(int node, std::span<const float> x, std::span<float> grad) {
  local_step(node, x, grad);
}

void GossipProtocol::before_gradient(int node, std::span<float> x) {
  Node& s = nodes_[index(node)];
  if (!s.mix_pending)
    return;
  s.mix_pending = false;
  combine(node, x);
}

void GossipProtocol::on_gradient(Context& ctx, int node, const GradientResult&) {
  Node& s = nodes_[index(node)];
  // The task that used the previous mixing inputs is done: let them go.
  s.mix.self = SharedBuffer();
  for (int c = 0; c < s.mix.count; ++c)
    s.mix.in[index(c)] = SharedBuffer();
  s.mix.count = 0;
  if (!ready_to_send(ctx, node)) {
    s.held = true;
    s.wait_start = ctx.now();
    return;
  }
  finish_step(ctx, node);
}

void GossipProtocol::release(Context& ctx, int node) {
  Node& s = nodes_[index(node)];
  DTSIM_ASSERT(s.held, "release() of a node that is not held");
  s.held = false;
  ctx.record_idle(node, ctx.now() - s.wait_start);
  finish_step(ctx, node);
}

void GossipProtocol::finish_step(Context& ctx, int node) {
  Node& s = nodes_[index(node)];
  const RoundMixing row = mixing_->at(s.round, node);
  const std::int64_t bytes = message_bytes(node);
  for (int j : row.out)
    ctx.send(node, j, MessageInfo{kGossip, s.round + (async_ ? 1 : 0), s.round}, s.out, bytes);

  if (async_) {
    ++s.round;
    std::int64_t staleness = 0;
    for (std::int64_t step : s.latest_step)
      staleness = std::max(staleness, s.round - 1 - step);
    ctx.record_update(node, staleness);
    const auto w = topology_.weights(node);
    s.mix.self_w = static_cast<float>(topology_.self_weight(node));
    s.mix.count = static_cast<int>(s.latest.size());
    for (std::size_t k = 0; k < s.latest.size(); ++k) {
      s.mix.in[k] = s.latest[k];
      s.mix.w[k] = static_cast<float>(w[k]);
    }
    mix_next(ctx, node);
    return;
  }
  s.step_done = true;
  s.wait_start = ctx.now();
  try_mix(ctx, node);
}

int GossipProtocol::position(std::span<const int> list, int peer) const {
  const auto it = std::lower_bound(list.begin(), list.end(), peer);
  DTSIM_ASSERT(it != list.end() && *it == peer, "gossip message from a node that is not an "
                                                "in-neighbour in its round");
  return static_cast<int>(it - list.begin());
}

GossipProtocol::RoundInbox& GossipProtocol::inbox_for(Node& s, std::int64_t r) {
  RoundInbox* free_box = nullptr;
  for (RoundInbox& box : s.inbox) {
    if (box.round == r)
      return box;
    if (box.round < 0 && !free_box)
      free_box = &box;
  }
  if (!free_box) {
    // A time-varying schedule let a sender run more than one round ahead: one more slot
    // (allocated once; slots are reused afterwards).
    s.inbox.emplace_back();
    free_box = &s.inbox.back();
    free_box->from.resize(static_cast<std::size_t>(mixing_->max_degree()));
  }
  free_box->round = r;
  free_box->received = 0;
  return *free_box;
}

void GossipProtocol::on_message(Context& ctx, const Message& msg) {
  if (msg.info.tag != kGossip) {
    on_control_message(ctx, msg);
    return;
  }
  const int node = msg.dst;
  Node& s = nodes_[index(node)];
  if (async_) {
    const auto k = index(position(topology_.neighbors(node), msg.src));
    if (msg.info.version > s.latest_step[k]) {
      s.latest[k] = msg.payload;
      s.latest_step[k] = msg.info.version;
    }
    return;
  }
  DTSIM_ASSERT(msg.info.round >= s.round, "sync gossip message from a round already mixed");
  const RoundMixing row = mixing_->at(msg.info.round, node);
  RoundInbox& box = inbox_for(s, msg.info.round);
  box.from[index(position(row.in, msg.src))] = msg.payload;
  ++box.received;
  if (msg.info.round == s.round)
    try_mix(ctx, node);
}

void GossipProtocol::on_control_message(Context&, const Message& msg) {
  DTSIM_ASSERT(false, "unexpected message tag " + std::to_string(msg.info.tag));
}

void GossipProtocol::try_mix(Context& ctx, int node) {
  Node& s = nodes_[index(node)];
  if (!s.step_done)
    return;
  const RoundMixing row = mixing_->at(s.round, node);
  RoundInbox* box = nullptr;
  for (RoundInbox& b : s.inbox)
    if (b.round == s.round)
      box = &b;
  const int need = static_cast<int>(row.in.size());
  if ((box ? box->received : 0) < need)
    return;
  ctx.record_idle(node, ctx.now() - s.wait_start);
  s.step_done = false;
  s.mix.self_w = static_cast<float>(row.self_weight);
  s.mix.count = need;
  for (std::size_t k = 0; k < row.in.size(); ++k)
    s.mix.w[k] = static_cast<float>(row.weights[k]);
  if (box) {
    s.mix.in.swap(box->from); // box->from now holds the released handles of the last mix
    box->round = -1;
    box->received = 0;
  }
  ++s.round;
  ctx.record_update(node, 0);
  mix_next(ctx, node);
}

void GossipProtocol::mix_next(Context& ctx, int node) {
  Node& s = nodes_[index(node)];
  if (options_.keep_sent)
    s.mix.self = s.out;
  s.mix_pending = true;
  s.out = new_message(ctx);
  s.task_step = s.round;
  s.mix_lr = s.lr;
  s.lr = lr_.for_step(node, s.round);
  ctx.start_gradient(node, s.round);
}

} // namespace dtsim
