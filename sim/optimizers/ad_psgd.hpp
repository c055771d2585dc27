// SPDX-License-Identifier: MIT
// AD-PSGD: asynchronous decentralized SGD with atomic pairwise averaging (Lian et al. 2018).
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/gossip_stats.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/named_vectors.hpp"
#include "sim/optimizers/node_rates.hpp"
#include "sim/optimizers/pairwise_locks.hpp"

#include <vector>

namespace dtsim {

// docs/algorithms.md, section 4. Each node keeps a live model x_i (algorithm state) and computes
// its gradients on a snapshot of it (the engine's node model, fixed when the gradient
// starts). When an active node's gradient is ready it sends x_i to a uniformly chosen
// neighbour j and waits; j averages at once, x_j = (x_j + x_i)/2, and replies with its
// pre-average x_j; i then sets x_i = (x_i + x_j)/2, both ending with the same average
// (bit-identical: the sum is commutative), applies its now stale update x_i -= lr*u and
// starts its next gradient on a snapshot of x_i. A waiting node holds requests back and
// serves them, in arrival order, after its own interaction (PairwiseLocks); a cycle of
// waiting nodes (a deadlock) is broken by serving the request that closes it at once, and
// the broken node then averages in increment form, x_i += (x_j - x_i_sent)/2, which keeps
// the sum of the models.
// split: bipartite: the graph is 2-coloured; colour-0 nodes are active (they initiate),
//   colour-1 nodes passive (they serve, and apply their own gradients to their live model
//   without initiating), so no node ever waits on a waiting node: no deadlock. Refused if
//   the graph is not bipartite.
// split: none: every node initiates. split: auto (default): bipartite if the graph is.
// Staleness (record_update) = averagings the live model took part in between the gradient's
// snapshot and its application (1 for an undisturbed active node).
// Models travel as dense float32. The evaluation model is the mean of the live models.
// On a resident backend (attach_resident) the live models, the directions u and the
// messages stay there: each step above is queued as a ResidentVectors::apply, the same
// element-wise step (vector_ops.hpp) the host path runs.
// Keys: lr (> 0, default 0.05), lr_schedule (NodeRates: per node, per local step), split, and
// LocalUpdate's momentum, nesterov, weight_decay.
class AdPsgd final : public Algorithm {
public:
  AdPsgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  void start(Context& ctx) override;
  void on_gradient(Context& ctx, int node, const GradientResult& r) override;
  void on_message(Context& ctx, const Message& msg) override;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) override;
  bool reads_gradient_after_task() const override { return false; } // used in the task
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }
  void eval_model(const Context& ctx, std::span<float> out) const override;
  std::size_t state_bytes() const override;
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  void add_node_columns(
      std::vector<std::pair<std::string, std::vector<double>>>& columns) const override;

  bool active(int node) const { return nodes_[static_cast<std::size_t>(node)].active; }
  std::span<const float> live_model(int node) const; // requires: not attached to a backend

  static constexpr std::int32_t kRequest = 1;
  static constexpr std::int32_t kReply = 2;

private:
  struct NodeState {
    bool active = true;
    std::int64_t averagings = 0;  // averagings the live model took part in
    std::int64_t at_snapshot = 0; // ... when the gradient in flight started
    SharedBuffer sent;            // the model sent with the pending request
    SimTime wait_start;
  };

  // A vector the protocol's steps name: its id on a resident backend, else its host memory.
  using Operand = NamedOperand;
  using Target = NamedVector;
  Target live_vector(int node);
  Operand direction_vector(int node);
  // dst = op(a, b, s): on the host vectors, or queued to the resident backend.
  void apply_step(ResidentVectors::VectorOp op, Target dst, Operand a, Operand b = {}, float s = 0);

  void serve(Context& ctx, const Message& request);
  void finish(Context& ctx, const Message& reply);
  void apply_update(Context& ctx, int node);
  void next_gradient(Context& ctx, int node);
  Eigen::Block<Eigen::MatrixXf, Eigen::Dynamic, 1, true> live(int node) { return live_.col(node); }

  const Topology& topology_;
  NodeRates rates_;
  std::string split_;
  bool bipartite_ = false;
  std::size_t dim_;
  LocalUpdate update_;
  NodeVectors u_;        // the update direction of each node's gradient in flight (task-written)
  Eigen::MatrixXf live_; // d x n, made at the start unless a resident backend keeps them
  std::vector<NodeState> nodes_;
  PairwiseLocks locks_;
  GossipStats stats_;
  ResidentVectors* resident_ = nullptr;
};

} // namespace dtsim
