// SPDX-License-Identifier: MIT
// ASGD: asynchronous parameter server; every gradient is applied on arrival, however stale.
#pragma once

#include "sim/optimizers/parameter_server.hpp"

namespace dtsim {

// docs/algorithms.md, section 2: the server applies each gradient when served
// (u = g + wd*w; server momentum M = mu*M + u, u = M), increments its version t, records
// staleness t-1-tau and replies with the new model. Keys: ParameterServer's, plus momentum
// (server, [0,1), default 0).
class Asgd final : public ParameterServer {
public:
  Asgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

private:
  void apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) override;
  bool has_resident_step() const override { return true; }
  void release_host_state() override { m_ = Vec(); }
  double momentum_text_; // as configured, for describe()
  float momentum_;
  Vec m_;
};

} // namespace dtsim
