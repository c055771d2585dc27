// SPDX-License-Identifier: MIT
// SwarmSGD: pairwise quantized averaging between runs of local SGD steps (Nadiradze et al.).
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/gossip_stats.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/node_rates.hpp"
#include "sim/optimizers/pairwise_locks.hpp"

#include <deque>
#include <memory>
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
class SwarmSgd final : public Algorithm {
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

  static constexpr std::int32_t kRequest = 1;
  static constexpr std::int32_t kReply = 2;

private:
  struct NodeState {
    Vec pub;             // X_i (non-blocking only)
    Vec origin;          // o_i (non-blocking only)
    Vec y;               // y_i between gradients; written by the task's local step
    Vec own_q;           // Q(model sent), as the partner rebuilds it (kept while waiting)
    Vec decoded;         // the partner's model, decoded
    Vec view;            // scratch: own reconstruction of a reply (reference-point compressors)
    bool copy_y = false; // the next task starts from y
    float lr = 0;        // the step size of the gradient in flight
    int steps = 0;       // local steps since the last initiation (h_i)
    int target = 1;      // H_i
    std::unique_ptr<Compressor> compressor;
    std::deque<Message> deferred; // blocking: requests waiting for the gradient in flight
    SimTime wait_start;
  };

  void initiate(Context& ctx, int node);
  void serve(Context& ctx, const Message& request);
  void finish(Context& ctx, const Message& reply);
  void next_gradient(Context& ctx, int node);
  int draw_local_steps(Context& ctx, int node);
  Vec& model(NodeState& s) { return blocking_ ? s.y : s.pub; } // what interactions average
  // Decodes msg's payload against `ref` into s.decoded (or points at the payload).
  std::span<const float> decode(int node, const SharedBuffer& payload, const Vec& ref);
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
};

} // namespace dtsim
