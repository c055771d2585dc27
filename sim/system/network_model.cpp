// SPDX-License-Identifier: MIT
// Sender-side FIFO link with latency and bandwidth.
#include "sim/system/network_model.hpp"

#include <algorithm>

namespace dtsim {

NetworkModel::NetworkModel(const Params& p, int endpoints, std::uint64_t seed) {
  latency_s_ = p.number("latency_s", 0.001, Range::non_negative());
  jitter_s_ = p.number("jitter_s", 0.0, Range::non_negative());
  bandwidth_ = p.number("bandwidth_Bps", 1e9, Range::positive());
  link_free_at_.assign(static_cast<std::size_t>(endpoints), SimTime());
  for (int i = 0; i < endpoints; ++i)
    rngs_.push_back(Rng::stream(seed, "network", static_cast<std::uint64_t>(i)));
}

SimTime NetworkModel::send(int src, std::int64_t bytes, SimTime now) {
  const auto s = static_cast<std::size_t>(src);
  const SimTime departure = std::max(now, link_free_at_[s]);
  const SimTime transmission = SimTime::from_seconds(static_cast<double>(bytes) / bandwidth_);
  link_free_at_[s] = departure + transmission;
  double latency = latency_s_;
  if (jitter_s_ > 0)
    latency += rngs_[s].exponential(jitter_s_);
  return link_free_at_[s] + SimTime::from_seconds(latency);
}

} // namespace dtsim
