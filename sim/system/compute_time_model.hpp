// SPDX-License-Identifier: MIT
// How long one minibatch gradient takes on each node, in simulated time.
#pragma once

#include "sim/core/params.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/sim_time.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// The values of system.compute.dist, each with one line of help (dtsim list, dtsim schema).
std::vector<std::pair<std::string, std::string>> compute_distributions();

// Per-node compute time = base draw x node speed factor x straggler slowdown, stretched by
// the node's outage windows.
// Keys of `system.compute` (all optional):
//   dist: constant | normal | lognormal | exponential | gamma | trace  (default constant)
//   mean_s: mean seconds per minibatch (> 0, default 0.05; not for trace)
//   file: trace: CSV of measured durations, rows "node,seconds" (a header line and '#'
//         comments allowed); each node replays its own rows in file order, cycling
//   failures: [{node: i, from_s: a, to_s: b}, ...] outage windows: node i computes nothing
//          in [a, b) (a gradient under way is frozen and resumes at b; messages still
//          arrive and are handled), e.g. a pre-empted or rebooting worker
//   sigma: lognormal sigma of log-time (default 0.3); normal: coefficient of variation
//          (std / mean, default 0.1, draws truncated at 1% of the mean)
//   shape: gamma shape k (default 2)
//   speed_factors: per-node multipliers (list of n values > 0), or
//   speed_range: [lo, hi]  node i's factor drawn uniformly in [lo, hi] (default [1, 1])
//   stragglers: {fraction: [0,1] (default 0), slowdown: >= 1 (default 5),
//                mode: permanent | transient (default permanent)}
//     permanent: round(fraction * n) seeded nodes are always slow;
//     transient: every step is slow with probability `fraction`.
// Each node draws from its own stream ("compute", node).
class ComputeTimeModel {
public:
  ComputeTimeModel(const Params& compute, int nodes, std::uint64_t seed);

  // Duration of a gradient that node starts at `start`.
  SimTime sample(int node, SimTime start = SimTime());
  double speed_factor(int node) const { return speed_[static_cast<std::size_t>(node)]; }
  bool permanent_straggler(int node) const { return slow_[static_cast<std::size_t>(node)]; }
  // speed_factor x the straggler slowdown for a permanent straggler: the node's mean compute
  // time over mean_s (transient stragglers are slowed per draw and not counted here).
  double effective_factor(int node) const {
    return speed_factor(node) * (permanent_straggler(node) ? slowdown_ : 1.0);
  }
  double mean_seconds() const { return mean_s_; }

private:
  enum class Dist { Constant, Normal, Lognormal, Exponential, Gamma, Trace };
  struct Outage {
    SimTime from, to;
  };
  double base_draw(int node, Rng& rng);
  void read_trace(const Params& p, int nodes);
  void read_failures(const Params& p, int nodes);
  // Wall-clock span of `work` of computing started at `start`, frozen during outages.
  SimTime stretch(int node, SimTime start, SimTime work) const;

  Dist dist_ = Dist::Constant;
  double mean_s_ = 0.05;
  double sigma_ = 0.3;
  double shape_ = 2.0;
  double straggler_fraction_ = 0.0;
  double slowdown_ = 5.0;
  bool transient_ = false;
  std::vector<double> speed_;
  std::vector<bool> slow_;
  std::vector<Rng> rngs_;
  std::vector<std::vector<double>> trace_; // per node, seconds (dist: trace)
  std::vector<std::size_t> trace_pos_;
  std::vector<std::vector<Outage>> outages_; // per node, sorted, non-overlapping
};

} // namespace dtsim
