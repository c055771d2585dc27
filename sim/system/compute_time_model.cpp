// SPDX-License-Identifier: MIT
// Compute-time distributions, heterogeneous speeds and stragglers.
#include "sim/system/compute_time_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dtsim {

ComputeTimeModel::ComputeTimeModel(const Params& p, int nodes, std::uint64_t seed) {
  const std::string dist =
      p.choice("dist", "constant", {"constant", "normal", "lognormal", "exponential", "gamma"});
  mean_s_ = p.number("mean_s", 0.05, Range::positive());
  if (dist == "constant") {
    dist_ = Dist::Constant;
  } else if (dist == "normal") {
    dist_ = Dist::Normal;
    sigma_ = p.number("sigma", 0.1, Range::non_negative());
  } else if (dist == "lognormal") {
    dist_ = Dist::Lognormal;
    sigma_ = p.number("sigma", 0.3, Range::between(0.0, 5.0));
  } else if (dist == "exponential") {
    dist_ = Dist::Exponential;
  } else {
    dist_ = Dist::Gamma;
    shape_ = p.number("shape", 2.0, Range::positive());
  }

  const auto n = static_cast<std::size_t>(nodes);
  speed_.assign(n, 1.0);
  if (p.has("speed_factors")) {
    speed_ = p.numbers("speed_factors", {}, Range::positive());
    if (speed_.size() != n)
      p.fail("speed_factors", "expected " + std::to_string(n) + " values (one per node), got " +
                                  std::to_string(speed_.size()));
  } else {
    const auto range = p.numbers("speed_range", {1.0, 1.0}, Range::positive());
    if (range.size() != 2 || range[0] > range[1])
      p.fail("speed_range", "expected [lo, hi] with 0 < lo <= hi");
    Rng rng = Rng::stream(seed, "compute-speed", Rng::kNoNode);
    for (double& s : speed_)
      s = range[0] == range[1] ? range[0] : rng.uniform(range[0], range[1]);
  }

  const Params st = p.child("stragglers");
  straggler_fraction_ = st.number("fraction", 0.0, Range::unit());
  slowdown_ = st.number("slowdown", 5.0, Range::at_least(1.0));
  transient_ = st.choice("mode", "permanent", {"permanent", "transient"}) == "transient";
  slow_.assign(n, false);
  if (!transient_) {
    const auto count = static_cast<std::size_t>(std::lround(straggler_fraction_ * nodes));
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    Rng rng = Rng::stream(seed, "stragglers", Rng::kNoNode);
    rng.shuffle(order);
    for (std::size_t k = 0; k < std::min(count, n); ++k)
      slow_[order[k]] = true;
  }
  for (int i = 0; i < nodes; ++i)
    rngs_.push_back(Rng::stream(seed, "compute", static_cast<std::uint64_t>(i)));
}

double ComputeTimeModel::base_draw(Rng& rng) const {
  switch (dist_) {
  case Dist::Constant:
    return mean_s_;
  case Dist::Normal:
    return std::max(0.01 * mean_s_, mean_s_ * (1.0 + sigma_ * rng.normal()));
  case Dist::Lognormal:
    // mu chosen so that the mean (not the median) is mean_s.
    return std::exp(std::log(mean_s_) - 0.5 * sigma_ * sigma_ + sigma_ * rng.normal());
  case Dist::Exponential:
    return rng.exponential(mean_s_);
  case Dist::Gamma:
    return rng.gamma(shape_) * mean_s_ / shape_;
  }
  return mean_s_;
}

SimTime ComputeTimeModel::sample(int node) {
  const auto i = static_cast<std::size_t>(node);
  Rng& rng = rngs_[i];
  double t = base_draw(rng) * speed_[i];
  const bool slow = transient_ ? rng.bernoulli(straggler_fraction_) : slow_[i];
  if (slow)
    t *= slowdown_;
  // At least 1 ns so that a gradient never completes at the instant it starts.
  return SimTime::from_ns(std::max<std::int64_t>(1, SimTime::from_seconds(t).ns()));
}

} // namespace dtsim
