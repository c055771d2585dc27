// SPDX-License-Identifier: MIT
// The round protocol every gossip method shares: local step, exchange, barrier, mixing.
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/engine/shared_buffer.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/lr_schedule.hpp"
#include "sim/optimizers/node_vectors.hpp"
#include "topologies/mixing_schedule.hpp"

#include <initializer_list>
#include <memory>
#include <vector>

namespace dtsim {

// Gossip methods (dsgd, qg-dsgdm, d2, gradient tracking, momentum tracking, DecentLaM,
// CHOCO-SGD) run the same loop at every node; only the vector math differs, and that is
// what a subclass writes, in two hooks that run inside the node's gradient task:
//   local_step(t): right after the gradient of step t at x^t: fill the message vectors
//                  (outgoing(node, k), `vectors` of them, each d floats) and node state.
//   combine(t):    at the start of step t+1, with round t's messages from the in-neighbours
//                  of W(t): rewrite x to x^{t+1} (mix() computes W-weighted sums).
// Between them, on the engine thread, the node sends its message to the out-neighbours of
// W(t) (one message of vectors * d floats: the network is charged for all of it), then:
// mode sync (default): waits until it has every in-neighbour's round-t message (a
//   neighbourhood barrier; waiting counts as idle time), records an update with staleness 0
//   and starts step t+1. W(t) may change with t (a time-varying MixingSchedule).
// mode async (dtsim extension; static topologies only): mixes at once with the freshest
//   copy it holds of each neighbour's message; staleness = own steps - 1 - the sender's step
//   count stamped on the oldest copy used. A copy is replaced only by a newer one (links with
//   jitter can reorder messages).
// The step size of node i's step t is the LrSchedule's rate at i's epoch position t*B/|D_i|;
// /metrics gets the nodes' mean current rate as column `lr`.
// Keys read here: lr and lr_schedule (LrSchedule), mode (sync | async).
class GossipProtocol : public Algorithm {
public:
  void start(Context& ctx) final;
  void on_gradient(Context& ctx, int node, const GradientResult& result) final;
  void on_message(Context& ctx, const Message& msg) final;
  void before_gradient(int node, std::span<float> x) final;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) final;
  bool reads_gradient_after_task() const override { return false; } // used in the task
  // For methods whose combine is a plain mix (combine_is_mix): the node's next model is
  // its mixing inputs, kept until the following mixing.
  bool keep_model_inputs(int node) final;
  void rebuild_model(int node, std::span<float> x) const final;
  void release_model_inputs(int node) final;
  bool can_keep_model_inputs() const final { return combine_is_mix(); }
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  // The algorithm's own message pool (multi-vector messages); subclasses add their state.
  std::size_t state_bytes() const override;

  static constexpr std::int32_t kGossip = 0; // tag of round messages
  // Block length for the methods' blocked loops: a few vectors' blocks stay in L1.
  static constexpr std::size_t kBlock = 2048;

  // What a method needs from the protocol.
  struct Options {
    int vectors = 1; // d-float vectors per message
    // Whether mode: async is allowed; if not, `async_refusal` says why (one line).
    bool async_allowed = true;
    std::string async_refusal;
    // Whether a time-varying schedule (one_peer_exponential, random_pairs) is allowed.
    bool time_varying_allowed = true;
    std::string time_varying_refusal;
    // combine() reads the node's own sent message (sent()): keep it until then.
    bool keep_sent = true;
  };

protected:
  GossipProtocol(const Params& p, const AlgorithmSetup& setup, const Options& options);

  // Hooks inside node's gradient task (see the class comment). They may touch x, grad and
  // node-private state only.
  virtual void local_step(int node, std::span<const float> x, std::span<float> grad) = 0;
  virtual void combine(int node, std::span<float> x) = 0;
  // True when combine(node, x) is exactly mix(node, 0, sent(node, 0), x) (host vectors):
  // the engine may then keep a node's model as its mixing inputs (keep_model_inputs).
  virtual bool combine_is_mix() const { return false; }

  // Engine thread: false holds node's messages of the step that just finished (round(node))
  // until the subclass calls release(); meanwhile it may exchange its own messages (any tag
  // but kGossip), which arrive in on_control_message.
  virtual bool ready_to_send(Context&, int /*node*/) { return true; }
  virtual void on_control_message(Context& ctx, const Message& msg);
  void release(Context& ctx, int node);
  // Engine thread, at time 0 before the first gradients start: state that needs the other
  // nodes' initial models or the node's random stream (CHOCO's public estimates).
  virtual void prepare(Context& /*ctx*/) {}
  // Engine thread, once per finished step before its messages go out: their wire size
  // (payload and envelope). Default: the message's vectors in dense float32, counted from
  // wire_dim() so that timing-only runs (empty vectors) are charged the same.
  virtual std::int64_t message_bytes(int node);

  // --- for the hooks ---
  // Message vector k of the step in progress (writable in local_step, and on the engine
  // thread while the node is held).
  std::span<float> outgoing(int node, int k);
  // Vector k of the node's own message of the round combine() mixes (requires keep_sent).
  std::span<const float> sent(int node, int k) const;
  // dst[0..len) = W_ii * self[first..first+len) + sum_j W_ij * m_j[first..first+len), with
  // m_j vector k of in-neighbour j's message of the round combine() mixes, summed in
  // neighbour order. dst may be self.data() + first (in place).
  void mix_range(int node, int k, std::span<const float> self, std::size_t first, std::size_t len,
                 float* dst) const;
  // Block by block, so that each block of dst stays in L1 while the neighbours' blocks are
  // added to it: one read of every input and one write of dst, instead of a pass over dst per
  // neighbour. Per element the operations and their order are those of one whole-vector pass.
  void mix(int node, int k, std::span<const float> self, std::span<float> dst) const;
  // --- a resident backend (ResidentVectors) instead of host vectors ---
  // From attach_resident: the backend takes the local update `rule`, the hooks then queue
  // their math there instead of doing it, and `held` (the host's per-node vectors the
  // backend now keeps) are released: they would only take memory.
  void set_resident(ResidentVectors& vectors, const ResidentVectors::LocalUpdateRule& rule,
                    std::initializer_list<NodeVectors*> held = {});
  ResidentVectors* resident() const { return resident_; }
  // mix(node, 0, sent(node, 0), x), or with self_is_model mix(node, 0, x, x), as the
  // resident backend's mix_into_model.
  void queue_mix(int node, bool self_is_model = false);
  // The id of the message the node fills in the step in progress (outgoing(node, 0)).
  std::uint32_t outgoing_id(int node) const { return nodes_[index(node)].out.id(); }
  // 0-based index of the step whose local_step runs (in combine: the step about to start).
  std::int64_t task_step(int node) const { return nodes_[index(node)].task_step; }
  float step_lr(int node) const { return nodes_[index(node)].lr; }      // of task_step
  float mixed_lr(int node) const { return nodes_[index(node)].mix_lr; } // of task_step - 1

  // --- engine thread ---
  std::int64_t round(int node) const { return nodes_[index(node)].round; }
  bool async() const { return async_; }
  std::size_t dim() const { return dim_; }
  std::size_t wire_dim() const { return wire_dim_; } // see AlgorithmSetup::wire_params()
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const LrSchedule& lr_schedule() const { return lr_; }
  // "sync", "async", plus ", one_peer_exponential rounds" and the lr schedule, for describe().
  std::string describe_protocol() const;

private:
  struct RoundInbox {
    std::int64_t round = -1; // -1: free
    int received = 0;
    std::vector<SharedBuffer> from; // by position in the round's in-neighbour list
  };
  struct MixInputs {
    SharedBuffer self; // the node's own message (with Options::keep_sent)
    float self_w = 1;
    int count = 0;                // in-neighbours mixed
    std::vector<SharedBuffer> in; // their messages, max-degree slots
    std::vector<float> w;
    void resize(std::size_t max_degree) {
      in.resize(max_degree);
      w.resize(max_degree);
    }
  };
  struct Node {
    std::int64_t round = 0;        // steps whose messages the node has mixed (sync) or sent (async)
    bool step_done = false;        // sync: the current round's message is sent
    bool held = false;             // ready_to_send said no
    SharedBuffer out;              // the message of the step in progress
    std::vector<RoundInbox> inbox; // sync
    std::vector<SharedBuffer> latest;      // async: freshest copy per neighbour
    std::vector<std::int64_t> latest_step; // async
    // Inputs of the mixing that the next task applies (fixed before it starts).
    bool mix_pending = false;
    MixInputs mix;
    std::vector<std::uint32_t> mix_ids; // resident: mix.in's ids, filled by queue_mix
    // The inputs of the last mixing whose result the engine keeps as its inputs
    // (keep_model_inputs), held until it rebuilds the model (release_model_inputs) or
    // keeps the next one.
    MixInputs kept;
    std::int64_t task_step = 0;
    float lr = 0;
    float mix_lr = 0;
    SimTime wait_start;
  };

  static std::size_t index(int node) { return static_cast<std::size_t>(node); }
  SharedBuffer new_message(Context& ctx);
  void finish_step(Context& ctx, int node);
  void try_mix(Context& ctx, int node);
  void mix_next(Context& ctx, int node);
  RoundInbox& inbox_for(Node& s, std::int64_t r);
  // dst = in.self_w * self + sum_c in.w[c] * (vector k of in.in[c]), block by block.
  void weighted_mix(const MixInputs& in, int k, const float* self, float* dst) const;
  int position(std::span<const int> list, int peer) const;

  const Topology& topology_;
  std::unique_ptr<MixingSchedule> own_mixing_; // when the setup gives none
  const MixingSchedule* mixing_;
  LrSchedule lr_;
  bool async_;
  Options options_;
  std::size_t dim_;
  std::size_t wire_dim_;
  std::unique_ptr<BufferPool> pool_; // messages of more than one vector
  std::vector<Node> nodes_;
  ResidentVectors* resident_ = nullptr;
};

} // namespace dtsim
