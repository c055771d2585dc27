// SPDX-License-Identifier: MIT
// CHOCO-SGD: gossip on compressed differences with public estimates (Koloskova et al.).
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/gossip_stats.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/node_rates.hpp"

#include <array>
#include <memory>
#include <vector>

namespace dtsim {

// algorithms.md section 9, with the memory-efficient state of the authors' code: per node
// x_i, its public estimate xhat_i and s_i = sum_j W_ij xhat_j (j includes i): three vectors
// whatever the degree. Each round, in the node's gradient task:
//   adapt_then_combine (paper order, default):
//     x_half = x_i - lr*u;  q_i = C(x_half - xhat_i);  xhat_i += q_i;  s_i += W_ii q_i
//     [send q_i; receive every neighbour's q_j]  s_i += sum_j W_ij q_j
//     x_i = x_half + gamma * (s_i - xhat_i)
//   combine_then_adapt (the code's order):
//     x_next = x_i - lr*u + gamma * (s_i - xhat_i);  q_i = C(x_next - xhat_i); xhat_i += q_i;
//     s_i += W_ii q_i;  [exchange]  s_i += sum_j W_ij q_j;  x_i = x_next
// Rounds are synchronous as in dsgd mode sync (a node starts its next gradient once it has
// every neighbour's q of the round), so with gamma = 1 and compressor none each order is
// dsgd's same order; the result equals dsgd's up to float32 rounding (xhat + (x - xhat) is
// not always x in floating point), with the same events and bytes (a test).
// The estimates start at the initial models, known to all (the paper starts them at 0).
// The compressor must be contractive: qsgd and randomk default to their contractive form
// here; error feedback is built in (what q_i leaves out stays in x_i - xhat_i), so the
// compressor takes no error_feedback key, and the lattice quantizer (no reference point for
// differences) is refused.
// Keys: lr (> 0, default 0.05), lr_schedule (NodeRates), gamma (consensus step in (0, 1], default
// 0.5), order, compressor (map, default {kind: qsgd}), and LocalUpdate's momentum, nesterov,
// weight_decay.
class ChocoSgd final : public Algorithm {
public:
  ChocoSgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  void start(Context& ctx) override;
  void on_gradient(Context& ctx, int node, const GradientResult& r) override;
  void on_message(Context& ctx, const Message& msg) override;
  void before_gradient(int node, std::span<float> x) override;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) override;
  std::size_t state_bytes() const override;
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  void add_node_columns(
      std::vector<std::pair<std::string, std::vector<double>>>& columns) const override;

private:
  struct NodeState {
    std::int64_t round = 0;
    bool step_done = false;
    float lr = 0;                                   // the step size of the gradient in flight
    SharedBuffer out;                               // q_i, written in the node's task
    std::array<std::vector<SharedBuffer>, 2> inbox; // by round parity, per neighbour
    std::array<int, 2> received{0, 0};
    bool mix_pending = false;
    std::vector<SharedBuffer> mix_in; // the round's q_j, applied by the next task
    Vec x_half;                       // adapt_then_combine: x - lr*u; otherwise x_next
    Vec xhat;
    Vec s;
    Vec delta; // scratch: what is compressed
    std::unique_ptr<Compressor> compressor;
    Rng rng{0}; // the node's compressor stream, used only inside its tasks
    EncodeStats last;
    SimTime wait_start;
  };

  int neighbour_index(int node, int neighbour) const;
  void try_mix(Context& ctx, int node);

  const Topology& topology_;
  NodeRates rates_;
  float gamma_;
  bool adapt_then_combine_;
  std::size_t dim_;
  LocalUpdate update_;
  std::vector<NodeState> nodes_;
  GossipStats stats_;
};

} // namespace dtsim
