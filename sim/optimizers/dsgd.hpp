// SPDX-License-Identifier: MIT
// D-PSGD / DSGD with optional local (Nesterov) momentum, synchronous or asynchronous.
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/local_update.hpp"

#include <array>
#include <vector>

namespace dtsim {

// Decentralized SGD (Lian et al., arXiv:1705.09056) with the update orders of
// algorithms.md section 4:
//   adapt_then_combine (default): x_i <- sum_j W_ij (x_j - lr*u_j)
//   combine_then_adapt:           x_i <- sum_j W_ij x_j - lr*u_i
// mode sync: node i mixes round r only once it has every neighbour's round-r model (a
//   neighbourhood barrier: stragglers slow their neighbours, and through them everyone).
//   In combine_then_adapt the round-r model is sent when the round starts, so that
//   communication overlaps the gradient computation.
// mode async: node i mixes, at its own gradient-ready event, with the freshest copy it
//   holds from each neighbour (dtsim extension); staleness = i's step count minus the
//   sender's step count stamped on the oldest copy used.
// Keys: lr (> 0, default 0.05), mode, order, and LocalUpdate's momentum, nesterov,
// weight_decay.
class Dsgd final : public Algorithm {
public:
  Dsgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  void start(Context& ctx) override;
  void on_gradient(Context& ctx, int node, const GradientResult& r) override;
  void on_message(Context& ctx, const Message& msg) override;
  std::size_t state_bytes() const override;

private:
  struct NodeState {
    std::int64_t round = 0;
    bool step_done = false;      // this round's local step is done (sync)
    SharedBuffer own;            // sync ATC: this round's half-step model
    std::array<std::vector<SharedBuffer>, 2> inbox; // sync: by round parity, per neighbour
    std::array<int, 2> received{0, 0};
    std::vector<SharedBuffer> latest;               // async: freshest copy per neighbour
    std::vector<std::int64_t> latest_step;
    SimTime wait_start;
  };

  int neighbour_index(int node, int neighbour) const;
  void try_mix(Context& ctx, int node);
  void mix_into(int node, std::span<const float> self, const std::vector<SharedBuffer>& copies,
                std::span<float> out);
  void broadcast(Context& ctx, int node, std::span<const float> x, std::int64_t round);

  const Topology& topology_;
  float lr_;
  bool async_;
  bool adapt_then_combine_;
  LocalUpdate update_;
  std::vector<NodeState> nodes_;
  std::vector<Vec> pending_u_; // sync CTA: u_i waiting for the round's mixing
  Vec u_;                      // scratch
  Vec mixed_;                  // scratch
};

} // namespace dtsim
