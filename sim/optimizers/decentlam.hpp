// SPDX-License-Identifier: MIT
// DecentLaM: decentralized momentum on the gradient implied by the gossip step.
#pragma once

#include "sim/optimizers/gossip_protocol.hpp"

#include <string>
#include <vector>

namespace dtsim {

// Yuan, Chen, Huang, Zhang, Pan, Yin, Yan (ICCV 2021, arXiv:2104.11981), as in the Momentum
// Tracking demo code (docs/algorithms.md, section 3). Node i, step t:
//   z = x - lr*(g + wd*x); send z
//   gt = (x - mix(z))/lr ;  m = beta*m + gt ;  x = x - lr*m
// The momentum acts on the whole gossip step, so it carries no node's local bias alone.
// Sync mode only: with the freshest (stale) copies of async mode the momentum amplifies the
// delay: zero-gradient runs diverged (on a 5-node ring, beta 0.9). One fixed W only:
// on the consensus error the update is heavy ball, x' = W x + beta*(x - x_prev), which with
// beta = 0.9 diverges on the one-peer exponential graph (complex eigenvalues) and on random
// pairs (switching projections).
// Keys: lr, lr_schedule, momentum (beta, default 0.9), weight_decay (the demo code's
// L2 term 1e-3; default 0 here as for every method).
class DecentLam final : public GossipProtocol {
public:
  DecentLam(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

  // On a resident backend: the momenta and messages stay there (ResidentVectors'
  // decentlam rule: the step without momentum, the momentum in the mixing).
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }

private:
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;

  double beta_text_;
  float beta_, weight_decay_;
  NodeVectors m_;
  NodeVectors scratch_; // one block per node: mix(z)
};

} // namespace dtsim
