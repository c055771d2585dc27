// SPDX-License-Identifier: MIT
// D-PSGD / DSGD with optional local (Nesterov) momentum, synchronous or asynchronous.
#pragma once

#include "sim/optimizers/gossip_protocol.hpp"
#include "sim/optimizers/local_update.hpp"

#include <string>
#include <vector>

namespace dtsim {

// Decentralized SGD (Lian et al., arXiv:1705.09056) with the update orders of
// docs/algorithms.md, section 3:
//   adapt_then_combine (default): x_i <- sum_j W_ij (x_j - lr*u_j); nodes send x - lr*u
//   combine_then_adapt:           x_i <- sum_j W_ij x_j - lr*u_i;   nodes send x
// u from LocalUpdate (weight decay, local heavy-ball or Nesterov momentum, never sent).
// Rounds, sync/async modes and time-varying mixing: GossipProtocol.
// Keys: lr, lr_schedule, mode, order, and LocalUpdate's momentum, nesterov, weight_decay.
// Presets: dsgdm (momentum default 0.9, heavy ball) and dsgdm-n (momentum default 0.9,
// Nesterov; no `nesterov` key).
class Dsgd final : public GossipProtocol {
public:
  struct Preset {
    std::string name = "dsgd";
    LocalUpdate::Options update;
  };
  static Preset dsgdm();
  static Preset dsgdm_nesterov();

  Dsgd(const Params& p, const AlgorithmSetup& setup) : Dsgd(p, setup, Preset{}) {}
  Dsgd(const Params& p, const AlgorithmSetup& setup, const Preset& preset);
  std::string describe() const override;
  std::size_t state_bytes() const override;
  // Either order (sync or async): the mixing and the local step on a resident backend.
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }

private:
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;
  bool combine_is_mix() const override { return adapt_then_combine_ && !resident(); }

  std::string name_;
  bool adapt_then_combine_;
  LocalUpdate update_;
  NodeVectors pending_u_; // combine_then_adapt: u_i, applied after mixing
};

} // namespace dtsim
