// SPDX-License-Identifier: MIT
// D2 (D^2): decentralized SGD with a correction for data heterogeneity.
#pragma once

#include "sim/optimizers/gossip_protocol.hpp"

#include <string>
#include <vector>

namespace dtsim {

// Tang, Lian, Yan, Zhang, Liu (ICML 2018, arXiv:1803.07068), as in the QG-DSGDm code
// (docs/algorithms.md, section 3); no momentum. Node i, step t, g = grad + wd*x:
//   t = 0: x_half = x - lr*g
//   t > 0: x_half = 2*x_t - x_{t-1} - (lr_t*g_t - lr_{t-1}*g_{t-1})   (x_{t-1}: previous model)
//   send x_half; x_{t+1} = mix(x_half)
// Each step's own lr in the correction: 2*x_t - x_{t-1} repeats the previous step's
// displacement, whose gradient part was lr_{t-1}*g_{t-1}, and only that exact amount cancels
// it. With lr_t*(g_t - g_{t-1}) (the constant-lr form) every change of the step size (warm-up,
// decay) leaves (lr_{t-1} - lr_t)*g_{t-1} in the displacement, which the recursion then
// carries forward at every later step: a constant drift that made D2 collapse at each decay.
// Sync mode with one fixed mixing matrix only: the correction cancels the previous round's
// mixing exactly when every node mixed the same round with the same W. D2's analysis also
// needs the smallest eigenvalue of W above -1/3; Metropolis weights on a ring with an even
// number of nodes have exactly -1/3, a mode that then never decays, and bipartite graphs
// (even tori, hypercubes) or the social graph go below it: refused at construction.
// Keys: lr, lr_schedule, weight_decay (default 0). State: x_{t-1}, lr_{t-1}*g_{t-1} per node.
class D2 final : public GossipProtocol {
public:
  D2(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

  // On a resident backend: x_prev, lr g_prev and the messages stay there (ResidentVectors'
  // d2 rule), the mixing is the plain one.
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }
  // Model, gradient, x_prev, lr g_prev and about three messages (sent, and the round's).
  std::size_t resident_vectors_per_node() const override { return 7; }

  // The local step's math on caller-owned vectors, block by block (each block stays in L1):
  // g += wd x; out = x - lr g at the first step, else 2 x - x_prev - (lr g - lr_g_prev);
  // then x_prev = x, lr_g_prev = lr g. The one definition that a resident backend on the host
  // runs too, so that its results are the same bits.
  static void correct(bool first_step, float weight_decay, float lr, std::span<float> grad,
                      std::span<const float> x, std::span<float> x_prev, std::span<float> lr_g_prev,
                      std::span<float> out);

private:
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;
  bool combine_is_mix() const override { return !resident(); }

  float weight_decay_;
  NodeVectors x_prev_;
  NodeVectors g_prev_;
};

} // namespace dtsim
