// SPDX-License-Identifier: MIT
// Learning-rate schedule: scaling with the number of nodes, linear warm-up, step decay.
#pragma once

#include "sim/core/params.hpp"
#include "sim/optimizers/algorithm_setup.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

// The step size as a function of a training position in epochs (docs/algorithms.md, section 8's
// setup, as in the QG-DSGDm code's scheduler):
//   peak  = lr                                   (no scale_with_nodes)
//         = lr * nodes * batch_size / base_batch  (scale_with_nodes: lr is per base_batch
//                                                  samples, as in Goyal et al. 2017)
//   ramp(e) = warmup_from + (peak - warmup_from) * e / warmup_epochs   for e < warmup_epochs
//           = peak                                                     afterwards
//   lr(e) = ramp(e) * decay_factor^(number of decay milestones <= e)
// Milestones are fractions of the run's epoch budget (decay_at) or absolute epochs
// (decay_epochs). Keys of the `algorithm:` section: lr (> 0) and an optional map
//   lr_schedule: {warmup_epochs: 0, warmup_from: <required with warm-up>, decay_at: [],
//                 decay_epochs: [], decay_factor: 0.1, scale_with_nodes: {base_batch: B}}
// (base_batch defaults to the local batch size, i.e. lr * nodes). Without `lr_schedule` the
// rate is the constant lr and nothing is added to the resolved scenario.
// A gossip node's position is its own: steps * batch_size / (its training examples).
class LrSchedule {
public:
  LrSchedule(const Params& algorithm, const AlgorithmSetup& setup, double default_lr);

  double at_epoch(double epoch) const;
  // Epoch position of `node` after `steps` local steps.
  double node_epoch(int node, std::int64_t steps) const;
  // Epoch position after `samples` examples in total (a parameter server's updates).
  double global_epoch(double samples) const;
  // The rate of node's step number `step` (0-based) as the float the update uses.
  float for_step(int node, std::int64_t step) const {
    return static_cast<float>(at_epoch(node_epoch(node, step)));
  }
  bool constant() const { return constant_; }
  double peak() const { return peak_; }
  // "" for a constant rate, else e.g. ", lr 0.8 (0.1 x 16 x 32/64), warm-up 5 ep from 0.1,
  // x0.1 at epochs 150, 225".
  std::string describe() const;

private:
  double base_ = 0;
  double peak_ = 0;
  double scale_ = 1;
  double warmup_epochs_ = 0;
  double warmup_from_ = 0;
  double decay_factor_ = 0.1;
  std::vector<double> milestones_; // epochs, increasing
  bool constant_ = true;
  double batch_ = 0;
  double total_samples_ = 0;
  std::vector<double> node_samples_;
};

} // namespace dtsim
