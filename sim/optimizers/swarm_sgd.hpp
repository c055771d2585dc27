// SPDX-License-Identifier: MIT
// SwarmSGD: pairwise quantized averaging between runs of local SGD steps (Nadiradze et al.).
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/gossip_stats.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/named_vectors.hpp"
#include "sim/optimizers/node_rates.hpp"
#include "sim/optimizers/pairwise_locks.hpp"

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

namespace dtsim {

// docs/algorithms.md, section 4 (structure as in the FSPDA re-implementation; the paper's
// Algorithm 1 could not be read). Per node: public model X_i (what partners average with),
// origin o_i (X_i when i last initiated) and working model y_i, on which the local SGD steps
// run (the engine's node model). After H_i local steps (fixed H, or Geometric with mean H,
// redrawn each time) node i picks a uniform neighbour j, sends Q(X_i) and waits for Q(X_j):
//   A = (Q(X_i) + Q(X_j)) / 2
//   j (on the request): X_j = A; its local run goes on (non-blocking: o_j, y_j untouched;
//     its progress y_j - o_j reaches X_j when j next initiates)
//   i (on the reply):   X_i = A - (o_i - y_i); o_i = y_i = X_i; h_i = 0
// Both sides compute the same A: each rebuilds its own Q(X) as the partner decodes it
// (the lattice quantizer decodes against the receiver's public model; failures counted).
// blocking: true (ablation): the partner stops: a request that reaches a computing node
// waits for its gradient; then both average their working models, y = (Q(y_i) + Q(y_j))/2,
// and both restart their local runs from it.
// A waiting initiator holds requests back (PairwiseLocks; deadlock cycles are broken and
// the broken node then applies A - Q(X_i) as an increment, which keeps the sum).
// Local steps are node updates (staleness not applicable); the partner's staleness (local
// steps not yet in its public model) is the trace's partner_staleness_mean. The evaluation
// model is the mean of the nodes' current models X_i + (y_i - o_i).
// Keys: lr (> 0, default 0.05), lr_schedule (NodeRates), local_steps (H >= 1, default 2),
// local_steps_dist (fixed | geometric, default fixed), blocking (default false), compressor (map;
// default {kind: lattice}; see compression/), and LocalUpdate's momentum, nesterov, weight_decay.
class SwarmSgd final : public Algorithm, private ResidentCodecHost {
public:
  SwarmSgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  void start(Context& ctx) override;
  void on_gradient(Context& ctx, int node, const GradientResult& r) override;
  void on_message(Context& ctx, const Message& msg) override;
  void before_gradient(int node, std::span<float> x) override;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) override;
  bool reads_gradient_after_task() const override { return false; } // used in the task
  void eval_model(const Context& ctx, std::span<float> out) const override;
  std::size_t state_bytes() const override;
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  void add_node_columns(
      std::vector<std::pair<std::string, std::vector<double>>>& columns) const override;

  // On a resident backend (with any built-in compressor, also with error feedback): the public
  // models (live rows; blocking: y_i itself), y_i, o_i, Q(X_i) and the decodings stay there as
  // vectors the protocol names, each step above queued as the same element-wise step
  // (vector_ops.hpp) or compressor step (ResidentVectors::encode, decode, own_view) that the host
  // path runs; the node's model takes y_i as a mixing of one input, and the local step writes y_i.
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override;
  // Model, gradient, momentum, X, y, o, Q(X), a decoding, a view and about one message:
  // ten, and with error feedback the residual.
  std::size_t resident_vectors_per_node() const override;

  static constexpr std::int32_t kRequest = 1;
  static constexpr std::int32_t kReply = 2;

private:
  struct NodeState {
    Vec pub;     // X_i (non-blocking only)
    Vec origin;  // o_i (non-blocking only)
    Vec y;       // y_i between gradients; written by the task's local step
    Vec own_q;   // Q(model sent), as the partner rebuilds it (kept while waiting)
    Vec decoded; // the partner's model, decoded
    Vec view;    // scratch: own reconstruction of a reply (reference-point compressors)
    // On a resident backend: y, o, Q(X), decoded and view, by id (Slot's order).
    std::array<SharedBuffer, 5> stored;
    bool copy_y = false; // the next task starts from y
    float lr = 0;        // the step size of the gradient in flight
    int steps = 0;       // local steps since the last initiation (h_i)
    int target = 1;      // H_i
    std::unique_ptr<Compressor> compressor;
    std::deque<Message> deferred; // blocking: requests waiting for the gradient in flight
    SimTime wait_start;
  };
  // The vectors the protocol's steps name (host memory, or the resident backend's).
  enum class Slot : std::uint32_t { y, origin, own_q, decoded, view, count };
  NamedVector vector(int node, Slot slot);
  NamedVector pub(int node);
  NamedVector payload(SharedBuffer& b) const; // requires: b's only handle (not yet sent)
  NamedOperand payload(const SharedBuffer& b) const;
  NamedVector model(int node) { return blocking_ ? vector(node, Slot::y) : pub(node); }
  void apply_step(ResidentVectors::VectorOp op, NamedVector dst, NamedOperand a,
                  NamedOperand b = {});
  // The compressor's steps on named vectors: the host's (ResidentCodecHost, below) or the
  // resident backend's.
  void encode_named(int node, NamedOperand x, NamedVector wire);
  // The partner's model from its message, decoded against `ref` (or the payload itself).
  NamedOperand decode_named(int node, const SharedBuffer& payload, NamedOperand ref);
  // Q(X) as its receiver rebuilds it: into `out` (or the payload itself).
  NamedOperand own_view_named(int node, const SharedBuffer& payload, NamedOperand x,
                              NamedVector out);
  // ResidentCodecHost: the node's compressor and its stream (ctx_'s), its figures counted.
  void encode(int node, std::span<const float> x, std::span<float> wire) override;
  void decode(int node, std::span<const float> wire, std::span<const float> ref,
              std::span<float> out) override;
  void own_view(int node, std::span<const float> wire, std::span<const float> x,
                std::span<float> out) override;
  std::optional<ResidentCodec> device_codec() const; // none for a compressor a device lacks
  void take_device_figures() const; // a device's encoding and decoding figures, into stats_

  void initiate(Context& ctx, int node);
  void serve(Context& ctx, const Message& request);
  void finish(Context& ctx, const Message& reply);
  void next_gradient(Context& ctx, int node);
  int draw_local_steps(Context& ctx, int node);
  std::int64_t send_bytes() const;

  const Topology& topology_;
  NodeRates rates_;
  int local_steps_;
  bool geometric_;
  bool blocking_;
  std::size_t dim_;
  std::size_t wire_dim_;
  LocalUpdate update_;
  std::vector<NodeState> nodes_;
  PairwiseLocks locks_;
  GossipStats stats_;
  Context* ctx_ = nullptr; // the run's, from start(): the codec's streams
  Vec scratch_;            // the increment form's temporary (host)
  // On a resident backend: that temporary (also the evaluation's), and the evaluation's sum.
  SharedBuffer scratch_id_, sum_id_;
  std::vector<std::uint64_t> device_seeds_;
  ResidentVectors* resident_ = nullptr;
};

} // namespace dtsim
