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
//   adapt_then_combine (default): x_i <- sum_j W_ij (x_j - lr*u_j); nodes send x - lr*u
//   combine_then_adapt:           x_i <- sum_j W_ij x_j - lr*u_i;   nodes send x
// A node sends its message when its local step is done (gradient ready).
// mode sync: node i mixes round r only once it has every neighbour's round-r message (a
//   neighbourhood barrier: stragglers slow their neighbours, and through them everyone).
// mode async: at its gradient-ready event node i mixes with the freshest copy it holds from
//   each neighbour (dtsim extension) and goes on at once; staleness = i's step count minus
//   the sender's step count stamped on the oldest copy used.
// The vector math runs in the node's gradient task (before/after_gradient): the local step
// right after the gradient, the mixing at the start of the next one.
// Keys: lr (> 0, default 0.05), mode (sync | async), order, and LocalUpdate's momentum,
// nesterov, weight_decay.
class Dsgd final : public Algorithm {
public:
  Dsgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  void start(Context& ctx) override;
  void on_gradient(Context& ctx, int node, const GradientResult& r) override;
  void on_message(Context& ctx, const Message& msg) override;
  void before_gradient(int node, std::span<float> x) override;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) override;
  std::size_t state_bytes() const override;

private:
  struct NodeState {
    std::int64_t round = 0;
    bool step_done = false; // sync: this round's local step is done
    SharedBuffer out;       // what the node sends after its step (written in its task)
    std::array<std::vector<SharedBuffer>, 2> inbox; // sync: by round parity, per neighbour
    std::array<int, 2> received{0, 0};
    std::vector<SharedBuffer> latest; // async: freshest copy per neighbour
    std::vector<std::int64_t> latest_step;
    // Inputs of the mixing that the next task applies (set aside by the engine thread).
    bool mix_pending = false;
    SharedBuffer mix_self;            // adapt_then_combine: own half-step model
    std::vector<SharedBuffer> mix_in; // per neighbour
    Vec pending_u;                    // combine_then_adapt: u_i, applied after mixing
    SimTime wait_start;
  };

  int neighbour_index(int node, int neighbour) const;
  void try_mix(Context& ctx, int node);
  void mix_next(Context& ctx, int node, std::vector<SharedBuffer>& inputs);

  const Topology& topology_;
  float lr_;
  bool async_;
  bool adapt_then_combine_;
  LocalUpdate update_;
  std::vector<NodeState> nodes_;
};

} // namespace dtsim
