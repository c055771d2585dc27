// SPDX-License-Identifier: MIT
// DC-ASGD's delay compensation: g + lambda * g.*g.*(w - w_bak[k]) (Zheng et al., 1609.08326).
#pragma once

#include "sim/core/flat_vector.hpp"
#include "sim/core/params.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/node_vectors.hpp"

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
  // On a resident server: the same steps queued as VectorOps on `row` (the worker's gradient,
  // or a copy of it), the backup w_bak[worker] being the worker's own model row there (the
  // model it pulled and computed on), the mean square a server vector and w - w_bak made in
  // the server's scratch. The server then frees the host backups (release).
  void compensate_resident(ResidentVectors& r, ResidentVectors::VectorRef row, int worker) const;
  void release() {
    backup_.release();
    ms_ = Vec();
    difference_ = Vec();
  }
  std::size_t state_bytes() const;
  std::string describe() const;

private:
  bool adaptive_;
  float lambda_;
  float ms_decay_ = 0.95f;
  float eps_ = 1e-7f;
  NodeVectors backup_; // made when first written: a resident server never makes them
  Vec ms_;
  Vec difference_; // adaptive: w - w_bak
};

} // namespace dtsim
