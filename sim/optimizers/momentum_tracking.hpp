// SPDX-License-Identifier: MIT
// Momentum Tracking: gradient tracking applied to the local momentum.
#pragma once

#include "sim/optimizers/gossip_protocol.hpp"

#include <string>
#include <vector>

namespace dtsim {

// Takezawa, Bao, Niwa, Sato, Yamada (TMLR 2023, arXiv:2209.15505), as in its demo code
// (docs/algorithms.md, section 3). Node i keeps its momentum m_i and a correction d_i; the tracker
// c_i = m_i - d_i estimates the network-average momentum. Step t, g = grad:
//   m = beta*m + (g + wd*x)
//   send (x, d - m): one message of two vectors (2d floats on the wire)
//   x <- mix(x) - lr*(m - d)
//   d <- mix(d - m) + m
// so that c^{t+1} = W c^t + m^{t+2} - m^{t+1} and sum_i d_i = 0, i.e. sum_i c_i = sum_i m_i,
// after every round. Initialisation (first step only): gbar = mean_i g_i^0 by an all-reduce,
// then d_i = m_i = (g_i^0 - gbar)/(1 - beta) before the first momentum update, so that the
// first tracker is gbar + wd*x_i. The all-reduce is simulated as a reduce to node 0 and a
// broadcast from it (2(n-1) messages of d floats, summed in node order); nodes wait for it
// (idle time).
// Mixing: the schedule's W. The demo code mixes uniformly over the closed neighbourhood,
// 1/(deg+1), on regular graphs (ring, hypercube), where Metropolis weights (the default) are
// exactly that; on an irregular graph the uniform rule is not doubly stochastic, so dtsim
// keeps the topology's W. Sync mode only (stale copies in async mode would break
// sum_i d_i = 0); time-varying schedules keep the invariant and are allowed.
// Keys: lr, lr_schedule, momentum (beta, default 0.9), weight_decay (the code's L2 term
// lambda = 1e-3 inside the momentum; default 0 here as for every method).
class MomentumTracking final : public GossipProtocol {
public:
  MomentumTracking(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

  // On a resident backend (sync rounds, as always): x, m, d and the messages (x, d - m)
  // stay there (ResidentVectors' momentum_tracking rule); the all-reduce's messages carry
  // ids only and the backend starts each node (start_momentum_tracking).
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }
  // Model, gradient, m, d and about two messages of two vectors.
  std::size_t resident_vectors_per_node() const override { return 8; }

  // The math on caller-owned vectors: the one definition that the host path and a resident
  // backend on the host run, so that both give the same bits.
  // A step after the first: m = beta m + g + wd x; d_minus_m = d - m.
  static void step(float beta, float weight_decay, std::span<const float> g,
                   std::span<const float> x, std::span<float> m, std::span<const float> d,
                   std::span<float> d_minus_m);
  // The start, d holding g0: d = (g0 - gbar) / (1 - beta), m = beta d + g0 + wd x,
  // d_minus_m = d - m.
  static void initialise(float beta, float weight_decay, std::span<const float> gbar,
                         std::span<const float> x, std::span<float> d, std::span<float> m,
                         std::span<float> d_minus_m);
  // The mixing's ends: x -= lr (m - d) after the models' mix; d = mixed + m after the
  // corrections' (d holding the mix).
  static void descend(float lr, std::span<float> x, std::span<const float> m,
                      std::span<const float> d);
  static void correct(std::span<float> d, std::span<const float> m);

  // For tests and diagnostics, between steps: node i's momentum m_i and correction d_i.
  const Vec& momentum(int node) { return m_[static_cast<std::size_t>(node)]; }
  const Vec& correction(int node) { return d_[static_cast<std::size_t>(node)]; }

  static constexpr std::int32_t kInitGradient = 1; // g_i^0 to node 0
  static constexpr std::int32_t kInitMean = 2;     // gbar from node 0

private:
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;
  bool ready_to_send(Context& ctx, int node) override;
  void on_control_message(Context& ctx, const Message& msg) override;
  void collect(Context& ctx, int node, SharedBuffer g0);
  void start_node(Context& ctx, int node, const SharedBuffer& gbar);

  double beta_text_;
  float beta_, weight_decay_;
  NodeVectors m_;
  NodeVectors d_; // holds g_i^0 between the first gradient and the all-reduce
  std::vector<SharedBuffer> first_gradients_; // at node 0 during the all-reduce
  int collected_ = 0;
  bool collecting_own_ = false; // node 0's own first gradient is being collected
};

} // namespace dtsim
