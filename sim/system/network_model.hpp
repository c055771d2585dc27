// SPDX-License-Identifier: MIT
// Message delivery times: latency, bandwidth and queueing at the sender's link.
#pragma once

#include "sim/core/params.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/sim_time.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

// A message of b bytes sent at time t by node s leaves when s's outgoing link is free
// (messages from one sender are serialised, FIFO), occupies it for b / bandwidth, and
// arrives `latency` after it has left. Keys of `system.network` (all optional):
//   latency_s: one-way latency in seconds (>= 0, default 0.001)
//   jitter_s: mean of an exponential extra latency per message (>= 0, default 0)
//   bandwidth_Bps: link bandwidth in bytes per second (> 0, default 1e9)
// Jitter draws come from the stream ("network", sender).
class NetworkModel {
public:
  NetworkModel(const Params& network, int endpoints, std::uint64_t seed);

  // Arrival time of a message sent now; updates the sender's link occupancy.
  SimTime send(int src, std::int64_t bytes, SimTime now);
  double bandwidth() const { return bandwidth_; }

private:
  double latency_s_ = 0.001;
  double jitter_s_ = 0.0;
  double bandwidth_ = 1e9;
  std::vector<SimTime> link_free_at_;
  std::vector<Rng> rngs_;
};

} // namespace dtsim
