// SPDX-License-Identifier: MIT
// QG-DSGDm(-N): decentralized SGD with a quasi-global momentum buffer.
#pragma once

#include "sim/optimizers/gossip_protocol.hpp"

#include <string>
#include <vector>

namespace dtsim {

// Lin, Karimireddy, Stich, Jaggi (ICML 2021, arXiv:2102.04761), as in its code
// (docs/algorithms.md, section 3). Node i, step t (adapt then combine):
//   g = grad + wd*x;  m = beta*mhat + g (not stored);  u = m, or g + beta*m (Nesterov)
//   send x - lr*u;  x_new = mix(x - lr*u)
//   d = (x - x_new)/lr  (lr of step t);  v += d;
//   every L-th step (t+1 divisible by L): mhat = mu*mhat + (1-mu)*v/L, v = 0
//   x = x_new
// mhat starts at 0 and is never sent: it is built from the model's own displacement after
// gossip, which already contains the neighbours' directions. Works in both modes (async:
// the displacement after mixing with the freshest copies).
// Keys: lr, lr_schedule, mode, momentum (beta, default 0.9), mu (default 0.9 = the code's
// 1 - factor with factor 0.1), refresh_period (L >= 1, default 1), weight_decay (default 0).
// `qg-dsgdm-n` is the Nesterov form (the QG README's scripts), `qg-dsgdm` the heavy ball.
class QgDsgdm final : public GossipProtocol {
public:
  QgDsgdm(const Params& p, const AlgorithmSetup& setup, bool nesterov);
  std::string describe() const override;
  std::size_t state_bytes() const override;
  // A resident backend keeps mhat as the rule's momentum, and with a refresh every L > 1
  // steps the summed displacement v as the rule's row.
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return true; }
  std::size_t resident_vectors_per_node() const override { return refresh_period_ > 1 ? 6 : 5; }

private:
  ResidentVectors::LocalUpdateRule rule() const;
  // Whether this combine() of node's ends with the refresh (every L-th step, L > 1).
  bool refreshes_now(int node) const;
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;

  bool nesterov_;
  double beta_text_, mu_text_;
  float beta_, mu_, weight_decay_;
  std::int64_t refresh_period_;
  NodeVectors mhat_;
  NodeVectors v_;       // refresh_period > 1 only
  NodeVectors scratch_; // one block per node: the mixed model before it replaces x
};

} // namespace dtsim
