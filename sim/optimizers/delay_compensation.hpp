// SPDX-License-Identifier: MIT
// DC-ASGD's delay compensation: g + lambda * g.*g.*(w - w_bak[k]) (Zheng et al., 1609.08326).
#pragma once

#include "sim/core/flat_vector.hpp"
#include "sim/core/params.hpp"

#include <span>
#include <vector>

namespace dtsim {

// One backup model per worker (the model it last pulled), as in Microsoft Multiverso's
// updater (docs/algorithms.md, section 2). Keys: variant (constant | adaptive, default constant),
// lambda (>= 0; default 0.04 constant, 2 adaptive), ms_decay (adaptive, [0,1), 0.95),
// eps (adaptive, > 0, 1e-7).
class DelayCompensation {
public:
  DelayCompensation(const Params& p, int workers, std::size_t dim);
  // g <- g + lambda_vec .* g .* g .* (w - w_bak[worker]); adaptive: first
  // MS = m*MS + (1-m)*g.*g and lambda_vec = lambda / sqrt(MS + eps).
  void compensate(int worker, std::span<float> g, const Vec& w);
  // w_bak[worker] = w: the model the worker pulls now.
  void remember(int worker, const Vec& w) { backup_[static_cast<std::size_t>(worker)] = w; }
  void remember_all(const Vec& w);
  // A resident server (ResidentVectors) compensates with VectorOp::delay_compensate: only
  // the constant form, whose backup w_bak[k] is the worker's own model row there (the model
  // it pulled and computed on). It then frees the host backups (release).
  bool has_resident_form() const { return !adaptive_; }
  float lambda() const { return lambda_; }
  void release() { backup_ = {}; }
  std::size_t state_bytes() const;
  std::string describe() const;

private:
  bool adaptive_;
  float lambda_;
  float ms_decay_ = 0.95f;
  float eps_ = 1e-7f;
  std::vector<Vec> backup_;
  Vec ms_;
};

} // namespace dtsim
