// SPDX-License-Identifier: MIT
// Decentralized SGD with gradient tracking: every node gossips its model and a tracker of
// the network-average gradient.
#pragma once

#include "sim/optimizers/gossip_protocol.hpp"
#include "sim/optimizers/local_update.hpp"

#include <string>
#include <vector>

namespace dtsim {

// As in the QG-DSGDm code (docs/algorithms.md, section 3; Nedic, Olshevsky, Shi 2017 and Pu & Nedic
// 2020 for the method). Node i, step t, g = grad + wd*x:
//   y = g (t = 0) or y += g - g_{t-1}          (tracker, local)
//   u = y, or its momentum / Nesterov form    (LocalUpdate without weight decay)
//   send (x, y): one message of two vectors (2d floats on the wire)
//   x <- mix(x) - lr*u ;  y <- mix(y)
// Since every W(t) is doubly stochastic, sum_i y_i = sum_i g_i after every round. Sync mode
// only (stale copies would break that invariant); time-varying schedules are allowed.
// Keys: lr, lr_schedule, weight_decay, momentum (default 0), nesterov (default false).
class GradientTracking final : public GossipProtocol {
public:
  GradientTracking(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

  // On a resident backend (sync rounds, as always): x, y, g_prev, u and the momenta stay
  // there, the messages (x, y) too (ResidentVectors' gradient_tracking rule).
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }
  // Model, u, momentum, y, g_prev and about two messages of two vectors.
  std::size_t resident_vectors_per_node() const override { return 9; }

  // The local step's math on caller-owned vectors (m empty without momentum): g += wd x,
  // y = g (first step) or y += g - g_prev, g_prev = g, u = direction(y) with the momentum
  // and no weight decay. The one definition that a resident backend on the host runs too,
  // so that its results are the same bits.
  static void track(const ResidentVectors::LocalUpdateRule& rule, bool first, std::span<float> g,
                    std::span<const float> x, std::span<float> y, std::span<float> g_prev,
                    std::span<float> m, std::span<float> u);

private:
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;

  float weight_decay_;
  LocalUpdate update_; // without weight decay: it enters g before the tracking
  NodeVectors y_;
  NodeVectors g_prev_;
  NodeVectors u_;
};

} // namespace dtsim
