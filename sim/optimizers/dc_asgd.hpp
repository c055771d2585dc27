// SPDX-License-Identifier: MIT
// DC-ASGD: ASGD whose stale gradients are corrected by delay compensation.
#pragma once

#include "sim/optimizers/delay_compensation.hpp"
#include "sim/optimizers/parameter_server.hpp"

namespace dtsim {

// docs/algorithms.md, section 2 (Zheng et al., arXiv:1609.08326): u = compensated g (+ wd*w),
// optional server momentum, w -= lr*u, then w_bak[k] = w and reply. Keys: ParameterServer's,
// DelayCompensation's (variant, lambda, ms_decay, eps) and momentum ([0,1), default 0).
// Resident (ResidentVectors) in either variant: the worker's model row there is its w_bak,
// so no backup is kept (the adaptive variant's mean square is a server vector there).
class DcAsgd final : public ParameterServer {
public:
  DcAsgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

private:
  void on_start(Context& ctx) override;
  void apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) override;
  bool has_resident_step() const override { return true; }
  void release_host_state() override;
  DelayCompensation dc_;
  float momentum_;
  Vec m_;
  Vec u_;
};

} // namespace dtsim
