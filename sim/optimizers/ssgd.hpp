// SPDX-License-Identifier: MIT
// SSGD: synchronous parameter server; one step per round on the average of all n gradients.
#pragma once

#include "sim/optimizers/parameter_server.hpp"

#include <vector>

namespace dtsim {

// The server collects one gradient from every worker (summed in arrival order), steps once
// on their average (optional server momentum, weight decay) and replies to all workers; the
// slowest worker sets the pace. Staleness is 0 by construction. Resident (ResidentVectors):
// the sum is the server's scratch vector there. Keys: ParameterServer's, plus momentum
// ([0,1), default 0).
class Ssgd final : public ParameterServer {
public:
  Ssgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

private:
  void apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) override;
  bool has_resident_step() const override { return true; }
  void release_host_state() override {
    m_ = Vec();
    sum_ = Vec();
  }
  double momentum_text_;
  float momentum_;
  Vec m_;
  Vec sum_;
  std::vector<int> waiting_; // workers whose gradient is in this round, in arrival order
};

} // namespace dtsim
